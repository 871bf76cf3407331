/*
 * Pixel-LLM: the image layout, the loader and the int8 reference forward
 * pass. pixel_llm_train.c makes the weights; pixel_llm_generate.c samples.
 *
 * Image layout (width PLLM_W, every tensor at column 0 of its own rows):
 *   row 0      program: GATHER x <- E[ids]; MATMUL acc1 <- flat(x) . W1 (int32);
 *              ADD pre <- acc1 + b1 (int8, M1/s1); LUT h <- tanh[pre];
 *              MATMUL acc2 <- h . W2 (int32); ADD logits <- acc2 + b2 (int32); HALT
 *   row 1      meta (int32 1 x PLLM_META_N)
 *   then       vocab (int32 1 x V, code points), ids (int32 1 x C), E, W1, b1,
 *              lut, W2, b2, and the outputs x, acc1, pre, h, acc2, logits.
 */
#define _GNU_SOURCE
#include "pllm_internal.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PLLM_W 256u
#define PLLM_N_INSNS 6u


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

void pllm_fixed_point(double r, int max_shift, int32_t *mant, uint8_t *shift) {
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

size_t pllm_ref_scratch_bytes(const pllm_qmodel *q) {
    return (size_t)q->C * q->D + 2u * q->H + 16;
}

void pllm_ref_forward(const pllm_qmodel *q, const uint32_t *ids, int32_t *logits, void *scratch) {
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
    return (uint32_t)((px + PLLM_W - 1) / PLLM_W);
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

pxl_status pllm_build_image(pxl_ctx *ctx, const pllm_qmodel *q, const uint32_t *vocab,
                           const int32_t meta_extra[PLLM_META_N], pxl_image **out) {
    const uint32_t V = q->V, C = q->C, D = q->D, H = q->H, K = C * D;
    if (V < 2 || V > PLLM_MAX_VOCAB || C < 1 || D < 1 || H < 1 || K > 65535 || H > 65535)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pixel-llm: shape V=%u C=%u D=%u H=%u out of range",
                        V, C, D, H);
    int32_t meta[PLLM_META_N];
    memcpy(meta, meta_extra, sizeof meta);
    int32_t vocab_i[PLLM_MAX_VOCAB], ids[65536 / 64];
    for (uint32_t i = 0; i < V; i++) vocab_i[i] = (int32_t)vocab[i];
    if (C > sizeof ids / sizeof ids[0])
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pixel-llm: context %u too long", C);
    for (uint32_t i = 0; i < C; i++) ids[i] = meta[PLLM_M_PAD_ID];
    tdesc t[T_N] = {
        [T_META] = {1, PLLM_META_N, PXL_VM_INT32, 0, 1, meta, 0},
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
    meta[PLLM_M_MAGIC] = PLLM_META_MAGIC;
    meta[PLLM_M_VERSION] = PLLM_FORMAT_VERSION;
    meta[PLLM_M_VOCAB] = (int32_t)V;
    meta[PLLM_M_CONTEXT] = (int32_t)C;
    meta[PLLM_M_EMBED] = (int32_t)D;
    meta[PLLM_M_HIDDEN] = (int32_t)H;
    meta[PLLM_M_SCALE_MANT] = q->scale_mant;
    meta[PLLM_M_SCALE_SHIFT] = q->scale_shift;
    meta[PLLM_M_ROW_IDS] = (int32_t)t[T_IDS].row;
    meta[PLLM_M_ROW_LOGITS] = (int32_t)t[T_LOGITS].row;
    meta[PLLM_M_ROW_VOCAB] = (int32_t)t[T_VOCAB].row;
    pxl_image *img;
    pxl_status s = pxl_image_create(ctx, PLLM_W, row, &img);
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

void pxl_pllm_free(pxl_pllm *m) {
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

pxl_status pxl_pllm_open(pxl_ctx *ctx, pxl_image *img, pxl_pllm **out) {
    pxl_pllm *m = pxl_calloc(ctx, 1, sizeof *m);
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
    if ((s = view(ctx, img, 1, PXL_VM_INT32, 1, PLLM_META_N, &tm)) != PXL_OK) goto fail;
    for (uint32_t i = 0; i < PLLM_META_N; i++) m->meta[i] = get_i32(tm.data + 4 * i);
    s = PXL_ERR_FORMAT;
    if (m->meta[PLLM_M_MAGIC] != PLLM_META_MAGIC || m->meta[PLLM_M_VERSION] != PLLM_FORMAT_VERSION) {
        pxl_fail(ctx, s, "pixel-llm: row 1 holds no Pixel-LLM metadata (magic or version)");
        goto fail;
    }
    int32_t V = m->meta[PLLM_M_VOCAB], C = m->meta[PLLM_M_CONTEXT], D = m->meta[PLLM_M_EMBED],
            H = m->meta[PLLM_M_HIDDEN];
    if (V < 2 || V > (int32_t)PLLM_MAX_VOCAB || C < 1 || C > 1024 || D < 1 || D > 1024 || H < 1 ||
        H > 65535 || C * D > 65535 || m->meta[PLLM_M_PAD_ID] < 0 || m->meta[PLLM_M_PAD_ID] >= V ||
        m->meta[PLLM_M_UNK_ID] < 0 || m->meta[PLLM_M_UNK_ID] >= V || m->meta[PLLM_M_SCALE_MANT] <= 0 ||
        m->meta[PLLM_M_SCALE_SHIFT] < 0 || m->meta[PLLM_M_SCALE_SHIFT] > 62) {
        pxl_fail(ctx, s, "pixel-llm: metadata out of range (V=%d C=%d D=%d H=%d)", V, C, D, H);
        goto fail;
    }
    pllm_qmodel *q = &m->q;
    q->V = (uint32_t)V, q->C = (uint32_t)C, q->D = (uint32_t)D, q->H = (uint32_t)H;
    q->scale_mant = m->meta[PLLM_M_SCALE_MANT];
    q->scale_shift = m->meta[PLLM_M_SCALE_SHIFT];
    /* the program must be exactly the Pixel-LLM forward pass */
    static const uint8_t ops[PLLM_N_INSNS] = {PXL_OP_GATHER, PXL_OP_MATMUL, PXL_OP_ADD,
                                              PXL_OP_LUT,    PXL_OP_MATMUL, PXL_OP_ADD};
    uint32_t r_out[PLLM_N_INSNS], r_a[PLLM_N_INSNS], r_b[PLLM_N_INSNS];
    if (img->w < 1 + 2 * (PLLM_N_INSNS + 1)) {
        pxl_fail(ctx, s, "pixel-llm: image too narrow for the program");
        goto fail;
    }
    for (uint32_t i = 0; i < PLLM_N_INSNS; i++) {
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
    if (pxl_image_px(img, 1 + 2 * PLLM_N_INSNS, 0)[0] != PXL_OP_HALT || r_a[1] != r_out[0] ||
        r_a[2] != r_out[1] || r_a[3] != r_out[2] || r_a[4] != r_out[3] || r_a[5] != r_out[4] ||
        pxl_image_px(img, 1, 0)[3] != 0 || pxl_image_px(img, 3, 0)[3] != PXL_VM_FLAG_FLATTEN_A ||
        (uint32_t)m->meta[PLLM_M_ROW_IDS] != r_b[0] || (uint32_t)m->meta[PLLM_M_ROW_LOGITS] != r_out[5]) {
        pxl_fail(ctx, s, "pixel-llm: the program is not the Pixel-LLM forward pass");
        goto fail;
    }
    uint32_t K = q->C * q->D;
    tview tv, tids, tE, tW1, tb1, tpre, tlut, tW2, tb2, tacc1, tacc2, tlog;
    if ((s = view(ctx, img, (uint32_t)m->meta[PLLM_M_ROW_VOCAB], PXL_VM_INT32, 1, q->V, &tv)) ||
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
    m->scratch = pxl_alloc(ctx, pllm_ref_scratch_bytes(q));
    if (!q->E || !q->W1 || !q->W2 || !q->b1 || !q->b2 || !m->vocab || !m->scratch) {
        pxl_fail(ctx, s, "pixel-llm: out of memory");
        goto fail;
    }
    m->row_ids = r_b[0];
    m->row_logits = r_out[5];
    *out = m;
    return PXL_OK;
fail:
    pxl_pllm_free(m);
    return s;
}

pxl_status pxl_pllm_load(pxl_ctx *ctx, const char *path, pxl_pllm **out) {
    pxl_image *img;
    pxl_status s = pxl_pxi_load(ctx, path, &img);
    if (s != PXL_OK) return s;
    return pxl_pllm_open(ctx, img, out);
}

static int file_exists(const char *p) { return access(p, R_OK) == 0; }

pxl_status pxl_pllm_default_path(pxl_ctx *ctx, char *buf, size_t cap) {
    char cand[3][PATH_MAX];
    int n = 0;
    char exe[PATH_MAX];
    if (pxl_exe_dir(exe, sizeof exe)) {
        int w = snprintf(cand[n], PATH_MAX, "%s/../models/pixel-llm.pxi", exe);
        if (w > 0 && w < PATH_MAX) n++;
        w = snprintf(cand[n], PATH_MAX, "%s/../../models/pixel-llm.pxi", exe);
        if (w > 0 && w < PATH_MAX) n++;
        w = snprintf(cand[n], PATH_MAX, "%s/../share/pxl/models/pixel-llm.pxi", exe); /* installed */
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

void pxl_pllm_get_info(const pxl_pllm *m, pxl_pllm_info *info) {
    memset(info, 0, sizeof *info);
    info->vocab = m->q.V;
    info->context = m->q.C;
    info->embed = m->q.D;
    info->hidden = m->q.H;
    info->logit_scale = ldexp((double)m->q.scale_mant, -m->q.scale_shift);
    info->bpc_int8 = m->meta[PLLM_M_BPC_INT8_U] * 1e-6;
    info->bpc_float = m->meta[PLLM_M_BPC_FLOAT_U] * 1e-6;
    info->bpc_trigram = m->meta[PLLM_M_BPC_TRIGRAM_U] * 1e-6;
    info->image_w = m->img->w;
    info->image_h = m->img->h;
}

const pxl_image *pxl_pllm_image(const pxl_pllm *m) { return m->img; }

uint32_t pxl_pllm_encode(const pxl_pllm *m, uint32_t cp) {
    for (uint32_t i = 0; i < m->q.V; i++)
        if (i != (uint32_t)m->meta[PLLM_M_UNK_ID] && m->vocab[i] == cp) return i;
    return (uint32_t)m->meta[PLLM_M_UNK_ID];
}

uint32_t pxl_pllm_decode(const pxl_pllm *m, uint32_t id) {
    return id < m->q.V ? m->vocab[id] : 0xFFFDu;
}

static pxl_status check_ids(pxl_pllm *m, const uint32_t *ids) {
    for (uint32_t i = 0; i < m->q.C; i++)
        if (ids[i] >= m->q.V)
            return pxl_fail(m->ctx, PXL_ERR_INVALID_ARG, "pixel-llm: id %u at context position %u >= vocab %u",
                            ids[i], i, m->q.V);
    return PXL_OK;
}

pxl_status pxl_pllm_logits_ref(pxl_pllm *m, const uint32_t *ids, int32_t *logits) {
    pxl_status s = check_ids(m, ids);
    if (s != PXL_OK) return s;
    pllm_ref_forward(&m->q, ids, logits, m->scratch);
    return PXL_OK;
}

pxl_status pxl_pllm_logits_vm(pxl_pllm *m, const uint32_t *ids, int cpu, int32_t *logits) {
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
