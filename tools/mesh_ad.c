/*
 * The residual graphs of `pxl mesh`, built with pxl/ad.h: the ARAP edge
 * residual (one template, one instance per directed edge) and the
 * developability energy of a vertex star (one template per valence), plus
 * the ARAP set-up of an icosphere and its problem file.
 */
#include "mesh.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef pxl_ad_value val;
typedef struct {
    val x, y, z;
} vec3;

static vec3 v_param(pxl_ad_graph *g, int slot) {
    vec3 r = {pxl_ad_param(g, slot), pxl_ad_param(g, slot + 1), pxl_ad_param(g, slot + 2)};
    return r;
}
static vec3 v_input(pxl_ad_graph *g, int col) {
    vec3 r = {pxl_ad_input(g, col), pxl_ad_input(g, col + 1), pxl_ad_input(g, col + 2)};
    return r;
}
static vec3 v_add(pxl_ad_graph *g, vec3 a, vec3 b) {
    vec3 r = {pxl_ad_add(g, a.x, b.x), pxl_ad_add(g, a.y, b.y), pxl_ad_add(g, a.z, b.z)};
    return r;
}
static vec3 v_sub(pxl_ad_graph *g, vec3 a, vec3 b) {
    vec3 r = {pxl_ad_sub(g, a.x, b.x), pxl_ad_sub(g, a.y, b.y), pxl_ad_sub(g, a.z, b.z)};
    return r;
}
static vec3 v_scale(pxl_ad_graph *g, vec3 a, val s) {
    vec3 r = {pxl_ad_mul(g, a.x, s), pxl_ad_mul(g, a.y, s), pxl_ad_mul(g, a.z, s)};
    return r;
}
static val v_dot(pxl_ad_graph *g, vec3 a, vec3 b) {
    return pxl_ad_add(g, pxl_ad_add(g, pxl_ad_mul(g, a.x, b.x), pxl_ad_mul(g, a.y, b.y)), pxl_ad_mul(g, a.z, b.z));
}
static vec3 v_cross(pxl_ad_graph *g, vec3 a, vec3 b) {
    vec3 r = {pxl_ad_sub(g, pxl_ad_mul(g, a.y, b.z), pxl_ad_mul(g, a.z, b.y)),
              pxl_ad_sub(g, pxl_ad_mul(g, a.z, b.x), pxl_ad_mul(g, a.x, b.z)),
              pxl_ad_sub(g, pxl_ad_mul(g, a.x, b.y), pxl_ad_mul(g, a.y, b.x))};
    return r;
}
static vec3 v_select(pxl_ad_graph *g, val c, vec3 a, vec3 b) {
    vec3 r = {pxl_ad_select(g, c, a.x, b.x), pxl_ad_select(g, c, a.y, b.y), pxl_ad_select(g, c, a.z, b.z)};
    return r;
}

/* Compiles g after its outputs are set; frees g. */
static pxl_status finish(pxl_ad_graph *g, pxl_ad_program **out) {
    pxl_status s = pxl_ad_graph_status(g);
    if (s == PXL_OK) s = pxl_ad_compile(g, out);
    pxl_ad_graph_free(g);
    return s;
}

/*
 * R(w) e, Rodrigues as Ceres' AngleAxisRotatePoint: theta^2 = w.w; above
 * 1e-12, e cos + (k x e) sin + k (k.e)(1 - cos) with k = w / theta; else the
 * first-order e + w x e. The angle is taken of select(big, theta^2, 1), so
 * the branch not taken stays finite (no 0/0 at w = 0) and sqrt is never
 * differentiated at 0.
 */
static vec3 rodrigues(pxl_ad_graph *g, vec3 w, vec3 e) {
    val t2 = v_dot(g, w, w);
    val big = pxl_ad_gt(g, t2, pxl_ad_const(g, 1e-12));
    val th = pxl_ad_sqrt(g, pxl_ad_select(g, big, t2, pxl_ad_const(g, 1)));
    val c = pxl_ad_cos(g, th), s = pxl_ad_sin(g, th);
    vec3 k = v_scale(g, w, pxl_ad_div(g, pxl_ad_const(g, 1), th));
    val kd = pxl_ad_mul(g, v_dot(g, k, e), pxl_ad_sub(g, pxl_ad_const(g, 1), c));
    vec3 rb = v_add(g, v_add(g, v_scale(g, e, c), v_scale(g, v_cross(g, k, e), s)), v_scale(g, k, kd));
    vec3 rs = v_add(g, e, v_cross(g, w, e));
    return v_select(g, big, rb, rs);
}

pxl_status mesh_arap_program(pxl_ctx *ctx, pxl_ad_program **out) {
    *out = NULL;
    pxl_ad_graph *g = NULL;
    pxl_status s = pxl_ad_graph_create(ctx, &g);
    if (s != PXL_OK) return s;
    vec3 pi = v_param(g, 0), pj = v_param(g, 3), w = v_param(g, 6), e = v_input(g, 0);
    vec3 r = v_sub(g, v_sub(g, pi, pj), rodrigues(g, w, e));
    pxl_ad_output(g, r.x);
    pxl_ad_output(g, r.y);
    pxl_ad_output(g, r.z);
    return finish(g, out);
}

/*
 * lambda_min of the symmetric 3x3 matrix with entries a00 a11 a22 (diagonal)
 * and a01 a02 a12, by the trigonometric method:
 *   q = tr A / 3,  p = sqrt(|A - qI|_F^2 / 6),  B = (A - qI) / p,
 *   r = det B / 2, clamped to [-1, 1],
 *   lambda_min = q + 2 p cos(acos(r)/3 + 2 pi/3).
 * Where acos' is infinite:
 *  - r = 1: the two smallest eigenvalues are equal (a flat star has 0, 0),
 *    where lambda_min has a kink; for r >= 1 - 1e-15 the cosine is its value
 *    there, -1/2, so lambda = q - p, whose gradient is that of the mean of
 *    the two equal eigenvalues (the value moves by at most 4e-8 p, the size
 *    of the rounding error of the formula there);
 *  - r = -1: the two largest are equal; lambda_min is smooth there and the
 *    cosine is replaced, within 1e-3 of -1, by its series
 *    -1 + d/9 + 4 d^2/243 (d = 1 + r, error below 5e-12).
 * The acos branch reads a stand-in (0) where it is not taken, so nothing
 * infinite is differentiated. A = qI (p = 0): lambda = q, by select, with p
 * taken of a stand-in.
 */
static val sym3_lambda_min(pxl_ad_graph *g, val a00, val a11, val a22, val a01, val a02, val a12) {
    val third = pxl_ad_const(g, 1.0 / 3.0);
    val q = pxl_ad_mul(g, pxl_ad_add(g, pxl_ad_add(g, a00, a11), a22), third);
    val d0 = pxl_ad_sub(g, a00, q), d1 = pxl_ad_sub(g, a11, q), d2 = pxl_ad_sub(g, a22, q);
    val off = pxl_ad_add(g, pxl_ad_add(g, pxl_ad_mul(g, a01, a01), pxl_ad_mul(g, a02, a02)), pxl_ad_mul(g, a12, a12));
    val p2 = pxl_ad_add(g, pxl_ad_add(g, pxl_ad_add(g, pxl_ad_mul(g, d0, d0), pxl_ad_mul(g, d1, d1)), pxl_ad_mul(g, d2, d2)),
                        pxl_ad_mul(g, pxl_ad_const(g, 2), off));
    val ok = pxl_ad_gt(g, p2, pxl_ad_const(g, 1e-30));
    val p = pxl_ad_sqrt(g, pxl_ad_div(g, pxl_ad_select(g, ok, p2, pxl_ad_const(g, 6)), pxl_ad_const(g, 6)));
    val ip = pxl_ad_div(g, pxl_ad_const(g, 1), p);
    val b00 = pxl_ad_mul(g, d0, ip), b11 = pxl_ad_mul(g, d1, ip), b22 = pxl_ad_mul(g, d2, ip);
    val b01 = pxl_ad_mul(g, a01, ip), b02 = pxl_ad_mul(g, a02, ip), b12 = pxl_ad_mul(g, a12, ip);
    /* det B = b00 (b11 b22 - b12^2) - b01 (b01 b22 - b12 b02) + b02 (b01 b12 - b11 b02) */
    val m0 = pxl_ad_sub(g, pxl_ad_mul(g, b11, b22), pxl_ad_mul(g, b12, b12));
    val m1 = pxl_ad_sub(g, pxl_ad_mul(g, b01, b22), pxl_ad_mul(g, b12, b02));
    val m2 = pxl_ad_sub(g, pxl_ad_mul(g, b01, b12), pxl_ad_mul(g, b11, b02));
    val det = pxl_ad_add(g, pxl_ad_sub(g, pxl_ad_mul(g, b00, m0), pxl_ad_mul(g, b01, m1)), pxl_ad_mul(g, b02, m2));
    val r = pxl_ad_clamp(g, pxl_ad_mul(g, det, pxl_ad_const(g, 0.5)), pxl_ad_const(g, -1), pxl_ad_const(g, 1));
    val d = pxl_ad_add(g, r, pxl_ad_const(g, 1));
    val near_lo = pxl_ad_lt(g, d, pxl_ad_const(g, 1e-3));
    val near_hi = pxl_ad_ge(g, r, pxl_ad_const(g, 1 - 1e-15));
    val r_mid = pxl_ad_select(g, pxl_ad_add(g, near_lo, near_hi), pxl_ad_const(g, 0), r);
    val phi = pxl_ad_add(g, pxl_ad_mul(g, pxl_ad_acos(g, r_mid), third), pxl_ad_const(g, 2.0943951023931957));
    val series = pxl_ad_add(g, pxl_ad_add(g, pxl_ad_const(g, -1), pxl_ad_mul(g, d, pxl_ad_const(g, 1.0 / 9.0))),
                            pxl_ad_mul(g, pxl_ad_mul(g, d, d), pxl_ad_const(g, 4.0 / 243.0)));
    val cs = pxl_ad_select(g, near_hi, pxl_ad_const(g, -0.5), pxl_ad_select(g, near_lo, series, pxl_ad_cos(g, phi)));
    val lam = pxl_ad_add(g, q, pxl_ad_mul(g, pxl_ad_mul(g, pxl_ad_const(g, 2), p), cs));
    return pxl_ad_select(g, ok, lam, q);
}

pxl_status mesh_dev_program(pxl_ctx *ctx, int valence, pxl_ad_program **out) {
    *out = NULL;
    if (valence < 3 || valence > 64) return PXL_ERR_INVALID_ARG;
    pxl_ad_graph *g = NULL;
    pxl_status s = pxl_ad_graph_create(ctx, &g);
    if (s != PXL_OK) return s;
    vec3 c = v_param(g, 0);
    val zero = pxl_ad_const(g, 0);
    val a00 = zero, a11 = zero, a22 = zero, a01 = zero, a02 = zero, a12 = zero;
    for (int j = 0; j < valence; j++) {
        vec3 u = v_sub(g, v_param(g, 3 + 3 * j), c);
        vec3 v = v_sub(g, v_param(g, 3 + 3 * ((j + 1) % valence)), c);
        vec3 cr = v_cross(g, u, v);
        val len = pxl_ad_sqrt(g, v_dot(g, cr, cr));
        vec3 n = v_scale(g, cr, pxl_ad_div(g, pxl_ad_const(g, 1), len));
        val theta = pxl_ad_atan2(g, len, v_dot(g, u, v)); /* the tip angle at the centre */
        vec3 tn = v_scale(g, n, theta);
        a00 = pxl_ad_add(g, a00, pxl_ad_mul(g, tn.x, n.x));
        a11 = pxl_ad_add(g, a11, pxl_ad_mul(g, tn.y, n.y));
        a22 = pxl_ad_add(g, a22, pxl_ad_mul(g, tn.z, n.z));
        a01 = pxl_ad_add(g, a01, pxl_ad_mul(g, tn.x, n.y));
        a02 = pxl_ad_add(g, a02, pxl_ad_mul(g, tn.x, n.z));
        a12 = pxl_ad_add(g, a12, pxl_ad_mul(g, tn.y, n.z));
    }
    pxl_ad_output(g, sym3_lambda_min(g, a00, a11, a22, a01, a02, a12));
    return finish(g, out);
}

void mesh_arap_free(mesh_arap *a) {
    if (!a) return;
    free(a->x);
    free(a->index);
    free(a->input);
    free(a->dir);
    free(a->handle);
    free(a->target);
    memset(a, 0, sizeof *a);
}

int mesh_arap_setup(const mesh *m, const uint32_t *edges, size_t n_edges, mesh_arap *out) {
    memset(out, 0, sizeof *out);
    if (m->nv > UINT32_MAX / 6 || n_edges > SIZE_MAX / 18 / sizeof(uint32_t)) return -1;
    mesh_arap a = {0};
    a.nv = m->nv;
    a.n_dir = 2 * n_edges;
    a.x = malloc(6 * m->nv * sizeof *a.x + 1);
    a.index = malloc(9 * a.n_dir * sizeof *a.index + 1);
    a.input = malloc(3 * a.n_dir * sizeof *a.input + 1);
    a.dir = malloc(2 * a.n_dir * sizeof *a.dir + 1);
    a.handle = malloc(m->nv * sizeof *a.handle + 1);
    a.target = malloc(3 * m->nv * sizeof *a.target + 1);
    if (!a.x || !a.index || !a.input || !a.dir || !a.handle || !a.target) {
        mesh_arap_free(&a);
        return -1;
    }
    for (size_t i = 0; i < m->nv; i++) {
        const double *q = m->v + 3 * i;
        double *x = a.x + 6 * i;
        memcpy(x, q, 3 * sizeof *q);
        x[3] = x[4] = x[5] = 0;
        if (q[2] >= 0.8 || q[2] <= -0.8) {
            double *t = a.target + 3 * a.n_handles;
            memcpy(t, q, 3 * sizeof *q);
            if (q[2] >= 0.8) {
                t[0] += 0.3;
                t[2] += 0.4;
            }
            memcpy(x, t, 3 * sizeof *t);
            a.handle[a.n_handles++] = (uint32_t)i;
        }
    }
    for (size_t e = 0; e < a.n_dir; e++) {
        uint32_t i = edges[2 * (e / 2) + (e & 1)], j = edges[2 * (e / 2) + 1 - (e & 1)];
        a.dir[2 * e] = i;
        a.dir[2 * e + 1] = j;
        uint32_t *ix = a.index + 9 * e;
        for (uint32_t c = 0; c < 3; c++) {
            ix[c] = 6 * i + c;
            ix[3 + c] = 6 * j + c;
            ix[6 + c] = 6 * i + 3 + c;
            a.input[3 * e + c] = m->v[3 * (size_t)i + c] - m->v[3 * (size_t)j + c];
        }
    }
    *out = a;
    return 0;
}

int mesh_arap_export_text(const mesh *m, const mesh_arap *a, char **out, size_t *len) {
    *out = NULL;
    *len = 0;
    size_t cap = 64 + m->nv * 80 + a->n_dir * 24 + a->n_handles * 90;
    char *s = malloc(cap);
    if (!s) return -1;
    size_t n = (size_t)snprintf(s, cap, "pxl-arap 1\n%zu %zu %zu\n", m->nv, a->n_dir, a->n_handles);
    for (size_t i = 0; i < m->nv; i++)
        n += (size_t)snprintf(s + n, cap - n, "%.17g %.17g %.17g\n", m->v[3 * i], m->v[3 * i + 1], m->v[3 * i + 2]);
    for (size_t e = 0; e < a->n_dir; e++)
        n += (size_t)snprintf(s + n, cap - n, "%u %u\n", a->dir[2 * e], a->dir[2 * e + 1]);
    for (size_t h = 0; h < a->n_handles; h++)
        n += (size_t)snprintf(s + n, cap - n, "%u %.17g %.17g %.17g\n", a->handle[h], a->target[3 * h],
                              a->target[3 * h + 1], a->target[3 * h + 2]);
    *out = s;
    *len = n;
    return 0;
}
