#!/usr/bin/env python3
"""The ratio table of one bench/llm_peers.sh run (its log, llm_peers.txt).

    python3 bench/peers_summary.py OUT/llm_peers.txt

The log holds, per model file, the tables of `pxl bench llm` (the default
run, then one per PXL_TUNES string, headed "== pxl FILE [TUNE]") and of
llama.cpp's Vulkan and CUDA builds ("== llama.cpp vulkan FILE", "== llama.cpp
cuda FILE"). This prints one markdown row per pxl run: its pp512, tg128 and
tg128 greedy (t/s, means), the peers' pp512 and tg128 from the same log, and
pxl's ratios against each (pxl / peer: above 1 is faster). A missing figure
(a step skipped by the deadline, a failed run) prints as "-". Only the
numbers in the log are used: every ratio is between runs of one call.
"""
import re
import sys

HEAD = re.compile(r"^== (pxl|llama\.cpp vulkan|llama\.cpp cuda) (\S+)(?: \[(.*)\])?$")
# a table row whose last two cells are the test and "mean ± sd" (both harnesses' formats)
ROW = re.compile(r"\|\s*(pp\d+|tg\d+(?: greedy)?)\s*\|\s*([0-9.]+)\s*±\s*[0-9.]+\s*\|\s*$")


def parse(lines):
    """{(kind, file, tune): {test: t/s}} in the order met, kind pxl / vulkan / cuda."""
    runs, cur = {}, None
    for line in lines:
        line = line.rstrip("\n")
        h = HEAD.match(line)
        if h:
            kind = {"pxl": "pxl", "llama.cpp vulkan": "vulkan", "llama.cpp cuda": "cuda"}[h.group(1)]
            cur = (kind, h.group(2), h.group(3) or "")
            runs.setdefault(cur, {})
            continue
        if line.startswith("== "):
            cur = None
            continue
        r = ROW.search(line)
        if r and cur:
            runs[cur][r.group(1)] = float(r.group(2))
    return runs


def fmt(v, digits=1):
    return "-" if v is None else f"{v:,.{digits}f}"


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: peers_summary.py LLM_PEERS_LOG")
    with open(sys.argv[1], encoding="utf-8", errors="replace") as f:
        runs = parse(f)
    rows = [k for k in runs if k[0] == "pxl"]
    if not rows:
        print("peers_summary: no pxl runs in the log")
        return
    print("| file | pxl setting | pxl pp512 | pxl tg128 | pxl greedy | CUDA pp512 | CUDA tg128 | Vulkan pp512 "
          "| Vulkan tg128 | tg128 / CUDA | greedy / CUDA | tg128 / Vulkan | pp512 / CUDA | pp512 / Vulkan |")
    print("|---|---|" + "---:|" * 12)
    for _, name, tune in rows:
        p = runs[("pxl", name, tune)]
        c = runs.get(("cuda", name, ""), {})
        v = runs.get(("vulkan", name, ""), {})
        pp, tg, gr = p.get("pp512"), p.get("tg128"), p.get("tg128 greedy")
        cells = [name, tune or "default", fmt(pp), fmt(tg), fmt(gr), fmt(c.get("pp512")), fmt(c.get("tg128")),
                 fmt(v.get("pp512")), fmt(v.get("tg128")),
                 fmt(ratio(tg, c.get("tg128")), 2), fmt(ratio(gr, c.get("tg128")), 2),
                 fmt(ratio(tg, v.get("tg128")), 2), fmt(ratio(pp, c.get("pp512")), 2),
                 fmt(ratio(pp, v.get("pp512")), 2)]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
