/*
 * GPU timing with timestamp queries: two timestamps (start, end) written by
 * empty compute passes that open and close a timed recording. Dawn's
 * timestamp quantization is disabled when the device is created.
 */
#include "gpu_internal.h"

#include <string.h>

pxl_status pxl_gpu_timing_init(pxl_gpu *g) {
    WGPUQuerySetDescriptor qd;
    memset(&qd, 0, sizeof qd);
    qd.label = pxl_sv("pxl timestamps");
    qd.type = WGPUQueryType_Timestamp;
    qd.count = 2;
    WGPUBufferDescriptor rd;
    memset(&rd, 0, sizeof rd);
    rd.label = pxl_sv("pxl timestamp resolve");
    rd.usage = WGPUBufferUsage_QueryResolve | WGPUBufferUsage_CopySrc;
    rd.size = 256;
    WGPUBufferDescriptor md = rd;
    md.label = pxl_sv("pxl timestamp read");
    md.usage = WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst;
    md.size = 16;
    pxl_gpu_push_scopes(g);
    g->queries = g->fn.DeviceCreateQuerySet(g->device, &qd);
    g->query_resolve = g->fn.DeviceCreateBuffer(g->device, &rd);
    g->query_read = g->fn.DeviceCreateBuffer(g->device, &md);
    pxl_status s = pxl_gpu_pop_scopes(g, "creating timestamp queries");
    if (s != PXL_OK) {
        /* timing is optional: run without it */
        pxl_gpu_timing_release(g);
        g->info.has_timestamps = 0;
        pxl_clear_error(g->ctx);
    }
    return PXL_OK;
}

void pxl_gpu_timing_release(pxl_gpu *g) {
    if (g->queries) {
        g->fn.QuerySetDestroy(g->queries);
        g->fn.QuerySetRelease(g->queries);
    }
    if (g->query_resolve) {
        g->fn.BufferDestroy(g->query_resolve);
        g->fn.BufferRelease(g->query_resolve);
    }
    if (g->query_read) {
        g->fn.BufferDestroy(g->query_read);
        g->fn.BufferRelease(g->query_read);
    }
    g->queries = NULL;
    g->query_resolve = g->query_read = NULL;
}

pxl_status pxl_gpu_timing_read(pxl_gpu *g, uint64_t *ns) {
    uint64_t t[2];
    pxl_status s = pxl_gpu_read_mapped(g, g->query_read, t, sizeof t);
    if (s != PXL_OK) return s;
    *ns = t[1] > t[0] ? t[1] - t[0] : 0;
    return pxl_gpu_take_deferred(g);
}
