/*
 * Naive double-precision oracles for the op table (tests/ops_cases.c): each
 * one is the definition in include/pxl/ops.h written as plainly as possible,
 * with no blocking, threading or reordering, so that a mistake the CPU and GPU
 * paths share still shows. Transcendentals go through long double where the
 * argument can be large (the rope angle). NaN and Inf follow from IEEE
 * arithmetic on the definition, except where ops.h defines an order (argmax,
 * top-k: NaN counts as the largest value).
 */
#include "ops_oracle.h"

#include <math.h>
#include <stddef.h>

void oracle_matmul(const double *a, const double *b, const double *c0, double *c, int64_t batch_a,
                   int64_t batch_b, int64_t batch, int64_t M, int64_t N, int64_t K, int ta, int tb,
                   double alpha, double beta) {
    for (int64_t bi = 0; bi < batch; bi++) {
        const double *ab = a + (batch_a == 1 ? 0 : bi) * M * K;
        const double *bb = b + (batch_b == 1 ? 0 : bi) * K * N;
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                double s = 0;
                for (int64_t k = 0; k < K; k++) {
                    double av = ta ? ab[k * M + m] : ab[m * K + k];
                    double bv = tb ? bb[n * K + k] : bb[k * N + n];
                    s += av * bv;
                }
                int64_t i = (bi * M + m) * N + n;
                c[i] = alpha * s + (beta != 0.0 ? beta * c0[i] : 0.0);
            }
    }
}

void oracle_softmax(const double *x, double *y, int64_t rows, int64_t R, int64_t L, double scale, int causal,
                    int64_t off) {
    for (int64_t r = 0; r < rows; r++) {
        const double *xr = x + r * L;
        double *yr = y + r * L;
        int64_t rr = r % R;
        /* column j is visible when j <= rr + off, i.e. j - rr <= off (no overflow) */
        double m = -INFINITY;
        int nan = 0;
        for (int64_t j = 0; j < L; j++) {
            if (causal && j - rr > off) continue;
            double z = scale * xr[j];
            if (isnan(z)) nan = 1;
            else if (z > m) m = z;
        }
        double sum = 0;
        for (int64_t j = 0; j < L; j++) {
            if (causal && j - rr > off) {
                yr[j] = 0;
                continue;
            }
            double z = scale * xr[j];
            yr[j] = nan ? (double)NAN : m == -HUGE_VAL ? 0.0 : exp(z - m); /* +Inf max: Inf - Inf = NaN */
            sum += yr[j];
        }
        for (int64_t j = 0; j < L; j++) {
            if (causal && j - rr > off) continue;
            if (sum == 0.0 && !nan) yr[j] = 0.0; /* every entry masked or -Inf */
            else yr[j] /= sum;
        }
    }
}

void oracle_rmsnorm(const double *x, const double *w, double *y, int64_t rows, int64_t L, double eps) {
    for (int64_t r = 0; r < rows; r++) {
        double ss = 0;
        for (int64_t j = 0; j < L; j++) ss += x[r * L + j] * x[r * L + j];
        double inv = 1.0 / sqrt(ss / (double)L + eps);
        for (int64_t j = 0; j < L; j++) y[r * L + j] = x[r * L + j] * inv * w[j];
    }
}

void oracle_layernorm(const double *x, const double *w, const double *b, double *y, int64_t rows, int64_t L,
                      double eps) {
    for (int64_t r = 0; r < rows; r++) {
        const double *xr = x + r * L;
        double mu = 0, var = 0;
        for (int64_t j = 0; j < L; j++) mu += xr[j];
        mu /= (double)L;
        for (int64_t j = 0; j < L; j++) var += (xr[j] - mu) * (xr[j] - mu);
        var /= (double)L;
        double inv = 1.0 / sqrt(var + eps);
        for (int64_t j = 0; j < L; j++) y[r * L + j] = (xr[j] - mu) * inv * w[j] + (b ? b[j] : 0.0);
    }
}

/* 1 when (v, i) comes before (u, k) in ops.h's order: larger first (NaN largest), ties by lower index */
static int before(double v, int64_t i, double u, int64_t k) {
    if (isnan(v) || isnan(u)) {
        if (isnan(v) && isnan(u)) return i < k;
        return isnan(v);
    }
    if (v != u) return v > u;
    return i < k;
}

void oracle_argmax(const double *x, double *idx, int64_t rows, int64_t L, int nan_lowest) {
    for (int64_t r = 0; r < rows; r++) {
        int64_t best = 0;
        for (int64_t j = 1; j < L; j++) {
            double v = x[r * L + j], u = x[r * L + best];
            if (nan_lowest ? (!isnan(v) && (isnan(u) || v > u)) : before(v, j, u, best)) best = j;
        }
        idx[r] = (double)best;
    }
}

void oracle_topk(const double *x, double *vals, double *idx, int64_t rows, int64_t L, int k) {
    for (int64_t r = 0; r < rows; r++) {
        const double *xr = x + r * L;
        /* selection: the t-th output is the best entry that comes after the (t-1)-th */
        int64_t prev = -1;
        for (int t = 0; t < k; t++) {
            int64_t best = -1;
            for (int64_t j = 0; j < L; j++) {
                if (prev >= 0 && !before(xr[prev], prev, xr[j], j)) continue; /* already taken */
                if (best < 0 || before(xr[j], j, xr[best], best)) best = j;
            }
            vals[r * k + t] = xr[best];
            idx[r * k + t] = (double)best;
            prev = best;
        }
    }
}

double oracle_gelu_tanh(double x) {
    const double c = sqrt(2.0 / 3.14159265358979323846);
    return 0.5 * x * (1.0 + tanh(c * (x + 0.044715 * x * x * x)));
}

double oracle_gelu_erf(double x) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }

double oracle_silu(double x) { return x / (1.0 + exp(-x)); }

void oracle_binary(const double *a, const double *b, double *y, int64_t n, int64_t cols, int op) {
    for (int64_t i = 0; i < n; i++) {
        double bv = b[cols ? i % cols : i];
        y[i] = op == 0 ? a[i] + bv : a[i] * bv;
    }
}

void oracle_rope_ext(const double *x, double *y, int64_t T, int64_t H, int64_t D, int64_t pos_offset, double base,
                     int layout, double freq_scale, const double *ff) {
    for (int64_t t = 0; t < T; t++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t i = 0; i < D / 2; i++) {
                long double theta = powl((long double)base, -2.0L * (long double)i / (long double)D);
                long double ang = (long double)(pos_offset + t) * (long double)freq_scale * theta;
                if (ff) ang /= (long double)ff[i];
                double c = (double)cosl(ang), s = (double)sinl(ang);
                int64_t row = (t * H + h) * D;
                int64_t ia = row + (layout ? i : 2 * i), ib = row + (layout ? i + D / 2 : 2 * i + 1);
                double a = x[ia], b = x[ib];
                y[ia] = a * c - b * s;
                y[ib] = a * s + b * c;
            }
}

void oracle_rope(const double *x, double *y, int64_t T, int64_t H, int64_t D, int64_t pos_offset, double base,
                 int layout) {
    oracle_rope_ext(x, y, T, H, D, pos_offset, base, layout, 1.0, NULL);
}

void oracle_attention(const double *q, const double *k, const double *v, double *y, int64_t T, int64_t Hq,
                      int64_t Hkv, int64_t D, int64_t kv_len, double scale) {
    double s[16384];
    for (int64_t t = 0; t < T; t++) {
        int64_t pos = kv_len - T + t; /* sees keys 0 .. pos */
        for (int64_t h = 0; h < Hq; h++) {
            int64_t hk = h / (Hq / Hkv);
            const double *qv = q + (t * Hq + h) * D;
            double m = -INFINITY;
            int nan = 0;
            for (int64_t j = 0; j <= pos; j++) {
                const double *kj = k + (j * Hkv + hk) * D;
                double d = 0;
                for (int64_t e = 0; e < D; e++) d += qv[e] * kj[e];
                s[j] = scale * d;
                if (isnan(s[j])) nan = 1;
                else if (s[j] > m) m = s[j];
            }
            double l = 0;
            for (int64_t j = 0; j <= pos; j++) {
                s[j] = nan ? (double)NAN : exp(s[j] - m);
                l += s[j];
            }
            for (int64_t e = 0; e < D; e++) {
                double acc = 0;
                for (int64_t j = 0; j <= pos; j++) acc += s[j] * v[(j * Hkv + hk) * D + e];
                y[(t * Hq + h) * D + e] = acc / l;
            }
        }
    }
}

void oracle_embedding(const double *table, const double *ids, double *out, int64_t V, int64_t n, int64_t D) {
    for (int64_t i = 0; i < n; i++) {
        int64_t id = (int64_t)ids[i];
        for (int64_t j = 0; j < D; j++) out[i * D + j] = id >= 0 && id < V ? table[id * D + j] : (double)NAN;
    }
}

double oracle_dot(const double *a, const double *b, int64_t n) {
    long double s = 0;
    for (int64_t i = 0; i < n; i++) s += (long double)a[i] * (long double)b[i];
    return (double)s;
}

/* ---- vector-Jacobian products ------------------------------------------------------ */

void oracle_vjp_unary(int kind, const double *x, const double *g, double *gx, int64_t n) {
    const double c = sqrt(2.0 / 3.14159265358979323846), a3 = 0.044715;
    for (int64_t i = 0; i < n; i++) {
        double v = x[i], d;
        if (kind == 0) { /* y = v/2 (1 + tanh u), u = c (v + a3 v^3) */
            double t = tanh(c * (v + a3 * v * v * v));
            d = 0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * c * (1.0 + 3.0 * a3 * v * v);
        } else if (kind == 1) { /* y = v Phi(v): Phi(v) + v phi(v) */
            d = 0.5 * (1.0 + erf(v / sqrt(2.0))) + v * exp(-0.5 * v * v) / sqrt(2.0 * 3.14159265358979323846);
        } else { /* y = v s(v): s (1 + v (1 - s)) */
            double s = 1.0 / (1.0 + exp(-v));
            d = s * (1.0 + v * (1.0 - s));
        }
        gx[i] = g[i] * d;
    }
}

void oracle_vjp_swiglu(const double *gate, const double *up, const double *g, double *ggate, double *gup,
                       int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        double s = 1.0 / (1.0 + exp(-gate[i]));
        ggate[i] = g[i] * up[i] * s * (1.0 + gate[i] * (1.0 - s));
        gup[i] = g[i] * gate[i] * s;
    }
}

void oracle_vjp_binary(const double *a, const double *b, const double *g, double *ga, double *gb, int64_t n,
                       int64_t cols, int op) {
    int64_t nb = cols ? cols : n;
    for (int64_t i = 0; i < nb; i++) gb[i] = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t j = cols ? i % cols : i;
        ga[i] = op == 0 ? g[i] : g[i] * b[j];
        gb[j] += op == 0 ? g[i] : g[i] * a[i];
    }
}

void oracle_vjp_softmax(const double *x, const double *g, double *gx, int64_t rows, int64_t R, int64_t L,
                        double scale, int causal, int64_t off) {
    double *y = gx; /* y first, then overwritten row by row */
    oracle_softmax(x, y, rows, R, L, scale, causal, off);
    for (int64_t r = 0; r < rows; r++) {
        double dot = 0;
        for (int64_t j = 0; j < L; j++) dot += g[r * L + j] * y[r * L + j];
        for (int64_t j = 0; j < L; j++) /* masked entries have y = 0, so gradient 0 */
            gx[r * L + j] = scale * y[r * L + j] * (g[r * L + j] - dot);
    }
}

void oracle_vjp_rmsnorm(const double *x, const double *w, const double *g, double *gx, double *gw, int64_t rows,
                        int64_t L, double eps) {
    for (int64_t j = 0; j < L; j++) gw[j] = 0;
    for (int64_t r = 0; r < rows; r++) {
        const double *xr = x + r * L, *gr = g + r * L;
        double ss = 0, gwx = 0;
        for (int64_t j = 0; j < L; j++) {
            ss += xr[j] * xr[j];
            gwx += gr[j] * w[j] * xr[j];
        }
        double inv = 1.0 / sqrt(ss / (double)L + eps);
        for (int64_t j = 0; j < L; j++) {
            gx[r * L + j] = inv * w[j] * gr[j] - xr[j] * inv * inv * inv * gwx / (double)L;
            gw[j] += gr[j] * xr[j] * inv;
        }
    }
}

void oracle_vjp_matmul(const double *a, const double *b, const double *g, double *ga, double *gb, double *gc0,
                       int64_t batch_a, int64_t batch_b, int64_t batch, int64_t M, int64_t N, int64_t K, int ta,
                       int tb, double alpha, double beta) {
    for (int64_t i = 0; i < batch_a * M * K; i++) ga[i] = 0;
    for (int64_t i = 0; i < batch_b * K * N; i++) gb[i] = 0;
    for (int64_t bi = 0; bi < batch; bi++) {
        const double *ab = a + (batch_a == 1 ? 0 : bi) * M * K, *bb = b + (batch_b == 1 ? 0 : bi) * K * N;
        double *gab = ga + (batch_a == 1 ? 0 : bi) * M * K, *gbb = gb + (batch_b == 1 ? 0 : bi) * K * N;
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                double gv = alpha * g[(bi * M + m) * N + n];
                for (int64_t k = 0; k < K; k++) {
                    int64_t ia = ta ? k * M + m : m * K + k, ib = tb ? n * K + k : k * N + n;
                    gab[ia] += gv * bb[ib];
                    gbb[ib] += gv * ab[ia];
                }
            }
    }
    if (gc0)
        for (int64_t i = 0; i < batch * M * N; i++) gc0[i] = beta * g[i];
}

void oracle_round_float(const double *x, double *y, int64_t n, int p, int emin, double max_finite) {
    for (int64_t i = 0; i < n; i++) {
        double v = x[i];
        if (isnan(v) || isinf(v) || v == 0) {
            y[i] = v;
            continue;
        }
        int e;
        frexp(v, &e); /* |v| = m 2^e, m in [0.5, 1): the leading bit is 2^(e-1) */
        int lead = e - 1 < emin ? emin : e - 1;
        double q = ldexp(1.0, lead - (p - 1)); /* the spacing of the target's values near v */
        double r = rint(v / q) * q;           /* rint: to nearest, ties to even (the default mode) */
        y[i] = fabs(r) > max_finite ? copysign(INFINITY, v) : r;
    }
}
