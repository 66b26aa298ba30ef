#!/usr/bin/python3
"""GGUF files holding only a tokenizer, made from a HuggingFace tokenizer.json the way llama.cpp's
convert_hf_to_gguf.py carries one over (gguf-py's metadata keys, ggml's docs/gguf.md "Tokenizer"):
tokenizer.ggml.model "gpt2" with the vocabulary by id, the merges as "a b" strings, token types
(3 control for special added tokens, 4 user-defined for the other added ones, 1 normal) and the
pre-tokenizer's name; or "llama" (SentencePiece) with scores: tokenizer.json's BPE keeps no
scores, but its merges list the pieces in the order of the SentencePiece model's scores, so a piece
scores minus the rank of the merge that makes it (bytes and specials 0), types 2 unknown, 3 control,
6 byte, 1 normal. tests/test_gguf_tokenizer.cpp
compares their tokenizers with tokenizer.json's on Brown.

Usage: gguf_tokenizer_files.py TOKENIZER_JSON OUT.gguf gpt2 PRE | llama
"""
import json
import re
import sys

from gguf_writer import ARRAY, BOOL, FLOAT32, INT32, STRING, UINT32, write_gguf


def main():
    path, out, model = sys.argv[1:4]
    with open(path, encoding="utf-8") as f:
        j = json.load(f)
    vocab = j["model"]["vocab"]
    added = {a["id"]: a for a in j.get("added_tokens", [])}
    size = max(list(vocab.values()) + list(added)) + 1
    tokens = [""] * size
    for piece, i in vocab.items():
        tokens[i] = piece
    for i, a in added.items():
        tokens[i] = a["content"]
    meta = [("general.architecture", STRING, "llama"), ("tokenizer.ggml.model", STRING, model),
            ("tokenizer.ggml.tokens", ARRAY, (STRING, tokens))]
    if model == "gpt2":
        types = [(3 if added[i]["special"] else 4) if i in added else 1 for i in range(size)]
        merges = [m if isinstance(m, str) else " ".join(m) for m in j["model"]["merges"]]
        meta += [("tokenizer.ggml.pre", STRING, sys.argv[4]), ("tokenizer.ggml.token_type", ARRAY, (INT32, types)),
                 ("tokenizer.ggml.merges", ARRAY, (STRING, merges))]
    else:
        byte = re.compile(r"^<0x[0-9A-F]{2}>$")
        unk = j["model"].get("unk_token")
        merges = [m if isinstance(m, str) else " ".join(m) for m in j["model"]["merges"]]
        rank = {}
        for r, m in enumerate(merges):
            rank.setdefault(m.replace(" ", "", 1), r)
        types, scores = [], []
        for i, piece in enumerate(tokens):
            kind = 2 if piece == unk else 3 if i in added else 6 if byte.match(piece) else 1
            types.append(kind)
            # A merged piece scores minus its merge's rank (the merges list is the pieces by score); a
            # piece no merge makes (a single character) scores below every merge.
            scores.append(-float(rank.get(piece, len(merges) + i)) if kind == 1 else 0.0)
        meta += [("tokenizer.ggml.scores", ARRAY, (FLOAT32, scores)), ("tokenizer.ggml.token_type", ARRAY, (INT32, types)),
                 ("tokenizer.ggml.bos_token_id", UINT32, 1), ("tokenizer.ggml.eos_token_id", UINT32, 2),
                 ("tokenizer.ggml.unknown_token_id", UINT32, 0), ("tokenizer.ggml.add_bos_token", BOOL, True)]
    write_gguf(out, meta, [])


if __name__ == "__main__":
    main()
