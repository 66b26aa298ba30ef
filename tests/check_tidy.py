#!/usr/bin/python3
"""clang-tidy with the project's .clang-tidy over the translation units of a build's
compile_commands.json: every check there is an error (no function over 150 lines, use after move,
dangling views, copies where a reference was meant...). Prints clang-tidy's findings and exits 1
when there is one; exits 0 when every file is clean.

The default scope is what CI can afford on 2 cores (clang-tidy parses each file again, Eigen-heavy
ones for several seconds): app/ and the model folders outside the numeric kernels (core, io,
tokenize, theory, generate, select). --all adds model/nn, model/train, tests and bench (about 15
minutes on 2 cores); run it before a change to those folders lands.
Usage: check_tidy.py BUILD_DIR [--all] [--jobs N]"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DEFAULT = ["app/", "model/core/", "model/io/", "model/tokenize/", "model/theory/", "model/generate/", "model/select/"]
ALL = DEFAULT + ["model/nn/", "model/train/", "tests/", "bench/"]


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        print(__doc__)
        return 2
    build = args[0]
    scope = ALL if "--all" in args else DEFAULT
    jobs = int(args[args.index("--jobs") + 1]) if "--jobs" in args else os.cpu_count() or 1
    tidy = shutil.which("clang-tidy")
    if not tidy:
        print("check_tidy: clang-tidy not found: run scripts/setup.sh")
        return 1
    commands = os.path.join(build, "compile_commands.json")
    if not os.path.exists(commands):
        print(f"check_tidy: {commands} is missing: configure the build with CMAKE_EXPORT_COMPILE_COMMANDS=ON")
        return 1
    root = os.path.realpath(ROOT)
    entries = json.load(open(commands))
    files = []
    for entry in entries:
        path = os.path.relpath(os.path.realpath(os.path.join(entry["directory"], entry["file"])), root)
        if path.endswith(".cpp") and any(path.startswith(prefix) for prefix in scope) and path not in files:
            files.append(path)
    if not files:
        print(f"check_tidy: no translation unit of {', '.join(scope)} in {commands}")
        return 1

    # The test files' precompiled header is GCC's (.gch), which clang cannot read: give clang-tidy a copy
    # of the compile commands without it (each test file includes what it uses itself).
    database = build
    if any("cmake_pch" in entry.get("command", "") for entry in entries):
        database = tempfile.mkdtemp(prefix="check_tidy_")
        for entry in entries:
            entry["command"] = re.sub(r" -include \S*cmake_pch\.hxx| -Winvalid-pch", "", entry.get("command", ""))
        with open(os.path.join(database, "compile_commands.json"), "w") as out:
            json.dump(entries, out)

    def run(path):
        # GCC's own warning flags in the compile commands are not clang's: not an error here.
        result = subprocess.run([tidy, "-p", database, "--quiet", "--extra-arg=-Wno-unknown-warning-option", path], cwd=root,
                                capture_output=True, text=True)
        findings = [line for line in result.stdout.splitlines() if ": error:" in line or ": warning:" in line]
        return path, result.returncode, findings, result.stdout

    failed = 0
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for path, code, findings, output in pool.map(run, sorted(files)):
            if code != 0 or findings:
                failed += 1
                print(output.strip() or f"{path}: clang-tidy exited with {code}")
    if database != build:
        shutil.rmtree(database, ignore_errors=True)
    print(f"check_tidy: {len(files)} files, {failed} with findings")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
