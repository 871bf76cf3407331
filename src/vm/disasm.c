/*
 * The pxVM disassembler: image -> text (docs/pxvm-asm.md) that pxl_vm_asm
 * turns back into the same image, byte for byte, for any image.
 *
 * It describes what it understands (the instruction stream, the tensors or
 * v0 matrices and rows the instructions name) and then emits every other
 * non-zero byte as raw pixels. A claim bitmap (4 bits per pixel) makes sure
 * that no byte is described twice, which is also the assembler's rule.
 * Structures that would overlap something already described are not
 * recognised (their operands are printed as numbers, their bytes as raw
 * pixels). Names are generated from the row: t<row> (v1 tensor), m<row>
 * (v0 matrix), r<row> (v0 row label), so they never collide.
 */
#include "vm_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct sbuf {
    pxl_ctx *ctx;
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    size_t need;
    if (!pxl_add_size(b->n, n, &need) || !pxl_add_size(need, 1, &need)) {
        b->oom = 1;
        return;
    }
    if (need > b->cap) {
        size_t nc = b->cap ? b->cap : 4096;
        while (nc < need) {
            if (nc > (size_t)-1 / 2) {
                b->oom = 1;
                return;
            }
            nc *= 2;
        }
        char *q = pxl_realloc(b->ctx, b->p, nc);
        if (!q) {
            b->oom = 1;
            return;
        }
        b->p = q;
        b->cap = nc;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void sb_printf(sbuf *b, const char *fmt, ...) PXL_PRINTF(2, 3);
static void sb_printf(sbuf *b, const char *fmt, ...) {
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    sb_put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* What a row is, once recognised. */
enum { R_NONE = 0, R_TENSOR, R_MATRIX, R_ROW, R_REJECTED };

typedef struct dis {
    pxl_ctx *ctx;
    const pxl_image *img;
    uint64_t n_px;
    uint8_t *claim; /* per pixel, bit c: channel c described */
    uint8_t *kind;  /* per row: R_* */
    uint32_t *order; /* rows in order of first recognition */
    size_t n_order;
    sbuf out;
} dis;

static const uint8_t *px_at(const dis *d, uint64_t p) { return d->img->px + (size_t)p * 4; }

/* 1 if no channel in mask of pixels [s, e) is claimed yet. */
static int free_range(const dis *d, uint64_t s, uint64_t e, uint8_t mask) {
    for (uint64_t p = s; p < e; p++)
        if (d->claim[p] & mask) return 0;
    return 1;
}

static void claim_range(dis *d, uint64_t s, uint64_t e, uint8_t mask) {
    for (uint64_t p = s; p < e; p++) d->claim[p] = (uint8_t)(d->claim[p] | mask);
}

/* v1 tensor at row r: header and data stream free and inside the image. */
static void try_tensor(dis *d, uint32_t r) {
    if (r >= d->img->h || d->kind[r] != R_NONE) return;
    uint64_t s = (uint64_t)r * d->img->w;
    d->kind[r] = R_REJECTED;
    if (s + PXL_VM_HEADER_PIXELS > d->n_px) return;
    const uint8_t *h = px_at(d, s);
    if (h[0] != PXL_VM_TENSOR_MAGIC || (h[1] != PXL_VM_INT8 && h[1] != PXL_VM_INT32) || h[2] > 62 || h[3] != 0)
        return;
    uint32_t cols = (uint32_t)h[4] | (uint32_t)h[5] << 8, rows = (uint32_t)h[6] | (uint32_t)h[7] << 8;
    if (!cols || !rows) return;
    uint64_t bytes = (uint64_t)rows * cols * (h[1] == PXL_VM_INT8 ? 1u : 4u);
    uint64_t full = bytes / 4, rest = bytes % 4;
    uint64_t ds = s + PXL_VM_HEADER_PIXELS;
    if (ds + full + (rest ? 1 : 0) > d->n_px) return;
    if (!free_range(d, s, ds + full, 0xF)) return;
    uint8_t rmask = (uint8_t)((1u << rest) - 1);
    if (rest && !free_range(d, ds + full, ds + full + 1, rmask)) return;
    claim_range(d, s, ds + full, 0xF);
    if (rest) claim_range(d, ds + full, ds + full + 1, rmask);
    d->kind[r] = R_TENSOR;
    d->order[d->n_order++] = r;
}

/* v0 matrix at row r: header pixel and the R channel of its elements. */
static void try_matrix(dis *d, uint32_t r) {
    if (r >= d->img->h || d->kind[r] != R_NONE) return;
    uint64_t s = (uint64_t)r * d->img->w;
    const uint8_t *h = px_at(d, s);
    uint64_t elems = ((uint64_t)h[0] | (uint64_t)h[1] << 8) * ((uint64_t)h[2] | (uint64_t)h[3] << 8);
    d->kind[r] = R_REJECTED;
    if (s + 1 + elems > d->n_px) return;
    if (!free_range(d, s, s + 1, 0xF) || !free_range(d, s + 1, s + 1 + elems, 0x1)) return;
    claim_range(d, s, s + 1, 0xF);
    claim_range(d, s + 1, s + 1 + elems, 0x1);
    d->kind[r] = R_MATRIX;
    d->order[d->n_order++] = r;
}

static void label_row(dis *d, uint32_t r) {
    if (r >= d->img->h || d->kind[r] != R_NONE) return;
    d->kind[r] = R_ROW;
    d->order[d->n_order++] = r;
}

/* An operand: the name of a recognised row, else the number. */
static void put_operand(dis *d, uint32_t r) {
    if (r < d->img->h && d->kind[r] == R_TENSOR) sb_printf(&d->out, " t%u", r);
    else if (r < d->img->h && d->kind[r] == R_MATRIX) sb_printf(&d->out, " m%u", r);
    else if (r < d->img->h && d->kind[r] == R_ROW) sb_printf(&d->out, " r%u", r);
    else sb_printf(&d->out, " %u", r);
}

static int cmp_row(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

typedef struct dinsn {
    const pxl_vm_opinfo *info;
    uint32_t x, out, a, b;
    uint8_t imm;
} dinsn;

/* Decodes one instruction at x if the text can express it exactly. */
static int decode_at(const dis *d, int version, uint32_t x, dinsn *in, char *why, size_t why_cap) {
    const uint8_t *p = px_at(d, x);
    memset(in, 0, sizeof *in);
    in->x = x;
    const pxl_vm_opinfo *info = pxl_vm_opinfo_find(version, p[0]);
    if (!info) {
        snprintf(why, why_cap, "opcode %u is not a v%d opcode", p[0], version);
        return 0;
    }
    in->info = info;
    if (version == 0) {
        if (p[0] == PXL_OP_HALT) {
            if (p[1] | p[2] | p[3]) {
                snprintf(why, why_cap, "halt with non-zero operands");
                return 0;
            }
        } else if (p[0] == PXL_OP_V0_RELU) {
            if (p[3]) {
                snprintf(why, why_cap, "relu_r with a non-zero A channel");
                return 0;
            }
            in->a = p[1];
            in->out = p[2];
        } else {
            in->a = p[1];
            in->b = p[2];
            in->out = p[3];
        }
        return 1;
    }
    const uint8_t *q = p + 4;
    in->out = (uint32_t)p[1] | (uint32_t)p[2] << 8;
    in->imm = p[3];
    in->a = (uint32_t)q[0] | (uint32_t)q[1] << 8;
    in->b = (uint32_t)q[2] | (uint32_t)q[3] << 8;
    if ((!info->uses_out && in->out) || (!info->uses_imm && in->imm) || (!info->uses_a && in->a) ||
        (!info->uses_b && in->b)) {
        snprintf(why, why_cap, "%s with a non-zero unused operand", info->name);
        return 0;
    }
    return 1;
}

static void emit_header(dis *d, int version, size_t n_insn) {
    sb_printf(&d->out, "; pxVM image, disassembled by pxl (docs/pxvm-asm.md)\n");
    sb_printf(&d->out, ".image %u %u\n.version %d\n", d->img->w, d->img->h, version);
    (void)n_insn;
}

/* Pads the current line to column 40 and starts a comment. */
static void comment_col(dis *d, size_t line_start) {
    size_t w = d->out.oom ? 0 : d->out.n - line_start;
    sb_printf(&d->out, "%*s; ", w < 40 ? (int)(40 - w) : 1, "");
}

/* "; pixels (x0, y0)..(x1, y1)" for linear pixels [s, e). */
static void extent_comment(dis *d, size_t line_start, uint64_t s, uint64_t e) {
    uint32_t w = d->img->w;
    comment_col(d, line_start);
    sb_printf(&d->out, "pixels (%llu, %llu)..(%llu, %llu)\n", (unsigned long long)(s % w),
              (unsigned long long)(s / w), (unsigned long long)((e - 1) % w), (unsigned long long)((e - 1) / w));
}

static void emit_decls(dis *d) {
    if (d->n_order) sb_printf(&d->out, "\n");
    for (size_t i = 0; i < d->n_order; i++) {
        uint32_t r = d->order[i];
        uint64_t s = (uint64_t)r * d->img->w;
        const uint8_t *h = px_at(d, s);
        size_t start = d->out.n;
        if (d->kind[r] == R_ROW) {
            sb_printf(&d->out, ".row r%u %u\n", r, r);
        } else if (d->kind[r] == R_MATRIX) {
            uint32_t rows = (uint32_t)h[2] | (uint32_t)h[3] << 8, cols = (uint32_t)h[0] | (uint32_t)h[1] << 8;
            sb_printf(&d->out, ".matrix m%u %u %u %u", r, r, rows, cols);
            extent_comment(d, start, s, s + 1 + (uint64_t)rows * cols);
        } else if (d->kind[r] == R_TENSOR) {
            int32_t mult = (int32_t)((uint32_t)h[8] | (uint32_t)h[9] << 8 | (uint32_t)h[10] << 16 |
                                     (uint32_t)h[11] << 24);
            uint32_t rows = (uint32_t)h[6] | (uint32_t)h[7] << 8, cols = (uint32_t)h[4] | (uint32_t)h[5] << 8;
            sb_printf(&d->out, ".tensor t%u %u %s %u %u", r, r, h[1] == PXL_VM_INT8 ? "int8" : "int32", rows, cols);
            if (mult != 1) sb_printf(&d->out, " mult=%d", mult);
            if (h[2]) sb_printf(&d->out, " shift=%u", h[2]);
            uint64_t bytes = (uint64_t)rows * cols * (h[1] == PXL_VM_INT8 ? 1u : 4u);
            extent_comment(d, start, s, s + PXL_VM_HEADER_PIXELS + (bytes + 3) / 4);
        }
    }
}

/* Values per line: one tensor row per line when it has 4..max values. */
static int new_line_at(uint64_t e, uint64_t cols, unsigned max) {
    if (cols < 4) return e % max == 0;
    return (e % cols) % max == 0;
}

static void emit_code(dis *d, const dinsn *ins, size_t n, int version, uint32_t stop_x, const char *why) {
    sb_printf(&d->out, "\n; row 0: %zu instruction%s\n", n, n == 1 ? "" : "s");
    for (size_t i = 0; i < n; i++) {
        const dinsn *in = &ins[i];
        size_t start = d->out.n;
        sb_printf(&d->out, "%s", in->info->name);
        if (in->info->uses_out) put_operand(d, in->out);
        if (in->info->uses_a) put_operand(d, in->a);
        if (in->info->uses_b) put_operand(d, in->b);
        if (in->info->uses_imm) sb_printf(&d->out, " %u", in->imm);
        comment_col(d, start);
        sb_printf(&d->out, "x=%u\n", in->x);
    }
    if (why[0])
        sb_printf(&d->out, "; x=%u: %s; the rest of row 0 is raw pixels below\n", stop_x, why);
    (void)version;
}

/* Values of a tensor's or matrix's data, unless all zero. */
static void emit_data(dis *d) {
    for (size_t i = 0; i < d->n_order; i++) {
        uint32_t r = d->order[i];
        uint64_t s = (uint64_t)r * d->img->w;
        const uint8_t *h = px_at(d, s);
        if (d->kind[r] == R_TENSOR) {
            uint64_t n = ((uint64_t)h[4] | (uint64_t)h[5] << 8) * ((uint64_t)h[6] | (uint64_t)h[7] << 8);
            const uint8_t *base = px_at(d, s + PXL_VM_HEADER_PIXELS);
            int i8 = h[1] == PXL_VM_INT8;
            uint64_t bytes = n * (i8 ? 1u : 4u), nz = 0;
            for (uint64_t k = 0; k < bytes && !nz; k++) nz = base[k];
            if (!nz) continue;
            uint64_t cols = (uint64_t)h[4] | (uint64_t)h[5] << 8;
            for (uint64_t e = 0; e < n; e++) {
                if (new_line_at(e, cols, i8 ? 32 : 16)) sb_printf(&d->out, "\n.data t%u", r);
                if (i8) sb_printf(&d->out, " %d", (int)(int8_t)base[e]);
                else {
                    const uint8_t *q = base + e * 4;
                    int32_t v = (int32_t)((uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 |
                                          (uint32_t)q[3] << 24);
                    sb_printf(&d->out, " %d", v);
                }
            }
            sb_printf(&d->out, "\n");
        } else if (d->kind[r] == R_MATRIX) {
            uint64_t n = ((uint64_t)h[0] | (uint64_t)h[1] << 8) * ((uint64_t)h[2] | (uint64_t)h[3] << 8);
            uint64_t nz = 0;
            for (uint64_t k = 0; k < n && !nz; k++) nz = px_at(d, s + 1 + k)[0];
            if (!nz) continue;
            uint64_t cols = (uint64_t)h[0] | (uint64_t)h[1] << 8;
            for (uint64_t e = 0; e < n; e++) {
                if (new_line_at(e, cols, 32)) sb_printf(&d->out, "\n.data m%u", r);
                sb_printf(&d->out, " %u", px_at(d, s + 1 + e)[0]);
            }
            sb_printf(&d->out, "\n");
        }
    }
}

/*
 * v0 row data: the R channel of labelled rows (row 0 excepted) as .r runs of
 * unclaimed bytes, split at claimed bytes and at 8 or more zeros, at most 16
 * values a line. Claims what it prints.
 */
static void emit_rows(dis *d) {
    uint32_t w = d->img->w;
    for (size_t i = 0; i < d->n_order; i++) {
        uint32_t r = d->order[i];
        if (d->kind[r] != R_ROW || r == 0) continue;
        uint64_t s = (uint64_t)r * w;
        uint32_t x = 0;
        int any = 0;
        while (x < w) {
            /* the next unclaimed non-zero R byte */
            while (x < w && ((d->claim[s + x] & 1) || px_at(d, s + x)[0] == 0)) x++;
            if (x >= w) break;
            /* extend while unclaimed, stopping before 8 zeros in a row or a claimed byte */
            uint32_t e = x, last_nz = x;
            while (e < w && !(d->claim[s + e] & 1) && e - last_nz < 8) {
                if (px_at(d, s + e)[0]) last_nz = e;
                e++;
            }
            if (!any) sb_printf(&d->out, "\n");
            any = 1;
            for (uint32_t k = x; k <= last_nz; k++) {
                if ((k - x) % 16 == 0) sb_printf(&d->out, "%s.r r%u %u", k == x ? "" : "\n", r, k);
                sb_printf(&d->out, " %u", px_at(d, s + k)[0]);
            }
            sb_printf(&d->out, "\n");
            claim_range(d, s + x, s + last_nz + 1, 0x1);
            x = last_nz + 1;
        }
    }
}

/* Every unclaimed non-zero byte, as .pixels runs (claimed channels as ".."). */
static void emit_raw(dis *d) {
    static const char hx[] = "0123456789abcdef";
    uint32_t w = d->img->w, h = d->img->h;
    int header = 0;
    for (uint32_t y = 0; y < h; y++) {
        uint64_t s = (uint64_t)y * w;
        uint32_t x = 0;
        while (x < w) {
            /* a pixel with an unclaimed non-zero byte starts a run */
            int need = 0;
            for (; x < w; x++) {
                const uint8_t *p = px_at(d, s + x);
                uint8_t c = d->claim[s + x];
                need = 0;
                for (int k = 0; k < 4; k++)
                    if (!(c >> k & 1) && p[k]) need = 1;
                if (need) break;
            }
            if (x >= w) break;
            if (!header) {
                sb_printf(&d->out, "\n; bytes not described above\n");
                header = 1;
            }
            sb_printf(&d->out, ".pixels %u %u", x, y);
            uint32_t k = 0;
            for (; x < w && k < 8; x++, k++) {
                const uint8_t *p = px_at(d, s + x);
                uint8_t c = d->claim[s + x];
                int nz = 0;
                for (int j = 0; j < 4; j++)
                    if (!(c >> j & 1) && p[j]) nz = 1;
                if (!nz) break;
                char tok[10];
                tok[0] = ' ';
                for (int j = 0; j < 4; j++) {
                    tok[1 + 2 * j] = (c >> j & 1) ? '.' : hx[p[j] >> 4];
                    tok[2 + 2 * j] = (c >> j & 1) ? '.' : hx[p[j] & 15];
                }
                sb_put(&d->out, tok, 9);
            }
            sb_printf(&d->out, "\n");
        }
    }
}

pxl_status pxl_vm_disasm(pxl_ctx *ctx, const pxl_image *img, char **text, size_t *len) {
    if (!img || !img->px || img->w == 0 || img->h == 0 || img->w > PXL_VM_MAX_SIDE || img->h > PXL_VM_MAX_SIDE ||
        (uint64_t)img->w * img->h > PXL_VM_MAX_PIXELS)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_vm_disasm: not an image within the size cap");
    dis d;
    memset(&d, 0, sizeof d);
    d.ctx = ctx;
    d.img = img;
    d.n_px = (uint64_t)img->w * img->h;
    d.out.ctx = ctx;
    pxl_status s = PXL_OK;
    dinsn *ins = NULL;
    d.claim = pxl_calloc(ctx, (size_t)d.n_px, 1);
    d.kind = pxl_calloc(ctx, img->h, 1);
    d.order = pxl_calloc(ctx, img->h, sizeof(uint32_t));
    ins = pxl_calloc(ctx, img->w, sizeof(dinsn));
    if (!d.claim || !d.kind || !d.order || !ins) {
        s = pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_vm_disasm: out of memory for a %ux%u image", img->w, img->h);
        goto done;
    }

    const uint8_t *p0 = img->px;
    int version = p0[0] == PXL_VM_MAGIC_R && p0[1] == PXL_VM_MAGIC_G && p0[2] == PXL_VM_MAGIC_B &&
                  p0[3] == PXL_VM_MAGIC_VERSION;
    /* the instruction stream */
    size_t n = 0;
    uint32_t x = 0;
    char why[128] = "";
    if (version) {
        claim_range(&d, 0, 1, 0xF);
        x = 1;
    }
    uint32_t step = version ? 2 : 1;
    while ((uint64_t)x + step <= img->w) {
        dinsn in;
        if (!decode_at(&d, version, x, &in, why, sizeof why)) break;
        ins[n++] = in;
        claim_range(&d, x, x + step, 0xF);
        x += step;
        if (in.info->op == PXL_OP_HALT) break;
    }
    /* recognise operands, in program order */
    for (size_t i = 0; i < n; i++) {
        const dinsn *in = &ins[i];
        const pxl_vm_opinfo *info = in->info;
        if (version) {
            if (info->uses_out) try_tensor(&d, in->out);
            if (info->uses_a) try_tensor(&d, in->a);
            if (info->uses_b) try_tensor(&d, in->b);
        } else if (info->op == PXL_OP_V0_MATMUL) {
            try_matrix(&d, in->a);
            try_matrix(&d, in->b);
        }
    }
    if (!version)
        for (size_t i = 0; i < n; i++) {
            const dinsn *in = &ins[i];
            if (in->info->uses_out) label_row(&d, in->out);
            if (in->info->uses_a) label_row(&d, in->a);
            if (in->info->uses_b) label_row(&d, in->b);
        }

    qsort(d.order, d.n_order, sizeof *d.order, cmp_row);
    emit_header(&d, version, n);
    emit_decls(&d);
    emit_code(&d, ins, n, version, x, why);
    emit_data(&d);
    emit_rows(&d);
    emit_raw(&d);
    if (d.out.oom) {
        s = pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_vm_disasm: out of memory for the text");
        goto done;
    }
    *text = d.out.p;
    *len = d.out.n;
    d.out.p = NULL;
done:
    pxl_free(ctx, d.out.p);
    pxl_free(ctx, d.claim);
    pxl_free(ctx, d.kind);
    pxl_free(ctx, d.order);
    pxl_free(ctx, ins);
    return s;
}
