/*
 * pxl_ad_solve (pxl/ad.h): the single-program form of the solver, a thin
 * wrapper that builds a one-group problem and solves it with dense Cholesky
 * (lm.c has the algorithm).
 */
#include "ad_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

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

static pxl_status solve_one(pxl_ctx *ctx, const pxl_ad_program *prog, const uint32_t *param_index,
                            const double *inputs, size_t n_instances, double *params, size_t n_params,
                            const pxl_ad_solve_options *opts, pxl_ad_solve_summary *summary) {
    static const char fn[] = "pxl_ad_solve";
    PXL_REQUIRE(ctx, fn, prog);
    PXL_REQUIRE(ctx, fn, params);
    if (n_params == 0) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: no parameters", fn);
    if (n_params > PXL_AD_SOLVE_MAX_PARAMS)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG,
                        "%s: %zu parameters: the dense solver takes at most %d (pxl_ad_problem_solve has sparse "
                        "solvers)",
                        fn, n_params, PXL_AD_SOLVE_MAX_PARAMS);
    for (size_t j = 0; j < n_params; j++)
        if (!isfinite(params[j]))
            return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: parameter %zu is not finite (%g)", fn, j, params[j]);
    if (n_instances == 0 || prog->n_out == 0) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: no residuals", fn);
    if (prog->n_params > 0) PXL_REQUIRE(ctx, fn, param_index);
    pxl_ad_problem *pb = NULL;
    pxl_status st = pxl_ad_problem_create(ctx, n_params, &pb);
    if (st == PXL_OK) st = pxl_ad_problem_add(pb, prog, param_index, inputs, n_instances, NULL);
    if (st == PXL_OK) {
        pxl_ad_solve_options o;
        memset(&o, 0, sizeof o);
        if (opts) o = *opts;
        o.method = PXL_AD_LEVENBERG_MARQUARDT;
        o.linear_solver = PXL_AD_DENSE_CHOLESKY;
        o.max_seconds = 0;
        o.progress = NULL;
        st = pxl_ad_problem_solve(pb, params, &o, summary);
    }
    pxl_ad_problem_free(pb);
    return st;
}

pxl_status pxl_ad_solve(pxl_ctx *ctx, const pxl_ad_program *prog, const uint32_t *param_index,
                        const double *inputs, size_t n_instances, double *params, size_t n_params,
                        const pxl_ad_solve_options *opts, pxl_ad_solve_summary *summary) {
    PXL_REQUIRE_CTX(ctx);
    pxl_status st = solve_one(ctx, prog, param_index, inputs, n_instances, params, n_params, opts, summary);
    if (st != PXL_OK && summary && summary->termination != PXL_AD_FAILURE) {
        memset(summary, 0, sizeof *summary);
        summary->termination = PXL_AD_FAILURE;
        snprintf(summary->message, sizeof summary->message, "%s", pxl_ctx_error(ctx));
    }
    return st;
}
