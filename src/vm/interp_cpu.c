/*
 * The CPU interpreter of pxVM (docs/pxvm-spec.md): runs a decoded program
 * (decode.c has checked everything) on an image in place.
 *
 * - Every input is read before any output is written. v1 outputs never
 *   overlap inputs except in place (ADD, MUL, LUT on a), where each element
 *   reads its own position before writing it. v0 MATMUL copies its operands
 *   first, since its output may overlap them anywhere.
 * - Matrix products run over tiles of 16 output rows x 64 output columns on
 *   the context's thread pool: every output element is one exact integer sum,
 *   so results do not depend on the thread count or the tiling. The operands
 *   are first widened to int16 copies (2 bytes per element of a and b).
 * - Elementwise ops (ADD, MUL, LUT) run in chunks of 64 Ki elements.
 */
#include "vm_internal.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

/* decode.c (to be declared in vm_internal.h) */
void pxl_vm_insn_text(int version, const pxl_vm_insn *in, char *buf, size_t cap);

static inline int32_t ld_i32(const uint8_t *p) {
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

static inline void st_i32(uint8_t *p, int64_t v) {
    uint32_t u = (uint32_t)v;
    p[0] = (uint8_t)u;
    p[1] = (uint8_t)(u >> 8);
    p[2] = (uint8_t)(u >> 16);
    p[3] = (uint8_t)(u >> 24);
}

static inline int64_t ld_el(const uint8_t *d, uint8_t dtype, uint64_t i) {
    return dtype == PXL_VM_INT8 ? (int64_t)(int8_t)d[i] : (int64_t)ld_i32(d + 4 * i);
}

/* v is in the dtype's range (pxl_vm_rq saturates) */
static inline void st_el(uint8_t *d, uint8_t dtype, uint64_t i, int64_t v) {
    if (dtype == PXL_VM_INT8) d[i] = (uint8_t)(int8_t)v;
    else st_i32(d + 4 * i, v);
}

static uint8_t *tdata(pxl_image *img, const pxl_vm_tensor *t) { return img->px + (size_t)t->data_px * 4; }

/* ---- matrix products -------------------------------------------------------------- */

/*
 * Operands are widened to int16 first (v1 int8, v0 uint8), so that the inner
 * loop is a multiply-add of int16 pairs into int32 (pmaddwd), which compilers
 * vectorize. Partial sums over at most MM_KC terms fit int32 (v0: 32768 *
 * 255^2 < 2^31; v1: 32768 * 2^14 = 2^29) and are added up in int64. The
 * tile routine is compiled for the baseline and, on x86, for AVX2 and
 * AVX-512BW, picked at run time; integer results are the same on every path.
 * 2048^3 int8 on a 16-core Xeon (the H100 host): about 24 ms (700 GOP/s).
 */
#define MM_TM 16
#define MM_TN 64
#define MM_KC 32768

typedef struct mm_job {
    const int16_t *a, *b; /* m x k and n x k, row-major */
    size_t m, n, k, col_tiles;
    int v0;               /* min(255, sum) into the R channel of pixels */
    uint8_t *out;         /* v1: tensor data; v0: first output pixel */
    uint8_t dtype, shift;
    int32_t mult;
} mm_job;

#if defined(__GNUC__)
#define MM_INLINE static inline __attribute__((always_inline))
#else
#define MM_INLINE static inline
#endif

/* Row a against 4 consecutive rows of b. */
MM_INLINE void dot4(const int16_t *a, const int16_t *b0, size_t k, int64_t *s) {
    const int16_t *b1 = b0 + k, *b2 = b1 + k, *b3 = b2 + k;
    int64_t t0 = 0, t1 = 0, t2 = 0, t3 = 0;
    for (size_t k0 = 0; k0 < k; k0 += MM_KC) {
        size_t k1 = k - k0 > MM_KC ? k0 + MM_KC : k;
        int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (size_t t = k0; t < k1; t++) {
            int32_t x = a[t];
            s0 += x * b0[t];
            s1 += x * b1[t];
            s2 += x * b2[t];
            s3 += x * b3[t];
        }
        t0 += s0, t1 += s1, t2 += s2, t3 += s3;
    }
    s[0] = t0, s[1] = t1, s[2] = t2, s[3] = t3;
}

/* Rows a0 and a1 against 4 consecutive rows of b: s[0..3] for a0, s[4..7] for a1. */
MM_INLINE void dot24(const int16_t *a0, const int16_t *a1, const int16_t *b0, size_t k, int64_t *s) {
    const int16_t *b1 = b0 + k, *b2 = b1 + k, *b3 = b2 + k;
    int64_t t0 = 0, t1 = 0, t2 = 0, t3 = 0, u0 = 0, u1 = 0, u2 = 0, u3 = 0;
    for (size_t k0 = 0; k0 < k; k0 += MM_KC) {
        size_t k1 = k - k0 > MM_KC ? k0 + MM_KC : k;
        int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0, r0 = 0, r1 = 0, r2 = 0, r3 = 0;
        for (size_t t = k0; t < k1; t++) {
            int32_t x = a0[t], y = a1[t];
            s0 += x * b0[t];
            s1 += x * b1[t];
            s2 += x * b2[t];
            s3 += x * b3[t];
            r0 += y * b0[t];
            r1 += y * b1[t];
            r2 += y * b2[t];
            r3 += y * b3[t];
        }
        t0 += s0, t1 += s1, t2 += s2, t3 += s3, u0 += r0, u1 += r1, u2 += r2, u3 += r3;
    }
    s[0] = t0, s[1] = t1, s[2] = t2, s[3] = t3, s[4] = u0, s[5] = u1, s[6] = u2, s[7] = u3;
}

MM_INLINE int64_t dot1(const int16_t *a, const int16_t *b, size_t k) {
    int64_t t0 = 0;
    for (size_t k0 = 0; k0 < k; k0 += MM_KC) {
        size_t k1 = k - k0 > MM_KC ? k0 + MM_KC : k;
        int32_t s0 = 0;
        for (size_t t = k0; t < k1; t++) s0 += (int32_t)a[t] * b[t];
        t0 += s0;
    }
    return t0;
}

MM_INLINE void mm_store(const mm_job *j, size_t e, int64_t acc) {
    if (j->v0) j->out[e * 4] = (uint8_t)(acc > 255 ? 255 : acc);
    else st_el(j->out, j->dtype, e, pxl_vm_rq(acc, j->mult, j->shift, j->dtype));
}

/* One tile: MM_TM rows of a against MM_TN rows of b (which stay in cache),
 * two rows of a by four rows of b at a time. */
MM_INLINE void mm_tile(const mm_job *j, size_t idx) {
    size_t i0 = idx / j->col_tiles * MM_TM, c0 = idx % j->col_tiles * MM_TN;
    size_t i1 = i0 + MM_TM < j->m ? i0 + MM_TM : j->m;
    size_t c1 = c0 + MM_TN < j->n ? c0 + MM_TN : j->n;
    size_t k = j->k, n = j->n;
    int64_t s[8];
    for (size_t i = i0; i < i1; i += 2) {
        const int16_t *a0 = j->a + i * k;
        size_t c = c0;
        if (i + 1 < i1) {
            const int16_t *a1 = a0 + k;
            for (; c + 4 <= c1; c += 4) {
                dot24(a0, a1, j->b + c * k, k, s);
                for (size_t q = 0; q < 4; q++) {
                    mm_store(j, i * n + c + q, s[q]);
                    mm_store(j, (i + 1) * n + c + q, s[4 + q]);
                }
            }
            for (; c < c1; c++) {
                mm_store(j, i * n + c, dot1(a0, j->b + c * k, k));
                mm_store(j, (i + 1) * n + c, dot1(a1, j->b + c * k, k));
            }
            continue;
        }
        for (; c + 4 <= c1; c += 4) {
            dot4(a0, j->b + c * k, k, s);
            for (size_t q = 0; q < 4; q++) mm_store(j, i * n + c + q, s[q]);
        }
        for (; c < c1; c++) mm_store(j, i * n + c, dot1(a0, j->b + c * k, k));
    }
}

static void mm_task(void *arg, size_t idx) { mm_tile(arg, idx); }

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#define MM_X86 1
__attribute__((target("avx2"))) static void mm_task_avx2(void *arg, size_t idx) { mm_tile(arg, idx); }
__attribute__((target("avx512bw"))) static void mm_task_avx512(void *arg, size_t idx) { mm_tile(arg, idx); }
#endif

static pxl_task_fn mm_kernel(void) {
#ifdef MM_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512bw")) return mm_task_avx512;
    if (__builtin_cpu_supports("avx2")) return mm_task_avx2;
#endif
    return mm_task;
}

static void mm_run(pxl_ctx *ctx, mm_job *j) {
    if (j->m == 0 || j->n == 0) return;
    size_t row_tiles = (j->m + MM_TM - 1) / MM_TM;
    j->col_tiles = (j->n + MM_TN - 1) / MM_TN;
    pxl_parallel_for(ctx, row_tiles * j->col_tiles, mm_kernel(), j);
}

/* Widening copies, in parallel chunks. */
#define WIDEN_CHUNK ((size_t)1 << 18)

typedef struct widen_job {
    const uint8_t *src;
    int16_t *dst;
    size_t n;
} widen_job;

static void widen_s8_task(void *arg, size_t idx) {
    const widen_job *w = arg;
    size_t lo = idx * WIDEN_CHUNK, hi = lo + WIDEN_CHUNK < w->n ? lo + WIDEN_CHUNK : w->n;
    for (size_t e = lo; e < hi; e++) w->dst[e] = (int8_t)w->src[e];
}

static void widen_s8(pxl_ctx *ctx, const uint8_t *src, int16_t *dst, size_t n) {
    widen_job w = {src, dst, n};
    pxl_parallel_for(ctx, (n + WIDEN_CHUNK - 1) / WIDEN_CHUNK, widen_s8_task, &w);
}

/* ---- elementwise (ADD, MUL, LUT) ----------------------------------------------------- */

#define EW_CHUNK ((uint64_t)1 << 16)

typedef struct ew_job {
    const pxl_vm_insn *in;
    uint8_t *o;
    const uint8_t *a, *b;
    uint64_t total, cols;
    int bcast; /* b has one row */
} ew_job;

static void ew_task(void *arg, size_t idx) {
    const ew_job *j = arg;
    const pxl_vm_insn *in = j->in;
    const pxl_vm_tensor *to = &in->t_out;
    uint64_t lo = (uint64_t)idx * EW_CHUNK, hi = lo + EW_CHUNK < j->total ? lo + EW_CHUNK : j->total;
    if (in->op == PXL_OP_LUT) {
        for (uint64_t e = lo; e < hi; e++) j->o[e] = j->b[(int)(int8_t)j->a[e] + 128];
        return;
    }
    uint8_t adt = in->t_a.dtype;
    uint64_t col = lo % j->cols;
    for (uint64_t e = lo; e < hi; e++) {
        int64_t av = ld_el(j->a, adt, e);
        int64_t bv = ld_el(j->b, adt, j->bcast ? col : e);
        int64_t acc;
        if (in->op == PXL_OP_MUL) acc = av * bv;
        else {
            acc = av + bv;
            if (acc > INT32_MAX) acc = INT32_MAX; /* int32 + int32: clamp before rq */
            if (acc < INT32_MIN) acc = INT32_MIN;
        }
        st_el(j->o, to->dtype, e, pxl_vm_rq(acc, to->mult, to->shift, to->dtype));
        if (++col == j->cols) col = 0;
    }
}

/* ---- one instruction ---------------------------------------------------------------- */

typedef struct gather_err {
    int set;
    uint32_t x, pos, rows;
    int32_t index;
} gather_err;

static pxl_status oom(pxl_ctx *ctx, const pxl_vm_insn *in, const char *name) {
    return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_vm_run: out of memory at x=%u (%s)", in->x, name);
}

static pxl_status exec_v1(pxl_ctx *ctx, pxl_image *img, const pxl_vm_insn *in, gather_err *ge) {
    const pxl_vm_tensor *to = &in->t_out, *ta = &in->t_a, *tb = &in->t_b;
    uint8_t *o = tdata(img, to);
    const uint8_t *a = tdata(img, ta), *b = in->op == PXL_OP_ARGMAX || in->op == PXL_OP_COPY ? NULL : tdata(img, tb);
    switch (in->op) {
    case PXL_OP_MATMUL: {
        /* t_a is already the flattened view when flag bit 0 is set */
        size_t m = ta->rows, n = tb->rows, k = ta->cols;
        int16_t *a16 = pxl_alloc(ctx, m * k * sizeof *a16), *b16 = pxl_alloc(ctx, n * k * sizeof *b16);
        if (!a16 || !b16) {
            pxl_free(ctx, a16);
            pxl_free(ctx, b16);
            return oom(ctx, in, "matmul");
        }
        widen_s8(ctx, a, a16, m * k);
        widen_s8(ctx, b, b16, n * k);
        mm_job j = {a16, b16, m, n, k, 0, 0, o, to->dtype, to->shift, to->mult};
        mm_run(ctx, &j);
        pxl_free(ctx, a16);
        pxl_free(ctx, b16);
        break;
    }
    case PXL_OP_ADD:
    case PXL_OP_MUL:
    case PXL_OP_LUT: {
        ew_job j = {in, o, a, b, (uint64_t)to->rows * to->cols, to->cols, tb->rows == 1};
        pxl_parallel_for(ctx, (size_t)((j.total + EW_CHUNK - 1) / EW_CHUNK), ew_task, &j);
        break;
    }
    case PXL_OP_GATHER: {
        size_t row_bytes = (size_t)ta->cols * (ta->dtype == PXL_VM_INT8 ? 1u : 4u);
        for (uint32_t i = 0; i < tb->cols; i++) {
            int32_t idx = ld_i32(b + 4 * (size_t)i);
            uint8_t *dst = o + (size_t)i * row_bytes;
            if (idx >= 0 && (uint32_t)idx < ta->rows) {
                memcpy(dst, a + (size_t)idx * row_bytes, row_bytes);
                continue;
            }
            memset(dst, 0, row_bytes);
            if (!ge->set) *ge = (gather_err){1, in->x, i, ta->rows, idx};
        }
        break;
    }
    case PXL_OP_ARGMAX:
        for (uint32_t i = 0; i < ta->rows; i++) {
            uint64_t base = (uint64_t)i * ta->cols;
            int64_t best = ld_el(a, ta->dtype, base);
            uint32_t arg = 0;
            for (uint32_t c = 1; c < ta->cols; c++) {
                int64_t v = ld_el(a, ta->dtype, base + c);
                if (v > best) best = v, arg = c;
            }
            st_i32(o + 4 * (size_t)i, arg);
        }
        break;
    case PXL_OP_COPY:
        memcpy(o, a, (size_t)ta->n_bytes);
        break;
    default:
        assert(0 && "not a v1 opcode");
    }
    return PXL_OK;
}

static pxl_status exec_v0(pxl_ctx *ctx, pxl_image *img, const pxl_vm_insn *in) {
    uint32_t w = img->w;
    uint8_t *ra = pxl_image_px(img, 0, in->a), *ro = pxl_image_px(img, 0, in->out);
    const uint8_t *rb = pxl_image_px(img, 0, in->b);
    switch (in->op) {
    case PXL_OP_V0_DOT: {
        uint64_t s = 0;
        for (uint32_t x = 0; x < w; x++) {
            const uint8_t *pa = ra + 4 * (size_t)x, *pb = rb + 4 * (size_t)x;
            if (!(pa[0] | pa[1] | pa[2] | pa[3] | pb[0] | pb[1] | pb[2] | pb[3])) break;
            s += (uint64_t)pa[0] * pb[0];
        }
        ro[0] = (uint8_t)(s & 255);
        ro[1] = (uint8_t)((s >> 8) & 255);
        break;
    }
    case PXL_OP_V0_ADD:
        for (size_t x = 0; x < w; x++) {
            unsigned s = (unsigned)ra[4 * x] + rb[4 * x];
            ro[4 * x] = (uint8_t)(s > 255 ? 255 : s);
        }
        break;
    case PXL_OP_V0_RELU:
        for (size_t x = 0; x < w; x++) ro[4 * x] = ra[4 * x] < 128 ? ra[4 * x] : 0;
        break;
    case PXL_OP_V0_MATMUL: {
        const pxl_vm_tensor *ta = &in->t_a, *tb = &in->t_b, *to = &in->t_out;
        size_t m = ta->rows, k = ta->cols, n = tb->cols;
        /* the output may overlap the operands anywhere: copy them first (b transposed) */
        int16_t *a = pxl_alloc(ctx, m * k * sizeof *a), *bt = pxl_alloc(ctx, n * k * sizeof *bt);
        if (!a || !bt) {
            pxl_free(ctx, a);
            pxl_free(ctx, bt);
            return oom(ctx, in, "matmul_r");
        }
        const uint8_t *pa = img->px + (size_t)ta->data_px * 4, *pb = img->px + (size_t)tb->data_px * 4;
        for (size_t e = 0; e < m * k; e++) a[e] = pa[4 * e];
        for (size_t t = 0; t < k; t++)
            for (size_t c = 0; c < n; c++) bt[c * k + t] = pb[4 * (t * n + c)];
        ro[0] = (uint8_t)(n & 255);
        ro[1] = (uint8_t)(n >> 8);
        ro[2] = (uint8_t)(m & 255);
        ro[3] = (uint8_t)(m >> 8);
        mm_job j = {a, bt, m, n, k, 0, 1, img->px + (size_t)to->data_px * 4, 0, 0, 0};
        mm_run(ctx, &j);
        pxl_free(ctx, a);
        pxl_free(ctx, bt);
        break;
    }
    default:
        assert(0 && "not a v0 opcode");
    }
    return PXL_OK;
}

/* ---- programs --------------------------------------------------------------------- */

pxl_status pxl_vm_exec_cpu(pxl_ctx *ctx, pxl_image *img, const pxl_vm_program *p, const pxl_vm_options *opts) {
    assert(ctx && img && p);
    char budget_msg[256];
    size_t n_run = pxl_vm_budget_fit(p, opts ? opts->max_steps : 0, budget_msg, sizeof budget_msg);
    pxl_vm_profile *prof = opts ? opts->profile : NULL;
    double t0 = prof ? pxl_time_now() : 0;
    gather_err ge = {0, 0, 0, 0, 0};
    pxl_status st = PXL_OK;
    for (size_t i = 0; i < n_run && st == PXL_OK; i++) {
        const pxl_vm_insn *in = &p->insns[i];
        if (opts && opts->trace) {
            char text[128];
            pxl_vm_insn_text(p->version, in, text, sizeof text);
            opts->trace(opts->trace_user, in->x, text);
        }
        st = p->version == 1 ? exec_v1(ctx, img, in, &ge) : exec_v0(ctx, img, in);
    }
    if (prof) {
        prof->execute_s = pxl_time_now() - t0;
        prof->instructions = n_run;
    }
    if (st != PXL_OK) return st;
    if (ge.set)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG,
                        "gather at x=%u: index %d at position %u is outside [0, %u) (a row of zeros was written)%s%s",
                        ge.x, ge.index, ge.pos, ge.rows, budget_msg[0] ? "; then " : "", budget_msg);
    if (budget_msg[0]) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s", budget_msg);
    return PXL_OK;
}

/* Decodes, then runs with the CPU interpreter (gpu 0), the GPU one (gpu 1),
 * or the GPU one in a session (ss). */
static pxl_status run(pxl_ctx *ctx, pxl_image *img, const pxl_vm_options *opts, int gpu, pxl_vm_session *ss) {
    if (!ctx) return PXL_ERR_INVALID_ARG;
    if (!img) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_vm_run: image is required");
    pxl_vm_profile *prof = opts ? opts->profile : NULL;
    if (prof) memset(prof, 0, sizeof *prof);
    double t0 = prof ? pxl_time_now() : 0;
    pxl_vm_program p = {0, 0, NULL};
    pxl_status st = pxl_vm_decode(ctx, img, &p);
    if (prof) prof->decode_s = pxl_time_now() - t0;
    if (st != PXL_OK) return st;
    if (!gpu) st = pxl_vm_exec_cpu(ctx, img, &p, opts);
    else if (ss) st = pxl_vm_session_exec(ss, img, &p, opts);
    else st = pxl_vm_exec_gpu(ctx, img, &p, opts);
    pxl_vm_program_free(ctx, &p);
    return st;
}

pxl_status pxl_vm_run(pxl_ctx *ctx, pxl_image *img, const pxl_vm_options *opts) {
    return run(ctx, img, opts, ctx && pxl_ctx_backend(ctx) == PXL_BACKEND_GPU, NULL);
}

pxl_status pxl_vm_run_cpu(pxl_ctx *ctx, pxl_image *img, const pxl_vm_options *opts) {
    return run(ctx, img, opts, 0, NULL);
}

pxl_status pxl_vm_session_run(pxl_vm_session *ss, pxl_image *img, const pxl_vm_options *opts) {
    if (!ss) return PXL_ERR_INVALID_ARG; /* no context to keep a message in */
    pxl_ctx *ctx = pxl_vm_session_ctx(ss);
    return run(ctx, img, opts, pxl_ctx_backend(ctx) == PXL_BACKEND_GPU, ss);
}
