/*
 * The tape interpreter, included by eval.c once per precision with
 *   T       the scalar type (double or float)
 *   M(f)    the libm function f for T (f or f##f)
 *   RUN     the name of the function to define
 * For one instance: a forward sweep storing every value in v[], then, when
 * jac is not NULL, one reverse sweep per output accumulating adjoints in adj[].
 */
static void RUN(const pxl_ad_program *p, const double *params, const uint32_t *pidx, const double *in,
                double *res, double *jac, T *v, T *adj) {
    const pxl_ad_node *code = p->code;
    const size_t n = p->n;
    for (size_t i = 0; i < n; i++) {
        const pxl_ad_node *c = &code[i];
        T a = 0, b = 0, r = 0;
        if (c->op > PXL_AD_OP_INPUT) {
            a = v[c->a];
            if (c->op >= PXL_AD_OP_ADD) b = v[c->b];
        }
        switch ((pxl_ad_op)c->op) {
        case PXL_AD_OP_CONST: r = (T)c->k; break;
        case PXL_AD_OP_PARAM: r = (T)params[pidx[c->aux]]; break;
        case PXL_AD_OP_INPUT: r = (T)in[c->aux]; break;
        case PXL_AD_OP_NEG: r = -a; break;
        case PXL_AD_OP_EXP: r = M(exp)(a); break;
        case PXL_AD_OP_LOG: r = M(log)(a); break;
        case PXL_AD_OP_SQRT: r = M(sqrt)(a); break;
        case PXL_AD_OP_POWI: r = M(pow)(a, (T)c->aux); break;
        case PXL_AD_OP_SIN: r = M(sin)(a); break;
        case PXL_AD_OP_COS: r = M(cos)(a); break;
        case PXL_AD_OP_TAN: r = M(tan)(a); break;
        case PXL_AD_OP_ASIN: r = M(asin)(a); break;
        case PXL_AD_OP_ACOS: r = M(acos)(a); break;
        case PXL_AD_OP_ATAN: r = M(atan)(a); break;
        case PXL_AD_OP_SINH: r = M(sinh)(a); break;
        case PXL_AD_OP_COSH: r = M(cosh)(a); break;
        case PXL_AD_OP_TANH: r = M(tanh)(a); break;
        case PXL_AD_OP_SIGMOID:
            if (a >= 0) r = 1 / (1 + M(exp)(-a));
            else {
                T e = M(exp)(a);
                r = e / (1 + e);
            }
            break;
        case PXL_AD_OP_RELU: r = a > 0 ? a : 0; break;
        case PXL_AD_OP_SOFTPLUS: r = a > 0 ? a + M(log1p)(M(exp)(-a)) : M(log1p)(M(exp)(a)); break;
        case PXL_AD_OP_ABS: r = M(fabs)(a); break;
        case PXL_AD_OP_SIGN: r = a > 0 ? (T)1 : a < 0 ? (T)-1 : a == 0 ? (T)0 : a; break;
        case PXL_AD_OP_FLOOR: r = M(floor)(a); break;
        case PXL_AD_OP_CEIL: r = M(ceil)(a); break;
        case PXL_AD_OP_ADD: r = a + b; break;
        case PXL_AD_OP_SUB: r = a - b; break;
        case PXL_AD_OP_MUL: r = a * b; break;
        case PXL_AD_OP_DIV: r = a / b; break;
        case PXL_AD_OP_POW: r = M(pow)(a, b); break;
        case PXL_AD_OP_HYPOT: r = M(hypot)(a, b); break;
        case PXL_AD_OP_ATAN2: r = M(atan2)(a, b); break;
        case PXL_AD_OP_MIN: r = b < a ? b : a; break;
        case PXL_AD_OP_MAX: r = b > a ? b : a; break;
        case PXL_AD_OP_LT: r = (T)(a < b); break;
        case PXL_AD_OP_LE: r = (T)(a <= b); break;
        case PXL_AD_OP_GT: r = (T)(a > b); break;
        case PXL_AD_OP_GE: r = (T)(a >= b); break;
        case PXL_AD_OP_EQ: r = (T)(a == b); break;
        case PXL_AD_OP_NE: r = (T)(a != b); break;
        case PXL_AD_OP_SELECT: r = a != 0 ? v[c->b] : v[c->c]; break;
        case PXL_AD_OP_COUNT: break;
        }
        v[i] = r;
    }
    const size_t k = p->n_params;
    for (size_t o = 0; o < p->n_out; o++) {
        const size_t top = p->outputs[o];
        res[o] = (double)v[top];
        if (!jac) continue;
        double *row = jac + o * k;
        for (size_t j = 0; j < k; j++) row[j] = 0;
        for (size_t i = 0; i <= top; i++) adj[i] = 0;
        adj[top] = 1;
        for (size_t i = top + 1; i-- > 0;) {
            const T g = adj[i];
            if (g == 0) continue; /* passes nothing on (see pxl/ad.h) */
            const pxl_ad_node *c = &code[i];
            const T y = v[i];
            T a = 0, b = 0;
            if (c->op > PXL_AD_OP_INPUT) {
                a = v[c->a];
                if (c->op >= PXL_AD_OP_ADD && c->op != PXL_AD_OP_SELECT) b = v[c->b];
            }
            T *da = c->op > PXL_AD_OP_INPUT ? &adj[c->a] : NULL;
            T *db = c->op >= PXL_AD_OP_ADD && c->op != PXL_AD_OP_SELECT ? &adj[c->b] : NULL;
            switch ((pxl_ad_op)c->op) {
            case PXL_AD_OP_CONST: case PXL_AD_OP_INPUT: break;
            case PXL_AD_OP_PARAM: row[c->aux] += (double)g; break;
            case PXL_AD_OP_NEG: *da -= g; break;
            case PXL_AD_OP_EXP: *da += g * y; break;
            case PXL_AD_OP_LOG: *da += g / a; break;
            case PXL_AD_OP_SQRT: *da += g * ((T)0.5 / y); break;
            case PXL_AD_OP_POWI:
                if (c->aux != 0) *da += g * ((T)c->aux * M(pow)(a, (T)(c->aux - 1)));
                break;
            case PXL_AD_OP_SIN: *da += g * M(cos)(a); break;
            case PXL_AD_OP_COS: *da -= g * M(sin)(a); break;
            case PXL_AD_OP_TAN: *da += g * (1 + y * y); break;
            case PXL_AD_OP_ASIN: *da += g / M(sqrt)(1 - a * a); break;
            case PXL_AD_OP_ACOS: *da -= g / M(sqrt)(1 - a * a); break;
            case PXL_AD_OP_ATAN: *da += g / (1 + a * a); break;
            case PXL_AD_OP_SINH: *da += g * M(cosh)(a); break;
            case PXL_AD_OP_COSH: *da += g * M(sinh)(a); break;
            case PXL_AD_OP_TANH: *da += g * (1 - y * y); break;
            case PXL_AD_OP_SIGMOID: *da += g * (y * (1 - y)); break;
            case PXL_AD_OP_RELU: if (a > 0) *da += g; break;
            case PXL_AD_OP_SOFTPLUS: {
                T s;
                if (a >= 0) s = 1 / (1 + M(exp)(-a));
                else {
                    T e = M(exp)(a);
                    s = e / (1 + e);
                }
                *da += g * s;
                break;
            }
            case PXL_AD_OP_ABS:
                if (a > 0) *da += g;
                else if (a < 0) *da -= g;
                break;
            case PXL_AD_OP_SIGN: case PXL_AD_OP_FLOOR: case PXL_AD_OP_CEIL: break;
            case PXL_AD_OP_ADD: *da += g; *db += g; break;
            case PXL_AD_OP_SUB: *da += g; *db -= g; break;
            case PXL_AD_OP_MUL: *da += g * b; *db += g * a; break;
            case PXL_AD_OP_DIV: *da += g / b; *db -= g * (y / b); break;
            case PXL_AD_OP_POW:
                if (b != 0) *da += g * (b * M(pow)(a, b - 1));
                if (a > 0) *db += g * (y * M(log)(a));
                break;
            case PXL_AD_OP_HYPOT:
                if (y != 0) {
                    *da += g * (a / y);
                    *db += g * (b / y);
                }
                break;
            case PXL_AD_OP_ATAN2: {
                T d = a * a + b * b; /* atan2(a = y, b = x) */
                if (d != 0) {
                    *da += g * (b / d);
                    *db -= g * (a / d);
                }
                break;
            }
            case PXL_AD_OP_MIN:
                if (b < a) *db += g;
                else *da += g;
                break;
            case PXL_AD_OP_MAX:
                if (b > a) *db += g;
                else *da += g;
                break;
            case PXL_AD_OP_LT: case PXL_AD_OP_LE: case PXL_AD_OP_GT:
            case PXL_AD_OP_GE: case PXL_AD_OP_EQ: case PXL_AD_OP_NE: break;
            case PXL_AD_OP_SELECT:
                if (a != 0) adj[c->b] += g;
                else adj[c->c] += g;
                break;
            case PXL_AD_OP_COUNT: break;
            }
        }
    }
}
