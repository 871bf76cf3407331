/*
 * Storage buffers with a per-context pool, uploads through the queue and
 * downloads through a reusable map-read staging buffer, in chunks so that
 * large transfers need bounded staging memory.
 */
#include "gpu_internal.h"

#include <string.h>

#define CHUNK (64ull << 20)

static uint64_t round_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

static void stage_destroy(pxl_gpu *g, pxl_upload_stage *u);

static void destroy(pxl_gpu *g, pxl_buffer *b) {
    pxl_gpu_bind_groups_forget(g, b->id);
    g->fn.BufferDestroy(b->handle);
    g->fn.BufferRelease(b->handle);
    pxl_free(g->ctx, b);
}

/* A new GPU buffer of cap bytes for a request of size: a storage buffer
 * (copy source and destination), or with readback a map-read one that
 * copies go into. */
static pxl_status new_buffer(pxl_gpu *g, size_t size, uint64_t cap, int readback, pxl_buffer **out) {
    pxl_ctx *ctx = g->ctx;
    pxl_buffer *b = pxl_calloc(ctx, 1, sizeof *b);
    if (!b) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "out of memory");
    const char *what = readback ? "read-back buffer" : "buffer";
    WGPUBufferDescriptor d;
    memset(&d, 0, sizeof d);
    d.label = pxl_sv(readback ? "pxl read-back buffer" : "pxl buffer");
    d.usage = readback ? WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst
                       : WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst;
    d.size = cap;
    pxl_gpu_push_scopes(g);
    b->handle = g->fn.DeviceCreateBuffer(g->device, &d);
    pxl_status s = pxl_gpu_pop_scopes(g, readback ? "creating a read-back buffer" : "creating a buffer");
    if (s != PXL_OK || !b->handle) {
        if (b->handle) g->fn.BufferRelease(b->handle);
        pxl_free(ctx, b);
        return s != PXL_OK ? s : pxl_fail(ctx, PXL_ERR_GPU, "could not create a %s of %llu bytes", what,
                                          (unsigned long long)cap);
    }
    b->gpu = g;
    b->id = ++g->buffer_serial;
    b->size = size;
    b->capacity = cap;
    b->readback = readback;
    *out = b;
    return PXL_OK;
}

/* Fails (what: "buffer" or "read-back buffer") where size exceeds the
 * device's largest buffer or cannot be rounded up to 16 bytes. */
static pxl_status check_size(pxl_gpu *g, size_t size, const char *what) {
    if ((uint64_t)size > g->limits.maxBufferSize || size > SIZE_MAX - 16)
        return pxl_fail(g->ctx, PXL_ERR_INVALID_ARG, "%s of %zu bytes exceeds the device's max buffer size (%llu)",
                        what, size, (unsigned long long)g->limits.maxBufferSize);
    return PXL_OK;
}

pxl_status pxl_buffer_create(pxl_ctx *ctx, size_t size, pxl_buffer **out) {
    PXL_GPU_OR_FAIL(ctx, g);
    if (g->lost) return pxl_gpu_take_deferred(g);
    pxl_status s = check_size(g, size, "buffer");
    if (s != PXL_OK) return s;
    uint64_t cap = round_up(size ? size : 16, 16);
    if (cap + PXL_BUFFER_TAIL <= g->limits.maxBufferSize) cap += PXL_BUFFER_TAIL; /* see pxl_buffer_create */
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
    return new_buffer(g, size, cap, 0, out);
}

pxl_status pxl_buffer_create_readback(pxl_ctx *ctx, size_t size, pxl_buffer **out) {
    PXL_GPU_OR_FAIL(ctx, g);
    if (g->lost) return pxl_gpu_take_deferred(g);
    pxl_status s = check_size(g, size, "read-back buffer");
    if (s != PXL_OK) return s;
    return new_buffer(g, size, round_up(size ? size : 16, 16), 1, out);
}

void pxl_buffer_free(pxl_buffer *b) {
    if (!b) return;
    pxl_gpu *g = b->gpu;
    if (b->readback || g->pool_bytes + b->capacity > g->pool_limit) {
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
    stage_destroy(g, &g->stages[0]);
    stage_destroy(g, &g->stages[1]);
    if (g->staging) {
        g->fn.BufferDestroy(g->staging);
        g->fn.BufferRelease(g->staging);
        g->staging = NULL;
    }
}

/* readback: the caller is pxl_buffer_read_back, which takes read-back
 * buffers only; every other caller takes the others only. */
static pxl_status check_range(pxl_ctx *ctx, const pxl_buffer *b, size_t offset, size_t size, const char *what,
                              int readback) {
    if (b->readback && !readback)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: a read-back buffer (read it with pxl_buffer_read_back)", what);
    if (!b->readback && readback)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: not a read-back buffer (pxl_buffer_create_readback)", what);
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
 * Large uploads go through two persistent map-write staging buffers used in
 * turn (one memcpy into mapped memory, then a GPU copy): Dawn's
 * wgpuQueueWriteBuffer moved only about 1.5 GB/s on the H100 for large
 * writes, and a staging buffer created per upload (host memory the driver
 * pins) cost about as much again. After its copy is submitted a stage is
 * mapped again asynchronously; the next upload through it waits for that, so
 * filling one stage overlaps the GPU copy out of the other. Ordered like
 * queue writes: each copy is submitted at once, after the stream.
 */
#define STAGED_UPLOAD_MIN ((size_t)1 << 20)
/* 4 MiB: on the H100, stages of 1 to 16 MiB moved 8.4 MB equally fast */
#define UPLOAD_STAGE_MAX ((uint64_t)4 << 20)

static void on_stage_map(WGPUMapAsyncStatus status, WGPUStringView msg, void *u1, void *u2) {
    (void)msg;
    (void)u2;
    ((pxl_upload_stage *)u1)->map_status = status;
}

/* Waits for a stage's pending map. */
static pxl_status stage_settle(pxl_gpu *g, pxl_upload_stage *u) {
    if (!u->pending) return PXL_OK;
    u->pending = 0;
    pxl_status s = pxl_gpu_wait(g, u->future, "mapping an upload buffer");
    if (s == PXL_OK && u->map_status != PXL_WGPU_SUCCESS)
        s = pxl_fail(g->ctx, PXL_ERR_GPU, "mapping an upload buffer failed (status %u)", u->map_status);
    if (s == PXL_OK) u->mapped = 1;
    return s;
}

static void stage_destroy(pxl_gpu *g, pxl_upload_stage *u) {
    if (u->pending) {
        /* the callback points into u: let it run before u is reused */
        pxl_status s = pxl_gpu_wait(g, u->future, "mapping an upload buffer");
        (void)s; /* the stage goes either way */
        u->pending = 0;
    }
    if (u->handle) {
        g->fn.BufferDestroy(u->handle);
        g->fn.BufferRelease(u->handle);
    }
    memset(u, 0, sizeof *u);
}

/* A mapped stage of at least `size` bytes. */
static pxl_status stage_get(pxl_gpu *g, uint64_t size, pxl_upload_stage **out) {
    pxl_upload_stage *u = &g->stages[g->next_stage];
    g->next_stage ^= 1;
    pxl_status s = stage_settle(g, u);
    if (s != PXL_OK) {
        stage_destroy(g, u);
        return s;
    }
    if (u->handle && u->size >= size && u->mapped) {
        *out = u;
        return PXL_OK;
    }
    stage_destroy(g, u);
    WGPUBufferDescriptor d;
    memset(&d, 0, sizeof d);
    d.label = pxl_sv("pxl upload");
    d.usage = WGPUBufferUsage_MapWrite | WGPUBufferUsage_CopySrc;
    d.size = round_up(size, (uint64_t)1 << 20); /* size <= UPLOAD_STAGE_MAX, a multiple of 1 MiB */
    d.mappedAtCreation = 1;
    pxl_gpu_push_scopes(g);
    u->handle = g->fn.DeviceCreateBuffer(g->device, &d);
    s = pxl_gpu_pop_scopes(g, "creating an upload buffer");
    if (s != PXL_OK || !u->handle) {
        stage_destroy(g, u);
        return s != PXL_OK ? s : pxl_fail(g->ctx, PXL_ERR_GPU, "could not create a %llu-byte upload buffer",
                                          (unsigned long long)d.size);
    }
    u->size = d.size;
    u->mapped = 1;
    *out = u;
    return PXL_OK;
}

static pxl_status upload_staged(pxl_gpu *g, pxl_buffer *b, size_t offset, const uint8_t *src, size_t n) {
    for (size_t done = 0; done < n;) {
        size_t piece = n - done < UPLOAD_STAGE_MAX ? n - done : (size_t)UPLOAD_STAGE_MAX;
        pxl_upload_stage *u = NULL;
        pxl_status s = stage_get(g, round_up(piece, 4), &u);
        if (s != PXL_OK) return s;
        void *m = g->fn.BufferGetMappedRange(u->handle, 0, (size_t)round_up(piece, 4));
        if (!m) {
            stage_destroy(g, u);
            return pxl_fail(g->ctx, PXL_ERR_GPU, "could not map a %zu-byte upload buffer", piece);
        }
        memcpy(m, src + done, piece);
        g->fn.BufferUnmap(u->handle);
        u->mapped = 0;
        pxl_gpu_push_scopes(g);
        WGPUCommandEncoder enc = g->fn.DeviceCreateCommandEncoder(g->device, NULL);
        g->fn.CommandEncoderCopyBufferToBuffer(enc, u->handle, 0, b->handle, offset + done, (uint64_t)piece);
        WGPUCommandBuffer cmd = g->fn.CommandEncoderFinish(enc, NULL);
        g->fn.QueueSubmit(g->queue, 1, &cmd);
        g->fn.CommandBufferRelease(cmd);
        g->fn.CommandEncoderRelease(enc);
        g->stats.submits++;
        /* map it again behind the copy: the next use waits for it */
        WGPUBufferMapCallbackInfo cb = {NULL, WGPUCallbackMode_WaitAnyOnly, on_stage_map, u, NULL};
        u->map_status = 0;
        u->future = g->fn.BufferMapAsync(u->handle, WGPUMapMode_Write, 0, (size_t)u->size, cb);
        u->pending = 1;
        s = pxl_gpu_pop_scopes(g, "uploading through a staging buffer");
        if (s != PXL_OK) return s;
        done += piece;
    }
    return PXL_OK;
}

pxl_status pxl_buffer_upload(pxl_ctx *ctx, pxl_buffer *b, size_t offset, const void *src,
                             size_t size) {
    PXL_GPU_OR_FAIL(ctx, g);
    pxl_status s = check_range(ctx, b, offset, size, "pxl_buffer_upload", 0);
    if (s == PXL_OK) s = pxl_gpu_check_no_recorder(g, "pxl_buffer_upload");
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

/* Maps [offset, offset + size) of read-back buffer b (size > 0, checked)
 * after the submitted work that uses it; *out points at its first byte. */
static pxl_status map_range(pxl_ctx *ctx, pxl_gpu *g, pxl_buffer *b, size_t offset, size_t size, const char *what,
                            const void **out) {
    if (b->mapped) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: the buffer is mapped (pxl_buffer_unmap first)", what);
    /* the map covers 8-byte-aligned whole words around the range (WebGPU's rule for offsets) */
    size_t lo = offset & ~(size_t)7, hi = (size_t)round_up(offset + size, 4);
    map_result r;
    memset(&r, 0, sizeof r);
    WGPUBufferMapCallbackInfo cb = {NULL, WGPUCallbackMode_WaitAnyOnly, on_map, &r, NULL};
    WGPUFuture f = g->fn.BufferMapAsync(b->handle, WGPUMapMode_Read, lo, hi - lo, cb);
    pxl_status s = pxl_gpu_wait(g, f, "mapping a read-back buffer");
    if (s != PXL_OK) return s;
    if (r.status != PXL_WGPU_SUCCESS) {
        s = pxl_gpu_take_deferred(g);
        return s != PXL_OK ? s : pxl_fail(ctx, PXL_ERR_GPU, "mapping a read-back buffer failed: %s", r.message);
    }
    const uint8_t *m = g->fn.BufferGetConstMappedRange(b->handle, lo, hi - lo);
    if (!m) {
        g->fn.BufferUnmap(b->handle);
        return pxl_fail(ctx, PXL_ERR_GPU, "mapped range of %zu bytes unavailable", hi - lo);
    }
    b->mapped = 1;
    *out = m + (offset - lo);
    return PXL_OK;
}

pxl_status pxl_buffer_read_back(pxl_ctx *ctx, pxl_buffer *b, size_t offset, void *dst, size_t size) {
    PXL_GPU_OR_FAIL(ctx, g);
    PXL_REQUIRE(ctx, "pxl_buffer_read_back", b);
    pxl_status s = check_range(ctx, b, offset, size, "pxl_buffer_read_back", 1);
    if (s != PXL_OK) return s;
    if (g->lost) return pxl_gpu_take_deferred(g);
    if (size == 0) return PXL_OK;
    const void *m = NULL;
    if ((s = map_range(ctx, g, b, offset, size, "pxl_buffer_read_back", &m)) != PXL_OK) return s;
    memcpy(dst, m, size);
    pxl_buffer_unmap(ctx, b);
    return pxl_gpu_take_deferred(g);
}

pxl_status pxl_buffer_map_read(pxl_ctx *ctx, pxl_buffer *b, size_t offset, size_t size, const void **out) {
    static const char op[] = "pxl_buffer_map_read";
    PXL_GPU_OR_FAIL(ctx, g);
    PXL_REQUIRE(ctx, op, out);
    *out = NULL;
    PXL_REQUIRE(ctx, op, b);
    pxl_status s = check_range(ctx, b, offset, size, op, 1);
    if (s != PXL_OK) return s;
    if (size == 0) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: size 0 (nothing to map)", op);
    if (g->lost) return pxl_gpu_take_deferred(g);
    if ((s = map_range(ctx, g, b, offset, size, op, out)) != PXL_OK) return s;
    return pxl_gpu_take_deferred(g);
}

void pxl_buffer_unmap(pxl_ctx *ctx, pxl_buffer *b) {
    (void)ctx;
    if (!b || !b->mapped) return;
    b->gpu->fn.BufferUnmap(b->handle);
    b->mapped = 0;
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
    pxl_status s = check_range(ctx, b, offset, size, "pxl_buffer_download", 0);
    if (s == PXL_OK) s = pxl_gpu_check_no_recorder(g, "pxl_buffer_download");
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

pxl_status pxl_buffer_download_many(pxl_ctx *ctx, const pxl_download *r, size_t n) {
    PXL_GPU_OR_FAIL(ctx, g);
    pxl_status s0 = pxl_gpu_check_no_recorder(g, "pxl_buffer_download_many");
    if (s0 != PXL_OK) return s0;
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        pxl_status s = check_range(ctx, r[i].buf, r[i].offset, r[i].size, "pxl_buffer_download_many", 0);
        if (s != PXL_OK) return s;
        total += r[i].size; /* each size is below the device's max buffer size: no wrap */
    }
    if (total > CHUNK || n == 1) {
        for (size_t i = 0; i < n; i++) {
            pxl_status s = pxl_buffer_download(ctx, r[i].buf, r[i].offset, r[i].dst, r[i].size);
            if (s != PXL_OK) return s;
        }
        return PXL_OK;
    }
    if (g->lost) return pxl_gpu_take_deferred(g);
    pxl_status s = pxl_gpu_stream_submit(g);
    if (s != PXL_OK) return s;
    if (total == 0) return pxl_gpu_take_deferred(g);
    s = ensure_staging(g, round_up(total, 16));
    if (s != PXL_OK) return s;
    WGPUCommandEncoder enc = g->fn.DeviceCreateCommandEncoder(g->device, NULL);
    uint64_t at = 0;
    for (size_t i = 0; i < n; i++) {
        if (r[i].size) g->fn.CommandEncoderCopyBufferToBuffer(enc, r[i].buf->handle, r[i].offset, g->staging, at, r[i].size);
        at += r[i].size;
    }
    WGPUCommandBuffer cmd = g->fn.CommandEncoderFinish(enc, NULL);
    g->fn.QueueSubmit(g->queue, 1, &cmd);
    g->fn.CommandBufferRelease(cmd);
    g->fn.CommandEncoderRelease(enc);
    g->stats.submits++;
    /* one map of the whole staged range, then each range to its destination */
    map_result mr;
    memset(&mr, 0, sizeof mr);
    WGPUBufferMapCallbackInfo cb = {NULL, WGPUCallbackMode_WaitAnyOnly, on_map, &mr, NULL};
    size_t span = (size_t)round_up(total, 4);
    WGPUFuture f = g->fn.BufferMapAsync(g->staging, WGPUMapMode_Read, 0, span, cb);
    s = pxl_gpu_wait(g, f, "mapping a buffer for reading");
    if (s != PXL_OK) return s;
    if (mr.status != PXL_WGPU_SUCCESS) {
        s = pxl_gpu_take_deferred(g);
        return s != PXL_OK ? s : pxl_fail(g->ctx, PXL_ERR_GPU, "mapping a buffer for reading failed: %s", mr.message);
    }
    const uint8_t *m = g->fn.BufferGetConstMappedRange(g->staging, 0, span);
    if (!m) {
        g->fn.BufferUnmap(g->staging);
        return pxl_fail(g->ctx, PXL_ERR_GPU, "mapped range of %zu bytes unavailable", span);
    }
    at = 0;
    for (size_t i = 0; i < n; i++) {
        if (r[i].size) memcpy(r[i].dst, m + at, r[i].size);
        at += r[i].size;
    }
    g->fn.BufferUnmap(g->staging);
    return pxl_gpu_take_deferred(g);
}
