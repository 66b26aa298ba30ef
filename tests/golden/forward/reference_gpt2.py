# An independent float64 PyTorch GPT-2 forward (HuggingFace GPT-2 semantics) used as ground truth
# for tscope-cli's forward, plus two differently written formulations of the same math (per-row
# attention loops, torch.nn.MultiheadAttention) that make_reference.py uses to check it.
import math

import torch
import torch.nn.functional as F

# Parameter names follow HuggingFace GPT-2 without the "transformer." prefix. Matrices use HF's
# Conv1D layout (in, out): y = x @ W + b.


class Gpt2Config:
    def __init__(self, n_layer, n_head, n_embd, n_positions, vocab_size, layer_norm_epsilon=1e-5):
        assert n_embd % n_head == 0
        self.n_layer = n_layer  # L
        self.n_head = n_head  # H
        self.n_embd = n_embd  # C
        self.n_positions = n_positions  # longest context
        self.vocab_size = vocab_size  # V
        self.layer_norm_epsilon = layer_norm_epsilon

    @property
    def head_dim(self):  # D
        return self.n_embd // self.n_head

    def to_hf_json(self):
        return {
            "model_type": "gpt2",
            "n_layer": self.n_layer,
            "n_head": self.n_head,
            "n_embd": self.n_embd,
            "n_positions": self.n_positions,
            "vocab_size": self.vocab_size,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "activation_function": "gelu_new",
        }


def parameter_shapes(config):
    """Ordered {name: shape} of every learned GPT-2 parameter (HF names, no prefix)."""
    C, V, P = config.n_embd, config.vocab_size, config.n_positions
    shapes = {"wte.weight": (V, C), "wpe.weight": (P, C)}
    for layer in range(config.n_layer):
        p = f"h.{layer}."
        shapes[p + "ln_1.weight"] = (C,)
        shapes[p + "ln_1.bias"] = (C,)
        shapes[p + "attn.c_attn.weight"] = (C, 3 * C)
        shapes[p + "attn.c_attn.bias"] = (3 * C,)
        shapes[p + "attn.c_proj.weight"] = (C, C)
        shapes[p + "attn.c_proj.bias"] = (C,)
        shapes[p + "ln_2.weight"] = (C,)
        shapes[p + "ln_2.bias"] = (C,)
        shapes[p + "mlp.c_fc.weight"] = (C, 4 * C)
        shapes[p + "mlp.c_fc.bias"] = (4 * C,)
        shapes[p + "mlp.c_proj.weight"] = (4 * C, C)
        shapes[p + "mlp.c_proj.bias"] = (C,)
    shapes["ln_f.weight"] = (C,)
    shapes["ln_f.bias"] = (C,)
    return shapes


def random_parameters(config, seed):
    """Every parameter random and non-trivial, float64 tensors holding float32-representable values.

    LayerNorm gains ~ 1 + 0.1 N(0,1), biases ~ 0.1 N(0,1), embeddings and matrices ~ 0.1 N(0,1),
    except c_attn (0.2: q.k/sqrt(D) is O(1), so attention is neither uniform nor one-hot), c_fc
    (0.2: GELU inputs reach |x| ~ 3, where tanh-GELU and erf-GELU differ by more than the test's
    tolerance) and attn.c_proj (0.05)."""
    generator = torch.Generator().manual_seed(seed)

    def normal(shape, std, mean=0.0):
        values = mean + std * torch.randn(shape, dtype=torch.float64, generator=generator)
        return values.float().double()  # the files store float32: use exactly those values

    params = {}
    for name, shape in parameter_shapes(config).items():
        if name.endswith(".bias"):
            params[name] = normal(shape, 0.1)
        elif "ln_" in name:
            params[name] = normal(shape, 0.1, mean=1.0)
        elif name.endswith("c_attn.weight") or name.endswith("c_fc.weight"):
            params[name] = normal(shape, 0.2)
        elif name.endswith("attn.c_proj.weight"):
            params[name] = normal(shape, 0.05)
        else:
            params[name] = normal(shape, 0.1)
    return params


def layer_norm(x, weight, bias, eps):
    """LayerNorm over the last axis with the biased variance, written out by hand."""
    mean = x.mean(dim=-1, keepdim=True)
    variance = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(variance + eps) * weight + bias


def gelu_tanh(x):
    """GPT-2's GELU: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def split_heads(h, w_attn, b_attn, n_head):
    """h (T, C) -> q, k, v, each (H, T, D): the rows of c_attn's output per head (no RoPE: GPT-2)."""
    T, C = h.shape
    D = C // n_head
    qkv = h @ w_attn + b_attn  # (T, 3C): columns Q | K | V, head i is columns [i*D, (i+1)*D)
    return [part.reshape(T, n_head, D).transpose(0, 1) for part in qkv.split(C, dim=1)]


def causal_self_attention(h, w_attn, b_attn, n_head):
    """h (T, C) -> (context (T, C) before c_proj, probs (H, T, T) post-softmax), batched heads."""
    T, C = h.shape
    q, k, v = split_heads(h, w_attn, b_attn, n_head)  # each (H, T, D)
    scores = q @ k.transpose(1, 2) / math.sqrt(C // n_head)  # (H, T, T)
    future = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)  # key after query
    scores = scores.masked_fill(future, float("-inf"))
    probs = torch.softmax(scores, dim=-1)  # (H, T, T)
    context = (probs @ v).transpose(0, 1).reshape(T, C)  # heads concatenated
    return context, probs


def replace_rows(rows, values):
    """An intervention on rows (T, W): values None zeroes them, (W) sets every row (a mean),
    (P, W) sets the first min(P, T) rows (a patch from a P-token prompt)."""
    if values is None:
        return torch.zeros_like(rows)
    out = rows.clone()
    if values.dim() == 1:
        out[:] = values
    else:
        n = min(values.shape[0], rows.shape[0])
        out[:n] = values[:n]
    return out


def forward(params, config, ids, attention=causal_self_attention, layer_norm_fn=None, gelu=gelu_tanh,
            interventions=None):
    """GPT-2 forward over ids (list of T ints), all in float64.

    interventions: {(layer, head): values} replaces that head's output before c_proj, {(layer,
    "mlp"): values} the MLP's output before the residual add (values as replace_rows takes them).
    Returns {"logits": (T, V), "attn": [L x (H, T, T)], "resid": [L x (T, C)]} where resid[l] is
    the residual stream after block l (the last one before ln_f), and the internals of every
    layer: "q", "k", "v", "head_out" [L x (H, T, D)], "attn_out" [L x (T, C)] (after c_proj, bias
    included), "mlp_act" [L x (T, 4C)] (after GELU), "mlp_out" [L x (T, C)], plus "embedded" (T, C)
    and "final_resid" (T, C), the inputs of direct_logit_attribution."""
    eps = config.layer_norm_epsilon
    norm = layer_norm_fn or (lambda x, w, b: layer_norm(x, w, b, eps))
    interventions = interventions or {}
    ids_tensor = torch.tensor(ids, dtype=torch.long)
    T, H, D = len(ids), config.n_head, config.head_dim
    assert T <= config.n_positions
    x = params["wte.weight"][ids_tensor] + params["wpe.weight"][:T]  # (T, C)
    out = {name: [] for name in ["attn", "resid", "q", "k", "v", "head_out", "attn_out", "mlp_act", "mlp_out"]}
    out["embedded"] = x
    for layer in range(config.n_layer):
        p = f"h.{layer}."
        attn_in = norm(x, params[p + "ln_1.weight"], params[p + "ln_1.bias"])
        w_attn, b_attn = params[p + "attn.c_attn.weight"], params[p + "attn.c_attn.bias"]
        context, probs = attention(attn_in, w_attn, b_attn, H)
        for head in range(H):
            if (layer, head) in interventions:
                columns = slice(head * D, (head + 1) * D)
                context[:, columns] = replace_rows(context[:, columns], interventions[(layer, head)])
        attn_out = context @ params[p + "attn.c_proj.weight"] + params[p + "attn.c_proj.bias"]
        x = x + attn_out
        h = norm(x, params[p + "ln_2.weight"], params[p + "ln_2.bias"])
        hidden = gelu(h @ params[p + "mlp.c_fc.weight"] + params[p + "mlp.c_fc.bias"])  # (T, 4C)
        mlp_out = hidden @ params[p + "mlp.c_proj.weight"] + params[p + "mlp.c_proj.bias"]
        if (layer, "mlp") in interventions:
            mlp_out = replace_rows(mlp_out, interventions[(layer, "mlp")])
        x = x + mlp_out
        for name, value in zip(["q", "k", "v"], split_heads(attn_in, w_attn, b_attn, H)):
            out[name].append(value)
        out["head_out"].append(context.reshape(T, H, D).transpose(0, 1))
        for name, value in [("attn", probs), ("resid", x), ("attn_out", attn_out), ("mlp_act", hidden), ("mlp_out", mlp_out)]:
            out[name].append(value)
    out["final_resid"] = x
    x = norm(x, params["ln_f.weight"], params["ln_f.bias"])
    out["logits"] = x @ params["wte.weight"].T  # (T, V), weights tied to wte
    return out


def direct_logit_attribution(params, config, outputs, position, token):
    """Each component's direct contribution to logits[position, token], through ln_f frozen at
    the position: with a = g_f * U[token], mean and rstd of the final residual's row, component c
    adds rstd * (c . a - mean(c) * sum(a)); b_f . U[token] is the rest. Heads go through their
    rows of c_proj. Returns {"embedding", "heads" (L, H), "attn_bias" (L), "mlp" (L), "norm_bias",
    "logit"} as floats / float64 tensors."""
    C, H, D = config.n_embd, config.n_head, config.head_dim
    unembed = params["wte.weight"][token]  # (C)
    a = params["ln_f.weight"] * unembed
    final = outputs["final_resid"][position]
    mean = final.mean()
    rstd = 1.0 / torch.sqrt(((final - mean) ** 2).mean() + config.layer_norm_epsilon)

    def through_norm(c):  # c (..., C) -> (...)
        return rstd * (c @ a - c.mean(dim=-1) * a.sum())

    heads = torch.zeros(config.n_layer, H, dtype=torch.float64)
    attn_bias = torch.zeros(config.n_layer, dtype=torch.float64)
    mlp = torch.zeros(config.n_layer, dtype=torch.float64)
    for layer in range(config.n_layer):
        w_o = params[f"h.{layer}.attn.c_proj.weight"]  # (C, C): rows h D .. h D + D - 1 read head h
        for head in range(H):
            rows = slice(head * D, (head + 1) * D)
            heads[layer, head] = through_norm(outputs["head_out"][layer][head, position] @ w_o[rows])
        attn_bias[layer] = through_norm(params[f"h.{layer}.attn.c_proj.bias"])
        mlp[layer] = through_norm(outputs["mlp_out"][layer][position])
    return {"embedding": float(through_norm(outputs["embedded"][position])), "heads": heads, "attn_bias": attn_bias,
            "mlp": mlp, "norm_bias": float(params["ln_f.bias"] @ unembed),
            "logit": float(outputs["logits"][position, token])}


# ---- second and third formulations, used only to check the one above ----

def attention_per_row_loops(h, w_attn, b_attn, n_head):
    """Same math as causal_self_attention, one head and one query row at a time: each query only
    ever sees keys 0..t (causality by slicing, no mask), softmax written out with exp."""
    T, C = h.shape
    D = C // n_head
    probs = torch.zeros(n_head, T, T, dtype=h.dtype)
    context = torch.zeros(T, C, dtype=h.dtype)
    for head in range(n_head):
        q_cols = slice(head * D, (head + 1) * D)
        k_cols = slice(C + head * D, C + (head + 1) * D)
        v_cols = slice(2 * C + head * D, 2 * C + (head + 1) * D)
        q = h @ w_attn[:, q_cols] + b_attn[q_cols]  # (T, D)
        k = h @ w_attn[:, k_cols] + b_attn[k_cols]
        v = h @ w_attn[:, v_cols] + b_attn[v_cols]
        for t in range(T):
            scores = (k[: t + 1] * q[t]).sum(dim=1) / math.sqrt(D)  # (t+1,)
            weights = torch.exp(scores - scores.max())
            weights = weights / weights.sum()
            probs[head, t, : t + 1] = weights
            context[t, q_cols] = weights @ v[: t + 1]
    return context, probs


def attention_torch_mha(h, w_attn, b_attn, n_head):
    """Same math through torch.nn.MultiheadAttention (its in_proj is (3C, C): HF's W transposed)."""
    T, C = h.shape
    mha = torch.nn.MultiheadAttention(C, n_head, bias=True, batch_first=True).double()
    with torch.no_grad():
        mha.in_proj_weight.copy_(w_attn.T)
        mha.in_proj_bias.copy_(b_attn)
        mha.out_proj.weight.copy_(torch.eye(C, dtype=torch.float64))  # c_proj is applied outside
        mha.out_proj.bias.zero_()
        future = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)
        batch = h.unsqueeze(0)
        context, probs = mha(batch, batch, batch, attn_mask=future, need_weights=True,
                             average_attn_weights=False)
    return context[0], probs[0]


def forward_second_formulation(params, config, ids):
    """Per-row loops for attention, torch's own layer_norm and tanh GELU."""
    eps = config.layer_norm_epsilon
    return forward(params, config, ids, attention=attention_per_row_loops,
                   layer_norm_fn=lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b, eps),
                   gelu=lambda x: F.gelu(x, approximate="tanh"))


def forward_third_formulation(params, config, ids):
    """torch.nn.MultiheadAttention for attention, torch's own layer_norm and tanh GELU."""
    eps = config.layer_norm_epsilon
    return forward(params, config, ids, attention=attention_torch_mha,
                   layer_norm_fn=lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b, eps),
                   gelu=lambda x: F.gelu(x, approximate="tanh"))


def max_relative_error(ours, reference):
    """max|ours - reference| / max|reference| (the metric the golden test uses)."""
    return float((ours - reference).abs().max() / reference.abs().max())
