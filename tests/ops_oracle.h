/*
 * Naive double-precision oracles for the ops of include/pxl/ops.h, written
 * from the definitions in that header (not from src/ops/). Inputs are the
 * exact values an op sees (f32 and f16 widen exactly to double; quantized
 * weights are decoded first), outputs are doubles. Index outputs (argmax,
 * top-k) are written as doubles holding integers. Shapes are row-major.
 */
#ifndef PXL_TESTS_OPS_ORACLE_H
#define PXL_TESTS_OPS_ORACLE_H

#include <stdint.h>

/* C = alpha * op(A) . op(B) + beta * C0 (C0 not read when beta == 0). A is
 * [batch_a][M x K] ([K x M] with ta), B [batch_b][K x N] ([N x K] with tb), C
 * [batch][M x N]; batch_a or batch_b may be 1 (broadcast). */
void oracle_matmul(const double *a, const double *b, const double *c0, double *c, int64_t batch_a,
                   int64_t batch_b, int64_t batch, int64_t M, int64_t N, int64_t K, int ta, int tb,
                   double alpha, double beta);

/* softmax(scale * x) over rows of L; rows are grouped by R for the causal
 * mask (row r of each group keeps columns j <= r + off). */
void oracle_softmax(const double *x, double *y, int64_t rows, int64_t R, int64_t L, double scale, int causal,
                    int64_t off);
void oracle_rmsnorm(const double *x, const double *w, double *y, int64_t rows, int64_t L, double eps);
/* b may be NULL */
void oracle_layernorm(const double *x, const double *w, const double *b, double *y, int64_t rows, int64_t L,
                      double eps);
/* first index of the largest value, NaN counting as largest */
/* nan_lowest: NaN below every value (pxl_argmax_ext), else above */
void oracle_argmax(const double *x, double *idx, int64_t rows, int64_t L, int nan_lowest);
/* k largest in descending order, ties by lower index; NaN above +Inf; -0 == +0 */
void oracle_topk(const double *x, double *vals, double *idx, int64_t rows, int64_t L, int k);

double oracle_gelu_tanh(double x);
double oracle_gelu_erf(double x);
double oracle_silu(double x);
/* op: 0 add, 1 mul; b has n elements, or cols elements broadcast over rows (cols > 0) */
void oracle_binary(const double *a, const double *b, double *y, int64_t n, int64_t cols, int op);

/* x, y: [T, H, D]; layout 0 adjacent pairs, 1 halves */
void oracle_rope(const double *x, double *y, int64_t T, int64_t H, int64_t D, int64_t pos_offset, double base,
                 int layout);
/* freq_scale: positions times it; ff: NULL or [D/2], theta_i divided by ff[i] */
void oracle_rope_ext(const double *x, double *y, int64_t T, int64_t H, int64_t D, int64_t pos_offset, double base,
                     int layout, double freq_scale, const double *ff);
/* q, y: [T, Hq, D]; k, v: [C, Hkv, D] with the first kv_len rows valid */
void oracle_attention(const double *q, const double *k, const double *v, double *y, int64_t T, int64_t Hq,
                      int64_t Hkv, int64_t D, int64_t kv_len, double scale);
/* out[i, :] = table[ids[i], :] for table [V, D]; a row of NaN for an id outside [0, V) */
/* y = x rounded to a float of p significand bits (f16: 11, bf16: 8) and
 * smallest normal exponent emin (f16: -14, bf16: -126), to nearest even,
 * magnitudes past max_finite becoming Inf; NaN and Inf kept. */
void oracle_round_float(const double *x, double *y, int64_t n, int p, int emin, double max_finite);
void oracle_embedding(const double *table, const double *ids, double *out, int64_t V, int64_t n, int64_t D);
double oracle_dot(const double *a, const double *b, int64_t n);

/*
 * Analytic vector-Jacobian products: given the upstream gradient g (the shape
 * of the op's output), the gradient of sum(g * y) with respect to each input.
 * These are the reference the autodiff work is checked against; the gradient
 * mode of tests/ops_cases.c checks them against central differences.
 */
/* kind: 0 gelu tanh, 1 gelu erf, 2 silu */
void oracle_vjp_unary(int kind, const double *x, const double *g, double *gx, int64_t n);
/* y = silu(gate) * up */
void oracle_vjp_swiglu(const double *gate, const double *up, const double *g, double *ggate, double *gup,
                       int64_t n);
/* op 0 add, 1 mul; b broadcast over rows when cols > 0 (its gradient is summed over them) */
void oracle_vjp_binary(const double *a, const double *b, const double *g, double *ga, double *gb, int64_t n,
                       int64_t cols, int op);
void oracle_vjp_softmax(const double *x, const double *g, double *gx, int64_t rows, int64_t R, int64_t L,
                        double scale, int causal, int64_t off);
void oracle_vjp_rmsnorm(const double *x, const double *w, const double *g, double *gx, double *gw, int64_t rows,
                        int64_t L, double eps);
/* gc0 (may be NULL) is the gradient with respect to the C read with beta */
void oracle_vjp_matmul(const double *a, const double *b, const double *g, double *ga, double *gb, double *gc0,
                       int64_t batch_a, int64_t batch_b, int64_t batch, int64_t M, int64_t N, int64_t K, int ta,
                       int tb, double alpha, double beta);

#endif
