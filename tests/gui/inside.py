#!/usr/bin/python3
"""The Inside-the-block panel driven as hands do (hands.py), at 1280x720, on brown-small and on
induction-2l: open the tab; Up/Down step the query token and Left/Right the head (the panel's
report follows); the softmax weights sum to 1 over query + 1 visible keys; hovering a key row
highlights that key; opening the panel reuses the prompt's forward; the direct logit attribution sums to the logit; an intervention toggle
changes the screen and the next-token report (on induction-2l, ablating every layer-1 head breaks
the copy), Clear all restores the clean next token; dragging on the kernel-regression plot moves
the query and the estimate. Screenshots of both models are left in OUT for looking at.
usage: inside.py TSCOPE MODELS_DIR OUT"""
import os
import shutil
import sys
import time

from hands import Failure, differs, drive, save_png


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def inside(report):
    return report.get("shown", {}).get("inside", {})


def check_model(app, out, name, heads_to_ablate):
    app.click("tab_inside")
    report = app.wait(lambda r: r["panel"] == "inside" and "visible_keys" in inside(r) and not r["busy"], "the Inside panel's flow", 60)
    # Opening the panel asks for its per-row capture only: the prompt's forward is reused but its
    # last token (the query row runs again on its own), not rerun from the start.
    if report["reused_tokens"] != report["tokens"] - 1:
        raise Failure(f"{name}: opening the Inside panel reran the prompt: {report['reused_tokens']} of {report['tokens']} tokens reused")
    app.settle()
    app.defocus()
    s = inside(app.report())
    query, head, H = s["query"], s["head"], app.report()["n_head"]
    if abs(s["weights_sum"] - 1) > 1e-4 or s["visible_keys"] != query + 1:
        raise Failure(f"{name}: softmax weights sum {s['weights_sum']} over {s['visible_keys']} keys at query {query}")
    if abs(s["dla_sum"] - s["dla_logit"]) > 1e-3 * max(1.0, abs(s["dla_logit"])):
        raise Failure(f"{name}: the attribution sums to {s['dla_sum']}, the logit is {s['dla_logit']}")
    save_png(os.path.join(out, f"inside_{name}.png"), app.screenshot())
    # Arrow keys: query token and head.
    for combo, field, want in [("Up", "query", query - 1), ("Down", "query", query), ("Right", "head", (head + 1) % H), ("Left", "head", head)]:
        app.key(combo)
        app.wait(lambda r, f=field, w=want: inside(r).get(f) == w, f"{name}: {combo} to make the {field} {want}", 10)
    # Hover the second key's row: it is highlighted (the report names it).
    x0, y0, x1, y1 = app.stable_region("inside_keys")
    keys = inside(app.report())["visible_keys"]
    app.x("windowfocus", "--sync", app.window, "mousemove", "--sync", int(x0 + 3), int(y0 + (y1 - y0) * 1.5 / keys))
    app.wait(lambda r: inside(r).get("hovered_key") == 1, f"{name}: hovering key 1 to highlight it", 10)
    # Interventions: toggles repost; the screen, the banner and the before/after report change.
    clean = inside(app.report())["next_token"]
    before = app.crop(app.screenshot(), "panel")
    for toggle in heads_to_ablate:
        app.click(toggle)
    report = app.wait(lambda r: r["interventions"] == len(heads_to_ablate) and "next_token_clean" in inside(r) and not r["busy"],
                      f"{name}: the ablated snapshot", 60)
    report = app.settle()
    s = inside(report)
    if s["next_token_clean"] != clean or "interventions_status" not in report["regions"] or "interventions_banner" not in report["regions"]:
        raise Failure(f"{name}: after ablating: {s}, regions {sorted(report['regions'])}")
    if not differs(before, app.crop(app.screenshot(), "panel")):
        raise Failure(f"{name}: ablating {heads_to_ablate} did not change the screen")
    save_png(os.path.join(out, f"inside_{name}_ablated.png"), app.screenshot())
    log(f"  {name}: ablated {heads_to_ablate}: next token {clean} -> {s['next_token']} ({s['interventions']})")
    ablated = s["next_token"]
    app.click("ablate_clear")
    report = app.wait(lambda r: r["interventions"] == 0 and inside(r).get("next_token") == clean and not r["busy"], f"{name}: Clear all", 60)
    if "interventions_status" in report["regions"]:
        raise Failure(f"{name}: the status bar still says interventions are active")
    # Kernel regression: drag the query across the plot.
    k0 = report["shown"]["kernel"]
    x0, y0, x1, y1 = app.scroll_into_view("kernel_plot", "inside_side")
    app.drag(x0 + (x1 - x0) * 0.3, (y0 + y1) / 2, x0 + (x1 - x0) * 0.85, (y0 + y1) / 2)
    report = app.wait(lambda r: abs(r["shown"]["kernel"]["query"] - k0["query"]) > 0.5, f"{name}: dragging the kernel query", 10)
    if abs(report["shown"]["kernel"]["estimate"] - k0["estimate"]) < 1e-4:
        raise Failure(f"{name}: the kernel estimate did not change with the query ({k0} -> {report['shown']['kernel']})")
    # The bridge to the dot product: keys of one norm give the Gaussian weights exactly; unequal norms do not.
    bridge = report["shown"]["kernel"]["bridge"]
    if bridge["unequal_norms"] or bridge["max_difference"] > 1e-5:
        raise Failure(f"{name}: equal key norms, yet the Gaussian and dot-product weights differ: {bridge}")
    app.scroll_into_view("kernel_unequal_norms", "inside_side")
    app.click("kernel_unequal_norms")
    report = app.wait(lambda r: r["shown"]["kernel"]["bridge"]["unequal_norms"], f"{name}: unequal key norms", 10)
    if report["shown"]["kernel"]["bridge"]["max_difference"] < 1e-3:
        raise Failure(f"{name}: unequal key norms should part the two weightings: {report['shown']['kernel']['bridge']}")
    log(f"  {name}: kernel to dot product: equal norms differ by {bridge['max_difference']:.1e}, unequal by "
        f"{report['shown']['kernel']['bridge']['max_difference']:.3f}")
    app.click("kernel_unequal_norms")
    return clean, ablated


def main():
    tscope, models_dir, out = sys.argv[1:4]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)

    def session(start):
        app = start(["--window", "1280x720", "--model", os.path.join(models_dir, "brown-small")])
        app.settle()
        check_model(app, out, "brown-small", ["ablate_3_mlp", "ablate_3_0", "ablate_3_1"])
        app.quit()
        # The classic demo: on a repeated sequence the induction heads of layer 1 copy the token
        # that followed the last occurrence; ablating them breaks the copy.
        app = start(["--window", "1280x720", "--model", os.path.join(models_dir, "induction-2l"), "--prompt", "xqzkbmwpxqzkbmw"])
        app.settle()
        clean, ablated = check_model(app, out, "induction-2l", [f"ablate_1_{h}" for h in range(4)])
        if clean == ablated:
            raise Failure(f"induction-2l: ablating every layer-1 head left the next token {clean}")
        app.quit()

    return drive(tscope, out, session, log)


if __name__ == "__main__":
    sys.exit(main())
