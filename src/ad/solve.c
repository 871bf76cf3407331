/*
 * Dense Levenberg-Marquardt over AD programs (pxl/ad.h): residuals and
 * Jacobian rows from pxl_ad_eval, normal equations summed in a fixed order,
 * a dense Cholesky factorisation, Marquardt's diagonal scaling and a
 * trust-region style update of the damping mu.
 */
#include "ad_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define LM_MIN_DIAG 1e-6
#define LM_MAX_DIAG 1e32
#define LM_MAX_MU 1e32
#define LM_MIN_RHO 1e-3

const char *pxl_ad_termination_name(pxl_ad_termination t) {
    switch (t) {
    case PXL_AD_CONVERGED_FUNCTION: return "CONVERGED_FUNCTION";
    case PXL_AD_CONVERGED_GRADIENT: return "CONVERGED_GRADIENT";
    case PXL_AD_CONVERGED_PARAMETER: return "CONVERGED_PARAMETER";
    case PXL_AD_NO_CONVERGENCE: return "NO_CONVERGENCE";
    case PXL_AD_FAILURE: return "FAILURE";
    }
    return "UNKNOWN";
}

/* 1/2 sum r^2; +inf when a residual is not finite. */
static double lm_cost(const double *r, size_t n) {
    double c = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(r[i])) return HUGE_VAL;
        c += r[i] * r[i];
    }
    return 0.5 * c;
}

/* H = J^T J (full, n x n) and g = J^T r, summed instance by instance, residual
 * by residual, slot by slot. Returns 0 when a Jacobian entry is not finite. */
static int lm_normal(const double *r, const double *jac, const uint32_t *pidx, size_t n_inst, size_t m, size_t k,
                     size_t n, double *H, double *g) {
    memset(H, 0, n * n * sizeof *H);
    memset(g, 0, n * sizeof *g);
    for (size_t i = 0; i < n_inst; i++) {
        const uint32_t *pi = pidx + i * k;
        for (size_t o = 0; o < m; o++) {
            const double *row = jac + (i * m + o) * k;
            const double ro = r[i * m + o];
            for (size_t a = 0; a < k; a++) {
                const double ja = row[a];
                if (!isfinite(ja)) return 0;
                if (ja == 0) continue;
                g[pi[a]] += ja * ro;
                double *h = H + (size_t)pi[a] * n;
                for (size_t b = 0; b < k; b++) h[pi[b]] += ja * row[b];
            }
        }
    }
    return 1;
}

/* In-place Cholesky A = L L^T of the lower triangle (row-major n x n); returns
 * 0 when a pivot is not positive and finite. */
static int lm_cholesky(double *A, size_t n) {
    for (size_t j = 0; j < n; j++) {
        double *aj = A + j * n;
        double d = aj[j];
        for (size_t p = 0; p < j; p++) d -= aj[p] * aj[p];
        if (!(d > 0) || !isfinite(d)) return 0;
        d = sqrt(d);
        aj[j] = d;
        for (size_t i = j + 1; i < n; i++) {
            double *ai = A + i * n;
            double s = ai[j];
            for (size_t p = 0; p < j; p++) s -= ai[p] * aj[p];
            ai[j] = s / d;
        }
    }
    return 1;
}

/* Solves L L^T x = b (x may alias b). */
static void lm_cholesky_solve(const double *L, size_t n, double *x) {
    for (size_t i = 0; i < n; i++) {
        double s = x[i];
        for (size_t p = 0; p < i; p++) s -= L[i * n + p] * x[p];
        x[i] = s / L[i * n + i];
    }
    for (size_t i = n; i-- > 0;) {
        double s = x[i];
        for (size_t p = i + 1; p < n; p++) s -= L[p * n + i] * x[p];
        x[i] = s / L[i * n + i];
    }
}

static double lm_norm2(const double *v, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += v[i] * v[i];
    return sqrt(s);
}

static double lm_norm_inf(const double *v, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s = fmax(s, fabs(v[i]));
    return s;
}

static pxl_status lm_solve(pxl_ctx *ctx, const pxl_ad_program *prog, const uint32_t *param_index,
                           const double *inputs, size_t n_instances, double *params, size_t n_params,
                           const pxl_ad_solve_options *opts, pxl_ad_solve_summary *summary) {
    static const char fn[] = "pxl_ad_solve";
    PXL_REQUIRE(ctx, fn, prog);
    PXL_REQUIRE(ctx, fn, params);
    const double t_start = pxl_time_now();
    pxl_ad_solve_options o;
    memset(&o, 0, sizeof o);
    if (opts) o = *opts;
    if (o.max_iterations < 0 || o.function_tolerance < 0 || o.gradient_tolerance < 0 ||
        o.parameter_tolerance < 0 || o.initial_mu < 0 || !isfinite(o.function_tolerance) ||
        !isfinite(o.gradient_tolerance) || !isfinite(o.parameter_tolerance) || !isfinite(o.initial_mu))
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: an option is negative or not finite", fn);
    const int max_it = o.max_iterations ? o.max_iterations : 100;
    const double ftol = o.function_tolerance > 0 ? o.function_tolerance : 1e-6;
    const double gtol = o.gradient_tolerance > 0 ? o.gradient_tolerance : 1e-10;
    const double ptol = o.parameter_tolerance > 0 ? o.parameter_tolerance : 1e-8;
    double mu = o.initial_mu > 0 ? o.initial_mu : 1e-4;

    const size_t n = n_params, k = prog->n_params, m = prog->n_out;
    if (n == 0) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: no parameters", fn);
    if (n > PXL_AD_SOLVE_MAX_PARAMS)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG,
                        "%s: %zu parameters: the dense solver takes at most %d (a sparse solver is not there yet)",
                        fn, n, PXL_AD_SOLVE_MAX_PARAMS);
    for (size_t j = 0; j < n; j++)
        if (!isfinite(params[j]))
            return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: parameter %zu is not finite (%g)", fn, j, params[j]);
    if (n_instances == 0 || m == 0) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: no residuals", fn);
    if (k > 0) PXL_REQUIRE(ctx, fn, param_index);
    size_t n_res, n_jac;
    if (!pxl_mul_size(n_instances, m, &n_res) || !pxl_mul_size(n_res, k > 0 ? k : 1, &n_jac))
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: %zu instances: sizes overflow", fn, n_instances);
    for (size_t i = 0; i < n_instances * k; i++)
        if (param_index[i] >= n)
            return pxl_fail(ctx, PXL_ERR_INVALID_ARG,
                            "%s: instance %zu, slot %zu: parameter index %u is out of range (%zu parameters)", fn,
                            i / k, i % k, param_index[i], n);

    /* buffers: r, r_new, J, J_new; H, A (n x n); g, D, delta, x_new (n) */
    double *r = pxl_calloc(ctx, n_res, sizeof *r), *r_new = pxl_calloc(ctx, n_res, sizeof *r);
    double *J = pxl_calloc(ctx, n_jac, sizeof *J), *J_new = pxl_calloc(ctx, n_jac, sizeof *J);
    double *H = pxl_calloc(ctx, n * n, sizeof *H), *A = pxl_calloc(ctx, n * n, sizeof *A);
    double *vec = pxl_calloc(ctx, 4 * n, sizeof *vec);
    pxl_status st = PXL_OK;
    if (!r || !r_new || !J || !J_new || !H || !A || !vec) {
        st = pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "%s: out of memory (%zu residuals, %zu parameters)", fn, n_res, n);
        goto done;
    }
    double *g = vec, *D = vec + n, *delta = vec + 2 * n, *x_new = vec + 3 * n;
    pxl_ad_solve_summary sm;
    memset(&sm, 0, sizeof sm);
    double t_eval = 0, t_lin = 0, t0 = pxl_time_now();
    st = pxl_ad_eval(ctx, prog, params, n, param_index, inputs, n_instances, r, J, &o.eval);
    t_eval += pxl_time_now() - t0;
    if (st != PXL_OK) goto done;
    double cost = lm_cost(r, n_res);
    if (!isfinite(cost) || !lm_normal(r, J, param_index, n_instances, m, k, n, H, g)) {
        st = pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: the residuals or the Jacobian at the start are not finite", fn);
        goto done;
    }
    sm.initial_cost = cost;
    double nu = 2;
    sm.termination = PXL_AD_NO_CONVERGENCE;
    snprintf(sm.message, sizeof sm.message, "%d iterations without convergence", max_it);
    if (lm_norm_inf(g, n) <= gtol) {
        sm.termination = PXL_AD_CONVERGED_GRADIENT;
        snprintf(sm.message, sizeof sm.message, "max |J^T r| %.3g <= %.3g at the start", lm_norm_inf(g, n), gtol);
    }
    while (sm.termination == PXL_AD_NO_CONVERGENCE && sm.iterations < max_it) {
        if (mu > LM_MAX_MU) {
            sm.termination = PXL_AD_CONVERGED_PARAMETER;
            snprintf(sm.message, sizeof sm.message, "damping mu %.3g > %.3g: no step reduces the cost", mu,
                     LM_MAX_MU);
            break;
        }
        sm.iterations++;
        /* (H + mu D) delta = -g */
        t0 = pxl_time_now();
        for (size_t j = 0; j < n; j++) {
            double d = H[j * n + j];
            D[j] = d < LM_MIN_DIAG ? LM_MIN_DIAG : d > LM_MAX_DIAG ? LM_MAX_DIAG : d;
        }
        memcpy(A, H, n * n * sizeof *A);
        for (size_t j = 0; j < n; j++) A[j * n + j] += mu * D[j];
        int ok = lm_cholesky(A, n);
        if (ok) {
            for (size_t j = 0; j < n; j++) delta[j] = -g[j];
            lm_cholesky_solve(A, n, delta);
            for (size_t j = 0; j < n && ok; j++) ok = isfinite(delta[j]);
        }
        t_lin += pxl_time_now() - t0;
        if (!ok) { /* treat as a rejected step */
            mu *= nu;
            nu *= 2;
            continue;
        }
        const double x_norm = lm_norm2(params, n), step_norm = lm_norm2(delta, n);
        if (step_norm <= ptol * (x_norm + ptol)) {
            sm.termination = PXL_AD_CONVERGED_PARAMETER;
            snprintf(sm.message, sizeof sm.message, "step %.3g <= %.3g * (|x| %.3g + %.3g)", step_norm, ptol,
                     x_norm, ptol);
            break;
        }
        /* predicted reduction of the linear model: -(g.delta + delta.H.delta / 2) */
        double gd = 0, dHd = 0;
        for (size_t a = 0; a < n; a++) {
            gd += g[a] * delta[a];
            double s = 0;
            for (size_t b = 0; b < n; b++) s += H[a * n + b] * delta[b];
            dHd += delta[a] * s;
        }
        const double predicted = -(gd + 0.5 * dHd);
        for (size_t j = 0; j < n; j++) x_new[j] = params[j] + delta[j];
        t0 = pxl_time_now();
        st = pxl_ad_eval(ctx, prog, x_new, n, param_index, inputs, n_instances, r_new, J_new, &o.eval);
        t_eval += pxl_time_now() - t0;
        if (st != PXL_OK) goto done;
        const double cost_new = lm_cost(r_new, n_res);
        const double rho = (isfinite(cost_new) && predicted > 0) ? (cost - cost_new) / predicted : -1.0;
        if (!(rho > LM_MIN_RHO)) {
            mu *= nu;
            nu *= 2;
            continue;
        }
        /* accept; a non-finite Jacobian at the new point is a rejected step */
        if (!lm_normal(r_new, J_new, param_index, n_instances, m, k, n, H, g)) {
            lm_normal(r, J, param_index, n_instances, m, k, n, H, g);
            mu *= nu;
            nu *= 2;
            continue;
        }
        sm.successful_steps++;
        memcpy(params, x_new, n * sizeof *params);
        double *tmp = r; r = r_new; r_new = tmp;
        tmp = J; J = J_new; J_new = tmp;
        const double change = cost - cost_new;
        const double prev = cost;
        cost = cost_new;
        const double f = 1 - (2 * rho - 1) * (2 * rho - 1) * (2 * rho - 1);
        mu *= f > 1.0 / 3 ? f : 1.0 / 3;
        nu = 2;
        const double gmax = lm_norm_inf(g, n);
        if (gmax <= gtol) {
            sm.termination = PXL_AD_CONVERGED_GRADIENT;
            snprintf(sm.message, sizeof sm.message, "max |J^T r| %.3g <= %.3g", gmax, gtol);
        } else if (fabs(change) <= ftol * prev) {
            sm.termination = PXL_AD_CONVERGED_FUNCTION;
            snprintf(sm.message, sizeof sm.message, "|cost change| %.3g <= %.3g * cost %.3g", fabs(change), ftol,
                     prev);
        }
    }
    sm.final_cost = cost;
    sm.eval_seconds = t_eval;
    sm.linear_solver_seconds = t_lin;
    sm.other_seconds = fmax(0.0, pxl_time_now() - t_start - t_eval - t_lin);
    if (summary) *summary = sm;
done:
    pxl_free(ctx, r);
    pxl_free(ctx, r_new);
    pxl_free(ctx, J);
    pxl_free(ctx, J_new);
    pxl_free(ctx, H);
    pxl_free(ctx, A);
    pxl_free(ctx, vec);
    return st;
}

pxl_status pxl_ad_solve(pxl_ctx *ctx, const pxl_ad_program *prog, const uint32_t *param_index,
                        const double *inputs, size_t n_instances, double *params, size_t n_params,
                        const pxl_ad_solve_options *opts, pxl_ad_solve_summary *summary) {
    PXL_REQUIRE_CTX(ctx);
    pxl_status st = lm_solve(ctx, prog, param_index, inputs, n_instances, params, n_params, opts, summary);
    if (st != PXL_OK && summary) {
        memset(summary, 0, sizeof *summary);
        summary->termination = PXL_AD_FAILURE;
        snprintf(summary->message, sizeof summary->message, "%s", pxl_ctx_error(ctx));
    }
    return st;
}
