# Golden forward test: runs `tscope-cli forward --dump` on every model make_reference.py wrote
# (HF prefixed F32, HF plain F32, llm.c .bin, HF BF16) and compares logits, attention, residual
# and every layer's internals (q, k, v, head outputs, attention output, MLP activation) with the
# float64 PyTorch reference by max|ours - ref| / max|ref| <= 1e-4; checks dla.json against the
# reference and that its parts sum to the logit; and runs the ablations make_reference.py lists.
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


def run_cli(cli, model_path, ids, dump_dir, extra=()):
    """Runs the CLI; returns (its JSON output or None, a list of failure strings)."""
    command = [cli, "forward", "--model", model_path, "--ids", ",".join(map(str, ids)), "--dump", dump_dir, *extra]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=CLI_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, [f"timed out after {CLI_TIMEOUT_S} s: {' '.join(command)}"]
    if result.returncode != 0:
        return None, [f"exit code {result.returncode} from {' '.join(command)}; stderr: {result.stderr.strip()}"]
    try:
        return json.loads(result.stdout), []
    except json.JSONDecodeError as error:
        return None, [f"stdout is not valid JSON ({error}): {result.stdout[:200]!r}"]


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


DLA_PARTS = ["embedding", "heads", "attn_bias", "mlp", "norm_bias"]


def check_dla(label, ours_path, reference_path, tolerance):
    """dla.json against the reference's: the same position and token, every part and the logit
    within tolerance (relative to the largest of them), and the parts summing to the logit.
    Returns (lines to print, failures)."""
    try:
        with open(ours_path) as f:
            ours = json.load(f)
    except (OSError, json.JSONDecodeError) as error:
        return [f"{label}: FAIL cannot read {ours_path}: {error}"], 1
    with open(reference_path) as f:
        reference = json.load(f)
    if "error" in ours:
        return [f"{label}: FAIL the CLI wrote no attribution: {ours['error']}"], 1
    if (ours.get("position"), ours.get("token")) != (reference["position"], reference["token"]):
        return [f"{label}: FAIL position/token {ours.get('position')}/{ours.get('token')}, "
                f"expected {reference['position']}/{reference['token']}"], 1
    try:
        values = {name: np.asarray(ours[name], dtype=np.float64) for name in DLA_PARTS + ["logit", "sum"]}
    except (KeyError, ValueError, TypeError) as error:
        return [f"{label}: FAIL malformed dla.json ({error!r})"], 1
    expected = {name: np.asarray(reference[name], dtype=np.float64) for name in DLA_PARTS + ["logit"]}
    if any(values[name].shape != expected[name].shape for name in expected):
        return [f"{label}: FAIL part shapes {[values[n].shape for n in expected]}, expected {[expected[n].shape for n in expected]}"], 1
    scale = max(float(np.abs(v).max()) for v in expected.values())
    difference = max(float(np.abs(values[name] - expected[name]).max()) for name in expected)
    parts_sum = sum(float(values[name].sum()) for name in DLA_PARTS)
    sum_error = abs(parts_sum - float(values["logit"])) / abs(float(values["logit"]))
    reported_sum_error = abs(float(values["sum"]) - parts_sum) / abs(float(values["logit"]))
    lines = [f"{label}: parts vs reference max abs diff {difference:.3e}, relative error {difference / scale:.3e} "
             f"{'ok' if difference / scale <= tolerance else 'FAIL'}",
             f"{label}: parts sum {parts_sum:.6f} vs logit {float(values['logit']):.6f}, relative error {sum_error:.3e}, "
             f"reported sum off by {reported_sum_error:.3e} {'ok' if max(sum_error, reported_sum_error) <= tolerance else 'FAIL'}"]
    failures = (difference / scale > tolerance) + (max(sum_error, reported_sum_error) > tolerance)
    return lines, failures


def check_model(cli, ref, entry, ids, array_names, scratch, tolerance, extra=()):
    """Runs one model (with `extra` flags) and compares its dump; returns (its JSON, failures)."""
    dump_dir = os.path.join(scratch, entry["name"])
    os.makedirs(dump_dir)
    output, problems = run_cli(cli, os.path.join(ref, entry["model"]), ids, dump_dir, extra)
    for problem in problems:
        print(f"{entry['name']}: FAIL {problem}")
    failures = len(problems)
    if problems and not os.listdir(dump_dir):
        return output, failures
    for array_name in array_names:
        line, passed = compare_array(f"{entry['name']} {array_name}", os.path.join(dump_dir, array_name),
                                     os.path.join(ref, entry["expected"], array_name), tolerance)
        print(line)
        failures += 0 if passed else 1
    return output, failures


def check_ablation_report(entry, output, ref):
    """The JSON names the interventions and holds the clean run's top token beside the ablated one."""
    clean = np.load(os.path.join(ref, entry["clean_expected"], "logits.npy"))[-1]
    ablated = np.load(os.path.join(ref, entry["expected"], "logits.npy"))[-1]
    try:
        reported = output["interventions"]
        ok = (sorted(reported["ablate"].split(",")) == sorted(entry["ablate"].split(",")) and reported["mode"] == entry["mode"]
              and output["clean_next"][0]["id"] == int(clean.argmax()) and output["next"][0]["id"] == int(ablated.argmax()))
    except (KeyError, IndexError, TypeError) as error:
        print(f"{entry['name']}: FAIL the JSON lacks the interventions or the clean tokens ({error!r})")
        return 1
    print(f"{entry['name']}: interventions {reported}, clean top {output['clean_next'][0]['id']}, "
          f"ablated top {output['next'][0]['id']} {'ok' if ok else 'FAIL'}")
    return 0 if ok else 1


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
    kinds = ("attn", "resid", "q", "k", "v", "head_out", "attn_out", "mlp_act")
    array_names = ["logits.npy"] + [f"{kind}_{layer}.npy" for layer in range(n_layer) for kind in kinds]

    failures = checks = 0
    with tempfile.TemporaryDirectory(prefix="tscope_golden_forward_") as scratch:
        for entry in manifest["models"]:
            _, model_failures = check_model(args.cli, args.ref, entry, ids, array_names, scratch, args.tolerance)
            lines, dla_failures = check_dla(f"{entry['name']} dla.json", os.path.join(scratch, entry["name"], "dla.json"),
                                            os.path.join(args.ref, entry["expected"], "dla.json"), args.tolerance)
            print("\n".join(lines))
            failures += model_failures + dla_failures
            checks += len(array_names) + 2
        for entry in manifest["ablations"]:
            extra = ["--ablate", entry["ablate"], "--ablate-mode", entry["mode"]]
            output, ablation_failures = check_model(args.cli, args.ref, entry, ids, ["logits.npy"], scratch, args.tolerance, extra)
            failures += ablation_failures + (check_ablation_report(entry, output, args.ref) if output else 0)
            checks += 2
    if failures:
        print(f"golden forward: {failures} failure(s)")
        return 1
    print(f"golden forward: all {checks} checks within {args.tolerance:.0e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
