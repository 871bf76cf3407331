"""Timing of PyTorch baselines for the bench/ scripts: CUDA events around each
call, the median of `reps` runs after `warm` warm-up calls."""
import statistics

import torch


def timed(fn, reps=20, warm=3, unit=1.0):
    """Median seconds per call of fn(), multiplied by unit (1e6: microseconds)."""
    for _ in range(warm):
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
