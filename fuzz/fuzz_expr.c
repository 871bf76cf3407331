/*
 * libFuzzer target for the expression parser (src/ad/expr.c, pxl_ad_parse):
 * parses the input with a fixed table of names. A refusal must say where
 * (a column within the text, or just past the length limit), leave a
 * message and the invalid value, and leave the graph usable. A success must
 * be a value of the graph that compiles and evaluates (any numbers, NaN
 * included). abort() on any inconsistency.
 */
#include "fuzz_ctx.h"
#include "pxl/ad.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const pxl_ad_name k_names[] = {
    {"x", PXL_AD_NAME_INPUT, 0}, {"y", PXL_AD_NAME_INPUT, 1}, {"x2", PXL_AD_NAME_INPUT, 2},
    {"b1", PXL_AD_NAME_PARAM, 0}, {"b2", PXL_AD_NAME_PARAM, 1}, {"b3", PXL_AD_NAME_PARAM, 2},
    {"a", PXL_AD_NAME_PARAM, 3},  {"e", PXL_AD_NAME_PARAM, 4},
};
#define N_NAMES (sizeof k_names / sizeof k_names[0])

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    pxl_ctx *ctx = fuzz_cpu_ctx();
    if (!ctx) return 0;
    pxl_ad_graph *g = NULL;
    if (pxl_ad_graph_create(ctx, &g) != PXL_OK) {
        pxl_ctx_free(ctx);
        return 0;
    }
    uint8_t used[N_NAMES] = {0};
    pxl_ad_parse_names names = {k_names, N_NAMES, used};
    pxl_ad_value v;
    pxl_ad_parse_error err;
    pxl_status s = pxl_ad_parse(g, (const char *)data, size, &names, &v, &err);
    if (s != PXL_OK) {
        if (err.code == PXL_AD_PARSE_OK || err.message[0] == '\0' || pxl_ctx_error(ctx)[0] == '\0') abort();
        if (v.graph != 0 || v.index != 0) abort();
        if (err.code != PXL_AD_PARSE_GRAPH) {
            if (s != PXL_ERR_FORMAT || err.column < 1 || err.length < 1) abort();
            if (err.column > size + 1 && !(err.code == PXL_AD_PARSE_LIMIT && err.column == PXL_AD_PARSE_MAX_LEN + 1))
                abort();
            if (pxl_ad_graph_status(g) != PXL_OK) abort();
        }
    } else {
        if (err.code != PXL_AD_PARSE_OK || !pxl_ad_valid(g, v)) abort();
        pxl_ad_program *p = NULL;
        if (pxl_ad_output(g, v) != PXL_OK || pxl_ad_compile(g, &p) != PXL_OK) abort();
        pxl_ad_program_info info = pxl_ad_program_get_info(p);
        if (info.n_params > 5 || info.n_inputs > 3 || info.n_outputs != 1) abort();
        for (size_t j = 0; j < info.n_params; j++)
            if (!used[3 + j] && j + 1 == info.n_params) abort(); /* the largest slot was named */
        double params[5] = {0.5, -1.25, 3.0, 1e-3, 2.0}, in[3] = {1.5, -0.75, 100.0}, r, jac[5];
        uint32_t idx[5] = {0, 1, 2, 3, 4};
        pxl_ad_eval_options o = {PXL_AD_F64, 1, PXL_AD_CPU};
        if (pxl_ad_eval(ctx, p, params, 5, idx, in, 1, &r, jac, &o) != PXL_OK) abort();
        pxl_ad_program_free(p);
    }
    pxl_ad_graph_free(g);
    pxl_ctx_free(ctx);
    return 0;
}
