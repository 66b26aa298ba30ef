# Writes the golden AdamW reference: torch.optim.AdamW (float32, CPU) run for 5 steps on two
# parameter groups, a decayed matrix and an undecayed bias, with a different lr each step.
# Usage: make_reference.py OUT_DIR; check_adamw (C++) replays the same inputs and compares.
import os
import sys

import numpy as np
import torch

STEPS = 5
# float32-representable hyper-parameters, so Python's doubles equal the C++ floats widened.
BETA1 = float(np.float32(0.9))
BETA2 = float(np.float32(0.95))
EPS = float(np.float32(1e-8))
WEIGHT_DECAY = float(np.float32(0.1))
LRS = [float(np.float32(x)) for x in (2e-2, 4e-2, 3e-2, 1.5e-2, 5e-3)]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_reference.py OUT_DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    rng = np.random.default_rng(1234)
    # Magnitudes in [0.5, 2] keep every parameter away from 0, so relative error is meaningful.
    def away_from_zero(shape):
        return (rng.choice([-1.0, 1.0], size=shape) * rng.uniform(0.5, 2.0, size=shape)).astype(np.float32)
    weight = torch.nn.Parameter(torch.from_numpy(away_from_zero((4, 6))))   # decayed
    bias = torch.nn.Parameter(torch.from_numpy(away_from_zero((7,))))       # not decayed
    n = weight.numel() + bias.numel()
    params0 = torch.cat([weight.detach().flatten(), bias.detach()]).numpy().copy()
    mask = np.concatenate([np.ones(weight.numel()), np.zeros(bias.numel())]).astype(np.int32)

    # Gradients of very different scales (so eps and the second moment matter), one step with a
    # zero gradient on some entries, and a sign flip between steps.
    grads = rng.normal(size=(STEPS, n)).astype(np.float32)
    grads *= np.float32(10.0) ** rng.integers(-4, 2, size=(1, n)).astype(np.float32)
    grads[2, ::5] = 0.0
    grads[3] *= -1.0

    opt = torch.optim.AdamW([{"params": [weight], "weight_decay": WEIGHT_DECAY},
                             {"params": [bias], "weight_decay": 0.0}],
                            lr=LRS[0], betas=(BETA1, BETA2), eps=EPS, foreach=False)
    expected = np.zeros((STEPS, n), dtype=np.float32)
    for s in range(STEPS):
        for group in opt.param_groups:
            group["lr"] = LRS[s]
        g = torch.from_numpy(grads[s])
        weight.grad = g[:weight.numel()].reshape(weight.shape).clone()
        bias.grad = g[weight.numel():].clone()
        opt.step()
        expected[s] = torch.cat([weight.detach().flatten(), bias.detach()]).numpy()

    np.save(os.path.join(out, "params0.npy"), params0)
    np.save(os.path.join(out, "mask.npy"), mask)
    np.save(os.path.join(out, "grads.npy"), grads)
    np.save(os.path.join(out, "lrs.npy"), np.array(LRS, dtype=np.float32))
    np.save(os.path.join(out, "hyper.npy"), np.array([BETA1, BETA2, EPS, WEIGHT_DECAY], dtype=np.float32))
    np.save(os.path.join(out, "expected.npy"), expected)
    print(f"wrote AdamW reference: {STEPS} steps of {n} parameters to {out}")


if __name__ == "__main__":
    main()
