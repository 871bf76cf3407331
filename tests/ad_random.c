/*
 * Random AD expression graphs for property tests (see ad_random.h).
 */
#include "ad_random.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define POOL_MAX 4096
#define BOUND_CAP 1e3

uint64_t ad_random_next(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double ad_random_uniform(uint64_t *state, double lo, double hi) {
    return lo + (hi - lo) * ((double)(ad_random_next(state) >> 11) * 0x1.0p-53);
}

static int below(uint64_t *s, int n) { return (int)(ad_random_next(s) % (uint64_t)n); }

/* A node of the pool: the value, a bound on its magnitude, its depth. */
typedef struct item {
    pxl_ad_value v;
    double bound;
    int depth;
} item;

typedef struct gen {
    pxl_ad_graph *g;
    uint64_t rng;
    int raw;
    int max_depth;
    item pool[POOL_MAX];
    int n, n_leaves;
} gen;

static pxl_ad_value k(gen *G, double c) { return pxl_ad_const(G->g, c); }

/* L tanh(x / L): about x for |x| << L, never beyond L. */
static item clip(gen *G, item x, double L) {
    if (G->raw || x.bound <= L) return x;
    pxl_ad_graph *g = G->g;
    x.v = pxl_ad_mul(g, pxl_ad_tanh(g, pxl_ad_mul(g, x.v, k(G, 1 / L))), k(G, L));
    x.bound = L;
    return x;
}

/* hypot(x, c) >= c > 0: a positive operand. */
static item positive(gen *G, item x, double c) {
    if (G->raw) return x;
    x.v = pxl_ad_hypot(G->g, x.v, k(G, c));
    x.bound += c;
    return x;
}

/* An operand: among the last 8 pool entries half the time (long chains),
 * else any (shared subexpressions); only entries below the depth limit. */
static item pick(gen *G) {
    for (int tries = 0; tries < 64; tries++) {
        int i = below(&G->rng, 2) ? G->n - 1 - below(&G->rng, G->n < 8 ? G->n : 8) : below(&G->rng, G->n);
        if (G->pool[i].depth < G->max_depth) return G->pool[i];
    }
    return G->pool[below(&G->rng, G->n_leaves)];
}

static pxl_ad_vec3 pick3(gen *G, double *bound, int *depth) {
    item a = pick(G), b = pick(G), c = pick(G);
    *bound = fmax(*bound, fmax(a.bound, fmax(b.bound, c.bound)));
    int d = a.depth > b.depth ? a.depth : b.depth;
    d = d > c.depth ? d : c.depth;
    if (d > *depth) *depth = d;
    return (pxl_ad_vec3){a.v, b.v, c.v};
}

static pxl_ad_value component(gen *G, pxl_ad_vec3 v) {
    int i = below(&G->rng, 3);
    return i == 0 ? v.x : i == 1 ? v.y : v.z;
}

/* One drawn operation of kind op; its result, bounded, with its depth. */
static item build(gen *G, int op) {
    pxl_ad_graph *g = G->g;
    item r = {{0, 0}, 1, 0};
    const double PI = 3.14159265358979323846;
    if (op >= AD_RND_DOT3) {
        double b = 0;
        int d = 0;
        pxl_ad_vec3 p = pick3(G, &b, &d), q = pick3(G, &b, &d);
        r.depth = d + 1;
        switch (op) {
        case AD_RND_DOT3: r.v = pxl_ad_vec3_dot(g, p, q); r.bound = 3 * b * b; break;
        case AD_RND_CROSS3: r.v = component(G, pxl_ad_vec3_cross(g, p, q)); r.bound = 2 * b * b; break;
        case AD_RND_LENGTH3: r.v = pxl_ad_vec3_length(g, p); r.bound = 2 * b; break;
        case AD_RND_NORMALIZE3: r.v = component(G, pxl_ad_vec3_normalize(g, p)); r.bound = 1; break;
        case AD_RND_DISTANCE3: r.v = pxl_ad_vec3_distance(g, p, q); r.bound = 4 * b; break;
        default: {
            pxl_ad_vec3 c = pick3(G, &b, &d);
            r.depth = d + 1;
            if (op == AD_RND_TRI_NORMAL) r.v = component(G, pxl_ad_triangle_normal(g, p, q, c)), r.bound = 1;
            else if (op == AD_RND_TRI_AREA) r.v = pxl_ad_triangle_area(g, p, q, c), r.bound = 8 * b * b;
            else if (op == AD_RND_TRI_ANGLE) r.v = pxl_ad_triangle_angle(g, p, q, c), r.bound = PI;
            else r.v = pxl_ad_dihedral_angle(g, p, q, c, pick3(G, &b, &d)), r.bound = PI, r.depth = d + 1;
        }
        }
        return clip(G, r, BOUND_CAP);
    }
    item a = pick(G), b = a;
    int binary = op <= AD_RND_DIV || op == AD_RND_POW || op == AD_RND_HYPOT || op == AD_RND_ATAN2 ||
                 op == AD_RND_MIN || op == AD_RND_MAX || op == AD_RND_CLAMP || op == AD_RND_SELECT;
    if (binary) b = pick(G);
    r.depth = (a.depth > b.depth ? a.depth : b.depth) + 1;
    switch (op) {
    case AD_RND_ADD: r.v = pxl_ad_add(g, a.v, b.v); r.bound = a.bound + b.bound; break;
    case AD_RND_SUB: r.v = pxl_ad_sub(g, a.v, b.v); r.bound = a.bound + b.bound; break;
    case AD_RND_MUL: r.v = pxl_ad_mul(g, a.v, b.v); r.bound = a.bound * b.bound; break;
    case AD_RND_DIV: r.v = pxl_ad_div(g, a.v, positive(G, b, 0.5).v); r.bound = 2 * a.bound; break;
    case AD_RND_NEG: r.v = pxl_ad_neg(g, a.v); r.bound = a.bound; break;
    case AD_RND_POW: {
        item base = positive(G, a, 0.5), e = clip(G, b, 2);
        r.v = pxl_ad_pow(g, base.v, e.v);
        r.bound = pow(fmax(base.bound, 2), e.bound);
        break;
    }
    case AD_RND_POWI: {
        int n = below(&G->rng, 8) - 3; /* -3 .. 4 */
        item base = n < 0 ? positive(G, a, 0.5) : a;
        r.v = pxl_ad_powi(g, base.v, n);
        r.bound = n < 0 ? pow(2, -n) : pow(fmax(base.bound, 1), n);
        break;
    }
    case AD_RND_EXP: r.v = pxl_ad_exp(g, clip(G, a, 6).v); r.bound = exp(fmin(a.bound, 6)); break;
    case AD_RND_SINH: r.v = pxl_ad_sinh(g, clip(G, a, 6).v); r.bound = sinh(fmin(a.bound, 6)); break;
    case AD_RND_COSH: r.v = pxl_ad_cosh(g, clip(G, a, 6).v); r.bound = cosh(fmin(a.bound, 6)); break;
    case AD_RND_LOG: {
        item x = positive(G, a, 0.5);
        r.v = pxl_ad_log(g, x.v);
        r.bound = fmax(fabs(log(0.5)), log(fmax(x.bound, 1)));
        break;
    }
    case AD_RND_SQRT: {
        item x = positive(G, a, 0.5);
        r.v = pxl_ad_sqrt(g, x.v);
        r.bound = sqrt(x.bound);
        break;
    }
    case AD_RND_HYPOT: r.v = pxl_ad_hypot(g, a.v, b.v); r.bound = a.bound + b.bound; break;
    case AD_RND_SIN: r.v = pxl_ad_sin(g, a.v); break;
    case AD_RND_COS: r.v = pxl_ad_cos(g, a.v); break;
    case AD_RND_TAN: r.v = pxl_ad_tan(g, clip(G, a, 1.2).v); r.bound = tan(fmin(a.bound, 1.2)); break;
    case AD_RND_ASIN: case AD_RND_ACOS: {
        pxl_ad_value x = G->raw ? a.v : pxl_ad_mul(g, pxl_ad_tanh(g, a.v), k(G, 0.9));
        r.v = op == AD_RND_ASIN ? pxl_ad_asin(g, x) : pxl_ad_acos(g, x);
        r.bound = PI;
        break;
    }
    case AD_RND_ATAN: r.v = pxl_ad_atan(g, a.v); r.bound = PI / 2; break;
    case AD_RND_ATAN2: r.v = pxl_ad_atan2(g, a.v, b.v); r.bound = PI; break;
    case AD_RND_TANH: r.v = pxl_ad_tanh(g, a.v); break;
    case AD_RND_SIGMOID: r.v = pxl_ad_sigmoid(g, a.v); break;
    case AD_RND_RELU: r.v = pxl_ad_relu(g, a.v); r.bound = a.bound; break;
    case AD_RND_SOFTPLUS: r.v = pxl_ad_softplus(g, a.v); r.bound = a.bound + 1; break;
    case AD_RND_ABS: r.v = pxl_ad_abs(g, a.v); r.bound = a.bound; break;
    case AD_RND_SIGN: r.v = pxl_ad_sign(g, a.v); break;
    case AD_RND_FLOOR: r.v = pxl_ad_floor(g, a.v); r.bound = a.bound + 1; break;
    case AD_RND_CEIL: r.v = pxl_ad_ceil(g, a.v); r.bound = a.bound + 1; break;
    case AD_RND_MIN: r.v = pxl_ad_min(g, a.v, b.v); r.bound = fmax(a.bound, b.bound); break;
    case AD_RND_MAX: r.v = pxl_ad_max(g, a.v, b.v); r.bound = fmax(a.bound, b.bound); break;
    case AD_RND_CLAMP: {
        item x = pick(G);
        r.v = pxl_ad_clamp(g, x.v, a.v, b.v);
        r.bound = fmax(x.bound, fmax(a.bound, b.bound));
        if (x.depth + 1 > r.depth) r.depth = x.depth + 1;
        break;
    }
    case AD_RND_SELECT: {
        item p = pick(G), q = pick(G);
        pxl_ad_value c;
        switch (below(&G->rng, 6)) {
        case 0: c = pxl_ad_lt(g, p.v, q.v); break;
        case 1: c = pxl_ad_le(g, p.v, q.v); break;
        case 2: c = pxl_ad_gt(g, p.v, q.v); break;
        case 3: c = pxl_ad_ge(g, p.v, q.v); break;
        case 4: c = pxl_ad_eq(g, p.v, q.v); break;
        default: c = pxl_ad_ne(g, p.v, q.v); break;
        }
        r.v = pxl_ad_select(g, c, a.v, b.v);
        r.bound = fmax(a.bound, b.bound);
        break;
    }
    default: r.v = a.v; r.bound = a.bound; break;
    }
    return clip(G, r, BOUND_CAP);
}

pxl_status ad_random_graph(pxl_ad_graph *g, uint64_t seed, const ad_random_options *o) {
    if (!g) return PXL_ERR_INVALID_ARG;
    ad_random_options d;
    memset(&d, 0, sizeof d);
    if (o) d = *o;
    int n_params = d.n_params > 0 ? d.n_params : 4;
    int n_inputs = d.n_inputs > 0 ? d.n_inputs : d.n_inputs < 0 ? 0 : 2;
    int n_ops = d.n_ops > 0 ? d.n_ops : 24;
    int n_outputs = d.n_outputs > 0 ? d.n_outputs : 3;
    uint64_t ops = d.ops ? d.ops : AD_RND_SCALAR_OPS;
    double range = d.range > 0 ? d.range : 2;
    ops &= AD_RND_BIT(AD_RND_COUNT) - 1;
    if (!ops) return PXL_ERR_INVALID_ARG;
    gen *G = calloc(1, sizeof *G);
    if (!G) return PXL_ERR_OUT_OF_MEMORY;
    G->g = g;
    G->rng = seed ^ 0x5eed0fad0000ull;
    G->raw = d.raw;
    G->max_depth = d.max_depth > 0 ? d.max_depth : 8;
    if (n_params + n_inputs + 2 + n_ops > POOL_MAX) n_ops = POOL_MAX - n_params - n_inputs - 2;
    for (int j = 0; j < n_params; j++) G->pool[G->n++] = (item){pxl_ad_param(g, j), range, 0};
    for (int c = 0; c < n_inputs; c++) G->pool[G->n++] = (item){pxl_ad_input(g, c), range, 0};
    static const double consts[] = {-2, -1, -0.5, 0.25, 0.5, 1, 1.5, 3};
    for (int c = 0; c < 2; c++) {
        double v = consts[below(&G->rng, 8)];
        G->pool[G->n++] = (item){pxl_ad_const(g, v), fabs(v), 0};
    }
    G->n_leaves = G->n;
    int kinds[AD_RND_COUNT], n_kinds = 0;
    for (int i = 0; i < AD_RND_COUNT; i++)
        if (ops & AD_RND_BIT(i)) kinds[n_kinds++] = i;
    for (int i = 0; i < n_ops && pxl_ad_graph_status(g) == PXL_OK; i++) {
        item r = build(G, kinds[below(&G->rng, n_kinds)]);
        int seen = 0; /* hash-consing may give a node already in the pool */
        for (int j = 0; j < G->n && !seen; j++) seen = G->pool[j].v.index == r.v.index;
        if (!seen) G->pool[G->n++] = r;
    }
    /* outputs: the last node built, then any built (or leaf, when none) */
    for (int r = 0; r < n_outputs && pxl_ad_graph_status(g) == PXL_OK; r++) {
        int i = G->n - 1;
        if (r > 0) i = G->n > G->n_leaves ? G->n_leaves + below(&G->rng, G->n - G->n_leaves) : below(&G->rng, G->n);
        pxl_ad_output(g, G->pool[i].v);
    }
    pxl_status s = pxl_ad_graph_status(g);
    free(G);
    return s;
}

int ad_random_point(pxl_ctx *ctx, const pxl_ad_program *prog, uint64_t *state, double range, int tries,
                    double *params, double *inputs) {
    pxl_ad_program_info info = pxl_ad_program_get_info(prog);
    if (range <= 0) range = 2;
    if (tries <= 0) tries = 100;
    size_t k = info.n_params, m = info.n_outputs;
    uint32_t *idx = malloc((k ? k : 1) * sizeof *idx);
    double *res = malloc((m ? m : 1) * sizeof *res), *jac = malloc((m * k > 0 ? m * k : 1) * sizeof *jac);
    int found = 0;
    for (size_t j = 0; idx && j < k; j++) idx[j] = (uint32_t)j;
    for (int t = 1; t <= tries && idx && res && jac && !found; t++) {
        for (size_t j = 0; j < k; j++) params[j] = ad_random_uniform(state, -range, range);
        for (size_t c = 0; c < info.n_inputs; c++) inputs[c] = ad_random_uniform(state, -range, range);
        if (pxl_ad_eval(ctx, prog, params, k, idx, inputs, 1, res, jac, NULL) != PXL_OK) break;
        int ok = 1;
        for (size_t i = 0; i < m && ok; i++) ok = isfinite(res[i]);
        for (size_t i = 0; i < m * k && ok; i++) ok = isfinite(jac[i]);
        if (ok) found = t;
    }
    free(idx);
    free(res);
    free(jac);
    return found;
}
