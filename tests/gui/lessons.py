#!/usr/bin/python3
"""The lesson player driven as hands do (hands.py) at 1280x720: pick every shipped lesson from the
toolbar's picker and step through all its steps with PageDown, Space, Right and the Next button; at
each step the report's step advanced, the screen is not blank and differs from the step before, the
caption fits, the region it outlines is on screen (its sub-tab opened), no error; back one with PageUp; each check revealed with R agrees with the author;
Escape, another tab, Resume: the same step and panel. Then --lesson FILE --step N on the small test
lesson (its check revealed, End and Home), a step whose model is not installed (one line), and a broken lesson file: one line, the app alive. Screenshots per step are left in OUT.
usage: lessons.py TSCOPE LESSONS_DIR TEST_LESSON OUT"""
import glob
import os
import shutil
import sys
import time

import numpy as np

from hands import Failure, differs, drive, save_png

NEXT_KEYS = ["Next", "space", "Right", None]  # PageDown, Space, Right, and None: the Next button


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def lesson(report):
    return report.get("shown", {}).get("lesson", {})


def settle_step(app, name, step):
    """Waits until step `step` of lesson `name` is entered and its model has answered."""
    app.wait(lambda r: lesson(r).get("name") == name and lesson(r).get("step") == step and lesson(r).get("active")
             and not lesson(r).get("entering"), f"{name} step {step + 1} entered", 60)
    return app.settle(120)


def check_step(app, report, name, step, previous, out):
    """The step on screen: caption fits, no error, not blank, not the previous step's screen."""
    facts = lesson(report)
    if not facts.get("caption_fits"):
        raise Failure(f"{name} step {step + 1}: the caption does not fit: {facts}")
    if report["error"] or facts.get("warning") or facts.get("model_missing"):
        raise Failure(f"{name} step {step + 1}: error {report['error']!r}, lesson {facts}, message {report['message']!r}")
    if "lesson_caption" not in report["regions"]:
        raise Failure(f"{name} step {step + 1}: no caption bar")
    if facts.get("highlight") and facts.get("highlighted") != facts["highlight"]:  # e.g. on a sub-tab the step did not open
        raise Failure(f"{name} step {step + 1}: the region {facts['highlight']!r} to outline is not on screen (panel {report['panel']})")
    image = app.screenshot()
    save_png(os.path.join(out, f"{name}-step-{step + 1:02d}.png"), image)
    if np.std(image) < 5:
        raise Failure(f"{name} step {step + 1}: a blank screen (std {np.std(image):.1f})")
    if previous is not None and not differs(previous, image):
        raise Failure(f"{name} step {step + 1}: the screen did not change from the step before")
    return image


def reveal(app, name, step):
    """R reveals the live answer: it must be the author's."""
    app.key("r")
    report = app.wait(lambda r: lesson(r).get("revealed") and lesson(r).get("live_answer"), f"{name} step {step + 1}'s answer", 30)
    facts = lesson(report)
    if facts["live_answer"] != facts["answer"]:
        raise Failure(f"{name} step {step + 1}: the model says {facts['live_answer']!r}, the lesson {facts['answer']!r}")
    log(f"    check: the model says {facts['live_answer']!r} as the lesson does")


def present(app, name, out, turn):
    """Picks lesson `name` and walks it; returns the next turn of NEXT_KEYS."""
    app.click("lesson_picker")
    app.wait(lambda r: f"lesson_pick_{name}" in r["regions"], "the list of lessons", 10)
    app.click(f"lesson_pick_{name}")
    report = settle_step(app, name, 0)
    steps = lesson(report)["steps"]
    log(f"  {name}: {steps} steps")
    previous = None
    for step in range(steps):
        report = settle_step(app, name, step)
        previous = check_step(app, report, name, step, previous, out)
        if lesson(report).get("has_check"):
            reveal(app, name, step)
        if step + 1 < steps:
            key = NEXT_KEYS[turn % len(NEXT_KEYS)]
            turn += 1
            if key:
                app.key(key)
            else:
                app.click("lesson_next")
            app.wait(lambda r: lesson(r).get("step") == step + 1, f"{name}: {key or 'Next button'} to step {step + 2}", 10)
    if steps > 1:
        app.key("Prior")  # PageUp
        settle_step(app, name, steps - 2)
    # Free play and back: Escape, another tab, Resume.
    report = app.settle()
    step, panel = lesson(report)["step"], report["panel"]
    app.key("Escape")
    app.wait(lambda r: not lesson(r).get("active") and "lesson_resume" in r["regions"] and "lesson_caption" not in r["regions"],
             "the lesson left", 10)
    other = "prompt" if panel != "prompt" else "attention"
    app.click(f"tab_{other}")
    app.wait(lambda r: r["panel"] == other, f"the {other} tab in free play", 10)
    app.click("lesson_resume")
    report = app.wait(lambda r: lesson(r).get("active") and r["panel"] == panel, "the lesson resumed", 30)
    if lesson(report)["step"] != step:
        raise Failure(f"{name}: resumed at step {lesson(report)['step'] + 1}, left at {step + 1}")
    app.key("Escape")
    app.wait(lambda r: not lesson(r).get("active"), "the lesson left", 10)
    return turn


def walk(start, lessons, test_lesson, out):
    app = start(["--window", "1280x720"])
    app.settle(120)
    app.defocus()
    turn = 0
    for name in lessons:
        turn = present(app, name, out, turn)
    app.quit()

    # --lesson FILE --step N: the test lesson from its second step.
    app = start(["--window", "1280x720", "--lesson", test_lesson, "--step", "2"], "app_file.log")
    report = settle_step(app, "gui_small", 1)
    check_step(app, report, "gui_small", 1, None, out)
    reveal(app, "gui_small", 1)
    app.key("End")
    settle_step(app, "gui_small", lesson(report)["steps"] - 1)
    app.key("Home")
    settle_step(app, "gui_small", 0)
    app.quit()

    # A step whose model is not installed: one line, the step shown on the model that is open.
    missing = os.path.join(out, "missing_model.json")
    with open(missing, "w") as f:
        f.write('{"format": "tscope-lesson", "version": 1, "title": "Missing", "lecture": "The Transformer", "summary": "A test.", "model": "induction-2l", '
                '"steps": [{"title": "One", "caption": "On any model."}, {"title": "Two", "caption": "Needs a model.", '
                '"model": "no-such-model", "panel": "attention"}]}')
    app = start(["--window", "1280x720", "--lesson", missing, "--step", "2"], "app_missing.log")
    report = settle_step(app, "missing_model", 1)
    if not lesson(report)["model_missing"] or "needs model no-such-model, which is not installed" not in report["message"]:
        raise Failure(f"a missing model: message {report['message']!r}, lesson {lesson(report)}")
    log(f"  missing model: {report['message']}")
    app.quit()

    broken = os.path.join(out, "broken_lesson.json")
    with open(broken, "w") as f:
        f.write('{"format": "tscope-lesson", "version": 1, "title": "Broken", "steps": [{"title": 3}]}')
    app = start(["--window", "1280x720", "--lesson", broken], "app_broken.log")
    report = app.wait(lambda r: "broken_lesson" in r["message"], "the broken lesson's line", 30)
    if "\n" in report["message"] or lesson(report):
        raise Failure(f"the broken lesson: message {report['message']!r}, lesson {lesson(report)}")
    log(f"  broken lesson: {report['message']}")
    app.pause(1.0)
    app.settle()
    app.quit()


def main():
    tscope, lessons_dir, test_lesson, out = sys.argv[1:5]
    test_lesson = os.path.abspath(test_lesson)  # the app runs in OUT
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    lessons = sorted(os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(lessons_dir, "*.json")))
    if not lessons:
        log(f"FAIL: no lessons in {lessons_dir}")
        return 1
    log(f"lessons: {lessons}")
    return drive(tscope, out, lambda start: walk(start, lessons, test_lesson, out), log)


if __name__ == "__main__":
    sys.exit(main())
