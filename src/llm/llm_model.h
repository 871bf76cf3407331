/* Internal: the model's layout (model.c). Not installed. */
#ifndef PXL_LLM_MODEL_H
#define PXL_LLM_MODEL_H

#include "../core/internal.h"
#include "pxl/llm.h"

#define LLM_AHEAD_PARTS 8 /* recorders of a pass recorded ahead: layers 0, 1-6, 7-42, ...
                           * (llm_cut=2: 0, 1-2, 3-6, ...) */

typedef struct pxl_llm_layer {
    pxl_tensor *attn_norm, *ffn_norm;           /* [E] f32 */
    pxl_tensor *wq, *wk, *wv, *wo;              /* [Hq*D, E], [Hkv*D, E] x2, [E, Hq*D]: GGUF types */
    pxl_tensor *bq, *bk, *bv;                   /* qwen2's biases, else NULL */
    pxl_tensor *wg, *wu, *wd;                   /* [F, E] x2, [E, F] */
    pxl_tensor *cache_k, *cache_v;              /* [C, Hkv, D] in info.kv_type (f32 or f16) */
    /* On a GPU, weights of one type that read the same input are stored as
     * one matrix, and the separate weights above are views of its rows, so
     * one token needs one product for them (NULL where the types differ):
     * wqkv [Hq*D + 2*Hkv*D, E], wqk [Hq*D + Hkv*D, E] when only V's type
     * differs, wgu [2F, E]; and the biases, where there are, as one row bqkv
     * [1, Hq*D + 2*Hkv*D] whatever the weights' types, with bqk its view of
     * Q's and K's (wqk's bias) and bvv its view of V's (so that the two
     * biases of wqk's and wv's products lie in one buffer). */
    pxl_tensor *wqkv, *wqk, *bqkv, *bqk, *bvv, *wgu;
} pxl_llm_layer;

struct pxl_llm {
    pxl_ctx *ctx;
    const pxl_gguf *g;
    pxl_llm_info info;
    char arch[32], name[128];
    pxl_tensor *tok_embd, *output_norm, *output; /* output NULL: tied to tok_embd */
    pxl_tensor *rope_freqs;             /* [D/2] f32 RoPE frequency factors (llama3 scaling), else NULL */
    pxl_llm_layer *layers;
    /* activations for up to n_batch tokens */
    pxl_tensor *ids;                    /* [B] i32 */
    pxl_tensor *x, *h;                  /* [B, E] */
    pxl_tensor *q, *k, *att;            /* [B, Hq*D], [B, Hkv*D], [B, Hq*D] */
    pxl_tensor *v;                      /* [B, Hkv*D]: V before an f16 cache (NULL with f32) */
    pxl_tensor *gate, *up;              /* [B, F] */
    pxl_tensor *logits1, *logits_all;   /* [1, V]; [B, V] made on first use */
    pxl_buffer *logits_rb;              /* GPU: a map-read copy of logits1, which the pass making it writes */
    /* pxl_llm_eval_view: its logits (the host's copy where logits_rb is not
     * mapped instead, made on first use), and while it runs, where
     * read_logits1 puts the pointer into the mapped logits_rb instead of
     * copying; logits_rb stays mapped until the next call on the model */
    float *logits_host;
    const float **view;
    pxl_tensor *qkv1;                   /* one token on a GPU: [1, Hq*D + 2*Hkv*D] */
    int64_t n_past;
    int a_q8;                           /* pxl_matmul_options.a_q8 of a prompt's weight products (CPU: 0; GPU: 1 unless gpu_q8=0) */
    int a_q8_token;                     /* the same for a one-token pass's (CPU: 2 unless cpu_q8=0; GPU: 1 unless gpu_q8=0 or 1) */
    int a_q8_pass;                      /* the one of the pass in progress (forward) */
    /* GPU decoding: the next one-token pass, at position ahead_pos, recorded
     * while the GPU runs the current one and held for the next pxl_llm_eval
     * (pxl_recorder_end), in n_ahead recorders submitted in turn (model.c,
     * record_ahead); n_ahead 0 when none */
    pxl_recorder *ahead[LLM_AHEAD_PARTS];
    int n_ahead;
    int64_t ahead_pos;
    int decode_warm; /* GPU: the decode kernels of long contexts are made (model.c, warm_decode) */
    /* pxl_llm_generate_greedy on a GPU, while a pass is recorded: its token
     * id is read from gen_id, its pick written to gen_next (pxl_argmax_ext)
     * and copied into the read-back buffer gen_rb; NULL otherwise */
    pxl_tensor *gen_id, *gen_next;
    pxl_buffer *gen_rb;
    pxl_progress *progress;
    uint64_t n_loaded;
};

/* The pxl dtype of a ggml type pxl's kernels run; 0 when there is none. */
int pxl_llm_dtype_of(uint32_t ggml_type, pxl_dtype *out);

#endif
