/*
 * libFuzzer target for the entry format of the pipeline cache on disk
 * (src/gpu/diskcache.c), a file anyone can write into the cache directory.
 * The input is a whole entry file; it is checked against two keys: the key it
 * claims to hold (the bytes after the header, so that mutations reach the
 * checksum) and a fixed one. An accepted entry must describe a value inside
 * the input whose checksum matches; a rebuilt entry of that key and value
 * must be accepted too. abort() on any mismatch.
 */
#include "gpu/gpu_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const uint8_t *data, size_t size, const uint8_t *key, size_t key_size) {
    size_t off = 0, n = 0;
    if (!pxl_blob_parse(data, size, key, key_size, &off, &n)) return;
    if (off != 32 + key_size || off > size || n != size - off) abort();
    uint8_t head[32];
    pxl_blob_header(head, key, key_size, data + off, n);
    if (memcmp(head, data, 32) != 0) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const uint8_t fixed[] = "pxl fuzz key";
    check(data, size, fixed, sizeof fixed);
    if (size >= 16) {
        uint64_t ks = 0;
        for (int i = 0; i < 8; i++) ks |= (uint64_t)data[8 + i] << (8 * i);
        if (size >= 32 && ks <= size - 32) check(data, size, data + 32, (size_t)ks);
    }
    return 0;
}
