// pxVM GPU interpreter: MATMUL kernels. Compiled after vm.wgsl (the common part);
// see there for the conventions.

@group(0) @binding(1) var<storage, read_write> scr: array<u32>;

// ---- MATMUL ------------------------------------------------------------------------
//
// out[i][j] = rq(sum_t a[i][t] * b[j][t]); a m x k and b n x k int8, rows of k
// bytes packed one after another (so a row starts word-aligned only when
// k % 4 == 0: words are read with ld_word, which handles any alignment and the
// row's end). Accumulators stay within int32: |acc| <= k * 2^14 < 2^31.

// Small shapes: invocation g owns output elements 4g .. 4g+3 and computes
// each dot product itself, four bytes at a time.
@compute @workgroup_size(64)
fn mm_small(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
            @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = item(wid, nwg, li, 64u);
    let total = p.m * p.n;
    if (4u * g >= total) { return; }
    let k = p.k;
    var v = vec4<i32>(0);
    for (var c = 0u; c < 4u; c = c + 1u) {
        let e = 4u * g + c;
        if (e >= total) { break; }
        let i = e / p.n;
        let j = e - i * p.n;
        let ab = 4u * p.a + i * k;
        let bb = 4u * p.b + j * k;
        var acc = 0;
        for (var t = 0u; t < k; t = t + 4u) {
            let nv = k - t;
            acc = acc + dp4(ld_word(ab + t, nv), ld_word(bb + t, nv));
        }
        v[c] = rq(acc, p.mult, p.shift, p.o_dt);
    }
    st_group(p.o, g, total, p.o_dt, v);
}

// Large shapes: 128 x 128 output tiles, 256 invocations each computing 8 x 8
// (rows 4ty..4ty+3 and 64+4ty..64+4ty+3, columns likewise with tx), k in
// steps of 32 bytes (8 packed words). Workgroup tiles hold, for each k-word,
// 32 vec4s: words of rows 4r..4r+3 (padded to 33 so the loader's stores hit
// distinct banks). The next step's words are fetched into registers while the
// current one is computed; when k % 4 == 0 every row is word-aligned and the
// fetch is one plain load per word (else ld_word). Workgroup memory: 8448 bytes.
// On an H100 (Vulkan) this runs a 2048^3 product in about 0.34 ms (50 TOPS).
// int32 outputs and int8 outputs with n % 4 == 0 are stored into the image
// (four int8 columns = one word, owned by one invocation); other int8 outputs
// go to scratch in rows of p.aux words, and mm_pack moves them into the image.
override TO_SCRATCH: bool = false;

const TS: u32 = 33u;  // vec4s per k-word in a tile
var<workgroup> As: array<vec4<u32>, 264>;  // 8 * TS
var<workgroup> Bs: array<vec4<u32>, 264>;

fn d4(a: u32, b: vec4<u32>) -> vec4<i32> {
    return vec4<i32>(dp4(a, b.x), dp4(a, b.y), dp4(a, b.z), dp4(a, b.w));
}

// rows row0 + 32q (q = 0..3) of a tile, k-word kw of step `step`
fn mm_fetch(base: u32, rows: u32, row0: u32, step: u32, kw: u32) -> vec4<u32> {
    let k = p.k;
    let t = (step * 8u + kw) * 4u;
    var r = vec4<u32>(0u);
    if (t < k) {
        if ((k & 3u) == 0u) {
            let w0 = (base + row0 * k + t) >> 2u;
            let rs = 8u * k;   // words per 32 rows
            if (row0 < rows) { r.x = img[w0]; }
            if (row0 + 32u < rows) { r.y = img[w0 + rs]; }
            if (row0 + 64u < rows) { r.z = img[w0 + 2u * rs]; }
            if (row0 + 96u < rows) { r.w = img[w0 + 3u * rs]; }
        } else {
            let nv = k - t;
            let b0 = base + row0 * k + t;
            if (row0 < rows) { r.x = ld_word(b0, nv); }
            if (row0 + 32u < rows) { r.y = ld_word(b0 + 32u * k, nv); }
            if (row0 + 64u < rows) { r.z = ld_word(b0 + 64u * k, nv); }
            if (row0 + 96u < rows) { r.w = ld_word(b0 + 96u * k, nv); }
        }
    }
    return r;
}

fn mm_out(i: u32, j: u32, acc: vec4<i32>) {
    if (i >= p.m || j >= p.n) { return; }
    let q = vec4<i32>(rq(acc.x, p.mult, p.shift, p.o_dt), rq(acc.y, p.mult, p.shift, p.o_dt),
                      rq(acc.z, p.mult, p.shift, p.o_dt), rq(acc.w, p.mult, p.shift, p.o_dt));
    if (p.o_dt == 2u) {
        let base = p.o + i * p.n + j;
        let nv = min(p.n - j, 4u);
        for (var c = 0u; c < nv; c = c + 1u) { img[base + c] = bitcast<u32>(q[c]); }
    } else if (TO_SCRATCH) {
        scr[i * p.aux + (j >> 2u)] = pack4(q);
    } else {
        img[p.o + ((i * p.n + j) >> 2u)] = pack4(q);
    }
}

@compute @workgroup_size(256)
fn mm_tile(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let tx = li % 16u;
    let ty = li / 16u;
    let i0 = wid.y * 128u;
    let j0 = wid.x * 128u;
    let lkw = li % 8u;      // loader: k-word lkw of rows lrow + 32q
    let lrow = li / 8u;
    let abase = 4u * p.a + i0 * p.k;
    let bbase = 4u * p.b + j0 * p.k;
    let arows = min(p.m - i0, 128u);
    let brows = min(p.n - j0, 128u);
    let steps = (p.k + 31u) / 32u;
    let sidx = lkw * TS + (lrow >> 2u);
    let scomp = lrow & 3u;

    var c00 = vec4<i32>(0); var c01 = vec4<i32>(0);
    var c10 = vec4<i32>(0); var c11 = vec4<i32>(0);
    var c20 = vec4<i32>(0); var c21 = vec4<i32>(0);
    var c30 = vec4<i32>(0); var c31 = vec4<i32>(0);
    var c40 = vec4<i32>(0); var c41 = vec4<i32>(0);
    var c50 = vec4<i32>(0); var c51 = vec4<i32>(0);
    var c60 = vec4<i32>(0); var c61 = vec4<i32>(0);
    var c70 = vec4<i32>(0); var c71 = vec4<i32>(0);

    var ra = mm_fetch(abase, arows, lrow, 0u, lkw);
    var rb = mm_fetch(bbase, brows, lrow, 0u, lkw);
    for (var s = 0u; s < steps; s = s + 1u) {
        workgroupBarrier();
        As[sidx][scomp] = ra.x; As[sidx + 8u][scomp] = ra.y;
        As[sidx + 16u][scomp] = ra.z; As[sidx + 24u][scomp] = ra.w;
        Bs[sidx][scomp] = rb.x; Bs[sidx + 8u][scomp] = rb.y;
        Bs[sidx + 16u][scomp] = rb.z; Bs[sidx + 24u][scomp] = rb.w;
        workgroupBarrier();
        if (s + 1u < steps) {
            ra = mm_fetch(abase, arows, lrow, s + 1u, lkw);
            rb = mm_fetch(bbase, brows, lrow, s + 1u, lkw);
        }
        for (var kw = 0u; kw < 8u; kw = kw + 1u) {
            let a0 = As[kw * TS + ty];
            let a1 = As[kw * TS + 16u + ty];
            let b0 = Bs[kw * TS + tx];
            let b1 = Bs[kw * TS + 16u + tx];
            c00 = c00 + d4(a0.x, b0); c01 = c01 + d4(a0.x, b1);
            c10 = c10 + d4(a0.y, b0); c11 = c11 + d4(a0.y, b1);
            c20 = c20 + d4(a0.z, b0); c21 = c21 + d4(a0.z, b1);
            c30 = c30 + d4(a0.w, b0); c31 = c31 + d4(a0.w, b1);
            c40 = c40 + d4(a1.x, b0); c41 = c41 + d4(a1.x, b1);
            c50 = c50 + d4(a1.y, b0); c51 = c51 + d4(a1.y, b1);
            c60 = c60 + d4(a1.z, b0); c61 = c61 + d4(a1.z, b1);
            c70 = c70 + d4(a1.w, b0); c71 = c71 + d4(a1.w, b1);
        }
    }
    let ia = i0 + 4u * ty;
    let ib = i0 + 64u + 4u * ty;
    let ja = j0 + 4u * tx;
    let jb = j0 + 64u + 4u * tx;
    mm_out(ia, ja, c00); mm_out(ia, jb, c01);
    mm_out(ia + 1u, ja, c10); mm_out(ia + 1u, jb, c11);
    mm_out(ia + 2u, ja, c20); mm_out(ia + 2u, jb, c21);
    mm_out(ia + 3u, ja, c30); mm_out(ia + 3u, jb, c31);
    mm_out(ib, ja, c40); mm_out(ib, jb, c41);
    mm_out(ib + 1u, ja, c50); mm_out(ib + 1u, jb, c51);
    mm_out(ib + 2u, ja, c60); mm_out(ib + 2u, jb, c61);
    mm_out(ib + 3u, ja, c70); mm_out(ib + 3u, jb, c71);
}

// int8 results from scratch rows (p.aux words each) into the image's byte
// stream: invocation g owns output word g.
@compute @workgroup_size(64)
fn mm_pack(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
           @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = item(wid, nwg, li, 64u);
    let total = p.m * p.n;
    if (4u * g >= total) { return; }
    var v = vec4<i32>(0);
    for (var c = 0u; c < 4u; c = c + 1u) {
        let e = 4u * g + c;
        if (e >= total) { break; }
        let i = e / p.n;
        let j = e - i * p.n;
        v[c] = i32((scr[i * p.aux + (j >> 2u)] >> (8u * (j & 3u))) & 255u);
    }
    st_group(p.o, g, total, 1u, v);
}
