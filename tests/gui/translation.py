#!/usr/bin/python3
"""The Translation panel driven as hands use it (hands.py) at 1600x1000 on the shipped
encoder-decoder assets/models/dates-encdec: a source typed key by key is translated by Translate
(greedy) into the exact ISO date; Clear target then Step writes one token; beam search shows its
best continuation and Translate takes it; changing the layer and head, toggling the lines view and
hovering a target token change the pixels of the maps; Export CSV writes the cross-attention (a
row per decoder step, summing to 1); a source past the context (58 characters) says how many
tokens were dropped; an empty source is one error line and the app stays alive; a decoder-only
model shows the one-line note with its button, which opens the translator again with the source
kept. Inside the block, the attribution counts the cross-attention's heads. Screenshots are left in OUT.
usage: translation.py TSCOPE MODELS_DIR OUT"""
import os
import shutil
import sys
import time

from hands import Failure, differs, drive, save_png

SOURCE = "the third of may two thousand and seven"
EXPECTED = "2007-05-03"
LONG_SOURCE = "the twenty seventh of september two thousand and twenty three"  # 61 characters


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def shown(report):
    return report.get("shown", {}).get("translation", {})


def settled(app, what, predicate=lambda f: True, timeout=60, region=None):
    """Waits until the panel shows a snapshot of what is on screen (no forward running) for which
    predicate(facts) holds, with `region` drawn when given; returns the report."""
    return app.wait(lambda r: not r["busy"] and shown(r).get("current") and predicate(shown(r)) and (region is None or region in r["regions"]),
                    what, timeout)


def type_source(app, text):
    app.click("translation_source")
    app.key("ctrl+a")
    if text:
        app.type(text)
    else:
        app.key("Delete")
    app.defocus()


def drag_slider_to_end(app, name):
    """Grabs a slider near its left end and drags far past its right end: its largest value (the
    region includes the label, so its right end is not the slider's)."""
    x0, y0, x1, y1 = app.stable_region(name)
    app.drag(x0 + 4, (y0 + y1) / 2, x1 + 300, (y0 + y1) / 2)
    app.pause(0.1)


def snap(app, out, name):
    image = app.screenshot()
    save_png(os.path.join(out, f"{name}.png"), image)
    return image


def session(start, out, models_dir):
    dates = os.path.join(models_dir, "dates-encdec")
    app = start(["--model", dates])
    app.settle()
    app.click("tab_translation")
    app.wait(lambda r: r["panel"] == "translation", "the Translation tab", 10)
    report = settled(app, "the first translation snapshot")
    if not shown(report).get("encoder_decoder"):
        raise Failure(f"the Translation tab on dates-encdec says it has no encoder: {shown(report)}")

    # A source typed key by key, then Translate with greedy decoding: the exact ISO date.
    type_source(app, SOURCE)
    report = settled(app, "the typed source", lambda f: f.get("source_tokens") == len(SOURCE))
    if shown(report)["target_tokens"] != 0:
        raise Failure(f"typing a source should start an empty target: {shown(report)}")
    app.click("translation_mode_greedy")
    settled(app, "greedy mode", lambda f: f["mode"] == "greedy")
    app.click("translation_translate")
    report = settled(app, f"the target {EXPECTED}", lambda f: f.get("finished"), 90)
    facts = shown(report)
    if facts["target"] != EXPECTED:
        raise Failure(f"Translate wrote {facts['target']!r} for {SOURCE!r}, expected {EXPECTED!r}")
    probabilities = facts["probabilities"]
    if len(probabilities) != facts["target_tokens"] or min(probabilities) < 0.5:
        raise Failure(f"each target token's probability: {probabilities} for {facts['target_tokens']} tokens")
    log(f"  Translate (greedy): {SOURCE!r} -> {facts['target']!r} + end token; lowest token probability {min(probabilities):.4f}")
    snap(app, out, "translation_translated")

    # Clear target, then Step: one token, the first digit.
    app.click("translation_clear")
    report = settled(app, "the cleared target", lambda f: f["target_tokens"] == 0)
    app.click("translation_step")
    report = settled(app, "one stepped token", lambda f: f["target_tokens"] == 1)
    if shown(report)["target"] != EXPECTED[0]:
        raise Failure(f"Step wrote {shown(report)['target']!r}, expected {EXPECTED[0]!r}")
    log(f"  Clear target, Step: {shown(report)['target']!r}")

    # Beam search: its best continuation after the stepped token, then Translate takes it.
    app.click("translation_mode_beam")
    report = settled(app, "the beam", lambda f: f["mode"] == "beam" and "beam_best" in f, region="translation_beam_best")
    facts = shown(report)
    if facts["beam_best"].rstrip("$") != EXPECTED[1:] or not facts["beam_log_prob"] > -1.0:
        raise Failure(f"beam search after {EXPECTED[0]!r}: best {facts['beam_best']!r}, log p {facts['beam_log_prob']}")
    app.click("translation_translate")
    report = settled(app, "the beam's translation", lambda f: f.get("finished"))
    if shown(report)["target"] != EXPECTED:
        raise Failure(f"Translate in beam mode wrote {shown(report)['target']!r}")
    log(f"  beam search (width {facts['beam_width']}): best {facts['beam_best']!r}, log p {facts['beam_log_prob']:.4f}; Translate took it")
    snap(app, out, "translation_beam")

    # Inside the block on the translator: the direct logit attribution has a cross-attention row per
    # decoder layer, and its parts sum to the logit.
    app.click("tab_inside")
    report = app.wait(lambda r: r["panel"] == "inside" and not r["busy"] and r.get("shown", {}).get("inside", {}).get("dla_cross_parts", 0) > 0,
                      "the attribution with the cross-attention's parts", 60)
    inside = report["shown"]["inside"]
    expected_parts = report["n_layer"] * (report["n_head"] + 1)
    if inside["dla_cross_parts"] != expected_parts or abs(inside["dla_sum"] - inside["dla_logit"]) > 1e-3 * max(1.0, abs(inside["dla_logit"])):
        raise Failure(f"the attribution on dates-encdec: {inside['dla_cross_parts']} cross parts (expected {expected_parts}), "
                      f"sum {inside['dla_sum']} vs logit {inside['dla_logit']}")
    snap(app, out, "translation_inside")
    log(f"  Inside the block: {inside['dla_cross_parts']} cross-attention parts; the parts sum to the logit {inside['dla_logit']:.4f}")
    # Every cross-attention head zero-ablated from the grid's "L x" rows: the decoder loses the source,
    # so the logit of the token it was sure of drops; Clear all brings it back.
    clean_logit = inside["dla_logit"]
    for layer in range(report["n_layer"]):
        for head in range(report["n_head"]):
            app.click(f"ablate_{layer}_x{head}")
    count = report["n_layer"] * report["n_head"]
    report = app.wait(lambda r: r["interventions"] == count and not r["busy"] and
                      r.get("shown", {}).get("inside", {}).get("dla_logit", clean_logit) != clean_logit, "the cross heads ablated", 60)
    inside = report["shown"]["inside"]
    if "x" not in inside["interventions"] or not inside["dla_logit"] < clean_logit - 1.0:
        raise Failure(f"ablating every cross-attention head: {inside['interventions']!r}, logit {inside['dla_logit']} (clean {clean_logit})")
    snap(app, out, "translation_inside_cross_ablated")
    log(f"  {count} cross-attention heads ablated from the grid: the logit went from {clean_logit:.3f} to {inside['dla_logit']:.3f}")
    app.click("ablate_clear")
    app.wait(lambda r: r["interventions"] == 0 and not r["busy"], "the interventions cleared", 30)
    app.click("tab_translation")
    report = settled(app, "the Translation tab again", lambda f: f.get("finished"))

    # Another layer and head, the lines view, a hovered target token: each changes the maps' pixels.
    last_layer, last_head = report["n_layer"] - 1, report["n_head"] - 1
    before = app.crop(app.screenshot(), "translation_cross_heatmap")
    drag_slider_to_end(app, "translation_layer")
    drag_slider_to_end(app, "translation_head")
    report = settled(app, "layer and head changed", lambda f: f["layer"] == last_layer and f["head"] == last_head)
    app.pause(0.3)
    after = app.crop(app.screenshot(), "translation_cross_heatmap")
    if not differs(before, after):
        raise Failure("another decoder layer and head did not change the cross-attention heatmap")
    # Export CSV writes the cross-attention on screen: a row per decoder step, a column per source token.
    before_files = set(os.listdir(out))
    app.click("export_csv")
    name = f"tscope-cross_attention_l{last_layer}_h{last_head}-"
    app.wait(lambda r: any(f.startswith(name) and f.endswith(".csv") for f in set(os.listdir(out)) - before_files), "the exported CSV", 10)
    exported = next(f for f in set(os.listdir(out)) - before_files if f.startswith(name))
    with open(os.path.join(out, exported)) as f:
        rows = [[float(v) for v in line.split(",")] for line in f.read().splitlines()]
    steps, sources = shown(report)["target_tokens"] + 1, shown(report)["source_tokens"]
    if len(rows) != steps or any(len(row) != sources for row in rows) or max(abs(sum(row) - 1) for row in rows) > 1e-4:
        raise Failure(f"{exported}: {len(rows)} rows of {[len(row) for row in rows][:3]}..., expected {steps} rows of {sources} summing to 1")
    log(f"  Export CSV on the Translation tab: {exported}, {steps} x {sources}, every row sums to 1")
    panel_before = app.crop(app.screenshot(), "panel")
    app.click("translation_lines")
    report = settled(app, "the lines view", lambda f: f["lines"])
    app.wait(lambda r: "translation_cross_lines" in r["regions"], "the lines view drawn", 10)
    app.pause(0.3)
    lines = snap(app, out, "translation_lines")
    if not differs(panel_before, app.crop(lines, "panel")):
        raise Failure("the lines view did not change the panel")
    x0, y0, x1, y1 = app.stable_region("translation_target_token_3")
    app.hover((x0 + x1) / 2, (y0 + y1) / 2)
    report = app.wait(lambda r: shown(r).get("outlined_row") == 2, "the hovered target token's row outlined", 10)
    hovered = snap(app, out, "translation_hovered")
    if not differs(app.crop(lines, "translation_cross_lines"), app.crop(hovered, "translation_cross_lines")):
        raise Failure("hovering a target token did not change the lines view")
    log(f"  layer {shown(report)['layer']} head {shown(report)['head']}, lines view, hovered token 3 (row 2): the pixels changed each time")
    app.click("translation_lines")
    settled(app, "the heatmap again", lambda f: not f["lines"])

    # A source past the context: the last 58 tokens run, a line says how many were dropped.
    app.click("translation_source")
    app.key("ctrl+a")
    app.paste(LONG_SOURCE)
    app.defocus()
    n_ctx = report["n_ctx"]
    report = settled(app, "the long source", lambda f: f.get("source_tokens") == n_ctx)
    if shown(report)["dropped_source_tokens"] != len(LONG_SOURCE) - n_ctx or "translation_dropped_note" not in report["regions"]:
        raise Failure(f"a {len(LONG_SOURCE)}-character source: {shown(report)}, note shown: {'translation_dropped_note' in report['regions']}")
    snap(app, out, "translation_long_source")
    log(f"  a {len(LONG_SOURCE)}-character source: {n_ctx} run, {shown(report)['dropped_source_tokens']} dropped, the note is on screen")

    # An empty source: one error line, the app alive; then a source again.
    type_source(app, "")
    report = app.wait(lambda r: not r["busy"] and "source is empty" in r["error"], "the empty source's error", 30)
    if "\n" in report["error"] or "translation_error" not in report["regions"] or shown(report).get("error") != report["error"]:
        raise Failure(f"the empty source: error {report['error']!r}, regions {sorted(k for k in report['regions'] if 'translation' in k)}")
    snap(app, out, "translation_empty_source")
    log(f"  an empty source: {report['error']!r}")
    app.check_running()

    # Another model with a source in the box, and back through the tab's own button.
    type_source(app, SOURCE)
    settled(app, "the source again", lambda f: f.get("source_tokens") == len(SOURCE))
    small = os.path.join(models_dir, "brown-small")
    app.click("model_path")
    app.key("ctrl+a")
    app.type(small)
    app.click("open_model")
    report = app.wait(lambda r: r["model"] == small and r["snapshot"] > 0 and not r["busy"], "brown-small to open", 60)
    if report["error"] or report["tokens"] < 2:
        raise Failure(f"brown-small after the translator: {report['tokens']} tokens, error {report['error']!r}")
    small_prompt = report["prompt"]
    report = app.wait(lambda r: shown(r) == {"encoder_decoder": False} and "translation_open_encdec" in r["regions"], "the no-encoder note", 10)
    snap(app, out, "translation_decoder_only")
    app.click("translation_open_encdec")
    report = app.wait(lambda r: r["model"] == dates and not r["busy"] and r["panel"] == "translation", "the translator again", 60)
    report = settled(app, "the kept source", lambda f: f.get("source_tokens") == len(SOURCE))
    if shown(report)["error"]:
        raise Failure(f"back on the translator: {shown(report)}")
    log(f"  brown-small (prompt {small_prompt!r}) showed the note; its button opened the translator with the source kept")
    app.check_running()
    app.quit()


def main():
    tscope, models_dir, out = sys.argv[1:4]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    return drive(tscope, out, lambda start: session(start, out, models_dir), log, size=(1600, 1000))


if __name__ == "__main__":
    sys.exit(main())
