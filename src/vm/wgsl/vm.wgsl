// pxVM GPU interpreter kernels (docs/pxvm-spec.md; host side: src/vm/interp_gpu.c).
//
// The image is one storage buffer of u32, one RGBA pixel per word (R in the
// low byte), bound at binding 0 by every interpreter kernel. A v1 tensor's
// data is a byte stream starting at a word (its first data pixel), so byte i
// is byte (i & 3) of word data + (i >> 2). All arithmetic is integer: no
// float appears anywhere, so results equal the CPU interpreter's bytes.
//
// Byte ownership: every invocation owns whole output words. An int8 output
// is written four elements (one word) per invocation; the word holding the
// last bytes of a tensor whose size is not a multiple of 4 is merged with its
// old value by its one owner (no other invocation of the dispatch writes it),
// so no atomics are needed on the image. v0 ops own whole pixels.
//
// Read before write: an instruction's inputs never change under it. v0
// MATMUL (which may overlap anything) computes into a scratch buffer in one
// dispatch and stores in a second; LUT reads its table from a copy in
// scratch (its output may be identical to the table); in-place ADD/MUL/LUT
// read only the words their invocation owns; v0 ADD/RELU read only their own
// column; DOT_RGB is one workgroup that writes after its last barrier.
//
// A module is this common part, then one of vm_v0.wgsl, vm_ew.wgsl,
// vm_mm.wgsl (so that a pipeline parses only what it needs; the rq self-test
// tests/wgsl/vm_rq_test.wgsl is another such part, compiled only by tests/test_vm_gpu.c),
// then one line the host appends defining `fn dp4(a: u32, b: u32) -> i32` (a
// signed dot product of four packed bytes): dot4I8Packed where the adapter
// compiles it, else the shift-based version below (dp4_soft). So no file
// alone is a complete module.

const NONE: u32 = 0xffffffffu;

struct Params {
    op: u32,      // sub-operation (ew: 0 ADD, 1 MUL, 2 COPY; v0_row: 0 ADD, 1 RELU)
    count: u32,   // work items of the dispatch
    a: u32,       // first data word of a (v0: first word of row a)
    b: u32,       // first data word of b (v0: row b)
    o: u32,       // first data word of out (v0: row out)
    m: u32,
    n: u32,
    k: u32,
    a_dt: u32,    // 1 int8, 2 int32 (0: v0 byte in R)
    b_dt: u32,
    o_dt: u32,
    mult: i32,    // output multiplier
    shift: u32,   // output shift, 0..62
    bcast: u32,   // 1: b has one row broadcast over m rows
    aux: u32,     // v0: image width; gather: V; mm_tile to scratch: words per scratch row
    insn: u32,    // instruction index (gather)
}

@group(0) @binding(0) var<storage, read_write> img: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

// ---- integer helpers ------------------------------------------------------------

#include "wide.wgsl"   // mul_wide: the unsigned 32 x 32 -> 64-bit product

// Signed 32 x 32 -> 64-bit product as (lo, hi) words.
fn mul64(a: i32, b: i32) -> vec2<u32> {
    let ua = bitcast<u32>(a);
    let ub = bitcast<u32>(b);
    let t = mul_wide(ua, ub);   // unsigned product
    // two's complement correction: a < 0 adds -2^32 * b, b < 0 adds -2^32 * a
    return vec2<u32>(t.x, t.y - select(0u, ub, a < 0) - select(0u, ua, b < 0));
}

// Requantization (spec 3.3): q = (acc * mult + 2^(shift-1)) >> shift (shift > 0),
// arithmetic shift, then saturation to int8 (dt 1) or int32 (dt 2).
// |acc * mult| <= 2^62, so adding 2^61 cannot overflow the 64-bit value.
fn rq(acc: i32, mult: i32, shift: u32, dt: u32) -> i32 {
    let t = mul64(acc, mult);
    var lo = t.x;
    var hi = t.y;
    if (shift > 0u) {
        let s1 = shift - 1u;
        // 2^(shift-1) as (rlo, rhi); WGSL takes shift amounts modulo 32, and
        // select evaluates both sides, so the unused side is harmless
        let rlo = select(0u, 1u << s1, s1 < 32u);
        let rhi = select(1u << (s1 - 32u), 0u, s1 < 32u);
        let nlo = lo + rlo;
        hi = hi + rhi + select(0u, 1u, nlo < lo);
        lo = nlo;
        if (shift < 32u) {
            lo = (lo >> shift) | (hi << (32u - shift));
            hi = bitcast<u32>(bitcast<i32>(hi) >> shift);
        } else {
            lo = bitcast<u32>(bitcast<i32>(hi) >> (shift - 32u));
            hi = bitcast<u32>(bitcast<i32>(hi) >> 31u);
        }
    }
    var v: i32;
    if (bitcast<i32>(hi) == (bitcast<i32>(lo) >> 31u)) {
        v = bitcast<i32>(lo);                        // fits int32
    } else if (bitcast<i32>(hi) < 0) {
        v = i32(-2147483648);
    } else {
        v = 2147483647;
    }
    if (dt == 1u) { v = clamp(v, -128, 127); }
    return v;
}

// int32 + int32 clamped to int32 (the spec's int64 sum, clamped)
fn add_sat(a: i32, b: i32) -> i32 {
    let s = a + b;  // wraps
    if (((a ^ s) & (b ^ s)) < 0) { return select(2147483647, i32(-2147483648), a < 0); }
    return s;
}

fn dp4_soft(a: u32, b: u32) -> i32 {
    let sh = vec4<u32>(24u, 16u, 8u, 0u);
    let va = (vec4<i32>(bitcast<i32>(a)) << sh) >> vec4<u32>(24u);
    let vb = (vec4<i32>(bitcast<i32>(b)) << sh) >> vec4<u32>(24u);
    return dot(va, vb);
}

fn pack4(v: vec4<i32>) -> u32 {
    let u = bitcast<vec4<u32>>(v) & vec4<u32>(255u);
    return u.x | (u.y << 8u) | (u.z << 16u) | (u.w << 24u);
}

// ---- image access -------------------------------------------------------------

// element i of an int8 stream starting at word `base`
fn ld8(base: u32, i: u32) -> i32 {
    return bitcast<i32>(img[base + (i >> 2u)] << (24u - 8u * (i & 3u))) >> 24u;
}
fn ld32(base: u32, i: u32) -> i32 { return bitcast<i32>(img[base + i]); }
fn ld(base: u32, i: u32, dt: u32) -> i32 {
    if (dt == 1u) { return ld8(base, i); }
    return ld32(base, i);
}

// Four bytes from byte address `byte` of the image (any alignment); bytes at
// or past `nvalid` (when nvalid < 4) are zero and the word holding them is not read.
fn ld_word(byte: u32, nvalid: u32) -> u32 {
    let wi = byte >> 2u;
    let off = byte & 3u;
    var v = img[wi];
    if (off != 0u) {
        v = v >> (8u * off);
        if (nvalid > 4u - off) { v = v | (img[wi + 1u] << (32u - 8u * off)); }
    }
    if (nvalid < 4u) { v = v & ((1u << (8u * nvalid)) - 1u); }
    return v;
}

// Stores output elements 4g .. 4g+3 (those below count) of a tensor whose
// data starts at word o. int8: one word, merged with the old bytes past the
// end; int32: up to four words.
fn st_group(o: u32, g: u32, count: u32, dt: u32, v: vec4<i32>) {
    let e0 = 4u * g;
    let nv = min(count - e0, 4u);
    if (dt == 1u) {
        var w = pack4(v);
        if (nv < 4u) {
            let mask = (1u << (8u * nv)) - 1u;
            w = (img[o + g] & ~mask) | (w & mask);
        }
        img[o + g] = w;
    } else {
        for (var c = 0u; c < nv; c = c + 1u) { img[o + e0 + c] = bitcast<u32>(v[c]); }
    }
}

fn item(wid: vec3<u32>, nwg: vec3<u32>, lid: u32, wg: u32) -> u32 {
    return (wid.y * nwg.x + wid.x) * wg + lid;
}
