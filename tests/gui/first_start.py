#!/usr/bin/python3
"""The first start as a lecturer meets it, on screens smaller than the old fixed 1600x1000 window:
at 1024x768 and 1280x720 the window (opened without --window) fits the screen, and every toolbar
control, the status bar and the Training panel's Start lie on it without scrolling. What the window
remembers (user_preferences.h): after a quit, a start with no arguments opens the same model,
prompt, panel, text size and projector mode; a corrupt preferences file is one line and the
defaults; --fresh ignores the file. Messages keep their history (the line's tooltip). Export SVG
saves the Attention map as a vector figure whose every cell has the colour it has on screen, the
Scaling panel's plots with their lines, and the Experts panel's column charts with their values.
usage: first_start.py TSCOPE MODELS_DIR OUT TSCOPE_CLI"""
import glob
import json
import os
import xml.etree.ElementTree as ElementTree
import shutil
import subprocess
import sys
import time

from hands import Failure, drive, save_png

TOOLBAR = ["model_combo", "model_path", "open_model", "save_session", "load_session", "session_path", "projector", "text_size", "help",
           "save_png", "export_csv", "export_npy", "export_svg"]


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def on_screen(app, report, names, size):
    """Fails unless each named region lies inside the screen of `size`."""
    width, height = size
    for name in names:
        x0, y0, x1, y1 = app.region(name, report)
        if x0 < 0 or y0 < 0 or x1 > width + 1 or y1 > height + 1:
            raise Failure(f"'{name}' at {[round(v) for v in (x0, y0, x1, y1)]} is off the {width}x{height} screen")


def fits(app, size):
    """The window fits the screen; the toolbar, the status bar and, in the Training panel, Start are on it."""
    report = app.settle()
    display = report["display"]
    if display[0] > size[0] or display[1] > size[1]:
        raise Failure(f"a {display[0]:.0f}x{display[1]:.0f} window on a {size[0]}x{size[1]} screen")
    on_screen(app, report, TOOLBAR + ["status_bar"], size)
    app.key("alt+0")
    report = app.wait(lambda r: r["panel"] == "training" and "training_start" in r["regions"], "the Training panel", 10)
    on_screen(app, report, ["training_start"], size)
    log(f"  {size[0]}x{size[1]}: a {display[0]:.0f}x{display[1]:.0f} window; toolbar, status bar and Start on screen")
    return report


def svg_matches_screen(app, out):
    """Export SVG on the Attention panel: the attention map's SVG has a rect per cell whose fill is
    the colour of that cell's centre on screen (within 2 of 255 per channel), and its labels."""
    report = app.wait(lambda r: r["panel"] == "attention" and "attention_heatmap" in r["figures"] and not r["busy"], "the attention map", 10)
    app.click("export_svg")
    report = app.wait(lambda r: r["message"].startswith("exported ") and ".svg" in r["message"], "the SVG export", 10)
    image = app.screenshot()
    paths = glob.glob(os.path.join(out, "tscope-attention_heatmap-*.svg"))
    if len(paths) != 1:
        raise Failure(f"Export SVG wrote {paths}")
    ns = "{http://www.w3.org/2000/svg}"
    root = ElementTree.parse(paths[0]).getroot()
    cells = [e for e in root.iter(ns + "rect") if e.get("class") == "cell"]
    rows = 1 + max(int(e.get("data-row")) for e in cells)
    cols = 1 + max(int(e.get("data-col")) for e in cells)
    if len(cells) != rows * cols or rows != report["tokens"]:
        raise Failure(f"the SVG has {len(cells)} cells for {rows} x {cols}, the prompt {report['tokens']} tokens")
    labels = [e.text for e in root.iter(ns + "text") if e.get("class") == "row-label"]
    x0, y0, x1, y1 = app.region("attention_heatmap", report)
    worst = 0
    for e in cells:
        r, c = int(e.get("data-row")), int(e.get("data-col"))
        x, y = int(x0 + (c + 0.5) * (x1 - x0) / cols), int(y0 + (r + 0.5) * (y1 - y0) / rows)
        fill = e.get("fill")
        want = [int(fill[i:i + 2], 16) for i in (1, 3, 5)]
        worst = max(worst, max(abs(int(a) - b) for a, b in zip(image[y, x], want)))
    if worst > 2:
        raise Failure(f"an SVG cell's colour differs from the screen's by {worst} of 255")
    log(f"  Export SVG: {os.path.basename(paths[0])}, {rows} x {cols} cells as on screen (largest difference {worst}/255), "
        f"{len(labels)} row labels")


SVG = "{http://www.w3.org/2000/svg}"


def grid_as_svg(app, out):
    """Export SVG of the Attention panel's every layer x head (G): one figure holding every head of every
    held layer at full resolution (tokens x tokens cells each)."""
    app.key("g")
    report = app.wait(lambda r: r["grid"] and "attention_grid" in r["figures"], "the grid of every head", 10)
    app.click("export_svg")
    app.wait(lambda r: r["message"].startswith("exported ") and "attention_grid" in r["message"], "the grid exported", 10)
    root = ElementTree.parse(glob.glob(os.path.join(out, "tscope-attention_grid-*.svg"))[0]).getroot()
    cells = [e for e in root.iter(SVG + "rect") if e.get("class") == "cell"]
    panels = {e.get("data-panel") for e in cells}
    want = len(report["held_layers"]) * report["n_head"]
    if len(panels) != want or len(cells) != want * report["tokens"] ** 2:
        raise Failure(f"the grid's SVG has {len(panels)} panels and {len(cells)} cells, not {want} of {report['tokens']}^2")
    app.key("g")
    app.wait(lambda r: not r["grid"], "the single map again", 10)
    log(f"  Export SVG of every head: {want} panels of {report['tokens']} x {report['tokens']} cells in one figure")


def plots_as_svg(app, out):
    """Export SVG on the Scaling panel: every plot the report lists is a file with its lines as
    polylines and a title."""
    ns = SVG
    app.key("alt+9")
    report = app.wait(lambda r: r["panel"] == "scaling" and r["figures"] and not r["busy"], "the Scaling panel's plots", 10)
    figures = report["figures"]
    app.click("export_svg")
    app.wait(lambda r: r["message"].startswith("exported ") and r["message"].count(".svg") == len(figures), "the plots exported", 10)
    for name in figures:
        paths = glob.glob(os.path.join(out, f"tscope-{name}-*.svg"))
        if len(paths) != 1:
            raise Failure(f"the figure {name} was written as {paths}")
        root = ElementTree.parse(paths[0]).getroot()
        lines = [e for e in root.iter(ns + "polyline") if e.get("class") == "series"]
        if not lines or not root.find(ns + "title").text:
            raise Failure(f"{paths[0]}: {len(lines)} lines, title {root.find(ns + 'title').text!r}")
    log(f"  Export SVG on the Scaling panel: {len(figures)} plots ({', '.join(figures)}), each with its lines and title")


def columns_as_svg(app, out):
    """Export SVG on brown-moe's Experts panel: the expert-load chart's kept and dropped columns add
    up to every token's top-2 assignments."""
    ns = SVG
    app.key("alt+7")
    report = app.wait(lambda r: r["panel"] == "moe" and "expert_load" in r["figures"] and not r["busy"], "the Experts panel's charts", 10)
    app.click("export_svg")
    app.wait(lambda r: r["message"].startswith("exported ") and "expert_load" in r["message"], "the charts exported", 10)
    paths = glob.glob(os.path.join(out, "tscope-expert_load-*.svg"))
    columns = [e for e in ElementTree.parse(paths[0]).getroot().iter(ns + "rect") if e.get("class") == "column"]
    assigned = sum(float(e.get("data-value")) for e in columns)
    if assigned != 2 * report["tokens"]:
        raise Failure(f"the expert-load chart's columns add up to {assigned}, not 2 x {report['tokens']} tokens")
    log(f"  Export SVG on the Experts panel: expert_load's {len(columns)} columns hold all {assigned:.0f} top-2 assignments")


def bars_as_svg(app, out, cli):
    """Export SVG on the Next-token panel: the sampling stages' bar table, whose first column (the
    model's own softmax) holds the probabilities `tscope-cli forward --top` prints for the prompt."""
    app.key("alt+5")
    report = app.wait(lambda r: r["panel"] == "sampling" and "next_token_stages" in r["figures"] and not r["busy"], "the stage table", 10)
    app.click("export_svg")
    app.wait(lambda r: r["message"].startswith("exported ") and "next_token_stages" in r["message"], "the bars exported", 10)
    root = ElementTree.parse(glob.glob(os.path.join(out, "tscope-next_token_stages-*.svg"))[0]).getroot()
    bars = [e for e in root.iter(SVG + "rect") if e.get("class") == "bar" and e.get("data-col") == "0"]
    shown = [float(e.get("data-value")) for e in sorted(bars, key=lambda e: int(e.get("data-row")))][:-1]  # less "other tokens"
    forward = json.loads(subprocess.run([cli, "forward", "--model", report["model"], "--text", report["prompt"], "--top", str(len(shown))],
                                        capture_output=True, text=True, check=True).stdout)
    want = [t["prob"] for t in forward["next"]]
    if len(shown) != len(want) or max(abs(a - b) for a, b in zip(shown, want)) > 1e-5:
        raise Failure(f"the SVG's softmax bars {shown} differ from tscope-cli forward --top: {want}")
    log(f"  Export SVG on the Next-token panel: {len(shown)} bars per stage, the softmax column equal to tscope-cli forward --top")


def preferences_file(out):
    return os.path.join(out, "config", "tscope", "preferences.json")


def main():
    tscope, models_dir, out, cli = sys.argv[1:5]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    moe = os.path.join(models_dir, "brown-moe")
    prompt = "The lecturer opens the window again"

    def small_screen(start):
        size = (1024, 768)
        app = start(["--model", moe], fresh=False)  # no preferences file yet: the first start
        fits(app, size)
        save_png(os.path.join(out, "training_1024x768.png"), app.screenshot())
        columns_as_svg(app, out)
        # What a lecturer changes, then closes the window.
        app.key("alt+4")
        app.wait(lambda r: r["panel"] == "residual", "the Residual panel", 10)
        app.click("prompt")
        app.key("ctrl+a")
        app.type(prompt)
        app.defocus()
        app.key("ctrl+equal")
        app.key("p")
        before = app.wait(lambda r: r["prompt"] == prompt and r["projector"] and r["font_scale"] > 1, "the changes", 10)
        app.quit()
        saved = json.load(open(preferences_file(out)))
        if saved.get("model") != moe or saved.get("prompt") != prompt or saved.get("panel") != "residual" or not saved.get("projector"):
            raise Failure(f"the preferences file after the quit: {saved}")
        if not saved.get("window") or saved["window"]["width"] > size[0]:
            raise Failure(f"the saved window: {saved.get('window')}")
        log(f"  saved {preferences_file(out)}: model, prompt, panel, font {saved['font_scale']}, projector, window {saved['window']}")
        # A start with no arguments opens as it closed.
        app = start([], "restart.log", fresh=False)
        report = app.settle()
        got = {k: report[k] for k in ("model", "prompt", "panel", "font_scale", "projector")}
        want = {"model": moe, "prompt": prompt, "panel": "residual", "font_scale": before["font_scale"], "projector": True}
        if got != want:
            raise Failure(f"the restart: {got}, expected {want}")
        log(f"  the restart restored {got}")
        app.quit()
        # --fresh: the defaults, though the file is there.
        app = start([], "fresh.log", fresh=True)
        report = app.settle()
        if report["projector"] or report["prompt"] == prompt or report["font_scale"] != 1:
            raise Failure(f"--fresh kept a preference: projector {report['projector']}, font {report['font_scale']}, prompt {report['prompt']!r}")
        app.quit()
        # A corrupt file: one line naming it, the defaults, the app alive; the next quit rewrites it.
        with open(preferences_file(out), "w") as f:
            f.write('{"tscope_preferences": 1, "window": {"width": "wide"')
        app = start([], "corrupt.log", fresh=False)
        report = app.settle()
        if "preferences.json" not in report["message"] or "\n" in report["message"] or report["message_kind"] != "warning":
            raise Failure(f"a corrupt preferences file: message {report['message']!r} ({report['message_kind']})")
        if report["projector"]:
            raise Failure("a corrupt preferences file kept projector mode")
        # Messages by kind keep their history: the line's tooltip lists them with their time.
        app.key("alt+2")
        svg_matches_screen(app, out)
        grid_as_svg(app, out)
        plots_as_svg(app, out)
        bars_as_svg(app, out, cli)
        app.click("save_session")
        report = app.wait(lambda r: r["message"].startswith("saved ") and r["messages_kept"] >= 3, "a third message", 10)
        x0, y0, x1, y1 = app.region("message", report)
        app.hover((x0 + x1) / 2, (y0 + y1) / 2)
        app.pause(0.5)
        save_png(os.path.join(out, "messages_tooltip.png"), app.screenshot())
        log(f"  corrupt file: {report['message']!r} ({report['messages_kept']} messages kept)")
        app.quit()
        json.load(open(preferences_file(out)))  # rewritten whole at the quit

    def projector_screen(start):
        fits(start(["--model", os.path.join(models_dir, "brown-small"), "--projector"]), (1280, 720))

    return drive(tscope, out, small_screen, log, size=(1024, 768)) or drive(tscope, out, projector_screen, log, size=(1280, 720))


if __name__ == "__main__":
    sys.exit(main())
