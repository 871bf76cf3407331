// lane_xor_add and lane_xor for the subgroup builds (a module that starts
// with `enable subgroups;`): v plus the value of the invocation whose
// subgroup lane is this one's xor o (rows_out.wgsl's butterfly), and that
// value alone (kmv4_body.wgsl's round_a).
// Needs nothing from the including module.

fn lane_xor_add(v: f32, o: u32) -> f32 {
    return v + subgroupShuffleXor(v, o);
}

fn lane_xor(v: f32, o: u32) -> f32 {
    return subgroupShuffleXor(v, o);
}
