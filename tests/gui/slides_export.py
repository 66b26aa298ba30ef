#!/usr/bin/python3
"""tscope --lesson NAME --export-slides DIR on a private Xvfb display (hands.Display: the server
picks a free display number itself, so parallel tests cannot race for one as with xvfb-run -a): one shipped lesson (the first in file
order that trains nothing, so it runs in seconds) gives DIR/step-01.png .. step-NN.png, one per
step, and DIR/index.html naming every step; an unknown lesson and an unwritable DIR give one line
and exit status 1.
usage: slides_export.py TSCOPE LESSONS_DIR OUT"""
import glob
import json
import os
import shutil
import subprocess
import sys

from hands import Display


def run(display, tscope, *args):
    env = dict(os.environ, DISPLAY=display.name)
    return subprocess.run([tscope, *args], env=env, capture_output=True, text=True, timeout=540)


def fail(message):
    print(f"FAIL: {message}", flush=True)
    return 1


def main():
    display = Display(1280, 720)
    try:
        return export(display, *sys.argv[1:4])
    finally:
        display.close()


def export(display, tscope, lessons_dir, out):
    shutil.rmtree(out, ignore_errors=True)
    lessons = []
    for path in sorted(glob.glob(os.path.join(lessons_dir, "*.json"))):
        with open(path) as f:
            lesson = json.load(f)
        if not any("train_preset" in step for step in lesson["steps"]):
            lessons.append((os.path.splitext(os.path.basename(path))[0], lesson))
    if not lessons:
        return fail(f"no shipped lesson without training in {lessons_dir}")
    name, lesson = lessons[0]
    done = run(display, tscope, "--lesson", name, "--export-slides", out)
    if done.returncode != 0:
        return fail(f"--export-slides {name} exited {done.returncode}: {done.stderr.strip()}")
    steps = len(lesson["steps"])
    pngs = sorted(os.path.basename(p) for p in glob.glob(os.path.join(out, "*.png")))
    if pngs != [f"step-{i:02d}.png" for i in range(1, steps + 1)]:
        return fail(f"{name} has {steps} steps; the PNGs: {pngs}")
    for png in pngs:
        with open(os.path.join(out, png), "rb") as f:
            if f.read(8) != b"\x89PNG\r\n\x1a\n" or os.path.getsize(os.path.join(out, png)) < 10000:
                return fail(f"{png} is not a full PNG")
    with open(os.path.join(out, "index.html"), encoding="utf-8") as f:
        html = f.read()
    for i, step in enumerate(lesson["steps"]):
        title = step["title"].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
        if f"step-{i + 1:02d}.png" not in html or title not in html:
            return fail(f"index.html lacks step {i + 1} ({step['title']!r})")
    print(f"{name}: {steps} slides and index.html in {out}")

    for args, what in ((["--lesson", "no-such-lesson", "--export-slides", out + "-unknown"], "an unknown lesson"),
                       (["--lesson", name, "--export-slides", "/dev/null/slides"], "an unwritable folder")):
        done = run(display, tscope, *args)
        lines = [line for line in done.stderr.strip().splitlines() if not line.startswith("tscope: running on the")]
        if done.returncode != 1 or len(lines) != 1 or not lines[0].startswith("tscope: "):
            return fail(f"{what}: exit {done.returncode}, stderr {done.stderr!r}")
        print(f"{what}: {lines[0]}")
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
