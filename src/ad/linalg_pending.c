/*
 * Placeholders for the sparse Cholesky factorisation (chol.c) and L-BFGS
 * (lbfgs.c) until those modules are part of the build: both report
 * PXL_ERR_UNSUPPORTED. This file goes when they arrive.
 */
#include "ad_internal.h"

pxl_status ad_chol_create(pxl_ctx *ctx, size_t n, const int64_t *colptr, const int64_t *rowind, ad_chol **out) {
    (void)n;
    (void)colptr;
    (void)rowind;
    *out = NULL;
    return pxl_fail(ctx, PXL_ERR_UNSUPPORTED, "sparse Cholesky is not part of this build");
}

pxl_status ad_chol_factor_solve(ad_chol *c, const double *values, const double *b, double *x) {
    (void)c;
    (void)values;
    (void)b;
    (void)x;
    return PXL_ERR_UNSUPPORTED;
}

void ad_chol_free(ad_chol *c) { (void)c; }

pxl_status ad_lbfgs(pxl_ctx *ctx, size_t n, double *x, const double *lower, const double *upper, ad_objective_fn fn,
                    void *user, const pxl_ad_solve_options *opts, pxl_ad_solve_summary *summary) {
    (void)n;
    (void)x;
    (void)lower;
    (void)upper;
    (void)fn;
    (void)user;
    (void)opts;
    (void)summary;
    return pxl_fail(ctx, PXL_ERR_UNSUPPORTED, "L-BFGS is not part of this build");
}
