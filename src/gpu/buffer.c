/*
 * Storage buffers with a per-context pool, uploads through the queue and
 * downloads through a reusable map-read staging buffer, in chunks so that
 * large transfers need bounded staging memory.
 */
#include "gpu_internal.h"

#include <string.h>

#define CHUNK (64ull << 20)

static uint64_t round_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

static void destroy(pxl_gpu *g, pxl_buffer *b) {
    g->fn.BufferDestroy(b->handle);
    g->fn.BufferRelease(b->handle);
    pxl_free(g->ctx, b);
}

pxl_status pxl_buffer_create(pxl_ctx *ctx, size_t size, pxl_buffer **out) {
    PXL_GPU_OR_FAIL(ctx, g);
    if (g->lost) return pxl_gpu_take_deferred(g);
    if ((uint64_t)size > g->limits.maxBufferSize || size > SIZE_MAX - 16)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG,
                        "buffer of %zu bytes exceeds the device's max buffer size (%llu)", size,
                        (unsigned long long)g->limits.maxBufferSize);
    uint64_t cap = round_up(size ? size : 16, 16);
    /* best fit from the pool, wasting at most 1/8 */
    pxl_buffer **best = NULL;
    for (pxl_buffer **p = &g->pool; *p; p = &(*p)->next) {
        uint64_t c = (*p)->capacity;
        if (c >= cap && c - cap <= cap / 8 && (!best || c < (*best)->capacity)) best = p;
    }
    if (best) {
        pxl_buffer *b = *best;
        *best = b->next;
        g->pool_bytes -= b->capacity;
        b->next = NULL;
        b->size = size;
        g->stats.buffer_pool_hits++;
        *out = b;
        return PXL_OK;
    }
    g->stats.buffer_pool_misses++;
    pxl_buffer *b = pxl_calloc(ctx, 1, sizeof *b);
    if (!b) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "out of memory");
    WGPUBufferDescriptor d;
    memset(&d, 0, sizeof d);
    d.label = pxl_sv("pxl buffer");
    d.usage = WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst;
    d.size = cap;
    pxl_gpu_push_scopes(g);
    b->handle = g->fn.DeviceCreateBuffer(g->device, &d);
    pxl_status s = pxl_gpu_pop_scopes(g, "creating a buffer");
    if (s != PXL_OK || !b->handle) {
        if (b->handle) g->fn.BufferRelease(b->handle);
        pxl_free(ctx, b);
        return s != PXL_OK ? s : pxl_fail(ctx, PXL_ERR_GPU, "could not create a buffer of %llu bytes",
                                          (unsigned long long)cap);
    }
    b->gpu = g;
    b->size = size;
    b->capacity = cap;
    *out = b;
    return PXL_OK;
}

void pxl_buffer_free(pxl_buffer *b) {
    if (!b) return;
    pxl_gpu *g = b->gpu;
    if (g->pool_bytes + b->capacity > g->pool_limit) {
        destroy(g, b);
        return;
    }
    b->next = g->pool;
    g->pool = b;
    g->pool_bytes += b->capacity;
}

size_t pxl_buffer_size(const pxl_buffer *b) { return b->size; }

void pxl_gpu_buffers_release(pxl_gpu *g) {
    while (g->pool) {
        pxl_buffer *b = g->pool;
        g->pool = b->next;
        destroy(g, b);
    }
    g->pool_bytes = 0;
    if (g->staging) {
        g->fn.BufferDestroy(g->staging);
        g->fn.BufferRelease(g->staging);
        g->staging = NULL;
    }
}

static pxl_status check_range(pxl_ctx *ctx, const pxl_buffer *b, size_t offset, size_t size,
                              const char *what) {
    if ((offset | size) & 3u)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: offset %zu and size %zu must be multiples of 4",
                        what, offset, size);
    uint64_t limit = round_up(b->size, 4);
    if ((uint64_t)offset > limit || (uint64_t)size > limit - offset)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG,
                        "%s: range [%zu, %zu+%zu) is outside the %zu-byte buffer", what, offset,
                        offset, size, b->size);
    return PXL_OK;
}

/*
 * Large uploads go through a buffer mapped at creation (one memcpy into
 * mapped memory, then a GPU copy): Dawn's wgpuQueueWriteBuffer moved only
 * about 1.5 GB/s on the H100 for large writes. Ordered like queue writes:
 * the copy is submitted at once, after the stream was submitted.
 */
#define STAGED_UPLOAD_MIN ((size_t)1 << 20)

static pxl_status upload_staged(pxl_gpu *g, pxl_buffer *b, size_t offset, const uint8_t *src, size_t n) {
    WGPUBufferDescriptor d;
    memset(&d, 0, sizeof d);
    d.label = pxl_sv("pxl upload");
    d.usage = WGPUBufferUsage_MapWrite | WGPUBufferUsage_CopySrc;
    d.size = round_up(n, 4);
    d.mappedAtCreation = 1;
    pxl_gpu_push_scopes(g);
    WGPUBuffer st = g->fn.DeviceCreateBuffer(g->device, &d);
    void *m = st ? g->fn.BufferGetMappedRange(st, 0, (size_t)d.size) : NULL;
    if (m) {
        memcpy(m, src, n);
        g->fn.BufferUnmap(st);
        WGPUCommandEncoder enc = g->fn.DeviceCreateCommandEncoder(g->device, NULL);
        g->fn.CommandEncoderCopyBufferToBuffer(enc, st, 0, b->handle, offset, (uint64_t)n);
        WGPUCommandBuffer cmd = g->fn.CommandEncoderFinish(enc, NULL);
        g->fn.QueueSubmit(g->queue, 1, &cmd);
        g->fn.CommandBufferRelease(cmd);
        g->fn.CommandEncoderRelease(enc);
        g->stats.submits++;
    }
    pxl_status s = pxl_gpu_pop_scopes(g, "uploading through a staging buffer");
    if (st) g->fn.BufferRelease(st); /* freed by Dawn once the copy has run */
    if (s == PXL_OK && !m) s = pxl_fail(g->ctx, PXL_ERR_GPU, "could not map a %zu-byte upload buffer", n);
    return s;
}

pxl_status pxl_buffer_upload(pxl_ctx *ctx, pxl_buffer *b, size_t offset, const void *src,
                             size_t size) {
    PXL_GPU_OR_FAIL(ctx, g);
    pxl_status s = check_range(ctx, b, offset, size, "pxl_buffer_upload");
    if (s != PXL_OK) return s;
    if (g->lost) return pxl_gpu_take_deferred(g);
    /* queue writes run before unsubmitted work: submit the stream first */
    s = pxl_gpu_stream_submit(g);
    if (s != PXL_OK) return s;
    const uint8_t *p = src;
    for (size_t done = 0; done < size;) {
        size_t n = size - done < CHUNK ? size - done : (size_t)CHUNK;
        if (n >= STAGED_UPLOAD_MIN) s = upload_staged(g, b, offset + done, p + done, n);
        else g->fn.QueueWriteBuffer(g->queue, b->handle, offset + done, p + done, n);
        if (s != PXL_OK) return s;
        done += n;
    }
    return pxl_gpu_take_deferred(g);
}

typedef struct {
    WGPUMapAsyncStatus status;
    char message[256];
} map_result;

static void on_map(WGPUMapAsyncStatus status, WGPUStringView msg, void *u1, void *u2) {
    (void)u2;
    map_result *r = u1;
    r->status = status;
    size_t n = msg.data ? (msg.length == WGPU_STRLEN ? strlen(msg.data) : msg.length) : 0;
    if (n >= sizeof r->message) n = sizeof r->message - 1;
    if (n) memcpy(r->message, msg.data, n);
    r->message[n] = '\0';
}

pxl_status pxl_gpu_read_mapped(pxl_gpu *g, WGPUBuffer buf, void *dst, size_t size) {
    map_result r;
    memset(&r, 0, sizeof r);
    WGPUBufferMapCallbackInfo cb = {NULL, WGPUCallbackMode_WaitAnyOnly, on_map, &r, NULL};
    WGPUFuture f = g->fn.BufferMapAsync(buf, WGPUMapMode_Read, 0, size, cb);
    pxl_status s = pxl_gpu_wait(g, f, "mapping a buffer for reading");
    if (s != PXL_OK) return s;
    if (r.status != PXL_WGPU_SUCCESS) {
        s = pxl_gpu_take_deferred(g);
        if (s != PXL_OK) return s;
        return pxl_fail(g->ctx, PXL_ERR_GPU, "mapping a buffer for reading failed: %s", r.message);
    }
    const void *m = g->fn.BufferGetConstMappedRange(buf, 0, size);
    if (!m) {
        g->fn.BufferUnmap(buf);
        return pxl_fail(g->ctx, PXL_ERR_GPU, "mapped range of %zu bytes unavailable", size);
    }
    memcpy(dst, m, size);
    g->fn.BufferUnmap(buf);
    return PXL_OK;
}

static pxl_status ensure_staging(pxl_gpu *g, uint64_t size) {
    if (g->staging && g->staging_size >= size) return PXL_OK;
    if (g->staging) {
        g->fn.BufferDestroy(g->staging);
        g->fn.BufferRelease(g->staging);
        g->staging = NULL;
    }
    WGPUBufferDescriptor d;
    memset(&d, 0, sizeof d);
    d.label = pxl_sv("pxl staging");
    d.usage = WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst;
    d.size = size;
    pxl_gpu_push_scopes(g);
    g->staging = g->fn.DeviceCreateBuffer(g->device, &d);
    pxl_status s = pxl_gpu_pop_scopes(g, "creating a staging buffer");
    if (s != PXL_OK) {
        if (g->staging) g->fn.BufferRelease(g->staging);
        g->staging = NULL;
        return s;
    }
    g->staging_size = size;
    return PXL_OK;
}

pxl_status pxl_buffer_download(pxl_ctx *ctx, pxl_buffer *b, size_t offset, void *dst, size_t size) {
    PXL_GPU_OR_FAIL(ctx, g);
    pxl_status s = check_range(ctx, b, offset, size, "pxl_buffer_download");
    if (s != PXL_OK) return s;
    if (g->lost) return pxl_gpu_take_deferred(g);
    s = pxl_gpu_stream_submit(g);
    if (s != PXL_OK) return s;
    if (size == 0) return pxl_gpu_take_deferred(g);
    uint64_t stage = size < CHUNK ? round_up(size, 16) : CHUNK;
    s = ensure_staging(g, stage);
    if (s != PXL_OK) return s;
    uint8_t *p = dst;
    for (size_t done = 0; done < size;) {
        size_t n = size - done < CHUNK ? size - done : (size_t)CHUNK;
        WGPUCommandEncoder enc = g->fn.DeviceCreateCommandEncoder(g->device, NULL);
        g->fn.CommandEncoderCopyBufferToBuffer(enc, b->handle, offset + done, g->staging, 0, n);
        WGPUCommandBuffer cmd = g->fn.CommandEncoderFinish(enc, NULL);
        g->fn.QueueSubmit(g->queue, 1, &cmd);
        g->fn.CommandBufferRelease(cmd);
        g->fn.CommandEncoderRelease(enc);
        g->stats.submits++;
        s = pxl_gpu_read_mapped(g, g->staging, p + done, n);
        if (s != PXL_OK) return s;
        done += n;
    }
    return pxl_gpu_take_deferred(g);
}
