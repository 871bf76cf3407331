/*
 * GPU evaluation of AD programs: the generated kernel of codegen.c run over
 * instance data kept on the GPU (ad_gpu_block), and pxl_ad_eval's GPU path.
 *
 * Instances are dispatched in chunks so that every binding stays within the
 * device's max_storage_binding_size; a chunk is a multiple of 64 instances,
 * which keeps every binding offset a multiple of 256 bytes (the device's
 * storage offset alignment is at most 256, checked at device creation).
 */
#include "ad_internal.h"
#include "pxl/gpu.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define AD_WG 64u

struct ad_gpu_block {
    pxl_ctx *ctx;
    size_t n_inst, k, m, ni;
    size_t chunk;          /* instances per dispatch */
    pxl_buffer *idx, *in;  /* parameter indices (u32) and inputs (f32); NULL when k or ni is 0 */
    char *wgsl_res, *wgsl_jac;
};

/* 1 when the context has a GPU. */
static int has_gpu(pxl_ctx *ctx) { return pxl_ctx_backend(ctx) == PXL_BACKEND_GPU && pxl_gpu_get_info(ctx); }

void ad_gpu_block_free(ad_gpu_block *b) {
    if (!b) return;
    pxl_buffer_free(b->idx);
    pxl_buffer_free(b->in);
    pxl_free(b->ctx, b->wgsl_res);
    pxl_free(b->ctx, b->wgsl_jac);
    pxl_free(b->ctx, b);
}

/* Uploads n values of a double array as f32 into buf at offset 0, through a
 * bounded staging array. */
static pxl_status upload_f32(pxl_ctx *ctx, pxl_buffer *buf, const double *src, size_t n) {
    enum { STAGE = 1 << 16 };
    float *tmp = pxl_alloc(ctx, (n < STAGE ? (n ? n : 1) : STAGE) * sizeof(float));
    if (!tmp) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_ad: out of memory staging %zu values", n);
    pxl_status st = PXL_OK;
    for (size_t at = 0; at < n && st == PXL_OK; at += STAGE) {
        size_t c = n - at < STAGE ? n - at : STAGE;
        for (size_t i = 0; i < c; i++) tmp[i] = (float)src[at + i];
        st = pxl_buffer_upload(ctx, buf, at * sizeof(float), tmp, c * sizeof(float));
    }
    pxl_free(ctx, tmp);
    return st;
}

pxl_status ad_gpu_block_create(pxl_ctx *ctx, const pxl_ad_program *p, const uint32_t *param_index,
                               const double *inputs, size_t n_inst, ad_gpu_block **out) {
    static const char fn[] = "pxl_ad (GPU)";
    *out = NULL;
    if (!has_gpu(ctx))
        return pxl_fail(ctx, PXL_ERR_UNSUPPORTED, "%s: the context has no GPU (%s)", fn,
                        pxl_ctx_gpu_unavailable_reason(ctx));
    const pxl_gpu_info *gi = pxl_gpu_get_info(ctx);
    ad_gpu_block *b = pxl_calloc(ctx, 1, sizeof *b);
    if (!b) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    b->ctx = ctx;
    b->n_inst = n_inst;
    b->k = p->n_params;
    b->m = p->n_out;
    b->ni = p->n_inputs;
    /* the widest per-instance binding decides the chunk */
    size_t widest = b->m * (b->k ? b->k : 1);
    if (b->ni > widest) widest = b->ni;
    uint64_t lim = gi->max_storage_binding_size;
    if (lim > ((uint64_t)1 << 31)) lim = (uint64_t)1 << 31; /* u32 element indices stay far from overflow */
    uint64_t chunk = lim / (4u * (uint64_t)widest);
    chunk -= chunk % AD_WG;
    if (chunk == 0) {
        pxl_free(ctx, b);
        return pxl_fail(ctx, PXL_ERR_UNSUPPORTED,
                        "%s: one instance needs %zu values per binding: %u instances do not fit the device's "
                        "storage binding limit (%llu bytes)",
                        fn, widest, AD_WG, (unsigned long long)gi->max_storage_binding_size);
    }
    b->chunk = chunk > n_inst ? ((n_inst + AD_WG - 1) / AD_WG) * AD_WG : (size_t)chunk;
    if (b->chunk == 0) b->chunk = AD_WG;
    pxl_status st = ad_codegen(ctx, p, 0, AD_WG, &b->wgsl_res, NULL);
    if (st == PXL_OK) st = ad_codegen(ctx, p, 1, AD_WG, &b->wgsl_jac, NULL);
    size_t bytes = 0;
    if (st == PXL_OK && b->k) {
        if (!pxl_mul_size(n_inst, b->k * sizeof(uint32_t), &bytes))
            st = pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: %zu instances: sizes overflow", fn, n_inst);
        if (st == PXL_OK) st = pxl_buffer_create(ctx, bytes, &b->idx);
        if (st == PXL_OK) st = pxl_buffer_upload(ctx, b->idx, 0, param_index, bytes);
    }
    if (st == PXL_OK && b->ni) {
        if (!pxl_mul_size(n_inst, b->ni * sizeof(float), &bytes))
            st = pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: %zu instances: sizes overflow", fn, n_inst);
        if (st == PXL_OK) st = pxl_buffer_create(ctx, bytes, &b->in);
        if (st == PXL_OK) st = upload_f32(ctx, b->in, inputs, n_inst * b->ni);
    }
    if (st != PXL_OK) {
        ad_gpu_block_free(b);
        return st;
    }
    *out = b;
    return PXL_OK;
}

typedef struct ad_uni {
    uint32_t n, row;
    float inf, nan;
} ad_uni;

pxl_status ad_gpu_block_record(ad_gpu_block *b, pxl_buffer *params, size_t params_offset, size_t n_params,
                               pxl_buffer *res, size_t res_offset, pxl_buffer *jac, size_t jac_offset) {
    pxl_ctx *ctx = b->ctx;
    const pxl_gpu_info *gi = pxl_gpu_get_info(ctx);
    const int with_jac = jac != NULL && b->k > 0;
    pxl_kernel *kern;
    pxl_status st = pxl_kernel_get(ctx, "pxl_ad kernel", with_jac ? b->wgsl_jac : b->wgsl_res, "main", NULL, 0, &kern);
    if (st != PXL_OK) return st;
    pxl_recorder *rec;
    st = pxl_gpu_stream(ctx, &rec);
    if (st != PXL_OK) return st;
    const size_t k = b->k, m = b->m, ni = b->ni;
    uint32_t maxg = gi->max_workgroups_per_dimension ? gi->max_workgroups_per_dimension : 65535;
    for (size_t at = 0; at < b->n_inst; at += b->chunk) {
        size_t c = b->n_inst - at < b->chunk ? b->n_inst - at : b->chunk;
        pxl_binding bind[5];
        size_t nb = 0;
        bind[nb++] = (pxl_binding){0, params, params_offset, (uint64_t)(n_params ? n_params : 1) * 4};
        if (k) bind[nb++] = (pxl_binding){1, b->idx, (uint64_t)at * k * 4, (uint64_t)c * k * 4};
        if (ni) bind[nb++] = (pxl_binding){2, b->in, (uint64_t)at * ni * 4, (uint64_t)c * ni * 4};
        bind[nb++] = (pxl_binding){3, res, (uint64_t)(res_offset + at * m * 4), (uint64_t)c * m * 4};
        if (with_jac) bind[nb++] = (pxl_binding){4, jac, (uint64_t)(jac_offset + at * m * k * 4), (uint64_t)c * m * k * 4};
        size_t groups = (c + AD_WG - 1) / AD_WG;
        uint32_t gx = groups < maxg ? (uint32_t)groups : maxg;
        uint32_t gy = (uint32_t)((groups + gx - 1) / gx);
        ad_uni u = {(uint32_t)c, gx * AD_WG, INFINITY, NAN};
        pxl_dispatch d = {kern, bind, nb, &u, sizeof u, 5, {gx, gy, 1}};
        st = pxl_recorder_dispatch(rec, &d);
        if (st != PXL_OK) return st;
    }
    return PXL_OK;
}

pxl_buffer *ad_gpu_block_index(const ad_gpu_block *b) { return b->idx; }

/* pxl_ad_eval on the GPU: uploads, one recording, one download, widening. */
pxl_status ad_eval_gpu(pxl_ctx *ctx, const pxl_ad_program *prog, const double *params, size_t n_params,
                       const uint32_t *param_index, const double *inputs, size_t n_instances, double *residuals,
                       double *jacobian) {
    static const char fn[] = "pxl_ad_eval (GPU)";
    const size_t k = prog->n_params, m = prog->n_out;
    ad_gpu_block *b = NULL;
    pxl_buffer *P = NULL, *R = NULL, *Jb = NULL;
    float *tmp = NULL;
    size_t n_res = n_instances * m, n_jac = jacobian && k ? n_res * k : 0;
    pxl_status st = ad_gpu_block_create(ctx, prog, param_index, inputs, n_instances, &b);
    if (st == PXL_OK) st = pxl_buffer_create(ctx, (n_params ? n_params : 1) * sizeof(float), &P);
    if (st == PXL_OK && n_params) st = upload_f32(ctx, P, params, n_params);
    if (st == PXL_OK) st = pxl_buffer_create(ctx, n_res * sizeof(float), &R);
    if (st == PXL_OK && n_jac) st = pxl_buffer_create(ctx, n_jac * sizeof(float), &Jb);
    if (st == PXL_OK) st = ad_gpu_block_record(b, P, 0, n_params, R, 0, Jb, 0);
    if (st == PXL_OK) {
        size_t most = n_res > n_jac ? n_res : n_jac;
        tmp = pxl_alloc(ctx, most * sizeof(float));
        if (!tmp) st = pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "%s: out of memory (%zu values)", fn, most);
    }
    if (st == PXL_OK) st = pxl_buffer_download(ctx, R, 0, tmp, n_res * sizeof(float));
    if (st == PXL_OK)
        for (size_t i = 0; i < n_res; i++) residuals[i] = (double)tmp[i];
    if (st == PXL_OK && n_jac) {
        st = pxl_buffer_download(ctx, Jb, 0, tmp, n_jac * sizeof(float));
        if (st == PXL_OK)
            for (size_t i = 0; i < n_jac; i++) jacobian[i] = (double)tmp[i];
    }
    pxl_free(ctx, tmp);
    pxl_buffer_free(P);
    pxl_buffer_free(R);
    pxl_buffer_free(Jb);
    ad_gpu_block_free(b);
    return st;
}

pxl_status pxl_ad_program_wgsl(pxl_ctx *ctx, const pxl_ad_program *prog, int jacobian, char *buf, size_t cap,
                               size_t *len) {
    static const char fn[] = "pxl_ad_program_wgsl";
    PXL_REQUIRE_CTX(ctx);
    PXL_REQUIRE(ctx, fn, prog);
    if (cap > 0) PXL_REQUIRE(ctx, fn, buf);
    char *text;
    size_t n;
    pxl_status st = ad_codegen(ctx, prog, jacobian != 0, AD_WG, &text, &n);
    if (st != PXL_OK) return st;
    if (len) *len = n;
    if (cap > 0) {
        size_t c = n < cap - 1 ? n : cap - 1;
        memcpy(buf, text, c);
        buf[c] = 0;
    }
    pxl_free(ctx, text);
    return PXL_OK;
}

struct pxl_ad_gpu_eval {
    pxl_ctx *ctx;
    ad_gpu_block *b;
    size_t n_params, n_res, n_jac;
};

pxl_status pxl_ad_gpu_eval_create(pxl_ctx *ctx, const pxl_ad_program *prog, const uint32_t *param_index,
                                  const double *inputs, size_t n_instances, size_t n_params, pxl_ad_gpu_eval **out) {
    static const char fn[] = "pxl_ad_gpu_eval_create";
    PXL_REQUIRE_CTX(ctx);
    PXL_REQUIRE(ctx, fn, prog);
    PXL_REQUIRE(ctx, fn, out);
    *out = NULL;
    const size_t k = prog->n_params, m = prog->n_out, ni = prog->n_inputs;
    if (n_instances == 0) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: no instances", fn);
    if (k) PXL_REQUIRE(ctx, fn, param_index);
    if (ni) PXL_REQUIRE(ctx, fn, inputs);
    size_t n_res, n_jac, n_idx;
    if (!pxl_mul_size(n_instances, m, &n_res) || !pxl_mul_size(n_res, k ? k : 1, &n_jac) ||
        !pxl_mul_size(n_instances, k ? k : 1, &n_idx) || n_idx > UINT32_MAX)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: %zu instances: sizes overflow", fn, n_instances);
    if (ad_check_indices(ctx, fn, param_index, n_instances, k, n_params) != PXL_OK) return PXL_ERR_INVALID_ARG;
    pxl_ad_gpu_eval *e = pxl_calloc(ctx, 1, sizeof *e);
    if (!e) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    e->ctx = ctx;
    e->n_params = n_params;
    e->n_res = n_res;
    e->n_jac = k ? n_jac : 0;
    pxl_status st = ad_gpu_block_create(ctx, prog, param_index, inputs, n_instances, &e->b);
    if (st != PXL_OK) {
        pxl_free(ctx, e);
        return st;
    }
    *out = e;
    return PXL_OK;
}

pxl_status pxl_ad_gpu_eval_record(pxl_ad_gpu_eval *e, pxl_buffer *params, pxl_buffer *residuals, size_t res_offset,
                                  pxl_buffer *jacobian, size_t jac_offset) {
    static const char fn[] = "pxl_ad_gpu_eval_record";
    if (!e) return PXL_ERR_INVALID_ARG;
    pxl_ctx *ctx = e->ctx;
    PXL_REQUIRE(ctx, fn, params);
    PXL_REQUIRE(ctx, fn, residuals);
    if (res_offset % 256 || jac_offset % 256)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: offsets %zu and %zu must be multiples of 256", fn,
                        res_offset, jac_offset);
    if (pxl_buffer_size(params) < e->n_params * 4 || pxl_buffer_size(residuals) < res_offset ||
        pxl_buffer_size(residuals) - res_offset < e->n_res * 4 ||
        (jacobian && e->n_jac && (pxl_buffer_size(jacobian) < jac_offset ||
                                  pxl_buffer_size(jacobian) - jac_offset < e->n_jac * 4)))
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG,
                        "%s: a buffer is too small (%zu parameters, %zu residuals, %zu Jacobian values as f32)", fn,
                        e->n_params, e->n_res, e->n_jac);
    return ad_gpu_block_record(e->b, params, 0, e->n_params, residuals, res_offset, jacobian, jac_offset);
}

void pxl_ad_gpu_eval_free(pxl_ad_gpu_eval *e) {
    if (!e) return;
    ad_gpu_block_free(e->b);
    pxl_free(e->ctx, e);
}
