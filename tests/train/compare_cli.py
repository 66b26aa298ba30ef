#!/usr/bin/python3
"""tscope-cli compare end to end: trains the copy and reverse presets 30 steps each into OUT (the
fixture the GUI test gui_training_compare opens), then checks the JSON summary on stdout against the
file: two runs in order, 30 losses each, validation at increasing steps ending at 30, finite and
falling; that a bad preset list gives one line and a non-zero exit, writing nothing; and that Ctrl-C
stops a long comparison with exit 130 and no file.
usage: compare_cli.py TSCOPE_CLI OUT"""
import json
import math
import os
import signal
import subprocess
import sys

cli, out = sys.argv[1], sys.argv[2]
os.makedirs(os.path.dirname(out), exist_ok=True)
if os.path.exists(out):
    os.remove(out)
run = subprocess.run([cli, "compare", "--presets", "copy,reverse", "--steps", "30", "--threads", "1", "--title", "Copy against reverse",
                      "--description", "Two synthetic tasks, 30 steps each.", "--out", out], capture_output=True, text=True, timeout=600)
assert run.returncode == 0, run.stderr
summary = json.loads(run.stdout)
assert summary["out"] == out, summary
assert [r["label"] for r in summary["runs"]] == ["copy", "reverse"], summary
assert "reverse 2/2" in run.stderr and "ETA" in run.stderr, "no progress line per run: " + run.stderr[-500:]
saved = json.load(open(out))
assert saved["format"] == "tscope-training-comparison" and saved["version"] == 1, saved.keys()
assert saved["title"] == "Copy against reverse" and saved["command"].startswith("tscope-cli compare --presets copy,reverse"), saved["command"]
assert len(saved["runs"]) == 2
for record, r in zip(summary["runs"], saved["runs"]):
    assert r["label"] == record["label"] and len(r["train_loss"]) == 30 == record["steps"], (r["label"], len(r["train_loss"]))
    assert len(r["eval_steps"]) == len(r["val_loss"]) >= 2 and r["eval_steps"][-1] == 30, r["eval_steps"]
    assert all(a < b for a, b in zip(r["eval_steps"], r["eval_steps"][1:])), r["eval_steps"]
    assert all(math.isfinite(x) for x in r["train_loss"] + r["val_loss"])
    assert r["val_loss"][-1] < r["val_loss"][0], (r["label"], r["val_loss"][0], r["val_loss"][-1])
    assert record["val_loss"] == r["val_loss"][-1] and record["best_val_loss"] == min(r["val_loss"]), (record, r["val_loss"])
    assert record["parameters"] == r["parameters"] > 0 and record["tokens_per_second"] > 0
    assert r["train_config"]["train"]["steps"] == 30, r["train_config"]["train"]
    print(f"{r['label']}: val loss {r['val_loss'][0]:.3f} -> {r['val_loss'][-1]:.3f} over {len(r['eval_steps'])} evaluations")

bad = out + ".bad.json"
for presets, words in [("copy,no-such", "no-such"), ("", "--presets")]:
    run = subprocess.run([cli, "compare", "--presets", presets, "--out", bad], capture_output=True, text=True, timeout=60)
    assert run.returncode != 0 and run.stdout == "" and run.stderr.count("\n") == 1 and words in run.stderr, (presets, run)
    assert not os.path.exists(bad), "a failed compare wrote a file"
interrupted = out + ".interrupted.json"
long_run = subprocess.Popen([cli, "compare", "--presets", "copy,reverse", "--steps", "100000", "--threads", "1", "--out", interrupted],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
first = long_run.stderr.readline()  # the progress line: training has started
assert "step" in first, first
long_run.send_signal(signal.SIGINT)
stdout, stderr = long_run.communicate(timeout=60)
assert long_run.returncode == 130 and stdout == "" and "nothing written" in stderr, (long_run.returncode, stdout, stderr[-300:])
assert not os.path.exists(interrupted) and not os.path.exists(interrupted + ".tmp"), "an interrupted compare wrote a file"
print("compare: ok")
