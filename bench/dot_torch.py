#!/usr/bin/env python3
"""Baseline for `pxl bench dot`, measured with PyTorch on the same GPU in the same run.

Prints, as JSON, for n = 2^min .. 2^max f32 elements:
  - torch.dot bandwidth, counting 8n bytes read (the same count pxl uses);
  - device-to-device copy bandwidth of a 4n-byte tensor, counting 8n bytes
    (4n read + 4n written), the reference the foundation issue compares to.
Times are CUDA-event medians of 20 runs after 3 warm-ups.

usage: python3 bench/dot_torch.py [--min E] [--max E]
"""
import argparse
import json

import torch

from cuda_timing import timed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--min", type=int, default=20)
    ap.add_argument("--max", type=int, default=28)
    args = ap.parse_args()
    dev = torch.device("cuda")
    rows = []
    for e in range(args.min, args.max + 1):
        n = 1 << e
        a = torch.rand(n, device=dev) - 0.5
        b = torch.rand(n, device=dev) - 0.5
        dst = torch.empty_like(a)
        t_dot = timed(lambda: torch.dot(a, b))
        t_copy = timed(lambda: dst.copy_(a))
        rows.append({"n": n, "dot_s": t_dot, "dot_gbps": 8 * n / t_dot * 1e-9,
                     "copy_s": t_copy, "copy_gbps": 8 * n / t_copy * 1e-9})
        del a, b, dst
        torch.cuda.empty_cache()
    print(json.dumps({"baseline": "torch", "device": torch.cuda.get_device_name(),
                      "torch": torch.__version__,
                      "bytes_counted": "dot: 8n read; copy: 4n read + 4n written",
                      "results": rows}))


if __name__ == "__main__":
    main()
