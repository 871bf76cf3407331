/*
 * The core part of a context: options, environment, allocation, threads,
 * and its end. The environment variables pxl reads at all are read here,
 * once (see pxl_ctx_create in include/pxl/core.h). Opening a GPU backend is not core's business: pxl_ctx_create
 * (src/gpu/context_open.c) calls pxl_ctx_init here, then opens the backend
 * and leaves a close function in the context that pxl_ctx_free calls, so
 * core/ depends on no other layer.
 */
#include "internal.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__GNUC__) && defined(__x86_64__)
#include <cpuid.h>
#endif

static void *default_alloc(void *user, size_t size) {
    (void)user;
    return malloc(size);
}
static void *default_realloc(void *user, void *ptr, size_t size) {
    (void)user;
    return realloc(ptr, size);
}
static void default_free(void *user, void *ptr) {
    (void)user;
    free(ptr);
}

pxl_ctx_options pxl_ctx_options_default(void) {
    pxl_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = PXL_BACKEND_AUTO;
    return o;
}

/* The pipeline cache directory the options ask for (pxl_ctx_options.cache_dir):
 * 0 with *dir NULL for none, 0 with *dir set, or 1 when out of memory. */
static int resolve_cache_dir(pxl_ctx *ctx, const char *opt, char **dir) {
    *dir = NULL;
    char buf[4096];
    if (opt) {
        if (!*opt) return 0;
        snprintf(buf, sizeof buf, "%s", opt);
    } else {
        const char *env = getenv("PXL_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        int n;
        if (env) {
            if (!*env || strcmp(env, "off") == 0) return 0;
            n = snprintf(buf, sizeof buf, "%s", env);
        } else if (xdg && xdg[0] == '/') {
            n = snprintf(buf, sizeof buf, "%s/pxl", xdg);
        } else if (home && home[0] == '/') {
            n = snprintf(buf, sizeof buf, "%s/.cache/pxl", home);
        } else {
            return 0;
        }
        if (n <= 0 || (size_t)n >= sizeof buf) return 0; /* too long: no cache */
    }
    *dir = pxl_strdup(ctx, buf);
    return *dir == NULL;
}

pxl_status pxl_ctx_init(const pxl_ctx_options *opts, pxl_ctx **out, pxl_backend *want) {
    assert(out && want);
    *want = PXL_BACKEND_CPU;
    pxl_ctx_options o = opts ? *opts : pxl_ctx_options_default();
    pxl_allocator a = {default_alloc, default_realloc, default_free, NULL};
    if (o.allocator) { /* all three hooks, or no context (and nowhere for a message) */
        if (!o.allocator->alloc || !o.allocator->realloc || !o.allocator->free) return PXL_ERR_INVALID_ARG;
        a = *o.allocator;
    }
    pxl_ctx *ctx = a.alloc(a.user, sizeof *ctx);
    if (!ctx) return PXL_ERR_OUT_OF_MEMORY;
    memset(ctx, 0, sizeof *ctx);
    ctx->alloc = a;
    ctx->quiet = o.quiet;
    ctx->kernel_cache_max = o.kernel_cache_max;
    ctx->gpu_unchecked = o.gpu_unchecked != 0;
    ctx->gpu_timeout_ms = o.gpu_timeout_ms ? o.gpu_timeout_ms : 120000;
    *out = ctx;

    if (o.webgpu_library) {
        ctx->webgpu_library = pxl_strdup(ctx, o.webgpu_library);
        if (!ctx->webgpu_library) {
            pxl_ctx_free(ctx);
            *out = NULL;
            return PXL_ERR_OUT_OF_MEMORY;
        }
    }

    if (o.dawn_toggles) {
        ctx->dawn_toggles = pxl_strdup(ctx, o.dawn_toggles);
        if (!ctx->dawn_toggles) {
            pxl_ctx_free(ctx);
            *out = NULL;
            return PXL_ERR_OUT_OF_MEMORY;
        }
    }

    if (o.backend != PXL_BACKEND_CPU && resolve_cache_dir(ctx, o.cache_dir, &ctx->cache_dir)) {
        pxl_ctx_free(ctx);
        *out = NULL;
        return PXL_ERR_OUT_OF_MEMORY;
    }
    if (o.backend != PXL_BACKEND_CPU && !o.webgpu_library) {
        const char *env = getenv("PXL_WEBGPU_LIB");
        if (env && *env && !(ctx->webgpu_library_env = pxl_strdup(ctx, env))) {
            pxl_ctx_free(ctx);
            *out = NULL;
            return PXL_ERR_OUT_OF_MEMORY;
        }
    }

    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    ctx->n_threads = o.n_threads > 0 ? o.n_threads : (cores > 0 ? (int)cores : 1);
    if (ctx->n_threads > 256) ctx->n_threads = 256;

    pxl_status ts = pxl_tuning_parse(ctx, o.tuning, &ctx->tuning);
    if (ts != PXL_OK) return ts;
#if defined(__GNUC__) && defined(__x86_64__)
    unsigned eax, ebx, ecx = 0, edx;
    ctx->cpu_f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29));
#endif

    pxl_backend b = o.backend;
    if (b == PXL_BACKEND_AUTO) {
        const char *env = getenv("PXL_BACKEND");
        if (env && *env && pxl_backend_parse(env, &b) != PXL_OK)
            return pxl_fail(ctx, PXL_ERR_INVALID_ARG,
                            "PXL_BACKEND='%s' is not one of auto, gpu, cpu", env);
    }
    ctx->requested = b;
    ctx->active = PXL_BACKEND_CPU;
    *want = b;
    return PXL_OK;
}

void pxl_ctx_free(pxl_ctx *ctx) {
    if (!ctx) return;
    if (ctx->close_backend) ctx->close_backend(ctx);
    pxl_threadpool_free(ctx, ctx->pool);
    pxl_free(ctx, ctx->rope_table);
    pxl_free(ctx, ctx->webgpu_library);
    pxl_free(ctx, ctx->webgpu_library_env);
    pxl_free(ctx, ctx->dawn_toggles);
    pxl_free(ctx, ctx->cache_dir);
    pxl_allocator a = ctx->alloc;
    a.free(a.user, ctx);
}

pxl_backend pxl_ctx_backend(const pxl_ctx *ctx) { return ctx->active; }
const char *pxl_ctx_gpu_unavailable_reason(const pxl_ctx *ctx) { return ctx->gpu_reason; }
int pxl_ctx_threads(const pxl_ctx *ctx) { return ctx->n_threads; }

double pxl_time_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
