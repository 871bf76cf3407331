/*
 * pxl_matmul with f32 and f16 B: GPU against the CPU reference, at odd shapes
 * (1, primes, non-multiples of the 128x128x16 tile), both transposes,
 * alpha/beta, batches with broadcast, and matrix-vector products.
 *
 * Tolerance (a normalized error): for each output,
 *   |gpu - cpu| <= 8 * (sqrt(K) + 4) * 2^-23 * (|alpha| * sum_k |a_mk b_kn| + |beta c_mn|).
 * Both sides sum K products in f32 in different orders; the worst-case bound is
 * K * 2^-24 of that scale, the typical one sqrt(K) * 2^-24; any indexing error
 * is of the order of the scale itself, far outside.
 */
#include "ops_common.h"

typedef struct {
    int64_t batch_a, batch_b, batch, M, N, K;
    int ta, tb;
    pxl_dtype bt;
    float alpha, beta;
} mm_case;

static void run_case(ops_ctx *o, const mm_case *c) {
    int64_t ar = c->ta ? c->K : c->M, ac = c->ta ? c->M : c->K;
    int64_t br = c->tb ? c->N : c->K, bc = c->tb ? c->K : c->N;
    int64_t sa[3] = {c->batch_a, ar, ac}, sb[3] = {c->batch_b, br, bc}, sc[3] = {c->batch, c->M, c->N};
    int64_t na = c->batch_a * ar * ac, nb = c->batch_b * br * bc, nc = c->batch * c->M * c->N;
    float *a = malloc((size_t)na * 4), *b = malloc((size_t)nb * 4), *c0 = malloc((size_t)nc * 4);
    uint16_t *bh = malloc((size_t)nb * 2);
    ops_fill(a, na, (uint32_t)(na * 3 + 1), -1.0f, 1.0f);
    ops_fill(b, nb, (uint32_t)(nb * 5 + 2), -1.0f, 1.0f);
    ops_fill(c0, nc, 77u, -1.0f, 1.0f);
    for (int64_t i = 0; i < nb; i++) {
        bh[i] = pxl_f32_to_f16(b[i]);
        if (c->bt == PXL_F16) b[i] = pxl_f16_to_f32(bh[i]); /* both sides see the same values */
    }
    pxl_matmul_options opt = {c->ta, c->tb, c->alpha, c->beta};
    float *r[2];
    pxl_ctx *ctx[2] = {o->cpu, o->gpu};
    for (int k = 0; k < 2; k++) {
        pxl_tensor *ta = ops_tensor(ctx[k], PXL_F32, 3, sa, a);
        pxl_tensor *tb = ops_tensor(ctx[k], c->bt, 3, sb, c->bt == PXL_F16 ? (void *)bh : (void *)b);
        pxl_tensor *tc = ops_tensor(ctx[k], PXL_F32, 3, sc, c0);
        pxl_status s = pxl_matmul(ctx[k], ta, tb, tc, &opt);
        CHECK_MSG(s == PXL_OK, "matmul: %s", pxl_ctx_error(ctx[k]));
        r[k] = ops_read(ctx[k], tc);
        pxl_tensor_free(ta);
        pxl_tensor_free(tb);
        pxl_tensor_free(tc);
    }
    /* per-output tolerance from the scale of its sum */
    int64_t bad = 0;
    for (int64_t bi = 0; bi < c->batch; bi++)
        for (int64_t m = 0; m < c->M; m++)
            for (int64_t n = 0; n < c->N; n++) {
                const float *ab = a + (c->batch_a == 1 ? 0 : bi) * c->M * c->K;
                const float *bb = b + (c->batch_b == 1 ? 0 : bi) * c->K * c->N;
                double scale = 0;
                for (int64_t k = 0; k < c->K; k++) {
                    double av = ab[c->ta ? k * c->M + m : m * c->K + k];
                    double bv = bb[c->tb ? n * c->K + k : k * c->N + n];
                    scale += fabs(av * bv);
                }
                int64_t i = (bi * c->M + m) * c->N + n;
                scale = fabs(c->alpha) * scale + fabs(c->beta * c0[i]);
                double tol = 8.0 * (sqrt((double)c->K) + 4.0) * (1.0 / 8388608.0) * scale + 1e-30;
                double d = fabs((double)r[0][i] - (double)r[1][i]);
                if (!(d <= tol)) {
                    if (bad < 5)
                        fprintf(stderr, "matmul b%lld %lldx%lldx%lld ta%d tb%d %s: [%lld,%lld,%lld] cpu %.9g gpu %.9g\n",
                                (long long)c->batch, (long long)c->M, (long long)c->N, (long long)c->K, c->ta,
                                c->tb, pxl_dtype_name(c->bt), (long long)bi, (long long)m, (long long)n,
                                (double)r[0][i], (double)r[1][i]);
                    bad++;
                }
            }
    if (bad) g_failures++;
    free(a), free(b), free(bh), free(c0), free(r[0]), free(r[1]);
}

static void bad_args(pxl_ctx *ctx) {
    int64_t s23[2] = {2, 3}, s34[2] = {3, 4}, s24[2] = {2, 4}, s44[2] = {4, 4};
    pxl_tensor *a = ops_tensor(ctx, PXL_F32, 2, s23, NULL), *b = ops_tensor(ctx, PXL_F32, 2, s34, NULL);
    pxl_tensor *c = ops_tensor(ctx, PXL_F32, 2, s24, NULL), *bad = ops_tensor(ctx, PXL_F32, 2, s44, NULL);
    pxl_tensor *ci = ops_tensor(ctx, PXL_I32, 2, s24, NULL);
    CHECK(pxl_matmul(ctx, a, b, c, NULL) == PXL_OK);
    CHECK(pxl_matmul(ctx, a, bad, c, NULL) == PXL_ERR_INVALID_ARG); /* K mismatch */
    CHECK(strstr(pxl_ctx_error(ctx), "K=") != NULL);
    CHECK(pxl_matmul(ctx, a, b, bad, NULL) == PXL_ERR_INVALID_ARG); /* C shape */
    CHECK(pxl_matmul(ctx, a, b, ci, NULL) == PXL_ERR_INVALID_ARG);  /* C dtype */
    CHECK(pxl_matmul(ctx, a, b, a, NULL) == PXL_ERR_INVALID_ARG);   /* aliasing */
    pxl_tensor_free(a), pxl_tensor_free(b), pxl_tensor_free(c), pxl_tensor_free(bad), pxl_tensor_free(ci);
}

int main(void) {
    ops_ctx o;
    if (!ops_open(&o)) return PXL_SKIP;
    static const int64_t dims[][3] = {{1, 1, 1},     {2, 3, 5},     {7, 13, 17},    {1, 7, 33},
                                      {1, 1000, 257}, {64, 64, 64}, {127, 129, 131}, {128, 128, 128},
                                      {256, 128, 48}, {33, 1, 70},   {5, 300, 1}};
    int n = 0;
    for (size_t d = 0; d < sizeof dims / sizeof dims[0]; d++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                mm_case c = {1, 1, 1, dims[d][0], dims[d][1], dims[d][2], ta, tb, PXL_F32, 1.0f, 0.0f};
                run_case(&o, &c);
                c.bt = PXL_F16;
                c.alpha = -0.5f;
                c.beta = (d % 2) ? 0.25f : 0.0f;
                run_case(&o, &c);
                n += 2;
            }
    /* batches, with A or B broadcast */
    mm_case batched[] = {
        {3, 3, 3, 17, 19, 23, 0, 0, PXL_F32, 1, 0},  {1, 4, 4, 33, 65, 40, 0, 1, PXL_F32, 2, 0.5f},
        {5, 1, 5, 130, 7, 64, 1, 0, PXL_F32, 1, 0},  {2, 2, 2, 1, 200, 96, 0, 1, PXL_F16, 1, 0},
        {3, 1, 3, 1, 50, 64, 0, 0, PXL_F32, 1, 1},
    };
    for (size_t i = 0; i < sizeof batched / sizeof batched[0]; i++, n++) run_case(&o, &batched[i]);
    /* one larger square, where tiling and K loop matter */
    mm_case big = {1, 1, 1, 512, 384, 1000, 0, 0, PXL_F32, 1, 0};
    run_case(&o, &big);
    bad_args(o.cpu);
    bad_args(o.gpu);
    fprintf(stderr, "%d matmul cases\n", n + 1);
    ops_close(&o);
    return test_result("test_ops_matmul");
}
