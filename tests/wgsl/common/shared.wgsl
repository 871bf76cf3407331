// Found through the -I directory.
fn shared_value() -> u32 {
    return 21u;
}
