# PyTorch peer for tscope's GPU forward benchmark (bench/gpu/run_all.sh): GPT-2 on the weights
# bench_forward --save-weights wrote (the SAME weights tscope times), in float32 with TF32 off (the
# math tscope's cuBLAS path uses). Times prefill (last-position logits) at each --prefill length and
# greedy decode of --decode tokens with a preallocated KV cache, eager and under torch.compile
# (reported as an error, not a crash, where compile is missing or fails), with CUDA events, medians
# of --repeats after --warmup. --check compares against DIR/tscope_reference.json: the last-position
# logits and greedy tokens tscope produced for a short prompt. Prints one JSON object.
#
# Reads model.safetensors itself (8-byte header length, JSON header, data area:
# https://github.com/huggingface/safetensors README "Format"), so no `safetensors` package is needed.
# tscope stores matrices (in, out) (HF GPT-2's Conv1D layout); F.linear wants (out, in).
#
# Unlike torch_gpt2_bench.forward (kept as the independent CPU cross-check in --check), the model here
# has static shapes per call: a decode step takes the token and the position as device tensors and
# attends over the whole cache with a mask, so torch.compile (mode="reduce-overhead": CUDA graphs)
# can capture one step and replay it.
# Usage: python3 bench/peers/torch_gpu_bench.py --weights DIR [--device cuda|cpu] [--check]
import argparse
import json
import math
import os
import statistics
import struct
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import torch_gpt2_bench  # noqa: E402  (GPT-2 124M constants and the plain CPU forward, for --check)


def read_safetensors(torch, path):
    """{name: float32 CPU tensor} from an F32 safetensors file."""
    size = os.path.getsize(path)
    data = bytearray(size)
    with open(path, "rb") as f:
        if f.readinto(data) != size:
            raise RuntimeError(f"{path}: short read")
    (header_len,) = struct.unpack("<Q", bytes(data[:8]))
    header = json.loads(bytes(data[8 : 8 + header_len]))
    base = 8 + header_len
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "F32":
            raise RuntimeError(f"{path}: {name} is {info['dtype']}, expected F32")
        begin, end = info["data_offsets"]
        count = (end - begin) // 4
        flat = torch.frombuffer(data, dtype=torch.float32, count=count, offset=base + begin)
        tensors[name] = flat.reshape(info["shape"]).clone()
    return tensors


class Gpt2:
    """GPT-2 forward on one device; every weight matrix stored (out, in) for F.linear."""

    def __init__(self, torch, tensors, config, device):
        self.torch, self.F = torch, torch.nn.functional
        self.L, self.H, self.C = config["n_layer"], config["n_head"], config["n_embd"]
        self.D = self.C // self.H
        self.eps = float(config.get("layer_norm_epsilon", 1e-5))
        get = lambda name: tensors[name].to(device)  # noqa: E731
        self.wte, self.wpe = get("wte.weight"), get("wpe.weight")
        self.layers = []
        for l in range(self.L):
            p = f"h.{l}."
            self.layers.append({
                "ln_1_w": get(p + "ln_1.weight"), "ln_1_b": get(p + "ln_1.bias"),
                "qkv_w": get(p + "attn.c_attn.weight").t().contiguous(), "qkv_b": get(p + "attn.c_attn.bias"),
                "attn_proj_w": get(p + "attn.c_proj.weight").t().contiguous(), "attn_proj_b": get(p + "attn.c_proj.bias"),
                "ln_2_w": get(p + "ln_2.weight"), "ln_2_b": get(p + "ln_2.bias"),
                "fc_w": get(p + "mlp.c_fc.weight").t().contiguous(), "fc_b": get(p + "mlp.c_fc.bias"),
                "mlp_proj_w": get(p + "mlp.c_proj.weight").t().contiguous(), "mlp_proj_b": get(p + "mlp.c_proj.bias"),
            })
        self.ln_f_w, self.ln_f_b = get("ln_f.weight"), get("ln_f.bias")
        self.device = device
        for tensor in [self.wte, self.wpe, self.ln_f_w, self.ln_f_b] + [t for layer in self.layers for t in layer.values()]:
            self._static(tensor)
        self.set_capacity(1)

    def _static(self, tensor):
        """Tells torch.compile's CUDA graphs that this tensor keeps its address (weights, KV cache):
        otherwise plain tensors reached through attributes are graph inputs, copied in per replay."""
        mark = getattr(getattr(self.torch, "_dynamo", None), "mark_static_address", None)
        if mark and self.device.startswith("cuda"):
            mark(tensor)

    def set_capacity(self, capacity):
        torch = self.torch
        self.capacity = capacity
        self.keys = torch.zeros(self.L, self.H, capacity, self.D, device=self.device)
        self.values = torch.zeros(self.L, self.H, capacity, self.D, device=self.device)
        self.positions = torch.arange(capacity, device=self.device)
        for tensor in (self.keys, self.values, self.positions):
            self._static(tensor)

    def _mlp(self, x, layer):
        F = self.F
        h = F.layer_norm(x, (self.C,), layer["ln_2_w"], layer["ln_2_b"], self.eps)
        h = F.gelu(F.linear(h, layer["fc_w"], layer["fc_b"]), approximate="tanh")
        return x + F.linear(h, layer["mlp_proj_w"], layer["mlp_proj_b"])

    def prefill(self, ids):
        """ids (T,) at positions 0..T-1; fills the cache's first T rows; logits (V,) of the last."""
        torch, F, H, C, D = self.torch, self.F, self.H, self.C, self.D
        T = ids.shape[0]
        x = self.wte[ids] + self.wpe[:T]
        for l, layer in enumerate(self.layers):
            h = F.layer_norm(x, (C,), layer["ln_1_w"], layer["ln_1_b"], self.eps)
            q, k, v = F.linear(h, layer["qkv_w"], layer["qkv_b"]).view(T, 3, H, D).permute(1, 2, 0, 3)  # (H, T, D) each
            self.keys[l, :, :T] = k
            self.values[l, :, :T] = v
            if hasattr(F, "scaled_dot_product_attention"):
                context = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:  # torch < 2.0
                scores = torch.matmul(q, k.transpose(1, 2)) * (1.0 / math.sqrt(D))
                future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(diagonal=1)
                context = torch.matmul(torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1), v)
            x = x + F.linear(context.transpose(0, 1).reshape(T, C), layer["attn_proj_w"], layer["attn_proj_b"])
            x = self._mlp(x, layer)
        return F.linear(F.layer_norm(x[-1], (C,), self.ln_f_w, self.ln_f_b, self.eps), self.wte)

    def step(self, token, position):
        """token (1,) and position (1,) long tensors on the device: the next greedy token (1,)."""
        torch, F, H, C, D = self.torch, self.F, self.H, self.C, self.D
        x = self.wte[token] + self.wpe[position]  # (1, C)
        hidden = self.positions > position  # (capacity,): rows not yet written
        for l, layer in enumerate(self.layers):
            h = F.layer_norm(x, (C,), layer["ln_1_w"], layer["ln_1_b"], self.eps)
            q, k, v = F.linear(h, layer["qkv_w"], layer["qkv_b"]).view(1, 3, H, D).permute(1, 2, 0, 3)  # (H, 1, D)
            self.keys[l].index_copy_(1, position, k)
            self.values[l].index_copy_(1, position, v)
            scores = torch.matmul(q, self.keys[l].transpose(1, 2)) * (1.0 / math.sqrt(D))  # (H, 1, capacity)
            probs = torch.softmax(scores.masked_fill(hidden, float("-inf")), dim=-1)
            context = torch.matmul(probs, self.values[l])  # (H, 1, D)
            x = x + F.linear(context.transpose(0, 1).reshape(1, C), layer["attn_proj_w"], layer["attn_proj_b"])
            x = self._mlp(x, layer)
        logits = F.linear(F.layer_norm(x, (C,), self.ln_f_w, self.ln_f_b, self.eps), self.wte)  # (1, V)
        return logits.argmax(dim=-1)


class Timer:
    """Milliseconds of a callable: CUDA events on a GPU, a host clock after synchronising otherwise."""

    def __init__(self, torch, device):
        self.torch, self.cuda = torch, device.startswith("cuda")

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def ms(self, body):
        if self.cuda:
            start, stop = self.torch.cuda.Event(enable_timing=True), self.torch.cuda.Event(enable_timing=True)
            start.record()
            result = body()
            stop.record()
            stop.synchronize()
            return start.elapsed_time(stop), result
        begin = time.perf_counter()
        result = body()
        return 1e3 * (time.perf_counter() - begin), result


def decode(torch, step, first_token, start, count):
    """Greedy: feeds first_token at `start`, then each token step() returns; `count` steps.
    Tokens stay on the device (no host read inside the loop). Returns the fed tokens (count,)."""
    mark = getattr(getattr(torch, "compiler", None), "cudagraph_mark_step_begin", None)
    position = torch.tensor([start], device=first_token.device)
    token = first_token.view(1)
    fed = []
    for _ in range(count):
        fed.append(token)
        if mark:
            mark()  # each call is a new step for CUDA-graph trees (outputs of the last may be reused)
        token = step(token, position).clone()
        position.add_(1)
    fed.append(token)
    return torch.cat(fed)


def bench_variant(torch, model, timer, args, prefill_fn, step_fn, prompts):
    result = {"prefill_ms": {}, "prefill_ms_runs": {}}
    for T, ids in prompts.items():
        for _ in range(args.warmup):
            prefill_fn(ids)
        runs = [timer.ms(lambda: prefill_fn(ids))[0] for _ in range(args.repeats)]
        result["prefill_ms"][str(T)] = round(statistics.median(runs), 4)
        result["prefill_ms_runs"][str(T)] = [round(r, 4) for r in runs]
    # Decode: after a prefill of --decode-prompt tokens, --decode greedy steps (tscope's workload).
    ids = prompts[args.decode_prompt]
    runs = []
    for r in range(args.warmup + args.repeats):
        first = prefill_fn(ids).argmax().view(1)
        timer.sync()
        ms, tokens = timer.ms(lambda: decode(torch, step_fn, first, args.decode_prompt, args.decode))
        if r >= args.warmup:
            runs.append(ms / args.decode)
    result["decode_ms_per_token"] = round(statistics.median(runs), 5)
    result["decode_ms_per_token_runs"] = [round(r, 5) for r in runs]
    result["decode_tokens_per_s"] = round(1e3 / result["decode_ms_per_token"], 2)
    result["decode_tokens_head"] = tokens[:8].tolist()
    return result


def check_against_tscope(torch, model, tensors, weights_dir, device):
    """Same prompt as tscope's reference: max |logit difference| and whether the greedy ids agree,
    for this model on `device` and for torch_gpt2_bench.forward (plain PyTorch, CPU)."""
    with open(os.path.join(weights_dir, "tscope_reference.json")) as f:
        reference = json.load(f)
    prompt = reference["prompt"]
    expected = torch.tensor(reference["last_logits"], dtype=torch.float32)
    model.set_capacity(len(prompt) + len(reference["greedy_ids"]))
    ids = torch.tensor(prompt, device=device)
    logits = model.prefill(ids).float().cpu()
    new = len(reference["greedy_ids"])
    fed = decode(torch, model.step, logits.argmax().view(1).to(device), len(prompt), new - 1).cpu().tolist()
    out = {"tscope_backend": reference["backend"], "prompt_tokens": len(prompt),
           "max_abs_logit_diff": float((logits - expected).abs().max()),
           "max_abs_logit": float(expected.abs().max()),
           "rel_l2_logit_diff": float((logits - expected).norm() / expected.norm()),
           "greedy_ids_tscope": reference["greedy_ids"], "greedy_ids_torch": fed,
           "greedy_ids_match": fed == reference["greedy_ids"]}
    # Independent cross-check: the CPU peer's own forward on the same tensors (its dict layout).
    shape_ok = (tensors["wte.weight"].shape[0] == torch_gpt2_bench.VOCAB_SIZE
                and sum(1 for n in tensors if n.endswith("attn.c_attn.weight")) == torch_gpt2_bench.N_LAYER)
    if shape_ok:
        cpu = {"wte": tensors["wte.weight"], "wpe": tensors["wpe.weight"],
               "ln_f_w": tensors["ln_f.weight"], "ln_f_b": tensors["ln_f.bias"], "layers": []}
        for l in range(torch_gpt2_bench.N_LAYER):
            p = f"h.{l}."
            cpu["layers"].append({
                "ln_1_w": tensors[p + "ln_1.weight"], "ln_1_b": tensors[p + "ln_1.bias"],
                "qkv_w": tensors[p + "attn.c_attn.weight"].t(), "qkv_b": tensors[p + "attn.c_attn.bias"],
                "attn_proj_w": tensors[p + "attn.c_proj.weight"].t(), "attn_proj_b": tensors[p + "attn.c_proj.bias"],
                "ln_2_w": tensors[p + "ln_2.weight"], "ln_2_b": tensors[p + "ln_2.bias"],
                "fc_w": tensors[p + "mlp.c_fc.weight"].t(), "fc_b": tensors[p + "mlp.c_fc.bias"],
                "mlp_proj_w": tensors[p + "mlp.c_proj.weight"].t(), "mlp_proj_b": tensors[p + "mlp.c_proj.bias"]})
        plain = torch_gpt2_bench.forward(torch, cpu, torch.tensor(prompt), torch_gpt2_bench.KvCache(torch))
        out["cpu_peer_max_abs_logit_diff"] = float((plain - expected).abs().max())
    return out


def main():
    parser = argparse.ArgumentParser(description="PyTorch GPT-2 GPU peer of bench_forward (same saved weights).")
    parser.add_argument("--weights", required=True, help="model directory from bench_forward --save-weights")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--prefill", default="128,1024", help="prefill lengths, comma-separated")
    parser.add_argument("--decode", type=int, default=128, help="greedy decode steps timed")
    parser.add_argument("--decode-prompt", type=int, default=128, help="prefill length before the decode (one of --prefill)")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--check", action="store_true", help="compare with WEIGHTS/tscope_reference.json first")
    args = parser.parse_args()
    lengths = [int(t) for t in args.prefill.split(",") if t.strip()]
    if args.decode_prompt not in lengths:
        parser.error("--decode-prompt must be one of the --prefill lengths")

    import torch

    if args.device.startswith("cuda"):
        torch.backends.cuda.matmul.allow_tf32 = False  # FP32 products, as tscope (CUBLAS_DEFAULT_MATH)
        torch.backends.cudnn.allow_tf32 = False
    if hasattr(torch, "set_float32_matmul_precision"):
        torch.set_float32_matmul_precision("highest")
    with open(os.path.join(args.weights, "config.json")) as f:
        config = json.load(f)
    tensors = read_safetensors(torch, os.path.join(args.weights, "model.safetensors"))
    model = Gpt2(torch, tensors, config, args.device)
    timer = Timer(torch, args.device)
    report = {"engine": "torch", "torch_version": torch.__version__, "device": args.device,
              "device_name": torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu",
              "dtype": "float32", "tf32": False, "prefill_logits": "last position only",
              "decode": f"{args.decode} greedy steps after a {args.decode_prompt}-token prefill, token fed back on the device",
              "repeats": args.repeats, "warmup": args.warmup}
    generator = torch.Generator().manual_seed(1)
    vocab = config["vocab_size"]
    with torch.inference_mode():
        if args.check:
            report["check"] = check_against_tscope(torch, model, tensors, args.weights, args.device)
        del tensors
        model.set_capacity(max(max(lengths), args.decode_prompt + args.decode + 1))
        prompts = {T: torch.randint(0, vocab, (T,), generator=generator).to(args.device) for T in lengths}
        report["eager"] = bench_variant(torch, model, timer, args, model.prefill, model.step, prompts)
        if args.no_compile:
            report["compile"] = {"error": "skipped (--no-compile)"}
        elif not hasattr(torch, "compile"):
            report["compile"] = {"error": f"torch.compile does not exist in torch {torch.__version__}"}
        else:
            report["compile"] = {"error": "no mode worked"}
            for mode in ("reduce-overhead", "default"):
                try:
                    begin = time.perf_counter()
                    prefill = torch.compile(model.prefill, mode=mode, dynamic=False)
                    step = torch.compile(model.step, mode=mode, dynamic=False)
                    result = bench_variant(torch, model, timer, args, prefill, step, prompts)
                    result["mode"] = mode
                    result["compile_and_bench_s"] = round(time.perf_counter() - begin, 1)
                    report["compile"] = result
                    break
                except Exception as error:  # noqa: BLE001: any compile failure is a reported result
                    report.setdefault("compile_errors", {})[mode] = f"{type(error).__name__}: {str(error)[:500]}"
                    if hasattr(torch, "_dynamo"):
                        torch._dynamo.reset()
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
