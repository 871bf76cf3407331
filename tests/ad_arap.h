/* The ARAP edge residual as a test program (tests/test_ad_gpu.c, test_ad_gpu_solve.c). */
#ifndef PXL_TESTS_AD_ARAP_H
#define PXL_TESTS_AD_ARAP_H

#include "pxl/ad.h"

/*
 * The ARAP edge residual (3 outputs): (p_i - p_j) - R(w) e, R by Rodrigues
 * with a first-order branch at w = 0 (select), e a per-instance input. Slots:
 * p_i 0-2, p_j 3-5, w 6-8; inputs: e 0-2.
 */
static pxl_ad_program *arap_program(pxl_ctx *ctx) {
    pxl_ad_graph *g;
    if (pxl_ad_graph_create(ctx, &g) != PXL_OK) return NULL;
    pxl_ad_value p[3], q[3], w[3], e[3];
    for (int c = 0; c < 3; c++) {
        p[c] = pxl_ad_param(g, c);
        q[c] = pxl_ad_param(g, 3 + c);
        w[c] = pxl_ad_param(g, 6 + c);
        e[c] = pxl_ad_input(g, c);
    }
    pxl_ad_value t2 = pxl_ad_add(g, pxl_ad_add(g, pxl_ad_mul(g, w[0], w[0]), pxl_ad_mul(g, w[1], w[1])),
                                 pxl_ad_mul(g, w[2], w[2]));
    pxl_ad_value th = pxl_ad_sqrt(g, t2);
    pxl_ad_value cs = pxl_ad_cos(g, th), sn = pxl_ad_sin(g, th);
    pxl_ad_value kk[3], kxe[3], wxe[3];
    for (int c = 0; c < 3; c++) kk[c] = pxl_ad_div(g, w[c], th);
    for (int c = 0; c < 3; c++) {
        int a = (c + 1) % 3, b = (c + 2) % 3;
        kxe[c] = pxl_ad_sub(g, pxl_ad_mul(g, kk[a], e[b]), pxl_ad_mul(g, kk[b], e[a]));
        wxe[c] = pxl_ad_sub(g, pxl_ad_mul(g, w[a], e[b]), pxl_ad_mul(g, w[b], e[a]));
    }
    pxl_ad_value kd = pxl_ad_add(g, pxl_ad_add(g, pxl_ad_mul(g, kk[0], e[0]), pxl_ad_mul(g, kk[1], e[1])),
                                 pxl_ad_mul(g, kk[2], e[2]));
    pxl_ad_value one_c = pxl_ad_sub(g, pxl_ad_const(g, 1.0), cs);
    pxl_ad_value big = pxl_ad_gt(g, t2, pxl_ad_const(g, 1e-12));
    for (int c = 0; c < 3; c++) {
        pxl_ad_value rot = pxl_ad_add(g, pxl_ad_add(g, pxl_ad_mul(g, e[c], cs), pxl_ad_mul(g, kxe[c], sn)),
                                      pxl_ad_mul(g, kk[c], pxl_ad_mul(g, kd, one_c)));
        pxl_ad_value lin = pxl_ad_add(g, e[c], wxe[c]);
        pxl_ad_value re = pxl_ad_select(g, big, rot, lin);
        pxl_ad_output(g, pxl_ad_sub(g, pxl_ad_sub(g, p[c], q[c]), re));
    }
    pxl_ad_program *prog = NULL;
    if (pxl_ad_compile(g, &prog) != PXL_OK) prog = NULL;
    pxl_ad_graph_free(g);
    return prog;
}

#endif
