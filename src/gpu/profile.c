/*
 * The per-kernel profiler (pxl_gpu_profile_begin/end in gpu.h). While it is
 * on, recorder.c records each dispatch in a compute pass of its own whose
 * timestamp writes go to queries 2i and 2i+1 of this file's query set (i:
 * the dispatch's place among the timed ones of its recording), and keeps the
 * row of each timed dispatch; at the submit the queries are resolved and
 * copied into a map-read buffer, and after it pxl_gpu_profile_collect waits
 * for them and adds each end - start to its kernel's row.
 */
#include "gpu_internal.h"

#include <stdio.h>
#include <string.h>

struct pxl_gpu_prof {
    WGPUQuerySet set;
    WGPUBuffer resolve, read;
    pxl_gpu_profile_entry *rows;
    uint64_t *row_kernel; /* the id of the kernel last seen for each row */
    size_t n_rows, cap_rows;
    uint64_t untimed;
    int whole; /* whole_submits */
    uint64_t ts[2 * PXL_PROFILE_MAX_PER_SUBMIT];
};

void pxl_gpu_profile_release(pxl_gpu *g) {
    pxl_gpu_prof *p = g->prof;
    if (!p) return;
    if (p->set) {
        g->fn.QuerySetDestroy(p->set);
        g->fn.QuerySetRelease(p->set);
    }
    WGPUBuffer bufs[2] = {p->resolve, p->read};
    for (int i = 0; i < 2; i++)
        if (bufs[i]) {
            g->fn.BufferDestroy(bufs[i]);
            g->fn.BufferRelease(bufs[i]);
        }
    pxl_free(g->ctx, p->rows);
    pxl_free(g->ctx, p->row_kernel);
    pxl_free(g->ctx, p);
    g->prof = NULL;
}

pxl_status pxl_gpu_profile_begin(pxl_ctx *ctx, const pxl_gpu_profile_options *opts) {
    PXL_REQUIRE_CTX(ctx);
    PXL_GPU_OR_FAIL(ctx, g);
    pxl_status s = pxl_gpu_check_no_recorder(g, "pxl_gpu_profile_begin");
    if (s != PXL_OK) return s;
    if (!g->info.has_timestamps)
        return pxl_fail(ctx, PXL_ERR_UNSUPPORTED,
                        "pxl_gpu_profile_begin: the device offers no timestamp queries");
    s = pxl_gpu_stream_submit(g); /* earlier work is not profiled */
    if (s != PXL_OK) return s;
    int whole = opts && opts->whole_submits;
    if (g->prof) { /* restart: clear the figures */
        g->prof->n_rows = 0;
        g->prof->untimed = 0;
        g->prof->whole = whole;
        return PXL_OK;
    }
    pxl_gpu_prof *p = pxl_calloc(ctx, 1, sizeof *p);
    if (!p) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "out of memory");
    g->prof = p;
    p->whole = whole;
    WGPUQuerySetDescriptor qd;
    memset(&qd, 0, sizeof qd);
    qd.label = pxl_sv("pxl profile timestamps");
    qd.type = WGPUQueryType_Timestamp;
    qd.count = 2 * PXL_PROFILE_MAX_PER_SUBMIT;
    WGPUBufferDescriptor rd;
    memset(&rd, 0, sizeof rd);
    rd.label = pxl_sv("pxl profile resolve");
    rd.usage = WGPUBufferUsage_QueryResolve | WGPUBufferUsage_CopySrc;
    rd.size = sizeof p->ts;
    WGPUBufferDescriptor md = rd;
    md.label = pxl_sv("pxl profile read");
    md.usage = WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst;
    pxl_gpu_push_scopes(g);
    p->set = g->fn.DeviceCreateQuerySet(g->device, &qd);
    p->resolve = g->fn.DeviceCreateBuffer(g->device, &rd);
    p->read = g->fn.DeviceCreateBuffer(g->device, &md);
    s = pxl_gpu_pop_scopes(g, "creating the profiler's timestamp queries");
    if (s != PXL_OK) pxl_gpu_profile_release(g);
    return s;
}

/* "label:entry NAME=value ..." of kernel k, cut to the entry's size. */
static void kernel_name(const pxl_kernel *k, char *out, size_t cap) {
    int n = snprintf(out, cap, "%s:%s", k->label, k->entry);
    for (size_t i = 0; i < k->n_constants && n >= 0 && (size_t)n < cap; i++)
        n += snprintf(out + n, cap - (size_t)n, " %s=%g", k->constants[i].name, k->constants[i].value);
}

int pxl_gpu_profile_row(pxl_gpu *g, const pxl_kernel *k) {
    pxl_gpu_prof *p = g->prof;
    for (size_t i = 0; i < p->n_rows; i++)
        if (p->row_kernel[i] == k->id) return (int)i;
    char name[sizeof p->rows[0].kernel];
    kernel_name(k, name, sizeof name);
    for (size_t i = 0; i < p->n_rows; i++) /* the same kernel made again after an eviction */
        if (!strcmp(p->rows[i].kernel, name)) {
            p->row_kernel[i] = k->id;
            return (int)i;
        }
    if (p->n_rows == p->cap_rows) {
        size_t cap = p->cap_rows ? 2 * p->cap_rows : 64;
        pxl_gpu_profile_entry *nr = pxl_realloc(g->ctx, p->rows, cap * sizeof *nr);
        if (!nr) return -1;
        p->rows = nr;
        uint64_t *nk = pxl_realloc(g->ctx, p->row_kernel, cap * sizeof *nk);
        if (!nk) return -1;
        p->row_kernel = nk;
        p->cap_rows = cap;
    }
    pxl_gpu_profile_entry *e = &p->rows[p->n_rows];
    memset(e, 0, sizeof *e);
    memcpy(e->kernel, name, sizeof name);
    p->row_kernel[p->n_rows] = k->id;
    return (int)p->n_rows++;
}

WGPUQuerySet pxl_gpu_profile_queries(pxl_gpu *g) { return g->prof->set; }

int pxl_gpu_profile_whole(pxl_gpu *g) { return g->prof && g->prof->whole; }

/* The row of whole recordings (whole_submits): row 0, made on first use. */
static int whole_row(pxl_gpu_prof *p, pxl_ctx *ctx) {
    if (p->n_rows) return 0;
    if (!p->cap_rows) {
        p->rows = pxl_calloc(ctx, 1, sizeof *p->rows);
        p->row_kernel = pxl_calloc(ctx, 1, sizeof *p->row_kernel);
        if (!p->rows || !p->row_kernel) return -1;
        p->cap_rows = 1;
    }
    memset(&p->rows[0], 0, sizeof p->rows[0]);
    snprintf(p->rows[0].kernel, sizeof p->rows[0].kernel, "submitted recordings");
    p->n_rows = 1;
    return 0;
}

pxl_status pxl_gpu_profile_collect_whole(pxl_gpu *g, uint64_t dispatches) {
    pxl_gpu_prof *p = g->prof;
    pxl_status s = pxl_gpu_read_mapped(g, p->read, p->ts, 16u);
    if (s != PXL_OK) return s;
    if (whole_row(p, g->ctx) < 0) {
        p->untimed += dispatches;
        return PXL_OK;
    }
    p->rows[0].dispatches += dispatches;
    p->rows[0].gpu_ns += p->ts[1] > p->ts[0] ? p->ts[1] - p->ts[0] : 0;
    return PXL_OK;
}

void pxl_gpu_profile_untimed(pxl_gpu *g) { g->prof->untimed++; }

void pxl_gpu_profile_resolve(pxl_gpu *g, WGPUCommandEncoder enc, uint32_t n) {
    pxl_gpu_prof *p = g->prof;
    g->fn.CommandEncoderResolveQuerySet(enc, p->set, 0, 2 * n, p->resolve, 0);
    g->fn.CommandEncoderCopyBufferToBuffer(enc, p->resolve, 0, p->read, 0, 16u * n);
}

pxl_status pxl_gpu_profile_collect(pxl_gpu *g, const int *rows, uint32_t n) {
    pxl_gpu_prof *p = g->prof;
    pxl_status s = pxl_gpu_read_mapped(g, p->read, p->ts, 16u * n);
    if (s != PXL_OK) return s;
    for (uint32_t i = 0; i < n; i++) {
        if (rows[i] < 0 || (size_t)rows[i] >= p->n_rows) { /* no row (out of memory), or cleared since */
            p->untimed++;
            continue;
        }
        pxl_gpu_profile_entry *e = &p->rows[rows[i]];
        uint64_t t0 = p->ts[2 * i], t1 = p->ts[2 * i + 1];
        e->dispatches++;
        e->gpu_ns += t1 > t0 ? t1 - t0 : 0;
    }
    return PXL_OK;
}

pxl_status pxl_gpu_profile_end(pxl_ctx *ctx, pxl_gpu_profile_entry *entries, size_t cap, size_t *n_entries,
                               uint64_t *untimed) {
    PXL_REQUIRE_CTX(ctx);
    PXL_GPU_OR_FAIL(ctx, g);
    PXL_REQUIRE(ctx, "pxl_gpu_profile_end", n_entries);
    *n_entries = 0;
    if (untimed) *untimed = 0;
    if (cap) PXL_REQUIRE(ctx, "pxl_gpu_profile_end", entries);
    pxl_status s = pxl_gpu_check_no_recorder(g, "pxl_gpu_profile_end");
    if (s != PXL_OK) return s;
    if (!g->prof) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_gpu_profile_end: the profiler was not started");
    s = pxl_gpu_stream_submit(g); /* collects what is still open */
    pxl_gpu_prof *p = g->prof;
    /* slowest first (insertion sort: a few dozen kernels) */
    for (size_t i = 1; i < p->n_rows; i++) {
        pxl_gpu_profile_entry e = p->rows[i];
        size_t j = i;
        while (j > 0 && p->rows[j - 1].gpu_ns < e.gpu_ns) {
            p->rows[j] = p->rows[j - 1];
            j--;
        }
        p->rows[j] = e;
    }
    size_t n = p->n_rows < cap ? p->n_rows : cap;
    if (n) memcpy(entries, p->rows, n * sizeof *entries);
    *n_entries = p->n_rows;
    if (untimed) *untimed = p->untimed;
    pxl_gpu_profile_release(g);
    return s;
}
