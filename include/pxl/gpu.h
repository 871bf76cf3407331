/*
 * pxl/gpu.h: the WebGPU runtime: device facts, buffers, cached compute
 * kernels, a recorder that batches many dispatches into one submit, and GPU
 * timing.
 *
 * Everything here needs a context whose backend is PXL_BACKEND_GPU; calling it
 * on a CPU context returns PXL_ERR_UNSUPPORTED. No webgpu.h type appears in
 * this header: products (ops, the VM, autodiff) bring WGSL text and buffers,
 * and src/gpu/ does the rest.
 *
 * Errors: WebGPU validation and out-of-memory errors raised by a call are
 * turned into PXL_ERR_GPU with Dawn's message; errors raised later (uncaptured)
 * and device loss are recorded on the context and returned by the next call
 * that waits on the GPU. After PXL_ERR_DEVICE_LOST every GPU call fails.
 */
#ifndef PXL_GPU_H
#define PXL_GPU_H

#include "pxl/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Loader and adapter ------------------------------------------------ */

/* A cooperative-matrix (subgroup matrix) shape the adapter offers. Component
 * types: 1 f32, 2 f16, 3 u32, 4 i32, 5 u8, 6 i8. */
typedef struct pxl_gpu_matrix_config {
    uint32_t component, result;
    uint32_t m, n, k;
} pxl_gpu_matrix_config;

/* Description of the adapter in use; strings are owned by the context. */
typedef struct pxl_gpu_info {
    const char *library_path;  /* the WebGPU library that was loaded */
    const char *adapter_name;  /* e.g. "llvmpipe (LLVM 15.0.6, 256 bits)" */
    const char *description;   /* driver description, may be "" */
    const char *vendor;        /* may be "" */
    const char *architecture;  /* may be "" */
    const char *backend;       /* "Vulkan", "OpenGL ES", "Metal", ... */
    const char *adapter_type;  /* "discrete GPU", "integrated GPU", "CPU", "unknown" */
    const char *feature_level; /* "core" or "compatibility" */
    const char *cache_dir;     /* the pipeline cache on disk, or NULL (see pxl_ctx_options) */
    uint32_t vendor_id, device_id;
    uint32_t subgroup_min_size, subgroup_max_size;
    int has_f16, has_subgroups, has_timestamps;
    uint64_t max_buffer_size;
    uint64_t max_storage_binding_size;
    uint32_t max_storage_buffers_per_stage;
    uint32_t max_workgroup_storage_size;
    uint32_t max_invocations_per_workgroup;
    uint32_t max_workgroup_size[3];
    uint32_t max_workgroups_per_dimension;
    uint32_t min_storage_offset_alignment;
    uint32_t min_uniform_offset_alignment;
    uint64_t max_uniform_binding_size;
    /* the adapter's device-local memory heaps together (Dawn's
     * adapter-properties-memory-heaps, offered on Vulkan and D3D12); 0: unknown
     * (OpenGL ES, Metal, other libraries) */
    uint64_t device_memory_bytes;
    size_t feature_count;       /* the adapter's features */
    const uint32_t *features;   /* raw WGPUFeatureName values */
    size_t matrix_config_count; /* subgroup-matrix shapes (Dawn's experimental feature, */
    const pxl_gpu_matrix_config *matrix_configs; /* visible with dawn_toggles "allow_unsafe_apis") */
    int unchecked;              /* 1: the kernels run without Dawn's bounds checks
                                 * (pxl_ctx_options.gpu_unchecked) */
} pxl_gpu_info;

/* NULL unless the context's backend is GPU. Valid for the context's lifetime. */
PXL_API const pxl_gpu_info *pxl_gpu_get_info(const pxl_ctx *ctx);

/* Name of a WebGPU feature value ("shader-f16"), or NULL if pxl does not know it. */
PXL_API const char *pxl_gpu_feature_name(uint32_t feature);

/* ---- Buffers ------------------------------------------------------------ */

typedef struct pxl_buffer pxl_buffer;

/*
 * A storage buffer of at least `size` bytes (usable as copy source and
 * destination). The allocation is rounded up to 16 bytes, plus
 * PXL_BUFFER_TAIL bytes where the device's max buffer size allows; bytes
 * past `size` are unspecified. The ops bind each input PXL_BUFFER_TAIL bytes
 * past its end there, so that a kernel's read of the 16-byte word after an
 * input's last byte (block formats on 2-byte offsets read whole words) stays
 * inside its binding, with or without Dawn's bounds checks
 * (pxl_ctx_options.gpu_unchecked). Buffers come from a per-context pool, so
 * create/free in a loop is cheap. size 0 is allowed (a 16-byte allocation).
 * Fails with PXL_ERR_INVALID_ARG above the device's max buffer size.
 */
#define PXL_BUFFER_TAIL 16
PXL_API pxl_status pxl_buffer_create(pxl_ctx *ctx, size_t size, pxl_buffer **out);
/* Returns the buffer to the pool. NULL is a no-op. The buffer must not be in
 * use by an unsubmitted recorder. */
PXL_API void pxl_buffer_free(pxl_buffer *buf);
PXL_API size_t pxl_buffer_size(const pxl_buffer *buf);

/* Writes host bytes at offset. offset and size must be multiples of 4.
 * Fails while a recorder is open (see "Queue order" below). */
PXL_API pxl_status pxl_buffer_upload(pxl_ctx *ctx, pxl_buffer *buf, size_t offset, const void *src,
                             size_t size);
/* Reads bytes at offset into host memory, waiting for earlier GPU work.
 * offset and size must be multiples of 4. Fails while a recorder is open. */
PXL_API pxl_status pxl_buffer_download(pxl_ctx *ctx, pxl_buffer *buf, size_t offset, void *dst,
                               size_t size);

/*
 * Read-back buffers, for results that the host reads while the GPU goes on
 * with later work (e.g. each decoded token's id while the next token's pass
 * runs). A read-back buffer takes only pxl_recorder_copy into it (as dst)
 * and pxl_buffer_read_back; binding it to a dispatch, copying from it,
 * clearing, uploading or downloading it fail with PXL_ERR_INVALID_ARG. It is
 * not pooled: pxl_buffer_free destroys it. size as for pxl_buffer_create.
 */
PXL_API pxl_status pxl_buffer_create_readback(pxl_ctx *ctx, size_t size, pxl_buffer **out);
/*
 * Reads `size` bytes at `offset` (multiples of 4) of a read-back buffer as
 * the GPU work submitted so far left them: waits for the submitted work
 * that uses the buffer and for nothing else, submits nothing (work recorded
 * but not submitted, the stream's included, is not waited for), and is
 * allowed while a recorder is open. The buffer must not be in work
 * submitted meanwhile from another thread.
 */
PXL_API pxl_status pxl_buffer_read_back(pxl_ctx *ctx, pxl_buffer *buf, size_t offset, void *dst, size_t size);
/*
 * pxl_buffer_read_back without the copy: waits as it does, then maps the
 * range and points *out at its bytes (read-only), valid until
 * pxl_buffer_unmap or pxl_buffer_free. While it is mapped, no work that
 * copies into the buffer may be submitted (WebGPU refuses the submit) and
 * it cannot be mapped again (nor read with pxl_buffer_read_back). Fails with
 * PXL_ERR_INVALID_ARG for a buffer that is not a read-back buffer or is
 * mapped already, and for size 0.
 */
PXL_API pxl_status pxl_buffer_map_read(pxl_ctx *ctx, pxl_buffer *buf, size_t offset, size_t size, const void **out);
/* Ends pxl_buffer_map_read's mapping; a no-op for a buffer that is not mapped (or NULL). */
PXL_API void pxl_buffer_unmap(pxl_ctx *ctx, pxl_buffer *buf);

/* One range of a batched download. */
typedef struct pxl_download {
    pxl_buffer *buf;
    size_t offset, size; /* multiples of 4 */
    void *dst;
} pxl_download;
/*
 * Reads several ranges (of one or more buffers) with one GPU round trip
 * where they fit one staging buffer together (64 MiB), else range by range.
 * Checks every range before reading any; on failure the destinations are
 * unspecified. Fails while a recorder is open.
 */
PXL_API pxl_status pxl_buffer_download_many(pxl_ctx *ctx, const pxl_download *ranges, size_t n);

/* ---- Kernels (compute pipelines) ---------------------------------------- */

typedef struct pxl_kernel pxl_kernel;

/* An override constant for a pipeline ("WG" = 256). */
typedef struct pxl_constant {
    const char *name;
    double value;
} pxl_constant;

/*
 * Compiles `wgsl` and builds the compute pipeline for `entry` with the given
 * override constants, or returns the cached one: pipelines are cached by
 * (WGSL text, entry point, constants) and owned by the context (never freed
 * by the caller). `label` names the source in messages ("dot.wgsl"). On a
 * compile error returns PXL_ERR_SHADER with every compiler message as
 * "label:line:col: error: text".
 *
 * The cache keeps at most pxl_ctx_options.kernel_cache_max kernels (default
 * 1024), evicting the least recently got one that the open recording has
 * not dispatched. So a handle stays valid until that many other distinct
 * kernels have been got after it, and always while a recording that
 * dispatched it is open. A caller that keeps handles across unrelated work
 * gets them again (a cache hit costs a comparison of the text).
 */
PXL_API pxl_status pxl_kernel_get(pxl_ctx *ctx, const char *label, const char *wgsl, const char *entry,
                          const pxl_constant *constants, size_t n_constants, pxl_kernel **out);
/*
 * pxl_kernel_get for WGSL text, entry name and constant names that never
 * change while the context lives (string literals, an embedded .wgsl file):
 * a call with pointers seen before skips reading the strings, the cost of
 * every op call. Passing a string that later changes at the same address
 * gives the old pipeline.
 */
PXL_API pxl_status pxl_kernel_get_static(pxl_ctx *ctx, const char *label, const char *wgsl, const char *entry,
                                         const pxl_constant *constants, size_t n_constants, pxl_kernel **out);

typedef struct pxl_gpu_stats {
    uint64_t pipeline_cache_hits, pipeline_cache_misses; /* in this context */
    /* the pipeline cache on disk: entries Dawn found, did not find, stored,
     * failed to store */
    uint64_t disk_cache_hits, disk_cache_misses, disk_cache_stores, disk_cache_store_failures;
    /* time spent creating shader modules (WGSL parsed and checked) and
     * compute pipelines (translated and compiled, or found in a cache) */
    uint64_t shader_module_ns, pipeline_ns;
    uint64_t buffer_pool_hits, buffer_pool_misses;
    uint64_t submits, dispatches;
    uint64_t pipeline_cache_evictions;        /* kernels freed by the cache bound */
    uint64_t bind_group_hits, bind_group_misses; /* dispatches that found / created their bind group */
    uint64_t uniform_slot_hits, uniform_slot_misses; /* parameter blocks found / written anew */
    /* host time: inside submits (finishing, submitting, and where a
     * recording has error scopes their results), and waiting on the GPU
     * (every wait: read-backs, finishes, the scopes' results; so the two
     * overlap where a submit waits) */
    uint64_t submit_ns, wait_ns;
} pxl_gpu_stats;
PXL_API pxl_gpu_stats pxl_gpu_get_stats(const pxl_ctx *ctx);

/* ---- Profiling ------------------------------------------------------------ */

/* One kernel's share of the GPU time measured by the profiler. */
typedef struct pxl_gpu_profile_entry {
    char kernel[112];    /* "label:entry" and its override constants, e.g. "kquant.wgsl:kmv KQ6=1 NCOL=1" */
    uint64_t dispatches; /* timed dispatches of this kernel */
    uint64_t gpu_ns;     /* their summed GPU time (each from its pass's start to its end timestamp) */
} pxl_gpu_profile_entry;

/* What the profiler times; zero-initialised: every dispatch. */
typedef struct pxl_gpu_profile_options {
    /* 1: time each submitted recording as a whole (one row, "submitted
     * recordings", whose dispatches are the recordings' dispatches): the GPU
     * time of the work as it runs unprofiled, without the gaps between
     * submits. 0: every dispatch, per kernel. */
    int whole_submits;
} pxl_gpu_profile_options;

/*
 * Starts timing the context's GPU work (opts may be NULL: per dispatch).
 * Per dispatch, each dispatch is recorded in a compute pass of its own with
 * timestamp writes at its start and end, and every submit resolves the
 * timestamps and waits for them. So that profile shows where GPU time goes,
 * not how fast the work runs unprofiled (passes split, the host waits at each
 * submit); whole_submits measures that. At most 2048 dispatches of one submit
 * are timed; the rest are counted as untimed. Copies, clears and uploads are
 * not timed per dispatch. Restarting clears the figures. Fails with
 * PXL_ERR_UNSUPPORTED when the device has no timestamp queries, and on a CPU
 * context.
 */
PXL_API pxl_status pxl_gpu_profile_begin(pxl_ctx *ctx, const pxl_gpu_profile_options *opts);
/*
 * Stops profiling (submitting and reading back what is still open) and
 * copies up to `cap` entries into `entries`, slowest kernel first; *n_entries
 * gets the number of distinct kernels (which may exceed cap), *untimed (may
 * be NULL) the dispatches that were not timed. Fails with PXL_ERR_INVALID_ARG
 * when profiling was not started or a user recorder is open.
 */
PXL_API pxl_status pxl_gpu_profile_end(pxl_ctx *ctx, pxl_gpu_profile_entry *entries, size_t cap,
                                       size_t *n_entries, uint64_t *untimed);

/* ---- Recording ---------------------------------------------------------- */

/* One storage-buffer binding of a dispatch: @group(0) @binding(binding). */
typedef struct pxl_binding {
    uint32_t binding;
    pxl_buffer *buffer;
    uint64_t offset; /* multiple of the device's min storage offset alignment */
    uint64_t size;   /* 0: from offset to the end of the buffer */
} pxl_binding;

typedef struct pxl_dispatch {
    pxl_kernel *kernel;
    const pxl_binding *bindings;
    size_t n_bindings;
    /* Optional uniform block bound at @group(0) @binding(uniform_binding). */
    const void *uniforms;
    size_t uniforms_size; /* 0: none; at most 256 bytes */
    uint32_t uniform_binding;
    uint32_t groups[3]; /* workgroup counts; 0 entries are treated as 1 */
} pxl_dispatch;

typedef struct pxl_recorder pxl_recorder;

/*
 * Queue order. A context has at most one open recording at a time, and all
 * GPU work runs in the order it was asked for:
 *  - While no recorder of the caller's is open, ops (pxl/ops.h) record into
 *    the context's stream (pxl_gpu_stream), which uploads, downloads,
 *    pxl_gpu_flush, pxl_gpu_finish and pxl_recorder_begin submit first.
 *  - pxl_recorder_begin opens the caller's recorder. Until it is submitted or
 *    discarded, pxl_gpu_stream returns it, so ops called in between record
 *    into it between the caller's own dispatches and copies, in call order.
 *  - While it is open, calls that would run ahead of the recorded work fail
 *    with PXL_ERR_INVALID_ARG ("... a recorder is open: submit or discard it
 *    first") and change nothing: pxl_buffer_upload, pxl_buffer_download,
 *    pxl_buffer_download_many, pxl_gpu_flush, pxl_gpu_finish,
 *    pxl_gpu_stream_begin_timed, and a second pxl_recorder_begin.
 *  - pxl_recorder_end closes a recorder without submitting it: the work is
 *    recorded ahead and runs when pxl_recorder_submit is called, after
 *    everything asked for until then (uploads, downloads, ops through the
 *    stream, other recorders). Meanwhile it holds its buffers as they are
 *    when it runs: the caller keeps them alive and unchanged except as it
 *    means the recorded work to see (e.g. an upload of its input).
 */

/*
 * Starts recording (submitting the stream first). Fails with
 * PXL_ERR_INVALID_ARG if a recorder is already open on the context.
 * Dispatches, copies and clears recorded into one recorder, and ops called
 * while it is open, execute in order, in one command buffer, with one queue
 * submit. flags: 0, or these or'ed:
 *   PXL_RECORDER_TIMED       GPU timestamps around the whole recording
 *                            (ignored when the device has no timestamp
 *                            queries; see pxl_recorder_submit);
 *   PXL_RECORDER_UNCHECKED   no WebGPU error scopes around the recording:
 *                            its validation errors are reported by the
 *                            submit or the next wait through the
 *                            uncaptured-error handler, as the stream's are
 *                            (popping the scopes costs about 50 us of host
 *                            time on an H100).
 * The recorder is owned by the caller until pxl_recorder_submit or
 * pxl_recorder_discard; pxl_ctx_free discards one still open (its handle is
 * then invalid).
 */
#define PXL_RECORDER_TIMED 1
#define PXL_RECORDER_UNCHECKED 2
PXL_API pxl_status pxl_recorder_begin(pxl_ctx *ctx, int flags, pxl_recorder **out);
/* Records a dispatch. The first error of a recording is also returned by
 * pxl_recorder_submit. */
PXL_API pxl_status pxl_recorder_dispatch(pxl_recorder *rec, const pxl_dispatch *d);
/* Records a buffer-to-buffer copy; offsets and size are multiples of 4. */
PXL_API pxl_status pxl_recorder_copy(pxl_recorder *rec, pxl_buffer *src, size_t src_offset,
                             pxl_buffer *dst, size_t dst_offset, size_t size);
/* Records zeroing `size` bytes of `buf` at `offset` (both multiples of 4;
 * size 0 records nothing), e.g. gradient accumulators before a backward pass. */
PXL_API pxl_status pxl_recorder_clear(pxl_recorder *rec, pxl_buffer *buf, size_t offset, size_t size);
/*
 * Closes the recording without submitting it, so that its work can be
 * recorded while the GPU runs earlier work and submitted later in one call
 * (pxl_recorder_submit; pxl_recorder_discard drops it). Afterwards the
 * context has no open recorder: ops go to the stream again, transfers are
 * allowed, and all of them run before this recording (see "Queue order").
 * The recorder takes no more dispatches, copies, clears or scratch
 * (PXL_ERR_INVALID_ARG). Returns the recording's first error, if any (the
 * submit returns it again); PXL_ERR_INVALID_ARG for the stream or a
 * recorder already ended. pxl_ctx_free discards ended recorders never
 * submitted (their handles are then invalid).
 */
PXL_API pxl_status pxl_recorder_end(pxl_recorder *rec);
/*
 * Submits and frees the recorder (also on error). If wait is 1, returns after
 * the GPU finished (and reports deferred errors). If gpu_ns is non-NULL and
 * the recording was timed on a device with timestamps, it receives the GPU
 * time in nanoseconds (this implies waiting); otherwise it receives 0. A
 * recorder closed by pxl_recorder_end is submitted after the stream (the
 * ops asked for since its end run first); its recording errors, if any, are
 * returned again and nothing of it runs.
 */
PXL_API pxl_status pxl_recorder_submit(pxl_recorder *rec, int wait, uint64_t *gpu_ns);
/*
 * A temporary buffer of at least `size` bytes that lives until the recording
 * is submitted or discarded (then it returns to the pool). For scratch space
 * of ops recorded into `rec`. Owned by the recorder.
 */
PXL_API pxl_status pxl_recorder_scratch(pxl_recorder *rec, size_t size, pxl_buffer **out);
/* The context a recorder records for. */
PXL_API pxl_ctx *pxl_recorder_ctx(const pxl_recorder *rec);
/* Drops a recording without submitting it: nothing recorded into it runs,
 * including the ops called while it was open. NULL is a no-op. */
PXL_API void pxl_recorder_discard(pxl_recorder *rec);

/* Waits until all submitted GPU work is done (submits the stream first).
 * Fails while a recorder is open (see "Queue order"). */
PXL_API pxl_status pxl_gpu_finish(pxl_ctx *ctx);

/*
 * Where ops record: the caller's recorder while one is open, else the
 * context's stream, one recorder begun on first use and submitted by
 * pxl_gpu_flush(), by any upload or download, by pxl_recorder_begin(), or
 * when it holds more than 4096 dispatches (the caller's recorder is never
 * submitted behind the caller's back). Never submit or discard the stream:
 * it is owned by the context.
 */
PXL_API pxl_status pxl_gpu_stream(pxl_ctx *ctx, pxl_recorder **out);
/* Submits the stream if one is open. wait = 1 waits for the GPU. If gpu_ns is
 * non-NULL and the stream was begun timed, it receives its GPU time (waits).
 * Fails while a recorder is open. */
PXL_API pxl_status pxl_gpu_flush(pxl_ctx *ctx, int wait, uint64_t *gpu_ns);
/* Flushes, then begins a stream with timestamps (for benchmarks). Fails
 * while a recorder is open. */
PXL_API pxl_status pxl_gpu_stream_begin_timed(pxl_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif /* PXL_GPU_H */
