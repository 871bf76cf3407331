/*
 * GGUF reader and writer (src/llm/gguf.c): writer -> reader round trips for
 * every metadata type, a hand-made version-2 file, and the error paths: bad
 * magic and version, every truncation of a valid file, overflowing counts,
 * misaligned and out-of-file tensors, duplicates, bad alignments, unknown
 * types, FIFOs and directories; the types pxl has no kernel for (IQ*, TQ*,
 * MXFP4) sized, bounds-checked and opened.
 *
 * test_gguf [DIR]: DIR (default ".") is where the test writes its files.
 */
#include "check.h"
#include "pxl/llm.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static pxl_ctx *g_ctx;
static char g_dir[1024] = ".";

/* ---- a byte builder for hand-made files ---- */
typedef struct {
    uint8_t b[4096];
    size_t n;
} bytes;

static void put(bytes *o, const void *p, size_t n) {
    if (o->n + n > sizeof o->b) abort();
    memcpy(o->b + o->n, p, n);
    o->n += n;
}
static void u32(bytes *o, uint32_t v) {
    uint8_t b[4];
    for (int i = 0; i < 4; i++) b[i] = (uint8_t)(v >> (8 * i));
    put(o, b, 4);
}
static void u64(bytes *o, uint64_t v) {
    uint8_t b[8];
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (8 * i));
    put(o, b, 8);
}
static void str(bytes *o, const char *s) {
    u64(o, strlen(s));
    put(o, s, strlen(s));
}
static void header(bytes *o, uint32_t version, uint64_t nt, uint64_t nkv) {
    put(o, "GGUF", 4);
    u32(o, version);
    u64(o, nt);
    u64(o, nkv);
}
static void tinfo(bytes *o, const char *name, uint32_t nd, const uint64_t *ne, uint32_t type, uint64_t off) {
    str(o, name);
    u32(o, nd);
    for (uint32_t d = 0; d < nd; d++) u64(o, ne[d]);
    u32(o, type);
    u64(o, off);
}
static void pad_to(bytes *o, size_t a) {
    while (o->n % a) {
        uint8_t z = 0;
        put(o, &z, 1);
    }
}

/* Parses b and expects status want with msg (if not NULL) in the message. */
static void expect_fail(const bytes *b, pxl_status want, const char *msg, int line) {
    pxl_gguf *g = NULL;
    pxl_status s = pxl_gguf_parse(g_ctx, b->b, b->n, &g);
    if (s != want || g != NULL || (msg && !strstr(pxl_ctx_error(g_ctx), msg))) {
        fprintf(stderr, "line %d: status %s, message '%s' (wanted %s, '%s')\n", line, pxl_status_str(s),
                pxl_ctx_error(g_ctx), pxl_status_str(want), msg ? msg : "");
        g_failures++;
    }
    pxl_gguf_free(g);
}
#define EXPECT_FAIL(b, want, msg) expect_fail((b), (want), (msg), __LINE__)

/* ---- round trip ---- */

static const float k_f32[6] = {1.0f, -2.5f, 3.25f, 0.0f, 1e-3f, 7.0f};

static pxl_gguf_writer *make_writer(uint32_t alignment) {
    pxl_gguf_writer *w = NULL;
    CHECK(pxl_gguf_writer_create(g_ctx, &w) == PXL_OK);
    if (alignment != 32) CHECK(pxl_gguf_writer_set_alignment(w, alignment) == PXL_OK);
    CHECK(pxl_gguf_writer_add_string(w, "general.architecture", "llama", 5) == PXL_OK);
    CHECK(pxl_gguf_writer_add_uint(w, "t.u8", PXL_GGUF_UINT8, 200) == PXL_OK);
    CHECK(pxl_gguf_writer_add_int(w, "t.i8", PXL_GGUF_INT8, -100) == PXL_OK);
    CHECK(pxl_gguf_writer_add_uint(w, "t.u16", PXL_GGUF_UINT16, 60000) == PXL_OK);
    CHECK(pxl_gguf_writer_add_int(w, "t.i16", PXL_GGUF_INT16, -30000) == PXL_OK);
    CHECK(pxl_gguf_writer_add_uint(w, "t.u32", PXL_GGUF_UINT32, 4000000000u) == PXL_OK);
    CHECK(pxl_gguf_writer_add_int(w, "t.i32", PXL_GGUF_INT32, -2000000000) == PXL_OK);
    CHECK(pxl_gguf_writer_add_uint(w, "t.u64", PXL_GGUF_UINT64, UINT64_MAX) == PXL_OK);
    CHECK(pxl_gguf_writer_add_int(w, "t.i64", PXL_GGUF_INT64, INT64_MIN) == PXL_OK);
    CHECK(pxl_gguf_writer_add_float(w, "t.f32", PXL_GGUF_FLOAT32, 0.5) == PXL_OK);
    CHECK(pxl_gguf_writer_add_float(w, "t.f64", PXL_GGUF_FLOAT64, 1e300) == PXL_OK);
    CHECK(pxl_gguf_writer_add_bool(w, "t.bool", 1) == PXL_OK);
    CHECK(pxl_gguf_writer_add_string(w, "t.nul", "a\0b", 3) == PXL_OK);
    int32_t ints[3] = {-1, 0, 1 << 30};
    CHECK(pxl_gguf_writer_add_array(w, "t.arr_i32", PXL_GGUF_INT32, ints, 3) == PXL_OK);
    CHECK(pxl_gguf_writer_add_array(w, "t.arr_f32", PXL_GGUF_FLOAT32, k_f32, 6) == PXL_OK);
    uint8_t bools[2] = {0, 1};
    CHECK(pxl_gguf_writer_add_array(w, "t.arr_bool", PXL_GGUF_BOOL, bools, 2) == PXL_OK);
    CHECK(pxl_gguf_writer_add_array(w, "t.arr_empty", PXL_GGUF_UINT64, NULL, 0) == PXL_OK);
    const char *toks[4] = {"<s>", "", "hello", "\xe2\x96\x81world"};
    CHECK(pxl_gguf_writer_add_string_array(w, "tokenizer.ggml.tokens", toks, NULL, 4) == PXL_OK);
    /* tensors: F32 [3, 2], Q8_0 [32, 1] (34 bytes), F16 [64] */
    int64_t ne1[2] = {3, 2}, ne2[1] = {32}, ne3[1] = {64};
    CHECK(pxl_gguf_writer_add_tensor(w, "a.weight", PXL_GGML_F32, 2, ne1, k_f32, sizeof k_f32) == PXL_OK);
    uint8_t q[34];
    for (int i = 0; i < 34; i++) q[i] = (uint8_t)(i * 7);
    CHECK(pxl_gguf_writer_add_tensor(w, "blk.0.q", PXL_GGML_Q8_0, 1, ne2, q, sizeof q) == PXL_OK);
    uint16_t h[64];
    for (int i = 0; i < 64; i++) h[i] = (uint16_t)(0x3c00 + i);
    CHECK(pxl_gguf_writer_add_tensor(w, "c.f16", PXL_GGML_F16, 1, ne3, h, sizeof h) == PXL_OK);
    return w;
}

static void check_contents(const pxl_gguf *g, uint32_t alignment) {
    CHECK(pxl_gguf_version(g) == 3);
    CHECK(pxl_gguf_alignment(g) == alignment);
    CHECK(pxl_gguf_data_offset(g) % alignment == 0);
    CHECK(pxl_gguf_n_kv(g) == 18 + (alignment != 32));
    int64_t i;
    int64_t iv;
    uint64_t uv;
    double dv;
    const char *s;
    size_t len;
    CHECK((i = pxl_gguf_find_key(g, "general.architecture")) >= 0);
    CHECK(pxl_gguf_kv_string(g, (size_t)i, &s, &len) == PXL_OK && len == 5 && memcmp(s, "llama", 5) == 0);
    CHECK(pxl_gguf_kv_type(g, (size_t)i) == PXL_GGUF_STRING);
    CHECK(strcmp(pxl_gguf_key(g, (size_t)i), "general.architecture") == 0);
    struct { const char *k; int64_t v; } ik[] = {{"t.u8", 200}, {"t.i8", -100}, {"t.u16", 60000}, {"t.i16", -30000},
        {"t.u32", 4000000000ll}, {"t.i32", -2000000000}, {"t.i64", INT64_MIN}, {"t.bool", 1}};
    for (size_t k = 0; k < sizeof ik / sizeof ik[0]; k++) {
        i = pxl_gguf_find_key(g, ik[k].k);
        CHECK_MSG(i >= 0 && pxl_gguf_kv_int(g, (size_t)i, &iv) == PXL_OK && iv == ik[k].v, "%s", ik[k].k);
    }
    i = pxl_gguf_find_key(g, "t.u64");
    CHECK(pxl_gguf_kv_uint(g, (size_t)i, &uv) == PXL_OK && uv == UINT64_MAX);
    CHECK(pxl_gguf_kv_int(g, (size_t)i, &iv) == PXL_ERR_FORMAT && strstr(pxl_ctx_error(g_ctx), "does not fit"));
    i = pxl_gguf_find_key(g, "t.i8");
    CHECK(pxl_gguf_kv_uint(g, (size_t)i, &uv) == PXL_ERR_FORMAT && strstr(pxl_ctx_error(g_ctx), "negative"));
    i = pxl_gguf_find_key(g, "t.f32");
    CHECK(pxl_gguf_kv_float(g, (size_t)i, &dv) == PXL_OK && dv == 0.5);
    CHECK(pxl_gguf_kv_int(g, (size_t)i, &iv) == PXL_ERR_FORMAT);
    CHECK(strstr(pxl_ctx_error(g_ctx), "key 't.f32' is float32, not an integer") != NULL);
    i = pxl_gguf_find_key(g, "t.f64");
    CHECK(pxl_gguf_kv_float(g, (size_t)i, &dv) == PXL_OK && dv == 1e300);
    i = pxl_gguf_find_key(g, "t.nul");
    CHECK(pxl_gguf_kv_string(g, (size_t)i, &s, &len) == PXL_OK && len == 3 && memcmp(s, "a\0b", 3) == 0);
    pxl_gguf_type et;
    uint64_t n;
    i = pxl_gguf_find_key(g, "t.arr_i32");
    CHECK(pxl_gguf_kv_array(g, (size_t)i, &et, &n) == PXL_OK && et == PXL_GGUF_INT32 && n == 3);
    CHECK(pxl_gguf_arr_int(g, (size_t)i, 0, &iv) == PXL_OK && iv == -1);
    CHECK(pxl_gguf_arr_int(g, (size_t)i, 2, &iv) == PXL_OK && iv == 1 << 30);
    CHECK(pxl_gguf_arr_int(g, (size_t)i, 3, &iv) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_gguf_arr_float(g, (size_t)i, 0, &dv) == PXL_ERR_FORMAT);
    CHECK(pxl_gguf_kv_string(g, (size_t)i, &s, &len) == PXL_ERR_FORMAT &&
          strstr(pxl_ctx_error(g_ctx), "'t.arr_i32' is an array of int32, not a string"));
    i = pxl_gguf_find_key(g, "t.arr_f32");
    const void *raw;
    size_t esz;
    CHECK(pxl_gguf_arr_data(g, (size_t)i, &raw, &esz) == PXL_OK && esz == 4 && memcmp(raw, k_f32, sizeof k_f32) == 0);
    CHECK(pxl_gguf_arr_float(g, (size_t)i, 2, &dv) == PXL_OK && dv == 3.25);
    i = pxl_gguf_find_key(g, "t.arr_bool");
    CHECK(pxl_gguf_arr_int(g, (size_t)i, 1, &iv) == PXL_OK && iv == 1);
    i = pxl_gguf_find_key(g, "t.arr_empty");
    CHECK(pxl_gguf_kv_array(g, (size_t)i, &et, &n) == PXL_OK && et == PXL_GGUF_UINT64 && n == 0);
    i = pxl_gguf_find_key(g, "tokenizer.ggml.tokens");
    CHECK(pxl_gguf_kv_array(g, (size_t)i, &et, &n) == PXL_OK && et == PXL_GGUF_STRING && n == 4);
    CHECK(pxl_gguf_arr_string(g, (size_t)i, 3, &s, &len) == PXL_OK && len == 8 && memcmp(s, "\xe2\x96\x81world", 8) == 0);
    CHECK(pxl_gguf_arr_string(g, (size_t)i, 1, &s, &len) == PXL_OK && len == 0);
    CHECK(pxl_gguf_arr_string(g, (size_t)i, 0, &s, &len) == PXL_OK && len == 3 && memcmp(s, "<s>", 3) == 0);
    CHECK(pxl_gguf_arr_data(g, (size_t)i, &raw, &esz) == PXL_ERR_FORMAT);
    CHECK(pxl_gguf_find_key(g, "nope") == -1);
    if (alignment != 32) {
        i = pxl_gguf_find_key(g, "general.alignment");
        CHECK(i >= 0 && pxl_gguf_kv_uint(g, (size_t)i, &uv) == PXL_OK && uv == alignment);
    }

    CHECK(pxl_gguf_n_tensors(g) == 3);
    CHECK(pxl_gguf_find_tensor(g, "blk.0.q") == 1);
    CHECK(pxl_gguf_find_tensor(g, "blk.0") == -1);
    const pxl_gguf_tensor *t = pxl_gguf_tensor_at(g, 0);
    CHECK(t && strcmp(t->name, "a.weight") == 0 && t->type == PXL_GGML_F32 && t->ndim == 2 && t->ne[0] == 3 &&
          t->ne[1] == 2 && t->ne[2] == 1 && t->ne[3] == 1 && t->bytes == 24);
    CHECK(t && memcmp(t->data, k_f32, 24) == 0 && t->offset % alignment == 0);
    t = pxl_gguf_tensor_at(g, 1);
    CHECK(t && t->type == PXL_GGML_Q8_0 && t->bytes == 34 && ((const uint8_t *)t->data)[33] == (uint8_t)(33 * 7));
    t = pxl_gguf_tensor_at(g, 2);
    CHECK(t && t->type == PXL_GGML_F16 && t->bytes == 128 && t->offset % alignment == 0 &&
          t->offset + t->bytes <= pxl_gguf_file_size(g));
    CHECK(pxl_gguf_tensor_at(g, 3) == NULL);
}

static void test_round_trip(void) {
    uint32_t aligns[3] = {32, 64, 1};
    for (int k = 0; k < 3; k++) {
        pxl_gguf_writer *w = make_writer(aligns[k]);
        uint8_t *buf = NULL;
        size_t n = 0;
        CHECK(pxl_gguf_writer_to_memory(w, &buf, &n) == PXL_OK);
        CHECK(n % aligns[k] == 0);
        pxl_gguf *g = NULL;
        pxl_status s = pxl_gguf_parse(g_ctx, buf, n, &g);
        CHECK_MSG(s == PXL_OK, "%s", pxl_ctx_error(g_ctx));
        if (g) check_contents(g, aligns[k]);
        pxl_gguf_free(g);
        /* the file: written atomically, opened through the mapping */
        char path[1100];
        snprintf(path, sizeof path, "%s/rt%u.gguf", g_dir, aligns[k]);
        CHECK(pxl_gguf_writer_write(w, path) == PXL_OK);
        g = NULL;
        s = pxl_gguf_open(g_ctx, path, &g);
        CHECK_MSG(s == PXL_OK, "%s", pxl_ctx_error(g_ctx));
        if (g) {
            check_contents(g, aligns[k]);
            CHECK(pxl_gguf_file_size(g) == n);
        }
        pxl_gguf_free(g);
        pxl_free(g_ctx, buf);
        pxl_gguf_writer_free(w);
    }
}

/* Every proper prefix of a valid file fails cleanly with PXL_ERR_FORMAT. */
static void test_truncations(void) {
    pxl_gguf_writer *w = make_writer(32);
    uint8_t *buf = NULL;
    size_t n = 0;
    CHECK(pxl_gguf_writer_to_memory(w, &buf, &n) == PXL_OK);
    /* the last tensor (F16, 128 bytes) ends the file without padding */
    pxl_gguf *g = NULL;
    CHECK(pxl_gguf_parse(g_ctx, buf, n, &g) == PXL_OK);
    const pxl_gguf_tensor *t = g ? pxl_gguf_tensor_at(g, 2) : NULL;
    CHECK(t && t->offset + t->bytes == n);
    pxl_gguf_free(g);
    for (size_t len = 0; len < n; len++) {
        uint8_t *copy = pxl_alloc(g_ctx, len ? len : 1); /* exact size: ASan sees reads past the end */
        if (len) memcpy(copy, buf, len);
        g = NULL;
        pxl_status s = pxl_gguf_parse(g_ctx, copy, len, &g);
        CHECK_MSG(s == PXL_ERR_FORMAT && g == NULL, "prefix %zu: %s", len, pxl_status_str(s));
        pxl_gguf_free(g);
        pxl_free(g_ctx, copy);
    }
    pxl_free(g_ctx, buf);
    pxl_gguf_writer_free(w);
}

static void test_v2_and_errors(void) {
    uint64_t ne32[1] = {32}, ne8[1] = {8};
    bytes b = {0};
    /* a hand-made version 2 file: one key, one F32 tensor of 8 */
    header(&b, 2, 1, 1);
    str(&b, "general.name");
    u32(&b, PXL_GGUF_STRING);
    str(&b, "v2");
    tinfo(&b, "t", 1, ne8, PXL_GGML_F32, 0);
    pad_to(&b, 32);
    for (int i = 0; i < 8; i++) {
        float f = (float)i;
        put(&b, &f, 4);
    }
    pxl_gguf *g = NULL;
    CHECK_MSG(pxl_gguf_parse(g_ctx, b.b, b.n, &g) == PXL_OK, "%s", pxl_ctx_error(g_ctx));
    if (g) {
        CHECK(pxl_gguf_version(g) == 2 && pxl_gguf_n_tensors(g) == 1 && pxl_gguf_data_offset(g) == 96);
        const pxl_gguf_tensor *t = pxl_gguf_tensor_at(g, 0);
        CHECK(t && t->bytes == 32 && ((const float *)t->data)[7] == 7.0f);
    }
    pxl_gguf_free(g);

    bytes v = b;
    memcpy(v.b, "GGUG", 4);
    EXPECT_FAIL(&v, PXL_ERR_FORMAT, "bad magic");
    v = b;
    v.b[4] = 1;
    EXPECT_FAIL(&v, PXL_ERR_FORMAT, "GGUF version 1 is not supported");
    v = b;
    v.b[4] = 4;
    EXPECT_FAIL(&v, PXL_ERR_FORMAT, "version 4");
    v = b;
    EXPECT_FAIL(&(bytes){.n = 0}, PXL_ERR_FORMAT, "truncated");

    /* counts that cannot fit: fail fast, before allocating */
    bytes c = {0};
    header(&c, 3, (uint64_t)1 << 60, 0);
    EXPECT_FAIL(&c, PXL_ERR_FORMAT, "tensors cannot fit");
    c = (bytes){0};
    header(&c, 3, 0, UINT64_MAX);
    EXPECT_FAIL(&c, PXL_ERR_FORMAT, "keys cannot fit");
    c = (bytes){0};
    header(&c, 3, 0, 1);
    str(&c, "a");
    u32(&c, PXL_GGUF_ARRAY);
    u32(&c, PXL_GGUF_UINT32);
    u64(&c, (uint64_t)1 << 62);
    u32(&c, 0);
    EXPECT_FAIL(&c, PXL_ERR_FORMAT, "key 'a' at byte 24: array of 4611686018427387904 uint32");
    c = (bytes){0};
    header(&c, 3, 0, 1);
    str(&c, "a");
    u32(&c, PXL_GGUF_ARRAY);
    u32(&c, PXL_GGUF_STRING);
    u64(&c, UINT64_MAX);
    u64(&c, 0);
    EXPECT_FAIL(&c, PXL_ERR_FORMAT, "strings, but only");
    c = (bytes){0};
    header(&c, 3, 0, 1);
    str(&c, "a");
    u32(&c, PXL_GGUF_STRING);
    u64(&c, UINT64_MAX);
    EXPECT_FAIL(&c, PXL_ERR_FORMAT, "truncated");
    c = (bytes){0};
    header(&c, 3, 0, 1);
    u64(&c, UINT64_MAX - 3); /* the key's length */
    u32(&c, 0);
    u32(&c, 0);
    EXPECT_FAIL(&c, PXL_ERR_FORMAT, "key #0 at byte 32: truncated");
    /* nested arrays, unknown value types, bad bools, NUL in a key, empty key */
    c = (bytes){0};
    header(&c, 3, 0, 1);
    str(&c, "nest");
    u32(&c, PXL_GGUF_ARRAY);
    u32(&c, PXL_GGUF_ARRAY);
    u64(&c, 0);
    EXPECT_FAIL(&c, PXL_ERR_FORMAT, "arrays of arrays are not supported");
    c = (bytes){0};
    header(&c, 3, 0, 1);
    str(&c, "k");
    u32(&c, 13);
    u64(&c, 0);
    EXPECT_FAIL(&c, PXL_ERR_FORMAT, "unknown value type 13");
    c = (bytes){0};
    header(&c, 3, 0, 1);
    str(&c, "k");
    u32(&c, PXL_GGUF_BOOL);
    put(&c, "\x02", 1);
    EXPECT_FAIL(&c, PXL_ERR_FORMAT, "bool value 2");
    c = (bytes){0};
    header(&c, 3, 0, 1);
    u64(&c, 3);
    put(&c, "a\0b", 3);
    u32(&c, PXL_GGUF_UINT8);
    put(&c, "\x01", 1);
    EXPECT_FAIL(&c, PXL_ERR_FORMAT, "NUL byte");
    c = (bytes){0};
    header(&c, 3, 0, 1);
    str(&c, "");
    u32(&c, PXL_GGUF_UINT8);
    put(&c, "\x01", 1);
    EXPECT_FAIL(&c, PXL_ERR_FORMAT, "empty name");
    /* duplicates */
    c = (bytes){0};
    header(&c, 3, 0, 2);
    for (int k = 0; k < 2; k++) {
        str(&c, "dup.key");
        u32(&c, PXL_GGUF_UINT8);
        put(&c, "\x01", 1);
    }
    EXPECT_FAIL(&c, PXL_ERR_FORMAT, "key 'dup.key' at byte 44: duplicate key (also key #0)");
    c = (bytes){0};
    header(&c, 3, 2, 0);
    tinfo(&c, "w", 1, ne8, PXL_GGML_F32, 0);
    tinfo(&c, "w", 1, ne8, PXL_GGML_F32, 32);
    pad_to(&c, 32);
    for (int i = 0; i < 64; i++) put(&c, "\0", 1);
    EXPECT_FAIL(&c, PXL_ERR_FORMAT, "tensor 'w'");
    EXPECT_FAIL(&c, PXL_ERR_FORMAT, "duplicate tensor name");
    /* alignments */
    const uint32_t bad_align[3] = {0, 3, 96};
    for (int k = 0; k < 3; k++) {
        c = (bytes){0};
        header(&c, 3, 0, 1);
        str(&c, "general.alignment");
        u32(&c, PXL_GGUF_UINT32);
        u32(&c, bad_align[k]);
        EXPECT_FAIL(&c, PXL_ERR_FORMAT, "key 'general.alignment' at byte 24");
        EXPECT_FAIL(&c, PXL_ERR_FORMAT, "is not a power of two");
    }
    c = (bytes){0};
    header(&c, 3, 0, 1);
    str(&c, "general.alignment");
    u32(&c, PXL_GGUF_UINT64);
    u64(&c, 32);
    EXPECT_FAIL(&c, PXL_ERR_FORMAT, "is uint64, not uint32");
    /* tensors: misaligned, beyond the file, unknown types, shapes */
    c = (bytes){0};
    header(&c, 3, 1, 0);
    tinfo(&c, "blk.0.attn_q.weight", 1, ne8, PXL_GGML_F32, 4);
    pad_to(&c, 32);
    for (int i = 0; i < 64; i++) put(&c, "\0", 1);
    EXPECT_FAIL(&c, PXL_ERR_FORMAT, "offset 4 is not a multiple of the alignment 32");
    c = (bytes){0};
    header(&c, 3, 1, 0);
    tinfo(&c, "blk.0.attn_q.weight", 1, ne8, PXL_GGML_F32, 0);
    pad_to(&c, 32);
    for (int i = 0; i < 31; i++) put(&c, "\0", 1);
    EXPECT_FAIL(&c, PXL_ERR_FORMAT, "gguf: tensor 'blk.0.attn_q.weight': data [96, 128) beyond the file's 127 bytes");
    c = (bytes){0};
    header(&c, 3, 1, 0);
    tinfo(&c, "t", 1, ne8, PXL_GGML_F32, UINT64_MAX - 31);
    pad_to(&c, 32);
    EXPECT_FAIL(&c, PXL_ERR_FORMAT, "overflows");
    c = (bytes){0};
    header(&c, 3, 1, 0);
    uint64_t huge[4] = {(uint64_t)1 << 32, (uint64_t)1 << 32, 1, 1};
    tinfo(&c, "t", 4, huge, PXL_GGML_F32, 0);
    pad_to(&c, 32);
    EXPECT_FAIL(&c, PXL_ERR_FORMAT, "size overflows");
    c = (bytes){0};
    header(&c, 3, 1, 0);
    tinfo(&c, "gone", 1, ne32, 31, 0); /* a number ggml removed: no layout, so no size to check */
    pad_to(&c, 32);
    EXPECT_FAIL(&c, PXL_ERR_UNSUPPORTED, "tensor 'gone': ggml type 31 (unknown) is not supported");
    c = (bytes){0};
    header(&c, 3, 1, 0);
    tinfo(&c, "odd", 1, ne32, 1000, 0);
    pad_to(&c, 32);
    EXPECT_FAIL(&c, PXL_ERR_UNSUPPORTED, "ggml type 1000 (unknown)");
    c = (bytes){0};
    header(&c, 3, 1, 0);
    tinfo(&c, "q", 1, ne8, PXL_GGML_Q4_K, 0);
    pad_to(&c, 32);
    EXPECT_FAIL(&c, PXL_ERR_FORMAT, "not a multiple of the type's block size");
    c = (bytes){0};
    header(&c, 3, 1, 0);
    tinfo(&c, "z", 0, ne8, PXL_GGML_F32, 0);
    u64(&c, 0); /* room for the one dimension a tensor info has at least */
    EXPECT_FAIL(&c, PXL_ERR_FORMAT, "0 dimensions");
    c = (bytes){0};
    header(&c, 3, 1, 0);
    uint64_t five[5] = {1, 1, 1, 1, 1};
    tinfo(&c, "z", 5, five, PXL_GGML_F32, 0);
    EXPECT_FAIL(&c, PXL_ERR_FORMAT, "5 dimensions");
}

static void test_open_refusals(void) {
    char path[1100];
    pxl_gguf *g = NULL;
    snprintf(path, sizeof path, "%s/fifo.gguf", g_dir);
    unlink(path);
    if (mkfifo(path, 0600) == 0) {
        CHECK(pxl_gguf_open(g_ctx, path, &g) == PXL_ERR_IO && g == NULL);
        CHECK(strstr(pxl_ctx_error(g_ctx), "not a regular file") != NULL);
        unlink(path);
    }
    CHECK(pxl_gguf_open(g_ctx, g_dir, &g) == PXL_ERR_IO && g == NULL);
    CHECK(strstr(pxl_ctx_error(g_ctx), "a directory, not a regular file") != NULL);
    snprintf(path, sizeof path, "%s/empty.gguf", g_dir);
    CHECK(pxl_file_write(g_ctx, path, "", 0) == PXL_OK);
    CHECK(pxl_gguf_open(g_ctx, path, &g) == PXL_ERR_FORMAT && strstr(pxl_ctx_error(g_ctx), "truncated"));
    snprintf(path, sizeof path, "%s/bad.gguf", g_dir);
    CHECK(pxl_file_write(g_ctx, path, "GGUF\3\0\0\0", 8) == PXL_OK);
    CHECK(pxl_gguf_open(g_ctx, path, &g) == PXL_ERR_FORMAT);
    CHECK_MSG(strstr(pxl_ctx_error(g_ctx), "bad.gguf: gguf: header at byte 8: truncated") != NULL, "%s",
              pxl_ctx_error(g_ctx));
    snprintf(path, sizeof path, "%s/no_such_dir/x.gguf", g_dir);
    CHECK(pxl_gguf_open(g_ctx, path, &g) == PXL_ERR_IO);
}

static void test_writer_refusals(void) {
    pxl_gguf_writer *w = NULL;
    CHECK(pxl_gguf_writer_create(g_ctx, &w) == PXL_OK);
    CHECK(pxl_gguf_writer_set_alignment(w, 48) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_gguf_writer_set_alignment(w, 0) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_gguf_writer_add_uint(w, "k", PXL_GGUF_UINT8, 1) == PXL_OK);
    CHECK(pxl_gguf_writer_add_uint(w, "k", PXL_GGUF_UINT8, 1) == PXL_ERR_INVALID_ARG &&
          strstr(pxl_ctx_error(g_ctx), "duplicate key 'k'"));
    CHECK(pxl_gguf_writer_add_uint(w, "k2", PXL_GGUF_UINT8, 256) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_gguf_writer_add_int(w, "k2", PXL_GGUF_UINT32, -1) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_gguf_writer_add_uint(w, "k2", PXL_GGUF_STRING, 1) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_gguf_writer_add_float(w, "k2", PXL_GGUF_INT32, 1.0) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_gguf_writer_add_uint(w, "general.alignment", PXL_GGUF_UINT32, 64) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_gguf_writer_add_uint(w, "", PXL_GGUF_UINT32, 64) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_gguf_writer_add_uint(w, NULL, PXL_GGUF_UINT32, 64) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_gguf_writer_add_array(w, "k2", PXL_GGUF_STRING, "x", 1) == PXL_ERR_INVALID_ARG);
    uint8_t two = 2;
    CHECK(pxl_gguf_writer_add_array(w, "k2", PXL_GGUF_BOOL, &two, 1) == PXL_ERR_INVALID_ARG);
    int64_t ne[2] = {30, 1};
    float f[32] = {0};
    CHECK(pxl_gguf_writer_add_tensor(w, "t", PXL_GGML_F32, 2, ne, f, 30 * 4) == PXL_OK);
    CHECK(pxl_gguf_writer_add_tensor(w, "t", PXL_GGML_F32, 2, ne, f, 30 * 4) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_gguf_writer_add_tensor(w, "u", PXL_GGML_F32, 2, ne, f, 31 * 4) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_gguf_writer_add_tensor(w, "u", PXL_GGML_Q8_0, 2, ne, f, 34) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_gguf_writer_add_tensor(w, "u", 31, 2, ne, f, 34) == PXL_ERR_UNSUPPORTED); /* a removed number */
    CHECK(pxl_gguf_writer_add_tensor(w, "u", PXL_GGML_F32, 5, ne, f, 4) == PXL_ERR_INVALID_ARG);
    /* the failed adds left nothing behind: the file has one key and one tensor */
    uint8_t *buf = NULL;
    size_t n = 0;
    CHECK(pxl_gguf_writer_to_memory(w, &buf, &n) == PXL_OK);
    pxl_gguf *g = NULL;
    CHECK(pxl_gguf_parse(g_ctx, buf, n, &g) == PXL_OK);
    CHECK(pxl_gguf_n_kv(g) == 1 && pxl_gguf_n_tensors(g) == 1);
    pxl_gguf_free(g);
    pxl_free(g_ctx, buf);
    /* an existing directory as the target: refused, nothing written */
    CHECK(pxl_gguf_writer_write(w, g_dir) == PXL_ERR_IO);
    pxl_gguf_writer_free(w);
}

static void test_null_rule(void) {
    pxl_gguf *g = NULL;
    CHECK(pxl_gguf_parse(NULL, "", 0, &g) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_gguf_parse(g_ctx, "", 0, NULL) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_gguf_open(g_ctx, NULL, &g) == PXL_ERR_INVALID_ARG && strstr(pxl_ctx_error(g_ctx), "path is NULL"));
    int64_t v;
    CHECK(pxl_gguf_kv_int(NULL, 0, &v) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_gguf_find_key(NULL, "x") == -1 && pxl_gguf_find_tensor(NULL, "x") == -1);
    CHECK(pxl_gguf_tensor_at(NULL, 0) == NULL && pxl_gguf_key(NULL, 0) == NULL && pxl_gguf_n_kv(NULL) == 0);
    CHECK(pxl_gguf_writer_create(g_ctx, NULL) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_gguf_writer_add_bool(NULL, "x", 1) == PXL_ERR_INVALID_ARG);
    pxl_gguf_free(NULL);
    pxl_gguf_writer_free(NULL);
    CHECK(strcmp(pxl_ggml_type_name(PXL_GGML_Q6_K), "Q6_K") == 0 && strcmp(pxl_ggml_type_name(999), "unknown") == 0);
    CHECK(pxl_ggml_block_elems(PXL_GGML_Q4_K) == 256 && pxl_ggml_block_bytes(PXL_GGML_Q4_K) == 144);
    CHECK(pxl_ggml_block_bytes(PXL_GGML_BF16) == 2 && pxl_ggml_block_elems(4) == 0 && pxl_ggml_block_bytes(36) == 0);
    CHECK(strcmp(pxl_gguf_type_name(PXL_GGUF_FLOAT64), "float64") == 0 &&
          strcmp(pxl_gguf_type_name((pxl_gguf_type)42), "?") == 0);
}

/* Types pxl has no kernel for (IQ*, TQ*, MXFP4) have layouts: their tensors
 * are sized and bounds-checked like all others and the file opens. */
static void test_no_kernel_types(void) {
    static const struct { uint32_t type; const char *name; uint32_t blk, bytes; } k[] = {
        {PXL_GGML_IQ2_XXS, "IQ2_XXS", 256, 66}, {PXL_GGML_IQ2_XS, "IQ2_XS", 256, 74},
        {PXL_GGML_IQ3_XXS, "IQ3_XXS", 256, 98}, {PXL_GGML_IQ1_S, "IQ1_S", 256, 50},
        {PXL_GGML_IQ4_NL, "IQ4_NL", 32, 18},    {PXL_GGML_IQ3_S, "IQ3_S", 256, 110},
        {PXL_GGML_IQ2_S, "IQ2_S", 256, 82},     {PXL_GGML_IQ4_XS, "IQ4_XS", 256, 136},
        {PXL_GGML_IQ1_M, "IQ1_M", 256, 56},     {PXL_GGML_TQ1_0, "TQ1_0", 256, 54},
        {PXL_GGML_TQ2_0, "TQ2_0", 256, 66},     {PXL_GGML_MXFP4, "MXFP4", 32, 17},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        CHECK_MSG(strcmp(pxl_ggml_type_name(k[i].type), k[i].name) == 0 &&
                      pxl_ggml_block_elems(k[i].type) == k[i].blk && pxl_ggml_block_bytes(k[i].type) == k[i].bytes,
                  "type %u", k[i].type);

    /* written and read back: an IQ4_NL [64, 3] (2 blocks a row, 108 bytes) last */
    pxl_gguf_writer *w = NULL;
    CHECK(pxl_gguf_writer_create(g_ctx, &w) == PXL_OK);
    CHECK(pxl_gguf_writer_add_string(w, "general.architecture", "llama", 5) == PXL_OK);
    int64_t ne_f[1] = {4}, ne_iq[2] = {64, 3}, ne_odd[1] = {48};
    CHECK(pxl_gguf_writer_add_tensor(w, "norm.weight", PXL_GGML_F32, 1, ne_f, k_f32, 16) == PXL_OK);
    uint8_t q[108];
    for (int i = 0; i < 108; i++) q[i] = (uint8_t)(i * 13);
    CHECK(pxl_gguf_writer_add_tensor(w, "iq.weight", PXL_GGML_IQ4_NL, 2, ne_iq, q, 107) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_gguf_writer_add_tensor(w, "iq.weight", PXL_GGML_IQ4_NL, 1, ne_odd, q, 27) == PXL_ERR_INVALID_ARG &&
          strstr(pxl_ctx_error(g_ctx), "block size"));
    CHECK(pxl_gguf_writer_add_tensor(w, "iq.weight", PXL_GGML_IQ4_NL, 2, ne_iq, q, sizeof q) == PXL_OK);
    uint8_t *buf = NULL;
    size_t n = 0;
    CHECK(pxl_gguf_writer_to_memory(w, &buf, &n) == PXL_OK);
    pxl_gguf *g = NULL;
    pxl_status s = pxl_gguf_parse(g_ctx, buf, n, &g);
    CHECK_MSG(s == PXL_OK, "%s", pxl_ctx_error(g_ctx));
    const pxl_gguf_tensor *t = g ? pxl_gguf_tensor_at(g, 1) : NULL;
    CHECK(t && t->type == PXL_GGML_IQ4_NL && t->ndim == 2 && t->ne[0] == 64 && t->ne[1] == 3 && t->bytes == 108 &&
          memcmp(t->data, q, sizeof q) == 0);
    /* the file cut inside the IQ4_NL data (one byte short): a format error naming the tensor */
    size_t end = t ? (size_t)(t->offset + t->bytes) : 0;
    pxl_gguf_free(g);
    bytes c = {0};
    CHECK(end > 0 && end <= n && end - 1 <= sizeof c.b);
    if (end > 0 && end <= n && end - 1 <= sizeof c.b) {
        put(&c, buf, end - 1);
        char want[160];
        snprintf(want, sizeof want, "tensor 'iq.weight': data [%zu, %zu) beyond the file's %zu bytes", end - 108, end,
                 end - 1);
        EXPECT_FAIL(&c, PXL_ERR_FORMAT, want);
    }
    pxl_free(g_ctx, buf);
    /* the file pxl gguf info shows (cli_gguf_info_iq) */
    char path[1100];
    snprintf(path, sizeof path, "%s/iq4nl.gguf", g_dir);
    CHECK(pxl_gguf_writer_write(w, path) == PXL_OK);
    g = NULL;
    CHECK(pxl_gguf_open(g_ctx, path, &g) == PXL_OK && pxl_gguf_find_tensor(g, "iq.weight") == 1);
    pxl_gguf_free(g);
    pxl_gguf_writer_free(w);

    /* hand-made: every known layout sizes its tensor (one block short of the
     * data: refused; the rows not a multiple of the block: refused) */
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        uint64_t ne[2] = {k[i].blk * 2, 3}; /* 6 blocks */
        c = (bytes){0};
        header(&c, 3, 1, 0);
        tinfo(&c, "x", 2, ne, k[i].type, 0);
        pad_to(&c, 32);
        size_t start = c.n;
        for (uint32_t j = 0; j < 6 * k[i].bytes - 1; j++) put(&c, "\x5a", 1);
        char want[160];
        snprintf(want, sizeof want, "tensor 'x': data [%zu, %zu) beyond the file's %zu bytes", start,
                 start + 6 * k[i].bytes, c.n);
        EXPECT_FAIL(&c, PXL_ERR_FORMAT, want);
        put(&c, "\x5a", 1);
        g = NULL;
        CHECK_MSG(pxl_gguf_parse(g_ctx, c.b, c.n, &g) == PXL_OK && pxl_gguf_tensor_at(g, 0)->bytes == 6 * k[i].bytes,
                  "%s: %s", k[i].name, pxl_ctx_error(g_ctx));
        pxl_gguf_free(g);
        c = (bytes){0};
        header(&c, 3, 1, 0);
        ne[0] = k[i].blk + 16;
        tinfo(&c, "x", 2, ne, k[i].type, 0);
        pad_to(&c, 32);
        snprintf(want, sizeof want, "%s [%llu x 3 x 1 x 1]: row length not a multiple", k[i].name,
                 (unsigned long long)ne[0]);
        EXPECT_FAIL(&c, PXL_ERR_FORMAT, want);
    }
}

/* Many keys and tensors: the hash indexes find each. */
static void test_many(void) {
    pxl_gguf_writer *w = NULL;
    CHECK(pxl_gguf_writer_create(g_ctx, &w) == PXL_OK);
    char name[64];
    float f = 1.0f;
    int64_t ne[1] = {1};
    for (int i = 0; i < 3000; i++) {
        snprintf(name, sizeof name, "key.%d", i);
        CHECK(pxl_gguf_writer_add_uint(w, name, PXL_GGUF_UINT32, (uint64_t)i) == PXL_OK);
        snprintf(name, sizeof name, "blk.%d.weight", i);
        CHECK(pxl_gguf_writer_add_tensor(w, name, PXL_GGML_F32, 1, ne, &f, 4) == PXL_OK);
    }
    uint8_t *buf = NULL;
    size_t n = 0;
    CHECK(pxl_gguf_writer_to_memory(w, &buf, &n) == PXL_OK);
    pxl_gguf *g = NULL;
    CHECK(pxl_gguf_parse(g_ctx, buf, n, &g) == PXL_OK);
    for (int i = 0; i < 3000 && g; i++) {
        snprintf(name, sizeof name, "key.%d", i);
        CHECK(pxl_gguf_find_key(g, name) == i);
        snprintf(name, sizeof name, "blk.%d.weight", i);
        CHECK(pxl_gguf_find_tensor(g, name) == i);
    }
    pxl_gguf_free(g);
    pxl_free(g_ctx, buf);
    pxl_gguf_writer_free(w);
}

int main(int argc, char **argv) {
    if (argc > 1) snprintf(g_dir, sizeof g_dir, "%s", argv[1]);
    mkdir(g_dir, 0755);
    pxl_ctx_options o = pxl_ctx_options_default();
    o.backend = PXL_BACKEND_CPU;
    o.quiet = 1;
    if (pxl_ctx_create(&o, &g_ctx) != PXL_OK) {
        fprintf(stderr, "no context\n");
        return 1;
    }
    test_round_trip();
    test_truncations();
    test_v2_and_errors();
    test_open_refusals();
    test_writer_refusals();
    test_no_kernel_types();
    test_null_rule();
    test_many();
    pxl_ctx_free(g_ctx);
    return test_result("test_gguf");
}
