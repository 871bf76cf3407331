/*
 * Views, ranged writes and row copies, read-only tensors over caller memory,
 * and ops on views at unaligned offsets, on the CPU and (when there is one)
 * the GPU:
 *  - a view shares its base's memory, in both directions, and the memory
 *    lives until the last tensor over it is freed, in any order;
 *  - views refuse offsets off the dtype's unit and ranges outside the base;
 *  - writes and reads of f16 views whose edges are not on a word leave the
 *    neighbouring halves alone (GPU transfers move whole words);
 *  - pxl_copy: word-aligned copies, the byte-merging kernel for f16 views
 *    at odd elements, the same memory (a no-op), and overlap refused;
 *  - pxl_tensor_wrap: no copy, read-only for writes and ops, unsupported on
 *    a GPU context;
 *  - ops on views at offsets that are not a multiple of 16 bytes (so the GPU
 *    binds at a lower offset and the kernel adds the rest, or the input is
 *    copied to scratch for vec4 kernels), in place and next to their
 *    outputs in one buffer: the result equals the op on plain tensors, and
 *    the base's bytes outside the output view keep their sentinel.
 */
#include "check.h"
#include "test_ctx.h"

#include "pxl/ops.h"

#include <math.h>
#include <string.h>

#define SENTINEL 12345.0f

static pxl_tensor *mk(pxl_ctx *ctx, pxl_dtype dt, int nd, int64_t d0, int64_t d1, int64_t d2) {
    int64_t s[3] = {d0, d1, d2};
    pxl_tensor *t = NULL;
    CHECK_MSG(pxl_tensor_create(ctx, dt, nd, s, &t) == PXL_OK, "%s", pxl_ctx_error(ctx));
    return t;
}

static pxl_tensor *view(pxl_ctx *ctx, pxl_tensor *base, int nd, int64_t d0, int64_t d1, int64_t d2, size_t off) {
    int64_t s[3] = {d0, d1, d2};
    pxl_tensor *t = NULL;
    CHECK_MSG(pxl_tensor_view(ctx, base, nd, s, off, &t) == PXL_OK, "%s", pxl_ctx_error(ctx));
    return t;
}

static void fill(pxl_ctx *ctx, pxl_tensor *t, float v0, float step) {
    int64_t n = pxl_tensor_nelem(t);
    float *h = malloc((size_t)n * sizeof *h);
    for (int64_t i = 0; i < n; i++) h[i] = v0 + step * (float)(i % 97) - 0.37f * (float)(i % 13);
    CHECK(pxl_tensor_write(ctx, t, h, (size_t)n * sizeof *h) == PXL_OK);
    free(h);
}

static void fill_const(pxl_ctx *ctx, pxl_tensor *t, float v) {
    int64_t n = pxl_tensor_nelem(t);
    float *h = malloc((size_t)n * sizeof *h);
    for (int64_t i = 0; i < n; i++) h[i] = v;
    CHECK(pxl_tensor_write(ctx, t, h, (size_t)n * sizeof *h) == PXL_OK);
    free(h);
}

static float *rd(pxl_ctx *ctx, const pxl_tensor *t) {
    size_t n = pxl_tensor_bytes(t);
    float *h = malloc(n);
    CHECK_MSG(pxl_tensor_read(ctx, t, h, n) == PXL_OK, "%s", pxl_ctx_error(ctx));
    return h;
}

/* ---- the tensor API ----------------------------------------------------------- */

static void lifetime_and_bounds(pxl_ctx *ctx) {
    pxl_tensor *base = mk(ctx, PXL_F32, 2, 4, 6, 0);
    fill(ctx, base, 1.0f, 1.0f);
    float *want = rd(ctx, base);
    pxl_tensor *rows = NULL, *r2 = NULL, *flat = NULL;
    CHECK(pxl_tensor_slice(ctx, base, 1, 2, &rows) == PXL_OK);
    CHECK(pxl_tensor_dim(rows, 0) == 2 && pxl_tensor_dim(rows, 1) == 6 && pxl_tensor_offset(rows) == 24);
    int64_t s1[1] = {12};
    CHECK(pxl_tensor_reshape(ctx, rows, 1, s1, &flat) == PXL_OK);
    CHECK(pxl_tensor_slice(ctx, rows, 1, 1, &r2) == PXL_OK && pxl_tensor_offset(r2) == 48); /* offsets add up */
    pxl_tensor_free(base); /* the memory stays for the views */
    float *got = rd(ctx, flat);
    for (int i = 0; i < 12; i++) CHECK(got[i] == want[6 + i]);
    free(got);
    float one[6] = {-1, -2, -3, -4, -5, -6};
    CHECK(pxl_tensor_write(ctx, r2, one, sizeof one) == PXL_OK); /* seen through the other view */
    got = rd(ctx, flat);
    for (int i = 0; i < 6; i++) CHECK(got[6 + i] == one[i] && got[i] == want[6 + i]);
    free(got);
    pxl_tensor_free(rows);
    pxl_tensor_free(flat);
    pxl_tensor_free(r2);
    free(want);

    base = mk(ctx, PXL_F32, 1, 10, 0, 0);
    pxl_tensor *v = NULL;
    int64_t s4[1] = {4}, s11[1] = {11}, s3[1] = {3};
    CHECK(pxl_tensor_view(ctx, base, 1, s4, 24, &v) == PXL_OK); /* bytes 24..40: the end */
    pxl_tensor_free(v);
    v = NULL;
    CHECK(pxl_tensor_view(ctx, base, 1, s4, 28, &v) == PXL_ERR_INVALID_ARG && v == NULL); /* past the end */
    CHECK(pxl_tensor_view(ctx, base, 1, s4, 2, &v) == PXL_ERR_INVALID_ARG);               /* half an f32 */
    CHECK(strstr(pxl_ctx_error(ctx), "multiple of 4") != NULL);
    CHECK(pxl_tensor_view(ctx, base, 1, s11, 0, &v) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_tensor_reshape(ctx, base, 1, s3, &v) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_tensor_slice(ctx, base, 8, 3, &v) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_tensor_slice(ctx, base, -1, 1, &v) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_tensor_view(ctx, NULL, 1, s4, 0, &v) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_tensor_view(NULL, base, 1, s4, 0, &v) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_tensor_view(ctx, base, 1, NULL, 0, &v) == PXL_ERR_INVALID_ARG);
    pxl_tensor_free(base);

    /* a Q8_0 row slice: offsets in whole blocks */
    base = mk(ctx, PXL_Q8_0, 2, 3, 64, 0);
    int64_t sq[2] = {1, 64};
    CHECK(pxl_tensor_view(ctx, base, 2, sq, 68, &v) == PXL_OK); /* row 1 */
    pxl_tensor_free(v);
    CHECK(pxl_tensor_view(ctx, base, 2, sq, 4, &v) == PXL_ERR_INVALID_ARG);
    CHECK(strstr(pxl_ctx_error(ctx), "34") != NULL);
    pxl_tensor_free(base);
    /* getters on NULL */
    CHECK(pxl_tensor_nelem(NULL) == 0 && pxl_tensor_bytes(NULL) == 0 && pxl_tensor_buffer(NULL) == NULL);
}

/* f16 views at odd elements: the words they share with neighbours. */
static void f16_edges(pxl_ctx *ctx) {
    pxl_tensor *base = mk(ctx, PXL_F16, 1, 11, 0, 0);
    uint16_t all[11], part[5], got[11];
    for (int i = 0; i < 11; i++) all[i] = pxl_f32_to_f16((float)(100 + i));
    for (int i = 0; i < 5; i++) part[i] = pxl_f32_to_f16((float)(-1 - i));
    CHECK(pxl_tensor_write(ctx, base, all, sizeof all) == PXL_OK);
    pxl_tensor *v = view(ctx, base, 1, 5, 0, 0, 2 * 3); /* elements 3..7: both edges inside a word */
    CHECK(pxl_tensor_write(ctx, v, part, sizeof part) == PXL_OK);
    CHECK(pxl_tensor_read(ctx, base, got, sizeof got) == PXL_OK);
    for (int i = 0; i < 11; i++) CHECK(got[i] == (i >= 3 && i < 8 ? part[i - 3] : all[i]));
    uint16_t back[5];
    CHECK(pxl_tensor_read(ctx, v, back, sizeof back) == PXL_OK);
    CHECK(memcmp(back, part, sizeof back) == 0);
    pxl_tensor *one = view(ctx, base, 1, 1, 0, 0, 2 * 9); /* one half inside one word */
    uint16_t h = pxl_f32_to_f16(7.0f), h2 = 0;
    CHECK(pxl_tensor_write(ctx, one, &h, 2) == PXL_OK);
    CHECK(pxl_tensor_read(ctx, one, &h2, 2) == PXL_OK && h2 == h);
    CHECK(pxl_tensor_read(ctx, base, got, sizeof got) == PXL_OK);
    CHECK(got[8] == all[8] && got[9] == h && got[10] == all[10]);

    /* pxl_copy of f16 views at odd elements (the byte-merging kernel on a GPU) */
    pxl_tensor *dst = mk(ctx, PXL_F16, 1, 9, 0, 0);
    uint16_t d0[9];
    for (int i = 0; i < 9; i++) d0[i] = pxl_f32_to_f16((float)(-50 - i));
    CHECK(pxl_tensor_write(ctx, dst, d0, sizeof d0) == PXL_OK);
    pxl_tensor *dv = view(ctx, dst, 1, 5, 0, 0, 2 * 2); /* elements 2..6 */
    CHECK_MSG(pxl_copy(ctx, v, dv) == PXL_OK, "%s", pxl_ctx_error(ctx));
    uint16_t dg[9];
    CHECK(pxl_tensor_read(ctx, dst, dg, sizeof dg) == PXL_OK);
    for (int i = 0; i < 9; i++) CHECK_MSG(dg[i] == (i >= 2 && i < 7 ? part[i - 2] : d0[i]), "copy f16 at %d", i);
    /* overlapping views of one tensor are refused; the same memory is a no-op */
    pxl_tensor *v2 = view(ctx, base, 1, 5, 0, 0, 2 * 4);
    CHECK(pxl_copy(ctx, v, v2) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_copy(ctx, v, v) == PXL_OK);
    pxl_tensor *fl = mk(ctx, PXL_F32, 1, 5, 0, 0);
    CHECK(pxl_copy(ctx, v, fl) == PXL_ERR_INVALID_ARG); /* dtype */
    pxl_tensor_free(fl);
    pxl_tensor_free(v2);
    pxl_tensor_free(dv);
    pxl_tensor_free(dst);
    pxl_tensor_free(one);
    pxl_tensor_free(v);
    pxl_tensor_free(base);
}

/* Row copies: rows 1..2 of a [4, 6] f32 tensor into rows 2..3 of another (a KV-cache append). */
static void row_copy(pxl_ctx *ctx) {
    pxl_tensor *src = mk(ctx, PXL_F32, 2, 4, 6, 0), *dst = mk(ctx, PXL_F32, 3, 5, 2, 3);
    fill(ctx, src, 2.0f, 0.5f);
    fill_const(ctx, dst, SENTINEL);
    pxl_tensor *sv = NULL, *dv = NULL, *dvr = NULL;
    CHECK(pxl_tensor_slice(ctx, src, 1, 2, &sv) == PXL_OK);
    CHECK(pxl_tensor_slice(ctx, dst, 2, 2, &dv) == PXL_OK);
    int64_t s2[2] = {2, 6};
    CHECK(pxl_tensor_reshape(ctx, dv, 2, s2, &dvr) == PXL_OK);
    CHECK_MSG(pxl_copy(ctx, sv, dvr) == PXL_OK, "%s", pxl_ctx_error(ctx));
    float *s = rd(ctx, src), *d = rd(ctx, dst);
    for (int i = 0; i < 30; i++) CHECK(d[i] == (i >= 12 && i < 24 ? s[6 + i - 12] : SENTINEL));
    free(s);
    free(d);
    pxl_tensor_free(sv);
    pxl_tensor_free(dv);
    pxl_tensor_free(dvr);
    pxl_tensor_free(src);
    pxl_tensor_free(dst);
}

static void wrap(pxl_ctx *ctx) {
    static const float data[8] = {1, -2, 3, -4, 5, -6, 7, -8};
    int64_t s8[1] = {8};
    pxl_tensor *w = NULL;
    pxl_status st = pxl_tensor_wrap(ctx, PXL_F32, 1, s8, data, sizeof data, &w);
    if (pxl_ctx_backend(ctx) == PXL_BACKEND_GPU) {
        CHECK(st == PXL_ERR_UNSUPPORTED && w == NULL);
        return;
    }
    CHECK(st == PXL_OK && pxl_tensor_is_read_only(w));
    pxl_tensor *y = mk(ctx, PXL_F32, 1, 8, 0, 0);
    CHECK(pxl_silu(ctx, w, y) == PXL_OK);
    float *g = rd(ctx, y);
    CHECK(fabsf(g[0] - 1.0f / (1.0f + expf(-1.0f))) < 1e-6f);
    free(g);
    CHECK(pxl_silu(ctx, y, w) == PXL_ERR_INVALID_ARG); /* read-only output */
    CHECK(strstr(pxl_ctx_error(ctx), "read-only") != NULL);
    CHECK(pxl_tensor_write(ctx, w, data, sizeof data) == PXL_ERR_INVALID_ARG);
    pxl_tensor *wv = view(ctx, w, 1, 4, 0, 0, 16); /* views of it are read-only too */
    CHECK(pxl_tensor_is_read_only(wv) && pxl_copy(ctx, y, w) == PXL_ERR_INVALID_ARG);
    pxl_tensor_free(w); /* the caller's memory is never freed or written */
    g = rd(ctx, wv);
    CHECK(g[0] == 5.0f && g[3] == -8.0f);
    free(g);
    pxl_tensor_free(wv);
    pxl_tensor_free(y);
    CHECK(pxl_tensor_wrap(ctx, PXL_F32, 1, s8, data, 31, &w) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_tensor_wrap(ctx, PXL_F32, 1, s8, NULL, 32, &w) == PXL_ERR_INVALID_ARG);
}

/* ---- ops on views ---------------------------------------------------------------- */

/* The op under test, on plain tensors or views. */
typedef struct {
    pxl_tensor *in[4];
    pxl_tensor *out;
} operands;
typedef pxl_status (*op_fn)(pxl_ctx *ctx, operands *o);

static pxl_status op_silu(pxl_ctx *ctx, operands *o) { return pxl_silu(ctx, o->in[0], o->out); }
static pxl_status op_add_row(pxl_ctx *ctx, operands *o) { return pxl_add(ctx, o->in[0], o->in[1], o->out); }
static pxl_status op_softmax(pxl_ctx *ctx, operands *o) { return pxl_softmax(ctx, o->in[0], o->out, 0.7f, 1, 1); }
static pxl_status op_rmsnorm(pxl_ctx *ctx, operands *o) {
    return pxl_rmsnorm(ctx, o->in[0], o->in[1], o->out, 1e-5f);
}
static pxl_status op_matmul(pxl_ctx *ctx, operands *o) {
    pxl_matmul_options mo = {0, 1, 0, 0, 0};
    return pxl_matmul(ctx, o->in[0], o->in[1], o->out, &mo);
}
static pxl_status op_rope(pxl_ctx *ctx, operands *o) {
    return pxl_rope(ctx, o->in[0], o->out, 5, 10000.0f, PXL_ROPE_HALVES);
}
static pxl_status op_attention(pxl_ctx *ctx, operands *o) {
    return pxl_attention(ctx, o->in[0], o->in[1], o->in[2], o->out, 5, 0.5f);
}

typedef struct {
    const char *name;
    op_fn fn;
    int n_in;
    int nd[5];         /* inputs then output */
    int64_t shape[5][3];
    int in_place;      /* output is exactly input 0 (a view of the same base) */
} view_case;

/*
 * Runs c on ctx twice: on plain tensors, and on views that start 5 floats
 * (20 bytes) into bases of their own with sentinel margins on both sides (in
 * place: the output is a second view of input 0's base). The two results
 * must be equal bit for bit, and the output base's margins keep their
 * sentinel.
 */
static void run_view_case(pxl_ctx *ctx, const view_case *c) {
    operands plain = {{NULL}, NULL}, views = {{NULL}, NULL};
    pxl_tensor *bases[5] = {NULL};
    const int64_t margin = 5;
    for (int i = 0; i <= c->n_in; i++) {
        const int64_t *s = c->shape[i];
        int nd = c->nd[i];
        int64_t n = 1;
        for (int d = 0; d < nd; d++) n *= s[d];
        if (i == c->n_in && c->in_place) {
            views.out = view(ctx, bases[0], nd, s[0], s[1], s[2], (size_t)margin * 4);
            plain.out = plain.in[0]; /* in place in the plain run too */
            break;
        }
        pxl_tensor *p = mk(ctx, PXL_F32, nd, s[0], s[1], s[2]);
        int k = i == c->n_in ? 4 : i;
        if (i < c->n_in) fill(ctx, p, 0.1f * (float)(i + 1), 0.013f * (float)(i + 2));
        bases[k] = mk(ctx, PXL_F32, 1, n + 2 * margin, 0, 0);
        fill_const(ctx, bases[k], SENTINEL);
        pxl_tensor *v = view(ctx, bases[k], nd, s[0], s[1], s[2], (size_t)margin * 4);
        if (i < c->n_in) {
            CHECK(pxl_copy(ctx, p, v) == PXL_OK);
            plain.in[i] = p;
            views.in[i] = v;
        } else {
            plain.out = p;
            views.out = v;
        }
    }
    CHECK_MSG(c->fn(ctx, &plain) == PXL_OK, "%s plain: %s", c->name, pxl_ctx_error(ctx));
    CHECK_MSG(c->fn(ctx, &views) == PXL_OK, "%s views: %s", c->name, pxl_ctx_error(ctx));
    float *want = rd(ctx, plain.out), *got = rd(ctx, views.out);
    int64_t n = pxl_tensor_nelem(plain.out);
    for (int64_t i = 0; i < n; i++)
        if (!(want[i] == got[i] || (isnan(want[i]) && isnan(got[i])))) {
            CHECK_MSG(0, "%s on %s: view result [%lld] = %g, plain %g", c->name,
                      pxl_ctx_backend(ctx) == PXL_BACKEND_GPU ? "gpu" : "cpu", (long long)i, (double)got[i],
                      (double)want[i]);
            break;
        }
    free(want);
    free(got);
    pxl_tensor *ob = c->in_place ? bases[0] : bases[4];
    float *b = rd(ctx, ob);
    int64_t nb = pxl_tensor_nelem(ob);
    for (int64_t i = 0; i < nb; i++)
        if ((i < margin || i >= nb - margin) && b[i] != SENTINEL) {
            CHECK_MSG(0, "%s: byte outside the output view written (element %lld)", c->name, (long long)i);
            break;
        }
    free(b);
    for (int i = 0; i < 4; i++) {
        pxl_tensor_free(plain.in[i]);
        pxl_tensor_free(views.in[i]);
    }
    if (!c->in_place) pxl_tensor_free(plain.out); /* else it is plain.in[0] */
    pxl_tensor_free(views.out);
    for (int i = 0; i < 5; i++) pxl_tensor_free(bases[i]);
}

static const view_case k_cases[] = {
    {"silu", op_silu, 1, {2, 2}, {{3, 7}, {3, 7}}, 0},
    {"silu in place", op_silu, 1, {2, 2}, {{3, 7}, {3, 7}}, 1},
    {"add broadcast", op_add_row, 2, {2, 1, 2}, {{4, 6}, {6}, {4, 6}}, 0},
    {"softmax causal", op_softmax, 1, {2, 2}, {{5, 9}, {5, 9}}, 0},
    {"softmax in place", op_softmax, 1, {2, 2}, {{5, 9}, {5, 9}}, 1},
    {"rmsnorm", op_rmsnorm, 2, {2, 1, 2}, {{3, 33}, {33}, {3, 33}}, 0},
    {"matmul gemv", op_matmul, 2, {2, 2, 2}, {{1, 20}, {9, 20}, {1, 9}}, 0},
    {"matmul gemm", op_matmul, 2, {2, 2, 2}, {{6, 20}, {9, 20}, {6, 9}}, 0},
    {"rope", op_rope, 1, {3, 3}, {{3, 2, 8}, {3, 2, 8}}, 0},
    {"rope in place", op_rope, 1, {3, 3}, {{3, 2, 8}, {3, 2, 8}}, 1},
    {"attention", op_attention, 3, {3, 3, 3, 3}, {{2, 4, 8}, {7, 2, 8}, {7, 2, 8}, {2, 4, 8}}, 0},
};

/* Quantized B and embedding: the table is a view one Q8_0 row (34 bytes) into its base. */
static void quant_views(pxl_ctx *ctx) {
    const int64_t N = 5, K = 64;
    float w[6 * 64];
    for (int i = 0; i < 6 * 64; i++) w[i] = 0.01f * (float)((i * 37) % 101 - 50);
    size_t rb = pxl_dtype_row_bytes(PXL_Q8_0, K);
    uint8_t q[6 * 68];
    CHECK(pxl_quantize(ctx, PXL_Q8_0, w, 6 * K, q, 6 * rb) == PXL_OK);
    pxl_tensor *base = mk(ctx, PXL_Q8_0, 2, 6, K, 0), *plain = mk(ctx, PXL_Q8_0, 2, N, K, 0);
    CHECK(pxl_tensor_write(ctx, base, q, 6 * rb) == PXL_OK);
    CHECK(pxl_tensor_write(ctx, plain, q + rb, (size_t)N * rb) == PXL_OK);
    int64_t sb[2] = {N, K};
    pxl_tensor *bv = NULL;
    CHECK(pxl_tensor_view(ctx, base, 2, sb, rb, &bv) == PXL_OK); /* rows 1..5, 34 bytes in */
    pxl_tensor *a = mk(ctx, PXL_F32, 2, 2, K, 0), *abase = mk(ctx, PXL_F32, 1, 2 * K + 3, 0, 0);
    fill(ctx, a, -0.5f, 0.02f);
    pxl_tensor *av = view(ctx, abase, 2, 2, K, 0, 12); /* 3 floats in: copied to scratch for vec4 loads */
    CHECK(pxl_copy(ctx, a, av) == PXL_OK);
    pxl_tensor *c1 = mk(ctx, PXL_F32, 2, 2, N, 0), *c2 = mk(ctx, PXL_F32, 2, 2, N, 0);
    pxl_matmul_options mo = {0, 1, 0, 0, 0};
    CHECK_MSG(pxl_matmul(ctx, a, plain, c1, &mo) == PXL_OK, "%s", pxl_ctx_error(ctx));
    CHECK_MSG(pxl_matmul(ctx, av, bv, c2, &mo) == PXL_OK, "%s", pxl_ctx_error(ctx));
    float *g1 = rd(ctx, c1), *g2 = rd(ctx, c2);
    for (int i = 0; i < 2 * N; i++) CHECK_MSG(g1[i] == g2[i], "q8_0 matmul on views [%d]: %g vs %g", i, (double)g2[i], (double)g1[i]);
    free(g1);
    free(g2);
    /* embedding from the table view into an output view */
    int32_t ids[3] = {4, 0, 2};
    pxl_tensor *ti = mk(ctx, PXL_I32, 1, 3, 0, 0), *o1 = mk(ctx, PXL_F32, 2, 3, K, 0);
    pxl_tensor *obase = mk(ctx, PXL_F32, 1, 3 * K + 2, 0, 0);
    fill_const(ctx, obase, SENTINEL);
    pxl_tensor *ov = view(ctx, obase, 2, 3, K, 0, 4);
    CHECK(pxl_tensor_write(ctx, ti, ids, sizeof ids) == PXL_OK);
    CHECK(pxl_embedding(ctx, plain, ti, o1) == PXL_OK);
    CHECK_MSG(pxl_embedding(ctx, bv, ti, ov) == PXL_OK, "%s", pxl_ctx_error(ctx));
    g1 = rd(ctx, o1);
    g2 = rd(ctx, obase);
    for (int i = 0; i < 3 * K; i++) CHECK(g1[i] == g2[1 + i]);
    CHECK(g2[0] == SENTINEL && g2[3 * K + 1] == SENTINEL);
    free(g1);
    free(g2);
    pxl_tensor *list[] = {base, plain, bv, a, abase, av, c1, c2, ti, o1, obase, ov};
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) pxl_tensor_free(list[i]);
}

/* Views next to each other in one buffer: an output and inputs closer than
 * the device binds (the inputs go through scratch on a GPU). */
static void neighbours(pxl_ctx *ctx) {
    pxl_tensor *buf = mk(ctx, PXL_F32, 1, 30, 0, 0);
    fill(ctx, buf, 1.0f, 0.25f);
    float *before = rd(ctx, buf);
    pxl_tensor *x = view(ctx, buf, 1, 10, 0, 0, 0), *b = view(ctx, buf, 1, 10, 0, 0, 40),
               *y = view(ctx, buf, 1, 10, 0, 0, 80);
    CHECK_MSG(pxl_mul(ctx, x, b, y) == PXL_OK, "%s", pxl_ctx_error(ctx));
    float *after = rd(ctx, buf);
    for (int i = 0; i < 20; i++) CHECK(after[i] == before[i]);
    for (int i = 0; i < 10; i++) CHECK(after[20 + i] == before[i] * before[10 + i]);
    pxl_tensor *y2 = view(ctx, buf, 1, 10, 0, 0, 36);
    CHECK(pxl_mul(ctx, x, b, y2) == PXL_ERR_INVALID_ARG); /* overlaps b (and x) */
    free(before);
    free(after);
    pxl_tensor_free(x);
    pxl_tensor_free(b);
    pxl_tensor_free(y);
    pxl_tensor_free(y2);
    pxl_tensor_free(buf);
}

static void run_all(pxl_ctx *ctx) {
    lifetime_and_bounds(ctx);
    f16_edges(ctx);
    row_copy(ctx);
    wrap(ctx);
    for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) run_view_case(ctx, &k_cases[i]);
    quant_views(ctx);
    neighbours(ctx);
}

int main(void) {
    pxl_ctx *cpu = test_ctx(PXL_BACKEND_CPU, 0);
    run_all(cpu);
    pxl_ctx_free(cpu);
    pxl_ctx *gpu = test_gpu_ctx();
    if (gpu) {
        run_all(gpu);
        pxl_ctx_free(gpu);
    }
    return test_result("test_ops_views");
}
