#!/usr/bin/env bash
# Renders every panel headlessly (Xvfb) into docs/*.png for the README. Needs a built tree
# (scripts/setup.sh). Uses the default model, an MoE demo model for the Experts panel, and a
# peaked random-weight model for attention until the shipped models exist.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mkdir -p docs .cache/models
demo=.cache/models/random-gpt2-tiny
[[ -f $demo/config.json ]] || ./build/tscope-cli init --out $demo --layers 4 --heads 4 --embd 128 --positions 256 --seed 1 --init-std 0.2 >/dev/null
moe=.cache/models/demo-moe
if [[ ! -f $moe/config.json ]]; then
  printf '{"n_layer": 4, "n_head": 4, "n_embd": 128, "n_positions": 256, "n_experts": 8, "moe_top_k": 2, "moe_capacity_factor": 1.25, "position_encoding": "rope", "norm": "rmsnorm", "activation_function": "swiglu"}' >.cache/moe-config.json
  ./build/tscope-cli init --out $moe --config .cache/moe-config.json --seed 2 --init-std 0.2 >/dev/null
fi
prompt="When Mary and John went to the store, John gave a drink to"
shot() {
  xvfb-run -a -s "-screen 0 1600x1000x24" ./build/tscope --screenshot "docs/$1.png" "${@:2}" >/dev/null
  echo "docs/$1.png"
}
shot attention --model $demo --panel attention --layer 1 --head 2 --prompt "$prompt"
for panel in prompt residual sampling positional architecture scaling; do
  shot "$panel" --model $demo --panel $panel --prompt "$prompt"
done
shot moe --model $moe --panel moe --prompt "$prompt"
