/*
 * Gradients of pxl/ad.h against central finite differences, in f64:
 *   1. every scalar op at 400 random points of its domain (kinks avoided by
 *      1e-2), no point may be skipped;
 *   2. the edge cases, with their exact documented values and derivatives;
 *   3. the vector and geometry helpers (random points, near-zero vectors,
 *      degenerate triangles, dihedral angles at 0 and pi);
 *   4. random expression graphs (tests/ad_random.c): reverse-mode Jacobian
 *      against finite differences, and the f32 interpreter against the f64
 *      one.
 *
 * The finite-difference rule (fd_check). For slot j, with
 * h = 1e-4 * max(1, |x_j|) (or 1e-4 * a stated scale near a singularity),
 * D(h) = (f(x + h) - f(x - h)) / (the step actually taken), computed at h and
 * h/8. The entry is ill-conditioned, and skipped, when D(h) or D(h/8) is not
 * finite, |D(h) - D(h/8)| > 1e-4 S, S = max(1, |D(h/8)|) (a kink, a jump
 * or a large third derivative within h); else it must satisfy
 * |J - D(h/8)| <= 1e-5 S, unless the rounding of D(h/8) itself,
 * 4 eps max|f(x +- h/8)| / (h/4), exceeds 1e-5 S (then it is skipped too:
 * f is too large for the step to see the derivative). Skips are counted: the op tests allow none, the
 * random graphs at most 1% of their entries.
 *
 * Usage: test_ad_grad [graphs] (default 3000 random graphs).
 */
#include "check.h"
#include "test_ctx.h"

#include "ad_random.h"
#include "pxl/ad.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static pxl_ctx *g_ctx;

enum { MAXK = 16, MAXM = 8, MAXIN = 8 };

static const double PI = 3.14159265358979323846;
#define INF HUGE_VAL
#define NaN nan("")

typedef struct fd_stats {
    long checked, skipped, failed;
} fd_stats;

/* Evaluates p at one point x[k] (slot j reads x[j]) with inputs in (may be
 * NULL without columns): res[m] and, when jac is not NULL, jac[m k]. */
static void eval_at(const pxl_ad_program *p, const double *x, const double *in, double *res, double *jac,
                    pxl_ad_precision prec) {
    pxl_ad_program_info info = pxl_ad_program_get_info(p);
    uint32_t idx[MAXK];
    for (size_t j = 0; j < info.n_params; j++) idx[j] = (uint32_t)j;
    pxl_ad_eval_options o;
    memset(&o, 0, sizeof o);
    o.precision = prec;
    o.serial = 1;
    pxl_status s = pxl_ad_eval(g_ctx, p, x, info.n_params, idx, in, 1, res, jac, &o);
    CHECK_MSG(s == PXL_OK, "%s", pxl_ctx_error(g_ctx));
}

/* (a - b) wrapped into (-pi, pi]: a difference of angles across their cut. */
static double wrap_pi(double d) {
    while (d > PI) d -= 2 * PI;
    while (d <= -PI) d += 2 * PI;
    return d;
}

/*
 * Checks the reverse-mode Jacobian of p at x against central differences by
 * the rule above. hscale > 0: h = 1e-4 hscale for every slot. wrap: the
 * outputs are angles (differences taken modulo 2 pi). Returns the number of
 * skipped entries. A failure prints name, the point and the entry.
 */
static int fd_check(const char *name, const pxl_ad_program *p, const double *x, const double *in, double hscale,
                    int wrap, fd_stats *st) {
    pxl_ad_program_info info = pxl_ad_program_get_info(p);
    const size_t k = info.n_params, m = info.n_outputs, ni = info.n_inputs;
    if (k > MAXK || m > MAXM || ni > MAXIN) {
        CHECK_MSG(0, "%s: program too large for fd_check", name);
        return 0;
    }
    const size_t n = 1 + 4 * k; /* the point, then x +- h, x +- h/8 per slot */
    double params[(1 + 4 * MAXK) * MAXK], inputs[(1 + 4 * MAXK) * MAXIN + 1], res[(1 + 4 * MAXK) * MAXM];
    double jac[MAXM * MAXK], steps[MAXK][2];
    uint32_t idx[(1 + 4 * MAXK) * MAXK];
    for (size_t i = 0; i < n; i++) {
        memcpy(params + i * k, x, k * sizeof *x);
        for (size_t c = 0; c < ni; c++) inputs[i * ni + c] = in[c];
        for (size_t j = 0; j < k; j++) idx[i * k + j] = (uint32_t)(i * k + j);
    }
    for (size_t j = 0; j < k; j++) {
        double h = 1e-4 * (hscale > 0 ? hscale : fmax(1, fabs(x[j])));
        for (size_t s = 0; s < 2; s++, h /= 8) {
            double *xp = params + (1 + 4 * j + 2 * s) * k, *xm = xp + k;
            xp[j] = x[j] + h;
            xm[j] = x[j] - h;
            steps[j][s] = xp[j] - xm[j];
        }
    }
    pxl_ad_eval_options o;
    memset(&o, 0, sizeof o);
    o.serial = 1;
    pxl_status s = pxl_ad_eval(g_ctx, p, params, n * k, idx, ni ? inputs : NULL, 1, res, jac, &o);
    if (s == PXL_OK) s = pxl_ad_eval(g_ctx, p, params, n * k, idx, ni ? inputs : NULL, n, res, NULL, &o);
    CHECK_MSG(s == PXL_OK, "%s: %s", name, pxl_ctx_error(g_ctx));
    if (s != PXL_OK) return 0;
    int skipped = 0;
    for (size_t r = 0; r < m; r++)
        for (size_t j = 0; j < k; j++) {
            double d[2], noise = 0;
            for (size_t t = 0; t < 2; t++) {
                double fp = res[(1 + 4 * j + 2 * t) * m + r], fm = res[(2 + 4 * j + 2 * t) * m + r];
                d[t] = (wrap ? wrap_pi(fp - fm) : fp - fm) / steps[j][t];
                noise = 4 * 2.220446049250313e-16 * fmax(fabs(fp), fabs(fm)) / steps[j][t];
            }
            double ad = jac[r * k + j], S = fmax(1, fabs(d[1]));
            st->checked++;
            if (!isfinite(d[0]) || !isfinite(d[1]) || fabs(d[0] - d[1]) > 1e-4 * S) {
                st->skipped++;
                skipped++;
                if (getenv("PXL_TEST_VERBOSE"))
                    fprintf(stderr, "%s: output %zu, d/dx%zu at x = (%.17g, %.17g, ...): skipped, differences %.12g (h) "
                            "%.12g (h/8), reverse mode %.12g\n", name, r, j, x[0], k > 1 ? x[1] : 0.0, d[0], d[1], ad);
                continue;
            }
            if (!(fabs(ad - d[1]) <= 1e-5 * S) && noise > 1e-5 * S) {
                st->skipped++; /* the difference is rounding noise: |f| too large for the step */
                skipped++;
                continue;
            }
            if (!(fabs(ad - d[1]) <= 1e-5 * S)) {
                st->failed++;
                g_failures++;
                if (st->failed <= 10)
                    fprintf(stderr, "%s: output %zu, d/dx%zu at x = (%.17g, %.17g, %.17g, ...): reverse mode %.12g, "
                            "central differences %.12g (h) %.12g (h/8)\n",
                            name, r, j, x[0], k > 1 ? x[1] : 0.0, k > 2 ? x[2] : 0.0, ad, d[0], d[1]);
            }
        }
    return skipped;
}

static pxl_ad_graph *new_graph(void) {
    pxl_ad_graph *g = NULL;
    CHECK(pxl_ad_graph_create(g_ctx, &g) == PXL_OK);
    return g;
}

static pxl_ad_program *compile(pxl_ad_graph *g) {
    pxl_ad_program *p = NULL;
    pxl_status s = pxl_ad_compile(g, &p);
    CHECK_MSG(s == PXL_OK, "%s", pxl_ctx_error(g_ctx));
    pxl_ad_graph_free(g);
    return p;
}

/* ---- 1. every op at random points --------------------------------------- */

typedef pxl_ad_value (*un_fn)(pxl_ad_graph *, pxl_ad_value);
typedef pxl_ad_value (*bin_fn)(pxl_ad_graph *, pxl_ad_value, pxl_ad_value);

enum { AVOID_ZERO = 1, AVOID_INT = 2, LOG_UNIFORM = 4, AVOID_TIE = 8 /* |x0 - x1| > 1e-2 */ };

static pxl_ad_value b_clamp(pxl_ad_graph *g, const pxl_ad_value *x) { return pxl_ad_clamp(g, x[0], x[1], x[2]); }
/* select(x0 < 0, x1 * x2, sin(x2)): both branches, the condition's derivative 0 */
static pxl_ad_value b_select(pxl_ad_graph *g, const pxl_ad_value *x) {
    return pxl_ad_select(g, pxl_ad_lt(g, x[0], pxl_ad_const(g, 0)), pxl_ad_mul(g, x[1], x[2]), pxl_ad_sin(g, x[2]));
}

static const struct {
    const char *name;
    un_fn u;
    bin_fn b;
    pxl_ad_value (*t)(pxl_ad_graph *, const pxl_ad_value *);
    double lo[3], hi[3];
    int flags[3];
} ops[] = {
    {"neg", pxl_ad_neg, NULL, NULL, {-10}, {10}, {0}},
    {"exp", pxl_ad_exp, NULL, NULL, {-20}, {20}, {0}},
    {"log", pxl_ad_log, NULL, NULL, {0.05}, {1e3}, {LOG_UNIFORM}},
    {"sqrt", pxl_ad_sqrt, NULL, NULL, {0.05}, {1e3}, {LOG_UNIFORM}},
    {"sin", pxl_ad_sin, NULL, NULL, {-10}, {10}, {0}},
    {"cos", pxl_ad_cos, NULL, NULL, {-10}, {10}, {0}},
    {"tan", pxl_ad_tan, NULL, NULL, {-1.45}, {1.45}, {0}},
    {"asin", pxl_ad_asin, NULL, NULL, {-0.95}, {0.95}, {0}},
    {"acos", pxl_ad_acos, NULL, NULL, {-0.95}, {0.95}, {0}},
    {"atan", pxl_ad_atan, NULL, NULL, {-20}, {20}, {0}},
    {"sinh", pxl_ad_sinh, NULL, NULL, {-10}, {10}, {0}},
    {"cosh", pxl_ad_cosh, NULL, NULL, {-10}, {10}, {0}},
    {"tanh", pxl_ad_tanh, NULL, NULL, {-10}, {10}, {0}},
    {"sigmoid", pxl_ad_sigmoid, NULL, NULL, {-30}, {30}, {0}},
    {"relu", pxl_ad_relu, NULL, NULL, {-5}, {5}, {AVOID_ZERO}},
    {"softplus", pxl_ad_softplus, NULL, NULL, {-30}, {30}, {0}},
    {"abs", pxl_ad_abs, NULL, NULL, {-5}, {5}, {AVOID_ZERO}},
    {"sign", pxl_ad_sign, NULL, NULL, {-5}, {5}, {AVOID_ZERO}},
    {"floor", pxl_ad_floor, NULL, NULL, {-5}, {5}, {AVOID_INT}},
    {"ceil", pxl_ad_ceil, NULL, NULL, {-5}, {5}, {AVOID_INT}},
    {"add", NULL, pxl_ad_add, NULL, {-10, -10}, {10, 10}, {0, 0}},
    {"sub", NULL, pxl_ad_sub, NULL, {-10, -10}, {10, 10}, {0, 0}},
    {"mul", NULL, pxl_ad_mul, NULL, {-10, -10}, {10, 10}, {0, 0}},
    {"div", NULL, pxl_ad_div, NULL, {-10, -10}, {10, 10}, {0, AVOID_ZERO}},
    {"pow", NULL, pxl_ad_pow, NULL, {0.05, -3}, {10, 3}, {LOG_UNIFORM, 0}},
    {"hypot", NULL, pxl_ad_hypot, NULL, {-10, -10}, {10, 10}, {AVOID_ZERO, AVOID_ZERO}},
    {"atan2", NULL, pxl_ad_atan2, NULL, {-10, -10}, {10, 10}, {AVOID_ZERO, AVOID_ZERO}},
    {"min", NULL, pxl_ad_min, NULL, {-5, -5}, {5, 5}, {AVOID_TIE, 0}},
    {"max", NULL, pxl_ad_max, NULL, {-5, -5}, {5, 5}, {AVOID_TIE, 0}},
    {"lt", NULL, pxl_ad_lt, NULL, {-5, -5}, {5, 5}, {AVOID_TIE, 0}},
    {"le", NULL, pxl_ad_le, NULL, {-5, -5}, {5, 5}, {AVOID_TIE, 0}},
    {"gt", NULL, pxl_ad_gt, NULL, {-5, -5}, {5, 5}, {AVOID_TIE, 0}},
    {"ge", NULL, pxl_ad_ge, NULL, {-5, -5}, {5, 5}, {AVOID_TIE, 0}},
    {"eq", NULL, pxl_ad_eq, NULL, {-5, -5}, {5, 5}, {AVOID_TIE, 0}},
    {"ne", NULL, pxl_ad_ne, NULL, {-5, -5}, {5, 5}, {AVOID_TIE, 0}},
    {"clamp", NULL, NULL, b_clamp, {-5, -5, -5}, {5, 5, 5}, {0, 0, 0}},
    {"select", NULL, NULL, b_select, {-5, -5, -5}, {5, 5, 5}, {AVOID_ZERO, 0, 0}},
};

enum { OP_POINTS = 400 };

static int near_int(double x) { return fabs(x - nearbyint(x)) < 1e-2; }

static void draw(uint64_t *rng, const double *lo, const double *hi, const int *flags, int k, double *x) {
    for (int tries = 0; tries < 1000; tries++) {
        for (int j = 0; j < k; j++)
            x[j] = flags[j] & LOG_UNIFORM ? exp(ad_random_uniform(rng, log(lo[j]), log(hi[j])))
                                          : ad_random_uniform(rng, lo[j], hi[j]);
        int bad = 0;
        for (int j = 0; j < k; j++) {
            if ((flags[j] & AVOID_ZERO) && fabs(x[j]) < 1e-2) bad = 1;
            if ((flags[j] & AVOID_INT) && near_int(x[j])) bad = 1;
            if ((flags[j] & AVOID_TIE) && j + 1 < k && fabs(x[j] - x[j + 1]) < 1e-2) bad = 1;
        }
        if (!bad) return;
    }
}

static void check_op_points(const char *name, pxl_ad_program *p, int k, const double *lo, const double *hi,
                            const int *flags, uint64_t seed) {
    fd_stats st = {0, 0, 0};
    uint64_t rng = seed;
    for (int i = 0; i < OP_POINTS && p; i++) {
        double x[3];
        draw(&rng, lo, hi, flags, k, x);
        fd_check(name, p, x, NULL, 0, 0, &st);
    }
    CHECK_MSG(st.skipped == 0, "%s: %ld of %ld entries ill-conditioned inside the sampled domain", name, st.skipped,
              st.checked);
    if (getenv("PXL_TEST_VERBOSE"))
        fprintf(stderr, "%-8s %ld entries, %ld skipped, %ld failed\n", name, st.checked, st.skipped, st.failed);
}

static void test_ops(void) {
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
        pxl_ad_graph *g = new_graph();
        pxl_ad_value x[3] = {pxl_ad_param(g, 0), pxl_ad_param(g, 1), pxl_ad_param(g, 2)};
        int k = ops[o].u ? 1 : ops[o].b ? 2 : 3;
        pxl_ad_value r = ops[o].u ? ops[o].u(g, x[0]) : ops[o].b ? ops[o].b(g, x[0], x[1]) : ops[o].t(g, x);
        CHECK(pxl_ad_output(g, r) == PXL_OK);
        pxl_ad_program *p = compile(g);
        CHECK(pxl_ad_program_get_info(p).n_params == 3);
        /* slots past k are unused (zero derivative): checked too, harmlessly */
        double lo[3] = {ops[o].lo[0], ops[o].lo[1], ops[o].lo[2]}, hi[3] = {ops[o].hi[0], ops[o].hi[1], ops[o].hi[2]};
        int flags[3] = {ops[o].flags[0], ops[o].flags[1], ops[o].flags[2]};
        for (int j = k; j < 3; j++) lo[j] = -1, hi[j] = 1, flags[j] = 0;
        check_op_points(ops[o].name, p, 3, lo, hi, flags, 1000 + o);
        pxl_ad_program_free(p);
    }
    /* powi for n = -4 .. 5 (|a| >= 0.2 for negative n); pow with a negative
     * base and an integer exponent, against differences in a */
    for (int n = -4; n <= 5; n++) {
        pxl_ad_graph *g = new_graph();
        CHECK(pxl_ad_output(g, pxl_ad_powi(g, pxl_ad_param(g, 0), n)) == PXL_OK);
        pxl_ad_program *p = compile(g);
        char name[32];
        snprintf(name, sizeof name, "powi(a, %d)", n);
        double lo = n < 0 ? 0.2 : -3, hi = 3;
        int flags = 0;
        check_op_points(name, p, 1, &lo, &hi, &flags, 2000 + (uint64_t)(n + 10));
        pxl_ad_program_free(p);
        /* the same exponent through pow, with a < 0 */
        g = new_graph();
        CHECK(pxl_ad_output(g, pxl_ad_pow(g, pxl_ad_param(g, 0), pxl_ad_const(g, n))) == PXL_OK);
        p = compile(g);
        snprintf(name, sizeof name, "pow(a < 0, %d)", n);
        lo = -3;
        hi = -0.2;
        check_op_points(name, p, 1, &lo, &hi, &flags, 3000 + (uint64_t)(n + 10));
        pxl_ad_program_free(p);
    }
}

/* ---- 2. edge cases --------------------------------------------------------- */

static int same(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

/* The one-output program of build at x: value and gradient exactly as
 * wanted (NaN matches NaN, infinities by sign); want_grad NULL: any. */
static void exact(const char *name, pxl_ad_value (*build)(pxl_ad_graph *, const pxl_ad_value *, double), double c,
                  size_t k, const double *x, double want, const double *want_grad, pxl_ad_precision prec) {
    pxl_ad_graph *g = new_graph();
    pxl_ad_value v[3] = {pxl_ad_param(g, 0), pxl_ad_param(g, 1), pxl_ad_param(g, 2)};
    CHECK(pxl_ad_output(g, build(g, v, c)) == PXL_OK);
    pxl_ad_program *p = compile(g);
    double r = 0, jac[3] = {0, 0, 0}, xx[3] = {0, 0, 0};
    memcpy(xx, x, k * sizeof *x);
    if (p) eval_at(p, xx, NULL, &r, jac, prec);
    const char *pn = prec == PXL_AD_F32 ? " (f32)" : "";
    CHECK_MSG(same(r, want), "%s%s: value %.17g, want %.17g", name, pn, r, want);
    for (size_t j = 0; want_grad && j < k; j++)
        CHECK_MSG(same(jac[j], want_grad[j]), "%s%s: d/dx%zu = %.17g, want %.17g", name, pn, j, jac[j],
                  want_grad[j]);
    pxl_ad_program_free(p);
}

static pxl_ad_value e_sqrt(pxl_ad_graph *g, const pxl_ad_value *x, double c) { (void)c; return pxl_ad_sqrt(g, x[0]); }
static pxl_ad_value e_log(pxl_ad_graph *g, const pxl_ad_value *x, double c) { (void)c; return pxl_ad_log(g, x[0]); }
static pxl_ad_value e_asin(pxl_ad_graph *g, const pxl_ad_value *x, double c) { (void)c; return pxl_ad_asin(g, x[0]); }
static pxl_ad_value e_acos(pxl_ad_graph *g, const pxl_ad_value *x, double c) { (void)c; return pxl_ad_acos(g, x[0]); }
static pxl_ad_value e_tan(pxl_ad_graph *g, const pxl_ad_value *x, double c) { (void)c; return pxl_ad_tan(g, x[0]); }
static pxl_ad_value e_abs(pxl_ad_graph *g, const pxl_ad_value *x, double c) { (void)c; return pxl_ad_abs(g, x[0]); }
static pxl_ad_value e_relu(pxl_ad_graph *g, const pxl_ad_value *x, double c) { (void)c; return pxl_ad_relu(g, x[0]); }
static pxl_ad_value e_floor(pxl_ad_graph *g, const pxl_ad_value *x, double c) { (void)c; return pxl_ad_floor(g, x[0]); }
static pxl_ad_value e_ceil(pxl_ad_graph *g, const pxl_ad_value *x, double c) { (void)c; return pxl_ad_ceil(g, x[0]); }
static pxl_ad_value e_sigmoid(pxl_ad_graph *g, const pxl_ad_value *x, double c) {
    (void)c;
    return pxl_ad_sigmoid(g, x[0]);
}
static pxl_ad_value e_softplus(pxl_ad_graph *g, const pxl_ad_value *x, double c) {
    (void)c;
    return pxl_ad_softplus(g, x[0]);
}
static pxl_ad_value e_powi(pxl_ad_graph *g, const pxl_ad_value *x, double c) { return pxl_ad_powi(g, x[0], (int32_t)c); }
static pxl_ad_value e_pow(pxl_ad_graph *g, const pxl_ad_value *x, double c) { (void)c; return pxl_ad_pow(g, x[0], x[1]); }
static pxl_ad_value e_atan2(pxl_ad_graph *g, const pxl_ad_value *x, double c) {
    (void)c;
    return pxl_ad_atan2(g, x[0], x[1]);
}
static pxl_ad_value e_hypot(pxl_ad_graph *g, const pxl_ad_value *x, double c) {
    (void)c;
    return pxl_ad_hypot(g, x[0], x[1]);
}
static pxl_ad_value e_min(pxl_ad_graph *g, const pxl_ad_value *x, double c) { (void)c; return pxl_ad_min(g, x[0], x[1]); }
static pxl_ad_value e_max(pxl_ad_graph *g, const pxl_ad_value *x, double c) { (void)c; return pxl_ad_max(g, x[0], x[1]); }
static pxl_ad_value e_clamp(pxl_ad_graph *g, const pxl_ad_value *x, double c) {
    (void)c;
    return pxl_ad_clamp(g, x[0], x[1], x[2]);
}
static pxl_ad_value e_select(pxl_ad_graph *g, const pxl_ad_value *x, double c) {
    (void)c;
    return pxl_ad_select(g, x[0], x[1], x[2]);
}
/* select(x0, x1, log(-1 - x2^2)): the untaken branch is NaN, its derivative too */
static pxl_ad_value e_select_nan(pxl_ad_graph *g, const pxl_ad_value *x, double c) {
    (void)c;
    pxl_ad_value bad = pxl_ad_log(g, pxl_ad_sub(g, pxl_ad_const(g, -1), pxl_ad_mul(g, x[2], x[2])));
    return pxl_ad_select(g, x[0], x[1], bad);
}

/* The k-slot program of build (k <= 3), for fd_check at chosen points and steps. */
static pxl_ad_program *program1(pxl_ad_value (*build)(pxl_ad_graph *, const pxl_ad_value *, double), double c,
                                int k) {
    pxl_ad_graph *g = new_graph();
    pxl_ad_value v[3] = {{0, 0}, {0, 0}, {0, 0}};
    for (int j = 0; j < k; j++) v[j] = pxl_ad_param(g, j);
    CHECK(pxl_ad_output(g, build(g, v, c)) == PXL_OK);
    return compile(g);
}

static void test_edges(void) {
    const double z[3] = {0, 0, 0}, one[1] = {1}, m1[1] = {-1}, inf1[1] = {INF}, minf1[1] = {-INF};
    /* sqrt and log at 0 */
    exact("sqrt(0)", e_sqrt, 0, 1, z, 0, inf1, PXL_AD_F64);
    exact("log(0)", e_log, 0, 1, z, -INF, inf1, PXL_AD_F64);
    /* asin, acos at +-1: the derivative +-inf */
    exact("asin(1)", e_asin, 0, 1, one, PI / 2, inf1, PXL_AD_F64);
    exact("asin(-1)", e_asin, 0, 1, m1, -PI / 2, inf1, PXL_AD_F64);
    exact("acos(1)", e_acos, 0, 1, one, 0, minf1, PXL_AD_F64);
    exact("acos(-1)", e_acos, 0, 1, m1, PI, minf1, PXL_AD_F64);
    /* atan2 at the origin: 0 by convention; (+-0, -1) on the cut */
    exact("atan2(0, 0)", e_atan2, 0, 2, z, 0, z, PXL_AD_F64);
    {
        const double at[2] = {0, -1}, atm[2] = {-0.0, -1}, d[2] = {-1, 0};
        exact("atan2(0, -1)", e_atan2, 0, 2, at, PI, d, PXL_AD_F64);
        exact("atan2(-0, -1)", e_atan2, 0, 2, atm, -PI, d, PXL_AD_F64);
    }
    /* hypot at (0, 0) */
    exact("hypot(0, 0)", e_hypot, 0, 2, z, 0, z, PXL_AD_F64);
    /* pow with a negative or zero base: d/db = 0 for a <= 0 */
    {
        const double p1[2] = {-2, 3}, g1[2] = {12, 0};
        exact("pow(-2, 3)", e_pow, 0, 2, p1, -8, g1, PXL_AD_F64);
        const double p2[2] = {-2, 0.5};
        exact("pow(-2, 0.5)", e_pow, 0, 2, p2, NaN, NULL, PXL_AD_F64);
        pxl_ad_program *p = program1(e_pow, 0, 2);
        double r, jac[3];
        eval_at(p, p2, NULL, &r, jac, PXL_AD_F64);
        CHECK_MSG(jac[1] == 0, "pow(-2, 0.5): d/db = %g, want 0", jac[1]);
        pxl_ad_program_free(p);
        const double p3[2] = {0, 2}, p4[2] = {0, 0}, g4[2] = {0, 0};
        exact("pow(0, 2)", e_pow, 0, 2, p3, 0, z, PXL_AD_F64);
        exact("pow(0, 0)", e_pow, 0, 2, p4, 1, g4, PXL_AD_F64);
        const double p5[2] = {0, 0.5}, g5[2] = {INF, 0};
        exact("pow(0, 0.5)", e_pow, 0, 2, p5, 0, g5, PXL_AD_F64);
        const double p6[2] = {-1.5, -2}, g6[2] = {-2 * pow(-1.5, -3), 0};
        exact("pow(-1.5, -2)", e_pow, 0, 2, p6, pow(-1.5, -2), g6, PXL_AD_F64);
    }
    /* powi at 0 */
    {
        const double g0[1] = {0}, g1[1] = {1};
        exact("powi(0, 0)", e_powi, 0, 1, z, 1, g0, PXL_AD_F64);
        exact("powi(0, 1)", e_powi, 1, 1, z, 0, g1, PXL_AD_F64);
        exact("powi(0, 2)", e_powi, 2, 1, z, 0, g0, PXL_AD_F64);
        exact("powi(0, -1)", e_powi, -1, 1, z, INF, minf1, PXL_AD_F64);
        exact("powi(0, -2)", e_powi, -2, 1, z, INF, minf1, PXL_AD_F64);
    }
    /* kinks: the documented one-sided choices */
    {
        const double tie[2] = {1.5, 1.5}, first[2] = {1, 0}, second[2] = {0, 1};
        exact("abs(0)", e_abs, 0, 1, z, 0, z, PXL_AD_F64);
        exact("relu(0)", e_relu, 0, 1, z, 0, z, PXL_AD_F64);
        exact("min(a, a)", e_min, 0, 2, tie, 1.5, first, PXL_AD_F64);
        exact("max(a, a)", e_max, 0, 2, tie, 1.5, first, PXL_AD_F64);
        const double lt[2] = {1, 2}, gt[2] = {2, 1};
        exact("min(1, 2)", e_min, 0, 2, lt, 1, first, PXL_AD_F64);
        exact("min(2, 1)", e_min, 0, 2, gt, 1, second, PXL_AD_F64);
        exact("max(1, 2)", e_max, 0, 2, lt, 2, second, PXL_AD_F64);
        exact("max(2, 1)", e_max, 0, 2, gt, 2, first, PXL_AD_F64);
        const double at_lo[3] = {-1, -1, 1}, at_hi[3] = {1, -1, 1}, below[3] = {-2, -1, 1}, above[3] = {2, -1, 1};
        const double all[3] = {0.5, 0.5, 0.5};
        const double dx[3] = {1, 0, 0}, dlo[3] = {0, 1, 0}, dhi[3] = {0, 0, 1};
        exact("clamp(lo, lo, hi)", e_clamp, 0, 3, at_lo, -1, dx, PXL_AD_F64);
        exact("clamp(hi, lo, hi)", e_clamp, 0, 3, at_hi, 1, dx, PXL_AD_F64);
        exact("clamp(below lo)", e_clamp, 0, 3, below, -1, dlo, PXL_AD_F64);
        exact("clamp(above hi)", e_clamp, 0, 3, above, 1, dhi, PXL_AD_F64);
        exact("clamp(x, x, x)", e_clamp, 0, 3, all, 0.5, dx, PXL_AD_F64);
    }
    /* select: only the branch taken, never the condition */
    {
        const double t[3] = {1, 2, 3}, f[3] = {0, 2, 3}, neg[3] = {-0.5, 2, 3};
        const double ga[3] = {0, 1, 0}, gb[3] = {0, 0, 1};
        exact("select(1, a, b)", e_select, 0, 3, t, 2, ga, PXL_AD_F64);
        exact("select(0, a, b)", e_select, 0, 3, f, 3, gb, PXL_AD_F64);
        exact("select(-0.5, a, b)", e_select, 0, 3, neg, 2, ga, PXL_AD_F64);
        exact("select(1, a, NaN branch)", e_select_nan, 0, 3, t, 2, ga, PXL_AD_F64);
        exact("select(1, a, NaN branch)", e_select_nan, 0, 3, t, 2, ga, PXL_AD_F32);
    }
    /* floor and ceil: zero gradient everywhere, integers included */
    {
        uint64_t rng = 77;
        for (int i = 0; i < 200; i++) {
            double x = i < 20 ? (double)(i - 10) : ad_random_uniform(&rng, -50, 50);
            exact("floor", e_floor, 0, 1, &x, floor(x), z, PXL_AD_F64);
            exact("ceil", e_ceil, 0, 1, &x, ceil(x), z, PXL_AD_F64);
        }
    }
    /* sigmoid and softplus at +-large, f64 and f32: no overflow, finite derivatives */
    for (int f = 0; f < 2; f++) {
        pxl_ad_precision prec = f ? PXL_AD_F32 : PXL_AD_F64;
        const double big[1] = {1000}, small[1] = {-1000};
        exact("softplus(1000)", e_softplus, 0, 1, big, 1000, one, prec);
        exact("softplus(-1000)", e_softplus, 0, 1, small, 0, z, prec);
        exact("sigmoid(1000)", e_sigmoid, 0, 1, big, 1, z, prec);
        exact("sigmoid(-1000)", e_sigmoid, 0, 1, small, 0, z, prec);
        const double b40[1] = {40}, s40[1] = {-40};
        pxl_ad_program *p = program1(e_softplus, 0, 1);
        double r, jac[3];
        eval_at(p, b40, NULL, &r, jac, prec);
        CHECK_MSG(fabs(r - 40) < 1e-6 && fabs(jac[0] - 1) < 1e-6, "softplus(40): %g, %g", r, jac[0]);
        eval_at(p, s40, NULL, &r, jac, prec);
        CHECK_MSG(r > 0 && fabs(r - exp(-40)) < 1e-6 * exp(-40) && isfinite(jac[0]) && jac[0] > 0,
                  "softplus(-40): %g, %g", r, jac[0]);
        pxl_ad_program_free(p);
    }
    /* near-singular points with steps scaled to the distance */
    fd_stats st = {0, 0, 0};
    {
        /* atan2 near the origin: radii down to 1e-150, all directions */
        pxl_ad_program *p = program1(e_atan2, 0, 2);
        uint64_t rng = 5;
        for (int i = 0; i < 200 && p; i++) {
            double r = pow(10, -1 - (double)(i % 15) * 10), t = ad_random_uniform(&rng, -PI, PI);
            double x[2] = {r * sin(t), r * cos(t)};
            if (fabs(t) > PI - 1e-2) continue; /* the cut: the value jumps by 2 pi */
            fd_check("atan2 near (0, 0)", p, x, NULL, r, 0, &st);
        }
        pxl_ad_program_free(p);
        /* tan near pi/2, from both sides */
        p = program1(e_tan, 0, 1);
        for (int e = 1; e <= 8 && p; e++) {
            double d = pow(10, -e);
            double x1[1] = {PI / 2 - d}, x2[1] = {PI / 2 + d}, x3[1] = {-PI / 2 + d};
            fd_check("tan near pi/2", p, x1, NULL, d, 0, &st);
            fd_check("tan near pi/2", p, x2, NULL, d, 0, &st);
            fd_check("tan near -pi/2", p, x3, NULL, d, 0, &st);
        }
        double x[1] = {PI / 2}, r, jac[3];
        eval_at(p, x, NULL, &r, jac, PXL_AD_F64);
        CHECK_MSG(isfinite(jac[0]) && jac[0] > 1e32 && fabs(jac[0] - (1 + r * r)) <= 1e-15 * jac[0],
                  "tan'(pi/2) = %g (tan %g)", jac[0], r);
        pxl_ad_program_free(p);
        /* sqrt, log, powi(-1) near 0; asin near 1 */
        pxl_ad_program *ps = program1(e_sqrt, 0, 1), *pl = program1(e_log, 0, 1), *pi = program1(e_powi, -1, 1);
        pxl_ad_program *pa = program1(e_asin, 0, 1);
        for (int e = 1; e <= 30; e++) {
            double d = pow(10, -e), x1[1] = {d}, x2[1] = {1 - d};
            fd_check("sqrt near 0", ps, x1, NULL, d, 0, &st);
            fd_check("log near 0", pl, x1, NULL, d, 0, &st);
            fd_check("powi(x, -1) near 0", pi, x1, NULL, d, 0, &st);
            if (e <= 10) fd_check("asin near 1", pa, x2, NULL, d, 0, &st); /* steps above ulp(1) */
        }
        pxl_ad_program_free(ps);
        pxl_ad_program_free(pl);
        pxl_ad_program_free(pi);
        pxl_ad_program_free(pa);
    }
    CHECK_MSG(st.skipped == 0, "near-singular points: %ld of %ld entries ill-conditioned", st.skipped, st.checked);
}

/* ---- 3. vectors and geometry --------------------------------------------- */

enum { G_LEN3, G_NORM3, G_DIST3, G_DOT3, G_CROSS3, G_LEN2, G_NORM2, G_DIST2, G_DOT2, G_CROSS2, G_VEC3OPS, G_VEC2OPS,
       G_TNORMAL, G_TAREA, G_TANGLE, G_DIHEDRAL, G_COUNT };
static const char *const geom_names[G_COUNT] = {
    "vec3_length", "vec3_normalize", "vec3_distance", "vec3_dot", "vec3_cross", "vec2_length", "vec2_normalize",
    "vec2_distance", "vec2_dot", "vec2_cross", "vec3 add/sub/scale/neg", "vec2 add/sub/scale/neg",
    "triangle_normal", "triangle_area", "triangle_angle", "dihedral_angle"};

/* The helper's program: slots 0.. hold the points (vec3: 3 each, vec2: 2). */
static pxl_ad_program *geom_program(int which, size_t *k) {
    pxl_ad_graph *g = new_graph();
    pxl_ad_vec3 a = pxl_ad_vec3_param(g, 0), b = pxl_ad_vec3_param(g, 3), c = pxl_ad_vec3_param(g, 6),
                d = pxl_ad_vec3_param(g, 9);
    pxl_ad_vec2 a2 = {a.x, a.y}, b2 = {a.z, b.x};
    size_t n = 6;
    switch (which) {
    case G_LEN3: pxl_ad_output(g, pxl_ad_vec3_length(g, a)); n = 3; break;
    case G_NORM3: pxl_ad_vec3_output(g, pxl_ad_vec3_normalize(g, a)); n = 3; break;
    case G_DIST3: pxl_ad_output(g, pxl_ad_vec3_distance(g, a, b)); break;
    case G_DOT3: pxl_ad_output(g, pxl_ad_vec3_dot(g, a, b)); break;
    case G_CROSS3: pxl_ad_vec3_output(g, pxl_ad_vec3_cross(g, a, b)); break;
    case G_LEN2: pxl_ad_output(g, pxl_ad_vec2_length(g, a2)); n = 2; break;
    case G_NORM2: pxl_ad_vec2_output(g, pxl_ad_vec2_normalize(g, a2)); n = 2; break;
    case G_DIST2: pxl_ad_output(g, pxl_ad_vec2_distance(g, a2, b2)); n = 4; break;
    case G_DOT2: pxl_ad_output(g, pxl_ad_vec2_dot(g, a2, b2)); n = 4; break;
    case G_CROSS2: pxl_ad_output(g, pxl_ad_vec2_cross(g, a2, b2)); n = 4; break;
    case G_VEC3OPS: /* s (a + b) - (-c) ... as one vector: (a + b) s - neg(c) with s = a.x */
        pxl_ad_vec3_output(g, pxl_ad_vec3_sub(g, pxl_ad_vec3_scale(g, pxl_ad_vec3_add(g, b, c), a.x),
                                              pxl_ad_vec3_neg(g, c)));
        n = 9;
        break;
    case G_VEC2OPS:
        pxl_ad_vec2_output(g, pxl_ad_vec2_sub(g, pxl_ad_vec2_scale(g, pxl_ad_vec2_add(g, a2, b2), b.y),
                                              pxl_ad_vec2_neg(g, a2)));
        n = 5;
        break;
    case G_TNORMAL: pxl_ad_vec3_output(g, pxl_ad_triangle_normal(g, a, b, c)); n = 9; break;
    case G_TAREA: pxl_ad_output(g, pxl_ad_triangle_area(g, a, b, c)); n = 9; break;
    case G_TANGLE: pxl_ad_output(g, pxl_ad_triangle_angle(g, a, b, c)); n = 9; break;
    default: pxl_ad_output(g, pxl_ad_dihedral_angle(g, a, b, c, d)); n = 12; break;
    }
    *k = n;
    return compile(g);
}

static double norm3(const double *v) { return sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]); }
static void cross(const double *a, const double *b, double *r) {
    r[0] = a[1] * b[2] - a[2] * b[1];
    r[1] = a[2] * b[0] - a[0] * b[2];
    r[2] = a[0] * b[1] - a[1] * b[0];
}

static void test_geometry_random(void) {
    for (int w = 0; w < G_COUNT; w++) {
        size_t k = 0;
        pxl_ad_program *p = geom_program(w, &k);
        if (!p) continue;
        /* every slot up to 12 exists (the leaves), the helper reads the first k */
        CHECK(pxl_ad_program_get_info(p).n_params == 12);
        fd_stats st = {0, 0, 0};
        uint64_t rng = 4000 + (uint64_t)w;
        for (int i = 0; i < 300; i++) {
            double x[12];
            for (int j = 0; j < 12; j++) x[j] = ad_random_uniform(&rng, -2, 2);
            fd_check(geom_names[w], p, x, NULL, 0, w == G_DIHEDRAL, &st);
            /* values against plain formulas */
            double r[3], u[3], v[3], n[3];
            eval_at(p, x, NULL, r, NULL, PXL_AD_F64);
            for (int j = 0; j < 3; j++) u[j] = x[3 + j] - x[j], v[j] = x[6 + j] - x[j];
            cross(u, v, n);
            if (w == G_LEN3) CHECK(fabs(r[0] - norm3(x)) <= 1e-15 * norm3(x));
            if (w == G_TAREA) CHECK(fabs(r[0] - norm3(n) / 2) <= 1e-14 * norm3(n));
            if (w == G_TNORMAL) {
                CHECK(fabs(norm3(r) - 1) <= 1e-15);
                for (int j = 0; j < 3; j++) CHECK(fabs(r[j] - n[j] / norm3(n)) <= 1e-14);
            }
            if (w == G_TANGLE) {
                double c = (u[0] * v[0] + u[1] * v[1] + u[2] * v[2]) / (norm3(u) * norm3(v));
                CHECK_MSG(fabs(r[0] - acos(c)) <= 1e-7, "angle %.17g, acos %.17g", r[0], acos(c));
            }
        }
        CHECK_MSG(st.skipped <= st.checked / 100, "%s: %ld of %ld entries ill-conditioned", geom_names[w], st.skipped,
                  st.checked);
        if (getenv("PXL_TEST_VERBOSE"))
            fprintf(stderr, "%-22s %ld entries, %ld skipped, %ld failed\n", geom_names[w], st.checked, st.skipped,
                    st.failed);
        pxl_ad_program_free(p);
    }
}

/* The value and gradient of program p at x are exactly (value, zero gradient). */
static void zero_grad(const char *name, pxl_ad_program *p, size_t k, const double *x) {
    double r[3], jac[3 * 12];
    eval_at(p, x, NULL, r, jac, PXL_AD_F64);
    size_t m = pxl_ad_program_get_info(p).n_outputs;
    for (size_t i = 0; i < m; i++) {
        CHECK_MSG(r[i] == 0, "%s: output %zu = %g, want 0", name, i, r[i]);
        for (size_t j = 0; j < k; j++) CHECK_MSG(jac[i * 12 + j] == 0, "%s: d%zu/dx%zu = %g, want 0", name, i, j, jac[i * 12 + j]);
    }
}

static void test_geometry_edges(void) {
    fd_stats st = {0, 0, 0};
    size_t k;
    /* normalize near zero: steps scaled to |v| (derivative ~ 1/|v|) */
    pxl_ad_program *pn = geom_program(G_NORM3, &k), *pn2 = geom_program(G_NORM2, &k);
    uint64_t rng = 99;
    for (int e = 0; e <= 17; e++) {
        double r = pow(10, -e), x[12] = {0}, u[3];
        for (int j = 0; j < 3; j++) u[j] = ad_random_uniform(&rng, -1, 1);
        for (int j = 0; j < 3; j++) x[j] = r * u[j] / norm3(u);
        fd_check("vec3_normalize near 0", pn, x, NULL, r, 0, &st);
        fd_check("vec2_normalize near 0", pn2, x, NULL, r, 0, &st);
    }
    /* at and below PXL_AD_TINY_LENGTH: the zero vector, zero derivative */
    {
        double x[12] = {0};
        zero_grad("vec3_normalize(0)", pn, 12, x);
        zero_grad("vec2_normalize(0)", pn2, 12, x);
        x[0] = 3e-19;
        x[1] = -4e-19;
        zero_grad("vec3_normalize(|v| = 5e-19)", pn, 12, x);
        zero_grad("vec2_normalize(|v| = 5e-19)", pn2, 12, x);
        double r[3], jac[36];
        x[0] = NaN;
        eval_at(pn, x, NULL, r, jac, PXL_AD_F64);
        CHECK_MSG(isnan(r[0]) && isnan(r[1]) && isnan(r[2]), "normalize(NaN, ...) = (%g, %g, %g), want NaN", r[0], r[1],
                  r[2]);
        /* in f32 too */
        x[0] = 0;
        x[1] = 0;
        eval_at(pn, x, NULL, r, jac, PXL_AD_F32);
        for (int i = 0; i < 36; i++) CHECK(jac[i] == 0);
        x[0] = 1e-10;
        eval_at(pn, x, NULL, r, jac, PXL_AD_F32);
        CHECK_MSG(fabs(r[0] - 1) < 1e-6 && isfinite(jac[0]) && isfinite(jac[13]) && fabs(jac[13] - 1e10) < 1e4,
                  "f32 normalize(1e-10, 0, 0): %g, d/dx %g, dy/dy %g", r[0], jac[0], jac[13]);
    }
    pxl_ad_program_free(pn);
    pxl_ad_program_free(pn2);
    /* length and distance at zero: 0 with zero derivative */
    {
        pxl_ad_program *pl = geom_program(G_LEN3, &k), *pd = geom_program(G_DIST3, &k);
        double x[12] = {1, 2, 3, 1, 2, 3};
        zero_grad("vec3_distance(a, a)", pd, 12, x);
        memset(x, 0, sizeof x);
        zero_grad("vec3_length(0)", pl, 12, x);
        pxl_ad_program_free(pl);
        pxl_ad_program_free(pd);
    }
    /* degenerate triangles: area 0 and normal 0, zero derivative; angles */
    {
        pxl_ad_program *pa = geom_program(G_TAREA, &k), *pnn = geom_program(G_TNORMAL, &k);
        pxl_ad_program *pg = geom_program(G_TANGLE, &k);
        double col[12] = {0, 0, 0, 1, 0, 0, 2, 0, 0}; /* collinear: angle 0 at a */
        zero_grad("triangle_area(collinear)", pa, 12, col);
        zero_grad("triangle_normal(collinear)", pnn, 12, col);
        zero_grad("triangle_angle(collinear, 0)", pg, 12, col);
        /* the symmetric differences of |angle| at its kink are 0 too */
        fd_check("triangle_angle(collinear, 0)", pg, col, NULL, 0, 0, &st);
        double opp[12] = {0, 0, 0, 1, 0, 0, -2, 0, 0}; /* angle pi at a */
        double r, jac[12];
        eval_at(pg, opp, NULL, &r, jac, PXL_AD_F64);
        CHECK_MSG(r == PI, "triangle_angle(straight) = %.17g", r);
        for (int j = 0; j < 9; j++) CHECK(jac[j] == 0);
        fd_check("triangle_angle(straight, pi)", pg, opp, NULL, 0, 0, &st);
        double coinc[12] = {1, 1, 1, 1, 1, 1, 2, 3, 4}; /* b = a */
        zero_grad("triangle_angle(b = a)", pg, 12, coinc);
        zero_grad("triangle_area(b = a)", pa, 12, coinc);
        /* nearly degenerate: angles down to 1e-12, steps scaled to the height */
        for (int e = 1; e <= 10; e++) { /* steps 1e-4 hgt / 8 above ulp(2) */
            double hgt = pow(10, -e), x[12] = {0, 0, 0, 1, 0, 0, 2, hgt, 0.5 * hgt};
            fd_check("triangle_angle near 0", pg, x, NULL, hgt, 0, &st);
            /* near pi the value's rounding, eps pi, limits the steps to h >> 1e-12 */
            double y[12] = {0, 0, 0, 1, 0, 0, -2, hgt, -hgt};
            if (e <= 5) fd_check("triangle_angle near pi", pg, y, NULL, hgt, 0, &st);
        }
        /* known angles and areas */
        double right[12] = {0, 0, 0, 2, 0, 0, 0, 3, 0}, eq[12] = {0, 0, 0, 1, 0, 0, 0.5, sqrt(3) / 2, 0};
        eval_at(pg, right, NULL, &r, jac, PXL_AD_F64);
        CHECK_MSG(fabs(r - PI / 2) < 1e-15, "right angle %.17g", r);
        eval_at(pg, eq, NULL, &r, jac, PXL_AD_F64);
        CHECK_MSG(fabs(r - PI / 3) < 1e-15, "equilateral angle %.17g", r);
        eval_at(pa, right, NULL, &r, jac, PXL_AD_F64);
        CHECK_MSG(r == 3, "right triangle area %.17g", r);
        double nrm[3];
        eval_at(pnn, right, NULL, nrm, NULL, PXL_AD_F64);
        CHECK_MSG(nrm[0] == 0 && nrm[1] == 0 && nrm[2] == 1, "normal (%g, %g, %g), want (0, 0, 1)", nrm[0], nrm[1],
                  nrm[2]);
        pxl_ad_program_free(pa);
        pxl_ad_program_free(pnn);
        pxl_ad_program_free(pg);
    }
    /* dihedral angles: edge a = 0, b = x axis, c above it in the plane z = 0
     * (n1 = +z); d = (0.5, -cos t, -sin t) folds away from n1 (convex) by t */
    {
        pxl_ad_program *pd = geom_program(G_DIHEDRAL, &k);
        double ts[] = {0, 1e-9, -1e-9, 0.3, -0.3, 1, -1, 2, -2.5, PI - 1e-3, -(PI - 1e-3), PI - 1e-9};
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
            double t = ts[i], x[12] = {0, 0, 0, 1, 0, 0, 0.5, 1, 0, 0.5, -cos(t), -sin(t)}, r, jac[12];
            eval_at(pd, x, NULL, &r, jac, PXL_AD_F64);
            CHECK_MSG(fabs(r - t) <= 1e-12, "dihedral at fold %.17g: %.17g", t, r);
            for (int j = 0; j < 12; j++) CHECK(isfinite(jac[j]));
            fd_check("dihedral_angle", pd, x, NULL, 0, 1, &st);
        }
        /* at pi exactly (d = c): the value is +-pi, the derivative finite and
         * equal to the differences taken across the wrap */
        double x[12] = {0, 0, 0, 1, 0, 0, 0.5, 1, 0, 0.5, 1, 0}, r, jac[12];
        eval_at(pd, x, NULL, &r, jac, PXL_AD_F64);
        CHECK_MSG(fabs(fabs(r) - PI) < 1e-15, "dihedral folded flat: %.17g", r);
        for (int j = 0; j < 12; j++) CHECK(isfinite(jac[j]));
        fd_check("dihedral_angle at pi", pd, x, NULL, 0, 1, &st);
        /* a regular tetrahedron, faces seen from outside: pi - acos(1/3) at every edge */
        const double T[4][3] = {{1, 1, 1}, {1, -1, -1}, {-1, 1, -1}, {-1, -1, 1}};
        /* (0, 1, 2) must face away from vertex 3 */
        double u[3], v[3], n[3], w[3];
        for (int j = 0; j < 3; j++) u[j] = T[1][j] - T[0][j], v[j] = T[2][j] - T[0][j], w[j] = T[3][j] - T[0][j];
        cross(u, v, n);
        int flip = n[0] * w[0] + n[1] * w[1] + n[2] * w[2] > 0;
        int A = 0, B = flip ? 2 : 1, C = flip ? 1 : 2, D = 3;
        for (int j = 0; j < 3; j++) x[j] = T[A][j], x[3 + j] = T[B][j], x[6 + j] = T[C][j], x[9 + j] = T[D][j];
        eval_at(pd, x, NULL, &r, jac, PXL_AD_F64);
        CHECK_MSG(fabs(r - (PI - acos(1.0 / 3))) < 1e-14, "tetrahedron dihedral %.17g, want %.17g", r,
                  PI - acos(1.0 / 3));
        /* the same triangles in the other roles: the same angle */
        for (int j = 0; j < 3; j++) x[j] = T[B][j], x[3 + j] = T[A][j], x[6 + j] = T[D][j], x[9 + j] = T[C][j];
        eval_at(pd, x, NULL, &r, jac, PXL_AD_F64);
        CHECK_MSG(fabs(r - (PI - acos(1.0 / 3))) < 1e-14, "tetrahedron, triangles swapped: %.17g", r);
        /* both triangles turned over (normals inwards): the angle is negative */
        for (int j = 0; j < 3; j++) x[j] = T[B][j], x[3 + j] = T[A][j], x[6 + j] = T[C][j], x[9 + j] = T[D][j];
        eval_at(pd, x, NULL, &r, jac, PXL_AD_F64);
        CHECK_MSG(fabs(r + (PI - acos(1.0 / 3))) < 1e-14, "tetrahedron, reversed: %.17g", r);
        /* a degenerate triangle: 0, zero derivative */
        double dg[12] = {0, 0, 0, 1, 0, 0, 2, 0, 0, 0.5, -1, 0.3};
        zero_grad("dihedral_angle(degenerate)", pd, 12, dg);
        pxl_ad_program_free(pd);
    }
    CHECK_MSG(st.skipped == 0, "geometry edge cases: %ld of %ld entries ill-conditioned", st.skipped, st.checked);
}

/* Errors propagate: an invalid component gives invalid results and the
 * graph's error names the helper. */
static void test_geometry_errors(void) {
    pxl_ad_graph *g = new_graph();
    pxl_ad_vec3 a = pxl_ad_vec3_param(g, 0), bad = a;
    bad.y = (pxl_ad_value){0, 0};
    pxl_ad_vec3 r = pxl_ad_vec3_normalize(g, bad);
    CHECK(!pxl_ad_valid(g, r.x) && !pxl_ad_valid(g, r.y) && !pxl_ad_valid(g, r.z));
    CHECK(pxl_ad_graph_status(g) == PXL_ERR_INVALID_ARG);
    CHECK_MSG(strstr(pxl_ctx_error(g_ctx), "pxl_ad_vec3_normalize: a.y is not a value") != NULL, "message: %s",
              pxl_ctx_error(g_ctx));
    /* sticky: later helpers give invalid values too */
    CHECK(!pxl_ad_valid(g, pxl_ad_vec3_dot(g, a, a)));
    CHECK(!pxl_ad_valid(g, pxl_ad_triangle_angle(g, a, a, a)));
    CHECK(pxl_ad_vec3_output(g, a) != PXL_OK);
    pxl_ad_program *p = NULL;
    CHECK(pxl_ad_compile(g, &p) != PXL_OK && p == NULL);
    pxl_ad_graph_free(g);

    g = new_graph();
    pxl_ad_vec3 v = pxl_ad_vec3_param(g, INT32_MAX - 1);
    CHECK(!pxl_ad_valid(g, v.x) && pxl_ad_graph_status(g) == PXL_ERR_INVALID_ARG);
    CHECK_MSG(strstr(pxl_ctx_error(g_ctx), "pxl_ad_vec3_param: index") != NULL, "message: %s", pxl_ctx_error(g_ctx));
    pxl_ad_graph_free(g);
    g = new_graph();
    pxl_ad_vec2 w = pxl_ad_vec2_input(g, -1);
    CHECK(!pxl_ad_valid(g, w.x) && pxl_ad_graph_status(g) == PXL_ERR_INVALID_ARG);
    CHECK_MSG(strstr(pxl_ctx_error(g_ctx), "pxl_ad_vec2_input: negative column") != NULL, "message: %s",
              pxl_ctx_error(g_ctx));
    pxl_ad_graph_free(g);
    /* a value of another graph */
    pxl_ad_graph *g1 = new_graph(), *g2 = new_graph();
    pxl_ad_vec3 o = pxl_ad_vec3_param(g2, 0), mine = pxl_ad_vec3_const(g1, 1, 2, 3);
    CHECK(!pxl_ad_valid(g1, pxl_ad_dihedral_angle(g1, mine, mine, mine, o)));
    CHECK_MSG(strstr(pxl_ctx_error(g_ctx), "pxl_ad_dihedral_angle: d.x is a value of another graph") != NULL,
              "message: %s", pxl_ctx_error(g_ctx));
    CHECK(pxl_ad_graph_status(g2) == PXL_OK);
    pxl_ad_graph_free(g1);
    pxl_ad_graph_free(g2);
    /* NULL graph */
    pxl_ad_vec2 n2 = pxl_ad_vec2_const(NULL, 1, 2);
    CHECK(n2.x.graph == 0 && n2.y.graph == 0);
    CHECK(pxl_ad_vec3_length(NULL, a).graph == 0);
    CHECK(pxl_ad_vec3_output(NULL, a) == PXL_ERR_INVALID_ARG);
    /* sharing: the normal's length is built once */
    g = new_graph();
    a = pxl_ad_vec3_param(g, 0);
    pxl_ad_vec3 b = pxl_ad_vec3_param(g, 3), c = pxl_ad_vec3_param(g, 6);
    pxl_ad_triangle_normal(g, a, b, c);
    size_t n1 = pxl_ad_graph_nodes(g);
    pxl_ad_triangle_normal(g, a, b, c);
    pxl_ad_triangle_area(g, a, b, c); /* the cross product and its length are shared */
    CHECK_MSG(pxl_ad_graph_nodes(g) == n1 + 2, "nodes %zu, then %zu", n1, pxl_ad_graph_nodes(g));
    pxl_ad_graph_free(g);
}

/* ---- 4. random graphs ---------------------------------------------------- */

/* f32 against f64: every value and Jacobian entry within
 * |a32 - a64| <= F32_TOL * max(1, |a64|), at points where every
 * finite-difference entry was well-conditioned (a branch taken differently in
 * f32 lies within h of a kink, so such points are skipped). At most one point
 * in F32_RARE may differ: the discontinuous ops (sign, floor, comparisons) at
 * a value that is zero in exact arithmetic and a rounding error in both
 * precisions, as in sign(sin(atan2(relu(y), x))) for y < 0 < -x (sin(pi) is
 * +1.2e-16 in f64, -8.7e-8 in f32), legitimately differ; each is printed. */
#define F32_TOL 2e-3
#define F32_RARE 1000

static void test_random_graphs(long n_graphs) {
    fd_stats st = {0, 0, 0};
    long points = 0, no_point = 0, f32_points = 0, f32_fail = 0;
    double f32_worst = 0;
    size_t nodes = 0;
    for (long i = 0; i < n_graphs; i++) {
        uint64_t rng = 0xad00000000ull + (uint64_t)i;
        ad_random_options o;
        memset(&o, 0, sizeof o);
        o.n_params = 1 + (int)(ad_random_next(&rng) % 6);
        o.n_inputs = (int)(ad_random_next(&rng) % 4) - 1; /* -1: none */
        o.n_ops = 4 + (int)(ad_random_next(&rng) % 37);
        o.max_depth = 3 + (int)(ad_random_next(&rng) % 8);
        o.n_outputs = 1 + (int)(ad_random_next(&rng) % 4);
        int mix = (int)(ad_random_next(&rng) % 10);
        o.ops = mix < 5 ? AD_RND_SCALAR_OPS
                : mix < 7 ? AD_RND_SCALAR_OPS & ~AD_RND_PIECEWISE_OPS
                          : AD_RND_SCALAR_OPS | AD_RND_GEOMETRY_OPS;
        /* raw graphs (no clipping) without floor and ceil: on values of 1e12 a
         * step h spans many unit stairs, and differences see slope 1 where the
         * convention says 0 */
        o.raw = mix == 9;
        if (o.raw) o.ops &= ~(AD_RND_BIT(AD_RND_FLOOR) | AD_RND_BIT(AD_RND_CEIL));
        pxl_ad_graph *g = new_graph();
        pxl_status s = ad_random_graph(g, (uint64_t)i, &o);
        CHECK_MSG(s == PXL_OK, "graph %ld: %s", i, pxl_ctx_error(g_ctx));
        pxl_ad_program *p = compile(g);
        if (!p) continue;
        pxl_ad_program_info info = pxl_ad_program_get_info(p);
        nodes += info.n_nodes;
        char name[64];
        snprintf(name, sizeof name, "random graph %ld", i);
        for (int t = 0; t < 3; t++) {
            double x[MAXK], in[MAXIN];
            if (!ad_random_point(g_ctx, p, &rng, 2, 50, x, in)) {
                no_point++;
                continue;
            }
            points++;
            if (fd_check(name, p, x, in, 0, 0, &st)) continue;
            /* f32 against f64 at the well-conditioned point */
            double r64[MAXM], r32[MAXM], j64[MAXM * MAXK], j32[MAXM * MAXK];
            eval_at(p, x, in, r64, j64, PXL_AD_F64);
            eval_at(p, x, in, r32, j32, PXL_AD_F32);
            f32_points++;
            int bad = 0;
            for (size_t r = 0; r < info.n_outputs; r++) {
                double e = fabs(r32[r] - r64[r]) / fmax(1, fabs(r64[r]));
                f32_worst = fmax(f32_worst, e);
                if (!(e <= F32_TOL)) bad = 1;
                for (size_t j = 0; j < info.n_params; j++) {
                    size_t q = r * info.n_params + j;
                    e = fabs(j32[q] - j64[q]) / fmax(1, fabs(j64[q]));
                    f32_worst = fmax(f32_worst, e);
                    if (!(e <= F32_TOL)) bad = 1;
                }
            }
            if (bad && ++f32_fail <= 20)
                fprintf(stderr, "%s (hash %016llx): f32 and f64 differ by more than %g at x0 = %.9g\n", name,
                        (unsigned long long)pxl_ad_program_hash(p), F32_TOL, x[0]);
        }
        pxl_ad_program_free(p);
    }
    fprintf(stderr,
            "random graphs: %ld graphs (%.1f nodes on average), %ld points (%ld without a finite point), "
            "%ld Jacobian entries, %ld skipped as ill-conditioned, %ld failed; f32: %ld points, %ld beyond %g "
            "(worst %.3g)\n",
            n_graphs, n_graphs ? (double)nodes / (double)n_graphs : 0.0, points, no_point, st.checked, st.skipped,
            st.failed, f32_points, f32_fail, F32_TOL, f32_worst);
    CHECK_MSG(st.skipped <= st.checked / 100, "random graphs: %ld of %ld entries skipped (more than 1%%)", st.skipped,
              st.checked);
    CHECK_MSG(no_point <= points / 20, "random graphs: %ld of %ld draws without a finite point", no_point,
              points + no_point);
    CHECK_MSG(f32_fail <= f32_points / F32_RARE, "random graphs: %ld of %ld points where f32 and f64 differ (more "
              "than 1 in %d)", f32_fail, f32_points, F32_RARE);
}

/* The generator is deterministic, and its options are honoured. */
static void test_generator(void) {
    uint64_t h[2];
    for (int t = 0; t < 2; t++) {
        pxl_ad_graph *g = new_graph();
        ad_random_options o;
        memset(&o, 0, sizeof o);
        o.ops = AD_RND_SCALAR_OPS | AD_RND_GEOMETRY_OPS;
        CHECK(ad_random_graph(g, 42, &o) == PXL_OK);
        pxl_ad_program *p = compile(g);
        h[t] = pxl_ad_program_hash(p);
        pxl_ad_program_info info = pxl_ad_program_get_info(p);
        CHECK(info.n_params == 4 && info.n_inputs == 2 && info.n_outputs == 3);
        pxl_ad_program_free(p);
    }
    CHECK(h[0] == h[1]);
    pxl_ad_graph *g = new_graph();
    ad_random_options o;
    memset(&o, 0, sizeof o);
    o.n_inputs = -1;
    o.n_params = 2;
    o.n_outputs = 5;
    CHECK(ad_random_graph(g, 43, &o) == PXL_OK);
    pxl_ad_program *p = compile(g);
    pxl_ad_program_info info = pxl_ad_program_get_info(p);
    CHECK(info.n_params == 2 && info.n_inputs == 0 && info.n_outputs == 5);
    CHECK(pxl_ad_program_hash(p) != h[0]);
    pxl_ad_program_free(p);
}

int main(int argc, char **argv) {
    long n_graphs = argc > 1 ? strtol(argv[1], NULL, 10) : 3000;
    g_ctx = test_ctx(PXL_BACKEND_CPU, 0);
    if (!g_ctx) {
        fprintf(stderr, "no context\n");
        return 1;
    }
    test_ops();
    test_edges();
    test_geometry_random();
    test_geometry_edges();
    test_geometry_errors();
    test_generator();
    test_random_graphs(n_graphs);
    pxl_ctx_free(g_ctx);
    return test_result("test_ad_grad");
}
