/* A program outside pxl that uses only the installed headers and library:
 * built by .ci/consumer.sh through find_package(pxl), pkg-config and
 * add_subdirectory. A CPU context, a dot product (ops), and a PNG round trip
 * (vm, so libpng must link). Prints "consumer ok" and exits 0 on success. */
#include "pxl/core.h"
#include "pxl/ops.h"
#include "pxl/vm.h"

#include <stdio.h>
#include <string.h>

int main(void) {
    pxl_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = PXL_BACKEND_CPU;
    pxl_ctx *ctx = NULL;
    pxl_status s = pxl_ctx_create(&o, &ctx);
    if (s != PXL_OK) {
        fprintf(stderr, "pxl_ctx_create: %s\n", pxl_status_str(s));
        pxl_ctx_free(ctx);
        return 1;
    }
    float a[4] = {1, 2, 3, 4}, b[4] = {4, 3, 2, 1}, d = 0;
    int ok = pxl_dot(ctx, a, b, 4, &d) == PXL_OK && d == 20.0f;

    pxl_image *img = NULL, *back = NULL;
    uint8_t *png = NULL;
    size_t len = 0;
    ok = ok && pxl_image_create(ctx, 3, 2, &img) == PXL_OK;
    if (img) pxl_image_px(img, 2, 1)[0] = 77;
    ok = ok && pxl_pxi_encode(ctx, img, &png, &len) == PXL_OK;
    ok = ok && pxl_pxi_decode(ctx, png, len, &back) == PXL_OK && pxl_image_px(back, 2, 1)[0] == 77;
    if (!ok) fprintf(stderr, "consumer: %s\n", pxl_ctx_error(ctx));
    pxl_free(ctx, png);
    pxl_image_free(img);
    pxl_image_free(back);
    pxl_ctx_free(ctx);
    printf(ok ? "consumer ok\n" : "consumer FAILED\n");
    return ok ? 0 : 1;
}
