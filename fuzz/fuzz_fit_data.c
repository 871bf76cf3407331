/*
 * libFuzzer target for the data reader of pxl fit (src/ad/table.c,
 * pxl_ad_table_parse): reads the input as a table, then again with two
 * given column names. A refusal must leave a message and no table; a table
 * must have rows and columns, finite values, distinct non-empty names and
 * increasing source lines. abort() on any inconsistency.
 */
#include "fuzz_ctx.h"
#include "pxl/ad.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(pxl_ctx *ctx, pxl_status s, pxl_ad_table *t) {
    if (s != PXL_OK) {
        if (t != NULL || pxl_ctx_error(ctx)[0] == '\0') abort();
        return;
    }
    size_t rows = pxl_ad_table_rows(t), cols = pxl_ad_table_columns(t);
    if (rows == 0 || cols == 0 || cols > PXL_AD_TABLE_MAX_COLUMNS) abort();
    const double *d = pxl_ad_table_data(t);
    for (size_t i = 0; i < rows * cols; i++)
        if (!isfinite(d[i])) abort();
    for (size_t c = 0; c < cols; c++) {
        const char *n = pxl_ad_table_name(t, c);
        if (!n || !n[0]) abort();
        for (size_t e = 0; e < c; e++)
            if (strcmp(n, pxl_ad_table_name(t, e)) == 0) abort();
    }
    if (pxl_ad_table_name(t, cols) != NULL) abort();
    for (size_t r = 0; r < rows; r++)
        if (pxl_ad_table_line(t, r) == 0 || (r && pxl_ad_table_line(t, r) <= pxl_ad_table_line(t, r - 1))) abort();
    pxl_ad_table_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    pxl_ctx *ctx = fuzz_cpu_ctx();
    if (!ctx) return 0;
    pxl_ad_table *t = NULL;
    pxl_status s = pxl_ad_table_parse(ctx, (const char *)data, size, NULL, &t);
    check(ctx, s, t);
    static const char *const names[] = {"t", "y"};
    pxl_ad_table_options o = {names, 2};
    t = NULL;
    s = pxl_ad_table_parse(ctx, (const char *)data, size, &o, &t);
    if (s == PXL_OK && pxl_ad_table_columns(t) != 2) abort();
    check(ctx, s, t);
    pxl_ctx_free(ctx);
    return 0;
}
