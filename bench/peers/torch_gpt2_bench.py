# PyTorch peer for tscope's CPU benchmarks: a plain-PyTorch GPT-2 124M (random float32 weights,
# own module with a KV cache, torch.inference_mode) timing a 128-token prefill and 128 greedy decode
# steps. Each thread configuration runs in its own subprocess because BLAS reads its env at load.
# Run with Debian's python: /usr/bin/python3 bench/peers/torch_gpt2_bench.py
import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time

from peer_worker import run_setting  # same folder: one worker launch for every peer

# GPT-2 124M ("gpt2" on the HF hub).
N_LAYER, N_HEAD, N_EMBD, VOCAB_SIZE, N_POSITIONS = 12, 12, 768, 50257, 1024
PROMPT_TOKENS = 128  # prefill length
DECODE_STEPS = 128  # greedy steps after the prefill, timed
REPETITIONS = 3  # timed repetitions after one warm-up; the median is reported
THREAD_CONFIGS = [(blas, intra_op) for blas in (1, 2) for intra_op in (1, 2)]


def build_model(torch):
    """Random float32 GPT-2 weights in PyTorch's (out, in) Linear layout; wte doubles as lm_head."""
    torch.manual_seed(0)
    C = N_EMBD

    def normal(*shape):
        return torch.randn(*shape) * 0.02

    layers = []
    for _ in range(N_LAYER):
        layers.append({
            "ln_1_w": torch.ones(C), "ln_1_b": torch.zeros(C),
            "qkv_w": normal(3 * C, C), "qkv_b": torch.zeros(3 * C),
            "attn_proj_w": normal(C, C), "attn_proj_b": torch.zeros(C),
            "ln_2_w": torch.ones(C), "ln_2_b": torch.zeros(C),
            "fc_w": normal(4 * C, C), "fc_b": torch.zeros(4 * C),
            "mlp_proj_w": normal(C, 4 * C), "mlp_proj_b": torch.zeros(C),
        })
    return {"wte": normal(VOCAB_SIZE, C), "wpe": normal(N_POSITIONS, C), "layers": layers,
            "ln_f_w": torch.ones(C), "ln_f_b": torch.zeros(C)}


class KvCache:
    """Preallocated keys and values, (L, H, N_POSITIONS, D) each; `length` tokens are filled."""

    def __init__(self, torch):
        D = N_EMBD // N_HEAD
        self.keys = torch.zeros(N_LAYER, N_HEAD, N_POSITIONS, D)
        self.values = torch.zeros(N_LAYER, N_HEAD, N_POSITIONS, D)
        self.length = 0


def forward(torch, model, ids, cache, all_logits=False):
    """Runs ids (T,) at positions cache.length.. and appends their keys/values to the cache.

    Returns logits (V,) for the last position, or (T, V) with all_logits."""
    F = torch.nn.functional
    T, C, H = ids.shape[0], N_EMBD, N_HEAD
    D = C // H
    start = cache.length
    x = model["wte"][ids] + model["wpe"][start : start + T]  # (T, C)
    if T > 1:  # query t sees keys 0..start+t
        future = torch.ones(T, start + T, dtype=torch.bool).triu(diagonal=start + 1)
    for layer_index, layer in enumerate(model["layers"]):
        h = F.layer_norm(x, (C,), layer["ln_1_w"], layer["ln_1_b"], 1e-5)
        qkv = F.linear(h, layer["qkv_w"], layer["qkv_b"])  # (T, 3C)
        q, k, v = qkv.view(T, 3, H, D).permute(1, 2, 0, 3)  # each (H, T, D)
        cache.keys[layer_index, :, start : start + T] = k
        cache.values[layer_index, :, start : start + T] = v
        keys = cache.keys[layer_index, :, : start + T]  # (H, start+T, D)
        values = cache.values[layer_index, :, : start + T]
        scores = torch.matmul(q, keys.transpose(1, 2)) * (1.0 / math.sqrt(D))  # (H, T, start+T)
        if T > 1:
            scores = scores.masked_fill(future, float("-inf"))
        context = torch.matmul(torch.softmax(scores, dim=-1), values)  # (H, T, D)
        context = context.transpose(0, 1).reshape(T, C)
        x = x + F.linear(context, layer["attn_proj_w"], layer["attn_proj_b"])
        h = F.layer_norm(x, (C,), layer["ln_2_w"], layer["ln_2_b"], 1e-5)
        h = F.gelu(F.linear(h, layer["fc_w"], layer["fc_b"]), approximate="tanh")
        x = x + F.linear(h, layer["mlp_proj_w"], layer["mlp_proj_b"])
    cache.length = start + T
    final = x if all_logits else x[-1]
    final = F.layer_norm(final, (C,), model["ln_f_w"], model["ln_f_b"], 1e-5)
    return F.linear(final, model["wte"])


def count_work():
    """FLOPs of the timed work and the weight bytes one decode step must read (float32)."""
    C, F_ = N_EMBD, 4 * N_EMBD
    block_matmul_params = C * 3 * C + C * C + C * F_ + F_ * C  # per layer
    matmul_params = N_LAYER * block_matmul_params
    lm_head_params = VOCAB_SIZE * C
    T = PROMPT_TOKENS
    attention_flops = N_LAYER * 2 * 2 * T * T * C / 2  # QK^T and PV, causal half
    prefill_flops = 2 * T * matmul_params + attention_flops + 2 * lm_head_params
    decode_bytes = 4 * (matmul_params + lm_head_params)
    return prefill_flops, decode_bytes


def run_worker(blas_threads, intra_op_threads):
    """Times one configuration in this process and prints one JSON line."""
    import torch

    torch.set_num_threads(intra_op_threads)
    model = build_model(torch)
    prompt = torch.randint(0, VOCAB_SIZE, (PROMPT_TOKENS,), generator=torch.Generator().manual_seed(1))

    def time_prefill():
        cache = KvCache(torch)
        begin = time.perf_counter()
        logits = forward(torch, model, prompt, cache)
        elapsed = time.perf_counter() - begin
        return elapsed, logits, cache

    def time_decode():
        _, logits, cache = time_prefill()
        token = int(logits.argmax())
        fed_tokens = []
        begin = time.perf_counter()
        for _ in range(DECODE_STEPS):
            fed_tokens.append(token)
            logits = forward(torch, model, torch.tensor([token]), cache)
            token = int(logits.argmax())  # greedy
        return time.perf_counter() - begin, fed_tokens, logits

    with torch.inference_mode():
        time_prefill()  # warm-up
        prefill_s = [time_prefill()[0] for _ in range(REPETITIONS)]
        time_decode()  # warm-up
        decode_runs = [time_decode() for _ in range(REPETITIONS)]
        # The cached decode must match a cache-free forward over the whole sequence.
        _, fed_tokens, last_logits = decode_runs[-1]
        full_ids = torch.cat([prompt, torch.tensor(fed_tokens)])
        reference = forward(torch, model, full_ids, KvCache(torch))
        cache_error = float((last_logits - reference).abs().max() / reference.abs().max())

    prefill_flops, decode_bytes = count_work()
    prefill_ms = 1e3 * statistics.median(prefill_s)
    decode_ms_per_token = 1e3 * statistics.median(run[0] for run in decode_runs) / DECODE_STEPS
    print(json.dumps({
        "config": {"OPENBLAS_NUM_THREADS": blas_threads, "torch_threads": intra_op_threads,
                   "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
                   "MKL_NUM_THREADS": os.environ.get("MKL_NUM_THREADS")},
        "prefill_tokens": PROMPT_TOKENS, "prefill_logits": "last position only",
        "prefill_ms": round(prefill_ms, 2),
        "prefill_ms_runs": [round(1e3 * s, 2) for s in prefill_s],
        "prefill_gflop_per_s": round(prefill_flops / (prefill_ms * 1e-3) / 1e9, 1),
        "decode_steps": DECODE_STEPS, "decode_context": f"{PROMPT_TOKENS}..{PROMPT_TOKENS + DECODE_STEPS}",
        "decode_ms_per_token": round(decode_ms_per_token, 3),
        "decode_ms_per_token_runs": [round(1e3 * run[0] / DECODE_STEPS, 3) for run in decode_runs],
        "decode_weight_gb_per_s": round(decode_bytes / (decode_ms_per_token * 1e-3) / 1e9, 2),
        "kv_cache_vs_full_forward_rel_error": cache_error,
    }), flush=True)


def blas_description(torch):
    """The BLAS torch was built against (torch.__config__.show()) and the one the system provides."""
    found = re.search(r"BLAS_INFO=[^,\s]*", torch.__config__.show())
    blas_info = found.group(0) if found else "BLAS_INFO not reported"
    alternative = "/etc/alternatives/libblas.so.3-x86_64-linux-gnu"
    system_blas = os.path.realpath(alternative) if os.path.exists(alternative) else "no libblas.so.3 alternative"
    try:
        package = subprocess.run(["dpkg-query", "-W", "-f=${Status} ${Version}", "libopenblas0-pthread"],
                                 capture_output=True, text=True).stdout.strip() or "not installed"
    except OSError:
        package = "dpkg-query unavailable"
    return f"{blas_info}; libblas.so.3 -> {system_blas}; libopenblas0-pthread: {package}"


def run_all():
    try:
        import torch
    except ImportError:
        sys.exit("torch not importable; run with Debian's /usr/bin/python3")
    results = []
    for blas_threads, intra_op_threads in THREAD_CONFIGS:
        flags = ["--blas-threads", str(blas_threads), "--torch-threads", str(intra_op_threads)]
        results.append(run_setting(__file__, flags, blas_threads, intra_op_threads, f"{blas_threads}/{intra_op_threads}"))
        print(json.dumps(results[-1]), flush=True)

    def label(result):
        config = result["config"]
        return f"OPENBLAS_NUM_THREADS={config['OPENBLAS_NUM_THREADS']} torch_threads={config['torch_threads']}"

    best_prefill = min(results, key=lambda r: r["prefill_ms"])
    best_decode = min(results, key=lambda r: r["decode_ms_per_token"])
    print(json.dumps({
        "best_prefill_ms": best_prefill["prefill_ms"], "best_prefill_config": label(best_prefill),
        "best_decode_ms_per_token": best_decode["decode_ms_per_token"], "best_decode_config": label(best_decode),
        "prefill": f"{PROMPT_TOKENS} tokens, logits for the last position only",
        "decode": f"{DECODE_STEPS} greedy steps with a KV cache after a {PROMPT_TOKENS}-token prefill",
        "torch_version": torch.__version__, "blas": blas_description(torch),
    }), flush=True)


def main():
    parser = argparse.ArgumentParser(description="PyTorch GPT-2 124M CPU prefill/decode peer benchmark.")
    parser.add_argument("--worker", action="store_true", help="time one configuration (internal)")
    parser.add_argument("--blas-threads", type=int, default=1)
    parser.add_argument("--torch-threads", type=int, default=1)
    args = parser.parse_args()
    if args.worker:
        run_worker(args.blas_threads, args.torch_threads)
    else:
        run_all()


if __name__ == "__main__":
    main()
