#!/usr/bin/python3
# Two Qwen2.5-0.5B-shaped checkpoints side by side (issue #35: the Compare panel's two models): memory
# and time of `tscope-cli compare-forward` on two random BF16 checkpoints of that shape (seeds 0 and 1,
# written by make_hf_qwen_checkpoint.py when missing) over the same 128 prompt ids, beside one model
# alone (`tscope-cli forward`), the PyTorch peer holding both in one process
# (peers/torch_compare_peer.py, bfloat16), and the floor: both files' bytes resident once.
# Peak resident memory from /usr/bin/time (max RSS of the process). Prints a markdown table.
# Usage: /usr/bin/python3 bench/run_compare_bench.py [--build build] [--threads 2] [--tokens 128]
import argparse
import datetime
import json
import os
import random
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_hf_qwen_checkpoint import CONFIG, DEFAULT_OUT, random_weights  # noqa: E402
from run_cpu_bench import cpu_name  # noqa: E402

sys.path.insert(0, os.path.join(HERE, "..", "tests", "golden"))
from hf_reference import write_checkpoint  # noqa: E402


def ensure(out, seed):
    if os.path.isdir(out):
        return out
    partial = out + ".partial"
    write_checkpoint(partial, CONFIG, random_weights(CONFIG, seed=seed), "BF16", 1)
    os.rename(partial, out)
    return out


def timed(command, env=None):
    """(stdout JSON, max RSS MB, wall s) of a command under /usr/bin/time."""
    run = subprocess.run(["/usr/bin/time", "-f", "%M %e"] + command, capture_output=True, text=True, env=env)
    if run.returncode != 0:
        raise SystemExit(f"{' '.join(command[:3])} failed: {run.stderr.strip()[-400:]}")
    rss_kb, wall = run.stderr.strip().splitlines()[-1].split()
    return json.loads(run.stdout), int(rss_kb) / 1e3, float(wall)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=128)
    args = parser.parse_args()
    left = ensure(DEFAULT_OUT, 0)
    right = ensure(DEFAULT_OUT + "-seed1", 1)
    file_mb = sum(os.path.getsize(os.path.join(d, "model.safetensors")) for d in (left, right)) / 1e6
    random.seed(1)
    ids = ",".join(str(random.randrange(CONFIG["vocab_size"])) for _ in range(args.tokens))
    cli = os.path.join(args.build, "tscope-cli")
    env = dict(os.environ, TSCOPE_THREADS=str(args.threads))
    both, both_rss, both_wall = timed([cli, "compare-forward", "--backend", "cpu", "--threads", str(args.threads), "--left", left, "--right", right,
                                       "--ids", ids], env)
    one, one_rss, one_wall = timed([cli, "forward", "--backend", "cpu", "--threads", str(args.threads), "--model", left, "--ids", ids], env)
    peer_env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), OPENBLAS_NUM_THREADS=str(args.threads))
    peer, peer_rss, peer_wall = timed(["/usr/bin/python3", os.path.join(HERE, "peers", "torch_compare_peer.py"), "--left", left, "--right", right,
                                       "--ids", ids, "--threads", str(args.threads)], peer_env)
    print(f"## Two Qwen2.5-0.5B-shaped checkpoints side by side (issue #35) — {datetime.date.today()}\n")
    print(f"Machine: {cpu_name()}, {os.cpu_count()} CPUs; {args.threads} threads; {args.tokens} prompt ids; two random BF16 checkpoints "
          f"({file_mb:.0f} MB of safetensors together).\n")
    print("| | tscope compare-forward (both) | tscope forward (one) | PyTorch bfloat16 (both, one process) | floor |")
    print("| --- | --- | --- | --- | --- |")
    print(f"| peak resident memory | {both_rss:.0f} MB ({both_rss / file_mb:.2f}x the files) | {one_rss:.0f} MB | "
          f"{peer_rss:.0f} MB ({peer_rss / file_mb:.2f}x) | {file_mb:.0f} MB (both files resident once) |")
    print(f"| forward, left / right | {both['left']['forward_ms']:.0f} / {both['right']['forward_ms']:.0f} ms (every layer's maps and the "
          f"lens captured) | {one['forward_ms']:.0f} ms | {peer['forward_ms'][0]:.0f} / {peer['forward_ms'][1]:.0f} ms | |")
    print(f"| whole process (load, both forwards, JSON) | {both_wall:.1f} s | {one_wall:.1f} s | {peer_wall:.1f} s "
          f"(load {peer['load_s']:.1f} s) | |")
    print(f"| KL(left \\|\\| right) of the next token | {both['kl']:.4f} nats | | {peer['kl']:.4f} nats (bfloat16 activations) | |")
    print(f"| weights held (tscope's count) | {(both['left']['weight_bytes'] + both['right']['weight_bytes']) / 1e6:.0f} MB | "
          f"{both['left']['weight_bytes'] / 1e6:.0f} MB | | |")


if __name__ == "__main__":
    main()
