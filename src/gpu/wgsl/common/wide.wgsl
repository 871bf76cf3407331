// 32 x 32 -> 64-bit integer multiplication (WGSL has no 64-bit integers).
// Shared by every product's kernels: src/ops/wgsl/rope.wgsl (the exact
// argument reduction of RoPE angles) and src/vm/wgsl/vm.wgsl (the VM's
// signed requantization product, mul64, built on this).
//
// fn mul_wide(a: u32, b: u32) -> vec2<u32>: the unsigned product a * b as
// (low word, high word), exact for all inputs. The operands are split into
// 16-bit halves; the four partial products fit in u32, and the middle column
// (the carry of the low half plus the low halves of the cross products) is
// below 2^18, so no step wraps.
// Needs nothing from the including module.

fn mul_wide(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let p11 = a1 * b1;
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);   // < 2^18
    let lo = (mid << 16u) | (p00 & 0xffffu);
    let hi = p11 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
    return vec2<u32>(lo, hi);
}
