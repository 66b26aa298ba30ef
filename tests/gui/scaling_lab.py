#!/usr/bin/python3
"""The Scaling panel's scaling lab driven as hands do (hands.py) at 1280x720: open the Scaling tab and
each sub-tab (Published laws, Your runs, Emergence) and check each drew; start the "tiny" preset into
a folder under OUT (TSCOPE_SWEEPS_DIR and HOME point there: nothing is written to the real home), see
the progress advance, pause (it stops), resume, let it finish (every run a point on the plots, the
plots changed); Save CSV (runs.csv has a row per run, fits.csv is there) and Save PNG (the file
decodes and is not blank, check_png); then open a broken sweep.json: one line of error, the app
alive and the runs on screen kept; extend the finished sweep with a size (a bad one is one red line)
and resume it; start tiny on a text file (a Latin-1 one is refused in one line). Screenshots are
left in OUT.
usage: scaling_lab.py TSCOPE CHECK_PNG MODELS_DIR OUT"""
import csv
import os
import shutil
import subprocess
import sys
import time

from hands import Failure, differs, drive, save_png


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def runs(report):
    return report.get("shown", {}).get("scaling_runs", {})


def type_into(app, field, text, enter=False):
    app.click(field)
    app.key("ctrl+a")
    app.type(text)
    if enter:
        app.key("Return")
    app.defocus()


def open_train(app):
    """Unfolds "Train a sweep" (folded at 720p) so Start, the text file and Extend are on screen."""
    if "scaling_start" not in app.report()["regions"]:
        app.click("scaling_train_header")
        app.wait(lambda r: "scaling_start" in r["regions"] and "scaling_extend" in r["regions"], "Train a sweep unfolded", 10)


def sub_tabs(app, out):
    """Each sub-tab draws: the panel's pixels change from one to the next and none is blank."""
    app.settle()
    app.click("tab_scaling")
    report = app.wait(lambda r: r["panel"] == "scaling" and "scaling_tab_runs" in r["regions"], "the Scaling tab", 10)
    app.wait(lambda r: "scaling_isoflop" in r["regions"], "the published laws", 10)
    published = app.crop(app.screenshot(), "panel")
    save_png(os.path.join(out, "published.png"), app.screenshot())
    app.click("scaling_tab_runs")
    report = app.wait(lambda r: "scaling_runs_n" in r["regions"] and runs(r), "the Your runs tab", 10)
    facts = runs(report)
    log(f"  your runs: {facts}")
    if facts["shipped"] > 0:  # the first shipped sweep opens by itself, read-only
        report = app.wait(lambda r: runs(r).get("points_drawn", 0) > 0, "the shipped sweep's points", 30)
        if not runs(report)["read_only"]:
            raise Failure(f"a shipped sweep opened writable: {runs(report)}")
    report = app.settle()
    shot = app.screenshot()
    if not differs(published, app.crop(shot, "panel", report)):
        raise Failure("the Your runs tab looks like the published laws")
    plots = app.crop(shot, "scaling_runs_plots", report)
    if plots.std() < 5:
        raise Failure("the plots of Your runs are blank")
    save_png(os.path.join(out, "runs_first.png"), shot)
    app.click("scaling_tab_emergence")
    report = app.wait(lambda r: "scaling_emergence_exact" in r["regions"], "the Emergence tab", 10)
    emergence = report["shown"].get("scaling_emergence", {})
    log(f"  emergence: {emergence}")
    if not emergence.get("runs") and "\n" in emergence.get("error", "\n"):
        raise Failure(f"the Emergence tab shows neither runs nor one line of why: {emergence}")
    save_png(os.path.join(out, "emergence.png"), app.screenshot())
    app.click("scaling_tab_runs")
    report = app.wait(lambda r: "scaling_train_header" in r["regions"], "back to Your runs", 10)
    if "scaling_start" in report["regions"]:  # folded by default at 720p: the plots keep their room
        raise Failure("'Train a sweep' is unfolded at 1280x720")
    plots = report["regions"]["scaling_runs_plots"]
    open_train(app)
    report = app.settle()
    if report["regions"]["scaling_runs_plots"][1] <= plots[1]:
        raise Failure(f"the plots did not move down when 'Train a sweep' unfolded: {plots} then {report['regions']['scaling_runs_plots']}")
    return report


def run_tiny(app, out):
    """Starts the tiny preset, pauses it, resumes it and lets it finish."""
    before = app.crop(app.screenshot(), "scaling_runs_plots")
    app.click("scaling_preset")
    app.wait(lambda r: "scaling_preset_tiny" in r["regions"], "the list of presets", 10)
    app.click("scaling_preset_tiny")
    directory = os.path.join(out, "sweeps", "tiny-test")
    type_into(app, "scaling_start_dir", directory)
    app.click("scaling_start")
    report = app.wait(lambda r: runs(r).get("status") == "running" and runs(r).get("path") == directory, "the sweep to start", 30)
    report = app.wait(lambda r: runs(r).get("step", 0) >= 2 or runs(r).get("runs_done", 0) >= 1, "the first steps", 60)
    log(f"  running: {runs(report)}")
    app.click("scaling_pause")
    report = app.wait(lambda r: runs(r).get("status") in ("paused", "done"), "the pause", 20)
    if runs(report)["status"] == "done":
        raise Failure("the tiny sweep finished before Pause could stop it (too fast to test a pause)")
    paused = runs(report)
    app.pause(1.0)
    later = runs(app.report())
    if (later["step"], later["runs_done"]) != (paused["step"], paused["runs_done"]) or later["status"] != "paused":
        raise Failure(f"the sweep moved while paused: {paused} then {later}")
    log(f"  paused: {paused}")
    save_png(os.path.join(out, "paused.png"), app.screenshot())
    app.click("scaling_resume")
    app.wait(lambda r: runs(r).get("status") == "running", "the resume", 20)
    report = app.wait(lambda r: runs(r).get("status") == "done", "the tiny sweep to finish", 300)
    facts = runs(report)
    if facts["runs_done"] != facts["runs"] or facts["runs"] < 2:
        raise Failure(f"the finished sweep: {facts}")
    report = app.wait(lambda r: runs(r).get("points_drawn") == facts["runs"], "every run on the plots", 10)
    report = app.settle()
    shot = app.screenshot()
    if not differs(before, app.crop(shot, "scaling_runs_plots", report)):
        raise Failure("the plots did not change when the sweep ran")
    save_png(os.path.join(out, "finished.png"), shot)
    log(f"  finished: {runs(report)}")
    if "scaling_page_compute" in report["regions"]:  # a short window shows two plots at a time
        laws = app.crop(shot, "scaling_runs_plots", report)
        app.click("scaling_page_compute")
        report = app.wait(lambda r: "scaling_runs_nopt" in r["regions"], "the compute plots", 10)
        report = app.settle()
        shot = app.screenshot()
        if not differs(laws, app.crop(shot, "scaling_runs_plots", report)):
            raise Failure("the compute page looks like the laws page")
        save_png(os.path.join(out, "finished_compute.png"), shot)
        app.click("scaling_isoflop_toggle")
        app.settle()
        save_png(os.path.join(out, "finished_isoflop.png"), app.screenshot())
        app.click("scaling_page_laws")
        app.wait(lambda r: "scaling_runs_n" in r["regions"], "the laws page again", 10)
    return directory, runs(report)


def export(app, out, check_png, facts):
    folder = os.path.join(out, "export")
    type_into(app, "scaling_export_dir", folder)
    app.click("scaling_save_csv")
    report = app.wait(lambda r: runs(r).get("export_message", "").startswith("wrote"), "Save CSV", 10)
    with open(os.path.join(folder, "runs.csv")) as f:
        rows = list(csv.reader(f))
    if len(rows) != facts["runs"] + 1 or rows[0][0] != "name":
        raise Failure(f"runs.csv has {len(rows)} rows for {facts['runs']} runs: {rows[:2]}")
    if not os.path.exists(os.path.join(folder, "fits.csv")):
        raise Failure(f"no fits.csv: {runs(report)}")
    app.click("scaling_save_png")
    report = app.wait(lambda r: runs(r).get("export_message", "").startswith("saved"), "Save PNG", 10)
    if report.get("message_kind") != "info":  # the status bar says "saved ..." as news, not in the error colour
        raise Failure(f"the status bar's 'saved' line is a {report.get('message_kind')}: {report.get('message')}")
    png = os.path.join(folder, "plots.png")
    result = subprocess.run([check_png, png, "--not-blank"], capture_output=True, text=True)
    if result.returncode != 0:
        raise Failure(f"{png}: {result.stderr.strip()}")
    if [name for name in os.listdir(folder) if "tmp" in name]:
        raise Failure(f"a temporary file left in {folder}: {os.listdir(folder)}")
    log(f"  exported: {runs(report)['export_message']}")


def broken_sweep(app, out, facts):
    broken = os.path.join(out, "broken")
    os.makedirs(broken, exist_ok=True)
    path = os.path.join(broken, "sweep.json")
    with open(path, "w") as f:
        f.write('{"format": "tscope-sweep", "version": 1, "spec": {')
    type_into(app, "scaling_path", path, enter=True)
    report = app.wait(lambda r: runs(r).get("status") == "error", "the broken sweep's error", 10)
    shown = runs(report)
    if "sweep.json" not in shown["message"] or "\n" in shown["message"] or shown["points_drawn"] != facts["runs"]:
        raise Failure(f"after the broken sweep: {shown}")
    log(f"  broken sweep: {shown['message']}")
    save_png(os.path.join(out, "broken.png"), app.screenshot())


def extend_sweep(app, out, directory):
    """Extend on the finished sweep: a size that does not parse is one red line; a new size adds its
    runs (paused: the finished ones stay), Resume trains only those, and they reach the plots."""
    report = app.wait(lambda r: runs(r).get("status") == "done" and runs(r).get("path") == directory, "the finished sweep", 30)
    before = runs(report)
    type_into(app, "scaling_extend_sizes", "L1-dxx")
    app.click("scaling_extend")
    report = app.wait(lambda r: "L1-dxx" in runs(r).get("extend_error", ""), "the size's error", 10)
    if "\n" in runs(report)["extend_error"] or runs(report)["runs"] != before["runs"]:
        raise Failure(f"after a bad size: {runs(report)}")
    log(f"  bad size: {runs(report)['extend_error']}")
    type_into(app, "scaling_extend_sizes", "L1-d40")
    app.click("scaling_extend")
    report = app.wait(lambda r: runs(r).get("runs", 0) > before["runs"] and runs(r).get("status") == "paused", "the extended grid", 20)
    grown = runs(report)
    if grown["runs_done"] != before["runs_done"] or grown["extend_error"]:
        raise Failure(f"extending changed the finished runs: {before} then {grown}")
    save_png(os.path.join(out, "extended.png"), app.screenshot())
    app.click("scaling_resume")
    report = app.wait(lambda r: runs(r).get("status") == "done", "the new runs to finish", 300)
    facts = runs(report)
    if facts["runs_done"] != grown["runs"]:
        raise Failure(f"the extended sweep: {facts}")
    app.wait(lambda r: runs(r).get("points_drawn") == grown["runs"], "the new runs on the plots", 10)
    log(f"  extended: {before['runs']} -> {facts['runs']} runs")


def text_sweep(app, out):
    """Start the tiny preset on a text file of our own: a file that is not UTF-8 is one line naming it
    (nothing written); a good one trains, and the sweep's data is that file."""
    words = "light moves through glass and water slows it bends towards the normal while sound needs air".split()
    path = os.path.join(out, "notes.txt")
    with open(path, "w") as f:
        for p in range(300):
            f.write(" ".join(words[(p * 7 + i * 5) % len(words)] for i in range(40)) + ".\n\n")
    latin1 = os.path.join(out, "latin1.txt")
    with open(latin1, "wb") as f:
        f.write(b"caf\xe9 au lait")
    refused = os.path.join(out, "sweeps", "latin1-sweep")
    type_into(app, "scaling_text_file", latin1)
    type_into(app, "scaling_start_dir", refused)
    app.click("scaling_start")
    report = app.wait(lambda r: runs(r).get("status") == "error" and "latin1.txt" in runs(r).get("message", ""), "the bad file's error", 20)
    if "UTF-8" not in runs(report)["message"] or os.path.exists(refused):
        raise Failure(f"after a Latin-1 file: {runs(report)} (exists: {os.path.exists(refused)})")
    log(f"  bad text file: {runs(report)['message']}")
    directory = os.path.join(out, "sweeps", "notes-sweep")
    type_into(app, "scaling_text_file", path)
    type_into(app, "scaling_start_dir", directory)
    app.click("scaling_start")
    report = app.wait(lambda r: runs(r).get("path") == directory and runs(r).get("status") == "done", "the text-file sweep to finish", 300)
    facts = runs(report)
    if facts["spec_text_path"] != os.path.abspath(path) or facts["runs_done"] != facts["runs"]:
        raise Failure(f"the text-file sweep: {facts}")
    report = app.wait(lambda r: runs(r).get("points_drawn") == facts["runs"], "the text-file runs on the plots", 10)
    save_png(os.path.join(out, "text_file.png"), app.screenshot())
    log(f"  text-file sweep: {facts['runs']} runs on {facts['spec_text_path']}")


def session(start, out, models_dir, check_png):
    app = start(["--window", "1280x720", "--model", os.path.join(models_dir, "induction-2l")])
    sub_tabs(app, out)
    directory, facts = run_tiny(app, out)
    export(app, out, check_png, facts)
    broken_sweep(app, out, facts)
    type_into(app, "scaling_path", directory, enter=True)  # the finished sweep again, from its directory
    app.wait(lambda r: runs(r).get("status") == "done" and runs(r).get("path") == directory, "the finished sweep reopened", 30)
    extend_sweep(app, out, directory)
    text_sweep(app, out)
    app.click("scaling_tab_emergence")
    app.wait(lambda r: "scaling_emergence_loss" in r["regions"], "the Emergence tab again", 10)
    app.check_running()
    app.quit()


def main():
    tscope, check_png, models_dir, out = sys.argv[1:5]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    home = os.path.join(out, "home")
    os.makedirs(home)
    os.environ["HOME"] = home
    os.environ["TSCOPE_SWEEPS_DIR"] = os.path.join(out, "sweeps")
    return drive(tscope, out, lambda start: session(start, out, models_dir, check_png), log)


if __name__ == "__main__":
    sys.exit(main())
