#!/usr/bin/env python3
"""Writes an ARAP problem file ("pxl-arap 1") for an icosphere of a given level.

A stand-in for `pxl mesh arap --level L --export FILE`, for testing the peers
(ceres_arap, jax_arap.py) where no pxl build is at hand. Same problem definition
(rest positions on the unit sphere, every undirected edge as two directed
edges, handles at rest z >= 0.8 moved by (0.3, 0, 0.4), handles at z <= -0.8
kept in place), but the vertex numbering and the icosahedron's orientation
are this script's own, so its costs need not match pxl's export digit for
digit. Pure Python, no numpy.

usage: arap_problem.py LEVEL OUT_FILE
"""
import math
import sys


def icosphere(level):
    t = (1.0 + math.sqrt(5.0)) / 2.0
    v = [(-1, t, 0), (1, t, 0), (-1, -t, 0), (1, -t, 0),
         (0, -1, t), (0, 1, t), (0, -1, -t), (0, 1, -t),
         (t, 0, -1), (t, 0, 1), (-t, 0, -1), (-t, 0, 1)]
    f = [(0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11),
         (1, 5, 9), (5, 11, 4), (11, 10, 2), (10, 7, 6), (7, 1, 8),
         (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8), (3, 8, 9),
         (4, 9, 5), (2, 4, 11), (6, 2, 10), (8, 6, 7), (9, 8, 1)]

    def unit(p):
        n = math.sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2])
        return (p[0] / n, p[1] / n, p[2] / n)

    v = [unit(p) for p in v]
    for _ in range(level):
        mid = {}

        def m(a, b):
            k = (a, b) if a < b else (b, a)
            if k not in mid:
                pa, pb = v[a], v[b]
                v.append(unit(((pa[0] + pb[0]) / 2, (pa[1] + pb[1]) / 2, (pa[2] + pb[2]) / 2)))
                mid[k] = len(v) - 1
            return mid[k]

        nf = []
        for a, b, c in f:
            ab, bc, ca = m(a, b), m(b, c), m(c, a)
            nf += [(a, ab, ca), (b, bc, ab), (c, ca, bc), (ab, bc, ca)]
        f = nf
    return v, f


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    level = int(sys.argv[1])
    if not 0 <= level <= 8:
        sys.exit("level must be 0..8")
    v, f = icosphere(level)
    und = set()
    for a, b, c in f:
        for i, j in ((a, b), (b, c), (c, a)):
            und.add((min(i, j), max(i, j)))
    edges = []
    for i, j in sorted(und):
        edges += [(i, j), (j, i)]
    handles = []
    for i, q in enumerate(v):
        if q[2] >= 0.8:
            handles.append((i, (q[0] + 0.3, q[1], q[2] + 0.4)))
        elif q[2] <= -0.8:
            handles.append((i, q))
    assert len(v) == 10 * 4 ** level + 2 and len(edges) == 2 * 30 * 4 ** level
    with open(sys.argv[2], "w") as out:
        out.write("pxl-arap 1\n%d %d %d\n" % (len(v), len(edges), len(handles)))
        out.writelines("%.17g %.17g %.17g\n" % q for q in v)
        out.writelines("%d %d\n" % e for e in edges)
        out.writelines("%d %.17g %.17g %.17g\n" % (i, t[0], t[1], t[2]) for i, t in handles)


if __name__ == "__main__":
    main()
