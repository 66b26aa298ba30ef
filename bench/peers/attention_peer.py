# PyTorch peer for bench_attention: exact softmax attention of one head, (n, d) float32 q, k, v,
# on the CPU with one thread. Uses torch.nn.functional.scaled_dot_product_attention when this
# torch has it (2.0+); Debian 12's torch 1.13 does not, so then the same math written out:
# softmax(q k^T / sqrt(d) + causal mask) v (the n x n matrix is materialised, as SDPA's CPU math
# path does). Prints one JSON object on stdout: {torch, kernel, threads, records: [{n, ms}]}.
# Run with Debian's python: /usr/bin/python3 bench/peers/attention_peer.py --n 256,1024 --d 64
import argparse
import json
import os
import statistics
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before torch loads its BLAS
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def attention_function(causal):
    if hasattr(F, "scaled_dot_product_attention"):
        return "scaled_dot_product_attention", lambda q, k, v, mask: F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    def written_out(q, k, v, mask):
        scores = (q @ k.transpose(-2, -1)) * (q.shape[-1] ** -0.5)
        if mask is not None:
            scores = scores.masked_fill(mask, float("-inf"))
        return torch.softmax(scores, dim=-1) @ v

    return "softmax(q k^T / sqrt(d) + mask) v (no scaled_dot_product_attention in this torch)", written_out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", required=True, help="comma-separated sequence lengths")
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-causal", action="store_true")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    causal = not args.no_causal
    kernel, attend = attention_function(causal)
    records = []
    for n in [int(x) for x in args.n.split(",")]:
        q, k, v = (torch.randn(n, args.d, dtype=torch.float32) for _ in range(3))
        # The mask is built once, outside the timing (SDPA builds its own inside).
        mask = torch.ones(n, n, dtype=torch.bool).triu(1) if causal else None
        with torch.no_grad():
            attend(q, k, v, mask)  # warm-up
            times = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                attend(q, k, v, mask)
                times.append((time.perf_counter() - t0) * 1e3)
        records.append({"n": n, "ms": statistics.median(times)})
        del q, k, v, mask
    print(json.dumps({"torch": torch.__version__, "kernel": kernel, "threads": torch.get_num_threads(), "d": args.d,
                      "causal": causal, "records": records}))


if __name__ == "__main__":
    main()
