#!/usr/bin/python3
"""A model from the HuggingFace cache, opened and looked at as hands do (hands.py) at 1280x720: a
cache (HF_HOME under OUT) holds a tiny BF16 Llama and a tiny Mixtral written by the project's PyTorch
reference (tests/golden/hf_reference.py) with a SentencePiece-style tokenizer.json, and a Gemma 2
config tscope cannot open yet. The model picker lists them; the Gemma 2 one is greyed with its
reason and does not open; the Llama one opens, a prompt typed in words becomes tokens of its own
tokenizer, and every panel draws it (not blank, no error); then the Mixtral opens with the prompt
kept and its Experts panel draws the real router. Screenshots are left in OUT.
usage: byo_model.py TSCOPE MODELS_DIR OUT"""
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

from hands import Failure, drive, save_png

PANELS = ["prompt", "attention", "inside", "residual", "sampling", "positional", "architecture", "scaling", "efficient", "training", "translation"]
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


def cache_repo(hub, reference, variant, repo):
    """models--tiny--<repo> holding the reference's <variant> checkpoint and a tokenizer.json."""
    snapshot = os.path.join(hub, f"models--tiny--{repo}", "snapshots", "0123abcd")
    os.makedirs(snapshot)
    for name in ("config.json", "model.safetensors"):
        shutil.copy(os.path.join(reference, variant, name), snapshot)
    with open(os.path.join(snapshot, "config.json")) as f:
        vocab_size = json.load(f)["vocab_size"]
    with open(os.path.join(snapshot, "tokenizer.json"), "w") as f:
        json.dump(tokenizer_json(vocab_size), f)
    os.makedirs(os.path.join(hub, f"models--tiny--{repo}", "refs"))
    with open(os.path.join(hub, f"models--tiny--{repo}", "refs", "main"), "w") as f:
        f.write("0123abcd")
    return snapshot


def make_cache(out):
    """HF_HOME/hub with models--tiny--llama and models--tiny--mixtral (weights from the reference)
    and models--tiny--gemma2 (a config only, an architecture tscope does not read yet)."""
    reference = os.path.join(out, "reference")
    subprocess.run([sys.executable, os.path.join(HERE, "..", "golden", "hf_reference.py"), reference], check=True, capture_output=True)
    hub = os.path.join(out, "hf", "hub")
    # The Llama is the BF16 variant: every panel then draws a model whose matrices stay 16-bit.
    snapshots = {"llama": cache_repo(hub, reference, "llama_bf16", "llama"), "mixtral": cache_repo(hub, reference, "mixtral", "mixtral"),
                 "qwen3": cache_repo(hub, reference, "qwen3_wide_heads_bf16", "qwen3")}
    unsupported = os.path.join(hub, "models--tiny--gemma2", "snapshots", "4567")
    os.makedirs(unsupported)
    with open(os.path.join(unsupported, "config.json"), "w") as f:
        json.dump({"architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2"}, f)
    return snapshots


def pick(app, index):
    app.click("model_combo")
    app.wait(lambda r: f"model_cached_{index}" in r["regions"], "the model list", 10)
    app.click(f"model_cached_{index}")


def draw_panel(app, out, model, panel):
    """Clicks the panel's tab, lets it settle and saves OUT/<model>_<panel>.png; fails when the panel
    reports an error or draws next to nothing. Returns the report."""
    app.click(f"tab_{panel}")
    app.wait(lambda r: r["panel"] == panel, f"the {panel} panel", 10)
    report = app.settle()
    image = app.screenshot()
    save_png(os.path.join(out, f"{model}_{panel}.png"), image)
    spread = np.std(app.crop(image, "panel", report))
    if report["error"] or spread < 5:
        raise Failure(f"the {panel} panel on the tiny {model}: error {report['error']!r}, std {spread:.1f}")
    return report


def session(start, out, models_dir, snapshots):
    snapshot = snapshots["llama"]
    app = start(["--window", "1280x720", "--model", os.path.join(models_dir, "induction-2l")])
    report = app.settle()
    cached = {m["id"]: (i, m) for i, m in enumerate(report["cached_models"])}
    if not {"tiny/llama", "tiny/mixtral", "tiny/gemma2"} <= set(cached):
        raise Failure(f"the picker's cache list: {report['cached_models']}")
    llama, mixtral, unsupported = cached["tiny/llama"], cached["tiny/mixtral"], cached["tiny/gemma2"]
    if (llama[1]["problem"] or llama[1]["path"] != snapshot or mixtral[1]["problem"]
            or "Gemma2ForCausalLM" not in unsupported[1]["problem"]):
        raise Failure(f"the cache entries: {llama[1]}, {mixtral[1]}, {unsupported[1]}")
    log(f"  listed: tiny/llama, tiny/mixtral, tiny/gemma2 ({unsupported[1]['problem']})")

    pick(app, unsupported[0])  # greyed: nothing opens, the list stays open
    app.pause(0.5)
    app.click("model_combo")  # closes the list
    report = app.wait(lambda r: not any(name.startswith("model_cached_") for name in r["regions"]), "the model list closed", 10)
    if report["model"] == unsupported[1]["path"] or report["error"]:
        raise Failure(f"the greyed Gemma 2 entry opened: model {report['model']}, error {report['error']!r}")

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
        report = draw_panel(app, out, "llama", panel)
        if panel == "attention" and "attention_kv_group" not in report["regions"]:  # 4 query heads over 2 key/value heads
            raise Failure("the Attention panel does not say which key/value head the shown head reads")
    log(f"  every panel drew the tiny Llama: {', '.join(PANELS)}")

    # The Mixtral, picked with the prompt in the box: the prompt stays, the Experts tab shows its router.
    tokens = report["tokens"]
    pick(app, mixtral[0])
    report = app.wait(lambda r: r["model"] == snapshots["mixtral"] and not r["busy"], "the tiny Mixtral to open", 60)
    report = app.settle()
    if report["error"] or report["tokens"] != tokens:
        raise Failure(f"the prompt on the tiny Mixtral: {report['tokens']} tokens (was {tokens}), error {report['error']!r}")
    draw_panel(app, out, "mixtral", "moe")
    log(f"  the tiny Mixtral opened with the prompt kept ({tokens} tokens); its Experts panel drew")
    # The Architecture editor on it: a shared expert of width S (Qwen2-MoE's) typed in adds, per
    # layer, its SwiGLU's gate|up (2 (C S + S)), its down projection (S C + C) and its gate vector (C).
    with open(os.path.join(snapshots["mixtral"], "config.json")) as f:
        mixtral_config = json.load(f)
    L, C, S = mixtral_config["num_hidden_layers"], mixtral_config["hidden_size"], 24
    report = draw_panel(app, out, "mixtral", "architecture")
    counted = report["shown"]["architecture"]["parameters"]
    x0, y0, x1, y1 = app.region("arch_shared_expert")
    app.click_at(x0 + 8, (y0 + y1) // 2)
    app.key("ctrl+a")
    app.type(str(S))
    app.key("Return")
    app.defocus()
    want = counted + L * (2 * (C * S + S) + S * C + C + C)
    report = app.wait(lambda r: r["shown"]["architecture"]["parameters"] != counted, "the shared expert's parameters", 10)
    if report["shown"]["architecture"]["parameters"] != want or report["shown"]["architecture"]["problem"]:
        raise Failure(f"a shared expert of {S} on the tiny Mixtral (L {L}, C {C}): {report['shown']['architecture']} parameters, "
                      f"want {want} (was {counted})")
    save_png(os.path.join(out, "mixtral_architecture_shared_expert.png"), app.screenshot())
    log(f"  the Architecture editor: a shared expert of {S} adds {want - counted} parameters ({counted} -> {want})")

    # The Qwen3 with heads wider than hidden_size / heads (4 x 16 over 32, as Qwen3-0.6B's 16 x 128
    # over 1024): the panels that show the heads' widths draw it.
    report = app.settle()
    qwen3 = {m["id"]: i for i, m in enumerate(report["cached_models"])}["tiny/qwen3"]
    pick(app, qwen3)
    report = app.wait(lambda r: r["model"] == snapshots["qwen3"] and not r["busy"], "the tiny Qwen3 to open", 60)
    report = app.settle()
    if report["error"] or report["tokens"] != tokens:
        raise Failure(f"the prompt on the tiny Qwen3: {report['tokens']} tokens (was {tokens}), error {report['error']!r}")
    for panel in ("attention", "inside", "residual", "architecture"):
        draw_panel(app, out, "qwen3", panel)
    log("  the tiny Qwen3 (heads of 16 over hidden 32) opened with the prompt kept; attention, inside, residual, architecture drew")
    app.check_running()
    app.quit()


def main():
    tscope, models_dir, out = sys.argv[1:4]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    snapshots = make_cache(out)
    os.environ["HF_HOME"] = os.path.join(out, "hf")
    os.environ.pop("HF_HUB_CACHE", None)
    return drive(tscope, out, lambda start: session(start, out, models_dir, snapshots), log)


if __name__ == "__main__":
    sys.exit(main())
