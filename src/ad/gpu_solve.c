/*
 * Levenberg-Marquardt on the GPU (ad_gpu_lm, see ad_internal.h): everything
 * of an iteration stays on the GPU (residuals, Jacobian rows, the normal
 * equations' products, the CG vectors); the host keeps the damping and reads
 * a few partial sums per iteration. The kernels are in wgsl/solve.wgsl.
 *
 * Memory (f32): per group, residuals and Jacobian rows twice (current and
 * trial point), a residual-space scratch vector, the transposed index
 * (n + 1 + instances * k u32), per instance its rho(s) (groups with a
 * robust loss); per parameter 11 state vectors, the gradient and the
 * diagonal of J^T J.
 *
 * Robust losses: after every evaluation of a group with one, the `loss`
 * kernel turns its residuals and Jacobian rows into Ceres' corrected ones in
 * place (the products, the gradient and the model's prediction use them, as
 * lm.c does) and leaves rho(|f_i|^2) per instance; that group's share of the
 * cost is then 1/2 the plain sum of those instead of the residuals' squares.
 */
#include "ad_internal.h"
#include "pxl/gpu.h"
#include "wgsl_ad.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define WG 256u
#define NPART 256u
#define PAD(n) ((((n) + 63) / 64) * 64) /* floats: keeps every sub-buffer 256-byte aligned */

/* must match struct Uni of solve.wgsl */
typedef struct sv_uni {
    uint32_t n, k, m, row, op, a, b, c;
    float mu, eta2, p0, p1;
} sv_uni;

/* the loss kernel of solve.wgsl takes pxl_ad_loss_kind's values as they are */
_Static_assert(PXL_AD_LOSS_HUBER == 1 && PXL_AD_LOSS_SOFT_L1 == 2 && PXL_AD_LOSS_CAUCHY == 3 &&
                   PXL_AD_LOSS_ARCTAN == 4 && PXL_AD_LOSS_TUKEY == 5,
               "solve.wgsl's loss kinds");

/* state vectors of the W block (solve.wgsl) */
enum { V_X, V_LO, V_HI, V_D, V_M, V_DL, V_R, V_Z, V_P, V_Q, V_XT, V_COUNT };

/* partial-sum slots */
/* SL_RES + g: group g's sum of squares of the residuals; SL_RES + G + g: of
 * J delta. T0..T2, the residual and the J delta slots are contiguous, so one
 * download reads all a trial step needs. */
enum { SL_CG = 0, SL_T0 = 1, SL_GMAX = 4, SL_G2 = 5, SL_RES = 6 }; /* SL_G2: sum g^2 */

typedef struct gpu_lm {
    pxl_ctx *ctx;
    size_t G, n, nb;
    ad_gpu_block **blk;
    size_t *off_r, *off_j, *n_inst, *k, *m;
    size_t *off_i; /* per group: its instances' offset in RHO */
    pxl_ad_loss *loss; /* per group, scale resolved (> 0 where kind is not NONE) */
    size_t total_r, total_j, total_i;
    pxl_buffer **ti;  /* per group: ptr[n + 1] then entries (at ti_ent[g]) */
    size_t *ti_ent;
    pxl_buffer *W, *Gr, *DG, *R, *Rt, *J, *Jt, *Wr, *PART, *S, *RHO;
    pxl_kernel *k_jv, *k_jt, *k_sumsq, *k_reduce, *k_vops, *k_loss;
    uint32_t maxg;
} gpu_lm;

static pxl_status kern(gpu_lm *L, const char *entry, pxl_kernel **out) {
    pxl_constant c = {"WG", WG};
    return pxl_kernel_get_static(L->ctx, "solve.wgsl", pxl_wgsl_ad_solve, entry, &c, 1, out);
}

static void grid(gpu_lm *L, size_t threads, uint32_t g[3], uint32_t *row) {
    size_t groups = (threads + WG - 1) / WG;
    if (groups == 0) groups = 1;
    uint32_t gx = groups < L->maxg ? (uint32_t)groups : L->maxg;
    g[0] = gx;
    g[1] = (uint32_t)((groups + gx - 1) / gx);
    g[2] = 1;
    *row = gx * WG;
}

/* workgroups of a grid-stride reduction over n elements: one per WG
 * elements, at most NPART (fewer keeps small problems cheap) */
static uint32_t part_groups(uint32_t n) {
    uint32_t g = (n + WG - 1) / WG;
    return g < 1 ? 1 : g > NPART ? NPART : g;
}

static pxl_status dispatch(gpu_lm *L, pxl_kernel *k, const pxl_binding *b, size_t nb, sv_uni *u, const uint32_t g[3]) {
    pxl_recorder *rec;
    pxl_status st = pxl_gpu_stream(L->ctx, &rec);
    if (st != PXL_OK) return st;
    pxl_dispatch d = {k, b, nb, u, sizeof *u, 4, {g[0], g[1], g[2]}};
    return pxl_recorder_dispatch(rec, &d);
}

#define F4(x) ((uint64_t)(x) * 4u)

/* The uniforms of a per-thread kernel over `threads` items (instances or
 * parameters) of group g: n, k, m and the 2-D grid in gr. */
static sv_uni group_uni(gpu_lm *L, size_t g, size_t threads, uint32_t gr[3]) {
    sv_uni u;
    memset(&u, 0, sizeof u);
    grid(L, threads, gr, &u.row);
    u.n = (uint32_t)threads;
    u.k = (uint32_t)L->k[g];
    u.m = (uint32_t)L->m[g];
    return u;
}

/* w = J v, per group: v a parameter-space vector at float offset voff of buf */
static pxl_status rec_jv(gpu_lm *L, pxl_buffer *Jbuf, pxl_buffer *vbuf, size_t voff) {
    for (size_t g = 0; g < L->G; g++) {
        if (L->k[g] == 0) {
            /* no parameters: J v = 0 */
            pxl_recorder *rec;
            pxl_status st = pxl_gpu_stream(L->ctx, &rec);
            if (st == PXL_OK) st = pxl_recorder_clear(rec, L->Wr, F4(L->off_r[g]), F4(L->n_inst[g] * L->m[g]));
            if (st != PXL_OK) return st;
            continue;
        }
        uint32_t gr[3];
        sv_uni u = group_uni(L, g, L->n_inst[g], gr);
        pxl_binding b[4] = {{0, Jbuf, F4(L->off_j[g]), F4(L->n_inst[g] * L->m[g] * L->k[g])},
                            {1, ad_gpu_block_index(L->blk[g]), 0, F4(L->n_inst[g] * L->k[g])},
                            {2, vbuf, F4(voff), F4(L->n)},
                            {3, L->Wr, F4(L->off_r[g]), F4(L->n_inst[g] * L->m[g])}};
        pxl_status st = dispatch(L, L->k_jv, b, 4, &u, gr);
        if (st != PXL_OK) return st;
    }
    return PXL_OK;
}

/* out = J^T u (squares: diag J^T J), summed over the groups in order; u a
 * residual-space vector laid out as R */
static pxl_status rec_jt(gpu_lm *L, pxl_buffer *Jbuf, pxl_buffer *ubuf, pxl_buffer *out, size_t ooff, int squares) {
    int first = 1;
    for (size_t g = 0; g < L->G; g++) {
        if (L->k[g] == 0) continue;
        uint32_t gr[3];
        sv_uni u = group_uni(L, g, L->n, gr);
        u.op = (first ? 0u : 1u) | (squares ? 2u : 0u);
        u.b = (uint32_t)L->ti_ent[g];
        pxl_binding b[4] = {{0, Jbuf, F4(L->off_j[g]), F4(L->n_inst[g] * L->m[g] * L->k[g])},
                            {1, L->ti[g], 0, 0},
                            {2, ubuf, F4(L->off_r[g]), F4(L->n_inst[g] * L->m[g])},
                            {3, out, F4(ooff), F4(L->n)}};
        pxl_status st = dispatch(L, L->k_jt, b, 4, &u, gr);
        if (st != PXL_OK) return st;
        first = 0;
    }
    if (first) { /* no group has parameters */
        pxl_recorder *rec;
        pxl_status st = pxl_gpu_stream(L->ctx, &rec);
        if (st == PXL_OK) st = pxl_recorder_clear(rec, out, F4(ooff), F4(L->n));
        return st;
    }
    return PXL_OK;
}

/* partial sums of squares of a residual-space vector, group g into slot SL_RES + g */
static pxl_status rec_sumsq(gpu_lm *L, pxl_buffer *vbuf, size_t slot0) {
    for (size_t g = 0; g < L->G; g++) {
        sv_uni u = {0};
        u.n = (uint32_t)(L->n_inst[g] * L->m[g]);
        u.a = (uint32_t)(slot0 + g);
        uint32_t gr[3] = {part_groups(u.n), 1, 1};
        pxl_binding b[2] = {{2, vbuf, F4(L->off_r[g]), F4(L->n_inst[g] * L->m[g])}, {5, L->PART, 0, 0}};
        pxl_status st = dispatch(L, L->k_sumsq, b, 2, &u, gr);
        if (st != PXL_OK) return st;
    }
    return PXL_OK;
}

/* the cost's partial sums at the point just evaluated into vbuf (R or Rt),
 * group g into slot slot0 + g: the sum of squares of its residuals, or with
 * a robust loss the sum of rho over its instances (RHO, written by rec_eval) */
static pxl_status rec_cost(gpu_lm *L, pxl_buffer *vbuf, size_t slot0) {
    for (size_t g = 0; g < L->G; g++) {
        sv_uni u = {0};
        pxl_binding b[2] = {{2, vbuf, F4(L->off_r[g]), F4(L->n_inst[g] * L->m[g])}, {5, L->PART, 0, 0}};
        u.n = (uint32_t)(L->n_inst[g] * L->m[g]);
        if (L->loss[g].kind != PXL_AD_LOSS_NONE) {
            u.n = (uint32_t)L->n_inst[g];
            u.op = 1;
            b[0] = (pxl_binding){2, L->RHO, F4(L->off_i[g]), F4(L->n_inst[g])};
        }
        u.a = (uint32_t)(slot0 + g);
        uint32_t gr[3] = {part_groups(u.n), 1, 1};
        pxl_status st = dispatch(L, L->k_sumsq, b, 2, &u, gr);
        if (st != PXL_OK) return st;
    }
    return PXL_OK;
}

static pxl_status rec_vops_at(gpu_lm *L, uint32_t op, uint32_t slot, double mu, int xv);

static pxl_status rec_vops(gpu_lm *L, uint32_t op, uint32_t slot, double mu) {
    return rec_vops_at(L, op, slot, mu, V_X);
}

/* rec_vops with the point x taken from state vector `xv` (op 6) */
static pxl_status rec_vops_at(gpu_lm *L, uint32_t op, uint32_t slot, double mu, int xv) {
    sv_uni u = {0};
    u.n = (uint32_t)L->n;
    u.op = op;
    u.a = slot;
    u.c = (uint32_t)xv;
    u.b = (uint32_t)L->nb;
    u.mu = (float)mu;
    uint32_t gr[3] = {part_groups(u.n), 1, 1};
    pxl_binding b[5] = {{0, L->Gr, 0, F4(L->n)}, {2, L->DG, 0, F4(L->n)}, {3, L->W, 0, 0}, {5, L->PART, 0, 0},
                        {6, L->S, 0, 0}};
    return dispatch(L, L->k_vops, b, 5, &u, gr);
}

static pxl_status rec_reduce(gpu_lm *L, uint32_t mode, uint32_t slot, uint32_t n_slots, uint32_t dst, uint32_t first,
                             double eta2) {
    sv_uni u = {0};
    u.n = n_slots;
    u.op = mode;
    u.a = slot;
    u.b = dst;
    u.c = first;
    u.eta2 = (float)eta2;
    uint32_t gr[3] = {1, 1, 1};
    pxl_binding b[2] = {{5, L->PART, 0, 0}, {6, L->S, 0, 0}};
    return dispatch(L, L->k_reduce, b, 2, &u, gr);
}

/* the generated kernels at the point stored as vector v of W, into R/J;
 * for a group with a robust loss then rho per instance into RHO and R, J
 * corrected in place */
static pxl_status rec_eval(gpu_lm *L, int v, pxl_buffer *R, pxl_buffer *J) {
    for (size_t g = 0; g < L->G; g++) {
        pxl_status st = ad_gpu_block_record(L->blk[g], L->W, (size_t)v * L->nb * 4, L->n, R, L->off_r[g] * 4, J,
                                            L->off_j[g] * 4);
        if (st != PXL_OK) return st;
        if (L->loss[g].kind == PXL_AD_LOSS_NONE) continue;
        uint32_t gr[3];
        sv_uni u = group_uni(L, g, L->n_inst[g], gr);
        u.op = (uint32_t)L->loss[g].kind;
        u.mu = (float)L->loss[g].scale;
        const size_t nj = L->n_inst[g] * L->m[g] * L->k[g];
        /* a group without parameters has no rows: J is bound whole, unread */
        pxl_binding b[3] = {{7, R, F4(L->off_r[g]), F4(L->n_inst[g] * L->m[g])},
                            {8, J, nj ? F4(L->off_j[g]) : 0, F4(nj)},
                            {9, L->RHO, F4(L->off_i[g]), F4(L->n_inst[g])}};
        st = dispatch(L, L->k_loss, b, 3, &u, gr);
        if (st != PXL_OK) return st;
    }
    return PXL_OK;
}

/* Downloads n_slots partial-sum slots from slot0 in one round trip and sums
 * each in double (max instead when is_max). */
static pxl_status read_slots(gpu_lm *L, size_t slot0, size_t n_slots, double *out, int is_max) {
    float *tmp = pxl_alloc(L->ctx, n_slots * NPART * sizeof *tmp);
    if (!tmp) return pxl_fail(L->ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_ad GPU solver: out of memory");
    pxl_status st = pxl_buffer_download(L->ctx, L->PART, slot0 * NPART * 4, tmp, n_slots * NPART * 4);
    for (size_t s = 0; st == PXL_OK && s < n_slots; s++) {
        double acc = 0;
        for (size_t i = 0; i < NPART; i++)
            acc = is_max ? fmax(acc, (double)tmp[s * NPART + i]) : acc + (double)tmp[s * NPART + i];
        out[s] = acc;
    }
    pxl_free(L->ctx, tmp);
    return st;
}

/* 1/2 the sum of a set of per-group slot sums; +inf when not finite */
static double half_sum(const double *v, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += v[i];
    return isfinite(s) ? 0.5 * s : HUGE_VAL;
}

static pxl_status read_cost(gpu_lm *L, double *cost) {
    double v[64];
    double s = 0;
    for (size_t g0 = 0; g0 < L->G; g0 += 64) {
        size_t c = L->G - g0 < 64 ? L->G - g0 : 64;
        pxl_status st = read_slots(L, SL_RES + g0, c, v, 0);
        if (st != PXL_OK) return st;
        for (size_t i = 0; i < c; i++) s += v[i];
    }
    *cost = isfinite(s) ? 0.5 * s : HUGE_VAL;
    return PXL_OK;
}

static void gpu_lm_free(gpu_lm *L) {
    pxl_ctx *ctx = L->ctx;
    for (size_t g = 0; g < L->G; g++) {
        if (L->blk) ad_gpu_block_free(L->blk[g]);
        if (L->ti) pxl_buffer_free(L->ti[g]);
    }
    pxl_free(ctx, L->blk);
    pxl_free(ctx, L->ti);
    pxl_free(ctx, L->off_r);
    pxl_free(ctx, L->loss);
    pxl_buffer *bufs[] = {L->W, L->Gr, L->DG, L->R, L->Rt, L->J, L->Jt, L->Wr, L->PART, L->S, L->RHO};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) pxl_buffer_free(bufs[i]);
}

/* The transposed index of group g: for every free parameter p, the entries
 * i*k + s of the instances and slots that read it, in instance order. */
static pxl_status build_transpose(gpu_lm *L, size_t g, const ad_group_view *gv, const unsigned char *is_const) {
    pxl_ctx *ctx = L->ctx;
    const size_t n = L->n, k = L->k[g], ni = gv->n_inst;
    size_t ent_at = PAD(n + 1), total;
    if (!pxl_mul_size(ni, k, &total) || !pxl_add_size(total, ent_at, &total) || total > UINT32_MAX)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_ad GPU solver: group %zu: %zu instances: index too large", g,
                        ni);
    uint32_t *t = pxl_calloc(ctx, total ? total : 1, sizeof *t);
    if (!t) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_ad GPU solver: out of memory (transposed index)");
    uint32_t *cnt = t; /* ptr[0..n] */
    for (size_t e = 0; e < ni * k; e++) {
        uint32_t p = gv->param_index[e];
        if (!is_const || !is_const[p]) cnt[p + 1]++;
    }
    for (size_t p = 0; p < n; p++) cnt[p + 1] += cnt[p];
    uint32_t *fill = pxl_calloc(ctx, n ? n : 1, sizeof *fill);
    if (!fill) {
        pxl_free(ctx, t);
        return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_ad GPU solver: out of memory (transposed index)");
    }
    for (size_t e = 0; e < ni * k; e++) {
        uint32_t p = gv->param_index[e];
        if (is_const && is_const[p]) continue;
        t[ent_at + cnt[p] + fill[p]++] = (uint32_t)e;
    }
    pxl_free(ctx, fill);
    L->ti_ent[g] = ent_at;
    pxl_status st = pxl_buffer_create(ctx, total * 4, &L->ti[g]);
    if (st == PXL_OK) st = pxl_buffer_upload(ctx, L->ti[g], 0, t, total * 4);
    pxl_free(ctx, t);
    return st;
}

static pxl_status setup(gpu_lm *L, const ad_group_view *groups, const unsigned char *is_const, const double *lower,
                        const double *upper, const double *params) {
    pxl_ctx *ctx = L->ctx;
    const size_t G = L->G, n = L->n;
    L->blk = pxl_calloc(ctx, G, sizeof *L->blk);
    L->ti = pxl_calloc(ctx, G, sizeof *L->ti);
    L->off_r = pxl_calloc(ctx, 7 * G, sizeof *L->off_r);
    L->loss = pxl_calloc(ctx, G, sizeof *L->loss);
    if (!L->blk || !L->ti || !L->off_r || !L->loss)
        return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_ad GPU solver: out of memory");
    L->off_j = L->off_r + G;
    L->n_inst = L->off_r + 2 * G;
    L->k = L->off_r + 3 * G;
    L->m = L->off_r + 4 * G;
    L->ti_ent = L->off_r + 5 * G;
    L->off_i = L->off_r + 6 * G;
    const pxl_gpu_info *gi = pxl_gpu_get_info(ctx);
    L->maxg = gi->max_workgroups_per_dimension ? gi->max_workgroups_per_dimension : 65535;
    for (size_t g = 0; g < G; g++) {
        const pxl_ad_program *p = groups[g].prog;
        L->n_inst[g] = groups[g].n_inst;
        L->k[g] = p->n_params;
        L->m[g] = p->n_out;
        L->off_r[g] = L->total_r;
        L->off_j[g] = L->total_j;
        L->off_i[g] = L->total_i;
        L->loss[g] = groups[g].loss;
        if ((int)L->loss[g].kind < PXL_AD_LOSS_NONE || (int)L->loss[g].kind > PXL_AD_LOSS_TUKEY ||
            !(L->loss[g].scale >= 0) || !isfinite(L->loss[g].scale))
            return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_ad GPU solver: group %zu: loss kind %d, scale %g", g,
                            (int)L->loss[g].kind, L->loss[g].scale);
        if (L->loss[g].kind != PXL_AD_LOSS_NONE && L->loss[g].scale == 0) L->loss[g].scale = 1;
        /* the kernel works with a and a^2 in f32 */
        const double a2 = L->loss[g].scale * L->loss[g].scale;
        if (L->loss[g].kind != PXL_AD_LOSS_NONE && !(a2 >= (double)FLT_MIN && a2 <= (double)FLT_MAX))
            return pxl_fail(ctx, PXL_ERR_UNSUPPORTED,
                            "pxl_ad GPU solver: group %zu: loss scale %g: its square is outside f32's normal range; "
                            "solve on the CPU",
                            g, L->loss[g].scale);
        size_t nr, nj;
        if (!pxl_mul_size(groups[g].n_inst, p->n_out, &nr) || !pxl_mul_size(nr, p->n_params, &nj) ||
            L->total_r + PAD(nr) > UINT32_MAX || L->total_j + PAD(nj) > ((size_t)1 << 40))
            return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_ad GPU solver: group %zu is too large", g);
        /* every dispatch binds a group's whole Jacobian, residuals, indices
         * and transposed index: each must fit one binding (and u32 indices) */
        uint64_t lim = gi->max_storage_binding_size;
        if (lim > ((uint64_t)1 << 31)) lim = (uint64_t)1 << 31;
        const uint64_t need = 4u * ((uint64_t)nj > (uint64_t)groups[g].n_inst * (p->n_params + 1) + n
                                        ? (uint64_t)nj
                                        : (uint64_t)groups[g].n_inst * (p->n_params + 1) + n);
        if (need > lim)
            return pxl_fail(ctx, PXL_ERR_UNSUPPORTED,
                            "pxl_ad GPU solver: group %zu (%zu instances, %zu outputs x %zu slots) needs a %llu-byte "
                            "binding; the device allows %llu: split the group, or solve on the CPU",
                            g, groups[g].n_inst, (size_t)p->n_out, (size_t)p->n_params, (unsigned long long)need,
                            (unsigned long long)lim);
        L->total_r += PAD(nr);
        L->total_j += PAD(nj);
        if (L->loss[g].kind != PXL_AD_LOSS_NONE) L->total_i += PAD(groups[g].n_inst);
        pxl_status st = ad_gpu_block_create(ctx, p, groups[g].param_index, groups[g].inputs, groups[g].n_inst,
                                            &L->blk[g]);
        if (st == PXL_OK && p->n_params) st = build_transpose(L, g, &groups[g], is_const);
        if (st != PXL_OK) return st;
    }
    pxl_status st = PXL_OK;
    if (F4(V_COUNT * L->nb) > gi->max_storage_binding_size)
        return pxl_fail(ctx, PXL_ERR_UNSUPPORTED, "pxl_ad GPU solver: %zu parameters: the state vectors exceed the "
                        "device's binding limit (%llu bytes)", n, (unsigned long long)gi->max_storage_binding_size);
    size_t tr = L->total_r ? L->total_r : 64, tj = L->total_j ? L->total_j : 64, ti = L->total_i ? L->total_i : 64;
    if (st == PXL_OK) st = pxl_buffer_create(ctx, F4(V_COUNT * L->nb), &L->W);
    if (st == PXL_OK) st = pxl_buffer_create(ctx, F4(L->nb), &L->Gr);
    if (st == PXL_OK) st = pxl_buffer_create(ctx, F4(L->nb), &L->DG);
    if (st == PXL_OK) st = pxl_buffer_create(ctx, F4(tr), &L->R);
    if (st == PXL_OK) st = pxl_buffer_create(ctx, F4(tr), &L->Rt);
    if (st == PXL_OK) st = pxl_buffer_create(ctx, F4(tr), &L->Wr);
    if (st == PXL_OK) st = pxl_buffer_create(ctx, F4(tj), &L->J);
    if (st == PXL_OK) st = pxl_buffer_create(ctx, F4(tj), &L->Jt);
    if (st == PXL_OK) st = pxl_buffer_create(ctx, F4((SL_RES + 2 * G) * NPART), &L->PART);
    if (st == PXL_OK) st = pxl_buffer_create(ctx, 64 * 4, &L->S);
    if (st == PXL_OK) st = pxl_buffer_create(ctx, F4(ti), &L->RHO);
    if (st == PXL_OK) st = kern(L, "jv", &L->k_jv);
    if (st == PXL_OK) st = kern(L, "jt", &L->k_jt);
    if (st == PXL_OK) st = kern(L, "sumsq", &L->k_sumsq);
    if (st == PXL_OK) st = kern(L, "reduce", &L->k_reduce);
    if (st == PXL_OK) st = kern(L, "vops", &L->k_vops);
    if (st == PXL_OK && L->total_i) st = kern(L, "loss", &L->k_loss);
    if (st != PXL_OK) return st;
    /* x, lo, hi */
    double *v = pxl_alloc(ctx, 3 * n * sizeof *v + 8);
    if (!v) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_ad GPU solver: out of memory");
    for (size_t j = 0; j < n; j++) {
        v[j] = params[j];
        v[n + j] = lower ? lower[j] : -(double)INFINITY;
        v[2 * n + j] = upper ? upper[j] : (double)INFINITY;
        if (is_const && is_const[j]) v[n + j] = v[2 * n + j] = params[j];
    }
    for (int q = 0; q < 3 && st == PXL_OK; q++) {
        /* upload through a float staging array at the vector's offset */
        float *f = pxl_alloc(ctx, (n ? n : 1) * sizeof *f);
        if (!f) {
            st = pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_ad GPU solver: out of memory");
            break;
        }
        for (size_t j = 0; j < n; j++) f[j] = (float)v[(size_t)q * n + j];
        if (n) st = pxl_buffer_upload(ctx, L->W, F4((size_t)q * L->nb), f, F4(n));
        pxl_free(ctx, f);
    }
    pxl_free(ctx, v);
    return st;
}

/* At the point in state vector xv (buffers R and J): gradient, diag J^T J
 * and the projected gradient's max-norm, read back (+inf when the gradient
 * is not finite: a sum of squares carries NaN where a max need not); and the
 * cost when cost is not NULL. */
static pxl_status linearize(gpu_lm *L, int xv, double *cost, double *gmax) {
    pxl_status st = rec_jt(L, L->J, L->R, L->Gr, 0, 0);
    if (st == PXL_OK) st = rec_jt(L, L->J, L->R, L->DG, 0, 1);
    if (st == PXL_OK) st = rec_vops_at(L, 6, SL_GMAX, 0, xv);
    if (st == PXL_OK && cost) st = rec_cost(L, L->R, SL_RES);
    /* slots GMAX (a max) and G2 (a sum) are adjacent: one download */
    float part[2 * NPART];
    if (st == PXL_OK) st = pxl_buffer_download(L->ctx, L->PART, (size_t)SL_GMAX * NPART * 4, part, sizeof part);
    if (st == PXL_OK) {
        double gm = 0, g2 = 0;
        for (size_t i = 0; i < NPART; i++) {
            gm = fmax(gm, (double)part[i]);
            g2 += (double)part[NPART + i];
        }
        *gmax = isfinite(g2) ? gm : HUGE_VAL;
    }
    if (st == PXL_OK && cost) st = read_cost(L, cost);
    return st;
}

pxl_status ad_gpu_lm(pxl_ctx *ctx, const ad_group_view *groups, size_t n_groups, size_t n_params,
                     const unsigned char *is_const, const double *lower, const double *upper, double *params,
                     const pxl_ad_solve_options *opts, pxl_ad_solve_summary *summary) {
    static const char fn[] = "pxl_ad GPU solver";
    pxl_ad_solve_options o;
    memset(&o, 0, sizeof o);
    if (opts) o = *opts;
    const int max_it = o.max_iterations ? o.max_iterations : 100;
    const double ftol = o.function_tolerance > 0 ? o.function_tolerance : 1e-6;
    const double gtol = o.gradient_tolerance > 0 ? o.gradient_tolerance : 1e-10;
    const double ptol = o.parameter_tolerance > 0 ? o.parameter_tolerance : 1e-8;
    double mu = o.initial_mu > 0 ? o.initial_mu : 1e-4;
    const int max_cg = o.max_linear_iterations > 0 ? o.max_linear_iterations : 500, cg_batch = 10;
    /* r.z (the preconditioned residual's square) falls by eta^2 */
    const double eta = o.linear_tolerance > 0 ? o.linear_tolerance : 1e-3;
    if (pxl_ctx_backend(ctx) != PXL_BACKEND_GPU)
        return pxl_fail(ctx, PXL_ERR_UNSUPPORTED, "%s: the context has no GPU", fn);
    if (n_params == 0 || n_params > UINT32_MAX / V_COUNT - 64)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: %zu parameters", fn, n_params);
    const double t_start = pxl_time_now();
    gpu_lm L;
    memset(&L, 0, sizeof L);
    L.ctx = ctx;
    L.G = n_groups;
    L.n = n_params;
    L.nb = PAD(n_params);
    pxl_ad_solve_summary sm;
    memset(&sm, 0, sizeof sm);
    sm.linear_solver = PXL_AD_CGNR;
    sm.n_free_params = n_params;
    for (size_t j = 0; is_const && j < n_params; j++) sm.n_free_params -= is_const[j] ? 1 : 0;
    double t_eval = 0, t_lin = 0, t0;
    pxl_status st = setup(&L, groups, is_const, lower, upper, params);
    for (size_t g = 0; g < n_groups; g++) sm.n_residuals += L.n_inst ? L.n_inst[g] * L.m[g] : 0;
    double cost = 0, gmax = 0;
    t0 = pxl_time_now();
    if (st == PXL_OK) st = rec_eval(&L, V_X, L.R, L.J);
    if (st == PXL_OK) st = linearize(&L, V_X, &cost, &gmax);
    t_eval += pxl_time_now() - t0;
    if (st == PXL_OK && (!isfinite(cost) || !isfinite(gmax)))
        st = pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: the residuals or the Jacobian at the start are not finite", fn);
    if (st != PXL_OK) goto done;
    sm.initial_cost = cost;
    double nu = 2;
    sm.termination = PXL_AD_NO_CONVERGENCE;
    snprintf(sm.message, sizeof sm.message, "%d iterations without convergence", max_it);
    if (gmax <= gtol) {
        sm.termination = PXL_AD_CONVERGED_GRADIENT;
        snprintf(sm.message, sizeof sm.message, "max |J^T r| %.3g <= %.3g at the start", gmax, gtol);
    }
    while (sm.termination == PXL_AD_NO_CONVERGENCE && sm.iterations < max_it) {
        if (mu > 1e32) {
            sm.termination = PXL_AD_CONVERGED_PARAMETER;
            snprintf(sm.message, sizeof sm.message, "damping mu %.3g > 1e32: no step reduces the cost", mu);
            break;
        }
        if (o.max_seconds > 0 && pxl_time_now() - t_start > o.max_seconds) {
            snprintf(sm.message, sizeof sm.message, "time limit %.3g s reached", o.max_seconds);
            break;
        }
        sm.iterations++;
        /* (J^T J + mu D) delta = -g by Jacobi-preconditioned CG */
        t0 = pxl_time_now();
        st = rec_vops(&L, 0, 0, mu);
        if (st == PXL_OK) st = rec_vops(&L, 1, SL_CG, mu);
        if (st == PXL_OK) st = rec_reduce(&L, 1, SL_CG, 1, 0, 1, eta * eta);
        for (int it = 0; st == PXL_OK && it < max_cg;) {
            for (int b = 0; b < cg_batch && it < max_cg && st == PXL_OK; b++, it++) {
                st = rec_jv(&L, L.J, L.W, V_P * L.nb);
                if (st == PXL_OK) st = rec_jt(&L, L.J, L.Wr, L.W, V_Q * L.nb, 0);
                if (st == PXL_OK) st = rec_vops(&L, 2, SL_CG, mu);
                if (st == PXL_OK) st = rec_reduce(&L, 0, SL_CG, 1, 1, 0, 0);
                if (st == PXL_OK) st = rec_vops(&L, 3, SL_CG, mu);
                if (st == PXL_OK) st = rec_reduce(&L, 1, SL_CG, 1, 0, 0, eta * eta);
                if (st == PXL_OK) st = rec_vops(&L, 4, 0, mu);
            }
            float s[8];
            if (st == PXL_OK) st = pxl_buffer_download(ctx, L.S, 0, s, sizeof s);
            if (st != PXL_OK || s[4] != 0) break;
        }
        if (st != PXL_OK) goto done;
        /* the trial point, projected onto the box, the model's prediction and
         * the cost there, read back in one round trip */
        st = rec_vops(&L, 5, SL_T0, mu);
        if (st == PXL_OK) st = rec_jv(&L, L.J, L.W, V_DL * L.nb);
        if (st == PXL_OK) st = rec_sumsq(&L, L.Wr, SL_RES + L.G);
        t_lin += pxl_time_now() - t0;
        t0 = pxl_time_now();
        if (st == PXL_OK) st = rec_eval(&L, V_XT, L.Rt, L.Jt);
        if (st == PXL_OK) st = rec_cost(&L, L.Rt, SL_RES);
        double *sl = pxl_alloc(ctx, (SL_RES - SL_T0 + 2 * L.G) * sizeof *sl);
        if (!sl && st == PXL_OK) st = pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        if (st == PXL_OK) st = read_slots(&L, SL_T0, SL_RES - SL_T0 + 2 * L.G, sl, 0);
        t_eval += pxl_time_now() - t0;
        if (st != PXL_OK) {
            pxl_free(ctx, sl);
            goto done;
        }
        const double *t3 = sl; /* delta.delta, g.delta, x.x */
        const double cost_new = half_sum(sl + (SL_RES - SL_T0), L.G);
        const double jd2 = 2 * half_sum(sl + (SL_RES - SL_T0) + L.G, L.G);
        const double step_norm = sqrt(t3[0]), x_norm = sqrt(t3[2]), gd = t3[1];
        pxl_free(ctx, sl);
        if (!isfinite(step_norm)) {
            mu *= nu;
            nu *= 2;
            continue;
        }
        if (step_norm <= ptol * (x_norm + ptol)) {
            sm.termination = PXL_AD_CONVERGED_PARAMETER;
            snprintf(sm.message, sizeof sm.message, "step %.3g <= %.3g * (|x| %.3g + %.3g)", step_norm, ptol, x_norm,
                     ptol);
            break;
        }
        const double predicted = -(gd + 0.5 * jd2);
        const double rho = (isfinite(cost_new) && predicted > 0) ? (cost - cost_new) / predicted : -1.0;
        if (!(rho > 1e-3)) {
            mu *= nu;
            nu *= 2;
            continue;
        }
        /* accept: R = Rt, J = Jt, then x = xt, unless the gradient there is
         * not finite (a rejected step: the old R, J and gradient back) */
        pxl_buffer *tmp = L.R;
        L.R = L.Rt;
        L.Rt = tmp;
        tmp = L.J;
        L.J = L.Jt;
        L.Jt = tmp;
        t0 = pxl_time_now();
        double gmax_new = 0;
        st = linearize(&L, V_XT, NULL, &gmax_new);
        if (st == PXL_OK && !isfinite(gmax_new)) {
            tmp = L.R;
            L.R = L.Rt;
            L.Rt = tmp;
            tmp = L.J;
            L.J = L.Jt;
            L.Jt = tmp;
            st = linearize(&L, V_X, NULL, &gmax);
            t_eval += pxl_time_now() - t0;
            if (st != PXL_OK) goto done;
            mu *= nu;
            nu *= 2;
            continue;
        }
        t_eval += pxl_time_now() - t0;
        if (st == PXL_OK) st = rec_vops(&L, 7, 0, mu);
        if (st != PXL_OK) goto done;
        gmax = gmax_new;
        sm.successful_steps++;
        const double change = cost - cost_new, prev = cost;
        cost = cost_new;
        const double f = 1 - (2 * rho - 1) * (2 * rho - 1) * (2 * rho - 1);
        mu *= f > 1.0 / 3 ? f : 1.0 / 3;
        nu = 2;
        if (o.progress) o.progress(o.progress_user, sm.iterations, cost);
        if (gmax <= gtol) {
            sm.termination = PXL_AD_CONVERGED_GRADIENT;
            snprintf(sm.message, sizeof sm.message, "max |J^T r| %.3g <= %.3g", gmax, gtol);
        } else if (fabs(change) <= ftol * prev) {
            sm.termination = PXL_AD_CONVERGED_FUNCTION;
            snprintf(sm.message, sizeof sm.message, "|cost change| %.3g <= %.3g * cost %.3g", fabs(change), ftol,
                     prev);
        }
    }
    /* the solution back to the caller */
    {
        float *f = pxl_alloc(ctx, (n_params ? n_params : 1) * sizeof *f);
        if (!f) st = pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        if (st == PXL_OK) st = pxl_buffer_download(ctx, L.W, 0, f, F4(n_params));
        if (st == PXL_OK)
            for (size_t j = 0; j < n_params; j++) params[j] = (double)f[j];
        pxl_free(ctx, f);
    }
    sm.final_cost = cost;
    sm.gradient_max_norm = gmax;
    sm.eval_seconds = t_eval;
    sm.linear_solver_seconds = t_lin;
    sm.total_seconds = pxl_time_now() - t_start;
    sm.other_seconds = fmax(0.0, sm.total_seconds - t_eval - t_lin);
    if (summary && st == PXL_OK) *summary = sm;
done:
    gpu_lm_free(&L);
    return st;
}
