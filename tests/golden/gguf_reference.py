#!/usr/bin/python3
"""Golden GGUF model files: tiny random models written as llama.cpp writes them (gguf_writer.py, from
the GGUF specification), their matrices in every type tscope reads (F16, BF16, Q8_0, Q4_0, Q4_K,
Q5_K, Q6_K: random valid blocks, quant_reference.py), and the expected logits of the weights those
blocks hold, from the independent float64 PyTorch forward of hf_reference.py (HF's tensor names and
row order). llama.cpp's converter stores a `llama` model's q and k rows permuted into interleaved
RoPE pairs (convert_hf_to_gguf.py, LlamaModel.permute: reshape(heads, 2, D/2, in).swapaxes(1, 2));
qwen2 and qwen3 keep HF's order (NeoX RoPE). Also files tscope must refuse, each with the words its
one-line message must hold (bad.json). tests/test_gguf_model.cpp runs it at test time.

Usage: gguf_reference.py OUT_DIR  (OUT_DIR/NAME.gguf + NAME.logits.npy per variant, tokens.npy, bad.json)
"""
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gguf_writer import ARRAY, FLOAT32, GGML_ID, INT32, STRING, UINT32, tensor_from_array, write_gguf  # noqa: E402
from hf_reference import forward, random_weights  # noqa: E402
from quant_reference import block_dtype, dequantize, random_blocks  # noqa: E402

TOKENS = [3, 17, 42, 5, 9, 60, 1, 33, 12, 7, 42, 5]
QUANT_VALUES = {"Q8_0": 32, "Q4_0": 32, "Q4_K": 256, "Q5_K": 256, "Q6_K": 256}

# HF tensor (inside a layer) -> llama.cpp's name (gguf-py's constants.py TENSOR_NAMES).
LAYER_NAMES = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm", "self_attn.q_proj": "attn_q",
               "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
               "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm", "mlp.gate_proj": "ffn_gate",
               "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}


def gguf_name(hf):
    if hf == "model.embed_tokens.weight":
        return "token_embd.weight"
    if hf == "model.norm.weight":
        return "output_norm.weight"
    if hf == "lm_head.weight":
        return "output.weight"
    _, _, layer, rest = hf.split(".", 3)
    module, kind = rest.rsplit(".", 1)
    return f"blk.{layer}.{LAYER_NAMES[module]}.{kind}"


def type_of(types, gguf):
    """The variant's type for a tensor: the first pattern of `types` found in its name, else F32 for vectors."""
    for pattern, ggml_type in types:
        if pattern in gguf:
            return ggml_type
    return "F32"


def quantized(ggml_type, shape, rng, std):
    """Random valid blocks of an (out, in) matrix whose weights have roughly `std`: (bytes, float64 weights).
    The weights are linear in each block's d and dmin, so scaling both scales them."""
    count = shape[0] * shape[1] // QUANT_VALUES[ggml_type]
    blocks = np.frombuffer(bytearray(random_blocks(ggml_type, count, rng)), dtype=block_dtype(ggml_type)).copy()
    values = dequantize(ggml_type, blocks.tobytes()).astype(np.float64)
    factor = std / max(values.std(), 1e-30)
    for field in ("d", "dmin"):
        if field in blocks.dtype.names:
            blocks[field] = (blocks[field].astype(np.float64) * factor).astype(np.float16)
    raw = blocks.tobytes()
    return raw, dequantize(ggml_type, raw).astype(np.float64).reshape(shape)


def permute_rows(rows, heads):
    """llama.cpp's permute of q / k rows: HF's rotate_half halves -> interleaved pairs, for any per-row data."""
    D = rows.shape[0] // heads
    return rows.reshape(heads, 2, D // 2, *rows.shape[1:]).swapaxes(1, 2).reshape(rows.shape)


def stored(name, ggml_type, array, rng, std):
    """-> (the weights the file holds, in HF order, float64; a function writing the GGUF tensor from HF-order rows)."""
    if ggml_type in QUANT_VALUES:
        raw, values = quantized(ggml_type, array.shape, rng, std)
        row_bytes = len(raw) // array.shape[0]
        rows = np.frombuffer(raw, dtype=np.uint8).reshape(array.shape[0], row_bytes)
        return values, lambda permute: (name, GGML_ID[ggml_type], [array.shape[1], array.shape[0]], permute(rows).tobytes())
    if ggml_type in ("F16", "BF16"):
        _, _, dims, payload = tensor_from_array(name, array, ggml_type)
        dtype = "<f2" if ggml_type == "F16" else "<u2"
        halves = np.frombuffer(payload, dtype=dtype)
        values = halves.astype(np.float64) if ggml_type == "F16" else (halves.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        values = values.reshape(array.shape)
        return values, lambda permute: tensor_from_array(name, permute(values), ggml_type)
    values = array.astype(np.float32).astype(np.float64)
    return values, lambda permute: tensor_from_array(name, permute(values), "F32")


# name: (gguf architecture, HF architecture, config changes, tensor types (name pattern, type), version)
VARIANTS = {
    "llama_q8_0": ("llama", "LlamaForCausalLM", {"hidden_size": 64, "intermediate_size": 96},
                   [("weight", "Q8_0")], 3),
    # K-quants need rows of 256: Q4_K_M's kind of mix (attn_v and ffn_down in Q6_K), so q, k, v differ.
    "llama_k_quants_v2": ("llama", "LlamaForCausalLM", {"hidden_size": 256, "intermediate_size": 512},
                          [("norm", "F32"), ("token_embd", "Q4_K"), ("attn_v", "Q6_K"), ("ffn_down", "Q6_K"), ("ffn_up", "Q5_K"),
                           ("attn_output", "Q5_K"), ("output", "Q6_K"), ("weight", "Q4_K")], 2),
    "qwen2_q4_0": ("qwen2", "Qwen2ForCausalLM", {"hidden_size": 64, "intermediate_size": 96, "tie_word_embeddings": True,
                                                 "rms_norm_eps": 1e-6, "rope_theta": 1e6}, [("weight", "Q4_0")], 3),
    "qwen3_f16_q5_k": ("qwen3", "Qwen3ForCausalLM", {"hidden_size": 256, "intermediate_size": 256, "head_dim": 128,
                                                     "tie_word_embeddings": True, "rms_norm_eps": 1e-6, "rope_theta": 1e6},
                       [("norm", "F32"), ("attn", "F16"), ("weight", "Q5_K")], 3),
    "smollm_bf16": ("llama", "LlamaForCausalLM", {"hidden_size": 64, "intermediate_size": 96, "num_key_value_heads": 1,
                                                  "tie_word_embeddings": True, "rope_theta": 100000.0},
                    [("norm", "F32"), ("weight", "BF16")], 3),
}

BASE = {"num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 64,
        "max_position_embeddings": 64, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "hidden_act": "silu",
        "tie_word_embeddings": False, "rope_scaling": None}


def metadata(arch, config):
    p = arch + "."
    m = [("general.architecture", STRING, arch), ("general.name", STRING, "tscope golden " + arch),
         (p + "context_length", UINT32, config["max_position_embeddings"]), (p + "embedding_length", UINT32, config["hidden_size"]),
         (p + "block_count", UINT32, config["num_hidden_layers"]), (p + "feed_forward_length", UINT32, config["intermediate_size"]),
         (p + "attention.head_count", UINT32, config["num_attention_heads"]),
         (p + "attention.head_count_kv", UINT32, config["num_key_value_heads"]),
         (p + "attention.layer_norm_rms_epsilon", FLOAT32, config["rms_norm_eps"]), (p + "rope.freq_base", FLOAT32, config["rope_theta"])]
    if config.get("head_dim"):
        m += [(p + "attention.key_length", UINT32, config["head_dim"]), (p + "attention.value_length", UINT32, config["head_dim"])]
    return m


def write_variant(out, name, seed):
    arch, hf_arch, changes, types, version = VARIANTS[name]
    config = dict(BASE, architectures=[hf_arch], **changes)
    config["rms_norm_eps"] = float(np.float32(config["rms_norm_eps"]))  # as the file's FLOAT32 holds it
    weights = random_weights(config, hf_arch == "Qwen2ForCausalLM", 200 + seed)
    rng = np.random.default_rng(300 + seed)
    held, tensors = {}, []
    H, Hkv = config["num_attention_heads"], config["num_key_value_heads"]
    for hf, array in weights.items():
        gguf = gguf_name(hf)
        ggml_type = type_of(types, gguf) if array.ndim == 2 else "F32"
        std = float(np.asarray(array).std())
        held[hf], write = stored(gguf, ggml_type, np.asarray(array), rng, std)
        heads = H if ".attn_q." in gguf else Hkv if ".attn_k." in gguf else 0
        interleave = arch == "llama" and heads > 0
        tensors.append(write((lambda rows, h=heads: permute_rows(rows, h)) if interleave else (lambda rows: rows)))
    path = os.path.join(out, name + ".gguf")
    write_gguf(path, metadata(arch, config), tensors, version=version)
    logits, _ = forward(config, held, TOKENS, 0)
    np.save(os.path.join(out, name + ".logits.npy"), logits.numpy().astype("<f4"))
    return path, metadata(arch, config), tensors


def write_bad(out, llama_meta, llama_tensors):
    """Files tscope must refuse, and the words of each refusal."""
    bad = {}

    def variant(name, meta, tensors, words):
        write_gguf(os.path.join(out, name + ".gguf"), meta, tensors)
        bad[name] = words

    swap = lambda key, value_type, value: [(k, value_type, value) if k == key else (k, t, v) for k, t, v in llama_meta]  # noqa: E731
    variant("bad_architecture", swap("general.architecture", STRING, "gemma2"), llama_tensors, ["gemma2", "not supported yet"])
    variant("bad_missing_tensor", llama_meta, [t for t in llama_tensors if t[0] != "blk.1.ffn_up.weight"], ["missing tensor", "blk.1.ffn_up.weight"])
    variant("bad_extra_tensor", llama_meta, llama_tensors + [tensor_from_array("blk.0.surprise.weight", np.zeros(4))], ["unexpected tensor", "surprise"])
    variant("bad_dims", swap("llama.feed_forward_length", UINT32, 256), llama_tensors, ["blk.0.ffn_gate.weight", "has dims"])
    variant("bad_no_heads", [m for m in llama_meta if m[0] != "llama.attention.head_count"], llama_tensors, ["llama.attention.head_count"])
    variant("bad_rope_freqs", llama_meta, llama_tensors + [tensor_from_array("rope_freqs.weight", np.ones(8))], ["rope_freqs.weight", "not read yet"])
    variant("bad_experts", llama_meta + [("llama.expert_count", UINT32, 8)], llama_tensors, ["expert_count", "mixture-of-experts"])
    iq2 = [(n, GGML_ID["IQ2_XXS"], d, bytes(66 * d[0] * d[1] // 256)) if n == "blk.0.attn_q.weight" else (n, i, d, p)  # rows of 256
           for n, i, d, p in llama_tensors]
    variant("bad_iq2_tensor", llama_meta, iq2, ["blk.0.attn_q.weight", "IQ2_XXS", "does not read"])
    tokenizer = [("tokenizer.ggml.model", STRING, "gpt2"), ("tokenizer.ggml.pre", STRING, "exotic-pre"),
                 ("tokenizer.ggml.tokens", ARRAY, (STRING, ["a", "b"])), ("tokenizer.ggml.token_type", ARRAY, (INT32, [1, 1])),
                 ("tokenizer.ggml.merges", ARRAY, (STRING, ["a b"]))]
    write_gguf(os.path.join(out, "tokenizer_unknown_pre.gguf"), llama_meta + tokenizer, llama_tensors)
    with open(os.path.join(out, "bad.json"), "w") as f:
        json.dump(bad, f, indent=1)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    np.save(os.path.join(out, "tokens.npy"), np.asarray(TOKENS, dtype="<i4"))
    for seed, name in enumerate(VARIANTS):
        path, meta, tensors = write_variant(out, name, seed)
        if name == "llama_k_quants_v2":
            write_bad(out, meta, tensors)
    print(f"wrote {len(VARIANTS)} GGUF models and their logits to {out}")


if __name__ == "__main__":
    main()
