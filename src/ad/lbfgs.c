/*
 * L-BFGS with box bounds (ad_lbfgs, declared in ad_internal.h).
 *
 * Each iteration:
 *   1. the held set: variables at a bound whose gradient points out of the
 *      box. The projected gradient pg is the gradient with the held
 *      components set to 0; max |pg| is the gradient test.
 *   2. the direction d = -H pg by the two-loop recursion over the last m
 *      pairs (s, y), H0 = (s.y / y.y) I; then held components, and
 *      components at a bound that would leave the box, are set to 0. When d
 *      is not a descent direction the memory is dropped and d = -pg.
 *   3. the step: alpha_max is how far x + alpha d stays in the box. When the
 *      first trial step fits (alpha_max >= alpha0), a line search for the
 *      strong Wolfe conditions (Nocedal & Wright, Algorithms 3.5 and 3.6:
 *      bracketing, then zoom with safeguarded cubic or quadratic
 *      interpolation), whose expansion stops at alpha_max; a step stopped
 *      there satisfies Armijo's condition only. Otherwise Armijo
 *      backtracking along the projected path P(x + alpha d), on which any
 *      number of variables may reach their bounds in one step.
 *   4. the pair (s, y) = (x+ - x, g+ - g) joins the memory when s.y > 0
 *      (enough above rounding); else it is skipped.
 * A trial point whose f or gradient is not finite counts as a step too far:
 * the search shrinks. Everything is sequential: the same fn gives the same
 * bits.
 */
#include "ad_internal.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define LS_C1 1e-4        /* sufficient decrease (Armijo) */
#define LS_C2 0.9         /* curvature (strong Wolfe), the usual choice for quasi-Newton */
#define LS_MAX_EVALS 40   /* evaluations per line search */
#define LS_EXPAND 4.0     /* bracketing: next trial at most this times the last */
#define LB_NAN ((double)NAN)

typedef struct lb_state {
    pxl_ctx *ctx;
    size_t n;
    const double *lo, *hi; /* NULL: unbounded */
    ad_objective_fn fn;
    void *user;
    double t_eval;
    int n_evals;
} lb_state;

/* fn at x, timed. Returns fn's status; f is left as fn gives it. */
static pxl_status lb_eval(lb_state *s, const double *x, double *f, double *g) {
    const double t0 = pxl_time_now();
    *f = LB_NAN;
    pxl_status st = s->fn(s->user, x, f, g);
    s->t_eval += pxl_time_now() - t0;
    s->n_evals++;
    return st;
}

/* 1 when f and every gradient entry are finite. */
static int lb_finite(double f, const double *g, size_t n) {
    if (!isfinite(f)) return 0;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(g[i])) return 0;
    return 1;
}

static double lb_dot(const double *a, const double *b, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

static double lb_norm_inf(const double *v, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s = fmax(s, fabs(v[i]));
    return s;
}

static double lb_lower(const lb_state *s, size_t i) { return s->lo ? s->lo[i] : -HUGE_VAL; }
static double lb_upper(const lb_state *s, size_t i) { return s->hi ? s->hi[i] : HUGE_VAL; }

/* pg = g with the components of variables held at a bound set to 0. */
static void lb_projected_gradient(const lb_state *s, const double *x, const double *g, double *pg) {
    for (size_t i = 0; i < s->n; i++) {
        const int held = (x[i] <= lb_lower(s, i) && g[i] > 0) || (x[i] >= lb_upper(s, i) && g[i] < 0);
        pg[i] = held ? 0.0 : g[i];
    }
}

/* The largest alpha with x + alpha d inside the box (inf when none limits). */
static double lb_alpha_max(const lb_state *s, const double *x, const double *d) {
    double a = HUGE_VAL;
    for (size_t i = 0; i < s->n; i++) {
        if (d[i] < 0 && isfinite(lb_lower(s, i))) a = fmin(a, (lb_lower(s, i) - x[i]) / d[i]);
        else if (d[i] > 0 && isfinite(lb_upper(s, i))) a = fmin(a, (lb_upper(s, i) - x[i]) / d[i]);
    }
    return a > 0 ? a : 0;
}

/* xt = P(x + alpha d): projected onto the box (exactly on a bound once past it). */
static void lb_point(const lb_state *s, const double *x, const double *d, double alpha, double *xt) {
    for (size_t i = 0; i < s->n; i++) {
        double v = x[i] + alpha * d[i];
        const double l = lb_lower(s, i), u = lb_upper(s, i);
        if (v < l) v = l;
        if (v > u) v = u;
        xt[i] = v;
    }
}

/*
 * A minimiser of the cubic interpolating (a, fa, da), (b, fb, db), or of the
 * quadratic through (a, fa, da), (b, fb) when db is not finite, kept inside
 * the middle 80% of [a, b] (either order); bisection when the interpolation
 * fails or lands outside.
 */
static double lb_interpolate(double a, double fa, double da, double b, double fb, double db) {
    const double lo = fmin(a, b), hi = fmax(a, b), w = hi - lo;
    double t = LB_NAN;
    if (isfinite(fa) && isfinite(fb) && isfinite(da)) {
        if (isfinite(db)) {
            const double d1 = da + db - 3 * (fa - fb) / (a - b);
            const double r = d1 * d1 - da * db;
            if (r >= 0) {
                const double d2 = (b > a ? 1.0 : -1.0) * sqrt(r);
                const double den = db - da + 2 * d2;
                if (den != 0) t = b - (b - a) * (db + d2 - d1) / den;
            }
        }
        if (!isfinite(t)) { /* quadratic: f(a) + da (t - a) + c (t - a)^2 through fb */
            const double h = b - a, c = (fb - fa - da * h) / (h * h);
            if (c > 0) t = a - da / (2 * c);
        }
    }
    if (!isfinite(t) || t < lo + 0.1 * w || t > hi - 0.1 * w) t = lo + 0.5 * w;
    return t;
}

/* What a line search found: the step taken (0: none), f and gradient at it
 * in *f and g (x is left alone; xt holds the point). */
typedef struct lb_trial {
    double alpha, f, dphi; /* dphi = g(alpha) . d */
} lb_trial;

/* Evaluates phi(alpha) = f(x + alpha d) into xt, gt; dphi = gt . d. */
static pxl_status lb_phi(lb_state *s, const double *x, const double *d, double alpha, double *xt, double *gt,
                         lb_trial *t) {
    lb_point(s, x, d, alpha, xt);
    pxl_status st = lb_eval(s, xt, &t->f, gt);
    if (st != PXL_OK) return st;
    t->alpha = alpha;
    if (!lb_finite(t->f, gt, s->n)) {
        t->f = LB_NAN;
        t->dphi = LB_NAN;
    } else {
        t->dphi = lb_dot(gt, d, s->n);
    }
    return PXL_OK;
}

/*
 * Strong Wolfe line search on alpha in (0, amax] from alpha0 (<= amax). On
 * success *best is the accepted step (alpha > 0) with f there, and xb, gb
 * hold its point and gradient; best->alpha == 0 when no step with
 * sufficient decrease was found within LS_MAX_EVALS. xt, gt: scratch.
 */
static pxl_status lb_wolfe(lb_state *s, const double *x, const double *d, double f0, double dphi0,
                           double alpha0, double amax, double *xt, double *gt, double *xb, double *gb,
                           lb_trial *best) {
    const size_t n = s->n;
    best->alpha = 0;
    lb_trial prev = {0, f0, dphi0}, lo = prev, hi = prev, cur;
    double alpha = alpha0;
    int evals = 0, zoom = 0;
    pxl_status st;
    /* keep the lowest Armijo point seen, for a search that ends without Wolfe */
#define LB_KEEP(t)                                                                \
    do {                                                                          \
        if ((t).alpha > 0 && (best->alpha == 0 || (t).f < best->f)) {            \
            *best = (t);                                                          \
            memcpy(xb, xt, n * sizeof *xb);                                       \
            memcpy(gb, gt, n * sizeof *gb);                                       \
        }                                                                         \
    } while (0)
    /* bracketing (Algorithm 3.5) */
    while (!zoom) {
        if (evals++ >= LS_MAX_EVALS) return PXL_OK;
        st = lb_phi(s, x, d, alpha, xt, gt, &cur);
        if (st != PXL_OK) return st;
        if (!isfinite(cur.f) || cur.f > f0 + LS_C1 * alpha * dphi0 || (evals > 1 && cur.f >= prev.f)) {
            lo = prev;
            hi = cur;
            zoom = 1;
            break;
        }
        if (fabs(cur.dphi) <= -LS_C2 * dphi0) {
            *best = cur;
            memcpy(xb, xt, n * sizeof *xb);
            memcpy(gb, gt, n * sizeof *gb);
            return PXL_OK;
        }
        LB_KEEP(cur);
        if (cur.dphi >= 0) {
            lo = cur;
            hi = prev;
            zoom = 1;
            break;
        }
        if (alpha >= amax) return PXL_OK; /* stopped at the box: Armijo holds */
        prev = cur;
        alpha = fmin(alpha * LS_EXPAND, amax);
    }
    /* zoom (Algorithm 3.6): lo satisfies Armijo, is the lowest so far, and
     * dphi(lo) (hi - lo) < 0 */
    while (evals++ < LS_MAX_EVALS) {
        if (fabs(hi.alpha - lo.alpha) <= DBL_EPSILON * fmax(hi.alpha, lo.alpha)) break;
        alpha = lb_interpolate(lo.alpha, lo.f, lo.dphi, hi.alpha, hi.f, hi.dphi);
        st = lb_phi(s, x, d, alpha, xt, gt, &cur);
        if (st != PXL_OK) return st;
        if (!isfinite(cur.f) || cur.f > f0 + LS_C1 * alpha * dphi0 || cur.f >= lo.f) {
            hi = cur;
            continue;
        }
        if (fabs(cur.dphi) <= -LS_C2 * dphi0) {
            *best = cur;
            memcpy(xb, xt, n * sizeof *xb);
            memcpy(gb, gt, n * sizeof *gb);
            return PXL_OK;
        }
        LB_KEEP(cur);
        if (cur.dphi * (hi.alpha - lo.alpha) >= 0) hi = lo;
        lo = cur;
    }
#undef LB_KEEP
    return PXL_OK;
}

/*
 * Armijo backtracking along the projected path P(x + alpha d) from alpha0:
 * f(P(x + alpha d)) <= f0 + c1 g0 . (P(x + alpha d) - x). A trial that is
 * not finite or fails the test shrinks alpha (interpolated, within [0.1,
 * 0.5] of it). best->alpha == 0 when nothing passed.
 */
static pxl_status lb_backtrack(lb_state *s, const double *x, const double *d, const double *g0, double f0,
                               double alpha0, double *xt, double *gt, double *xb, double *gb, lb_trial *best) {
    const size_t n = s->n;
    best->alpha = 0;
    double alpha = alpha0;
    lb_trial cur;
    for (int evals = 0; evals < LS_MAX_EVALS; evals++) {
        pxl_status st = lb_phi(s, x, d, alpha, xt, gt, &cur);
        if (st != PXL_OK) return st;
        double decrease = 0; /* g0 . (xt - x) */
        for (size_t i = 0; i < n; i++) decrease += g0[i] * (xt[i] - x[i]);
        if (!(decrease < 0)) return PXL_OK; /* the path has stopped moving downhill */
        if (isfinite(cur.f) && cur.f <= f0 + LS_C1 * decrease) {
            *best = cur;
            memcpy(xb, xt, n * sizeof *xb);
            memcpy(gb, gt, n * sizeof *gb);
            return PXL_OK;
        }
        double next = 0.5 * alpha;
        if (isfinite(cur.f)) { /* minimiser of the quadratic through f0, slope, f(alpha) */
            const double slope = decrease / alpha, c = (cur.f - f0 - slope * alpha) / (alpha * alpha);
            if (c > 0) next = fmin(fmax(-slope / (2 * c), 0.1 * alpha), 0.5 * alpha);
        }
        alpha = next;
    }
    return PXL_OK;
}

static pxl_status lb_minimize(pxl_ctx *ctx, size_t n, double *x, const double *lower, const double *upper,
                              ad_objective_fn fn, void *user, const pxl_ad_solve_options *opts,
                              pxl_ad_solve_summary *summary) {
    static const char fn_name[] = "ad_lbfgs";
    PXL_REQUIRE(ctx, fn_name, fn);
    if (n > 0) PXL_REQUIRE(ctx, fn_name, x);
    const double t_start = pxl_time_now();
    pxl_ad_solve_options o;
    memset(&o, 0, sizeof o);
    if (opts) o = *opts;
    if (o.max_iterations < 0 || o.lbfgs_memory < 0 || !(o.function_tolerance >= 0) ||
        !(o.gradient_tolerance >= 0) || !(o.parameter_tolerance >= 0) || !(o.max_seconds >= 0) ||
        !isfinite(o.function_tolerance) || !isfinite(o.gradient_tolerance) || !isfinite(o.parameter_tolerance) ||
        isnan(o.max_seconds))
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: an option is negative or not a number", fn_name);
    const int max_it = o.max_iterations ? o.max_iterations : 1000;
    const double ftol = o.function_tolerance > 0 ? o.function_tolerance : 1e-6;
    const double gtol = o.gradient_tolerance > 0 ? o.gradient_tolerance : 1e-10;
    const double ptol = o.parameter_tolerance > 0 ? o.parameter_tolerance : 1e-8;
    const size_t m = o.lbfgs_memory ? (size_t)o.lbfgs_memory : 10;
    for (size_t i = 0; i < n; i++) {
        const double l = lower ? lower[i] : -HUGE_VAL, u = upper ? upper[i] : HUGE_VAL;
        if (isnan(l) || isnan(u) || l > u || l == HUGE_VAL || u == -HUGE_VAL)
            return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: variable %zu: bounds [%g, %g] are empty or not numbers",
                            fn_name, i, l, u);
        if (!isfinite(x[i]))
            return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: variable %zu is not finite (%g)", fn_name, i, x[i]);
    }
    /* work: g, pg, d, xt, gt, xb, gb, q (n each); S, Y (m x n); rho, a (m) */
    size_t nv, nm;
    if (!pxl_mul_size(n ? n : 1, 8, &nv) || !pxl_mul_size(m, n ? n : 1, &nm) || !pxl_mul_size(nm, 2, &nm) ||
        !pxl_add_size(nm, nv, &nv) || !pxl_add_size(nv, 2 * m, &nv))
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: %zu variables with memory %zu: sizes overflow", fn_name, n,
                        m);
    double *work = pxl_calloc(ctx, nv, sizeof *work);
    if (!work)
        return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "%s: out of memory (%zu variables, memory %zu)", fn_name, n, m);
    const size_t nn = n ? n : 1;
    double *g = work, *pg = g + nn, *d = pg + nn, *xt = d + nn, *gt = xt + nn, *xb = gt + nn, *gb = xb + nn,
           *q = gb + nn, *S = q + nn, *Y = S + m * nn, *rho = Y + m * nn, *al = rho + m;

    lb_state s = {ctx, n, lower, upper, fn, user, 0, 0};
    pxl_ad_solve_summary sm;
    memset(&sm, 0, sizeof sm);
    sm.n_free_params = n;
    pxl_status st = PXL_OK;
    for (size_t i = 0; i < n; i++) { /* start inside the box */
        if (x[i] < lb_lower(&s, i)) x[i] = lb_lower(&s, i);
        if (x[i] > lb_upper(&s, i)) x[i] = lb_upper(&s, i);
    }
    double f = LB_NAN, gmax = 0;
    st = lb_eval(&s, x, &f, g);
    if (st != PXL_OK) goto done;
    if (!lb_finite(f, g, n)) {
        st = pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: the objective or its gradient at the start is not finite (f %g)",
                      fn_name, f);
        goto done;
    }
    sm.initial_cost = f;
    lb_projected_gradient(&s, x, g, pg);
    gmax = lb_norm_inf(pg, n);
    size_t n_pairs = 0, newest = 0; /* pairs kept; slot of the newest */
    sm.termination = PXL_AD_NO_CONVERGENCE;
    snprintf(sm.message, sizeof sm.message, "%d iterations without convergence", max_it);
    if (gmax <= gtol) {
        sm.termination = PXL_AD_CONVERGED_GRADIENT;
        snprintf(sm.message, sizeof sm.message, "max |projected gradient| %.3g <= %.3g at the start", gmax, gtol);
    }
    while (sm.termination == PXL_AD_NO_CONVERGENCE && sm.iterations < max_it) {
        if (o.max_seconds > 0 && pxl_time_now() - t_start >= o.max_seconds) {
            snprintf(sm.message, sizeof sm.message, "time limit %.3g s reached after %d iterations", o.max_seconds,
                     sm.iterations);
            break;
        }
        sm.iterations++;
        /* d = -H pg (two-loop recursion, newest pair first) */
        for (size_t i = 0; i < n; i++) q[i] = pg[i];
        for (size_t k = 0; k < n_pairs; k++) {
            const size_t j = (newest + m - k) % m;
            al[j] = rho[j] * lb_dot(S + j * nn, q, n);
            const double *yj = Y + j * nn;
            for (size_t i = 0; i < n; i++) q[i] -= al[j] * yj[i];
        }
        if (n_pairs > 0) {
            const double *yn = Y + newest * nn;
            const double gamma = 1.0 / (rho[newest] * lb_dot(yn, yn, n));
            for (size_t i = 0; i < n; i++) q[i] *= gamma;
        }
        for (size_t k = n_pairs; k-- > 0;) {
            const size_t j = (newest + m - k) % m;
            const double b = rho[j] * lb_dot(Y + j * nn, q, n);
            const double *sj = S + j * nn;
            for (size_t i = 0; i < n; i++) q[i] += (al[j] - b) * sj[i];
        }
        for (size_t i = 0; i < n; i++) {
            double di = pg[i] == 0 && g[i] != 0 ? 0.0 : -q[i]; /* held */
            if ((di < 0 && x[i] <= lb_lower(&s, i)) || (di > 0 && x[i] >= lb_upper(&s, i))) di = 0;
            d[i] = di;
        }
        double dphi0 = lb_dot(g, d, n);
        int steepest = n_pairs == 0;
        if (!(dphi0 < 0) || !isfinite(dphi0)) { /* not a descent direction: start the memory again */
            n_pairs = 0;
            steepest = 1;
            for (size_t i = 0; i < n; i++) d[i] = -pg[i];
            dphi0 = lb_dot(g, d, n);
            if (!(dphi0 < 0)) { /* pg is so small that |pg|^2 underflows */
                sm.termination = PXL_AD_CONVERGED_GRADIENT;
                snprintf(sm.message, sizeof sm.message, "no descent direction (max |projected gradient| %.3g)",
                         gmax);
                break;
            }
        }
        /* first trial step: 1, or a unit-length step for steepest descent */
        double alpha0 = 1.0;
        if (steepest) alpha0 = 1.0 / sqrt(-dphi0);
        const double amax = lb_alpha_max(&s, x, d);
        lb_trial t = {0, f, dphi0};
        if (amax >= alpha0)
            st = lb_wolfe(&s, x, d, f, dphi0, alpha0, amax, xt, gt, xb, gb, &t);
        else
            st = lb_backtrack(&s, x, d, g, f, alpha0, xt, gt, xb, gb, &t);
        if (st != PXL_OK) goto done;
        if (t.alpha == 0) {
            if (!steepest) { /* retry from steepest descent */
                n_pairs = 0;
                sm.iterations--;
                continue;
            }
            sm.termination = PXL_AD_CONVERGED_PARAMETER;
            snprintf(sm.message, sizeof sm.message,
                     "the line search found no decrease along the projected gradient (max |pg| %.3g)", gmax);
            break;
        }
        sm.successful_steps++;
        /* s = xb - x, y = gb - g (in q, d) join the memory, in place of the
         * oldest pair once it is full, when s.y is safely positive */
        double *sv = q, *yv = d;
        double sy = 0, yy = 0, ss = 0, xx = 0;
        for (size_t i = 0; i < n; i++) {
            sv[i] = xb[i] - x[i];
            yv[i] = gb[i] - g[i];
            sy += sv[i] * yv[i];
            yy += yv[i] * yv[i];
            ss += sv[i] * sv[i];
            xx += x[i] * x[i];
        }
        if (sy > DBL_EPSILON * yy && yy > 0) {
            const size_t slot = n_pairs == 0 ? 0 : (newest + 1) % m;
            memcpy(S + slot * nn, sv, n * sizeof *sv);
            memcpy(Y + slot * nn, yv, n * sizeof *yv);
            rho[slot] = 1.0 / sy;
            newest = slot;
            if (n_pairs < m) n_pairs++;
        }
        const double f_prev = f;
        f = t.f;
        memcpy(x, xb, n * sizeof *x);
        memcpy(g, gb, n * sizeof *g);
        lb_projected_gradient(&s, x, g, pg);
        gmax = lb_norm_inf(pg, n);
        const double step = sqrt(ss), xnorm = sqrt(xx);
        if (gmax <= gtol) {
            sm.termination = PXL_AD_CONVERGED_GRADIENT;
            snprintf(sm.message, sizeof sm.message, "max |projected gradient| %.3g <= %.3g", gmax, gtol);
        } else if (fabs(f_prev - f) <= ftol * fabs(f_prev)) {
            sm.termination = PXL_AD_CONVERGED_FUNCTION;
            snprintf(sm.message, sizeof sm.message, "|f change| %.3g <= %.3g * |f| %.3g", fabs(f_prev - f), ftol,
                     fabs(f_prev));
        } else if (step <= ptol * (xnorm + ptol)) {
            sm.termination = PXL_AD_CONVERGED_PARAMETER;
            snprintf(sm.message, sizeof sm.message, "step %.3g <= %.3g * (|x| %.3g + %.3g)", step, ptol, xnorm,
                     ptol);
        }
        if (o.progress) o.progress(o.progress_user, sm.iterations, f);
    }
done:
    sm.final_cost = f; /* at x: the best point so far */
    sm.gradient_max_norm = gmax;
    sm.eval_seconds = s.t_eval;
    sm.total_seconds = pxl_time_now() - t_start;
    sm.other_seconds = fmax(0.0, sm.total_seconds - s.t_eval);
    if (summary) *summary = sm;
    pxl_free(ctx, work);
    return st;
}

pxl_status ad_lbfgs(pxl_ctx *ctx, size_t n, double *x, const double *lower, const double *upper,
                    ad_objective_fn fn, void *user, const pxl_ad_solve_options *opts, pxl_ad_solve_summary *summary) {
    PXL_REQUIRE_CTX(ctx);
    pxl_ad_solve_summary sm;
    memset(&sm, 0, sizeof sm);
    pxl_status st = lb_minimize(ctx, n, x, lower, upper, fn, user, opts, &sm);
    if (st != PXL_OK) { /* the costs and times so far stay */
        sm.termination = PXL_AD_FAILURE;
        snprintf(sm.message, sizeof sm.message, "%s", pxl_ctx_error(ctx));
    }
    if (summary) *summary = sm;
    return st;
}
