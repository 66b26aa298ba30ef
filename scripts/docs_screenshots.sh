#!/usr/bin/env bash
# Renders every panel headlessly (Xvfb) into docs/*.png for the README, on the shipped models:
# brown-small (the default), brown-moe for the Experts panel, induction-2l for an induction head,
# the Training panel mid-run, and dates-encdec in the Translation panel (docs/screenshots/). Needs a
# built tree (scripts/setup.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mkdir -p docs
small=assets/models/brown-small
moe=assets/models/brown-moe
induction=assets/models/induction-2l
prompt="The jury said that the city had not been able to find the money for the new school"
shot() {
  xvfb-run -a -s "-screen 0 1600x1000x24" ./build/tscope --screenshot "docs/$1.png" "${@:2}" >/dev/null
  echo "docs/$1.png"
}
shot attention --model $small --panel attention --layer 1 --head 2 --prompt "$prompt"
shot attention-induction --model $induction --panel attention --layer 1 --head 0 --prompt "ZXqwertyuiopqwertyuio"
shot inside --model $induction --panel inside --layer 1 --head 0 --prompt "xqzkbmwpxqzkbmw"
for panel in prompt residual sampling positional architecture scaling; do
  shot "$panel" --model $small --panel $panel --prompt "$prompt"
done
shot moe --model $moe --panel moe --prompt "$prompt"
# A prompt past the context: induction-2l holds 31 characters, the rest are dropped (greyed).
shot prompt-past-context --model $induction --panel residual --prompt "Attention is a soft dictionary lookup: every query is compared with every key"
shot training-panel --model $small --panel training --train-preset induction --train-steps 1000 --layer 1 --head 5
shot training-panel-moe --model $small --panel training --train-preset brown-moe --train-steps 750 --layer 1 --head 0
# The Translation panel: a finished greedy translation, decoder layer 1 head 3 (the digits' alignments).
mkdir -p docs/screenshots
translation_session=$(mktemp --suffix=.json)
printf '{"tscope_session": 1, "source": "the third of may two thousand and seven", "prompt": "2007-05-03$", "greedy": true, "layer": 1, "head": 3}' \
  >"$translation_session"
shot screenshots/translation --model assets/models/dates-encdec --session "$translation_session" --panel translation
rm -f "$translation_session"
