#!/usr/bin/python3
"""Every number under its own name, driven as hands do (hands.py):
1. A long prompt on a deep model: a 12-layer, 12-head model with GPT-2's tokenizer (tscope-cli
   init), a page of text pasted (about 800 tokens: past the 512 MiB map memory cap, 9 of 12
   layers' maps held), the Attention panel at layer 0, then Up to layer 11 (not held): the panel
   shows layer 11's own map (never layer 0's), and Export NPY equals tscope-cli forward --dump's
   attn_11.npy for the same text.
2. Export saves what is on screen, or nothing: on brown-moe, a walk through the tabs in which every
   tab follows every other tab once, exporting at each step, then the Attention panel's lines view
   (its export equal to forward --dump's map of the layer and head on screen) and grid: Export NPY
   writes the matrix the report names (its shape checked), or the buttons are disabled (the report
   says why) and pressing one writes nothing.
3. The slides' published tables read off the panels equal tscope-cli published's: the Architecture
   panel's Table 2 (Vaswani et al. 2017) with the Transformer base / big parameters, and the Scaling
   panel's Cost of training tab (GPT-3 at the default prices: the slide's $4.6M within 3%) and the
   Chinchilla worked example at C = 1e23.
usage: exports.py TSCOPE TSCOPE_CLI MODELS_DIR OUT"""
import glob
import json
import math
import os
import shutil
import subprocess
import sys
import time

import numpy as np

from hands import Failure, drive, save_png

SENTENCE = ("The jury further said in term-end presentments that the City Executive Committee, which had "
            "over-all charge of the election, deserves the praise and thanks of the City of Atlanta. ")


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def new_files(app, before, prefix):
    return [f for f in set(os.listdir(app.workdir)) - before if f.startswith(prefix) and f.endswith(".npy")]


def export_npy(app, what):
    """Presses Export NPY; returns the loaded array and its file name, or None when the report says
    nothing on screen can be exported (then no file may appear)."""
    report = app.settle()
    name = report["export"]["name"]
    before = set(os.listdir(app.workdir))
    app.click("export_npy")
    if not name:
        app.pause(0.4)  # an export is written at the end of the frame the press lands in
        written = new_files(app, before, "tscope-")
        if written:
            raise Failure(f"{what}: Export was disabled but wrote {written}")
        return None, None
    app.wait(lambda r: new_files(app, before, f"tscope-{name}-"), f"{what}: the export of {name}", 20)
    file = new_files(app, before, f"tscope-{name}-")[0]
    return np.load(os.path.join(app.workdir, file)), name


def deep_model(cli, out):
    model = os.path.join(out, "twelve-layers")
    shutil.rmtree(model, ignore_errors=True)
    done = subprocess.run([cli, "init", "--out", model, "--layers", "12", "--heads", "12", "--embd", "96", "--positions", "1024",
                           "--seed", "7"], capture_output=True, text=True)
    if done.returncode != 0:
        raise Failure(f"tscope-cli init failed: {done.stderr.strip()}")
    return model


def long_prompt_last_layer(start, cli, out):
    model = deep_model(cli, out)
    text = SENTENCE * 24
    app = start(["--model", model, "--panel", "attention"], "deep.log")
    app.settle()
    app.click("prompt")
    app.key("ctrl+a")
    app.paste(text)
    app.defocus()
    report = app.wait(lambda r: r["tokens"] > 700 and not r["busy"], "the pasted page", 120)
    tokens = report["tokens"]
    held = report["held_layers"]
    log(f"  {tokens} tokens; maps held for layers {held}: {report['maps_note']}")
    if len(held) >= 12 or 11 in held or report["layer"] != 0:
        raise Failure(f"the test needs layer 11 past the cap with layer 0 selected: held {held}, layer {report['layer']}")
    app.key("Up")  # layer 0 -> 11
    report = app.wait(lambda r: r["layer"] == 11 and r["shown"].get("attention_shown", {}).get("layer") == 11 and not r["busy"],
                      "layer 11's own map", 30)
    if 11 in report["held_layers"]:
        raise Failure("selecting layer 11 reran the prompt with another plan instead of computing the layer alone")
    shown, name = export_npy(app, "layer 11")
    if name != "attention_l11_h0_probs":
        raise Failure(f"Export of layer 11 head 0 saved {name}")
    with open(os.path.join(out, "deep.txt"), "w") as f:
        f.write(report["prompt"])
    dump = os.path.join(out, "deep-dump")
    shutil.rmtree(dump, ignore_errors=True)
    done = subprocess.run([cli, "forward", "--model", model, "--text-file", os.path.join(out, "deep.txt"), "--dump", dump],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise Failure(f"forward --dump failed: {done.stderr.strip()}")
    want = np.load(os.path.join(dump, "attn_11.npy"))[0]
    got = np.nan_to_num(shown, nan=0.0)  # the panel's masked cells are NaN, the dump's 0
    if got.shape != want.shape:
        raise Failure(f"layer 11's export is {got.shape}, the dump's {want.shape}")
    worst = float(np.abs(got - want).max())
    layer0 = np.load(os.path.join(dump, "attn_0.npy"))[0]
    if worst > 1e-5 or np.allclose(got, layer0):
        raise Failure(f"layer 11's export differs from forward --dump's attn_11.npy by {worst} (or equals layer 0's)")
    log(f"  layer 11 (not held) exported and equal to forward --dump's attn_11.npy (max |diff| {worst:.2g})")
    app.quit()


def all_pairs_walk(names):
    """A walk through `names` in which every ordered pair (a, b), a != b, follows each other once
    (an Eulerian circuit of the complete directed graph, by Hierholzer's algorithm)."""
    edges = {a: [b for b in reversed(names) if b != a] for a in names}
    stack, walk = [names[0]], []
    while stack:
        if edges[stack[-1]]:
            stack.append(edges[stack[-1]].pop())
        else:
            walk.append(stack.pop())
    return walk[::-1]


def dump_map(cli, out, model, prompt, layer, head):
    """forward --dump's attention map of (layer, head) for `prompt` on `model`."""
    text, dump = os.path.join(out, "views.txt"), os.path.join(out, "views-dump")
    with open(text, "w") as f:
        f.write(prompt)
    shutil.rmtree(dump, ignore_errors=True)
    done = subprocess.run([cli, "forward", "--model", model, "--text-file", text, "--dump", dump], capture_output=True, text=True)
    if done.returncode != 0:
        raise Failure(f"forward --dump failed: {done.stderr.strip()}")
    return np.load(os.path.join(dump, f"attn_{layer}.npy"))[head]


def router_by_hand(app, out):
    """The Experts panel's router by hand opens on the lecture's logits: top-2 picks E_5 and E_1 with
    gates exp(3.2) / (exp(3.2) + exp(2.1)) = 0.750 and 0.250; a typed item that is not a number is one
    line, and the panel keeps running."""
    app.click("router_by_hand")
    report = app.wait(lambda r: r["shown"].get("router_by_hand", {}).get("tokens"), "the router by hand", 10)
    facts = report["shown"]["router_by_hand"]
    token = facts["tokens"][0]
    gate = math.exp(3.2) / (math.exp(3.2) + math.exp(2.1))
    if token["chosen"] != [5, 1] or abs(token["gates"][4] - gate) > 1e-5 or abs(token["gates"][0] - (1 - gate)) > 1e-5:
        raise Failure(f"the lecture's logits routed to {token}, expected E_5 and E_1 with {gate:.4f} / {1 - gate:.4f}")
    save_png(os.path.join(out, "router_by_hand.png"), app.screenshot())
    app.click("router_by_hand_text")
    app.key("ctrl+a")
    app.type("1, x, 3")
    report = app.wait(lambda r: "not a number" in r["shown"].get("router_by_hand", {}).get("error", ""), "the typed logits' error", 10)
    log(f"  router by hand: E_5 {token['gates'][4]:.3f}, E_1 {token['gates'][0]:.3f} as the slide; '1, x, 3': {report['shown']['router_by_hand']['error']}")
    app.defocus()
    app.click("router_by_hand")
    app.wait(lambda r: not r["shown"].get("router_by_hand", {}).get("open"), "the router by hand closed", 10)


def published_tables(app, cli, out):
    """The Architecture panel's Table 2 and GPT-3 specifications and the Scaling panel's cost and worked-example tables are
    tscope-cli published's numbers (one implementation, app/session/published_json.h)."""
    done = subprocess.run([cli, "published"], capture_output=True, text=True)
    if done.returncode != 0:
        raise Failure(f"published failed: {done.stderr.strip()}")
    want = json.loads(done.stdout)
    app.click("tab_architecture")
    report = app.wait(lambda r: r["panel"] == "architecture" and r["shown"].get("architecture", {}).get("table2"), "the Table 2 facts", 10)
    table2 = report["shown"]["architecture"]["table2"]
    if table2 != want["table2"]:
        raise Failure(f"the Architecture panel's Table 2 {table2} is not published's {want['table2']}")
    base = next(r for r in table2 if r["model"] == "Transformer (base model)")
    if base["bleu_en_de"] != 27.3 or abs(base["parameters"] / base["published_parameters"] - 1) > 0.04:
        raise Failure(f"Table 2's base row {base}: BLEU 27.3 and ~65M parameters expected")
    specs = report["shown"]["architecture"].get("gpt3_specs")
    if specs != want["gpt3_specs"]:
        raise Failure(f"the Architecture panel's GPT-3 specifications {specs} are not published's {want['gpt3_specs']}")
    if specs["columns"][2]["paper"] != "GPT-3 XL" or not specs["rows"][7]["cells"][3]["differs"]:
        raise Failure(f"the slide's Large should be the paper's XL and its 175B learning rate marked: {specs}")
    images = report["shown"]["architecture"]["image_tokens"]
    if [i["n"] for i in images] != [196, 50176]:
        raise Failure(f"the image rows price {images}, expected n = 196 and 50,176")
    app.click("tab_scaling")
    app.wait(lambda r: r["panel"] == "scaling" and "scaling_tab_cost" in r["regions"], "the Scaling tab", 10)
    app.click("scaling_tab_cost")
    report = app.wait(lambda r: r["shown"].get("scaling_cost"), "the Cost of training facts", 10)
    shown = report["shown"]
    if shown["scaling_cost"] != want["training_cost"] or shown["chinchilla_example"] != want["chinchilla_example"]:
        raise Failure(f"the Cost of training tab {shown['scaling_cost']} is not published's {want['training_cost']}")
    gpt3 = next(r for r in shown["scaling_cost"]["runs"] if r["name"] == "GPT-3 175B")
    if abs(gpt3["dollars"] / gpt3["slide_dollars"] - 1) > 0.03:
        raise Failure(f"GPT-3 at the default prices costs {gpt3['dollars']}, not the slide's {gpt3['slide_dollars']}")
    save_png(os.path.join(out, "training_cost.png"), app.screenshot())
    log(f"  published tables: Table 2 base {base['parameters']} parameters (paper {base['published_parameters']:.0f}), "
        f"GPT-3 ${gpt3['dollars'] / 1e6:.2f}M (slide ${gpt3['slide_dollars'] / 1e6:.1f}M), "
        f"{sum(c['differs'] for r in specs['rows'] for c in r['cells'])} GPT-3 spec cells off Table 2.1, as tscope-cli published")
    app.click("scaling_tab_published")


def every_view(start, cli, models, out):
    model = os.path.join(models, "brown-moe")
    app = start(["--model", model, "--panel", "attention"], "views.log")
    report = app.settle()
    tabs = sorted(r[4:] for r in report["regions"] if r.startswith("tab_"))
    walk = all_pairs_walk(tabs)
    exported, disabled = {}, set()
    for step, tab in enumerate(walk):
        app.click(f"tab_{tab}")
        app.wait(lambda r, t=tab: r["panel"] == t, f"the {tab} tab", 10)
        array, name = export_npy(app, f"{tab} (after {walk[step - 1] if step else 'the start'})")
        if name is None:
            disabled.add(tab)
            continue
        if (tab == "efficient") != name.startswith("efficient"):
            raise Failure(f"{tab} after {walk[step - 1]}: Export saved {name}")
        if array.size == 0:
            raise Failure(f"{tab}: an empty export {name}")
        exported[tab] = f"{name} {array.shape}"
    log(f"  {len(walk)} tabs in a walk through every ordered pair of tabs; exported: " + "; ".join(f"{t}: {e}" for t, e in sorted(exported.items())))
    log("  disabled (nothing on screen): " + ", ".join(sorted(disabled)))
    if "attention" not in exported:
        raise Failure("the Attention panel exported nothing")
    # The Experts panel's CV^2 load-balancing loss is that of the fractions it draws (numpy's, here).
    app.click("tab_moe")
    report = app.wait(lambda r: r["panel"] == "moe" and "moe_cv2_fraction" in r["shown"], "the Experts panel's CV^2 line", 10)
    fraction = np.array(report["shown"]["moe_fraction"], dtype=np.float64)
    want = float(np.var(fraction) / np.mean(fraction) ** 2)
    if abs(report["shown"]["moe_cv2_fraction"] - want) > 1e-5 * max(1.0, want) or not 0 <= want <= len(fraction) - 1:
        raise Failure(f"the Experts panel's CV^2 {report['shown']['moe_cv2_fraction']} is not numpy's {want} of {fraction}")
    log(f"  Experts panel: CV(f)^2 = {want:.5f}, CV(P)^2 = {report['shown']['moe_cv2_importance']:.5f}, f.P loss {report['shown']['moe_aux_loss']:.5f}")
    router_by_hand(app, out)
    published_tables(app, cli, out)
    # The Attention panel's views: heatmap, lines (L) at another layer and head, the grid (G).
    app.click("tab_attention")
    app.wait(lambda r: r["panel"] == "attention", "the Attention tab", 10)
    app.defocus()
    app.key("l")
    app.key("Down")
    app.key("Right")
    report = app.wait(lambda r: r["lines"] and r["layer"] == 1 and r["head"] == 1 and not r["busy"], "the lines view at 1.1", 10)
    array, name = export_npy(app, "lines view")
    if name != "attention_l1_h1_probs" or array.shape != (report["tokens"], report["tokens"]):
        raise Failure(f"the lines view at layer 1 head 1 exported {name} {None if array is None else array.shape}")
    want = dump_map(cli, out, model, report["prompt"], 1, 1)
    worst = float(np.abs(np.nan_to_num(array, nan=0.0) - want).max())
    if worst > 1e-5:
        raise Failure(f"the lines view's export differs from forward --dump's layer 1 head 1 by {worst}")
    app.key("l")
    app.key("g")
    report = app.wait(lambda r: r["grid"] and not r["busy"], "the grid", 10)
    array, name = export_npy(app, "grid")
    T, H = report["tokens"], report["n_head"]
    if name is None or not name.startswith("attention_grid") or array.shape != (len(report["held_layers"]), H, T, T):
        raise Failure(f"the grid exported {name} {None if array is None else array.shape}")
    log(f"  views: lines -> attention_l1_h1_probs (equal to forward --dump's, max |diff| {worst:.2g}), grid -> {name} {array.shape}")
    app.key("g")
    app.quit()


def main():
    tscope, cli, models, out = sys.argv[1:5]
    os.makedirs(out, exist_ok=True)

    def session(start):
        long_prompt_last_layer(start, cli, out)
        every_view(start, cli, models, out)

    return drive(tscope, out, session, log, size=(1600, 1000))


if __name__ == "__main__":
    sys.exit(main())
