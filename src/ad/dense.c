/*
 * Dense Cholesky factorisation and solve, shared by the LM solver's dense
 * linear solver (lm.c) and the covariance (problem.c).
 */
#include "ad_internal.h"

#include <math.h>

size_t ad_dense_cholesky(double *A, size_t n, double tol) {
    for (size_t j = 0; j < n; j++) {
        double *aj = A + j * n;
        const double orig = aj[j];
        double d = orig;
        for (size_t p = 0; p < j; p++) d -= aj[p] * aj[p];
        if (!(d > tol * orig) || !(d > 0) || !isfinite(d)) return j;
        d = sqrt(d);
        aj[j] = d;
        for (size_t i = j + 1; i < n; i++) {
            double *ai = A + i * n;
            double s = ai[j];
            for (size_t p = 0; p < j; p++) s -= ai[p] * aj[p];
            ai[j] = s / d;
        }
    }
    return n;
}

void ad_dense_cholesky_solve(const double *L, size_t n, const double *b, double *x) {
    for (size_t i = 0; i < n; i++) {
        double s = b[i];
        for (size_t p = 0; p < i; p++) s -= L[i * n + p] * x[p];
        x[i] = s / L[i * n + i];
    }
    for (size_t i = n; i-- > 0;) {
        double s = x[i];
        for (size_t p = i + 1; p < n; p++) s -= L[p * n + i] * x[p];
        x[i] = s / L[i * n + i];
    }
}
