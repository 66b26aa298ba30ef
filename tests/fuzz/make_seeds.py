#!/usr/bin/env python3
"""Writes the seed corpus of every fuzz target into tests/fuzz/corpus/<target>/: small valid files
and edge cases (kept to tens of KB per target). Run from anywhere; the corpus is committed, so this
only needs re-running when a seed is added here. Regression inputs the fuzzers found are added by
hand as corpus/<target>/regression-*."""
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def safetensors(tensors, metadata=None, pad=True):
    """tensors: list of (name, dtype, shape, bytes)."""
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, payload in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(payload)]}
        data += payload
    text = json.dumps(header).encode()
    if pad:
        text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


# --- safetensors
f32 = struct.pack("<4f", 1.0, -2.5, 0.0, 3.25)
f16 = struct.pack("<4H", 0x3C00, 0xC000, 0x0001, 0x7C00)  # 1, -2, smallest subnormal, inf
bf16 = struct.pack("<2H", 0x3F80, 0xFFC0)  # 1, NaN
write("safetensors", "valid-three-dtypes", safetensors(
    [("wte.weight", "F32", [2, 2], f32), ("h.0.ln_1.weight", "F16", [4], f16), ("ln_f.bias", "BF16", [2], bf16)],
    {"format": "pt"}))
write("safetensors", "empty-header", safetensors([]))
write("safetensors", "zero-dim-tensor", safetensors([("empty", "F32", [0, 3], b""), ("scalar", "F32", [], f32[:4])]))
write("safetensors", "truncated", safetensors([("a", "F32", [4], f32)])[:-3])
write("safetensors", "unsupported-dtype", safetensors([("a", "I64", [2], b"\0" * 16)]))
write("safetensors", "short", b"\x08\0\0")

# --- config.json
for name in ("brown-small", "brown-moe", "induction-2l", "dates-encdec"):
    with open(os.path.join(ROOT, "assets", "models", name, "config.json"), "rb") as f:
        write("config", name, f.read())
write("config", "encoder-decoder-variants", json.dumps({
    "n_layer": 1, "n_encoder_layer": 2, "n_head": 4, "n_embd": 32, "n_kv_head": 2, "position_encoding": "rope",
    "norm": "rmsnorm", "norm_position": "post", "activation_function": "swiglu", "n_experts": 3, "moe_top_k": 2,
    "decoder_start_token_id": 1, "eos_token_id": 2, "vocab_size": 41, "tokenizer": "char"}))
write("config", "hf-gpt2", json.dumps({
    "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "layer_norm_epsilon": 1e-05,
    "model_type": "gpt2", "n_ctx": 1024, "n_embd": 768, "n_head": 12, "n_inner": None, "n_layer": 12,
    "n_positions": 1024, "vocab_size": 50257}))
write("config", "lab-variants", json.dumps({
    "n_layer": 2, "n_head": 4, "n_embd": 32, "n_kv_head": 2, "position_encoding": "sinusoidal", "position_base": 500.0,
    "norm": "rmsnorm", "norm_position": "post", "activation_function": "swiglu", "causal": False, "attention_window": 4,
    "n_experts": 4, "moe_top_k": 1, "moe_routing": "expert_choice", "moe_capacity_factor": 2.0, "tokenizer": "char"}))
write("config", "rope-llama3-scaling", json.dumps({
    "n_layer": 2, "n_head": 4, "n_embd": 32, "n_kv_head": 2, "position_encoding": "rope", "position_base": 500000.0,
    "rope_scaling_factor": 8.0, "rope_low_freq_factor": 1.0, "rope_high_freq_factor": 4.0, "rope_original_context": 8192,
    "norm": "rmsnorm", "activation_function": "swiglu", "tokenizer": "char"}))
write("config", "moe-shared-expert", json.dumps({
    "n_layer": 2, "n_head": 4, "n_embd": 32, "activation_function": "swiglu", "n_experts": 4, "moe_top_k": 2,
    "moe_capacity_factor": 0, "moe_normalize_top_k": False, "moe_shared_expert_d_ff": 48}))
write("config", "wrong-type", '{"n_layer": "12"}')

# --- GPT-2 tokenizer files: a byte-level vocab (all 256 bytes) and a few merges, NUL-separated.
def byte_alphabet():
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    out, shifted = {}, 256
    for b in range(256):
        if b in printable:
            out[b] = chr(b)
        else:
            out[b] = chr(shifted)
            shifted += 1
    return out

alphabet = byte_alphabet()
vocab = {alphabet[b]: b for b in range(256)}
merges = [("\u0120", "t"), ("h", "e"), ("\u0120t", "he"), ("i", "n"), ("in", "g"), ("e", "r")]
for left, right in merges:
    vocab[left + right] = len(vocab)
vocab["<|endoftext|>"] = len(vocab)
merges_text = "#version: 0.2\n" + "".join(f"{l} {r}\n" for l, r in merges)
write("gpt2_tokenizer_files", "tiny-valid", json.dumps(vocab, ensure_ascii=False) + "\0" + merges_text)
write("gpt2_tokenizer_files", "crlf-merges", json.dumps(vocab, ensure_ascii=False) + "\0" + merges_text.replace("\n", "\r\n"))
write("gpt2_tokenizer_files", "missing-byte", json.dumps({k: v for k, v in vocab.items() if v != 10 and v < 256}) + "\0")
write("gpt2_tokenizer_files", "bad-merge", json.dumps(vocab, ensure_ascii=False) + "\0" + "q z\n")

# --- tokenizer.json (HF BPE): the file, a NUL, a text. Byte-level (GPT-2 regex, Llama 3 split with
# ignore_merges), SentencePiece style with byte fallback, Metaspace, and an unknown regex.
def hf_tokenizer(vocab, merges, pre_tokenizer, normalizer=None, decoder=None, added=(), **model):
    return json.dumps({"version": "1.0", "added_tokens": [
        {"id": i, "content": c, "special": True, "lstrip": False, "rstrip": False} for i, c in added],
        "normalizer": normalizer, "pre_tokenizer": pre_tokenizer, "decoder": decoder,
        "model": dict(type="BPE", vocab=vocab, merges=merges, **model)}, ensure_ascii=False)

bl_merges = [f"{l} {r}" for l, r in merges]
llama3_regex = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
write("tokenizer_json", "byte-level-gpt2", hf_tokenizer(vocab, bl_merges, {"type": "ByteLevel", "use_regex": True},
      decoder={"type": "ByteLevel"}, added=[(len(vocab) - 1, "<|endoftext|>")]) + "\0the thing's 123  \n")
write("tokenizer_json", "byte-level-llama3", hf_tokenizer(vocab, [[l, r] for l, r in merges], {"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex": llama3_regex}, "behavior": "Isolated", "invert": False},
      {"type": "ByteLevel", "use_regex": False}]}, ignore_merges=True) + "\0I'LL pay 1234567\r\n\r\n  ok")
sp_vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
for b in range(256):
    sp_vocab[f"<0x{b:02X}>"] = len(sp_vocab)
for piece in ["\u2581", "t", "h", "e", "\u2581t", "he", "\u2581the", "a", "\u00e9"]:
    sp_vocab[piece] = len(sp_vocab)
sp_merges = ["\u2581 t", "h e", "\u2581t he"]
sp_decoder = {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
              {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
write("tokenizer_json", "sentencepiece-llama2", hf_tokenizer(sp_vocab, sp_merges, None,
      normalizer={"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                  {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
      decoder=sp_decoder, added=[(0, "<unk>"), (1, "<s>"), (2, "</s>")], unk_token="<unk>", byte_fallback=True,
      fuse_unk=True) + "\0the \u00e9t\u00e9 \u4f60 <s>the")
write("tokenizer_json", "metaspace", hf_tokenizer(sp_vocab, sp_merges, {"type": "Metaspace", "replacement": "\u2581",
      "prepend_scheme": "first", "split": True}, decoder={"type": "Metaspace", "replacement": "\u2581"},
      unk_token="<unk>") + "\0the the  xyz")
write("tokenizer_json", "unknown-regex", hf_tokenizer(vocab, bl_merges, {"type": "Split", "pattern": {"Regex": r"\w+"},
      "behavior": "Isolated", "invert": False}) + "\0x")

# --- chars.json
with open(os.path.join(ROOT, "assets", "models", "induction-2l", "chars.json"), "rb") as f:
    write("chars_json", "induction-2l", f.read())
write("chars_json", "multibyte", json.dumps({"chars": ["<unk>", "a", "\u00e9", "\u20ac", "\U0001F600", " ", "\n"]}, ensure_ascii=False))
write("chars_json", "duplicate", json.dumps({"chars": ["<unk>", "a", "a"]}))
write("chars_json", "two-code-points", json.dumps({"chars": ["<unk>", "ab"]}))

# --- llm.c checkpoint: a tiny valid one (L=1, C=2, H=1, V=3, padded V=4, T=2) and bad headers.
def llmc(L=1, C=2, H=1, V=3, Vp=4, P=2, magic=20240326, version=3, drop=0):
    header = [0] * 256
    header[:8] = [magic, version, P, V, L, H, C, Vp]
    F = 4 * C
    counts = [Vp * C, P * C, L * C, L * C, L * 3 * C * C, L * 3 * C, L * C * C, L * C, L * C, L * C, L * F * C,
              L * F, L * C * F, L * C, C, C]
    floats = [((i * 37) % 11 - 5) / 8.0 for i in range(sum(counts))]
    data = struct.pack("<256i", *header) + struct.pack(f"<{len(floats)}f", *floats)
    return data[:len(data) - drop]

write("llmc_checkpoint", "tiny-valid", llmc())
write("llmc_checkpoint", "truncated", llmc(drop=4))
write("llmc_checkpoint", "bad-version", llmc(version=5))
write("llmc_checkpoint", "head-not-dividing", llmc(C=3, H=2))

# --- llama2.c (fuzz_llama2c): byte 0 even, a checkpoint; odd, a uint16 vocab size then a tokenizer.bin.
# A tiny model: dim 4, hidden 6, 1 layer, 2 heads, 1 kv head, vocab 5, seq_len 2 (head size 2).
def llama2c(version=0, shared=True, dim=4, hidden=6, L=1, H=2, KV=1, V=5, T=2, gs=2, drop=0, magic=0x616B3432):
    D, F = dim // H, hidden
    mats = [(V, dim)] + [(dim, dim)] * L + [(KV * D, dim)] * (2 * L) + [(dim, dim)] * L + [(F, dim), (dim, F), (F, dim)] * L
    if not shared:
        mats.append((V, dim))
    vals = lambda n: [((i * 37) % 11 - 5) / 8.0 for i in range(n)]  # noqa: E731
    norms = struct.pack(f"<{(2 * L + 1) * dim}f", *[1.0] * ((2 * L + 1) * dim))
    if version == 0:
        floats = sum(r * c for r, c in mats) + (2 * L + 1) * dim + T * D
        data = struct.pack("<7i", dim, hidden, L, H, KV, V if shared else -V, T) + struct.pack(f"<{floats}f", *vals(floats))
    else:
        header = struct.pack("<Ii7iB", magic, version, dim, hidden, L, H, KV, V, T, int(shared))
        header += struct.pack("<i", gs) if version == 2 else b""
        data = header + b"\0" * (256 - len(header)) + norms
        for r, c in mats:
            n = r * c
            data += struct.pack(f"<{n}f", *vals(n)) if version == 1 else bytes((i * 7) % 256 for i in range(n)) + struct.pack(f"<{n // gs}f", *[0.01] * (n // gs))
    return b"\0" + data[:len(data) - drop]


write("llama2c", "legacy-tiny", llama2c())
write("llama2c", "legacy-unshared", llama2c(shared=False))
write("llama2c", "v1-tiny", llama2c(version=1, shared=False))
write("llama2c", "v2-q80", llama2c(version=2))
write("llama2c", "legacy-truncated", llama2c(drop=4))
write("llama2c", "v1-bad-version", llama2c(version=3))
write("llama2c", "kv-not-dividing", llama2c(H=2, KV=3))
pieces = [b"<unk>", b"\n<s>\n", b"\n</s>\n"] + [b"<0x%02X>" % b for b in range(256)] + [b" ", b"a", b"b", b" a", b"ab", b"\xc3\xa9"]
scores = [0.0] * 259 + [-10.0, -11.0, -12.0, -1.0, -2.0, -13.0]
tokenizer_bin = struct.pack("<I", max(len(p) for p in pieces)) + b"".join(struct.pack("<fi", s, len(p)) + p for p, s in zip(pieces, scores))
write("llama2c", "tokenizer-bin", b"\x01" + struct.pack("<H", len(pieces)) + tokenizer_bin)
write("llama2c", "tokenizer-bin-short-vocab", b"\x01" + struct.pack("<H", 3) + tokenizer_bin)
write("llama2c", "tokenizer-bin-truncated", b"\x01" + struct.pack("<H", len(pieces)) + tokenizer_bin[:-1])

# --- session files
session = {"tscope_session": 1, "model": "assets/models/brown-small", "prompt": "The quick brown fox",
           "panel": "attention", "layer": 1, "head": 2, "token": -1, "average_heads": False, "show_scores": True,
           "lines_view": False, "show_grid": False, "temperature": 0.8, "top_k": 40, "top_p": 0.95, "greedy": False,
           "seed": 7, "beam_width": 0, "beam_steps": 4, "measure_kv_cache": False, "moe_top_k": 0,
           "moe_capacity_factor": -1.0, "moe_expert_choice": False, "font_scale": 1.5, "projector": True}
write("session_file", "full", json.dumps(session, indent=2))
write("session_file", "minimal", '{"tscope_session": 1}')
write("session_file", "unicode-prompt", json.dumps({"tscope_session": 1, "prompt": "caf\u00e9 \u20ac \U0001F600", "panel": "moe"}, ensure_ascii=False))
write("session_file", "bad-temperature", '{"tscope_session": 1, "temperature": 0}')
write("session_file", "encoder-decoder-source", json.dumps({"tscope_session": 1, "model": "assets/models/dates-encdec",
                                                             "source": "the twelfth of march nineteen ninety one", "prompt": "1991-"}))

# --- lessons: the unit tests' sample, a minimal one, and a few near misses
with open(os.path.join(ROOT, "tests", "data", "lessons", "sample.json"), "rb") as f:
    write("lesson", "sample", f.read())
lesson = {"format": "tscope-lesson", "version": 1, "title": "T", "lecture": "L", "summary": "S", "model": "induction-2l",
          "steps": [{"title": "t", "caption": "One. Two!"}]}
write("lesson", "minimal", json.dumps(lesson))
lesson["steps"].append({"title": "check", "caption": "Which head?", "layer": 5, "head": 9, "token": 3, "prompt": "abcabc",
                        "check": {"question": "q", "kind": "head", "choices": ["1.0", "1.1"], "answer": "1.1", "key": -1},
                        "architecture": {"n_layer": 2, "n_head": 2, "n_embd": 16}})
write("lesson", "check-and-clamp", json.dumps(lesson))
write("lesson", "bad-panel", json.dumps({**lesson, "steps": [{"title": "t", "caption": "c", "panel": "nope"}]}))
write("lesson", "four-sentences", json.dumps({**lesson, "steps": [{"title": "t", "caption": "A. B. C. D."}]}))

# --- HuggingFace Llama-family config.json
llama = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 576, "intermediate_size": 1536,
         "num_hidden_layers": 30, "num_attention_heads": 9, "num_key_value_heads": 3, "vocab_size": 49152,
         "max_position_embeddings": 8192, "rms_norm_eps": 1e-05, "rope_theta": 100000, "hidden_act": "silu",
         "tie_word_embeddings": True, "rope_scaling": None}
write("hf_config", "smollm2-135m", json.dumps(llama))
write("hf_config", "mistral-window", json.dumps(dict(llama, architectures=["MistralForCausalLM"], model_type="mistral",
                                                     sliding_window=4096)))
write("hf_config", "qwen2-window-layers", json.dumps(dict(llama, architectures=["Qwen2ForCausalLM"], model_type="qwen2",
                                                          use_sliding_window=True, sliding_window=32, max_window_layers=28)))
write("hf_config", "llama3-rope-scaling", json.dumps(dict(llama, rope_scaling={"rope_type": "llama3", "factor": 8.0})))
llama3_scaling = {"factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
write("hf_config", "llama3.2-rope-scaling", json.dumps(dict(llama, rope_theta=500000.0, max_position_embeddings=131072,
                                                            rope_scaling=dict(llama3_scaling, rope_type="llama3"))))
write("hf_config", "llama3.1-rope-scaling-type", json.dumps(dict(llama, rope_theta=500000.0, max_position_embeddings=131072,
                                                                 rope_scaling=dict(llama3_scaling, factor=8.0, type="llama3"))))
write("hf_config", "yarn-rope-scaling", json.dumps(dict(llama, rope_scaling={"rope_type": "yarn", "factor": 4.0,
                                                                             "original_max_position_embeddings": 32768})))
write("hf_config", "qwen3", json.dumps(dict(llama, architectures=["Qwen3ForCausalLM"], head_dim=128)))
write("hf_config", "mixtral", json.dumps(dict(llama, architectures=["MixtralForCausalLM"], model_type="mixtral",
                                              num_local_experts=8, num_experts_per_tok=2, router_aux_loss_coef=0.02,
                                              sliding_window=None)))
write("hf_config", "qwen3-qk-norm", json.dumps(dict(llama, architectures=["Qwen3ForCausalLM"], model_type="qwen3", head_dim=64,
                                                    attention_bias=False, use_sliding_window=False, sliding_window=None)))
write("hf_config", "qwen2-moe", json.dumps(dict(llama, architectures=["Qwen2MoeForCausalLM"], model_type="qwen2_moe", num_experts=60,
                                                num_experts_per_tok=4, moe_intermediate_size=1408, shared_expert_intermediate_size=5632,
                                                norm_topk_prob=False, decoder_sparse_step=1, mlp_only_layers=[],
                                                router_aux_loss_coef=0.001, use_sliding_window=False, sliding_window=32768)))
# BERT masked LMs (hf_bert.cpp): bert-base-uncased's config.json fields, an old one without architectures,
# and relative positions (refused in one line).
bert = {"architectures": ["BertForMaskedLM"], "model_type": "bert", "hidden_size": 768, "num_hidden_layers": 12,
        "num_attention_heads": 12, "intermediate_size": 3072, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1, "max_position_embeddings": 512, "type_vocab_size": 2, "initializer_range": 0.02,
        "layer_norm_eps": 1e-12, "pad_token_id": 0, "position_embedding_type": "absolute", "use_cache": True, "vocab_size": 30522}
write("hf_config", "bert-base-uncased", json.dumps(bert))
write("hf_config", "bert-model-type-only", json.dumps({k: v for k, v in bert.items() if k != "architectures"}))
write("hf_config", "bert-relative-key", json.dumps(dict(bert, position_embedding_type="relative_key")))

# --- training set-up: a --data spec line, then a --config file
for name in ("brown-small", "brown-moe", "induction-2l"):
    with open(os.path.join(ROOT, "assets", "models", "configs", name + ".json"), "rb") as f:
        spec = b"brown:vocab=4096,val=0.05\n" if name.startswith("brown") else b"induction:vocab=16,length=8\n"
        write("train_setup", name, spec + f.read())
write("train_setup", "modadd", 'modadd:modulus=13\n{"model": {"n_layer": 1, "n_head": 1, "n_embd": 8}, "train": {"batch": 4, "seq_len": 4, "steps": 10, "warmup": 0}}')
write("train_setup", "copy-unknown-key", 'copy:vocab=5,length=3\n{"train": {"batchsize": 4}}')
write("train_setup", "reverse", 'reverse:vocab=3,length=2\n{}')
write("train_setup", "addition", 'addition:digits=4\n{}')
write("train_setup", "text-path", 'text:path=/data/a:b=c.txt,vocab=300,val=0.1\n{}')
with open(os.path.join(ROOT, "assets", "models", "configs", "dates-encdec.json"), "rb") as f:
    write("train_setup", "dates-encdec", b"dates\n" + f.read())

# --- training comparisons (the Training panel's Compare view)
def compared_run(label, losses, evals):
    return {"label": label, "name": label.title(), "data": f"{label}:vocab=4,length=3",
            "train_config": {"model": {"n_layer": 1, "n_head": 1, "n_embd": 8, "vocab_size": 7, "n_positions": 8},
                             "train": {"batch": 4, "seq_len": 8, "steps": len(losses), "warmup": 0, "eval_every": 2}},
            "parameters": 1000, "train_loss": losses, "eval_steps": [e for e, _ in evals], "val_loss": [v for _, v in evals],
            "seconds": 0.5, "tokens_per_second": 1e4}
comparison = {"format": "tscope-training-comparison", "version": 1, "title": "t", "description": "d", "command": "c",
              "machine": "m", "date": "2026-11-24",
              "runs": [compared_run("copy", [2.0, 1.9, 1.7, 1.5], [(2, 1.9), (4, 1.6)]), compared_run("reverse", [2.0, 1.95], [(2, 1.9)])]}
write("comparison", "two-runs", json.dumps(comparison, indent=1))
comparison["runs"][1]["eval_steps"] = [3]
write("comparison", "eval-beyond-run", json.dumps(comparison))
write("comparison", "no-runs", '{"format": "tscope-training-comparison", "version": 1, "runs": []}')

# --- texts for the encoders
texts = {
    "english": "The quick brown fox jumps over the lazy dog. It's 2026; we'll see what they've done.\n\n",
    "unicode": "caf\u00e9 na\u00efve \u4f60\u597d \U0001F600 \u0391\u03b2\u03b3 \u0661\u0662\u0663 \u00a0\u2003x",
    "spaces": "a    b\t\t\n  \n\n   ",
    "contractions": "I'm, you're, he's, 'll 'd 've 'S 'T",
    "digits": "123456789 0.5 1e10 \u00bd",
}
for name, text in texts.items():
    write("bpe_encode", name, text)
    write("char_encode", name, text)
write("bpe_encode", "invalid-utf8", b"ok \xff\xfe \xc0\x80 \xed\xa0\x80 \xf4\x90\x80\x80 \xe2\x82 end")
write("char_encode", "invalid-utf8", b"a\xff\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xe2\x82|")
write("char_encode", "vocab", "abzA 0|<\u00e9\u20ac\u4f60\U0001F600\x7f\x01\n")

# --- WordPiece (fuzz_wordpiece): a vocab.txt or a tokenizer.json, a NUL byte, then a text
wp_vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "the", "cafe", ",", ".", "!", "##s", "a", "##a",
            "\u6211", "hello", "world", "'", "s"]
wp_text = "Hello, WORLD! unaffable caf\u00e9s \u6211 [MASK] x\u200by \x01 " + "a" * 120 + " \u039f\u03a3 \ud55c"
write("wordpiece", "vocab-txt", "\n".join(wp_vocab).encode() + b"\n\0" + wp_text.encode())
write("wordpiece", "vocab-txt-crlf-invalid", "\r\n".join(wp_vocab).encode() + b"\0ok \xff\xfe \xc0\x80 the\xed\xa0\x80s")


def wp_tokenizer(lowercase=True, strip_accents=None, decoder=True):
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True}
             for i, t in enumerate(wp_vocab[:5])]
    return json.dumps({
        "version": "1.0", "added_tokens": added,
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "strip_accents": strip_accents,
                       "lowercase": lowercase},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True} if decoder else None,
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100,
                  "vocab": {t: i for i, t in enumerate(wp_vocab)}}})


write("wordpiece", "tokenizer-json-uncased", wp_tokenizer() + "\0" + wp_text)
write("wordpiece", "tokenizer-json-cased", wp_tokenizer(lowercase=False, strip_accents=True, decoder=False) + "\0" + wp_text)

# --- Router logits typed by hand (fuzz_router_logits): the lecture's example, several tokens
write("router_logits", "slide", "2.1, 0.3, 1.8, 0.1, 3.2, 0.5, 1.1, 0.8\n")
write("router_logits", "three-tokens", "1 2 3\n3 2 1\n\n0.5,0.5,-1\n")

# --- GGUF (fuzz_gguf): files from tests/golden/gguf_writer.py (its module part needs no numpy)
sys.path.insert(0, os.path.join(ROOT, "tests", "golden"))
import gguf_writer as gw  # noqa: E402

gguf_meta = [("general.architecture", gw.STRING, "llama"), ("llama.block_count", gw.UINT32, 2), ("llama.rope.freq_base", gw.FLOAT32, 1e4),
             ("general.flag", gw.BOOL, True), ("general.big", gw.UINT64, 2**64 - 1), ("general.neg", gw.INT8, -3),
             ("tokenizer.ggml.tokens", gw.ARRAY, (gw.STRING, ["<s>", "", "\u0120a\u00e9"])),
             ("tokenizer.ggml.scores", gw.ARRAY, (gw.FLOAT64, [0.5, -1.0])),
             ("general.nested", gw.ARRAY, (gw.ARRAY, [(gw.INT16, [1, -2]), (gw.BOOL, [])]))]
gguf_tensors = [("token_embd.weight", gw.GGML_ID["F32"], [4, 2], struct.pack("<8f", *range(8))),
                ("blk.0.attn_q.weight", gw.GGML_ID["Q8_0"], [32, 1], bytes(range(34)))]
gguf_valid = gw.gguf_bytes(gguf_meta, gguf_tensors)
write("gguf", "valid-v3", gguf_valid)
write("gguf", "valid-v2-aligned-64", gw.gguf_bytes(gguf_meta, gguf_tensors, alignment=64, version=2))
write("gguf", "every-quantized-type", gw.gguf_bytes([("general.architecture", gw.STRING, "x")], [
    (name.lower(), gw.GGML_ID[name], [256], bytes(gw.tensor_bytes(gw.GGML_ID[name], [256])))
    for name in ("Q4_0", "Q4_K", "Q5_K", "Q6_K", "IQ2_XXS", "BF16", "F16")]))
write("gguf", "truncated", gguf_valid[:-5])
write("gguf", "bad-magic", b"GGML" + gguf_valid[4:])
write("gguf", "version-1", gguf_valid[:4] + struct.pack("<I", 1) + gguf_valid[8:])
