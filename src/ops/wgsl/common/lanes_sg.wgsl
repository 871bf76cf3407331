// lane_xor_add for the subgroup builds (a module that starts with `enable
// subgroups;`): v plus the value of the invocation whose subgroup lane is
// this one's xor o (rows_out.wgsl's butterfly).
// Needs nothing from the including module.

fn lane_xor_add(v: f32, o: u32) -> f32 {
    return v + subgroupShuffleXor(v, o);
}
