# Builds the golden encoder-decoder data: for each variant a tiny random tscope model directory
# (config.json, model.safetensors in F32 with tscope's names, chars.json), the source and target ids,
# and the float64 reference's logits and attention maps (encoder self, decoder self, cross).
# Before writing it checks the reference against a second formulation, that the outputs are
# informative (attention neither flat nor one-hot, MoE routing not on a knife edge) and that each
# variant's distinctive conventions move the outputs well past the test's tolerance.
# Usage: make_reference.py OUTDIR
import sys

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__

import argparse
import json
import math
import os

import numpy as np
import torch

import reference_encdec as ref

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "forward"))
import weight_files  # noqa: E402  (the forward golden test's safetensors writer and reader)

# The two formulations of the same float64 math must agree to rounding.
FORMULATION_TOLERANCE = 1e-10
# check_encdec.py's tolerance; a convention a variant tests must move an output 10x past it.
CHECK_TOLERANCE = 1e-4
SENSITIVITY_FACTOR = 10
# tanh and erf GELU differ by at most ~5e-4 anywhere, so that swap moves outputs by less: it must
# still clear the tolerance by this factor (float32's own error is ~1e-6).
GELU_FORM_FACTOR = 2
# A router gap (k-th minus (k+1)-th logit) below this could let float32 rounding pick other experts.
MIN_ROUTER_GAP = 1e-3

# One code point per entry, id = index; "^" starts the decoder, "$" ends a target.
CHARS = ["<unk>", "^", "$"] + [chr(c) for c in range(ord("a"), ord("q") + 1)]
V = len(CHARS)  # 20
START, EOS = CHARS.index("^"), CHARS.index("$")


def variants():
    """[(name, config, seed, matrix std, source ids, target ids)]: S != T everywhere, the sources and
    targets cover id 0 (<unk>) and V - 1, and the targets start with decoder_start_token_id. The
    post-norm ReLU model needs larger matrices for its cross-attention not to be flat (ReLU's
    positive mean gives every encoder output row a large common part)."""
    common = dict(vocab_size=V, n_positions=16, decoder_start_token_id=START, eos_token_id=EOS)
    return [
        ("pre_ln_gelu_learned",
         ref.EncDecConfig(n_layer=2, n_encoder_layer=2, n_head=4, n_embd=32, norm="layernorm", pre_norm=True,
                          activation="gelu_new", position_encoding="learned", tie_word_embeddings=True, **common),
         101, 0.3, [5, 19, 0, 7, 3, 12, 2], [START, 8, 14, 4, 19]),
        ("rms_swiglu_rope_gqa",
         ref.EncDecConfig(n_layer=2, n_encoder_layer=1, n_head=4, n_kv_head=2, n_embd=32, d_ff=48, norm="rmsnorm",
                          pre_norm=True, activation="swiglu", position_encoding="rope", position_base=10000.0,
                          tie_word_embeddings=False, **common),
         202, 0.3, [9, 0, 17, 19, 2], [START, 6, 6, 11, 0, 15, 19, 3]),
        ("post_ln_relu_sinusoidal",
         ref.EncDecConfig(n_layer=1, n_encoder_layer=2, n_head=4, n_embd=32, norm="layernorm", pre_norm=False,
                          activation="relu", position_encoding="sinusoidal", position_base=10000.0,
                          tie_word_embeddings=True, **common),
         309, 0.5, [19, 4, 4, 10, 0, 13, 7, 16, 2], [START, 12, 19, 5]),
        ("alibi_moe",
         ref.EncDecConfig(n_layer=1, n_encoder_layer=1, n_head=6, n_embd=48, d_ff=64, norm="rmsnorm", pre_norm=True,
                          activation="gelu", position_encoding="alibi", n_experts=4, moe_top_k=2,
                          tie_word_embeddings=True, **common),
         409, 0.3, [3, 18, 0, 11, 19, 6, 2], [START, 10, 0, 17, 19, 7]),
    ]


# ---- deliberately wrong conventions: each must change the outputs (the test can tell them apart) ----

def rope_half_split(x, base):
    """RoPE rotating pairs (i, i + D/2) (HF's rotate_half) instead of tscope's (2i, 2i + 1)."""
    n, T, D = x.shape
    out = x.clone()
    for t in range(T):
        for i in range(D // 2):
            angle = t * base ** (-2.0 * i / D)
            c, s = math.cos(angle), math.sin(angle)
            out[:, t, i] = x[:, t, i] * c - x[:, t, i + D // 2] * s
            out[:, t, i + D // 2] = x[:, t, i] * s + x[:, t, i + D // 2] * c
    return out


def sinusoidal_halves(P, C, base):
    """The sinusoidal table as [sin | cos] halves instead of interleaved columns."""
    interleaved = ref.sinusoidal_table_loops(P, C, base)
    return torch.cat([interleaved[:, 0::2], interleaved[:, 1::2]], dim=1)


def moe_not_renormalised(x, router_weight, experts, top_k):
    """Gates = the full softmax's top-k probabilities (moe_normalize_top_k false)."""
    probs = torch.softmax(x @ router_weight, dim=1)
    values, indices = probs.topk(top_k, dim=1)
    out = torch.zeros_like(x)
    for t in range(x.shape[0]):
        for gate, e in zip(values[t], indices[t]):
            out[t] += gate * experts[int(e)](x[t:t + 1])[0]
    return out


def swapped(params, a, b):
    """params with every tensor whose name contains a renamed to b and the other way round."""
    out = {}
    for name, tensor in params.items():
        out[name.replace(a, "\0").replace(b, a).replace("\0", b)] = tensor
    return out


def kv_halves_swapped(params):
    """params with every crossattn.c_kv's K and V column halves (and bias halves) exchanged."""
    out = dict(params)
    for name, tensor in params.items():
        if ".crossattn.c_kv." in name:
            k, v = tensor.chunk(2, dim=-1)
            out[name] = torch.cat([v, k], dim=-1)
    return out


def mutations(name):
    """[(what, ops overrides, params transform or None, how many tolerances it must move an output)]."""
    gelu_erf = lambda x, n: ref.activation_by_hand(x, "gelu")  # noqa: E731
    gelu_tanh = lambda x, n: ref.activation_by_hand(x, "gelu_new")  # noqa: E731
    big = SENSITIVITY_FACTOR
    return {
        "pre_ln_gelu_learned": [
            ("erf GELU instead of tanh GELU", {"activation": gelu_erf}, None, GELU_FORM_FACTOR),
            ("encoder and decoder position tables swapped", {}, lambda p: swapped(p, "enc.wpe.", "wpe."), big),
            ("cross-attention's c_kv read as V | K instead of K | V", {}, kv_halves_swapped, big),
        ],
        "rms_swiglu_rope_gqa": [
            ("RoPE on halves (i, i + D/2)", {"rope": rope_half_split}, None, big),
            ("query head h reading kv head h % Hkv", {"kv_head_of": lambda H, Hkv: [h % Hkv for h in range(H)]}, None, big),
            ("SwiGLU's gate and value swapped", {}, lambda p: swapped(p, ".c_gate.", ".c_fc."), big),
        ],
        "post_ln_relu_sinusoidal": [
            ("sinusoidal table as [sin | cos] halves", {"sinusoidal": sinusoidal_halves}, None, big),
            ("tanh GELU instead of ReLU", {"activation": gelu_tanh}, None, big),
        ],
        "alibi_moe": [
            ("ALiBi slopes in reverse head order", {"alibi_slopes": lambda H: ref.alibi_slopes(H)[::-1]}, None, big),
            ("no ALiBi", {"alibi_slopes": lambda H: [0.0] * H}, None, big),
            ("MoE gates not renormalised over the top k", {"moe": moe_not_renormalised}, None, big),
            ("tanh GELU instead of erf GELU", {"activation": gelu_tanh}, None, GELU_FORM_FACTOR),
        ],
    }[name]


def output_arrays(outputs, config):
    """{file name: float64 array} of what the test compares."""
    arrays = {"logits.npy": outputs["logits"]}
    for l in range(config.n_encoder_layer):
        arrays[f"enc_attn_{l}.npy"] = outputs["enc_attn"][l]
    for l in range(config.n_layer):
        arrays[f"attn_{l}.npy"] = outputs["attn"][l]
        arrays[f"cross_{l}.npy"] = outputs["cross"][l]
    return {name: a.detach().numpy().astype(np.float64) for name, a in arrays.items()}


def largest_difference(a, b):
    """max over the arrays of max|a - b| / max|b|."""
    return max(float(np.abs(a[n] - b[n]).max() / np.abs(b[n]).max()) for n in b)


# ---- self-checks ----

def check_fixed_conventions():
    """The ops agree with hand-computed values (a second source for the constants)."""
    assert ref.alibi_slopes(4) == [2.0 ** -2, 2.0 ** -4, 2.0 ** -6, 2.0 ** -8]
    assert ref.alibi_slopes(6) == [2.0 ** -2, 2.0 ** -4, 2.0 ** -6, 2.0 ** -8, 2.0 ** -1, 2.0 ** -3]
    assert ref.alibi_slopes(8) == [2.0 ** -h for h in range(1, 9)]
    table = ref.sinusoidal_table_loops(3, 4, 10000.0)
    assert torch.allclose(table[2], torch.tensor([math.sin(2), math.cos(2), math.sin(0.02), math.cos(0.02)], dtype=torch.float64))
    x = torch.arange(8, dtype=torch.float64).reshape(1, 2, 4) + 1  # rows [1 2 3 4], [5 6 7 8]
    rotated = ref.rope_loops(x, 100.0)
    assert torch.equal(rotated[0, 0], x[0, 0])  # position 0 is not rotated
    c0, s0, c1, s1 = math.cos(1), math.sin(1), math.cos(0.1), math.sin(0.1)  # position 1: angles 1 and 100^(-1/2)
    expected = torch.tensor([5 * c0 - 6 * s0, 5 * s0 + 6 * c0, 7 * c1 - 8 * s1, 7 * s1 + 8 * c1], dtype=torch.float64)
    assert torch.allclose(rotated[0, 1], expected, atol=1e-14)
    assert ref.kv_head_of(4, 2) == [0, 0, 1, 1]
    print("self-check: ALiBi slopes, sinusoidal table, RoPE pairs and kv groups match hand-computed values")


def check_formulations(params, config, source, target, expected, label):
    other = ref.forward(params, config, source, target, ref.MATRIX_OPS)
    errors = {"logits": ref.max_relative_error(other["logits"], expected["logits"]),
              "enc_out": ref.max_relative_error(other["enc_out"], expected["enc_out"])}
    for kind in ["enc_attn", "attn", "cross"]:
        for l, probs in enumerate(expected[kind]):
            errors[f"{kind}_{l}"] = ref.max_relative_error(other[kind][l], probs)
    worst = max(errors.values())
    print(f"self-check {label}: loops vs matrix/MultiheadAttention formulation: max relative error {worst:.2e}")
    if not worst <= FORMULATION_TOLERANCE:
        raise SystemExit(f"reference formulations disagree ({label}): {errors}")


def check_informative(outputs, config, label):
    """Guard against a degenerate model whose outputs would let a wrong forward pass."""
    if not torch.isfinite(outputs["logits"]).all():
        raise SystemExit(f"{label}: non-finite logits")
    for kind, causal in [("enc_attn", False), ("attn", True), ("cross", False)]:
        for l, probs in enumerate(outputs[kind]):
            sums = probs.sum(dim=-1)
            assert torch.allclose(sums, torch.ones_like(sums), atol=1e-12), (label, kind, l)
            if causal:
                assert probs.triu(diagonal=1).abs().max() == 0, (label, kind, l)
            first = 3 if causal else 0  # rows with at least 4 keys
            mean_max = float(probs[:, first:, :].max(dim=-1).values.mean())
            print(f"{label} {kind}_{l}: mean max attention weight {mean_max:.3f}")
            if not 0.2 < mean_max < 0.9:
                raise SystemExit(f"{label} {kind}_{l}: attention too flat or too peaked ({mean_max:.3f})")
    for i, routing in enumerate(outputs["routing"]):
        print(f"{label} MoE call {i}: {len(set(routing['chosen']))} distinct expert sets, "
              f"smallest top-k gap {routing['min_gap']:.2e}")
        if routing["min_gap"] < MIN_ROUTER_GAP or len(set(routing["chosen"])) < 2:
            raise SystemExit(f"{label}: MoE routing is degenerate or too close to a tie: {routing}")
    logits = outputs["logits"]
    print(f"{label}: logits std {float(logits.std()):.3f}, max |logit| {float(logits.abs().max()):.3f}")


def check_sensitivity(params, config, source, target, expected_arrays, name):
    """Each wrong convention must move some compared array by its factor x the check's tolerance."""
    for what, overrides, transform, factor in mutations(name):
        ops = dict(ref.LOOP_OPS, **overrides)
        weights = transform(params) if transform else params
        moved = largest_difference(output_arrays(ref.forward(weights, config, source, target, ops), config), expected_arrays)
        print(f"sensitivity {name}: {what} moves the outputs by {moved:.2e} (relative; needs > {factor * CHECK_TOLERANCE:.0e})")
        if not moved > factor * CHECK_TOLERANCE:
            raise SystemExit(f"{name}: the test could not tell '{what}' from the reference ({moved:.2e})")


# ---- writing ----

def write_variant(directory, config, params, source, target, arrays):
    model_dir = os.path.join(directory, "model")
    expected_dir = os.path.join(directory, "expected")
    os.makedirs(model_dir, exist_ok=True)
    os.makedirs(expected_dir, exist_ok=True)
    with open(os.path.join(model_dir, "config.json"), "w") as f:
        json.dump(config.to_json(), f, indent=2)
    with open(os.path.join(model_dir, "chars.json"), "w", encoding="utf-8") as f:
        json.dump({"chars": CHARS}, f, ensure_ascii=False)
    weights_path = os.path.join(model_dir, "model.safetensors")
    weight_files.write_safetensors(weights_path, {n: t.numpy() for n, t in params.items()}, "F32")
    with open(os.path.join(directory, "ids.json"), "w") as f:
        json.dump({"source": source, "target": target}, f)
    for file_name, array in arrays.items():
        np.save(os.path.join(expected_dir, file_name), array)

    # Read everything back: the tensors exactly, the names exactly the contract's.
    tensors, metadata = weight_files.read_safetensors(weights_path)
    assert metadata == {"format": "pt"}
    assert set(tensors) == set(ref.parameter_shapes(config)), set(tensors) ^ set(ref.parameter_shapes(config))
    for tensor_name, shape in ref.parameter_shapes(config).items():
        assert tensors[tensor_name].shape == shape, tensor_name
        assert np.array_equal(tensors[tensor_name].astype(np.float64), params[tensor_name].numpy()), tensor_name
    with open(os.path.join(model_dir, "chars.json"), encoding="utf-8") as f:
        assert len(json.load(f)["chars"]) == config.vocab_size
    for file_name, array in arrays.items():
        stored = np.load(os.path.join(expected_dir, file_name))
        assert stored.dtype == np.float64 and np.array_equal(stored, array), file_name
    print(f"wrote and read back {directory}: {len(tensors)} tensors, {len(arrays)} expected arrays")


def main():
    parser = argparse.ArgumentParser(description="Builds the golden encoder-decoder data for tscope-cli.")
    parser.add_argument("outdir")
    args = parser.parse_args()

    check_fixed_conventions()
    names = []
    for name, config, seed, matrix_std, source, target in variants():
        assert len(source) != len(target) and target[0] == config.decoder_start_token_id
        assert all(0 <= i < config.vocab_size for i in source + target)
        params = ref.random_parameters(config, seed, matrix_std)
        expected = ref.forward(params, config, source, target)
        check_formulations(params, config, source, target, expected, name)
        check_informative(expected, config, name)
        arrays = output_arrays(expected, config)
        check_sensitivity(params, config, source, target, arrays, name)
        write_variant(os.path.join(args.outdir, name), config, params, source, target, arrays)
        names.append(name)
    with open(os.path.join(args.outdir, "manifest.json"), "w") as f:
        json.dump({"variants": names}, f, indent=2)
    print(f"wrote the golden encoder-decoder data ({len(names)} variants) to {args.outdir}")


if __name__ == "__main__":
    main()
