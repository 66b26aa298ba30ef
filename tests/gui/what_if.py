#!/usr/bin/python3
"""The toolbar's What-if menu as hands use it, on induction-2l: one click takes the causal mask out,
the Attention map changes, the status bar names it and the next token is the one `tscope-cli forward
--what-if no-causal-mask` ranks first; an edit of the prompt keeps it on; the shuffle shows the order
the model reads the tokens in; "All back on" restores the model (the first screen again); a what-if
stays on through a switch to brown-small.
usage: what_if.py TSCOPE TSCOPE_CLI MODELS_DIR OUT"""
import json
import os
import shutil
import subprocess
import sys
import time

from hands import Failure, differs, drive, save_png


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def cli_top(cli, model, text, what_if):
    out = subprocess.run([cli, "forward", "--backend", "cpu", "--model", model, "--text", text, "--top", "1"] +
                         (["--what-if", what_if] if what_if else []), capture_output=True, check=True).stdout
    return json.loads(out)["next"][0]["id"]


def main():
    tscope, cli, models_dir, out = sys.argv[1:5]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    models_dir = os.path.realpath(models_dir)
    induction = os.path.join(models_dir, "induction-2l")
    small = os.path.join(models_dir, "brown-small")
    prompt = "ZXqwertyuiopqwert"

    def session(start):
        app = start(["--model", induction, "--prompt", prompt])
        report = app.settle()
        if report["what_ifs"] != "" or "what_if" not in report["regions"]:
            raise Failure(f"the What-if button is missing or something is on: {report['what_ifs']}")
        clean = app.screenshot()
        clean_top = report["next_top_id"]
        if clean_top != cli_top(cli, induction, prompt, ""):
            raise Failure("the clean next token differs from tscope-cli forward's")

        # One click: no causal mask.
        app.click("what_if")
        app.wait(lambda r: "what_if_no-causal-mask" in r["regions"], "the What-if menu", 10)
        app.click("what_if_no-causal-mask")
        report = app.wait(lambda r: r["what_if_snapshot"] == "no-causal-mask" and not r["busy"], "the unmasked forward", 30)
        if "what_if_status" not in report["regions"]:
            raise Failure("the status bar does not name the what-if")
        want = cli_top(cli, induction, prompt, "no-causal-mask")
        if report["next_top_id"] != want:
            raise Failure(f"next token {report['next_top_id']} without the mask, tscope-cli forward says {want}")
        unmasked = app.screenshot()
        if not differs(clean, unmasked):
            raise Failure("taking the causal mask out changed nothing on screen")
        save_png(os.path.join(out, "no_causal_mask.png"), unmasked)
        log(f"  no causal mask: next token {clean_top} -> {want}, as tscope-cli forward --what-if")

        # An edit keeps it on (a click on the status bar closes the menu).
        app.click("status_bar")
        app.click("prompt")
        app.key("End")
        app.type("yu")
        # Typed a key at a time: wait for the snapshot of the whole edit (the state's prompt is ahead of it
        # while the last key's forward runs), whose next token must be the CLI's.
        want = cli_top(cli, induction, prompt + "yu", "no-causal-mask")
        app.wait(lambda r: r["prompt"] == prompt + "yu" and r["what_if_snapshot"] == "no-causal-mask" and not r["busy"] and r["next_top_id"] == want,
                 "the edited prompt, still unmasked, with the CLI's next token", 30)
        log("  edited the prompt: the what-if stays on")

        # The shuffle: the order is shown.
        app.click("what_if")
        app.wait(lambda r: "what_if_shuffle" in r["regions"], "the menu again", 10)
        app.click("what_if_shuffle")
        report = app.wait(lambda r: r["shuffle_order"] and not r["busy"], "the shuffled tokens", 30)
        order = report["shuffle_order"]
        if sorted(order) != list(range(report["tokens"])) or order == sorted(order):
            raise Failure(f"the shuffle's order is not a permutation of the {report['tokens']} tokens: {order}")
        log(f"  shuffled: {report['what_ifs']}, order {order[:8]}...")

        # All back on: the model as trained, the first screen again.
        app.click("what_if_clear")
        report = app.wait(lambda r: r["what_if_snapshot"] == "" and not r["busy"] and "what_if_status" not in r["regions"], "all back on", 30)
        app.click("status_bar")
        app.click("prompt")
        app.key("ctrl+a")
        app.type(prompt)
        app.wait(lambda r: r["prompt"] == prompt and not r["busy"] and r["next_top_id"] == clean_top, "all back on: the clean next token", 30)
        log("  all back on: the clean model")

        # Through a model switch.
        app.click("what_if")
        app.wait(lambda r: "what_if_no-positions" in r["regions"], "the menu", 10)
        app.click("what_if_no-positions")
        app.wait(lambda r: r["what_if_snapshot"] == "no-positions" and not r["busy"], "no positions", 30)
        app.click("status_bar")
        app.wait(lambda r: "what_if_no-positions" not in r["regions"], "the menu closed", 10)
        app.click("model_path")
        app.key("ctrl+a")
        app.type(small)
        app.click("open_model")
        report = app.wait(lambda r: r["model"] == small and not r["busy"] and r["snapshot"] > 0, "brown-small", 60)
        if report["what_ifs"] != "no-positions" or report["what_if_snapshot"] != "no-positions":
            raise Failure(f"the switch lost the what-if: {report['what_ifs']}")
        save_png(os.path.join(out, "brown_small_no_positions.png"), app.screenshot())
        log("  brown-small: still without positions")
        app.quit()

    return drive(tscope, out, session, log, size=(1280, 720))


if __name__ == "__main__":
    sys.exit(main())
