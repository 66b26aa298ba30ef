#!/usr/bin/env python3
# An independent float64 PyTorch forward of HuggingFace Llama-family models (Llama, Mistral, Qwen2,
# Qwen3, Mixtral, Qwen2-MoE), written from the architectures' definitions (RMSNorm, rotate_half RoPE,
# grouped-query attention, SwiGLU, sliding window, q/k/v, o and MLP biases, Qwen3's per-head q_norm /
# k_norm before RoPE, Mixtral's top-k sparse MoE block, Qwen2-MoE's block with optionally
# unrenormalised top-k weights and a sigmoid-gated shared expert, Llama 3.1/3.2's rope_scaling
# "llama3") with plain torch, no `transformers`. It writes tiny
# random-weight checkpoints in the HuggingFace layout (config.json + model.safetensors; one variant
# sharded with model.safetensors.index.json, one in BF16, one in F16 with every bias) and, for a
# fixed token sequence, the expected logits (T, V) and attention maps (L, H, T, T) as .npy. tests/test_hf_checkpoint.cpp runs
# it at test time into a temporary directory (nothing generated is committed).
#
# BERT masked LMs (BERT_VARIANTS: BertForMaskedLM / BertForPreTraining, old gamma/beta names, BF16) come
# from their own float64 forward (bert_forward), run by tests/test_hf_bert.cpp.
#
# Usage: hf_reference.py OUT_DIR [bert]  (one folder per variant, see VARIANTS and BERT_VARIANTS; "bert":
#                                         the BERT variants only)
import json
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "forward"))
from weight_files import read_safetensors, write_safetensors  # noqa: E402

TOKENS = [3, 17, 42, 5, 9, 60, 1, 33, 12, 7, 42, 5]

BASE = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "vocab_size": 64, "max_position_embeddings": 64, "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0, "hidden_act": "silu", "tie_word_embeddings": False, "rope_scaling": None}

# name: (architecture, model_type, config changes, dtype, shards)
VARIANTS = {
    "llama": ("LlamaForCausalLM", "llama", {"attention_bias": False, "mlp_bias": False}, "F32", 1),
    "smollm": ("LlamaForCausalLM", "llama", {"num_key_value_heads": 1, "tie_word_embeddings": True, "rope_theta": 100000.0}, "F32", 1),
    "mistral": ("MistralForCausalLM", "mistral", {"sliding_window": 4, "rope_theta": 1e6}, "F32", 1),
    # attention_bias: True as some Qwen2 configs say it: HF's Qwen2 still has no o_proj bias (qwen2_family).
    "qwen2": ("Qwen2ForCausalLM", "qwen2", {"rms_norm_eps": 1e-6, "rope_theta": 1e6, "tie_word_embeddings": True, "attention_bias": True,
                                            "use_sliding_window": False, "sliding_window": 32768, "max_window_layers": 2}, "F32", 1),
    "llama_sharded": ("LlamaForCausalLM", "llama", {}, "F32", 2),
    "llama_bf16": ("LlamaForCausalLM", "llama", {"torch_dtype": "bfloat16"}, "BF16", 1),
    "llama_f16_biases": ("LlamaForCausalLM", "llama", {"torch_dtype": "float16", "attention_bias": True, "mlp_bias": True}, "F16", 1),
    "mixtral": ("MixtralForCausalLM", "mixtral", {"num_local_experts": 4, "num_experts_per_tok": 2, "sliding_window": None,
                                                  "router_aux_loss_coef": 0.02}, "F32", 1),
    "qwen3": ("Qwen3ForCausalLM", "qwen3", {"head_dim": 8, "rms_norm_eps": 1e-6, "rope_theta": 1e6, "tie_word_embeddings": True,
                                            "attention_bias": False, "use_sliding_window": False, "sliding_window": None,
                                            "max_window_layers": 2}, "F32", 1),
    "qwen3_attention_bias": ("Qwen3ForCausalLM", "qwen3", {"head_dim": 8, "num_key_value_heads": 1, "attention_bias": True}, "F32", 1),
    # Llama 3.2-style: tied embeddings and rope_scaling llama3. With D = 8 the four pairs have
    # wavelengths 2 pi * 100^(i/4) = 6.3, 19.9, 62.8, 199 positions; original context 40 puts them
    # below 40 / 4 = 10 (kept), between 10 and 40 (blended) and above 40 (divided by 8).
    "llama32_rope_scaling": ("LlamaForCausalLM", "llama", {"tie_word_embeddings": True, "rope_theta": 100.0, "rope_scaling": {
        "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 40}}, "F32", 1),
    # Qwen1.5-MoE's kind: top-k router probabilities not renormalised; experts narrower than
    # intermediate_size (which only dense layers would use), a wider shared expert.
    "qwen2_moe": ("Qwen2MoeForCausalLM", "qwen2_moe", {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 20,
                                                      "shared_expert_intermediate_size": 40, "norm_topk_prob": False,
                                                      "decoder_sparse_step": 1, "mlp_only_layers": [], "router_aux_loss_coef": 0.01,
                                                      "rms_norm_eps": 1e-6, "rope_theta": 1e6, "use_sliding_window": False,
                                                      "sliding_window": 32768, "max_window_layers": 2}, "F32", 1),
    "qwen2_moe_bf16_normalized": ("Qwen2MoeForCausalLM", "qwen2_moe", {"num_experts": 4, "num_experts_per_tok": 2,
                                                                      "moe_intermediate_size": 20, "shared_expert_intermediate_size": 24,
                                                                      "norm_topk_prob": True, "tie_word_embeddings": True,
                                                                      "torch_dtype": "bfloat16"}, "BF16", 1),
    # Qwen3-0.6B's kind in miniature: heads wider than hidden_size / heads (4 x 16 = 64 over hidden 32),
    # so q, k, v and o_proj are H D = 64 wide; BF16, so the halves path carries the wider shapes.
    "qwen3_wide_heads_bf16": ("Qwen3ForCausalLM", "qwen3", {"head_dim": 16, "rms_norm_eps": 1e-6, "rope_theta": 1e6,
                                                            "tie_word_embeddings": True, "attention_bias": False,
                                                            "torch_dtype": "bfloat16"}, "BF16", 1),
    # Heads narrower than hidden_size / heads (4 x 4 = 16 over hidden 32), with o_proj's bias.
    "llama_narrow_heads": ("LlamaForCausalLM", "llama", {"head_dim": 4, "attention_bias": True}, "F32", 1),
}


def has_qk_norm(config):
    """Qwen3 RMSNorms every head's q and k (D entries) after the projections, before RoPE."""
    return config["architectures"][0] == "Qwen3ForCausalLM"


def qwen2_family(config):
    """HF's Qwen2 / Qwen2-MoE attention: q/k/v biases always, never an o_proj bias (attention_bias is not read)."""
    return config["architectures"][0] in ("Qwen2ForCausalLM", "Qwen2MoeForCausalLM")


def random_weights(config, qkv_bias, seed):
    """HF tensor names -> float64 arrays; Linear weights (out, in)."""
    g = torch.Generator().manual_seed(seed)
    C, F, V = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    H, Hkv = config["num_attention_heads"], config["num_key_value_heads"]
    D = config.get("head_dim") or C // H

    def normal(*shape, std):
        return (torch.randn(*shape, generator=g, dtype=torch.float64) * std).numpy()

    def norm_weight():
        return 1.0 + normal(C, std=0.2)

    w = {"model.embed_tokens.weight": normal(V, C, std=1.0)}
    for l in range(config["num_hidden_layers"]):
        p = f"model.layers.{l}."
        w[p + "input_layernorm.weight"] = norm_weight()
        # Larger q/k weights than HF's init give peaked attention, so the maps say something.
        w[p + "self_attn.q_proj.weight"] = normal(H * D, C, std=0.5)
        w[p + "self_attn.k_proj.weight"] = normal(Hkv * D, C, std=0.5)
        w[p + "self_attn.v_proj.weight"] = normal(Hkv * D, C, std=1 / math.sqrt(C))
        if qkv_bias:
            w[p + "self_attn.q_proj.bias"] = normal(H * D, std=0.3)
            w[p + "self_attn.k_proj.bias"] = normal(Hkv * D, std=0.3)
            w[p + "self_attn.v_proj.bias"] = normal(Hkv * D, std=0.3)
        if has_qk_norm(config):
            w[p + "self_attn.q_norm.weight"] = 1.0 + normal(D, std=0.1)
            w[p + "self_attn.k_norm.weight"] = 1.0 + normal(D, std=0.1)
        w[p + "self_attn.o_proj.weight"] = normal(C, H * D, std=1 / math.sqrt(C))
        if config.get("attention_bias", False) and not qwen2_family(config):
            w[p + "self_attn.o_proj.bias"] = normal(C, std=0.3)
        w[p + "post_attention_layernorm.weight"] = norm_weight()
        if "num_local_experts" in config:  # Mixtral: a router and SwiGLU experts w1 (gate), w3 (up), w2 (down)
            m = p + "block_sparse_moe."
            # A strong router, so the top-k choice differs from token to token.
            w[m + "gate.weight"] = normal(config["num_local_experts"], C, std=1.0)
            for e in range(config["num_local_experts"]):
                w[m + f"experts.{e}.w1.weight"] = normal(F, C, std=1 / math.sqrt(C))
                w[m + f"experts.{e}.w3.weight"] = normal(F, C, std=1 / math.sqrt(C))
                w[m + f"experts.{e}.w2.weight"] = normal(C, F, std=1 / math.sqrt(F))
            continue
        if "num_experts" in config:  # Qwen2-MoE: mlp.gate router, SwiGLU experts, a shared expert and its (1, C) gate
            m, E = p + "mlp.", config["num_experts"]
            w[m + "gate.weight"] = normal(E, C, std=1.0)
            widths = [(f"experts.{e}.", config["moe_intermediate_size"]) for e in range(E)]
            for name, width in widths + [("shared_expert.", config["shared_expert_intermediate_size"])]:
                w[m + name + "gate_proj.weight"] = normal(width, C, std=1 / math.sqrt(C))
                w[m + name + "up_proj.weight"] = normal(width, C, std=1 / math.sqrt(C))
                w[m + name + "down_proj.weight"] = normal(C, width, std=1 / math.sqrt(width))
            w[m + "shared_expert_gate.weight"] = normal(1, C, std=0.5)
            continue
        w[p + "mlp.gate_proj.weight"] = normal(F, C, std=1 / math.sqrt(C))
        w[p + "mlp.up_proj.weight"] = normal(F, C, std=1 / math.sqrt(C))
        w[p + "mlp.down_proj.weight"] = normal(C, F, std=1 / math.sqrt(F))
        if config.get("mlp_bias", False):
            for name, n in (("gate_proj", F), ("up_proj", F), ("down_proj", C)):
                w[p + f"mlp.{name}.bias"] = normal(n, std=0.3)
    w["model.norm.weight"] = norm_weight()
    if not config["tie_word_embeddings"]:
        w["lm_head.weight"] = normal(V, C, std=1 / math.sqrt(C))
    return w


def rms_norm(x, weight, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rope_bands(config, D):
    """-> (inverse frequencies (D/2), band of each pair: "kept", "blended" or "scaled"). Plain RoPE:
    theta^(-2i/D), all kept. rope_scaling llama3 (Llama 3.1/3.2): a pair whose wavelength
    2 pi / f is under original / high_freq_factor keeps f, one over original / low_freq_factor
    takes f / factor, one between blends them with s = (original / wavelength - low) / (high - low):
    (1 - s) f / factor + s f."""
    inv_freq = config["rope_theta"] ** (-torch.arange(0, D, 2, dtype=torch.float64) / D)
    scaling = config.get("rope_scaling")
    if not scaling:
        return inv_freq, ["kept"] * len(inv_freq)
    assert scaling.get("rope_type", scaling.get("type")) == "llama3", scaling
    factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
    original = scaling["original_max_position_embeddings"]
    frequencies, bands = [], []
    for f in inv_freq.tolist():
        wavelength = 2 * math.pi / f
        if wavelength < original / high:
            frequencies.append(f)
            bands.append("kept")
        elif wavelength > original / low:
            frequencies.append(f / factor)
            bands.append("scaled")
        else:
            s = (original / wavelength - low) / (high - low)
            frequencies.append((1 - s) * f / factor + s * f)
            bands.append("blended")
    return torch.tensor(frequencies, dtype=torch.float64), bands


def rope(x, inv_freq):
    """x (heads, T, D): HF's rotate_half RoPE, pairs (i, i + D/2) turned by t * inv_freq[i]."""
    T = x.shape[1]
    angles = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)
    emb = torch.cat((angles, angles), dim=-1)
    return x * emb.cos() + rotate_half(x) * emb.sin()


def forward(config, w, tokens, window):
    """-> logits (T, V), attention (L, H, T, T); float64. window: keys j with i - window < j <= i (0 = all)."""
    t = lambda name: torch.from_numpy(np.asarray(w[name], dtype=np.float64))  # noqa: E731
    C, H, Hkv = config["hidden_size"], config["num_attention_heads"], config["num_key_value_heads"]
    D, eps = config.get("head_dim") or C // H, config["rms_norm_eps"]
    inv_freq, _ = rope_bands(config, D)
    T = len(tokens)
    bias = lambda name, n: t(name) if name in w else torch.zeros(n, dtype=torch.float64)  # noqa: E731
    x = t("model.embed_tokens.weight")[torch.tensor(tokens)]
    i = torch.arange(T).unsqueeze(1)
    j = torch.arange(T).unsqueeze(0)
    allowed = (j <= i) & ((j > i - window) if window > 0 else torch.ones(T, T, dtype=torch.bool))
    maps = []
    for l in range(config["num_hidden_layers"]):
        p = f"model.layers.{l}.self_attn."
        h = rms_norm(x, t(f"model.layers.{l}.input_layernorm.weight"), eps)
        q = (h @ t(p + "q_proj.weight").T + bias(p + "q_proj.bias", H * D)).view(T, H, D)
        k = (h @ t(p + "k_proj.weight").T + bias(p + "k_proj.bias", Hkv * D)).view(T, Hkv, D)
        if has_qk_norm(config):  # over each head's D entries, in HF's row order (before RoPE)
            q, k = rms_norm(q, t(p + "q_norm.weight"), eps), rms_norm(k, t(p + "k_norm.weight"), eps)
        q, k = q.transpose(0, 1), k.transpose(0, 1)
        v = (h @ t(p + "v_proj.weight").T + bias(p + "v_proj.bias", Hkv * D)).view(T, Hkv, D).transpose(0, 1)
        q, k = rope(q, inv_freq), rope(k, inv_freq)
        k = k.repeat_interleave(H // Hkv, dim=0)  # HF's repeat_kv: query head h reads kv head h // (H / Hkv)
        v = v.repeat_interleave(H // Hkv, dim=0)
        scores = (q @ k.transpose(1, 2)) / math.sqrt(D)
        probs = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
        maps.append(probs)
        attn = (probs @ v).transpose(0, 1).reshape(T, H * D)
        x = x + attn @ t(p + "o_proj.weight").T + bias(p + "o_proj.bias", C)
        m = f"model.layers.{l}.mlp."
        F = config["intermediate_size"]
        h = rms_norm(x, t(f"model.layers.{l}.post_attention_layernorm.weight"), eps)
        if "num_local_experts" in config:
            x = x + mixtral_moe(config, t, f"model.layers.{l}.block_sparse_moe.", h)
            continue
        if "num_experts" in config:
            x = x + qwen2_moe(config, t, m, h)
            continue
        gate = h @ t(m + "gate_proj.weight").T + bias(m + "gate_proj.bias", F)
        up = h @ t(m + "up_proj.weight").T + bias(m + "up_proj.bias", F)
        x = x + (torch.nn.functional.silu(gate) * up) @ t(m + "down_proj.weight").T + bias(m + "down_proj.bias", C)
    x = rms_norm(x, t("model.norm.weight"), eps)
    unembedding = t("model.embed_tokens.weight") if config["tie_word_embeddings"] else t("lm_head.weight")
    return x @ unembedding.T, torch.stack(maps)


def mixtral_moe(config, t, prefix, h):
    """MixtralSparseMoeBlock: softmax over every expert's router logit, the top k kept and
    renormalised to sum to 1, the chosen SwiGLU experts' outputs summed with those weights."""
    E, k = config["num_local_experts"], config["num_experts_per_tok"]
    probs = torch.softmax(h @ t(prefix + "gate.weight").T, dim=-1)  # (T, E)
    top, chosen = torch.topk(probs, k, dim=-1)
    top = top / top.sum(-1, keepdim=True)
    out = torch.zeros_like(h)
    for e in range(E):
        x_e = prefix + f"experts.{e}."
        expert = (torch.nn.functional.silu(h @ t(x_e + "w1.weight").T) * (h @ t(x_e + "w3.weight").T)) @ t(x_e + "w2.weight").T
        weight = (top * (chosen == e)).sum(-1, keepdim=True)  # 0 where the token did not choose e
        out = out + weight * expert
    return out


def swiglu(t, prefix, h):
    return (torch.nn.functional.silu(h @ t(prefix + "gate_proj.weight").T) * (h @ t(prefix + "up_proj.weight").T)) @ t(prefix + "down_proj.weight").T


def qwen2_moe(config, t, prefix, h):
    """Qwen2MoeSparseMoeBlock: softmax over every expert's router logit, the top k kept (renormalised
    to sum 1 only with norm_topk_prob), the chosen experts' outputs summed with those weights, plus
    the shared expert's output times sigmoid(shared_expert_gate(h))."""
    E, k = config["num_experts"], config["num_experts_per_tok"]
    probs = torch.softmax(h @ t(prefix + "gate.weight").T, dim=-1)  # (T, E)
    top, chosen = torch.topk(probs, k, dim=-1)
    if config["norm_topk_prob"]:
        top = top / top.sum(-1, keepdim=True)
    out = torch.zeros_like(h)
    for e in range(E):
        weight = (top * (chosen == e)).sum(-1, keepdim=True)  # 0 where the token did not choose e
        out = out + weight * swiglu(t, prefix + f"experts.{e}.", h)
    shared_gate = torch.sigmoid(h @ t(prefix + "shared_expert_gate.weight").T)  # (T, 1)
    return out + shared_gate * swiglu(t, prefix + "shared_expert.", h)


# BERT masked language models (BertForMaskedLM, BertForPreTraining), from the published architecture
# (Devlin et al. 2018; HF's BertConfig fields): word + position + token type embeddings, LayerNorm;
# post-norm layers LN(x + attention(x)), LN(x + W2 act(W1 x)); the masked-LM head LN(act(dense(x)))
# times the word embeddings (tied) plus an output bias. No final norm, no attention mask.
BERT_BASE = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 64,
             "max_position_embeddings": 40, "type_vocab_size": 2, "layer_norm_eps": 1e-12, "hidden_act": "gelu",
             "position_embedding_type": "absolute", "model_type": "bert", "pad_token_id": 0}

# name: (architecture, config changes, dtype, LayerNorm names (weight, bias), extra tensors stored)
BERT_VARIANTS = {
    # bert-base's layout: the decoder (tied) and its bias stored, the pooler (unused) too; token 9 is
    # [SEP], once in TOKENS: a sentence pair, segments 0 then 1.
    "bert": ("BertForMaskedLM", {"sep_token_id": 9}, "F32", ("weight", "bias"), ("decoder", "pooler")),
    # Old names (LayerNorm.gamma / beta), 8 heads of 4, three token types, 3 layers, the next-sentence
    # head; token 42 is [SEP], twice in TOKENS: segments 0, 1 and 2.
    "bert_gamma_beta_heads8": ("BertForPreTraining", {"num_attention_heads": 8, "num_hidden_layers": 3, "type_vocab_size": 3,
                                                      "layer_norm_eps": 1e-5, "sep_token_id": 42}, "F32", ("gamma", "beta"), ("seq_relationship",)),
    # BF16 (the matrices kept as halves), the tanh GELU, 2 heads; no [SEP] id: one segment.
    "bert_bf16_gelu_new": ("BertForMaskedLM", {"num_attention_heads": 2, "hidden_act": "gelu_new", "torch_dtype": "bfloat16"}, "BF16",
                           ("weight", "bias"), ()),
}


def bert_weights(config, names, extras, seed):
    """HF BertForMaskedLM tensor names -> float64 arrays; Linear weights (out, in)."""
    g = torch.Generator().manual_seed(seed)
    C, F, V = config["hidden_size"], config["intermediate_size"], config["vocab_size"]

    def normal(*shape, std):
        return (torch.randn(*shape, generator=g, dtype=torch.float64) * std).numpy()

    def linear(w, name, out, into, std):
        w[name + ".weight"] = normal(out, into, std=std)
        w[name + ".bias"] = normal(out, std=0.2)

    def layer_norm(w, name):
        w[f"{name}.{names[0]}"] = 1.0 + normal(C, std=0.2)
        w[f"{name}.{names[1]}"] = normal(C, std=0.2)

    e = "bert.embeddings."
    w = {e + "word_embeddings.weight": normal(V, C, std=1.0), e + "position_embeddings.weight": normal(config["max_position_embeddings"], C, std=0.5),
         e + "token_type_embeddings.weight": normal(config["type_vocab_size"], C, std=0.5)}
    layer_norm(w, e + "LayerNorm")
    for l in range(config["num_hidden_layers"]):
        p = f"bert.encoder.layer.{l}."
        for name in ("query", "key"):  # larger than HF's init: peaked attention
            linear(w, p + "attention.self." + name, C, C, 0.5)
        linear(w, p + "attention.self.value", C, C, 1 / math.sqrt(C))
        linear(w, p + "attention.output.dense", C, C, 1 / math.sqrt(C))
        layer_norm(w, p + "attention.output.LayerNorm")
        linear(w, p + "intermediate.dense", F, C, 1 / math.sqrt(C))
        linear(w, p + "output.dense", C, F, 1 / math.sqrt(F))
        layer_norm(w, p + "output.LayerNorm")
    linear(w, "cls.predictions.transform.dense", C, C, 1 / math.sqrt(C))
    layer_norm(w, "cls.predictions.transform.LayerNorm")
    w["cls.predictions.bias"] = normal(V, std=0.3)
    if "decoder" in extras:  # HF ties the decoder to the word embeddings and its bias to cls.predictions.bias
        w["cls.predictions.decoder.weight"] = w[e + "word_embeddings.weight"]
        w["cls.predictions.decoder.bias"] = w["cls.predictions.bias"]
    if "pooler" in extras:
        linear(w, "bert.pooler.dense", C, C, 0.1)
    if "seq_relationship" in extras:
        linear(w, "cls.seq_relationship", 2, C, 0.1)
    return w


def layer_norm(x, t, name, eps):
    """LayerNorm over the last axis (biased variance), gain and bias stored as name.weight / .bias or .gamma / .beta."""
    gain, bias = (name + ".weight", name + ".bias") if name + ".weight" in t.names else (name + ".gamma", name + ".beta")
    centred = x - x.mean(-1, keepdim=True)
    return centred / torch.sqrt(centred.pow(2).mean(-1, keepdim=True) + eps) * t(gain) + t(bias)


def activation(x, name):
    if name == "gelu":  # the exact form, x Phi(x)
        return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))
    assert name == "gelu_new", name  # the tanh approximation
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x.pow(3))))


def token_type_ids(config, tokens):
    """BERT's sentence-pair segments: 0 up to and including the first [SEP], then 1, ... (capped at the table)."""
    sep, types, segment = config.get("sep_token_id"), [], 0
    for token in tokens:
        types.append(min(segment, config["type_vocab_size"] - 1))
        segment += token == sep
    return types


def bert_forward(config, w, tokens):
    """-> logits (T, V), attention (L, H, T, T); float64, token types from token_type_ids, no padding mask."""
    t = lambda name: torch.from_numpy(np.asarray(w[name], dtype=np.float64))  # noqa: E731
    t.names = w
    C, H, eps, act = config["hidden_size"], config["num_attention_heads"], config["layer_norm_eps"], config["hidden_act"]
    D, T = C // H, len(tokens)
    linear = lambda x, name: x @ t(name + ".weight").T + t(name + ".bias")  # noqa: E731
    e = "bert.embeddings."
    x = t(e + "word_embeddings.weight")[torch.tensor(tokens)] + t(e + "position_embeddings.weight")[:T]
    x = x + t(e + "token_type_embeddings.weight")[torch.tensor(token_type_ids(config, tokens))]
    x = layer_norm(x, t, e + "LayerNorm", eps)
    maps = []
    for l in range(config["num_hidden_layers"]):
        p = f"bert.encoder.layer.{l}."
        q, k, v = (linear(x, p + "attention.self." + n).view(T, H, D).transpose(0, 1) for n in ("query", "key", "value"))
        probs = torch.softmax((q @ k.transpose(1, 2)) / math.sqrt(D), dim=-1)
        maps.append(probs)
        attn = (probs @ v).transpose(0, 1).reshape(T, C)
        x = layer_norm(x + linear(attn, p + "attention.output.dense"), t, p + "attention.output.LayerNorm", eps)
        h = activation(linear(x, p + "intermediate.dense"), act)
        x = layer_norm(x + linear(h, p + "output.dense"), t, p + "output.LayerNorm", eps)
    h = layer_norm(activation(linear(x, "cls.predictions.transform.dense"), act), t, "cls.predictions.transform.LayerNorm", eps)
    return h @ t(e + "word_embeddings.weight").T + t("cls.predictions.bias"), torch.stack(maps)


def write_bert_variants(out):
    for seed, (name, (arch, changes, dtype, names, extras)) in enumerate(BERT_VARIANTS.items()):
        config = dict(BERT_BASE, architectures=[arch], **changes)
        if "sep_token_id" in config:  # the variant must exercise more than one segment
            assert len(set(token_type_ids(config, TOKENS))) == config["type_vocab_size"], name
        folder = os.path.join(out, name)
        write_checkpoint(folder, config, bert_weights(config, names, extras, 200 + seed), dtype, 1)
        logits, maps = bert_forward(config, read_checkpoint(folder), TOKENS)
        np.save(os.path.join(folder, "tokens.npy"), np.asarray(TOKENS, dtype="<i4"))
        np.save(os.path.join(folder, "logits.npy"), logits.numpy().astype("<f4"))
        np.save(os.path.join(folder, "attention.npy"), maps.numpy().astype("<f4"))


def write_checkpoint(folder, config, weights, dtype, shards):
    """config.json plus model.safetensors, or `shards` files and model.safetensors.index.json."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    if shards == 1:
        write_safetensors(os.path.join(folder, "model.safetensors"), weights, dtype)
        return
    names = list(weights)
    weight_map = {}
    for s in range(shards):
        file = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        part = {n: weights[n] for n in names[s::shards]}
        write_safetensors(os.path.join(folder, file), part, dtype)
        weight_map.update({n: file for n in part})
    total = sum(np.asarray(a).size * 4 for a in weights.values())
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)


def read_checkpoint(folder):
    """Every tensor back from the files as stored (BF16 rounding included)."""
    files = [n for n in sorted(os.listdir(folder)) if n.endswith(".safetensors")]
    weights = {}
    for name in files:
        weights.update(read_safetensors(os.path.join(folder, name))[0])
    return weights


def main():
    out = sys.argv[1]
    if sys.argv[2:] == ["bert"]:
        write_bert_variants(out)
        print(f"wrote {len(BERT_VARIANTS)} checkpoints to {out}")
        return
    for seed, (name, (arch, model_type, changes, dtype, shards)) in enumerate(VARIANTS.items()):
        config = dict(BASE, architectures=[arch], model_type=model_type, **changes)
        qkv_bias = arch in ("Qwen2ForCausalLM", "Qwen2MoeForCausalLM") or config.get("attention_bias", False)  # Qwen3 dropped Qwen2's
        folder = os.path.join(out, name)
        write_checkpoint(folder, config, random_weights(config, qkv_bias, 100 + seed), dtype, shards)
        window = config.get("sliding_window") or 0
        if arch in ("Qwen2ForCausalLM", "Qwen3ForCausalLM", "Qwen2MoeForCausalLM") and not config.get("use_sliding_window", False):
            window = 0
        weights = read_checkpoint(folder)
        logits, maps = forward(config, weights, TOKENS, window)
        if config.get("rope_scaling"):
            # The variant must exercise all three bands, and the scaling must change the logits.
            D = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
            bands = rope_bands(config, D)[1]
            assert {"kept", "blended", "scaled"} <= set(bands), f"{name}: RoPE bands {bands}"
            plain, _ = forward(dict(config, rope_scaling=None), weights, TOKENS, window)
            assert (plain - logits).abs().max() > 1e-2 * logits.abs().max(), f"{name}: rope_scaling hardly changes the logits"
        np.save(os.path.join(folder, "tokens.npy"), np.asarray(TOKENS, dtype="<i4"))
        np.save(os.path.join(folder, "logits.npy"), logits.numpy().astype("<f4"))
        np.save(os.path.join(folder, "attention.npy"), maps.numpy().astype("<f4"))
    write_bert_variants(out)
    print(f"wrote {len(VARIANTS) + len(BERT_VARIANTS)} checkpoints to {out}")


if __name__ == "__main__":
    main()
