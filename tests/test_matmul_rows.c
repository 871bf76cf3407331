/*
 * The CPU's one-row matrix product against its tiled one (src/ops/matmul_cpu.c).
 *
 * Decoding a token multiplies one row of A; gemv_avx does that without the
 * tiled path's decoded chunk of B, and for these formats promises the tiled
 * path's floats value for value: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K (decoded in
 * registers, or through decode_avx), f16 and bf16. (Q8_0, Q4_0 and Q5_0 scale
 * a block's sums once and round differently; not checked here.) For each
 * format, with B [N = 37, K = 1280] (five K-quant blocks: a full 256-chunk
 * and more; rows of 37: tiles of 16 and a short one, the one-row product's
 * groups of 4 and lone rows), on 1 and 2 threads:
 *   - every row of a 5-row product, computed alone (M = 1), gives the same
 *     bits as its row in the 5-row product (M = 5: the tiled path);
 *   - 1 and 2 threads give the same bits.
 * On a machine without AVX2 both paths are the plain C code, and the
 * checks still hold. Exit 0 on success, 1 on a failure (each printed).
 */
#include "check.h"
#include "pxl/ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 37
#define K 1280
#define MR 5

static uint32_t g_seed = 12345u;
static float frand(void) {
    g_seed = g_seed * 1664525u + 1013904223u;
    return (float)(g_seed >> 8) / 16777216.0f - 0.5f;
}

static pxl_ctx *cpu_ctx(int threads) {
    pxl_ctx_options o = pxl_ctx_options_default();
    o.backend = PXL_BACKEND_CPU;
    o.n_threads = threads;
    o.quiet = 1;
    pxl_ctx *ctx = NULL;
    if (pxl_ctx_create(&o, &ctx) != PXL_OK) {
        pxl_ctx_free(ctx);
        return NULL;
    }
    return ctx;
}

/* c [M, N] = a [M, K] . B^T with B [N, K] of dtype dt from bq (bytes); 0 on success */
static int product(pxl_ctx *ctx, pxl_dtype dt, const float *a, int64_t M, const void *bq, size_t bytes, float *c) {
    int64_t sa[2] = {M, K}, sb[2] = {N, K}, sc[2] = {M, N};
    pxl_tensor *ta = NULL, *tb = NULL, *tc = NULL;
    pxl_matmul_options o = {0};
    o.trans_b = 1;
    int bad = pxl_tensor_create(ctx, PXL_F32, 2, sa, &ta) != PXL_OK ||
              pxl_tensor_create(ctx, dt, 2, sb, &tb) != PXL_OK || pxl_tensor_create(ctx, PXL_F32, 2, sc, &tc) != PXL_OK ||
              pxl_tensor_write(ctx, ta, a, (size_t)(M * K) * sizeof *a) != PXL_OK ||
              pxl_tensor_write(ctx, tb, bq, bytes) != PXL_OK || pxl_matmul(ctx, ta, tb, tc, &o) != PXL_OK ||
              pxl_tensor_read(ctx, tc, c, (size_t)(M * N) * sizeof *c) != PXL_OK;
    if (bad) fprintf(stderr, "matmul: %s\n", pxl_ctx_error(ctx));
    pxl_tensor_free(ta);
    pxl_tensor_free(tb);
    pxl_tensor_free(tc);
    return bad;
}

int main(void) {
    pxl_ctx *ctx[2] = {cpu_ctx(1), cpu_ctx(2)};
    if (!ctx[0] || !ctx[1]) {
        fprintf(stderr, "no CPU context\n");
        return 1;
    }
    const pxl_dtype types[] = {PXL_Q2_K, PXL_Q3_K, PXL_Q4_K, PXL_Q5_K, PXL_Q6_K, PXL_F16, PXL_BF16};
    static float b[N * K], a[MR * K], tiled[2][MR * N], alone[MR * N];
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        pxl_dtype dt = types[ti];
        for (int i = 0; i < N * K; i++) b[i] = frand() * (i % 31 == 0 ? 6.0f : 1.0f); /* a few large weights */
        for (int i = 0; i < MR * K; i++) a[i] = frand();
        size_t bytes = pxl_dtype_row_bytes(dt, K) * N;
        void *bq = malloc(bytes);
        if (!bq) return 1;
        pxl_status qs = PXL_OK;
        if (dt == PXL_F16) /* not a block format for pxl_quantize */
            for (int i = 0; i < N * K; i++) ((uint16_t *)bq)[i] = pxl_f32_to_f16(b[i]);
        else qs = pxl_quantize(ctx[0], dt, b, (int64_t)N * K, bq, bytes);
        CHECK_MSG(qs == PXL_OK, "%s: %s", pxl_dtype_name(dt), pxl_ctx_error(ctx[0]));
        for (int t = 0; t < 2; t++) {
            CHECK(product(ctx[t], dt, a, MR, bq, bytes, tiled[t]) == 0);
            for (int m = 0; m < MR; m++) CHECK(product(ctx[t], dt, a + m * K, 1, bq, bytes, alone + m * N) == 0);
            int diff = 0;
            for (int i = 0; i < MR * N; i++) diff += memcmp(&alone[i], &tiled[t][i], sizeof(float)) != 0;
            CHECK_MSG(diff == 0, "%s, %d thread(s): %d of %d outputs of one row alone differ from the tiled product's",
                      pxl_dtype_name(dt), t + 1, diff, MR * N);
        }
        CHECK_MSG(memcmp(tiled[0], tiled[1], sizeof tiled[0]) == 0, "%s: 1 and 2 threads differ", pxl_dtype_name(dt));
        free(bq);
    }
    pxl_ctx_free(ctx[0]);
    pxl_ctx_free(ctx[1]);
    if (g_failures) fprintf(stderr, "test_matmul_rows: %d check(s) failed\n", g_failures);
    return g_failures ? 1 : 0;
}
