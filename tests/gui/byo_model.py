#!/usr/bin/python3
"""A model from the HuggingFace cache, opened and looked at as hands do (hands.py) at 1280x720: a
cache (HF_HOME under OUT) holds a tiny Llama written by the project's PyTorch reference
(tests/golden/hf_reference.py) with a SentencePiece-style tokenizer.json, and a Mixtral config tscope
cannot open yet. The model picker lists both; the Mixtral one is greyed with its reason and does not
open; the Llama one opens, a prompt typed in words becomes tokens of its own tokenizer, and every
panel draws it (not blank, no error). Screenshots are left in OUT.
usage: byo_model.py TSCOPE MODELS_DIR OUT"""
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

from hands import Failure, drive, save_png

PANELS = ["prompt", "attention", "inside", "residual", "sampling", "positional", "architecture", "scaling", "efficient", "training"]
HERE = os.path.dirname(os.path.abspath(__file__))


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def tokenizer_json(vocab_size):
    """SentencePiece style (Metaspace), letters and a few merges: at most vocab_size tokens."""
    vocab = {"<unk>": 0, "\u2581": 1}
    for c in "abcdefghijklmnopqrstuvwxyz":
        vocab[c] = len(vocab)
    merges = [("\u2581", "t"), ("h", "e"), ("\u2581t", "he"), ("a", "t"), ("\u2581", "a"), ("\u2581", "c"), ("\u2581c", "at")]
    for left, right in merges:
        vocab[left + right] = len(vocab)
    assert len(vocab) <= vocab_size
    metaspace = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": False}
    return {"version": "1.0", "added_tokens": [], "normalizer": None, "pre_tokenizer": metaspace, "decoder": metaspace,
            "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": True, "vocab": vocab, "merges": [f"{a} {b}" for a, b in merges]}}


def make_cache(out):
    """HF_HOME/hub with models--tiny--llama (weights from the reference) and models--tiny--mixtral."""
    reference = os.path.join(out, "reference")
    subprocess.run([sys.executable, os.path.join(HERE, "..", "golden", "hf_reference.py"), reference], check=True, capture_output=True)
    hub = os.path.join(out, "hf", "hub")
    snapshot = os.path.join(hub, "models--tiny--llama", "snapshots", "0123abcd")
    os.makedirs(snapshot)
    for name in ("config.json", "model.safetensors"):
        shutil.copy(os.path.join(reference, "llama", name), snapshot)
    with open(os.path.join(snapshot, "config.json")) as f:
        vocab_size = json.load(f)["vocab_size"]
    with open(os.path.join(snapshot, "tokenizer.json"), "w") as f:
        json.dump(tokenizer_json(vocab_size), f)
    os.makedirs(os.path.join(hub, "models--tiny--llama", "refs"))
    with open(os.path.join(hub, "models--tiny--llama", "refs", "main"), "w") as f:
        f.write("0123abcd")
    mixtral = os.path.join(hub, "models--tiny--mixtral", "snapshots", "4567")
    os.makedirs(mixtral)
    with open(os.path.join(mixtral, "config.json"), "w") as f:
        json.dump({"architectures": ["MixtralForCausalLM"], "model_type": "mixtral"}, f)
    return snapshot


def pick(app, index):
    app.click("model_combo")
    app.wait(lambda r: f"model_cached_{index}" in r["regions"], "the model list", 10)
    app.click(f"model_cached_{index}")


def session(start, out, models_dir, snapshot):
    app = start(["--window", "1280x720", "--model", os.path.join(models_dir, "induction-2l")])
    report = app.settle()
    cached = {m["id"]: (i, m) for i, m in enumerate(report["cached_models"])}
    if "tiny/llama" not in cached or "tiny/mixtral" not in cached:
        raise Failure(f"the picker's cache list: {report['cached_models']}")
    llama, mixtral = cached["tiny/llama"], cached["tiny/mixtral"]
    if llama[1]["problem"] or llama[1]["path"] != snapshot or "MixtralForCausalLM" not in mixtral[1]["problem"]:
        raise Failure(f"the cache entries: {llama[1]}, {mixtral[1]}")
    log(f"  listed: tiny/llama, tiny/mixtral ({mixtral[1]['problem']})")

    pick(app, mixtral[0])  # greyed: nothing opens, the list stays open
    app.pause(0.5)
    app.click("model_combo")  # closes the list
    report = app.wait(lambda r: not any(name.startswith("model_cached_") for name in r["regions"]), "the model list closed", 10)
    if report["model"] == mixtral[1]["path"] or report["error"]:
        raise Failure(f"the greyed Mixtral entry opened: model {report['model']}, error {report['error']!r}")

    pick(app, llama[0])
    report = app.wait(lambda r: r["model"] == snapshot and not r["busy"], "the tiny Llama to open", 60)
    log(f"  opened {report['model']}: {report['n_layer']} layers, {report['n_head']} heads; message {report['message']!r}")
    before = report["snapshot"]
    app.click("prompt")
    app.key("ctrl+a")
    app.type("the cat sat at the mat")
    app.defocus()
    report = app.wait(lambda r: r["snapshot"] > before and not r["busy"], "the typed prompt's snapshot", 60)
    report = app.settle()
    # "▁the ▁cat ▁s a t ▁at ▁the ▁m at": the file's merges, not one token per letter
    if report["error"] or not 6 <= report["tokens"] <= 12:
        raise Failure(f"the prompt on the tiny Llama: {report['tokens']} tokens, error {report['error']!r}")
    log(f"  'the cat sat at the mat': {report['tokens']} tokens")
    for panel in PANELS:
        app.click(f"tab_{panel}")
        report = app.wait(lambda r: r["panel"] == panel, f"the {panel} panel", 10)
        report = app.settle()
        image = app.screenshot()
        save_png(os.path.join(out, f"llama_{panel}.png"), image)
        panel_pixels = app.crop(image, "panel", report)
        if report["error"] or np.std(panel_pixels) < 5:
            raise Failure(f"the {panel} panel on the tiny Llama: error {report['error']!r}, std {np.std(panel_pixels):.1f}")
    log(f"  every panel drew the tiny Llama: {', '.join(PANELS)}")
    app.check_running()
    app.quit()


def main():
    tscope, models_dir, out = sys.argv[1:4]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    snapshot = make_cache(out)
    os.environ["HF_HOME"] = os.path.join(out, "hf")
    os.environ.pop("HF_HUB_CACHE", None)
    return drive(tscope, out, lambda start: session(start, out, models_dir, snapshot), log)


if __name__ == "__main__":
    sys.exit(main())
