# PyTorch peer for tscope's CPU training benchmark: a plain-PyTorch GPT-2-style decoder (no HF
# transformers; default shape = tscope's `brown-small`) timing full training steps on random tokens.
# A timed step is zero_grad + forward + mean cross-entropy + backward + clip_grad_norm_(1.0) +
# AdamW.step. Each thread configuration (OpenBLAS threads x torch intra-op threads) runs in its own
# subprocess because BLAS reads its env at load; within it every available attention variant is tried.
# Prints one JSON object (config, per-setting results, best) on stdout; progress goes to stderr.
# Run with Debian's python: /usr/bin/python3 bench/peers/torch_train_bench.py [--steps 20] [--threads 1,2]
# On a GPU (bench/gpu/run_all.sh): --device cuda [--compile]: one process, no thread settings, TF32
# off (float32 as tscope), every step timed between torch.cuda.synchronize() calls; --compile adds
# torch.compile'd variants (a failure is reported in the JSON, not raised).
import argparse
import inspect
import json
import math
import statistics
import sys
import time

from torch_gpt2_bench import blas_description  # same folder: the BLAS report both peers print
from peer_worker import run_setting  # same folder: one worker launch for every peer

# tscope's brown-small.
DEFAULTS = {"layers": 4, "heads": 6, "embd": 192, "vocab": 8192, "ctx": 128, "batch": 16}
WARMUP_STEPS = 3  # untimed steps first (allocator, OpenBLAS buffers, AdamW state creation)
DATA_BATCHES = 8  # distinct pre-generated random batches, cycled, so the timed steps do no data work
LR, BETAS, EPS, WEIGHT_DECAY, GRAD_CLIP = 1e-3, (0.9, 0.95), 1e-8, 0.1, 1.0


def count_work(layers, heads, embd, vocab, ctx):
    """Parameter counts and training FLOPs per token.

    flops_per_token = 6 * N_matmul + 12 * L * T * C  (the PaLM/Chinchilla formula)
      N_matmul = L * 12 C^2 (qkv 3C^2, attention proj C^2, fc 4C^2, mlp proj 4C^2) + V * C (tied
      unembedding; the embedding lookups are gathers, not matmuls; biases/LayerNorms ignored).
      6 = 2 FLOPs per multiply-add x (forward + 2x for backward: input grad and weight grad).
      12 L T C: per token and layer, forward QK^T and P V are 2 * T * C FLOPs each (4 T C), x3 for
      training; this counts the full T x T score matrix. A causal kernel that skips the masked half
      needs only half of that (6 L T C), reported as flops_per_token_causal.
    T is the training context (--ctx), every sequence is full length."""
    C, L, T, V = embd, layers, ctx, vocab
    block_matmul = 12 * C * C
    block_other = 3 * C + C + 4 * C + C + 4 * C  # qkv, proj, fc, mlp proj biases + two LayerNorms
    params_total = V * C + ctx * C + L * (block_matmul + block_other) + 2 * C
    matmul_params = L * block_matmul + V * C
    attention = 12 * L * T * C
    return {
        "params_total": params_total,
        "params_non_embedding": params_total - V * C - ctx * C,
        "params_matmul": matmul_params,
        "flops_per_token": 6 * matmul_params + attention,
        "flops_per_token_causal": 6 * matmul_params + attention // 2,
        "flops_formula": "6*N_matmul + 12*L*T*C, N_matmul = 12*L*C^2 + V*C (tied unembedding)",
    }


def build_model(torch, args, attention):
    nn, F = torch.nn, torch.nn.functional
    C, H, T = args.embd, args.heads, args.ctx
    D = C // H
    has_sdpa = hasattr(F, "scaled_dot_product_attention")

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(C, eps=1e-5)
            self.c_attn = nn.Linear(C, 3 * C)
            self.c_proj = nn.Linear(C, C)
            self.ln_2 = nn.LayerNorm(C, eps=1e-5)
            self.c_fc = nn.Linear(C, 4 * C)
            self.mlp_proj = nn.Linear(4 * C, C)
            self.register_buffer("future", torch.ones(T, T, dtype=torch.bool).triu(diagonal=1), persistent=False)

        def attend(self, x):
            B, S, _ = x.shape
            q, k, v = self.c_attn(x).view(B, S, 3, H, D).permute(2, 0, 3, 1, 4)  # each (B, H, S, D)
            if attention == "sdpa":
                context = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:  # manual: matmul + mask + softmax + matmul
                scores = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(D))  # (B, H, S, S)
                scores = scores.masked_fill(self.future[:S, :S], float("-inf"))
                context = torch.matmul(torch.softmax(scores, dim=-1), v)
            return self.c_proj(context.transpose(1, 2).reshape(B, S, C))

        def forward(self, x):
            x = x + self.attend(self.ln_1(x))
            return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))

    class Gpt(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(args.vocab, C)
            self.wpe = nn.Embedding(args.ctx, C)
            self.blocks = nn.ModuleList(Block() for _ in range(args.layers))
            self.ln_f = nn.LayerNorm(C, eps=1e-5)
            for name, p in self.named_parameters():
                if p.dim() >= 2:
                    nn.init.normal_(p, std=0.02)
                elif name.endswith("bias"):
                    nn.init.zeros_(p)

        def forward(self, ids, targets):
            B, S = ids.shape
            x = self.wte(ids) + self.wpe.weight[:S]
            for block in self.blocks:
                x = block(x)
            logits = F.linear(self.ln_f(x), self.wte.weight)  # tied unembedding, (B, S, V)
            return F.cross_entropy(logits.view(B * S, -1), targets.reshape(B * S))

    assert attention != "sdpa" or has_sdpa
    return Gpt()


def attention_variants(torch):
    variants = ["manual"]
    if hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        variants.append("sdpa")
    return variants


def run_worker(args):
    """Times every attention variant at this process's thread setting; prints one JSON line."""
    import torch

    device = args.device
    on_gpu = device != "cpu"
    if on_gpu:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    else:
        torch.set_num_threads(args.torch_threads)

    def sync():
        if on_gpu:
            torch.cuda.synchronize()

    variants = [(attention, False) for attention in attention_variants(torch)]
    if args.compile:
        variants += [(attention, True) for attention in attention_variants(torch)]
    results = []
    for attention, compiled in variants:
        torch.manual_seed(0)
        model = build_model(torch, args, attention).to(device)
        decay = [p for p in model.parameters() if p.dim() >= 2]  # matrices only, as tscope's weightDecayMask
        no_decay = [p for p in model.parameters() if p.dim() < 2]
        groups = [{"params": decay, "weight_decay": WEIGHT_DECAY}, {"params": no_decay, "weight_decay": 0.0}]
        options = {}
        if "foreach" in inspect.signature(torch.optim.AdamW.__init__).parameters:
            options["foreach"] = True
        optimizer = torch.optim.AdamW(groups, lr=LR, betas=BETAS, eps=EPS, **options)
        generator = torch.Generator().manual_seed(1)
        data = [torch.randint(0, args.vocab, (args.batch, args.ctx + 1), generator=generator) for _ in range(DATA_BATCHES)]
        batches = [(d[:, :-1].contiguous().to(device), d[:, 1:].contiguous().to(device)) for d in data]
        forward = model
        if compiled:
            if not hasattr(torch, "compile"):
                results.append({"attention": attention, "compiled": True,
                                "error": f"torch.compile does not exist in torch {torch.__version__}"})
                continue
            forward = torch.compile(model)

        def step(i):
            ids, targets = batches[i % DATA_BATCHES]
            optimizer.zero_grad(set_to_none=True)
            loss = forward(ids, targets)
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP)
            optimizer.step()
            return loss, grad_norm

        losses = []
        try:
            for i in range(args.warmup):
                losses.append(float(step(i)[0]))
        except Exception as error:  # noqa: BLE001: a compile failure is a result to report
            if not compiled:
                raise
            results.append({"attention": attention, "compiled": True, "error": f"{type(error).__name__}: {str(error)[:500]}"})
            continue
        times = []
        for i in range(args.steps):
            sync()
            begin = time.perf_counter()
            loss, _ = step(args.warmup + i)
            sync()  # on a GPU the step has only been queued until here
            times.append(time.perf_counter() - begin)
            losses.append(float(loss))  # after the clock: .item() would not add work anyway (CPU, eager)
        median, best = statistics.median(times), min(times)
        tokens = args.batch * args.ctx
        flops = count_work(args.layers, args.heads, args.embd, args.vocab, args.ctx)["flops_per_token"]
        results.append({
            "blas_threads": args.blas_threads, "torch_threads": args.torch_threads, "attention": attention,
            "compiled": compiled, "device": device,
            "median_s_per_step": round(median, 5), "best_s_per_step": round(best, 5),
            "median_tokens_per_s": round(tokens / median, 1), "best_tokens_per_s": round(tokens / best, 1),
            "median_gflop_per_s": round(flops * tokens / median / 1e9, 2),
            "s_per_step_runs": [round(t, 4) for t in times],
            "loss_first": round(losses[0], 4), "loss_last": round(losses[-1], 4),
        })
        print(f"  {json.dumps(results[-1])}", file=sys.stderr, flush=True)
    print(json.dumps(results), flush=True)


def worker_flags(args):
    return ["--layers", str(args.layers), "--heads", str(args.heads), "--embd", str(args.embd),
            "--vocab", str(args.vocab), "--ctx", str(args.ctx), "--batch", str(args.batch),
            "--steps", str(args.steps), "--warmup", str(args.warmup), "--device", args.device] + (
                ["--compile"] if args.compile else [])


def run_all(args):
    try:
        import torch
    except ImportError:
        sys.exit("torch not importable; run with Debian's /usr/bin/python3")
    thread_counts = [int(t) for t in args.threads.split(",") if t.strip()]
    if args.device != "cpu":  # thread settings do not apply: one configuration
        thread_counts = [thread_counts[0]]
    results = []
    for blas_threads in thread_counts:
        for torch_threads in thread_counts:
            flags = ["--blas-threads", str(blas_threads), "--torch-threads", str(torch_threads)] + worker_flags(args)
            print(f"OPENBLAS_NUM_THREADS={blas_threads} torch_threads={torch_threads}", file=sys.stderr, flush=True)
            results.extend(run_setting(__file__, flags, blas_threads, torch_threads, f"{blas_threads}/{torch_threads}", keep_stderr=True))

    timed = [r for r in results if "error" not in r]
    best = min(timed, key=lambda r: r["median_s_per_step"])
    best_eager = min((r for r in timed if not r.get("compiled")), key=lambda r: r["median_s_per_step"])
    compiled = [r for r in timed if r.get("compiled")]
    best_compiled = min(compiled, key=lambda r: r["median_s_per_step"]) if compiled else None
    work = count_work(args.layers, args.heads, args.embd, args.vocab, args.ctx)
    print(json.dumps({
        "config": {"layers": args.layers, "heads": args.heads, "embd": args.embd, "vocab": args.vocab,
                   "ctx": args.ctx, "batch": args.batch, "tokens_per_step": args.batch * args.ctx,
                   "warmup_steps": args.warmup, "timed_steps": args.steps, "dtype": "float32",
                   "optimizer": f"AdamW lr={LR} betas={BETAS} eps={EPS} wd={WEIGHT_DECAY} (matrices only)",
                   "grad_clip": GRAD_CLIP,
                   "step": "zero_grad(set_to_none) + forward + mean CE + backward + clip_grad_norm_ + AdamW.step",
                   "attention_variants": attention_variants(torch),
                   "sdpa_available": hasattr(torch.nn.functional, "scaled_dot_product_attention")},
        **work,
        "results": results,
        "best": {"config": f"OPENBLAS_NUM_THREADS={best['blas_threads']} torch_threads={best['torch_threads']} "
                           f"attention={best['attention']}",
                 "median_s_per_step": best["median_s_per_step"], "best_s_per_step": best["best_s_per_step"],
                 "median_tokens_per_s": best["median_tokens_per_s"], "best_tokens_per_s": best["best_tokens_per_s"],
                 "median_gflop_per_s": best["median_gflop_per_s"]},
        "best_eager": best_eager, "best_compiled": best_compiled,
        "compile_errors": [r for r in results if "error" in r],
        "device": args.device,
        "device_name": torch.cuda.get_device_name() if args.device != "cpu" else None,
        "best_chosen_by": "lowest median s/step over all (OpenBLAS threads, torch threads, attention) settings",
        "torch_version": torch.__version__, "blas": blas_description(torch),
    }), flush=True)


def main():
    parser = argparse.ArgumentParser(description="PyTorch GPT-2-style CPU training-step peer benchmark.")
    parser.add_argument("--layers", type=int, default=DEFAULTS["layers"])
    parser.add_argument("--heads", type=int, default=DEFAULTS["heads"])
    parser.add_argument("--embd", type=int, default=DEFAULTS["embd"])
    parser.add_argument("--vocab", type=int, default=DEFAULTS["vocab"])
    parser.add_argument("--ctx", type=int, default=DEFAULTS["ctx"], help="n_positions = training sequence length T")
    parser.add_argument("--batch", type=int, default=DEFAULTS["batch"])
    parser.add_argument("--steps", type=int, default=20, help="timed steps")
    parser.add_argument("--warmup", type=int, default=WARMUP_STEPS, help="untimed steps first")
    parser.add_argument("--threads", default="1,2", help="thread counts tried for both OpenBLAS and torch")
    parser.add_argument("--device", default="cpu", help="cpu, or cuda on the GPU machine")
    parser.add_argument("--compile", action="store_true", help="also time torch.compile'd variants")
    parser.add_argument("--worker", action="store_true", help="time one thread configuration (internal)")
    parser.add_argument("--blas-threads", type=int, default=1)
    parser.add_argument("--torch-threads", type=int, default=1)
    args = parser.parse_args()
    if args.embd % args.heads:
        parser.error(f"--embd {args.embd} is not divisible by --heads {args.heads}")
    if args.steps < 1 or args.warmup < 0:
        parser.error("--steps must be >= 1 and --warmup >= 0")
    if args.worker:
        run_worker(args)
    else:
        run_all(args)


if __name__ == "__main__":
    main()
