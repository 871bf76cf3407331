/*
 * Problems (pxl/ad.h): residual instances grouped by program and loss over
 * one parameter vector; the template and traced forms of adding them,
 * bounds, constant parameters, evaluation, covariance and L-BFGS
 * minimisation. The solver is lm.c.
 */
#include "ad_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define AD_COVARIANCE_MAX_PARAMS 4096

pxl_status pxl_ad_problem_create(pxl_ctx *ctx, size_t n_params, pxl_ad_problem **out) {
    static const char fn[] = "pxl_ad_problem_create";
    PXL_REQUIRE_CTX(ctx);
    PXL_REQUIRE(ctx, fn, out);
    *out = NULL;
    if (n_params == 0) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: no parameters", fn);
    if (n_params > (size_t)UINT32_MAX)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: %zu parameters: at most %u", fn, n_params, UINT32_MAX);
    pxl_ad_problem *pb = pxl_calloc(ctx, 1, sizeof *pb);
    if (!pb) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    pb->ctx = ctx;
    pb->n_params = n_params;
    pb->lower = pxl_calloc(ctx, n_params, sizeof *pb->lower);
    pb->upper = pxl_calloc(ctx, n_params, sizeof *pb->upper);
    pb->constant = pxl_calloc(ctx, n_params, 1);
    if (!pb->lower || !pb->upper || !pb->constant) {
        pxl_ad_problem_free(pb);
        return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "%s: out of memory (%zu parameters)", fn, n_params);
    }
    for (size_t j = 0; j < n_params; j++) {
        pb->lower[j] = -(double)INFINITY;
        pb->upper[j] = (double)INFINITY;
    }
    *out = pb;
    return PXL_OK;
}

static void group_release(pxl_ctx *ctx, ad_group *g) {
    pxl_ad_program_free(g->prog);
    pxl_free(ctx, g->pidx);
    pxl_free(ctx, g->inputs);
    memset(g, 0, sizeof *g);
}

void pxl_ad_problem_free(pxl_ad_problem *pb) {
    if (!pb) return;
    pxl_ctx *ctx = pb->ctx;
    for (size_t i = 0; i < pb->n_groups; i++) group_release(ctx, &pb->groups[i]);
    pxl_free(ctx, pb->groups);
    pxl_free(ctx, pb->lower);
    pxl_free(ctx, pb->upper);
    pxl_free(ctx, pb->constant);
    pxl_free(ctx, pb);
}

/* A copy of p owned by ctx; NULL when out of memory. */
static pxl_ad_program *program_clone(pxl_ctx *ctx, const pxl_ad_program *p) {
    pxl_ad_program *q = pxl_calloc(ctx, 1, sizeof *q);
    if (!q) return NULL;
    *q = *p;
    q->ctx = ctx;
    q->code = pxl_calloc(ctx, p->n ? p->n : 1, sizeof *q->code);
    q->outputs = pxl_calloc(ctx, p->n_out ? p->n_out : 1, sizeof *q->outputs);
    if (!q->code || !q->outputs) {
        pxl_free(ctx, q->code);
        pxl_free(ctx, q->outputs);
        pxl_free(ctx, q);
        return NULL;
    }
    if (p->n) memcpy(q->code, p->code, p->n * sizeof *q->code);
    if (p->n_out) memcpy(q->outputs, p->outputs, p->n_out * sizeof *q->outputs);
    return q;
}

static int programs_equal(const pxl_ad_program *a, const pxl_ad_program *b) {
    if (a->hash != b->hash || a->n != b->n || a->n_out != b->n_out || a->n_params != b->n_params ||
        a->n_inputs != b->n_inputs)
        return 0;
    for (size_t i = 0; i < a->n; i++) {
        const pxl_ad_node *x = &a->code[i], *y = &b->code[i];
        if (x->op != y->op || x->a != y->a || x->b != y->b || x->c != y->c || x->aux != y->aux ||
            memcmp(&x->k, &y->k, sizeof x->k) != 0)
            return 0;
    }
    return a->n_out == 0 || memcmp(a->outputs, b->outputs, a->n_out * sizeof *a->outputs) == 0;
}

/* The group of (prog, loss), made (with a copy of prog) when there is none;
 * *made says so. NULL when out of memory (message set). */
static ad_group *group_for(pxl_ad_problem *pb, const char *fn, const pxl_ad_program *prog, const pxl_ad_loss *loss,
                           int *made) {
    *made = 0;
    for (size_t i = 0; i < pb->n_groups; i++) {
        ad_group *g = &pb->groups[i];
        if (g->loss.kind == loss->kind && g->loss.scale == loss->scale && programs_equal(g->prog, prog)) return g;
    }
    if (pb->n_groups == pb->cap_groups) {
        size_t cap = pb->cap_groups ? pb->cap_groups * 2 : 4;
        ad_group *ng = pxl_realloc(pb->ctx, pb->groups, cap * sizeof *ng);
        if (!ng) goto oom;
        pb->groups = ng;
        pb->cap_groups = cap;
    }
    ad_group *g = &pb->groups[pb->n_groups];
    memset(g, 0, sizeof *g);
    g->prog = program_clone(pb->ctx, prog);
    if (!g->prog) goto oom;
    g->loss = *loss;
    pb->n_groups++;
    *made = 1;
    return g;
oom:
    pxl_fail(pb->ctx, PXL_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    return NULL;
}

/* Makes room for n more instances in g; 0 when out of memory or too many. */
static int group_reserve(pxl_ctx *ctx, ad_group *g, size_t n) {
    const size_t k = g->prog->n_params, ni = g->prog->n_inputs;
    size_t need;
    if (!pxl_add_size(g->n_inst, n, &need)) return 0;
    if (need <= g->cap) return 1;
    size_t cap = g->cap ? g->cap : 16;
    while (cap < need) {
        if (!pxl_mul_size(cap, 2, &cap)) return 0;
    }
    size_t bytes;
    if (k > 0) {
        if (!pxl_mul_size(cap, k * sizeof(uint32_t), &bytes)) return 0;
        uint32_t *p = pxl_realloc(ctx, g->pidx, bytes);
        if (!p) return 0;
        g->pidx = p;
    }
    if (ni > 0) {
        if (!pxl_mul_size(cap, ni * sizeof(double), &bytes)) return 0;
        double *p = pxl_realloc(ctx, g->inputs, bytes);
        if (!p) return 0;
        g->inputs = p;
    }
    g->cap = cap;
    return 1;
}

/* Appends n instances to the group of (prog, loss); nothing is added on
 * failure. The indices have been checked. */
static pxl_status add_instances(pxl_ad_problem *pb, const char *fn, const pxl_ad_program *prog,
                                const uint32_t *pidx, const double *inputs, size_t n, const pxl_ad_loss *loss) {
    const size_t k = prog->n_params, m = prog->n_out, ni = prog->n_inputs;
    size_t res, total_res, total_inst;
    if (!pxl_mul_size(n, m, &res) || !pxl_add_size(pb->n_residuals, res, &total_res) ||
        !pxl_add_size(pb->n_instances, n, &total_inst) || !pxl_mul_size(n, k > 0 ? k : 1, &res) ||
        !pxl_mul_size(n, ni > 0 ? ni : 1, &res))
        return pxl_fail(pb->ctx, PXL_ERR_INVALID_ARG, "%s: %zu instances: sizes overflow", fn, n);
    int made;
    ad_group *g = group_for(pb, fn, prog, loss, &made);
    if (!g) return PXL_ERR_OUT_OF_MEMORY;
    if (!group_reserve(pb->ctx, g, n)) {
        if (made) {
            group_release(pb->ctx, g);
            pb->n_groups--;
        }
        return pxl_fail(pb->ctx, PXL_ERR_OUT_OF_MEMORY, "%s: out of memory (%zu instances)", fn, n);
    }
    if (k > 0) memcpy(g->pidx + g->n_inst * k, pidx, n * k * sizeof *pidx);
    if (ni > 0) memcpy(g->inputs + g->n_inst * ni, inputs, n * ni * sizeof *inputs);
    g->n_inst += n;
    pb->n_instances = total_inst;
    pb->n_residuals = total_res;
    return PXL_OK;
}

pxl_status pxl_ad_problem_add(pxl_ad_problem *pb, const pxl_ad_program *prog, const uint32_t *param_index,
                              const double *inputs, size_t n_instances, const pxl_ad_block_options *opts) {
    static const char fn[] = "pxl_ad_problem_add";
    if (!pb) return PXL_ERR_INVALID_ARG;
    pxl_ctx *ctx = pb->ctx;
    PXL_REQUIRE(ctx, fn, prog);
    pxl_ad_loss loss;
    if (!ad_loss_resolve(ctx, fn, opts ? &opts->loss : NULL, &loss)) return PXL_ERR_INVALID_ARG;
    if (n_instances == 0) return PXL_OK;
    const size_t k = prog->n_params, ni = prog->n_inputs;
    if (prog->n_out == 0) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: the program has no outputs", fn);
    if (k > 0) PXL_REQUIRE(ctx, fn, param_index);
    if (ni > 0) PXL_REQUIRE(ctx, fn, inputs);
    size_t cells;
    if (!pxl_mul_size(n_instances, k > 0 ? k : 1, &cells))
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: %zu instances: sizes overflow", fn, n_instances);
    if (ad_check_indices(ctx, fn, param_index, n_instances, k, pb->n_params) != PXL_OK) return PXL_ERR_INVALID_ARG;
    return add_instances(pb, fn, prog, param_index, inputs, n_instances, &loss);
}

/*
 * Canonical form of a traced graph's program p: parameters become slots in
 * order of first use on the tape (slot_param[slot] = the problem's parameter),
 * constants become input columns in tape order (values[column] = the
 * constant); the hash is recomputed, so it no longer sees the constants.
 */
pxl_status pxl_ad_problem_add_traced(pxl_ad_problem *pb, const pxl_ad_graph *g, const pxl_ad_block_options *opts) {
    static const char fn[] = "pxl_ad_problem_add_traced";
    if (!pb) return PXL_ERR_INVALID_ARG;
    pxl_ctx *ctx = pb->ctx;
    PXL_REQUIRE(ctx, fn, g);
    pxl_ad_loss loss;
    if (!ad_loss_resolve(ctx, fn, opts ? &opts->loss : NULL, &loss)) return PXL_ERR_INVALID_ARG;
    pxl_ad_program *p = NULL;
    pxl_status st = ad_compile(g, &p);
    if (st != PXL_OK) return st;
    uint32_t *slot_param = NULL;
    double *values = NULL;
    if (p->n_inputs > 0) {
        st = pxl_fail(ctx, PXL_ERR_INVALID_ARG,
                      "%s: the graph reads input columns (%zu); a traced residual has constants instead (add "
                      "graphs with columns with pxl_ad_problem_add)",
                      fn, p->n_inputs);
        goto done;
    }
    slot_param = pxl_calloc(ctx, p->n ? p->n : 1, sizeof *slot_param);
    values = pxl_calloc(ctx, p->n ? p->n : 1, sizeof *values);
    if (!slot_param || !values) {
        st = pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        goto done;
    }
    size_t n_slots = 0, n_consts = 0;
    for (size_t i = 0; i < p->n; i++) {
        pxl_ad_node *nd = &p->code[i];
        if (nd->op == PXL_AD_OP_PARAM) {
            const size_t j = (size_t)nd->aux;
            if (j >= pb->n_params) {
                st = pxl_fail(ctx, PXL_ERR_INVALID_ARG,
                              "%s: the graph reads parameter %zu; the problem has %zu parameters", fn, j,
                              pb->n_params);
                goto done;
            }
            size_t s = 0;
            while (s < n_slots && slot_param[s] != (uint32_t)j) s++;
            if (s == n_slots) slot_param[n_slots++] = (uint32_t)j;
            nd->aux = (int32_t)s;
        } else if (nd->op == PXL_AD_OP_CONST) {
            values[n_consts] = nd->k;
            nd->op = PXL_AD_OP_INPUT;
            nd->aux = (int32_t)n_consts++;
            nd->k = 0;
        }
    }
    p->n_params = n_slots;
    p->n_inputs = n_consts;
    p->hash = ad_program_compute_hash(p);
    st = add_instances(pb, fn, p, slot_param, values, 1, &loss);
done:
    pxl_free(ctx, slot_param);
    pxl_free(ctx, values);
    pxl_ad_program_free(p);
    return st;
}

pxl_status pxl_ad_problem_set_bounds(pxl_ad_problem *pb, size_t param, double lower, double upper) {
    static const char fn[] = "pxl_ad_problem_set_bounds";
    if (!pb) return PXL_ERR_INVALID_ARG;
    if (param >= pb->n_params)
        return pxl_fail(pb->ctx, PXL_ERR_INVALID_ARG, "%s: parameter %zu is out of range (%zu parameters)", fn,
                        param, pb->n_params);
    if (isnan(lower) || isnan(upper) || lower > upper || lower == (double)INFINITY || upper == -(double)INFINITY)
        return pxl_fail(pb->ctx, PXL_ERR_INVALID_ARG, "%s: parameter %zu: bounds [%g, %g] are not an interval", fn,
                        param, lower, upper);
    pb->lower[param] = lower;
    pb->upper[param] = upper;
    return PXL_OK;
}

pxl_status pxl_ad_problem_set_constant(pxl_ad_problem *pb, size_t param, int constant) {
    if (!pb) return PXL_ERR_INVALID_ARG;
    if (param >= pb->n_params)
        return pxl_fail(pb->ctx, PXL_ERR_INVALID_ARG,
                        "pxl_ad_problem_set_constant: parameter %zu is out of range (%zu parameters)", param,
                        pb->n_params);
    pb->constant[param] = constant != 0;
    return PXL_OK;
}

pxl_ad_problem_info pxl_ad_problem_get_info(const pxl_ad_problem *pb) {
    pxl_ad_problem_info info = {0, 0, 0, 0};
    if (pb) {
        info.n_params = pb->n_params;
        info.n_instances = pb->n_instances;
        info.n_residuals = pb->n_residuals;
        info.n_groups = pb->n_groups;
    }
    return info;
}

pxl_status pxl_ad_problem_group_info(const pxl_ad_problem *pb, size_t i, pxl_ad_group_info *out) {
    if (!pb) return PXL_ERR_INVALID_ARG;
    PXL_REQUIRE(pb->ctx, "pxl_ad_problem_group_info", out);
    if (i >= pb->n_groups)
        return pxl_fail(pb->ctx, PXL_ERR_INVALID_ARG, "pxl_ad_problem_group_info: group %zu of %zu", i,
                        pb->n_groups);
    const ad_group *g = &pb->groups[i];
    memset(out, 0, sizeof *out);
    out->hash = g->prog->hash;
    out->n_instances = g->n_inst;
    out->n_slots = g->prog->n_params;
    out->n_inputs = g->prog->n_inputs;
    out->n_outputs = g->prog->n_out;
    out->n_nodes = g->prog->n;
    out->loss = g->loss;
    return PXL_OK;
}

pxl_status ad_group_eval(pxl_ad_problem *pb, size_t gi, const double *params, double *residuals, double *jacobian,
                         const pxl_ad_eval_options *opts) {
    const ad_group *g = &pb->groups[gi];
    return pxl_ad_eval(pb->ctx, g->prog, params, pb->n_params, g->pidx, g->inputs, g->n_inst, residuals, jacobian,
                       opts);
}

/* The largest Jacobian block of one group (n_inst * m * k), for scratch. */
static int max_group_jacobian(const pxl_ad_problem *pb, size_t *out) {
    size_t mx = 0;
    for (size_t i = 0; i < pb->n_groups; i++) {
        const ad_group *g = &pb->groups[i];
        size_t c;
        if (!pxl_mul_size(g->n_inst, g->prog->n_out, &c) || !pxl_mul_size(c, g->prog->n_params, &c)) return 0;
        if (c > mx) mx = c;
    }
    *out = mx;
    return 1;
}

pxl_status pxl_ad_problem_evaluate(pxl_ad_problem *pb, const double *params, double *cost, double *residuals,
                                   double *gradient, const pxl_ad_eval_options *opts) {
    static const char fn[] = "pxl_ad_problem_evaluate";
    if (!pb) return PXL_ERR_INVALID_ARG;
    pxl_ctx *ctx = pb->ctx;
    PXL_REQUIRE(ctx, fn, params);
    size_t n_jac = 0;
    if (!max_group_jacobian(pb, &n_jac)) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: sizes overflow", fn);
    double *r = residuals ? residuals : pxl_calloc(ctx, pb->n_residuals ? pb->n_residuals : 1, sizeof *r);
    double *jac = gradient ? pxl_calloc(ctx, n_jac ? n_jac : 1, sizeof *jac) : NULL;
    if (!r || (gradient && !jac)) {
        if (r != residuals) pxl_free(ctx, r);
        pxl_free(ctx, jac);
        return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    if (gradient) memset(gradient, 0, pb->n_params * sizeof *gradient);
    pxl_status st = PXL_OK;
    double total = 0;
    size_t off = 0;
    for (size_t gi = 0; gi < pb->n_groups && st == PXL_OK; gi++) {
        const ad_group *g = &pb->groups[gi];
        const size_t m = g->prog->n_out, k = g->prog->n_params;
        double *rg = r + off;
        st = ad_group_eval(pb, gi, params, rg, jac, opts);
        if (st != PXL_OK) break;
        for (size_t i = 0; i < g->n_inst; i++) {
            const double *f = rg + i * m;
            double s = 0;
            for (size_t o = 0; o < m; o++) s += f[o] * f[o];
            double rho[3];
            ad_loss_eval(&g->loss, s, rho);
            total += 0.5 * rho[0];
            if (!gradient) continue;
            const uint32_t *pi = g->pidx + i * k;
            for (size_t o = 0; o < m; o++) {
                const double *row = jac + (i * m + o) * k, w = rho[1] * f[o];
                for (size_t a = 0; a < k; a++)
                    if (!pb->constant[pi[a]]) gradient[pi[a]] += w * row[a];
            }
        }
        off += g->n_inst * m;
    }
    if (st == PXL_OK && cost) *cost = total;
    if (r != residuals) pxl_free(ctx, r);
    pxl_free(ctx, jac);
    return st;
}

const char *pxl_ad_linear_solver_name(pxl_ad_linear_solver s) {
    switch (s) {
    case PXL_AD_LINEAR_AUTO: return "AUTO";
    case PXL_AD_DENSE_CHOLESKY: return "DENSE_CHOLESKY";
    case PXL_AD_DENSE_QR: return "DENSE_QR";
    case PXL_AD_SPARSE_CHOLESKY: return "SPARSE_CHOLESKY";
    case PXL_AD_CGNR: return "CGNR";
    }
    return "UNKNOWN";
}

/* ---- covariance ----------------------------------------------------------- */

pxl_status pxl_ad_problem_covariance(pxl_ad_problem *pb, const double *params, double *std_errors,
                                     double *covariance) {
    static const char fn[] = "pxl_ad_problem_covariance";
    if (!pb) return PXL_ERR_INVALID_ARG;
    pxl_ctx *ctx = pb->ctx;
    PXL_REQUIRE(ctx, fn, params);
    PXL_REQUIRE(ctx, fn, std_errors);
    const size_t n = pb->n_params;
    if (n > AD_COVARIANCE_MAX_PARAMS)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: %zu parameters: the dense covariance takes at most %d", fn, n,
                        AD_COVARIANCE_MAX_PARAMS);
    size_t nf = 0;
    for (size_t j = 0; j < n; j++) nf += !pb->constant[j];
    if (pb->n_residuals <= nf)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG,
                        "%s: %zu residuals for %zu free parameters: the residual variance needs more residuals", fn,
                        pb->n_residuals, nf);
    size_t n_jac;
    if (!max_group_jacobian(pb, &n_jac)) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: sizes overflow", fn);
    int64_t *col = pxl_calloc(ctx, n, sizeof *col);
    size_t *free_param = pxl_calloc(ctx, nf ? nf : 1, sizeof *free_param);
    double *H = pxl_calloc(ctx, nf * nf + 1, sizeof *H);
    double *Hi = pxl_calloc(ctx, nf * nf + 1, sizeof *Hi);
    double *r = pxl_calloc(ctx, pb->n_residuals, sizeof *r);
    double *jac = pxl_calloc(ctx, n_jac ? n_jac : 1, sizeof *jac);
    pxl_status st = PXL_OK;
    if (!col || !free_param || !H || !Hi || !r || !jac) {
        st = pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "%s: out of memory (%zu parameters)", fn, n);
        goto done;
    }
    for (size_t j = 0, c = 0; j < n; j++) {
        col[j] = pb->constant[j] ? -1 : (int64_t)c;
        if (!pb->constant[j]) free_param[c++] = j;
    }
    double ss = 0;
    size_t off = 0;
    for (size_t gi = 0; gi < pb->n_groups; gi++) {
        const ad_group *g = &pb->groups[gi];
        const size_t m = g->prog->n_out, k = g->prog->n_params;
        st = ad_group_eval(pb, gi, params, r + off, jac, NULL);
        if (st != PXL_OK) goto done;
        for (size_t i = 0; i < g->n_inst; i++) {
            const uint32_t *pi = g->pidx + i * k;
            for (size_t o = 0; o < m; o++) {
                const double *row = jac + (i * m + o) * k, ro = r[off + i * m + o];
                if (!isfinite(ro)) {
                    st = pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: residual %zu is not finite", fn, off + i * m + o);
                    goto done;
                }
                ss += ro * ro;
                for (size_t a = 0; a < k; a++) {
                    const int64_t ca = col[pi[a]];
                    if (ca < 0 || row[a] == 0) continue;
                    if (!isfinite(row[a])) {
                        st = pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: the Jacobian of residual %zu is not finite",
                                      fn, off + i * m + o);
                        goto done;
                    }
                    double *h = H + (size_t)ca * nf;
                    for (size_t b = 0; b < k; b++) {
                        const int64_t cb = col[pi[b]];
                        if (cb >= 0) h[cb] += row[a] * row[b];
                    }
                }
            }
        }
        off += g->n_inst * m;
    }
    /* Cholesky of H (lower triangle in place); a pivot that is not above
     * 1e-12 of its diagonal entry means a column dependent on earlier ones */
    const size_t bad = ad_dense_cholesky(H, nf, 1e-12);
    if (bad < nf) {
        st = pxl_fail(ctx, PXL_ERR_INVALID_ARG,
                      "%s: J^T J is singular: parameter %zu is %s (rank deficient; hold it or another "
                      "parameter constant, or add residuals that determine it)",
                      fn, free_param[bad],
                      H[bad * nf + bad] == 0 ? "not used by any residual, or has a zero derivative"
                                             : "determined by the parameters before it");
        goto done;
    }
    /* inverse, column by column */
    for (size_t c = 0; c < nf; c++) {
        double *x = Hi + c * nf;
        memset(x, 0, nf * sizeof *x);
        x[c] = 1;
        ad_dense_cholesky_solve(H, nf, x, x);
    }
    const double s2 = ss / (double)(pb->n_residuals - nf);
    for (size_t j = 0; j < n; j++) std_errors[j] = col[j] < 0 ? 0 : sqrt(s2 * Hi[(size_t)col[j] * nf + (size_t)col[j]]);
    if (covariance) { /* symmetric by construction: both halves from one triangle of the inverse */
        for (size_t a = 0; a < n; a++)
            for (size_t b = 0; b < n; b++) {
                if (col[a] < 0 || col[b] < 0) {
                    covariance[a * n + b] = 0;
                    continue;
                }
                size_t lo = (size_t)col[a], hi = (size_t)col[b];
                if (lo > hi) {
                    size_t t = lo;
                    lo = hi;
                    hi = t;
                }
                covariance[a * n + b] = s2 * Hi[hi * nf + lo];
            }
    }
done:
    pxl_free(ctx, col);
    pxl_free(ctx, free_param);
    pxl_free(ctx, H);
    pxl_free(ctx, Hi);
    pxl_free(ctx, r);
    pxl_free(ctx, jac);
    return st;
}

/* ---- L-BFGS --------------------------------------------------------------- */

typedef struct min_job {
    pxl_ad_problem *pb;
    const pxl_ad_eval_options *eval;
    double *r, *jac;
} min_job;

/* E(x) = sum of all outputs; grad = J^T 1 (0 for constant parameters). */
static pxl_status min_objective(void *user, const double *x, double *f, double *grad) {
    min_job *J = user;
    pxl_ad_problem *pb = J->pb;
    double e = 0;
    if (grad) memset(grad, 0, pb->n_params * sizeof *grad);
    for (size_t gi = 0; gi < pb->n_groups; gi++) {
        const ad_group *g = &pb->groups[gi];
        const size_t m = g->prog->n_out, k = g->prog->n_params;
        pxl_status st = ad_group_eval(pb, gi, x, J->r, grad ? J->jac : NULL, J->eval);
        if (st != PXL_OK) return st;
        for (size_t i = 0; i < g->n_inst; i++) {
            const uint32_t *pi = g->pidx + i * k;
            for (size_t o = 0; o < m; o++) {
                e += J->r[i * m + o];
                if (!grad) continue;
                const double *row = J->jac + (i * m + o) * k;
                for (size_t a = 0; a < k; a++)
                    if (!pb->constant[pi[a]]) grad[pi[a]] += row[a];
            }
        }
    }
    *f = e;
    return PXL_OK;
}

pxl_status pxl_ad_problem_minimize(pxl_ad_problem *pb, double *params, const pxl_ad_solve_options *opts,
                                   pxl_ad_solve_summary *summary) {
    static const char fn[] = "pxl_ad_problem_minimize";
    if (!pb) return PXL_ERR_INVALID_ARG;
    pxl_ctx *ctx = pb->ctx;
    PXL_REQUIRE(ctx, fn, params);
    if (summary) memset(summary, 0, sizeof *summary);
    const size_t n = pb->n_params;
    pxl_status st = PXL_OK;
    size_t n_jac = 0, max_res = 0;
    if (!max_group_jacobian(pb, &n_jac)) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: sizes overflow", fn);
    for (size_t gi = 0; gi < pb->n_groups; gi++) {
        const size_t c = pb->groups[gi].n_inst * pb->groups[gi].prog->n_out;
        if (c > max_res) max_res = c;
    }
    min_job J;
    J.pb = pb;
    J.eval = opts ? &opts->eval : NULL;
    J.r = pxl_calloc(ctx, max_res ? max_res : 1, sizeof *J.r);
    J.jac = pxl_calloc(ctx, n_jac ? n_jac : 1, sizeof *J.jac);
    double *lo = pxl_calloc(ctx, n, sizeof *lo), *hi = pxl_calloc(ctx, n, sizeof *hi);
    if (!J.r || !J.jac || !lo || !hi) {
        st = pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "%s: out of memory (%zu parameters)", fn, n);
        goto done;
    }
    /* constant parameters are pinned by bounds equal to their value */
    for (size_t j = 0; j < n; j++) {
        lo[j] = pb->constant[j] ? params[j] : pb->lower[j];
        hi[j] = pb->constant[j] ? params[j] : pb->upper[j];
        if (!isfinite(params[j])) {
            st = pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: parameter %zu is not finite (%g)", fn, j, params[j]);
            goto done;
        }
    }
    if (pb->n_residuals == 0) {
        st = pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: the problem has no residuals", fn);
        goto done;
    }
    st = ad_lbfgs(ctx, n, params, lo, hi, min_objective, &J, opts, summary);
    if (summary) {
        summary->n_residuals = pb->n_residuals;
        size_t nf = 0;
        for (size_t j = 0; j < n; j++) nf += !pb->constant[j];
        summary->n_free_params = nf;
    }
done:
    if (st != PXL_OK && summary && summary->termination != PXL_AD_FAILURE) {
        summary->termination = PXL_AD_FAILURE;
        snprintf(summary->message, sizeof summary->message, "%s", pxl_ctx_error(ctx));
    }
    pxl_free(ctx, J.r);
    pxl_free(ctx, J.jac);
    pxl_free(ctx, lo);
    pxl_free(ctx, hi);
    return st;
}
