#!/usr/bin/env bash
# The GPU run: one command for a lent GPU machine (CUDA toolkit, CMake, ninja and PyTorch, no Debian
# packages, compiler unknown), sized for a 15-minute lease: at most BUDGET_S seconds (default 420),
# every stage under its own timeout and skipped when the budget is spent. Stages:
#   build     configure (warnings not fatal) and build only what the GPU needs: tscope_cuda_tests and
#             the benches bench_forward, bench_train, bench_floors, bench_edit
#   tests     every CUDA suite in its own process (a faulting kernel's sticky error stays in its
#             suite); a failed suite runs again with TSCOPE_CUDA_SYNC=1 to name the faulting launch
#   memcheck  compute-sanitizer --tool memcheck over the attention and ops suites
#   floors    bench_floors: the device's copy bandwidth and FP32 SGEMM rate
#   forward   bench_forward --backend cuda, GPT-2 124M shape on seeded random weights: prefill 128
#             with 128 decode steps (also writes the weights for the peer), prefill 1024 alone
#             (--decode 0: 1024 is the whole context)
#   edit      bench_edit --backend cuda: the app's prompt-edit latency through Session, 1000 tokens
#   torch     bench/peers/torch_gpu_bench.py on the SAME weights, eager (TORCH_COMPILE=1 adds
#             torch.compile, for a later lease)
#   train     bench_train --backend cuda and bench/peers/torch_train_bench.py --device cuda
#             (brown-small's architecture)
#   table     bench/gpu/gpu_table.py: the figures beside the peer's and the floors
# What comes back (at most 8 files; the device tool returns 8): under $OUT, written as the stages
# run, so a command killed at its limit still returns what it had:
#   run.log          everything every stage printed, in order
#   status.txt       one line per stage: passed, failed, skipped, not run (and why)
#   results.tar.gz   every stage's JSON and log (re-packed after each stage)
#   gpu_table.md     the table (the last stage)
# What must be carried (the device tool's `carry`, 64 MiB with the tree): .cache/deps, made here by
# bench/gpu/carry_deps.sh (Eigen headers, nlohmann-json, GoogleTest sources, GPT-2's tokenizer
# files for bench_edit; about 17 MiB).
# GPU_DRY_RUN=1 on the development machine: the same configure and build (nvcc compiles here), every
# stage that can run without a device (CUDA tests report skipped, benches "no device"), the same
# files, and the table with every GPU row "not run".
# Environment: STAGES (default: all, in the order above), BUDGET_S (420), OUT (default
# $TSCOPE_BUILD/out), TSCOPE_DEPS (.cache/deps), TSCOPE_BUILD (build-gpu), CUDA_ARCHS (90),
# TORCH_COMPILE (0), GPU_DRY_RUN (0; a dry run's budget defaults to 3600 s, two cores build here),
# BUILD_LIMIT_S (300).
# Exit status: 0 when every stage that ran passed (a dry run: when every stage behaved as it should
# without a device); the table is written in every case.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
root=$PWD
deps=${TSCOPE_DEPS:-.cache/deps}
build=${TSCOPE_BUILD:-build-gpu}
archs=${CUDA_ARCHS:-90}
dry=${GPU_DRY_RUN:-0}
budget=${BUDGET_S:-420}
build_limit=${BUILD_LIMIT_S:-300}
if [ "$dry" = 1 ]; then  # two cores build here what sixteen build there
  budget=${BUDGET_S:-3600}
  build_limit=${BUILD_LIMIT_S:-3000}
fi
stages=" ${STAGES:-build tests memcheck floors forward edit torch train table} "
out=${OUT:-$build/out}
results="$build/gpu_results"
started=$SECONDS
mkdir -p "$results" "$out" || exit 1
log="$out/run.log"
status_file="$out/status.txt"
: > "$status_file"
status=0
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
# The Python with PyTorch (on this machine Debian's /usr/bin/python3; pyenv's python3 comes first on PATH).
python=python3
for candidate in "$(command -v python3)" /usr/bin/python3; do
  if [ -x "$candidate" ] && "$candidate" -c "import torch" 2>/dev/null; then python=$candidate; break; fi
done

say() { echo "$*" | tee -a "$log"; }
has() { [[ "$stages" == *" $1 "* ]]; }
left() { echo $((budget - (SECONDS - started))); }
# record STAGE RESULT [WHY]: one line in status.txt; a failure makes the exit status 1.
record() {
  local line="$1: $2${3:+ ($3)}"
  echo "$line" >> "$status_file"
  say "== $line"
  case "$2" in failed*) status=1 ;; esac
}
# Seconds a stage may take: its own limit, or what the budget has left (less a margin for the table).
limit() {
  local own=$1 rest
  rest=$(( $(left) - 15 ))
  if [ "$rest" -lt "$own" ]; then echo "$rest"; else echo "$own"; fi
}
# The results folder as one file under $OUT, replaced atomically (a kill leaves the last one whole).
pack() {
  tar -czf "$out/results.tar.gz.tmp" -C "$build" gpu_results 2>/dev/null && mv -f "$out/results.tar.gz.tmp" "$out/results.tar.gz"
}
# run NAME SECONDS CMD...: stdout to $results/NAME.json, stderr to $results/NAME.log (both also in
# run.log); returns the command's exit status (124: its timeout).
run() {
  local name=$1 seconds=$2
  shift 2
  say "-- $name: $* (limit ${seconds} s)"
  timeout --kill-after=5 "$seconds" "$@" > "$results/$name.json" 2> "$results/$name.log"
  local code=$?
  tail -c 3000 "$results/$name.json" >> "$log"
  tail -n 30 "$results/$name.log" >> "$log"
  return "$code"
}
# measure NAME SECONDS CMD...: a benchmark; its JSON is kept only when it succeeded.
measure() {
  local name=$1 seconds
  seconds=$(limit "$2")
  shift 2
  if [ "$seconds" -lt 20 ]; then record "$name" "not run" "the ${budget} s budget is spent"; return; fi
  run "$name" "$seconds" "$@"
  local code=$?
  if [ "$code" -eq 0 ]; then
    record "$name" passed
  else
    rm -f "$results/$name.json"
    if [ "$dry" = 1 ] && grep -qiE "cuda|device|driver" "$results/$name.log"; then record "$name" "no device" "dry run"
    elif [ "$code" -eq 124 ] || [ "$code" -eq 137 ]; then record "$name" "failed" "timed out after ${seconds} s"
    else record "$name" "failed" "exit $code: $(tail -n 1 "$results/$name.log" | cut -c1-200)"
    fi
  fi
  pack
}

say "== run_all.sh: stages${stages}budget ${budget} s, dry run ${dry}, $(date -u +%FT%TZ)"
if [ "$dry" != 1 ]; then
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv,noheader 2>&1 | tee -a "$log"
fi
{ nvcc --version | tail -1; cmake --version | head -1; echo "cores: $(nproc)"; } 2>&1 | tee -a "$log"

if has build; then
  if [ "$dry" = 1 ] && [ ! -e "$deps/eigen3/Eigen/Core" ]; then bash bench/gpu/carry_deps.sh >> "$log" 2>&1; fi
  missing=""
  for needed in "$deps/eigen3/Eigen/Core" "$deps/json/nlohmann/json.hpp" "$deps/googletest/CMakeLists.txt"; do
    [ -e "$needed" ] || missing="$missing $needed"
  done
  if [ -n "$missing" ]; then
    record build "failed" "missing:$missing: run bench/gpu/carry_deps.sh here first and carry $deps"
  else
    rm -f "$results"/*.json "$results"/*.log "$results/tests_status.txt"  # no stale figures in the table
    seconds=$(limit "$build_limit")
    say "-- build (limit ${seconds} s)"
    launcher=()
    command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
    if timeout "$seconds" cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTSCOPE_GUI=OFF -DTSCOPE_CUDA=ON -DTSCOPE_WERROR=OFF \
         -DCMAKE_CUDA_ARCHITECTURES="$archs" "${launcher[@]}" \
         -DTSCOPE_EIGEN_DIR="$root/$deps/eigen3" -DTSCOPE_JSON_DIR="$root/$deps/json" -DTSCOPE_GTEST_DIR="$root/$deps/googletest" \
         >> "$log" 2>&1 &&
       timeout "$(limit "$build_limit")" ninja -C "$build" -j "$(nproc)" tscope_cuda_tests bench_forward bench_train bench_floors bench_edit >> "$log" 2>&1; then
      record build passed "$((SECONDS - started)) s"
    else
      record build "failed" "see run.log"
      tail -n 40 "$log"
    fi
  fi
  pack
fi
tests_bin="$build/tests/tscope_cuda_tests"

if has tests; then
  if [ ! -x "$tests_bin" ]; then
    record tests "not run" "tscope_cuda_tests was not built"
    echo "not run" > "$results/tests_status.txt"
  else
    suites=$(timeout 60 "$tests_bin" --gtest_list_tests | grep -E '^[A-Za-z][A-Za-z0-9_]*\.$' | tr -d '.')
    passed=0 failed=0 skipped=0 failing=""
    for suite in $suites; do
      seconds=$(limit 120)
      if [ "$seconds" -lt 10 ]; then failing="$failing $suite(budget)"; failed=$((failed + 1)); continue; fi
      run "test_$suite" "$seconds" "$tests_bin" --gtest_filter="$suite.*" --gtest_brief=0
      code=$?
      suite_log="$results/test_$suite.json"
      if [ "$code" -eq 0 ] && grep -q '^\[  SKIPPED \]' "$suite_log"; then skipped=$((skipped + 1))
      elif [ "$code" -eq 0 ]; then passed=$((passed + 1))
      else
        failed=$((failed + 1)); failing="$failing $suite"
        # Again with a wait after every launch: the error then names the kernel that faulted.
        seconds=$(limit 120)
        [ "$seconds" -ge 10 ] && TSCOPE_CUDA_SYNC=1 run "test_${suite}_sync" "$seconds" "$tests_bin" --gtest_filter="$suite.*" --gtest_brief=1
      fi
      pack
    done
    summary="$passed suites passed, $skipped skipped, $failed failed${failing:+:$failing}"
    if [ "$failed" -gt 0 ]; then record tests "failed" "$summary"; echo "FAILED: $summary" > "$results/tests_status.txt"
    elif [ "$skipped" -gt 0 ] && [ "$dry" = 1 ]; then record tests "skipped" "dry run: $summary"; echo "not run (dry run: $summary)" > "$results/tests_status.txt"
    elif [ "$skipped" -gt 0 ]; then record tests "failed" "no usable device: $summary"; echo "SKIPPED: no usable device ($summary)" > "$results/tests_status.txt"
    else record tests passed "$summary"; echo "passed ($summary)" > "$results/tests_status.txt"
    fi
  fi
  pack
fi

if has memcheck; then
  if ! command -v compute-sanitizer >/dev/null; then
    record memcheck "not run" "compute-sanitizer not found"
  elif [ ! -x "$tests_bin" ]; then
    record memcheck "not run" "tscope_cuda_tests was not built"
  else
    measure memcheck 150 compute-sanitizer --tool memcheck --error-exitcode 1 "$tests_bin" --gtest_filter='CudaAttention*:CudaOps*' --gtest_brief=1
  fi
fi

if has floors; then
  measure floors 60 "$build/bench/bench_floors" --copy-mib 2048 --square 8192 --repeats 20
fi

weights="$build/gpt2-random"
if has forward; then
  measure forward_128 90 "$build/bench/bench_forward" --backend cuda --prefill 128 --decode 128 --repeats 10 --save-weights "$weights"
  measure forward_1024 60 "$build/bench/bench_forward" --backend cuda --prefill 1024 --decode 0 --repeats 10
fi

if has edit; then
  measure edit 90 "$build/bench/bench_edit" --backend cuda --tokens 1000 --repeats 5 --tokenizer "$deps/gpt2-tokenizer"
fi

if has torch; then
  if [ -e "$weights/tscope_reference.json" ]; then
    compile=(--no-compile)  # eager: torch.compile's warm-up would take the lease
    [ "${TORCH_COMPILE:-0}" = 1 ] && compile=()
    measure torch_forward 120 "$python" bench/peers/torch_gpu_bench.py --weights "$weights" --device cuda \
      --prefill 128,1024 --decode 128 --decode-prompt 128 --repeats 10 --warmup 3 --check "${compile[@]}"
  else
    record torch_forward "not run" "$weights/tscope_reference.json missing: the forward stage did not write the weights"
  fi
fi

if has train; then
  measure train_tscope 60 "$build/bench/bench_train" --backend cuda --steps 50 --warmup 5
  compile=()
  [ "${TORCH_COMPILE:-0}" = 1 ] && compile=(--compile)
  measure train_torch 90 "$python" bench/peers/torch_train_bench.py --device cuda --steps 50 --warmup 5 "${compile[@]}"
fi

if has table; then
  [ -e "$results/tests_status.txt" ] || echo "not run" > "$results/tests_status.txt"
  timeout 60 "$python" bench/gpu/gpu_table.py "$results" --markdown "$out/gpu_table.md" 2>&1 | tee -a "$log"
  record table "$([ "${PIPESTATUS[0]}" -eq 0 ] && echo passed || echo failed)"
  pack
fi
say "== run_all.sh: done in $((SECONDS - started)) s; $(grep -c . "$status_file") stages recorded"
[ "$status" -eq 0 ] || say "run_all.sh: a stage FAILED (status.txt)"
exit "$status"
