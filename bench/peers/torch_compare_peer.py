#!/usr/bin/python3
# PyTorch peer for bench/run_compare_bench.py: two Qwen2-shaped checkpoints side by side in one process
# (the plain-PyTorch Qwen2 of torch_hf_bench.py, weights in bfloat16), each running the same prompt
# ids once; prints one JSON line: load seconds, each forward's milliseconds, the KL divergence of the
# two last-position distributions (nats), the peak resident memory (VmHWM) after loading and at the end.
# Usage: /usr/bin/python3 bench/peers/torch_compare_peer.py --left DIR --right DIR --ids 1,2,3 [--threads N]
import argparse
import json
import time

import torch
from torch_hf_bench import KvCache, Qwen2, forward, peak_rss_mb


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--left", required=True)
    parser.add_argument("--right", required=True)
    parser.add_argument("--ids", required=True)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    ids = torch.tensor([int(i) for i in args.ids.split(",")])
    begin = time.perf_counter()
    models = [Qwen2(torch, path, torch.bfloat16) for path in (args.left, args.right)]
    load_s = time.perf_counter() - begin
    after_load = peak_rss_mb()
    logits, ms = [], []
    with torch.inference_mode():
        for model in models:
            cache = KvCache(model, len(ids) + 1)
            t0 = time.perf_counter()
            logits.append(forward(model, ids, cache).float())
            ms.append((time.perf_counter() - t0) * 1e3)
    p, q = torch.log_softmax(logits[0], -1), torch.log_softmax(logits[1], -1)
    kl = float((p.exp() * (p - q)).sum())
    print(json.dumps({"load_s": load_s, "forward_ms": ms, "kl": kl, "peak_rss_mb_after_load": after_load, "peak_rss_mb": peak_rss_mb(),
                      "torch": torch.__version__, "threads": args.threads}))


if __name__ == "__main__":
    main()
