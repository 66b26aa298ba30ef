#!/usr/bin/python3
# PyTorch peer for bench/run_hf_bench.py: a plain-PyTorch Qwen2 forward (RMSNorm, rotate_half RoPE,
# grouped-query attention, SwiGLU, q/k/v biases) with a preallocated KV cache under torch.inference_mode(),
# on a HuggingFace checkpoint's weights, timing a 128-token prefill and 128 greedy decode steps. Weights in
# bfloat16 or float32, torch threads 1 or 2: each setting in its own process (thread pools read their env at
# load); the parent reports the best. Each worker also reports its peak resident memory (VmHWM) and, with
# --check REF (bench_forward --reference), how its last-position logits compare with tscope's.
# The safetensors file is read tensor by tensor into torch's own buffers (tests/golden's reader would hold the
# whole file plus a float32 copy of it, which would be the peer's peak memory rather than PyTorch's).
# Usage: /usr/bin/python3 bench/peers/torch_hf_bench.py --model DIR [--check REF.json]
import argparse
import json
import math
import os
import re
import statistics
import struct
import time

import torch
from peer_worker import run_setting  # same folder: one worker launch for every peer

SETTINGS = [(dtype, threads) for dtype in ("bfloat16", "float32") for threads in (1, 2)]


def peak_rss_mb():
    """VmHWM of this process in MB (what bench_forward reports for tscope)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024 / 1e6
    raise RuntimeError("no VmHWM in /proc/self/status")


def read_safetensors(torch, path, dtype):
    """{name: tensor of `dtype`} from a safetensors file of F32 / BF16 / F16 tensors, one tensor in memory
    at a time beside the result (header: u64 length, JSON; data_offsets relative to the data area)."""
    stored = {"F32": (torch.float32, torch.int32), "BF16": (torch.bfloat16, torch.int16), "F16": (torch.float16, torch.int16)}
    tensors = {}
    with open(path, "rb") as f:
        (header_len,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(header_len))
        header.pop("__metadata__", None)
        for name, entry in header.items():
            as_type, raw_type = stored[entry["dtype"]]
            begin, end = entry["data_offsets"]
            raw = torch.empty(math.prod(entry["shape"]), dtype=raw_type)  # numpy has no bfloat16: read its bits
            f.seek(8 + header_len + begin)
            if f.readinto(memoryview(raw.numpy()).cast("B")) != end - begin:
                raise RuntimeError(f"{path}: short read of {name}")
            tensors[name] = raw.view(as_type).reshape(entry["shape"]).to(dtype)
    return tensors


class Qwen2:
    """The checkpoint's weights in PyTorch's (out, in) Linear layout, q|k|v and gate|up fused per layer."""

    def __init__(self, torch, model_dir, dtype):
        with open(os.path.join(model_dir, "config.json")) as f:
            c = json.load(f)
        self.torch, self.dtype = torch, dtype
        self.L, self.C, self.F = c["num_hidden_layers"], c["hidden_size"], c["intermediate_size"]
        self.H, self.Hkv, self.V = c["num_attention_heads"], c["num_key_value_heads"], c["vocab_size"]
        self.D, self.eps = self.C // self.H, c["rms_norm_eps"]
        self.theta, self.tied = c["rope_theta"], c.get("tie_word_embeddings", False)
        w = read_safetensors(torch, os.path.join(model_dir, "model.safetensors"), dtype)
        self.embed = w.pop("model.embed_tokens.weight")  # (V, C)
        self.unembed = self.embed if self.tied else w.pop("lm_head.weight")
        self.norm = w.pop("model.norm.weight")
        self.layers = []
        for layer in range(self.L):
            p = f"model.layers.{layer}."
            take = lambda name: w.pop(p + name)  # noqa: E731
            a = "self_attn."
            self.layers.append({
                "ln_1": take("input_layernorm.weight"), "ln_2": take("post_attention_layernorm.weight"),
                "qkv_w": torch.cat([take(a + "q_proj.weight"), take(a + "k_proj.weight"), take(a + "v_proj.weight")]),
                "qkv_b": torch.cat([take(a + "q_proj.bias"), take(a + "k_proj.bias"), take(a + "v_proj.bias")]),
                "o_w": take(a + "o_proj.weight"),
                "gate_up_w": torch.cat([take("mlp.gate_proj.weight"), take("mlp.up_proj.weight")]),
                "down_w": take("mlp.down_proj.weight"),
            })
        if w:
            raise RuntimeError(f"unused tensors: {sorted(w)[:5]}")

    def weight_bytes_per_decode_token(self):
        """Bytes of weights one decode step reads: every block matrix and the unembedding."""
        total = sum(t.numel() * t.element_size() for layer in self.layers for t in layer.values())
        return total + self.unembed.numel() * self.unembed.element_size()

    def rope_tables(self, positions):
        """cos, sin (positions, D) in the model's dtype: HF's inv_freq and cat(freqs, freqs), in float32."""
        torch = self.torch
        inv_freq = 1.0 / (self.theta ** (torch.arange(0, self.D, 2, dtype=torch.float32) / self.D))
        freqs = torch.outer(torch.arange(positions, dtype=torch.float32), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(self.dtype), emb.sin().to(self.dtype)


class KvCache:
    """Preallocated keys and values (L, Hkv, capacity, D) each, and the RoPE tables for `capacity` positions."""

    def __init__(self, model, capacity):
        torch = model.torch
        self.keys = torch.zeros(model.L, model.Hkv, capacity, model.D, dtype=model.dtype)
        self.values = torch.zeros_like(self.keys)
        self.cos, self.sin = model.rope_tables(capacity)
        self.length = 0


def rms_norm(x, weight, eps):
    """HF's Qwen2RMSNorm: in float32, then back to x's dtype before the weight."""
    x32 = x.float()
    x32 = x32 * x32.pow(2).mean(-1, keepdim=True).add(eps).rsqrt()
    return weight * x32.to(x.dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def forward(m, ids, cache):
    """Runs ids (T,) at positions cache.length.. and appends their keys/values; -> logits (V,) of the last."""
    torch, F = m.torch, m.torch.nn.functional
    T, H, Hkv, D, C = ids.shape[0], m.H, m.Hkv, m.D, m.C
    G, start = H // Hkv, cache.length
    cos, sin = cache.cos[start : start + T], cache.sin[start : start + T]  # (T, D)
    future = torch.ones(T, start + T, dtype=torch.bool).triu(diagonal=start + 1) if T > 1 else None
    x = m.embed[ids]  # (T, C)
    for index, layer in enumerate(m.layers):
        h = rms_norm(x, layer["ln_1"], m.eps)
        qkv = F.linear(h, layer["qkv_w"], layer["qkv_b"])  # (T, (H + 2 Hkv) D)
        q = qkv[:, : H * D].view(T, H, D)
        k = qkv[:, H * D : (H + Hkv) * D].view(T, Hkv, D)
        v = qkv[:, (H + Hkv) * D :].view(T, Hkv, D)
        q = (q * cos[:, None] + rotate_half(q) * sin[:, None]).transpose(0, 1)  # (H, T, D)
        k = (k * cos[:, None] + rotate_half(k) * sin[:, None]).transpose(0, 1)  # (Hkv, T, D)
        cache.keys[index, :, start : start + T] = k
        cache.values[index, :, start : start + T] = v.transpose(0, 1)
        keys = cache.keys[index, :, : start + T]  # (Hkv, S, D)
        values = cache.values[index, :, : start + T]
        # Query head h reads kv head h // G: group the G query heads of each kv head as rows.
        scores = torch.matmul(q.reshape(Hkv, G * T, D), keys.transpose(1, 2)) * (1.0 / math.sqrt(D))  # (Hkv, G T, S)
        if future is not None:
            scores = scores.view(Hkv, G, T, start + T).masked_fill(future, float("-inf")).view(Hkv, G * T, start + T)
        probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(m.dtype)
        context = torch.matmul(probs, values).view(H, T, D).transpose(0, 1).reshape(T, C)
        x = x + F.linear(context, layer["o_w"])
        h = rms_norm(x, layer["ln_2"], m.eps)
        gate, up = F.linear(h, layer["gate_up_w"]).split(m.F, dim=-1)
        x = x + F.linear(F.silu(gate) * up, layer["down_w"])
    cache.length = start + T
    return F.linear(rms_norm(x[-1:], m.norm, m.eps), m.unembed)[0]


def run_worker(args):
    """Times one setting in this process and prints one JSON line."""
    torch.set_num_threads(args.threads)
    dtype = getattr(torch, args.dtype)
    begin = time.perf_counter()
    model = Qwen2(torch, args.model, dtype)
    load_s = time.perf_counter() - begin
    peak_after_load = peak_rss_mb()
    capacity = args.prefill + max(args.decode, 16) + 1
    prompt = torch.randint(0, model.V, (args.prefill,), generator=torch.Generator().manual_seed(1))
    result = {"dtype": args.dtype, "torch_threads": args.threads,
              "env": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}}

    def time_prefill():
        cache = KvCache(model, capacity)
        t0 = time.perf_counter()
        logits = forward(model, prompt, cache)
        return time.perf_counter() - t0, logits, cache

    def time_decode(steps):
        _, logits, cache = time_prefill()
        token = int(logits.argmax())
        t0 = time.perf_counter()
        for _ in range(steps):
            logits = forward(model, torch.tensor([token]), cache)
            token = int(logits.argmax())  # greedy
        return (time.perf_counter() - t0) / steps

    with torch.inference_mode():
        if args.check:
            with open(args.check) as f:
                reference = json.load(f)
            ours = torch.tensor(reference["last_logits"], dtype=torch.float64)
            peer = forward(model, torch.tensor(reference["prompt"]), KvCache(model, len(reference["prompt"]))).double()
            result["check"] = {"prompt_tokens": len(reference["prompt"]), "top1_tscope": int(ours.argmax()), "top1_torch": int(peer.argmax()),
                               "top1_same": int(ours.argmax()) == int(peer.argmax()),
                               "max_abs_diff": float((ours - peer).abs().max()), "max_abs_logit": float(ours.abs().max())}
        time_prefill()  # warm-up
        prefill_s = [time_prefill()[0] for _ in range(args.repeats)]
        time_decode(16)  # warm-up
        decode_s = [time_decode(args.decode) for _ in range(args.repeats)]
    T = args.prefill
    block_params = sum(t.numel() for layer in model.layers for name, t in layer.items() if name.endswith("_w"))
    prefill_flops = 2 * T * block_params + 4 * model.L * model.C * T * (T + 1) / 2 + 2 * model.V * model.C
    prefill_ms, decode_ms = 1e3 * statistics.median(prefill_s), 1e3 * statistics.median(decode_s)
    result.update({
        "load_s": round(load_s, 2), "prefill_tokens": T, "prefill_ms": round(prefill_ms, 2), "prefill_ms_runs": [round(1e3 * s, 2) for s in prefill_s],
        "prefill_gflops_per_s": round(prefill_flops / prefill_ms / 1e6, 1), "decode_steps": args.decode,
        "decode_ms_per_token": round(decode_ms, 3), "decode_ms_per_token_runs": [round(1e3 * s, 3) for s in decode_s],
        "decode_weight_bytes_per_token": model.weight_bytes_per_decode_token(),
        "decode_weight_gb_per_s": round(model.weight_bytes_per_decode_token() / decode_ms / 1e6, 2),
        "peak_rss_after_load_mb": round(peak_after_load, 1), "peak_rss_after_run_mb": round(peak_rss_mb(), 1),
    })
    print(json.dumps(result), flush=True)


def torch_description():
    found = re.search(r"BLAS_INFO=[^,\s]*", torch.__config__.show())
    return f"torch {torch.__version__} ({found.group(0) if found else 'BLAS_INFO not reported'}, mkldnn {torch.backends.mkldnn.is_available()})"


def run_all(args):
    results = []
    for dtype, threads in SETTINGS:
        flags = ["--model", args.model, "--dtype", dtype, "--threads", str(threads),
                 "--prefill", str(args.prefill), "--decode", str(args.decode), "--repeats", str(args.repeats)]
        if args.check:
            flags += ["--check", args.check]
        results.append(run_setting(__file__, flags, threads, threads, f"{dtype}/{threads}"))
        print(json.dumps(results[-1]), flush=True)
    label = lambda r: f"{r['dtype']}, {r['torch_threads']} thread{'s' if r['torch_threads'] > 1 else ''}"  # noqa: E731
    best_prefill = min(results, key=lambda r: r["prefill_ms"])
    best_decode = min(results, key=lambda r: r["decode_ms_per_token"])
    print(json.dumps({
        "best_prefill_ms": best_prefill["prefill_ms"], "best_prefill_config": label(best_prefill),
        "best_decode_ms_per_token": best_decode["decode_ms_per_token"], "best_decode_config": label(best_decode),
        "best_decode_peak_rss_mb": best_decode["peak_rss_after_run_mb"],
        "min_peak_rss_mb": min(r["peak_rss_after_run_mb"] for r in results), "torch": torch_description(),
    }), flush=True)


def main():
    parser = argparse.ArgumentParser(description="PyTorch Qwen2 CPU prefill/decode peer benchmark.")
    parser.add_argument("--model", required=True, help="HuggingFace model directory (config.json + model.safetensors)")
    parser.add_argument("--check", help="bench_forward --reference JSON: compare last-position logits")
    parser.add_argument("--prefill", type=int, default=128)
    parser.add_argument("--decode", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--worker", action="store_true", help="time one setting (internal)")
    parser.add_argument("--dtype", choices=("bfloat16", "float32"), default="bfloat16")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    if args.worker:
        run_worker(args)
    else:
        run_all(args)


if __name__ == "__main__":
    main()
