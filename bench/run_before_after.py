#!/usr/bin/python3
# Before/after regression check for a change to the engine: runs bench_forward (CPU prefill and
# decode, GPT-2 124M shape) and bench_train (one optimizer step of brown-small's shape) from two
# build trees, alternating old and new round by round so both see the same machine state, and
# prints each figure's median over the rounds beside the decode floor bench_forward measures in the
# same run (and, with --peer, PyTorch's figures from bench/peers/ run once in the same session).
# Usage: /usr/bin/python3 bench/run_before_after.py --old OLD_BUILD --new NEW_BUILD [--rounds 3]
#        [--threads 2] [--peer]
# OLD_BUILD is a build tree of the commit before the change (git worktree add --detach DIR COMMIT;
# cmake -DTSCOPE_GUI=OFF -DTSCOPE_TESTS=OFF; ninja bench_forward bench_train).
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run_cpu_bench import cpu_name  # noqa: E402


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def load_average():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--old", required=True, help="build tree before the change")
    parser.add_argument("--new", required=True, help="build tree after the change")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--train-steps", type=int, default=10)
    parser.add_argument("--peer", action="store_true", help="also run the PyTorch peers once")
    args = parser.parse_args()

    figures = {"old": {}, "new": {}}  # side -> name -> [values]
    floors = []
    loads = [load_average()]

    def add(side, name, value):
        figures[side].setdefault(name, []).append(value)

    for round_index in range(args.rounds):
        order = ("old", "new") if round_index % 2 == 0 else ("new", "old")
        for side in order:
            build = getattr(args, side)
            forward = run_json([os.path.join(build, "bench", "bench_forward"), "--threads", str(args.threads), "--repeats", "1"])
            add(side, "prefill tokens/s (128 tokens)", forward["prefill_tokens_per_s"])
            add(side, "decode ms/token (128 tokens)", forward["decode_ms_per_token"])
            floors.append((forward["decode_floor_ms"], forward["decode_read_floor_ms"]))
            train = run_json([os.path.join(build, "bench", "bench_train"), "--threads", str(args.threads), "--steps",
                              str(args.train_steps), "--warmup", "2"])
            add(side, "training tokens/s (median step)", train["median_tokens_per_s"])
            print(side, json.dumps({"forward": forward, "train": train}), flush=True)
        loads.append(load_average())

    peer = {}
    if args.peer:
        peer_forward = subprocess.run([sys.executable, os.path.join(HERE, "peers", "torch_gpt2_bench.py")], check=True,
                                      capture_output=True, text=True).stdout
        lines = [json.loads(line) for line in peer_forward.strip().splitlines() if line.startswith("{")]
        peer["forward"] = lines[-1]
        peer_train = subprocess.run([sys.executable, os.path.join(HERE, "peers", "torch_train_bench.py"), "--steps",
                                     str(args.train_steps)], check=True, capture_output=True, text=True).stdout
        lines = [json.loads(line) for line in peer_train.strip().splitlines() if line.startswith("{")]
        peer["train"] = lines[-1]
        print("peer", json.dumps(peer), flush=True)

    print()
    print(f"Machine: {cpu_name()}, {os.cpu_count()} cores; {datetime.date.today()}; {args.threads} threads; "
          f"{args.rounds} rounds alternating old/new; load average at each round: {' '.join(loads)}")
    print(f"old: {os.path.abspath(args.old)}  new: {os.path.abspath(args.new)}")
    print()
    print("| figure | before (median, runs) | after (median, runs) | after / before |")
    print("| --- | --- | --- | --- |")
    for name in figures["old"]:
        old, new = figures["old"][name], figures["new"][name]
        mo, mn = statistics.median(old), statistics.median(new)
        runs = lambda values: " ".join(f"{v:g}" for v in values)  # noqa: E731
        print(f"| {name} | {mo:g} ({runs(old)}) | {mn:g} ({runs(new)}) | {mn / mo:.3f} |")
    print()
    print("Decode floors, medians of the runs: weight bytes per token / measured memcpy bandwidth "
          f"{statistics.median(f[0] for f in floors):.1f} ms; / measured read bandwidth {statistics.median(f[1] for f in floors):.1f} ms")
    if peer:
        best_prefill_ms = peer["forward"]["best_prefill_ms"]
        print(f"PyTorch peer (best thread setting): prefill {128 / (best_prefill_ms / 1e3):.1f} tokens/s, "
              f"decode {peer['forward']['best_decode_ms_per_token']} ms/token, "
              f"training {peer['train']['best']['median_tokens_per_s']} tokens/s")


if __name__ == "__main__":
    main()
