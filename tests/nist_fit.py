#!/usr/bin/env python3
"""NIST StRD nonlinear regression, through `pxl fit` as a user runs it.

    nist_fit.py PXL NIST_DIR [PROBLEM ...]

For each of the 27 problems and both of NIST's starting points, runs
`pxl fit --model ... --data FILE.dat-rows --columns y,x --start ... --json`
and compares the fitted parameters, their standard errors and the residual
sum of squares with NIST's certified values by the log relative error
LRE = -log10(|got - certified| / |certified|) (capped at 11, the digits NIST
certifies). Every run must reach the LRE floors below; the runs that LM does
not solve from NIST's first start are listed in KNOWN_FAILURES with the
reason and printed as such.

Exit status: 0 all good, 1 a check failed, 77 (skip) when the data files are
absent and PXL_REQUIRE_NIST is unset (scripts/fetch_nist.sh fetches them).
"""
import json
import math
import os
import re
import subprocess
import sys
import tempfile

# The models in pxl fit's syntax (NIST writes exp[...], arctan, ** and log[y]).
MODELS = {
    "Misra1a": "b1*(1-exp(-b2*x))",
    "Chwirut2": "exp(-b1*x)/(b2+b3*x)",
    "Chwirut1": "exp(-b1*x)/(b2+b3*x)",
    "Lanczos3": "b1*exp(-b2*x) + b3*exp(-b4*x) + b5*exp(-b6*x)",
    "Gauss1": "b1*exp(-b2*x) + b3*exp(-(x-b4)^2/b5^2) + b6*exp(-(x-b7)^2/b8^2)",
    "Gauss2": "b1*exp(-b2*x) + b3*exp(-(x-b4)^2/b5^2) + b6*exp(-(x-b7)^2/b8^2)",
    "DanWood": "b1*x^b2",
    "Misra1b": "b1*(1-(1+b2*x/2)^(-2))",
    "Kirby2": "(b1 + b2*x + b3*x^2) / (1 + b4*x + b5*x^2)",
    "Hahn1": "(b1 + b2*x + b3*x^2 + b4*x^3) / (1 + b5*x + b6*x^2 + b7*x^3)",
    "Nelson": "log(y) = b1 - b2*x1*exp(-b3*x2)",
    "MGH17": "b1 + b2*exp(-x*b4) + b3*exp(-x*b5)",
    "Lanczos1": "b1*exp(-b2*x) + b3*exp(-b4*x) + b5*exp(-b6*x)",
    "Lanczos2": "b1*exp(-b2*x) + b3*exp(-b4*x) + b5*exp(-b6*x)",
    "Gauss3": "b1*exp(-b2*x) + b3*exp(-(x-b4)^2/b5^2) + b6*exp(-(x-b7)^2/b8^2)",
    "Misra1c": "b1*(1-(1+2*b2*x)^(-.5))",
    "Misra1d": "b1*b2*x*((1+b2*x)^(-1))",
    "Roszman1": "b1 - b2*x - atan(b3/(x-b4))/pi",
    "ENSO": "b1 + b2*cos(2*pi*x/12) + b3*sin(2*pi*x/12) + b5*cos(2*pi*x/b4) + b6*sin(2*pi*x/b4)"
            " + b8*cos(2*pi*x/b7) + b9*sin(2*pi*x/b7)",
    "MGH09": "b1*(x^2+x*b2) / (x^2+x*b3+b4)",
    "Thurber": "(b1 + b2*x + b3*x^2 + b4*x^3) / (1 + b5*x + b6*x^2 + b7*x^3)",
    "BoxBOD": "b1*(1-exp(-b2*x))",
    "Rat42": "b1 / (1+exp(b2-b3*x))",
    "MGH10": "b1 * exp(b2/(x+b3))",
    "Eckerle4": "(b1/b2) * exp(-0.5*((x-b3)/b2)^2)",
    "Rat43": "b1 / ((1+exp(b2-b3*x))^(1/b4))",
    "Bennett5": "b1 * (b2+x)^(-1/b3)",
}

# Digits every solved run must reach: parameters, standard errors, RSS.
# NIST's own guidance: 4 to 6 digits is good agreement. pxl fit reaches 7 to
# 11 digits of the parameters and 6 to 11 of the standard errors, Lanczos1 below (the table
# this script prints); the floors leave half a digit for other compilers.
FLOOR = {"params": 6.5, "se": 5.5, "rss": 9.0}
FLOOR_BY_PROBLEM = {
    # The data are exact to about 13 digits: the certified RSS is 1.4e-25, so
    # each residual (~1e-13) is the difference of numbers near 1 and keeps
    # only ~3 digits in double precision; the RSS and the standard errors
    # (which scale with sqrt(RSS)) cannot be had to more. The parameters can.
    "Lanczos1": {"se": 2.5, "rss": 2.5},
}

# (problem, start): what happens instead of a solution, and why. Such a run
# must still end with a report (JSON, "ok": true); if it starts to pass, it
# is shown as FIXED? (not a failure).
KNOWN_FAILURES = {
    ("BoxBOD", "1"): "from b1=1, b2=1 LM walks onto the plateau b2 -> large, where exp(-b2*x) = 0 and the model "
                     "is the constant b1 = mean(y) (RSS 9771.5; certified 1168.0 at b2 = 0.547): a stationary "
                     "point with a zero gradient in b2",
    ("MGH10", "1"): "from b2=4e5, b3=2.5e4 (certified 6181, 345) LM follows the valley b1 -> 0, b2 and b3 -> "
                    "infinity and ends with NO_CONVERGENCE after 1000 iterations (exit status 3)",
    ("MGH17", "1"): "from b5=2 (certified 0.0221) an accepted step at iteration 7 (gain ratio 1.0, cost 2.2 -> "
                    "0.55) carries b5 to ~100, where exp(-b5*x) underflows for every x >= 10 and b5's Jacobian "
                    "column is exactly 0 (its damping was at the 1e-6 floor: its diagonal was 4e-12 at the start); "
                    "LM then converges on the 4-parameter model (RSS 0.0245, certified 5.46e-5)",
}

# Certified values that the pinned copy of a file misprints, with NIST's
# published value (www.itl.nist.gov/div898/strd/nls/data/roszman1.shtml).
CERTIFIED_ERRATA = {
    # Ceres' copy reads "1.20196866396E-0"; pxl fit's solution agrees with
    # NIST's value to 11 digits (and to the certified RSS and errors).
    ("Roszman1", "b1"): 2.0196866396E-01,
}


def parse_dat(path):
    """Start values, certified values and standard errors, RSS, data rows and column names."""
    with open(path, encoding="ascii") as f:
        lines = f.read().replace("\r", "").split("\n")
    params = []
    name = os.path.basename(path)[:-4]
    for ln in lines:
        m = re.match(r"^\s*(b\d+)\s*=\s*(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s*$", ln)
        if m:
            b = m.group(1)
            cert = CERTIFIED_ERRATA.get((name, b), float(m.group(4)))
            params.append((b, float(m.group(2)), float(m.group(3)), cert, float(m.group(5))))
    rss = None
    for ln in lines:
        m = re.match(r"^Residual Sum of Squares:\s+(\S+)", ln)
        if m:
            rss = float(m.group(1))
    start = None
    for i, ln in enumerate(lines):
        if re.match(r"^Data:\s+y\b", ln):
            start = i
    if start is None or rss is None or not params:
        raise ValueError("%s: not a NIST StRD file" % path)
    columns = lines[start].split()[1:]
    rows = [ln for ln in lines[start + 1:] if ln.strip()]
    return params, rss, columns, rows


def lre(got, want):
    if got is None or not math.isfinite(got):
        return 0.0
    if got == want:
        return 11.0
    if want == 0:
        return min(11.0, -math.log10(abs(got)))
    return max(0.0, min(11.0, -math.log10(abs(got - want) / abs(want))))


def run(pxl, name, model, data_path, columns, params, start_index):
    start = ",".join("%s=%r" % (p[0], p[start_index]) for p in params)
    cmd = [pxl, "fit", "--model", model, "--data", data_path, "--columns", ",".join(columns), "--start", start, "--json"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    out = p.stdout.decode("utf-8", "replace")
    try:
        res = json.loads(out)
    except ValueError:
        res = {"ok": False, "error": "no JSON: " + out[:200] + p.stderr.decode("utf-8", "replace")[:200]}
    return p.returncode, res, cmd


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    pxl, nist_dir = sys.argv[1], sys.argv[2]
    only = sys.argv[3:]
    names = [n for n in MODELS if not only or n in only]
    missing = [n for n in names if not os.path.isfile(os.path.join(nist_dir, n + ".dat"))]
    if missing:
        msg = "nist_fit: %d NIST StRD files missing in %s (%s...); run scripts/fetch_nist.sh" % (
            len(missing), nist_dir, ", ".join(missing[:3]))
        if os.environ.get("PXL_REQUIRE_NIST"):
            print(msg + " (PXL_REQUIRE_NIST is set: failing)", file=sys.stderr)
            return 1
        print(msg + ": skipped", file=sys.stderr)
        return 77
    failures = 0
    print("%-9s %-5s %-6s %8s %8s %8s  %5s  %s" % ("problem", "start", "result", "LRE(b)", "LRE(se)", "LRE(rss)",
                                                  "iters", "termination"))
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            params, rss, columns, rows = parse_dat(os.path.join(nist_dir, name + ".dat"))
            data_path = os.path.join(tmp, name + ".txt")
            with open(data_path, "w") as f:
                f.write("\n".join(rows) + "\n")
            floor = dict(FLOOR)
            floor.update(FLOOR_BY_PROBLEM.get(name, {}))
            for start_index, start_name in ((1, "1"), (2, "2")):
                rc, res, cmd = run(pxl, name, MODELS[name], data_path, columns, params, start_index)
                known = KNOWN_FAILURES.get((name, start_name))
                ok = rc == 0 and res.get("ok") is True and res.get("converged") is True
                lb = lse = lr = 0.0
                if res.get("ok"):
                    got = {p["name"]: p for p in res["parameters"]}
                    lb = min(lre(got[p[0]]["value"], p[3]) for p in params)
                    lse = min(lre(got[p[0]]["std_error"], p[4]) for p in params)
                    lr = lre(res.get("rss"), rss)
                    ok = ok and lb >= floor["params"] and lse >= floor["se"] and lr >= floor["rss"]
                term = res.get("termination", res.get("error", "?"))
                iters = res.get("iterations", "-")
                if known and not res.get("ok"):
                    verdict = "FAIL"  # a known failure must still end with a report
                    failures += 1
                elif known:
                    verdict = "KNOWN" if not ok else "FIXED?"
                elif ok:
                    verdict = "ok"
                else:
                    verdict = "FAIL"
                    failures += 1
                print("%-9s %-5s %-6s %8.1f %8.1f %8.1f  %5s  %s" % (name, start_name, verdict, lb, lse, lr, iters,
                                                                      term))
                if known:
                    print("          known: %s" % known)
                if verdict in ("FAIL", "FIXED?"):
                    print("          command: %s" % " ".join("'%s'" % c if " " in c or "*" in c else c for c in cmd))
                    if not res.get("ok"):
                        print("          error: %s" % res.get("error"))
    print("nist_fit: %s" % ("all runs reached their floors" if not failures else "%d run(s) failed" % failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
