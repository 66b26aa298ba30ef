#!/usr/bin/python3
"""A small GGUF writer for tests and golden scripts, written from the specification
(https://github.com/ggml-org/ggml/blob/master/docs/gguf.md), independent of model/io/gguf.cpp:
tiny model files with any metadata and tensors of any ggml type, quantized ones as their raw
block bytes. Writes versions 3 and 2 (the same layout in a little-endian file).

As a module (the standard library only; numpy arrays are accepted as tensor data):
    from gguf_writer import write_gguf, tensor_from_array, STRING, UINT32, ARRAY
    write_gguf(path, [("general.architecture", STRING, "llama"), ("llama.block_count", UINT32, 2),
                      ("tokenizer.ggml.tokens", ARRAY, (STRING, ["a", "b"]))],
               [tensor_from_array("token_embd.weight", embedding)])  # numpy (V, C) -> dims [C, V]
A metadata value of type ARRAY is (element_type, items); an array of arrays has ARRAY elements,
each (element_type, items) again. A tensor is (name, ggml_type_id, dims, data): dims[0] is the
fastest-varying (the columns), data its bytes (or a numpy array, written as its bytes).

As a script: gguf_writer.py FOLDER writes the sample files tests/test_gguf.cpp reads (numpy needed).
"""
import struct
import sys

# Metadata value types (spec: enum gguf_metadata_value_type).
UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, FLOAT64 = range(13)
_SCALAR_FORMATS = {UINT8: "<B", INT8: "<b", UINT16: "<H", INT16: "<h", UINT32: "<I", INT32: "<i", FLOAT32: "<f",
                   BOOL: "<?", UINT64: "<Q", INT64: "<q", FLOAT64: "<d"}

# ggml tensor types: id, values per block, bytes per block (ggml.h's enum ggml_type; the sizes as
# gguf-py's GGML_QUANT_SIZES lists them).
GGML_TYPES = {
    "F32": (0, 1, 4), "F16": (1, 1, 2), "Q4_0": (2, 32, 18), "Q4_1": (3, 32, 20), "Q5_0": (6, 32, 22),
    "Q5_1": (7, 32, 24), "Q8_0": (8, 32, 34), "Q8_1": (9, 32, 36), "Q2_K": (10, 256, 84), "Q3_K": (11, 256, 110),
    "Q4_K": (12, 256, 144), "Q5_K": (13, 256, 176), "Q6_K": (14, 256, 210), "Q8_K": (15, 256, 292),
    "IQ2_XXS": (16, 256, 66), "IQ2_XS": (17, 256, 74), "IQ3_XXS": (18, 256, 98), "IQ1_S": (19, 256, 50),
    "IQ4_NL": (20, 32, 18), "IQ3_S": (21, 256, 110), "IQ2_S": (22, 256, 82), "IQ4_XS": (23, 256, 136),
    "I8": (24, 1, 1), "I16": (25, 1, 2), "I32": (26, 1, 4), "I64": (27, 1, 8), "F64": (28, 1, 8),
    "IQ1_M": (29, 256, 56), "BF16": (30, 1, 2), "TQ1_0": (34, 256, 54), "TQ2_0": (35, 256, 66),
    "MXFP4": (39, 32, 17),
}
GGML_ID = {name: spec[0] for name, spec in GGML_TYPES.items()}
_BY_ID = {spec[0]: (name, spec[1], spec[2]) for name, spec in GGML_TYPES.items()}
DEFAULT_ALIGNMENT = 32  # spec: GGUF_DEFAULT_ALIGNMENT


def tensor_bytes(ggml_type, dims):
    """Bytes a tensor of this type and dims takes: dims[0] must be a whole number of blocks."""
    name, block_values, block_bytes = _BY_ID[ggml_type]
    if dims[0] % block_values:
        raise ValueError(f"{name} rows of {dims[0]} values are not a whole number of {block_values}-value blocks")
    count = 1
    for d in dims:
        count *= d
    return count // block_values * block_bytes


def _string(text):
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    return struct.pack("<Q", len(data)) + data


def _value(value_type, value):
    if value_type == STRING:
        return _string(value)
    if value_type == ARRAY:
        element_type, items = value
        out = struct.pack("<IQ", element_type, len(items))
        return out + b"".join(_value(element_type, item) for item in items)
    return struct.pack(_SCALAR_FORMATS[value_type], value)


def _data(payload):
    return payload.tobytes() if hasattr(payload, "tobytes") else bytes(payload)


def gguf_bytes(metadata, tensors, alignment=DEFAULT_ALIGNMENT, version=3):
    """The bytes of a GGUF file. metadata: [(key, type, value)] in file order; tensors: [(name,
    ggml_type_id, dims, data)], laid out in order, each at a multiple of `alignment`. An alignment
    other than 32 adds general.alignment (UINT32) in front unless the metadata has it."""
    if version not in (2, 3):
        raise ValueError("this writer writes GGUF versions 2 and 3")
    keys = [key for key, _, _ in metadata]
    if alignment != DEFAULT_ALIGNMENT and "general.alignment" not in keys:
        metadata = [("general.alignment", UINT32, alignment)] + list(metadata)
    for key, value_type, value in metadata:
        if key == "general.alignment" and (value_type != UINT32 or value != alignment):
            raise ValueError("general.alignment must be the UINT32 `alignment` the data is laid out with")
    head = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(metadata))
    head += b"".join(_string(key) + struct.pack("<I", value_type) + _value(value_type, value) for key, value_type, value in metadata)
    infos, data = b"", b""
    for name, ggml_type, dims, payload in tensors:
        payload = _data(payload)
        if ggml_type in _BY_ID and len(payload) != tensor_bytes(ggml_type, dims):
            raise ValueError(f"tensor {name}: {len(payload)} bytes, but {_BY_ID[ggml_type][0]} {list(dims)} takes {tensor_bytes(ggml_type, dims)}")
        data += b"\0" * (-len(data) % alignment)
        infos += _string(name) + struct.pack("<I", len(dims)) + struct.pack(f"<{len(dims)}Q", *dims)
        infos += struct.pack("<IQ", ggml_type, len(data))
        data += payload
    out = head + infos
    return out + b"\0" * (-len(out) % alignment) + data  # spec: the data starts at a multiple of the alignment


def write_gguf(path, metadata, tensors, alignment=DEFAULT_ALIGNMENT, version=3):
    with open(path, "wb") as f:
        f.write(gguf_bytes(metadata, tensors, alignment, version))


def tensor_from_array(name, array, ggml_type="F32"):
    """A numpy array as a tensor of F32, F16 or BF16 (BF16: float32 rounded to nearest even). GGUF's
    dims are numpy's shape reversed: an (out, in) matrix has dims [in, out] and the same bytes."""
    import numpy as np
    array = np.ascontiguousarray(array, dtype=np.float32)
    if ggml_type == "F32":
        payload = array.astype("<f4").tobytes()
    elif ggml_type == "F16":
        payload = array.astype("<f2").tobytes()
    elif ggml_type == "BF16":
        bits = array.view(np.uint32).astype(np.uint64)
        payload = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype("<u2").tobytes()
    else:
        raise ValueError(f"tensor_from_array writes F32, F16 and BF16, not {ggml_type}")
    return (name, GGML_ID[ggml_type], list(reversed(array.shape)), payload)


def pattern(size, seed):
    """Deterministic test bytes: byte j is (7 j + seed) mod 256."""
    return bytes((7 * j + seed) % 256 for j in range(size))


# --- the samples tests/test_gguf.cpp reads (keep the two in step)
def every_value_type():
    return [
        ("general.architecture", STRING, "llama"),
        ("test.uint8", UINT8, 200), ("test.int8", INT8, -100), ("test.uint16", UINT16, 60000), ("test.int16", INT16, -30000),
        ("test.uint32", UINT32, 4000000000), ("test.int32", INT32, -2000000000), ("test.float32", FLOAT32, 1.5),
        ("test.bool", BOOL, True), ("test.string", STRING, "caf\u00e9 \u4f60\u597d"), ("test.uint64", UINT64, 2**64 - 1),
        ("test.int64", INT64, -(2**62)), ("test.float64", FLOAT64, -0.1),
        ("test.empty_array", ARRAY, (UINT32, [])),
        ("tokenizer.ggml.tokens", ARRAY, (STRING, ["<s>", "", "\u0120the", "caf\u00e9"])),
        ("tokenizer.ggml.scores", ARRAY, (FLOAT32, [0.0, -1.5, 2.25])),
        ("tokenizer.ggml.token_type", ARRAY, (INT32, [1, -2, 3])),
        ("test.uint8_array", ARRAY, (UINT8, [0, 255])), ("test.bool_array", ARRAY, (BOOL, [True, False, True])),
        ("test.float64_array", ARRAY, (FLOAT64, [0.1])),
        ("test.nested", ARRAY, (ARRAY, [(INT16, [1, 2]), (STRING, ["x"]), (UINT32, [])])),
    ]


def write_samples(folder):
    import numpy as np
    import os
    meta = every_value_type()
    small = ("small.weight", GGML_ID["F32"], [3, 2], np.arange(6, dtype="<f4") - 2.5)
    write_gguf(os.path.join(folder, "values-v3.gguf"), meta, [small])
    write_gguf(os.path.join(folder, "values-v2.gguf"), meta, [small], version=2)
    # Every type tscope reads (two rows each) and two it does not: each tensor's bytes a pattern.
    typed = [("f32", "F32", [5, 2]), ("f16", "F16", [3, 2]), ("bf16", "BF16", [7, 2]), ("q8_0", "Q8_0", [64, 2]),
             ("q4_0", "Q4_0", [32, 3]), ("q4_k", "Q4_K", [512, 2]), ("q5_k", "Q5_K", [256, 2]), ("q6_k", "Q6_K", [256, 3]),
             ("blk.0.attn_q.weight", "IQ2_XXS", [256, 2]), ("i32", "I32", [3])]
    tensors = [(name, GGML_ID[t], dims, pattern(tensor_bytes(GGML_ID[t], dims), seed)) for seed, (name, t, dims) in enumerate(typed)]
    write_gguf(os.path.join(folder, "types.gguf"), [("general.architecture", STRING, "test")], tensors)
    for alignment in (8, 64):
        odd = [("a", GGML_ID["F32"], [3], pattern(12, 1)), ("b", GGML_ID["F16"], [5], pattern(10, 2)), ("c", GGML_ID["Q8_0"], [32], pattern(34, 3))]
        write_gguf(os.path.join(folder, f"aligned-{alignment}.gguf"), [("general.name", STRING, "x")], odd, alignment=alignment)
    # Real values: a (2, 3) matrix as dims [3, 2] in each float type.
    matrix = np.array([[1.0, -2.0, 0.5], [3.25, 65504.0, -0.0]], dtype=np.float32)
    write_gguf(os.path.join(folder, "floats.gguf"), [],
               [tensor_from_array("m.f32", matrix), tensor_from_array("m.f16", matrix, "F16"), tensor_from_array("m.bf16", matrix, "BF16")])


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: gguf_writer.py FOLDER")
    write_samples(sys.argv[1])
