#!/usr/bin/python3
"""The Compare panel as hands use it, on induction-2l: "With and without a what-if" puts the model
without its causal mask on the right, and the KL of the two next-token distributions is the one
`tscope-cli compare-forward` prints for the same input; an edit of the prompt changes the KL and the
difference map; a second what-if on the right side changes them again; "One model, two prompts"
runs the right side on its own prompt; "every layer" fills the head table with both layers' heads, the
numbers compare-forward prints; "Two models, one prompt" opens brown-small beside
brown-moe and says why there is no KL (two vocabularies). Export NPY writes both maps and their
difference, equal to compare-forward --dump's. Screenshots of the three cases. A session
file whose right-side model is missing, or whose right prompt is invalid UTF-8 past the context, gets
one line each while the app answers.
usage: compare.py TSCOPE TSCOPE_CLI MODELS_DIR OUT"""
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

from hands import Failure, differs, drive, save_png


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def compare(report):
    return report["shown"].get("compare", {})


def cli_kl(cli, model, text, what_if):
    out = subprocess.run([cli, "compare-forward", "--backend", "cpu", "--left", model, "--right", model, "--text", text, "--right-what-if", what_if],
                         capture_output=True, check=True).stdout
    return json.loads(out)["kl"]


def every_layer_heads(app, cli, model, prompt):
    """Ticks "every layer": the head table holds both layers' heads, each entropy and pattern
    distance the one compare-forward prints for that side, layer and head; unticked again after."""
    app.scroll_into_view("compare_every_layer", "panel")
    app.click("compare_every_layer")
    report = app.wait(lambda r: compare(r).get("heads_every_layer") and {row["layer"] for row in compare(r).get("heads", [])} == {0, 1},
                      "every layer's heads", 10)
    rows = {(row["layer"], row["head"]): row for row in compare(report)["heads"]}
    printed = json.loads(subprocess.run([cli, "compare-forward", "--backend", "cpu", "--left", model, "--right", model, "--text", prompt,
                                         "--right-what-if", "no-causal-mask"], capture_output=True, check=True).stdout)
    checked = 0
    for side in ("left", "right"):
        for layer in printed[side]["heads"]:
            for head, want in enumerate(layer["heads"]):
                got = rows[(layer["layer"], head)][side]
                for value, key in zip(got, ("entropy", "previous_token", "first_token")):
                    if abs(value - want[key]) > 1e-4:
                        raise Failure(f"{side} layer {layer['layer']} head {head} {key}: the panel's {value}, compare-forward's {want[key]}")
                checked += 1
    if checked != len(rows) * 2:
        raise Failure(f"compare-forward printed {checked} heads for the table's {len(rows)} rows of two sides")
    log(f"  every layer: {len(rows)} heads a side, as compare-forward prints them")
    app.click("compare_every_layer")
    app.wait(lambda r: not compare(r).get("heads_every_layer"), "the selected layer's heads again", 10)
    app.scroll_into_view("compare_what_if_case", "panel")


def main():
    tscope, cli, models_dir, out = sys.argv[1:5]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    models_dir = os.path.realpath(models_dir)
    induction = os.path.join(models_dir, "induction-2l")
    moe = os.path.join(models_dir, "brown-moe")
    prompt = "ZXqwertyuiopqwert"

    def settled(what, predicate, timeout=60):
        return app.wait(lambda r: not r["busy"] and ("kl" in compare(r) or "kl_missing" in compare(r)) and predicate(r), what, timeout)

    app = None

    def session(start):
        nonlocal app
        app = start(["--model", induction, "--prompt", prompt, "--panel", "compare"])
        app.settle()

        # With and without a what-if: the right side has no causal mask.
        app.click("compare_what_if_case")
        report = settled("the what-if case", lambda r: compare(r).get("right_what_ifs_run") == "no-causal-mask" and r["prompt"] == prompt and compare(r).get("left_prompt_run") == prompt)
        kl = compare(report)["kl"]
        want = cli_kl(cli, induction, prompt, "no-causal-mask")
        if abs(kl - want) > 1e-4 * max(1.0, want):
            raise Failure(f"the panel's KL {kl} is not tscope-cli compare-forward's {want}")
        if "compare_difference" not in report["regions"] or compare(report)["max_abs_difference"] <= 0:
            raise Failure(f"no difference map: {compare(report).get('difference_note')}")
        # Export NPY: (3, T, T) left, right and right - left, equal to compare-forward --dump's maps.
        before = set(os.listdir(app.workdir))
        app.click("export_npy")
        app.wait(lambda r: [f for f in set(os.listdir(app.workdir)) - before if f.endswith(".npy")], "the export", 20)
        exported = np.load(os.path.join(app.workdir, next(f for f in set(os.listdir(app.workdir)) - before if f.endswith(".npy"))))
        dump = os.path.join(out, "dump")
        subprocess.run([cli, "compare-forward", "--backend", "cpu", "--left", induction, "--right", induction, "--text", prompt,
                        "--right-what-if", "no-causal-mask", "--dump", dump], capture_output=True, check=True)
        for index, name in enumerate(("left_attn_0", "right_attn_0", "diff_attn_0")):
            want = np.load(os.path.join(dump, name + ".npy"))[0]
            worst = float(np.abs(exported[index] - want).max())
            if exported.shape != (3,) + want.shape or not np.isfinite(exported).all() or not worst <= 1e-5:
                raise Failure(f"the exported {name} differs from compare-forward --dump's by {worst} (shape {exported.shape})")
        log("  Export NPY: left, right and difference equal to compare-forward --dump's")
        every_layer_heads(app, cli, induction, prompt)
        first = app.screenshot()
        save_png(os.path.join(out, "what_if.png"), first)
        log(f"  with and without the causal mask: KL {kl:.4f} nats, as tscope-cli compare-forward")

        # An edit of the prompt: both sides run again, the KL and the map change.
        app.click("prompt")
        app.key("End")
        app.type("yu")
        report = settled("the edited prompt", lambda r: r["prompt"] == prompt + "yu" and compare(r).get("right_prompt_run") == prompt + "yu"
                         and compare(r).get("left_prompt_run") == prompt + "yu")
        if abs(compare(report)["kl"] - kl) < 1e-9 or not differs(first, app.screenshot()):
            raise Failure("the edit changed neither the KL nor the screen")
        if abs(compare(report)["kl"] - cli_kl(cli, induction, prompt + "yu", "no-causal-mask")) > 1e-4 * max(1.0, kl):
            raise Failure("after the edit the KL is not the CLI's")
        kl = compare(report)["kl"]
        log(f"  edited: KL {kl:.4f}")

        # A second what-if on the right side only.
        app.click("compare_what_if")
        app.wait(lambda r: "compare_what_if_no-positions" in r["regions"], "the right side's What-if menu", 10)
        app.click("compare_what_if_no-positions")
        report = settled("no positions too", lambda r: compare(r).get("right_what_ifs_run") == "no-causal-mask,no-positions")
        if report["what_ifs"] != "" or abs(compare(report)["kl"] - kl) < 1e-9:
            raise Failure(f"the right side's what-if leaked to the left or changed nothing: {report['what_ifs']}")
        log(f"  right side also without positions: KL {compare(report)['kl']:.4f}; the left untouched")
        app.click("status_bar")

        # One model, two prompts.
        app.click("compare_two_prompts")
        report = settled("two prompts", lambda r: not compare(r)["prompt_linked"] and compare(r).get("right_what_ifs_run") == "")
        if compare(report)["right_prompt_run"] == report["prompt"] or compare(report)["same_tokens"]:
            raise Failure("two prompts: the right side runs the left's prompt")
        save_png(os.path.join(out, "two_prompts.png"), app.screenshot())
        log(f"  two prompts: '{report['prompt']}' and '{compare(report)['right_prompt_run']}'")

        # Two models: brown-moe's right side beside brown-small.
        app.click("model_path")
        app.key("ctrl+a")
        app.type(os.path.join(models_dir, "brown-small"))
        app.click("open_model")
        app.wait(lambda r: r["model"].endswith("brown-small") and not r["busy"] and r["snapshot"] > 0, "brown-small", 60)
        app.click("prompt")
        app.key("ctrl+a")
        app.type("The jury said that the election")
        app.click("compare_two_models")
        report = settled("two models", lambda r: compare(r)["right_model"] == moe and compare(r).get("left_prompt_run") == r["prompt"] == compare(r).get("right_prompt_run")
                          and r["prompt"] == "The jury said that the election", 90)
        if "kl_missing" not in compare(report) or not compare(report)["same_tokens"]:
            raise Failure(f"brown-small against brown-moe: {compare(report)}")
        save_png(os.path.join(out, "two_models.png"), app.screenshot())
        log(f"  two models: {compare(report)['kl_missing']}")
        app.quit()

        # A session whose right side names a model that is not there: one line, the left side answers.
        broken = os.path.join(out, "broken.json")
        with open(broken, "w") as f:
            json.dump({"tscope_session": 1, "compare_model": os.path.join(out, "no-such-model"), "panel": "compare"}, f)
        app = start(["--model", induction, "--prompt", prompt, "--session", broken], log_name="broken.log")
        report = app.wait(lambda r: compare(r).get("problem"), "the missing model's line", 30)
        if "\n" in compare(report)["problem"] or "no-such-model" not in compare(report)["problem"]:
            raise Failure(f"the missing right model: {compare(report)['problem']!r}")
        log(f"  missing right model: {compare(report)['problem']}")
        # Back to the left's model, with a right prompt of invalid UTF-8 past the context.
        app.click("compare_two_prompts")
        app.wait(lambda r: "compare_prompt" in r["regions"], "the right prompt's box", 10)
        app.click("compare_prompt")
        app.key("ctrl+a")
        app.paste(b"\xff\xfe qwerty " * 20)
        report = settled("the long right prompt", lambda r: compare(r).get("right_tokens", 0) == r["n_ctx"], 60)
        log(f"  right prompt of {len(compare(report)['right_prompt_run'])} bytes past the context: its last {compare(report)['right_tokens']} tokens")
        app.quit()

    return drive(tscope, out, session, log, size=(1400, 900))


if __name__ == "__main__":
    sys.exit(main())
