/*
 * Probe (a finding, not a test): how near copy bandwidth can a WGSL one-row
 * Q4_K product on 8-bit A come, and what holds it back? Times, on random
 * bytes of an N x K Q4_K matrix (default 14336 x 4096; four copies in turn,
 * so the weights stream from memory and not the L2), the kernels of
 * bench/probe_mv.wgsl:
 *   readall  every 16-byte word of B once (UNR loads in flight): streaming;
 *   kread    kmv4q's reads (the header and one quant word a unit, ROWS rows
 *            a row group of 32 invocations) with no arithmetic;
 *   kmv      kmv4q's arithmetic on A already rounded (in global memory, or
 *            copied to workgroup memory first: SHA), UNR units' words asked
 *            for before any is used;
 *   kmvr     A rounded in each workgroup first, as kmv4q's round_a did
 *            (FAST: by subgroup shuffles and the quick f16 scale; its
 *            outputs are compared with the slow rounding's, bit for bit);
 *   rnd      A rounded by one workgroup of its own, before each kmv;
 *   empty    one workgroup that stores a float: the chain's floor.
 * GPU time of 100 dispatches in one timed recording, after 0.5 s of warm-up;
 * the best of 5. Findings: docs/BENCHMARKS.md, "What rounding A costs
 * decode's products".
 *
 *   cc -std=c11 -O2 -Iinclude bench/probe_mv_wgsl.c build-dev/libpxl.a \
 *      -lpng -lz -lpcre2-8 -lcholmod -lm -ldl -lpthread -o /tmp/probe_mv
 *   /tmp/probe_mv ROOT [N K]   (ROOT: the repository, whose bench/probe_mv.wgsl
 *                               and three files of src/ops/wgsl/common it reads)
 */
#define _POSIX_C_SOURCE 200809L
#include "pxl/core.h"
#include "pxl/gpu.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static unsigned N = 14336u, K = 4096u;
#define NB (K / 256u)
#define COPIES 4
#ifndef CALLS
#define CALLS 100
#endif

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static pxl_ctx *ctx;
static pxl_buffer *bq[COPIES], *aq, *ad, *cb;
static char *wgsl;

static int fail(const char *what) {
    fprintf(stderr, "%s: %s\n", what, pxl_ctx_error(ctx));
    exit(1);
}

static pxl_buffer *filled(size_t bytes, unsigned seed, int floats) {
    pxl_buffer *b = NULL;
    if (pxl_buffer_create(ctx, bytes, &b) != PXL_OK) fail("buffer");
    uint32_t *h = malloc(bytes);
    for (size_t i = 0; i < bytes / 4; i++) {
        seed = seed * 1664525u + 1013904223u;
        if (floats) {
            float f = (float)(seed >> 8) / 16777216.0f * 0.01f;
            memcpy(&h[i], &f, 4);
        } else h[i] = seed;
    }
    if (pxl_buffer_upload(ctx, b, 0, h, bytes) != PXL_OK) fail("upload");
    free(h);
    return b;
}

static pxl_buffer *af;

/* the bindings an entry point of probe_mv.wgsl uses */
static size_t bindings(const char *entry, pxl_buffer *b, pxl_binding *out) {
    if (!strcmp(entry, "kmv")) {
        pxl_binding x[] = {{0, b, 0, 0}, {1, aq, 0, 0}, {2, ad, 0, 0}, {3, cb, 0, 0}};
        memcpy(out, x, sizeof x);
        return 4;
    }
    if (!strcmp(entry, "kmvr")) {
        pxl_binding x[] = {{0, b, 0, 0}, {3, cb, 0, 0}, {4, af, 0, 0}};
        memcpy(out, x, sizeof x);
        return 3;
    }
    if (!strcmp(entry, "rnd")) {
        pxl_binding x[] = {{4, af, 0, 0}, {5, aq, 0, 0}, {6, ad, 0, 0}};
        memcpy(out, x, sizeof x);
        return 3;
    }
    if (!strcmp(entry, "empty")) {
        out[0] = (pxl_binding){3, cb, 0, 0};
        return 1;
    }
    pxl_binding x[] = {{0, b, 0, 0}, {3, cb, 0, 0}}; /* readall, kread */
    memcpy(out, x, sizeof x);
    return 2;
}

/* us a call (entry, after entry0 when given: A rounded by a kernel of its
 * own first): the best of 5 timed recordings of CALLS, after warm-up */
static double timed2(const char *entry0, const char *entry, const pxl_constant *cs, size_t ncs, uint32_t groups) {
    pxl_kernel *k = NULL, *k0 = NULL;
    if (pxl_kernel_get(ctx, "probe_mv.wgsl", wgsl, entry, cs, ncs, &k) != PXL_OK) fail(entry);
    if (entry0 && pxl_kernel_get(ctx, "probe_mv.wgsl", wgsl, entry0, cs, ncs, &k0) != PXL_OK) fail(entry0);
    double best = 1e30, t0 = now_s();
    for (int round = 0;; round++) {
        pxl_recorder *rec = NULL;
        if (pxl_recorder_begin(ctx, PXL_RECORDER_TIMED | PXL_RECORDER_UNCHECKED, &rec) != PXL_OK) fail("begin");
        for (int i = 0; i < CALLS; i++) {
            pxl_binding bind[8];
            if (entry0) {
                size_t n0 = bindings(entry0, NULL, bind);
                pxl_dispatch d0 = {k0, bind, n0, NULL, 0, 0, {1, 1, 1}};
                if (pxl_recorder_dispatch(rec, &d0) != PXL_OK) fail("dispatch");
            }
            size_t n = bindings(entry, bq[i % COPIES], bind);
            pxl_dispatch d = {k, bind, n, NULL, 0, 0, {groups, 1, 1}};
            if (pxl_recorder_dispatch(rec, &d) != PXL_OK) fail("dispatch");
        }
        uint64_t ns = 0;
        if (pxl_recorder_submit(rec, 1, &ns) != PXL_OK) fail("submit");
        double us = (double)ns / 1e3 / CALLS;
        if (now_s() - t0 > 0.5) {
            if (us < best) best = us;
            if (round > 5 && now_s() - t0 > 0.6) break;
        }
    }
    return best;
}

static double timed(const char *entry, const pxl_constant *cs, size_t ncs, uint32_t groups) {
    return timed2(NULL, entry, cs, ncs, groups);
}

static char *slurp(const char *path, char *dst) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(1);
    }
    size_t n = fread(dst, 1, (1 << 20) - 1 - strlen(wgsl), f);
    fclose(f);
    dst[n] = '\0';
    return dst + n;
}

int main(int argc, char **argv) {
    if (argc > 3) {
        N = (unsigned)atoi(argv[2]);
        K = (unsigned)atoi(argv[3]);
    }
    const char *dir = argc > 1 ? argv[1] : ".";
    char path[4096];
    wgsl = calloc(1, 1 << 20);
    char *end = wgsl + sprintf(wgsl, "enable subgroups;\n");
    const char *parts[] = {"src/ops/wgsl/common/half_bits.wgsl", "src/ops/wgsl/common/q8_round.wgsl",
                           "src/ops/wgsl/common/bytes.wgsl", "bench/probe_mv.wgsl"};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, parts[i]);
        end = slurp(path, end);
    }
    pxl_ctx_options opt = pxl_ctx_options_default();
    opt.backend = PXL_BACKEND_GPU;
    opt.gpu_unchecked = 1; /* as pxl bench: no bounds clamping */
    opt.dawn_toggles = getenv("PXL_DAWN_TOGGLES");
    if (pxl_ctx_create(&opt, &ctx) != PXL_OK) return fail("context"), 1;
    const pxl_gpu_info *gi = pxl_gpu_get_info(ctx);
    printf("adapter: %s (%s)\n", gi->adapter_name, gi->backend);
    size_t bbytes = (size_t)N * NB * 144u;
    for (int i = 0; i < COPIES; i++) bq[i] = filled(bbytes, 7u + (unsigned)i, 0);
    aq = filled(K, 99u, 0);
    ad = filled(K / 32u * 16u, 5u, 1);
    cb = filled(N * 4u * 16u, 3u, 1);
    af = filled(K * 4u, 11u, 1);
    double mb = (double)bbytes / 1e6;
    printf("B: %u x %u, %.1f MB a copy; GB/s of B\n", N, K, mb);
    unsigned words = (unsigned)(bbytes / 16u);
    unsigned unrs[] = {2};
    for (int i = 0; i < 1; i++)
        for (unsigned it = 1; it <= 4; it *= 4) {
            pxl_constant cs[] = {{"UNR", unrs[i]}, {"ITER", it}};
            unsigned groups = (words + 256u * unrs[i] * it - 1) / (256u * unrs[i] * it);
            double us = timed("readall", cs, 2, groups);
            printf("readall UNR %u, %2u loads an invocation (%6u workgroups): %7.2f us %7.0f GB/s\n", unrs[i],
                   unrs[i] * it, groups, us, mb / us * 1e3);
        }
    struct { unsigned rows, unr, sha; } kv[] = {{2, 1, 0}, {2, 1, 1}, {4, 1, 0}, {4, 1, 1}, {1, 1, 0}};
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++) {
        pxl_constant cs[] = {{"ROWS", kv[i].rows}, {"UNR", kv[i].unr}, {"SHA", kv[i].sha}, {"NB", NB}};
        unsigned groups = N / (8u * kv[i].rows);
        double us = timed("kmv", cs, 4, groups);
        double ur = kv[i].sha ? 0 : timed("kread", cs, 4, groups);
        printf("kmv ROWS %u UNR %u SHA %u (%5u workgroups): %7.2f us %7.0f GB/s | kread %7.2f us %7.0f GB/s\n",
               kv[i].rows, kv[i].unr, kv[i].sha, groups, us, mb / us * 1e3, ur, ur > 0 ? mb / ur * 1e3 : 0);
    }
    for (unsigned rows = 1; rows <= 2; rows *= 2)
        for (unsigned fast = 0; fast < 2; fast++) {
            pxl_constant cs[] = {{"ROWS", rows}, {"FAST", fast}, {"NB", NB}};
            unsigned groups = N / (8u * rows);
            double us = timed("kmvr", cs, 3, groups);
            static float *c0;
            float *c1 = malloc(N * sizeof *c1);
            if (pxl_buffer_download(ctx, cb, 0, c1, N * sizeof *c1) != PXL_OK) fail("download");
            unsigned diff = 0;
            if (fast) {
                for (unsigned n = 0; n < N; n++) diff += memcmp(&c0[n], &c1[n], 4) != 0;
                free(c0);
            }
            c0 = c1;
            printf("kmvr (A rounded in each workgroup) ROWS %u FAST %u: %7.2f us %7.0f GB/s", rows, fast, us, mb / us * 1e3);
            if (fast) printf("; outputs unlike FAST 0's: %u of %u", diff, N);
            printf("\n");
        }
    {
        pxl_constant c1[] = {{"NB", NB}};
        printf("empty (one workgroup): %6.2f us a dispatch in the chain\n", timed("empty", c1, 1, 1));
    }
    for (unsigned rows = 2; rows <= 4; rows *= 2) {
        pxl_constant cs[] = {{"ROWS", rows}, {"SHA", 0}, {"NB", NB}};
        double us = timed2("rnd", "kmv", cs, 3, N / (8u * rows));
        pxl_constant c1[] = {{"NB", NB}};
        double ur = timed("rnd", c1, 1, 1);
        printf("rnd + kmv ROWS %u (A rounded by a kernel of its own): %7.2f us %7.0f GB/s | rnd alone %6.2f us\n", rows, us,
               mb / us * 1e3, ur);
    }
    pxl_ctx_free(ctx);
    return 0;
}
