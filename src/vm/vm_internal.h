/*
 * The decoded form of a pxVM program: what the validator produces and both
 * interpreters consume. Decoding is validation: a program that decodes is
 * valid, and every shape, extent and cost is known before it runs.
 */
#ifndef PXL_VM_INTERNAL_H
#define PXL_VM_INTERNAL_H

#include "../core/internal.h"
#include "pxl/vm.h"
#include "spec.h"

/* A v1 tensor, or a v0 MATMUL matrix (dtype 0: one byte per element in the
 * R channel of consecutive pixels from linear pixel data_px). */
typedef struct pxl_vm_tensor {
    uint32_t row;       /* header row */
    uint8_t dtype;      /* 0 (v0 matrix), PXL_VM_INT8, PXL_VM_INT32 */
    uint8_t shift;
    int32_t mult;
    uint32_t rows, cols;
    uint64_t data_px;   /* linear pixel index (y * W + x) of the first data pixel */
    uint64_t n_bytes;   /* v1: data bytes; v0: elements */
    uint64_t end_px;    /* one past the last pixel of the extent (header included) */
} pxl_vm_tensor;

typedef struct pxl_vm_insn {
    uint8_t op;
    uint8_t imm;
    uint32_t x;             /* column of the instruction's first pixel in row 0 */
    uint32_t out, a, b;     /* row operands as written */
    pxl_vm_tensor t_out, t_a, t_b; /* v1 operands, and v0 MATMUL matrices */
    uint64_t cost;          /* work units (spec 3.6; v0 DOT costs 1 + W) */
} pxl_vm_insn;

typedef struct pxl_vm_program {
    int version;
    size_t n;               /* instructions before HALT / end of row 0 */
    pxl_vm_insn *insns;     /* owned; free with pxl_vm_program_free */
} pxl_vm_program;

/* Decodes and validates; on failure PXL_ERR_FORMAT naming the pixel. */
pxl_status pxl_vm_decode(pxl_ctx *ctx, const pxl_image *img, pxl_vm_program *out);
void pxl_vm_program_free(pxl_ctx *ctx, pxl_vm_program *p);

/* Interpreters over a decoded program (validate first). */
pxl_status pxl_vm_exec_cpu(pxl_ctx *ctx, pxl_image *img, const pxl_vm_program *p,
                           const pxl_vm_options *opts);
pxl_status pxl_vm_exec_gpu(pxl_ctx *ctx, pxl_image *img, const pxl_vm_program *p,
                           const pxl_vm_options *opts);
pxl_status pxl_vm_session_exec(pxl_vm_session *s, pxl_image *img, const pxl_vm_program *p,
                               const pxl_vm_options *opts);
pxl_ctx *pxl_vm_session_ctx(const pxl_vm_session *s);

/*
 * The budget rule (spec 3.6), shared by both interpreters: returns how many
 * instructions fit in max_steps work units (0: the default budget); when
 * fewer than p->n fit, msg gets the message the run fails with ("" if all fit).
 */
size_t pxl_vm_budget_fit(const pxl_vm_program *p, uint64_t max_steps, char *msg, size_t cap);

/* One line describing an instruction ("matmul out=4 a=1 b=1 flags=0"), the
 * same for both interpreters' traces (decode.c). */
void pxl_vm_insn_text(int version, const pxl_vm_insn *in, char *buf, size_t cap);

#endif
