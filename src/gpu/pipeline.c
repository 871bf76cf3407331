/*
 * Compute pipelines, compiled from WGSL and cached per context by
 * (WGSL text, entry point, override constants) in a hash table, with a
 * direct-mapped front table keyed by the caller's text pointer (ops pass
 * the same embedded text every call; the text is still compared). Shader
 * modules are cached per WGSL text, so the entry points of one file share
 * one parse, and are released with the last cached kernel built from them.
 *
 * Eviction: the cache keeps at most kernel_cache_max kernels
 * (pxl_ctx_options; default PXL_KERNEL_CACHE_DEFAULT). A miss beyond that
 * frees the least recently got kernel that the open recording has not
 * dispatched (recorded work keeps its own reference to the pipeline, but
 * the handle would dangle); if every kernel is in use by it, the cache grows
 * past the bound until the recording ends. So a handle stays valid until
 * kernel_cache_max other kernels were got after it, and at least as long as
 * the recording that dispatched it is open (gpu.h states the rule).
 *
 * Across processes, Dawn's blob cache on disk (diskcache.c) skips the
 * translation and the driver's compile. Compiler messages come back as
 * "label:line:col: error: text", one per line; in embedded WGSL (which
 * carries //#line markers, cmake/embed_wgsl.c) as "file:line:col: error:
 * text" with the source file and line the text came from.
 */
#include "gpu_internal.h"

#include <stdio.h>
#include <string.h>

/* A hash of n bytes, eight at a time (a lookup key, not a checksum). */
static uint64_t text_hash(uint64_t h, const void *data, size_t n) {
    const uint8_t *p = data;
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0x9e3779b97f4a7c15ull;
        h ^= h >> 29;
    }
    return pxl_fnv1a(h, p, n);
}

static uint64_t key_hash(const char *wgsl, size_t len, const char *entry, const pxl_constant *c, size_t nc) {
    uint64_t h = text_hash(PXL_FNV_BASIS, wgsl, len);
    h = pxl_fnv1a(h, entry, strlen(entry) + 1);
    for (size_t i = 0; i < nc; i++) {
        h = pxl_fnv1a(h, c[i].name, strlen(c[i].name) + 1);
        h = pxl_fnv1a(h, &c[i].value, sizeof c[i].value);
    }
    return h;
}

/* The entry point and constants of k are these. */
static int key_meta_equal(const pxl_kernel *k, const char *entry, const pxl_constant *c, size_t nc) {
    if (k->n_constants != nc || strcmp(k->entry, entry) != 0) return 0;
    for (size_t i = 0; i < nc; i++)
        if (strcmp(k->constants[i].name, c[i].name) != 0 || k->constants[i].value != c[i].value)
            return 0;
    return 1;
}

/* key_meta_equal for pxl_kernel_get_static, whose names never change at an
 * address either: the entry and constant-name pointers last verified are
 * kept (fixed_entry, fixed_names), so an op passing the same literals costs
 * pointer comparisons; other pointers are compared as text and then kept. */
static int fixed_meta_equal(pxl_kernel *k, const char *entry, const pxl_constant *c, size_t nc) {
    if (k->n_constants != nc) return 0;
    if (k->fixed_entry != entry) {
        if (strcmp(k->entry, entry) != 0) return 0;
        k->fixed_entry = entry;
    }
    for (size_t i = 0; i < nc; i++) {
        if (k->constants[i].value != c[i].value) return 0;
        if (k->fixed_names[i] != c[i].name) {
            if (strcmp(k->constants[i].name, c[i].name) != 0) return 0;
            k->fixed_names[i] = c[i].name;
        }
    }
    return 1;
}

static int key_equal(const pxl_kernel *k, const char *wgsl, size_t len, const char *entry,
                     const pxl_constant *c, size_t nc) {
    return k->wgsl_len == len && key_meta_equal(k, entry, c, nc) && memcmp(k->wgsl, wgsl, len) == 0;
}

static void module_unuse(pxl_gpu *g, uint64_t hash, const char *wgsl);

static void kernel_free(pxl_gpu *g, pxl_kernel *k) {
    if (!k) return;
    if (k->module_ref) module_unuse(g, k->module_hash, k->wgsl);
    if (k->layout) g->fn.BindGroupLayoutRelease(k->layout);
    if (k->pipeline) g->fn.ComputePipelineRelease(k->pipeline);
    pxl_free(g->ctx, k->const_names);
    pxl_free(g->ctx, k->constants);
    pxl_free(g->ctx, k->fixed_names);
    pxl_free(g->ctx, k->label);
    pxl_free(g->ctx, k->wgsl);
    pxl_free(g->ctx, k->entry);
    pxl_free(g->ctx, k);
}

void pxl_gpu_kernels_release(pxl_gpu *g) {
    for (pxl_kernel *k = g->kernel_head, *next; k; k = next) {
        next = k->next;
        kernel_free(g, k);
    }
    g->kernel_head = g->kernel_tail = NULL;
    g->n_kernels = 0;
    pxl_free(g->ctx, g->kernel_buckets);
    g->kernel_buckets = NULL;
    g->n_kernel_buckets = 0;
    memset(g->kernel_fast, 0, sizeof g->kernel_fast);
    pxl_gpu_modules_release(g);
}

int pxl_gpu_wgsl_origin(const char *wgsl, uint64_t line, const char **file, size_t *file_len,
                        uint64_t *file_line) {
    static const char MARK[] = "//#line ";
    const size_t mark_len = sizeof MARK - 1;
    int found = 0;
    uint64_t at = 0, n = 0; /* the last marker: its line in wgsl, and N */
    const char *p = wgsl;
    for (uint64_t l = 1; l < line && *p; l++) {
        if (strncmp(p, MARK, mark_len) == 0) {
            const char *q = p + mark_len;
            uint64_t v = 0;
            while (*q >= '0' && *q <= '9') v = v * 10 + (uint64_t)(*q++ - '0');
            const char *f = q[0] == ' ' && q[1] == '"' ? q + 2 : NULL;
            const char *end = f ? strpbrk(f, "\"\n") : NULL;
            if (end && *end == '"' && v > 0) {
                found = 1;
                at = l;
                n = v;
                *file = f;
                *file_len = (size_t)(end - f);
            }
        }
        const char *nl = strchr(p, '\n');
        if (!nl) break;
        p = nl + 1;
    }
    if (!found) return 0;
    *file_line = n + (line - at - 1);
    return 1;
}

typedef struct {
    pxl_gpu *g;
    const char *label;
    const char *wgsl;
    int errors;
    int done;
} compile_result;

static void on_compile(WGPUCompilationInfoRequestStatus status, const WGPUCompilationInfo *info,
                       void *u1, void *u2) {
    (void)u2;
    compile_result *r = u1;
    r->done = 1;
    if (status != PXL_WGPU_SUCCESS || !info) return;
    for (size_t i = 0; i < info->messageCount; i++) {
        const WGPUCompilationMessage *m = &info->messages[i];
        if (m->type != WGPUCompilationMessageType_Error) continue;
        const char *text = m->message.data ? m->message.data : "";
        size_t len = m->message.data ? (m->message.length == WGPU_STRLEN ? strlen(text) : m->message.length) : 0;
        /* keep the first line of each message: Dawn appends source excerpts */
        const char *nl = memchr(text, '\n', len);
        if (nl) len = (size_t)(nl - text);
        /* embedded WGSL: the file and line the text came from */
        const char *file = r->label;
        size_t file_len = strlen(file);
        uint64_t line = m->lineNum;
        pxl_gpu_wgsl_origin(r->wgsl, m->lineNum, &file, &file_len, &line);
        if (r->errors == 0)
            pxl_fail(r->g->ctx, PXL_ERR_SHADER, "%.*s:%llu:%llu: error: %.*s", (int)file_len, file,
                     (unsigned long long)line, (unsigned long long)m->linePos, (int)len, text);
        else
            pxl_append_error(r->g->ctx, "\n%.*s:%llu:%llu: error: %.*s", (int)file_len, file,
                             (unsigned long long)line, (unsigned long long)m->linePos, (int)len, text);
        r->errors++;
    }
}

/* The shader module of a WGSL text: created (and its compiler messages
 * checked) once per context, shared by every entry point and constant set. */
static pxl_status get_module(pxl_gpu *g, pxl_kernel *k, WGPUShaderModule *out) {
    uint64_t h = text_hash(PXL_FNV_BASIS, k->wgsl, k->wgsl_len);
    k->module_hash = h;
    for (size_t i = 0; i < g->n_modules; i++)
        if (g->modules[i].hash == h && strcmp(g->modules[i].wgsl, k->wgsl) == 0) {
            *out = g->modules[i].module;
            return PXL_OK;
        }
    if (g->n_modules == g->cap_modules) {
        size_t cap = g->cap_modules ? 2 * g->cap_modules : 8;
        pxl_shader_module *m = pxl_realloc(g->ctx, g->modules, cap * sizeof *m);
        if (!m) return pxl_fail(g->ctx, PXL_ERR_OUT_OF_MEMORY, "out of memory");
        g->modules = m;
        g->cap_modules = cap;
    }
    char *text = pxl_strdup(g->ctx, k->wgsl);
    if (!text) return pxl_fail(g->ctx, PXL_ERR_OUT_OF_MEMORY, "out of memory");

    WGPUShaderSourceWGSL src;
    memset(&src, 0, sizeof src);
    src.chain.sType = WGPUSType_ShaderSourceWGSL;
    src.code = pxl_sv(k->wgsl);
    WGPUShaderModuleDescriptor md;
    memset(&md, 0, sizeof md);
    md.nextInChain = &src.chain;
    md.label = pxl_sv(k->label);

    double t0 = pxl_time_now();
    pxl_gpu_push_scopes(g);
    WGPUShaderModule mod = g->fn.DeviceCreateShaderModule(g->device, &md);
    compile_result cr = {g, k->label, k->wgsl, 0, 0};
    WGPUCompilationInfoCallbackInfo cb = {NULL, WGPUCallbackMode_WaitAnyOnly, on_compile, &cr, NULL};
    WGPUFuture f = g->fn.ShaderModuleGetCompilationInfo(mod, cb);
    pxl_status s = pxl_gpu_wait(g, f, "compiling WGSL");
    char compile_msg[PXL_ERR_MAX];
    pxl_copy_str(compile_msg, sizeof compile_msg, g->ctx->error);
    pxl_status scope = pxl_gpu_pop_scopes(g, k->label);
    g->stats.shader_module_ns += (uint64_t)((pxl_time_now() - t0) * 1e9);
    if (s == PXL_OK && cr.errors) s = pxl_fail(g->ctx, PXL_ERR_SHADER, "%s", compile_msg);
    else if (s == PXL_OK) s = scope;
    if (s != PXL_OK) {
        g->fn.ShaderModuleRelease(mod);
        pxl_free(g->ctx, text);
        return s;
    }
    pxl_shader_module *m = &g->modules[g->n_modules++];
    m->hash = h;
    m->users = 0;
    m->wgsl = text;
    m->module = mod;
    *out = mod;
    return PXL_OK;
}

static pxl_shader_module *find_module(pxl_gpu *g, uint64_t hash, const char *wgsl) {
    for (size_t i = 0; i < g->n_modules; i++)
        if (g->modules[i].hash == hash && strcmp(g->modules[i].wgsl, wgsl) == 0) return &g->modules[i];
    return NULL;
}

/* A cached kernel built from the module is gone: the last one releases it. */
static void module_unuse(pxl_gpu *g, uint64_t hash, const char *wgsl) {
    pxl_shader_module *m = find_module(g, hash, wgsl);
    if (!m || (m->users && --m->users > 0)) return;
    g->fn.ShaderModuleRelease(m->module);
    pxl_free(g->ctx, m->wgsl);
    *m = g->modules[--g->n_modules];
}

void pxl_gpu_modules_release(pxl_gpu *g) {
    for (size_t i = 0; i < g->n_modules; i++) {
        g->fn.ShaderModuleRelease(g->modules[i].module);
        pxl_free(g->ctx, g->modules[i].wgsl);
    }
    pxl_free(g->ctx, g->modules);
    g->modules = NULL;
    g->n_modules = g->cap_modules = 0;
}

static pxl_status compile(pxl_gpu *g, pxl_kernel *k) {
    WGPUShaderModule mod = NULL;
    pxl_status s = get_module(g, k, &mod);
    if (s != PXL_OK) return s;

    WGPUConstantEntry ce[32];
    if (k->n_constants > 32) {
        return pxl_fail(g->ctx, PXL_ERR_INVALID_ARG, "%s: at most 32 override constants", k->label);
    }
    for (size_t i = 0; i < k->n_constants; i++) {
        memset(&ce[i], 0, sizeof ce[i]);
        ce[i].key = pxl_sv(k->constants[i].name);
        ce[i].value = k->constants[i].value;
    }
    WGPUComputePipelineDescriptor pd;
    memset(&pd, 0, sizeof pd);
    pd.label = pxl_sv(k->label);
    pd.compute.module = mod;
    pd.compute.entryPoint = pxl_sv(k->entry);
    pd.compute.constantCount = k->n_constants;
    pd.compute.constants = ce;
    double t1 = pxl_time_now();
    pxl_gpu_push_scopes(g);
    k->pipeline = g->fn.DeviceCreateComputePipeline(g->device, &pd);
    s = pxl_gpu_pop_scopes(g, k->label);
    g->stats.pipeline_ns += (uint64_t)((pxl_time_now() - t1) * 1e9);
    if (s != PXL_OK) {
        /* entry point or constants wrong: a shader problem, not a device one */
        return s == PXL_ERR_GPU ? pxl_fail(g->ctx, PXL_ERR_SHADER, "%s", g->ctx->error) : s;
    }
    k->layout = g->fn.ComputePipelineGetBindGroupLayout(k->pipeline, 0);
    find_module(g, k->module_hash, k->wgsl)->users++;
    k->module_ref = 1;
    return PXL_OK;
}

/* ---- the cache ---------------------------------------------------------------- */

/* The two places of a (text pointer, entry, constants) key in kernel_fast:
 * two kernels whose keys share one place still both find theirs in the
 * other (a kernel not found there costs a hash of its whole text). */
static void fast_slots(const char *wgsl, const char *entry, const pxl_constant *c, size_t nc, size_t slot[2]) {
    uint64_t h = (uint64_t)(uintptr_t)wgsl * 0x9e3779b97f4a7c15ull;
    h ^= (uint64_t)(uintptr_t)entry * 0xbf58476d1ce4e5b9ull;
    for (size_t i = 0; i < nc; i++) {
        uint64_t v;
        memcpy(&v, &c[i].value, sizeof v);
        h = (h ^ v ^ (uint64_t)(uintptr_t)c[i].name) * 0x94d049bb133111ebull;
    }
    h ^= h >> 29;
    size_t n = sizeof ((pxl_gpu *)0)->kernel_fast / sizeof(pxl_kernel *);
    slot[0] = (size_t)(h % n);
    slot[1] = (size_t)((h >> 32) % n);
    if (slot[1] == slot[0]) slot[1] = (slot[0] + 1) % n;
}

static void lru_unlink(pxl_gpu *g, pxl_kernel *k) {
    if (k->prev) k->prev->next = k->next;
    else g->kernel_head = k->next;
    if (k->next) k->next->prev = k->prev;
    else g->kernel_tail = k->prev;
    k->prev = k->next = NULL;
}

static void lru_front(pxl_gpu *g, pxl_kernel *k) {
    k->prev = NULL;
    k->next = g->kernel_head;
    if (g->kernel_head) g->kernel_head->prev = k;
    g->kernel_head = k;
    if (!g->kernel_tail) g->kernel_tail = k;
}

static pxl_kernel **bucket_of(pxl_gpu *g, uint64_t h) {
    return &g->kernel_buckets[h & (g->n_kernel_buckets - 1)];
}

/* Puts k in one of its key's two places unless it holds one: the second
 * when only the first is taken, else the first. */
static void fast_put(pxl_gpu *g, pxl_kernel *k, const size_t slot[2]) {
    if (g->kernel_fast[slot[0]] == k || g->kernel_fast[slot[1]] == k) return;
    g->kernel_fast[g->kernel_fast[slot[0]] && !g->kernel_fast[slot[1]] ? slot[1] : slot[0]] = k;
}

static pxl_kernel *hit(pxl_gpu *g, pxl_kernel *k, const char *wgsl, const size_t slot[2]) {
    k->src = wgsl;
    fast_put(g, k, slot);
    if (g->kernel_head != k) {
        lru_unlink(g, k);
        lru_front(g, k);
    }
    g->stats.pipeline_cache_hits++;
    return k;
}

/* Frees the least recently used kernel the open recording has not
 * dispatched; 0 if every kernel is in use by it. */
static int evict_one(pxl_gpu *g) {
    pxl_kernel *k = g->kernel_tail;
    while (k && g->open_serial && k->last_use == g->open_serial) k = k->prev;
    if (!k) return 0;
    lru_unlink(g, k);
    for (pxl_kernel **p = bucket_of(g, k->hash); *p; p = &(*p)->hnext)
        if (*p == k) {
            *p = k->hnext;
            break;
        }
    for (size_t i = 0; i < sizeof g->kernel_fast / sizeof g->kernel_fast[0]; i++)
        if (g->kernel_fast[i] == k) g->kernel_fast[i] = NULL;
    kernel_free(g, k);
    g->n_kernels--;
    g->stats.pipeline_cache_evictions++;
    return 1;
}

/* pxl_kernel_get and pxl_kernel_get_static: `fixed` says the text at wgsl
 * never changes, so a pointer seen before needs no comparison of the text. */
static pxl_status kernel_get(pxl_ctx *ctx, const char *label, const char *wgsl, const char *entry,
                             const pxl_constant *constants, size_t n_constants, int fixed, pxl_kernel **out) {
    PXL_GPU_OR_FAIL(ctx, g);
    if (!wgsl || !entry || !out || (n_constants && !constants))
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_kernel_get: %s is NULL",
                        !wgsl ? "wgsl" : !entry ? "entry" : !out ? "out" : "constants");
    if (!label) label = "wgsl";
    if (g->lost) return pxl_gpu_take_deferred(g);
    /* Fast path: the same text pointer, entry and constants as a recent
     * call (embedded WGSL, every op call): with fixed text no comparison of
     * the text at all (the pointer was compared in full when it was first
     * seen), else one. */
    size_t slot[2];
    fast_slots(wgsl, entry, constants, n_constants, slot);
    for (int w = 0; fixed && w < 2; w++) {
        pxl_kernel *f = g->kernel_fast[slot[w]];
        if (f && f->src == wgsl && fixed_meta_equal(f, entry, constants, n_constants)) {
            *out = hit(g, f, wgsl, slot);
            return PXL_OK;
        }
    }
    size_t len = strlen(wgsl);
    for (int w = 0; w < 2; w++) {
        pxl_kernel *f = g->kernel_fast[slot[w]];
        if (f && f->src == wgsl && key_equal(f, wgsl, len, entry, constants, n_constants)) {
            *out = hit(g, f, wgsl, slot);
            return PXL_OK;
        }
    }
    if (!g->kernel_buckets) {
        size_t nb = 64;
        while (nb < 2 * g->kernel_cache_max && nb < ((size_t)1 << 20)) nb *= 2;
        g->kernel_buckets = pxl_calloc(ctx, nb, sizeof *g->kernel_buckets);
        if (!g->kernel_buckets) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "out of memory");
        g->n_kernel_buckets = nb;
    }
    uint64_t h = key_hash(wgsl, len, entry, constants, n_constants);
    for (pxl_kernel *k = *bucket_of(g, h); k; k = k->hnext)
        if (k->hash == h && key_equal(k, wgsl, len, entry, constants, n_constants)) {
            *out = hit(g, k, wgsl, slot);
            return PXL_OK;
        }
    g->stats.pipeline_cache_misses++;
    pxl_kernel *k = pxl_calloc(ctx, 1, sizeof *k);
    if (!k) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "out of memory");
    k->hash = h;
    k->src = wgsl;
    k->wgsl_len = len;
    k->label = pxl_strdup(ctx, label);
    k->wgsl = pxl_strdup(ctx, wgsl);
    k->entry = pxl_strdup(ctx, entry);
    size_t names_len = 0;
    for (size_t i = 0; i < n_constants; i++) names_len += strlen(constants[i].name) + 1;
    k->constants = n_constants ? pxl_calloc(ctx, n_constants, sizeof *k->constants) : NULL;
    k->const_names = n_constants ? pxl_alloc(ctx, names_len) : NULL;
    k->fixed_names = n_constants ? pxl_calloc(ctx, n_constants, sizeof *k->fixed_names) : NULL;
    int oom = !k->label || !k->wgsl || !k->entry ||
              (n_constants && (!k->constants || !k->const_names || !k->fixed_names));
    for (size_t i = 0, at = 0; !oom && i < n_constants; i++) {
        size_t n = strlen(constants[i].name) + 1;
        memcpy(k->const_names + at, constants[i].name, n);
        k->constants[i].name = k->const_names + at;
        k->constants[i].value = constants[i].value;
        k->n_constants = i + 1;
        at += n;
    }
    if (oom) {
        kernel_free(g, k);
        return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "out of memory");
    }
    pxl_status s = compile(g, k);
    if (s != PXL_OK) {
        /* a module no cached kernel uses (say, a wrong entry point) goes too */
        pxl_shader_module *m = find_module(g, k->module_hash, k->wgsl);
        if (!k->module_ref && m && m->users == 0) module_unuse(g, k->module_hash, k->wgsl);
        kernel_free(g, k);
        return s;
    }
    while (g->n_kernels >= g->kernel_cache_max && evict_one(g)) {
    }
    k->id = ++g->kernel_serial;
    k->hnext = *bucket_of(g, h);
    *bucket_of(g, h) = k;
    lru_front(g, k);
    fast_put(g, k, slot);
    g->n_kernels++;
    *out = k;
    return PXL_OK;
}

pxl_status pxl_kernel_get(pxl_ctx *ctx, const char *label, const char *wgsl, const char *entry,
                          const pxl_constant *constants, size_t n_constants, pxl_kernel **out) {
    return kernel_get(ctx, label, wgsl, entry, constants, n_constants, 0, out);
}

pxl_status pxl_kernel_get_static(pxl_ctx *ctx, const char *label, const char *wgsl, const char *entry,
                                 const pxl_constant *constants, size_t n_constants, pxl_kernel **out) {
    return kernel_get(ctx, label, wgsl, entry, constants, n_constants, 1, out);
}
