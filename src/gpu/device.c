/*
 * Opening the GPU: instance, adapter choice, device with the adapter's real
 * limits, error callbacks, and the facts pxl_gpu_get_info() reports.
 *
 * Adapter order (pxl_gpu_adapter_plan): the platform's default backend at
 * core feature level, then OpenGL ES at compatibility level. The library
 * does not touch the environment: without a display, EGL needs
 * EGL_PLATFORM=surfaceless, which the CLI sets when unset and the "no
 * adapter" message suggests. Dawn's Null backend is never accepted. If none
 * is usable the context runs on CPU.
 */
#include "gpu_internal.h"
#include "adapter_plan.h"

#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const pxl_adapter_attempt k_plan[] = {
    {WGPUBackendType_Undefined, WGPUFeatureLevel_Core, "default backend, core level"},
    {WGPUBackendType_OpenGLES, WGPUFeatureLevel_Compatibility, "OpenGL ES, compatibility level"},
};

const pxl_adapter_attempt *pxl_gpu_adapter_plan(size_t *n) {
    *n = sizeof k_plan / sizeof k_plan[0];
    return k_plan;
}

static const char *backend_name(WGPUBackendType b) {
    switch (b) {
    case WGPUBackendType_Null: return "Null";
    case WGPUBackendType_WebGPU: return "WebGPU";
    case WGPUBackendType_D3D11: return "D3D11";
    case WGPUBackendType_D3D12: return "D3D12";
    case WGPUBackendType_Metal: return "Metal";
    case WGPUBackendType_Vulkan: return "Vulkan";
    case WGPUBackendType_OpenGL: return "OpenGL";
    case WGPUBackendType_OpenGLES: return "OpenGL ES";
    default: return "unknown";
    }
}

static const char *adapter_type_name(WGPUAdapterType t) {
    switch (t) {
    case WGPUAdapterType_DiscreteGPU: return "discrete GPU";
    case WGPUAdapterType_IntegratedGPU: return "integrated GPU";
    case WGPUAdapterType_CPU: return "CPU";
    default: return "unknown";
    }
}

const char *pxl_gpu_feature_name(uint32_t f) {
    switch (f) {
    /* Dawn's numbering in the pinned build (see webgpu_api.h) */
    case 0x01: return "depth-clip-control";
    case 0x02: return "depth32float-stencil8";
    case 0x03: return "timestamp-query";
    case 0x04: return "texture-compression-bc";
    case 0x05: return "texture-compression-bc-sliced-3d";
    case 0x06: return "texture-compression-etc2";
    case 0x07: return "texture-compression-astc";
    case 0x08: return "texture-compression-astc-sliced-3d";
    case 0x09: return "indirect-first-instance";
    case 0x0A: return "shader-f16";
    case 0x0B: return "rg11b10ufloat-renderable";
    case 0x0C: return "bgra8unorm-storage";
    case 0x0D: return "float32-filterable";
    case 0x0E: return "float32-blendable";
    case 0x0F: return "clip-distances";
    case 0x10: return "dual-source-blending";
    case 0x11: return "subgroups";
    case 0x12: return "core-features-and-limits";
    /* Dawn extensions, numbered for the pinned Dawn build only. */
    case 0x50000: return "dawn-internal-usages";
    case 0x50001: return "dawn-multi-planar-formats";
    case 0x50002: return "dawn-native";
    case 0x50004: return "implicit-device-synchronization";
    case 0x50006: return "transient-attachments";
    case 0x5000c: return "unorm16-texture-formats";
    case 0x5000d: return "snorm16-texture-formats";
    case 0x50015: return "adapter-properties-memory-heaps";
    case 0x50017: return "adapter-properties-vk";
    case 0x50019: return "dawn-format-capabilities";
    case 0x5001b: return "norm16-texture-formats";
    case 0x50036: return "flexible-texture-views";
    case 0x50037: return "chromium-experimental-subgroup-matrix";
    default: return NULL;
    }
}

/* ---- callbacks ------------------------------------------------------------ */

typedef struct {
    WGPURequestAdapterStatus status;
    WGPUAdapter adapter;
    char message[512];
} adapter_result;

static void on_adapter(WGPURequestAdapterStatus status, WGPUAdapter adapter, WGPUStringView msg,
                       void *u1, void *u2) {
    (void)u2;
    adapter_result *r = u1;
    r->status = status;
    r->adapter = adapter;
    snprintf(r->message, sizeof r->message, "%.*s", msg.data ? (int)msg.length : 0,
             msg.data ? msg.data : "");
}

typedef struct {
    WGPURequestDeviceStatus status;
    WGPUDevice device;
    char message[512];
} device_result;

static void on_device(WGPURequestDeviceStatus status, WGPUDevice device, WGPUStringView msg,
                      void *u1, void *u2) {
    (void)u2;
    device_result *r = u1;
    r->status = status;
    r->device = device;
    snprintf(r->message, sizeof r->message, "%.*s", msg.data ? (int)msg.length : 0,
             msg.data ? msg.data : "");
}

static void on_uncaptured(const WGPUDevice *device, WGPUErrorType type, WGPUStringView msg,
                          void *u1, void *u2) {
    (void)device;
    (void)u2;
    pxl_gpu *g = u1;
    const char *kind = type == WGPUErrorType_Validation    ? "validation"
                       : type == WGPUErrorType_OutOfMemory ? "out of memory"
                                                           : "internal";
    pthread_mutex_lock(&g->err_mu);
    if (g->deferred == PXL_OK) { /* keep the first */
        g->deferred = PXL_ERR_GPU;
        snprintf(g->deferred_msg, sizeof g->deferred_msg, "GPU %s error: %.*s", kind,
                 msg.data ? (int)msg.length : 0, msg.data ? msg.data : "");
    }
    pthread_mutex_unlock(&g->err_mu);
}

static void on_lost(const WGPUDevice *device, WGPUDeviceLostReason reason, WGPUStringView msg,
                    void *u1, void *u2) {
    (void)device;
    (void)u2;
    pxl_gpu *g = u1;
    if (atomic_load(&g->closing) || reason == WGPUDeviceLostReason_CallbackCancelled ||
        reason == WGPUDeviceLostReason_Destroyed)
        return;
    pthread_mutex_lock(&g->err_mu);
    g->deferred = PXL_ERR_DEVICE_LOST;
    snprintf(g->deferred_msg, sizeof g->deferred_msg, "GPU device lost (reason %u): %.*s",
             (unsigned)reason, msg.data ? (int)msg.length : 0, msg.data ? msg.data : "");
    atomic_store(&g->lost, 1);
    pthread_mutex_unlock(&g->err_mu);
}

/* ---- waiting and errors ----------------------------------------------------- */

pxl_status pxl_gpu_take_deferred(pxl_gpu *g) {
    pthread_mutex_lock(&g->err_mu);
    pxl_status s = g->deferred;
    if (s != PXL_OK) {
        pxl_fail(g->ctx, s, "%s", g->deferred_msg);
        if (!atomic_load(&g->lost)) {
            g->deferred = PXL_OK;
            g->deferred_msg[0] = '\0';
        }
    }
    pthread_mutex_unlock(&g->err_mu);
    return s;
}

#define PXL_SPIN_NS 5000000ull

pxl_status pxl_gpu_wait(pxl_gpu *g, WGPUFuture f, const char *what) {
    WGPUFutureWaitInfo w = {f, 0};
    uint64_t timeout_ns = (uint64_t)g->ctx->gpu_timeout_ms * 1000000ull;
    double t0 = pxl_time_now();
    /* Polls first, yielding the core between polls, for up to PXL_SPIN_NS (a
     * decoded token's wait is about a millisecond, and a driver's blocking
     * wait wakes tens of microseconds late), then blocks for the rest. The
     * tuning option gpu_spin=0 only blocks. */
    WGPUWaitStatus st = WGPUWaitStatus_TimedOut;
    if (!pxl_ctx_tuning(g->ctx)->gpu_spin_off) {
        double spin = (double)(timeout_ns < PXL_SPIN_NS ? timeout_ns : PXL_SPIN_NS) * 1e-9;
        while ((st = g->fn.InstanceWaitAny(g->instance, 1, &w, 0)) == WGPUWaitStatus_TimedOut &&
               pxl_time_now() - t0 < spin)
            sched_yield();
    }
    if (st == WGPUWaitStatus_TimedOut) {
        uint64_t spent = (uint64_t)((pxl_time_now() - t0) * 1e9);
        st = g->fn.InstanceWaitAny(g->instance, 1, &w, spent < timeout_ns ? timeout_ns - spent : 0);
    }
    g->stats.wait_ns += (uint64_t)((pxl_time_now() - t0) * 1e9);
    if (st == WGPUWaitStatus_TimedOut)
        return pxl_fail(g->ctx, PXL_ERR_TIMEOUT, "%s: GPU did not finish within %u ms", what,
                        (unsigned)g->ctx->gpu_timeout_ms);
    if (st != WGPUWaitStatus_Success || !w.completed)
        return pxl_fail(g->ctx, PXL_ERR_GPU, "%s: waiting on the GPU failed (status %u)", what,
                        (unsigned)st);
    return PXL_OK;
}

typedef struct {
    WGPUPopErrorScopeStatus status;
    WGPUErrorType type;
    char message[PXL_ERR_MAX - 128];
} scope_result;

static void on_pop(WGPUPopErrorScopeStatus status, WGPUErrorType type, WGPUStringView msg,
                   void *u1, void *u2) {
    (void)u2;
    scope_result *r = u1;
    r->status = status;
    r->type = type;
    snprintf(r->message, sizeof r->message, "%.*s", msg.data ? (int)msg.length : 0,
             msg.data ? msg.data : "");
}

void pxl_gpu_push_scopes(pxl_gpu *g) {
    g->fn.DevicePushErrorScope(g->device, WGPUErrorFilter_OutOfMemory);
    g->fn.DevicePushErrorScope(g->device, WGPUErrorFilter_Validation);
}

pxl_status pxl_gpu_pop_scopes(pxl_gpu *g, const char *what) {
    scope_result r[2];
    memset(r, 0, sizeof r);
    pxl_status first = PXL_OK;
    for (int i = 0; i < 2; i++) {
        WGPUPopErrorScopeCallbackInfo cb = {NULL, WGPUCallbackMode_WaitAnyOnly, on_pop, &r[i], NULL};
        WGPUFuture f = g->fn.DevicePopErrorScope(g->device, cb);
        pxl_status s = pxl_gpu_wait(g, f, what);
        if (s != PXL_OK && first == PXL_OK) first = s;
    }
    if (first != PXL_OK) return first;
    for (int i = 0; i < 2; i++) {
        if (r[i].status == PXL_WGPU_SUCCESS && r[i].type != WGPUErrorType_NoError) {
            const char *kind = r[i].type == WGPUErrorType_Validation ? "validation error"
                               : r[i].type == WGPUErrorType_OutOfMemory ? "out of GPU memory"
                                                                       : "error";
            return pxl_fail(g->ctx, PXL_ERR_GPU, "%s: %s: %s", what, kind, r[i].message);
        }
    }
    return pxl_gpu_take_deferred(g);
}

/* ---- Dawn toggles ------------------------------------------------------------- */

/*
 * Toggles chained on both the adapter request and the device descriptor:
 * timestamp_quantization is off (timestamps would be rounded to ~65 us), and
 * with pxl_ctx_options.gpu_unchecked disable_robustness is on (the kernels
 * lose Dawn's bounds clamping). pxl_ctx_options.dawn_toggles, "name,-name,...",
 * enables (or, with '-', disables) more, for experiments such as
 * allow_unsafe_apis (at most 8 names of up to 63 characters).
 */
typedef struct {
    DawnTogglesDescriptor desc;
    const char *on[9], *off[10];
    char names[8][64];
} pxl_toggles;

static void toggles_init(pxl_toggles *t, const pxl_ctx *ctx) {
    memset(t, 0, sizeof *t);
    t->desc.chain.sType = DAWN_SType_TogglesDescriptor;
    size_t n_on = 0, n_off = 0, used = 0;
    const char *env = ctx->dawn_toggles;
    t->off[n_off++] = "timestamp_quantization";
    if (ctx->gpu_unchecked) t->on[n_on++] = "disable_robustness";
    while (env && *env && used < 8) {
        size_t len = strcspn(env, ",");
        int neg = env[0] == '-';
        if (len > (size_t)neg && len - (size_t)neg < sizeof t->names[0]) {
            memcpy(t->names[used], env + neg, len - (size_t)neg);
            t->names[used][len - (size_t)neg] = '\0';
            if (neg) t->off[n_off++] = t->names[used];
            else t->on[n_on++] = t->names[used];
            used++;
        }
        env += len + (env[len] == ',');
    }
    t->desc.enabledToggleCount = n_on;
    t->desc.enabledToggles = t->on;
    t->desc.disabledToggleCount = n_off;
    t->desc.disabledToggles = t->off;
}

/* ---- open / close ----------------------------------------------------------- */

static void copy_sv(char *dst, size_t cap, WGPUStringView v) {
    size_t n = v.data ? (v.length == WGPU_STRLEN ? strlen(v.data) : v.length) : 0;
    if (n >= cap) n = cap - 1;
    if (n) memcpy(dst, v.data, n);
    dst[n] = '\0';
}

static pxl_status request_adapter(pxl_gpu *g, const pxl_adapter_attempt *a, char *why,
                                  size_t why_cap) {
    pxl_toggles tg;
    toggles_init(&tg, g->ctx);
    WGPURequestAdapterOptions opt;
    memset(&opt, 0, sizeof opt);
    opt.nextInChain = &tg.desc.chain;
    opt.featureLevel = a->level;
    opt.powerPreference = WGPUPowerPreference_HighPerformance;
    opt.backendType = a->backend;
    adapter_result r;
    memset(&r, 0, sizeof r);
    WGPURequestAdapterCallbackInfo cb = {NULL, WGPUCallbackMode_WaitAnyOnly, on_adapter, &r, NULL};
    WGPUFuture f = g->fn.InstanceRequestAdapter(g->instance, &opt, cb);
    pxl_status s = pxl_gpu_wait(g, f, "requesting an adapter");
    if (s != PXL_OK) {
        pxl_copy_str(why, why_cap, g->ctx->error);
        return s;
    }
    if (r.status != PXL_WGPU_SUCCESS || !r.adapter) {
        pxl_copy_str(why, why_cap, r.message[0] ? r.message : "no adapter");
        if (a->backend == WGPUBackendType_OpenGLES) { /* EGL found no display, most likely */
            size_t used = strlen(why);
            static const char hint[] = " (without a display, set EGL_PLATFORM=surfaceless)";
            if (used + sizeof hint <= why_cap) memcpy(why + used, hint, sizeof hint);
        }
        return PXL_ERR_NO_ADAPTER;
    }
    WGPUAdapterInfo info;
    memset(&info, 0, sizeof info);
    DawnAdapterPropertiesSubgroupMatrixConfigs smc;
    memset(&smc, 0, sizeof smc);
    smc.chain.sType = DAWN_SType_AdapterPropertiesSubgroupMatrixConfigs;
    int has_smc = g->fn.AdapterHasFeature(r.adapter, DAWN_FeatureName_SubgroupMatrix) != 0;
    if (has_smc) info.nextInChain = &smc.chain;
    g->fn.AdapterGetInfo(r.adapter, &info);
    g->n_matrix_configs = 0;
    for (size_t i = 0; has_smc && i < smc.configCount && g->n_matrix_configs < PXL_GPU_MAX_MATRIX_CONFIGS; i++) {
        pxl_gpu_matrix_config *c = &g->matrix_configs[g->n_matrix_configs++];
        c->component = smc.configs[i].componentType;
        c->result = smc.configs[i].resultComponentType;
        c->m = smc.configs[i].M;
        c->n = smc.configs[i].N;
        c->k = smc.configs[i].K;
    }
    if (info.backendType == WGPUBackendType_Null) {
        g->fn.AdapterInfoFreeMembers(info);
        g->fn.AdapterRelease(r.adapter);
        pxl_copy_str(why, why_cap, "only Dawn's Null backend");
        return PXL_ERR_NO_ADAPTER;
    }
    g->adapter = r.adapter;
    g->backend = info.backendType;
    g->level = a->level;
    copy_sv(g->name, sizeof g->name, info.device);
    copy_sv(g->description, sizeof g->description, info.description);
    copy_sv(g->vendor, sizeof g->vendor, info.vendor);
    copy_sv(g->architecture, sizeof g->architecture, info.architecture);
    g->info.adapter_type = adapter_type_name(info.adapterType);
    g->info.vendor_id = info.vendorID;
    g->info.device_id = info.deviceID;
    g->info.subgroup_min_size = info.subgroupMinSize;
    g->info.subgroup_max_size = info.subgroupMaxSize;
    g->fn.AdapterInfoFreeMembers(info);
    return PXL_OK;
}

static int adapter_has(pxl_gpu *g, WGPUFeatureName f) {
    return g->fn.AdapterHasFeature(g->adapter, f) != 0;
}

/* The total size of the adapter's device-local memory heaps (Dawn's
 * adapter-properties-memory-heaps), or 0 where it is not known: the struct is
 * chained only when the adapter has the feature and the library can free it. */
static uint64_t read_device_memory(pxl_gpu *g) {
    if (!g->heaps_free || !adapter_has(g, DAWN_FeatureName_AdapterPropertiesMemoryHeaps)) return 0;
    DawnAdapterPropertiesMemoryHeaps heaps;
    memset(&heaps, 0, sizeof heaps);
    heaps.chain.sType = DAWN_SType_AdapterPropertiesMemoryHeaps;
    WGPUAdapterInfo info;
    memset(&info, 0, sizeof info);
    info.nextInChain = &heaps.chain;
    uint64_t total = 0;
    if (g->fn.AdapterGetInfo(g->adapter, &info) == PXL_WGPU_SUCCESS && heaps.heapInfo && heaps.heapCount <= 1024) {
        for (size_t i = 0; i < heaps.heapCount; i++) {
            const DawnMemoryHeapInfo *h = &heaps.heapInfo[i];
            if (!(h->properties & DAWN_HEAP_PROPERTY_DEVICE_LOCAL)) continue;
            if (h->size > UINT64_MAX - total) { /* nonsense: say nothing rather than a wrong figure */
                total = 0;
                break;
            }
            total += h->size;
        }
    }
    g->fn.AdapterInfoFreeMembers(info);
    if (heaps.heapInfo) g->heaps_free(heaps);
    return total;
}

static pxl_status create_device(pxl_gpu *g) {
    WGPUFeatureName want[8];
    size_t n_want = 0;
    /* Dawn's chromium-experimental-subgroup-matrix (0x50037) is offered only
     * with the toggle allow_unsafe_apis; requested where offered, so that
     * kernels may enable it */
    const WGPUFeatureName optional[] = {WGPUFeatureName_ShaderF16, WGPUFeatureName_Subgroups,
                                        WGPUFeatureName_TimestampQuery, (WGPUFeatureName)0x50037};
    for (size_t i = 0; i < sizeof optional / sizeof optional[0]; i++)
        if (adapter_has(g, optional[i])) want[n_want++] = optional[i];

    g->info.device_memory_bytes = read_device_memory(g);
    g->info.unchecked = g->ctx->gpu_unchecked;

    WGPULimits limits;
    memset(&limits, 0, sizeof limits);
    if (g->fn.AdapterGetLimits(g->adapter, &limits) != PXL_WGPU_SUCCESS)
        return pxl_fail(g->ctx, PXL_ERR_GPU, "could not read the adapter's limits");
    limits.nextInChain = NULL;

    pxl_toggles tg;
    toggles_init(&tg, g->ctx);
    DawnCacheDeviceDescriptor cache;
    WGPUDeviceDescriptor d;
    memset(&d, 0, sizeof d);
    d.nextInChain = &tg.desc.chain;
    if (g->cache_dir) {
        /* what Dawn keys its entries with, besides the shader and its own version */
        snprintf(g->cache_isolation, sizeof g->cache_isolation, "pxl %s; %s; %s; %s; %04x:%04x; %s; %s",
                 PXL_VERSION_STRING, backend_name(g->backend), g->name, g->description, g->info.vendor_id,
                 g->info.device_id, g->ctx->gpu_unchecked ? "unchecked" : "checked",
                 g->ctx->dawn_toggles ? g->ctx->dawn_toggles : "");
        if (pxl_gpu_disk_cache_chain(g, &cache, &tg.desc.chain)) d.nextInChain = &cache.chain;
    }
    d.label = pxl_sv("pxl");
    d.requiredFeatureCount = n_want;
    d.requiredFeatures = want;
    d.requiredLimits = &limits;
    d.deviceLostCallbackInfo.mode = WGPUCallbackMode_AllowSpontaneous;
    d.deviceLostCallbackInfo.callback = on_lost;
    d.deviceLostCallbackInfo.userdata1 = g;
    d.uncapturedErrorCallbackInfo.callback = on_uncaptured;
    d.uncapturedErrorCallbackInfo.userdata1 = g;

    device_result r;
    memset(&r, 0, sizeof r);
    WGPURequestDeviceCallbackInfo cb = {NULL, WGPUCallbackMode_WaitAnyOnly, on_device, &r, NULL};
    WGPUFuture f = g->fn.AdapterRequestDevice(g->adapter, &d, cb);
    pxl_status s = pxl_gpu_wait(g, f, "requesting the device");
    if (s != PXL_OK) return s;
    if (r.status != PXL_WGPU_SUCCESS || !r.device)
        return pxl_fail(g->ctx, PXL_ERR_NO_ADAPTER, "the %s adapter '%s' refused to create a device: %s",
                        backend_name(g->backend), g->name, r.message);
    g->device = r.device;
    g->queue = g->fn.DeviceGetQueue(g->device);
    if (g->fn.DeviceGetLimits(g->device, &g->limits) != PXL_WGPU_SUCCESS) g->limits = limits;
    g->limits.nextInChain = NULL;
    /* WebGPU makes both offset alignments powers of two of at most 256:
     * ops mask with them, uniform slots are 256 bytes apart (bindcache.c) */
    uint32_t sa = g->limits.minStorageBufferOffsetAlignment, ua = g->limits.minUniformBufferOffsetAlignment;
    if (!sa || (sa & (sa - 1)) || sa > 256 || !ua || (ua & (ua - 1)) || ua > 256)
        return pxl_fail(g->ctx, PXL_ERR_NO_ADAPTER,
                        "the %s adapter '%s' reports offset alignments %u and %u (WebGPU requires powers of "
                        "two up to 256)",
                        backend_name(g->backend), g->name, sa, ua);
    for (size_t i = 0; i < n_want && g->n_features < PXL_GPU_MAX_FEATURES; i++)
        if (g->fn.DeviceHasFeature(g->device, want[i])) g->features[g->n_features++] = want[i];
    return PXL_OK;
}

static void fill_info(pxl_gpu *g) {
    pxl_gpu_info *i = &g->info;
    i->library_path = g->lib_path;
    i->adapter_name = g->name;
    i->description = g->description;
    i->vendor = g->vendor;
    i->architecture = g->architecture;
    i->backend = backend_name(g->backend);
    i->cache_dir = g->cache_dir;
    i->feature_level = g->level == WGPUFeatureLevel_Core ? "core" : "compatibility";
    i->has_f16 = g->fn.DeviceHasFeature(g->device, WGPUFeatureName_ShaderF16) != 0;
    i->has_subgroups = g->fn.DeviceHasFeature(g->device, WGPUFeatureName_Subgroups) != 0;
    i->has_timestamps = g->fn.DeviceHasFeature(g->device, WGPUFeatureName_TimestampQuery) != 0;
    i->max_buffer_size = g->limits.maxBufferSize;
    i->max_storage_binding_size = g->limits.maxStorageBufferBindingSize;
    i->max_storage_buffers_per_stage = g->limits.maxStorageBuffersPerShaderStage;
    i->max_workgroup_storage_size = g->limits.maxComputeWorkgroupStorageSize;
    i->max_invocations_per_workgroup = g->limits.maxComputeInvocationsPerWorkgroup;
    i->max_workgroup_size[0] = g->limits.maxComputeWorkgroupSizeX;
    i->max_workgroup_size[1] = g->limits.maxComputeWorkgroupSizeY;
    i->max_workgroup_size[2] = g->limits.maxComputeWorkgroupSizeZ;
    i->max_workgroups_per_dimension = g->limits.maxComputeWorkgroupsPerDimension;
    i->min_storage_offset_alignment = g->limits.minStorageBufferOffsetAlignment;
    i->min_uniform_offset_alignment = g->limits.minUniformBufferOffsetAlignment;
    i->max_uniform_binding_size = g->limits.maxUniformBufferBindingSize;
    /* all adapter features, for reporting */
    WGPUSupportedFeatures sf = {0, NULL};
    g->fn.AdapterGetFeatures(g->adapter, &sf);
    g->n_features = 0;
    for (size_t k = 0; k < sf.featureCount && g->n_features < PXL_GPU_MAX_FEATURES; k++)
        g->features[g->n_features++] = sf.features[k];
    g->fn.SupportedFeaturesFreeMembers(sf);
    i->feature_count = g->n_features;
    i->features = g->features;
    i->matrix_config_count = g->n_matrix_configs;
    i->matrix_configs = g->matrix_configs;
}

pxl_status pxl_gpu_open(pxl_ctx *ctx) {
    pxl_gpu *g = pxl_calloc(ctx, 1, sizeof *g);
    if (!g) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "out of memory");
    g->ctx = ctx;
    if (pthread_mutex_init(&g->err_mu, NULL) != 0) {
        pxl_free(ctx, g);
        return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "could not create a mutex");
    }
    g->err_mu_ready = 1;
    g->cache_dir = ctx->cache_dir;
    g->kernel_cache_max = ctx->kernel_cache_max ? ctx->kernel_cache_max : PXL_KERNEL_CACHE_DEFAULT;
    ctx->gpu = g;
    pxl_status s = pxl_gpu_load_library(g);
    if (s != PXL_OK) goto fail;

    WGPUInstanceFeatureName timed = WGPUInstanceFeatureName_TimedWaitAny;
    WGPUInstanceDescriptor idesc;
    memset(&idesc, 0, sizeof idesc);
    idesc.requiredFeatureCount = 1;
    idesc.requiredFeatures = &timed;
    g->instance = g->fn.CreateInstance(&idesc);
    if (!g->instance) {
        s = pxl_fail(ctx, PXL_ERR_NO_ADAPTER, "%s: could not create a WebGPU instance with timed waits",
                     g->lib_path);
        goto fail;
    }

    size_t n_plan;
    const pxl_adapter_attempt *plan = pxl_gpu_adapter_plan(&n_plan);
    char why_all[PXL_ERR_MAX] = "";
    size_t used = 0;
    s = PXL_ERR_NO_ADAPTER;
    for (size_t i = 0; i < n_plan && s != PXL_OK; i++) {
        char why[512];
        s = request_adapter(g, &plan[i], why, sizeof why);
        if (s != PXL_OK) {
            int w = snprintf(why_all + used, sizeof why_all - used, "%s%s: %s", used ? "; " : "",
                             plan[i].what, why);
            if (w > 0 && (size_t)w < sizeof why_all - used) used += (size_t)w;
        }
    }
    if (s != PXL_OK) {
        s = pxl_fail(ctx, PXL_ERR_NO_ADAPTER, "no usable GPU adapter (%s)", why_all);
        goto fail;
    }
    s = create_device(g);
    if (s != PXL_OK) goto fail;
    fill_info(g);
    g->pool_limit = g->limits.maxBufferSize / 2 < (512ull << 20) ? g->limits.maxBufferSize / 2
                                                                 : (512ull << 20);
    if (g->info.has_timestamps) {
        s = pxl_gpu_timing_init(g);
        if (s != PXL_OK) goto fail;
    }
    return PXL_OK;
fail:
    pxl_gpu_close(ctx);
    return s;
}

void pxl_gpu_close(pxl_ctx *ctx) {
    pxl_gpu *g = ctx->gpu;
    if (!g) return;
    atomic_store(&g->closing, 1);
    if (g->user) pxl_recorder_discard(g->user); /* left open by the caller: dropped */
    while (g->ended) pxl_recorder_discard(g->ended); /* ended and never submitted: dropped */
    if (g->stream) pxl_recorder_discard(g->stream);
    g->stream = NULL;
    if (g->device) {
        pxl_gpu_bind_cache_release(g);
        pxl_gpu_kernels_release(g);
        pxl_gpu_buffers_release(g);
        pxl_gpu_uniforms_release(g);
        pxl_gpu_timing_release(g);
        pxl_gpu_profile_release(g);
    }
    if (g->queue) g->fn.QueueRelease(g->queue);
    if (g->device) {
        g->fn.DeviceDestroy(g->device);
        g->fn.DeviceRelease(g->device);
    }
    if (g->adapter) g->fn.AdapterRelease(g->adapter);
    if (g->instance) {
        g->fn.InstanceProcessEvents(g->instance);
        g->fn.InstanceRelease(g->instance);
    }
    pxl_gpu_unload_library(g);
    pxl_gpu_disk_cache_release(g);
    if (g->err_mu_ready) pthread_mutex_destroy(&g->err_mu);
    pxl_free(ctx, g);
    ctx->gpu = NULL;
}

const pxl_gpu_info *pxl_gpu_get_info(const pxl_ctx *ctx) {
    return ctx->gpu ? &ctx->gpu->info : NULL;
}

pxl_gpu_stats pxl_gpu_get_stats(const pxl_ctx *ctx) {
    pxl_gpu_stats z;
    memset(&z, 0, sizeof z);
    if (!ctx->gpu) return z;
    pxl_gpu_stats st = ctx->gpu->stats;
    st.disk_cache_hits = atomic_load(&ctx->gpu->disk_hits);
    st.disk_cache_misses = atomic_load(&ctx->gpu->disk_misses);
    st.disk_cache_stores = atomic_load(&ctx->gpu->disk_stores);
    st.disk_cache_store_failures = atomic_load(&ctx->gpu->disk_store_failures);
    return st;
}
