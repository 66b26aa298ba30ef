# Writers and readers for the weight files the golden forward test feeds tscope-cli: safetensors
# (F32 / BF16 / F16) and llm.c's GPT-2 checkpoint (version 3, float32), written from the format
# descriptions alone. The readers exist so make_reference.py can read every file back and check it.
import json
import struct

import numpy as np

# ---- bfloat16 ----


def float32_to_bf16_bits(values):
    """float32 array -> uint16 bfloat16 bit patterns, rounding to nearest, ties to even."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    assert np.isfinite(values).all()
    rounding_bias = 0x7FFF + ((bits >> 16) & 1)
    return ((bits + rounding_bias) >> 16).astype(np.uint16)


def bf16_bits_to_float32(bits):
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


# ---- safetensors ----

_DTYPE_BYTES = {"F32": 4, "BF16": 2, "F16": 2}


def write_safetensors(path, tensors, dtype):
    """tensors: {name: float array}, written in that (insertion) order as dtype "F32", "BF16" or "F16".

    Header: u64 little-endian length N, then N bytes of JSON padded with spaces to a multiple of 8.
    The JSON lists the names sorted (as the Rust library does) while the data follows the dict's
    order, so a reader must use data_offsets rather than assume the data is in header order."""
    blobs, header, offset = [], {}, 0
    for name, array in tensors.items():
        array32 = np.ascontiguousarray(array, dtype=np.float32)
        if dtype == "F32":
            raw = array32.astype("<f4").tobytes()
        elif dtype == "BF16":
            raw = float32_to_bf16_bits(array32).astype("<u2").tobytes()
        elif dtype == "F16":
            raw = array32.astype("<f2").tobytes()  # IEEE half, round to nearest even
        else:
            raise ValueError(dtype)
        header[name] = {"dtype": dtype, "shape": list(array32.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    ordered = {"__metadata__": {"format": "pt"}}
    ordered.update({name: header[name] for name in sorted(header)})
    header_bytes = json.dumps(ordered, separators=(",", ":")).encode("utf-8")
    header_bytes += b" " * (-len(header_bytes) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header_bytes)))
        f.write(header_bytes)
        for raw in blobs:
            f.write(raw)


def read_safetensors(path):
    """-> ({name: float32 array}, metadata). Strict: checks offsets tile the data area exactly."""
    with open(path, "rb") as f:
        content = f.read()
    (header_len,) = struct.unpack("<Q", content[:8])
    header = json.loads(content[8 : 8 + header_len].decode("utf-8"))
    data = content[8 + header_len :]
    metadata = header.pop("__metadata__", {})
    tensors, spans = {}, []
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        count = int(np.prod(entry["shape"], dtype=np.int64))
        assert end - begin == count * _DTYPE_BYTES[entry["dtype"]], name
        raw = data[begin:end]
        if entry["dtype"] == "F32":
            array = np.frombuffer(raw, dtype="<f4").astype(np.float32)
        elif entry["dtype"] == "F16":
            array = np.frombuffer(raw, dtype="<f2").astype(np.float32)
        else:
            array = bf16_bits_to_float32(np.frombuffer(raw, dtype="<u2"))
        tensors[name] = array.reshape(entry["shape"])
        spans.append((begin, end))
    spans.sort()
    position = 0
    for begin, end in spans:
        assert begin == position, "gap or overlap in data_offsets"
        position = end
    assert position == len(data), "data area longer than the tensors"
    return tensors, metadata


# ---- llm.c GPT-2 checkpoint ----

LLMC_MAGIC = 20240326
LLMC_VERSION_FP32_PADDED = 3
LLMC_HEADER_INTS = 256


def padded_vocab_size(vocab_size, multiple=128):
    return (vocab_size + multiple - 1) // multiple * multiple


def _llmc_tensor_list(config):
    """(llm.c name, shape, function(params) -> array) in file order. Per-layer tensors hold all
    layers contiguously (layer-major); matrices are (out, in), the transpose of HF's Conv1D."""
    L, C, P, V = config.n_layer, config.n_embd, config.n_positions, config.vocab_size
    Vp = padded_vocab_size(V)

    def stack(suffix, transpose=False):
        def build(params):
            tensors = [np.asarray(params[f"h.{l}.{suffix}"]) for l in range(L)]
            return np.stack([t.T if transpose else t for t in tensors])
        return build

    def padded_wte(params):
        wte = np.zeros((Vp, C), dtype=np.float64)
        wte[:V] = np.asarray(params["wte.weight"])
        return wte

    return [
        ("wte", (Vp, C), padded_wte),
        ("wpe", (P, C), lambda p: np.asarray(p["wpe.weight"])),
        ("ln1w", (L, C), stack("ln_1.weight")),
        ("ln1b", (L, C), stack("ln_1.bias")),
        ("qkvw", (L, 3 * C, C), stack("attn.c_attn.weight", transpose=True)),
        ("qkvb", (L, 3 * C), stack("attn.c_attn.bias")),
        ("attprojw", (L, C, C), stack("attn.c_proj.weight", transpose=True)),
        ("attprojb", (L, C), stack("attn.c_proj.bias")),
        ("ln2w", (L, C), stack("ln_2.weight")),
        ("ln2b", (L, C), stack("ln_2.bias")),
        ("fcw", (L, 4 * C, C), stack("mlp.c_fc.weight", transpose=True)),
        ("fcb", (L, 4 * C), stack("mlp.c_fc.bias")),
        ("fcprojw", (L, C, 4 * C), stack("mlp.c_proj.weight", transpose=True)),
        ("fcprojb", (L, C), stack("mlp.c_proj.bias")),
        ("lnfw", (C,), lambda p: np.asarray(p["ln_f.weight"])),
        ("lnfb", (C,), lambda p: np.asarray(p["ln_f.bias"])),
    ]


def write_llmc(path, params, config, magic=LLMC_MAGIC):
    """params: {HF name (no prefix): array}. Writes the 256-int32 header and the 16 tensors."""
    header = np.zeros(LLMC_HEADER_INTS, dtype="<i4")
    header[:8] = [magic, LLMC_VERSION_FP32_PADDED, config.n_positions, config.vocab_size,
                  config.n_layer, config.n_head, config.n_embd, padded_vocab_size(config.vocab_size)]
    with open(path, "wb") as f:
        f.write(header.tobytes())
        for name, shape, build in _llmc_tensor_list(config):
            array = build(params)
            assert array.shape == shape, (name, array.shape, shape)
            f.write(np.ascontiguousarray(array, dtype="<f4").tobytes())


def read_llmc(path, config):
    """-> (header int32 array, {HF name: float32 array}) rebuilt from an llm.c checkpoint."""
    with open(path, "rb") as f:
        content = f.read()
    header = np.frombuffer(content[: 4 * LLMC_HEADER_INTS], dtype="<i4")
    position = 4 * LLMC_HEADER_INTS
    raw = {}
    for name, shape, _ in _llmc_tensor_list(config):
        count = int(np.prod(shape))
        raw[name] = np.frombuffer(content[position : position + 4 * count], dtype="<f4").reshape(shape)
        position += 4 * count
    assert position == len(content), "trailing bytes after the last tensor"
    V = config.vocab_size
    assert not raw["wte"][V:].any(), "padding rows of wte must be zero"
    params = {"wte.weight": raw["wte"][:V], "wpe.weight": raw["wpe"],
              "ln_f.weight": raw["lnfw"], "ln_f.bias": raw["lnfb"]}
    per_layer = {"ln1w": ("ln_1.weight", False), "ln1b": ("ln_1.bias", False),
                 "qkvw": ("attn.c_attn.weight", True), "qkvb": ("attn.c_attn.bias", False),
                 "attprojw": ("attn.c_proj.weight", True), "attprojb": ("attn.c_proj.bias", False),
                 "ln2w": ("ln_2.weight", False), "ln2b": ("ln_2.bias", False),
                 "fcw": ("mlp.c_fc.weight", True), "fcb": ("mlp.c_fc.bias", False),
                 "fcprojw": ("mlp.c_proj.weight", True), "fcprojb": ("mlp.c_proj.bias", False)}
    for llmc_name, (hf_suffix, transposed) in per_layer.items():
        for layer in range(config.n_layer):
            tensor = raw[llmc_name][layer]
            params[f"h.{layer}.{hf_suffix}"] = tensor.T if transposed else tensor
    return header, params
