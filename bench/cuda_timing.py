"""Timing of PyTorch baselines for the bench/ scripts: CUDA events around each
call, the median of `reps` runs after `warm` warm-up calls and at least
`warm_s` seconds of calls (a GPU idle for a second runs at a fraction of its
clock and needs about 0.1-0.2 s of steady work to come back; an H200 went
from 345 to 1980 MHz)."""
import statistics
import time

import torch


def timed(fn, reps=20, warm=3, unit=1.0, warm_s=0.4):
    """Median seconds per call of fn(), multiplied by unit (1e6: microseconds)."""
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    t0 = time.monotonic()
    while time.monotonic() - t0 < warm_s:
        fn()
        torch.cuda.synchronize()
    out = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        out.append(s.elapsed_time(e) * 1e-3 * unit)
    return statistics.median(out)
