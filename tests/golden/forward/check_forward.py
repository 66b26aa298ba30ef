# Golden forward test: runs `tscope-cli forward --dump` on every model make_reference.py wrote
# (HF prefixed F32, HF plain F32, llm.c .bin, HF BF16) and compares logits, attention and residual
# arrays with the float64 PyTorch reference by max|ours - ref| / max|ref| <= 1e-4.
import sys

sys.dont_write_bytecode = True

import argparse
import json
import os
import subprocess
import tempfile

import numpy as np

RELATIVE_TOLERANCE = 1e-4
CLI_TIMEOUT_S = 300


def run_cli(cli, model_path, ids, dump_dir):
    """Runs the CLI; returns a list of failure strings (empty when it ran cleanly)."""
    command = [cli, "forward", "--model", model_path, "--ids", ",".join(map(str, ids)), "--dump", dump_dir]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=CLI_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return [f"timed out after {CLI_TIMEOUT_S} s: {' '.join(command)}"]
    failures = []
    if result.returncode != 0:
        failures.append(f"exit code {result.returncode} from {' '.join(command)}; stderr: {result.stderr.strip()}")
        return failures
    try:
        json.loads(result.stdout)
    except json.JSONDecodeError as error:
        failures.append(f"stdout is not valid JSON ({error}): {result.stdout[:200]!r}")
    return failures


def compare_array(label, ours_path, reference_path, tolerance):
    """Returns (line to print, passed)."""
    if not os.path.isfile(ours_path):
        return f"{label}: FAIL missing {ours_path}", False
    try:
        ours = np.load(ours_path, allow_pickle=False)
    except Exception as error:  # a malformed .npy is a failure, not a crash of the test
        return f"{label}: FAIL cannot read {ours_path}: {error}", False
    reference = np.load(reference_path).astype(np.float64)
    if ours.dtype != np.float32:
        return f"{label}: FAIL dtype {ours.dtype}, expected float32", False
    if ours.shape != reference.shape:
        return f"{label}: FAIL shape {ours.shape}, expected {reference.shape}", False
    ours = ours.astype(np.float64)
    if not np.isfinite(ours).all():
        return f"{label}: FAIL non-finite values", False
    max_abs_diff = float(np.abs(ours - reference).max())
    relative_error = max_abs_diff / float(np.abs(reference).max())
    passed = relative_error <= tolerance
    verdict = "ok" if passed else "FAIL"
    return (f"{label}: max abs diff {max_abs_diff:.3e}, relative error {relative_error:.3e} "
            f"(tolerance {tolerance:.0e}) {verdict}"), passed


def main():
    parser = argparse.ArgumentParser(description="Compares tscope-cli's forward with the PyTorch reference.")
    parser.add_argument("--cli", required=True, help="path to tscope-cli")
    parser.add_argument("--ref", required=True, help="folder written by make_reference.py")
    parser.add_argument("--tolerance", type=float, default=RELATIVE_TOLERANCE,
                        help="largest allowed max|ours - ref| / max|ref| per array")
    args = parser.parse_args()

    with open(os.path.join(args.ref, "manifest.json")) as f:
        manifest = json.load(f)
    ids = manifest["ids"]
    n_layer = manifest["config"]["n_layer"]
    array_names = ["logits.npy"] + [f"{kind}_{layer}.npy" for layer in range(n_layer) for kind in ("attn", "resid")]

    failures = 0
    with tempfile.TemporaryDirectory(prefix="tscope_golden_forward_") as scratch:
        for entry in manifest["models"]:
            dump_dir = os.path.join(scratch, entry["name"])
            os.makedirs(dump_dir)
            problems = run_cli(args.cli, os.path.join(args.ref, entry["model"]), ids, dump_dir)
            for problem in problems:
                print(f"{entry['name']}: FAIL {problem}")
            failures += len(problems)
            if problems and not os.listdir(dump_dir):
                continue
            for array_name in array_names:
                line, passed = compare_array(f"{entry['name']} {array_name}", os.path.join(dump_dir, array_name),
                                             os.path.join(args.ref, entry["expected"], array_name), args.tolerance)
                print(line)
                failures += 0 if passed else 1
    if failures:
        print(f"golden forward: {failures} failure(s)")
        return 1
    print(f"golden forward: all {len(manifest['models']) * len(array_names)} arrays within {args.tolerance:.0e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
