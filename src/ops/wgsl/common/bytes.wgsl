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
