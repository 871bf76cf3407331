/*
 * pxl_convert: element-wise dtype conversion, f32 <-> f16 and f32 <-> bf16
 * (same dtype on both sides: pxl_copy). Rounding as pxl_f32_to_f16 /
 * pxl_f32_to_bf16 (to nearest even, overflow to Inf, subnormals kept, NaN
 * kept), bit for bit on both backends.
 *
 * CPU: plain loops over pxl_parallel_range. GPU (convert.wgsl): to_half
 * writes one destination word per invocation, merging the outside half of a
 * word at either edge of an f16 / bf16 view that starts or ends mid-word;
 * from_half writes one f32 per invocation.
 */
#include "ops_internal.h"

#include <string.h>

typedef struct {
    uint32_t n, os, od, nwork;
} convert_params;
_Static_assert(sizeof(convert_params) == 16, "mirrors struct Params in convert.wgsl");

typedef struct {
    const void *src;
    void *dst;
    pxl_dtype st, dt;
} convert_job;

static void convert_range(void *arg, int64_t lo, int64_t hi) {
    const convert_job *j = arg;
    if (j->st == PXL_F32) {
        const float *s = j->src;
        uint16_t *d = j->dst;
        if (j->dt == PXL_F16)
            for (int64_t i = lo; i < hi; i++) d[i] = pxl_f32_to_f16(s[i]);
        else
            for (int64_t i = lo; i < hi; i++) d[i] = pxl_f32_to_bf16(s[i]);
    } else {
        const uint16_t *s = j->src;
        float *d = j->dst;
        if (j->st == PXL_F16)
            for (int64_t i = lo; i < hi; i++) d[i] = pxl_f16_to_f32(s[i]);
        else
            for (int64_t i = lo; i < hi; i++) d[i] = pxl_bf16_to_f32(s[i]);
    }
}

static int float_type(pxl_dtype t) { return t == PXL_F32 || t == PXL_F16 || t == PXL_BF16; }

pxl_status pxl_convert(pxl_ctx *ctx, const pxl_tensor *src, pxl_tensor *dst) {
    static const char op[] = "pxl_convert";
    PXL_REQUIRE_CTX(ctx);
    pxl_status s;
    if ((s = pxl_check_tensor(ctx, op, "src", src)) != PXL_OK) return s;
    if ((s = pxl_check_tensor(ctx, op, "dst", dst)) != PXL_OK) return s;
    if (!float_type(src->dtype) || !float_type(dst->dtype) ||
        (src->dtype != dst->dtype && src->dtype != PXL_F32 && dst->dtype != PXL_F32))
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: src %s to dst %s is not a conversion it does (f32 <-> f16, f32 <-> bf16)",
                        op, pxl_dtype_name(src->dtype), pxl_dtype_name(dst->dtype));
    if ((s = pxl_check_output(ctx, op, "dst", dst)) != PXL_OK) return s;
    if (src->nelem != dst->nelem)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: src has %lld elements, dst %lld", op, (long long)src->nelem,
                        (long long)dst->nelem);
    if ((s = pxl_check_overlap(ctx, op, "dst", dst, "src", src, 0)) != PXL_OK) return s;
    if (src->dtype == dst->dtype) return pxl_copy(ctx, src, dst);
    if (src->nelem == 0) return PXL_OK;
    int to_half = src->dtype == PXL_F32;
    if (!pxl_on_gpu(ctx)) {
        convert_job j = {src->host, dst->host, src->dtype, dst->dtype};
        pxl_parallel_range(ctx, src->nelem, 1 << 14, convert_range, &j);
        return PXL_OK;
    }
    if (src->nelem > (int64_t)UINT32_MAX - 8)
        return pxl_fail(ctx, PXL_ERR_UNSUPPORTED, "%s: %lld elements is more than the kernel converts", op,
                        (long long)src->nelem);
    const pxl_tensor *t[2] = {src, dst};
    pxl_op_bindings b;
    if ((s = pxl_op_bind(ctx, op, t, 2, 2u, 0u, &b)) != PXL_OK) return s;
    uint32_t n = (uint32_t)src->nelem, od = b.off[1];
    uint32_t nwork = to_half ? (uint32_t)(((uint64_t)od + n + 1) / 2 - od / 2) : n;
    convert_params p = {n, b.off[0], od, nwork};
    pxl_constant c[2] = {{"WG", 256}, {"BF16", (to_half ? dst->dtype : src->dtype) == PXL_BF16}};
    return pxl_op_dispatch(ctx, "convert.wgsl", pxl_wgsl_ops_convert, to_half ? "to_half" : "from_half", c, 2, &b,
                           &p, sizeof p, (nwork + 255) / 256);
}
