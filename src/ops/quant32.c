/*
 * The GGUF 32-element block formats Q5_0, Q4_1 and Q5_1, and bf16 (Q8_0 and
 * Q4_0 are in tensor.c). Layouts: PXL_Q5_0, PXL_Q4_1, PXL_Q5_1, PXL_BF16 in
 * include/pxl/ops.h; the GPU decodes the same bytes in wgsl/xquant.wgsl.
 *
 * Decoders: ggml's dequantize_row_* arithmetic, so bit for bit the same
 * floats: Q5_0 (float)(q - 16) * d; Q4_1 / Q5_1 (float)q * d + m, two
 * roundings (no fused multiply-add).
 *
 * Encoders (simple, round to nearest, one scale per block, no search):
 * Q5_0 maps the value of largest magnitude to -16 (d = max / -16, as Q4_0
 * does with -8) and rounds x / d + 16 to 0..31; Q4_1 / Q5_1 take the block's
 * [min, max] as m and (max - min) / 15 (/ 31) as d, both rounded to f16, and
 * round (x - m) / d to 0..15 (0..31).
 *
 * bf16: f32 -> bf16 rounds to nearest even on the top 16 bits; NaN stays NaN
 * (made quiet); subnormals are kept (ggml's GGML_FP32_TO_BF16).
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

static uint32_t u32_at(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

uint16_t pxl_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 64u); /* NaN: quiet */
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

float pxl_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* The 32 quants of a Q5_0 / Q5_1 block (qh at p, qs at p + 4), or of a Q4_1 block (qs at p). */
static void q5_levels(const uint8_t *p, int *q) {
    uint32_t qh = u32_at(p);
    for (int j = 0; j < 16; j++) {
        q[j] = (p[4 + j] & 0x0f) | (int)(((qh >> j) & 1u) << 4);
        q[j + 16] = (p[4 + j] >> 4) | (int)(((qh >> (j + 16)) & 1u) << 4);
    }
}

static void q4_levels(const uint8_t *p, int *q) {
    for (int j = 0; j < 16; j++) {
        q[j] = p[j] & 0x0f;
        q[j + 16] = p[j] >> 4;
    }
}

void pxl_qx_dequantize(pxl_dtype t, const uint8_t *p, float *y, int64_t n) {
    if (t == PXL_BF16) {
        for (int64_t i = 0; i < n; i++, p += 2) y[i] = pxl_bf16_to_f32((uint16_t)(p[0] | p[1] << 8));
        return;
    }
    size_t bb = t == PXL_Q5_0 ? 22 : t == PXL_Q4_1 ? 20 : 24;
    for (int64_t b = 0; b < n / PXL_QK; b++, p += bb, y += PXL_QK) {
        int q[PXL_QK];
        float d = f16_at(p);
        if (t == PXL_Q5_0) {
            q5_levels(p + 2, q);
            for (int j = 0; j < PXL_QK; j++) y[j] = (float)(q[j] - 16) * d;
            continue;
        }
        float m = f16_at(p + 2);
        if (t == PXL_Q4_1) q4_levels(p + 4, q);
        else q5_levels(p + 4, q);
        for (int j = 0; j < PXL_QK; j++) {
            float v = (float)q[j] * d; /* rounded before the add, as ggml (no fma) */
            y[j] = v + m;
        }
    }
}

/* Packs 32 levels (0..31) into qh (4 bytes at h) and nibbles (16 bytes at s); h may be NULL (Q4_1). */
static void pack_levels(const int *q, uint8_t *h, uint8_t *s) {
    uint32_t qh = 0;
    for (int j = 0; j < 16; j++) {
        s[j] = (uint8_t)((q[j] & 0x0f) | ((q[j + 16] & 0x0f) << 4));
        qh |= (uint32_t)(q[j] >> 4) << j;
        qh |= (uint32_t)(q[j + 16] >> 4) << (j + 16);
    }
    if (h)
        for (int i = 0; i < 4; i++) h[i] = (uint8_t)(qh >> (8 * i));
}

void pxl_qx_quantize(pxl_dtype t, const float *x, int64_t n, uint8_t *o) {
    if (t == PXL_BF16) {
        for (int64_t i = 0; i < n; i++, o += 2) {
            uint16_t h = pxl_f32_to_bf16(x[i]);
            o[0] = (uint8_t)h;
            o[1] = (uint8_t)(h >> 8);
        }
        return;
    }
    size_t bb = t == PXL_Q5_0 ? 22 : t == PXL_Q4_1 ? 20 : 24;
    for (int64_t b = 0; b < n / PXL_QK; b++, x += PXL_QK, o += bb) {
        int q[PXL_QK];
        memset(o, 0, bb);
        if (t == PXL_Q5_0) {
            float amax = 0, max = 0;
            for (int j = 0; j < PXL_QK; j++)
                if (fabsf(x[j]) > amax) amax = fabsf(x[j]), max = x[j];
            f16_put(o, max / -16.0f);
            float d = f16_at(o), id = d != 0.0f ? 1.0f / d : 0.0f;
            for (int j = 0; j < PXL_QK; j++) q[j] = clampi((int)lrintf(x[j] * id) + 16, 0, 31);
            pack_levels(q, o + 2, o + 6);
            continue;
        }
        int top = t == PXL_Q4_1 ? 15 : 31;
        float lo = x[0], hi = x[0];
        for (int j = 1; j < PXL_QK; j++) lo = fminf(lo, x[j]), hi = fmaxf(hi, x[j]);
        f16_put(o, (hi - lo) / (float)top);
        f16_put(o + 2, lo);
        float d = f16_at(o), m = f16_at(o + 2), id = d != 0.0f ? 1.0f / d : 0.0f;
        for (int j = 0; j < PXL_QK; j++) q[j] = clampi((int)lrintf((x[j] - m) * id), 0, top);
        if (t == PXL_Q4_1) pack_levels(q, NULL, o + 4);
        else pack_levels(q, o + 4, o + 8);
    }
}
