/* The ad layer's shared definitions: node kinds, nodes, programs. */
#ifndef PXL_AD_INTERNAL_H
#define PXL_AD_INTERNAL_H

#include "../core/internal.h"
#include "pxl/ad.h"

/* Node kinds. Leaves first; the order is part of the structural hash. */
typedef enum pxl_ad_op {
    PXL_AD_OP_CONST, PXL_AD_OP_PARAM, PXL_AD_OP_INPUT,
    /* unary */
    PXL_AD_OP_NEG, PXL_AD_OP_EXP, PXL_AD_OP_LOG, PXL_AD_OP_SQRT, PXL_AD_OP_POWI,
    PXL_AD_OP_SIN, PXL_AD_OP_COS, PXL_AD_OP_TAN, PXL_AD_OP_ASIN, PXL_AD_OP_ACOS, PXL_AD_OP_ATAN,
    PXL_AD_OP_SINH, PXL_AD_OP_COSH, PXL_AD_OP_TANH, PXL_AD_OP_SIGMOID, PXL_AD_OP_RELU,
    PXL_AD_OP_SOFTPLUS, PXL_AD_OP_ABS, PXL_AD_OP_SIGN, PXL_AD_OP_FLOOR, PXL_AD_OP_CEIL,
    /* binary */
    PXL_AD_OP_ADD, PXL_AD_OP_SUB, PXL_AD_OP_MUL, PXL_AD_OP_DIV, PXL_AD_OP_POW, PXL_AD_OP_HYPOT,
    PXL_AD_OP_ATAN2, PXL_AD_OP_MIN, PXL_AD_OP_MAX,
    PXL_AD_OP_LT, PXL_AD_OP_LE, PXL_AD_OP_GT, PXL_AD_OP_GE, PXL_AD_OP_EQ, PXL_AD_OP_NE,
    /* ternary */
    PXL_AD_OP_SELECT,
    PXL_AD_OP_COUNT
} pxl_ad_op;

/* A node or an instruction: operands a, b, c are node indices (earlier
 * nodes); PARAM and INPUT keep their slot / column in aux, POWI its exponent;
 * CONST its value in k. */
typedef struct pxl_ad_node {
    int32_t op;
    int32_t a, b, c;
    int32_t aux;
    double k;
} pxl_ad_node;

struct pxl_ad_program {
    pxl_ctx *ctx;
    pxl_ad_node *code; /* topological order; operands index code */
    size_t n;
    uint32_t *outputs; /* instruction of each residual */
    size_t n_out;
    size_t n_params, n_inputs;
    uint64_t hash;
};

/* The context g was created on; NULL for NULL (graph.c). */
pxl_ctx *pxl_ad_graph_ctx(const pxl_ad_graph *g);

#endif
