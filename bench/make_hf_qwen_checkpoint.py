#!/usr/bin/python3
# Writes a HuggingFace checkpoint with Qwen2.5-0.5B's shape (its published config.json; random
# weights, std 0.02, norm weights 1, stored BF16, about 988 MB) for bench/run_hf_bench.py, through
# tests/golden/hf_reference.py's write_checkpoint. Written to DIR.partial, then renamed, so a DIR that
# exists is complete. Usage: /usr/bin/python3 bench/make_hf_qwen_checkpoint.py [--out DIR] [--force]
import argparse
import os
import shutil
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "golden"))
from hf_reference import write_checkpoint  # noqa: E402

DEFAULT_OUT = os.path.join(tempfile.gettempdir(), "tscope-bench", "qwen2.5-0.5b-shape")

# Qwen/Qwen2.5-0.5B's config.json (the fields a Qwen2ForCausalLM reader uses, as published).
CONFIG = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_act": "silu", "hidden_size": 896,
    "intermediate_size": 4864, "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2,
    "vocab_size": 151936, "max_position_embeddings": 32768, "rope_theta": 1000000.0, "rms_norm_eps": 1e-06,
    "tie_word_embeddings": True, "use_sliding_window": False, "sliding_window": 32768, "max_window_layers": 24,
    "attention_dropout": 0.0, "initializer_range": 0.02, "bos_token_id": 151643, "eos_token_id": 151643,
    "torch_dtype": "bfloat16", "use_cache": True,
}


def random_weights(config, seed=0, std=0.02):
    """HF tensor names -> float32 arrays ((out, in) Linear weights, q/k/v biases), N(0, std), norms 1."""
    g = torch.Generator().manual_seed(seed)
    C, F, V = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    H, Hkv = config["num_attention_heads"], config["num_key_value_heads"]
    D = C // H

    def normal(*shape):
        return (torch.randn(*shape, generator=g) * std).numpy()

    w = {"model.embed_tokens.weight": normal(V, C)}
    for layer in range(config["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        w[p + "input_layernorm.weight"] = torch.ones(C).numpy()
        for name, rows in (("q_proj", H * D), ("k_proj", Hkv * D), ("v_proj", Hkv * D)):
            w[p + f"self_attn.{name}.weight"] = normal(rows, C)
            w[p + f"self_attn.{name}.bias"] = normal(rows)
        w[p + "self_attn.o_proj.weight"] = normal(C, H * D)
        w[p + "post_attention_layernorm.weight"] = torch.ones(C).numpy()
        w[p + "mlp.gate_proj.weight"] = normal(F, C)
        w[p + "mlp.up_proj.weight"] = normal(F, C)
        w[p + "mlp.down_proj.weight"] = normal(C, F)
    w["model.norm.weight"] = torch.ones(C).numpy()
    return w


def ensure_checkpoint(out, force=False):
    """Writes the checkpoint to `out` unless it is there already; returns `out`."""
    if os.path.isdir(out) and not force:
        return out
    partial = out + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    write_checkpoint(partial, CONFIG, random_weights(CONFIG), "BF16", 1)
    shutil.rmtree(out, ignore_errors=True)
    os.rename(partial, out)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default=DEFAULT_OUT)
    parser.add_argument("--force", action="store_true", help="rewrite it even when it exists")
    args = parser.parse_args()
    out = ensure_checkpoint(args.out, args.force)
    size = os.path.getsize(os.path.join(out, "model.safetensors"))
    print(f"{out}: model.safetensors {size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
