#!/usr/bin/env bash
# The GPU run of issue 6, on the device machine (CUDA toolkit, CMake, ninja and PyTorch, but no
# Debian packages): configure with the CUDA backend required, build, run the CUDA tests (every op
# against the reference, model logits against the CPU, KV-cache equivalence), then the benchmarks,
# GPT-2 124M shape on seeded random weights:
#   floors     bench_floors: device copy bandwidth and FP32 SGEMM rate (bench/bench_floors.cu)
#   tscope     bench_forward --backend cuda: prefill 128 (+ 128 decode steps; also writes the weights
#              and a reference for the peer) and prefill 1024 (+ 32 decode steps)
#   torch      bench/peers/torch_gpu_bench.py on the SAME weights: checks logits/greedy ids against
#              tscope's, then prefill 128 / 1024 and 128 decode steps, eager and torch.compile
#   train      bench_train --backend cuda and bench/peers/torch_train_bench.py --device cuda
#              (brown-small's architecture: L=4, H=6, C=192, V=4096, T=128, B=16)
# and prints the table last (bench/gpu/gpu_table.py), also as markdown in $OUT/gpu_table.md.
#
# What must be carried (ignored paths; the device tool's `carry` option, 64 MiB in all):
#   .cache/deps   made by bench/gpu/carry_deps.sh on the development machine (~15 MiB):
#                 eigen3/ (Eigen headers), json/nlohmann/json.hpp, googletest/ (built here).
# Nothing else: the weights are generated on the device (about 500 MB, under the build folder).
#
# Usage (from the repository root on the device machine):  bash bench/gpu/run_all.sh
# The whole run may not fit one 10-minute device command; STAGES picks stages, results persist in
# $TSCOPE_BUILD/gpu_results between calls while the machine stays warm:
#   STAGES="build tests floors tscope" bash bench/gpu/run_all.sh   then
#   STAGES="torch train table" bash bench/gpu/run_all.sh
# Environment: STAGES (default: build tests floors tscope torch train table), TSCOPE_DEPS (default
# .cache/deps), TSCOPE_BUILD (default build-gpu), CUDA_ARCHS (default 90: H100/H200),
# PEER_TIMEOUT (seconds per PyTorch peer, default 420), OUT (optional: logs and the table land there).
# Exit status: non-zero when the CUDA tests failed, were skipped or did not run, or a benchmark failed;
# the table is printed in every case. Missed targets are marked FAIL in the table.
set -uo pipefail
cd "$(dirname "$0")/../.."
deps=${TSCOPE_DEPS:-.cache/deps}
build=${TSCOPE_BUILD:-build-gpu}
archs=${CUDA_ARCHS:-90}
stages=" ${STAGES:-build tests floors tscope torch train table} "
peer_timeout=${PEER_TIMEOUT:-420}
results="$build/gpu_results"
mkdir -p "$results"
status=0
has() { [[ "$stages" == *" $1 "* ]]; }
fail() { echo "run_all.sh: FAILED: $*" >&2; status=1; }
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
python=$(command -v python3)

if has build; then
  for needed in "$deps/eigen3/Eigen/Core" "$deps/json/nlohmann/json.hpp" "$deps/googletest/CMakeLists.txt"; do
    [ -e "$needed" ] || { echo "run_all.sh: $needed missing: run bench/gpu/carry_deps.sh here first and carry $deps" >&2; exit 1; }
  done
  echo "== machine"
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv,noheader || true
  nvcc --version | tail -1
  cmake --version | head -1
  echo "cores: $(nproc)"
  echo "== configure and build"
  rm -f "$results"/*.json "$results/tests_status.txt"  # a fresh build: no stale figures in the table
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTSCOPE_GUI=OFF -DTSCOPE_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES="$archs" \
    -DTSCOPE_EIGEN_DIR="$PWD/$deps/eigen3" -DTSCOPE_JSON_DIR="$PWD/$deps/json" -DTSCOPE_GTEST_DIR="$PWD/$deps/googletest" \
    || { echo "run_all.sh: configure failed" >&2; exit 1; }
  ninja -C "$build" -j "$(nproc)" tscope_tests tscope-cli bench_forward bench_train bench_floors \
    || { echo "run_all.sh: build failed" >&2; exit 1; }
fi

if has tests; then
  echo "== CUDA tests"
  log="$results/cuda_tests.log"
  "$build/tests/tscope_tests" --gtest_filter='Cuda*:*Cuda*:BackendSelect.*' --gtest_brief=0 2>&1 | tee "$log"
  code=${PIPESTATUS[0]}
  if [ "$code" -ne 0 ]; then echo "FAILED (exit $code)" > "$results/tests_status.txt"
  elif grep -q '^\[  SKIPPED \]' "$log"; then echo "SKIPPED: no usable device" > "$results/tests_status.txt"
  elif ! grep -q '^\[  PASSED  \]' "$log"; then echo "no test ran" > "$results/tests_status.txt"
  else echo "passed ($(grep -m1 '^\[  PASSED  \]' "$log" | sed 's/.*PASSED  \] //'))" > "$results/tests_status.txt"
  fi
  cat "$results/tests_status.txt"
  grep -q '^passed' "$results/tests_status.txt" || fail "CUDA tests: $(cat "$results/tests_status.txt")"
fi

# Runs "$@" with stdout to $results/$name.json and stderr to $results/$name.log; a failure
# removes the JSON (the table then says the row did not run) and marks the run failed.
measure() {
  local name=$1; shift
  echo "== $name: $*"
  if "$@" > "$results/$name.json" 2> "$results/$name.log"; then
    tail -c 2000 "$results/$name.json"; echo
  else
    fail "$name (exit $?); its stderr:"; tail -20 "$results/$name.log" >&2
    rm -f "$results/$name.json"
  fi
}

if has floors; then
  measure floors "$build/bench/bench_floors" --copy-mib 2048 --square 8192 --repeats 20
fi

weights="$build/gpt2-random"
if has tscope; then
  measure forward_128 "$build/bench/bench_forward" --backend cuda --prefill 128 --decode 128 --repeats 10 --save-weights "$weights"
  measure forward_1024 "$build/bench/bench_forward" --backend cuda --prefill 1024 --decode 32 --repeats 10
fi

if has torch; then
  if [ -e "$weights/tscope_reference.json" ]; then
    measure torch_forward timeout "$peer_timeout" "$python" bench/peers/torch_gpu_bench.py --weights "$weights" --device cuda \
      --prefill 128,1024 --decode 128 --decode-prompt 128 --repeats 10 --warmup 3 --check
  else
    fail "torch: $weights/tscope_reference.json missing (run the tscope stage first)"
  fi
fi

if has train; then
  measure train_tscope "$build/bench/bench_train" --backend cuda --steps 50 --warmup 5
  measure train_torch timeout "$peer_timeout" "$python" bench/peers/torch_train_bench.py --device cuda --compile --steps 50 --warmup 5
fi

if has table; then
  echo "== table"
  [ -e "$results/tests_status.txt" ] || echo "not run" > "$results/tests_status.txt"
  markdown=()
  if [ -n "${OUT:-}" ]; then
    markdown=(--markdown "$OUT/gpu_table.md")
    cp "$results"/*.json "$results"/*.log "$results/tests_status.txt" "$OUT/" 2>/dev/null || true
  fi
  "$python" bench/gpu/gpu_table.py "$results" "${markdown[@]}" || status=1
  tests=$(cat "$results/tests_status.txt")
  case "$tests" in passed*) ;; *) echo "run_all.sh: CUDA tests: $tests" >&2; status=1 ;; esac
fi
[ "$status" -eq 0 ] || echo "run_all.sh: something FAILED or was skipped (see above); exit 1" >&2
exit "$status"
