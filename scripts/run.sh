#!/usr/bin/env bash
# Set-up, then runs the tscope app on the default model, the shipped assets/models/brown-small
# (if it were missing, a seeded random-weight model is made instead). With no display it renders the attention panel headlessly under
# Xvfb into tscope-screenshot.png instead. Extra arguments go to tscope (e.g. --prompt "...").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/setup.sh
if [[ ! -f assets/models/brown-small/config.json && ! -f .cache/models/random-gpt2-tiny/config.json ]]; then
  ./build/tscope-cli init --out .cache/models/random-gpt2-tiny --layers 4 --heads 4 --embd 128 --positions 256 --seed 1 --init-std 0.2 >/dev/null
fi
if [[ -z "${DISPLAY:-}" && -z "${WAYLAND_DISPLAY:-}" ]]; then
  echo "run.sh: no display; rendering the attention panel under Xvfb into tscope-screenshot.png" >&2
  exec xvfb-run -a -s "-screen 0 1600x1000x24" ./build/tscope --screenshot tscope-screenshot.png --panel attention "$@"
fi
exec ./build/tscope "$@"
