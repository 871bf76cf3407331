// A's rounding to 8 bits (pxl_matmul_options.a_q8), as the CPU does it
// (q8_round_c in src/ops/matmul_cpu.c): per 32 values, s = amax / 127 (0
// below 2^-100), q = round-to-even(a * (1 / s)) clamped to [-127, 127], and
// the scale d = s kept as an f16 (s itself above the f16 range). Used by
// kmv4.wgsl (kmv4q), qa8.wgsl and qmv_xs_body.wgsl (Q8A). Needs from the
// including module f32_to_f16_bits and f16_to_f32_bits (half_bits.wgsl): d
// is rounded with them, not with quantizeToF16, which a device may flush to
// zero below the f16 normal range (NVIDIA's Vulkan driver does: blocks of
// activations under about 0.008 then lost their whole contribution).

// (d, 1 / s) of a block whose largest magnitude is amax. Where s is in f16's
// normal range the rounding to f16 is five integer operations on s's bits
// (to nearest even at the 13th bit; a carry moves into the exponent): the
// same value as f32_to_f16_bits and back, for every f32 in [2^-14, 65504]
// (checked exhaustively on the CPU); below it those two functions.
fn q8_scale(amax: f32) -> vec2<f32> {
    let s = select(0.0, amax / 127.0, amax >= 7.8886091e-31);   // 2^-100
    let id = select(0.0, 1.0 / s, s != 0.0);
    var d = s;   // above f16's range: s itself
    if (s >= 0x1p-14f && s <= 65504.0) {
        let b = bitcast<u32>(s);
        d = bitcast<f32>((b + 0xfffu + ((b >> 13u) & 1u)) & 0xffffe000u);
    } else if (s <= 65504.0) {
        d = bitcast<f32>(f16_to_f32_bits(f32_to_f16_bits(bitcast<u32>(s))));
    }
    return vec2<f32>(d, id);
}

// 16 values times id, rounded, as four words of four signed bytes (value 4w + b: word w, byte b)
fn q8_pack16(x0: vec4<f32>, x1: vec4<f32>, x2: vec4<f32>, x3: vec4<f32>, id: f32) -> vec4<u32> {
    let lim = vec4<f32>(127.0);
    return vec4<u32>(pack4xI8(vec4<i32>(round(clamp(x0 * id, -lim, lim)))),
                     pack4xI8(vec4<i32>(round(clamp(x1 * id, -lim, lim)))),
                     pack4xI8(vec4<i32>(round(clamp(x2 * id, -lim, lim)))),
                     pack4xI8(vec4<i32>(round(clamp(x3 * id, -lim, lim)))));
}

// the sum of the 16 integers of q8_pack16's words
fn q8_sum16(w: vec4<u32>) -> i32 {
    let ones = 0x01010101u;
    return dot4I8Packed(w.x, ones) + dot4I8Packed(w.y, ones) + dot4I8Packed(w.z, ones) + dot4I8Packed(w.w, ones);
}

// the largest magnitude of 16 values
fn q8_amax16(x0: vec4<f32>, x1: vec4<f32>, x2: vec4<f32>, x3: vec4<f32>) -> f32 {
    let m4 = max(max(abs(x0), abs(x1)), max(abs(x2), abs(x3)));
    return max(max(m4.x, m4.y), max(m4.z, m4.w));
}
