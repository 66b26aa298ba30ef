#!/usr/bin/env bash
# Runs the whole test suite from a fresh clone: set-up (packages, configure, build), every CTest
# test (unit, golden against PyTorch and GPT-2's JS tokenizer, CLI bad-input checks, the GUI driven
# as hands use it under Xvfb, a 2-minute monkey run), then the file-parsing and bad-input tests
# again under AddressSanitizer + UBSan in build-asan/ (the tests tests/sanitizer_tests.regex names), then a
# libFuzzer smoke run of every parser.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/setup.sh
jobs=$(nproc)
ctest --test-dir build --output-on-failure --parallel "$jobs"

if [[ "${TSCOPE_SKIP_ASAN:-0}" != 1 ]]; then
  echo "== AddressSanitizer + UBSan pass over parsers and bad inputs =="
  if [[ ! -f build-asan/CMakeCache.txt ]]; then
    # -O1 -g1 (line tables, all a sanitizer's report needs): the Eigen-heavy files compile about 4 times
    # faster than at RelWithDebInfo's -O2 -g (transformer.cpp: 22 s against 86 s on 2 cores).
    cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
      -DTSCOPE_SANITIZE=address,undefined -DTSCOPE_BENCH=OFF -DTSCOPE_GUI=OFF -DTSCOPE_CUDA=OFF
  fi
  # Only what the chosen tests run: the test files that hold them (tests/CMakeLists.txt picks them by
  # the same regex), the CLI and the tokenizer's corpus check.
  cmake --build build-asan --parallel "$jobs" --target tscope_tests tscope-cli check_corpus
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    ctest --test-dir build-asan --output-on-failure --parallel "$jobs" -R "$(cat tests/sanitizer_tests.regex)"
fi

if [[ "${TSCOPE_SKIP_FUZZ:-0}" != 1 ]]; then
  echo "== libFuzzer smoke run over every parser of outside input (15 s per target) =="
  bash tests/fuzz/run_fuzz.sh
fi
