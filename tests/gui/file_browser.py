#!/usr/bin/python3
"""The file browser (app/gui/widgets/file_browser.h) as hands use it: Ctrl+O opens it on the shipped
models with model folders marked; the keyboard walks it (Down, Enter opens brown-moe, Backspace goes
up and selects the folder it came from, Right enters, Esc cancels) while the app's own shortcuts
stay off; the session's "..." saves a session under a typed name and loads it back by a double
click; the lesson picker's "Open a lesson file..." presents a lesson; a typed folder that is not
there is one line and the dialog stays; the recent files are listed and kept in the preferences
across a restart.
usage: file_browser.py TSCOPE MODELS_DIR OUT"""
import json
import os
import shutil
import sys
import time

from hands import Failure, drive, save_png


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def browser(report):
    return report["file_browser"]


def names(report):
    return [e["name"] for e in browser(report)["entries"]]


def select(app, name, timeout=5):
    """Selects the entry `name` with Home and Down, as a keyboard user would."""
    report = app.settle()
    if name not in names(report):
        raise Failure(f"'{name}' is not listed in {browser(report)['folder']}: {names(report)}")
    app.key("Home")
    for _ in range(names(report).index(name)):
        app.key("Down")
    want = names(report).index(name)
    return app.wait(lambda r: browser(r)["selected"] == want, f"'{name}' selected", timeout)


def main():
    tscope, models_dir, out = sys.argv[1:4]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    models_dir = os.path.realpath(models_dir)
    lessons_dir = os.path.join(os.path.dirname(models_dir), "lessons")
    small = os.path.join(models_dir, "brown-small")
    moe = os.path.join(models_dir, "brown-moe")

    def session(start):
        app = start(["--model", small], fresh=False)
        report = app.settle()

        # Ctrl+O: the browser on the open model's folder, model folders marked.
        app.key("ctrl+o")
        report = app.wait(lambda r: browser(r)["open"] and browser(r)["purpose"] == "model", "the model browser", 5)
        b = browser(report)
        if b["folder"] != models_dir:
            raise Failure(f"the model browser opened in {b['folder']}, not {models_dir}")
        kinds = {e["name"]: e["kind"] for e in b["entries"]}
        if kinds.get("brown-small") != "model" or kinds.get("brown-moe") != "model":
            raise Failure(f"model folders not marked: {kinds}")
        save_png(os.path.join(out, "browser_models.png"), app.screenshot())
        log(f"  Ctrl+O: {b['folder']}, {len(b['entries'])} entries, {sum(k == 'model' for k in kinds.values())} models")

        # The app's shortcuts are off while it is open (P would toggle projector mode).
        projector = report["projector"]
        app.key("p")
        report = app.settle()
        if report["projector"] != projector or not browser(report)["open"]:
            raise Failure("P reached the app through the file browser")

        # Backspace goes up and selects where it came from; Right enters again.
        app.key("BackSpace")
        report = app.wait(lambda r: browser(r)["folder"] == os.path.dirname(models_dir), "the parent folder", 5)
        if names(report)[browser(report)["selected"]] != "models":
            raise Failure(f"going up selected {names(report)[browser(report)['selected']]}, not the folder it came from")
        app.key("Right")
        app.wait(lambda r: browser(r)["folder"] == models_dir, "back in the models folder", 5)

        # Down ... Enter on brown-moe opens it.
        select(app, "brown-moe")
        app.key("Return")
        report = app.wait(lambda r: not browser(r)["open"] and r["model"] == moe and not r["opening"], "brown-moe opened from the browser", 30)
        if moe not in report["recent_files"]:
            raise Failure(f"the recent files lack {moe}: {report['recent_files']}")
        log(f"  keyboard: Backspace went up, Right came back, Down to brown-moe and Enter opened {report['model']}")

        # Esc cancels; a typed folder that is not there is one line and the dialog stays.
        app.click("browse_model")
        app.wait(lambda r: browser(r)["open"], "the browser again", 5)
        app.click("browser_folder")
        app.key("ctrl+a")
        app.type("/no/such/folder")
        app.key("Return")
        report = app.wait(lambda r: "/no/such/folder" in browser(r)["problem"], "the bad folder's line", 5)
        if "\n" in browser(report)["problem"] or not browser(report)["open"] or browser(report)["folder"] != models_dir:
            raise Failure(f"a bad folder: {browser(report)}")
        app.click("browser_entry_0")  # leaves the folder field
        app.key("Escape")
        report = app.wait(lambda r: not browser(r)["open"], "Esc to close it", 5)
        if report["model"] != moe:
            raise Failure(f"Esc changed the model to {report['model']}")
        log(f"  a typed folder that is not there: {browser(report)['problem']!r}; Esc closed it")

        # The session's "...": save under a typed name, then load it back with a double click.
        app.click("browse_session")
        report = app.wait(lambda r: browser(r)["open"] and browser(r)["purpose"] == "session", "the session browser", 5)
        if browser(report)["folder"] != os.path.realpath(out):
            raise Failure(f"the session browser opened in {browser(report)['folder']}, not the working folder {out}")
        app.click("browser_name")
        app.key("ctrl+a")
        app.type("class-1")
        app.key("Return")
        saved = os.path.join(os.path.realpath(out), "class-1.json")
        report = app.wait(lambda r: r["message"] == "saved " + saved, "the session saved", 5)
        if json.load(open(saved)).get("tscope_session") != 1:
            raise Failure(f"{saved} is not a session file")
        app.click("browse_session")
        report = app.wait(lambda r: browser(r)["open"] and "class-1.json" in names(r), "the saved session listed", 5)
        row = names(report).index("class-1.json")
        if browser(report)["entries"][row]["kind"] != "session":
            raise Failure(f"class-1.json listed as {browser(report)['entries'][row]['kind']}")
        x0, y0, x1, y1 = app.region(f"browser_entry_{row}", report)
        app.double_click_at((x0 + x1) / 2, (y0 + y1) / 2)
        report = app.wait(lambda r: r["message"] == "loaded " + saved and not browser(r)["open"], "the session loaded by a double click", 5)
        log(f"  session: saved and loaded {saved}")

        # The lesson picker's "Open a lesson file...".
        app.click("lesson_picker")
        app.wait(lambda r: "lesson_browse" in r["regions"], "the lesson picker open", 5)
        app.click("lesson_browse")
        report = app.wait(lambda r: browser(r)["open"] and browser(r)["purpose"] == "lesson", "the lesson browser", 5)
        if browser(report)["folder"] != lessons_dir or any(e["kind"] != "lesson" for e in browser(report)["entries"]):
            raise Failure(f"the lesson browser: {browser(report)}")
        select(app, "sampling.json")
        app.key("Return")
        report = app.wait(lambda r: r["shown"].get("lesson", {}).get("name") == "sampling" and not browser(r)["open"], "the lesson presented", 30)
        log(f"  lesson: sampling.json presented from the browser")
        app.key("Escape")  # leaves the lesson
        app.quit()

        # The recent files outlive the window (a lesson's steps may open models of their own, which
        # are recent too): listed in the sidebar after a restart.
        prefs = json.load(open(os.path.join(out, "config", "tscope", "preferences.json")))
        recent = prefs.get("recent_files", [])
        lesson_file = os.path.join(lessons_dir, "sampling.json")
        if not all(path in recent for path in (lesson_file, saved, moe)) or recent.index(lesson_file) > recent.index(saved):
            raise Failure(f"the recent files kept: {recent}")
        app = start(["--model", small], "restart.log", fresh=False)
        app.settle()
        app.key("ctrl+o")
        region = f"browser_recent_{recent.index(moe)}"
        report = app.wait(lambda r: browser(r)["open"] and region in r["regions"], "the recent model in the sidebar", 5)
        save_png(os.path.join(out, "browser_recent.png"), app.screenshot())
        app.click(region)
        app.wait(lambda r: not browser(r)["open"] and r["model"] == moe, "the recent model opened", 30)
        log(f"  recent files kept across a restart: {recent}")
        app.quit()

    return drive(tscope, out, session, log, size=(1280, 720))


if __name__ == "__main__":
    sys.exit(main())
