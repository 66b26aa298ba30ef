# Bad-input test for tscope-cli forward: missing or damaged model files, an invalid config, a
# token id outside the vocabulary and an unknown flag must each end with a non-zero exit (not a signal) and exactly
# one non-empty line on stderr. Builds the damaged inputs from make_reference.py's output.
import sys

sys.dont_write_bytecode = True

import argparse
import json
import os
import shutil
import struct
import subprocess
import tempfile

CLI_TIMEOUT_S = 120


def copy_model_dir(source, target):
    shutil.copytree(source, target)
    return target


def make_cases(ref, scratch, vocab_size):
    """-> [(description, argument list after the CLI path)]; damaged inputs are made in scratch."""
    ids = "464,2068,7586"
    plain = os.path.join(ref, "hf_plain")
    cases = [("missing model dir", ["forward", "--model", os.path.join(scratch, "no_such_model"), "--ids", ids])]

    truncated = copy_model_dir(plain, os.path.join(scratch, "truncated_data"))
    weights = os.path.join(truncated, "model.safetensors")
    os.truncate(weights, os.path.getsize(weights) // 2)  # header intact, data cut short
    cases.append(("safetensors truncated mid-data", ["forward", "--model", truncated, "--ids", ids]))

    truncated_header = copy_model_dir(plain, os.path.join(scratch, "truncated_header"))
    weights = os.path.join(truncated_header, "model.safetensors")
    with open(weights, "rb") as f:
        (header_len,) = struct.unpack("<Q", f.read(8))
    os.truncate(weights, 8 + header_len // 2)  # file ends inside the JSON header
    cases.append(("safetensors truncated mid-header", ["forward", "--model", truncated_header, "--ids", ids]))

    bad_heads = copy_model_dir(plain, os.path.join(scratch, "bad_n_head"))
    config_path = os.path.join(bad_heads, "config.json")
    with open(config_path) as f:
        config = json.load(f)
    config["n_head"] = 5
    assert config["n_embd"] % 5 != 0
    with open(config_path, "w") as f:
        json.dump(config, f)
    cases.append(("n_head does not divide n_embd", ["forward", "--model", bad_heads, "--ids", ids]))

    bad_magic = os.path.join(scratch, "bad_magic.bin")
    shutil.copyfile(os.path.join(ref, "gpt2_llmc.bin"), bad_magic)
    with open(bad_magic, "r+b") as f:
        f.write(struct.pack("<i", 20240327))
    cases.append(("llm.c file with the wrong magic", ["forward", "--model", bad_magic, "--ids", ids]))

    # (An input longer than the context is not an error: the last n_ctx tokens run, as in the app;
    # tests/test_cli_edges.cpp checks that.)
    cases.append((f"an id past the {vocab_size}-token vocabulary", ["forward", "--model", plain, "--ids", f"464,{vocab_size}"]))
    cases.append(("unknown flag", ["forward", "--model", plain, "--ids", ids, "--no-such-flag"]))
    return cases


def check_case(cli, arguments, named=None):
    """Returns ("", the stderr line) when the CLI failed cleanly (non-zero exit, not a signal, one
    non-empty stderr line, containing `named` when given), else (what was wrong, "")."""
    try:
        result = subprocess.run([cli] + arguments, capture_output=True, text=True, timeout=CLI_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"timed out after {CLI_TIMEOUT_S} s", ""
    except OSError as error:
        return f"cannot run {cli}: {error}", ""
    code = result.returncode  # negative when killed by a signal
    stderr_text = result.stderr[:-1] if result.stderr.endswith("\n") else result.stderr
    stderr_lines = stderr_text.split("\n") if stderr_text else []
    if code == 0:
        return "exit code 0 (expected a failure)", ""
    if code < 0 or code >= 128:
        return f"exit code {code}: crashed (signal); stderr: {result.stderr.strip()[:500]}", ""
    if len(stderr_lines) != 1 or not stderr_lines[0].strip():
        return f"stderr must be exactly one non-empty line, got {len(stderr_lines)}: {result.stderr[:500]!r}", ""
    if named is not None and named not in stderr_lines[0]:
        return f"the stderr line does not name the problem ('{named}'): {stderr_lines[0][:500]!r}", ""
    return "", stderr_lines[0]


def main():
    parser = argparse.ArgumentParser(description="Checks tscope-cli fails cleanly on bad inputs.")
    parser.add_argument("--cli", required=True, help="path to tscope-cli")
    parser.add_argument("--ref", required=True, help="folder written by make_reference.py")
    args = parser.parse_args()
    with open(os.path.join(args.ref, "manifest.json")) as f:
        vocab_size = json.load(f)["config"]["vocab_size"]

    failures = 0
    with tempfile.TemporaryDirectory(prefix="tscope_bad_inputs_") as scratch:
        for description, arguments in make_cases(args.ref, scratch, vocab_size):
            problem, message = check_case(args.cli, arguments)
            if problem:
                failures += 1
                print(f"{description}: FAIL {problem}")
            else:
                print(f"{description}: ok, clean non-zero exit with: {message}")
    if failures:
        print(f"bad inputs: {failures} failure(s)")
        return 1
    print("bad inputs: all cases failed cleanly")
    return 0


if __name__ == "__main__":
    sys.exit(main())
