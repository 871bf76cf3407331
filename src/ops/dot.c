/* Dot product: CPU reference and GPU path. */
#include "../core/internal.h"
#include "pxl/ops.h"
#include "wgsl_ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- CPU ------------------------------------------------------------------ */

#define DOT_BLOCK ((size_t)1 << 16)

typedef struct {
    const float *a, *b;
    size_t n;
    double *block_sums;
} dot_job;

static void dot_block(void *arg, size_t blk) {
    dot_job *j = arg;
    size_t lo = blk * DOT_BLOCK;
    size_t hi = lo + DOT_BLOCK < j->n ? lo + DOT_BLOCK : j->n;
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i = lo;
    for (; i + 4 <= hi; i += 4) {
        s0 += (double)j->a[i] * (double)j->b[i];
        s1 += (double)j->a[i + 1] * (double)j->b[i + 1];
        s2 += (double)j->a[i + 2] * (double)j->b[i + 2];
        s3 += (double)j->a[i + 3] * (double)j->b[i + 3];
    }
    for (; i < hi; i++) s0 += (double)j->a[i] * (double)j->b[i];
    j->block_sums[blk] = (s0 + s1) + (s2 + s3);
}

pxl_status pxl_dot_cpu(pxl_ctx *ctx, const float *a, const float *b, size_t n, float *out) {
    if (n == 0) {
        *out = 0.0f;
        return PXL_OK;
    }
    size_t n_blocks = (n + DOT_BLOCK - 1) / DOT_BLOCK;
    double local[64];
    double *sums = n_blocks <= 64 ? local : pxl_calloc(ctx, n_blocks, sizeof *sums);
    if (!sums) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_dot: out of memory");
    dot_job j = {a, b, n, sums};
    pxl_parallel_for(ctx, n_blocks, dot_block, &j);
    double total = 0;
    for (size_t i = 0; i < n_blocks; i++) total += sums[i]; /* fixed order: deterministic */
    if (sums != local) pxl_free(ctx, sums);
    *out = (float)total;
    return PXL_OK;
}

/* ---- GPU ------------------------------------------------------------------ */

#define DOT_WG 256u
#define DOT_MAX_GROUPS 1024u

/* Launch shape. The context's tuning option dot=wg,groups overrides it, for
 * tuning benchmarks only (range-checked when the context was created). */
static void dot_shape(const pxl_tuning *t, uint32_t *wg, uint32_t *max_groups) {
    *wg = DOT_WG;
    *max_groups = DOT_MAX_GROUPS;
    if (t->dot_n == 2) {
        *wg = t->dot[0];
        *max_groups = t->dot[1];
    }
}

pxl_status pxl_dot_record(pxl_recorder *rec, pxl_buffer *a, pxl_buffer *b, size_t n,
                          pxl_buffer *out, size_t out_index) {
    pxl_ctx *ctx = pxl_recorder_ctx(rec);
    const pxl_gpu_info *info = pxl_gpu_get_info(ctx);
    size_t need;
    if (!pxl_mul_size(n, sizeof(float), &need) || pxl_buffer_size(a) < need || pxl_buffer_size(b) < need)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_dot: buffers hold fewer than n=%zu floats", n);
    if (pxl_buffer_size(out) / sizeof(float) <= out_index)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_dot: out_index %zu is past the output buffer",
                        out_index);
    if (out_index > UINT32_MAX)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_dot: out_index %zu too large", out_index);

    /* Chunk so that each binding fits the device's limit and its offset is aligned. */
    uint64_t align = info->min_storage_offset_alignment > 16 ? info->min_storage_offset_alignment : 16;
    uint64_t max_bind = info->max_storage_binding_size;
    if (max_bind > 0x40000000ull) max_bind = 0x40000000ull; /* keep counts in u32 */
    uint64_t chunk_bytes = max_bind / align * align;
    size_t chunk = (size_t)(chunk_bytes / sizeof(float));
    if (chunk < 64) return pxl_fail(ctx, PXL_ERR_UNSUPPORTED, "pxl_dot: device binding limit too small");
    size_t n_chunks = n ? (n + chunk - 1) / chunk : 1;

    uint32_t wg_size, max_groups;
    dot_shape(pxl_ctx_tuning(ctx), &wg_size, &max_groups);
    if (wg_size > info->max_invocations_per_workgroup) wg_size = info->max_invocations_per_workgroup;
    pxl_constant wg = {"WG", wg_size};
    pxl_kernel *k_partial, *k_final;
    pxl_status s = pxl_kernel_get_static(ctx, "dot.wgsl", pxl_wgsl_ops_dot, "dot_partial", &wg, 1, &k_partial);
    if (s != PXL_OK) return s;
    s = pxl_kernel_get_static(ctx, "dot.wgsl", pxl_wgsl_ops_dot, "dot_final", &wg, 1, &k_final);
    if (s != PXL_OK) return s;

    size_t n_parts_max;
    if (!pxl_mul_size(n_chunks, max_groups, &n_parts_max))
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_dot: n=%zu too large", n);
    pxl_buffer *parts;
    s = pxl_recorder_scratch(rec, n_parts_max * sizeof(float), &parts);
    if (s != PXL_OK) return s;

    uint32_t n_parts = 0;
    for (size_t c = 0; c < n_chunks; c++) {
        size_t lo = c * chunk;
        size_t len = n - lo < chunk ? n - lo : chunk;
        size_t n4 = (len + 3) / 4;
        uint32_t groups = (uint32_t)((n4 + wg_size - 1) / wg_size);
        if (groups > max_groups) groups = max_groups;
        if (groups == 0) groups = 1;
        uint32_t params[4] = {(uint32_t)len, n_parts, 0, 0};
        uint64_t bind = ((uint64_t)len * 4 + 15) / 16 * 16;
        if (bind == 0) bind = 16;
        pxl_binding bnd[3] = {
            {0, a, (uint64_t)lo * 4, bind},
            {1, b, (uint64_t)lo * 4, bind},
            {2, parts, 0, 0},
        };
        pxl_dispatch d = {k_partial, bnd, 3, params, sizeof params, 3, {groups, 1, 1}};
        s = pxl_recorder_dispatch(rec, &d);
        if (s != PXL_OK) return s;
        n_parts += groups;
    }
    uint32_t fparams[4] = {n_parts, (uint32_t)out_index, 0, 0};
    pxl_binding fb[2] = {{0, parts, 0, 0}, {1, out, 0, 0}};
    pxl_dispatch fd = {k_final, fb, 2, fparams, sizeof fparams, 2, {1, 1, 1}};
    return pxl_recorder_dispatch(rec, &fd);
}

static pxl_status dot_gpu(pxl_ctx *ctx, const float *a, const float *b, size_t n, float *out) {
    pxl_buffer *ba = NULL, *bb = NULL, *bo = NULL;
    pxl_recorder *rec = NULL;
    size_t bytes = n * sizeof(float);
    pxl_status s = pxl_buffer_create(ctx, bytes, &ba);
    if (s == PXL_OK) s = pxl_buffer_create(ctx, bytes, &bb);
    if (s == PXL_OK) s = pxl_buffer_create(ctx, sizeof(float), &bo);
    if (s == PXL_OK) s = pxl_buffer_upload(ctx, ba, 0, a, bytes);
    if (s == PXL_OK) s = pxl_buffer_upload(ctx, bb, 0, b, bytes);
    if (s == PXL_OK) s = pxl_recorder_begin(ctx, 0, &rec);
    if (s == PXL_OK) {
        s = pxl_dot_record(rec, ba, bb, n, bo, 0);
        if (s == PXL_OK) s = pxl_recorder_submit(rec, 0, NULL);
        else pxl_recorder_discard(rec);
    }
    if (s == PXL_OK) s = pxl_buffer_download(ctx, bo, 0, out, sizeof(float));
    pxl_buffer_free(ba);
    pxl_buffer_free(bb);
    pxl_buffer_free(bo);
    return s;
}

pxl_status pxl_dot(pxl_ctx *ctx, const float *a, const float *b, size_t n, float *out) {
    if (n > SIZE_MAX / sizeof(float))
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_dot: n=%zu too large", n);
    if (n == 0) {
        *out = 0.0f;
        return PXL_OK;
    }
    if (pxl_ctx_backend(ctx) == PXL_BACKEND_GPU) return dot_gpu(ctx, a, b, n, out);
    return pxl_dot_cpu(ctx, a, b, n, out);
}
