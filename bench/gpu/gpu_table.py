# The table bench/gpu/run_all.sh prints last: tscope's CUDA figures beside PyTorch's (eager and
# torch.compile) on the same GPU and weights, and the floors measured by bench_floors, with the
# targets of issue 6:
#   decode:       >= 5x PyTorch eager tokens/s, and >= 50% of the floor (weight bytes / copy bandwidth)
#   prefill 1024: <= 2x the floor (FLOPs / FP32 SGEMM rate at a large square size)
# Reads the JSON files run_all.sh leaves in its results folder (any may be missing: that row then
# says what did not run). Prints a plain table; --markdown FILE also writes it as markdown for
# bench/RESULTS.md. Exit status 0 unless the results folder is unreadable.
# Usage: python3 bench/gpu/gpu_table.py RESULTS_DIR [--markdown FILE]
import argparse
import datetime
import json
import os


def load(folder, name):
    """The last JSON object line of folder/name, or None."""
    path = os.path.join(folder, name)
    if not os.path.exists(path):
        return None
    last = None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                try:
                    last = json.loads(line)
                except json.JSONDecodeError:
                    pass
    return last


def fmt(value, unit, digits=3):
    if value is None:
        return "-"
    return f"{value:,.0f} {unit}" if abs(value) >= 10 ** digits else f"{value:.{digits}g} {unit}"


def build_rows(d):
    floors, torch_fwd = d["floors"], d["torch_forward"]
    copy_gbps = floors.get("copy_gb_per_s") if floors else None
    sgemm_tflops = floors.get("sgemm_square_tflops") if floors else None
    eager = (torch_fwd or {}).get("eager") or {}
    compiled = (torch_fwd or {}).get("compile") or {}
    rows, verdicts = [], []

    for T in (128, 1024):
        ours = d[f"forward_{T}"]
        ms = ours.get("prefill_ms") if ours else None
        floor_ms = ours["prefill_flops"] / (sgemm_tflops * 1e12) * 1e3 if ours and sgemm_tflops else None
        ratio = ms / floor_ms if ms and floor_ms else None
        if T == 1024:
            target = "<= 2x floor"
            result = "not run" if ratio is None else ("PASS" if ratio <= 2.0 else "FAIL")
            verdicts.append(("prefill-1024 within 2x of the FLOP floor", result))
        else:
            target, result = "(none)", "not run" if ms is None else "-"
        rows.append([f"prefill-{T} (ms)", fmt(ms, "ms"), fmt(eager.get("prefill_ms", {}).get(str(T)), "ms"),
                     fmt(compiled.get("prefill_ms", {}).get(str(T)), "ms"), fmt(floor_ms, "ms"),
                     "-" if ratio is None else f"{ratio:.2f}x floor", target, result])

    ours = d["forward_128"]
    ms = ours.get("decode_ms_per_token") if ours else None  # null with --decode 0
    floor_ms = ours["decode_bytes_per_token"] / (copy_gbps * 1e9) * 1e3 if ours and copy_gbps else None
    eager_ms = eager.get("decode_ms_per_token")
    speedup = eager_ms / ms if ms and eager_ms else None
    fraction = floor_ms / ms if ms and floor_ms else None
    ok_speed = None if speedup is None else speedup >= 5.0
    ok_floor = None if fraction is None else fraction >= 0.5
    result = "not run" if ok_speed is None or ok_floor is None else ("PASS" if ok_speed and ok_floor else "FAIL")
    verdicts.append(("decode >= 5x PyTorch eager and >= 50% of the bandwidth floor", result))
    tok = lambda v: None if not v else 1e3 / v  # noqa: E731
    rows.append(["decode (tok/s)", fmt(tok(ms), "tok/s", 4), fmt(tok(eager_ms), "tok/s", 4),
                 fmt(tok(compiled.get("decode_ms_per_token")), "tok/s", 4), fmt(tok(floor_ms), "tok/s", 4),
                 ("-" if speedup is None else f"{speedup:.1f}x eager") + ", " +
                 ("-" if fraction is None else f"{100 * fraction:.0f}% of floor"),
                 ">= 5x eager, >= 50% floor", result])

    ours, peer = d["train_tscope"], d["train_torch"]
    tps = ours.get("median_tokens_per_s") if ours and "error" not in ours else None
    peer_eager = ((peer or {}).get("best_eager") or {}).get("median_tokens_per_s")
    peer_compiled = ((peer or {}).get("best_compiled") or {}).get("median_tokens_per_s")
    floor_tps = sgemm_tflops * 1e12 / ours["flops_per_token"] if ours and tps and sgemm_tflops else None
    result = "not run" if not tps or not peer_eager else ("PASS" if tps >= peer_eager else "FAIL")
    verdicts.append(("training at least PyTorch eager's tokens/s", result))
    rows.append(["training (tok/s)", fmt(tps, "tok/s", 4), fmt(peer_eager, "tok/s", 4), fmt(peer_compiled, "tok/s", 4),
                 fmt(floor_tps, "tok/s", 4),
                 ("-" if not tps or not peer_eager else f"{tps / peer_eager:.2f}x eager") +
                 ("" if not tps or not floor_tps else f", {100 * tps / floor_tps:.0f}% of floor"),
                 ">= torch eager", result])

    # The app's prompt-edit latency (bench_edit --backend cuda): the last word of a 1000-token prompt
    # replaced, from posting the edit to the Session until its snapshot. No peer: the tools we compare
    # with rerun the whole prompt (the full recompute, shown beside it).
    edit = d.get("edit")
    ms = edit.get("edit_last_word_ms") if edit else None
    full = edit.get("full_recompute_ms") if edit else None
    result = "not run" if ms is None else ("PASS" if ms < 10.0 else "FAIL")
    verdicts.append(("an edit of the last word of a 1000-token prompt under 10 ms", result))
    rows.append(["prompt edit, 1000 tokens (ms)", fmt(ms, "ms"), "-", "-", "-",
                 "-" if ms is None or not full else f"full recompute {full:.1f} ms", "< 10 ms", result])
    return rows, verdicts


HEADER = ["workload", "tscope", "torch eager", "torch.compile", "floor", "tscope vs floor / peer", "target", "result"]


def notes(d):
    out = []
    floors, peer = d["floors"], d["torch_forward"]
    device = (floors or {}).get("device") or (peer or {}).get("device_name") or "unknown device"
    out.append(f"Device: {device}; date {datetime.date.today()}; torch {(peer or {}).get('torch_version', '?')}; "
               f"CUDA tests: {d['tests']}")
    if floors:
        out.append(f"Floors (bench_floors): copy {floors['copy_gb_per_s']:.0f} GB/s (bytes read + written), "
                   f"FP32 SGEMM {floors['sgemm_square_tflops']:.1f} TFLOP/s at {floors['sgemm_square_n']}^3 (no TF32)")
    else:
        out.append("Floors: bench_floors did not run")
    check = (peer or {}).get("check")
    if check:
        out.append(f"Same weights: torch vs tscope ({check['tscope_backend']}) last-position logits max |diff| "
                   f"{check['max_abs_logit_diff']:.3g} (max |logit| {check['max_abs_logit']:.3g}); greedy ids "
                   f"{'match' if check['greedy_ids_match'] else 'DIFFER'}")
    if peer and "error" in (peer.get("compile") or {}):
        out.append(f"torch.compile: {peer['compile']['error']} {peer.get('compile_errors', '')}")
    elif peer and peer.get("compile"):
        out.append(f"torch.compile mode: {peer['compile'].get('mode')}")
    for name in ("forward_128", "forward_1024", "train_tscope", "edit"):
        if d[name] is None:
            out.append(f"{name}: did not run or failed (see its log in the results folder)")
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("results")
    parser.add_argument("--markdown", help="also write the table as markdown here")
    args = parser.parse_args()
    names = ["floors", "forward_128", "forward_1024", "torch_forward", "train_tscope", "train_torch", "edit"]
    d = {name: load(args.results, name + ".json") for name in names}
    tests_file = os.path.join(args.results, "tests_status.txt")
    d["tests"] = open(tests_file).read().strip() if os.path.exists(tests_file) else "not run"
    rows, verdicts = build_rows(d)
    widths = [max(len(str(r[i])) for r in rows + [HEADER]) for i in range(len(HEADER))]
    for line in notes(d):
        print(line)
    print("  ".join(h.ljust(w) for h, w in zip(HEADER, widths)))
    for r in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))
    for what, result in verdicts:
        print(f"target: {what}: {result}")
    if args.markdown:
        with open(args.markdown, "w") as f:
            for line in notes(d):
                f.write(line + "\n\n")
            f.write("| " + " | ".join(HEADER) + " |\n| " + " | ".join("---" for _ in HEADER) + " |\n")
            for r in rows:
                f.write("| " + " | ".join(str(c) for c in r) + " |\n")


if __name__ == "__main__":
    main()
