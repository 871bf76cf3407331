// Included by incl.wgsl and bad_after.wgsl; not a kernel of its own.
  #include "shared.wgsl"
fn local_value() -> u32 {
    return shared_value() * 2u;
}
