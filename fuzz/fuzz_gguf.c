/*
 * libFuzzer target for the GGUF reader (src/llm/gguf.c): parses the input;
 * a refusal must leave a message and no object. When it parses, every key
 * is read back through its getters (each array element, strings by index),
 * every tensor's bytes are touched (they must lie inside the input), and
 * every name must be found again through the indexes. abort() on any
 * inconsistency. Everything is freed, so leaks show up under ASan.
 */
#include "fuzz_ctx.h"
#include "pxl/llm.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t g_sink;

static void walk_kv(const pxl_gguf *g, size_t i) {
    const char *k = pxl_gguf_key(g, i);
    if (!k || pxl_gguf_find_key(g, k) != (int64_t)i) abort();
    pxl_gguf_type t = pxl_gguf_kv_type(g, i);
    int64_t iv;
    uint64_t uv;
    double dv;
    const char *s;
    size_t len;
    if (t == PXL_GGUF_STRING) {
        if (pxl_gguf_kv_string(g, i, &s, &len) != PXL_OK) abort();
        if (len) g_sink += (uint8_t)s[0] + (uint8_t)s[len - 1];
        return;
    }
    if (t == PXL_GGUF_FLOAT32 || t == PXL_GGUF_FLOAT64) {
        if (pxl_gguf_kv_float(g, i, &dv) != PXL_OK) abort();
        if (pxl_gguf_kv_int(g, i, &iv) == PXL_OK) abort();
        return;
    }
    if (t != PXL_GGUF_ARRAY) {
        pxl_status a = pxl_gguf_kv_int(g, i, &iv), b = pxl_gguf_kv_uint(g, i, &uv);
        if (a != PXL_OK && b != PXL_OK) abort(); /* every integer fits one of the two */
        if (pxl_gguf_kv_string(g, i, &s, &len) == PXL_OK) abort();
        return;
    }
    pxl_gguf_type et;
    uint64_t n;
    if (pxl_gguf_kv_array(g, i, &et, &n) != PXL_OK) abort();
    const void *raw;
    size_t esz;
    if (et == PXL_GGUF_STRING) {
        if (pxl_gguf_arr_data(g, i, &raw, &esz) == PXL_OK) abort();
        for (uint64_t j = 0; j < n; j++) {
            if (pxl_gguf_arr_string(g, i, j, &s, &len) != PXL_OK) abort();
            if (len) g_sink += (uint8_t)s[0] + (uint8_t)s[len - 1];
        }
    } else {
        if (pxl_gguf_arr_data(g, i, &raw, &esz) != PXL_OK || esz == 0) abort();
        for (uint64_t j = 0; j < n; j++) {
            if (et == PXL_GGUF_FLOAT32 || et == PXL_GGUF_FLOAT64) {
                if (pxl_gguf_arr_float(g, i, j, &dv) != PXL_OK) abort();
            } else {
                pxl_status st = pxl_gguf_arr_int(g, i, j, &iv);
                if (st != PXL_OK && et != PXL_GGUF_UINT64) abort();
            }
        }
    }
    if (pxl_gguf_arr_int(g, i, n, &iv) == PXL_OK) abort(); /* one past the end */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    pxl_ctx *ctx = fuzz_cpu_ctx();
    if (!ctx) return 0;
    pxl_gguf *g = NULL;
    pxl_status s = pxl_gguf_parse(ctx, data, size, &g);
    if (s != PXL_OK) {
        if (g != NULL || pxl_ctx_error(ctx)[0] == '\0') abort();
        pxl_ctx_free(ctx);
        return 0;
    }
    uint32_t a = pxl_gguf_alignment(g);
    if (a == 0 || (a & (a - 1)) != 0 || pxl_gguf_data_offset(g) % a != 0) abort();
    for (size_t i = 0; i < pxl_gguf_n_kv(g); i++) walk_kv(g, i);
    for (size_t i = 0; i < pxl_gguf_n_tensors(g); i++) {
        const pxl_gguf_tensor *t = pxl_gguf_tensor_at(g, i);
        if (!t || pxl_gguf_find_tensor(g, t->name) != (int64_t)i) abort();
        if (t->ndim < 1 || t->ndim > 4 || t->offset % a != 0 || t->offset + t->bytes > size) abort();
        if ((const uint8_t *)t->data != data + t->offset) abort();
        if (t->bytes) g_sink += ((const uint8_t *)t->data)[0] + ((const uint8_t *)t->data)[t->bytes - 1];
    }
    if (pxl_gguf_tensor_at(g, pxl_gguf_n_tensors(g)) != NULL) abort();
    pxl_gguf_free(g);
    pxl_ctx_free(ctx);
    return 0;
}
