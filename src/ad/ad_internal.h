/* The ad layer's shared definitions: node kinds, nodes, programs. */
#ifndef PXL_AD_INTERNAL_H
#define PXL_AD_INTERNAL_H

#include "../core/internal.h"
#include "pxl/ad.h"

/* Node kinds. Leaves first; the order is part of the structural hash. */
typedef enum pxl_ad_op {
    PXL_AD_OP_CONST, PXL_AD_OP_PARAM, PXL_AD_OP_INPUT,
    /* unary */
    PXL_AD_OP_NEG, PXL_AD_OP_EXP, PXL_AD_OP_LOG, PXL_AD_OP_SQRT, PXL_AD_OP_POWI,
    PXL_AD_OP_SIN, PXL_AD_OP_COS, PXL_AD_OP_TAN, PXL_AD_OP_ASIN, PXL_AD_OP_ACOS, PXL_AD_OP_ATAN,
    PXL_AD_OP_SINH, PXL_AD_OP_COSH, PXL_AD_OP_TANH, PXL_AD_OP_SIGMOID, PXL_AD_OP_RELU,
    PXL_AD_OP_SOFTPLUS, PXL_AD_OP_ABS, PXL_AD_OP_SIGN, PXL_AD_OP_FLOOR, PXL_AD_OP_CEIL,
    /* binary */
    PXL_AD_OP_ADD, PXL_AD_OP_SUB, PXL_AD_OP_MUL, PXL_AD_OP_DIV, PXL_AD_OP_POW, PXL_AD_OP_HYPOT,
    PXL_AD_OP_ATAN2, PXL_AD_OP_MIN, PXL_AD_OP_MAX,
    PXL_AD_OP_LT, PXL_AD_OP_LE, PXL_AD_OP_GT, PXL_AD_OP_GE, PXL_AD_OP_EQ, PXL_AD_OP_NE,
    /* ternary */
    PXL_AD_OP_SELECT,
    PXL_AD_OP_COUNT
} pxl_ad_op;

/* A node or an instruction: operands a, b, c are node indices (earlier
 * nodes); PARAM and INPUT keep their slot / column in aux, POWI its exponent;
 * CONST its value in k. */
typedef struct pxl_ad_node {
    int32_t op;
    int32_t a, b, c;
    int32_t aux;
    double k;
} pxl_ad_node;

struct pxl_ad_program {
    pxl_ctx *ctx;
    pxl_ad_node *code; /* topological order; operands index code */
    size_t n;
    uint32_t *outputs; /* instruction of each residual */
    size_t n_out;
    size_t n_params, n_inputs;
    uint64_t hash;
};

/* ---- GPU (codegen.c, gpu_eval.c) ---- */
struct pxl_buffer;

/* Generates the WGSL kernel of p (with the Jacobian when jacobian != 0) for
 * the given workgroup size into a new string of the context's allocator
 * (*out, freed with pxl_free; *out_len its length). */
pxl_status ad_codegen(pxl_ctx *ctx, const pxl_ad_program *p, int jacobian, uint32_t workgroup, char **out,
                      size_t *out_len);

/* Instance data of one program on the GPU (parameter indices as u32, inputs
 * as f32), for repeated evaluations. The program must outlive the block. */
typedef struct ad_gpu_block ad_gpu_block;
pxl_status ad_gpu_block_create(pxl_ctx *ctx, const pxl_ad_program *p, const uint32_t *param_index,
                               const double *inputs, size_t n_inst, ad_gpu_block **out);
void ad_gpu_block_free(ad_gpu_block *b); /* NULL is a no-op */
/* Records the evaluation into the context's stream: residuals (f32, instance
 * major) at res + res_offset bytes, and when jac is not NULL the Jacobian rows
 * at jac + jac_offset (offsets multiples of 256). params: the parameter
 * vector as f32. */
pxl_status ad_gpu_block_record(ad_gpu_block *b, struct pxl_buffer *params, size_t params_offset, size_t n_params,
                               struct pxl_buffer *res, size_t res_offset, struct pxl_buffer *jac, size_t jac_offset);
struct pxl_buffer *ad_gpu_block_index(const ad_gpu_block *b); /* the u32 parameter indices; NULL when k = 0 */

/* One group of a problem as the GPU solver sees it. */
typedef struct ad_group_view {
    const pxl_ad_program *prog;
    const uint32_t *param_index;
    const double *inputs;
    size_t n_inst;
    pxl_ad_loss loss; /* kind NONE: plain least squares; scale 0 means 1 */
} ad_group_view;

/*
 * Levenberg-Marquardt entirely on the GPU (gpu_solve.c): residuals and
 * Jacobian rows from the generated kernels, Jacobi-preconditioned CG on the
 * normal equations with J v and J^T u from the rows (fixed order), f32
 * throughout, the cost summed in double on the host from per-workgroup
 * partial sums. is_const, lower, upper may be NULL. The options and summary
 * of pxl_ad_problem_solve (method must be LM; each group's robust loss is
 * applied on the GPU with Ceres' corrector, as lm.c does on the CPU); the
 * summary is written on success only, progress called after accepted steps.
 */
pxl_status ad_gpu_lm(pxl_ctx *ctx, const ad_group_view *groups, size_t n_groups, size_t n_params,
                     const unsigned char *is_const, const double *lower, const double *upper, double *params,
                     const pxl_ad_solve_options *opts, pxl_ad_solve_summary *summary);
/* pxl_ad_eval's GPU path (arguments checked by the caller). */
pxl_status ad_eval_gpu(pxl_ctx *ctx, const pxl_ad_program *prog, const double *params, size_t n_params,
                       const uint32_t *param_index, const double *inputs, size_t n_instances, double *residuals,
                       double *jacobian);
/* The CPU interpreters of eval.c (all give the same bits). */
typedef enum ad_cpu_mode {
    AD_CPU_AUTO,       /* what pxl_ad_eval uses: batched, AVX2 where it may */
    AD_CPU_SCALAR,     /* one instance at a time */
    AD_CPU_BATCH,      /* batched, baseline instruction set */
    AD_CPU_BATCH_AVX2  /* batched, AVX2 build (BATCH where the CPU lacks it) */
} ad_cpu_mode;
/* pxl_ad_eval's CPU path (arguments checked by the caller) on up to
 * `threads` threads (0: 1) with the given interpreter; f32 nonzero: single
 * precision. PXL_ERR_OUT_OF_MEMORY for the scratch. */
pxl_status ad_eval_cpu(pxl_ctx *ctx, const pxl_ad_program *prog, const double *params, const uint32_t *param_index,
                       const double *inputs, size_t n_instances, double *residuals, double *jacobian, int f32,
                       size_t threads, ad_cpu_mode mode);
/* 1 when pxl_ad_eval with backend AUTO takes the GPU for this work. */
int ad_auto_gpu(pxl_ctx *ctx, const pxl_ad_program *prog, size_t n_instances);
/* eval.c: PXL_OK when every one of the n_instances * k indices is below
 * n_params, else PXL_ERR_INVALID_ARG naming the instance, slot and index. */
pxl_status ad_check_indices(pxl_ctx *ctx, const char *fn, const uint32_t *param_index, size_t n_instances, size_t k,
                            size_t n_params);

/* expr.c: the text s[0..n) for a message, at most 40 bytes (then "..."),
 * unprintable bytes as \xNN, into buf (cap >= 64); returns buf. */
const char *ad_quote(const char *s, size_t n, char *buf, size_t cap);

/* ---- dense Cholesky (dense.c) ---- */
/* In-place Cholesky L L^T of the lower triangle of A (row-major n x n).
 * Returns n, or the first column whose pivot is not above tol times its
 * diagonal entry, not positive or not finite (that row's diagonal entry is
 * then still A's own). */
size_t ad_dense_cholesky(double *A, size_t n, double tol);
/* Solves L L^T x = b with the factor of ad_dense_cholesky (x may alias b). */
void ad_dense_cholesky_solve(const double *L, size_t n, const double *b, double *x);

/* ---- sparse Cholesky (chol.c, SuiteSparse CHOLMOD) ------------------------- */
typedef struct ad_chol ad_chol;
/*
 * Symbolic analysis (AMD fill-reducing ordering) of an n x n symmetric matrix
 * given by its upper triangle in CSC: colptr[n+1] (colptr[0] == 0),
 * rowind[colptr[n]] sorted and distinct within each column, every diagonal
 * entry present (the last of its column). Copies the pattern. On failure
 * (PXL_ERR_INVALID_ARG naming the bad column, PXL_ERR_OUT_OF_MEMORY) *out is
 * NULL. Free with ad_chol_free.
 */
pxl_status ad_chol_create(pxl_ctx *ctx, size_t n, const int64_t *colptr, const int64_t *rowind, ad_chol **out);
/*
 * Numeric factorisation of the matrix with values[colptr[n]] in that
 * pattern, then solves A x = b (x may alias b). PXL_OK, or
 * PXL_ERR_INVALID_ARG with a message ("not positive definite at column j",
 * j a column of the caller's matrix; or a value that is not finite) when
 * the factorisation fails; x is then unchanged. May be called any number of
 * times with new values. Deterministic: the same values and b give the same
 * bits.
 */
pxl_status ad_chol_factor_solve(ad_chol *c, const double *values, const double *b, double *x);
void ad_chol_free(ad_chol *c); /* NULL is a no-op */

/* ---- L-BFGS (lbfgs.c) ----------------------------------------------------- */
/* The objective: f(x) and its gradient grad[n]; a status other than PXL_OK
 * aborts the minimisation with that status. f may be +-inf or NaN (a point
 * the line search steps back from). */
typedef pxl_status (*ad_objective_fn)(void *user, const double *x, double *f, double *grad);
/*
 * Minimises fn over x[n] (updated in place: on any return it holds the best
 * point found, projected onto the box) by L-BFGS with memory
 * opts->lbfgs_memory (0: 10) and a line search satisfying the strong Wolfe
 * conditions (lbfgs.c says how). Bounds lower[n] <= x <= upper[n] (either
 * may be NULL: none; -inf / inf entries: none) are kept by projection: a
 * variable at a bound whose gradient points outwards is held there for the
 * iteration, and a step that would leave the box follows the projected path
 * with Armijo's condition only. Stops on (opts NULL: defaults)
 *   max_iterations (0: 1000; one line search each): NO_CONVERGENCE;
 *   gradient_tolerance (0: 1e-10) on max |projected gradient|, also at the
 *     start: CONVERGED_GRADIENT;
 *   function_tolerance (0: 1e-6): |f change| <= tol * |f before the step|:
 *     CONVERGED_FUNCTION;
 *   parameter_tolerance (0: 1e-8): |step| <= tol * (|x| + tol) (2-norms), or
 *     no decrease found along the projected gradient: CONVERGED_PARAMETER;
 *   max_seconds (0: none), checked before each iteration: NO_CONVERGENCE;
 * and calls opts->progress(user, iteration, f) after each iteration.
 * summary (may be NULL) gets initial_cost and final_cost (f), iterations,
 * successful_steps, termination and message, eval_seconds (time in fn),
 * other_seconds (the rest), total_seconds, gradient_max_norm and
 * n_free_params = n. Returns PXL_OK whatever the termination; fn's status
 * when fn fails (summary FAILURE with the context's message); or
 * PXL_ERR_INVALID_ARG for a bad option, empty or NaN bounds, an x that is
 * not finite, or an f or gradient at the start that is not finite.
 */
pxl_status ad_lbfgs(pxl_ctx *ctx, size_t n, double *x, const double *lower, const double *upper,
                    ad_objective_fn fn, void *user, const pxl_ad_solve_options *opts, pxl_ad_solve_summary *summary);
/* graph.c: for composite builders (geom.c). 1 when v is a value of g; else
 * records the error on g as builder `what`'s (operand `name`) and gives 0.
 * 0 without a new error when g already has one. */
int ad_check_operand(pxl_ad_graph *g, const char *what, const char *name, pxl_ad_value v);
/* graph.c: records PXL_ERR_INVALID_ARG "pxl_ad_<what>: <detail>" on g (the
 * first error sticks) and gives the invalid value. */
pxl_ad_value ad_fail_builder(pxl_ad_graph *g, const char *what, const char *detail);
/* The structural hash of a program's code, slot and column counts and
 * outputs (graph.c; what pxl_ad_compile stores in p->hash). */
uint64_t ad_program_compute_hash(const pxl_ad_program *p);
/* pxl_ad_compile for a graph the caller may not change (it reads g only). */
pxl_status ad_compile(const pxl_ad_graph *g, pxl_ad_program **out);

/* ---- problems (problem.c, loss.c, lm.c) ----------------------------------- */

/* One group: the instances of one program and one loss. */
typedef struct ad_group {
    pxl_ad_program *prog; /* owned copy */
    pxl_ad_loss loss;     /* scale resolved (never 0 when kind != NONE) */
    uint32_t *pidx;       /* n_inst * k */
    double *inputs;       /* n_inst * n_inputs */
    size_t n_inst, cap;   /* instances, allocated instances */
} ad_group;

struct pxl_ad_problem {
    pxl_ctx *ctx;
    size_t n_params;
    ad_group *groups;
    size_t n_groups, cap_groups;
    double *lower, *upper;   /* n_params each */
    unsigned char *constant; /* n_params */
    size_t n_instances, n_residuals;
};

/* Evaluates group gi of pb at params: residuals (n_inst * m) and, when not
 * NULL, the Jacobian rows (n_inst * m * k) through pxl_ad_eval with opts. */
pxl_status ad_group_eval(pxl_ad_problem *pb, size_t gi, const double *params, double *residuals, double *jacobian,
                         const pxl_ad_eval_options *opts);

/* rho(s), rho'(s), rho''(s) of loss l (scale resolved) into rho[3]. */
void ad_loss_eval(const pxl_ad_loss *l, double s, double rho[3]);
/* Ceres' corrector: with s = |f|^2 (f the m raw residuals of one instance)
 * and rho = rho(s), rescales jac (m x k, row-major; may be NULL) and then f in
 * place so that the Gauss-Newton model of 1/2 |f|^2 is that of 1/2 rho(s). */
void ad_loss_correct(const double rho[3], double s, double *f, size_t m, double *jac, size_t k);
/* Checks a loss and resolves scale 0 to 1; 0 with a message when bad. */
int ad_loss_resolve(pxl_ctx *ctx, const char *fn, const pxl_ad_loss *in, pxl_ad_loss *out);

/* The context g was created on; NULL for NULL (graph.c). */
pxl_ctx *ad_graph_ctx(const pxl_ad_graph *g);

#endif
