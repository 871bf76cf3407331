/*
 * Vec2 / Vec3 values and geometry helpers of AD graphs (pxl/ad.h): each is a
 * composition of the scalar builders, so programs that use them need nothing
 * new from the interpreter or the code generator.
 */
#include "ad_internal.h"

#include <stdint.h>
#include <stdio.h>

static const pxl_ad_value invalid = {0, 0};
static const pxl_ad_vec2 invalid2 = {{0, 0}, {0, 0}};
static const pxl_ad_vec3 invalid3 = {{0, 0}, {0, 0}, {0, 0}};

/* 1 when every component is a value of g (else the error is recorded, named
 * after the helper `what` and operand `name`). */
static int ok2(pxl_ad_graph *g, const char *what, const char *name, pxl_ad_vec2 v) {
    char n[32];
    snprintf(n, sizeof n, "%s.x", name);
    if (!ad_check_operand(g, what, n, v.x)) return 0;
    snprintf(n, sizeof n, "%s.y", name);
    return ad_check_operand(g, what, n, v.y);
}

static int ok3(pxl_ad_graph *g, const char *what, const char *name, pxl_ad_vec3 v) {
    char n[32];
    snprintf(n, sizeof n, "%s.x", name);
    if (!ad_check_operand(g, what, n, v.x)) return 0;
    snprintf(n, sizeof n, "%s.y", name);
    if (!ad_check_operand(g, what, n, v.y)) return 0;
    snprintf(n, sizeof n, "%s.z", name);
    return ad_check_operand(g, what, n, v.z);
}

/* A result is valid only when all its components are (a builder error
 * midway leaves the others dangling; the graph's error is recorded). */
static pxl_ad_vec2 done2(pxl_ad_graph *g, pxl_ad_vec2 r) {
    return pxl_ad_graph_status(g) == PXL_OK ? r : invalid2;
}
static pxl_ad_vec3 done3(pxl_ad_graph *g, pxl_ad_vec3 r) {
    return pxl_ad_graph_status(g) == PXL_OK ? r : invalid3;
}
static pxl_ad_value done1(pxl_ad_graph *g, pxl_ad_value r) {
    return pxl_ad_graph_status(g) == PXL_OK ? r : invalid;
}

/* ---- leaves --------------------------------------------------------------- */

/* Index i .. i + n - 1 must be nonnegative and fit an int32. */
static int leaf_range(pxl_ad_graph *g, const char *what, const char *noun, int32_t i, int n) {
    if (!g || pxl_ad_graph_status(g) != PXL_OK) return 0;
    char msg[96];
    if (i < 0) snprintf(msg, sizeof msg, "negative %s %d", noun, (int)i);
    else if ((int64_t)i + n - 1 > INT32_MAX) snprintf(msg, sizeof msg, "index %d + %d is too large", (int)i, n - 1);
    else return 1;
    ad_fail_builder(g, what, msg);
    return 0;
}

pxl_ad_vec2 pxl_ad_vec2_param(pxl_ad_graph *g, int32_t slot) {
    if (!leaf_range(g, "vec2_param", "slot", slot, 2)) return invalid2;
    return done2(g, (pxl_ad_vec2){pxl_ad_param(g, slot), pxl_ad_param(g, slot + 1)});
}

pxl_ad_vec2 pxl_ad_vec2_input(pxl_ad_graph *g, int32_t column) {
    if (!leaf_range(g, "vec2_input", "column", column, 2)) return invalid2;
    return done2(g, (pxl_ad_vec2){pxl_ad_input(g, column), pxl_ad_input(g, column + 1)});
}

pxl_ad_vec2 pxl_ad_vec2_const(pxl_ad_graph *g, double x, double y) {
    if (!g) return invalid2;
    return done2(g, (pxl_ad_vec2){pxl_ad_const(g, x), pxl_ad_const(g, y)});
}

pxl_ad_vec3 pxl_ad_vec3_param(pxl_ad_graph *g, int32_t slot) {
    if (!leaf_range(g, "vec3_param", "slot", slot, 3)) return invalid3;
    return done3(g, (pxl_ad_vec3){pxl_ad_param(g, slot), pxl_ad_param(g, slot + 1), pxl_ad_param(g, slot + 2)});
}

pxl_ad_vec3 pxl_ad_vec3_input(pxl_ad_graph *g, int32_t column) {
    if (!leaf_range(g, "vec3_input", "column", column, 3)) return invalid3;
    return done3(g,
                 (pxl_ad_vec3){pxl_ad_input(g, column), pxl_ad_input(g, column + 1), pxl_ad_input(g, column + 2)});
}

pxl_ad_vec3 pxl_ad_vec3_const(pxl_ad_graph *g, double x, double y, double z) {
    if (!g) return invalid3;
    return done3(g, (pxl_ad_vec3){pxl_ad_const(g, x), pxl_ad_const(g, y), pxl_ad_const(g, z)});
}

/* ---- the unchecked compositions (operands already checked) ---------------- */

static pxl_ad_vec3 sub3(pxl_ad_graph *g, pxl_ad_vec3 a, pxl_ad_vec3 b) {
    return (pxl_ad_vec3){pxl_ad_sub(g, a.x, b.x), pxl_ad_sub(g, a.y, b.y), pxl_ad_sub(g, a.z, b.z)};
}

static pxl_ad_value dot3(pxl_ad_graph *g, pxl_ad_vec3 a, pxl_ad_vec3 b) {
    return pxl_ad_add(g, pxl_ad_add(g, pxl_ad_mul(g, a.x, b.x), pxl_ad_mul(g, a.y, b.y)), pxl_ad_mul(g, a.z, b.z));
}

static pxl_ad_vec3 cross3(pxl_ad_graph *g, pxl_ad_vec3 a, pxl_ad_vec3 b) {
    return (pxl_ad_vec3){pxl_ad_sub(g, pxl_ad_mul(g, a.y, b.z), pxl_ad_mul(g, a.z, b.y)),
                         pxl_ad_sub(g, pxl_ad_mul(g, a.z, b.x), pxl_ad_mul(g, a.x, b.z)),
                         pxl_ad_sub(g, pxl_ad_mul(g, a.x, b.y), pxl_ad_mul(g, a.y, b.x))};
}

/* hypot, not sqrt of the squares: no overflow or underflow in the squares,
 * and hypot'(0, 0) = 0 where sqrt'(0) * 0 would be NaN. */
static pxl_ad_value len3(pxl_ad_graph *g, pxl_ad_vec3 a) {
    return pxl_ad_hypot(g, pxl_ad_hypot(g, a.x, a.y), a.z);
}

/* c / len when len > PXL_AD_TINY_LENGTH, else 0: written as le(len, tiny) ?
 * 0 : c / len so that a NaN length gives NaN (a comparison with NaN is
 * false). Only the branch taken receives an adjoint, so the 0 / 0 of the
 * other branch never reaches the Jacobian. */
static pxl_ad_value safe_div(pxl_ad_graph *g, pxl_ad_value small, pxl_ad_value zero, pxl_ad_value c,
                             pxl_ad_value len) {
    return pxl_ad_select(g, small, zero, pxl_ad_div(g, c, len));
}

static pxl_ad_vec3 normalize3(pxl_ad_graph *g, pxl_ad_vec3 a) {
    pxl_ad_value len = len3(g, a), zero = pxl_ad_const(g, 0);
    pxl_ad_value small = pxl_ad_le(g, len, pxl_ad_const(g, PXL_AD_TINY_LENGTH));
    return (pxl_ad_vec3){safe_div(g, small, zero, a.x, len), safe_div(g, small, zero, a.y, len),
                         safe_div(g, small, zero, a.z, len)};
}

/* ---- Vec2 ----------------------------------------------------------------- */

pxl_ad_vec2 pxl_ad_vec2_add(pxl_ad_graph *g, pxl_ad_vec2 a, pxl_ad_vec2 b) {
    if (!ok2(g, "vec2_add", "a", a) || !ok2(g, "vec2_add", "b", b)) return invalid2;
    return done2(g, (pxl_ad_vec2){pxl_ad_add(g, a.x, b.x), pxl_ad_add(g, a.y, b.y)});
}

pxl_ad_vec2 pxl_ad_vec2_sub(pxl_ad_graph *g, pxl_ad_vec2 a, pxl_ad_vec2 b) {
    if (!ok2(g, "vec2_sub", "a", a) || !ok2(g, "vec2_sub", "b", b)) return invalid2;
    return done2(g, (pxl_ad_vec2){pxl_ad_sub(g, a.x, b.x), pxl_ad_sub(g, a.y, b.y)});
}

pxl_ad_vec2 pxl_ad_vec2_scale(pxl_ad_graph *g, pxl_ad_vec2 a, pxl_ad_value s) {
    if (!ok2(g, "vec2_scale", "a", a) || !ad_check_operand(g, "vec2_scale", "s", s)) return invalid2;
    return done2(g, (pxl_ad_vec2){pxl_ad_mul(g, a.x, s), pxl_ad_mul(g, a.y, s)});
}

pxl_ad_vec2 pxl_ad_vec2_neg(pxl_ad_graph *g, pxl_ad_vec2 a) {
    if (!ok2(g, "vec2_neg", "a", a)) return invalid2;
    return done2(g, (pxl_ad_vec2){pxl_ad_neg(g, a.x), pxl_ad_neg(g, a.y)});
}

pxl_ad_value pxl_ad_vec2_dot(pxl_ad_graph *g, pxl_ad_vec2 a, pxl_ad_vec2 b) {
    if (!ok2(g, "vec2_dot", "a", a) || !ok2(g, "vec2_dot", "b", b)) return invalid;
    return done1(g, pxl_ad_add(g, pxl_ad_mul(g, a.x, b.x), pxl_ad_mul(g, a.y, b.y)));
}

pxl_ad_value pxl_ad_vec2_cross(pxl_ad_graph *g, pxl_ad_vec2 a, pxl_ad_vec2 b) {
    if (!ok2(g, "vec2_cross", "a", a) || !ok2(g, "vec2_cross", "b", b)) return invalid;
    return done1(g, pxl_ad_sub(g, pxl_ad_mul(g, a.x, b.y), pxl_ad_mul(g, a.y, b.x)));
}

pxl_ad_value pxl_ad_vec2_length(pxl_ad_graph *g, pxl_ad_vec2 a) {
    if (!ok2(g, "vec2_length", "a", a)) return invalid;
    return done1(g, pxl_ad_hypot(g, a.x, a.y));
}

pxl_ad_vec2 pxl_ad_vec2_normalize(pxl_ad_graph *g, pxl_ad_vec2 a) {
    if (!ok2(g, "vec2_normalize", "a", a)) return invalid2;
    pxl_ad_value len = pxl_ad_hypot(g, a.x, a.y), zero = pxl_ad_const(g, 0);
    pxl_ad_value small = pxl_ad_le(g, len, pxl_ad_const(g, PXL_AD_TINY_LENGTH));
    return done2(g, (pxl_ad_vec2){safe_div(g, small, zero, a.x, len), safe_div(g, small, zero, a.y, len)});
}

pxl_ad_value pxl_ad_vec2_distance(pxl_ad_graph *g, pxl_ad_vec2 a, pxl_ad_vec2 b) {
    if (!ok2(g, "vec2_distance", "a", a) || !ok2(g, "vec2_distance", "b", b)) return invalid;
    return done1(g, pxl_ad_hypot(g, pxl_ad_sub(g, a.x, b.x), pxl_ad_sub(g, a.y, b.y)));
}

pxl_status pxl_ad_vec2_output(pxl_ad_graph *g, pxl_ad_vec2 v) {
    if (!g) return PXL_ERR_INVALID_ARG;
    if (!ok2(g, "vec2_output", "v", v)) return pxl_ad_graph_status(g);
    pxl_status s = pxl_ad_output(g, v.x);
    return s != PXL_OK ? s : pxl_ad_output(g, v.y);
}

/* ---- Vec3 ----------------------------------------------------------------- */

pxl_ad_vec3 pxl_ad_vec3_add(pxl_ad_graph *g, pxl_ad_vec3 a, pxl_ad_vec3 b) {
    if (!ok3(g, "vec3_add", "a", a) || !ok3(g, "vec3_add", "b", b)) return invalid3;
    return done3(g, (pxl_ad_vec3){pxl_ad_add(g, a.x, b.x), pxl_ad_add(g, a.y, b.y), pxl_ad_add(g, a.z, b.z)});
}

pxl_ad_vec3 pxl_ad_vec3_sub(pxl_ad_graph *g, pxl_ad_vec3 a, pxl_ad_vec3 b) {
    if (!ok3(g, "vec3_sub", "a", a) || !ok3(g, "vec3_sub", "b", b)) return invalid3;
    return done3(g, sub3(g, a, b));
}

pxl_ad_vec3 pxl_ad_vec3_scale(pxl_ad_graph *g, pxl_ad_vec3 a, pxl_ad_value s) {
    if (!ok3(g, "vec3_scale", "a", a) || !ad_check_operand(g, "vec3_scale", "s", s)) return invalid3;
    return done3(g, (pxl_ad_vec3){pxl_ad_mul(g, a.x, s), pxl_ad_mul(g, a.y, s), pxl_ad_mul(g, a.z, s)});
}

pxl_ad_vec3 pxl_ad_vec3_neg(pxl_ad_graph *g, pxl_ad_vec3 a) {
    if (!ok3(g, "vec3_neg", "a", a)) return invalid3;
    return done3(g, (pxl_ad_vec3){pxl_ad_neg(g, a.x), pxl_ad_neg(g, a.y), pxl_ad_neg(g, a.z)});
}

pxl_ad_value pxl_ad_vec3_dot(pxl_ad_graph *g, pxl_ad_vec3 a, pxl_ad_vec3 b) {
    if (!ok3(g, "vec3_dot", "a", a) || !ok3(g, "vec3_dot", "b", b)) return invalid;
    return done1(g, dot3(g, a, b));
}

pxl_ad_vec3 pxl_ad_vec3_cross(pxl_ad_graph *g, pxl_ad_vec3 a, pxl_ad_vec3 b) {
    if (!ok3(g, "vec3_cross", "a", a) || !ok3(g, "vec3_cross", "b", b)) return invalid3;
    return done3(g, cross3(g, a, b));
}

pxl_ad_value pxl_ad_vec3_length(pxl_ad_graph *g, pxl_ad_vec3 a) {
    if (!ok3(g, "vec3_length", "a", a)) return invalid;
    return done1(g, len3(g, a));
}

pxl_ad_vec3 pxl_ad_vec3_normalize(pxl_ad_graph *g, pxl_ad_vec3 a) {
    if (!ok3(g, "vec3_normalize", "a", a)) return invalid3;
    return done3(g, normalize3(g, a));
}

pxl_ad_value pxl_ad_vec3_distance(pxl_ad_graph *g, pxl_ad_vec3 a, pxl_ad_vec3 b) {
    if (!ok3(g, "vec3_distance", "a", a) || !ok3(g, "vec3_distance", "b", b)) return invalid;
    return done1(g, len3(g, sub3(g, a, b)));
}

pxl_status pxl_ad_vec3_output(pxl_ad_graph *g, pxl_ad_vec3 v) {
    if (!g) return PXL_ERR_INVALID_ARG;
    if (!ok3(g, "vec3_output", "v", v)) return pxl_ad_graph_status(g);
    pxl_status s = pxl_ad_output(g, v.x);
    if (s == PXL_OK) s = pxl_ad_output(g, v.y);
    return s != PXL_OK ? s : pxl_ad_output(g, v.z);
}

/* ---- triangles -------------------------------------------------------------- */

static int ok_tri(pxl_ad_graph *g, const char *what, pxl_ad_vec3 a, pxl_ad_vec3 b, pxl_ad_vec3 c) {
    return ok3(g, what, "a", a) && ok3(g, what, "b", b) && ok3(g, what, "c", c);
}

pxl_ad_vec3 pxl_ad_triangle_normal(pxl_ad_graph *g, pxl_ad_vec3 a, pxl_ad_vec3 b, pxl_ad_vec3 c) {
    if (!ok_tri(g, "triangle_normal", a, b, c)) return invalid3;
    return done3(g, normalize3(g, cross3(g, sub3(g, b, a), sub3(g, c, a))));
}

pxl_ad_value pxl_ad_triangle_area(pxl_ad_graph *g, pxl_ad_vec3 a, pxl_ad_vec3 b, pxl_ad_vec3 c) {
    if (!ok_tri(g, "triangle_area", a, b, c)) return invalid;
    pxl_ad_value twice = len3(g, cross3(g, sub3(g, b, a), sub3(g, c, a)));
    return done1(g, pxl_ad_mul(g, twice, pxl_ad_const(g, 0.5)));
}

pxl_ad_value pxl_ad_triangle_angle(pxl_ad_graph *g, pxl_ad_vec3 a, pxl_ad_vec3 b, pxl_ad_vec3 c) {
    if (!ok_tri(g, "triangle_angle", a, b, c)) return invalid;
    pxl_ad_vec3 u = sub3(g, b, a), v = sub3(g, c, a);
    return done1(g, pxl_ad_atan2(g, len3(g, cross3(g, u, v)), dot3(g, u, v)));
}

pxl_ad_value pxl_ad_dihedral_angle(pxl_ad_graph *g, pxl_ad_vec3 a, pxl_ad_vec3 b, pxl_ad_vec3 c, pxl_ad_vec3 d) {
    if (!ok_tri(g, "dihedral_angle", a, b, c) || !ok3(g, "dihedral_angle", "d", d)) return invalid;
    /* n1 x n2 is parallel to e: e . (n1 x n2) = |e| |n1| |n2| sin(theta),
     * |e| n1 . n2 = |e| |n1| |n2| cos(theta) */
    pxl_ad_vec3 e = sub3(g, b, a);
    pxl_ad_vec3 n1 = cross3(g, e, sub3(g, c, a)), n2 = cross3(g, sub3(g, d, a), e);
    pxl_ad_value s = dot3(g, e, cross3(g, n1, n2));
    pxl_ad_value co = pxl_ad_mul(g, len3(g, e), dot3(g, n1, n2));
    return done1(g, pxl_ad_atan2(g, s, co));
}
