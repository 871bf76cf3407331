/*
 * The batched tape interpreter, included by eval.c once per precision and
 * instruction set with
 *   T       the scalar type (double or float)
 *   M(f)    the libm function f for T (f or f##f)
 *   L       the lanes of a batch (instances evaluated together)
 *   ATTR    function attributes (empty, or a target attribute)
 *   RUNB    the name of the function to define
 * It evaluates up to L consecutive instances at once: v[i * L + l] is node i's
 * value in lane l, adj[i * L + l] its adjoint. Each instruction is decoded
 * once per batch and its arithmetic loops over the lanes (so the compiler can
 * vectorise it). Per lane it performs exactly the scalar interpreter's
 * operations (eval_impl.h) in the same order, so the results are the same
 * bits: where the scalar code branches, the batch computes the operation for
 * every lane and keeps it only in the lanes that take the branch; a lane
 * whose adjoint is 0 keeps its operands' adjoints unchanged (pxl/ad.h: it
 * passes nothing on).
 *
 *   nl       instances in this batch (1..L); lanes nl..L-1 repeat lane 0's
 *            leaves and are never stored
 *   pidx     the first instance's parameter slots (instance l at pidx + l k)
 *   in       the first instance's inputs (instance l at in + l n_inputs)
 *   res      the first instance's residuals (instance l at res + l m)
 *   jac      the first instance's Jacobian rows (instance l at jac + l m k),
 *            or NULL: values only
 *   cone     for output o the instructions that reach it, in descending
 *            order, cone + cone_at[o] .. cone + cone_at[o + 1]; NULL: every
 *            instruction up to the output
 *   v, adj   scratch of n L values each
 */
/* a loop over the lanes; kept rolled, as GCC otherwise unrolls it fully
 * before its vectoriser sees it (and the arithmetic stays scalar) */
#define LANES _Pragma("GCC unroll 1") for (int l = 0; l < L; l++)
/* d[l] += t in the lanes whose adjoint is not 0 (and where cond holds) */
#define ACC(d, t) LANES { T t_ = (t); d[l] = g[l] != 0 ? d[l] + t_ : d[l]; }
#define ACC_IF(d, cond, t) LANES { T t_ = (t); d[l] = g[l] != 0 && (cond) ? d[l] + t_ : d[l]; }
#define SUB_IF(d, cond, t) LANES { T t_ = (t); d[l] = g[l] != 0 && (cond) ? d[l] - t_ : d[l]; }

ATTR static void RUNB(const pxl_ad_program *p, const double *params, const uint32_t *pidx, const double *in,
                      double *res, double *jac, size_t nl, const uint32_t *cone, const size_t *cone_at,
                      T *restrict v, T *restrict adj) {
    const pxl_ad_node *code = p->code;
    const size_t n = p->n, k = p->n_params, m = p->n_out, ni = p->n_inputs;
    for (size_t i = 0; i < n; i++) {
        const pxl_ad_node *c = &code[i];
        T *restrict r = v + i * L;
        const T *a = NULL, *b = NULL;
        if (c->op > PXL_AD_OP_INPUT) {
            a = v + (size_t)c->a * L;
            if (c->op >= PXL_AD_OP_ADD) b = v + (size_t)c->b * L;
        }
        switch ((pxl_ad_op)c->op) {
        case PXL_AD_OP_CONST: LANES r[l] = (T)c->k; break;
        case PXL_AD_OP_PARAM:
            for (size_t l = 0; l < L; l++) r[l] = (T)params[pidx[(l < nl ? l : 0) * k + (size_t)c->aux]];
            break;
        case PXL_AD_OP_INPUT:
            for (size_t l = 0; l < L; l++) r[l] = (T)in[(l < nl ? l : 0) * ni + (size_t)c->aux];
            break;
        case PXL_AD_OP_NEG: LANES r[l] = -a[l]; break;
        case PXL_AD_OP_EXP: LANES r[l] = M(exp)(a[l]); break;
        case PXL_AD_OP_LOG: LANES r[l] = M(log)(a[l]); break;
        case PXL_AD_OP_SQRT: LANES r[l] = M(sqrt)(a[l]); break;
        case PXL_AD_OP_POWI: LANES r[l] = M(pow)(a[l], (T)c->aux); break;
        case PXL_AD_OP_SIN: LANES r[l] = M(sin)(a[l]); break;
        case PXL_AD_OP_COS: LANES r[l] = M(cos)(a[l]); break;
        case PXL_AD_OP_TAN: LANES r[l] = M(tan)(a[l]); break;
        case PXL_AD_OP_ASIN: LANES r[l] = M(asin)(a[l]); break;
        case PXL_AD_OP_ACOS: LANES r[l] = M(acos)(a[l]); break;
        case PXL_AD_OP_ATAN: LANES r[l] = M(atan)(a[l]); break;
        case PXL_AD_OP_SINH: LANES r[l] = M(sinh)(a[l]); break;
        case PXL_AD_OP_COSH: LANES r[l] = M(cosh)(a[l]); break;
        case PXL_AD_OP_TANH: LANES r[l] = M(tanh)(a[l]); break;
        case PXL_AD_OP_SIGMOID:
            LANES {
                if (a[l] >= 0) r[l] = 1 / (1 + M(exp)(-a[l]));
                else {
                    T e = M(exp)(a[l]);
                    r[l] = e / (1 + e);
                }
            }
            break;
        case PXL_AD_OP_RELU: LANES r[l] = a[l] > 0 ? a[l] : 0; break;
        case PXL_AD_OP_SOFTPLUS:
            LANES r[l] = a[l] > 0 ? a[l] + M(log1p)(M(exp)(-a[l])) : M(log1p)(M(exp)(a[l]));
            break;
        case PXL_AD_OP_ABS: LANES r[l] = M(fabs)(a[l]); break;
        case PXL_AD_OP_SIGN:
            LANES r[l] = a[l] > 0 ? (T)1 : a[l] < 0 ? (T)-1 : a[l] == 0 ? (T)0 : a[l];
            break;
        case PXL_AD_OP_FLOOR: LANES r[l] = M(floor)(a[l]); break;
        case PXL_AD_OP_CEIL: LANES r[l] = M(ceil)(a[l]); break;
        case PXL_AD_OP_ADD: LANES r[l] = a[l] + b[l]; break;
        case PXL_AD_OP_SUB: LANES r[l] = a[l] - b[l]; break;
        case PXL_AD_OP_MUL: LANES r[l] = a[l] * b[l]; break;
        case PXL_AD_OP_DIV: LANES r[l] = a[l] / b[l]; break;
        case PXL_AD_OP_POW: LANES r[l] = M(pow)(a[l], b[l]); break;
        case PXL_AD_OP_HYPOT: LANES r[l] = M(hypot)(a[l], b[l]); break;
        case PXL_AD_OP_ATAN2: LANES r[l] = M(atan2)(a[l], b[l]); break;
        case PXL_AD_OP_MIN: LANES r[l] = b[l] < a[l] ? b[l] : a[l]; break;
        case PXL_AD_OP_MAX: LANES r[l] = b[l] > a[l] ? b[l] : a[l]; break;
        case PXL_AD_OP_LT: LANES r[l] = (T)(a[l] < b[l]); break;
        case PXL_AD_OP_LE: LANES r[l] = (T)(a[l] <= b[l]); break;
        case PXL_AD_OP_GT: LANES r[l] = (T)(a[l] > b[l]); break;
        case PXL_AD_OP_GE: LANES r[l] = (T)(a[l] >= b[l]); break;
        case PXL_AD_OP_EQ: LANES r[l] = (T)(a[l] == b[l]); break;
        case PXL_AD_OP_NE: LANES r[l] = (T)(a[l] != b[l]); break;
        case PXL_AD_OP_SELECT: {
            const T *x = v + (size_t)c->c * L;
            LANES r[l] = a[l] != 0 ? b[l] : x[l];
            break;
        }
        case PXL_AD_OP_COUNT: break;
        }
    }
    for (size_t o = 0; o < m; o++) {
        const size_t top = p->outputs[o];
        for (size_t l = 0; l < nl; l++) res[l * m + o] = (double)v[top * L + l];
        if (!jac) continue;
        if (o == 0) memset(jac, 0, nl * m * k * sizeof *jac); /* the batch's rows are contiguous */
        const size_t n_sweep = cone ? cone_at[o + 1] - cone_at[o] : top + 1;
        /* the sweep reads and writes the adjoints of the cone only */
        if (cone)
            for (size_t s = 0; s < n_sweep; s++) {
                T *z = adj + (size_t)cone[cone_at[o] + s] * L;
                LANES z[l] = 0;
            }
        else
            for (size_t i = 0; i < (top + 1) * L; i++) adj[i] = 0;
        LANES adj[top * L + (size_t)l] = 1;
        for (size_t s = 0; s < n_sweep; s++) {
            const size_t i = cone ? cone[cone_at[o] + s] : top - s;
            const T *restrict g = adj + i * L;
            int nz = 0;
            LANES nz += g[l] != 0;
            if (!nz) continue; /* passes nothing on (see pxl/ad.h) */
            const pxl_ad_node *c = &code[i];
            const T *restrict y = v + i * L;
            const T *restrict a = NULL, *restrict b = NULL;
            T *da = NULL, *db = NULL;
            if (c->op > PXL_AD_OP_INPUT) {
                a = v + (size_t)c->a * L;
                da = adj + (size_t)c->a * L;
                if (c->op >= PXL_AD_OP_ADD) {
                    b = v + (size_t)c->b * L;
                    db = adj + (size_t)c->b * L;
                }
            }
            switch ((pxl_ad_op)c->op) {
            case PXL_AD_OP_CONST: case PXL_AD_OP_INPUT: break;
            case PXL_AD_OP_PARAM:
                for (size_t l = 0; l < nl; l++)
                    if (g[l] != 0) jac[l * m * k + o * k + (size_t)c->aux] += (double)g[l];
                break;
            case PXL_AD_OP_NEG: SUB_IF(da, 1, g[l]); break;
            case PXL_AD_OP_EXP: ACC(da, g[l] * y[l]); break;
            case PXL_AD_OP_LOG: ACC(da, g[l] / a[l]); break;
            case PXL_AD_OP_SQRT: ACC(da, g[l] * ((T)0.5 / y[l])); break;
            case PXL_AD_OP_POWI:
                if (c->aux != 0) ACC(da, g[l] * ((T)c->aux * M(pow)(a[l], (T)(c->aux - 1))));
                break;
            case PXL_AD_OP_SIN: ACC(da, g[l] * M(cos)(a[l])); break;
            case PXL_AD_OP_COS: SUB_IF(da, 1, g[l] * M(sin)(a[l])); break;
            case PXL_AD_OP_TAN: ACC(da, g[l] * (1 + y[l] * y[l])); break;
            case PXL_AD_OP_ASIN: ACC(da, g[l] / M(sqrt)(1 - a[l] * a[l])); break;
            case PXL_AD_OP_ACOS: SUB_IF(da, 1, g[l] / M(sqrt)(1 - a[l] * a[l])); break;
            case PXL_AD_OP_ATAN: ACC(da, g[l] / (1 + a[l] * a[l])); break;
            case PXL_AD_OP_SINH: ACC(da, g[l] * M(cosh)(a[l])); break;
            case PXL_AD_OP_COSH: ACC(da, g[l] * M(sinh)(a[l])); break;
            case PXL_AD_OP_TANH: ACC(da, g[l] * (1 - y[l] * y[l])); break;
            case PXL_AD_OP_SIGMOID: ACC(da, g[l] * (y[l] * (1 - y[l]))); break;
            case PXL_AD_OP_RELU: ACC_IF(da, a[l] > 0, g[l]); break;
            case PXL_AD_OP_SOFTPLUS:
                LANES {
                    if (g[l] == 0) continue;
                    T s_;
                    if (a[l] >= 0) s_ = 1 / (1 + M(exp)(-a[l]));
                    else {
                        T e = M(exp)(a[l]);
                        s_ = e / (1 + e);
                    }
                    da[l] += g[l] * s_;
                }
                break;
            case PXL_AD_OP_ABS:
                ACC_IF(da, a[l] > 0, g[l]);
                SUB_IF(da, a[l] < 0, g[l]);
                break;
            case PXL_AD_OP_SIGN: case PXL_AD_OP_FLOOR: case PXL_AD_OP_CEIL: break;
            case PXL_AD_OP_ADD:
                ACC(da, g[l]);
                ACC(db, g[l]);
                break;
            case PXL_AD_OP_SUB:
                ACC(da, g[l]);
                SUB_IF(db, 1, g[l]);
                break;
            case PXL_AD_OP_MUL:
                ACC(da, g[l] * b[l]);
                ACC(db, g[l] * a[l]);
                break;
            case PXL_AD_OP_DIV:
                ACC(da, g[l] / b[l]);
                SUB_IF(db, 1, g[l] * (y[l] / b[l]));
                break;
            case PXL_AD_OP_POW:
                LANES {
                    if (g[l] == 0) continue;
                    if (b[l] != 0) da[l] += g[l] * (b[l] * M(pow)(a[l], b[l] - 1));
                    if (a[l] > 0) db[l] += g[l] * (y[l] * M(log)(a[l]));
                }
                break;
            case PXL_AD_OP_HYPOT:
                ACC_IF(da, y[l] != 0, g[l] * (a[l] / y[l]));
                ACC_IF(db, y[l] != 0, g[l] * (b[l] / y[l]));
                break;
            case PXL_AD_OP_ATAN2:
                /* atan2(a = y, b = x); d = a^2 + b^2 */
                LANES {
                    T d = a[l] * a[l] + b[l] * b[l], t_ = g[l] * (b[l] / d);
                    da[l] = g[l] != 0 && d != 0 ? da[l] + t_ : da[l];
                }
                LANES {
                    T d = a[l] * a[l] + b[l] * b[l], t_ = g[l] * (a[l] / d);
                    db[l] = g[l] != 0 && d != 0 ? db[l] - t_ : db[l];
                }
                break;
            case PXL_AD_OP_MIN:
                ACC_IF(db, b[l] < a[l], g[l]);
                ACC_IF(da, !(b[l] < a[l]), g[l]);
                break;
            case PXL_AD_OP_MAX:
                ACC_IF(db, b[l] > a[l], g[l]);
                ACC_IF(da, !(b[l] > a[l]), g[l]);
                break;
            case PXL_AD_OP_LT: case PXL_AD_OP_LE: case PXL_AD_OP_GT:
            case PXL_AD_OP_GE: case PXL_AD_OP_EQ: case PXL_AD_OP_NE: break;
            case PXL_AD_OP_SELECT: {
                /* b is the operand taken when a != 0, c the other (db is adj[c->b]) */
                T *dc = adj + (size_t)c->c * L;
                ACC_IF(db, a[l] != 0, g[l]);
                ACC_IF(dc, !(a[l] != 0), g[l]);
                break;
            }
            case PXL_AD_OP_COUNT: break;
            }
        }
    }
}

#undef LANES
#undef ACC
#undef ACC_IF
#undef SUB_IF
