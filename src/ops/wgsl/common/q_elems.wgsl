// The Q8_0, Q4_0 and Q5_0 blocks' bytes as floats (quant.wgsl,
// qmv_pair.wgsl). Blocks are 34 (Q8_0), 18 (Q4_0) or 22 (Q5_0: the scale,
// four bytes of fifth bits qh, then Q4_0's sixteen quant bytes) bytes, so a
// block starts at an even byte offset that is word-aligned or not: its f16
// scale d is the low or high half of the word that holds it (half_of), and
// its quant bytes are re-assembled from two neighbouring words with shifts
// (realign). The format is given as (q4, q5): Q8_0 (false, false), Q4_0
// (true, false), Q5_0 (true, true).
// Needs nothing from the including module.

#include "bytes.wgsl"   // half_of(w, off): a block's f16 scale d from the word w holding it; bit4_of (Q5_0)

fn block_bytes_of(q4: bool, q5: bool) -> u32 { return select(34u, select(18u, 22u, q5), q4); }
// where a Q4_0 / Q5_0 block's quant bytes start
fn qs_at_of(off: u32, q5: bool) -> u32 { return off + select(2u, 6u, q5); }

// Integers to floats without int-to-float conversions (a quarter-rate
// instruction on many GPUs): for 0 <= n < 2^23, the float with bits
// 0x4B000000 | n is exactly 2^23 + n, and subtracting 2^23 + bias is exact.
const MAGIC: u32 = 0x4B000000u;

// the four bytes of w as signed integers (Q8_0 quants)
fn q8x4(w: u32) -> vec4<f32> {
    let t = vec4<u32>(w ^ 0x80808080u);   // q + 128 in each byte
    return bitcast<vec4<f32>>(((t >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(255u)) | vec4<u32>(MAGIC)) - 8388736.0;
}
// the low / high nibbles of the four bytes of w, minus 8 (Q4_0 quants); the
// nibble mask goes on the whole word first, so each float is one byte select
fn q4lo(w: u32) -> vec4<f32> {
    let m = vec4<u32>(w & 0x0f0f0f0fu);
    return bitcast<vec4<f32>>(((m >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(255u)) | vec4<u32>(MAGIC)) - 8388616.0;
}
fn q4hi(w: u32) -> vec4<f32> {
    let m = vec4<u32>((w >> 4u) & 0x0f0f0f0fu);
    return bitcast<vec4<f32>>(((m >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(255u)) | vec4<u32>(MAGIC)) - 8388616.0;
}
// the word at byte 2 of the pair (lo, hi) when un, else lo
fn realign(lo: u32, hi: u32, un: bool) -> u32 {
    return select(lo, (lo >> 16u) | (hi << 16u), un);
}
// Q5_0: the four 4-bit values of `nib` (one a byte, as masked from a quant
// word) with bits 0..3 of `bits` as their fifth bits, minus 16. The bits join
// the nibbles as integers, so each float is one MAGIC conversion and one
// subtraction, as in q4lo: the sum of two such floats (2^24 and more) loses
// the last bit if a compiler reassociates it, as the NVIDIA driver appears to
// (with two, every Q5_0 op case failed on an H200; llvmpipe and SwiftShader
// passed).
fn q5x4(nib: u32, bits: u32) -> vec4<f32> {
    let m = vec4<u32>(nib | bit4_of(bits));
    return bitcast<vec4<f32>>(((m >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(255u)) | vec4<u32>(MAGIC)) - 8388624.0;
}
// Q5_0: a block's qh from the word w0 holding its scale and the next word w1
// (un: the block starts on a word, so qh straddles them)
fn qh_of(w0: u32, w1: u32, un: bool) -> u32 { return select(w1, (w0 >> 16u) | (w1 << 16u), un); }
