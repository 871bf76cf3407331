// f32 <-> f16 as bit patterns in u32 words, integer arithmetic bit for bit
// the C ones (pxl_f32_to_f16 / pxl_f16_to_f32 in src/ops/tensor.c): round to
// nearest even, overflow to Inf, subnormals kept, NaN kept quiet with its top
// payload bits. WGSL's pack2x16float leaves out-of-range values
// indeterminate, and a device may flush subnormals, hence no builtins.
// Shared by convert.wgsl (pxl_convert) and rope_kv.wgsl (pxl_rope_kv's f16
// cache rows), so both round alike.
//
//   f32_to_f16_bits(x)  the f16 bits (low 16 bits) of the f32 whose bits are x
//   f16_to_f32_bits(h)  the f32 bits of the f16 in the low 16 bits of h
// Needs nothing from the including module.

fn f32_to_f16_bits(x: u32) -> u32 {
    let sign = (x >> 16u) & 0x8000u;
    let ex = (x >> 23u) & 0xffu;
    var man = x & 0x7fffffu;
    if (ex == 0xffu) { return sign | 0x7c00u | select(0u, 0x200u | (man >> 13u), man != 0u); }
    let e = i32(ex) - 112;
    if (e >= 31) { return sign | 0x7c00u; }   // overflow: Inf
    if (e <= 0) {                             // subnormal or zero
        if (e < -10) { return sign; }
        man = man | 0x800000u;
        let shift = u32(14 - e);
        var h = man >> shift;
        let rem = man & ((1u << shift) - 1u);
        let half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (h & 1u) != 0u)) { h = h + 1u; }
        return sign | h;
    }
    var h = (u32(e) << 10u) | (man >> 13u);
    let rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) != 0u)) { h = h + 1u; }  // may carry into the exponent
    return sign | h;
}

fn f16_to_f32_bits(h: u32) -> u32 {
    let sign = (h & 0x8000u) << 16u;
    let ex = (h >> 10u) & 0x1fu;
    var man = h & 0x3ffu;
    if (ex == 0u) {
        if (man == 0u) { return sign; }
        var e = 0u;                            // subnormal: normalise
        man = man << 1u;
        while ((man & 0x400u) == 0u) { man = man << 1u; e = e + 1u; }
        return sign | ((112u - e) << 23u) | ((man & 0x3ffu) << 13u);
    }
    if (ex == 31u) { return sign | 0x7f800000u | (man << 13u); }
    return sign | ((ex + 112u) << 23u) | (man << 13u);
}
