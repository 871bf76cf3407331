/*
 * pxl/llm.h: the GGUF LLM runtime. GGUF files (read, memory-mapped, and
 * written), the tokenizers they describe, and llama-family models that run
 * on the context's backend (CPU or GPU) with the kernels of pxl/ops.h.
 *
 * Conventions are core.h's: every function that can fail returns a
 * pxl_status and leaves a message in the context; every create/open has a
 * free that accepts NULL.
 */
#ifndef PXL_LLM_H
#define PXL_LLM_H

#include "pxl/core.h"
#include "pxl/gpu.h"
#include "pxl/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ==== GGUF files ======================================================================== */

/* Metadata value types, numbered as in the GGUF specification. */
typedef enum pxl_gguf_type {
    PXL_GGUF_UINT8 = 0,
    PXL_GGUF_INT8 = 1,
    PXL_GGUF_UINT16 = 2,
    PXL_GGUF_INT16 = 3,
    PXL_GGUF_UINT32 = 4,
    PXL_GGUF_INT32 = 5,
    PXL_GGUF_FLOAT32 = 6,
    PXL_GGUF_BOOL = 7,
    PXL_GGUF_STRING = 8,
    PXL_GGUF_ARRAY = 9,
    PXL_GGUF_UINT64 = 10,
    PXL_GGUF_INT64 = 11,
    PXL_GGUF_FLOAT64 = 12
} pxl_gguf_type;

/* Static name of a metadata type ("uint32", "string", ...); "?" when unknown. */
PXL_API const char *pxl_gguf_type_name(pxl_gguf_type t);

/* Tensor types, numbered as ggml numbers them (the values stored in GGUF). */
typedef enum pxl_ggml_type {
    PXL_GGML_F32 = 0,
    PXL_GGML_F16 = 1,
    PXL_GGML_Q4_0 = 2,
    PXL_GGML_Q4_1 = 3,
    PXL_GGML_Q5_0 = 6,
    PXL_GGML_Q5_1 = 7,
    PXL_GGML_Q8_0 = 8,
    PXL_GGML_Q8_1 = 9,
    PXL_GGML_Q2_K = 10,
    PXL_GGML_Q3_K = 11,
    PXL_GGML_Q4_K = 12,
    PXL_GGML_Q5_K = 13,
    PXL_GGML_Q6_K = 14,
    PXL_GGML_Q8_K = 15,
    PXL_GGML_I8 = 24,
    PXL_GGML_I16 = 25,
    PXL_GGML_I32 = 26,
    PXL_GGML_I64 = 27,
    PXL_GGML_F64 = 28,
    PXL_GGML_BF16 = 30
} pxl_ggml_type;

/* Static name of a ggml type ("Q4_K", "BF16"; "type 17" style names are not
 * static: unknown numbers give "unknown"). */
PXL_API const char *pxl_ggml_type_name(uint32_t type);
/* Block size (elements) and bytes per block of a ggml type; 0 for types the
 * reader does not know the layout of (their tensors are refused at open). */
PXL_API uint32_t pxl_ggml_block_elems(uint32_t type);
PXL_API uint32_t pxl_ggml_block_bytes(uint32_t type);

typedef struct pxl_gguf pxl_gguf;

/* One tensor of a GGUF file. All pointers are owned by the pxl_gguf and live
 * until pxl_gguf_free. */
typedef struct pxl_gguf_tensor {
    const char *name;  /* NUL-terminated */
    uint32_t type;     /* pxl_ggml_type */
    int ndim;          /* 1..4 */
    int64_t ne[4];     /* GGUF order: ne[0] is the row length (innermost); unused dims are 1 */
    uint64_t offset;   /* from the start of the file */
    uint64_t bytes;    /* checked: inside the file */
    const void *data;  /* the bytes, in the mapping (or the caller's memory) */
} pxl_gguf_tensor;

/*
 * Opens a GGUF file (versions 2 and 3) and memory-maps it read-only. Every
 * read is checked against the file's length and all size arithmetic is
 * checked; a malformed file fails with PXL_ERR_FORMAT and a message naming
 * the key, tensor or byte offset. A tensor whose ggml type has no known
 * block layout here (pxl_ggml_block_elems 0: IQ*, TQ*, unknown numbers) fails
 * the open with PXL_ERR_UNSUPPORTED naming the tensor and the type number.
 * A path that is not a regular file fails with PXL_ERR_IO without blocking
 * (FIFOs, directories). The file must not be truncated while it is open
 * (the mapping would fault). The caller frees the result with pxl_gguf_free.
 */
PXL_API pxl_status pxl_gguf_open(pxl_ctx *ctx, const char *path, pxl_gguf **out);
/* As pxl_gguf_open, over `size` bytes of caller memory, which must stay valid
 * and unchanged until pxl_gguf_free (nothing is copied). */
PXL_API pxl_status pxl_gguf_parse(pxl_ctx *ctx, const void *data, size_t size, pxl_gguf **out);
PXL_API void pxl_gguf_free(pxl_gguf *g);

PXL_API pxl_ctx *pxl_gguf_ctx(const pxl_gguf *g);
PXL_API uint32_t pxl_gguf_version(const pxl_gguf *g);
PXL_API uint32_t pxl_gguf_alignment(const pxl_gguf *g); /* general.alignment, default 32 */
PXL_API uint64_t pxl_gguf_data_offset(const pxl_gguf *g); /* where the tensor data section starts */
PXL_API uint64_t pxl_gguf_file_size(const pxl_gguf *g);

/* ---- metadata ---- */
PXL_API size_t pxl_gguf_n_kv(const pxl_gguf *g);
/* Index of a key, or -1 when the file does not have it. */
PXL_API int64_t pxl_gguf_find_key(const pxl_gguf *g, const char *key);
PXL_API const char *pxl_gguf_key(const pxl_gguf *g, size_t i);
PXL_API pxl_gguf_type pxl_gguf_kv_type(const pxl_gguf *g, size_t i);
/* Scalars by index. Integers of any GGUF integer type (and bool) convert to
 * int64/uint64 when the value fits, floats of either width to double; a
 * mismatch fails with PXL_ERR_FORMAT naming the key and both types. */
PXL_API pxl_status pxl_gguf_kv_int(const pxl_gguf *g, size_t i, int64_t *out);
PXL_API pxl_status pxl_gguf_kv_uint(const pxl_gguf *g, size_t i, uint64_t *out);
PXL_API pxl_status pxl_gguf_kv_float(const pxl_gguf *g, size_t i, double *out);
/* A string value: not NUL-terminated in the file, so (pointer, length). */
PXL_API pxl_status pxl_gguf_kv_string(const pxl_gguf *g, size_t i, const char **s, size_t *len);
/* Arrays: element type and count; element j as a scalar or string. */
PXL_API pxl_status pxl_gguf_kv_array(const pxl_gguf *g, size_t i, pxl_gguf_type *elem_type, uint64_t *n);
PXL_API pxl_status pxl_gguf_arr_int(const pxl_gguf *g, size_t i, uint64_t j, int64_t *out);
PXL_API pxl_status pxl_gguf_arr_float(const pxl_gguf *g, size_t i, uint64_t j, double *out);
PXL_API pxl_status pxl_gguf_arr_string(const pxl_gguf *g, size_t i, uint64_t j, const char **s, size_t *len);
/* The raw bytes of an array of fixed-size elements (little-endian, as in the
 * file; possibly unaligned): for bulk reads of token scores and types. */
PXL_API pxl_status pxl_gguf_arr_data(const pxl_gguf *g, size_t i, const void **data, size_t *elem_size);

/* ---- tensors ---- */
PXL_API size_t pxl_gguf_n_tensors(const pxl_gguf *g);
/* Index of a tensor by name, or -1. */
PXL_API int64_t pxl_gguf_find_tensor(const pxl_gguf *g, const char *name);
/* NULL when i is out of range. */
PXL_API const pxl_gguf_tensor *pxl_gguf_tensor_at(const pxl_gguf *g, size_t i);

/* ---- writing ---- */
/*
 * A GGUF writer (version 3): metadata and tensors are collected (their data
 * copied), then written in one go, atomically (a temporary file renamed over
 * the path), every write checked. Keys must be unique; tensor names unique.
 */
typedef struct pxl_gguf_writer pxl_gguf_writer;
PXL_API pxl_status pxl_gguf_writer_create(pxl_ctx *ctx, pxl_gguf_writer **out);
PXL_API void pxl_gguf_writer_free(pxl_gguf_writer *w);
/* general.alignment (a power of two, default 32); also written as metadata when not 32. */
PXL_API pxl_status pxl_gguf_writer_set_alignment(pxl_gguf_writer *w, uint32_t alignment);
PXL_API pxl_status pxl_gguf_writer_add_uint(pxl_gguf_writer *w, const char *key, pxl_gguf_type type, uint64_t v);
PXL_API pxl_status pxl_gguf_writer_add_int(pxl_gguf_writer *w, const char *key, pxl_gguf_type type, int64_t v);
PXL_API pxl_status pxl_gguf_writer_add_float(pxl_gguf_writer *w, const char *key, pxl_gguf_type type, double v);
PXL_API pxl_status pxl_gguf_writer_add_bool(pxl_gguf_writer *w, const char *key, int v);
PXL_API pxl_status pxl_gguf_writer_add_string(pxl_gguf_writer *w, const char *key, const char *s, size_t len);
/* An array of n fixed-size elements of elem_type (data little-endian, n * size bytes). */
PXL_API pxl_status pxl_gguf_writer_add_array(pxl_gguf_writer *w, const char *key, pxl_gguf_type elem_type,
                                             const void *data, uint64_t n);
/* An array of n strings (lens may be NULL: NUL-terminated strings). */
PXL_API pxl_status pxl_gguf_writer_add_string_array(pxl_gguf_writer *w, const char *key, const char *const *strs,
                                                    const size_t *lens, uint64_t n);
/* A tensor: ne in GGUF order (ne[0] the row length), data of exactly the
 * type's size for that shape. */
PXL_API pxl_status pxl_gguf_writer_add_tensor(pxl_gguf_writer *w, const char *name, uint32_t type, int ndim,
                                              const int64_t *ne, const void *data, size_t bytes);
/* Writes the file (atomically) to path; the writer can be freed after. */
PXL_API pxl_status pxl_gguf_writer_write(pxl_gguf_writer *w, const char *path);
/* Or into memory: *data allocated with pxl_alloc (free with pxl_free). */
PXL_API pxl_status pxl_gguf_writer_to_memory(pxl_gguf_writer *w, uint8_t **data, size_t *size);

#ifdef __cplusplus
}
#endif

#endif
