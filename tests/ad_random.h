/*
 * Random AD expression graphs for property tests (tests/ad_random.c).
 *
 * ad_random_graph builds, into an empty graph, a random expression over k
 * parameter slots, some input columns and a few constants: random ops of
 * pxl/ad.h (and optionally the vector / geometry helpers) applied to operands
 * drawn from what was built before (recent nodes for depth, any node for
 * shared subexpressions), depth and size bounded, with several outputs. The
 * same seed and options give the same graph (the same program hash).
 *
 * Safe mode (the default) keeps every op inside its domain for ANY parameter
 * and input values, and every value bounded, by wrapping operands:
 *   log(x)  -> log(hypot(x, 0.5))         sqrt(x) -> sqrt(hypot(x, 0.5))
 *   asin(x) -> asin(0.9 tanh(x))          a / b   -> a / hypot(b, 0.5)
 *   pow(a, b) -> pow(hypot(a, 0.5), b')  powi(a, n < 0) -> powi(hypot(a, 0.5), n)
 *   exp, sinh, cosh, tan and pow's exponent b: the argument soft-clipped,
 *   x -> L tanh(x / L), to a limit L (6 for exp, sinh, cosh; 1.2 for tan; 2
 *   for the exponent) when its magnitude bound exceeds L;
 *   any node whose magnitude bound (tracked at build time for values in
 *   [-range, range]) exceeds 1e3 is soft-clipped to 1e3.
 * Raw mode applies the ops to their operands as they are: values may leave
 * the domains; ad_random_point finds a point where they do not.
 *
 * The generator uses the public API only, no test harness, so any test can
 * link it.
 */
#ifndef PXL_TESTS_AD_RANDOM_H
#define PXL_TESTS_AD_RANDOM_H

#include "pxl/ad.h"

#include <stddef.h>
#include <stdint.h>

/* The kinds of operation the generator draws from (bits of ad_random_options.ops). */
enum {
    AD_RND_ADD, AD_RND_SUB, AD_RND_MUL, AD_RND_DIV, AD_RND_NEG, AD_RND_POW, AD_RND_POWI,
    AD_RND_EXP, AD_RND_LOG, AD_RND_SQRT, AD_RND_HYPOT,
    AD_RND_SIN, AD_RND_COS, AD_RND_TAN, AD_RND_ASIN, AD_RND_ACOS, AD_RND_ATAN, AD_RND_ATAN2,
    AD_RND_SINH, AD_RND_COSH, AD_RND_TANH,
    AD_RND_SIGMOID, AD_RND_RELU, AD_RND_SOFTPLUS,
    AD_RND_ABS, AD_RND_SIGN, AD_RND_FLOOR, AD_RND_CEIL, AD_RND_MIN, AD_RND_MAX, AD_RND_CLAMP,
    AD_RND_SELECT, /* select(cmp(p, q), a, b), cmp one of lt le gt ge eq ne */
    /* vector and geometry helpers over Vec3s made of pool nodes (one scalar of the result) */
    AD_RND_DOT3, AD_RND_CROSS3, AD_RND_LENGTH3, AD_RND_NORMALIZE3, AD_RND_DISTANCE3,
    AD_RND_TRI_NORMAL, AD_RND_TRI_AREA, AD_RND_TRI_ANGLE, AD_RND_DIHEDRAL,
    AD_RND_COUNT
};

#define AD_RND_BIT(k) (1ull << (k))
/* Every scalar op (no vector helpers). */
#define AD_RND_SCALAR_OPS (AD_RND_BIT(AD_RND_DOT3) - 1)
/* The vector and geometry helpers. */
#define AD_RND_GEOMETRY_OPS ((AD_RND_BIT(AD_RND_COUNT) - 1) & ~AD_RND_SCALAR_OPS)
/* Ops with kinks or jumps (their finite differences fail near them). */
#define AD_RND_PIECEWISE_OPS                                                                                \
    (AD_RND_BIT(AD_RND_RELU) | AD_RND_BIT(AD_RND_ABS) | AD_RND_BIT(AD_RND_SIGN) | AD_RND_BIT(AD_RND_FLOOR) | \
     AD_RND_BIT(AD_RND_CEIL) | AD_RND_BIT(AD_RND_MIN) | AD_RND_BIT(AD_RND_MAX) | AD_RND_BIT(AD_RND_CLAMP) | \
     AD_RND_BIT(AD_RND_SELECT))

/* Zero-initialised = defaults. */
typedef struct ad_random_options {
    int n_params;    /* parameter slots (all are leaves of the graph); 0: 4 */
    int n_inputs;    /* input columns; 0: 2; negative: none */
    int n_ops;       /* operations drawn (wrappers and sharing aside); 0: 24 */
    int max_depth;   /* longest chain of drawn operations; 0: 8 */
    int n_outputs;   /* 0: 3 */
    uint64_t ops;    /* allowed kinds, AD_RND_BIT(AD_RND_x) bits; 0: AD_RND_SCALAR_OPS */
    int raw;         /* nonzero: no domain wrappers or magnitude clipping (see above) */
    double range;    /* the parameter and input range [-range, range] the bounds assume; 0: 2 */
} ad_random_options;

/*
 * Builds a random graph into g (which should be empty) and marks its outputs.
 * o NULL: defaults. Returns the graph's status (PXL_OK unless a builder
 * failed, e.g. out of memory). The graph has exactly n_params slots and
 * n_inputs columns (some may be unused by the outputs).
 */
pxl_status ad_random_graph(pxl_ad_graph *g, uint64_t seed, const ad_random_options *o);

/* SplitMix64 step, and a uniform double in [lo, hi) from it. */
uint64_t ad_random_next(uint64_t *state);
double ad_random_uniform(uint64_t *state, double lo, double hi);

/*
 * Picks one instance's values, params[k] and inputs[n_inputs] of prog,
 * uniformly in [-range, range] (range <= 0: 2), retrying up to `tries` times
 * (0: 100) until every output and Jacobian entry is finite (the point is
 * inside every op's domain along the way). Returns the number of draws used,
 * or 0 when none of them was good (the last draw is left in place) or the
 * evaluation failed.
 */
int ad_random_point(pxl_ctx *ctx, const pxl_ad_program *prog, uint64_t *state, double range, int tries,
                    double *params, double *inputs);

#endif
