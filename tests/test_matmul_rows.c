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
 * On a machine without AVX2 (or with PXL_TUNE=cpu_simd=0, which test_ctx
 * reads) both paths are the plain C code, and the checks still hold. Exit 0
 * on success, 1 on a failure (each printed).
 */
#include "check.h"
#include "pxl/ops.h"
#include "test_ctx.h"
#include "test_matmul.h"

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

int main(void) {
    pxl_ctx *ctx[2] = {test_ctx(PXL_BACKEND_CPU, 1), test_ctx(PXL_BACKEND_CPU, 2)};
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
            CHECK(test_matmul_bt(ctx[t], dt, a, bq, bytes, MR, N, K, 0, tiled[t]) == 0);
            for (int m = 0; m < MR; m++) CHECK(test_matmul_bt(ctx[t], dt, a + m * K, bq, bytes, 1, N, K, 0, alone + m * N) == 0);
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
