#!/usr/bin/python3
"""The Training panel's Compare view driven as hands do (hands.py) at 1280x720: open the Training
tab and its Compare tab, type the path of the comparison tscope-cli compare made (the cli_compare
fixture: copy against reverse, 30 steps each) and press Open: two runs drawn with their labels, the
plot changes; then a broken file (written here) and a missing one: one line of error each, the app
alive and the comparison on screen kept. Before that, the attention row of the run's fields: a variant
ALiBi cannot take is refused in one line, a sliding window trains. After it, the shipped comparisons of
the lecture's training claims (trainability, Switch experts) from the list, each table naming what
differs. Screenshots are left in OUT.
usage: training_compare.py TSCOPE MODELS_DIR COMPARISON_FILE OUT"""
import os
import shutil
import sys
import time

from hands import Failure, differs, drive, save_png


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def cmp(report):
    return report.get("shown", {}).get("training_compare", {})


def open_file(app, path, press="Return"):
    """Types the path into the path box, then presses Enter or clicks Open."""
    app.click("training_compare_path")
    app.key("ctrl+a")
    app.type(path)
    if press == "Return":
        app.key("Return")
    else:
        app.click("training_compare_open")
    app.defocus()


def training(report):
    return report.get("shown", {}).get("training", {})


def pick_attention(app, name):
    """Opens the attention row's list and clicks one variant."""
    app.click("training_attention")
    app.wait(lambda r: f"training_attention_{name}" in r["regions"], "the list of attentions", 10)
    app.click(f"training_attention_{name}")
    return app.wait(lambda r: training(r).get("attention") == name, f"attention {name} chosen", 10)


def attention_row(app, out):
    """The attention a run trains with: the first preset (induction heads) uses ALiBi, which linear
    attention cannot add (one line, Start disabled); a sliding window can, and a run starts with it."""
    report = pick_attention(app, "linear")
    problem = training(report)["problem"]
    if "ALiBi" not in problem or "\n" in problem:
        raise Failure(f"linear attention on an ALiBi preset: {training(report)}")
    log(f"  linear on ALiBi: {problem}")
    report = pick_attention(app, "window")
    if training(report)["problem"]:
        raise Failure(f"window attention refused: {training(report)}")
    app.settle()  # the window's knob row moved the Start button: click where it is now
    # At 1280x720 the column of fields can end below the fold (a two-line status bar, as when a CUDA
    # build finds no device): a hand scrolls it down to Start.
    app.scroll_into_view("training_start", "training_controls")
    app.click("training_start")
    report = app.wait(lambda r: training(r).get("status") != "idle", "the run to start", 10)
    report = app.wait(lambda r: training(r).get("steps_done", 0) >= 3, "a few steps with window attention", 60)
    if training(report)["run_attention"] != "window":
        raise Failure(f"the run trains with {training(report)}")
    log(f"  training with window attention: {training(report)}")
    save_png(os.path.join(out, "training_window.png"), app.screenshot())


def compare_view(app, comparison, out):
    app.settle()
    app.click("tab_training")
    app.wait(lambda r: r["panel"] == "training" and "training_tab_compare" in r["regions"], "the Training tab", 10)
    attention_row(app, out)
    app.click("training_tab_compare")
    report = app.wait(lambda r: "training_compare" in r["shown"] and "training_compare_plot" in r["regions"], "the Compare view", 10)
    facts = cmp(report)
    log(f"  compare view open: {facts}")
    # The shipped comparison opens by itself: the four attentions trained on Brown.
    shipped = ["brown", "brown-linformer", "brown-linear", "brown-window"]
    if facts.get("labels") != shipped or facts.get("error"):
        raise Failure(f"the shipped comparison did not open by itself: {facts}")
    save_png(os.path.join(out, "compare_shipped.png"), app.screenshot())
    before = app.crop(app.screenshot(), "training_compare_plot")

    open_file(app, comparison)
    report = app.wait(lambda r: cmp(r).get("runs") == 2, "the comparison to load", 10)
    facts = cmp(report)
    if facts["labels"] != ["copy", "reverse"] or facts["runs_drawn"] != 2 or facts["error"] or facts["file"] != comparison:
        raise Failure(f"the loaded comparison: {facts}")
    if "training_compare_table" not in report["regions"]:
        raise Failure("no table of the runs")
    report = app.settle()
    if not differs(before, app.crop(app.screenshot(), "training_compare_plot", report)):
        raise Failure("the plot did not change when the comparison loaded")
    save_png(os.path.join(out, "compare_loaded.png"), app.screenshot())
    log(f"  loaded: {facts}")

    broken = os.path.join(out, "broken.json")
    with open(broken, "w") as f:
        f.write('{"format": "tscope-training-comparison", "version": 1, "runs": [')
    open_file(app, broken)
    report = app.wait(lambda r: cmp(r).get("error"), "the broken file's error", 10)
    facts = cmp(report)
    if "broken.json" not in facts["error"] or "\n" in facts["error"] or facts["runs"] != 2 or facts["file"] != comparison:
        raise Failure(f"after the broken file: {facts}")
    log(f"  broken file: {facts['error']}")
    save_png(os.path.join(out, "compare_broken.png"), app.screenshot())

    missing = os.path.join(out, "no_such_comparison.json")
    open_file(app, missing, press="Open")
    report = app.wait(lambda r: "no_such_comparison" in cmp(r).get("error", ""), "the missing file's error", 10)
    log(f"  missing file: {cmp(report)['error']}")
    open_file(app, comparison)
    app.wait(lambda r: cmp(r).get("runs") == 2 and not cmp(r).get("error"), "the good file again", 10)
    # Back to the shipped one from the list, as a lecturer picks it.
    app.click("training_compare_shipped")
    app.wait(lambda r: "training_compare_shipped_efficient-attention" in r["regions"], "the list of shipped comparisons", 10)
    app.click("training_compare_shipped_efficient-attention")
    report = app.wait(lambda r: cmp(r).get("labels") == shipped, "the shipped comparison from the list", 10)
    if not cmp(report)["file"].endswith("efficient-attention.json"):
        raise Failure(f"the list opened {cmp(report)}")
    shipped_claims(app, out)
    app.click("training_tab_run")
    app.wait(lambda r: "training_loss" in r["regions"], "back to this run's charts", 10)
    app.check_running()
    app.quit()


def pick_shipped(app, stem, labels):
    app.click("training_compare_shipped")
    app.wait(lambda r: f"training_compare_shipped_{stem}" in r["regions"], "the list of shipped comparisons", 10)
    app.click(f"training_compare_shipped_{stem}")
    report = app.wait(lambda r: cmp(r).get("labels") == labels, f"the shipped comparison {stem}", 10)
    return cmp(report)


def shipped_claims(app, out):
    """The lecture's claims about training, as shipped: the trainability runs (pre-norm, post-norm, no
    norm, no residual) and the Switch runs (dense against 2, 4, 8 experts); the table says what differs."""
    before = app.crop(app.screenshot(), "training_compare_plot")
    facts = pick_shipped(app, "trainability", ["brown-deep", "brown-deep-postnorm", "brown-deep-nonorm", "brown-deep-noresidual"])
    differs_column = facts["differs"]
    if "norm none" not in differs_column[2] or "residual no" not in differs_column[3] or "post-" not in differs_column[1]:
        raise Failure(f"the trainability table's differences: {facts}")
    report = app.settle()
    if not differs(before, app.crop(app.screenshot(), "training_compare_plot", report)):
        raise Failure("the plot did not change when the trainability comparison opened")
    save_png(os.path.join(out, "compare_trainability.png"), app.screenshot())
    log(f"  trainability: {differs_column}")
    facts = pick_shipped(app, "switch-experts", ["brown", "brown-switch2", "brown-switch4", "brown-switch8"])
    if "dense" not in facts["differs"][0] or "8 experts, top-1" not in facts["differs"][3]:
        raise Failure(f"the Switch table's differences: {facts}")
    save_png(os.path.join(out, "compare_switch.png"), app.screenshot())
    log(f"  switch: {facts['differs']}")


def main():
    tscope, models_dir, comparison, out = sys.argv[1:5]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    if not os.path.exists(comparison):
        log(f"FAIL: {comparison} is missing (the cli_compare test makes it)")
        return 1
    args = ["--window", "1280x720", "--model", os.path.join(models_dir, "induction-2l")]
    return drive(tscope, out, lambda start: compare_view(start(args), comparison, out), log)


if __name__ == "__main__":
    sys.exit(main())
