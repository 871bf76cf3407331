/*
 * GGUF Q8_0/Q4_0 and the K-quants Q4_K/Q6_K: the reference codecs on golden
 * blocks (bytes written by hand, values worked by hand from the layouts),
 * quantize/dequantize error bounds, quantized matrix products (pxl_matmul
 * with a quantized B, trans_b) and embedding lookups: GPU against the CPU
 * path, and the CPU path against a double-precision reference built on
 * pxl_dequantize.
 *
 * Tolerance for matrix products (a normalized error, as in test_ops_matmul):
 * for each output,
 *   |got - want| <= 8 * (sqrt(K) + 4) * 2^-23 * (|alpha| * sum_k |a_mk w_nk| + |beta c_mn|),
 * w the dequantized weights. For Q8_0/Q4_0 every d * q is exact in f32
 * (11 + 8 bits), so the two sides differ only in the order and grouping of K
 * f32 additions (the GPU applies d once per block, the CPU per block in f32
 * and across blocks in double): typical error sqrt(K) * 2^-24 of that scale,
 * worst K * 2^-24. The K-quants' weights are formed as on the CPU (one or two
 * roundings each, within the same bound). An indexing or decoding error is of
 * the order of the scale itself.
 * Embedding lookups are exact (bitwise equal) on both sides, except Q4_K's
 * (d * sc) * q - dmin * m, which a GPU may fuse into one rounding: within
 * 1e-6 there.
 */
#include "ops_common.h"

/* src/ops/ops_internal.h (not includable here: it needs the generated WGSL header) */
pxl_status pxl_matmul_quant(pxl_ctx *ctx, const pxl_tensor *a, const pxl_tensor *b, pxl_tensor *c,
                            const pxl_matmul_options *opts);

static pxl_ctx *g_cpu; /* for the host codecs */
static double g_matmul_s; /* seconds spent in GPU matmul cases, for the log */

/* ---- codecs: golden blocks ---------------------------------------------------- */

static void golden(void) {
    /* Q8_0: d = 0.5 (f16 0x3800), q = 0, 1, -1, 127, -128, then 2i - 31 for i >= 5 */
    uint8_t q8[34] = {0x00, 0x38, 0x00, 0x01, 0xff, 0x7f, 0x80};
    float want8[32] = {0.0f, 0.5f, -0.5f, 63.5f, -64.0f};
    for (int i = 5; i < 32; i++) {
        q8[2 + i] = (uint8_t)(int8_t)(2 * i - 31);
        want8[i] = 0.5f * (float)(2 * i - 31);
    }
    float got[64];
    CHECK(pxl_dequantize(g_cpu, PXL_Q8_0, q8, 34, got, 32) == PXL_OK);
    for (int i = 0; i < 32; i++) CHECK_MSG(got[i] == want8[i], "q8_0 golden [%d]: %g, want %g", i, got[i], want8[i]);

    /* Q4_0, two blocks. Block 0: d = 0.25 (0x3400), byte j = j | (15 - j) << 4,
     * so element j < 16 is (j - 8) * d and element 16 + j is (7 - j) * d.
     * Block 1: d = -1.5 (0xbe00), every byte 0x8f: low nibble 15 -> -10.5, high 8 -> -0. */
    uint8_t q4[36] = {0x00, 0x34};
    float want4[64];
    for (int j = 0; j < 16; j++) {
        q4[2 + j] = (uint8_t)(j | ((15 - j) << 4));
        want4[j] = 0.25f * (float)(j - 8);
        want4[16 + j] = 0.25f * (float)(7 - j);
    }
    q4[18] = 0x00;
    q4[19] = 0xbe;
    for (int j = 0; j < 16; j++) {
        q4[20 + j] = 0x8f;
        want4[32 + j] = -10.5f;
        want4[48 + j] = -0.0f;
    }
    CHECK(pxl_dequantize(g_cpu, PXL_Q4_0, q4, 36, got, 64) == PXL_OK);
    for (int i = 0; i < 64; i++) CHECK_MSG(got[i] == want4[i], "q4_0 golden [%d]: %g, want %g", i, got[i], want4[i]);

    /* a subnormal scale: d = 2^-24 (f16 0x0001), q = -3 */
    uint8_t sub[34] = {0x01, 0x00};
    for (int i = 0; i < 32; i++) sub[2 + i] = (uint8_t)(int8_t)-3;
    CHECK(pxl_dequantize(g_cpu, PXL_Q8_0, sub, 34, got, 32) == PXL_OK);
    CHECK_MSG(got[31] == -3.0f * 0x1p-24f, "q8_0 subnormal scale: %g", got[31]);

    /* Q4_K, one block: d = 0.5 (0x3800), dmin = 0.25 (0x3400); 6-bit scales
     * sc = 1, 2, 3, 4, 17, 33, 63, 0 and mins m = 0, 1, 2, 3, 20, 40, 63, 5, packed
     * by hand (bytes 0-3: sc[0..3] | high bits of sc[4..7] << 6; 4-7 the same for m;
     * 8-11: low nibbles of sc[4..7] | low nibbles of m[4..7] << 4); quant byte
     * 32p + l = (l % 16) | (15 - l % 16) << 4. Element 64p + l is
     * (d * sc[2p]) * (l % 16) - dmin * m[2p], element 64p + 32 + l is
     * (d * sc[2p + 1]) * (15 - l % 16) - dmin * m[2p + 1]. */
    static const uint8_t q4k_head[16] = {0x00, 0x38, 0x00, 0x34, 65, 130, 195, 4, 64, 129, 194, 3, 65, 129, 255, 80};
    static const int sc4[8] = {1, 2, 3, 4, 17, 33, 63, 0}, m4[8] = {0, 1, 2, 3, 20, 40, 63, 5};
    uint8_t q4k[144];
    memcpy(q4k, q4k_head, 16);
    for (int i = 0; i < 128; i++) q4k[16 + i] = (uint8_t)((i % 16) | ((15 - i % 16) << 4));
    float gk[256];
    CHECK(pxl_dequantize(g_cpu, PXL_Q4_K, q4k, 144, gk, 256) == PXL_OK);
    int bad = 0;
    for (int e = 0; e < 256; e++) {
        int sb = e / 32, l = e % 32, q = sb % 2 ? 15 - l % 16 : l % 16;
        float want = (0.5f * (float)sc4[sb]) * (float)q - 0.25f * (float)m4[sb];
        if (gk[e] != want && bad++ < 3) fprintf(stderr, "q4_k golden [%d]: %g, want %g\n", e, gk[e], want);
    }
    CHECK(bad == 0);
    /* a few by hand */
    CHECK(gk[5] == 2.5f && gk[40] == 6.75f && gk[131] == 20.5f && gk[180] == 171.5f && gk[209] == 15.75f &&
          gk[255] == -1.25f);

    /* Q6_K, one block: ql[i] = i, qh[i] = 37 i mod 256, scales j - 8, d = 0.125 (0x3000).
     * Worked by hand from the layout (x = (d * scale) * (q - 32)): */
    uint8_t q6k[210];
    for (int i = 0; i < 128; i++) q6k[i] = (uint8_t)i;
    for (int i = 0; i < 64; i++) q6k[128 + i] = (uint8_t)(i * 37);
    for (int j = 0; j < 16; j++) q6k[192 + j] = (uint8_t)(int8_t)(j - 8);
    q6k[208] = 0x00;
    q6k[209] = 0x30;
    CHECK(pxl_dequantize(g_cpu, PXL_Q6_K, q6k, 210, gk, 256) == PXL_OK);
    CHECK_MSG(gk[0] == 32.0f, "q6_k [0] = %g", gk[0]);       /* q 0 - 32, scale -8 */
    CHECK_MSG(gk[37] == -3.75f, "q6_k [37] = %g", gk[37]);   /* ql[37] & 15 = 5, qh[5] bits 2-3 = 2: q 37 - 32, scale -6 */
    CHECK_MSG(gk[100] == -0.5f, "q6_k [100] = %g", gk[100]); /* ql[36] >> 4 = 2, qh[4] bits 6-7 = 2: 34 - 32, scale -2 */
    CHECK_MSG(gk[200] == -14.0f, "q6_k [200] = %g", gk[200]); /* ql[72] >> 4 = 4, qh[40] bits 4-5 = 0: 4 - 32, scale 4 */
    CHECK_MSG(gk[255] == -21.875f, "q6_k [255] = %g", gk[255]); /* ql[127] >> 4 = 7, qh[63] bits 6-7 = 0: -25, scale 7 */

    /* the codecs refuse wrong sizes */
    CHECK(pxl_dequantize(g_cpu, PXL_Q4_K, q4k, 144, gk, 32) == PXL_ERR_INVALID_ARG); /* not a whole block */
    CHECK(pxl_quantize(g_cpu, PXL_Q6_K, gk, 256, q6k, 209) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_dequantize(g_cpu, PXL_Q8_0, q8, 33, got, 32) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_quantize(g_cpu, PXL_Q4_0, want4, 48, q4, 27) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_quantize(g_cpu, PXL_F32, want4, 32, q4, 128) == PXL_ERR_INVALID_ARG);
}

/* quantize -> dequantize stays within each block's bound:
 * Q8_0 |x - x'| <= 0.6 * amax / 127 (half a step plus the f16 rounding of d on 127 steps),
 * Q4_0 |x - x'| <= 1.01 * amax / 8 (a full step where +amax's side clamps at 15). */
static void round_trip(void) {
    enum { N = 32 * 64 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    uint8_t *q = malloc(34 * (N / 32));
    ops_fill(x, N, 12345u, -3.0f, 3.0f);
    for (int b = 0; b < N / 32; b++) /* vary the block scales over six decades (d stays a normal f16) */
        for (int i = 0; i < 32; i++) x[b * 32 + i] *= powf(10.0f, (float)(b % 6) - 2.0f);
    for (int i = 32; i < 64; i++) x[i] = 0.0f; /* an all-zero block */
    for (int f = 0; f < 2; f++) {
        pxl_dtype dt = f ? PXL_Q4_0 : PXL_Q8_0;
        size_t bytes = pxl_dtype_row_bytes(dt, N);
        CHECK(pxl_quantize(g_cpu, dt, x, N, q, bytes) == PXL_OK);
        CHECK(pxl_dequantize(g_cpu, dt, q, bytes, y, N) == PXL_OK);
        int bad = 0;
        for (int b = 0; b < N / 32; b++) {
            float amax = 0;
            for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(x[b * 32 + i]));
            double bound = f ? 1.01 * amax / 8.0 : 0.6 * amax / 127.0;
            for (int i = 0; i < 32; i++) {
                double e = fabs((double)x[b * 32 + i] - (double)y[b * 32 + i]);
                if (!(e <= bound)) {
                    if (bad++ < 3)
                        fprintf(stderr, "%s round trip [%d]: %g -> %g (bound %g)\n", pxl_dtype_name(dt), b * 32 + i,
                                (double)x[b * 32 + i], (double)y[b * 32 + i], bound);
                }
            }
        }
        if (bad) g_failures++;
    }
    /* K-quants (blocks of 256), per sub-block bounds:
     * Q4_K (32 elements, range r, max sub-block scale smax, max offset omax over the
     *   block): half a step of the scale rounded up, plus half a step of the offset:
     *   |x - x'| <= 0.5 (r / 15 + smax / 63) + 0.5 omax / 63;
     * Q6_K (16 elements, largest magnitude a, S = max a over the block / 31):
     *   half a step, plus up to 31 half steps of the scale's rounding at the clamp:
     *   |x - x'| <= 0.5 a / 31 + 16 S / 127. */
    for (int f = 0; f < 2; f++) {
        pxl_dtype dt = f ? PXL_Q6_K : PXL_Q4_K;
        size_t bytes = pxl_dtype_row_bytes(dt, N);
        CHECK(pxl_quantize(g_cpu, dt, x, N, q, bytes) == PXL_OK);
        CHECK(pxl_dequantize(g_cpu, dt, q, bytes, y, N) == PXL_OK);
        int bad = 0, sub = f ? 16 : 32;
        for (int b = 0; b < N / 256; b++) {
            float smax = 0, omax = 0, amaxb = 0;
            for (int j = 0; j < 256 / sub; j++) {
                float lo = 0, hi = 0, a = 0;
                for (int i = 0; i < sub; i++) {
                    float v = x[b * 256 + j * sub + i];
                    lo = fminf(lo, v), hi = fmaxf(hi, v), a = fmaxf(a, fabsf(v));
                }
                smax = fmaxf(smax, (hi - lo) / 15.0f), omax = fmaxf(omax, -lo), amaxb = fmaxf(amaxb, a);
            }
            for (int j = 0; j < 256 / sub; j++) {
                float lo = 0, hi = 0, a = 0;
                for (int i = 0; i < sub; i++) {
                    float v = x[b * 256 + j * sub + i];
                    lo = fminf(lo, v), hi = fmaxf(hi, v), a = fmaxf(a, fabsf(v));
                }
                double bound = f ? 0.5 * a / 31.0 + 16.0 * (amaxb / 31.0) / 127.0
                                 : 0.5 * ((hi - lo) / 15.0 + smax / 63.0) + 0.5 * omax / 63.0;
                bound = bound * 1.01 + 1e-30;
                for (int i = 0; i < sub; i++) {
                    int k = b * 256 + j * sub + i;
                    double e = fabs((double)x[k] - (double)y[k]);
                    if (!(e <= bound) && bad++ < 3)
                        fprintf(stderr, "%s round trip [%d]: %g -> %g (bound %g)\n", pxl_dtype_name(dt), k,
                                (double)x[k], (double)y[k], bound);
                }
            }
        }
        if (bad) g_failures++;
    }
    free(x), free(y), free(q);
}

/* ---- matrix products ------------------------------------------------------------------ */

typedef struct {
    int64_t batch_a, batch_b, batch, M, N, K;
    pxl_dtype bt;
    float alpha, beta;
} q_case;

/* Checks got against want with the header's tolerance; returns the number of misses. */
static int64_t q_compare(const char *what, const q_case *c, const float *a, const float *w, const float *c0,
                         const float *want, const float *got) {
    int64_t bad = 0;
    for (int64_t bi = 0; bi < c->batch; bi++)
        for (int64_t m = 0; m < c->M; m++)
            for (int64_t n = 0; n < c->N; n++) {
                const float *am = a + ((c->batch_a == 1 ? 0 : bi) * c->M + m) * c->K;
                const float *wn = w + ((c->batch_b == 1 ? 0 : bi) * c->N + n) * c->K;
                double scale = 0;
                for (int64_t k = 0; k < c->K; k++) scale += fabs((double)am[k] * (double)wn[k]);
                int64_t i = (bi * c->M + m) * c->N + n;
                scale = fabs(c->alpha) * scale + fabs((double)c->beta * c0[i]);
                double tol = 8.0 * (sqrt((double)c->K) + 4.0) * (1.0 / 8388608.0) * scale + 1e-30;
                double d = fabs((double)got[i] - (double)want[i]);
                if (!(d <= tol)) {
                    if (bad < 5)
                        fprintf(stderr, "%s b%lld(%lld,%lld) %lldx%lldx%lld %s a=%g b=%g: [%lld,%lld,%lld] want %.9g got %.9g\n",
                                what, (long long)c->batch, (long long)c->batch_a, (long long)c->batch_b,
                                (long long)c->M, (long long)c->N, (long long)c->K, pxl_dtype_name(c->bt),
                                (double)c->alpha, (double)c->beta, (long long)bi, (long long)m, (long long)n,
                                (double)want[i], (double)got[i]);
                    bad++;
                }
            }
    if (bad) g_failures++;
    return bad;
}

static void run_case(ops_ctx *o, const q_case *c) {
    int64_t sa[3] = {c->batch_a, c->M, c->K}, sb[3] = {c->batch_b, c->N, c->K}, sc[3] = {c->batch, c->M, c->N};
    int64_t na = c->batch_a * c->M * c->K, nw = c->batch_b * c->N * c->K, nc = c->batch * c->M * c->N;
    size_t qbytes = pxl_dtype_row_bytes(c->bt, nw);
    float *a = malloc((size_t)na * 4), *w = malloc((size_t)nw * 4), *c0 = malloc((size_t)nc * 4);
    float *ref = malloc((size_t)nc * 4);
    uint8_t *q = malloc(qbytes);
    ops_fill(a, na, (uint32_t)(na * 3 + 1), -1.0f, 1.0f);
    ops_fill(w, nw, (uint32_t)(nw * 5 + 2), -1.0f, 1.0f);
    ops_fill(c0, nc, 77u, -1.0f, 1.0f);
    CHECK(pxl_quantize(g_cpu, c->bt, w, nw, q, qbytes) == PXL_OK);
    CHECK(pxl_dequantize(g_cpu, c->bt, q, qbytes, w, nw) == PXL_OK); /* w: what B holds */
    /* double-precision reference */
    for (int64_t bi = 0; bi < c->batch; bi++)
        for (int64_t m = 0; m < c->M; m++)
            for (int64_t n = 0; n < c->N; n++) {
                const float *am = a + ((c->batch_a == 1 ? 0 : bi) * c->M + m) * c->K;
                const float *wn = w + ((c->batch_b == 1 ? 0 : bi) * c->N + n) * c->K;
                double s = 0;
                for (int64_t k = 0; k < c->K; k++) s += (double)am[k] * (double)wn[k];
                int64_t i = (bi * c->M + m) * c->N + n;
                ref[i] = (float)(c->alpha * s + (c->beta != 0.0f ? (double)c->beta * c0[i] : 0.0));
            }
    pxl_matmul_options opt = {0, 1, c->alpha, c->beta};
    float *r[2];
    pxl_ctx *ctx[2] = {o->cpu, o->gpu};
    for (int k = 0; k < 2; k++) {
        pxl_tensor *ta = ops_tensor(ctx[k], PXL_F32, 3, sa, a);
        pxl_tensor *tb = ops_tensor(ctx[k], c->bt, 3, sb, q);
        pxl_tensor *tc = ops_tensor(ctx[k], PXL_F32, 3, sc, c0);
        double t0 = pxl_time_now();
        pxl_status s = pxl_matmul(ctx[k], ta, tb, tc, &opt);
        CHECK_MSG(s == PXL_OK, "matmul: %s", pxl_ctx_error(ctx[k]));
        r[k] = ops_read(ctx[k], tc);
        if (k) g_matmul_s += pxl_time_now() - t0;
        pxl_tensor_free(ta);
        pxl_tensor_free(tb);
        pxl_tensor_free(tc);
    }
    q_compare("cpu vs reference", c, a, w, c0, ref, r[0]);
    q_compare("gpu vs cpu", c, a, w, c0, r[0], r[1]);
    free(a), free(w), free(c0), free(ref), free(q), free(r[0]), free(r[1]);
}

static int matmul_cases(ops_ctx *o) {
    static const int64_t Ks[] = {32, 64, 4096, 96}, Ns[] = {1, 7, 33, 1000}, Ms[] = {1, 2, 5, 64};
    int n = 0;
    for (size_t ki = 0; ki < 4; ki++)
        for (size_t ni = 0; ni < 4; ni++)
            for (size_t mi = 0; mi < 4; mi++) {
                if (Ks[ki] == 96 && Ns[ni] == 1000) continue; /* K = 96 (odd block count): the small shapes */
                for (int f = 0; f < 2; f++, n++) {
                    int v = (int)(ki + ni + mi);
                    q_case c = {1, 1, 1, Ms[mi], Ns[ni], Ks[ki], f ? PXL_Q4_0 : PXL_Q8_0,
                                v % 3 == 0 ? 1.0f : -0.75f, v % 2 ? 0.5f : 0.0f};
                    run_case(o, &c);
                }
            }
    /* batches, with A or B broadcast; matvec and matmul */
    static const q_case batched[] = {
        {3, 3, 3, 1, 45, 128, PXL_Q8_0, 1, 0},       {1, 2, 2, 1, 19, 96, PXL_Q4_0, 2, 0.5f},
        {4, 1, 4, 1, 33, 160, PXL_Q4_0, 1, -1},      {3, 3, 3, 9, 70, 64, PXL_Q4_0, 1, 0},
        {2, 1, 2, 17, 65, 96, PXL_Q8_0, -1, 0.25f},  {1, 3, 3, 66, 31, 32, PXL_Q8_0, 0.5f, 0},
    };
    for (size_t i = 0; i < sizeof batched / sizeof batched[0]; i++, n++) run_case(o, &batched[i]);
    /* matvecs that keep A in registers (qmv_xs): several half blocks per invocation
     * (K = 9216, 16384), a row of an odd number of blocks (K = 1056), and past its
     * limit (K = 18432: the general kernel) */
    static const q_case xs[] = {
        {1, 1, 1, 1, 45, 1056, PXL_Q8_0, 1, 0},    {1, 1, 1, 1, 37, 1056, PXL_Q4_0, 1, 0.5f},
        {1, 1, 1, 1, 37, 9216, PXL_Q4_0, -2, 0},   {2, 2, 2, 1, 29, 16384, PXL_Q8_0, 1, 0},
        {1, 2, 2, 1, 19, 16384, PXL_Q4_0, 1, 1},   {1, 1, 1, 1, 50, 18432, PXL_Q4_0, 1, 0},
    };
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++, n++) run_case(o, &xs[i]);
    /* the K-quants: matvec (kmv) for M <= 8, the tiled kernel (kmm) above; odd N,
     * several blocks per row, batches with broadcast */
    static const int64_t kKs[] = {256, 768, 4096}, kNs[] = {1, 7, 130}, kMs[] = {1, 3, 8, 9, 70};
    for (size_t ki = 0; ki < 3; ki++)
        for (size_t ni = 0; ni < 3; ni++)
            for (size_t mi = 0; mi < 5; mi++)
                for (int f = 0; f < 2; f++, n++) {
                    if (kKs[ki] == 4096 && kMs[mi] == 70 && kNs[ni] == 130 && f) continue; /* llvmpipe time */
                    int v = (int)(ki + ni + mi);
                    q_case c = {1, 1, 1, kMs[mi], kNs[ni], kKs[ki], f ? PXL_Q6_K : PXL_Q4_K,
                                v % 3 == 0 ? 1.0f : -0.75f, v % 2 ? 0.5f : 0.0f};
                    run_case(o, &c);
                }
    static const q_case kbatched[] = {
        {3, 3, 3, 1, 45, 512, PXL_Q4_K, 1, 0},  {1, 2, 2, 2, 19, 256, PXL_Q6_K, 2, 0.5f},
        {4, 1, 4, 1, 33, 256, PXL_Q6_K, 1, -1}, {2, 1, 2, 17, 65, 512, PXL_Q4_K, -1, 0.25f},
        {1, 3, 3, 66, 31, 256, PXL_Q6_K, 0.5f, 0},
    };
    for (size_t i = 0; i < sizeof kbatched / sizeof kbatched[0]; i++, n++) run_case(o, &kbatched[i]);
    /* a wide matvec where every row group has full blocks in flight */
    q_case wide = {1, 1, 1, 1, 4099, 2048, PXL_Q4_0, 1, 0};
    run_case(o, &wide);
    wide.bt = PXL_Q8_0;
    run_case(o, &wide);
    return n + 2;
}

/* ---- embedding ---------------------------------------------------------------------- */

static void embedding_cases(ops_ctx *o) {
    const int64_t V = 37, D = 512;
    int32_t ids[] = {0, 36, 5, 36, 0, 17, 1};
    const int64_t n = (int64_t)(sizeof ids / sizeof ids[0]);
    float *tab = malloc((size_t)(V * D) * 4), *want = malloc((size_t)(n * D) * 4);
    uint8_t *raw = malloc((size_t)(V * D) * 4);
    ops_fill(tab, V * D, 4242u, -2.0f, 2.0f);
    const pxl_dtype dts[] = {PXL_F32, PXL_F16, PXL_Q8_0, PXL_Q4_0, PXL_Q4_K, PXL_Q6_K};
    int64_t st[2] = {V, D}, si[1] = {n}, so[2] = {n, D};
    for (int f = 0; f < 6; f++) {
        pxl_dtype dt = dts[f];
        size_t bytes = pxl_dtype_row_bytes(dt, V * D), rb = pxl_dtype_row_bytes(dt, D);
        if (dt == PXL_F32) memcpy(raw, tab, bytes);
        else if (dt == PXL_F16) for (int64_t i = 0; i < V * D; i++) ((uint16_t *)raw)[i] = pxl_f32_to_f16(tab[i]);
        else CHECK(pxl_quantize(g_cpu, dt, tab, V * D, raw, bytes) == PXL_OK);
        /* expected rows, decoded independently */
        for (int64_t i = 0; i < n; i++) {
            const uint8_t *row = raw + (size_t)ids[i] * rb;
            float *y = want + i * D;
            if (dt == PXL_F32) memcpy(y, row, (size_t)D * 4);
            else if (dt == PXL_F16) for (int64_t k = 0; k < D; k++) {
                uint16_t h;
                memcpy(&h, row + 2 * k, 2);
                y[k] = pxl_f16_to_f32(h);
            }
            else CHECK(pxl_dequantize(g_cpu, dt, row, rb, y, D) == PXL_OK);
        }
        pxl_ctx *ctx[2] = {o->cpu, o->gpu};
        for (int k = 0; k < 2; k++) {
            pxl_tensor *tt = ops_tensor(ctx[k], dt, 2, st, raw), *ti = ops_tensor(ctx[k], PXL_I32, 1, si, ids);
            pxl_tensor *to = ops_tensor(ctx[k], PXL_F32, 2, so, NULL);
            pxl_status s = pxl_embedding(ctx[k], tt, ti, to);
            CHECK_MSG(s == PXL_OK, "embedding %s: %s", pxl_dtype_name(dt), pxl_ctx_error(ctx[k]));
            float *got = ops_read(ctx[k], to);
            char what[64];
            snprintf(what, sizeof what, "embedding %s on %s", pxl_dtype_name(dt), k ? "gpu" : "cpu");
            /* exact, except that a GPU may fuse Q4_K's d1 * q - m1 into one rounding */
            ops_compare(what, want, got, n * D, dt == PXL_Q4_K ? 1e-6 : 0.0, dt == PXL_Q4_K ? 1e-6 : 0.0);
            free(got);
            /* out-of-range ids: NaN rows on every backend */
            int32_t bad_ids[] = {3, 37, -1, 36, 0, 0, 0};
            CHECK(pxl_tensor_write(ctx[k], ti, bad_ids, sizeof bad_ids) == PXL_OK);
            s = pxl_embedding(ctx[k], tt, ti, to);
            {
                CHECK_MSG(s == PXL_OK, "embedding (bad ids) %s: %s", pxl_dtype_name(dt), pxl_ctx_error(ctx[k]));
                got = ops_read(ctx[k], to);
                for (int64_t j = 0; j < D; j++) {
                    CHECK(isnan(got[1 * D + j]) && isnan(got[2 * D + j]));
                    CHECK(got[3 * D + j] == want[1 * D + j] && got[4 * D + j] == want[0 * D + j]); /* ids 36, 0 */
                }
                free(got);
            }
            pxl_tensor_free(tt), pxl_tensor_free(ti), pxl_tensor_free(to);
        }
    }
    free(tab), free(want), free(raw);
}

/* ---- bad arguments ------------------------------------------------------------------- */

static void bad_args(pxl_ctx *ctx) {
    pxl_tensor *t = NULL;
    int64_t s_bad[2] = {4, 48};
    CHECK(pxl_tensor_create(ctx, PXL_Q8_0, 2, s_bad, &t) == PXL_ERR_INVALID_ARG); /* K % 32 != 0 */
    CHECK(pxl_tensor_create(ctx, PXL_Q4_0, 1, s_bad + 1, &t) == PXL_ERR_INVALID_ARG);
    int64_t s_k[2] = {4, 288};
    CHECK(pxl_tensor_create(ctx, PXL_Q4_K, 2, s_k, &t) == PXL_ERR_INVALID_ARG); /* 288 % 256 != 0 */
    CHECK_MSG(strstr(pxl_ctx_error(ctx), "blocks of 256") != NULL, "%s", pxl_ctx_error(ctx));
    CHECK(pxl_tensor_create(ctx, PXL_Q6_K, 1, s_bad + 1, &t) == PXL_ERR_INVALID_ARG);
    int64_t sa[2] = {2, 64}, sb[2] = {3, 64}, sc[2] = {2, 3}, sb32[2] = {3, 32}, sc_bad[2] = {2, 4};
    int64_t sa3[3] = {2, 2, 64}, sb3[3] = {3, 3, 64}, sc3[3] = {2, 2, 3};
    pxl_tensor *a = ops_tensor(ctx, PXL_F32, 2, sa, NULL), *b = ops_tensor(ctx, PXL_Q4_0, 2, sb, NULL);
    pxl_tensor *c = ops_tensor(ctx, PXL_F32, 2, sc, NULL), *b32 = ops_tensor(ctx, PXL_Q8_0, 2, sb32, NULL);
    pxl_tensor *cbad = ops_tensor(ctx, PXL_F32, 2, sc_bad, NULL), *ci = ops_tensor(ctx, PXL_I32, 2, sc, NULL);
    pxl_tensor *ah = ops_tensor(ctx, PXL_F16, 2, sa, NULL), *a3 = ops_tensor(ctx, PXL_F32, 3, sa3, NULL);
    pxl_tensor *b3 = ops_tensor(ctx, PXL_Q8_0, 3, sb3, NULL), *c3 = ops_tensor(ctx, PXL_F32, 3, sc3, NULL);
    pxl_matmul_options o = {0};
    o.trans_b = 1;
    CHECK_MSG(pxl_matmul(ctx, a, b, c, &o) == PXL_OK, "%s", pxl_ctx_error(ctx));
    CHECK_MSG(pxl_matmul(ctx, a, b, c, &o) == PXL_OK, "%s", pxl_ctx_error(ctx));
    o.trans_b = 0;
    CHECK(pxl_matmul(ctx, a, b, c, &o) == PXL_ERR_INVALID_ARG);
    CHECK(strstr(pxl_ctx_error(ctx), "trans_b") != NULL);
    CHECK(pxl_matmul(ctx, a, b, c, NULL) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_matmul(ctx, a, b, c, NULL) == PXL_ERR_INVALID_ARG);
    o.trans_b = 1;
    o.trans_a = 1;
    CHECK(pxl_matmul(ctx, a, b, c, &o) == PXL_ERR_UNSUPPORTED);
    CHECK(strstr(pxl_ctx_error(ctx), "trans_a") != NULL);
    o.trans_a = 0;
    CHECK(pxl_matmul(ctx, a, b32, c, &o) == PXL_ERR_INVALID_ARG); /* K mismatch */
    CHECK(strstr(pxl_ctx_error(ctx), "K=") != NULL);
    CHECK(pxl_matmul(ctx, a, b, cbad, &o) == PXL_ERR_INVALID_ARG); /* C shape */
    CHECK(strstr(pxl_ctx_error(ctx), "C ") != NULL);
    CHECK(pxl_matmul(ctx, a, b, ci, &o) == PXL_ERR_INVALID_ARG);   /* C dtype */
    CHECK(strstr(pxl_ctx_error(ctx), "C is i32") != NULL);
    CHECK(pxl_matmul(ctx, ah, b, c, &o) == PXL_ERR_INVALID_ARG);   /* A dtype */
    CHECK(strstr(pxl_ctx_error(ctx), "A is f16") != NULL);
    CHECK(pxl_matmul(ctx, a, a, c, &o) == PXL_ERR_INVALID_ARG); /* an f32 B of the wrong shape */
    CHECK(pxl_matmul(ctx, a3, b3, c3, &o) == PXL_ERR_INVALID_ARG); /* batch 2 against 3 */
    CHECK(strstr(pxl_ctx_error(ctx), "batch") != NULL);
    CHECK(pxl_matmul(ctx, a3, b, c, &o) == PXL_ERR_INVALID_ARG);   /* C lacks A's batch */
    CHECK(pxl_matmul(ctx, a, b, a, &o) == PXL_ERR_INVALID_ARG);    /* C is A */

    /* embedding */
    int64_t st[2] = {5, 32}, si[1] = {2}, so[2] = {2, 32}, so_bad[2] = {3, 32};
    pxl_tensor *tab = ops_tensor(ctx, PXL_Q8_0, 2, st, NULL), *ids = ops_tensor(ctx, PXL_I32, 1, si, NULL);
    pxl_tensor *idf = ops_tensor(ctx, PXL_F32, 1, si, NULL), *out = ops_tensor(ctx, PXL_F32, 2, so, NULL);
    pxl_tensor *outb = ops_tensor(ctx, PXL_F32, 2, so_bad, NULL), *tabi = ops_tensor(ctx, PXL_I32, 2, st, NULL);
    int32_t idv[2] = {4, 0};
    CHECK(pxl_tensor_write(ctx, ids, idv, sizeof idv) == PXL_OK);
    CHECK_MSG(pxl_embedding(ctx, tab, ids, out) == PXL_OK, "%s", pxl_ctx_error(ctx));
    CHECK(pxl_embedding(ctx, tab, idf, out) == PXL_ERR_INVALID_ARG);
    CHECK(strstr(pxl_ctx_error(ctx), "ids") != NULL);
    CHECK(pxl_embedding(ctx, tab, ids, outb) == PXL_ERR_INVALID_ARG);
    CHECK(strstr(pxl_ctx_error(ctx), "out") != NULL);
    CHECK(pxl_embedding(ctx, tabi, ids, out) == PXL_ERR_INVALID_ARG);
    CHECK(strstr(pxl_ctx_error(ctx), "table") != NULL);
    CHECK(pxl_embedding(ctx, b3, ids, out) == PXL_ERR_INVALID_ARG); /* 3-D table */

    pxl_tensor_free(a), pxl_tensor_free(b), pxl_tensor_free(c), pxl_tensor_free(b32), pxl_tensor_free(cbad);
    pxl_tensor_free(ci), pxl_tensor_free(ah), pxl_tensor_free(a3), pxl_tensor_free(b3), pxl_tensor_free(c3);
    pxl_tensor_free(tab), pxl_tensor_free(ids), pxl_tensor_free(idf), pxl_tensor_free(out), pxl_tensor_free(outb);
    pxl_tensor_free(tabi);
}

int main(void) {
    g_cpu = test_ctx(PXL_BACKEND_CPU, 1);
    golden();
    round_trip();
    ops_ctx o;
    if (!ops_open(&o)) return g_failures ? 1 : PXL_SKIP;
    double t0 = pxl_time_now();
    int n = matmul_cases(&o);
    fprintf(stderr, "%d quantized matmul cases in %.1f s (GPU %.1f s)\n", n, pxl_time_now() - t0, g_matmul_s);
    embedding_cases(&o);
    bad_args(o.cpu);
    bad_args(o.gpu);
    ops_close(&o);
    pxl_ctx_free(g_cpu);
    return test_result("test_ops_quant");
}
