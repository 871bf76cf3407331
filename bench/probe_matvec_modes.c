/*
 * Probe: is a one-row quantized product's speed a property of where its
 * buffers lie? `pxl bench ops` has shown the same case at 26 us in one
 * process and 94-115 us in another (docs/BENCHMARKS.md, "Quantized matvec
 * against copy bandwidth"). This makes fresh buffers trial after trial in
 * one process and times the product on them, then makes only A or only B
 * anew and times again, and times the 8-bit-A kernel (kmv4q, which reads A
 * once a workgroup) on the same buffers. A finding, not a test.
 *
 *   cc -std=c11 -O2 -Iinclude bench/probe_matvec_modes.c build-dev/libpxl.a \
 *      -lpng -lz -lpcre2-8 -lcholmod -lm -ldl -lpthread -o /tmp/modes
 *   /tmp/modes [q4_k|q6_k|q8_0] [N] [K] [trials]
 *
 * On the device machine, bench/probe_matvec_modes.sh builds and runs it with
 * the GPU's clocks sampled beside it (nvidia-smi every 50 ms).
 *
 * Output, a line a trial: us a call (wall time of 400 calls) with the
 * trial's buffers (A as given, then 8-bit A), three more times with A as
 * given back to back, once after a second idle, then with A made anew and
 * with the B copies made anew. The answer (docs/BENCHMARKS.md, "The GPU's
 * clocks"): not the buffers but the SM clock, which falls while the host
 * works and rises again after 0.1-0.2 s of steady work.
 */
#define _POSIX_C_SOURCE 200809L
#include "pxl/core.h"
#include "pxl/ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define COPIES 4
#define CALLS 400

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int fail(pxl_ctx *ctx, const char *what) {
    fprintf(stderr, "%s: %s\n", what, ctx ? pxl_ctx_error(ctx) : "no context");
    return 1;
}

/* a tensor of random values (quantized for a quantized dtype) */
static pxl_status make(pxl_ctx *ctx, pxl_dtype dt, int64_t rows, int64_t cols, unsigned seed, pxl_tensor **out) {
    int64_t shape[2] = {rows, cols};
    pxl_status s = pxl_tensor_create(ctx, dt, 2, shape, out);
    if (s != PXL_OK) return s;
    size_t bytes = pxl_tensor_bytes(*out);
    int64_t n = rows * cols;
    float *f = malloc((size_t)n * sizeof *f);
    void *h = malloc(bytes);
    if (!f || !h) {
        free(f);
        free(h);
        return PXL_ERR_OUT_OF_MEMORY;
    }
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        f[i] = (float)(seed >> 8) / 16777216.0f - 0.5f;
    }
    if (dt == PXL_F32) memcpy(h, f, bytes);
    else s = pxl_quantize(ctx, dt, f, n, h, bytes);
    if (s == PXL_OK) s = pxl_tensor_write(ctx, *out, h, bytes);
    free(f);
    free(h);
    return s;
}

/* us a call over CALLS products, the weight copies in turn, after a warm-up */
static double timed(pxl_ctx *ctx, pxl_tensor *a, pxl_tensor **b, pxl_tensor *c, int a_q8) {
    pxl_matmul_options o = {0};
    o.trans_b = 1;
    o.a_q8 = a_q8;
    for (int i = 0; i < 40; i++)
        if (pxl_matmul(ctx, a, b[i % COPIES], c, &o) != PXL_OK) return -1;
    if (pxl_finish(ctx) != PXL_OK) return -1;
    double t0 = now_us();
    for (int i = 0; i < CALLS; i++)
        if (pxl_matmul(ctx, a, b[i % COPIES], c, &o) != PXL_OK) return -1;
    if (pxl_finish(ctx) != PXL_OK) return -1;
    return (now_us() - t0) / CALLS;
}

int main(int argc, char **argv) {
    const char *dts = argc > 1 ? argv[1] : "q4_k";
    int64_t N = argc > 2 ? atoll(argv[2]) : 14336, K = argc > 3 ? atoll(argv[3]) : 4096;
    int trials = argc > 4 ? atoi(argv[4]) : 8;
    pxl_dtype dt = !strcmp(dts, "q6_k") ? PXL_Q6_K : !strcmp(dts, "q8_0") ? PXL_Q8_0 : PXL_Q4_K;
    pxl_ctx_options opt = pxl_ctx_options_default();
    opt.backend = PXL_BACKEND_GPU;
    opt.tuning = getenv("PXL_TUNE");
    pxl_ctx *ctx = NULL;
    if (pxl_ctx_create(&opt, &ctx) != PXL_OK) return fail(ctx, "context");
    printf("%s %lldx%lld, %d copies, us a call: trial | given A | 8-bit A | given A thrice more | after 1 s idle | A anew | B anew\n", dts, (long long)N,
           (long long)K, COPIES);
    unsigned seed = 1;
    for (int t = 0; t < trials; t++) {
        pxl_tensor *a = NULL, *c = NULL, *b[COPIES] = {0};
        if (make(ctx, PXL_F32, 1, K, seed++, &a) != PXL_OK || make(ctx, PXL_F32, 1, N, seed++, &c) != PXL_OK)
            return fail(ctx, "A, C");
        for (int i = 0; i < COPIES; i++)
            if (make(ctx, dt, N, K, seed++, &b[i]) != PXL_OK) return fail(ctx, "B");
        double given = timed(ctx, a, b, c, 0), q8 = timed(ctx, a, b, c, 1);
        double again[3];
        for (int r = 0; r < 3; r++) again[r] = timed(ctx, a, b, c, 0);
        struct timespec pause = {1, 0};
        nanosleep(&pause, NULL);
        double slept = timed(ctx, a, b, c, 0);
        pxl_tensor_free(a);
        if (make(ctx, PXL_F32, 1, K, seed++, &a) != PXL_OK) return fail(ctx, "A anew");
        double a_new = timed(ctx, a, b, c, 0);
        for (int i = 0; i < COPIES; i++) {
            pxl_tensor_free(b[i]);
            b[i] = NULL;
            if (make(ctx, dt, N, K, seed++, &b[i]) != PXL_OK) return fail(ctx, "B anew");
        }
        double b_new = timed(ctx, a, b, c, 0);
        printf("%d | %.2f | %.2f | %.2f %.2f %.2f | %.2f | %.2f | %.2f\n", t, given, q8, again[0], again[1], again[2],
               slept, a_new, b_new);
        fflush(stdout);
        pxl_tensor_free(a);
        pxl_tensor_free(c);
        for (int i = 0; i < COPIES; i++) pxl_tensor_free(b[i]);
    }
    pxl_ctx_free(ctx);
    return 0;
}
