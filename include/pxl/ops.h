/*
 * pxl/ops.h: the kernel library.
 *
 * Tensors live where the context computes: in GPU buffers on a GPU context,
 * in host memory on a CPU context. Every op has a CPU reference and a WGSL
 * path, and the context's backend picks one; tests/ops_cases.c runs one table
 * of cases on every backend (the CPU against double-precision oracles, the
 * GPU against the CPU).
 *
 * Layout: row-major and contiguous; the last dimension is the row. Shapes
 * have 1 to 4 dimensions. Quantized dtypes store each row as GGUF blocks
 * (32 elements for Q8_0/Q4_0/Q4_1/Q5_0/Q5_1, 256 for the K-quants
 * Q2_K/Q3_K/Q4_K/Q5_K/Q6_K), so their row length must be a multiple of the block
 * (pxl_dtype_block).
 *
 * Views: a tensor may be a view of another tensor's memory: another shape,
 * at a byte offset (pxl_tensor_view, pxl_tensor_reshape, pxl_tensor_slice).
 * A view is contiguous and copies nothing; every op takes views wherever it
 * takes tensors. Ranged writes and row copies are a write or a pxl_copy into
 * a view (e.g. appending one position to a KV cache).
 *
 * The op contract, the same on every backend:
 *  - Every op checks all its arguments before it does anything, and a call
 *    that one backend refuses, every backend refuses, with PXL_ERR_INVALID_ARG
 *    and a message naming the op and the operand. (PXL_ERR_UNSUPPORTED is
 *    kept for limits of a device, such as the size of one binding.)
 *  - NULL for a required tensor or context is PXL_ERR_INVALID_ARG (see the
 *    NULL rule in pxl/core.h); optional operands say "may be NULL".
 *  - An output may not overlap an input, except where an op says "in place":
 *    then the output may be exactly that input (the same memory and size).
 *    Outputs may not overlap each other, and may not be read-only tensors.
 *  - Option structs may be zero-initialised, or passed as NULL: zero means
 *    the default.
 *
 * Execution: on a GPU context, ops are recorded into the context's stream and
 * submitted together (one submit for a whole chain of ops); pxl_tensor_read()
 * and pxl_finish() wait for them, pxl_flush() submits without waiting. An
 * error found by WebGPU after recording (rare: validation) is returned by the
 * next flush/read.
 */
#ifndef PXL_OPS_H
#define PXL_OPS_H

#include "pxl/core.h"
#include "pxl/gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- dtypes and tensors ---------------------------------------------------- */

typedef enum pxl_dtype {
    PXL_F32 = 0,
    PXL_F16,   /* IEEE half, 2 bytes; stored as halves, computed in f32 */
    PXL_I32,
    PXL_Q8_0,  /* GGUF Q8_0: blocks of 32 = f16 scale d + 32 x int8 q; x = d * q (34 bytes) */
    PXL_Q4_0,  /* GGUF Q4_0: blocks of 32 = f16 scale d + 16 bytes of nibbles; element j < 16 is
                  the low nibble of byte j, element j >= 16 the high nibble of byte j-16;
                  x = d * (q - 8) (18 bytes) */
    PXL_Q4_K,  /* GGUF Q4_K: blocks of 256 (144 bytes) = f16 d, f16 dmin, 12 bytes of 6-bit
                  scales sc[8] and mins m[8] (one per 32 elements), 128 bytes of nibbles;
                  element 64p + l (l < 32) is the low nibble of byte 32p + l (sub-block 2p),
                  element 64p + 32 + l its high nibble (sub-block 2p + 1);
                  x = (d * sc[s]) * q - dmin * m[s] */
    PXL_Q6_K,  /* GGUF Q6_K: blocks of 256 (210 bytes) = 128 bytes of low nibbles ql, 64 bytes
                  of high 2-bit pairs qh, 16 int8 scales (one per 16 elements), f16 d;
                  x = (d * scale) * (q - 32), q = 6 bits (ggml's dequantize_row_q6_K order) */
    PXL_Q5_0,  /* GGUF Q5_0: blocks of 32 (22 bytes) = f16 d, 4 bytes qh (the 32 high bits, a
                  little-endian uint32), 16 bytes of nibbles qs; element j < 16 is the low nibble
                  of qs[j], element j >= 16 the high nibble of qs[j-16], each with bit j of qh as
                  its fifth bit: x = d * (q - 16) */
    PXL_Q5_K,  /* GGUF Q5_K: blocks of 256 (176 bytes) = f16 d, f16 dmin, 12 bytes of 6-bit
                  scales and mins (packed as in Q4_K), 32 bytes qh, 128 bytes qs; element
                  64p + l (l < 32) is the low nibble of qs[32p + l] with bit 2p of qh[l] as its
                  fifth bit (sub-block 2p), element 64p + 32 + l the high nibble with bit 2p + 1
                  (sub-block 2p + 1); x = (d * sc[s]) * q - dmin * m[s] */
    PXL_BF16,  /* bfloat16, 2 bytes: the top half of an f32 (f32 -> bf16 rounds to nearest
                  even, NaN stays a quiet NaN; subnormals are kept, as ggml does) */
    PXL_Q4_1,  /* GGUF Q4_1: blocks of 32 (20 bytes) = f16 d, f16 m, 16 bytes of nibbles
                  (ordered as Q4_0); x = d * q + m */
    PXL_Q5_1,  /* GGUF Q5_1: blocks of 32 (24 bytes) = f16 d, f16 m, 4 bytes qh, 16 bytes qs
                  (ordered as Q5_0); x = d * q + m */
    PXL_Q2_K,  /* GGUF Q2_K: blocks of 256 (84 bytes) = 16 bytes of scales (one per 16 elements:
                  low nibble sc, high nibble m), 64 bytes of 2-bit quants qs, f16 d, f16 dmin;
                  element 128h + 32j + l (h < 2, j < 4, l < 32) is bits 2j, 2j + 1 of
                  qs[32h + l], with scale byte 8h + 2j + (l >= 16):
                  x = (d * sc) * q - dmin * m (ggml's dequantize_row_q2_K order) */
    PXL_Q3_K,  /* GGUF Q3_K: blocks of 256 (110 bytes) = 32 bytes hmask (high bits), 64 bytes of
                  low 2-bit quants qs, 12 bytes of 16 packed 6-bit scales, f16 d; element
                  128h + 32j + l is bits 2j, 2j + 1 of qs[32h + l] with bit 4h + j of hmask[l]
                  (clear: minus 4), scale 8h + 2j + (l >= 16) (scale i: low 4 bits from byte
                  i mod 8 (low nibble for i < 8, high for i >= 8), high 2 bits from byte
                  8 + i mod 4, bits 2 (i / 4) ..): x = (d * (scale - 32)) * q, q in -4..3 */
    PXL_DTYPE_COUNT
} pxl_dtype;

#define PXL_MAX_DIMS 4
#define PXL_QK 32   /* elements per Q8_0 / Q4_0 / Q4_1 / Q5_0 / Q5_1 block */
#define PXL_QK_K 256 /* elements per Q2_K / Q3_K / Q4_K / Q5_K / Q6_K block */

PXL_API const char *pxl_dtype_name(pxl_dtype t);
PXL_API int pxl_dtype_is_quantized(pxl_dtype t);
/* Elements per block: 1 for f32/f16/bf16/i32, 32 or 256 for the GGUF formats. */
PXL_API int64_t pxl_dtype_block(pxl_dtype t);
/* Bytes of one row of n elements; 0 if n is not allowed for the dtype
 * (quantized: not a multiple of the block) or the size overflows. */
PXL_API size_t pxl_dtype_row_bytes(pxl_dtype t, int64_t n);

typedef struct pxl_tensor pxl_tensor;

/*
 * A tensor of the given dtype and shape (ndim in 1..4, every dim >= 1),
 * uninitialised, on the context's backend. Fails with PXL_ERR_INVALID_ARG on
 * a bad shape or a size that overflows, PXL_ERR_UNSUPPORTED above the
 * device's buffer size. The caller frees it with pxl_tensor_free.
 */
PXL_API pxl_status pxl_tensor_create(pxl_ctx *ctx, pxl_dtype dtype, int ndim, const int64_t *shape,
                             pxl_tensor **out);
/*
 * A read-only tensor over caller-owned host memory (`bytes` must equal the
 * shape's size), for memory-mapped weights: nothing is copied. CPU contexts
 * only; on a GPU context it fails with PXL_ERR_UNSUPPORTED (create a tensor
 * and pxl_tensor_write it instead). The memory must stay valid and unchanged
 * until the tensor and all its views are freed. Ops refuse it as an output,
 * and pxl_tensor_write refuses it.
 */
PXL_API pxl_status pxl_tensor_wrap(pxl_ctx *ctx, pxl_dtype dtype, int ndim, const int64_t *shape,
                           const void *data, size_t bytes, pxl_tensor **out);
/*
 * A view of base's memory with its dtype, the given shape, starting
 * byte_offset bytes into base; no copy. The view's bytes must lie inside
 * base, and byte_offset must be a multiple of the dtype's block size in bytes
 * (4 for f32/i32, 2 for f16, 34 for Q8_0, ...). A view of a view is a view of
 * the same memory (offsets add up). Writes through a view are seen through
 * base and the reverse. The memory lives until base and every view of it are
 * freed, in any order; each view is freed with pxl_tensor_free.
 */
PXL_API pxl_status pxl_tensor_view(pxl_ctx *ctx, pxl_tensor *base, int ndim, const int64_t *shape,
                           size_t byte_offset, pxl_tensor **out);
/* The view of t with another shape of the same element count (offset 0). */
PXL_API pxl_status pxl_tensor_reshape(pxl_ctx *ctx, pxl_tensor *t, int ndim, const int64_t *shape,
                              pxl_tensor **out);
/* The view t[start : start + count] along the first dimension (count >= 1):
 * rows of a matrix, or positions of a [C, H, D] KV cache. */
PXL_API pxl_status pxl_tensor_slice(pxl_ctx *ctx, pxl_tensor *t, int64_t start, int64_t count,
                            pxl_tensor **out);
/* Frees the tensor or view (pending GPU work that uses it still completes;
 * the memory goes when the last tensor over it goes). NULL: no-op. */
PXL_API void pxl_tensor_free(pxl_tensor *t);

/* Getters. On NULL they return 0 (PXL_F32 for the dtype, NULL for the buffer). */
PXL_API pxl_dtype pxl_tensor_dtype(const pxl_tensor *t);
PXL_API int pxl_tensor_ndim(const pxl_tensor *t);
PXL_API int64_t pxl_tensor_dim(const pxl_tensor *t, int i); /* i < 0 counts from the end; out of range: 1 */
PXL_API int64_t pxl_tensor_nelem(const pxl_tensor *t);
PXL_API size_t pxl_tensor_bytes(const pxl_tensor *t);
/* Byte offset of the tensor in its memory (0 unless it is a view). */
PXL_API size_t pxl_tensor_offset(const pxl_tensor *t);
/* 1 for tensors from pxl_tensor_wrap and views of them. */
PXL_API int pxl_tensor_is_read_only(const pxl_tensor *t);
/* The GPU buffer behind a tensor (NULL on a CPU context); a view shares its
 * base's buffer and starts pxl_tensor_offset() bytes into it. Owned by the
 * tensor's memory. */
PXL_API pxl_buffer *pxl_tensor_buffer(const pxl_tensor *t);

/* Copies `bytes` (must equal pxl_tensor_bytes) from host memory into the
 * tensor, after the ops recorded before it (a view: just its range). */
PXL_API pxl_status pxl_tensor_write(pxl_ctx *ctx, pxl_tensor *t, const void *src, size_t bytes);
/* Copies the tensor to host memory after all pending ops finished. */
PXL_API pxl_status pxl_tensor_read(pxl_ctx *ctx, const pxl_tensor *t, void *dst, size_t bytes);
/*
 * dst = src, as an op (on a GPU: recorded into the stream, in call order).
 * Same dtype and element count; shapes may differ (the bytes are copied in
 * order). With views this is the row copy: e.g. rows of one tensor into rows
 * of another. src and dst may not overlap unless they are the same memory.
 */
PXL_API pxl_status pxl_copy(pxl_ctx *ctx, const pxl_tensor *src, pxl_tensor *dst);

/*
 * Element-wise dtype conversion: dst[i] = src[i] in dst's dtype, for
 * f32 -> f16, f16 -> f32, f32 -> bf16 and bf16 -> f32 (src and dst of one of
 * these dtypes each: a plain copy). The same number of elements (shapes may
 * differ, as in pxl_copy). To f16 and bf16 the rounding is exactly
 * pxl_f32_to_f16 / pxl_f32_to_bf16 on every backend: to nearest even, finite
 * values past the largest half overflow to Inf, f16 subnormals are kept
 * (magnitudes below half the smallest one become signed zero), NaN stays NaN
 * and Inf stays Inf. From f16 and bf16 the conversion is exact. Views at any
 * element offset, including f16 views that start or end inside a 4-byte word
 * (the other half of that word is left as it was). Not in place: src and dst
 * may not overlap.
 */
PXL_API pxl_status pxl_convert(pxl_ctx *ctx, const pxl_tensor *src, pxl_tensor *dst);

/* Submits pending GPU ops without waiting / waits for them. No-ops on CPU. */
PXL_API pxl_status pxl_flush(pxl_ctx *ctx);
PXL_API pxl_status pxl_finish(pxl_ctx *ctx);

/* f16 <-> f32 conversion (round to nearest even; NaN and Inf kept). */
PXL_API uint16_t pxl_f32_to_f16(float f);
PXL_API float pxl_f16_to_f32(uint16_t h);
/* Quantizes n floats (a multiple of the block) into GGUF blocks / dequantizes
 * them; dst_bytes / src_bytes must be pxl_dtype_row_bytes(t, n). Host memory,
 * any backend. Also converts to and from bf16 (t = PXL_BF16, any n). The
 * decoders are exact (bit for bit ggml's dequantize_row_*). The encoders are
 * simple round-to-nearest with one scale per block or sub-block and no
 * search (Q4_K/Q5_K, and Q2_K per 16 elements: per-sub-block range; Q6_K,
 * and Q3_K per 16 elements: per-sub-block magnitude;
 * Q4_0/Q5_0: the value of largest magnitude maps to -8 / -16; Q4_1/Q5_1: the
 * block's [min, max] in 15 / 31 steps), so the K-quants' error is a little
 * above llama.cpp's. */
PXL_API pxl_status pxl_quantize(pxl_ctx *ctx, pxl_dtype t, const float *src, int64_t n, void *dst,
                        size_t dst_bytes);
PXL_API pxl_status pxl_dequantize(pxl_ctx *ctx, pxl_dtype t, const void *src, size_t src_bytes, float *dst,
                          int64_t n);

/* ---- dot product ------------------------------------------------------------- */

/*
 * Dot product of two f32 vectors of any length n (n = 0 gives 0), from host
 * memory. CPU: products are exact in f64 and summed in f64 over fixed 64 Ki
 * blocks: deterministic for any thread count. GPU: f32 partial sums per
 * invocation, tree reduction per workgroup, then a pass over the partials.
 * NaN and Inf propagate as IEEE arithmetic says (Inf * 0 and Inf - Inf are NaN).
 */
PXL_API pxl_status pxl_dot(pxl_ctx *ctx, const float *a, const float *b, size_t n, float *out);
/* The CPU reference, whatever the backend. */
PXL_API pxl_status pxl_dot_cpu(pxl_ctx *ctx, const float *a, const float *b, size_t n, float *out);
/* Records a . b (first n floats of each buffer) into element out_index of `out`;
 * vectors longer than the device's storage binding limit run in chunks. */
PXL_API pxl_status pxl_dot_record(pxl_recorder *rec, pxl_buffer *a, pxl_buffer *b, size_t n,
                          pxl_buffer *out, size_t out_index);

/* ---- matrix products ------------------------------------------------------------ */

/* Zero-initialised (or NULL) means the defaults. */
typedef struct pxl_matmul_options {
    int trans_a;  /* A is stored [K, M] */
    int trans_b;  /* B is stored [N, K] (the layout of GGUF weights) */
    float alpha;  /* 0 means the default, 1 */
    float beta;   /* default 0: C is not read (so NaN in C does not leak) */
    /* RMSNorm fused in front of the product (NULL: none): A's rows are
     * replaced by rmsnorm(A) * norm as pxl_rmsnorm defines it (x / sqrt(mean(x^2)
     * + norm_eps) * norm, per row of A); norm: f32 with K elements, not
     * overlapping C; norm_eps finite and >= 0; not with trans_a. */
    const pxl_tensor *norm;
    float norm_eps;
    /* 1: a quantized B multiplies A rounded to 8 bits per 32 values (K a
     * multiple of 32; with norm, the normalised rows): scale d = max|a| / 127
     * kept as an f16, values round(a / d), as llama.cpp does; the result has
     * the error of that rounding. The CPU multiplies in integers for Q8_0,
     * Q4_0 and Q5_0 (several times faster), and for Q4_K, Q5_K and Q6_K
     * with M = 1 where it has AVX2; it takes the rounded values through
     * its exact path for the other formats and shapes. A GPU rounds:
     *   - with M = 1 (8-bit matrix-vector kernels): Q4_K and Q5_K (B's
     *     offset on 16 bytes), and Q6_K with more than 1024 rows of B,
     *     where the workgroup memory holds a row of A; Q8_0, Q4_0 and Q5_0
     *     with K from 512 to 16384 (32768 where the device allows
     *     workgroups of 512 invocations);
     *   - with M > 8 (tiled integer products): Q4_K, Q5_K, Q6_K, Q8_0, Q4_0
     *     and Q5_0 (Q5_K where B's offsets are on 16 bytes, Q8_0, Q4_0 and
     *     Q5_0 where K is a multiple of 64);
     * and takes A as given elsewhere.
     * 2: the same where the backend multiplies the rounded values in
     * integers, and A as given elsewhere (so the rounding is taken only
     * where it buys speed): on the CPU, Q8_0, Q4_0 and Q5_0, and Q4_K, Q5_K
     * and Q6_K with M = 1 where it has AVX2; on a GPU, the same as 1 (its
     * kernels round only where they multiply in integers).
     * 0: A as given. (The LLM runtime sets 1 on a GPU unless the context's
     * tuning option gpu_q8=0 is given, and 2 on the CPU for a one-token
     * pass's products unless cpu_q8=0 is given.) */
    int a_q8;
    /* A bias row added to every row of C last (NULL: none): f32 with N
     * elements (any shape; a view is fine), not overlapping C:
     * C = alpha * op(A) . op(B) + beta * C + bias, the same floats as the
     * product followed by pxl_add of the row. On a GPU the matrix-vector
     * products with trans_b add it as they store C, so it costs no dispatch
     * of its own: Q8_0, Q4_0 and Q5_0 weights with M <= 8 (qmv_xs, qmv);
     * Q4_K, Q5_K and Q6_K with M = 1 where B's rows sit on 16 bytes (Q6_K:
     * always; kmv4, kmv4q, kmv6); f16 and bf16 with M = 1 where K and B's
     * offset are multiples of 8 (hmv). Elsewhere pxl_matmul adds it after
     * the product. */
    const pxl_tensor *bias;
} pxl_matmul_options;

/*
 * C = alpha * op(A) . op(B) + beta * C, for any M, N, K >= 1.
 * A: [M, K] (or [K, M] with trans_a), f32.
 * B: [K, N] (or [N, K] with trans_b), f32, f16 or bf16; or a GGUF block
 *    format (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) with trans_b
 *    (weights [N, K], K a multiple of the block), dequantized in the shader.
 * C: [M, N], f32.
 * Batched: a leading dimension on A, B and C ([batch, rows, cols]); A or B may
 * have batch 1, which is broadcast. M = 1 (a matrix-vector product) uses a
 * dedicated kernel.
 */
PXL_API pxl_status pxl_matmul(pxl_ctx *ctx, const pxl_tensor *a, const pxl_tensor *b, pxl_tensor *c,
                      const pxl_matmul_options *opts);
/*
 * The product with norm set, C = alpha * (rmsnorm(A) * norm) . op(B) + beta * C,
 * is one dispatch on a GPU for M <= 8 with trans_b (the matrix-vector kernels
 * normalise A as they load it; f32/f16/bf16 B: M = 1); elsewhere pxl_rmsnorm
 * into a temporary and then the product, so the CPU gives exactly the floats
 * of pxl_rmsnorm followed by pxl_matmul. With beta = 1 and C the residual
 * stream this is x = x + rmsnorm(h) . W^T (C may not overlap A).
 */

/*
 * out = silu(A' . Wg^T) * (A' . Wu^T), the gate, up and SwiGLU of a feed-
 * forward layer, with A' = A, or rmsnorm(A) * opts->norm when opts->norm is
 * set. A: f32 [M, K] (or [batch, M, K]); w_gate, w_up: [F, K] of one dtype
 * (f32, f16, bf16 or a GGUF block format) and shape; out: f32 [M, F] (or
 * [batch, M, F]), not overlapping any input. opts: trans_b must be set (the
 * weights' layout), trans_a must not; alpha 0 or 1 and beta 0; norm and
 * norm_eps as in pxl_matmul. silu(g) = g / (1 + exp(-g)), as pxl_swiglu.
 * The CPU computes the two products and then pxl_swiglu's formula. A GPU
 * computes both rows of each output in one dispatch when w_gate and w_up lie
 * in one buffer (views of one tensor, e.g. [2F, K] holding both) and M is
 * small (M = 1 for f32/f16/bf16, M <= 4 for GGUF blocks); otherwise two
 * products into temporaries and pxl_swiglu.
 */
PXL_API pxl_status pxl_matmul_swiglu(pxl_ctx *ctx, const pxl_tensor *a, const pxl_tensor *w_gate,
                                     const pxl_tensor *w_up, pxl_tensor *out, const pxl_matmul_options *opts);
/*
 * Several products of one A, in one call: for i < n,
 *   c[i] = alpha * op(A) . op(b[i]) + beta * c[i] (+ bias[i])
 * with opts for every product (NULL: the defaults; its norm applies to A in
 * each). 1 <= n <= PXL_MATMUL_MULTI_MAX; the b[i] share A's K and may differ
 * in dtype and N. bias: NULL (no product has one), or n entries, each NULL
 * or product i's bias row as pxl_matmul_options.bias takes it (opts->bias
 * itself must be NULL). Every product's arguments are checked as pxl_matmul
 * checks them before any runs; also no c[i] may overlap another, any b[j]
 * or any bias[j]. The CPU runs the products in turn: exactly pxl_matmul's
 * floats. A GPU runs two in one dispatch where one kernel takes both: one
 * row of A, trans_b, the c[i] views of one buffer and, where both products
 * have a bias, the bias[i] views of one buffer too (a decoded token's Q and
 * K weights with V weights of another type), and b[0] and b[1]
 *   - a Q4_K or Q5_K and a Q6_K matrix, in either order (Q4_K_M files), or
 *   - two of Q8_0, Q4_0 and Q5_0 with K from 512 to 16384 (32768 where
 *     workgroups of 512 invocations are allowed): Qwen2.5's Q4_K_M files,
 *     Q5_0 and Q8_0,
 * each product in the row groups pxl_matmul gives it alone: the same floats,
 * except for a Q4_K, Q5_K or Q6_K product of over a thousand workgroups'
 * rows, which pxl_matmul alone would give narrower groups. With a_q8 and
 * more than 8 rows of A (a prompt) and no bias, where every b[i] is
 * quantized and each product alone would take the tiled kernels on 8-bit
 * A, a GPU normalizes (with a norm) and rounds A once for all of them
 * instead of once a product; and where the b[i] of two or three products
 * in a row are rows of one matrix in turn (views of one 2-D tensor of
 * Q4_K, Q5_K, Q8_0, Q4_0 or Q5_0, outputs in buffers of their own, each
 * but the last output a whole number of tiles wide) with K <= 1024, they
 * are one product over those rows whose columns go to their outputs: the
 * same floats. Everything else runs the products in turn;
 * a norm that each product would apply as a pxl_rmsnorm of its own (the
 * CPU; a GPU but for its one-row kernels, which normalize A as they load
 * it) is made once for all of them: the same floats.
 */
#define PXL_MATMUL_MULTI_MAX 4
PXL_API pxl_status pxl_matmul_multi(pxl_ctx *ctx, const pxl_tensor *a, size_t n, const pxl_tensor *const *b,
                                    pxl_tensor *const *c, const pxl_tensor *const *bias,
                                    const pxl_matmul_options *opts);

/* ---- row-wise ops (rows = the last dimension) ------------------------------------------ */

/*
 * y = softmax(scale * x) over each row, computed stably (max subtracted).
 * causal: x is viewed as [..., R, L]; in row r, columns j > r + causal_offset
 * are masked (give 0). A row whose entries are all masked or -Inf gives zeros.
 * In place: y may be x.
 */
PXL_API pxl_status pxl_softmax(pxl_ctx *ctx, const pxl_tensor *x, pxl_tensor *y, float scale, int causal,
                       int64_t causal_offset);
/* y = x / sqrt(mean(x^2) + eps) * w; w: [L] f32. In place: y may be x. */
PXL_API pxl_status pxl_rmsnorm(pxl_ctx *ctx, const pxl_tensor *x, const pxl_tensor *w, pxl_tensor *y,
                       float eps);
/* y = (x - mean) / sqrt(var + eps) * w + b; w, b: [L] f32 (b may be NULL). In place: y may be x. */
PXL_API pxl_status pxl_layernorm(pxl_ctx *ctx, const pxl_tensor *x, const pxl_tensor *w,
                         const pxl_tensor *b, pxl_tensor *y, float eps);
/* idx[r] = the first index of the largest value of row r (NaN counts as largest); idx: I32 [rows]. */
PXL_API pxl_status pxl_argmax(pxl_ctx *ctx, const pxl_tensor *x, pxl_tensor *idx);
/* Options of pxl_argmax_ext; zero-initialised (or NULL): pxl_argmax's order. */
typedef struct pxl_argmax_options {
    /* 1: NaN ranks below every value, -Inf included (pxl_sampler's greedy
     * choice: a NaN logit never wins; a row of NaN gives 0) */
    int nan_lowest;
} pxl_argmax_options;
PXL_API pxl_status pxl_argmax_ext(pxl_ctx *ctx, const pxl_tensor *x, pxl_tensor *idx, const pxl_argmax_options *o);
/* The k largest values of each row in descending order, ties by lower index;
 * vals: f32 [rows, k], idx: I32 [rows, k]; 1 <= k <= min(L, 256). */
PXL_API pxl_status pxl_topk(pxl_ctx *ctx, const pxl_tensor *x, int k, pxl_tensor *vals, pxl_tensor *idx);

/* ---- element-wise ops --------------------------------------------------------------- */

/* Element-wise ops work in place: y may be any of their inputs. All f32. */
typedef enum pxl_gelu_form { PXL_GELU_TANH = 0, PXL_GELU_ERF = 1 } pxl_gelu_form;
PXL_API pxl_status pxl_gelu(pxl_ctx *ctx, const pxl_tensor *x, pxl_tensor *y, pxl_gelu_form form);
PXL_API pxl_status pxl_silu(pxl_ctx *ctx, const pxl_tensor *x, pxl_tensor *y);
/* y = silu(gate) * up, all the same shape. */
PXL_API pxl_status pxl_swiglu(pxl_ctx *ctx, const pxl_tensor *gate, const pxl_tensor *up, pxl_tensor *y);
/* y = a + b, y = a * b: b has a's shape, or is one row [L] broadcast over every row. */
PXL_API pxl_status pxl_add(pxl_ctx *ctx, const pxl_tensor *a, const pxl_tensor *b, pxl_tensor *y);
PXL_API pxl_status pxl_mul(pxl_ctx *ctx, const pxl_tensor *a, const pxl_tensor *b, pxl_tensor *y);
/* y = s * x */
PXL_API pxl_status pxl_scale(pxl_ctx *ctx, const pxl_tensor *x, float s, pxl_tensor *y);

/* ---- lookups and positions ---------------------------------------------------------- */

/* out[i, :] = table[ids[i], :]; table: [V, D] f32/f16/bf16 or any GGUF block format above; ids: I32 [n];
 * out: f32 [n, D].
 * An id outside [0, V) gives a row of NaN (on every backend: the GPU cannot refuse data it has not read). */
PXL_API pxl_status pxl_embedding(pxl_ctx *ctx, const pxl_tensor *table, const pxl_tensor *ids,
                         pxl_tensor *out);

typedef enum pxl_rope_layout {
    PXL_ROPE_ADJACENT = 0, /* pairs (x[2i], x[2i+1]): llama.cpp's default for llama */
    PXL_ROPE_HALVES = 1    /* pairs (x[i], x[i + d/2]): GPT-NeoX, Hugging Face */
} pxl_rope_layout;
/*
 * Rotary position embedding. x, y: [T, H, D] f32 with D even; row t is at
 * position pos_offset + t; pair i turns by (pos * base^(-2i/D)) radians.
 * y may be x (in place).
 */
PXL_API pxl_status pxl_rope(pxl_ctx *ctx, const pxl_tensor *x, pxl_tensor *y, int64_t pos_offset,
                    float base, pxl_rope_layout layout);

/* Options of pxl_rope_ext; all zero (or NULL options) = the defaults. */
typedef struct pxl_rope_options {
    float base;                      /* 0 -> 10000 */
    pxl_rope_layout layout;          /* PXL_ROPE_ADJACENT (0) by default */
    float freq_scale;                /* 0 -> 1: positions times freq_scale (linear scaling: 1/factor) */
    const pxl_tensor *freq_factors;  /* NULL or f32 [D/2]: theta_i divided by freq_factors[i] (llama3) */
} pxl_rope_options;
/*
 * Rotary position embedding with scaling: as pxl_rope, but pair i turns by
 * pos * theta'_i radians with
 *   theta'_i = (base^(-2i/D) * freq_scale) / freq_factors[i]
 * (no division without factors), each step rounded to f32 on both backends.
 * freq_scale must be finite and > 0. A theta'_i that is not in
 * [2^-126, 2^40) (an underflow, or a factor that is not a positive, finite,
 * normal f32) counts as 0: that pair is copied unturned. freq_factors may be
 * a view (any shape of D/2 elements); y must not overlap it. y may be x (in
 * place). Options NULL: the defaults.
 */
PXL_API pxl_status pxl_rope_ext(pxl_ctx *ctx, const pxl_tensor *x, pxl_tensor *y, int64_t pos_offset,
                        const pxl_rope_options *opts);
/*
 * RoPE of a pass's queries and keys and the KV-cache write, in one call (one
 * dispatch on a GPU, for D <= 1024):
 *   q      f32 [T, Hq, D], turned in place;
 *   k      f32 [T, Hkv, D], turned into k_out, f32 or f16 [T, Hkv, D];
 *   v      f32 with k's element count, copied into v_out (v's shape, f32 or
 *          f16).
 * Rows are at positions pos_offset .. pos_offset + T - 1. The results are
 * bit for bit those of pxl_rope_ext(q, q), pxl_rope_ext(k) then pxl_convert
 * (or pxl_copy) to k_out, and pxl_convert (or pxl_copy) of v, on the same
 * backend; opts as pxl_rope_ext's (NULL: the defaults). q, k and v may be
 * views of one tensor (the fused QKV product's output: the GPU binds it
 * once), but q may overlap neither k nor v; k and v may overlap each other.
 * k_out and v_out may overlap no other operand (they may be views of one
 * tensor, apart); freq_factors overlaps no output. On a GPU two outputs
 * bound closer than the storage offset alignment are PXL_ERR_UNSUPPORTED,
 * as for every op.
 */
PXL_API pxl_status pxl_rope_kv(pxl_ctx *ctx, pxl_tensor *q, const pxl_tensor *k, const pxl_tensor *v,
                               pxl_tensor *k_out, pxl_tensor *v_out, int64_t pos_offset,
                               const pxl_rope_options *opts);

/* ---- attention ---------------------------------------------------------------------- */

/*
 * Causal multi-head attention over a KV cache, with grouped-query heads.
 * q: [T, Hq, D]; k, v: [C, Hkv, D] (a cache of capacity C, of which the first
 * kv_len rows are valid); y: [T, Hq, D]. q and y are f32; k and v are both
 * f32 or both f16 (an f16 KV cache: its values are read exactly, then the
 * arithmetic is the f32 path's). Hkv must divide Hq; query
 * head h uses KV head h / (Hq / Hkv). Query t sits at position
 * kv_len - T + t and sees keys 0 .. kv_len - T + t. T = 1 is decode, T > 1
 * prefill. The softmax is online (flash-style), so kv_len is bounded only by
 * memory. scale is usually 1/sqrt(D).
 */
PXL_API pxl_status pxl_attention(pxl_ctx *ctx, const pxl_tensor *q, const pxl_tensor *k,
                         const pxl_tensor *v, pxl_tensor *y, int64_t kv_len, float scale);

/*
 * One decoding step's attention over a KV cache: pxl_rope_kv of the pass's
 * rows into rows pos_offset .. pos_offset + T - 1 of the caches, then
 * pxl_attention of the turned q over the caches' first pos_offset + T rows:
 *   q        f32 [T, Hq, D], turned in place (as pxl_rope_kv);
 *   k        f32 [T, Hkv, D]; v f32 with k's element count;
 *   cache_k, cache_v   both f32 or both f16, [C, Hkv, D];
 *   y        f32 [T, Hq, D].
 * On a GPU, for one token (T = 1) whose q, k and v are views of one buffer
 * that no output shares, with at most 1024 keys, D <= 256 and the caches'
 * rows on 16-byte words (D a multiple of 4 for f32, 8 for f16, the caches
 * at 16-byte offsets), it is one dispatch; else the two ops. The cache rows and q are then bit for bit
 * pxl_rope_kv's, and y is attention's arithmetic in another order (within
 * pxl_attention's rounding). opts as pxl_rope_ext's (NULL: the defaults);
 * the operands' overlap rules are those of both ops, and y overlaps none of
 * the inputs.
 */
PXL_API pxl_status pxl_rope_kv_attention(pxl_ctx *ctx, pxl_tensor *q, const pxl_tensor *k, const pxl_tensor *v,
                                         pxl_tensor *cache_k, pxl_tensor *cache_v, int64_t pos_offset,
                                         const pxl_rope_options *opts, pxl_tensor *y, float scale);

#ifdef __cplusplus
}
#endif
#endif
