/*
 * The GPU interpreter of pxVM (docs/pxvm-spec.md, section 4): runs a decoded
 * program (decode.c has checked everything) with the WGSL kernels of
 * src/vm/wgsl/ (vm.wgsl, the common part, plus vm_v0, vm_ew or vm_mm).
 *
 * - The image lives in one storage buffer of u32 (one pixel per word). Only
 *   the pixels the program reads before writing them are uploaded, and only
 *   the pixels it writes come back (all ranges in one round trip). Every
 *   instruction is one or more dispatches in one recorder: one queue submit
 *   for the whole program, nothing read back in between.
 * - Runs happen in a session (pxl_vm_session; pxl_vm_run makes a one-shot
 *   one): it keeps the pipelines and the buffers, and a shadow of what it
 *   uploaded, so a later run sends only the 1024-pixel blocks that differ
 *   from what the GPU holds. Pixels a run writes leave the known set.
 * - The budget is checked before recording, from the decoded static costs:
 *   only the instructions that fit are recorded.
 * - GATHER's out-of-range indices are noted by the shader in a small status
 *   buffer and reported after the run with the CPU interpreter's message.
 * - All arithmetic is integer (no float anywhere), so the bytes equal the CPU
 *   interpreter's; tests/test_vm_gpu.c checks it on random programs and on
 *   chains of runs in sessions.
 *
 * MATMUL takes 128 x 128 tiles through workgroup memory (mm_tile) when both
 * output sides are at least 32, else one invocation per four outputs
 * (mm_small). dp4 (a packed 4 x int8 dot product) is WGSL's dot4I8Packed
 * where it compiles, else shifts and a dot(). For tests, the context's
 * tuning option vm_mm=tile|small forces a MATMUL kernel, and vm_dp4=soft
 * the shift-based dp4.
 */
#include "vm_internal.h"
#include "pxl/gpu.h"
#include "wgsl_vm.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    K_V0_DOT,
    K_V0_ROW,
    K_V0_MM,
    K_V0_MM_STORE,
    K_EW,
    K_LUT,
    K_GATHER,
    K_GATHER_NOTE,
    K_ARGMAX,
    K_MM_SMALL,
    K_MM_TILE,
    K_MM_TILE_SCR, /* mm_tile with TO_SCRATCH = true */
    K_MM_PACK,
    K_COUNT
};

enum { P_V0, P_EW, P_MM, P_COUNT };

/* The part of the interpreter's WGSL each module adds to vm.wgsl. */
static const struct {
    const char *label;
    const char *text;
} part_info[P_COUNT] = {
    {"vm.wgsl+vm_v0.wgsl", pxl_wgsl_vm_vm_v0},
    {"vm.wgsl+vm_ew.wgsl", pxl_wgsl_vm_vm_ew},
    {"vm.wgsl+vm_mm.wgsl", pxl_wgsl_vm_vm_mm},
};

static const struct {
    const char *entry;
    int part;
    int scratch; /* binds binding 1 */
} kernel_info[K_COUNT] = {
    {"v0_dot", P_V0, 0},     {"v0_row", P_V0, 0},  {"v0_mm", P_V0, 1},       {"v0_mm_store", P_V0, 1},
    {"ew", P_EW, 0},         {"lut", P_EW, 1},     {"gather", P_EW, 1},      {"gather_note", P_EW, 1},
    {"argmax", P_EW, 0},     {"mm_small", P_MM, 0}, {"mm_tile", P_MM, 1},    {"mm_tile", P_MM, 1},
    {"mm_pack", P_MM, 1},
};

/* The appended definition of dp4 (see vm.wgsl). */
static const char DP4_NATIVE[] = "\nfn dp4(a: u32, b: u32) -> i32 { return dot4I8Packed(a, b); }\n";
static const char DP4_SOFT[] = "\nfn dp4(a: u32, b: u32) -> i32 { return dp4_soft(a, b); }\n";

#define WG_SMALL 64u
#define MM_TILE 128u

/* The uniform block of every kernel (struct Params in vm.wgsl). */
typedef struct vm_params {
    uint32_t op, count, a, b, o, m, n, k, a_dt, b_dt, o_dt;
    int32_t mult;
    uint32_t shift, bcast, aux, insn;
} vm_params;
_Static_assert(sizeof(vm_params) == 64, "mirrors struct Params in vm.wgsl");

typedef struct gpu_run {
    pxl_ctx *ctx;
    const pxl_gpu_info *info;
    char *wgsl[P_COUNT][2]; /* vm.wgsl + part + dp4 ([0] native, [1] soft); built on first use */
    int soft;      /* dot4I8Packed did not compile: use the soft dp4 */
    pxl_kernel *k[K_COUNT];
    pxl_recorder *rec;
    pxl_buffer *img, *scr, *st;
    int force_mm; /* 0 auto, 1 tile, 2 small */
    double compile_s; /* time in pxl_kernel_get */
    uint64_t dispatches;
} gpu_run;

static pxl_status build_source(gpu_run *r, int part, int soft) {
    if (r->wgsl[part][soft]) return PXL_OK;
    const char *tail = soft ? DP4_SOFT : DP4_NATIVE, *mid = part_info[part].text;
    size_t a = strlen(pxl_wgsl_vm_vm), b = strlen(mid), c = strlen(tail);
    char *s = pxl_alloc(r->ctx, a + b + c + 2);
    if (!s) return pxl_fail(r->ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_vm_run: out of memory");
    memcpy(s, pxl_wgsl_vm_vm, a);
    s[a] = '\n';
    memcpy(s + a + 1, mid, b);
    memcpy(s + a + 1 + b, tail, c + 1);
    r->wgsl[part][soft] = s;
    return PXL_OK;
}

static pxl_status kernel(gpu_run *r, int id, pxl_kernel **out) {
    if (r->k[id]) {
        *out = r->k[id];
        return PXL_OK;
    }
    pxl_constant scr = {"TO_SCRATCH", 1};
    int nc = id == K_MM_TILE_SCR;
    for (;;) {
        int part = kernel_info[id].part;
        pxl_status s = build_source(r, part, r->soft);
        if (s != PXL_OK) return s;
        double t0 = pxl_time_now();
        s = pxl_kernel_get(r->ctx, part_info[part].label, r->wgsl[part][r->soft], kernel_info[id].entry,
                           nc ? &scr : NULL, (size_t)nc, &r->k[id]);
        r->compile_s += pxl_time_now() - t0;
        if (s == PXL_ERR_SHADER && !r->soft) {
            /* perhaps no dot4I8Packed here: the soft dp4 gives the same integers */
            r->soft = 1;
            continue;
        }
        if (s != PXL_OK) return s;
        pxl_clear_error(r->ctx);
        *out = r->k[id];
        return PXL_OK;
    }
}

static void run_free(gpu_run *r) {
    if (r->rec) pxl_recorder_discard(r->rec);
    r->rec = NULL;
    pxl_buffer_free(r->img);
    pxl_buffer_free(r->scr);
    pxl_buffer_free(r->st);
    r->img = r->scr = r->st = NULL;
    for (int p = 0; p < P_COUNT; p++)
        for (int i = 0; i < 2; i++) {
            pxl_free(r->ctx, r->wgsl[p][i]);
            r->wgsl[p][i] = NULL;
        }
}

/* Work items -> a 2-D grid of workgroups (at most 65535 per dimension). */
static void grid(uint64_t items, uint32_t wg, uint32_t g[3]) {
    uint64_t n = (items + wg - 1) / wg;
    if (n == 0) n = 1;
    uint64_t gx = n < 65535 ? n : 65535;
    g[0] = (uint32_t)gx;
    g[1] = (uint32_t)((n + gx - 1) / gx);
    g[2] = 1;
}

static pxl_status dispatch(gpu_run *r, int id, const vm_params *prm, const uint32_t groups[3]) {
    pxl_kernel *k;
    pxl_status s = kernel(r, id, &k);
    if (s != PXL_OK) return s;
    pxl_buffer *aux = id == K_GATHER || id == K_GATHER_NOTE ? r->st : r->scr;
    pxl_binding b[2] = {{0, r->img, 0, 0}, {1, aux, 0, 0}};
    pxl_dispatch d = {k, b, kernel_info[id].scratch ? 2u : 1u, prm, sizeof *prm, 2,
                      {groups[0], groups[1], groups[2]}};
    r->dispatches++;
    return pxl_recorder_dispatch(r->rec, &d);
}

static uint32_t u32_of(uint64_t v) {
    assert(v <= UINT32_MAX);
    return (uint32_t)v;
}

/* ---- MATMUL path choice ------------------------------------------------------------- */


/* scratch bytes mm_tile needs for an int8 output with n % 4 != 0 (else 0) */
static uint64_t mm_tile_scratch(const pxl_vm_insn *in) {
    const pxl_vm_tensor *o = &in->t_out;
    if (o->dtype != PXL_VM_INT8 || o->cols % 4 == 0) return 0;
    return (uint64_t)o->rows * ((o->cols + 3) / 4) * 4;
}

static int mm_use_tile(const gpu_run *r, const pxl_vm_insn *in) {
    uint64_t need = mm_tile_scratch(in);
    if (need > r->info->max_storage_binding_size) return 0;
    if (r->force_mm) return r->force_mm == 1;
    return in->t_out.rows >= 32 && in->t_out.cols >= 32;
}

/* Scratch bytes an instruction needs. */
static uint64_t scratch_need(const gpu_run *r, int version, const pxl_vm_insn *in) {
    if (version == 0)
        return in->op == PXL_OP_V0_MATMUL ? (in->t_out.n_bytes + 3) / 4 * 4 : 0;
    if (in->op == PXL_OP_LUT) return 256;
    if (in->op == PXL_OP_MATMUL && mm_use_tile(r, in)) return mm_tile_scratch(in);
    return 0;
}

/* ---- the pixels that travel ---------------------------------------------------------- */

/*
 * Only pixels that the program reads before writing them travel to the GPU,
 * and only pixels it writes come back: a network's weights are uploaded and
 * never downloaded, its activations are downloaded and never uploaded.
 * Ranges are in pixels, [lo, hi).
 */
typedef struct px_range {
    uint64_t lo, hi;
} px_range;

typedef struct range_set {
    px_range *v;
    size_t n, cap;
} range_set;

static int range_add(pxl_ctx *ctx, range_set *s, uint64_t lo, uint64_t hi) {
    if (lo >= hi) return 1;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        px_range *v = pxl_realloc(ctx, s->v, cap * sizeof *v);
        if (!v) return 0;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n].lo = lo;
    s->v[s->n].hi = hi;
    s->n++;
    return 1;
}

static int range_cmp(const void *pa, const void *pb) {
    const px_range *a = pa, *b = pb;
    return (a->lo > b->lo) - (a->lo < b->lo);
}

/* Sorts and merges ranges that overlap or lie closer than `gap` pixels. */
static void range_merge(range_set *s, uint64_t gap) {
    if (s->n == 0) return;
    qsort(s->v, s->n, sizeof *s->v, range_cmp);
    size_t k = 0;
    for (size_t i = 1; i < s->n; i++) {
        if (s->v[i].lo <= s->v[k].hi + gap) {
            if (s->v[i].hi > s->v[k].hi) s->v[k].hi = s->v[i].hi;
        } else {
            s->v[++k] = s->v[i];
        }
    }
    s->n = k + 1;
}

/* In a sorted set of disjoint ranges: the first range with hi >= lo. */
static size_t range_find(const range_set *w, uint64_t lo) {
    size_t a = 0, b = w->n;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (w->v[m].hi >= lo) b = m;
        else a = m + 1;
    }
    return a;
}

/* Adds [lo, hi) to the sorted, disjoint set w, merging what it touches. */
static int written_add(pxl_ctx *ctx, range_set *w, uint64_t lo, uint64_t hi) {
    if (lo >= hi) return 1;
    size_t i = range_find(w, lo), j = i;
    while (j < w->n && w->v[j].lo <= hi) {
        if (w->v[j].lo < lo) lo = w->v[j].lo;
        if (w->v[j].hi > hi) hi = w->v[j].hi;
        j++;
    }
    if (i == j) {
        if (!range_add(ctx, w, lo, hi)) return 0; /* grows w; the new range moves to i */
        memmove(w->v + i + 1, w->v + i, (w->n - 1 - i) * sizeof *w->v);
    } else {
        memmove(w->v + i + 1, w->v + j, (w->n - j) * sizeof *w->v);
        w->n -= j - i - 1;
    }
    w->v[i].lo = lo;
    w->v[i].hi = hi;
    return 1;
}

/* Adds to `up` the parts of [lo, hi) that are not in w. */
static int add_unwritten(pxl_ctx *ctx, range_set *up, const range_set *w, uint64_t lo, uint64_t hi) {
    for (size_t i = range_find(w, lo); i < w->n && w->v[i].lo < hi && lo < hi; i++) {
        if (w->v[i].lo > lo && !range_add(ctx, up, lo, w->v[i].lo)) return 0;
        if (w->v[i].hi > lo) lo = w->v[i].hi;
    }
    return range_add(ctx, up, lo, hi);
}

/*
 * One instruction, in program order: what it reads that no earlier
 * instruction wrote whole goes to `up`, what it writes to `down`, and the
 * whole words it writes to `w`. Writes that merge with old bytes (the last
 * word of an int8 tensor, v0's channels) count as reads.
 */
static int insn_ranges(pxl_ctx *ctx, int version, uint32_t w, const pxl_vm_insn *in, range_set *up,
                       range_set *down, range_set *wr) {
    int ok = 1;
    if (version == 1) {
        const pxl_vm_opinfo *info = pxl_vm_opinfo_find(1, in->op);
        const pxl_vm_tensor *o = &in->t_out;
        if (info->uses_a) ok &= add_unwritten(ctx, up, wr, in->t_a.data_px, in->t_a.end_px);
        if (info->uses_b) ok &= add_unwritten(ctx, up, wr, in->t_b.data_px, in->t_b.end_px);
        uint64_t full = o->data_px + o->n_bytes / 4;
        ok &= add_unwritten(ctx, up, wr, full, o->end_px);
        ok &= range_add(ctx, down, o->data_px, o->end_px);
        return ok & written_add(ctx, wr, o->data_px, full);
    }
    uint64_t ra = (uint64_t)in->a * w, rb = (uint64_t)in->b * w, ro = (uint64_t)in->out * w;
    switch (in->op) {
    case PXL_OP_V0_DOT:
        ok &= range_add(ctx, up, ra, ra + w) & range_add(ctx, up, rb, rb + w) & range_add(ctx, up, ro, ro + 1);
        return ok & range_add(ctx, down, ro, ro + 1);
    case PXL_OP_V0_ADD:
    case PXL_OP_V0_RELU:
        ok &= range_add(ctx, up, ra, ra + w) & range_add(ctx, up, ro, ro + w);
        if (in->op == PXL_OP_V0_ADD) ok &= range_add(ctx, up, rb, rb + w);
        return ok & range_add(ctx, down, ro, ro + w);
    default: /* MATMUL: the output's header pixel and elements */
        ok &= range_add(ctx, up, in->t_a.data_px, in->t_a.end_px) &
              range_add(ctx, up, in->t_b.data_px, in->t_b.end_px) & range_add(ctx, up, ro, in->t_out.end_px);
        return ok & range_add(ctx, down, ro, in->t_out.end_px);
    }
}

/* Ranges closer than this many pixels travel as one (fewer copies and waits). */
#define RANGE_GAP 4096u

/* ---- recording ---------------------------------------------------------------------- */

static pxl_status record_v0(gpu_run *r, uint32_t w, const pxl_vm_insn *in) {
    vm_params prm;
    memset(&prm, 0, sizeof prm);
    uint32_t g[3];
    switch (in->op) {
    case PXL_OP_V0_DOT:
        prm.a = in->a * w;
        prm.b = in->b * w;
        prm.o = in->out * w;
        prm.aux = w;
        g[0] = g[1] = g[2] = 1;
        return dispatch(r, K_V0_DOT, &prm, g);
    case PXL_OP_V0_ADD:
    case PXL_OP_V0_RELU:
        prm.op = in->op == PXL_OP_V0_ADD ? 0 : 1;
        prm.count = w;
        prm.a = in->a * w;
        prm.b = in->b * w;
        prm.o = in->out * w;
        grid(w, WG_SMALL, g);
        return dispatch(r, K_V0_ROW, &prm, g);
    case PXL_OP_V0_MATMUL: {
        const pxl_vm_tensor *ta = &in->t_a, *tb = &in->t_b, *to = &in->t_out;
        uint64_t total = (uint64_t)ta->rows * tb->cols;
        prm.m = ta->rows;
        prm.k = ta->cols;
        prm.n = tb->cols;
        prm.a = u32_of(ta->data_px);
        prm.b = u32_of(tb->data_px);
        prm.o = u32_of(to->data_px);
        prm.aux = in->out * w;
        pxl_status s = PXL_OK;
        if (total) {
            prm.count = u32_of((total + 3) / 4);
            grid(prm.count, WG_SMALL, g);
            s = dispatch(r, K_V0_MM, &prm, g);
        }
        if (s != PXL_OK) return s;
        prm.count = u32_of(total);
        grid(total, WG_SMALL, g);
        return dispatch(r, K_V0_MM_STORE, &prm, g);
    }
    default:
        assert(0 && "not a v0 opcode");
        return PXL_ERR_INVALID_ARG;
    }
}

static pxl_status record_v1(gpu_run *r, size_t idx, const pxl_vm_insn *in) {
    const pxl_vm_tensor *to = &in->t_out, *ta = &in->t_a, *tb = &in->t_b;
    vm_params prm;
    memset(&prm, 0, sizeof prm);
    prm.o = u32_of(to->data_px);
    prm.a = u32_of(ta->data_px);
    prm.m = to->rows;
    prm.n = to->cols;
    prm.a_dt = ta->dtype;
    prm.o_dt = to->dtype;
    prm.mult = to->mult;
    prm.shift = to->shift;
    prm.insn = u32_of(idx);
    uint64_t total = (uint64_t)to->rows * to->cols;
    uint64_t groups4 = (total + 3) / 4;
    uint32_t g[3];
    switch (in->op) {
    case PXL_OP_MATMUL:
        prm.b = u32_of(tb->data_px);
        prm.b_dt = tb->dtype;
        prm.k = ta->cols; /* the flattened view when flag bit 0 is set */
        if (mm_use_tile(r, in)) {
            int to_scr = mm_tile_scratch(in) != 0;
            prm.aux = (to->cols + 3) / 4;
            g[0] = (to->cols + MM_TILE - 1) / MM_TILE;
            g[1] = (to->rows + MM_TILE - 1) / MM_TILE;
            g[2] = 1;
            pxl_status s = dispatch(r, to_scr ? K_MM_TILE_SCR : K_MM_TILE, &prm, g);
            if (s != PXL_OK || !to_scr) return s;
            grid(groups4, WG_SMALL, g);
            return dispatch(r, K_MM_PACK, &prm, g);
        }
        grid(groups4, WG_SMALL, g);
        return dispatch(r, K_MM_SMALL, &prm, g);
    case PXL_OP_ADD:
    case PXL_OP_MUL:
    case PXL_OP_COPY:
        prm.op = in->op == PXL_OP_ADD ? 0 : in->op == PXL_OP_MUL ? 1 : 2;
        if (in->op != PXL_OP_COPY) {
            prm.b = u32_of(tb->data_px);
            prm.b_dt = tb->dtype;
            prm.bcast = tb->rows == 1;
        }
        grid(groups4, WG_SMALL, g);
        return dispatch(r, K_EW, &prm, g);
    case PXL_OP_LUT: {
        /* the table is read from a copy, so no invocation sees another's output */
        pxl_status s = pxl_recorder_copy(r->rec, r->img, (size_t)tb->data_px * 4, r->scr, 0, 256);
        if (s != PXL_OK) return s;
        grid(groups4, WG_SMALL, g);
        return dispatch(r, K_LUT, &prm, g);
    }
    case PXL_OP_GATHER: {
        prm.b = u32_of(tb->data_px);
        prm.aux = ta->rows;
        grid(groups4, WG_SMALL, g);
        pxl_status s = dispatch(r, K_GATHER, &prm, g);
        if (s != PXL_OK) return s;
        g[0] = g[1] = g[2] = 1;
        return dispatch(r, K_GATHER_NOTE, &prm, g);
    }
    case PXL_OP_ARGMAX:
        prm.m = ta->rows;
        prm.n = ta->cols;
        grid((uint64_t)ta->rows * WG_SMALL, WG_SMALL, g);
        return dispatch(r, K_ARGMAX, &prm, g);
    default:
        assert(0 && "not a v1 opcode");
        return PXL_ERR_INVALID_ARG;
    }
}

/* ---- programs ------------------------------------------------------------------------ */

/* ---- sessions: the image kept on the GPU between runs ------------------------------- */

struct pxl_vm_session {
    pxl_ctx *ctx;
    gpu_run r;          /* kernels, WGSL and buffers, kept between runs */
    uint32_t w, h;      /* the image size r.img was made for (0: none) */
    uint64_t scr_size;  /* bytes of r.scr */
    int one_shot;       /* pxl_vm_run's own session: no shadow, nothing known */
    uint8_t *shadow;    /* w * h * 4 bytes: what r.img holds, where `known` says */
    range_set known;    /* pixels of r.img equal to shadow (sorted, disjoint) */
};

pxl_status pxl_vm_session_create(pxl_ctx *ctx, pxl_vm_session **out) {
    PXL_REQUIRE_CTX(ctx);
    PXL_REQUIRE(ctx, "pxl_vm_session_create", out);
    *out = NULL;
    pxl_vm_session *ss = pxl_calloc(ctx, 1, sizeof *ss);
    if (!ss) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_vm_session_create: out of memory");
    ss->ctx = ctx;
    ss->r.ctx = ctx;
    ss->r.info = pxl_gpu_get_info(ctx);
    ss->r.force_mm = pxl_ctx_tuning(ctx)->vm_mm;      /* 1 tile, 2 small */
    ss->r.soft = pxl_ctx_tuning(ctx)->vm_dp4_soft;
    *out = ss;
    return PXL_OK;
}

/* Forgets what the GPU image holds (after an error, or a new image size). */
static void session_forget(pxl_vm_session *ss) { ss->known.n = 0; }

static void session_drop_image(pxl_vm_session *ss) {
    session_forget(ss);
    pxl_buffer_free(ss->r.img);
    ss->r.img = NULL;
    pxl_free(ss->ctx, ss->shadow);
    ss->shadow = NULL;
    ss->w = ss->h = 0;
}

pxl_ctx *pxl_vm_session_ctx(const pxl_vm_session *ss) { return ss->ctx; }

void pxl_vm_session_free(pxl_vm_session *ss) {
    if (!ss) return;
    session_drop_image(ss);
    run_free(&ss->r);
    pxl_free(ss->ctx, ss->known.v);
    pxl_free(ss->ctx, ss);
}

/* Buffers for an image of img's size and a scratch of scr_bytes. */
static pxl_status session_buffers(pxl_vm_session *ss, const pxl_image *img, uint64_t scr_bytes, int gather) {
    pxl_ctx *ctx = ss->ctx;
    pxl_status s = PXL_OK;
    if (ss->r.img && (ss->w != img->w || ss->h != img->h)) session_drop_image(ss);
    if (!ss->r.img) {
        size_t bytes = (size_t)img->w * img->h * 4;
        s = pxl_buffer_create(ctx, bytes, &ss->r.img);
        if (s != PXL_OK) return s;
        ss->shadow = ss->one_shot ? NULL : pxl_alloc(ctx, bytes);
        if (!ss->one_shot && !ss->shadow) {
            session_drop_image(ss);
            return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_vm_run: out of memory");
        }
        ss->w = img->w;
        ss->h = img->h;
    }
    if (ss->r.scr && ss->scr_size < scr_bytes) {
        pxl_buffer_free(ss->r.scr);
        ss->r.scr = NULL;
    }
    if (!ss->r.scr) {
        s = pxl_buffer_create(ctx, (size_t)scr_bytes, &ss->r.scr);
        if (s != PXL_OK) return s;
        ss->scr_size = scr_bytes;
    }
    if (gather && !ss->r.st) s = pxl_buffer_create(ctx, 16, &ss->r.st);
    return s;
}

/* Pixels compared with the shadow per block: equal blocks stay on the GPU. */
#define DIFF_BLOCK 1024u

/*
 * Uploads [lo, hi): where the GPU's copy is known (an earlier run of this
 * session uploaded or downloaded it), only the blocks that differ from it.
 */
static pxl_status upload_range(pxl_vm_session *ss, const pxl_image *img, uint64_t lo, uint64_t hi,
                               uint64_t *bytes) {
    pxl_ctx *ctx = ss->ctx;
    range_set todo = {NULL, 0, 0};
    int ok = 1;
    uint64_t at = lo;
    for (size_t i = range_find(&ss->known, lo); i < ss->known.n && ss->known.v[i].lo < hi && ok; i++) {
        uint64_t klo = ss->known.v[i].lo > lo ? ss->known.v[i].lo : lo;
        uint64_t khi = ss->known.v[i].hi < hi ? ss->known.v[i].hi : hi;
        if (klo > at) ok &= range_add(ctx, &todo, at, klo); /* not known: all of it */
        for (uint64_t b = klo; b < khi && ok; b += DIFF_BLOCK) {
            uint64_t e = b + DIFF_BLOCK < khi ? b + DIFF_BLOCK : khi;
            if (memcmp(img->px + b * 4, ss->shadow + b * 4, (size_t)(e - b) * 4) != 0) ok &= range_add(ctx, &todo, b, e);
        }
        if (khi > at) at = khi;
    }
    if (at < hi) ok &= range_add(ctx, &todo, at, hi);
    if (!ok) {
        pxl_free(ctx, todo.v);
        return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_vm_run: out of memory");
    }
    range_merge(&todo, 0);
    pxl_status s = PXL_OK;
    for (size_t i = 0; i < todo.n && s == PXL_OK; i++) {
        size_t off = (size_t)todo.v[i].lo * 4, n = (size_t)(todo.v[i].hi - todo.v[i].lo) * 4;
        s = pxl_buffer_upload(ctx, ss->r.img, off, img->px + off, n);
        if (ss->shadow) memcpy(ss->shadow + off, img->px + off, n);
        *bytes += n;
    }
    pxl_free(ctx, todo.v);
    return s;
}

/* Records that [lo, hi) of the GPU image now equals the shadow. */
static int session_know(pxl_vm_session *ss, uint64_t lo, uint64_t hi) {
    return written_add(ss->ctx, &ss->known, lo, hi);
}

/* Records that [lo, hi) of the GPU image may differ from the shadow. */
static int session_unknow(pxl_vm_session *ss, uint64_t lo, uint64_t hi) {
    range_set *k = &ss->known;
    size_t i = range_find(k, lo + 1); /* the first range with hi > lo */
    while (i < k->n && k->v[i].lo < hi) {
        px_range r = k->v[i];
        if (r.lo < lo && r.hi > hi) { /* a hole in the middle: split */
            if (!range_add(ss->ctx, k, 0, 1)) return 0;
            memmove(k->v + i + 2, k->v + i + 1, (k->n - 2 - i) * sizeof *k->v);
            k->v[i].hi = lo;
            k->v[i + 1].lo = hi;
            k->v[i + 1].hi = r.hi;
            return 1;
        }
        if (r.lo < lo) { /* keep the part below lo */
            k->v[i].hi = lo;
            i++;
        } else if (r.hi > hi) { /* keep the part above hi */
            k->v[i].lo = hi;
            i++;
        } else { /* all of it goes */
            memmove(k->v + i, k->v + i + 1, (k->n - 1 - i) * sizeof *k->v);
            k->n--;
        }
    }
    return 1;
}

static pxl_status exec_session(pxl_vm_session *ss, pxl_image *img, const pxl_vm_program *p,
                               const pxl_vm_options *opts) {
    pxl_ctx *ctx = ss->ctx;
    gpu_run *r = &ss->r;
    r->compile_s = 0;
    r->dispatches = 0;
    memset(r->k, 0, sizeof r->k); /* kernel handles last one run (the pipeline cache may evict between runs) */

    /* the budget, from static costs (the CPU interpreter's rule and message) */
    char budget_msg[256];
    size_t n_run = pxl_vm_budget_fit(p, opts ? opts->max_steps : 0, budget_msg, sizeof budget_msg);
    int has_gather = 0;
    for (size_t i = 0; i < n_run; i++) has_gather |= p->version == 1 && p->insns[i].op == PXL_OP_GATHER;
    pxl_vm_profile *prof = opts ? opts->profile : NULL;
    double t_up = 0, t_exec = 0, t_down = 0, t_end = 0;
    uint64_t up_bytes = 0, down_bytes = 0;
    uint32_t status[4] = {0xffffffffu, 0, 0, 0};
    pxl_status s = PXL_OK;
    if (n_run > 0) {
        uint64_t scr_bytes = 16;
        range_set up = {NULL, 0, 0}, down = {NULL, 0, 0}, wr = {NULL, 0, 0};
        int ok = 1;
        for (size_t i = 0; i < n_run; i++) {
            uint64_t need = scratch_need(r, p->version, &p->insns[i]);
            if (need > scr_bytes) scr_bytes = need;
            ok &= insn_ranges(ctx, p->version, img->w, &p->insns[i], &up, &down, &wr);
        }
        /* downloads span gaps: what lies in a gap and is never written is uploaded too */
        range_merge(&down, RANGE_GAP);
        for (size_t i = 0; i < down.n; i++) ok &= add_unwritten(ctx, &up, &wr, down.v[i].lo, down.v[i].hi);
        range_merge(&up, RANGE_GAP);
        pxl_free(ctx, wr.v);
        if (!ok) s = pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_vm_run: out of memory");
        t_up = pxl_time_now();
        if (s == PXL_OK) s = session_buffers(ss, img, scr_bytes, has_gather);
        for (size_t i = 0; i < up.n && s == PXL_OK; i++) s = upload_range(ss, img, up.v[i].lo, up.v[i].hi, &up_bytes);
        if (s == PXL_OK && has_gather) s = pxl_buffer_upload(ctx, r->st, 0, status, sizeof status);
        t_exec = pxl_time_now();
        if (s == PXL_OK) s = pxl_recorder_begin(ctx, 0, &r->rec);
        for (size_t i = 0; i < n_run && s == PXL_OK; i++) {
            const pxl_vm_insn *in = &p->insns[i];
            if (opts && opts->trace) {
                char text[128];
                pxl_vm_insn_text(p->version, in, text, sizeof text);
                opts->trace(opts->trace_user, in->x, text);
            }
            s = p->version == 1 ? record_v1(r, i, in) : record_v0(r, img->w, in);
        }
        if (r->rec) {
            pxl_recorder *rec = r->rec;
            r->rec = NULL;
            /* when profiling, wait here, so that execute holds the GPU's work and download only the copy */
            if (s == PXL_OK) s = pxl_recorder_submit(rec, prof != NULL, NULL);
            else pxl_recorder_discard(rec);
        }
        /* the written pixels come back, straight into the image (after a GPU
         * error they are unspecified), with the GATHER status, in one round trip */
        t_down = pxl_time_now();
        pxl_download *dl = s == PXL_OK ? pxl_calloc(ctx, down.n + 1, sizeof *dl) : NULL;
        if (s == PXL_OK && !dl) s = pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_vm_run: out of memory");
        if (s == PXL_OK) {
            size_t nd = 0;
            for (size_t i = 0; i < down.n; i++, nd++) {
                dl[nd].buf = r->img;
                dl[nd].offset = (size_t)down.v[i].lo * 4;
                dl[nd].size = (size_t)(down.v[i].hi - down.v[i].lo) * 4;
                dl[nd].dst = img->px + dl[nd].offset;
                down_bytes += dl[nd].size;
            }
            if (has_gather) dl[nd++] = (pxl_download){r->st, 0, sizeof status, status};
            s = pxl_buffer_download_many(ctx, dl, nd);
        }
        pxl_free(ctx, dl);
        t_end = pxl_time_now();
        /* What the GPU image now holds as the shadow says: the uploaded ranges,
         * less what the program wrote. (Written pixels are rarely read by a
         * later run before it writes them itself, so they are not copied into
         * the shadow: that would cost a copy of every output per run.) */
        ok = s == PXL_OK && !ss->one_shot;
        for (size_t i = 0; ok && i < up.n; i++) ok &= session_know(ss, up.v[i].lo, up.v[i].hi);
        for (size_t i = 0; ok && i < down.n; i++) ok &= session_unknow(ss, down.v[i].lo, down.v[i].hi);
        if (!ok) session_forget(ss);
        pxl_free(ctx, up.v);
        pxl_free(ctx, down.v);
        if (prof && s == PXL_OK) {
            /* pipelines are created while recording: their time is compile, not execute */
            prof->compile_s = r->compile_s;
            prof->upload_s = t_exec - t_up;
            prof->execute_s = t_down - t_exec - r->compile_s;
            prof->download_s = t_end - t_down;
            prof->upload_bytes = up_bytes;
            prof->download_bytes = down_bytes;
            prof->dispatches = r->dispatches;
        }
        if (s != PXL_OK) return s;
    }
    if (prof) prof->instructions = n_run;

    if (status[0] != 0xffffffffu) {
        const pxl_vm_insn *in = &p->insns[status[0] >> 16];
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG,
                        "gather at x=%u: index %d at position %u is outside [0, %u) (a row of zeros was written)%s%s",
                        in->x, (int32_t)status[1], status[0] & 0xffffu, in->t_a.rows,
                        budget_msg[0] ? "; then " : "", budget_msg);
    }
    if (budget_msg[0]) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s", budget_msg);
    return PXL_OK;
}

pxl_status pxl_vm_exec_gpu(pxl_ctx *ctx, pxl_image *img, const pxl_vm_program *p, const pxl_vm_options *opts) {
    assert(ctx && img && p);
    if (pxl_ctx_backend(ctx) != PXL_BACKEND_GPU) return pxl_vm_exec_cpu(ctx, img, p, opts);
    pxl_vm_session *ss;
    pxl_status s = pxl_vm_session_create(ctx, &ss);
    if (s != PXL_OK) return s;
    ss->one_shot = 1;
    s = exec_session(ss, img, p, opts);
    pxl_vm_session_free(ss);
    return s;
}

pxl_status pxl_vm_session_exec(pxl_vm_session *ss, pxl_image *img, const pxl_vm_program *p,
                               const pxl_vm_options *opts) {
    assert(ss && img && p);
    return exec_session(ss, img, p, opts);
}
