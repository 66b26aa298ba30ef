#!/usr/bin/env python3
"""Every file a comment or document names exists: a mention of a path (folders, then a name with a
source, script or document extension) must be a repository path, from the root or from the
mentioning file's folder, or the tail of one (`nn/block.cpp` for model/nn/block.cpp); a bare file
name with a C++ or CUDA extension must be the name of some repository file. Mentions that are not
ours (system and third-party includes, URLs, files the build generates, paths that leave the
repository with ../) are skipped. A Markdown image (![alt](path)) must be a file in the
repository, from the document's folder: the README's screenshots may not go missing. And every
picture the README shows from docs/ is one scripts/docs_screenshots.sh makes (a `shot NAME` line, or
a name in its `for panel in ...` loop), so regenerating them all after a change is one command.

Usage: check_file_mentions.py [REPO_ROOT]   (default: the parent of this file's folder)
Prints each dangling mention as file:line: name and exits 1 if there is any."""
import re
import subprocess
import sys
from pathlib import Path

SCANNED = re.compile(r"(\.(cpp|h|cu|cuh|md|cmake|py|sh)|(^|/)CMakeLists\.txt)$")
# A path: folders, then a name with one of these extensions (longest first: .cuh before .cu).
PATH_EXT = r"(?:cpp|cuh|cu|h|md|py|sh|cmake|inc|vert|frag|glsl)"
# Not followed by a word character, a slash, or a dot that continues the name (`enc.h.*` and
# "enc.h." + l are tensor names, not headers).
END = r"(?![\w/]|\.\S)"
PATH = re.compile(r"(?<![\w./:$-])((?:\.\./|\./)?(?:[\w.-]+/)+[\w.-]+\." + PATH_EXT + r")" + END)
BARE = re.compile(r"(?<![\w./:<$-])([\w-]+\.(?:cpp|cuh|cu|h))" + END)
URL = re.compile(r"\w+://\S+")
SYSTEM_INCLUDE = re.compile(r"#\s*include\s*<[^>]*>|__has_include\s*\(\s*<[^>]*>\s*\)")
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)")
# Files that are not ours and not in the repository: third-party and system headers, peers'
# sources named for comparison. A mention of one of these is never checked.
NOT_OURS = {
    "imgui.h", "imgui_internal.h", "imgui_impl_glfw.h", "imgui_impl_opengl3.h", "glfw3.h",
    "cuda_runtime.h", "cublas_v2.h", "cuda_fp16.h", "cuda_bf16.h", "mma.h", "omp.h",
    "stb_image_write.h", "gtest.h", "ggml.h", "llama.cpp", "ggml.c", "llm.c", "ggml-cuda.cu",
    "test-backend-ops.cpp", "train_gpt2.cu", "train_gpt2.c", "encoder.py", "setup.py",
    "numpy/lib/format.py",
    # The specifications of the formats read from other projects' files: ggml's GGUF docs and
    # quantization code, llama.cpp's converter and vocab, llama2.c's, Ollama's docs.
    "docs/gguf.md", "ggml-common.h", "ggml-quants.c", "llama-vocab.cpp", "convert_hf_to_gguf.py", "constants.py",
    "tensor_mapping.py", "run.c", "export.py", "tokenizer.py", "docs/faq.md", "manifest.go",
}
# Files the build writes (app/CMakeLists.txt: the shaders as a header).
GENERATED = {"shaders_embedded.h"}


def repo_files(root):
    try:
        listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=root,
                                capture_output=True, text=True, check=True).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: every file but builds and caches
        skip = ("build", ".cache", ".git")
        listed = [p.relative_to(root).as_posix() for p in root.rglob("*")
                  if p.is_file() and not p.relative_to(root).parts[0].startswith(skip)]
    return [f for f in listed if f and (root / f).is_file()]


def exists(mention, mentioner, files, names, root):
    if mention.startswith("../") and any(not (base / mention).resolve().is_relative_to(root)
                                         for base in (root, root / Path(mentioner).parent)):
        return True  # outside the repository (from the root or from the file), and said so
    if "/" not in mention:
        return mention in names
    if (root / mention).exists() or (root / Path(mentioner).parent / mention).exists():
        return True
    tail = mention.lstrip("./")
    return any(f == tail or f.endswith("/" + tail) for f in files)


def mentions(text):
    for number, line in enumerate(text.split("\n"), 1):
        line = SYSTEM_INCLUDE.sub(" ", URL.sub(" ", line))
        for match in PATH.finditer(line):
            yield number, match.group(1)
        for match in BARE.finditer(PATH.sub(" ", line)):
            yield number, match.group(1)


README_PICTURE = re.compile(r"\]\(docs/([\w/-]+)\.png\)")
SHOT = re.compile(r"^\s*shot\s+\"?([\w/-]+)", re.M)
SHOT_LOOP = re.compile(r"^\s*for panel in ([\w -]+);", re.M)


def pictures_not_scripted(root):
    """README pictures under docs/ that scripts/docs_screenshots.sh does not make (README:line: name)."""
    script = root / "scripts" / "docs_screenshots.sh"
    readme = root / "README.md"
    if not script.is_file() or not readme.is_file():
        return []
    text = script.read_text(encoding="utf-8")
    made = set(SHOT.findall(text)) | {name for loop in SHOT_LOOP.findall(text) for name in loop.split()}
    missing = []
    for number, line in enumerate(readme.read_text(encoding="utf-8").split("\n"), 1):
        for name in README_PICTURE.findall(line):
            if name.removeprefix("projector/") not in made:  # the script makes each picture in both sizes
                missing.append(f"README.md:{number}: docs/{name}.png is not made by scripts/docs_screenshots.sh")
    return missing


def main():
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent).resolve()
    files = repo_files(root)
    names = {Path(f).name for f in files}
    dangling = []
    for path in files:
        if not SCANNED.search(path) or path.startswith(("tests/fuzz/corpus/", "tests/data/")):
            continue
        text = (root / path).read_text(encoding="utf-8", errors="replace")
        if path.endswith(".md"):
            for number, line in enumerate(text.split("\n"), 1):
                for image in IMAGE.findall(line):
                    if "://" not in image and not (root / Path(path).parent / image).is_file():
                        dangling.append(f"{path}:{number}: image {image}")
        for number, mention in mentions(text):
            if mention in NOT_OURS or Path(mention).name in NOT_OURS | GENERATED or exists(mention, path, files, names, root):
                continue
            dangling.append(f"{path}:{number}: {mention}")
    dangling += pictures_not_scripted(root)
    for line in dangling:
        print(line)
    if dangling:
        print(f"{len(dangling)} mention(s) of files that do not exist", file=sys.stderr)
        return 1
    print(f"every file mentioned in {sum(1 for f in files if SCANNED.search(f))} files exists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
