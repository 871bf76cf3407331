/* pxl info: what pxl found: the WebGPU library, the adapter, its features and limits. */
#include "cli.h"
#include "pxl/gpu.h"

#include <string.h>

typedef struct {
    cli_common c;
} info_opts;

#define INFO_OPTS(o) {CLI_COMMON_OPTS(&(o)->c)}

static const char *k_usage = "pxl info [--backend auto|gpu|cpu] [--json]";
static const char *k_about =
    "Reports whether the WebGPU library was found (and why not), the adapter's name,\n"
    "backend and feature level, its features by name, and its key limits.\n"
    "Exits 0 when it falls back to the CPU; non-zero only if --backend gpu cannot be met.";

static int parse(int argc, char **argv, info_opts *o) {
    memset(o, 0, sizeof *o);
    cli_opt opts[] = INFO_OPTS(o);
    const char *pos[1];
    int n = cli_parse_command("pxl info", k_usage, k_about, argc - 1, argv + 1, opts, sizeof opts / sizeof opts[0],
                              pos, 0, &o->c.help);
    return n == CLI_HELP_SHOWN ? 1 : n < 0 ? 2 : 0;
}

int cmd_info_parse(int argc, char **argv) {
    info_opts o;
    return parse(argc, argv, &o);
}

static void print_text(pxl_ctx *ctx) {
    printf("pxl %s\n", PXL_VERSION_STRING);
    const pxl_gpu_info *g = pxl_gpu_get_info(ctx);
    if (!g) {
        printf("backend:        cpu (%d threads)\n", pxl_ctx_threads(ctx));
        printf("gpu:            %s\n", cli_no_gpu_reason(ctx));
        return;
    }
    printf("backend:        gpu\n");
    printf("webgpu library: %s\n", g->library_path);
    printf("adapter:        %s\n", g->adapter_name);
    if (g->description[0]) printf("driver:         %s\n", g->description);
    printf("api:            %s, %s feature level, %s\n", g->backend, g->feature_level, g->adapter_type);
    printf("vendor/device:  0x%04x / 0x%04x\n", g->vendor_id, g->device_id);
    printf("subgroup size:  %u..%u\n", g->subgroup_min_size, g->subgroup_max_size);
    if (g->device_memory_bytes)
        printf("device memory:  %.1f GiB (%llu bytes, device-local heaps)\n",
               (double)g->device_memory_bytes / (1024.0 * 1024.0 * 1024.0), (unsigned long long)g->device_memory_bytes);
    else printf("device memory:  unknown (the adapter reports no memory heaps)\n");
    printf("pipeline cache: %s\n", g->cache_dir ? g->cache_dir : "off");
    printf("bounds checks:  %s\n", g->unchecked ? "off"
                                                  : "on (Dawn's robustness; the GGUF commands and pxl bench run "
                                                    "without them unless --gpu-checks)");
    printf("features:      ");
    for (size_t i = 0; i < g->feature_count; i++) {
        const char *n = pxl_gpu_feature_name(g->features[i]);
        if (n) printf(" %s", n);
        else printf(" 0x%x", g->features[i]);
    }
    printf("\n");
    static const char *ct[] = {"?", "f32", "f16", "u32", "i32", "u8", "i8"};
    for (size_t i = 0; i < g->matrix_config_count; i++) {
        const pxl_gpu_matrix_config *m = &g->matrix_configs[i];
        printf("%s %s x %s -> %s, %ux%ux%u\n", i ? "               " : "subgroup matrix:", ct[m->component < 7 ? m->component : 0],
               ct[m->component < 7 ? m->component : 0], ct[m->result < 7 ? m->result : 0], m->m, m->n, m->k);
    }
    printf("limits:\n");
    printf("  max buffer size              %llu\n", (unsigned long long)g->max_buffer_size);
    printf("  max storage binding size     %llu\n", (unsigned long long)g->max_storage_binding_size);
    printf("  max storage buffers / stage  %u\n", g->max_storage_buffers_per_stage);
    printf("  max workgroup storage        %u\n", g->max_workgroup_storage_size);
    printf("  max invocations / workgroup  %u\n", g->max_invocations_per_workgroup);
    printf("  max workgroup size           %u x %u x %u\n", g->max_workgroup_size[0],
           g->max_workgroup_size[1], g->max_workgroup_size[2]);
    printf("  max workgroups / dimension   %u\n", g->max_workgroups_per_dimension);
    printf("  storage offset alignment     %u\n", g->min_storage_offset_alignment);
    printf("  max uniform binding size     %llu\n", (unsigned long long)g->max_uniform_binding_size);
    printf("cpu threads:    %d\n", pxl_ctx_threads(ctx));
}

static void print_json(pxl_ctx *ctx) {
    const pxl_gpu_info *g = pxl_gpu_get_info(ctx);
    printf("{\"version\":");
    cli_json_string(stdout, PXL_VERSION_STRING);
    printf(",\"backend\":\"%s\",\"cpu_threads\":%d", g ? "gpu" : "cpu", pxl_ctx_threads(ctx));
    if (!g) {
        printf(",\"gpu\":null,\"gpu_unavailable_reason\":");
        cli_json_string(stdout, cli_no_gpu_reason(ctx));
        printf("}\n");
        return;
    }
    printf(",\"gpu\":{\"library\":");
    cli_json_string(stdout, g->library_path);
    printf(",\"adapter\":");
    cli_json_string(stdout, g->adapter_name);
    printf(",\"driver\":");
    cli_json_string(stdout, g->description);
    printf(",\"api\":");
    cli_json_string(stdout, g->backend);
    printf(",\"feature_level\":\"%s\",\"adapter_type\":\"%s\",\"vendor_id\":%u,\"device_id\":%u",
           g->feature_level, g->adapter_type, g->vendor_id, g->device_id);
    printf(",\"subgroup_min_size\":%u,\"subgroup_max_size\":%u", g->subgroup_min_size,
           g->subgroup_max_size);
    if (g->device_memory_bytes) printf(",\"device_memory_bytes\":%llu", (unsigned long long)g->device_memory_bytes);
    else printf(",\"device_memory_bytes\":null");
    printf(",\"pipeline_cache\":");
    if (g->cache_dir) cli_json_string(stdout, g->cache_dir);
    else printf("null");
    printf(",\"bounds_checks\":%s", g->unchecked ? "false" : "true");
    printf(",\"features\":[");
    for (size_t i = 0; i < g->feature_count; i++) {
        const char *n = pxl_gpu_feature_name(g->features[i]);
        char hex[16];
        snprintf(hex, sizeof hex, "0x%x", g->features[i]);
        printf("%s", i ? "," : "");
        cli_json_string(stdout, n ? n : hex);
    }
    printf("],\"limits\":{\"max_buffer_size\":%llu,\"max_storage_binding_size\":%llu,"
           "\"max_storage_buffers_per_stage\":%u,\"max_workgroup_storage_size\":%u,"
           "\"max_invocations_per_workgroup\":%u,\"max_workgroup_size\":[%u,%u,%u],"
           "\"max_workgroups_per_dimension\":%u,\"min_storage_offset_alignment\":%u,"
           "\"max_uniform_binding_size\":%llu}}}\n",
           (unsigned long long)g->max_buffer_size, (unsigned long long)g->max_storage_binding_size,
           g->max_storage_buffers_per_stage, g->max_workgroup_storage_size,
           g->max_invocations_per_workgroup, g->max_workgroup_size[0], g->max_workgroup_size[1],
           g->max_workgroup_size[2], g->max_workgroups_per_dimension,
           g->min_storage_offset_alignment, (unsigned long long)g->max_uniform_binding_size);
}

int cmd_info(int argc, char **argv) {
    info_opts o;
    int p = parse(argc, argv, &o);
    if (p) return p == 1 ? 0 : 2;
    pxl_ctx *ctx;
    if (cli_open_ctx(&o.c, &ctx)) return 1;
    if (o.c.json) print_json(ctx);
    else print_text(ctx);
    pxl_ctx_free(ctx);
    return 0;
}
