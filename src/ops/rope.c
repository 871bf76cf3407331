/*
 * Rotary position embedding: x, y [T, H, D] f32, D even; row t is at position
 * pos = pos_offset + t and pair i of each head turns by pos * theta'_i radians.
 *
 * theta_i, the same f32 on both backends: theta_i = A[a] * B[b] rounded to
 * f32, with i = i0 + 32a + b, i0 = i rounded down to a multiple of
 * ROPE_CHUNK, A[a] = f32(base^(-2(i0 + 32a)/D)) and B[b] = f32(base^(-2b/D))
 * (pow in double, then rounded). Pairs below 32 get the correctly rounded
 * f32 of base^(-2i/D); the others are within 1.5 ulp of it. The split keeps
 * a dispatch's frequencies in a 256-byte uniform block (32 + 20 floats cover
 * up to ROPE_CHUNK = 640 pairs; larger D takes one dispatch per 640 pairs).
 *
 * Scaling (pxl_rope_ext) enters theta, not the position, so that pos stays an
 * integer and the angle pos * theta' keeps its exact reduction:
 *   theta'_i = keep(keep(keep(theta_i) * freq_scale) / freq_factors[i])
 * where each operation is the correctly rounded f32 one (CPU: the exact
 * double product, or the double quotient, rounded once to f32 -- innocuous
 * double rounding for * and /; GPU: the f32 product, and the quotient by an
 * exact integer long division in rope.wgsl), and keep() maps a value outside
 * [2^-126, 2^40) to 0 (for the quotient: an exact quotient below 2^-126; a
 * factor that is not a positive normal finite f32 gives 0 too). A freq_scale
 * of 1 and a missing factor change nothing; each present one adds at most
 * half an ulp, so theta'_i is within 2.5 ulp of the exact
 * base^(-2i/D) freq_scale / factor_i. Subnormal and huge theta' are never
 * meaningful (and a GPU may flush subnormals), hence keep().
 *
 * The angle: CPU in long double (pos * theta' is exact there; sinl/cosl reduce
 * exactly), the rotation in double. GPU: exact integer range reduction, then
 * f32 polynomials (see rope.wgsl): |angle error| < 1e-7 rad at any |pos| <
 * 2^31 and theta' < 2^40, so the GPU stays within a few f32 ulps of
 * max(|x_2i|, |x_2i+1|) of the CPU at position 10^6 as at position 0.
 *
 * Positions must lie in (-2^31, 2^31) and base must be finite and >= 1
 * (so every theta_i <= 1).
 */
#include "ops_internal.h"

#include <math.h>
#include <string.h>

#define ROPE_WG 64u
#define ROPE_HG 4          /* heads per invocation, as HG in rope.wgsl */
#define ROPE_LO 32         /* B[] entries */
#define ROPE_HI 20         /* A[] entries */
#define ROPE_CHUNK (ROPE_LO * ROPE_HI)

typedef struct {
    int32_t pos_offset;
    uint32_t T, H, half, i0, cn, layout, nhg;
    float lo[ROPE_LO], hi[ROPE_HI];
    uint32_t ox, oy;  /* view offsets of x and y */
    float fs;         /* freq_scale */
    uint32_t off_ff;  /* view offset of freq_factors */
} rope_params;
_Static_assert(sizeof(rope_params) == 256, "mirrors struct Params in rope.wgsl (and fills a uniform block)");

static float rope_pow(double base, int64_t i, int64_t D) {
    return (float)pow(base, -2.0 * (double)i / (double)D);
}

/* keep() above */
static float rope_keep(float t) { return t >= 0x1p-126f && t < 0x1p40f ? t : 0.0f; }

/* theta'_i as described above; the GPU tables hold the same A and B, and
 * rope.wgsl applies freq_scale and the factor in the same way. */
static float rope_theta(double base, int64_t D, int64_t i, float fs, const float *ff) {
    int64_t i0 = i / ROPE_CHUNK * ROPE_CHUNK, r = i - i0;
    float a = rope_pow(base, i0 + r / ROPE_LO * ROPE_LO, D);
    float b = rope_pow(base, r % ROPE_LO, D);
    float t = rope_keep((float)((double)a * (double)b));
    t = rope_keep((float)((double)t * (double)fs));
    if (ff && t != 0.0f) {
        float f = ff[i];
        if (!(f >= 0x1p-126f && f <= 3.40282347e38f)) return 0.0f;
        double q = (double)t / (double)f;
        t = q < 0x1p-126 ? 0.0f : rope_keep((float)q);
    }
    return t;
}

/* ---- CPU reference: one task per (t, pair), the rotation shared by all heads ---- */

typedef struct {
    const float *x;
    float *y;
    const float *theta;
    int64_t T, H, D, pos_offset;
    int layout;
} rope_job;

static void rope_range(void *arg, int64_t lo, int64_t hi) {
    const rope_job *j = arg;
    int64_t half = j->D / 2;
    for (int64_t n = lo; n < hi; n++) {
        int64_t t = n / half, i = n % half;
        long double ang = (long double)(j->pos_offset + t) * (long double)j->theta[i];
        double c = (double)cosl(ang), s = (double)sinl(ang);
        for (int64_t h = 0; h < j->H; h++) {
            int64_t base = (t * j->H + h) * j->D;
            int64_t ia = j->layout == PXL_ROPE_ADJACENT ? base + 2 * i : base + i;
            int64_t ib = j->layout == PXL_ROPE_ADJACENT ? ia + 1 : ia + half;
            double a = (double)j->x[ia], b = (double)j->x[ib];
            j->y[ia] = (float)(a * c - b * s);
            j->y[ib] = (float)(a * s + b * c);
        }
    }
}

/* ---- GPU ---------------------------------------------------------------------------- */

/* Records one dispatch: rope (x at binding 0, y at 1) or, in place,
 * rope_inplace (y alone, at 1: the uniform block is at 2 in both, so the
 * in-place entry binds y once, read_write); with factors (ff, at binding 3)
 * rope_ff or rope_inplace_ff. */
static pxl_status rope_dispatch(pxl_ctx *ctx, const char *op, const pxl_tensor *x, const pxl_tensor *y,
                                const pxl_tensor *ff, rope_params *p, uint64_t groups) {
    pxl_op_bindings b;
    pxl_status s;
    if (x) {
        const pxl_tensor *t[3] = {x, y, ff};
        if ((s = pxl_op_bind(ctx, op, t, ff ? 3 : 2, 2u, 0u, &b)) != PXL_OK) return s;
        p->ox = b.off[0];
        p->oy = b.off[1];
        if (ff) {
            b.b[2].binding = 3;
            p->off_ff = b.off[2];
        }
    } else {
        const pxl_tensor *t[2] = {y, ff};
        if ((s = pxl_op_bind(ctx, op, t, ff ? 2 : 1, 1u, 0u, &b)) != PXL_OK) return s;
        b.b[0].binding = 1; /* y alone, at binding 1 */
        p->ox = p->oy = b.off[0];
        if (ff) {
            b.b[1].binding = 3;
            p->off_ff = b.off[1];
        }
    }
    static const char *const entries[4] = {"rope_inplace", "rope", "rope_inplace_ff", "rope_ff"};
    pxl_constant wg = {"WG", ROPE_WG};
    pxl_kernel *k;
    uint32_t g[2];
    if ((s = pxl_op_grid(ctx, op, groups, g)) != PXL_OK) return s;
    if ((s = pxl_kernel_get_static(ctx, "rope.wgsl", pxl_wgsl_ops_rope, entries[(x ? 1 : 0) + (ff ? 2 : 0)], &wg, 1,
                                   &k)) != PXL_OK)
        return s;
    pxl_recorder *rec;
    if ((s = pxl_gpu_stream(ctx, &rec)) != PXL_OK) return s;
    pxl_dispatch d = {k, b.b, b.n, p, sizeof *p, 2, {g[0], g[1], 1}};
    return pxl_recorder_dispatch(rec, &d);
}

static pxl_status rope_run(pxl_ctx *ctx, const char *op, const pxl_tensor *x, pxl_tensor *y, int64_t pos_offset,
                           float base, pxl_rope_layout layout, float fs, const pxl_tensor *ff) {
    pxl_status s;
    if ((s = pxl_check_dtype(ctx, op, "x", x, PXL_F32)) != PXL_OK) return s;
    if ((s = pxl_check_dtype(ctx, op, "y", y, PXL_F32)) != PXL_OK) return s;
    if ((s = pxl_check_output(ctx, op, "y", y)) != PXL_OK) return s;
    if ((s = pxl_check_overlap(ctx, op, "y", y, "x", x, 1)) != PXL_OK) return s;
    if (x->ndim != 3) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: x has %d dimensions, expected 3 [T, H, D]", op, x->ndim);
    if ((s = pxl_check_same_shape(ctx, op, "x", x, "y", y)) != PXL_OK) return s;
    int64_t T = x->shape[0], H = x->shape[1], D = x->shape[2];
    if (D % 2) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: x has D = %lld, which is odd", op, (long long)D);
    int64_t half = D / 2;
    if (ff) {
        if ((s = pxl_check_dtype(ctx, op, "freq_factors", ff, PXL_F32)) != PXL_OK) return s;
        if ((s = pxl_check_vec(ctx, op, "freq_factors", ff, half)) != PXL_OK) return s;
        if ((s = pxl_check_overlap(ctx, op, "y", y, "freq_factors", ff, 0)) != PXL_OK) return s;
    }
    if (layout != PXL_ROPE_ADJACENT && layout != PXL_ROPE_HALVES)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: unknown layout %d", op, (int)layout);
    if (!(base >= 1.0f) || isinf(base))
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: base %g must be finite and >= 1", op, (double)base);
    if (!(fs > 0.0f) || isinf(fs))
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: freq_scale %g must be finite and > 0", op, (double)fs);
    if (pos_offset <= -2147483648LL || pos_offset > 2147483647LL - (T - 1))
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: positions %lld..%lld outside (-2^31, 2^31)", op,
                        (long long)pos_offset, (long long)pos_offset + (T - 1));

    if (!pxl_on_gpu(ctx)) {
        float *theta = pxl_calloc(ctx, (size_t)half, sizeof *theta);
        if (!theta) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
        const float *fv = ff ? (const float *)ff->host : NULL;
        for (int64_t i = 0; i < half; i++) theta[i] = rope_theta((double)base, D, i, fs, fv);
        rope_job j = {x->host, y->host, theta, T, H, D, pos_offset, (int)layout};
        pxl_parallel_range(ctx, T * half, (16384 + H - 1) / H, rope_range, &j);
        pxl_free(ctx, theta);
        return PXL_OK;
    }

    int64_t nhg = (H + ROPE_HG - 1) / ROPE_HG;
    if (x->nelem > UINT32_MAX || T * nhg * (half < ROPE_CHUNK ? half : ROPE_CHUNK) > UINT32_MAX - ROPE_WG)
        return pxl_fail(ctx, PXL_ERR_UNSUPPORTED, "%s: more than 2^32 elements", op);
    rope_params p;
    memset(&p, 0, sizeof p);
    p.pos_offset = (int32_t)pos_offset;
    p.T = (uint32_t)T;
    p.H = (uint32_t)H;
    p.half = (uint32_t)half;
    p.layout = (uint32_t)layout;
    p.nhg = (uint32_t)nhg;
    p.fs = fs;
    for (int b = 0; b < ROPE_LO; b++) p.lo[b] = rope_pow((double)base, b, D);
    for (int64_t i0 = 0; i0 < half; i0 += ROPE_CHUNK) {
        int64_t cn = half - i0 < ROPE_CHUNK ? half - i0 : ROPE_CHUNK;
        p.i0 = (uint32_t)i0;
        p.cn = (uint32_t)cn;
        for (int a = 0; a < ROPE_HI; a++) p.hi[a] = rope_pow((double)base, i0 + a * ROPE_LO, D);
        uint64_t groups = ((uint64_t)T * (uint64_t)nhg * (uint64_t)cn + ROPE_WG - 1) / ROPE_WG;
        int in_place = x->st == y->st && x->offset == y->offset;
        if ((s = rope_dispatch(ctx, op, in_place ? NULL : x, y, ff, &p, groups)) != PXL_OK) return s;
    }
    return PXL_OK;
}

pxl_status pxl_rope(pxl_ctx *ctx, const pxl_tensor *x, pxl_tensor *y, int64_t pos_offset, float base,
                    pxl_rope_layout layout) {
    PXL_REQUIRE_CTX(ctx);
    return rope_run(ctx, "pxl_rope", x, y, pos_offset, base, layout, 1.0f, NULL);
}

pxl_status pxl_rope_ext(pxl_ctx *ctx, const pxl_tensor *x, pxl_tensor *y, int64_t pos_offset,
                        const pxl_rope_options *opts) {
    PXL_REQUIRE_CTX(ctx);
    pxl_rope_options o;
    memset(&o, 0, sizeof o);
    if (opts) o = *opts;
    return rope_run(ctx, "pxl_rope_ext", x, y, pos_offset, o.base == 0.0f ? 10000.0f : o.base, o.layout,
                    o.freq_scale == 0.0f ? 1.0f : o.freq_scale, o.freq_factors);
}
