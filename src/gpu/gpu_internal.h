/*
 * State of an open GPU (one per context) and the helpers the src/gpu files
 * share. Only src/gpu/ includes this.
 */
#ifndef PXL_GPU_INTERNAL_H
#define PXL_GPU_INTERNAL_H

#include "../core/internal.h"
#include "pxl/gpu.h"
#include "webgpu_api.h"

#include <pthread.h>
#include <stdatomic.h>

#define PXL_GPU_MAX_FEATURES 96
#define PXL_GPU_MAX_MATRIX_CONFIGS 16
#define PXL_UNIFORM_BLOCK_SIZE 65536u
#define PXL_UNIFORM_MAX 256u
/* the uniform slot and bind group caches (bindcache.c) */
#define PXL_USLOT_MAX 4096u
#define PXL_USLOT_BUCKETS 8192u
#define PXL_BG_MAX 4096u
#define PXL_BG_BUCKETS 8192u
#define PXL_BG_MAX_ENTRIES 16u
/* bind group key ids of uniform slots have this bit; buffer ids never do */
#define PXL_BG_UNIFORM_ID (1ull << 63)
/* kernels kept by the pipeline cache unless pxl_ctx_options.kernel_cache_max says otherwise */
#define PXL_KERNEL_CACHE_DEFAULT 1024u

struct pxl_buffer {
    pxl_gpu *gpu;
    uint64_t id;        /* serial number of the GPU buffer (bind group keys) */
    WGPUBuffer handle;
    size_t size;        /* what the user asked for */
    uint64_t capacity;  /* allocated bytes (multiple of 16; storage buffers: PXL_BUFFER_TAIL
                         * past pxl_buffer_span where the device allows) */
    int readback;       /* pxl_buffer_create_readback: MapRead | CopyDst, not pooled */
    int mapped;         /* a read-back buffer mapped by pxl_buffer_map_read */
    pxl_buffer *next;   /* pool link */
};

/* The bytes of b that copies and clears may touch: its size rounded up to 16
 * (16 for size 0). The tail past it is only ever bound (pxl_buffer_create). */
static inline uint64_t pxl_buffer_span(const pxl_buffer *b) {
    return b->size ? ((uint64_t)b->size + 15u) / 16u * 16u : 16u;
}

struct pxl_kernel {
    uint64_t hash;
    uint64_t id;       /* serial number, never reused in a context (bind group keys) */
    uint64_t last_use; /* serial of the recording that last dispatched it */
    pxl_kernel *hnext, *prev, *next; /* hash chain and LRU list of the pipeline cache */
    uint64_t module_hash;            /* its shader module's text hash */
    int module_ref;                  /* counted in its module's users */
    const char *src; /* the caller's text pointer last seen (compared, never read unverified) */
    size_t wgsl_len;
    char *label, *wgsl, *entry;
    pxl_constant *constants; /* names point into const_names */
    char *const_names;       /* owned: the constants' names, NUL-terminated, back to back */
    size_t n_constants;
    /* pxl_kernel_get_static's entry and constant-name pointers last verified
     * equal to entry and constants[i].name (compared before the text) */
    const char *fixed_entry;
    const char **fixed_names;
    WGPUComputePipeline pipeline;
    WGPUBindGroupLayout layout;
};

/* A shader module shared by the kernels compiled from one WGSL text. */
typedef struct pxl_shader_module {
    uint64_t hash;
    size_t users; /* cached kernels built from it */
    char *wgsl;
    WGPUShaderModule module;
} pxl_shader_module;

/* A uniform slot: one distinct parameter block (bindcache.c). */
typedef struct pxl_uslot {
    uint64_t hash, last_use;
    uint32_t size, hnext, prev, next;
} pxl_uslot;

/* A cached bind group (bindcache.c). */
typedef struct pxl_bg_entry {
    uint64_t hash;
    uint64_t key[2 + 4 * PXL_BG_MAX_ENTRIES];
    uint32_t key_len, hnext, prev, next;
    WGPUBindGroup group;
} pxl_bg_entry;

/* A persistent map-write buffer for large uploads (buffer.c). */
typedef struct pxl_upload_stage {
    WGPUBuffer handle;
    uint64_t size;
    int mapped;  /* mapped and ready for writing */
    int pending; /* a map is in flight: wait on future */
    WGPUFuture future;
    WGPUMapAsyncStatus map_status;
} pxl_upload_stage;

/* A block of uniform memory that recorders carve dispatch parameters from. */
typedef struct pxl_gpu_prof pxl_gpu_prof;

typedef struct pxl_uniform_block {
    WGPUBuffer handle;
    uint32_t used;
    uint32_t dirty_lo, dirty_hi; /* uniform slot blocks: bytes to write before the next submit */
    uint8_t data[PXL_UNIFORM_BLOCK_SIZE];
    struct pxl_uniform_block *next;
} pxl_uniform_block;

struct pxl_gpu {
    pxl_ctx *ctx;
    void *lib;
    char *lib_path;
    pxl_wgpu_fns fn;
    /* optional (Dawn only): frees a DawnAdapterPropertiesMemoryHeaps; NULL
     * when the library lacks it, and then the heaps are not queried */
    void (*heaps_free)(DawnAdapterPropertiesMemoryHeaps heaps);
    WGPUInstance instance;
    WGPUAdapter adapter;
    WGPUDevice device;
    WGPUQueue queue;
    WGPULimits limits;
    WGPUFeatureLevel level;
    WGPUBackendType backend;
    pxl_gpu_info info;
    char name[256], description[256], vendor[128], architecture[128];
    uint32_t features[PXL_GPU_MAX_FEATURES];
    size_t n_features;
    pxl_gpu_matrix_config matrix_configs[PXL_GPU_MAX_MATRIX_CONFIGS];
    size_t n_matrix_configs;

    /* errors reported outside any call, and device loss: written by Dawn's
     * callbacks, which may run on Dawn's threads (device loss is
     * AllowSpontaneous): the flags are atomic, the error and its message
     * are read and written under err_mu */
    atomic_int lost;
    atomic_int closing;
    pthread_mutex_t err_mu;
    int err_mu_ready;
    pxl_status deferred;
    char deferred_msg[PXL_ERR_MAX];

    /* pipeline cache (hash chains and an LRU list over g->kernels), and the
     * shader modules it was built from */
    pxl_kernel **kernel_buckets; /* hash chain heads (a power of two of them) */
    size_t n_kernels, n_kernel_buckets;
    pxl_kernel *kernel_head, *kernel_tail; /* most and least recently used */
    size_t kernel_cache_max;
    uint64_t kernel_serial;
    pxl_kernel *kernel_fast[256]; /* by caller's text pointer, entry and constants */
    pxl_shader_module *modules;
    size_t n_modules, cap_modules;

    /* buffer pool */
    pxl_buffer *pool;
    uint64_t pool_bytes, pool_limit;

    /* staging buffers for large uploads, used in turn */
    pxl_upload_stage stages[2];
    int next_stage;

    /* staging buffer for downloads */
    WGPUBuffer staging;
    uint64_t staging_size;

    /* uniform blocks not in use by a recorder */
    pxl_uniform_block *free_uniforms;

    /* uniform slots and bind groups (bindcache.c) */
    pxl_uslot *uslots;
    uint32_t *uslot_buckets;
    uint32_t n_uslots, uslot_head, uslot_tail;
    pxl_uniform_block *uslot_blocks[PXL_USLOT_MAX * PXL_UNIFORM_MAX / PXL_UNIFORM_BLOCK_SIZE];
    pxl_bg_entry *bgs;
    uint32_t *bg_buckets;
    uint32_t n_bgs, n_bgs_live, bg_head, bg_tail, bg_free;
    uint64_t buffer_serial;
    /* serial of the open recording (0: none), and the last one given */
    uint64_t open_serial, rec_serial;
    /* recorders closed by pxl_recorder_end and not yet submitted, oldest
     * first, and the oldest one's serial (0: none) */
    pxl_recorder *ended;
    uint64_t ended_serial;

    /* timestamp queries */
    WGPUQuerySet queries;
    WGPUBuffer query_resolve, query_read;

    pxl_gpu_stats stats;

    /* the pipeline cache on disk (diskcache.c); cache_dir NULL: none */
    const char *cache_dir;
    char cache_isolation[768];
    atomic_uint_fast64_t disk_hits, disk_misses, disk_stores, disk_store_failures, disk_seq;
    /* Dawn asks for an entry twice (its size, then its bytes): the entry read
     * for the first call serves the second, so both see the same file. */
    pthread_mutex_t disk_mu;
    int disk_mu_ready;
    uint8_t *disk_memo;
    size_t disk_memo_off, disk_memo_size, disk_memo_key_size;
    uint64_t disk_memo_hash;

    /* The one open recording: the implicit stream (ops record into it while
     * no recorder of the user's is open) or the user's recorder (then ops
     * record into that one, in call order). At most one is non-NULL. */
    pxl_recorder *stream;
    pxl_recorder *user;

    /* the per-kernel profiler (profile.c); NULL while it is off */
    pxl_gpu_prof *prof;
};

#define PXL_STREAM_MAX_DISPATCHES 4096

/* ---- the profiler (profile.c) ---- */
#define PXL_PROFILE_MAX_PER_SUBMIT 2048 /* timed dispatches per recording (two queries each) */
/* The row of kernel k in the profile, made on first sight; -1 when out of memory. */
int pxl_gpu_profile_row(pxl_gpu *g, const pxl_kernel *k);
WGPUQuerySet pxl_gpu_profile_queries(pxl_gpu *g);
/* Whether the profiler is on and times whole recordings (queries 0 and 1). */
int pxl_gpu_profile_whole(pxl_gpu *g);
/* After the submit of a whole-timed recording of `dispatches` dispatches. */
pxl_status pxl_gpu_profile_collect_whole(pxl_gpu *g, uint64_t dispatches);
void pxl_gpu_profile_untimed(pxl_gpu *g);
/* Records the resolve and copy of the first n dispatches' timestamps into enc. */
void pxl_gpu_profile_resolve(pxl_gpu *g, WGPUCommandEncoder enc, uint32_t n);
/* After the submit: waits for the n timestamps and adds them to rows[i]. */
pxl_status pxl_gpu_profile_collect(pxl_gpu *g, const int *rows, uint32_t n);
void pxl_gpu_profile_release(pxl_gpu *g);
/* Submits the open stream without waiting (before queue writes and copies). */
pxl_status pxl_gpu_stream_submit(pxl_gpu *g);
/* Fails with PXL_ERR_INVALID_ARG, naming `what`, while a user recorder is open:
 * a host transfer or a submit then would run before the work recorded so far. */
pxl_status pxl_gpu_check_no_recorder(pxl_gpu *g, const char *what);

/* FNV-1a, 64-bit: start from PXL_FNV_BASIS, feed bytes (pipeline and disk cache keys). */
#define PXL_FNV_BASIS 0xcbf29ce484222325ull
static inline uint64_t pxl_fnv1a(uint64_t h, const void *data, size_t n) {
    const uint8_t *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static inline WGPUStringView pxl_sv(const char *s) {
    WGPUStringView v = {s, s ? WGPU_STRLEN : 0};
    return v;
}

/* GPU lifetime (device.c): opens ctx->gpu, or fails with it NULL; close
 * frees it (NULL: no-op). */
pxl_status pxl_gpu_open(pxl_ctx *ctx);
void pxl_gpu_close(pxl_ctx *ctx);

/* Loader (loader.c). Fills g->fn, g->lib and g->lib_path. */
pxl_status pxl_gpu_load_library(pxl_gpu *g);
void pxl_gpu_unload_library(pxl_gpu *g);

/* Waits on a future with the context's timeout; surfaces deferred errors. */
pxl_status pxl_gpu_wait(pxl_gpu *g, WGPUFuture f, const char *what);
/* Returns (and clears, unless the device is lost) a deferred error. */
pxl_status pxl_gpu_take_deferred(pxl_gpu *g);
/* Error scopes around a group of calls: push both, then pop both. */
void pxl_gpu_push_scopes(pxl_gpu *g);
pxl_status pxl_gpu_pop_scopes(pxl_gpu *g, const char *what);

/* Buffers (buffer.c). */
void pxl_gpu_buffers_release(pxl_gpu *g);
/* Kernels and shader modules (pipeline.c). */
void pxl_gpu_kernels_release(pxl_gpu *g);
void pxl_gpu_modules_release(pxl_gpu *g);
/* Where line `line` (1-based) of a WGSL text came from, by the
 * `//#line N "file"` markers that cmake/embed_wgsl.c writes at every file
 * boundary: returns 1 and sets *file (pointing into wgsl, *file_len bytes, not
 * NUL-terminated) and *file_line, or returns 0 when no marker precedes the
 * line (text that was not embedded keeps its own numbering). */
int pxl_gpu_wgsl_origin(const char *wgsl, uint64_t line, const char **file, size_t *file_len,
                        uint64_t *file_line);
/* Recorder support (recorder.c). */
void pxl_gpu_uniforms_release(pxl_gpu *g);
/* A new 64 KiB uniform block (NULL: out of memory), and its end. */
pxl_uniform_block *pxl_gpu_uniform_block_new(pxl_gpu *g);
void pxl_gpu_uniform_block_destroy(pxl_gpu *g, pxl_uniform_block *b);
/* Uniform slots (bindcache.c): the slot holding these bytes (found, or
 * filled and marked for writing), its block and offset; -1 when none can be
 * had (every slot in use by the open recording, or out of memory). */
int64_t pxl_gpu_uniform_slot(pxl_gpu *g, const void *data, size_t size, pxl_uniform_block **block,
                             uint32_t *offset);
/* Writes the slots filled since the last call (before every recorder submit). */
void pxl_gpu_uniforms_flush(pxl_gpu *g);
/* The cached bind group of kernel k with entries e[0..n) whose resources have
 * the ids ids[0..n) (buffer ids, or PXL_BG_UNIFORM_ID | slot); created on a
 * miss. Owned by the cache; NULL if it could not be made. */
WGPUBindGroup pxl_gpu_bind_group(pxl_gpu *g, const pxl_kernel *k, const WGPUBindGroupEntry *e, size_t n,
                                 const uint64_t *ids);
/* Releases the cached bind groups that bind this buffer (before it is destroyed). */
void pxl_gpu_bind_groups_forget(pxl_gpu *g, uint64_t buffer_id);
/* Releases both caches (at close). */
void pxl_gpu_bind_cache_release(pxl_gpu *g);
/* The pipeline cache on disk (diskcache.c): fills d (to chain on the device
 * descriptor before `next`) with callbacks that use g->cache_dir and
 * g->cache_isolation; 0 if it cannot (then chain nothing). release frees
 * what the callbacks kept, after the device is gone. */
int pxl_gpu_disk_cache_chain(pxl_gpu *g, DawnCacheDeviceDescriptor *d, WGPUChainedStruct *next);
void pxl_gpu_disk_cache_release(pxl_gpu *g);
/* An entry's 32-byte header, and its check (1: buf is a whole entry for
 * this key; the value is buf[*value_off .. + *value_size]). For tests too. */
void pxl_blob_header(uint8_t out[32], const void *key, size_t key_size, const void *value, size_t value_size);
int pxl_blob_parse(const uint8_t *buf, size_t len, const void *key, size_t key_size, size_t *value_off,
                   size_t *value_size);
/* Timing (timing.c). */
pxl_status pxl_gpu_timing_init(pxl_gpu *g);
void pxl_gpu_timing_release(pxl_gpu *g);
pxl_status pxl_gpu_timing_read(pxl_gpu *g, uint64_t *ns);
/* Maps `buf` for reading, waits, copies `size` bytes at 0 to dst, unmaps. */
pxl_status pxl_gpu_read_mapped(pxl_gpu *g, WGPUBuffer buf, void *dst, size_t size);

#define PXL_GPU_OR_FAIL(ctx, g)                                                            \
    pxl_gpu *g = (ctx)->gpu;                                                               \
    if (!g) return pxl_fail((ctx), PXL_ERR_UNSUPPORTED, "%s: the context has no GPU (backend is cpu)", __func__)

#endif
