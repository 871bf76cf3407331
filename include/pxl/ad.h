/*
 * pxl/ad.h: automatic differentiation of scalar residuals, on the CPU and in
 * generated WGSL kernels, and the solvers built on it.
 *
 * A graph is a template cost function: it is written once, in terms of k
 * parameter slots (pxl_ad_param), per-instance data columns (pxl_ad_input) and
 * constants, and has one or more residual outputs. Compiling it gives a
 * straight-line program that is independent of the graph; pxl_ad_eval runs the
 * program for many instances, each reading its own parameters (through an index
 * into the problem's parameter vector) and its own row of data, and writes the
 * residuals and, by reverse mode over the tape, the Jacobian rows.
 *
 * Building. Every operation returns a value handle of the graph. A builder
 * error (a NULL graph, a handle that is not a value of this graph, a negative
 * slot, a value of another graph) is recorded on the graph and on its context
 * (pxl_ctx_error) and gives the invalid value (all zero); the first error
 * sticks: later operations on the graph give the invalid value too and
 * pxl_ad_compile returns that error. Identical nodes are shared as they are
 * built (hash-consing: building exp(x) twice gives the same value; add, mul,
 * hypot, eq and ne are commutative for this). Handles carry a 32-bit tag of
 * their graph: a value of another live graph is refused (a tag collision has
 * probability about 2^-32).
 *
 * Derivative conventions, where an op is not differentiable or its
 * derivative is not finite (d/da, d/db: partial derivatives):
 *   abs'(0) = 0; sign' = floor' = ceil' = 0 everywhere; relu'(0) = 0;
 *   min(a, b) is b when b < a, else a (a tie takes a); max(a, b) is b when
 *   b > a, else a; the derivative flows to the operand taken, 0 to the other;
 *   clamp(x, lo, hi) = min(max(x, lo), hi): d/dx = 1 for lo <= x <= hi;
 *   select(c, a, b) is a when c != 0, else b: the derivative flows to the
 *   branch taken, never to c; comparisons (lt ... ne) give 0 or 1, derivative 0;
 *   sqrt'(0) = +inf, log'(0) = +inf, asin'/acos' at +-1 = +-inf (IEEE);
 *   pow(a, b): d/da = b * pow(a, b - 1) (0 when b == 0), d/db = pow(a, b) *
 *   log(a) for a > 0, else 0; powi(a, n): d/da = n * pow(a, n - 1) (0 for n = 0);
 *   hypot(a, b) at (0, 0): both 0; atan2(y, x) at (0, 0): both 0.
 *   In the reverse sweep a node whose adjoint is exactly 0 passes nothing on,
 *   so an infinite local derivative on a branch that is not used (select, min)
 *   does not turn the Jacobian into NaN.
 */
#ifndef PXL_AD_H
#define PXL_AD_H

#include "pxl/export.h"
#include "pxl/core.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pxl_ad_graph pxl_ad_graph;
typedef struct pxl_ad_program pxl_ad_program;

/* A value of a graph. {0, 0} (a zero-initialised handle) is invalid. */
typedef struct pxl_ad_value {
    uint32_t graph; /* the graph's tag; never 0 for a valid value */
    uint32_t index; /* the node */
} pxl_ad_value;

PXL_API pxl_status pxl_ad_graph_create(pxl_ctx *ctx, pxl_ad_graph **out);
PXL_API void pxl_ad_graph_free(pxl_ad_graph *g); /* NULL is a no-op */
/* PXL_OK, or the first builder error of the graph. */
PXL_API pxl_status pxl_ad_graph_status(const pxl_ad_graph *g);
/* Number of distinct nodes built so far (after sharing); 0 for NULL. */
PXL_API size_t pxl_ad_graph_nodes(const pxl_ad_graph *g);
/* 1 when v is a value of g. */
PXL_API int pxl_ad_valid(const pxl_ad_graph *g, pxl_ad_value v);

/* Leaves. The number of parameter slots k of the graph is the largest slot
 * used + 1; its number of input columns the largest column used + 1. */
PXL_API pxl_ad_value pxl_ad_param(pxl_ad_graph *g, int32_t slot);
PXL_API pxl_ad_value pxl_ad_input(pxl_ad_graph *g, int32_t column);
PXL_API pxl_ad_value pxl_ad_const(pxl_ad_graph *g, double c);

/* Arithmetic. */
PXL_API pxl_ad_value pxl_ad_add(pxl_ad_graph *g, pxl_ad_value a, pxl_ad_value b);
PXL_API pxl_ad_value pxl_ad_sub(pxl_ad_graph *g, pxl_ad_value a, pxl_ad_value b);
PXL_API pxl_ad_value pxl_ad_mul(pxl_ad_graph *g, pxl_ad_value a, pxl_ad_value b);
PXL_API pxl_ad_value pxl_ad_div(pxl_ad_graph *g, pxl_ad_value a, pxl_ad_value b);
PXL_API pxl_ad_value pxl_ad_neg(pxl_ad_graph *g, pxl_ad_value a);
PXL_API pxl_ad_value pxl_ad_pow(pxl_ad_graph *g, pxl_ad_value a, pxl_ad_value b);
PXL_API pxl_ad_value pxl_ad_powi(pxl_ad_graph *g, pxl_ad_value a, int32_t n); /* n != INT32_MIN */
PXL_API pxl_ad_value pxl_ad_exp(pxl_ad_graph *g, pxl_ad_value a);
PXL_API pxl_ad_value pxl_ad_log(pxl_ad_graph *g, pxl_ad_value a);
PXL_API pxl_ad_value pxl_ad_sqrt(pxl_ad_graph *g, pxl_ad_value a);
PXL_API pxl_ad_value pxl_ad_hypot(pxl_ad_graph *g, pxl_ad_value a, pxl_ad_value b);
/* Trigonometric and hyperbolic. */
PXL_API pxl_ad_value pxl_ad_sin(pxl_ad_graph *g, pxl_ad_value a);
PXL_API pxl_ad_value pxl_ad_cos(pxl_ad_graph *g, pxl_ad_value a);
PXL_API pxl_ad_value pxl_ad_tan(pxl_ad_graph *g, pxl_ad_value a);
PXL_API pxl_ad_value pxl_ad_asin(pxl_ad_graph *g, pxl_ad_value a);
PXL_API pxl_ad_value pxl_ad_acos(pxl_ad_graph *g, pxl_ad_value a);
PXL_API pxl_ad_value pxl_ad_atan(pxl_ad_graph *g, pxl_ad_value a);
PXL_API pxl_ad_value pxl_ad_atan2(pxl_ad_graph *g, pxl_ad_value y, pxl_ad_value x);
PXL_API pxl_ad_value pxl_ad_sinh(pxl_ad_graph *g, pxl_ad_value a);
PXL_API pxl_ad_value pxl_ad_cosh(pxl_ad_graph *g, pxl_ad_value a);
PXL_API pxl_ad_value pxl_ad_tanh(pxl_ad_graph *g, pxl_ad_value a);
/* Activations and piecewise functions. */
PXL_API pxl_ad_value pxl_ad_sigmoid(pxl_ad_graph *g, pxl_ad_value a);
PXL_API pxl_ad_value pxl_ad_relu(pxl_ad_graph *g, pxl_ad_value a);
PXL_API pxl_ad_value pxl_ad_softplus(pxl_ad_graph *g, pxl_ad_value a); /* log(1 + exp(a)) */
PXL_API pxl_ad_value pxl_ad_abs(pxl_ad_graph *g, pxl_ad_value a);
PXL_API pxl_ad_value pxl_ad_sign(pxl_ad_graph *g, pxl_ad_value a); /* -1, 0, 1 (NaN stays NaN) */
PXL_API pxl_ad_value pxl_ad_floor(pxl_ad_graph *g, pxl_ad_value a);
PXL_API pxl_ad_value pxl_ad_ceil(pxl_ad_graph *g, pxl_ad_value a);
PXL_API pxl_ad_value pxl_ad_min(pxl_ad_graph *g, pxl_ad_value a, pxl_ad_value b);
PXL_API pxl_ad_value pxl_ad_max(pxl_ad_graph *g, pxl_ad_value a, pxl_ad_value b);
PXL_API pxl_ad_value pxl_ad_clamp(pxl_ad_graph *g, pxl_ad_value x, pxl_ad_value lo, pxl_ad_value hi);
/* Comparisons: 1 when true, else 0. */
PXL_API pxl_ad_value pxl_ad_lt(pxl_ad_graph *g, pxl_ad_value a, pxl_ad_value b);
PXL_API pxl_ad_value pxl_ad_le(pxl_ad_graph *g, pxl_ad_value a, pxl_ad_value b);
PXL_API pxl_ad_value pxl_ad_gt(pxl_ad_graph *g, pxl_ad_value a, pxl_ad_value b);
PXL_API pxl_ad_value pxl_ad_ge(pxl_ad_graph *g, pxl_ad_value a, pxl_ad_value b);
PXL_API pxl_ad_value pxl_ad_eq(pxl_ad_graph *g, pxl_ad_value a, pxl_ad_value b);
PXL_API pxl_ad_value pxl_ad_ne(pxl_ad_graph *g, pxl_ad_value a, pxl_ad_value b);
PXL_API pxl_ad_value pxl_ad_select(pxl_ad_graph *g, pxl_ad_value cond, pxl_ad_value a, pxl_ad_value b);

/* ------------------------------------------------------------------------
 * Vectors and geometry (src/ad/geom.c)
 *
 * Vec2 and Vec3 are plain structs of values of one graph; every helper is a
 * composition of the scalar ops above (so it evaluates and differentiates
 * wherever they do, CPU and GPU alike) and shares nodes by hash-consing like
 * them. Errors propagate as for the scalar builders: a component that is not
 * a value of g records the error on the graph (named after the helper) and
 * every component of the result is the invalid value.
 *
 * Conventions at degenerate points (the one-sided choices, as for abs):
 *   length(v) = hypot(hypot(x, y), z): 0 at v = 0 with zero derivative;
 *   normalize(v) = v / length(v) when length(v) > PXL_AD_TINY_LENGTH, else
 *   the zero vector with zero derivative (finite; NaN components stay NaN);
 *   triangle_normal of a degenerate triangle is the zero vector (the same
 *   rule), its area 0 with zero derivative; an angle at a vertex with a
 *   coincident neighbour is 0 with zero derivative (atan2(0, 0)).
 * ------------------------------------------------------------------------ */
#define PXL_AD_TINY_LENGTH 1e-18

typedef struct pxl_ad_vec2 {
    pxl_ad_value x, y;
} pxl_ad_vec2;
typedef struct pxl_ad_vec3 {
    pxl_ad_value x, y, z;
} pxl_ad_vec3;

/* Leaves: slots slot, slot + 1 (, slot + 2); columns column, column + 1 (, + 2). */
PXL_API pxl_ad_vec2 pxl_ad_vec2_param(pxl_ad_graph *g, int32_t slot);
PXL_API pxl_ad_vec2 pxl_ad_vec2_input(pxl_ad_graph *g, int32_t column);
PXL_API pxl_ad_vec2 pxl_ad_vec2_const(pxl_ad_graph *g, double x, double y);
PXL_API pxl_ad_vec3 pxl_ad_vec3_param(pxl_ad_graph *g, int32_t slot);
PXL_API pxl_ad_vec3 pxl_ad_vec3_input(pxl_ad_graph *g, int32_t column);
PXL_API pxl_ad_vec3 pxl_ad_vec3_const(pxl_ad_graph *g, double x, double y, double z);

/* Componentwise a + b, a - b, s a, -a; dot; cross (vec2: the scalar
 * a.x b.y - a.y b.x); length; normalize; distance |a - b|. */
PXL_API pxl_ad_vec2 pxl_ad_vec2_add(pxl_ad_graph *g, pxl_ad_vec2 a, pxl_ad_vec2 b);
PXL_API pxl_ad_vec2 pxl_ad_vec2_sub(pxl_ad_graph *g, pxl_ad_vec2 a, pxl_ad_vec2 b);
PXL_API pxl_ad_vec2 pxl_ad_vec2_scale(pxl_ad_graph *g, pxl_ad_vec2 a, pxl_ad_value s);
PXL_API pxl_ad_vec2 pxl_ad_vec2_neg(pxl_ad_graph *g, pxl_ad_vec2 a);
PXL_API pxl_ad_value pxl_ad_vec2_dot(pxl_ad_graph *g, pxl_ad_vec2 a, pxl_ad_vec2 b);
PXL_API pxl_ad_value pxl_ad_vec2_cross(pxl_ad_graph *g, pxl_ad_vec2 a, pxl_ad_vec2 b);
PXL_API pxl_ad_value pxl_ad_vec2_length(pxl_ad_graph *g, pxl_ad_vec2 a);
PXL_API pxl_ad_vec2 pxl_ad_vec2_normalize(pxl_ad_graph *g, pxl_ad_vec2 a);
PXL_API pxl_ad_value pxl_ad_vec2_distance(pxl_ad_graph *g, pxl_ad_vec2 a, pxl_ad_vec2 b);
PXL_API pxl_ad_vec3 pxl_ad_vec3_add(pxl_ad_graph *g, pxl_ad_vec3 a, pxl_ad_vec3 b);
PXL_API pxl_ad_vec3 pxl_ad_vec3_sub(pxl_ad_graph *g, pxl_ad_vec3 a, pxl_ad_vec3 b);
PXL_API pxl_ad_vec3 pxl_ad_vec3_scale(pxl_ad_graph *g, pxl_ad_vec3 a, pxl_ad_value s);
PXL_API pxl_ad_vec3 pxl_ad_vec3_neg(pxl_ad_graph *g, pxl_ad_vec3 a);
PXL_API pxl_ad_value pxl_ad_vec3_dot(pxl_ad_graph *g, pxl_ad_vec3 a, pxl_ad_vec3 b);
PXL_API pxl_ad_vec3 pxl_ad_vec3_cross(pxl_ad_graph *g, pxl_ad_vec3 a, pxl_ad_vec3 b);
PXL_API pxl_ad_value pxl_ad_vec3_length(pxl_ad_graph *g, pxl_ad_vec3 a);
PXL_API pxl_ad_vec3 pxl_ad_vec3_normalize(pxl_ad_graph *g, pxl_ad_vec3 a);
PXL_API pxl_ad_value pxl_ad_vec3_distance(pxl_ad_graph *g, pxl_ad_vec3 a, pxl_ad_vec3 b);
/* Marks the components as the next residual outputs (x, y(, z) in order). */
PXL_API pxl_status pxl_ad_vec2_output(pxl_ad_graph *g, pxl_ad_vec2 v);
PXL_API pxl_status pxl_ad_vec3_output(pxl_ad_graph *g, pxl_ad_vec3 v);

/* Triangle (a, b, c), counter-clockwise seen from its front:
 * the unit normal normalize((b - a) x (c - a)) (zero when degenerate);
 * the area |(b - a) x (c - a)| / 2;
 * the interior angle at a, between b - a and c - a, in [0, pi], as
 * atan2(|u x v|, u . v) (accurate near 0 and pi, where acos is not). */
PXL_API pxl_ad_vec3 pxl_ad_triangle_normal(pxl_ad_graph *g, pxl_ad_vec3 a, pxl_ad_vec3 b, pxl_ad_vec3 c);
PXL_API pxl_ad_value pxl_ad_triangle_area(pxl_ad_graph *g, pxl_ad_vec3 a, pxl_ad_vec3 b, pxl_ad_vec3 c);
PXL_API pxl_ad_value pxl_ad_triangle_angle(pxl_ad_graph *g, pxl_ad_vec3 a, pxl_ad_vec3 b, pxl_ad_vec3 c);

/*
 * The signed dihedral angle at the edge a-b shared by the triangles (a, b, c)
 * and (b, a, d) (consistently oriented), in [-pi, pi] (folded flat onto each
 * other, +pi or -pi by the sign of a rounded zero): 0 when the two lie
 * flat in one plane, positive where the surface bends away from its normals
 * (convex, as a closed surface with outward normals), negative where it
 * bends towards them. With e = b - a, n1 = e x (c - a), n2 = (d - a) x e it
 * is atan2(e . (n1 x n2), |e| (n1 . n2)), with no normalisation: the
 * derivative is finite and continuous through 0 and through +-pi (where the
 * value wraps). 0 with zero derivative when a triangle is degenerate.
 */
PXL_API pxl_ad_value pxl_ad_dihedral_angle(pxl_ad_graph *g, pxl_ad_vec3 a, pxl_ad_vec3 b, pxl_ad_vec3 c,
                                           pxl_ad_vec3 d);

/* Marks v as the next residual output (outputs are numbered in call order; a
 * value may be output more than once). */
PXL_API pxl_status pxl_ad_output(pxl_ad_graph *g, pxl_ad_value v);

/*
 * Compiles the graph into a program: the nodes the outputs need, in
 * topological order. Refuses a graph with a builder error or without outputs.
 * The program does not refer to the graph (either may be freed first).
 */
PXL_API pxl_status pxl_ad_compile(pxl_ad_graph *g, pxl_ad_program **out);
PXL_API void pxl_ad_program_free(pxl_ad_program *p); /* NULL is a no-op */

typedef struct pxl_ad_program_info {
    size_t n_params;  /* k: parameter slots */
    size_t n_inputs;  /* data columns per instance */
    size_t n_outputs; /* m: residuals per instance */
    size_t n_nodes;   /* instructions of the tape */
} pxl_ad_program_info;
PXL_API pxl_ad_program_info pxl_ad_program_get_info(const pxl_ad_program *p);

/* A structural hash of the program: equal for graphs built the same way (the
 * same operations, constants, slots, columns and outputs), different (but for
 * collisions) otherwise. Constants are part of it, by their bit patterns. */
PXL_API uint64_t pxl_ad_program_hash(const pxl_ad_program *p);

typedef enum pxl_ad_precision {
    PXL_AD_F64 = 0, /* default */
    PXL_AD_F32 = 1  /* values and derivatives computed in float (results widened to double) */
} pxl_ad_precision;

typedef enum pxl_ad_backend {
    PXL_AD_CPU = 0, /* default: the tape interpreter, in the options' precision */
    PXL_AD_GPU = 1, /* the program's generated WGSL kernel, in f32 (needs the context's GPU) */
    PXL_AD_AUTO = 2 /* pxl_ad_eval: the CPU; a problem's solve: the GPU when the context has one and the
                       problem is large enough to pay (see pxl_ad_eval) */
} pxl_ad_backend;

/* Zero-initialised = defaults. */
typedef struct pxl_ad_eval_options {
    pxl_ad_precision precision; /* CPU only; the GPU computes in f32 */
    int serial;                 /* nonzero: on the calling thread only (the results are the same) */
    pxl_ad_backend backend;
} pxl_ad_eval_options;

/*
 * The WGSL kernel pxl generates for prog (with the Jacobian when jacobian is
 * nonzero): one invocation per instance, the tape as straight-line code and
 * its reverse sweep per output. Writes at most cap - 1 bytes and a NUL to buf
 * (buf may be NULL when cap is 0) and the full length to *len (may be NULL).
 */
PXL_API pxl_status pxl_ad_program_wgsl(pxl_ctx *ctx, const pxl_ad_program *prog, int jacobian, char *buf,
                                       size_t cap, size_t *len);

/*
 * Evaluation resident on the GPU, for callers with their own GPU work
 * (pxl/gpu.h buffers): the instance data is uploaded once (parameter
 * indices as u32, inputs as f32), then each pxl_ad_gpu_eval_record records
 * one evaluation into the context's stream (pxl_gpu_stream): it reads the
 * parameter vector as f32 from params (n_params values at byte offset 0)
 * and writes residuals (f32, pxl_ad_eval's layout) at byte offset res_offset
 * of residuals and, when jacobian is not NULL, the Jacobian rows at
 * jac_offset of jacobian (offsets multiples of 256; the buffers large
 * enough: PXL_ERR_INVALID_ARG otherwise). The program must outlive the
 * handle. PXL_ERR_UNSUPPORTED without a GPU.
 */
typedef struct pxl_buffer pxl_buffer; /* pxl/gpu.h */
typedef struct pxl_ad_gpu_eval pxl_ad_gpu_eval;
PXL_API pxl_status pxl_ad_gpu_eval_create(pxl_ctx *ctx, const pxl_ad_program *prog, const uint32_t *param_index,
                                          const double *inputs, size_t n_instances, size_t n_params,
                                          pxl_ad_gpu_eval **out);
PXL_API pxl_status pxl_ad_gpu_eval_record(pxl_ad_gpu_eval *e, pxl_buffer *params, pxl_buffer *residuals,
                                          size_t res_offset, pxl_buffer *jacobian, size_t jac_offset);
PXL_API void pxl_ad_gpu_eval_free(pxl_ad_gpu_eval *e); /* NULL is a no-op */

/*
 * Evaluates the program for n_instances instances (0: nothing to do, PXL_OK).
 * Instance i's slot j reads params[param_index[i*k + j]] (every index must be
 * < n_params; param_index may be NULL when k == 0), its column c reads
 * inputs[i*n_inputs + c] (NULL allowed when there are no columns). Writes
 * residuals[i*m + r] and, when jacobian is not NULL, jacobian[(i*m + r)*k + j]
 * = d residual r / d slot j (a parameter index used by two slots of one
 * instance gets two separate columns). Multithreaded across instances on the
 * context's pool; the results are bit-identical for any thread count.
 * With backend PXL_AD_GPU the program's generated kernel (pxl_ad_program_wgsl)
 * runs in f32 over uploaded copies of params, param_index and inputs, and the
 * results come back widened to double; it agrees with the CPU's f32 path up
 * to rounding (the ops are the same; libm and the GPU's builtins differ in
 * the last bits). WGSL leaves operations on NaN to the implementation: with
 * a NaN among the parameters or inputs the GPU's results are unspecified
 * (NaN and infinities produced inside the kernel from other values are
 * IEEE's). PXL_ERR_UNSUPPORTED when the context has no GPU. AUTO
 * evaluates on the CPU: with the data on the host, the GPU's transfers cost
 * more than the CPU's evaluation (measured up to a million instances); the
 * GPU pays where the data stays there (pxl_ad_gpu_eval_*, and a problem's
 * solve, where AUTO picks the GPU for CGNR when instances * instructions
 * >= 2^20).
 * opts NULL: defaults.
 */
PXL_API pxl_status pxl_ad_eval(pxl_ctx *ctx, const pxl_ad_program *prog, const double *params, size_t n_params,
                               const uint32_t *param_index, const double *inputs, size_t n_instances,
                               double *residuals, double *jacobian, const pxl_ad_eval_options *opts);

/*
 * Dense Levenberg-Marquardt (src/ad/solve.c: a one-group problem solved by
 * pxl_ad_problem_solve with DENSE_CHOLESKY). Minimises 1/2 sum r^2 over the
 * residuals of all instances (pxl_ad_eval's layout: instance i's slot j reads
 * params[param_index[i*k + j]], its columns inputs[i*n_inputs ...]), updating
 * params[n_params] in place (on return they hold the best point found).
 * Each iteration solves (J^T J + mu D) delta = -J^T r by a dense Cholesky
 * factorisation, D = the largest diag(J^T J) of the solve so far, clamped
 * to [1e-6, 1e32] (Marquardt's scaling kept monotone as MINPACK does; Ceres
 * uses the current diagonal), and takes the step when the gain ratio
 * rho = actual / predicted
 * cost reduction exceeds 1e-3; then mu *= max(1/3, 1 - (2 rho - 1)^3) and
 * nu = 2, else mu *= nu, nu *= 2 (mu is the inverse of a Ceres trust-region
 * radius). A factorisation that fails or a trial cost that is not finite is a
 * rejected step. J^T J and J^T r are summed instance by instance, residual by
 * residual, in a fixed order: the result does not depend on the thread count.
 * Refused (PXL_ERR_INVALID_ARG, params unchanged, summary FAILURE with the
 * context's message): n_params of 0 or above
 * PXL_AD_SOLVE_MAX_PARAMS (pxl_ad_problem_solve has sparse solvers), a parameter that is
 * not finite, a parameter index out of range, non-finite residuals or
 * Jacobian at the start. Other runs return PXL_OK with the termination in
 * the summary (NO_CONVERGENCE is not an error).
 */
#define PXL_AD_SOLVE_MAX_PARAMS 512

typedef enum pxl_ad_method {
    PXL_AD_LEVENBERG_MARQUARDT = 0, /* default */
    PXL_AD_GAUSS_NEWTON = 1         /* undamped steps, with a backtracking line search on the cost
                                       (Armijo, factor 1e-4, halving up to 40 times; no decrease:
                                       CONVERGED_PARAMETER); J^T J that does not factorise: FAILURE */
} pxl_ad_method;

typedef enum pxl_ad_linear_solver {
    PXL_AD_LINEAR_AUTO = 0,      /* dense Cholesky up to 512 free parameters, else sparse Cholesky on the
                                    CPU or CGNR when the evaluation runs on the GPU */
    PXL_AD_DENSE_CHOLESKY = 1,   /* normal equations, dense */
    PXL_AD_DENSE_QR = 2,         /* QR of the scaled, augmented Jacobian (no normal equations) */
    PXL_AD_SPARSE_CHOLESKY = 3,  /* normal equations through SuiteSparse CHOLMOD */
    PXL_AD_CGNR = 4              /* Jacobi-preconditioned conjugate gradients on the normal equations
                                    (inexact steps that the gain ratio judges; see linear_tolerance);
                                    it factorises nothing, so Gauss-Newton on a singular but consistent
                                    system does not fail with it. With the evaluation on the GPU
                                    (eval.backend GPU, or AUTO on a large problem) and Levenberg-
                                    Marquardt, the whole solve runs on the GPU in f32 (see
                                    pxl_ad_problem_solve) */
} pxl_ad_linear_solver;

/* Zero-initialised = defaults. */
typedef struct pxl_ad_solve_options {
    int max_iterations;         /* 0: 100; trial steps, accepted or not */
    double function_tolerance;  /* 0: 1e-6; |cost change| <= tol * cost after a step */
    double gradient_tolerance;  /* 0: 1e-10; max |J^T r| <= tol */
    double parameter_tolerance; /* 0: 1e-8; |delta| <= tol * (|x| + tol) (2-norms) */
    double initial_mu;          /* 0: 1e-4, i.e. Ceres' initial radius 1e4 */
    pxl_ad_eval_options eval;   /* precision, threading and backend of the evaluations */
    /* pxl_ad_problem_solve / _minimize only: */
    pxl_ad_method method;
    pxl_ad_linear_solver linear_solver;
    double max_seconds;         /* 0: no time limit; else stops with NO_CONVERGENCE after that long */
    int lbfgs_memory;           /* pxl_ad_problem_minimize: 0: 10 */
    /* CGNR: at most this many CG iterations per step (0: 500; on the CPU also
     * at most 2 n + 10), stopping on the CPU when |r| <= linear_tolerance |b|
     * (0: 1e-6), on the GPU when the preconditioned r.z <= linear_tolerance^2
     * r0.z0 (0: 1e-3; it works in f32) */
    int max_linear_iterations;
    double linear_tolerance;
    void (*progress)(void *user, int iteration, double cost); /* NULL: none; called after each iteration */
    void *progress_user;
} pxl_ad_solve_options;

typedef enum pxl_ad_termination {
    PXL_AD_CONVERGED_FUNCTION = 1, /* function_tolerance */
    PXL_AD_CONVERGED_GRADIENT,     /* gradient_tolerance (also at the start) */
    PXL_AD_CONVERGED_PARAMETER,    /* parameter_tolerance, or mu beyond 1e32 (no step possible) */
    PXL_AD_NO_CONVERGENCE,         /* max_iterations reached */
    PXL_AD_FAILURE                 /* refused or failed (the function's status is not PXL_OK); see message */
} pxl_ad_termination;

typedef struct pxl_ad_solve_summary {
    double initial_cost, final_cost; /* 1/2 sum r^2 */
    int iterations;                  /* trial steps */
    int successful_steps;
    pxl_ad_termination termination;
    char message[128];               /* why it stopped, in words */
    double eval_seconds, linear_solver_seconds, other_seconds;
    double total_seconds;
    double gradient_max_norm;        /* max |gradient| at the final point (free parameters) */
    pxl_ad_linear_solver linear_solver; /* the one used (AUTO resolved) */
    size_t n_residuals, n_free_params;
} pxl_ad_solve_summary;

/* Static name of a termination ("CONVERGED_GRADIENT"); never NULL. */
PXL_API const char *pxl_ad_termination_name(pxl_ad_termination t);

/* opts NULL: defaults; summary may be NULL. */
PXL_API pxl_status pxl_ad_solve(pxl_ctx *ctx, const pxl_ad_program *prog, const uint32_t *param_index,
                                const double *inputs, size_t n_instances, double *params, size_t n_params,
                                const pxl_ad_solve_options *opts, pxl_ad_solve_summary *summary);

/* ------------------------------------------------------------------------
 * Problems: many residual blocks over one parameter vector (src/ad/problem.c)
 *
 * A problem owns copies of everything added to it. Residual instances are
 * grouped by program: instances of equal programs (same structural hash and
 * the same code) with the same loss share one group, which is one kernel on
 * the GPU. The cost is
 *     F(x) = sum over instances i of 1/2 rho_i(|f_i(x)|^2)
 * where f_i is instance i's vector of m residuals and rho_i its block's loss
 * (rho(s) = s without one), as in Ceres (one Ceres residual block = one
 * instance).
 * ------------------------------------------------------------------------ */
typedef struct pxl_ad_problem pxl_ad_problem;

/* Robust losses rho(s) of s = |f|^2 with scale a (Ceres' definitions; ARCTAN
 * is Ceres' ArctanLoss(a^2), so that a is a residual scale as for the others):
 *   HUBER    s <= a^2: s;  else 2 a sqrt(s) - a^2
 *   SOFT_L1  2 a^2 (sqrt(1 + s / a^2) - 1)
 *   CAUCHY   a^2 log(1 + s / a^2)
 *   ARCTAN   a^2 atan(s / a^2)
 *   TUKEY    s <= a^2: a^2/3 (1 - (1 - s/a^2)^3);  else a^2/3
 * applied to the Jacobian with Triggs' correction, as Ceres' corrector does
 * (the rank-1 curvature term where rho'' > 0, else residuals and Jacobian
 * scaled by sqrt(rho'); rho' is kept above DBL_MIN where it is positive). */
typedef enum pxl_ad_loss_kind {
    PXL_AD_LOSS_NONE = 0,
    PXL_AD_LOSS_HUBER,
    PXL_AD_LOSS_SOFT_L1,
    PXL_AD_LOSS_CAUCHY,
    PXL_AD_LOSS_ARCTAN,
    PXL_AD_LOSS_TUKEY
} pxl_ad_loss_kind;

/* Zero-initialised = no loss. */
typedef struct pxl_ad_loss {
    pxl_ad_loss_kind kind;
    double scale; /* a > 0; 0 means 1 */
} pxl_ad_loss;

/* "huber:1.5", "cauchy", "none" -> a loss (scale 1 when not given). Returns
 * PXL_ERR_FORMAT with a message naming the text on anything else. */
PXL_API pxl_status pxl_ad_loss_parse(pxl_ctx *ctx, const char *text, pxl_ad_loss *out);

/* Zero-initialised = defaults. */
typedef struct pxl_ad_block_options {
    pxl_ad_loss loss;
} pxl_ad_block_options;

PXL_API pxl_status pxl_ad_problem_create(pxl_ctx *ctx, size_t n_params, pxl_ad_problem **out);
PXL_API void pxl_ad_problem_free(pxl_ad_problem *pb); /* NULL is a no-op */

/*
 * Template form: n_instances instances of prog, with pxl_ad_eval's layout of
 * param_index (n_instances * k, each < the problem's n_params) and inputs
 * (n_instances * n_inputs). Copies prog, param_index and inputs. opts NULL:
 * defaults. On failure nothing is added.
 */
PXL_API pxl_status pxl_ad_problem_add(pxl_ad_problem *pb, const pxl_ad_program *prog, const uint32_t *param_index,
                                      const double *inputs, size_t n_instances, const pxl_ad_block_options *opts);

/*
 * Traced form: one residual graph (one or more outputs) built on its own, in
 * which pxl_ad_param(g, j) is the problem's parameter j itself and constants
 * are plain constants; the graph has no input columns. pxl canonicalises it:
 * its parameters become slots in order of first use, its constants become
 * per-instance data, and its structure (without the constants' values) is
 * hashed, so that residuals differing only in constants or in which
 * parameters they read share one group and one kernel. The graph is not
 * kept (it may be freed or reused at once). Refused (PXL_ERR_INVALID_ARG,
 * nothing added): a graph with input columns, a parameter >= n_params, a
 * graph pxl_ad_compile refuses. Two equal constants of one graph are one
 * node (hash-consing), so such a residual has a different structure from
 * one whose constants differ.
 */
PXL_API pxl_status pxl_ad_problem_add_traced(pxl_ad_problem *pb, const pxl_ad_graph *g,
                                             const pxl_ad_block_options *opts);

/* Box bounds lower <= x_j <= upper (-INFINITY / INFINITY: none; lower <= upper). */
PXL_API pxl_status pxl_ad_problem_set_bounds(pxl_ad_problem *pb, size_t param, double lower, double upper);
/* Nonzero: parameter j keeps its value in solves (its Jacobian column is dropped). */
PXL_API pxl_status pxl_ad_problem_set_constant(pxl_ad_problem *pb, size_t param, int constant);

typedef struct pxl_ad_problem_info {
    size_t n_params;    /* the parameter vector's length */
    size_t n_instances; /* over all groups */
    size_t n_residuals; /* sum of instances * outputs */
    size_t n_groups;    /* distinct programs = kernels on the GPU */
} pxl_ad_problem_info;
PXL_API pxl_ad_problem_info pxl_ad_problem_get_info(const pxl_ad_problem *pb);

typedef struct pxl_ad_group_info {
    uint64_t hash;      /* pxl_ad_program_hash of the group's program */
    size_t n_instances;
    size_t n_slots, n_inputs, n_outputs, n_nodes;
    pxl_ad_loss loss;
} pxl_ad_group_info;
/* Group i < n_groups, in order of first addition. */
PXL_API pxl_status pxl_ad_problem_group_info(const pxl_ad_problem *pb, size_t i, pxl_ad_group_info *out);

/*
 * Evaluates at params[n_params]: cost F(x) (with the losses), and, each when
 * not NULL (cost too), the residuals (n_residuals, groups in order, instance-major, without
 * the loss) and the gradient of F (n_params, with the losses; 0 for constant
 * parameters). opts NULL: defaults.
 */
PXL_API pxl_status pxl_ad_problem_evaluate(pxl_ad_problem *pb, const double *params, double *cost,
                                           double *residuals, double *gradient, const pxl_ad_eval_options *opts);

/* Name of a linear solver ("SPARSE_CHOLESKY"); never NULL. */
PXL_API const char *pxl_ad_linear_solver_name(pxl_ad_linear_solver s);

/*
 * Solves the problem from params (n_params, updated in place with the best
 * point found) with pxl_ad_solve_options (the same rules as pxl_ad_solve,
 * without its limit on n_params, plus method, linear_solver, max_seconds,
 * progress, bounds and constant parameters). Bounds: params must start in
 * the box (else refused); a free parameter on a bound that its gradient
 * pushes against is held out of the step, the trial point is projected onto
 * the box, and the gradient tolerance applies to max |x - P(x - g)| (Ceres').
 * Losses enter through the corrected residuals and Jacobian (see above); the
 * costs are sum 1/2 rho. NaN or Inf in the residuals (or the free columns of
 * the Jacobian) of a trial point reject the step; a system that cannot be
 * factorised raises the damping (LM) or ends with FAILURE, PXL_ERR_INVALID_ARG
 * and a message (Gauss-Newton; params hold the best point). max_seconds is
 * checked before each iteration. Every sum (normal equations, CSC values,
 * J^T v) runs in a fixed order: the result does not depend on the thread
 * count. summary may be NULL.
 * On the GPU (CGNR with GPU evaluation, Levenberg-Marquardt only) the solve
 * differs in: f32 throughout (the cost summed in double; rho, rho', rho''
 * and the corrector in f32, a loss's scale squared must be a normal f32,
 * else PXL_ERR_UNSUPPORTED); Marquardt's D is the current
 * diag(J^T J), clamped (Ceres' choice, not the running maximum); bounds
 * project the trial point and enter the gradient test, with no active set;
 * progress is called after accepted steps only; a group whose Jacobian or
 * indices exceed the device's storage binding limit is refused
 * (PXL_ERR_UNSUPPORTED, naming the sizes).
 */
PXL_API pxl_status pxl_ad_problem_solve(pxl_ad_problem *pb, double *params, const pxl_ad_solve_options *opts,
                                        pxl_ad_solve_summary *summary);

/*
 * Standard errors at params: std_errors[j] = sqrt(s^2 * ((J^T J)^-1)_jj),
 * s^2 = sum r^2 / (residuals - free parameters), over the free parameters
 * (0 for constant ones); covariance (n_params x n_params, may be NULL) the
 * whole scaled matrix. Robust losses are not applied. Fails with
 * PXL_ERR_INVALID_ARG and a message when J^T J is singular (rank deficient:
 * names a parameter), when there are no more residuals than free
 * parameters, or when n_params > 4096.
 */
PXL_API pxl_status pxl_ad_problem_covariance(pxl_ad_problem *pb, const double *params, double *std_errors,
                                             double *covariance);

/*
 * L-BFGS for scalar objectives that are not sums of squares: minimises
 *     E(x) = sum over instances and outputs of the output's value
 * (losses are ignored), with a line search satisfying the strong Wolfe
 * conditions, from params (updated in place). Bounds are honoured by
 * projection (a step that meets a bound satisfies Armijo's condition along
 * the projected path); constant parameters are kept. Uses opts' max_iterations
 * (0: 1000), function_tolerance, gradient_tolerance (on max |grad E|),
 * parameter_tolerance, max_seconds and eval; lbfgs_memory (0: 10).
 * summary's costs are E.
 */
PXL_API pxl_status pxl_ad_problem_minimize(pxl_ad_problem *pb, double *params, const pxl_ad_solve_options *opts,
                                           pxl_ad_solve_summary *summary);

/* ------------------------------------------------------------------------
 * Expressions: text to graph values (src/ad/expr.c)
 *
 *   expr     := additive [ cmp additive ]         cmp: < <= > >= == != (0 or 1;
 *                                                  they do not chain)
 *   additive := term { (+ | -) term }
 *   term     := unary { (* | /) unary }
 *   unary    := (- | +) unary | power
 *   power    := primary [ (^ | **) unary ]        right-associative, tighter
 *                                                  than unary minus: -x^2 = -(x^2),
 *                                                  2^-1 = 0.5, a^b^c = a^(b^c)
 *   primary  := number | name | name ( expr {, expr} ) | ( expr )
 *
 * Numbers are decimal: 12, 1.5, .5, 1e-3, 2.5E+04. Names are
 * [A-Za-z_][A-Za-z0-9_]* and are looked up in the caller's table (each a
 * parameter slot or an input column); a name not in it is an error, except
 * the constants pi and e (a table entry of that name wins). Functions: every
 * op of this header, by its name: exp log sqrt sin cos tan asin acos atan
 * sinh cosh tanh sigmoid relu softplus abs sign floor ceil (one argument),
 * pow hypot atan2 (two), min max (two or more), clamp(x, lo, hi),
 * select(cond, a, b); and log10(x) = log(x) / ln 10. A power whose exponent
 * is a constant integer (x^2, x^-1, x^(4/2)) is pxl_ad_powi, else pxl_ad_pow.
 * Arithmetic on constants is folded: 2*pi/12 is one constant (computed in
 * double in the order written, the same as the program would compute it).
 * Spaces, tabs and line breaks separate tokens. Limits: the text is at most
 * PXL_AD_PARSE_MAX_LEN bytes and nests at most PXL_AD_PARSE_MAX_DEPTH levels
 * (parentheses, unary signs, powers), so no input can exhaust the stack.
 * ------------------------------------------------------------------------ */
#define PXL_AD_PARSE_MAX_LEN ((size_t)1 << 20)
#define PXL_AD_PARSE_MAX_DEPTH 200

typedef enum pxl_ad_name_kind {
    PXL_AD_NAME_PARAM = 1, /* index: a parameter slot (pxl_ad_param) */
    PXL_AD_NAME_INPUT = 2  /* index: an input column (pxl_ad_input) */
} pxl_ad_name_kind;

typedef struct pxl_ad_name {
    const char *name; /* NUL-terminated; compared byte for byte */
    pxl_ad_name_kind kind;
    int32_t index;    /* >= 0 */
} pxl_ad_name;

/* The names an expression may use. The first entry of a name wins. */
typedef struct pxl_ad_parse_names {
    const pxl_ad_name *names; /* n entries (NULL when n is 0) */
    size_t n;
    uint8_t *used;            /* NULL, or n flags: entry i is set to 1 when the text uses it */
} pxl_ad_parse_names;

typedef enum pxl_ad_parse_code {
    PXL_AD_PARSE_OK = 0,
    PXL_AD_PARSE_SYNTAX,           /* a malformed expression */
    PXL_AD_PARSE_UNKNOWN_NAME,     /* a name neither in the table nor pi/e (column, length: the name) */
    PXL_AD_PARSE_UNKNOWN_FUNCTION, /* name( with no such function (column, length: the name) */
    PXL_AD_PARSE_ARGUMENTS,        /* a function called with the wrong number of arguments */
    PXL_AD_PARSE_LIMIT,            /* longer or deeper than the limits */
    PXL_AD_PARSE_GRAPH             /* a graph builder error (out of memory, ...): see the status */
} pxl_ad_parse_code;

typedef struct pxl_ad_parse_error {
    pxl_ad_parse_code code;
    size_t column;     /* 1-based byte offset where the text is bad; 0 when there is none */
    size_t length;     /* bytes of the offending token at column (at least 1 when column > 0) */
    char message[192]; /* "column 7: unknown function 'expp'"; "" when there is no error */
} pxl_ad_parse_error;

/*
 * Parses text[0..len) (not NUL-terminated; NUL bytes are errors) into a value
 * of g, built with the ops of this header. On success *out is the value and
 * err (may be NULL) has code PXL_AD_PARSE_OK. On failure *out is the invalid
 * value, err says where and why, the same message is kept in the graph's
 * context, and the status is PXL_ERR_FORMAT (the text), PXL_ERR_INVALID_ARG
 * (a NULL argument or a bad table entry) or the graph's builder error. A
 * failed parse may leave unused nodes in g (they reach no program) but does
 * not set the graph's error: g stays usable.
 */
PXL_API pxl_status pxl_ad_parse(pxl_ad_graph *g, const char *text, size_t len, const pxl_ad_parse_names *names,
                                pxl_ad_value *out, pxl_ad_parse_error *err);

/* ------------------------------------------------------------------------
 * Data tables: the columns a fit reads (src/ad/table.c)
 *
 * Text with one row per line; fields separated by whitespace, or by commas
 * on a line that has a comma (spaces around them are allowed; an empty field
 * is an error). '#' starts a comment that runs to the end of the line; blank
 * and comment-only lines are skipped; CRLF line ends are accepted. The first
 * row may be a header: when none of its fields is a number, they are the
 * column names (each a name of the expression grammar above, optionally in
 * double quotes, no two the same); a first row that mixes numbers and words
 * is an error. Every other row must have as many fields
 * as the first, each a finite decimal number (NaN and Inf are refused: a fit
 * cannot use them). Without a header or names in the options, the columns
 * are named x, x2, x3, ... and the last y (one column: y).
 * ------------------------------------------------------------------------ */
#define PXL_AD_TABLE_MAX_COLUMNS 4096

typedef struct pxl_ad_table pxl_ad_table;

/* Zero-initialised = defaults. */
typedef struct pxl_ad_table_options {
    const char *const *names; /* n_names column names that replace the header's (or the defaults);
                                 n_names must equal the number of columns */
    size_t n_names;
} pxl_ad_table_options;

/*
 * Reads text[0..len) into a new table. On failure returns PXL_ERR_FORMAT
 * with a message naming the line and column ("line 7, column 12: 'abc' is
 * not a number"), or PXL_ERR_OUT_OF_MEMORY / PXL_ERR_INVALID_ARG, and *out
 * is NULL. A table with no rows is an error ("no data rows"). opts NULL:
 * defaults. Free the table with pxl_ad_table_free.
 */
PXL_API pxl_status pxl_ad_table_parse(pxl_ctx *ctx, const char *text, size_t len, const pxl_ad_table_options *opts,
                                      pxl_ad_table **out);
PXL_API void pxl_ad_table_free(pxl_ad_table *t); /* NULL is a no-op */
PXL_API size_t pxl_ad_table_rows(const pxl_ad_table *t);    /* 0 for NULL */
PXL_API size_t pxl_ad_table_columns(const pxl_ad_table *t); /* 0 for NULL */
/* Name of column c (NUL-terminated, owned by t); NULL when c is out of range. */
PXL_API const char *pxl_ad_table_name(const pxl_ad_table *t, size_t c);
/* Row-major values: row r, column c at [r * columns + c]. Owned by t. */
PXL_API const double *pxl_ad_table_data(const pxl_ad_table *t);
/* 1 when the names came from a header line of the text. */
PXL_API int pxl_ad_table_has_header(const pxl_ad_table *t);
/* The 1-based line of the text row r came from (for messages); 0 when out of range. */
PXL_API size_t pxl_ad_table_line(const pxl_ad_table *t, size_t r);

#ifdef __cplusplus
}
#endif

#endif
