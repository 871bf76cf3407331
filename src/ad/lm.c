/*
 * Levenberg-Marquardt and Gauss-Newton for problems (pxl/ad.h,
 * pxl_ad_problem_solve).
 *
 * One iteration: the residuals and Jacobian rows of every group (corrected
 * for the robust losses as Ceres' corrector does) give g = J^T r and
 * Marquardt's scaling D, as in MINPACK the running maximum over the accepted
 * points of diag(J^T J), each entry clamped to [1e-6, 1e32]; the step solves
 * (J^T J + mu D) delta = -g over the free parameters (mu = 0 for
 * Gauss-Newton) with one of four linear solvers:
 *   DENSE_CHOLESKY  J^T J dense (n_free^2), Cholesky;
 *   DENSE_QR        Householder QR of [J; sqrt(mu D)], never forming J^T J;
 *   SPARSE_CHOLESKY the upper triangle of J^T J in CSC, pattern found once
 *                   per solve from the parameter indices, factorised by
 *                   ad_chol (chol.c);
 *   CGNR            Jacobi-preconditioned conjugate gradients with J v and
 *                   J^T v from the rows (J^T through a per-column list).
 * Every sum runs in a fixed order (groups, instances, residuals, slots; for
 * J^T v the per-column list in that order): results do not depend on the
 * thread count. The trial point x + delta is projected onto the bounds; LM
 * accepts it when the gain ratio (actual over predicted cost reduction of
 * the projected step) exceeds 1e-3, Gauss-Newton backtracks on the cost.
 */
#include "ad_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LM_MIN_DIAG 1e-6
#define LM_MAX_DIAG 1e32
#define LM_MAX_MU 1e32
#define LM_MIN_RHO 1e-3
#define LM_AUTO_DENSE_MAX 512
#define LM_DENSE_QR_MAX_CELLS ((size_t)1 << 28)
#define GN_PIVOT_TOL 1e-12
#define LM_CG_TOLERANCE 1e-6 /* relative residual of the normal equations */
#define LM_CG_MAX_ITERATIONS 500
#define GN_MAX_HALVINGS 40

typedef struct lm_state {
    pxl_ad_problem *pb;
    pxl_ctx *ctx;
    const pxl_ad_eval_options *eval;
    size_t n, nf, n_res, n_jac;
    int64_t *col;            /* n: free column of a parameter, -1 when constant */
    size_t *roff, *joff;     /* per group: first residual, first Jacobian entry */
    double *r, *J;           /* at the current point, corrected */
    double *r_new, *J_new;   /* at the trial point */
    double *g, *diag, *D;    /* nf */
    double *b;               /* nf: the right-hand side -g, 0 on active bounds */
    unsigned char *active;   /* nf: on a bound the gradient pushes against: held for this step */
    double *d_free, *x_new, *step; /* nf, n, n */
    double *rows;            /* n_res scratch */
    pxl_ad_linear_solver solver;
    int cg_max;    /* CGNR: iterations per step */
    double cg_tol; /* CGNR: relative residual */
    double gn_tol;           /* relative pivot limit: 0 for LM, GN_PIVOT_TOL for Gauss-Newton */
    /* dense */
    double *H, *A;
    /* sparse */
    int64_t *colptr, *rowind;
    size_t nnz, *diagpos;
    double *hv, *av;
    ad_chol *chol;
    /* CGNR */
    size_t *tptr, *tent, *trow;
    double *cg;              /* 4 nf */
    size_t *rtask;           /* row tasks: 3 per task (group, first, end instance) */
    size_t n_rtasks, cols_per_task;
    const double *mv_in;     /* the vector of the product being computed */
    double *mv_out, mv_mu;
} lm_state;

/* The rows of the system, in the fixed order: calls body with row (k
 * entries), the parameter indices pi, the slot count k and the residual
 * index ri. */
#define LM_FOR_ROWS(S, JAC, body)                                                   \
    for (size_t gi_ = 0; gi_ < (S)->pb->n_groups; gi_++) {                          \
        const ad_group *grp_ = &(S)->pb->groups[gi_];                               \
        const size_t m_ = grp_->prog->n_out, k = grp_->prog->n_params;              \
        for (size_t i_ = 0; i_ < grp_->n_inst; i_++) {                              \
            const uint32_t *pi = grp_->pidx + i_ * k;                               \
            for (size_t o_ = 0; o_ < m_; o_++) {                                    \
                const size_t ri = (S)->roff[gi_] + i_ * m_ + o_;                    \
                const double *row = (JAC) + (S)->joff[gi_] + (i_ * m_ + o_) * k;    \
                body                                                                \
            }                                                                       \
        }                                                                           \
    }

static double norm2(const double *v, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += v[i] * v[i];
    return sqrt(s);
}

static double clampd(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Residuals and Jacobian of all groups at x into r, J (corrected for the
 * losses when J is not NULL); *cost = sum 1/2 rho(|f_i|^2), HUGE_VAL when a
 * residual is not finite; *jac_ok 0 when a Jacobian entry is not finite. */
static pxl_status lm_evaluate(lm_state *S, const double *x, double *r, double *J, double *cost, int *jac_ok) {
    pxl_ad_problem *pb = S->pb;
    double c = 0;
    int ok = 1;
    for (size_t gi = 0; gi < pb->n_groups; gi++) {
        const ad_group *g = &pb->groups[gi];
        const size_t m = g->prog->n_out, k = g->prog->n_params;
        double *rg = r + S->roff[gi], *jg = J ? J + S->joff[gi] : NULL;
        pxl_status st = ad_group_eval(pb, gi, x, rg, jg, S->eval);
        if (st != PXL_OK) return st;
        for (size_t i = 0; i < g->n_inst; i++) {
            double *f = rg + i * m;
            double s = 0;
            for (size_t o = 0; o < m; o++) s += f[o] * f[o];
            if (!isfinite(s)) {
                c = HUGE_VAL;
                continue;
            }
            if (jg) { /* constant parameters' columns are dropped: only free ones count */
                const double *ji = jg + i * m * k;
                const uint32_t *pi = g->pidx + i * k;
                for (size_t e = 0; e < m * k; e++)
                    if (!isfinite(ji[e]) && !pb->constant[pi[e % k]]) ok = 0;
            }
            if (g->loss.kind == PXL_AD_LOSS_NONE) {
                c += 0.5 * s;
                continue;
            }
            double rho[3];
            ad_loss_eval(&g->loss, s, rho);
            c += 0.5 * rho[0];
            ad_loss_correct(rho, s, f, m, jg ? jg + i * m * k : NULL, k);
        }
    }
    *cost = isfinite(c) ? c : HUGE_VAL;
    *jac_ok = ok;
    return PXL_OK;
}

/* g = J^T r and diag(J^T J) over the free columns (slots of one row that
 * read the same parameter are added before squaring). */
static void lm_gradient(lm_state *S) {
    memset(S->g, 0, S->nf * sizeof *S->g);
    memset(S->diag, 0, S->nf * sizeof *S->diag);
    const int64_t *col = S->col;
    LM_FOR_ROWS(S, S->J, {
        const double ro = S->r[ri];
        for (size_t a = 0; a < k; a++) {
            const int64_t ca = col[pi[a]];
            if (ca < 0) continue;
            S->g[ca] += row[a] * ro;
            int first = 1;
            for (size_t b = 0; b < a && first; b++) first = pi[b] != pi[a];
            if (!first) continue;
            double s = row[a];
            for (size_t b = a + 1; b < k; b++)
                if (pi[b] == pi[a]) s += row[b];
            S->diag[ca] += s * s;
        }
    })
}

/* sum over rows of (J d)^2, d over the free columns. */
static double lm_jd2(lm_state *S, const double *d) {
    double t = 0;
    const int64_t *col = S->col;
    LM_FOR_ROWS(S, S->J, {
        (void)ri;
        double s = 0;
        for (size_t a = 0; a < k; a++) {
            const int64_t ca = col[pi[a]];
            if (ca >= 0) s += row[a] * d[ca];
        }
        t += s * s;
    })
    return t;
}

/* ---- dense Cholesky ------------------------------------------------------- */

static void dense_assemble(lm_state *S) {
    const size_t nf = S->nf;
    const int64_t *col = S->col;
    memset(S->H, 0, nf * nf * sizeof *S->H);
    LM_FOR_ROWS(S, S->J, {
        (void)ri;
        for (size_t a = 0; a < k; a++) {
            const int64_t ca = col[pi[a]];
            if (ca < 0 || row[a] == 0) continue;
            double *h = S->H + (size_t)ca * nf;
            for (size_t b = 0; b < k; b++) {
                const int64_t cb = col[pi[b]];
                if (cb >= 0) h[cb] += row[a] * row[b];
            }
        }
    })
}

static int dense_chol_solve(lm_state *S, double mu, double *x) {
    const size_t n = S->nf;
    memcpy(S->A, S->H, n * n * sizeof *S->A);
    for (size_t j = 0; j < n; j++) S->A[j * n + j] += mu * S->D[j];
    for (size_t j = 0; j < n; j++) {
        if (!S->active[j]) continue;
        for (size_t i = 0; i < n; i++) S->A[j * n + i] = S->A[i * n + j] = 0;
        S->A[j * n + j] = 1;
    }
    if (ad_dense_cholesky(S->A, n, S->gn_tol) < n) return 0;
    ad_dense_cholesky_solve(S->A, n, S->b, x);
    return 1;
}

/* ---- dense QR ------------------------------------------------------------- */

/* Householder QR of M = [J; sqrt(mu D)] ((n_res + nf) x nf, column-major in
 * S->A) applied to [-r; 0]; then R x = (Q^T b)[0:nf]. 0 when R has a diagonal
 * entry not above 1e-12 (LM: 0) of the largest. */
static int dense_qr_solve(lm_state *S, double mu, double *x) {
    const size_t nf = S->nf, rows = S->n_res + nf;
    double *M = S->A, *b = S->rows;
    const int64_t *col = S->col;
    memset(M, 0, rows * nf * sizeof *M);
    LM_FOR_ROWS(S, S->J, {
        for (size_t a = 0; a < k; a++) {
            const int64_t ca = col[pi[a]];
            if (ca >= 0 && !S->active[ca]) M[(size_t)ca * rows + ri] += row[a];
        }
    })
    for (size_t j = 0; j < nf; j++) M[j * rows + S->n_res + j] = S->active[j] ? 1 : sqrt(mu * S->D[j]);
    for (size_t i = 0; i < S->n_res; i++) b[i] = -S->r[i];
    for (size_t i = S->n_res; i < rows; i++) b[i] = 0;
    double rmax = 0;
    for (size_t j = 0; j < nf; j++) {
        double *v = M + j * rows;
        double nrm = 0;
        for (size_t i = j; i < rows; i++) nrm += v[i] * v[i];
        nrm = sqrt(nrm);
        if (!isfinite(nrm)) return 0;
        if (nrm == 0) {
            if (S->gn_tol > 0) return 0;
            continue;
        }
        const double alpha = v[j] > 0 ? -nrm : nrm;
        v[j] -= alpha; /* v = x - alpha e1; H = I - 2 v v^T / v^T v */
        double vv = 0;
        for (size_t i = j; i < rows; i++) vv += v[i] * v[i];
        for (size_t c = j + 1; c < nf; c++) {
            double *w = M + c * rows;
            double s = 0;
            for (size_t i = j; i < rows; i++) s += v[i] * w[i];
            s = 2 * s / vv;
            for (size_t i = j; i < rows; i++) w[i] -= s * v[i];
        }
        double s = 0;
        for (size_t i = j; i < rows; i++) s += v[i] * b[i];
        s = 2 * s / vv;
        for (size_t i = j; i < rows; i++) b[i] -= s * v[i];
        v[j] = alpha; /* R_jj */
        if (fabs(alpha) > rmax) rmax = fabs(alpha);
    }
    const double lim = S->gn_tol > 0 ? S->gn_tol * rmax : 0;
    for (size_t j = 0; j < nf; j++)
        if (!(fabs(M[j * rows + j]) > lim)) return 0;
    for (size_t i = nf; i-- > 0;) {
        double s = b[i];
        for (size_t c = i + 1; c < nf; c++) s -= M[c * rows + i] * x[c];
        x[i] = s / M[i * rows + i];
    }
    return 1;
}

/* ---- sparse Cholesky ------------------------------------------------------ */

static int64_t csc_find(const lm_state *S, int64_t r, int64_t c) {
    int64_t lo = S->colptr[c], hi = S->colptr[c + 1] - 1;
    while (lo <= hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (S->rowind[mid] == r) return mid;
        if (S->rowind[mid] < r) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

static int cmp_i64(const void *a, const void *b) {
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The pattern of the upper triangle of J^T J (and the diagonal) from the
 * parameter indices; then ad_chol's analysis. */
static pxl_status sparse_setup(lm_state *S, const char *fn) {
    pxl_ctx *ctx = S->ctx;
    pxl_ad_problem *pb = S->pb;
    const size_t nf = S->nf;
    size_t n_inst = pb->n_instances;
    size_t *gstart = pxl_calloc(ctx, pb->n_groups + 1, sizeof *gstart);
    size_t *iptr = pxl_calloc(ctx, nf + 1, sizeof *iptr);
    int64_t *mark = pxl_calloc(ctx, nf, sizeof *mark);
    size_t *ilist = NULL;
    pxl_status st = PXL_OK;
    if (!gstart || !iptr || !mark) goto oom;
    for (size_t gi = 0; gi < pb->n_groups; gi++) gstart[gi + 1] = gstart[gi] + pb->groups[gi].n_inst;
    /* instances touching each column (each once: mark holds the last instance + 1) */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t c = 0; c < nf; c++) mark[c] = 0;
        size_t *fill = pass ? pxl_calloc(ctx, nf ? nf : 1, sizeof *fill) : NULL;
        if (pass && !fill) goto oom;
        for (size_t gi = 0; gi < pb->n_groups; gi++) {
            const ad_group *g = &pb->groups[gi];
            const size_t k = g->prog->n_params;
            for (size_t i = 0; i < g->n_inst; i++) {
                const size_t id = gstart[gi] + i;
                for (size_t a = 0; a < k; a++) {
                    const int64_t c = S->col[g->pidx[i * k + a]];
                    if (c < 0 || mark[c] == (int64_t)id + 1) continue;
                    mark[c] = (int64_t)id + 1;
                    if (pass == 0) iptr[c + 1]++;
                    else ilist[iptr[c] + fill[c]++] = id;
                }
            }
        }
        if (pass == 0) {
            for (size_t c = 0; c < nf; c++) iptr[c + 1] += iptr[c];
            ilist = pxl_calloc(ctx, iptr[nf] ? iptr[nf] : 1, sizeof *ilist);
            if (!ilist) goto oom;
        } else {
            pxl_free(ctx, fill);
        }
    }
    /* rows r <= c of column c: the columns of the instances touching c */
    S->colptr = pxl_calloc(ctx, nf + 1, sizeof *S->colptr);
    if (!S->colptr) goto oom;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t c = 0; c < nf; c++) mark[c] = -1;
        for (size_t c = 0; c < nf; c++) {
            size_t cnt = 0;
            int64_t *out = pass ? S->rowind + S->colptr[c] : NULL;
            mark[c] = (int64_t)c;
            if (pass) out[cnt] = (int64_t)c;
            cnt++;
            for (size_t e = iptr[c]; e < iptr[c + 1]; e++) {
                const size_t id = ilist[e];
                size_t gi = 0;
                while (gstart[gi + 1] <= id) gi++;
                const ad_group *g = &pb->groups[gi];
                const size_t k = g->prog->n_params, i = id - gstart[gi];
                for (size_t a = 0; a < k; a++) {
                    const int64_t r = S->col[g->pidx[i * k + a]];
                    if (r < 0 || r > (int64_t)c || mark[r] == (int64_t)c) continue;
                    mark[r] = (int64_t)c;
                    if (pass) out[cnt] = r;
                    cnt++;
                }
            }
            if (pass == 0) S->colptr[c + 1] = S->colptr[c] + (int64_t)cnt;
            else qsort(out, cnt, sizeof *out, cmp_i64);
        }
        if (pass == 0) {
            S->nnz = (size_t)S->colptr[nf];
            S->rowind = pxl_calloc(ctx, S->nnz, sizeof *S->rowind);
            S->hv = pxl_calloc(ctx, S->nnz, sizeof *S->hv);
            S->av = pxl_calloc(ctx, S->nnz, sizeof *S->av);
            S->diagpos = pxl_calloc(ctx, nf ? nf : 1, sizeof *S->diagpos);
            if (!S->rowind || !S->hv || !S->av || !S->diagpos) goto oom;
        }
    }
    for (size_t c = 0; c < nf; c++) S->diagpos[c] = (size_t)csc_find(S, (int64_t)c, (int64_t)c);
    (void)n_inst;
    st = ad_chol_create(ctx, nf, S->colptr, S->rowind, &S->chol);
    goto done;
oom:
    st = pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "%s: out of memory (sparse pattern of %zu parameters)", fn, nf);
done:
    pxl_free(ctx, gstart);
    pxl_free(ctx, iptr);
    pxl_free(ctx, mark);
    pxl_free(ctx, ilist);
    return st;
}

static void sparse_assemble(lm_state *S) {
    const int64_t *col = S->col;
    memset(S->hv, 0, S->nnz * sizeof *S->hv);
    LM_FOR_ROWS(S, S->J, {
        (void)ri;
        for (size_t a = 0; a < k; a++) {
            const int64_t ca = col[pi[a]];
            if (ca < 0 || row[a] == 0) continue;
            for (size_t b = 0; b < k; b++) {
                const int64_t cb = col[pi[b]];
                if (cb < ca) continue;
                S->hv[csc_find(S, ca, cb)] += row[a] * row[b];
            }
        }
    })
}

static int sparse_solve(lm_state *S, double mu, double *x) {
    memcpy(S->av, S->hv, S->nnz * sizeof *S->av);
    for (size_t c = 0; c < S->nf; c++) {
        S->av[S->diagpos[c]] += mu * S->D[c];
        for (int64_t e = S->colptr[c]; e < S->colptr[c + 1]; e++)
            if (S->active[c] || S->active[S->rowind[e]]) S->av[e] = S->rowind[e] == (int64_t)c ? 1 : 0;
    }
    if (ad_chol_factor_solve(S->chol, S->av, S->b, x) != PXL_OK) return 0;
    if (S->gn_tol > 0) { /* a factorisation of a numerically singular matrix gives a huge step */
        for (size_t c = 0; c < S->nf; c++)
            if (!isfinite(x[c])) return 0;
    }
    return 1;
}

/* ---- CGNR ----------------------------------------------------------------- */

/* Per free column, the Jacobian entries (offsets into J) and their rows, in
 * the fixed row order. */
static pxl_status cgnr_setup(lm_state *S, const char *fn) {
    pxl_ctx *ctx = S->ctx;
    const size_t nf = S->nf;
    const int64_t *col = S->col;
    S->tptr = pxl_calloc(ctx, nf + 1, sizeof *S->tptr);
    size_t *fill = pxl_calloc(ctx, nf ? nf : 1, sizeof *fill);
    if (!S->tptr || !fill) goto oom;
    LM_FOR_ROWS(S, S->J, {
        (void)ri;
        (void)row;
        for (size_t a = 0; a < k; a++)
            if (col[pi[a]] >= 0) S->tptr[col[pi[a]] + 1]++;
    })
    for (size_t c = 0; c < nf; c++) S->tptr[c + 1] += S->tptr[c];
    S->tent = pxl_calloc(ctx, S->tptr[nf] ? S->tptr[nf] : 1, sizeof *S->tent);
    S->trow = pxl_calloc(ctx, S->tptr[nf] ? S->tptr[nf] : 1, sizeof *S->trow);
    if (!S->tent || !S->trow) goto oom;
    LM_FOR_ROWS(S, S->J, {
        for (size_t a = 0; a < k; a++) {
            const int64_t c = col[pi[a]];
            if (c < 0) continue;
            const size_t e = S->tptr[c] + fill[c]++;
            S->tent[e] = (size_t)(row - S->J) + a;
            S->trow[e] = ri;
        }
    })
    pxl_free(ctx, fill);
    /* row tasks of about 2048 rows, within one group each; column tasks */
    const size_t rows_per_task = 2048;
    size_t n = 0;
    for (int pass = 0; pass < 2; pass++) {
        n = 0;
        for (size_t gi = 0; gi < S->pb->n_groups; gi++) {
            const ad_group *g = &S->pb->groups[gi];
            const size_t per = rows_per_task / g->prog->n_out + 1;
            for (size_t i = 0; i < g->n_inst; i += per, n++)
                if (pass) {
                    S->rtask[3 * n] = gi;
                    S->rtask[3 * n + 1] = i;
                    S->rtask[3 * n + 2] = i + per < g->n_inst ? i + per : g->n_inst;
                }
        }
        if (pass == 0) {
            S->rtask = pxl_calloc(ctx, 3 * n + 3, sizeof *S->rtask);
            if (!S->rtask) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "%s: out of memory (CGNR tasks)", fn);
        }
    }
    S->n_rtasks = n;
    S->cols_per_task = nf / 64 + 1;
    if (S->cols_per_task < 256) S->cols_per_task = 256;
    return PXL_OK;
oom:
    pxl_free(ctx, fill);
    return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "%s: out of memory (CGNR lists)", fn);
}

/* u = J v for the rows of task t (each row by itself: any split gives the
 * same bits). */
static void cgnr_jv_task(void *arg, size_t t) {
    lm_state *S = arg;
    const size_t gi = S->rtask[3 * t], i0 = S->rtask[3 * t + 1], i1 = S->rtask[3 * t + 2];
    const ad_group *g = &S->pb->groups[gi];
    const size_t m = g->prog->n_out, k = g->prog->n_params;
    const double *v = S->mv_in;
    for (size_t i = i0; i < i1; i++) {
        const uint32_t *pi = g->pidx + i * k;
        for (size_t o = 0; o < m; o++) {
            const size_t ri = S->roff[gi] + i * m + o;
            const double *row = S->J + S->joff[gi] + (i * m + o) * k;
            double sum = 0;
            for (size_t a = 0; a < k; a++) {
                const int64_t c = S->col[pi[a]];
                if (c >= 0 && !S->active[c]) sum += row[a] * v[c];
            }
            S->rows[ri] = sum;
        }
    }
}

/* y = J^T u + mu D v for the columns of task t, each summed over its entry
 * list in row order. */
static void cgnr_jtu_task(void *arg, size_t t) {
    lm_state *S = arg;
    const size_t c0 = t * S->cols_per_task, c1 = c0 + S->cols_per_task < S->nf ? c0 + S->cols_per_task : S->nf;
    const double *v = S->mv_in, *u = S->rows;
    for (size_t c = c0; c < c1; c++) {
        if (S->active[c]) {
            S->mv_out[c] = v[c];
            continue;
        }
        double sum = 0;
        for (size_t e = S->tptr[c]; e < S->tptr[c + 1]; e++) sum += S->J[S->tent[e]] * u[S->trow[e]];
        S->mv_out[c] = sum + S->mv_mu * S->D[c] * v[c];
    }
}

/* y = (J^T J + mu D) v, on the context's threads unless the evaluation is
 * serial; the same bits either way. */
static void cgnr_apply(lm_state *S, double mu, const double *v, double *y) {
    S->mv_in = v;
    S->mv_out = y;
    S->mv_mu = mu;
    const size_t ct = (S->nf + S->cols_per_task - 1) / S->cols_per_task;
    if (S->eval->serial || S->n_rtasks == 1) {
        for (size_t t = 0; t < S->n_rtasks; t++) cgnr_jv_task(S, t);
    } else {
        pxl_parallel_for(S->ctx, S->n_rtasks, cgnr_jv_task, S);
    }
    if (S->eval->serial || ct == 1) {
        for (size_t t = 0; t < ct; t++) cgnr_jtu_task(S, t);
    } else {
        pxl_parallel_for(S->ctx, ct, cgnr_jtu_task, S);
    }
}

static int cgnr_solve(lm_state *S, double mu, double *x) {
    const size_t nf = S->nf;
    double *res = S->cg, *z = S->cg + nf, *p = S->cg + 2 * nf, *q = S->cg + 3 * nf;
    double bnorm = 0, rz = 0;
    for (size_t c = 0; c < nf; c++) {
        x[c] = 0;
        res[c] = S->b[c];
        bnorm += res[c] * res[c];
    }
    bnorm = sqrt(bnorm);
    if (bnorm == 0) return 1;
    for (size_t c = 0; c < nf; c++) {
        const double m = S->active[c] ? 1 : S->diag[c] + mu * S->D[c];
        z[c] = m > 0 ? res[c] / m : res[c];
        p[c] = z[c];
        rz += res[c] * z[c];
    }
    /* inexact steps (truncated Newton): LM's gain ratio judges each step by
       its own model reduction, so the solve converges to the same point */
    size_t max_it = 2 * nf + 10;
    if (max_it > (size_t)S->cg_max) max_it = (size_t)S->cg_max;
    for (size_t it = 0; it < max_it; it++) {
        cgnr_apply(S, mu, p, q);
        double pq = 0;
        for (size_t c = 0; c < nf; c++) pq += p[c] * q[c];
        if (!(pq > 0) || !isfinite(pq)) return it > 0 && S->gn_tol == 0; /* not positive definite along p */
        const double alpha = rz / pq;
        double rn = 0;
        for (size_t c = 0; c < nf; c++) {
            x[c] += alpha * p[c];
            res[c] -= alpha * q[c];
            rn += res[c] * res[c];
        }
        if (sqrt(rn) <= S->cg_tol * bnorm) break;
        double rz_new = 0;
        for (size_t c = 0; c < nf; c++) {
            const double m = S->active[c] ? 1 : S->diag[c] + mu * S->D[c];
            z[c] = m > 0 ? res[c] / m : res[c];
            rz_new += res[c] * z[c];
        }
        const double beta = rz_new / rz;
        rz = rz_new;
        for (size_t c = 0; c < nf; c++) p[c] = z[c] + beta * p[c];
    }
    for (size_t c = 0; c < nf; c++)
        if (!isfinite(x[c])) return 0;
    return 1;
}

/* ---- the solver ----------------------------------------------------------- */

/* What a new point x needs: g, D (the largest clamped diag(J^T J) seen in
 * this solve, as MINPACK keeps it: a column whose norm shrinks near the
 * solution does not make steps along it cheap), the active bounds, the
 * right-hand side and the matrix of the linear solver. */
static void lm_prepare(lm_state *S, const double *x) {
    lm_gradient(S);
    for (size_t c = 0; c < S->nf; c++) S->D[c] = fmax(S->D[c], clampd(S->diag[c], LM_MIN_DIAG, LM_MAX_DIAG));
    for (size_t j = 0; j < S->n; j++) {
        const int64_t c = S->col[j];
        if (c < 0) continue;
        S->active[c] = (x[j] <= S->pb->lower[j] && S->g[c] > 0) || (x[j] >= S->pb->upper[j] && S->g[c] < 0);
        S->b[c] = S->active[c] ? 0 : -S->g[c];
    }
    if (S->solver == PXL_AD_DENSE_CHOLESKY) dense_assemble(S);
    else if (S->solver == PXL_AD_SPARSE_CHOLESKY) sparse_assemble(S);
}

static int lm_linear(lm_state *S, double mu, double *x) {
    switch (S->solver) {
    case PXL_AD_DENSE_QR: return dense_qr_solve(S, mu, x);
    case PXL_AD_SPARSE_CHOLESKY: return sparse_solve(S, mu, x);
    case PXL_AD_CGNR: return cgnr_solve(S, mu, x);
    default: return dense_chol_solve(S, mu, x);
    }
}

/* max over free j of |x_j - P(x_j - g_j)| (= max |g_j| without bounds). */
static double projected_gradient(const lm_state *S, const double *x) {
    const pxl_ad_problem *pb = S->pb;
    double m = 0;
    for (size_t j = 0; j < S->n; j++) {
        const int64_t c = S->col[j];
        if (c < 0) continue;
        const double t = clampd(x[j] - S->g[c], pb->lower[j], pb->upper[j]);
        m = fmax(m, fabs(x[j] - t));
    }
    return m;
}

/* x_new = P(x + t delta); S->d_free = the projected step on free columns,
 * S->step the whole one. */
static void lm_trial(lm_state *S, const double *x, const double *delta, double t) {
    const pxl_ad_problem *pb = S->pb;
    for (size_t j = 0; j < S->n; j++) {
        const int64_t c = S->col[j];
        if (c < 0) {
            S->x_new[j] = x[j];
            S->step[j] = 0;
            continue;
        }
        S->x_new[j] = clampd(x[j] + t * delta[c], pb->lower[j], pb->upper[j]);
        S->step[j] = S->x_new[j] - x[j];
        S->d_free[c] = S->step[j];
    }
}

static void lm_free(lm_state *S) {
    pxl_ctx *ctx = S->ctx;
    void *p[] = {S->col, S->roff, S->joff, S->r, S->J, S->r_new, S->J_new, S->g, S->diag, S->D, S->d_free,
                 S->x_new, S->step, S->rows, S->H, S->A, S->colptr, S->rowind, S->diagpos, S->hv, S->av,
                 S->tptr, S->tent, S->trow, S->cg, S->b, S->active, S->rtask};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) pxl_free(ctx, p[i]);
    ad_chol_free(S->chol);
}

/* 1 when the evaluations of pb run on the GPU with these options (AUTO:
 * the context has a GPU and the problem is large enough to pay). */
static int lm_on_gpu(const pxl_ad_problem *pb, const pxl_ad_eval_options *e) {
    if (e->backend == PXL_AD_GPU) return 1;
    if (e->backend != PXL_AD_AUTO) return 0;
    for (size_t gi = 0; gi < pb->n_groups; gi++)
        if (ad_auto_gpu(pb->ctx, pb->groups[gi].prog, pb->groups[gi].n_inst)) return 1;
    return 0;
}

static pxl_status lm_run(pxl_ad_problem *pb, double *params, const pxl_ad_solve_options *opts,
                         pxl_ad_solve_summary *sm) {
    static const char fn[] = "pxl_ad_problem_solve";
    pxl_ctx *ctx = pb->ctx;
    const double t_start = pxl_time_now();
    pxl_ad_solve_options o;
    memset(&o, 0, sizeof o);
    if (opts) o = *opts;
    if (o.max_iterations < 0 || o.function_tolerance < 0 || o.gradient_tolerance < 0 ||
        o.parameter_tolerance < 0 || o.initial_mu < 0 || o.max_seconds < 0 || !isfinite(o.function_tolerance) ||
        !isfinite(o.gradient_tolerance) || !isfinite(o.parameter_tolerance) || !isfinite(o.initial_mu) ||
        !isfinite(o.max_seconds) || o.max_linear_iterations < 0 || o.linear_tolerance < 0 ||
        !isfinite(o.linear_tolerance))
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: an option is negative or not finite", fn);
    if (o.method != PXL_AD_LEVENBERG_MARQUARDT && o.method != PXL_AD_GAUSS_NEWTON)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: unknown method %d", fn, (int)o.method);
    if ((int)o.linear_solver < PXL_AD_LINEAR_AUTO || (int)o.linear_solver > PXL_AD_CGNR)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: unknown linear solver %d", fn, (int)o.linear_solver);
    const int max_it = o.max_iterations ? o.max_iterations : 100;
    const double ftol = o.function_tolerance > 0 ? o.function_tolerance : 1e-6;
    const double gtol = o.gradient_tolerance > 0 ? o.gradient_tolerance : 1e-10;
    const double ptol = o.parameter_tolerance > 0 ? o.parameter_tolerance : 1e-8;
    const int gn = o.method == PXL_AD_GAUSS_NEWTON;
    double mu = gn ? 0 : o.initial_mu > 0 ? o.initial_mu : 1e-4;

    const size_t n = pb->n_params;
    for (size_t j = 0; j < n; j++) {
        if (!isfinite(params[j]))
            return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: parameter %zu is not finite (%g)", fn, j, params[j]);
        if (params[j] < pb->lower[j] || params[j] > pb->upper[j])
            return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: parameter %zu = %g is outside its bounds [%g, %g]", fn,
                            j, params[j], pb->lower[j], pb->upper[j]);
    }
    if (pb->n_residuals == 0) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: no residuals", fn);

    lm_state S;
    memset(&S, 0, sizeof S);
    S.pb = pb;
    S.ctx = ctx;
    S.eval = &o.eval;
    S.cg_max = o.max_linear_iterations > 0 ? o.max_linear_iterations : LM_CG_MAX_ITERATIONS;
    S.cg_tol = o.linear_tolerance > 0 ? o.linear_tolerance : LM_CG_TOLERANCE;
    S.n = n;
    S.n_res = pb->n_residuals;
    S.gn_tol = gn ? GN_PIVOT_TOL : 0;
    pxl_status st = PXL_OK;
    S.col = pxl_calloc(ctx, n, sizeof *S.col);
    S.roff = pxl_calloc(ctx, pb->n_groups + 1, sizeof *S.roff);
    S.joff = pxl_calloc(ctx, pb->n_groups + 1, sizeof *S.joff);
    if (!S.col || !S.roff || !S.joff) goto oom;
    for (size_t j = 0; j < n; j++) S.col[j] = pb->constant[j] ? -1 : (int64_t)S.nf++;
    for (size_t gi = 0; gi < pb->n_groups; gi++) {
        const ad_group *g = &pb->groups[gi];
        size_t c;
        if (!pxl_mul_size(g->n_inst * g->prog->n_out, g->prog->n_params, &c) ||
            !pxl_add_size(S.joff[gi], c, &S.joff[gi + 1])) {
            st = pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: the Jacobian's size overflows", fn);
            goto done;
        }
        S.roff[gi + 1] = S.roff[gi] + g->n_inst * g->prog->n_out;
    }
    S.n_jac = S.joff[pb->n_groups];
    const size_t nf = S.nf;
    S.solver = o.linear_solver;
    if (S.solver == PXL_AD_LINEAR_AUTO) {
        const int on_gpu = lm_on_gpu(pb, &o.eval);
        S.solver = nf <= LM_AUTO_DENSE_MAX ? PXL_AD_DENSE_CHOLESKY : on_gpu ? PXL_AD_CGNR : PXL_AD_SPARSE_CHOLESKY;
    }
    /* CGNR with the evaluation on the GPU: the whole solve stays there
     * (gpu_solve.c), for Levenberg-Marquardt, robust losses included */
    if (S.solver == PXL_AD_CGNR && !gn && lm_on_gpu(pb, &o.eval)) {
        ad_group_view *gv = pxl_calloc(ctx, pb->n_groups, sizeof *gv);
        if (!gv) goto oom;
        for (size_t gi = 0; gi < pb->n_groups; gi++) {
            const ad_group *g = &pb->groups[gi];
            gv[gi] = (ad_group_view){g->prog, g->pidx, g->inputs, g->n_inst, g->loss};
        }
        st = ad_gpu_lm(ctx, gv, pb->n_groups, n, pb->constant, pb->lower, pb->upper, params, &o, sm);
        pxl_free(ctx, gv);
        goto done;
    }
    if ((S.solver == PXL_AD_DENSE_CHOLESKY || S.solver == PXL_AD_DENSE_QR) && nf > 4096) {
        st = pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: %zu free parameters are too many for %s (at most 4096)", fn, nf,
                      pxl_ad_linear_solver_name(S.solver));
        goto done;
    }
    size_t qr_cells = 0;
    if (S.solver == PXL_AD_DENSE_QR &&
        (!pxl_mul_size(S.n_res + nf, nf, &qr_cells) || qr_cells > LM_DENSE_QR_MAX_CELLS)) {
        st = pxl_fail(ctx, PXL_ERR_INVALID_ARG,
                      "%s: DENSE_QR would need a %zu x %zu matrix; use a Cholesky solver or CGNR", fn,
                      S.n_res + nf, nf);
        goto done;
    }
    S.r = pxl_calloc(ctx, S.n_res, sizeof *S.r);
    S.r_new = pxl_calloc(ctx, S.n_res, sizeof *S.r);
    S.rows = pxl_calloc(ctx, S.n_res + nf, sizeof *S.rows);
    S.J = pxl_calloc(ctx, S.n_jac ? S.n_jac : 1, sizeof *S.J);
    S.J_new = pxl_calloc(ctx, S.n_jac ? S.n_jac : 1, sizeof *S.J);
    S.g = pxl_calloc(ctx, nf + 1, sizeof *S.g);
    S.diag = pxl_calloc(ctx, nf + 1, sizeof *S.g);
    S.D = pxl_calloc(ctx, nf + 1, sizeof *S.g);
    S.b = pxl_calloc(ctx, nf + 1, sizeof *S.g);
    S.active = pxl_calloc(ctx, nf + 1, 1);
    S.d_free = pxl_calloc(ctx, nf + 1, sizeof *S.g);
    S.cg = pxl_calloc(ctx, 4 * nf + 1, sizeof *S.g);
    S.x_new = pxl_calloc(ctx, n, sizeof *S.g);
    S.step = pxl_calloc(ctx, n, sizeof *S.g);
    double *delta = pxl_calloc(ctx, nf + 1, sizeof *delta);
    if (!S.r || !S.r_new || !S.rows || !S.J || !S.J_new || !S.g || !S.diag || !S.D || !S.d_free || !S.cg || !S.b || !S.active ||
        !S.x_new || !S.step || !delta)
        goto oom_delta;
    if (S.solver == PXL_AD_DENSE_CHOLESKY) {
        S.H = pxl_calloc(ctx, nf * nf + 1, sizeof *S.H);
        S.A = pxl_calloc(ctx, nf * nf + 1, sizeof *S.A);
        if (!S.H || !S.A) goto oom_delta;
    } else if (S.solver == PXL_AD_DENSE_QR) {
        S.A = pxl_calloc(ctx, qr_cells + 1, sizeof *S.A);
        if (!S.A) goto oom_delta;
    }

    memset(sm, 0, sizeof *sm);
    sm->linear_solver = S.solver;
    sm->n_residuals = S.n_res;
    sm->n_free_params = nf;
    double t_eval = 0, t_lin = 0, t0 = pxl_time_now();
    double cost;
    int jac_ok;
    st = lm_evaluate(&S, params, S.r, S.J, &cost, &jac_ok);
    t_eval += pxl_time_now() - t0;
    if (st != PXL_OK) goto done_delta;
    if (!isfinite(cost) || !jac_ok) {
        st = pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: the residuals or the Jacobian at the start are not finite", fn);
        goto done_delta;
    }
    t0 = pxl_time_now();
    if (nf > 0 && S.solver == PXL_AD_SPARSE_CHOLESKY) st = sparse_setup(&S, fn);
    else if (nf > 0 && S.solver == PXL_AD_CGNR) st = cgnr_setup(&S, fn);
    if (st != PXL_OK) goto done_delta;
    lm_prepare(&S, params);
    t_lin += pxl_time_now() - t0;
    sm->initial_cost = cost;
    double nu = 2;
    sm->termination = PXL_AD_NO_CONVERGENCE;
    snprintf(sm->message, sizeof sm->message, "%d iterations without convergence", max_it);
    double gmax = projected_gradient(&S, params);
    if (nf == 0) {
        sm->termination = PXL_AD_CONVERGED_GRADIENT;
        snprintf(sm->message, sizeof sm->message, "no free parameters");
    } else if (gmax <= gtol) {
        sm->termination = PXL_AD_CONVERGED_GRADIENT;
        snprintf(sm->message, sizeof sm->message, "max |gradient| %.3g <= %.3g at the start", gmax, gtol);
    }
    while (sm->termination == PXL_AD_NO_CONVERGENCE && sm->iterations < max_it) {
        if (o.max_seconds > 0 && pxl_time_now() - t_start >= o.max_seconds) {
            snprintf(sm->message, sizeof sm->message, "time limit of %.3g s reached after %d iterations",
                     o.max_seconds, sm->iterations);
            break;
        }
        if (mu > LM_MAX_MU) {
            sm->termination = PXL_AD_CONVERGED_PARAMETER;
            snprintf(sm->message, sizeof sm->message, "damping mu %.3g > %.3g: no step reduces the cost", mu,
                     LM_MAX_MU);
            break;
        }
        sm->iterations++;
        t0 = pxl_time_now();
        int ok = lm_linear(&S, mu, delta);
        for (size_t c = 0; c < nf && ok; c++) ok = isfinite(delta[c]);
        t_lin += pxl_time_now() - t0;
        if (!ok) {
            if (gn) {
                sm->termination = PXL_AD_FAILURE;
                snprintf(sm->message, sizeof sm->message,
                         "Gauss-Newton: J^T J is singular or not positive definite (%s)",
                         pxl_ad_linear_solver_name(S.solver));
                st = pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: %s", fn, sm->message);
                break;
            }
            mu *= nu; /* a rejected step */
            nu *= 2;
            if (o.progress) o.progress(o.progress_user, sm->iterations, cost);
            continue;
        }
        lm_trial(&S, params, delta, 1);
        const double x_norm = norm2(params, n), step_norm = norm2(S.step, n);
        if (step_norm <= ptol * (x_norm + ptol)) {
            sm->termination = PXL_AD_CONVERGED_PARAMETER;
            snprintf(sm->message, sizeof sm->message, "step %.3g <= %.3g * (|x| %.3g + %.3g)", step_norm, ptol,
                     x_norm, ptol);
            break;
        }
        double cost_new = HUGE_VAL;
        int accepted = 0;
        if (gn) {
            /* backtracking on the cost (Armijo with 1e-4) along the projected step */
            double t = 1;
            for (int h = 0; h <= GN_MAX_HALVINGS && !accepted; h++, t *= 0.5) {
                if (h > 0) lm_trial(&S, params, delta, t);
                double gd = 0;
                for (size_t c = 0; c < nf; c++) gd += S.g[c] * S.d_free[c];
                t0 = pxl_time_now();
                st = lm_evaluate(&S, S.x_new, S.r_new, S.J_new, &cost_new, &jac_ok);
                t_eval += pxl_time_now() - t0;
                if (st != PXL_OK) goto done_delta;
                accepted = isfinite(cost_new) && jac_ok &&
                           (gd < 0 ? cost_new <= cost + 1e-4 * gd : cost_new < cost);
            }
            if (!accepted) {
                sm->termination = PXL_AD_CONVERGED_PARAMETER;
                snprintf(sm->message, sizeof sm->message,
                         "Gauss-Newton line search: no decrease along the step");
                if (o.progress) o.progress(o.progress_user, sm->iterations, cost);
                break;
            }
        } else {
            /* predicted reduction of the linear model: -(g.d + |J d|^2 / 2) */
            double gd = 0;
            for (size_t c = 0; c < nf; c++) gd += S.g[c] * S.d_free[c];
            const double predicted = -(gd + 0.5 * lm_jd2(&S, S.d_free));
            t0 = pxl_time_now();
            st = lm_evaluate(&S, S.x_new, S.r_new, S.J_new, &cost_new, &jac_ok);
            t_eval += pxl_time_now() - t0;
            if (st != PXL_OK) goto done_delta;
            const double rho = (isfinite(cost_new) && jac_ok && predicted > 0) ? (cost - cost_new) / predicted : -1.0;
            accepted = rho > LM_MIN_RHO;
            if (!accepted) {
                mu *= nu;
                nu *= 2;
                if (o.progress) o.progress(o.progress_user, sm->iterations, cost);
                continue;
            }
            const double f = 1 - (2 * rho - 1) * (2 * rho - 1) * (2 * rho - 1);
            mu *= f > 1.0 / 3 ? f : 1.0 / 3;
            nu = 2;
        }
        sm->successful_steps++;
        memcpy(params, S.x_new, n * sizeof *params);
        double *tmp = S.r;
        S.r = S.r_new;
        S.r_new = tmp;
        tmp = S.J;
        S.J = S.J_new;
        S.J_new = tmp;
        const double change = cost - cost_new, prev = cost;
        cost = cost_new;
        t0 = pxl_time_now();
        lm_prepare(&S, params);
        t_lin += pxl_time_now() - t0;
        gmax = projected_gradient(&S, params);
        if (o.progress) o.progress(o.progress_user, sm->iterations, cost);
        if (gmax <= gtol) {
            sm->termination = PXL_AD_CONVERGED_GRADIENT;
            snprintf(sm->message, sizeof sm->message, "max |gradient| %.3g <= %.3g", gmax, gtol);
        } else if (fabs(change) <= ftol * prev) {
            sm->termination = PXL_AD_CONVERGED_FUNCTION;
            snprintf(sm->message, sizeof sm->message, "|cost change| %.3g <= %.3g * cost %.3g", fabs(change), ftol,
                     prev);
        }
    }
    sm->final_cost = cost;
    sm->gradient_max_norm = gmax;
    sm->eval_seconds = t_eval;
    sm->linear_solver_seconds = t_lin;
    sm->total_seconds = pxl_time_now() - t_start;
    sm->other_seconds = fmax(0.0, sm->total_seconds - t_eval - t_lin);
    goto done_delta;
oom_delta:
    st = pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "%s: out of memory (%zu residuals, %zu free parameters)", fn, S.n_res,
                  nf);
done_delta:
    pxl_free(ctx, delta);
    goto done;
oom:
    st = pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "%s: out of memory (%zu parameters)", fn, n);
done:
    lm_free(&S);
    return st;
}

pxl_status pxl_ad_problem_solve(pxl_ad_problem *pb, double *params, const pxl_ad_solve_options *opts,
                                pxl_ad_solve_summary *summary) {
    if (!pb) return PXL_ERR_INVALID_ARG;
    PXL_REQUIRE(pb->ctx, "pxl_ad_problem_solve", params);
    pxl_ad_solve_summary sm;
    memset(&sm, 0, sizeof sm);
    pxl_status st = lm_run(pb, params, opts, &sm);
    if (st != PXL_OK && sm.termination != PXL_AD_FAILURE) {
        /* refused before it started */
        memset(&sm, 0, sizeof sm);
        sm.termination = PXL_AD_FAILURE;
        snprintf(sm.message, sizeof sm.message, "%s", pxl_ctx_error(pb->ctx));
    }
    if (summary) *summary = sm;
    return st;
}
