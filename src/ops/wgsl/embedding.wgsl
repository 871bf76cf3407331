// Embedding lookup: out[i, j] = table[ids[i], j], the table f32, f16, bf16,
// Q8_0 or Q4_0 (override DT), out f32. One invocation per output element; the
// grid is 2-D (see pxl_op_dispatch). An id outside [0, V) gives a row of NaN.
//
// The table is bound as u32 words: f32 elements are bitcast, f16 elements
// unpacked with unpack2x16float, bf16 elements shifted into the top half of
// an f32, and GGUF blocks (34 or 18 bytes, so not word-aligned) read byte by
// byte from the words that hold them.

override WG: u32 = 256u;
override DT: u32 = 0u;   // 0 f32, 1 f16, 2 q8_0, 3 q4_0, 4 bf16

struct Params {
    n: u32,          // number of ids
    D: u32,          // row length
    V: u32,          // table rows
    row_bytes: u32,  // bytes of one table row (quantized tables)
    off_t: u32,      // view offsets: the table's in elements (f32, f16) or bytes (blocks),
    off_ids: u32,    // ids' and out's in elements
    off_out: u32,
    _pad: u32,
}

@group(0) @binding(0) var<storage, read> table: array<u32>;
@group(0) @binding(1) var<storage, read> ids: array<i32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

#include "bytes.wgsl"   // byte_of, half_of
fn byte_at(b: u32) -> u32 { return byte_of(table[b >> 2u], b); }
fn half_at(b: u32) -> f32 { return half_of(table[b >> 2u], b); }   // b even

@compute @workgroup_size(WG)
fn embedding(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
             @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = (wid.y * nwg.x + wid.x) * WG + lid.x;
    if (e >= p.n * p.D) { return; }
    let i = e / p.D;
    let j = e % p.D;
    let id = ids[p.off_ids + i];
    if (id < 0 || u32(id) >= p.V) {
        // a quiet NaN, built from a runtime value (a constant NaN is a WGSL error)
        out[p.off_out + e] = bitcast<f32>(0x7fc00000u | (p.V & 0u));
        return;
    }
    let row = u32(id);
    var v: f32;
    if (DT == 0u) {
        v = bitcast<f32>(table[p.off_t + row * p.D + j]);
    } else if (DT == 1u) {
        let hi = p.off_t + row * p.D + j;
        let h = unpack2x16float(table[hi >> 1u]);
        v = select(h.x, h.y, (hi & 1u) != 0u);
    } else if (DT == 4u) {
        let hi = p.off_t + row * p.D + j;   // bf16: the top half of an f32
        let w = table[hi >> 1u];
        v = bitcast<f32>(select(w << 16u, w & 0xffff0000u, (hi & 1u) != 0u));
    } else if (DT == 2u) {
        let off = p.off_t + row * p.row_bytes + (j / 32u) * 34u;
        let q = byte_at(off + 2u + j % 32u);
        v = half_at(off) * f32(bitcast<i32>(q << 24u) >> 24u);
    } else {
        let off = p.off_t + row * p.row_bytes + (j / 32u) * 18u;
        let jj = j % 32u;
        let q = (byte_at(off + 2u + jj % 16u) >> select(0u, 4u, jj >= 16u)) & 15u;
        v = half_at(off) * (f32(q) - 8.0);
    }
    out[p.off_out + e] = v;
}
