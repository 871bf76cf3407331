/*
 * The op-case registry: one table of cases that every backend runs (after
 * ggml's tests/test-backend-ops.cpp). Each case names an op, its shapes
 * (plain tensors, offset views inside sentinel-filled bases, row slices),
 * dtypes and parameters; the op's descriptor below gives its operands, the
 * call, the double-precision oracle (tests/ops_oracle.c), the tolerance as a
 * function of the case and its inputs, the in-place rules, and (where the op
 * has a derivative) the analytic vector-Jacobian product. Three modes:
 *  - values: on a CPU context every case is checked against its oracle with
 *    the CPU tolerance; on a GPU context against the oracle with the GPU
 *    tolerance and against the CPU result. Operands that are views must leave
 *    the sentinel bytes around them untouched, and inputs must not change.
 *    Cases with `expect` set must return that status on every backend.
 *  - bad arguments (cases flagged CF_BAD): NULL context, NULL operands, wrong
 *    dtypes and shapes, outputs that alias or partly overlap inputs, read-only
 *    outputs, tensors of another context: the status must be the expected one
 *    and the same on every backend, with a message naming the op.
 *  - gradients (CF_GRAD): the analytic VJP against central differences of
 *    the oracle (double) and of the op on the backend (f32).
 *
 * How to add an op
 * ----------------
 *  1. WGSL: the kernel goes in src/ops/wgsl/<family>.wgsl (embedded at build
 *     time). Take views: bind at the tensor's offset rounded down to the
 *     device's min_storage_offset_alignment and pass the remainder (in
 *     elements) in the params struct; never assume a buffer starts at the
 *     tensor or ends with it.
 *  2. Params: the WGSL `struct Params` and its C mirror in src/ops/<family>.c
 *     must match field for field (16-byte rows); put a
 *     _Static_assert(sizeof(x_params) == N, "...") beside the C struct.
 *  3. CPU reference in the same .c file: plain loops over pxl_parallel_for,
 *     honouring views the same way (pointer + offset).
 *  4. The public function validates every argument before the backend branch
 *     (NULL rule of pxl/core.h, dtypes, shapes, overlap of outputs with inputs
 *     unless the op documents "in place", read-only outputs, the context of
 *     every tensor), with a message naming the op and the operand; then it
 *     calls the CPU reference or records the dispatch (pxl_op_dispatch).
 *  5. Declare it in include/pxl/ops.h with its definition, its dtypes and
 *     whether it works in place; that comment is what the oracle is written
 *     from.
 *  6. Tests: write the oracle from that definition in tests/ops_oracle.c
 *     (double precision, no cleverness); add an OP_ kind to ops_cases.h and a
 *     descriptor here (layout: operands, ranges and which dimension makes a
 *     shape wrong; call; oracle; tolerance derived from an error analysis and
 *     written next to it; in-place mask; VJP if the op has a derivative);
 *     then table rows: odd shapes, a CF_VIEW and a CF_SLICE row, a CF_INPLACE
 *     row if allowed, CF_SPECIAL where the op defines NaN/Inf, one CF_BAD row
 *     and the `expect` rows for bad parameter values. Check that the cases
 *     can fail: break the oracle or the op locally and watch them fail.
 *  7. Bench: a case in tools/bench_ops.c (the shape a model uses) and a row
 *     in docs/BENCHMARKS.md with the device, the date and the command.
 */
#include "ops_cases.h"

#include "check.h"
#include "ops_oracle.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define U24 (1.0 / 16777216.0) /* f32 unit roundoff */
#define U23 (1.0 / 8388608.0)
#define MAXOPND 8
#define NO_BAD 9 /* operand has no wrong-shape variant in the generic set */

int ops_cases_failures(void) { return g_failures; }

/* ---- operands and op descriptors ----------------------------------------------------- */

typedef struct operand {
    const char *name;
    pxl_dtype dt;
    int ndim;
    int64_t shape[4];
    int out;      /* 1 for outputs */
    int init;     /* outputs: written with generated data before the call (matmul's C with beta) */
    float lo, hi; /* generated range (I32: integers in [lo, hi)) */
    int bad_dim;  /* dimension made one larger for the wrong-shape case; -1 the last; NO_BAD none */
    int optional; /* may be NULL in this case (an option's tensor, such as matmul's bias), whatever the op's mask */
} operand;

typedef struct layout {
    int n_in, n_out; /* operands: inputs first, then outputs */
    operand o[MAXOPND];
} layout;

enum { TOL_CPU, TOL_GPU, TOL_GPU_CPU };
enum { SP_NAN = 1, SP_INF = 2, SP_NEGZ = 4 };

/* v[i]: the values operand i holds (inputs; outputs with init), NULL otherwise. */
typedef struct op_desc {
    const char *name;
    void (*layout)(const op_case *c, layout *l);
    pxl_status (*call)(pxl_ctx *ctx, const op_case *c, pxl_tensor *const *t);
    void (*oracle)(const op_case *c, double *const *v, double **want);
    /* tolerance per element of output `out` (its index among the outputs) */
    void (*tol)(const op_case *c, double *const *v, double *const *want, int out, int mode, double *tol);
    unsigned inplace;  /* bit i: output 0 may be input i */
    unsigned optional; /* bit i: operand i may be NULL */
    unsigned specials; /* SP_ bits: the special values the op defines */
    /* adjusts generated float data (NaN rows past kv_len, special rows...) */
    void (*fixup)(const op_case *c, const layout *l, float **x, uint64_t *rng);
    /* gradient of sum(g * y0) for each input (gv[i] NULL: not differentiable) */
    void (*vjp)(const op_case *c, double *const *v, const double *g, double **gv);
} op_desc;

static int64_t nelem(const operand *o) {
    int64_t n = 1;
    for (int i = 0; i < o->ndim; i++) n *= o->shape[i];
    return n;
}

static int64_t case_nelem(const op_case *c) {
    int64_t n = 1;
    for (int i = 0; i < c->ndim; i++) n *= c->s[i];
    return n;
}

static operand opnd(const char *name, pxl_dtype dt, int ndim, const int64_t *shape, int out, float lo, float hi,
                    int bad_dim) {
    operand o;
    memset(&o, 0, sizeof o);
    o.name = name;
    o.dt = dt;
    o.ndim = ndim;
    for (int i = 0; i < ndim; i++) o.shape[i] = shape[i];
    o.out = out;
    o.lo = lo;
    o.hi = hi;
    o.bad_dim = bad_dim;
    return o;
}

static void add_in(layout *l, operand o) { l->o[l->n_in++] = o; }
static void add_out(layout *l, operand o) {
    o.out = 1;
    l->o[l->n_in + l->n_out++] = o;
}

static double tiny_abs(void) { return 0x1p-140; } /* below every f32 normal: flushed or subnormal results */

/* ---- matmul ------------------------------------------------------------------------- */

static int64_t mm_batch(const op_case *c) { return c->s[0] > c->s[1] ? c->s[0] : c->s[1]; }

static void mm_layout(const op_case *c, layout *l) {
    int64_t ba = c->s[0], bb = c->s[1], M = c->s[2], N = c->s[3], K = c->s[4], bt = mm_batch(c);
    int ta = (c->flags & CF_TA) != 0, tb = (c->flags & CF_TB) != 0, three = bt > 1 || ba > 1 || bb > 1;
    int64_t sa[3] = {ba, ta ? K : M, ta ? M : K}, sb[3] = {bb, tb ? N : K, tb ? K : N}, sc[3] = {bt, M, N};
    int q = pxl_dtype_is_quantized(c->dt);
    float ar = (c->flags & CF_TINY) ? 0x1p-10f : 1.0f;
    add_in(l, opnd("a", PXL_F32, three ? 3 : 2, three ? sa : sa + 1, 0, -ar, ar, -1));
    /* a quantized B's rows are whole blocks: make its first matrix dimension wrong instead */
    add_in(l, opnd("b", c->dt, three ? 3 : 2, three ? sb : sb + 1, 0, -1, 1, q ? (three ? 1 : 0) : -1));
    if (c->flags & CF_BIAS) {
        operand bias = opnd("bias", PXL_F32, 1, &N, 0, -1, 1, -1);
        bias.optional = 1;
        add_in(l, bias);
    }
    add_out(l, opnd("c", PXL_F32, three ? 3 : 2, three ? sc : sc + 1, 1, -1, 1, -1));
    l->o[l->n_in].init = c->beta != 0.0f;
}

/* With CF_BIAS the bias row is the input before C: C's index among the
 * operands (matmul 2 or 3; matmul_norm 3 or 4). */
static int mm_has_bias(const op_case *c) { return (c->flags & CF_BIAS) != 0; }
static int mm_ci(const op_case *c) { return (c->op == OP_MATMUL_NORM ? 3 : 2) + mm_has_bias(c); }

/* want (the batches' [M, N] outputs) plus the bias row, as the oracle's last step */
static void mm_add_bias(const op_case *c, const double *bias, double *want) {
    int64_t N = c->s[3], rows = mm_batch(c) * c->s[2];
    for (int64_t r = 0; r < rows; r++)
        for (int64_t n = 0; n < N; n++) want[r * N + n] += bias[n];
}

/* The bias's one more rounding (the add after the product): 2^-23 of |c| + |bias| */
static void mm_bias_tol(const op_case *c, const double *bias, double *const *want, int mode, double *tol) {
    int64_t N = c->s[3], rows = mm_batch(c) * c->s[2];
    double f = U23 * (mode == TOL_GPU_CPU ? 2.0 : 1.0);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t n = 0; n < N; n++) tol[r * N + n] += f * (fabs(want[0][r * N + n]) + fabs(bias[n]));
}

static pxl_matmul_options mm_opts(const op_case *c) {
    pxl_matmul_options o;
    memset(&o, 0, sizeof o);
    o.trans_a = (c->flags & CF_TA) != 0;
    o.trans_b = (c->flags & CF_TB) != 0;
    o.alpha = c->alpha;
    o.beta = c->beta;
    o.a_q8 = (c->flags & CF_Q8A) != 0;
    return o;
}

/*
 * CF_Q8A: rows x K values of A (K a multiple of 32) replaced by their
 * rounding as pxl_matmul_options.a_q8 defines it, in the f32 arithmetic of
 * both backends: per 32 values s = amax / 127, d = s as an f16, q =
 * round-to-even(a * (1 / s)) in [-127, 127], a' = d q. Into q8 (unless
 * NULL): per value, d where a backend may round it to the neighbouring step
 * instead (a GPU's 1 / s and a / s are not correctly rounded: a * (1 / s)
 * within 1e-4 of a half), else 0; per block (rows * K / 32 values after
 * those), 1 where a GPU's s may round to another f16 (s within 4 f32 steps
 * of a change), else 0.
 */
static void q8a_round(double *a, int64_t rows, int64_t K, double *q8) {
    int64_t nb = rows * K / 32;
    for (int64_t b = 0; b < nb; b++) {
        double *x = a + b * 32;
        float amax = 0.0f;
        for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf((float)x[i]));
        float s = amax >= 0x1p-100f ? amax / 127.0f : 0.0f;
        float id = s != 0.0f ? 1.0f / s : 0.0f;
        float d = s <= 65504.0f ? pxl_f16_to_f32(pxl_f32_to_f16(s)) : s;
        if (q8) {
            float lo = s, hi = s;
            for (int i = 0; i < 4; i++) lo = nextafterf(lo, 0.0f), hi = nextafterf(hi, INFINITY);
            q8[rows * K + b] = s <= 65504.0f && (pxl_f32_to_f16(lo) != pxl_f32_to_f16(s) ||
                                                 pxl_f32_to_f16(hi) != pxl_f32_to_f16(s));
        }
        for (int i = 0; i < 32; i++) {
            double t = (double)((float)x[i] * id);
            if (q8) q8[b * 32 + i] = fabs(fabs(t - floor(t)) - 0.5) < 1e-4 && fabs(t) < 127.0 ? (double)d : 0.0;
            x[i] = (double)d * rint(fmin(fmax(t, -127.0), 127.0));
        }
    }
}

/*
 * The extra tolerance of a product of rounded rows ar (CF_Q8A, q8 from
 * q8a_round) with B rows [N, K]: d |b| for each value that may round to the
 * other step; 2^-10 of the block's |sum a' b| where its d may be another
 * f16, and in every block with `norm` (the fused norm's kernels round d
 * before they apply the norm's inverse, the CPU after: 2^-11 apart). Added
 * to tol[m * N + n] for rows m of ar (times `scale`).
 */
static void q8a_slack(const double *ar, const double *q8, const double *b, int64_t rows, int64_t N, int64_t K,
                      int norm, double scale, double *tol) {
    for (int64_t m = 0; m < rows; m++)
        for (int64_t n = 0; n < N; n++) {
            double e = 0;
            for (int64_t blk = 0; blk < K / 32; blk++) {
                double cb = 0;
                for (int64_t k = blk * 32; k < blk * 32 + 32; k++) {
                    cb += ar[m * K + k] * b[n * K + k];
                    e += q8[m * K + k] * fabs(b[n * K + k]);
                }
                if (norm || q8[rows * K + m * (K / 32) + blk] != 0.0) e += 0x1p-10 * fabs(cb);
            }
            tol[m * N + n] += scale * e;
        }
}

static pxl_status mm_call(pxl_ctx *ctx, const op_case *c, pxl_tensor *const *t) {
    pxl_matmul_options o = mm_opts(c);
    if (mm_has_bias(c)) o.bias = t[2];
    return pxl_matmul(ctx, t[0], t[1], t[mm_ci(c)], (c->flags & CF_NULL_OPTS) ? NULL : &o);
}

/* The whole error of rounding rows an [rows, K] to 8 bits (CF_Q8A) in a
 * product with B rows [N, K], for a backend that may take A as given: 0.6 d
 * |b| a value (d = amax / 127 of its 32; |a - d' q| <= d / 2 + 127 |d - d'|,
 * d' the f16 of d), times `scale`, added to tol[m * N + n]. */
static void q8a_whole(const double *an, const double *b, int64_t rows, int64_t N, int64_t K, double scale,
                      double *tol) {
    for (int64_t m = 0; m < rows; m++)
        for (int64_t blk = 0; blk < K / 32; blk++) {
            double amax = 0;
            for (int64_t k = blk * 32; k < blk * 32 + 32; k++) amax = fmax(amax, fabs(an[m * K + k]));
            for (int64_t n = 0; n < N; n++) {
                double sb = 0;
                for (int64_t k = blk * 32; k < blk * 32 + 32; k++) sb += fabs(b[n * K + k]);
                tol[m * N + n] += scale * 0.6 * (amax / 127.0) * sb * (1.0 + 0x1p-10);
            }
        }
}

static double mm_alpha(const op_case *c) { return c->alpha == 0.0f ? 1.0 : (double)c->alpha; }

/* A as the product sees it: v[0], or with CF_Q8A a rounded copy (dq: its
 * scales, when asked) that the caller frees */
static double *mm_a(const op_case *c, double *const *v, double **dq) {
    if (!(c->flags & CF_Q8A)) return v[0];
    int64_t rows = c->s[0] * c->s[2], K = c->s[4];
    double *a = malloc((size_t)(rows * K) * sizeof *a);
    memcpy(a, v[0], (size_t)(rows * K) * sizeof *a);
    if (dq) *dq = malloc((size_t)(rows * K + rows * K / 32) * sizeof **dq);
    q8a_round(a, rows, K, dq ? *dq : NULL);
    return a;
}

static void mm_oracle(const op_case *c, double *const *v, double **want) {
    double *a = mm_a(c, v, NULL);
    oracle_matmul(a, v[1], v[mm_ci(c)], want[0], c->s[0], c->s[1], mm_batch(c), c->s[2], c->s[3], c->s[4],
                  (c->flags & CF_TA) != 0, (c->flags & CF_TB) != 0, mm_alpha(c), c->beta);
    if (mm_has_bias(c)) mm_add_bias(c, v[2], want[0]);
    if (a != v[0]) free(a);
}

static void mm_tol_of(const op_case *c, double *const *v, int mode, double *tol);

/* Q8_0, Q4_0 and Q5_0: the formats of qmv_xs (qmv_xs.wgsl) and quant.wgsl's qmv */
static int legacy_q(pxl_dtype dt) { return dt == PXL_Q8_0 || dt == PXL_Q4_0 || dt == PXL_Q5_0; }

/* One row of Q8_0, Q4_0 or Q5_0 on 8-bit A (CF_Q8A) is rounded on a GPU in
 * qmv_xs, which a tuning string (PXL_TUNE: qmv_q8=0, qmv_kernel=q, or
 * qmv_xs with XRB 1 for SwiGLU) may trade for qmv, which takes A as given:
 * under a tuning string either is right (q8a_whole's tolerance). */
static int q8a_maybe_unrounded(const op_case *c, pxl_dtype dt, int64_t M) {
    const char *tune = getenv("PXL_TUNE");
    return (c->flags & CF_Q8A) && legacy_q(dt) && M == 1 && tune && *tune;
}

/* mm_tol_of the product of A as the product sees it (mm_a), plus with
 * CF_Q8A the rounding's slack (q8a_slack; one batch of A and B, trans_b) */
static void mm_tol(const op_case *c, double *const *v, double *const *want, int out, int mode, double *tol) {
    (void)out;
    double *dq = NULL, *a = mm_a(c, v, &dq);
    double *w[3] = {a, v[1], v[mm_ci(c)]};
    mm_tol_of(c, w, mode, tol);
    if (c->op == OP_MATMUL && mm_has_bias(c)) mm_bias_tol(c, v[2], want, mode, tol);
    if (a != v[0]) {
        for (int64_t bi = 0; bi < mm_batch(c); bi++) {
            int64_t M = c->s[2], N = c->s[3], K = c->s[4];
            const double *ab = a + (c->s[0] == 1 ? 0 : bi) * M * K, *bb = v[1] + (c->s[1] == 1 ? 0 : bi) * N * K;
            /* q8a_slack's layout for the one batch */
            int64_t ra = c->s[0] * M, b0 = c->s[0] == 1 ? 0 : bi;
            double *q8 = malloc((size_t)(M * K + M * K / 32) * sizeof *q8);
            memcpy(q8, dq + b0 * M * K, (size_t)(M * K) * sizeof *q8);
            memcpy(q8 + M * K, dq + ra * K + b0 * M * (K / 32), (size_t)(M * K / 32) * sizeof *q8);
            double sc = fabs(mm_alpha(c)) * (mode == TOL_GPU_CPU ? 2.0 : 1.0);
            q8a_slack(ab, q8, bb, M, N, K, c->op == OP_MATMUL_NORM, sc, tol + bi * M * N);
            if (q8a_maybe_unrounded(c, c->dt, M)) q8a_whole(v[0] + b0 * M * K, bb, M, N, K, sc, tol + bi * M * N);
            free(q8);
        }
        free(a);
    }
    free(dq);
}

/*
 * Per output, with S = |alpha| sum_k |a_mk b_kn| + |beta c_mn|:
 *   |got - exact| <= 8 (sqrt(K) + 4) 2^-23 S  on either backend.
 * Both backends sum K f32 products (the GPU in tiles, the CPU in 1 or 4
 * chains; quantized B: per block, with d applied once per block): the
 * worst-case bound is K 2^-24 S, the typical one sqrt(K) 2^-24 S; f16 and
 * quantized weights are exact in f32 (the oracle sees the decoded values).
 * An indexing error is of the order of S itself. GPU against CPU: the sum.
 */
static void mm_tol_of(const op_case *c, double *const *v, int mode, double *tol) {
    int64_t ba = c->s[0], bb = c->s[1], M = c->s[2], N = c->s[3], K = c->s[4], bt = mm_batch(c);
    int ta = (c->flags & CF_TA) != 0, tb = (c->flags & CF_TB) != 0;
    double f = 8.0 * (sqrt((double)K) + 4.0) * U23 * (mode == TOL_GPU_CPU ? 2.0 : 1.0);
    for (int64_t bi = 0; bi < bt; bi++) {
        const double *ab = v[0] + (ba == 1 ? 0 : bi) * M * K, *bbp = v[1] + (bb == 1 ? 0 : bi) * K * N;
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                double s = 0;
                for (int64_t k = 0; k < K; k++)
                    s += fabs(ab[ta ? k * M + m : m * K + k] * bbp[tb ? n * K + k : k * N + n]);
                int64_t i = (bi * M + m) * N + n;
                s = fabs(mm_alpha(c)) * s + (c->beta != 0.0f ? fabs((double)c->beta * v[2][i]) : 0.0);
                tol[i] = f * s + tiny_abs();
            }
    }
}

static void mm_vjp(const op_case *c, double *const *v, const double *g, double **gv) {
    oracle_vjp_matmul(v[0], v[1], g, gv[0], gv[1], c->beta != 0.0f ? gv[2] : NULL, c->s[0], c->s[1], mm_batch(c),
                      c->s[2], c->s[3], c->s[4], (c->flags & CF_TA) != 0, (c->flags & CF_TB) != 0, mm_alpha(c),
                      c->beta);
}

/* ---- row-wise ---------------------------------------------------------------------- */

static int64_t rows_of(const op_case *c) { return case_nelem(c) / c->s[c->ndim - 1]; }
static int64_t len_of(const op_case *c) { return c->s[c->ndim - 1]; }
/* B(L) of the GPU row reductions: elements per lane + tree levels and the final operations */
static double bound_b(int64_t L) { return (double)((L + 255) / 256) + 32.0; }

static void sm_layout(const op_case *c, layout *l) {
    add_in(l, opnd("x", PXL_F32, c->ndim, c->s, 0, -8, 8, -1));
    add_out(l, opnd("y", PXL_F32, c->ndim, c->s, 1, 0, 0, -1));
}

static int64_t sm_R(const op_case *c) { return c->ndim >= 2 ? c->s[c->ndim - 2] : 1; }

static pxl_status sm_call(pxl_ctx *ctx, const op_case *c, pxl_tensor *const *t) {
    return pxl_softmax(ctx, t[0], t[1], c->p, (c->flags & CF_CAUSAL) != 0, c->off);
}

static void sm_oracle(const op_case *c, double *const *v, double **want) {
    oracle_softmax(v[0], want[0], rows_of(c), sm_R(c), len_of(c), c->p, (c->flags & CF_CAUSAL) != 0, c->off);
}

/*
 * CPU: z = scale * x rounded to f32 (moves z - max by up to 2 Z u, Z = max
 * |scale x| of the row), then sums, exp and the division in double and one
 * final rounding: (2^-23 + 2 Z u) |y| (+ tiny for flushed outputs).
 * GPU (the analysis in the history of test_ops_rowwise.c): with u = 2^-24,
 * B(L) = ceil(L / 256) + 32 and Z = max |scale x| of the row,
 *   |got - exact| <= 2^-23 + (B(L) + 2 Z) u |y|:
 * S is n f32 terms per lane plus 8 tree levels, exp and 1/S 3 ULP each, a
 * fused scale * x - max moves the exponent by up to Z u; the 2^-23 covers
 * outputs that underflow. GPU against CPU: the sum of both.
 */
static void sm_tol(const op_case *c, double *const *v, double *const *want, int out, int mode, double *tol) {
    (void)out;
    int64_t rows = rows_of(c), L = len_of(c);
    for (int64_t r = 0; r < rows; r++) {
        double z = 0;
        for (int64_t j = 0; j < L; j++) {
            double a = fabs((double)c->p * v[0][r * L + j]);
            if (isfinite(a) && a > z) z = a;
        }
        for (int64_t j = 0; j < L; j++) {
            double y = fabs(want[0][r * L + j]), tc = (U23 + 2.0 * z * U24) * y + tiny_abs();
            double tg = U23 + (bound_b(L) + 2.0 * z) * U24 * y;
            tol[r * L + j] = mode == TOL_CPU ? tc : mode == TOL_GPU ? tg : tc + tg;
        }
    }
}

/* with CF_SPECIAL: every 7th entry -Inf, and one row entirely -Inf */
static void sm_fixup(const op_case *c, const layout *l, float **x, uint64_t *rng) {
    (void)rng;
    if (!(c->flags & CF_SPECIAL)) return;
    int64_t n = nelem(&l->o[0]), L = len_of(c);
    for (int64_t i = 3; i < n; i += 7) x[0][i] = -INFINITY;
    if (n / L >= 3)
        for (int64_t j = 0; j < L; j++) x[0][2 * L + j] = -INFINITY;
}

static void sm_vjp(const op_case *c, double *const *v, const double *g, double **gv) {
    oracle_vjp_softmax(v[0], g, gv[0], rows_of(c), sm_R(c), len_of(c), c->p, (c->flags & CF_CAUSAL) != 0, c->off);
}

/* norms: x from alpha + beta * [-1, 1) (beta 0: 3) */
static void norm_layout(const op_case *c, layout *l) {
    int64_t L = len_of(c);
    float spread = c->beta != 0.0f ? c->beta : 3.0f;
    add_in(l, opnd("x", PXL_F32, c->ndim, c->s, 0, c->alpha - spread, c->alpha + spread, -1));
    add_in(l, opnd("w", PXL_F32, 1, &L, 0, -2, 2, -1));
    if (c->op == OP_LAYERNORM) add_in(l, opnd("b", PXL_F32, 1, &L, 0, -1, 1, -1));
    add_out(l, opnd("y", PXL_F32, c->ndim, c->s, 1, 0, 0, -1));
}

static pxl_status rms_call(pxl_ctx *ctx, const op_case *c, pxl_tensor *const *t) {
    return pxl_rmsnorm(ctx, t[0], t[1], t[2], c->p);
}

static pxl_status ln_call(pxl_ctx *ctx, const op_case *c, pxl_tensor *const *t) {
    return pxl_layernorm(ctx, t[0], t[1], (c->flags & CF_NO_BIAS) ? NULL : t[2], t[3], c->p);
}

static void rms_oracle(const op_case *c, double *const *v, double **want) {
    oracle_rmsnorm(v[0], v[1], want[0], rows_of(c), len_of(c), c->p);
}

static void ln_oracle(const op_case *c, double *const *v, double **want) {
    oracle_layernorm(v[0], v[1], (c->flags & CF_NO_BIAS) ? NULL : v[2], want[0], rows_of(c), len_of(c), c->p);
}

/*
 * rmsnorm, y = x r w, r = (sum x^2 / L + eps)^-1/2. CPU: double, one
 * rounding: 2^-23 |y|. GPU: B(L) u |y|: the sum of squares (n terms per lane,
 * 8 tree levels), inverseSqrt 2 ULP, the division by L, two products.
 */
static void rms_tol(const op_case *c, double *const *v, double *const *want, int out, int mode, double *tol) {
    (void)v, (void)out;
    int64_t n = case_nelem(c);
    for (int64_t i = 0; i < n; i++) {
        double y = fabs(want[0][i]), tc = U23 * y + tiny_abs(), tg = bound_b(len_of(c)) * U24 * y + 1e-30;
        tol[i] = mode == TOL_CPU ? tc : mode == TOL_GPU ? tg : tc + tg;
    }
}

/*
 * layernorm, y = (x - mu) r w + b. CPU: double: 2^-23 |y| plus 2^-23 Wmax r
 * Xmax for the cancellation in x - mu. GPU: B(L) u (|y| + (1 + k) Wmax r Xmax)
 * per row, Xmax = max |x|, Wmax = max |w|, k = |mu| r + 1 the condition
 * number: Welford's mean is off by (n + 8) u Xmax, its variance by (n + 8) k u
 * relative, and both reach y through |x - mu| r |w| <= 2 Xmax r Wmax.
 */
static void ln_tol(const op_case *c, double *const *v, double *const *want, int out, int mode, double *tol) {
    (void)out;
    int64_t rows = rows_of(c), L = len_of(c);
    double wmax = 0, B = bound_b(L);
    for (int64_t j = 0; j < L; j++) wmax = fmax(wmax, fabs(v[1][j]));
    for (int64_t r = 0; r < rows; r++) {
        const double *x = v[0] + r * L;
        double mu = 0, var = 0, xmax = 0;
        for (int64_t j = 0; j < L; j++) mu += x[j];
        mu /= (double)L;
        for (int64_t j = 0; j < L; j++) {
            var += (x[j] - mu) * (x[j] - mu);
            xmax = fmax(xmax, fabs(x[j]));
        }
        double rstd = 1.0 / sqrt(var / (double)L + (double)c->p), k = fabs(mu) * rstd + 1.0;
        if (!isfinite(k)) k = 0;
        if (!isfinite(rstd)) rstd = 0;
        for (int64_t j = 0; j < L; j++) {
            double y = fabs(want[0][r * L + j]);
            double tc = U23 * (y + wmax * rstd * xmax) + tiny_abs();
            double tg = B * U24 * (y + (1.0 + k) * wmax * rstd * xmax) + 1e-30;
            tol[r * L + j] = mode == TOL_CPU ? tc : mode == TOL_GPU ? tg : tc + tg;
        }
    }
}

/* with CF_SPECIAL and 3+ rows: row 0 zeros, row 1 constant (variance 0) */
static void norm_fixup(const op_case *c, const layout *l, float **x, uint64_t *rng) {
    (void)l, (void)rng;
    if (!(c->flags & CF_SPECIAL) || rows_of(c) < 3) return;
    int64_t L = len_of(c);
    for (int64_t j = 0; j < L; j++) {
        x[0][j] = 0.0f;
        x[0][L + j] = 1.5f;
    }
}

static void rms_vjp(const op_case *c, double *const *v, const double *g, double **gv) {
    oracle_vjp_rmsnorm(v[0], v[1], g, gv[0], gv[1], rows_of(c), len_of(c), c->p);
}

/* argmax and top-k: exact (they only compare) */
static void sel_layout(const op_case *c, layout *l) {
    int64_t rows = rows_of(c), o[2] = {rows, c->k > 0 ? c->k : 1};
    add_in(l, opnd("x", PXL_F32, c->ndim, c->s, 0, -100, 100, c->ndim >= 2 ? 0 : NO_BAD));
    if (c->op == OP_ARGMAX) {
        add_out(l, opnd("idx", PXL_I32, 1, &rows, 1, 0, 0, 0));
    } else {
        add_out(l, opnd("vals", PXL_F32, 2, o, 1, 0, 0, -1));
        add_out(l, opnd("idx", PXL_I32, 2, o, 1, 0, 0, -1));
    }
}

static pxl_status am_call(pxl_ctx *ctx, const op_case *c, pxl_tensor *const *t) {
    if (c->flags & CF_NANLOW) {
        pxl_argmax_options o = {1};
        return pxl_argmax_ext(ctx, t[0], t[1], &o);
    }
    return pxl_argmax(ctx, t[0], t[1]);
}

static pxl_status tk_call(pxl_ctx *ctx, const op_case *c, pxl_tensor *const *t) {
    return pxl_topk(ctx, t[0], c->k, t[1], t[2]);
}

static void am_oracle(const op_case *c, double *const *v, double **want) {
    oracle_argmax(v[0], want[0], rows_of(c), len_of(c), (c->flags & CF_NANLOW) != 0);
}

static void tk_oracle(const op_case *c, double *const *v, double **want) {
    oracle_topk(v[0], want[0], want[1], rows_of(c), len_of(c), c->k);
}

static void exact_tol(const op_case *c, double *const *v, double *const *want, int out, int mode, double *tol) {
    (void)v, (void)want, (void)out, (void)mode;
    (void)c;
    (void)tol; /* the caller zeroes tol */
}

/* CF_SPECIAL with CF_TIES: a mix of NaN, +-0, +-Inf and small integers; rows of all -Inf and of mixed zeros */
static void sel_fixup(const op_case *c, const layout *l, float **x, uint64_t *rng) {
    int64_t n = nelem(&l->o[0]), L = len_of(c);
    /* argmax of rows of 4096 and more (chunks of 1024 on a GPU): row r's one
     * largest value at a chunk's last element, 1023 + 1024 r (at most L - 1) */
    if (c->op == OP_ARGMAX && L >= 4096 && !(c->flags & (CF_TIES | CF_SPECIAL)))
        for (int64_t r = 0; r < n / L; r++) x[0][r * L + (1023 + 1024 * r < L ? 1023 + 1024 * r : L - 1)] = 1000.0f;
    if (!(c->flags & CF_SPECIAL) || !(c->flags & CF_TIES)) return;
    for (int64_t i = 0; i < n; i++) {
        unsigned u = (unsigned)(test_rng(rng) % 20);
        x[0][i] = u == 0 ? NAN : u == 1 ? -0.0f : u == 2 ? 0.0f : u == 3 ? INFINITY : u == 4 ? -INFINITY : x[0][i];
    }
    for (int64_t r = 0; r < n / L; r++) {
        if (r % 3 == 1)
            for (int64_t j = 0; j < L; j++) x[0][r * L + j] = -INFINITY;
        if (r % 3 == 2 && r > 0)
            for (int64_t j = 0; j < L; j++) x[0][r * L + j] = (j % 2) ? 0.0f : -0.0f;
        /* nan_lowest: a row of NaN (index 0), and NaN first in row 0 */
        if ((c->flags & CF_NANLOW) && r % 4 == 3)
            for (int64_t j = 0; j < L; j++) x[0][r * L + j] = NAN;
    }
    if (c->flags & CF_NANLOW) x[0][0] = NAN;
}

/* ---- matmul with the fused RMSNorm, and matmul_swiglu --------------------------------- */

/* a, b, norm, c: the norm is [1, K] when A is 2-D (so that a C of the same
 * shape exercises the overlap checks), [K] otherwise; A from [-2, 2) */
static void mmn_layout(const op_case *c, layout *l) {
    layout m;
    memset(&m, 0, sizeof m);
    mm_layout(c, &m);
    operand a = m.o[0];
    a.lo = -2, a.hi = 2;
    add_in(l, a);
    add_in(l, m.o[1]);
    int64_t K = c->s[4], sn[2] = {1, K};
    add_in(l, opnd("norm", PXL_F32, a.ndim == 2 ? 2 : 1, a.ndim == 2 ? sn : sn + 1, 0, -2, 2, -1));
    if (mm_has_bias(c)) add_in(l, m.o[2]);
    add_out(l, m.o[m.n_in]);
    l->o[l->n_in].init = c->beta != 0.0f;
}

static pxl_status mmn_call(pxl_ctx *ctx, const op_case *c, pxl_tensor *const *t) {
    pxl_matmul_options o = mm_opts(c);
    o.norm = t[2];
    o.norm_eps = c->p;
    if (mm_has_bias(c)) o.bias = t[3];
    return pxl_matmul(ctx, t[0], t[1], t[mm_ci(c)], &o);
}

/* the normalised A, [batch_a * M, K] (rows of A stored [M, K]) */
static double *mmn_norm_a(const op_case *c, double *const *v) {
    int64_t rows = c->s[0] * c->s[2], K = c->s[4];
    double *an = malloc((size_t)(rows * K) * sizeof *an);
    oracle_rmsnorm(v[0], v[2], an, rows, K, (double)c->p);
    return an;
}

static void mmn_oracle(const op_case *c, double *const *v, double **want) {
    double *an = mmn_norm_a(c, v);
    if (c->flags & CF_Q8A) q8a_round(an, c->s[0] * c->s[2], c->s[4], NULL);
    oracle_matmul(an, v[1], v[mm_ci(c)], want[0], c->s[0], c->s[1], mm_batch(c), c->s[2], c->s[3], c->s[4], 0,
                  (c->flags & CF_TB) != 0, mm_alpha(c), c->beta);
    if (mm_has_bias(c)) mm_add_bias(c, v[3], want[0]);
    free(an);
}

/*
 * mm_tol of the product of the normalised A (rounded there with CF_Q8A), plus the error of the
 * normalised values themselves, relative: 2^-23 on the CPU (pxl_rmsnorm in
 * double, one rounding), B(K) u on the GPU (rms_tol), both GPU against CPU.
 */
static void mmn_tol(const op_case *c, double *const *v, double *const *want, int out, int mode, double *tol) {
    double *an = mmn_norm_a(c, v);
    double *w[5] = {an, v[1], NULL, v[3], mm_has_bias(c) ? v[4] : NULL}; /* mm_tol reads A, B and C at mm_ci(c) */
    mm_tol(c, w, want, out, mode, tol);
    int64_t K = c->s[4];
    double g = mode == TOL_CPU ? U23 : mode == TOL_GPU ? bound_b(K) * U24 : U23 + bound_b(K) * U24;
    double f = 8.0 * (sqrt((double)K) + 4.0) * U23 * (mode == TOL_GPU_CPU ? 2.0 : 1.0);
    for (int64_t i = 0; i < mm_batch(c) * c->s[2] * c->s[3]; i++) tol[i] += tol[i] * g / f;
    if (mm_has_bias(c)) mm_bias_tol(c, v[3], want, mode, tol);
    free(an);
}

static void sw_layout(const op_case *c, layout *l) {
    int64_t M = c->s[0], F = c->s[1], K = c->s[2], sa[2] = {M, K}, sw[2] = {F, K}, so[2] = {M, F}, sn[2] = {1, K};
    int q = pxl_dtype_is_quantized(c->dt);
    add_in(l, opnd("a", PXL_F32, 2, sa, 0, -2, 2, -1));
    add_in(l, opnd("w_gate", c->dt, 2, sw, 0, -1, 1, q ? 0 : -1));
    add_in(l, opnd("w_up", c->dt, 2, sw, 0, -1, 1, q ? 0 : -1));
    if (c->flags & CF_NORM) add_in(l, opnd("norm", PXL_F32, 2, sn, 0, -2, 2, -1));
    add_out(l, opnd("out", PXL_F32, 2, so, 1, 0, 0, -1));
}

static pxl_status sw_call(pxl_ctx *ctx, const op_case *c, pxl_tensor *const *t) {
    pxl_matmul_options o;
    memset(&o, 0, sizeof o);
    o.trans_b = 1;
    o.trans_a = (c->flags & CF_TA) != 0; /* refused */
    o.beta = c->beta;                    /* nonzero: refused */
    o.a_q8 = (c->flags & CF_Q8A) != 0;
    int nrm = (c->flags & CF_NORM) != 0;
    if (nrm) o.norm = t[3], o.norm_eps = c->p;
    if (!(c->flags & CF_PACKED)) return pxl_matmul_swiglu(ctx, t[0], t[1], t[2], t[3 + nrm], &o);
    /* both weights in one [2F + 3, K] tensor: up at row 1, gate at row F + 3 (the GPU's one-dispatch path) */
    int64_t F = c->s[1], K = c->s[2], sb[2] = {2 * F + 3, K}, sw[2] = {F, K};
    size_t rb = pxl_dtype_row_bytes(c->dt, K);
    pxl_tensor *base = NULL, *g = NULL, *u = NULL;
    pxl_status s = pxl_tensor_create(ctx, c->dt, 2, sb, &base);
    if (s == PXL_OK) s = pxl_tensor_view(ctx, base, 2, sw, (size_t)(F + 3) * rb, &g);
    if (s == PXL_OK) s = pxl_tensor_view(ctx, base, 2, sw, rb, &u);
    if (s == PXL_OK) s = pxl_copy(ctx, t[1], g);
    if (s == PXL_OK) s = pxl_copy(ctx, t[2], u);
    if (s == PXL_OK) s = pxl_matmul_swiglu(ctx, t[0], g, u, t[3 + nrm], &o);
    pxl_tensor_free(g), pxl_tensor_free(u), pxl_tensor_free(base);
    return s;
}

/* g = A' . Wg^T and u = A' . Wu^T, [M, F], A' = A or its rmsnorm (rounded
 * with CF_Q8A); sg, su (NULL: not wanted): the sums of |products|, and the
 * rounding's slack (q8a_slack) added to lg and lu (zeroed here) */
static void sw_products(const op_case *c, double *const *v, double *g, double *u, double *sg, double *su, double *lg,
                        double *lu) {
    int64_t M = c->s[0], F = c->s[1], K = c->s[2];
    double *an = malloc((size_t)(M * K) * sizeof *an), *dq = NULL;
    if (c->flags & CF_NORM) oracle_rmsnorm(v[0], v[3], an, M, K, (double)c->p);
    else memcpy(an, v[0], (size_t)(M * K) * sizeof *an);
    if (lg) memset(lg, 0, (size_t)(M * F) * sizeof *lg), memset(lu, 0, (size_t)(M * F) * sizeof *lu);
    if (lg && q8a_maybe_unrounded(c, c->dt, M)) q8a_whole(an, v[1], M, F, K, 1.0, lg), q8a_whole(an, v[2], M, F, K, 1.0, lu);
    if (c->flags & CF_Q8A) {
        dq = malloc((size_t)(M * K + M * K / 32) * sizeof *dq);
        q8a_round(an, M, K, dq);
    }
    if (lg && dq) {
        int nrm = (c->flags & CF_NORM) != 0;
        q8a_slack(an, dq, v[1], M, F, K, nrm, 1.0, lg), q8a_slack(an, dq, v[2], M, F, K, nrm, 1.0, lu);
    }
    free(dq);
    for (int64_t m = 0; m < M; m++)
        for (int64_t f = 0; f < F; f++) {
            double a = 0, b = 0, sa = 0, sb = 0;
            for (int64_t k = 0; k < K; k++) {
                double x = an[m * K + k];
                a += x * v[1][f * K + k];
                b += x * v[2][f * K + k];
                sa += fabs(x * v[1][f * K + k]);
                sb += fabs(x * v[2][f * K + k]);
            }
            g[m * F + f] = a, u[m * F + f] = b;
            if (sg) sg[m * F + f] = sa, su[m * F + f] = sb;
        }
    free(an);
}

static void sw_oracle(const op_case *c, double *const *v, double **want) {
    int64_t n = c->s[0] * c->s[1];
    double *g = malloc((size_t)n * sizeof *g), *u = malloc((size_t)n * sizeof *u);
    sw_products(c, v, g, u, NULL, NULL, NULL, NULL);
    for (int64_t i = 0; i < n; i++) want[0][i] = oracle_silu(g[i]) * u[i];
    free(g), free(u);
}

/*
 * out = silu(g) u with g and u each off by e = (mm_tol's factor + the norm's
 * relative error) times their sum of |products| S: |silu'| <= 1.1, so
 * 1.1 |u| e_g + |silu(g)| e_u + e_g e_u, plus ew_tol's swiglu term for the
 * f32 exp and the products.
 */
static void sw_tol(const op_case *c, double *const *v, double *const *want, int out, int mode, double *tol) {
    (void)want, (void)out;
    int64_t n = c->s[0] * c->s[1], K = c->s[2];
    double *g = malloc((size_t)n * sizeof *g), *u = malloc((size_t)n * sizeof *u);
    double *sg = malloc((size_t)n * sizeof *sg), *su = malloc((size_t)n * sizeof *su);
    double *lg = malloc((size_t)n * sizeof *lg), *lu = malloc((size_t)n * sizeof *lu);
    sw_products(c, v, g, u, sg, su, lg, lu);
    double two = mode == TOL_GPU_CPU ? 2.0 : 1.0;
    double f = 8.0 * (sqrt((double)K) + 4.0) * U23 * two;
    if (c->flags & CF_NORM) f += mode == TOL_CPU ? U23 : mode == TOL_GPU ? bound_b(K) * U24 : U23 + bound_b(K) * U24;
    for (int64_t i = 0; i < n; i++) {
        double eg = f * sg[i] + tiny_abs() + two * lg[i], eu = f * su[i] + tiny_abs() + two * lu[i];
        double y = fabs(oracle_silu(g[i]) * u[i]);
        tol[i] = 1.1 * fabs(u[i]) * eg + fabs(oracle_silu(g[i])) * eu + eg * eu +
                 two * (1e-6 + 4.0 * fabs(g[i]) * U23 + 32.0 * U23 * y);
    }
    free(g), free(u), free(sg), free(su), free(lg), free(lu);
}

/* ---- matmul_multi: two products of one A ------------------------------------------------ */

static pxl_dtype mmm_dt(const op_case *c, int i) { return i == 0 ? c->dt : (pxl_dtype)c->k; }
static int64_t mmm_n(const op_case *c, int i) { return c->s[1 + i]; }

static void mmm_layout(const op_case *c, layout *l) {
    int64_t M = c->s[0], K = c->s[3], sa[2] = {M, K}, sn[2] = {1, K};
    add_in(l, opnd("a", PXL_F32, 2, sa, 0, -2, 2, -1));
    for (int i = 0; i < 2; i++) {
        int64_t sb[2] = {mmm_n(c, i), K};
        add_in(l, opnd(i ? "b1" : "b0", mmm_dt(c, i), 2, sb, 0, -1, 1, pxl_dtype_is_quantized(mmm_dt(c, i)) ? 0 : -1));
    }
    if (c->flags & CF_NORM) {
        operand nw = opnd("norm", PXL_F32, 2, sn, 0, -2, 2, -1);
        nw.optional = 1;
        add_in(l, nw);
    }
    for (int i = 0; i < 2 && (c->flags & CF_BIAS); i++) {
        int64_t n = mmm_n(c, i);
        operand bias = opnd(i ? "bias1" : "bias0", PXL_F32, 1, &n, 0, -1, 1, -1);
        bias.optional = 1;
        add_in(l, bias);
    }
    for (int i = 0; i < 2; i++) {
        int64_t so[2] = {M, mmm_n(c, i)};
        add_out(l, opnd(i ? "c1" : "c0", PXL_F32, 2, so, 1, -1, 1, -1));
        l->o[l->n_in + i].init = c->beta != 0.0f;
    }
}

/* The operands' indices: the norm at 3 (CF_NORM), the bias rows after it
 * (CF_BIAS; with CF_NO_BIAS the first product's is passed as NULL), then
 * c0 and c1. */
static int mmm_si(const op_case *c) { return 3 + ((c->flags & CF_NORM) != 0); }
static int mmm_ci(const op_case *c) { return mmm_si(c) + ((c->flags & CF_BIAS) ? 2 : 0); }
static int mmm_has_bias(const op_case *c, int i) {
    return (c->flags & CF_BIAS) && !(i == 0 && (c->flags & CF_NO_BIAS));
}

#define MMM_SENTINEL 12345.0f

/* CF_PACKED: c0 and c1 as views of one tensor [3 + M N0 + 5 + M N1 + 2] filled
 * with MMM_SENTINEL (c0 from element 3, c1 five after it), their initial
 * values copied in and the results copied out; a sentinel changed fails.
 * The bias rows (bias[i], NULL or not) likewise as views of one tensor
 * [1 + N0 + 2 + N1] (the GPU's one-dispatch pairs take them so). */
static pxl_status mmm_packed(pxl_ctx *ctx, const op_case *c, const pxl_tensor *a, const pxl_tensor *const *b,
                             pxl_tensor *const *out, const pxl_tensor *const *bias, const pxl_matmul_options *o) {
    int64_t M = c->s[0], N0 = c->s[1], N1 = c->s[2], total = 3 + M * N0 + 5 + M * N1 + 2, nb = 1 + N0 + 2 + N1;
    int64_t s0[2] = {M, N0}, s1[2] = {M, N1};
    float *host = malloc((size_t)total * sizeof *host);
    pxl_tensor *base = NULL, *v[2] = {NULL, NULL}, *bb = NULL, *u[2] = {NULL, NULL};
    for (int64_t i = 0; i < total; i++) host[i] = MMM_SENTINEL;
    pxl_status s = pxl_tensor_create(ctx, PXL_F32, 1, &total, &base);
    if (s == PXL_OK) s = pxl_tensor_write(ctx, base, host, (size_t)total * sizeof *host);
    if (s == PXL_OK) s = pxl_tensor_view(ctx, base, 2, s0, 3 * sizeof(float), &v[0]);
    if (s == PXL_OK) s = pxl_tensor_view(ctx, base, 2, s1, (size_t)(3 + M * N0 + 5) * sizeof(float), &v[1]);
    for (int i = 0; i < 2 && s == PXL_OK && o->beta != 0.0f; i++) s = pxl_copy(ctx, out[i], v[i]);
    if (s == PXL_OK && bias) s = pxl_tensor_create(ctx, PXL_F32, 1, &nb, &bb);
    for (int i = 0; i < 2 && s == PXL_OK && bias; i++) {
        if (!bias[i]) continue;
        s = pxl_tensor_view(ctx, bb, 1, i ? &N1 : &N0, (size_t)(i ? 1 + N0 + 2 : 1) * sizeof(float), &u[i]);
        if (s == PXL_OK) s = pxl_copy(ctx, bias[i], u[i]);
    }
    const pxl_tensor *ub[2] = {u[0], u[1]};
    if (s == PXL_OK) s = pxl_matmul_multi(ctx, a, 2, b, v, bias ? ub : NULL, o);
    for (int i = 0; i < 2 && s == PXL_OK; i++) s = pxl_copy(ctx, v[i], out[i]);
    if (s == PXL_OK) s = pxl_tensor_read(ctx, base, host, (size_t)total * sizeof *host);
    for (int64_t i = 0; i < total && s == PXL_OK; i++) {
        int in0 = i >= 3 && i < 3 + M * N0, in1 = i >= 8 + M * N0 && i < 8 + M * N0 + M * N1;
        if (!in0 && !in1 && host[i] != MMM_SENTINEL) s = PXL_ERR_GPU; /* written outside c0 and c1 */
    }
    pxl_tensor_free(u[0]), pxl_tensor_free(u[1]), pxl_tensor_free(bb);
    pxl_tensor_free(v[0]), pxl_tensor_free(v[1]), pxl_tensor_free(base);
    free(host);
    return s;
}

/* CF_ONEB: b0 and b1 copied into rows 0 .. N0 - 1 and N0 .. N0 + N1 - 1 of one
 * tensor of their dtype (with CF_THREE b1 again after them), the products
 * run on views of those rows; CF_THREE's third output, made from c1's initial
 * values, must hold c1's floats bit for bit. */
static pxl_status mmm_oneb(pxl_ctx *ctx, const op_case *c, const pxl_tensor *a, const pxl_tensor *const *b,
                           pxl_tensor *const *out, const pxl_matmul_options *o) {
    int three = (c->flags & CF_THREE) != 0;
    int64_t M = c->s[0], N0 = c->s[1], N1 = c->s[2], K = c->s[3], rows = N0 + N1 + (three ? N1 : 0);
    int64_t sw[2] = {rows, K}, s0[2] = {N0, K}, s1[2] = {N1, K}, so[2] = {M, N1};
    size_t rb = pxl_dtype_row_bytes(c->dt, K);
    pxl_tensor *w = NULL, *v[3] = {NULL, NULL, NULL}, *c2 = NULL;
    pxl_status s = pxl_tensor_create(ctx, c->dt, 2, sw, &w);
    if (s == PXL_OK) s = pxl_tensor_view(ctx, w, 2, s0, 0, &v[0]);
    if (s == PXL_OK) s = pxl_tensor_view(ctx, w, 2, s1, (size_t)N0 * rb, &v[1]);
    if (s == PXL_OK && three) s = pxl_tensor_view(ctx, w, 2, s1, (size_t)(N0 + N1) * rb, &v[2]);
    if (s == PXL_OK) s = pxl_copy(ctx, b[0], v[0]);
    if (s == PXL_OK) s = pxl_copy(ctx, b[1], v[1]);
    if (s == PXL_OK && three) s = pxl_copy(ctx, b[1], v[2]);
    if (s == PXL_OK && three) s = pxl_tensor_create(ctx, PXL_F32, 2, so, &c2);
    if (s == PXL_OK && three && o->beta != 0.0f) s = pxl_copy(ctx, out[1], c2);
    const pxl_tensor *vb[3] = {v[0], v[1], v[2]};
    pxl_tensor *vc[3] = {out[0], out[1], c2};
    if (s == PXL_OK) s = pxl_matmul_multi(ctx, a, three ? 3 : 2, vb, vc, NULL, o);
    if (s == PXL_OK && three) { /* the third product's floats are the second's */
        size_t n = (size_t)(M * N1);
        float *h1 = malloc(n * sizeof *h1), *h2 = malloc(n * sizeof *h2);
        s = h1 && h2 ? pxl_tensor_read(ctx, out[1], h1, n * sizeof *h1) : PXL_ERR_OUT_OF_MEMORY;
        if (s == PXL_OK) s = pxl_tensor_read(ctx, c2, h2, n * sizeof *h2);
        if (s == PXL_OK && memcmp(h1, h2, n * sizeof *h1)) s = PXL_ERR_GPU;
        free(h1), free(h2);
    }
    pxl_tensor_free(c2), pxl_tensor_free(v[2]), pxl_tensor_free(v[1]), pxl_tensor_free(v[0]), pxl_tensor_free(w);
    return s;
}

static pxl_status mmm_call(pxl_ctx *ctx, const op_case *c, pxl_tensor *const *t) {
    pxl_matmul_options o;
    memset(&o, 0, sizeof o);
    o.trans_b = 1;
    o.trans_a = (c->flags & CF_TA) != 0; /* refused for quantized weights */
    o.alpha = c->alpha;
    o.beta = c->beta;
    o.a_q8 = (c->flags & CF_Q8A) != 0;
    if (c->flags & CF_NORM) o.norm = t[3], o.norm_eps = c->p;
    const pxl_tensor *b[2] = {t[1], t[2]}, *bias[2] = {NULL, NULL}, *const *bs = NULL;
    for (int i = 0; i < 2 && (c->flags & CF_BIAS); i++) bias[i] = mmm_has_bias(c, i) ? t[mmm_si(c) + i] : NULL;
    if (c->flags & CF_BIAS) bs = bias;
    pxl_tensor *out[2] = {t[mmm_ci(c)], t[mmm_ci(c) + 1]};
    if (c->off) return pxl_matmul_multi(ctx, t[0], (size_t)c->off, b, out, bs, &o);
    if (c->flags & CF_ONEB) return mmm_oneb(ctx, c, t[0], b, out, &o);
    if (c->flags & CF_PACKED) return mmm_packed(ctx, c, t[0], b, out, bs, &o);
    return pxl_matmul_multi(ctx, t[0], 2, b, out, bs, &o);
}

/* A as product i sees it, [M, K]: normalised with CF_NORM, rounded with
 * CF_Q8A where every backend rounds (Q4_K, Q5_K; Q8_0, Q4_0 and Q5_0 with
 * one row of K from 512 to 16384, qmv_pair's range with the workgroups of
 * 256 that every WebGPU device allows, unless a tuning string may trade
 * it away: q8a_maybe_unrounded; dq: q8a_round's slack, when asked); the
 * caller frees both */
static double *mmm_a(const op_case *c, double *const *v, int i, double **dq) {
    int64_t M = c->s[0], K = c->s[3];
    double *an = malloc((size_t)(M * K) * sizeof *an);
    if (c->flags & CF_NORM) oracle_rmsnorm(v[0], v[3], an, M, K, (double)c->p);
    else memcpy(an, v[0], (size_t)(M * K) * sizeof *an);
    if (dq) *dq = NULL;
    pxl_dtype dt = mmm_dt(c, i);
    int legacy_rounds = legacy_q(dt) && M == 1 && K >= 512 && K <= 16384 && !q8a_maybe_unrounded(c, dt, M);
    if ((c->flags & CF_Q8A) && (dt == PXL_Q4_K || dt == PXL_Q5_K || legacy_rounds)) {
        if (dq) *dq = malloc((size_t)(M * K + M * K / 32) * sizeof **dq);
        q8a_round(an, M, K, dq ? *dq : NULL);
    }
    return an;
}

static void mmm_oracle(const op_case *c, double *const *v, double **want) {
    for (int i = 0; i < 2; i++) {
        double *an = mmm_a(c, v, i, NULL);
        int64_t N = mmm_n(c, i);
        oracle_matmul(an, v[1 + i], v[mmm_ci(c) + i], want[i], 1, 1, 1, c->s[0], N, c->s[3], 0, 1, mm_alpha(c),
                      c->beta);
        if (mmm_has_bias(c, i))
            for (int64_t m = 0; m < c->s[0]; m++)
                for (int64_t n = 0; n < N; n++) want[i][m * N + n] += v[mmm_si(c) + i][n];
        free(an);
    }
}

/*
 * mm_tol_of's bound on the product of A as product `out` sees it, the
 * norm's error as mmn_tol adds it, and with CF_Q8A: the rounding's slack
 * (q8a_slack) for a product that every backend rounds (mmm_a); for the
 * others, the rounding's whole error (q8a_whole): the CPU rounds every
 * format, a GPU's one-row Q6_K kernels only for more than 1024 rows (kmv6q;
 * kmv6 takes A as given).
 */
static void mmm_tol(const op_case *c, double *const *v, double *const *want, int out, int mode, double *tol) {
    int64_t M = c->s[0], N = mmm_n(c, out), K = c->s[3];
    int nrm = (c->flags & CF_NORM) != 0;
    double two = mode == TOL_GPU_CPU ? 2.0 : 1.0, al = fabs(mm_alpha(c));
    double *dq = NULL, *an = mmm_a(c, v, out, &dq);
    const double *b = v[1 + out], *c0 = v[mmm_ci(c) + out];
    double f = 8.0 * (sqrt((double)K) + 4.0) * U23 * two;
    if (nrm) f += mode == TOL_CPU ? U23 : mode == TOL_GPU ? bound_b(K) * U24 : U23 + bound_b(K) * U24;
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double s = 0;
            for (int64_t k = 0; k < K; k++) s += fabs(an[m * K + k] * b[n * K + k]);
            s = al * s + (c->beta != 0.0f ? fabs((double)c->beta * c0[m * N + n]) : 0.0);
            tol[m * N + n] = f * s + tiny_abs();
        }
    if (dq) q8a_slack(an, dq, b, M, N, K, nrm, al * two, tol);
    else if (c->flags & CF_Q8A) q8a_whole(an, b, M, N, K, al, tol);
    if (mmm_has_bias(c, out)) /* the bias's one addition (mm_bias_tol) */
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++)
                tol[m * N + n] += U23 * two * (fabs(want[out][m * N + n]) + fabs(v[mmm_si(c) + out][n]));
    free(an), free(dq);
}

/* ---- element-wise ------------------------------------------------------------------- */

static void ew_layout(const op_case *c, layout *l) {
    int64_t L = len_of(c);
    float r0 = (c->flags & CF_WIDE) ? 12.0f : 3.0f;
    add_in(l, opnd(c->op == OP_SWIGLU ? "gate" : c->op == OP_ADD || c->op == OP_MUL ? "a" : "x", PXL_F32, c->ndim,
                   c->s, 0, -r0, r0, -1));
    if (c->op == OP_SWIGLU) add_in(l, opnd("up", PXL_F32, c->ndim, c->s, 0, -3, 3, -1));
    if (c->op == OP_ADD || c->op == OP_MUL) {
        if (c->flags & CF_BCAST) add_in(l, opnd("b", PXL_F32, 1, &L, 0, -2, 2, -1));
        else add_in(l, opnd("b", PXL_F32, c->ndim, c->s, 0, -3, 3, -1));
    }
    add_out(l, opnd("y", PXL_F32, c->ndim, c->s, 1, 0, 0, -1));
}

static pxl_status ew_call(pxl_ctx *ctx, const op_case *c, pxl_tensor *const *t) {
    switch (c->op) {
    case OP_GELU:
        return pxl_gelu(ctx, t[0], t[1], c->k ? (pxl_gelu_form)c->k : (c->flags & CF_ERF) ? PXL_GELU_ERF : PXL_GELU_TANH);
    case OP_SILU: return pxl_silu(ctx, t[0], t[1]);
    case OP_SCALE: return pxl_scale(ctx, t[0], c->p, t[1]);
    case OP_SWIGLU: return pxl_swiglu(ctx, t[0], t[1], t[2]);
    case OP_ADD: return pxl_add(ctx, t[0], t[1], t[2]);
    default: return pxl_mul(ctx, t[0], t[1], t[2]);
    }
}

static void ew_oracle(const op_case *c, double *const *v, double **want) {
    int64_t n = case_nelem(c);
    if (c->op == OP_ADD || c->op == OP_MUL) {
        oracle_binary(v[0], v[1], want[0], n, (c->flags & CF_BCAST) ? len_of(c) : 0, c->op == OP_MUL);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        double x = v[0][i];
        switch (c->op) {
        case OP_GELU: want[0][i] = (c->flags & CF_ERF) ? oracle_gelu_erf(x) : oracle_gelu_tanh(x); break;
        case OP_SILU: want[0][i] = oracle_silu(x); break;
        case OP_SCALE: want[0][i] = (double)c->p * x; break;
        default: want[0][i] = oracle_silu(x) * v[1][i]; break;
        }
    }
}

/*
 * add, mul, scale: one IEEE operation, correctly rounded on both backends:
 * 2^-24 |y| (+ tiny), and GPU against CPU exactly equal.
 * gelu, silu, swiglu: f32 exp/tanh/erf: 32 ULP relative (WGSL's exp is
 * allowed 3 + 2|x| ULP, the GPU erf is an approximation within 1.2e-7) plus
 * 1e-6 + 4 |x| 2^-23 absolute: where 1 + tanh (or 1 + erf) cancels, the error
 * of the f32 tanh near -1 (1 ULP of 1) is multiplied by x / 2.
 */
static void ew_tol(const op_case *c, double *const *v, double *const *want, int out, int mode, double *tol) {
    (void)out;
    int64_t n = case_nelem(c);
    int exact = c->op == OP_ADD || c->op == OP_MUL || c->op == OP_SCALE;
    for (int64_t i = 0; i < n; i++) {
        double y = fabs(want[0][i]);
        if (exact) tol[i] = mode == TOL_GPU_CPU ? 0.0 : U24 * y + 0x1p-149;
        else tol[i] = (mode == TOL_GPU_CPU ? 2.0 : 1.0) * (1e-6 + 4.0 * fabs(v[0][i]) * U23 + 32.0 * U23 * y);
    }
}

static void ew_vjp(const op_case *c, double *const *v, const double *g, double **gv) {
    int64_t n = case_nelem(c);
    switch (c->op) {
    case OP_GELU: oracle_vjp_unary((c->flags & CF_ERF) ? 1 : 0, v[0], g, gv[0], n); break;
    case OP_SILU: oracle_vjp_unary(2, v[0], g, gv[0], n); break;
    case OP_SCALE:
        for (int64_t i = 0; i < n; i++) gv[0][i] = (double)c->p * g[i];
        break;
    case OP_SWIGLU: oracle_vjp_swiglu(v[0], v[1], g, gv[0], gv[1], n); break;
    default:
        oracle_vjp_binary(v[0], v[1], g, gv[0], gv[1], n, (c->flags & CF_BCAST) ? len_of(c) : 0, c->op == OP_MUL);
        break;
    }
}

/* ---- embedding ---------------------------------------------------------------------- */

static void emb_layout(const op_case *c, layout *l) {
    int64_t st[2] = {c->s[0], c->s[1]}, so[2] = {c->s[2], c->s[1]};
    add_in(l, opnd("table", c->dt, 2, st, 0, -2, 2, pxl_dtype_is_quantized(c->dt) ? NO_BAD : -1));
    add_in(l, opnd("ids", PXL_I32, 1, &c->s[2], 0, 0, (float)c->s[0], 0));
    add_out(l, opnd("out", PXL_F32, 2, so, 1, 0, 0, -1));
}

static pxl_status emb_call(pxl_ctx *ctx, const op_case *c, pxl_tensor *const *t) {
    (void)c;
    return pxl_embedding(ctx, t[0], t[1], t[2]);
}

static void emb_oracle(const op_case *c, double *const *v, double **want) {
    oracle_embedding(v[0], v[1], want[0], c->s[0], c->s[2], c->s[1]);
}

/* with CF_SPECIAL: ids V and -1 (rows of NaN on every backend) */
static void emb_fixup(const op_case *c, const layout *l, float **x, uint64_t *rng) {
    (void)l, (void)rng;
    if ((c->flags & CF_SPECIAL) && c->s[2] >= 3) x[1][1] = (float)c->s[0], x[1][2] = -1.0f;
}

/* exact (the table's values as pxl_dequantize decodes them), except that a
 * GPU may fuse Q4_K's, Q5_K's and Q2_K's (d sc) q - dmin m, and Q4_1's and Q5_1's
 * d q + m, into one rounding: 1e-6 there */
static void emb_tol(const op_case *c, double *const *v, double *const *want, int out, int mode, double *tol) {
    (void)v, (void)out;
    int64_t n = c->s[2] * c->s[1];
    int fused = c->dt == PXL_Q4_K || c->dt == PXL_Q5_K || c->dt == PXL_Q4_1 || c->dt == PXL_Q5_1 || c->dt == PXL_Q2_K;
    for (int64_t i = 0; i < n; i++) tol[i] = (fused && mode != TOL_CPU) ? 1e-6 * (1.0 + fabs(want[0][i])) : 0.0;
}

/* ---- rope --------------------------------------------------------------------------- */

static void rope_layout(const op_case *c, layout *l) {
    add_in(l, opnd("x", PXL_F32, 3, c->s, 0, -1, 1, -1));
    add_out(l, opnd("y", PXL_F32, 3, c->s, 1, 0, 0, -1));
}

static pxl_rope_layout rope_lay(const op_case *c) {
    return c->k ? (pxl_rope_layout)c->k : (c->flags & CF_HALVES) ? PXL_ROPE_HALVES : PXL_ROPE_ADJACENT;
}

static pxl_status rope_call(pxl_ctx *ctx, const op_case *c, pxl_tensor *const *t) {
    if (c->alpha == 0.0f) return pxl_rope(ctx, t[0], t[1], c->off, c->p, rope_lay(c));
    pxl_rope_options o = {c->p, rope_lay(c), c->alpha, NULL};
    return pxl_rope_ext(ctx, t[0], t[1], c->off, &o);
}

static double rope_fs(const op_case *c) { return c->alpha == 0.0f ? 1.0 : (double)c->alpha; }

static void rope_oracle(const op_case *c, double *const *v, double **want) {
    oracle_rope_ext(v[0], want[0], c->s[0], c->s[1], c->s[2], c->off, c->p, (c->flags & CF_HALVES) != 0, rope_fs(c),
                    NULL);
}

/* rope_ext: x, freq_factors [D/2] (0.5 to 40: both sides of 1), y */
static void rope_ext_layout(const op_case *c, layout *l) {
    int64_t half = c->s[2] / 2;
    add_in(l, opnd("x", PXL_F32, 3, c->s, 0, -1, 1, -1));
    add_in(l, opnd("freq_factors", PXL_F32, 1, &half, 0, 0.5f, 40.0f, -1));
    add_out(l, opnd("y", PXL_F32, 3, c->s, 1, 0, 0, -1));
}

static pxl_status rope_ext_call(pxl_ctx *ctx, const op_case *c, pxl_tensor *const *t) {
    pxl_rope_options o = {c->p, rope_lay(c), c->alpha, t[1]};
    return pxl_rope_ext(ctx, t[0], t[2], c->off, &o);
}

static void rope_ext_oracle(const op_case *c, double *const *v, double **want) {
    oracle_rope_ext(v[0], want[0], c->s[0], c->s[1], c->s[2], c->off, c->p, (c->flags & CF_HALVES) != 0, rope_fs(c),
                    v[1]);
}

/*
 * Both backends turn pair i by pos * theta'_i with theta'_i an f32: theta_i
 * takes at most 3 roundings, freq_scale and the factor one each (rope.c), so
 * 6 2^-24 relative bounds them all, and against the oracle's exact
 * base^(-2i/D) freq_scale / factor_i the angle is off by |pos| theta'_i
 * 6 2^-24, which moves the pair by that times |a| + |b|. On top: CPU the final
 * rounding (2^-23); GPU its exact integer range reduction, f32 polynomials
 * and rotation, < 4e-7 for inputs in [-1, 1), given 1e-6. GPU against CPU
 * (the same theta'): 1e-6.
 */
static void rope_tol_thd(const op_case *c, int64_t T, int64_t H, int64_t D, const double *x, const double *ff, int mode,
                         double *tol) {
    for (int64_t t = 0; t < T; t++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t i = 0; i < D / 2; i++) {
                int64_t row = (t * H + h) * D;
                int64_t ia = row + ((c->flags & CF_HALVES) ? i : 2 * i), ib = row + ((c->flags & CF_HALVES) ? i + D / 2 : 2 * i + 1);
                double mag = fabs(x[ia]) + fabs(x[ib]);
                double theta = pow((double)c->p, -2.0 * (double)i / (double)D) * rope_fs(c) / (ff ? ff[i] : 1.0);
                double ang = fabs((double)(c->off + t)) * theta * 6.0 * U24;
                double tv = mode == TOL_GPU_CPU ? 1e-6 : mag * (ang + U23) + (mode == TOL_GPU ? 1e-6 : tiny_abs());
                tol[ia] = tol[ib] = tv;
            }
}

static void rope_tol_ff(const op_case *c, const double *x, const double *ff, int mode, double *tol) {
    rope_tol_thd(c, c->s[0], c->s[1], c->s[2], x, ff, mode, tol);
}

static void rope_tol(const op_case *c, double *const *v, double *const *want, int out, int mode, double *tol) {
    (void)want, (void)out;
    rope_tol_ff(c, v[0], NULL, mode, tol);
}

static void rope_ext_tol(const op_case *c, double *const *v, double *const *want, int out, int mode, double *tol) {
    (void)want, (void)out;
    rope_tol_ff(c, v[0], v[1], mode, tol);
}

/* ---- rope_kv ------------------------------------------------------------------------ */

static pxl_tensor *new_tensor(pxl_ctx *ctx, pxl_dtype dt, int ndim, const int64_t *shape);
static void *read_all(pxl_ctx *ctx, const pxl_tensor *t, size_t n);

/* inputs k [T, Hkv, D], v [T, Hkv * D], freq_factors (rope_kv_ff); outputs q [T, Hq, D] (written with
 * data first: it is turned in place), k_out, v_out */
static void rkv_layout(const op_case *c, layout *l) {
    int64_t T = c->s[0], Hq = c->s[1], Hkv = c->s[2], D = c->s[3], half = D / 2;
    int64_t sq[3] = {T, Hq, D}, sk[3] = {T, Hkv, D}, sv[2] = {T, Hkv * D};
    pxl_dtype vd = (c->flags & CF_V32) ? PXL_F32 : c->dt;
    add_in(l, opnd("k", PXL_F32, 3, sk, 0, -1, 1, -1));
    add_in(l, opnd("v", PXL_F32, 2, sv, 0, -1, 1, -1));
    if (c->op == OP_ROPE_KV_FF) add_in(l, opnd("freq_factors", PXL_F32, 1, &half, 0, 0.5f, 40.0f, -1));
    add_out(l, opnd("q", PXL_F32, 3, sq, 1, -1, 1, -1));
    l->o[l->n_in].init = 1;
    add_out(l, opnd("k_out", c->dt, 3, sk, 1, 0, 0, -1));
    add_out(l, opnd("v_out", vd, 2, sv, 1, 0, 0, -1));
}

static pxl_rope_options rkv_opts(const op_case *c, pxl_tensor *const *t) {
    pxl_rope_options o = {c->p, rope_lay(c), c->alpha, c->op == OP_ROPE_KV_FF ? t[2] : NULL};
    return o;
}

/* the call's results, and what pxl_rope_ext, pxl_convert and pxl_copy make of the same inputs, as the
 * one-token path of src/llm/model.c did before pxl_rope_kv: they must agree bit for bit */
typedef struct rkv_twin {
    pxl_tensor *q, *k, *ko, *vo;
    int ok;
} rkv_twin;

static void rkv_twin_make(pxl_ctx *ctx, const op_case *c, pxl_tensor *const *t, rkv_twin *w) {
    int ni = c->op == OP_ROPE_KV_FF ? 3 : 2;
    pxl_tensor *q = t[ni], *k = t[0], *v = t[1], *ko = t[ni + 1], *vo = t[ni + 2];
    pxl_rope_options o = rkv_opts(c, t);
    int64_t sq[3] = {pxl_tensor_dim(q, 0), pxl_tensor_dim(q, 1), pxl_tensor_dim(q, 2)};
    int64_t sk[3] = {pxl_tensor_dim(k, 0), pxl_tensor_dim(k, 1), pxl_tensor_dim(k, 2)};
    int64_t sv[2] = {pxl_tensor_dim(v, 0), pxl_tensor_dim(v, 1)};
    memset(w, 0, sizeof *w);
    w->q = new_tensor(ctx, PXL_F32, 3, sq);
    w->k = new_tensor(ctx, PXL_F32, 3, sk);
    w->ko = new_tensor(ctx, pxl_tensor_dtype(ko), 3, sk);
    w->vo = new_tensor(ctx, pxl_tensor_dtype(vo), 2, sv);
    pxl_status s = w->q && w->k && w->ko && w->vo ? PXL_OK : PXL_ERR_INVALID_ARG;
    if (s == PXL_OK) s = pxl_copy(ctx, q, w->q);
    if (s == PXL_OK) s = pxl_rope_ext(ctx, w->q, w->q, c->off, &o);
    if (pxl_tensor_dtype(ko) == PXL_F32) {
        if (s == PXL_OK) s = pxl_rope_ext(ctx, k, w->ko, c->off, &o);
    } else {
        if (s == PXL_OK) s = pxl_copy(ctx, k, w->k);
        if (s == PXL_OK) s = pxl_rope_ext(ctx, w->k, w->k, c->off, &o);
        if (s == PXL_OK) s = pxl_convert(ctx, w->k, w->ko);
    }
    if (s == PXL_OK) s = pxl_tensor_dtype(vo) == PXL_F32 ? pxl_copy(ctx, v, w->vo) : pxl_convert(ctx, v, w->vo);
    CHECK_MSG(s == PXL_OK, "rope_kv twin: %s", pxl_ctx_error(ctx));
    w->ok = s == PXL_OK;
}

static void rkv_twin_check(pxl_ctx *ctx, pxl_tensor *got, pxl_tensor *want, const char *name) {
    size_t n = pxl_tensor_bytes(want);
    uint8_t *a = read_all(ctx, got, n), *b = read_all(ctx, want, n);
    size_t diff = 0;
    for (size_t i = 0; i < n; i++) diff += a[i] != b[i];
    CHECK_MSG(diff == 0, "pxl_rope_kv on %s: %s differs from pxl_rope_ext + pxl_convert / pxl_copy in %zu of %zu bytes",
              pxl_ctx_backend(ctx) == PXL_BACKEND_GPU ? "gpu" : "cpu", name, diff, n);
    free(a), free(b);
}

static void rkv_twin_free(rkv_twin *w) {
    pxl_tensor_free(w->q), pxl_tensor_free(w->k), pxl_tensor_free(w->ko), pxl_tensor_free(w->vo);
}

/* CF_PACKED: copies of q, k and v back to back in one tensor, as the fused QKV product leaves them
 * (CF_VIEW: 3 elements in, so that no view starts on a 16-byte boundary); qkv_unpack copies the
 * turned q back when the call went well (s) and frees them, returning s or the copy's status. */
typedef struct qkv_packed {
    pxl_tensor *base, *q, *k, *v;
} qkv_packed;

static pxl_status qkv_pack(pxl_ctx *ctx, const op_case *c, const pxl_tensor *q, const pxl_tensor *k,
                           const pxl_tensor *v, qkv_packed *pk) {
    int64_t nq = pxl_tensor_nelem(q), nk = pxl_tensor_nelem(k), pad = (c->flags & CF_VIEW) ? 3 : 0;
    int64_t nb = pad + nq + 2 * nk, sq[3], sk[3], sv[2] = {pxl_tensor_dim(v, 0), pxl_tensor_dim(v, 1)};
    for (int i = 0; i < 3; i++) sq[i] = pxl_tensor_dim(q, i), sk[i] = pxl_tensor_dim(k, i);
    memset(pk, 0, sizeof *pk);
    pxl_status s = pxl_tensor_create(ctx, PXL_F32, 1, &nb, &pk->base);
    if (s == PXL_OK) s = pxl_tensor_view(ctx, pk->base, 3, sq, (size_t)pad * 4, &pk->q);
    if (s == PXL_OK) s = pxl_tensor_view(ctx, pk->base, 3, sk, (size_t)(pad + nq) * 4, &pk->k);
    if (s == PXL_OK) s = pxl_tensor_view(ctx, pk->base, 2, sv, (size_t)(pad + nq + nk) * 4, &pk->v);
    if (s == PXL_OK) s = pxl_copy(ctx, q, pk->q);
    if (s == PXL_OK) s = pxl_copy(ctx, k, pk->k);
    if (s == PXL_OK) s = pxl_copy(ctx, v, pk->v);
    return s;
}

static pxl_status qkv_unpack(pxl_ctx *ctx, qkv_packed *pk, pxl_tensor *q, pxl_status s) {
    if (s == PXL_OK) s = pxl_copy(ctx, pk->q, q);
    pxl_tensor_free(pk->q), pxl_tensor_free(pk->k), pxl_tensor_free(pk->v), pxl_tensor_free(pk->base);
    return s;
}

static pxl_status rkv_call(pxl_ctx *ctx, const op_case *c, pxl_tensor *const *t) {
    int ni = c->op == OP_ROPE_KV_FF ? 3 : 2;
    pxl_tensor *q = t[ni], *k = t[0], *v = t[1], *ko = t[ni + 1], *vo = t[ni + 2];
    pxl_rope_options o = rkv_opts(c, t);
    /* value cases (not the bad-argument set) also check against the ops it replaces */
    rkv_twin w;
    int twin = c->expect == PXL_OK && !(c->flags & CF_BAD);
    if (twin) rkv_twin_make(ctx, c, t, &w);
    pxl_status s;
    if (!(c->flags & CF_PACKED)) {
        s = pxl_rope_kv(ctx, q, k, v, ko, vo, c->off, &o);
    } else {
        qkv_packed pk;
        s = qkv_pack(ctx, c, q, k, v, &pk);
        if (s == PXL_OK) s = pxl_rope_kv(ctx, pk.q, pk.k, pk.v, ko, vo, c->off, &o);
        s = qkv_unpack(ctx, &pk, q, s);
    }
    if (twin) {
        if (s == PXL_OK && w.ok) {
            rkv_twin_check(ctx, q, w.q, "q");
            rkv_twin_check(ctx, ko, w.ko, "k_out");
            rkv_twin_check(ctx, vo, w.vo, "v_out");
        }
        rkv_twin_free(&w);
    }
    return s;
}

/* the exact values rounded as the outputs' dtypes hold them */
static void rkv_round(pxl_dtype dt, const double *x, double *y, int64_t n) {
    if (dt == PXL_F16) oracle_round_float(x, y, n, 11, -14, 65504.0);
    else memcpy(y, x, (size_t)n * sizeof *y);
}

static void rkv_oracle(const op_case *c, double *const *v, double **want) {
    int64_t T = c->s[0], Hq = c->s[1], Hkv = c->s[2], D = c->s[3], nk = T * Hkv * D;
    int ni = c->op == OP_ROPE_KV_FF ? 3 : 2, halves = (c->flags & CF_HALVES) != 0;
    const double *ff = ni == 3 ? v[2] : NULL;
    oracle_rope_ext(v[ni], want[0], T, Hq, D, c->off, c->p, halves, rope_fs(c), ff);
    double *k = malloc((size_t)nk * sizeof *k);
    oracle_rope_ext(v[0], k, T, Hkv, D, c->off, c->p, halves, rope_fs(c), ff);
    rkv_round(c->dt, k, want[1], nk);
    rkv_round((c->flags & CF_V32) ? PXL_F32 : c->dt, v[1], want[2], nk);
    free(k);
}

/*
 * q and k: rope_tol's bound for their rows. k_out in f16: the backend rounds
 * its f32 value g, the oracle the exact w, |g - w| <= tol: the two roundings
 * add at most one f16 spacing at max(|g|, |w|), 2^-10 (|w| + tol) + 2^-24
 * (the subnormal spacing). v_out: exact (v's values, or their f16 roundings).
 */
static void rkv_tol(const op_case *c, double *const *v, double *const *want, int out, int mode, double *tol) {
    int64_t T = c->s[0], Hq = c->s[1], Hkv = c->s[2], D = c->s[3], nk = T * Hkv * D;
    int ni = c->op == OP_ROPE_KV_FF ? 3 : 2;
    const double *ff = ni == 3 ? v[2] : NULL;
    if (out == 0) {
        rope_tol_thd(c, T, Hq, D, v[ni], ff, mode, tol);
    } else if (out == 1) {
        rope_tol_thd(c, T, Hkv, D, v[0], ff, mode, tol);
        if (c->dt == PXL_F16)
            for (int64_t i = 0; i < nk; i++) tol[i] += 0x1p-10 * (fabs(want[1][i]) + tol[i]) + 0x1p-24;
    } else {
        for (int64_t i = 0; i < nk; i++) tol[i] = 0.0;
    }
}

/* ---- rope_kv_attention ---------------------------------------------------------------- */

/* inputs k [T, Hkv, D], v [T, Hkv * D], freq_factors (_FF); outputs q [T, Hq, D] (turned in place),
 * cache_k and cache_v [C, Hkv, D] (written with data first: rows before pos_offset are the context,
 * the rest NaN: rka_fixup), y [T, Hq, D] */
static int rka_ni(const op_case *c) { return c->op == OP_ROPE_KV_ATTN_FF ? 3 : 2; }

static void rka_layout(const op_case *c, layout *l) {
    int64_t T = c->s[0], Hq = c->s[1], Hkv = c->s[2], D = c->s[3], C = c->s[4], half = D / 2;
    int64_t sq[3] = {T, Hq, D}, sk[3] = {T, Hkv, D}, sv[2] = {T, Hkv * D}, sc[3] = {C, Hkv, D};
    add_in(l, opnd("k", PXL_F32, 3, sk, 0, -1, 1, -1));
    add_in(l, opnd("v", PXL_F32, 2, sv, 0, -1, 1, -1));
    if (c->op == OP_ROPE_KV_ATTN_FF) add_in(l, opnd("freq_factors", PXL_F32, 1, &half, 0, 0.5f, 40.0f, -1));
    int o = l->n_in;
    add_out(l, opnd("q", PXL_F32, 3, sq, 1, -1, 1, -1));
    add_out(l, opnd("cache_k", c->dt, 3, sc, 1, -1, 1, -1));
    add_out(l, opnd("cache_v", c->dt, 3, sc, 1, -1, 1, -1));
    add_out(l, opnd("y", PXL_F32, 3, sq, 1, 0, 0, -1));
    l->o[o].init = l->o[o + 1].init = l->o[o + 2].init = 1;
}

/* the cache rows from pos_offset on are NaN: the ones written must be, the ones after never read */
static void rka_fixup(const op_case *c, const layout *l, float **x, uint64_t *rng) {
    (void)rng;
    int64_t row = c->s[2] * c->s[3], C = c->s[4];
    int o = l->n_in;
    for (int64_t i = c->off * row; i < C * row; i++) x[o + 1][i] = x[o + 2][i] = NAN;
}

/* What pxl_rope_kv and pxl_attention make of the same operands on the same backend: q and the caches
 * must agree bit for bit, y within attention's GPU bound (it is another kernel there). */
static void rka_twin(pxl_ctx *ctx, const op_case *c, pxl_tensor *const *t, pxl_tensor *const *got) {
    int ni = rka_ni(c);
    pxl_tensor *k = t[0], *v = t[1], *q = t[ni], *ck = t[ni + 1], *cv = t[ni + 2], *y = t[ni + 3];
    int64_t T = c->s[0], Hkv = c->s[2], D = c->s[3];
    pxl_tensor *w[4] = {0}, *ko = NULL, *vo = NULL;
    const pxl_tensor *src[4] = {q, ck, cv, y};
    pxl_status s = PXL_OK;
    for (int i = 0; i < 4 && s == PXL_OK; i++) {
        int64_t sh[3] = {pxl_tensor_dim(src[i], 0), pxl_tensor_dim(src[i], 1), pxl_tensor_dim(src[i], 2)};
        w[i] = new_tensor(ctx, pxl_tensor_dtype(src[i]), 3, sh);
        s = w[i] ? pxl_copy(ctx, src[i], w[i]) : PXL_ERR_INVALID_ARG;
    }
    int64_t sk[3] = {T, Hkv, D}, sv[2] = {pxl_tensor_dim(v, 0), pxl_tensor_dim(v, 1)};
    size_t at = (size_t)c->off * (size_t)(Hkv * D) * (c->dt == PXL_F16 ? 2u : 4u);
    if (s == PXL_OK) s = pxl_tensor_view(ctx, w[1], 3, sk, at, &ko);
    if (s == PXL_OK) s = pxl_tensor_view(ctx, w[2], 2, sv, at, &vo);
    pxl_rope_options o = {c->p, rope_lay(c), c->alpha, ni == 3 ? t[2] : NULL};
    if (s == PXL_OK) s = pxl_rope_kv(ctx, w[0], k, v, ko, vo, c->off, &o);
    if (s == PXL_OK) s = pxl_attention(ctx, w[0], w[1], w[2], w[3], c->off + T, c->beta);
    CHECK_MSG(s == PXL_OK, "rope_kv_attention twin: %s", pxl_ctx_error(ctx));
    const char *names[3] = {"q", "cache_k", "cache_v"};
    const char *on = pxl_ctx_backend(ctx) == PXL_BACKEND_GPU ? "gpu" : "cpu";
    for (int i = 0; i < 3 && s == PXL_OK; i++) {
        size_t n = pxl_tensor_bytes(w[i]);
        uint8_t *a = read_all(ctx, got[i], n), *b = read_all(ctx, w[i], n);
        size_t diff = 0;
        for (size_t e = 0; e < n; e++) diff += a[e] != b[e];
        CHECK_MSG(diff == 0, "pxl_rope_kv_attention on %s: %s differs from pxl_rope_kv's in %zu of %zu bytes", on,
                  names[i], diff, n);
        free(a), free(b);
    }
    if (s == PXL_OK) {
        size_t n = pxl_tensor_bytes(w[3]);
        float *a = read_all(ctx, got[3], n), *b = read_all(ctx, w[3], n);
        size_t bad = 0;
        for (size_t e = 0; e < n / 4; e++)
            bad += !(fabs((double)a[e] - (double)b[e]) <= 2e-5) && !(isnan(a[e]) && isnan(b[e]));
        CHECK_MSG(bad == 0, "pxl_rope_kv_attention on %s: y differs from pxl_attention's by more than 2e-5 in %zu "
                  "of %zu", on, bad, n / 4);
        free(a), free(b);
    }
    pxl_tensor_free(ko), pxl_tensor_free(vo);
    for (int i = 0; i < 4; i++) pxl_tensor_free(w[i]);
}

static pxl_status rka_call(pxl_ctx *ctx, const op_case *c, pxl_tensor *const *t) {
    int ni = rka_ni(c);
    pxl_tensor *k = t[0], *v = t[1], *q = t[ni], *ck = t[ni + 1], *cv = t[ni + 2], *y = t[ni + 3];
    pxl_rope_options o = {c->p, rope_lay(c), c->alpha, ni == 3 ? t[2] : NULL};
    int twin = c->expect == PXL_OK && !(c->flags & CF_BAD);
    pxl_tensor *before[4] = {0}; /* the operands as written, for the twin */
    pxl_tensor *const cur[4] = {q, ck, cv, y};
    for (int i = 0; twin && i < 4; i++) {
        int64_t sh[3] = {pxl_tensor_dim(cur[i], 0), pxl_tensor_dim(cur[i], 1), pxl_tensor_dim(cur[i], 2)};
        before[i] = new_tensor(ctx, pxl_tensor_dtype(cur[i]), 3, sh);
        if (before[i] && pxl_copy(ctx, cur[i], before[i]) != PXL_OK) CHECK_MSG(0, "copy: %s", pxl_ctx_error(ctx));
    }
    pxl_status s;
    if (!(c->flags & CF_PACKED)) {
        s = pxl_rope_kv_attention(ctx, q, k, v, ck, cv, c->off, &o, y, c->beta);
    } else {
        qkv_packed pk;
        s = qkv_pack(ctx, c, q, k, v, &pk);
        if (s == PXL_OK) s = pxl_rope_kv_attention(ctx, pk.q, pk.k, pk.v, ck, cv, c->off, &o, y, c->beta);
        s = qkv_unpack(ctx, &pk, q, s);
    }
    if (twin && s == PXL_OK) {
        pxl_tensor *tt[MAXOPND];
        for (int i = 0; i < ni; i++) tt[i] = t[i];
        for (int i = 0; i < 4; i++) tt[ni + i] = before[i];
        rka_twin(ctx, c, tt, cur);
    }
    for (int i = 0; i < 4; i++) pxl_tensor_free(before[i]);
    return s;
}

static void rka_oracle(const op_case *c, double *const *v, double **want) {
    int64_t T = c->s[0], Hq = c->s[1], Hkv = c->s[2], D = c->s[3], C = c->s[4], row = Hkv * D, nk = T * row;
    int ni = rka_ni(c), halves = (c->flags & CF_HALVES) != 0;
    const double *ff = ni == 3 ? v[2] : NULL;
    oracle_rope_ext(v[ni], want[0], T, Hq, D, c->off, c->p, halves, rope_fs(c), ff);
    memcpy(want[1], v[ni + 1], (size_t)(C * row) * sizeof(double));
    memcpy(want[2], v[ni + 2], (size_t)(C * row) * sizeof(double));
    double *k = malloc((size_t)nk * sizeof *k);
    oracle_rope_ext(v[0], k, T, Hkv, D, c->off, c->p, halves, rope_fs(c), ff);
    rkv_round(c->dt, k, want[1] + c->off * row, nk);
    rkv_round(c->dt, v[1], want[2] + c->off * row, nk);
    free(k);
    oracle_attention(want[0], want[1], want[2], want[3], T, Hq, Hkv, D, c->off + T, c->beta);
}

/*
 * q and the new cache rows: rkv_tol's bounds (the rest of the caches exact). y: attention's bound
 * (attn_tol) plus what the turned q and k carry: a score moves by at most scale * sum_d (tq_d |k_d| +
 * |q_d| tk_d) with |q_d|, |k_d| <= 2 (turned pairs of values in [-1, 1)), and y, a convex combination
 * of values in [-1, 1), by at most twice the largest move of a score.
 */
static void rka_tol(const op_case *c, double *const *v, double *const *want, int out, int mode, double *tol) {
    int64_t T = c->s[0], Hq = c->s[1], Hkv = c->s[2], D = c->s[3], C = c->s[4], row = Hkv * D, nk = T * row;
    int ni = rka_ni(c);
    const double *ff = ni == 3 ? v[2] : NULL;
    if (out == 0) {
        rope_tol_thd(c, T, Hq, D, v[ni], ff, mode, tol);
    } else if (out == 1 || out == 2) {
        for (int64_t i = 0; i < C * row; i++) tol[i] = 0.0;
        if (out == 1) {
            rope_tol_thd(c, T, Hkv, D, v[0], ff, mode, tol + c->off * row);
            if (c->dt == PXL_F16)
                for (int64_t i = c->off * row; i < c->off * row + nk; i++)
                    tol[i] += 0x1p-10 * (fabs(want[1][i]) + tol[i]) + 0x1p-24;
        }
    } else {
        double *tq = malloc((size_t)(T * Hq * D) * sizeof *tq), *tk = malloc((size_t)nk * sizeof *tk);
        rope_tol_thd(c, T, Hq, D, v[ni], ff, mode, tq);
        rope_tol_thd(c, T, Hkv, D, v[0], ff, mode, tk);
        if (c->dt == PXL_F16)
            for (int64_t i = 0; i < nk; i++) tk[i] += 0x1p-10 * (2.0 + tk[i]) + 0x1p-24;
        double sk = 0.0;
        for (int64_t i = 0; i < nk; i++) sk = fmax(sk, tk[i]);
        for (int64_t t = 0; t < T; t++)
            for (int64_t h = 0; h < Hq; h++) {
                double sq = 0.0;
                for (int64_t d = 0; d < D; d++) sq += tq[(t * Hq + h) * D + d];
                double ds = fabs((double)c->beta) * 2.0 * (sq + (double)D * sk);
                for (int64_t d = 0; d < D; d++) tol[(t * Hq + h) * D + d] = (mode == TOL_CPU ? 1e-6 : 2e-5) + 2.0 * ds;
            }
        free(tq), free(tk);
    }
}

/* ---- attention ---------------------------------------------------------------------- */

static void attn_layout(const op_case *c, layout *l) {
    int64_t sq[3] = {c->s[0], c->s[1], c->s[3]}, skv[3] = {c->s[5], c->s[2], c->s[3]};
    add_in(l, opnd("q", PXL_F32, 3, sq, 0, -1, 1, -1));
    add_in(l, opnd("k", c->dt, 3, skv, 0, -1, 1, 0));
    add_in(l, opnd("v", c->dt, 3, skv, 0, -1, 1, 0));
    add_out(l, opnd("y", PXL_F32, 3, sq, 1, 0, 0, -1));
}

static pxl_status attn_call(pxl_ctx *ctx, const op_case *c, pxl_tensor *const *t) {
    return pxl_attention(ctx, t[0], t[1], t[2], t[3], c->s[4], c->p);
}

static void attn_oracle(const op_case *c, double *const *v, double **want) {
    oracle_attention(v[0], v[1], v[2], want[0], c->s[0], c->s[1], c->s[2], c->s[3], c->s[4], c->p);
}

/*
 * Inputs in [-1, 1), so every output is a convex combination with |y| <= 1.
 * f16 K and V: the oracle sees their f16 values, which both backends read
 * exactly, so the bounds are the f32 ones.
 * CPU: double throughout: 1e-6. GPU: 2e-5 (f32 scores, exp2 within the WGSL
 * bound of 3 + 2|x| ULP, f32 sums of up to kv_len terms merged across
 * slices; a relative error e of the weights moves y by 2 e max|v|; observed
 * 1.8e-7 on llvmpipe and an H100). GPU against CPU: 2e-5.
 */
static void attn_tol(const op_case *c, double *const *v, double *const *want, int out, int mode, double *tol) {
    (void)v, (void)want, (void)out;
    int64_t n = c->s[0] * c->s[1] * c->s[3];
    for (int64_t i = 0; i < n; i++) tol[i] = mode == TOL_CPU ? 1e-6 : 2e-5;
}

/* cache rows past kv_len are NaN (never read); CF_SPECIAL: a NaN in a visible K row and in one V entry */
static void attn_fixup(const op_case *c, const layout *l, float **x, uint64_t *rng) {
    (void)l, (void)rng;
    int64_t Hkv = c->s[2], D = c->s[3], kv = c->s[4], C = c->s[5];
    for (int64_t i = kv * Hkv * D; i < C * Hkv * D; i++) x[1][i] = x[2][i] = NAN;
    if (c->flags & CF_SPECIAL) {
        x[1][((kv / 2) * Hkv + Hkv - 1) * D + 3 % D] = NAN;
        x[2][((kv / 3) * Hkv + 0) * D + 5 % D] = NAN;
    }
}

/* ---- copy --------------------------------------------------------------------------- */

static void copy_layout(const op_case *c, layout *l) {
    int64_t flat = case_nelem(c);
    add_in(l, opnd("src", c->dt, c->ndim, c->s, 0, -2, 2, pxl_dtype_is_quantized(c->dt) ? 0 : -1));
    if (c->flags & CF_FLAT) add_out(l, opnd("dst", c->dt, 1, &flat, 1, 0, 0, NO_BAD));
    else add_out(l, opnd("dst", c->dt, c->ndim, c->s, 1, 0, 0, pxl_dtype_is_quantized(c->dt) ? 0 : -1));
}

static pxl_status copy_call(pxl_ctx *ctx, const op_case *c, pxl_tensor *const *t) {
    (void)c;
    return pxl_copy(ctx, t[0], t[1]);
}

static void copy_oracle(const op_case *c, double *const *v, double **want) {
    memcpy(want[0], v[0], (size_t)case_nelem(c) * sizeof(double));
}

/* ---- convert ------------------------------------------------------------------------ */

static void conv_layout(const op_case *c, layout *l) {
    int64_t flat = case_nelem(c);
    float r = (c->flags & CF_WIDE) ? 1e5f : 2.0f; /* wide: f16's overflow, often */
    add_in(l, opnd("src", c->dt, c->ndim, c->s, 0, -r, r, -1));
    if (c->flags & CF_FLAT) add_out(l, opnd("dst", (pxl_dtype)c->k, 1, &flat, 1, 0, 0, -1));
    else add_out(l, opnd("dst", (pxl_dtype)c->k, c->ndim, c->s, 1, 0, 0, -1));
}

static pxl_status conv_call(pxl_ctx *ctx, const op_case *c, pxl_tensor *const *t) {
    (void)c;
    return pxl_convert(ctx, t[0], t[1]);
}

/* the source's values (already f16 / bf16 values when it is one), rounded to the destination's dtype */
static void conv_oracle(const op_case *c, double *const *v, double **want) {
    int64_t n = case_nelem(c);
    if (c->k == PXL_F16) oracle_round_float(v[0], want[0], n, 11, -14, 65504.0);
    else if (c->k == PXL_BF16) oracle_round_float(v[0], want[0], n, 8, -126, 0x1.fep127);
    else memcpy(want[0], v[0], (size_t)n * sizeof(double));
}

/* the edges of rounding: f16's largest finite values and its overflow to Inf,
 * its subnormals (the smallest, ties to zero, below half of it), ties to even
 * at 1 for f16 and bf16, f32 values past bf16's and f16's ranges */
static void conv_fixup(const op_case *c, const layout *l, float **x, uint64_t *rng) {
    (void)l, (void)rng;
    static const float edge[] = {65504.0f, 65519.99f, 65520.0f, -65520.0f, 1e5f, -7e4f, 6.1e-5f, -6.1035156e-5f,
                                 0x1p-24f, 0x1p-25f, -0x1.8p-25f, 0x1.8p-24f, 1e-6f, -3e-7f, 1e-10f, -0x1p-30f,
                                 1.0f + 0x1p-11f, 1.0f + 0x1.8p-10f, 1.0f + 0x1p-8f, 1.0f + 0x1.8p-7f, 3.3e38f,
                                 -3.4e38f, 0x1p-130f, 1e-40f};
    int64_t n = case_nelem(c), ne = (int64_t)(sizeof edge / sizeof edge[0]);
    if (!(c->flags & CF_SPECIAL)) return;
    for (int64_t i = 0; i < ne && 7 + i < n; i++) x[0][7 + i] = edge[i];
}

/* ---- the descriptors -------------------------------------------------------------- */

#define ALL_SP (SP_NAN | SP_INF | SP_NEGZ)
static const op_desc k_desc[OP_COUNT] = {
    [OP_MATMUL] = {"pxl_matmul", mm_layout, mm_call, mm_oracle, mm_tol, 0, 0, SP_NAN, NULL, mm_vjp},
    [OP_SOFTMAX] = {"pxl_softmax", sm_layout, sm_call, sm_oracle, sm_tol, 1, 0, ALL_SP, sm_fixup, sm_vjp},
    [OP_RMSNORM] = {"pxl_rmsnorm", norm_layout, rms_call, rms_oracle, rms_tol, 1, 0, SP_NAN, norm_fixup, rms_vjp},
    [OP_LAYERNORM] = {"pxl_layernorm", norm_layout, ln_call, ln_oracle, ln_tol, 1, 1u << 2, SP_NAN, norm_fixup, NULL},
    [OP_ARGMAX] = {"pxl_argmax", sel_layout, am_call, am_oracle, exact_tol, 0, 0, ALL_SP, sel_fixup, NULL},
    [OP_TOPK] = {"pxl_topk", sel_layout, tk_call, tk_oracle, exact_tol, 0, 0, ALL_SP, sel_fixup, NULL},
    [OP_GELU] = {"pxl_gelu", ew_layout, ew_call, ew_oracle, ew_tol, 1, 0, ALL_SP, NULL, ew_vjp},
    [OP_SILU] = {"pxl_silu", ew_layout, ew_call, ew_oracle, ew_tol, 1, 0, ALL_SP, NULL, ew_vjp},
    [OP_SWIGLU] = {"pxl_swiglu", ew_layout, ew_call, ew_oracle, ew_tol, 3, 0, SP_NAN, NULL, ew_vjp},
    [OP_ADD] = {"pxl_add", ew_layout, ew_call, ew_oracle, ew_tol, 3, 0, ALL_SP, NULL, ew_vjp},
    [OP_MUL] = {"pxl_mul", ew_layout, ew_call, ew_oracle, ew_tol, 3, 0, ALL_SP, NULL, ew_vjp},
    [OP_SCALE] = {"pxl_scale", ew_layout, ew_call, ew_oracle, ew_tol, 1, 0, ALL_SP, NULL, ew_vjp},
    [OP_EMBEDDING] = {"pxl_embedding", emb_layout, emb_call, emb_oracle, emb_tol, 0, 0, ALL_SP, emb_fixup, NULL},
    [OP_ROPE] = {"pxl_rope", rope_layout, rope_call, rope_oracle, rope_tol, 1, 0, SP_NAN, NULL, NULL},
    [OP_ROPE_EXT] = {"pxl_rope_ext", rope_ext_layout, rope_ext_call, rope_ext_oracle, rope_ext_tol, 1, 2, SP_NAN, NULL, NULL},
    [OP_ATTENTION] = {"pxl_attention", attn_layout, attn_call, attn_oracle, attn_tol, 0, 0, SP_NAN, attn_fixup, NULL},
    [OP_COPY] = {"pxl_copy", copy_layout, copy_call, copy_oracle, exact_tol, 1, 0, ALL_SP, NULL, NULL},
    [OP_DOT] = {"pxl_dot", NULL, NULL, NULL, NULL, 0, 0, ALL_SP, NULL, NULL},
    [OP_CONVERT] = {"pxl_convert", conv_layout, conv_call, conv_oracle, exact_tol, 0, 0, ALL_SP, conv_fixup, NULL},
    [OP_MATMUL_NORM] = {"pxl_matmul", mmn_layout, mmn_call, mmn_oracle, mmn_tol, 0, 1u << 2, SP_NAN, NULL, NULL},
    [OP_MATMUL_SWIGLU] = {"pxl_matmul_swiglu", sw_layout, sw_call, sw_oracle, sw_tol, 0, 1u << 3, SP_NAN, NULL, NULL},
    [OP_ROPE_KV] = {"pxl_rope_kv", rkv_layout, rkv_call, rkv_oracle, rkv_tol, 0, 0, SP_NAN, NULL, NULL},
    [OP_ROPE_KV_FF] = {"pxl_rope_kv", rkv_layout, rkv_call, rkv_oracle, rkv_tol, 0, 1u << 2, SP_NAN, NULL, NULL},
    [OP_ROPE_KV_ATTN] = {"pxl_rope_kv_attention", rka_layout, rka_call, rka_oracle, rka_tol, 0, 0, SP_NAN, rka_fixup, NULL},
    [OP_ROPE_KV_ATTN_FF] = {"pxl_rope_kv_attention", rka_layout, rka_call, rka_oracle, rka_tol, 0, 1u << 2, SP_NAN,
                            rka_fixup, NULL},
    [OP_MATMUL_MULTI] = {"pxl_matmul_multi", mmm_layout, mmm_call, mmm_oracle, mmm_tol, 0, 0, SP_NAN, NULL, NULL},
};

/* ---- the table ------------------------------------------------------------------------ */

#define I64MAX INT64_MAX
#define I64MIN INT64_MIN
/* matmul: batches of A and B, M, N, K, B's dtype, flags, alpha (0: default 1), beta */
#define MM(ba, bb, M, N, K, dt, fl, al, be) {OP_MATMUL, 5, {ba, bb, M, N, K}, dt, 0, al, be, 0, 0, fl, PXL_OK, NULL}
/* matmul with the norm option (eps) */
#define NMM(ba, bb, M, N, K, dt, fl, al, be, eps)                                                             \
    {OP_MATMUL_NORM, 5, {ba, bb, M, N, K}, dt, eps, al, be, 0, 0, fl, PXL_OK, NULL}
/* matmul_swiglu: A [M, K], weights [F, K] of dt; CF_NORM with eps */
#define SWG(M, F, K, dt, fl, eps) {OP_MATMUL_SWIGLU, 3, {M, F, K}, dt, eps, 0, 0, 0, 0, fl, PXL_OK, NULL}
/* matmul_multi: A [M, K]; b0 [N0, K] of dt, b1 [N1, K] of dt1; CF_NORM with eps */
#define MMM(M, N0, N1, K, dt, dt1, fl, al, be, eps)                                                          \
    {OP_MATMUL_MULTI, 4, {M, N0, N1, K}, dt, eps, al, be, 0, dt1, fl, PXL_OK, NULL}
#define MM4(M, N, K, dt, fl, al, be)                                                                            \
    MM(1, 1, M, N, K, dt, fl, al, be), MM(1, 1, M, N, K, dt, (fl) | CF_TA, al, be),                            \
        MM(1, 1, M, N, K, dt, (fl) | CF_TB, al, be), MM(1, 1, M, N, K, dt, (fl) | CF_TA | CF_TB, al, be)
/* ops over a tensor of shape {...}: op, flags, p, off, k */
#define T1(op, a, fl, p, off, k) {op, 1, {a}, PXL_F32, p, 0, 0, off, k, fl, PXL_OK, NULL}
#define T2(op, a, b, fl, p, off, k) {op, 2, {a, b}, PXL_F32, p, 0, 0, off, k, fl, PXL_OK, NULL}
#define T3(op, a, b, c, fl, p, off, k) {op, 3, {a, b, c}, PXL_F32, p, 0, 0, off, k, fl, PXL_OK, NULL}
#define T4(op, a, b, c, d, fl, p, off, k) {op, 4, {a, b, c, d}, PXL_F32, p, 0, 0, off, k, fl, PXL_OK, NULL}
/* norms with inputs from mean + spread * [-1, 1) */
#define NORM2(op, R, L, fl, eps, mean, spread) {op, 2, {R, L}, PXL_F32, eps, mean, spread, 0, 0, fl, PXL_OK, NULL}
/* every element-wise op on one shape */
#define EW_ALL(nd, fl, ...)                                                                                  \
    {OP_GELU, nd, {__VA_ARGS__}, PXL_F32, 0, 0, 0, 0, 0, (fl) | CF_WIDE, PXL_OK, NULL},                       \
        {OP_GELU, nd, {__VA_ARGS__}, PXL_F32, 0, 0, 0, 0, 0, (fl) | CF_WIDE | CF_ERF, PXL_OK, NULL},         \
        {OP_SILU, nd, {__VA_ARGS__}, PXL_F32, 0, 0, 0, 0, 0, (fl) | CF_WIDE, PXL_OK, NULL},                   \
        {OP_SCALE, nd, {__VA_ARGS__}, PXL_F32, -0.375f, 0, 0, 0, 0, fl, PXL_OK, NULL},                       \
        {OP_ADD, nd, {__VA_ARGS__}, PXL_F32, 0, 0, 0, 0, 0, fl, PXL_OK, NULL},                                \
        {OP_MUL, nd, {__VA_ARGS__}, PXL_F32, 0, 0, 0, 0, 0, fl, PXL_OK, NULL},                                \
        {OP_ADD, nd, {__VA_ARGS__}, PXL_F32, 0, 0, 0, 0, 0, (fl) | CF_BCAST, PXL_OK, NULL},                   \
        {OP_MUL, nd, {__VA_ARGS__}, PXL_F32, 0, 0, 0, 0, 0, (fl) | CF_BCAST, PXL_OK, NULL},                   \
        {OP_SWIGLU, nd, {__VA_ARGS__}, PXL_F32, 0, 0, 0, 0, 0, fl, PXL_OK, NULL}
#define EMB(V, D, n, dt, fl) {OP_EMBEDDING, 3, {V, D, n}, dt, 0, 0, 0, 0, 0, fl, PXL_OK, NULL}
#define ROPE(T, H, D, off, base, fl) {OP_ROPE, 3, {T, H, D}, PXL_F32, base, 0, 0, off, 0, fl, PXL_OK, NULL}
/* with freq_scale fs (OP_ROPE: pxl_rope_ext without factors; OP_ROPE_EXT: with factors) */
#define ROPEX(op, T, H, D, off, base, fs, fl) {op, 3, {T, H, D}, PXL_F32, base, fs, 0, off, 0, fl, PXL_OK, NULL}
/* attention: T, Hq, Hkv, D, kv_len (capacity kv_len + 3 + kv_len / 7) */
#define ATT(T, Hq, Hkv, D, kv, fl)                                                                            \
    {OP_ATTENTION, 6, {T, Hq, Hkv, D, kv, (kv) + 3 + (kv) / 7}, PXL_F32, 0.75f / 8.0f + 0.05f, 0, 0, 0, 0, fl, PXL_OK, NULL}
#define COPY2(R, L, dt, fl) {OP_COPY, 2, {R, L}, dt, 0, 0, 0, 0, 0, fl, PXL_OK, NULL}
/* attention with f16 K and V (an f16 KV cache) */
#define ATTH(T, Hq, Hkv, D, kv, fl)                                                                           \
    {OP_ATTENTION, 6, {T, Hq, Hkv, D, kv, (kv) + 3 + (kv) / 7}, PXL_F16, 0.75f / 8.0f + 0.05f, 0, 0, 0, 0, fl, PXL_OK, NULL}
/* convert: src shape R x L, src and dst dtypes */
#define CONV2(R, L, st, dt, fl) {OP_CONVERT, 2, {R, L}, st, 0, 0, 0, 0, (int)(dt), fl, PXL_OK, NULL}
#define CONV1(n, st, dt, fl) {OP_CONVERT, 1, {n}, st, 0, 0, 0, 0, (int)(dt), fl, PXL_OK, NULL}
#define DOT(n, fl) {OP_DOT, 1, {n}, PXL_F32, 0, 0, 0, 0, 0, fl, PXL_OK, NULL}
/* rope_kv: T, Hq, Hkv, D, position, base, freq_scale (0: 1), k_out's and v_out's dtype, flags; RKVF with factors */
/* rope_kv_attention: T, Hq, Hkv, D, C, position, base, freq_scale (0: 1), the caches' dtype, flags; the
 * attention's scale 0.75 / 8 + 0.05 (as ATT); RKAF with factors */
#define RKA(T, Hq, Hkv, D, C, off, base, fs, dt, fl)                                                          \
    {OP_ROPE_KV_ATTN, 5, {T, Hq, Hkv, D, C}, dt, base, fs, 0.75f / 8.0f + 0.05f, off, 0, fl, PXL_OK, NULL}
#define RKAF(T, Hq, Hkv, D, C, off, base, fs, dt, fl)                                                         \
    {OP_ROPE_KV_ATTN_FF, 5, {T, Hq, Hkv, D, C}, dt, base, fs, 0.75f / 8.0f + 0.05f, off, 0, fl, PXL_OK, NULL}
#define RKV(T, Hq, Hkv, D, off, base, fs, dt, fl) {OP_ROPE_KV, 4, {T, Hq, Hkv, D}, dt, base, fs, 0, off, 0, fl, PXL_OK, NULL}
#define RKVF(T, Hq, Hkv, D, off, base, fs, dt, fl)                                                            \
    {OP_ROPE_KV_FF, 4, {T, Hq, Hkv, D}, dt, base, fs, 0, off, 0, fl, PXL_OK, NULL}
/* a call every backend must refuse with PXL_ERR_INVALID_ARG (m: a substring of the message) */
#define BAD(op, nd, s0, s1, s2, s3, s4, s5, dt, p, al, be, off, k, fl, m)                                  \
    {op, nd, {s0, s1, s2, s3, s4, s5}, dt, p, al, be, off, k, fl, PXL_ERR_INVALID_ARG, m}

static const op_case k_cases[] = {
    /* -- matmul: odd shapes (1, primes, not multiples of the 128x128x16 tile), every transpose */
    MM4(1, 1, 1, PXL_F32, 0, 1, 0), MM4(2, 3, 5, PXL_F32, 0, 1, 0), MM4(7, 13, 17, PXL_F32, 0, 1, 0),
    MM4(1, 7, 33, PXL_F32, 0, 1, 0), MM4(1, 1000, 257, PXL_F32, 0, 1, 0), MM4(64, 64, 64, PXL_F32, 0, 1, 0),
    MM4(127, 129, 131, PXL_F32, 0, 1, 0), MM4(128, 128, 128, PXL_F32, 0, 1, 0), MM4(256, 128, 48, PXL_F32, 0, 1, 0),
    MM4(33, 1, 70, PXL_F32, 0, 1, 0), MM4(5, 300, 1, PXL_F32, 0, 1, 0),
    /* f16 B, alpha and beta */
    MM4(7, 13, 17, PXL_F16, 0, -0.5f, 0.25f), MM4(1, 1000, 257, PXL_F16, 0, -0.5f, 0),
    MM4(127, 129, 131, PXL_F16, 0, -0.5f, 0.25f), MM4(33, 1, 70, PXL_F16, 0, 2, 0),
    /* batches, A or B broadcast */
    MM(3, 3, 17, 19, 23, PXL_F32, 0, 1, 0), MM(1, 4, 33, 65, 40, PXL_F32, CF_TB, 2, 0.5f),
    MM(5, 1, 130, 7, 64, PXL_F32, CF_TA, 1, 0), MM(2, 2, 1, 200, 96, PXL_F16, CF_TB, 1, 0),
    MM(3, 1, 1, 50, 64, PXL_F32, 0, 1, 1),
    /* zero options are the defaults: NULL, and {.trans_b = 1} (alpha 0 means 1) */
    MM(1, 1, 5, 6, 7, PXL_F32, CF_NULL_OPTS, 0, 0), MM(1, 1, 5, 6, 7, PXL_F32, CF_TB, 0, 0),
    MM(1, 1, 1, 9, 7, PXL_F32, CF_TB, 0, 0),
    /* views: every operand an offset view / a row slice; beta reads C through the view */
    MM(1, 1, 7, 13, 17, PXL_F32, CF_VIEW, 1, 0.5f), MM(1, 1, 7, 13, 17, PXL_F32, CF_SLICE | CF_TB, 1, 0),
    MM(1, 1, 1, 33, 64, PXL_F32, CF_VIEW | CF_TB, 1, 0), MM(2, 2, 9, 5, 11, PXL_F16, CF_VIEW, 1, 0),
    MM(1, 1, 3, 5, 7, PXL_F32, CF_SPECIAL, 1, 0),
    MM(1, 1, 4, 5, 6, PXL_F32, CF_BAD, 1, 0.5f), MM(1, 1, 4, 5, 6, PXL_F32, CF_GRAD, 0.75f, 0.5f),
    MM(2, 1, 3, 4, 5, PXL_F32, CF_GRAD | CF_TA | CF_TB, 1, 0),
    MM(1, 1, 512, 384, 1000, PXL_F32, CF_CPU_ONLY, 1, 0), MM(1, 1, 200, 190, 300, PXL_F32, 0, 1, 0),
    /* K split across workgroups (few tiles, long rows: matmul.c's gemm_split): 4 and 8 splits with every
     * transpose, 2 with K off the 16-value step (bounds checks) and a batch over a shared B, a view, whole
     * tiles (no checks) with batches */
    MM4(130, 200, 1024, PXL_F32, 0, 1, 0), MM4(33, 65, 2048, PXL_F16, 0, -0.5f, 0.25f),
    MM(3, 1, 40, 50, 777, PXL_BF16, CF_TB, 1, 0.5f), MM(1, 1, 20, 30, 600, PXL_F32, CF_VIEW, 1, 0.5f),
    MM(2, 2, 128, 128, 512, PXL_F32, 0, 2, 0),
    /* quantized B (trans_b): matvec and tiled kernels, odd block counts, batches */
    MM(1, 1, 1, 7, 32, PXL_Q8_0, CF_TB, 1, 0), MM(1, 1, 2, 33, 64, PXL_Q4_0, CF_TB, -0.75f, 0.5f),
    MM(1, 1, 5, 1000, 4096, PXL_Q8_0, CF_TB, 1, 0.5f), MM(1, 1, 64, 33, 96, PXL_Q4_0, CF_TB, 1, 0),
    MM(1, 1, 1, 1000, 4096, PXL_Q4_0, CF_TB, -0.75f, 0), MM(1, 1, 64, 7, 4096, PXL_Q8_0, CF_TB, 1, 0),
    MM(1, 1, 2, 1, 96, PXL_Q8_0, CF_TB, 1, 0), MM(1, 1, 64, 1000, 32, PXL_Q4_0, CF_TB, 1, 0.5f),
    MM(3, 3, 1, 45, 128, PXL_Q8_0, CF_TB, 1, 0), MM(1, 2, 1, 19, 96, PXL_Q4_0, CF_TB, 2, 0.5f),
    MM(4, 1, 1, 33, 160, PXL_Q4_0, CF_TB, 1, -1), MM(3, 3, 9, 70, 64, PXL_Q4_0, CF_TB, 1, 0),
    MM(2, 1, 17, 65, 96, PXL_Q8_0, CF_TB, -1, 0.25f), MM(1, 3, 66, 31, 32, PXL_Q8_0, CF_TB, 0.5f, 0),
    /* matvecs keeping A in registers: several half blocks per invocation, an odd block count, past the limit */
    MM(1, 1, 1, 45, 1056, PXL_Q8_0, CF_TB, 1, 0), MM(1, 1, 1, 37, 1056, PXL_Q4_0, CF_TB, 1, 0.5f),
    MM(1, 1, 1, 37, 9216, PXL_Q4_0, CF_TB, -2, 0), MM(2, 2, 1, 29, 16384, PXL_Q8_0, CF_TB, 1, 0),
    MM(1, 2, 1, 19, 16384, PXL_Q4_0, CF_TB, 1, 1), MM(1, 1, 1, 50, 18432, PXL_Q4_0, CF_TB, 1, 0),
    MM(1, 1, 1, 4099, 2048, PXL_Q4_0, CF_TB, 1, 0), MM(1, 1, 1, 4099, 2048, PXL_Q8_0, CF_TB, 1, 0),
    /* K-quants: matvec (M <= 8) and tiled (M > 8) */
    MM(1, 1, 1, 7, 256, PXL_Q4_K, CF_TB, 1, 0), MM(1, 1, 8, 130, 768, PXL_Q4_K, CF_TB, -0.75f, 0.5f),
    MM(1, 1, 9, 7, 4096, PXL_Q4_K, CF_TB, 1, 0), MM(1, 1, 70, 130, 256, PXL_Q4_K, CF_TB, 1, 0),
    MM(1, 1, 1, 130, 4096, PXL_Q4_K, CF_TB, 1, 0), MM(1, 1, 3, 1, 768, PXL_Q4_K, CF_TB, 1, 0.5f),
    MM(1, 1, 1, 7, 256, PXL_Q6_K, CF_TB, 1, 0), MM(1, 1, 8, 130, 768, PXL_Q6_K, CF_TB, -0.75f, 0.5f),
    MM(1, 1, 9, 7, 4096, PXL_Q6_K, CF_TB, 1, 0), MM(1, 1, 70, 130, 256, PXL_Q6_K, CF_TB, 1, 0),
    MM(1, 1, 1, 130, 4096, PXL_Q6_K, CF_TB, 1, 0), MM(1, 1, 3, 1, 768, PXL_Q6_K, CF_TB, 1, 0.5f),
    MM(3, 3, 1, 45, 512, PXL_Q4_K, CF_TB, 1, 0), MM(1, 2, 2, 19, 256, PXL_Q6_K, CF_TB, 2, 0.5f),
    MM(4, 1, 1, 33, 256, PXL_Q6_K, CF_TB, 1, -1), MM(2, 1, 17, 65, 512, PXL_Q4_K, CF_TB, -1, 0.25f),
    MM(1, 3, 66, 31, 256, PXL_Q6_K, CF_TB, 0.5f, 0),
    /* tiled (kmm): every quarter of a 64 x 64 tile and a partial second tile each way, beta 1; a batch */
    MM(1, 1, 100, 100, 768, PXL_Q4_K, CF_TB, 0.5f, 1), MM(2, 2, 40, 96, 512, PXL_Q6_K, CF_TB, 1, 0),
    /* Q4_K with M = 1 (kmv4.wgsl, 16-byte loads): an odd block count with the residual added (beta 1), an odd
     * N, views at 3 blocks and row slices, a broadcast B over a batch */
    MM(1, 1, 1, 131, 2816, PXL_Q4_K, CF_TB, 1, 1), MM(1, 1, 1, 9, 512, PXL_Q4_K, CF_TB | CF_VIEW, 1, 0),
    MM(1, 1, 1, 6, 768, PXL_Q4_K, CF_TB | CF_SLICE, -0.5f, 0), MM(3, 1, 1, 17, 256, PXL_Q4_K, CF_TB, 1, 0.5f),
    /* the same with A rounded to 8 bits (kmv4q.wgsl's entry kmv4q): a row longer than one pass of the
     * workgroup over A (K = 4096: 256 pieces of 16; with few rows, also row groups of 64: the narrow rule,
     * matmul_quant.c), odd blocks with the residual, views, slices, a batch */
    MM(1, 1, 1, 131, 2816, PXL_Q4_K, CF_TB | CF_Q8A, 1, 1), MM(1, 1, 1, 130, 4096, PXL_Q4_K, CF_TB | CF_Q8A, 1, 0),
    MM(1, 1, 1, 35, 8192, PXL_Q5_K, CF_TB | CF_Q8A, 1, 0.5f),
    MM(1, 1, 1, 9, 512, PXL_Q4_K, CF_TB | CF_VIEW | CF_Q8A, 1, 0),
    MM(1, 1, 1, 6, 768, PXL_Q4_K, CF_TB | CF_SLICE | CF_Q8A, -0.5f, 0),
    MM(3, 1, 1, 17, 256, PXL_Q4_K, CF_TB | CF_Q8A, 1, 0.5f), MM(2, 2, 1, 19, 512, PXL_Q4_K, CF_TB | CF_Q8A, 1, 0),
    /* M > 8 with A rounded (qa8.wgsl, then kmm8.wgsl's 64 x 64 tiles): partial tiles in both directions and the
     * residual, several tiles each way, a batch over a shared B and over a shared A, views, slices */
    MM(1, 1, 70, 130, 256, PXL_Q4_K, CF_TB | CF_Q8A, 1, 0), MM(1, 1, 100, 100, 768, PXL_Q4_K, CF_TB | CF_Q8A, 0.5f, 1),
    MM(1, 1, 9, 7, 4096, PXL_Q4_K, CF_TB | CF_Q8A, 1, 0), MM(1, 1, 130, 65, 512, PXL_Q4_K, CF_TB | CF_Q8A, -1, 0.25f),
    MM(2, 1, 17, 65, 512, PXL_Q4_K, CF_TB | CF_Q8A, -1, 0.25f), MM(1, 3, 12, 20, 256, PXL_Q4_K, CF_TB | CF_Q8A, 1, 0),
    MM(1, 1, 10, 5, 256, PXL_Q4_K, CF_TB | CF_VIEW | CF_Q8A, 1, 0), MM(1, 1, 40, 33, 512, PXL_Q4_K, CF_TB | CF_SLICE | CF_Q8A, 1, 1),
    /* small activations: the rounding's scales are f16 subnormals (a device may flush quantizeToF16's) */
    MM(1, 1, 1, 33, 512, PXL_Q4_K, CF_TB | CF_Q8A | CF_TINY, 1, 0), MM(1, 1, 20, 33, 512, PXL_Q4_K, CF_TB | CF_Q8A | CF_TINY, 1, 0),
    MM(1, 1, 20, 33, 512, PXL_Q6_K, CF_TB | CF_Q8A | CF_TINY, 1, 0),
    /* Q5_K with M = 1 on 8-bit A (kmv4q with Q5: the fifth bits joined to the nibbles as integers): odd blocks
     * with the residual, a long row, views at 3 blocks, slices, a batch, tiny values, the norm, SwiGLU */
    MM(1, 1, 1, 131, 2816, PXL_Q5_K, CF_TB | CF_Q8A, 1, 1), MM(1, 1, 1, 130, 4096, PXL_Q5_K, CF_TB | CF_Q8A, 1, 0),
    MM(1, 1, 1, 9, 512, PXL_Q5_K, CF_TB | CF_VIEW | CF_Q8A, 1, 0),
    MM(1, 1, 1, 6, 768, PXL_Q5_K, CF_TB | CF_SLICE | CF_Q8A, -0.5f, 0),
    MM(3, 1, 1, 17, 256, PXL_Q5_K, CF_TB | CF_Q8A, 1, 0.5f), MM(1, 1, 1, 33, 512, PXL_Q5_K, CF_TB | CF_Q8A | CF_TINY, 1, 0),
    NMM(1, 1, 1, 33, 768, PXL_Q5_K, CF_TB | CF_Q8A, 1, 0, 1e-5f),
    SWG(1, 33, 768, PXL_Q5_K, CF_NORM | CF_Q8A, 1e-5f), SWG(1, 33, 768, PXL_Q5_K, CF_PACKED | CF_NORM | CF_Q8A, 1e-5f),
    /* the same for Q5_K (kmm8w.wgsl with Q5: the fifth bits from qh), small activations included */
    MM(1, 1, 70, 130, 256, PXL_Q5_K, CF_TB | CF_Q8A, 1, 0), MM(1, 1, 100, 100, 768, PXL_Q5_K, CF_TB | CF_Q8A, 0.5f, 1),
    MM(1, 1, 9, 7, 4096, PXL_Q5_K, CF_TB | CF_Q8A, 1, 0), MM(2, 1, 17, 65, 512, PXL_Q5_K, CF_TB | CF_Q8A, -1, 0.25f),
    MM(1, 3, 12, 20, 256, PXL_Q5_K, CF_TB | CF_Q8A, 1, 0), MM(1, 1, 10, 5, 256, PXL_Q5_K, CF_TB | CF_VIEW | CF_Q8A, 1, 0),
    MM(1, 1, 40, 33, 512, PXL_Q5_K, CF_TB | CF_SLICE | CF_Q8A, 1, 1),
    MM(1, 1, 20, 33, 512, PXL_Q5_K, CF_TB | CF_Q8A | CF_TINY, 1, 0),
    /* Q8_0 (kmm8.wgsl, KQ8: 34-byte blocks on 2-byte offsets): the same shapes, a view at an odd block
     * (2-byte aligned words), K of 64 (one step) */
    MM(1, 1, 70, 130, 256, PXL_Q8_0, CF_TB | CF_Q8A, 1, 0), MM(1, 1, 100, 100, 768, PXL_Q8_0, CF_TB | CF_Q8A, 0.5f, 1),
    MM(2, 1, 17, 65, 512, PXL_Q8_0, CF_TB | CF_Q8A, -1, 0.25f), MM(1, 3, 12, 20, 256, PXL_Q8_0, CF_TB | CF_Q8A, 1, 0),
    MM(1, 1, 10, 5, 256, PXL_Q8_0, CF_TB | CF_VIEW | CF_Q8A, 1, 0), MM(1, 1, 40, 33, 512, PXL_Q8_0, CF_TB | CF_SLICE | CF_Q8A, 1, 1),
    MM(1, 1, 20, 33, 64, PXL_Q8_0, CF_TB | CF_Q8A, 1, 0),
    MM(1, 1, 20, 33, 512, PXL_Q8_0, CF_TB | CF_Q8A | CF_TINY, 1, 0),
    /* Q4_0 (kmm8.wgsl, KQ40: 18-byte blocks, the min term 8 d): the same */
    MM(1, 1, 70, 130, 256, PXL_Q4_0, CF_TB | CF_Q8A, 1, 0), MM(1, 1, 100, 100, 768, PXL_Q4_0, CF_TB | CF_Q8A, 0.5f, 1),
    MM(2, 1, 17, 65, 512, PXL_Q4_0, CF_TB | CF_Q8A, -1, 0.25f), MM(1, 3, 12, 20, 256, PXL_Q4_0, CF_TB | CF_Q8A, 1, 0),
    MM(1, 1, 10, 5, 256, PXL_Q4_0, CF_TB | CF_VIEW | CF_Q8A, 1, 0), MM(1, 1, 40, 33, 512, PXL_Q4_0, CF_TB | CF_SLICE | CF_Q8A, 1, 1),
    MM(1, 1, 20, 33, 64, PXL_Q4_0, CF_TB | CF_Q8A, 1, 0), MM(1, 1, 20, 33, 512, PXL_Q4_0, CF_TB | CF_Q8A | CF_TINY, 1, 0),
    /* Q5_0 on 8-bit A (kmm8.wgsl, KQ50): the same shapes, Qwen2.5-0.5B's width (896) and odd-block rows */
    MM(1, 1, 70, 130, 256, PXL_Q5_0, CF_TB | CF_Q8A, 1, 0), MM(1, 1, 100, 100, 768, PXL_Q5_0, CF_TB | CF_Q8A, 0.5f, 1),
    MM(2, 1, 17, 65, 512, PXL_Q5_0, CF_TB | CF_Q8A, -1, 0.25f), MM(1, 3, 12, 20, 256, PXL_Q5_0, CF_TB | CF_Q8A, 1, 0),
    MM(1, 1, 10, 5, 256, PXL_Q5_0, CF_TB | CF_VIEW | CF_Q8A, 1, 0),
    MM(1, 1, 40, 33, 576, PXL_Q5_0, CF_TB | CF_SLICE | CF_Q8A, 1, 1), MM(1, 1, 20, 33, 64, PXL_Q5_0, CF_TB | CF_Q8A, 1, 0),
    MM(1, 1, 20, 33, 512, PXL_Q5_0, CF_TB | CF_Q8A | CF_TINY, 1, 0), MM(1, 1, 33, 70, 896, PXL_Q5_0, CF_TB | CF_Q8A, 1, 0),
    /* one row of Q8_0, Q4_0 or Q5_0 on 8-bit A (qmv_xs with Q8A, K from 512): rows whose blocks start at both
     * word alignments (K = 544, 1056: 578- and 594-byte rows), the residual, a batch over a shared B, views at
     * an odd block, slices, tiny values, the bias row, the fused norm, Qwen2.5-0.5B's widths (896, 4864). Long
     * rows (K = 16384: four halves an invocation at WG 256, two at 512; K = 20480: three at 512, qmv where
     * workgroups stop at 256) check the indexing only: at these K the f32 tolerance also takes A unrounded. */
    MM(1, 1, 1, 45, 544, PXL_Q8_0, CF_TB | CF_Q8A, 1, 0.5f), MM(1, 1, 1, 130, 4096, PXL_Q8_0, CF_TB | CF_Q8A, 1, 0),
    MM(1, 1, 1, 33, 20480, PXL_Q8_0, CF_TB | CF_Q8A, 1, 0), MM(3, 1, 1, 17, 1024, PXL_Q8_0, CF_TB | CF_Q8A, -0.5f, 0),
    MM(1, 1, 1, 9, 1056, PXL_Q8_0, CF_TB | CF_VIEW | CF_Q8A, 1, 0),
    MM(1, 1, 1, 6, 768, PXL_Q8_0, CF_TB | CF_SLICE | CF_Q8A, 1, 1),
    MM(1, 1, 1, 33, 512, PXL_Q8_0, CF_TB | CF_Q8A | CF_TINY, 1, 0),
    MM(1, 1, 1, 37, 896, PXL_Q8_0, CF_TB | CF_BIAS | CF_Q8A, 1, 0),
    NMM(1, 1, 1, 70, 896, PXL_Q8_0, CF_TB | CF_Q8A, 1, 0, 1e-5f),
    MM(1, 1, 1, 65, 1056, PXL_Q4_0, CF_TB | CF_Q8A, 1, 0.5f), MM(1, 1, 1, 37, 16384, PXL_Q4_0, CF_TB | CF_Q8A, 1, 0),
    MM(2, 1, 1, 17, 512, PXL_Q4_0, CF_TB | CF_Q8A, -1, 0), MM(1, 1, 1, 9, 1056, PXL_Q4_0, CF_TB | CF_VIEW | CF_Q8A, 1, 0),
    MM(1, 1, 1, 6, 768, PXL_Q4_0, CF_TB | CF_SLICE | CF_Q8A, 1, 1),
    MM(1, 1, 1, 33, 512, PXL_Q4_0, CF_TB | CF_Q8A | CF_TINY, 1, 0),
    NMM(1, 1, 1, 37, 4096, PXL_Q4_0, CF_TB | CF_Q8A, 1, 1, 1e-5f),
    MM(1, 1, 1, 65, 896, PXL_Q5_0, CF_TB | CF_Q8A, 1, 0.5f), MM(1, 1, 1, 40, 4864, PXL_Q5_0, CF_TB | CF_Q8A, 1, 0),
    MM(2, 1, 1, 17, 544, PXL_Q5_0, CF_TB | CF_Q8A, 1, 0), MM(1, 1, 1, 9, 1056, PXL_Q5_0, CF_TB | CF_VIEW | CF_Q8A, 1, 0),
    MM(1, 1, 1, 6, 576, PXL_Q5_0, CF_TB | CF_SLICE | CF_Q8A, -0.5f, 0),
    MM(1, 1, 1, 33, 512, PXL_Q5_0, CF_TB | CF_Q8A | CF_TINY, 1, 0),
    NMM(1, 1, 1, 40, 896, PXL_Q5_0, CF_TB | CF_BIAS | CF_Q8A, 1, 0, 1e-6f),
    /* the same for Q6_K (kmm8.wgsl, KQ6: blocks on 2-byte offsets, a scale per 16 values) */
    MM(1, 1, 70, 130, 256, PXL_Q6_K, CF_TB | CF_Q8A, 1, 0), MM(1, 1, 100, 100, 768, PXL_Q6_K, CF_TB | CF_Q8A, 0.5f, 1),
    MM(2, 1, 17, 65, 512, PXL_Q6_K, CF_TB | CF_Q8A, -1, 0.25f), MM(1, 3, 12, 21, 256, PXL_Q6_K, CF_TB | CF_Q8A, 1, 0),
    MM(1, 1, 10, 5, 256, PXL_Q6_K, CF_TB | CF_VIEW | CF_Q8A, 1, 0), MM(1, 1, 40, 33, 512, PXL_Q6_K, CF_TB | CF_SLICE | CF_Q8A, 1, 1),
    /* Q6_K with M = 1 (kmv6.wgsl): the same, and views at 3 blocks (630 bytes: words assembled from two) */
    MM(1, 1, 1, 131, 2816, PXL_Q6_K, CF_TB, 1, 1), MM(1, 1, 1, 9, 512, PXL_Q6_K, CF_TB | CF_VIEW, 1, 0),
    /* and on 8-bit A, products of more than 1024 rows (kmv6q: 16-byte fields at every even offset; rows of 11
     * blocks, 2,310 bytes, start at every alignment), batched, a view, a slice, tiny values */
    MM(1, 1, 1, 1031, 2816, PXL_Q6_K, CF_TB | CF_Q8A, 1, 1), MM(1, 1, 1, 1030, 4096, PXL_Q6_K, CF_TB | CF_Q8A, 1, 0),
    MM(1, 1, 1, 1033, 512, PXL_Q6_K, CF_TB | CF_VIEW | CF_Q8A, 1, 0),
    MM(1, 1, 1, 1030, 768, PXL_Q6_K, CF_TB | CF_SLICE | CF_Q8A, -0.5f, 0),
    MM(3, 1, 1, 1025, 256, PXL_Q6_K, CF_TB | CF_Q8A, 1, 0.5f), MM(2, 2, 1, 1027, 512, PXL_Q6_K, CF_TB | CF_Q8A, 1, 0),
    MM(1, 1, 1, 1040, 512, PXL_Q6_K, CF_TB | CF_Q8A | CF_TINY, 1, 0),
    MM(1, 1, 1, 6, 768, PXL_Q6_K, CF_TB | CF_SLICE, -0.5f, 0), MM(3, 1, 1, 17, 256, PXL_Q6_K, CF_TB, 1, 0.5f),
    /* f16 / bf16 with M = 1 and K a multiple of 8 (hmv.wgsl, 16-byte loads): odd N, a unit count that is not a
     * multiple of the row group, the residual added, a batch with a broadcast A, views and row slices */
    MM(1, 1, 1, 67, 1024, PXL_F16, CF_TB, 1, 0), MM(1, 1, 1, 33, 264, PXL_BF16, CF_TB, -0.5f, 1),
    MM(1, 3, 1, 19, 128, PXL_F16, CF_TB, 1, 0.5f), MM(1, 1, 1, 9, 512, PXL_F16, CF_TB | CF_VIEW, 1, 0),
    MM(1, 1, 1, 6, 768, PXL_BF16, CF_TB | CF_SLICE, 1, 0), MM(2, 2, 1, 5, 8, PXL_F16, CF_TB, 1, 0),
    /* rows of 2048 and more, which take row groups of 128 (matmul.c, HMV_TPR_MAX): with the norm, the bias */
    MM(1, 1, 1, 37, 2048, PXL_F16, CF_TB, 1, 0.5f), NMM(1, 1, 1, 19, 4096, PXL_BF16, CF_TB, 1, 0, 1e-5f),
    MM(1, 1, 1, 21, 2056, PXL_F16, CF_TB | CF_BIAS, -0.5f, 0),
    /* quantized views: blocks at an offset of 3 blocks (102 / 54 / 432 / 630 bytes), row slices */
    MM(1, 1, 3, 9, 64, PXL_Q8_0, CF_TB | CF_VIEW, 1, 0), MM(1, 1, 1, 9, 64, PXL_Q4_0, CF_TB | CF_VIEW, 1, 0),
    MM(1, 1, 10, 5, 256, PXL_Q4_K, CF_TB | CF_VIEW, 1, 0), MM(1, 1, 1, 5, 256, PXL_Q6_K, CF_TB | CF_SLICE, 1, 0),
    MM(1, 1, 65, 9, 96, PXL_Q4_0, CF_TB | CF_SLICE, 1, 0), MM(1, 1, 2, 3, 64, PXL_Q8_0, CF_TB | CF_BAD, 1, 0),
    /* Q5_0, Q4_1, Q5_1 (32) and Q5_K (256), wgsl/xquant.wgsl: matvec (M <= 8, 1 to 4 rows per group), tiled
     * (M > 8), batches and broadcasts, alpha / beta, views at 3 blocks (66 / 60 / 72 / 528 bytes), row slices */
    MM(1, 1, 1, 7, 32, PXL_Q5_0, CF_TB, 1, 0), MM(1, 1, 2, 33, 96, PXL_Q5_0, CF_TB, -0.75f, 0.5f),
    MM(1, 1, 1, 130, 1024, PXL_Q5_0, CF_TB, 1, 0), MM(1, 1, 8, 37, 160, PXL_Q5_0, CF_TB, 1, 0),
    /* Q5_0 one-row products (qmv_xs from K = 512, quant.wgsl's qmv below): two halves an invocation,
     * the norm, Qwen2.5-0.5B's width 896, a slice of odd-block rows, views of several rows of A, SwiGLU */
    MM(1, 1, 1, 65, 4096, PXL_Q5_0, CF_TB, 1, 0.5f), NMM(1, 1, 1, 33, 2048, PXL_Q5_0, CF_TB, 1, 0, 1e-5f),
    NMM(1, 1, 1, 40, 896, PXL_Q5_0, CF_TB, 1, 1, 1e-5f), MM(1, 1, 1, 9, 1056, PXL_Q5_0, CF_TB | CF_SLICE, -0.5f, 0),
    MM(1, 1, 4, 21, 1024, PXL_Q5_0, CF_TB | CF_VIEW, 1, 0), SWG(1, 37, 896, PXL_Q5_0, CF_PACKED | CF_NORM, 1e-5f),
    /* qmv_xs at its shortest rows (32 to 63 half blocks, K 512 to 1023; lanes past the row idle): Q8_0 and
     * Q4_0, on odd-block rows, with the norm as for Qwen2.5-0.5B's logits, and batched */
    NMM(1, 1, 1, 70, 896, PXL_Q8_0, CF_TB, 1, 0, 1e-5f), MM(1, 1, 1, 45, 544, PXL_Q8_0, CF_TB, 1, 0.5f),
    MM(1, 1, 1, 33, 992, PXL_Q4_0, CF_TB, -1, 0), MM(2, 2, 1, 17, 512, PXL_Q4_0, CF_TB, 1, 0),
    MM(1, 1, 1, 19, 608, PXL_Q5_0, CF_TB | CF_SLICE, 1, 0),
    /* short rows in qmv (K < 1024: a narrower row group, one step): tiny5's K = 64 and the shipped model's 256 */
    NMM(1, 1, 1, 130, 64, PXL_Q5_0, CF_TB, 1, 0, 1e-5f), NMM(1, 1, 1, 67, 64, PXL_Q8_0, CF_TB, 1, 1, 1e-5f),
    MM(1, 1, 1, 300, 256, PXL_Q8_0, CF_TB, 1, 0), MM(1, 1, 1, 33, 480, PXL_Q4_0, CF_TB, 1, 0.5f),
    MM(1, 1, 3, 40, 128, PXL_Q5_0, CF_TB, 1, 0), SWG(1, 172, 64, PXL_Q5_0, CF_PACKED | CF_NORM, 1e-5f),
    SWG(1, 43, 256, PXL_Q8_0, CF_PACKED | CF_NORM, 1e-5f), SWG(2, 20, 64, PXL_Q4_0, CF_PACKED, 0),
    MM(1, 1, 66, 70, 96, PXL_Q5_0, CF_TB, 1, 0.5f), MM(3, 3, 1, 45, 128, PXL_Q5_0, CF_TB, 1, 0),
    MM(2, 1, 17, 65, 64, PXL_Q5_0, CF_TB, -1, 0.25f), MM(1, 2, 3, 19, 64, PXL_Q5_0, CF_TB, 2, 0),
    MM(1, 1, 1, 9, 64, PXL_Q5_0, CF_TB | CF_VIEW, 1, 0), MM(1, 1, 10, 9, 64, PXL_Q5_0, CF_TB | CF_VIEW, 1, 0),
    MM(1, 1, 65, 9, 96, PXL_Q5_0, CF_TB | CF_SLICE, 1, 0), MM(1, 1, 2, 3, 64, PXL_Q5_0, CF_TB | CF_BAD, 1, 0),
    MM(1, 1, 1, 7, 256, PXL_Q5_K, CF_TB, 1, 0), MM(1, 1, 8, 130, 768, PXL_Q5_K, CF_TB, -0.75f, 0.5f),
    MM(1, 1, 1, 130, 4096, PXL_Q5_K, CF_TB, 1, 0), MM(1, 1, 3, 1, 768, PXL_Q5_K, CF_TB, 1, 0.5f),
    MM(1, 1, 9, 7, 1024, PXL_Q5_K, CF_TB, 1, 0), MM(1, 1, 70, 130, 256, PXL_Q5_K, CF_TB, 1, 0),
    MM(3, 3, 1, 45, 512, PXL_Q5_K, CF_TB, 1, 0), MM(2, 1, 17, 65, 512, PXL_Q5_K, CF_TB, -1, 0.25f),
    MM(1, 3, 66, 31, 256, PXL_Q5_K, CF_TB, 0.5f, 0), MM(1, 1, 10, 5, 256, PXL_Q5_K, CF_TB | CF_VIEW, 1, 0),
    MM(1, 1, 1, 5, 256, PXL_Q5_K, CF_TB | CF_SLICE, 1, 0), MM(1, 1, 1, 5, 512, PXL_Q5_K, CF_TB | CF_VIEW, 1, 0),
    MM(1, 1, 1, 7, 32, PXL_Q4_1, CF_TB, 1, 0), MM(1, 1, 4, 33, 96, PXL_Q4_1, CF_TB, -0.75f, 0.5f),
    MM(1, 1, 66, 70, 96, PXL_Q4_1, CF_TB, 1, 0), MM(2, 1, 1, 45, 128, PXL_Q4_1, CF_TB, 1, 0),
    MM(1, 1, 1, 9, 64, PXL_Q4_1, CF_TB | CF_VIEW, 1, 0), MM(1, 1, 65, 9, 96, PXL_Q4_1, CF_TB | CF_SLICE, 1, 0),
    MM(1, 1, 1, 7, 32, PXL_Q5_1, CF_TB, 1, 0), MM(1, 1, 4, 33, 96, PXL_Q5_1, CF_TB, -0.75f, 0.5f),
    MM(1, 1, 66, 70, 96, PXL_Q5_1, CF_TB, 1, 0), MM(1, 2, 1, 45, 128, PXL_Q5_1, CF_TB, 1, 0),
    MM(1, 1, 3, 9, 64, PXL_Q5_1, CF_TB | CF_VIEW, 1, 0), MM(1, 1, 65, 9, 96, PXL_Q5_1, CF_TB | CF_SLICE, 1, 0),
    /* Q2_K and Q3_K (256; xquant.wgsl): the same shapes as Q5_K; views at 3 blocks (252 / 330 bytes: Q3_K
     * rows start at odd half words), row slices, a bad call */
    MM(1, 1, 1, 7, 256, PXL_Q2_K, CF_TB, 1, 0), MM(1, 1, 8, 130, 768, PXL_Q2_K, CF_TB, -0.75f, 0.5f),
    MM(1, 1, 1, 130, 4096, PXL_Q2_K, CF_TB, 1, 0), MM(1, 1, 3, 1, 768, PXL_Q2_K, CF_TB, 1, 0.5f),
    MM(1, 1, 9, 7, 1024, PXL_Q2_K, CF_TB, 1, 0), MM(1, 1, 70, 130, 256, PXL_Q2_K, CF_TB, 1, 0),
    MM(3, 3, 1, 45, 512, PXL_Q2_K, CF_TB, 1, 0), MM(2, 1, 17, 65, 512, PXL_Q2_K, CF_TB, -1, 0.25f),
    MM(1, 3, 66, 31, 256, PXL_Q2_K, CF_TB, 0.5f, 0), MM(1, 1, 10, 5, 256, PXL_Q2_K, CF_TB | CF_VIEW, 1, 0),
    MM(1, 1, 1, 5, 256, PXL_Q2_K, CF_TB | CF_SLICE, 1, 0), MM(1, 1, 2, 3, 256, PXL_Q2_K, CF_TB | CF_BAD, 1, 0),
    MM(1, 1, 1, 7, 256, PXL_Q3_K, CF_TB, 1, 0), MM(1, 1, 8, 130, 768, PXL_Q3_K, CF_TB, -0.75f, 0.5f),
    MM(1, 1, 1, 130, 4096, PXL_Q3_K, CF_TB, 1, 0), MM(1, 1, 3, 1, 768, PXL_Q3_K, CF_TB, 1, 0.5f),
    MM(1, 1, 9, 7, 1024, PXL_Q3_K, CF_TB, 1, 0), MM(1, 1, 70, 130, 256, PXL_Q3_K, CF_TB, 1, 0),
    MM(3, 3, 1, 45, 512, PXL_Q3_K, CF_TB, 1, 0), MM(2, 1, 17, 65, 512, PXL_Q3_K, CF_TB, -1, 0.25f),
    MM(1, 3, 66, 31, 256, PXL_Q3_K, CF_TB, 0.5f, 0), MM(1, 1, 10, 5, 256, PXL_Q3_K, CF_TB | CF_VIEW, 1, 0),
    MM(1, 1, 1, 5, 256, PXL_Q3_K, CF_TB | CF_SLICE, 1, 0), MM(1, 1, 1, 5, 512, PXL_Q3_K, CF_TB | CF_VIEW, 1, 0),
    MM(1, 1, 2, 3, 256, PXL_Q3_K, CF_TB | CF_BAD, 1, 0),
    /* bf16 B (matmul.wgsl): every transpose, matvecs, batches, views at an odd element offset */
    MM4(7, 13, 17, PXL_BF16, 0, -0.5f, 0.25f), MM4(1, 100, 257, PXL_BF16, 0, 1, 0), MM4(33, 1, 70, PXL_BF16, 0, 2, 0),
    MM(2, 2, 1, 200, 96, PXL_BF16, CF_TB, 1, 0), MM(1, 3, 9, 19, 33, PXL_BF16, CF_TB, 1, 0.5f),
    MM(1, 1, 1, 33, 64, PXL_BF16, CF_VIEW | CF_TB, 1, 0), MM(2, 2, 9, 5, 11, PXL_BF16, CF_VIEW, 1, 0),
    MM(1, 1, 7, 13, 17, PXL_BF16, CF_SLICE | CF_TB, 1, 0), MM(1, 1, 4, 5, 6, PXL_BF16, CF_BAD, 1, 0.5f),

    /* residual adds: C = C + A . W^T (beta 1) through every small-M kernel (gemv_t f32 / f16 / bf16; qmv_xs,
     * qmv (M 1 outside qmv_xs's range, 2, 8), kmv, xmv), plain and as views */
    MM(1, 1, 1, 37, 100, PXL_F32, CF_TB, 1, 1), MM(1, 1, 1, 37, 100, PXL_F16, CF_TB, 1, 1),
    MM(1, 1, 1, 37, 100, PXL_BF16, CF_TB, 1, 1), MM(1, 1, 1, 45, 1056, PXL_Q8_0, CF_TB, 1, 1),
    MM(1, 1, 1, 45, 96, PXL_Q4_0, CF_TB, 1, 1), MM(1, 1, 2, 45, 96, PXL_Q8_0, CF_TB, 1, 1),
    MM(1, 1, 8, 45, 160, PXL_Q4_0, CF_TB, 1, 1), MM(1, 1, 1, 33, 512, PXL_Q4_K, CF_TB, 1, 1),
    MM(1, 1, 8, 33, 256, PXL_Q6_K, CF_TB, 1, 1), MM(1, 1, 2, 33, 256, PXL_Q5_K, CF_TB, 1, 1),
    MM(1, 1, 1, 33, 64, PXL_Q4_1, CF_TB, 1, 1), MM(1, 1, 1, 9, 1024, PXL_Q4_0, CF_TB | CF_VIEW, 1, 1),
    MM(1, 1, 2, 9, 256, PXL_Q4_K, CF_TB | CF_SLICE, 1, 1), MM(1, 1, 1, 9, 64, PXL_F32, CF_TB | CF_VIEW, 1, 1),

    /* -- matmul with the fused RMSNorm (norm option): the fused matrix-vector kernels (M <= 8: gemv_t for
     * f32 / f16 / bf16 at M = 1, qmv_xs, qmv, kmv, xmv), the split path (M > 8, B stored [K, N], the CPU),
     * K not a multiple of 4 where the dtype allows it, eps 0, alpha / beta, residual adds, batches, views */
    NMM(1, 1, 1, 33, 100, PXL_F32, CF_TB, 1, 0, 1e-5f), NMM(1, 1, 1, 70, 257, PXL_F32, CF_TB, -0.5f, 1, 1e-6f),
    NMM(1, 1, 2, 7, 17, PXL_F32, CF_TB, 1, 0, 1e-5f), NMM(1, 1, 8, 9, 31, PXL_F32, CF_TB, 1, 1, 0),
    NMM(1, 1, 13, 20, 40, PXL_F32, CF_TB, 1, 0, 1e-5f), NMM(1, 1, 1, 9, 31, PXL_F32, 0, 1, 0, 1e-5f),
    NMM(2, 2, 1, 50, 96, PXL_F32, CF_TB, 1, 0, 1e-5f), NMM(1, 1, 1, 33, 64, PXL_F32, CF_TB | CF_VIEW, 1, 1, 1e-5f),
    NMM(1, 1, 1, 100, 257, PXL_F16, CF_TB, -0.5f, 0.25f, 1e-5f), NMM(1, 1, 3, 20, 33, PXL_F16, CF_TB, 1, 0, 1e-5f),
    NMM(1, 1, 1, 33, 70, PXL_BF16, CF_TB, 1, 1, 1e-5f), NMM(1, 1, 1, 13, 17, PXL_F32, CF_TB | CF_SLICE, 1, 0, 1e-5f),
    NMM(1, 1, 1, 33, 512, PXL_F16, CF_TB, 1, 1, 1e-5f), NMM(1, 1, 1, 20, 264, PXL_BF16, CF_TB, -0.5f, 0, 1e-6f),
    NMM(1, 1, 1, 45, 1056, PXL_Q8_0, CF_TB, 1, 0, 1e-5f), NMM(1, 1, 1, 37, 4096, PXL_Q4_0, CF_TB, 1, 1, 1e-5f),
    NMM(1, 1, 1, 37, 9216, PXL_Q4_0, CF_TB, 1, 0, 1e-6f), NMM(1, 1, 1, 9, 96, PXL_Q8_0, CF_TB, 1, 1, 1e-5f),
    NMM(1, 1, 2, 33, 96, PXL_Q8_0, CF_TB, 1, 0, 1e-5f), NMM(1, 1, 8, 33, 160, PXL_Q4_0, CF_TB, -0.75f, 1, 1e-5f),
    NMM(1, 1, 9, 33, 64, PXL_Q8_0, CF_TB, 1, 0, 1e-5f), NMM(1, 1, 17, 40, 96, PXL_Q4_0, CF_TB, 1, 1, 1e-5f),
    NMM(1, 1, 1, 9, 1056, PXL_Q8_0, CF_TB | CF_VIEW, 1, 1, 1e-5f), NMM(1, 1, 3, 9, 64, PXL_Q4_0, CF_TB | CF_VIEW, 1, 0, 1e-5f),
    NMM(3, 3, 1, 45, 128, PXL_Q8_0, CF_TB, 1, 0, 1e-5f), NMM(2, 1, 2, 19, 96, PXL_Q4_0, CF_TB, 1, 1, 1e-5f),
    NMM(1, 1, 1, 33, 768, PXL_Q4_K, CF_TB, 1, 0, 1e-5f), NMM(1, 1, 1, 33, 768, PXL_Q4_K, CF_TB | CF_Q8A, 1, 0, 1e-5f),
    NMM(1, 1, 1, 9, 2816, PXL_Q4_K, CF_TB | CF_VIEW | CF_Q8A, 1, 1, 1e-5f), NMM(2, 1, 1, 9, 256, PXL_Q4_K, CF_TB | CF_Q8A, 1, 0, 0),
    NMM(1, 1, 1, 1033, 768, PXL_Q6_K, CF_TB | CF_Q8A, 1, 0, 1e-5f),
    NMM(1, 1, 1, 1029, 2816, PXL_Q6_K, CF_TB | CF_VIEW | CF_Q8A, 1, 1, 1e-5f),
    NMM(1, 1, 1, 1040, 1536, PXL_Q6_K, CF_TB | CF_BIAS | CF_Q8A, 1, 0, 1e-6f),
    NMM(1, 1, 2, 33, 256, PXL_Q4_K, CF_TB, 1, 1, 1e-5f),
    NMM(1, 1, 8, 17, 512, PXL_Q4_K, CF_TB, 1, 1, 0), NMM(1, 1, 9, 17, 256, PXL_Q4_K, CF_TB, 1, 0, 1e-5f),
    NMM(1, 1, 1, 33, 768, PXL_Q6_K, CF_TB, 1, 1, 1e-5f), NMM(1, 1, 2, 33, 256, PXL_Q6_K, CF_TB, 1, 0, 1e-5f),
    NMM(1, 1, 8, 17, 512, PXL_Q6_K, CF_TB, -0.5f, 0.5f, 1e-5f), NMM(1, 1, 9, 17, 256, PXL_Q6_K, CF_TB, 1, 1, 1e-5f),
    NMM(1, 1, 1, 33, 768, PXL_Q5_K, CF_TB, 1, 1, 1e-5f), NMM(1, 1, 2, 33, 256, PXL_Q5_K, CF_TB, 1, 0, 1e-5f),
    NMM(1, 1, 8, 17, 512, PXL_Q5_K, CF_TB, 1, 1, 1e-5f), NMM(1, 1, 9, 17, 256, PXL_Q5_K, CF_TB, 1, 0, 1e-5f),
    NMM(1, 1, 1, 9, 256, PXL_Q4_K, CF_TB | CF_VIEW, 1, 1, 1e-5f), NMM(1, 1, 2, 9, 256, PXL_Q6_K, CF_TB | CF_SLICE, 1, 0, 1e-5f),
    NMM(2, 2, 2, 19, 256, PXL_Q4_K, CF_TB, 1, 0, 1e-5f), NMM(1, 1, 1, 9, 512, PXL_Q5_K, CF_TB | CF_VIEW, 1, 0, 1e-5f),
    NMM(1, 1, 1, 33, 96, PXL_Q4_1, CF_TB, 1, 1, 1e-5f), NMM(1, 1, 3, 33, 64, PXL_Q5_0, CF_TB, 1, 0, 1e-5f),
    NMM(1, 1, 1, 33, 256, PXL_Q2_K, CF_TB, 1, 0, 1e-5f), NMM(1, 1, 4, 33, 256, PXL_Q3_K, CF_TB, 1, 1, 1e-5f),
    NMM(1, 1, 1, 33, 64, PXL_Q5_1, CF_TB | CF_VIEW, 1, 0, 1e-5f),
    NMM(1, 1, 2, 3, 64, PXL_Q8_0, CF_TB | CF_BAD, 1, 0, 1e-5f), NMM(1, 1, 1, 5, 5, PXL_F32, CF_TB | CF_BAD, 1, 1, 1e-5f),
    NMM(1, 1, 1, 64, 64, PXL_F32, CF_TB | CF_BAD, 1, 0, 1e-5f),

    /* -- matmul with a bias row (bias option): added as C is stored by qmv_xs (Q8_0 / Q5_0 / Q4_0 rows of
     * 512 to 4096 values, Qwen2.5-0.5B's 896 with the norm), qmv (short rows, M 2 to 8, batches), kmv4,
     * kmv4q and kmv6 (Q4_K, Q5_K, Q6_K with M = 1, with the norm, on 8-bit A, batched) and hmv (f16 and
     * bf16 with M = 1), and after the product elsewhere (kmv at M = 2, xmv, gemv_t for f32, for an f16 view
     * off 8 elements and for K = 33; M > 8; the CPU); with alpha / beta (the bias comes last), views and
     * slices, and the bad-argument sets (a bias of the wrong length) */
    MM(1, 1, 1, 37, 896, PXL_Q8_0, CF_TB | CF_BIAS, 1, 0), NMM(1, 1, 1, 40, 896, PXL_Q5_0, CF_TB | CF_BIAS, 1, 0, 1e-6f),
    MM(1, 1, 1, 33, 1024, PXL_Q5_0, CF_TB | CF_BIAS, -0.5f, 1), MM(1, 1, 1, 19, 4096, PXL_Q4_0, CF_TB | CF_BIAS, 1, 0),
    MM(1, 1, 1, 45, 128, PXL_Q8_0, CF_TB | CF_BIAS, 1, 0.5f), NMM(1, 1, 1, 67, 64, PXL_Q5_0, CF_TB | CF_BIAS, 1, 0, 1e-5f),
    MM(1, 1, 3, 40, 128, PXL_Q4_0, CF_TB | CF_BIAS, 1, 0), NMM(1, 1, 8, 33, 96, PXL_Q8_0, CF_TB | CF_BIAS, 1, 1, 1e-5f),
    MM(2, 1, 2, 17, 64, PXL_Q5_0, CF_TB | CF_BIAS, 1, 0), MM(3, 3, 1, 9, 1024, PXL_Q8_0, CF_TB | CF_BIAS, 1, 0),
    MM(1, 1, 1, 9, 1056, PXL_Q8_0, CF_TB | CF_BIAS | CF_VIEW, 1, 0), MM(1, 1, 2, 9, 64, PXL_Q4_0, CF_TB | CF_BIAS | CF_SLICE, 1, 0),
    MM(1, 1, 1, 33, 512, PXL_Q4_K, CF_TB | CF_BIAS, 1, 0), NMM(1, 1, 1, 33, 768, PXL_Q4_K, CF_TB | CF_BIAS | CF_Q8A, 1, 0, 1e-5f),
    MM(1, 1, 1, 33, 256, PXL_Q6_K, CF_TB | CF_BIAS, 1, 1), MM(1, 1, 1, 20, 96, PXL_Q5_1, CF_TB | CF_BIAS, 1, 0),
    MM(1, 1, 9, 33, 64, PXL_Q8_0, CF_TB | CF_BIAS, 1, 0), MM(1, 1, 1, 33, 100, PXL_F32, CF_TB | CF_BIAS, 1, 1),
    NMM(1, 1, 1, 20, 64, PXL_F16, CF_TB | CF_BIAS, 1, 0, 1e-5f), MM(2, 2, 5, 7, 9, PXL_F32, CF_BIAS, -1, 0.5f),
    MM(1, 1, 13, 20, 40, PXL_F32, CF_TA | CF_BIAS, 1, 0), NMM(1, 1, 13, 20, 40, PXL_F32, CF_TB | CF_BIAS, 1, 0, 1e-5f),
    MM(1, 1, 1, 33, 512, PXL_Q5_K, CF_TB | CF_BIAS, 1, 0), NMM(1, 1, 1, 70, 1536, PXL_Q4_K, CF_TB | CF_BIAS, 1, 0, 1e-6f),
    NMM(1, 1, 1, 40, 1536, PXL_Q6_K, CF_TB | CF_BIAS, 1, 0, 1e-6f), MM(2, 2, 1, 17, 256, PXL_Q4_K, CF_TB | CF_BIAS | CF_Q8A, 1, 0),
    MM(1, 1, 1, 9, 256, PXL_Q4_K, CF_TB | CF_BIAS | CF_VIEW, 1, 0), MM(1, 1, 2, 33, 256, PXL_Q4_K, CF_TB | CF_BIAS, 1, 0),
    MM(1, 1, 1, 9, 256, PXL_Q6_K, CF_TB | CF_BIAS | CF_SLICE, -1, 0.5f),
    MM(1, 1, 1, 45, 256, PXL_BF16, CF_TB | CF_BIAS, 1, 1), NMM(1, 1, 1, 33, 512, PXL_F16, CF_TB | CF_BIAS, -0.5f, 0, 1e-5f),
    MM(2, 2, 1, 17, 64, PXL_F16, CF_TB | CF_BIAS, 1, 0), MM(1, 1, 1, 9, 64, PXL_F16, CF_TB | CF_BIAS | CF_VIEW, 1, 0),
    MM(1, 1, 1, 20, 33, PXL_F16, CF_TB | CF_BIAS, 1, 0.5f), MM(1, 1, 1, 3, 64, PXL_F16, CF_TB | CF_BIAS | CF_BAD, 1, 0),
    MM(1, 1, 2, 3, 64, PXL_Q8_0, CF_TB | CF_BIAS | CF_BAD, 1, 0), NMM(1, 1, 1, 5, 5, PXL_F32, CF_TB | CF_BIAS | CF_BAD, 1, 1, 1e-5f),
    MM(1, 1, 1, 3, 256, PXL_Q4_K, CF_TB | CF_BIAS | CF_BAD, 1, 0),

    /* -- matmul_swiglu: gate, up and SwiGLU, with and without the norm, M 1, 2, 8 and 9 */
    SWG(1, 33, 100, PXL_F32, 0, 0), SWG(1, 33, 100, PXL_F32, CF_NORM, 1e-5f), SWG(2, 9, 31, PXL_F32, CF_NORM, 1e-5f),
    SWG(8, 9, 40, PXL_F32, 0, 0), SWG(13, 20, 40, PXL_F32, CF_NORM, 1e-5f), SWG(1, 45, 257, PXL_F16, CF_NORM, 1e-5f),
    SWG(2, 45, 33, PXL_F16, 0, 0), SWG(1, 33, 70, PXL_BF16, CF_NORM, 1e-5f), SWG(1, 13, 2048, PXL_F16, CF_NORM, 1e-5f),
    SWG(1, 45, 1056, PXL_Q8_0, CF_NORM, 1e-5f), SWG(1, 45, 96, PXL_Q8_0, 0, 0), SWG(2, 33, 96, PXL_Q8_0, CF_NORM, 1e-5f),
    SWG(8, 33, 160, PXL_Q8_0, CF_NORM, 1e-5f), SWG(9, 20, 64, PXL_Q8_0, CF_NORM, 1e-5f),
    SWG(1, 37, 4096, PXL_Q4_0, CF_NORM, 1e-5f), SWG(2, 37, 160, PXL_Q4_0, 0, 0), SWG(8, 37, 64, PXL_Q4_0, CF_NORM, 1e-5f),
    SWG(9, 20, 96, PXL_Q4_0, 0, 0), SWG(1, 33, 768, PXL_Q4_K, CF_NORM, 1e-5f), SWG(2, 33, 256, PXL_Q4_K, 0, 0),
    SWG(8, 17, 512, PXL_Q4_K, CF_NORM, 1e-5f), SWG(9, 17, 256, PXL_Q4_K, CF_NORM, 1e-5f),
    SWG(1, 33, 768, PXL_Q6_K, CF_NORM, 1e-5f), SWG(2, 33, 256, PXL_Q6_K, CF_NORM, 1e-5f),
    SWG(8, 17, 512, PXL_Q6_K, 0, 0), SWG(9, 17, 256, PXL_Q6_K, CF_NORM, 1e-5f),
    SWG(1, 33, 768, PXL_Q5_K, CF_NORM, 1e-5f), SWG(2, 33, 256, PXL_Q5_K, 0, 0), SWG(8, 17, 512, PXL_Q5_K, CF_NORM, 1e-5f),
    SWG(9, 17, 256, PXL_Q5_K, CF_NORM, 1e-5f), SWG(1, 33, 64, PXL_Q4_1, CF_NORM, 1e-5f), SWG(3, 33, 256, PXL_Q3_K, 0, 0),
    /* -- matmul_multi: a Q4_K or Q5_K and a Q6_K product of one row in one dispatch (kmv46: c0 and c1 views
     * of one tensor), either order, the norm, 8-bit A, alpha and beta, row groups of both parts past one
     * workgroup; the products in turn: separate outputs, two rows, other dtypes */
    MMM(1, 40, 9, 256, PXL_Q4_K, PXL_Q6_K, CF_PACKED, 0, 0, 0),
    MMM(1, 40, 9, 512, PXL_Q4_K, PXL_Q6_K, CF_PACKED | CF_NORM, 0, 0, 1e-5f),
    MMM(1, 40, 9, 512, PXL_Q4_K, PXL_Q6_K, CF_PACKED | CF_NORM | CF_Q8A, 0, 0, 1e-5f),
    MMM(1, 33, 70, 768, PXL_Q6_K, PXL_Q4_K, CF_PACKED | CF_Q8A, 0.5f, 0.25f, 0),
    MMM(1, 17, 16, 256, PXL_Q5_K, PXL_Q6_K, CF_PACKED | CF_NORM, 0, 0, 1e-5f),
    MMM(1, 17, 16, 512, PXL_Q5_K, PXL_Q6_K, CF_PACKED | CF_NORM | CF_Q8A, 0, 0, 1e-5f),
    MMM(1, 300, 64, 2048, PXL_Q4_K, PXL_Q6_K, CF_PACKED | CF_NORM | CF_Q8A, 0, 0, 1e-5f),
    MMM(1, 40, 1100, 512, PXL_Q4_K, PXL_Q6_K, CF_PACKED | CF_NORM | CF_Q8A, 0, 0, 1e-5f),
    MMM(1, 40, 9, 256, PXL_Q4_K, PXL_Q6_K, CF_BAD, 0, 0, 0),
    MMM(2, 40, 9, 256, PXL_Q4_K, PXL_Q6_K, CF_PACKED | CF_NORM, 0, 0, 1e-5f),
    MMM(1, 40, 9, 64, PXL_Q8_0, PXL_F32, CF_PACKED | CF_NORM, 0, 0, 1e-5f),
    MMM(1, 33, 10, 256, PXL_Q4_K, PXL_Q4_K, CF_PACKED, 0, 0.5f, 0),
    /* the pairs with bias rows (qmv_pair.wgsl for Q8_0, Q4_0 and Q5_0; kmv46.wgsl's BIAS and BIAS2): Qwen2.5-0.5B's
     * shape, only the second product's bias (CF_NO_BIAS), no bias, qmv_xs's long rows (K = 8192), rows too short for
     * qmv_xs (K = 256: in turn), the K-quant pair either order, two rows, outputs in two buffers */
    MMM(1, 1024, 128, 896, PXL_Q5_0, PXL_Q8_0, CF_PACKED | CF_NORM | CF_BIAS, 0, 0, 1e-6f),
    MMM(1, 40, 9, 512, PXL_Q8_0, PXL_Q4_0, CF_PACKED | CF_BIAS | CF_NO_BIAS, 0.5f, 0.25f, 0),
    MMM(1, 33, 20, 1024, PXL_Q4_0, PXL_Q5_0, CF_PACKED | CF_NORM, 0, 0, 1e-5f),
    MMM(1, 17, 70, 8192, PXL_Q5_0, PXL_Q8_0, CF_PACKED | CF_BIAS, 0, 0, 0),
    MMM(1, 40, 9, 256, PXL_Q8_0, PXL_Q5_0, CF_PACKED | CF_BIAS, 0, 0, 0),
    MMM(1, 40, 9, 512, PXL_Q4_K, PXL_Q6_K, CF_PACKED | CF_NORM | CF_Q8A | CF_BIAS, 0, 0, 1e-5f),
    MMM(1, 33, 16, 256, PXL_Q6_K, PXL_Q5_K, CF_PACKED | CF_BIAS | CF_NO_BIAS, 1, 0.5f, 0),
    MMM(2, 40, 9, 512, PXL_Q5_0, PXL_Q8_0, CF_PACKED | CF_BIAS, 0, 0, 0),
    MMM(1, 40, 9, 896, PXL_Q5_0, PXL_Q8_0, CF_BIAS, 0, 0, 0),
    MMM(1, 40, 9, 512, PXL_Q5_0, PXL_Q8_0, CF_BAD | CF_BIAS, 0, 0, 0),
    /* the Q8_0 / Q4_0 / Q5_0 pairs on 8-bit A (qmv_pair.wgsl with Q8A): Qwen2.5-0.5B's shape, long rows, a pair
     * whose rows are too short for qmv_xs (K = 256: in turn, A as given on a GPU) */
    MMM(1, 1024, 128, 896, PXL_Q5_0, PXL_Q8_0, CF_PACKED | CF_NORM | CF_BIAS | CF_Q8A, 0, 0, 1e-6f),
    MMM(1, 17, 70, 8192, PXL_Q4_0, PXL_Q8_0, CF_PACKED | CF_Q8A, 0.5f, 0.25f, 0),
    MMM(1, 40, 9, 256, PXL_Q8_0, PXL_Q5_0, CF_PACKED | CF_BIAS | CF_Q8A, 0, 0, 0),
    /* prompts on 8-bit A (a GPU rounds A once for both products: pxl_matmul_multi_q8): K-quants with the outputs
     * apart and as views of one tensor, the legacy formats with alpha and beta, Q5_K beside Q5_0, tiles part
     * full; and what runs the products in turn: an f32 product, a norm, a bias */
    MMM(16, 40, 72, 256, PXL_Q4_K, PXL_Q6_K, CF_Q8A, 0, 0, 0),
    MMM(70, 130, 33, 512, PXL_Q6_K, PXL_Q4_K, CF_PACKED | CF_Q8A, 0, 0, 0),
    MMM(70, 33, 130, 512, PXL_Q8_0, PXL_Q4_0, CF_Q8A, 0.5f, 0.25f, 0),
    MMM(9, 64, 65, 256, PXL_Q5_0, PXL_Q5_K, CF_Q8A, 0, 0, 0),
    MMM(16, 40, 9, 256, PXL_Q4_K, PXL_F32, CF_Q8A, 0, 0, 0),
    MMM(16, 40, 9, 256, PXL_Q8_0, PXL_Q4_K, CF_Q8A | CF_BIAS, 0, 0, 0),
    /* the same with the norm, made and rounded once (qa8n: one workgroup a row, rows of fewer and more groups
     * of 16 than its invocations); without 8-bit A or on the CPU, one pxl_rmsnorm for both */
    MMM(16, 40, 9, 256, PXL_Q4_K, PXL_Q6_K, CF_Q8A | CF_NORM, 0, 0, 1e-5f),
    MMM(70, 130, 33, 5632, PXL_Q8_0, PXL_Q4_K, CF_PACKED | CF_Q8A | CF_NORM, 0.5f, 0.25f, 1e-6f),
    MMM(9, 64, 65, 576, PXL_Q5_0, PXL_Q4_0, CF_Q8A | CF_NORM, 0, 0, 0),
    MMM(16, 40, 72, 512, PXL_Q4_K, PXL_Q6_K, CF_NORM, 0, 0, 1e-5f),
    MMM(12, 40, 9, 256, PXL_Q8_0, PXL_F32, CF_Q8A | CF_NORM, 0, 0, 1e-5f),
    /* products whose weights are rows of one matrix in turn (a layer's Q, K and V, or gate and up): a GPU makes
     * them one dispatch (kmm8wn) where each but the last output is whole tiles wide and K would not be split;
     * tiles part full, two and three outputs, alpha and beta, the norm; and runs that stay apart: widths off
     * the tiles, few tiles, Q6_K */
    MMM(70, 256, 64, 256, PXL_Q4_K, PXL_Q4_K, CF_ONEB | CF_Q8A, 0, 0, 0),
    MMM(130, 192, 70, 256, PXL_Q8_0, PXL_Q8_0, CF_ONEB | CF_THREE | CF_Q8A | CF_NORM, 0, 0, 1e-5f),
    MMM(65, 128, 128, 256, PXL_Q5_K, PXL_Q5_K, CF_ONEB | CF_THREE | CF_Q8A, 0.5f, 0.25f, 0),
    MMM(70, 320, 40, 256, PXL_Q4_0, PXL_Q4_0, CF_ONEB | CF_Q8A | CF_NORM, 1, 0.5f, 1e-6f),
    MMM(16, 64, 64, 256, PXL_Q8_0, PXL_Q8_0, CF_ONEB | CF_THREE | CF_Q8A, 0, 0, 0),
    MMM(70, 128, 96, 512, PXL_Q5_0, PXL_Q5_0, CF_ONEB | CF_THREE | CF_Q8A, 0, 0, 0),
    MMM(70, 100, 60, 256, PXL_Q4_K, PXL_Q4_K, CF_ONEB | CF_Q8A, 0, 0, 0),
    MMM(70, 128, 64, 256, PXL_Q6_K, PXL_Q6_K, CF_ONEB | CF_THREE | CF_Q8A | CF_NORM, 0, 0, 1e-5f),
    /* wide FFNs' SwiGLU; one-row products of more than 1024 workgroups at the default shape (kmv4 / kmv6's
     * wide row groups, src/ops/matmul_quant.c): Q4_K, Q5_K, and Q6_K with the output norm as for logits */
    SWG(1, 4100, 512, PXL_Q4_K, CF_NORM, 1e-5f), SWG(1, 4097, 256, PXL_Q5_K, 0, 0),
    NMM(1, 1, 1, 8200, 256, PXL_Q6_K, CF_TB, 1, 0, 1e-5f), MM(1, 1, 1, 8193, 512, PXL_Q4_K, CF_TB, 1, 0.5f),
    NMM(1, 1, 1, 8201, 512, PXL_Q6_K, CF_TB | CF_Q8A, 1, 0, 1e-5f),
    MM(1, 1, 1, 8250, 768, PXL_Q5_K, CF_TB, -0.5f, 0),
    SWG(1, 9, 256, PXL_Q4_K, CF_NORM | CF_VIEW, 1e-5f), SWG(2, 9, 64, PXL_Q8_0, CF_NORM | CF_SLICE, 1e-5f),
    SWG(1, 9, 33, PXL_F32, CF_VIEW, 0), SWG(2, 3, 64, PXL_Q4_0, CF_NORM | CF_BAD, 1e-5f),
    /* both weights in one buffer: one dispatch on a GPU (f32 / f16 / bf16 at M = 1, GGUF blocks at M <= 4) */
    SWG(1, 33, 100, PXL_F32, CF_PACKED, 0), SWG(1, 33, 100, PXL_F32, CF_PACKED | CF_NORM, 1e-5f),
    SWG(1, 45, 257, PXL_F16, CF_PACKED | CF_NORM, 1e-5f), SWG(1, 33, 70, PXL_BF16, CF_PACKED, 0),
    SWG(1, 33, 512, PXL_F16, CF_PACKED | CF_NORM, 1e-5f), SWG(1, 20, 264, PXL_BF16, CF_PACKED, 0),
    SWG(1, 9, 1024, PXL_BF16, CF_PACKED | CF_NORM, 1e-5f),
    SWG(2, 9, 31, PXL_F32, CF_PACKED | CF_NORM, 1e-5f), SWG(1, 45, 1056, PXL_Q8_0, CF_PACKED | CF_NORM, 1e-5f),
    SWG(1, 45, 96, PXL_Q8_0, CF_PACKED, 0), SWG(2, 33, 96, PXL_Q8_0, CF_PACKED | CF_NORM, 1e-5f),
    SWG(4, 33, 160, PXL_Q8_0, CF_PACKED | CF_NORM, 1e-5f), SWG(8, 33, 160, PXL_Q8_0, CF_PACKED | CF_NORM, 1e-5f),
    SWG(1, 37, 4096, PXL_Q4_0, CF_PACKED | CF_NORM, 1e-5f), SWG(3, 37, 160, PXL_Q4_0, CF_PACKED, 0),
    /* qmv_xs's SwiGLU steps (one row, K 512 and up): many row groups, qmv_xs's long rows (K = 8192), few rows, a view */
    SWG(1, 1000, 896, PXL_Q5_0, CF_PACKED | CF_NORM, 1e-5f), SWG(1, 70, 8192, PXL_Q8_0, CF_PACKED, 0),
    SWG(1, 3, 512, PXL_Q5_0, CF_PACKED, 0), SWG(1, 9, 1024, PXL_Q4_0, CF_PACKED | CF_NORM | CF_VIEW, 1e-5f),
    SWG(1, 33, 768, PXL_Q4_K, CF_PACKED | CF_NORM, 1e-5f), SWG(1, 33, 768, PXL_Q4_K, CF_PACKED | CF_NORM | CF_Q8A, 1e-5f),
    SWG(1, 45, 1056, PXL_Q8_0, CF_PACKED | CF_NORM | CF_Q8A, 1e-5f), SWG(1, 37, 4096, PXL_Q4_0, CF_PACKED | CF_Q8A, 0),
    SWG(1, 1000, 896, PXL_Q5_0, CF_PACKED | CF_NORM | CF_Q8A, 1e-5f),
    SWG(1, 9, 512, PXL_Q4_K, CF_PACKED | CF_Q8A, 0), SWG(1, 17, 2304, PXL_Q4_K, CF_PACKED | CF_NORM | CF_VIEW | CF_Q8A, 1e-5f),
    SWG(1, 1033, 768, PXL_Q6_K, CF_PACKED | CF_NORM | CF_Q8A, 1e-5f), SWG(1, 1025, 2304, PXL_Q6_K, CF_PACKED | CF_VIEW | CF_Q8A, 0),
    SWG(2, 33, 256, PXL_Q4_K, CF_PACKED, 0),
    SWG(3, 17, 512, PXL_Q4_K, CF_PACKED | CF_NORM, 1e-5f), SWG(4, 17, 512, PXL_Q4_K, CF_PACKED | CF_NORM, 1e-5f),
    SWG(1, 33, 768, PXL_Q6_K, CF_PACKED | CF_NORM, 1e-5f), SWG(2, 33, 256, PXL_Q6_K, CF_PACKED | CF_NORM, 1e-5f),
    SWG(4, 17, 256, PXL_Q6_K, CF_PACKED, 0), SWG(1, 33, 768, PXL_Q5_K, CF_PACKED | CF_NORM, 1e-5f),
    SWG(2, 33, 256, PXL_Q5_K, CF_PACKED, 0), SWG(4, 17, 512, PXL_Q5_K, CF_PACKED | CF_NORM, 1e-5f),
    SWG(1, 33, 64, PXL_Q4_1, CF_PACKED | CF_NORM, 1e-5f), SWG(3, 33, 256, PXL_Q3_K, CF_PACKED, 0),
    SWG(1, 33, 256, PXL_Q2_K, CF_PACKED | CF_NORM, 1e-5f), SWG(2, 33, 64, PXL_Q5_0, CF_PACKED | CF_NORM, 1e-5f),
    SWG(9, 17, 256, PXL_Q4_K, CF_PACKED | CF_NORM, 1e-5f), SWG(2, 9, 256, PXL_Q4_K, CF_PACKED | CF_VIEW | CF_NORM, 1e-5f),
    SWG(1, 32, 32, PXL_F32, CF_NORM | CF_BAD, 1e-5f),

    /* -- softmax: row lengths around the lane counts, rows, scales */
    T2(OP_SOFTMAX, 1, 1, 0, 1, 0, 0), T2(OP_SOFTMAX, 3, 2, 0, 1, 0, 0), T2(OP_SOFTMAX, 7, 31, 0, 1, 0, 0),
    T2(OP_SOFTMAX, 3, 255, 0, 1, 0, 0), T2(OP_SOFTMAX, 1, 256, 0, 1, 0, 0), T2(OP_SOFTMAX, 7, 257, 0, 1, 0, 0),
    T2(OP_SOFTMAX, 3, 1000, 0, 1, 0, 0), T2(OP_SOFTMAX, 2, 4099, 0, 1, 0, 0), T1(OP_SOFTMAX, 65537, 0, 1, 0, 0),
    T1(OP_SOFTMAX, 5, 0, 1, 0, 0), T2(OP_SOFTMAX, 70001, 3, 0, 1, 0, 0), /* more rows than one grid dimension */
    T2(OP_SOFTMAX, 1024, 4096, CF_CPU_ONLY, 0.125f, 0, 0), T1(OP_SOFTMAX, 1000000, CF_CPU_ONLY, 1, 0, 0),
    T2(OP_SOFTMAX, 5, 300, 0, 0.0883883f, 0, 0), T2(OP_SOFTMAX, 5, 300, 0, -2, 0, 0),
    T2(OP_SOFTMAX, 5, 300, 0, 0, 0, 0),
    /* -Inf entries, a NaN, +Inf, -0 and an all -Inf row */
    T2(OP_SOFTMAX, 6, 33, CF_SPECIAL, 1, 0, 0), T2(OP_SOFTMAX, 5, 4099, CF_SPECIAL, 0.5f, 0, 0),
    T2(OP_SOFTMAX, 5, 4099, CF_SPECIAL | CF_CAUSAL, 1, 4095, 0),
    /* causal: offsets from "all masked" to "none masked", and the KV-cache case offset = L - R */
    T3(OP_SOFTMAX, 3, 17, 17, CF_CAUSAL, 1, 0, 0), T3(OP_SOFTMAX, 3, 17, 17, CF_CAUSAL, 1, 1, 0),
    T3(OP_SOFTMAX, 3, 17, 17, CF_CAUSAL, 1, -1, 0), T3(OP_SOFTMAX, 3, 17, 17, CF_CAUSAL, 1, -3, 0),
    T3(OP_SOFTMAX, 3, 17, 17, CF_CAUSAL, 1, -17, 0), T3(OP_SOFTMAX, 3, 17, 17, CF_CAUSAL, 1, -18, 0),
    T3(OP_SOFTMAX, 3, 17, 17, CF_CAUSAL, 1, -1000000, 0), T3(OP_SOFTMAX, 3, 17, 17, CF_CAUSAL, 1, 23, 0),
    T3(OP_SOFTMAX, 3, 17, 17, CF_CAUSAL, 1, 16, 0), T3(OP_SOFTMAX, 3, 17, 17, CF_CAUSAL, 1, 1000000, 0),
    T3(OP_SOFTMAX, 3, 17, 17, CF_CAUSAL, 1, I64MAX, 0), T3(OP_SOFTMAX, 3, 17, 17, CF_CAUSAL, 1, I64MIN, 0),
    T2(OP_SOFTMAX, 9, 40, CF_CAUSAL | CF_SPECIAL, 0.7f, -3, 0), T2(OP_SOFTMAX, 9, 40, CF_CAUSAL, 0.7f, I64MIN, 0),
    T2(OP_SOFTMAX, 9, 40, CF_CAUSAL, 1, 31, 0), T4(OP_SOFTMAX, 2, 2, 5, 300, CF_CAUSAL, 0.25f, 295, 0),
    T4(OP_SOFTMAX, 2, 2, 5, 300, CF_CAUSAL, 0.25f, 2, 0), T1(OP_SOFTMAX, 7, CF_CAUSAL, 1, 3, 0),
    T1(OP_SOFTMAX, 7, CF_CAUSAL, 1, -1, 0), T2(OP_SOFTMAX, 31, 1, CF_CAUSAL, 1, -10, 0),
    T2(OP_SOFTMAX, 1100, 1100, CF_CAUSAL | CF_CPU_ONLY, 1, 0, 0),
    /* views, in place */
    T2(OP_SOFTMAX, 5, 33, CF_VIEW, 1, 0, 0), T2(OP_SOFTMAX, 4, 7, CF_SLICE | CF_CAUSAL, 1, 2, 0),
    T2(OP_SOFTMAX, 6, 33, CF_INPLACE, 0.5f, 0, 0), T2(OP_SOFTMAX, 3, 300, CF_INPLACE | CF_VIEW, 1, 0, 0),
    T3(OP_SOFTMAX, 2, 3, 5, CF_SLICE, 1, 0, 0),
    T2(OP_SOFTMAX, 2, 4, CF_BAD, 1, 0, 0), T2(OP_SOFTMAX, 3, 8, CF_GRAD, 0.7f, 0, 0),
    T3(OP_SOFTMAX, 2, 3, 5, CF_GRAD | CF_CAUSAL, 1, 1, 0),

    /* -- rmsnorm and layernorm (x from mean + spread [-1, 1)) */
    NORM2(OP_RMSNORM, 1, 1, 0, 1e-5f, 0, 3), NORM2(OP_RMSNORM, 5, 2, CF_SPECIAL, 1e-5f, 0, 3),
    NORM2(OP_RMSNORM, 11, 31, 0, 1e-5f, 0, 3), NORM2(OP_RMSNORM, 5, 255, CF_SPECIAL, 1e-5f, 0, 3),
    NORM2(OP_RMSNORM, 1, 256, 0, 1e-5f, 0, 3), NORM2(OP_RMSNORM, 11, 257, 0, 1e-5f, 0, 3),
    NORM2(OP_RMSNORM, 5, 1000, CF_SPECIAL, 1e-5f, 0, 3), NORM2(OP_RMSNORM, 5, 4099, 0, 1e-5f, 0, 3),
    NORM2(OP_RMSNORM, 1, 65537, 0, 1e-5f, 0, 3), NORM2(OP_RMSNORM, 1024, 4096, CF_CPU_ONLY | CF_SPECIAL, 1e-6f, 0.5f, 2),
    NORM2(OP_RMSNORM, 70001, 2, 0, 1e-5f, 0, 1), NORM2(OP_RMSNORM, 7, 768, 0, 0.1f, 0, 1),
    NORM2(OP_RMSNORM, 7, 768, 0, 0, 3, 1), NORM2(OP_RMSNORM, 5, 33, CF_VIEW, 1e-5f, 0, 3),
    NORM2(OP_RMSNORM, 5, 33, CF_SLICE, 1e-5f, 0, 3), NORM2(OP_RMSNORM, 6, 40, CF_INPLACE, 1e-5f, 0, 3),
    NORM2(OP_RMSNORM, 2, 4, CF_BAD, 1e-5f, 0, 3), NORM2(OP_RMSNORM, 3, 16, CF_GRAD, 1e-5f, 0, 2),
    NORM2(OP_LAYERNORM, 1, 1, 0, 1e-5f, 0, 3), NORM2(OP_LAYERNORM, 5, 2, CF_SPECIAL, 1e-5f, 0, 3),
    NORM2(OP_LAYERNORM, 11, 31, CF_NO_BIAS, 1e-5f, 0, 3), NORM2(OP_LAYERNORM, 5, 255, CF_SPECIAL, 1e-5f, 0, 3),
    NORM2(OP_LAYERNORM, 1, 256, 0, 1e-5f, 0, 3), NORM2(OP_LAYERNORM, 11, 257, CF_NO_BIAS, 1e-5f, 0, 3),
    NORM2(OP_LAYERNORM, 5, 1000, CF_SPECIAL, 1e-5f, 0, 3), NORM2(OP_LAYERNORM, 5, 4099, 0, 1e-5f, 0, 3),
    NORM2(OP_LAYERNORM, 1, 65537, 0, 1e-5f, 0, 3), NORM2(OP_LAYERNORM, 1024, 4096, CF_CPU_ONLY | CF_SPECIAL, 1e-6f, 0.5f, 2),
    NORM2(OP_LAYERNORM, 70001, 2, CF_NO_BIAS, 1e-5f, 0, 1), NORM2(OP_LAYERNORM, 7, 768, CF_SPECIAL, 0.1f, 0, 1),
    NORM2(OP_LAYERNORM, 7, 768, 0, 0, 3, 1), NORM2(OP_LAYERNORM, 7, 768, 0, 1e-5f, -20, 1), /* |mean| = 20 std */
    NORM2(OP_LAYERNORM, 5, 33, CF_VIEW, 1e-5f, 0, 3), NORM2(OP_LAYERNORM, 5, 33, CF_SLICE | CF_NO_BIAS, 1e-5f, 0, 3),
    NORM2(OP_LAYERNORM, 6, 40, CF_INPLACE, 1e-5f, 0, 3), NORM2(OP_LAYERNORM, 2, 4, CF_BAD, 1e-5f, 0, 3),

    /* -- argmax, top-k: random, ties, specials; k from 1 to 256 */
    T2(OP_ARGMAX, 7, 1, 0, 0, 0, 0), T2(OP_ARGMAX, 7, 2, CF_TIES, 0, 0, 0), T2(OP_ARGMAX, 7, 31, 0, 0, 0, 0),
    T2(OP_ARGMAX, 7, 255, CF_TIES | CF_SPECIAL, 0, 0, 0), T2(OP_ARGMAX, 7, 256, CF_TIES, 0, 0, 0),
    T2(OP_ARGMAX, 7, 257, CF_SPECIAL, 0, 0, 0), T2(OP_ARGMAX, 7, 1000, CF_TIES | CF_SPECIAL, 0, 0, 0),
    T2(OP_ARGMAX, 2, 4099, 0, 0, 0, 0), T2(OP_ARGMAX, 2, 65537, CF_TIES | CF_SPECIAL, 0, 0, 0),
    T2(OP_ARGMAX, 70001, 2, CF_TIES, 0, 0, 0), T1(OP_ARGMAX, 1000000, CF_CPU_ONLY | CF_TIES | CF_SPECIAL, 0, 0, 0),
    T3(OP_ARGMAX, 2, 3, 33, CF_TIES, 0, 0, 0), T2(OP_ARGMAX, 5, 33, CF_VIEW, 0, 0, 0),
    T2(OP_ARGMAX, 5, 33, CF_SLICE | CF_TIES, 0, 0, 0), T2(OP_ARGMAX, 2, 4, CF_BAD, 0, 0, 0),
    /* pxl_argmax_ext with nan_lowest (the LLM's greedy choice on the device): NaN first, rows of NaN */
    T2(OP_ARGMAX, 8, 257, CF_TIES | CF_SPECIAL | CF_NANLOW, 0, 0, 0),
    T2(OP_ARGMAX, 8, 1000, CF_TIES | CF_SPECIAL | CF_NANLOW, 0, 0, 0),
    T2(OP_ARGMAX, 4, 32000, CF_TIES | CF_SPECIAL | CF_NANLOW, 0, 0, 0), T2(OP_ARGMAX, 5, 33, CF_VIEW | CF_NANLOW, 0, 0, 0),
    /* rows of 4096 and more, at most 64 of them, go in chunks over many workgroups on a GPU
     * (rowwise.c, argmax_split): a vocabulary's row, a short last chunk, views, and 65 rows (not split) */
    T2(OP_ARGMAX, 1, 152000, CF_TIES | CF_SPECIAL | CF_NANLOW, 0, 0, 0), T2(OP_ARGMAX, 1, 4096, CF_TIES, 0, 0, 0),
    T2(OP_ARGMAX, 3, 5000, CF_VIEW | CF_TIES, 0, 0, 0), T2(OP_ARGMAX, 3, 4097, CF_SLICE | CF_TIES | CF_SPECIAL, 0, 0, 0),
    T2(OP_ARGMAX, 64, 4100, CF_TIES, 0, 0, 0), T2(OP_ARGMAX, 65, 4100, CF_TIES, 0, 0, 0), T2(OP_ARGMAX, 5, 9000, 0, 0, 0, 0),
    T2(OP_TOPK, 7, 1, 0, 0, 0, 1), T2(OP_TOPK, 7, 2, CF_TIES, 0, 0, 2), T2(OP_TOPK, 7, 31, CF_TIES, 0, 0, 7),
    T2(OP_TOPK, 7, 255, CF_TIES | CF_SPECIAL, 0, 0, 255), T2(OP_TOPK, 7, 256, 0, 0, 0, 256),
    T2(OP_TOPK, 7, 257, CF_TIES | CF_SPECIAL, 0, 0, 256), T2(OP_TOPK, 7, 1000, 0, 0, 0, 64),
    T2(OP_TOPK, 7, 1000, CF_TIES, 0, 0, 2), T2(OP_TOPK, 2, 4099, CF_TIES, 0, 0, 255),
    T2(OP_TOPK, 2, 65537, CF_TIES | CF_SPECIAL, 0, 0, 50), T2(OP_TOPK, 1, 300, CF_TIES | CF_SPECIAL, 0, 0, 64),
    T2(OP_TOPK, 70001, 2, CF_TIES, 0, 0, 1), T2(OP_TOPK, 64, 4096, CF_TIES, 0, 0, 256),
    T2(OP_TOPK, 1024, 4096, CF_CPU_ONLY, 0, 0, 50), T3(OP_TOPK, 2, 3, 33, CF_TIES, 0, 0, 7),
    T2(OP_TOPK, 5, 33, CF_VIEW | CF_TIES, 0, 0, 5), T2(OP_TOPK, 5, 33, CF_SLICE, 0, 0, 3),
    T2(OP_TOPK, 2, 4, CF_BAD, 0, 0, 3),

    /* -- element-wise: every op on each shape (NaN, +-Inf, -0 in the inputs) */
    EW_ALL(1, CF_SPECIAL, 1), EW_ALL(1, CF_SPECIAL, 7), EW_ALL(1, CF_SPECIAL, 256), EW_ALL(1, CF_SPECIAL, 257),
    EW_ALL(2, CF_SPECIAL, 3, 5), EW_ALL(2, 0, 17, 1023), EW_ALL(4, CF_SPECIAL, 2, 3, 4, 64), EW_ALL(1, 0, 1000003),
    EW_ALL(2, CF_VIEW, 5, 7), EW_ALL(2, CF_SLICE, 6, 9), EW_ALL(2, CF_INPLACE, 4, 33),
    EW_ALL(2, CF_INPLACE | CF_VIEW, 3, 10), EW_ALL(2, CF_BAD, 2, 3), EW_ALL(2, CF_GRAD, 3, 4),

    /* -- embedding: every table dtype, repeated ids, views (a table slice inside a bigger table) */
    EMB(37, 512, 7, PXL_F32, 0), EMB(37, 512, 7, PXL_F16, 0), EMB(37, 512, 7, PXL_Q8_0, 0),
    EMB(37, 512, 7, PXL_Q4_0, 0), EMB(37, 512, 7, PXL_Q4_K, 0), EMB(37, 512, 7, PXL_Q6_K, 0),
    EMB(37, 64, 9, PXL_F32, CF_SPECIAL), EMB(37, 256, 4, PXL_Q4_K, CF_SPECIAL), EMB(11, 96, 5, PXL_F32, CF_VIEW), EMB(11, 96, 5, PXL_F16, CF_VIEW),
    EMB(11, 64, 5, PXL_Q8_0, CF_VIEW), EMB(11, 256, 5, PXL_Q4_K, CF_SLICE), EMB(11, 256, 5, PXL_Q6_K, CF_VIEW),
    EMB(11, 32, 5, PXL_Q4_0, CF_SLICE), EMB(5, 32, 2, PXL_F32, CF_BAD),
    EMB(37, 512, 7, PXL_Q5_0, 0), EMB(37, 512, 7, PXL_Q5_K, 0), EMB(37, 512, 7, PXL_Q4_1, 0),
    EMB(37, 512, 7, PXL_Q5_1, 0), EMB(37, 512, 7, PXL_BF16, 0), EMB(37, 96, 4, PXL_Q5_0, CF_SPECIAL),
    EMB(37, 256, 4, PXL_Q5_K, CF_SPECIAL), EMB(37, 64, 9, PXL_BF16, CF_SPECIAL), EMB(11, 64, 5, PXL_Q5_0, CF_VIEW),
    EMB(11, 96, 5, PXL_Q5_0, CF_SLICE), EMB(11, 256, 5, PXL_Q5_K, CF_VIEW), EMB(11, 512, 5, PXL_Q5_K, CF_SLICE),
    EMB(11, 64, 5, PXL_Q4_1, CF_VIEW), EMB(11, 64, 5, PXL_Q5_1, CF_VIEW), EMB(11, 32, 5, PXL_Q5_1, CF_SLICE),
    EMB(11, 95, 5, PXL_BF16, CF_VIEW), EMB(11, 33, 5, PXL_BF16, CF_SLICE),
    EMB(37, 512, 7, PXL_Q2_K, 0), EMB(37, 512, 7, PXL_Q3_K, 0), EMB(37, 256, 4, PXL_Q2_K, CF_SPECIAL),
    EMB(37, 256, 4, PXL_Q3_K, CF_SPECIAL), EMB(11, 256, 5, PXL_Q2_K, CF_VIEW), EMB(11, 512, 5, PXL_Q2_K, CF_SLICE),
    EMB(11, 256, 5, PXL_Q3_K, CF_VIEW), EMB(11, 256, 5, PXL_Q3_K, CF_SLICE), EMB(5, 256, 2, PXL_Q3_K, CF_BAD),

    /* -- rope: both layouts, positions far from 0, odd head counts, more than one dispatch of pairs */
    ROPE(1, 1, 2, 0, 10000, 0), ROPE(5, 3, 64, 0, 10000, 0), ROPE(64, 8, 128, 0, 10000, 0),
    ROPE(5, 8, 64, 100000, 500000, 0), ROPE(1, 3, 128, 100000, 10000, 0), ROPE(64, 1, 2, 0, 500000, 0),
    ROPE(1, 1, 2, 0, 10000, CF_HALVES), ROPE(5, 3, 64, 0, 10000, CF_HALVES), ROPE(64, 8, 128, 0, 10000, CF_HALVES),
    ROPE(5, 8, 64, 100000, 500000, CF_HALVES), ROPE(1, 3, 128, 100000, 10000, CF_HALVES),
    ROPE(3, 5, 1600, 7, 10000, CF_SPECIAL), ROPE(3, 5, 1600, 7, 10000, CF_SPECIAL | CF_HALVES),
    ROPE(4, 2, 96, 2147483647LL - 3, 500000, CF_SPECIAL), ROPE(4, 2, 96, 2147483647LL - 3, 500000, CF_HALVES),
    ROPE(6, 9, 64, -1000003, 10000, 0), ROPE(6, 9, 64, -1000003, 10000, CF_HALVES),
    ROPE(33, 2, 256, 999000, 1, 0), ROPE(33, 2, 256, 999000, 1, CF_HALVES), ROPE(2, 3, 8, 2147483646LL, 10000, 0),
    ROPE(5, 3, 64, 9, 10000, CF_VIEW), ROPE(5, 3, 64, 9, 10000, CF_SLICE | CF_HALVES),
    ROPE(5, 3, 64, 11, 10000, CF_INPLACE), ROPE(5, 3, 64, 11, 10000, CF_INPLACE | CF_HALVES | CF_VIEW),
    ROPE(2, 3, 8, 0, 10000, CF_BAD),
    /* -- rope scaling: freq_scale (linear), freq_factors (llama3), both; views of the factors too */
    ROPEX(OP_ROPE, 5, 3, 64, 100000, 10000, 0.25f, 0), ROPEX(OP_ROPE, 7, 2, 128, 3, 500000, 0.125f, CF_HALVES),
    ROPEX(OP_ROPE, 5, 3, 64, 9, 10000, 0.3f, CF_VIEW), ROPEX(OP_ROPE, 5, 3, 64, 11, 10000, 0.25f, CF_INPLACE),
    ROPEX(OP_ROPE, 4, 2, 96, -1000003, 10000, 3.0f, 0),
    ROPEX(OP_ROPE_EXT, 5, 3, 64, 100000, 500000, 0, 0), ROPEX(OP_ROPE_EXT, 6, 5, 128, 8000, 500000, 0.25f, 0),
    ROPEX(OP_ROPE_EXT, 5, 3, 64, 9, 10000, 0, CF_HALVES), ROPEX(OP_ROPE_EXT, 3, 5, 1600, 7, 10000, 0.5f, CF_SPECIAL),
    ROPEX(OP_ROPE_EXT, 5, 3, 64, 9, 10000, 0.3f, CF_VIEW), ROPEX(OP_ROPE_EXT, 5, 3, 64, 9, 10000, 0, CF_SLICE | CF_HALVES),
    ROPEX(OP_ROPE_EXT, 5, 3, 64, 11, 10000, 0.125f, CF_INPLACE), ROPEX(OP_ROPE_EXT, 5, 3, 64, 11, 10000, 0, CF_INPLACE | CF_VIEW),
    ROPEX(OP_ROPE_EXT, 4, 2, 96, 2147483647LL - 3, 500000, 0.25f, 0), ROPEX(OP_ROPE_EXT, 2, 3, 8, 0, 10000, 0, CF_BAD),

    /* -- rope_kv: decode (T = 1) and prefill, f32 and f16 caches (and f16 k with an f32 v), both layouts,
     * freq_scale and factors, q, k and v as views of one tensor (the fused QKV product's output) or apart,
     * views at odd elements (f16 rows starting mid-word), more than one dispatch of pairs (D > 1024) */
    RKV(1, 4, 2, 64, 7, 10000, 0, PXL_F32, 0), RKV(1, 4, 2, 64, 7, 10000, 0, PXL_F16, 0),
    RKV(1, 8, 2, 64, 1000, 500000, 0, PXL_F32, CF_PACKED), RKV(1, 8, 2, 64, 1000, 500000, 0, PXL_F16, CF_PACKED),
    RKV(1, 32, 4, 64, 5, 10000, 0, PXL_F16, CF_PACKED | CF_HALVES), RKV(1, 32, 4, 64, 5, 10000, 0, PXL_F32, CF_HALVES),
    RKV(1, 14, 2, 64, 123, 1000000, 0, PXL_F16, CF_PACKED | CF_HALVES | CF_VIEW),
    RKV(5, 6, 3, 32, 100, 10000, 0, PXL_F32, 0), RKV(5, 6, 3, 32, 100, 10000, 0, PXL_F16, CF_HALVES),
    RKV(7, 5, 1, 128, 3, 10000, 0, PXL_F16, CF_PACKED), RKV(6, 9, 3, 64, -1000003, 10000, 0, PXL_F32, CF_PACKED | CF_HALVES),
    RKV(4, 2, 2, 96, 2147483647LL - 3, 500000, 0, PXL_F16, 0), RKV(3, 5, 2, 64, 7, 10000, 0, PXL_F16, CF_SPECIAL),
    RKV(3, 5, 2, 64, 7, 10000, 0, PXL_F32, CF_SPECIAL | CF_HALVES), RKV(2, 4, 2, 16, 5, 10000, 0, PXL_F16, CF_V32),
    RKV(3, 4, 2, 16, 9, 10000, 0, PXL_F16, CF_VIEW), RKV(3, 4, 2, 18, 9, 10000, 0, PXL_F16, CF_VIEW | CF_HALVES),
    RKV(3, 4, 2, 16, 9, 10000, 0, PXL_F32, CF_SLICE | CF_HALVES), RKV(3, 3, 3, 10, 9, 10000, 0, PXL_F16, CF_SLICE),
    RKV(1, 8, 2, 64, 11, 10000, 0, PXL_F16, CF_PACKED | CF_VIEW), RKV(1, 8, 8, 64, 11, 10000, 0, PXL_F32, CF_PACKED | CF_VIEW),
    RKV(2, 3, 2, 1100, 77, 10000, 0, PXL_F16, CF_VIEW), RKV(2, 3, 1, 1600, 7, 10000, 0, PXL_F32, CF_PACKED | CF_HALVES),
    RKV(5, 3, 2, 64, 100000, 10000, 0.25f, PXL_F16, 0), RKV(7, 2, 2, 128, 3, 500000, 0.125f, PXL_F32, CF_PACKED | CF_HALVES),
    RKVF(1, 8, 2, 64, 8000, 500000, 0.25f, PXL_F16, CF_PACKED), RKVF(1, 8, 2, 64, 8000, 500000, 0, PXL_F32, CF_PACKED),
    RKVF(3, 4, 2, 64, 9, 10000, 0, PXL_F32, CF_HALVES), RKVF(3, 4, 2, 64, 9, 10000, 0, PXL_F16, 0),
    RKVF(3, 4, 2, 32, 9, 10000, 0.3f, PXL_F16, CF_VIEW), RKVF(2, 3, 1, 1600, 7, 10000, 0.5f, PXL_F16, CF_PACKED | CF_VIEW),
    RKVF(1, 8, 2, 64, 11, 500000, 0, PXL_F16, CF_PACKED | CF_HALVES | CF_SLICE),
    RKV(2, 3, 1, 8, 0, 10000, 0, PXL_F32, CF_BAD), RKV(2, 3, 1, 8, 0, 10000, 0, PXL_F16, CF_BAD),
    /* -- rope_kv_attention: one token with q, k and v in one tensor (the GPU's one dispatch: f32 and f16
     * caches, both layouts, factors, the first and the 1024th key, D 256, one KV head per query head,
     * TinyLlama's 32 / 4 x 64, views at odd elements); and what takes the two ops (1025 keys, D 264,
     * q, k and v apart, T > 1, f16 rows off even elements) */
    RKA(1, 4, 2, 64, 12, 7, 10000, 0, PXL_F32, CF_PACKED), RKA(1, 4, 2, 64, 12, 7, 10000, 0, PXL_F16, CF_PACKED),
    RKA(1, 32, 4, 64, 130, 100, 10000, 0, PXL_F16, CF_PACKED), RKA(1, 32, 4, 64, 9, 0, 10000, 0, PXL_F32, CF_PACKED),
    RKA(1, 8, 2, 64, 40, 33, 1000000, 0, PXL_F32, CF_PACKED | CF_HALVES),
    RKA(1, 6, 3, 32, 20, 19, 10000, 0.25f, PXL_F16, CF_PACKED | CF_HALVES | CF_VIEW),
    RKA(1, 4, 4, 256, 8, 5, 10000, 0, PXL_F32, CF_PACKED), RKA(1, 2, 1, 16, 1024, 1023, 10000, 0, PXL_F16, CF_PACKED),
    RKA(1, 2, 1, 16, 1030, 1024, 10000, 0, PXL_F32, CF_PACKED), RKA(1, 2, 1, 264, 6, 4, 10000, 0, PXL_F32, CF_PACKED),
    RKA(1, 4, 2, 64, 12, 7, 10000, 0, PXL_F16, 0), RKA(3, 4, 2, 32, 12, 5, 10000, 0, PXL_F16, CF_PACKED),
    RKA(3, 6, 2, 16, 10, 0, 500000, 0, PXL_F32, 0), RKA(1, 4, 2, 16, 9, 4, 10000, 0, PXL_F16, CF_VIEW),
    RKA(1, 4, 2, 16, 9, 4, 10000, 0, PXL_F32, CF_SLICE | CF_HALVES),
    /* tiny5's heads (D = 8): more slices than the value phase takes */
    RKA(1, 8, 4, 8, 300, 290, 10000, 0, PXL_F32, CF_PACKED), RKA(1, 8, 4, 8, 200, 150, 10000, 0, PXL_F16, CF_PACKED),
    RKAF(1, 8, 2, 64, 70, 64, 500000, 0, PXL_F16, CF_PACKED), RKAF(1, 8, 2, 64, 12, 11, 500000, 0.5f, PXL_F32, CF_PACKED | CF_HALVES),
    RKAF(2, 4, 2, 32, 12, 9, 10000, 0, PXL_F32, 0),
    RKA(1, 4, 2, 16, 9, 4, 10000, 0, PXL_F32, CF_BAD), RKA(2, 4, 2, 16, 9, 4, 10000, 0, PXL_F16, CF_BAD),
    RKVF(2, 3, 1, 8, 0, 10000, 0, PXL_F16, CF_BAD), RKV(2, 2, 2, 8, 0, 10000, 0, PXL_F32, CF_BAD),

    /* -- attention: MHA, GQA, MQA; decode (T = 1) and prefill; kv_len < capacity (rows past it are NaN) */
    ATT(1, 1, 1, 64, 1, 0), ATT(1, 8, 8, 64, 17, 0), ATT(1, 8, 2, 128, 256, 0), ATT(1, 32, 8, 128, 1000, 0),
    ATT(1, 8, 2, 64, 2, 0), ATT(2, 8, 2, 64, 2, 0), ATT(17, 8, 8, 64, 17, 0), ATT(5, 32, 8, 128, 256, 0),
    ATT(64, 32, 8, 64, 256, 0), ATT(16, 8, 2, 128, 1000, 0), ATT(100, 1, 1, 64, 1000, 0),
    ATT(256, 8, 2, 64, 256, CF_CPU_ONLY), ATT(1, 32, 8, 128, 8192, 0), ATT(1, 8, 2, 64, 8192, 0),
    ATT(3, 4, 1, 256, 8192, CF_CPU_ONLY), ATT(7, 6, 3, 6, 40, 0), ATT(1, 2, 1, 66, 300, 0), ATT(9, 12, 4, 80, 300, 0),
    ATT(1, 16, 2, 64, 300, 0), ATT(5, 8, 1, 128, 40, 0), ATT(3, 8, 2, 96, 130, 0),
    ATT(17, 8, 2, 64, 17, CF_SPECIAL), ATT(1, 8, 2, 64, 40, CF_SPECIAL),
    ATT(3, 8, 2, 64, 20, CF_VIEW), ATT(1, 4, 2, 32, 9, CF_SLICE), ATT(2, 8, 2, 16, 4, CF_BAD),
    /* prompts in attn_fa.wgsl's tiles (D % 4 == 0; by default where the blocks of 64 rows make 64
     * workgroups, as the first two rows do; ops_cases_gpu_fa and _fa32 take it for every row): a last block
     * part full, a prompt after cached keys, MHA, GQA and MQA, D from 8 to 128 (a row's vec4s fewer than,
     * equal to and more than an invocation's columns, off their step at D = 80), NaNs, views, slices */
    ATT(128, 32, 8, 64, 128, 0), ATT(120, 32, 8, 64, 300, 0), ATT(70, 8, 2, 64, 70, 0), ATT(40, 8, 2, 64, 300, 0),
    ATT(65, 4, 4, 64, 65, 0), ATT(33, 16, 1, 32, 97, 0),
    ATT(80, 8, 8, 8, 80, 0), ATT(48, 8, 2, 80, 200, 0), ATT(24, 12, 4, 128, 130, 0), ATT(20, 8, 2, 16, 20, 0),
    ATT(64, 8, 2, 64, 100, CF_SPECIAL), ATT(32, 8, 2, 64, 90, CF_VIEW), ATT(40, 4, 2, 32, 45, CF_SLICE),
    /* f16 K and V (an f16 KV cache): decode and prefill, MHA / GQA / MQA, odd D, views at odd elements, slices */
    ATTH(1, 1, 1, 64, 1, 0), ATTH(1, 8, 2, 128, 256, 0), ATTH(1, 32, 8, 128, 1000, 0), ATTH(1, 8, 2, 64, 8192, 0),
    ATTH(17, 8, 8, 64, 17, 0), ATTH(5, 32, 8, 128, 256, 0), ATTH(64, 32, 8, 64, 256, 0), ATTH(16, 8, 2, 128, 1000, 0),
    ATTH(7, 6, 3, 6, 40, 0), ATTH(1, 2, 1, 66, 300, 0), ATTH(9, 12, 4, 80, 300, 0), ATTH(3, 4, 1, 5, 33, 0),
    ATTH(256, 8, 2, 64, 256, CF_CPU_ONLY), ATTH(17, 8, 2, 64, 17, CF_SPECIAL), ATTH(3, 8, 2, 64, 20, CF_VIEW),
    ATTH(1, 4, 2, 32, 9, CF_VIEW), ATTH(2, 6, 3, 7, 11, CF_VIEW), ATTH(1, 4, 2, 32, 9, CF_SLICE),
    ATTH(5, 8, 2, 6, 30, CF_SLICE), ATTH(2, 8, 2, 16, 4, CF_BAD),
    ATTH(128, 32, 8, 64, 140, 0), ATTH(70, 8, 2, 64, 70, 0), ATTH(40, 8, 2, 64, 300, 0), ATTH(48, 8, 2, 80, 200, 0),
    ATTH(80, 8, 8, 8, 80, 0),
    ATTH(64, 8, 2, 64, 100, CF_SPECIAL), ATTH(32, 8, 2, 64, 90, CF_VIEW), ATTH(40, 4, 2, 32, 45, CF_SLICE),

    /* -- copy: every dtype, a flat destination (shapes may differ), row copies between slices, itself */
    COPY2(5, 7, PXL_F32, CF_SPECIAL), COPY2(3, 10, PXL_F16, 0), COPY2(4, 3, PXL_I32, 0), COPY2(3, 64, PXL_Q8_0, 0),
    COPY2(2, 64, PXL_Q4_0, CF_VIEW), COPY2(2, 256, PXL_Q4_K, CF_SLICE), COPY2(2, 256, PXL_Q6_K, 0),
    COPY2(3, 64, PXL_Q5_0, CF_VIEW), COPY2(2, 256, PXL_Q5_K, CF_SLICE), COPY2(2, 32, PXL_Q4_1, 0),
    COPY2(2, 64, PXL_Q5_1, CF_VIEW), COPY2(3, 11, PXL_BF16, CF_VIEW), COPY2(3, 10, PXL_BF16, CF_FLAT),
    COPY2(3, 256, PXL_Q2_K, CF_VIEW), COPY2(2, 512, PXL_Q2_K, CF_SLICE), COPY2(3, 256, PXL_Q3_K, CF_VIEW),
    COPY2(2, 256, PXL_Q3_K, CF_SLICE), COPY2(2, 256, PXL_Q3_K, 0),
    COPY2(5, 7, PXL_F32, CF_FLAT), COPY2(5, 7, PXL_F32, CF_VIEW), COPY2(3, 9, PXL_F32, CF_SLICE),
    COPY2(3, 10, PXL_F16, CF_VIEW), COPY2(4, 6, PXL_F32, CF_INPLACE), COPY2(1000, 1000, PXL_F32, 0),
    COPY2(2, 5, PXL_F32, CF_BAD),

    /* -- convert: f32 <-> f16 and f32 <-> bf16; odd lengths (a last word half used), rounding edges and
     * specials, views at odd elements (f16 edges inside words shared with the sentinel), slices, flat */
    CONV2(5, 7, PXL_F32, PXL_F16, CF_SPECIAL), CONV2(5, 7, PXL_F16, PXL_F32, CF_SPECIAL),
    CONV2(5, 7, PXL_F32, PXL_BF16, CF_SPECIAL), CONV2(5, 7, PXL_BF16, PXL_F32, CF_SPECIAL),
    CONV1(1, PXL_F32, PXL_F16, 0), CONV1(1, PXL_F16, PXL_F32, 0), CONV1(2, PXL_F32, PXL_F16, 0),
    CONV1(3, PXL_F32, PXL_BF16, 0), CONV2(3, 11, PXL_F32, PXL_F16, CF_VIEW | CF_SPECIAL),
    CONV2(3, 11, PXL_F16, PXL_F32, CF_VIEW | CF_SPECIAL), CONV2(3, 11, PXL_F32, PXL_BF16, CF_VIEW | CF_SPECIAL),
    CONV2(3, 11, PXL_BF16, PXL_F32, CF_VIEW), CONV2(4, 9, PXL_F32, PXL_F16, CF_SLICE),
    CONV2(4, 9, PXL_F16, PXL_F32, CF_SLICE), CONV2(4, 10, PXL_F32, PXL_F16, CF_VIEW),
    CONV2(3, 10, PXL_F32, PXL_F16, CF_FLAT), CONV2(1000, 1001, PXL_F32, PXL_F16, CF_SPECIAL),
    CONV2(1000, 1001, PXL_F16, PXL_F32, 0), CONV2(777, 513, PXL_F32, PXL_BF16, CF_WIDE), CONV2(513, 777, PXL_F32, PXL_F16, CF_WIDE),
    CONV1(1000003, PXL_F32, PXL_F16, CF_SPECIAL), CONV2(2, 5, PXL_F32, PXL_F16, CF_BAD),
    CONV2(2, 5, PXL_F16, PXL_F32, CF_BAD),

    /* -- dot (host arrays) */
    DOT(1, 0), DOT(2, 0), DOT(3, 0), DOT(4, 0), DOT(5, 0), DOT(7, 0), DOT(255, 0), DOT(256, 0), DOT(257, 0),
    DOT(1023, 0), DOT(65535, 0), DOT(65536, 0), DOT(65537, 0), DOT(131071, 0), DOT((1 << 20) + 1, 0),
    DOT(1031, CF_SPECIAL), DOT(0, 0),

    /* -- calls every backend must refuse: bad parameter values and shape relations */
    BAD(OP_GELU, 1, 3, 0, 0, 0, 0, 0, PXL_F32, 0, 0, 0, 0, 7, 0, NULL),                  /* form 7 */
    BAD(OP_RMSNORM, 2, 2, 4, 0, 0, 0, 0, PXL_F32, -1, 0, 0, 0, 0, 0, "eps"),
    BAD(OP_RMSNORM, 2, 2, 4, 0, 0, 0, 0, PXL_F32, NAN, 0, 0, 0, 0, 0, "eps"),
    BAD(OP_LAYERNORM, 2, 2, 4, 0, 0, 0, 0, PXL_F32, -0.5f, 0, 0, 0, 0, CF_NO_BIAS, "eps"),
    BAD(OP_TOPK, 2, 2, 4, 0, 0, 0, 0, PXL_F32, 0, 0, 0, 0, 0, 0, NULL),                  /* k = 0 */
    BAD(OP_TOPK, 2, 2, 4, 0, 0, 0, 0, PXL_F32, 0, 0, 0, 0, -3, 0, NULL),
    BAD(OP_TOPK, 2, 2, 4, 0, 0, 0, 0, PXL_F32, 0, 0, 0, 0, 5, 0, NULL),                  /* k > L */
    BAD(OP_TOPK, 2, 2, 300, 0, 0, 0, 0, PXL_F32, 0, 0, 0, 0, 257, 0, "257"),             /* k > 256 */
    BAD(OP_ROPE, 3, 2, 3, 8, 0, 0, 0, PXL_F32, 10000, 0, 0, 0, 2, 0, NULL),             /* layout 2 */
    BAD(OP_ROPE, 3, 2, 3, 6, 0, 0, 0, PXL_F32, 0.5f, 0, 0, 0, 0, 0, "base"),
    BAD(OP_ROPE, 3, 2, 3, 6, 0, 0, 0, PXL_F32, NAN, 0, 0, 0, 0, 0, "base"),
    BAD(OP_ROPE, 3, 2, 3, 6, 0, 0, 0, PXL_F32, INFINITY, 0, 0, 0, 0, 0, "base"),
    BAD(OP_ROPE, 3, 2, 3, 6, 0, 0, 0, PXL_F32, 10000, -1, 0, 0, 0, 0, "freq_scale"),
    BAD(OP_ROPE, 3, 2, 3, 6, 0, 0, 0, PXL_F32, 10000, NAN, 0, 0, 0, 0, "freq_scale"),
    BAD(OP_ROPE_EXT, 3, 2, 3, 6, 0, 0, 0, PXL_F32, 10000, INFINITY, 0, 0, 0, 0, "freq_scale"),
    BAD(OP_ROPE_EXT, 3, 2, 3, 6, 0, 0, 0, PXL_F32, 0.5f, 0, 0, 0, 0, 0, "base"),
    BAD(OP_ROPE, 3, 2, 3, 5, 0, 0, 0, PXL_F32, 10000, 0, 0, 0, 0, 0, NULL),             /* odd D */
    BAD(OP_ROPE, 3, 2, 3, 8, 0, 0, 0, PXL_F32, 10000, 0, 0, 2147483647LL, 0, 0, NULL),  /* position 2^31 */
    BAD(OP_ROPE, 3, 2, 3, 8, 0, 0, 0, PXL_F32, 10000, 0, 0, -2147483648LL, 0, 0, NULL),
    BAD(OP_ROPE_KV, 4, 2, 3, 1, 8, 0, 0, PXL_F16, 10000, 0, 0, 0, 2, 0, "layout"),      /* layout 2 */
    BAD(OP_ROPE_KV, 4, 2, 3, 1, 8, 0, 0, PXL_F16, 0.5f, 0, 0, 0, 0, 0, "base"),
    BAD(OP_ROPE_KV, 4, 2, 3, 1, 8, 0, 0, PXL_F32, 10000, -1, 0, 0, 0, 0, "freq_scale"),
    BAD(OP_ROPE_KV_FF, 4, 2, 3, 1, 8, 0, 0, PXL_F16, 10000, NAN, 0, 0, 0, 0, "freq_scale"),
    BAD(OP_ROPE_KV, 4, 2, 3, 1, 6, 0, 0, PXL_F16, 10000, 0, 0, 2147483647LL, 0, 0, "positions"),
    BAD(OP_ROPE_KV, 4, 2, 3, 1, 5, 0, 0, PXL_F32, 10000, 0, 0, 0, 0, 0, "odd"),
    BAD(OP_ROPE_KV, 4, 2, 3, 1, 8, 0, 0, PXL_I32, 10000, 0, 0, 0, 0, 0, "k_out is i32"),
    BAD(OP_ROPE_KV, 4, 2, 3, 1, 8, 0, 0, PXL_BF16, 10000, 0, 0, 0, 0, 0, "expected f32 or f16"),
    BAD(OP_ATTENTION, 6, 2, 8, 3, 16, 4, 6, PXL_F32, 0.25f, 0, 0, 0, 0, 0, NULL),       /* 3 does not divide 8 */
    BAD(OP_ATTENTION, 6, 2, 8, 2, 16, 1, 6, PXL_F32, 0.25f, 0, 0, 0, 0, 0, "kv_len"),   /* kv_len < T */
    BAD(OP_ATTENTION, 6, 2, 8, 2, 16, 7, 6, PXL_F32, 0.25f, 0, 0, 0, 0, 0, "kv_len"),   /* kv_len > C */
    BAD(OP_ATTENTION, 6, 2, 8, 2, 16, 0, 6, PXL_F32, 0.25f, 0, 0, 0, 0, 0, "kv_len"),
    BAD(OP_MATMUL, 5, 1, 1, 2, 32, 64, 0, PXL_Q4_0, 0, 1, 0, 0, 0, 0, "trans_b"),        /* quantized B needs trans_b */
    BAD(OP_MATMUL, 5, 2, 3, 2, 3, 4, 0, PXL_F32, 0, 1, 0, 0, 0, 0, "batch"),            /* batch 2 against 3 */
    BAD(OP_MATMUL, 5, 1, 1, 2, 3, 4, 0, PXL_I32, 0, 1, 0, 0, 0, 0, NULL),              /* B i32 */
    BAD(OP_MATMUL_NORM, 5, 1, 1, 2, 3, 4, 0, PXL_F32, 1e-5f, 1, 0, 0, 0, CF_TA, "trans_a"),  /* norm over rows of A */
    BAD(OP_MATMUL_NORM, 5, 1, 1, 2, 3, 4, 0, PXL_F32, -1e-5f, 1, 0, 0, 0, CF_TB, "norm_eps"),
    BAD(OP_MATMUL_NORM, 5, 1, 1, 1, 3, 32, 0, PXL_Q8_0, NAN, 1, 0, 0, 0, CF_TB, "norm_eps"),
    BAD(OP_MATMUL_NORM, 5, 1, 1, 1, 3, 256, 0, PXL_Q4_K, INFINITY, 1, 0, 0, 0, CF_TB, "norm_eps"),
    BAD(OP_MATMUL_SWIGLU, 3, 2, 3, 32, 0, 0, 0, PXL_Q8_0, 0, 0, 0, 0, 0, CF_TA, "trans_a"),
    BAD(OP_MATMUL_MULTI, 4, 1, 40, 9, 256, 0, 0, PXL_Q4_K, 0, 0, 0, 5, PXL_Q6_K, 0, "5 products"),
    BAD(OP_MATMUL_MULTI, 4, 1, 40, 9, 256, 0, 0, PXL_I32, 0, 0, 0, 0, PXL_Q6_K, 0, "B is i32"),
    BAD(OP_MATMUL_MULTI, 4, 1, 40, 9, 256, 0, 0, PXL_Q4_K, -1, 0, 0, 0, PXL_Q6_K, CF_NORM, "norm_eps"),
    BAD(OP_MATMUL_SWIGLU, 3, 2, 3, 32, 0, 0, 0, PXL_F32, 0, 0, 1, 0, 0, 0, "beta"),
    BAD(OP_MATMUL_SWIGLU, 3, 2, 3, 32, 0, 0, 0, PXL_Q8_0, -1, 0, 0, 0, 0, CF_NORM, "norm_eps"),
    BAD(OP_MATMUL_SWIGLU, 3, 2, 3, 32, 0, 0, 0, PXL_I32, 0, 0, 0, 0, 0, 0, "w_gate"),
    BAD(OP_EMBEDDING, 3, 5, 32, 2, 0, 0, 0, PXL_I32, 0, 0, 0, 0, 0, 0, "table"),       /* table i32 */
    BAD(OP_CONVERT, 2, 2, 5, 0, 0, 0, 0, PXL_F16, 0, 0, 0, 0, PXL_BF16, 0, "conversion"), /* f16 -> bf16 */
    BAD(OP_CONVERT, 2, 2, 32, 0, 0, 0, 0, PXL_F32, 0, 0, 0, 0, PXL_Q8_0, 0, "conversion"), /* to a block format */
    BAD(OP_ATTENTION, 6, 2, 8, 2, 16, 4, 6, PXL_BF16, 0.25f, 0, 0, 0, 0, 0, "k is bf16"), /* bf16 K and V */
};

int ops_case_count(void) { return (int)(sizeof k_cases / sizeof k_cases[0]); }
const op_case *ops_case_get(int i) { return &k_cases[i]; }

/* ---- the engine --------------------------------------------------------------------- */

const char *ops_case_name(const op_case *c, char *buf, size_t cap) {
    size_t u = (size_t)snprintf(buf, cap, "%s", k_desc[c->op].name + 4);
    for (int i = 0; i < c->ndim && u + 24 < cap; i++)
        u += (size_t)snprintf(buf + u, cap - u, "%s%lld", i ? "x" : " ", (long long)c->s[i]);
    if (u + 80 < cap)
        snprintf(buf + u, cap - u, " %s p=%g a=%g b=%g off=%lld k=%d flags=0x%x", pxl_dtype_name(c->dt), (double)c->p,
                 (double)c->alpha, (double)c->beta, (long long)c->off, c->k, c->flags);
    return buf;
}

static size_t opnd_bytes(const operand *o) {
    int64_t L = o->shape[o->ndim - 1];
    return pxl_dtype_row_bytes(o->dt, L) * (size_t)(nelem(o) / L);
}

static size_t block_bytes(pxl_dtype dt) { return pxl_dtype_row_bytes(dt, pxl_dtype_block(dt)); }

typedef struct host_data {
    layout l;
    uint8_t *bytes[MAXOPND]; /* what is written into operand i (inputs, outputs with init) */
    double *val[MAXOPND];    /* the values operand i holds, as the op sees them */
    double *want[MAXOPND];   /* oracle result for output j */
} host_data;

static void free_host(host_data *h) {
    for (int i = 0; i < MAXOPND; i++) {
        free(h->bytes[i]);
        free(h->val[i]);
        free(h->want[i]);
    }
}

/* Converts generated floats into operand i's bytes and values (quantized: pxl_quantize, then the decoded values). */
static void encode(pxl_ctx *ctx, const operand *o, const float *x, uint8_t **bytes, double **val) {
    int64_t n = nelem(o);
    size_t nb = opnd_bytes(o);
    *bytes = malloc(nb ? nb : 1);
    *val = malloc((size_t)n * sizeof(double));
    if (o->dt == PXL_F32) {
        memcpy(*bytes, x, nb);
        for (int64_t i = 0; i < n; i++) (*val)[i] = x[i];
    } else if (o->dt == PXL_F16) {
        for (int64_t i = 0; i < n; i++) {
            uint16_t h = pxl_f32_to_f16(x[i]);
            memcpy(*bytes + 2 * i, &h, 2);
            (*val)[i] = pxl_f16_to_f32(h);
        }
    } else if (o->dt == PXL_I32) {
        for (int64_t i = 0; i < n; i++) {
            int32_t v = (int32_t)floorf(x[i]);
            memcpy(*bytes + 4 * i, &v, 4);
            (*val)[i] = v;
        }
    } else {
        float *d = malloc((size_t)n * sizeof *d);
        pxl_status s = pxl_quantize(ctx, o->dt, x, n, *bytes, nb);
        CHECK_MSG(s == PXL_OK, "pxl_quantize %s: %s", pxl_dtype_name(o->dt), pxl_ctx_error(ctx));
        s = pxl_dequantize(ctx, o->dt, *bytes, nb, d, n);
        CHECK_MSG(s == PXL_OK, "pxl_dequantize %s: %s", pxl_dtype_name(o->dt), pxl_ctx_error(ctx));
        for (int64_t i = 0; i < n; i++) (*val)[i] = d[i];
        free(d);
    }
}

/* Generates the inputs of case c (seeded by its index) and the oracle's result. */
static void gen_data(pxl_ctx *cpu, const op_case *c, uint64_t seed, host_data *h) {
    const op_desc *d = &k_desc[c->op];
    memset(h, 0, sizeof *h);
    d->layout(c, &h->l);
    uint64_t rng = seed * 0x9e3779b97f4a7c15ull + 12345u;
    float *x[MAXOPND] = {0};
    for (int i = 0; i < h->l.n_in + h->l.n_out; i++) {
        const operand *o = &h->l.o[i];
        if (o->out && !o->init) continue;
        int64_t n = nelem(o);
        x[i] = malloc((size_t)(n ? n : 1) * sizeof(float));
        for (int64_t e = 0; e < n; e++) {
            double u = (double)(test_rng(&rng) >> 11) * 0x1p-53;
            if ((c->flags & CF_TIES) && o->dt != PXL_I32) x[i][e] = (float)floor(u * 5.0) - 2.0f;
            else x[i][e] = (float)((double)o->lo + (double)(o->hi - o->lo) * u);
        }
        if ((c->flags & CF_SPECIAL) && i == 0 && n >= 5 && (o->dt == PXL_F32 || o->dt == PXL_F16 || o->dt == PXL_BF16)) {
            if (d->specials & SP_NAN) x[i][n / 5] = NAN;
            if (d->specials & SP_INF) x[i][2 * n / 5] = INFINITY, x[i][3 * n / 5] = -INFINITY;
            if (d->specials & SP_NEGZ) x[i][4 * n / 5] = -0.0f;
        }
    }
    if (d->fixup) d->fixup(c, &h->l, x, &rng);
    for (int i = 0; i < h->l.n_in + h->l.n_out; i++)
        if (x[i]) encode(cpu, &h->l.o[i], x[i], &h->bytes[i], &h->val[i]);
    for (int j = 0; j < h->l.n_out; j++) {
        int64_t n = nelem(&h->l.o[h->l.n_in + j]);
        h->want[j] = calloc((size_t)(n ? n : 1), sizeof(double));
    }
    if (c->expect == PXL_OK) d->oracle(c, h->val, h->want);
    for (int i = 0; i < MAXOPND; i++) free(x[i]);
}

/* One operand on a backend: the tensor the op gets, and the base it is a view of (or NULL). */
typedef struct dev_opnd {
    pxl_tensor *base, *t;
    size_t off, bytes, base_bytes;
} dev_opnd;

static pxl_tensor *new_tensor(pxl_ctx *ctx, pxl_dtype dt, int ndim, const int64_t *shape) {
    pxl_tensor *t = NULL;
    pxl_status s = pxl_tensor_create(ctx, dt, ndim, shape, &t);
    CHECK_MSG(s == PXL_OK, "tensor_create %s: %s", pxl_dtype_name(dt), pxl_ctx_error(ctx));
    return s == PXL_OK ? t : NULL;
}

static void fill_bytes(pxl_ctx *ctx, pxl_tensor *t, size_t n, int byte) {
    uint8_t *f = malloc(n ? n : 1);
    memset(f, byte, n);
    pxl_status s = pxl_tensor_write(ctx, t, f, n);
    CHECK_MSG(s == PXL_OK, "tensor_write: %s", pxl_ctx_error(ctx));
    free(f);
}

/* Creates operand o as the case asks (plain, offset view or row slice), sentinel 0xFF around and in it,
 * then writes `bytes` into it (if not NULL). Returns 0 on failure. */
static int make_opnd(pxl_ctx *ctx, const op_case *c, const operand *o, const uint8_t *bytes, dev_opnd *h) {
    memset(h, 0, sizeof *h);
    h->bytes = opnd_bytes(o);
    pxl_status s = PXL_OK;
    if (c->flags & CF_VIEW) {
        int64_t blk = pxl_dtype_block(o->dt), nb = nelem(o) + 8 * blk;
        h->base = new_tensor(ctx, o->dt, 1, &nb);
        if (!h->base) return 0;
        h->off = 3 * block_bytes(o->dt);
        s = pxl_tensor_view(ctx, h->base, o->ndim, o->shape, h->off, &h->t);
    } else if (c->flags & CF_SLICE) {
        int64_t L = o->shape[o->ndim - 1], rows = nelem(o) / L, sb[2] = {rows + 5, L};
        h->base = new_tensor(ctx, o->dt, 2, sb);
        if (!h->base) return 0;
        h->off = 2 * pxl_dtype_row_bytes(o->dt, L);
        pxl_tensor *sl = NULL;
        s = pxl_tensor_slice(ctx, h->base, 2, rows, &sl);
        if (s == PXL_OK && (o->ndim != 2 || o->shape[0] != rows)) {
            s = pxl_tensor_reshape(ctx, sl, o->ndim, o->shape, &h->t);
            pxl_tensor_free(sl); /* the reshape keeps the memory */
        } else {
            h->t = sl;
        }
    } else {
        h->t = new_tensor(ctx, o->dt, o->ndim, o->shape);
        if (!h->t) return 0;
    }
    CHECK_MSG(s == PXL_OK, "view of %s: %s", o->name, pxl_ctx_error(ctx));
    if (s != PXL_OK) return 0;
    if (h->base) {
        h->base_bytes = pxl_tensor_bytes(h->base);
        CHECK(pxl_tensor_offset(h->t) == h->off && pxl_tensor_bytes(h->t) == h->bytes);
        fill_bytes(ctx, h->base, h->base_bytes, 0xff);
    } else if (!bytes) {
        fill_bytes(ctx, h->t, h->bytes, 0xff); /* an output never written reads as NaN / -1 */
    }
    if (bytes) {
        s = pxl_tensor_write(ctx, h->t, bytes, h->bytes);
        CHECK_MSG(s == PXL_OK, "write %s: %s", o->name, pxl_ctx_error(ctx));
    }
    return 1;
}

/* Frees views first (CF_VIEW) or bases first (CF_SLICE): the memory must outlive either order. */
static void free_opnds(const op_case *c, dev_opnd *h, int n) {
    for (int i = 0; i < n; i++) {
        if (c->flags & CF_SLICE) {
            pxl_tensor_free(h[i].base);
            pxl_tensor_free(h[i].t);
        } else {
            pxl_tensor_free(h[i].t);
            pxl_tensor_free(h[i].base);
        }
    }
}

static void *read_all(pxl_ctx *ctx, const pxl_tensor *t, size_t n) {
    void *p = malloc(n ? n : 1);
    pxl_status s = pxl_tensor_read(ctx, t, p, n);
    CHECK_MSG(s == PXL_OK, "tensor_read: %s", pxl_ctx_error(ctx));
    if (s != PXL_OK) memset(p, 0, n);
    return p;
}

/* The bytes around a view must still be the sentinel; an input's own bytes must be unchanged. */
static void check_memory(pxl_ctx *ctx, const char *what, const operand *o, const dev_opnd *h, const uint8_t *in) {
    if (h->base) {
        uint8_t *b = read_all(ctx, h->base, h->base_bytes);
        size_t bad = 0;
        for (size_t i = 0; i < h->base_bytes; i++)
            if ((i < h->off || i >= h->off + h->bytes) && b[i] != 0xff) bad++;
        CHECK_MSG(bad == 0, "%s: %zu bytes outside the view of %s were written", what, bad, o->name);
        if (in) CHECK_MSG(memcmp(b + h->off, in, h->bytes) == 0, "%s: input %s changed", what, o->name);
        free(b);
    } else if (in) {
        uint8_t *b = read_all(ctx, h->t, h->bytes);
        CHECK_MSG(memcmp(b, in, h->bytes) == 0, "%s: input %s changed", what, o->name);
        free(b);
    }
}

/* |got - want| <= tol, NaN for NaN, Inf for Inf of the same sign; returns the number of misses */
static int64_t compare(const char *what, const char *vs, const double *want, const double *got, const double *tol,
                       int64_t n) {
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double w = want[i], g = got[i];
        int ok;
        if (isnan(w) || isnan(g)) ok = isnan(w) && isnan(g);
        else if (isinf(w) || isinf(g)) ok = w == g;
        else ok = fabs(g - w) <= tol[i];
        if (!ok && bad++ < 4)
            fprintf(stderr, "%s: [%lld] %s %.9g got %.9g (tolerance %.3g)\n", what, (long long)i, vs, w, g, tol[i]);
    }
    if (bad) {
        fprintf(stderr, "%s: %lld of %lld outside the tolerance against %s\n", what, (long long)bad, (long long)n, vs);
        g_failures++;
    }
    return bad;
}

static double ops_bf16_value(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static double *to_double(const operand *o, const uint8_t *b) {
    int64_t n = nelem(o);
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) {
        if (o->dt == PXL_I32) {
            int32_t x;
            memcpy(&x, b + 4 * i, 4);
            v[i] = x;
        } else if (o->dt == PXL_F16 || o->dt == PXL_BF16) {
            uint16_t h;
            memcpy(&h, b + 2 * i, 2);
            v[i] = o->dt == PXL_F16 ? pxl_f16_to_f32(h) : ops_bf16_value(h);
        } else {
            float x;
            memcpy(&x, b + 4 * i, 4);
            v[i] = x;
        }
    }
    return v;
}

/* Runs value case c on ctx; fills got[j] (outputs as doubles, or NULL for byte-compared ones). Returns 0 if it could not run. */
static int run_on(pxl_ctx *ctx, const op_case *c, const host_data *h, const char *what, double **got) {
    const op_desc *d = &k_desc[c->op];
    const layout *l = &h->l;
    int n = l->n_in + l->n_out, ok = 1;
    dev_opnd dv[MAXOPND];
    memset(dv, 0, sizeof dv);
    pxl_tensor *t[MAXOPND] = {0};
    for (int i = 0; i < n && ok; i++) {
        if ((c->flags & CF_INPLACE) && i == l->n_in) {
            t[i] = t[0];
            continue;
        }
        ok = make_opnd(ctx, c, &l->o[i], h->bytes[i], &dv[i]);
        t[i] = dv[i].t;
    }
    if (ok) {
        pxl_status s = d->call(ctx, c, t);
        CHECK_MSG(s == PXL_OK, "%s: %s", what, pxl_ctx_error(ctx));
        ok = s == PXL_OK;
    }
    for (int j = 0; j < l->n_out && ok; j++) {
        const operand *o = &l->o[l->n_in + j];
        uint8_t *b = read_all(ctx, t[l->n_in + j], opnd_bytes(o));
        if (c->op == OP_COPY) {
            CHECK_MSG(memcmp(b, h->bytes[0], opnd_bytes(o)) == 0, "%s: the copy differs from its source", what);
            got[j] = NULL;
        } else {
            got[j] = to_double(o, b);
        }
        free(b);
    }
    for (int i = 0; i < n && ok; i++) {
        int changed = l->o[i].out || ((c->flags & CF_INPLACE) && i == 0);
        if (dv[i].t) check_memory(ctx, what, &l->o[i], &dv[i], changed ? NULL : h->bytes[i]);
    }
    free_opnds(c, dv, n);
    return ok;
}

static void check_outputs(const op_case *c, const host_data *h, const char *what, const char *vs, double *const *want,
                          double *const *got, int mode) {
    const op_desc *d = &k_desc[c->op];
    for (int j = 0; j < h->l.n_out; j++) {
        if (!got[j] || !want[j]) continue;
        int64_t n = nelem(&h->l.o[h->l.n_in + j]);
        double *tol = calloc((size_t)(n ? n : 1), sizeof *tol);
        d->tol(c, h->val, h->want, j, mode, tol);
        char w2[400];
        snprintf(w2, sizeof w2, "%.380s %s", what, h->l.o[h->l.n_in + j].name);
        compare(w2, vs, want[j], got[j], tol, n);
        free(tol);
    }
}

static void run_dot(const case_env *env, const op_case *c, int with_gpu, uint64_t seed) {
    int64_t n = c->s[0];
    float *a = malloc((size_t)(n + 1) * 4), *b = malloc((size_t)(n + 1) * 4);
    double *da = malloc((size_t)(n + 1) * 8), *db = malloc((size_t)(n + 1) * 8);
    uint64_t rng = seed;
    for (int64_t i = 0; i < n; i++) {
        a[i] = (float)((double)(test_rng(&rng) >> 11) * 0x1p-52 - 1.0);
        b[i] = (float)((double)(test_rng(&rng) >> 11) * 0x1p-52 - 1.0);
    }
    if ((c->flags & CF_SPECIAL) && n >= 5) a[n / 5] = INFINITY, a[3 * n / 5] = -INFINITY, b[4 * n / 5] = -0.0f;
    double scale = 0;
    for (int64_t i = 0; i < n; i++) {
        da[i] = a[i], db[i] = b[i];
        scale += fabs(da[i] * db[i]);
    }
    double want = oracle_dot(da, db, n), r[2] = {0, 0};
    pxl_ctx *ctx[2] = {env->cpu, with_gpu ? env->gpu : NULL};
    for (int k = 0; k < 2 && ctx[k]; k++) {
        float got = 1.0f;
        pxl_status s = pxl_dot(ctx[k], a, b, (size_t)n, &got);
        CHECK_MSG(s == PXL_OK, "dot n=%lld: %s", (long long)n, pxl_ctx_error(ctx[k]));
        r[k] = got;
        /* CPU: exact products summed in f64, one rounding to f32; GPU: f32 sums (the analysis in test_ops_dot.c) */
        double tol = k ? 1e-5 * scale : fabs(want) * 6e-8 + scale * 1e-15;
        char what[64];
        snprintf(what, sizeof what, "dot n=%lld on %s", (long long)n, k ? "gpu" : "cpu");
        compare(what, "oracle", &want, &r[k], &tol, 1);
        if (k) compare(what, "cpu", &r[0], &r[1], &tol, 1);
    }
    free(a), free(b), free(da), free(db);
}

/* An expected-status case: every backend must return c->expect, with a message naming the op (and msg). */
static void run_expect(const case_env *env, const op_case *c, int with_gpu, const char *what) {
    layout l;
    memset(&l, 0, sizeof l);
    k_desc[c->op].layout(c, &l);
    pxl_ctx *ctx[2] = {env->cpu, with_gpu ? env->gpu : NULL};
    for (int k = 0; k < 2 && ctx[k]; k++) {
        pxl_tensor *t[MAXOPND] = {0};
        int ok = 1;
        for (int i = 0; i < l.n_in + l.n_out && ok; i++) {
            t[i] = new_tensor(ctx[k], l.o[i].dt, l.o[i].ndim, l.o[i].shape);
            ok = t[i] != NULL;
            if (ok) fill_bytes(ctx[k], t[i], opnd_bytes(&l.o[i]), 0);
        }
        if (ok) {
            pxl_status s = k_desc[c->op].call(ctx[k], c, t);
            const char *m = pxl_ctx_error(ctx[k]);
            CHECK_MSG(s == c->expect, "%s on %s: %s, want %s (%s)", what, k ? "gpu" : "cpu", pxl_status_str(s),
                      pxl_status_str(c->expect), m);
            CHECK_MSG(strstr(m, k_desc[c->op].name) != NULL, "%s: message does not name the op: %s", what, m);
            if (c->msg) CHECK_MSG(strstr(m, c->msg) != NULL, "%s: message lacks '%s': %s", what, c->msg, m);
        }
        CHECK(pxl_finish(ctx[k]) == PXL_OK);
        for (int i = 0; i < MAXOPND; i++) pxl_tensor_free(t[i]);
    }
}

int ops_cases_run_values(const case_env *env, int with_gpu) {
    int n = 0;
    for (int ci = 0; ci < ops_case_count(); ci++) {
        const op_case *c = &k_cases[ci];
        if (with_gpu && (c->flags & CF_CPU_ONLY)) continue;
        char what[256];
        ops_case_name(c, what, sizeof what);
        if (env->verbose) fprintf(stderr, "case %d: %s\n", ci, what);
        n++;
        if (c->op == OP_DOT) {
            run_dot(env, c, with_gpu, (uint64_t)ci);
            continue;
        }
        if (c->expect != PXL_OK) {
            run_expect(env, c, with_gpu, what);
            continue;
        }
        int fails = g_failures;
        host_data h;
        gen_data(env->cpu, c, (uint64_t)ci, &h);
        double *cpu[MAXOPND] = {0}, *gpu[MAXOPND] = {0};
        char w2[400];
        snprintf(w2, sizeof w2, "[%d] %s on cpu", ci, what);
        if (run_on(env->cpu, c, &h, w2, cpu)) check_outputs(c, &h, w2, "oracle", h.want, cpu, TOL_CPU);
        if (with_gpu) {
            snprintf(w2, sizeof w2, "[%d] %s on gpu", ci, what);
            if (run_on(env->gpu, c, &h, w2, gpu)) {
                check_outputs(c, &h, w2, "oracle", h.want, gpu, TOL_GPU);
                check_outputs(c, &h, w2, "cpu", cpu, gpu, TOL_GPU_CPU);
            }
        }
        if (g_failures != fails) fprintf(stderr, "case %d failed: %s\n", ci, what);
        for (int j = 0; j < MAXOPND; j++) free(cpu[j]), free(gpu[j]);
        free_host(&h);
    }
    return n;
}

/* ---- bad arguments ------------------------------------------------------------------ */

typedef struct status_log {
    pxl_status st[96];
    int n;
} status_log;

static void expect_call(pxl_ctx *ctx, const op_case *c, pxl_tensor *const *t, pxl_status want, const char *what,
                        const char *probe, status_log *log) {
    pxl_status s = k_desc[c->op].call(ctx, c, t);
    if (log->n < 96) log->st[log->n++] = s;
    const char *m = ctx ? pxl_ctx_error(ctx) : "";
    CHECK_MSG(s == want, "%s: %s: %s, want %s (%s)", what, probe, pxl_status_str(s), pxl_status_str(want), m);
    if (ctx && want == PXL_ERR_INVALID_ARG && s == want)
        CHECK_MSG(strstr(m, k_desc[c->op].name) != NULL, "%s: %s: message does not name the op: '%s'", what, probe, m);
}

static int same_shape(const operand *a, const operand *b) {
    if (a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return 0;
    return 1;
}

/* The generic set on ctx; `other` is a context of the other kind. read_only: ctx can wrap host memory. */
static void bad_set(pxl_ctx *ctx, pxl_ctx *other, const op_case *c, const char *what, status_log *log) {
    const op_desc *d = &k_desc[c->op];
    layout l;
    memset(&l, 0, sizeof l);
    d->layout(c, &l);
    int n = l.n_in + l.n_out;
    pxl_tensor *t[MAXOPND] = {0}, *t2[MAXOPND];
    char probe[96];
    for (int i = 0; i < n; i++) {
        t[i] = new_tensor(ctx, l.o[i].dt, l.o[i].ndim, l.o[i].shape);
        if (!t[i]) goto done;
        fill_bytes(ctx, t[i], opnd_bytes(&l.o[i]), 0);
    }
    expect_call(ctx, c, t, PXL_OK, what, "the good call", log);
    expect_call(NULL, c, t, PXL_ERR_INVALID_ARG, what, "NULL context", log);
    for (int i = 0; i < n; i++) {
        const operand *o = &l.o[i];
        memcpy(t2, t, sizeof t2);
        t2[i] = NULL;
        snprintf(probe, sizeof probe, "%s = NULL", o->name);
        expect_call(ctx, c, t2, ((d->optional >> i) & 1) || o->optional ? PXL_OK : PXL_ERR_INVALID_ARG, what, probe,
                    log);
        /* wrong dtype */
        t2[i] = new_tensor(ctx, o->dt == PXL_I32 ? PXL_F32 : PXL_I32, o->ndim, o->shape);
        snprintf(probe, sizeof probe, "%s of the wrong dtype", o->name);
        if (t2[i]) expect_call(ctx, c, t2, PXL_ERR_INVALID_ARG, what, probe, log);
        pxl_tensor_free(t2[i]);
        /* wrong shape */
        if (o->bad_dim != NO_BAD) {
            int64_t sh[4];
            memcpy(sh, o->shape, sizeof sh);
            sh[o->bad_dim < 0 ? o->ndim - 1 : o->bad_dim]++;
            t2[i] = new_tensor(ctx, o->dt, o->ndim, sh);
            snprintf(probe, sizeof probe, "%s of the wrong shape", o->name);
            if (t2[i]) expect_call(ctx, c, t2, PXL_ERR_INVALID_ARG, what, probe, log);
            pxl_tensor_free(t2[i]);
        }
        /* a tensor of another context */
        t2[i] = new_tensor(other, o->dt, o->ndim, o->shape);
        snprintf(probe, sizeof probe, "%s of another context", o->name);
        if (t2[i]) expect_call(ctx, c, t2, PXL_ERR_INVALID_ARG, what, probe, log);
        pxl_tensor_free(t2[i]);
    }
    /* outputs aliasing inputs: allowed only where the op works in place, as exactly that input */
    for (int j = l.n_in; j < n; j++)
        for (int i = 0; i < l.n_in; i++) {
            if (l.o[i].dt != l.o[j].dt) continue;
            memcpy(t2, t, sizeof t2);
            t2[j] = t[i];
            int ok = j == l.n_in && ((d->inplace >> i) & 1) && same_shape(&l.o[i], &l.o[j]);
            snprintf(probe, sizeof probe, "%s is %s", l.o[j].name, l.o[i].name);
            expect_call(ctx, c, t2, ok ? PXL_OK : PXL_ERR_INVALID_ARG, what, probe, log);
            if (!same_shape(&l.o[i], &l.o[j])) continue;
            /* partly overlapping views: never allowed */
            int64_t blk = pxl_dtype_block(l.o[i].dt), nb = nelem(&l.o[i]) + blk;
            pxl_tensor *base = new_tensor(ctx, l.o[i].dt, 1, &nb), *vi = NULL, *vo = NULL;
            if (base && pxl_tensor_view(ctx, base, l.o[i].ndim, l.o[i].shape, 0, &vi) == PXL_OK &&
                pxl_tensor_view(ctx, base, l.o[j].ndim, l.o[j].shape, block_bytes(l.o[i].dt), &vo) == PXL_OK) {
                fill_bytes(ctx, base, pxl_tensor_bytes(base), 0);
                t2[i] = vi;
                t2[j] = vo;
                snprintf(probe, sizeof probe, "%s overlaps %s", l.o[j].name, l.o[i].name);
                expect_call(ctx, c, t2, PXL_ERR_INVALID_ARG, what, probe, log);
            } else {
                CHECK_MSG(0, "%s: overlapping views: %s", what, pxl_ctx_error(ctx));
            }
            pxl_tensor_free(vi), pxl_tensor_free(vo), pxl_tensor_free(base);
        }
    /* the context still works after all that */
    expect_call(ctx, c, t, PXL_OK, what, "the good call again", log);
    CHECK(pxl_finish(ctx) == PXL_OK);
done:
    for (int i = 0; i < n; i++) pxl_tensor_free(t[i]);
}

/* Read-only tensors (CPU contexts only: a GPU refuses to wrap host memory): fine as inputs, refused as outputs. */
static void read_only_set(pxl_ctx *ctx, const op_case *c, const char *what) {
    const op_desc *d = &k_desc[c->op];
    layout l;
    memset(&l, 0, sizeof l);
    d->layout(c, &l);
    int n = l.n_in + l.n_out;
    pxl_tensor *t[MAXOPND] = {0}, *t2[MAXOPND];
    void *mem[MAXOPND] = {0};
    status_log log = {{0}, 0};
    for (int i = 0; i < n; i++) {
        t[i] = new_tensor(ctx, l.o[i].dt, l.o[i].ndim, l.o[i].shape);
        if (!t[i]) goto done;
        fill_bytes(ctx, t[i], opnd_bytes(&l.o[i]), 0);
    }
    for (int i = 0; i < n; i++) {
        size_t nb = opnd_bytes(&l.o[i]);
        mem[i] = calloc(1, nb ? nb : 1);
        memcpy(t2, t, sizeof t2);
        pxl_status s = pxl_tensor_wrap(ctx, l.o[i].dt, l.o[i].ndim, l.o[i].shape, mem[i], nb, &t2[i]);
        CHECK_MSG(s == PXL_OK, "%s: wrap %s: %s", what, l.o[i].name, pxl_ctx_error(ctx));
        if (s != PXL_OK) continue;
        CHECK(pxl_tensor_is_read_only(t2[i]));
        char probe[96];
        snprintf(probe, sizeof probe, "%s read-only", l.o[i].name);
        expect_call(ctx, c, t2, l.o[i].out ? PXL_ERR_INVALID_ARG : PXL_OK, what, probe, &log);
        pxl_tensor_free(t2[i]);
    }
done:
    for (int i = 0; i < n; i++) pxl_tensor_free(t[i]), free(mem[i]);
}

int ops_cases_run_bad(const case_env *env, int with_gpu) {
    int n = 0;
    for (int ci = 0; ci < ops_case_count(); ci++) {
        const op_case *c = &k_cases[ci];
        if (!(c->flags & CF_BAD)) continue;
        char what[400], name[256];
        snprintf(what, sizeof what, "bad arguments [%d] %s", ci, ops_case_name(c, name, sizeof name));
        status_log lc = {{0}, 0}, lg = {{0}, 0};
        bad_set(env->cpu, with_gpu ? env->gpu : env->other, c, what, &lc);
        read_only_set(env->cpu, c, what);
        if (with_gpu) {
            bad_set(env->gpu, env->cpu, c, what, &lg);
            int same = lc.n == lg.n;
            for (int i = 0; same && i < lc.n; i++) same = lc.st[i] == lg.st[i];
            CHECK_MSG(same, "%s: the backends answer differently", what);
            /* a GPU context cannot wrap host memory */
            const operand *o = NULL;
            layout l;
            memset(&l, 0, sizeof l);
            k_desc[c->op].layout(c, &l);
            o = &l.o[0];
            size_t nb = opnd_bytes(o);
            void *mem = calloc(1, nb ? nb : 1);
            pxl_tensor *w = NULL;
            CHECK(pxl_tensor_wrap(env->gpu, o->dt, o->ndim, o->shape, mem, nb, &w) == PXL_ERR_UNSUPPORTED);
            pxl_tensor_free(w);
            free(mem);
        }
        n++;
    }
    return n;
}

/* ---- gradient mode ------------------------------------------------------------------- */

/* sum(g * y0) of the oracle at values v */
static double oracle_loss(const op_case *c, const host_data *h, double *const *v, const double *g) {
    int64_t n = nelem(&h->l.o[h->l.n_in]);
    double *want[MAXOPND] = {0};
    for (int j = 0; j < h->l.n_out; j++) want[j] = calloc((size_t)nelem(&h->l.o[h->l.n_in + j]), sizeof(double));
    k_desc[c->op].oracle(c, v, want);
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += g[i] * want[0][i];
    for (int j = 0; j < MAXOPND; j++) free(want[j]);
    return s;
}

/* y0 of the op on ctx with operand i's element e set to x (f32 operands only) */
static double *op_output(pxl_ctx *ctx, const op_case *c, const host_data *h, pxl_tensor *const *t, int i, int64_t e,
                         float x) {
    const layout *l = &h->l;
    for (int k = 0; k < l->n_in + l->n_out; k++) {
        if (!h->bytes[k]) continue;
        size_t nb = opnd_bytes(&l->o[k]);
        uint8_t *b = malloc(nb);
        memcpy(b, h->bytes[k], nb);
        if (k == i) memcpy(b + 4 * e, &x, 4);
        CHECK(pxl_tensor_write(ctx, t[k], b, nb) == PXL_OK);
        free(b);
    }
    pxl_status s = k_desc[c->op].call(ctx, c, t);
    CHECK_MSG(s == PXL_OK, "grad: %s", pxl_ctx_error(ctx));
    const operand *o = &l->o[l->n_in];
    uint8_t *b = read_all(ctx, t[l->n_in], opnd_bytes(o));
    double *y = to_double(o, b);
    free(b);
    return y;
}

/*
 * For each input element: the analytic VJP against
 *  - central differences of the oracle in double, step h = 1e-4 max(1, |x|):
 *    truncation h^2 |f'''| / 6 ~ 1e-9, rounding ~ 1e-16 |L| / h: within
 *    1e-6 (1 + |grad|);
 *  - central differences of the op on the backend in f32, step h = 2^-7
 *    max(1, |x|) (near the optimum (3 u / |f'''|)^(1/3) ~ 6e-3 for f32), with
 *    x +- h rounded to f32 and the difference divided by the step actually
 *    taken. Bound: the outputs that moved carry the op's own tolerance at each
 *    end, 2 sum |g_j| tol_j / step, plus the truncation h^2 |f'''| / 6 <=
 *    2 h^2 (1 + |grad|) (|f'''| <= 12 (1 + |grad|) for these ops on their
 *    test ranges). This check is coarse (a few 1e-4: f32 outputs over a
 *    step of 2^-7): it catches a wrong formula or a missing term in the op
 *    or the VJP, while the oracle check pins the VJP to 1e-6.
 */
int ops_cases_run_grad(const case_env *env, pxl_ctx *ctx) {
    int runs = 0, gpu = pxl_ctx_backend(ctx) == PXL_BACKEND_GPU;
    for (int ci = 0; ci < ops_case_count(); ci++) {
        const op_case *c = &k_cases[ci];
        if (!(c->flags & CF_GRAD) || !k_desc[c->op].vjp) continue;
        runs++;
        char what[400], name[256];
        snprintf(what, sizeof what, "grad [%d] %s on %s", ci, ops_case_name(c, name, sizeof name), gpu ? "gpu" : "cpu");
        host_data h;
        gen_data(env->cpu, c, (uint64_t)ci + 1000u, &h);
        const layout *l = &h.l;
        int64_t ny = nelem(&l->o[l->n_in]);
        double *g = malloc((size_t)ny * sizeof *g), *gv[MAXOPND] = {0};
        uint64_t rng = (uint64_t)ci * 77u + 5u;
        for (int64_t i = 0; i < ny; i++) g[i] = (double)(test_rng(&rng) >> 11) * 0x1p-52 - 1.0;
        for (int i = 0; i < l->n_in + l->n_out; i++)
            if (h.val[i]) gv[i] = calloc((size_t)nelem(&l->o[i]), sizeof(double));
        k_desc[c->op].vjp(c, h.val, g, gv);
        double *tol = calloc((size_t)ny, sizeof *tol);
        k_desc[c->op].tol(c, h.val, h.want, 0, gpu ? TOL_GPU : TOL_CPU, tol);
        pxl_tensor *t[MAXOPND] = {0};
        int ok = 1;
        for (int i = 0; i < l->n_in + l->n_out && ok; i++) ok = (t[i] = new_tensor(ctx, l->o[i].dt, l->o[i].ndim, l->o[i].shape)) != NULL;
        int64_t bad_o = 0, bad_b = 0;
        for (int i = 0; i < l->n_in + l->n_out && ok; i++) {
            if (!gv[i]) continue;
            for (int64_t e = 0; e < nelem(&l->o[i]); e++) {
                double x = h.val[i][e], a = gv[i][e];
                /* the oracle */
                double ho = 1e-4 * fmax(1.0, fabs(x));
                h.val[i][e] = x + ho;
                double lp = oracle_loss(c, &h, h.val, g);
                h.val[i][e] = x - ho;
                double lm = oracle_loss(c, &h, h.val, g);
                h.val[i][e] = x;
                double fd = (lp - lm) / (2.0 * ho);
                if (!(fabs(fd - a) <= 1e-6 * (1.0 + fabs(a))) && bad_o++ < 4)
                    fprintf(stderr, "%s: d/d%s[%lld]: analytic %.9g, oracle differences %.9g\n", what, l->o[i].name,
                            (long long)e, a, fd);
                /* the op, in f32 */
                double hb = 0x1p-7 * fmax(1.0, fabs(x));
                float xp = (float)(x + hb), xm = (float)(x - hb);
                double *yp = op_output(ctx, c, &h, t, i, e, xp), *ym = op_output(ctx, c, &h, t, i, e, xm);
                double step = (double)xp - (double)xm, lb = 0, noise = 0;
                for (int64_t j = 0; j < ny; j++) {
                    lb += g[j] * (yp[j] - ym[j]);
                    if (yp[j] != ym[j]) noise += 2.0 * fabs(g[j]) * tol[j];
                }
                double fb = lb / step, bound = noise / step + 2.0 * hb * hb * (1.0 + fabs(a));
                if (!(fabs(fb - a) <= bound) && bad_b++ < 4)
                    fprintf(stderr, "%s: d/d%s[%lld]: analytic %.9g, differences of the op %.9g (bound %.3g)\n", what,
                            l->o[i].name, (long long)e, a, fb, bound);
                free(yp), free(ym);
            }
        }
        if (bad_o || bad_b) {
            fprintf(stderr, "%s: %lld / %lld gradient entries off\n", what, (long long)bad_o, (long long)bad_b);
            g_failures++;
        }
        for (int i = 0; i < MAXOPND; i++) pxl_tensor_free(t[i]), free(gv[i]);
        free(g), free(tol);
        free_host(&h);
    }
    return runs;
}
