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
    [PXL_Q6_K] = {"q6_k", 210, 256}, [PXL_Q5_0] = {"q5_0", 22, 32}, [PXL_Q5_K] = {"q5_k", 176, 256},
    [PXL_BF16] = {"bf16", 2, 1},     [PXL_Q4_1] = {"q4_1", 20, 32}, [PXL_Q5_1] = {"q5_1", 24, 32},
    [PXL_Q2_K] = {"q2_k", 84, 256},  [PXL_Q3_K] = {"q3_k", 110, 256},
};

const char *pxl_dtype_name(pxl_dtype t) {
    return (unsigned)t < PXL_DTYPE_COUNT ? k_dtypes[t].name : "?";
}

int pxl_dtype_is_quantized(pxl_dtype t) {
    return (unsigned)t < PXL_DTYPE_COUNT && k_dtypes[t].block > 1;
}

int64_t pxl_dtype_block(pxl_dtype t) { return (unsigned)t < PXL_DTYPE_COUNT ? k_dtypes[t].block : 0; }

size_t pxl_dtype_row_bytes(pxl_dtype t, int64_t n) {
    if ((unsigned)t >= PXL_DTYPE_COUNT || n < 0 || n % k_dtypes[t].block) return 0;
    size_t r;
    if (!pxl_mul_size((size_t)(n / k_dtypes[t].block), k_dtypes[t].block_bytes, &r)) return 0;
    return r;
}

/* Checks a shape and computes its element count and bytes for the dtype. */
static pxl_status check_shape(pxl_ctx *ctx, const char *fn, pxl_dtype dtype, int ndim, const int64_t *shape,
                              int64_t *nelem_out, size_t *bytes_out) {
    if ((unsigned)dtype >= PXL_DTYPE_COUNT)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: unknown dtype %d", fn, (int)dtype);
    if (ndim < 1 || ndim > PXL_MAX_DIMS)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: %d dimensions (1..4 allowed)", fn, ndim);
    if (!shape) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: shape is NULL", fn);
    int64_t nelem = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 1 || shape[i] > ((int64_t)1 << 40))
            return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: dimension %d is %lld", fn, i, (long long)shape[i]);
        if (nelem > INT64_MAX / shape[i])
            return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: element count overflows", fn);
        nelem *= shape[i];
    }
    size_t row = pxl_dtype_row_bytes(dtype, shape[ndim - 1]);
    if (!row)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: rows of %lld elements are not allowed for %s (blocks of %lld)",
                        fn, (long long)shape[ndim - 1], pxl_dtype_name(dtype), (long long)k_dtypes[dtype].block);
    if (!pxl_mul_size(row, (size_t)(nelem / shape[ndim - 1]), bytes_out))
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: size overflows", fn);
    *nelem_out = nelem;
    return PXL_OK;
}

/* A tensor header over storage st (taking one reference) at byte offset. */
static pxl_status new_tensor(pxl_ctx *ctx, const char *fn, pxl_dtype dtype, int ndim, const int64_t *shape,
                             int64_t nelem, size_t bytes, pxl_storage *st, size_t offset, pxl_tensor **out) {
    pxl_tensor *t = pxl_calloc(ctx, 1, sizeof *t);
    if (!t) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    t->ctx = ctx;
    t->dtype = dtype;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++) t->shape[i] = shape[i];
    t->nelem = nelem;
    t->bytes = bytes;
    t->st = st;
    t->offset = offset;
    t->host = st->host ? (uint8_t *)st->host + offset : NULL;
    t->buf = st->buf;
    st->refs++;
    *out = t;
    return PXL_OK;
}

pxl_status pxl_tensor_create(pxl_ctx *ctx, pxl_dtype dtype, int ndim, const int64_t *shape,
                             pxl_tensor **out) {
    static const char fn[] = "pxl_tensor_create";
    PXL_REQUIRE_CTX(ctx);
    if (!out) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: out is NULL", fn);
    int64_t nelem;
    size_t bytes;
    pxl_status s = check_shape(ctx, fn, dtype, ndim, shape, &nelem, &bytes);
    if (s != PXL_OK) return s;
    pxl_storage *st = pxl_calloc(ctx, 1, sizeof *st);
    if (!st) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    st->bytes = bytes;
    st->owns_host = 1;
    if (pxl_on_gpu(ctx)) {
        s = pxl_buffer_create(ctx, bytes, &st->buf);
    } else {
        st->host = pxl_alloc(ctx, bytes ? bytes : 1);
        if (!st->host) s = pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "%s: out of memory for %zu bytes", fn, bytes);
    }
    if (s == PXL_OK) s = new_tensor(ctx, fn, dtype, ndim, shape, nelem, bytes, st, 0, out);
    if (s != PXL_OK) {
        pxl_buffer_free(st->buf);
        pxl_free(ctx, st->host);
        pxl_free(ctx, st);
    }
    return s;
}

pxl_status pxl_tensor_wrap(pxl_ctx *ctx, pxl_dtype dtype, int ndim, const int64_t *shape,
                           const void *data, size_t bytes, pxl_tensor **out) {
    static const char fn[] = "pxl_tensor_wrap";
    PXL_REQUIRE_CTX(ctx);
    if (!out) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: out is NULL", fn);
    if (!data) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: data is NULL", fn);
    int64_t nelem;
    size_t want;
    pxl_status s = check_shape(ctx, fn, dtype, ndim, shape, &nelem, &want);
    if (s != PXL_OK) return s;
    if (bytes != want)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: %zu bytes given, the shape holds %zu", fn, bytes, want);
    if (pxl_on_gpu(ctx))
        return pxl_fail(ctx, PXL_ERR_UNSUPPORTED,
                        "%s: host memory cannot back a tensor on a GPU context (create one and pxl_tensor_write it)", fn);
    pxl_storage *st = pxl_calloc(ctx, 1, sizeof *st);
    if (!st) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    st->bytes = bytes;
    st->read_only = 1;
    st->host = (void *)(uintptr_t)data; /* never written: read_only is checked by every writer */
    s = new_tensor(ctx, fn, dtype, ndim, shape, nelem, bytes, st, 0, out);
    if (s != PXL_OK) pxl_free(ctx, st);
    return s;
}

pxl_status pxl_tensor_view(pxl_ctx *ctx, pxl_tensor *base, int ndim, const int64_t *shape,
                           size_t byte_offset, pxl_tensor **out) {
    static const char fn[] = "pxl_tensor_view";
    PXL_REQUIRE_CTX(ctx);
    pxl_status s = pxl_check_tensor(ctx, fn, "base", base);
    if (s != PXL_OK) return s;
    if (!out) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: out is NULL", fn);
    int64_t nelem;
    size_t bytes;
    if ((s = check_shape(ctx, fn, base->dtype, ndim, shape, &nelem, &bytes)) != PXL_OK) return s;
    size_t unit = k_dtypes[base->dtype].block_bytes, end;
    if (byte_offset % unit)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: offset %zu is not a multiple of %zu bytes (one %s %s)", fn,
                        byte_offset, unit, pxl_dtype_name(base->dtype), k_dtypes[base->dtype].block > 1 ? "block" : "element");
    if (!pxl_add_size(byte_offset, bytes, &end) || end > base->bytes)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: %zu bytes at offset %zu do not fit the base's %zu bytes", fn,
                        bytes, byte_offset, base->bytes);
    return new_tensor(ctx, fn, base->dtype, ndim, shape, nelem, bytes, base->st, base->offset + byte_offset, out);
}

pxl_status pxl_tensor_reshape(pxl_ctx *ctx, pxl_tensor *t, int ndim, const int64_t *shape, pxl_tensor **out) {
    static const char fn[] = "pxl_tensor_reshape";
    PXL_REQUIRE_CTX(ctx);
    pxl_status s = pxl_check_tensor(ctx, fn, "t", t);
    if (s != PXL_OK) return s;
    int64_t n;
    size_t bytes;
    if ((s = check_shape(ctx, fn, t->dtype, ndim, shape, &n, &bytes)) != PXL_OK) return s;
    if (n != t->nelem)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: the new shape has %lld elements, the tensor %lld", fn,
                        (long long)n, (long long)t->nelem);
    return pxl_tensor_view(ctx, t, ndim, shape, 0, out);
}

pxl_status pxl_tensor_slice(pxl_ctx *ctx, pxl_tensor *t, int64_t start, int64_t count, pxl_tensor **out) {
    PXL_REQUIRE_CTX(ctx);
    pxl_status s = pxl_check_tensor(ctx, "pxl_tensor_slice", "t", t);
    if (s != PXL_OK) return s;
    if (start < 0 || count < 1 || start > t->shape[0] || count > t->shape[0] - start)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_tensor_slice: [%lld, %lld + %lld) is not inside [0, %lld)",
                        (long long)start, (long long)start, (long long)count, (long long)t->shape[0]);
    int64_t shape[PXL_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++) shape[i] = t->shape[i];
    shape[0] = count;
    size_t slab = t->bytes / (size_t)t->shape[0];
    return pxl_tensor_view(ctx, t, t->ndim, shape, (size_t)start * slab, out);
}

void pxl_tensor_free(pxl_tensor *t) {
    if (!t) return;
    pxl_ctx *ctx = t->ctx;
    pxl_storage *st = t->st;
    if (--st->refs == 0) {
        pxl_buffer_free(st->buf);
        if (st->owns_host) pxl_free(ctx, st->host);
        pxl_free(ctx, st);
    }
    pxl_free(ctx, t);
}

pxl_dtype pxl_tensor_dtype(const pxl_tensor *t) { return t ? t->dtype : PXL_F32; }
int pxl_tensor_ndim(const pxl_tensor *t) { return t ? t->ndim : 0; }
int64_t pxl_tensor_dim(const pxl_tensor *t, int i) {
    if (!t) return 0;
    if (i < 0) i += t->ndim;
    return i >= 0 && i < t->ndim ? t->shape[i] : 1;
}
int64_t pxl_tensor_nelem(const pxl_tensor *t) { return t ? t->nelem : 0; }
size_t pxl_tensor_bytes(const pxl_tensor *t) { return t ? t->bytes : 0; }
size_t pxl_tensor_offset(const pxl_tensor *t) { return t ? t->offset : 0; }
int pxl_tensor_is_read_only(const pxl_tensor *t) { return t ? t->st->read_only : 0; }
pxl_buffer *pxl_tensor_buffer(const pxl_tensor *t) { return t ? t->buf : NULL; }

/* GPU transfers are in whole words: the word-aligned range [lo, hi) around
 * the tensor's bytes. When a view's edges are not word-aligned, the edge
 * words are read first, merged and written back whole (the read waits for
 * earlier work, so the order of calls holds). */
static void word_range(const pxl_tensor *t, size_t *lo, size_t *hi) {
    *lo = t->offset / 4 * 4;
    *hi = (t->offset + t->bytes + 3) / 4 * 4;
}

pxl_status pxl_tensor_write(pxl_ctx *ctx, pxl_tensor *t, const void *src, size_t bytes) {
    static const char fn[] = "pxl_tensor_write";
    PXL_REQUIRE_CTX(ctx);
    pxl_status s = pxl_check_tensor(ctx, fn, "t", t);
    if (s != PXL_OK) return s;
    if (!src) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: src is NULL", fn);
    if ((s = pxl_check_output(ctx, fn, "t", t)) != PXL_OK) return s;
    if (bytes != t->bytes)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: %zu bytes given, the tensor holds %zu", fn, bytes, t->bytes);
    if (!t->buf) {
        memcpy(t->host, src, bytes);
        return PXL_OK;
    }
    size_t lo, hi;
    word_range(t, &lo, &hi);
    if (lo == t->offset && hi - lo == bytes) return pxl_buffer_upload(ctx, t->buf, lo, src, bytes);
    uint8_t *w = pxl_alloc(ctx, hi - lo);
    if (!w) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    pxl_download d[2] = {{t->buf, lo, 4, w}, {t->buf, hi - 4, 4, w + (hi - 4 - lo)}};
    s = pxl_buffer_download_many(ctx, d, hi - lo > 4 ? 2 : 1);
    if (s == PXL_OK) {
        memcpy(w + (t->offset - lo), src, bytes);
        s = pxl_buffer_upload(ctx, t->buf, lo, w, hi - lo);
    }
    pxl_free(ctx, w);
    return s;
}

pxl_status pxl_tensor_read(pxl_ctx *ctx, const pxl_tensor *t, void *dst, size_t bytes) {
    static const char fn[] = "pxl_tensor_read";
    PXL_REQUIRE_CTX(ctx);
    pxl_status s = pxl_check_tensor(ctx, fn, "t", t);
    if (s != PXL_OK) return s;
    if (!dst) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: dst is NULL", fn);
    if (bytes != t->bytes)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: %zu bytes asked, the tensor holds %zu", fn, bytes, t->bytes);
    if (!t->buf) {
        memcpy(dst, t->host, bytes);
        return PXL_OK;
    }
    size_t lo, hi;
    word_range(t, &lo, &hi);
    if (lo == t->offset && hi - lo == bytes) return pxl_buffer_download(ctx, t->buf, lo, dst, bytes);
    uint8_t *w = pxl_alloc(ctx, hi - lo);
    if (!w) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    s = pxl_buffer_download(ctx, t->buf, lo, w, hi - lo);
    if (s == PXL_OK) memcpy(dst, w + (t->offset - lo), bytes);
    pxl_free(ctx, w);
    return s;
}

typedef struct {
    uint32_t nwords;   /* destination words to write */
    uint32_t src_off;  /* bytes: where the source starts in its binding */
    uint32_t dst_off;  /* bytes: where the destination starts in its binding */
    uint32_t nbytes;
} copy_params;
_Static_assert(sizeof(copy_params) == 16, "mirrors struct Params in copy.wgsl");

pxl_status pxl_copy(pxl_ctx *ctx, const pxl_tensor *src, pxl_tensor *dst) {
    static const char op[] = "pxl_copy";
    PXL_REQUIRE_CTX(ctx);
    pxl_status s;
    if ((s = pxl_check_tensor(ctx, op, "src", src)) != PXL_OK) return s;
    if ((s = pxl_check_dtype(ctx, op, "dst", dst, src->dtype)) != PXL_OK) return s;
    if ((s = pxl_check_output(ctx, op, "dst", dst)) != PXL_OK) return s;
    if (src->nelem != dst->nelem || src->bytes != dst->bytes)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: src has %lld elements, dst %lld", op, (long long)src->nelem,
                        (long long)dst->nelem);
    if ((s = pxl_check_overlap(ctx, op, "dst", dst, "src", src, 1)) != PXL_OK) return s;
    if (src->st == dst->st && src->offset == dst->offset) return PXL_OK; /* the same memory */
    if (!pxl_on_gpu(ctx)) {
        memcpy(dst->host, src->host, src->bytes);
        return PXL_OK;
    }
    if (!(src->offset % 4) && !(dst->offset % 4) && !(src->bytes % 4)) {
        pxl_recorder *rec;
        if ((s = pxl_gpu_stream(ctx, &rec)) != PXL_OK) return s;
        return pxl_recorder_copy(rec, src->buf, src->offset, dst->buf, dst->offset, src->bytes);
    }
    /* f16 and block dtypes at 2-byte offsets: a kernel merges the edge words */
    if (src->bytes > UINT32_MAX - 8)
        return pxl_fail(ctx, PXL_ERR_UNSUPPORTED, "%s: %zu bytes off a word boundary is more than the copy kernel moves",
                        op, src->bytes);
    const pxl_tensor *t[2] = {src, dst};
    pxl_op_bindings b;
    if ((s = pxl_op_bind(ctx, op, t, 2, 2u, 0u, &b)) != PXL_OK) return s;
    /* off[] counts elements for f16 and bf16, bytes for blocks */
    size_t unit = src->dtype == PXL_F16 || src->dtype == PXL_BF16 ? 2 : 1;
    uint32_t so = b.off[0] * (uint32_t)unit, dof = b.off[1] * (uint32_t)unit;
    copy_params p = {(uint32_t)((dof + src->bytes + 3) / 4 - dof / 4), so, dof, (uint32_t)src->bytes};
    pxl_constant wg = {"WG", 256};
    return pxl_op_dispatch(ctx, "copy.wgsl", pxl_wgsl_ops_copy, "copy_bytes", &wg, 1, &b, &p, sizeof p,
                           (p.nwords + 255) / 256);
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

/* Shared checks of pxl_quantize / pxl_dequantize. */
static pxl_status check_codec(pxl_ctx *ctx, const char *fn, pxl_dtype t, const void *a, const void *b, int64_t n,
                              size_t bytes) {
    PXL_REQUIRE_CTX(ctx);
    if (!a || !b) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: %s is NULL", fn, !a ? "src" : "dst");
    if (!pxl_dtype_is_quantized(t) && t != PXL_BF16)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: %s is not a block format (or bf16)", fn, pxl_dtype_name(t));
    if (n < 0 || n % pxl_dtype_block(t))
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: %lld elements are not whole %s blocks of %lld", fn, (long long)n,
                        pxl_dtype_name(t), (long long)pxl_dtype_block(t));
    if (pxl_dtype_row_bytes(t, n) != bytes)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: %zu bytes given, %lld %s elements take %zu", fn, bytes,
                        (long long)n, pxl_dtype_name(t), pxl_dtype_row_bytes(t, n));
    return PXL_OK;
}

pxl_status pxl_quantize(pxl_ctx *ctx, pxl_dtype t, const float *src, int64_t n, void *dst, size_t dst_bytes) {
    pxl_status s = check_codec(ctx, "pxl_quantize", t, src, dst, n, dst_bytes);
    if (s != PXL_OK) return s;
    if (t == PXL_Q4_K) pxl_q4k_quantize(src, n, dst);
    else if (t == PXL_Q6_K) pxl_q6k_quantize(src, n, dst);
    else if (t == PXL_Q5_K) pxl_q5k_quantize(src, n, dst);
    else if (t == PXL_Q2_K) pxl_q2k_quantize(src, n, dst);
    else if (t == PXL_Q3_K) pxl_q3k_quantize(src, n, dst);
    else if (t == PXL_Q8_0 || t == PXL_Q4_0) quantize_32(t, src, n, dst);
    else pxl_qx_quantize(t, src, n, dst);
    return PXL_OK;
}

pxl_status pxl_dequantize(pxl_ctx *ctx, pxl_dtype t, const void *src, size_t src_bytes, float *dst, int64_t n) {
    pxl_status s = check_codec(ctx, "pxl_dequantize", t, src, dst, n, src_bytes);
    if (s != PXL_OK) return s;
    if (t == PXL_Q4_K) pxl_q4k_dequantize(src, dst, n);
    else if (t == PXL_Q6_K) pxl_q6k_dequantize(src, dst, n);
    else if (t == PXL_Q5_K) pxl_q5k_dequantize(src, dst, n);
    else if (t == PXL_Q2_K) pxl_q2k_dequantize(src, dst, n);
    else if (t == PXL_Q3_K) pxl_q3k_dequantize(src, dst, n);
    else if (t == PXL_Q8_0 || t == PXL_Q4_0) dequantize_32(t, src, dst, n);
    else pxl_qx_dequantize(t, src, dst, n);
    return PXL_OK;
}

/* ---- checks -------------------------------------------------------------------------- */

pxl_status pxl_check_tensor(pxl_ctx *ctx, const char *op, const char *name, const pxl_tensor *t) {
    if (!t) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: %s is NULL", op, name);
    if (t->ctx != ctx) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: %s belongs to another context", op, name);
    return PXL_OK;
}

pxl_status pxl_check_dtype(pxl_ctx *ctx, const char *op, const char *name, const pxl_tensor *t,
                           pxl_dtype want) {
    pxl_status s = pxl_check_tensor(ctx, op, name, t);
    if (s != PXL_OK) return s;
    if (t->dtype != want)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: %s is %s, expected %s", op, name,
                        pxl_dtype_name(t->dtype), pxl_dtype_name(want));
    return PXL_OK;
}

pxl_status pxl_check_output(pxl_ctx *ctx, const char *op, const char *name, const pxl_tensor *y) {
    if (y->st->read_only)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: %s is read-only (pxl_tensor_wrap)", op, name);
    return PXL_OK;
}

int pxl_tensors_overlap(const pxl_tensor *a, const pxl_tensor *b) {
    return a->st == b->st && a->offset < b->offset + b->bytes && b->offset < a->offset + a->bytes;
}

pxl_status pxl_check_overlap(pxl_ctx *ctx, const char *op, const char *yn, const pxl_tensor *y,
                             const char *xn, const pxl_tensor *x, int in_place) {
    if (!x || !pxl_tensors_overlap(x, y)) return PXL_OK;
    if (in_place && x->offset == y->offset && x->bytes == y->bytes) return PXL_OK;
    return pxl_fail(ctx, PXL_ERR_INVALID_ARG, in_place ? "%s: %s overlaps %s without being exactly it (in place)"
                                                       : "%s: %s overlaps %s (it may not be an input)",
                    op, yn, xn);
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

/* ---- dispatch ---------------------------------------------------------------------- */

/* Alignment of bound offsets: the device's, and at least 16 bytes so that
 * vec4 arrays start on a vec4. A power of two (WebGPU requires it of the
 * device limit; src/gpu/device.c refuses an adapter that breaks it), so the
 * offset arithmetic below is masks and shifts: this runs for every tensor
 * of every op call. */
static size_t bind_align(pxl_ctx *ctx) {
    size_t a = pxl_gpu_get_info(ctx)->min_storage_offset_alignment;
    return a < 16 ? 16 : a;
}

/* off[] units as a shift: elements of 4 or 2 bytes, or bytes for the block formats. */
static unsigned off_shift(pxl_dtype t) {
    return t == PXL_F32 ? 2u : t == PXL_F16 || t == PXL_BF16 ? 1u : pxl_dtype_is_quantized(t) ? 0u : 2u;
}

pxl_op_bindings pxl_op_bias_binding(const pxl_op_bindings *b) {
    pxl_op_bindings r = *b;
    if (r.n == 4) {
        r.b[4] = r.b[0];
        r.b[4].binding = 5;
        r.n = 5;
    }
    return r;
}

uint32_t pxl_op_offset(pxl_ctx *ctx, const pxl_tensor *t) {
    return (uint32_t)((t->offset & (bind_align(ctx) - 1)) >> off_shift(t->dtype));
}

static size_t round16(size_t n) { return (n + 15) / 16 * 16; }

/* An input's binding PXL_BUFFER_TAIL bytes further, where its buffer has
 * them (pxl_buffer_create) and the binding limit allows: a kernel's read of
 * the word after the input's last byte then stays inside the binding (its
 * value is never used). Outputs keep their exact ranges, which must not
 * overlap. */
static void bind_tail(const pxl_gpu_info *gi, pxl_binding *b) {
    size_t size = pxl_buffer_size(b->buffer);
    uint64_t rounded = size ? round16(size) : 16; /* pxl_buffer_create's rounding, before the tail */
    if (rounded + PXL_BUFFER_TAIL > gi->max_buffer_size) return; /* the buffer has no tail */
    if (b->size + PXL_BUFFER_TAIL > gi->max_storage_binding_size) return;
    b->size += PXL_BUFFER_TAIL;
}

pxl_status pxl_op_bind(pxl_ctx *ctx, const char *op, const pxl_tensor *const *tensors, size_t n,
                       uint32_t writes, uint32_t vec4, pxl_op_bindings *out) {
    if (n > PXL_OP_MAX_TENSORS) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: too many tensors", op);
    const pxl_gpu_info *gi = pxl_gpu_get_info(ctx);
    size_t align = gi->min_storage_offset_alignment < 16 ? 16 : gi->min_storage_offset_alignment;
    uint64_t max_binding = gi->max_storage_binding_size;
    pxl_status s;
    out->n = n;
    for (size_t i = 0; i < n; i++) {
        const pxl_tensor *t = tensors[i];
        if (round16((t->offset & (align - 1)) + t->bytes) > max_binding)
            return pxl_fail(ctx, PXL_ERR_UNSUPPORTED,
                            "%s: a tensor of %zu bytes exceeds the device's storage binding limit (%llu)", op,
                            t->bytes, (unsigned long long)max_binding);
        size_t base = t->offset & ~(align - 1), rem = t->offset - base;
        out->b[i] = (pxl_binding){(uint32_t)i, t->buf, base, round16(rem + t->bytes)};
        out->off[i] = (uint32_t)(rem >> off_shift(t->dtype));
        if (!(writes >> i & 1u)) bind_tail(gi, &out->b[i]);
    }
    for (size_t i = 0; i < n; i++) { /* outputs against outputs */
        if (!(writes >> i & 1u)) continue;
        for (size_t j = i + 1; j < n; j++) {
            if (!(writes >> j & 1u) || out->b[i].buffer != out->b[j].buffer) continue;
            if (out->b[i].offset < out->b[j].offset + out->b[j].size && out->b[j].offset < out->b[i].offset + out->b[i].size)
                return pxl_fail(ctx, PXL_ERR_UNSUPPORTED,
                                "%s: two outputs are views closer than %zu bytes in one buffer (the device binds at that alignment)",
                                op, align);
        }
    }
    pxl_recorder *rec = NULL;
    for (size_t i = 0; i < n; i++) {
        if (writes >> i & 1u) continue;
        const pxl_tensor *t = tensors[i];
        int stage = (vec4 >> i & 1u) && (t->offset % 16) != 0;
        for (size_t j = 0; j < n && !stage; j++) /* WebGPU: a written buffer has no other use in a dispatch */
            stage = (writes >> j & 1u) && out->b[i].buffer == out->b[j].buffer;
        if (!stage) continue;
        /* copy the word-aligned range around the tensor to scratch memory */
        size_t lo = t->offset / 4 * 4, rem = t->offset - lo, size = (rem + t->bytes + 3) / 4 * 4;
        pxl_buffer *scratch;
        if (!rec && (s = pxl_gpu_stream(ctx, &rec)) != PXL_OK) return s;
        if ((s = pxl_recorder_scratch(rec, round16(size), &scratch)) != PXL_OK) return s;
        if ((s = pxl_recorder_copy(rec, t->buf, lo, scratch, 0, size)) != PXL_OK) return s;
        out->b[i] = (pxl_binding){(uint32_t)i, scratch, 0, round16(size)};
        out->off[i] = (uint32_t)(rem >> off_shift(t->dtype));
        bind_tail(gi, &out->b[i]);
    }
    return PXL_OK;
}

pxl_status pxl_op_dispatch3(pxl_ctx *ctx, const char *label, const char *wgsl, const char *entry,
                            const pxl_constant *constants, size_t n_constants, const pxl_op_bindings *b,
                            const void *params, size_t params_size, uint32_t gx, uint32_t gy, uint32_t gz) {
    pxl_kernel *k;
    pxl_status s = pxl_kernel_get_static(ctx, label, wgsl, entry, constants, n_constants, &k);
    if (s != PXL_OK) return s;
    pxl_recorder *rec;
    s = pxl_gpu_stream(ctx, &rec);
    if (s != PXL_OK) return s;
    pxl_dispatch d = {k, b->b, b->n, params, params_size, (uint32_t)b->n, {gx, gy, gz}};
    return pxl_recorder_dispatch(rec, &d);
}

pxl_status pxl_op_dispatch(pxl_ctx *ctx, const char *label, const char *wgsl, const char *entry,
                           const pxl_constant *constants, size_t n_constants, const pxl_op_bindings *b,
                           const void *params, size_t params_size, uint64_t groups) {
    uint32_t g[2] = {0, 0};
    pxl_status s = pxl_op_grid(ctx, label, groups, g);
    if (s != PXL_OK) return s;
    return pxl_op_dispatch3(ctx, label, wgsl, entry, constants, n_constants, b, params, params_size, g[0], g[1], 1);
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
