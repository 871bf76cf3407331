// The body of kmv46.wgsl and kmv46_sg.wgsl (kmv46.wgsl describes the kernel).

#include "kmv4_body.wgsl"   // A, B, C, p, the overrides, kmv4_sums, kmv4q_sums, round_a, rows_out_at
#include "word_of.wgsl"   // word_of

@group(0) @binding(6) var<storage, read> B6: array<vec4<u32>>;

// Q6_K's readers: B6's 16-byte words for kmv6q_sums.wgsl (Q8A2), and for
// kmv6_sums.wgsl its words and f16 scales at even byte offsets
fn q6v(i: u32) -> vec4<u32> { return B6[i]; }
fn b6_word(i: u32) -> u32 { return B6[i >> 2u][i & 3u]; }
fn q6_word(o: u32) -> u32 { return word_of(b6_word(o >> 2u), b6_word((o >> 2u) + 1u), o); }
fn q6_half(o: u32) -> f32 { return half_of(b6_word(o >> 2u), o); }

#include "kmv6_sums.wgsl"   // kmv6_sums

override TPR2: u32 = 64u;   // invocations per row group of the second (Q6_K) product (a power of two, SGW .. WG)

// Workgroups of the first product: its row groups' (WG / TPR a workgroup).
fn first_groups() -> u32 {
    let per = (WG / TPR) * ROWS;
    return (p.N + per - 1u) / per;
}

// The second product's rows for the group (of TPR2) of invocation lid of
// workgroup f (counted from the second product's first): the byte offsets of
// its Q6_K rows (clamped to the last row) and its first row.
fn second_rows(lid: u32, f: u32, n0: ptr<function, u32>) -> array<u32, 8> {
    *n0 = (f * (WG / TPR2) + lid / TPR2) * ROWS;
    var rows: array<u32, 8>;
    for (var r = 0u; r < ROWS; r = r + 1u) { rows[r] = p.off_b2 + min(*n0 + r, p.n2 - 1u) * (p.nb * 210u); }
    return rows;
}

override Q8A: bool = false;   // the first product as kmv4q (A rounded to 8 bits), else as kmv4
override Q8A2: bool = false;  // the second as kmv6q (A rounded to 8 bits), else as kmv6
override BIAS2: bool = false;   // the second product's bias row (binding 5, from float off_s2; BIAS: the first's)

@compute @workgroup_size(WG)
fn kmv46(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
         @builtin(num_workgroups) nwg: vec3<u32>) {
    let f = wid.y * nwg.x + wid.x;
    let g1 = first_groups();
    let abase = p.off_a >> 2u;
    if (f < g1) {
        let t = lid.x % TPR;
        let n0 = group_n0(lid.x, wid, nwg);
        var sums: MvSums;
        if (Q8A) {
            round_a(lid.x, abase);
            sums = kmv4q_sums(t, kmv4_rows(n0, 0u));
        } else {
            sums = kmv4_sums(t, abase, kmv4_rows(n0, 0u));
        }
        rows_out(lid.x, t, n0, 0u, sums.acc, sums.ss);
    } else {
        var n0 = 0u;
        let rows = second_rows(lid.x, f - g1, &n0);
        let t2 = lid.x % TPR2;
        var sums: MvSums;
        if (Q8A2) {
            round_a(lid.x, abase);
            sums = kmv6q_sums(t2, TPR2, rows);
        } else {
            sums = kmv6_sums(t2, TPR2, abase, rows);
        }
        rows_out_at(lid.x, t2, TPR2, n0, p.off_c2, p.n2, p.off_s2, BIAS2, sums.acc, sums.ss);
    }
}
