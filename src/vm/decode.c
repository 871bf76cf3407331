/*
 * pxVM decoder. Decoding is validation (docs/pxvm-spec.md, section 5): a
 * program that decodes is valid, and the decoded form carries every operand,
 * tensor shape, extent and cost, so that the interpreters check nothing.
 *
 * Errors are PXL_ERR_FORMAT and name the pixel: "instruction at x=5 (matmul):
 * ..." or "tensor header at (0, 12): ...". All arithmetic on positions and
 * sizes is 64-bit; the size cap (W, H <= 2^14, W * H <= 2^25) bounds every
 * product below 2^63, and the few that could grow beyond are checked.
 *
 * Readings of the spec this file implements where the text is silent:
 *  - Decoding stops at HALT (its operands must be 0); later pixels of row 0
 *    are not instructions and are not read. In v1, a last pixel of row 0 that
 *    cannot hold a whole instruction is not read either.
 *  - "Unused operands are 0" applies to v0 too (HALT's G, B, A; RELU's A).
 *  - v0 instructions may not write row 0 (out row 0): the program is decoded
 *    once, and what a rewritten instruction would do is not defined.
 *  - v0 static shapes: a MATMUL operand's header pixel must not have been
 *    written last by DOT_RGB, ADD, RELU, or by the *element* writes of an
 *    earlier MATMUL (data, not shape); only a MATMUL's header write counts as
 *    static. v0 matrices may have 0 rows or columns (empty sums are 0).
 *  - v1 in-place: ADD and MUL may write over a or b; LUT only over a (writing
 *    over the table b would make elements depend on order).
 *  - MATMUL flag bit 0: the decoded t_a is the flattened view (1 x k).
 *  - MATMUL imm bits other than bit 0 must be 0; the header's pad byte
 *    (P(0, r).A) must be 0.
 */
#include "vm_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Text of one instruction for traces, shared by both interpreters (to be
 * declared in vm_internal.h). */
void pxl_vm_insn_text(int version, const pxl_vm_insn *in, char *buf, size_t cap);

typedef struct dec {
    pxl_ctx *ctx;
    const pxl_image *img;
    uint64_t w, h, npx;
} dec;

static const uint8_t *pix(const dec *d, uint64_t x, uint64_t y) {
    return d->img->px + (size_t)((y * d->w + x) * 4);
}

static const char *op_name(int version, uint8_t op) {
    const pxl_vm_opinfo *info = pxl_vm_opinfo_find(version, op);
    return info ? info->name : "?";
}

static const char *dtype_name(uint8_t dtype) {
    return dtype == PXL_VM_INT8 ? "int8" : dtype == PXL_VM_INT32 ? "int32" : "matrix";
}

static pxl_status fail_insn(dec *d, int version, const pxl_vm_insn *in, const char *fmt, ...)
    PXL_PRINTF(4, 5);
static pxl_status fail_insn(dec *d, int version, const pxl_vm_insn *in, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return pxl_fail(d->ctx, PXL_ERR_FORMAT, "instruction at x=%u (%s): %s", in->x,
                    op_name(version, in->op), msg);
}

/* ---- v1 tensors ------------------------------------------------------------------ */

static pxl_status fail_tensor(dec *d, uint32_t row, const char *role, const pxl_vm_insn *in,
                              const char *fmt, ...) PXL_PRINTF(5, 6);
static pxl_status fail_tensor(dec *d, uint32_t row, const char *role, const pxl_vm_insn *in,
                              const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return pxl_fail(d->ctx, PXL_ERR_FORMAT, "tensor header at (0, %u): %s; operand %s of %s at x=%u",
                    row, msg, role, op_name(1, in->op), in->x);
}

static pxl_status tensor_decode(dec *d, uint32_t row, const char *role, const pxl_vm_insn *in,
                                pxl_vm_tensor *t) {
    if (d->w < PXL_VM_HEADER_PIXELS)
        return fail_tensor(d, row, role, in, "a header needs 3 pixels but the image is %llu wide",
                           (unsigned long long)d->w);
    const uint8_t *h0 = pix(d, 0, row), *h1 = pix(d, 1, row), *h2 = pix(d, 2, row);
    if (h0[0] != PXL_VM_TENSOR_MAGIC)
        return fail_tensor(d, row, role, in, "bad magic 0x%02x (expected 0x54 'T')", h0[0]);
    if (h0[1] != PXL_VM_INT8 && h0[1] != PXL_VM_INT32)
        return fail_tensor(d, row, role, in, "unknown dtype %u (1: int8, 2: int32)", h0[1]);
    if (h0[2] > 62) return fail_tensor(d, row, role, in, "shift %u is above 62", h0[2]);
    if (h0[3] != 0) return fail_tensor(d, row, role, in, "reserved byte (A of the first pixel) is %u, not 0", h0[3]);
    uint32_t cols = (uint32_t)h1[0] | (uint32_t)h1[1] << 8;
    uint32_t rows = (uint32_t)h1[2] | (uint32_t)h1[3] << 8;
    if (cols == 0 || rows == 0)
        return fail_tensor(d, row, role, in, "shape %ux%u: rows and columns must be at least 1", rows, cols);
    uint32_t mu = (uint32_t)h2[0] | (uint32_t)h2[1] << 8 | (uint32_t)h2[2] << 16 | (uint32_t)h2[3] << 24;
    memset(t, 0, sizeof *t);
    t->row = row;
    t->dtype = h0[1];
    t->shift = h0[2];
    t->mult = (int32_t)mu;
    t->rows = rows;
    t->cols = cols;
    t->n_bytes = (uint64_t)rows * cols * (t->dtype == PXL_VM_INT8 ? 1u : 4u); /* < 2^35 */
    t->data_px = (uint64_t)row * d->w + PXL_VM_HEADER_PIXELS;
    uint64_t data_pixels = (t->n_bytes + 3) / 4;
    t->end_px = t->data_px + data_pixels;
    if (t->end_px > d->npx)
        return fail_tensor(d, row, role, in,
                           "%s %ux%u needs %llu data pixels from (3, %u) but the image (%llux%llu) "
                           "ends %llu pixels after that",
                           dtype_name(t->dtype), rows, cols, (unsigned long long)data_pixels, row,
                           (unsigned long long)d->w, (unsigned long long)d->h,
                           (unsigned long long)(d->npx > t->data_px ? d->npx - t->data_px : 0));
    return PXL_OK;
}

static uint64_t ext_start(const dec *d, const pxl_vm_tensor *t) { return (uint64_t)t->row * d->w; }

static int ranges_meet(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1) { return a0 < b1 && b0 < a1; }

static int cmp_u32(const void *pa, const void *pb) {
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    return (a > b) - (a < b);
}

#define SHAPE(t) (t)->rows, (t)->cols

static pxl_status check_shapes_v1(dec *d, pxl_vm_insn *in) {
    pxl_vm_tensor *o = &in->t_out, *a = &in->t_a, *b = &in->t_b;
    switch (in->op) {
    case PXL_OP_MATMUL: {
        if (a->dtype != PXL_VM_INT8) return fail_insn(d, 1, in, "a is %s, must be int8", dtype_name(a->dtype));
        if (b->dtype != PXL_VM_INT8) return fail_insn(d, 1, in, "b is %s, must be int8", dtype_name(b->dtype));
        if (in->imm & ~PXL_VM_FLAG_FLATTEN_A)
            return fail_insn(d, 1, in, "flags 0x%02x: only bit 0 (flatten a) is defined", in->imm);
        if (in->imm & PXL_VM_FLAG_FLATTEN_A) {
            uint64_t k = (uint64_t)a->rows * a->cols;
            if (k > 65535)
                return fail_insn(d, 1, in, "flattened a (%ux%u) has k=%llu columns, more than 65535",
                                 SHAPE(a), (unsigned long long)k);
            a->cols = (uint32_t)k;
            a->rows = 1;
        }
        if (a->cols != b->cols)
            return fail_insn(d, 1, in, "a has %u columns but b has %u (b is stored n x k)", a->cols, b->cols);
        if (o->rows != a->rows || o->cols != b->rows)
            return fail_insn(d, 1, in, "out is %ux%u but a (%ux%u) times b transposed (%ux%u) is %ux%u",
                             SHAPE(o), SHAPE(a), b->cols, b->rows, a->rows, b->rows);
        break;
    }
    case PXL_OP_ADD:
    case PXL_OP_MUL:
        if (in->op == PXL_OP_MUL && a->dtype != PXL_VM_INT8)
            return fail_insn(d, 1, in, "a is %s, must be int8", dtype_name(a->dtype));
        if (in->op == PXL_OP_MUL && b->dtype != PXL_VM_INT8)
            return fail_insn(d, 1, in, "b is %s, must be int8", dtype_name(b->dtype));
        if (a->dtype != b->dtype)
            return fail_insn(d, 1, in, "a is %s but b is %s (both int8 or both int32)", dtype_name(a->dtype),
                             dtype_name(b->dtype));
        if (!(b->cols == a->cols && (b->rows == a->rows || b->rows == 1)))
            return fail_insn(d, 1, in, "b is %ux%u but a is %ux%u (b must be %ux%u or 1x%u)", SHAPE(b), SHAPE(a),
                             SHAPE(a), a->cols);
        if (o->rows != a->rows || o->cols != a->cols)
            return fail_insn(d, 1, in, "out is %ux%u but a is %ux%u", SHAPE(o), SHAPE(a));
        break;
    case PXL_OP_LUT:
        if (o->dtype != PXL_VM_INT8) return fail_insn(d, 1, in, "out is %s, must be int8", dtype_name(o->dtype));
        if (a->dtype != PXL_VM_INT8) return fail_insn(d, 1, in, "a is %s, must be int8", dtype_name(a->dtype));
        if (b->dtype != PXL_VM_INT8) return fail_insn(d, 1, in, "b is %s, must be int8", dtype_name(b->dtype));
        if (b->rows != 1 || b->cols != 256) return fail_insn(d, 1, in, "table b is %ux%u, must be 1x256", SHAPE(b));
        if (o->rows != a->rows || o->cols != a->cols)
            return fail_insn(d, 1, in, "out is %ux%u but a is %ux%u", SHAPE(o), SHAPE(a));
        break;
    case PXL_OP_GATHER:
        if (b->dtype != PXL_VM_INT32) return fail_insn(d, 1, in, "indices b are %s, must be int32", dtype_name(b->dtype));
        if (b->rows != 1) return fail_insn(d, 1, in, "indices b are %ux%u, must have one row", SHAPE(b));
        if (o->dtype != a->dtype)
            return fail_insn(d, 1, in, "out is %s but a is %s", dtype_name(o->dtype), dtype_name(a->dtype));
        if (o->rows != b->cols || o->cols != a->cols)
            return fail_insn(d, 1, in, "out is %ux%u but %u indices into a %ux%u give %ux%u", SHAPE(o), b->cols,
                             SHAPE(a), b->cols, a->cols);
        break;
    case PXL_OP_ARGMAX:
        if (o->dtype != PXL_VM_INT32) return fail_insn(d, 1, in, "out is %s, must be int32", dtype_name(o->dtype));
        if (o->rows != 1 || o->cols != a->rows)
            return fail_insn(d, 1, in, "out is %ux%u but a has %u rows (out must be 1x%u)", SHAPE(o), a->rows,
                             a->rows);
        break;
    case PXL_OP_COPY:
        if (o->dtype != a->dtype || o->rows != a->rows || o->cols != a->cols)
            return fail_insn(d, 1, in, "out is %s %ux%u but a is %s %ux%u", dtype_name(o->dtype), SHAPE(o),
                             dtype_name(a->dtype), SHAPE(a));
        break;
    default:
        break;
    }
    return PXL_OK;
}

static pxl_status check_overlap_v1(dec *d, const pxl_vm_insn *in, const pxl_vm_opinfo *info) {
    const pxl_vm_tensor *o = &in->t_out;
    uint64_t o0 = ext_start(d, o), o1 = o->end_px;
    if (ranges_meet(o0, o1, 0, d->w)) return fail_insn(d, 1, in, "output extent overlaps row 0");
    for (int k = 0; k < 2; k++) {
        if (!(k == 0 ? info->uses_a : info->uses_b)) continue;
        const pxl_vm_tensor *t = k == 0 ? &in->t_a : &in->t_b;
        if (!ranges_meet(o0, o1, ext_start(d, t), t->end_px)) continue;
        int identical = t->row == o->row;
        int in_place = in->op == PXL_OP_ADD || in->op == PXL_OP_MUL || (in->op == PXL_OP_LUT && k == 0);
        if (identical && in_place) continue;
        if (identical)
            return fail_insn(d, 1, in, "out (row %u) is the same tensor as %s: %s may not work in place%s", o->row,
                             k == 0 ? "a" : "b", info->name, in->op == PXL_OP_LUT ? " on its table" : "");
        return fail_insn(d, 1, in, "output extent (pixels %llu..%llu from row %u) overlaps the extent of %s (row %u)",
                         (unsigned long long)o0, (unsigned long long)(o1 - 1), o->row, k == 0 ? "a" : "b",
                         t->row);
    }
    return PXL_OK;
}

static pxl_status decode_v1(dec *d, pxl_vm_insn *v, size_t *n_out) {
    size_t n = 0;
    for (uint64_t x = 1; x + 1 < d->w; x += 2) {
        const uint8_t *p0 = pix(d, x, 0), *p1 = pix(d, x + 1, 0);
        pxl_vm_insn *in = &v[n];
        memset(in, 0, sizeof *in);
        in->op = p0[0];
        in->imm = p0[3];
        in->x = (uint32_t)x;
        in->out = (uint32_t)p0[1] | (uint32_t)p0[2] << 8;
        in->a = (uint32_t)p1[0] | (uint32_t)p1[1] << 8;
        in->b = (uint32_t)p1[2] | (uint32_t)p1[3] << 8;
        const pxl_vm_opinfo *info = pxl_vm_opinfo_find(1, in->op);
        if (!info)
            return pxl_fail(d->ctx, PXL_ERR_FORMAT,
                            "instruction at x=%u: unknown opcode %u (v1 opcodes: 0 halt, 16-22)", in->x, in->op);
        if (!info->uses_out && in->out) return fail_insn(d, 1, in, "unused operand out is %u, must be 0", in->out);
        if (!info->uses_a && in->a) return fail_insn(d, 1, in, "unused operand a is %u, must be 0", in->a);
        if (!info->uses_b && in->b) return fail_insn(d, 1, in, "unused operand b is %u, must be 0", in->b);
        if (!info->uses_imm && in->imm) return fail_insn(d, 1, in, "unused operand imm8 is %u, must be 0", in->imm);
        if (in->op == PXL_OP_HALT) break;
        const char *roles[3] = {"out", "a", "b"};
        uint32_t rows[3] = {in->out, in->a, in->b};
        uint8_t used[3] = {info->uses_out, info->uses_a, info->uses_b};
        pxl_vm_tensor *ts[3] = {&in->t_out, &in->t_a, &in->t_b};
        for (int k = 0; k < 3; k++)
            if (used[k] && rows[k] >= d->h)
                return fail_insn(d, 1, in, "%s row %u is outside the image (height %llu)", roles[k], rows[k],
                                 (unsigned long long)d->h);
        for (int k = 0; k < 3; k++) {
            if (!used[k]) continue;
            pxl_status st = tensor_decode(d, rows[k], roles[k], in, ts[k]);
            if (st != PXL_OK) return st;
        }
        pxl_status st = check_shapes_v1(d, in);
        if (st == PXL_OK) st = check_overlap_v1(d, in, info);
        if (st != PXL_OK) return st;
        uint64_t elems = (uint64_t)in->t_out.rows * in->t_out.cols; /* < 2^32 */
        in->cost = 1 + elems * (in->op == PXL_OP_MATMUL ? in->t_a.cols : 1u); /* < 2^48 */
        n++;
    }

    /* 3.5: no output data may cover the header of a tensor the program uses. */
    uint32_t *hdr = pxl_calloc(d->ctx, n * 3 + 1, sizeof *hdr);
    if (!hdr) return pxl_fail(d->ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_vm_validate: out of memory");
    size_t nh = 0;
    for (size_t i = 0; i < n; i++) {
        const pxl_vm_opinfo *info = pxl_vm_opinfo_find(1, v[i].op);
        if (info->uses_out) hdr[nh++] = v[i].out;
        if (info->uses_a) hdr[nh++] = v[i].a;
        if (info->uses_b) hdr[nh++] = v[i].b;
    }
    qsort(hdr, nh, sizeof *hdr, cmp_u32);
    pxl_status st = PXL_OK;
    for (size_t i = 0; i < n && st == PXL_OK; i++) {
        const pxl_vm_tensor *o = &v[i].t_out;
        /* first header whose 3 pixels end after the data starts */
        size_t lo = 0, hi = nh;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if ((uint64_t)hdr[mid] * d->w + PXL_VM_HEADER_PIXELS <= o->data_px) lo = mid + 1;
            else hi = mid;
        }
        if (lo < nh && (uint64_t)hdr[lo] * d->w < o->end_px)
            st = fail_insn(d, 1, &v[i], "output data (rows %u..%llu) covers the header of the tensor at (0, %u), "
                           "which the program uses; headers must stay constant",
                           o->row, (unsigned long long)((o->end_px - 1) / d->w), hdr[lo]);
    }
    pxl_free(d->ctx, hdr);
    *n_out = n;
    return st;
}

/* ---- v0 ---------------------------------------------------------------------------- */

/* Who last wrote P(0, y), the only pixels v0 reads as MATMUL headers. */
enum { HDR_IMAGE = 0, HDR_STATIC, HDR_DYNAMIC };
typedef struct hdr_state {
    uint8_t kind;
    uint8_t writer_op;
    uint16_t cols, rows; /* HDR_STATIC */
    uint32_t writer_x;
} hdr_state;

static void mark_dynamic(hdr_state *hs, uint32_t y, const pxl_vm_insn *in) {
    hs[y].kind = HDR_DYNAMIC;
    hs[y].writer_x = in->x;
    hs[y].writer_op = in->op;
}

static pxl_status v0_matrix(dec *d, const hdr_state *hs, pxl_vm_insn *in, const char *role, uint32_t row,
                            pxl_vm_tensor *t) {
    uint32_t cols, rows;
    if (hs[row].kind == HDR_DYNAMIC)
        return fail_insn(d, 0, in,
                         "the header of %s at (0, %u) was last written by the instruction at x=%u (%s); "
                         "only a MATMUL's header write keeps v0 shapes static",
                         role, row, hs[row].writer_x,
                         hs[row].writer_op == PXL_OP_V0_MATMUL ? "matmul_r elements"
                                                                : op_name(0, hs[row].writer_op));
    if (hs[row].kind == HDR_STATIC) {
        cols = hs[row].cols;
        rows = hs[row].rows;
    } else {
        const uint8_t *p = pix(d, 0, row);
        cols = (uint32_t)p[0] | (uint32_t)p[1] << 8;
        rows = (uint32_t)p[2] | (uint32_t)p[3] << 8;
    }
    memset(t, 0, sizeof *t);
    t->row = row;
    t->rows = rows;
    t->cols = cols;
    t->n_bytes = (uint64_t)rows * cols;
    t->data_px = (uint64_t)row * d->w + 1;
    t->end_px = t->data_px + t->n_bytes;
    if (t->end_px > d->npx)
        return fail_insn(d, 0, in, "matrix %s at row %u (%ux%u) runs past the end of the image (%llux%llu)", role,
                         row, rows, cols, (unsigned long long)d->w, (unsigned long long)d->h);
    return PXL_OK;
}

static pxl_status decode_v0(dec *d, pxl_vm_insn *v, size_t *n_out) {
    hdr_state *hs = pxl_calloc(d->ctx, (size_t)d->h, sizeof *hs);
    if (!hs) return pxl_fail(d->ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_vm_validate: out of memory");
    pxl_status st = PXL_OK;
    size_t n = 0;
    for (uint64_t x = 0; x < d->w && st == PXL_OK; x++) {
        const uint8_t *p = pix(d, x, 0);
        pxl_vm_insn *in = &v[n];
        memset(in, 0, sizeof *in);
        in->op = p[0];
        in->x = (uint32_t)x;
        const pxl_vm_opinfo *info = pxl_vm_opinfo_find(0, in->op);
        if (!info) {
            st = pxl_fail(d->ctx, PXL_ERR_FORMAT, "instruction at x=%u: unknown opcode %u (v0 opcodes: 0-4%s)",
                          in->x, in->op,
                          in->op == PXL_VM_MAGIC_R && x == 0 && p[1] == PXL_VM_MAGIC_G && p[2] == PXL_VM_MAGIC_B
                              ? "; this looks like a pxVM marker of an unsupported version"
                              : "");
            break;
        }
        if (in->op == PXL_OP_HALT) {
            if (p[1] || p[2] || p[3])
                st = fail_insn(d, 0, in, "unused operands are (%u, %u, %u), must be 0", p[1], p[2], p[3]);
            break;
        }
        /* operands: G = a, B = b (RELU: out), A = out (RELU: unused) */
        in->a = p[1];
        if (in->op == PXL_OP_V0_RELU) {
            in->out = p[2];
            if (p[3]) {
                st = fail_insn(d, 0, in, "unused operand A is %u, must be 0", p[3]);
                break;
            }
        } else {
            in->b = p[2];
            in->out = p[3];
        }
        const char *roles[3] = {"out", "a", "b"};
        uint32_t rows[3] = {in->out, in->a, in->b};
        uint8_t used[3] = {info->uses_out, info->uses_a, info->uses_b};
        for (int k = 0; k < 3 && st == PXL_OK; k++)
            if (used[k] && rows[k] >= d->h)
                st = fail_insn(d, 0, in, "%s row %u is outside the image (height %llu)", roles[k], rows[k],
                               (unsigned long long)d->h);
        if (st != PXL_OK) break;
        if (in->out == 0) {
            st = fail_insn(d, 0, in, "writes row 0, which holds the program (instructions are not self-modifying)");
            break;
        }
        if (in->op != PXL_OP_V0_MATMUL) {
            in->cost = 1 + d->w; /* one pass over a row (DOT may stop early) */
            mark_dynamic(hs, in->out, in);
            n++;
            continue;
        }
        st = v0_matrix(d, hs, in, "a", in->a, &in->t_a);
        if (st == PXL_OK) st = v0_matrix(d, hs, in, "b", in->b, &in->t_b);
        if (st != PXL_OK) break;
        const pxl_vm_tensor *a = &in->t_a, *b = &in->t_b;
        if (a->cols != b->rows) {
            st = fail_insn(d, 0, in, "a has %u columns but b has %u rows", a->cols, b->rows);
            break;
        }
        pxl_vm_tensor *o = &in->t_out;
        o->row = in->out;
        o->rows = a->rows;
        o->cols = b->cols;
        o->n_bytes = (uint64_t)o->rows * o->cols;
        o->data_px = (uint64_t)o->row * d->w + 1;
        o->end_px = o->data_px + o->n_bytes;
        if (o->end_px > d->npx) {
            st = fail_insn(d, 0, in, "the %ux%u result at row %u does not fit in the image (%llux%llu)", o->rows,
                           o->cols, o->row, (unsigned long long)d->w, (unsigned long long)d->h);
            break;
        }
        in->cost = 1 + o->n_bytes * a->cols; /* < 2^26 * 2^16 */
        /* the header write, then the element writes that land on column 0 */
        hs[o->row].kind = HDR_STATIC;
        hs[o->row].cols = (uint16_t)o->cols;
        hs[o->row].rows = (uint16_t)o->rows;
        for (uint64_t y = (o->data_px + d->w - 1) / d->w; y * d->w < o->end_px; y++)
            mark_dynamic(hs, (uint32_t)y, in);
        n++;
    }
    pxl_free(d->ctx, hs);
    *n_out = n;
    return st;
}

/* ---- entry points ------------------------------------------------------------------- */

int pxl_vm_version(const pxl_image *img) {
    if (!img || !img->px || img->w == 0 || img->h == 0) return 0;
    const uint8_t *p = img->px;
    return p[0] == PXL_VM_MAGIC_R && p[1] == PXL_VM_MAGIC_G && p[2] == PXL_VM_MAGIC_B &&
                   p[3] == PXL_VM_MAGIC_VERSION
               ? 1
               : 0;
}

pxl_status pxl_vm_decode(pxl_ctx *ctx, const pxl_image *img, pxl_vm_program *out) {
    if (!ctx) return PXL_ERR_INVALID_ARG;
    if (!img || !out) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_vm_decode: image and program are required");
    if (img->w < 1 || img->h < 1 || img->w > PXL_VM_MAX_SIDE || img->h > PXL_VM_MAX_SIDE ||
        (uint64_t)img->w * img->h > PXL_VM_MAX_PIXELS || !img->px)
        return pxl_fail(ctx, PXL_ERR_FORMAT,
                        "image is %ux%u: pxVM images are 1 to 16384 pixels on a side and at most 2^25 pixels",
                        img->w, img->h);
    dec d = {ctx, img, img->w, img->h, (uint64_t)img->w * img->h};
    int version = pxl_vm_version(img);
    pxl_vm_insn *v = pxl_calloc(ctx, img->w, sizeof *v); /* at most one instruction per pixel */
    if (!v) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_vm_validate: out of memory");
    size_t n = 0;
    pxl_status st = version == 1 ? decode_v1(&d, v, &n) : decode_v0(&d, v, &n);
    if (st != PXL_OK) {
        pxl_free(ctx, v);
        return st;
    }
    out->version = version;
    out->n = n;
    out->insns = v;
    return PXL_OK;
}

void pxl_vm_program_free(pxl_ctx *ctx, pxl_vm_program *p) {
    if (!p) return;
    if (ctx) pxl_free(ctx, p->insns);
    p->insns = NULL;
    p->n = 0;
}

pxl_status pxl_vm_validate(pxl_ctx *ctx, const pxl_image *img) {
    pxl_vm_program p = {0, 0, NULL};
    pxl_status st = pxl_vm_decode(ctx, img, &p);
    pxl_vm_program_free(ctx, &p);
    return st;
}

void pxl_vm_insn_text(int version, const pxl_vm_insn *in, char *buf, size_t cap) {
    const pxl_vm_opinfo *info = pxl_vm_opinfo_find(version, in->op);
    if (!info) {
        snprintf(buf, cap, "op%u", in->op);
        return;
    }
    int len = snprintf(buf, cap, "%s", info->name);
    size_t used = len > 0 ? (size_t)len : 0;
#define APPEND(...)                                                                          \
    do {                                                                                     \
        if (used < cap) {                                                                    \
            int k_ = snprintf(buf + used, cap - used, __VA_ARGS__);                          \
            if (k_ > 0) used += (size_t)k_;                                                  \
        }                                                                                    \
    } while (0)
    if (info->uses_out) APPEND(" out=%u", in->out);
    if (info->uses_a) APPEND(" a=%u", in->a);
    if (info->uses_b) APPEND(" b=%u", in->b);
    if (info->uses_imm) APPEND(" flags=%u", in->imm);
#undef APPEND
}

size_t pxl_vm_budget_fit(const pxl_vm_program *p, uint64_t max_steps, char *msg, size_t cap) {
    uint64_t budget = max_steps ? max_steps : PXL_VM_DEFAULT_BUDGET, used = 0;
    if (cap) msg[0] = '\0';
    for (size_t i = 0; i < p->n; i++) {
        const pxl_vm_insn *in = &p->insns[i];
        if (in->cost > budget - used) {
            snprintf(msg, cap, "budget exceeded at x=%u (%s costs %llu work units; %llu of the budget of %llu used)",
                     in->x, pxl_vm_opinfo_find(p->version, in->op)->name, (unsigned long long)in->cost,
                     (unsigned long long)used, (unsigned long long)budget);
            return i;
        }
        used += in->cost;
    }
    return p->n;
}
