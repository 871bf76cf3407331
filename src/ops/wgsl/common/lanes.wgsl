// lane_xor_add for builds without subgroups (rows_out.wgsl with SGW = 1,
// which never calls it). lanes_sg.wgsl is the subgroup build's.
// Needs nothing from the including module.

fn lane_xor_add(v: f32, o: u32) -> f32 {
    return v;
}
