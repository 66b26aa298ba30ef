#!/usr/bin/env bash
# Trains tscope's shipped models with tscope's own trainer and installs them in assets/models/.
# Usage: bash scripts/train_models.sh [brown-small] [brown-moe] [brown-bert] [induction-2l] [dates-encdec] [digits-vit]   (default: all six)
# Each run writes its checkpoints under .cache/train/NAME (resume an interrupted one with
#   build/tscope-cli train --resume --out .cache/train/NAME), then the model files (config.json,
# model.safetensors, tokenizer) and the run's summary (training.json) are copied to assets/models/NAME.
set -euo pipefail
cd "$(dirname "$0")/.."
cli=${TSCOPE_CLI:-build/tscope-cli}
[[ -x $cli ]] || { echo "train_models.sh: $cli not built (run scripts/setup.sh first)" >&2; exit 1; }
models=("$@")
[[ ${#models[@]} -gt 0 ]] || models=(brown-small brown-moe brown-bert induction-2l dates-encdec digits-vit)
for name in "${models[@]}"; do
  case $name in
    # Vocabularies large enough that the default and lesson prompts are whole words (tested by
    # ShippedModels.TheDefaultAndLessonPromptsTokenizeIntoWholeWords); brown-moe's 6144 keeps it under 20 MB.
    brown-small) data=brown:vocab=8192 ;;
    brown-moe) data=brown:vocab=6144 ;;
    brown-bert) data=brown:vocab=8192 ;;  # brown-small's BPE, plus the four special tokens
    induction-2l) data=induction:vocab=52,length=16 ;;
    dates-encdec) data=dates ;;
    digits-vit) data=digits ;;  # the UCI digits from python3-sklearn (the set-up unpacks them)
    *) echo "train_models.sh: unknown model '$name' (brown-small, brown-moe, brown-bert, induction-2l, dates-encdec, digits-vit)" >&2; exit 2 ;;
  esac
  run=.cache/train/$name
  if [[ -f $run/train_state.safetensors ]] && grep -q '"interrupted": false' "$run.json" 2>/dev/null; then
    :  # finished earlier: install it as it is
  elif [[ -f $run/train_state.safetensors ]]; then
    "$cli" train --resume --out "$run" > "$run.json"
  else
    "$cli" train --config "assets/models/configs/$name.json" --data "$data" --out "$run" > "$run.json"
  fi
  dest=assets/models/$name
  mkdir -p "$dest"
  for f in config.json model.safetensors vocab.json merges.txt chars.json labels.json preprocessor_config.json; do
    [[ -f $run/$f ]] && cp "$run/$f" "$dest/$f"
  done
  cp "$run.json" "$dest/training.json"
  echo "$name: $(tr -d '\n ' < "$dest/training.json")"
done
