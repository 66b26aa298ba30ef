# Golden encoder-decoder test: runs `tscope-cli forward --source-ids ... --ids ... --dump` on every
# variant make_reference.py wrote and compares logits.npy, enc_attn_<l>.npy, attn_<l>.npy and
# cross_<l>.npy with the float64 reference by max|ours - ref| / max|ref| <= 1e-4; then checks that
# two bad inputs (a source id past the vocabulary, n_encoder_layer = -1) fail with one stderr line
# that names the problem (so a CLI rejecting --source-ids itself does not pass them).
import sys

sys.dont_write_bytecode = True

import argparse
import json
import os
import shutil
import subprocess
import tempfile

import numpy as np

# The forward golden test's comparison and clean-failure check, shared.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "forward"))
from check_bad_inputs import check_case  # noqa: E402
from check_forward import compare_array  # noqa: E402

RELATIVE_TOLERANCE = 1e-4
CLI_TIMEOUT_S = 300


def id_list(ids):
    return ",".join(str(i) for i in ids)


def run_forward(cli, model_dir, ids, dump_dir):
    """Runs the CLI's encoder-decoder forward; returns a list of failure strings (empty: it ran)."""
    command = [cli, "forward", "--model", model_dir, "--source-ids", id_list(ids["source"]),
               "--ids", id_list(ids["target"]), "--dump", dump_dir]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=CLI_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return [f"timed out after {CLI_TIMEOUT_S} s: {' '.join(command)}"]
    except OSError as error:
        return [f"cannot run {cli}: {error}"]
    if result.returncode != 0:
        return [f"exit code {result.returncode} from {' '.join(command)}; stderr: {result.stderr.strip()[:500]}"]
    return []


def array_names(config):
    names = ["logits.npy"]
    names += [f"enc_attn_{l}.npy" for l in range(config["n_encoder_layer"])]
    names += [f"{kind}_{l}.npy" for l in range(config["n_layer"]) for kind in ("attn", "cross")]
    return names


def check_variant(cli, ref, name, scratch, tolerance):
    """Runs one variant and compares its dump; returns (failures, comparisons)."""
    variant_dir = os.path.join(ref, name)
    with open(os.path.join(variant_dir, "model", "config.json")) as f:
        config = json.load(f)
    with open(os.path.join(variant_dir, "ids.json")) as f:
        ids = json.load(f)
    dump_dir = os.path.join(scratch, name)
    os.makedirs(dump_dir)
    problems = run_forward(cli, os.path.join(variant_dir, "model"), ids, dump_dir)
    for problem in problems:
        print(f"{name}: FAIL {problem}")
    names = array_names(config)
    if problems and not os.listdir(dump_dir):
        return len(problems), len(names)
    failures = len(problems)
    for array_name in names:
        line, passed = compare_array(f"{name} {array_name}", os.path.join(dump_dir, array_name),
                                     os.path.join(variant_dir, "expected", array_name), tolerance)
        print(line)
        failures += 0 if passed else 1
    return failures, len(names)


def bad_input_cases(ref, first, scratch):
    """-> [(description, argument list after the CLI path, text the stderr line must contain)],
    built from the first variant."""
    model_dir = os.path.join(ref, first, "model")
    with open(os.path.join(ref, first, "ids.json")) as f:
        ids = json.load(f)
    with open(os.path.join(model_dir, "config.json")) as f:
        config = json.load(f)
    vocab_size = config["vocab_size"]
    cases = [(f"a source id past the {vocab_size}-token vocabulary",
              ["forward", "--model", model_dir, "--source-ids", id_list(ids["source"][:2] + [vocab_size]),
               "--ids", id_list(ids["target"])], str(vocab_size))]
    negative = os.path.join(scratch, "negative_encoder_layers")
    shutil.copytree(model_dir, negative)
    config["n_encoder_layer"] = -1
    with open(os.path.join(negative, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    cases.append(("config.json with n_encoder_layer = -1",
                  ["forward", "--model", negative, "--source-ids", id_list(ids["source"]), "--ids", id_list(ids["target"])],
                  "n_encoder_layer"))
    return cases


def main():
    parser = argparse.ArgumentParser(description="Compares tscope-cli's encoder-decoder forward with the PyTorch reference.")
    parser.add_argument("--cli", required=True, help="path to tscope-cli")
    parser.add_argument("--ref", required=True, help="folder written by make_reference.py")
    parser.add_argument("--tolerance", type=float, default=RELATIVE_TOLERANCE,
                        help="largest allowed max|ours - ref| / max|ref| per array")
    args = parser.parse_args()

    with open(os.path.join(args.ref, "manifest.json")) as f:
        variants = json.load(f)["variants"]
    if not variants:
        print("golden encdec: FAIL the manifest lists no variants")
        return 1
    failures = checks = 0
    with tempfile.TemporaryDirectory(prefix="tscope_golden_encdec_") as scratch:
        for name in variants:
            variant_failures, variant_checks = check_variant(args.cli, args.ref, name, scratch, args.tolerance)
            failures += variant_failures
            checks += variant_checks
        for description, arguments, named in bad_input_cases(args.ref, variants[0], scratch):
            problem, message = check_case(args.cli, arguments, named)
            checks += 1
            if problem:
                failures += 1
                print(f"{description}: FAIL {problem}")
            else:
                print(f"{description}: ok, clean non-zero exit with: {message}")
    if failures:
        print(f"golden encdec: {failures} failure(s) in {checks} checks")
        return 1
    print(f"golden encdec: all {checks} checks passed (arrays within {args.tolerance:.0e})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
