# An independent float64 PyTorch encoder-decoder forward, written from docs/ENCODER_DECODER.md
# (tscope's contract), the ground truth of the golden encoder-decoder test. forward() takes a
# table of ops: LOOP_OPS (per-head, per-row loops written out by hand) is the reference;
# MATRIX_OPS (torch's own layers, MultiheadAttention, complex RoPE) is the check on it.
import math

import torch
import torch.nn.functional as F

# Parameter names and layouts are tscope's: matrices are (in, out), y = x @ W + b; the attention's
# c_attn columns are Q (C) | K (Hkv D) | V (Hkv D), head h taking columns [h D, (h + 1) D) of its part.


class EncDecConfig:
    """The config.json fields the forward reads (names as model/core/config.cpp spells them)."""

    def __init__(self, n_layer, n_encoder_layer, n_head, n_embd, vocab_size, n_positions, n_kv_head=0, d_ff=0,
                 norm="layernorm", pre_norm=True, activation="gelu_new", position_encoding="learned",
                 position_base=10000.0, tie_word_embeddings=True, n_experts=0, moe_top_k=2,
                 layer_norm_epsilon=1e-5, decoder_start_token_id=1, eos_token_id=2):
        assert n_embd % n_head == 0
        self.n_layer = n_layer  # decoder layers
        self.n_encoder_layer = n_encoder_layer
        self.n_head = n_head  # H
        self.n_kv_head = n_kv_head  # Hkv; 0 = n_head
        self.n_embd = n_embd  # C
        self.d_ff = d_ff  # F; 0 = 4C
        self.vocab_size = vocab_size  # V
        self.n_positions = n_positions  # longest source and longest target
        self.norm = norm  # "layernorm" or "rmsnorm"
        self.pre_norm = pre_norm
        self.activation = activation  # "gelu_new" (tanh), "gelu" (erf), "relu", "swiglu"
        self.position_encoding = position_encoding  # "learned", "sinusoidal", "rope", "alibi", "none"
        self.position_base = position_base
        self.tie_word_embeddings = tie_word_embeddings
        self.n_experts = n_experts  # 0 = dense feed-forward
        self.moe_top_k = moe_top_k
        self.layer_norm_epsilon = layer_norm_epsilon
        self.decoder_start_token_id = decoder_start_token_id
        self.eos_token_id = eos_token_id

    @property
    def head_dim(self):  # D
        return self.n_embd // self.n_head

    @property
    def kv_heads(self):  # Hkv
        return self.n_kv_head if self.n_kv_head > 0 else self.n_head

    @property
    def ff_width(self):  # F
        return self.d_ff if self.d_ff > 0 else 4 * self.n_embd

    def to_json(self):
        """config.json as tscope reads it; MoE without capacity limit, top-k gates renormalised."""
        content = {
            "model_type": "gpt2", "tscope_version": 1,
            "n_layer": self.n_layer, "n_encoder_layer": self.n_encoder_layer,
            "n_head": self.n_head, "n_kv_head": self.kv_heads, "n_embd": self.n_embd, "d_ff": self.ff_width,
            "n_positions": self.n_positions, "vocab_size": self.vocab_size,
            "layer_norm_epsilon": self.layer_norm_epsilon, "activation_function": self.activation,
            "tokenizer": "char", "position_encoding": self.position_encoding, "position_base": self.position_base,
            "norm": self.norm, "norm_position": "pre" if self.pre_norm else "post",
            "tie_word_embeddings": self.tie_word_embeddings, "causal": True, "n_experts": self.n_experts,
            "decoder_start_token_id": self.decoder_start_token_id, "eos_token_id": self.eos_token_id,
        }
        if self.n_experts > 0:
            content.update({"moe_top_k": self.moe_top_k, "moe_capacity_factor": 0, "moe_routing": "token_choice",
                            "moe_normalize_top_k": True})
        return content


def parameter_shapes(config):
    """Ordered {name: shape} of every parameter of the encoder-decoder (docs/ENCODER_DECODER.md)."""
    C, V, P, F_ = config.n_embd, config.vocab_size, config.n_positions, config.ff_width
    KV = config.kv_heads * config.head_dim
    layernorm = config.norm == "layernorm"
    shapes = {"wte.weight": (V, C)}

    def norm(name):
        shapes[name + ".weight"] = (C,)
        if layernorm:
            shapes[name + ".bias"] = (C,)

    def feed_forward(prefix):
        shapes[prefix + "c_fc.weight"] = (C, F_)
        shapes[prefix + "c_fc.bias"] = (F_,)
        if config.activation == "swiglu":
            shapes[prefix + "c_gate.weight"] = (C, F_)
            shapes[prefix + "c_gate.bias"] = (F_,)
        shapes[prefix + "c_proj.weight"] = (F_, C)
        shapes[prefix + "c_proj.bias"] = (C,)

    def layer(p, decoder):
        norm(p + "ln_1")
        shapes[p + "attn.c_attn.weight"] = (C, C + 2 * KV)
        shapes[p + "attn.c_attn.bias"] = (C + 2 * KV,)
        shapes[p + "attn.c_proj.weight"] = (C, C)
        shapes[p + "attn.c_proj.bias"] = (C,)
        if decoder:
            norm(p + "ln_x")
            shapes[p + "crossattn.c_q.weight"] = (C, C)
            shapes[p + "crossattn.c_q.bias"] = (C,)
            shapes[p + "crossattn.c_kv.weight"] = (C, 2 * KV)
            shapes[p + "crossattn.c_kv.bias"] = (2 * KV,)
            shapes[p + "crossattn.c_proj.weight"] = (C, C)
            shapes[p + "crossattn.c_proj.bias"] = (C,)
        norm(p + "ln_2")
        if config.n_experts > 0:
            shapes[p + "mlp.router.weight"] = (C, config.n_experts)  # no bias
            for e in range(config.n_experts):
                feed_forward(f"{p}mlp.experts.{e}.")
        else:
            feed_forward(p + "mlp.")

    if config.position_encoding == "learned":
        shapes["wpe.weight"] = (P, C)
        shapes["enc.wpe.weight"] = (P, C)
    for l in range(config.n_encoder_layer):
        layer(f"enc.h.{l}.", decoder=False)
    if config.pre_norm:
        norm("enc.ln_f")
    for l in range(config.n_layer):
        layer(f"h.{l}.", decoder=True)
    if config.pre_norm:
        norm("ln_f")
    if not config.tie_word_embeddings:
        shapes["lm_head.weight"] = (V, C)
    return shapes


def random_parameters(config, seed, matrix_std=0.3):
    """Random float64 tensors holding float32-representable values (the file stores float32).

    Matrices and embeddings ~ N(0, matrix_std) (so q.k / sqrt(D) is O(1..3): attention neither
    uniform nor one-hot, and GELU inputs reach |x| ~ 3 where tanh and erf GELU differ), norm gains
    ~ 1 + 0.1 N(0, 1), biases ~ 0.1 N(0, 1) (all nonzero)."""
    generator = torch.Generator().manual_seed(seed)

    def normal(shape, std, mean=0.0):
        values = mean + std * torch.randn(shape, dtype=torch.float64, generator=generator)
        return values.float().double()

    params = {}
    for name, shape in parameter_shapes(config).items():
        if name.endswith(".bias"):
            params[name] = normal(shape, 0.1)
        elif ".ln_" in name or name.startswith("ln_") or name.startswith("enc.ln_"):
            params[name] = normal(shape, 0.1, mean=1.0)
        else:
            params[name] = normal(shape, matrix_std)
    return params


# ---- the reference ops: loops written out by hand ----

def layer_norm_loops(x, weight, bias, eps):
    """LayerNorm of each row with the biased variance."""
    out = torch.empty_like(x)
    for t in range(x.shape[0]):
        row = x[t]
        mean = row.sum() / row.numel()
        variance = ((row - mean) ** 2).sum() / row.numel()
        out[t] = (row - mean) / math.sqrt(float(variance) + eps) * weight + bias
    return out


def rms_norm_loops(x, weight, eps):
    """RMSNorm of each row: x / sqrt(mean(x^2) + eps) * weight (no mean subtraction, no bias)."""
    out = torch.empty_like(x)
    for t in range(x.shape[0]):
        row = x[t]
        out[t] = row / math.sqrt(float((row * row).sum()) / row.numel() + eps) * weight
    return out


def activation_by_hand(x, name):
    if name == "gelu_new":  # tanh approximation (GPT-2's gelu_new)
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    if name == "gelu":  # exact, with erf
        return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))
    if name == "relu":
        return torch.where(x > 0, x, torch.zeros_like(x))
    raise ValueError(name)


def silu_by_hand(x):
    return x / (1.0 + torch.exp(-x))


def sinusoidal_table_loops(P, C, base):
    """(P, C): column c of position t is sin(t w) for even c, cos(t w) for odd c, w = base^(-2 (c // 2) / C)."""
    table = torch.zeros(P, C, dtype=torch.float64)
    for t in range(P):
        for c in range(C):
            angle = t * base ** (-2.0 * (c // 2) / C)
            table[t, c] = math.sin(angle) if c % 2 == 0 else math.cos(angle)
    return table


def rope_loops(x, base):
    """x (n, T, D) -> x with pair (2i, 2i + 1) of row t rotated by t base^(-2i/D)."""
    n, T, D = x.shape
    out = x.clone()
    for t in range(T):
        for i in range(D // 2):
            angle = t * base ** (-2.0 * i / D)
            c, s = math.cos(angle), math.sin(angle)
            x0, x1 = x[:, t, 2 * i], x[:, t, 2 * i + 1]
            out[:, t, 2 * i] = x0 * c - x1 * s
            out[:, t, 2 * i + 1] = x0 * s + x1 * c
    return out


def alibi_slopes(H):
    """Press et al.'s ALiBi slopes: for H a power of two 2^(-8h/H), h = 1..H; otherwise those of the
    largest power of two n < H, then every other slope of 2n heads (the 1st, 3rd, ...)."""
    def power_of_two(n):
        return [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)]
    n = 2 ** int(math.floor(math.log2(H)))
    if n == H:
        return power_of_two(H)
    return power_of_two(n) + power_of_two(2 * n)[0::2][: H - n]


def kv_head_of(H, Hkv):
    """The key/value head query head h reads: consecutive groups of H / Hkv query heads share one."""
    return [h // (H // Hkv) for h in range(H)]


def attend_loops(q, k, v, causal, slopes, kv_head):
    """q (H, T, D), k and v (Hkv, S, D) -> (context (T, H D), probs (H, T, S)); one head and one query
    row at a time. Causal: row t sees keys 0..t only (by slicing). ALiBi: score -= slope_h |t - j|."""
    H, T, D = q.shape
    S = k.shape[1]
    probs = torch.zeros(H, T, S, dtype=q.dtype)
    context = torch.zeros(T, H * D, dtype=q.dtype)
    for h in range(H):
        g = kv_head[h]
        for t in range(T):
            n = t + 1 if causal else S
            scores = (k[g, :n] * q[h, t]).sum(dim=1) / math.sqrt(D)  # (n,)
            if slopes is not None:
                scores = scores - slopes[h] * torch.tensor([abs(t - j) for j in range(n)], dtype=q.dtype)
            weights = torch.exp(scores - scores.max())
            weights = weights / weights.sum()
            probs[h, t, :n] = weights
            context[t, h * D:(h + 1) * D] = weights @ v[g, :n]
    return context, probs


def moe_loops(x, router_weight, experts, top_k):
    """Token-choice mixture, no capacity: each row takes its top_k router logits (ties to the lower
    expert id), gates = softmax over those k logits; out = sum of gate * expert(row)."""
    logits = x @ router_weight  # (T, E), the router has no bias
    out = torch.zeros_like(x)
    for t in range(x.shape[0]):
        order = sorted(range(logits.shape[1]), key=lambda e: (-float(logits[t, e]), e))[:top_k]
        chosen = torch.stack([logits[t, e] for e in order])
        gates = torch.exp(chosen - chosen.max())
        gates = gates / gates.sum()
        for gate, e in zip(gates, order):
            out[t] += gate * experts[e](x[t:t + 1])[0]
    return out


LOOP_OPS = {
    "layer_norm": layer_norm_loops,
    "rms_norm": rms_norm_loops,
    "activation": activation_by_hand,
    "silu": silu_by_hand,
    "sinusoidal": sinusoidal_table_loops,
    "rope": rope_loops,
    "alibi_slopes": alibi_slopes,
    "kv_head_of": kv_head_of,
    "attend": attend_loops,
    "moe": moe_loops,
}


# ---- the forward ----

def split_heads(m, n_heads):
    """m (T, n D) -> (n, T, D)."""
    T, width = m.shape
    return m.reshape(T, n_heads, width // n_heads).transpose(0, 1)


def norm(params, name, x, config, ops):
    if config.norm == "rmsnorm":
        return ops["rms_norm"](x, params[name + ".weight"], config.layer_norm_epsilon)
    return ops["layer_norm"](x, params[name + ".weight"], params[name + ".bias"], config.layer_norm_epsilon)


def self_attention(params, p, h, config, causal, ops):
    """h (T, C) -> (attention output after c_proj (T, C), probs (H, T, T))."""
    C, H, Hkv, D = config.n_embd, config.n_head, config.kv_heads, config.head_dim
    qkv = h @ params[p + "attn.c_attn.weight"] + params[p + "attn.c_attn.bias"]  # (T, C + 2 Hkv D)
    q = split_heads(qkv[:, :C], H)
    k = split_heads(qkv[:, C:C + Hkv * D], Hkv)
    v = split_heads(qkv[:, C + Hkv * D:], Hkv)
    if config.position_encoding == "rope":  # positions 0..T-1 of this stack
        q, k = ops["rope"](q, config.position_base), ops["rope"](k, config.position_base)
    slopes = ops["alibi_slopes"](H) if config.position_encoding == "alibi" else None
    context, probs = ops["attend"](q, k, v, causal, slopes, ops["kv_head_of"](H, Hkv))
    return context @ params[p + "attn.c_proj.weight"] + params[p + "attn.c_proj.bias"], probs


def cross_attention(params, p, h, memory, config, ops):
    """h (T, C) queries, memory (S, C) the encoder output -> (output (T, C), probs (H, T, S)).
    No mask, no RoPE, no ALiBi."""
    H, Hkv, D = config.n_head, config.kv_heads, config.head_dim
    q = split_heads(h @ params[p + "crossattn.c_q.weight"] + params[p + "crossattn.c_q.bias"], H)
    kv = memory @ params[p + "crossattn.c_kv.weight"] + params[p + "crossattn.c_kv.bias"]  # (S, 2 Hkv D): K | V
    k, v = split_heads(kv[:, :Hkv * D], Hkv), split_heads(kv[:, Hkv * D:], Hkv)
    context, probs = ops["attend"](q, k, v, False, None, ops["kv_head_of"](H, Hkv))
    return context @ params[p + "crossattn.c_proj.weight"] + params[p + "crossattn.c_proj.bias"], probs


def dense_feed_forward(params, prefix, x, config, ops):
    """act(x Wfc + bfc) Wproj + bproj, or for SwiGLU silu(x Wgate + bgate) * (x Wfc + bfc) then Wproj."""
    value = x @ params[prefix + "c_fc.weight"] + params[prefix + "c_fc.bias"]
    if config.activation == "swiglu":
        gate = x @ params[prefix + "c_gate.weight"] + params[prefix + "c_gate.bias"]
        hidden = ops["silu"](gate) * value
    else:
        hidden = ops["activation"](value, config.activation)
    return hidden @ params[prefix + "c_proj.weight"] + params[prefix + "c_proj.bias"]


def feed_forward(params, p, x, config, ops, routing):
    if config.n_experts == 0:
        return dense_feed_forward(params, p + "mlp.", x, config, ops)
    experts = [(lambda rows, e=e: dense_feed_forward(params, f"{p}mlp.experts.{e}.", rows, config, ops))
               for e in range(config.n_experts)]
    router = params[p + "mlp.router.weight"]
    routing.append(router_summary(x @ router, config.moe_top_k))
    return ops["moe"](x, router, experts, config.moe_top_k)


def router_summary(logits, top_k):
    """For the self-checks: each row's chosen experts and the gap between its k-th and (k+1)-th
    logit (a small gap would let float32 rounding pick other experts)."""
    ordered = logits.sort(dim=1, descending=True)
    gaps = ordered.values[:, top_k - 1] - (ordered.values[:, top_k] if logits.shape[1] > top_k else float("inf"))
    return {"chosen": [tuple(sorted(row[:top_k].tolist())) for row in ordered.indices], "min_gap": float(gaps.min())}


def embed(params, config, ids, positions_name, ops):
    x = params["wte.weight"][torch.tensor(ids, dtype=torch.long)]
    T = len(ids)
    if config.position_encoding == "learned":
        x = x + params[positions_name][:T]
    elif config.position_encoding == "sinusoidal":  # one table for both stacks
        x = x + ops["sinusoidal"](T, config.n_embd, config.position_base)
    return x  # RoPE and ALiBi act inside the attention; "none" adds nothing


def forward(params, config, source, target, ops=LOOP_OPS):
    """Encoder-decoder forward over source ids (S) and target ids (T), in float64.

    Returns {"logits": (T, V), "enc_attn": [Le x (H, S, S)], "attn": [L x (H, T, T)],
    "cross": [L x (H, T, S)], "enc_out": (S, C), "routing": [router_summary per MoE layer call]}."""
    assert len(source) <= config.n_positions and len(target) <= config.n_positions
    out = {"enc_attn": [], "attn": [], "cross": [], "routing": []}
    pre = config.pre_norm

    # Encoder: bidirectional self-attention blocks.
    e = embed(params, config, source, "enc.wpe.weight", ops)
    for l in range(config.n_encoder_layer):
        p = f"enc.h.{l}."
        if pre:
            a, probs = self_attention(params, p, norm(params, p + "ln_1", e, config, ops), config, False, ops)
            e = e + a
            e = e + feed_forward(params, p, norm(params, p + "ln_2", e, config, ops), config, ops, out["routing"])
        else:
            a, probs = self_attention(params, p, e, config, False, ops)
            e = norm(params, p + "ln_1", e + a, config, ops)
            e = norm(params, p + "ln_2", e + feed_forward(params, p, e, config, ops, out["routing"]), config, ops)
        out["enc_attn"].append(probs)
    memory = norm(params, "enc.ln_f", e, config, ops) if pre else e
    out["enc_out"] = memory

    # Decoder: causal self-attention, cross-attention to the encoder output, feed-forward.
    x = embed(params, config, target, "wpe.weight", ops)
    for l in range(config.n_layer):
        p = f"h.{l}."
        if pre:
            a, self_probs = self_attention(params, p, norm(params, p + "ln_1", x, config, ops), config, True, ops)
            x = x + a
            a, cross_probs = cross_attention(params, p, norm(params, p + "ln_x", x, config, ops), memory, config, ops)
            x = x + a
            x = x + feed_forward(params, p, norm(params, p + "ln_2", x, config, ops), config, ops, out["routing"])
        else:
            a, self_probs = self_attention(params, p, x, config, True, ops)
            x = norm(params, p + "ln_1", x + a, config, ops)
            a, cross_probs = cross_attention(params, p, x, memory, config, ops)
            x = norm(params, p + "ln_x", x + a, config, ops)
            x = norm(params, p + "ln_2", x + feed_forward(params, p, x, config, ops, out["routing"]), config, ops)
        out["attn"].append(self_probs)
        out["cross"].append(cross_probs)
    if pre:
        x = norm(params, "ln_f", x, config, ops)
    unembedding = params["wte.weight"] if config.tie_word_embeddings else params["lm_head.weight"]  # (V, C)
    out["logits"] = x @ unembedding.T
    return out


# ---- the second formulation: torch's layers, MultiheadAttention, complex RoPE, dense MoE ----

def sinusoidal_table_matrix(P, C, base):
    angles = torch.arange(P, dtype=torch.float64)[:, None] * base ** (-torch.arange(0, C, 2, dtype=torch.float64) / C)
    return torch.stack([angles.sin(), angles.cos()], dim=-1).reshape(P, -1)[:, :C]  # interleaved sin, cos


def rope_complex(x, base):
    """Pairs (2i, 2i + 1) as complex numbers times exp(i t w_i)."""
    n, T, D = x.shape
    w = base ** (-torch.arange(0, D, 2, dtype=torch.float64) / D)
    rotation = torch.polar(torch.ones(T, D // 2, dtype=torch.float64), torch.arange(T, dtype=torch.float64)[:, None] * w)
    pairs = torch.view_as_complex(x.contiguous().reshape(n, T, D // 2, 2))
    return torch.view_as_real(pairs * rotation).reshape(n, T, D)


def attend_multihead(q, k, v, causal, slopes, kv_head):
    """The same attention through torch.nn.MultiheadAttention: identity in/out projections over the
    already projected (and rotated) heads, key/value heads repeated per query head, causality and
    ALiBi as one additive float mask."""
    H, T, D = q.shape
    S = k.shape[1]
    index = torch.tensor(kv_head)
    k, v = k[index], v[index]  # (H, S, D)
    mask = torch.zeros(H, T, S, dtype=torch.float64)
    distance = (torch.arange(T)[:, None] - torch.arange(S)[None, :]).abs().double()
    if slopes is not None:
        mask = mask - torch.tensor(slopes, dtype=torch.float64)[:, None, None] * distance
    if causal:
        mask = mask.masked_fill(torch.ones(T, S, dtype=torch.bool).triu(diagonal=1), float("-inf"))
    C = H * D
    mha = torch.nn.MultiheadAttention(C, H, bias=False, batch_first=True).double()
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.eye(C, dtype=torch.float64).repeat(3, 1))
        mha.out_proj.weight.copy_(torch.eye(C, dtype=torch.float64))

        def merge(heads):  # (H, n, D) -> (1, n, C)
            return heads.transpose(0, 1).reshape(1, -1, C)

        context, probs = mha(merge(q), merge(k), merge(v), attn_mask=mask, need_weights=True, average_attn_weights=False)
    return context[0], probs[0]


def moe_dense(x, router_weight, experts, top_k):
    """Every expert on every row, combined with a (T, E) gate matrix that is zero off the top k."""
    logits = x @ router_weight
    values, indices = logits.topk(top_k, dim=1)
    gates = torch.zeros_like(logits).scatter(1, indices, torch.softmax(values, dim=1))
    return sum(gates[:, e:e + 1] * expert(x) for e, expert in enumerate(experts))


MATRIX_OPS = {
    "layer_norm": lambda x, w, b, eps: F.layer_norm(x, (x.shape[-1],), w, b, eps),
    "rms_norm": lambda x, w, eps: x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * w,
    "activation": lambda x, name: {"gelu_new": lambda: F.gelu(x, approximate="tanh"), "gelu": lambda: F.gelu(x),
                                   "relu": lambda: F.relu(x)}[name](),
    "silu": F.silu,
    "sinusoidal": sinusoidal_table_matrix,
    "rope": rope_complex,
    "alibi_slopes": alibi_slopes,
    "kv_head_of": lambda H, Hkv: torch.arange(H).div(H // Hkv, rounding_mode="floor").tolist(),
    "attend": attend_multihead,
    "moe": moe_dense,
}


def max_relative_error(ours, reference):
    """max|ours - reference| / max|reference| (the metric the golden test uses)."""
    return float((ours - reference).abs().max() / reference.abs().max())
