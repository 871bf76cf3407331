/*
 * Causal grouped-query attention over a KV cache.
 * q: [T, Hq, D]; k, v: [C, Hkv, D] with kv_len valid rows; y: [T, Hq, D].
 * Query t sits at position kv_len - T + t and sees keys 0 .. kv_len - T + t;
 * query head h reads KV head h / (Hq / Hkv).
 *
 * k and v are f32, or both f16 (an f16 KV cache): the CPU decodes each
 * element with pxl_f16_to_f32, the GPU binds them as u32 words and unpacks
 * pairs (unpack2x16float); the rest is the same arithmetic.
 *
 * CPU reference: per (t, h), scores scale * (q . k_j) with products summed
 * in double (four partial sums), max-subtracted softmax and the weighted sum of V rows in double;
 * threads over (t, h).
 *
 * GPU (attention.wgsl): one workgroup per block of ATTN_R query rows of one
 * KV head (a row is a (position, head) pair of the head group, so K and V
 * rows are read once per block: once per KV head in decode when Hq / Hkv <=
 * ATTN_R) and per split of the keys; online softmax inside, K and V for the
 * next chunk loaded into registers while the current one is computed, and a
 * second pass (attn_combine, one workgroup per output row) merging the
 * splits' (max, sum, accumulator) states when there is more than one
 * (flash-decoding). The number of splits aims at ATTN_TARGET_WG workgroups in
 * all, so decode (one block per KV head) still fills the GPU; large prefills
 * have enough blocks and take one pass.
 *
 * Tunables: ATTN_WG invocations per workgroup; ATTN_CPV vec4s of a key row
 * per invocation in the score phase (D / (4 * ATTN_CPV) invocations share a
 * key; a chunk holds ATTN_WG * 4 * ATTN_CPV / D keys); ATTN_TARGET_WG;
 * ATTN_COMBINE_WG. The tuning option attn=wg,cpv,target[,combine_wg] overrides them
 * (for tuning benchmarks only). Measured on an H100 (Vulkan), decode 32/8
 * heads, D = 128, kv_len 4096: 256,8,256,256 gave 21.4 us per call (torch
 * SDPA f32: 364 us); target 128 / 512: 23.7 / 27.7; wg 128: 24.1; wg 512: 32.5;
 * cpv 4: 26.6; cpv 16 (with 16-entry register arrays): 40.9; combine wg 64:
 * 23.7. kv_len 1024: 14 us (about 5 of them the two dispatches); 65536:
 * 196 us, 2.7 TB/s; the extra 49152 keys ran at 3.0 TB/s.
 *
 * Prompts (attn_fa.wgsl, flash attention in f32): where the blocks of rows
 * make at least ATTN_FA_MIN_WG workgroups, D % 4 == 0, D <= 4 *
 * ATTN_FA_MAX_D4 and f16 caches start on even elements, one workgroup per
 * block of BQ rows of one KV head walks the keys in chunks of BK, both
 * products tiled through workgroup memory (4 x 4 scores and 4 rows x D / BK
 * * 4 columns of the output an invocation), one pass. Tiles of 64 x 64 where
 * the device's workgroup memory holds them (48 KiB at D = 64), else 64 x 32;
 * neither fits: attention.wgsl (fa_choose has the measurements). The tuning
 * option attn_fa=bq,bk picks the tiles (32 x 32 among them), attn_fa=0
 * turns the kernel off.
 *
 * The GPU path takes D up to ATTN_MAX_D (workgroup memory holds the block's
 * queries); larger D returns PXL_ERR_UNSUPPORTED there.
 */
#include "ops_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ATTN_R 4u           /* query rows per workgroup: R in attention.wgsl */
#define ATTN_WG 256u
#define ATTN_WG_PREFILL 128u
#define ATTN_CPV 8u
#define ATTN_TARGET_WG 256u
#define ATTN_COMBINE_WG 256u
#define ATTN_MAX_SPLIT 256 /* NSMAX in attention.wgsl */
#define ATTN_REGS 8u       /* CMAX and KMAX in attention.wgsl */
#define ATTN_MAX_D 512
#define ATTN_FA_MAX_D4 32u /* attn_fa.wgsl: D4 <= 4 TX (16 accumulators), TX >= 8 */
#define ATTN_FA_MIN_WG 64u /* attn_fa.wgsl only where it makes this many workgroups */

typedef struct {
    uint32_t T, Hq, Hkv, G;
    uint32_t kv_len, D, nsplit, split_len;
    uint32_t nblocks;
    float scale2;
    uint32_t ml_off;
    uint32_t oq, ok, ov, oy, pad0; /* view offsets */
} attn_params;
_Static_assert(sizeof(attn_params) == 64, "mirrors struct Params in attention.wgsl");

typedef struct {
    uint32_t rows, D, nsplit, ml_off;
    uint32_t oy, pad0, pad1, pad2;
} attn_cparams;
_Static_assert(sizeof(attn_cparams) == 32, "mirrors struct CParams in attention.wgsl");

/* ---- CPU reference ------------------------------------------------------------------- */

typedef struct {
    const float *q;
    const void *k, *v; /* f32, or f16 with half set */
    int half;
    float *y;
    int64_t T, Hq, Hkv, D, kv_len, per_task;
    double scale;
    double *scratch; /* kv_len + D doubles per task */
    int simd;        /* f32 K and V through attn_row_avx (pxl_cpu_simd) */
} attn_job;

/* q . k over D elements in double (every product is exact there): four
 * partial sums, so that the additions overlap, added pairwise at the end */
static double dot_f32(const float *q, const float *k, int64_t D) {
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int64_t d = 0;
    for (; d + 4 <= D; d += 4) {
        s0 += (double)q[d] * (double)k[d];
        s1 += (double)q[d + 1] * (double)k[d + 1];
        s2 += (double)q[d + 2] * (double)k[d + 2];
        s3 += (double)q[d + 3] * (double)k[d + 3];
    }
    for (; d < D; d++) s0 += (double)q[d] * (double)k[d];
    return (s0 + s1) + (s2 + s3);
}

/* dot_f32 with k in f16 */
static double dot_f16(const float *q, const uint16_t *k, int64_t D) {
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int64_t d = 0;
    for (; d + 4 <= D; d += 4) {
        s0 += (double)q[d] * (double)pxl_f16_to_f32(k[d]);
        s1 += (double)q[d + 1] * (double)pxl_f16_to_f32(k[d + 1]);
        s2 += (double)q[d + 2] * (double)pxl_f16_to_f32(k[d + 2]);
        s3 += (double)q[d + 3] * (double)pxl_f16_to_f32(k[d + 3]);
    }
    for (; d < D; d++) s0 += (double)q[d] * (double)pxl_f16_to_f32(k[d]);
    return (s0 + s1) + (s2 + s3);
}

/* ---- x86-64: the f32 path on AVX (no FMA) ----------------------------------------
 * The same doubles in the same order as dot_f32 and attn_row: the four
 * partial sums are the four lanes, each product rounded before it is added
 * (no fused multiply-add: the target has none), so the results are the
 * plain C code's bit for bit, about twice as fast as its SSE2 build. */
#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define ATTN_AVX __attribute__((target("avx2")))
#define ATTN_HAVE_AVX 1

ATTN_AVX static double dot_f32_avx(const float *q, const float *k, int64_t D) {
    __m256d s = _mm256_setzero_pd();
    int64_t d = 0;
    for (; d + 4 <= D; d += 4)
        s = _mm256_add_pd(s, _mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(q + d)), _mm256_cvtps_pd(_mm_loadu_ps(k + d))));
    double l[4];
    _mm256_storeu_pd(l, s);
    for (; d < D; d++) l[0] += (double)q[d] * (double)k[d];
    return (l[0] + l[1]) + (l[2] + l[3]);
}

/* acc[d] += w * v[d] over D elements */
ATTN_AVX static void axpy_f32_avx(double *acc, double w, const float *v, int64_t D) {
    __m256d wv = _mm256_set1_pd(w);
    int64_t d = 0;
    for (; d + 4 <= D; d += 4)
        _mm256_storeu_pd(acc + d, _mm256_add_pd(_mm256_loadu_pd(acc + d),
                                                _mm256_mul_pd(wv, _mm256_cvtps_pd(_mm_loadu_ps(v + d)))));
    for (; d < D; d++) acc[d] += w * (double)v[d];
}

/* s[i] = scale * dot_f32_avx(q, key i) for the keys i < lim of one KV
 * head (rows kstride floats apart from k): four keys at a time, so that
 * their four chains of additions overlap; each key's sums are
 * dot_f32_avx's, in its order. */
ATTN_AVX static void scores_f32_avx(const float *q, const float *k, int64_t kstride, int64_t lim, int64_t D,
                                    double scale, double *s) {
    int64_t i = 0;
    for (; i + 4 <= lim; i += 4) {
        const float *kr[4] = {k + i * kstride, k + (i + 1) * kstride, k + (i + 2) * kstride, k + (i + 3) * kstride};
        __m256d a[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd()};
        int64_t d = 0;
        for (; d + 4 <= D; d += 4) {
            __m256d qv = _mm256_cvtps_pd(_mm_loadu_ps(q + d));
            for (int r = 0; r < 4; r++) a[r] = _mm256_add_pd(a[r], _mm256_mul_pd(qv, _mm256_cvtps_pd(_mm_loadu_ps(kr[r] + d))));
        }
        for (int r = 0; r < 4; r++) {
            double l[4];
            _mm256_storeu_pd(l, a[r]);
            for (int64_t e = d; e < D; e++) l[0] += (double)q[e] * (double)kr[r][e];
            s[i + r] = scale * ((l[0] + l[1]) + (l[2] + l[3]));
        }
    }
    for (; i < lim; i++) s[i] = scale * dot_f32_avx(q, k + i * kstride, D);
}

/* acc[d] = sum over keys i < lim of w[i] * v_i[d], added key by key as
 * axpy_f32_avx adds them (from 0), value rows vstride floats apart: 32 of
 * the D sums at a time held in registers across all the keys, instead of
 * one load and store of every sum a key. */
ATTN_AVX static void values_f32_avx(const double *w, const float *v, int64_t vstride, int64_t lim, int64_t D,
                                    double *acc) {
    int64_t d0 = 0;
    for (; d0 + 32 <= D; d0 += 32) {
        __m256d a[8];
        for (int c = 0; c < 8; c++) a[c] = _mm256_setzero_pd();
        for (int64_t i = 0; i < lim; i++) {
            __m256d wv = _mm256_set1_pd(w[i]);
            const float *vr = v + i * vstride + d0;
            for (int c = 0; c < 8; c++) a[c] = _mm256_add_pd(a[c], _mm256_mul_pd(wv, _mm256_cvtps_pd(_mm_loadu_ps(vr + 4 * c))));
        }
        for (int c = 0; c < 8; c++) _mm256_storeu_pd(acc + d0 + 4 * c, a[c]);
    }
    for (int64_t d = d0; d < D; d++) acc[d] = 0;
    if (d0 < D)
        for (int64_t i = 0; i < lim; i++) axpy_f32_avx(acc + d0, w[i], v + i * vstride + d0, D - d0);
}
#endif

static void attn_row(const attn_job *j, int64_t t, int64_t h, double *s, double *acc) {
    int64_t D = j->D, hk = h / (j->Hq / j->Hkv), lim = j->kv_len - j->T + t + 1;
    const float *q = j->q + (t * j->Hq + h) * D;
#ifdef ATTN_HAVE_AVX
    if (j->simd && !j->half) { /* the same sums in the same order, several keys or columns at a time */
        const float *k = (const float *)j->k + hk * D, *v = (const float *)j->v + hk * D;
        scores_f32_avx(q, k, j->Hkv * D, lim, D, j->scale, s);
        double m = -HUGE_VAL, l = 0;
        for (int64_t i = 0; i < lim; i++)
            if (s[i] > m) m = s[i];
        for (int64_t i = 0; i < lim; i++) {
            s[i] = exp(s[i] - m); /* the weights, in place of the scores */
            l += s[i];
        }
        values_f32_avx(s, v, j->Hkv * D, lim, D, acc);
        float *y = j->y + (t * j->Hq + h) * D;
        for (int64_t d = 0; d < D; d++) y[d] = (float)(acc[d] / l);
        return;
    }
#endif
    double m = -HUGE_VAL;
    for (int64_t i = 0; i < lim; i++) {
        int64_t r = (i * j->Hkv + hk) * D;
        double dot;
        if (j->half) dot = dot_f16(q, (const uint16_t *)j->k + r, D);
#ifdef ATTN_HAVE_AVX
        else if (j->simd) dot = dot_f32_avx(q, (const float *)j->k + r, D);
#endif
        else dot = dot_f32(q, (const float *)j->k + r, D);
        s[i] = j->scale * dot;
        if (s[i] > m) m = s[i]; /* NaN never wins, but poisons l below */
    }
    double l = 0;
    for (int64_t d = 0; d < D; d++) acc[d] = 0;
    for (int64_t i = 0; i < lim; i++) {
        int64_t r = (i * j->Hkv + hk) * D;
        double w = exp(s[i] - m);
        l += w;
        if (j->half) {
            const uint16_t *v = (const uint16_t *)j->v + r;
            for (int64_t d = 0; d < D; d++) acc[d] += w * (double)pxl_f16_to_f32(v[d]);
        } else {
            const float *v = (const float *)j->v + r;
#ifdef ATTN_HAVE_AVX
            if (j->simd) {
                axpy_f32_avx(acc, w, v, D);
                continue;
            }
#endif
            for (int64_t d = 0; d < D; d++) acc[d] += w * (double)v[d];
        }
    }
    float *y = j->y + (t * j->Hq + h) * D;
    for (int64_t d = 0; d < D; d++) y[d] = (float)(acc[d] / l);
}

static void attn_range(void *arg, int64_t lo, int64_t hi) {
    const attn_job *j = arg;
    int64_t rows = j->T * j->Hq;
    for (int64_t task = lo; task < hi; task++) {
        double *s = j->scratch + task * (j->kv_len + j->D);
        for (int64_t r = task * j->per_task; r < rows && r < (task + 1) * j->per_task; r++)
            attn_row(j, r / j->Hq, r % j->Hq, s, s + j->kv_len);
    }
}

static pxl_status attn_cpu(pxl_ctx *ctx, const pxl_tensor *q, const pxl_tensor *k, const pxl_tensor *v,
                           pxl_tensor *y, int64_t kv_len, float scale) {
    int64_t T = q->shape[0], Hq = q->shape[1], D = q->shape[2];
    int64_t rows = T * Hq, tasks = (int64_t)pxl_ctx_threads(ctx) * 4;
    if (tasks > rows) tasks = rows;
    if (tasks < 1) tasks = 1;
    double *scratch = pxl_calloc(ctx, (size_t)tasks, (size_t)(kv_len + D) * sizeof(double));
    if (!scratch) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_attention: out of memory");
    attn_job j = {q->host, k->host, v->host, k->dtype == PXL_F16, y->host, T, Hq, k->shape[1], D, kv_len,
                  (rows + tasks - 1) / tasks, (double)scale, scratch, pxl_cpu_simd(ctx)};
    pxl_parallel_range(ctx, tasks, 1, attn_range, &j);
    pxl_free(ctx, scratch);
    return PXL_OK;
}

/* ---- GPU ------------------------------------------------------------------------------ */

/* Launch shape; the context's tuning option attn=wg,cpv,target[,cwg]
 * overrides it (range-checked when the context was created: cpv <= ATTN_REGS;
 * a call that shape cannot take, attn_fit, keeps the default; t NULL: the
 * default).
 * The workgroup: ATTN_WG for one query position (decode) where a key row is
 * at least 16 vec4s, else smaller: with T > 1 (prefill, which has blocks
 * enough for the GPU) 128, and in decode at most 64 key slices (WG / D4),
 * whose states the workgroup merges one by one at the end. Measured on an
 * H100 (2026-11-27, --tune attn=W,8,256 against the default 256): TinyLlama's
 * pp512 attention 3.6 ms (W = 128) and 3.5 ms (64) against 4.5 ms a pass;
 * tiny5's (D = 8) decode attention 68 us a token (128) against 86, its
 * prefill 164 us against 410; TinyLlama's decode (D = 64) slower with less
 * than 256 (its keys then split, with a second pass to merge them). */
static void attn_tune(const pxl_tuning *t, int64_t T, uint32_t d4, uint32_t *wg, uint32_t *cpv, uint32_t *target,
                      uint32_t *cwg) {
    *wg = ATTN_WG;
    if (T > 1) *wg = ATTN_WG_PREFILL;
    while (T == 1 && *wg > 64 && *wg / 2 >= d4 * 64u) *wg /= 2;
    *cpv = ATTN_CPV;
    *target = ATTN_TARGET_WG;
    *cwg = ATTN_COMBINE_WG;
    if (t && t->attn_n >= 3) {
        *wg = t->attn[0];
        *cpv = t->attn[1];
        *target = t->attn[2];
        if (t->attn_n == 4) *cwg = t->attn[3];
    }
}

/* The value phase's split of a workgroup of wg invocations (halved to the
 * device's limits) for key rows of d4 vec4s: lc keys a pass, cpv lowered
 * until each invocation's keys of a pass fit its registers. 0 where the
 * device cannot run the shape (d4 over the workgroup, too many keys an
 * invocation, or more workgroup memory than it has). */
typedef struct {
    uint32_t wg, cpv, lc;
    uint64_t shared; /* workgroup memory, bytes */
} attn_shape;

static int attn_fit(const pxl_gpu_info *gi, uint32_t d4, uint32_t wg, uint32_t cpv, attn_shape *a) {
    while (wg > gi->max_invocations_per_workgroup || wg > gi->max_workgroup_size[0]) wg /= 2;
    uint32_t slices, kps;
    for (;;) { /* keys per invocation in the value phase must fit its registers */
        uint32_t parts = (d4 + cpv - 1) / cpv;
        a->lc = wg / parts;
        slices = wg / d4;
        kps = slices ? (a->lc + slices - 1) / slices : 0;
        if (kps <= ATTN_REGS || cpv == 1) break;
        cpv /= 2;
    }
    a->wg = wg;
    a->cpv = cpv;
    a->shared = ((uint64_t)ATTN_R * d4 + wg) * 16 + (uint64_t)ATTN_R * slices * 8;
    return d4 <= wg && a->lc > 0 && kps <= ATTN_REGS && a->shared <= gi->max_workgroup_storage_size;
}

/* Records one dispatch of attention.wgsl into rec (bindings 0.., the uniform
 * block after them, groups laid out as pxl_op_dispatch does). Both passes of
 * a split call go to the one recorder that owns their scratch buffer:
 * through pxl_op_dispatch the stream could be submitted between them (it is
 * when it reaches its dispatch cap), returning the scratch too early. */
static pxl_status attn_dispatch(pxl_ctx *ctx, pxl_recorder *rec, const char *entry, const pxl_constant *c,
                                size_t nc, const pxl_op_bindings *b, const void *params, size_t params_size,
                                uint64_t groups) {
    uint32_t g[2];
    pxl_status s = pxl_op_grid(ctx, "pxl_attention", groups, g);
    if (s != PXL_OK) return s;
    pxl_kernel *k;
    s = pxl_kernel_get_static(ctx, "attention.wgsl", pxl_wgsl_ops_attention, entry, c, nc, &k);
    if (s != PXL_OK) return s;
    pxl_dispatch d = {k, b->b, b->n, params, params_size, (uint32_t)b->n, {g[0], g[1], 1}};
    return pxl_recorder_dispatch(rec, &d);
}

/* attn_fa.wgsl's tiles: TY x TX invocations, BQ = 4 TY rows and BK = 4 TX
 * keys; xs and ys the vec4s of its two shared regions */
typedef struct {
    uint32_t ty, tx, xs, ys;
    uint64_t shared; /* workgroup memory, bytes */
} fa_shape;

static int fa_fit(const pxl_gpu_info *gi, uint32_t d4, uint32_t bq, uint32_t bk, fa_shape *f) {
    f->ty = bq / 4;
    f->tx = bk / 4;
    uint32_t d = 4 * d4;
    f->xs = d * f->tx > bk * f->ty ? d * f->tx : bk * f->ty;
    f->ys = bk * d4 > f->tx * f->ty ? bk * d4 : f->tx * f->ty;
    f->shared = 16 * ((uint64_t)d * f->ty + f->xs + f->ys);
    uint32_t wg = f->ty * f->tx;
    return d4 <= 4 * f->tx && wg <= gi->max_invocations_per_workgroup && wg <= gi->max_workgroup_size[0] &&
           f->shared <= gi->max_workgroup_storage_size;
}

/* Whether attn_fa.wgsl takes the call, and in which tiles (f): D % 4 == 0
 * with D4 <= ATTN_FA_MAX_D4, f16 K and V on even elements (off_k, off_v:
 * their element offsets), and tiles of 64 x 64 or else 64 x 32 that the
 * device holds making at least ATTN_FA_MIN_WG blocks of rows in all (Hkv
 * of them a block row), since it does not split the keys: attention.wgsl
 * does, for short prompts over long caches. Tiles tuned with attn_fa=bq,bk
 * take every call they fit, whatever its grid (so the op cases reach the
 * kernel with small shapes).
 * Measured on an H200 (2026-11-28, pxl bench ops --only attention_prefill,
 * against --tune attn_fa=0): Llama-3.2-1B's heads (32 / 8, D = 64), T = 512
 * from an empty cache, 96.9 us against 167.2 (64 x 64 tiles, 256
 * workgroups); T = 2048, 852.9 us against 1,991.6; D = 128 at T = 2048 in
 * 32 x 32 tiles (48 KiB of workgroup memory, 64 invocations) 4,385 us
 * against 4,011 (an earlier version of the kernel), so those tiles are for
 * tuning only; splitting the keys of T = 512 into 1,024 workgroups, merged
 * by attn_combine, 196 us (the same). */
static int fa_choose(const pxl_gpu_info *gi, const pxl_tuning *t, int64_t T, int64_t G, int64_t Hkv, int64_t D,
                     int half, uint32_t off_k, uint32_t off_v, fa_shape *f) {
    if ((t && t->attn_fa_n == 1) || D % 4 || D / 4 > ATTN_FA_MAX_D4) return 0;
    if (half && ((off_k | off_v) & 1)) return 0;
    uint32_t d4 = (uint32_t)(D / 4);
    if (t && t->attn_fa_n == 2 && fa_fit(gi, d4, t->attn_fa[0], t->attn_fa[1], f)) return 1; /* any grid */
    if (!fa_fit(gi, d4, 64, 64, f) && !fa_fit(gi, d4, 64, 32, f)) return 0;
    uint64_t bq = 4 * (uint64_t)f->ty;
    return ((uint64_t)T * (uint64_t)G + bq - 1) / bq * (uint64_t)Hkv >= ATTN_FA_MIN_WG;
}

typedef struct {
    uint32_t T, Hq, Hkv, G;
    uint32_t kv_len, D, nblocks;
    float scale2;
    uint32_t oq, ok, ov, oy;
} fa_params;
_Static_assert(sizeof(fa_params) == 48, "mirrors struct Params in attn_fa.wgsl");

/* Records attn_fa.wgsl for the call (bd: attn_gpu's bindings) in tiles f. */
static pxl_status fa_dispatch(pxl_ctx *ctx, const fa_shape *f, const pxl_op_bindings *bd, int64_t T, int64_t Hq,
                              int64_t Hkv, int64_t D, int64_t kv_len, float scale, int half) {
    int64_t G = Hq / Hkv;
    uint64_t nblocks = ((uint64_t)T * (uint64_t)G + 4 * f->ty - 1) / (4 * f->ty);
    fa_params p = {(uint32_t)T, (uint32_t)Hq,      (uint32_t)Hkv, (uint32_t)G, (uint32_t)kv_len, (uint32_t)D,
                   (uint32_t)nblocks, scale * 1.4426950408889634f, bd->off[0], half ? bd->off[3] : bd->off[1],
                   half ? bd->off[4] : bd->off[2], bd->off[5]};
    uint32_t wg = f->ty * f->tx, d4 = (uint32_t)(D / 4), ki = (f->tx * d4 + wg - 1) / wg;
    uint32_t vi = (4 * f->tx * d4 + wg - 1) / wg;
    pxl_constant c[10] = {{"WG", wg},       {"TY", f->ty}, {"TX", f->tx}, {"D4", d4}, {"XS", f->xs},
                          {"YS", f->ys},    {"HALF", half}, {"KI", ki},   {"VI", vi}, {"PRE", ki <= 2 && vi <= 8}};
    uint32_t g[2];
    pxl_status s = pxl_op_grid(ctx, "pxl_attention", nblocks * (uint64_t)Hkv, g);
    pxl_kernel *k;
    if (s == PXL_OK) s = pxl_kernel_get_static(ctx, "attn_fa.wgsl", pxl_wgsl_ops_attn_fa, "attn_fa", c, 10, &k);
    pxl_recorder *rec; /* after pxl_op_bind, which may submit a full stream */
    if (s == PXL_OK) s = pxl_gpu_stream(ctx, &rec);
    if (s != PXL_OK) return s;
    pxl_dispatch d = {k, bd->b, bd->n, &p, sizeof p, (uint32_t)bd->n, {g[0], g[1], 1}};
    return pxl_recorder_dispatch(rec, &d);
}

static pxl_status attn_gpu(pxl_ctx *ctx, const pxl_tensor *q, const pxl_tensor *k, const pxl_tensor *v,
                           pxl_tensor *y, int64_t kv_len, float scale) {
    static const char *op = "pxl_attention";
    const pxl_gpu_info *gi = pxl_gpu_get_info(ctx);
    int64_t T = q->shape[0], Hq = q->shape[1], D = q->shape[2], Hkv = k->shape[1], G = Hq / Hkv;
    uint32_t wg, cpv, target, cwg, d4 = (uint32_t)((D + 3) / 4);
    if (D > ATTN_MAX_D)
        return pxl_fail(ctx, PXL_ERR_UNSUPPORTED, "%s: D = %lld is more than the GPU path takes (%d)", op,
                        (long long)D, ATTN_MAX_D);
    const pxl_tuning *tune = pxl_ctx_tuning(ctx);
    attn_tune(tune, T, d4, &wg, &cpv, &target, &cwg);
    attn_shape sh;
    int fits = attn_fit(gi, d4, wg, cpv, &sh);
    if (!fits && tune->attn_n >= 3) { /* a tuning shape (attn=...) that cannot take this call: the default */
        attn_tune(NULL, T, d4, &wg, &cpv, &target, &cwg);
        fits = attn_fit(gi, d4, wg, cpv, &sh);
    }
    if (!fits)
        return pxl_fail(ctx, PXL_ERR_UNSUPPORTED,
                        "%s: D = %lld does not fit this device's workgroups (%u invocations, %llu bytes of "
                        "workgroup memory needed, %u available)",
                        op, (long long)D, sh.wg, (unsigned long long)sh.shared, gi->max_workgroup_storage_size);
    wg = sh.wg;
    cpv = sh.cpv;
    uint32_t lc = sh.lc; /* keys a pass of the workgroup */
    if (q->nelem > UINT32_MAX || k->nelem > UINT32_MAX)
        return pxl_fail(ctx, PXL_ERR_UNSUPPORTED, "%s: more than 2^32 elements", op);

    /* splits of the keys: enough workgroups in all, whole chunks per split */
    uint64_t nblocks = ((uint64_t)T * (uint64_t)G + ATTN_R - 1) / ATTN_R;
    uint64_t base_wgs = nblocks * (uint64_t)Hkv;
    uint64_t nchunks = ((uint64_t)kv_len + lc - 1) / lc;
    uint64_t nsplit = (target + base_wgs - 1) / base_wgs;
    if (nsplit > nchunks) nsplit = nchunks;
    if (nsplit > ATTN_MAX_SPLIT) nsplit = ATTN_MAX_SPLIT;
    if (nsplit < 1) nsplit = 1;
    uint64_t split_len = (nchunks + nsplit - 1) / nsplit * lc;
    nsplit = ((uint64_t)kv_len + split_len - 1) / split_len;
    uint64_t rows = (uint64_t)T * (uint64_t)Hq;
    uint64_t part_elems = rows * nsplit * (uint64_t)(D + 2);
    if (nsplit > 1 && (part_elems > UINT32_MAX || rows > UINT32_MAX)) {
        nsplit = 1;
        split_len = nchunks * lc;
    }
    uint64_t ml_off = rows * nsplit * (uint64_t)D;

    /* k and v are bound twice: as vec4s (1, 2; read when D % 4 == 0, so a
     * view there must start on a vec4) and as words (3, 4: f32 elements, or
     * pairs of f16 elements) */
    int half = k->dtype == PXL_F16;
    int aligned = D % 4 == 0 && !half;
    const pxl_tensor *t[6] = {q, k, v, k, v, y};
    pxl_op_bindings bd;
    pxl_status s = pxl_op_bind(ctx, op, t, 6, 32u, aligned ? 6u : 0u, &bd);
    if (s != PXL_OK) return s;
    fa_shape fs;
    if (fa_choose(gi, tune, T, G, Hkv, D, half, bd.off[3], bd.off[4], &fs))
        return fa_dispatch(ctx, &fs, &bd, T, Hq, Hkv, D, kv_len, scale, half);
    attn_params p = {(uint32_t)T, (uint32_t)Hq, (uint32_t)Hkv, (uint32_t)G, (uint32_t)kv_len, (uint32_t)D,
                     (uint32_t)nsplit, (uint32_t)split_len, (uint32_t)nblocks,
                     scale * 1.4426950408889634f, (uint32_t)ml_off,
                     bd.off[0], aligned ? bd.off[1] : bd.off[3], aligned ? bd.off[2] : bd.off[4], bd.off[5], 0};
    pxl_constant c[6] = {{"WG", wg},           {"D4", d4},           {"CPV", cpv},
                         {"ALIGNED", aligned}, {"SPLIT", nsplit > 1}, {"HALF", half}};
    pxl_recorder *rec; /* after pxl_op_bind, which may submit a full stream */
    if ((s = pxl_gpu_stream(ctx, &rec)) != PXL_OK) return s;
    if (nsplit == 1) return attn_dispatch(ctx, rec, "attn", c, 6, &bd, &p, sizeof p, base_wgs);
    pxl_buffer *buf;
    size_t part_bytes = (size_t)part_elems * sizeof(float);
    if ((s = pxl_recorder_scratch(rec, part_bytes, &buf)) != PXL_OK) return s;
    pxl_op_bindings cb = bd; /* y's place: the partial results */
    cb.b[5] = (pxl_binding){5, buf, 0, (part_bytes + 15) / 16 * 16};
    s = attn_dispatch(ctx, rec, "attn", c, 6, &cb, &p, sizeof p, base_wgs * nsplit);
    if (s != PXL_OK) return s;
    attn_cparams cp = {(uint32_t)rows, (uint32_t)D, (uint32_t)nsplit, (uint32_t)ml_off, bd.off[5], 0, 0, 0};
    while (cwg < d4) cwg *= 2; /* one vec4 column per invocation at least */
    if (cwg > wg) cwg = wg;
    pxl_constant cc[2] = {{"WG", cwg}, {"D4", d4}};
    pxl_op_bindings b2;
    b2.n = 2;
    b2.b[0] = (pxl_binding){0, buf, 0, (part_bytes + 15) / 16 * 16};
    b2.b[1] = bd.b[5];
    b2.b[1].binding = 1;
    return attn_dispatch(ctx, rec, "attn_combine", cc, 2, &b2, &cp, sizeof cp, rows);
}

pxl_status pxl_attention_check(pxl_ctx *ctx, const char *op, const pxl_tensor *q, const pxl_tensor *k,
                               const pxl_tensor *v, const pxl_tensor *y, int64_t kv_len) {
    pxl_status s;
    if ((s = pxl_check_dtype(ctx, op, "q", q, PXL_F32)) != PXL_OK) return s;
    if ((s = pxl_check_tensor(ctx, op, "k", k)) != PXL_OK) return s;
    if (k->dtype != PXL_F32 && k->dtype != PXL_F16)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: k is %s, expected f32 or f16", op, pxl_dtype_name(k->dtype));
    if ((s = pxl_check_dtype(ctx, op, "v", v, k->dtype)) != PXL_OK) return s;
    if ((s = pxl_check_dtype(ctx, op, "y", y, PXL_F32)) != PXL_OK) return s;
    const pxl_tensor *ts[4] = {q, k, v, y};
    const char *names[4] = {"q", "k", "v", "y"};
    for (int i = 0; i < 4; i++)
        if (ts[i]->ndim != 3)
            return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: %s has %d dimensions, expected 3", op, names[i],
                            ts[i]->ndim);
    if ((s = pxl_check_same_shape(ctx, op, "k", k, "v", v)) != PXL_OK) return s;
    if ((s = pxl_check_same_shape(ctx, op, "q", q, "y", y)) != PXL_OK) return s;
    int64_t T = q->shape[0], Hq = q->shape[1], D = q->shape[2], C = k->shape[0], Hkv = k->shape[1];
    if (k->shape[2] != D)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: k has D = %lld, q has D = %lld", op,
                        (long long)k->shape[2], (long long)D);
    if (Hq % Hkv)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: k has %lld heads, which does not divide q's %lld", op,
                        (long long)Hkv, (long long)Hq);
    if (kv_len < T || kv_len > C)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: kv_len %lld outside [T, C] = [%lld, %lld] (q, k)", op,
                        (long long)kv_len, (long long)T, (long long)C);
    if ((s = pxl_check_output(ctx, op, "y", y)) != PXL_OK) return s;
    if ((s = pxl_check_overlap(ctx, op, "y", y, "q", q, 0)) != PXL_OK) return s;
    if ((s = pxl_check_overlap(ctx, op, "y", y, "k", k, 0)) != PXL_OK) return s;
    return pxl_check_overlap(ctx, op, "y", y, "v", v, 0);
}

pxl_status pxl_attention_run(pxl_ctx *ctx, const pxl_tensor *q, const pxl_tensor *k, const pxl_tensor *v,
                             pxl_tensor *y, int64_t kv_len, float scale) {
    return pxl_on_gpu(ctx) ? attn_gpu(ctx, q, k, v, y, kv_len, scale) : attn_cpu(ctx, q, k, v, y, kv_len, scale);
}

pxl_status pxl_attention(pxl_ctx *ctx, const pxl_tensor *q, const pxl_tensor *k, const pxl_tensor *v,
                         pxl_tensor *y, int64_t kv_len, float scale) {
    PXL_REQUIRE_CTX(ctx);
    pxl_status s = pxl_attention_check(ctx, "pxl_attention", q, k, v, y, kv_len);
    if (s != PXL_OK) return s;
    return pxl_attention_run(ctx, q, k, v, y, kv_len, scale);
}
