#!/usr/bin/env python3
"""Residuals + Jacobian of N ARAP edge instances with JAX: jit(vmap(jacfwd(f))).

The peer for pxl's batched residual/Jacobian kernel (issue: autodiff to WGSL,
speed table, first row). f is the ARAP edge residual of the shared problem
definition,
    r = (p_i - p_j) - R(w_i) d,   d = q_i - q_j (the rest edge, data),
R(w) the Rodrigues rotation with the first-order form v + w x v below
theta^2 = 1e-12. The Jacobian is taken with respect to the 9 parameters
(p_i, p_j, w_i). One jitted call returns the residuals (N, 3) and the Jacobian
(N, 3, 9), as pxl's kernel does.

Timing: inputs are made on the device (not timed); the first call (compile) is
timed apart, three more warm up; then --reps calls each closed by
block_until_ready (median), and --reps calls back to back with one wait (mean);
s_per_eval is the smaller. Float32 unless --f64 (which turns on jax_enable_x64). A few
instances are checked against a NumPy float64 evaluation of the same formulas
(residuals, and the Jacobian by central differences).

Prints one JSON line. Not part of pxl; runs where JAX is installed (the
device machine).

usage: jax_arap.py [--n N] [--reps R] [--f64] [--mode jacfwd|jacrev|both] [--seed S]
"""
import argparse
import json
import sys
import time

import numpy as np

EPS2 = 1e-12


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1 << 20)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--f64", action="store_true")
    ap.add_argument("--mode", default="jacfwd", choices=["jacfwd", "jacrev", "both"])
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()

    import jax
    if a.f64:
        jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    dt = jnp.float64 if a.f64 else jnp.float32

    def rotate(w, v):
        t2 = jnp.dot(w, w)
        big = t2 > EPS2
        # Double-where: the unused branch must see a safe theta so that its
        # derivative is finite (NaN * 0 would poison the Jacobian at w = 0).
        t2s = jnp.where(big, t2, 1.0)
        th = jnp.sqrt(t2s)
        k = w / th
        c, s = jnp.cos(th), jnp.sin(th)
        full = v * c + jnp.cross(k, v) * s + k * jnp.dot(k, v) * (1.0 - c)
        small = v + jnp.cross(w, v)
        return jnp.where(big, full, small)

    def edge(pi, pj, wi, d):
        return (pi - pj) - rotate(wi, d)

    def edge_aux(pi, pj, wi, d):
        r = edge(pi, pj, wi, d)
        return r, r

    key = jax.random.PRNGKey(a.seed)
    k1, k2, k3, k4 = jax.random.split(key, 4)
    n = a.n
    pi = jax.random.uniform(k1, (n, 3), dt, -1.0, 1.0)
    pj = jax.random.uniform(k2, (n, 3), dt, -1.0, 1.0)
    wi = jax.random.uniform(k3, (n, 3), dt, -1.5, 1.5)
    wi = wi.at[:8].set(0.0)  # a few instances on the small-angle branch
    d = jax.random.uniform(k4, (n, 3), dt, -0.1, 0.1)
    jax.block_until_ready((pi, pj, wi, d))

    dev = jax.devices()[0]
    out = {"peer": "jax", "jax": jax.__version__, "device": dev.device_kind, "platform": dev.platform,
           "n": n, "precision": "f64" if a.f64 else "f32",
           "x64_enabled": bool(jnp.asarray(1.0).dtype == jnp.float64),
           "function": "ARAP edge (p_i, p_j, w_i; d) -> 3 residuals, Jacobian 3x9", "reps": a.reps}

    modes = ["jacfwd", "jacrev"] if a.mode == "both" else [a.mode]
    ok = True
    for m in modes:
        try:
            out[m] = run_mode(jax, jnp, m, edge_aux, (pi, pj, wi, d), a)
            ok = ok and out[m]["check_ok"]
        except Exception as e:  # one mode failing must not lose the other
            out[m] = {"error": "%s: %s" % (type(e).__name__, str(e)[:500])}
            ok = False
    if "s_per_eval" in out[modes[0]]:
        out["s_per_eval"] = out[modes[0]]["s_per_eval"]
    print(json.dumps(out), flush=True)
    return 0 if ok else 2


def run_mode(jax, jnp, m, edge_aux, args, a):
    """Compiles and times one differentiation mode; returns its JSON record.

    s_sync: median of calls each closed by block_until_ready (Python dispatch
    included); s_pipelined: the mean over reps calls issued back to back with
    one wait at the end (dispatch overlaps the device). s_per_eval, the
    figure to compare with, is the smaller of the two.
    """
    jac = jax.jacfwd if m == "jacfwd" else jax.jacrev
    # has_aux: the residuals come out of the same pass as the Jacobian.
    jf = jac(edge_aux, argnums=(0, 1, 2), has_aux=True)

    def res_and_jac(pi, pj, wi, d):
        (jp, jq, jw), r = jf(pi, pj, wi, d)
        return r, jnp.concatenate([jp, jq, jw], axis=-1)

    fn = jax.jit(jax.vmap(res_and_jac))
    n = args[0].shape[0]
    t0 = time.perf_counter()
    r, J = fn(*args)
    jax.block_until_ready((r, J))
    compile_s = time.perf_counter() - t0
    for _ in range(3):  # warm-up
        jax.block_until_ready(fn(*args))
    ts = []
    for _ in range(a.reps):
        t0 = time.perf_counter()
        r, J = fn(*args)
        jax.block_until_ready((r, J))
        ts.append(time.perf_counter() - t0)
    ts.sort()
    med = ts[len(ts) // 2] if len(ts) % 2 else 0.5 * (ts[len(ts) // 2 - 1] + ts[len(ts) // 2])
    t0 = time.perf_counter()
    outs = [fn(*args) for _ in range(a.reps)]
    jax.block_until_ready(outs)
    pipe = (time.perf_counter() - t0) / a.reps
    del outs
    pi, pj, wi, d = args
    err_r, err_j = check(np.asarray(pi[:64]), np.asarray(pj[:64]), np.asarray(wi[:64]), np.asarray(d[:64]),
                         np.asarray(r[:64]), np.asarray(J[:64]))
    f64 = a.f64
    good = (bool(np.isfinite(np.asarray(J)).all()) and err_r < (1e-9 if f64 else 1e-4)
            and err_j < (1e-6 if f64 else 1e-3))
    best = min(med, pipe)
    return {"s_per_eval": best, "s_sync_median": med, "s_sync_min": ts[0], "s_pipelined": pipe,
            "instances_per_s": n / best, "compile_s": compile_s,
            "out_shapes": [list(r.shape), list(J.shape)], "check_rel_err_residual": err_r,
            "check_rel_err_jacobian_fd": err_j, "check_ok": good}


def np_edge(pi, pj, wi, d):
    t2 = float(wi @ wi)
    if t2 > EPS2:
        th = np.sqrt(t2)
        k = wi / th
        rd = d * np.cos(th) + np.cross(k, d) * np.sin(th) + k * (k @ d) * (1 - np.cos(th))
    else:
        rd = d + np.cross(wi, d)
    return (pi - pj) - rd


def check(pi, pj, wi, d, r, J):
    """Relative errors of r and J against float64 NumPy (J by central differences)."""
    pi, pj, wi, d = (x.astype(np.float64) for x in (pi, pj, wi, d))
    er = ej = 0.0
    h = 1e-6
    for k in range(pi.shape[0]):
        x = np.concatenate([pi[k], pj[k], wi[k]])
        f = lambda x: np_edge(x[0:3], x[3:6], x[6:9], d[k])
        r0 = f(x)
        Jr = np.zeros((3, 9))
        for c in range(9):
            e = np.zeros(9)
            e[c] = h
            Jr[:, c] = (f(x + e) - f(x - e)) / (2 * h)
        er = max(er, np.abs(r[k] - r0).max() / max(1.0, np.abs(r0).max()))
        ej = max(ej, np.abs(J[k] - Jr).max() / max(1.0, np.abs(Jr).max()))
    return float(er), float(ej)


if __name__ == "__main__":
    sys.exit(main())
