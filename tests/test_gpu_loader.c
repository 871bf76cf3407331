/* gpu/ loader and adapter choice: works without any adapter. */
#include "check.h"
#include "gpu/adapter_plan.h"
#include "pxl/gpu.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static pxl_status open_with(pxl_backend b, const char *lib, pxl_ctx **ctx) {
    pxl_ctx_options o = pxl_ctx_options_default();
    o.backend = b;
    o.webgpu_library = lib;
    o.quiet = 1;
    return pxl_ctx_create(&o, ctx);
}

static void test_missing_library(void) {
    pxl_ctx *ctx = NULL;
    /* gpu: an error that names the path */
    CHECK(open_with(PXL_BACKEND_GPU, "/nonexistent/libwebgpu.so", &ctx) == PXL_ERR_NO_LIBRARY);
    CHECK(ctx != NULL);
    CHECK_MSG(strstr(pxl_ctx_error(ctx), "/nonexistent/libwebgpu.so") != NULL, "%s", pxl_ctx_error(ctx));
    CHECK(pxl_gpu_get_info(ctx) == NULL);
    pxl_ctx_free(ctx);
    /* auto: CPU, with the reason kept */
    CHECK(open_with(PXL_BACKEND_AUTO, "/nonexistent/libwebgpu.so", &ctx) == PXL_OK);
    CHECK(pxl_ctx_backend(ctx) == PXL_BACKEND_CPU);
    CHECK(strstr(pxl_ctx_gpu_unavailable_reason(ctx), "not found") != NULL);
    CHECK(strcmp(pxl_ctx_error(ctx), "") == 0);
    /* GPU calls on a CPU context fail cleanly */
    pxl_buffer *b = NULL;
    CHECK(pxl_buffer_create(ctx, 16, &b) == PXL_ERR_UNSUPPORTED);
    CHECK(b == NULL);
    pxl_ctx_free(ctx);
    /* a file that is not a shared library */
    CHECK(open_with(PXL_BACKEND_GPU, "/etc/hostname", &ctx) == PXL_ERR_NO_LIBRARY);
    pxl_ctx_free(ctx);
}

/* A FIFO or a directory named as the library fails with the reason, instead
 * of blocking in dlopen (alarm: a hang fails the test). */
static void test_not_a_file(void) {
    char dir[] = "/tmp/pxl-test-loader-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char fifo[128];
    snprintf(fifo, sizeof fifo, "%s/libwebgpu.so", dir);
    CHECK(mkfifo(fifo, 0600) == 0);
    const char *paths[2] = {fifo, dir};
    for (int i = 0; i < 2; i++) {
        pxl_ctx *ctx = NULL;
        alarm(60);
        CHECK(open_with(PXL_BACKEND_GPU, paths[i], &ctx) == PXL_ERR_NO_LIBRARY);
        alarm(0);
        CHECK_MSG(ctx && strstr(pxl_ctx_error(ctx), "not a regular file") != NULL, "%s", ctx ? pxl_ctx_error(ctx) : "");
        pxl_ctx_free(ctx);
    }
    /* the same through PXL_WEBGPU_LIB (skipped with its reason; later
     * candidates may still load) */
    setenv("PXL_WEBGPU_LIB", fifo, 1);
    pxl_ctx *ctx = NULL;
    alarm(60);
    CHECK(open_with(PXL_BACKEND_AUTO, NULL, &ctx) == PXL_OK);
    alarm(0);
    CHECK_MSG(ctx && (pxl_ctx_backend(ctx) == PXL_BACKEND_GPU ||
                      strstr(pxl_ctx_gpu_unavailable_reason(ctx), "not a regular file") != NULL),
              "%s", ctx ? pxl_ctx_gpu_unavailable_reason(ctx) : "");
    pxl_ctx_free(ctx);
    unsetenv("PXL_WEBGPU_LIB");
    unlink(fifo);
    CHECK(rmdir(dir) == 0);
}

static void test_missing_symbol(const char *fake) {
    pxl_ctx *ctx = NULL;
    CHECK(open_with(PXL_BACKEND_GPU, fake, &ctx) == PXL_ERR_NO_LIBRARY);
    CHECK_MSG(strstr(pxl_ctx_error(ctx), "lacks the symbol wgpu") != NULL, "%s", pxl_ctx_error(ctx));
    pxl_ctx_free(ctx);
}

static void test_adapter_plan(void) {
    size_t n;
    const pxl_adapter_attempt *p = pxl_gpu_adapter_plan(&n);
    CHECK(n == 2);
    /* the default backend at core level first, then OpenGL ES at compatibility level */
    CHECK(p[0].backend == WGPUBackendType_Undefined && p[0].level == WGPUFeatureLevel_Core);
    CHECK(p[1].backend == WGPUBackendType_OpenGLES && p[1].level == WGPUFeatureLevel_Compatibility);
}

static void test_cpu_never_loads(void) {
    pxl_ctx *ctx = NULL;
    CHECK(open_with(PXL_BACKEND_CPU, "/nonexistent", &ctx) == PXL_OK);
    CHECK(pxl_ctx_backend(ctx) == PXL_BACKEND_CPU);
    CHECK(strcmp(pxl_ctx_gpu_unavailable_reason(ctx), "") == 0);
    pxl_ctx_free(ctx);
}

static void test_feature_names(void) {
    /* the pinned Dawn build's numbering */
    CHECK(strcmp(pxl_gpu_feature_name(0x0A), "shader-f16") == 0);
    CHECK(strcmp(pxl_gpu_feature_name(0x11), "subgroups") == 0);
    CHECK(strcmp(pxl_gpu_feature_name(0x03), "timestamp-query") == 0);
    CHECK(pxl_gpu_feature_name(0x7777) == NULL);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_gpu_loader FAKE_LIB\n");
        return 2;
    }
    test_missing_library();
    test_missing_symbol(argv[1]);
    test_not_a_file();
    test_adapter_plan();
    test_cpu_never_loads();
    test_feature_names();
    return test_result("test_gpu_loader");
}
