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
 *
 * Also here: pxl_rope_kv (RoPE of a pass's q and k, k into the KV cache's
 * rows and v copied into its rows, one dispatch) and pxl_rope_kv_attention
 * (pxl_rope_kv, then attention over the caches; one dispatch for one token).
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

/* ---- CPU angle table -----------------------------------------------------------------
 *
 * A CPU call needs theta'_i for each pair and the cosine and sine of the
 * angle pos * theta'_i (the long double product, cosl and sinl, each rounded
 * to double) for each of its rows. A model's forward pass asks for the same
 * ones in every layer (q and k of each layer, the same positions), so the
 * context keeps the last call's table in ctx->rope_table (one pxl_calloc
 * block; pxl_ctx_free frees it). Its key: base, freq_scale, D and the
 * factors' values for theta'; in addition pos_offset and T for the angles. A
 * call whose key differs recomputes, by the same formulas, what its key
 * changes, so every value is the one a fresh computation gives. A block of
 * more than ROPE_TABLE_KEEP bytes is freed after its call.
 */

#define ROPE_TABLE_KEEP ((size_t)1 << 20)

typedef struct {
    size_t bytes;         /* of the whole block */
    int64_t half_cap;     /* room in theta[] and ff[] */
    size_t cs_cap;        /* room in cs[], doubles */
    int theta_ok;         /* theta[] holds theta'_i for (base, fs, D, ff) below */
    int cs_ok;            /* and cs[] the angles of rows pos_offset .. pos_offset + T - 1 */
    float base, fs;
    int64_t D, T, pos_offset;
    int has_ff;           /* factors given: ff[] holds a copy of their values */
    double *cs;           /* [T][D/2] pairs (cos, sin) */
    float *theta, *ff;    /* [D/2] each */
} rope_table;

typedef struct {
    const float *theta;
    double *cs;
    int64_t half, pos_offset;
} rope_fill_job;

static void rope_fill_range(void *arg, int64_t lo, int64_t hi) {
    const rope_fill_job *j = arg;
    for (int64_t n = lo; n < hi; n++) {
        int64_t t = n / j->half, i = n % j->half;
        long double ang = (long double)(j->pos_offset + t) * (long double)j->theta[i];
        j->cs[2 * n] = (double)cosl(ang);
        j->cs[2 * n + 1] = (double)sinl(ang);
    }
}

/* The angles of T rows at positions pos_offset .. of D/2 pairs each, as
 * [T][D/2] pairs (cos, sin), from the context's table (made or refreshed
 * here). The array belongs to the context and stays valid until the next
 * CPU RoPE call or rope_table_done. NULL (with the message set) when out of
 * memory. */
static const double *rope_angles(pxl_ctx *ctx, const char *op, int64_t T, int64_t D, int64_t pos_offset, float base,
                                 float fs, const float *ff) {
    int64_t half = D / 2;
    size_t n_cs, cs_bytes, half_bytes, bytes;
    size_t head = (sizeof(rope_table) + 15) / 16 * 16;
    if (!pxl_mul_size((size_t)T, (size_t)half, &n_cs) || !pxl_mul_size(n_cs, 2 * sizeof(double), &cs_bytes) ||
        !pxl_mul_size((size_t)half, sizeof(float), &half_bytes) || !pxl_add_size(head, cs_bytes, &bytes) ||
        !pxl_add_size(bytes, 2 * half_bytes, &bytes)) {
        pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
        return NULL;
    }
    rope_table *tb = ctx->rope_table;
    if (tb && (tb->half_cap < half || tb->cs_cap < 2 * n_cs)) {
        pxl_free(ctx, tb);
        ctx->rope_table = tb = NULL;
    }
    if (!tb) {
        unsigned char *blk = pxl_calloc(ctx, 1, bytes);
        if (!blk) {
            pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
            return NULL;
        }
        tb = (rope_table *)(void *)blk;
        tb->bytes = bytes;
        tb->half_cap = half;
        tb->cs_cap = 2 * n_cs;
        tb->cs = (double *)(void *)(blk + head);
        tb->theta = (float *)(void *)(blk + head + cs_bytes);
        tb->ff = tb->theta + half;
        ctx->rope_table = tb;
    }
    if (!(tb->theta_ok && tb->base == base && tb->fs == fs && tb->D == D && tb->has_ff == (ff != NULL) &&
          (!ff || !memcmp(tb->ff, ff, (size_t)half * sizeof *ff)))) {
        for (int64_t i = 0; i < half; i++) tb->theta[i] = rope_theta((double)base, D, i, fs, ff);
        if (ff) memcpy(tb->ff, ff, (size_t)half * sizeof *ff);
        tb->base = base;
        tb->fs = fs;
        tb->D = D;
        tb->has_ff = ff != NULL;
        tb->theta_ok = 1;
        tb->cs_ok = 0;
    }
    if (!(tb->cs_ok && tb->pos_offset == pos_offset && tb->T == T)) {
        rope_fill_job j = {tb->theta, tb->cs, half, pos_offset};
        pxl_parallel_range(ctx, T * half, 256, rope_fill_range, &j);
        tb->pos_offset = pos_offset;
        tb->T = T;
        tb->cs_ok = 1;
    }
    return tb->cs;
}

/* Called when a CPU call is done with its angles: frees a large table. */
static void rope_table_done(pxl_ctx *ctx) {
    rope_table *tb = ctx->rope_table;
    if (tb && tb->bytes > ROPE_TABLE_KEEP) {
        pxl_free(ctx, tb);
        ctx->rope_table = NULL;
    }
}

/* ---- CPU reference: one task per (t, pair), the rotation shared by all heads ---- */

typedef struct {
    const float *x;
    float *y;
    const double *cs; /* rope_angles */
    int64_t T, H, D;
    int layout;
} rope_job;

/* The pair (xa, xb) turned by the angle of cosine c and sine s, into ya, yb
 * (which may be xa, xb): the one rounding of every CPU rope result. */
static inline void rope_pair(float xa, float xb, double c, double s, float *ya, float *yb) {
    double a = (double)xa, b = (double)xb;
    *ya = (float)(a * c - b * s);
    *yb = (float)(a * s + b * c);
}

static void rope_range(void *arg, int64_t lo, int64_t hi) {
    const rope_job *j = arg;
    int64_t half = j->D / 2;
    for (int64_t n = lo; n < hi; n++) {
        int64_t t = n / half, i = n % half;
        double c = j->cs[2 * n], s = j->cs[2 * n + 1];
        for (int64_t h = 0; h < j->H; h++) {
            int64_t base = (t * j->H + h) * j->D;
            int64_t ia = j->layout == PXL_ROPE_ADJACENT ? base + 2 * i : base + i;
            int64_t ib = j->layout == PXL_ROPE_ADJACENT ? ia + 1 : ia + half;
            rope_pair(j->x[ia], j->x[ib], c, s, &j->y[ia], &j->y[ib]);
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

/* The checks of the parameters that are not tensors, shared by pxl_rope,
 * pxl_rope_ext and pxl_rope_kv (T rows at positions pos_offset ..). */
static pxl_status rope_check_params(pxl_ctx *ctx, const char *op, int64_t T, int64_t pos_offset, float base,
                                    pxl_rope_layout layout, float fs) {
    if (layout != PXL_ROPE_ADJACENT && layout != PXL_ROPE_HALVES)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: unknown layout %d", op, (int)layout);
    if (!(base >= 1.0f) || isinf(base))
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: base %g must be finite and >= 1", op, (double)base);
    if (!(fs > 0.0f) || isinf(fs))
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: freq_scale %g must be finite and > 0", op, (double)fs);
    if (pos_offset <= -2147483648LL || pos_offset > 2147483647LL - (T - 1))
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: positions %lld..%lld outside (-2^31, 2^31)", op,
                        (long long)pos_offset, (long long)pos_offset + (T - 1));
    return PXL_OK;
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
    if ((s = rope_check_params(ctx, op, T, pos_offset, base, layout, fs)) != PXL_OK) return s;

    if (!pxl_on_gpu(ctx)) {
        const double *cs = rope_angles(ctx, op, T, D, pos_offset, base, fs, ff ? (const float *)ff->host : NULL);
        if (!cs) return PXL_ERR_OUT_OF_MEMORY;
        rope_job j = {x->host, y->host, cs, T, H, D, (int)layout};
        pxl_parallel_range(ctx, T * half, (16384 + H - 1) / H, rope_range, &j);
        rope_table_done(ctx);
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

/* ---- pxl_rope_kv: q in place, k into the cache row, v copied ------------------------
 *
 * The same theta'_i (rope_theta), angle and rounding as rope_run, so every
 * value is the one pxl_rope_ext gives; k_out in f16 is then rounded by
 * pxl_f32_to_f16 (CPU) or half_bits.wgsl (GPU), as pxl_convert rounds.
 *
 * GPU (rope_kv.wgsl): one dispatch per ROPE_KV_CHUNK pairs (D <= 1024: one
 * in all). When k and v lie in q's buffer and neither output does, that
 * buffer is bound once, read_write, over the span of the three views (entry
 * rope_kv); otherwise q, k and v are bound each (rope_kv_sep: pxl_op_bind
 * copies an input that shares a buffer with an output to scratch memory).
 * The uniform block holds 16 A[] entries, not rope_params' 20: theta_i
 * depends on i alone (A[] is base^(-2i'/D) at i' = i rounded down to a
 * multiple of 32), so a smaller chunk gives the same values.
 */

#define ROPE_KV_HI 16
#define ROPE_KV_CHUNK (ROPE_LO * ROPE_KV_HI)

typedef struct {
    int32_t pos_offset;
    uint32_t T, Hq, Hkv, half, i0, cn, layout;
    float lo[ROPE_LO], hi[ROPE_KV_HI];
    uint32_t oq, ok, ov, oko, ovo; /* element offsets of q, k, v, k_out, v_out in their bindings */
    float fs;
    uint32_t off_ff;
    uint32_t nv; /* words of v_out in this dispatch */
} rope_kv_params;
_Static_assert(sizeof(rope_kv_params) == 256, "mirrors struct Params in rope_kv.wgsl (and fills a uniform block)");

typedef struct {
    float *q;
    const float *k;
    float *ko;    /* k_out f32, or */
    uint16_t *kh; /* k_out f16 */
    const double *cs; /* rope_angles */
    int64_t T, Hq, Hkv, D;
    int layout;
} rope_kv_job;

/* one task per (t, pair): q's heads in place, then k's heads into k_out */
static void rope_kv_range(void *arg, int64_t lo, int64_t hi) {
    const rope_kv_job *j = arg;
    int64_t half = j->D / 2;
    for (int64_t n = lo; n < hi; n++) {
        int64_t t = n / half, i = n % half;
        double c = j->cs[2 * n], s = j->cs[2 * n + 1];
        int64_t da = j->layout == PXL_ROPE_ADJACENT ? 2 * i : i, db = j->layout == PXL_ROPE_ADJACENT ? da + 1 : i + half;
        for (int64_t h = 0; h < j->Hq; h++) {
            float *x = j->q + (t * j->Hq + h) * j->D;
            rope_pair(x[da], x[db], c, s, &x[da], &x[db]);
        }
        for (int64_t h = 0; h < j->Hkv; h++) {
            int64_t base = (t * j->Hkv + h) * j->D;
            float ya, yb;
            rope_pair(j->k[base + da], j->k[base + db], c, s, &ya, &yb);
            if (j->kh) {
                j->kh[base + da] = pxl_f32_to_f16(ya);
                j->kh[base + db] = pxl_f32_to_f16(yb);
            } else {
                j->ko[base + da] = ya;
                j->ko[base + db] = yb;
            }
        }
    }
}

static pxl_status check_cache_dtype(pxl_ctx *ctx, const char *op, const char *name, const pxl_tensor *t) {
    pxl_status s = pxl_check_tensor(ctx, op, name, t);
    if (s != PXL_OK) return s;
    if (t->dtype != PXL_F32 && t->dtype != PXL_F16)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: %s is %s, expected f32 or f16", op, name,
                        pxl_dtype_name(t->dtype));
    return pxl_check_output(ctx, op, name, t);
}

/* The f32 view of q's memory from the lowest to the highest byte of the
 * views q, k and v of one buffer (a fused QKV product's output), bound once
 * read_write by rope_kv.wgsl and rope_kv_attn.wgsl; returns its offset. */
static size_t qkv_span(const pxl_tensor *q, const pxl_tensor *k, const pxl_tensor *v, pxl_tensor *span) {
    size_t lo = q->offset, hi = q->offset + q->bytes;
    const pxl_tensor *in[2] = {k, v};
    for (int i = 0; i < 2; i++) {
        if (in[i]->offset < lo) lo = in[i]->offset;
        if (in[i]->offset + in[i]->bytes > hi) hi = in[i]->offset + in[i]->bytes;
    }
    *span = *q;
    span->ndim = 1;
    span->offset = lo;
    span->bytes = hi - lo;
    span->nelem = (int64_t)((hi - lo) / sizeof(float));
    span->shape[0] = span->nelem;
    return lo;
}

/* The GPU path for checked arguments. */
static pxl_status rope_kv_gpu(pxl_ctx *ctx, const char *op, pxl_tensor *q, const pxl_tensor *k, const pxl_tensor *v,
                              pxl_tensor *ko, pxl_tensor *vo, int64_t pos_offset, float base, pxl_rope_layout layout,
                              float fs, const pxl_tensor *ff) {
    int64_t T = q->shape[0], Hq = q->shape[1], Hkv = k->shape[1], D = q->shape[2], half = D / 2, n = k->nelem;
    int64_t nhg = (Hq + ROPE_HG - 1) / ROPE_HG;
    int k16 = ko->dtype == PXL_F16, v16 = vo->dtype == PXL_F16;
    if (q->nelem > UINT32_MAX || n > UINT32_MAX ||
        (uint64_t)T * (uint64_t)nhg * (uint64_t)(half < ROPE_KV_CHUNK ? half : ROPE_KV_CHUNK) + 2u * (uint64_t)n + 2u >
            UINT32_MAX - ROPE_WG)
        return pxl_fail(ctx, PXL_ERR_UNSUPPORTED, "%s: more than 2^32 elements", op);
    int shared = k->st == q->st && v->st == q->st && ko->st != q->st && vo->st != q->st;
    pxl_op_bindings b;
    pxl_status s;
    rope_kv_params p;
    memset(&p, 0, sizeof p);
    if (shared) {
        /* q, k and v: one read_write binding over the span of the three views */
        pxl_tensor span;
        size_t lo = qkv_span(q, k, v, &span);
        const pxl_tensor *t[4] = {&span, ko, vo, ff};
        if ((s = pxl_op_bind(ctx, op, t, ff ? 4 : 3, 7u, 0u, &b)) != PXL_OK) return s;
        p.oq = b.off[0] + (uint32_t)((q->offset - lo) / sizeof(float));
        p.ok = b.off[0] + (uint32_t)((k->offset - lo) / sizeof(float));
        p.ov = b.off[0] + (uint32_t)((v->offset - lo) / sizeof(float));
        if (ff) {
            b.b[3].binding = 4;
            p.off_ff = b.off[3];
        }
    } else {
        const pxl_tensor *t[6] = {q, ko, vo, k, v, ff};
        if ((s = pxl_op_bind(ctx, op, t, ff ? 6 : 5, 7u, 0u, &b)) != PXL_OK) return s;
        p.oq = b.off[0];
        p.ok = b.off[3];
        p.ov = b.off[4];
        b.b[3].binding = 5;
        b.b[4].binding = 6;
        if (ff) {
            b.b[5].binding = 4;
            p.off_ff = b.off[5];
        }
    }
    p.oko = b.off[1];
    p.ovo = b.off[2];
    p.pos_offset = (int32_t)pos_offset;
    p.T = (uint32_t)T;
    p.Hq = (uint32_t)Hq;
    p.Hkv = (uint32_t)Hkv;
    p.half = (uint32_t)half;
    p.layout = (uint32_t)layout;
    p.fs = fs;
    for (int i = 0; i < ROPE_LO; i++) p.lo[i] = rope_pow((double)base, i, D);
    static const char *const entries[4] = {"rope_kv_sep", "rope_kv", "rope_kv_sep_ff", "rope_kv_ff"};
    pxl_constant c[3] = {{"WG", ROPE_WG}, {"K16", k16}, {"V16", v16}};
    pxl_kernel *kern;
    if ((s = pxl_kernel_get_static(ctx, "rope_kv.wgsl", pxl_wgsl_ops_rope_kv, entries[shared + (ff ? 2 : 0)], c, 3,
                                   &kern)) != PXL_OK)
        return s;
    /* output words: f32 one element each; f16 two, the first and last perhaps half outside the view */
    uint64_t kw = k16 ? ((uint64_t)p.oko + (uint64_t)n + 1) / 2 - p.oko / 2 : (uint64_t)n;
    uint64_t vw = v16 ? ((uint64_t)p.ovo + (uint64_t)n + 1) / 2 - p.ovo / 2 : (uint64_t)n;
    for (int64_t i0 = 0; i0 < half; i0 += ROPE_KV_CHUNK) {
        int64_t cn = half - i0 < ROPE_KV_CHUNK ? half - i0 : ROPE_KV_CHUNK;
        p.i0 = (uint32_t)i0;
        p.cn = (uint32_t)cn;
        p.nv = i0 == 0 ? (uint32_t)vw : 0u;
        for (int a = 0; a < ROPE_KV_HI; a++) p.hi[a] = rope_pow((double)base, i0 + a * ROPE_LO, D);
        uint64_t jobs = (uint64_t)T * (uint64_t)nhg * (uint64_t)cn + kw + p.nv;
        uint32_t g[2];
        pxl_recorder *rec;
        if ((s = pxl_op_grid(ctx, op, (jobs + ROPE_WG - 1) / ROPE_WG, g)) != PXL_OK) return s;
        if ((s = pxl_gpu_stream(ctx, &rec)) != PXL_OK) return s;
        pxl_dispatch d = {kern, b.b, b.n, &p, sizeof p, 3, {g[0], g[1], 1}};
        if ((s = pxl_recorder_dispatch(rec, &d)) != PXL_OK) return s;
    }
    return PXL_OK;
}

/* pxl_rope_kv's options with their defaults filled in */
typedef struct {
    float base, fs;
    pxl_rope_layout layout;
    const pxl_tensor *ff;
} rope_kv_opts;

static rope_kv_opts rope_kv_defaults(const pxl_rope_options *opts) {
    pxl_rope_options o;
    memset(&o, 0, sizeof o);
    if (opts) o = *opts;
    rope_kv_opts r = {o.base == 0.0f ? 10000.0f : o.base, o.freq_scale == 0.0f ? 1.0f : o.freq_scale, o.layout,
                      o.freq_factors};
    return r;
}

/* pxl_rope_kv's checks (op names the caller) */
static pxl_status rope_kv_check(pxl_ctx *ctx, const char *op, pxl_tensor *q, const pxl_tensor *k, const pxl_tensor *v,
                                pxl_tensor *k_out, pxl_tensor *v_out, int64_t pos_offset, const rope_kv_opts *o) {
    float base = o->base, fs = o->fs;
    const pxl_tensor *ff = o->ff;
    pxl_status s;
    if ((s = pxl_check_dtype(ctx, op, "q", q, PXL_F32)) != PXL_OK) return s;
    if ((s = pxl_check_dtype(ctx, op, "k", k, PXL_F32)) != PXL_OK) return s;
    if ((s = pxl_check_dtype(ctx, op, "v", v, PXL_F32)) != PXL_OK) return s;
    if ((s = check_cache_dtype(ctx, op, "k_out", k_out)) != PXL_OK) return s;
    if ((s = check_cache_dtype(ctx, op, "v_out", v_out)) != PXL_OK) return s;
    if ((s = pxl_check_output(ctx, op, "q", q)) != PXL_OK) return s;
    if (q->ndim != 3) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: q has %d dimensions, expected 3 [T, Hq, D]", op, q->ndim);
    if (k->ndim != 3) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: k has %d dimensions, expected 3 [T, Hkv, D]", op, k->ndim);
    int64_t T = q->shape[0], D = q->shape[2];
    if (D % 2) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: q has D = %lld, which is odd", op, (long long)D);
    if (k->shape[0] != T || k->shape[2] != D)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: k is [%lld, %lld, %lld], expected [%lld, Hkv, %lld] (q's T and D)",
                        op, (long long)k->shape[0], (long long)k->shape[1], (long long)k->shape[2], (long long)T,
                        (long long)D);
    if (v->nelem != k->nelem)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: v has %lld elements, k %lld", op, (long long)v->nelem,
                        (long long)k->nelem);
    if ((s = pxl_check_same_shape(ctx, op, "k", k, "k_out", k_out)) != PXL_OK) return s;
    if ((s = pxl_check_same_shape(ctx, op, "v", v, "v_out", v_out)) != PXL_OK) return s;
    /* q is an output too: it overlaps no input but itself; the outputs overlap nothing */
    if ((s = pxl_check_overlap(ctx, op, "q", q, "k", k, 0)) != PXL_OK) return s;
    if ((s = pxl_check_overlap(ctx, op, "q", q, "v", v, 0)) != PXL_OK) return s;
    const char *names[4] = {"q", "k", "v", "k_out"};
    const pxl_tensor *others[4] = {q, k, v, k_out};
    for (int i = 0; i < 3; i++)
        if ((s = pxl_check_overlap(ctx, op, "k_out", k_out, names[i], others[i], 0)) != PXL_OK) return s;
    for (int i = 0; i < 4; i++)
        if ((s = pxl_check_overlap(ctx, op, "v_out", v_out, names[i], others[i], 0)) != PXL_OK) return s;
    if (ff) {
        if ((s = pxl_check_dtype(ctx, op, "freq_factors", ff, PXL_F32)) != PXL_OK) return s;
        if ((s = pxl_check_vec(ctx, op, "freq_factors", ff, D / 2)) != PXL_OK) return s;
        if ((s = pxl_check_overlap(ctx, op, "q", q, "freq_factors", ff, 0)) != PXL_OK) return s;
        if ((s = pxl_check_overlap(ctx, op, "k_out", k_out, "freq_factors", ff, 0)) != PXL_OK) return s;
        if ((s = pxl_check_overlap(ctx, op, "v_out", v_out, "freq_factors", ff, 0)) != PXL_OK) return s;
    }
    return rope_check_params(ctx, op, T, pos_offset, base, o->layout, fs);
}

/* pxl_rope_kv's work on checked arguments */
static pxl_status rope_kv_run(pxl_ctx *ctx, const char *op, pxl_tensor *q, const pxl_tensor *k, const pxl_tensor *v,
                              pxl_tensor *k_out, pxl_tensor *v_out, int64_t pos_offset, const rope_kv_opts *o) {
    float base = o->base, fs = o->fs;
    const pxl_tensor *ff = o->ff;
    int64_t D = q->shape[2], T = q->shape[0];
    if (pxl_on_gpu(ctx)) return rope_kv_gpu(ctx, op, q, k, v, k_out, v_out, pos_offset, base, o->layout, fs, ff);

    int64_t half = D / 2, n = k->nelem;
    const double *cs = rope_angles(ctx, op, T, D, pos_offset, base, fs, ff ? (const float *)ff->host : NULL);
    if (!cs) return PXL_ERR_OUT_OF_MEMORY;
    rope_kv_job j = {q->host, k->host, NULL, NULL, cs, T, q->shape[1], k->shape[1], D, (int)o->layout};
    if (k_out->dtype == PXL_F16) j.kh = k_out->host;
    else j.ko = k_out->host;
    pxl_parallel_range(ctx, T * half, (16384 + q->shape[1] + k->shape[1] - 1) / (q->shape[1] + k->shape[1]),
                       rope_kv_range, &j);
    rope_table_done(ctx);
    if (v_out->dtype == PXL_F32) {
        memcpy(v_out->host, v->host, v->bytes);
    } else {
        const float *src = v->host;
        uint16_t *dst = v_out->host;
        for (int64_t i = 0; i < n; i++) dst[i] = pxl_f32_to_f16(src[i]);
    }
    return PXL_OK;
}

pxl_status pxl_rope_kv(pxl_ctx *ctx, pxl_tensor *q, const pxl_tensor *k, const pxl_tensor *v, pxl_tensor *k_out,
                       pxl_tensor *v_out, int64_t pos_offset, const pxl_rope_options *opts) {
    static const char op[] = "pxl_rope_kv";
    PXL_REQUIRE_CTX(ctx);
    rope_kv_opts o = rope_kv_defaults(opts);
    pxl_status s = rope_kv_check(ctx, op, q, k, v, k_out, v_out, pos_offset, &o);
    if (s != PXL_OK) return s;
    return rope_kv_run(ctx, op, q, k, v, k_out, v_out, pos_offset, &o);
}

/* ---- pxl_rope_kv_attention: one decoding step's RoPE, cache rows and attention ------
 *
 * GPU, one token (rope_kv_attn.wgsl): one dispatch in place of pxl_rope_kv's
 * and attention's one or two, where the token's q, k and v are views of one
 * buffer that no output shares (the fused QKV product's output), the
 * context is at most RKA_MAX_KEYS keys and D at most RKA_MAX_D, and the
 * caches' rows lie on 16-byte words. Anything else: pxl_rope_kv, then
 * pxl_attention. The uniform block holds the chunk-0 angle tables of
 * rope_kv.wgsl (RKA_MAX_D / 2 pairs fit one chunk).
 */
#define RKA_WG 256u
#define RKA_MAX_D 256       /* DMAX in rope_kv_attn.wgsl; D / 2 <= RKA_WG */
#define RKA_MAX_KEYS 1024   /* KMAX in rope_kv_attn.wgsl */

typedef struct {
    float lo[ROPE_LO], hi[ROPE_KV_HI];
    int32_t pos;
    uint32_t Hq, Hkv, D, layout;
    uint32_t oq, ok, ov, ock, ocv, oy, off_ff;
    float fs, scale2;
    uint32_t pad0, pad1;
} rka_params;
_Static_assert(sizeof(rka_params) == 256, "mirrors struct Params in rope_kv_attn.wgsl");

/* the byte ranges of a and b are at least `gap` bytes apart (or in different memory) */
static int apart(const pxl_tensor *a, const pxl_tensor *b, size_t gap) {
    if (a->st != b->st) return 1;
    return a->offset >= b->offset + b->bytes + gap || b->offset >= a->offset + a->bytes + gap;
}

/* 1 when the one-dispatch kernel takes these (checked) arguments */
static int rka_fits(pxl_ctx *ctx, const pxl_tensor *q, const pxl_tensor *k, const pxl_tensor *v,
                    const pxl_tensor *ck, const pxl_tensor *cv, const pxl_tensor *y, int64_t kv_len) {
    const pxl_gpu_info *gi = pxl_gpu_get_info(ctx);
    size_t align = gi->min_storage_offset_alignment < 256 ? 256 : gi->min_storage_offset_alignment;
    int64_t D = q->shape[2];
    if (pxl_ctx_tuning(ctx)->rka_off) return 0;
    if (q->shape[0] != 1 || kv_len > RKA_MAX_KEYS || D > RKA_MAX_D || q->nelem > UINT32_MAX) return 0;
    if (k->st != q->st || v->st != q->st) return 0;
    /* the caches' rows on whole 16-byte words (4 f32 or 8 f16 values) */
    if (ck->offset % 16 || cv->offset % 16 || D % (ck->dtype == PXL_F16 ? 8 : 4)) return 0;
    if ((uint64_t)ck->nelem > UINT32_MAX - 2 || (uint64_t)cv->nelem > UINT32_MAX - 2) return 0;
    /* the written bindings: q's buffer alone, the caches and y apart from each other */
    if (ck->st == q->st || cv->st == q->st || y->st == q->st) return 0;
    return apart(ck, cv, align) && apart(ck, y, align) && apart(cv, y, align);
}

static pxl_status rka_gpu(pxl_ctx *ctx, const char *op, pxl_tensor *q, const pxl_tensor *k, const pxl_tensor *v,
                          pxl_tensor *ck, pxl_tensor *cv, pxl_tensor *y, int64_t pos, const rope_kv_opts *o,
                          float scale) {
    int64_t Hq = q->shape[1], Hkv = k->shape[1], D = q->shape[2];
    /* q, k and v: one read_write binding over the span of the three views (as rope_kv_gpu) */
    pxl_tensor span;
    size_t lo = qkv_span(q, k, v, &span);
    const pxl_tensor *t[5] = {&span, ck, cv, y, o->ff};
    pxl_op_bindings b;
    pxl_status s = pxl_op_bind(ctx, op, t, o->ff ? 5 : 4, 15u, 0u, &b);
    if (s != PXL_OK) return s;
    rka_params p;
    memset(&p, 0, sizeof p);
    for (int i = 0; i < ROPE_LO; i++) p.lo[i] = rope_pow((double)o->base, i, D);
    for (int a = 0; a < ROPE_KV_HI; a++) p.hi[a] = rope_pow((double)o->base, a * ROPE_LO, D);
    p.pos = (int32_t)pos;
    p.Hq = (uint32_t)Hq;
    p.Hkv = (uint32_t)Hkv;
    p.D = (uint32_t)D;
    p.layout = (uint32_t)o->layout;
    p.oq = b.off[0] + (uint32_t)((q->offset - lo) / sizeof(float));
    p.ok = b.off[0] + (uint32_t)((k->offset - lo) / sizeof(float));
    p.ov = b.off[0] + (uint32_t)((v->offset - lo) / sizeof(float));
    uint32_t per_word = ck->dtype == PXL_F16 ? 8u : 4u; /* the caches are bound as 16-byte words */
    p.ock = b.off[1] / per_word;
    p.ocv = b.off[2] / per_word;
    p.oy = b.off[3];
    if (o->ff) {
        b.b[4].binding = 5;
        p.off_ff = b.off[4];
    }
    p.fs = o->fs;
    p.scale2 = scale * 1.4426950408889634f;
    uint32_t wg = pxl_ctx_tuning(ctx)->rka_wg;
    if (!wg) wg = RKA_WG;
    while (wg < (uint32_t)D / 2) wg *= 2; /* an invocation for each pair */
    pxl_constant c[2] = {{"WG", wg}, {"K16", ck->dtype == PXL_F16}};
    pxl_kernel *kern;
    if ((s = pxl_kernel_get_static(ctx, "rope_kv_attn.wgsl", pxl_wgsl_ops_rope_kv_attn,
                                   o->ff ? "rope_kv_attn_ff" : "rope_kv_attn", c, 2, &kern)) != PXL_OK)
        return s;
    uint32_t g[2];
    pxl_recorder *rec;
    if ((s = pxl_op_grid(ctx, op, (uint64_t)Hq, g)) != PXL_OK) return s;
    if ((s = pxl_gpu_stream(ctx, &rec)) != PXL_OK) return s;
    pxl_dispatch d = {kern, b.b, b.n, &p, sizeof p, 4, {g[0], g[1], 1}};
    return pxl_recorder_dispatch(rec, &d);
}

pxl_status pxl_rope_kv_attention(pxl_ctx *ctx, pxl_tensor *q, const pxl_tensor *k, const pxl_tensor *v,
                                 pxl_tensor *cache_k, pxl_tensor *cache_v, int64_t pos_offset,
                                 const pxl_rope_options *opts, pxl_tensor *y, float scale) {
    static const char op[] = "pxl_rope_kv_attention";
    PXL_REQUIRE_CTX(ctx);
    rope_kv_opts o = rope_kv_defaults(opts);
    pxl_status s;
    /* what the cache rows' views need; the rest is pxl_rope_kv's and pxl_attention's checks */
    if ((s = pxl_check_dtype(ctx, op, "q", q, PXL_F32)) != PXL_OK) return s;
    if ((s = pxl_check_dtype(ctx, op, "k", k, PXL_F32)) != PXL_OK) return s;
    if ((s = pxl_check_dtype(ctx, op, "v", v, PXL_F32)) != PXL_OK) return s;
    if ((s = check_cache_dtype(ctx, op, "cache_k", cache_k)) != PXL_OK) return s;
    if ((s = check_cache_dtype(ctx, op, "cache_v", cache_v)) != PXL_OK) return s;
    if (q->ndim != 3 || k->ndim != 3 || cache_k->ndim != 3)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: q, k and cache_k have %d, %d and %d dimensions, expected 3",
                        op, q->ndim, k->ndim, cache_k->ndim);
    if ((s = pxl_check_same_shape(ctx, op, "cache_k", cache_k, "cache_v", cache_v)) != PXL_OK) return s;
    int64_t T = q->shape[0], C = cache_k->shape[0];
    if (k->shape[0] != T || k->shape[1] != cache_k->shape[1] || k->shape[2] != cache_k->shape[2])
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: k is [%lld, %lld, %lld], expected [%lld, %lld, %lld] (q's T, "
                        "cache_k's heads and D)", op, (long long)k->shape[0], (long long)k->shape[1],
                        (long long)k->shape[2], (long long)T, (long long)cache_k->shape[1],
                        (long long)cache_k->shape[2]);
    if (v->nelem != k->nelem)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: v has %lld elements, k %lld", op, (long long)v->nelem,
                        (long long)k->nelem);
    if (pos_offset < 0 || pos_offset > C - T)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: rows %lld..%lld outside the cache's %lld", op,
                        (long long)pos_offset, (long long)(pos_offset + T - 1), (long long)C);
    size_t row = (size_t)k->nelem / (size_t)T * pxl_dtype_row_bytes(cache_k->dtype, 1);
    pxl_tensor *ko = NULL, *vo = NULL;
    s = pxl_tensor_view(ctx, cache_k, 3, k->shape, (size_t)pos_offset * row, &ko);
    if (s == PXL_OK) s = pxl_tensor_view(ctx, cache_v, v->ndim, v->shape, (size_t)pos_offset * row, &vo);
    if (s == PXL_OK) s = rope_kv_check(ctx, op, q, k, v, ko, vo, pos_offset, &o);
    if (s == PXL_OK) s = pxl_attention_check(ctx, op, q, cache_k, cache_v, y, pos_offset + T);
    /* y is read by nothing, but written while k and v are read */
    if (s == PXL_OK) s = pxl_check_overlap(ctx, op, "y", y, "k", k, 0);
    if (s == PXL_OK) s = pxl_check_overlap(ctx, op, "y", y, "v", v, 0);
    if (s == PXL_OK && o.ff) s = pxl_check_overlap(ctx, op, "y", y, "freq_factors", o.ff, 0);
    if (s == PXL_OK) {
        if (pxl_on_gpu(ctx) && rka_fits(ctx, q, k, v, cache_k, cache_v, y, pos_offset + T)) {
            s = rka_gpu(ctx, op, q, k, v, cache_k, cache_v, y, pos_offset, &o, scale);
        } else {
            s = rope_kv_run(ctx, op, q, k, v, ko, vo, pos_offset, &o);
            if (s == PXL_OK) s = pxl_attention_run(ctx, q, cache_k, cache_v, y, pos_offset + T, scale);
        }
    }
    pxl_tensor_free(ko);
    pxl_tensor_free(vo);
    return s;
}
