// pxl_copy for byte ranges that do not start or end on a word (f16 views at
// odd elements, block formats at 2-byte offsets): each invocation writes one
// destination word, taking the bytes inside the destination range from the
// source and keeping the others, so no two invocations write one word.
// Word-aligned copies do not come here: they are buffer-to-buffer copies.

override WG: u32 = 256u;

struct Params {
    nwords: u32,   // destination words touched
    src_off: u32,  // bytes: where the source starts in its binding
    dst_off: u32,  // bytes: where the destination starts in its binding
    nbytes: u32,
}

@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

fn src_byte(i: u32) -> u32 {
    return (src[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu;
}

@compute @workgroup_size(WG)
fn copy_bytes(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
              @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = (wid.y * nwg.x + wid.x) * WG + lid.x;
    if (i >= p.nwords) { return; }
    let w = p.dst_off / 4u + i;
    var v = dst[w];
    for (var j = 0u; j < 4u; j++) {
        let b = w * 4u + j;
        if (b >= p.dst_off && b < p.dst_off + p.nbytes) {
            let sh = j * 8u;
            v = (v & ~(0xffu << sh)) | (src_byte(p.src_off + (b - p.dst_off)) << sh);
        }
    }
    dst[w] = v;
}
