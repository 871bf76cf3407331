/*
 * GGUF Q8_0/Q4_0/Q4_1/Q5_0/Q5_1, the K-quants Q2_K/Q3_K/Q4_K/Q5_K/Q6_K and bf16: the reference codecs on golden
 * blocks (bytes written by hand, values worked by hand from the layouts),
 * quantize/dequantize error bounds, tensor shapes the block formats refuse,
 * and the messages of pxl_matmul's quantized path. The quantized products
 * and embedding lookups (every dtype, views, against the double-precision
 * oracle and across backends) are rows of the op table, tests/ops_cases.c.
 */
#include "ops_common.h"

/* src/ops/ops_internal.h (not includable here: it needs the generated WGSL header) */
pxl_status pxl_matmul_quant(pxl_ctx *ctx, const pxl_tensor *a, const pxl_tensor *b, pxl_tensor *c,
                            const pxl_matmul_options *opts);

static pxl_ctx *g_cpu; /* for the host codecs */

/* ---- codecs: golden blocks ---------------------------------------------------- */

/* Q5_0, Q5_K, Q4_1, Q5_1 and bf16 golden blocks; q4k_head: the Q4_K block head above (d, dmin, scales). */
static void golden_more(const uint8_t *q4k_head) {
    float got[256];
    /* Q5_0: d = 0.5 (0x3800); qh bytes 0f f0 a5 5a (qh = 0x5aa5f00f: bits 0-3, 12-15, 16, 18, 21, 23, 25,
     * 27, 28, 30 set); qs[j] = j | (15 - j) << 4. Element j < 16: q = j + 16 bit_j, element 16 + j:
     * q = 15 - j + 16 bit_(16+j); x = (q - 16) * 0.5. */
    uint8_t q5[44] = {0x00, 0x38, 0x0f, 0xf0, 0xa5, 0x5a};
    for (int j = 0; j < 16; j++) q5[6 + j] = (uint8_t)(j | ((15 - j) << 4));
    /* block 1: d = -2 (0xc000), qh = 0, every byte 0xf0: low nibble 0 -> 32, high 15 -> 2 */
    q5[22] = 0x00, q5[23] = 0xc0;
    for (int j = 0; j < 16; j++) q5[28 + j] = 0xf0;
    CHECK(pxl_dequantize(g_cpu, PXL_Q5_0, q5, 44, got, 64) == PXL_OK);
    static const int e5[8] = {0, 2, 5, 13, 16, 17, 21, 31};
    static const float w5[8] = {0.0f, 1.0f, -5.5f, 6.5f, 7.5f, -1.0f, 5.0f, -8.0f};
    for (int i = 0; i < 8; i++)
        CHECK_MSG(got[e5[i]] == w5[i], "q5_0 golden [%d]: %g, want %g", e5[i], (double)got[e5[i]], (double)w5[i]);
    int bad = 0;
    for (int j = 0; j < 32; j++) {
        uint32_t qh = 0x5aa5f00fu;
        int q = (j < 16 ? j : 31 - j) + (int)((qh >> j) & 1u) * 16;
        float want = (float)(q - 16) * 0.5f;
        if (got[j] != want && bad++ < 3) fprintf(stderr, "q5_0 golden [%d]: %g, want %g\n", j, (double)got[j], (double)want);
        want = j < 16 ? 32.0f : 2.0f;
        if (got[32 + j] != want && bad++ < 3)
            fprintf(stderr, "q5_0 golden [%d]: %g, want %g\n", 32 + j, (double)got[32 + j], (double)want);
    }
    CHECK(bad == 0);

    /* Q5_K: the Q4_K head (d 0.5, dmin 0.25, sc 1 2 3 4 17 33 63 0, m 0 1 2 3 20 40 63 5), qh[l] = 37 l
     * mod 256, qs[32p + l] = (l % 16) | (15 - l % 16) << 4. Element 64p + l: q = l % 16 + 16 bit 2p of
     * qh[l]; element 64p + 32 + l: q = 15 - l % 16 + 16 bit 2p + 1; x = (d sc) q - dmin m. By hand: */
    uint8_t q5k[176];
    memcpy(q5k, q4k_head, 16);
    for (int l = 0; l < 32; l++) q5k[16 + l] = (uint8_t)(37 * l);
    for (int i = 0; i < 128; i++) q5k[48 + i] = (uint8_t)((i % 16) | ((15 - i % 16) << 4));
    CHECK(pxl_dequantize(g_cpu, PXL_Q5_K, q5k, 176, got, 256) == PXL_OK);
    CHECK_MSG(got[5] == 10.5f, "q5_k [5] = %g", (double)got[5]);       /* qh[5] = 185, bit 0: q 21, sc 1 */
    CHECK_MSG(got[40] == 6.75f, "q5_k [40] = %g", (double)got[40]);    /* qh[8] = 40, bit 1 clear: q 7, sc 2, m 1 */
    CHECK_MSG(got[70] == 32.5f, "q5_k [70] = %g", (double)got[70]);    /* qh[6] = 222, bit 2: q 22, sc 3, m 2 */
    CHECK_MSG(got[131] == 20.5f, "q5_k [131] = %g", (double)got[131]); /* qh[3] = 111, bit 4 clear: q 3, sc 17, m 20 */
    CHECK_MSG(got[180] == 435.5f, "q5_k [180] = %g", (double)got[180]); /* qh[20] = 228, bit 5: q 27, sc 33, m 40 */
    CHECK_MSG(got[209] == 519.75f, "q5_k [209] = %g", (double)got[209]); /* qh[17] = 117, bit 6: q 17, sc 63, m 63 */
    CHECK_MSG(got[255] == -1.25f, "q5_k [255] = %g", (double)got[255]); /* sc 0, m 5 */
    static const int sc5[8] = {1, 2, 3, 4, 17, 33, 63, 0}, m5[8] = {0, 1, 2, 3, 20, 40, 63, 5};
    bad = 0;
    for (int e = 0; e < 256; e++) {
        int sb = e / 32, l = e % 32, hb = ((37 * l) & 255) >> sb & 1;
        int q = (sb % 2 ? 15 - l % 16 : l % 16) + 16 * hb;
        float want = (0.5f * (float)sc5[sb]) * (float)q - 0.25f * (float)m5[sb];
        if (got[e] != want && bad++ < 3) fprintf(stderr, "q5_k golden [%d]: %g, want %g\n", e, (double)got[e], (double)want);
    }
    CHECK(bad == 0);

    /* Q4_1: d = 0.25 (0x3400), m = -1.5 (0xbe00), qs[j] = j | (15 - j) << 4: x = 0.25 q - 1.5 */
    uint8_t q41[20] = {0x00, 0x34, 0x00, 0xbe};
    for (int j = 0; j < 16; j++) q41[4 + j] = (uint8_t)(j | ((15 - j) << 4));
    CHECK(pxl_dequantize(g_cpu, PXL_Q4_1, q41, 20, got, 32) == PXL_OK);
    CHECK(got[0] == -1.5f && got[6] == 0.0f && got[15] == 2.25f && got[16] == 2.25f && got[26] == -0.25f &&
          got[31] == -1.5f);
    for (int j = 0; j < 16; j++) CHECK(got[j] == 0.25f * (float)j - 1.5f && got[16 + j] == 0.25f * (float)(15 - j) - 1.5f);

    /* Q5_1: d = -0.5 (0xb800), m = 3 (0x4200), qh bits 0 and 31 set, qs as above: x = -0.5 q + 3 */
    uint8_t q51[24] = {0x00, 0xb8, 0x00, 0x42, 0x01, 0x00, 0x00, 0x80};
    for (int j = 0; j < 16; j++) q51[8 + j] = (uint8_t)(j | ((15 - j) << 4));
    CHECK(pxl_dequantize(g_cpu, PXL_Q5_1, q51, 24, got, 32) == PXL_OK);
    CHECK_MSG(got[0] == -5.0f && got[1] == 2.5f && got[15] == -4.5f && got[16] == -4.5f && got[20] == -2.5f &&
                  got[31] == -5.0f,
              "q5_1 golden: %g %g %g %g %g %g", (double)got[0], (double)got[1], (double)got[15], (double)got[16],
              (double)got[20], (double)got[31]);

    /* bf16: round to nearest even on the top half; NaN quiet; Inf, -0 and subnormals kept */
    static const uint32_t fin[13] = {0x3f800000u, 0x3f808000u, 0x3f818000u, 0x3f808001u, 0x7f800001u,
                                     0xff800001u, 0x7f800000u, 0x7f7fffffu, 0x00000001u, 0x00008000u,
                                     0x00018000u, 0x0000c000u, 0x80000000u};
    static const uint16_t fout[13] = {0x3f80, 0x3f80, 0x3f82, 0x3f81, 0x7fc0, 0xffc0, 0x7f80,
                                      0x7f80, 0x0000, 0x0000, 0x0002, 0x0001, 0x8000};
    float fx[13];
    uint8_t bf[26];
    memcpy(fx, fin, sizeof fx);
    CHECK(pxl_quantize(g_cpu, PXL_BF16, fx, 13, bf, 26) == PXL_OK);
    for (int i = 0; i < 13; i++) {
        uint16_t h = (uint16_t)(bf[2 * i] | bf[2 * i + 1] << 8);
        CHECK_MSG(h == fout[i], "bf16 of 0x%08x: 0x%04x, want 0x%04x", (unsigned)fin[i], (unsigned)h, (unsigned)fout[i]);
    }
    uint8_t bd[6] = {0x49, 0x40, 0xa0, 0xc0, 0xc0, 0x7f}; /* 0x4049, 0xc0a0, 0x7fc0 */
    CHECK(pxl_dequantize(g_cpu, PXL_BF16, bd, 6, got, 3) == PXL_OK);
    CHECK(got[0] == 3.140625f && got[1] == -5.0f && isnan(got[2]));
    CHECK(pxl_dequantize(g_cpu, PXL_BF16, bd, 5, got, 3) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_dequantize(g_cpu, PXL_Q5_0, q5, 22, got, 16) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_quantize(g_cpu, PXL_Q5_K, got, 256, q5k, 175) == PXL_ERR_INVALID_ARG);
}

/* Q2_K and Q3_K golden blocks, worked out from the layouts of ggml's block_q2_K / block_q3_K (element
 * 128h + 32j + l: plane j (bits 2j, 2j + 1) of quant byte 32h + l, group of 16 k = e / 16). Both use
 * qs[i] = 37 i mod 256. */
static void golden_k23(void) {
    float got[256];
    int bad = 0;
    /* Q2_K: scales[k] = k | (15 - k) << 4 (sc k, m 15 - k), d = 0.5 (0x3800), dmin = 0.25 (0x3400):
     * x = 0.5 k q - 0.25 (15 - k). */
    uint8_t q2[84];
    for (int k = 0; k < 16; k++) q2[k] = (uint8_t)(k | ((15 - k) << 4));
    for (int i = 0; i < 64; i++) q2[16 + i] = (uint8_t)(37 * i);
    q2[80] = 0x00, q2[81] = 0x38, q2[82] = 0x00, q2[83] = 0x34;
    CHECK(pxl_dequantize(g_cpu, PXL_Q2_K, q2, 84, got, 256) == PXL_OK);
    CHECK_MSG(got[0] == -3.75f, "q2_k [0] = %g", (double)got[0]);       /* qs[0] = 0: q 0, k 0, m 15 */
    CHECK_MSG(got[5] == -3.75f, "q2_k [5] = %g", (double)got[5]);       /* qs[5] = 185, bits 0-1: q 1, sc 0 */
    CHECK_MSG(got[33] == -2.25f, "q2_k [33] = %g", (double)got[33]);    /* qs[1] = 37, bits 2-3: q 1, k 2 */
    CHECK_MSG(got[70] == -0.75f, "q2_k [70] = %g", (double)got[70]);    /* qs[6] = 222, bits 4-5: q 1, k 4 */
    CHECK_MSG(got[100] == 3.75f, "q2_k [100] = %g", (double)got[100]);  /* qs[4] = 148, bits 6-7: q 2, k 6 */
    CHECK_MSG(got[150] == 7.5f, "q2_k [150] = %g", (double)got[150]);   /* qs[54] = 206, bits 0-1: q 2, k 9 */
    CHECK_MSG(got[181] == 10.0f, "q2_k [181] = %g", (double)got[181]);  /* qs[53] = 169, bits 2-3: q 2, k 11 */
    CHECK_MSG(got[230] == 6.75f, "q2_k [230] = %g", (double)got[230]);  /* qs[38] = 126, bits 6-7: q 1, k 14 */
    CHECK_MSG(got[255] == 0.0f, "q2_k [255] = %g", (double)got[255]);   /* qs[63] = 27, bits 6-7: q 0, m 0 */
    for (int e = 0; e < 256; e++) {
        int k = e / 16, q = ((37 * (32 * (e / 128) + e % 32)) & 255) >> (2 * ((e / 32) % 4)) & 3;
        float want = (0.5f * (float)k) * (float)q - 0.25f * (float)(15 - k);
        if (got[e] != want && bad++ < 3) fprintf(stderr, "q2_k golden [%d]: %g, want %g\n", e, (double)got[e], (double)want);
    }
    CHECK(bad == 0);

    /* Q3_K: hmask[l] = 0x5a ^ 7 l, d = -0.5 (0xb800), 6-bit scales u[i] = (5 i + 3) mod 64 packed as
     * ggml packs them (low nibbles: bytes 0..7, i >= 8 in the high nibbles; high 2 bits: byte 8 + i % 4,
     * bits 2 (i / 4)): b3 08 5d a2 f7 4c 91 e6 e4 34 38 39. x = -0.5 (u[k] - 32) (q - 4 [hmask bit
     * 4h + j of hmask[l] clear]). */
    uint8_t q3[110];
    static const uint8_t s3[12] = {0xb3, 0x08, 0x5d, 0xa2, 0xf7, 0x4c, 0x91, 0xe6, 0xe4, 0x34, 0x38, 0x39};
    for (int l = 0; l < 32; l++) q3[l] = (uint8_t)(0x5a ^ (7 * l));
    for (int i = 0; i < 64; i++) q3[32 + i] = (uint8_t)(37 * i);
    memcpy(q3 + 96, s3, 12);
    q3[108] = 0x00, q3[109] = 0xb8;
    CHECK(pxl_dequantize(g_cpu, PXL_Q3_K, q3, 110, got, 256) == PXL_OK);
    CHECK_MSG(got[0] == -58.0f, "q3_k [0] = %g", (double)got[0]);       /* q 0, hmask 0x5a bit 0 clear: -4; u 3 */
    CHECK_MSG(got[5] == 14.5f, "q3_k [5] = %g", (double)got[5]);        /* q 1, hmask[5] = 121 bit 0 set; u 3 */
    CHECK_MSG(got[33] == -28.5f, "q3_k [33] = %g", (double)got[33]);    /* q 1, hmask[1] = 93 bit 1 clear; u 13 */
    CHECK_MSG(got[70] == -13.5f, "q3_k [70] = %g", (double)got[70]);    /* q 1, hmask[6] = 112 bit 2 clear; u 23 */
    CHECK_MSG(got[100] == 1.0f, "q3_k [100] = %g", (double)got[100]);   /* q 2, bit 3 of 70 clear: -2; u 33 */
    CHECK_MSG(got[150] == 16.0f, "q3_k [150] = %g", (double)got[150]);  /* q 2, bit 4 of 192 clear; u 48 */
    CHECK_MSG(got[181] == 26.0f, "q3_k [181] = %g", (double)got[181]);  /* q 2, bit 5 of 201 clear; u 58 */
    CHECK_MSG(got[230] == -34.5f, "q3_k [230] = %g", (double)got[230]); /* q 1, bit 7 of 112 clear; u 9 */
    CHECK_MSG(got[255] == 0.0f, "q3_k [255] = %g", (double)got[255]);   /* q 0, bit 7 of 131 set; u 14 */
    bad = 0;
    for (int e = 0; e < 256; e++) {
        int k = e / 16, l = e % 32, j = 4 * (e / 128) + (e / 32) % 4;
        int q = (((37 * (32 * (e / 128) + l)) & 255) >> (2 * (j % 4)) & 3) - (((0x5a ^ (7 * l)) & 255) >> j & 1 ? 0 : 4);
        float want = (-0.5f * (float)((5 * k + 3) % 64 - 32)) * (float)q;
        if (got[e] != want && bad++ < 3) fprintf(stderr, "q3_k golden [%d]: %g, want %g\n", e, (double)got[e], (double)want);
    }
    CHECK(bad == 0);
    CHECK(pxl_dequantize(g_cpu, PXL_Q3_K, q3, 109, got, 256) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_quantize(g_cpu, PXL_Q2_K, got, 128, q2, 84) == PXL_ERR_INVALID_ARG);
}

/* Q2_K and Q3_K round trips (the simple encoders), per group of 16: Q2_K like Q4_K with 3 steps and
 * 4-bit scales (d, dmin over 15): half a step of the rounded-up scale plus half of dmin; Q3_K: the
 * group's scale s = amax / 4 (|x| / |s| <= 4, the top level 3 clamps), its 6-bit rounding off by up
 * to d / 2 (d = the largest |s| over 31), times 4 levels: |x - x'| <= |s| + 2 d. */
static void round_trip_k23(const float *x, float *y, int N) {
    for (int f = 0; f < 2; f++) {
        pxl_dtype dt = f ? PXL_Q3_K : PXL_Q2_K;
        size_t bytes = pxl_dtype_row_bytes(dt, N);
        uint8_t *qq = malloc(bytes);
        CHECK(pxl_quantize(g_cpu, dt, x, N, qq, bytes) == PXL_OK);
        CHECK(pxl_dequantize(g_cpu, dt, qq, bytes, y, N) == PXL_OK);
        int bad = 0;
        for (int b = 0; b < N / 256; b++) {
            float smax = 0, omax = 0;
            for (int k = 0; k < 16; k++) {
                float lo = 0, hi = 0, amax = 0;
                for (int i = 0; i < 16; i++) {
                    float v = x[256 * b + 16 * k + i];
                    lo = fminf(lo, v), hi = fmaxf(hi, v), amax = fmaxf(amax, fabsf(v));
                }
                smax = fmaxf(smax, f ? amax / 4.0f : (hi - lo) / 3.0f), omax = fmaxf(omax, -lo);
            }
            for (int k = 0; k < 16; k++) {
                float lo = 0, hi = 0, amax = 0;
                for (int i = 0; i < 16; i++) {
                    float v = x[256 * b + 16 * k + i];
                    lo = fminf(lo, v), hi = fmaxf(hi, v), amax = fmaxf(amax, fabsf(v));
                }
                double bound = f ? (double)amax / 4.0 + 2.0 * (double)smax / 31.0
                                 : 0.5 * (((double)hi - (double)lo) / 3.0 + (double)smax / 15.0) + 0.5 * (double)omax / 15.0;
                bound = bound * 1.01 + 1e-30;
                for (int i = 0; i < 16; i++) {
                    int e = 256 * b + 16 * k + i;
                    double err = fabs((double)x[e] - (double)y[e]);
                    if (!(err <= bound) && bad++ < 3)
                        fprintf(stderr, "%s round trip [%d]: %g -> %g (bound %g)\n", pxl_dtype_name(dt), e,
                                (double)x[e], (double)y[e], bound);
                }
            }
        }
        if (bad) g_failures++;
        free(qq);
    }
}

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
    for (int i = 0; i < 32; i++) CHECK_MSG(got[i] == want8[i], "q8_0 golden [%d]: %g, want %g", i, (double)got[i], (double)want8[i]);

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
    for (int i = 0; i < 64; i++) CHECK_MSG(got[i] == want4[i], "q4_0 golden [%d]: %g, want %g", i, (double)got[i], (double)want4[i]);

    /* a subnormal scale: d = 2^-24 (f16 0x0001), q = -3 */
    uint8_t sub[34] = {0x01, 0x00};
    for (int i = 0; i < 32; i++) sub[2 + i] = (uint8_t)(int8_t)-3;
    CHECK(pxl_dequantize(g_cpu, PXL_Q8_0, sub, 34, got, 32) == PXL_OK);
    CHECK_MSG(got[31] == -3.0f * 0x1p-24f, "q8_0 subnormal scale: %g", (double)got[31]);

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
        if (gk[e] != want && bad++ < 3) fprintf(stderr, "q4_k golden [%d]: %g, want %g\n", e, (double)gk[e], (double)want);
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
    CHECK_MSG(gk[0] == 32.0f, "q6_k [0] = %g", (double)gk[0]);       /* q 0 - 32, scale -8 */
    CHECK_MSG(gk[37] == -3.75f, "q6_k [37] = %g", (double)gk[37]);   /* ql[37] & 15 = 5, qh[5] bits 2-3 = 2: q 37 - 32, scale -6 */
    CHECK_MSG(gk[100] == -0.5f, "q6_k [100] = %g", (double)gk[100]); /* ql[36] >> 4 = 2, qh[4] bits 6-7 = 2: 34 - 32, scale -2 */
    CHECK_MSG(gk[200] == -14.0f, "q6_k [200] = %g", (double)gk[200]); /* ql[72] >> 4 = 4, qh[40] bits 4-5 = 0: 4 - 32, scale 4 */
    CHECK_MSG(gk[255] == -21.875f, "q6_k [255] = %g", (double)gk[255]); /* ql[127] >> 4 = 7, qh[63] bits 6-7 = 0: -25, scale 7 */

    golden_more(q4k_head);

    /* the codecs refuse wrong sizes */
    CHECK(pxl_dequantize(g_cpu, PXL_Q4_K, q4k, 144, gk, 32) == PXL_ERR_INVALID_ARG); /* not a whole block */
    CHECK(pxl_quantize(g_cpu, PXL_Q6_K, gk, 256, q6k, 209) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_dequantize(g_cpu, PXL_Q8_0, q8, 33, got, 32) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_quantize(g_cpu, PXL_Q4_0, want4, 48, q4, 27) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_quantize(g_cpu, PXL_F32, want4, 32, q4, 128) == PXL_ERR_INVALID_ARG);
    /* every failure leaves a message: 3 elements are not whole Q8_0 blocks */
    CHECK(pxl_quantize(g_cpu, PXL_Q8_0, want4, 3, q8, 34) == PXL_ERR_INVALID_ARG);
    CHECK_MSG(strstr(pxl_ctx_error(g_cpu), "pxl_quantize: 3 elements") != NULL, "%s", pxl_ctx_error(g_cpu));
    CHECK(pxl_dequantize(g_cpu, PXL_Q8_0, NULL, 34, got, 32) == PXL_ERR_INVALID_ARG);
    CHECK(strstr(pxl_ctx_error(g_cpu), "src is NULL") != NULL);
    CHECK(pxl_quantize(NULL, PXL_Q8_0, want4, 32, q8, 34) == PXL_ERR_INVALID_ARG);
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
            double bound = f ? 1.01 * (double)amax / 8.0 : 0.6 * (double)amax / 127.0;
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
                double bound = f ? 0.5 * (double)a / 31.0 + 16.0 * ((double)amaxb / 31.0) / 127.0
                                 : 0.5 * ((double)(hi - lo) / 15.0 + (double)smax / 63.0) + 0.5 * (double)omax / 63.0;
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
    /* Q5_0: like Q4_0 with 16 steps a side: |x - x'| <= 1.01 amax / 16.
     * Q4_1 / Q5_1 (top = 15 / 31 steps over the block's range r from lo): half a step, the f16
     * roundings of d (over up to top steps) and of m = lo: |x - x'| <= 0.5 r / top + (r + |lo|) 2^-10.
     * Q5_K: Q4_K's bound with 31 steps. bf16: 8 significant bits, |x - x'| <= 2^-8 |x|. */
    for (int f = 0; f < 5; f++) {
        static const pxl_dtype dts[5] = {PXL_Q5_0, PXL_Q4_1, PXL_Q5_1, PXL_Q5_K, PXL_BF16};
        pxl_dtype dt = dts[f];
        size_t bytes = pxl_dtype_row_bytes(dt, N);
        uint8_t *qq = malloc(bytes);
        CHECK(pxl_quantize(g_cpu, dt, x, N, qq, bytes) == PXL_OK);
        CHECK(pxl_dequantize(g_cpu, dt, qq, bytes, y, N) == PXL_OK);
        int bad = 0, sub = dt == PXL_BF16 ? 1 : 32;
        for (int b = 0; b < N / sub; b++) {
            float lo = x[b * sub], hi = lo, amax = 0, slo = 0, shi = 0, smax = 0, omax = 0;
            for (int i = 0; i < sub; i++) {
                float v = x[b * sub + i];
                lo = fminf(lo, v), hi = fmaxf(hi, v), amax = fmaxf(amax, fabsf(v));
                slo = fminf(slo, v), shi = fmaxf(shi, v);
            }
            if (dt == PXL_Q5_K) /* the super-block's largest sub-block scale and offset */
                for (int j = 0; j < 8; j++) {
                    int s0 = (b / 8) * 256 + 32 * j;
                    float l2 = 0, h2 = 0;
                    for (int i = 0; i < 32; i++) l2 = fminf(l2, x[s0 + i]), h2 = fmaxf(h2, x[s0 + i]);
                    smax = fmaxf(smax, (h2 - l2) / 31.0f), omax = fmaxf(omax, -l2);
                }
            double r = (double)hi - (double)lo, bound;
            if (dt == PXL_Q5_0) bound = 1.01 * (double)amax / 16.0;
            else if (dt == PXL_Q4_1) bound = 0.5 * r / 15.0 + (r + fabs((double)lo)) * 0x1p-10;
            else if (dt == PXL_Q5_1) bound = 0.5 * r / 31.0 + (r + fabs((double)lo)) * 0x1p-10;
            else if (dt == PXL_Q5_K)
                bound = 0.5 * (((double)shi - (double)slo) / 31.0 + (double)smax / 63.0) + 0.5 * (double)omax / 63.0;
            else bound = fabs((double)x[b]) * 0x1p-8;
            bound = bound * 1.01 + 1e-30;
            for (int i = 0; i < sub; i++) {
                int k = b * sub + i;
                double e = fabs((double)x[k] - (double)y[k]);
                if (!(e <= bound) && bad++ < 3)
                    fprintf(stderr, "%s round trip [%d]: %g -> %g (bound %g)\n", pxl_dtype_name(dt), k, (double)x[k],
                            (double)y[k], bound);
            }
        }
        if (bad) g_failures++;
        free(qq);
    }
    round_trip_k23(x, y, N);
    free(x), free(y), free(q);
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
    CHECK(pxl_tensor_create(ctx, PXL_Q5_0, 2, s_bad, &t) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_tensor_create(ctx, PXL_Q4_1, 1, s_bad + 1, &t) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_tensor_create(ctx, PXL_Q5_1, 1, s_bad + 1, &t) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_tensor_create(ctx, PXL_Q5_K, 2, s_k, &t) == PXL_ERR_INVALID_ARG);
    CHECK_MSG(strstr(pxl_ctx_error(ctx), "q5_k (blocks of 256)") != NULL, "%s", pxl_ctx_error(ctx));
    CHECK(pxl_tensor_create(ctx, PXL_BF16, 2, s_bad, &t) == PXL_OK); /* bf16 takes any row length */
    pxl_tensor_free(t);
    t = NULL;
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
    pxl_tensor *b5 = ops_tensor(ctx, PXL_Q5_0, 2, sb, NULL);
    CHECK(pxl_matmul(ctx, a, b5, c, &o) == PXL_ERR_INVALID_ARG); /* every block format needs trans_b */
    CHECK(strstr(pxl_ctx_error(ctx), "q5_0") != NULL && strstr(pxl_ctx_error(ctx), "trans_b") != NULL);
    pxl_tensor_free(b5);
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
    golden_k23();
    round_trip();
    ops_ctx o;
    if (!ops_open(&o)) return g_failures ? 1 : PXL_SKIP;
    bad_args(o.cpu);
    bad_args(o.gpu);
    ops_close(&o);
    pxl_ctx_free(g_cpu);
    return test_result("test_ops_quant");
}
