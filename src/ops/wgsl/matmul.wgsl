// Matrix products. C = alpha * op(A) . op(B) + beta * C (beta = 0: C not read).
//
// gemm: 128x128 output tile per workgroup of 256 invocations (16 x 16), each
// computing 8 x 8 outputs held in registers: rows ty*4+{0..3} and
// 64+ty*4+{0..3}, columns tx*4+{0..3} and 64+tx*4+{0..3}, so that the
// invocations of a subgroup read consecutive vec4s of workgroup memory.
// K advances in steps of 16 through workgroup memory tiles stored k-major
// (As[k][m], Bs[k][n]); the next tile is loaded into registers while the
// current one is multiplied. Transposes, f16 or bf16 storage of B and bounds
// checks are override constants, so each variant compiles to straight-line
// code. B is bound as u32 words: f32 elements are bitcast, f16 elements
// unpacked, bf16 elements shifted into the top half of an f32.
// Batches run along the grid's z dimension (a stride of 0 broadcasts).
//
// Split K (override SPLITK > 1, for products of few tiles): workgroup x is
// split * (tile columns) + tile column; each split takes its share of K's
// steps of 16 and stores its raw sums at ((split * batches + z) * M + m) * N
// + n of the buffer bound as C (scratch), and kmm8w.wgsl's kmm8_sum adds the
// splits up into C with alpha and beta (src/ops/matmul.c).

override TRANS_A: bool = false;
override TRANS_B: bool = false;
override B_F16: bool = false;
override B_BF16: bool = false;   // B is bf16 (the top halves of f32s)
override CHECK: bool = true;   // false only when M, N are multiples of 128 and K of 16
override SPLITK: u32 = 1u;     // gemm's splits of K (see above)

const BM: u32 = 128u;
const BN: u32 = 128u;
const BK: u32 = 16u;

struct Params {
    M: u32, N: u32, K: u32, off_a: u32,           // off_*: element offsets of the views (pxl_op_bind)
    stride_a: u32, stride_b: u32, stride_c: u32, off_b: u32,
    alpha: f32, beta: f32, off_c: u32, off_n: u32,  // off_n: offset of NW in floats (gemv_t with NORM)
    eps: f32, off_u: u32, _p1: u32, _p2: u32,       // off_u: the up weights (gemv_t with SWIGLU)
}

@group(0) @binding(0) var<storage, read> A: array<f32>;
@group(0) @binding(1) var<storage, read> B: array<u32>;
@group(0) @binding(2) var<storage, read_write> C: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

// Rows of the k-major tiles are padded from 32 to 33 vec4s (LD), so that
// invocations storing consecutive k do not all hit the same memory bank.
const LD: u32 = 33u;
var<workgroup> As: array<vec4<f32>, 528>;   // BK * LD
var<workgroup> Bs: array<vec4<f32>, 528>;

fn load_b(e: u32) -> f32 {
    if (B_BF16) {
        let w = B[e >> 1u];
        return bitcast<f32>(select(w << 16u, w & 0xffff0000u, (e & 1u) == 1u));
    }
    if (B_F16) {
        let w = B[e >> 1u];
        let h = unpack2x16float(w);
        return select(h.x, h.y, (e & 1u) == 1u);
    }
    return bitcast<f32>(B[e]);
}

// element (m, k) of op(A) for this batch
fn a_at(base: u32, m: u32, k: u32) -> f32 {
    if (CHECK && (m >= p.M || k >= p.K)) { return 0.0; }
    if (TRANS_A) { return A[base + k * p.M + m]; }
    return A[base + m * p.K + k];
}

// element (k, n) of op(B)
fn b_at(base: u32, k: u32, n: u32) -> f32 {
    if (CHECK && (k >= p.K || n >= p.N)) { return 0.0; }
    if (TRANS_B) { return load_b(base + n * p.K + k); }
    return load_b(base + k * p.N + n);
}

// Four consecutive rows (A) or columns (B) of one k, as the vec4 stored in
// the k-major tile.
fn a4(base: u32, m: u32, k: u32) -> vec4<f32> {
    return vec4<f32>(a_at(base, m, k), a_at(base, m + 1u, k), a_at(base, m + 2u, k), a_at(base, m + 3u, k));
}
fn b4(base: u32, k: u32, n: u32) -> vec4<f32> {
    return vec4<f32>(b_at(base, k, n), b_at(base, k, n + 1u), b_at(base, k, n + 2u), b_at(base, k, n + 3u));
}

fn store4(base_c: u32, m: u32, nb: u32, v: vec4<f32>) {
    if (m >= p.M) { return; }
    for (var c = 0u; c < 4u; c = c + 1u) {
        let n = nb + c;
        if (n < p.N) {
            let idx = base_c + m * p.N + n;
            if (SPLITK > 1u) {   // a split's raw sums
                C[idx] = v[c];
                continue;
            }
            var out = p.alpha * v[c];
            if (p.beta != 0.0) { out = out + p.beta * C[idx]; }
            C[idx] = out;
        }
    }
}

@compute @workgroup_size(16, 16)
fn gemm(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let tx = lid.x;
    let ty = lid.y;
    let tid = ty * 16u + tx;
    let m0 = wid.y * BM;
    var n0 = wid.x * BN;
    let base_a = p.off_a + wid.z * p.stride_a;
    let base_b = p.off_b + wid.z * p.stride_b;
    var base_c = p.off_c + wid.z * p.stride_c;
    var kb = 0u;      // this workgroup's steps of K: [kb, ke)
    var ke = p.K;
    if (SPLITK > 1u) {
        let gx = (p.N + BN - 1u) / BN;
        let split = wid.x / gx;
        n0 = (wid.x % gx) * BN;
        let steps = (p.K + BK - 1u) / BK;
        let per = (steps + SPLITK - 1u) / SPLITK;
        kb = min(split * per, steps) * BK;
        ke = min(split * per + per, steps) * BK;
        base_c = (split * nwg.z + wid.z) * p.M * p.N;
    }

    var acc: array<vec4<f32>, 16>;   // zero-initialised; only constant indices, so it stays in registers

    // Which (k, group of 4) each invocation loads: consecutive invocations walk
    // the operand's contiguous axis, so global reads coalesce.
    let ak = select(tid & 15u, tid >> 4u, TRANS_A);
    let ag = select(tid >> 4u, tid & 15u, TRANS_A);
    let bk = select(tid >> 4u, tid & 15u, TRANS_B);
    let bg = select(tid & 15u, tid >> 4u, TRANS_B);
    // Registers hold the next tile while the current one is multiplied.
    var pa0 = vec4<f32>(0.0);
    var pa1 = vec4<f32>(0.0);
    var pb0 = vec4<f32>(0.0);
    var pb1 = vec4<f32>(0.0);
    if (kb < ke) {   // (an empty split reads nothing: past K there may be no data)
        pa0 = a4(base_a, m0 + ag * 4u, kb + ak);
        pa1 = a4(base_a, m0 + 64u + ag * 4u, kb + ak);
        pb0 = b4(base_b, kb + bk, n0 + bg * 4u);
        pb1 = b4(base_b, kb + bk, n0 + 64u + bg * 4u);
    }

    for (var k0 = kb; k0 < ke; k0 = k0 + BK) {
        As[ak * LD + ag] = pa0;
        As[ak * LD + 16u + ag] = pa1;
        Bs[bk * LD + bg] = pb0;
        Bs[bk * LD + 16u + bg] = pb1;
        workgroupBarrier();
        let kn = k0 + BK;
        if (kn < ke) {
            pa0 = a4(base_a, m0 + ag * 4u, kn + ak);
            pa1 = a4(base_a, m0 + 64u + ag * 4u, kn + ak);
            pb0 = b4(base_b, kn + bk, n0 + bg * 4u);
            pb1 = b4(base_b, kn + bk, n0 + 64u + bg * 4u);
        }
        for (var k = 0u; k < BK; k = k + 1u) {
            let a0 = As[k * LD + ty];
            let a1 = As[k * LD + 16u + ty];
            let b0 = Bs[k * LD + tx];
            let b1 = Bs[k * LD + 16u + tx];
        acc[0] = fma(vec4<f32>(a0.x), b0, acc[0]);
        acc[1] = fma(vec4<f32>(a0.x), b1, acc[1]);
        acc[2] = fma(vec4<f32>(a0.y), b0, acc[2]);
        acc[3] = fma(vec4<f32>(a0.y), b1, acc[3]);
        acc[4] = fma(vec4<f32>(a0.z), b0, acc[4]);
        acc[5] = fma(vec4<f32>(a0.z), b1, acc[5]);
        acc[6] = fma(vec4<f32>(a0.w), b0, acc[6]);
        acc[7] = fma(vec4<f32>(a0.w), b1, acc[7]);
        acc[8] = fma(vec4<f32>(a1.x), b0, acc[8]);
        acc[9] = fma(vec4<f32>(a1.x), b1, acc[9]);
        acc[10] = fma(vec4<f32>(a1.y), b0, acc[10]);
        acc[11] = fma(vec4<f32>(a1.y), b1, acc[11]);
        acc[12] = fma(vec4<f32>(a1.z), b0, acc[12]);
        acc[13] = fma(vec4<f32>(a1.z), b1, acc[13]);
        acc[14] = fma(vec4<f32>(a1.w), b0, acc[14]);
        acc[15] = fma(vec4<f32>(a1.w), b1, acc[15]);
        }
        workgroupBarrier();
    }

    store4(base_c, m0 + ty * 4u + 0u, n0 + 0u + tx * 4u, acc[0]);
    store4(base_c, m0 + ty * 4u + 0u, n0 + 64u + tx * 4u, acc[1]);
    store4(base_c, m0 + ty * 4u + 1u, n0 + 0u + tx * 4u, acc[2]);
    store4(base_c, m0 + ty * 4u + 1u, n0 + 64u + tx * 4u, acc[3]);
    store4(base_c, m0 + ty * 4u + 2u, n0 + 0u + tx * 4u, acc[4]);
    store4(base_c, m0 + ty * 4u + 2u, n0 + 64u + tx * 4u, acc[5]);
    store4(base_c, m0 + ty * 4u + 3u, n0 + 0u + tx * 4u, acc[6]);
    store4(base_c, m0 + ty * 4u + 3u, n0 + 64u + tx * 4u, acc[7]);
    store4(base_c, m0 + 64u + ty * 4u + 0u, n0 + 0u + tx * 4u, acc[8]);
    store4(base_c, m0 + 64u + ty * 4u + 0u, n0 + 64u + tx * 4u, acc[9]);
    store4(base_c, m0 + 64u + ty * 4u + 1u, n0 + 0u + tx * 4u, acc[10]);
    store4(base_c, m0 + 64u + ty * 4u + 1u, n0 + 64u + tx * 4u, acc[11]);
    store4(base_c, m0 + 64u + ty * 4u + 2u, n0 + 0u + tx * 4u, acc[12]);
    store4(base_c, m0 + 64u + ty * 4u + 2u, n0 + 64u + tx * 4u, acc[13]);
    store4(base_c, m0 + 64u + ty * 4u + 3u, n0 + 0u + tx * 4u, acc[14]);
    store4(base_c, m0 + 64u + ty * 4u + 3u, n0 + 64u + tx * 4u, acc[15]);
}

// Matrix-vector products (M = 1). y[n] = alpha * sum_k x[k] * op(B)[k, n] + beta * y[n].
// gemv_t: B stored [N, K] (rows are contiguous): one workgroup of WG per ROWS
// rows, invocations stride over k, then a tree reduction per row.
// gemv_n: B stored [K, N]: one invocation per output column n, loop over k
// (consecutive invocations read consecutive n: coalesced).

override WG: u32 = 256u;
override ROWS: u32 = 4u;

var<workgroup> red: array<f32, 1024>;   // WG * ROWS <= 1024

// gemv_t with NORM: x is rmsnorm(x) * NW as it is loaded (rowwise.wgsl's
// formula x * inv * w, inv = inverseSqrt(mean(x^2) + eps)); the workgroup
// first computes inv itself. Without NORM, NW is bound (to A) but not read.
override NORM: bool = false;
@group(0) @binding(4) var<storage, read> NW: array<f32>;

#include "swiglu_mv.wgsl"   // SWIGLU: gate and up rows in one workgroup (out_rows, w_out, w_is_up, silu_mul)

@compute @workgroup_size(WG)
fn gemv_t(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
          @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = lid.x;
    let row0 = (wid.y * nwg.x + wid.x) * out_rows();
    let base_a = p.off_a + wid.z * p.stride_a;
    let base_b = p.off_b + wid.z * p.stride_b;
    let base_c = p.off_c + wid.z * p.stride_c;
    var inv = 1.0;
    if (NORM) {
        var ss = 0.0;
        for (var k = t; k < p.K; k = k + WG) { ss = ss + A[base_a + k] * A[base_a + k]; }
        red[t] = ss;
        workgroupBarrier();
        for (var h = WG / 2u; h > 0u; h = h >> 1u) {
            if (t < h) { red[t] = red[t] + red[t + h]; }
            workgroupBarrier();
        }
        inv = inverseSqrt(red[0] / f32(p.K) + p.eps);
        workgroupBarrier();
    }
    for (var r = 0u; r < ROWS; r = r + 1u) {
        let n = w_out(row0, r);
        let bw = select(base_b, p.off_u + wid.z * p.stride_b, w_is_up(r));
        var s = 0.0;
        if (n < p.N) {
            for (var k = t; k < p.K; k = k + WG) {
                var x = A[base_a + k];
                if (NORM) { x = x * inv * NW[p.off_n + k]; }
                s = fma(x, load_b(bw + n * p.K + k), s);
            }
        }
        red[r * WG + t] = s;
    }
    workgroupBarrier();
    var w = WG / 2u;
    loop {
        if (w == 0u) { break; }
        if (t < w) {
            for (var r = 0u; r < ROWS; r = r + 1u) { red[r * WG + t] = red[r * WG + t] + red[r * WG + t + w]; }
        }
        workgroupBarrier();
        w = w / 2u;
    }
    if (t < out_rows()) {
        let n = row0 + t;
        if (n < p.N) {
            var out = p.alpha * red[t * WG];
            if (SWIGLU) { out = silu_mul(red[t * WG], red[(t + ROWS / 2u) * WG]); }
            if (p.beta != 0.0) { out = out + p.beta * C[base_c + n]; }
            C[base_c + n] = out;
        }
    }
}

@compute @workgroup_size(WG)
fn gemv_n(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
          @builtin(num_workgroups) nwg: vec3<u32>) {
    let n = (wid.y * nwg.x + wid.x) * WG + lid.x;
    if (n >= p.N) { return; }
    let base_a = p.off_a + wid.z * p.stride_a;
    let base_b = p.off_b + wid.z * p.stride_b;
    let base_c = p.off_c + wid.z * p.stride_c;
    var s = 0.0;
    for (var k = 0u; k < p.K; k = k + 1u) { s = fma(A[base_a + k], load_b(base_b + k * p.N + n), s); }
    var out = p.alpha * s;
    if (p.beta != 0.0) { out = out + p.beta * C[base_c + n]; }
    C[base_c + n] = out;
}
