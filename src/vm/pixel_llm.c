/*
 * Pixel-LLM: the image layout, the loader, the int8 reference forward pass
 * and the generator. pixel_llm_train.c makes the weights.
 *
 * Image layout (width LLM_W, every tensor at column 0 of its own rows):
 *   row 0      program: GATHER x <- E[ids]; MATMUL acc1 <- flat(x) . W1 (int32);
 *              ADD pre <- acc1 + b1 (int8, M1/s1); LUT h <- tanh[pre];
 *              MATMUL acc2 <- h . W2 (int32); ADD logits <- acc2 + b2 (int32); HALT
 *   row 1      meta (int32 1 x LLM_META_N)
 *   then       vocab (int32 1 x V, code points), ids (int32 1 x C), E, W1, b1,
 *              lut, W2, b2, and the outputs x, acc1, pre, h, acc2, logits.
 */
#define _GNU_SOURCE
#include "pixel_llm_internal.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef PXL_SOURCE_DEPS_DIR
#define PXL_SOURCE_DEPS_DIR ""
#endif

#define LLM_W 256u
#define LLM_N_INSNS 6u

struct pxl_llm {
    pxl_ctx *ctx;
    pxl_image *img;
    llm_qmodel q;         /* copies of the weights (owned) */
    uint32_t *vocab;      /* V code points */
    int32_t meta[LLM_META_N];
    uint32_t row_ids, row_logits;
    void *scratch;
    pxl_vm_session *session; /* GPU runs: the weights stay on the GPU between tokens */
};

/* ---- small helpers ---------------------------------------------------------------- */

static void put_u32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static uint32_t get_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int32_t get_i32(const uint8_t *p) {
    uint32_t u = get_u32(p);
    return u <= (uint32_t)INT32_MAX ? (int32_t)u : (int32_t)(u - 0x80000000u) + INT32_MIN;
}

static uint32_t i32_bits(int32_t v) {
    return v >= 0 ? (uint32_t)v : (uint32_t)(v - INT32_MIN) + 0x80000000u;
}

void llm_fixed_point(double r, int max_shift, int32_t *mant, uint8_t *shift) {
    int s = 0;
    if (!(r > 0)) {
        *mant = 0;
        *shift = 0;
        return;
    }
    while (s < max_shift && r * ldexp(1.0, s + 1) < 2147483647.0) s++;
    double m = floor(r * ldexp(1.0, s) + 0.5);
    if (m > 2147483647.0) m = 2147483647.0;
    *mant = (int32_t)m;
    *shift = (uint8_t)s;
}

/* ---- reference forward ------------------------------------------------------------ */

size_t llm_ref_scratch_bytes(const llm_qmodel *q) {
    return (size_t)q->C * q->D + 2u * q->H + 16;
}

void llm_ref_forward(const llm_qmodel *q, const uint32_t *ids, int32_t *logits, void *scratch) {
    const uint32_t K = q->C * q->D;
    int8_t *x = scratch, *h = x + K;
    for (uint32_t c = 0; c < q->C; c++) {
        if (ids[c] < q->V) memcpy(x + (size_t)c * q->D, q->E + (size_t)ids[c] * q->D, q->D);
        else memset(x + (size_t)c * q->D, 0, q->D);
    }
    for (uint32_t j = 0; j < q->H; j++) {
        const int8_t *w = q->W1 + (size_t)j * K;
        int32_t acc = 0;
        for (uint32_t k = 0; k < K; k++) acc += (int32_t)x[k] * (int32_t)w[k];
        /* MATMUL into int32 (M = 1, s = 0), then ADD (int32 clamp) into int8 (M1, s1) */
        int64_t a1 = pxl_vm_rq(acc, 1, 0, PXL_VM_INT32);
        int64_t sum = a1 + (int64_t)q->b1[j];
        if (sum > INT32_MAX) sum = INT32_MAX;
        if (sum < INT32_MIN) sum = INT32_MIN;
        int64_t pre = pxl_vm_rq(sum, q->M1, q->s1, PXL_VM_INT8);
        h[j] = q->lut[pre + 128];
    }
    for (uint32_t v = 0; v < q->V; v++) {
        const int8_t *w = q->W2 + (size_t)v * q->H;
        int32_t acc = 0;
        for (uint32_t j = 0; j < q->H; j++) acc += (int32_t)h[j] * (int32_t)w[j];
        int64_t a2 = pxl_vm_rq(acc, 1, 0, PXL_VM_INT32);
        int64_t sum = a2 + (int64_t)q->b2[v];
        if (sum > INT32_MAX) sum = INT32_MAX;
        if (sum < INT32_MIN) sum = INT32_MIN;
        logits[v] = (int32_t)pxl_vm_rq(sum, 1, 0, PXL_VM_INT32);
    }
}

/* ---- image writer ------------------------------------------------------------------ */

typedef struct {
    uint32_t rows, cols;
    uint8_t dtype, shift;
    int32_t mult;
    const void *data; /* NULL: zeros */
    uint32_t row;     /* assigned */
} tdesc;

static size_t t_bytes(const tdesc *t) {
    return (size_t)t->rows * t->cols * (t->dtype == PXL_VM_INT32 ? 4u : 1u);
}

static uint32_t t_nrows(const tdesc *t) {
    size_t px = PXL_VM_HEADER_PIXELS + (t_bytes(t) + 3) / 4;
    return (uint32_t)((px + LLM_W - 1) / LLM_W);
}

static void t_write(pxl_image *img, const tdesc *t) {
    uint8_t *p = pxl_image_px(img, 0, t->row);
    p[0] = PXL_VM_TENSOR_MAGIC;
    p[1] = t->dtype;
    p[2] = t->shift;
    p[3] = 0;
    p[4] = (uint8_t)t->cols;
    p[5] = (uint8_t)(t->cols >> 8);
    p[6] = (uint8_t)t->rows;
    p[7] = (uint8_t)(t->rows >> 8);
    put_u32(p + 8, i32_bits(t->mult));
    if (!t->data) return;
    uint8_t *d = p + 4 * PXL_VM_HEADER_PIXELS;
    if (t->dtype == PXL_VM_INT32) {
        const int32_t *v = t->data;
        for (size_t i = 0; i < (size_t)t->rows * t->cols; i++) put_u32(d + 4 * i, i32_bits(v[i]));
    } else {
        memcpy(d, t->data, t_bytes(t));
    }
}

static void put_insn(pxl_image *img, uint32_t idx, uint8_t op, uint32_t out, uint8_t imm, uint32_t a,
                     uint32_t b) {
    uint8_t *p = pxl_image_px(img, 1 + 2 * idx, 0);
    p[0] = op;
    p[1] = (uint8_t)out;
    p[2] = (uint8_t)(out >> 8);
    p[3] = imm;
    p[4] = (uint8_t)a;
    p[5] = (uint8_t)(a >> 8);
    p[6] = (uint8_t)b;
    p[7] = (uint8_t)(b >> 8);
}

enum { T_META, T_VOCAB, T_IDS, T_E, T_W1, T_B1, T_LUT, T_W2, T_B2, T_X, T_ACC1, T_PRE, T_H, T_ACC2,
       T_LOGITS, T_N };

pxl_status llm_build_image(pxl_ctx *ctx, const llm_qmodel *q, const uint32_t *vocab,
                           const int32_t meta_extra[LLM_META_N], pxl_image **out) {
    const uint32_t V = q->V, C = q->C, D = q->D, H = q->H, K = C * D;
    if (V < 2 || V > LLM_MAX_VOCAB || C < 1 || D < 1 || H < 1 || K > 65535 || H > 65535)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pixel-llm: shape V=%u C=%u D=%u H=%u out of range",
                        V, C, D, H);
    int32_t meta[LLM_META_N];
    memcpy(meta, meta_extra, sizeof meta);
    int32_t vocab_i[LLM_MAX_VOCAB], ids[65536 / 64];
    for (uint32_t i = 0; i < V; i++) vocab_i[i] = (int32_t)vocab[i];
    if (C > sizeof ids / sizeof ids[0])
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pixel-llm: context %u too long", C);
    for (uint32_t i = 0; i < C; i++) ids[i] = meta[LLM_M_PAD_ID];
    tdesc t[T_N] = {
        [T_META] = {1, LLM_META_N, PXL_VM_INT32, 0, 1, meta, 0},
        [T_VOCAB] = {1, V, PXL_VM_INT32, 0, 1, vocab_i, 0},
        [T_IDS] = {1, C, PXL_VM_INT32, 0, 1, ids, 0},
        [T_E] = {V, D, PXL_VM_INT8, 0, 1, q->E, 0},
        [T_W1] = {H, K, PXL_VM_INT8, 0, 1, q->W1, 0},
        [T_B1] = {1, H, PXL_VM_INT32, 0, 1, q->b1, 0},
        [T_LUT] = {1, 256, PXL_VM_INT8, 0, 1, q->lut, 0},
        [T_W2] = {V, H, PXL_VM_INT8, 0, 1, q->W2, 0},
        [T_B2] = {1, V, PXL_VM_INT32, 0, 1, q->b2, 0},
        [T_X] = {C, D, PXL_VM_INT8, 0, 1, NULL, 0},
        [T_ACC1] = {1, H, PXL_VM_INT32, 0, 1, NULL, 0},
        [T_PRE] = {1, H, PXL_VM_INT8, q->s1, q->M1, NULL, 0},
        [T_H] = {1, H, PXL_VM_INT8, 0, 1, NULL, 0},
        [T_ACC2] = {1, V, PXL_VM_INT32, 0, 1, NULL, 0},
        [T_LOGITS] = {1, V, PXL_VM_INT32, 0, 1, NULL, 0},
    };
    uint32_t row = 1;
    for (int i = 0; i < T_N; i++) {
        t[i].row = row;
        row += t_nrows(&t[i]);
    }
    if (row > 65535)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pixel-llm: model needs %u rows (max 65535)", row);
    meta[LLM_M_MAGIC] = LLM_META_MAGIC;
    meta[LLM_M_VERSION] = LLM_FORMAT_VERSION;
    meta[LLM_M_VOCAB] = (int32_t)V;
    meta[LLM_M_CONTEXT] = (int32_t)C;
    meta[LLM_M_EMBED] = (int32_t)D;
    meta[LLM_M_HIDDEN] = (int32_t)H;
    meta[LLM_M_SCALE_MANT] = q->scale_mant;
    meta[LLM_M_SCALE_SHIFT] = q->scale_shift;
    meta[LLM_M_ROW_IDS] = (int32_t)t[T_IDS].row;
    meta[LLM_M_ROW_LOGITS] = (int32_t)t[T_LOGITS].row;
    meta[LLM_M_ROW_VOCAB] = (int32_t)t[T_VOCAB].row;
    pxl_image *img;
    pxl_status s = pxl_image_create(ctx, LLM_W, row, &img);
    if (s != PXL_OK) return s;
    for (int i = 0; i < T_N; i++) t_write(img, &t[i]);
    uint8_t *p0 = pxl_image_px(img, 0, 0);
    p0[0] = PXL_VM_MAGIC_R;
    p0[1] = PXL_VM_MAGIC_G;
    p0[2] = PXL_VM_MAGIC_B;
    p0[3] = PXL_VM_MAGIC_VERSION;
    put_insn(img, 0, PXL_OP_GATHER, t[T_X].row, 0, t[T_E].row, t[T_IDS].row);
    put_insn(img, 1, PXL_OP_MATMUL, t[T_ACC1].row, PXL_VM_FLAG_FLATTEN_A, t[T_X].row, t[T_W1].row);
    put_insn(img, 2, PXL_OP_ADD, t[T_PRE].row, 0, t[T_ACC1].row, t[T_B1].row);
    put_insn(img, 3, PXL_OP_LUT, t[T_H].row, 0, t[T_PRE].row, t[T_LUT].row);
    put_insn(img, 4, PXL_OP_MATMUL, t[T_ACC2].row, 0, t[T_H].row, t[T_W2].row);
    put_insn(img, 5, PXL_OP_ADD, t[T_LOGITS].row, 0, t[T_ACC2].row, t[T_B2].row);
    /* the pixel after the last instruction is zero: HALT */
    *out = img;
    return PXL_OK;
}

/* ---- loader ------------------------------------------------------------------------ */

typedef struct {
    uint32_t row, rows, cols;
    uint8_t dtype, shift;
    int32_t mult;
    const uint8_t *data;
} tview;

static pxl_status view(pxl_ctx *ctx, const pxl_image *img, uint32_t row, uint8_t dtype, uint32_t rows,
                       uint32_t cols, tview *t) {
    if (row == 0 || row >= img->h)
        return pxl_fail(ctx, PXL_ERR_FORMAT, "pixel-llm: tensor row %u outside the image", row);
    const uint8_t *p = pxl_image_px(img, 0, row);
    t->row = row;
    t->dtype = p[1];
    t->shift = p[2];
    t->cols = (uint32_t)p[4] | (uint32_t)p[5] << 8;
    t->rows = (uint32_t)p[6] | (uint32_t)p[7] << 8;
    t->mult = get_i32(p + 8);
    t->data = p + 4 * PXL_VM_HEADER_PIXELS;
    if (p[0] != PXL_VM_TENSOR_MAGIC || t->dtype != dtype || (rows && t->rows != rows) ||
        (cols && t->cols != cols))
        return pxl_fail(ctx, PXL_ERR_FORMAT,
                        "pixel-llm: tensor at (0, %u) is not the expected %s %u x %u tensor", row,
                        dtype == PXL_VM_INT8 ? "int8" : "int32", rows, cols);
    size_t bytes = (size_t)t->rows * t->cols * (dtype == PXL_VM_INT32 ? 4u : 1u);
    size_t end = ((size_t)row * img->w + PXL_VM_HEADER_PIXELS) * 4 + bytes;
    if (end > (size_t)img->w * img->h * 4)
        return pxl_fail(ctx, PXL_ERR_FORMAT, "pixel-llm: tensor at (0, %u) runs past the image", row);
    return PXL_OK;
}

static void *dup_bytes(pxl_ctx *ctx, const void *src, size_t n) {
    void *p = pxl_alloc(ctx, n ? n : 1);
    if (p) memcpy(p, src, n);
    return p;
}

static int32_t *dup_i32(pxl_ctx *ctx, const uint8_t *src, size_t n) {
    size_t bytes;
    if (!pxl_mul_size(n, 4, &bytes)) return NULL;
    int32_t *p = pxl_alloc(ctx, bytes ? bytes : 1);
    if (p)
        for (size_t i = 0; i < n; i++) p[i] = get_i32(src + 4 * i);
    return p;
}

void pxl_llm_free(pxl_llm *m) {
    if (!m) return;
    pxl_ctx *ctx = m->ctx;
    pxl_vm_session_free(m->session);
    pxl_image_free(m->img);
    pxl_free(ctx, m->q.E);
    pxl_free(ctx, m->q.W1);
    pxl_free(ctx, m->q.b1);
    pxl_free(ctx, m->q.W2);
    pxl_free(ctx, m->q.b2);
    pxl_free(ctx, m->vocab);
    pxl_free(ctx, m->scratch);
    pxl_free(ctx, m);
}

pxl_status pxl_llm_open(pxl_ctx *ctx, pxl_image *img, pxl_llm **out) {
    pxl_llm *m = pxl_calloc(ctx, 1, sizeof *m);
    if (!m) {
        pxl_image_free(img);
        return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pixel-llm: out of memory");
    }
    m->ctx = ctx;
    m->img = img;
    pxl_status s = pxl_vm_validate(ctx, img);
    if (s != PXL_OK) goto fail;
    s = PXL_ERR_FORMAT;
    if (pxl_vm_version(img) != 1 || img->h < 2) {
        pxl_fail(ctx, s, "pixel-llm: not a v1 pxVM image");
        goto fail;
    }
    tview tm;
    if ((s = view(ctx, img, 1, PXL_VM_INT32, 1, LLM_META_N, &tm)) != PXL_OK) goto fail;
    for (uint32_t i = 0; i < LLM_META_N; i++) m->meta[i] = get_i32(tm.data + 4 * i);
    s = PXL_ERR_FORMAT;
    if (m->meta[LLM_M_MAGIC] != LLM_META_MAGIC || m->meta[LLM_M_VERSION] != LLM_FORMAT_VERSION) {
        pxl_fail(ctx, s, "pixel-llm: row 1 holds no Pixel-LLM metadata (magic or version)");
        goto fail;
    }
    int32_t V = m->meta[LLM_M_VOCAB], C = m->meta[LLM_M_CONTEXT], D = m->meta[LLM_M_EMBED],
            H = m->meta[LLM_M_HIDDEN];
    if (V < 2 || V > (int32_t)LLM_MAX_VOCAB || C < 1 || C > 1024 || D < 1 || D > 1024 || H < 1 ||
        H > 65535 || C * D > 65535 || m->meta[LLM_M_PAD_ID] < 0 || m->meta[LLM_M_PAD_ID] >= V ||
        m->meta[LLM_M_UNK_ID] < 0 || m->meta[LLM_M_UNK_ID] >= V || m->meta[LLM_M_SCALE_MANT] <= 0 ||
        m->meta[LLM_M_SCALE_SHIFT] < 0 || m->meta[LLM_M_SCALE_SHIFT] > 62) {
        pxl_fail(ctx, s, "pixel-llm: metadata out of range (V=%d C=%d D=%d H=%d)", V, C, D, H);
        goto fail;
    }
    llm_qmodel *q = &m->q;
    q->V = (uint32_t)V, q->C = (uint32_t)C, q->D = (uint32_t)D, q->H = (uint32_t)H;
    q->scale_mant = m->meta[LLM_M_SCALE_MANT];
    q->scale_shift = m->meta[LLM_M_SCALE_SHIFT];
    /* the program must be exactly the Pixel-LLM forward pass */
    static const uint8_t ops[LLM_N_INSNS] = {PXL_OP_GATHER, PXL_OP_MATMUL, PXL_OP_ADD,
                                              PXL_OP_LUT,    PXL_OP_MATMUL, PXL_OP_ADD};
    uint32_t r_out[LLM_N_INSNS], r_a[LLM_N_INSNS], r_b[LLM_N_INSNS];
    if (img->w < 1 + 2 * (LLM_N_INSNS + 1)) {
        pxl_fail(ctx, s, "pixel-llm: image too narrow for the program");
        goto fail;
    }
    for (uint32_t i = 0; i < LLM_N_INSNS; i++) {
        const uint8_t *p = pxl_image_px(img, 1 + 2 * i, 0);
        r_out[i] = (uint32_t)p[1] | (uint32_t)p[2] << 8;
        r_a[i] = (uint32_t)p[4] | (uint32_t)p[5] << 8;
        r_b[i] = (uint32_t)p[6] | (uint32_t)p[7] << 8;
        if (p[0] != ops[i]) {
            pxl_fail(ctx, s, "pixel-llm: instruction at x=%u is not the expected opcode %u", 1 + 2 * i,
                     ops[i]);
            goto fail;
        }
    }
    if (pxl_image_px(img, 1 + 2 * LLM_N_INSNS, 0)[0] != PXL_OP_HALT || r_a[1] != r_out[0] ||
        r_a[2] != r_out[1] || r_a[3] != r_out[2] || r_a[4] != r_out[3] || r_a[5] != r_out[4] ||
        pxl_image_px(img, 1, 0)[3] != 0 || pxl_image_px(img, 3, 0)[3] != PXL_VM_FLAG_FLATTEN_A ||
        (uint32_t)m->meta[LLM_M_ROW_IDS] != r_b[0] || (uint32_t)m->meta[LLM_M_ROW_LOGITS] != r_out[5]) {
        pxl_fail(ctx, s, "pixel-llm: the program is not the Pixel-LLM forward pass");
        goto fail;
    }
    uint32_t K = q->C * q->D;
    tview tv, tids, tE, tW1, tb1, tpre, tlut, tW2, tb2, tacc1, tacc2, tlog;
    if ((s = view(ctx, img, (uint32_t)m->meta[LLM_M_ROW_VOCAB], PXL_VM_INT32, 1, q->V, &tv)) ||
        (s = view(ctx, img, r_b[0], PXL_VM_INT32, 1, q->C, &tids)) ||
        (s = view(ctx, img, r_a[0], PXL_VM_INT8, q->V, q->D, &tE)) ||
        (s = view(ctx, img, r_b[1], PXL_VM_INT8, q->H, K, &tW1)) ||
        (s = view(ctx, img, r_out[1], PXL_VM_INT32, 1, q->H, &tacc1)) ||
        (s = view(ctx, img, r_b[2], PXL_VM_INT32, 1, q->H, &tb1)) ||
        (s = view(ctx, img, r_out[2], PXL_VM_INT8, 1, q->H, &tpre)) ||
        (s = view(ctx, img, r_b[3], PXL_VM_INT8, 1, 256, &tlut)) ||
        (s = view(ctx, img, r_b[4], PXL_VM_INT8, q->V, q->H, &tW2)) ||
        (s = view(ctx, img, r_out[4], PXL_VM_INT32, 1, q->V, &tacc2)) ||
        (s = view(ctx, img, r_b[5], PXL_VM_INT32, 1, q->V, &tb2)) ||
        (s = view(ctx, img, r_out[5], PXL_VM_INT32, 1, q->V, &tlog)))
        goto fail;
    s = PXL_ERR_FORMAT;
    if (tacc1.mult != 1 || tacc1.shift != 0 || tacc2.mult != 1 || tacc2.shift != 0 || tlog.mult != 1 ||
        tlog.shift != 0) {
        pxl_fail(ctx, s, "pixel-llm: accumulator tensors must have multiplier 1, shift 0");
        goto fail;
    }
    q->M1 = tpre.mult;
    q->s1 = tpre.shift;
    memcpy(q->lut, tlut.data, 256);
    s = PXL_ERR_OUT_OF_MEMORY;
    q->E = dup_bytes(ctx, tE.data, (size_t)q->V * q->D);
    q->W1 = dup_bytes(ctx, tW1.data, (size_t)q->H * K);
    q->W2 = dup_bytes(ctx, tW2.data, (size_t)q->V * q->H);
    q->b1 = dup_i32(ctx, tb1.data, q->H);
    q->b2 = dup_i32(ctx, tb2.data, q->V);
    m->vocab = (uint32_t *)dup_i32(ctx, tv.data, q->V);
    m->scratch = pxl_alloc(ctx, llm_ref_scratch_bytes(q));
    if (!q->E || !q->W1 || !q->W2 || !q->b1 || !q->b2 || !m->vocab || !m->scratch) {
        pxl_fail(ctx, s, "pixel-llm: out of memory");
        goto fail;
    }
    m->row_ids = r_b[0];
    m->row_logits = r_out[5];
    *out = m;
    return PXL_OK;
fail:
    pxl_llm_free(m);
    return s;
}

pxl_status pxl_llm_load(pxl_ctx *ctx, const char *path, pxl_llm **out) {
    pxl_image *img;
    pxl_status s = pxl_pxi_load(ctx, path, &img);
    if (s != PXL_OK) return s;
    return pxl_llm_open(ctx, img, out);
}

static int file_exists(const char *p) { return access(p, R_OK) == 0; }

pxl_status pxl_llm_default_path(pxl_ctx *ctx, char *buf, size_t cap) {
    char cand[5][PATH_MAX];
    int n = 0;
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) *slash = '\0';
        int w = snprintf(cand[n], PATH_MAX, "%s/../models/pixel-llm.pxi", exe);
        if (w > 0 && w < PATH_MAX) n++;
        w = snprintf(cand[n], PATH_MAX, "%s/../../models/pixel-llm.pxi", exe);
        if (w > 0 && w < PATH_MAX) n++;
        w = snprintf(cand[n], PATH_MAX, "%s/../share/pxl/models/pixel-llm.pxi", exe); /* installed */
        if (w > 0 && w < PATH_MAX) n++;
    }
    if (PXL_SOURCE_DEPS_DIR[0]) {
        int w = snprintf(cand[n], PATH_MAX, "%s/../models/pixel-llm.pxi", PXL_SOURCE_DEPS_DIR);
        if (w > 0 && w < PATH_MAX) n++;
    }
    for (int i = 0; i < n; i++) {
        if (file_exists(cand[i])) {
            char *r = realpath(cand[i], NULL);
            const char *use = r ? r : cand[i];
            if (strlen(use) + 1 > cap) {
                free(r);
                return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pixel-llm: model path too long");
            }
            memcpy(buf, use, strlen(use) + 1);
            free(r);
            return PXL_OK;
        }
    }
    pxl_fail(ctx, PXL_ERR_IO, "pixel-llm: no models/pixel-llm.pxi found (tried");
    for (int i = 0; i < n; i++) pxl_append_error(ctx, " %s%s", cand[i], i + 1 < n ? "," : ")");
    if (n == 0) pxl_append_error(ctx, " nothing)");
    return PXL_ERR_IO;
}

void pxl_llm_get_info(const pxl_llm *m, pxl_llm_info *info) {
    memset(info, 0, sizeof *info);
    info->vocab = m->q.V;
    info->context = m->q.C;
    info->embed = m->q.D;
    info->hidden = m->q.H;
    info->logit_scale = ldexp((double)m->q.scale_mant, -m->q.scale_shift);
    info->bpc_int8 = m->meta[LLM_M_BPC_INT8_U] * 1e-6;
    info->bpc_float = m->meta[LLM_M_BPC_FLOAT_U] * 1e-6;
    info->bpc_trigram = m->meta[LLM_M_BPC_TRIGRAM_U] * 1e-6;
    info->image_w = m->img->w;
    info->image_h = m->img->h;
}

const pxl_image *pxl_llm_image(const pxl_llm *m) { return m->img; }

uint32_t pxl_llm_encode(const pxl_llm *m, uint32_t cp) {
    for (uint32_t i = 0; i < m->q.V; i++)
        if (i != (uint32_t)m->meta[LLM_M_UNK_ID] && m->vocab[i] == cp) return i;
    return (uint32_t)m->meta[LLM_M_UNK_ID];
}

uint32_t pxl_llm_decode(const pxl_llm *m, uint32_t id) {
    return id < m->q.V ? m->vocab[id] : 0xFFFDu;
}

static pxl_status check_ids(pxl_llm *m, const uint32_t *ids) {
    for (uint32_t i = 0; i < m->q.C; i++)
        if (ids[i] >= m->q.V)
            return pxl_fail(m->ctx, PXL_ERR_INVALID_ARG, "pixel-llm: id %u at context position %u >= vocab %u",
                            ids[i], i, m->q.V);
    return PXL_OK;
}

pxl_status pxl_llm_logits_ref(pxl_llm *m, const uint32_t *ids, int32_t *logits) {
    pxl_status s = check_ids(m, ids);
    if (s != PXL_OK) return s;
    llm_ref_forward(&m->q, ids, logits, m->scratch);
    return PXL_OK;
}

pxl_status pxl_llm_logits_vm(pxl_llm *m, const uint32_t *ids, int cpu, int32_t *logits) {
    pxl_status s = check_ids(m, ids);
    if (s != PXL_OK) return s;
    uint8_t *d = pxl_image_px(m->img, PXL_VM_HEADER_PIXELS, m->row_ids);
    for (uint32_t i = 0; i < m->q.C; i++) put_u32(d + 4 * i, ids[i]);
    if (!cpu && !m->session && pxl_ctx_backend(m->ctx) == PXL_BACKEND_GPU) {
        s = pxl_vm_session_create(m->ctx, &m->session);
        if (s != PXL_OK) return s;
    }
    if (cpu || !m->session) s = cpu ? pxl_vm_run_cpu(m->ctx, m->img, NULL) : pxl_vm_run(m->ctx, m->img, NULL);
    else s = pxl_vm_session_run(m->session, m->img, NULL);
    if (s != PXL_OK) return s;
    const uint8_t *l = pxl_image_px(m->img, PXL_VM_HEADER_PIXELS, m->row_logits);
    for (uint32_t v = 0; v < m->q.V; v++) logits[v] = get_i32(l + 4 * v);
    return PXL_OK;
}

/* ---- generation -------------------------------------------------------------------- */

pxl_llm_gen_options pxl_llm_gen_options_default(void) {
    pxl_llm_gen_options o;
    memset(&o, 0, sizeof o);
    o.tokens = 300;
    o.temperature = 0.8;
    o.seed = 1;
    return o;
}

typedef struct {
    uint64_t s[4];
} rng;

static void rng_seed(rng *r, uint64_t seed) {
    for (int i = 0; i < 4; i++) r->s[i] = pxl_splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(rng *r) {
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}


/* Picks the next id from int32 logits: greedy, or softmax(logit * scale / T) over the top k. */
static uint32_t sample(const int32_t *logits, uint32_t V, double scale, double temp, uint32_t top_k,
                       rng *r, double *p) {
    uint32_t best = 0;
    for (uint32_t v = 1; v < V; v++)
        if (logits[v] > logits[best]) best = v;
    if (temp <= 0) return best;
    /* keep[v]: v is among the top k (ties broken toward the lower id) */
    for (uint32_t v = 0; v < V; v++) {
        uint32_t above = 0;
        if (top_k && top_k < V)
            for (uint32_t u = 0; u < V; u++)
                if (logits[u] > logits[v] || (logits[u] == logits[v] && u < v)) above++;
        p[v] = (!top_k || top_k >= V || above < top_k)
                   ? exp((double)(logits[v] - logits[best]) * scale / temp)
                   : 0.0;
    }
    double total = 0;
    for (uint32_t v = 0; v < V; v++) total += p[v];
    double u = (double)(rng_next(r) >> 11) * 0x1.0p-53 * total;
    double acc = 0;
    uint32_t last = best;
    for (uint32_t v = 0; v < V; v++) {
        if (p[v] <= 0) continue;
        acc += p[v];
        last = v;
        if (u < acc) return v;
    }
    return last;
}

pxl_status pxl_llm_generate(pxl_llm *m, const pxl_llm_gen_options *o, pxl_llm_gen_result *res) {
    pxl_ctx *ctx = m->ctx;
    memset(res, 0, sizeof *res);
    const uint32_t V = m->q.V, C = m->q.C;
    if (!(o->temperature >= 0) || o->temperature > 100)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pixel-llm: temperature %g outside [0, 100]",
                        o->temperature);
    size_t cap;
    if (!pxl_mul_size(o->tokens, 4, &cap) || !pxl_add_size(cap, 1, &cap))
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pixel-llm: too many tokens");
    char *text = pxl_alloc(ctx, cap);
    uint32_t *ids = pxl_calloc(ctx, C, sizeof *ids);
    int32_t *logits = pxl_calloc(ctx, V, sizeof *logits);
    double *p = pxl_calloc(ctx, V, sizeof *p);
    if (!text || !ids || !logits || !p) {
        pxl_free(ctx, text), pxl_free(ctx, ids), pxl_free(ctx, logits), pxl_free(ctx, p);
        return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pixel-llm: out of memory");
    }
    for (uint32_t i = 0; i < C; i++) ids[i] = (uint32_t)m->meta[LLM_M_PAD_ID];
    /* Without a prompt the context starts as after the end of a verse (the
     * corpus has one verse per line); a context of padding alone was never
     * seen in training and gave a few garbage characters first. Not printed. */
    const char *prime = o->prompt && o->prompt[0] ? o->prompt : "of the LORD.\n";
    {
        const unsigned char *s = (const unsigned char *)prime;
        size_t n = strlen(prime), i = 0;
        while (i < n) {
            uint32_t id = pxl_llm_encode(m, pxl_utf8_decode(s, n, &i));
            memmove(ids, ids + 1, (C - 1) * sizeof *ids);
            ids[C - 1] = id;
        }
    }
    rng r;
    rng_seed(&r, o->seed);
    double scale = ldexp((double)m->q.scale_mant, -m->q.scale_shift);
    size_t len = 0;
    pxl_status s = PXL_OK;
    double t0 = pxl_time_now();
    uint32_t t;
    for (t = 0; t < o->tokens; t++) {
        s = o->reference ? pxl_llm_logits_ref(m, ids, logits) : pxl_llm_logits_vm(m, ids, 0, logits);
        if (s != PXL_OK) break;
        uint32_t id = sample(logits, V, scale, o->temperature, o->top_k, &r, p);
        size_t k = pxl_utf8_encode(pxl_llm_decode(m, id), text + len);
        if (o->on_token) o->on_token(o->user, text + len, k);
        len += k;
        memmove(ids, ids + 1, (C - 1) * sizeof *ids);
        ids[C - 1] = id;
    }
    double secs = pxl_time_now() - t0;
    text[len] = '\0';
    pxl_free(ctx, ids), pxl_free(ctx, logits), pxl_free(ctx, p);
    if (s != PXL_OK) {
        pxl_free(ctx, text);
        return s;
    }
    res->text = text;
    res->len = len;
    res->tokens = t;
    res->seconds = secs;
    res->tokens_per_s = secs > 0 ? t / secs : 0;
    res->backend = o->reference ? PXL_BACKEND_CPU : pxl_ctx_backend(ctx);
    return PXL_OK;
}
