#!/usr/bin/python3
"""The interactive GUI test: the real tscope window driven as hands do (hands.py). On every shipped
model: prompts of 0, 1, n_ctx, n_ctx + 1 and 10 x n_ctx tokens, characters a character-level model
does not know, invalid UTF-8 and control characters, each looked at in every panel; every tab;
every documented shortcut; a click over every control of every panel (a grid over the panel) and
drags over its sliders; Save PNG, Export CSV/NPY, Save and Load session; switching models with a
prompt in the box that does not fit the new one; then Ctrl+Q. It asserts that the app stays alive
and answers within 1 s, and that the screen (pixels) or the app's report changes as expected.
usage: interactive.py TSCOPE TSCOPE_CLI MODELS_DIR OUT"""
import json
import os
import shutil
import subprocess
import sys
import time

from hands import Failure, differs, drive

# Translation last: on these decoder-only models its button opens dates-encdec (the last panel clicked over).
PANELS = ["prompt", "attention", "inside", "residual", "sampling", "positional", "moe", "architecture", "scaling", "efficient", "training",
          "translation"]
# Each panel's Alt shortcut: Alt 1..9 and Alt 0 as before the Efficient-attention lab, Alt E for it, Alt T for Translation.
SHORTCUTS = dict(zip(PANELS, [f"alt+{d}" for d in range(1, 10)] + ["alt+e", "alt+0", "alt+t"]))
log_lines = []


def log(message):
    line = f"[{time.strftime('%H:%M:%S')}] {message}"
    log_lines.append(line)
    print(line, flush=True)


def token_count(cli, model, text):
    out = subprocess.run([cli, "tokenize", "--model", model, "--text", text], capture_output=True, text=True)
    if out.returncode != 0:
        raise Failure(f"tscope-cli tokenize failed: {out.stderr.strip()}")
    return len(json.loads(out.stdout)["ids"])


def repeating_unit(cli, model):
    """A text whose k-fold repetition is exactly k tokens (so n_ctx and n_ctx + 1 can be typed)."""
    for unit in [" the", " a", "a", "x", " of", "1"]:
        if token_count(cli, model, unit) == 1 and token_count(cli, model, unit * 7) == 7:
            return unit
    raise Failure(f"no repeating one-token unit found for {model}")


def set_prompt(app, data, expect_tokens=None, expect_dropped=None, what=""):
    """Clicks into the prompt, selects all, pastes `data` (or deletes when empty), clicks away, and
    waits for the snapshot of the new prompt."""
    before = app.report()["snapshot"]
    app.click("prompt")
    app.key("ctrl+a")
    if data:
        app.paste(data)
    else:
        app.key("Delete")
    app.defocus()
    report = app.wait(lambda r: r["snapshot"] > before and not r["busy"], f"the snapshot of the prompt ({what})", 120)
    if expect_tokens is not None and report["tokens"] != expect_tokens:
        raise Failure(f"{what}: {report['tokens']} tokens on screen, expected {expect_tokens}")
    if expect_dropped is not None and report["dropped"] != expect_dropped:
        raise Failure(f"{what}: {report['dropped']} dropped, expected {expect_dropped}")
    return report


def visit_panels(app, what):
    """Clicks every tab; each must become the panel on screen and draw something."""
    for panel in PANELS:
        report = app.report()
        if f"tab_{panel}" not in report["regions"]:
            if panel == "moe":
                continue  # only MoE models have the Experts panel
            raise Failure(f"no tab for {panel}")
        app.click(f"tab_{panel}")
        app.wait(lambda r: r["panel"] == panel, f"the {panel} panel ({what})", 10)
    app.click("tab_attention")
    app.wait(lambda r: r["panel"] == "attention", "the attention panel", 10)


def prompt_edge_cases(app, cli, model):
    n = app.report()["n_ctx"]
    unit = repeating_unit(cli, model)
    log(f"{os.path.basename(model)}: n_ctx {n}, unit {unit!r}")
    report = set_prompt(app, "", 0, 0, "an empty prompt")
    if "empty" not in report["error"]:
        raise Failure(f"an empty prompt should say so; error is {report['error']!r}")
    visit_panels(app, "an empty prompt")
    set_prompt(app, unit.strip() or unit, 1, 0, "one token")
    visit_panels(app, "one token")
    set_prompt(app, unit * n, n, 0, "exactly n_ctx tokens")
    visit_panels(app, "n_ctx tokens")
    set_prompt(app, unit * (n + 1), n, 1, "n_ctx + 1 tokens")
    shot = app.screenshot()
    if "dropped_note" not in app.report()["regions"]:
        raise Failure("no line says that tokens were dropped")
    visit_panels(app, "n_ctx + 1 tokens")
    before = app.crop(shot, "token_strip")
    set_prompt(app, unit * (10 * n), n, 9 * n, "10 x n_ctx tokens")
    if not differs(before, app.crop(app.screenshot(), "token_strip"), 0.0001):
        raise Failure("the token strip did not change for a 10 x n_ctx prompt")
    visit_panels(app, "10 x n_ctx tokens")
    # Characters a character-level model does not know, invalid UTF-8, control characters: the
    # prompt box turns invalid bytes into U+FFFD and drops control characters; nothing may crash.
    for what, data in [("unknown characters", "naïve café ☃ 漢字 🙂 Ω≈ç√"),
                       ("invalid UTF-8", b"ab\xff\xfe\xc3 \xe2\x82 cd \xf0\x9f"),
                       ("control characters", "a\x01\x02\x1b[31mred\x7f\tb\r\nc\x00d")]:
        report = set_prompt(app, data, None, None, what)
        if report["tokens"] < 1 or report["error"]:
            raise Failure(f"{what}: {report['tokens']} tokens, error {report['error']!r}")
        visit_panels(app, what)
    # A long paragraph typed key by key (not pasted), as a student would.
    app.click("prompt")
    app.key("ctrl+a")
    app.key("Delete")
    before = app.report()["snapshot"]
    typed = "Attention is a soft dictionary lookup: every query is compared with every key. " * 2
    app.type(typed)
    app.defocus()
    report = app.wait(lambda r: r["snapshot"] > before and not r["busy"] and r["frame"] > 0, "the typed prompt", 120)
    report = app.settle()
    if report["prompt"] != typed:
        raise Failure(f"typed {typed!r} but the prompt box holds {report['prompt']!r}")
    log(f"  typed 162 bytes: {report['tokens']} tokens, {report['dropped']} dropped")


def shortcuts(app):
    """Every documented shortcut, each with what it should change."""
    app.click("tab_attention")
    app.settle()
    app.defocus()
    r0 = app.report()
    L, H = r0["n_layer"], r0["n_head"]
    checks = [("Right", lambda r: r["head"] == (r0["head"] + 1) % H, "next head"),
              ("Left", lambda r: r["head"] == r0["head"], "previous head"),
              ("Down", lambda r: r["layer"] == (r0["layer"] + 1) % L, "next layer"),
              ("Up", lambda r: r["layer"] == r0["layer"], "previous layer")]
    for combo, predicate, what in checks:
        app.key(combo)
        app.wait(predicate, f"{combo}: {what}", 5)
    for key, field in [("a", "average_heads"), ("s", "scores"), ("g", "grid"), ("l", "lines")]:
        # Each toggles its view and changes the attention panel's pixels.
        before = app.crop(app.screenshot(), "panel")
        was = app.report()[field]
        app.key(key)
        app.wait(lambda r: r[field] != was, f"{key}: {field}", 5)
        app.pause(0.4)
        if not differs(before, app.crop(app.screenshot(), "panel")):
            raise Failure(f"the shortcut {key} did not change the attention panel")
        app.key(key)
        app.pause(0.2)
    before = app.screenshot()
    app.key("p")
    app.wait(lambda r: r["projector"], "P: projector mode", 5)
    app.pause(0.3)
    light = app.screenshot()
    if light.mean() < before.mean() + 40:
        raise Failure(f"P did not switch to the light theme (mean {before.mean():.0f} -> {light.mean():.0f})")
    app.key("p")
    app.wait(lambda r: not r["projector"], "P again: dark theme", 5)
    app.key("ctrl+equal")
    app.wait(lambda r: abs(r["font_scale"] - 1.25) < 1e-6, "Ctrl+=: larger text", 5)
    app.pause(0.3)
    big = app.region("tab_attention")
    app.key("ctrl+minus")
    app.wait(lambda r: abs(r["font_scale"] - 1.0) < 1e-6, "Ctrl+-: smaller text", 5)
    app.pause(0.3)
    small = app.region("tab_attention")
    if big[2] - big[0] <= small[2] - small[0]:
        raise Failure(f"Ctrl+= did not make the tab wider ({big} vs {small})")
    for combo in ["F1", "shift+slash"]:
        app.key(combo)
        app.wait(lambda r: r["help"], f"{combo}: help", 5)
        app.key(combo)
        app.wait(lambda r: not r["help"], f"{combo} again: help closed", 5)
    for panel in PANELS:
        if f"tab_{panel}" not in app.report()["regions"]:
            continue
        app.key(SHORTCUTS[panel])
        app.wait(lambda r, p=panel: r["panel"] == p, f"{SHORTCUTS[panel]}: {panel}", 5)
    app.key("alt+2")
    log("  shortcuts: all answered")


def files_and_sessions(app):
    """Save PNG, Export CSV and NPY of the matrix on screen, Save and Load session."""
    app.click("tab_attention")
    app.settle()
    before = set(os.listdir(app.workdir))
    for button, suffix in [("save_png", ".png"), ("export_csv", ".csv"), ("export_npy", ".npy")]:
        app.click(button)
        app.wait(lambda r, s=suffix: any(f.endswith(s) and f.startswith("tscope-") for f in set(os.listdir(app.workdir)) - before),
                 f"{button} to write a {suffix} file", 10)
    saved_prompt = "Save me: the session keeps this prompt."
    set_prompt(app, saved_prompt, None, 0, "the prompt to save")
    app.click("save_session")
    app.wait(lambda r: os.path.exists(os.path.join(app.workdir, "tscope-session.json")), "the session file", 10)
    set_prompt(app, "Something else entirely, typed after saving.", None, 0, "another prompt")
    app.click("load_session")
    report = app.wait(lambda r: r["prompt_bytes"] == len(saved_prompt) and not r["busy"], "Load session to restore the prompt", 20)
    if report["message"].startswith("loaded") and report["message_kind"] != "info":
        raise Failure(f"'{report['message']}' is drawn as {report['message_kind']}, not as news")
    # A corrupt session file: one line in the app, nothing lost, still alive.
    with open(os.path.join(app.workdir, "tscope-session.json"), "w") as f:
        f.write('{"tscope_session": 1, "prompt": ')
    app.click("load_session")
    report = app.wait(lambda r: "not a session file" in r["message"], "a message on the corrupt session", 10)
    if report["prompt_bytes"] != len(saved_prompt):
        raise Failure("loading a corrupt session changed the prompt")
    if report["message_kind"] != "error":
        raise Failure(f"the corrupt session's line is drawn as {report['message_kind']}, not as an error")
    log(f"  files: {sorted(set(os.listdir(app.workdir)) - before)}; corrupt session: {report['message']!r}")


def generation(app, cli, model):
    """Step twice and Generate 16 on the Next-token panel: the prompt grows by the drawn tokens and
    they are the tokens `tscope-cli generate` draws with the same seed (default knobs)."""
    prompt = "The quick brown fox"
    set_prompt(app, prompt, None, 0, "the prompt to generate from")
    app.click("tab_sampling")
    app.settle()
    start = app.report()["tokens"]
    for count, button in [(1, "step"), (2, "step"), (18, "generate")]:
        before = app.report()["snapshot"]
        app.click(button)
        report = app.wait(lambda r: r["snapshot"] > before and not r["busy"] and r["tokens"] >= start + count, f"{button} to add tokens", 60)
    args = [cli, "generate", "--model", model, "--prompt", prompt, "--max-new", str(report["tokens"] - start)]
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        raise Failure(f"tscope-cli generate failed: {out.stderr.strip()}")
    expected = prompt + json.loads(out.stdout)["text"]
    if report["prompt"] != expected:
        raise Failure(f"the app's generation {report['prompt']!r} differs from tscope-cli generate's {expected!r}")
    log(f"  Step, Step, Generate 16: {report['tokens'] - start} tokens, the same text as tscope-cli generate")
    # "measure decode speed": the two bars appear; at most 15 timed decode steps through the cache,
    # and at least one rerun of the whole sequence without it (as many as fit in 2 s).
    shot = app.screenshot()
    before = report["snapshot"]
    app.click("measure_decode")
    report = app.wait(lambda r: "decode_timing" in r["shown"] and r["snapshot"] > before and not r["busy"], "the decode-speed timing", 60)
    timing = report["shown"]["decode_timing"]
    if not (1 <= timing["without_cache_tokens"] <= timing["tokens"] <= 15 and timing["with_cache_ms"] > 0 and timing["without_cache_ms"] > 0):
        raise Failure(f"the decode-speed timing is not what was asked for: {timing}")
    app.pause(0.3)
    if not differs(shot, app.screenshot()):
        raise Failure("ticking 'measure decode speed' left the Next-token panel as it was")
    app.click("measure_decode")  # off again: later steps do not pay for it
    log(f"  measure decode speed: {timing['with_cache_ms']:.2f} ms/token with the cache over {timing['tokens']} tokens, "
        f"{timing['without_cache_ms']:.2f} without it over {timing['without_cache_tokens']}")


def open_model(app, path):
    app.click("model_path")
    app.key("ctrl+a")
    app.type(path)
    app.click("open_model")
    report = app.wait(lambda r: r["model"] == path and r["snapshot"] > 0 and not r["busy"], f"the model {path} to open", 60)
    log(f"opened {os.path.basename(path)}: n_ctx {report['n_ctx']}, {report['tokens']} tokens, {report['dropped']} dropped")
    return report


def click_every_control(app, panel):
    """Clicks a grid of points over the panel (the buttons, checkboxes, tabs and sliders under them)
    and drags across it at a few heights (sliders, plots, heatmaps)."""
    app.click(f"tab_{panel}")
    app.wait(lambda r: r["panel"] == panel, f"the {panel} panel", 10)
    x0, y0, x1, y1 = app.region("panel")
    step = 150  # about 50 points a panel (110 px clicked twice as many and cost CI 4 minutes; the monkey run clicks at random)
    clicks = 0
    for y in range(y0 + 12, y1 - 4, step):
        for x in range(x0 + 20, x1 - 4, step):
            app.click_at(x, y)
            clicks += 1
            report = app.report()
            if report["panel"] != panel and f"tab_{panel}" in report["regions"]:
                app.click(f"tab_{panel}")  # a click opened another model or panel: come back
    for y in range(y0 + 20, y1 - 4, step * 3):
        app.drag(x0 + 30, y, x0 + (x1 - x0) // 2, y)
        app.report()
    app.pause(0.2)
    return clicks


def main():
    tscope, cli, models_dir, out = sys.argv[1:5]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    models = [os.path.join(models_dir, m) for m in ["brown-small", "induction-2l", "brown-moe"]]

    def session(start):
        # Start-up with bytes the prompt box could never hold: invalid UTF-8 and control characters.
        app = start(["--model", models[1], "--prompt", b"x\xff\x01\x1b\t\xc3 bad bytes \xe2\x82"], "startup.log")
        report = app.settle()
        if report["tokens"] < 1:
            raise Failure(f"start-up prompt with invalid bytes: {report}")
        app.quit()
        log("start-up with invalid UTF-8 and control characters in --prompt: ok")

        app = start(["--model", models[0]])
        app.settle()
        visit_panels(app, "start-up")
        shortcuts(app)
        files_and_sessions(app)
        generation(app, cli, models[0])
        for i, model in enumerate(models):
            if i > 0:
                # A prompt that does not fit the next model is in the box when it opens.
                n = app.report()["n_ctx"]
                set_prompt(app, "The quick brown fox jumps over the lazy dog. " * (3 * n // 8 + 8), n, None, "a prompt past the context")
                report = open_model(app, model)
                if report["tokens"] != report["n_ctx"] or report["dropped"] < 1:
                    raise Failure(f"after switching to {model} the prompt should fill its context: {report}")
                visit_panels(app, f"after switching to {os.path.basename(model)}")
            prompt_edge_cases(app, cli, model)
        # Every control of every panel, on the MoE model (it has every panel).
        set_prompt(app, "The quick brown fox jumps over the lazy dog because it", None, 0, "a short prompt")
        total = 0
        for panel in PANELS:
            if f"tab_{panel}" in app.report()["regions"]:
                total += click_every_control(app, panel)
        log(f"clicked {total} points over every panel; worst gap between frames {app.worst_gap:.2f} s")
        app.quit()
        log(f"{app.actions} actions, worst gap between frames {app.worst_gap:.2f} s")

    code = drive(tscope, out, session, log, size=(1600, 1000))
    with open(os.path.join(out, "interactive.log"), "w") as f:
        f.write("\n".join(log_lines) + "\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
