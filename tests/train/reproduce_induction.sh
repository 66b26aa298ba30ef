#!/usr/bin/env bash
# Trains induction-2l from scratch with the command documented in assets/models/README.md and
# checks it reaches the documented validation loss (near zero on the repeated half), and that the
# new model predicts a repeat it never saw. Usage: reproduce_induction.sh TSCOPE_CLI SOURCE_DIR
set -euo pipefail
cli=$1
src=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$cli" train --config "$src/assets/models/configs/induction-2l.json" --data induction:vocab=52,length=16 --out "$out/run" --quiet > "$out/result.json"
/usr/bin/env python3 - "$out/result.json" "$src/assets/models/induction-2l/training.json" <<'PY'
import json, sys
got = json.load(open(sys.argv[1]))
shipped = json.load(open(sys.argv[2]))
print(f"val loss: this run {got['val_loss']:.3g}, documented {shipped['val_loss']:.3g} (chance on the repeat: ln 52 = 3.95)")
assert got["steps"] == shipped["steps"], (got["steps"], shipped["steps"])
assert got["val_loss"] <= max(10 * shipped["val_loss"], 1e-3), "did not reach the documented loss"
PY
"$cli" generate --model "$out/run" --prompt "ZXqwertyuiopqwert" --max-new 7 --greedy > "$out/gen.json"
grep -q '"text": "yuiopqw"' "$out/gen.json" || { echo "induction: expected the repeat to continue as 'yuiopqw':"; cat "$out/gen.json"; exit 1; }
echo "induction-2l reproduced"
