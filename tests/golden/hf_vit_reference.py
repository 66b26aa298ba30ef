#!/usr/bin/env python3
# An independent float64 forward of HuggingFace's ViTForImageClassification (Dosovitskiy et al. 2020,
# arXiv 2010.11929; the semantics of HF's modeling_vit.py and ViTConfig's fields), written with plain
# numpy / torch, no `transformers`: the patch embedding (a Conv2d of kernel and stride p) as patches
# reshaped (channel, row, column inside a patch) times the weight reshaped (C, K), checked against
# torch's conv2d; [CLS] prepended, positions added; pre-LN layers x + attention(LN(x)), x + MLP(LN(x))
# with softmax(q k^T / sqrt(d)) attention per head; the final LayerNorm; the classifier on token 0.
#
# It writes tiny random checkpoints in HF's layout (config.json with architectures and id2label,
# model.safetensors under HF's names, preprocessor_config.json), each with an input pixels.npy
# (channels, H, W) float32 and expected_logits.npy (V) float32, and one copy of a variant in the HF
# cache layout (hub/models--tiny-org--tiny-vit/snapshots/HASH/ + refs/main). tests/test_hf_vit.cpp runs
# it at test time into a temporary directory (nothing generated is committed).
#
# Usage: hf_vit_reference.py OUT_DIR
import json
import math
import os
import shutil
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "forward"))
from weight_files import read_safetensors, write_safetensors  # noqa: E402

BASE = {"model_type": "vit", "architectures": ["ViTForImageClassification"], "hidden_dropout_prob": 0.0,
        "attention_probs_dropout_prob": 0.0, "initializer_range": 0.02, "layer_norm_eps": 1e-12, "hidden_act": "gelu",
        "qkv_bias": True, "encoder_stride": 16}

# name: (config changes, class names or None (num_labels only), dtype)
VARIANTS = {
    # Grey 8 x 8 in 2 x 2 patches: 16 patch tokens + [CLS].
    "vit_grey": ({"num_channels": 1, "image_size": 8, "patch_size": 2, "hidden_size": 16, "num_hidden_layers": 2,
                  "num_attention_heads": 2, "intermediate_size": 32, "layer_norm_eps": 1e-6},
                 [str(d) for d in range(10)], "F32"),
    # RGB 12 x 12 in 4 x 4 patches (image_size written as HF's [height, width]), the tanh GELU.
    "vit_rgb_gelu_new": ({"num_channels": 3, "image_size": [12, 12], "patch_size": 4, "hidden_size": 24, "num_hidden_layers": 2,
                          "num_attention_heads": 3, "intermediate_size": 48, "hidden_act": "gelu_new", "layer_norm_eps": 1e-12},
                         ["cat", "dog", "bird", "fish", "frog"], "F32"),
    # No q/k/v biases, stored in F16, only num_labels (HF's LABEL_i names).
    "vit_no_qkv_bias_f16": ({"num_channels": 3, "image_size": 16, "patch_size": 8, "hidden_size": 16, "num_hidden_layers": 2,
                             "num_attention_heads": 4, "intermediate_size": 24, "qkv_bias": False, "layer_norm_eps": 1e-5},
                            None, "F16"),
}
CACHE_VARIANT, CACHE_REPO, CACHE_HASH = "vit_rgb_gelu_new", "models--tiny-org--tiny-vit", "0123456789abcdef0123456789abcdef01234567"


def side(value):
    return value[0] if isinstance(value, list) else value


def vit_weights(config, seed):
    """HF ViTForImageClassification tensor names -> float64 arrays; Linear weights (out, in)."""
    g = torch.Generator().manual_seed(seed)
    C, F, ch, p = config["hidden_size"], config["intermediate_size"], config["num_channels"], side(config["patch_size"])
    P1 = (side(config["image_size"]) // p) ** 2 + 1
    V = config["num_labels"]

    def normal(*shape, std):
        return (torch.randn(*shape, generator=g, dtype=torch.float64) * std).numpy()

    def linear(w, name, out, into, std, bias=True):
        w[name + ".weight"] = normal(out, into, std=std)
        if bias:
            w[name + ".bias"] = normal(out, std=0.2)

    def layer_norm(w, name):
        w[name + ".weight"] = 1.0 + normal(C, std=0.2)
        w[name + ".bias"] = normal(C, std=0.2)

    e = "vit.embeddings."
    w = {e + "cls_token": normal(1, 1, C, std=1.0),
         e + "position_embeddings": normal(1, P1, C, std=0.5),
         e + "patch_embeddings.projection.weight": normal(C, ch, p, p, std=1 / math.sqrt(ch * p * p)),
         e + "patch_embeddings.projection.bias": normal(C, std=0.2)}
    for l in range(config["num_hidden_layers"]):
        prefix = f"vit.encoder.layer.{l}."
        layer_norm(w, prefix + "layernorm_before")
        for name in ("query", "key"):  # larger than HF's init: peaked attention
            linear(w, prefix + "attention.attention." + name, C, C, 0.5, config["qkv_bias"])
        linear(w, prefix + "attention.attention.value", C, C, 1 / math.sqrt(C), config["qkv_bias"])
        linear(w, prefix + "attention.output.dense", C, C, 1 / math.sqrt(C))
        layer_norm(w, prefix + "layernorm_after")
        linear(w, prefix + "intermediate.dense", F, C, 1 / math.sqrt(C))
        linear(w, prefix + "output.dense", C, F, 1 / math.sqrt(F))
    layer_norm(w, "vit.layernorm")
    linear(w, "classifier", V, C, 1.0)
    return w


def layer_norm(x, t, name, eps):
    """LayerNorm over the last axis, biased variance."""
    centred = x - x.mean(-1, keepdim=True)
    return centred / torch.sqrt(centred.pow(2).mean(-1, keepdim=True) + eps) * t(name + ".weight") + t(name + ".bias")


def activation(x, name):
    if name == "gelu":  # the exact form, x Phi(x)
        return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))
    assert name in ("gelu_new", "gelu_pytorch_tanh"), name  # the tanh approximation
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x.pow(3))))


def vit_forward(config, w, pixels):
    """pixels (channels, S, S) -> the class logits (V), float64."""
    t = lambda name: torch.from_numpy(np.asarray(w[name], dtype=np.float64))  # noqa: E731
    C, H, eps, act = config["hidden_size"], config["num_attention_heads"], config["layer_norm_eps"], config["hidden_act"]
    ch, S, p = config["num_channels"], side(config["image_size"]), side(config["patch_size"])
    D, G = C // H, S // p

    def linear(x, name):
        y = x @ t(name + ".weight").T
        return y + t(name + ".bias") if name + ".bias" in w else y

    x = torch.from_numpy(np.asarray(pixels, dtype=np.float64))
    # The convolution as a matmul: patch (gy, gx) flattened (channel, row, column), the weight (C, ch * p * p).
    patches = x.reshape(ch, G, p, G, p).permute(1, 3, 0, 2, 4).reshape(G * G, ch * p * p)
    e = "vit.embeddings."
    conv_weight, conv_bias = t(e + "patch_embeddings.projection.weight"), t(e + "patch_embeddings.projection.bias")
    embedded = patches @ conv_weight.reshape(C, -1).T + conv_bias
    conv = torch.nn.functional.conv2d(x[None], conv_weight, conv_bias, stride=p)[0].flatten(1).T  # HF's own way: (P, C)
    assert torch.allclose(embedded, conv, atol=1e-10), "patch matmul differs from the convolution"
    h = torch.cat([t(e + "cls_token").reshape(1, C), embedded]) + t(e + "position_embeddings").reshape(-1, C)
    T = h.shape[0]
    for l in range(config["num_hidden_layers"]):
        prefix = f"vit.encoder.layer.{l}."
        a = layer_norm(h, t, prefix + "layernorm_before", eps)
        q, k, v = (linear(a, prefix + "attention.attention." + n).view(T, H, D).transpose(0, 1) for n in ("query", "key", "value"))
        probs = torch.softmax((q @ k.transpose(1, 2)) / math.sqrt(D), dim=-1)
        h = h + linear((probs @ v).transpose(0, 1).reshape(T, C), prefix + "attention.output.dense")
        m = activation(linear(layer_norm(h, t, prefix + "layernorm_after", eps), prefix + "intermediate.dense"), act)
        h = h + linear(m, prefix + "output.dense")
    h = layer_norm(h, t, "vit.layernorm", eps)
    return linear(h[0], "classifier")


def preprocessor_config(config):
    S, ch = side(config["image_size"]), config["num_channels"]
    return {"image_processor_type": "ViTImageProcessor", "do_resize": True, "size": {"height": S, "width": S}, "resample": 2,
            "do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True, "image_mean": [0.5] * ch, "image_std": [0.5] * ch}


def write_variant(out, name, seed):
    changes, labels, dtype = VARIANTS[name]
    config = dict(BASE, **changes)
    if labels is None:
        config["num_labels"] = 3
    else:
        config["id2label"] = {str(i): label for i, label in enumerate(labels)}
        config["label2id"] = {label: i for i, label in enumerate(labels)}
    weights = vit_weights(dict(config, num_labels=len(labels) if labels else config["num_labels"]), seed)
    if dtype != "F32":
        config["torch_dtype"] = "float16"
    folder = os.path.join(out, name)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    with open(os.path.join(folder, "preprocessor_config.json"), "w") as f:
        json.dump(preprocessor_config(config), f, indent=2)
    write_safetensors(os.path.join(folder, "model.safetensors"), weights, dtype)
    stored = read_safetensors(os.path.join(folder, "model.safetensors"))[0]  # F16 rounding included
    S, ch = side(config["image_size"]), config["num_channels"]
    g = torch.Generator().manual_seed(1000 + seed)
    pixels = torch.randn(ch, S, S, generator=g, dtype=torch.float64).numpy().astype(np.float32)
    logits = vit_forward(config, stored, pixels)
    # Every class must be reachable from the image: the logits differ from those of another image.
    other = vit_forward(config, stored, np.flip(pixels, axis=2).copy())
    assert (logits - other).abs().max() > 1e-3 * logits.abs().max(), f"{name}: the logits hardly depend on the pixels"
    np.save(os.path.join(folder, "pixels.npy"), pixels.astype("<f4"))
    np.save(os.path.join(folder, "expected_logits.npy"), logits.numpy().astype("<f4"))
    return folder


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: hf_vit_reference.py OUT_DIR")
    out = sys.argv[1]
    folders = {name: write_variant(out, name, 300 + seed) for seed, name in enumerate(VARIANTS)}
    repo = os.path.join(out, "hub", CACHE_REPO)
    snapshot = os.path.join(repo, "snapshots", CACHE_HASH)
    if os.path.exists(repo):
        shutil.rmtree(repo)
    shutil.copytree(folders[CACHE_VARIANT], snapshot)
    os.makedirs(os.path.join(repo, "refs"))
    with open(os.path.join(repo, "refs", "main"), "w") as f:
        f.write(CACHE_HASH)
    print(f"wrote {len(VARIANTS)} ViT checkpoints (and {CACHE_REPO}) to {out}")


if __name__ == "__main__":
    main()
