#!/usr/bin/python3
"""The layout rules CI checks on every C++ and CUDA source of the repository: clang-format with the
project's .clang-format leaves the file as it is, and no file is over 500 lines (split it: a file
says what it holds). Prints one line per problem and exits 1; exits 0 when every file keeps them.
Usage: check_format.py [SOURCE_DIR]"""
import os
import shutil
import subprocess
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
EXTENSIONS = (".cpp", ".h", ".cu", ".cuh")
MAX_LINES = 500


def sources():
    """The tracked sources (a git checkout), else every source under the project's folders."""
    try:
        listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
        return sorted(path for path in listed if path.endswith(EXTENSIONS) and os.path.isfile(os.path.join(ROOT, path)))
    except (OSError, subprocess.CalledProcessError):
        found = []
        for folder in ("app", "model", "kernels", "tests", "bench"):
            for base, _, names in os.walk(os.path.join(ROOT, folder)):
                found += [os.path.relpath(os.path.join(base, n), ROOT) for n in names if n.endswith(EXTENSIONS)]
        return sorted(found)


def main():
    formatter = shutil.which("clang-format")
    if not formatter:
        print("check_format: clang-format not found: run scripts/setup.sh")
        return 1
    problems = []
    files = sources()
    for path in files:
        with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
            text = f.read()
        lines = text.count("\n")
        if lines > MAX_LINES:
            problems.append(f"{path}: {lines} lines (at most {MAX_LINES}: split it)")
        formatted = subprocess.run([formatter, "--style=file", f"--assume-filename={path}"], cwd=ROOT, input=text, capture_output=True,
                                   text=True, errors="replace")
        if formatted.returncode != 0:
            problems.append(f"{path}: clang-format failed: {formatted.stderr.strip()}")
        elif formatted.stdout != text:
            changed = next(i for i, (a, b) in enumerate(zip(text.splitlines() + [""], formatted.stdout.splitlines() + [""])) if a != b) + 1
            problems.append(f"{path}:{changed}: not as clang-format lays it out (run: clang-format -i {path})")
    for problem in problems:
        print(problem)
    print(f"check_format: {len(files)} files, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
