#!/usr/bin/env python3
"""Side-by-side `pxl bench ops --json` runs of two builds (the same machine, the same call).

usage: python3 bench/compare_ops_json.py BASE_1.json [BASE_2.json ...] -- NEW_1.json [NEW_2.json ...]

Prints each case's GPU time per call in every run, the ratio of the best new
run to the best base run (< 1: the new build is faster), and the best host time
to record one call (per dispatch for the *_1000 cases) of each build.
"""
import json
import sys


def load(path):
    with open(path) as f:
        return {c["name"]: c for c in json.load(f)["results"]}


def main(argv):
    if "--" not in argv:
        sys.exit(__doc__)
    cut = argv.index("--")
    base = [load(p) for p in argv[:cut]]
    new = [load(p) for p in argv[cut + 1:]]
    print("%-34s %-24s %-24s %8s | %9s %9s" % ("case (us per call)", "base runs", "new runs", "new/base",
                                                "host base", "host new"))
    for name in base[0]:
        if not all(name in r for r in new):
            print("%-34s missing in the new build" % name)
            continue
        b = [r[name]["us"] for r in base]
        n = [r[name]["us"] for r in new]
        hb = min(r[name]["host_us"] for r in base)
        hn = min(r[name]["host_us"] for r in new)
        print("%-34s %-24s %-24s %8.3f | %9.3g %9.3g" % (name, " ".join("%.4g" % x for x in b),
                                                        " ".join("%.4g" % x for x in n), min(n) / min(b), hb, hn))


if __name__ == "__main__":
    main(sys.argv[1:])
