#!/usr/bin/env bash
# Renders every picture the README shows headlessly (Xvfb) from the current build, on the shipped
# models: brown-small (the default), brown-moe for the Experts panel, induction-2l for an induction
# head, the Training panel mid-run, dates-encdec in the Translation panel, a lesson step, the scaling
# lab's runs, the file browser. Each picture twice: docs/NAME.png at 1600x1000 (the README's) and
# docs/projector/NAME.png at 1280x720 in projector mode (a common classroom projector), so both
# layouts can be looked at after a change. tests/check_file_mentions.py fails when a picture the
# README names is missing or is not made here. Needs a built tree (scripts/setup.sh).
#   scripts/docs_screenshots.sh [NAME...]   (default: every picture)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mkdir -p docs/projector docs/screenshots docs/projector/screenshots
small=assets/models/brown-small
moe=assets/models/brown-moe
induction=assets/models/induction-2l
prompt="The jury said that the city had not been able to find the money for the new school"
only=("$@")
# A fresh, empty preferences folder: the pictures never depend on how this machine's window closed.
export XDG_CONFIG_HOME=$(mktemp -d)
translation_session=$(mktemp --suffix=.json)
compare_what_if=$(mktemp --suffix=.json)
compare_prompts=$(mktemp --suffix=.json)
compare_models=$(mktemp --suffix=.json)
trap 'rm -rf "$XDG_CONFIG_HOME" "$translation_session" "$compare_what_if" "$compare_prompts" "$compare_models" "$families"' EXIT
printf '{"tscope_session": 1, "source": "the third of may two thousand and seven", "prompt": "2007-05-03$", "greedy": true, "layer": 1, "head": 3}' \
  >"$translation_session"
# The Compare panel's three cases: induction-2l without its causal mask on the right; brown-small on
# two prompts; brown-small beside brown-moe (same prompt).
printf '{"tscope_session": 1, "compare_what_ifs": "no-causal-mask", "layer": 1, "head": 0}' >"$compare_what_if"
printf '{"tscope_session": 1, "compare_prompt_linked": false, "compare_prompt": "The jury said that the city had not been able to find the money for the old church", "layer": 1, "head": 2}' \
  >"$compare_prompts"
printf '{"tscope_session": 1, "compare_model": "%s", "layer": 1, "head": 2}' "$root/assets/models/brown-moe" >"$compare_models"
families=$(mktemp --suffix=.json)
printf '{"tscope_session": 1, "arch_families": true}' >"$families"

shot() {
  local name=$1
  shift
  if ((${#only[@]})) && [[ ! " ${only[*]} " == *" $name "* ]]; then return; fi
  xvfb-run -a -s "-screen 0 1600x1000x24" ./build/tscope --fresh --window 1600x1000 --screenshot "docs/$name.png" "$@" >/dev/null
  xvfb-run -a -s "-screen 0 1280x720x24" ./build/tscope --fresh --window 1280x720 --projector --screenshot "docs/projector/$name.png" "$@" >/dev/null
  echo "docs/$name.png docs/projector/$name.png"
}

shot attention --model $small --panel attention --layer 1 --head 2 --prompt "$prompt"
shot attention-induction --model $induction --panel attention --layer 1 --head 0 --prompt "ZXqwertyuiopqwertyuio"
shot inside --model $induction --panel inside --layer 1 --head 0 --prompt "xqzkbmwpxqzkbmw"
shot vision --model assets/models/digits-vit --panel vision --layer 3 --head 1
shot fill --model assets/models/brown-bert --panel fill --prompt "The President of the United [MASK] came back to the White House and [MASK] that the election would be held"
for panel in prompt residual sampling positional architecture scaling efficient; do
  shot "$panel" --model $small --panel $panel --prompt "$prompt"
done
shot moe --model $moe --panel moe --prompt "$prompt"
# A prompt past the context: induction-2l holds 31 characters, the rest are dropped (greyed).
shot prompt-past-context --model $induction --panel residual --prompt "Attention is a soft dictionary lookup: every query is compared with every key"
shot training-panel --model $small --panel training --train-preset induction --train-steps 1000 --layer 1 --head 5
shot training-panel-moe --model $small --panel training --train-preset brown-moe --train-steps 750 --layer 1 --head 0
# The Translation panel: a finished greedy translation, decoder layer 1 head 3 (the digits' alignments).
shot screenshots/translation --model assets/models/dates-encdec --session "$translation_session" --panel translation
# The attention lesson at step 8 (the induction head's lines view, the caption with its check), and
# the scaling lesson's step 10: the scaling lab's "Your runs" on the shipped Brown sweep.
shot lesson --lesson attention --step 8
shot scaling-lab --lesson scaling --step 10
shot compare-what-if --model $induction --session "$compare_what_if" --panel compare --prompt "ZXqwertyuiopqwertyuio"
shot compare-prompts --model $small --session "$compare_prompts" --panel compare --prompt "$prompt"
shot compare-models --model $small --session "$compare_models" --panel compare --prompt "$prompt"
shot families --model $small --session "$families" --panel architecture --prompt "$prompt"
# The file browser on the shipped models (Ctrl+O, or the ... beside the model path).
shot file-browser --model $small --browse model
