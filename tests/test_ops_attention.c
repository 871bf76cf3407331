/*
 * Causal grouped-query attention over a KV cache: GPU against the CPU reference.
 *
 * Tolerance: |gpu - cpu| <= 2e-5 absolute, with q, k, v in [-1, 1) (every
 * output is a convex combination of V entries, so |y| <= 1). The CPU works in
 * double. The GPU's error sources, relative to the softmax weights: the f32
 * score (q pre-scaled by scale * log2 e, a D-term f32 dot: a few 1e-7 in
 * log2 units for the scores here, |score| < 10), exp2 (WGSL allows 3 + 2|x|
 * ulp; hardware gives 1-2), and f32 sums of up to kv_len terms per output
 * (partial sums per invocation, then merges across slices and splits). A
 * relative error e in the weights moves a convex combination by at most
 * 2e * max|v|; the sums add ~1e-6 at 8192 keys. Observed worst (printed at
 * the end): 1.8e-7 on llvmpipe and on an H100, 2.4e-7 on SwiftShader; 2e-5
 * leaves room for exp2 implementations near the WGSL bound (~3e-6 relative
 * at |x| = 20, so up to ~6e-6 here).
 *
 * The caches hold more rows than kv_len and the rows past kv_len are NaN, so
 * any read of them would show. Specials: a NaN in a visible K row gives NaN
 * for every query that sees it and nothing for those that do not; a NaN in a
 * V entry gives NaN in that column only, for the queries that see it.
 * scale is never 1/sqrt(D).
 */
#include "ops_common.h"

#define TOL 2e-5

static double g_worst;

typedef struct {
    int64_t T, Hq, Hkv, D, kv_len, C;
    float scale;
} cfg;

static float *run_attn(pxl_ctx *ctx, const cfg *c, const float *q, const float *k, const float *v) {
    int64_t sq[3] = {c->T, c->Hq, c->D}, skv[3] = {c->C, c->Hkv, c->D};
    pxl_tensor *tq = ops_tensor(ctx, PXL_F32, 3, sq, q), *tk = ops_tensor(ctx, PXL_F32, 3, skv, k);
    pxl_tensor *tv = ops_tensor(ctx, PXL_F32, 3, skv, v), *ty = ops_tensor(ctx, PXL_F32, 3, sq, NULL);
    float *r = NULL;
    if (tq && tk && tv && ty) {
        pxl_status s = pxl_attention(ctx, tq, tk, tv, ty, c->kv_len, c->scale);
        CHECK_MSG(s == PXL_OK, "pxl_attention: %s", pxl_ctx_error(ctx));
        r = ops_read(ctx, ty);
    }
    pxl_tensor_free(tq);
    pxl_tensor_free(tk);
    pxl_tensor_free(tv);
    pxl_tensor_free(ty);
    return r;
}

static void make_inputs(const cfg *c, float **q, float **k, float **v) {
    int64_t nq = c->T * c->Hq * c->D, nkv = c->C * c->Hkv * c->D, valid = c->kv_len * c->Hkv * c->D;
    *q = malloc((size_t)nq * sizeof **q);
    *k = malloc((size_t)nkv * sizeof **k);
    *v = malloc((size_t)nkv * sizeof **v);
    uint32_t seed = (uint32_t)(c->T * 131 + c->kv_len * 7 + c->Hq * 3 + c->D);
    ops_fill(*q, nq, seed, -1.0f, 1.0f);
    ops_fill(*k, nkv, seed + 1, -1.0f, 1.0f);
    ops_fill(*v, nkv, seed + 2, -1.0f, 1.0f);
    for (int64_t i = valid; i < nkv; i++) (*k)[i] = (*v)[i] = NAN; /* never read */
}

static void compare(const cfg *c, const float *want, const float *got, const char *tag) {
    int64_t n = c->T * c->Hq * c->D;
    char what[160];
    snprintf(what, sizeof what, "attention%s T=%lld Hq=%lld Hkv=%lld D=%lld kv_len=%lld", tag, (long long)c->T,
             (long long)c->Hq, (long long)c->Hkv, (long long)c->D, (long long)c->kv_len);
    ops_compare(what, want, got, n, TOL, 0.0);
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)want[i] - (double)got[i]);
        if (d > g_worst && !isnan(d)) g_worst = d;
    }
}

static void one(ops_ctx *o, int64_t T, int64_t Hq, int64_t Hkv, int64_t D, int64_t kv_len) {
    cfg c = {T, Hq, Hkv, D, kv_len, kv_len + 3 + kv_len / 7, 0.75f / sqrtf((float)D) + 0.05f};
    float *q, *k, *v;
    make_inputs(&c, &q, &k, &v);
    float *want = run_attn(o->cpu, &c, q, k, v), *got = run_attn(o->gpu, &c, q, k, v);
    if (want && got) {
        int finite = 1;
        for (int64_t i = 0; i < T * Hq * D; i++) finite &= isfinite(want[i]) != 0;
        CHECK_MSG(finite, "CPU result not finite");
        compare(&c, want, got, "");
    }
    free(q);
    free(k);
    free(v);
    free(want);
    free(got);
}

/* NaN in K row 10 of KV head 1 and in V[12, head 0, column 5], prefill over 17 keys. */
static void specials(ops_ctx *o) {
    cfg c = {17, 8, 2, 64, 17, 20, 0.3f};
    float *q, *k, *v;
    make_inputs(&c, &q, &k, &v);
    k[(10 * c.Hkv + 1) * c.D + 3] = NAN;
    v[(12 * c.Hkv + 0) * c.D + 5] = NAN;
    float *r[2] = {run_attn(o->cpu, &c, q, k, v), run_attn(o->gpu, &c, q, k, v)};
    for (int b = 0; b < 2 && r[0] && r[1]; b++) {
        int ok = 1;
        for (int64_t t = 0; t < c.T; t++)
            for (int64_t h = 0; h < c.Hq; h++)
                for (int64_t d = 0; d < c.D; d++) {
                    float y = r[b][(t * c.Hq + h) * c.D + d];
                    int want_nan = (h >= 4 && t >= 10) || (h < 4 && t >= 12 && d == 5);
                    if ((isnan(y) != 0) != want_nan) ok = 0;
                }
        CHECK_MSG(ok, "%s: NaN pattern wrong", b ? "gpu" : "cpu");
    }
    if (r[0] && r[1]) compare(&c, r[0], r[1], " specials");
    free(r[0]);
    free(r[1]);
    free(q);
    free(k);
    free(v);
}

/* Many split calls in one stream, offset by one single-pass call, so the
 * stream's dispatch cap (4096) falls inside a call: its two passes must stay
 * in one submit with their scratch buffer. */
static void long_stream(ops_ctx *o) {
    cfg c = {1, 2, 1, 64, 300, 300, 0.2f}, c1 = {1, 2, 1, 64, 2, 300, 0.2f};
    float *q, *k, *v;
    make_inputs(&c, &q, &k, &v);
    float *want = run_attn(o->cpu, &c, q, k, v);
    int64_t sq[3] = {1, 2, 64}, skv[3] = {300, 1, 64};
    pxl_tensor *tq = ops_tensor(o->gpu, PXL_F32, 3, sq, q), *tk = ops_tensor(o->gpu, PXL_F32, 3, skv, k);
    pxl_tensor *tv = ops_tensor(o->gpu, PXL_F32, 3, skv, v), *ty = ops_tensor(o->gpu, PXL_F32, 3, sq, NULL);
    if (tq && tk && tv && ty && want) {
        pxl_status s = pxl_attention(o->gpu, tq, tk, tv, ty, c1.kv_len, c1.scale);
        for (int i = 0; i < 2100 && s == PXL_OK; i++) s = pxl_attention(o->gpu, tq, tk, tv, ty, c.kv_len, c.scale);
        CHECK_MSG(s == PXL_OK, "long stream: %s", pxl_ctx_error(o->gpu));
        float *got = ops_read(o->gpu, ty);
        compare(&c, want, got, " long stream");
        free(got);
    }
    pxl_tensor_free(tq);
    pxl_tensor_free(tk);
    pxl_tensor_free(tv);
    pxl_tensor_free(ty);
    free(want);
    free(q);
    free(k);
    free(v);
}

static void bad_args(pxl_ctx *ctx) {
    int64_t sq[3] = {2, 8, 16}, skv[3] = {6, 2, 16}, skv3[3] = {6, 3, 16}, skvd[3] = {6, 2, 8}, s2[2] = {16, 16};
    int64_t skv2[3] = {7, 2, 16};
    pxl_tensor *q = ops_tensor(ctx, PXL_F32, 3, sq, NULL), *k = ops_tensor(ctx, PXL_F32, 3, skv, NULL);
    pxl_tensor *v = ops_tensor(ctx, PXL_F32, 3, skv, NULL), *y = ops_tensor(ctx, PXL_F32, 3, sq, NULL);
    pxl_tensor *k3 = ops_tensor(ctx, PXL_F32, 3, skv3, NULL), *kd = ops_tensor(ctx, PXL_F32, 3, skvd, NULL);
    pxl_tensor *qi = ops_tensor(ctx, PXL_I32, 3, sq, NULL), *m2 = ops_tensor(ctx, PXL_F32, 2, s2, NULL);
    pxl_tensor *k2 = ops_tensor(ctx, PXL_F32, 3, skv2, NULL);
    CHECK(pxl_attention(ctx, q, k, v, y, 4, 0.25f) == PXL_OK);
    CHECK(pxl_attention(ctx, qi, k, v, y, 4, 0.25f) == PXL_ERR_INVALID_ARG);
    CHECK(strstr(pxl_ctx_error(ctx), "pxl_attention") && strstr(pxl_ctx_error(ctx), "q"));
    CHECK(pxl_attention(ctx, q, k, v, qi, 4, 0.25f) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_attention(ctx, m2, k, v, y, 4, 0.25f) == PXL_ERR_INVALID_ARG);  /* 2-D q */
    CHECK(pxl_attention(ctx, q, k3, k3, y, 4, 0.25f) == PXL_ERR_INVALID_ARG); /* 3 does not divide 8 */
    CHECK(strstr(pxl_ctx_error(ctx), "k") != NULL);
    CHECK(pxl_attention(ctx, q, kd, kd, y, 4, 0.25f) == PXL_ERR_INVALID_ARG); /* D differs */
    CHECK(pxl_attention(ctx, q, k, k2, y, 4, 0.25f) == PXL_ERR_INVALID_ARG);  /* k, v differ */
    CHECK(strstr(pxl_ctx_error(ctx), "v") != NULL);
    CHECK(pxl_attention(ctx, q, k, v, m2, 4, 0.25f) == PXL_ERR_INVALID_ARG);  /* y shape */
    CHECK(pxl_attention(ctx, q, k, v, y, 1, 0.25f) == PXL_ERR_INVALID_ARG);   /* kv_len < T */
    CHECK(strstr(pxl_ctx_error(ctx), "kv_len") != NULL);
    CHECK(pxl_attention(ctx, q, k, v, y, 7, 0.25f) == PXL_ERR_INVALID_ARG);   /* kv_len > C */
    CHECK(pxl_attention(ctx, q, k, v, y, 0, 0.25f) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_attention(ctx, q, k, v, q, 4, 0.25f) == PXL_ERR_INVALID_ARG);   /* y is q */
    CHECK(pxl_finish(ctx) == PXL_OK);
    pxl_tensor_free(q);
    pxl_tensor_free(k);
    pxl_tensor_free(v);
    pxl_tensor_free(y);
    pxl_tensor_free(k3);
    pxl_tensor_free(kd);
    pxl_tensor_free(qi);
    pxl_tensor_free(m2);
    pxl_tensor_free(k2);
}

int main(void) {
    ops_ctx o;
    if (!ops_open(&o)) return PXL_SKIP;
    const int64_t heads[4][2] = {{1, 1}, {8, 8}, {8, 2}, {32, 8}};
    const int64_t lens[] = {1, 2, 17, 256, 1000};
    for (int h = 0; h < 4; h++)
        for (int64_t D = 64; D <= 128; D *= 2) {
            int64_t Hq = heads[h][0], Hkv = heads[h][1];
            for (int l = 0; l < 5; l++) one(&o, 1, Hq, Hkv, D, lens[l]); /* decode */
            /* prefill: the whole prompt, and a chunk appended to a cache */
            one(&o, 2, Hq, Hkv, D, 2);
            one(&o, 17, Hq, Hkv, D, 17);
            one(&o, 5, Hq, Hkv, D, 256);
            one(&o, Hq >= 32 ? 64 : 256, Hq, Hkv, D, 256);
            one(&o, Hq >= 8 ? 16 : 100, Hq, Hkv, D, 1000);
        }
    /* long contexts (decode), and shapes off the vec4 path */
    one(&o, 1, 32, 8, 128, 8192);
    one(&o, 1, 8, 2, 64, 8192);
    one(&o, 1, 8, 8, 128, 8192);
    one(&o, 3, 4, 1, 256, 8192);
    one(&o, 7, 6, 3, 6, 40);
    one(&o, 1, 2, 1, 66, 300);
    one(&o, 9, 12, 4, 80, 300);
    one(&o, 1, 16, 2, 64, 300); /* more heads per KV head than a workgroup's rows */
    one(&o, 5, 8, 1, 128, 40);
    one(&o, 3, 8, 2, 96, 130); /* fewer vec4s per invocation so the value phase fits */
    specials(&o);
    long_stream(&o);
    bad_args(o.cpu);
    bad_args(o.gpu);
    fprintf(stderr, "largest |gpu - cpu|: %.3g (tolerance %.3g)\n", g_worst, TOL);
    ops_close(&o);
    return test_result("test_ops_attention");
}
