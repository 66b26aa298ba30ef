#!/usr/bin/env python3
"""docs/SYLLABUS.md keeps its promises: every lecture item's row names something that exists.

The syllabus has one table row per lecture item: | ID | item | shown | where |. This checks, one line
per problem naming the item's ID, and exits 1 if there is any:
- the ID is A<n>.<m>, B<n>.<m> or C<n>.<m> and appears once;
- the "shown" mark is one of live, static, lesson, missing, out of scope (optionally "(partial)");
- every reference in backticks in the "where" column names something in the tree:
    panel:NAME[/TAB]   a --panel name of app/session/panel_list.h (TAB: one of its sub-tab region names,
                       whole or without the "NAME_tab_" prefix)
    lesson:NAME[#N[-M]] assets/lessons/NAME.json, and steps N..M (1-based) within its "steps"
    cli:COMMAND        a tscope-cli command of the table in app/cli/main.cpp ({"name", runName})
    doc:PATH           a file of the repository
    model:NAME         a shipped model, assets/models/NAME/config.json
    comparison:NAME    a shipped training comparison, assets/comparisons/NAME.json
    whatif:NAME[:ARG]  a what-if of model/nn/what_if.cpp (the What if... menu, forward --what-if)
- an item shown live, static or as a lesson names at least one reference, and a lesson item a lesson;
- the counts table (the first table, rows A, B, C, all) agrees with the item tables.

Usage: check_syllabus.py [REPO_ROOT] [SYLLABUS]   (defaults: the parent of this file's folder;
the syllabus under the root, docs/SYLLABUS.md)"""
import json
import re
import sys
from pathlib import Path

CATEGORIES = ["live", "static", "lesson", "missing", "out of scope"]
ID = re.compile(r"^[ABC]\d+\.\d+$")
REF = re.compile(r"`([a-z]+):([^`\s]+)`")
KINDS = {"panel", "lesson", "cli", "doc", "model", "comparison", "whatif"}


def panels(root):
    """{name: [sub-tab region names]} from the TSCOPE_PANEL registrations."""
    text = (root / "app/session/panel_list.h").read_text(encoding="utf-8")
    text = re.sub(r"//[^\n]*", "", text)
    found = {}
    for m in re.finditer(r"TSCOPE_PANEL\(([^)]*)\)", text):
        strings = re.findall(r'"([^"]*)"', m.group(1))
        if len(strings) >= 2:
            found[strings[0]] = strings[2:]  # name, title, then the sub-tabs
    return found


def cli_commands(root):
    found = set()
    for source in sorted((root / "app/cli").glob("*.cpp")):
        found.update(re.findall(r'\{"([a-z][a-z0-9-]*)",\s*run\w+\}', source.read_text(encoding="utf-8")))
    return found


def what_ifs(root):
    text = (root / "model/nn/what_if.cpp").read_text(encoding="utf-8")
    return set(re.findall(r'case WhatIfKind::\w+:\s*return "([a-z-]+)";', text))


def lessons(root):
    found = {}
    for path in sorted((root / "assets/lessons").glob("*.json")):
        try:
            found[path.stem] = len(json.loads(path.read_text(encoding="utf-8")).get("steps", []))
        except (ValueError, OSError):
            found[path.stem] = None
    return found


def cells(line):
    line = line.strip()
    if not line.startswith("|"):
        return None
    parts = re.split(r"(?<!\\)\|", line.strip("|"))
    return [p.strip() for p in parts]


def shown_category(mark):
    mark = mark.replace("*", "").strip()
    mark = re.sub(r"\s*\(partial\)$", "", mark)
    return mark if mark in CATEGORIES else None


def check_ref(kind, value, sources, root):
    """None if the reference names something that exists, else why not."""
    if kind == "panel":
        name, _, tab = value.partition("/")
        if name not in sources["panels"]:
            return f"no panel '{name}' (panels: {' '.join(sources['panels'])})"
        tabs = sources["panels"][name]
        if tab and tab not in tabs and f"{name}_tab_{tab}" not in tabs:
            return f"panel '{name}' has no sub-tab '{tab}' (it has: {' '.join(tabs) or 'none'})"
    elif kind == "lesson":
        name, _, steps = value.partition("#")
        if name not in sources["lessons"]:
            return f"no lesson assets/lessons/{name}.json"
        count = sources["lessons"][name]
        if count is None:
            return f"assets/lessons/{name}.json is not valid JSON"
        if steps:
            m = re.fullmatch(r"(\d+)(?:-(\d+))?", steps)
            if not m:
                return f"lesson step '{steps}' is not N or N-M"
            first, last = int(m.group(1)), int(m.group(2) or m.group(1))
            if not 1 <= first <= last <= count:
                return f"lesson '{name}' has steps 1..{count}, not {steps}"
    elif kind == "cli":
        if value not in sources["cli"]:
            return f"no tscope-cli command '{value}'"
    elif kind == "doc":
        path = value.partition("#")[0]
        if not (root / path).is_file():
            return f"no file {path}"
    elif kind == "model":
        if not (root / "assets/models" / value / "config.json").is_file():
            return f"no shipped model assets/models/{value}"
    elif kind == "comparison":
        if not (root / "assets/comparisons" / f"{value}.json").is_file():
            return f"no shipped comparison assets/comparisons/{value}.json"
    elif kind == "whatif":
        if value.split(":")[0] not in sources["whatifs"]:
            return f"no what-if '{value.split(':')[0]}'"
    return None


def main(argv):
    root = Path(argv[1] if len(argv) > 1 else Path(__file__).resolve().parent.parent).resolve()
    syllabus = Path(argv[2]) if len(argv) > 2 else root / "docs/SYLLABUS.md"
    try:
        lines = syllabus.read_text(encoding="utf-8").split("\n")
    except OSError as e:
        print(f"check_syllabus: cannot read {syllabus}: {e}")
        return 1
    sources = {"panels": panels(root), "cli": cli_commands(root), "whatifs": what_ifs(root), "lessons": lessons(root)}
    for kind in ("panels", "cli", "whatifs", "lessons"):
        if not sources[kind]:
            print(f"check_syllabus: found no {kind} in the tree (has the source moved?)")
            return 1

    problems = []
    counts = {}  # lecture -> category -> n
    seen = set()
    stated = None  # the counts table: {row label: [numbers]}
    header = None
    for number, line in enumerate(lines, 1):
        row = cells(line)
        if row is None:
            header = None
            continue
        if header is None:
            header = [c.lower() for c in row]
            if stated is None and header and header[0] in ("", "lecture") and "live" in header:
                stated = {"_columns": header}
            continue
        if all(re.fullmatch(r":?-+:?", c) for c in row if c):
            continue
        if stated is not None and stated.get("_done") is None and header == stated["_columns"]:
            stated[row[0].replace("*", "").strip()] = row[1:]
            continue
        if header[:4] != ["id", "item", "shown", "where"]:
            continue
        if stated is not None:
            stated["_done"] = True
        item = row[0]
        where = row[3] if len(row) > 3 else ""
        if not ID.match(item):
            problems.append(f"line {number}: '{item}': not an item ID (A1.2, B3.4, C5.1)")
            continue
        if item in seen:
            problems.append(f"{item}: listed twice (line {number})")
        seen.add(item)
        category = shown_category(row[2] if len(row) > 2 else "")
        if category is None:
            problems.append(f"{item}: shown mark '{row[2] if len(row) > 2 else ''}' is not one of: {', '.join(CATEGORIES)}")
        else:
            counts.setdefault(item[0], dict.fromkeys(CATEGORIES, 0))[category] += 1
        refs = REF.findall(where)
        for kind, value in refs:
            if kind not in KINDS:
                continue
            why = check_ref(kind, value, sources, root)
            if why:
                problems.append(f"{item}: `{kind}:{value}`: {why}")
        kinds = {k for k, _ in refs if k in KINDS}
        if category in ("live", "static", "lesson") and not kinds:
            problems.append(f"{item}: shown {category} but the where column names no panel, lesson, cli, doc, model or comparison")
        if category == "lesson" and "lesson" not in kinds:
            problems.append(f"{item}: shown as a lesson but names no lesson:NAME#N")

    if not seen:
        problems.append("no item rows found (a table with columns ID | item | shown | where)")
    if stated is None:
        problems.append("counts: no counts table (columns: lecture | live | static | lesson | missing | out of scope | total)")
    else:
        columns = stated["_columns"]
        expected = {}
        for lecture, by in counts.items():
            expected[lecture] = by
        expected["all"] = {c: sum(by[c] for by in counts.values()) for c in CATEGORIES}
        for label, by in expected.items():
            row = next((v for k, v in stated.items() if not k.startswith("_") and
                        (k == label or k.startswith(label + ":") or k.startswith(label + " "))), None)
            if row is None:
                problems.append(f"counts: no row for {label}")
                continue
            wanted = dict(by, total=sum(by.values()))
            for column, value in zip(columns[1:], row):
                if column not in wanted:
                    continue
                try:
                    n = int(value.replace("*", "").strip())
                except ValueError:
                    problems.append(f"counts: row {label}, column {column}: '{value}' is not a number")
                    continue
                if n != wanted[column]:
                    problems.append(f"counts: row {label}, column {column} says {n}, the tables have {wanted[column]}")
            missing_columns = [c for c in wanted if c not in columns]
            if missing_columns:
                problems.append(f"counts: no column {', '.join(missing_columns)}")
                break
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
