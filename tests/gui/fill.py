#!/usr/bin/python3
"""The Fill-in-the-blank panel as hands use it: on brown-small (a decoder) it says why it cannot fill
and offers brown-bert; its button opens brown-bert with a blank, whose ten fillers equal
`tscope-cli fill` on the same text; clicking a word hides it behind [MASK] (a third blank with its
own fillers) and clicking it again brings the word back; "put in" writes a filler into the text; the
causal-view toggle changes the map; the brown-small toggle puts the same sentence through that causal
model beside it (nothing on later keys, its map as forward --dump's); the Next-token panel says a masked model has no next token; a
text past the context is one line; and switching to brown-small with a [MASK] still in the prompt
keeps the prompt and runs it as text. Then the Architecture panel's three families view: its three
models' outputs, candidates and masks equal `tscope-cli families`.
usage: fill.py TSCOPE TSCOPE_CLI MODELS_DIR OUT"""
import json
import os
import shutil
import subprocess
import sys
import time

from hands import Failure, differs, drive, save_png


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def fill(report):
    return report["shown"].get("fill", {})


def masks(report):
    return fill(report).get("masks", [])


def through_gpt(app, cli, small, out):
    """The toggle puts the same sentence through brown-small beside the map: its blanks as "_", no
    weight on later keys, and the last row of its map the one `tscope-cli forward --dump` writes."""
    app.click("fill_through_gpt")
    report = app.wait(lambda r: fill(r).get("gpt", {}).get("snapshot") and not r["busy"], "brown-small beside brown-bert", 60)
    gpt = fill(report)["gpt"]
    if "[MASK]" in gpt["prompt"] or "_" not in gpt["prompt"] or gpt["future_weight"] != 0 or "fill_gpt_attention" not in report["regions"]:
        raise Failure(f"brown-small's side: {gpt}")
    dump = os.path.join(out, "gpt_dump")
    subprocess.run([cli, "forward", "--model", small, "--text", gpt["prompt"], "--backend", "cpu", "--dump", dump], capture_output=True,
                   check=True)
    import numpy as np
    maps = np.load(os.path.join(dump, f"attn_{gpt['layer']}.npy"))
    want = maps[gpt["head"], -1]
    if maps.shape[-1] != gpt["tokens"] or float(np.abs(np.array(gpt["last_row"]) - want).max()) > 1e-5:
        raise Failure(f"brown-small's last row {gpt['last_row']} is not forward --dump's {want.tolist()}")
    save_png(os.path.join(out, "through_gpt.png"), app.screenshot())
    log(f"  beside it, brown-small on '{gpt['prompt']}': {gpt['tokens']} tokens, its last row as forward --dump")
    app.click("fill_through_gpt")


def three_families(app, cli, models_dir, out):
    """The Architecture panel's "three families" checkbox: GPT, BERT and T5 run live, as the CLI prints them."""
    app.click("tab_architecture")
    app.settle()
    app.click("arch_families")
    report = app.wait(lambda r: r["shown"].get("families", {}).get("loading") is False and not r["busy"], "the three families", 60)
    shown = report["shown"]["families"]["families"]
    want = json.loads(subprocess.run([cli, "families", "--models", models_dir], capture_output=True, check=True).stdout)["families"]
    if [f["model"] for f in shown] != ["brown-small", "brown-bert", "dates-encdec"] or [f["mask"] for f in shown] != [
            "causal", "bidirectional", "encoder-decoder"]:
        raise Failure(f"the three families: {shown}")
    for got, expected in zip(shown, want):
        same_top = all(a["token"] == b["token"] and abs(a["p"] - b["p"]) < 1e-5 for x, y in zip(got["top"], expected["top"])
                       for a, b in zip(x, y))
        if got["error"] or got["output"] != expected["output"] or len(got["top"]) != len(expected["top"]) or not same_top:
            raise Failure(f"{got['model']}: the view shows {got}, tscope-cli families prints {expected}")
    if len(shown[1]["top"]) != 2 or "[MASK]" in shown[1]["output"] or len(shown[2]["output"]) != 10:
        raise Failure(f"BERT fills both blanks and T5 writes an ISO date: {shown[1]}, {shown[2]}")
    if "families_table" not in report["regions"]:
        raise Failure("the families table is not on screen")
    save_png(os.path.join(out, "three_families.png"), app.screenshot())
    log("  three families: " + "; ".join(f"{f['model']}: '{f['input']}' -> '{f['output']}'" for f in shown))
    app.click("arch_families")
    app.wait(lambda r: r["shown"].get("arch_families") is False, "the editor back", 10)


def main():
    tscope, cli, models_dir, out = sys.argv[1:5]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    models_dir = os.path.realpath(models_dir)
    small = os.path.join(models_dir, "brown-small")
    bert = os.path.join(models_dir, "brown-bert")

    def session(start):
        app = start(["--model", small, "--panel", "fill"])
        report = app.settle()
        if fill(report).get("masked_lm") is not False or "fill_open_bert" not in report["regions"]:
            raise Failure(f"brown-small's Fill panel: {fill(report)}")
        log(f"  brown-small: {fill(report)['problem']}")

        # Its button opens brown-bert with a blank; the fillers are the CLI's.
        app.click("fill_open_bert")
        report = app.wait(lambda r: r["model"] == bert and not r["busy"] and len(masks(r)) == 2, "brown-bert with two blanks", 60)
        prompt = report["prompt"]
        top = masks(report)[0]["top"]
        if len(top) != 10 or any(a["p"] < b["p"] for a, b in zip(top, top[1:])) or sum(c["p"] for c in top) > 1 + 1e-9:
            raise Failure(f"the fillers are not ten in falling order: {top}")
        want = json.loads(subprocess.run([cli, "fill", "--model", bert, "--text", prompt, "--backend", "cpu"], capture_output=True,
                                         check=True).stdout)
        for shown, printed in zip(masks(report), want["masks"]):
            for got, expected in zip(shown["top"], printed["top"]):
                if got["id"] != expected["id"] or abs(got["p"] - expected["p"]) > 1e-4:
                    raise Failure(f"panel {shown} differs from tscope-cli fill {printed}")
            if shown["position"] != printed["position"]:
                raise Failure("a blank's position differs from the CLI's")
        first = app.screenshot()
        save_png(os.path.join(out, "bert.png"), first)
        log(f"  brown-bert: '{prompt}' -> {[(c['token'], round(c['p'], 3)) for c in top[:3]]}, as tscope-cli fill")

        # A click hides a word; a second click gives it back.
        tokens = fill(report)["tokens"]
        word = next(t for t in range(2, len(tokens) - 1) if tokens[t] != "[MASK]" and tokens[t].strip().isalpha())
        app.click(f"fill_token_{word}")
        report = app.wait(lambda r: len(masks(r)) == 3 and not r["busy"], "a third blank", 30)
        if report["prompt"].count("[MASK]") != 3 or not differs(first, app.screenshot()):
            raise Failure(f"hiding '{tokens[word]}' gave '{report['prompt']}'")
        log(f"  hid '{tokens[word]}': '{report['prompt']}'")
        app.click(f"fill_token_{word}")
        report = app.wait(lambda r: r["prompt"] == prompt and len(masks(r)) == 2 and not r["busy"], "the word back", 30)
        log("  clicked again: the word is back")

        # "put in" writes the first blank's first filler into the text: one blank left.
        blank = masks(report)[0]
        app.click("fill_choice_0_0")
        report = app.wait(lambda r: r["prompt"].count("[MASK]") == 1 and not r["busy"], "the filler put in", 30)
        if blank["top"][0]["token"].strip() not in report["prompt"] or len(masks(report)) != 1:
            raise Failure(f"put in {blank['top'][0]['token']!r}: '{report['prompt']}', masks {masks(report)}")
        log(f"  put in {blank['top'][0]['token']!r}: '{report['prompt']}'")

        # The causal view greys half the map.
        before = app.crop(app.screenshot(), "fill_attention", report)
        app.click("fill_causal_view")
        report = app.settle()
        if not differs(before, app.crop(app.screenshot(), "fill_attention", report)):
            raise Failure("the causal view did not change the map")
        save_png(os.path.join(out, "causal_view.png"), app.screenshot())
        through_gpt(app, cli, small, out)

        # The Next-token panel has nothing to sample.
        app.click("tab_sampling")
        report = app.wait(lambda r: "next_token_missing" in r["shown"], "the Next-token panel's line", 10)
        log(f"  Next token: {report['shown']['next_token_missing']}")

        # A text longer than the context: one line, the app alive.
        app.click("tab_fill")
        app.click("prompt")
        app.key("ctrl+a")
        app.paste("The jury said that the [MASK] was held. " * 30)
        report = app.wait(lambda r: "error" in fill(r) and not r["busy"], "the long text's line", 30)
        if "context" not in fill(report)["error"]:
            raise Failure(f"past the context: {fill(report)}")
        log(f"  past the context: {fill(report)['error']}")

        # A decoder with a [MASK] still in the prompt: it reads it as text.
        app.key("ctrl+a")
        app.type("The jury [MASK] that")
        app.wait(lambda r: len(masks(r)) == 1 and not r["busy"], "the short blank", 30)
        app.click("model_path")
        app.key("ctrl+a")
        app.type(small)
        app.click("open_model")
        report = app.wait(lambda r: r["model"] == small and not r["busy"] and r["snapshot"] > 0, "brown-small again", 60)
        if report["prompt"] != "The jury [MASK] that" or fill(report).get("masked_lm") is not False:
            raise Failure(f"the switch lost the prompt or the panel: '{report['prompt']}', {fill(report)}")
        app.click("tab_sampling")
        app.wait(lambda r: "next_token_missing" not in r["shown"] and not r["busy"], "brown-small's next token", 10)
        log("  brown-small with '[MASK]' in the prompt: the prompt kept, read as text")
        three_families(app, cli, models_dir, out)
        app.quit()

    return drive(tscope, out, session, log, size=(1280, 720))


if __name__ == "__main__":
    sys.exit(main())
