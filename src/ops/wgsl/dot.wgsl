// Dot product of two f32 vectors in two passes.
//
// dot_partial: a grid-stride loop over vec4 loads (four independent
// accumulators keep several loads in flight), a tree reduction in workgroup
// memory, one partial sum per workgroup. The number of workgroups is fixed
// by the host, so any n works (no 65,535-workgroup cap).
// dot_final: one workgroup sums the partials into out[out_index].

override WG: u32 = 256u;

struct Params {
    n: u32,          // elements in this chunk (dot_partial) or partials (dot_final)
    out_index: u32,  // where this chunk's / the final result goes
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<storage, read> a: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> b: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> partial: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

var<workgroup> sh: array<f32, WG>;

fn reduce_and_store(lid: u32, v: f32, dst: u32) {
    sh[lid] = v;
    workgroupBarrier();
    var s = WG / 2u;
    loop {
        if (s == 0u) { break; }
        if (lid < s) { sh[lid] = sh[lid] + sh[lid + s]; }
        workgroupBarrier();
        s = s / 2u;
    }
    if (lid == 0u) { partial[dst] = sh[0]; }
}

@compute @workgroup_size(WG)
fn dot_partial(@builtin(local_invocation_id) lid3: vec3<u32>,
               @builtin(workgroup_id) wid3: vec3<u32>,
               @builtin(num_workgroups) nwg3: vec3<u32>) {
    let lid = lid3.x;
    let n4 = p.n / 4u;
    let step = nwg3.x * WG;
    var i = wid3.x * WG + lid;
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);
    // 4-way unrolled while the whole group of four is in range
    loop {
        if (i + 3u * step >= n4 || i + 3u * step < i) { break; }
        acc0 = acc0 + a[i] * b[i];
        acc1 = acc1 + a[i + step] * b[i + step];
        acc2 = acc2 + a[i + 2u * step] * b[i + 2u * step];
        acc3 = acc3 + a[i + 3u * step] * b[i + 3u * step];
        i = i + 4u * step;
    }
    loop {
        if (i >= n4) { break; }
        acc0 = acc0 + a[i] * b[i];
        i = i + step;
    }
    // the last 1..3 elements, masked lane by lane (select, so garbage past n
    // never reaches the sum, not even as NaN)
    let rem = p.n & 3u;
    if (rem != 0u && wid3.x == 0u && lid == 0u) {
        let v = a[n4] * b[n4];
        acc1 = acc1 + vec4<f32>(v.x, select(0.0, v.y, rem > 1u), select(0.0, v.z, rem > 2u), 0.0);
    }
    let acc = (acc0 + acc1) + (acc2 + acc3);
    reduce_and_store(lid, (acc.x + acc.y) + (acc.z + acc.w), p.out_index + wid3.x);
}

@group(0) @binding(0) var<storage, read> parts: array<f32>;
@group(0) @binding(1) var<storage, read_write> result: array<f32>;
@group(0) @binding(2) var<uniform> q: Params;

var<workgroup> sh2: array<f32, WG>;

@compute @workgroup_size(WG)
fn dot_final(@builtin(local_invocation_id) lid3: vec3<u32>) {
    let lid = lid3.x;
    var acc = 0.0;
    for (var i = lid; i < q.n; i = i + WG) { acc = acc + parts[i]; }
    sh2[lid] = acc;
    workgroupBarrier();
    var s = WG / 2u;
    loop {
        if (s == 0u) { break; }
        if (lid < s) { sh2[lid] = sh2[lid] + sh2[lid + s]; }
        workgroupBarrier();
        s = s / 2u;
    }
    if (lid == 0u) { result[q.out_index] = sh2[0]; }
}
