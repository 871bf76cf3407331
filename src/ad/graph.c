/*
 * AD graphs: building with hash-consing, and compiling to a program
 * (pxl/ad.h).
 */
#include "ad_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct pxl_ad_graph {
    pxl_ctx *ctx;
    uint32_t tag;
    pxl_status status;     /* the first builder error, sticky */
    pxl_ad_node *nodes;
    size_t n, cap;
    uint32_t *table;       /* open addressing: node index + 1, 0 empty */
    size_t table_cap;      /* a power of two, > 2 n */
    uint32_t *outputs;
    size_t n_out, cap_out;
    size_t n_params, n_inputs;
};

static const pxl_ad_value invalid_value = {0, 0};

static const char *const op_names[PXL_AD_OP_COUNT] = {
    "const", "param", "input", "neg", "exp", "log", "sqrt", "powi", "sin", "cos", "tan", "asin", "acos",
    "atan", "sinh", "cosh", "tanh", "sigmoid", "relu", "softplus", "abs", "sign", "floor", "ceil",
    "add", "sub", "mul", "div", "pow", "hypot", "atan2", "min", "max", "lt", "le", "gt", "ge", "eq", "ne",
    "select"};

static uint64_t mix(uint64_t h, uint64_t v) {
    uint64_t s = h ^ (v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2));
    return pxl_splitmix64(&s);
}

static uint64_t node_hash(const pxl_ad_node *n) {
    uint64_t kb;
    memcpy(&kb, &n->k, sizeof kb);
    uint64_t h = mix(0x7078ad, (uint64_t)(uint32_t)n->op);
    h = mix(h, (uint64_t)(uint32_t)n->a);
    h = mix(h, (uint64_t)(uint32_t)n->b);
    h = mix(h, (uint64_t)(uint32_t)n->c);
    h = mix(h, (uint64_t)(uint32_t)n->aux);
    return mix(h, kb);
}

static int node_equal(const pxl_ad_node *x, const pxl_ad_node *y) {
    return x->op == y->op && x->a == y->a && x->b == y->b && x->c == y->c && x->aux == y->aux &&
           memcmp(&x->k, &y->k, sizeof x->k) == 0;
}

pxl_status pxl_ad_graph_create(pxl_ctx *ctx, pxl_ad_graph **out) {
    PXL_REQUIRE_CTX(ctx);
    PXL_REQUIRE(ctx, "pxl_ad_graph_create", out);
    *out = NULL;
    pxl_ad_graph *g = pxl_calloc(ctx, 1, sizeof *g);
    if (!g) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_ad_graph_create: out of memory");
    g->ctx = ctx;
    uint64_t s = (uint64_t)(uintptr_t)g;
    g->tag = (uint32_t)pxl_splitmix64(&s);
    if (g->tag == 0) g->tag = 1;
    g->status = PXL_OK;
    *out = g;
    return PXL_OK;
}

void pxl_ad_graph_free(pxl_ad_graph *g) {
    if (!g) return;
    pxl_ctx *ctx = g->ctx;
    pxl_free(ctx, g->nodes);
    pxl_free(ctx, g->table);
    pxl_free(ctx, g->outputs);
    pxl_free(ctx, g);
}

pxl_status pxl_ad_graph_status(const pxl_ad_graph *g) { return g ? g->status : PXL_ERR_INVALID_ARG; }
size_t pxl_ad_graph_nodes(const pxl_ad_graph *g) { return g ? g->n : 0; }

int pxl_ad_valid(const pxl_ad_graph *g, pxl_ad_value v) {
    return g && v.graph == g->tag && (size_t)v.index < g->n;
}

/* Records the graph's first error (later ones are consequences). */
static pxl_ad_value fail_value(pxl_ad_graph *g, pxl_status s, const char *what, const char *detail) {
    if (g->status == PXL_OK) {
        g->status = s;
        pxl_fail(g->ctx, s, "pxl_ad_%s: %s", what, detail);
    }
    return invalid_value;
}

static int grow_table(pxl_ad_graph *g) {
    size_t cap = g->table_cap ? g->table_cap * 2 : 64;
    uint32_t *t = pxl_calloc(g->ctx, cap, sizeof *t);
    if (!t) return 0;
    for (size_t i = 0; i < g->n; i++) {
        size_t j = (size_t)node_hash(&g->nodes[i]) & (cap - 1);
        while (t[j]) j = (j + 1) & (cap - 1);
        t[j] = (uint32_t)(i + 1);
    }
    pxl_free(g->ctx, g->table);
    g->table = t;
    g->table_cap = cap;
    return 1;
}

/* The node n of g, shared with an identical one if there is one. */
static pxl_ad_value intern(pxl_ad_graph *g, const char *what, pxl_ad_node n) {
    if (g->n >= (size_t)INT32_MAX - 1) return fail_value(g, PXL_ERR_INVALID_ARG, what, "too many nodes");
    if ((g->n + 1) * 2 > g->table_cap && !grow_table(g)) return fail_value(g, PXL_ERR_OUT_OF_MEMORY, what, "out of memory");
    size_t j = (size_t)node_hash(&n) & (g->table_cap - 1);
    while (g->table[j]) {
        size_t i = g->table[j] - 1;
        if (node_equal(&g->nodes[i], &n)) return (pxl_ad_value){g->tag, (uint32_t)i};
        j = (j + 1) & (g->table_cap - 1);
    }
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 64;
        pxl_ad_node *nn = pxl_realloc(g->ctx, g->nodes, cap * sizeof *nn);
        if (!nn) return fail_value(g, PXL_ERR_OUT_OF_MEMORY, what, "out of memory");
        g->nodes = nn;
        g->cap = cap;
    }
    g->nodes[g->n] = n;
    g->table[j] = (uint32_t)(g->n + 1);
    return (pxl_ad_value){g->tag, (uint32_t)g->n++};
}

/* Checks an operand: 1 when v is a value of g, else records the error. */
static int operand(pxl_ad_graph *g, const char *what, const char *name, pxl_ad_value v) {
    if (g->status != PXL_OK) return 0;
    if (v.graph == g->tag && (size_t)v.index < g->n) return 1;
    char msg[160];
    if (v.graph == 0) snprintf(msg, sizeof msg, "%s is not a value (an invalid or zero handle)", name);
    else if (v.graph != g->tag) snprintf(msg, sizeof msg, "%s is a value of another graph", name);
    else snprintf(msg, sizeof msg, "%s is not a value of this graph (node %u of %zu)", name, v.index, g->n);
    fail_value(g, PXL_ERR_INVALID_ARG, what, msg);
    return 0;
}

static pxl_ad_node make(int op, int32_t a, int32_t b, int32_t c) {
    pxl_ad_node n;
    memset(&n, 0, sizeof n); /* padding too: the hash reads fields only, but keep it clean */
    n.op = op;
    n.a = a;
    n.b = b;
    n.c = c;
    return n;
}

static pxl_ad_value leaf(pxl_ad_graph *g, int op, int32_t idx, const char *what) {
    if (!g) return invalid_value;
    if (g->status != PXL_OK) return invalid_value;
    if (idx < 0) return fail_value(g, PXL_ERR_INVALID_ARG, what, op == PXL_AD_OP_PARAM ? "negative slot" : "negative column");
    pxl_ad_node n = make(op, -1, -1, -1);
    n.aux = idx;
    pxl_ad_value v = intern(g, what, n);
    if (v.graph) {
        size_t *count = op == PXL_AD_OP_PARAM ? &g->n_params : &g->n_inputs;
        if ((size_t)idx + 1 > *count) *count = (size_t)idx + 1;
    }
    return v;
}

pxl_ad_value pxl_ad_param(pxl_ad_graph *g, int32_t slot) { return leaf(g, PXL_AD_OP_PARAM, slot, "param"); }
pxl_ad_value pxl_ad_input(pxl_ad_graph *g, int32_t column) { return leaf(g, PXL_AD_OP_INPUT, column, "input"); }

pxl_ad_value pxl_ad_const(pxl_ad_graph *g, double c) {
    if (!g || g->status != PXL_OK) return invalid_value;
    pxl_ad_node n = make(PXL_AD_OP_CONST, -1, -1, -1);
    n.k = c;
    return intern(g, "const", n);
}

static pxl_ad_value op1(pxl_ad_graph *g, int op, pxl_ad_value a) {
    if (!g || !operand(g, op_names[op], "a", a)) return invalid_value;
    return intern(g, op_names[op], make(op, (int32_t)a.index, -1, -1));
}

static int commutative(int op) {
    return op == PXL_AD_OP_ADD || op == PXL_AD_OP_MUL || op == PXL_AD_OP_HYPOT || op == PXL_AD_OP_EQ ||
           op == PXL_AD_OP_NE;
}

static pxl_ad_value op2(pxl_ad_graph *g, int op, pxl_ad_value a, pxl_ad_value b) {
    if (!g || !operand(g, op_names[op], "a", a) || !operand(g, op_names[op], "b", b)) return invalid_value;
    int32_t x = (int32_t)a.index, y = (int32_t)b.index;
    if (commutative(op) && y < x) {
        int32_t t = x;
        x = y;
        y = t;
    }
    return intern(g, op_names[op], make(op, x, y, -1));
}

#define PXL_AD_UNARY(name, OP) \
    pxl_ad_value pxl_ad_##name(pxl_ad_graph *g, pxl_ad_value a) { return op1(g, PXL_AD_OP_##OP, a); }
#define PXL_AD_BINARY(name, OP) \
    pxl_ad_value pxl_ad_##name(pxl_ad_graph *g, pxl_ad_value a, pxl_ad_value b) { return op2(g, PXL_AD_OP_##OP, a, b); }

PXL_AD_UNARY(neg, NEG)
PXL_AD_UNARY(exp, EXP)
PXL_AD_UNARY(log, LOG)
PXL_AD_UNARY(sqrt, SQRT)
PXL_AD_UNARY(sin, SIN)
PXL_AD_UNARY(cos, COS)
PXL_AD_UNARY(tan, TAN)
PXL_AD_UNARY(asin, ASIN)
PXL_AD_UNARY(acos, ACOS)
PXL_AD_UNARY(atan, ATAN)
PXL_AD_UNARY(sinh, SINH)
PXL_AD_UNARY(cosh, COSH)
PXL_AD_UNARY(tanh, TANH)
PXL_AD_UNARY(sigmoid, SIGMOID)
PXL_AD_UNARY(relu, RELU)
PXL_AD_UNARY(softplus, SOFTPLUS)
PXL_AD_UNARY(abs, ABS)
PXL_AD_UNARY(sign, SIGN)
PXL_AD_UNARY(floor, FLOOR)
PXL_AD_UNARY(ceil, CEIL)
PXL_AD_BINARY(add, ADD)
PXL_AD_BINARY(sub, SUB)
PXL_AD_BINARY(mul, MUL)
PXL_AD_BINARY(div, DIV)
PXL_AD_BINARY(pow, POW)
PXL_AD_BINARY(hypot, HYPOT)
PXL_AD_BINARY(atan2, ATAN2)
PXL_AD_BINARY(min, MIN)
PXL_AD_BINARY(max, MAX)
PXL_AD_BINARY(lt, LT)
PXL_AD_BINARY(le, LE)
PXL_AD_BINARY(gt, GT)
PXL_AD_BINARY(ge, GE)
PXL_AD_BINARY(eq, EQ)
PXL_AD_BINARY(ne, NE)

pxl_ad_value pxl_ad_powi(pxl_ad_graph *g, pxl_ad_value a, int32_t n) {
    if (!g || !operand(g, "powi", "a", a)) return invalid_value;
    if (n == INT32_MIN) /* n - 1, its derivative's exponent, would overflow */
        return fail_value(g, PXL_ERR_INVALID_ARG, "powi", "exponent -2147483648 is out of range (use pxl_ad_pow)");
    pxl_ad_node nd = make(PXL_AD_OP_POWI, (int32_t)a.index, -1, -1);
    nd.aux = n;
    return intern(g, "powi", nd);
}

pxl_ad_value pxl_ad_clamp(pxl_ad_graph *g, pxl_ad_value x, pxl_ad_value lo, pxl_ad_value hi) {
    if (!g || !operand(g, "clamp", "x", x) || !operand(g, "clamp", "lo", lo) || !operand(g, "clamp", "hi", hi))
        return invalid_value;
    return pxl_ad_min(g, pxl_ad_max(g, x, lo), hi);
}

pxl_ad_value pxl_ad_select(pxl_ad_graph *g, pxl_ad_value cond, pxl_ad_value a, pxl_ad_value b) {
    if (!g || !operand(g, "select", "cond", cond) || !operand(g, "select", "a", a) || !operand(g, "select", "b", b))
        return invalid_value;
    return intern(g, "select", make(PXL_AD_OP_SELECT, (int32_t)cond.index, (int32_t)a.index, (int32_t)b.index));
}

pxl_status pxl_ad_output(pxl_ad_graph *g, pxl_ad_value v) {
    if (!g) return PXL_ERR_INVALID_ARG;
    if (g->status != PXL_OK) return g->status;
    if (!operand(g, "output", "v", v)) return g->status;
    if (g->n_out == g->cap_out) {
        size_t cap = g->cap_out ? g->cap_out * 2 : 8;
        uint32_t *o = pxl_realloc(g->ctx, g->outputs, cap * sizeof *o);
        if (!o) {
            fail_value(g, PXL_ERR_OUT_OF_MEMORY, "output", "out of memory");
            return g->status;
        }
        g->outputs = o;
        g->cap_out = cap;
    }
    g->outputs[g->n_out++] = v.index;
    return PXL_OK;
}

/* ---- compiling ------------------------------------------------------------ */

static int n_operands(int op) {
    if (op <= PXL_AD_OP_INPUT) return 0;
    if (op <= PXL_AD_OP_CEIL) return 1;
    if (op <= PXL_AD_OP_NE) return 2;
    return 3;
}

pxl_status pxl_ad_compile(pxl_ad_graph *g, pxl_ad_program **out) { return ad_compile(g, out); }

pxl_status ad_compile(const pxl_ad_graph *g, pxl_ad_program **out) {
    if (!g) return PXL_ERR_INVALID_ARG;
    pxl_ctx *ctx = g->ctx;
    PXL_REQUIRE(ctx, "pxl_ad_compile", out);
    *out = NULL;
    if (g->status != PXL_OK)
        return pxl_fail(ctx, g->status, "pxl_ad_compile: the graph has a builder error (%s)", pxl_status_str(g->status));
    if (g->n_out == 0) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_ad_compile: the graph has no outputs");
    int32_t *map = pxl_alloc(ctx, g->n * sizeof *map);
    pxl_ad_program *p = pxl_calloc(ctx, 1, sizeof *p);
    if (!map || !p) goto oom;
    p->ctx = ctx;
    /* liveness: operands precede their users, so one backward pass marks all */
    for (size_t i = 0; i < g->n; i++) map[i] = -1;
    for (size_t r = 0; r < g->n_out; r++) map[g->outputs[r]] = 0;
    size_t live = 0;
    for (size_t i = g->n; i-- > 0;) {
        if (map[i] < 0) continue;
        live++;
        const pxl_ad_node *nd = &g->nodes[i];
        int no = n_operands(nd->op);
        if (no > 0) map[nd->a] = 0;
        if (no > 1) map[nd->b] = 0;
        if (no > 2) map[nd->c] = 0;
    }
    p->code = pxl_alloc(ctx, live * sizeof *p->code);
    p->outputs = pxl_alloc(ctx, g->n_out * sizeof *p->outputs);
    if (!p->code || !p->outputs) goto oom;
    size_t k = 0;
    for (size_t i = 0; i < g->n; i++) {
        if (map[i] < 0) continue;
        pxl_ad_node nd = g->nodes[i];
        int no = n_operands(nd.op);
        if (no > 0) nd.a = map[nd.a];
        if (no > 1) nd.b = map[nd.b];
        if (no > 2) nd.c = map[nd.c];
        p->code[k] = nd;
        map[i] = (int32_t)k++;
    }
    p->n = live;
    p->n_out = g->n_out;
    for (size_t r = 0; r < g->n_out; r++) p->outputs[r] = (uint32_t)map[g->outputs[r]];
    p->n_params = g->n_params;
    p->n_inputs = g->n_inputs;
    p->hash = ad_program_compute_hash(p);
    pxl_free(ctx, map);
    *out = p;
    return PXL_OK;
oom:
    pxl_free(ctx, map);
    pxl_ad_program_free(p);
    return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_ad_compile: out of memory");
}

uint64_t ad_program_compute_hash(const pxl_ad_program *p) {
    uint64_t h = mix(0x70786164ull, p->n);
    h = mix(h, p->n_params);
    h = mix(h, p->n_inputs);
    for (size_t i = 0; i < p->n; i++) h = mix(h, node_hash(&p->code[i]));
    h = mix(h, p->n_out);
    for (size_t r = 0; r < p->n_out; r++) h = mix(h, p->outputs[r]);
    return h;
}

void pxl_ad_program_free(pxl_ad_program *p) {
    if (!p) return;
    pxl_free(p->ctx, p->code);
    pxl_free(p->ctx, p->outputs);
    pxl_free(p->ctx, p);
}

pxl_ad_program_info pxl_ad_program_get_info(const pxl_ad_program *p) {
    pxl_ad_program_info info = {0, 0, 0, 0};
    if (p) {
        info.n_params = p->n_params;
        info.n_inputs = p->n_inputs;
        info.n_outputs = p->n_out;
        info.n_nodes = p->n;
    }
    return info;
}

uint64_t pxl_ad_program_hash(const pxl_ad_program *p) { return p ? p->hash : 0; }

/* For the composite builders of geom.c: 1 when v is a value of g, else 0,
 * with the error recorded as the builder `what`'s (operand `name`). */
int ad_check_operand(pxl_ad_graph *g, const char *what, const char *name, pxl_ad_value v) {
    return g && operand(g, what, name, v);
}

/* For geom.c: records a builder error of `what` (first error sticks). */
pxl_ad_value ad_fail_builder(pxl_ad_graph *g, const char *what, const char *detail) {
    if (!g) return invalid_value;
    return fail_value(g, PXL_ERR_INVALID_ARG, what, detail);
}
pxl_ctx *ad_graph_ctx(const pxl_ad_graph *g) { return g ? g->ctx : NULL; }
