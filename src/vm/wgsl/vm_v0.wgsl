// pxVM GPU interpreter: v0 kernels. Compiled after vm.wgsl (the common part);
// see there for the conventions.

// ---- v0 ---------------------------------------------------------------------------

var<workgroup> dot_n: atomic<u32>;
var<workgroup> dot_sum: array<u32, 256>;

// DOT_RGB in one workgroup: the length n (first x where both pixels are all
// zero), then the sum of R products (< 255 * 255 * 16384 < 2^32), stored mod 2^16
// in R, G of P(0, rowOut). p.a, p.b, p.o: first words of the rows; p.aux: W.
@compute @workgroup_size(256)
fn v0_dot(@builtin(local_invocation_index) li: u32) {
    let w = p.aux;
    if (li == 0u) { atomicStore(&dot_n, w); }
    workgroupBarrier();
    for (var x = li; x < w; x = x + 256u) {
        if ((img[p.a + x] | img[p.b + x]) == 0u) {
            atomicMin(&dot_n, x);
            break;
        }
    }
    workgroupBarrier();
    let n = atomicLoad(&dot_n);
    var s = 0u;
    for (var x = li; x < n; x = x + 256u) { s = s + (img[p.a + x] & 255u) * (img[p.b + x] & 255u); }
    dot_sum[li] = s;
    workgroupBarrier();
    for (var h = 128u; h > 0u; h = h >> 1u) {
        if (li < h) { dot_sum[li] = dot_sum[li] + dot_sum[li + h]; }
        workgroupBarrier();
    }
    if (li == 0u) { img[p.o] = (img[p.o] & 0xffff0000u) | (dot_sum[0] & 0xffffu); }
}

// ADD (op 0) and RELU (op 1) on the R channel of one row; invocation x owns
// pixel x of the output row and reads only column x.
@compute @workgroup_size(64)
fn v0_row(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
          @builtin(num_workgroups) nwg: vec3<u32>) {
    let x = item(wid, nwg, li, 64u);
    if (x >= p.count) { return; }
    let ra = img[p.a + x] & 255u;
    var r: u32;
    if (p.op == 0u) {
        r = min(255u, ra + (img[p.b + x] & 255u));
    } else {
        r = select(0u, ra, ra < 128u);
    }
    img[p.o + x] = (img[p.o + x] & ~255u) | r;
}

@group(0) @binding(1) var<storage, read_write> scr: array<u32>;

// v0 MATMUL, pass 1: elements 4g .. 4g+3 of C (row-major, m x n) into
// scratch word g. p.a, p.b: first element pixels of A (m x k), B (k x n).
// Sums are below 255 * 255 * 65535 < 2^32.
@compute @workgroup_size(64)
fn v0_mm(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
         @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = item(wid, nwg, li, 64u);
    if (g >= p.count) { return; }
    let total = p.m * p.n;
    var w = 0u;
    for (var c = 0u; c < 4u; c = c + 1u) {
        let e = 4u * g + c;
        if (e >= total) { break; }
        let i = e / p.n;
        let j = e - i * p.n;
        var s = 0u;
        for (var t = 0u; t < p.k; t = t + 1u) {
            s = s + (img[p.a + i * p.k + t] & 255u) * (img[p.b + t * p.n + j] & 255u);
        }
        w = w | (min(s, 255u) << (8u * c));
    }
    scr[g] = w;
}

// v0 MATMUL, pass 2: element e to the R channel of pixel p.o + e; the first
// invocation writes the header (cols = n, rows = m) at pixel p.aux.
@compute @workgroup_size(64)
fn v0_mm_store(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
               @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = item(wid, nwg, li, 64u);
    if (e == 0u) { img[p.aux] = (p.n & 0xffffu) | (p.m << 16u); }
    if (e >= p.count) { return; }
    let r = (scr[e >> 2u] >> (8u * (e & 3u))) & 255u;
    img[p.o + e] = (img[p.o + e] & ~255u) | r;
}
