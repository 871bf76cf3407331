/*
 * The recorder: many dispatches, copies and clears in one command encoder,
 * one compute pass per run of dispatches, and one queue submit; and the
 * context's stream, and the rule that keeps one queue order (see gpu.h).
 * Dispatch parameters go to content-keyed uniform slots and bind groups
 * come from the cache in bindcache.c, so a dispatch like an earlier one
 * costs two hash lookups and the encoder calls; the pipeline and bind group
 * are set only when they change within a pass. When every uniform slot is
 * in use by the open recording, parameters are carved from the recorder's
 * own 64 KiB blocks (written just before the submit, then back to a free
 * list) and that dispatch's bind group lives until the submit. Error scopes
 * around the whole recording turn validation errors into the status of
 * pxl_recorder_submit. While the profiler (profile.c) is on, each dispatch
 * gets a pass of its own between two timestamps, or each recording one pair
 * (whole_submits), resolved at the submit and read after it.
 * pxl_recorder_end does the submit's first half (the command buffer, the
 * uniform writes, the resolves) early and keeps the recorder on the
 * context's list of ended ones until pxl_recorder_submit does the second.
 */
#include "gpu_internal.h"

#include <string.h>

struct pxl_recorder {
    pxl_gpu *g;
    uint64_t serial; /* g->open_serial while this recording is open */
    WGPUCommandEncoder enc;
    WGPUComputePassEncoder pass;
    WGPUComputePipeline last_pipeline; /* set in the current pass */
    WGPUBindGroup last_group;
    int timed;
    int scoped; /* error scopes pushed at the start, popped at submit (recorder_begin says when) */
    pxl_status error; /* first error while recording */
    WGPUBindGroup *groups;
    size_t n_groups, cap_groups;
    pxl_uniform_block *uniforms; /* blocks in use, newest first */
    pxl_buffer **scratch;
    size_t n_scratch, cap_scratch;
    size_t n_dispatches;
    int *prof_rows; /* the profile row of each timed dispatch (profile.c) */
    uint32_t n_prof;
    int prof_whole; /* began with the profiler's start timestamp (whole_submits) */
    /* pxl_recorder_end: the finished command buffer, waiting for the submit,
     * and the next ended recorder of the context (g->ended, oldest first) */
    int ended;
    WGPUCommandBuffer cmd;
    uint32_t fin_prof; /* timed dispatches resolved into cmd (profile.c) */
    int fin_whole;     /* cmd resolves the whole-recording timestamps */
    pxl_recorder *next_ended;
};

pxl_uniform_block *pxl_gpu_uniform_block_new(pxl_gpu *g) {
    pxl_uniform_block *b = pxl_alloc(g->ctx, sizeof *b);
    if (!b) return NULL;
    b->used = 0;
    b->next = NULL;
    WGPUBufferDescriptor d;
    memset(&d, 0, sizeof d);
    d.label = pxl_sv("pxl uniforms");
    d.usage = WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst;
    d.size = PXL_UNIFORM_BLOCK_SIZE;
    b->handle = g->fn.DeviceCreateBuffer(g->device, &d);
    if (!b->handle) {
        pxl_free(g->ctx, b);
        return NULL;
    }
    return b;
}

void pxl_gpu_uniform_block_destroy(pxl_gpu *g, pxl_uniform_block *b) {
    if (!b) return;
    g->fn.BufferDestroy(b->handle);
    g->fn.BufferRelease(b->handle);
    pxl_free(g->ctx, b);
}

static pxl_uniform_block *take_block(pxl_gpu *g) {
    pxl_uniform_block *b = g->free_uniforms;
    if (b) {
        g->free_uniforms = b->next;
        b->next = NULL;
        b->used = 0;
        return b;
    }
    return pxl_gpu_uniform_block_new(g);
}

static void release_blocks(pxl_gpu *g, pxl_uniform_block *b) {
    while (b) {
        pxl_uniform_block *next = b->next;
        b->next = g->free_uniforms;
        g->free_uniforms = b;
        b = next;
    }
}

void pxl_gpu_uniforms_release(pxl_gpu *g) {
    while (g->free_uniforms) {
        pxl_uniform_block *b = g->free_uniforms;
        g->free_uniforms = b->next;
        pxl_gpu_uniform_block_destroy(g, b);
    }
}

static void end_pass(pxl_recorder *r) {
    r->last_pipeline = NULL;
    r->last_group = NULL;
    if (!r->pass) return;
    r->g->fn.ComputePassEncoderEnd(r->pass);
    r->g->fn.ComputePassEncoderRelease(r->pass);
    r->pass = NULL;
}

static void begin_pass(pxl_recorder *r, const WGPUPassTimestampWrites *ts) {
    WGPUComputePassDescriptor d;
    memset(&d, 0, sizeof d);
    d.timestampWrites = ts;
    r->pass = r->g->fn.CommandEncoderBeginComputePass(r->enc, &d);
}

/* stream: the ops stream's recording, which is submitted often (every layer
 * of a decoded token), or a recorder begun with PXL_RECORDER_UNCHECKED: it
 * pushes no error scopes unless the tuning option gpu_scopes=1 asks for them
 * (popping them costs about 50 us a submit on an H100); its errors reach the
 * uncaptured-error handler and are reported by the submit's
 * pxl_gpu_take_deferred or the next wait. */
static pxl_status recorder_begin(pxl_gpu *g, int timed, int stream, pxl_recorder **out) {
    pxl_ctx *ctx = g->ctx;
    pxl_recorder *r = pxl_calloc(ctx, 1, sizeof *r);
    if (!r) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "out of memory");
    r->g = g;
    r->serial = ++g->rec_serial;
    g->open_serial = r->serial;
    r->timed = timed && g->queries;
    r->scoped = !stream || pxl_ctx_tuning(ctx)->gpu_scopes;
    if (r->scoped) pxl_gpu_push_scopes(g);
    r->enc = g->fn.DeviceCreateCommandEncoder(g->device, NULL);
    if (r->timed) {
        WGPUPassTimestampWrites ts = {NULL, g->queries, 0, WGPU_QUERY_SET_INDEX_UNDEFINED};
        begin_pass(r, &ts);
        end_pass(r);
    }
    if (pxl_gpu_profile_whole(g)) {
        WGPUPassTimestampWrites ts = {NULL, pxl_gpu_profile_queries(g), 0, WGPU_QUERY_SET_INDEX_UNDEFINED};
        begin_pass(r, &ts);
        end_pass(r);
        r->prof_whole = 1;
    }
    *out = r;
    return PXL_OK;
}

pxl_status pxl_gpu_check_no_recorder(pxl_gpu *g, const char *what) {
    if (!g->user) return PXL_OK;
    return pxl_fail(g->ctx, PXL_ERR_INVALID_ARG, "%s: a recorder is open: submit or discard it first", what);
}

pxl_status pxl_recorder_begin(pxl_ctx *ctx, int flags, pxl_recorder **out) {
    PXL_GPU_OR_FAIL(ctx, g);
    if (g->user)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG,
                        "pxl_recorder_begin: a recorder is already open: submit or discard it first");
    if (g->lost) return pxl_gpu_take_deferred(g);
    pxl_status s = pxl_gpu_stream_submit(g); /* keep call order */
    if (s != PXL_OK) return s;
    s = recorder_begin(g, flags & PXL_RECORDER_TIMED, (flags & PXL_RECORDER_UNCHECKED) != 0, out);
    if (s == PXL_OK) g->user = *out;
    return s;
}

static pxl_status rec_fail(pxl_recorder *r, pxl_status s) {
    if (r->error == PXL_OK) r->error = s;
    return s;
}

/* Fails (PXL_ERR_INVALID_ARG) for a recorder that pxl_recorder_end closed. */
static pxl_status rec_open(pxl_recorder *r, const char *what) {
    if (!r->ended) return PXL_OK;
    return pxl_fail(r->g->ctx, PXL_ERR_INVALID_ARG, "%s: the recorder was ended: submit or discard it", what);
}

pxl_status pxl_recorder_dispatch(pxl_recorder *r, const pxl_dispatch *d) {
    pxl_gpu *g = r->g;
    pxl_ctx *ctx = g->ctx;
    if (r->ended) return rec_open(r, "pxl_recorder_dispatch");
    if (r->error != PXL_OK) return r->error;
    if (!d->kernel) return rec_fail(r, pxl_fail(ctx, PXL_ERR_INVALID_ARG, "dispatch without a kernel"));
    if (d->n_bindings > PXL_BG_MAX_ENTRIES - 1)
        return rec_fail(r, pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: at most 15 bindings per dispatch",
                                    d->kernel->label));
    if (d->uniforms_size > PXL_UNIFORM_MAX)
        return rec_fail(r, pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: uniform block of %zu bytes > %u",
                                    d->kernel->label, d->uniforms_size, PXL_UNIFORM_MAX));
    for (size_t i = 0; i < d->n_bindings; i++)
        if (d->bindings[i].buffer && d->bindings[i].buffer->readback)
            return rec_fail(r, pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: binding %u is a read-back buffer",
                                        d->kernel->label, d->bindings[i].binding));
    for (int i = 0; i < 3; i++)
        if (d->groups[i] > g->limits.maxComputeWorkgroupsPerDimension)
            return rec_fail(r, pxl_fail(ctx, PXL_ERR_INVALID_ARG,
                                        "%s: %u workgroups in dimension %d exceed the device limit %u",
                                        d->kernel->label, d->groups[i], i,
                                        g->limits.maxComputeWorkgroupsPerDimension));

    WGPUBindGroupEntry e[PXL_BG_MAX_ENTRIES]; /* entries [0, n) set in full */
    uint64_t ids[PXL_BG_MAX_ENTRIES];
    size_t n = 0;
    for (size_t i = 0; i < d->n_bindings; i++, n++) {
        const pxl_binding *b = &d->bindings[i];
        e[n] = (WGPUBindGroupEntry){.binding = b->binding,
                                    .buffer = b->buffer->handle,
                                    .offset = b->offset,
                                    .size = b->size ? b->size : WGPU_WHOLE_SIZE};
        ids[n] = b->buffer->id;
    }
    int cacheable = 1;
    if (d->uniforms_size) {
        pxl_uniform_block *b = NULL;
        uint32_t offset = 0;
        int64_t slot = pxl_gpu_uniform_slot(g, d->uniforms, d->uniforms_size, &b, &offset);
        if (slot >= 0) {
            ids[n] = PXL_BG_UNIFORM_ID | (uint64_t)slot;
        } else { /* every slot in use by this recording: the recorder's own blocks */
            uint32_t align = g->limits.minUniformBufferOffsetAlignment ? g->limits.minUniformBufferOffsetAlignment : 256;
            uint32_t span = (uint32_t)((d->uniforms_size + align - 1) / align * align);
            if (!r->uniforms || r->uniforms->used + span > PXL_UNIFORM_BLOCK_SIZE) {
                pxl_uniform_block *nb = take_block(g);
                if (!nb) return rec_fail(r, pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "out of memory for uniforms"));
                nb->next = r->uniforms;
                r->uniforms = nb;
            }
            b = r->uniforms;
            offset = b->used;
            memset(b->data + offset, 0, span);
            memcpy(b->data + offset, d->uniforms, d->uniforms_size);
            b->used += span;
            cacheable = 0;
        }
        e[n] = (WGPUBindGroupEntry){.binding = d->uniform_binding,
                                    .buffer = b->handle,
                                    .offset = offset,
                                    .size = (d->uniforms_size + 15) / 16 * 16};
        n++;
    }
    WGPUBindGroup bg = NULL;
    if (cacheable) {
        bg = pxl_gpu_bind_group(g, d->kernel, e, n, ids);
        if (!bg) return rec_fail(r, pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "out of memory for a bind group"));
    } else {
        if (r->n_groups == r->cap_groups) {
            size_t cap = r->cap_groups ? r->cap_groups * 2 : 32;
            WGPUBindGroup *ng = pxl_realloc(ctx, r->groups, cap * sizeof *ng);
            if (!ng) return rec_fail(r, pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "out of memory"));
            r->groups = ng;
            r->cap_groups = cap;
        }
        WGPUBindGroupDescriptor bd;
        memset(&bd, 0, sizeof bd);
        bd.layout = d->kernel->layout;
        bd.entryCount = n;
        bd.entries = e;
        bg = g->fn.DeviceCreateBindGroup(g->device, &bd);
        r->groups[r->n_groups++] = bg;
    }
    d->kernel->last_use = r->serial;
    int timed = 0;
    if (g->prof && !r->prof_whole && !pxl_gpu_profile_whole(g)) { /* the profiler: this dispatch alone in a pass */
        if (!r->prof_rows) r->prof_rows = pxl_alloc(ctx, PXL_PROFILE_MAX_PER_SUBMIT * sizeof *r->prof_rows);
        if (r->prof_rows && r->n_prof < PXL_PROFILE_MAX_PER_SUBMIT) {
            WGPUPassTimestampWrites ts = {NULL, pxl_gpu_profile_queries(g), 2 * r->n_prof, 2 * r->n_prof + 1};
            r->prof_rows[r->n_prof++] = pxl_gpu_profile_row(g, d->kernel);
            end_pass(r);
            begin_pass(r, &ts);
            timed = 1;
        } else {
            pxl_gpu_profile_untimed(g);
        }
    }
    if (!r->pass) begin_pass(r, NULL);
    if (r->last_pipeline != d->kernel->pipeline) {
        g->fn.ComputePassEncoderSetPipeline(r->pass, d->kernel->pipeline);
        r->last_pipeline = d->kernel->pipeline;
    }
    if (r->last_group != bg) {
        g->fn.ComputePassEncoderSetBindGroup(r->pass, 0, bg, 0, NULL);
        r->last_group = bg;
    }
    g->fn.ComputePassEncoderDispatchWorkgroups(r->pass, d->groups[0] ? d->groups[0] : 1,
                                               d->groups[1] ? d->groups[1] : 1,
                                               d->groups[2] ? d->groups[2] : 1);
    if (timed) end_pass(r);
    g->stats.dispatches++;
    r->n_dispatches++;
    return PXL_OK;
}

pxl_status pxl_recorder_copy(pxl_recorder *r, pxl_buffer *src, size_t src_offset, pxl_buffer *dst,
                             size_t dst_offset, size_t size) {
    if (r->ended) return rec_open(r, "pxl_recorder_copy");
    if (r->error != PXL_OK) return r->error;
    if ((src_offset | dst_offset | size) & 3u)
        return rec_fail(r, pxl_fail(r->g->ctx, PXL_ERR_INVALID_ARG,
                                    "pxl_recorder_copy: offsets and size must be multiples of 4"));
    if (src->readback)
        return rec_fail(r, pxl_fail(r->g->ctx, PXL_ERR_INVALID_ARG,
                                    "pxl_recorder_copy: the source is a read-back buffer (copies only go into one)"));
    uint64_t src_span = pxl_buffer_span(src), dst_span = pxl_buffer_span(dst);
    if (src_offset > src_span || size > src_span - src_offset || dst_offset > dst_span || size > dst_span - dst_offset)
        return rec_fail(r, pxl_fail(r->g->ctx, PXL_ERR_INVALID_ARG,
                                    "pxl_recorder_copy: %zu bytes do not fit the buffers", size));
    end_pass(r);
    r->g->fn.CommandEncoderCopyBufferToBuffer(r->enc, src->handle, src_offset, dst->handle,
                                              dst_offset, size);
    return PXL_OK;
}

pxl_status pxl_recorder_clear(pxl_recorder *r, pxl_buffer *buf, size_t offset, size_t size) {
    if (r->ended) return rec_open(r, "pxl_recorder_clear");
    if (r->error != PXL_OK) return r->error;
    if ((offset | size) & 3u)
        return rec_fail(r, pxl_fail(r->g->ctx, PXL_ERR_INVALID_ARG,
                                    "pxl_recorder_clear: offset %zu and size %zu must be multiples of 4", offset,
                                    size));
    if (buf->readback)
        return rec_fail(r, pxl_fail(r->g->ctx, PXL_ERR_INVALID_ARG, "pxl_recorder_clear: a read-back buffer"));
    if (offset > pxl_buffer_span(buf) || size > pxl_buffer_span(buf) - offset)
        return rec_fail(r, pxl_fail(r->g->ctx, PXL_ERR_INVALID_ARG,
                                    "pxl_recorder_clear: range [%zu, %zu+%zu) is outside the %zu-byte buffer",
                                    offset, offset, size, buf->size));
    if (size == 0) return PXL_OK;
    end_pass(r);
    r->g->fn.CommandEncoderClearBuffer(r->enc, buf->handle, offset, size);
    return PXL_OK;
}

pxl_ctx *pxl_recorder_ctx(const pxl_recorder *r) { return r->g->ctx; }

pxl_status pxl_recorder_scratch(pxl_recorder *r, size_t size, pxl_buffer **out) {
    pxl_ctx *ctx = r->g->ctx;
    if (r->ended) return rec_open(r, "pxl_recorder_scratch");
    if (r->error != PXL_OK) return r->error;
    if (r->n_scratch == r->cap_scratch) {
        size_t cap = r->cap_scratch ? r->cap_scratch * 2 : 8;
        pxl_buffer **ns = pxl_realloc(ctx, r->scratch, cap * sizeof *ns);
        if (!ns) return rec_fail(r, pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "out of memory"));
        r->scratch = ns;
        r->cap_scratch = cap;
    }
    pxl_status s = pxl_buffer_create(ctx, size, out);
    if (s != PXL_OK) return rec_fail(r, s);
    r->scratch[r->n_scratch++] = *out;
    return PXL_OK;
}

/* Removes r from the context's ended recorders, and sets g->ended_serial
 * to the oldest one left (0: none): uniform slots used since then are not
 * given new bytes (bindcache.c). */
static void ended_unlink(pxl_gpu *g, pxl_recorder *r) {
    for (pxl_recorder **p = &g->ended; *p; p = &(*p)->next_ended)
        if (*p == r) {
            *p = r->next_ended;
            break;
        }
    r->next_ended = NULL;
    g->ended_serial = g->ended ? g->ended->serial : 0;
}

static void recorder_free(pxl_recorder *r) {
    pxl_gpu *g = r->g;
    if (g->user == r) g->user = NULL;
    if (g->open_serial == r->serial) g->open_serial = 0;
    if (r->ended) ended_unlink(g, r);
    end_pass(r);
    for (size_t i = 0; i < r->n_scratch; i++) pxl_buffer_free(r->scratch[i]);
    pxl_free(g->ctx, r->scratch);
    for (size_t i = 0; i < r->n_groups; i++)
        if (r->groups[i]) g->fn.BindGroupRelease(r->groups[i]);
    pxl_free(g->ctx, r->groups);
    release_blocks(g, r->uniforms);
    pxl_free(g->ctx, r->prof_rows);
    if (r->cmd) g->fn.CommandBufferRelease(r->cmd);
    if (r->enc) g->fn.CommandEncoderRelease(r->enc);
    pxl_free(g->ctx, r);
}

void pxl_recorder_discard(pxl_recorder *r) {
    if (!r) return;
    pxl_gpu *g = r->g;
    if (r->enc) {
        end_pass(r);
        WGPUCommandBuffer cmd = g->fn.CommandEncoderFinish(r->enc, NULL);
        if (cmd) g->fn.CommandBufferRelease(cmd);
    }
    if (r->scoped) pxl_gpu_pop_scopes(g, "discarded recording"); /* errors of a dropped recording are moot */
    r->scoped = 0;
    recorder_free(r);
}

typedef struct {
    int done;
} work_done;

static void on_done(WGPUQueueWorkDoneStatus status, WGPUStringView msg, void *u1, void *u2) {
    (void)status;
    (void)msg;
    (void)u2;
    ((work_done *)u1)->done = 1;
}

static pxl_status wait_queue(pxl_gpu *g) {
    work_done w = {0};
    WGPUQueueWorkDoneCallbackInfo cb = {NULL, WGPUCallbackMode_WaitAnyOnly, on_done, &w, NULL};
    WGPUFuture f = g->fn.QueueOnSubmittedWorkDone(g->queue, cb);
    pxl_status s = pxl_gpu_wait(g, f, "waiting for the queue");
    if (s != PXL_OK) return s;
    return pxl_gpu_take_deferred(g);
}

static pxl_status recorder_submit(pxl_recorder *r, int wait, uint64_t *gpu_ns);

pxl_status pxl_recorder_submit(pxl_recorder *r, int wait, uint64_t *gpu_ns) {
    pxl_gpu *g = r->g;
    double t0 = pxl_time_now();
    pxl_status s = recorder_submit(r, wait, gpu_ns);
    g->stats.submit_ns += (uint64_t)((pxl_time_now() - t0) * 1e9);
    return s;
}

/* Closes r's encoding into r->cmd: the timestamp resolves, the uniform
 * bytes its dispatches read (queued now, so they land before its submit),
 * and the command buffer. */
static void recorder_finish(pxl_recorder *r) {
    pxl_gpu *g = r->g;
    end_pass(r);
    if (r->timed) {
        WGPUPassTimestampWrites ts = {NULL, g->queries, WGPU_QUERY_SET_INDEX_UNDEFINED, 1};
        begin_pass(r, &ts);
        end_pass(r);
        g->fn.CommandEncoderResolveQuerySet(r->enc, g->queries, 0, 2, g->query_resolve, 0);
        g->fn.CommandEncoderCopyBufferToBuffer(r->enc, g->query_resolve, 0, g->query_read, 0, 16);
    }
    r->fin_prof = g->prof ? r->n_prof : 0;
    if (r->fin_prof) pxl_gpu_profile_resolve(g, r->enc, r->fin_prof);
    r->fin_whole = r->prof_whole && pxl_gpu_profile_whole(g);
    if (r->fin_whole) {
        WGPUPassTimestampWrites ts = {NULL, pxl_gpu_profile_queries(g), WGPU_QUERY_SET_INDEX_UNDEFINED, 1};
        begin_pass(r, &ts);
        end_pass(r);
        pxl_gpu_profile_resolve(g, r->enc, 1);
    }
    pxl_gpu_uniforms_flush(g);
    for (pxl_uniform_block *b = r->uniforms; b; b = b->next)
        g->fn.QueueWriteBuffer(g->queue, b->handle, 0, b->data, b->used);
    r->cmd = g->fn.CommandEncoderFinish(r->enc, NULL);
    g->fn.CommandEncoderRelease(r->enc);
    r->enc = NULL;
}

pxl_status pxl_recorder_end(pxl_recorder *r) {
    if (!r) return PXL_ERR_INVALID_ARG;
    pxl_gpu *g = r->g;
    if (r->ended) return rec_open(r, "pxl_recorder_end");
    if (g->user != r)
        return pxl_fail(g->ctx, PXL_ERR_INVALID_ARG, "pxl_recorder_end: not a recorder of pxl_recorder_begin");
    if (r->error == PXL_OK) recorder_finish(r);
    pxl_status s = r->error;
    if (r->scoped) { /* the encoding's errors are known now; the submit's come through the handler */
        pxl_status e = pxl_gpu_pop_scopes(g, "recorded GPU work");
        r->scoped = 0;
        if (s == PXL_OK) s = e;
        if (r->error == PXL_OK) r->error = e;
    }
    g->user = NULL;
    if (g->open_serial == r->serial) g->open_serial = 0;
    r->ended = 1;
    pxl_recorder **p = &g->ended;
    while (*p) p = &(*p)->next_ended;
    *p = r;
    g->ended_serial = g->ended->serial;
    return s;
}

static pxl_status recorder_submit(pxl_recorder *r, int wait, uint64_t *gpu_ns) {
    pxl_gpu *g = r->g;
    if (gpu_ns) *gpu_ns = 0;
    if (r->error != PXL_OK) {
        pxl_status s = r->error;
        char msg[PXL_ERR_MAX];
        memcpy(msg, g->ctx->error, sizeof msg);
        pxl_recorder_discard(r);
        memcpy(g->ctx->error, msg, sizeof msg);
        return s;
    }
    if (r->ended) { /* work asked for after pxl_recorder_end runs first */
        pxl_status s = pxl_gpu_stream_submit(g);
        if (s != PXL_OK) {
            pxl_recorder_discard(r);
            return s;
        }
    } else {
        recorder_finish(r);
    }
    uint64_t n_disp = r->n_dispatches;
    g->fn.QueueSubmit(g->queue, 1, &r->cmd);
    g->fn.CommandBufferRelease(r->cmd);
    r->cmd = NULL;
    g->stats.submits++;
    /* without scopes an error reaches the uncaptured-error handler and is
     * reported here or at a later wait */
    pxl_status s = r->scoped ? pxl_gpu_pop_scopes(g, "recorded GPU work") : pxl_gpu_take_deferred(g);
    r->scoped = 0;
    int timed = r->timed;
    /* the profiler may have ended between pxl_recorder_end and the submit */
    uint32_t n_prof = g->prof ? r->fin_prof : 0;
    int whole = r->fin_whole && g->prof;
    int *prof_rows = r->prof_rows;
    r->prof_rows = NULL;
    recorder_free(r);
    if (s == PXL_OK && n_prof) s = pxl_gpu_profile_collect(g, prof_rows, n_prof);
    if (s == PXL_OK && whole) s = pxl_gpu_profile_collect_whole(g, n_disp);
    pxl_free(g->ctx, prof_rows);
    if (s != PXL_OK) return s;
    if (timed && gpu_ns) return pxl_gpu_timing_read(g, gpu_ns);
    if (wait) return wait_queue(g);
    return PXL_OK;
}

pxl_status pxl_gpu_finish(pxl_ctx *ctx) {
    PXL_GPU_OR_FAIL(ctx, g);
    pxl_status s = pxl_gpu_check_no_recorder(g, "pxl_gpu_finish");
    if (s != PXL_OK) return s;
    if (g->lost) return pxl_gpu_take_deferred(g);
    s = pxl_gpu_stream_submit(g);
    if (s != PXL_OK) return s;
    return wait_queue(g);
}

/* ---- the ops stream ----------------------------------------------------------- */

pxl_status pxl_gpu_stream_submit(pxl_gpu *g) {
    if (!g->stream) return PXL_OK;
    pxl_recorder *r = g->stream;
    g->stream = NULL;
    return pxl_recorder_submit(r, 0, NULL);
}

pxl_status pxl_gpu_stream(pxl_ctx *ctx, pxl_recorder **out) {
    PXL_GPU_OR_FAIL(ctx, g);
    if (g->lost) return pxl_gpu_take_deferred(g);
    if (g->user) { /* ops go where the caller is recording, in call order */
        *out = g->user;
        return PXL_OK;
    }
    if (g->stream && g->stream->n_dispatches >= PXL_STREAM_MAX_DISPATCHES && !g->stream->timed) {
        pxl_status s = pxl_gpu_stream_submit(g);
        if (s != PXL_OK) return s;
    }
    if (!g->stream) {
        pxl_status s = recorder_begin(g, 0, 1, &g->stream);
        if (s != PXL_OK) return s;
    }
    *out = g->stream;
    return PXL_OK;
}

pxl_status pxl_gpu_stream_begin_timed(pxl_ctx *ctx) {
    PXL_GPU_OR_FAIL(ctx, g);
    pxl_status s = pxl_gpu_check_no_recorder(g, "pxl_gpu_stream_begin_timed");
    if (s != PXL_OK) return s;
    s = pxl_gpu_stream_submit(g);
    if (s != PXL_OK) return s;
    return recorder_begin(g, 1, 1, &g->stream);
}

pxl_status pxl_gpu_flush(pxl_ctx *ctx, int wait, uint64_t *gpu_ns) {
    PXL_GPU_OR_FAIL(ctx, g);
    if (gpu_ns) *gpu_ns = 0;
    pxl_status s = pxl_gpu_check_no_recorder(g, "pxl_gpu_flush");
    if (s != PXL_OK) return s;
    if (!g->stream) return wait ? wait_queue(g) : pxl_gpu_take_deferred(g);
    pxl_recorder *r = g->stream;
    g->stream = NULL;
    return pxl_recorder_submit(r, wait, gpu_ns);
}
