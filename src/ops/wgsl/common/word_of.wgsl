// word_of: a u32 word at an even byte offset of a u32 array, from the two
// words around it (word_at.wgsl reads B with it; kmv46.wgsl its second
// weights). Needs nothing from the including module.

// The word at even byte offset o, given the words lo = w[o / 4] and
// hi = w[o / 4 + 1] (o % 4 == 2: from both).
fn word_of(lo: u32, hi: u32, o: u32) -> u32 {
    return select(lo, (lo >> 16u) | (hi << 16u), (o & 2u) != 0u);
}
