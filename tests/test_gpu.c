/* gpu/ runtime on a real adapter: buffers, pipelines, the recorder, errors, timing.
 * Skips (exit 77) when no adapter exists. */
#include "check.h"
#include "test_ctx.h"
#include "pxl/gpu.h"
#include "pxl/ops.h"
#include "gpu/gpu_internal.h"

#include <dirent.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void test_buffers(pxl_ctx *ctx) {
    static const size_t sizes[] = {0, 1, 3, 4, 5, 12, 17, 255, 1021, 1024, 65540, (1u << 20) + 4, (5u << 20) + 12};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t size = sizes[k];
        size_t bytes = size / 4 * 4; /* transfers are whole words */
        pxl_buffer *b = NULL;
        CHECK(pxl_buffer_create(ctx, size, &b) == PXL_OK);
        if (!b) continue;
        CHECK(pxl_buffer_size(b) == size);
        uint8_t *src = malloc(bytes + 1), *dst = malloc(bytes + 1);
        for (size_t i = 0; i < bytes; i++) src[i] = (uint8_t)(i * 131u + k);
        memset(dst, 0xEE, bytes + 1);
        CHECK(pxl_buffer_upload(ctx, b, 0, src, bytes) == PXL_OK);
        CHECK(pxl_buffer_download(ctx, b, 0, dst, bytes) == PXL_OK);
        CHECK_MSG(memcmp(src, dst, bytes) == 0, "round trip of %zu bytes", size);
        CHECK(dst[bytes] == 0xEE); /* nothing written past the request */
        if (bytes >= 8) { /* a sub-range at an offset */
            uint32_t w = 0xA1B2C3D4u, r = 0;
            CHECK(pxl_buffer_upload(ctx, b, bytes - 4, &w, 4) == PXL_OK);
            CHECK(pxl_buffer_download(ctx, b, bytes - 4, &r, 4) == PXL_OK && r == w);
        }
        /* out of range and misaligned requests are errors, not crashes */
        CHECK(pxl_buffer_upload(ctx, b, 0, src, bytes + 8) == PXL_ERR_INVALID_ARG);
        CHECK(pxl_buffer_download(ctx, b, 2, dst, 4) == PXL_ERR_INVALID_ARG);
        CHECK(pxl_buffer_download(ctx, b, SIZE_MAX - 3, dst, 8) == PXL_ERR_INVALID_ARG);
        free(src);
        free(dst);
        pxl_buffer_free(b);
    }
    /* the pool hands back freed buffers */
    pxl_gpu_stats before = pxl_gpu_get_stats(ctx);
    pxl_buffer *b;
    CHECK(pxl_buffer_create(ctx, 1024, &b) == PXL_OK);
    pxl_buffer_free(b);
    CHECK(pxl_buffer_create(ctx, 1024, &b) == PXL_OK);
    pxl_buffer_free(b);
    CHECK(pxl_gpu_get_stats(ctx).buffer_pool_hits >= before.buffer_pool_hits + 1);
    /* larger than the device allows */
    const pxl_gpu_info *i = pxl_gpu_get_info(ctx);
    CHECK(pxl_buffer_create(ctx, (size_t)i->max_buffer_size + 1, &b) == PXL_ERR_INVALID_ARG);
    pxl_buffer_free(NULL);
}

/*
 * Uploads of 1 MiB and more go through two staging buffers used in turn,
 * each mapped again behind its copy: pieces larger than a stage, uploads
 * back to back into one buffer (the second waits for a stage still in
 * flight), and one that overwrites part of an earlier one must all land.
 */
static void test_staged_uploads(pxl_ctx *ctx) {
    const size_t bytes = (40u << 20) + 12; /* eleven pieces of at most 4 MiB */
    uint32_t *a = malloc(bytes), *back = malloc(bytes);
    CHECK(a && back);
    if (!a || !back) return;
    for (size_t i = 0; i < bytes / 4; i++) a[i] = (uint32_t)(i * 2654435761u);
    pxl_buffer *b = NULL;
    CHECK(pxl_buffer_create(ctx, bytes, &b) == PXL_OK);
    if (!b) goto done;
    CHECK(pxl_buffer_upload(ctx, b, 0, a, bytes) == PXL_OK);
    /* overwrite 3 MiB in the middle, twice in a row, through both stages */
    const size_t mid = 7u << 20, len = 3u << 20;
    for (int round = 0; round < 3; round++) {
        for (size_t i = 0; i < len / 4; i++) a[mid / 4 + i] = (uint32_t)(i ^ (0x5A5A0000u + (unsigned)round));
        CHECK(pxl_buffer_upload(ctx, b, mid, (const uint8_t *)a + mid, len) == PXL_OK);
    }
    CHECK(pxl_buffer_download(ctx, b, 0, back, bytes) == PXL_OK);
    CHECK_MSG(memcmp(a, back, bytes) == 0, "staged uploads of %zu bytes", bytes);
done:
    pxl_buffer_free(b);
    free(a);
    free(back);
}

/* Several ranges of two buffers in one round trip; a bad range fails them all. */
static void test_download_many(pxl_ctx *ctx) {
    const size_t n = 4096;
    uint32_t *a = malloc(n * 4), *b = malloc(n * 4), out[5][64];
    for (size_t i = 0; i < n; i++) {
        a[i] = (uint32_t)i * 3u;
        b[i] = ~(uint32_t)i;
    }
    pxl_buffer *ba = NULL, *bb = NULL;
    CHECK(pxl_buffer_create(ctx, n * 4, &ba) == PXL_OK && pxl_buffer_create(ctx, n * 4, &bb) == PXL_OK);
    if (!ba || !bb) goto done;
    CHECK(pxl_buffer_upload(ctx, ba, 0, a, n * 4) == PXL_OK);
    CHECK(pxl_buffer_upload(ctx, bb, 0, b, n * 4) == PXL_OK);
    memset(out, 0xEE, sizeof out);
    pxl_download d[5] = {
        {ba, 0, 64 * 4, out[0]},    {bb, 100 * 4, 17 * 4, out[1]}, {ba, (n - 64) * 4, 64 * 4, out[2]},
        {bb, 8, 0, out[3]},         {ba, 4, 4, out[4]},
    };
    CHECK(pxl_buffer_download_many(ctx, d, 5) == PXL_OK);
    CHECK(memcmp(out[0], a, 64 * 4) == 0);
    CHECK(memcmp(out[1], b + 100, 17 * 4) == 0 && out[1][17] == 0xEEEEEEEEu);
    CHECK(memcmp(out[2], a + n - 64, 64 * 4) == 0);
    CHECK(out[3][0] == 0xEEEEEEEEu); /* an empty range writes nothing */
    CHECK(out[4][0] == a[1] && out[4][1] == 0xEEEEEEEEu);
    d[3].offset = n * 4;
    d[3].size = 4; /* past the end */
    CHECK(pxl_buffer_download_many(ctx, d, 5) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_buffer_download_many(ctx, d, 0) == PXL_OK);
done:
    pxl_buffer_free(ba);
    pxl_buffer_free(bb);
    free(a);
    free(b);
}

static const char *k_add =
    "struct P { n: u32, v: f32 }\n"
    "@group(0) @binding(0) var<storage, read_write> x: array<f32>;\n"
    "@group(0) @binding(1) var<uniform> p: P;\n"
    "override WG: u32 = 64u;\n"
    "@compute @workgroup_size(WG)\n"
    "fn add(@builtin(global_invocation_id) id: vec3<u32>) {\n"
    "    if (id.x < p.n) { x[id.x] = x[id.x] + p.v; }\n"
    "}\n";

static void test_compile_error(pxl_ctx *ctx) {
    const char *bad = "@compute @workgroup_size(1)\n"
                      "fn main() {\n"
                      "    let x: u32 = undefined_thing;\n"
                      "}\n";
    pxl_kernel *k = NULL;
    pxl_status s = pxl_kernel_get(ctx, "bad.wgsl", bad, "main", NULL, 0, &k);
    CHECK(s == PXL_ERR_SHADER);
    CHECK(k == NULL);
    CHECK_MSG(strstr(pxl_ctx_error(ctx), "bad.wgsl:3:") != NULL, "message: %s", pxl_ctx_error(ctx));
    CHECK_MSG(strstr(pxl_ctx_error(ctx), "undefined_thing") != NULL, "message: %s", pxl_ctx_error(ctx));
    /* a missing entry point is a shader error too */
    s = pxl_kernel_get(ctx, "add.wgsl", k_add, "no_such_entry", NULL, 0, &k);
    CHECK(s == PXL_ERR_SHADER);
    /* and the context still works afterwards */
    CHECK(pxl_kernel_get(ctx, "add.wgsl", k_add, "add", NULL, 0, &k) == PXL_OK);
}

static void test_pipeline_cache(pxl_ctx *ctx) {
    pxl_kernel *k1, *k2, *k3;
    pxl_constant wg64 = {"WG", 64}, wg32 = {"WG", 32};
    pxl_gpu_stats s0 = pxl_gpu_get_stats(ctx);
    CHECK(pxl_kernel_get(ctx, "add.wgsl", k_add, "add", &wg64, 1, &k1) == PXL_OK);
    CHECK(pxl_kernel_get(ctx, "add.wgsl", k_add, "add", &wg64, 1, &k2) == PXL_OK);
    CHECK(k1 == k2);
    pxl_gpu_stats s1 = pxl_gpu_get_stats(ctx);
    CHECK(s1.pipeline_cache_hits == s0.pipeline_cache_hits + 1);
    CHECK(s1.pipeline_cache_misses == s0.pipeline_cache_misses + 1);
    CHECK(pxl_kernel_get(ctx, "add.wgsl", k_add, "add", &wg32, 1, &k3) == PXL_OK);
    CHECK(k3 != k1); /* different constants: a different pipeline */
    CHECK(pxl_gpu_get_stats(ctx).pipeline_cache_misses == s1.pipeline_cache_misses + 1);
    /* fixed text: the same kernels, found by pointer; a copy of the text
     * (another pointer) is compared and finds them too */
    pxl_kernel *k4, *k5;
    CHECK(pxl_kernel_get_static(ctx, "add.wgsl", k_add, "add", &wg64, 1, &k4) == PXL_OK && k4 == k1);
    char *copy = strdup(k_add);
    CHECK(pxl_kernel_get_static(ctx, "add.wgsl", copy, "add", &wg32, 1, &k5) == PXL_OK && k5 == k3);
    free(copy);
    CHECK(pxl_kernel_get_static(ctx, "add.wgsl", k_add, "nope", &wg32, 1, &k5) == PXL_ERR_SHADER);
    CHECK(pxl_kernel_get(ctx, "add.wgsl", NULL, "add", NULL, 0, &k5) == PXL_ERR_INVALID_ARG);
    CHECK(strstr(pxl_ctx_error(ctx), "wgsl is NULL") != NULL);
}

/* ---- the pipeline cache on disk ---- */

static void test_blob_format(void) {
    const char key[] = "a key", value[] = "the value bytes";
    uint8_t buf[32 + sizeof key + sizeof value];
    pxl_blob_header(buf, key, sizeof key, value, sizeof value);
    memcpy(buf + 32, key, sizeof key);
    memcpy(buf + 32 + sizeof key, value, sizeof value);
    size_t off = 0, n = 0;
    CHECK(pxl_blob_parse(buf, sizeof buf, key, sizeof key, &off, &n) == 1);
    CHECK(n == sizeof value && off == 32 + sizeof key && memcmp(buf + off, value, n) == 0);
    /* another key with the same size is a miss (a hash collision) */
    CHECK(pxl_blob_parse(buf, sizeof buf, "b key", sizeof key, &off, &n) == 0);
    CHECK(pxl_blob_parse(buf, sizeof buf, key, sizeof key - 1, &off, &n) == 0);
    /* every truncation, and every single-bit flip, is a miss */
    int all = 1;
    for (size_t len = 0; len < sizeof buf; len++) all &= pxl_blob_parse(buf, len, key, sizeof key, &off, &n) == 0;
    CHECK_MSG(all, "a truncated entry parsed");
    all = 1;
    for (size_t i = 0; i < sizeof buf * 8; i++) {
        buf[i / 8] ^= (uint8_t)(1u << (i % 8));
        all &= pxl_blob_parse(buf, sizeof buf, key, sizeof key, &off, &n) == 0;
        buf[i / 8] ^= (uint8_t)(1u << (i % 8));
    }
    CHECK_MSG(all, "an entry with a flipped bit parsed");
    /* sizes near 2^64 are refused, not summed */
    uint8_t huge[64];
    memcpy(huge, buf, 32);
    memset(huge + 16, 0xff, 8);
    CHECK(pxl_blob_parse(huge, sizeof huge, key, sizeof key, &off, &n) == 0);
}

static pxl_ctx *open_cached(const char *dir) {
    pxl_ctx_options o = pxl_ctx_options_default();
    o.backend = PXL_BACKEND_GPU;
    o.quiet = 1;
    o.cache_dir = dir;
    pxl_ctx *ctx = NULL;
    if (pxl_ctx_create(&o, &ctx) != PXL_OK) {
        pxl_ctx_free(ctx);
        return NULL;
    }
    return ctx;
}

/* Compiles k_add in a fresh context on dir, runs it once; returns the stats. */
static pxl_gpu_stats cached_compile(const char *dir) {
    pxl_gpu_stats st;
    memset(&st, 0, sizeof st);
    pxl_ctx *ctx = open_cached(dir);
    CHECK(ctx != NULL);
    if (!ctx) return st;
    CHECK((pxl_gpu_get_info(ctx)->cache_dir != NULL) == (dir[0] != '\0'));
    pxl_kernel *k = NULL;
    pxl_constant wg = {"WG", 64};
    CHECK(pxl_kernel_get(ctx, "add.wgsl", k_add, "add", &wg, 1, &k) == PXL_OK);
    pxl_buffer *x = NULL;
    float v[64] = {0};
    CHECK(pxl_buffer_create(ctx, sizeof v, &x) == PXL_OK);
    CHECK(pxl_buffer_upload(ctx, x, 0, v, sizeof v) == PXL_OK);
    pxl_recorder *r = NULL;
    CHECK(pxl_recorder_begin(ctx, 0, &r) == PXL_OK);
    struct { uint32_t n; float v; } p = {64, 2.5f};
    pxl_binding b = {0, x, 0, 0};
    pxl_dispatch d = {k, &b, 1, &p, sizeof p, 1, {1, 1, 1}};
    CHECK(k && pxl_recorder_dispatch(r, &d) == PXL_OK);
    CHECK(pxl_recorder_submit(r, 1, NULL) == PXL_OK);
    CHECK(pxl_buffer_download(ctx, x, 0, v, sizeof v) == PXL_OK);
    CHECK(v[0] == 2.5f && v[63] == 2.5f);
    pxl_buffer_free(x);
    st = pxl_gpu_get_stats(ctx);
    pxl_ctx_free(ctx);
    return st;
}

/* Applies f to every entry file of <dir>/dawn; returns how many. */
static int for_entries(const char *dir, void (*f)(const char *path, int i)) {
    char sub[512];
    snprintf(sub, sizeof sub, "%s/dawn", dir);
    DIR *d = opendir(sub);
    if (!d) return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", sub, e->d_name);
        if (f) f(path, n);
        n++;
    }
    closedir(d);
    return n;
}

static void corrupt(const char *path, int i) {
    FILE *fp = fopen(path, "r+b");
    if (!fp) return;
    if (i % 2 == 0) { /* flip a byte of the value */
        fseek(fp, -1, SEEK_END);
        int c = fgetc(fp);
        fseek(fp, -1, SEEK_END);
        fputc(c ^ 0x40, fp);
        fclose(fp);
    } else { /* truncate */
        fclose(fp);
        CHECK(truncate(path, 40) == 0);
    }
}

static void fifo_entry(const char *path, int i) {
    (void)i;
    unlink(path);
    CHECK(mkfifo(path, 0600) == 0);
}

static void remove_entry(const char *path, int i) {
    (void)i;
    unlink(path);
}

static void test_disk_cache(void) {
    char dir[] = "/tmp/pxl-test-cache-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    /* first context: compiles and stores */
    pxl_gpu_stats a = cached_compile(dir);
    CHECK(a.disk_cache_stores >= 1);
    CHECK(a.disk_cache_store_failures == 0);
    int files = for_entries(dir, NULL);
    CHECK_MSG(files >= 1, "%d cache files", files);
    /* second context (as a second process would): finds them */
    pxl_gpu_stats b = cached_compile(dir);
    CHECK(b.disk_cache_hits >= 1);
    /* damaged entries are misses, and the pipeline still works */
    for_entries(dir, corrupt);
    pxl_gpu_stats c = cached_compile(dir);
    CHECK(c.disk_cache_misses >= 1);
    /* and they were replaced: the next context hits again */
    pxl_gpu_stats e = cached_compile(dir);
    CHECK(e.disk_cache_hits >= 1);
    /* entries that are FIFOs are misses, not a process blocked for ever
     * (alarm: a hang fails the test) */
    int fifos = for_entries(dir, fifo_entry);
    alarm(120);
    pxl_gpu_stats ff = cached_compile(dir);
    alarm(0);
    CHECK_MSG(fifos >= 1 && ff.disk_cache_misses >= 1, "%d fifos, %llu misses", fifos,
              (unsigned long long)ff.disk_cache_misses);
    /* "" turns the cache off */
    pxl_gpu_stats off = cached_compile("");
    CHECK(off.disk_cache_stores == 0 && off.disk_cache_hits == 0);
    for_entries(dir, remove_entry);
    char sub[512];
    snprintf(sub, sizeof sub, "%s/dawn", dir);
    rmdir(sub);
    CHECK(rmdir(dir) == 0);
}

static void test_recorder(pxl_ctx *ctx) {
    const size_t n = 1000;
    pxl_kernel *k;
    pxl_constant wg = {"WG", 64};
    CHECK(pxl_kernel_get(ctx, "add.wgsl", k_add, "add", &wg, 1, &k) == PXL_OK);
    pxl_buffer *x;
    CHECK(pxl_buffer_create(ctx, n * 4, &x) == PXL_OK);
    float *h = calloc(n, sizeof *h);
    CHECK(pxl_buffer_upload(ctx, x, 0, h, n * 4) == PXL_OK);
    /* 300 dependent dispatches, each with its own uniforms, one submit */
    pxl_gpu_stats s0 = pxl_gpu_get_stats(ctx);
    pxl_recorder *r;
    CHECK(pxl_recorder_begin(ctx, 1, &r) == PXL_OK);
    for (int i = 0; i < 300; i++) {
        struct { uint32_t n; float v; } p = {(uint32_t)n, (float)(i % 3)};
        pxl_binding b = {0, x, 0, 0};
        pxl_dispatch d = {k, &b, 1, &p, sizeof p, 1, {(uint32_t)((n + 63) / 64), 1, 1}};
        CHECK(pxl_recorder_dispatch(r, &d) == PXL_OK);
    }
    uint64_t ns = 0;
    CHECK(pxl_recorder_submit(r, 1, &ns) == PXL_OK);
    CHECK(pxl_gpu_get_stats(ctx).submits == s0.submits + 1);
    if (pxl_gpu_get_info(ctx)->has_timestamps) CHECK(ns > 0);
    CHECK(pxl_buffer_download(ctx, x, 0, h, n * 4) == PXL_OK);
    int ok = 1;
    for (size_t i = 0; i < n; i++) ok &= h[i] == 300.0f; /* 100 * (0 + 1 + 2) */
    CHECK(ok);

    /* a copy inside a recording is ordered with the dispatches */
    pxl_buffer *y;
    CHECK(pxl_buffer_create(ctx, n * 4, &y) == PXL_OK);
    CHECK(pxl_recorder_begin(ctx, 0, &r) == PXL_OK);
    struct { uint32_t n; float v; } p = {(uint32_t)n, 1.0f};
    pxl_binding b = {0, x, 0, 0};
    pxl_dispatch d = {k, &b, 1, &p, sizeof p, 1, {(uint32_t)((n + 63) / 64), 1, 1}};
    CHECK(pxl_recorder_dispatch(r, &d) == PXL_OK);
    CHECK(pxl_recorder_copy(r, x, 0, y, 0, n * 4) == PXL_OK);
    CHECK(pxl_recorder_dispatch(r, &d) == PXL_OK);
    CHECK(pxl_recorder_copy(r, x, 0, y, 0, 6) == PXL_ERR_INVALID_ARG); /* misaligned */
    CHECK(pxl_recorder_submit(r, 1, NULL) == PXL_ERR_INVALID_ARG);    /* reports the first error */
    CHECK(pxl_recorder_begin(ctx, 0, &r) == PXL_OK);
    CHECK(pxl_recorder_dispatch(r, &d) == PXL_OK);
    CHECK(pxl_recorder_copy(r, x, 0, y, 0, n * 4) == PXL_OK);
    CHECK(pxl_recorder_dispatch(r, &d) == PXL_OK);
    CHECK(pxl_recorder_submit(r, 1, NULL) == PXL_OK);
    float y0 = 0, x0 = 0;
    CHECK(pxl_buffer_download(ctx, y, 0, &y0, 4) == PXL_OK && y0 == 301.0f);
    CHECK(pxl_buffer_download(ctx, x, 0, &x0, 4) == PXL_OK && x0 == 302.0f);

    /* a validation error (missing binding) comes back as a status; the context survives */
    CHECK(pxl_recorder_begin(ctx, 0, &r) == PXL_OK);
    pxl_dispatch bad = {k, NULL, 0, &p, sizeof p, 1, {1, 1, 1}};
    CHECK(pxl_recorder_dispatch(r, &bad) == PXL_OK); /* detected by WebGPU, not by pxl */
    pxl_status s = pxl_recorder_submit(r, 1, NULL);
    CHECK(s == PXL_ERR_GPU);
    CHECK_MSG(strstr(pxl_ctx_error(ctx), "validation") != NULL, "%s", pxl_ctx_error(ctx));
    CHECK(pxl_gpu_finish(ctx) == PXL_OK);
    CHECK(pxl_buffer_download(ctx, x, 0, &x0, 4) == PXL_OK && x0 == 302.0f);

    /* the same in the ops stream, which uses no error scopes (tuning gpu_scopes): reported by
     * the uncaptured-error handler at the flush or at the next wait at the latest */
    CHECK(pxl_gpu_stream(ctx, &r) == PXL_OK);
    CHECK(pxl_recorder_dispatch(r, &bad) == PXL_OK);
    s = pxl_gpu_flush(ctx, 0, NULL);
    if (s == PXL_OK) s = pxl_gpu_finish(ctx);
    CHECK(s == PXL_ERR_GPU);
    CHECK_MSG(strstr(pxl_ctx_error(ctx), "validation") != NULL, "%s", pxl_ctx_error(ctx));
    CHECK(pxl_gpu_finish(ctx) == PXL_OK);
    CHECK(pxl_buffer_download(ctx, x, 0, &x0, 4) == PXL_OK && x0 == 302.0f);

    /* and in a recorder begun unchecked, submitted at once or ended first */
    for (int ended = 0; ended < 2; ended++) {
        CHECK(pxl_recorder_begin(ctx, PXL_RECORDER_UNCHECKED, &r) == PXL_OK);
        CHECK(pxl_recorder_dispatch(r, &bad) == PXL_OK);
        s = ended ? pxl_recorder_end(r) : PXL_OK;
        if (s == PXL_OK) s = pxl_recorder_submit(r, 0, NULL);
        else pxl_recorder_discard(r);
        if (s == PXL_OK) s = pxl_gpu_finish(ctx);
        CHECK(s == PXL_ERR_GPU);
        CHECK_MSG(strstr(pxl_ctx_error(ctx), "validation") != NULL, "%s", pxl_ctx_error(ctx));
        CHECK(pxl_gpu_finish(ctx) == PXL_OK);
    }

    /* too many workgroups is caught before WebGPU sees it */
    CHECK(pxl_recorder_begin(ctx, 0, &r) == PXL_OK);
    pxl_dispatch big = {k, &b, 1, &p, sizeof p, 1, {UINT32_MAX, 1, 1}};
    CHECK(pxl_recorder_dispatch(r, &big) == PXL_ERR_INVALID_ARG);
    pxl_recorder_discard(r);
    pxl_recorder_discard(NULL);

    free(h);
    pxl_buffer_free(x);
    pxl_buffer_free(y);
}

/* ---- one queue order: ops and the caller's recorder ---- */

static const char *k_double =
    "@group(0) @binding(0) var<storage, read> x: array<f32>;\n"
    "@group(0) @binding(1) var<storage, read_write> y: array<f32>;\n"
    "@compute @workgroup_size(64)\n"
    "fn dbl(@builtin(global_invocation_id) id: vec3<u32>) {\n"
    "    if (id.x < arrayLength(&y)) { y[id.x] = 2.0 * x[id.x]; }\n"
    "}\n";

/* What an op does: its dispatch goes wherever pxl_gpu_stream() says. */
static pxl_status op_double(pxl_ctx *ctx, pxl_buffer *x, pxl_buffer *y) {
    pxl_kernel *k = NULL;
    pxl_status s = pxl_kernel_get(ctx, "double.wgsl", k_double, "dbl", NULL, 0, &k);
    if (s != PXL_OK) return s;
    pxl_recorder *rec = NULL;
    s = pxl_gpu_stream(ctx, &rec);
    if (s != PXL_OK) return s;
    pxl_binding b[2] = {{0, x, 0, 0}, {1, y, 0, 0}};
    pxl_dispatch d = {k, b, 2, NULL, 0, 0, {1, 1, 1}};
    return pxl_recorder_dispatch(rec, &d);
}

static void test_queue_order(pxl_ctx *ctx) {
    const float in[4] = {1, 2, 3, 4}, zero[4] = {0};
    float out[4] = {0};
    pxl_buffer *x = NULL, *y = NULL, *z = NULL;
    CHECK(pxl_buffer_create(ctx, 16, &x) == PXL_OK && pxl_buffer_create(ctx, 16, &y) == PXL_OK &&
          pxl_buffer_create(ctx, 16, &z) == PXL_OK);
    if (!x || !y || !z) goto done;
    CHECK(pxl_buffer_upload(ctx, x, 0, in, 16) == PXL_OK);
    CHECK(pxl_buffer_upload(ctx, y, 0, zero, 16) == PXL_OK);
    CHECK(pxl_buffer_upload(ctx, z, 0, zero, 16) == PXL_OK);

    /* begin; an op (y = 2x) through the stream; copy y -> z; submit: z = 2 4 6 8 */
    pxl_recorder *r = NULL, *r2 = NULL;
    CHECK(pxl_recorder_begin(ctx, 0, &r) == PXL_OK);
    pxl_recorder *st = NULL;
    CHECK(pxl_gpu_stream(ctx, &st) == PXL_OK && st == r); /* ops record into the open recorder */
    CHECK(op_double(ctx, x, y) == PXL_OK);
    CHECK(pxl_recorder_copy(r, y, 0, z, 0, 16) == PXL_OK);
    /* nothing may overtake it meanwhile, and nothing opens a second recording */
    CHECK(pxl_recorder_begin(ctx, 0, &r2) == PXL_ERR_INVALID_ARG);
    CHECK_MSG(strstr(pxl_ctx_error(ctx), "a recorder is already open") != NULL, "%s", pxl_ctx_error(ctx));
    CHECK(pxl_buffer_upload(ctx, x, 0, zero, 16) == PXL_ERR_INVALID_ARG);
    CHECK_MSG(strstr(pxl_ctx_error(ctx), "pxl_buffer_upload: a recorder is open: submit or discard it first"),
              "%s", pxl_ctx_error(ctx));
    CHECK(pxl_buffer_download(ctx, z, 0, out, 16) == PXL_ERR_INVALID_ARG);
    pxl_download dl = {z, 0, 16, out};
    CHECK(pxl_buffer_download_many(ctx, &dl, 1) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_gpu_flush(ctx, 1, NULL) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_gpu_finish(ctx) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_gpu_stream_begin_timed(ctx) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_recorder_submit(r, 1, NULL) == PXL_OK);
    CHECK(pxl_buffer_download(ctx, z, 0, out, 16) == PXL_OK);
    CHECK_MSG(out[0] == 2 && out[1] == 4 && out[2] == 6 && out[3] == 8, "z = %g %g %g %g", (double)out[0], (double)out[1],
              (double)out[2], (double)out[3]);

    /* the refused upload changed nothing; after the submit, transfers work again */
    CHECK(pxl_buffer_download(ctx, x, 0, out, 16) == PXL_OK && out[0] == 1 && out[3] == 4);

    /* the same with an op of the library: pxl_scale */
    {
        int64_t shape[1] = {4};
        pxl_tensor *tx = NULL, *ty = NULL;
        pxl_buffer *zz = NULL;
        CHECK(pxl_tensor_create(ctx, PXL_F32, 1, shape, &tx) == PXL_OK);
        CHECK(pxl_tensor_create(ctx, PXL_F32, 1, shape, &ty) == PXL_OK);
        CHECK(pxl_buffer_create(ctx, 16, &zz) == PXL_OK);
        if (tx && ty && zz) {
            CHECK(pxl_tensor_write(ctx, tx, in, 16) == PXL_OK);
            CHECK(pxl_tensor_write(ctx, ty, zero, 16) == PXL_OK);
            CHECK(pxl_buffer_upload(ctx, zz, 0, zero, 16) == PXL_OK);
            CHECK(pxl_recorder_begin(ctx, 0, &r) == PXL_OK);
            CHECK(pxl_scale(ctx, tx, 2.0f, ty) == PXL_OK);
            CHECK(pxl_recorder_copy(r, pxl_tensor_buffer(ty), 0, zz, 0, 16) == PXL_OK);
            CHECK(pxl_recorder_submit(r, 0, NULL) == PXL_OK);
            memset(out, 0, sizeof out);
            CHECK(pxl_buffer_download(ctx, zz, 0, out, 16) == PXL_OK);
            CHECK_MSG(out[0] == 2 && out[1] == 4 && out[2] == 6 && out[3] == 8, "pxl_scale: z = %g %g %g %g",
                      (double)out[0], (double)out[1], (double)out[2], (double)out[3]);
        }
        pxl_tensor_free(tx);
        pxl_tensor_free(ty);
        pxl_buffer_free(zz);
    }

    /* discarding the recorder drops the ops recorded into it */
    CHECK(pxl_buffer_upload(ctx, y, 0, zero, 16) == PXL_OK);
    CHECK(pxl_recorder_begin(ctx, 0, &r) == PXL_OK);
    CHECK(op_double(ctx, x, y) == PXL_OK);
    pxl_recorder_discard(r);
    CHECK(pxl_buffer_download(ctx, y, 0, out, 16) == PXL_OK);
    CHECK_MSG(out[0] == 0 && out[3] == 0, "discarded work ran: y = %g %g %g %g", (double)out[0], (double)out[1], (double)out[2], (double)out[3]);
    /* and afterwards ops go to the stream again */
    CHECK(op_double(ctx, x, y) == PXL_OK);
    CHECK(pxl_buffer_download(ctx, y, 0, out, 16) == PXL_OK && out[3] == 8);

    /* the stream submits itself every 4096 dispatches; the caller's recorder never */
    {
        pxl_gpu_stats s0 = pxl_gpu_get_stats(ctx);
        CHECK(pxl_recorder_begin(ctx, 0, &r) == PXL_OK);
        pxl_status s = PXL_OK;
        for (int i = 0; i < PXL_STREAM_MAX_DISPATCHES + 100 && s == PXL_OK; i++)
            s = (i & 1) ? op_double(ctx, y, x) : op_double(ctx, x, y);
        CHECK(s == PXL_OK);
        CHECK(pxl_gpu_get_stats(ctx).submits == s0.submits); /* nothing submitted yet */
        CHECK(pxl_gpu_stream(ctx, &st) == PXL_OK && st == r);
        CHECK(pxl_recorder_submit(r, 1, NULL) == PXL_OK);
        CHECK(pxl_gpu_get_stats(ctx).submits == s0.submits + 1);
    }

    /* a clear inside a recording, ordered with the dispatches around it */
    {
        const float ones[4] = {1, 1, 1, 1};
        CHECK(pxl_buffer_upload(ctx, x, 0, ones, 16) == PXL_OK);
        CHECK(pxl_buffer_upload(ctx, z, 0, in, 16) == PXL_OK);
        CHECK(pxl_recorder_begin(ctx, 0, &r) == PXL_OK);
        CHECK(op_double(ctx, x, y) == PXL_OK);                /* y = 2 */
        CHECK(pxl_recorder_clear(r, y, 4, 8) == PXL_OK);      /* y = 2 0 0 2 */
        CHECK(pxl_recorder_clear(r, z, 0, 0) == PXL_OK);      /* nothing */
        CHECK(pxl_recorder_copy(r, y, 0, z, 0, 8) == PXL_OK); /* z = 2 0 3 4 */
        CHECK(pxl_recorder_submit(r, 0, NULL) == PXL_OK);
        CHECK(pxl_buffer_download(ctx, y, 0, out, 16) == PXL_OK);
        CHECK_MSG(out[0] == 2 && out[1] == 0 && out[2] == 0 && out[3] == 2, "y = %g %g %g %g", (double)out[0], (double)out[1],
                  (double)out[2], (double)out[3]);
        CHECK(pxl_buffer_download(ctx, z, 0, out, 16) == PXL_OK);
        CHECK_MSG(out[0] == 2 && out[1] == 0 && out[2] == 3 && out[3] == 4, "z = %g %g %g %g", (double)out[0], (double)out[1],
                  (double)out[2], (double)out[3]);
        /* bad ranges are errors of the recording */
        CHECK(pxl_recorder_begin(ctx, 0, &r) == PXL_OK);
        CHECK(pxl_recorder_clear(r, y, 2, 4) == PXL_ERR_INVALID_ARG);
        pxl_recorder_discard(r);
        CHECK(pxl_recorder_begin(ctx, 0, &r) == PXL_OK);
        CHECK(pxl_recorder_clear(r, y, 8, 12) == PXL_ERR_INVALID_ARG);
        CHECK(pxl_recorder_submit(r, 0, NULL) == PXL_ERR_INVALID_ARG);
    }
done:
    pxl_buffer_free(x);
    pxl_buffer_free(y);
    pxl_buffer_free(z);
}

/* ---- bind groups and uniform slots kept between dispatches ---- */

typedef struct { uint32_t n; float v; } add_params;

static pxl_status record_add(pxl_recorder *r, pxl_kernel *k, pxl_buffer *x, uint32_t n, float v) {
    add_params p = {n, v};
    pxl_binding b = {0, x, 0, 0};
    pxl_dispatch d = {k, &b, 1, &p, sizeof p, 1, {1, 1, 1}};
    return pxl_recorder_dispatch(r, &d);
}

static float first_of(pxl_ctx *ctx, pxl_buffer *x) {
    float v = -1;
    CHECK(pxl_buffer_download(ctx, x, 0, &v, 4) == PXL_OK);
    return v;
}

/* ---- the buffers' tail (PXL_BUFFER_TAIL) ----
 * A storage buffer can be bound PXL_BUFFER_TAIL bytes past its size rounded
 * up to 16 (the ops bind their inputs so, pxl_op_bind), also when it comes
 * back from the pool for a smaller size; copies and clears stop at the
 * rounded size. */
static void test_buffer_tail(pxl_ctx *ctx) {
    pxl_kernel *k = NULL;
    pxl_constant wg = {"WG", 64};
    CHECK(pxl_kernel_get(ctx, "add.wgsl", k_add, "add", &wg, 1, &k) == PXL_OK);
    if (!k) return;
    static const size_t sizes[] = {20, 32, 1000, 996}; /* 996: the 1000-byte buffer again, from the pool */
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        pxl_buffer *x = NULL;
        CHECK(pxl_buffer_create(ctx, sizes[i], &x) == PXL_OK);
        if (!x) continue;
        uint64_t span = (sizes[i] + 15) / 16 * 16;
        float one = 1.0f, got = 0.0f;
        CHECK(pxl_buffer_upload(ctx, x, 0, &one, 4) == PXL_OK);
        pxl_recorder *r = NULL;
        CHECK(pxl_recorder_begin(ctx, 0, &r) == PXL_OK);
        add_params p = {1, 2.0f};
        pxl_binding b = {0, x, 0, span + PXL_BUFFER_TAIL};
        pxl_dispatch d = {k, &b, 1, &p, sizeof p, 1, {1, 1, 1}};
        CHECK(pxl_recorder_dispatch(r, &d) == PXL_OK);
        CHECK_MSG(pxl_recorder_submit(r, 0, NULL) == PXL_OK, "a binding over the tail of a %zu-byte buffer: %s",
                  sizes[i], pxl_ctx_error(ctx));
        CHECK(pxl_buffer_download(ctx, x, 0, &got, 4) == PXL_OK && got == 3.0f);
        CHECK(pxl_recorder_begin(ctx, 0, &r) == PXL_OK);
        CHECK(pxl_recorder_clear(r, x, 0, (size_t)span) == PXL_OK);
        CHECK(pxl_recorder_clear(r, x, 0, (size_t)span + 4) == PXL_ERR_INVALID_ARG);
        pxl_recorder_discard(r);
        pxl_buffer_free(x);
    }
}

static void test_dispatch_caches(pxl_ctx *ctx) {
    pxl_kernel *k = NULL;
    pxl_constant wg = {"WG", 64};
    CHECK(pxl_kernel_get(ctx, "add.wgsl", k_add, "add", &wg, 1, &k) == PXL_OK);
    if (!k) return;
    float zero[64] = {0}, ten[64];
    for (int i = 0; i < 64; i++) ten[i] = 10;
    pxl_buffer *x = NULL, *y = NULL;
    CHECK(pxl_buffer_create(ctx, sizeof zero, &x) == PXL_OK && pxl_buffer_create(ctx, sizeof zero, &y) == PXL_OK);
    if (!x || !y) return;

    /* the same dispatch twice: the second finds its bind group and parameters */
    CHECK(pxl_buffer_upload(ctx, x, 0, zero, sizeof zero) == PXL_OK);
    pxl_recorder *r = NULL;
    CHECK(pxl_recorder_begin(ctx, 0, &r) == PXL_OK);
    CHECK(record_add(r, k, x, 64, 1.5f) == PXL_OK);
    pxl_gpu_stats s0 = pxl_gpu_get_stats(ctx);
    CHECK(record_add(r, k, x, 64, 1.5f) == PXL_OK);
    pxl_gpu_stats s1 = pxl_gpu_get_stats(ctx);
    CHECK(s1.bind_group_hits == s0.bind_group_hits + 1 && s1.bind_group_misses == s0.bind_group_misses);
    CHECK(s1.uniform_slot_hits == s0.uniform_slot_hits + 1 && s1.uniform_slot_misses == s0.uniform_slot_misses);
    /* other parameters: a new slot and bind group */
    CHECK(record_add(r, k, x, 64, 2.0f) == PXL_OK);
    pxl_gpu_stats s2 = pxl_gpu_get_stats(ctx);
    CHECK(s2.uniform_slot_misses == s1.uniform_slot_misses + 1 && s2.bind_group_misses == s1.bind_group_misses + 1);
    CHECK(pxl_recorder_submit(r, 0, NULL) == PXL_OK);
    CHECK(first_of(ctx, x) == 5.0f);

    /* same buffers, different data, cached everything: the new data counts */
    CHECK(pxl_buffer_upload(ctx, x, 0, ten, sizeof ten) == PXL_OK);
    s0 = pxl_gpu_get_stats(ctx);
    CHECK(pxl_recorder_begin(ctx, 0, &r) == PXL_OK);
    CHECK(record_add(r, k, x, 64, 1.5f) == PXL_OK);
    CHECK(pxl_recorder_submit(r, 0, NULL) == PXL_OK);
    CHECK(pxl_gpu_get_stats(ctx).bind_group_hits == s0.bind_group_hits + 1);
    CHECK(first_of(ctx, x) == 11.5f);

    /* a buffer back in the pool and handed out again is the same GPU buffer:
     * its bind group still binds it */
    pxl_buffer *x_was = x;
    pxl_buffer_free(x);
    CHECK(pxl_buffer_create(ctx, sizeof zero, &x) == PXL_OK);
    CHECK(x == x_was); /* the pool's best fit */
    CHECK(pxl_buffer_upload(ctx, x, 0, zero, sizeof zero) == PXL_OK);
    CHECK(pxl_recorder_begin(ctx, 0, &r) == PXL_OK);
    CHECK(record_add(r, k, x, 64, 1.5f) == PXL_OK);
    CHECK(pxl_recorder_submit(r, 0, NULL) == PXL_OK);
    CHECK(first_of(ctx, x) == 1.5f);

    /* a destroyed buffer takes its bind groups along; a new buffer, perhaps at
     * the same address, gets its own */
    pxl_gpu *g = ctx->gpu;
    uint64_t limit = g->pool_limit;
    g->pool_limit = 0; /* freeing destroys */
    uint32_t live = g->n_bgs_live;
    pxl_buffer_free(x);
    CHECK(g->n_bgs_live < live);
    g->pool_limit = limit;
    CHECK(pxl_buffer_create(ctx, sizeof zero, &x) == PXL_OK);
    CHECK(pxl_buffer_upload(ctx, x, 0, ten, sizeof ten) == PXL_OK);
    s0 = pxl_gpu_get_stats(ctx);
    CHECK(pxl_recorder_begin(ctx, 0, &r) == PXL_OK);
    CHECK(record_add(r, k, x, 64, 1.5f) == PXL_OK);
    CHECK(pxl_recorder_submit(r, 0, NULL) == PXL_OK);
    CHECK(pxl_gpu_get_stats(ctx).bind_group_misses == s0.bind_group_misses + 1);
    CHECK(first_of(ctx, x) == 11.5f);

    /* more distinct parameter blocks than there are slots: within one
     * recording the extra ones use the recorder's blocks; the next recordings
     * reuse slots that earlier, still running, submits read */
    const uint32_t many = PXL_USLOT_MAX + 300;
    CHECK(pxl_buffer_upload(ctx, x, 0, zero, sizeof zero) == PXL_OK);
    pxl_status st = PXL_OK;
    for (int round = 0; round < 3; round++) {
        CHECK(pxl_recorder_begin(ctx, 0, &r) == PXL_OK);
        /* n differs per dispatch (all >= 64: the same work); v is larger
         * for the dispatches past the slots, so a slot overwritten while its
         * recording is open would show */
        for (uint32_t i = 0; i < many && st == PXL_OK; i++)
            st = record_add(r, k, x, 64 + i + (uint32_t)round * 100000u,
                            (float)((i < PXL_USLOT_MAX ? 1 : 2) * (round + 1)));
        CHECK(st == PXL_OK);
        CHECK(pxl_recorder_submit(r, 0, NULL) == PXL_OK); /* no wait */
    }
    double want = 6.0 * (PXL_USLOT_MAX + 2.0 * (many - PXL_USLOT_MAX));
    CHECK_MSG(first_of(ctx, x) == (float)want, "x = %g, expected %g", (double)first_of(ctx, x), want);
    CHECK(g->n_uslots == PXL_USLOT_MAX);

    /* more bind groups than the cache keeps (the binding's size and the
     * parameters differ): the least recently used go, the results hold */
    CHECK(pxl_buffer_upload(ctx, y, 0, zero, sizeof zero) == PXL_OK);
    CHECK(pxl_recorder_begin(ctx, 0, &r) == PXL_OK);
    double expect = 0;
    for (uint32_t i = 0; i < PXL_BG_MAX + 500 && st == PXL_OK; i++) {
        pxl_binding b = {0, y, 0, 4 * (1 + (uint64_t)(i % 64))};
        add_params p = {1, (float)(1 + (i / 64) % 100)};
        pxl_dispatch d = {k, &b, 1, &p, sizeof p, 1, {1, 1, 1}};
        st = pxl_recorder_dispatch(r, &d);
        expect += (double)p.v;
    }
    CHECK(st == PXL_OK);
    CHECK(pxl_recorder_submit(r, 0, NULL) == PXL_OK);
    CHECK(g->n_bgs_live <= PXL_BG_MAX);
    CHECK_MSG(first_of(ctx, y) == (float)expect, "y = %g, expected %g", (double)first_of(ctx, y), expect);
    pxl_buffer_free(x);
    pxl_buffer_free(y);
}

/* pxl_recorder_end: work recorded ahead runs at its submit, after everything
 * asked for in between, with the uniform bytes it was recorded with. */
static void test_recorder_end(pxl_ctx *ctx) {
    const float in[4] = {1, 2, 3, 4}, in2[4] = {10, 20, 30, 40}, zero[4] = {0};
    float out[4] = {0};
    pxl_buffer *x = NULL, *y = NULL;
    CHECK(pxl_buffer_create(ctx, 16, &x) == PXL_OK && pxl_buffer_create(ctx, 16, &y) == PXL_OK);
    if (!x || !y) goto done;
    CHECK(pxl_buffer_upload(ctx, x, 0, in, 16) == PXL_OK);
    CHECK(pxl_buffer_upload(ctx, y, 0, zero, 16) == PXL_OK);

    /* y = 2x recorded, ended; then x changes and y is read before the submit */
    pxl_recorder *r = NULL, *st = NULL;
    CHECK(pxl_recorder_begin(ctx, 0, &r) == PXL_OK);
    CHECK(op_double(ctx, x, y) == PXL_OK);
    CHECK(pxl_recorder_end(r) == PXL_OK);
    CHECK(pxl_recorder_end(r) == PXL_ERR_INVALID_ARG); /* once */
    CHECK_MSG(strstr(pxl_ctx_error(ctx), "pxl_recorder_end: the recorder was ended") != NULL, "%s", pxl_ctx_error(ctx));
    CHECK(pxl_recorder_copy(r, x, 0, y, 0, 16) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_recorder_clear(r, y, 0, 16) == PXL_ERR_INVALID_ARG);
    pxl_buffer *sb = NULL;
    CHECK(pxl_recorder_scratch(r, 16, &sb) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_gpu_stream(ctx, &st) == PXL_OK && st != r); /* ops go to the stream again */
    CHECK(pxl_recorder_end(st) == PXL_ERR_INVALID_ARG);   /* the stream is not the caller's */
    CHECK(pxl_buffer_upload(ctx, x, 0, in2, 16) == PXL_OK);
    CHECK(pxl_buffer_download(ctx, y, 0, out, 16) == PXL_OK);
    CHECK_MSG(out[0] == 0 && out[3] == 0, "ended work ran before its submit: y = %g .. %g", (double)out[0], (double)out[3]);
    CHECK(pxl_recorder_submit(r, 0, NULL) == PXL_OK);
    CHECK(pxl_buffer_download(ctx, y, 0, out, 16) == PXL_OK);
    CHECK_MSG(out[0] == 20 && out[1] == 40 && out[2] == 60 && out[3] == 80, "y = %g %g %g %g", (double)out[0],
              (double)out[1], (double)out[2], (double)out[3]);

    /* discarded after its end: nothing runs */
    CHECK(pxl_buffer_upload(ctx, y, 0, zero, 16) == PXL_OK);
    CHECK(pxl_recorder_begin(ctx, 0, &r) == PXL_OK);
    CHECK(op_double(ctx, x, y) == PXL_OK);
    CHECK(pxl_recorder_end(r) == PXL_OK);
    pxl_recorder_discard(r);
    CHECK(pxl_gpu_finish(ctx) == PXL_OK);
    CHECK(pxl_buffer_download(ctx, y, 0, out, 16) == PXL_OK && out[0] == 0 && out[3] == 0);

    /* its uniform slot keeps its bytes while more than PXL_USLOT_MAX other
     * parameter blocks go through the stream before the submit */
    {
        pxl_kernel *k = NULL;
        pxl_constant wg = {"WG", 64};
        float z64[64] = {0};
        pxl_buffer *a = NULL, *b = NULL;
        CHECK(pxl_kernel_get(ctx, "add.wgsl", k_add, "add", &wg, 1, &k) == PXL_OK);
        CHECK(pxl_buffer_create(ctx, sizeof z64, &a) == PXL_OK && pxl_buffer_create(ctx, sizeof z64, &b) == PXL_OK);
        if (k && a && b) {
            CHECK(pxl_buffer_upload(ctx, a, 0, z64, sizeof z64) == PXL_OK);
            CHECK(pxl_recorder_begin(ctx, 0, &r) == PXL_OK);
            CHECK(record_add(r, k, a, 64, 0.25f) == PXL_OK);
            CHECK(pxl_recorder_end(r) == PXL_OK);
            pxl_status s = PXL_OK;
            for (uint32_t i = 0; i < PXL_USLOT_MAX + 64 && s == PXL_OK; i++) {
                s = pxl_gpu_stream(ctx, &st);
                if (s == PXL_OK) s = record_add(st, k, b, 64, 1.0f + (float)i);
            }
            CHECK(s == PXL_OK);
            CHECK(pxl_gpu_flush(ctx, 0, NULL) == PXL_OK);
            CHECK(pxl_recorder_submit(r, 1, NULL) == PXL_OK);
            CHECK_MSG(first_of(ctx, a) == 0.25f, "a = %g after the ended recording", (double)first_of(ctx, a));
            /* and the slots are free for new bytes again afterwards */
            CHECK(ctx->gpu->ended == NULL && ctx->gpu->ended_serial == 0);
        }
        pxl_buffer_free(a);
        pxl_buffer_free(b);
    }

    /* an error while recording comes back at the end and at the submit */
    CHECK(pxl_recorder_begin(ctx, 0, &r) == PXL_OK);
    CHECK(pxl_recorder_clear(r, y, 2, 4) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_recorder_end(r) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_recorder_submit(r, 0, NULL) == PXL_ERR_INVALID_ARG);

    /* left ended at pxl_ctx_free: dropped with the context (ASan: no leak) */
    {
        pxl_ctx_options o = pxl_ctx_options_default();
        o.backend = PXL_BACKEND_GPU;
        o.quiet = 1;
        pxl_ctx *c2 = NULL;
        pxl_buffer *v = NULL, *w = NULL;
        if (pxl_ctx_create(&o, &c2) == PXL_OK && pxl_buffer_create(c2, 16, &v) == PXL_OK &&
            pxl_buffer_create(c2, 16, &w) == PXL_OK) {
            pxl_recorder *r2 = NULL;
            CHECK(pxl_recorder_begin(c2, 0, &r2) == PXL_OK);
            CHECK(op_double(c2, v, w) == PXL_OK);
            CHECK(pxl_recorder_end(r2) == PXL_OK);
        } else {
            CHECK(0);
        }
        pxl_buffer_free(v);
        pxl_buffer_free(w);
        pxl_ctx_free(c2);
    }
done:
    pxl_buffer_free(x);
    pxl_buffer_free(y);
}

/* A context whose pipeline cache keeps 4 kernels. */
static void test_kernel_eviction(void) {
    pxl_ctx_options o = pxl_ctx_options_default();
    o.backend = PXL_BACKEND_GPU;
    o.quiet = 1;
    o.kernel_cache_max = 4;
    o.cache_dir = "";
    pxl_ctx *ctx = NULL;
    if (pxl_ctx_create(&o, &ctx) != PXL_OK) {
        pxl_ctx_free(ctx);
        CHECK(0);
        return;
    }
    float zero[64] = {0};
    pxl_buffer *x = NULL;
    CHECK(pxl_buffer_create(ctx, sizeof zero, &x) == PXL_OK);
    CHECK(pxl_buffer_upload(ctx, x, 0, zero, sizeof zero) == PXL_OK);
    pxl_kernel *k1 = NULL, *k = NULL;
    pxl_constant c1 = {"WG", 1};
    CHECK(pxl_kernel_get(ctx, "add.wgsl", k_add, "add", &c1, 1, &k1) == PXL_OK);
    pxl_recorder *r = NULL;
    CHECK(pxl_recorder_begin(ctx, 0, &r) == PXL_OK);
    CHECK(k1 && record_add(r, k1, x, 1, 1.0f) == PXL_OK);
    /* twelve more kernels (workgroup sizes 2..13), each used once */
    for (int i = 2; i <= 13; i++) {
        pxl_constant c = {"WG", i};
        CHECK(pxl_kernel_get(ctx, "add.wgsl", k_add, "add", &c, 1, &k) == PXL_OK);
        CHECK(k && record_add(r, k, x, 64, 1.0f) == PXL_OK);
    }
    pxl_gpu_stats st = pxl_gpu_get_stats(ctx);
    CHECK_MSG(st.pipeline_cache_evictions == 0, "%llu evicted while all are in use", (unsigned long long)st.pipeline_cache_evictions);
    /* k1 is still valid here: the open recording dispatched it */
    CHECK(record_add(r, k1, x, 1, 1.0f) == PXL_OK);
    CHECK(pxl_recorder_submit(r, 0, NULL) == PXL_OK);
    float v[2] = {0};
    CHECK(pxl_buffer_download(ctx, x, 0, v, 8) == PXL_OK);
    CHECK_MSG(v[0] == 14 && v[1] == 12, "x = %g %g", (double)v[0], (double)v[1]);
    /* outside a recording the bound holds: a new kernel evicts down to 4 */
    pxl_constant c = {"WG", 32};
    CHECK(pxl_kernel_get(ctx, "add.wgsl", k_add, "add", &c, 1, &k) == PXL_OK);
    st = pxl_gpu_get_stats(ctx);
    CHECK_MSG(st.pipeline_cache_evictions == 10, "%llu evicted", (unsigned long long)st.pipeline_cache_evictions);
    CHECK(ctx->gpu->n_kernels == 4);
    /* the three most recent besides it are still there: hits; WG 2 is gone: a miss */
    pxl_gpu_stats before = pxl_gpu_get_stats(ctx);
    for (int i = 11; i <= 13; i++) {
        pxl_constant ci = {"WG", i};
        CHECK(pxl_kernel_get(ctx, "add.wgsl", k_add, "add", &ci, 1, &k) == PXL_OK);
    }
    CHECK(pxl_gpu_get_stats(ctx).pipeline_cache_hits == before.pipeline_cache_hits + 3);
    pxl_constant c2 = {"WG", 2};
    CHECK(pxl_kernel_get(ctx, "add.wgsl", k_add, "add", &c2, 1, &k) == PXL_OK);
    CHECK(pxl_gpu_get_stats(ctx).pipeline_cache_misses == before.pipeline_cache_misses + 1);
    /* and a recompiled kernel works */
    CHECK(pxl_recorder_begin(ctx, 0, &r) == PXL_OK);
    CHECK(record_add(r, k, x, 64, 1.0f) == PXL_OK);
    CHECK(pxl_recorder_submit(r, 0, NULL) == PXL_OK);
    CHECK(pxl_buffer_download(ctx, x, 0, v, 8) == PXL_OK);
    CHECK_MSG(v[0] == 15 && v[1] == 13, "x = %g %g", (double)v[0], (double)v[1]);
    pxl_buffer_free(x);
    pxl_ctx_free(ctx);
}

/* ---- the per-kernel profiler ---- */

static void test_profile(pxl_ctx *ctx) {
    pxl_gpu_profile_entry e[4];
    size_t n = 99;
    /* end without begin */
    CHECK(pxl_gpu_profile_end(ctx, e, 4, &n, NULL) == PXL_ERR_INVALID_ARG && n == 0);
    pxl_status s = pxl_gpu_profile_begin(ctx, NULL);
    if (!pxl_gpu_get_info(ctx)->has_timestamps) {
        CHECK(s == PXL_ERR_UNSUPPORTED && strstr(pxl_ctx_error(ctx), "timestamp") != NULL);
        return;
    }
    CHECK(s == PXL_OK);
    pxl_kernel *k = NULL, *k2 = NULL;
    pxl_constant wg = {"WG", 64}, wg32 = {"WG", 32};
    CHECK(pxl_kernel_get(ctx, "add.wgsl", k_add, "add", &wg, 1, &k) == PXL_OK);
    CHECK(pxl_kernel_get(ctx, "add.wgsl", k_add, "add", &wg32, 1, &k2) == PXL_OK);
    pxl_buffer *x = NULL;
    float zero[64] = {0};
    CHECK(pxl_buffer_create(ctx, sizeof zero, &x) == PXL_OK);
    if (!k || !k2 || !x) return;
    CHECK(pxl_buffer_upload(ctx, x, 0, zero, sizeof zero) == PXL_OK);
    /* two recordings: 3 dispatches of k and 1 of k2, then 2 more of k */
    pxl_recorder *r = NULL;
    CHECK(pxl_recorder_begin(ctx, 0, &r) == PXL_OK);
    for (int i = 0; i < 3; i++) CHECK(record_add(r, k, x, 64, 1.0f) == PXL_OK);
    CHECK(record_add(r, k2, x, 64, 1.0f) == PXL_OK);
    /* ending while a recorder is open fails and leaves the profile running */
    CHECK(pxl_gpu_profile_end(ctx, e, 4, &n, NULL) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_recorder_submit(r, 0, NULL) == PXL_OK);
    CHECK(pxl_recorder_begin(ctx, 0, &r) == PXL_OK);
    for (int i = 0; i < 2; i++) CHECK(record_add(r, k, x, 64, 1.0f) == PXL_OK);
    CHECK(pxl_recorder_submit(r, 0, NULL) == PXL_OK);
    uint64_t untimed = 9;
    CHECK(pxl_gpu_profile_end(ctx, e, 4, &n, &untimed) == PXL_OK);
    CHECK(n == 2 && untimed == 0);
    uint64_t d_k = 0, d_k2 = 0;
    for (size_t i = 0; i < n && i < 4; i++) {
        if (!strcmp(e[i].kernel, "add.wgsl:add WG=64")) d_k = e[i].dispatches;
        if (!strcmp(e[i].kernel, "add.wgsl:add WG=32")) d_k2 = e[i].dispatches;
    }
    CHECK(d_k == 5 && d_k2 == 1);
    CHECK(n < 2 || e[0].gpu_ns >= e[1].gpu_ns); /* slowest first */
    CHECK(first_of(ctx, x) == 6.0f);             /* the work itself ran */
    /* stopped: a second end fails */
    CHECK(pxl_gpu_profile_end(ctx, e, 4, &n, NULL) == PXL_ERR_INVALID_ARG);
    /* whole submits: one row with the recordings' dispatches */
    pxl_gpu_profile_options wo = {1};
    CHECK(pxl_gpu_profile_begin(ctx, &wo) == PXL_OK);
    CHECK(pxl_recorder_begin(ctx, 0, &r) == PXL_OK);
    for (int i = 0; i < 3; i++) CHECK(record_add(r, k2, x, 64, 1.0f) == PXL_OK);
    CHECK(pxl_recorder_submit(r, 0, NULL) == PXL_OK);
    CHECK(pxl_gpu_profile_end(ctx, e, 4, &n, &untimed) == PXL_OK);
    CHECK(n == 1 && !strcmp(e[0].kernel, "submitted recordings") && e[0].dispatches == 3 && e[0].gpu_ns > 0);
    CHECK(first_of(ctx, x) == 9.0f);
    pxl_buffer_free(x);
}

/* Read-back buffers: filled by recorded copies, read without a submit and
 * without waiting for later work; refused everywhere else. */
static void test_readback(pxl_ctx *ctx) {
    const float in[4] = {1, 2, 3, 4};
    float out[4] = {0};
    pxl_buffer *x = NULL, *y = NULL, *rb = NULL;
    CHECK(pxl_buffer_create(ctx, 16, &x) == PXL_OK && pxl_buffer_create(ctx, 16, &y) == PXL_OK);
    CHECK(pxl_buffer_create_readback(ctx, 40, &rb) == PXL_OK);
    if (!x || !y || !rb) goto done;
    CHECK(pxl_buffer_size(rb) == 40);
    CHECK(pxl_buffer_upload(ctx, x, 0, in, 16) == PXL_OK);
    /* y = 2x, copied to rb at 20 (an offset off 8 bytes), submitted without waiting */
    pxl_recorder *r = NULL;
    CHECK(pxl_recorder_begin(ctx, 0, &r) == PXL_OK);
    CHECK(op_double(ctx, x, y) == PXL_OK);
    CHECK(pxl_recorder_copy(r, y, 0, rb, 20, 16) == PXL_OK);
    CHECK(pxl_recorder_submit(r, 0, NULL) == PXL_OK);
    CHECK(pxl_buffer_read_back(ctx, rb, 20, out, 16) == PXL_OK);
    CHECK_MSG(out[0] == 2 && out[1] == 4 && out[2] == 6 && out[3] == 8, "read back %g %g %g %g", (double)out[0],
              (double)out[1], (double)out[2], (double)out[3]);
    CHECK(pxl_buffer_read_back(ctx, rb, 24, out, 4) == PXL_OK && out[0] == 4);
    /* allowed while a recorder is open, which may copy into it before its submit */
    CHECK(pxl_recorder_begin(ctx, 0, &r) == PXL_OK);
    CHECK(pxl_recorder_copy(r, x, 0, rb, 0, 16) == PXL_OK);
    CHECK(pxl_buffer_read_back(ctx, rb, 28, out, 8) == PXL_OK && out[0] == 6 && out[1] == 8);
    CHECK(pxl_recorder_submit(r, 0, NULL) == PXL_OK);
    CHECK(pxl_buffer_read_back(ctx, rb, 0, out, 16) == PXL_OK && out[0] == 1 && out[3] == 4);
    /* mapped in place: the same bytes; refused while mapped (map, read back); unmap twice is fine */
    const void *mp = NULL;
    CHECK(pxl_buffer_map_read(ctx, rb, 20, 16, &mp) == PXL_OK && mp);
    if (mp) CHECK(((const float *)mp)[0] == 2 && ((const float *)mp)[3] == 8);
    const void *mp2 = NULL;
    CHECK(pxl_buffer_map_read(ctx, rb, 0, 4, &mp2) == PXL_ERR_INVALID_ARG && !mp2);
    CHECK(pxl_buffer_read_back(ctx, rb, 0, out, 4) == PXL_ERR_INVALID_ARG);
    CHECK_MSG(strstr(pxl_ctx_error(ctx), "mapped") != NULL, "%s", pxl_ctx_error(ctx));
    pxl_buffer_unmap(ctx, rb);
    pxl_buffer_unmap(ctx, rb);
    pxl_buffer_unmap(ctx, NULL);
    CHECK(pxl_buffer_map_read(ctx, rb, 24, 4, &mp) == PXL_OK && mp && ((const float *)mp)[0] == 4);
    pxl_buffer_unmap(ctx, rb);
    /* a copy into it submitted after the unmap lands */
    CHECK(pxl_recorder_begin(ctx, 0, &r) == PXL_OK);
    CHECK(pxl_recorder_copy(r, x, 0, rb, 20, 16) == PXL_OK);
    CHECK(pxl_recorder_submit(r, 0, NULL) == PXL_OK);
    CHECK(pxl_buffer_map_read(ctx, rb, 20, 16, &mp) == PXL_OK && mp && ((const float *)mp)[1] == 2);
    pxl_buffer_unmap(ctx, rb);
    CHECK(pxl_buffer_map_read(ctx, rb, 0, 0, &mp) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_buffer_map_read(ctx, rb, 36, 8, &mp) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_buffer_map_read(ctx, x, 0, 4, &mp) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_buffer_map_read(ctx, rb, 0, 4, NULL) == PXL_ERR_INVALID_ARG);
    /* refused: out of range, misaligned, a storage buffer, any other use */
    CHECK(pxl_buffer_read_back(ctx, rb, 32, out, 16) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_buffer_read_back(ctx, rb, 2, out, 4) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_buffer_read_back(ctx, x, 0, out, 4) == PXL_ERR_INVALID_ARG);
    CHECK_MSG(strstr(pxl_ctx_error(ctx), "not a read-back buffer") != NULL, "%s", pxl_ctx_error(ctx));
    CHECK(pxl_buffer_upload(ctx, rb, 0, in, 16) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_buffer_download(ctx, rb, 0, out, 16) == PXL_ERR_INVALID_ARG);
    CHECK_MSG(strstr(pxl_ctx_error(ctx), "a read-back buffer") != NULL, "%s", pxl_ctx_error(ctx));
    CHECK(pxl_recorder_begin(ctx, 0, &r) == PXL_OK);
    CHECK(pxl_recorder_copy(r, rb, 0, y, 0, 16) == PXL_ERR_INVALID_ARG);
    pxl_recorder_discard(r);
    CHECK(pxl_recorder_begin(ctx, 0, &r) == PXL_OK);
    CHECK(pxl_recorder_clear(r, rb, 0, 16) == PXL_ERR_INVALID_ARG);
    pxl_recorder_discard(r);
    CHECK(pxl_recorder_begin(ctx, 0, &r) == PXL_OK);
    CHECK(op_double(ctx, x, rb) == PXL_ERR_INVALID_ARG);
    pxl_recorder_discard(r);
    CHECK(pxl_gpu_finish(ctx) == PXL_OK);
done:
    pxl_buffer_free(x);
    pxl_buffer_free(y);
    pxl_buffer_free(rb);
}

int main(void) {
    pxl_ctx *ctx = test_gpu_ctx();
    if (!ctx) return PXL_SKIP;
    test_buffers(ctx);
    test_staged_uploads(ctx);
    test_download_many(ctx);
    test_compile_error(ctx);
    test_pipeline_cache(ctx);
    test_recorder(ctx);
    test_queue_order(ctx);
    test_dispatch_caches(ctx);
    test_buffer_tail(ctx);
    test_recorder_end(ctx);
    test_readback(ctx);
    test_profile(ctx);
    pxl_ctx_free(ctx);
    test_kernel_eviction();
    test_blob_format();
    test_disk_cache();
    return test_result("test_gpu");
}
