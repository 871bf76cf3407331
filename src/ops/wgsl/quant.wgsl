// Quantized matrix products: C = alpha * A . B^T + beta * C (beta = 0: C not
// read), B a GGUF Q8_0, Q4_0 or Q5_0 matrix [N, K] (overrides Q4, and Q4 with
// Q5, pick the format).
//
// B is bound as u32 words; common/q_elems.wgsl reads the blocks (34, 18 or
// 22 bytes, so a block's words are re-assembled with shifts). Every word
// read holds at least one byte of B, and the buffer is padded to 16 bytes, so
// no read leaves the buffer.
//
// Two kernels (one-row products whose rows qmv_xs takes run in qmv_xs.wgsl):
//
// qmv (M <= 8, and M = 1 rows outside qmv_xs's range): the work unit is a
// quarter block, 8 of its 32 elements:
//   Q8_0: quarter q holds elements 8q .. 8q+7 (quant bytes 8q .. 8q+7);
//   Q4_0: quarter q holds elements 4q .. 4q+3 (low nibbles of bytes 4q .. 4q+3)
//         and 16+4q .. 16+4q+3 (their high nibbles),
// either way two vec4s of A, at elements kpos0(q) and kpos1(q). A row group
// of TPR invocations computes ROWS rows of C (times NCOL rows of A); its
// invocations walk the blocks of those rows, four to a block and TPR / 4
// blocks side by side, so consecutive invocations read consecutive bytes of B
// and of A, and the A vectors loaded for a block serve all ROWS rows. Each
// step first issues the loads of UNROLL blocks of each row, then decodes
// them. A workgroup holds WG / TPR row groups; the partial sums are reduced in
// workgroup memory at the end.
//
// qmm (M > 8): 64 x 64 output tiles, 256 invocations each computing 4 x 4.
// K advances one block (32) at a time: A's 64 x 32 tile and B's 32 x 64 tile,
// decoded to f32, are stored k-major in workgroup memory.
//
// Batches run along grid z in both. Quants become floats without
// int-to-float conversions (q_elems.wgsl's MAGIC); every product d * q * a is formed
// exactly as on the CPU, only the order of the f32 sums differs.

override Q4: bool = false;
override Q5: bool = false;   // with Q4: Q5_0 (element i's fifth bit is bit i of qh; value nibble + 16 bit - 16)

#include "quant_params.wgsl"   // Params: qmm_params of src/ops/matmul_quant.c

@group(0) @binding(0) var<storage, read> A: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> B: array<u32>;
@group(0) @binding(2) var<storage, read_write> C: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;
// qmv: the bias row added to C last (override BIAS; without it
// the host binds A here, unread): pxl_matmul_options.bias
@group(0) @binding(5) var<storage, read> BS: array<f32>;

override BIAS: bool = false;

// C[idx] as store_c writes it, plus bias element n with BIAS: the floats of
// the product and then pxl_add of the row
fn store_cb(idx: u32, n: u32, v: f32) {
    var out = p.alpha * v;
    if (p.beta != 0.0) { out = out + p.beta * C[idx]; }
    if (BIAS) { out = out + BS[p.off_s + n]; }
    C[idx] = out;
}

#include "q_elems.wgsl"   // block_bytes_of, qs_at_of, q8x4, q4lo, q4hi, q5x4, realign, qh_of, half_of

fn block_bytes() -> u32 { return block_bytes_of(Q4, Q5); }
fn qs_at(off: u32) -> u32 { return qs_at_of(off, Q5); }
// first element of the quarter's two vec4s
fn kpos0(q: u32) -> u32 { return select(8u * q, 4u * q, Q4); }
fn kpos1(q: u32) -> u32 { return select(8u * q + 4u, 16u + 4u * q, Q4); }

struct Quarter {
    d: f32,          // the block's scale
    v0: vec4<f32>,   // integer values (Q4_0: already minus 8) at kpos0 .. kpos0+3
    v1: vec4<f32>,   // at kpos1 .. kpos1+3
}

// The words that hold quarter q of the block at byte `off` of B: the word
// with the scale, then the two (Q4_0, Q5_0) or three (Q8_0) words from the
// one that holds the quarter's first quant byte, and for Q5_0 the word after
// the scale's (qh). Split from decode() so that callers can issue the loads
// of several blocks before using any.
fn load_raw(off: u32, q: u32) -> vec4<u32> {
    // the quant bytes start at off + 2 (or 6): mid-word exactly when the block is word-aligned
    let un = (off & 2u) == 0u;
    let w0 = B[off >> 2u];
    if (Q4) {
        let wq = (qs_at(off) + 4u * q) >> 2u;
        var wh = 0u;
        if (Q5) { wh = B[(off >> 2u) + 1u]; }
        return vec4<u32>(w0, B[wq], B[wq + select(0u, 1u, un)], wh);
    }
    let wq = (off + 2u + 8u * q) >> 2u;
    return vec4<u32>(w0, B[wq], B[wq + 1u], B[wq + select(1u, 2u, un)]);
}

fn decode(w: vec4<u32>, off: u32, q: u32) -> Quarter {
    let un = (off & 2u) == 0u;
    var r: Quarter;
    r.d = half_of(w.x, off);
    if (Q4) {
        let v = realign(w.y, w.z, un);
        if (Q5) {
            let qh = qh_of(w.x, w.w, un);
            r.v0 = q5x4(v & 0x0f0f0f0fu, qh >> (4u * q));
            r.v1 = q5x4((v >> 4u) & 0x0f0f0f0fu, qh >> (16u + 4u * q));
        } else {
            r.v0 = q4lo(v);
            r.v1 = q4hi(v);
        }
    } else {
        r.v0 = q8x4(realign(w.y, w.z, un));
        r.v1 = q8x4(realign(w.z, w.w, un));
    }
    return r;
}

// Quarter q of the block that starts at byte `off` of B.
fn quarter(off: u32, q: u32) -> Quarter {
    return decode(load_raw(off, q), off, q);
}

#include "tile_4x4.wgsl"   // store_c, and the qmm/kmm tile helpers (see ---- qmm)

// ---- qmv ------------------------------------------------------------------------

override WG: u32 = 256u;     // invocations per workgroup (power of two)
override TPR: u32 = 32u;     // invocations per row group (power of two, 4 .. WG)
override ROWS: u32 = 2u;     // rows per row group (1 .. 8)
override UNROLL: u32 = 4u;   // blocks per invocation whose loads are issued together (UNROLL * ROWS <= 16)
override NCOL: u32 = 1u;     // rows of A done at once (M <= 8; ROWS * NCOL <= 32)

var<workgroup> red: array<f32, WG * ROWS * NCOL>;

#include "norm_mv.wgsl"   // NORM: rmsnorm fused into qmv (norm_inv, nscale, NW)
#include "swiglu_mv.wgsl"   // SWIGLU (qmv): gate and up rows in one row group (out_rows, w_out, w_is_up, silu_mul)

@compute @workgroup_size(WG)
fn qmv(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
       @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = lid.x;
    let lane = t % TPR;
    let grp = t / TPR;
    let q = lane & 3u;
    let bps = TPR / 4u;                  // blocks side by side
    let row0 = ((wid.y * nwg.x + wid.x) * (WG / TPR) + grp) * out_rows();
    let xa = (p.off_a + wid.z * p.stride_a) / 4u;  // this batch's A, in vec4s
    let k4 = p.K / 4u;
    let bs = block_bytes();
    // byte offset of each row (rows past N repeat the last one; not stored)
    var roff: array<u32, 8>;
    for (var r = 0u; r < ROWS; r = r + 1u) {
        roff[r] = select(p.off_b, p.rpg, w_is_up(r)) + wid.z * p.stride_b + min(w_out(row0, r), p.N - 1u) * p.row_bytes;
    }
    var acc: array<f32, 32>;             // [r * NCOL + c]
    let x0i = kpos0(q) / 4u;
    let x1i = kpos1(q) / 4u;
    var inv: array<f32, 8>;
    if (NORM) { inv = norm_inv(t, xa); }
    for (var blk0 = lane / 4u; blk0 < p.nb; blk0 = blk0 + bps * UNROLL) {
        // all of this step's weight loads first (past the row's end: the last
        // block again, its result dropped), so that they are in flight together
        var raw: array<vec4<u32>, 16>;
        for (var u = 0u; u < UNROLL; u = u + 1u) {
            let b = min(blk0 + u * bps, p.nb - 1u);
            for (var r = 0u; r < ROWS; r = r + 1u) { raw[u * ROWS + r] = load_raw(roff[r] + b * bs, q); }
        }
        for (var u = 0u; u < UNROLL; u = u + 1u) {
            let bu = blk0 + u * bps;
            let b = min(bu, p.nb - 1u);
            for (var c = 0u; c < NCOL; c = c + 1u) {
                let x0 = nscale(A[xa + c * k4 + b * 8u + x0i], inv[c], b * 8u + x0i);
                let x1 = nscale(A[xa + c * k4 + b * 8u + x1i], inv[c], b * 8u + x1i);
                for (var r = 0u; r < ROWS; r = r + 1u) {
                    let v = decode(raw[u * ROWS + r], roff[r] + b * bs, q);
                    let s = v.d * (dot(v.v0, x0) + dot(v.v1, x1));
                    acc[r * NCOL + c] = acc[r * NCOL + c] + select(0.0, s, bu < p.nb);
                }
            }
        }
    }
    let nv = ROWS * NCOL;
    let rbase = grp * nv * TPR;
    for (var i = 0u; i < nv; i = i + 1u) { red[rbase + i * TPR + lane] = acc[i]; }
    workgroupBarrier();
    var w = TPR / 2u;
    loop {
        if (w == 0u) { break; }
        if (lane < w) {
            for (var i = 0u; i < nv; i = i + 1u) {
                let j = rbase + i * TPR + lane;
                red[j] = red[j] + red[j + w];
            }
        }
        workgroupBarrier();
        w = w / 2u;
    }
    for (var i = lane; i < out_rows() * NCOL; i = i + TPR) {   // (nv may exceed TPR)
        let n = row0 + i / NCOL;
        let c = i % NCOL;
        var v = red[rbase + i * TPR];
        if (SWIGLU) { v = silu_mul(v, red[rbase + (i + ROWS / 2u * NCOL) * TPR]); }
        if (n < p.N) { store_cb(p.off_c + wid.z * p.stride_c + c * p.N + n, n, v); }
    }
}

// ---- qmm ------------------------------------------------------------------------

// As, Bs (k-major tiles in workgroup memory), tile_fma32, tile_store

@compute @workgroup_size(16, 16)
fn qmm(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let tx = lid.x;
    let ty = lid.y;
    let tid = ty * 16u + tx;
    let m0 = wid.y * 64u;
    let n0 = wid.x * 64u;
    // loaders: row tid % 64 of the tile (consecutive invocations store
    // consecutive m or n); A: elements 8 * (tid / 64) .. +8 of the block,
    // B: quarter tid / 64.
    let lr = tid % 64u;
    let lc = tid / 64u;
    let am = m0 + lr;
    let a_ok = am < p.M;
    let a_row = (p.off_a + wid.z * p.stride_a + min(am, p.M - 1u) * p.K) / 4u;  // vec4 index
    let bn = n0 + lr;
    let b_ok = bn < p.N;
    let b_row = p.off_b + wid.z * p.stride_b + min(bn, p.N - 1u) * p.row_bytes;
    let bs = block_bytes();
    let k0 = kpos0(lc);
    let k1 = kpos1(lc);
    let sv = lr / 4u;
    let sc = lr % 4u;

    var acc: array<vec4<f32>, 4>;
    for (var blk = 0u; blk < p.nb; blk = blk + 1u) {
        let av0 = select(vec4<f32>(0.0), A[a_row + blk * 8u + 2u * lc], a_ok);
        let av1 = select(vec4<f32>(0.0), A[a_row + blk * 8u + 2u * lc + 1u], a_ok);
        let v = quarter(b_row + blk * bs, lc);
        let d = select(0.0, v.d, b_ok);
        let bv0 = d * v.v0;
        let bv1 = d * v.v1;
        for (var e = 0u; e < 4u; e = e + 1u) {
            As[(8u * lc + e) * 16u + sv][sc] = av0[e];
            As[(8u * lc + 4u + e) * 16u + sv][sc] = av1[e];
            Bs[(k0 + e) * 16u + sv][sc] = bv0[e];
            Bs[(k1 + e) * 16u + sv][sc] = bv1[e];
        }
        workgroupBarrier();
        tile_fma32(&acc, tx, ty);
        workgroupBarrier();
    }
    tile_store(acc, p.off_c + wid.z * p.stride_c, m0, n0, tx, ty);
}
