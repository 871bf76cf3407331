/* vkstats_layer.c: a Vulkan layer that prints what the driver made of every
 * compute pipeline: its register count, local (spill) memory, shared memory
 * and whatever else the driver reports through
 * VK_KHR_pipeline_executable_properties. WebGPU does not show these; this
 * layer sits under Dawn (or any Vulkan program, llama.cpp's Vulkan backend
 * included) without changing it.
 *
 * Build and use: bench/vkstats/build.sh DIR, then run the program with
 *   VK_LAYER_PATH=DIR VK_INSTANCE_LAYERS=VK_LAYER_PXL_vkstats
 * Each pipeline prints one line to stderr:
 *   vkstats: pipeline N module M (W words, hash H) entry E: stat=value ...
 * With VKSTATS_DIR set, each shader module's SPIR-V is also written there as
 * M.spv (disassemble with spirv-dis).
 *
 * How it works: vkCreateDevice adds the extension and its feature
 * (pipelineExecutableInfo) when the device offers them; vkCreateShaderModule
 * numbers and hashes the modules; vkCreateComputePipelines asks for the
 * statistics (VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR) and prints
 * them. Everything else passes through. One instance and one device at a
 * time are assumed (a tool, not a product): the dispatch pointers are kept
 * in file-scope variables. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vulkan/vk_layer.h>
#include <vulkan/vulkan.h>

#define EXPORT __attribute__((visibility("default")))

static PFN_vkGetInstanceProcAddr next_gipa;
static PFN_vkGetDeviceProcAddr next_gdpa;
static PFN_vkCreateDevice next_create_device;
static PFN_vkCreateShaderModule next_create_module;
static PFN_vkCreateComputePipelines next_create_compute;
static PFN_vkGetPipelineExecutablePropertiesKHR get_exec_props;
static PFN_vkGetPipelineExecutableStatisticsKHR get_exec_stats;
static PFN_vkEnumerateDeviceExtensionProperties enum_dev_ext;
static int have_stats;

/* modules by handle, in creation order */
typedef struct {
    VkShaderModule h;
    uint64_t hash;
    size_t words;
} module_rec;
static module_rec modules[4096];
static int n_modules;
static int n_pipelines;

static uint64_t fnv1a(const uint32_t *w, size_t n) {
    uint64_t h = 1469598103934665603ull;
    const unsigned char *b = (const unsigned char *)w;
    for (size_t i = 0; i < n * 4; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static VKAPI_ATTR VkResult VKAPI_CALL layer_CreateInstance(const VkInstanceCreateInfo *ci,
                                                           const VkAllocationCallbacks *alloc,
                                                           VkInstance *inst) {
    VkLayerInstanceCreateInfo *lci = (VkLayerInstanceCreateInfo *)ci->pNext;
    while (lci && !(lci->sType == VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO && lci->function == VK_LAYER_LINK_INFO))
        lci = (VkLayerInstanceCreateInfo *)lci->pNext;
    if (!lci) return VK_ERROR_INITIALIZATION_FAILED;
    next_gipa = lci->u.pLayerInfo->pfnNextGetInstanceProcAddr;
    lci->u.pLayerInfo = lci->u.pLayerInfo->pNext;
    PFN_vkCreateInstance create = (PFN_vkCreateInstance)next_gipa(VK_NULL_HANDLE, "vkCreateInstance");
    VkResult r = create(ci, alloc, inst);
    if (r == VK_SUCCESS) {
        next_create_device = (PFN_vkCreateDevice)next_gipa(*inst, "vkCreateDevice");
        enum_dev_ext =
            (PFN_vkEnumerateDeviceExtensionProperties)next_gipa(*inst, "vkEnumerateDeviceExtensionProperties");
        fprintf(stderr, "vkstats: layer active\n");
    }
    return r;
}

static int device_offers_stats(VkPhysicalDevice pd) {
    uint32_t n = 0;
    if (enum_dev_ext(pd, NULL, &n, NULL) != VK_SUCCESS || n == 0) return 0;
    VkExtensionProperties *e = calloc(n, sizeof *e);
    if (!e) return 0;
    int found = 0;
    if (enum_dev_ext(pd, NULL, &n, e) == VK_SUCCESS)
        for (uint32_t i = 0; i < n; i++)
            if (!strcmp(e[i].extensionName, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME)) found = 1;
    free(e);
    return found;
}

static VKAPI_ATTR VkResult VKAPI_CALL layer_CreateDevice(VkPhysicalDevice pd, const VkDeviceCreateInfo *ci,
                                                         const VkAllocationCallbacks *alloc, VkDevice *dev) {
    VkLayerDeviceCreateInfo *lci = (VkLayerDeviceCreateInfo *)ci->pNext;
    while (lci && !(lci->sType == VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO && lci->function == VK_LAYER_LINK_INFO))
        lci = (VkLayerDeviceCreateInfo *)lci->pNext;
    if (!lci) return VK_ERROR_INITIALIZATION_FAILED;
    next_gdpa = lci->u.pLayerInfo->pfnNextGetDeviceProcAddr;
    lci->u.pLayerInfo = lci->u.pLayerInfo->pNext;

    VkDeviceCreateInfo c = *ci;
    const char **names = NULL;
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR feat = {
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR, NULL, VK_TRUE};
    int add = device_offers_stats(pd);
    if (add) {
        names = calloc(ci->enabledExtensionCount + 1u, sizeof *names);
        if (!names) return VK_ERROR_OUT_OF_HOST_MEMORY;
        int present = 0;
        for (uint32_t i = 0; i < ci->enabledExtensionCount; i++) {
            names[i] = ci->ppEnabledExtensionNames[i];
            if (!strcmp(names[i], VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME)) present = 1;
        }
        c.enabledExtensionCount = ci->enabledExtensionCount;
        if (!present) names[c.enabledExtensionCount++] = VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;
        c.ppEnabledExtensionNames = names;
        feat.pNext = (void *)c.pNext;
        c.pNext = &feat;
    }
    VkResult r = next_create_device(pd, &c, alloc, dev);
    free(names);
    if (r != VK_SUCCESS) return r;
    have_stats = add;
    next_create_module = (PFN_vkCreateShaderModule)next_gdpa(*dev, "vkCreateShaderModule");
    next_create_compute = (PFN_vkCreateComputePipelines)next_gdpa(*dev, "vkCreateComputePipelines");
    get_exec_props = (PFN_vkGetPipelineExecutablePropertiesKHR)next_gdpa(*dev, "vkGetPipelineExecutablePropertiesKHR");
    get_exec_stats = (PFN_vkGetPipelineExecutableStatisticsKHR)next_gdpa(*dev, "vkGetPipelineExecutableStatisticsKHR");
    if (!get_exec_props || !get_exec_stats) have_stats = 0;
    fprintf(stderr, "vkstats: device created, statistics %s\n", have_stats ? "on" : "not offered");
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL layer_CreateShaderModule(VkDevice dev, const VkShaderModuleCreateInfo *ci,
                                                               const VkAllocationCallbacks *alloc,
                                                               VkShaderModule *mod) {
    VkResult r = next_create_module(dev, ci, alloc, mod);
    if (r == VK_SUCCESS && n_modules < (int)(sizeof modules / sizeof modules[0])) {
        module_rec *m = &modules[n_modules];
        m->h = *mod;
        m->words = ci->codeSize / 4;
        m->hash = fnv1a(ci->pCode, m->words);
        const char *dir = getenv("VKSTATS_DIR");
        if (dir) {
            char path[1024];
            snprintf(path, sizeof path, "%s/%d.spv", dir, n_modules);
            FILE *f = fopen(path, "wb");
            if (f) {
                if (fwrite(ci->pCode, 1, ci->codeSize, f) != ci->codeSize) fprintf(stderr, "vkstats: short write %s\n", path);
                fclose(f);
            }
        }
        n_modules++;
    }
    return r;
}

static void print_stats(VkDevice dev, VkPipeline pl, const VkComputePipelineCreateInfo *ci) {
    int mi = -1;
    for (int i = n_modules - 1; i >= 0; i--)
        if (modules[i].h == ci->stage.module) {
            mi = i;
            break;
        }
    fprintf(stderr, "vkstats: pipeline %d module %d (%zu words, hash %016" PRIx64 ") entry %s:", n_pipelines, mi,
            mi >= 0 ? modules[mi].words : 0, mi >= 0 ? modules[mi].hash : 0, ci->stage.pName);
    VkPipelineInfoKHR pi = {VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR, NULL, pl};
    uint32_t ne = 0;
    if (get_exec_props(dev, &pi, &ne, NULL) != VK_SUCCESS) ne = 0;
    VkPipelineExecutablePropertiesKHR props[4];
    if (ne > 4) ne = 4;
    for (uint32_t i = 0; i < ne; i++) props[i] = (VkPipelineExecutablePropertiesKHR){
        VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR, NULL, 0, {0}, {0}, 0};
    if (ne && get_exec_props(dev, &pi, &ne, props) != VK_SUCCESS) ne = 0;
    for (uint32_t e = 0; e < ne; e++) {
        fprintf(stderr, " [%s subgroup %u]", props[e].name, props[e].subgroupSize);
        VkPipelineExecutableInfoKHR ei = {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR, NULL, pl, e};
        uint32_t ns = 0;
        if (get_exec_stats(dev, &ei, &ns, NULL) != VK_SUCCESS || ns == 0) continue;
        VkPipelineExecutableStatisticKHR *st = calloc(ns, sizeof *st);
        if (!st) continue;
        for (uint32_t s = 0; s < ns; s++) st[s].sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR;
        if (get_exec_stats(dev, &ei, &ns, st) == VK_SUCCESS) {
            for (uint32_t s = 0; s < ns; s++) {
                fprintf(stderr, " %s=", st[s].name);
                switch (st[s].format) {
                case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: fprintf(stderr, "%u", st[s].value.b32); break;
                case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: fprintf(stderr, "%" PRId64, st[s].value.i64); break;
                case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: fprintf(stderr, "%" PRIu64, st[s].value.u64); break;
                case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR: fprintf(stderr, "%g", st[s].value.f64); break;
                default: fprintf(stderr, "?"); break;
                }
            }
        }
        free(st);
    }
    fprintf(stderr, "\n");
}

static VKAPI_ATTR VkResult VKAPI_CALL layer_CreateComputePipelines(VkDevice dev, VkPipelineCache cache, uint32_t n,
                                                                   const VkComputePipelineCreateInfo *cis,
                                                                   const VkAllocationCallbacks *alloc,
                                                                   VkPipeline *out) {
    if (!have_stats) return next_create_compute(dev, cache, n, cis, alloc, out);
    VkComputePipelineCreateInfo *c = calloc(n ? n : 1, sizeof *c);
    if (!c) return VK_ERROR_OUT_OF_HOST_MEMORY;
    for (uint32_t i = 0; i < n; i++) {
        c[i] = cis[i];
        c[i].flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
    }
    VkResult r = next_create_compute(dev, cache, n, c, alloc, out);
    if (r == VK_SUCCESS)
        for (uint32_t i = 0; i < n; i++) {
            print_stats(dev, out[i], &c[i]);
            n_pipelines++;
        }
    free(c);
    return r;
}

EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL vkstats_GetDeviceProcAddr(VkDevice dev, const char *name) {
    if (!strcmp(name, "vkGetDeviceProcAddr")) return (PFN_vkVoidFunction)vkstats_GetDeviceProcAddr;
    if (!strcmp(name, "vkCreateShaderModule")) return (PFN_vkVoidFunction)layer_CreateShaderModule;
    if (!strcmp(name, "vkCreateComputePipelines")) return (PFN_vkVoidFunction)layer_CreateComputePipelines;
    return next_gdpa ? next_gdpa(dev, name) : NULL;
}

EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL vkstats_GetInstanceProcAddr(VkInstance inst, const char *name) {
    if (!strcmp(name, "vkGetInstanceProcAddr")) return (PFN_vkVoidFunction)vkstats_GetInstanceProcAddr;
    if (!strcmp(name, "vkCreateInstance")) return (PFN_vkVoidFunction)layer_CreateInstance;
    if (!strcmp(name, "vkCreateDevice")) return (PFN_vkVoidFunction)layer_CreateDevice;
    if (!strcmp(name, "vkGetDeviceProcAddr")) return (PFN_vkVoidFunction)vkstats_GetDeviceProcAddr;
    if (!strcmp(name, "vkCreateShaderModule")) return (PFN_vkVoidFunction)layer_CreateShaderModule;
    if (!strcmp(name, "vkCreateComputePipelines")) return (PFN_vkVoidFunction)layer_CreateComputePipelines;
    return next_gipa ? next_gipa(inst, name) : NULL;
}

EXPORT VKAPI_ATTR VkResult VKAPI_CALL vkNegotiateLoaderLayerInterfaceVersion(VkNegotiateLayerInterface *v) {
    if (v->loaderLayerInterfaceVersion > 2) v->loaderLayerInterfaceVersion = 2;
    v->pfnGetInstanceProcAddr = vkstats_GetInstanceProcAddr;
    v->pfnGetDeviceProcAddr = vkstats_GetDeviceProcAddr;
    v->pfnGetPhysicalDeviceProcAddr = NULL;
    return VK_SUCCESS;
}
