#!/usr/bin/python3
"""An independent numpy reading of GGML's block quantizations (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K), written
from the format definitions (ggml-common.h's block structs, ggml-quants.c's dequantize_row_*), not
from tscope's C++: each format's block is parsed as a numpy structured array and decoded with whole-
array operations in float32. tests/test_quant.cpp compares model/core/quant.cpp's dequantizeRow with
it, both on the fixtures committed under tests/golden/quant/ and on fresh random blocks it asks this
script for at test time.

Usage (run with /usr/bin/python3, the one with numpy):
  quant_reference.py random TYPE BLOCKS SEED OUT.bin     random valid blocks (small finite fp16 scales)
  quant_reference.py dequantize TYPE IN.bin OUT.npy      the blocks' weights as a float32 .npy (1-D)
  quant_reference.py fixtures DIR                        the committed fixtures: TYPE.bin + TYPE.npy per type
  quant_reference.py fresh DIR SEED                      the same for every type from SEED, more blocks (one
                                                         process for the whole test: numpy takes a while to import)
"""
import os
import sys

import numpy as np

# Per type: weights per block and the block's fields in file order (no padding).
FORMATS = {
    "Q8_0": (32, [("d", "<f2"), ("qs", "i1", 32)]),
    "Q4_0": (32, [("d", "<f2"), ("qs", "u1", 16)]),
    "Q4_K": (256, [("d", "<f2"), ("dmin", "<f2"), ("scales", "u1", 12), ("qs", "u1", 128)]),
    "Q5_K": (256, [("d", "<f2"), ("dmin", "<f2"), ("scales", "u1", 12), ("qh", "u1", 32), ("qs", "u1", 128)]),
    "Q6_K": (256, [("ql", "u1", 128), ("qh", "u1", 64), ("scales", "i1", 16), ("d", "<f2")]),
}
BLOCK_BYTES = {"Q8_0": 34, "Q4_0": 18, "Q4_K": 144, "Q5_K": 176, "Q6_K": 210}
# Blocks per fixture file: a few blocks of each type keep the fixtures under 12 KB in all.
FIXTURE_BLOCKS = {"Q8_0": 8, "Q4_0": 8, "Q4_K": 2, "Q5_K": 2, "Q6_K": 2}
FRESH_BLOCKS = {"Q8_0": 48, "Q4_0": 48, "Q4_K": 6, "Q5_K": 6, "Q6_K": 6}


def block_dtype(kind):
    dtype = np.dtype(FORMATS[kind][1])
    assert dtype.itemsize == BLOCK_BYTES[kind], (kind, dtype.itemsize)
    return dtype


def scale(field):
    """An fp16 field as float32 column (blocks, 1)."""
    return field.astype(np.float32)[:, None]


def k4_scales_mins(packed):
    """The eight 6-bit scales and mins of Q4_K / Q5_K: bytes 0-3 / 4-7 hold scales / mins 0-3 in their
    low 6 bits and the top 2 bits of scales / mins 4-7 in their top 2; bytes 8-11 hold the low 4
    bits of scale 4+j (low nibble) and min 4+j (high nibble)."""
    p = packed.astype(np.int32)
    scales = np.concatenate([p[:, 0:4] & 63, (p[:, 8:12] & 0xF) | ((p[:, 0:4] >> 6) << 4)], axis=1)
    mins = np.concatenate([p[:, 4:8] & 63, (p[:, 8:12] >> 4) | ((p[:, 4:8] >> 6) << 4)], axis=1)
    return scales.astype(np.float32), mins.astype(np.float32)


def dequantize(kind, raw):
    """The weights of the blocks in `raw` (bytes) as float32, in row order."""
    blocks = np.frombuffer(raw, dtype=block_dtype(kind))
    n = len(blocks)
    if kind == "Q8_0":
        return (scale(blocks["d"]) * blocks["qs"].astype(np.float32)).reshape(-1)
    if kind == "Q4_0":
        qs = blocks["qs"].astype(np.int32)
        codes = np.concatenate([(qs & 0xF) - 8, (qs >> 4) - 8], axis=1)  # weights 0-15 low, 16-31 high
        return (scale(blocks["d"]) * codes.astype(np.float32)).reshape(-1)
    if kind in ("Q4_K", "Q5_K"):
        scales, mins = k4_scales_mins(blocks["scales"])
        step = scale(blocks["d"]) * scales  # (n, 8): d * sc per sub-block of 32
        offset = scale(blocks["dmin"]) * mins
        qs = blocks["qs"].astype(np.int32).reshape(n, 4, 32)  # chunk c: 32 bytes for 64 weights
        codes = np.stack([qs & 0xF, qs >> 4], axis=2)  # (n, chunk, half, 32): sub-block 2c + half
        if kind == "Q5_K":
            qh = blocks["qh"].astype(np.int32)[:, None, None, :]
            bit = (2 * np.arange(4)[:, None] + np.arange(2)[None, :])[None, :, :, None]  # bit 2c + half of qh[l]
            codes = codes | (((qh >> bit) & 1) << 4)
        codes = codes.reshape(n, 8, 32).astype(np.float32)
        return (step[:, :, None] * codes - offset[:, :, None]).reshape(-1)
    if kind == "Q6_K":
        ql = blocks["ql"].astype(np.int32).reshape(n, 2, 2, 32)  # half, (bytes 0-31, 32-63), l
        qh = blocks["qh"].astype(np.int32).reshape(n, 2, 32)
        low = [ql[:, :, 0] & 0xF, ql[:, :, 1] & 0xF, ql[:, :, 0] >> 4, ql[:, :, 1] >> 4]  # weights l + 32k
        codes = np.stack([low[k] | (((qh >> (2 * k)) & 3) << 4) for k in range(4)], axis=2) - 32  # (n, half, k, l)
        step = scale(blocks["d"]) * blocks["scales"].astype(np.float32)  # (n, 16): one per 16 weights
        return (np.repeat(step, 16, axis=1) * codes.reshape(n, 256).astype(np.float32)).reshape(-1)
    raise ValueError(f"unknown type {kind}")


def random_blocks(kind, count, rng):
    """`count` valid random blocks: random bytes with each fp16 field a small finite half (either sign,
    magnitudes from 2^-20, a subnormal half, up to 2^-3)."""
    raw = rng.integers(0, 256, size=count * BLOCK_BYTES[kind], dtype=np.uint8)
    blocks = raw.view(block_dtype(kind))
    for name in ("d", "dmin"):
        if name in blocks.dtype.names:
            magnitude = np.exp2(rng.uniform(-20, -3, size=count))
            blocks[name] = (magnitude * rng.choice([-1.0, 1.0], size=count)).astype(np.float16)
    return blocks.tobytes()


def write_npy(path, values):
    np.save(path, np.ascontiguousarray(values, dtype="<f4"))


def write_set(folder, counts, seed):
    """TYPE.bin (random blocks, seed + the type's index) and TYPE.npy (their weights) for every type."""
    os.makedirs(folder, exist_ok=True)
    for index, kind in enumerate(FORMATS):
        raw = random_blocks(kind, counts[kind], np.random.default_rng(seed + index))
        with open(os.path.join(folder, f"{kind}.bin"), "wb") as f:
            f.write(raw)
        write_npy(os.path.join(folder, f"{kind}.npy"), dequantize(kind, raw))


def main(argv):
    if len(argv) == 6 and argv[1] == "random":
        with open(argv[5], "wb") as f:
            f.write(random_blocks(argv[2], int(argv[3]), np.random.default_rng(int(argv[4]))))
    elif len(argv) == 5 and argv[1] == "dequantize":
        with open(argv[3], "rb") as f:
            write_npy(argv[4], dequantize(argv[2], f.read()))
    elif len(argv) == 3 and argv[1] == "fixtures":
        write_set(argv[2], FIXTURE_BLOCKS, 1000)
    elif len(argv) == 4 and argv[1] == "fresh":
        write_set(argv[2], FRESH_BLOCKS, int(argv[3]))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
