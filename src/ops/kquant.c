/*
 * The GGUF K-quant block formats Q2_K, Q3_K, Q4_K, Q5_K and Q6_K (256 elements per
 * block): exact decoders in llama.cpp's arithmetic order, and simple
 * encoders. The layouts are described at PXL_Q4_K, PXL_Q5_K and PXL_Q6_K in
 * include/pxl/ops.h; the GPU decodes the same bytes in wgsl/kquant.wgsl
 * (Q4_K, Q6_K) and wgsl/xquant.wgsl (Q5_K).
 *
 * Encoders (no search, unlike llama.cpp's): Q4_K takes each 32-element
 * sub-block's range [min(x, 0), max(x)], the super-block scales d and dmin
 * as the largest sub-block scale and offset over 63, the 6-bit sub-block
 * scale rounded up (so the range fits 15 steps) and its offset rounded to
 * nearest (Q5_K: the same with 31 steps); Q6_K takes each 16-element
 * sub-block's largest magnitude over 31,
 * d as the largest of those over 127 and int8 sub-block scales rounded to
 * nearest.
 */
#include "ops_internal.h"

#include <math.h>
#include <string.h>

static float f16_at(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return pxl_f16_to_f32(h);
}

static void f16_put(uint8_t *p, float f) {
    uint16_t h = pxl_f32_to_f16(f);
    memcpy(p, &h, 2);
}

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* ---- Q4_K ---------------------------------------------------------------------------- */

/* The 6-bit scale and min of sub-block j from the 12 packed bytes. */
static void q4k_scale_min(const uint8_t *q, int j, int *sc, int *m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

void pxl_q4k_dequantize(const uint8_t *p, float *y, int64_t n) {
    for (int64_t b = 0; b < n / PXL_QK_K; b++, p += 144) {
        float d = f16_at(p), dmin = f16_at(p + 2);
        const uint8_t *q = p + 16;
        for (int pair = 0; pair < 4; pair++, q += 32) {
            int sc, m;
            q4k_scale_min(p + 4, 2 * pair, &sc, &m);
            float d1 = d * (float)sc, m1 = dmin * (float)m;
            q4k_scale_min(p + 4, 2 * pair + 1, &sc, &m);
            float d2 = d * (float)sc, m2 = dmin * (float)m;
            for (int l = 0; l < 32; l++) *y++ = d1 * (float)(q[l] & 0x0f) - m1;
            for (int l = 0; l < 32; l++) *y++ = d2 * (float)(q[l] >> 4) - m2;
        }
    }
}

void pxl_q5k_dequantize(const uint8_t *p, float *y, int64_t n) {
    for (int64_t b = 0; b < n / PXL_QK_K; b++, p += 176) {
        float d = f16_at(p), dmin = f16_at(p + 2);
        const uint8_t *qh = p + 16, *q = p + 48;
        for (int pair = 0; pair < 4; pair++, q += 32) {
            int sc, m;
            q4k_scale_min(p + 4, 2 * pair, &sc, &m);
            float d1 = d * (float)sc, m1 = dmin * (float)m;
            q4k_scale_min(p + 4, 2 * pair + 1, &sc, &m);
            float d2 = d * (float)sc, m2 = dmin * (float)m;
            for (int l = 0; l < 32; l++) *y++ = d1 * (float)((q[l] & 0x0f) | (((qh[l] >> (2 * pair)) & 1) << 4)) - m1;
            for (int l = 0; l < 32; l++) *y++ = d2 * (float)((q[l] >> 4) | (((qh[l] >> (2 * pair + 1)) & 1) << 4)) - m2;
        }
    }
}

/* The 12 scale bytes of Q4_K / Q5_K from 6-bit scales and mins. */
static void pack_scales(uint8_t *s, const int *sc, const int *m) {
    for (int j = 0; j < 4; j++) {
        s[j] = (uint8_t)(sc[j] | ((sc[j + 4] >> 4) << 6));
        s[j + 4] = (uint8_t)(m[j] | ((m[j + 4] >> 4) << 6));
        s[j + 8] = (uint8_t)((sc[j + 4] & 0x0f) | ((m[j + 4] & 0x0f) << 4));
    }
}

/* Q4_K (levels 15) and Q5_K (31): d, dmin at o, 6-bit scales at o + 4; the
 * quant levels L[256] are returned for the caller to pack. */
static void kq_range_encode(const float *x, int levels, uint8_t *o, uint8_t *L) {
    float scale[8], offs[8], smax = 0, omax = 0;
    for (int j = 0; j < 8; j++) {
        float lo = 0, hi = 0;
        for (int l = 0; l < 32; l++) {
            float v = x[32 * j + l];
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
        scale[j] = (hi - lo) / (float)levels;
        offs[j] = -lo;
        smax = scale[j] > smax ? scale[j] : smax;
        omax = offs[j] > omax ? offs[j] : omax;
    }
    f16_put(o, smax / 63.0f);
    f16_put(o + 2, omax / 63.0f);
    float d = f16_at(o), dmin = f16_at(o + 2);
    int sc[8], m[8];
    for (int j = 0; j < 8; j++) {
        sc[j] = d > 0 ? clampi((int)ceilf(scale[j] / d), 0, 63) : 0;
        m[j] = dmin > 0 ? clampi((int)lrintf(offs[j] / dmin), 0, 63) : 0;
    }
    pack_scales(o + 4, sc, m);
    for (int j = 0; j < 8; j++) {
        float d1 = d * (float)sc[j], m1 = dmin * (float)m[j];
        float id = d1 > 0 ? 1.0f / d1 : 0.0f;
        for (int l = 0; l < 32; l++) L[32 * j + l] = (uint8_t)clampi((int)lrintf((x[32 * j + l] + m1) * id), 0, levels);
    }
}

void pxl_q5k_quantize(const float *x, int64_t n, uint8_t *o) {
    for (int64_t b = 0; b < n / PXL_QK_K; b++, x += PXL_QK_K, o += 176) {
        uint8_t L[PXL_QK_K];
        memset(o, 0, 176);
        kq_range_encode(x, 31, o, L);
        uint8_t *qh = o + 16, *q = o + 48;
        for (int j = 0; j < 8; j++)
            for (int l = 0; l < 32; l++) {
                int v = L[32 * j + l];
                q[32 * (j / 2) + l] |= (uint8_t)(j % 2 ? (v & 15) << 4 : v & 15);
                qh[l] |= (uint8_t)((v >> 4) << j);
            }
    }
}

void pxl_q4k_quantize(const float *x, int64_t n, uint8_t *o) {
    for (int64_t b = 0; b < n / PXL_QK_K; b++, x += PXL_QK_K, o += 144) {
        uint8_t L[PXL_QK_K];
        memset(o, 0, 144);
        kq_range_encode(x, 15, o, L);
        for (int j = 0; j < 8; j++) {
            uint8_t *q = o + 16 + 32 * (j / 2);
            for (int l = 0; l < 32; l++) q[l] |= (uint8_t)(j % 2 ? L[32 * j + l] << 4 : L[32 * j + l]);
        }
    }
}

/* ---- Q6_K ---------------------------------------------------------------------------- */

void pxl_q6k_dequantize(const uint8_t *p, float *y, int64_t n) {
    for (int64_t b = 0; b < n / PXL_QK_K; b++, p += 210) {
        float d = f16_at(p + 208);
        const uint8_t *ql = p, *qh = p + 128;
        const int8_t *sc = (const int8_t *)(p + 192);
        for (int half = 0; half < 2; half++, y += 128, ql += 64, qh += 32, sc += 8) {
            for (int l = 0; l < 32; l++) {
                int is = l / 16;
                int q1 = ((ql[l] & 0x0f) | ((qh[l] & 3) << 4)) - 32;
                int q2 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
                int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                y[l] = d * (float)sc[is] * (float)q1;
                y[l + 32] = d * (float)sc[is + 2] * (float)q2;
                y[l + 64] = d * (float)sc[is + 4] * (float)q3;
                y[l + 96] = d * (float)sc[is + 6] * (float)q4;
            }
        }
    }
}

void pxl_q6k_quantize(const float *x, int64_t n, uint8_t *o) {
    for (int64_t b = 0; b < n / PXL_QK_K; b++, x += PXL_QK_K, o += 210) {
        float scale[16], smax = 0;
        for (int j = 0; j < 16; j++) {
            float amax = 0;
            for (int l = 0; l < 16; l++) amax = fmaxf(amax, fabsf(x[16 * j + l]));
            scale[j] = amax / 31.0f;
            smax = fmaxf(smax, scale[j]);
        }
        memset(o, 0, 210);
        f16_put(o + 208, smax / 127.0f);
        float d = f16_at(o + 208);
        int8_t *sc = (int8_t *)(o + 192);
        uint8_t L[PXL_QK_K];
        for (int j = 0; j < 16; j++) {
            sc[j] = (int8_t)(d > 0 ? clampi((int)lrintf(scale[j] / d), -127, 127) : 0);
            float e = d * (float)sc[j], id = e != 0 ? 1.0f / e : 0.0f;
            for (int l = 0; l < 16; l++) L[16 * j + l] = (uint8_t)(clampi((int)lrintf(x[16 * j + l] * id), -32, 31) + 32);
        }
        uint8_t *ql = o, *qh = o + 128;
        for (int half = 0; half < 2; half++, ql += 64, qh += 32) {
            const uint8_t *Lh = L + 128 * half;
            for (int l = 0; l < 32; l++) {
                ql[l] = (uint8_t)((Lh[l] & 0x0f) | ((Lh[l + 64] & 0x0f) << 4));
                ql[l + 32] = (uint8_t)((Lh[l + 32] & 0x0f) | ((Lh[l + 96] & 0x0f) << 4));
                qh[l] = (uint8_t)((Lh[l] >> 4) | ((Lh[l + 32] >> 4) << 2) | ((Lh[l + 64] >> 4) << 4) |
                                  ((Lh[l + 96] >> 4) << 6));
            }
        }
    }
}

/* ---- Q2_K and Q3_K ---------------------------------------------------------------------
 * Both walk the block as ggml's dequantize_row_q2_K / _q3_K do: two halves of
 * 128 (32 quant bytes each), four 2-bit planes per half (shift 2j), each
 * plane two groups of 16 with their own scale. Q2_K: y = (d * sc) * q -
 * dmin * m; Q3_K: y = (d * (scale - 32)) * (q - 4 when the hmask bit is clear).
 *
 * Encoders (simple, no search): Q2_K takes each 16-element group's range
 * [min(x, 0), max(x)] in 3 steps, d and dmin as the largest group scale and
 * offset over 15, the 4-bit scale rounded up and the offset to nearest;
 * Q3_K maps each group's value of largest magnitude to -4 (a signed scale),
 * d as the largest scale magnitude over 31, 6-bit scales rounded to nearest,
 * quants rounded to -4..3. */

/* Q3_K's 6-bit scale i (0..15) from the 12 packed bytes, as a signed value - 32. */
static int q3k_scale(const uint8_t *s, int i) {
    int lo = (s[i & 7] >> (4 * (i >> 3))) & 0x0f;
    int hi = (s[8 + (i & 3)] >> (2 * (i >> 2))) & 3;
    return (lo | (hi << 4)) - 32;
}

void pxl_q2k_dequantize(const uint8_t *p, float *y, int64_t n) {
    for (int64_t b = 0; b < n / PXL_QK_K; b++, p += 84) {
        float d = f16_at(p + 80), dmin = f16_at(p + 82);
        const uint8_t *sc = p, *q = p + 16;
        for (int h = 0; h < 2; h++, q += 32)
            for (int j = 0; j < 4; j++)
                for (int g = 0; g < 2; g++) {
                    int s = *sc++;
                    float dl = d * (float)(s & 0x0f), ml = dmin * (float)(s >> 4);
                    for (int l = 16 * g; l < 16 * g + 16; l++) *y++ = dl * (float)((q[l] >> (2 * j)) & 3) - ml;
                }
    }
}

void pxl_q3k_dequantize(const uint8_t *p, float *y, int64_t n) {
    for (int64_t b = 0; b < n / PXL_QK_K; b++, p += 110) {
        float d = f16_at(p + 108);
        const uint8_t *hm = p, *q = p + 32;
        int is = 0;
        for (int h = 0; h < 2; h++, q += 32)
            for (int j = 0; j < 4; j++) {
                int bit = 4 * h + j;
                for (int g = 0; g < 2; g++) {
                    float dl = d * (float)q3k_scale(p + 96, is++);
                    for (int l = 16 * g; l < 16 * g + 16; l++)
                        *y++ = dl * (float)(((q[l] >> (2 * j)) & 3) - ((hm[l] >> bit) & 1 ? 0 : 4));
                }
            }
    }
}

/* The element of block-local index e for group (16 elements) k = e / 16:
 * h = e / 128, j = (e / 32) % 4, l = e % 32: quant byte 32h + l, plane j. */
void pxl_q2k_quantize(const float *x, int64_t n, uint8_t *o) {
    for (int64_t b = 0; b < n / PXL_QK_K; b++, x += PXL_QK_K, o += 84) {
        float scale[16], offs[16], smax = 0, omax = 0;
        for (int k = 0; k < 16; k++) {
            float lo = 0, hi = 0;
            for (int l = 0; l < 16; l++) {
                float v = x[16 * k + l];
                lo = v < lo ? v : lo;
                hi = v > hi ? v : hi;
            }
            scale[k] = (hi - lo) / 3.0f;
            offs[k] = -lo;
            smax = scale[k] > smax ? scale[k] : smax;
            omax = offs[k] > omax ? offs[k] : omax;
        }
        memset(o, 0, 84);
        f16_put(o + 80, smax / 15.0f);
        f16_put(o + 82, omax / 15.0f);
        float d = f16_at(o + 80), dmin = f16_at(o + 82);
        for (int k = 0; k < 16; k++) {
            int sc = d > 0 ? clampi((int)ceilf(scale[k] / d), 0, 15) : 0;
            int m = dmin > 0 ? clampi((int)lrintf(offs[k] / dmin), 0, 15) : 0;
            o[k] = (uint8_t)(sc | (m << 4));
            float d1 = d * (float)sc, m1 = dmin * (float)m, id = d1 > 0 ? 1.0f / d1 : 0.0f;
            for (int l = 0; l < 16; l++) {
                int e = 16 * k + l, q = clampi((int)lrintf((x[e] + m1) * id), 0, 3);
                o[16 + 32 * (e / 128) + e % 32] |= (uint8_t)(q << (2 * ((e / 32) % 4)));
            }
        }
    }
}

void pxl_q3k_quantize(const float *x, int64_t n, uint8_t *o) {
    for (int64_t b = 0; b < n / PXL_QK_K; b++, x += PXL_QK_K, o += 110) {
        float scale[16], smax = 0;
        for (int k = 0; k < 16; k++) {
            float big = 0;
            for (int l = 0; l < 16; l++)
                if (fabsf(x[16 * k + l]) > fabsf(big)) big = x[16 * k + l];
            scale[k] = big / -4.0f;
            smax = fmaxf(smax, fabsf(scale[k]));
        }
        memset(o, 0, 110);
        f16_put(o + 108, smax / 31.0f);
        float d = f16_at(o + 108);
        uint8_t *s = o + 96;
        for (int k = 0; k < 16; k++) {
            int sc = d > 0 ? clampi((int)lrintf(scale[k] / d), -32, 31) : 0;
            int u = sc + 32; /* 6 bits: low 4 in byte k mod 8, high 2 in byte 8 + k mod 4 */
            s[k & 7] |= (uint8_t)((u & 15) << (4 * (k >> 3)));
            s[8 + (k & 3)] |= (uint8_t)((u >> 4) << (2 * (k >> 2)));
            float e = d * (float)sc, id = e != 0 ? 1.0f / e : 0.0f;
            for (int l = 0; l < 16; l++) {
                int i = 16 * k + l, q = clampi((int)lrintf(x[i] * id), -4, 3) + 4;
                o[32 + 32 * (i / 128) + i % 32] |= (uint8_t)((q & 3) << (2 * ((i / 32) % 4)));
                if (q & 4) o[i % 32] |= (uint8_t)(1u << (i / 32));
            }
        }
    }
}
