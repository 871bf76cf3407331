/*
 * Expressions to graph values (pxl/ad.h, pxl_ad_parse): a recursive-descent
 * parser over a pointer and a length. Every cycle of the recursion
 * (parentheses, call arguments, signs, exponents) goes through parse_unary,
 * which counts the depth, so the stack is bounded by PXL_AD_PARSE_MAX_DEPTH
 * cycles whatever the input.
 *
 * A parsed operand is a term: either a constant not yet in the graph (is_k,
 * k) or a graph value (v). Constants stay out of the graph until an operand
 * needs them, so arithmetic on them folds and an integer exponent can be
 * seen as one (x^-2 is powi(x, -2)).
 */
#include "ad_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct term {
    int is_k;       /* 1: the constant k, not yet a node */
    double k;
    pxl_ad_value v; /* when !is_k */
} term;

typedef struct parser {
    pxl_ad_graph *g;
    pxl_ctx *ctx;
    const char *s;
    size_t len, pos;
    int depth;
    const pxl_ad_parse_names *names;
    pxl_ad_parse_error *err; /* never NULL inside the parser */
    int failed;
} parser;

/* ---- errors ---------------------------------------------------------------- */

/* Records the first error at byte offset at (0-based), length n. Returns 0. */
static int fail_at(parser *p, pxl_ad_parse_code code, size_t at, size_t n, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
static int fail_at(parser *p, pxl_ad_parse_code code, size_t at, size_t n, const char *fmt, ...) {
    if (p->failed) return 0;
    p->failed = 1;
    p->err->code = code;
    p->err->column = at + 1;
    p->err->length = n ? n : 1;
    char detail[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    snprintf(p->err->message, sizeof p->err->message, "column %zu: %s", at + 1, detail);
    return 0;
}

/* A token quoted for a message: at most 40 bytes, unprintable bytes as \xNN. */
const char *ad_quote(const char *s, size_t n, char *buf, size_t cap) {
    size_t o = 0;
    for (size_t i = 0; i < n && o + 8 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (i == 40) {
            memcpy(buf + o, "...", 3);
            o += 3;
            break;
        }
        if (c >= 0x20 && c < 0x7f) buf[o++] = (char)c;
        else o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", c);
    }
    buf[o] = '\0';
    return buf;
}

/* A graph builder error (out of memory, too many nodes). */
static int graph_failed(parser *p) {
    if (pxl_ad_graph_status(p->g) == PXL_OK) return 0;
    fail_at(p, PXL_AD_PARSE_GRAPH, p->pos, 1, "the graph failed: %s", pxl_ctx_error(p->ctx));
    return 1;
}

/* ---- tokens ---------------------------------------------------------------- */

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

static void skip_space(parser *p) {
    while (p->pos < p->len && is_space(p->s[p->pos])) p->pos++;
}

/* The next non-space byte, or 0 at the end (a NUL byte in the text is an error elsewhere). */
static char peek(parser *p) {
    skip_space(p);
    return p->pos < p->len ? p->s[p->pos] : '\0';
}
static char peek2(parser *p) { return p->pos + 1 < p->len ? p->s[p->pos + 1] : '\0'; }
static int at_end(parser *p) {
    skip_space(p);
    return p->pos >= p->len;
}

/* Length of the token at p->pos, for messages. */
static size_t token_len(parser *p) {
    size_t i = p->pos;
    if (i >= p->len) return 1;
    if (is_alpha(p->s[i]) || is_digit(p->s[i]) || p->s[i] == '.') {
        while (i < p->len && (is_alpha(p->s[i]) || is_digit(p->s[i]) || p->s[i] == '.')) i++;
        return i - p->pos;
    }
    return 1;
}

/* "found ..." for a message about the token at p->pos. */
static const char *found(parser *p, char *buf, size_t cap) {
    if (at_end(p)) return "the end";
    char q[64];
    snprintf(buf, cap, "'%s'", ad_quote(p->s + p->pos, token_len(p), q, sizeof q));
    return buf;
}

/* ---- terms ----------------------------------------------------------------- */

static term konst(double k) {
    term t = {1, k, {0, 0}};
    return t;
}
static term value(pxl_ad_value v) {
    term t = {0, 0.0, v};
    return t;
}

/* The graph value of t (a constant becomes a node). */
static pxl_ad_value val(parser *p, term t) { return t.is_k ? pxl_ad_const(p->g, t.k) : t.v; }

/* ---- functions --------------------------------------------------------------- */

typedef enum fn_id {
    FN_EXP, FN_LOG, FN_SQRT, FN_SIN, FN_COS, FN_TAN, FN_ASIN, FN_ACOS, FN_ATAN, FN_SINH, FN_COSH, FN_TANH,
    FN_SIGMOID, FN_RELU, FN_SOFTPLUS, FN_ABS, FN_SIGN, FN_FLOOR, FN_CEIL, FN_LOG10,
    FN_POW, FN_HYPOT, FN_ATAN2, FN_MIN, FN_MAX, FN_CLAMP, FN_SELECT
} fn_id;

typedef struct fn_def {
    const char *name;
    fn_id id;
    int min_args, max_args; /* max -1: any number >= min */
} fn_def;

static const fn_def k_functions[] = {
    {"exp", FN_EXP, 1, 1},         {"log", FN_LOG, 1, 1},         {"sqrt", FN_SQRT, 1, 1},
    {"sin", FN_SIN, 1, 1},         {"cos", FN_COS, 1, 1},         {"tan", FN_TAN, 1, 1},
    {"asin", FN_ASIN, 1, 1},       {"acos", FN_ACOS, 1, 1},       {"atan", FN_ATAN, 1, 1},
    {"sinh", FN_SINH, 1, 1},       {"cosh", FN_COSH, 1, 1},       {"tanh", FN_TANH, 1, 1},
    {"sigmoid", FN_SIGMOID, 1, 1}, {"relu", FN_RELU, 1, 1},       {"softplus", FN_SOFTPLUS, 1, 1},
    {"abs", FN_ABS, 1, 1},         {"sign", FN_SIGN, 1, 1},       {"floor", FN_FLOOR, 1, 1},
    {"ceil", FN_CEIL, 1, 1},       {"log10", FN_LOG10, 1, 1},     {"pow", FN_POW, 2, 2},
    {"hypot", FN_HYPOT, 2, 2},     {"atan2", FN_ATAN2, 2, 2},     {"min", FN_MIN, 2, -1},
    {"max", FN_MAX, 2, -1},        {"clamp", FN_CLAMP, 3, 3},     {"select", FN_SELECT, 3, 3},
};

static const fn_def *find_function(const char *s, size_t n) {
    for (size_t i = 0; i < sizeof k_functions / sizeof k_functions[0]; i++)
        if (strlen(k_functions[i].name) == n && memcmp(k_functions[i].name, s, n) == 0) return &k_functions[i];
    return NULL;
}

static pxl_ad_value apply1(pxl_ad_graph *g, fn_id id, pxl_ad_value a) {
    switch (id) {
    case FN_EXP: return pxl_ad_exp(g, a);
    case FN_LOG: return pxl_ad_log(g, a);
    case FN_SQRT: return pxl_ad_sqrt(g, a);
    case FN_SIN: return pxl_ad_sin(g, a);
    case FN_COS: return pxl_ad_cos(g, a);
    case FN_TAN: return pxl_ad_tan(g, a);
    case FN_ASIN: return pxl_ad_asin(g, a);
    case FN_ACOS: return pxl_ad_acos(g, a);
    case FN_ATAN: return pxl_ad_atan(g, a);
    case FN_SINH: return pxl_ad_sinh(g, a);
    case FN_COSH: return pxl_ad_cosh(g, a);
    case FN_TANH: return pxl_ad_tanh(g, a);
    case FN_SIGMOID: return pxl_ad_sigmoid(g, a);
    case FN_RELU: return pxl_ad_relu(g, a);
    case FN_SOFTPLUS: return pxl_ad_softplus(g, a);
    case FN_ABS: return pxl_ad_abs(g, a);
    case FN_SIGN: return pxl_ad_sign(g, a);
    case FN_FLOOR: return pxl_ad_floor(g, a);
    case FN_CEIL: return pxl_ad_ceil(g, a);
    case FN_LOG10: {
        pxl_ad_value l = pxl_ad_log(g, a);
        return pxl_ad_div(g, l, pxl_ad_const(g, 2.30258509299404568402));
    }
    default: return pxl_ad_const(g, 0.0); /* not reached: arity checked */
    }
}

/* ---- grammar --------------------------------------------------------------- */

static int parse_expr(parser *p, term *out);
static int parse_unary(parser *p, term *out);

/* A power a^b of two terms. */
static term power(parser *p, term a, term b) {
    if (b.is_k && b.k == floor(b.k) && fabs(b.k) <= 2147483647.0) {
        if (a.is_k) return konst(pow(a.k, b.k)); /* powi computes pow(a, (double)n) too */
        return value(pxl_ad_powi(p->g, a.v, (int32_t)b.k));
    }
    if (a.is_k && b.is_k) return konst(pow(a.k, b.k));
    pxl_ad_value x = val(p, a), y = val(p, b);
    return value(pxl_ad_pow(p->g, x, y));
}

/* A decimal number at p->pos. */
static int parse_number(parser *p, term *out) {
    size_t start = p->pos, i = p->pos;
    size_t int_digits = 0, frac_digits = 0;
    while (i < p->len && is_digit(p->s[i])) i++, int_digits++;
    if (i < p->len && p->s[i] == '.') {
        i++;
        while (i < p->len && is_digit(p->s[i])) i++, frac_digits++;
    }
    if (int_digits + frac_digits == 0) return fail_at(p, PXL_AD_PARSE_SYNTAX, start, 1, "malformed number '.'");
    if (i < p->len && (p->s[i] == 'e' || p->s[i] == 'E')) {
        size_t j = i + 1;
        if (j < p->len && (p->s[j] == '+' || p->s[j] == '-')) j++;
        if (j >= p->len || !is_digit(p->s[j])) {
            char q[64];
            return fail_at(p, PXL_AD_PARSE_SYNTAX, start, j - start, "malformed number '%s' (no exponent digits)",
                           ad_quote(p->s + start, j - start, q, sizeof q));
        }
        while (j < p->len && is_digit(p->s[j])) j++;
        i = j;
    }
    size_t n = i - start;
    char buf[128], q[64];
    if (n >= sizeof buf)
        return fail_at(p, PXL_AD_PARSE_LIMIT, start, n, "number '%s' is longer than %zu characters",
                       ad_quote(p->s + start, n, q, sizeof q), sizeof buf - 1);
    memcpy(buf, p->s + start, n);
    buf[n] = '\0';
    double k = strtod(buf, NULL);
    if (!isfinite(k))
        return fail_at(p, PXL_AD_PARSE_SYNTAX, start, n, "number '%s' is out of range", ad_quote(buf, n, q, sizeof q));
    p->pos = i;
    *out = konst(k);
    return 1;
}

/* Arguments of a call: after the name, at '('. Parses up to max (or any number) into args. */
static int parse_args(parser *p, const char *name, size_t name_at, size_t name_len, const fn_def *f, term *out) {
    size_t open = p->pos;
    p->pos++; /* '(' */
    term args[3];
    int n = 0;
    term acc = konst(0.0); /* min/max: folded left to right */
    if (peek(p) == ')') {
        p->pos++;
    } else {
        for (;;) {
            term t;
            if (!parse_expr(p, &t)) return 0;
            if (f->max_args < 0) {
                if (n == 0) {
                    acc = t;
                } else {
                    pxl_ad_value x = val(p, acc), y = val(p, t); /* in this order: node order is hashed */
                    acc = value(f->id == FN_MIN ? pxl_ad_min(p->g, x, y) : pxl_ad_max(p->g, x, y));
                }
            } else if (n < 3) {
                args[n] = t;
            }
            n++;
            char c = peek(p);
            if (c == ',') {
                p->pos++;
                continue;
            }
            if (c == ')') {
                p->pos++;
                break;
            }
            char fb[80];
            if (at_end(p))
                return fail_at(p, PXL_AD_PARSE_SYNTAX, p->pos, 1, "expected ')' to match '(' at column %zu, found the end",
                               open + 1);
            return fail_at(p, PXL_AD_PARSE_SYNTAX, p->pos, token_len(p),
                           "expected ',' or ')' to match '(' at column %zu, found %s", open + 1, found(p, fb, sizeof fb));
        }
    }
    if (n < f->min_args || (f->max_args >= 0 && n > f->max_args)) {
        char q[64];
        const char *want = f->max_args < 0 ? "at least " : "";
        return fail_at(p, PXL_AD_PARSE_ARGUMENTS, name_at, name_len, "%s() takes %s%d argument%s, found %d",
                       ad_quote(name, name_len, q, sizeof q), want, f->min_args, f->min_args == 1 ? "" : "s", n);
    }
    pxl_ad_graph *g = p->g;
    if (f->id == FN_MIN || f->id == FN_MAX) {
        *out = acc;
    } else if (f->id == FN_POW) {
        *out = power(p, args[0], args[1]);
    } else {
        /* operands become nodes left to right (the node order is part of the program hash) */
        pxl_ad_value v[3];
        for (int i = 0; i < n; i++) v[i] = val(p, args[i]);
        switch (f->id) {
        case FN_HYPOT: *out = value(pxl_ad_hypot(g, v[0], v[1])); break;
        case FN_ATAN2: *out = value(pxl_ad_atan2(g, v[0], v[1])); break;
        case FN_CLAMP: *out = value(pxl_ad_clamp(g, v[0], v[1], v[2])); break;
        case FN_SELECT: *out = value(pxl_ad_select(g, v[0], v[1], v[2])); break;
        default: *out = value(apply1(g, f->id, v[0])); break;
        }
    }
    return !graph_failed(p);
}

static int parse_primary(parser *p, term *out) {
    char c = peek(p), fb[80];
    size_t at = p->pos;
    if (is_digit(c) || (c == '.' && is_digit(peek2(p)))) return parse_number(p, out);
    if (c == '(') {
        p->pos++;
        if (!parse_expr(p, out)) return 0;
        if (peek(p) != ')') {
            if (at_end(p))
                return fail_at(p, PXL_AD_PARSE_SYNTAX, p->pos, 1, "expected ')' to match '(' at column %zu, found the end",
                               at + 1);
            return fail_at(p, PXL_AD_PARSE_SYNTAX, p->pos, token_len(p), "expected ')' to match '(' at column %zu, found %s",
                           at + 1, found(p, fb, sizeof fb));
        }
        p->pos++;
        return 1;
    }
    if (is_alpha(c)) {
        size_t i = at;
        while (i < p->len && (is_alpha(p->s[i]) || is_digit(p->s[i]))) i++;
        const char *name = p->s + at;
        size_t n = i - at;
        p->pos = i;
        char q[64];
        if (peek(p) == '(') {
            const fn_def *f = find_function(name, n);
            if (!f) return fail_at(p, PXL_AD_PARSE_UNKNOWN_FUNCTION, at, n, "unknown function '%s'", ad_quote(name, n, q, sizeof q));
            return parse_args(p, name, at, n, f, out);
        }
        const pxl_ad_parse_names *nt = p->names;
        for (size_t j = 0; nt && j < nt->n; j++) {
            const char *e = nt->names[j].name;
            if (strlen(e) != n || memcmp(e, name, n) != 0) continue;
            if (nt->used) nt->used[j] = 1;
            pxl_ad_value v = nt->names[j].kind == PXL_AD_NAME_PARAM ? pxl_ad_param(p->g, nt->names[j].index)
                                                                    : pxl_ad_input(p->g, nt->names[j].index);
            *out = value(v);
            return !graph_failed(p);
        }
        if (n == 2 && memcmp(name, "pi", 2) == 0) {
            *out = konst(3.14159265358979323846);
            return 1;
        }
        if (n == 1 && name[0] == 'e') {
            *out = konst(2.71828182845904523536);
            return 1;
        }
        if (find_function(name, n))
            return fail_at(p, PXL_AD_PARSE_SYNTAX, at, n, "function '%s' needs arguments in parentheses",
                           ad_quote(name, n, q, sizeof q));
        return fail_at(p, PXL_AD_PARSE_UNKNOWN_NAME, at, n, "unknown name '%s'", ad_quote(name, n, q, sizeof q));
    }
    if (at_end(p)) return fail_at(p, PXL_AD_PARSE_SYNTAX, p->pos, 1, "expected a number, a name or '(', found the end");
    if (c == '\0' || (unsigned char)c >= 0x7f || (unsigned char)c < 0x20)
        return fail_at(p, PXL_AD_PARSE_SYNTAX, at, 1, "unexpected byte 0x%02x", (unsigned char)c);
    return fail_at(p, PXL_AD_PARSE_SYNTAX, at, 1, "expected a number, a name or '(', found '%c'", c);
}

/* power := primary [ (^ | **) unary ] */
static int parse_power(parser *p, term *out) {
    term a;
    if (!parse_primary(p, &a)) return 0;
    char c = peek(p);
    size_t op = 0;
    if (c == '^') op = 1;
    else if (c == '*' && peek2(p) == '*') op = 2;
    if (!op) {
        *out = a;
        return 1;
    }
    p->pos += op;
    term b;
    if (!parse_unary(p, &b)) return 0;
    *out = power(p, a, b);
    return !graph_failed(p);
}

/* unary := (- | +) unary | power */
static int parse_unary(parser *p, term *out) {
    if (++p->depth > PXL_AD_PARSE_MAX_DEPTH) {
        skip_space(p);
        return fail_at(p, PXL_AD_PARSE_LIMIT, p->pos, 1, "nested deeper than %d levels", PXL_AD_PARSE_MAX_DEPTH);
    }
    int ok;
    char c = peek(p);
    if (c == '-' || c == '+') {
        p->pos++;
        term t;
        ok = parse_unary(p, &t);
        if (ok) {
            if (c == '+') *out = t;
            else if (t.is_k) *out = konst(-t.k);
            else {
                *out = value(pxl_ad_neg(p->g, t.v));
                ok = !graph_failed(p);
            }
        }
    } else {
        ok = parse_power(p, out);
    }
    p->depth--;
    return ok;
}

/* term := unary { (* | /) unary } */
static int parse_term(parser *p, term *out) {
    term a;
    if (!parse_unary(p, &a)) return 0;
    for (;;) {
        char c = peek(p);
        if (!((c == '*' && peek2(p) != '*') || c == '/')) break;
        p->pos++;
        term b;
        if (!parse_unary(p, &b)) return 0;
        if (a.is_k && b.is_k) {
            a = konst(c == '*' ? a.k * b.k : a.k / b.k);
        } else {
            pxl_ad_value x = val(p, a), y = val(p, b);
            a = value(c == '*' ? pxl_ad_mul(p->g, x, y) : pxl_ad_div(p->g, x, y));
        }
        if (graph_failed(p)) return 0;
    }
    *out = a;
    return 1;
}

/* additive := term { (+ | -) term } */
static int parse_additive(parser *p, term *out) {
    term a;
    if (!parse_term(p, &a)) return 0;
    for (;;) {
        char c = peek(p);
        if (c != '+' && c != '-') break;
        p->pos++;
        term b;
        if (!parse_term(p, &b)) return 0;
        if (a.is_k && b.is_k) {
            a = konst(c == '+' ? a.k + b.k : a.k - b.k);
        } else {
            pxl_ad_value x = val(p, a), y = val(p, b);
            a = value(c == '+' ? pxl_ad_add(p->g, x, y) : pxl_ad_sub(p->g, x, y));
        }
        if (graph_failed(p)) return 0;
    }
    *out = a;
    return 1;
}

typedef enum cmp_op { CMP_NONE, CMP_LT, CMP_LE, CMP_GT, CMP_GE, CMP_EQ, CMP_NE } cmp_op;

/* The comparison at p->pos, its length in *n; CMP_NONE if there is none. */
static cmp_op peek_cmp(parser *p, size_t *n) {
    char c = peek(p), d = peek2(p);
    *n = 2;
    if (c == '<' && d == '=') return CMP_LE;
    if (c == '>' && d == '=') return CMP_GE;
    if (c == '=' && d == '=') return CMP_EQ;
    if (c == '!' && d == '=') return CMP_NE;
    *n = 1;
    if (c == '<') return CMP_LT;
    if (c == '>') return CMP_GT;
    return CMP_NONE;
}

/* expr := additive [ cmp additive ] */
static int parse_expr(parser *p, term *out) {
    term a;
    int ok = parse_additive(p, &a);
    size_t n;
    cmp_op op = ok ? peek_cmp(p, &n) : CMP_NONE;
    if (op != CMP_NONE) {
        p->pos += n;
        term b;
        ok = parse_additive(p, &b);
        size_t n2;
        if (ok && peek_cmp(p, &n2) != CMP_NONE)
            ok = fail_at(p, PXL_AD_PARSE_SYNTAX, p->pos, n2,
                         "comparisons do not chain: write (a < b) * (b < c) for a < b < c");
        if (ok) {
            pxl_ad_value x = val(p, a), y = val(p, b);
            pxl_ad_graph *g = p->g;
            switch (op) {
            case CMP_LT: a = value(pxl_ad_lt(g, x, y)); break;
            case CMP_LE: a = value(pxl_ad_le(g, x, y)); break;
            case CMP_GT: a = value(pxl_ad_gt(g, x, y)); break;
            case CMP_GE: a = value(pxl_ad_ge(g, x, y)); break;
            case CMP_EQ: a = value(pxl_ad_eq(g, x, y)); break;
            default: a = value(pxl_ad_ne(g, x, y)); break;
            }
            ok = !graph_failed(p);
        }
    }
    if (ok) *out = a;
    return ok;
}

pxl_status pxl_ad_parse(pxl_ad_graph *g, const char *text, size_t len, const pxl_ad_parse_names *names,
                        pxl_ad_value *out, pxl_ad_parse_error *err) {
    pxl_ad_parse_error scratch;
    if (!err) err = &scratch;
    memset(err, 0, sizeof *err);
    if (out) out->graph = out->index = 0;
    pxl_ctx *ctx = ad_graph_ctx(g);
    if (!ctx) {
        snprintf(err->message, sizeof err->message, "pxl_ad_parse: g is NULL");
        err->code = PXL_AD_PARSE_GRAPH;
        return PXL_ERR_INVALID_ARG;
    }
    const char *what = NULL;
    if (!out) what = "out is NULL";
    else if (!text && len) what = "text is NULL";
    else if (names && names->n && !names->names) what = "names->names is NULL";
    for (size_t i = 0; !what && names && i < names->n; i++) {
        const pxl_ad_name *e = &names->names[i];
        if (!e->name || (e->kind != PXL_AD_NAME_PARAM && e->kind != PXL_AD_NAME_INPUT) || e->index < 0)
            what = "a names entry has a NULL name, an unknown kind or a negative index";
    }
    if (what) {
        err->code = PXL_AD_PARSE_GRAPH;
        snprintf(err->message, sizeof err->message, "pxl_ad_parse: %s", what);
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s", err->message);
    }
    pxl_status gs = pxl_ad_graph_status(g);
    if (gs != PXL_OK) {
        err->code = PXL_AD_PARSE_GRAPH;
        snprintf(err->message, sizeof err->message, "pxl_ad_parse: the graph has a builder error (%s)",
                 pxl_status_str(gs));
        return pxl_fail(ctx, gs, "%s", err->message);
    }
    parser p;
    memset(&p, 0, sizeof p);
    p.g = g;
    p.ctx = ctx;
    p.s = text ? text : "";
    p.len = len;
    p.names = names;
    p.err = err;
    term t;
    int ok;
    if (len > PXL_AD_PARSE_MAX_LEN) {
        ok = fail_at(&p, PXL_AD_PARSE_LIMIT, PXL_AD_PARSE_MAX_LEN, 1, "the expression is %zu bytes, more than the limit of %zu",
                     len, PXL_AD_PARSE_MAX_LEN);
    } else if (at_end(&p)) {
        ok = fail_at(&p, PXL_AD_PARSE_SYNTAX, 0, 1, "empty expression");
    } else {
        ok = parse_expr(&p, &t);
        if (ok && !at_end(&p)) {
            char c = p.s[p.pos], fb[80];
            if (c == ')')
                ok = fail_at(&p, PXL_AD_PARSE_SYNTAX, p.pos, 1, "')' without a matching '('");
            else if (c == '=')
                ok = fail_at(&p, PXL_AD_PARSE_SYNTAX, p.pos, 1, "'=' is not an operator here (compare with '==')");
            else if (is_alpha(c) || is_digit(c) || c == '.' || c == '(')
                ok = fail_at(&p, PXL_AD_PARSE_SYNTAX, p.pos, token_len(&p),
                             "expected an operator before %s (write '*' for a product)", found(&p, fb, sizeof fb));
            else if ((unsigned char)c < 0x20 || (unsigned char)c >= 0x7f)
                ok = fail_at(&p, PXL_AD_PARSE_SYNTAX, p.pos, 1, "unexpected byte 0x%02x", (unsigned char)c);
            else
                ok = fail_at(&p, PXL_AD_PARSE_SYNTAX, p.pos, 1, "unexpected '%c'", c);
        }
        if (ok) {
            *out = val(&p, t);
            ok = !graph_failed(&p);
        }
    }
    if (ok) return PXL_OK;
    out->graph = out->index = 0;
    gs = pxl_ad_graph_status(g);
    return pxl_fail(ctx, gs != PXL_OK ? gs : PXL_ERR_FORMAT, "%s", err->message);
}
