#!/usr/bin/python3
# Runs the CPU forward benchmark (tscope, at 1 and 2 threads) and its PyTorch peer (at its best
# of 4 thread settings) in one go and prints the comparison table for bench/RESULTS.md.
# Usage: /usr/bin/python3 bench/run_cpu_bench.py [--build build] [--repeats 3]
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def cpu_name():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    ours = []
    for threads in (1, 2):
        out = subprocess.run([os.path.join(args.build, "bench", "bench_forward"), "--threads", str(threads), "--repeats", str(args.repeats)],
                             check=True, capture_output=True, text=True).stdout
        ours.append(json.loads(out.strip().splitlines()[-1]))
        print("tscope", json.dumps(ours[-1]), flush=True)
    peer_out = subprocess.run([sys.executable, os.path.join(HERE, "peers", "torch_gpt2_bench.py")], check=True, capture_output=True,
                              text=True).stdout
    peer_lines = [json.loads(line) for line in peer_out.strip().splitlines() if line.startswith("{")]
    for line in peer_lines:
        print("torch ", json.dumps(line), flush=True)
    peer = peer_lines[-1]
    best_prefill = min(ours, key=lambda r: r["prefill_ms"])
    best_decode = min(ours, key=lambda r: r["decode_ms_per_token"])
    floor = best_decode["decode_floor_ms"]
    read_floor = best_decode["decode_read_floor_ms"]
    print()
    print(f"Machine: {cpu_name()}, {os.cpu_count()} vCPUs; {datetime.date.today()}; torch {peer.get('torch_version')} ({peer.get('blas')})")
    print("GPT-2 124M shape, random float32 weights; prefill 128 tokens (last-position logits), decode 128 tokens with a KV cache.")
    print()
    print("| workload | tscope | PyTorch (best setting) | ratio (PyTorch / tscope) | floor |")
    print("| --- | --- | --- | --- | --- |")
    p_prefill, p_decode = peer["best_prefill_ms"], peer["best_decode_ms_per_token"]
    print(f"| prefill 128 tok | {best_prefill['prefill_ms']:.1f} ms ({best_prefill['threads']} thr, "
          f"{best_prefill['prefill_gflops_per_s']:.0f} GFLOP/s) | {p_prefill:.1f} ms ({peer['best_prefill_config']}) | "
          f"{p_prefill / best_prefill['prefill_ms']:.2f}x | |")
    print(f"| decode, per token | {best_decode['decode_ms_per_token']:.2f} ms ({best_decode['threads']} thr) | {p_decode:.2f} ms "
          f"({peer['best_decode_config']}) | {p_decode / best_decode['decode_ms_per_token']:.2f}x | "
          f"{floor:.1f} ms copy floor ({best_decode['memcpy_gb_per_s']:.1f} GB/s memcpy): "
          f"{100 * floor / best_decode['decode_ms_per_token']:.0f}% of floor; {read_floor:.1f} ms read floor "
          f"({best_decode['read_gb_per_s']:.1f} GB/s): {100 * read_floor / best_decode['decode_ms_per_token']:.0f}% |")


if __name__ == "__main__":
    main()
