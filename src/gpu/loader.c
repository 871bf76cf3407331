/*
 * Finds the WebGPU library and resolves the entry points pxl uses.
 *
 * Search order (first that dlopens wins):
 *   1. ctx option webgpu_library: if set, the only path tried;
 *   2. $PXL_WEBGPU_LIB (read once by pxl_ctx_create);
 *   3. deps/dawn/libwebgpu_wrapper.so relative to the executable
 *      (../deps/dawn, ../../deps/dawn) and in the source tree pxl was built from;
 *   4. <libdir>/pxl/libwebgpu_wrapper.so of the install prefix, and
 *      ../lib/pxl/ relative to the executable;
 *   5. libwebgpu_dawn.so and libwgpu_native.so on the system library path.
 * A library that loads but lacks an entry point is an error naming the symbol.
 * A path that names anything but a regular file (a FIFO, a directory) is
 * skipped with the reason, never handed to dlopen.
 */
#define _GNU_SOURCE
#include "gpu_internal.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef PXL_SOURCE_DEPS_DIR
#define PXL_SOURCE_DEPS_DIR ""
#endif
#ifndef PXL_INSTALL_LIBDIR
#define PXL_INSTALL_LIBDIR ""
#endif
#define DAWN_SO "libwebgpu_wrapper.so"

typedef struct {
    char paths[12][PATH_MAX];
    size_t n;
} candidates;

/* Adds dir + "/" + rel (or just rel when dir is NULL) if it fits. */
static void add(candidates *c, const char *dir, const char *rel) {
    if (c->n >= sizeof c->paths / sizeof c->paths[0]) return;
    int w = dir ? snprintf(c->paths[c->n], PATH_MAX, "%s/%s", dir, rel)
                : snprintf(c->paths[c->n], PATH_MAX, "%s", rel);
    if (w > 0 && w < PATH_MAX) c->n++;
}

static void build_candidates(pxl_ctx *ctx, candidates *c) {
    c->n = 0;
    if (ctx->webgpu_library) {
        add(c, NULL, ctx->webgpu_library);
        return;
    }
    if (ctx->webgpu_library_env) add(c, NULL, ctx->webgpu_library_env);
    char exe[PATH_MAX];
    if (pxl_exe_dir(exe, sizeof exe)) {
        add(c, exe, "../deps/dawn/" DAWN_SO);
        add(c, exe, "../../deps/dawn/" DAWN_SO);
        add(c, exe, "../lib/pxl/" DAWN_SO);
    }
    if (PXL_SOURCE_DEPS_DIR[0]) add(c, PXL_SOURCE_DEPS_DIR, "dawn/" DAWN_SO);
    if (PXL_INSTALL_LIBDIR[0]) add(c, PXL_INSTALL_LIBDIR, "pxl/" DAWN_SO);
    add(c, NULL, "libwebgpu_dawn.so");
    add(c, NULL, "libwgpu_native.so");
}

pxl_status pxl_gpu_load_library(pxl_gpu *g) {
    pxl_ctx *ctx = g->ctx;
    candidates c;
    build_candidates(ctx, &c);
    char tried[PXL_ERR_MAX];
    size_t used = 0;
    tried[0] = '\0';
    for (size_t i = 0; i < c.n; i++) {
        const char *p = c.paths[i];
        /* Only bare names go through the system search; paths must name a
         * regular file (dlopen would block forever on a FIFO). */
        struct stat st;
        if (strchr(p, '/') && (stat(p, &st) != 0 || !S_ISREG(st.st_mode) || access(p, R_OK) != 0)) {
            const char *why = stat(p, &st) != 0 ? "not found" : !S_ISREG(st.st_mode) ? "not a regular file" : "not readable";
            int w = snprintf(tried + used, sizeof tried - used, "%s%s (%s)", used ? ", " : "", p, why);
            if (w > 0 && (size_t)w < sizeof tried - used) used += (size_t)w;
            continue;
        }
        void *h = dlopen(p, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            const char *e = dlerror();
            const char *why = (e && strstr(e, "No such file")) ? "not found" : (e ? e : "dlopen failed");
            int w = snprintf(tried + used, sizeof tried - used, "%s%s (%s)", used ? ", " : "", p, why);
            if (w > 0 && (size_t)w < sizeof tried - used) used += (size_t)w;
            continue;
        }
        /* Resolve every entry point; a missing one is fatal for this library. */
#define PXL_RESOLVE(ret, name, params)                                                         \
    {                                                                                          \
        void *sym = dlsym(h, "wgpu" #name);                                                    \
        if (!sym) {                                                                            \
            dlclose(h);                                                                        \
            return pxl_fail(ctx, PXL_ERR_NO_LIBRARY,                                           \
                            "WebGPU library %s lacks the symbol wgpu" #name                    \
                            " (not a webgpu.h implementation, or an incompatible version)",   \
                            p);                                                                \
        }                                                                                      \
        memcpy(&g->fn.name, &sym, sizeof sym);                                                 \
    }
        PXL_WGPU_FUNCTIONS(PXL_RESOLVE)
#undef PXL_RESOLVE
        {
            void *sym = dlsym(h, "wgpuAdapterPropertiesMemoryHeapsFreeMembers");
            if (sym) memcpy(&g->heaps_free, &sym, sizeof sym);
        }
        g->lib = h;
        char canon[PATH_MAX];
        g->lib_path = pxl_strdup(ctx, strchr(p, '/') && realpath(p, canon) ? canon : p);
        if (!g->lib_path) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "out of memory");
        return PXL_OK;
    }
    if (ctx->webgpu_library)
        return pxl_fail(ctx, PXL_ERR_NO_LIBRARY, "WebGPU library could not be loaded: %s", tried);
    return pxl_fail(ctx, PXL_ERR_NO_LIBRARY,
                    "WebGPU library not found (run scripts/deps.sh, or set PXL_WEBGPU_LIB); tried: %s",
                    tried);
}

void pxl_gpu_unload_library(pxl_gpu *g) {
    /* Dawn registers atexit handlers and thread-local state; unloading it
     * while the process lives is not safe, so the handle is kept open. */
    g->lib = NULL;
    pxl_free(g->ctx, g->lib_path);
    g->lib_path = NULL;
}
