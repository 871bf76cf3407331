// pxl_convert: f32 <-> f16 and f32 <-> bf16 (see src/ops/convert.c).
//
// Both sides are bound as u32 words: f32 elements are their bits, f16 and
// bf16 elements are the low (even index) and high (odd index) halves of a
// word. The conversions are integer arithmetic (f16: common/half_bits.wgsl,
// shared with rope_kv.wgsl), bit for bit the C ones
// (pxl_f32_to_f16 / pxl_f16_to_f32, pxl_f32_to_bf16 / pxl_bf16_to_f32):
// round to nearest even, overflow to Inf, subnormals kept, NaN kept quiet
// with its top payload bits. WGSL's pack2x16float leaves out-of-range values
// indeterminate, and a device may flush subnormals, hence no builtins here.
//
// to_half: one invocation per destination word, so no two invocations write
// one word; a word at either edge of the destination view keeps the half that
// lies outside it (read, merge, write back). from_half: one invocation per
// destination f32.

override WG: u32 = 256u;
override BF16: bool = false;   // the half side is bf16 (else f16)

struct Params {
    n: u32,        // elements
    os: u32,       // source offset in its binding, elements
    od: u32,       // destination offset in its binding, elements
    nwork: u32,    // invocations: destination words (to_half) or elements (from_half)
}

@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

#include "half_bits.wgsl"   // f32_to_f16_bits, f16_to_f32_bits

fn to_half_bits(x: u32) -> u32 {
    if (BF16) {
        if ((x & 0x7fffffffu) > 0x7f800000u) { return (x >> 16u) | 64u; }  // NaN: quiet
        return (x + 0x7fffu + ((x >> 16u) & 1u)) >> 16u;
    }
    return f32_to_f16_bits(x);
}

fn from_half_bits(h: u32) -> u32 {
    if (BF16) { return h << 16u; }
    return f16_to_f32_bits(h);
}

@compute @workgroup_size(WG)
fn to_half(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
           @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = (wid.y * nwg.x + wid.x) * WG + lid.x;
    if (i >= p.nwork) { return; }
    let w = p.od / 2u + i;
    let e0 = 2u * w;               // the halves of word w are elements e0, e0 + 1 of the binding
    let end = p.od + p.n;
    var v = 0u;
    if (e0 < p.od || e0 + 1u >= end) { v = dst[w]; }  // an edge word: keep the half outside
    for (var j = 0u; j < 2u; j++) {
        let e = e0 + j;
        if (e >= p.od && e < end) {
            let sh = 16u * j;
            v = (v & ~(0xffffu << sh)) | (to_half_bits(src[p.os + (e - p.od)]) << sh);
        }
    }
    dst[w] = v;
}

@compute @workgroup_size(WG)
fn from_half(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
             @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = (wid.y * nwg.x + wid.x) * WG + lid.x;
    if (i >= p.nwork) { return; }
    let e = p.os + i;
    let h = (src[e >> 1u] >> (16u * (e & 1u))) & 0xffffu;
    dst[p.od + i] = from_half_bits(h);
}
