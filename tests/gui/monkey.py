#!/usr/bin/python3
"""The monkey test: a seeded run of random clicks, drags, key presses, typing and pastes over the
whole tscope window (every panel, the toolbar, the prompt, the model picker) for a given time. It
fails on a crash (the process exits) or a hang (the UI thread draws no frame for 1 s: hands.py).
Every action is logged, so a failure can be replayed with the same seed.
usage: monkey.py TSCOPE MODELS_DIR OUT [--seed N] [--seconds S]"""
import argparse
import os
import random
import shutil
import sys
import time

from hands import App, Display, Failure, save_png

# Keys a user may press; Ctrl+Q (quit) is left out: the run must go on.
KEYS = ["Left", "Right", "Up", "Down", "a", "s", "g", "l", "p", "F1", "shift+slash", "ctrl+equal", "ctrl+minus", "Return",
        "BackSpace", "Delete", "Escape", "Tab", "space", "Home", "End", "Page_Up", "Page_Down", "ctrl+a", "ctrl+c", "ctrl+v",
        "ctrl+z", "ctrl+x"] + [f"alt+{d}" for d in range(1, 10)]
WORDS = ["the", "attention", "query", "key", "value", "softmax", "naïve", "漢字", "🙂", "0", "-1", "1e9", "nan", "  ", "\\", "##", "%s%n"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("tscope")
    parser.add_argument("models")
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=120)
    options = parser.parse_args()
    shutil.rmtree(options.out, ignore_errors=True)
    os.makedirs(options.out)
    rng = random.Random(options.seed)
    display = Display()
    app = App(display, options.tscope, options.out, ["--model", os.path.join(options.models, "brown-small")])
    journal = open(os.path.join(options.out, "monkey.log"), "w")
    models = sorted(os.path.join(options.models, m) for m in os.listdir(options.models)
                    if os.path.exists(os.path.join(options.models, m, "config.json")))
    started = time.monotonic()
    counts = {}
    try:
        app.settle()
        width, height = 1600, 1000
        while time.monotonic() - started < options.seconds:
            roll = rng.random()
            if roll < 0.45:
                x, y = rng.randrange(width), rng.randrange(height)
                action = f"click {x} {y}"
                app.click_at(x, y, 1 if rng.random() < 0.95 else 3)
            elif roll < 0.6:
                x0, y0 = rng.randrange(width), rng.randrange(height)
                x1, y1 = min(width - 1, max(0, x0 + rng.randint(-400, 400))), min(height - 1, max(0, y0 + rng.randint(-100, 100)))
                action = f"drag {x0} {y0} {x1} {y1}"
                app.drag(x0, y0, x1, y1)
            elif roll < 0.85:
                key = rng.choice(KEYS)
                action = f"key {key}"
                app.key(key, hold=rng.choice([0.02, 0.06, 0.2]))
            elif roll < 0.93:
                text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6)))
                action = f"type {text!r}"
                app.type(text)
            elif roll < 0.97:
                n = rng.choice([1, 50, 400, 3000])
                text = " ".join(rng.choice(WORDS) for _ in range(n))
                action = f"paste {n} words"
                app.paste(text)
            else:
                model = rng.choice(models)
                action = f"open model {os.path.basename(model)}"
                app.click("model_path")
                app.key("ctrl+a")
                app.type(model)
                app.key("Return")
            kind = action.split()[0]
            counts[kind] = counts.get(kind, 0) + 1
            journal.write(f"{time.monotonic() - started:7.2f} {action}\n")
            journal.flush()
            app.pause(rng.choice([0.0, 0.05, 0.2]))
        app.pause(1.0)
        print(f"PASS: {app.actions} actions in {time.monotonic() - started:.0f} s ({counts}); worst gap between frames "
              f"{app.worst_gap:.2f} s; seed {options.seed}")
        app.quit(timeout=60)
        return 0
    except Failure as failure:
        print(f"FAIL (seed {options.seed}, {time.monotonic() - started:.1f} s): {failure}")
        print(f"the actions are in {os.path.join(options.out, 'monkey.log')}")
        try:
            save_png(os.path.join(options.out, "failure.png"), app.screenshot())
        except Exception:
            pass
        return 1
    finally:
        app.kill()
        display.close()
        journal.close()


if __name__ == "__main__":
    sys.exit(main())
