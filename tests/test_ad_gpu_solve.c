/*
 * Levenberg-Marquardt on the GPU (src/ad/gpu_solve.c, ad_gpu_lm) against the
 * CPU's dense solver (pxl_ad_solve, f64): a curve fit with many instances, an
 * ARAP deformation of a grid with handles held constant (two groups: edges
 * and a soft anchor, then a Huber-robust third group), box bounds, the
 * refusal on a CPU context, and the robust losses on an outlier line fit.
 * The GPU works in f32: solutions agree to about 1e-3 of their scale and
 * final costs to a few parts in 1e3 (stated per check).
 */
#include "check.h"
#include "test_ctx.h"

#include "ad/ad_internal.h"
#include "ad_arap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static pxl_ctx *g_gpu, *g_cpu;

/* y = a exp(-b x) + c at 5000 points, start far from the truth */
static void test_curve(void) {
    pxl_ad_graph *g;
    pxl_ad_graph_create(g_cpu, &g);
    pxl_ad_value a = pxl_ad_param(g, 0), b = pxl_ad_param(g, 1), c = pxl_ad_param(g, 2);
    pxl_ad_value x = pxl_ad_input(g, 0), y = pxl_ad_input(g, 1);
    pxl_ad_output(g, pxl_ad_sub(g, pxl_ad_add(g, pxl_ad_mul(g, a, pxl_ad_exp(g, pxl_ad_neg(g, pxl_ad_mul(g, b, x)))), c), y));
    pxl_ad_program *p = NULL;
    CHECK(pxl_ad_compile(g, &p) == PXL_OK);
    pxl_ad_graph_free(g);
    const size_t n = 5000;
    uint32_t *idx = malloc(n * 3 * sizeof *idx);
    double *in = malloc(n * 2 * sizeof *in);
    for (size_t i = 0; i < n; i++) {
        double xi = 4.0 * (double)i / (double)n;
        in[2 * i] = xi;
        in[2 * i + 1] = 2.5 * exp(-1.3 * xi) + 0.5 + 0.01 * sin(37.0 * xi);
        for (int j = 0; j < 3; j++) idx[i * 3 + (size_t)j] = (uint32_t)j;
    }
    double xg[3] = {1, 0.5, 0}, xc[3] = {1, 0.5, 0};
    ad_group_view gv = {p, idx, in, n, {PXL_AD_LOSS_NONE, 0}};
    pxl_ad_solve_summary sg, sc;
    pxl_status s = ad_gpu_lm(g_gpu, &gv, 1, 3, NULL, NULL, NULL, xg, NULL, &sg);
    CHECK_MSG(s == PXL_OK, "%s", pxl_ctx_error(g_gpu));
    CHECK(pxl_ad_solve(g_cpu, p, idx, in, n, xc, 3, NULL, &sc) == PXL_OK);
    fprintf(stderr, "curve: gpu %d iterations, cost %.6g -> %.6g (%s); cpu %d iterations, cost %.6g\n", sg.iterations,
            sg.initial_cost, sg.final_cost, pxl_ad_termination_name(sg.termination), sc.iterations, sc.final_cost);
    for (int j = 0; j < 3; j++) CHECK_MSG(fabs(xg[j] - xc[j]) < 2e-3, "param %d: gpu %.6g cpu %.6g", j, xg[j], xc[j]);
    CHECK(fabs(sg.final_cost - sc.final_cost) <= 1e-2 * sc.final_cost + 1e-6);
    CHECK(sg.termination != PXL_AD_FAILURE && sg.termination != PXL_AD_NO_CONVERGENCE);

    /* bounds: b held to [0, 1], so the fit ends on b = 1 */
    double lo[3] = {-HUGE_VAL, 0, -HUGE_VAL}, hi[3] = {HUGE_VAL, 1, HUGE_VAL}, xb[3] = {1, 0.5, 0};
    s = ad_gpu_lm(g_gpu, &gv, 1, 3, NULL, lo, hi, xb, NULL, &sg);
    CHECK_MSG(s == PXL_OK, "%s", pxl_ctx_error(g_gpu));
    CHECK_MSG(fabs(xb[1] - 1.0) < 1e-6, "bounded b = %.9g", xb[1]);
    CHECK(sg.final_cost > sc.final_cost);

    /* constant c = 0.5 (its true value): a and b still found */
    unsigned char cst[3] = {0, 0, 1};
    double xk[3] = {1, 0.5, 0.5};
    s = ad_gpu_lm(g_gpu, &gv, 1, 3, cst, NULL, NULL, xk, NULL, &sg);
    CHECK_MSG(s == PXL_OK, "%s", pxl_ctx_error(g_gpu));
    CHECK(xk[2] == 0.5);
    CHECK_MSG(fabs(xk[0] - 2.5) < 1e-2 && fabs(xk[1] - 1.3) < 1e-2, "a %.6g b %.6g", xk[0], xk[1]);

    /* a CPU context refuses */
    CHECK(ad_gpu_lm(g_cpu, &gv, 1, 3, NULL, NULL, NULL, xk, NULL, &sg) == PXL_ERR_UNSUPPORTED);
    free(idx);
    free(in);
    pxl_ad_program_free(p);
}

/* ARAP on an s x s grid in the plane z = 0 (edges both ways), the left
 * column held in place, the right column moved up and in; plus a second
 * group: a weak anchor residual 0.01 (p - p_rest) on every vertex. */
static void test_arap_grid(void) {
    const int s = 8;
    const size_t nv = (size_t)(s * s), n = nv * 6;
    pxl_ad_program *ap = arap_program(g_cpu);
    pxl_ad_graph *g;
    pxl_ad_graph_create(g_cpu, &g);
    for (int c = 0; c < 3; c++)
        pxl_ad_output(g, pxl_ad_mul(g, pxl_ad_const(g, 0.01), pxl_ad_sub(g, pxl_ad_param(g, c), pxl_ad_input(g, c))));
    pxl_ad_program *anchor = NULL;
    CHECK(pxl_ad_compile(g, &anchor) == PXL_OK);
    pxl_ad_graph_free(g);
    double *rest = malloc(nv * 3 * sizeof *rest);
    for (int r = 0; r < s; r++)
        for (int c = 0; c < s; c++) {
            size_t v = (size_t)(r * s + c);
            rest[3 * v] = c;
            rest[3 * v + 1] = r;
            rest[3 * v + 2] = 0;
        }
    size_t ne = 0, cap = (size_t)(4 * s * s);
    uint32_t *eidx = malloc(cap * 9 * sizeof *eidx);
    double *ein = malloc(cap * 3 * sizeof *ein);
    for (int r = 0; r < s; r++)
        for (int c = 0; c < s; c++) {
            int nb[2][2] = {{r, c + 1}, {r + 1, c}};
            for (int q = 0; q < 2; q++) {
                if (nb[q][0] >= s || nb[q][1] >= s) continue;
                size_t u = (size_t)(r * s + c), w = (size_t)(nb[q][0] * s + nb[q][1]);
                size_t ends[2][2] = {{u, w}, {w, u}};
                for (int d = 0; d < 2; d++) {
                    size_t i = ends[d][0], j = ends[d][1];
                    for (int t = 0; t < 3; t++) {
                        eidx[ne * 9 + (size_t)t] = (uint32_t)(6 * i + (size_t)t);
                        eidx[ne * 9 + 3 + (size_t)t] = (uint32_t)(6 * j + (size_t)t);
                        eidx[ne * 9 + 6 + (size_t)t] = (uint32_t)(6 * i + 3 + (size_t)t);
                        ein[ne * 3 + (size_t)t] = rest[3 * i + (size_t)t] - rest[3 * j + (size_t)t];
                    }
                    ne++;
                }
            }
        }
    uint32_t *aidx = malloc(nv * 3 * sizeof *aidx);
    for (size_t v = 0; v < nv; v++)
        for (int t = 0; t < 3; t++) aidx[v * 3 + (size_t)t] = (uint32_t)(6 * v + (size_t)t);
    double *x0 = calloc(n, sizeof *x0);
    unsigned char *cst = calloc(n, 1);
    for (size_t v = 0; v < nv; v++) {
        int c = (int)(v % (size_t)s);
        for (int t = 0; t < 3; t++) x0[6 * v + (size_t)t] = rest[3 * v + (size_t)t];
        if (c == 0 || c == s - 1) {
            for (int t = 0; t < 3; t++) cst[6 * v + (size_t)t] = 1;
            if (c == s - 1) {
                x0[6 * v] -= 1.0;
                x0[6 * v + 2] += 2.0;
            }
        }
    }
    ad_group_view gv[2] = {{ap, eidx, ein, ne, {PXL_AD_LOSS_NONE, 0}}, {anchor, aidx, rest, nv, {PXL_AD_LOSS_NONE, 0}}};
    double *xg = malloc(n * sizeof *xg);
    memcpy(xg, x0, n * sizeof *xg);
    pxl_ad_solve_summary sg;
    pxl_ad_solve_options o;
    memset(&o, 0, sizeof o);
    o.max_iterations = 200;
    pxl_status st = ad_gpu_lm(g_gpu, gv, 2, n, cst, NULL, NULL, xg, &o, &sg);
    CHECK_MSG(st == PXL_OK, "%s", pxl_ctx_error(g_gpu));
    fprintf(stderr, "arap grid: %zu edges, gpu %d iterations (%d accepted), cost %.6g -> %.6g (%s: %s)\n", ne,
            sg.iterations, sg.successful_steps, sg.initial_cost, sg.final_cost,
            pxl_ad_termination_name(sg.termination), sg.message);
    CHECK(sg.final_cost < 0.2 * sg.initial_cost);
    CHECK(sg.termination == PXL_AD_CONVERGED_FUNCTION || sg.termination == PXL_AD_CONVERGED_GRADIENT ||
          sg.termination == PXL_AD_CONVERGED_PARAMETER);
    for (size_t j = 0; j < n; j++)
        if (cst[j]) CHECK(xg[j] == (double)(float)x0[j]);
    /* the same problem in f64 on the CPU through one residual function
     * evaluation: the GPU's final cost is a minimum of the same cost */
    /* the same problem through the problem API: on the GPU (AUTO resolves to
     * CGNR, the solve stays on the GPU) and on the CPU (sparse Cholesky, f64) */
    pxl_ad_problem *pb = NULL;
    CHECK(pxl_ad_problem_create(g_gpu, n, &pb) == PXL_OK);
    CHECK(pxl_ad_problem_add(pb, ap, eidx, ein, ne, NULL) == PXL_OK);
    CHECK(pxl_ad_problem_add(pb, anchor, aidx, rest, nv, NULL) == PXL_OK);
    for (size_t j = 0; j < n; j++)
        if (cst[j]) CHECK(pxl_ad_problem_set_constant(pb, j, 1) == PXL_OK);
    double *xp = malloc(n * sizeof *xp), *xs = malloc(n * sizeof *xs);
    memcpy(xp, x0, n * sizeof *xp);
    memcpy(xs, x0, n * sizeof *xs);
    pxl_ad_solve_options og = o, oc = o;
    og.eval.backend = PXL_AD_GPU;
    og.linear_solver = PXL_AD_CGNR;
    oc.linear_solver = PXL_AD_SPARSE_CHOLESKY;
    pxl_ad_solve_summary sp, sc;
    st = pxl_ad_problem_solve(pb, xp, &og, &sp);
    CHECK_MSG(st == PXL_OK, "%s", pxl_ctx_error(g_gpu));
    CHECK(sp.linear_solver == PXL_AD_CGNR);
    st = pxl_ad_problem_solve(pb, xs, &oc, &sc);
    CHECK_MSG(st == PXL_OK, "%s", pxl_ctx_error(g_gpu));
    fprintf(stderr, "arap grid, problem API: gpu %d iterations, cost %.6g; cpu sparse Cholesky %d iterations, cost %.6g\n",
            sp.iterations, sp.final_cost, sc.iterations, sc.final_cost);
    CHECK_MSG(fabs(sp.final_cost - sc.final_cost) <= 1e-3 * sc.final_cost, "gpu %.9g cpu %.9g", sp.final_cost,
              sc.final_cost);
    double dmax = 0;
    for (size_t v = 0; v < nv; v++)
        for (int t = 0; t < 3; t++) dmax = fmax(dmax, fabs(xp[6 * v + (size_t)t] - xs[6 * v + (size_t)t]));
    CHECK_MSG(dmax < 1e-2, "positions differ by %.3g between the GPU and CPU solves", dmax);
    /* a third group: the anchors again, with a Huber loss small enough to be
     * on its outlier side at the moved handles (3 outputs per instance): the
     * GPU and the CPU agree on the robust solve too */
    pxl_ad_block_options bo;
    memset(&bo, 0, sizeof bo);
    bo.loss.kind = PXL_AD_LOSS_HUBER;
    bo.loss.scale = 0.005;
    CHECK(pxl_ad_problem_add(pb, anchor, aidx, rest, nv, &bo) == PXL_OK);
    CHECK(pxl_ad_problem_get_info(pb).n_groups == 3);
    memcpy(xp, x0, n * sizeof *xp);
    memcpy(xs, x0, n * sizeof *xs);
    st = pxl_ad_problem_solve(pb, xp, &og, &sp);
    CHECK_MSG(st == PXL_OK, "%s", pxl_ctx_error(g_gpu));
    st = pxl_ad_problem_solve(pb, xs, &oc, &sc);
    CHECK_MSG(st == PXL_OK, "%s", pxl_ctx_error(g_gpu));
    fprintf(stderr, "arap grid + huber anchors: gpu %d iterations, cost %.9g (%s); cpu %d iterations, cost %.9g\n",
            sp.iterations, sp.final_cost, pxl_ad_termination_name(sp.termination), sc.iterations, sc.final_cost);
    CHECK_MSG(fabs(sp.final_cost - sc.final_cost) <= 1e-3 * sc.final_cost, "gpu %.9g cpu %.9g", sp.final_cost,
              sc.final_cost);
    dmax = 0;
    for (size_t j = 0; j < n; j++) dmax = fmax(dmax, fabs(xp[j] - xs[j]));
    CHECK_MSG(dmax < 1e-2, "robust: parameters differ by %.3g between the GPU and CPU solves", dmax);
    pxl_ad_problem_free(pb);
    free(xp);
    free(xs);
    double *res = malloc(ne * 3 * sizeof *res), *ares = malloc(nv * 3 * sizeof *ares);
    CHECK(pxl_ad_eval(g_cpu, ap, xg, n, eidx, ein, ne, res, NULL, NULL) == PXL_OK);
    CHECK(pxl_ad_eval(g_cpu, anchor, xg, n, aidx, rest, nv, ares, NULL, NULL) == PXL_OK);
    double cost = 0;
    for (size_t i = 0; i < ne * 3; i++) cost += 0.5 * res[i] * res[i];
    for (size_t i = 0; i < nv * 3; i++) cost += 0.5 * ares[i] * ares[i];
    CHECK_MSG(fabs(cost - sg.final_cost) <= 1e-3 * cost, "f64 cost at the GPU's solution %.9g, GPU %.9g", cost,
              sg.final_cost);
    free(res);
    free(ares);
    free(xg);
    free(x0);
    free(cst);
    free(aidx);
    free(eidx);
    free(ein);
    free(rest);
    pxl_ad_program_free(ap);
    pxl_ad_program_free(anchor);
}

/* y = 2 x + 1 at N points, every fifth one a gross outlier (as in
 * test_ad_problem.c's test_outliers) */
enum { LN = 400 };
static void line_data(double *data, uint32_t *idx) {
    for (int i = 0; i < LN; i++) {
        const double x = 10.0 * i / LN;
        data[2 * i] = x;
        data[2 * i + 1] = 2 * x + 1 + (i % 5 == 3 ? 15 + 0.05 * i : 0.01 * ((i * 7) % 5 - 2));
        idx[2 * i] = 0;
        idx[2 * i + 1] = 1;
    }
}

static pxl_ad_program *line_program(void) {
    pxl_ad_graph *g;
    pxl_ad_graph_create(g_cpu, &g);
    pxl_ad_value ax = pxl_ad_mul(g, pxl_ad_param(g, 0), pxl_ad_input(g, 0));
    pxl_ad_output(g, pxl_ad_sub(g, pxl_ad_add(g, ax, pxl_ad_param(g, 1)), pxl_ad_input(g, 1)));
    pxl_ad_program *p = NULL;
    CHECK(pxl_ad_compile(g, &p) == PXL_OK);
    pxl_ad_graph_free(g);
    return p;
}

/* Solves pb from x0 on the GPU (CGNR, GPU evaluation) and on the CPU (f64,
 * cpu_solver); checks that the solutions agree within tol (f32 against f64)
 * and the final costs within 1e-3 relative. Returns the GPU's solution in xg. */
static void gpu_vs_cpu(pxl_ad_problem *pb, const char *name, const double x0[2], pxl_ad_linear_solver cpu_solver,
                       double tol, double xg[2]) {
    pxl_ad_solve_options og, oc;
    memset(&og, 0, sizeof og);
    og.max_iterations = 200;
    og.function_tolerance = 1e-9;
    og.eval.backend = PXL_AD_GPU;
    og.linear_solver = PXL_AD_CGNR;
    memset(&oc, 0, sizeof oc);
    oc.max_iterations = 1000;
    oc.function_tolerance = 1e-15;
    oc.parameter_tolerance = 1e-15;
    oc.gradient_tolerance = 1e-15;
    oc.linear_solver = cpu_solver;
    double xc[2] = {x0[0], x0[1]};
    xg[0] = x0[0];
    xg[1] = x0[1];
    pxl_ad_solve_summary sg, sc;
    pxl_status st = pxl_ad_problem_solve(pb, xg, &og, &sg);
    CHECK_MSG(st == PXL_OK, "%s: %s", name, pxl_ctx_error(g_gpu));
    CHECK(sg.linear_solver == PXL_AD_CGNR);
    st = pxl_ad_problem_solve(pb, xc, &oc, &sc);
    CHECK_MSG(st == PXL_OK, "%s: %s", name, pxl_ctx_error(g_gpu));
    fprintf(stderr,
            "%s: gpu %d iterations, cost %.6g -> %.9g (%s), x %.7f %.7f; cpu %s %d iterations, cost %.9g, "
            "x %.7f %.7f\n",
            name, sg.iterations, sg.initial_cost, sg.final_cost, pxl_ad_termination_name(sg.termination), xg[0], xg[1],
            pxl_ad_linear_solver_name(cpu_solver), sc.iterations, sc.final_cost, xc[0], xc[1]);
    CHECK(sg.termination != PXL_AD_FAILURE && sg.termination != PXL_AD_NO_CONVERGENCE);
    CHECK_MSG(fabs(sg.final_cost - sc.final_cost) <= 1e-3 * sc.final_cost, "%s: final cost gpu %.9g cpu %.9g", name,
              sg.final_cost, sc.final_cost);
    for (int j = 0; j < 2; j++)
        CHECK_MSG(fabs(xg[j] - xc[j]) <= tol, "%s: x[%d] gpu %.9g cpu %.9g (tolerance %g)", name, j, xg[j], xc[j],
                  tol);
    /* the initial cost is the robust one: the CPU's evaluation at x0 */
    double c0 = 0;
    CHECK(pxl_ad_problem_evaluate(pb, x0, &c0, NULL, NULL, NULL) == PXL_OK);
    CHECK_MSG(fabs(sg.initial_cost - c0) <= 1e-5 * c0, "%s: initial cost gpu %.9g cpu %.9g", name, sg.initial_cost,
              c0);
}

/* Robust losses on the GPU: the outlier line fit with each of the five
 * losses against the CPU's f64 solve, and a group without a loss next to a
 * group with one. f32 against f64: slope and intercept within 2e-4 (the
 * inliers' noise is 1e-2 over 320 points: the f32 solutions' scatter is a
 * few 1e-6), final costs within 1e-3 relative. */
static void test_losses(void) {
    pxl_ad_program *p = line_program();
    double data[2 * LN];
    uint32_t idx[2 * LN];
    line_data(data, idx);
    static const pxl_ad_loss_kind kinds[] = {PXL_AD_LOSS_HUBER, PXL_AD_LOSS_SOFT_L1, PXL_AD_LOSS_CAUCHY,
                                             PXL_AD_LOSS_ARCTAN, PXL_AD_LOSS_TUKEY};
    static const char *const names[] = {"line: huber:0.1", "line: soft_l1:0.1", "line: cauchy:0.1",
                                        "line: arctan:0.1", "line: tukey:1"};
    for (int q = 0; q < 5; q++) {
        pxl_ad_problem *pb = NULL;
        CHECK(pxl_ad_problem_create(g_gpu, 2, &pb) == PXL_OK);
        pxl_ad_block_options bo;
        memset(&bo, 0, sizeof bo);
        bo.loss.kind = kinds[q];
        bo.loss.scale = kinds[q] == PXL_AD_LOSS_TUKEY ? 1 : 0.1;
        CHECK(pxl_ad_problem_add(pb, p, idx, data, LN, &bo) == PXL_OK);
        /* the redescending losses start near the inliers (as test_ad_problem.c) */
        const int near = kinds[q] == PXL_AD_LOSS_CAUCHY || kinds[q] == PXL_AD_LOSS_ARCTAN ||
                         kinds[q] == PXL_AD_LOSS_TUKEY;
        const double x0[2] = {near ? 2.2 : 1, near ? 1.5 : 0};
        double xg[2];
        gpu_vs_cpu(pb, names[q], x0, q % 2 ? PXL_AD_DENSE_CHOLESKY : PXL_AD_SPARSE_CHOLESKY, 2e-4, xg);
        CHECK_MSG(fabs(xg[0] - 2) < 0.02 && fabs(xg[1] - 1) < 0.05, "%s: the line not recovered: %g %g", names[q],
                  xg[0], xg[1]);
        pxl_ad_problem_free(pb);
    }
    /* two groups of one program: the inliers without a loss, every point
     * with Cauchy's; and the least-squares fit, pulled off by the outliers */
    double in_data[2 * LN];
    uint32_t in_idx[2 * LN];
    size_t n_in = 0;
    for (int i = 0; i < LN; i++) {
        if (i % 5 == 3) continue;
        in_data[2 * n_in] = data[2 * i];
        in_data[2 * n_in + 1] = data[2 * i + 1];
        in_idx[2 * n_in] = 0;
        in_idx[2 * n_in + 1] = 1;
        n_in++;
    }
    pxl_ad_problem *pb = NULL;
    CHECK(pxl_ad_problem_create(g_gpu, 2, &pb) == PXL_OK);
    pxl_ad_block_options bo;
    memset(&bo, 0, sizeof bo);
    bo.loss.kind = PXL_AD_LOSS_CAUCHY;
    bo.loss.scale = 0.1;
    CHECK(pxl_ad_problem_add(pb, p, in_idx, in_data, n_in, NULL) == PXL_OK);
    CHECK(pxl_ad_problem_add(pb, p, idx, data, LN, &bo) == PXL_OK);
    CHECK(pxl_ad_problem_get_info(pb).n_groups == 2);
    const double x0[2] = {1, 0};
    double xg[2];
    gpu_vs_cpu(pb, "line: no loss + cauchy:0.1", x0, PXL_AD_SPARSE_CHOLESKY, 2e-4, xg);
    CHECK(fabs(xg[0] - 2) < 0.02 && fabs(xg[1] - 1) < 0.05);
    /* fixed-order sums: a second solve gives the same bits */
    pxl_ad_solve_options og;
    memset(&og, 0, sizeof og);
    og.max_iterations = 200;
    og.function_tolerance = 1e-9;
    og.eval.backend = PXL_AD_GPU;
    og.linear_solver = PXL_AD_CGNR;
    double x2[2] = {x0[0], x0[1]};
    CHECK(pxl_ad_problem_solve(pb, x2, &og, NULL) == PXL_OK);
    CHECK(memcmp(x2, xg, sizeof x2) == 0);
    pxl_ad_problem_free(pb);
    /* a scale whose square is not a normal f32: refused on the GPU */
    CHECK(pxl_ad_problem_create(g_gpu, 2, &pb) == PXL_OK);
    bo.loss.kind = PXL_AD_LOSS_HUBER;
    bo.loss.scale = 1e-30;
    CHECK(pxl_ad_problem_add(pb, p, idx, data, LN, &bo) == PXL_OK);
    x2[0] = x0[0];
    x2[1] = x0[1];
    CHECK(pxl_ad_problem_solve(pb, x2, &og, NULL) == PXL_ERR_UNSUPPORTED);
    CHECK(strstr(pxl_ctx_error(g_gpu), "f32") != NULL);
    pxl_ad_problem_free(pb);
    CHECK(pxl_ad_problem_create(g_gpu, 2, &pb) == PXL_OK);
    CHECK(pxl_ad_problem_add(pb, p, idx, data, LN, NULL) == PXL_OK);
    /* without a loss the cost (2e4) is dominated by the outliers: f32 resolves
     * it to about 2e-3, which a 1e-3 move of the intercept does not change */
    gpu_vs_cpu(pb, "line: least squares", x0, PXL_AD_DENSE_CHOLESKY, 5e-3, xg);
    CHECK(fabs(xg[0] - 2) + fabs(xg[1] - 1) > 1);
    pxl_ad_problem_free(pb);
    pxl_ad_program_free(p);
}

int main(void) {
    g_gpu = test_gpu_ctx();
    if (!g_gpu) return PXL_SKIP;
    g_cpu = test_ctx(PXL_BACKEND_CPU, 0);
    test_curve();
    test_arap_grid();
    test_losses();
    pxl_ctx_free(g_gpu);
    pxl_ctx_free(g_cpu);
    if (g_failures) fprintf(stderr, "%d failures\n", g_failures);
    return g_failures ? 1 : 0;
}
