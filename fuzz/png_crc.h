/*
 * For the PNG fuzz targets (fuzz_pxi.c, fuzz_vm.c): a copy of the input with
 * every complete chunk's CRC made right, so that mutations get past libpng's
 * CRC checks into IHDR, the zlib stream, the row filters and, for whole
 * programs, the validator and the interpreter.
 */
#ifndef PXL_FUZZ_PNG_CRC_H
#define PXL_FUZZ_PNG_CRC_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "pxl/core.h"

/* A malloc'ed copy with each complete chunk's CRC made right; NULL when none was wrong. */
static uint8_t *fuzz_fix_png_crcs(const uint8_t *data, size_t size) {
    uint8_t *copy = NULL;
    size_t at = 8;
    while (size >= 12 && at <= size - 12) {
        uint32_t len = (uint32_t)data[at] << 24 | (uint32_t)data[at + 1] << 16 |
                       (uint32_t)data[at + 2] << 8 | data[at + 3];
        if (len > size - 12 - at) break;
        uint32_t crc = (uint32_t)crc32(0, data + at + 4, (uInt)(4 + len)); /* zlib's CRC-32 */
        const uint8_t *p = data + at + 8 + len;
        uint32_t old = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
        if (crc != old) {
            if (!copy) {
                copy = malloc(size);
                if (!copy) return NULL;
                memcpy(copy, data, size);
            }
            uint8_t *q = copy + at + 8 + len;
            q[0] = (uint8_t)(crc >> 24);
            q[1] = (uint8_t)(crc >> 16);
            q[2] = (uint8_t)(crc >> 8);
            q[3] = (uint8_t)crc;
        }
        at += 12 + (size_t)len;
    }
    return copy;
}

/* Runs check(ctx, data, size) on the input, then on its CRC-repaired copy if
 * any CRC was wrong. */
static void fuzz_png_both(pxl_ctx *ctx, const uint8_t *data, size_t size,
                          void (*check)(pxl_ctx *, const uint8_t *, size_t)) {
    check(ctx, data, size);
    uint8_t *fixed = fuzz_fix_png_crcs(data, size);
    if (fixed) {
        check(ctx, fixed, size);
        free(fixed);
    }
}

#endif
