/*
 * Robust losses of the problem API (pxl/ad.h): rho(s) and its first two
 * derivatives, the parser of "huber:1.5", and Ceres' corrector, which turns a
 * robustified residual block into an ordinary one with the same
 * Gauss-Newton model (Triggs et al., "Bundle adjustment: a modern synthesis",
 * section 4.3, with Ceres' clamping of the curvature term).
 */
#include "ad_internal.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* rho' is kept above DBL_MIN where the loss says it is positive, as Ceres
 * does, so that the corrector never divides by 0. */
void ad_loss_eval(const pxl_ad_loss *l, double s, double rho[3]) {
    const double a = l->scale, b = a * a;
    switch (l->kind) {
    case PXL_AD_LOSS_HUBER:
        if (s > b) {
            const double r = sqrt(s);
            rho[0] = 2 * a * r - b;
            rho[1] = fmax(DBL_MIN, a / r);
            rho[2] = -rho[1] / (2 * s);
        } else {
            rho[0] = s;
            rho[1] = 1;
            rho[2] = 0;
        }
        return;
    case PXL_AD_LOSS_SOFT_L1: {
        const double sum = 1 + s / b, t = sqrt(sum);
        rho[0] = 2 * b * (t - 1);
        rho[1] = fmax(DBL_MIN, 1 / t);
        rho[2] = -rho[1] / (2 * b * sum);
        return;
    }
    case PXL_AD_LOSS_CAUCHY: {
        const double sum = 1 + s / b, inv = 1 / sum;
        rho[0] = b * log1p(s / b);
        rho[1] = fmax(DBL_MIN, inv);
        rho[2] = -inv * inv / b;
        return;
    }
    case PXL_AD_LOSS_ARCTAN: {
        const double t = s / b, inv = 1 / (1 + t * t);
        rho[0] = b * atan(t);
        rho[1] = fmax(DBL_MIN, inv);
        rho[2] = -2 * t / b * inv * inv;
        return;
    }
    case PXL_AD_LOSS_TUKEY:
        if (s <= b) {
            const double v = 1 - s / b, v2 = v * v;
            rho[0] = b / 3 * (1 - v2 * v);
            rho[1] = v2;
            rho[2] = -2 / b * v;
        } else {
            rho[0] = b / 3;
            rho[1] = 0;
            rho[2] = 0;
        }
        return;
    case PXL_AD_LOSS_NONE:
        break;
    }
    rho[0] = s;
    rho[1] = 1;
    rho[2] = 0;
}

/*
 * Ceres' rule: with rho'' <= 0 (the outlier side of every loss above) or
 * s = 0, residuals and Jacobian are scaled by sqrt(rho'); else alpha, the
 * smaller root of 1/2 alpha^2 - alpha - rho''/rho' s = 0, gives
 *   f~ = sqrt(rho') / (1 - alpha) f,
 *   J~ = sqrt(rho') (I - alpha f f^T / s) J   (with the raw f).
 */
void ad_loss_correct(const double rho[3], double s, double *f, size_t m, double *jac, size_t k) {
    const double sqrt_rho1 = sqrt(rho[1]);
    double scale = sqrt_rho1, alpha_s = 0;
    if (s != 0 && rho[2] > 0 && rho[1] > 0) {
        const double d = 1 + 2 * s * rho[2] / rho[1];
        const double alpha = 1 - sqrt(d);
        scale = sqrt_rho1 / (1 - alpha);
        alpha_s = alpha / s;
    }
    if (jac) {
        if (alpha_s == 0) {
            for (size_t i = 0; i < m * k; i++) jac[i] *= sqrt_rho1;
        } else {
            for (size_t c = 0; c < k; c++) {
                double fj = 0;
                for (size_t r = 0; r < m; r++) fj += f[r] * jac[r * k + c];
                for (size_t r = 0; r < m; r++)
                    jac[r * k + c] = sqrt_rho1 * (jac[r * k + c] - alpha_s * f[r] * fj);
            }
        }
    }
    for (size_t r = 0; r < m; r++) f[r] *= scale;
}

int ad_loss_resolve(pxl_ctx *ctx, const char *fn, const pxl_ad_loss *in, pxl_ad_loss *out) {
    pxl_ad_loss l = {PXL_AD_LOSS_NONE, 0};
    if (in) l = *in;
    if ((int)l.kind < PXL_AD_LOSS_NONE || (int)l.kind > PXL_AD_LOSS_TUKEY) {
        pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: unknown loss kind %d", fn, (int)l.kind);
        return 0;
    }
    if (!(l.scale >= 0) || !isfinite(l.scale)) {
        pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: loss scale %g is not a finite number > 0", fn, l.scale);
        return 0;
    }
    if (l.kind == PXL_AD_LOSS_NONE) l.scale = 0;
    else if (l.scale == 0) l.scale = 1;
    *out = l;
    return 1;
}

pxl_status pxl_ad_loss_parse(pxl_ctx *ctx, const char *text, pxl_ad_loss *out) {
    static const char fn[] = "pxl_ad_loss_parse";
    static const struct {
        const char *name;
        pxl_ad_loss_kind kind;
    } names[] = {{"none", PXL_AD_LOSS_NONE},       {"huber", PXL_AD_LOSS_HUBER},   {"soft_l1", PXL_AD_LOSS_SOFT_L1},
                 {"cauchy", PXL_AD_LOSS_CAUCHY},   {"arctan", PXL_AD_LOSS_ARCTAN}, {"tukey", PXL_AD_LOSS_TUKEY}};
    PXL_REQUIRE_CTX(ctx);
    PXL_REQUIRE(ctx, fn, text);
    PXL_REQUIRE(ctx, fn, out);
    const char *colon = strchr(text, ':');
    const size_t len = colon ? (size_t)(colon - text) : strlen(text);
    pxl_ad_loss l = {PXL_AD_LOSS_NONE, 0};
    size_t i = 0;
    for (; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i].name) == len && memcmp(names[i].name, text, len) == 0) break;
    if (i == sizeof names / sizeof names[0])
        return pxl_fail(ctx, PXL_ERR_FORMAT,
                        "%s: unknown loss '%.*s' in '%.64s' (none, huber, soft_l1, cauchy, arctan or tukey, "
                        "optionally followed by :scale)",
                        fn, (int)(len > 64 ? 64 : len), text, text);
    l.kind = names[i].kind;
    if (colon) {
        if (l.kind == PXL_AD_LOSS_NONE)
            return pxl_fail(ctx, PXL_ERR_FORMAT, "%s: '%.64s': the loss 'none' takes no scale", fn, text);
        const char *num = colon + 1;
        char *end = NULL;
        double a = *num && !strchr(" \t\n", *num) ? strtod(num, &end) : 0;
        if (!end || end == num || *end != '\0' || !isfinite(a) || !(a > 0))
            return pxl_fail(ctx, PXL_ERR_FORMAT, "%s: '%.64s': the scale at column %zu is not a finite number > 0",
                            fn, text, (size_t)(num - text) + 1);
        l.scale = a;
    } else if (l.kind != PXL_AD_LOSS_NONE) {
        l.scale = 1;
    }
    *out = l;
    return PXL_OK;
}
