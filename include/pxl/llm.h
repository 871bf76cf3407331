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
    PXL_GGML_IQ2_XXS = 16, /* IQ*, TQ*, MXFP4: sized by the reader, no kernel in pxl */
    PXL_GGML_IQ2_XS = 17,
    PXL_GGML_IQ3_XXS = 18,
    PXL_GGML_IQ1_S = 19,
    PXL_GGML_IQ4_NL = 20,
    PXL_GGML_IQ3_S = 21,
    PXL_GGML_IQ2_S = 22,
    PXL_GGML_IQ4_XS = 23,
    PXL_GGML_I8 = 24,
    PXL_GGML_I16 = 25,
    PXL_GGML_I32 = 26,
    PXL_GGML_I64 = 27,
    PXL_GGML_F64 = 28,
    PXL_GGML_IQ1_M = 29,
    PXL_GGML_BF16 = 30,
    PXL_GGML_TQ1_0 = 34,
    PXL_GGML_TQ2_0 = 35,
    PXL_GGML_MXFP4 = 39
} pxl_ggml_type;

/* Static name of a ggml type number ("Q4_K", "BF16", "IQ2_XS"; numbers ggml
 * does not define give "unknown"). */
PXL_API const char *pxl_ggml_type_name(uint32_t type);
/* Block size (elements) and bytes per block of a ggml type; 0 for numbers
 * without a known layout (removed or unknown: their tensors are refused at
 * open). A known layout says nothing of whether pxl can run the type. */
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
 * the key, tensor or byte offset. Every tensor whose ggml type has a known
 * block layout is sized and bounds-checked, including types pxl has no
 * kernel for (IQ*, TQ*, MXFP4): such files open, so their metadata and
 * tokenizer can be read, and pxl_llm_load refuses the tensors it cannot run,
 * naming the tensor and its type. A tensor whose type number has no known
 * layout (pxl_ggml_block_elems 0: removed or unknown numbers) fails the open
 * with PXL_ERR_UNSUPPORTED naming the tensor and the type number.
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
/* Key i's name and value type, i < pxl_gguf_n_kv (out of range: NULL and
 * PXL_GGUF_UINT8, which is also a real type: check the index first). */
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

/* ==== Tokenizers ======================================================================== */
/*
 * The two tokenizers GGUF files describe, as llama.cpp runs them:
 *  - "llama": SentencePiece style (spaces escaped to U+2581, an optional
 *    leading space, bigram merges by vocabulary score, byte fallback <0xNN>);
 *  - "gpt2": byte-level BPE (a pre-tokenizer regex chosen by
 *    tokenizer.ggml.pre, bytes mapped to printable code points, merges by
 *    rank), with PCRE2 for the regexes.
 * Token ids are int32_t; -1 means "none". A tokenizer is immutable after
 * creation; its context must not be used by two threads at once.
 */
typedef struct pxl_tokenizer pxl_tokenizer;

typedef enum pxl_tokenizer_model {
    PXL_TOKENIZER_SPM = 1, /* tokenizer.ggml.model "llama" */
    PXL_TOKENIZER_BPE = 2  /* tokenizer.ggml.model "gpt2" */
} pxl_tokenizer_model;

/* Token types, numbered as tokenizer.ggml.token_type numbers them. */
typedef enum pxl_token_type {
    PXL_TOKEN_UNDEFINED = 0,
    PXL_TOKEN_NORMAL = 1,
    PXL_TOKEN_UNKNOWN = 2,
    PXL_TOKEN_CONTROL = 3,
    PXL_TOKEN_USER_DEFINED = 4,
    PXL_TOKEN_UNUSED = 5,
    PXL_TOKEN_BYTE = 6
} pxl_token_type;

/* A special-token id field of pxl_tokenizer_vocab left to the model's default. */
#define PXL_TOKEN_ID_DEFAULT (-2)

/*
 * A vocabulary in memory (what the tokenizer.ggml.* keys hold). Nothing is
 * kept: pxl_tokenizer_create copies what it needs. This is data, not an
 * options struct: zero is not the default (model 0 is refused, id 0 is a
 * real token), so start from pxl_tokenizer_vocab_default() (every "default"
 * field set).
 */
typedef struct pxl_tokenizer_vocab {
    pxl_tokenizer_model model;
    const char *pre;               /* BPE pre-tokenizer ("llama-bpe", "qwen2", "gpt-2", "default", ...); NULL: "default" */
    size_t n_tokens;
    const char *const *tokens;     /* n_tokens texts */
    const size_t *token_lens;      /* NULL: the texts are NUL-terminated */
    const float *scores;           /* NULL: all 0 */
    const int32_t *types;          /* pxl_token_type values; NULL: all NORMAL */
    size_t n_merges;               /* BPE: "left right" strings, rank = index */
    const char *const *merges;
    const size_t *merge_lens;      /* NULL: NUL-terminated */
    /* ids: PXL_TOKEN_ID_DEFAULT (llama.cpp's default for the model), -1 none, or an id < n_tokens */
    int32_t bos_id, eos_id, unk_id, pad_id, eot_id;
    /* -1: the model's default (SPM: add BOS, space prefix; BPE: neither, but llama-bpe adds BOS); 0 or 1 */
    int add_bos, add_eos, add_space_prefix;
} pxl_tokenizer_vocab;

PXL_API pxl_tokenizer_vocab pxl_tokenizer_vocab_default(void);
/*
 * Builds a tokenizer from a vocabulary. Bad data fails with PXL_ERR_FORMAT
 * and a message naming it (an empty vocabulary, a special id out of range, a
 * merge without a space); an unknown pre-tokenizer with PXL_ERR_UNSUPPORTED.
 */
PXL_API pxl_status pxl_tokenizer_create(pxl_ctx *ctx, const pxl_tokenizer_vocab *vocab, pxl_tokenizer **out);
/*
 * Reads tokenizer.ggml.{model,pre,tokens,scores,token_type,merges,
 * bos_token_id,eos_token_id,eot_token_id,unknown_token_id,padding_token_id,
 * add_bos_token,add_eos_token,add_space_prefix} with llama.cpp's defaults for
 * absent keys. A model other than "llama" or "gpt2" fails with
 * PXL_ERR_UNSUPPORTED naming it; a malformed key with PXL_ERR_FORMAT naming it.
 */
PXL_API pxl_status pxl_tokenizer_from_gguf(const pxl_gguf *g, pxl_tokenizer **out);
PXL_API void pxl_tokenizer_free(pxl_tokenizer *tok);

PXL_API pxl_tokenizer_model pxl_tokenizer_model_type(const pxl_tokenizer *tok);
PXL_API size_t pxl_tokenizer_n_vocab(const pxl_tokenizer *tok);
PXL_API int32_t pxl_tokenizer_bos(const pxl_tokenizer *tok); /* -1: none */
PXL_API int32_t pxl_tokenizer_eos(const pxl_tokenizer *tok);
PXL_API int32_t pxl_tokenizer_eot(const pxl_tokenizer *tok); /* the key, else found by text ("<|eot_id|>", "<|im_end|>", ...) */
PXL_API int32_t pxl_tokenizer_unk(const pxl_tokenizer *tok);
PXL_API int32_t pxl_tokenizer_pad(const pxl_tokenizer *tok);
PXL_API int pxl_tokenizer_add_bos(const pxl_tokenizer *tok); /* what add_special DEFAULT does */
PXL_API int pxl_tokenizer_add_eos(const pxl_tokenizer *tok);
/* The stored text of a token (not NUL-terminated; NULL and 0 when id is out of range). */
PXL_API const char *pxl_tokenizer_token_text(const pxl_tokenizer *tok, int32_t id, size_t *len);
PXL_API pxl_token_type pxl_tokenizer_token_type(const pxl_tokenizer *tok, int32_t id); /* UNDEFINED when out of range */
PXL_API int pxl_tokenizer_is_control(const pxl_tokenizer *tok, int32_t id);
/* End of generation: eos, eot, or <|eom_id|>. */
PXL_API int pxl_tokenizer_is_eog(const pxl_tokenizer *tok, int32_t id);
/* Looks a token up by its exact stored text; -1 when absent. */
PXL_API int32_t pxl_tokenizer_find(const pxl_tokenizer *tok, const char *text, size_t len);

typedef enum pxl_add_special {
    PXL_ADD_SPECIAL_DEFAULT = 0, /* BOS/EOS as the metadata says */
    PXL_ADD_SPECIAL_OFF = 1,
    PXL_ADD_SPECIAL_ON = 2       /* BOS and EOS (each only when the model has one) */
} pxl_add_special;

typedef struct pxl_tokenize_options {
    pxl_add_special add_special;
    /* 0: control and unknown token texts in the input are plain text; 1: they
     * become their ids. User-defined tokens are always matched, longest first. */
    int parse_special;
} pxl_tokenize_options;

/*
 * Tokenizes len bytes of text (any bytes; invalid UTF-8 is tokenized as
 * llama.cpp does). *ids is allocated with pxl_alloc (free with pxl_free on
 * the tokenizer's context; NULL when *n is 0). opt may be NULL (defaults).
 */
PXL_API pxl_status pxl_tokenize(pxl_tokenizer *tok, const char *text, size_t len, const pxl_tokenize_options *opt,
                                int32_t **ids, size_t *n);

/*
 * The bytes one token stands for (SPM: U+2581 as a space, <0xNN> as that
 * byte; BPE: the byte-to-unicode mapping reversed; control and unknown
 * tokens: their text when special is 1, else nothing). Writes at most cap
 * bytes and returns the full length (as snprintf; no NUL is added).
 */
PXL_API size_t pxl_tokenizer_piece(const pxl_tokenizer *tok, int32_t id, int special, char *buf, size_t cap);

typedef struct pxl_detokenize_options {
    int special;           /* 1: control/unknown tokens output their text */
    int keep_space_prefix; /* 1: keep the space an SPM model adds before the first word
                            * (0: the first text piece loses one leading space, so that
                            * decoding the tokens of a text gives the text back) */
} pxl_detokenize_options;

/*
 * A streaming detokenizer: push ids one at a time and get back the bytes
 * that are complete UTF-8. An incomplete sequence at the end is held until
 * it completes; an invalid one becomes U+FFFD as soon as it is known to be
 * invalid, an incomplete one at flush.
 */
typedef struct pxl_detokenizer pxl_detokenizer;
PXL_API pxl_status pxl_detokenizer_create(pxl_tokenizer *tok, const pxl_detokenize_options *opt, pxl_detokenizer **out);
PXL_API void pxl_detokenizer_free(pxl_detokenizer *d);
/* *text (not NUL-terminated) stays valid until the next call on d. An id out
 * of range fails with PXL_ERR_INVALID_ARG. */
PXL_API pxl_status pxl_detokenizer_push(pxl_detokenizer *d, int32_t id, const char **text, size_t *len);
PXL_API pxl_status pxl_detokenizer_flush(pxl_detokenizer *d, const char **text, size_t *len);
/* Whole sequences: *text allocated with pxl_alloc and NUL-terminated (len excludes the NUL). */
PXL_API pxl_status pxl_detokenize(pxl_tokenizer *tok, const int32_t *ids, size_t n, const pxl_detokenize_options *opt,
                                  char **text, size_t *len);
/* ==== Models ============================================================================ */

/*
 * A llama-family model loaded from a GGUF file onto the context's backend.
 * Architectures: "llama" (Llama 2/3, TinyLlama, Mistral, SmolLM, llama2.c
 * exports) and "qwen2" (llama with Q/K/V biases). Every hyperparameter comes
 * from the metadata; any other architecture, a missing tensor, a shape that
 * does not match the metadata, or a weight type pxl has no kernel for fails
 * at load with a message naming it.
 *
 * CPU: the weights are used in place in the file's mapping (the pxl_gguf must
 * outlive the model). GPU: every weight is uploaded once in its GGUF type;
 * the KV cache and activations live on the GPU and only logits come back.
 */
typedef struct pxl_llm pxl_llm;

/* Zero-initialised (or NULL) means the defaults. */
typedef struct pxl_llm_options {
    uint32_t n_ctx;   /* KV cache positions; 0: the trained context, at most 4096 */
    uint32_t n_batch; /* most tokens per forward pass (prefill chunk); 0: 512 */
    /* the KV cache's dtype: PXL_F32 (0, the default) or PXL_F16 (half the
     * memory; llama.cpp's default); others fail with PXL_ERR_INVALID_ARG */
    pxl_dtype kv_type;
    /* GPU: the bytes the model may take on the device; 0: 90% of the
     * adapter's device-local memory where it reports it (pxl_gpu_info's
     * device_memory_bytes), else no check. A model whose estimate
     * (pxl_llm_info.gpu_bytes_estimate) is larger fails to load with
     * PXL_ERR_UNSUPPORTED before anything is uploaded. */
    uint64_t gpu_memory_limit;
} pxl_llm_options;

typedef struct pxl_llm_info {
    const char *arch; /* "llama" or "qwen2" */
    const char *name; /* general.name, or "" */
    int64_t n_vocab, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff;
    int64_t n_ctx_train; /* {arch}.context_length */
    int64_t n_ctx;       /* the KV cache's capacity */
    int64_t n_batch;
    float rope_base, rope_freq_scale, norm_eps;
    int rope_halves;     /* 1: pairs (i, i + d/2) (qwen2); 0: adjacent pairs (llama) */
    int tied_output;     /* 1: no output.weight, the token embedding is used */
    uint64_t weight_bytes;   /* the weights as stored */
    uint64_t kv_cache_bytes; /* the KV cache (in kv_type) */
    pxl_dtype kv_type;       /* the KV cache's dtype: PXL_F32 or PXL_F16 */
    /* GPU: what the model needs on the device, estimated before loading
     * (weights as stored + KV cache + activations and logits for n_batch
     * tokens); 0 on a CPU context */
    uint64_t gpu_bytes_estimate;
} pxl_llm_info;

/* Loads a model; on a GPU context uploads its weights (with a progress bar on
 * stderr when it is a terminal). Fails with PXL_ERR_UNSUPPORTED for an
 * architecture or weight type that pxl cannot run, or (GPU) a model whose
 * estimated size exceeds the device's memory (see gpu_memory_limit),
 * PXL_ERR_FORMAT for missing tensors or mismatched shapes,
 * PXL_ERR_INVALID_ARG for an n_ctx beyond the trained context. The caller frees it with pxl_llm_free; g must
 * outlive it. */
PXL_API pxl_status pxl_llm_load(pxl_ctx *ctx, const pxl_gguf *g, const pxl_llm_options *opts, pxl_llm **out);
PXL_API void pxl_llm_free(pxl_llm *m);
PXL_API const pxl_llm_info *pxl_llm_get_info(const pxl_llm *m);

/*
 * Runs n tokens (1 <= n, n_past + n <= n_ctx) at positions n_past .. n_past +
 * n - 1, appending their keys and values to the cache, in chunks of at most
 * n_batch. logits: NULL, or room for n_vocab floats (the last token's
 * logits), or with all_logits = 1 room for n * n_vocab floats (every token's,
 * row by row, for perplexity). A prompt that does not fit fails with
 * PXL_ERR_INVALID_ARG and changes nothing.
 */
PXL_API pxl_status pxl_llm_eval(pxl_llm *m, const int32_t *ids, size_t n, float *logits, int all_logits);
/*
 * pxl_llm_eval of n tokens, with *logits pointed at the last token's n_vocab
 * logits where the model holds them instead of copied out: on a GPU the
 * mapped read-back memory the pass copied them into (no host copy), else
 * the model's own host array. Read-only, valid until the next call on m
 * (pxl_llm_eval, pxl_llm_eval_view, pxl_llm_generate_greedy,
 * pxl_llm_rewind, pxl_llm_free). On failure *logits is NULL.
 */
PXL_API pxl_status pxl_llm_eval_view(pxl_llm *m, const int32_t *ids, size_t n, const float **logits);
/* Options of pxl_llm_generate_greedy; zero-initialised (or NULL): no callback. */
typedef struct pxl_llm_greedy_options {
    /* called with each pick in order as soon as the host has it (on a GPU
     * while the next token's pass runs); a nonzero return stops the
     * generation after that pick, which is not evaluated (an end-of-
     * generation token) */
    int (*on_token)(void *user, int32_t id);
    void *user;
} pxl_llm_greedy_options;
/*
 * Greedy generation: evaluates `first` at n_past, then each token it picks
 * but the last, picking every next token as pxl_sampler's greedy choice
 * would from pxl_llm_eval's logits with no penalties (the first largest
 * logit; a NaN never wins). Writes up to n picks to out (may be NULL) and
 * their count to *n_out; stops early where on_token says so. n_past grows
 * by *n_out. Needs 1 <= n and n_past + n <= n_ctx.
 *
 * On a GPU the picks are made on the device, and each token's pass is
 * submitted before the previous pick is read back, so the GPU never waits
 * for the host between tokens (with tuning llm_ahead=0: token by token
 * through pxl_llm_eval). A stop is seen one pass late; that pass runs but
 * its cache row is outside n_past. On failure *n_out counts the picks made
 * (each given to on_token and in out), and n_past grows by them.
 */
PXL_API pxl_status pxl_llm_generate_greedy(pxl_llm *m, int32_t first, size_t n, const pxl_llm_greedy_options *opts,
                                           int32_t *out, size_t *n_out);
/* Positions in the KV cache so far. */
PXL_API int64_t pxl_llm_n_past(const pxl_llm *m);
/* Forgets cached positions from n_past on (0: start over). */
PXL_API pxl_status pxl_llm_rewind(pxl_llm *m, int64_t n_past);

/* ==== Sampling =========================================================================== */

/*
 * Zero-initialised means greedy with no penalties. Applied in llama.cpp's
 * order: penalties over the last repeat_last_n tokens, top-k, top-p, min-p,
 * temperature, then a draw from the seeded generator. temperature <= 0 is
 * greedy (the first largest logit). A NaN logit counts as -inf. The same
 * seed and logits give the same tokens on every machine.
 */
typedef struct pxl_sampler_options {
    float temperature;
    int32_t top_k;          /* <= 0: off */
    float top_p;            /* 0 or >= 1: off */
    float min_p;            /* <= 0: off */
    float repeat_penalty;   /* 0 or 1: off */
    int32_t repeat_last_n;  /* 0: 64 (in llama.cpp 0 turns penalties off: here repeat_penalty 1,
                               frequency and presence 0 do); -1: the last 2^20 tokens */
    float frequency_penalty, presence_penalty;
    uint64_t seed;
} pxl_sampler_options;

typedef struct pxl_sampler pxl_sampler;
PXL_API pxl_status pxl_sampler_create(pxl_ctx *ctx, int64_t n_vocab, const pxl_sampler_options *opts,
                                      pxl_sampler **out);
PXL_API void pxl_sampler_free(pxl_sampler *s);
/* Picks a token from n_vocab logits (modified in place). */
PXL_API pxl_status pxl_sampler_sample(pxl_sampler *s, float *logits, int32_t *token);
/* Adds a token to the history the penalties look at (prompt tokens, and
 * every sampled token: pxl_sampler_sample does not add it). */
PXL_API void pxl_sampler_accept(pxl_sampler *s, int32_t token);
PXL_API void pxl_sampler_reset(pxl_sampler *s);

/* ==== Chat templates ===================================================================== */

/*
 * The conversation formats of common chat models, as llama.cpp's built-in
 * formatter writes them (not a Jinja interpreter: a GGUF file's
 * tokenizer.chat_template is recognised by the markers its family uses, in
 * llama.cpp's order, and each family is formatted by code). Names, as
 * llama.cpp names them:
 *   chatml            <|im_start|>role\ncontent<|im_end|>\n (Qwen, SmolLM, ...)
 *   llama2            [INST] user [/INST]assistant</s>[INST] ... (system: text + "\n")
 *   llama2-sys        as llama2, system as <<SYS>>\n...\n<</SYS>>\n\n
 *   llama2-sys-bos    as llama2-sys, "<s>" before every [INST] but the first
 *   llama2-sys-strip  as llama2-sys, every content trimmed
 *   llama3            <|start_header_id|>role<|end_header_id|>\n\ncontent<|eot_id|>
 *   mistral-v1, mistral-v3, mistral-v3-tekken  [INST] system\n\nuser [/INST] reply</s>
 *                     (v1: " [INST] ", v3: "[INST] " and the reply trimmed, tekken: no spaces)
 *   mistral-v7, mistral-v7-tekken  [SYSTEM_PROMPT] ...[/SYSTEM_PROMPT][INST] ...[/INST] reply</s>
 *   phi3              <|role|>\ncontent<|end|>\n
 *   phi4              <|im_start|>role<|im_sep|>content<|im_end|>
 *   falcon3           <|role|>\ncontent\n
 *   zephyr            <|role|>\ncontent<|endoftext|>\n
 *   gemma             <start_of_turn>user|model\ncontent<end_of_turn>\n (trimmed; the system
 *                     text opens the first user turn)
 * BOS is never written (the tokenizer adds it); the llama2 and mistral forms
 * have no assistant prompt to add (a conversation ending in a user turn
 * already ends in [/INST]).
 */
typedef enum pxl_chat_template {
    PXL_CHAT_TEMPLATE_UNKNOWN = 0,
    PXL_CHAT_TEMPLATE_CHATML,
    PXL_CHAT_TEMPLATE_LLAMA2,
    PXL_CHAT_TEMPLATE_LLAMA2_SYS,
    PXL_CHAT_TEMPLATE_LLAMA2_SYS_BOS,
    PXL_CHAT_TEMPLATE_LLAMA2_SYS_STRIP,
    PXL_CHAT_TEMPLATE_LLAMA3,
    PXL_CHAT_TEMPLATE_MISTRAL_V1,
    PXL_CHAT_TEMPLATE_MISTRAL_V3,
    PXL_CHAT_TEMPLATE_MISTRAL_V3_TEKKEN,
    PXL_CHAT_TEMPLATE_MISTRAL_V7,
    PXL_CHAT_TEMPLATE_MISTRAL_V7_TEKKEN,
    PXL_CHAT_TEMPLATE_PHI3,
    PXL_CHAT_TEMPLATE_PHI4,
    PXL_CHAT_TEMPLATE_FALCON3,
    PXL_CHAT_TEMPLATE_ZEPHYR,
    PXL_CHAT_TEMPLATE_GEMMA
} pxl_chat_template;

/* One message: role "system", "user" or "assistant" (other roles are written
 * as given where the format names roles), content UTF-8; both NUL-terminated. */
typedef struct pxl_chat_message {
    const char *role;
    const char *content;
} pxl_chat_message;

/* The family of a chat template's text (len bytes, need not be NUL-terminated;
 * a template's name is accepted too). UNKNOWN when it matches none pxl formats
 * (including templates llama.cpp recognises as families pxl does not have). */
PXL_API pxl_chat_template pxl_chat_template_detect(const char *jinja_text, size_t len);
/* A template by name ("chatml", ...); UNKNOWN for any other string or NULL. */
PXL_API pxl_chat_template pxl_chat_template_from_name(const char *name);
/* The static name of a template; "unknown" for UNKNOWN or an invalid value. */
PXL_API const char *pxl_chat_template_name(pxl_chat_template t);
/* The names, sorted: count, the i-th (NULL when out of range), and all of
 * them as one static string ("chatml, falcon3, gemma, ...") for messages. */
PXL_API size_t pxl_chat_template_count(void);
PXL_API const char *pxl_chat_template_name_at(size_t i);
PXL_API const char *pxl_chat_template_list(void);

/*
 * Formats n messages with a template, and with add_assistant_prompt = 1 the
 * text that opens the assistant's reply. *out is allocated with pxl_alloc
 * (free with pxl_free) and NUL-terminated; *len (may be NULL) excludes the
 * NUL. An UNKNOWN or invalid template fails with PXL_ERR_INVALID_ARG and a
 * message listing the names; a NULL role or content with PXL_ERR_INVALID_ARG.
 */
PXL_API pxl_status pxl_chat_apply(pxl_ctx *ctx, pxl_chat_template tmpl, const pxl_chat_message *msgs, size_t n,
                                  int add_assistant_prompt, char **out, size_t *len);

#ifdef __cplusplus
}
#endif

#endif
