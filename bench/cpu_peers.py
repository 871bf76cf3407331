#!/usr/bin/env python3
"""pxl's CPU decode or prefill against llama.cpp's CPU library, runs in turn.

Each round runs every configuration once, in the same order: other pxl
builds (--also), pxl as built (its default), pxl with each --tune given,
then llama.cpp (the baseline,
through the peers' llbench harness). Machines whose speed drifts within a
minute (shared vCPUs) still give fair ratios this way. Prints, per
configuration, the best and the median tok/s over the rounds and their
ratio to llama.cpp's best and median.

  python3 bench/cpu_peers.py --pxl build/pxl --llbench /tmp/peers/llbench \\
      -m models/kjv-llama-q8_0.gguf --threads 1 --tg 128 --reps 5 --rounds 5 \\
      --tune cpu_q8=0

The llbench directory is the peers' harness (../shared/peers/README.md,
beside the checkout): it holds the llbench binary and lib-cpu/, llama.cpp's
npm CPU library.
"""
import argparse
import json
import re
import statistics
import subprocess
import sys


def tok_s(out, test):
    """the tok/s of the result row for `test` (pp512, tg128, ...) in a bench table"""
    for line in out.splitlines():
        if "|" in line and test in line and "rep" not in line:
            m = re.findall(r"([\d.]+) ±", line)
            if m:
                return float(m[-1])
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pxl", default="build/pxl", help="the pxl binary (default build/pxl)")
    ap.add_argument("--llbench", required=True, help="the peers' llbench directory (llbench and lib-cpu/)")
    ap.add_argument("-m", "--model", required=True, help="GGUF file")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--tg", type=int, default=0, help="tokens to decode (a tgN test)")
    ap.add_argument("--pp", type=int, default=0, help="prompt tokens (a ppN test); give one of --tg and --pp")
    ap.add_argument("--reps", type=int, default=3, help="repetitions inside each run")
    ap.add_argument("--rounds", type=int, default=3, help="runs of each configuration, in turn")
    ap.add_argument("--tune", action="append", default=[], help="a pxl --tune value to compare too (repeatable)")
    ap.add_argument("--also", action="append", default=[], metavar="LABEL=PATH",
                    help="another pxl build to run in turn, e.g. an older tree (repeatable)")
    ap.add_argument("--json", action="store_true", help="machine-readable output")
    a = ap.parse_args()
    if (a.tg > 0) == (a.pp > 0):
        ap.error("give one of --tg and --pp")
    test = f"tg{a.tg}" if a.tg else f"pp{a.pp}"
    px = [a.pxl, "bench", "llm", "-m", a.model, "--backend", "cpu", "--threads", str(a.threads), "--pp", str(a.pp),
          "--tg", str(a.tg), "--reps", str(a.reps)]
    cfg = {}
    for o in a.also:
        label, _, path = o.partition("=")
        if not path:
            ap.error(f"--also {o}: LABEL=PATH")
        cfg[label] = [path] + px[1:]
    cfg["pxl"] = px
    for t in a.tune:
        cfg[f"pxl {t}"] = px + ["--tune", t]
    cfg["llama.cpp"] = [a.llbench + "/llbench", "-L", a.llbench + "/lib-cpu", "-m", a.model, "-p", str(a.pp), "-n",
                        str(a.tg), "-r", str(a.reps), "-t", str(a.threads), "-ngl", "0"]
    res = {k: [] for k in cfg}
    for r in range(a.rounds):
        for k, c in cfg.items():
            p = subprocess.run(c, capture_output=True, text=True)
            v = tok_s(p.stdout, test)
            if v is None:
                sys.exit(f"{k}: no {test} result (exit {p.returncode}): {p.stderr.strip()[-400:]}")
            res[k].append(v)
        print(f"round {r + 1} of {a.rounds} done", file=sys.stderr)
    base = res["llama.cpp"]
    rows = []
    for k, v in res.items():
        rows.append({"config": k, "best": max(v), "median": statistics.median(v), "runs": v,
                     "best_ratio": max(v) / max(base), "median_ratio": statistics.median(v) / statistics.median(base)})
    if a.json:
        print(json.dumps({"model": a.model, "threads": a.threads, "test": test, "baseline": "llama.cpp", "rows": rows}))
        return
    print(f"{a.model}, {a.threads} thread(s), {test}, tok/s over {a.rounds} rounds; ratios to llama.cpp")
    for r in rows:
        print(f"  {r['config']:24s} best {r['best']:10.1f} median {r['median']:10.1f}"
              f"   x{r['best_ratio']:.2f} (median x{r['median_ratio']:.2f})")


if __name__ == "__main__":
    main()
