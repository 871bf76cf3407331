// word_at: a u32 word at an even byte offset of B, for block formats whose
// blocks sit on 2-byte offsets (Q6_K's 210 bytes, Q5_0's 22, ...).
// Needs from the including module: B, a storage array<u32>.

#include "word_of.wgsl"   // word_of

// The word at even byte offset o of B (o % 4 == 2: from two words). Both
// words are always read and one is selected, so that invocations whose blocks
// differ in alignment do not diverge. The second can lie past B's last byte
// (the f16 d that ends a tensor): pxl_op_bind binds inputs 16 bytes further
// (PXL_BUFFER_TAIL), so the read stays inside the binding, with or without
// Dawn's bounds checks, and its value is never selected.
fn word_at(o: u32) -> u32 {
    let i = o >> 2u;
    return word_of(B[i], B[i + 1u], o);
}
