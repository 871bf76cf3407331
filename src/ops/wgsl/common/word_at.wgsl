// word_at: a u32 word at an even byte offset of B, for block formats whose
// blocks sit on 2-byte offsets (Q6_K's 210 bytes, Q5_0's 22, ...).
// Needs from the including module: B, a storage array<u32>.

// The word at even byte offset o of B (o % 4 == 2: from two words). Both
// words are always read and one is selected, so that invocations whose blocks
// differ in alignment do not diverge (a read past the end is clamped by
// WebGPU's bounds checks and never selected).
fn word_at(o: u32) -> u32 {
    let i = o >> 2u;
    let lo = B[i];
    let hi = B[i + 1u];
    return select(lo, (lo >> 16u) | (hi << 16u), (o & 2u) != 0u);
}
