#!/usr/bin/env python3
# Tiny llama2.c checkpoints and an independent float64 numpy forward and tokenizer, for
# tests/test_llama2c.cpp (run at test time into a temporary folder: nothing generated is committed).
# Written from karpathy/llama2.c's descriptions, not from tscope:
#   the files as export.py writes them: legacy_export (version 0: 7 int32, a negative vocab_size for
#   an unshared classifier, the float32 tensors, RoPE's cos / sin tables), version1_export (the 256-byte
#   "ak42" header) and version2_export (int8 Q8_0 matrices, each followed by its float32 scales,
#   quantize_q80's rounding);
#   run.c's forward, one position at a time with a KV cache: RMSNorm (eps 1e-5), q = wq x, k = wk x,
#   v = wv x (each an nn.Linear weight (out, in)), RoPE rotating each pair (i, i + 1) of a head by
#   pos * 10000^(-(i % head_size) / head_size), head h attending with kv head h // (n_heads / n_kv_heads),
#   scores / sqrt(head_size), x += wo(att), x += w2(silu(w1 x) * w3 x), the final RMSNorm, the classifier;
#   tokenizer.py's tokenizer.bin (max_token_length, then score, length, bytes per token; "\n<s>\n" and
#   "\n</s>\n" for ids 1 and 2, "<0xNN>" byte tokens, spaces as " ") and run.c's encode: a " " in front
#   of non-empty text, each character its token or its bytes as ids byte + 3, then the adjacent pair
#   whose concatenation is a token with the highest score merged (the leftmost of equals) until none.
#   One deliberate difference: characters are strict UTF-8 (each byte outside a valid one on its own),
#   where run.c glues up to three following continuation bytes onto any byte.
# Writes, per variant, OUT/<variant>/model.bin, tokenizer.bin, tokens.npy (T) and logits.npy (T, V);
# and OUT/encodings.json: [{"hex": text as hex, "ids": [...]}] for the tokenizer's strings.
# Usage: llama2c_reference.py OUT_DIR
import json
import os
import struct
import sys

import numpy as np

BASE = {"dim": 64, "hidden": 172, "layers": 2, "heads": 4, "kv_heads": 2, "vocab": 300, "seq_len": 32}
# name: (export version, shared classifier, header changes)
VARIANTS = {
    "legacy_shared": (0, True, {}),
    "legacy_unshared": (0, False, {}),
    "v1_shared": (1, True, {"kv_heads": 1}),
    "v1_unshared": (1, False, {}),
    "v2_shared": (2, True, {"kv_heads": 4}),
    "v2_unshared": (2, False, {}),
}
TOKENS = [1, 259, 262, 270, 3 + ord("x"), 280, 299, 5, 100, 265, 290, 2, 300 - 1, 17]
MAGIC = 0x616B3432
GROUP_SIZE = 64

# The vocabulary: <unk>, <s>, </s>, the 256 byte tokens, then characters and merges with scores.
CHARACTERS = [" ", "a", "b", "c", "e", "h", "l", "n", "o", "r", "s", "t", "w", "é", "€"]
MERGES = [(" t", -4.0), ("th", -3.0), ("he", -2.0), ("the", -1.0), (" the", -0.5), ("ab", -5.0), ("aba", -0.25), ("ba", -6.0),
          ("an", -7.0), ("na", -7.0), (" a", -8.0), ("ll", -3.5), ("el", -4.5), ("hel", -2.5), ("hell", -1.5), ("lo", -9.0),
          ("hello", -0.75), (" hello", -0.6), ("ca", -5.5), ("caf", -20.0), ("é ", -11.0), ("re", -6.5), (" w", -8.5), ("or", -7.5),
          ("s ", -12.0), ("  ", -13.0)]
ENCODE_STRINGS = [b"", b"a", b"the", b" the", b"hello there", b"hello world", b"abababa", b"banana", b"ana", "caf\u00e9".encode(),
                  "na\u00efve".encode(), "\u4e2d\u6587".encode(), "\U0001F600!".encode(), b"a  b ", b"<s>", b"\n", b"\xff",
                  b"a\x80b", b"\xc3\xa9\xa9", b"\xe4\xb8a", b"\xed\xa0\x80", b"\xc0\xaf", "10\u20ac".encode()]


def vocabulary():
    pieces = [b"<unk>", b"\n<s>\n", b"\n</s>\n"] + [f"<0x{b:02X}>".encode() for b in range(256)]
    scores = [0.0] * len(pieces)
    for i, ch in enumerate(CHARACTERS):
        pieces.append(ch.encode())
        scores.append(-100.0 - i)
    for piece, score in MERGES:
        pieces.append(piece.encode())
        scores.append(score)
    while len(pieces) < BASE["vocab"]:  # never reached by any text: a letter outside CHARACTERS
        pieces.append(f"q{len(pieces)}".encode())
        scores.append(-50.0)
    return pieces, scores


def write_tokenizer(path, pieces, scores):
    with open(path, "wb") as f:
        f.write(struct.pack("<I", max(len(p) for p in pieces)))
        for piece, score in zip(pieces, scores):
            f.write(struct.pack("<fi", score, len(piece)))
            f.write(piece)


def characters(text):
    """Strict UTF-8 characters: a valid code point's bytes, or one byte that is not part of one."""
    units = []
    for ch in text.decode("utf-8", "surrogateescape"):
        units.append(bytes([ord(ch) - 0xDC00]) if 0xDC80 <= ord(ch) <= 0xDCFF else ch.encode())
    return units


def encode(text, pieces, scores):
    """run.c's encode, without BOS or EOS: O(n^2), one merge per pass over the pairs."""
    lookup = {}
    for i, piece in enumerate(pieces):
        if i >= 259:  # only the text's own pieces: not <unk>, <s>, </s> or the byte tokens
            lookup.setdefault(piece, i)
    if not text:
        return []
    tokens = []  # (id, bytes; None for a byte token, which never merges)
    for unit in characters(b" " + text):
        if unit in lookup:
            tokens.append((lookup[unit], unit))
        else:
            tokens.extend((byte + 3, None) for byte in unit)
    while True:
        best = None
        for i in range(len(tokens) - 1):
            (_, a), (_, b) = tokens[i], tokens[i + 1]
            if a is None or b is None or (a + b) not in lookup:
                continue
            merged = lookup[a + b]
            if best is None or scores[merged] > best[0]:
                best = (scores[merged], i, merged, a + b)
        if best is None:
            return [token for token, _ in tokens]
        _, i, merged, text_bytes = best
        tokens[i:i + 2] = [(merged, text_bytes)]


def random_weights(p, shared, rng):
    dim, hidden, layers, vocab = p["dim"], p["hidden"], p["layers"], p["vocab"]
    head_size = dim // p["heads"]
    kv_dim = p["kv_heads"] * head_size

    def matrix(rows, cols):
        return (rng.standard_normal((rows, cols)) / np.sqrt(cols)).astype(np.float32)

    def norm(n):
        return (1.0 + 0.2 * rng.standard_normal(n)).astype(np.float32)

    w = {"emb": (0.5 * rng.standard_normal((vocab, dim))).astype(np.float32),
         "att_norm": [norm(dim) for _ in range(layers)], "ffn_norm": [norm(dim) for _ in range(layers)], "final_norm": norm(dim),
         "wq": [matrix(dim, dim) for _ in range(layers)], "wk": [matrix(kv_dim, dim) for _ in range(layers)],
         "wv": [matrix(kv_dim, dim) for _ in range(layers)], "wo": [matrix(dim, dim) for _ in range(layers)],
         "w1": [matrix(hidden, dim) for _ in range(layers)], "w2": [matrix(dim, hidden) for _ in range(layers)],
         "w3": [matrix(hidden, dim) for _ in range(layers)]}
    w["cls"] = w["emb"] if shared else matrix(vocab, dim)
    return w


def quantize_q80(w):
    """export.py's quantize_q80: symmetric int8 per group of GROUP_SIZE, scale = max |w| / 127."""
    groups = w.reshape(-1, GROUP_SIZE).astype(np.float32)
    scale = (np.abs(groups).max(axis=1) / np.float32(127.0)).astype(np.float32)
    q = np.round(groups / scale[:, None]).astype(np.int8)
    return q, scale, (q.astype(np.float32) * scale[:, None]).reshape(w.shape)


MATRICES = ["wq", "wk", "wv", "wo", "w1", "w2", "w3"]


def write_checkpoint(path, version, p, shared, w):
    """Writes the file and returns the weights as the reader sees them (version 2: dequantized)."""
    sizes = [p["dim"], p["hidden"], p["layers"], p["heads"], p["kv_heads"], p["vocab"], p["seq_len"]]
    out = bytearray()
    f32 = lambda a: out.extend(np.ascontiguousarray(a, dtype="<f4").tobytes())  # noqa: E731
    if version == 0:
        out += struct.pack("<7i", *sizes[:5], sizes[5] if shared else -sizes[5], sizes[6])
        f32(w["emb"])
        for name in ["att_norm", "wq", "wk", "wv", "wo", "ffn_norm", "w1", "w2", "w3"]:
            for tensor in w[name]:
                f32(tensor)
        f32(w["final_norm"])
        head_size = p["dim"] // p["heads"]
        freqs = 1.0 / (10000.0 ** (np.arange(0, head_size, 2)[: head_size // 2] / head_size))
        angles = np.outer(np.arange(p["seq_len"]), freqs)
        f32(np.cos(angles))
        f32(np.sin(angles))
        if not shared:
            f32(w["cls"])
    else:
        out += struct.pack("<Ii7iB", MAGIC, version, *sizes, int(shared))
        if version == 2:
            out += struct.pack("<i", GROUP_SIZE)
        out += b"\0" * (256 - len(out))
        for tensor in w["att_norm"] + w["ffn_norm"] + [w["final_norm"]]:
            f32(tensor)
        matrices = [("emb", None)] + [(name, layer) for name in MATRICES for layer in range(p["layers"])]
        if not shared:
            matrices.append(("cls", None))
        seen = dict(w)
        seen.update({name: list(w[name]) for name in MATRICES})
        for name, layer in matrices:
            tensor = w[name] if layer is None else w[name][layer]
            if version == 1:
                f32(tensor)
                continue
            q, scale, dequantized = quantize_q80(tensor)
            out.extend(q.tobytes())
            f32(scale)
            if layer is None:
                seen[name] = dequantized
            else:
                seen[name][layer] = dequantized
        if version == 2 and shared:
            seen["cls"] = seen["emb"]
        w = seen
    with open(path, "wb") as f:
        f.write(out)
    return w


def rmsnorm(x, weight):
    return weight * (x / np.sqrt(np.mean(x * x) + 1e-5))


def forward(p, w, tokens):
    """run.c's forward over `tokens`, float64: logits (T, V)."""
    dim, heads, kv_heads, layers = p["dim"], p["heads"], p["kv_heads"], p["layers"]
    head_size, kv_mul = dim // heads, heads // kv_heads
    kv_dim = kv_heads * head_size
    g = lambda a: np.asarray(a, dtype=np.float64)  # noqa: E731
    keys = [[] for _ in range(layers)]
    values = [[] for _ in range(layers)]
    logits = []
    for pos, token in enumerate(tokens):
        x = g(w["emb"][token]).copy()
        for l in range(layers):
            xb = rmsnorm(x, g(w["att_norm"][l]))
            q, k, v = g(w["wq"][l]) @ xb, g(w["wk"][l]) @ xb, g(w["wv"][l]) @ xb
            for i in range(0, dim, 2):
                angle = pos * (1.0 / 10000.0 ** ((i % head_size) / head_size))
                c, s = np.cos(angle), np.sin(angle)
                for vec in ([q, k] if i < kv_dim else [q]):
                    v0, v1 = vec[i], vec[i + 1]
                    vec[i], vec[i + 1] = v0 * c - v1 * s, v0 * s + v1 * c
            keys[l].append(k)
            values[l].append(v)
            att_out = np.zeros(dim)
            for h in range(heads):
                kv = (h // kv_mul) * head_size
                qh = q[h * head_size:(h + 1) * head_size]
                scores = np.array([qh @ kt[kv:kv + head_size] for kt in keys[l]]) / np.sqrt(head_size)
                weights = np.exp(scores - scores.max())
                weights /= weights.sum()
                att_out[h * head_size:(h + 1) * head_size] = sum(a * vt[kv:kv + head_size] for a, vt in zip(weights, values[l]))
            x = x + g(w["wo"][l]) @ att_out
            xb = rmsnorm(x, g(w["ffn_norm"][l]))
            h1, h3 = g(w["w1"][l]) @ xb, g(w["w3"][l]) @ xb
            x = x + g(w["w2"][l]) @ (h1 / (1.0 + np.exp(-h1)) * h3)
        logits.append(g(w["cls"]) @ rmsnorm(x, g(w["final_norm"])))
    return np.stack(logits)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    pieces, scores = vocabulary()
    assert len(pieces) == BASE["vocab"], len(pieces)
    write_tokenizer(os.path.join(out, "tokenizer.bin"), pieces, scores)
    encodings = [{"hex": text.hex(), "ids": encode(text, pieces, scores)} for text in ENCODE_STRINGS]
    with open(os.path.join(out, "encodings.json"), "w") as f:
        json.dump(encodings, f, indent=1)
    for seed, (name, (version, shared, changes)) in enumerate(VARIANTS.items()):
        p = dict(BASE, **changes)
        folder = os.path.join(out, name)
        os.makedirs(folder, exist_ok=True)
        weights = random_weights(p, shared, np.random.default_rng(1000 + seed))
        seen = write_checkpoint(os.path.join(folder, "model.bin"), version, p, shared, weights)
        write_tokenizer(os.path.join(folder, "tokenizer.bin"), pieces, scores)
        np.save(os.path.join(folder, "tokens.npy"), np.asarray(TOKENS, dtype="<i4"))
        np.save(os.path.join(folder, "logits.npy"), forward(p, seen, TOKENS).astype("<f4"))


if __name__ == "__main__":
    main()
