/*
 * Row-wise ops: softmax (scale, causal mask), RMSNorm, LayerNorm, argmax, top-k.
 * A row is the last dimension.
 *
 * CPU references: per row, sums in double (softmax denominators, sums of
 * squares, means and variances), threads over rows.
 *
 * GPU: one workgroup per row (the row index is the linear workgroup id of a
 * 2-D grid, so any number of rows works); each invocation walks the row with
 * stride WG, a tree reduction in workgroup memory combines the partials, and
 * a last strided pass writes the row. See rowwise.wgsl for the kernels.
 *
 * Softmax special values (both backends): z = scale * x is computed in f32;
 * -Inf entries give 0; a NaN or +Inf z among a row's unmasked entries makes
 * all of its unmasked outputs NaN (as exp(z - max) / sum would); masked
 * entries are 0 and never read.
 *
 * Value order used by argmax and top-k (both backends): NaN (any sign or
 * payload) is the largest value, -0 equals +0, and equal values rank by
 * lower index. It is implemented on both sides through the same 32-bit
 * order-preserving key (row_key below and okey in the WGSL). pxl_argmax_ext
 * with nan_lowest gives NaN the key 0, below every value's (-Inf's is
 * 0x007fffff).
 */
#include "ops_internal.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define RW_MAX_WG 256u
#define RW_TOPK_MAX 256
#define RW_TOPK_SMALL 256 /* rows up to this long use the rank-counting top-k kernel */

typedef struct {
    uint32_t rows, cols;
    float f;         /* softmax: scale; norms: eps */
    uint32_t causal; /* softmax: 1 if masking applies */
    uint32_t crows;  /* softmax: rows per causal matrix (R); argmax_part: elements a chunk */
    int32_t coff;    /* softmax: causal offset clamped to [-R, L - 1] */
    uint32_t k;      /* topk: k; layernorm: 1 if there is a bias; argmax: 1 if NaN ranks lowest */
    uint32_t ksort;  /* topk: the power of two >= k; argmax_part / _merge: chunks a row */
    uint32_t off[4]; /* element offsets of the views bound at 0..3 */
} rw_params;
_Static_assert(sizeof(rw_params) == 48, "mirrors struct Params in rowwise.wgsl");

/* ---- shared helpers ------------------------------------------------------------------- */

/* Order-preserving key: a larger key is a larger value; NaN above +Inf; -0 == +0. */
static uint32_t row_key(float v) {
    uint32_t b;
    memcpy(&b, &v, 4);
    if ((b & 0x7fffffffu) > 0x7f800000u) return 0xffffffffu;
    if (b == 0x80000000u) b = 0;
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

/* row_key with NaN below every value (key 0) */
static uint32_t row_key_nan_low(float v) {
    uint32_t b;
    memcpy(&b, &v, 4);
    if ((b & 0x7fffffffu) > 0x7f800000u) return 0;
    if (b == 0x80000000u) b = 0;
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

/* Rows per task so that a task touches at least ~32 Ki elements. */
static int64_t min_rows(int64_t cols) { return cols >= 32768 ? 1 : 32768 / cols; }

/* Workgroup size: a power of two in [32, 256] (fewer if the device says so),
 * about a quarter of the row length so short rows do not idle most lanes. */
uint32_t pxl_rowwise_wg(pxl_ctx *ctx, int64_t cols) {
    const pxl_gpu_info *gi = pxl_gpu_get_info(ctx);
    uint32_t lim = RW_MAX_WG;
    if (gi->max_invocations_per_workgroup < lim) lim = gi->max_invocations_per_workgroup;
    if (gi->max_workgroup_size[0] < lim) lim = gi->max_workgroup_size[0];
    uint32_t maxwg = 1;
    while (maxwg * 2 <= lim) maxwg *= 2;
    uint32_t wg = 32;
    while (wg < maxwg && (int64_t)wg * 4 < cols) wg *= 2;
    return wg < maxwg ? wg : maxwg;
}

/* x f32; y f32 of x's shape, writable, x itself or apart from it (in place). */
static pxl_status check_xy(pxl_ctx *ctx, const char *op, const pxl_tensor *x, const pxl_tensor *y) {
    pxl_status s;
    if ((s = pxl_check_dtype(ctx, op, "x", x, PXL_F32)) != PXL_OK) return s;
    if ((s = pxl_check_dtype(ctx, op, "y", y, PXL_F32)) != PXL_OK) return s;
    if ((s = pxl_check_output(ctx, op, "y", y)) != PXL_OK) return s;
    if ((s = pxl_check_same_shape(ctx, op, "x", x, "y", y)) != PXL_OK) return s;
    return pxl_check_overlap(ctx, op, "y", y, "x", x, 1);
}

/* A per-row weight vector: f32 with L elements, apart from the output. */
static pxl_status check_weight(pxl_ctx *ctx, const char *op, const char *name, const pxl_tensor *w,
                               const pxl_tensor *x, const pxl_tensor *y) {
    pxl_status s;
    if ((s = pxl_check_dtype(ctx, op, name, w, PXL_F32)) != PXL_OK) return s;
    if ((s = pxl_check_vec(ctx, op, name, w, pxl_t_cols(x))) != PXL_OK) return s;
    return pxl_check_overlap(ctx, op, "y", y, name, w, 0);
}

/* GPU kernels index with 32-bit integers. */
static pxl_status check_gpu_size(pxl_ctx *ctx, const char *op, const pxl_tensor *x) {
    if (x->nelem > INT32_MAX)
        return pxl_fail(ctx, PXL_ERR_UNSUPPORTED, "%s: more than 2^31-1 elements on the GPU", op);
    return PXL_OK;
}

/* Binds t[0..n) (the outputs are `writes`), puts their view offsets into p
 * and records one workgroup per row of x. */
static pxl_status rw_dispatch(pxl_ctx *ctx, const char *op, const char *entry, const pxl_tensor *x,
                              const pxl_tensor *const *t, size_t n, uint32_t writes, rw_params *p) {
    pxl_op_bindings b;
    pxl_status s = pxl_op_bind(ctx, op, t, n, writes, 0, &b);
    if (s != PXL_OK) return s;
    for (size_t i = 0; i < n; i++) p->off[i] = b.off[i];
    pxl_constant wg = {"WG", pxl_rowwise_wg(ctx, pxl_t_cols(x))};
    return pxl_op_dispatch(ctx, "rowwise.wgsl", pxl_wgsl_ops_rowwise, entry, &wg, 1, &b, p, sizeof *p,
                           (uint64_t)pxl_t_rows(x));
}

/* ---- softmax ------------------------------------------------------------------------------ */

typedef struct {
    const float *x;
    float *y;
    int64_t cols, crows, coff;
    float scale;
    int causal;
} sm_job;

static void softmax_rows(void *arg, int64_t lo, int64_t hi) {
    const sm_job *j = arg;
    const int64_t L = j->cols;
    for (int64_t r = lo; r < hi; r++) {
        const float *x = j->x + r * L;
        float *y = j->y + r * L;
        int64_t valid = L;
        if (j->causal) {
            int64_t v = r % j->crows + j->coff + 1;
            valid = v < 0 ? 0 : v > L ? L : v;
        }
        float m = -FLT_MAX;
        int bad = 0, any = 0;
        for (int64_t i = 0; i < valid; i++) {
            float z = j->scale * x[i];
            if (isnan(z) || z == INFINITY) bad = 1;
            else if (z != -INFINITY) {
                any = 1;
                if (z > m) m = z;
            }
        }
        if (bad) {
            for (int64_t i = 0; i < valid; i++) y[i] = NAN;
        } else if (!any) {
            for (int64_t i = 0; i < valid; i++) y[i] = 0.0f;
        } else {
            double sum = 0;
            for (int64_t i = 0; i < valid; i++) {
                float z = j->scale * x[i];
                if (z != -INFINITY) sum += exp((double)z - (double)m);
            }
            for (int64_t i = 0; i < valid; i++) {
                float z = j->scale * x[i];
                y[i] = z == -INFINITY ? 0.0f : (float)(exp((double)z - (double)m) / sum);
            }
        }
        for (int64_t i = valid; i < L; i++) y[i] = 0.0f;
    }
}

pxl_status pxl_softmax(pxl_ctx *ctx, const pxl_tensor *x, pxl_tensor *y, float scale, int causal,
                       int64_t causal_offset) {
    static const char op[] = "pxl_softmax";
    PXL_REQUIRE_CTX(ctx);
    pxl_status s = check_xy(ctx, op, x, y);
    if (s != PXL_OK) return s;
    int64_t L = pxl_t_cols(x);
    int64_t R = x->ndim >= 2 ? x->shape[x->ndim - 2] : 1;
    /* Clamp the offset to [-R, L - 1]: any offset below masks every column of
     * every row, any offset above masks none. */
    int64_t off = causal_offset < -R ? -R : causal_offset > L - 1 ? L - 1 : causal_offset;
    if (!pxl_on_gpu(ctx)) {
        sm_job j = {x->host, y->host, L, R, off, scale, causal != 0};
        pxl_parallel_range(ctx, pxl_t_rows(x), min_rows(L), softmax_rows, &j);
        return PXL_OK;
    }
    if ((s = check_gpu_size(ctx, op, x)) != PXL_OK) return s;
    rw_params p = {(uint32_t)pxl_t_rows(x), (uint32_t)L, scale, causal != 0, (uint32_t)R, (int32_t)off, 0, 0, {0}};
    const pxl_tensor *t[2] = {x, y};
    return rw_dispatch(ctx, op, "softmax", x, t, 2, 2u, &p);
}

/* ---- RMSNorm and LayerNorm ---------------------------------------------------------------------- */

typedef struct {
    const float *x, *w, *b;
    float *y;
    int64_t cols;
    float eps;
} norm_job;

static void rmsnorm_rows(void *arg, int64_t lo, int64_t hi) {
    const norm_job *j = arg;
    const int64_t L = j->cols;
    for (int64_t r = lo; r < hi; r++) {
        const float *x = j->x + r * L;
        float *y = j->y + r * L;
        double ss = 0;
        for (int64_t i = 0; i < L; i++) ss += (double)x[i] * (double)x[i];
        double inv = 1.0 / sqrt(ss / (double)L + (double)j->eps);
        for (int64_t i = 0; i < L; i++) y[i] = (float)((double)x[i] * inv * (double)j->w[i]);
    }
}

static void layernorm_rows(void *arg, int64_t lo, int64_t hi) {
    const norm_job *j = arg;
    const int64_t L = j->cols;
    for (int64_t r = lo; r < hi; r++) {
        const float *x = j->x + r * L;
        float *y = j->y + r * L;
        double sum = 0;
        for (int64_t i = 0; i < L; i++) sum += (double)x[i];
        double mean = sum / (double)L, var = 0;
        for (int64_t i = 0; i < L; i++) {
            double d = (double)x[i] - mean;
            var += d * d;
        }
        double rstd = 1.0 / sqrt(var / (double)L + (double)j->eps);
        for (int64_t i = 0; i < L; i++) {
            double v = ((double)x[i] - mean) * rstd * (double)j->w[i];
            if (j->b) v += (double)j->b[i];
            y[i] = (float)v;
        }
    }
}

static pxl_status check_eps(pxl_ctx *ctx, const char *op, float eps) {
    if (!(eps >= 0.0f))
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: eps is %g (must be >= 0)", op, (double)eps);
    return PXL_OK;
}

pxl_status pxl_rmsnorm(pxl_ctx *ctx, const pxl_tensor *x, const pxl_tensor *w, pxl_tensor *y,
                       float eps) {
    static const char op[] = "pxl_rmsnorm";
    PXL_REQUIRE_CTX(ctx);
    pxl_status s = check_xy(ctx, op, x, y);
    if (s == PXL_OK) s = check_weight(ctx, op, "w", w, x, y);
    if (s == PXL_OK) s = check_eps(ctx, op, eps);
    if (s != PXL_OK) return s;
    int64_t L = pxl_t_cols(x);
    if (!pxl_on_gpu(ctx)) {
        norm_job j = {x->host, w->host, NULL, y->host, L, eps};
        pxl_parallel_range(ctx, pxl_t_rows(x), min_rows(L), rmsnorm_rows, &j);
        return PXL_OK;
    }
    if ((s = check_gpu_size(ctx, op, x)) != PXL_OK) return s;
    rw_params p = {(uint32_t)pxl_t_rows(x), (uint32_t)L, eps, 0, 0, 0, 0, 0, {0}};
    const pxl_tensor *t[3] = {x, w, y};
    return rw_dispatch(ctx, op, "rmsnorm", x, t, 3, 4u, &p);
}

pxl_status pxl_layernorm(pxl_ctx *ctx, const pxl_tensor *x, const pxl_tensor *w,
                         const pxl_tensor *b, pxl_tensor *y, float eps) {
    static const char op[] = "pxl_layernorm";
    PXL_REQUIRE_CTX(ctx);
    pxl_status s = check_xy(ctx, op, x, y);
    if (s == PXL_OK) s = check_weight(ctx, op, "w", w, x, y);
    if (s == PXL_OK && b) s = check_weight(ctx, op, "b", b, x, y);
    if (s == PXL_OK) s = check_eps(ctx, op, eps);
    if (s != PXL_OK) return s;
    int64_t L = pxl_t_cols(x);
    if (!pxl_on_gpu(ctx)) {
        norm_job j = {x->host, w->host, b ? b->host : NULL, y->host, L, eps};
        pxl_parallel_range(ctx, pxl_t_rows(x), min_rows(L), layernorm_rows, &j);
        return PXL_OK;
    }
    if ((s = check_gpu_size(ctx, op, x)) != PXL_OK) return s;
    /* Without a bias, w is bound in its place too (two read-only bindings may share a buffer). */
    rw_params p = {(uint32_t)pxl_t_rows(x), (uint32_t)L, eps, 0, 0, 0, b != NULL, 0, {0}};
    const pxl_tensor *t[4] = {x, w, b ? b : w, y};
    return rw_dispatch(ctx, op, "layernorm", x, t, 4, 8u, &p);
}

/* ---- argmax and top-k ------------------------------------------------------------------------ */

static pxl_status check_index_range(pxl_ctx *ctx, const char *op, const pxl_tensor *x) {
    if (pxl_t_cols(x) > INT32_MAX)
        return pxl_fail(ctx, PXL_ERR_UNSUPPORTED, "%s: rows longer than 2^31-1 (indices are i32)", op);
    return PXL_OK;
}

typedef struct {
    const float *x;
    int32_t *idx;
    float *vals;
    int64_t cols;
    int k;
    int nan_lowest; /* argmax: row_key_nan_low */
} sel_job;

static void argmax_rows(void *arg, int64_t lo, int64_t hi) {
    const sel_job *j = arg;
    const int64_t L = j->cols;
    uint32_t (*key)(float) = j->nan_lowest ? row_key_nan_low : row_key;
    for (int64_t r = lo; r < hi; r++) {
        const float *x = j->x + r * L;
        uint32_t best = key(x[0]);
        int64_t bi = 0;
        for (int64_t i = 1; i < L; i++) {
            uint32_t k = key(x[i]);
            if (k > best) {
                best = k;
                bi = i;
            }
        }
        j->idx[r] = (int32_t)bi;
    }
}

/* A GPU argmax of few long rows (an LLM's logits: 32k to 152k of one row)
 * in one workgroup per row scans each row serially (about 35 us for 32,000
 * values on an H200): rows of at least ARGMAX_SPLIT_COLS, when there are at
 * most ARGMAX_SPLIT_ROWS, go in chunks of ARGMAX_CHUNK to workgroups of
 * their own (argmax_part), whose (key, index) pairs in scratch memory one
 * workgroup a row merges (argmax_merge). */
#define ARGMAX_SPLIT_COLS 4096
#define ARGMAX_SPLIT_ROWS 64
#define ARGMAX_CHUNK 1024u

static pxl_status argmax_split(pxl_ctx *ctx, const char *op, const pxl_tensor *x, pxl_tensor *idx, rw_params *p) {
    const pxl_tensor *t[2] = {x, idx};
    pxl_op_bindings b;
    pxl_status s = pxl_op_bind(ctx, op, t, 2, 2u, 0, &b);
    if (s != PXL_OK) return s;
    p->off[0] = b.off[0];
    p->off[1] = b.off[1];
    p->crows = ARGMAX_CHUNK;
    p->ksort = (uint32_t)((pxl_t_cols(x) + ARGMAX_CHUNK - 1) / ARGMAX_CHUNK);
    uint64_t parts = (uint64_t)p->rows * p->ksort, bytes = parts * 8u;
    uint32_t g1[2], g2[2];
    if ((s = pxl_op_grid(ctx, op, parts, g1)) != PXL_OK) return s;
    if ((s = pxl_op_grid(ctx, op, p->rows, g2)) != PXL_OK) return s;
    pxl_recorder *rec; /* after pxl_op_bind, which may submit a full stream */
    pxl_buffer *buf;
    if ((s = pxl_gpu_stream(ctx, &rec)) != PXL_OK) return s;
    if ((s = pxl_recorder_scratch(rec, (size_t)bytes, &buf)) != PXL_OK) return s;
    pxl_constant wg = {"WG", pxl_rowwise_wg(ctx, ARGMAX_CHUNK)};
    pxl_kernel *k;
    pxl_binding pb[2] = {b.b[0], {1, buf, 0, (size_t)(bytes + 15) / 16 * 16}};
    pb[0].binding = 0;
    if ((s = pxl_kernel_get_static(ctx, "rowwise.wgsl", pxl_wgsl_ops_rowwise, "argmax_part", &wg, 1, &k)) != PXL_OK)
        return s;
    pxl_dispatch d1 = {k, pb, 2, p, sizeof *p, 2, {g1[0], g1[1], 1}};
    if ((s = pxl_recorder_dispatch(rec, &d1)) != PXL_OK) return s;
    pxl_binding mb[2] = {{0, buf, 0, (size_t)(bytes + 15) / 16 * 16}, b.b[1]};
    mb[1].binding = 1;
    if ((s = pxl_kernel_get_static(ctx, "rowwise.wgsl", pxl_wgsl_ops_rowwise, "argmax_merge", &wg, 1, &k)) != PXL_OK)
        return s;
    pxl_dispatch d2 = {k, mb, 2, p, sizeof *p, 2, {g2[0], g2[1], 1}};
    return pxl_recorder_dispatch(rec, &d2);
}

pxl_status pxl_argmax(pxl_ctx *ctx, const pxl_tensor *x, pxl_tensor *idx) {
    return pxl_argmax_ext(ctx, x, idx, NULL);
}

pxl_status pxl_argmax_ext(pxl_ctx *ctx, const pxl_tensor *x, pxl_tensor *idx, const pxl_argmax_options *o) {
    static const char op[] = "pxl_argmax";
    PXL_REQUIRE_CTX(ctx);
    int nan_lowest = o && o->nan_lowest;
    pxl_status s = pxl_check_dtype(ctx, op, "x", x, PXL_F32);
    if (s == PXL_OK) s = pxl_check_dtype(ctx, op, "idx", idx, PXL_I32);
    if (s == PXL_OK) s = pxl_check_output(ctx, op, "idx", idx);
    if (s == PXL_OK) s = pxl_check_overlap(ctx, op, "idx", idx, "x", x, 0);
    if (s != PXL_OK) return s;
    int64_t rows = pxl_t_rows(x);
    if (idx->nelem != rows)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_argmax: idx has %lld elements, x has %lld rows",
                        (long long)idx->nelem, (long long)rows);
    if ((s = check_index_range(ctx, op, x)) != PXL_OK) return s;
    if (!pxl_on_gpu(ctx)) {
        sel_job j = {x->host, idx->host, NULL, pxl_t_cols(x), 1, nan_lowest};
        pxl_parallel_range(ctx, rows, min_rows(pxl_t_cols(x)), argmax_rows, &j);
        return PXL_OK;
    }
    if ((s = check_gpu_size(ctx, op, x)) != PXL_OK) return s;
    rw_params p = {(uint32_t)rows, (uint32_t)pxl_t_cols(x), 0, 0, 0, 0, (uint32_t)nan_lowest, 0, {0}};
    if (pxl_t_cols(x) >= ARGMAX_SPLIT_COLS && rows <= ARGMAX_SPLIT_ROWS) return argmax_split(ctx, op, x, idx, &p);
    const pxl_tensor *t[2] = {x, idx};
    return rw_dispatch(ctx, op, "argmax", x, t, 2, 2u, &p);
}

typedef struct {
    uint32_t key, idx;
} sel_ent;

/* a ranks before b: larger key, then lower index. */
static int ent_before(sel_ent a, sel_ent b) { return a.key > b.key || (a.key == b.key && a.idx < b.idx); }

static int ent_cmp(const void *pa, const void *pb) {
    const sel_ent *a = pa, *b = pb;
    return ent_before(*a, *b) ? -1 : ent_before(*b, *a) ? 1 : 0;
}

/* Min-heap on the rank order: the root is the last of the kept entries. */
static void heap_down(sel_ent *h, int n, int i) {
    for (;;) {
        int l = 2 * i + 1, r = l + 1, w = i;
        if (l < n && ent_before(h[w], h[l])) w = l;
        if (r < n && ent_before(h[w], h[r])) w = r;
        if (w == i) return;
        sel_ent t = h[i];
        h[i] = h[w];
        h[w] = t;
        i = w;
    }
}

static void heap_up(sel_ent *h, int i) {
    while (i > 0) {
        int p = (i - 1) / 2;
        if (!ent_before(h[p], h[i])) return;
        sel_ent t = h[i];
        h[i] = h[p];
        h[p] = t;
        i = p;
    }
}

static void topk_rows(void *arg, int64_t lo, int64_t hi) {
    const sel_job *j = arg;
    const int64_t L = j->cols;
    const int k = j->k;
    sel_ent h[RW_TOPK_MAX];
    for (int64_t r = lo; r < hi; r++) {
        const float *x = j->x + r * L;
        int n = 0;
        for (int64_t i = 0; i < L; i++) {
            sel_ent e = {row_key(x[i]), (uint32_t)i};
            if (n < k) {
                h[n] = e;
                heap_up(h, n++);
            } else if (ent_before(e, h[0])) {
                h[0] = e;
                heap_down(h, n, 0);
            }
        }
        qsort(h, (size_t)n, sizeof h[0], ent_cmp);
        for (int t = 0; t < k; t++) {
            j->vals[r * k + t] = x[h[t].idx];
            j->idx[r * k + t] = (int32_t)h[t].idx;
        }
    }
}

static pxl_status check_topk_out(pxl_ctx *ctx, const char *name, const pxl_tensor *t, pxl_dtype dt,
                                 int64_t rows, int k) {
    pxl_status s = pxl_check_dtype(ctx, "pxl_topk", name, t, dt);
    if (s != PXL_OK) return s;
    if (pxl_t_cols(t) != k || t->nelem != rows * k)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG,
                        "pxl_topk: %s has %lld elements in rows of %lld, expected %lld rows of k=%d", name,
                        (long long)t->nelem, (long long)pxl_t_cols(t), (long long)rows, k);
    return PXL_OK;
}

pxl_status pxl_topk(pxl_ctx *ctx, const pxl_tensor *x, int k, pxl_tensor *vals, pxl_tensor *idx) {
    static const char op[] = "pxl_topk";
    PXL_REQUIRE_CTX(ctx);
    pxl_status s = pxl_check_dtype(ctx, op, "x", x, PXL_F32);
    if (s == PXL_OK) s = pxl_check_tensor(ctx, op, "vals", vals);
    if (s == PXL_OK) s = pxl_check_tensor(ctx, op, "idx", idx);
    if (s != PXL_OK) return s;
    int64_t L = pxl_t_cols(x), rows = pxl_t_rows(x);
    if (k < 1 || k > RW_TOPK_MAX || k > L)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_topk: k=%d outside 1..min(L=%lld, %d)", k,
                        (long long)L, RW_TOPK_MAX);
    if ((s = check_topk_out(ctx, "vals", vals, PXL_F32, rows, k)) != PXL_OK) return s;
    if ((s = check_topk_out(ctx, "idx", idx, PXL_I32, rows, k)) != PXL_OK) return s;
    if ((s = pxl_check_output(ctx, op, "vals", vals)) != PXL_OK) return s;
    if ((s = pxl_check_output(ctx, op, "idx", idx)) != PXL_OK) return s;
    if ((s = pxl_check_overlap(ctx, op, "vals", vals, "x", x, 0)) != PXL_OK) return s;
    if ((s = pxl_check_overlap(ctx, op, "idx", idx, "x", x, 0)) != PXL_OK) return s;
    if ((s = pxl_check_overlap(ctx, op, "idx", idx, "vals", vals, 0)) != PXL_OK) return s;
    if ((s = check_index_range(ctx, op, x)) != PXL_OK) return s;
    if (!pxl_on_gpu(ctx)) {
        sel_job j = {x->host, idx->host, vals->host, L, k, 0};
        pxl_parallel_range(ctx, rows, min_rows(L), topk_rows, &j);
        return PXL_OK;
    }
    if ((s = check_gpu_size(ctx, op, x)) != PXL_OK) return s;
    uint32_t ksort = 1;
    while (ksort < (uint32_t)k) ksort *= 2;
    rw_params p = {(uint32_t)rows, (uint32_t)L, 0, 0, 0, 0, (uint32_t)k, ksort, {0}};
    const pxl_tensor *t[3] = {x, vals, idx};
    return rw_dispatch(ctx, op, L <= RW_TOPK_SMALL ? "topk_small" : "topk", x, t, 3, 6u, &p);
}
