#!/usr/bin/python3
"""tscope --help names every registered panel (app/session/panel_list.h) and every training preset
(the list `tscope-cli compare` prints for an unknown one), so the usage cannot fall behind them.
Needs no display: --help exits before the window opens. Usage: help_text.py TSCOPE TSCOPE_CLI SOURCE_DIR"""
import re
import subprocess
import sys
import tempfile

tscope, cli, source = sys.argv[1:4]
help_text = subprocess.run([tscope, "--help"], capture_output=True, text=True, timeout=60, check=True).stdout
with open(f"{source}/app/session/panel_list.h", encoding="utf-8") as f:
    registered = re.findall(r'^TSCOPE_PANEL\(\w+, "([a-z_]+)"', f.read(), re.M)
with tempfile.TemporaryDirectory() as scratch:
    refused = subprocess.run([cli, "compare", "--presets", "no-such-preset", "--out", f"{scratch}/x.json"],
                             capture_output=True, text=True, timeout=60)
presets = re.search(r"one of: ([^)]*)\)", refused.stderr)
problems = []
if len(registered) < 12:
    problems.append(f"read only {len(registered)} panels from panel_list.h")
if not presets:
    problems.append(f"tscope-cli compare did not list the presets: {refused.stderr.strip()}")
panels_line = re.search(r"^panels: (.*)$", help_text, re.M)
presets_line = re.search(r"^training presets: (.*)$", help_text, re.M)
if not panels_line or panels_line.group(1).split() != registered:
    problems.append(f"--help panels {panels_line.group(1) if panels_line else None!r} != registered {registered}")
if presets and (not presets_line or presets_line.group(1).split() != presets.group(1).split(", ")):
    problems.append(f"--help presets {presets_line.group(1) if presets_line else None!r} != {presets.group(1)!r}")
for problem in problems:
    print("help_text:", problem)
sys.exit(1 if problems else 0)
