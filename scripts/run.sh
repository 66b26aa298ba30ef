#!/usr/bin/env bash
# Set-up, then runs tscope on its default model. Until the GUI and the shipped models land, this
# runs `tscope-cli generate` on a small GPT-2-shaped model with seeded random weights (so the text
# is gibberish by design): it shows the whole pipeline working end to end.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/setup.sh
model=${TSCOPE_MODEL:-.cache/models/random-gpt2-tiny}
if [[ -z "${TSCOPE_MODEL:-}" && ! -f "$model/config.json" ]]; then
  ./build/tscope-cli init --out "$model" --layers 4 --heads 4 --embd 128 --positions 256 --seed 1 >/dev/null
fi
./build/tscope-cli generate --model "$model" --prompt "${1:-The meaning of a transformer is}" --max-new 20 --seed 7 --temperature 0.8 --top-k 40
