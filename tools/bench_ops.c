/*
 * pxl bench ops: the kernel library's speed on this context's GPU (part of the
 * bench subcommand, see cmd_bench.c). Each case reports the GPU time per call
 * (timestamp queries around k back-to-back calls recorded into one submit,
 * median of --reps, after a warm-up that lets the GPU's clocks rise) and a
 * rate: TFLOP/s for matrix products, GB/s for memory-bound ops counting every
 * byte read and written once, weight GB/s for quantized matvec, microseconds
 * for attention, for RoPE with the KV-cache write (rope_kv against
 * rope_kv_split, the four ops it replaces), for a decoded token's RoPE, cache
 * rows and attention in one call (rope_kv_attention against its split into
 * pxl_rope_kv and pxl_attention), for a decoded token's Q and K products
 * with V weights of another type in one pxl_matmul_multi call (Q4_K and
 * Q6_K; Q5_0 and Q8_0 with bias rows; against the two pxl_matmul calls)
 * and for the dispatch chain.
 * bench/ops_compare.py runs the same cases in PyTorch on the same GPU and
 * prints the ratios.
 *
 * On a CPU context (pxl bench ops --backend cpu) only the matrix-vector and
 * small-M cases with B stored [N, K] run (the quantized and f16 weights of a
 * model), timed by the wall clock around k calls, on the context's threads.
 */
#include "cli.h"
#include "pxl/gpu.h"
#include "wgsl_tools.h"
#include "pxl/ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct bench_case bench_case;

/* The quantized cases use copies of their weights in turn, as many as make
 * BENCH_COLD_BYTES (4, at most BENCH_MAX_COPIES), so that no call finds its
 * weights in the GPU's cache, as a model's layers do not: an H100's L2 holds
 * 50 MB, and TinyLlama's 2.4 MB output product takes 57 copies. */
#define BENCH_COLD_BYTES (128.0 * 1024 * 1024)
#define BENCH_MAX_COPIES 64
typedef pxl_status (*bench_fn)(pxl_ctx *ctx, bench_case *c);

struct bench_case {
    const char *name;
    const char *unit;   /* "TFLOP/s", "GB/s", "us" */
    double work;        /* flops or bytes per call (0 for "us") */
    bench_fn setup, run;
    pxl_tensor *t[8];
    int64_t n[4];
    double us, rate;
    int ok;
    char note[160];
    int turn; /* which weight copy the next call uses (quantized cases) */
    double host_us; /* host time to record one call (the op's CPU-side cost), median */
    pxl_buffer *buf[2]; /* record_* cases */
    pxl_kernel *kernel;
    pxl_tensor *w[2 * BENCH_MAX_COPIES]; /* the weight copies (quantized cases; swiglu: gate, up views) */
    int nw;                              /* copies in w */
};

static float frand(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)(*s >> 8) / 16777216.0f - 0.5f;
}

static pxl_status make(pxl_ctx *ctx, pxl_dtype dt, int nd, const int64_t *shape, int fill, pxl_tensor **out) {
    pxl_status s = pxl_tensor_create(ctx, dt, nd, shape, out);
    if (s != PXL_OK || !fill) return s;
    size_t bytes = pxl_tensor_bytes(*out);
    void *h = malloc(bytes);
    if (!h) return PXL_ERR_OUT_OF_MEMORY;
    uint32_t seed = (uint32_t)bytes;
    int64_t n = pxl_tensor_nelem(*out);
    if (dt == PXL_F32) for (int64_t i = 0; i < n; i++) ((float *)h)[i] = frand(&seed);
    else if (dt == PXL_F16) for (int64_t i = 0; i < n; i++) ((uint16_t *)h)[i] = pxl_f32_to_f16(frand(&seed));
    else if (dt == PXL_I32) for (int64_t i = 0; i < n; i++) ((int32_t *)h)[i] = (int32_t)(i % 7);
    else {
        float *f = malloc((size_t)n * sizeof *f);
        if (!f) { free(h); return PXL_ERR_OUT_OF_MEMORY; }
        for (int64_t i = 0; i < n; i++) f[i] = frand(&seed);
        s = pxl_quantize(ctx, dt, f, n, h, bytes);
        free(f);
    }
    if (s == PXL_OK) s = pxl_tensor_write(ctx, *out, h, bytes);
    free(h);
    return s;
}

/* matmul: n = {M, N, K, b_dtype} */
static pxl_status mm_setup(pxl_ctx *ctx, bench_case *c) {
    int64_t sa[2] = {c->n[0], c->n[2]}, sb[2] = {c->n[2], c->n[1]}, sc[2] = {c->n[0], c->n[1]};
    pxl_status s = make(ctx, PXL_F32, 2, sa, 1, &c->t[0]);
    if (s == PXL_OK) s = make(ctx, (pxl_dtype)c->n[3], 2, sb, 1, &c->t[1]);
    if (s == PXL_OK) s = make(ctx, PXL_F32, 2, sc, 0, &c->t[2]);
    return s;
}
static pxl_status mm_run(pxl_ctx *ctx, bench_case *c) { return pxl_matmul(ctx, c->t[0], c->t[1], c->t[2], NULL); }

/* how many copies of a weight of `bytes` the quantized cases use */
static int cold_copies(size_t bytes) {
    double n = BENCH_COLD_BYTES / (double)(bytes ? bytes : 1);
    return n < 4 ? 4 : n > BENCH_MAX_COPIES ? BENCH_MAX_COPIES : (int)n + 1;
}

/* quantized matvec: weight [N, K] (trans_b), x [M, K] (n[0] = M, 1 for a
 * matvec), the weight copies in w (cold_copies) */
static pxl_status qmv_setup(pxl_ctx *ctx, bench_case *c) {
    int64_t sa[2] = {c->n[0], c->n[2]}, sb[2] = {c->n[1], c->n[2]}, sc[2] = {c->n[0], c->n[1]};
    pxl_status s = make(ctx, PXL_F32, 2, sa, 1, &c->t[0]);
    if (s == PXL_OK) s = make(ctx, PXL_F32, 2, sc, 0, &c->t[2]);
    int n = cold_copies(pxl_dtype_row_bytes((pxl_dtype)c->n[3], c->n[2]) * (size_t)c->n[1]);
    for (; c->nw < n && s == PXL_OK; c->nw++) s = make(ctx, (pxl_dtype)c->n[3], 2, sb, 1, &c->w[c->nw]);
    return s;
}
static pxl_status qmv_go(pxl_ctx *ctx, bench_case *c, int a_q8) {
    pxl_matmul_options o = {0};
    o.trans_b = 1;
    o.a_q8 = a_q8;
    return pxl_matmul(ctx, c->t[0], c->w[c->turn++ % c->nw], c->t[2], &o);
}
static pxl_status qmv_run(pxl_ctx *ctx, bench_case *c) { return qmv_go(ctx, c, 0); }
/* with A rounded to 8 bits (a_q8: kmv4q for Q4_K and Q5_K, kmv6q for Q6_K, qmv_xs with Q8A for Q8_0, Q4_0 and
 * Q5_0) */
static pxl_status qmv8_run(pxl_ctx *ctx, bench_case *c) { return qmv_go(ctx, c, 1); }

/* the quantized matvec with the fused RMSNorm (the norm option): as
 * qmv_setup, the norm weights in t[5] */
static pxl_status qmvn_setup(pxl_ctx *ctx, bench_case *c) {
    int64_t sn[1] = {c->n[2]};
    pxl_status s = qmv_setup(ctx, c);
    if (s == PXL_OK) s = make(ctx, PXL_F32, 1, sn, 1, &c->t[5]);
    return s;
}
static pxl_status qmvn_go(pxl_ctx *ctx, bench_case *c, int a_q8) {
    pxl_matmul_options o = {0};
    o.trans_b = 1;
    o.norm = c->t[5];
    o.norm_eps = 1e-5f;
    o.a_q8 = a_q8;
    return pxl_matmul(ctx, c->t[0], c->w[c->turn++ % c->nw], c->t[2], &o);
}
static pxl_status qmvn_run(pxl_ctx *ctx, bench_case *c) { return qmvn_go(ctx, c, 0); }
static pxl_status qmvn8_run(pxl_ctx *ctx, bench_case *c) { return qmvn_go(ctx, c, 1); }

/* pxl_matmul_swiglu with both weights in one tensor [2F, K] (one dispatch on
 * a GPU): n = {M, F, K, dtype}; copies of that tensor (cold_copies), their
 * gate / up views in w[2i], w[2i + 1] */
static pxl_status swiglu_setup(pxl_ctx *ctx, bench_case *c) {
    int64_t sa[2] = {c->n[0], c->n[2]}, sw[2] = {c->n[1], c->n[2]}, sb[2] = {2 * c->n[1], c->n[2]};
    int64_t so[2] = {c->n[0], c->n[1]};
    size_t half = pxl_dtype_row_bytes((pxl_dtype)c->n[3], c->n[2]) * (size_t)c->n[1];
    pxl_status s = make(ctx, PXL_F32, 2, sa, 1, &c->t[0]);
    if (s == PXL_OK) s = make(ctx, PXL_F32, 2, so, 0, &c->t[1]);
    int n = cold_copies(2 * half);
    for (int i = 0; i < n && s == PXL_OK; i++) {
        pxl_tensor *base = NULL;
        s = make(ctx, (pxl_dtype)c->n[3], 2, sb, 1, &base);
        if (s == PXL_OK) s = pxl_tensor_view(ctx, base, 2, sw, 0, &c->w[c->nw++]);
        if (s == PXL_OK) s = pxl_tensor_view(ctx, base, 2, sw, half, &c->w[c->nw++]);
        pxl_tensor_free(base); /* the views keep the memory */
    }
    return s;
}
static pxl_status swiglu_go(pxl_ctx *ctx, bench_case *c, int a_q8) {
    pxl_matmul_options o = {0};
    o.trans_b = 1;
    o.a_q8 = a_q8;
    int i = c->turn++ % (c->nw / 2);
    return pxl_matmul_swiglu(ctx, c->t[0], c->w[2 * i], c->w[2 * i + 1], c->t[1], &o);
}
static pxl_status swiglu_run(pxl_ctx *ctx, bench_case *c) { return swiglu_go(ctx, c, 0); }
static pxl_status swiglu8_run(pxl_ctx *ctx, bench_case *c) { return swiglu_go(ctx, c, 1); }

/* pxl_matmul_multi of a decoded token's Q and K (n[0] rows) and V (n[1]
 * rows) weights, K = n[2], with the norm and 8-bit A, as a layer whose V
 * weights have another type runs them: n[3] = 0, Q4_K and Q6_K (a Q4_K_M
 * file); 1, Q5_0 and Q8_0 with bias rows (Qwen2.5's Q4_K_M file). x in t[0],
 * the norm in t[5], the outputs as views t[2], t[3] of one row t[1], the
 * bias rows as views t[6], t[7] of one row t[4]; copies of the pair in
 * w[2i], w[2i + 1]. pair: one call (one dispatch on a GPU); pair_split: the
 * two pxl_matmul calls it replaces (its baseline, same run) */
static pxl_dtype pair_dt(const bench_case *c, int i) {
    return c->n[3] ? (i ? PXL_Q8_0 : PXL_Q5_0) : (i ? PXL_Q6_K : PXL_Q4_K);
}
static pxl_status pair_setup(pxl_ctx *ctx, bench_case *c) {
    int64_t K = c->n[2], sa[2] = {1, K}, sn[1] = {K}, so[2] = {1, c->n[0] + c->n[1]};
    int64_t s0[2] = {c->n[0], K}, s1[2] = {c->n[1], K}, c0[2] = {1, c->n[0]}, c1[2] = {1, c->n[1]};
    pxl_status s = make(ctx, PXL_F32, 2, sa, 1, &c->t[0]);
    if (s == PXL_OK) s = make(ctx, PXL_F32, 1, sn, 1, &c->t[5]);
    if (s == PXL_OK) s = make(ctx, PXL_F32, 2, so, 0, &c->t[1]);
    if (s == PXL_OK) s = pxl_tensor_view(ctx, c->t[1], 2, c0, 0, &c->t[2]);
    if (s == PXL_OK) s = pxl_tensor_view(ctx, c->t[1], 2, c1, (size_t)c->n[0] * 4, &c->t[3]);
    if (s == PXL_OK && c->n[3]) s = make(ctx, PXL_F32, 2, so, 1, &c->t[4]);
    if (s == PXL_OK && c->n[3]) s = pxl_tensor_view(ctx, c->t[4], 2, c0, 0, &c->t[6]);
    if (s == PXL_OK && c->n[3]) s = pxl_tensor_view(ctx, c->t[4], 2, c1, (size_t)c->n[0] * 4, &c->t[7]);
    int n = cold_copies(pxl_dtype_row_bytes(pair_dt(c, 0), K) * (size_t)c->n[0] +
                        pxl_dtype_row_bytes(pair_dt(c, 1), K) * (size_t)c->n[1]);
    if (n > BENCH_MAX_COPIES) n = BENCH_MAX_COPIES;
    for (int i = 0; i < n && s == PXL_OK; i++) {
        s = make(ctx, pair_dt(c, 0), 2, s0, 1, &c->w[c->nw++]);
        if (s == PXL_OK) s = make(ctx, pair_dt(c, 1), 2, s1, 1, &c->w[c->nw++]);
    }
    return s;
}
static pxl_matmul_options pair_opts(const bench_case *c) {
    pxl_matmul_options o = {0};
    o.trans_b = 1;
    o.norm = c->t[5];
    o.norm_eps = 1e-5f;
    o.a_q8 = 1;
    return o;
}
static pxl_status pair_run(pxl_ctx *ctx, bench_case *c) {
    pxl_matmul_options o = pair_opts(c);
    int i = c->turn++ % (c->nw / 2);
    const pxl_tensor *w[2] = {c->w[2 * i], c->w[2 * i + 1]}, *bias[2] = {c->t[6], c->t[7]};
    pxl_tensor *out[2] = {c->t[2], c->t[3]};
    return pxl_matmul_multi(ctx, c->t[0], 2, w, out, c->n[3] ? bias : NULL, &o);
}
static pxl_status pair_split_run(pxl_ctx *ctx, bench_case *c) {
    pxl_matmul_options o = pair_opts(c);
    int i = c->turn++ % (c->nw / 2);
    o.bias = c->t[6];
    pxl_status s = pxl_matmul(ctx, c->t[0], c->w[2 * i], c->t[2], &o);
    o.bias = c->t[7];
    return s == PXL_OK ? pxl_matmul(ctx, c->t[0], c->w[2 * i + 1], c->t[3], &o) : s;
}

/* memory-bound row/element ops on [rows, cols]: n = {rows, cols} */
static pxl_status rows_setup(pxl_ctx *ctx, bench_case *c) {
    int64_t s2[2] = {c->n[0], c->n[1]}, s1[1] = {c->n[1]};
    pxl_status s = make(ctx, PXL_F32, 2, s2, 1, &c->t[0]);
    if (s == PXL_OK) s = make(ctx, PXL_F32, 2, s2, 1, &c->t[1]);
    if (s == PXL_OK) s = make(ctx, PXL_F32, 2, s2, 0, &c->t[2]);
    if (s == PXL_OK) s = make(ctx, PXL_F32, 1, s1, 1, &c->t[3]);
    return s;
}
static pxl_status softmax_run(pxl_ctx *ctx, bench_case *c) { return pxl_softmax(ctx, c->t[0], c->t[2], 1.0f, 0, 0); }
static pxl_status rmsnorm_run(pxl_ctx *ctx, bench_case *c) { return pxl_rmsnorm(ctx, c->t[0], c->t[3], c->t[2], 1e-5f); }
static pxl_status add_run(pxl_ctx *ctx, bench_case *c) { return pxl_add(ctx, c->t[0], c->t[1], c->t[2]); }
static pxl_status silu_run(pxl_ctx *ctx, bench_case *c) { return pxl_silu(ctx, c->t[0], c->t[2]); }

/* attention's q, k, v and y for T query positions over n[3] cache rows: n = {Hq, Hkv, D, kv_len} */
static pxl_status attn_make(pxl_ctx *ctx, bench_case *c, int64_t T) {
    int64_t sq[3] = {T, c->n[0], c->n[2]}, skv[3] = {c->n[3], c->n[1], c->n[2]};
    pxl_status s = make(ctx, PXL_F32, 3, sq, 1, &c->t[0]);
    if (s == PXL_OK) s = make(ctx, PXL_F32, 3, skv, 1, &c->t[1]);
    if (s == PXL_OK) s = make(ctx, PXL_F32, 3, skv, 1, &c->t[2]);
    if (s == PXL_OK) s = make(ctx, PXL_F32, 3, sq, 0, &c->t[3]);
    return s;
}

/* decode attention: n = {Hq, Hkv, D, kv_len} */
static pxl_status attn_setup(pxl_ctx *ctx, bench_case *c) { return attn_make(ctx, c, 1); }
static pxl_status attn_run(pxl_ctx *ctx, bench_case *c) {
    return pxl_attention(ctx, c->t[0], c->t[1], c->t[2], c->t[3], c->n[3], 1.0f / sqrtf((float)c->n[2]));
}

/* prompt attention from an empty cache (kv_len = T, causal): n = {Hq, Hkv, D, T} */
static pxl_status attn_pp_setup(pxl_ctx *ctx, bench_case *c) { return attn_make(ctx, c, c->n[3]); }

/* RoPE and the f16 KV-cache write of one decode token, q, k and v views of one QKV row: n = {Hq, Hkv, D}.
 * rope_kv: pxl_rope_kv; rope_kv_split: the four ops it replaces (its baseline, same run) */
/* t[0]: one token's QKV row for n = {Hq, Hkv, D}; t[1], t[2], t[3]: its q [1, Hq, D], k [1, Hkv, D] and
 * v [1, Hkv * D] views */
static pxl_status qkv_row(pxl_ctx *ctx, bench_case *c) {
    int64_t Hq = c->n[0], Hkv = c->n[1], D = c->n[2], dq = Hq * D, dkv = Hkv * D;
    int64_t sqkv[2] = {1, dq + 2 * dkv}, sq[3] = {1, Hq, D}, sk[3] = {1, Hkv, D}, sv[2] = {1, dkv};
    pxl_status s = make(ctx, PXL_F32, 2, sqkv, 1, &c->t[0]);
    if (s == PXL_OK) s = pxl_tensor_view(ctx, c->t[0], 3, sq, 0, &c->t[1]);
    if (s == PXL_OK) s = pxl_tensor_view(ctx, c->t[0], 3, sk, (size_t)dq * 4, &c->t[2]);
    if (s == PXL_OK) s = pxl_tensor_view(ctx, c->t[0], 2, sv, (size_t)(dq + dkv) * 4, &c->t[3]);
    return s;
}

static pxl_status ropekv_setup(pxl_ctx *ctx, bench_case *c) {
    int64_t Hkv = c->n[1], D = c->n[2], sk[3] = {1, Hkv, D}, sv[2] = {1, Hkv * D};
    pxl_status s = qkv_row(ctx, c);
    if (s == PXL_OK) s = make(ctx, PXL_F16, 3, sk, 0, &c->t[4]);
    if (s == PXL_OK) s = make(ctx, PXL_F16, 2, sv, 0, &c->t[5]);
    return s;
}
static pxl_status ropekv_run(pxl_ctx *ctx, bench_case *c) {
    pxl_rope_options o = {10000.0f, PXL_ROPE_ADJACENT, 0.0f, NULL};
    return pxl_rope_kv(ctx, c->t[1], c->t[2], c->t[3], c->t[4], c->t[5], 100, &o);
}
static pxl_status ropekv_split_run(pxl_ctx *ctx, bench_case *c) {
    pxl_rope_options o = {10000.0f, PXL_ROPE_ADJACENT, 0.0f, NULL};
    pxl_status s = pxl_rope_ext(ctx, c->t[1], c->t[1], 100, &o);
    if (s == PXL_OK) s = pxl_rope_ext(ctx, c->t[2], c->t[2], 100, &o);
    if (s == PXL_OK) s = pxl_convert(ctx, c->t[2], c->t[4]);
    if (s == PXL_OK) s = pxl_convert(ctx, c->t[3], c->t[5]);
    return s;
}

/* One decoded token's RoPE, f32 cache rows and attention at position n[3] - 1, q, k and v views of one
 * QKV row: n = {Hq, Hkv, D, kv_len}. rka: pxl_rope_kv_attention; rka_split: pxl_rope_kv then
 * pxl_attention (its baseline, same run) */
static pxl_status rka_setup(pxl_ctx *ctx, bench_case *c) {
    int64_t sq[3] = {1, c->n[0], c->n[2]}, sc[3] = {c->n[3], c->n[1], c->n[2]};
    pxl_status s = qkv_row(ctx, c);
    if (s == PXL_OK) s = make(ctx, PXL_F32, 3, sc, 1, &c->t[4]);
    if (s == PXL_OK) s = make(ctx, PXL_F32, 3, sc, 1, &c->t[5]);
    if (s == PXL_OK) s = make(ctx, PXL_F32, 3, sq, 0, &c->t[6]);
    return s;
}
static pxl_status rka_run(pxl_ctx *ctx, bench_case *c) {
    pxl_rope_options o = {10000.0f, PXL_ROPE_ADJACENT, 0.0f, NULL};
    return pxl_rope_kv_attention(ctx, c->t[1], c->t[2], c->t[3], c->t[4], c->t[5], c->n[3] - 1, &o, c->t[6],
                                 1.0f / sqrtf((float)c->n[2]));
}
static pxl_status rka_split_run(pxl_ctx *ctx, bench_case *c) {
    pxl_rope_options o = {10000.0f, PXL_ROPE_ADJACENT, 0.0f, NULL};
    int64_t Hkv = c->n[1], D = c->n[2], sk[3] = {1, Hkv, D}, sv[2] = {1, Hkv * D};
    size_t at = (size_t)(c->n[3] - 1) * (size_t)(Hkv * D) * 4u;
    pxl_tensor *ko = NULL, *vo = NULL;
    pxl_status s = pxl_tensor_view(ctx, c->t[4], 3, sk, at, &ko);
    if (s == PXL_OK) s = pxl_tensor_view(ctx, c->t[5], 2, sv, at, &vo);
    if (s == PXL_OK) s = pxl_rope_kv(ctx, c->t[1], c->t[2], c->t[3], ko, vo, c->n[3] - 1, &o);
    if (s == PXL_OK)
        s = pxl_attention(ctx, c->t[1], c->t[4], c->t[5], c->t[6], c->n[3], 1.0f / sqrtf((float)c->n[2]));
    pxl_tensor_free(ko), pxl_tensor_free(vo);
    return s;
}

/* dispatch overhead: a chain of 1000 dependent scale kernels on 256 floats */
static pxl_status chain_setup(pxl_ctx *ctx, bench_case *c) {
    int64_t s1[1] = {256};
    pxl_status s = make(ctx, PXL_F32, 1, s1, 1, &c->t[0]);
    if (s == PXL_OK) s = make(ctx, PXL_F32, 1, s1, 1, &c->t[1]);
    return s;
}
static pxl_status chain_run(pxl_ctx *ctx, bench_case *c) {
    pxl_status s = PXL_OK;
    for (int i = 0; i < 1000 && s == PXL_OK; i++)
        s = pxl_scale(ctx, c->t[i & 1], 1.0f, c->t[(i + 1) & 1]);
    return s;
}

/* What recording costs below the op layer: 1000 pxl_recorder_dispatch calls
 * of a scale kernel on 256 floats into the stream, either alternating between
 * two bind groups as dispatch_chain_1000 does (x -> y, y -> x), or with the
 * same one every time (Dawn then skips setting it). The difference between
 * dispatch_chain_1000 and record_alternate_1000 is the op layer's own cost. */
static pxl_status record_setup(pxl_ctx *ctx, bench_case *c) {
    static const float zero[256];
    pxl_status s = pxl_kernel_get_static(ctx, "bench_scale.wgsl", pxl_wgsl_tools_bench_scale, "main", NULL, 0,
                                         &c->kernel);
    for (int i = 0; i < 2 && s == PXL_OK; i++) {
        s = pxl_buffer_create(ctx, sizeof zero, &c->buf[i]);
        if (s == PXL_OK) s = pxl_buffer_upload(ctx, c->buf[i], 0, zero, sizeof zero);
    }
    return s;
}
static pxl_status record_run(pxl_ctx *ctx, bench_case *c) {
    pxl_recorder *rec;
    pxl_status s = pxl_gpu_stream(ctx, &rec);
    struct {
        uint32_t n;
        float s;
        uint32_t pad[2];
    } params = {256, 1.0f, {0, 0}};
    pxl_binding b[2][2] = {{{0, c->buf[0], 0, 0}, {1, c->buf[1], 0, 0}}, {{0, c->buf[1], 0, 0}, {1, c->buf[0], 0, 0}}};
    for (int i = 0; i < 1000 && s == PXL_OK; i++) {
        pxl_dispatch d = {c->kernel, b[c->n[0] ? i & 1 : 0], 2, &params, sizeof params, 2, {1, 1, 1}};
        s = pxl_recorder_dispatch(rec, &d);
    }
    return s;
}

/* Cases named *_1000 make 1000 dispatches per call; they report per dispatch. */
static int per_dispatch(const bench_case *c) {
    size_t n = strlen(c->name);
    return n > 5 && !strcmp(c->name + n - 5, "_1000");
}

/* Times k calls recorded into one timed stream; returns microseconds per call
 * (GPU time by timestamps where there are, else wall time) and the host time
 * spent recording per call. */
static pxl_status time_calls(pxl_ctx *ctx, bench_case *c, int k, int timestamps, double *us, double *host_us) {
    pxl_status s = pxl_gpu_stream_begin_timed(ctx);
    double t0 = pxl_time_now();
    for (int i = 0; i < k && s == PXL_OK; i++) s = c->run(ctx, c);
    *host_us = (pxl_time_now() - t0) * 1e6 / k;
    uint64_t ns = 0;
    if (s == PXL_OK) s = pxl_gpu_flush(ctx, 1, &ns);
    double wall = pxl_time_now() - t0;
    *us = (timestamps && ns ? (double)ns * 1e-3 : wall * 1e6) / k;
    return s;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The CPU: wall time of k calls (the ops run when called). */
static pxl_status time_calls_cpu(pxl_ctx *ctx, bench_case *c, int k, double *us, double *host_us) {
    pxl_status s = PXL_OK;
    double t0 = pxl_time_now();
    for (int i = 0; i < k && s == PXL_OK; i++) s = c->run(ctx, c);
    *us = *host_us = (pxl_time_now() - t0) * 1e6 / k;
    return s;
}

static pxl_status time_any(pxl_ctx *ctx, bench_case *c, int k, double *us, double *host_us) {
    const pxl_gpu_info *gi = pxl_gpu_get_info(ctx);
    return gi ? time_calls(ctx, c, k, gi->has_timestamps, us, host_us) : time_calls_cpu(ctx, c, k, us, host_us);
}

static void measure(pxl_ctx *ctx, bench_case *c, uint32_t reps) {
    const pxl_gpu_info *gi = pxl_gpu_get_info(ctx);
    pxl_status s = c->setup(ctx, c);
    if (s == PXL_OK) s = pxl_finish(ctx);
    double us1 = 0, h1 = 0;
    if (s == PXL_OK) s = time_any(ctx, c, 1, &us1, &h1); /* first call: compiles */
    if (s == PXL_OK) s = time_any(ctx, c, 1, &us1, &h1);
    int k = us1 > 0 ? (int)(100000.0 / us1) : 1; /* ~0.1 s per timed recording */
    if (k < 1) k = 1;
    if (k > 200) k = 200;
    if (per_dispatch(c)) k = 1;
    /* Warm-up in the timed recordings' shape, until the GPU's clocks have
     * risen: a GPU idle for a second runs at a fraction of its clock (an
     * H200: 345 against 1980 MHz) and needs about 0.1-0.2 s of steady work
     * to come back, which short submits with waits between them do not give
     * it. So at least 0.4 s, and until two recordings in a row agree within
     * 2% (at most 3 s). The CPU: 0.25 s. */
    double t_warm = pxl_time_now(), prev = 0, cur = 0;
    while (s == PXL_OK) {
        s = time_any(ctx, c, k, &cur, &h1);
        double el = pxl_time_now() - t_warm;
        if (!gi ? el >= 0.25 : el >= 3.0 || (el >= 0.4 && prev > 0 && fabs(cur - prev) <= 0.02 * prev)) break;
        prev = cur;
    }
    double t[64], h[64];
    if (reps > 64) reps = 64;
    for (uint32_t i = 0; s == PXL_OK && i < reps; i++) s = time_any(ctx, c, k, &t[i], &h[i]);
    if (s != PXL_OK) {
        c->ok = 0;
        snprintf(c->note, sizeof c->note, "%s", pxl_ctx_error(ctx));
    } else {
        qsort(t, reps, sizeof t[0], cmp_d);
        qsort(h, reps, sizeof h[0], cmp_d);
        c->us = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
        c->host_us = reps % 2 ? h[reps / 2] : 0.5 * (h[reps / 2 - 1] + h[reps / 2]);
        if (per_dispatch(c)) {
            c->us /= 1000.0;
            c->host_us /= 1000.0;
        }
        c->rate = c->work > 0 ? c->work / (c->us * 1e-6) / (strcmp(c->unit, "TFLOP/s") ? 1e9 : 1e12) : 0;
        c->ok = 1;
        if (gi)
            snprintf(c->note, sizeof c->note, "k=%d per submit, %s timing, host %.2f us/call to record", k,
                     gi->has_timestamps ? "timestamp" : "wall", c->host_us);
        else snprintf(c->note, sizeof c->note, "k=%d calls, wall timing, %d threads", k, pxl_ctx_threads(ctx));
    }
    for (int i = 0; i < 8; i++) {
        pxl_tensor_free(c->t[i]);
        c->t[i] = NULL;
    }
    for (int i = 0; i < c->nw; i++) pxl_tensor_free(c->w[i]);
    c->nw = 0;
    for (int i = 0; i < 2; i++) {
        pxl_buffer_free(c->buf[i]);
        c->buf[i] = NULL;
    }
    pxl_finish(ctx);
}

int bench_ops(pxl_ctx *ctx, const char *only, uint32_t reps, int json, int small);
int bench_ops(pxl_ctx *ctx, const char *only, uint32_t reps, int json, int small) {
    const pxl_gpu_info *gi = pxl_gpu_get_info(ctx); /* NULL: the CPU cases */
    /* --small shrinks every case (for CI smoke tests on software adapters) */
    int64_t big = small ? 256 : 4096, huge = small ? 256 : 8192, rows = small ? 64 : 16384;
    int64_t qn = small ? 256 : 14336, qk = small ? 256 : 4096, ctxlen = small ? 128 : 4096;
    double e = (double)rows * 4096.0, fb = (double)big, fh = (double)huge;
    double qbytes = (double)qn * (double)qk / 32.0;
    int64_t tl_ = small ? 256 : 2048, tf_ = small ? 512 : 5632, tv_ = small ? 1024 : 32000;
    int64_t pp_ = small ? 64 : 512, kd_ = small ? 512 : 8192;
    int64_t pa_ = small ? 64 : 512, pb_ = small ? 128 : 2048; /* attention's prompts */
    double tl = (double)tl_, tf = (double)tf_, tv = (double)tv_, fp = (double)pp_, kd = (double)kd_;
    bench_case cases[] = {
        {"matmul_f32_4096", "TFLOP/s", 2.0 * fb * fb * fb, mm_setup, mm_run, {0}, {big, big, big, PXL_F32}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"matmul_f32_8192", "TFLOP/s", 2.0 * fh * fh * fh, mm_setup, mm_run, {0}, {huge, huge, huge, PXL_F32}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"matmul_f16_8192", "TFLOP/s", 2.0 * fh * fh * fh, mm_setup, mm_run, {0}, {huge, huge, huge, PXL_F16}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"softmax_64M", "GB/s", 8.0 * e, rows_setup, softmax_run, {0}, {rows, 4096}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"rmsnorm_64M", "GB/s", 8.0 * e, rows_setup, rmsnorm_run, {0}, {rows, 4096}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"add_64M", "GB/s", 12.0 * e, rows_setup, add_run, {0}, {rows, 4096}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"silu_64M", "GB/s", 8.0 * e, rows_setup, silu_run, {0}, {rows, 4096}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q4_0_matvec_4096x14336", "GB/s", qbytes * 18.0, qmv_setup, qmv_run, {0}, {1, qn, qk, PXL_Q4_0}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q8_0_matvec_4096x14336", "GB/s", qbytes * 34.0, qmv_setup, qmv_run, {0}, {1, qn, qk, PXL_Q8_0}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q5_0_matvec_4096x14336", "GB/s", qbytes * 22.0, qmv_setup, qmv_run, {0}, {1, qn, qk, PXL_Q5_0}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q4_0_q8a_matvec_4096x14336", "GB/s", qbytes * 18.0, qmv_setup, qmv8_run, {0}, {1, qn, qk, PXL_Q4_0}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q8_0_q8a_matvec_4096x14336", "GB/s", qbytes * 34.0, qmv_setup, qmv8_run, {0}, {1, qn, qk, PXL_Q8_0}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q5_0_q8a_matvec_4096x14336", "GB/s", qbytes * 22.0, qmv_setup, qmv8_run, {0}, {1, qn, qk, PXL_Q5_0}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q4_k_matvec_4096x14336", "GB/s", qbytes * 18.0, qmv_setup, qmv_run, {0}, {1, qn, qk, PXL_Q4_K}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q4_k_q8a_matvec_4096x14336", "GB/s", qbytes * 18.0, qmv_setup, qmv8_run, {0}, {1, qn, qk, PXL_Q4_K}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q5_k_matvec_4096x14336", "GB/s", qbytes * 22.0, qmv_setup, qmv_run, {0}, {1, qn, qk, PXL_Q5_K}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q5_k_q8a_matvec_4096x14336", "GB/s", qbytes * 22.0, qmv_setup, qmv8_run, {0}, {1, qn, qk, PXL_Q5_K}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q6_k_matvec_4096x14336", "GB/s", qbytes * 26.25, qmv_setup, qmv_run, {0}, {1, qn, qk, PXL_Q6_K}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q6_k_q8a_matvec_4096x14336", "GB/s", qbytes * 26.25, qmv_setup, qmv8_run, {0}, {1, qn, qk, PXL_Q6_K}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"f16_matvec_4096x14336", "GB/s", qbytes * 64.0, qmv_setup, qmv_run, {0}, {1, qn, qk, PXL_F16}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        /* a TinyLlama-1.1B layer (Q4_K_M: 2048 wide, FFN 5632, output head Q6_K 32000): decode and a 32-token prefill */
        {"q4_k_matvec_2048x2048", "GB/s", tl * tl / 32.0 * 18.0, qmv_setup, qmv_run, {0}, {1, tl_, tl_, PXL_Q4_K}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q4_k_matvec_2048x5632", "GB/s", tl * tf / 32.0 * 18.0, qmv_setup, qmv_run, {0}, {1, tf_, tl_, PXL_Q4_K}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q4_k_q8a_matvec_2048x2048", "GB/s", tl * tl / 32.0 * 18.0, qmv_setup, qmv8_run, {0}, {1, tl_, tl_, PXL_Q4_K}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q4_k_q8a_matvec_2048x5632", "GB/s", tl * tf / 32.0 * 18.0, qmv_setup, qmv8_run, {0}, {1, tf_, tl_, PXL_Q4_K}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        /* fused: the 2048x5632 matvec with the RMSNorm of x (compare q4_k_matvec_2048x5632), gate, up and
         * SwiGLU in one dispatch (twice the weights of q4_k_matvec_2048x5632) */
        {"q4_k_matvec_norm_2048x5632", "GB/s", tl * tf / 32.0 * 18.0, qmvn_setup, qmvn_run, {0}, {1, tf_, tl_, PXL_Q4_K}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q4_k_swiglu_2048x5632", "GB/s", 2.0 * tl * tf / 32.0 * 18.0, swiglu_setup, swiglu_run, {0}, {1, tf_, tl_, PXL_Q4_K}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q5_0_swiglu_896x4864", "GB/s", 2.0 * 896.0 * (small ? 96.0 : 4864.0) / 32.0 * 22.0, swiglu_setup, swiglu_run, {0}, {1, small ? 96 : 4864, 896, PXL_Q5_0}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q4_k_q8a_matvec_norm_2048x5632", "GB/s", tl * tf / 32.0 * 18.0, qmvn_setup, qmvn8_run, {0}, {1, tf_, tl_, PXL_Q4_K}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q4_k_q8a_swiglu_2048x5632", "GB/s", 2.0 * tl * tf / 32.0 * 18.0, swiglu_setup, swiglu8_run, {0}, {1, tf_, tl_, PXL_Q4_K}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        /* Q and K (Q4_K) with V (Q6_K) of a TinyLlama layer whose V is Q6_K: one call against two */
        {"q4_k_q6_k_pair_2304+256x2048", "us", 0, pair_setup, pair_run, {0}, {2304, 256, tl_}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q4_k_q6_k_pair_split_2304+256x2048", "us", 0, pair_setup, pair_split_run, {0}, {2304, 256, tl_}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q5_0_q8_0_pair_bias_1024+128x896", "us", 0, pair_setup, pair_run, {0}, {1024, 128, 896, 1}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q5_0_q8_0_pair_bias_split_1024+128x896", "us", 0, pair_setup, pair_split_run, {0}, {1024, 128, 896, 1}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q6_k_matvec_2048x32000", "GB/s", tl * tv / 32.0 * 26.25, qmv_setup, qmv_run, {0}, {1, tv_, tl_, PXL_Q6_K}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q6_k_q8a_matvec_2048x32000", "GB/s", tl * tv / 32.0 * 26.25, qmv_setup, qmv8_run, {0}, {1, tv_, tl_, PXL_Q6_K}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        /* a TinyLlama layer's down product where it is Q6_K (K = 5632, 22 blocks: rows start at every
         * alignment), on f32 and on 8-bit A */
        {"q6_k_matvec_5632x2048", "GB/s", tl * tf / 32.0 * 26.25, qmv_setup, qmv_run, {0}, {1, tl_, tf_, PXL_Q6_K}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q6_k_q8a_matvec_5632x2048", "GB/s", tl * tf / 32.0 * 26.25, qmv_setup, qmv8_run, {0}, {1, tl_, tf_, PXL_Q6_K}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        /* Qwen2.5-0.5B's logits: 896 wide (not a multiple of 256, so Q8_0 in its Q4_K_M file too), 151,936 rows */
        {"q8_0_matvec_896x151936", "GB/s", 896.0 * (small ? 2048.0 : 151936.0) / 32.0 * 34.0, qmv_setup, qmv_run, {0}, {1, small ? 2048 : 151936, 896, PXL_Q8_0}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q8_0_q8a_matvec_896x151936", "GB/s", 896.0 * (small ? 2048.0 : 151936.0) / 32.0 * 34.0, qmv_setup, qmv8_run, {0}, {1, small ? 2048 : 151936, 896, PXL_Q8_0}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        /* few rows and long ones, the down products of decode (K x N): Llama-3.2-1B F16 and Q8_0
         * (8192 x 2048), its F16 output product (2048 x 2048), TinyLlama Q4_K (5632 x 2048), Qwen2.5-0.5B
         * Q8_0 (4864 x 896) */
        {"f16_matvec_8192x2048", "GB/s", kd * tl / 32.0 * 64.0, qmv_setup, qmv_run, {0}, {1, tl_, kd_, PXL_F16}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"f16_matvec_2048x2048", "GB/s", tl * tl / 32.0 * 64.0, qmv_setup, qmv_run, {0}, {1, tl_, tl_, PXL_F16}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q8_0_q8a_matvec_8192x2048", "GB/s", kd * tl / 32.0 * 34.0, qmv_setup, qmv8_run, {0}, {1, tl_, kd_, PXL_Q8_0}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q4_k_q8a_matvec_5632x2048", "GB/s", tl * tf / 32.0 * 18.0, qmv_setup, qmv8_run, {0}, {1, tl_, tf_, PXL_Q4_K}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q8_0_q8a_matvec_4864x896", "GB/s", 896.0 * (small ? 512.0 : 4864.0) / 32.0 * 34.0, qmv_setup, qmv8_run, {0}, {1, 896, small ? 512 : 4864, PXL_Q8_0}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q4_k_matmul_32x2048x5632", "GFLOP/s", 2.0 * 32.0 * tl * tf, qmv_setup, qmv_run, {0}, {32, tf_, tl_, PXL_Q4_K}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        /* the same layer's products in a 512-token prefill: gate / up (Q4_K), down (Q6_K in Q4_K_M files) */
        {"q4_k_matmul_512x2048x5632", "GFLOP/s", 2.0 * fp * tl * tf, qmv_setup, qmv_run, {0}, {pp_, tf_, tl_, PXL_Q4_K}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q4_k_q8a_matmul_512x2048x5632", "GFLOP/s", 2.0 * fp * tl * tf, qmv_setup, qmv8_run, {0}, {pp_, tf_, tl_, PXL_Q4_K}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        /* Q and the output product (2048 x 2048), K or V (256 rows: 4 KV heads of 64) */
        {"q4_k_q8a_matmul_512x2048x2048", "GFLOP/s", 2.0 * fp * tl * tl, qmv_setup, qmv8_run, {0}, {pp_, tl_, tl_, PXL_Q4_K}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q4_k_q8a_matmul_512x2048x256", "GFLOP/s", 2.0 * fp * tl * 256.0, qmv_setup, qmv8_run, {0}, {pp_, 256, tl_, PXL_Q4_K}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q6_k_matmul_512x5632x2048", "GFLOP/s", 2.0 * fp * tl * tf, qmv_setup, qmv_run, {0}, {pp_, tl_, tf_, PXL_Q6_K}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q6_k_q8a_matmul_512x5632x2048", "GFLOP/s", 2.0 * fp * tl * tf, qmv_setup, qmv8_run, {0}, {pp_, tl_, tf_, PXL_Q6_K}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        /* gate / up of the same prefill in Q5_K (Q5_K_M files), Q8_0 and Q4_0, A as given and rounded */
        {"q5_k_matmul_512x2048x5632", "GFLOP/s", 2.0 * fp * tl * tf, qmv_setup, qmv_run, {0}, {pp_, tf_, tl_, PXL_Q5_K}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q5_k_q8a_matmul_512x2048x5632", "GFLOP/s", 2.0 * fp * tl * tf, qmv_setup, qmv8_run, {0}, {pp_, tf_, tl_, PXL_Q5_K}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q8_0_matmul_512x2048x5632", "GFLOP/s", 2.0 * fp * tl * tf, qmv_setup, qmv_run, {0}, {pp_, tf_, tl_, PXL_Q8_0}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q8_0_q8a_matmul_512x2048x5632", "GFLOP/s", 2.0 * fp * tl * tf, qmv_setup, qmv8_run, {0}, {pp_, tf_, tl_, PXL_Q8_0}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q4_0_matmul_512x2048x5632", "GFLOP/s", 2.0 * fp * tl * tf, qmv_setup, qmv_run, {0}, {pp_, tf_, tl_, PXL_Q4_0}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"q4_0_q8a_matmul_512x2048x5632", "GFLOP/s", 2.0 * fp * tl * tf, qmv_setup, qmv8_run, {0}, {pp_, tf_, tl_, PXL_Q4_0}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        /* Llama-3.2-1B F16's products in a 512-token prefill (M x K x N): Q, K and V, the output product, the
         * down product (64 to 96 tiles of 128 x 128: K split, matmul.c's gemm_split) */
        {"f16_matmul_512x2048x3072", "GFLOP/s", 2.0 * fp * tl * (small ? 384.0 : 3072.0), qmv_setup, qmv_run, {0}, {pp_, small ? 384 : 3072, tl_, PXL_F16}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"f16_matmul_512x2048x2048", "GFLOP/s", 2.0 * fp * tl * tl, qmv_setup, qmv_run, {0}, {pp_, tl_, tl_, PXL_F16}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"f16_matmul_512x8192x2048", "GFLOP/s", 2.0 * fp * kd * tl, qmv_setup, qmv_run, {0}, {pp_, tl_, kd_, PXL_F16}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        /* Qwen2.5-0.5B's gate / up in a prefill: Q5_0 in its Q4_K_M file (896 is not a multiple of 256) */
        {"q5_0_q8a_matmul_512x896x4864", "GFLOP/s", 2.0 * fp * 896.0 * (small ? 2048.0 : 4864.0), qmv_setup, qmv8_run, {0}, {pp_, small ? 2048 : 4864, 896, PXL_Q5_0}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"attention_decode_32x8x128_ctx4096", "us", 0, attn_setup, attn_run, {0}, {32, 8, 128, ctxlen}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        /* causal attention over a prompt of T from an empty cache: Llama-3.2-1B's heads (32 / 8, D = 64) at
         * T = 512 and 2048, Llama-3-8B's (D = 128) at 2048; flops 4 Hq D T (T + 1) / 2 */
        {"attention_prefill_32x8x64_512", "GFLOP/s", 2.0 * 32 * 64 * (double)pa_ * (double)(pa_ + 1), attn_pp_setup, attn_run, {0}, {32, 8, 64, pa_}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"attention_prefill_32x8x64_2048", "GFLOP/s", 2.0 * 32 * 64 * (double)pb_ * (double)(pb_ + 1), attn_pp_setup, attn_run, {0}, {32, 8, 64, pb_}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"attention_prefill_32x8x128_2048", "GFLOP/s", 2.0 * 32 * 128 * (double)pb_ * (double)(pb_ + 1), attn_pp_setup, attn_run, {0}, {32, 8, 128, pb_}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        /* TinyLlama's decode shape: 32 query heads, 4 KV heads of 64 */
        {"rope_kv_decode_32x4x64_f16", "us", 0, ropekv_setup, ropekv_run, {0}, {32, 4, 64}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"rope_kv_split_decode_32x4x64_f16", "us", 0, ropekv_setup, ropekv_split_run, {0}, {32, 4, 64}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"rope_kv_attention_decode_32x4x64_ctx128", "us", 0, rka_setup, rka_run, {0}, {32, 4, 64, 128}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"rope_kv_attention_split_decode_32x4x64_ctx128", "us", 0, rka_setup, rka_split_run, {0}, {32, 4, 64, 128}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"dispatch_chain_1000", "us", 0, chain_setup, chain_run, {0}, {0}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"record_alternate_1000", "us", 0, record_setup, record_run, {0}, {1}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
        {"record_same_1000", "us", 0, record_setup, record_run, {0}, {0}, 0, 0, 0, "", 0, 0, {0}, 0, {0}, 0},
    };
    size_t n = sizeof cases / sizeof cases[0];
    /* the text table streams a row per case as it is measured (flushed, so a
     * run cut short keeps what it measured); --json prints one document at the end */
    if (!json) {
        if (gi) printf("ops on %s (%s%s)\n", gi->adapter_name, gi->backend, gi->unchecked ? "" : ", bounds checks on");
        else printf("ops on the CPU (%d threads)\n", pxl_ctx_threads(ctx));
        printf("%-36s %12s %14s  %s\n", "case", "us/call", "rate", "note");
        fflush(stdout);
    }
    pxl_progress *prog = pxl_progress_begin(ctx, "bench ops", n);
    for (size_t i = 0; i < n; i++) {
        if ((only && !strstr(cases[i].name, only)) || (!gi && cases[i].setup != qmv_setup)) {
            cases[i].ok = -1;
            continue;
        }
        measure(ctx, &cases[i], reps);
        pxl_progress_update(prog, i + 1);
        if (!json) {
            bench_case *c = &cases[i];
            if (!c->ok) printf("%-36s %12s %14s  failed: %s\n", c->name, "-", "-", c->note);
            else if (c->work > 0) printf("%-36s %12.2f %9.2f %-7s %s\n", c->name, c->us, c->rate, c->unit, c->note);
            else printf("%-36s %12.2f %14s  %s\n", c->name, c->us, "", c->note);
            fflush(stdout);
        }
    }
    pxl_progress_end(prog);
    if (json) {
        printf("{\"bench\":\"ops\",\"device\":");
        cli_json_string(stdout, gi ? gi->adapter_name : "cpu");
        printf(",\"api\":");
        cli_json_string(stdout, gi ? gi->backend : "cpu");
        printf(",\"results\":[");
        int first = 1;
        for (size_t i = 0; i < n; i++) {
            if (cases[i].ok < 0) continue;
            printf("%s{\"name\":\"%s\",\"ok\":%s,\"us\":%.6g,\"host_us\":%.6g,\"rate\":%.6g,\"unit\":\"%s\",\"note\":",
                   first ? "" : ",",
                   cases[i].name, cases[i].ok ? "true" : "false", cases[i].us, cases[i].host_us, cases[i].rate,
                   cases[i].unit);
            cli_json_string(stdout, cases[i].note);
            printf("}");
            first = 0;
        }
        printf("]}\n");
    }
    return 0;
}
