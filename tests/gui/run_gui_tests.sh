#!/usr/bin/env bash
# GUI tests: runs the real tscope under Xvfb on every panel, saves screenshots into OUT and checks
# their pixels with check_png. usage: run_gui_tests.sh TSCOPE TSCOPE_CLI CHECK_PNG OUT CASE
set -euo pipefail
tscope=$1 cli=$2 check=$3 out=$4 case=$5
mkdir -p "$out"
shot() {  # shot NAME ARGS... : screenshot into $out/NAME.png with its regions in $out/NAME.json
  local name=$1
  shift
  xvfb-run -a -s "-screen 0 1600x1000x24" "$tscope" --screenshot "$out/$name.png" "$@" >"$out/$name.json"
}
model=$out/model
moe=$out/moe
if [[ ! -f $model/config.json ]]; then
  "$cli" init --out "$model" --layers 3 --heads 4 --embd 64 --positions 128 --seed 3 --init-std 0.25 >/dev/null
fi
prompt="The quick brown fox jumps over the lazy dog while the cat watches"
case $case in
  attention)
    shot attention_l0 --model "$model" --panel attention --layer 0 --head 1 --prompt "$prompt"
    shot attention_l2 --model "$model" --panel attention --layer 2 --head 1 --prompt "$prompt"
    "$check" "$out/attention_l0.png" --json "$out/attention_l0.json" --region attention_heatmap --not-uniform
    "$check" "$out/attention_l0.png" --json "$out/attention_l0.json" --region attention_heatmap --differs "$out/attention_l2.png"
    ;;
  panels)
    printf '{"n_layer": 2, "n_head": 4, "n_embd": 64, "n_positions": 128, "n_experts": 4, "moe_top_k": 2, "position_encoding": "rope"}' >"$out/moe.json"
    [[ -f $moe/config.json ]] || "$cli" init --out "$moe" --config "$out/moe.json" --seed 4 --init-std 0.25 >/dev/null
    for panel in prompt residual sampling positional architecture scaling; do
      shot "panel_$panel" --model "$model" --panel "$panel" --prompt "$prompt"
      "$check" "$out/panel_$panel.png" --json "$out/panel_$panel.json" --region panel --not-blank
    done
    shot panel_moe --model "$moe" --panel moe --prompt "$prompt"
    "$check" "$out/panel_moe.png" --json "$out/panel_moe.json" --region panel --not-blank
    ;;
  training)
    # The Training panel mid-run: the induction preset paused after a few steps and later, each
    # with a loss curve and attention maps of the probe sequence; training must change the maps.
    shot training_early --model "$model" --panel training --train-preset induction --train-steps 2
    shot training_mid --model "$model" --panel training --train-preset induction --train-steps 150
    for region in panel training_loss training_lr; do
      "$check" "$out/training_mid.png" --json "$out/training_mid.json" --region $region --not-blank
    done
    "$check" "$out/training_mid.png" --json "$out/training_mid.json" --region training_attention --not-uniform
    "$check" "$out/training_mid.png" --json "$out/training_mid.json" --region training_heads --not-uniform
    "$check" "$out/training_mid.png" --json "$out/training_mid.json" --region training_attention --differs "$out/training_early.png"
    # A preset that does not exist: one line on stderr, exit 1.
    set +e
    xvfb-run -a "$tscope" --model "$model" --train-preset no-such-preset --screenshot "$out/x.png" 2>"$out/bad_preset.err"
    status=$?
    set -e
    [[ $status -eq 1 ]] && grep -q "unknown training preset" "$out/bad_preset.err" || { echo "bad preset: exit $status"; cat "$out/bad_preset.err"; exit 1; }
    ;;
  bad_inputs)
    # A bad session file: a message in the app, no crash (exit 0 and a screenshot).
    printf '{"tscope_session": 1, "temperature": "hot"}' >"$out/bad_session.json"
    shot bad_session --model "$model" --panel attention --session "$out/bad_session.json"
    "$check" "$out/bad_session.png" --not-blank
    printf 'not json' >"$out/garbage_session.json"
    shot garbage_session --model "$model" --panel attention --session "$out/garbage_session.json"
    # A missing model and no display: one line on stderr, non-zero exit, no crash.
    set +e
    xvfb-run -a "$tscope" --model "$out/no_such_model" --screenshot "$out/x.png" 2>"$out/missing.err"
    status=$?
    env -u DISPLAY -u WAYLAND_DISPLAY "$tscope" --model "$model" 2>"$out/nodisplay.err"
    status2=$?
    set -e
    [[ $status -eq 1 && $(wc -l <"$out/missing.err") -eq 1 ]] || { echo "missing model: exit $status, stderr:"; cat "$out/missing.err"; exit 1; }
    grep -q "no such file" "$out/missing.err"
    [[ $status2 -eq 1 ]] && grep -q "no display" "$out/nodisplay.err" || { echo "no display: exit $status2"; cat "$out/nodisplay.err"; exit 1; }
    echo "bad inputs handled"
    ;;
  *) echo "unknown case $case"; exit 2 ;;
esac
