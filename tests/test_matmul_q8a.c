/*
 * pxl_matmul with a_q8 on the CPU (src/ops/matmul_cpu.c): A rounded to 8
 * bits per 32 values, multiplied in integers with Q8_0, Q4_0 and Q5_0 B,
 * and with Q4_K, Q5_K and Q6_K B for one row of A where the CPU has AVX2
 * (else A's rounding through the exact path).
 *
 * For each format and M in {1, 2, 5, 69} (one row, a pair, pairs and a
 * lone row, more than one block of 64 rows), K = 320 (a 256-chunk and a
 * shorter one; the K-quants: K = 512, two superblocks), N = 19 (tiles of
 * 16 and a short one: bands of four rows and single rows):
 *   - 1 thread, 2 threads, the plain C code (cpu_simd=0) and the AVX2 code
 *     alone (cpu_avx512=0; the default takes AVX-512 VNNI for one row of A
 *     where the CPU has it) give the same bits (the lanes are integer sums;
 *     scaling and lane sums are the same roundings in all). For the
 *     K-quants the plain C code takes A's rounding through the exact path,
 *     and the integer sums agree with it within 1e-5 of sum |a_k b_k| (the
 *     f32 roundings differ); the others give the same bits;
 *   - the result is within the rounding of A of the exact product: per output,
 *     |c - sum a_k b_k| <= sum over blocks of (max|a| / 254 + max|a| / 2048) sum |b_k|
 *     (half a step of max|a| / 127, and that step rounded to f16),
 *     plus 1e-5 of sum |a_k b_k| for the f32 sums (B as pxl_dequantize gives it);
 *   - a_q8 = 0 is the exact path: within 1e-5 of sum |a_k b_k|, and not
 *     the same bits as a_q8 = 1 (else the option would do nothing);
 *   - a_q8 = 2 gives a_q8 = 1's bits where the CPU multiplies in integers
 *     (Q8_0, Q4_0, Q5_0; the K-quants at M = 1 with AVX2, whose integer
 *     sums then differ in bits from plain C's exact path on A's rounding:
 *     so the integer path did run) and a_q8 = 0's elsewhere.
 * Exit 0 on success, 1 on a failure (each printed).
 */
#include "check.h"
#include "pxl/ops.h"
#include "test_ctx.h"
#include "test_matmul.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* whether pxl's CPU code takes its AVX2 path here (pxl_cpu_simd: AVX2, FMA
 * and F16C, which every AVX2 CPU has; not with PXL_TUNE=cpu_simd=0, which
 * test_ctx reads) */
static int cpu_avx2(void) {
    const char *t = getenv("PXL_TUNE");
    if (t && strstr(t, "cpu_simd=0")) return 0;
#if defined(__GNUC__) && defined(__x86_64__)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return 0;
#endif
}

static pxl_ctx *cpu_ctx(int threads, const char *tuning) { return test_ctx_tuned(PXL_BACKEND_CPU, threads, tuning); }

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float frand(void) { /* uniform in [-1, 1) */
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

int main(void) {
    pxl_ctx *c1 = cpu_ctx(1, NULL), *c2 = cpu_ctx(2, NULL), *cs = cpu_ctx(2, "cpu_simd=0");
    pxl_ctx *c5 = cpu_ctx(1, "cpu_avx512=0");
    if (!c1 || !c2 || !cs || !c5) {
        fprintf(stderr, "no CPU context\n");
        return 1;
    }
    const pxl_dtype types[6] = {PXL_Q8_0, PXL_Q4_0, PXL_Q5_0, PXL_Q4_K, PXL_Q5_K, PXL_Q6_K};
    const int64_t Ms[4] = {1, 2, 5, 69};
    const int64_t N = 19;
    for (int ti = 0; ti < 6; ti++)
        for (int mi = 0; mi < 4; mi++) {
            pxl_dtype dt = types[ti];
            int kquant = dt == PXL_Q4_K || dt == PXL_Q5_K || dt == PXL_Q6_K;
            int64_t M = Ms[mi], K = kquant ? 512 : 320;
            float *a = malloc((size_t)(M * K) * sizeof *a), *b = malloc((size_t)(N * K) * sizeof *b);
            float *bd = malloc((size_t)(N * K) * sizeof *bd);
            float *r1 = malloc((size_t)(M * N) * sizeof *r1), *r2 = malloc((size_t)(M * N) * sizeof *r2);
            float *rs = malloc((size_t)(M * N) * sizeof *rs), *re = malloc((size_t)(M * N) * sizeof *re);
            float *r5 = malloc((size_t)(M * N) * sizeof *r5), *rw = malloc((size_t)(M * N) * sizeof *rw);
            size_t bbytes = (size_t)N * (size_t)(K / 32) * (dt == PXL_Q8_0 ? 34u : dt == PXL_Q4_0 ? 18u : 22u);
            if (kquant) bbytes = (size_t)N * (size_t)(K / 256) * (dt == PXL_Q4_K ? 144u : dt == PXL_Q5_K ? 176u : 210u);
            void *bq = malloc(bbytes);
            if (!a || !b || !bd || !r1 || !r2 || !rs || !re || !r5 || !rw || !bq) return 1;
            for (int64_t i = 0; i < M * K; i++) a[i] = frand() * (i % 97 == 0 ? 8.0f : 1.0f); /* some outliers */
            for (int64_t i = 0; i < 32; i++) a[i] = 0.0f; /* an all-zero block */
            for (int64_t i = 0; i < N * K; i++) b[i] = frand();
            CHECK(pxl_quantize(c1, dt, b, N * K, bq, bbytes) == PXL_OK);
            CHECK(pxl_dequantize(c1, dt, bq, bbytes, bd, N * K) == PXL_OK);
            CHECK(test_matmul_bt(c1, dt, a, bq, bbytes, M, N, K, 1, r1) == 0);
            CHECK(test_matmul_bt(c2, dt, a, bq, bbytes, M, N, K, 1, r2) == 0);
            CHECK(test_matmul_bt(cs, dt, a, bq, bbytes, M, N, K, 1, rs) == 0);
            CHECK(test_matmul_bt(c5, dt, a, bq, bbytes, M, N, K, 1, r5) == 0);
            CHECK(test_matmul_bt(c1, dt, a, bq, bbytes, M, N, K, 0, re) == 0);
            CHECK(memcmp(r1, r2, (size_t)(M * N) * sizeof *r1) == 0);
            if (!kquant) CHECK(memcmp(r1, rs, (size_t)(M * N) * sizeof *r1) == 0);
            CHECK(memcmp(r1, r5, (size_t)(M * N) * sizeof *r1) == 0);
            CHECK(memcmp(r1, re, (size_t)(M * N) * sizeof *r1) != 0);
            /* a_q8 = 2: the rounding only where the CPU multiplies in integers */
            CHECK(test_matmul_bt(c1, dt, a, bq, bbytes, M, N, K, 2, rw) == 0);
            int ints = !kquant || (M == 1 && cpu_avx2());
            CHECK_MSG(memcmp(rw, ints ? r1 : re, (size_t)(M * N) * sizeof *rw) == 0, "%s M=%lld: a_q8 = 2 is not a_q8 = %d",
                      pxl_dtype_name(dt), (long long)M, ints);
            if (kquant && ints) CHECK_MSG(memcmp(r1, rs, (size_t)(M * N) * sizeof *r1) != 0,
                                          "%s M=1: the K-quants' integer path did not run", pxl_dtype_name(dt));
            double worst = 0; /* the largest error as a fraction of its bound */
            for (int64_t m = 0; m < M; m++)
                for (int64_t n = 0; n < N; n++) {
                    double exact = 0, mag = 0, round = 0;
                    for (int64_t k0 = 0; k0 < K; k0 += 32) {
                        double amax = 0, bsum = 0;
                        for (int64_t k = k0; k < k0 + 32; k++) {
                            double x = (double)a[m * K + k], y = (double)bd[n * K + k];
                            exact += x * y;
                            mag += fabs(x * y);
                            bsum += fabs(y);
                            if (fabs(x) > amax) amax = fabs(x);
                        }
                        round += (amax / 254.0 + amax / 2048.0) * bsum; /* half a step, and d's f16 rounding */
                    }
                    double eq = fabs((double)r1[m * N + n] - exact), ee = fabs((double)re[m * N + n] - exact);
                    double bound = round * 1.001 + 1e-5 * mag;
                    if (eq / bound > worst) worst = eq / bound;
                    CHECK(eq <= bound);
                    CHECK(ee <= 1e-5 * mag + 1e-30);
                    if (kquant) CHECK(fabs((double)r1[m * N + n] - (double)rs[m * N + n]) <= 1e-5 * mag + 1e-30);
                }
            printf("%s M=%lld: same bits for 1, 2 threads, AVX2 alone%s; error <= %.2f of the rounding bound\n",
                   pxl_dtype_name(dt), (long long)M, kquant ? ", plain C within 1e-5" : " and plain C", worst);
            free(a);
            free(b);
            free(bd);
            free(r1);
            free(r2);
            free(rs);
            free(re);
            free(r5);
            free(rw);
            free(bq);
        }
    pxl_ctx_free(c1);
    pxl_ctx_free(c2);
    pxl_ctx_free(cs);
    pxl_ctx_free(c5);
    return test_result("test_matmul_q8a");
}
