/*
 * The op-case registry (tests/ops_cases.c) as the runner (tests/test_ops_cases.c)
 * sees it: the table, and the modes that run it on a backend.
 */
#ifndef PXL_TESTS_OPS_CASES_H
#define PXL_TESTS_OPS_CASES_H

#include "pxl/ops.h"

#include <stdint.h>

typedef enum op_kind {
    OP_MATMUL,
    OP_SOFTMAX,
    OP_RMSNORM,
    OP_LAYERNORM,
    OP_ARGMAX,
    OP_TOPK,
    OP_GELU,
    OP_SILU,
    OP_SWIGLU,
    OP_ADD,
    OP_MUL,
    OP_SCALE,
    OP_EMBEDDING,
    OP_ROPE,
    OP_ROPE_EXT,
    OP_ATTENTION,
    OP_COPY,
    OP_DOT,
    OP_CONVERT,
    OP_MATMUL_NORM,   /* pxl_matmul with the norm option */
    OP_MATMUL_SWIGLU, /* pxl_matmul_swiglu */
    OP_ROPE_KV,       /* pxl_rope_kv */
    OP_ROPE_KV_FF,    /* pxl_rope_kv with freq_factors */
    OP_ROPE_KV_ATTN,  /* pxl_rope_kv_attention */
    OP_ROPE_KV_ATTN_FF, /* pxl_rope_kv_attention with freq_factors */
    OP_MATMUL_MULTI,  /* pxl_matmul_multi, two products */
    OP_COUNT
} op_kind;

/* Case flags. */
enum {
    CF_VIEW = 1 << 0,     /* every operand is a view at an odd offset (3 blocks) inside a sentinel-filled base */
    CF_SLICE = 1 << 1,    /* every operand is a row slice (rows 2..) of a taller base, reshaped to its shape */
    CF_INPLACE = 1 << 2,  /* output 0 is input 0 (the op must allow it) */
    CF_SPECIAL = 1 << 3,  /* NaN, +-Inf and -0 in the inputs, where the op defines them */
    CF_TIES = 1 << 4,     /* inputs drawn from a few integers (ties for argmax/top-k) */
    CF_TA = 1 << 5,       /* matmul trans_a */
    CF_TB = 1 << 6,       /* matmul trans_b */
    CF_CAUSAL = 1 << 7,   /* softmax causal mask with offset `off` */
    CF_NO_BIAS = 1 << 8,  /* layernorm with b = NULL */
    CF_ERF = 1 << 9,      /* gelu erf form (default tanh) */
    CF_HALVES = 1 << 10,  /* rope PXL_ROPE_HALVES (default adjacent) */
    CF_BCAST = 1 << 11,   /* add/mul: b is one row [L] */
    CF_CPU_ONLY = 1 << 12, /* a large shape: CPU only (the GPU adapter in CI is llvmpipe) */
    CF_NULL_OPTS = 1 << 13, /* matmul options passed as NULL (defaults) */
    CF_BAD = 1 << 14,     /* also run the generic bad-argument set on this case's operands */
    CF_GRAD = 1 << 15,    /* also run the gradient mode on this case */
    CF_FLAT = 1 << 16,    /* copy: dst is the same elements as one flat row */
    CF_WIDE = 1 << 17,    /* inputs in [-12, 12) instead of the op's usual range */
    CF_NORM = 1 << 18,    /* matmul_swiglu: with the norm option */
    CF_PACKED = 1 << 19,  /* matmul_swiglu: w_up and w_gate are copied into views of one tensor (one buffer);
                           * rope_kv: q, k and v are (the fused QKV product's layout); matmul_multi: c0, c1 */
    CF_V32 = 1 << 20,     /* rope_kv: v_out is f32 whatever dt says */
    CF_Q8A = 1 << 21,     /* matmul, matmul_norm, matmul_swiglu: a_q8 (A rounded to 8 bits per 32 values);
                           * only where every backend rounds (Q4_K with M = 1, Q4_K and Q6_K with M > 8 on a GPU) */
    CF_NANLOW = 1 << 23,  /* argmax: pxl_argmax_ext with nan_lowest */
    CF_TINY = 1 << 22,    /* matmul: A in [-2^-10, 2^-10), so that a_q8's scales are f16 subnormals */
    CF_BIAS = 1 << 24,    /* matmul, matmul_norm: with a bias row [N] (pxl_matmul_options.bias), the input
                           * before C */
    CF_ONEB = 1 << 25,    /* matmul_multi: b0 and b1 copied into rows of one tensor, passed as views of it */
    CF_THREE = 1 << 26    /* matmul_multi with CF_ONEB: b1's rows twice more, a third product c2 = A' b1^T,
                           * whose floats must be c1's */
};

/*
 * One case. What `s` holds depends on the op (the main shape is
 * s[0..ndim-1] unless said otherwise):
 *   matmul     s = {batch_a, batch_b, M, N, K}, dt = B's dtype, alpha, beta
 *   softmax    x shape; p = scale, off = causal_offset
 *   rmsnorm, layernorm   x shape; p = eps
 *   argmax     x shape;  topk: x shape, k
 *   gelu, silu, swiglu, add, mul, scale   x shape; p = the scale factor
 *   embedding  s = {V, D, n ids}, dt = the table's dtype
 *   rope       s = {T, H, D}, off = pos_offset, p = base
 *              alpha = freq_scale (0: pxl_rope; else pxl_rope_ext)
 *   rope_ext   as rope, through pxl_rope_ext with freq_factors [D/2] in [0.5, 40)
 *   attention  s = {T, Hq, Hkv, D, kv_len, C}, p = scale, dt = k's and v's dtype (f32, f16)
 *   copy       src shape, dt
 *   convert    src shape, dt = src's dtype, k = dst's dtype (a pxl_dtype)
 *   dot        s = {n}
 *   matmul_norm  as matmul, p = norm_eps; the norm is [1, K] (a 2-D A) or [K]
 *   matmul_swiglu  s = {M, F, K}, dt = the weights' dtype; CF_NORM: with a norm [1, K], p = norm_eps
 *   rope_kv    s = {T, Hq, Hkv, D}, dt = k_out's and v_out's dtype, off = pos_offset, p = base,
 *              alpha = freq_scale (0: 1), k = a layout for bad calls (else CF_HALVES);
 *              rope_kv_ff: with freq_factors [D/2] in [0.5, 40)
 *   rope_kv_attn  s = {T, Hq, Hkv, D, C}, dt = the caches' dtype, off = pos_offset, p = base,
 *              alpha = freq_scale (0: 1), beta = the attention's scale; _ff: with freq_factors;
 *              CF_PACKED: q, k and v are views of one tensor (the GPU's one-dispatch path)
 *   matmul_multi  s = {M, N0, N1, K}: c0 = A' b0^T and c1 = A' b1^T, b0 [N0, K] of dt, b1 [N1, K] of the
 *              dtype k, alpha, beta; CF_NORM: A' = rmsnorm(A) * norm, p = norm_eps; CF_Q8A: a_q8 (A
 *              rounded for the Q4_K product; the other within the rounding's bound, as only some
 *              backends round it); CF_BIAS: bias rows [N0] and [N1] (with CF_NO_BIAS the first is
 *              passed as NULL); CF_PACKED: c0 and c1 are views of one tensor, a gap apart, and so are
 *              the bias rows (the GPU's one-dispatch path); CF_ONEB (dt = k): b0 and b1 are views of one
 *              matrix's rows in turn (a GPU's kmm8wn on 8-bit A), CF_THREE a third product of b1's rows
 *              again; off: the number of products passed (0: 2; bad calls only)
 * expect: PXL_OK for a value case; otherwise the status every backend must
 * return for the call (and msg, if set, a substring of the message).
 */
typedef struct op_case {
    op_kind op;
    int ndim;
    int64_t s[6];
    pxl_dtype dt;
    float p;
    float alpha, beta;
    int64_t off;
    int k;
    unsigned flags;
    pxl_status expect;
    const char *msg;
} op_case;

typedef struct case_env {
    pxl_ctx *cpu;   /* always */
    pxl_ctx *gpu;   /* NULL without an adapter */
    pxl_ctx *other; /* a second CPU context, for "tensor of another context" */
    int verbose;
} case_env;

int ops_case_count(void);
const op_case *ops_case_get(int i);
const char *ops_case_name(const op_case *c, char *buf, size_t cap);

/* Runs every value and expected-status case: on the CPU against the oracles;
 * with env->gpu also on the GPU (against the oracles and the CPU result).
 * Returns the number of cases run. */
int ops_cases_run_values(const case_env *env, int with_gpu);
/* The generic bad-argument set on every CF_BAD case, on the CPU (and the GPU):
 * statuses must be as expected and equal on both backends. */
int ops_cases_run_bad(const case_env *env, int with_gpu);
/* Gradient mode on every CF_GRAD case on ctx: analytic vector-Jacobian
 * products against central differences of the oracle and of the op. */
int ops_cases_run_grad(const case_env *env, pxl_ctx *ctx);
/* Failed checks so far in the registry's translation unit. */
int ops_cases_failures(void);

#endif
