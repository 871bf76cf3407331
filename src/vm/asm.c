/*
 * The pxVM assembler: text (docs/pxvm-asm.md) -> image.
 *
 * The text is outside input: every size is checked, nothing is read outside
 * [text, text + len), and every error is PXL_ERR_FORMAT naming the line (and
 * the column of the token at fault where there is one). The assembler lays
 * out bytes; it does not check program semantics (pxl_vm_validate does).
 *
 * Every byte of the image may be set by at most one directive or
 * instruction; a claim bitmap (4 bits per pixel, one per channel) catches
 * overlaps, and the error names the line that set the byte first.
 */
#include "vm_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NAME_MAX_LEN 64

typedef struct tok {
    const char *s;
    size_t n;
    size_t col; /* 1-based byte column in the line */
} tok;

enum { K_ROW = 1, K_TENSOR, K_MATRIX };

typedef struct obj {
    const char *name;
    size_t name_len;
    uint8_t kind;
    uint8_t dtype;    /* tensors: PXL_VM_INT8 / PXL_VM_INT32; matrices: 0 */
    uint32_t row;
    uint64_t data_px; /* first data pixel (linear) */
    uint64_t total;   /* tensors: data bytes; matrices: elements */
    uint64_t filled;  /* bytes (tensors) or elements (matrices) written by .data */
    size_t def_line, data_line;
} obj;

/* Who set which pixels (only read to name the culprit of an overlap). */
typedef struct rec {
    size_t line;
    uint64_t start, end; /* linear pixels [start, end) */
    uint8_t mask;        /* channels */
} rec;

/* An instruction whose operands are resolved at the end (names may come later). */
typedef struct fixup {
    size_t line;
    uint32_t x;
    const pxl_vm_opinfo *info;
    tok ops[4]; /* out, a, b, imm (only those the opcode uses) */
} fixup;

typedef struct as {
    pxl_ctx *ctx;
    const char *base_dir;
    pxl_image *img;
    uint8_t *claim; /* per pixel: bit c set when channel c is set */
    uint64_t n_px;
    int version;
    int version_set;
    int seen_other;   /* a directive other than .image/.version has been seen */
    uint32_t next_x;  /* where the next instruction goes in row 0 */
    size_t line;
    /* objects and the name table (open addressing over obj indices + 1) */
    obj *objs;
    size_t n_objs, cap_objs;
    uint32_t *hash;
    size_t hash_cap;
    rec *recs;
    size_t n_recs, cap_recs;
    fixup *fix;
    size_t n_fix, cap_fix;
    tok *toks;
    size_t cap_toks;
} as;

static const char k_chan[4] = {'R', 'G', 'B', 'A'};

static pxl_status fail_line(as *a, const char *fmt, ...) PXL_PRINTF(2, 3);
static pxl_status fail_line(as *a, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return pxl_fail(a->ctx, PXL_ERR_FORMAT, "line %zu: %s", a->line, msg);
}

static pxl_status fail_tok(as *a, const tok *t, const char *fmt, ...) PXL_PRINTF(3, 4);
static pxl_status fail_tok(as *a, const tok *t, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return pxl_fail(a->ctx, PXL_ERR_FORMAT, "line %zu, col %zu: %s", a->line, t->col, msg);
}

/* A token for messages: at most 40 bytes, quoted by the caller. */
#define TOKF "%.*s%s"
#define TOKA(t) (int)((t)->n > 40 ? 40 : (t)->n), (t)->s, ((t)->n > 40 ? "..." : "")

static int tok_is(const tok *t, const char *s) {
    size_t n = strlen(s);
    return t->n == n && memcmp(t->s, s, n) == 0;
}

static int tok_prefix(const tok *t, const char *p) {
    size_t n = strlen(p);
    return t->n >= n && memcmp(t->s, p, n) == 0;
}

/* Grows *arr (of elem bytes each) to hold at least need elements. */
static int grow(pxl_ctx *ctx, void **arr, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 1;
    size_t nc = *cap ? *cap : 16;
    while (nc < need) {
        if (nc > (size_t)-1 / 2) return 0;
        nc *= 2;
    }
    size_t bytes;
    if (!pxl_mul_size(nc, elem, &bytes)) return 0;
    void *p = pxl_realloc(ctx, *arr, bytes);
    if (!p) return 0;
    *arr = p;
    *cap = nc;
    return 1;
}

static pxl_status oom(as *a) {
    return pxl_fail(a->ctx, PXL_ERR_OUT_OF_MEMORY, "line %zu: out of memory", a->line);
}

/* ---- numbers ----------------------------------------------------------------- */

/*
 * Parses [-](decimal | 0x hex) into *out. Returns 0 on success, -1 if the
 * token is not a number, -2 if it does not fit in [lo, hi].
 */
static int parse_int(const tok *t, int64_t lo, int64_t hi, int64_t *out) {
    const char *s = t->s;
    size_t n = t->n, i = 0;
    int neg = 0;
    if (i < n && s[i] == '-') {
        neg = 1;
        i++;
    }
    int base = 10;
    if (i + 1 < n && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
        base = 16;
        i += 2;
    }
    if (i >= n) return -1;
    uint64_t v = 0;
    int big = 0;
    for (; i < n; i++) {
        unsigned d;
        char c = s[i];
        if (c >= '0' && c <= '9') d = (unsigned)(c - '0');
        else if (base == 16 && c >= 'a' && c <= 'f') d = (unsigned)(c - 'a' + 10);
        else if (base == 16 && c >= 'A' && c <= 'F') d = (unsigned)(c - 'A' + 10);
        else return -1;
        if (v > (UINT64_MAX - d) / (unsigned)base) big = 1;
        else v = v * (unsigned)base + d;
    }
    if (big || v > (uint64_t)INT64_MAX) return -2;
    int64_t r = neg ? -(int64_t)v : (int64_t)v;
    if (r < lo || r > hi) return -2;
    *out = r;
    return 0;
}

/* Parses a number in [lo, hi] or fails naming what it is (e.g. "width"). */
static pxl_status get_int(as *a, const tok *t, int64_t lo, int64_t hi, const char *what, int64_t *out) {
    int r = parse_int(t, lo, hi, out);
    if (r == -1) return fail_tok(a, t, "%s: '" TOKF "' is not a number", what, TOKA(t));
    if (r == -2)
        return fail_tok(a, t, "%s: '" TOKF "' is out of range (%lld..%lld)", what, TOKA(t),
                        (long long)lo, (long long)hi);
    return PXL_OK;
}

/* ---- names ------------------------------------------------------------------- */

static uint64_t name_hash(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
    return h;
}

static obj *find_name(as *a, const char *s, size_t n) {
    if (!a->hash_cap) return NULL;
    size_t mask = a->hash_cap - 1;
    for (size_t i = (size_t)name_hash(s, n) & mask;; i = (i + 1) & mask) {
        uint32_t e = a->hash[i];
        if (!e) return NULL;
        obj *o = &a->objs[e - 1];
        if (o->name_len == n && memcmp(o->name, s, n) == 0) return o;
    }
}

static int valid_name(const tok *t) {
    if (t->n == 0 || t->n > NAME_MAX_LEN) return 0;
    char c = t->s[0];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_')) return 0;
    for (size_t i = 1; i < t->n; i++) {
        c = t->s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
            return 0;
    }
    return 1;
}

/* Adds a named object; the caller fills the rest. */
static pxl_status add_name(as *a, const tok *t, obj **out) {
    if (!valid_name(t))
        return fail_tok(a, t,
                        "'" TOKF "' is not a valid name (a letter or '_', then letters, digits, '_'; "
                        "at most %d characters)",
                        TOKA(t), NAME_MAX_LEN);
    obj *prev = find_name(a, t->s, t->n);
    if (prev) return fail_tok(a, t, "name '" TOKF "' is already defined on line %zu", TOKA(t), prev->def_line);
    if (a->n_objs >= UINT32_MAX - 1) return fail_tok(a, t, "too many names");
    if (!grow(a->ctx, (void **)&a->objs, &a->cap_objs, a->n_objs + 1, sizeof(obj))) return oom(a);
    /* keep the table at most half full */
    if ((a->n_objs + 1) * 2 > a->hash_cap) {
        size_t nc = a->hash_cap ? a->hash_cap * 2 : 64;
        if (nc > (size_t)-1 / sizeof(uint32_t)) return oom(a);
        uint32_t *h = pxl_calloc(a->ctx, nc, sizeof(uint32_t));
        if (!h) return oom(a);
        for (size_t k = 0; k < a->n_objs; k++) {
            obj *o = &a->objs[k];
            size_t i = (size_t)name_hash(o->name, o->name_len) & (nc - 1);
            while (h[i]) i = (i + 1) & (nc - 1);
            h[i] = (uint32_t)(k + 1);
        }
        pxl_free(a->ctx, a->hash);
        a->hash = h;
        a->hash_cap = nc;
    }
    obj *o = &a->objs[a->n_objs];
    memset(o, 0, sizeof *o);
    o->name = t->s;
    o->name_len = t->n;
    o->def_line = a->line;
    size_t i = (size_t)name_hash(t->s, t->n) & (a->hash_cap - 1);
    while (a->hash[i]) i = (i + 1) & (a->hash_cap - 1);
    a->hash[i] = (uint32_t)(a->n_objs + 1);
    a->n_objs++;
    *out = o;
    return PXL_OK;
}

/* A row operand: a name (any kind) or a number in [0, max]. */
static pxl_status get_row(as *a, const tok *t, uint32_t max, const char *what, uint32_t *row) {
    char c = t->s[0];
    if ((c >= '0' && c <= '9') || c == '-') {
        int64_t v;
        pxl_status s = get_int(a, t, 0, max, what, &v);
        if (s == PXL_OK) *row = (uint32_t)v;
        return s;
    }
    obj *o = find_name(a, t->s, t->n);
    if (!o) return fail_tok(a, t, "%s: unknown name '" TOKF "'", what, TOKA(t));
    if (o->row > max)
        return fail_tok(a, t, "%s: '" TOKF "' is row %u, over the operand's limit %u", what, TOKA(t),
                        o->row, max);
    *row = o->row;
    return PXL_OK;
}

/* ---- claiming bytes ---------------------------------------------------------- */

static pxl_status add_rec(as *a, uint64_t start, uint64_t end, uint8_t mask) {
    if (a->n_recs && a->recs[a->n_recs - 1].line == a->line && a->recs[a->n_recs - 1].end == start &&
        a->recs[a->n_recs - 1].mask == mask) {
        a->recs[a->n_recs - 1].end = end;
        return PXL_OK;
    }
    if (!grow(a->ctx, (void **)&a->recs, &a->cap_recs, a->n_recs + 1, sizeof(rec))) return oom(a);
    a->recs[a->n_recs++] = (rec){a->line, start, end, mask};
    return PXL_OK;
}

static pxl_status conflict(as *a, uint64_t px, int c) {
    size_t by = 0;
    for (size_t i = 0; i < a->n_recs; i++) {
        const rec *r = &a->recs[i];
        if (px >= r->start && px < r->end && (r->mask >> c & 1)) {
            by = r->line;
            break;
        }
    }
    uint32_t x = (uint32_t)(px % a->img->w), y = (uint32_t)(px / a->img->w);
    if (by)
        return fail_line(a, "pixel (%u, %u) channel %c is already set by line %zu", x, y, k_chan[c], by);
    return fail_line(a, "pixel (%u, %u) channel %c is already set", x, y, k_chan[c]);
}

/* Claims channels `mask` of pixels [start, end) (in the image: checked by callers). */
static pxl_status claim(as *a, uint64_t start, uint64_t end, uint8_t mask) {
    for (uint64_t p = start; p < end; p++)
        if (a->claim[p] & mask) {
            for (int c = 0; c < 4; c++)
                if (a->claim[p] & mask & (1u << c)) return conflict(a, p, c);
        }
    for (uint64_t p = start; p < end; p++) a->claim[p] = (uint8_t)(a->claim[p] | mask);
    return add_rec(a, start, end, mask);
}

/* Claims one byte of the stream that starts at pixel px0 (4 channels per pixel). */
static pxl_status claim_stream(as *a, uint64_t px0, uint64_t n_bytes) {
    uint64_t full = n_bytes / 4, rest = n_bytes % 4;
    pxl_status s = claim(a, px0, px0 + full, 0xF);
    if (s == PXL_OK && rest) s = claim(a, px0 + full, px0 + full + 1, (uint8_t)((1u << rest) - 1));
    return s;
}

static uint8_t *byte_at(as *a, uint64_t px, unsigned c) {
    return a->img->px + (size_t)px * 4 + c;
}

/* ---- the tokenizer ----------------------------------------------------------- */

/* A line being split into tokens; ';' starts a comment; ' ', '\t', '\r', ',' separate. */
typedef struct lexer {
    const char *s;
    size_t n, i;
} lexer;

/* The next token: 1, or 0 at the end of the line, or -1 after an error. */
static int lex_next(as *a, lexer *lx, tok *t, pxl_status *err) {
    while (lx->i < lx->n) {
        unsigned char c = (unsigned char)lx->s[lx->i];
        if (c == ';') break;
        if (c == ' ' || c == '\t' || c == '\r' || c == ',') {
            lx->i++;
            continue;
        }
        if (c < 0x20 || c == 0x7f) {
            *err = pxl_fail(a->ctx, PXL_ERR_FORMAT, "line %zu, col %zu: unexpected control character 0x%02x",
                            a->line, lx->i + 1, c);
            return -1;
        }
        size_t j = lx->i;
        while (j < lx->n) {
            unsigned char d = (unsigned char)lx->s[j];
            if (d == ';' || d == ' ' || d == '\t' || d == '\r' || d == ',' || d < 0x20 || d == 0x7f) break;
            j++;
        }
        *t = (tok){lx->s + lx->i, j - lx->i, lx->i + 1};
        lx->i = j;
        return 1;
    }
    lx->i = lx->n;
    return 0;
}

/* Most tokens a line other than .data may have (.r and .pixels: 3 + the widest row). */
#define MAX_LINE_TOKS (PXL_VM_MAX_SIDE + 16)

/*
 * Splits a line into a->toks. A .data line stops after its name: its values
 * are read from *lx as they are used, so a long line needs no token array.
 */
static pxl_status tokenize(as *a, lexer *lx, size_t *n_toks) {
    size_t k = 0;
    pxl_status err = PXL_OK;
    for (;;) {
        tok t;
        int r = lex_next(a, lx, &t, &err);
        if (r < 0) return err;
        if (r == 0) break;
        if (k >= MAX_LINE_TOKS)
            return pxl_fail(a->ctx, PXL_ERR_FORMAT, "line %zu, col %zu: more than %u tokens on one line", a->line,
                            t.col, (unsigned)MAX_LINE_TOKS);
        if (!grow(a->ctx, (void **)&a->toks, &a->cap_toks, k + 1, sizeof(tok))) return oom(a);
        a->toks[k++] = t;
        if (k == 2 && tok_is(&a->toks[0], ".data")) break;
    }
    *n_toks = k;
    return PXL_OK;
}

/* ---- directives -------------------------------------------------------------- */

static pxl_status need_image(as *a, const tok *t) {
    if (!a->img) return fail_tok(a, t, "'" TOKF "' before .image W H (the text must start with .image)", TOKA(t));
    return PXL_OK;
}

static pxl_status do_image(as *a, const tok *t, size_t n) {
    if (a->img) return fail_line(a, ".image appears twice");
    if (n != 3) return fail_line(a, ".image takes a width and a height: .image W H");
    int64_t w, h;
    int rw = parse_int(&t[1], 1, PXL_VM_MAX_SIDE, &w);
    int rh = parse_int(&t[2], 1, PXL_VM_MAX_SIDE, &h);
    if (rw == -1) return fail_tok(a, &t[1], ".image: width '" TOKF "' is not a number", TOKA(&t[1]));
    if (rh == -1) return fail_tok(a, &t[2], ".image: height '" TOKF "' is not a number", TOKA(&t[2]));
    if (rw == -2)
        return fail_line(a, ".image " TOKF " " TOKF ": width must be 1..%u", TOKA(&t[1]), TOKA(&t[2]),
                         PXL_VM_MAX_SIDE);
    if (rh == -2)
        return fail_line(a, ".image " TOKF " " TOKF ": height must be 1..%u", TOKA(&t[1]), TOKA(&t[2]),
                         PXL_VM_MAX_SIDE);
    uint64_t px = (uint64_t)w * (uint64_t)h;
    if (px > PXL_VM_MAX_PIXELS)
        return fail_line(a, ".image %lld %lld: %llu pixels, over the cap of %u", (long long)w, (long long)h,
                         (unsigned long long)px, PXL_VM_MAX_PIXELS);
    pxl_status s = pxl_image_create(a->ctx, (uint32_t)w, (uint32_t)h, &a->img);
    if (s != PXL_OK) return s;
    a->n_px = px;
    a->claim = pxl_calloc(a->ctx, (size_t)px, 1);
    if (!a->claim) return oom(a);
    return PXL_OK;
}

static pxl_status do_version(as *a, const tok *t, size_t n) {
    if (a->version_set) return fail_line(a, ".version appears twice");
    if (a->seen_other || a->next_x)
        return fail_line(a, ".version must come right after .image, before any other directive or instruction");
    if (n != 2) return fail_line(a, ".version takes one number: .version 0|1");
    int64_t v;
    if (parse_int(&t[1], 0, 1, &v) != 0)
        return fail_tok(a, &t[1], ".version: '" TOKF "' is not 0 or 1", TOKA(&t[1]));
    a->version = (int)v;
    a->version_set = 1;
    if (v == 1) {
        pxl_status s = claim(a, 0, 1, 0xF);
        if (s != PXL_OK) return s;
        uint8_t *p = byte_at(a, 0, 0);
        p[0] = PXL_VM_MAGIC_R;
        p[1] = PXL_VM_MAGIC_G;
        p[2] = PXL_VM_MAGIC_B;
        p[3] = PXL_VM_MAGIC_VERSION;
        a->next_x = 1;
    }
    return PXL_OK;
}

static pxl_status do_row(as *a, const tok *t, size_t n) {
    if (n != 3) return fail_line(a, ".row takes a name and a row: .row NAME Y");
    int64_t y;
    pxl_status s = get_int(a, &t[2], 0, (int64_t)a->img->h - 1, ".row", &y);
    if (s != PXL_OK) return s;
    obj *o;
    s = add_name(a, &t[1], &o);
    if (s != PXL_OK) return s;
    o->kind = K_ROW;
    o->row = (uint32_t)y;
    return PXL_OK;
}

static pxl_status do_tensor(as *a, const tok *t, size_t n) {
    if (a->version != 1)
        return fail_line(a, ".tensor needs a v1 image (.version 1); v0 matrices are declared with .matrix");
    if (n < 6 || n > 8)
        return fail_line(a, ".tensor takes NAME ROW int8|int32 ROWS COLS [mult=M] [shift=S]");
    int64_t row, rows, cols, mult = 1, shift = 0;
    pxl_status s = get_int(a, &t[2], 0, (int64_t)a->img->h - 1, ".tensor row", &row);
    if (s != PXL_OK) return s;
    uint8_t dtype;
    if (tok_is(&t[3], "int8")) dtype = PXL_VM_INT8;
    else if (tok_is(&t[3], "int32")) dtype = PXL_VM_INT32;
    else return fail_tok(a, &t[3], ".tensor: type '" TOKF "' is not int8 or int32", TOKA(&t[3]));
    if ((s = get_int(a, &t[4], 1, 65535, ".tensor rows", &rows)) != PXL_OK) return s;
    if ((s = get_int(a, &t[5], 1, 65535, ".tensor cols", &cols)) != PXL_OK) return s;
    int have_mult = 0, have_shift = 0;
    for (size_t i = 6; i < n; i++) {
        tok v = t[i];
        if (tok_prefix(&t[i], "mult=") && !have_mult) {
            v.s += 5, v.n -= 5, v.col += 5;
            if ((s = get_int(a, &v, INT32_MIN, INT32_MAX, ".tensor mult", &mult)) != PXL_OK) return s;
            have_mult = 1;
        } else if (tok_prefix(&t[i], "shift=") && !have_shift) {
            v.s += 6, v.n -= 6, v.col += 6;
            if ((s = get_int(a, &v, 0, 62, ".tensor shift", &shift)) != PXL_OK) return s;
            have_shift = 1;
        } else {
            return fail_tok(a, &t[i], ".tensor: unexpected '" TOKF "' (options: mult=M shift=S, each once)",
                            TOKA(&t[i]));
        }
    }
    uint64_t bytes = (uint64_t)rows * (uint64_t)cols * (dtype == PXL_VM_INT8 ? 1u : 4u);
    uint64_t start = (uint64_t)row * a->img->w;
    uint64_t end = start + PXL_VM_HEADER_PIXELS + (bytes + 3) / 4;
    if (end > a->n_px)
        return fail_line(a,
                         "tensor '" TOKF "' at row %lld (%lld x %lld %s, %llu bytes) needs pixels up to "
                         "(%llu, %llu), past the end of the %ux%u image",
                         TOKA(&t[1]), (long long)row, (long long)rows, (long long)cols,
                         dtype == PXL_VM_INT8 ? "int8" : "int32", (unsigned long long)bytes,
                         (unsigned long long)((end - 1) % a->img->w), (unsigned long long)((end - 1) / a->img->w),
                         a->img->w, a->img->h);
    obj *o;
    if ((s = add_name(a, &t[1], &o)) != PXL_OK) return s;
    o->kind = K_TENSOR;
    o->dtype = dtype;
    o->row = (uint32_t)row;
    o->data_px = start + PXL_VM_HEADER_PIXELS;
    o->total = bytes;
    if ((s = claim(a, start, start + PXL_VM_HEADER_PIXELS, 0xF)) != PXL_OK) return s;
    if ((s = claim_stream(a, o->data_px, bytes)) != PXL_OK) return s;
    uint8_t *h = byte_at(a, start, 0);
    uint32_t m = (uint32_t)(int32_t)mult;
    uint8_t hdr[12] = {PXL_VM_TENSOR_MAGIC, dtype, (uint8_t)shift, 0,
                       (uint8_t)cols, (uint8_t)(cols >> 8), (uint8_t)rows, (uint8_t)(rows >> 8),
                       (uint8_t)m, (uint8_t)(m >> 8), (uint8_t)(m >> 16), (uint8_t)(m >> 24)};
    memcpy(h, hdr, sizeof hdr);
    return PXL_OK;
}

static pxl_status do_matrix(as *a, const tok *t, size_t n) {
    if (a->version != 0)
        return fail_line(a, ".matrix is for v0 images; v1 images declare .tensor");
    if (n != 5) return fail_line(a, ".matrix takes NAME ROW ROWS COLS");
    int64_t row, rows, cols;
    pxl_status s = get_int(a, &t[2], 0, (int64_t)a->img->h - 1, ".matrix row", &row);
    if (s != PXL_OK) return s;
    if ((s = get_int(a, &t[3], 0, 65535, ".matrix rows", &rows)) != PXL_OK) return s;
    if ((s = get_int(a, &t[4], 0, 65535, ".matrix cols", &cols)) != PXL_OK) return s;
    uint64_t elems = (uint64_t)rows * (uint64_t)cols;
    uint64_t start = (uint64_t)row * a->img->w;
    if (start + 1 + elems > a->n_px)
        return fail_line(a,
                         "matrix '" TOKF "' at row %lld (%lld x %lld) needs %llu pixels from (0, %lld), past the "
                         "end of the %ux%u image",
                         TOKA(&t[1]), (long long)row, (long long)rows, (long long)cols,
                         (unsigned long long)(1 + elems), (long long)row, a->img->w, a->img->h);
    obj *o;
    if ((s = add_name(a, &t[1], &o)) != PXL_OK) return s;
    o->kind = K_MATRIX;
    o->row = (uint32_t)row;
    o->data_px = start + 1;
    o->total = elems;
    if ((s = claim(a, start, start + 1, 0xF)) != PXL_OK) return s;
    if ((s = claim(a, start + 1, start + 1 + elems, 0x1)) != PXL_OK) return s;
    uint8_t *h = byte_at(a, start, 0);
    h[0] = (uint8_t)cols;
    h[1] = (uint8_t)(cols >> 8);
    h[2] = (uint8_t)rows;
    h[3] = (uint8_t)(rows >> 8);
    return PXL_OK;
}

/* Writes data bytes (tensors) or elements (matrices) from src at o->filled. */
static void put_data(as *a, obj *o, const uint8_t *src, uint64_t n) {
    for (uint64_t i = 0; i < n; i++) {
        uint64_t k = o->filled + i;
        if (o->kind == K_TENSOR) *byte_at(a, o->data_px + k / 4, (unsigned)(k % 4)) = src[i];
        else *byte_at(a, o->data_px + k, 0) = src[i];
    }
    o->filled += n;
}

static pxl_status too_much(as *a, const tok *t, const obj *o, uint64_t adding) {
    return fail_tok(a, t,
                    "too much data for '%.*s': it holds %llu bytes, %llu are set, this adds %llu",
                    (int)o->name_len, o->name, (unsigned long long)o->total,
                    (unsigned long long)o->filled, (unsigned long long)adding);
}

static pxl_status data_file(as *a, const tok *t, obj *o, unsigned esize) {
    tok p = *t;
    p.s += 5, p.n -= 5;
    if (p.n == 0) return fail_tok(a, t, "file: needs a path (file:PATH)");
    size_t blen = (a->base_dir && p.s[0] != '/') ? strlen(a->base_dir) : 0;
    size_t need;
    if (!pxl_add_size(blen, p.n, &need) || !pxl_add_size(need, 2, &need)) return oom(a);
    char *path = pxl_alloc(a->ctx, need);
    if (!path) return oom(a);
    size_t k = 0;
    if (blen) {
        memcpy(path, a->base_dir, blen);
        k = blen;
        if (path[k - 1] != '/') path[k++] = '/';
    }
    memcpy(path + k, p.s, p.n);
    path[k + p.n] = '\0';
    pxl_status s = PXL_OK; /* (the tokenizer refuses NUL bytes, so the path has none) */
    /* without blocking on a FIFO or device: a regular file is required */
    struct stat st;
    char why[512];
    int fd = pxl_open_regular(path, &st, why, sizeof why);
    FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (!f) {
        if (fd >= 0) {
            snprintf(why, sizeof why, "cannot open %.200s: %s", path, strerror(errno));
            close(fd);
        }
        s = fail_tok(a, t, "%s", why);
        goto out;
    }
    uint64_t size = (uint64_t)st.st_size;
    uint64_t room = o->total - o->filled;
    if (size > room) {
        s = fail_tok(a, t, "'%.200s' has %llu bytes, but '%.*s' has room for %llu more (it holds %llu)", path,
                     (unsigned long long)size, (int)o->name_len, o->name, (unsigned long long)room,
                     (unsigned long long)o->total);
        fclose(f);
        goto out;
    }
    if (size % esize) {
        s = fail_tok(a, t, "'%.200s' has %llu bytes, not a whole number of %u-byte elements", path,
                     (unsigned long long)size, esize);
        fclose(f);
        goto out;
    }
    uint8_t buf[4096];
    uint64_t left = size;
    while (left) {
        size_t want = left < sizeof buf ? (size_t)left : sizeof buf;
        size_t got = fread(buf, 1, want, f);
        if (got != want) {
            s = fail_tok(a, t, "'%.200s': read failed or the file shrank", path);
            break;
        }
        put_data(a, o, buf, got);
        left -= got;
    }
    if (s == PXL_OK && fgetc(f) != EOF) s = fail_tok(a, t, "'%.200s' grew while it was read", path);
    fclose(f);
out:
    pxl_free(a->ctx, path);
    return s;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static pxl_status do_data(as *a, const tok *t, size_t n, lexer *lx) {
    if (n < 2) return fail_line(a, ".data takes a name and values: .data NAME VALUE...");
    obj *o = find_name(a, t[1].s, t[1].n);
    if (!o) return fail_tok(a, &t[1], ".data: unknown name '" TOKF "' (declare it with .tensor or .matrix first)", TOKA(&t[1]));
    if (o->kind == K_ROW)
        return fail_tok(a, &t[1], ".data: '" TOKF "' is a row label; use .r or .pixels for rows", TOKA(&t[1]));
    o->data_line = a->line;
    unsigned esize = o->kind == K_TENSOR && o->dtype == PXL_VM_INT32 ? 4 : 1;
    int64_t lo = o->kind == K_MATRIX ? 0 : o->dtype == PXL_VM_INT8 ? -128 : INT32_MIN;
    int64_t hi = o->kind == K_MATRIX ? 255 : o->dtype == PXL_VM_INT8 ? 127 : INT32_MAX;
    for (;;) {
        tok vt;
        pxl_status s = PXL_OK;
        int got = lex_next(a, lx, &vt, &s);
        if (got < 0) return s;
        if (got == 0) break;
        const tok *v = &vt;
        if (tok_prefix(v, "file:")) {
            if ((s = data_file(a, v, o, esize)) != PXL_OK) return s;
        } else if (tok_prefix(v, "hex:")) {
            size_t digits = v->n - 4;
            if (digits == 0 || digits % 2) return fail_tok(a, v, "hex: needs an even, non-zero number of hex digits");
            uint64_t bytes = digits / 2;
            if (bytes % esize)
                return fail_tok(a, v, "hex: gives %llu bytes, not a whole number of %u-byte elements",
                                (unsigned long long)bytes, esize);
            if (bytes > o->total - o->filled) return too_much(a, v, o, bytes);
            for (size_t k = 0; k < bytes; k++) {
                int h1 = hexval(v->s[4 + 2 * k]), h2 = hexval(v->s[5 + 2 * k]);
                if (h1 < 0 || h2 < 0)
                    return fail_tok(a, v, "hex: '%.2s' at offset %zu is not a hex byte", v->s + 4 + 2 * k, 2 * k);
            }
            for (size_t k = 0; k < bytes; k++) {
                uint8_t b = (uint8_t)(hexval(v->s[4 + 2 * k]) << 4 | hexval(v->s[5 + 2 * k]));
                put_data(a, o, &b, 1);
            }
        } else {
            int64_t x;
            int r = parse_int(v, lo, hi, &x);
            if (r == -1)
                return fail_tok(a, v, "'" TOKF "' is not a value (a number, hex:BYTES or file:PATH)", TOKA(v));
            if (r == -2)
                return fail_tok(a, v, "'" TOKF "' is out of range for %s (%lld..%lld)", TOKA(v),
                                o->kind == K_MATRIX ? "a v0 matrix" : o->dtype == PXL_VM_INT8 ? "int8" : "int32",
                                (long long)lo, (long long)hi);
            if (esize > o->total - o->filled) return too_much(a, v, o, esize);
            uint32_t u = (uint32_t)(int32_t)x;
            uint8_t b[4] = {(uint8_t)u, (uint8_t)(u >> 8), (uint8_t)(u >> 16), (uint8_t)(u >> 24)};
            put_data(a, o, b, esize);
        }
    }
    return PXL_OK;
}

/* .r ROW X0 V...: R channel of pixels (X0.., ROW), values 0..255, inside the row. */
static pxl_status do_r(as *a, const tok *t, size_t n) {
    if (n < 4) return fail_line(a, ".r takes a row, a column and values: .r ROW X0 V...");
    uint32_t y;
    pxl_status s = get_row(a, &t[1], a->img->h - 1, ".r row", &y);
    if (s != PXL_OK) return s;
    int64_t x0;
    if ((s = get_int(a, &t[2], 0, (int64_t)a->img->w - 1, ".r column", &x0)) != PXL_OK) return s;
    uint64_t count = n - 3;
    if ((uint64_t)x0 + count > a->img->w)
        return fail_line(a, ".r: %llu values from x=%lld run past the row's end (width %u)",
                         (unsigned long long)count, (long long)x0, a->img->w);
    for (size_t i = 3; i < n; i++) {
        int64_t v;
        if ((s = get_int(a, &t[i], 0, 255, ".r value", &v)) != PXL_OK) return s;
    }
    uint64_t p0 = (uint64_t)y * a->img->w + (uint64_t)x0;
    if ((s = claim(a, p0, p0 + count, 0x1)) != PXL_OK) return s;
    for (size_t i = 3; i < n; i++) {
        int64_t v;
        parse_int(&t[i], 0, 255, &v);
        *byte_at(a, p0 + (i - 3), 0) = (uint8_t)v;
    }
    return PXL_OK;
}

/* .pixels X Y RRGGBBAA...: whole pixels in hex; ".." leaves a channel unset. */
static pxl_status do_pixels(as *a, const tok *t, size_t n) {
    if (n < 4) return fail_line(a, ".pixels takes a column, a row and pixels: .pixels X Y RRGGBBAA...");
    int64_t x0;
    pxl_status s = get_int(a, &t[1], 0, (int64_t)a->img->w - 1, ".pixels column", &x0);
    if (s != PXL_OK) return s;
    uint32_t y;
    if ((s = get_row(a, &t[2], a->img->h - 1, ".pixels row", &y)) != PXL_OK) return s;
    uint64_t count = n - 3;
    if ((uint64_t)x0 + count > a->img->w)
        return fail_line(a, ".pixels: %llu pixels from x=%lld run past the row's end (width %u)",
                         (unsigned long long)count, (long long)x0, a->img->w);
    uint64_t p0 = (uint64_t)y * a->img->w + (uint64_t)x0;
    for (size_t i = 3; i < n; i++) {
        const tok *v = &t[i];
        if (v->n != 8)
            return fail_tok(a, v, "pixel '" TOKF "' is not 8 hex digits RRGGBBAA ('..' for a channel left unset)",
                            TOKA(v));
        uint8_t mask = 0;
        for (unsigned c = 0; c < 4; c++) {
            char h = v->s[2 * c], l = v->s[2 * c + 1];
            if (h == '.' && l == '.') continue;
            if (hexval(h) < 0 || hexval(l) < 0)
                return fail_tok(a, v, "pixel '" TOKF "': channel %c '%c%c' is not a hex byte or '..'", TOKA(v),
                                k_chan[c], h, l);
            mask = (uint8_t)(mask | (1u << c));
        }
        if (!mask) continue;
        uint64_t p = p0 + (i - 3);
        if ((s = claim(a, p, p + 1, mask)) != PXL_OK) return s;
        for (unsigned c = 0; c < 4; c++)
            if (mask >> c & 1)
                *byte_at(a, p, c) = (uint8_t)(hexval(v->s[2 * c]) << 4 | hexval(v->s[2 * c + 1]));
    }
    return PXL_OK;
}

/* ---- instructions ------------------------------------------------------------ */

static const pxl_vm_opinfo *find_op(int version, const tok *t) {
    for (size_t i = 0; i < PXL_VM_N_OPS; i++)
        if (pxl_vm_ops[i].version == version && tok_is(t, pxl_vm_ops[i].name)) return &pxl_vm_ops[i];
    return NULL;
}

static pxl_status do_insn(as *a, const tok *t, size_t n) {
    const pxl_vm_opinfo *info = find_op(a->version, &t[0]);
    if (!info) {
        char known[256];
        size_t k = 0;
        known[0] = '\0';
        for (size_t i = 0; i < PXL_VM_N_OPS; i++)
            if (pxl_vm_ops[i].version == a->version && k + 16 < sizeof known)
                k += (size_t)snprintf(known + k, sizeof known - k, "%s%s", k ? " " : "", pxl_vm_ops[i].name);
        const pxl_vm_opinfo *other = find_op(!a->version, &t[0]);
        if (other)
            return fail_line(a, "'" TOKF "' is a v%d instruction, but this is a v%d image (v%d has: %s)", TOKA(&t[0]),
                             other->version, a->version, a->version, known);
        return fail_line(a, "unknown mnemonic '" TOKF "' (v%d has: %s)", TOKA(&t[0]), a->version, known);
    }
    size_t want = (size_t)info->uses_out + info->uses_a + info->uses_b + info->uses_imm;
    if (n - 1 != want) {
        char form[64];
        snprintf(form, sizeof form, "%s%s%s%s", info->uses_out ? " OUT" : "", info->uses_a ? " A" : "",
                 info->uses_b ? " B" : "", info->uses_imm ? " IMM" : "");
        return fail_line(a, "%s takes %zu operand%s (%s%s), got %zu", info->name, want, want == 1 ? "" : "s",
                         info->name, form, n - 1);
    }
    uint32_t w = a->version ? 2 : 1;
    if ((uint64_t)a->next_x + w > a->img->w)
        return fail_line(a, "row 0 is full: this instruction would need x=%u..%u, but the image is %u wide", a->next_x,
                         a->next_x + w - 1, a->img->w);
    pxl_status s = claim(a, a->next_x, a->next_x + w, 0xF);
    if (s != PXL_OK) return s;
    if (!grow(a->ctx, (void **)&a->fix, &a->cap_fix, a->n_fix + 1, sizeof(fixup))) return oom(a);
    fixup *f = &a->fix[a->n_fix++];
    memset(f, 0, sizeof *f);
    f->line = a->line;
    f->x = a->next_x;
    f->info = info;
    size_t k = 1;
    if (info->uses_out) f->ops[0] = t[k++];
    if (info->uses_a) f->ops[1] = t[k++];
    if (info->uses_b) f->ops[2] = t[k++];
    if (info->uses_imm) f->ops[3] = t[k++];
    a->next_x += w;
    return PXL_OK;
}

static pxl_status resolve(as *a, const fixup *f) {
    a->line = f->line;
    const pxl_vm_opinfo *info = f->info;
    uint32_t max = a->version ? 65535u : 255u;
    uint32_t out = 0, ra = 0, rb = 0;
    int64_t imm = 0;
    pxl_status s = PXL_OK;
    if (info->uses_out) s = get_row(a, &f->ops[0], max, "out", &out);
    if (s == PXL_OK && info->uses_a) s = get_row(a, &f->ops[1], max, "a", &ra);
    if (s == PXL_OK && info->uses_b) s = get_row(a, &f->ops[2], max, "b", &rb);
    if (s == PXL_OK && info->uses_imm) s = get_int(a, &f->ops[3], 0, 255, "imm", &imm);
    if (s != PXL_OK) return s;
    uint8_t *p = byte_at(a, f->x, 0);
    if (a->version == 0) {
        p[0] = info->op;
        if (info->op == PXL_OP_V0_RELU) {
            p[1] = (uint8_t)ra;
            p[2] = (uint8_t)out;
            p[3] = 0;
        } else {
            p[1] = (uint8_t)ra;
            p[2] = (uint8_t)rb;
            p[3] = (uint8_t)out;
        }
    } else {
        uint8_t b[8] = {info->op, (uint8_t)out, (uint8_t)(out >> 8), (uint8_t)imm,
                        (uint8_t)ra, (uint8_t)(ra >> 8), (uint8_t)rb, (uint8_t)(rb >> 8)};
        memcpy(p, b, 8);
    }
    return PXL_OK;
}

/* ---- the driver -------------------------------------------------------------- */

static pxl_status do_line(as *a, size_t n, lexer *lx) {
    const tok *t = a->toks;
    if (n == 0) return PXL_OK;
    if (t[0].s[0] == '.') {
        if (tok_is(&t[0], ".image")) return do_image(a, t, n);
        pxl_status s = need_image(a, &t[0]);
        if (s != PXL_OK) return s;
        if (tok_is(&t[0], ".version")) return do_version(a, t, n);
        a->seen_other = 1;
        if (tok_is(&t[0], ".row")) return do_row(a, t, n);
        if (tok_is(&t[0], ".tensor")) return do_tensor(a, t, n);
        if (tok_is(&t[0], ".matrix")) return do_matrix(a, t, n);
        if (tok_is(&t[0], ".data")) return do_data(a, t, n, lx);
        if (tok_is(&t[0], ".r")) return do_r(a, t, n);
        if (tok_is(&t[0], ".pixels")) return do_pixels(a, t, n);
        return fail_line(a, "unknown directive '" TOKF "' (known: .image .version .row .tensor .matrix .data .r .pixels)",
                         TOKA(&t[0]));
    }
    pxl_status s = need_image(a, &t[0]);
    if (s != PXL_OK) return s;
    return do_insn(a, t, n);
}

static void as_free(as *a) {
    pxl_free(a->ctx, a->claim);
    pxl_free(a->ctx, a->objs);
    pxl_free(a->ctx, a->hash);
    pxl_free(a->ctx, a->recs);
    pxl_free(a->ctx, a->fix);
    pxl_free(a->ctx, a->toks);
}

pxl_status pxl_vm_asm(pxl_ctx *ctx, const char *text, size_t len, const char *base_dir, pxl_image **out) {
    as a;
    memset(&a, 0, sizeof a);
    a.ctx = ctx;
    a.base_dir = base_dir;
    pxl_status s = PXL_OK;
    if (!text && len) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_vm_asm: text is NULL");
    size_t i = 0;
    a.line = 0;
    while (i < len && s == PXL_OK) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - text) : len;
        a.line++;
        size_t n = 0;
        lexer lx = {text + i, end - i, 0};
        s = tokenize(&a, &lx, &n);
        if (s == PXL_OK) s = do_line(&a, n, &lx);
        i = nl ? end + 1 : len;
    }
    if (s == PXL_OK && !a.img) {
        a.line = a.line ? a.line : 1;
        s = fail_line(&a, "no .image directive (the text must start with .image W H)");
    }
    for (size_t k = 0; s == PXL_OK && k < a.n_fix; k++) s = resolve(&a, &a.fix[k]);
    for (size_t k = 0; s == PXL_OK && k < a.n_objs; k++) {
        const obj *o = &a.objs[k];
        if (o->kind == K_ROW || o->filled == 0 || o->filled == o->total) continue;
        a.line = o->data_line;
        if (o->kind == K_TENSOR) {
            unsigned es = o->dtype == PXL_VM_INT32 ? 4 : 1;
            s = fail_line(&a, "'%.*s' (line %zu) got %llu of its %llu elements (.data must fill a tensor, or be left out for zeros)",
                          (int)o->name_len, o->name, o->def_line, (unsigned long long)(o->filled / es),
                          (unsigned long long)(o->total / es));
        } else {
            s = fail_line(&a, "'%.*s' (line %zu) got %llu of its %llu elements (.data must fill a matrix, or be left out for zeros)",
                          (int)o->name_len, o->name, o->def_line, (unsigned long long)o->filled,
                          (unsigned long long)o->total);
        }
    }
    if (s == PXL_OK) {
        *out = a.img;
        a.img = NULL;
    }
    pxl_image_free(a.img);
    as_free(&a);
    return s;
}
