"""Drives the real tscope window as hands do: a private Xvfb display, synthetic mouse and keyboard
input through xdotool (XTEST), the clipboard through xclip, screen captures through xwd, and the
app's own report of itself (TSCOPE_UI_REPORT: frame counter, panel, tokens, named regions).
Every wait also checks that the UI thread keeps answering: a frame within 1 s, or the test fails
as a hang; a process that exits is a crash. Used by interactive.py and monkey.py."""
import json
import os
import struct
import subprocess
import time
import zlib

import numpy as np

HANG_SECONDS = 1.0  # the UI thread must draw a frame at least this often


class Failure(Exception):
    pass


class Display:
    """A private Xvfb server (the number chosen by Xvfb itself)."""

    def __init__(self, width=1600, height=1000):
        read, write = os.pipe()
        self.process = subprocess.Popen(
            ["Xvfb", "-displayfd", str(write), "-screen", "0", f"{width}x{height}x24", "-nolisten", "tcp"],
            pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(write)
        number = b""
        with os.fdopen(read, "rb") as pipe:
            while not number.endswith(b"\n"):
                chunk = pipe.read(1)
                if not chunk:
                    raise Failure("Xvfb did not start")
                number += chunk
        self.name = ":" + number.decode().strip()

    def close(self):
        self.process.terminate()
        self.process.wait(timeout=10)


class App:
    """One tscope process on a Display, with its report file and input helpers."""

    def __init__(self, display, tscope, workdir, args=(), log_name="app.log", fresh=True):
        self.display, self.workdir = display, workdir
        self.report_path = os.path.join(workdir, "ui_report.json")
        if os.path.exists(self.report_path):
            os.remove(self.report_path)
        # Sweeps started in the Scaling panel (by a test or the monkey) go under the test's folder, never ~/.local.
        # The preferences file too (user_preferences.h): under the test's folder, and not read unless
        # the test asks (fresh=False), so no test starts where another one left the window.
        self.env = dict(os.environ, DISPLAY=display.name, TSCOPE_UI_REPORT=self.report_path,
                        TSCOPE_SWEEPS_DIR=os.environ.get("TSCOPE_SWEEPS_DIR", os.path.join(workdir, "sweeps")),
                        XDG_CONFIG_HOME=os.path.join(workdir, "config"))
        if fresh:
            args = [*args, "--fresh"]
        self.log_path = os.path.join(workdir, log_name)
        self.log = open(self.log_path, "wb")
        self.process = subprocess.Popen([tscope, *args], cwd=workdir, env=self.env, stdout=self.log, stderr=subprocess.STDOUT)
        self.last_frame, self.last_frame_time, self.worst_gap = -1, time.monotonic(), 0.0
        self.actions = 0
        deadline = time.monotonic() + 60
        while not os.path.exists(self.report_path):
            self.check_running()
            if time.monotonic() > deadline:
                raise Failure("no window report within 60 s")
            time.sleep(0.1)
        self.last_frame_time = time.monotonic()
        self.window = self.wait_window()
        self.x("windowfocus", "--sync", self.window)

    # --- liveness -------------------------------------------------------------------------
    def check_running(self):
        code = self.process.poll()
        if code is not None:
            self.log.flush()
            tail = open(self.log_path, "rb").read()[-3000:].decode(errors="replace")
            raise Failure(f"tscope exited with status {code} after {self.actions} actions; its output ends:\n{tail}")

    def report(self):
        """The newest report; checks the process is alive and the UI thread drew within HANG_SECONDS."""
        self.check_running()
        for _ in range(20):
            try:
                with open(self.report_path) as f:
                    report = json.load(f)
                break
            except (OSError, ValueError):
                time.sleep(0.01)
        else:
            raise Failure("cannot read the window report")
        now = time.monotonic()
        if report["frame"] != self.last_frame:
            self.last_frame, self.last_frame_time = report["frame"], now
        gap = now - self.last_frame_time
        self.worst_gap = max(self.worst_gap, gap)
        if gap > HANG_SECONDS + 0.15:  # + the report's own 100 ms period
            raise Failure(f"the UI thread drew no frame for {gap:.2f} s (a hang) after {self.actions} actions; last report: "
                          + json.dumps({k: v for k, v in report.items() if k not in ("regions", "prompt")}))
        return report

    def wait(self, predicate, what, timeout=30.0):
        """Polls the report until predicate(report) holds; fails with `what` after timeout seconds."""
        deadline = time.monotonic() + timeout
        while True:
            report = self.report()
            if predicate(report):
                return report
            if time.monotonic() > deadline:
                raise Failure(f"timed out waiting for {what}; last report: "
                              + json.dumps({k: v for k, v in report.items() if k not in ("regions", "prompt")}))
            time.sleep(0.05)

    def settle(self, timeout=60.0):
        """Waits until the app has drawn a few frames and no forward is running."""
        frame = self.report()["frame"]
        return self.wait(lambda r: not r["busy"] and r["frame"] >= frame + 3, "the model to finish", timeout)

    def pause(self, seconds):
        """Sleeps while checking liveness."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.report()
            time.sleep(min(0.05, max(0.0, end - time.monotonic())))

    def wait_window(self):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            found = subprocess.run(["xdotool", "search", "--pid", str(self.process.pid)], env=self.env,
                                   capture_output=True, text=True).stdout.split()
            if found:
                return found[-1]
            self.report()
            time.sleep(0.1)
        raise Failure("tscope's window did not appear")

    # --- input ----------------------------------------------------------------------------
    def x(self, *args):
        subprocess.run(["xdotool", *map(str, args)], env=self.env, check=True, capture_output=True)

    def region(self, name, report=None):
        regions = (report or self.report())["regions"]
        if name not in regions:
            raise Failure(f"no region '{name}' on screen (regions: {sorted(regions)})")
        return regions[name]

    def hover(self, x, y, frames=2, timeout=10.0):
        """Moves the pointer to (x, y) and waits until the app has drawn `frames` frames with it
        there, as a hand rests on a widget before pressing. Without a window manager nothing gives
        the window focus, and ImGui's GLFW backend reads the pointer only while the window has
        focus: focus it, as a WM would. ImGui ignores a press on a tab (an item that allows
        overlap) in the frame the pointer arrives, so the wait counts the app's frames (its report
        says where it saw the pointer and since which frame), not seconds: a busy machine that
        starves the app for a while cannot fold the arrival and the press into one frame."""
        x, y = int(x), int(y)
        self.x("windowfocus", "--sync", self.window, "mousemove", "--sync", x, y)
        return self.wait(lambda r: r["mouse"]["x"] == x and r["mouse"]["y"] == y and r["frame"] >= r["mouse"]["since_frame"] + frames,
                         f"the app to see the pointer at {x},{y}", timeout)

    def press(self, x, y, button=1, then=()):
        """Presses at (x, y) (hovered first), runs the xdotool steps `then` with the button down and
        releases; returns once the app's report counts the press. A press the app has not seen
        while drawing frames for 10 s is lost for good (X's queue is read every frame), so it is
        made again, once, and said on stdout: that can never click twice."""
        for attempt in range(2):
            self.hover(x, y)
            before = self.report()
            self.x("mousedown", button, "sleep", "0.05", *then, "mouseup", button)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                report = self.report()
                if report["mouse"]["presses"] > before["mouse"]["presses"]:
                    return report
                time.sleep(0.02)
            print(f"hands: the app drew frames {before['frame']}..{report['frame']} without seeing the press at {int(x)},{int(y)} "
                  f"(its pointer: {report['mouse']}); pressing again", flush=True)
        raise Failure(f"the app never saw a press at {int(x)},{int(y)}: {report['mouse']}")

    def click_at(self, x, y, button=1):
        self.actions += 1
        self.press(x, y, button)

    def double_click_at(self, x, y):
        """Two presses at rest over (x, y) within ImGui's double-click time (0.30 s), each held
        50 ms (ImGui 1.86 samples the button once per frame); returns once the app counted both."""
        self.actions += 1
        self.hover(x, y)
        before = self.report()["mouse"]["presses"]
        self.x("mousedown", 1, "sleep", "0.05", "mouseup", 1, "sleep", "0.05", "mousedown", 1, "sleep", "0.05", "mouseup", 1)
        return self.wait(lambda r: r["mouse"]["presses"] >= before + 2, f"a double click at {int(x)},{int(y)}", 10)

    def stable_region(self, name, timeout=10.0):
        """The region as laid out in two reports of different frames: after a new snapshot the
        layout can move for a frame or two (the token strip takes its new height), and a report
        may be 100 ms old."""
        deadline = time.monotonic() + timeout
        last = self.report()
        while True:
            time.sleep(0.05)
            report = self.report()
            if report["frame"] != last["frame"] and self.region(name, report) == self.region(name, last):
                return self.region(name, report)
            if time.monotonic() > deadline:
                raise Failure(f"the region '{name}' kept moving for {timeout} s")
            last = report

    def click(self, name):
        x0, y0, x1, y1 = self.stable_region(name)
        self.click_at((x0 + x1) / 2, (y0 + y1) / 2)
        self.pause(0.1)

    def drag(self, x0, y0, x1, y1):
        self.actions += 1
        self.press(x0, y0, 1, ("mousemove", "--sync", int((x0 + x1) / 2), int((y0 + y1) / 2), "sleep", "0.05",
                               "mousemove", "--sync", int(x1), int(y1), "sleep", "0.05"))

    def scroll_into_view(self, name, container, timeout=10.0):
        """Turns the mouse wheel over region `container` until region `name` lies inside it, as
        a hand scrolls a column to reach a widget below the fold; returns the region."""
        deadline = time.monotonic() + timeout
        while True:
            x0, y0, x1, y1 = self.stable_region(name)
            c0, d0, c1, d1 = self.stable_region(container)
            if y0 >= d0 and y1 <= d1:
                return x0, y0, x1, y1
            if time.monotonic() > deadline:
                raise Failure(f"scrolling '{container}' did not bring '{name}' into view")
            self.actions += 1
            wheel = 5 if y1 > d1 else 4  # X11 buttons 4 and 5: wheel up and down
            self.x("windowfocus", "--sync", self.window, "mousemove", "--sync", int((c0 + c1) / 2), int((d0 + d1) / 2), "click", "--repeat",
                   3, wheel)
            self.pause(0.1)

    def key(self, combo, hold=0.06):
        """Presses and holds a key (ImGui 1.86 samples held keys once per frame)."""
        self.actions += 1
        self.x("windowfocus", "--sync", self.window, "keydown", combo, "sleep", hold, "keyup", combo)
        self.pause(0.05)

    def type(self, text):
        self.actions += 1
        self.x("type", "--delay", "25", "--", text)

    def paste(self, data):
        """Puts bytes on the clipboard and presses Ctrl+V (the prompt must have focus)."""
        if isinstance(data, str):
            data = data.encode()
        clip = subprocess.Popen(["xclip", "-selection", "clipboard", "-t", "UTF8_STRING", "-i"], env=self.env, stdin=subprocess.PIPE)
        clip.communicate(data)
        self.key("ctrl+v")

    def quit(self, timeout=20.0):
        """Ctrl+Q (after a click on the status bar, outside any text field); expects exit status 0."""
        self.defocus()
        self.actions += 1
        self.x("keydown", "ctrl+q", "sleep", 0.06, "keyup", "ctrl+q")
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise Failure("Ctrl+Q did not end tscope")
        if code != 0:
            raise Failure(f"tscope exited with status {code} on Ctrl+Q")

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def defocus(self):
        """Clicks the status bar's blank right end, so key presses go to shortcuts, not a text field."""
        x0, y0, x1, y1 = self.stable_region("panel")
        self.click_at(x1 - 5, y1 + 8)
        self.pause(0.1)

    def screenshot(self):
        """The whole display as an (H, W, 3) uint8 array (xwd's 32-bit ZPixmap, LSB first: B, G, R, x)."""
        data = subprocess.run(["xwd", "-root", "-silent"], env=self.env, capture_output=True, check=True).stdout
        fields = struct.unpack(">25I", data[:100])
        header_size, width, height, bytes_per_line, colors = fields[0], fields[4], fields[5], fields[12], fields[19]
        pixels = np.frombuffer(data, np.uint8, bytes_per_line * height, header_size + colors * 12)
        return pixels.reshape(height, bytes_per_line)[:, :width * 4].reshape(height, width, 4)[:, :, 2::-1]

    def crop(self, image, name, report=None):
        x0, y0, x1, y1 = self.region(name, report)
        return image[max(0, y0):max(0, y1), max(0, x0):max(0, x1)]


def differs(a, b, at_least=0.002):
    """True when more than a fraction `at_least` of the pixels differ (or the shapes do)."""
    if a.shape != b.shape:
        return True
    return np.any(a != b, axis=-1).mean() > at_least


def save_png(path, image):
    """Writes an (H, W, 3) uint8 array as an RGB PNG (for looking at a failure)."""
    height, width, _ = image.shape
    rows = b"".join(b"\x00" + np.ascontiguousarray(image[y]).tobytes() for y in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(rows, 3)) + chunk(b"IEND", b""))


def save_failure_screen(app, out, log):
    """Saves the screen at a failure as OUT/failure.png (when the app is still there) and logs where."""
    if app is None:
        return
    try:
        save_png(os.path.join(out, "failure.png"), app.screenshot())
        log(f"  the screen at the failure: {os.path.join(out, 'failure.png')}")
    except Exception:
        pass


def drive(tscope, out, session, log, size=(1280, 720)):
    """One scripted test on a private display of `size`: session(start) drives the app, where
    start(args, log_name, fresh) starts tscope with `args` (again after a quit, for another start-up;
    fresh=False reads the preferences the last start left in OUT/config).
    Returns the exit code: 0 when it passed, 1 after logging the failure (and saving the screen at
    it) in OUT. Every app started is killed at the end if it is still running."""
    display = Display(*size)
    apps = []

    def start(args, log_name="app.log", fresh=True):
        apps.append(App(display, tscope, out, args, log_name, fresh))
        return apps[-1]

    try:
        session(start)
        log("PASS")
    except Failure as failure:
        log(f"FAIL: {failure}")
        save_failure_screen(apps[-1] if apps else None, out, log)
        return 1
    finally:
        for app in apps:
            app.kill()
        display.close()
    return 0
