/*
 * WGSL code generation for AD programs (pxl/ad.h, pxl_ad_program_wgsl).
 *
 * One kernel per program, one invocation per instance. The forward sweep is
 * the tape as straight-line code (one `let` per instruction, common
 * subexpressions already shared by the graph); the reverse sweep, when the
 * kernel computes the Jacobian, is straight-line code too, once per output
 * and only over the instructions that output depends on. Adjoints are local
 * variables; a contribution whose factor may be infinite is taken only when
 * the adjoint is not zero (select), which is the CPU interpreter's rule "a
 * node whose adjoint is exactly 0 passes nothing on" (eval_impl.h), so both
 * give the same Jacobians up to f32 rounding.
 *
 * Bindings of the generated kernel (group 0):
 *   0  P   array<f32>  the parameter vector
 *   1  I   array<u32>  instance i's slot j reads P[I[i*k + j]]
 *   2  X   array<f32>  instance i's column c is X[i*n_inputs + c]
 *   3  R   array<f32>  residual r of instance i at R[i*m + r]
 *   4  J   array<f32>  (Jacobian kernels) d r / d slot j at J[(i*m + r)*k + j]
 *   5  U   uniform     n (instances of this dispatch), row (invocations per
 *                      row of the 2-D grid), inf and nan bit patterns
 * Bindings 1 and 2 exist only when k > 0 and n_inputs > 0 (a binding the
 * kernel does not use would be refused by the pipeline layout).
 */
#include "ad_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Workgroup memory the staged form may use: WGSL's guaranteed minimum. */
#define AD_STAGE_BYTES_MAX 16384

typedef struct sbuf {
    pxl_ctx *ctx;
    char *p;
    size_t len, cap;
    int oom;
} sbuf;

PXL_PRINTF(2, 3) static void put(sbuf *s, const char *fmt, ...) {
    if (s->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int w = vsnprintf(s->p ? s->p + s->len : NULL, s->p ? s->cap - s->len : 0, fmt, ap);
        va_end(ap);
        if (w < 0) {
            s->oom = 1;
            return;
        }
        if (s->p && s->len + (size_t)w < s->cap) {
            s->len += (size_t)w;
            return;
        }
        size_t cap = s->cap ? s->cap * 2 : 4096;
        while (cap < s->len + (size_t)w + 1) cap *= 2;
        char *q = pxl_realloc(s->ctx, s->p, cap);
        if (!q) {
            s->oom = 1;
            return;
        }
        s->p = q;
        s->cap = cap;
    }
}

/* A WGSL f32 literal for c: finite values rounded to f32 and printed so that
 * they parse back to the same f32; infinities and NaN through the uniform
 * block's bit patterns (WGSL has no literal for them). */
static void put_f32(sbuf *s, double c) {
    float f = (float)c;
    if (isnan(f)) put(s, "U.nan");
    else if (isinf(f)) put(s, f > 0 ? "U.inf" : "(-U.inf)");
    else {
        char t[48];
        snprintf(t, sizeof t, "%.9g", (double)f);
        put(s, "%s%s", t, strpbrk(t, ".eEn") ? "" : ".0");
    }
}

/* Functions the generated code calls where WGSL's builtins differ from the
 * C library the CPU interpreter uses (negative bases of pow, atan2 at the
 * origin, overflow in tanh and softplus, NaN in min/max). */
static const char prelude[] =
    "fn ad_powi(a: f32, n: i32) -> f32 {\n"
    "  var e = u32(abs(n)); if (n == -2147483648) { e = 2147483648u; }\n"
    "  var b = a; var r = 1.0;\n"
    "  loop { if (e == 0u) { break; } if ((e & 1u) != 0u) { r = r * b; } e = e >> 1u; b = b * b; }\n"
    "  return select(r, 1.0 / r, n < 0);\n"
    "}\n"
    "fn ad_pow(a: f32, b: f32) -> f32 {\n"
    "  if (b == 0.0) { return 1.0; }\n"
    "  if (a == 0.0) { return select(U.inf, 0.0, b > 0.0); }\n"
    "  if (a < 0.0) {\n"
    "    if (floor(b) != b) { return U.nan; }\n"
    "    let r = pow(-a, b);\n"
    "    return select(r, -r, fract(b * 0.5) != 0.0);\n"
    "  }\n"
    "  return pow(a, b);\n"
    "}\n"
    "fn ad_hypot(a: f32, b: f32) -> f32 {\n"
    "  let x = abs(a); let y = abs(b); let m = max(x, y); let s = min(x, y);\n"
    "  if (m == 0.0 || m == U.inf) { return m; }\n"
    "  let q = s / m; return m * sqrt(1.0 + q * q);\n"
    "}\n"
    "fn ad_atan2(y: f32, x: f32) -> f32 { if (y == 0.0 && x == 0.0) { return 0.0; } return atan2(y, x); }\n"
    "fn ad_tanh(a: f32) -> f32 { let t = exp(-2.0 * abs(a)); let r = (1.0 - t) / (1.0 + t); return select(r, -r, a < 0.0); }\n"
    "fn ad_sigmoid(a: f32) -> f32 {\n"
    "  if (a >= 0.0) { return 1.0 / (1.0 + exp(-a)); }\n"
    "  let e = exp(a); return e / (1.0 + e);\n"
    "}\n"
    "fn ad_log1p(x: f32) -> f32 { let u = 1.0 + x; if (u == 1.0) { return x; } return log(u) * x / (u - 1.0); }\n"
    "fn ad_softplus(a: f32) -> f32 { if (a > 0.0) { return a + ad_log1p(exp(-a)); } return ad_log1p(exp(a)); }\n"
    "fn ad_sign(a: f32) -> f32 { if (a > 0.0) { return 1.0; } if (a < 0.0) { return -1.0; } return a; }\n"
    "fn ad_min(a: f32, b: f32) -> f32 { return select(a, b, b < a); }\n"
    "fn ad_max(a: f32, b: f32) -> f32 { return select(a, b, b > a); }\n"
    "fn ad_b(c: bool) -> f32 { return select(0.0, 1.0, c); }\n";

/* The forward expression of instruction i. */
static void put_forward(sbuf *s, const pxl_ad_node *c, size_t i, int staged) {
    const int a = c->a, b = c->b;
    put(s, "  let v%zu = ", i);
    switch ((pxl_ad_op)c->op) {
    case PXL_AD_OP_CONST: put_f32(s, c->k); break;
    case PXL_AD_OP_PARAM: put(s, staged ? "P[SI[ib + %du]]" : "P[I[ib + %du]]", c->aux); break;
    case PXL_AD_OP_INPUT: put(s, staged ? "SX[ix + %du]" : "X[ix + %du]", c->aux); break;
    case PXL_AD_OP_NEG: put(s, "-v%d", a); break;
    case PXL_AD_OP_EXP: put(s, "exp(v%d)", a); break;
    case PXL_AD_OP_LOG: put(s, "log(v%d)", a); break;
    case PXL_AD_OP_SQRT: put(s, "sqrt(v%d)", a); break;
    case PXL_AD_OP_POWI: put(s, "ad_powi(v%d, %d)", a, c->aux); break;
    case PXL_AD_OP_SIN: put(s, "sin(v%d)", a); break;
    case PXL_AD_OP_COS: put(s, "cos(v%d)", a); break;
    case PXL_AD_OP_TAN: put(s, "tan(v%d)", a); break;
    case PXL_AD_OP_ASIN: put(s, "asin(v%d)", a); break;
    case PXL_AD_OP_ACOS: put(s, "acos(v%d)", a); break;
    case PXL_AD_OP_ATAN: put(s, "atan(v%d)", a); break;
    case PXL_AD_OP_SINH: put(s, "sinh(v%d)", a); break;
    case PXL_AD_OP_COSH: put(s, "cosh(v%d)", a); break;
    case PXL_AD_OP_TANH: put(s, "ad_tanh(v%d)", a); break;
    case PXL_AD_OP_SIGMOID: put(s, "ad_sigmoid(v%d)", a); break;
    case PXL_AD_OP_RELU: put(s, "select(0.0, v%d, v%d > 0.0)", a, a); break;
    case PXL_AD_OP_SOFTPLUS: put(s, "ad_softplus(v%d)", a); break;
    case PXL_AD_OP_ABS: put(s, "abs(v%d)", a); break;
    case PXL_AD_OP_SIGN: put(s, "ad_sign(v%d)", a); break;
    case PXL_AD_OP_FLOOR: put(s, "floor(v%d)", a); break;
    case PXL_AD_OP_CEIL: put(s, "ceil(v%d)", a); break;
    case PXL_AD_OP_ADD: put(s, "v%d + v%d", a, b); break;
    case PXL_AD_OP_SUB: put(s, "v%d - v%d", a, b); break;
    case PXL_AD_OP_MUL: put(s, "v%d * v%d", a, b); break;
    case PXL_AD_OP_DIV: put(s, "v%d / v%d", a, b); break;
    case PXL_AD_OP_POW: put(s, "ad_pow(v%d, v%d)", a, b); break;
    case PXL_AD_OP_HYPOT: put(s, "ad_hypot(v%d, v%d)", a, b); break;
    case PXL_AD_OP_ATAN2: put(s, "ad_atan2(v%d, v%d)", a, b); break;
    case PXL_AD_OP_MIN: put(s, "ad_min(v%d, v%d)", a, b); break;
    case PXL_AD_OP_MAX: put(s, "ad_max(v%d, v%d)", a, b); break;
    case PXL_AD_OP_LT: put(s, "ad_b(v%d < v%d)", a, b); break;
    case PXL_AD_OP_LE: put(s, "ad_b(v%d <= v%d)", a, b); break;
    case PXL_AD_OP_GT: put(s, "ad_b(v%d > v%d)", a, b); break;
    case PXL_AD_OP_GE: put(s, "ad_b(v%d >= v%d)", a, b); break;
    case PXL_AD_OP_EQ: put(s, "ad_b(v%d == v%d)", a, b); break;
    case PXL_AD_OP_NE: put(s, "ad_b(v%d != v%d)", a, b); break;
    case PXL_AD_OP_SELECT: put(s, "select(v%d, v%d, v%d != 0.0)", c->c, b, a); break;
    case PXL_AD_OP_COUNT: put(s, "0.0"); break;
    }
    put(s, ";\n");
}

/* g<o>_<x> += contribution, written "gX = gX + (...)". `guard` wraps the
 * contribution in select(0, ..., g != 0). */
PXL_PRINTF(7, 8)
static void acc(sbuf *s, size_t o, int x, size_t i, int guard, const char *sign, const char *fmt, ...) {
    char e[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e, sizeof e, fmt, ap);
    va_end(ap);
    if (guard) put(s, "    g%d = g%d %s select(0.0, %s, g%zu != 0.0);\n", x, x, sign, e, i);
    else put(s, "    g%d = g%d %s %s;\n", x, x, sign, e);
    (void)o;
}

/* The reverse-sweep statements of instruction i (its adjoint is g<i>). */
static void put_reverse(sbuf *s, const pxl_ad_node *c, size_t o, size_t i) {
    const int a = c->a, b = c->b;
    switch ((pxl_ad_op)c->op) {
    case PXL_AD_OP_CONST: case PXL_AD_OP_INPUT: case PXL_AD_OP_PARAM: break;
    case PXL_AD_OP_NEG: acc(s, o, a, i, 0, "-", "g%zu", i); break;
    case PXL_AD_OP_EXP: acc(s, o, a, i, 1, "+", "g%zu * v%zu", i, i); break;
    case PXL_AD_OP_LOG: acc(s, o, a, i, 1, "+", "g%zu / v%d", i, a); break;
    case PXL_AD_OP_SQRT: acc(s, o, a, i, 1, "+", "g%zu * (0.5 / v%zu)", i, i); break;
    case PXL_AD_OP_POWI:
        if (c->aux != 0)
            acc(s, o, a, i, 1, "+", "g%zu * (%d.0 * ad_powi(v%d, %d))", i, c->aux, a, c->aux - 1);
        break;
    case PXL_AD_OP_SIN: acc(s, o, a, i, 1, "+", "g%zu * cos(v%d)", i, a); break;
    case PXL_AD_OP_COS: acc(s, o, a, i, 1, "-", "g%zu * sin(v%d)", i, a); break;
    case PXL_AD_OP_TAN: acc(s, o, a, i, 1, "+", "g%zu * (1.0 + v%zu * v%zu)", i, i, i); break;
    case PXL_AD_OP_ASIN: acc(s, o, a, i, 1, "+", "g%zu / sqrt(1.0 - v%d * v%d)", i, a, a); break;
    case PXL_AD_OP_ACOS: acc(s, o, a, i, 1, "-", "g%zu / sqrt(1.0 - v%d * v%d)", i, a, a); break;
    case PXL_AD_OP_ATAN: acc(s, o, a, i, 1, "+", "g%zu / (1.0 + v%d * v%d)", i, a, a); break;
    case PXL_AD_OP_SINH: acc(s, o, a, i, 1, "+", "g%zu * cosh(v%d)", i, a); break;
    case PXL_AD_OP_COSH: acc(s, o, a, i, 1, "+", "g%zu * sinh(v%d)", i, a); break;
    case PXL_AD_OP_TANH: acc(s, o, a, i, 1, "+", "g%zu * (1.0 - v%zu * v%zu)", i, i, i); break;
    case PXL_AD_OP_SIGMOID: acc(s, o, a, i, 1, "+", "g%zu * (v%zu * (1.0 - v%zu))", i, i, i); break;
    case PXL_AD_OP_RELU: acc(s, o, a, i, 0, "+", "select(0.0, g%zu, v%d > 0.0)", i, a); break;
    case PXL_AD_OP_SOFTPLUS: acc(s, o, a, i, 1, "+", "g%zu * ad_sigmoid(v%d)", i, a); break;
    case PXL_AD_OP_ABS:
        acc(s, o, a, i, 0, "+", "select(select(0.0, -g%zu, v%d < 0.0), g%zu, v%d > 0.0)", i, a, i, a);
        break;
    case PXL_AD_OP_SIGN: case PXL_AD_OP_FLOOR: case PXL_AD_OP_CEIL: break;
    case PXL_AD_OP_ADD:
        acc(s, o, a, i, 0, "+", "g%zu", i);
        acc(s, o, b, i, 0, "+", "g%zu", i);
        break;
    case PXL_AD_OP_SUB:
        acc(s, o, a, i, 0, "+", "g%zu", i);
        acc(s, o, b, i, 0, "-", "g%zu", i);
        break;
    case PXL_AD_OP_MUL:
        acc(s, o, a, i, 1, "+", "g%zu * v%d", i, b);
        acc(s, o, b, i, 1, "+", "g%zu * v%d", i, a);
        break;
    case PXL_AD_OP_DIV:
        acc(s, o, a, i, 1, "+", "g%zu / v%d", i, b);
        acc(s, o, b, i, 1, "-", "g%zu * (v%zu / v%d)", i, i, b);
        break;
    case PXL_AD_OP_POW:
        put(s, "    g%d = g%d + select(0.0, g%zu * (v%d * ad_pow(v%d, v%d - 1.0)), g%zu != 0.0 && v%d != 0.0);\n", a,
            a, i, b, a, b, i, b);
        put(s, "    g%d = g%d + select(0.0, g%zu * (v%zu * log(v%d)), g%zu != 0.0 && v%d > 0.0);\n", b, b, i, i, a,
            i, a);
        break;
    case PXL_AD_OP_HYPOT:
        put(s, "    g%d = g%d + select(0.0, g%zu * (v%d / v%zu), g%zu != 0.0 && v%zu != 0.0);\n", a, a, i, a, i, i,
            i);
        put(s, "    g%d = g%d + select(0.0, g%zu * (v%d / v%zu), g%zu != 0.0 && v%zu != 0.0);\n", b, b, i, b, i, i,
            i);
        break;
    case PXL_AD_OP_ATAN2:
        /* d/dy = x / (x^2 + y^2), d/dx = -y / (x^2 + y^2); when max(|x|, |y|)
         * = m < 1 both are scaled by m first: x^2 + y^2 underflows for |y|
         * near 1e-20, and GPUs may flush the subnormal result to zero (m >= 1,
         * infinities included, takes the plain formula, as the CPU does) */
        put(s, "    { let m = max(abs(v%d), abs(v%d)); let sc = select(1.0, m, m < 1.0);\n", a, b);
        put(s, "    let ys = v%d / sc; let xs = v%d / sc; let d = ys * ys + xs * xs;\n", a, b);
        put(s, "    g%d = g%d + select(0.0, g%zu * ((xs / d) / sc), g%zu != 0.0 && m != 0.0);\n", a, a, i, i);
        put(s, "    g%d = g%d - select(0.0, g%zu * ((ys / d) / sc), g%zu != 0.0 && m != 0.0); }\n", b, b, i, i);
        break;
    case PXL_AD_OP_MIN:
        put(s, "    g%d = g%d + select(0.0, g%zu, v%d < v%d);\n", b, b, i, b, a);
        put(s, "    g%d = g%d + select(g%zu, 0.0, v%d < v%d);\n", a, a, i, b, a);
        break;
    case PXL_AD_OP_MAX:
        put(s, "    g%d = g%d + select(0.0, g%zu, v%d > v%d);\n", b, b, i, b, a);
        put(s, "    g%d = g%d + select(g%zu, 0.0, v%d > v%d);\n", a, a, i, b, a);
        break;
    case PXL_AD_OP_LT: case PXL_AD_OP_LE: case PXL_AD_OP_GT:
    case PXL_AD_OP_GE: case PXL_AD_OP_EQ: case PXL_AD_OP_NE: break;
    case PXL_AD_OP_SELECT:
        put(s, "    g%d = g%d + select(0.0, g%zu, v%d != 0.0);\n", b, b, i, a);
        put(s, "    g%d = g%d + select(g%zu, 0.0, v%d != 0.0);\n", c->c, c->c, i, a);
        break;
    case PXL_AD_OP_COUNT: break;
    }
}

/* Operands of an instruction (up to 3); returns how many. */
static int operands(const pxl_ad_node *c, int32_t out[3]) {
    if (c->op <= PXL_AD_OP_INPUT) return 0;
    out[0] = c->a;
    if (c->op < PXL_AD_OP_ADD) return 1;
    out[1] = c->b;
    if (c->op != PXL_AD_OP_SELECT) return 2;
    out[2] = c->c;
    return 3;
}

/* The staged form's copy of a workgroup's block of `per` words per instance
 * between storage `global` and workgroup memory `local` (load: global to
 * local, else local to global), as W consecutive invocations: contiguous. */
static void put_block_copy(sbuf *s, const char *global, const char *local, size_t per, size_t W, int load) {
    put(s, "  for (var t = 0u; t < %zuu; t = t + 1u) { let e = base * %zuu + t * %zuu + lid; if (e < U.n * %zuu) { ",
        per, per, W, per);
    if (load) put(s, "%s[t * %zuu + lid] = %s[e]; } }\n", local, W, global);
    else put(s, "%s[e] = %s[t * %zuu + lid]; } }\n", global, local, W);
}

pxl_status ad_codegen(pxl_ctx *ctx, const pxl_ad_program *p, int jacobian, uint32_t workgroup, char **out,
                          size_t *out_len) {
    static const char fn[] = "pxl_ad_program_wgsl";
    const size_t n = p->n, k = p->n_params, m = p->n_out, ni = p->n_inputs;
    sbuf s = {ctx, NULL, 0, 0, 0};
    unsigned char *cone = n ? pxl_calloc(ctx, n, 1) : NULL;
    if (n && !cone) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    put(&s, "// pxl autodiff kernel: %zu instructions, %zu parameter slots, %zu inputs, %zu outputs%s\n", n, k, ni, m,
        jacobian ? ", with the Jacobian" : "");
    put(&s, "struct Uni { n: u32, row: u32, inf: f32, nan: f32 }\n");
    put(&s, "@group(0) @binding(0) var<storage, read> P: array<f32>;\n");
    if (k) put(&s, "@group(0) @binding(1) var<storage, read> I: array<u32>;\n");
    if (ni) put(&s, "@group(0) @binding(2) var<storage, read> X: array<f32>;\n");
    put(&s, "@group(0) @binding(3) var<storage, read_write> R: array<f32>;\n");
    if (jacobian && k) put(&s, "@group(0) @binding(4) var<storage, read_write> J: array<f32>;\n");
    put(&s, "@group(0) @binding(5) var<uniform> U: Uni;\n");
    put(&s, "%s", prelude);
    /* Staged: a workgroup's indices and inputs are loaded, and its residuals
     * and Jacobian rows stored, as contiguous blocks through workgroup memory
     * (consecutive invocations touch consecutive words), instead of each
     * invocation reading and writing its own strided run. Used when the
     * blocks fit WGSL's guaranteed 16 KiB of workgroup storage. */
    const size_t mk = jacobian ? m * k : 0;
    const size_t stage_words = (size_t)workgroup * (k + ni + m + mk);
    const int staged = stage_words * 4 <= AD_STAGE_BYTES_MAX;
    const size_t W = workgroup;
    if (staged) {
        if (k) put(&s, "var<workgroup> SI: array<u32, %zu>;\n", W * k);
        if (ni) put(&s, "var<workgroup> SX: array<f32, %zu>;\n", W * ni);
        put(&s, "var<workgroup> SR: array<f32, %zu>;\n", W * m);
        if (mk) put(&s, "var<workgroup> SJ: array<f32, %zu>;\n", W * mk);
    }
    put(&s, "@compute @workgroup_size(%u)\n", workgroup);
    put(&s, "fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {\n");
    put(&s, "  let inst = gid.x + gid.y * U.row;\n");
    /* P must be referenced even when no instruction reads a parameter; a slot
     * or a column the outputs do not use still has its binding */
    put(&s, "  _ = &P;\n");
    if (k) put(&s, "  _ = &I;\n");
    if (ni) put(&s, "  _ = &X;\n");
    if (staged) {
        /* the workgroup's instances are base .. base + W - 1 (row is a multiple of W) */
        put(&s, "  let base = inst - lid;\n");
        if (k) put_block_copy(&s, "I", "SI", k, W, 1);
        if (ni) put_block_copy(&s, "X", "SX", ni, W, 1);
        put(&s, "  workgroupBarrier();\n");
        /* invocations past the end compute on zeroed data (workgroup memory
         * starts zeroed; index 0 is a valid parameter) and store nothing */
        if (k) put(&s, "  let ib = lid * %zuu;\n", k);
        if (ni) put(&s, "  let ix = lid * %zuu;\n", ni);
    } else {
        put(&s, "  if (inst >= U.n) { return; }\n");
        if (k) put(&s, "  let ib = inst * %zuu;\n", k);
        if (ni) put(&s, "  let ix = inst * %zuu;\n", ni);
    }
    for (size_t i = 0; i < n; i++) put_forward(&s, &p->code[i], i, staged);
    for (size_t o = 0; o < m; o++) {
        if (staged) put(&s, "  SR[lid * %zuu + %zuu] = v%u;\n", m, o, p->outputs[o]);
        else put(&s, "  R[inst * %zuu + %zuu] = v%u;\n", m, o, p->outputs[o]);
    }
    if (jacobian && k) {
        for (size_t o = 0; o < m; o++) {
            const size_t top = p->outputs[o];
            memset(cone, 0, n);
            cone[top] = 1;
            for (size_t i = top + 1; i-- > 0;) {
                if (!cone[i]) continue;
                int32_t ops[3];
                int no = operands(&p->code[i], ops);
                for (int q = 0; q < no; q++) cone[ops[q]] = 1;
            }
            if (staged) put(&s, "  {\n    let jr = (lid * %zuu + %zuu) * %zuu;\n", m, o, k);
            else put(&s, "  {\n    let jr = (inst * %zuu + %zuu) * %zuu;\n", m, o, k);
            /* every instruction of the cone has an adjoint; those of constants and
             * inputs are written and never read */
            for (size_t i = 0; i <= top; i++)
                if (cone[i]) put(&s, "    var g%zu = %s;\n", i, i == top ? "1.0" : "0.0");
            for (size_t i = top + 1; i-- > 0;)
                if (cone[i]) put_reverse(&s, &p->code[i], o, i);
            /* slot j's derivative is the adjoint of its PARAM instruction (each
             * slot has one: the graph shares leaves), 0 outside the cone */
            for (size_t j = 0; j < k; j++) {
                size_t at = n;
                for (size_t i = 0; i <= top; i++)
                    if (cone[i] && p->code[i].op == PXL_AD_OP_PARAM && (size_t)p->code[i].aux == j) at = i;
                const char *dst = staged ? "SJ" : "J";
                if (at < n) put(&s, "    %s[jr + %zuu] = g%zu;\n", dst, j, at);
                else put(&s, "    %s[jr + %zuu] = 0.0;\n", dst, j);
            }
            put(&s, "  }\n");
        }
    }
    if (staged) {
        put(&s, "  workgroupBarrier();\n");
        put_block_copy(&s, "R", "SR", m, W, 0);
        if (mk) put_block_copy(&s, "J", "SJ", mk, W, 0);
    }
    put(&s, "}\n");
    pxl_free(ctx, cone);
    if (s.oom) {
        pxl_free(ctx, s.p);
        return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "%s: out of memory generating WGSL (%zu instructions)", fn, n);
    }
    *out = s.p;
    if (out_len) *out_len = s.len;
    return PXL_OK;
}
