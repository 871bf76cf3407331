/*
 * The CPU's one-row matrix product against its tiled one (src/ops/matmul_cpu.c).
 *
 * Decoding a token multiplies one row of A; gemv_avx does that without the
 * tiled path's decoded chunk of B, and for these formats promises the tiled
 * path's floats value for value: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K (decoded in
 * registers, or through decode_avx), f16 and bf16. (Q8_0, Q4_0 and Q5_0 scale
 * a block's sums once and round differently from the tiled path.) For each
 * format, with B [N = 37, K = 1280] (five K-quant blocks: a full 256-chunk
 * and more; rows of 37: tiles of 16 and a short one, the one-row product's
 * groups of 4 and lone rows), on 1 and 2 threads:
 *   - every row of a 13-row product, computed alone (M = 1), gives the same
 *     bits as its row in the 13-row product (M = 13: the tiled path, whose
 *     AVX-512 code takes tiles of 8, 4 and 1 rows of A);
 *   - 1 and 2 threads give the same bits, and so does the AVX2 code alone
 *     (cpu_avx512=0: where the CPU has AVX-512 the tiled product's tiles of
 *     8, 4 or 2 rows of A x 4 of B take kern_512_x4, and the one-row
 *     products of Q4_K, Q5_K, f16 and bf16 two rows a register), rows alone
 *     and tiled; f16 and bf16 also with K = 1284 (rows ending in a tail).
 * For Q8_0, Q4_0 and Q5_0, each row computed alone gives the same bits on 1
 * and 2 threads and with the AVX2 code alone (cpu_avx512=0: where the CPU
 * has AVX-512, the default takes it for these formats), and lies within
 * 1e-5 of sum |a_k b_k| of the tiled product.
 * On a machine without AVX2 (or with PXL_TUNE=cpu_simd=0, which test_ctx
 * reads) both paths are the plain C code, and the checks still hold. Exit 0
 * on success, 1 on a failure (each printed).
 */
#include "check.h"
#include "pxl/ops.h"
#include "test_ctx.h"
#include "test_matmul.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 37
#define K 1280
#define KMAX 1284
#define MR 13

static uint32_t g_seed = 12345u;
static float frand(void) {
    g_seed = g_seed * 1664525u + 1013904223u;
    return (float)(g_seed >> 8) / 16777216.0f - 0.5f;
}

int main(void) {
    pxl_ctx *ctx[2] = {test_ctx(PXL_BACKEND_CPU, 1), test_ctx(PXL_BACKEND_CPU, 2)};
    pxl_ctx *avx2 = test_ctx_tuned(PXL_BACKEND_CPU, 1, "cpu_avx512=0");
    if (!ctx[0] || !ctx[1] || !avx2) {
        fprintf(stderr, "no CPU context\n");
        return 1;
    }
    /* each format at K = 1280; f16 and bf16 also at 1284 (rows that end in
     * a tail of 4 values, taken one at a time after the 8 lanes) */
    const pxl_dtype types[] = {PXL_Q2_K, PXL_Q3_K, PXL_Q4_K, PXL_Q5_K, PXL_Q6_K, PXL_F16, PXL_BF16, PXL_F16, PXL_BF16};
    static float b[N * KMAX], a[MR * KMAX], tiled[3][MR * N], alone[MR * N];
    pxl_ctx *cx[3] = {ctx[0], ctx[1], avx2};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        pxl_dtype dt = types[ti];
        int KL = ti < 7 ? K : KMAX;
        for (int i = 0; i < N * KL; i++) b[i] = frand() * (i % 31 == 0 ? 6.0f : 1.0f); /* a few large weights */
        for (int i = 0; i < MR * KL; i++) a[i] = frand();
        size_t bytes = pxl_dtype_row_bytes(dt, KL) * N;
        void *bq = malloc(bytes);
        if (!bq) return 1;
        pxl_status qs = PXL_OK;
        if (dt == PXL_F16) /* not a block format for pxl_quantize */
            for (int i = 0; i < N * KL; i++) ((uint16_t *)bq)[i] = pxl_f32_to_f16(b[i]);
        else qs = pxl_quantize(ctx[0], dt, b, (int64_t)N * KL, bq, bytes);
        CHECK_MSG(qs == PXL_OK, "%s: %s", pxl_dtype_name(dt), pxl_ctx_error(ctx[0]));
        for (int t = 0; t < 3; t++) {
            CHECK(test_matmul_bt(cx[t], dt, a, bq, bytes, MR, N, KL, 0, tiled[t]) == 0);
            for (int m = 0; m < MR; m++) CHECK(test_matmul_bt(cx[t], dt, a + m * KL, bq, bytes, 1, N, KL, 0, alone + m * N) == 0);
            int diff = 0;
            for (int i = 0; i < MR * N; i++) diff += memcmp(&alone[i], &tiled[t][i], sizeof(float)) != 0;
            CHECK_MSG(diff == 0, "%s K=%d, %s: %d of %d outputs of one row alone differ from the tiled product's",
                      pxl_dtype_name(dt), KL, t == 2 ? "AVX2 alone" : t ? "2 threads" : "1 thread", diff, MR * N);
        }
        CHECK_MSG(memcmp(tiled[0], tiled[1], sizeof tiled[0]) == 0, "%s: 1 and 2 threads differ", pxl_dtype_name(dt));
        CHECK_MSG(memcmp(tiled[0], tiled[2], sizeof tiled[0]) == 0, "%s: the tiled product differs from the AVX2 code's",
                  pxl_dtype_name(dt));
        free(bq);
    }
    /* the 32-element formats' one-row product: AVX-512 (where the CPU has it) against AVX2 alone */
    const pxl_dtype small[] = {PXL_Q8_0, PXL_Q4_0, PXL_Q5_0};
    static float alone2[MR * N], alone3[MR * N];
    for (size_t ti = 0; avx2 && ti < sizeof small / sizeof small[0]; ti++) {
        pxl_dtype dt = small[ti];
        for (int i = 0; i < N * K; i++) b[i] = frand() * (i % 31 == 0 ? 6.0f : 1.0f);
        for (int i = 0; i < MR * K; i++) a[i] = frand();
        size_t bytes = pxl_dtype_row_bytes(dt, K) * N;
        void *bq = malloc(bytes);
        float *bd = malloc((size_t)N * K * sizeof *bd);
        if (!bq || !bd) return 1;
        CHECK(pxl_quantize(ctx[0], dt, b, (int64_t)N * K, bq, bytes) == PXL_OK);
        CHECK(pxl_dequantize(ctx[0], dt, bq, bytes, bd, (int64_t)N * K) == PXL_OK);
        CHECK(test_matmul_bt(ctx[0], dt, a, bq, bytes, MR, N, K, 0, tiled[0]) == 0);
        for (int m = 0; m < MR; m++) {
            CHECK(test_matmul_bt(ctx[0], dt, a + m * K, bq, bytes, 1, N, K, 0, alone + m * N) == 0);
            CHECK(test_matmul_bt(ctx[1], dt, a + m * K, bq, bytes, 1, N, K, 0, alone2 + m * N) == 0);
            CHECK(test_matmul_bt(avx2, dt, a + m * K, bq, bytes, 1, N, K, 0, alone3 + m * N) == 0);
        }
        int diff2 = 0, diff3 = 0, far = 0;
        for (int i = 0; i < MR * N; i++) {
            diff2 += memcmp(&alone[i], &alone2[i], sizeof(float)) != 0;
            diff3 += memcmp(&alone[i], &alone3[i], sizeof(float)) != 0;
            double mag = 0;
            for (int k = 0; k < K; k++) mag += fabs((double)a[(i / N) * K + k] * (double)bd[(i % N) * K + k]);
            far += fabs((double)alone[i] - (double)tiled[0][i]) > 1e-5 * mag;
        }
        CHECK_MSG(diff2 == 0, "%s: %d of %d one-row outputs differ between 1 and 2 threads", pxl_dtype_name(dt), diff2, MR * N);
        CHECK_MSG(diff3 == 0, "%s: %d of %d one-row outputs differ from the AVX2 code's", pxl_dtype_name(dt), diff3, MR * N);
        CHECK_MSG(far == 0, "%s: %d of %d one-row outputs off the tiled product by more than 1e-5 of sum |a b|",
                  pxl_dtype_name(dt), far, MR * N);
        free(bq);
        free(bd);
    }
    pxl_ctx_free(avx2);
    pxl_ctx_free(ctx[0]);
    pxl_ctx_free(ctx[1]);
    if (g_failures) fprintf(stderr, "test_matmul_rows: %d check(s) failed\n", g_failures);
    return g_failures ? 1 : 0;
}
