/*
 * Data tables for fits (pxl/ad.h, pxl_ad_table_*): columns of numbers in
 * text, whitespace- or comma-separated, with an optional header line.
 *
 * One pass over the text, line by line. Each line is cut into fields (at
 * most PXL_AD_TABLE_MAX_COLUMNS); the first line with fields decides the
 * column count and whether it is a header. Values are appended to one
 * growing row-major array, the source line of each row to another.
 */
#include "ad_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pxl_ad_table {
    pxl_ctx *ctx;
    size_t rows, cols;
    double *data;   /* rows * cols */
    size_t *lines;  /* rows: 1-based source line */
    char **names;   /* cols, NUL-terminated */
    int has_header;
};

/* A field of a line: bytes [at, at + n) of the text. */
typedef struct field {
    size_t at, n;
} field;

typedef struct reader {
    pxl_ctx *ctx;
    const char *s;
    size_t len;
    size_t line;       /* 1-based, of the line being read */
    size_t line_start; /* offset of its first byte */
    field *fields;     /* PXL_AD_TABLE_MAX_COLUMNS + 1 */
    size_t n_fields;
} reader;

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

static pxl_status fail_field(reader *r, const field *f, const char *what) {
    char q[200];
    return pxl_fail(r->ctx, PXL_ERR_FORMAT, "line %zu, column %zu: '%s' %s", r->line, f->at - r->line_start + 1,
                    ad_quote(r->s + f->at, f->n, q, sizeof q), what);
}

/*
 * Cuts the line [start, end) (without its line break) into r->fields: at a
 * comma when the line (before any '#') has one, else at runs of blanks.
 * Returns PXL_OK, or PXL_ERR_FORMAT for an empty comma field or too many fields.
 */
static pxl_status split(reader *r, size_t start, size_t end) {
    r->n_fields = 0;
    size_t stop = start;
    int comma = 0;
    while (stop < end && r->s[stop] != '#') {
        if (r->s[stop] == ',') comma = 1;
        stop++;
    }
    size_t i = start;
    if (!comma) {
        for (;;) {
            while (i < stop && is_blank(r->s[i])) i++;
            if (i >= stop) break;
            size_t b = i;
            while (i < stop && !is_blank(r->s[i])) i++;
            if (r->n_fields == PXL_AD_TABLE_MAX_COLUMNS)
                return pxl_fail(r->ctx, PXL_ERR_FORMAT, "line %zu, column %zu: more than %d columns", r->line,
                                b - r->line_start + 1, PXL_AD_TABLE_MAX_COLUMNS);
            r->fields[r->n_fields].at = b;
            r->fields[r->n_fields].n = i - b;
            r->n_fields++;
        }
        return PXL_OK;
    }
    for (;;) {
        size_t b = i;
        while (i < stop && r->s[i] != ',') i++;
        size_t e = i;
        size_t fb = b, fe = e;
        while (fb < fe && is_blank(r->s[fb])) fb++;
        while (fe > fb && is_blank(r->s[fe - 1])) fe--;
        if (fb == fe)
            return pxl_fail(r->ctx, PXL_ERR_FORMAT, "line %zu, column %zu: empty field", r->line, b - r->line_start + 1);
        if (r->n_fields == PXL_AD_TABLE_MAX_COLUMNS)
            return pxl_fail(r->ctx, PXL_ERR_FORMAT, "line %zu, column %zu: more than %d columns", r->line,
                            fb - r->line_start + 1, PXL_AD_TABLE_MAX_COLUMNS);
        r->fields[r->n_fields].at = fb;
        r->fields[r->n_fields].n = fe - fb;
        r->n_fields++;
        if (i >= stop) break;
        i++; /* the comma */
    }
    return PXL_OK;
}

/* What a field is, as a number. */
typedef enum num_kind {
    NUM_OK,        /* a finite number */
    NUM_NOT,       /* not a number */
    NUM_NONFINITE, /* a spelling of NaN or Inf, or out of range */
    NUM_LONG       /* longer than 127 bytes */
} num_kind;

/*
 * Parses a field as a decimal number: [+-] digits [. digits] [(e|E) [+-]
 * digits], at least one digit before the exponent.
 */
static num_kind number(const char *s, size_t n, double *v) {
    size_t i = 0, digits = 0;
    if (i < n && (s[i] == '+' || s[i] == '-')) i++;
    size_t word = i;
    while (i < n && s[i] >= '0' && s[i] <= '9') i++, digits++;
    if (i < n && s[i] == '.') {
        i++;
        while (i < n && s[i] >= '0' && s[i] <= '9') i++, digits++;
    }
    if (digits == 0) {
        /* inf, infinity, nan (any case) */
        size_t m = n - word;
        const char *w = s + word;
        static const char *const spellings[] = {"inf", "infinity", "nan"};
        for (size_t k = 0; k < 3; k++) {
            size_t sl = strlen(spellings[k]), j = 0;
            if (m != sl) continue;
            while (j < m && (w[j] | 0x20) == spellings[k][j]) j++;
            if (j == m) return NUM_NONFINITE;
        }
        return NUM_NOT;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) i++;
        size_t ed = 0;
        while (i < n && s[i] >= '0' && s[i] <= '9') i++, ed++;
        if (ed == 0) return NUM_NOT;
    }
    if (i != n) return NUM_NOT;
    char buf[128];
    if (n >= sizeof buf) return NUM_LONG;
    memcpy(buf, s, n);
    buf[n] = '\0';
    *v = strtod(buf, NULL);
    return isfinite(*v) ? NUM_OK : NUM_NONFINITE;
}

static int is_name(const char *s, size_t n) {
    if (n == 0) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        int digit = c >= '0' && c <= '9';
        if (!alpha && !(digit && i > 0)) return 0;
    }
    return 1;
}

void pxl_ad_table_free(pxl_ad_table *t) {
    if (!t) return;
    pxl_ctx *ctx = t->ctx;
    if (t->names)
        for (size_t c = 0; c < t->cols; c++) pxl_free(ctx, t->names[c]);
    pxl_free(ctx, t->names);
    pxl_free(ctx, t->data);
    pxl_free(ctx, t->lines);
    pxl_free(ctx, t);
}

static char *dup_n(pxl_ctx *ctx, const char *s, size_t n) {
    char *d = pxl_alloc(ctx, n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

/* Takes the header fields as names (quotes stripped); none of them is a number. */
static pxl_status header_names(reader *r, pxl_ad_table *t) {
    for (size_t c = 0; c < t->cols; c++) {
        field f = r->fields[c];
        if (f.n >= 2 && r->s[f.at] == '"' && r->s[f.at + f.n - 1] == '"') {
            f.at++;
            f.n -= 2;
        }
        if (!is_name(r->s + f.at, f.n))
            return fail_field(r, &r->fields[c], "is not a column name (letters, digits and _, not starting with a digit)");
        for (size_t d = 0; d < c; d++)
            if (strlen(t->names[d]) == f.n && memcmp(t->names[d], r->s + f.at, f.n) == 0)
                return fail_field(r, &r->fields[c], "names a column twice");
        t->names[c] = dup_n(r->ctx, r->s + f.at, f.n);
        if (!t->names[c]) return pxl_fail(r->ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_ad_table_parse: out of memory");
    }
    return PXL_OK;
}

static pxl_status default_names(pxl_ctx *ctx, pxl_ad_table *t, const pxl_ad_table_options *o) {
    for (size_t c = 0; c < t->cols; c++) {
        char buf[32];
        const char *src = buf;
        if (o && o->n_names) src = o->names[c];
        else if (c == t->cols - 1) snprintf(buf, sizeof buf, "y");
        else if (c == 0) snprintf(buf, sizeof buf, "x");
        else snprintf(buf, sizeof buf, "x%zu", c + 1);
        pxl_free(ctx, t->names[c]);
        t->names[c] = dup_n(ctx, src, strlen(src));
        if (!t->names[c]) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_ad_table_parse: out of memory");
    }
    return PXL_OK;
}

/* Appends a row of t->cols values. */
static pxl_status add_row(reader *r, pxl_ad_table *t, size_t *cap) {
    if (t->rows == *cap) {
        size_t nc = *cap ? *cap * 2 : 64, bytes;
        if (nc < *cap || !pxl_mul_size(nc, t->cols, &bytes) || !pxl_mul_size(bytes, sizeof(double), &bytes))
            return pxl_fail(r->ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_ad_table_parse: too many values");
        double *d = pxl_realloc(r->ctx, t->data, bytes);
        if (!d) return pxl_fail(r->ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_ad_table_parse: out of memory");
        t->data = d;
        size_t *l = pxl_realloc(r->ctx, t->lines, nc * sizeof *l);
        if (!l) return pxl_fail(r->ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_ad_table_parse: out of memory");
        t->lines = l;
        *cap = nc;
    }
    double *row = t->data + t->rows * t->cols;
    for (size_t c = 0; c < t->cols; c++) {
        const field *f = &r->fields[c];
        num_kind k = number(r->s + f->at, f->n, &row[c]);
        if (k == NUM_NONFINITE) return fail_field(r, f, "is not a finite number (NaN and Inf cannot be fitted)");
        if (k == NUM_LONG) return fail_field(r, f, "is longer than 127 characters");
        if (k != NUM_OK) return fail_field(r, f, "is not a number");
    }
    t->lines[t->rows++] = r->line;
    return PXL_OK;
}

pxl_status pxl_ad_table_parse(pxl_ctx *ctx, const char *text, size_t len, const pxl_ad_table_options *opts,
                              pxl_ad_table **out) {
    PXL_REQUIRE_CTX(ctx);
    PXL_REQUIRE(ctx, "pxl_ad_table_parse", out);
    *out = NULL;
    if (!text && len) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_ad_table_parse: text is NULL");
    if (opts && opts->n_names) {
        if (!opts->names) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_ad_table_parse: opts->names is NULL");
        for (size_t i = 0; i < opts->n_names; i++) {
            const char *n = opts->names[i];
            if (!n || !is_name(n, strlen(n)))
                return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "column name %zu ('%s') is not a name (letters, digits and _, "
                                "not starting with a digit)", i + 1, n ? n : "(null)");
            for (size_t j = 0; j < i; j++)
                if (strcmp(opts->names[j], n) == 0)
                    return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "column name '%s' is given twice", n);
        }
    }
    reader r;
    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    r.s = text ? text : "";
    r.len = len;
    pxl_ad_table *t = pxl_calloc(ctx, 1, sizeof *t);
    r.fields = pxl_alloc(ctx, (PXL_AD_TABLE_MAX_COLUMNS + 1) * sizeof *r.fields);
    if (!t || !r.fields) {
        pxl_free(ctx, t);
        pxl_free(ctx, r.fields);
        return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_ad_table_parse: out of memory");
    }
    t->ctx = ctx;
    pxl_status st = PXL_OK;
    size_t cap = 0, first_line = 0;
    size_t pos = 0;
    while (pos < len && st == PXL_OK) {
        r.line++;
        r.line_start = pos;
        size_t end = pos;
        while (end < len && r.s[end] != '\n') end++;
        size_t next = end < len ? end + 1 : end;
        for (size_t i = pos; i < end; i++) {
            if (r.s[i] == '\0') {
                st = pxl_fail(ctx, PXL_ERR_FORMAT, "line %zu, column %zu: a NUL byte (is this a text file?)", r.line,
                              i - pos + 1);
                break;
            }
        }
        if (st != PXL_OK) break;
        st = split(&r, pos, end);
        pos = next;
        if (st != PXL_OK || r.n_fields == 0) continue;
        if (t->cols == 0) {
            /* the first row: its width; a header when not all fields are numbers */
            t->cols = r.n_fields;
            first_line = r.line;
            t->names = pxl_calloc(ctx, t->cols, sizeof *t->names);
            if (!t->names) {
                st = pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_ad_table_parse: out of memory");
                break;
            }
            size_t numbers = 0, first_word = t->cols;
            for (size_t c = 0; c < t->cols; c++) {
                double v;
                if (number(r.s + r.fields[c].at, r.fields[c].n, &v) != NUM_NOT) numbers++;
                else if (first_word == t->cols) first_word = c;
            }
            if (numbers == 0) {
                t->has_header = 1;
                st = header_names(&r, t);
                continue;
            }
            if (numbers < t->cols) {
                st = fail_field(&r, &r.fields[first_word],
                                "is not a number (the first line mixes numbers and names: a header line must be "
                                "all names, a data line all numbers)");
                break;
            }
        } else if (r.n_fields != t->cols) {
            const field *f = r.n_fields > t->cols ? &r.fields[t->cols] : NULL;
            size_t col = f ? f->at - r.line_start + 1 : end - r.line_start + 1;
            st = pxl_fail(ctx, PXL_ERR_FORMAT, "line %zu, column %zu: %zu field%s, but line %zu has %zu", r.line, col,
                          r.n_fields, r.n_fields == 1 ? "" : "s", first_line, t->cols);
            break;
        }
        st = add_row(&r, t, &cap);
    }
    if (st == PXL_OK && t->rows == 0)
        st = pxl_fail(ctx, PXL_ERR_FORMAT, t->cols ? "no data rows (only a header line)" : "no data rows (the input is %s)",
                      len ? "blank or comments only" : "empty");
    if (st == PXL_OK && opts && opts->n_names) {
        if (opts->n_names != t->cols)
            st = pxl_fail(ctx, PXL_ERR_FORMAT, "%zu column name%s given, but the data has %zu column%s (line %zu)",
                          opts->n_names, opts->n_names == 1 ? "" : "s", t->cols, t->cols == 1 ? "" : "s", first_line);
        else
            st = default_names(ctx, t, opts);
    } else if (st == PXL_OK && !t->has_header) {
        st = default_names(ctx, t, NULL);
    }
    pxl_free(ctx, r.fields);
    if (st != PXL_OK) {
        pxl_ad_table_free(t);
        return st;
    }
    *out = t;
    return PXL_OK;
}

size_t pxl_ad_table_rows(const pxl_ad_table *t) { return t ? t->rows : 0; }
size_t pxl_ad_table_columns(const pxl_ad_table *t) { return t ? t->cols : 0; }
const char *pxl_ad_table_name(const pxl_ad_table *t, size_t c) { return t && c < t->cols ? t->names[c] : NULL; }
const double *pxl_ad_table_data(const pxl_ad_table *t) { return t ? t->data : NULL; }
int pxl_ad_table_has_header(const pxl_ad_table *t) { return t ? t->has_header : 0; }
size_t pxl_ad_table_line(const pxl_ad_table *t, size_t r) { return t && r < t->rows ? t->lines[r] : 0; }
