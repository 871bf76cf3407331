/*
 * pxl/ad.h: every op's value against libm and its reverse-mode derivative
 * against central finite differences, the derivative conventions at kinks,
 * multi-output Jacobians against analytic ones, hash-consing, structural
 * hashes, f32, thread-count independence and refusals.
 */
#include "check.h"
#include "test_ctx.h"

#include "pxl/ad.h"

#include <math.h>
#include <string.h>

static pxl_ctx *g_ctx;

/* Evaluates a one-instance program on parameters x[k] (slot j reads x[j]). */
static void eval1(const pxl_ad_program *p, const double *x, const double *in, double *res, double *jac) {
    pxl_ad_program_info info = pxl_ad_program_get_info(p);
    uint32_t idx[8];
    for (size_t j = 0; j < info.n_params; j++) idx[j] = (uint32_t)j;
    pxl_status s = pxl_ad_eval(g_ctx, p, x, info.n_params, idx, in, 1, res, jac, NULL);
    CHECK_MSG(s == PXL_OK, "%s", pxl_ctx_error(g_ctx));
}

static int close_rel(double got, double want, double tol) {
    if (isnan(want)) return isnan(got);
    if (isinf(want)) return got == want;
    return fabs(got - want) <= tol * fmax(1.0, fabs(want));
}

/* Checks the value against ref and every partial derivative against a central
 * difference, at the point x[k]. */
static void check_point(const char *name, const pxl_ad_program *p, const double *x, size_t k, double ref) {
    double r, jac[4], rp, rm;
    eval1(p, x, NULL, &r, jac);
    CHECK_MSG(close_rel(r, ref, 1e-13), "%s(%g, %g): value %.17g, libm %.17g", name, x[0], k > 1 ? x[1] : 0.0, r, ref);
    for (size_t j = 0; j < k; j++) {
        double xp[4], xm[4];
        memcpy(xp, x, k * sizeof *x);
        memcpy(xm, x, k * sizeof *x);
        double h = 1e-6 * fmax(1.0, fabs(x[j]));
        xp[j] += h;
        xm[j] -= h;
        eval1(p, xp, NULL, &rp, NULL);
        eval1(p, xm, NULL, &rm, NULL);
        double fd = (rp - rm) / (2 * h);
        CHECK_MSG(close_rel(jac[j], fd, 1e-6), "%s(%g, %g): d/dx%zu = %.12g, central difference %.12g", name, x[0],
                  k > 1 ? x[1] : 0.0, j, jac[j], fd);
    }
}

typedef pxl_ad_value (*un_fn)(pxl_ad_graph *, pxl_ad_value);
typedef pxl_ad_value (*bin_fn)(pxl_ad_graph *, pxl_ad_value, pxl_ad_value);

static double ref_neg(double a) { return -a; }
static double ref_sigmoid(double a) { return 1 / (1 + exp(-a)); }
static double ref_relu(double a) { return a > 0 ? a : 0; }
static double ref_softplus(double a) { return log1p(exp(a)); }
static double ref_sign(double a) { return a > 0 ? 1 : a < 0 ? -1 : 0; }

static const struct {
    const char *name;
    un_fn f;
    double (*ref)(double);
    double pts[4];
} unary[] = {
    {"neg", pxl_ad_neg, ref_neg, {-1.3, 0.4, 2.2, 5}},
    {"exp", pxl_ad_exp, exp, {-2, -0.3, 0.7, 3}},
    {"log", pxl_ad_log, log, {0.1, 0.9, 2.5, 40}},
    {"sqrt", pxl_ad_sqrt, sqrt, {0.04, 1, 2.5, 90}},
    {"sin", pxl_ad_sin, sin, {-2, 0.3, 1.1, 4}},
    {"cos", pxl_ad_cos, cos, {-2, 0.3, 1.1, 4}},
    {"tan", pxl_ad_tan, tan, {-1.2, -0.3, 0.5, 1.3}},
    {"asin", pxl_ad_asin, asin, {-0.9, -0.2, 0.4, 0.8}},
    {"acos", pxl_ad_acos, acos, {-0.9, -0.2, 0.4, 0.8}},
    {"atan", pxl_ad_atan, atan, {-3, -0.5, 0.2, 4}},
    {"sinh", pxl_ad_sinh, sinh, {-2, -0.5, 0.3, 2}},
    {"cosh", pxl_ad_cosh, cosh, {-2, -0.5, 0.3, 2}},
    {"tanh", pxl_ad_tanh, tanh, {-2, -0.5, 0.3, 2}},
    {"sigmoid", pxl_ad_sigmoid, ref_sigmoid, {-5, -0.5, 0.3, 4}},
    {"relu", pxl_ad_relu, ref_relu, {-2, -0.1, 0.3, 4}},
    {"softplus", pxl_ad_softplus, ref_softplus, {-5, -0.5, 0.3, 4}},
    {"abs", pxl_ad_abs, fabs, {-2, -0.1, 0.3, 4}},
    {"sign", pxl_ad_sign, ref_sign, {-2, -0.1, 0.3, 4}},
    {"floor", pxl_ad_floor, floor, {-1.5, -0.3, 0.4, 2.7}},
    {"ceil", pxl_ad_ceil, ceil, {-1.5, -0.3, 0.4, 2.7}},
};

static double ref_add(double a, double b) { return a + b; }
static double ref_sub(double a, double b) { return a - b; }
static double ref_mul(double a, double b) { return a * b; }
static double ref_div(double a, double b) { return a / b; }
static double ref_lt(double a, double b) { return a < b; }
static double ref_le(double a, double b) { return a <= b; }
static double ref_gt(double a, double b) { return a > b; }
static double ref_ge(double a, double b) { return a >= b; }
static double ref_eq(double a, double b) { return a == b; }
static double ref_ne(double a, double b) { return a != b; }

static const struct {
    const char *name;
    bin_fn f;
    double (*ref)(double, double);
    double pts[4][2];
} binary[] = {
    {"add", pxl_ad_add, ref_add, {{1, 2}, {-3, 0.5}, {0.1, -7}, {4, 4}}},
    {"sub", pxl_ad_sub, ref_sub, {{1, 2}, {-3, 0.5}, {0.1, -7}, {4, 4}}},
    {"mul", pxl_ad_mul, ref_mul, {{1, 2}, {-3, 0.5}, {0.1, -7}, {4, 4}}},
    {"div", pxl_ad_div, ref_div, {{1, 2}, {-3, 0.5}, {0.1, -7}, {4, 4}}},
    {"pow", pxl_ad_pow, pow, {{1.5, 2}, {0.3, -1.7}, {2.5, 0.5}, {7, 3}}},
    {"hypot", pxl_ad_hypot, hypot, {{1, 2}, {-3, 0.5}, {0.1, -7}, {4, 4}}},
    {"atan2", pxl_ad_atan2, atan2, {{1, 2}, {-3, 0.5}, {0.1, -7}, {-2, -1}}},
    {"min", pxl_ad_min, fmin, {{1, 2}, {-3, 0.5}, {0.1, -7}, {4, 4.5}}},
    {"max", pxl_ad_max, fmax, {{1, 2}, {-3, 0.5}, {0.1, -7}, {4, 4.5}}},
    {"lt", pxl_ad_lt, ref_lt, {{1, 2}, {-3, -5}, {0.1, -7}, {4, 4.5}}},
    {"le", pxl_ad_le, ref_le, {{1, 2}, {-3, -5}, {0.1, -7}, {4, 4.5}}},
    {"gt", pxl_ad_gt, ref_gt, {{1, 2}, {-3, -5}, {0.1, -7}, {4, 4.5}}},
    {"ge", pxl_ad_ge, ref_ge, {{1, 2}, {-3, -5}, {0.1, -7}, {4, 4.5}}},
    {"eq", pxl_ad_eq, ref_eq, {{1, 2}, {-3, -5}, {0.1, -7}, {4, 4.5}}},
    {"ne", pxl_ad_ne, ref_ne, {{1, 2}, {-3, -5}, {0.1, -7}, {4, 4.5}}},
};

static pxl_ad_program *compile1(pxl_ad_graph *g, pxl_ad_value out) {
    pxl_ad_program *p = NULL;
    CHECK(pxl_ad_output(g, out) == PXL_OK);
    CHECK_MSG(pxl_ad_compile(g, &p) == PXL_OK, "%s", pxl_ctx_error(g_ctx));
    return p;
}

static void test_ops(void) {
    for (size_t o = 0; o < sizeof unary / sizeof unary[0]; o++) {
        pxl_ad_graph *g = NULL;
        CHECK(pxl_ad_graph_create(g_ctx, &g) == PXL_OK);
        pxl_ad_program *p = compile1(g, unary[o].f(g, pxl_ad_param(g, 0)));
        for (int i = 0; i < 4 && p; i++) check_point(unary[o].name, p, &unary[o].pts[i], 1, unary[o].ref(unary[o].pts[i]));
        pxl_ad_program_free(p);
        pxl_ad_graph_free(g);
    }
    for (size_t o = 0; o < sizeof binary / sizeof binary[0]; o++) {
        pxl_ad_graph *g = NULL;
        CHECK(pxl_ad_graph_create(g_ctx, &g) == PXL_OK);
        pxl_ad_program *p = compile1(g, binary[o].f(g, pxl_ad_param(g, 0), pxl_ad_param(g, 1)));
        for (int i = 0; i < 4 && p; i++)
            check_point(binary[o].name, p, binary[o].pts[i], 2, binary[o].ref(binary[o].pts[i][0], binary[o].pts[i][1]));
        pxl_ad_program_free(p);
        pxl_ad_graph_free(g);
    }
    /* powi, for several exponents; clamp and select, each side of their branches */
    for (int n = -3; n <= 4; n++) {
        pxl_ad_graph *g = NULL;
        CHECK(pxl_ad_graph_create(g_ctx, &g) == PXL_OK);
        pxl_ad_program *p = compile1(g, pxl_ad_powi(g, pxl_ad_param(g, 0), n));
        const double pts[3] = {-1.7, 0.6, 2.3};
        for (int i = 0; i < 3 && p; i++) check_point("powi", p, &pts[i], 1, pow(pts[i], n));
        pxl_ad_program_free(p);
        pxl_ad_graph_free(g);
    }
    {
        pxl_ad_graph *g = NULL;
        CHECK(pxl_ad_graph_create(g_ctx, &g) == PXL_OK);
        pxl_ad_value x = pxl_ad_param(g, 0), lo = pxl_ad_param(g, 1), hi = pxl_ad_param(g, 2);
        pxl_ad_program *p = compile1(g, pxl_ad_clamp(g, x, lo, hi));
        const double pts[3][3] = {{-2, -1, 1}, {0.3, -1, 1}, {1.5, -1, 1}};
        for (int i = 0; i < 3 && p; i++) check_point("clamp", p, pts[i], 3, fmin(fmax(pts[i][0], pts[i][1]), pts[i][2]));
        pxl_ad_program_free(p);
        pxl_ad_graph_free(g);
    }
    {
        pxl_ad_graph *g = NULL;
        CHECK(pxl_ad_graph_create(g_ctx, &g) == PXL_OK);
        pxl_ad_value a = pxl_ad_param(g, 0), b = pxl_ad_param(g, 1);
        /* a < b ? sin(a) * b : exp(b) - a */
        pxl_ad_value s = pxl_ad_select(g, pxl_ad_lt(g, a, b), pxl_ad_mul(g, pxl_ad_sin(g, a), b),
                                       pxl_ad_sub(g, pxl_ad_exp(g, b), a));
        pxl_ad_program *p = compile1(g, s);
        const double pts[3][2] = {{0.5, 2}, {3, -1}, {-1, -0.5}};
        for (int i = 0; i < 3 && p; i++) {
            double x = pts[i][0], y = pts[i][1];
            check_point("select", p, pts[i], 2, x < y ? sin(x) * y : exp(y) - x);
        }
        pxl_ad_program_free(p);
        pxl_ad_graph_free(g);
    }
    /* large arguments: the stable sigmoid and softplus */
    {
        pxl_ad_graph *g = NULL;
        CHECK(pxl_ad_graph_create(g_ctx, &g) == PXL_OK);
        pxl_ad_value a = pxl_ad_param(g, 0);
        CHECK(pxl_ad_output(g, pxl_ad_softplus(g, a)) == PXL_OK);
        CHECK(pxl_ad_output(g, pxl_ad_sigmoid(g, a)) == PXL_OK);
        pxl_ad_program *p = NULL;
        CHECK(pxl_ad_compile(g, &p) == PXL_OK);
        double r[2], j[2], x = 800;
        eval1(p, &x, NULL, r, j);
        CHECK(r[0] == 800 && r[1] == 1 && j[0] == 1 && j[1] == 0);
        x = -800;
        eval1(p, &x, NULL, r, j);
        CHECK(r[0] == 0 && r[1] == 0 && j[0] == 0 && j[1] == 0);
        pxl_ad_program_free(p);
        pxl_ad_graph_free(g);
    }
}

/* One output of one op at one point: the exact value and partials at a kink. */
static void kink(const char *name, pxl_ad_value (*build)(pxl_ad_graph *), const double *x, size_t k, double value,
                 const double *want) {
    pxl_ad_graph *g = NULL;
    CHECK(pxl_ad_graph_create(g_ctx, &g) == PXL_OK);
    pxl_ad_program *p = compile1(g, build(g));
    double r = 0, jac[4] = {0};
    if (p) eval1(p, x, NULL, &r, jac);
    CHECK_MSG(r == value || (isnan(r) && isnan(value)), "%s: value %g, want %g", name, r, value);
    for (size_t j = 0; j < k; j++)
        CHECK_MSG(jac[j] == want[j], "%s: d/dx%zu = %g, want %g", name, j, jac[j], want[j]);
    pxl_ad_program_free(p);
    pxl_ad_graph_free(g);
}

static pxl_ad_value k_abs(pxl_ad_graph *g) { return pxl_ad_abs(g, pxl_ad_param(g, 0)); }
static pxl_ad_value k_relu(pxl_ad_graph *g) { return pxl_ad_relu(g, pxl_ad_param(g, 0)); }
static pxl_ad_value k_sqrt(pxl_ad_graph *g) { return pxl_ad_sqrt(g, pxl_ad_param(g, 0)); }
static pxl_ad_value k_sign(pxl_ad_graph *g) { return pxl_ad_sign(g, pxl_ad_param(g, 0)); }
static pxl_ad_value k_floor(pxl_ad_graph *g) { return pxl_ad_floor(g, pxl_ad_param(g, 0)); }
static pxl_ad_value k_min(pxl_ad_graph *g) { return pxl_ad_min(g, pxl_ad_param(g, 0), pxl_ad_param(g, 1)); }
static pxl_ad_value k_max(pxl_ad_graph *g) { return pxl_ad_max(g, pxl_ad_param(g, 0), pxl_ad_param(g, 1)); }
static pxl_ad_value k_hypot(pxl_ad_graph *g) { return pxl_ad_hypot(g, pxl_ad_param(g, 0), pxl_ad_param(g, 1)); }
static pxl_ad_value k_atan2(pxl_ad_graph *g) { return pxl_ad_atan2(g, pxl_ad_param(g, 0), pxl_ad_param(g, 1)); }
static pxl_ad_value k_pow(pxl_ad_graph *g) { return pxl_ad_pow(g, pxl_ad_param(g, 0), pxl_ad_param(g, 1)); }
static pxl_ad_value k_clamp(pxl_ad_graph *g) {
    return pxl_ad_clamp(g, pxl_ad_param(g, 0), pxl_ad_param(g, 1), pxl_ad_param(g, 2));
}
/* select(x0 < 0, sqrt(x1), x0) at x1 = 0: the untaken sqrt'(0) = inf gives no NaN */
static pxl_ad_value k_select(pxl_ad_graph *g) {
    pxl_ad_value a = pxl_ad_param(g, 0);
    return pxl_ad_select(g, pxl_ad_lt(g, a, pxl_ad_const(g, 0)), pxl_ad_sqrt(g, pxl_ad_param(g, 1)), a);
}
static pxl_ad_value k_eq(pxl_ad_graph *g) { return pxl_ad_eq(g, pxl_ad_param(g, 0), pxl_ad_param(g, 1)); }

static void test_kinks(void) {
    const double z[3] = {0, 0, 0}, inf[1] = {HUGE_VAL};
    kink("abs(0)", k_abs, z, 1, 0, z);
    kink("relu(0)", k_relu, z, 1, 0, z);
    kink("sqrt(0)", k_sqrt, z, 1, 0, inf);
    kink("sign(0)", k_sign, z, 1, 0, z);
    const double two[1] = {2};
    kink("floor(2)", k_floor, two, 1, 2, z);
    const double tie[2] = {1.5, 1.5}, first[2] = {1, 0};
    kink("min(a, a)", k_min, tie, 2, 1.5, first);
    kink("max(a, a)", k_max, tie, 2, 1.5, first);
    kink("hypot(0, 0)", k_hypot, z, 2, 0, z);
    kink("atan2(0, 0)", k_atan2, z, 2, 0, z);
    const double p02[2] = {0, 2};
    kink("pow(0, 2)", k_pow, p02, 2, 0, z);
    const double at_lo[3] = {-1, -1, 1}, at_hi[3] = {1, -1, 1}, dx[3] = {1, 0, 0};
    kink("clamp(lo, lo, hi)", k_clamp, at_lo, 3, -1, dx);
    kink("clamp(hi, lo, hi)", k_clamp, at_hi, 3, 1, dx);
    const double sel[2] = {1, 0};
    kink("select, sqrt(0) not taken", k_select, sel, 2, 1, first);
    kink("eq(a, a)", k_eq, tie, 2, 1, z);
}

/* The camera-like projection: slots f, X, Y, Z; inputs u, v;
 * r0 = f X / Z - u, r1 = f Y / Z - v. */
static pxl_ad_program *camera(double c) {
    pxl_ad_graph *g = NULL;
    CHECK(pxl_ad_graph_create(g_ctx, &g) == PXL_OK);
    pxl_ad_value f = pxl_ad_param(g, 0), X = pxl_ad_param(g, 1), Y = pxl_ad_param(g, 2), Z = pxl_ad_param(g, 3);
    pxl_ad_value fz = pxl_ad_div(g, pxl_ad_mul(g, f, pxl_ad_const(g, c)), Z);
    CHECK(pxl_ad_output(g, pxl_ad_sub(g, pxl_ad_mul(g, fz, X), pxl_ad_input(g, 0))) == PXL_OK);
    CHECK(pxl_ad_output(g, pxl_ad_sub(g, pxl_ad_mul(g, fz, Y), pxl_ad_input(g, 1))) == PXL_OK);
    pxl_ad_program *p = NULL;
    CHECK(pxl_ad_compile(g, &p) == PXL_OK);
    pxl_ad_graph_free(g); /* the program stands alone */
    return p;
}

enum { N_INST = 37 };

static void camera_problem(double *params, uint32_t *idx, double *inputs) {
    params[0] = 800; /* f, shared */
    for (int i = 0; i < N_INST; i++) {
        params[1 + 3 * i] = 0.1 * i - 1.5;
        params[2 + 3 * i] = 0.7 - 0.03 * i;
        params[3 + 3 * i] = 4 + 0.2 * i;
        idx[4 * i] = 0;
        for (int j = 0; j < 3; j++) idx[4 * i + 1 + j] = (uint32_t)(1 + 3 * i + j);
        inputs[2 * i] = 10.0 * i;
        inputs[2 * i + 1] = -3.0 * i;
    }
}

static void test_multi_output(void) {
    pxl_ad_program *p = camera(1.0);
    if (!p) return;
    pxl_ad_program_info info = pxl_ad_program_get_info(p);
    CHECK(info.n_params == 4 && info.n_inputs == 2 && info.n_outputs == 2);
    double params[1 + 3 * N_INST], inputs[2 * N_INST], res[2 * N_INST], jac[2 * 4 * N_INST];
    uint32_t idx[4 * N_INST];
    camera_problem(params, idx, inputs);
    CHECK(pxl_ad_eval(g_ctx, p, params, 1 + 3 * N_INST, idx, inputs, N_INST, res, jac, NULL) == PXL_OK);
    for (int i = 0; i < N_INST; i++) {
        double f = params[0], X = params[1 + 3 * i], Y = params[2 + 3 * i], Z = params[3 + 3 * i];
        double want_r[2] = {f * X / Z - inputs[2 * i], f * Y / Z - inputs[2 * i + 1]};
        double want_j[2][4] = {{X / Z, f / Z, 0, -f * X / (Z * Z)}, {Y / Z, 0, f / Z, -f * Y / (Z * Z)}};
        for (int r = 0; r < 2; r++) {
            CHECK(close_rel(res[i * 2 + r], want_r[r], 1e-13));
            for (int j = 0; j < 4; j++)
                CHECK_MSG(close_rel(jac[(i * 2 + r) * 4 + j], want_j[r][j], 1e-13), "camera %d: J[%d][%d] = %g, want %g",
                          i, r, j, jac[(i * 2 + r) * 4 + j], want_j[r][j]);
        }
    }
    /* f32: close to f64 */
    double res32[2 * N_INST], jac32[2 * 4 * N_INST];
    pxl_ad_eval_options o = {PXL_AD_F32, 0, PXL_AD_CPU};
    CHECK(pxl_ad_eval(g_ctx, p, params, 1 + 3 * N_INST, idx, inputs, N_INST, res32, jac32, &o) == PXL_OK);
    for (int i = 0; i < 2 * N_INST; i++) CHECK(fabs(res32[i] - res[i]) <= 1e-5 * fmax(1, fabs(res[i])) + 1e-3);
    for (int i = 0; i < 8 * N_INST; i++) CHECK(fabs(jac32[i] - jac[i]) <= 1e-5 * fmax(1, fabs(jac[i])));
    /* residuals only */
    double res2[2 * N_INST];
    CHECK(pxl_ad_eval(g_ctx, p, params, 1 + 3 * N_INST, idx, inputs, N_INST, res2, NULL, NULL) == PXL_OK);
    CHECK(memcmp(res2, res, sizeof res) == 0);
    pxl_ad_program_free(p);

    /* 2-D point-to-line distance: slots theta, d; inputs x, y */
    pxl_ad_graph *g = NULL;
    CHECK(pxl_ad_graph_create(g_ctx, &g) == PXL_OK);
    pxl_ad_value th = pxl_ad_param(g, 0), d = pxl_ad_param(g, 1);
    pxl_ad_value e = pxl_ad_sub(g, pxl_ad_add(g, pxl_ad_mul(g, pxl_ad_input(g, 0), pxl_ad_cos(g, th)),
                                               pxl_ad_mul(g, pxl_ad_input(g, 1), pxl_ad_sin(g, th))), d);
    pxl_ad_program *q = compile1(g, e);
    double lp[2] = {0.6, 1.25}, pts[6] = {1, 2, -3, 0.5, 4, -4}, lr[3], lj[6];
    uint32_t li[6] = {0, 1, 0, 1, 0, 1};
    CHECK(q && pxl_ad_eval(g_ctx, q, lp, 2, li, pts, 3, lr, lj, NULL) == PXL_OK);
    for (int i = 0; i < 3 && q; i++) {
        double x = pts[2 * i], y = pts[2 * i + 1];
        CHECK(close_rel(lr[i], x * cos(0.6) + y * sin(0.6) - 1.25, 1e-14));
        CHECK(close_rel(lj[2 * i], -x * sin(0.6) + y * cos(0.6), 1e-14));
        CHECK(lj[2 * i + 1] == -1);
    }
    pxl_ad_program_free(q);
    pxl_ad_graph_free(g);
}

static void test_sharing_and_hash(void) {
    pxl_ad_graph *g = NULL;
    CHECK(pxl_ad_graph_create(g_ctx, &g) == PXL_OK);
    pxl_ad_value a = pxl_ad_param(g, 0), b = pxl_ad_param(g, 1);
    pxl_ad_value e1 = pxl_ad_exp(g, pxl_ad_mul(g, a, b));
    size_t before = pxl_ad_graph_nodes(g);
    pxl_ad_value e2 = pxl_ad_exp(g, pxl_ad_mul(g, b, a)); /* commuted: still shared */
    CHECK(before == 4 && pxl_ad_graph_nodes(g) == 4);
    CHECK(e1.index == e2.index && e1.graph == e2.graph);
    CHECK(pxl_ad_param(g, 0).index == a.index);
    CHECK(pxl_ad_const(g, 2.0).index == pxl_ad_const(g, 2.0).index);
    CHECK(pxl_ad_const(g, 0.0).index != pxl_ad_const(g, -0.0).index);
    CHECK(pxl_ad_sub(g, a, b).index != pxl_ad_sub(g, b, a).index); /* not commutative */
    pxl_ad_value s = pxl_ad_add(g, e1, e2);
    pxl_ad_value dead = pxl_ad_sin(g, pxl_ad_input(g, 3));
    (void)dead;
    pxl_ad_program *p = compile1(g, s);
    pxl_ad_program_info info = pxl_ad_program_get_info(p);
    CHECK(info.n_nodes == 5); /* a, b, a*b, exp, add: the constants, subs and sin are dead */
    CHECK(info.n_inputs == 4 && info.n_params == 2);
    double x[2] = {0.3, 0.7}, r, j[2];
    eval1(p, x, (const double[4]){0, 0, 0, 0}, &r, j);
    CHECK(close_rel(r, 2 * exp(0.21), 1e-15) && close_rel(j[0], 2 * 0.7 * exp(0.21), 1e-15));
    pxl_ad_program_free(p);
    pxl_ad_graph_free(g);

    pxl_ad_program *c1 = camera(1.0), *c2 = camera(1.0), *c3 = camera(2.0);
    CHECK(pxl_ad_program_hash(c1) == pxl_ad_program_hash(c2));
    CHECK(pxl_ad_program_hash(c1) != pxl_ad_program_hash(c3));
    /* the same shape with another op */
    pxl_ad_graph *h = NULL;
    CHECK(pxl_ad_graph_create(g_ctx, &h) == PXL_OK);
    pxl_ad_value f = pxl_ad_param(h, 0), X = pxl_ad_param(h, 1), Y = pxl_ad_param(h, 2), Z = pxl_ad_param(h, 3);
    pxl_ad_value fz = pxl_ad_div(h, pxl_ad_mul(h, f, pxl_ad_const(h, 1.0)), Z);
    CHECK(pxl_ad_output(h, pxl_ad_sub(h, pxl_ad_mul(h, fz, X), pxl_ad_input(h, 0))) == PXL_OK);
    CHECK(pxl_ad_output(h, pxl_ad_add(h, pxl_ad_mul(h, fz, Y), pxl_ad_input(h, 1))) == PXL_OK);
    pxl_ad_program *c4 = NULL;
    CHECK(pxl_ad_compile(h, &c4) == PXL_OK);
    CHECK(pxl_ad_program_hash(c1) != pxl_ad_program_hash(c4));
    /* dead nodes do not change the hash: the camera with an unused sin(X) built in the middle */
    pxl_ad_graph *d = NULL;
    CHECK(pxl_ad_graph_create(g_ctx, &d) == PXL_OK);
    f = pxl_ad_param(d, 0), X = pxl_ad_param(d, 1), Y = pxl_ad_param(d, 2), Z = pxl_ad_param(d, 3);
    (void)pxl_ad_sin(d, X);
    fz = pxl_ad_div(d, pxl_ad_mul(d, f, pxl_ad_const(d, 1.0)), Z);
    CHECK(pxl_ad_output(d, pxl_ad_sub(d, pxl_ad_mul(d, fz, X), pxl_ad_input(d, 0))) == PXL_OK);
    CHECK(pxl_ad_output(d, pxl_ad_sub(d, pxl_ad_mul(d, fz, Y), pxl_ad_input(d, 1))) == PXL_OK);
    pxl_ad_program *c5 = NULL;
    CHECK(pxl_ad_compile(d, &c5) == PXL_OK);
    CHECK(pxl_ad_program_hash(c1) == pxl_ad_program_hash(c5));
    CHECK(pxl_ad_program_get_info(c5).n_nodes == pxl_ad_program_get_info(c1).n_nodes);
    pxl_ad_program_free(c5);
    pxl_ad_graph_free(d);
    pxl_ad_program_free(c1);
    pxl_ad_program_free(c2);
    pxl_ad_program_free(c3);
    pxl_ad_program_free(c4);
    pxl_ad_graph_free(h);
}

static void test_threads(void) {
    pxl_ctx *one = test_ctx(PXL_BACKEND_CPU, 1), *all = test_ctx(PXL_BACKEND_CPU, 0);
    CHECK(one && all);
    if (!one || !all) goto done;
    pxl_ad_graph *g = NULL;
    CHECK(pxl_ad_graph_create(one, &g) == PXL_OK);
    pxl_ad_value a = pxl_ad_param(g, 0), b = pxl_ad_param(g, 1), x = pxl_ad_input(g, 0);
    pxl_ad_value t = pxl_ad_tanh(g, pxl_ad_add(g, pxl_ad_mul(g, a, x), b));
    CHECK(pxl_ad_output(g, pxl_ad_sub(g, t, pxl_ad_input(g, 1))) == PXL_OK);
    CHECK(pxl_ad_output(g, pxl_ad_mul(g, pxl_ad_softplus(g, pxl_ad_mul(g, a, b)), pxl_ad_hypot(g, x, b))) == PXL_OK);
    pxl_ad_program *p = NULL;
    CHECK(pxl_ad_compile(g, &p) == PXL_OK);
    enum { N = 5003, NP = 64 };
    double *params = malloc(NP * sizeof *params), *in = malloc(2 * N * sizeof *in);
    uint32_t *idx = malloc(2 * N * sizeof *idx);
    double *r1 = malloc(2 * N * sizeof *r1), *r2 = malloc(2 * N * sizeof *r2);
    double *j1 = malloc(4 * N * sizeof *j1), *j2 = malloc(4 * N * sizeof *j2);
    uint64_t st = 42;
    for (int i = 0; i < NP; i++) params[i] = (double)(test_rng(&st) >> 11) * 0x1p-53 * 4 - 2;
    for (int i = 0; i < N; i++) {
        idx[2 * i] = (uint32_t)(test_rng(&st) % NP);
        idx[2 * i + 1] = (uint32_t)(test_rng(&st) % NP);
        in[2 * i] = (double)(test_rng(&st) >> 11) * 0x1p-53 * 6 - 3;
        in[2 * i + 1] = (double)(test_rng(&st) >> 11) * 0x1p-53;
    }
    for (int prec = 0; prec < 2; prec++) {
        pxl_ad_eval_options o = {prec ? PXL_AD_F32 : PXL_AD_F64, 0, PXL_AD_CPU};
        CHECK(pxl_ad_eval(one, p, params, NP, idx, in, N, r1, j1, &o) == PXL_OK);
        CHECK(pxl_ad_eval(all, p, params, NP, idx, in, N, r2, j2, &o) == PXL_OK);
        CHECK(memcmp(r1, r2, 2 * N * sizeof *r1) == 0 && memcmp(j1, j2, 4 * N * sizeof *j1) == 0);
        o.serial = 1;
        CHECK(pxl_ad_eval(all, p, params, NP, idx, in, N, r2, j2, &o) == PXL_OK);
        CHECK(memcmp(r1, r2, 2 * N * sizeof *r1) == 0 && memcmp(j1, j2, 4 * N * sizeof *j1) == 0);
    }
    free(params), free(in), free(idx), free(r1), free(r2), free(j1), free(j2);
    pxl_ad_program_free(p);
    pxl_ad_graph_free(g);
done:
    pxl_ctx_free(one);
    pxl_ctx_free(all);
}

static void test_refusals(void) {
    pxl_ad_graph *g = NULL, *h = NULL;
    CHECK(pxl_ad_graph_create(g_ctx, &g) == PXL_OK);
    CHECK(pxl_ad_graph_create(g_ctx, &h) == PXL_OK);
    CHECK(pxl_ad_graph_create(g_ctx, NULL) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_ad_graph_create(NULL, &g) == PXL_ERR_INVALID_ARG);
    pxl_ad_graph_free(NULL);
    pxl_ad_program_free(NULL);
    CHECK(pxl_ad_param(NULL, 0).graph == 0);

    /* no outputs */
    pxl_ad_value a = pxl_ad_param(g, 0);
    pxl_ad_program *p = NULL;
    CHECK(pxl_ad_compile(g, &p) == PXL_ERR_INVALID_ARG && !p);
    CHECK(strstr(pxl_ctx_error(g_ctx), "no outputs") != NULL);

    /* a value of another graph: refused, sticky */
    pxl_ad_value ha = pxl_ad_param(h, 0);
    CHECK(pxl_ad_valid(h, ha) && !pxl_ad_valid(g, ha));
    pxl_ad_value bad = pxl_ad_add(g, a, ha);
    CHECK(bad.graph == 0 && !pxl_ad_valid(g, bad));
    CHECK(strstr(pxl_ctx_error(g_ctx), "pxl_ad_add: b is a value of another graph") != NULL);
    CHECK(pxl_ad_graph_status(g) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_ad_exp(g, a).graph == 0); /* sticky */
    CHECK(pxl_ad_output(g, a) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_ad_compile(g, &p) == PXL_ERR_INVALID_ARG && !p);
    CHECK(strstr(pxl_ctx_error(g_ctx), "builder error") != NULL);
    pxl_ad_graph_free(g);

    /* a zero handle, an index past the end, a negative slot */
    CHECK(pxl_ad_graph_create(g_ctx, &g) == PXL_OK);
    pxl_ad_value zero;
    memset(&zero, 0, sizeof zero);
    CHECK(pxl_ad_sin(g, zero).graph == 0);
    CHECK(strstr(pxl_ctx_error(g_ctx), "pxl_ad_sin: a is not a value") != NULL);
    pxl_ad_graph_free(g);
    CHECK(pxl_ad_graph_create(g_ctx, &g) == PXL_OK);
    a = pxl_ad_param(g, 0);
    pxl_ad_value past = a;
    past.index = 99;
    CHECK(pxl_ad_select(g, a, a, past).graph == 0);
    CHECK(strstr(pxl_ctx_error(g_ctx), "pxl_ad_select: b is not a value of this graph") != NULL);
    pxl_ad_graph_free(g);
    CHECK(pxl_ad_graph_create(g_ctx, &g) == PXL_OK);
    CHECK(pxl_ad_param(g, -1).graph == 0 && strstr(pxl_ctx_error(g_ctx), "negative slot") != NULL);
    pxl_ad_graph_free(g);

    /* eval: 0 instances is a no-op (NULL arrays allowed); a parameter index out of range */
    CHECK(pxl_ad_graph_create(g_ctx, &g) == PXL_OK);
    p = compile1(g, pxl_ad_mul(g, pxl_ad_param(g, 0), pxl_ad_param(g, 1)));
    CHECK(pxl_ad_eval(g_ctx, p, NULL, 0, NULL, NULL, 0, NULL, NULL, NULL) == PXL_OK);
    double params[2] = {1, 2}, r, j[2];
    uint32_t idx[2] = {0, 2};
    CHECK(pxl_ad_eval(g_ctx, p, params, 2, idx, NULL, 1, &r, j, NULL) == PXL_ERR_INVALID_ARG);
    CHECK(strstr(pxl_ctx_error(g_ctx), "parameter index 2 is out of range") != NULL);
    idx[1] = 1;
    CHECK(pxl_ad_eval(g_ctx, p, params, 2, idx, NULL, 1, NULL, j, NULL) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_ad_eval(g_ctx, p, NULL, 2, idx, NULL, 1, &r, j, NULL) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_ad_eval(g_ctx, NULL, params, 2, idx, NULL, 1, &r, j, NULL) == PXL_ERR_INVALID_ARG);
    pxl_ad_eval_options o = {(pxl_ad_precision)7, 0, PXL_AD_CPU};
    CHECK(pxl_ad_eval(g_ctx, p, params, 2, idx, NULL, 1, &r, j, &o) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_ad_eval(g_ctx, p, params, 2, idx, NULL, 1, &r, j, NULL) == PXL_OK && r == 2 && j[0] == 2 && j[1] == 1);
    /* one parameter in two slots: two columns */
    idx[1] = 0;
    CHECK(pxl_ad_eval(g_ctx, p, params, 2, idx, NULL, 1, &r, j, NULL) == PXL_OK && r == 1 && j[0] == 1 && j[1] == 1);
    pxl_ad_program_free(p);
    pxl_ad_graph_free(g);
    pxl_ad_graph_free(h);
}

int main(void) {
    g_ctx = test_ctx(PXL_BACKEND_CPU, 0);
    if (!g_ctx) {
        fprintf(stderr, "test_ad: no context\n");
        return 1;
    }
    test_ops();
    test_kinks();
    test_multi_output();
    test_sharing_and_hash();
    test_threads();
    test_refusals();
    pxl_ctx_free(g_ctx);
    return test_result("test_ad");
}
