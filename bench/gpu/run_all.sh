#!/usr/bin/env bash
# The GPU run of issue 6, on the device machine (CUDA toolkit, CMake, ninja and PyTorch, but no
# Debian packages): configure with the CUDA backend required, build, run the CUDA tests (every op
# against the reference, model logits against the CPU, KV-cache equivalence), then the forward
# benchmark on the device and on the CPU. Prints a table last.
#
# What must be carried (ignored paths; the device tool's `carry` option, 64 MiB in all):
#   .cache/deps   made by bench/gpu/carry_deps.sh on the development machine (~15 MiB):
#                 eigen3/ (Eigen headers; tscope_model's CPU backend and transformer.cpp use Eigen),
#                 json/nlohmann/json.hpp (nlohmann-json, used throughout model/ and the CLI),
#                 googletest/ (GoogleTest sources, built here for tscope_tests).
#   The top-level CMakeLists.txt otherwise asks find_package for Eigen3, nlohmann_json and GTest
#   (OpenMP and Threads come with the compiler). The GUI is off (-DTSCOPE_GUI=OFF).
# Nothing else: no model files are needed (the tests and the benchmark use seeded random weights).
#
# Usage (from the repository root on the device machine):  bash bench/gpu/run_all.sh
# Environment: TSCOPE_DEPS (default .cache/deps), TSCOPE_BUILD (default build-gpu),
#              CUDA_ARCHS (default 90: H100/H200).
set -euo pipefail
cd "$(dirname "$0")/../.."
deps=${TSCOPE_DEPS:-.cache/deps}
build=${TSCOPE_BUILD:-build-gpu}
archs=${CUDA_ARCHS:-90}
for needed in "$deps/eigen3/Eigen/Core" "$deps/json/nlohmann/json.hpp" "$deps/googletest/CMakeLists.txt"; do
  [ -e "$needed" ] || { echo "run_all.sh: $needed missing: run bench/gpu/carry_deps.sh here first and carry $deps" >&2; exit 1; }
done
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi

echo "== machine"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
nvcc --version | tail -1
cmake --version | head -1
nproc

echo "== configure and build"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTSCOPE_GUI=OFF -DTSCOPE_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES="$archs" \
  -DTSCOPE_EIGEN_DIR="$PWD/$deps/eigen3" -DTSCOPE_JSON_DIR="$PWD/$deps/json" -DTSCOPE_GTEST_DIR="$PWD/$deps/googletest"
ninja -C "$build" -j "$(nproc)" tscope_tests tscope-cli bench_forward

echo "== CUDA tests"
tests_status=0
"$build/tests/tscope_tests" --gtest_filter='CudaBackend.*:BackendSelect.*' --gtest_brief=0 | tee "$build/cuda_tests.log" || tests_status=$?
if grep -q '^\[  SKIPPED \]' "$build/cuda_tests.log"; then
  echo "run_all.sh: CUDA tests were SKIPPED: no usable device here" >&2
  tests_status=1
fi

echo "== forward benchmark (GPT-2 124M shape, random weights)"
results=()
for backend in cuda cpu; do
  for shape in "128 128" "1024 32"; do
    set -- $shape
    line=$("$build/bench/bench_forward" --backend "$backend" --prefill "$1" --decode "$2" --repeats 3) || line="{\"backend\": \"$backend\", \"error\": true}"
    echo "$line"
    results+=("$line")
  done
done

echo "== table"
printf '%s\n' "${results[@]}" > "$build/bench_forward.jsonl"
python3 - "$build/bench_forward.jsonl" <<'PY'
import json, sys
header = ("backend", "prefill", "prefill ms", "prefill tok/s", "GFLOP/s", "decode ms/tok", "decode tok/s")
print("%-8s %8s %11s %14s %9s %14s %13s" % header)
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("error"):
        print("%-8s failed" % r["backend"])
        continue
    print("%-8s %8d %11.3f %14.1f %9.1f %14.3f %13.2f" % (r["backend"], r["prefill_tokens"], r["prefill_ms"], r["prefill_tokens_per_s"],
                                                      r["prefill_gflops_per_s"], r["decode_ms_per_token"], r["decode_tokens_per_s"]))
PY
echo "CUDA tests: $([ $tests_status -eq 0 ] && echo passed || echo FAILED or skipped)"
exit $tests_status
