/*
 * The ad layer's numerical modules (src/ad/chol.c, src/ad/lbfgs.c):
 *   sparse Cholesky: grid Laplacians, arrowhead, banded and bundle-adjustment
 *   block patterns up to ~50k columns (residual |Ax - b| / |b|, a dense
 *   solve for small n), matrices that are not positive definite, refactoring
 *   with new values, determinism, refusals of bad patterns;
 *   L-BFGS: Rosenbrock (2-D, extended n = 100 and 1000), a quadratic with a
 *   known minimum, bounds (minima on the bound), an objective that is NaN
 *   outside its domain, max_iterations, max_seconds, a failing objective,
 *   progress, determinism, refusals.
 */
#include "check.h"
#include "test_ctx.h"

#include "ad/ad_internal.h"

#include <math.h>
#include <string.h>

static pxl_ctx *g_ctx;
static uint64_t g_seed = 12345;

static double urand(void) { return (double)(test_rng(&g_seed) >> 11) * (1.0 / 9007199254740992.0); }

/* ---- sparse symmetric matrices: upper triangle in CSC ----------------------- */

typedef struct triplet {
    int64_t r, c;
    double v;
} triplet;

typedef struct spm {
    size_t n;
    int64_t *colptr, *rowind;
    double *values;
} spm;

typedef struct tlist {
    triplet *t;
    size_t len, cap;
} tlist;

/* Adds v at (r, c) of a symmetric matrix (stored at (min, max)). */
static void tl_add(tlist *l, int64_t r, int64_t c, double v) {
    if (l->len == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 1024;
        l->t = realloc(l->t, l->cap * sizeof *l->t);
        if (!l->t) abort();
    }
    l->t[l->len++] = (triplet){r < c ? r : c, r < c ? c : r, v};
}

static int cmp_row(const void *a, const void *b) {
    const triplet *x = a, *y = b;
    return (x->r > y->r) - (x->r < y->r);
}

/* The triplets (duplicates summed) as an upper-triangle CSC matrix; frees l. */
static spm tl_to_csc(tlist *l, size_t n) {
    spm m = {n, calloc(n + 1, sizeof(int64_t)), NULL, NULL};
    triplet *sorted = malloc((l->len ? l->len : 1) * sizeof *sorted);
    size_t *next = calloc(n + 1, sizeof *next);
    if (!m.colptr || !sorted || !next) abort();
    for (size_t k = 0; k < l->len; k++) next[l->t[k].c + 1]++;
    for (size_t j = 0; j < n; j++) next[j + 1] += next[j];
    size_t *start = malloc((n + 1) * sizeof *start);
    if (!start) abort();
    memcpy(start, next, (n + 1) * sizeof *start);
    for (size_t k = 0; k < l->len; k++) sorted[next[l->t[k].c]++] = l->t[k];
    m.rowind = malloc((l->len ? l->len : 1) * sizeof *m.rowind);
    m.values = malloc((l->len ? l->len : 1) * sizeof *m.values);
    if (!m.rowind || !m.values) abort();
    size_t nnz = 0;
    for (size_t j = 0; j < n; j++) {
        qsort(sorted + start[j], start[j + 1] - start[j], sizeof *sorted, cmp_row);
        for (size_t k = start[j]; k < start[j + 1]; k++) {
            if (nnz > (size_t)m.colptr[j] && m.rowind[nnz - 1] == sorted[k].r) {
                m.values[nnz - 1] += sorted[k].v;
            } else {
                m.rowind[nnz] = sorted[k].r;
                m.values[nnz] = sorted[k].v;
                nnz++;
            }
        }
        m.colptr[j + 1] = (int64_t)nnz;
    }
    free(start);
    free(next);
    free(sorted);
    free(l->t);
    memset(l, 0, sizeof *l);
    return m;
}

static void spm_free(spm *m) {
    free(m->colptr);
    free(m->rowind);
    free(m->values);
}

/* y = A x with A symmetric, given by its upper triangle with values v. */
static void spm_mul(const spm *m, const double *v, const double *x, double *y) {
    memset(y, 0, m->n * sizeof *y);
    for (size_t j = 0; j < m->n; j++)
        for (int64_t p = m->colptr[j]; p < m->colptr[j + 1]; p++) {
            const size_t i = (size_t)m->rowind[p];
            y[i] += v[p] * x[j];
            if (i != j) y[j] += v[p] * x[i];
        }
}

static double norm2(const double *v, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += v[i] * v[i];
    return sqrt(s);
}

/* |A x - b| / |b| */
static double rel_residual(const spm *m, const double *v, const double *x, const double *b) {
    double *r = malloc(m->n * sizeof *r);
    if (!r) abort();
    spm_mul(m, v, x, r);
    for (size_t i = 0; i < m->n; i++) r[i] -= b[i];
    const double e = norm2(r, m->n) / norm2(b, m->n);
    free(r);
    return e;
}

/* 2-D grid Laplacian (k x k, 5-point) plus shift on the diagonal, random weights. */
static spm make_grid(size_t k, double shift) {
    tlist l = {0};
    const size_t n = k * k;
    for (size_t a = 0; a < k; a++)
        for (size_t b = 0; b < k; b++) {
            const int64_t i = (int64_t)(a * k + b);
            tl_add(&l, i, i, shift);
            if (b + 1 < k) {
                const double w = 0.5 + urand();
                tl_add(&l, i, i, w);
                tl_add(&l, i + 1, i + 1, w);
                tl_add(&l, i, i + 1, -w);
            }
            if (a + 1 < k) {
                const double w = 0.5 + urand();
                tl_add(&l, i, i, w);
                tl_add(&l, i + (int64_t)k, i + (int64_t)k, w);
                tl_add(&l, i, i + (int64_t)k, -w);
            }
        }
    return tl_to_csc(&l, n);
}

/* Arrowhead: diagonal plus a full first row/column (column 0 couples to all). */
static spm make_arrow(size_t n) {
    tlist l = {0};
    double sum = 0;
    for (size_t i = 1; i < n; i++) {
        const double v = urand() - 0.5;
        tl_add(&l, 0, (int64_t)i, v);
        tl_add(&l, (int64_t)i, (int64_t)i, 1 + fabs(v) + urand());
        sum += fabs(v);
    }
    tl_add(&l, 0, 0, sum + 1);
    return tl_to_csc(&l, n);
}

/* Banded with half-bandwidth bw, diagonally dominant. */
static spm make_banded(size_t n, size_t bw) {
    tlist l = {0};
    double *rowsum = calloc(n, sizeof *rowsum);
    if (!rowsum) abort();
    for (size_t j = 0; j < n; j++)
        for (size_t i = j >= bw ? j - bw : 0; i < j; i++) {
            const double v = urand() - 0.5;
            tl_add(&l, (int64_t)i, (int64_t)j, v);
            rowsum[i] += fabs(v);
            rowsum[j] += fabs(v);
        }
    for (size_t i = 0; i < n; i++) tl_add(&l, (int64_t)i, (int64_t)i, rowsum[i] + 0.1 + urand());
    free(rowsum);
    return tl_to_csc(&l, n);
}

/* Bundle adjustment's normal equations J^T J + lambda I: cams cameras of 9
 * parameters, then pts points of 3; each point seen by obs cameras, each
 * observation two residuals over the 9 + 3 parameters (random Jacobian). */
static spm make_ba(size_t cams, size_t pts, size_t obs, double lambda) {
    tlist l = {0};
    const size_t n = 9 * cams + 3 * pts;
    for (size_t p = 0; p < pts; p++)
        for (size_t o = 0; o < obs; o++) {
            const size_t c = (p * 7 + o * 13 + (size_t)(urand() * 5)) % cams;
            int64_t idx[12];
            for (int k = 0; k < 9; k++) idx[k] = (int64_t)(9 * c) + k;
            for (int k = 0; k < 3; k++) idx[9 + k] = (int64_t)(9 * cams + 3 * p) + k;
            double blk[12][12] = {{0}};
            for (int r = 0; r < 2; r++) {
                double row[12];
                for (int k = 0; k < 12; k++) row[k] = urand() - 0.5;
                for (int a = 0; a < 12; a++)
                    for (int b = a; b < 12; b++) blk[a][b] += row[a] * row[b];
            }
            for (int a = 0; a < 12; a++)
                for (int b = a; b < 12; b++) tl_add(&l, idx[a], idx[b], blk[a][b]);
        }
    for (size_t i = 0; i < n; i++) tl_add(&l, (int64_t)i, (int64_t)i, lambda);
    return tl_to_csc(&l, n);
}

/* Dense Cholesky solve of the symmetric matrix (for small n); 0 if not SPD. */
static int dense_solve(const spm *m, const double *b, double *x) {
    const size_t n = m->n;
    double *A = calloc(n * n, sizeof *A);
    if (!A) abort();
    for (size_t j = 0; j < n; j++)
        for (int64_t p = m->colptr[j]; p < m->colptr[j + 1]; p++) {
            const size_t i = (size_t)m->rowind[p];
            A[i * n + j] = A[j * n + i] = m->values[p];
        }
    for (size_t j = 0; j < n; j++) {
        double d = A[j * n + j];
        for (size_t k = 0; k < j; k++) d -= A[j * n + k] * A[j * n + k];
        if (!(d > 0)) {
            free(A);
            return 0;
        }
        d = sqrt(d);
        A[j * n + j] = d;
        for (size_t i = j + 1; i < n; i++) {
            double s = A[i * n + j];
            for (size_t k = 0; k < j; k++) s -= A[i * n + k] * A[j * n + k];
            A[i * n + j] = s / d;
        }
    }
    for (size_t i = 0; i < n; i++) {
        double s = b[i];
        for (size_t k = 0; k < i; k++) s -= A[i * n + k] * x[k];
        x[i] = s / A[i * n + i];
    }
    for (size_t i = n; i-- > 0;) {
        double s = x[i];
        for (size_t k = i + 1; k < n; k++) s -= A[k * n + i] * x[k];
        x[i] = s / A[i * n + i];
    }
    free(A);
    return 1;
}

/* Factorises and solves m with a random b; checks the residual, the dense
 * solution (n <= 400), x aliasing b, and the same bits from a second
 * factorisation in a second object. */
static void check_solve(const char *name, spm *m) {
    const size_t n = m->n;
    double *b = malloc(n * sizeof *b), *x = malloc(n * sizeof *x), *x2 = malloc(n * sizeof *x2);
    if (!b || !x || !x2) abort();
    for (size_t i = 0; i < n; i++) b[i] = urand() - 0.5;
    ad_chol *c = NULL, *c2 = NULL;
    const double t0 = pxl_time_now();
    pxl_status st = ad_chol_create(g_ctx, n, m->colptr, m->rowind, &c);
    CHECK_MSG(st == PXL_OK, "%s: %s", name, pxl_ctx_error(g_ctx));
    if (st != PXL_OK) goto out;
    const double t1 = pxl_time_now();
    st = ad_chol_factor_solve(c, m->values, b, x);
    const double t2 = pxl_time_now();
    CHECK_MSG(st == PXL_OK, "%s: %s", name, pxl_ctx_error(g_ctx));
    const double e = rel_residual(m, m->values, x, b);
    printf("%s: n %zu, nnz %lld: residual %.3g (analyse %.3f s, factor+solve %.3f s)\n", name, n,
           (long long)m->colptr[n], e, t1 - t0, t2 - t1);
    CHECK_MSG(e < 1e-10, "%s: residual %.3g", name, e);
    if (n <= 400) {
        CHECK(dense_solve(m, b, x2));
        double d = 0;
        for (size_t i = 0; i < n; i++) d = fmax(d, fabs(x[i] - x2[i]));
        CHECK_MSG(d <= 1e-10 * fmax(1.0, norm2(x2, n)), "%s: differs from the dense solve by %.3g", name, d);
    }
    /* a second object and a second factorisation: the same bits; x may alias b */
    CHECK(ad_chol_create(g_ctx, n, m->colptr, m->rowind, &c2) == PXL_OK);
    memcpy(x2, b, n * sizeof *x2);
    CHECK(ad_chol_factor_solve(c2, m->values, x2, x2) == PXL_OK);
    CHECK_MSG(memcmp(x, x2, n * sizeof *x) == 0, "%s: two runs differ", name);
    CHECK(ad_chol_factor_solve(c, m->values, b, x2) == PXL_OK);
    CHECK_MSG(memcmp(x, x2, n * sizeof *x) == 0, "%s: refactoring differs", name);
out:
    ad_chol_free(c);
    ad_chol_free(c2);
    free(b);
    free(x);
    free(x2);
}

static void test_chol_patterns(void) {
    const size_t grids[] = {1, 3, 12, 100, 224}; /* 224^2 = 50176 columns */
    for (size_t i = 0; i < sizeof grids / sizeof *grids; i++) {
        spm m = make_grid(grids[i], 1e-3);
        char name[64];
        snprintf(name, sizeof name, "grid %zux%zu", grids[i], grids[i]);
        check_solve(name, &m);
        spm_free(&m);
    }
    const size_t arrows[] = {2, 50, 20000};
    for (size_t i = 0; i < sizeof arrows / sizeof *arrows; i++) {
        spm m = make_arrow(arrows[i]);
        check_solve("arrowhead", &m);
        spm_free(&m);
    }
    spm m = make_banded(300, 7);
    check_solve("banded 300/7", &m);
    spm_free(&m);
    m = make_banded(40000, 20);
    check_solve("banded 40000/20", &m);
    spm_free(&m);
    m = make_ba(4, 30, 3, 1e-2);
    check_solve("bundle 4 cams 30 pts", &m);
    spm_free(&m);
    m = make_ba(60, 6000, 3, 1e-2);
    check_solve("bundle 60 cams 6000 pts", &m);
    spm_free(&m);
}

/* Not positive definite: the message names the column (of the caller's
 * matrix, not the permuted one); then the same object factorises good values. */
static void test_chol_not_posdef(void) {
    /* diagonal with one negative entry: the column is known exactly */
    enum { N = 20 };
    int64_t cp[N + 1], ri[N];
    double v[N], b[N], x[N];
    for (int i = 0; i < N; i++) {
        cp[i] = i;
        ri[i] = i;
        v[i] = 1 + i;
        b[i] = 1;
        x[i] = -7;
    }
    cp[N] = N;
    v[13] = -2;
    ad_chol *c = NULL;
    CHECK(ad_chol_create(g_ctx, N, cp, ri, &c) == PXL_OK);
    CHECK(ad_chol_factor_solve(c, v, b, x) == PXL_ERR_INVALID_ARG);
    CHECK_MSG(strstr(pxl_ctx_error(g_ctx), "not positive definite at column 13") != NULL, "%s",
              pxl_ctx_error(g_ctx));
    CHECK(x[0] == -7); /* x untouched on failure */
    v[13] = 0;
    CHECK(ad_chol_factor_solve(c, v, b, x) == PXL_ERR_INVALID_ARG);
    v[13] = 4;
    CHECK_MSG(ad_chol_factor_solve(c, v, b, x) == PXL_OK, "%s", pxl_ctx_error(g_ctx));
    CHECK(fabs(x[13] - 0.25) < 1e-15 && fabs(x[3] - 0.25) < 1e-15);
    v[13] = (double)NAN;
    CHECK(ad_chol_factor_solve(c, v, b, x) == PXL_ERR_INVALID_ARG);
    CHECK_MSG(strstr(pxl_ctx_error(g_ctx), "not finite") != NULL, "%s", pxl_ctx_error(g_ctx));
    ad_chol_free(c);

    /* an indefinite Laplacian (shift -0.5) large enough for the supernodal path, then damped until SPD,
     * as Levenberg-Marquardt does, on one symbolic analysis */
    spm m = make_grid(60, -0.5);
    const size_t n = m.n;
    double *vals = malloc((size_t)m.colptr[n] * sizeof *vals), *bb = malloc(n * sizeof *bb),
           *xx = malloc(n * sizeof *xx);
    if (!vals || !bb || !xx) abort();
    for (size_t i = 0; i < n; i++) bb[i] = urand();
    c = NULL;
    CHECK(ad_chol_create(g_ctx, n, m.colptr, m.rowind, &c) == PXL_OK);
    CHECK(ad_chol_factor_solve(c, m.values, bb, xx) == PXL_ERR_INVALID_ARG);
    CHECK_MSG(strstr(pxl_ctx_error(g_ctx), "not positive definite at column ") != NULL, "%s", pxl_ctx_error(g_ctx));
    int solved = 0;
    for (double mu = 0.1; mu < 10 && !solved; mu *= 2) {
        memcpy(vals, m.values, (size_t)m.colptr[n] * sizeof *vals);
        for (size_t j = 0; j < n; j++) vals[m.colptr[j + 1] - 1] += mu; /* the diagonal is last */
        pxl_status st = ad_chol_factor_solve(c, vals, bb, xx);
        if (st == PXL_OK) {
            solved = 1;
            const double e = rel_residual(&m, vals, xx, bb);
            CHECK_MSG(e < 1e-10, "damped grid: residual %.3g at mu %g", e, mu);
            /* mu changed again on the same analysis */
            for (size_t j = 0; j < n; j++) vals[m.colptr[j + 1] - 1] += 1.0;
            CHECK(ad_chol_factor_solve(c, vals, bb, xx) == PXL_OK);
            CHECK(rel_residual(&m, vals, xx, bb) < 1e-10);
        } else {
            CHECK(st == PXL_ERR_INVALID_ARG);
        }
    }
    CHECK(solved);
    ad_chol_free(c);
    free(vals);
    free(bb);
    free(xx);
    spm_free(&m);

    /* a bundle pattern (dense camera blocks after elimination: CHOLMOD's supernodal factor) with a negative
     * shift fails, then the same analysis with the shift undone succeeds */
    m = make_ba(30, 2000, 3, -100);
    c = NULL;
    bb = malloc(m.n * sizeof *bb);
    xx = malloc(m.n * sizeof *xx);
    vals = malloc((size_t)m.colptr[m.n] * sizeof *vals);
    if (!vals || !bb || !xx) abort();
    for (size_t i = 0; i < m.n; i++) bb[i] = urand();
    CHECK(ad_chol_create(g_ctx, m.n, m.colptr, m.rowind, &c) == PXL_OK);
    CHECK(ad_chol_factor_solve(c, m.values, bb, xx) == PXL_ERR_INVALID_ARG);
    CHECK_MSG(strstr(pxl_ctx_error(g_ctx), "not positive definite at column ") != NULL, "%s", pxl_ctx_error(g_ctx));
    memcpy(vals, m.values, (size_t)m.colptr[m.n] * sizeof *vals);
    for (size_t j = 0; j < m.n; j++) vals[m.colptr[j + 1] - 1] += 100.01;
    CHECK_MSG(ad_chol_factor_solve(c, vals, bb, xx) == PXL_OK, "%s", pxl_ctx_error(g_ctx));
    CHECK(rel_residual(&m, vals, xx, bb) < 1e-10);
    ad_chol_free(c);
    free(vals);
    free(bb);
    free(xx);
    spm_free(&m);
}

static void test_chol_refusals(void) {
    ad_chol *c = (ad_chol *)1;
    /* missing diagonal: column 1 has row 0 only */
    int64_t cp1[] = {0, 1, 2}, ri1[] = {0, 0};
    CHECK(ad_chol_create(g_ctx, 2, cp1, ri1, &c) == PXL_ERR_INVALID_ARG && c == NULL);
    CHECK_MSG(strstr(pxl_ctx_error(g_ctx), "column 1 has no diagonal") != NULL, "%s", pxl_ctx_error(g_ctx));
    /* a lower-triangle entry */
    int64_t cp2[] = {0, 2, 3}, ri2[] = {0, 1, 1};
    CHECK(ad_chol_create(g_ctx, 2, cp2, ri2, &c) == PXL_ERR_INVALID_ARG);
    CHECK_MSG(strstr(pxl_ctx_error(g_ctx), "not in the upper triangle") != NULL, "%s", pxl_ctx_error(g_ctx));
    /* unsorted and repeated rows */
    int64_t cp3[] = {0, 1, 2, 5}, ri3[] = {0, 1, 1, 0, 2};
    CHECK(ad_chol_create(g_ctx, 3, cp3, ri3, &c) == PXL_ERR_INVALID_ARG);
    CHECK_MSG(strstr(pxl_ctx_error(g_ctx), "unsorted or repeated") != NULL, "%s", pxl_ctx_error(g_ctx));
    int64_t ri4[] = {0, 1, 1, 1, 2};
    CHECK(ad_chol_create(g_ctx, 3, cp3, ri4, &c) == PXL_ERR_INVALID_ARG);
    /* colptr not starting at 0, an empty column */
    int64_t cp5[] = {1, 2}, cp6[] = {0, 1, 1};
    CHECK(ad_chol_create(g_ctx, 1, cp5, ri1, &c) == PXL_ERR_INVALID_ARG);
    CHECK(ad_chol_create(g_ctx, 2, cp6, ri1, &c) == PXL_ERR_INVALID_ARG);
    CHECK(ad_chol_create(g_ctx, 2, NULL, ri1, &c) == PXL_ERR_INVALID_ARG);
    CHECK(ad_chol_create(g_ctx, 2, cp1, NULL, &c) == PXL_ERR_INVALID_ARG);
    CHECK(ad_chol_create(NULL, 2, cp1, ri1, &c) == PXL_ERR_INVALID_ARG);
    /* n = 0: nothing to do */
    int64_t cp0[] = {0};
    CHECK(ad_chol_create(g_ctx, 0, cp0, NULL, &c) == PXL_OK && c != NULL);
    CHECK(ad_chol_factor_solve(c, NULL, NULL, NULL) == PXL_OK);
    ad_chol_free(c);
    ad_chol_free(NULL);
    /* 1 x 1 */
    int64_t cp7[] = {0, 1}, ri7[] = {0};
    double v7 = 4, b7 = 2, x7 = 0;
    CHECK(ad_chol_create(g_ctx, 1, cp7, ri7, &c) == PXL_OK);
    CHECK(ad_chol_factor_solve(c, &v7, &b7, &x7) == PXL_OK && x7 == 0.5);
    CHECK(ad_chol_factor_solve(c, &v7, &b7, NULL) == PXL_ERR_INVALID_ARG);
    ad_chol_free(c);
}

/* ---- L-BFGS -------------------------------------------------------------------- */

typedef struct obj {
    int calls, nan_calls, fail_at; /* fail_at > 0: the call that returns PXL_ERR_IO */
    double sleep_s;                /* busy-wait per call (max_seconds) */
    const double *c;               /* per-problem data */
    size_t n;
} obj;

/* Extended Rosenbrock: sum over pairs 100 (x[2i+1] - x[2i]^2)^2 + (1 - x[2i])^2. */
static pxl_status f_rosen(void *user, const double *x, double *f, double *g) {
    obj *o = user;
    o->calls++;
    if (o->fail_at > 0 && o->calls == o->fail_at) return pxl_fail(g_ctx, PXL_ERR_IO, "objective failed on purpose");
    if (o->sleep_s > 0)
        for (double t0 = pxl_time_now(); pxl_time_now() - t0 < o->sleep_s;) {
        }
    double s = 0;
    for (size_t i = 0; i + 1 < o->n; i += 2) {
        const double a = x[i + 1] - x[i] * x[i], b = 1 - x[i];
        s += 100 * a * a + b * b;
        g[i] = -400 * a * x[i] - 2 * b;
        g[i + 1] = 200 * a;
    }
    *f = s;
    return PXL_OK;
}

/* 1/2 x^T A x - c^T x with A tridiagonal (4 on the diagonal, -1 beside): x* = A^-1 c. */
static pxl_status f_quad(void *user, const double *x, double *f, double *g) {
    obj *o = user;
    o->calls++;
    double s = 0;
    for (size_t i = 0; i < o->n; i++) {
        double ax = 4 * x[i];
        if (i > 0) ax -= x[i - 1];
        if (i + 1 < o->n) ax -= x[i + 1];
        g[i] = ax - o->c[i];
        s += 0.5 * x[i] * ax - o->c[i] * x[i];
    }
    *f = s;
    return PXL_OK;
}

/* sum (x_i - c_i)^2 */
static pxl_status f_dist(void *user, const double *x, double *f, double *g) {
    obj *o = user;
    o->calls++;
    double s = 0;
    for (size_t i = 0; i < o->n; i++) {
        g[i] = 2 * (x[i] - o->c[i]);
        s += (x[i] - o->c[i]) * (x[i] - o->c[i]);
    }
    *f = s;
    return PXL_OK;
}

/* sum c_i x_i - log x_i: minimum at 1 / c_i; NaN (x < 0) or +inf (x = 0) outside. */
static pxl_status f_log(void *user, const double *x, double *f, double *g) {
    obj *o = user;
    o->calls++;
    double s = 0;
    for (size_t i = 0; i < o->n; i++) {
        s += o->c[i] * x[i] - log(x[i]);
        g[i] = o->c[i] - 1 / x[i];
    }
    if (isnan(s)) o->nan_calls++;
    *f = s;
    return PXL_OK;
}

static void print_lb(const char *name, const pxl_ad_solve_summary *s, const obj *o) {
    printf("%s: %s (%s), f %.6g -> %.6g, %d iterations, %d calls, max|pg| %.3g\n", name,
           pxl_ad_termination_name(s->termination), s->message, s->initial_cost, s->final_cost, s->iterations,
           o->calls, s->gradient_max_norm);
}

static pxl_ad_solve_options tight_options(void) {
    pxl_ad_solve_options o;
    memset(&o, 0, sizeof o);
    o.function_tolerance = 1e-300;
    o.parameter_tolerance = 1e-300;
    o.gradient_tolerance = 1e-9;
    return o;
}

static void test_lbfgs_rosenbrock(void) {
    const size_t sizes[] = {2, 100, 1000};
    for (size_t k = 0; k < 3; k++) {
        const size_t n = sizes[k];
        double *x = malloc(n * sizeof *x), *x2 = malloc(n * sizeof *x2);
        if (!x || !x2) abort();
        for (size_t i = 0; i < n; i++) x[i] = i % 2 ? 1 : -1.2;
        memcpy(x2, x, n * sizeof *x);
        obj o = {0};
        o.n = n;
        pxl_ad_solve_options opt = tight_options();
        opt.max_iterations = 5000;
        pxl_ad_solve_summary s;
        CHECK_MSG(ad_lbfgs(g_ctx, n, x, NULL, NULL, f_rosen, &o, &opt, &s) == PXL_OK, "%s", pxl_ctx_error(g_ctx));
        char name[64];
        snprintf(name, sizeof name, "Rosenbrock n=%zu", n);
        print_lb(name, &s, &o);
        CHECK(s.termination == PXL_AD_CONVERGED_GRADIENT || s.termination == PXL_AD_CONVERGED_PARAMETER);
        double err = 0;
        for (size_t i = 0; i < n; i++) err = fmax(err, fabs(x[i] - 1));
        CHECK_MSG(err < 1e-6, "%s: max |x - 1| %.3g", name, err);
        CHECK(s.final_cost < 1e-12 && fabs(s.initial_cost / (24.2 * (double)(n / 2)) - 1) < 1e-14);
        CHECK(s.iterations > 0 && s.successful_steps <= s.iterations && s.successful_steps > 0);
        CHECK(s.eval_seconds >= 0 && s.other_seconds >= 0 && s.total_seconds >= s.eval_seconds);
        /* same inputs, same bits */
        obj o2 = {0};
        o2.n = n;
        pxl_ad_solve_summary s2;
        CHECK(ad_lbfgs(g_ctx, n, x2, NULL, NULL, f_rosen, &o2, &opt, &s2) == PXL_OK);
        CHECK(memcmp(x, x2, n * sizeof *x) == 0 && s.iterations == s2.iterations && o.calls == o2.calls &&
              s.final_cost == s2.final_cost);
        free(x);
        free(x2);
    }
    /* memory 1 and 30 converge too */
    const int mems[] = {1, 30};
    for (int k = 0; k < 2; k++) {
        double x[2] = {-1.2, 1};
        obj o = {0};
        o.n = 2;
        pxl_ad_solve_options opt = tight_options();
        opt.lbfgs_memory = mems[k];
        opt.max_iterations = 5000;
        pxl_ad_solve_summary s;
        CHECK(ad_lbfgs(g_ctx, 2, x, NULL, NULL, f_rosen, &o, &opt, &s) == PXL_OK);
        CHECK_MSG(fabs(x[0] - 1) < 1e-6 && fabs(x[1] - 1) < 1e-6, "memory %d: x = (%g, %g)", mems[k], x[0], x[1]);
    }
}

static void test_lbfgs_quadratic(void) {
    enum { N = 200 };
    double c[N], x[N], xs[N];
    for (int i = 0; i < N; i++) {
        c[i] = sin(0.1 * i) + 0.5;
        x[i] = 0;
    }
    /* x* = A^-1 c by the Thomas algorithm */
    double cp[N], dp[N];
    cp[0] = -1.0 / 4;
    dp[0] = c[0] / 4;
    for (int i = 1; i < N; i++) {
        const double m = 4 + cp[i - 1];
        cp[i] = -1 / m;
        dp[i] = (c[i] + dp[i - 1]) / m;
    }
    xs[N - 1] = dp[N - 1];
    for (int i = N - 2; i >= 0; i--) xs[i] = dp[i] - cp[i] * xs[i + 1];
    obj o = {0};
    o.n = N;
    o.c = c;
    pxl_ad_solve_options opt = tight_options();
    pxl_ad_solve_summary s;
    CHECK(ad_lbfgs(g_ctx, N, x, NULL, NULL, f_quad, &o, &opt, &s) == PXL_OK);
    print_lb("quadratic n=200", &s, &o);
    double err = 0;
    for (int i = 0; i < N; i++) err = fmax(err, fabs(x[i] - xs[i]));
    CHECK_MSG(err < 1e-9, "quadratic: max |x - x*| %.3g", err);
    CHECK(s.termination == PXL_AD_CONVERGED_GRADIENT && s.gradient_max_norm <= 1e-9);
    CHECK(s.iterations < 100); /* a well-conditioned quadratic: few iterations */
}

static int g_progress_calls, g_progress_last;
static double g_progress_cost;
static void progress(void *user, int iteration, double cost) {
    (void)user;
    CHECK(iteration == g_progress_last + 1);
    g_progress_last = iteration;
    g_progress_calls++;
    g_progress_cost = cost;
}

static void test_lbfgs_bounds(void) {
    /* sum (x - c)^2 on [0, 1]^n: the minimum is c clamped; the start is outside the box */
    enum { N = 50 };
    double c[N], x[N], lo[N], hi[N];
    for (int i = 0; i < N; i++) {
        c[i] = 3 * sin(1.7 * i);
        x[i] = i % 3 == 0 ? 5 : 0.5;
        lo[i] = 0;
        hi[i] = 1;
    }
    hi[7] = HUGE_VAL; /* one side open */
    lo[8] = -HUGE_VAL;
    obj o = {0};
    o.n = N;
    o.c = c;
    pxl_ad_solve_options opt = tight_options();
    opt.progress = progress;
    pxl_ad_solve_summary s;
    g_progress_calls = g_progress_last = 0;
    CHECK(ad_lbfgs(g_ctx, N, x, lo, hi, f_dist, &o, &opt, &s) == PXL_OK);
    print_lb("box", &s, &o);
    double err = 0;
    for (int i = 0; i < N; i++) err = fmax(err, fabs(x[i] - fmin(fmax(c[i], lo[i]), hi[i])));
    CHECK_MSG(err < 1e-9, "box: max error %.3g", err);
    CHECK(s.termination == PXL_AD_CONVERGED_GRADIENT);
    CHECK(g_progress_calls == s.iterations && g_progress_cost == s.final_cost);
    for (int i = 0; i < N; i++) CHECK(x[i] >= lo[i] && x[i] <= hi[i]);

    /* Rosenbrock with x0 <= 0.5: the minimum is (0.5, 0.25) on the bound */
    double xr[2] = {-1.2, 1}, lr[2] = {-HUGE_VAL, -HUGE_VAL}, hr[2] = {0.5, HUGE_VAL};
    obj orr = {0};
    orr.n = 2;
    opt = tight_options();
    opt.max_iterations = 2000;
    CHECK(ad_lbfgs(g_ctx, 2, xr, lr, hr, f_rosen, &orr, &opt, &s) == PXL_OK);
    print_lb("Rosenbrock x0 <= 0.5", &s, &orr);
    CHECK_MSG(xr[0] == 0.5 && fabs(xr[1] - 0.25) < 1e-8, "x = (%.17g, %.17g)", xr[0], xr[1]);
    CHECK(fabs(s.final_cost - 0.25) < 1e-12);

    /* lower bounds on the extended Rosenbrock: x >= 1.5 for every second variable */
    enum { M = 100 };
    double xe[M], le[M];
    for (int i = 0; i < M; i++) {
        xe[i] = i % 2 ? 3 : 2;
        le[i] = i % 2 ? -HUGE_VAL : 1.5;
    }
    obj oe = {0};
    oe.n = M;
    CHECK(ad_lbfgs(g_ctx, M, xe, le, NULL, f_rosen, &oe, &opt, &s) == PXL_OK);
    print_lb("Rosenbrock n=100 x_even >= 1.5", &s, &oe);
    err = 0;
    for (int i = 0; i < M; i += 2) err = fmax(err, fabs(xe[i] - 1.5) + fabs(xe[i + 1] - 2.25));
    CHECK_MSG(err < 1e-7, "bounded extended Rosenbrock: error %.3g", err);

    /* refusals: lower > upper, NaN bound */
    double xb[1] = {0}, l1[1] = {1}, h1[1] = {0};
    CHECK(ad_lbfgs(g_ctx, 1, xb, l1, h1, f_dist, &o, NULL, &s) == PXL_ERR_INVALID_ARG);
    CHECK(s.termination == PXL_AD_FAILURE && strstr(s.message, "variable 0") != NULL);
    l1[0] = (double)NAN;
    CHECK(ad_lbfgs(g_ctx, 1, xb, l1, NULL, f_dist, &o, NULL, &s) == PXL_ERR_INVALID_ARG);
}

static void test_lbfgs_nan(void) {
    enum { N = 10 };
    double c[N], x[N];
    for (int i = 0; i < N; i++) {
        c[i] = 2 + i;
        x[i] = 0.45; /* the first step goes past 0 for most i */
    }
    obj o = {0};
    o.n = N;
    o.c = c;
    pxl_ad_solve_options opt = tight_options();
    pxl_ad_solve_summary s;
    CHECK_MSG(ad_lbfgs(g_ctx, N, x, NULL, NULL, f_log, &o, &opt, &s) == PXL_OK, "%s", pxl_ctx_error(g_ctx));
    print_lb("log barrier", &s, &o);
    CHECK_MSG(o.nan_calls > 0, "the test should have stepped outside the domain (%d calls)", o.calls);
    double err = 0;
    for (int i = 0; i < N; i++) err = fmax(err, fabs(x[i] * c[i] - 1));
    /* f is flat to rounding within ~1e-7 of the minimum: that is as close as f tells */
    CHECK_MSG(err < 1e-6, "log barrier: max relative error %.3g", err);
    CHECK(isfinite(s.final_cost) && s.final_cost < s.initial_cost);

    /* NaN at the start is refused */
    double xn[N];
    for (int i = 0; i < N; i++) xn[i] = -1;
    CHECK(ad_lbfgs(g_ctx, N, xn, NULL, NULL, f_log, &o, &opt, &s) == PXL_ERR_INVALID_ARG);
    CHECK(s.termination == PXL_AD_FAILURE);
}

static void test_lbfgs_limits(void) {
    enum { N = 100 };
    double x[N];
    pxl_ad_solve_options opt = tight_options();
    pxl_ad_solve_summary s;
    /* max_iterations: NO_CONVERGENCE, not an error, x better than the start */
    for (int i = 0; i < N; i++) x[i] = i % 2 ? 1 : -1.2;
    obj o = {0};
    o.n = N;
    opt.max_iterations = 5;
    CHECK(ad_lbfgs(g_ctx, N, x, NULL, NULL, f_rosen, &o, &opt, &s) == PXL_OK);
    CHECK(s.termination == PXL_AD_NO_CONVERGENCE && s.iterations == 5 && s.final_cost < s.initial_cost);

    /* max_seconds: each call waits 2 ms; a 20 ms limit stops long before the
     * 10^6 iterations (how many it takes is not checked) */
    for (int i = 0; i < N; i++) x[i] = i % 2 ? 1 : -1.2;
    memset(&o, 0, sizeof o);
    o.n = N;
    o.sleep_s = 2e-3;
    opt.max_iterations = 1000000;
    opt.max_seconds = 0.02;
    CHECK(ad_lbfgs(g_ctx, N, x, NULL, NULL, f_rosen, &o, &opt, &s) == PXL_OK);
    print_lb("max_seconds", &s, &o);
    CHECK(s.termination == PXL_AD_NO_CONVERGENCE && strstr(s.message, "time limit") != NULL);
    CHECK(s.iterations < 1000000 && s.eval_seconds > 0);

    /* a failing objective aborts with its status; x stays at the best point */
    for (int i = 0; i < N; i++) x[i] = i % 2 ? 1 : -1.2;
    memset(&o, 0, sizeof o);
    o.n = N;
    o.fail_at = 12;
    opt.max_seconds = 0;
    CHECK(ad_lbfgs(g_ctx, N, x, NULL, NULL, f_rosen, &o, &opt, &s) == PXL_ERR_IO);
    CHECK(s.termination == PXL_AD_FAILURE && strstr(s.message, "on purpose") != NULL);
    double g[N], f;
    memset(&o, 0, sizeof o);
    o.n = N;
    f_rosen(&o, x, &f, g);
    CHECK(f < s.initial_cost && fabs(s.initial_cost / (24.2 * N / 2) - 1) < 1e-14 && s.final_cost == f);

    /* already at the minimum: CONVERGED_GRADIENT at the start, no iteration */
    for (int i = 0; i < N; i++) x[i] = 1;
    CHECK(ad_lbfgs(g_ctx, N, x, NULL, NULL, f_rosen, &o, NULL, &s) == PXL_OK);
    CHECK(s.termination == PXL_AD_CONVERGED_GRADIENT && s.iterations == 0 && s.final_cost == 0);

    /* the default function tolerance stops Rosenbrock early but near */
    for (int i = 0; i < N; i++) x[i] = i % 2 ? 1 : -1.2;
    CHECK(ad_lbfgs(g_ctx, N, x, NULL, NULL, f_rosen, &o, NULL, &s) == PXL_OK);
    print_lb("defaults", &s, &o);
    CHECK(s.termination != PXL_AD_FAILURE && s.termination != PXL_AD_NO_CONVERGENCE && s.final_cost < 1e-3);

    /* bad options */
    opt = tight_options();
    opt.gradient_tolerance = -1;
    CHECK(ad_lbfgs(g_ctx, N, x, NULL, NULL, f_rosen, &o, &opt, &s) == PXL_ERR_INVALID_ARG);
    opt = tight_options();
    opt.lbfgs_memory = -2;
    CHECK(ad_lbfgs(g_ctx, N, x, NULL, NULL, f_rosen, &o, &opt, &s) == PXL_ERR_INVALID_ARG);
    CHECK(ad_lbfgs(g_ctx, N, x, NULL, NULL, NULL, &o, NULL, &s) == PXL_ERR_INVALID_ARG);
    CHECK(ad_lbfgs(NULL, N, x, NULL, NULL, f_rosen, &o, NULL, &s) == PXL_ERR_INVALID_ARG);
    x[3] = (double)NAN;
    CHECK(ad_lbfgs(g_ctx, N, x, NULL, NULL, f_rosen, &o, NULL, &s) == PXL_ERR_INVALID_ARG);
}

int main(void) {
    g_ctx = test_ctx(PXL_BACKEND_CPU, 1);
    if (!g_ctx) {
        fprintf(stderr, "test_ad_linalg: no context\n");
        return 1;
    }
    test_chol_patterns();
    test_chol_not_posdef();
    test_chol_refusals();
    test_lbfgs_rosenbrock();
    test_lbfgs_quadratic();
    test_lbfgs_bounds();
    test_lbfgs_nan();
    test_lbfgs_limits();
    pxl_ctx_free(g_ctx);
    return test_result("test_ad_linalg");
}
