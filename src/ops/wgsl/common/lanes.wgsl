// lane_xor_add and lane_xor for builds without subgroups (rows_out.wgsl and
// kmv4_body.wgsl's round_a with SGW = 1, which never call them).
// lanes_sg.wgsl is the subgroup build's.
// Needs nothing from the including module.

fn lane_xor_add(v: f32, o: u32) -> f32 {
    return v;
}

fn lane_xor(v: f32, o: u32) -> f32 {
    return v;
}
