/*
 * The CPU matrix product with B stored [N, K] (trans_b, no trans_a): f32,
 * f16, bf16 or a GGUF block format (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K,
 * Q3_K, Q4_K, Q5_K, Q6_K). pxl_matmul (matmul.c) and the quantized path (matmul_quant.c)
 * call pxl_cpu_matmul_bt.
 *
 * Work: a task is (batch, block of up to MB rows of A, tile of NT rows of
 * B). K runs in chunks of KC = 256 elements (a K-quant block, 8 blocks of
 * 32, or 256 f16 / bf16 values): the task decodes the chunk of each of its
 * NT B rows once into f32 (exactly the values pxl_dequantize gives) and
 * multiplies it with the chunk of all its A rows, 2 A rows x 4 B rows at a
 * time, so a decoded block serves every row of A. With one row of A
 * (decoding a token) and AVX2, gemv_avx instead multiplies each B row as it
 * decodes it, 4 rows side by side: the same lanes and folds, but Q8_0, Q4_0
 * and Q5_0 multiply each block's 8-lane sums by its scale once (see there),
 * so their roundings differ from the tiled path's. On 8-bit A (a_q8) one
 * row of A against Q4_K, Q5_K or Q6_K multiplies in integers too
 * (kq8_gemv_avx). Where the CPU has
 * AVX-512 (and the tuning option cpu_avx512=0 is not set), the one-row
 * products of Q8_0, Q4_0, Q5_0, Q4_K, Q5_K, f16 and bf16, those on 8-bit A, and the
 * tiled path's tiles of 8, 4 or 2 A rows x 4 B rows (kern_512_x4) hold two rows in each
 * 512-bit register: the same lanes, operations and order in each half, so
 * the same bits as the AVX2 code.
 *
 * Order of the sums (the same for any number of threads or tile shape,
 * gemv_avx's block scales and kq8_gemv_avx's integer sums aside): per output and chunk, 8 f32 lanes (lane l takes the
 * elements k = l mod 8, in order), folded as ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)),
 * then the tail of a chunk that is not a multiple of 8 in order; the chunk
 * sums are added in double. On x86-64 with AVX2, FMA and F16C (checked at
 * run time; the tuning option cpu_simd=0 turns it off) the decoders and the
 * lanes are 8-wide vectors and the lanes use fused multiply-adds; elsewhere
 * plain C with separate multiplies and adds. Both are within the error bound
 * of K f32 sums (tests/ops_cases.c, mm_tol).
 */
#include "ops_internal.h"

#include <math.h>
#include <string.h>

#define KC 256 /* elements per chunk */
#define NT 16  /* B rows per task */
#define MB 64  /* A rows per task */

typedef struct {
    const float *a;
    const uint8_t *b;
    float *c;
    pxl_dtype dt;
    int64_t batch_a, batch_b, M, N, K;
    size_t row_bytes; /* bytes of one B row */
    float alpha, beta;
    int64_t mblocks, tiles;
    int simd;
    const struct q8blk *qa;   /* A rounded to 8 bits (a_q8), else NULL */
    const struct q8sblk *qs;  /* one row of A rounded for K-quant B (a_q8, M = 1, AVX2), else NULL */
} bt_job;

/* bytes of B per element block and elements per block */
static void block_geom(pxl_dtype dt, size_t *bytes, int *elems) {
    *elems = (int)pxl_dtype_block(dt);
    *bytes = pxl_dtype_row_bytes(dt, *elems);
}

static float half_at(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return pxl_f16_to_f32(h);
}

/* ---- plain C -------------------------------------------------------------- */

/* Decodes len elements of a B row starting at p (a chunk boundary) into y;
 * returns the floats (p itself for f32). */
static const float *decode_c(pxl_dtype dt, const uint8_t *p, float *y, int len) {
    switch (dt) {
    case PXL_F32: return (const float *)(const void *)p;
    case PXL_F16:
        for (int i = 0; i < len; i++) y[i] = half_at(p + 2 * i);
        return y;
    case PXL_Q4_K: pxl_q4k_dequantize(p, y, len); return y;
    case PXL_Q5_K: pxl_q5k_dequantize(p, y, len); return y;
    case PXL_Q6_K: pxl_q6k_dequantize(p, y, len); return y;
    case PXL_Q2_K: pxl_q2k_dequantize(p, y, len); return y;
    case PXL_Q3_K: pxl_q3k_dequantize(p, y, len); return y;
    case PXL_Q8_0:
        for (int b = 0; b < len; b += 32, p += 34) {
            float d = half_at(p);
            for (int i = 0; i < 32; i++) y[b + i] = d * (float)(int8_t)p[2 + i];
        }
        return y;
    case PXL_Q4_0:
        for (int b = 0; b < len; b += 32, p += 18) {
            float d = half_at(p);
            for (int i = 0; i < 16; i++) {
                y[b + i] = d * (float)((p[2 + i] & 0x0f) - 8);
                y[b + i + 16] = d * (float)((p[2 + i] >> 4) - 8);
            }
        }
        return y;
    default: pxl_qx_dequantize(dt, p, y, len); return y; /* Q5_0, Q4_1, Q5_1, bf16 */
    }
}

static float fold8(const float *s) { return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7])); }

/* out[i][j] = the chunk sum of a[i] . y[j] over len elements (i < mr, j < nr) */
static void kern_c(int mr, int nr, const float *const *a, const float *const *y, int len, float out[2][4]) {
    int len8 = len & ~7;
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++) {
            float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            const float *ai = a[i], *yj = y[j];
            for (int k = 0; k < len8; k += 8)
                for (int l = 0; l < 8; l++) s[l] += ai[k + l] * yj[k + l];
            float r = fold8(s);
            for (int k = len8; k < len; k++) r += ai[k] * yj[k];
            out[i][j] = r;
        }
}

/* ---- 8-bit activations (pxl_cpu_bt.a_q8) ----------------------------------- */

#define QB 32 /* elements per block of A */

/* 32 values of A rounded to 8 bits: value i is about d * q[i]. */
typedef struct q8blk {
    float d;
    int8_t q[QB];
} q8blk;

/* One row of A rounded for the one-row products of Q4_K, Q5_K and Q6_K on
 * 8-bit A (kq8_gemv_avx): per 256-value superblock, its eight 32-value
 * blocks as q8_round gives them (scales d, integers q), d times each
 * block's integer sum (ds: Q4_K's and Q5_K's minima), and each scale twice
 * (d2: one per 16-value group of Q6_K). */
typedef struct q8sblk {
    float d[8], ds[8], d2[16];
    int8_t q[KC];
} q8sblk;

/* The B formats the 8-bit path takes: 32-element blocks of one f16 scale
 * times signed integers of at most 8 bits. */
static int q8_takes(pxl_dtype dt) { return dt == PXL_Q8_0 || dt == PXL_Q4_0 || dt == PXL_Q5_0; }

/* id = 127 / amax as 1 / (amax / 127), and the block's scale d = amax / 127
 * rounded to f16, as llama.cpp's Q8_0 activations keep it (both 0 when amax
 * is below 2^-100 or not a number; d stays f32 above f16's range). */
static void q8_scale(float amax, float *d, float *id) {
    float s = amax >= 0x1p-100f ? amax / 127.0f : 0.0f;
    *id = s != 0.0f ? 1.0f / s : 0.0f;
    *d = s <= 65504.0f ? pxl_f16_to_f32(pxl_f32_to_f16(s)) : s;
}

/* Rounds x[0..31] into o: q = x * id, clamped to [-127, 127] (NaN to -127),
 * rounded to nearest even; the AVX2 version gives the same bytes. */
static void q8_round_c(const float *x, q8blk *o) {
    float amax = 0.0f, id;
    for (int i = 0; i < QB; i++) {
        float a = fabsf(x[i]);
        if (a > amax) amax = a; /* NaN never wins */
    }
    q8_scale(amax, &o->d, &id);
    for (int i = 0; i < QB; i++) o->q[i] = (int8_t)lrintf(fminf(fmaxf(x[i] * id, -127.0f), 127.0f));
}

/* One 32-element block of B at p as signed integers q; returns its scale. */
static float w8_c(pxl_dtype dt, const uint8_t *p, int8_t *q) {
    float d = half_at(p);
    if (dt == PXL_Q8_0) memcpy(q, p + 2, QB);
    else if (dt == PXL_Q4_0)
        for (int i = 0; i < 16; i++) {
            q[i] = (int8_t)((p[2 + i] & 0x0f) - 8);
            q[i + 16] = (int8_t)((p[2 + i] >> 4) - 8);
        }
    else { /* Q5_0 */
        uint32_t qh = (uint32_t)p[2] | (uint32_t)p[3] << 8 | (uint32_t)p[4] << 16 | (uint32_t)p[5] << 24;
        for (int i = 0; i < 16; i++) {
            q[i] = (int8_t)(((p[6 + i] & 0x0f) | ((qh >> i) & 1) << 4) - 16);
            q[i + 16] = (int8_t)(((p[6 + i] >> 4) | ((qh >> (i + 16)) & 1) << 4) - 16);
        }
    }
    return d;
}

/* out[i][j] = the chunk sum of a[i] . w[j] over nb blocks (block b of w[j]
 * at w[j] + ws * b, its scale wd[j][b]): per block, 8 lanes
 * of exact integer sums of 4 products (lane l: elements 4l..4l+3), each
 * converted to f32, multiplied by (a's d x w's d) and added to the lane;
 * the lanes folded as fold8. */
static void qkern_c(int mr, int nr, const q8blk *const *a, const int8_t *const *w, size_t ws, const float *const *wd,
                    int nb, float out[2][4]) {
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++) {
            float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            for (int b = 0; b < nb; b++) {
                const int8_t *aq = a[i][b].q, *wq = w[j] + ws * (size_t)b;
                float sc = a[i][b].d * wd[j][b];
                for (int l = 0; l < 8; l++) {
                    int t = 0;
                    for (int e = 4 * l; e < 4 * l + 4; e++) t += aq[e] * wq[e];
                    float m = (float)t * sc; /* two statements: never contracted */
                    s[l] += m;
                }
            }
            out[i][j] = fold8(s);
        }
}

/* ---- x86-64: AVX2 + FMA + F16C --------------------------------------------- */

#if defined(__GNUC__) && defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#define PXL_CPU_X86 1
#define AVX2 __attribute__((target("avx2,fma,f16c")))
#define AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")))

/* 8 bytes at p as 8 int32 (unsigned) */
AVX2 static inline __m256i u8x8(const uint8_t *p) {
    long long v;
    memcpy(&v, p, 8);
    return _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(v));
}
AVX2 static inline __m256i i8x8(const uint8_t *p) {
    long long v;
    memcpy(&v, p, 8);
    return _mm256_cvtepi8_epi32(_mm_cvtsi64_si128(v));
}
AVX2 static inline __m256 f32x8(__m256i v) { return _mm256_cvtepi32_ps(v); }

/* bit 4 of the 5-bit levels j0..j0+7 of a Q5_0 / Q5_1 block: ((qh >> j) & 1) << 4 */
AVX2 static inline __m256i q5_high(uint32_t qh, int j0) {
    __m256i sh = _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(j0));
    __m256i b = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)qh), sh), _mm256_set1_epi32(1));
    return _mm256_slli_epi32(b, 4);
}

/* an f16 at p (F16C: exact, as pxl_f16_to_f32) */
AVX2 static inline float half_avx(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

/* The 6-bit scale and min of Q4_K / Q5_K sub-block j (as kquant.c) */
AVX2 static inline void kq_scale_min(const uint8_t *q, int j, int *sc, int *m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

/* The same floats as decode_c: every value is computed with the same
 * roundings (multiplies and adds kept apart; ISO C mode does not contract). */
AVX2 static const float *decode_avx(pxl_dtype dt, const uint8_t *p, float *y, int len) {
    const __m256i lo4 = _mm256_set1_epi32(0x0f);
    switch (dt) {
    case PXL_F32: return (const float *)(const void *)p;
    case PXL_F16: {
        int i = 0;
        for (; i + 8 <= len; i += 8) _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(p + 2 * i))));
        for (; i < len; i++) y[i] = half_avx(p + 2 * i);
        return y;
    }
    case PXL_BF16: {
        int i = 0;
        for (; i + 8 <= len; i += 8) {
            __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(p + 2 * i)));
            _mm256_storeu_ps(y + i, _mm256_castsi256_ps(_mm256_slli_epi32(h, 16)));
        }
        for (; i < len; i++) y[i] = pxl_bf16_to_f32((uint16_t)(p[2 * i] | p[2 * i + 1] << 8));
        return y;
    }
    case PXL_Q8_0:
        for (int b = 0; b < len; b += 32, p += 34) {
            __m256 d = _mm256_set1_ps(half_avx(p));
            for (int i = 0; i < 32; i += 8) _mm256_storeu_ps(y + b + i, _mm256_mul_ps(d, f32x8(i8x8(p + 2 + i))));
        }
        return y;
    case PXL_Q4_0: {
        const __m256i e8 = _mm256_set1_epi32(8);
        for (int b = 0; b < len; b += 32, p += 18) {
            __m256 d = _mm256_set1_ps(half_avx(p));
            for (int i = 0; i < 16; i += 8) {
                __m256i q = u8x8(p + 2 + i);
                __m256i l = _mm256_sub_epi32(_mm256_and_si256(q, lo4), e8);
                __m256i h = _mm256_sub_epi32(_mm256_srli_epi32(q, 4), e8);
                _mm256_storeu_ps(y + b + i, _mm256_mul_ps(d, f32x8(l)));
                _mm256_storeu_ps(y + b + 16 + i, _mm256_mul_ps(d, f32x8(h)));
            }
        }
        return y;
    }
    case PXL_Q5_0: { /* (float)(q - 16) * d */
        const __m256i e16 = _mm256_set1_epi32(16);
        for (int b = 0; b < len; b += 32, p += 22) {
            __m256 d = _mm256_set1_ps(half_avx(p));
            uint32_t qh;
            memcpy(&qh, p + 2, 4);
            for (int i = 0; i < 16; i += 8) {
                __m256i q = u8x8(p + 6 + i);
                __m256i l = _mm256_or_si256(_mm256_and_si256(q, lo4), q5_high(qh, i));
                __m256i h = _mm256_or_si256(_mm256_srli_epi32(q, 4), q5_high(qh, 16 + i));
                _mm256_storeu_ps(y + b + i, _mm256_mul_ps(f32x8(_mm256_sub_epi32(l, e16)), d));
                _mm256_storeu_ps(y + b + 16 + i, _mm256_mul_ps(f32x8(_mm256_sub_epi32(h, e16)), d));
            }
        }
        return y;
    }
    case PXL_Q4_1:
    case PXL_Q5_1: { /* (float)q * d + m, rounded twice */
        int five = dt == PXL_Q5_1;
        size_t bb = five ? 24 : 20;
        for (int b = 0; b < len; b += 32, p += bb) {
            __m256 d = _mm256_set1_ps(half_avx(p)), m = _mm256_set1_ps(half_avx(p + 2));
            uint32_t qh = 0;
            if (five) memcpy(&qh, p + 4, 4);
            const uint8_t *qs = p + (five ? 8 : 4);
            for (int i = 0; i < 16; i += 8) {
                __m256i q = u8x8(qs + i);
                __m256i l = _mm256_and_si256(q, lo4), h = _mm256_srli_epi32(q, 4);
                if (five) {
                    l = _mm256_or_si256(l, q5_high(qh, i));
                    h = _mm256_or_si256(h, q5_high(qh, 16 + i));
                }
                _mm256_storeu_ps(y + b + i, _mm256_add_ps(_mm256_mul_ps(f32x8(l), d), m));
                _mm256_storeu_ps(y + b + 16 + i, _mm256_add_ps(_mm256_mul_ps(f32x8(h), d), m));
            }
        }
        return y;
    }
    case PXL_Q4_K:
    case PXL_Q5_K: { /* d1 * (float)q - m1, d1 = d * sc, m1 = dmin * m */
        int five = dt == PXL_Q5_K;
        float d = half_avx(p), dmin = half_avx(p + 2);
        const uint8_t *qh = p + 16, *q = p + (five ? 48 : 16);
        for (int pair = 0; pair < 4; pair++, q += 32, y += 64) {
            int sc, m;
            kq_scale_min(p + 4, 2 * pair, &sc, &m);
            __m256 d1 = _mm256_set1_ps(d * (float)sc), m1 = _mm256_set1_ps(dmin * (float)m);
            kq_scale_min(p + 4, 2 * pair + 1, &sc, &m);
            __m256 d2 = _mm256_set1_ps(d * (float)sc), m2 = _mm256_set1_ps(dmin * (float)m);
            __m256i s1 = _mm256_set1_epi32(2 * pair), s2 = _mm256_set1_epi32(2 * pair + 1), one = _mm256_set1_epi32(1);
            for (int l = 0; l < 32; l += 8) {
                __m256i v = u8x8(q + l);
                __m256i a = _mm256_and_si256(v, lo4), b = _mm256_srli_epi32(v, 4);
                if (five) {
                    __m256i h = u8x8(qh + l);
                    a = _mm256_or_si256(a, _mm256_slli_epi32(_mm256_and_si256(_mm256_srlv_epi32(h, s1), one), 4));
                    b = _mm256_or_si256(b, _mm256_slli_epi32(_mm256_and_si256(_mm256_srlv_epi32(h, s2), one), 4));
                }
                _mm256_storeu_ps(y + l, _mm256_sub_ps(_mm256_mul_ps(d1, f32x8(a)), m1));
                _mm256_storeu_ps(y + 32 + l, _mm256_sub_ps(_mm256_mul_ps(d2, f32x8(b)), m2));
            }
        }
        return y - 256;
    }
    case PXL_Q6_K: { /* (d * (float)sc) * (float)q */
        float d = half_avx(p + 208);
        const uint8_t *ql = p, *qh = p + 128;
        const int8_t *sc = (const int8_t *)(const void *)(p + 192);
        const __m256i e32 = _mm256_set1_epi32(32), three = _mm256_set1_epi32(3);
        for (int half = 0; half < 2; half++, y += 128, ql += 64, qh += 32, sc += 8) {
            for (int l = 0; l < 32; l += 8) {
                int is = l / 16;
                __m256i a = u8x8(ql + l), b = u8x8(ql + 32 + l), h = u8x8(qh + l);
                __m256i q1 = _mm256_or_si256(_mm256_and_si256(a, lo4), _mm256_slli_epi32(_mm256_and_si256(h, three), 4));
                __m256i q2 = _mm256_or_si256(_mm256_and_si256(b, lo4),
                                             _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(h, 2), three), 4));
                __m256i q3 = _mm256_or_si256(_mm256_srli_epi32(a, 4),
                                             _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(h, 4), three), 4));
                __m256i q4 = _mm256_or_si256(_mm256_srli_epi32(b, 4), _mm256_slli_epi32(_mm256_srli_epi32(h, 6), 4));
                _mm256_storeu_ps(y + l, _mm256_mul_ps(_mm256_set1_ps(d * (float)sc[is]), f32x8(_mm256_sub_epi32(q1, e32))));
                _mm256_storeu_ps(y + l + 32,
                                 _mm256_mul_ps(_mm256_set1_ps(d * (float)sc[is + 2]), f32x8(_mm256_sub_epi32(q2, e32))));
                _mm256_storeu_ps(y + l + 64,
                                 _mm256_mul_ps(_mm256_set1_ps(d * (float)sc[is + 4]), f32x8(_mm256_sub_epi32(q3, e32))));
                _mm256_storeu_ps(y + l + 96,
                                 _mm256_mul_ps(_mm256_set1_ps(d * (float)sc[is + 6]), f32x8(_mm256_sub_epi32(q4, e32))));
            }
        }
        return y - 256;
    }
    case PXL_Q2_K: { /* (d * sc) * (float)q - dmin * m, per group of 16 */
        const __m256i three = _mm256_set1_epi32(3);
        for (int b = 0; b < len; b += 256, p += 84) {
            float d = half_avx(p + 80), dmin = half_avx(p + 82);
            const uint8_t *sc = p, *q = p + 16;
            for (int h = 0; h < 2; h++, q += 32)
                for (int j = 0; j < 4; j++) {
                    __m128i shj = _mm_cvtsi32_si128(2 * j);
                    for (int g = 0; g < 2; g++, y += 16) {
                        int s = *sc++;
                        __m256 dl = _mm256_set1_ps(d * (float)(s & 0x0f)), ml = _mm256_set1_ps(dmin * (float)(s >> 4));
                        for (int l = 0; l < 16; l += 8) {
                            __m256i v = _mm256_and_si256(_mm256_srl_epi32(u8x8(q + 16 * g + l), shj), three);
                            _mm256_storeu_ps(y + l, _mm256_sub_ps(_mm256_mul_ps(dl, f32x8(v)), ml));
                        }
                    }
                }
        }
        return y - len;
    }
    case PXL_Q3_K: { /* (d * (scale - 32)) * (float)(q - 4 * !hbit) */
        const __m256i three = _mm256_set1_epi32(3), one = _mm256_set1_epi32(1), four = _mm256_set1_epi32(4);
        for (int b = 0; b < len; b += 256, p += 110) {
            float d = half_avx(p + 108);
            const uint8_t *hm = p, *q = p + 32, *ps = p + 96;
            int is = 0;
            for (int h = 0; h < 2; h++, q += 32)
                for (int j = 0; j < 4; j++) {
                    __m128i bit = _mm_cvtsi32_si128(4 * h + j), shj = _mm_cvtsi32_si128(2 * j);
                    for (int g = 0; g < 2; g++, y += 16, is++) {
                        int lo = (ps[is & 7] >> (4 * (is >> 3))) & 0x0f, hi = (ps[8 + (is & 3)] >> (2 * (is >> 2))) & 3;
                        __m256 dl = _mm256_set1_ps(d * (float)((lo | (hi << 4)) - 32));
                        for (int l = 0; l < 16; l += 8) {
                            __m256i v = _mm256_and_si256(_mm256_srl_epi32(u8x8(q + 16 * g + l), shj), three);
                            __m256i hb = _mm256_and_si256(_mm256_srl_epi32(u8x8(hm + 16 * g + l), bit), one);
                            v = _mm256_sub_epi32(v, _mm256_andnot_si256(_mm256_slli_epi32(hb, 2), four));
                            _mm256_storeu_ps(y + l, _mm256_mul_ps(dl, f32x8(v)));
                        }
                    }
                }
        }
        return y - len;
    }
    default: return decode_c(dt, p, y, len);
    }
}

/* fold8's order on a vector */
AVX2 static inline float fold8_avx(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1)); /* l0+l4, l1+l5, l2+l6, l3+l7 */
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));                                      /* (l0+l4)+(l2+l6), (l1+l5)+(l3+l7) */
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

/* fold8_avx of v[0..3] at once, into the four lanes: the same sums in the
 * same order (each lane's s0 + s2 and s1 + s3 after a 4 x 4 transpose), in
 * fewer operations than four folds */
AVX2 static inline __m128 fold8x4_avx(const __m256 *v) {
    __m128 s[4];
    for (int i = 0; i < 4; i++) s[i] = _mm_add_ps(_mm256_castps256_ps128(v[i]), _mm256_extractf128_ps(v[i], 1));
    __m128 a = _mm_unpacklo_ps(s[0], s[1]), b = _mm_unpackhi_ps(s[0], s[1]);
    __m128 c = _mm_unpacklo_ps(s[2], s[3]), d = _mm_unpackhi_ps(s[2], s[3]);
    __m128 x0 = _mm_movelh_ps(a, c), x1 = _mm_movehl_ps(c, a); /* lane 0, lane 1 of each */
    __m128 x2 = _mm_movelh_ps(b, d), x3 = _mm_movehl_ps(d, b); /* lane 2, lane 3 */
    return _mm_add_ps(_mm_add_ps(x0, x2), _mm_add_ps(x1, x3));
}

#define KERN_AVX(MR, NR)                                                                                             \
    AVX2 static void kern_avx_##MR##NR(const float *const *a, const float *const *y, int len, float out[2][4]) {    \
        __m256 acc[MR][NR];                                                                                          \
        for (int i = 0; i < MR; i++)                                                                                 \
            for (int j = 0; j < NR; j++) acc[i][j] = _mm256_setzero_ps();                                            \
        int len8 = len & ~7;                                                                                         \
        for (int k = 0; k < len8; k += 8) {                                                                          \
            __m256 b[NR];                                                                                            \
            for (int j = 0; j < NR; j++) b[j] = _mm256_loadu_ps(y[j] + k);                                          \
            for (int i = 0; i < MR; i++) {                                                                           \
                __m256 av = _mm256_loadu_ps(a[i] + k);                                                               \
                for (int j = 0; j < NR; j++) acc[i][j] = _mm256_fmadd_ps(av, b[j], acc[i][j]);                       \
            }                                                                                                        \
        }                                                                                                            \
        for (int i = 0; i < MR; i++)                                                                                 \
            for (int j = 0; j < NR; j++) {                                                                           \
                float r = fold8_avx(acc[i][j]);                                                                      \
                for (int k = len8; k < len; k++) r = __builtin_fmaf(a[i][k], y[j][k], r);                            \
                out[i][j] = r;                                                                                       \
            }                                                                                                        \
    }
KERN_AVX(2, 4)
KERN_AVX(1, 4)
KERN_AVX(2, 1)
KERN_AVX(1, 1)

/* kern_avx_24's sums for MR rows of A (2, 4 or 8) and 4 of B with AVX-512,
 * the same bits: B rows 0 and 1 share one 512-bit register (low and high
 * half), rows 2 and 3 another, and A's 8 values go to both halves, so each
 * half takes kern_avx_24's fused multiply-adds of its (A row, B row) pair
 * in the same order: half the multiply-add instructions (and with 8 rows,
 * 16 chains of them in flight, each pair of B rows loaded once for 8 of
 * them). The halves fold as fold8x4_avx. */
AVX512 static inline __attribute__((always_inline)) void kern_512_x4(int MR, const float *const *a,
                                                                     const float *const *y, int len,
                                                                     float (*out)[4]) {
    __m512 acc[8][2];
    for (int i = 0; i < MR; i++) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    int len8 = len & ~7;
    for (int k = 0; k < len8; k += 8) {
        __m512 b01 = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(y[0] + k)), _mm256_loadu_ps(y[1] + k), 1);
        __m512 b23 = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(y[2] + k)), _mm256_loadu_ps(y[3] + k), 1);
        for (int i = 0; i < MR; i++) {
            __m512 av = _mm512_broadcast_f32x8(_mm256_loadu_ps(a[i] + k));
            acc[i][0] = _mm512_fmadd_ps(av, b01, acc[i][0]);
            acc[i][1] = _mm512_fmadd_ps(av, b23, acc[i][1]);
        }
    }
    for (int i = 0; i < MR; i++) {
        __m256 h[4] = {_mm512_castps512_ps256(acc[i][0]), _mm512_extractf32x8_ps(acc[i][0], 1),
                       _mm512_castps512_ps256(acc[i][1]), _mm512_extractf32x8_ps(acc[i][1], 1)};
        float r[4];
        _mm_storeu_ps(r, fold8x4_avx(h));
        for (int j = 0; j < 4; j++) {
            for (int k = len8; k < len; k++) r[j] = __builtin_fmaf(a[i][k], y[j][k], r[j]);
            out[i][j] = r[j];
        }
    }
}

AVX512 static void kern_512_24(const float *const *a, const float *const *y, int len, float out[2][4]) {
    kern_512_x4(2, a, y, len, out);
}

/* four or eight rows of A against 4 of B (bt_range with simd level 2) */
AVX512 static void kern_512_44(const float *const *a, const float *const *y, int len, float out[4][4]) {
    kern_512_x4(4, a, y, len, out);
}
AVX512 static void kern_512_84(const float *const *a, const float *const *y, int len, float out[8][4]) {
    kern_512_x4(8, a, y, len, out);
}

/* simd: pxl_cpu_simd's level (2: kern_512_24 for the 2 x 4 tiles) */
AVX2 static void kern_avx(int simd, int mr, int nr, const float *const *a, const float *const *y, int len,
                          float out[2][4]) {
    if (mr == 2 && nr == 4 && simd >= 2) kern_512_24(a, y, len, out);
    else if (mr == 2 && nr == 4) kern_avx_24(a, y, len, out);
    else if (nr == 4) kern_avx_14(a, y, len, out);
    else
        for (int j = 0; j < nr; j++) {
            float o[2][4];
            if (mr == 2) kern_avx_21(a, y + j, len, o);
            else kern_avx_11(a, y + j, len, o);
            for (int i = 0; i < mr; i++) out[i][j] = o[i][0];
        }
}
/* q8_round_c on AVX2: the same bytes */
AVX2 static void q8_round_avx(const float *x, q8blk *o) {
    const __m256 sgn = _mm256_set1_ps(-0.0f), lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
    __m256 v[4], m = _mm256_setzero_ps();
    for (int i = 0; i < 4; i++) {
        v[i] = _mm256_loadu_ps(x + 8 * i);
        m = _mm256_max_ps(_mm256_andnot_ps(sgn, v[i]), m); /* a NaN first operand gives m */
    }
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_movehdup_ps(h));
    float id;
    q8_scale(_mm_cvtss_f32(h), &o->d, &id);
    __m256 iv = _mm256_set1_ps(id);
    __m256i r[4];
    for (int i = 0; i < 4; i++) /* max_ps(NaN, lo) is lo, as fmaxf */
        r[i] = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(v[i], iv), lo), hi));
    __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(r[0], r[1]), _mm256_packs_epi32(r[2], r[3]));
    p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256((__m256i *)(void *)o->q, p);
}

/* w8_c on AVX2: the 32 integers of a block as bytes, and its scale */
AVX2 static inline __m256i w8_avx(pxl_dtype dt, const uint8_t *p, float *d) {
    *d = half_avx(p);
    if (dt == PXL_Q8_0) return _mm256_loadu_si256((const __m256i *)(const void *)(p + 2));
    const __m128i m4 = _mm_set1_epi8(0x0f);
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + (dt == PXL_Q4_0 ? 2 : 6)));
    __m256i q = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), m4), _mm_and_si128(v, m4));
    if (dt == PXL_Q4_0) return _mm256_sub_epi8(q, _mm256_set1_epi8(8));
    uint32_t qh; /* Q5_0: byte i takes bit i of qh as 0x10 */
    memcpy(&qh, p + 2, 4);
    __m256i bits = _mm256_shuffle_epi8(_mm256_set1_epi32((int)qh),
                                       _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2,
                                                        2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
    const __m256i sel = _mm256_setr_epi8(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32,
                                         64, -128, 1, 2, 4, 8, 16, 32, 64, -128);
    __m256i hb = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(bits, sel), sel), _mm256_set1_epi8(0x10));
    return _mm256_sub_epi8(_mm256_or_si256(q, hb), _mm256_set1_epi8(16));
}

/* nb blocks of B from p (bbytes apart) into q (32 bytes each) and d */
AVX2 static void w8_chunk_avx(pxl_dtype dt, const uint8_t *p, size_t bbytes, int nb, int8_t *q, float *d) {
    for (int k = 0; k < nb; k++, p += bbytes) _mm256_storeu_si256((__m256i *)(void *)(q + QB * k), w8_avx(dt, p, d + k));
}

/* Q8_0: only the scales of nb blocks (the kernels read the bytes in place) */
AVX2 static void w8_scales_avx(const uint8_t *p, int nb, float *d) {
    for (int k = 0; k < nb; k++, p += 34) d[k] = half_avx(p);
}

#define QKERN_AVX(MR, NR)                                                                                            \
    AVX2 static void qkern_avx_##MR##NR(const q8blk *const *a, const int8_t *const *w, size_t ws,                  \
                                        const float *const *wd, int nb, float out[2][4]) {                          \
        const __m256i ones = _mm256_set1_epi16(1);                                                                  \
        __m256 acc[MR][NR];                                                                                         \
        for (int i = 0; i < MR; i++)                                                                                \
            for (int j = 0; j < NR; j++) acc[i][j] = _mm256_setzero_ps();                                           \
        for (int b = 0; b < nb; b++) {                                                                              \
            __m256i wv[NR], wa[NR];                                                                                 \
            for (int j = 0; j < NR; j++) {                                                                          \
                wv[j] = _mm256_loadu_si256((const __m256i *)(const void *)(w[j] + ws * (size_t)b));              \
                wa[j] = _mm256_sign_epi8(wv[j], wv[j]); /* |w| as unsigned bytes (128 for -128) */                 \
            }                                                                                                       \
            for (int i = 0; i < MR; i++) {                                                                          \
                const q8blk *ab = a[i] + b;                                                                         \
                __m256i av = _mm256_loadu_si256((const __m256i *)(const void *)ab->q);                             \
                for (int j = 0; j < NR; j++) { /* |w| * (a sign w): pairs below 2^15, no saturation */             \
                    __m256i t = _mm256_madd_epi16(_mm256_maddubs_epi16(wa[j], _mm256_sign_epi8(av, wv[j])), ones);  \
                    __m256 sc = _mm256_set1_ps(ab->d * wd[j][b]);                                                   \
                    acc[i][j] = _mm256_add_ps(acc[i][j], _mm256_mul_ps(_mm256_cvtepi32_ps(t), sc));                 \
                }                                                                                                   \
            }                                                                                                       \
        }                                                                                                           \
        for (int i = 0; i < MR; i++)                                                                                \
            for (int j = 0; j < NR; j++) out[i][j] = fold8_avx(acc[i][j]);                                          \
    }
QKERN_AVX(2, 4)
QKERN_AVX(1, 4)
QKERN_AVX(2, 1)
QKERN_AVX(1, 1)

AVX2 static void qkern_avx(int mr, int nr, const q8blk *const *a, const int8_t *const *w, size_t ws,
                           const float *const *wd, int nb, float out[2][4]) {
    if (mr == 2 && nr == 4) qkern_avx_24(a, w, ws, wd, nb, out);
    else if (nr == 4) qkern_avx_14(a, w, ws, wd, nb, out);
    else
        for (int j = 0; j < nr; j++) {
            float o[2][4];
            if (mr == 2) qkern_avx_21(a, w + j, ws, wd + j, nb, o);
            else qkern_avx_11(a, w + j, ws, wd + j, nb, o);
            for (int i = 0; i < mr; i++) out[i][j] = o[i][0];
        }
}

/* The bytes of B a one-row product takes next, asked for one band of rows
 * ahead. The product takes a tile's rows in bands of up to four, each band
 * over the whole of K, and a tile's rows lie one after another, so while a
 * band is multiplied its successor's bytes are fetched in step with it:
 * block step g of the band asks for bytes [g adv, g adv + 128) of the next
 * band (adv: the band's bytes a step), never past B's end. Offsets from B's
 * first byte, so that no pointer is formed past B. */
typedef struct {
    const uint8_t *b;
    size_t at, end, adv; /* the next byte to ask for, B's bytes, bytes a step */
} band_fetch;

/* the fetch of the band after the one at byte `band` of B, whose rows span
 * `bytes` (adv as band_fetch) */
static inline band_fetch band_fetch_after(const bt_job *j, const uint8_t *band, size_t bytes, size_t adv) {
    band_fetch f = {j->b, (size_t)(band - j->b) + bytes, (size_t)j->batch_b * (size_t)j->N * j->row_bytes, adv};
    return f;
}

/* the next n bytes of the next band, at once (the exact one-row product: a
 * chunk of each of its rows) */
static inline void band_fetch_bytes(band_fetch *f, size_t n) {
    for (size_t x = f->at, e = f->at + n; x < e && x < f->end; x += 64) __builtin_prefetch(f->b + x);
    f->at += n;
}

static inline void band_fetch_step(band_fetch *f) {
    if (f->at < f->end) {
        __builtin_prefetch(f->b + f->at);
        if (f->adv > 64 && f->at + 64 < f->end) __builtin_prefetch(f->b + f->at + 64);
    }
    f->at += f->adv;
}

/* s[r] (r < R) += the lanes of row r's blocks (from p[r], bbytes apart) times
 * A's nb blocks from ak; dt and R are constants where it is inlined, so the
 * R sums stay in registers */
AVX2 static inline __attribute__((always_inline)) void qgemv_rows_avx(pxl_dtype dt, int R, const q8blk *ak,
                                                                      const uint8_t *const *p, int nb,
                                                                      size_t bbytes, __m256 *s, band_fetch *f) {
    const __m256i ones = _mm256_set1_epi16(1);
    for (int k = 0; k < nb; k++) {
        band_fetch_step(f);
        __m256i av = _mm256_loadu_si256((const __m256i *)(const void *)ak[k].q);
        for (int r = 0; r < R; r++) {
            float wd;
            __m256i wv = w8_avx(dt, p[r] + (size_t)k * bbytes, &wd);
            __m256i wa = _mm256_sign_epi8(wv, wv); /* |w| as unsigned bytes (128 for -128) */
            __m256i t = _mm256_madd_epi16(_mm256_maddubs_epi16(wa, _mm256_sign_epi8(av, wv)), ones);
            s[r] = _mm256_add_ps(s[r], _mm256_mul_ps(_mm256_cvtepi32_ps(t), _mm256_set1_ps(ak[k].d * wd)));
        }
    }
}

/* qgemv_rows_avx's four rows (R = 4) with AVX-512 VNNI, the same sums: two
 * rows a 512-bit register (s01: rows 0 and 1, s23: rows 2 and 3, each half
 * the 8 lanes of its row). vpdpbusd takes unsigned bytes times signed ones,
 * so A's bytes go in as a + 128 (1 .. 255) and 128 times the weights' sums
 * come off again: each 32-bit lane is exactly the sum of its four products
 * a w, as maddubs and madd give it (no lane exceeds 2^17). The four block
 * scales ak.d wd are converted and multiplied as one vector and spread to
 * the halves. With the same operations after the integers, the bits are
 * qgemv_rows_avx's, in about half the vector operations a block. */
AVX512 static inline __attribute__((always_inline)) void qgemv4_512(pxl_dtype dt, const q8blk *ak,
                                                                    const uint8_t *const *p, int nb, size_t bbytes,
                                                                    __m512 *s01, __m512 *s23, band_fetch *f) {
    const __m512i bias = _mm512_set1_epi8((char)0x80);
    const __m512i i01 = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    const __m512i i23 = _mm512_setr_epi32(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    for (int k = 0; k < nb; k++) {
        band_fetch_step(f);
        size_t o = (size_t)k * bbytes;
        __m512i au = _mm512_xor_si512(_mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(const void *)ak[k].q)), bias);
        __m256i w[4];
        uint16_t h[4];
        for (int r = 0; r < 4; r++) {
            float unused;
            w[r] = w8_avx(dt, p[r] + o, &unused);
            memcpy(&h[r], p[r] + o, 2); /* the block's f16 scale (Q8_0, Q4_0, Q5_0: its first bytes) */
        }
        __m512i w01 = _mm512_inserti64x4(_mm512_castsi256_si512(w[0]), w[1], 1);
        __m512i w23 = _mm512_inserti64x4(_mm512_castsi256_si512(w[2]), w[3], 1);
        __m128i hv = _mm_setr_epi16((short)h[0], (short)h[1], (short)h[2], (short)h[3], 0, 0, 0, 0);
        __m512 d4 = _mm512_castps128_ps512(_mm_mul_ps(_mm_set1_ps(ak[k].d), _mm_cvtph_ps(hv)));
        __m512i t01 = _mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), au, w01),
                                       _mm512_dpbusd_epi32(_mm512_setzero_si512(), bias, w01));
        __m512i t23 = _mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), au, w23),
                                       _mm512_dpbusd_epi32(_mm512_setzero_si512(), bias, w23));
        *s01 = _mm512_add_ps(*s01, _mm512_mul_ps(_mm512_cvtepi32_ps(t01), _mm512_permutexvar_ps(i01, d4)));
        *s23 = _mm512_add_ps(*s23, _mm512_mul_ps(_mm512_cvtepi32_ps(t23), _mm512_permutexvar_ps(i23, d4)));
    }
}

/* fold8x4_avx of the four rows of s01 and s23 (qgemv4_512's), in fold8's
 * order within each 256-bit half: lanes l + (l + 4), then lanes 0 + 2 and
 * 1 + 3, then those two; rows 0 .. 3 in the four lanes returned */
AVX512 static inline __m128 fold8x4_512(__m512 s01, __m512 s23) {
    const __m512i pick = _mm512_setr_epi32(0, 8, 16, 24, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    __m512 v[2] = {s01, s23};
    for (int i = 0; i < 2; i++) {
        v[i] = _mm512_add_ps(v[i], _mm512_shuffle_f32x4(v[i], v[i], _MM_SHUFFLE(2, 3, 0, 1)));
        v[i] = _mm512_add_ps(v[i], _mm512_permute_ps(v[i], _MM_SHUFFLE(1, 0, 3, 2)));
        v[i] = _mm512_add_ps(v[i], _mm512_movehdup_ps(v[i]));
    }
    return _mm512_castps512_ps128(_mm512_permutex2var_ps(v[0], pick, v[1]));
}

/* qgemv_avx's bands of four rows with AVX-512 VNNI, for the first nt - nt %
 * 4 rows: each band's chunks through qgemv4_512, the folds added to the
 * band's four sums in double, kept in a register until the band ends */
AVX512 static inline __attribute__((always_inline)) void qgemv_bands_512(pxl_dtype dt, const bt_job *j, const q8blk *a,
                                                                         const uint8_t *b, int nt, size_t bbytes,
                                                                         double *acc) {
    for (int n = 0; n + 4 <= nt; n += 4) {
        const uint8_t *band = b + (size_t)n * j->row_bytes;
        band_fetch f = band_fetch_after(j, band, 4 * j->row_bytes, 4 * bbytes);
        __m256d sum = _mm256_loadu_pd(acc + n);
        for (int64_t k0 = 0; k0 < j->K; k0 += KC) {
            int nb = (int)((j->K - k0 < KC ? j->K - k0 : KC) / QB);
            const uint8_t *p[4];
            for (int r = 0; r < 4; r++) p[r] = band + (size_t)r * j->row_bytes + (size_t)(k0 / QB) * bbytes;
            __m512 s01 = _mm512_setzero_ps(), s23 = _mm512_setzero_ps();
            qgemv4_512(dt, a + k0 / QB, p, nb, bbytes, &s01, &s23, &f);
            sum = _mm256_add_pd(sum, _mm256_cvtps_pd(fold8x4_512(s01, s23)));
        }
        _mm256_storeu_pd(acc + n, sum);
    }
}

AVX512 static void qgemv_512(const bt_job *j, const q8blk *a, const uint8_t *b, int nt, size_t bbytes, double *acc) {
    switch (j->dt) {
    case PXL_Q8_0: qgemv_bands_512(PXL_Q8_0, j, a, b, nt, bbytes, acc); break;
    case PXL_Q4_0: qgemv_bands_512(PXL_Q4_0, j, a, b, nt, bbytes, acc); break;
    default: qgemv_bands_512(PXL_Q5_0, j, a, b, nt, bbytes, acc); break; /* Q5_0 (q8_takes) */
    }
}

/* qgemv_rows_avx for dt, four rows at once or one at a time (the same sums) */
AVX2 static void qgemv_rows_dt(pxl_dtype dt, int nr, const q8blk *ak, const uint8_t *const *p, int nb, size_t bbytes,
                               __m256 *s, band_fetch *f) {
#define QGEMV_ROWS(DT)                                                                                   \
    do {                                                                                                 \
        if (nr == 4) qgemv_rows_avx(DT, 4, ak, p, nb, bbytes, s, f);                                     \
        else                                                                                             \
            for (int r = 0; r < nr; r++) qgemv_rows_avx(DT, 1, ak, p + r, nb, bbytes, s + r, f);         \
    } while (0)
    switch (dt) {
    case PXL_Q8_0: QGEMV_ROWS(PXL_Q8_0); break;
    case PXL_Q4_0: QGEMV_ROWS(PXL_Q4_0); break;
    default: QGEMV_ROWS(PXL_Q5_0); break; /* Q5_0 (q8_takes) */
    }
#undef QGEMV_ROWS
}

/* One row of A on the 8-bit path (qbt_range's tasks with M = 1): each B
 * block's integers are taken where they lie (Q8_0) or decoded into a
 * register (Q4_0, Q5_0: w8_avx) and multiplied with A's block at once, four
 * rows side by side; no chunk of B goes through a buffer and no pass
 * decodes the scales first. The tile's rows go in bands of four, each band
 * over all of K in chunks, the next band fetched meanwhile (band_fetch);
 * with AVX-512 VNNI (simd level 2) the whole bands through qgemv_512. The
 * same operations in the same order as qkern_avx's 1 x 4 and 1 x 1 kernels
 * on w8_chunk_avx's bytes (per block (d_a d_b) times the integer sums, added
 * to 8 lanes; fold8 per chunk, the chunk's sum added in double): the same
 * results. */
AVX2 static void qgemv_avx(const bt_job *j, const q8blk *a, const uint8_t *b, int nt, double *acc) {
    size_t bbytes;
    int belems;
    block_geom(j->dt, &bbytes, &belems);
    int n = 0;
    if (j->simd >= 2) {
        qgemv_512(j, a, b, nt, bbytes, acc);
        n = nt - nt % 4;
    }
    for (; n < nt; n += 4) {
        int nr = nt - n < 4 ? nt - n : 4;
        const uint8_t *band = b + (size_t)n * j->row_bytes;
        /* four rows step the fetch once a block for all of them; fewer, once a block for each */
        band_fetch f = band_fetch_after(j, band, (size_t)nr * j->row_bytes, nr == 4 ? 4 * bbytes : bbytes);
        __m256d sum = nr == 4 ? _mm256_loadu_pd(acc + n) : _mm256_setzero_pd();
        for (int64_t k0 = 0; k0 < j->K; k0 += KC) {
            int nb = (int)((j->K - k0 < KC ? j->K - k0 : KC) / QB);
            const uint8_t *p[4];
            __m256 s[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
            for (int r = 0; r < nr; r++) p[r] = band + (size_t)r * j->row_bytes + (size_t)(k0 / QB) * bbytes;
            qgemv_rows_dt(j->dt, nr, a + k0 / QB, p, nb, bbytes, s, &f);
            if (nr == 4) sum = _mm256_add_pd(sum, _mm256_cvtps_pd(fold8x4_avx(s)));
            else
                for (int r = 0; r < nr; r++) acc[n + r] += (double)fold8_avx(s[r]);
        }
        if (nr == 4) _mm256_storeu_pd(acc + n, sum);
    }
}

/* ---- one row of 8-bit A against K-quant B (Q4_K, Q5_K, Q6_K) ---------------- */

/* The sums here are the 8-bit product of a_q8 taken in integers: per block
 * of A (32 values) and row of B, 8 lanes of exact integer sums of 4
 * products w a (lane l: values 4l .. 4l + 3, w the format's unsigned
 * levels, Q6_K's less 32), each converted to f32 and added to the row's
 * lane in a fused multiply-add with the lane's scale:
 *   Q4_K, Q5_K: (d sc_j) d_a of sub-block j, and per superblock the minima
 *     (dmin m_j) (d_a s_a) in 8 lanes of their own, subtracted after the fold;
 *   Q6_K: (d sc_g) d_a of the lane's 16-value group g.
 * Per superblock (a chunk): fold8 of the lanes (less fold8 of the minima),
 * added in double. The AVX2 code (one row a register) and the AVX-512 VNNI
 * code (two rows a register, vpdpbusd) do the same operations on each lane:
 * the same bits. Against a_q8's reference (A replaced by d q and the exact
 * path, as the plain C code and the tiled path take it) only the f32
 * roundings differ. */

/* The 6-bit scales (sc) and minima (m) of a Q4_K / Q5_K superblock's eight
 * sub-blocks as 8 bytes each (kq_scale_min's values, j in byte j) */
static inline void kq_scales8(const uint8_t *s12, uint64_t *sc, uint64_t *m) {
    uint32_t w0, w1, w2;
    memcpy(&w0, s12, 4);
    memcpy(&w1, s12 + 4, 4);
    memcpy(&w2, s12 + 8, 4);
    uint32_t sc_lo = w0 & 0x3f3f3f3fu, m_lo = w1 & 0x3f3f3f3fu;
    uint32_t sc_hi = (w2 & 0x0f0f0f0fu) | ((w0 >> 6) & 0x03030303u) << 4;
    uint32_t m_hi = ((w2 >> 4) & 0x0f0f0f0fu) | ((w1 >> 6) & 0x03030303u) << 4;
    *sc = (uint64_t)sc_lo | (uint64_t)sc_hi << 32;
    *m = (uint64_t)m_lo | (uint64_t)m_hi << 32;
}

AVX2 static inline __m256 u8x8_ps(uint64_t v) { return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)v))); }

/* The unsigned levels of sub-blocks 2 pr and 2 pr + 1 of the Q4_K / Q5_K
 * superblock at p, 32 bytes each */
AVX2 static inline void kq_levels_avx(int five, const uint8_t *p, int pr, __m256i *lo, __m256i *hi) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(p + (five ? 48 : 16) + 32 * pr));
    *lo = _mm256_and_si256(v, m4);
    *hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
    if (five) { /* bit j of qh[l] is bit 4 of sub-block j's value l */
        const __m256i one = _mm256_set1_epi8(1);
        __m256i h = _mm256_loadu_si256((const __m256i *)(const void *)(p + 16));
        *lo = _mm256_or_si256(*lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2 * pr), one), 4));
        *hi = _mm256_or_si256(*hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2 * pr + 1), one), 4));
    }
}

/* The levels (0 .. 63) of quarter qi of half h of the Q6_K superblock at p:
 * values 128 h + 32 qi + l, l < 32 */
AVX2 static inline __m256i q6_levels_avx(const uint8_t *p, int h, int qi) {
    const __m256i m4 = _mm256_set1_epi8(0x0f), m3 = _mm256_set1_epi8(3);
    __m256i ql = _mm256_loadu_si256((const __m256i *)(const void *)(p + 64 * h + 32 * (qi & 1)));
    __m256i qh = _mm256_loadu_si256((const __m256i *)(const void *)(p + 128 + 32 * h));
    __m256i lo = qi < 2 ? _mm256_and_si256(ql, m4) : _mm256_and_si256(_mm256_srli_epi16(ql, 4), m4);
    __m256i hb = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * qi), m3);
    return _mm256_or_si256(lo, _mm256_slli_epi16(hb, 4));
}

/* the 8 lanes of 4-product sums of unsigned bytes w and signed bytes a */
AVX2 static inline __m256i dot4_avx(__m256i w, __m256i a) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(w, a), _mm256_set1_epi16(1));
}

/* The lane scales of the Q4_K / Q5_K superblock at p against A's
 * superblock a: *S sub-block j's (d sc_j) d_a in lane j, *mn its minima's
 * lanes (dmin m_j) (d_a s_a) (the AVX2 and AVX-512 code's, the same bits) */
AVX2 static inline void kq8_scales_avx(const q8sblk *a, const uint8_t *p, __m256 *S, __m256 *mn) {
    uint64_t sc, m;
    kq_scales8(p + 4, &sc, &m);
    *S = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(half_avx(p)), u8x8_ps(sc)), _mm256_loadu_ps(a->d));
    *mn = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(half_avx(p + 2)), u8x8_ps(m)), _mm256_loadu_ps(a->ds));
}

/* The lane scales of half h of the Q6_K superblock at p against A's
 * superblock a: group g's (d sc_g) d_a in lane g - 8 h */
AVX2 static inline __m256 q6_8_scales_avx(const q8sblk *a, const uint8_t *p, int h) {
    long long sc;
    memcpy(&sc, p + 192 + 8 * h, 8);
    __m256 scf = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128(sc)));
    return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(half_avx(p + 208)), scf), _mm256_loadu_ps(a->d2 + 8 * h));
}

/* s[r] += the lanes of superblock a . the Q4_K / Q5_K superblock of row r
 * at p[r], mn[r] = its minima's lanes (R rows; the sums above) */
AVX2 static inline __attribute__((always_inline)) void kq8_sb_avx(int five, int R, const q8sblk *a,
                                                                  const uint8_t *const *p, __m256 *s, __m256 *mn) {
    __m256 S[4];
    for (int r = 0; r < R; r++) kq8_scales_avx(a, p[r], &S[r], &mn[r]);
    for (int pr = 0; pr < 4; pr++) {
        __m256i a0 = _mm256_loadu_si256((const __m256i *)(const void *)(a->q + 64 * pr));
        __m256i a1 = _mm256_loadu_si256((const __m256i *)(const void *)(a->q + 64 * pr + 32));
        __m256i i0 = _mm256_set1_epi32(2 * pr), i1 = _mm256_set1_epi32(2 * pr + 1);
        for (int r = 0; r < R; r++) {
            __m256i lo, hi;
            kq_levels_avx(five, p[r], pr, &lo, &hi);
            s[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot4_avx(lo, a0)), _mm256_permutevar8x32_ps(S[r], i0), s[r]);
            s[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot4_avx(hi, a1)), _mm256_permutevar8x32_ps(S[r], i1), s[r]);
        }
    }
}

/* the same for Q6_K (no minima) */
AVX2 static inline __attribute__((always_inline)) void q6_8_sb_avx(int R, const q8sblk *a, const uint8_t *const *p,
                                                                   __m256 *s) {
    const __m256i c32 = _mm256_set1_epi8(32);
    for (int h = 0; h < 2; h++) {
        __m256 S[4];
        for (int r = 0; r < R; r++) S[r] = q6_8_scales_avx(a, p[r], h);
        for (int qi = 0; qi < 4; qi++) {
            __m256i av = _mm256_loadu_si256((const __m256i *)(const void *)(a->q + 128 * h + 32 * qi));
            __m256i a32 = dot4_avx(c32, av); /* 32 times the lanes' sums of A */
            __m256i idx = _mm256_setr_epi32(2 * qi, 2 * qi, 2 * qi, 2 * qi, 2 * qi + 1, 2 * qi + 1, 2 * qi + 1, 2 * qi + 1);
            for (int r = 0; r < R; r++) {
                __m256i t = _mm256_sub_epi32(dot4_avx(q6_levels_avx(p[r], h, qi), av), a32);
                s[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(t), _mm256_permutevar8x32_ps(S[r], idx), s[r]);
            }
        }
    }
}

/* kq8_sb_avx's four rows (R = 4) with AVX-512 VNNI: rows 0 and 1 in s01,
 * 2 and 3 in s23 (each half its row's 8 lanes), minima likewise */
AVX512 static inline __attribute__((always_inline)) void kq8_sb4_512(int five, const q8sblk *a,
                                                                     const uint8_t *const *p, __m512 *s01, __m512 *s23,
                                                                     __m512 *m01, __m512 *m23) {
    __m256 S[4], mn[4];
    for (int r = 0; r < 4; r++) kq8_scales_avx(a, p[r], &S[r], &mn[r]);
    __m512 S01 = _mm512_insertf32x8(_mm512_castps256_ps512(S[0]), S[1], 1);
    __m512 S23 = _mm512_insertf32x8(_mm512_castps256_ps512(S[2]), S[3], 1);
    *m01 = _mm512_insertf32x8(_mm512_castps256_ps512(mn[0]), mn[1], 1);
    *m23 = _mm512_insertf32x8(_mm512_castps256_ps512(mn[2]), mn[3], 1);
    for (int pr = 0; pr < 4; pr++) {
        __m512i a0 = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(const void *)(a->q + 64 * pr)));
        __m512i a1 = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(const void *)(a->q + 64 * pr + 32)));
        __m512i i0 = _mm512_add_epi32(_mm512_set1_epi32(2 * pr), _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 8, 8, 8, 8, 8, 8, 8, 8));
        __m512i i1 = _mm512_add_epi32(i0, _mm512_set1_epi32(1));
        __m256i lo[4], hi[4];
        for (int r = 0; r < 4; r++) kq_levels_avx(five, p[r], pr, &lo[r], &hi[r]);
        __m512i l01 = _mm512_inserti64x4(_mm512_castsi256_si512(lo[0]), lo[1], 1);
        __m512i l23 = _mm512_inserti64x4(_mm512_castsi256_si512(lo[2]), lo[3], 1);
        __m512i h01 = _mm512_inserti64x4(_mm512_castsi256_si512(hi[0]), hi[1], 1);
        __m512i h23 = _mm512_inserti64x4(_mm512_castsi256_si512(hi[2]), hi[3], 1);
        const __m512i z = _mm512_setzero_si512();
        *s01 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_dpbusd_epi32(z, l01, a0)), _mm512_permutexvar_ps(i0, S01), *s01);
        *s23 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_dpbusd_epi32(z, l23, a0)), _mm512_permutexvar_ps(i0, S23), *s23);
        *s01 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_dpbusd_epi32(z, h01, a1)), _mm512_permutexvar_ps(i1, S01), *s01);
        *s23 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_dpbusd_epi32(z, h23, a1)), _mm512_permutexvar_ps(i1, S23), *s23);
    }
}

/* q6_8_sb_avx's four rows with AVX-512 VNNI, as kq8_sb4_512 */
AVX512 static inline __attribute__((always_inline)) void q6_8_sb4_512(const q8sblk *a, const uint8_t *const *p,
                                                                      __m512 *s01, __m512 *s23) {
    const __m512i c32 = _mm512_set1_epi8(32), z = _mm512_setzero_si512();
    for (int h = 0; h < 2; h++) {
        __m256 S[4];
        for (int r = 0; r < 4; r++) S[r] = q6_8_scales_avx(a, p[r], h);
        __m512 S01 = _mm512_insertf32x8(_mm512_castps256_ps512(S[0]), S[1], 1);
        __m512 S23 = _mm512_insertf32x8(_mm512_castps256_ps512(S[2]), S[3], 1);
        for (int qi = 0; qi < 4; qi++) {
            __m512i av = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(const void *)(a->q + 128 * h + 32 * qi)));
            __m512i a32 = _mm512_dpbusd_epi32(z, c32, av);
            __m512i idx = _mm512_setr_epi32(2 * qi, 2 * qi, 2 * qi, 2 * qi, 2 * qi + 1, 2 * qi + 1, 2 * qi + 1, 2 * qi + 1,
                                             8 + 2 * qi, 8 + 2 * qi, 8 + 2 * qi, 8 + 2 * qi, 9 + 2 * qi, 9 + 2 * qi,
                                             9 + 2 * qi, 9 + 2 * qi);
            __m512i w01 = _mm512_inserti64x4(_mm512_castsi256_si512(q6_levels_avx(p[0], h, qi)), q6_levels_avx(p[1], h, qi), 1);
            __m512i w23 = _mm512_inserti64x4(_mm512_castsi256_si512(q6_levels_avx(p[2], h, qi)), q6_levels_avx(p[3], h, qi), 1);
            __m512i t01 = _mm512_sub_epi32(_mm512_dpbusd_epi32(z, w01, av), a32);
            __m512i t23 = _mm512_sub_epi32(_mm512_dpbusd_epi32(z, w23, av), a32);
            *s01 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(t01), _mm512_permutexvar_ps(idx, S01), *s01);
            *s23 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(t23), _mm512_permutexvar_ps(idx, S23), *s23);
        }
    }
}

/* one superblock of R rows through the AVX2 code: out[r] = the chunk sums */
AVX2 static inline __attribute__((always_inline)) void kq8_chunk_avx(pxl_dtype dt, int R, const q8sblk *a,
                                                                     const uint8_t *const *p, float *out) {
    __m256 s[4], mn[4];
    for (int r = 0; r < R; r++) s[r] = _mm256_setzero_ps();
    if (dt == PXL_Q6_K) q6_8_sb_avx(R, a, p, s);
    else kq8_sb_avx(dt == PXL_Q5_K, R, a, p, s, mn);
    if (R == 4) {
        __m128 v = fold8x4_avx(s);
        if (dt != PXL_Q6_K) v = _mm_sub_ps(v, fold8x4_avx(mn));
        _mm_storeu_ps(out, v);
    } else
        for (int r = 0; r < R; r++) out[r] = dt == PXL_Q6_K ? fold8_avx(s[r]) : fold8_avx(s[r]) - fold8_avx(mn[r]);
}

/* kq8_gemv_avx's whole bands of four rows with AVX-512 VNNI (simd level 2):
 * the first nt - nt % 4 rows, two rows a register */
AVX512 static inline __attribute__((always_inline)) void kq8_bands_512(pxl_dtype dt, const bt_job *j, const q8sblk *a,
                                                                       const uint8_t *b, int nt, size_t bbytes,
                                                                       double *acc) {
    for (int n = 0; n + 4 <= nt; n += 4) {
        const uint8_t *band = b + (size_t)n * j->row_bytes;
        band_fetch f = band_fetch_after(j, band, 4 * j->row_bytes, 0);
        __m256d sum = _mm256_loadu_pd(acc + n);
        for (int64_t k = 0; k < j->K / KC; k++) {
            const uint8_t *p[4];
            for (int r = 0; r < 4; r++) p[r] = band + (size_t)r * j->row_bytes + (size_t)k * bbytes;
            band_fetch_bytes(&f, 4 * bbytes);
            __m512 s01 = _mm512_setzero_ps(), s23 = _mm512_setzero_ps();
            __m128 v;
            if (dt == PXL_Q6_K) {
                q6_8_sb4_512(a + k, p, &s01, &s23);
                v = fold8x4_512(s01, s23);
            } else {
                __m512 m01, m23;
                kq8_sb4_512(dt == PXL_Q5_K, a + k, p, &s01, &s23, &m01, &m23);
                v = _mm_sub_ps(fold8x4_512(s01, s23), fold8x4_512(m01, m23));
            }
            sum = _mm256_add_pd(sum, _mm256_cvtps_pd(v));
        }
        _mm256_storeu_pd(acc + n, sum);
    }
}

AVX512 static void kq8_512(const bt_job *j, const q8sblk *a, const uint8_t *b, int nt, size_t bbytes, double *acc) {
    switch (j->dt) {
    case PXL_Q4_K: kq8_bands_512(PXL_Q4_K, j, a, b, nt, bbytes, acc); break;
    case PXL_Q5_K: kq8_bands_512(PXL_Q5_K, j, a, b, nt, bbytes, acc); break;
    default: kq8_bands_512(PXL_Q6_K, j, a, b, nt, bbytes, acc); break;
    }
}

/* the AVX2 code's rows from n on, for one dt */
AVX2 static inline __attribute__((always_inline)) void kq8_rows_avx(pxl_dtype dt, const bt_job *j, const q8sblk *a,
                                                                    const uint8_t *b, int n, int nt, size_t bbytes,
                                                                    double *acc) {
    for (; n < nt; n += 4) {
        int nr = nt - n < 4 ? nt - n : 4;
        const uint8_t *band = b + (size_t)n * j->row_bytes;
        band_fetch f = band_fetch_after(j, band, (size_t)nr * j->row_bytes, 0);
        for (int64_t k = 0; k < j->K / KC; k++) {
            const uint8_t *p[4];
            float out[4];
            for (int r = 0; r < nr; r++) p[r] = band + (size_t)r * j->row_bytes + (size_t)k * bbytes;
            band_fetch_bytes(&f, (size_t)nr * bbytes);
            if (nr == 4) kq8_chunk_avx(dt, 4, a + k, p, out);
            else
                for (int r = 0; r < nr; r++) kq8_chunk_avx(dt, 1, a + k, p + r, out + r);
            for (int r = 0; r < nr; r++) acc[n + r] += (double)out[r];
        }
    }
}

/* acc[n] += a . B row n (n < nt) for Q4_K, Q5_K or Q6_K B on A rounded to
 * 8 bits (q8sblk): in bands of four rows, each over all of K a superblock
 * at a time, the next band fetched in step (band_fetch); with AVX-512 VNNI
 * (simd level 2) the whole bands two rows a register (kq8_512), the last
 * rows one at a time. */
AVX2 static void kq8_gemv_avx(const bt_job *j, const q8sblk *a, const uint8_t *b, int nt, double *acc) {
    size_t bbytes;
    int belems;
    block_geom(j->dt, &bbytes, &belems);
    int n = 0;
    if (j->simd >= 2) {
        kq8_512(j, a, b, nt, bbytes, acc);
        n = nt - nt % 4;
    }
    switch (j->dt) {
    case PXL_Q4_K: kq8_rows_avx(PXL_Q4_K, j, a, b, n, nt, bbytes, acc); break;
    case PXL_Q5_K: kq8_rows_avx(PXL_Q5_K, j, a, b, n, nt, bbytes, acc); break;
    default: kq8_rows_avx(PXL_Q6_K, j, a, b, n, nt, bbytes, acc); break;
    }
}

/* ---- one row of A (decoding a token) --------------------------------------- */

/* With M = 1 no row of A shares a decoded block of B, so gemv_avx multiplies
 * each B row as it decodes it: Q8_0, Q4_0 and Q5_0 blocks are decoded into
 * registers as their integers, Q4_K and Q5_K into registers as decode_avx's
 * values (gemv_kq_avx), f16 and bf16 converted in registers (h8_avx), and
 * the other formats through a buffer of one chunk a row (decode_avx's
 * values). For the 32-element blocks, per
 * block and row: the integers times A in 8 lanes of fused multiply-adds,
 * then those lanes times the block's scale added to the row's 8 lanes (one
 * multiplication by the scale a block, where decoding multiplies every
 * value: a quarter fewer vector operations a value); per chunk: fold8, the
 * chunk sum added in double. The other formats: kern_avx's sums, value for
 * value. GV rows run side by side so that their chains of multiply-adds
 * overlap. */
#define GV 4

/* The integers of elements 8g .. 8g + 7 of the 32-element block at p
 * (Q5_0's high bits qh), as floats. */
AVX2 static inline __m256 blk8_avx(pxl_dtype dt, const uint8_t *p, uint32_t qh, int g) {
    const __m256i lo4 = _mm256_set1_epi32(0x0f);
    if (dt == PXL_Q8_0) return f32x8(i8x8(p + 2 + 8 * g));
    if (dt == PXL_Q4_0) {
        __m256i q = u8x8(p + 2 + 8 * (g & 1));
        q = g < 2 ? _mm256_and_si256(q, lo4) : _mm256_srli_epi32(q, 4);
        return f32x8(_mm256_sub_epi32(q, _mm256_set1_epi32(8)));
    }
    __m256i q = u8x8(p + 6 + 8 * (g & 1)); /* Q5_0 */
    q = _mm256_or_si256(g < 2 ? _mm256_and_si256(q, lo4) : _mm256_srli_epi32(q, 4), q5_high(qh, 8 * g));
    return f32x8(_mm256_sub_epi32(q, _mm256_set1_epi32(16)));
}

/* s[r] (r < R) += the lanes of a . row r over nblk 32-element blocks from
 * p[r] (bb bytes a block) */
AVX2 static inline __attribute__((always_inline)) void gemv_blocks_avx(pxl_dtype dt, int R, const float *a,
                                                                       const uint8_t *const *p, int nblk,
                                                                       size_t bb, __m256 *s) {
    for (int k = 0; k < nblk; k++, a += 32) {
        uint32_t qh[GV];
        for (int r = 0; r < R; r++) {
            const uint8_t *pb = p[r] + (size_t)k * bb;
            qh[r] = 0;
            if (dt == PXL_Q5_0) memcpy(&qh[r], pb + 2, 4);
        }
        __m256 t[GV];
        for (int r = 0; r < R; r++) t[r] = _mm256_setzero_ps();
        for (int g = 0; g < 4; g++) {
            __m256 av = _mm256_loadu_ps(a + 8 * g);
            for (int r = 0; r < R; r++) t[r] = _mm256_fmadd_ps(av, blk8_avx(dt, p[r] + (size_t)k * bb, qh[r], g), t[r]);
        }
        /* the scale read here, not held through the block: 16 vector registers hold s, t and A */
        for (int r = 0; r < R; r++) s[r] = _mm256_fmadd_ps(_mm256_set1_ps(half_avx(p[r] + (size_t)k * bb)), t[r], s[r]);
    }
}

/* s[r] (r < R) += the lanes of a . the 256-value Q4_K or Q5_K block of row
 * r at p[r]: each 8 values decoded in a register by decode_avx's operations
 * (the same floats: d1 * q - m1, d1 = d * sc, m1 = dmin * m of the 32-value
 * sub-block) and multiplied in the order kern_avx takes them (k rising, 8
 * lanes), so the sums are the decode-then-multiply path's, bit for bit,
 * without the round trip of a decoded chunk through memory. The rows go side
 * by side in the inner loop: R chains of multiply-adds in flight. (Q6_K
 * written this way was 7% slower than through decode_avx's buffer, which
 * takes its four quarters from one set of loads.) */
AVX2 static inline __attribute__((always_inline)) void gemv_kq_avx(pxl_dtype dt, int R, const float *a,
                                                                   const uint8_t *const *p, __m256 *s) {
    const __m256i lo4 = _mm256_set1_epi32(0x0f), one = _mm256_set1_epi32(1);
    int five = dt == PXL_Q5_K;
    float d[GV], dmin[GV];
    for (int r = 0; r < R; r++) {
        d[r] = half_avx(p[r]);
        dmin[r] = half_avx(p[r] + 2);
    }
    for (int j = 0; j < 8; j++) { /* sub-block j: the low (j even) or high nibbles of quant bytes 32 (j / 2) .. */
        __m256 d1[GV], m1[GV];
        for (int r = 0; r < R; r++) {
            int sc, m;
            kq_scale_min(p[r] + 4, j, &sc, &m);
            d1[r] = _mm256_set1_ps(d[r] * (float)sc);
            m1[r] = _mm256_set1_ps(dmin[r] * (float)m);
        }
        __m256i sj = _mm256_set1_epi32(j);
        for (int l = 0; l < 32; l += 8) {
            __m256 av = _mm256_loadu_ps(a + 32 * j + l);
            for (int r = 0; r < R; r++) {
                const uint8_t *q = p[r] + (five ? 48 : 16) + 32 * (j / 2);
                __m256i v = u8x8(q + l);
                v = j % 2 ? _mm256_srli_epi32(v, 4) : _mm256_and_si256(v, lo4);
                if (five)
                    v = _mm256_or_si256(v, _mm256_slli_epi32(_mm256_and_si256(_mm256_srlv_epi32(u8x8(p[r] + 16 + l), sj), one), 4));
                s[r] = _mm256_fmadd_ps(av, _mm256_sub_ps(_mm256_mul_ps(d1[r], f32x8(v)), m1[r]), s[r]);
            }
        }
    }
}

/* 8 f16 or bf16 values at p as f32 (exact), and one */
AVX2 static inline __m256 h8_avx(pxl_dtype dt, const uint8_t *p) {
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
    if (dt == PXL_F16) return _mm256_cvtph_ps(v);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(v), 16));
}
AVX2 static inline float h1(pxl_dtype dt, const uint8_t *p) {
    return dt == PXL_F16 ? half_avx(p) : pxl_bf16_to_f32((uint16_t)(p[0] | p[1] << 8));
}

/* out[r] = the chunk sums of a . rows p[r] (r < R) over len elements */
AVX2 static inline __attribute__((always_inline)) void gemv_chunk_avx(pxl_dtype dt, int R, const float *a,
                                                                      const uint8_t *const *p, int len, size_t bb,
                                                                      float (*ybuf)[KC], float *out) {
    __m256 s[GV];
    for (int r = 0; r < R; r++) s[r] = _mm256_setzero_ps();
    switch (dt) {
    case PXL_Q8_0: gemv_blocks_avx(PXL_Q8_0, R, a, p, len / 32, bb, s); break;
    case PXL_Q4_0: gemv_blocks_avx(PXL_Q4_0, R, a, p, len / 32, bb, s); break;
    case PXL_Q5_0: gemv_blocks_avx(PXL_Q5_0, R, a, p, len / 32, bb, s); break;
    case PXL_Q4_K:
    case PXL_Q5_K: /* len is one block (KC) */
        if (dt == PXL_Q4_K) gemv_kq_avx(PXL_Q4_K, R, a, p, s);
        else gemv_kq_avx(PXL_Q5_K, R, a, p, s);
        for (int r = 0; r < R; r++) out[r] = fold8_avx(s[r]);
        return;
    case PXL_F16:
    case PXL_BF16: { /* converted in registers: decode_avx's values, kern_avx's order */
        int len8 = len & ~7;
        for (int k = 0; k < len8; k += 8) {
            __m256 av = _mm256_loadu_ps(a + k);
            for (int r = 0; r < R; r++) s[r] = _mm256_fmadd_ps(av, h8_avx(dt, p[r] + 2 * (size_t)k), s[r]);
        }
        for (int r = 0; r < R; r++) {
            float v = fold8_avx(s[r]);
            for (int k = len8; k < len; k++) v = __builtin_fmaf(a[k], h1(dt, p[r] + 2 * (size_t)k), v);
            out[r] = v;
        }
        return;
    }
    default: {
        const float *y[GV];
        int len8 = len & ~7;
        for (int r = 0; r < R; r++) y[r] = decode_avx(dt, p[r], ybuf[r], len);
        for (int k = 0; k < len8; k += 8) {
            __m256 av = _mm256_loadu_ps(a + k);
            for (int r = 0; r < R; r++) s[r] = _mm256_fmadd_ps(av, _mm256_loadu_ps(y[r] + k), s[r]);
        }
        for (int r = 0; r < R; r++) {
            float v = fold8_avx(s[r]);
            for (int k = len8; k < len; k++) v = __builtin_fmaf(a[k], y[r][k], v);
            out[r] = v;
        }
        return;
    }
    }
    if (R == 4) _mm_storeu_ps(out, fold8x4_avx(s));
    else
        for (int r = 0; r < R; r++) out[r] = fold8_avx(s[r]);
}

/* The integers of elements 8g .. 8g + 15 (g = 0 or 2) of the 32-element
 * block at p (Q5_0's high bits qh), as 16 floats: blk8_avx's groups g and
 * g + 1 side by side */
AVX512 static inline __m512 blk16_512(pxl_dtype dt, const uint8_t *p, uint32_t qh, int g) {
    if (dt == PXL_Q8_0) return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(p + 2 + 8 * g))));
    const __m512i lo4 = _mm512_set1_epi32(0x0f);
    __m512i q = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(p + (dt == PXL_Q4_0 ? 2 : 6))));
    q = g == 0 ? _mm512_and_si512(q, lo4) : _mm512_srli_epi32(q, 4);
    if (dt == PXL_Q4_0) return _mm512_cvtepi32_ps(_mm512_sub_epi32(q, _mm512_set1_epi32(8)));
    __m512i sh = _mm512_add_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_epi32(8 * g));
    __m512i hb = _mm512_slli_epi32(_mm512_and_si512(_mm512_srlv_epi32(_mm512_set1_epi32((int)qh), sh), _mm512_set1_epi32(1)), 4);
    return _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_or_si512(q, hb), _mm512_set1_epi32(16)));
}

/* gemv_blocks_avx's four rows (R = 4) with AVX-512, the same sums: two rows
 * a 512-bit register (s01: rows 0 and 1, s23: rows 2 and 3, each half the 8
 * lanes of its row). blk16_512 gives a row's groups g and g + 1 at once, and
 * one permutation of two rows' pairs puts group g of both rows in one
 * register and g + 1 in another; A's 8 values of a group go to both halves.
 * Each half then takes blk8_avx's values in the same fused multiply-adds in
 * the same order: the bits of gemv_blocks_avx, in about two thirds of its
 * operations. */
AVX512 static inline __attribute__((always_inline)) void gemv4_blocks_512(pxl_dtype dt, const float *a,
                                                                          const uint8_t *const *p, int nblk, size_t bb,
                                                                          __m512 *s01, __m512 *s23) {
    const __m512i glo = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
    const __m512i ghi = _mm512_setr_epi32(8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
    const __m512i i01 = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    const __m512i i23 = _mm512_setr_epi32(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    for (int k = 0; k < nblk; k++, a += 32) {
        const uint8_t *pb[4];
        uint32_t qh[4] = {0, 0, 0, 0};
        uint16_t h[4];
        for (int r = 0; r < 4; r++) {
            pb[r] = p[r] + (size_t)k * bb;
            if (dt == PXL_Q5_0) memcpy(&qh[r], pb[r] + 2, 4);
            memcpy(&h[r], pb[r], 2);
        }
        __m512 t01 = _mm512_setzero_ps(), t23 = _mm512_setzero_ps();
        for (int g = 0; g < 4; g += 2) {
            __m512 a0 = _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(_mm256_loadu_ps(a + 8 * g))));
            __m512 a1 = _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(_mm256_loadu_ps(a + 8 * g + 8))));
            __m512 x0 = blk16_512(dt, pb[0], qh[0], g), x1 = blk16_512(dt, pb[1], qh[1], g);
            __m512 x2 = blk16_512(dt, pb[2], qh[2], g), x3 = blk16_512(dt, pb[3], qh[3], g);
            t01 = _mm512_fmadd_ps(a0, _mm512_permutex2var_ps(x0, glo, x1), t01);
            t23 = _mm512_fmadd_ps(a0, _mm512_permutex2var_ps(x2, glo, x3), t23);
            t01 = _mm512_fmadd_ps(a1, _mm512_permutex2var_ps(x0, ghi, x1), t01);
            t23 = _mm512_fmadd_ps(a1, _mm512_permutex2var_ps(x2, ghi, x3), t23);
        }
        __m128i hv = _mm_setr_epi16((short)h[0], (short)h[1], (short)h[2], (short)h[3], 0, 0, 0, 0);
        __m512 d4 = _mm512_castps128_ps512(_mm_cvtph_ps(hv));
        *s01 = _mm512_fmadd_ps(_mm512_permutexvar_ps(i01, d4), t01, *s01);
        *s23 = _mm512_fmadd_ps(_mm512_permutexvar_ps(i23, d4), t23, *s23);
    }
}

/* gemv_kq_avx's four rows (R = 4) over one Q4_K or Q5_K block with
 * AVX-512, the same sums: two rows a 512-bit register as gemv4_blocks_512.
 * Each row's 16 values of a sub-block half are decoded at once (the same
 * integers), made d1 q - m1 with the pair's scales in their halves (the
 * same multiply and subtract, value for value), and a permutation of two
 * rows' values puts values l .. l + 7 of both rows in one register and
 * l + 8 .. l + 15 in another, multiplied with A in gemv_kq_avx's order: the
 * same bits in a little over half its operations. */
AVX512 static inline __attribute__((always_inline)) void gemv4_kq_512(pxl_dtype dt, const float *a,
                                                                      const uint8_t *const *p, __m512 *s01,
                                                                      __m512 *s23) {
    const __m512i glo = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
    const __m512i ghi = _mm512_setr_epi32(8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
    const __m512i i01 = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    const __m512i i23 = _mm512_setr_epi32(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m512i lo4 = _mm512_set1_epi32(0x0f), one = _mm512_set1_epi32(1);
    int five = dt == PXL_Q5_K;
    float d[4], dmin[4];
    for (int r = 0; r < 4; r++) {
        d[r] = half_avx(p[r]);
        dmin[r] = half_avx(p[r] + 2);
    }
    __m128 dv = _mm_setr_ps(d[0], d[1], d[2], d[3]), mv = _mm_setr_ps(dmin[0], dmin[1], dmin[2], dmin[3]);
    for (int j = 0; j < 8; j++) { /* sub-block j: the low (j even) or high nibbles of quant bytes 32 (j / 2) .. */
        int sc[4], m[4];
        for (int r = 0; r < 4; r++) kq_scale_min(p[r] + 4, j, &sc[r], &m[r]);
        /* (vectors built from registers: a load of the four stores would wait for them) */
        __m512 d1 = _mm512_castps128_ps512(_mm_mul_ps(dv, _mm_cvtepi32_ps(_mm_setr_epi32(sc[0], sc[1], sc[2], sc[3]))));
        __m512 m1 = _mm512_castps128_ps512(_mm_mul_ps(mv, _mm_cvtepi32_ps(_mm_setr_epi32(m[0], m[1], m[2], m[3]))));
        __m512 d01 = _mm512_permutexvar_ps(i01, d1), d23 = _mm512_permutexvar_ps(i23, d1);
        __m512 m01 = _mm512_permutexvar_ps(i01, m1), m23 = _mm512_permutexvar_ps(i23, m1);
        for (int l = 0; l < 32; l += 16) {
            __m512 f[4];
            for (int r = 0; r < 4; r++) {
                const uint8_t *q = p[r] + (five ? 48 : 16) + 32 * (j / 2);
                __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(q + l)));
                v = j % 2 ? _mm512_srli_epi32(v, 4) : _mm512_and_si512(v, lo4);
                if (five) {
                    __m512i h = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(p[r] + 16 + l)));
                    v = _mm512_or_si512(v, _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(h, (unsigned)j), one), 4));
                }
                f[r] = _mm512_cvtepi32_ps(v);
            }
            __m512 a0 = _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(_mm256_loadu_ps(a + 32 * j + l))));
            __m512 a1 = _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(_mm256_loadu_ps(a + 32 * j + l + 8))));
            __m512 w01lo = _mm512_sub_ps(_mm512_mul_ps(d01, _mm512_permutex2var_ps(f[0], glo, f[1])), m01);
            __m512 w23lo = _mm512_sub_ps(_mm512_mul_ps(d23, _mm512_permutex2var_ps(f[2], glo, f[3])), m23);
            __m512 w01hi = _mm512_sub_ps(_mm512_mul_ps(d01, _mm512_permutex2var_ps(f[0], ghi, f[1])), m01);
            __m512 w23hi = _mm512_sub_ps(_mm512_mul_ps(d23, _mm512_permutex2var_ps(f[2], ghi, f[3])), m23);
            *s01 = _mm512_fmadd_ps(a0, w01lo, *s01);
            *s23 = _mm512_fmadd_ps(a0, w23lo, *s23);
            *s01 = _mm512_fmadd_ps(a1, w01hi, *s01);
            *s23 = _mm512_fmadd_ps(a1, w23hi, *s23);
        }
    }
}

/* gemv_chunk_avx's four rows of f16 or bf16 (R = 4) with AVX-512, the
 * same sums: two rows a 512-bit register (s01, s23 as gemv4_blocks_512),
 * each half converting its row's 8 values and taking the same fused
 * multiply-adds with A's 8; the tails (len not a multiple of 8) in out */
AVX512 static inline __attribute__((always_inline)) void gemv4_h_512(pxl_dtype dt, const float *a,
                                                                     const uint8_t *const *p, int len, float *out) {
    __m512 s01 = _mm512_setzero_ps(), s23 = _mm512_setzero_ps();
    int len8 = len & ~7;
    for (int k = 0; k < len8; k += 8) {
        __m512 av = _mm512_broadcast_f32x8(_mm256_loadu_ps(a + k));
        size_t o = 2 * (size_t)k;
        __m512 w01 = _mm512_insertf32x8(_mm512_castps256_ps512(h8_avx(dt, p[0] + o)), h8_avx(dt, p[1] + o), 1);
        __m512 w23 = _mm512_insertf32x8(_mm512_castps256_ps512(h8_avx(dt, p[2] + o)), h8_avx(dt, p[3] + o), 1);
        s01 = _mm512_fmadd_ps(av, w01, s01);
        s23 = _mm512_fmadd_ps(av, w23, s23);
    }
    _mm_storeu_ps(out, fold8x4_512(s01, s23));
    for (int r = 0; r < 4; r++)
        for (int k = len8; k < len; k++) out[r] = __builtin_fmaf(a[k], h1(dt, p[r] + 2 * (size_t)k), out[r]);
}

/* gemv_avx's bands of four rows for Q8_0, Q4_0, Q5_0, Q4_K, Q5_K, f16 and
 * bf16 with AVX-512, for the first nt - nt % 4 rows: each chunk through
 * gemv4_blocks_512, gemv4_kq_512 or gemv4_h_512, its folds (fold8x4_512) added to the
 * band's four sums in double, kept in a register until the band ends */
AVX512 static inline __attribute__((always_inline)) void gemv_bands_512(pxl_dtype dt, const bt_job *j, const float *a,
                                                                        const uint8_t *b, int nt, size_t bbytes,
                                                                        double *acc) {
    for (int n = 0; n + 4 <= nt; n += 4) {
        const uint8_t *band = b + (size_t)n * j->row_bytes;
        band_fetch f = band_fetch_after(j, band, 4 * j->row_bytes, 0);
        __m256d sum = _mm256_loadu_pd(acc + n);
        for (int64_t k0 = 0; k0 < j->K; k0 += KC) {
            int len = (int)(j->K - k0 < KC ? j->K - k0 : KC), belems = dt == PXL_Q4_K || dt == PXL_Q5_K ? KC : 32;
            if (dt == PXL_F16 || dt == PXL_BF16) belems = 1;
            const uint8_t *p[4];
            for (int r = 0; r < 4; r++) p[r] = band + (size_t)r * j->row_bytes + (size_t)(k0 / belems) * bbytes;
            band_fetch_bytes(&f, 4 * (size_t)(len / belems) * bbytes);
            if (belems == 1) {
                float out[4];
                gemv4_h_512(dt, a + k0, p, len, out);
                sum = _mm256_add_pd(sum, _mm256_cvtps_pd(_mm_loadu_ps(out)));
                continue;
            }
            __m512 s01 = _mm512_setzero_ps(), s23 = _mm512_setzero_ps();
            if (belems == KC) gemv4_kq_512(dt, a + k0, p, &s01, &s23); /* len is one block */
            else gemv4_blocks_512(dt, a + k0, p, len / 32, bbytes, &s01, &s23);
            sum = _mm256_add_pd(sum, _mm256_cvtps_pd(fold8x4_512(s01, s23)));
        }
        _mm256_storeu_pd(acc + n, sum);
    }
}

AVX512 static void gemv_512(const bt_job *j, const float *a, const uint8_t *b, int nt, size_t bbytes, double *acc) {
    switch (j->dt) {
    case PXL_Q8_0: gemv_bands_512(PXL_Q8_0, j, a, b, nt, bbytes, acc); break;
    case PXL_Q4_0: gemv_bands_512(PXL_Q4_0, j, a, b, nt, bbytes, acc); break;
    case PXL_Q5_0: gemv_bands_512(PXL_Q5_0, j, a, b, nt, bbytes, acc); break;
    case PXL_Q4_K: gemv_bands_512(PXL_Q4_K, j, a, b, nt, bbytes, acc); break;
    case PXL_F16: gemv_bands_512(PXL_F16, j, a, b, nt, bbytes, acc); break;
    case PXL_BF16: gemv_bands_512(PXL_BF16, j, a, b, nt, bbytes, acc); break;
    default: gemv_bands_512(PXL_Q5_K, j, a, b, nt, bbytes, acc); break; /* Q5_K */
    }
}

/* acc[n] += the sums of a . B row n (n < nt, rows row_bytes apart from b)
 * over the job's K: in bands of GV rows, each over all of K chunk by chunk,
 * the next band fetched meanwhile (band_fetch); with AVX-512 the whole bands
 * of Q8_0, Q4_0, Q5_0, Q4_K, Q5_K, f16 and bf16 through gemv_512 (the same
 * bits) */
AVX2 static void gemv_avx(const bt_job *j, const float *a, const uint8_t *b, int nt, double *acc) {
    size_t bbytes;
    int belems;
    block_geom(j->dt, &bbytes, &belems);
    float ybuf[GV][KC];
    int n = 0;
    if (j->simd >= 2 && (j->dt == PXL_Q8_0 || j->dt == PXL_Q4_0 || j->dt == PXL_Q5_0 || j->dt == PXL_Q4_K ||
                         j->dt == PXL_Q5_K || j->dt == PXL_F16 || j->dt == PXL_BF16)) {
        gemv_512(j, a, b, nt, bbytes, acc);
        n = nt - nt % 4;
    }
    for (; n < nt; n += GV) {
        int R = nt - n < GV ? 1 : GV, nr = nt - n < GV ? nt - n : GV; /* the last rows one at a time */
        const uint8_t *band = b + (size_t)n * j->row_bytes;
        band_fetch f = band_fetch_after(j, band, (size_t)nr * j->row_bytes, 0);
        for (int64_t k0 = 0; k0 < j->K; k0 += KC) {
            int len = (int)(j->K - k0 < KC ? j->K - k0 : KC);
            size_t off = (size_t)(k0 / belems) * bbytes, cbytes = (size_t)(len / belems) * bbytes;
            band_fetch_bytes(&f, (size_t)nr * cbytes);
            for (int i = 0; i < nr; i += R) {
                const uint8_t *p[GV];
                float out[GV];
                for (int r = 0; r < R; r++) p[r] = band + (size_t)(i + r) * j->row_bytes + off;
                if (R == GV) gemv_chunk_avx(j->dt, GV, a + k0, p, len, bbytes, ybuf, out);
                else gemv_chunk_avx(j->dt, 1, a + k0, p, len, bbytes, ybuf, out);
                for (int r = 0; r < R; r++) acc[n + i + r] += (double)out[r];
            }
        }
    }
}
#endif

/* ---- the tasks ------------------------------------------------------------- */

/* C[i, n] = alpha * acc[i][n] (+ beta * C[i, n] when beta != 0) for the
 * tile's mb x nt sums, rows of C N floats apart. */
static void store_tile(double acc[MB][NT], int mb, int nt, float *c, int64_t N, float alpha, float beta) {
    for (int i = 0; i < mb; i++)
        for (int n = 0; n < nt; n++) {
            float v = (float)acc[i][n], *cp = c + i * N + n;
            *cp = beta != 0.0f ? alpha * v + beta * *cp : alpha * v;
        }
}

static void bt_range(void *arg, int64_t lo, int64_t hi) {
    const bt_job *j = arg;
    size_t bbytes;
    int belems;
    block_geom(j->dt, &bbytes, &belems);
    float ybuf[NT][KC];
    double acc[MB][NT];
    for (int64_t u = lo; u < hi; u++) { /* u = (batch * mblocks + mblock) * tiles + tile */
        int64_t tile = u % j->tiles, mbk = (u / j->tiles) % j->mblocks, bt = u / j->tiles / j->mblocks;
        int64_t n0 = tile * NT, m0 = mbk * MB;
        int nt = (int)(j->N - n0 < NT ? j->N - n0 : NT), mb = (int)(j->M - m0 < MB ? j->M - m0 : MB);
        const float *a = j->a + ((j->batch_a == 1 ? 0 : bt) * j->M + m0) * j->K;
        const uint8_t *b = j->b + ((size_t)(j->batch_b == 1 ? 0 : bt) * (size_t)j->N + (size_t)n0) * j->row_bytes;
        float *c = j->c + (bt * j->M + m0) * j->N + n0;
#ifdef PXL_CPU_X86
        if (j->simd && mb == 1) {
            memset(acc[0], 0, sizeof acc[0]); /* a fixed size: no call */
            gemv_avx(j, a, b, nt, acc[0]);
            store_tile(acc, mb, nt, c, j->N, j->alpha, j->beta);
            continue;
        }
#endif
        for (int i = 0; i < mb; i++)
            for (int n = 0; n < nt; n++) acc[i][n] = 0;
        for (int64_t k0 = 0; k0 < j->K; k0 += KC) {
            int len = (int)(j->K - k0 < KC ? j->K - k0 : KC);
            size_t off = (size_t)(k0 / belems) * bbytes;
            const float *yp[NT];
            size_t cbytes = (size_t)(len / belems) * bbytes, ahead = off + 2 * cbytes; /* two chunks ahead */
            for (int n = 0; n < nt; n++) {
                const uint8_t *p = b + (size_t)n * j->row_bytes + off;
#if defined(__GNUC__)
                if (ahead + cbytes <= j->row_bytes) /* rows stream from memory: fetch ahead of the decoder */
                    for (size_t q = 0; q < cbytes; q += 64) __builtin_prefetch(b + (size_t)n * j->row_bytes + ahead + q);
#endif
#ifdef PXL_CPU_X86
                yp[n] = j->simd ? decode_avx(j->dt, p, ybuf[n], len) : decode_c(j->dt, p, ybuf[n], len);
#else
                yp[n] = decode_c(j->dt, p, ybuf[n], len);
#endif
            }
            for (int i = 0; i < mb; i += 2) {
                int mr = mb - i < 2 ? 1 : 2;
                const float *ap[2] = {a + i * j->K + k0, a + (i + mr - 1) * j->K + k0};
#ifdef PXL_CPU_X86
                if (j->simd >= 2 && mb - i >= 4 && nt % 4 == 0) { /* 8 x 4 or 4 x 4 tiles: the same sums */
                    int r8 = mb - i >= 8 ? 8 : 4;
                    const float *a8[8];
                    for (int r = 0; r < r8; r++) a8[r] = ap[0] + r * j->K;
                    for (int n = 0; n < nt; n += 4) {
                        float out[8][4];
                        if (r8 == 8) kern_512_84(a8, yp + n, len, out);
                        else kern_512_44(a8, yp + n, len, out);
                        for (int r = 0; r < r8; r++)
                            for (int q = 0; q < 4; q++) acc[i + r][n + q] += (double)out[r][q];
                    }
                    i += r8 - 2;
                    continue;
                }
#endif
                for (int n = 0; n < nt; n += 4) {
                    int nr = nt - n < 4 ? nt - n : 4;
                    float out[2][4];
#ifdef PXL_CPU_X86
                    if (j->simd) kern_avx(j->simd, mr, nr, ap, yp + n, len, out);
                    else kern_c(mr, nr, ap, yp + n, len, out);
#else
                    kern_c(mr, nr, ap, yp + n, len, out);
#endif
                    for (int r = 0; r < mr; r++)
                        for (int q = 0; q < nr; q++) acc[i + r][n + q] += (double)out[r][q];
                }
            }
        }
        store_tile(acc, mb, nt, c, j->N, j->alpha, j->beta);
    }
}

/* The tasks of the 8-bit path: bt_range's tiles and order, B blocks decoded
 * to bytes once per chunk and multiplied in integers with A's blocks; with
 * one row of A and AVX2, qgemv_avx (the same bits, no chunk buffer). */
static void qbt_range(void *arg, int64_t lo, int64_t hi) {
    const bt_job *j = arg;
    size_t bbytes;
    int belems;
    block_geom(j->dt, &bbytes, &belems);
    int8_t wq[NT][KC];
    float wd[NT][KC / QB];
    double acc[MB][NT];
    int64_t nbk = j->K / QB; /* blocks of an A row */
    int direct = j->dt == PXL_Q8_0;
    size_t ws = direct ? bbytes : QB; /* bytes from one block's integers to the next */
    for (int64_t u = lo; u < hi; u++) {
        int64_t tile = u % j->tiles, mbk = (u / j->tiles) % j->mblocks, bt = u / j->tiles / j->mblocks;
        int64_t n0 = tile * NT, m0 = mbk * MB;
        int nt = (int)(j->N - n0 < NT ? j->N - n0 : NT), mb = (int)(j->M - m0 < MB ? j->M - m0 : MB);
        const q8blk *a = j->qa + ((j->batch_a == 1 ? 0 : bt) * j->M + m0) * nbk;
        const uint8_t *b = j->b + ((size_t)(j->batch_b == 1 ? 0 : bt) * (size_t)j->N + (size_t)n0) * j->row_bytes;
        float *c = j->c + (bt * j->M + m0) * j->N + n0;
#ifdef PXL_CPU_X86
        if (j->simd && mb == 1) {
            memset(acc[0], 0, sizeof acc[0]); /* a fixed size: no call */
            qgemv_avx(j, a, b, nt, acc[0]);
            store_tile(acc, mb, nt, c, j->N, j->alpha, j->beta);
            continue;
        }
#endif
        for (int i = 0; i < mb; i++)
            for (int n = 0; n < nt; n++) acc[i][n] = 0;
        for (int64_t k0 = 0; k0 < j->K; k0 += KC) {
            int nb = (int)((j->K - k0 < KC ? j->K - k0 : KC) / QB);
            size_t off = (size_t)(k0 / QB) * bbytes, cbytes = (size_t)nb * bbytes, ahead = off + 2 * cbytes;
            const int8_t *wp[NT];
            const float *dp[NT];
            for (int n = 0; n < nt; n++) {
                const uint8_t *p = b + (size_t)n * j->row_bytes + off;
#if defined(__GNUC__)
                if (ahead + cbytes <= j->row_bytes)
                    for (size_t q = 0; q < cbytes; q += 64) __builtin_prefetch(b + (size_t)n * j->row_bytes + ahead + q);
#endif
                dp[n] = wd[n];
                if (direct) { /* Q8_0: the bytes in place, only the scales decoded */
                    wp[n] = (const int8_t *)(const void *)(p + 2);
#ifdef PXL_CPU_X86
                    if (j->simd) w8_scales_avx(p, nb, wd[n]);
                    else
#endif
                        for (int k = 0; k < nb; k++) wd[n][k] = half_at(p + 34 * k);
                    continue;
                }
                wp[n] = wq[n];
#ifdef PXL_CPU_X86
                if (j->simd) w8_chunk_avx(j->dt, p, bbytes, nb, wq[n], wd[n]);
                else
#endif
                    for (int k = 0; k < nb; k++) wd[n][k] = w8_c(j->dt, p + (size_t)k * bbytes, wq[n] + QB * k);
            }
            for (int i = 0; i < mb; i += 2) {
                int mr = mb - i < 2 ? 1 : 2;
                const q8blk *ap[2] = {a + i * nbk + k0 / QB, a + (i + mr - 1) * nbk + k0 / QB};
                for (int n = 0; n < nt; n += 4) {
                    int nr = nt - n < 4 ? nt - n : 4;
                    float out[2][4];
#ifdef PXL_CPU_X86
                    if (j->simd) qkern_avx(mr, nr, ap, wp + n, ws, dp + n, nb, out);
                    else qkern_c(mr, nr, ap, wp + n, ws, dp + n, nb, out);
#else
                    qkern_c(mr, nr, ap, wp + n, ws, dp + n, nb, out);
#endif
                    for (int r = 0; r < mr; r++)
                        for (int q = 0; q < nr; q++) acc[i + r][n + q] += (double)out[r][q];
                }
            }
        }
        store_tile(acc, mb, nt, c, j->N, j->alpha, j->beta);
    }
}

#ifdef PXL_CPU_X86
/* The tasks of one row of A on 8-bit A against K-quant B (j->qs): each
 * tile's rows through kq8_gemv_avx */
static void kq8_range(void *arg, int64_t lo, int64_t hi) {
    const bt_job *j = arg;
    double acc[MB][NT];
    for (int64_t u = lo; u < hi; u++) {
        int64_t tile = u % j->tiles, bt = u / j->tiles; /* M = 1: one block of A rows */
        int64_t n0 = tile * NT;
        int nt = (int)(j->N - n0 < NT ? j->N - n0 : NT);
        const q8sblk *a = j->qs + (j->batch_a == 1 ? 0 : bt) * (j->K / KC);
        const uint8_t *b = j->b + ((size_t)(j->batch_b == 1 ? 0 : bt) * (size_t)j->N + (size_t)n0) * j->row_bytes;
        memset(acc[0], 0, sizeof acc[0]);
        kq8_gemv_avx(j, a, b, nt, acc[0]);
        store_tile(acc, 1, nt, j->c + bt * j->N + n0, j->N, j->alpha, j->beta);
    }
}
#endif

/* Rounds rows [lo, hi) of A (K / 32 blocks each) into the job's blocks q,
 * or with deq set (q NULL) writes the rounded values d q there instead
 * (A's layout). */
typedef struct {
    const float *a;
    q8blk *q;
    int64_t K;
    int simd;
    float *deq;
    q8sblk *qs; /* or superblocks (q and deq NULL) */
} q8_job;

static void q8_rows(void *arg, int64_t lo, int64_t hi) {
    const q8_job *j = arg;
    for (int64_t r = lo; r < hi; r++)
        for (int64_t k = 0; k < j->K; k += QB) {
            const float *x = j->a + r * j->K + k;
            q8blk one, *o = j->q ? j->q + (r * j->K + k) / QB : &one;
#ifdef PXL_CPU_X86
            if (j->simd) q8_round_avx(x, o);
            else q8_round_c(x, o);
#else
            q8_round_c(x, o);
#endif
            if (j->deq)
                for (int e = 0; e < QB; e++) j->deq[r * j->K + k + e] = o->d * (float)o->q[e];
            if (j->qs) {
                q8sblk *s = j->qs + (r * j->K + k) / KC;
                int b = (int)(k % KC) / QB, sum = 0;
                for (int e = 0; e < QB; e++) sum += o->q[e];
                memcpy(s->q + QB * b, o->q, QB);
                s->d[b] = s->d2[2 * b] = s->d2[2 * b + 1] = o->d;
                s->ds[b] = o->d * (float)sum;
            }
        }
}

int pxl_cpu_simd(const pxl_ctx *ctx) {
#ifdef PXL_CPU_X86
    /* F16C from cpuid at creation (clang's builtin has no "f16c") */
    const pxl_tuning *t = pxl_ctx_tuning(ctx);
    if (t->cpu_simd_off || !pxl_ctx_cpu_f16c(ctx) || !__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
        return 0;
    return !t->cpu_avx512_off && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                   __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                   __builtin_cpu_supports("avx512vnni")
               ? 2
               : 1;
#else
    (void)ctx;
    return 0;
#endif
}

void pxl_cpu_matmul_bt(pxl_ctx *ctx, const pxl_cpu_bt *p) {
    bt_job j = {p->a, p->b, p->c, p->dt, p->batch_a, p->batch_b, p->M, p->N, p->K, p->row_bytes, p->alpha, p->beta,
                (p->M + MB - 1) / MB, (p->N + NT - 1) / NT, pxl_cpu_simd(ctx), NULL, NULL};
    int64_t tasks = p->batch * j.mblocks * j.tiles;
    int64_t mb = p->M < MB ? p->M : MB;
    int64_t work = mb * p->K * NT; /* multiply-adds per task */
    q8blk *qa = NULL;
    float *ar = NULL;
    q8sblk *qs = NULL;
    if (p->a_q8 && p->K % QB == 0) {
        /* Q8_0, Q4_0, Q5_0: the integer kernels on the blocks; one row of A
         * against Q4_K, Q5_K or Q6_K with AVX2: kq8_gemv_avx's integer sums;
         * otherwise (a_q8 = 1) A replaced by its rounding d q and the exact
         * path (the GPU's 8-bit kernels, kmv4q and kmm8, multiply the same
         * values), or (a_q8 = 2) A as given */
        int64_t rows = p->batch_a * p->M;
        int kq = (p->dt == PXL_Q4_K || p->dt == PXL_Q5_K || p->dt == PXL_Q6_K) && p->M == 1 && j.simd &&
                 p->K % KC == 0;
        if (q8_takes(p->dt)) qa = pxl_calloc(ctx, (size_t)(rows * (p->K / QB)), sizeof *qa);
        else if (kq) qs = pxl_calloc(ctx, (size_t)(rows * (p->K / KC)), sizeof *qs);
        if (!qa && !qs && p->a_q8 != 2) /* 2: no integers here, so A as given */
            ar = pxl_calloc(ctx, (size_t)(rows * p->K), sizeof *ar); /* NULL: A as given */
        if (qa || qs || ar) {
            q8_job qj = {p->a, qa, p->K, j.simd, ar, qs};
            pxl_parallel_range(ctx, rows, 1 + 65536 / p->K, q8_rows, &qj);
            if (ar) j.a = ar;
            j.qa = qa;
            j.qs = qs;
        }
    }
    void (*task)(void *, int64_t, int64_t) = j.qa ? qbt_range : bt_range;
#ifdef PXL_CPU_X86
    if (j.qs) task = kq8_range;
#endif
    pxl_parallel_range(ctx, tasks, 1 + 131072 / (work > 0 ? work : 1), task, &j);
    pxl_free(ctx, qa);
    pxl_free(ctx, qs);
    pxl_free(ctx, ar);
}
