/*
 * The problem API of pxl/ad.h (src/ad/problem.c, loss.c, lm.c): grouping of
 * template and traced residuals, evaluation, robust losses, bounds, constant
 * parameters, Gauss-Newton, the linear solvers, covariance, bad steps, the
 * time limit, the More-Garbow-Hillstrom test set and a synthetic bundle
 * adjustment.
 */
#include "check.h"
#include "test_ctx.h"

#include "ad/ad_internal.h"
#include "pxl/ad.h"

#include <math.h>
#include <string.h>

static pxl_ctx *g_ctx;

static pxl_ad_graph *new_graph(void) {
    pxl_ad_graph *g = NULL;
    CHECK(pxl_ad_graph_create(g_ctx, &g) == PXL_OK);
    return g;
}

static pxl_ad_program *compile_free(pxl_ad_graph *g) {
    pxl_ad_program *p = NULL;
    CHECK_MSG(pxl_ad_compile(g, &p) == PXL_OK, "%s", pxl_ctx_error(g_ctx));
    pxl_ad_graph_free(g);
    return p;
}

static pxl_ad_problem *new_problem(size_t n) {
    pxl_ad_problem *pb = NULL;
    CHECK(pxl_ad_problem_create(g_ctx, n, &pb) == PXL_OK);
    return pb;
}

static pxl_ad_solve_options tight(void) {
    pxl_ad_solve_options o;
    memset(&o, 0, sizeof o);
    o.max_iterations = 1000;
    o.function_tolerance = 1e-15;
    o.parameter_tolerance = 1e-15;
    o.gradient_tolerance = 1e-15;
    return o;
}

static void print_summary(const char *name, const pxl_ad_solve_summary *s) {
    printf("%-28s %-19s cost %.6g -> %.9g, %d it, %d steps, %s (%s)\n", name, pxl_ad_termination_name(s->termination),
           s->initial_cost, s->final_cost, s->iterations, s->successful_steps,
           pxl_ad_linear_solver_name(s->linear_solver), s->message);
}

/* ---- grouping, template against traced ------------------------------------ */

/* r = p[slot 0] * x - y with columns x, y, built in the order a traced
 * residual builds it. */
static pxl_ad_program *line_template(void) {
    pxl_ad_graph *g = new_graph();
    pxl_ad_value p = pxl_ad_param(g, 0), x = pxl_ad_input(g, 0), px = pxl_ad_mul(g, p, x), y = pxl_ad_input(g, 1);
    CHECK(pxl_ad_output(g, pxl_ad_sub(g, px, y)) == PXL_OK);
    return compile_free(g);
}

static void test_grouping(void) {
    enum { N = 1000, NP = 7 };
    pxl_ad_problem *traced = new_problem(NP), *tmpl = new_problem(NP);
    static double data[2 * N];
    static uint32_t idx[N];
    for (int i = 0; i < N; i++) {
        const double x = 0.5 + 0.01 * i, y = 3 * x + 1.25 + 0.001 * (i % 13);
        data[2 * i] = x;
        data[2 * i + 1] = y;
        idx[i] = (uint32_t)(i % NP);
        pxl_ad_graph *g = new_graph();
        pxl_ad_value pv = pxl_ad_param(g, i % NP), xv = pxl_ad_const(g, x), px = pxl_ad_mul(g, pv, xv),
                     yv = pxl_ad_const(g, y);
        CHECK(pxl_ad_output(g, pxl_ad_sub(g, px, yv)) == PXL_OK);
        CHECK_MSG(pxl_ad_problem_add_traced(traced, g, NULL) == PXL_OK, "%s", pxl_ctx_error(g_ctx));
        pxl_ad_graph_free(g);
    }
    pxl_ad_program *p = line_template();
    CHECK(pxl_ad_problem_add(tmpl, p, idx, data, N, NULL) == PXL_OK);
    pxl_ad_problem_info ti = pxl_ad_problem_get_info(traced), mi = pxl_ad_problem_get_info(tmpl);
    CHECK_MSG(ti.n_groups == 1 && ti.n_instances == N && ti.n_residuals == N && ti.n_params == NP,
              "traced: %zu groups, %zu instances", ti.n_groups, ti.n_instances);
    CHECK(mi.n_groups == 1 && mi.n_instances == N);
    pxl_ad_group_info gt, gm;
    CHECK(pxl_ad_problem_group_info(traced, 0, &gt) == PXL_OK && pxl_ad_problem_group_info(tmpl, 0, &gm) == PXL_OK);
    CHECK(gt.n_instances == N && gt.n_slots == 1 && gt.n_inputs == 2 && gt.n_outputs == 1);
    CHECK_MSG(gt.hash == gm.hash && gt.hash == pxl_ad_program_hash(p), "traced and template programs differ");
    CHECK(pxl_ad_problem_group_info(traced, 1, &gt) == PXL_ERR_INVALID_ARG);

    /* the same cost, residuals and gradient, bit for bit */
    double x[NP], c1, c2, r1[N], r2[N], g1[NP], g2[NP];
    for (int j = 0; j < NP; j++) x[j] = 1 + 0.3 * j;
    CHECK(pxl_ad_problem_evaluate(traced, x, &c1, r1, g1, NULL) == PXL_OK);
    CHECK(pxl_ad_problem_evaluate(tmpl, x, &c2, r2, g2, NULL) == PXL_OK);
    CHECK(c1 == c2 && memcmp(r1, r2, sizeof r1) == 0 && memcmp(g1, g2, sizeof g1) == 0);
    /* and the same solution */
    double x1[NP], x2[NP];
    for (int j = 0; j < NP; j++) x1[j] = x2[j] = 1;
    pxl_ad_solve_summary s1, s2;
    CHECK(pxl_ad_problem_solve(traced, x1, NULL, &s1) == PXL_OK);
    CHECK(pxl_ad_problem_solve(tmpl, x2, NULL, &s2) == PXL_OK);
    CHECK(memcmp(x1, x2, sizeof x1) == 0 && s1.final_cost == s2.final_cost);
    CHECK(fabs(x1[0] - 3.1) < 0.1);

    /* another op shape: a second group; the same shape with a loss: a third */
    pxl_ad_graph *g = new_graph();
    CHECK(pxl_ad_output(g, pxl_ad_sub(g, pxl_ad_mul(g, pxl_ad_param(g, 2), pxl_ad_param(g, 2)), pxl_ad_const(g, 4))) ==
          PXL_OK);
    CHECK(pxl_ad_problem_add_traced(traced, g, NULL) == PXL_OK);
    pxl_ad_graph_free(g);
    g = new_graph();
    {
        pxl_ad_value pv = pxl_ad_param(g, 5), xv = pxl_ad_const(g, 2), px = pxl_ad_mul(g, pv, xv), yv = pxl_ad_const(g, 7);
        CHECK(pxl_ad_output(g, pxl_ad_sub(g, px, yv)) == PXL_OK);
    }
    pxl_ad_block_options bo;
    memset(&bo, 0, sizeof bo);
    bo.loss.kind = PXL_AD_LOSS_HUBER;
    CHECK(pxl_ad_problem_add_traced(traced, g, &bo) == PXL_OK);
    CHECK(pxl_ad_problem_add_traced(traced, g, NULL) == PXL_OK); /* back into group 0 */
    pxl_ad_graph_free(g);
    ti = pxl_ad_problem_get_info(traced);
    CHECK_MSG(ti.n_groups == 3 && ti.n_instances == N + 3, "%zu groups", ti.n_groups);
    CHECK(pxl_ad_problem_group_info(traced, 0, &gt) == PXL_OK && gt.n_instances == N + 1);
    CHECK(pxl_ad_problem_group_info(traced, 1, &gt) == PXL_OK && gt.n_instances == 1 && gt.n_slots == 1 &&
          gt.n_inputs == 1);
    CHECK(pxl_ad_problem_group_info(traced, 2, &gt) == PXL_OK && gt.loss.kind == PXL_AD_LOSS_HUBER &&
          gt.loss.scale == 1);

    /* a parameter read twice is one slot; two parameters are two slots in order of first use */
    g = new_graph();
    pxl_ad_value a = pxl_ad_param(g, 4), b = pxl_ad_param(g, 1);
    CHECK(pxl_ad_output(g, pxl_ad_add(g, pxl_ad_mul(g, a, b), pxl_ad_mul(g, a, pxl_ad_const(g, 3)))) == PXL_OK);
    pxl_ad_problem *two = new_problem(NP);
    CHECK(pxl_ad_problem_add_traced(two, g, NULL) == PXL_OK);
    CHECK(pxl_ad_problem_group_info(two, 0, &gt) == PXL_OK && gt.n_slots == 2 && gt.n_inputs == 1);
    CHECK(two->groups[0].pidx[0] == 4 && two->groups[0].pidx[1] == 1 && two->groups[0].inputs[0] == 3);
    double grad[NP], cost;
    CHECK(pxl_ad_problem_evaluate(two, x, &cost, NULL, grad, NULL) == PXL_OK);
    const double rr = x[4] * x[1] + 3 * x[4];
    CHECK(fabs(cost - 0.5 * rr * rr) <= 1e-12 * cost && fabs(grad[4] - rr * (x[1] + 3)) <= 1e-12 * fabs(grad[4]) &&
          fabs(grad[1] - rr * x[4]) <= 1e-12 * fabs(grad[1]) && grad[0] == 0);
    pxl_ad_graph_free(g);

    /* refusals: nothing is added */
    g = new_graph();
    CHECK(pxl_ad_output(g, pxl_ad_mul(g, pxl_ad_param(g, 0), pxl_ad_input(g, 0))) == PXL_OK);
    CHECK(pxl_ad_problem_add_traced(two, g, NULL) == PXL_ERR_INVALID_ARG);
    CHECK(strstr(pxl_ctx_error(g_ctx), "input columns") != NULL);
    pxl_ad_graph_free(g);
    g = new_graph();
    CHECK(pxl_ad_output(g, pxl_ad_param(g, NP)) == PXL_OK);
    CHECK(pxl_ad_problem_add_traced(two, g, NULL) == PXL_ERR_INVALID_ARG);
    CHECK(strstr(pxl_ctx_error(g_ctx), "parameter 7") != NULL);
    pxl_ad_graph_free(g);
    idx[3] = NP;
    CHECK(pxl_ad_problem_add(two, p, idx, data, N, NULL) == PXL_ERR_INVALID_ARG);
    CHECK(strstr(pxl_ctx_error(g_ctx), "instance 3, slot 0") != NULL);
    bo.loss.scale = -1;
    CHECK(pxl_ad_problem_add(two, p, idx, data, 1, &bo) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_ad_problem_get_info(two).n_instances == 1 && pxl_ad_problem_get_info(two).n_groups == 1);
    CHECK(pxl_ad_problem_set_bounds(two, NP, 0, 1) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_ad_problem_set_bounds(two, 0, 2, 1) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_ad_problem_set_bounds(two, 0, nan(""), 1) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_ad_problem_set_constant(two, NP, 1) == PXL_ERR_INVALID_ARG);
    pxl_ad_problem *none = two;
    CHECK(pxl_ad_problem_create(g_ctx, 0, &none) == PXL_ERR_INVALID_ARG && none == NULL);
    pxl_ad_problem_free(two);
    pxl_ad_problem_free(NULL);
    pxl_ad_program_free(p);
    pxl_ad_problem_free(traced);
    pxl_ad_problem_free(tmpl);
}

/* ---- losses --------------------------------------------------------------- */

static void test_losses(void) {
    static const pxl_ad_loss_kind kinds[] = {PXL_AD_LOSS_NONE,   PXL_AD_LOSS_HUBER,  PXL_AD_LOSS_SOFT_L1,
                                             PXL_AD_LOSS_CAUCHY, PXL_AD_LOSS_ARCTAN, PXL_AD_LOSS_TUKEY};
    static const double scales[] = {1, 0.7, 2.5};
    static const double ss[] = {0.01, 0.3, 0.9, 1.7, 4, 9.5, 30};
    for (size_t a = 0; a < sizeof kinds / sizeof kinds[0]; a++)
        for (size_t b = 0; b < 3; b++)
            for (size_t c = 0; c < sizeof ss / sizeof ss[0]; c++) {
                pxl_ad_loss l = {kinds[a], scales[b]};
                const double s = ss[c] * scales[b] * scales[b], h = 1e-5 * s;
                if (fabs(s - scales[b] * scales[b]) < 2 * h) continue; /* a kink of Huber / Tukey */
                double r0[3], rp[3], rm[3];
                ad_loss_eval(&l, s, r0);
                ad_loss_eval(&l, s + h, rp);
                ad_loss_eval(&l, s - h, rm);
                const double d1 = (rp[0] - rm[0]) / (2 * h), d2 = (rp[1] - rm[1]) / (2 * h);
                CHECK_MSG(fabs(d1 - r0[1]) <= 1e-6 * (1 + fabs(r0[1])) && fabs(d2 - r0[2]) <= 1e-5 * (1 + fabs(r0[2])),
                          "loss %d scale %g s %g: rho' %g (fd %g), rho'' %g (fd %g)", (int)l.kind, l.scale, s, r0[1],
                          d1, r0[2], d2);
                ad_loss_eval(&l, 0, r0);
                CHECK(r0[0] == 0 && r0[1] == 1);
            }
    /* the documented values */
    pxl_ad_loss hub = {PXL_AD_LOSS_HUBER, 2}, cau = {PXL_AD_LOSS_CAUCHY, 2}, tuk = {PXL_AD_LOSS_TUKEY, 2};
    double r[3];
    ad_loss_eval(&hub, 9, r);
    CHECK(fabs(r[0] - (2 * 2 * 3 - 4)) < 1e-15);
    ad_loss_eval(&cau, 9, r);
    CHECK(fabs(r[0] - 4 * log(1 + 9.0 / 4)) < 1e-14);
    ad_loss_eval(&tuk, 9, r);
    CHECK(fabs(r[0] - 4.0 / 3) < 1e-15 && r[1] == 0);

    /* parse */
    pxl_ad_loss l;
    CHECK(pxl_ad_loss_parse(g_ctx, "huber:1.5", &l) == PXL_OK && l.kind == PXL_AD_LOSS_HUBER && l.scale == 1.5);
    CHECK(pxl_ad_loss_parse(g_ctx, "cauchy", &l) == PXL_OK && l.kind == PXL_AD_LOSS_CAUCHY && l.scale == 1);
    CHECK(pxl_ad_loss_parse(g_ctx, "none", &l) == PXL_OK && l.kind == PXL_AD_LOSS_NONE);
    CHECK(pxl_ad_loss_parse(g_ctx, "soft_l1:2e-1", &l) == PXL_OK && l.kind == PXL_AD_LOSS_SOFT_L1 && l.scale == 0.2);
    CHECK(pxl_ad_loss_parse(g_ctx, "tukey:3", &l) == PXL_OK && pxl_ad_loss_parse(g_ctx, "arctan", &l) == PXL_OK);
    static const char *const bad[] = {"", "hubr", "huber:", "huber:0", "huber:-1", "huber:1x", "huber:nan",
                                      "huber:inf", "none:1", "Huber", "huber: 1", "huber:1:2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_MSG(pxl_ad_loss_parse(g_ctx, bad[i], &l) == PXL_ERR_FORMAT, "'%s' accepted", bad[i]);
        CHECK(strstr(pxl_ctx_error(g_ctx), bad[i]) != NULL);
    }

    /* evaluate: cost = sum 1/2 rho(|f|^2), gradient = sum rho' J^T f, against finite differences */
    pxl_ad_graph *g = new_graph();
    pxl_ad_value p0 = pxl_ad_param(g, 0), p1 = pxl_ad_param(g, 1), x = pxl_ad_input(g, 0);
    CHECK(pxl_ad_output(g, pxl_ad_sub(g, pxl_ad_mul(g, p0, x), p1)) == PXL_OK);
    CHECK(pxl_ad_output(g, pxl_ad_sub(g, pxl_ad_exp(g, pxl_ad_mul(g, p1, x)), pxl_ad_const(g, 2))) == PXL_OK);
    pxl_ad_program *p = compile_free(g);
    for (size_t a = 0; a < sizeof kinds / sizeof kinds[0]; a++) {
        pxl_ad_problem *pb = new_problem(2);
        pxl_ad_block_options bo;
        memset(&bo, 0, sizeof bo);
        bo.loss.kind = kinds[a];
        bo.loss.scale = 1.3;
        const double xs[3] = {0.5, 1, 2};
        const uint32_t idx[6] = {0, 1, 0, 1, 0, 1};
        CHECK(pxl_ad_problem_add(pb, p, idx, xs, 3, &bo) == PXL_OK);
        const double at[2] = {0.8, 0.3};
        double cost, grad[2], res[6];
        CHECK(pxl_ad_problem_evaluate(pb, at, &cost, res, grad, NULL) == PXL_OK);
        double expect = 0;
        for (int i = 0; i < 3; i++) {
            double rho[3];
            ad_loss_eval(&bo.loss, res[2 * i] * res[2 * i] + res[2 * i + 1] * res[2 * i + 1], rho);
            expect += 0.5 * rho[0];
        }
        CHECK(fabs(cost - expect) <= 1e-15 * fabs(expect));
        for (int j = 0; j < 2; j++) {
            double xp[2] = {at[0], at[1]}, xm[2] = {at[0], at[1]}, cp, cm;
            xp[j] += 1e-6;
            xm[j] -= 1e-6;
            CHECK(pxl_ad_problem_evaluate(pb, xp, &cp, NULL, NULL, NULL) == PXL_OK);
            CHECK(pxl_ad_problem_evaluate(pb, xm, &cm, NULL, NULL, NULL) == PXL_OK);
            const double fd = (cp - cm) / 2e-6;
            CHECK_MSG(fabs(fd - grad[j]) <= 1e-6 * (1 + fabs(grad[j])), "loss %d: gradient %d %g, fd %g", (int)kinds[a],
                      j, grad[j], fd);
        }
        pxl_ad_problem_free(pb);
    }
    pxl_ad_program_free(p);
}

/* The corrected residuals and Jacobian give the Gauss-Newton gradient of
 * 1/2 rho: J~^T f~ = rho' J^T f, also in the inlier region of Tukey where
 * rho'' < 0 and Ceres scales by sqrt(rho'). */
static void test_corrector(void) {
    pxl_ad_loss l = {PXL_AD_LOSS_CAUCHY, 1};
    double f[2] = {0.3, -0.4}, J[4] = {1, 2, -0.5, 0.25}, rho[3];
    const double s = 0.25;
    ad_loss_eval(&l, s, rho);
    double fj[2] = {f[0] * J[0] + f[1] * J[2], f[0] * J[1] + f[1] * J[3]};
    ad_loss_correct(rho, s, f, 2, J, 2);
    const double gj0 = f[0] * J[0] + f[1] * J[2], gj1 = f[0] * J[1] + f[1] * J[3];
    CHECK(fabs(gj0 - rho[1] * fj[0]) < 1e-15 && fabs(gj1 - rho[1] * fj[1]) < 1e-15);
    /* with rho'' > 0 (no loss of this set has one: a made-up rho) the rank-1 term applies */
    double f2[1] = {2}, J2[1] = {1};
    const double rho2[3] = {0, 1, 0.1};
    ad_loss_correct(rho2, 4, f2, 1, J2, 1);
    const double alpha = 1 - sqrt(1 + 2 * 4 * 0.1);
    CHECK(fabs(f2[0] - 2 / (1 - alpha)) < 1e-15 && fabs(J2[0] - (1 - alpha)) < 1e-15);
}

/* Line fit y = 2 x + 1 with 10 gross outliers among 50 points: plain least
 * squares is pulled off; Huber and Cauchy get the line back. */
static void test_outliers(void) {
    pxl_ad_graph *g = new_graph();
    pxl_ad_value r = pxl_ad_sub(g, pxl_ad_add(g, pxl_ad_mul(g, pxl_ad_param(g, 0), pxl_ad_input(g, 0)), pxl_ad_param(g, 1)),
                                pxl_ad_input(g, 1));
    CHECK(pxl_ad_output(g, r) == PXL_OK);
    pxl_ad_program *p = compile_free(g);
    enum { N = 50 };
    double data[2 * N];
    uint32_t idx[2 * N];
    for (int i = 0; i < N; i++) {
        const double x = 0.2 * i;
        data[2 * i] = x;
        data[2 * i + 1] = 2 * x + 1 + (i % 5 == 3 ? 15 + 0.5 * i : 0.01 * ((i * 7) % 5 - 2));
        idx[2 * i] = 0;
        idx[2 * i + 1] = 1;
    }
    static const pxl_ad_loss_kind kinds[] = {PXL_AD_LOSS_NONE, PXL_AD_LOSS_HUBER, PXL_AD_LOSS_CAUCHY,
                                             PXL_AD_LOSS_SOFT_L1, PXL_AD_LOSS_ARCTAN, PXL_AD_LOSS_TUKEY};
    static const char *const names[] = {"outliers: least squares", "outliers: huber:0.1", "outliers: cauchy:0.1",
                                        "outliers: soft_l1:0.1", "outliers: arctan:0.1", "outliers: tukey:1"};
    for (int k = 0; k < 6; k++) {
        pxl_ad_problem *pb = new_problem(2);
        pxl_ad_block_options bo;
        memset(&bo, 0, sizeof bo);
        bo.loss.kind = kinds[k];
        bo.loss.scale = kinds[k] == PXL_AD_LOSS_TUKEY ? 1 : 0.1;
        CHECK(pxl_ad_problem_add(pb, p, idx, data, N, &bo) == PXL_OK);
        /* redescending losses (Cauchy, arctan, Tukey) need a start near the inliers: the least-squares fit with
           its largest residuals' influence is a usual one; here the plain start (1, 0) is used for the convex
           ones and the least-squares solution for the others */
        double x[2] = {1, 0};
        if (k >= 2 && kinds[k] != PXL_AD_LOSS_SOFT_L1) {
            x[0] = 2.2;
            x[1] = 1.5;
        }
        pxl_ad_solve_options o = tight();
        pxl_ad_solve_summary s;
        CHECK_MSG(pxl_ad_problem_solve(pb, x, &o, &s) == PXL_OK, "%s", pxl_ctx_error(g_ctx));
        print_summary(names[k], &s);
        printf("  slope %.6f intercept %.6f\n", x[0], x[1]);
        if (k == 0) CHECK(fabs(x[0] - 2) + fabs(x[1] - 1) > 1);
        else CHECK_MSG(fabs(x[0] - 2) < 0.02 && fabs(x[1] - 1) < 0.05, "%s: %g %g", names[k], x[0], x[1]);
        pxl_ad_problem_free(pb);
    }
    pxl_ad_program_free(p);
}

/* ---- bounds, constant parameters, GN, linear solvers ------------------------ */

/* r_i = b1 (1 - exp(-b2 x_i)) - y_i */
static pxl_ad_program *exp_program(void) {
    pxl_ad_graph *g = new_graph();
    pxl_ad_value b1 = pxl_ad_param(g, 0), b2 = pxl_ad_param(g, 1), x = pxl_ad_input(g, 0), y = pxl_ad_input(g, 1);
    pxl_ad_value e = pxl_ad_exp(g, pxl_ad_neg(g, pxl_ad_mul(g, b2, x)));
    CHECK(pxl_ad_output(g, pxl_ad_sub(g, pxl_ad_mul(g, b1, pxl_ad_sub(g, pxl_ad_const(g, 1), e)), y)) == PXL_OK);
    return compile_free(g);
}

static pxl_ad_problem *exp_problem(double noise) {
    pxl_ad_program *p = exp_program();
    enum { N = 20 };
    double data[2 * N];
    uint32_t idx[2 * N];
    for (int i = 0; i < N; i++) {
        const double x = 0.3 * i;
        data[2 * i] = x;
        data[2 * i + 1] = 2.5 * (1 - exp(-0.75 * x)) + noise * ((i * 37) % 11 - 5);
        idx[2 * i] = 0;
        idx[2 * i + 1] = 1;
    }
    pxl_ad_problem *pb = new_problem(2);
    CHECK(pxl_ad_problem_add(pb, p, idx, data, N, NULL) == PXL_OK);
    pxl_ad_program_free(p);
    return pb;
}

static void test_bounds_constant(void) {
    pxl_ad_problem *pb = exp_problem(0);
    pxl_ad_solve_options o = tight();
    pxl_ad_solve_summary s;
    /* b1 <= 2 while the optimum is 2.5: ends on the bound, with the other parameter at its constrained optimum */
    CHECK(pxl_ad_problem_set_bounds(pb, 0, -HUGE_VAL, 2) == PXL_OK);
    double x[2] = {1, 1};
    CHECK_MSG(pxl_ad_problem_solve(pb, x, &o, &s) == PXL_OK, "%s", pxl_ctx_error(g_ctx));
    print_summary("bounds b1 <= 2", &s);
    CHECK_MSG(x[0] == 2, "b1 = %.17g", x[0]);
    CHECK(s.termination != PXL_AD_NO_CONVERGENCE && s.termination != PXL_AD_FAILURE);
    /* at the bound, d cost / d b2 is 0 and d cost / d b1 < 0 (it wants to grow) */
    double grad[2], cost;
    CHECK(pxl_ad_problem_evaluate(pb, x, &cost, NULL, grad, NULL) == PXL_OK);
    CHECK_MSG(fabs(grad[1]) < 1e-6 && grad[0] < -1e-3, "gradient %g %g", grad[0], grad[1]);
    const double b2_bound = x[1];
    /* the same with b1 held constant at 2: the same b2 */
    CHECK(pxl_ad_problem_set_bounds(pb, 0, -HUGE_VAL, HUGE_VAL) == PXL_OK);
    CHECK(pxl_ad_problem_set_constant(pb, 0, 1) == PXL_OK);
    x[1] = 1;
    CHECK(pxl_ad_problem_solve(pb, x, &o, &s) == PXL_OK);
    print_summary("constant b1 = 2", &s);
    CHECK(x[0] == 2 && s.n_free_params == 1);
    CHECK_MSG(fabs(x[1] - b2_bound) < 1e-7, "b2 %.12g vs %.12g", x[1], b2_bound);
    CHECK(pxl_ad_problem_evaluate(pb, x, &cost, NULL, grad, NULL) == PXL_OK && grad[0] == 0);
    /* all constant: nothing to do */
    CHECK(pxl_ad_problem_set_constant(pb, 1, 1) == PXL_OK);
    CHECK(pxl_ad_problem_solve(pb, x, &o, &s) == PXL_OK && s.iterations == 0 && s.n_free_params == 0);
    CHECK(pxl_ad_problem_set_constant(pb, 0, 0) == PXL_OK && pxl_ad_problem_set_constant(pb, 1, 0) == PXL_OK);
    /* a lower bound above the optimum of b2, started on it */
    CHECK(pxl_ad_problem_set_bounds(pb, 1, 1, 3) == PXL_OK);
    x[0] = 1;
    x[1] = 1;
    CHECK(pxl_ad_problem_solve(pb, x, &o, &s) == PXL_OK);
    print_summary("bounds 1 <= b2 <= 3", &s);
    CHECK_MSG(x[1] == 1 && x[0] > 2 && x[0] < 2.5, "x = %g %g", x[0], x[1]);
    /* a start outside the box is refused, params unchanged */
    x[1] = 0.5;
    CHECK(pxl_ad_problem_solve(pb, x, &o, &s) == PXL_ERR_INVALID_ARG && s.termination == PXL_AD_FAILURE);
    CHECK(strstr(s.message, "outside its bounds") != NULL && x[1] == 0.5);
    pxl_ad_problem_free(pb);
}

static void test_gauss_newton(void) {
    pxl_ad_problem *pb = exp_problem(0.01);
    pxl_ad_solve_options o = tight();
    pxl_ad_solve_summary s;
    double lm[2] = {2, 1}, gn[2] = {2, 1};
    CHECK(pxl_ad_problem_solve(pb, lm, &o, &s) == PXL_OK);
    print_summary("exp fit LM", &s);
    o.method = PXL_AD_GAUSS_NEWTON;
    CHECK_MSG(pxl_ad_problem_solve(pb, gn, &o, &s) == PXL_OK, "%s", pxl_ctx_error(g_ctx));
    print_summary("exp fit Gauss-Newton", &s);
    CHECK_MSG(fabs(lm[0] - gn[0]) < 1e-9 && fabs(lm[1] - gn[1]) < 1e-9, "LM %g %g GN %g %g", lm[0], lm[1], gn[0],
              gn[1]);
    pxl_ad_problem_free(pb);

    /* r = p0 + p1 - 1: J^T J is singular. GN fails with a message for every solver; LM damps and converges */
    static const pxl_ad_linear_solver solvers[] = {PXL_AD_DENSE_CHOLESKY, PXL_AD_DENSE_QR, PXL_AD_SPARSE_CHOLESKY,
                                                   PXL_AD_CGNR};
    pxl_ad_graph *g = new_graph();
    CHECK(pxl_ad_output(g, pxl_ad_sub(g, pxl_ad_add(g, pxl_ad_param(g, 0), pxl_ad_param(g, 1)), pxl_ad_const(g, 1))) ==
          PXL_OK);
    pb = new_problem(2);
    CHECK(pxl_ad_problem_add_traced(pb, g, NULL) == PXL_OK);
    pxl_ad_graph_free(g);
    for (int k = 0; k < 4; k++) {
        double x[2] = {3, 4};
        o = tight();
        o.linear_solver = solvers[k];
        o.method = PXL_AD_GAUSS_NEWTON;
        pxl_status st = pxl_ad_problem_solve(pb, x, &o, &s);
        if (st == PXL_ERR_UNSUPPORTED) {
            printf("singular GN %s: skipped (%s)\n", pxl_ad_linear_solver_name(solvers[k]), pxl_ctx_error(g_ctx));
            continue;
        }
        print_summary("singular GN", &s);
        if (solvers[k] == PXL_AD_CGNR) {
            /* conjugate gradients factorise nothing: the system is consistent and they solve it */
            CHECK(st == PXL_OK && s.final_cost < 1e-20);
            continue;
        }
        CHECK_MSG(st == PXL_ERR_INVALID_ARG && s.termination == PXL_AD_FAILURE, "%s: %s",
                  pxl_ad_linear_solver_name(solvers[k]), s.message);
        CHECK(strstr(s.message, "singular") != NULL && strstr(pxl_ctx_error(g_ctx), "singular") != NULL);
        CHECK(x[0] == 3 && x[1] == 4 && s.initial_cost == 18);
        o.method = PXL_AD_LEVENBERG_MARQUARDT;
        CHECK(pxl_ad_problem_solve(pb, x, &o, &s) == PXL_OK);
        print_summary("singular LM", &s);
        CHECK(s.final_cost < 1e-20);
    }
    pxl_ad_problem_free(pb);
}

/* ---- NaN steps, the time limit, progress ----------------------------------- */

static void test_nan_step(void) {
    /* r_i = sqrt(p) - 0.1: from p = 4 the Gauss-Newton step goes to p < 0, where sqrt is NaN */
    pxl_ad_graph *g = new_graph();
    CHECK(pxl_ad_output(g, pxl_ad_sub(g, pxl_ad_sqrt(g, pxl_ad_param(g, 0)), pxl_ad_const(g, 0.1))) == PXL_OK);
    pxl_ad_problem *pb = new_problem(1);
    CHECK(pxl_ad_problem_add_traced(pb, g, NULL) == PXL_OK);
    CHECK(pxl_ad_problem_add_traced(pb, g, NULL) == PXL_OK);
    pxl_ad_graph_free(g);
    double x[1] = {4};
    pxl_ad_solve_options o = tight();
    pxl_ad_solve_summary s;
    CHECK(pxl_ad_problem_solve(pb, x, &o, &s) == PXL_OK);
    print_summary("NaN trial step", &s);
    CHECK(s.successful_steps < s.iterations);
    CHECK_MSG(fabs(x[0] - 0.01) < 1e-12 && s.final_cost < 1e-25, "p = %.17g", x[0]);
    pxl_ad_problem_free(pb);
}

typedef struct progress_log {
    int calls, last_iteration;
    double last_cost, spin;
} progress_log;

static void on_progress(void *user, int iteration, double cost) {
    progress_log *l = user;
    l->calls++;
    l->last_iteration = iteration;
    l->last_cost = cost;
    const double t = pxl_time_now();
    while (l->spin > 0 && pxl_time_now() - t < l->spin) {
    }
}

static void test_time_progress(void) {
    pxl_ad_problem *pb = exp_problem(0.01);
    pxl_ad_solve_options o = tight();
    progress_log log = {0, 0, 0, 0};
    o.progress = on_progress;
    o.progress_user = &log;
    pxl_ad_solve_summary s;
    double x[2] = {1, 1};
    CHECK(pxl_ad_problem_solve(pb, x, &o, &s) == PXL_OK);
    CHECK(log.calls == s.iterations && log.last_iteration == s.iterations && log.last_cost == s.final_cost);
    CHECK(s.total_seconds >= s.eval_seconds && s.gradient_max_norm >= 0 && s.n_residuals == 20 &&
          s.n_free_params == 2 && s.linear_solver == PXL_AD_DENSE_CHOLESKY);
    /* a limit of 1 microsecond, with each iteration made to last 20: at most one iteration, then
       NO_CONVERGENCE */
    memset(&log, 0, sizeof log);
    log.spin = 2e-5;
    o.max_seconds = 1e-6;
    x[0] = x[1] = 1;
    CHECK(pxl_ad_problem_solve(pb, x, &o, &s) == PXL_OK);
    print_summary("time limit", &s);
    CHECK(s.termination == PXL_AD_NO_CONVERGENCE && s.iterations <= 1 && strstr(s.message, "time limit") != NULL);
    o.max_seconds = -1;
    CHECK(pxl_ad_problem_solve(pb, x, &o, &s) == PXL_ERR_INVALID_ARG && s.termination == PXL_AD_FAILURE);
    pxl_ad_problem_free(pb);
}

/* ---- covariance ------------------------------------------------------------- */

static void test_covariance(void) {
    /* y = b0 + b1 x: se(b1) = sqrt(s^2 / Sxx), se(b0) = sqrt(s^2 (1/n + xbar^2 / Sxx)),
       cov(b0, b1) = -xbar s^2 / Sxx */
    pxl_ad_graph *g = new_graph();
    CHECK(pxl_ad_output(g, pxl_ad_sub(g, pxl_ad_add(g, pxl_ad_param(g, 0), pxl_ad_mul(g, pxl_ad_param(g, 1),
                                                                                     pxl_ad_input(g, 0))),
                                      pxl_ad_input(g, 1))) == PXL_OK);
    pxl_ad_program *p = compile_free(g);
    enum { N = 12 };
    double data[2 * N];
    uint32_t idx[2 * N];
    double sx = 0, sy = 0;
    for (int i = 0; i < N; i++) {
        data[2 * i] = 1 + 0.5 * i;
        data[2 * i + 1] = 3 - 0.7 * data[2 * i] + 0.1 * sin(3.7 * i);
        idx[2 * i] = 0;
        idx[2 * i + 1] = 1;
        sx += data[2 * i];
        sy += data[2 * i + 1];
    }
    const double xbar = sx / N, ybar = sy / N;
    double sxx = 0, sxy = 0;
    for (int i = 0; i < N; i++) {
        sxx += (data[2 * i] - xbar) * (data[2 * i] - xbar);
        sxy += (data[2 * i] - xbar) * (data[2 * i + 1] - ybar);
    }
    const double b1 = sxy / sxx, b0 = ybar - b1 * xbar;
    double rss = 0;
    for (int i = 0; i < N; i++) {
        const double e = data[2 * i + 1] - b0 - b1 * data[2 * i];
        rss += e * e;
    }
    const double s2 = rss / (N - 2);
    pxl_ad_problem *pb = new_problem(3); /* parameter 2 is unused: held constant */
    CHECK(pxl_ad_problem_add(pb, p, idx, data, N, NULL) == PXL_OK);
    double x[3] = {0, 0, 5};
    pxl_ad_solve_summary s;
    CHECK(pxl_ad_problem_set_constant(pb, 2, 1) == PXL_OK);
    pxl_ad_solve_options o = tight();
    CHECK(pxl_ad_problem_solve(pb, x, &o, &s) == PXL_OK);
    CHECK_MSG(fabs(x[0] - b0) < 1e-10 && fabs(x[1] - b1) < 1e-10, "%g %g vs %g %g", x[0], x[1], b0, b1);
    double se[3], cov[9];
    CHECK_MSG(pxl_ad_problem_covariance(pb, x, se, cov) == PXL_OK, "%s", pxl_ctx_error(g_ctx));
    const double se1 = sqrt(s2 / sxx), se0 = sqrt(s2 * (1.0 / N + xbar * xbar / sxx));
    printf("covariance: se %.10g %.10g (textbook %.10g %.10g)\n", se[0], se[1], se0, se1);
    CHECK(fabs(se[0] / se0 - 1) < 1e-9 && fabs(se[1] / se1 - 1) < 1e-9 && se[2] == 0);
    CHECK(fabs(cov[1] / (-xbar * s2 / sxx) - 1) < 1e-9 && cov[1] == cov[3] && cov[2] == 0 && cov[8] == 0);
    CHECK(fabs(cov[0] - se[0] * se[0]) < 1e-15);
    /* parameter 2 free but unused: singular, named */
    CHECK(pxl_ad_problem_set_constant(pb, 2, 0) == PXL_OK);
    CHECK(pxl_ad_problem_covariance(pb, x, se, NULL) == PXL_ERR_INVALID_ARG);
    CHECK_MSG(strstr(pxl_ctx_error(g_ctx), "parameter 2") != NULL, "%s", pxl_ctx_error(g_ctx));
    pxl_ad_problem_free(pb);
    pxl_ad_program_free(p);
    /* y = (b0 + b1) x: rank deficient, names b1 */
    g = new_graph();
    CHECK(pxl_ad_output(g, pxl_ad_sub(g, pxl_ad_mul(g, pxl_ad_add(g, pxl_ad_param(g, 0), pxl_ad_param(g, 1)),
                                                    pxl_ad_input(g, 0)),
                                      pxl_ad_input(g, 1))) == PXL_OK);
    p = compile_free(g);
    pb = new_problem(2);
    CHECK(pxl_ad_problem_add(pb, p, idx, data, N, NULL) == PXL_OK);
    CHECK(pxl_ad_problem_covariance(pb, x, se, NULL) == PXL_ERR_INVALID_ARG);
    CHECK_MSG(strstr(pxl_ctx_error(g_ctx), "parameter 1") != NULL, "%s", pxl_ctx_error(g_ctx));
    pxl_ad_problem_free(pb);
    /* no more residuals than parameters */
    pb = new_problem(2);
    CHECK(pxl_ad_problem_add(pb, p, idx, data, 2, NULL) == PXL_OK);
    CHECK(pxl_ad_problem_covariance(pb, x, se, NULL) == PXL_ERR_INVALID_ARG);
    pxl_ad_problem_free(pb);
    pxl_ad_program_free(p);
}

/* ---- L-BFGS ------------------------------------------------------------------ */

static void test_minimize(void) {
    /* E = sum_i (p_i - c_i)^2 + (p_0 p_1 - 1)^2 / 10 as outputs; p_2 constant; p_3 <= 0.5 */
    pxl_ad_problem *pb = new_problem(4);
    for (int i = 0; i < 4; i++) {
        pxl_ad_graph *g = new_graph();
        CHECK(pxl_ad_output(g, pxl_ad_powi(g, pxl_ad_sub(g, pxl_ad_param(g, i), pxl_ad_const(g, 1 + i)), 2)) ==
              PXL_OK);
        CHECK(pxl_ad_problem_add_traced(pb, g, NULL) == PXL_OK);
        pxl_ad_graph_free(g);
    }
    CHECK(pxl_ad_problem_set_constant(pb, 2, 1) == PXL_OK);
    CHECK(pxl_ad_problem_set_bounds(pb, 3, -1, 0.5) == PXL_OK);
    double x[4] = {0, 0, 0, 0};
    pxl_ad_solve_summary s;
    pxl_status st = pxl_ad_problem_minimize(pb, x, NULL, &s);
    if (st == PXL_ERR_UNSUPPORTED) {
        printf("minimize: skipped (%s)\n", pxl_ctx_error(g_ctx));
    } else {
        CHECK_MSG(st == PXL_OK, "%s", pxl_ctx_error(g_ctx));
        print_summary("L-BFGS", &s);
        CHECK_MSG(fabs(x[0] - 1) < 1e-6 && fabs(x[1] - 2) < 1e-6 && x[2] == 0 && x[3] == 0.5, "x = %g %g %g %g", x[0],
                  x[1], x[2], x[3]);
        CHECK(fabs(s.final_cost - (9 + 3.5 * 3.5)) < 1e-9);
    }
    pxl_ad_problem_free(pb);
}

/* ---- More, Garbow, Hillstrom (1981) ------------------------------------------- */

/* Each problem builds its residuals f_1 .. f_m on one graph (traced form;
 * parameters 0 .. n-1); F = sum f_i^2 = 2 * cost is compared with f*. */
typedef struct mgh {
    const char *name;
    int n;
    void (*build)(pxl_ad_graph *g, int n);
    void (*start)(double *x, int n);
    double fstar[2]; /* accepted minima of F (a second local minimum, or -1) */
    double rtol;     /* |F - f*| <= rtol * f* (f* > 0), or F <= rtol (f* = 0) */
} mgh;

#define G g
#define P(i) pxl_ad_param(G, (i))
#define K(c) pxl_ad_const(G, (c))
#define ADD(a, b) pxl_ad_add(G, (a), (b))
#define SUB(a, b) pxl_ad_sub(G, (a), (b))
#define MUL(a, b) pxl_ad_mul(G, (a), (b))
#define DIV(a, b) pxl_ad_div(G, (a), (b))
#define SQ(a) pxl_ad_powi(G, (a), 2)
#define EXP(a) pxl_ad_exp(G, (a))
#define OUT(v) CHECK(pxl_ad_output(G, (v)) == PXL_OK)

static void b_rosenbrock(pxl_ad_graph *g, int n) {
    for (int i = 0; i < n; i += 2) {
        OUT(MUL(K(10), SUB(P(i + 1), SQ(P(i)))));
        OUT(SUB(K(1), P(i)));
    }
}
static void s_rosenbrock(double *x, int n) {
    for (int i = 0; i < n; i += 2) {
        x[i] = -1.2;
        x[i + 1] = 1;
    }
}
static void b_freudenstein(pxl_ad_graph *g, int n) {
    (void)n;
    OUT(ADD(ADD(K(-13), P(0)), MUL(SUB(MUL(SUB(K(5), P(1)), P(1)), K(2)), P(1))));
    OUT(ADD(ADD(K(-29), P(0)), MUL(SUB(MUL(ADD(P(1), K(1)), P(1)), K(14)), P(1))));
}
static void s_freudenstein(double *x, int n) {
    (void)n;
    x[0] = 0.5;
    x[1] = -2;
}
static void b_powell_bs(pxl_ad_graph *g, int n) {
    (void)n;
    OUT(SUB(MUL(K(1e4), MUL(P(0), P(1))), K(1)));
    OUT(SUB(ADD(EXP(pxl_ad_neg(g, P(0))), EXP(pxl_ad_neg(g, P(1)))), K(1.0001)));
}
static void s_powell_bs(double *x, int n) {
    (void)n;
    x[0] = 0;
    x[1] = 1;
}
static void b_brown_bs(pxl_ad_graph *g, int n) {
    (void)n;
    OUT(SUB(P(0), K(1e6)));
    OUT(SUB(P(1), K(2e-6)));
    OUT(SUB(MUL(P(0), P(1)), K(2)));
}
static void s_ones(double *x, int n) {
    for (int i = 0; i < n; i++) x[i] = 1;
}
static void b_beale(pxl_ad_graph *g, int n) {
    (void)n;
    static const double y[3] = {1.5, 2.25, 2.625};
    for (int i = 1; i <= 3; i++) OUT(SUB(K(y[i - 1]), MUL(P(0), SUB(K(1), pxl_ad_powi(g, P(1), i)))));
}
static void b_jennrich(pxl_ad_graph *g, int n) {
    (void)n;
    for (int i = 1; i <= 10; i++)
        OUT(SUB(K(2 + 2 * i), ADD(EXP(MUL(K(i), P(0))), EXP(MUL(K(i), P(1))))));
}
static void s_jennrich(double *x, int n) {
    (void)n;
    x[0] = 0.3;
    x[1] = 0.4;
}
static void b_helical(pxl_ad_graph *g, int n) {
    (void)n;
    const double pi = 3.14159265358979323846;
    pxl_ad_value theta = ADD(MUL(K(1 / (2 * pi)), pxl_ad_atan(g, DIV(P(1), P(0)))),
                             pxl_ad_select(g, pxl_ad_lt(g, P(0), K(0)), K(0.5), K(0)));
    OUT(MUL(K(10), SUB(P(2), MUL(K(10), theta))));
    OUT(MUL(K(10), SUB(pxl_ad_sqrt(g, ADD(SQ(P(0)), SQ(P(1)))), K(1))));
    OUT(P(2));
}
static void s_helical(double *x, int n) {
    (void)n;
    x[0] = -1;
    x[1] = 0;
    x[2] = 0;
}
static void b_bard(pxl_ad_graph *g, int n) {
    (void)n;
    static const double y[15] = {0.14, 0.18, 0.22, 0.25, 0.29, 0.32, 0.35, 0.39,
                                 0.37, 0.58, 0.73, 0.96, 1.34, 2.10, 4.39};
    for (int i = 1; i <= 15; i++) {
        const double u = i, v = 16 - i, w = u < v ? u : v;
        OUT(SUB(K(y[i - 1]), ADD(P(0), DIV(K(u), ADD(MUL(K(v), P(1)), MUL(K(w), P(2)))))));
    }
}
static void b_gaussian(pxl_ad_graph *g, int n) {
    (void)n;
    static const double y[15] = {0.0009, 0.0044, 0.0175, 0.0540, 0.1295, 0.2420, 0.3521, 0.3989,
                                 0.3521, 0.2420, 0.1295, 0.0540, 0.0175, 0.0044, 0.0009};
    for (int i = 1; i <= 15; i++) {
        const double t = (8 - i) / 2.0;
        OUT(SUB(MUL(P(0), EXP(MUL(K(-0.5), MUL(P(1), SQ(SUB(K(t), P(2))))))), K(y[i - 1])));
    }
}
static void s_gaussian(double *x, int n) {
    (void)n;
    x[0] = 0.4;
    x[1] = 1;
    x[2] = 0;
}
static void b_meyer(pxl_ad_graph *g, int n) {
    (void)n;
    static const double y[16] = {34780, 28610, 23650, 19630, 16370, 13720, 11540, 9744,
                                 8261,  7030,  6005,  5147,  4427,  3820,  3307,  2872};
    for (int i = 1; i <= 16; i++)
        OUT(SUB(MUL(P(0), EXP(DIV(P(1), ADD(K(45 + 5 * i), P(2))))), K(y[i - 1])));
}
static void s_meyer(double *x, int n) {
    (void)n;
    x[0] = 0.02;
    x[1] = 4000;
    x[2] = 250;
}
static void b_gulf(pxl_ad_graph *g, int n) {
    (void)n;
    for (int i = 1; i <= 99; i++) {
        const double t = i / 100.0, y = 25 + pow(-50 * log(t), 2.0 / 3);
        OUT(SUB(EXP(DIV(pxl_ad_neg(g, pxl_ad_pow(g, pxl_ad_abs(g, SUB(K(y), P(1))), P(2))), P(0))), K(t)));
    }
}
static void s_gulf(double *x, int n) {
    (void)n;
    x[0] = 5;
    x[1] = 2.5;
    x[2] = 0.15;
}
static void b_box3d(pxl_ad_graph *g, int n) {
    (void)n;
    for (int i = 1; i <= 10; i++) {
        const double t = 0.1 * i;
        OUT(SUB(SUB(EXP(MUL(K(-t), P(0))), EXP(MUL(K(-t), P(1)))), MUL(P(2), K(exp(-t) - exp(-10 * t)))));
    }
}
static void s_box3d(double *x, int n) {
    (void)n;
    x[0] = 0;
    x[1] = 10;
    x[2] = 20;
}
static void b_powell_singular(pxl_ad_graph *g, int n) {
    for (int i = 0; i < n; i += 4) {
        OUT(ADD(P(i), MUL(K(10), P(i + 1))));
        OUT(MUL(K(sqrt(5)), SUB(P(i + 2), P(i + 3))));
        OUT(SQ(SUB(P(i + 1), MUL(K(2), P(i + 2)))));
        OUT(MUL(K(sqrt(10)), SQ(SUB(P(i), P(i + 3)))));
    }
}
static void s_powell_singular(double *x, int n) {
    for (int i = 0; i < n; i += 4) {
        x[i] = 3;
        x[i + 1] = -1;
        x[i + 2] = 0;
        x[i + 3] = 1;
    }
}
static void b_wood(pxl_ad_graph *g, int n) {
    (void)n;
    OUT(MUL(K(10), SUB(P(1), SQ(P(0)))));
    OUT(SUB(K(1), P(0)));
    OUT(MUL(K(sqrt(90)), SUB(P(3), SQ(P(2)))));
    OUT(SUB(K(1), P(2)));
    OUT(MUL(K(sqrt(10)), SUB(ADD(P(1), P(3)), K(2))));
    OUT(MUL(K(1 / sqrt(10)), SUB(P(1), P(3))));
}
static void s_wood(double *x, int n) {
    (void)n;
    x[0] = -3;
    x[1] = -1;
    x[2] = -3;
    x[3] = -1;
}
static void b_kowalik(pxl_ad_graph *g, int n) {
    (void)n;
    static const double y[11] = {0.1957, 0.1947, 0.1735, 0.1600, 0.0844, 0.0627,
                                 0.0456, 0.0342, 0.0323, 0.0235, 0.0246};
    static const double u[11] = {4, 2, 1, 0.5, 0.25, 0.167, 0.125, 0.1, 0.0833, 0.0714, 0.0625};
    for (int i = 0; i < 11; i++) {
        pxl_ad_value num = MUL(P(0), ADD(K(u[i] * u[i]), MUL(K(u[i]), P(1))));
        pxl_ad_value den = ADD(ADD(K(u[i] * u[i]), MUL(K(u[i]), P(2))), P(3));
        OUT(SUB(K(y[i]), DIV(num, den)));
    }
}
static void s_kowalik(double *x, int n) {
    (void)n;
    x[0] = 0.25;
    x[1] = 0.39;
    x[2] = 0.415;
    x[3] = 0.39;
}
static void b_brown_dennis(pxl_ad_graph *g, int n) {
    (void)n;
    for (int i = 1; i <= 20; i++) {
        const double t = i / 5.0;
        OUT(ADD(SQ(SUB(ADD(P(0), MUL(K(t), P(1))), K(exp(t)))), SQ(SUB(ADD(P(2), MUL(K(sin(t)), P(3))), K(cos(t))))));
    }
}
static void s_brown_dennis(double *x, int n) {
    (void)n;
    x[0] = 25;
    x[1] = 5;
    x[2] = -5;
    x[3] = -1;
}
static void b_osborne1(pxl_ad_graph *g, int n) {
    (void)n;
    static const double y[33] = {0.844, 0.908, 0.932, 0.936, 0.925, 0.908, 0.881, 0.850, 0.818, 0.784, 0.751,
                                 0.718, 0.685, 0.658, 0.628, 0.603, 0.580, 0.558, 0.538, 0.522, 0.506, 0.490,
                                 0.478, 0.467, 0.457, 0.448, 0.438, 0.431, 0.424, 0.420, 0.414, 0.411, 0.406};
    for (int i = 0; i < 33; i++) {
        const double t = 10.0 * i;
        OUT(SUB(K(y[i]), ADD(ADD(P(0), MUL(P(1), EXP(MUL(K(-t), P(3))))), MUL(P(2), EXP(MUL(K(-t), P(4)))))));
    }
}
static void s_osborne1(double *x, int n) {
    (void)n;
    const double s[5] = {0.5, 1.5, -1, 0.01, 0.02};
    memcpy(x, s, sizeof s);
}
static void b_biggs(pxl_ad_graph *g, int n) {
    (void)n;
    for (int i = 1; i <= 13; i++) {
        const double t = 0.1 * i, y = exp(-t) - 5 * exp(-10 * t) + 3 * exp(-4 * t);
        pxl_ad_value a = MUL(P(2), EXP(MUL(K(-t), P(0)))), b = MUL(P(3), EXP(MUL(K(-t), P(1)))),
                     c = MUL(P(5), EXP(MUL(K(-t), P(4))));
        OUT(SUB(ADD(SUB(a, b), c), K(y)));
    }
}
static void s_biggs(double *x, int n) {
    (void)n;
    const double s[6] = {1, 2, 1, 1, 1, 1};
    memcpy(x, s, sizeof s);
}
static void b_osborne2(pxl_ad_graph *g, int n) {
    (void)n;
    static const double y[65] = {
        1.366, 1.191, 1.112, 1.013, 0.991, 0.885, 0.831, 0.847, 0.786, 0.725, 0.746, 0.679, 0.608,
        0.655, 0.616, 0.606, 0.602, 0.626, 0.651, 0.724, 0.649, 0.649, 0.694, 0.644, 0.624, 0.661,
        0.612, 0.558, 0.533, 0.495, 0.500, 0.423, 0.395, 0.375, 0.372, 0.391, 0.396, 0.405, 0.428,
        0.429, 0.523, 0.562, 0.607, 0.653, 0.672, 0.708, 0.633, 0.668, 0.645, 0.632, 0.591, 0.559,
        0.597, 0.625, 0.739, 0.710, 0.729, 0.720, 0.636, 0.581, 0.428, 0.292, 0.162, 0.098, 0.054};
    for (int i = 0; i < 65; i++) {
        const double t = i / 10.0;
        pxl_ad_value m = MUL(P(0), EXP(MUL(K(-t), P(4))));
        for (int j = 0; j < 3; j++)
            m = ADD(m, MUL(P(1 + j), EXP(pxl_ad_neg(g, MUL(SQ(SUB(K(t), P(8 + j))), P(5 + j))))));
        OUT(SUB(K(y[i]), m));
    }
}
static void s_osborne2(double *x, int n) {
    (void)n;
    const double s[11] = {1.3, 0.65, 0.65, 0.7, 0.6, 3, 5, 7, 2, 4.5, 5.5};
    memcpy(x, s, sizeof s);
}
static void b_watson(pxl_ad_graph *g, int n) {
    for (int i = 1; i <= 29; i++) {
        const double t = i / 29.0;
        pxl_ad_value s1 = K(0), s2 = K(0);
        for (int j = 2; j <= n; j++) s1 = ADD(s1, MUL(K((j - 1) * pow(t, j - 2)), P(j - 1)));
        for (int j = 1; j <= n; j++) s2 = ADD(s2, MUL(K(pow(t, j - 1)), P(j - 1)));
        OUT(SUB(SUB(s1, SQ(s2)), K(1)));
    }
    OUT(P(0));
    OUT(SUB(SUB(P(1), SQ(P(0))), K(1)));
}
static void s_zeros(double *x, int n) {
    for (int i = 0; i < n; i++) x[i] = 0;
}
static void b_penalty1(pxl_ad_graph *g, int n) {
    pxl_ad_value s = K(-0.25);
    for (int i = 0; i < n; i++) {
        OUT(MUL(K(sqrt(1e-5)), SUB(P(i), K(1))));
        s = ADD(s, SQ(P(i)));
    }
    OUT(s);
}
static void s_iota(double *x, int n) {
    for (int i = 0; i < n; i++) x[i] = i + 1;
}
static void b_penalty2(pxl_ad_graph *g, int n) {
    const double a = sqrt(1e-5);
    OUT(SUB(P(0), K(0.2)));
    for (int i = 2; i <= n; i++)
        OUT(MUL(K(a), SUB(ADD(EXP(MUL(K(0.1), P(i - 1))), EXP(MUL(K(0.1), P(i - 2)))), K(exp(i / 10.0) + exp((i - 1) / 10.0)))));
    for (int i = n + 1; i < 2 * n; i++) OUT(MUL(K(a), SUB(EXP(MUL(K(0.1), P(i - n))), K(exp(-0.1)))));
    pxl_ad_value s = K(-1);
    for (int j = 1; j <= n; j++) s = ADD(s, MUL(K(n - j + 1), SQ(P(j - 1))));
    OUT(s);
}
static void s_half(double *x, int n) {
    for (int i = 0; i < n; i++) x[i] = 0.5;
}
static void b_vardim(pxl_ad_graph *g, int n) {
    pxl_ad_value s = K(0);
    for (int j = 1; j <= n; j++) {
        OUT(SUB(P(j - 1), K(1)));
        s = ADD(s, MUL(K(j), SUB(P(j - 1), K(1))));
    }
    OUT(s);
    OUT(SQ(s));
}
static void s_vardim(double *x, int n) {
    for (int j = 1; j <= n; j++) x[j - 1] = 1 - (double)j / n;
}
static void b_trig(pxl_ad_graph *g, int n) {
    pxl_ad_value c = K(0);
    for (int j = 0; j < n; j++) c = ADD(c, pxl_ad_cos(g, P(j)));
    for (int i = 1; i <= n; i++)
        OUT(SUB(ADD(SUB(K(n), c), MUL(K(i), SUB(K(1), pxl_ad_cos(g, P(i - 1))))), pxl_ad_sin(g, P(i - 1))));
}
static void s_trig(double *x, int n) {
    for (int i = 0; i < n; i++) x[i] = 1.0 / n;
}
static void b_brown_al(pxl_ad_graph *g, int n) {
    pxl_ad_value s = K(0), p = K(1);
    for (int j = 0; j < n; j++) {
        s = ADD(s, P(j));
        p = MUL(p, P(j));
    }
    for (int i = 0; i < n - 1; i++) OUT(SUB(ADD(P(i), s), K(n + 1)));
    OUT(SUB(p, K(1)));
}
static void b_dbv(pxl_ad_graph *g, int n) {
    const double h = 1.0 / (n + 1);
    for (int i = 1; i <= n; i++) {
        const double t = i * h;
        pxl_ad_value v = MUL(K(2), P(i - 1));
        if (i > 1) v = SUB(v, P(i - 2));
        if (i < n) v = SUB(v, P(i));
        OUT(ADD(v, MUL(K(h * h / 2), pxl_ad_powi(g, ADD(P(i - 1), K(t + 1)), 3))));
    }
}
static void s_dbv(double *x, int n) {
    const double h = 1.0 / (n + 1);
    for (int i = 1; i <= n; i++) x[i - 1] = i * h * (i * h - 1);
}
static void b_die(pxl_ad_graph *g, int n) {
    const double h = 1.0 / (n + 1);
    for (int i = 1; i <= n; i++) {
        const double ti = i * h;
        pxl_ad_value a = K(0), b = K(0);
        for (int j = 1; j <= n; j++) {
            const double tj = j * h;
            pxl_ad_value c = pxl_ad_powi(g, ADD(P(j - 1), K(tj + 1)), 3);
            if (j <= i) a = ADD(a, MUL(K(tj), c));
            else b = ADD(b, MUL(K(1 - tj), c));
        }
        OUT(ADD(P(i - 1), MUL(K(h / 2), ADD(MUL(K(1 - ti), a), MUL(K(ti), b)))));
    }
}
static void b_btri(pxl_ad_graph *g, int n) {
    for (int i = 0; i < n; i++) {
        pxl_ad_value v = ADD(MUL(SUB(K(3), MUL(K(2), P(i))), P(i)), K(1));
        if (i > 0) v = SUB(v, P(i - 1));
        if (i < n - 1) v = SUB(v, MUL(K(2), P(i + 1)));
        OUT(v);
    }
}
static void s_minus1(double *x, int n) {
    for (int i = 0; i < n; i++) x[i] = -1;
}
static void b_bband(pxl_ad_graph *g, int n) {
    for (int i = 0; i < n; i++) {
        pxl_ad_value v = ADD(MUL(P(i), ADD(K(2), MUL(K(5), SQ(P(i))))), K(1));
        for (int j = i - 5 < 0 ? 0 : i - 5; j <= (i + 1 < n - 1 ? i + 1 : n - 1); j++)
            if (j != i) v = SUB(v, MUL(P(j), ADD(K(1), P(j))));
        OUT(v);
    }
}
static void b_linear_full(pxl_ad_graph *g, int n) {
    const int m = 2 * n;
    pxl_ad_value s = K(0);
    for (int j = 0; j < n; j++) s = ADD(s, P(j));
    for (int i = 0; i < n; i++) OUT(SUB(SUB(P(i), MUL(K(2.0 / m), s)), K(1)));
    for (int i = n; i < m; i++) OUT(SUB(MUL(K(-2.0 / m), s), K(1)));
}
static void b_linear_rank1(pxl_ad_graph *g, int n) {
    const int m = 2 * n;
    pxl_ad_value s = K(0);
    for (int j = 1; j <= n; j++) s = ADD(s, MUL(K(j), P(j - 1)));
    for (int i = 1; i <= m; i++) OUT(SUB(MUL(K(i), s), K(1)));
}
static void b_linear_rank1z(pxl_ad_graph *g, int n) {
    const int m = 2 * n;
    pxl_ad_value s = K(0);
    for (int j = 2; j <= n - 1; j++) s = ADD(s, MUL(K(j), P(j - 1)));
    OUT(ADD(K(-1), MUL(K(0), P(0))));
    for (int i = 2; i <= m - 1; i++) OUT(SUB(MUL(K(i - 1), s), K(1)));
    OUT(ADD(K(-1), MUL(K(0), P(n - 1))));
}
static void b_chebyquad(pxl_ad_graph *g, int n) {
    for (int i = 1; i <= n; i++) {
        pxl_ad_value s = K(0);
        for (int j = 0; j < n; j++) {
            pxl_ad_value y = SUB(MUL(K(2), P(j)), K(1)), t0 = K(1), t1 = y;
            for (int k = 2; k <= i; k++) {
                pxl_ad_value t2 = SUB(MUL(MUL(K(2), y), t1), t0);
                t0 = t1;
                t1 = t2;
            }
            s = ADD(s, t1);
        }
        const double integral = i % 2 ? 0 : -1.0 / ((double)i * i - 1);
        OUT(SUB(MUL(K(1.0 / n), s), K(integral)));
    }
}
static void s_chebyquad(double *x, int n) {
    for (int j = 1; j <= n; j++) x[j - 1] = (double)j / (n + 1);
}

static void test_mgh(void) {
    /* f* from More, Garbow and Hillstrom, "Testing unconstrained optimization software", ACM TOMS 7 (1981),
       given there to 6 digits: compared with a relative tolerance of 1e-5 (1e-4 for the ones printed with
       fewer); f* = 0 problems must reach F <= 1e-10 (Powell singular, whose minimum is singular, 1e-9 is
       asked by MINPACK's own tests too). Where a start leads to a local minimum the paper lists, both are
       accepted (Freudenstein-Roth: 48.9842; Biggs EXP6 with m = 13: 5.65565e-3; trigonometric n = 10:
       2.79506e-5; Brown almost-linear may end at F = 1 for even n, not for n = 10). */
    static const mgh set[] = {
        {"1 Rosenbrock", 2, b_rosenbrock, s_rosenbrock, {0, -1}, 1e-10},
        {"2 Freudenstein-Roth", 2, b_freudenstein, s_freudenstein, {0, 48.9842536}, 1e-6},
        {"3 Powell badly scaled", 2, b_powell_bs, s_powell_bs, {0, -1}, 1e-10},
        {"4 Brown badly scaled", 2, b_brown_bs, s_ones, {0, -1}, 1e-10},
        {"5 Beale", 2, b_beale, s_ones, {0, -1}, 1e-10},
        {"6 Jennrich-Sampson m=10", 2, b_jennrich, s_jennrich, {124.362, -1}, 1e-5},
        {"7 helical valley", 3, b_helical, s_helical, {0, -1}, 1e-10},
        {"8 Bard", 3, b_bard, s_ones, {8.21487e-3, -1}, 1e-5},
        {"9 Gaussian", 3, b_gaussian, s_gaussian, {1.12793e-8, -1}, 1e-5},
        {"10 Meyer", 3, b_meyer, s_meyer, {87.9458, -1}, 1e-5},
        {"11 Gulf R&D m=99", 3, b_gulf, s_gulf, {0, -1}, 1e-10},
        {"12 Box 3-D m=10", 3, b_box3d, s_box3d, {0, -1}, 1e-10},
        {"13 Powell singular", 4, b_powell_singular, s_powell_singular, {0, -1}, 1e-10},
        {"14 Wood", 4, b_wood, s_wood, {0, -1}, 1e-10},
        {"15 Kowalik-Osborne", 4, b_kowalik, s_kowalik, {3.07505e-4, -1}, 1e-5},
        {"16 Brown-Dennis m=20", 4, b_brown_dennis, s_brown_dennis, {85822.2, -1}, 1e-5},
        {"17 Osborne 1", 5, b_osborne1, s_osborne1, {5.46489e-5, -1}, 1e-5},
        {"18 Biggs EXP6 m=13", 6, b_biggs, s_biggs, {0, 5.65565e-3}, 1e-5},
        {"19 Osborne 2", 11, b_osborne2, s_osborne2, {4.01377e-2, -1}, 1e-5},
        {"20 Watson n=6", 6, b_watson, s_zeros, {2.28767e-3, -1}, 1e-5},
        {"20 Watson n=9", 9, b_watson, s_zeros, {1.39976e-6, -1}, 1e-5},
        {"21 extended Rosenbrock n=10", 10, b_rosenbrock, s_rosenbrock, {0, -1}, 1e-10},
        {"22 extended Powell n=8", 8, b_powell_singular, s_powell_singular, {0, -1}, 1e-10},
        {"23 penalty I n=4", 4, b_penalty1, s_iota, {2.24997e-5, -1}, 1e-5},
        {"23 penalty I n=10", 10, b_penalty1, s_iota, {7.08765e-5, -1}, 1e-5},
        {"24 penalty II n=4", 4, b_penalty2, s_half, {9.37629e-6, -1}, 1e-5},
        {"24 penalty II n=10", 10, b_penalty2, s_half, {2.93660e-4, -1}, 1e-5},
        {"25 variably dimensioned n=10", 10, b_vardim, s_vardim, {0, -1}, 1e-10},
        {"26 trigonometric n=10", 10, b_trig, s_trig, {0, 2.79506e-5}, 1e-5},
        {"27 Brown almost-linear n=10", 10, b_brown_al, s_half, {0, 1}, 1e-10},
        {"28 discrete BV n=10", 10, b_dbv, s_dbv, {0, -1}, 1e-10},
        {"29 discrete integral n=10", 10, b_die, s_dbv, {0, -1}, 1e-10},
        {"30 Broyden tridiagonal n=10", 10, b_btri, s_minus1, {0, -1}, 1e-10},
        {"31 Broyden banded n=10", 10, b_bband, s_minus1, {0, -1}, 1e-10},
        {"32 linear full rank n=5 m=10", 5, b_linear_full, s_ones, {5, -1}, 1e-10},
        {"33 linear rank 1 n=5 m=10", 5, b_linear_rank1, s_ones, {90.0 / 42, -1}, 1e-10},
        {"34 linear rank 1 zero n=5 m=10", 5, b_linear_rank1z, s_ones, {124.0 / 34, -1}, 1e-10},
        {"35 Chebyquad n=8", 8, b_chebyquad, s_chebyquad, {3.51687e-3, -1}, 1e-5},
        {"35 Chebyquad n=7", 7, b_chebyquad, s_chebyquad, {0, -1}, 1e-10},
    };
    for (size_t t = 0; t < sizeof set / sizeof set[0]; t++) {
        const mgh *q = &set[t];
        pxl_ad_graph *g = new_graph();
        q->build(g, q->n);
        pxl_ad_problem *pb = new_problem((size_t)q->n);
        CHECK_MSG(pxl_ad_problem_add_traced(pb, g, NULL) == PXL_OK, "%s: %s", q->name, pxl_ctx_error(g_ctx));
        pxl_ad_graph_free(g);
        double x[16];
        q->start(x, q->n);
        pxl_ad_solve_options o = tight();
        o.max_iterations = 5000;
        pxl_ad_solve_summary s;
        pxl_status st = pxl_ad_problem_solve(pb, x, &o, &s);
        CHECK_MSG(st == PXL_OK, "%s: %s", q->name, pxl_ctx_error(g_ctx));
        print_summary(q->name, &s);
        const double F = 2 * s.final_cost;
        int ok = 0;
        for (int a = 0; a < 2; a++) {
            const double f = q->fstar[a];
            if (f < 0) continue;
            if (f == 0) ok |= F <= q->rtol;
            else ok |= fabs(F - f) <= q->rtol * f;
        }
        CHECK_MSG(ok, "%s: F = %.9g, f* = %.9g (or %.9g)", q->name, F, q->fstar[0], q->fstar[1]);
        CHECK(s.termination != PXL_AD_NO_CONVERGENCE && s.termination != PXL_AD_FAILURE);
        pxl_ad_problem_free(pb);
    }
}

#undef G

/* ---- bundle adjustment ------------------------------------------------------ */

enum { BA_MAX_CAMS = 8, BA_MAX_POINTS = 200, BA_MAX_NP = 6 * BA_MAX_CAMS + 3 * BA_MAX_POINTS };

/* Projection of point X (slots 6..8) by camera (angle-axis w: slots 0..2, t:
 * 3..5): Xc = R(w) X + t with Rodrigues' formula; residuals Xc.x / Xc.z - u,
 * Xc.y / Xc.z - v with (u, v) the input columns. */
static pxl_ad_program *ba_program(void) {
    pxl_ad_graph *g = new_graph();
    pxl_ad_value w[3], t[3], X[3];
    for (int i = 0; i < 3; i++) {
        w[i] = pxl_ad_param(g, i);
        t[i] = pxl_ad_param(g, 3 + i);
        X[i] = pxl_ad_param(g, 6 + i);
    }
    pxl_ad_value th2 = pxl_ad_add(g, pxl_ad_add(g, pxl_ad_mul(g, w[0], w[0]), pxl_ad_mul(g, w[1], w[1])),
                                  pxl_ad_mul(g, w[2], w[2]));
    pxl_ad_value th = pxl_ad_sqrt(g, th2);
    pxl_ad_value c = pxl_ad_cos(g, th), sth = pxl_ad_div(g, pxl_ad_sin(g, th), th);
    pxl_ad_value k1 = pxl_ad_div(g, pxl_ad_sub(g, pxl_ad_const(g, 1), c), th2);
    pxl_ad_value wx = pxl_ad_add(g, pxl_ad_add(g, pxl_ad_mul(g, w[0], X[0]), pxl_ad_mul(g, w[1], X[1])),
                                 pxl_ad_mul(g, w[2], X[2]));
    pxl_ad_value cr[3] = {pxl_ad_sub(g, pxl_ad_mul(g, w[1], X[2]), pxl_ad_mul(g, w[2], X[1])),
                          pxl_ad_sub(g, pxl_ad_mul(g, w[2], X[0]), pxl_ad_mul(g, w[0], X[2])),
                          pxl_ad_sub(g, pxl_ad_mul(g, w[0], X[1]), pxl_ad_mul(g, w[1], X[0]))};
    pxl_ad_value xc[3];
    for (int i = 0; i < 3; i++)
        xc[i] = pxl_ad_add(g, pxl_ad_add(g, pxl_ad_add(g, pxl_ad_mul(g, X[i], c), pxl_ad_mul(g, cr[i], sth)),
                                         pxl_ad_mul(g, w[i], pxl_ad_mul(g, wx, k1))),
                           t[i]);
    CHECK(pxl_ad_output(g, pxl_ad_sub(g, pxl_ad_div(g, xc[0], xc[2]), pxl_ad_input(g, 0))) == PXL_OK);
    CHECK(pxl_ad_output(g, pxl_ad_sub(g, pxl_ad_div(g, xc[1], xc[2]), pxl_ad_input(g, 1))) == PXL_OK);
    return compile_free(g);
}

static void rodrigues(const double *w, const double *X, double *out) {
    const double th2 = w[0] * w[0] + w[1] * w[1] + w[2] * w[2], th = sqrt(th2);
    const double c = cos(th), s = sin(th) / th, k = (1 - c) / th2;
    const double wx = w[0] * X[0] + w[1] * X[1] + w[2] * X[2];
    const double cr[3] = {w[1] * X[2] - w[2] * X[1], w[2] * X[0] - w[0] * X[2], w[0] * X[1] - w[1] * X[0]};
    for (int i = 0; i < 3; i++) out[i] = X[i] * c + cr[i] * s + w[i] * wx * k;
}

static double urand(uint64_t *st) { return (double)(test_rng(st) >> 11) / 9007199254740992.0 * 2 - 1; }

static void test_bundle(int n_cams, int n_points, const pxl_ad_linear_solver *solvers, size_t n_solvers) {
    const int n_par = 6 * n_cams + 3 * n_points;
    static double truth[BA_MAX_NP], start[BA_MAX_NP], data[2 * BA_MAX_CAMS * BA_MAX_POINTS];
    static uint32_t idx[9 * BA_MAX_CAMS * BA_MAX_POINTS];
    uint64_t rs = 42;
    for (int c = 0; c < n_cams; c++) {
        double *cam = truth + 6 * c;
        for (int i = 0; i < 3; i++) cam[i] = 0.15 * urand(&rs);
        cam[3] = 1.5 * urand(&rs);
        cam[4] = 0.5 * urand(&rs);
        cam[5] = 5 + 0.5 * urand(&rs);
    }
    for (int p = 0; p < n_points; p++)
        for (int i = 0; i < 3; i++) truth[6 * n_cams + 3 * p + i] = urand(&rs);
    size_t n_obs = 0;
    for (int c = 0; c < n_cams; c++)
        for (int p = 0; p < n_points; p++) {
            double xc[3];
            rodrigues(truth + 6 * c, truth + 6 * n_cams + 3 * p, xc);
            for (int i = 0; i < 3; i++) xc[i] += truth[6 * c + 3 + i];
            data[2 * n_obs] = xc[0] / xc[2];
            data[2 * n_obs + 1] = xc[1] / xc[2];
            for (int i = 0; i < 6; i++) idx[9 * n_obs + (size_t)i] = (uint32_t)(6 * c + i);
            for (int i = 0; i < 3; i++) idx[9 * n_obs + 6 + (size_t)i] = (uint32_t)(6 * n_cams + 3 * p + i);
            n_obs++;
        }
    for (int j = 0; j < n_par; j++) {
        const int cam = j < 6 * n_cams, rot = cam && j % 6 < 3;
        start[j] = truth[j] + (j < 6 ? 0 : rot ? 0.02 : 0.1) * urand(&rs);
    }
    /* gauge: camera 0 and the x of point 0 held constant */
    const size_t p0x = 6 * (size_t)n_cams;
    start[p0x] = truth[p0x];
    pxl_ad_program *prog = ba_program();
    pxl_ad_problem *pb = new_problem((size_t)n_par);
    CHECK(pxl_ad_problem_add(pb, prog, idx, data, n_obs, NULL) == PXL_OK);
    for (size_t j = 0; j < 6; j++) CHECK(pxl_ad_problem_set_constant(pb, j, 1) == PXL_OK);
    CHECK(pxl_ad_problem_set_constant(pb, p0x, 1) == PXL_OK);
    static double x[BA_MAX_NP], first[BA_MAX_NP];
    const size_t bytes = (size_t)n_par * sizeof(double);
    int have_first = 0;
    for (size_t k = 0; k < n_solvers; k++) {
        memcpy(x, start, bytes);
        pxl_ad_solve_options o;
        memset(&o, 0, sizeof o);
        o.linear_solver = solvers[k];
        o.function_tolerance = 1e-14;
        o.parameter_tolerance = 1e-12;
        o.gradient_tolerance = 1e-16;
        o.max_iterations = 200;
        pxl_ad_solve_summary s;
        pxl_status st = pxl_ad_problem_solve(pb, x, &o, &s);
        char name[64];
        snprintf(name, sizeof name, "bundle %dx%d %s", n_cams, n_points, pxl_ad_linear_solver_name(solvers[k]));
        if (st == PXL_ERR_UNSUPPORTED) {
            printf("%s: skipped (%s)\n", name, pxl_ctx_error(g_ctx));
            continue;
        }
        CHECK_MSG(st == PXL_OK, "%s: %s", name, pxl_ctx_error(g_ctx));
        print_summary(name, &s);
        double err = 0;
        for (int j = 0; j < n_par; j++) err = fmax(err, fabs(x[j] - truth[j]));
        printf("  max |x - truth| %.3g, %zu residuals, %zu free parameters, eval %.3f s, linear %.3f s\n", err,
               s.n_residuals, s.n_free_params, s.eval_seconds, s.linear_solver_seconds);
        CHECK_MSG(s.final_cost < 1e-20 && err < 1e-8, "%s: cost %g, error %g", name, s.final_cost, err);
        CHECK(s.n_free_params == (size_t)n_par - 7 && s.n_residuals == 2 * n_obs);
        if (solvers[k] == PXL_AD_LINEAR_AUTO)
            CHECK(s.linear_solver == (n_par - 7 > 512 ? PXL_AD_SPARSE_CHOLESKY : PXL_AD_DENSE_CHOLESKY));
        /* every solver: the same solution */
        if (!have_first) {
            memcpy(first, x, bytes);
            have_first = 1;
        }
        double diff = 0;
        for (int j = 0; j < n_par; j++) diff = fmax(diff, fabs(x[j] - first[j]));
        CHECK_MSG(diff < 1e-10, "%s: %g from the first solver's solution", name, diff);
        /* the same run on one thread: the same bits */
        if (solvers[k] == PXL_AD_CGNR || solvers[k] == PXL_AD_SPARSE_CHOLESKY) {
            static double y[BA_MAX_NP];
            memcpy(y, start, bytes);
            o.eval.serial = 1;
            pxl_ad_solve_summary s1;
            CHECK(pxl_ad_problem_solve(pb, y, &o, &s1) == PXL_OK);
            CHECK(memcmp(x, y, bytes) == 0 && s1.iterations == s.iterations);
        }
    }
    pxl_ad_problem_free(pb);
    pxl_ad_program_free(prog);
}

int main(void) {
    g_ctx = test_ctx(PXL_BACKEND_CPU, 0);
    if (!g_ctx) {
        fprintf(stderr, "test_ad_problem: no context\n");
        return 1;
    }
    test_grouping();
    test_losses();
    test_corrector();
    test_outliers();
    test_bounds_constant();
    test_gauss_newton();
    test_nan_step();
    test_time_progress();
    test_covariance();
    test_minimize();
    test_mgh();
    {
        static const pxl_ad_linear_solver big[] = {PXL_AD_LINEAR_AUTO, PXL_AD_DENSE_CHOLESKY, PXL_AD_SPARSE_CHOLESKY,
                                                   PXL_AD_CGNR};
        static const pxl_ad_linear_solver small[] = {PXL_AD_DENSE_CHOLESKY, PXL_AD_DENSE_QR, PXL_AD_SPARSE_CHOLESKY,
                                                     PXL_AD_CGNR, PXL_AD_LINEAR_AUTO};
        /* 8 cameras, 200 points (641 free parameters: AUTO takes the sparse solver); QR on a smaller one */
        test_bundle(8, 200, big, sizeof big / sizeof big[0]);
        test_bundle(4, 30, small, sizeof small / sizeof small[0]);
    }
    pxl_ctx_free(g_ctx);
    return test_result("test_ad_problem");
}
