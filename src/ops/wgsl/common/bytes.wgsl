// Bytes and f16 halves of data bound as u32 words (WGSL storage buffers have
// no 8- or 16-bit types): byte o of the data is byte o % 4 of word o / 4,
// little-endian, and an f16 at even byte offset o is the low (o % 4 == 0) or
// high (o % 4 == 2) half of its word.
//
// WGSL has no macros and a function cannot take a storage buffer as an
// argument, so these work on the word once loaded; each kernel keeps a
// one-line loader over its own buffer, e.g.
//   fn byte_at(o: u32) -> u32 { return byte_of(B[o >> 2u], o); }
//   fn half_at(o: u32) -> f32 { return half_of(B[o >> 2u], o); }
// Also bytes4 (four bytes of a word as floats), k_scale_min (the 6-bit
// scale and min of a Q4_K / Q5_K sub-block from the three scale words) and
// bit4_of (Q5_0's fifth bits, one to each byte).
// Needs nothing from the including module.

// byte o % 4 of the word w (the word holding byte o), as 0 .. 255
fn byte_of(w: u32, o: u32) -> u32 {
    return (w >> ((o & 3u) * 8u)) & 255u;
}

// the f16 at even byte offset o, from the word w that holds it
fn half_of(w: u32, o: u32) -> f32 {
    let h = unpack2x16float(w);
    return select(h.x, h.y, (o & 2u) != 0u);
}

// The four bytes of w as floats, minus bias, without int-to-float
// conversions: for 0 <= n < 2^23 the float with bits 0x4B000000 | n is 2^23 + n.
fn bytes4(w: u32, bias: f32) -> vec4<f32> {
    let b = (vec4<u32>(w) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(255u);
    return bitcast<vec4<f32>>(b | vec4<u32>(0x4B000000u)) - (8388608.0 + bias);
}

// Q4_K / Q5_K: sub-block s's 6-bit scale (x) and min (y) from the 12 scale
// bytes, words s0 (bytes 0..3), s1 (4..7) and s2 (8..11). Both cases are
// computed and one selected: no divergence between sub-blocks.
fn k_scale_min(s0: u32, s1: u32, s2: u32, s: u32) -> vec2<u32> {
    let sh = 8u * (s & 3u);
    let b0 = (s0 >> sh) & 255u;
    let b1 = (s1 >> sh) & 255u;
    let b8 = (s2 >> sh) & 255u;
    let low = vec2<u32>(b0 & 63u, b1 & 63u);
    let high = vec2<u32>((b8 & 15u) | ((b0 >> 6u) << 4u), (b8 >> 4u) | ((b1 >> 6u) << 4u));
    return select(low, high, s >= 4u);
}

// Bits 0..3 of b as bit 4 of bytes 0..3 (Q5_0: four values' fifth bits, to
// OR into their nibbles, one a byte)
fn bit4_of(b: u32) -> u32 {
    return ((b & 1u) | ((b & 2u) << 7u) | ((b & 4u) << 14u) | ((b & 8u) << 21u)) << 4u;
}
