/* A shared library that looks like a WebGPU implementation but exports only
 * wgpuCreateInstance: the loader must reject it and name a missing symbol. */
void *wgpuCreateInstance(const void *descriptor);
void *wgpuCreateInstance(const void *descriptor) {
    (void)descriptor;
    return 0;
}
