/*
 * Probe: can this Dawn build compile and run WGSL subgroup matrices
 * (chromium_experimental_subgroup_matrix) on the adapter, with and without
 * the shader-f16 feature? Prints the adapter's features and matrix
 * configurations, then tries each kernel variant with pxl_kernel_get and
 * prints "compiles" or the compiler's messages. A finding for the LLM speed
 * work (docs/BENCHMARKS.md, "Tensor cores through WebGPU"), not a test.
 * The device requests chromium-experimental-subgroup-matrix wherever the
 * adapter offers it (with the toggle allow_unsafe_apis), so kernels may
 * enable the extension.
 *
 *   cc -std=c11 -Iinclude bench/probe_subgroup_matrix.c build-dev/libpxl.a \
 *      -lpng -lz -lpcre2-8 -lcholmod -lm -ldl -lpthread -o /tmp/probe
 *   /tmp/probe [dawn toggles, default allow_unsafe_apis,use_vulkan_memory_model]
 */
#include "pxl/core.h"
#include "pxl/gpu.h"

#include <stdio.h>
#include <string.h>

typedef struct variant {
    const char *name, *wgsl;
} variant;

static const variant k_variants[] = {
    {"f16 matrices with 'enable f16' (needs shader-f16)",
     "enable f16;\nenable chromium_experimental_subgroup_matrix;\n"
     "@group(0) @binding(0) var<storage, read_write> a: array<f16>;\n"
     "@compute @workgroup_size(32) fn main() {\n"
     "  let l = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&a, 0, false, 16);\n"
     "  let r = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&a, 256, false, 16);\n"
     "  var c = subgroup_matrix_result<f16, 16, 16>();\n"
     "  c = subgroupMatrixMultiplyAccumulate(l, r, c);\n"
     "  subgroupMatrixStore(&a, 512, c, false, 16);\n"
     "}\n"},
    {"an f32 result matrix only, zeroed and stored (no f16 type anywhere)",
     "enable chromium_experimental_subgroup_matrix;\n"
     "@group(0) @binding(0) var<storage, read_write> a: array<f32>;\n"
     "@compute @workgroup_size(32) fn main() {\n"
     "  var c = subgroup_matrix_result<f32, 16, 16>();\n"
     "  subgroupMatrixStore(&a, 0, c, false, 16);\n"
     "}\n"},
    {"f32 operand and result matrices (f32 is not among the offered configurations)",
     "enable chromium_experimental_subgroup_matrix;\n"
     "@group(0) @binding(0) var<storage, read_write> a: array<f32>;\n"
     "@compute @workgroup_size(32) fn main() {\n"
     "  let l = subgroupMatrixLoad<subgroup_matrix_left<f32, 8, 16>>(&a, 0, false, 8);\n"
     "  let r = subgroupMatrixLoad<subgroup_matrix_right<f32, 16, 8>>(&a, 128, false, 16);\n"
     "  var c = subgroup_matrix_result<f32, 16, 16>();\n"
     "  c = subgroupMatrixMultiplyAccumulate(l, r, c);\n"
     "  subgroupMatrixStore(&a, 256, c, false, 16);\n"
     "}\n"},
    {"u8 operand matrices from u32 storage, u32 result (the last: it aborts the process in this build)",
     "enable chromium_experimental_subgroup_matrix;\n"
     "@group(0) @binding(0) var<storage, read_write> a: array<u32>;\n"
     "@compute @workgroup_size(32) fn main() {\n"
     "  let l = subgroupMatrixLoad<subgroup_matrix_left<u8, 8, 8>>(&a, 0, false, 8);\n"
     "  let r = subgroupMatrixLoad<subgroup_matrix_right<u8, 8, 8>>(&a, 16, false, 8);\n"
     "  var c = subgroup_matrix_result<u32, 8, 8>();\n"
     "  c = subgroupMatrixMultiplyAccumulate(l, r, c);\n"
     "  subgroupMatrixStore(&a, 32, c, false, 8);\n"
     "}\n"},
};

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0); /* in order with the driver's messages on stderr */
    pxl_ctx_options o = pxl_ctx_options_default();
    o.backend = PXL_BACKEND_GPU;
    o.dawn_toggles = argc > 1 ? argv[1] : "allow_unsafe_apis,use_vulkan_memory_model";
    o.quiet = 1;
    pxl_ctx *ctx = NULL;
    if (pxl_ctx_create(&o, &ctx) != PXL_OK) {
        printf("no GPU context: %s\n", ctx ? pxl_ctx_error(ctx) : "?");
        pxl_ctx_free(ctx);
        return 1;
    }
    const pxl_gpu_info *gi = pxl_gpu_get_info(ctx);
    printf("adapter: %s (%s), toggles: %s\n", gi->adapter_name, gi->backend, o.dawn_toggles);
    printf("has_f16 %d, has_subgroups %d (sizes %u..%u)\nfeatures:", gi->has_f16, gi->has_subgroups,
           gi->subgroup_min_size, gi->subgroup_max_size);
    for (size_t i = 0; i < gi->feature_count; i++) {
        const char *n = pxl_gpu_feature_name(gi->features[i]);
        if (n) printf(" %s", n);
        else printf(" 0x%x", gi->features[i]);
    }
    printf("\nmatrix configurations: %zu\n", gi->matrix_config_count);
    for (size_t i = 0; i < gi->matrix_config_count; i++) {
        const pxl_gpu_matrix_config *c = &gi->matrix_configs[i];
        printf("  component %u result %u  M %u N %u K %u\n", c->component, c->result, c->m, c->n, c->k);
    }
    for (size_t v = 0; v < sizeof k_variants / sizeof *k_variants; v++) {
        pxl_kernel *k = NULL;
        pxl_status s = pxl_kernel_get(ctx, k_variants[v].name, k_variants[v].wgsl, "main", NULL, 0, &k);
        printf("--- %s: %s\n", k_variants[v].name, s == PXL_OK ? "compiles" : pxl_status_str(s));
        if (s != PXL_OK) printf("%s\n", pxl_ctx_error(ctx));
    }
    pxl_ctx_free(ctx);
    return 0;
}
