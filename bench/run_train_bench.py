#!/usr/bin/python3
# Runs the training benchmark (tscope at 1 and 2 threads) and its PyTorch peer (at its best
# thread/BLAS setting) one after the other on the same machine and prints the table for
# bench/RESULTS.md. Floor: the FLOPs of a step (6*N_matmul + 12*L*T*C per token) at the machine's
# measured single-precision GEMM rate is not measured here; the table reports GFLOP/s achieved.
# Usage: /usr/bin/python3 bench/run_train_bench.py [--build build] [--steps 20]
import argparse
import datetime
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run_cpu_bench import cpu_name  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    ours = []
    for threads in (1, 2):
        out = subprocess.run([os.path.join(args.build, "bench", "bench_train"), "--threads", str(threads), "--steps", str(args.steps)],
                             check=True, capture_output=True, text=True).stdout
        ours.append(json.loads(out.strip().splitlines()[-1]))
        print("tscope", json.dumps(ours[-1]), flush=True)
    peer_out = subprocess.run([sys.executable, os.path.join(HERE, "peers", "torch_train_bench.py"), "--steps", str(args.steps)],
                              check=True, capture_output=True, text=True).stdout
    peer = json.loads([line for line in peer_out.strip().splitlines() if line.startswith("{")][-1])
    print("torch ", json.dumps(peer["best"]), flush=True)
    best = min(ours, key=lambda r: r["median_s_per_step"])
    p = peer["best"]
    print()
    print(f"Machine: {cpu_name()}, {os.cpu_count()} vCPUs; {datetime.date.today()}; torch {peer.get('torch_version')} ({peer.get('blas')})")
    print("brown-small's architecture (L=4, H=6, C=192, V=8192, tied), B=16 x T=128 random tokens; one step = forward + CE + "
          "backward + clip + AdamW.")
    print()
    print("| | tscope | PyTorch (best setting) | ratio (tscope / PyTorch tokens/s) |")
    print("| --- | --- | --- | --- |")
    print(f"| median step | {best['median_s_per_step'] * 1000:.0f} ms ({best['threads']} thr) | {p['median_s_per_step'] * 1000:.0f} ms "
          f"({p['config']}) | |")
    print(f"| tokens/s (median) | {best['median_tokens_per_s']:.0f} | {p['median_tokens_per_s']:.0f} | "
          f"{best['median_tokens_per_s'] / p['median_tokens_per_s']:.2f}x |")
    print(f"| GFLOP/s (median) | {best['median_gflop_per_s']:.0f} | {p['median_gflop_per_s']:.0f} | |")
    print(f"| best step | {best['best_s_per_step'] * 1000:.0f} ms | {p['best_s_per_step'] * 1000:.0f} ms | |")


if __name__ == "__main__":
    main()
