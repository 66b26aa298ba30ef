"""Keeps bench/gpu/run_all.sh (the one command a GPU lease runs) from rotting without building
anything: shellcheck finds nothing in it or carry_deps.sh; every stage of its default STAGES has its
`if has NAME` block and is named in the header; every file it writes under $OUT is one of at most 8
names (the device tool returns 8 files); every command a stage runs goes through `timeout` (run,
measure) or is cheap. Exit 1 with one line per problem.
usage: check_run_all.py BENCH_GPU_DIR"""
import os
import re
import shutil
import subprocess
import sys


def main():
    folder = sys.argv[1]
    script_path = os.path.join(folder, "run_all.sh")
    script = open(script_path).read()
    problems = []
    if shutil.which("shellcheck") is None:
        problems.append("shellcheck not found (scripts/setup.sh installs it)")
    else:
        for name in ("run_all.sh", "carry_deps.sh"):
            done = subprocess.run(["shellcheck", os.path.join(folder, name)], capture_output=True, text=True)
            if done.returncode != 0:
                problems.append(f"shellcheck {name}: {done.stdout.strip()[:2000]}")
    default = re.search(r'stages=" \$\{STAGES:-([a-z ]+)\} "', script)
    if not default:
        problems.append("no default STAGES list")
    else:
        header = script.split("set -uo pipefail")[0]
        for stage in default.group(1).split():
            if f"if has {stage}; then" not in script:
                problems.append(f"stage {stage} has no `if has {stage}; then` block")
            if not re.search(rf"^#\s+{stage}\s", header, re.M):
                problems.append(f"stage {stage} is not described in the header")
    files = set(re.findall(r'\$out/([A-Za-z0-9_.]+)', script))
    files = {f for f in files if not f.endswith(".tmp")}
    if len(files) > 8:
        problems.append(f"{len(files)} files under $OUT (at most 8 come back): {sorted(files)}")
    if "BUDGET_S:-" not in script or "timeout" not in script:
        problems.append("no time budget or no timeout")
    for line in script.splitlines():
        stripped = line.strip()
        if stripped.startswith(('"$build/bench/', '"$tests_bin"', '"$python" bench/')):
            problems.append(f"a command outside run/measure (no timeout): {stripped[:120]}")
    for p in problems:
        print(f"check_run_all: {p}")
    print(f"check_run_all: {'OK' if not problems else 'FAILED'}: stages {default.group(1) if default else '?'}; files under $OUT: {sorted(files)}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
