// Workgroup tree reductions over one row (src/ops/wgsl/rowwise.wgsl): each of
// the WG invocations has written its partial for the row into slot lid of
// the workgroup arrays below; tree_*(lid) waits for all of them
// (workgroupBarrier), then halves the active range WG/2, WG/4, ... 1, slot lid
// merging slot lid + h, with a barrier after every step. The result is in
// slot 0, visible to every invocation on return. Call from uniform control
// flow only (every invocation of the workgroup, as the barriers require).
//
// The including module provides `override WG: u32` (a power of two).
//
//   tree_sum_a      red_a: sum
//   tree_softmax    red_a: running max m, red_b: sum of exp(z - m), red_u: a "bad value" flag (or)
//   tree_welford    red_a: count n, red_b: mean, red_c: M2 (Chan et al.'s pairwise merge)
//   tree_argmax     red_u: order key, red_v: index; the best by ranks_before

var<workgroup> red_a: array<f32, WG>;
var<workgroup> red_b: array<f32, WG>;
var<workgroup> red_c: array<f32, WG>;
var<workgroup> red_u: array<u32, WG>;
var<workgroup> red_v: array<u32, WG>;

const EXP_FLOOR: f32 = -200.0;        // exp arguments are clamped here: exp(-200) is 0 in f32

fn exp_c(v: f32) -> f32 {
    return exp(max(v, EXP_FLOOR));
}

// key a (index ia) ranks before key b (index ib): larger key first, then lower index
fn ranks_before(ka: u32, ia: u32, kb: u32, ib: u32) -> bool {
    return ka > kb || (ka == kb && ia < ib);
}

fn tree_sum_a(lid: u32) {
    workgroupBarrier();
    for (var h = WG / 2u; h > 0u; h = h / 2u) {
        if (lid < h) { red_a[lid] = red_a[lid] + red_a[lid + h]; }
        workgroupBarrier();
    }
}

// (m1, s1) and (m2, s2) merge as m = max(m1, m2), s = s1 exp(m1 - m) + s2 exp(m2 - m)
fn tree_softmax(lid: u32) {
    workgroupBarrier();
    for (var h = WG / 2u; h > 0u; h = h / 2u) {
        if (lid < h) {
            let m1 = red_a[lid];
            let m2 = red_a[lid + h];
            let mm = max(m1, m2);
            red_b[lid] = red_b[lid] * exp_c(m1 - mm) + red_b[lid + h] * exp_c(m2 - mm);
            red_a[lid] = mm;
            red_u[lid] = red_u[lid] | red_u[lid + h];
        }
        workgroupBarrier();
    }
}

// n = na + nb, d = mb - ma, mean = ma + d nb / n, M2 = M2a + M2b + d^2 na nb / n
fn tree_welford(lid: u32) {
    workgroupBarrier();
    for (var h = WG / 2u; h > 0u; h = h / 2u) {
        if (lid < h) {
            let na = red_a[lid];
            let nb = red_a[lid + h];
            let nn = na + nb;
            if (nb > 0.0) {
                let d = red_b[lid + h] - red_b[lid];
                let fb = nb / nn;
                red_b[lid] = red_b[lid] + d * fb;
                red_c[lid] = red_c[lid] + red_c[lid + h] + d * d * na * fb;
                red_a[lid] = nn;
            }
        }
        workgroupBarrier();
    }
}

fn tree_argmax(lid: u32) {
    workgroupBarrier();
    for (var h = WG / 2u; h > 0u; h = h / 2u) {
        if (lid < h && ranks_before(red_u[lid + h], red_v[lid + h], red_u[lid], red_v[lid])) {
            red_u[lid] = red_u[lid + h];
            red_v[lid] = red_v[lid + h];
        }
        workgroupBarrier();
    }
}
