/*
 * pxl_ad_solve (src/ad/solve.c): an exponential fit to exact data, Rosenbrock,
 * a circle fit over many instances sharing parameters
 * (against the algebraic Kasa fit and a zero gradient), determinism and
 * refusals.
 */
#include "check.h"
#include "test_ctx.h"

#include "pxl/ad.h"

#include <math.h>
#include <string.h>

static pxl_ctx *g_ctx;

/* r = b1 * (1 - exp(-b2 * x)) - y; slots b1, b2; columns x, y. */
static pxl_ad_program *exp_program(void) {
    pxl_ad_graph *g = NULL;
    CHECK(pxl_ad_graph_create(g_ctx, &g) == PXL_OK);
    pxl_ad_value b1 = pxl_ad_param(g, 0), b2 = pxl_ad_param(g, 1), x = pxl_ad_input(g, 0), y = pxl_ad_input(g, 1);
    pxl_ad_value e = pxl_ad_exp(g, pxl_ad_neg(g, pxl_ad_mul(g, b2, x)));
    pxl_ad_value f = pxl_ad_mul(g, b1, pxl_ad_sub(g, pxl_ad_const(g, 1), e));
    CHECK(pxl_ad_output(g, pxl_ad_sub(g, f, y)) == PXL_OK);
    pxl_ad_program *p = NULL;
    CHECK(pxl_ad_compile(g, &p) == PXL_OK);
    pxl_ad_graph_free(g);
    return p;
}

static void print_summary(const char *name, const pxl_ad_solve_summary *s) {
    printf("%s: %s (%s), cost %.6g -> %.6g, %d iterations, %d steps\n", name,
           pxl_ad_termination_name(s->termination), s->message, s->initial_cost, s->final_cost, s->iterations,
           s->successful_steps);
}

static void test_exp_exact(void) {
    pxl_ad_program *p = exp_program();
    enum { N = 12 };
    double data[2 * N];
    uint32_t idx[2 * N];
    for (int i = 0; i < N; i++) {
        double x = 0.25 * i;
        data[2 * i] = x;
        data[2 * i + 1] = 2.5 * (1 - exp(-0.75 * x));
        idx[2 * i] = 0;
        idx[2 * i + 1] = 1;
    }
    double b[2] = {1, 1};
    pxl_ad_solve_summary s;
    pxl_status st = pxl_ad_solve(g_ctx, p, idx, data, N, b, 2, NULL, &s);
    CHECK_MSG(st == PXL_OK, "%s", pxl_ctx_error(g_ctx));
    print_summary("exp exact", &s);
    CHECK_MSG(fabs(b[0] - 2.5) <= 1e-8 && fabs(b[1] - 0.75) <= 1e-8, "b = (%.17g, %.17g)", b[0], b[1]);
    CHECK(s.termination != PXL_AD_NO_CONVERGENCE && s.termination != PXL_AD_FAILURE);
    CHECK(s.final_cost < 1e-20 && s.initial_cost > s.final_cost);
    CHECK(s.successful_steps >= 1 && s.successful_steps <= s.iterations);
    CHECK(s.eval_seconds >= 0 && s.linear_solver_seconds >= 0 && s.other_seconds >= 0);

    /* the same run on one thread gives the same bits */
    double b2[2] = {1, 1};
    pxl_ad_solve_options o;
    memset(&o, 0, sizeof o);
    o.eval.serial = 1;
    pxl_ad_solve_summary s2;
    CHECK(pxl_ad_solve(g_ctx, p, idx, data, N, b2, 2, &o, &s2) == PXL_OK);
    CHECK(memcmp(b, b2, sizeof b) == 0 && s.iterations == s2.iterations && s.final_cost == s2.final_cost);

    /* max_iterations 1: NO_CONVERGENCE, not an error */
    double b3[2] = {1, 1};
    o.max_iterations = 1;
    CHECK(pxl_ad_solve(g_ctx, p, idx, data, N, b3, 2, &o, &s2) == PXL_OK);
    CHECK(s2.termination == PXL_AD_NO_CONVERGENCE && s2.iterations == 1);
    pxl_ad_program_free(p);
}

static void test_rosenbrock(void) {
    pxl_ad_graph *g = NULL;
    CHECK(pxl_ad_graph_create(g_ctx, &g) == PXL_OK);
    pxl_ad_value x1 = pxl_ad_param(g, 0), x2 = pxl_ad_param(g, 1);
    CHECK(pxl_ad_output(g, pxl_ad_mul(g, pxl_ad_const(g, 10), pxl_ad_sub(g, x2, pxl_ad_mul(g, x1, x1)))) == PXL_OK);
    CHECK(pxl_ad_output(g, pxl_ad_sub(g, pxl_ad_const(g, 1), x1)) == PXL_OK);
    pxl_ad_program *p = NULL;
    CHECK(pxl_ad_compile(g, &p) == PXL_OK);
    pxl_ad_graph_free(g);
    uint32_t idx[2] = {0, 1};
    double x[2] = {-1.2, 1};
    pxl_ad_solve_summary s;
    CHECK_MSG(pxl_ad_solve(g_ctx, p, idx, NULL, 1, x, 2, NULL, &s) == PXL_OK, "%s", pxl_ctx_error(g_ctx));
    print_summary("Rosenbrock", &s);
    CHECK_MSG(fabs(x[0] - 1) <= 1e-8 && fabs(x[1] - 1) <= 1e-8, "x = (%.17g, %.17g)", x[0], x[1]);
    CHECK(fabs(s.initial_cost - 12.1) < 1e-12); /* (4.4^2 + 2.2^2) / 2 */
    pxl_ad_program_free(p);
}

/* Solves the 3x3 system M z = v by Gaussian elimination with partial pivoting. */
static void solve3(double M[3][3], double v[3], double z[3]) {
    for (int c = 0; c < 3; c++) {
        int piv = c;
        for (int r = c + 1; r < 3; r++)
            if (fabs(M[r][c]) > fabs(M[piv][c])) piv = r;
        for (int j = 0; j < 3; j++) {
            double t = M[c][j]; M[c][j] = M[piv][j]; M[piv][j] = t;
        }
        double t = v[c]; v[c] = v[piv]; v[piv] = t;
        for (int r = c + 1; r < 3; r++) {
            double f = M[r][c] / M[c][c];
            for (int j = c; j < 3; j++) M[r][j] -= f * M[c][j];
            v[r] -= f * v[c];
        }
    }
    for (int r = 2; r >= 0; r--) {
        double s = v[r];
        for (int j = r + 1; j < 3; j++) s -= M[r][j] * z[j];
        z[r] = s / M[r][r];
    }
}

static double circle_cost(const double *pts, int n, const double c[3]) {
    double s = 0;
    for (int i = 0; i < n; i++) {
        double r = hypot(pts[2 * i] - c[0], pts[2 * i + 1] - c[1]) - c[2];
        s += r * r;
    }
    return 0.5 * s;
}

static void test_circle(void) {
    enum { N = 50 };
    double pts[2 * N];
    uint32_t idx[3 * N];
    uint64_t seed = 12345;
    const double cx = 2, cy = -1, rad = 3;
    for (int i = 0; i < N; i++) {
        double t = 2 * 3.14159265358979323846 * (double)(test_rng(&seed) >> 11) / 9007199254740992.0;
        double nr = 0.05 * ((double)(test_rng(&seed) >> 11) / 9007199254740992.0 - 0.5);
        pts[2 * i] = cx + (rad + nr) * cos(t);
        pts[2 * i + 1] = cy + (rad + nr) * sin(t);
        idx[3 * i] = 0;
        idx[3 * i + 1] = 1;
        idx[3 * i + 2] = 2;
    }
    /* Kasa: x^2 + y^2 = a x + b y + c in least squares */
    double M[3][3] = {{0}}, v[3] = {0}, z[3];
    for (int i = 0; i < N; i++) {
        double row[3] = {pts[2 * i], pts[2 * i + 1], 1};
        double rhs = pts[2 * i] * pts[2 * i] + pts[2 * i + 1] * pts[2 * i + 1];
        for (int a = 0; a < 3; a++) {
            v[a] += row[a] * rhs;
            for (int b = 0; b < 3; b++) M[a][b] += row[a] * row[b];
        }
    }
    solve3(M, v, z);
    double kasa[3] = {z[0] / 2, z[1] / 2, 0};
    kasa[2] = sqrt(z[2] + kasa[0] * kasa[0] + kasa[1] * kasa[1]);

    pxl_ad_graph *g = NULL;
    CHECK(pxl_ad_graph_create(g_ctx, &g) == PXL_OK);
    pxl_ad_value dx = pxl_ad_sub(g, pxl_ad_input(g, 0), pxl_ad_param(g, 0));
    pxl_ad_value dy = pxl_ad_sub(g, pxl_ad_input(g, 1), pxl_ad_param(g, 1));
    CHECK(pxl_ad_output(g, pxl_ad_sub(g, pxl_ad_hypot(g, dx, dy), pxl_ad_param(g, 2))) == PXL_OK);
    pxl_ad_program *p = NULL;
    CHECK(pxl_ad_compile(g, &p) == PXL_OK);
    pxl_ad_graph_free(g);

    double c[3] = {0, 0, 1};
    pxl_ad_solve_summary s;
    pxl_ad_solve_options o;
    memset(&o, 0, sizeof o);
    o.function_tolerance = 1e-15; /* run to the gradient tolerance */
    o.parameter_tolerance = 1e-15;
    CHECK_MSG(pxl_ad_solve(g_ctx, p, idx, pts, N, c, 3, &o, &s) == PXL_OK, "%s", pxl_ctx_error(g_ctx));
    print_summary("circle", &s);
    printf("circle: LM (%.9f, %.9f, %.9f), Kasa (%.9f, %.9f, %.9f)\n", c[0], c[1], c[2], kasa[0], kasa[1], kasa[2]);
    CHECK(s.termination != PXL_AD_NO_CONVERGENCE && s.termination != PXL_AD_FAILURE);
    /* close to the algebraic fit and to the truth, never worse than the algebraic fit */
    for (int j = 0; j < 3; j++) CHECK_MSG(fabs(c[j] - kasa[j]) < 0.01, "param %d: %.9f vs Kasa %.9f", j, c[j], kasa[j]);
    CHECK(fabs(c[0] - cx) < 0.02 && fabs(c[1] - cy) < 0.02 && fabs(c[2] - rad) < 0.02);
    CHECK(fabs(circle_cost(pts, N, c) - s.final_cost) <= 1e-12 * fmax(1.0, s.final_cost));
    CHECK(s.final_cost <= circle_cost(pts, N, kasa));
    /* the gradient, computed by hand, is ~0 */
    double grad[3] = {0, 0, 0};
    for (int i = 0; i < N; i++) {
        double ex = pts[2 * i] - c[0], ey = pts[2 * i + 1] - c[1], d = hypot(ex, ey), r = d - c[2];
        grad[0] += r * (-ex / d);
        grad[1] += r * (-ey / d);
        grad[2] += -r;
    }
    for (int j = 0; j < 3; j++) CHECK_MSG(fabs(grad[j]) < 1e-9, "gradient %d: %g", j, grad[j]);
    pxl_ad_program_free(p);
}

static void test_refusals(void) {
    pxl_ad_program *p = exp_program();
    double data[4] = {1, 1, 2, 2};
    uint32_t idx[4] = {0, 1, 0, 1};
    double b[2] = {1, 1};
    pxl_ad_solve_summary s;
    /* too many parameters for the dense solver */
    enum { BIG = PXL_AD_SOLVE_MAX_PARAMS + 1 };
    static double big[BIG];
    CHECK(pxl_ad_solve(g_ctx, p, idx, data, 2, big, BIG, NULL, &s) == PXL_ERR_INVALID_ARG);
    CHECK(strstr(pxl_ctx_error(g_ctx), "at most") != NULL && s.termination == PXL_AD_FAILURE);
    CHECK(strstr(s.message, "at most") != NULL);
    /* NaN start */
    b[1] = nan("");
    CHECK(pxl_ad_solve(g_ctx, p, idx, data, 2, b, 2, NULL, &s) == PXL_ERR_INVALID_ARG);
    CHECK(strstr(pxl_ctx_error(g_ctx), "parameter 1 is not finite") != NULL);
    CHECK(isnan(b[1]) && b[0] == 1);
    b[1] = 1;
    /* index out of range */
    idx[3] = 2;
    CHECK(pxl_ad_solve(g_ctx, p, idx, data, 2, b, 2, NULL, &s) == PXL_ERR_INVALID_ARG);
    CHECK(strstr(pxl_ctx_error(g_ctx), "out of range") != NULL);
    CHECK(b[0] == 1 && b[1] == 1);
    idx[3] = 1;
    /* non-finite residuals at the start */
    data[1] = HUGE_VAL;
    CHECK(pxl_ad_solve(g_ctx, p, idx, data, 2, b, 2, NULL, &s) == PXL_ERR_INVALID_ARG);
    CHECK(strstr(pxl_ctx_error(g_ctx), "not finite") != NULL);
    data[1] = 1;
    /* NULLs, zero sizes, bad options */
    CHECK(pxl_ad_solve(NULL, p, idx, data, 2, b, 2, NULL, NULL) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_ad_solve(g_ctx, NULL, idx, data, 2, b, 2, NULL, NULL) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_ad_solve(g_ctx, p, NULL, data, 2, b, 2, NULL, NULL) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_ad_solve(g_ctx, p, idx, data, 2, NULL, 2, NULL, NULL) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_ad_solve(g_ctx, p, idx, data, 0, b, 2, NULL, NULL) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_ad_solve(g_ctx, p, idx, data, 2, b, 0, NULL, NULL) == PXL_ERR_INVALID_ARG);
    pxl_ad_solve_options o;
    memset(&o, 0, sizeof o);
    o.gradient_tolerance = -1;
    CHECK(pxl_ad_solve(g_ctx, p, idx, data, 2, b, 2, &o, NULL) == PXL_ERR_INVALID_ARG);
    CHECK(b[0] == 1 && b[1] == 1);
    CHECK(strcmp(pxl_ad_termination_name(PXL_AD_CONVERGED_GRADIENT), "CONVERGED_GRADIENT") == 0);
    pxl_ad_program_free(p);
}

int main(void) {
    g_ctx = test_ctx(PXL_BACKEND_CPU, 0);
    if (!g_ctx) {
        fprintf(stderr, "test_ad_solve: no context\n");
        return 1;
    }
    test_exp_exact();
    test_rosenbrock();
    test_circle();
    test_refusals();
    pxl_ctx_free(g_ctx);
    return test_result("test_ad_solve");
}
