#!/usr/bin/python3
# HuggingFace Qwen2.5-0.5B shape on the CPU (issue #17): writes the random BF16 checkpoint when missing
# (make_hf_qwen_checkpoint.py), runs bench_forward --model at 1 and 2 threads and the PyTorch peer
# (bf16/f32 x 1/2 threads) on the same file, and prints the markdown table for bench/RESULTS.md.
# Usage: /usr/bin/python3 bench/run_hf_bench.py [--build build] [--model DIR] [--repeats 3] [--prefill 128] [--decode 128]
#        [--baseline-build DIR (an earlier commit's build: its rows too)]
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_hf_qwen_checkpoint import DEFAULT_OUT, ensure_checkpoint  # noqa: E402
from run_cpu_bench import cpu_name  # noqa: E402

# The targets.
PREFILL_SPEEDUP, DECODE_SPEEDUP, READ_FLOOR_FRACTION, MEMORY_OVER_FILE = 1.3, 2.0, 0.70, 1.3



def met(ok):
    return "**met**" if ok else "**not met**"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    parser.add_argument("--model", default=DEFAULT_OUT, help="checkpoint directory (written when missing)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--prefill", type=int, default=128)
    parser.add_argument("--decode", type=int, default=128)
    parser.add_argument("--baseline-build", help="another build folder (an earlier commit): its bench_forward runs too, in the same run, as rows "
                        "'tscope baseline'")
    args = parser.parse_args()
    model = ensure_checkpoint(args.model)
    reference = os.path.join(tempfile.mkdtemp(prefix="tscope-hf-bench-"), "tscope_reference.json")
    def run_ours(build, threads, reference=None):
        command = [os.path.join(build, "bench", "bench_forward"), "--model", model, "--threads", str(threads), "--repeats", str(args.repeats),
                   "--prefill", str(args.prefill), "--decode", str(args.decode)]
        if reference:
            command += ["--reference", reference]
        out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        return json.loads(out.strip().splitlines()[-1])

    ours, baseline = [], []
    for threads in (1, 2):
        ours.append(run_ours(args.build, threads, reference if threads == 1 else None))
        print("tscope", json.dumps(ours[-1]), flush=True)
        if args.baseline_build:
            baseline.append(run_ours(args.baseline_build, threads))
            print("tscope baseline", json.dumps(baseline[-1]), flush=True)
    peer_out = subprocess.run([sys.executable, os.path.join(HERE, "peers", "torch_hf_bench.py"), "--model", model, "--check", reference,
                               "--repeats", str(args.repeats), "--prefill", str(args.prefill), "--decode", str(args.decode)], check=True, capture_output=True, text=True).stdout
    peer_lines = [json.loads(line) for line in peer_out.strip().splitlines() if line.startswith("{")]
    for line in peer_lines:
        print("torch ", json.dumps(line), flush=True)
    settings, peer = peer_lines[:-1], peer_lines[-1]

    prefill = min(ours, key=lambda r: r["prefill_ms"])
    decode = min(ours, key=lambda r: r["decode_ms_per_token"])
    file_mb = decode["file_bytes"] / 1e6
    read_floor, read_gbps = decode["decode_read_floor_ms"], decode["read_gb_per_s"]
    bf16_floor = decode["file_bytes"] / (read_gbps * 1e9) * 1e3  # the same read at the file's 2 bytes a weight
    our_peak = max(r["peak_rss_after_run_mb"] for r in ours)
    peer_best_decode = min(settings, key=lambda r: r["decode_ms_per_token"])
    p_prefill, p_decode = peer["best_prefill_ms"], peer["best_decode_ms_per_token"]
    thr = lambda r: f"{r['threads']} thread{'s' if r['threads'] > 1 else ''}"  # noqa: E731

    print()
    print(f"Machine: {cpu_name()}, {os.cpu_count()} vCPUs; {datetime.date.today()}; {peer['torch']}")
    print(f"Qwen2.5-0.5B shape (L={decode['n_layer']}, C={decode['n_embd']}, V={decode['vocab_size']}, {decode['parameters'] / 1e6:.1f}M parameters "
          f"as tscope holds them), random weights stored BF16 ({file_mb:.1f} MB); prefill {prefill['prefill_tokens']} tokens (last-position "
          f"logits), decode {decode['decode_steps']} greedy tokens through the KV cache; medians of {args.repeats}.")
    print()
    held = "16-bit weights kept" if decode.get("weights_held") == "halves" else "float32 weights"
    print(f"| workload | tscope (Eigen CPU, {held}) | PyTorch, best setting | PyTorch / tscope | target |")
    print("| --- | --- | --- | --- | --- |")
    print(f"| prefill {prefill['prefill_tokens']} tokens | {prefill['prefill_ms']:.1f} ms ({thr(prefill)}, {prefill['prefill_gflops_per_s']:.0f} GFLOP/s) | "
          f"{p_prefill:.1f} ms ({peer['best_prefill_config']}) | {p_prefill / prefill['prefill_ms']:.2f}x | "
          f">= {PREFILL_SPEEDUP}x: {met(p_prefill / prefill['prefill_ms'] >= PREFILL_SPEEDUP)} |")
    print(f"| decode, per token | {decode['decode_ms_per_token']:.1f} ms ({thr(decode)}, {decode['decode_bytes_per_token'] / 1e9:.3f} GB of "
          f"weights read) | {p_decode:.1f} ms ({peer['best_decode_config']}) | {p_decode / decode['decode_ms_per_token']:.2f}x | "
          f">= {DECODE_SPEEDUP}x: {met(p_decode / decode['decode_ms_per_token'] >= DECODE_SPEEDUP)} |")
    fraction = read_floor / decode["decode_ms_per_token"]
    print(f"| decode vs read floor | {read_floor:.1f} ms floor ({decode['decode_bytes_per_token'] / 1e9:.3f} GB / {read_gbps:.1f} GB/s read on "
          f"{thr(decode)}): {100 * fraction:.0f}% | (BF16 bytes at the same rate: {bf16_floor:.1f} ms) | | >= {100 * READ_FLOOR_FRACTION:.0f}%: "
          f"{met(fraction >= READ_FLOOR_FRACTION)} |")
    print(f"| peak resident memory (VmHWM) | {our_peak:.0f} MB = {our_peak / file_mb:.2f}x the file | {peer_best_decode['peak_rss_after_run_mb']:.0f} MB "
          f"= {peer_best_decode['peak_rss_after_run_mb'] / file_mb:.2f}x ({peer['best_decode_config']}) | | <= {MEMORY_OVER_FILE}x the file: "
          f"{met(our_peak / file_mb <= MEMORY_OVER_FILE)} |")
    print()
    print("| setting | prefill ms | decode ms/token | weight GB/s in decode | peak RSS MB (after load / after run) | logits vs tscope (16-token prompt) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, rows in (("tscope", ours), (f"tscope baseline ({args.baseline_build})", baseline)):
        for r in rows:
            print(f"| {name}, {thr(r)} | {r['prefill_ms']:.1f} | {r['decode_ms_per_token']:.1f} | "
                  f"{r['decode_bytes_per_token'] / r['decode_ms_per_token'] / 1e6:.1f} | {r['peak_rss_after_load_mb']:.0f} / {r['peak_rss_after_run_mb']:.0f} | |")
    for r in settings:
        c = r["check"]
        print(f"| PyTorch {r['dtype']}, {r['torch_threads']} thread{'s' if r['torch_threads'] > 1 else ''} | {r['prefill_ms']:.1f} | "
              f"{r['decode_ms_per_token']:.1f} | {r['decode_weight_gb_per_s']:.1f} | {r['peak_rss_after_load_mb']:.0f} / {r['peak_rss_after_run_mb']:.0f} | "
              f"top-1 {'same' if c['top1_same'] else 'DIFFERENT'} ({c['top1_torch']}), max abs diff {c['max_abs_diff']:.2e} "
              f"(logits up to {c['max_abs_logit']:.2f}) |")


if __name__ == "__main__":
    main()
