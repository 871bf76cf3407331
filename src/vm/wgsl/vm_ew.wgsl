// pxVM GPU interpreter: v1 element-wise, LUT, GATHER and ARGMAX kernels. Compiled after vm.wgsl (the common part);
// see there for the conventions.

@group(0) @binding(1) var<storage, read_write> scr: array<u32>;

// ---- v1 element-wise ----------------------------------------------------------------

// ADD (op 0), MUL (op 1), COPY (op 2): invocation g owns output elements 4g .. 4g+3.
@compute @workgroup_size(64)
fn ew(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
      @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = item(wid, nwg, li, 64u);
    let total = p.m * p.n;
    if (4u * g >= total) { return; }
    var v = vec4<i32>(0);
    for (var c = 0u; c < 4u; c = c + 1u) {
        let e = 4u * g + c;
        if (e >= total) { break; }
        let av = ld(p.a, e, p.a_dt);
        if (p.op == 2u) {
            v[c] = av;
            continue;
        }
        var bi = e;
        if (p.bcast == 1u) { bi = e % p.n; }
        let bv = ld(p.b, bi, p.b_dt);
        var acc: i32;
        if (p.op == 1u) {
            acc = av * bv;                 // int8 x int8
        } else if (p.a_dt == 2u) {
            acc = add_sat(av, bv);
        } else {
            acc = av + bv;
        }
        v[c] = rq(acc, p.mult, p.shift, p.o_dt);
    }
    st_group(p.o, g, total, p.o_dt, v);
}

// LUT: out = table[a + 128], the table (256 int8) copied to scratch words 0..63 first.
@compute @workgroup_size(64)
fn lut(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
       @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = item(wid, nwg, li, 64u);
    let total = p.m * p.n;
    if (4u * g >= total) { return; }
    var v = vec4<i32>(0);
    for (var c = 0u; c < 4u; c = c + 1u) {
        let e = 4u * g + c;
        if (e >= total) { break; }
        let t = u32(ld8(p.a, e) + 128);
        v[c] = bitcast<i32>(scr[t >> 2u] << (24u - 8u * (t & 3u))) >> 24u;
    }
    st_group(p.o, g, total, 1u, v);
}

// ---- GATHER ----------------------------------------------------------------------

// status word 0: smallest (instruction << 16 | row) with an index outside
// [0, V), NONE if none; word 1: that index; word 2: 1 once word 1 is set.
@group(0) @binding(1) var<storage, read_write> st: array<atomic<u32>>;

// out[i] = a[b[i]] (rows of n elements); p.aux = V.
@compute @workgroup_size(64)
fn gather(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
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
        let idx = ld32(p.b, i);
        if (idx >= 0 && u32(idx) < p.aux) {
            v[c] = ld(p.a, u32(idx) * p.n + j, p.a_dt);
        } else if (j == 0u) {
            atomicMin(&st[0], (p.insn << 16u) | i);
        }
    }
    st_group(p.o, g, total, p.o_dt, v);
}

// After a GATHER: if the first bad index recorded so far is this
// instruction's, note its value (b is not written by the GATHER).
@compute @workgroup_size(1)
fn gather_note() {
    let key = atomicLoad(&st[0]);
    if (key != NONE && (key >> 16u) == p.insn && atomicLoad(&st[2]) == 0u) {
        atomicStore(&st[1], img[p.b + (key & 0xffffu)]);
        atomicStore(&st[2], 1u);
    }
}

// ---- ARGMAX ----------------------------------------------------------------------

var<workgroup> am_v: array<i32, 64>;
var<workgroup> am_i: array<u32, 64>;

// One workgroup per row: the index of the first largest element.
@compute @workgroup_size(64)
fn argmax(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
          @builtin(num_workgroups) nwg: vec3<u32>) {
    let row = wid.y * nwg.x + wid.x;
    if (row >= p.m) { return; }
    var bv = i32(-2147483648);
    var bi = NONE;
    for (var j = li; j < p.n; j = j + 64u) {
        let v = ld(p.a, row * p.n + j, p.a_dt);
        if (bi == NONE || v > bv) {
            bv = v;
            bi = j;
        }
    }
    am_v[li] = bv;
    am_i[li] = bi;
    workgroupBarrier();
    for (var h = 32u; h > 0u; h = h >> 1u) {
        if (li < h) {
            let v2 = am_v[li + h];
            let i2 = am_i[li + h];
            // NONE (an empty lane) is the largest index, so it never wins a tie
            if (i2 != NONE && (v2 > am_v[li] || (v2 == am_v[li] && i2 < am_i[li]))) {
                am_v[li] = v2;
                am_i[li] = i2;
            }
        }
        workgroupBarrier();
    }
    if (li == 0u) { img[p.o + row] = am_i[0]; }
}
