/* One pxl_matmul with B [N, K] stored as GGUF blocks or f16 / bf16 bytes, for
 * the CPU matrix product's tests (test_matmul_q8a.c, test_matmul_rows.c). */
#ifndef PXL_TESTS_TEST_MATMUL_H
#define PXL_TESTS_TEST_MATMUL_H

#include "pxl/ops.h"

#include <stdio.h>

/* c [M, N] = a [M, K] . B^T on ctx, B [N, K] of dtype dt from the bbytes at
 * bq, with pxl_matmul_options.a_q8 = q8; 0 on success (else the context's
 * message is printed). The tensors are made and freed here. */
static inline int test_matmul_bt(pxl_ctx *ctx, pxl_dtype dt, const float *a, const void *bq, size_t bbytes,
                                 int64_t M, int64_t N, int64_t K, int q8, float *c) {
    int64_t sa[2] = {M, K}, sb[2] = {N, K}, sc[2] = {M, N};
    pxl_tensor *ta = NULL, *tb = NULL, *tc = NULL;
    pxl_matmul_options o = {0};
    o.trans_b = 1;
    o.a_q8 = q8;
    int bad = pxl_tensor_create(ctx, PXL_F32, 2, sa, &ta) != PXL_OK || pxl_tensor_create(ctx, dt, 2, sb, &tb) != PXL_OK ||
              pxl_tensor_create(ctx, PXL_F32, 2, sc, &tc) != PXL_OK ||
              pxl_tensor_write(ctx, ta, a, (size_t)(M * K) * sizeof(float)) != PXL_OK ||
              pxl_tensor_write(ctx, tb, bq, bbytes) != PXL_OK || pxl_matmul(ctx, ta, tb, tc, &o) != PXL_OK ||
              pxl_tensor_read(ctx, tc, c, (size_t)(M * N) * sizeof(float)) != PXL_OK;
    if (bad) fprintf(stderr, "matmul: %s\n", pxl_ctx_error(ctx));
    pxl_tensor_free(ta);
    pxl_tensor_free(tb);
    pxl_tensor_free(tc);
    return bad;
}

#endif
