/* Tensors, dtypes, f16 and GGUF block conversions, and the op dispatch helper. */
#include "ops_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    size_t block_bytes; /* bytes per block */
    int64_t block;      /* elements per block */
} k_dtypes[PXL_DTYPE_COUNT] = {
    [PXL_F32] = {"f32", 4, 1},   [PXL_F16] = {"f16", 2, 1},     [PXL_I32] = {"i32", 4, 1},
    [PXL_Q8_0] = {"q8_0", 34, 32}, [PXL_Q4_0] = {"q4_0", 18, 32}, [PXL_Q4_K] = {"q4_k", 144, 256},
    [PXL_Q6_K] = {"q6_k", 210, 256},
};

const char *pxl_dtype_name(pxl_dtype t) {
    return (unsigned)t < PXL_DTYPE_COUNT ? k_dtypes[t].name : "?";
}

int pxl_dtype_is_quantized(pxl_dtype t) {
    return t == PXL_Q8_0 || t == PXL_Q4_0 || t == PXL_Q4_K || t == PXL_Q6_K;
}

int64_t pxl_dtype_block(pxl_dtype t) { return (unsigned)t < PXL_DTYPE_COUNT ? k_dtypes[t].block : 0; }

size_t pxl_dtype_row_bytes(pxl_dtype t, int64_t n) {
    if ((unsigned)t >= PXL_DTYPE_COUNT || n < 0 || n % k_dtypes[t].block) return 0;
    size_t r;
    if (!pxl_mul_size((size_t)(n / k_dtypes[t].block), k_dtypes[t].block_bytes, &r)) return 0;
    return r;
}

pxl_status pxl_tensor_create(pxl_ctx *ctx, pxl_dtype dtype, int ndim, const int64_t *shape,
                             pxl_tensor **out) {
    if ((unsigned)dtype >= PXL_DTYPE_COUNT)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_tensor_create: unknown dtype %d", (int)dtype);
    if (ndim < 1 || ndim > PXL_MAX_DIMS)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_tensor_create: %d dimensions (1..4 allowed)", ndim);
    int64_t nelem = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 1 || shape[i] > ((int64_t)1 << 40))
            return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_tensor_create: dimension %d is %lld", i,
                            (long long)shape[i]);
        if (nelem > INT64_MAX / shape[i])
            return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_tensor_create: element count overflows");
        nelem *= shape[i];
    }
    size_t row = pxl_dtype_row_bytes(dtype, shape[ndim - 1]);
    size_t bytes;
    if (!row)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG,
                        "pxl_tensor_create: rows of %lld elements are not allowed for %s (blocks of %lld)",
                        (long long)shape[ndim - 1], pxl_dtype_name(dtype), (long long)k_dtypes[dtype].block);
    if (!pxl_mul_size(row, (size_t)(nelem / shape[ndim - 1]), &bytes))
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_tensor_create: size overflows");
    pxl_tensor *t = pxl_calloc(ctx, 1, sizeof *t);
    if (!t) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_tensor_create: out of memory");
    t->ctx = ctx;
    t->dtype = dtype;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++) t->shape[i] = shape[i];
    t->nelem = nelem;
    t->bytes = bytes;
    pxl_status s = PXL_OK;
    if (pxl_on_gpu(ctx)) {
        s = pxl_buffer_create(ctx, bytes, &t->buf);
    } else {
        t->host = pxl_alloc(ctx, bytes);
        if (!t->host) s = pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_tensor_create: out of memory for %zu bytes", bytes);
    }
    if (s != PXL_OK) {
        pxl_free(ctx, t);
        return s;
    }
    *out = t;
    return PXL_OK;
}

void pxl_tensor_free(pxl_tensor *t) {
    if (!t) return;
    pxl_buffer_free(t->buf);
    pxl_free(t->ctx, t->host);
    pxl_free(t->ctx, t);
}

pxl_dtype pxl_tensor_dtype(const pxl_tensor *t) { return t->dtype; }
int pxl_tensor_ndim(const pxl_tensor *t) { return t->ndim; }
int64_t pxl_tensor_dim(const pxl_tensor *t, int i) {
    if (i < 0) i += t->ndim;
    return i >= 0 && i < t->ndim ? t->shape[i] : 1;
}
int64_t pxl_tensor_nelem(const pxl_tensor *t) { return t->nelem; }
size_t pxl_tensor_bytes(const pxl_tensor *t) { return t->bytes; }
pxl_buffer *pxl_tensor_buffer(const pxl_tensor *t) { return t->buf; }

/* GPU transfers are in whole words; the buffer is padded to 16 bytes. */
pxl_status pxl_tensor_write(pxl_ctx *ctx, pxl_tensor *t, const void *src, size_t bytes) {
    pxl_status s = pxl_check_ctx(ctx, "pxl_tensor_write", t);
    if (s != PXL_OK) return s;
    if (bytes != t->bytes)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_tensor_write: %zu bytes given, the tensor holds %zu",
                        bytes, t->bytes);
    if (!t->buf) {
        memcpy(t->host, src, bytes);
        return PXL_OK;
    }
    size_t whole = bytes / 4 * 4;
    s = pxl_buffer_upload(ctx, t->buf, 0, src, whole);
    if (s == PXL_OK && whole < bytes) {
        uint8_t tail[4] = {0, 0, 0, 0};
        memcpy(tail, (const uint8_t *)src + whole, bytes - whole);
        s = pxl_buffer_upload(ctx, t->buf, whole, tail, 4);
    }
    return s;
}

pxl_status pxl_tensor_read(pxl_ctx *ctx, const pxl_tensor *t, void *dst, size_t bytes) {
    pxl_status s = pxl_check_ctx(ctx, "pxl_tensor_read", t);
    if (s != PXL_OK) return s;
    if (bytes != t->bytes)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_tensor_read: %zu bytes asked, the tensor holds %zu",
                        bytes, t->bytes);
    if (!t->buf) {
        memcpy(dst, t->host, bytes);
        return PXL_OK;
    }
    size_t whole = bytes / 4 * 4;
    s = pxl_buffer_download(ctx, t->buf, 0, dst, whole);
    if (s == PXL_OK && whole < bytes) {
        uint8_t tail[4];
        s = pxl_buffer_download(ctx, t->buf, whole, tail, 4);
        memcpy((uint8_t *)dst + whole, tail, bytes - whole);
    }
    return s;
}

pxl_status pxl_flush(pxl_ctx *ctx) { return pxl_on_gpu(ctx) ? pxl_gpu_flush(ctx, 0, NULL) : PXL_OK; }
pxl_status pxl_finish(pxl_ctx *ctx) { return pxl_on_gpu(ctx) ? pxl_gpu_finish(ctx) : PXL_OK; }

/* ---- f16 ---------------------------------------------------------------------- */

uint16_t pxl_f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t exp = (x >> 23) & 0xffu;
    uint32_t man = x & 0x7fffffu;
    if (exp == 0xff) return (uint16_t)(sign | 0x7c00u | (man ? 0x200u | (man >> 13) : 0));
    int32_t e = (int32_t)exp - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7c00u); /* overflow: Inf */
    if (e <= 0) {                                   /* subnormal or zero */
        if (e < -10) return (uint16_t)sign;
        man |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - e);
        uint32_t h = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1u))) h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)e << 10) | (man >> 13);
    uint32_t rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++; /* may carry into the exponent: fine */
    return (uint16_t)(sign | h);
}

float pxl_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t x;
    if (exp == 0) {
        if (man == 0) x = sign;
        else { /* subnormal: normalise */
            int e = -1;
            do { e++; man <<= 1; } while (!(man & 0x400u));
            x = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
        }
    } else if (exp == 31) {
        x = sign | 0x7f800000u | (man << 13);
    } else {
        x = sign | ((exp - 15 + 127) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &x, 4);
    return f;
}

/* ---- GGUF blocks ------------------------------------------------------------------ */

static void quantize_32(pxl_dtype t, const float *src, int64_t n, uint8_t *o) {
    for (int64_t b = 0; b < n / PXL_QK; b++) {
        const float *x = src + b * PXL_QK;
        if (t == PXL_Q8_0) {
            float amax = 0;
            for (int i = 0; i < PXL_QK; i++) amax = fmaxf(amax, fabsf(x[i]));
            float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
            uint16_t dh = pxl_f32_to_f16(d);
            memcpy(o, &dh, 2);
            for (int i = 0; i < PXL_QK; i++) o[2 + i] = (uint8_t)(int8_t)lrintf(x[i] * id);
            o += 34;
        } else { /* Q4_0: the value of largest magnitude maps to -8 */
            float amax = 0, max = 0;
            for (int i = 0; i < PXL_QK; i++)
                if (fabsf(x[i]) > amax) { amax = fabsf(x[i]); max = x[i]; }
            float d = max / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
            uint16_t dh = pxl_f32_to_f16(d);
            memcpy(o, &dh, 2);
            for (int i = 0; i < 16; i++) {
                int q0 = (int)(x[i] * id + 8.5f), q1 = (int)(x[i + 16] * id + 8.5f);
                q0 = q0 < 0 ? 0 : q0 > 15 ? 15 : q0;
                q1 = q1 < 0 ? 0 : q1 > 15 ? 15 : q1;
                o[2 + i] = (uint8_t)(q0 | (q1 << 4));
            }
            o += 18;
        }
    }
}

static void dequantize_32(pxl_dtype t, const uint8_t *p, float *dst, int64_t n) {
    for (int64_t b = 0; b < n / PXL_QK; b++) {
        uint16_t dh;
        memcpy(&dh, p, 2);
        float d = pxl_f16_to_f32(dh);
        float *y = dst + b * PXL_QK;
        if (t == PXL_Q8_0) {
            for (int i = 0; i < PXL_QK; i++) y[i] = d * (float)(int8_t)p[2 + i];
            p += 34;
        } else {
            for (int i = 0; i < 16; i++) {
                y[i] = d * (float)((p[2 + i] & 0x0f) - 8);
                y[i + 16] = d * (float)((p[2 + i] >> 4) - 8);
            }
            p += 18;
        }
    }
}

pxl_status pxl_quantize(pxl_dtype t, const float *src, int64_t n, void *dst, size_t dst_bytes) {
    if (!pxl_dtype_is_quantized(t) || n < 0 || n % pxl_dtype_block(t) || pxl_dtype_row_bytes(t, n) != dst_bytes)
        return PXL_ERR_INVALID_ARG;
    if (t == PXL_Q4_K) pxl_q4k_quantize(src, n, dst);
    else if (t == PXL_Q6_K) pxl_q6k_quantize(src, n, dst);
    else quantize_32(t, src, n, dst);
    return PXL_OK;
}

pxl_status pxl_dequantize(pxl_dtype t, const void *src, size_t src_bytes, float *dst, int64_t n) {
    if (!pxl_dtype_is_quantized(t) || n < 0 || n % pxl_dtype_block(t) || pxl_dtype_row_bytes(t, n) != src_bytes)
        return PXL_ERR_INVALID_ARG;
    if (t == PXL_Q4_K) pxl_q4k_dequantize(src, dst, n);
    else if (t == PXL_Q6_K) pxl_q6k_dequantize(src, dst, n);
    else dequantize_32(t, src, dst, n);
    return PXL_OK;
}

/* ---- checks -------------------------------------------------------------------------- */

pxl_status pxl_check_ctx(pxl_ctx *ctx, const char *op, const pxl_tensor *t) {
    if (t->ctx != ctx) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: tensor belongs to another context", op);
    return PXL_OK;
}

pxl_status pxl_check_dtype(pxl_ctx *ctx, const char *op, const char *name, const pxl_tensor *t,
                           pxl_dtype want) {
    pxl_status s = pxl_check_ctx(ctx, op, t);
    if (s != PXL_OK) return s;
    if (t->dtype != want)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: %s is %s, expected %s", op, name,
                        pxl_dtype_name(t->dtype), pxl_dtype_name(want));
    return PXL_OK;
}

static void shape_str(const pxl_tensor *t, char *buf, size_t cap) {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < t->ndim && used < cap; i++) {
        int w = snprintf(buf + used, cap - used, "%s%lld", i ? "x" : "[", (long long)t->shape[i]);
        if (w > 0) used += (size_t)w;
    }
    if (used < cap - 1) strcat(buf, "]");
}

pxl_status pxl_check_same_shape(pxl_ctx *ctx, const char *op, const char *an, const pxl_tensor *a,
                                const char *bn, const pxl_tensor *b) {
    int same = a->ndim == b->ndim;
    for (int i = 0; same && i < a->ndim; i++) same = a->shape[i] == b->shape[i];
    if (!same) {
        char sa[64], sb[64];
        shape_str(a, sa, sizeof sa);
        shape_str(b, sb, sizeof sb);
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: %s %s and %s %s differ in shape", op, an, sa, bn, sb);
    }
    return PXL_OK;
}

pxl_status pxl_check_vec(pxl_ctx *ctx, const char *op, const char *name, const pxl_tensor *t,
                         int64_t cols) {
    if (t->nelem != cols) {
        char st[64];
        shape_str(t, st, sizeof st);
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: %s is %s, expected %lld elements", op, name, st,
                        (long long)cols);
    }
    return PXL_OK;
}

pxl_status pxl_check_no_alias(pxl_ctx *ctx, const char *op, const pxl_tensor *a, const pxl_tensor *b) {
    if (a == b) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: the output may not be an input", op);
    return PXL_OK;
}

/* ---- dispatch ---------------------------------------------------------------------- */

pxl_status pxl_op_dispatch3(pxl_ctx *ctx, const char *label, const char *wgsl, const char *entry,
                            const pxl_constant *constants, size_t n_constants,
                            const pxl_tensor *const *tensors, size_t n_tensors, const void *params,
                            size_t params_size, uint32_t gx, uint32_t gy, uint32_t gz) {
    pxl_kernel *k;
    pxl_status s = pxl_kernel_get(ctx, label, wgsl, entry, constants, n_constants, &k);
    if (s != PXL_OK) return s;
    pxl_binding b[15];
    if (n_tensors > 14) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: too many tensors", label);
    for (size_t i = 0; i < n_tensors; i++) {
        if ((s = pxl_op_check_binding(ctx, label, tensors[i])) != PXL_OK) return s;
        b[i].binding = (uint32_t)i;
        b[i].buffer = tensors[i]->buf;
        b[i].offset = 0;
        b[i].size = 0;
    }
    pxl_recorder *rec;
    s = pxl_gpu_stream(ctx, &rec);
    if (s != PXL_OK) return s;
    pxl_dispatch d = {k, b, n_tensors, params, params_size, (uint32_t)n_tensors, {gx, gy, gz}};
    return pxl_recorder_dispatch(rec, &d);
}

pxl_status pxl_op_dispatch(pxl_ctx *ctx, const char *label, const char *wgsl, const char *entry,
                           const pxl_constant *constants, size_t n_constants,
                           const pxl_tensor *const *tensors, size_t n_tensors, const void *params,
                           size_t params_size, uint64_t groups) {
    uint32_t g[2] = {0, 0}; /* gcc 12 cannot see that pxl_fail never returns PXL_OK */
    pxl_status s = pxl_op_grid(ctx, label, groups, g);
    if (s != PXL_OK) return s;
    return pxl_op_dispatch3(ctx, label, wgsl, entry, constants, n_constants, tensors, n_tensors, params,
                            params_size, g[0], g[1], 1);
}

pxl_status pxl_op_grid(pxl_ctx *ctx, const char *op, uint64_t groups, uint32_t g[2]) {
    uint64_t maxd = pxl_gpu_get_info(ctx)->max_workgroups_per_dimension;
    if (groups == 0) groups = 1;
    uint64_t gx = groups < maxd ? groups : maxd;
    uint64_t gy = (groups + gx - 1) / gx;
    if (gy > maxd)
        return pxl_fail(ctx, PXL_ERR_UNSUPPORTED, "%s: %llu workgroups exceed the device's grid", op,
                        (unsigned long long)groups);
    g[0] = (uint32_t)gx;
    g[1] = (uint32_t)gy;
    return PXL_OK;
}

pxl_status pxl_op_check_binding(pxl_ctx *ctx, const char *op, const pxl_tensor *t) {
    uint64_t max = pxl_gpu_get_info(ctx)->max_storage_binding_size;
    if (t->bytes > max)
        return pxl_fail(ctx, PXL_ERR_UNSUPPORTED, "%s: a tensor of %zu bytes exceeds the device's storage binding limit (%llu)",
                        op, t->bytes, (unsigned long long)max);
    return PXL_OK;
}

typedef struct {
    int64_t n, chunk;
    pxl_range_fn fn;
    void *arg;
} range_job;

static void range_task(void *arg, size_t i) {
    range_job *j = arg;
    int64_t lo = (int64_t)i * j->chunk;
    int64_t hi = lo + j->chunk < j->n ? lo + j->chunk : j->n;
    j->fn(j->arg, lo, hi);
}

void pxl_parallel_range(pxl_ctx *ctx, int64_t n, int64_t min_chunk, pxl_range_fn fn, void *arg) {
    if (n <= 0) return;
    int64_t tasks = (int64_t)pxl_ctx_threads(ctx) * 4;
    int64_t chunk = (n + tasks - 1) / tasks;
    if (chunk < min_chunk) chunk = min_chunk;
    if (chunk < 1) chunk = 1;
    range_job j = {n, chunk, fn, arg};
    pxl_parallel_for(ctx, (size_t)((n + chunk - 1) / chunk), range_task, &j);
}
