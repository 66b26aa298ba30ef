#!/usr/bin/python3
"""The Vision panel as hands use it, on the shipped digits-vit: it opens on a test digit whose classes
equal `tscope-cli classify --digit 0`; Clear empties the canvas; a "1" drawn stroke by stroke with
the mouse becomes the predicted class; the shift and noise buttons change the picture; a click in
"masks a patch" mode blanks that patch and shows the classes before and after, as `tscope-cli
classify` gives them for the masked picture; a click in "shows a patch's attention" mode makes that
patch the query (the overlay changes), the rollout and the Alt+V shortcut work; switching to a text
model (brown-small) shows the panel's line and its button opens digits-vit again; on a ViT checkpoint a
sample photograph, a bad path and a picture chosen in the file browser (Browse...).
usage: vision.py TSCOPE TSCOPE_CLI MODELS_DIR OUT"""
import json
import os
import shutil
import subprocess
import sys
import time

from hands import Failure, differs, drive, save_png


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def vision(report):
    return report["shown"].get("vision", {})


def top_label(report):
    top = vision(report).get("top", [])
    return top[0]["label"] if top else None


def settled(app, what, predicate=lambda r: True, timeout=30):
    """The newest snapshot for the state on screen: the panel's facts come from the frame after it."""
    return app.wait(lambda r: not r["busy"] and vision(r).get("top") and predicate(r), what, timeout)


def stroke(app, region, points):
    """One stroke of the left button through `points` (fractions of the image), the pointer resting
    a moment at each so the app draws frames (each frame paints under it)."""
    x0, y0, x1, y1 = region
    at = [(x0 + (x1 - x0) * u, y0 + (y1 - y0) * v) for u, v in points]
    steps = []
    for x, y in at[1:]:
        steps += ["mousemove", "--sync", int(x), int(y), "sleep", "0.08"]
    app.press(at[0][0], at[0][1], 1, tuple(steps))


def main():
    tscope, cli, models_dir, out = sys.argv[1:5]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    models_dir = os.path.realpath(models_dir)
    vit = os.path.join(models_dir, "digits-vit")
    small = os.path.join(models_dir, "brown-small")

    def classify(*args):
        return json.loads(subprocess.run([cli, "classify", "--model", vit, "--backend", "cpu", "--top", "5", *args], capture_output=True,
                                         check=True).stdout)

    def session(start):
        app = start(["--model", vit, "--panel", "vision"])
        report = settled(app, "digits-vit on its first test digit", timeout=60)
        want = classify("--digit", "0")
        shown = vision(report)["top"]
        if [c["id"] for c in shown] != [c["id"] for c in want["top"]] or abs(shown[0]["p"] - want["top"][0]["p"]) > 1e-4:
            raise Failure(f"the panel's classes {shown} are not tscope-cli classify --digit 0's {want['top']}")
        save_png(os.path.join(out, "digit.png"), app.screenshot())
        log(f"  test digit 0 (a {vision(report)['test_label']}): {top_label(report)} {shown[0]['p']:.3f}, as tscope-cli classify")

        # Clear, then a "1" drawn stroke by stroke down the middle of the canvas.
        app.click("vision_clear")
        report = app.wait(lambda r: vision(r).get("ink") == 0 and not r["busy"], "an empty canvas", 10)
        blank = app.screenshot()
        region = app.stable_region("vision_image")
        for u in (0.44, 0.56):  # columns 3 and 4, top to bottom
            stroke(app, region, [(u, 0.06 + 0.125 * i) for i in range(8)])
        report = settled(app, "the drawn 1 classified", lambda r: vision(r)["ink"] > 2)
        if top_label(report) != "1" or not differs(blank, app.screenshot()):
            raise Failure(f"a drawn 1 was read as {vision(report)['top'][:3]} (ink {vision(report)['ink']})")
        drawn = app.screenshot()
        save_png(os.path.join(out, "drawn_1.png"), drawn)
        log(f"  drew a 1 in two strokes: {top_label(report)} {vision(report)['top'][0]['p']:.3f}")

        # The shift moves the ink: the picture changes, the ink stays on the canvas.
        ink = vision(report)["ink"]
        app.click("vision_shift_left")
        report = settled(app, "the shifted digit", lambda r: vision(r)["ink"] != ink or r["snapshot"] > report["snapshot"])
        if not differs(drawn, app.screenshot()):
            raise Failure("the shift did not move the picture")
        app.click("vision_noise")
        settled(app, "the noisy digit", lambda r: vision(r)["ink"] != vision(report)["ink"])
        log("  shifted left and added noise: the picture changed")

        # Back to a test digit, then mask the patch in the grid's second row and column.
        app.click("vision_test_image")
        report = settled(app, "test image 0 again", lambda r: vision(r)["test_label"] >= 0)
        app.click("vision_click_mask")
        x0, y0, x1, y1 = app.stable_region("vision_image")
        app.click_at(x0 + (x1 - x0) * 0.375, y0 + (y1 - y0) * 0.375)  # patch (1,1): index 5 of the 4 x 4 grid
        report = settled(app, "a masked patch", lambda r: vision(r)["masked"] == [5] and vision(r).get("before_top"))
        before = vision(report)["before_top"]
        if [c["id"] for c in before] != [c["id"] for c in want["top"]]:
            raise Failure(f"the 'before' classes {before} are not the whole digit's {want['top']}")
        masked = classify("--digit", "0", "--mask", "5")
        after = vision(report)["top"]
        if [c["id"] for c in after] != [c["id"] for c in masked["top"]] or abs(after[0]["p"] - masked["top"][0]["p"]) > 1e-4:
            raise Failure(f"the 'after' classes {after} are not tscope-cli classify --mask 5's {masked['top']}")
        save_png(os.path.join(out, "masked.png"), app.screenshot())
        log(f"  masked patch (1,1): before {before[0]['label']} {before[0]['p']:.3f}, after {top_label(report)} "
            f"{vision(report)['top'][0]['p']:.3f}")
        app.click("vision_unmask")
        settled(app, "nothing masked", lambda r: vision(r)["masked"] == [] and not vision(r).get("before_top"))

        # A click in "shows a patch's attention" mode makes the patch the query; the rollout works.
        cls_overlay = vision(app.report())["overlay"]
        app.click("vision_click_look")
        app.click_at(x0 + (x1 - x0) * 0.875, y0 + (y1 - y0) * 0.125)  # patch (0,3): index 3
        report = app.wait(lambda r: vision(r).get("query") == 4, "patch (0,3) as the query", 10)
        if vision(report)["overlay"] == cls_overlay or len(vision(report)["overlay"]) != 16:
            raise Failure(f"the overlay did not change with the query: {vision(report)['overlay']}")
        app.click("vision_rollout")
        report = app.wait(lambda r: vision(r).get("rollout") is True, "the rollout", 10)
        if abs(sum(vision(report)["overlay"]) - 1) > 0.5:
            raise Failure(f"the rollout row over the patches: {vision(report)['overlay']}")
        save_png(os.path.join(out, "rollout.png"), app.screenshot())
        log("  patch (0,3) as the query, then the rollout across the 4 layers")

        # The Attention tab shows the patches as tokens; Alt+V comes back.
        app.click("tab_attention")
        app.wait(lambda r: r["panel"] == "attention", "the Attention tab", 10)
        app.key("alt+v")
        app.wait(lambda r: r["panel"] == "vision", "Alt+V back to Vision", 10)

        # A head ablated in the Inside tab: the Vision panel shows the classes before and after.
        app.click("tab_inside")
        app.wait(lambda r: r["panel"] == "inside" and "ablate_3_mlp" in r["regions"], "the Inside tab's toggles", 10)
        app.click("ablate_3_mlp")
        app.key("alt+v")
        report = settled(app, "the ablated model's classes", lambda r: r["panel"] == "vision" and vision(r).get("before_top"))
        log(f"  layer 3's MLP zeroed: before {vision(report)['before_top'][0]['label']} {vision(report)['before_top'][0]['p']:.3f}, "
            f"after {top_label(report)} {vision(report)['top'][0]['p']:.3f}")
        app.click("tab_inside")
        app.wait(lambda r: r["panel"] == "inside", "the Inside tab", 10)
        app.click("ablate_clear")
        app.key("alt+v")
        settled(app, "no ablation", lambda r: r["panel"] == "vision" and not vision(r).get("before_top"))

        # A text model: the panel's line and its button back to digits-vit.
        app.click("model_path")
        app.key("ctrl+a")
        app.type(small)
        app.click("open_model")
        app.wait(lambda r: r["model"] == small and not r["busy"] and r["snapshot"] > 0, "brown-small", 60)
        app.click("tab_vision")
        report = app.wait(lambda r: vision(r).get("image_model") is False and "vision_open_digits" in r["regions"], "the text model's line", 10)
        app.click("vision_open_digits")
        report = settled(app, "digits-vit again", lambda r: r["model"] == vit, 60)
        log(f"  brown-small: the panel's line; its button opened digits-vit again ({top_label(report)})")
        checkpoint(app)
        app.quit()

    def checkpoint(app):
        """A ViT checkpoint in HF's layout (3 channels, 12 x 12 in patches of 4: the golden script's): a sample
        photograph resized as its preprocessor_config.json says gives `tscope-cli classify --image`'s classes,
        and a path that is no picture is one line while the picture before stays."""
        golden = os.path.join(out, "golden")
        subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "..", "golden",
                        "hf_vit_reference.py"), golden], check=True, capture_output=True)
        model = os.path.join(golden, "vit_rgb_gelu_new")
        app.click("model_path")
        app.key("ctrl+a")
        app.type(model)
        app.click("open_model")
        app.wait(lambda r: r["model"] == model and not r["busy"] and vision(r).get("top"), "the ViT checkpoint", 60)
        samples = sorted(os.listdir(os.path.join(os.path.dirname(__file__), "..", "..", ".cache", "data", "images")))
        index = samples.index("chelsea.png")
        app.click(f"vision_sample_{index}")
        report = settled(app, "the cat through the checkpoint", lambda r: vision(r).get("picture", "").endswith("chelsea.png"))
        photo = vision(report)["picture"]
        want = json.loads(subprocess.run([cli, "classify", "--model", model, "--backend", "cpu", "--top", "5", "--image", photo],
                                         capture_output=True, check=True).stdout)
        shown = vision(report)["top"]
        if [c["id"] for c in shown] != [c["id"] for c in want["top"]] or abs(shown[0]["p"] - want["top"][0]["p"]) > 1e-4:
            raise Failure(f"the checkpoint's classes {shown} are not tscope-cli classify --image's {want['top']}")
        save_png(os.path.join(out, "checkpoint.png"), app.screenshot())
        app.click("vision_path")
        app.key("ctrl+a")
        app.type(os.path.join(models_dir, "digits-vit", "config.json"))
        app.click("vision_open_picture")
        report = app.wait(lambda r: vision(r).get("picture_error"), "the bad picture's line", 10)
        if "\n" in vision(report)["picture_error"] or not vision(report)["picture"].endswith("chelsea.png"):
            raise Failure(f"a file that is no picture: {vision(report)['picture_error']!r}, picture {vision(report)['picture']}")
        log(f"  a ViT checkpoint (3 x 12 x 12, 9 patches): chelsea.png as tscope-cli classify --image gives it; "
            f"config.json as a picture: {vision(report)['picture_error']}")

        # Browse...: the file browser opens on the sample photographs, lists pictures only, and the one
        # chosen with the keyboard is classified as tscope-cli classify --image classifies it.
        app.click("vision_browse")
        report = app.wait(lambda r: r["file_browser"]["open"] and r["file_browser"]["purpose"] == "image", "the picture browser", 5)
        listing = report["file_browser"]
        names = [e["name"] for e in listing["entries"]]
        if os.path.realpath(listing["folder"]) != os.path.realpath(os.path.dirname(photo)) or "coffee.png" not in names or \
                any(e["kind"] not in ("image", "folder") for e in listing["entries"]):
            raise Failure(f"the picture browser: {listing}")
        app.key("Home")
        for _ in range(names.index("coffee.png")):
            app.key("Down")
        app.wait(lambda r: r["file_browser"]["selected"] == names.index("coffee.png"), "coffee.png selected", 5)
        save_png(os.path.join(out, "browse_picture.png"), app.screenshot())
        before = app.report()["snapshot"]
        app.key("Return")
        # A newer snapshot than the last picture's: the frame that shows coffee.png's name may still
        # show chelsea.png's classes before its forward has started.
        report = settled(app, "the browsed picture", lambda r: not r["file_browser"]["open"] and vision(r).get("picture", "").endswith("coffee.png")
                         and r["snapshot"] > before)
        want = json.loads(subprocess.run([cli, "classify", "--model", model, "--backend", "cpu", "--top", "5", "--image", vision(report)["picture"]],
                                         capture_output=True, check=True).stdout)
        if [c["id"] for c in vision(report)["top"]] != [c["id"] for c in want["top"]]:
            raise Failure(f"the browsed picture's classes {vision(report)['top']} are not tscope-cli classify --image's {want['top']}")
        log(f"  Browse...: the browser opened on {listing['folder']} ({len(names)} entries); coffee.png chosen with the keyboard, "
            f"classified as the CLI does ({vision(report)['top'][0]['label']})")

    return drive(tscope, out, session, log, size=(1600, 1000))


if __name__ == "__main__":
    sys.exit(main())
