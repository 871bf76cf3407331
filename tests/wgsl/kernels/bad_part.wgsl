// The error of bad.wgsl.
fn broken() -> u32 {
    return no_such_thing_in_part;
}
