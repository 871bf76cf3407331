/*
 * Row-wise ops (softmax, RMSNorm, LayerNorm, argmax, top-k): GPU against the
 * CPU reference, and argument checks on both backends.
 *
 * The CPU reference sums in double and evaluates exp/sqrt in double, so its
 * error is one final rounding; the bounds below are for the GPU's f32
 * arithmetic. u = 2^-24 (unit roundoff), n = ceil(L / 256) elements per lane
 * (rows longer than 512 run 256 lanes on the test adapters; shorter rows run
 * 32..128 lanes of at most 4 elements, inside the constant), and
 * B(L) = n + 32 counts the roundings. Observed (llvmpipe, SwiftShader, an
 * H100 on Vulkan): every difference is within 1/4 of its bound; about 1/4 to
 * 1/10 for rmsnorm, 1/10 to 1/20 for softmax, 1/100 for layernorm.
 *
 *  softmax, y = e^d / S with d = z - max <= 0 and z = scale * x:
 *    |gpu - cpu| <= 2^-23 + (B(L) + 2 Z) u |cpu|, Z = max |z| of the row.
 *    S is a sum of n non-negative f32 terms per lane, then 8 tree levels:
 *    relative error <= (n + 8) u, plus 3 ULP per exp (6 u) on the terms and
 *    the rescales; the output adds 3 ULP for exp(d), 3 ULP for 1/S and the
 *    product (12 u). WGSL's exp may be off by 2|d| ULP more, and d itself
 *    carries the rounding of z - max (|d| u): relative to y that is at most
 *    3 |d| e^d u / S <= (3/e) u absolute, inside the 2^-23 term (which also
 *    covers outputs that underflow or are flushed). A driver may fuse
 *    scale * x - max into an FMA, which moves d by up to |z| u: the 2 Z term.
 *    Masked entries, -Inf entries and whole masked/-Inf rows are exactly 0;
 *    NaN and +Inf make the row's unmasked entries NaN; classes compared exactly.
 *  rmsnorm, y = x * r * w with r = (sum x^2 / L + eps)^-1/2:
 *    |gpu - cpu| <= B(L) u |cpu| (+1e-30). The sum of squares of n terms
 *    per lane plus 8 tree levels: (n + 9) u; r halves that and adds 2 ULP
 *    (inverseSqrt), 2.5 ULP (the division by L) and the eps rounding; the two
 *    products add 2 u.
 *  layernorm, y = (x - mu) * r * w + b:
 *    |gpu - cpu| <= B(L) u (|cpu| + (1 + k) Wmax r Xmax) per row, where
 *    Xmax = max |x|, Wmax = max |w|, r = the row's 1/std and k = |mu| / std + 1
 *    its condition number. Welford's mean is off by at most (n + 8) u Xmax
 *    (an absolute error, scaled by r |w| in y); its variance by (n + 8) k u
 *    relative (so r by half that), which reaches y through |x - mu| r |w| <= 2
 *    Xmax r Wmax; the final operations round relative to their own terms.
 *  argmax, top-k: exact (indices equal; values bit-for-bit, NaN as NaN): they
 *    only compare. Order: NaN above +Inf, -0 == +0, ties by the lower index.
 */
#include "ops_common.h"

#include <float.h>

#define U (1.0 / 16777216.0)

static double bound_b(int64_t L) { return (double)((L + 255) / 256) + 32.0; }

/* Deterministic uniform in [0, 1). */
static uint32_t g_seed = 12345u;
static float urand(void) {
    g_seed = g_seed * 1664525u + 1013904223u;
    return (float)(g_seed >> 8) / 16777216.0f;
}

static int64_t prod(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    return n;
}

static const char *shape_name(int ndim, const int64_t *shape, char *buf, size_t cap) {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < ndim && used + 24 < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%lld", i ? "x" : "", (long long)shape[i]);
    return buf;
}

/* Both contexts' copies of one tensor. */
typedef struct {
    pxl_tensor *t[2];
} pair;

static pair make_pair(ops_ctx *o, pxl_dtype dt, int ndim, const int64_t *shape, const void *data) {
    pair p;
    p.t[0] = ops_tensor(o->cpu, dt, ndim, shape, data);
    p.t[1] = ops_tensor(o->gpu, dt, ndim, shape, data);
    return p;
}

static void free_pair(pair p) {
    pxl_tensor_free(p.t[0]);
    pxl_tensor_free(p.t[1]);
}

static pxl_ctx *ctx_of(ops_ctx *o, int k) { return k ? o->gpu : o->cpu; }

/* ---- softmax ------------------------------------------------------------------------- */

/* kind: 0 plain, 1 with -Inf entries and a NaN row and an all -Inf row and a +Inf row */
static void softmax_case(ops_ctx *o, int ndim, const int64_t *shape, float scale, int causal, int64_t off,
                         int kind) {
    int64_t n = prod(ndim, shape), L = shape[ndim - 1], rows = n / L;
    float *x = malloc((size_t)n * 4);
    for (int64_t i = 0; i < n; i++) x[i] = -8.0f + 16.0f * urand();
    if (kind == 1) {
        for (int64_t i = 0; i < n; i += 7) x[i] = -INFINITY;
        if (rows >= 4) {
            x[1 * L + L / 2] = NAN;                               /* row 1: NaN */
            for (int64_t i = 0; i < L; i++) x[2 * L + i] = -INFINITY; /* row 2: all -Inf */
            x[3 * L + L - 1] = INFINITY;                          /* row 3: +Inf */
        }
    }
    pair tx = make_pair(o, PXL_F32, ndim, shape, x), ty = make_pair(o, PXL_F32, ndim, shape, NULL);
    float *r[2];
    for (int k = 0; k < 2; k++) {
        pxl_status s = pxl_softmax(ctx_of(o, k), tx.t[k], ty.t[k], scale, causal, off);
        CHECK_MSG(s == PXL_OK, "softmax: %s", pxl_ctx_error(ctx_of(o, k)));
        r[k] = ops_read(ctx_of(o, k), ty.t[k]);
    }
    char sn[64], what[160];
    double z = 8.0 * fabs((double)scale);
    snprintf(what, sizeof what, "softmax %s scale=%g causal=%d off=%lld kind=%d",
             shape_name(ndim, shape, sn, sizeof sn), (double)scale, causal, (long long)off, kind);
    ops_compare(what, r[0], r[1], n, 1.0 / 8388608.0, (bound_b(L) + 2.0 * z) * U);
    /* properties of the reference itself: rows sum to 1 (or 0), masked entries are 0 */
    int64_t R = ndim >= 2 ? shape[ndim - 2] : 1, bad_rows = 0;
    for (int64_t row = 0; row < rows; row++) {
        int64_t valid = L;
        if (causal) {
            int64_t c = off < -R ? -R : off > L ? L : off; /* no overflow at INT64_MIN/MAX */
            int64_t v = row % R + c + 1;
            valid = v < 0 ? 0 : v > L ? L : v;
        }
        double sum = 0;
        int nan = 0, masked_nonzero = 0;
        for (int64_t j = 0; j < L; j++) {
            float v = r[0][row * L + j];
            if (isnan(v)) nan = 1;
            else sum += v;
            if (j >= valid && v != 0.0f) masked_nonzero = 1;
        }
        if (masked_nonzero || (!nan && fabs(sum - 1.0) > 1e-5 && sum != 0.0)) bad_rows++;
        if (kind == 1 && ((row == 1 && valid > L / 2) || (row == 3 && valid == L)) && !nan)
            bad_rows++; /* the NaN and +Inf rows must be NaN where those entries are unmasked */
        if (kind == 1 && row == 2 && sum != 0.0) bad_rows++; /* the all -Inf row is 0 */
    }
    CHECK_MSG(bad_rows == 0, "%s: %lld reference rows are wrong", what, (long long)bad_rows);
    free(r[0]);
    free(r[1]);
    free_pair(tx);
    free_pair(ty);
    free(x);
}

static void softmax_tests(ops_ctx *o) {
    static const int64_t lens[] = {1, 2, 31, 255, 256, 257, 1000, 4099, 65537};
    static const int64_t row_counts[] = {1, 3, 7, 13};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++)
        for (size_t r = 0; r < sizeof row_counts / sizeof row_counts[0]; r++) {
            if (lens[i] * row_counts[r] > 300000 && r > 1) continue;
            int64_t sh[2] = {row_counts[r], lens[i]};
            softmax_case(o, 2, sh, 1.0f, 0, 0, 0);
        }
    int64_t big[2] = {1024, 4096}, huge[1] = {1000000}, tall[2] = {70001, 3}, one[1] = {5};
    softmax_case(o, 2, big, 0.125f, 0, 0, 0);
    softmax_case(o, 1, huge, 1.0f, 0, 0, 0);
    softmax_case(o, 1, one, 1.0f, 0, 0, 0);
    softmax_case(o, 2, tall, 1.0f, 0, 0, 0); /* more rows than one grid dimension holds */
    /* scale, including negative and zero */
    int64_t s1[2] = {5, 300};
    softmax_case(o, 2, s1, 0.0883883f, 0, 0, 0);
    softmax_case(o, 2, s1, -2.0f, 0, 0, 0);
    softmax_case(o, 2, s1, 0.0f, 0, 0, 0);
    /* -Inf entries, a NaN row, an all -Inf row, a +Inf row */
    int64_t s2[2] = {6, 33}, s3[2] = {5, 4099};
    softmax_case(o, 2, s2, 1.0f, 0, 0, 1);
    softmax_case(o, 2, s3, 0.5f, 0, 0, 1);
    softmax_case(o, 2, s3, 1.0f, 1, 4095, 1);
    /* causal: [B, R, L] and [R, L] with offsets from "all masked" to "none masked" */
    int64_t c1[3] = {3, 17, 17}, c2[2] = {9, 40}, c3[4] = {2, 2, 5, 300}, c4[1] = {7}, c5[2] = {31, 1};
    int64_t offs[] = {0, 1, -1, -3, -17, -18, -1000000, 23, 16, 1000000, INT64_MAX, INT64_MIN};
    for (size_t i = 0; i < sizeof offs / sizeof offs[0]; i++) {
        softmax_case(o, 3, c1, 1.0f, 1, offs[i], 0);
        softmax_case(o, 2, c2, 0.7f, 1, offs[i], 1);
    }
    softmax_case(o, 2, c2, 1.0f, 1, 40 - 9, 0); /* the KV-cache case: offset = L - R */
    softmax_case(o, 4, c3, 0.25f, 1, 295, 0);
    softmax_case(o, 4, c3, 0.25f, 1, 2, 0);
    softmax_case(o, 1, c4, 1.0f, 1, 3, 0);
    softmax_case(o, 1, c4, 1.0f, 1, -1, 0);
    softmax_case(o, 2, c5, 1.0f, 1, -10, 0);
    int64_t c6[2] = {1100, 1100};
    softmax_case(o, 2, c6, 1.0f, 1, 0, 0);
}

/* ---- RMSNorm and LayerNorm ------------------------------------------------------------------ */

/* ops: 3 runs rmsnorm, layernorm, layernorm without b; 2 leaves out the last. */
static void norm_case(ops_ctx *o, int ndim, const int64_t *shape, float eps, float offset, float spread,
                      int specials, int ops) {
    int64_t n = prod(ndim, shape), L = shape[ndim - 1], rows = n / L;
    float *x = malloc((size_t)n * 4), *w = malloc((size_t)L * 4), *b = malloc((size_t)L * 4);
    for (int64_t i = 0; i < n; i++) x[i] = offset + spread * (2.0f * urand() - 1.0f);
    for (int64_t i = 0; i < L; i++) {
        w[i] = 2.0f * (2.0f * urand() - 1.0f);
        b[i] = 2.0f * urand() - 1.0f;
    }
    if (specials && rows >= 3) {
        for (int64_t i = 0; i < L; i++) x[i] = 0.0f;            /* row 0: zeros */
        for (int64_t i = 0; i < L; i++) x[L + i] = 1.5f;        /* row 1: constant */
        x[2 * L + L / 3] = NAN;                                 /* row 2: NaN */
    }
    pair tx = make_pair(o, PXL_F32, ndim, shape, x), ty = make_pair(o, PXL_F32, ndim, shape, NULL);
    pair tw = make_pair(o, PXL_F32, 1, &L, w), tb = make_pair(o, PXL_F32, 1, &L, b);
    char sn[64], what[160];
    shape_name(ndim, shape, sn, sizeof sn);
    double B = bound_b(L);
    for (int op = 0; op < ops; op++) {
        float *r[2];
        for (int k = 0; k < 2; k++) {
            pxl_ctx *c = ctx_of(o, k);
            pxl_status s = op == 0   ? pxl_rmsnorm(c, tx.t[k], tw.t[k], ty.t[k], eps)
                           : op == 1 ? pxl_layernorm(c, tx.t[k], tw.t[k], tb.t[k], ty.t[k], eps)
                                     : pxl_layernorm(c, tx.t[k], tw.t[k], NULL, ty.t[k], eps);
            CHECK_MSG(s == PXL_OK, "norm %d: %s", op, pxl_ctx_error(c));
            r[k] = ops_read(c, ty.t[k]);
        }
        snprintf(what, sizeof what, "%s %s eps=%g offset=%g", op == 0 ? "rmsnorm" : op == 1 ? "layernorm" : "layernorm(no b)",
                 sn, (double)eps, (double)offset);
        if (op == 0) {
            ops_compare(what, r[0], r[1], n, 1e-30, B * U);
        } else {
            double wmax = 0;
            for (int64_t i = 0; i < L; i++) wmax = fmax(wmax, fabs((double)w[i]));
            int64_t bad = 0;
            for (int64_t row = 0; row < rows && bad == 0; row++) {
                const float *xr = x + row * L;
                double mu = 0, var = 0, xmax = 0;
                for (int64_t i = 0; i < L; i++) mu += xr[i];
                mu /= (double)L;
                for (int64_t i = 0; i < L; i++) {
                    var += (xr[i] - mu) * (xr[i] - mu);
                    xmax = fmax(xmax, fabs((double)xr[i]));
                }
                var /= (double)L;
                double rstd = 1.0 / sqrt(var + (double)eps);
                double cond = fabs(mu) * rstd + 1.0;
                if (isnan(cond)) cond = 0;
                double abs_tol = B * U * (1.0 + cond) * wmax * rstd * xmax + 1e-30;
                char rw[200];
                snprintf(rw, sizeof rw, "%s row %lld", what, (long long)row);
                bad += ops_compare(rw, r[0] + row * L, r[1] + row * L, L, abs_tol, B * U);
            }
        }
        free(r[0]);
        free(r[1]);
    }
    free_pair(tx);
    free_pair(ty);
    free_pair(tw);
    free_pair(tb);
    free(x);
    free(w);
    free(b);
}

static void norm_tests(ops_ctx *o) {
    static const int64_t lens[] = {1, 2, 31, 255, 256, 257, 1000, 4099, 65537};
    static const int64_t row_counts[] = {1, 5, 11};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++)
        for (size_t r = 0; r < sizeof row_counts / sizeof row_counts[0]; r++) {
            if (lens[i] * row_counts[r] > 300000 && r > 0) continue;
            int64_t sh[2] = {row_counts[r], lens[i]};
            norm_case(o, 2, sh, 1e-5f, 0.0f, 3.0f, r == 1, 3);
        }
    int64_t big[2] = {1024, 4096}, huge[1] = {1000000}, s3[3] = {3, 7, 768}, tall[2] = {70001, 2};
    norm_case(o, 2, big, 1e-6f, 0.5f, 2.0f, 1, 3);
    norm_case(o, 1, huge, 1e-5f, 0.0f, 1.0f, 0, 3);
    norm_case(o, 3, s3, 0.1f, 0.0f, 1.0f, 1, 3);
    norm_case(o, 3, s3, 0.0f, 3.0f, 1.0f, 0, 3);   /* eps = 0 and an offset mean */
    norm_case(o, 3, s3, 1e-5f, -20.0f, 1.0f, 0, 3); /* |mean| = 20 std */
    norm_case(o, 2, tall, 1e-5f, 0.0f, 1.0f, 0, 2); /* more rows than one grid dimension holds */
}

/* ---- argmax and top-k ---------------------------------------------------------------------------- */

/* kind: 0 random, 1 few distinct values (ties), 2 ties + NaN/+-0/Inf specials, 3 ascending */
static void fill_select(float *x, int64_t rows, int64_t L, int kind) {
    for (int64_t r = 0; r < rows; r++) {
        float *xr = x + r * L;
        for (int64_t i = 0; i < L; i++) {
            switch (kind) {
            case 0: xr[i] = -100.0f + 200.0f * urand(); break;
            case 1: xr[i] = (float)(int)(urand() * 5.0f) - 2.0f; break;
            case 2: {
                float u = urand();
                xr[i] = u < 0.05f ? NAN : u < 0.1f ? -0.0f : u < 0.15f ? 0.0f : u < 0.2f ? INFINITY
                      : u < 0.25f ? -INFINITY : (float)(int)(urand() * 4.0f) - 2.0f;
                break;
            }
            default: xr[i] = (float)i * 0.5f - 3.0f; break;
            }
        }
        if (kind == 2 && r % 3 == 1)
            for (int64_t i = 0; i < L; i++) xr[i] = -INFINITY;                       /* all -Inf */
        if (kind == 2 && r % 3 == 2)
            for (int64_t i = 0; i < L; i++) xr[i] = (i % 2) ? 0.0f : -0.0f;           /* all zero, mixed sign */
        if (kind == 1 && r % 4 == 3)
            for (int64_t i = 0; i < L; i++) xr[i] = 7.0f;                            /* all equal */
    }
}

static void compare_i32(const char *what, const int32_t *want, const int32_t *got, int64_t n) {
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++)
        if (want[i] != got[i]) {
            if (bad < 5) fprintf(stderr, "%s: [%lld] cpu %d gpu %d\n", what, (long long)i, want[i], got[i]);
            bad++;
        }
    if (bad) {
        fprintf(stderr, "%s: %lld of %lld indices differ\n", what, (long long)bad, (long long)n);
        g_failures++;
    }
}

/* The reference against a brute-force check: idx[r] is a max and no earlier index ties it. */
static void check_argmax_ref(const char *what, const float *x, const int32_t *idx, int64_t rows, int64_t L) {
    int64_t bad = 0;
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * L;
        int64_t first_nan = -1;
        for (int64_t i = 0; i < L && first_nan < 0; i++)
            if (isnan(xr[i])) first_nan = i;
        int64_t want = 0;
        if (first_nan >= 0) want = first_nan;
        else
            for (int64_t i = 1; i < L; i++)
                if (xr[i] > xr[want]) want = i;
        if (idx[r] != want) bad++;
    }
    CHECK_MSG(bad == 0, "%s: %lld reference rows are wrong", what, (long long)bad);
}

static void select_case(ops_ctx *o, int ndim, const int64_t *shape, int kind, const int *ks, int nk) {
    int64_t n = prod(ndim, shape), L = shape[ndim - 1], rows = n / L;
    float *x = malloc((size_t)n * 4);
    fill_select(x, rows, L, kind);
    pair tx = make_pair(o, PXL_F32, ndim, shape, x);
    char sn[64], what[160];
    shape_name(ndim, shape, sn, sizeof sn);
    /* argmax, into [rows] */
    pair ti = make_pair(o, PXL_I32, 1, &rows, NULL);
    int32_t *ri[2];
    for (int k = 0; k < 2; k++) {
        pxl_status s = pxl_argmax(ctx_of(o, k), tx.t[k], ti.t[k]);
        CHECK_MSG(s == PXL_OK, "argmax: %s", pxl_ctx_error(ctx_of(o, k)));
        ri[k] = ops_read(ctx_of(o, k), ti.t[k]);
    }
    snprintf(what, sizeof what, "argmax %s kind=%d", sn, kind);
    compare_i32(what, ri[0], ri[1], rows);
    check_argmax_ref(what, x, ri[0], rows, L);
    free(ri[0]);
    free(ri[1]);
    free_pair(ti);
    /* top-k */
    for (int q = 0; q < nk; q++) {
        int kk = ks[q] > L ? (int)L : ks[q];
        int64_t osh[2] = {rows, kk};
        pair tv = make_pair(o, PXL_F32, 2, osh, NULL), tix = make_pair(o, PXL_I32, 2, osh, NULL);
        float *rv[2];
        int32_t *rx[2];
        for (int k = 0; k < 2; k++) {
            pxl_status s = pxl_topk(ctx_of(o, k), tx.t[k], kk, tv.t[k], tix.t[k]);
            CHECK_MSG(s == PXL_OK, "topk: %s", pxl_ctx_error(ctx_of(o, k)));
            rv[k] = ops_read(ctx_of(o, k), tv.t[k]);
            rx[k] = ops_read(ctx_of(o, k), tix.t[k]);
        }
        snprintf(what, sizeof what, "topk %s k=%d kind=%d", sn, kk, kind);
        compare_i32(what, rx[0], rx[1], rows * kk);
        ops_compare(what, rv[0], rv[1], rows * kk, 0.0, 0.0);
        /* the reference: values are x at the indices, in order, ties by index, first = argmax */
        int64_t bad = 0;
        for (int64_t r = 0; r < rows; r++) {
            for (int t = 0; t < kk; t++) {
                int32_t i = rx[0][r * kk + t];
                float v = rv[0][r * kk + t];
                if (i < 0 || i >= L || memcmp(&v, &x[r * L + i], 4) != 0) bad++;
                if (t > 0) {
                    float pv = rv[0][r * kk + t - 1];
                    int32_t pi = rx[0][r * kk + t - 1];
                    int ordered = isnan(pv) ? (!isnan(v) || pi < i) : (!isnan(v) && (pv > v || (pv == v && pi < i)));
                    if (!ordered) bad++;
                }
            }
        }
        CHECK_MSG(bad == 0, "%s: %lld reference entries are wrong", what, (long long)bad);
        free(rv[0]);
        free(rv[1]);
        free(rx[0]);
        free(rx[1]);
        free_pair(tv);
        free_pair(tix);
    }
    free_pair(tx);
    free(x);
}

static void select_tests(ops_ctx *o) {
    static const int64_t lens[] = {1, 2, 31, 255, 256, 257, 1000, 4099, 65537};
    static const int ks[] = {1, 2, 7, 64, 255, 256};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        int64_t sh[2] = {lens[i] > 5000 ? 2 : 7, lens[i]};
        for (int kind = 0; kind < 4; kind++) select_case(o, 2, sh, kind, ks, lens[i] > 5000 ? 3 : 6);
    }
    int64_t one[2] = {1, 300}, big[2] = {1024, 4096}, wide[2] = {64, 4096}, huge[1] = {1000000};
    int64_t s3[3] = {2, 3, 33}, tall[2] = {70001, 2};
    static const int kbig[] = {50, 1, 256};
    select_case(o, 2, one, 2, ks, 6);
    select_case(o, 3, s3, 1, ks, 6);
    select_case(o, 2, big, 0, kbig, 1);
    select_case(o, 2, wide, 1, kbig + 2, 1);
    select_case(o, 1, huge, 2, kbig, 3);
    select_case(o, 2, tall, 1, ks, 1); /* more rows than one grid dimension holds */
}

/* ---- bad arguments ------------------------------------------------------------------------------- */

static int names(pxl_ctx *ctx, const char *op) { return strstr(pxl_ctx_error(ctx), op) != NULL; }

static void bad_args(pxl_ctx *ctx, pxl_ctx *other) {
    int64_t s24[2] = {2, 4}, s25[2] = {2, 5}, s4[1] = {4}, s5[1] = {5}, s2[1] = {2}, s3[1] = {3};
    int64_t s2x3[2] = {2, 3}, s300[2] = {2, 300}, s2x257[2] = {2, 257}, s8[1] = {8};
    pxl_tensor *x = ops_tensor(ctx, PXL_F32, 2, s24, NULL), *y = ops_tensor(ctx, PXL_F32, 2, s24, NULL);
    pxl_tensor *y5 = ops_tensor(ctx, PXL_F32, 2, s25, NULL), *xi = ops_tensor(ctx, PXL_I32, 2, s24, NULL);
    pxl_tensor *w = ops_tensor(ctx, PXL_F32, 1, s4, NULL), *w5 = ops_tensor(ctx, PXL_F32, 1, s5, NULL);
    pxl_tensor *wh = ops_tensor(ctx, PXL_F16, 1, s4, NULL), *x8 = ops_tensor(ctx, PXL_F32, 1, s8, NULL);
    pxl_tensor *i2 = ops_tensor(ctx, PXL_I32, 1, s2, NULL), *i3 = ops_tensor(ctx, PXL_I32, 1, s3, NULL);
    pxl_tensor *f2 = ops_tensor(ctx, PXL_F32, 1, s2, NULL);
    pxl_tensor *v23 = ops_tensor(ctx, PXL_F32, 2, s2x3, NULL), *i23 = ops_tensor(ctx, PXL_I32, 2, s2x3, NULL);
    pxl_tensor *big = ops_tensor(ctx, PXL_F32, 2, s300, NULL), *b257 = ops_tensor(ctx, PXL_F32, 2, s2x257, NULL);
    pxl_tensor *alien = ops_tensor(other, PXL_F32, 2, s24, NULL);
    float zeros[8] = {0};
    pxl_tensor_write(ctx, x, zeros, sizeof zeros);
    pxl_tensor_write(ctx, x8, zeros, sizeof zeros);
    pxl_tensor_write(ctx, w, zeros, 16);

    /* softmax */
    CHECK(pxl_softmax(ctx, xi, y, 1.0f, 0, 0) == PXL_ERR_INVALID_ARG && names(ctx, "pxl_softmax"));
    CHECK(strstr(pxl_ctx_error(ctx), " x ") != NULL);
    CHECK(pxl_softmax(ctx, x, xi, 1.0f, 0, 0) == PXL_ERR_INVALID_ARG && names(ctx, "pxl_softmax"));
    CHECK(pxl_softmax(ctx, x, y5, 1.0f, 0, 0) == PXL_ERR_INVALID_ARG && names(ctx, "pxl_softmax"));
    CHECK(pxl_softmax(ctx, x, x, 1.0f, 0, 0) == PXL_OK); /* in place */
    CHECK(pxl_softmax(ctx, NULL, y, 1.0f, 0, 0) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_softmax(ctx, x, NULL, 1.0f, 1, 0) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_softmax(ctx, alien, y, 1.0f, 0, 0) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_softmax(NULL, x, y, 1.0f, 0, 0) == PXL_ERR_INVALID_ARG);
    /* rmsnorm */
    CHECK(pxl_rmsnorm(ctx, x, w5, y, 1e-5f) == PXL_ERR_INVALID_ARG && names(ctx, "pxl_rmsnorm"));
    CHECK(strstr(pxl_ctx_error(ctx), "w") != NULL);
    CHECK(pxl_rmsnorm(ctx, x, wh, y, 1e-5f) == PXL_ERR_INVALID_ARG && names(ctx, "pxl_rmsnorm"));
    CHECK(pxl_rmsnorm(ctx, xi, w, y, 1e-5f) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_rmsnorm(ctx, x, w, y5, 1e-5f) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_rmsnorm(ctx, x, w, x, 1e-5f) == PXL_OK); /* in place */
    CHECK(pxl_rmsnorm(ctx, x, NULL, y, 1e-5f) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_rmsnorm(ctx, x, w, y, -1.0f) == PXL_ERR_INVALID_ARG && names(ctx, "eps"));
    CHECK(pxl_rmsnorm(ctx, x, w, y, NAN) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_rmsnorm(ctx, w, w, y, 1e-5f) == PXL_ERR_INVALID_ARG); /* x [4] vs y [2, 4] */
    /* layernorm */
    CHECK(pxl_layernorm(ctx, x, w, w5, y, 1e-5f) == PXL_ERR_INVALID_ARG && names(ctx, "pxl_layernorm"));
    CHECK(strstr(pxl_ctx_error(ctx), "b ") != NULL);
    CHECK(pxl_layernorm(ctx, x, w, wh, y, 1e-5f) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_layernorm(ctx, x, w5, NULL, y, 1e-5f) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_layernorm(ctx, x, w, NULL, x, 1e-5f) == PXL_OK); /* in place */
    CHECK(pxl_layernorm(ctx, x, w, NULL, y5, 1e-5f) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_layernorm(ctx, x, w, NULL, y, -0.5f) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_layernorm(ctx, x, NULL, NULL, y, 1e-5f) == PXL_ERR_INVALID_ARG);
    /* argmax */
    CHECK(pxl_argmax(ctx, x, f2) == PXL_ERR_INVALID_ARG && names(ctx, "pxl_argmax"));
    CHECK(strstr(pxl_ctx_error(ctx), "idx") != NULL);
    CHECK(pxl_argmax(ctx, x, i3) == PXL_ERR_INVALID_ARG && names(ctx, "pxl_argmax"));
    CHECK(pxl_argmax(ctx, xi, i2) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_argmax(ctx, x, NULL) == PXL_ERR_INVALID_ARG);
    /* topk: x [2, 4] */
    CHECK(pxl_topk(ctx, x, 0, v23, i23) == PXL_ERR_INVALID_ARG && names(ctx, "pxl_topk"));
    CHECK(pxl_topk(ctx, x, 5, v23, i23) == PXL_ERR_INVALID_ARG && names(ctx, "pxl_topk")); /* k > L */
    CHECK(pxl_topk(ctx, x, -3, v23, i23) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_topk(ctx, x, 2, v23, i23) == PXL_ERR_INVALID_ARG && names(ctx, "vals"));   /* k != 3 */
    CHECK(pxl_topk(ctx, x, 3, i23, i23) == PXL_ERR_INVALID_ARG && names(ctx, "vals"));   /* dtype */
    CHECK(pxl_topk(ctx, x, 3, v23, v23) == PXL_ERR_INVALID_ARG && names(ctx, "idx"));    /* dtype */
    CHECK(pxl_topk(ctx, x, 4, x, i23) == PXL_ERR_INVALID_ARG);                            /* idx shape */
    CHECK(pxl_topk(ctx, xi, 3, v23, i23) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_topk(ctx, big, 257, v23, i23) == PXL_ERR_INVALID_ARG && names(ctx, "k=257"));
    CHECK(pxl_topk(ctx, b257, 257, v23, i23) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_topk(ctx, x, 3, NULL, i23) == PXL_ERR_INVALID_ARG);
    /* vals aliasing x: x8 [8] with k = 8 and vals = x8 */
    pxl_tensor *i8 = ops_tensor(ctx, PXL_I32, 1, s8, NULL);
    CHECK(pxl_topk(ctx, x8, 8, x8, i8) == PXL_ERR_INVALID_ARG && names(ctx, "pxl_topk"));
    /* the context still works, and the good calls succeed */
    CHECK(pxl_softmax(ctx, x, y, 1.0f, 1, 0) == PXL_OK);
    CHECK(pxl_rmsnorm(ctx, x, w, y, 1e-5f) == PXL_OK);
    CHECK(pxl_layernorm(ctx, x, w, NULL, y, 1e-5f) == PXL_OK);
    CHECK(pxl_argmax(ctx, x, i2) == PXL_OK);
    pxl_tensor *v24 = ops_tensor(ctx, PXL_F32, 2, s24, NULL), *i24 = ops_tensor(ctx, PXL_I32, 2, s24, NULL);
    CHECK(pxl_topk(ctx, x, 4, v24, i24) == PXL_OK);
    CHECK(pxl_finish(ctx) == PXL_OK);
    pxl_tensor *all[] = {x, y, y5, xi, w, w5, wh, x8, i2, i3, f2, v23, i23, big, b257, alien, i8, v24, i24};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) pxl_tensor_free(all[i]);
}

int main(void) {
    ops_ctx o;
    if (!ops_open(&o)) return PXL_SKIP;
    softmax_tests(&o);
    norm_tests(&o);
    select_tests(&o);
    bad_args(o.cpu, o.gpu);
    bad_args(o.gpu, o.cpu);
    ops_close(&o);
    return test_result("test_ops_rowwise");
}
