/*
 * Sparse Cholesky through SuiteSparse CHOLMOD (its int64 interface,
 * cholmod_l_*): one symbolic analysis of a fixed pattern, then any number of
 * numeric factorisations and solves with new values (the normal equations of
 * a Levenberg-Marquardt run change only in their damping).
 *
 * Choices:
 *   - one cholmod_common per ad_chol: no state is shared between two of them;
 *   - the ordering is AMD alone (CHOLMOD's default strategy may also try
 *     METIS, whose random generator is process-wide state);
 *   - CHOLMOD prints nothing (print level 0, no error handler);
 *   - the factor is LL' (simplicial or supernodal, CHOLMOD's choice by the
 *     flops per entry of L): the first pivot that is not positive stops it;
 *   - CHOLMOD 3 (SuiteSparse 5) allocates through the process-wide function
 *     pointers of SuiteSparse_config only; pxl does not set them (that would
 *     be global state), so CHOLMOD's memory (the matrix copy, the factor,
 *     the vectors) comes from malloc, not from the context's allocator; the
 *     ad_chol struct itself does;
 *   - deterministic: the same pattern and values give bit-identical results.
 *     AMD is deterministic, the simplicial and supernodal factorisations run
 *     in a fixed order; CHOLMOD's OpenMP loops (supernodal assembly) write
 *     disjoint entries. The supernodal kernels call the BLAS: Debian's
 *     reference BLAS is single-threaded; a threaded BLAS put in its place
 *     is taken to be deterministic for a fixed thread count.
 */
#include "ad_internal.h"

#include <cholmod.h>

#include <limits.h>
#include <math.h>
#include <string.h>

struct ad_chol {
    pxl_ctx *ctx;
    size_t n, nnz;
    cholmod_common cm;
    cholmod_sparse *A; /* the upper triangle (stype 1): pattern copied, values per factorisation */
    cholmod_factor *L; /* symbolic at creation, numeric after a factorisation */
    cholmod_dense *B;  /* the right-hand side (a copy of b, so that x may alias b) */
    cholmod_dense *X, *Y, *E; /* the solution and cholmod_l_solve2's workspace, kept between calls */
};

/* The context's status for CHOLMOD's Common->status after a call failed. */
static pxl_status chol_status_fail(ad_chol *c, const char *what) {
    switch (c->cm.status) {
    case CHOLMOD_OUT_OF_MEMORY:
        return pxl_fail(c->ctx, PXL_ERR_OUT_OF_MEMORY, "sparse Cholesky: out of memory in %s (n %zu, %zu entries)",
                        what, c->n, c->nnz);
    case CHOLMOD_TOO_LARGE:
        return pxl_fail(c->ctx, PXL_ERR_INVALID_ARG, "sparse Cholesky: %s: the factor is too large (n %zu)", what,
                        c->n);
    default:
        return pxl_fail(c->ctx, PXL_ERR_INVALID_ARG, "sparse Cholesky: %s failed (CHOLMOD status %d)", what,
                        c->cm.status);
    }
}

void ad_chol_free(ad_chol *c) {
    if (!c) return;
    cholmod_l_free_dense(&c->B, &c->cm);
    cholmod_l_free_dense(&c->X, &c->cm);
    cholmod_l_free_dense(&c->Y, &c->cm);
    cholmod_l_free_dense(&c->E, &c->cm);
    cholmod_l_free_factor(&c->L, &c->cm);
    cholmod_l_free_sparse(&c->A, &c->cm);
    cholmod_l_finish(&c->cm);
    pxl_free(c->ctx, c);
}

pxl_status ad_chol_create(pxl_ctx *ctx, size_t n, const int64_t *colptr, const int64_t *rowind, ad_chol **out) {
    static const char fn[] = "ad_chol_create";
    PXL_REQUIRE_CTX(ctx);
    PXL_REQUIRE(ctx, fn, out);
    *out = NULL;
    PXL_REQUIRE(ctx, fn, colptr);
    if (n > (size_t)(INT64_MAX / 2) || (size_t)(SuiteSparse_long)n != n)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: n %zu is too large", fn, n);
    if (colptr[0] != 0)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: colptr[0] is %lld, not 0", fn, (long long)colptr[0]);
    /* the pattern: upper triangle, rows sorted and distinct in each column, diagonal last */
    for (size_t j = 0; j < n; j++) {
        const int64_t p0 = colptr[j], p1 = colptr[j + 1];
        if (p1 <= p0)
            return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: column %zu is empty or colptr decreases (%lld, %lld)", fn,
                            j, (long long)p0, (long long)p1);
        PXL_REQUIRE(ctx, fn, rowind);
        for (int64_t p = p0; p < p1; p++) {
            const int64_t r = rowind[p];
            if (r < 0 || (uint64_t)r > j)
                return pxl_fail(ctx, PXL_ERR_INVALID_ARG,
                                "%s: column %zu, entry %lld: row %lld is not in the upper triangle", fn, j,
                                (long long)p, (long long)r);
            if (p > p0 && r <= rowind[p - 1])
                return pxl_fail(ctx, PXL_ERR_INVALID_ARG,
                                "%s: column %zu, entry %lld: row %lld is not after row %lld (unsorted or repeated)",
                                fn, j, (long long)p, (long long)r, (long long)rowind[p - 1]);
        }
        if ((uint64_t)rowind[p1 - 1] != j)
            return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: column %zu has no diagonal entry", fn, j);
    }
    const size_t nnz = (size_t)colptr[n];

    ad_chol *c = pxl_calloc(ctx, 1, sizeof *c);
    if (!c) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    c->ctx = ctx;
    c->n = n;
    c->nnz = nnz;
    if (!cholmod_l_start(&c->cm)) {
        pxl_free(ctx, c);
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: cholmod_l_start failed", fn);
    }
    c->cm.print = 0;             /* no output, ever */
    c->cm.error_handler = NULL;
    c->cm.nmethods = 1;          /* AMD only: see the file comment */
    c->cm.method[0].ordering = CHOLMOD_AMD;
    c->cm.postorder = 1;
    c->cm.quick_return_if_not_posdef = 1;
    /* simplicial factors as LL' too: CHOLMOD's simplicial LDL' (its default)
     * goes through indefinite matrices without a word */
    c->cm.final_ll = 1;
    pxl_status st = PXL_OK;
    if (n == 0) { /* nothing to factorise; solves are empty */
        *out = c;
        return PXL_OK;
    }
    c->A = cholmod_l_allocate_sparse(n, n, nnz, 1, 1, 1, CHOLMOD_REAL, &c->cm);
    if (!c->A) {
        st = chol_status_fail(c, "allocating the matrix");
        goto fail;
    }
    SuiteSparse_long *Ap = c->A->p, *Ai = c->A->i;
    for (size_t j = 0; j <= n; j++) Ap[j] = (SuiteSparse_long)colptr[j];
    for (size_t p = 0; p < nnz; p++) Ai[p] = (SuiteSparse_long)rowind[p];
    c->L = cholmod_l_analyze(c->A, &c->cm);
    if (!c->L) {
        st = chol_status_fail(c, "the symbolic analysis");
        goto fail;
    }
    c->B = cholmod_l_allocate_dense(n, 1, n, CHOLMOD_REAL, &c->cm);
    if (!c->B) {
        st = chol_status_fail(c, "allocating the right-hand side");
        goto fail;
    }
    *out = c;
    return PXL_OK;
fail:
    ad_chol_free(c);
    return st;
}

pxl_status ad_chol_factor_solve(ad_chol *c, const double *values, const double *b, double *x) {
    static const char fn[] = "ad_chol_factor_solve";
    if (!c) return PXL_ERR_INVALID_ARG;
    pxl_ctx *ctx = c->ctx;
    if (c->n == 0) return PXL_OK;
    PXL_REQUIRE(ctx, fn, values);
    PXL_REQUIRE(ctx, fn, b);
    PXL_REQUIRE(ctx, fn, x);
    const SuiteSparse_long *Ap = c->A->p, *Ai = c->A->i;
    double *Ax = c->A->x;
    for (size_t j = 0; j < c->n; j++)
        for (SuiteSparse_long p = Ap[j]; p < Ap[j + 1]; p++) {
            if (!isfinite(values[p]))
                return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: entry (%ld, %zu) is not finite (%g)", fn,
                                (long)Ai[p], j, values[p]);
            Ax[p] = values[p];
        }
    if (!cholmod_l_factorize(c->A, c->L, &c->cm) && c->cm.status < CHOLMOD_OK)
        return chol_status_fail(c, "the numeric factorisation");
    if (c->cm.status == CHOLMOD_NOT_POSDEF || (size_t)c->L->minor < c->n) {
        /* L->minor is a column of the permuted matrix; name the original one */
        size_t j = (size_t)c->L->minor;
        const SuiteSparse_long *perm = c->L->Perm;
        if (perm && j < c->n) j = (size_t)perm[j];
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "sparse Cholesky: not positive definite at column %zu", j);
    }
    if (c->cm.status < CHOLMOD_OK) return chol_status_fail(c, "the numeric factorisation");
    memcpy(c->B->x, b, c->n * sizeof *b);
    if (!cholmod_l_solve2(CHOLMOD_A, c->L, c->B, NULL, &c->X, NULL, &c->Y, &c->E, &c->cm) || !c->X)
        return chol_status_fail(c, "the solve");
    memcpy(x, c->X->x, c->n * sizeof *x);
    return PXL_OK;
}
