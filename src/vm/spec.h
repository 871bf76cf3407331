/*
 * The pxVM instruction set in one table, shared by the validator, both
 * interpreters, the assembler and the disassembler. docs/pxvm-spec.md is the
 * normative text; this table must agree with it.
 */
#ifndef PXL_VM_SPEC_H
#define PXL_VM_SPEC_H

#include "pxl/vm.h"

#include <stdint.h>

/* The opcodes, magic numbers and dtypes are in pxl/vm.h (public: the file format). */

/* Operand usage per opcode: which of out, a, b are tensors (v1) or rows (v0). */
typedef struct pxl_vm_opinfo {
    uint8_t op;
    uint8_t version;
    const char *name;       /* mnemonic, as the assembler writes it */
    uint8_t uses_out, uses_a, uses_b, uses_imm;
} pxl_vm_opinfo;

static const pxl_vm_opinfo pxl_vm_ops[] = {
    {PXL_OP_HALT, 0, "halt", 0, 0, 0, 0},
    {PXL_OP_V0_DOT, 0, "dot_rgb", 1, 1, 1, 0},
    {PXL_OP_V0_ADD, 0, "add_r", 1, 1, 1, 0},
    {PXL_OP_V0_RELU, 0, "relu_r", 1, 1, 0, 0},
    {PXL_OP_V0_MATMUL, 0, "matmul_r", 1, 1, 1, 0},
    {PXL_OP_HALT, 1, "halt", 0, 0, 0, 0},
    {PXL_OP_MATMUL, 1, "matmul", 1, 1, 1, 1},
    {PXL_OP_ADD, 1, "add", 1, 1, 1, 0},
    {PXL_OP_MUL, 1, "mul", 1, 1, 1, 0},
    {PXL_OP_LUT, 1, "lut", 1, 1, 1, 0},
    {PXL_OP_GATHER, 1, "gather", 1, 1, 1, 0},
    {PXL_OP_ARGMAX, 1, "argmax", 1, 1, 0, 0},
    {PXL_OP_COPY, 1, "copy", 1, 1, 0, 0},
};
#define PXL_VM_N_OPS (sizeof pxl_vm_ops / sizeof pxl_vm_ops[0])

static inline const pxl_vm_opinfo *pxl_vm_opinfo_find(int version, uint8_t op) {
    for (unsigned i = 0; i < PXL_VM_N_OPS; i++)
        if (pxl_vm_ops[i].version == version && pxl_vm_ops[i].op == op) return &pxl_vm_ops[i];
    return 0;
}

#endif
