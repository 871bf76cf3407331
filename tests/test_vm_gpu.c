/*
 * The GPU interpreter of pxVM against the CPU one: a property test.
 *
 * 1. The WGSL requantization (32-bit pieces) against pxl_vm_rq on edge values
 *    and random ones, through tests/wgsl/vm_rq_test.wgsl (a test-only part
 *    appended to the interpreter's common WGSL; the library does not hold it).
 * 2. The spec's v0 conformance program.
 * 3. Random VALID programs (mostly v1, some v0) over random images: random
 *    shapes, dtypes, scales (big multipliers, shifts 0..62), edge data (-128,
 *    127, INT32_MIN, ...), chains through earlier outputs, in-place ops,
 *    out-of-range GATHER indices and small budgets. Each must decode; the CPU
 *    interpreter runs on one copy, the GPU one on another, and the statuses,
 *    messages, traces and bytes must be identical. MATMUL alternates between the tiled
 *    and the small kernel (the context's tuning option vm_mm), whatever the
 *    shape, and the soft dp4 (vm_dp4=soft) is used now and then: one context
 *    for each combination.
 *
 * usage: test_vm_gpu [SOURCE_DIR]
 * env:   PXL_VM_GPU_N     number of random programs (default 10000)
 *        PXL_VM_GPU_SEED  first seed (default 1); program i uses seed + i
 * Exits 77 (skipped) without a GPU adapter.
 */
#include "check.h"
#include "test_ctx.h"
#include "pxl/gpu.h"
#include "pxl/vm.h"
#include "vm/vm_internal.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wgsl_vm.h"

/* ---- random numbers ---------------------------------------------------------------- */

typedef struct rng {
    uint64_t s;
} rng;

static uint32_t rnd(rng *r) {
    r->s = r->s * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t x = r->s;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (uint32_t)x;
}
/* uniform in [lo, hi] */
static uint32_t rr(rng *r, uint32_t lo, uint32_t hi) { return lo + rnd(r) % (hi - lo + 1); }
static int chance(rng *r, uint32_t percent) { return rnd(r) % 100 < percent; }

static int8_t rnd_i8(rng *r) {
    switch (rnd(r) % 8) {
    case 0: return -128;
    case 1: return 127;
    case 2: return 0;
    case 3: return (int8_t)rr(r, 0, 6) - 3;
    default: return (int8_t)(uint8_t)rnd(r);
    }
}

static int32_t rnd_i32(rng *r) {
    switch (rnd(r) % 8) {
    case 0: return INT32_MIN;
    case 1: return INT32_MAX;
    case 2: return (int32_t)rr(r, 0, 200) - 100;
    case 3: return (int32_t)(rnd(r) >> rr(r, 1, 31)) * (chance(r, 50) ? -1 : 1);
    default: return (int32_t)rnd(r);
    }
}

static void rnd_scale(rng *r, int32_t *mult, uint8_t *shift) {
    switch (rnd(r) % 8) {
    case 0:
        *mult = 1;
        *shift = 0;
        break;
    case 1:
        *mult = (int32_t)rnd(r);
        *shift = (uint8_t)rr(r, 0, 62);
        break;
    case 2:
        *mult = chance(r, 50) ? INT32_MAX : INT32_MIN;
        *shift = (uint8_t)rr(r, 28, 62);
        break;
    case 3:
        *mult = (int32_t)rr(r, 1, 1u << 30) * (chance(r, 30) ? -1 : 1);
        *shift = (uint8_t)rr(r, 24, 40);
        break;
    case 4:
        *mult = (int32_t)rr(r, 0, 3) - 1;
        *shift = (uint8_t)rr(r, 0, 3);
        break;
    default:
        *mult = (int32_t)rr(r, 1, 1u << 16);
        *shift = (uint8_t)rr(r, 8, 24);
        break;
    }
}

/* ---- 1. requantization -------------------------------------------------------------- */

/* Reads a whole text file (NUL-terminated, malloc'ed); NULL if it cannot. */
static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *s = malloc(cap);
    while (s) {
        n += fread(s + n, 1, cap - 1 - n, f);
        if (n < cap - 1) break;
        char *p = realloc(s, cap * 2);
        if (!p) free(s);
        s = p, cap *= 2;
    }
    if (s && ferror(f)) free(s), s = NULL;
    fclose(f);
    if (s) s[n] = '\0';
    return s;
}

/*
 * Runs the WGSL rq on n (acc, mult, shift, dtype) quadruples: the
 * interpreter's common part (vm.wgsl, as the library embeds it), then
 * tests/wgsl/vm_rq_test.wgsl, then the soft dp4 line the interpreter appends.
 */
static pxl_status gpu_rq(pxl_ctx *ctx, const char *src_dir, const int32_t *in, size_t n, int32_t *out) {
    if (n == 0 || (n + 63) / 64 > 65535) return PXL_ERR_INVALID_ARG;
    static const char dp4[] = "\nfn dp4(a: u32, b: u32) -> i32 { return dp4_soft(a, b); }\n";
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/wgsl/vm_rq_test.wgsl", src_dir);
    char *part = read_text(path);
    if (!part) {
        fprintf(stderr, "cannot read %s\n", path);
        return PXL_ERR_IO;
    }
    size_t a = strlen(pxl_wgsl_vm_vm), b = strlen(part);
    char *wgsl = malloc(a + 1 + b + sizeof dp4);
    if (!wgsl) {
        free(part);
        return PXL_ERR_OUT_OF_MEMORY;
    }
    memcpy(wgsl, pxl_wgsl_vm_vm, a);
    wgsl[a] = '\n';
    memcpy(wgsl + a + 1, part, b);
    memcpy(wgsl + a + 1 + b, dp4, sizeof dp4);
    free(part);
    pxl_kernel *k = NULL;
    pxl_buffer *bin = NULL, *bout = NULL;
    pxl_recorder *rec = NULL;
    pxl_status s = pxl_kernel_get(ctx, "vm.wgsl+vm_rq_test.wgsl", wgsl, "rq_test", NULL, 0, &k);
    if (s == PXL_OK) s = pxl_buffer_create(ctx, n * 16, &bin);
    if (s == PXL_OK) s = pxl_buffer_create(ctx, n * 4, &bout);
    if (s == PXL_OK) s = pxl_buffer_upload(ctx, bin, 0, in, n * 16);
    if (s == PXL_OK) s = pxl_recorder_begin(ctx, 0, &rec);
    if (s == PXL_OK) {
        pxl_binding bd[2] = {{0, bin, 0, 0}, {1, bout, 0, (uint64_t)n * 4}};
        /* rq_test indexes by global_invocation_id.x alone: a one-dimensional grid */
        pxl_dispatch d = {k, bd, 2, NULL, 0, 0, {(uint32_t)((n + 63) / 64), 1, 1}};
        s = pxl_recorder_dispatch(rec, &d);
        if (s == PXL_OK) s = pxl_recorder_submit(rec, 0, NULL);
        else pxl_recorder_discard(rec);
    }
    if (s == PXL_OK) s = pxl_buffer_download(ctx, bout, 0, out, n * 4);
    pxl_buffer_free(bin);
    pxl_buffer_free(bout);
    free(wgsl);
    return s;
}

static void test_rq(pxl_ctx *ctx, const char *src_dir) {
    static const int32_t accs[] = {0,       1,         -1,         2,          -2,        127,
                                   -128,    255,       -256,       16384,      -16256,    65535 * 16384,
                                   -65535 * 16384,     INT32_MAX,  INT32_MIN,  INT32_MIN + 1,
                                   1 << 30, -(1 << 30), 0x12345678, -0x12345678};
    static const int32_t mults[] = {0,         1,          -1,         2,         INT32_MAX, INT32_MIN,
                                    INT32_MIN + 1, 1 << 30, -(1 << 30), 0x40000001, 0x7ffe1234,
                                    12345,     -12345,     65536,      -65536};
    size_t na = sizeof accs / sizeof accs[0], nm = sizeof mults / sizeof mults[0];
    size_t n_edge = na * nm * 63 * 2;
    size_t n = n_edge + 200000;
    int32_t *in = malloc(n * 16), *out = malloc(n * 4);
    if (!in || !out) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    size_t i = 0;
    for (size_t a = 0; a < na; a++)
        for (size_t m = 0; m < nm; m++)
            for (int s = 0; s <= 62; s++)
                for (int dt = 1; dt <= 2; dt++, i++) {
                    in[4 * i] = accs[a];
                    in[4 * i + 1] = mults[m];
                    in[4 * i + 2] = s;
                    in[4 * i + 3] = dt;
                }
    rng r = {12345};
    for (; i < n; i++) {
        in[4 * i] = chance(&r, 50) ? rnd_i32(&r) : (int32_t)rnd(&r) >> rr(&r, 0, 31);
        in[4 * i + 1] = chance(&r, 50) ? rnd_i32(&r) : (int32_t)rnd(&r);
        in[4 * i + 2] = (int32_t)rr(&r, 0, 62);
        in[4 * i + 3] = (int32_t)rr(&r, 1, 2);
    }
    pxl_status s = gpu_rq(ctx, src_dir, in, n, out);
    CHECK_MSG(s == PXL_OK, "rq_test: %s", pxl_ctx_error(ctx));
    size_t bad = 0;
    for (i = 0; s == PXL_OK && i < n; i++) {
        int64_t want = pxl_vm_rq(in[4 * i], in[4 * i + 1], (uint8_t)in[4 * i + 2], (uint8_t)in[4 * i + 3]);
        if (want != out[i] && bad++ < 10)
            fprintf(stderr, "rq(acc=%d, mult=%d, shift=%d, dtype=%d): gpu %d, cpu %lld\n", in[4 * i], in[4 * i + 1],
                    in[4 * i + 2], in[4 * i + 3], out[i], (long long)want);
    }
    CHECK_MSG(bad == 0, "%zu of %zu requantizations differ", bad, n);
    fprintf(stderr, "rq: %zu values (%zu edge combinations) compared\n", n, n_edge);
    free(in);
    free(out);
}

/* ---- running both interpreters ------------------------------------------------------ */

typedef struct stats {
    long programs, v0, v1, insns, gather_errors, budget_stops, bytes;
} stats;

/*
 * The GPU interpreter's test knobs, set through the context's tuning option:
 * the MATMUL kernel (vm_mm), and the soft dp4 (vm_dp4=soft) now and then.
 * One context per combination, made on first use; [0][0] is main's context.
 * g_mode names the one in use, for failure reports.
 */
static const char *const g_mode_text[3][2] = {{"vm_mm=auto vm_dp4=auto", "vm_mm=auto vm_dp4=soft"},
                                              {"vm_mm=tile vm_dp4=auto", "vm_mm=tile vm_dp4=soft"},
                                              {"vm_mm=small vm_dp4=auto", "vm_mm=small,vm_dp4=soft"}};
static pxl_ctx *g_mode_ctx[3][2];
static const char *g_mode = "vm_mm=auto vm_dp4=auto";

static pxl_ctx *set_gpu_mode(rng *r) {
    int mm = (int)(rnd(r) % 3); /* 0 tile, 1 small, 2 auto */
    mm = mm == 2 ? 0 : mm + 1;
    int soft = chance(r, 20) ? 1 : 0;
    g_mode = g_mode_text[mm][soft];
    if (!g_mode_ctx[mm][soft]) {
        pxl_ctx_options o = pxl_ctx_options_default();
        o.backend = PXL_BACKEND_GPU;
        o.quiet = 1;
        o.tuning = g_mode;
        if (pxl_ctx_create(&o, &g_mode_ctx[mm][soft]) != PXL_OK) {
            fprintf(stderr, "cannot make a context with tuning \"%s\": %s\n", g_mode,
                    g_mode_ctx[mm][soft] ? pxl_ctx_error(g_mode_ctx[mm][soft]) : "out of memory");
            exit(1);
        }
    }
    return g_mode_ctx[mm][soft];
}

/* Traces, collected to compare the interpreters' ("x=N text" lines). */
typedef struct trace_buf {
    char text[8192];
    size_t len;
} trace_buf;

static void trace_fn(void *user, uint32_t x, const char *text) {
    trace_buf *t = user;
    if (t->len < sizeof t->text) {
        int k = snprintf(t->text + t->len, sizeof t->text - t->len, "x=%u %s\n", x, text);
        if (k > 0) t->len += (size_t)k;
        if (t->len > sizeof t->text) t->len = sizeof t->text;
    }
}

/* Runs img on both interpreters; returns 0 on a difference (after printing it). */
static int compare_run(pxl_ctx *ctx, const pxl_image *img, uint64_t max_steps, uint64_t seed, stats *st) {
    pxl_vm_program prog = {0, 0, NULL};
    pxl_status ds = pxl_vm_decode(ctx, img, &prog);
    if (ds != PXL_OK) {
        fprintf(stderr, "seed %llu: the generator made an invalid program: %s\n", (unsigned long long)seed,
                pxl_ctx_error(ctx));
        g_failures++;
        return 0;
    }
    pxl_image *c = NULL, *g = NULL;
    if (pxl_image_clone(ctx, img, &c) != PXL_OK || pxl_image_clone(ctx, img, &g) != PXL_OK) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    static trace_buf tc, tg;
    tc.len = tg.len = 0;
    tc.text[0] = tg.text[0] = '\0';
    pxl_vm_options opts = {max_steps, trace_fn, &tc, NULL};
    pxl_status sc = pxl_vm_run_cpu(ctx, c, &opts);
    char msg_c[PXL_ERR_MAX];
    snprintf(msg_c, sizeof msg_c, "%s", sc == PXL_OK ? "" : pxl_ctx_error(ctx));
    opts.trace_user = &tg;
    pxl_status sg = pxl_vm_exec_gpu(ctx, g, &prog, &opts);
    char msg_g[PXL_ERR_MAX];
    snprintf(msg_g, sizeof msg_g, "%s", sg == PXL_OK ? "" : pxl_ctx_error(ctx));
    int ok = 1;
    if (sc != sg || strcmp(msg_c, msg_g) != 0) {
        fprintf(stderr, "seed %llu: cpu: %s \"%s\"\n     gpu: %s \"%s\"\n", (unsigned long long)seed,
                pxl_status_str(sc), msg_c, pxl_status_str(sg), msg_g);
        ok = 0;
    }
    if (tc.len != tg.len || memcmp(tc.text, tg.text, tc.len) != 0) {
        fprintf(stderr, "seed %llu: traces differ:\ncpu:\n%sgpu:\n%s", (unsigned long long)seed, tc.text, tg.text);
        ok = 0;
    }
    size_t bytes = (size_t)img->w * img->h * 4;
    if (memcmp(c->px, g->px, bytes) != 0) {
        size_t i = 0;
        while (c->px[i] == g->px[i]) i++;
        size_t px = i / 4, nd = 0;
        for (size_t j = 0; j < bytes; j++) nd += c->px[j] != g->px[j];
        const uint8_t *pc = c->px + px * 4, *pg = g->px + px * 4, *p0 = img->px + px * 4;
        fprintf(stderr,
                "seed %llu: images differ in %zu bytes; first at pixel (%zu, %zu) channel %zu: "
                "cpu (%u, %u, %u, %u), gpu (%u, %u, %u, %u), before (%u, %u, %u, %u)  [%ux%u, v%d, %zu insns]\n",
                (unsigned long long)seed, nd, px % img->w, px / img->w, i % 4, pc[0], pc[1], pc[2], pc[3], pg[0],
                pg[1], pg[2], pg[3], p0[0], p0[1], p0[2], p0[3], img->w, img->h, prog.version, prog.n);
        ok = 0;
    }
    if (!ok) {
        for (size_t k = 0; k < prog.n; k++) {
            const pxl_vm_insn *in = &prog.insns[k];
            fprintf(stderr, "  x=%u op %u out %u a %u b %u imm %u  out %ux%u dt%u m%d s%u  a %ux%u dt%u  b %ux%u dt%u\n",
                    in->x, in->op, in->out, in->a, in->b, in->imm, in->t_out.rows, in->t_out.cols, in->t_out.dtype,
                    in->t_out.mult, in->t_out.shift, in->t_a.rows, in->t_a.cols, in->t_a.dtype, in->t_b.rows,
                    in->t_b.cols, in->t_b.dtype);
        }
        fprintf(stderr, "  tuning: %s\n", g_mode);
        g_failures++;
    }
    st->programs++;
    st->insns += (long)prog.n;
    st->bytes += (long)bytes;
    if (prog.version) st->v1++;
    else st->v0++;
    if (sc != PXL_OK && strstr(msg_c, "gather at")) st->gather_errors++;
    if (sc != PXL_OK && strstr(msg_c, "budget exceeded")) st->budget_stops++;
    pxl_image_free(c);
    pxl_image_free(g);
    pxl_vm_program_free(ctx, &prog);
    return ok;
}

/* Total cost of a decoded program, for picking budgets. */
static uint64_t program_cost(pxl_ctx *ctx, const pxl_image *img) {
    pxl_vm_program prog = {0, 0, NULL};
    if (pxl_vm_decode(ctx, img, &prog) != PXL_OK) return 0;
    uint64_t c = 0;
    for (size_t i = 0; i < prog.n; i++) c += prog.insns[i].cost;
    pxl_vm_program_free(ctx, &prog);
    return c;
}

/* ---- 2. conformance ------------------------------------------------------------------ */

static void test_conformance(pxl_ctx *ctx) {
    pxl_image *img = NULL;
    if (pxl_image_create(ctx, 16, 16, &img) != PXL_OK) exit(1);
    uint8_t *p = pxl_image_px(img, 0, 0);
    p[0] = 1, p[1] = 1, p[2] = 2, p[3] = 3;
    for (uint32_t x = 0; x < 4; x++) {
        pxl_image_px(img, x, 1)[0] = (uint8_t)(x + 1);
        pxl_image_px(img, x, 2)[0] = (uint8_t)(10 * (x + 1));
    }
    pxl_vm_program prog = {0, 0, NULL};
    CHECK(pxl_vm_decode(ctx, img, &prog) == PXL_OK);
    CHECK(pxl_vm_exec_gpu(ctx, img, &prog, NULL) == PXL_OK);
    const uint8_t *o = pxl_image_px(img, 0, 3);
    CHECK_MSG(o[0] == 44 && o[1] == 1 && o[2] == 0 && o[3] == 0, "P(0, 3) = (%u, %u, %u, %u)", o[0], o[1], o[2],
              o[3]);
    pxl_vm_program_free(ctx, &prog);
    pxl_image_free(img);
}

/* ---- 3a. random v1 programs ------------------------------------------------------------ */

#define MAX_T 64
#define MAX_I 16

typedef struct gt {
    uint32_t rows, cols;
    uint8_t dtype, shift;
    int32_t mult;
    uint32_t row;     /* header row, assigned at layout */
    int written;      /* the output of some instruction */
    uint32_t index_v; /* > 0: indices into V rows (mostly valid ones are generated) */
} gt;

typedef struct gi {
    uint8_t op, imm;
    int out, a, b; /* tensor indices, -1 unused */
} gi;

typedef struct gen {
    rng *r;
    gt t[MAX_T];
    int nt;
    gi ins[MAX_I];
    int ni;
    int big; /* this program may use larger shapes */
} gen;

static uint32_t el_size(uint8_t dt) { return dt == PXL_VM_INT8 ? 1u : 4u; }

static int new_t(gen *g, uint32_t rows, uint32_t cols, uint8_t dtype) {
    if (g->nt == MAX_T) return -1;
    gt *t = &g->t[g->nt];
    memset(t, 0, sizeof *t);
    t->rows = rows;
    t->cols = cols;
    t->dtype = dtype;
    rnd_scale(g->r, &t->mult, &t->shift);
    return g->nt++;
}

/* An existing tensor of this shape and dtype (not `avoid1`, `avoid2`), or a new one. */
static int pick_t(gen *g, uint32_t rows, uint32_t cols, uint8_t dtype, int avoid1, int avoid2, uint32_t reuse) {
    if (chance(g->r, reuse)) {
        int cand[MAX_T], nc = 0;
        for (int i = 0; i < g->nt; i++)
            if (g->t[i].rows == rows && g->t[i].cols == cols && g->t[i].dtype == dtype && i != avoid1 &&
                i != avoid2)
                cand[nc++] = i;
        if (nc) return cand[rnd(g->r) % (uint32_t)nc];
    }
    return new_t(g, rows, cols, dtype);
}

/* An existing tensor (preferably a written one), to derive shapes from. */
static int any_t(gen *g) {
    if (g->nt == 0 || chance(g->r, 40)) return -1;
    int cand[MAX_T], nc = 0;
    for (int i = 0; i < g->nt; i++)
        if (g->t[i].written) cand[nc++] = i;
    if (nc && chance(g->r, 70)) return cand[rnd(g->r) % (uint32_t)nc];
    return (int)(rnd(g->r) % (uint32_t)g->nt);
}

static uint32_t dim(gen *g) {
    if (g->big && chance(g->r, 30)) return rr(g->r, 20, 150);
    if (chance(g->r, 10)) return rr(g->r, 9, 40);
    return rr(g->r, 1, 8);
}

static uint8_t rnd_dt(rng *r) { return chance(r, 65) ? PXL_VM_INT8 : PXL_VM_INT32; }

/* Adds one random instruction; returns 0 if it could not (tensor table full). */
static int gen_insn(gen *g) {
    rng *r = g->r;
    gi in = {0, 0, -1, -1, -1};
    int base = any_t(g);
    switch (rnd(r) % 10) {
    case 0:
    case 1:
    case 2: { /* MATMUL */
        in.op = PXL_OP_MATMUL;
        uint32_t m = dim(g), n = dim(g), k;
        if (g->big && chance(r, 30)) k = rr(r, 1, 200);
        else k = chance(r, 50) ? 4 * rr(r, 1, 16) : rr(r, 1, 70);
        if (base >= 0 && g->t[base].dtype == PXL_VM_INT8) { /* a from an earlier tensor */
            m = g->t[base].rows;
            k = g->t[base].cols;
            in.a = base;
        }
        if (chance(r, 10)) { /* flattened a */
            in.imm = PXL_VM_FLAG_FLATTEN_A;
            uint32_t ar = rr(r, 1, 4), ac = rr(r, 1, 24);
            in.a = pick_t(g, ar, ac, PXL_VM_INT8, -1, -1, 30);
            m = 1;
            k = ar * ac;
        } else if (in.a < 0) {
            in.a = pick_t(g, m, k, PXL_VM_INT8, -1, -1, 30);
        }
        in.b = pick_t(g, n, k, PXL_VM_INT8, -1, -1, 30);
        in.out = pick_t(g, m, n, rnd_dt(r), in.a, in.b, 20);
        break;
    }
    case 3:
    case 4: { /* ADD, MUL */
        in.op = chance(r, 50) ? PXL_OP_ADD : PXL_OP_MUL;
        uint32_t m = dim(g), n = dim(g);
        uint8_t dt = in.op == PXL_OP_MUL ? PXL_VM_INT8 : rnd_dt(r);
        if (base >= 0 && (in.op == PXL_OP_ADD || g->t[base].dtype == PXL_VM_INT8)) {
            m = g->t[base].rows;
            n = g->t[base].cols;
            dt = g->t[base].dtype;
            in.a = base;
        } else {
            in.a = pick_t(g, m, n, dt, -1, -1, 30);
        }
        int bcast = chance(r, 30);
        in.b = pick_t(g, bcast ? 1 : m, n, dt, -1, -1, 30);
        if (chance(r, 30)) in.b = in.a; /* a + a */
        uint32_t u = rnd(r) % 100;
        if (u < 25) in.out = in.a; /* in place */
        else if (u < 35 && g->t[in.b].rows == m) in.out = in.b;
        else in.out = pick_t(g, m, n, rnd_dt(r), in.a, in.b, 20);
        break;
    }
    case 5: { /* LUT */
        in.op = PXL_OP_LUT;
        uint32_t m = dim(g), n = dim(g);
        if (base >= 0 && g->t[base].dtype == PXL_VM_INT8) {
            m = g->t[base].rows;
            n = g->t[base].cols;
            in.a = base;
        } else {
            in.a = pick_t(g, m, n, PXL_VM_INT8, -1, -1, 30);
        }
        in.b = pick_t(g, 1, 256, PXL_VM_INT8, in.a, -1, 50);
        in.out = chance(r, 30) ? in.a : pick_t(g, m, n, PXL_VM_INT8, in.a, in.b, 20);
        break;
    }
    case 6: { /* GATHER */
        in.op = PXL_OP_GATHER;
        uint32_t v = dim(g), n = dim(g), m = dim(g);
        uint8_t dt = rnd_dt(r);
        if (base >= 0 && g->t[base].dtype == PXL_VM_INT32 && g->t[base].rows == 1) {
            in.b = base; /* e.g. ARGMAX's output as indices */
            m = g->t[base].cols;
        } else {
            in.b = pick_t(g, 1, m, PXL_VM_INT32, -1, -1, 20);
            if (in.b >= 0) g->t[in.b].index_v = v;
        }
        in.a = pick_t(g, v, n, dt, in.b, -1, 30);
        in.out = pick_t(g, m, n, dt, in.a, in.b, 20);
        break;
    }
    case 7: { /* ARGMAX */
        in.op = PXL_OP_ARGMAX;
        if (base >= 0) in.a = base;
        else in.a = pick_t(g, dim(g), dim(g), rnd_dt(r), -1, -1, 30);
        in.out = pick_t(g, 1, g->t[in.a].rows, PXL_VM_INT32, in.a, -1, 20);
        break;
    }
    default: { /* COPY */
        in.op = PXL_OP_COPY;
        if (base >= 0) in.a = base;
        else in.a = pick_t(g, dim(g), dim(g), rnd_dt(r), -1, -1, 30);
        gt *a = &g->t[in.a];
        in.out = pick_t(g, a->rows, a->cols, a->dtype, in.a, -1, 20);
        break;
    }
    }
    if (in.out < 0 || in.a < 0 || (in.b < 0 && in.op != PXL_OP_ARGMAX && in.op != PXL_OP_COPY)) return 0;
    g->t[in.out].written = 1;
    g->ins[g->ni++] = in;
    return 1;
}

static void put_u16(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static pxl_image *gen_v1(pxl_ctx *ctx, rng *r) {
    gen g;
    memset(&g, 0, sizeof g);
    g.r = r;
    g.big = chance(r, 10);
    int want = chance(r, 80) ? (int)rr(r, 1, 5) : (int)rr(r, 6, MAX_I);
    while (g.ni < want && gen_insn(&g)) {
    }
    /* layout: row 0 holds the program; each tensor gets rows of its own */
    uint32_t w = rr(r, 4, 40);
    if (chance(r, 10)) w = rr(r, 41, 300);
    uint32_t need_w = 1 + 2 * (uint32_t)g.ni;
    if (w < need_w) w = need_w + (chance(r, 50) ? 0 : rr(r, 0, 5));
    uint64_t total_px = 0;
    for (int i = 0; i < g.nt; i++)
        total_px += PXL_VM_HEADER_PIXELS + ((uint64_t)g.t[i].rows * g.t[i].cols * el_size(g.t[i].dtype) + 3) / 4;
    while (total_px / w + 2 * (uint64_t)g.nt > 8000) w *= 2; /* stay well inside the height cap */
    uint32_t row = 1;
    for (int i = 0; i < g.nt; i++) {
        gt *t = &g.t[i];
        row += chance(r, 20) ? 1 : 0; /* a gap */
        t->row = row;
        uint64_t bytes = (uint64_t)t->rows * t->cols * el_size(t->dtype);
        uint64_t px = PXL_VM_HEADER_PIXELS + (bytes + 3) / 4;
        row += (uint32_t)((px + w - 1) / w);
    }
    uint32_t h = row + (chance(r, 30) ? rr(r, 0, 2) : 0);
    pxl_image *img = NULL;
    if (pxl_image_create(ctx, w, h, &img) != PXL_OK) {
        fprintf(stderr, "image %ux%u: %s\n", w, h, pxl_ctx_error(ctx));
        exit(1);
    }
    /* random background everywhere but row 0 */
    for (size_t i = (size_t)w * 4; i < (size_t)w * h * 4; i++) img->px[i] = (uint8_t)rnd(r);
    uint8_t *p0 = img->px;
    p0[0] = PXL_VM_MAGIC_R, p0[1] = PXL_VM_MAGIC_G, p0[2] = PXL_VM_MAGIC_B, p0[3] = PXL_VM_MAGIC_VERSION;
    for (int i = 0; i < g.nt; i++) {
        gt *t = &g.t[i];
        uint8_t *h0 = pxl_image_px(img, 0, t->row);
        uint32_t v = t->index_v;
        h0[0] = PXL_VM_TENSOR_MAGIC, h0[1] = t->dtype, h0[2] = t->shift, h0[3] = 0;
        put_u16(h0 + 4, t->cols);
        put_u16(h0 + 6, t->rows);
        uint32_t um = (uint32_t)t->mult;
        h0[8] = (uint8_t)um, h0[9] = (uint8_t)(um >> 8), h0[10] = (uint8_t)(um >> 16), h0[11] = (uint8_t)(um >> 24);
        uint8_t *d = h0 + 12;
        uint64_t n = (uint64_t)t->rows * t->cols;
        for (uint64_t e = 0; e < n; e++) {
            if (t->dtype == PXL_VM_INT8) {
                d[e] = (uint8_t)rnd_i8(r);
            } else {
                int32_t x = rnd_i32(r);
                if (v && !chance(r, 3)) x = (int32_t)rr(r, 0, v - 1);
                uint32_t u = (uint32_t)x;
                d[4 * e] = (uint8_t)u, d[4 * e + 1] = (uint8_t)(u >> 8);
                d[4 * e + 2] = (uint8_t)(u >> 16), d[4 * e + 3] = (uint8_t)(u >> 24);
            }
        }
    }
    for (int i = 0; i < g.ni; i++) {
        const gi *in = &g.ins[i];
        uint8_t *q = pxl_image_px(img, 1 + 2 * (uint32_t)i, 0);
        q[0] = in->op;
        put_u16(q + 1, g.t[in->out].row);
        q[3] = in->imm;
        put_u16(q + 4, in->a >= 0 ? g.t[in->a].row : 0);
        put_u16(q + 6, in->b >= 0 ? g.t[in->b].row : 0);
    }
    return img;
}

/* ---- 3b. random v0 programs ------------------------------------------------------------- */

/* The decoder's reading of v0 header pixels (decode.c): who last wrote P(0, y). */
enum { H_IMAGE, H_STATIC, H_DYNAMIC };

static pxl_image *gen_v0(pxl_ctx *ctx, rng *r) {
    uint32_t w = rr(r, 4, 24), h = rr(r, 4, 24);
    pxl_image *img = NULL;
    if (pxl_image_create(ctx, w, h, &img) != PXL_OK) exit(1);
    /* rows of small values with zero runs (DOT lengths), and small headers at column 0 */
    for (uint32_t y = 1; y < h; y++) {
        uint32_t zero_from = chance(r, 50) ? rr(r, 0, w) : w;
        for (uint32_t x = 0; x < w; x++) {
            uint8_t *p = pxl_image_px(img, x, y);
            if (x >= zero_from && chance(r, 80)) continue;
            for (int c = 0; c < 4; c++) p[c] = chance(r, 50) ? (uint8_t)rnd(r) : (uint8_t)rr(r, 0, 3);
            if (chance(r, 10)) p[0] = 255;
        }
        if (chance(r, 70)) { /* a header: cols, rows */
            uint8_t *p = pxl_image_px(img, 0, y);
            put_u16(p, rr(r, 0, 6));
            put_u16(p + 2, rr(r, 0, 6));
        }
    }
    uint8_t kind[32];
    uint32_t hc[32], hr[32];
    for (uint32_t y = 0; y < h; y++) {
        kind[y] = H_IMAGE;
        const uint8_t *p = pxl_image_px(img, 0, y);
        hc[y] = (uint32_t)p[0] | (uint32_t)p[1] << 8;
        hr[y] = (uint32_t)p[2] | (uint32_t)p[3] << 8;
    }
    uint64_t npx = (uint64_t)w * h;
    uint32_t n_ins = rr(r, 1, w < 8 ? w : 8);
    uint8_t ops[32][4];
    for (uint32_t i = 0; i < n_ins; i++) {
        uint8_t op = (uint8_t)rr(r, 1, 4);
        uint32_t a = 0, b = 0, o = 0;
        int done = 0;
        if (op == PXL_OP_V0_MATMUL) {
            /* operand rows whose headers are static or from the image, shapes that chain and fit */
            for (int tries = 0; tries < 20 && !done; tries++) {
                a = rr(r, 1, h - 1);
                b = rr(r, 1, h - 1);
                o = rr(r, 1, h - 1);
                if (kind[a] == H_DYNAMIC || kind[b] == H_DYNAMIC) continue;
                uint64_t ea = (uint64_t)a * w + 1 + (uint64_t)hc[a] * hr[a];
                uint64_t eb = (uint64_t)b * w + 1 + (uint64_t)hc[b] * hr[b];
                uint64_t eo = (uint64_t)o * w + 1 + (uint64_t)hr[a] * hc[b];
                if (hc[a] != hr[b] || ea > npx || eb > npx || eo > npx) continue;
                done = 1;
                uint32_t m = hr[a], n = hc[b];
                kind[o] = H_STATIC;
                hc[o] = n;
                hr[o] = m;
                uint64_t d0 = (uint64_t)o * w + 1;
                for (uint64_t y = (d0 + w - 1) / w; y * w < eo; y++) kind[y] = H_DYNAMIC;
            }
            if (!done) op = (uint8_t)rr(r, 1, 3);
        }
        if (!done) {
            a = rr(r, 0, h - 1);
            b = rr(r, 0, h - 1);
            o = rr(r, 1, h - 1);
            kind[o] = H_DYNAMIC;
        }
        ops[i][0] = op;
        ops[i][1] = (uint8_t)a;
        ops[i][2] = (uint8_t)(op == PXL_OP_V0_RELU ? o : b);
        ops[i][3] = (uint8_t)(op == PXL_OP_V0_RELU ? 0 : o);
    }
    for (uint32_t i = 0; i < n_ins; i++) memcpy(pxl_image_px(img, i, 0), ops[i], 4);
    return img;
}

/* ---- main ---------------------------------------------------------------------------------- */

/*
 * Sessions keep the image on the GPU and upload only what changed: a chain
 * of runs in one session (the same image again, the output with a few pixels
 * changed, another program of another size) must give the CPU's bytes at
 * every step. Returns the GPU's image (the caller frees it), NULL on failure.
 */
static pxl_image *session_step(pxl_ctx *ctx, pxl_vm_session *ss, const pxl_image *img, uint64_t seed, int step) {
    pxl_image *c = NULL, *g = NULL;
    if (pxl_image_clone(ctx, img, &c) != PXL_OK || pxl_image_clone(ctx, img, &g) != PXL_OK) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    pxl_status sc = pxl_vm_run_cpu(ctx, c, NULL);
    char msg_c[PXL_ERR_MAX];
    snprintf(msg_c, sizeof msg_c, "%s", sc == PXL_OK ? "" : pxl_ctx_error(ctx));
    pxl_status sg = pxl_vm_session_run(ss, g, NULL);
    int ok = sc == sg && (sc == PXL_OK || strcmp(msg_c, pxl_ctx_error(ctx)) == 0);
    if (!ok)
        fprintf(stderr, "session seed %llu step %d: cpu %s \"%s\", gpu %s \"%s\"\n", (unsigned long long)seed, step,
                pxl_status_str(sc), msg_c, pxl_status_str(sg), pxl_ctx_error(ctx));
    size_t bytes = (size_t)img->w * img->h * 4;
    if (ok && memcmp(c->px, g->px, bytes) != 0) {
        size_t i = 0;
        while (c->px[i] == g->px[i]) i++;
        fprintf(stderr, "session seed %llu step %d: images differ first at pixel (%zu, %zu)\n",
                (unsigned long long)seed, step, i / 4 % img->w, i / 4 / img->w);
        ok = 0;
    }
    pxl_image_free(c);
    if (!ok) {
        g_failures++;
        pxl_image_free(g);
        return NULL;
    }
    return g;
}

static void test_sessions(long n) {
    long steps = 0;
    for (long i = 0; i < n; i++) {
        uint64_t seed = 1000003u + (uint64_t)i;
        rng r = {seed * 0x9e3779b97f4a7c15ull + 7};
        pxl_ctx *ctx = set_gpu_mode(&r);
        pxl_vm_session *ss = NULL;
        CHECK(pxl_vm_session_create(ctx, &ss) == PXL_OK);
        pxl_image *img = chance(&r, 12) ? gen_v0(ctx, &r) : gen_v1(ctx, &r);
        for (int step = 0; step < 5 && img; step++, steps++) {
            if (step == 0) { /* the same input twice (what --repeat does): the GPU holds run 1's outputs */
                pxl_image *out = session_step(ctx, ss, img, seed, step);
                pxl_image_free(out);
                steps++;
            }
            pxl_image *out = session_step(ctx, ss, img, seed, step);
            pxl_image_free(img);
            img = out;
            if (!img) break;
            if (step == 2 && chance(&r, 50)) { /* another program, perhaps of another size */
                pxl_image_free(img);
                img = chance(&r, 12) ? gen_v0(ctx, &r) : gen_v1(ctx, &r);
            } else if (img->h > 1 && chance(&r, 70)) { /* a few pixels below row 0 change */
                for (uint32_t k = rr(&r, 1, 4); k > 0; k--) {
                    uint8_t *px = pxl_image_px(img, rr(&r, 0, img->w - 1), rr(&r, 1, img->h - 1));
                    px[rnd(&r) % 4] = (uint8_t)rnd(&r);
                }
            }
        }
        pxl_image_free(img);
        pxl_vm_session_free(ss);
    }
    pxl_vm_session_free(NULL);
    fprintf(stderr, "sessions: %ld chains, %ld runs\n", n, steps);
}

int main(int argc, char **argv) {
    const char *src_dir = argc > 1 ? argv[1] : ".";
    pxl_ctx *ctx = test_gpu_ctx();
    if (!ctx) return PXL_SKIP;

    double t0 = pxl_time_now();
    test_rq(ctx, src_dir);
    test_conformance(ctx);
    g_mode_ctx[0][0] = ctx;
    test_sessions(300);
    double t1 = pxl_time_now();

    long n = 10000;
    unsigned long long seed0 = 1;
    const char *e = getenv("PXL_VM_GPU_N");
    if (e) n = atol(e);
    e = getenv("PXL_VM_GPU_SEED");
    if (e) seed0 = strtoull(e, NULL, 10);
    stats st;
    memset(&st, 0, sizeof st);
    int shown = 0;
    for (long i = 0; i < n; i++) {
        uint64_t seed = seed0 + (uint64_t)i;
        rng r = {seed * 0x9e3779b97f4a7c15ull + 1};
        pxl_ctx *mc = set_gpu_mode(&r);
        pxl_image *img = chance(&r, 12) ? gen_v0(mc, &r) : gen_v1(mc, &r);
        uint64_t max_steps = 0;
        if (chance(&r, 5)) {
            uint64_t cost = program_cost(mc, img);
            if (cost > 1) max_steps = 1 + rnd(&r) % (cost - 1);
        }
        if (!compare_run(mc, img, max_steps, seed, &st) && ++shown >= 5) {
            pxl_image_free(img);
            fprintf(stderr, "stopping after 5 failing programs\n");
            break;
        }
        pxl_image_free(img);
    }
    double t2 = pxl_time_now();
    pxl_gpu_stats gs;
    memset(&gs, 0, sizeof gs);
    for (int m = 0; m < 3; m++)
        for (int d = 0; d < 2; d++) {
            if (!g_mode_ctx[m][d]) continue;
            pxl_gpu_stats x = pxl_gpu_get_stats(g_mode_ctx[m][d]);
            gs.dispatches += x.dispatches;
            gs.submits += x.submits;
            gs.pipeline_cache_misses += x.pipeline_cache_misses;
        }
    fprintf(stderr,
            "random programs: %ld (%ld v1, %ld v0), %ld instructions, %ld gather errors, %ld budget stops, "
            "%.1f MB of images; seeds %llu..%llu\n",
            st.programs, st.v1, st.v0, st.insns, st.gather_errors, st.budget_stops, (double)st.bytes / 1e6, seed0,
            seed0 + (unsigned long long)n - 1);
    fprintf(stderr, "time: rq+conformance+sessions %.1f s, programs %.1f s; %llu dispatches, %llu submits, %llu pipelines\n",
            t1 - t0, t2 - t1, (unsigned long long)gs.dispatches, (unsigned long long)gs.submits,
            (unsigned long long)gs.pipeline_cache_misses);
    /* the GPU interpreter really ran (not a CPU fallback) */
    CHECK_MSG(st.programs == 0 || gs.dispatches >= (uint64_t)st.programs / 2, "%llu dispatches for %ld programs",
              (unsigned long long)gs.dispatches, st.programs);
    for (int m = 0; m < 3; m++)
        for (int d = 0; d < 2; d++) pxl_ctx_free(g_mode_ctx[m][d]); /* [0][0] is ctx */
    return test_result("test_vm_gpu");
}
