/*
 * The model loader's refusals, the eval contract and the sampler.
 *
 * Models are built in memory with pxl's GGUF writer (a tiny llama: embedding
 * 32, 2 heads of 16, 1 KV head, feed-forward 64, 1 block, vocabulary 40),
 * then one thing is broken at a time: each load must fail with the status
 * and a message naming what is wrong. The sampler is checked for what each
 * option must do on hand-made logits.
 */
#include "check.h"
#include "pxl/llm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define E 32
#define NH 2
#define NKV 1
#define HD 16
#define FF 64
#define V 40

enum { BREAK_NONE, BREAK_ARCH, BREAK_MISSING, BREAK_SHAPE, BREAK_TYPE, BREAK_NO_HEADS, BREAK_HEADS, BREAK_VOCAB,
       BREAK_SCALING, BREAK_QWEN_NO_BIAS, BREAK_IQ };

static void add_f32(pxl_gguf_writer *w, const char *name, int64_t ne0, int64_t ne1, uint32_t *seed) {
    int64_t n = ne0 * (ne1 ? ne1 : 1);
    float *d = malloc((size_t)n * sizeof *d);
    for (int64_t i = 0; i < n; i++) {
        *seed = *seed * 1664525u + 1013904223u;
        d[i] = ((float)(*seed >> 8) / 16777216.0f - 0.5f) * 0.5f;
    }
    int64_t ne[2] = {ne0, ne1};
    CHECK(pxl_gguf_writer_add_tensor(w, name, PXL_GGML_F32, ne1 ? 2 : 1, ne, d, (size_t)n * sizeof *d) == PXL_OK);
    free(d);
}

/* A tiny model with one defect; *data is the file (free with pxl_free). */
static void build(pxl_ctx *ctx, int defect, uint8_t **data, size_t *size) {
    pxl_gguf_writer *w;
    CHECK(pxl_gguf_writer_create(ctx, &w) == PXL_OK);
    const char *arch = defect == BREAK_ARCH ? "gpt2" : defect == BREAK_QWEN_NO_BIAS ? "qwen2" : "llama";
    char k[96];
#define KEY(s) (snprintf(k, sizeof k, "%s.%s", arch, s), k)
    pxl_gguf_writer_add_string(w, "general.architecture", arch, strlen(arch));
    pxl_gguf_writer_add_uint(w, KEY("context_length"), PXL_GGUF_UINT32, 64);
    pxl_gguf_writer_add_uint(w, KEY("embedding_length"), PXL_GGUF_UINT32, E);
    pxl_gguf_writer_add_uint(w, KEY("block_count"), PXL_GGUF_UINT32, 1);
    pxl_gguf_writer_add_uint(w, KEY("feed_forward_length"), PXL_GGUF_UINT32, FF);
    if (defect != BREAK_NO_HEADS) pxl_gguf_writer_add_uint(w, KEY("attention.head_count"), PXL_GGUF_UINT32, NH);
    pxl_gguf_writer_add_uint(w, KEY("attention.head_count_kv"), PXL_GGUF_UINT32, defect == BREAK_HEADS ? 3 : NKV);
    if (defect == BREAK_VOCAB) pxl_gguf_writer_add_uint(w, KEY("vocab_size"), PXL_GGUF_UINT32, V + 1);
    if (defect == BREAK_SCALING) pxl_gguf_writer_add_string(w, KEY("rope.scaling.type"), "yarn", 4);
    uint32_t seed = 7;
    add_f32(w, "token_embd.weight", E, V, &seed);
    add_f32(w, "output_norm.weight", E, 0, &seed);
    add_f32(w, "blk.0.attn_norm.weight", E, 0, &seed);
    if (defect == BREAK_TYPE) { /* Q8_0 is fine for pxl; an F32 norm must be F32: make it F16 */
        uint16_t h[E] = {0};
        int64_t ne[1] = {E};
        CHECK(pxl_gguf_writer_add_tensor(w, "blk.0.ffn_norm.weight", PXL_GGML_F16, 1, ne, h, sizeof h) == PXL_OK);
    } else {
        add_f32(w, "blk.0.ffn_norm.weight", E, 0, &seed);
    }
    add_f32(w, "blk.0.attn_q.weight", E, defect == BREAK_SHAPE ? NH * HD + 1 : NH * HD, &seed);
    if (defect != BREAK_MISSING) add_f32(w, "blk.0.attn_k.weight", E, NKV * HD, &seed);
    add_f32(w, "blk.0.attn_v.weight", E, NKV * HD, &seed);
    add_f32(w, "blk.0.attn_output.weight", NH * HD, E, &seed);
    add_f32(w, "blk.0.ffn_gate.weight", E, FF, &seed);
    if (defect == BREAK_IQ) { /* a type the reader sizes but pxl has no kernel for */
        static uint8_t iq[FF * (E / 32) * 18];
        int64_t ne[2] = {E, FF};
        CHECK(pxl_gguf_writer_add_tensor(w, "blk.0.ffn_up.weight", PXL_GGML_IQ4_NL, 2, ne, iq, sizeof iq) == PXL_OK);
    } else {
        add_f32(w, "blk.0.ffn_up.weight", E, FF, &seed);
    }
    add_f32(w, "blk.0.ffn_down.weight", FF, E, &seed);
#undef KEY
    CHECK(pxl_gguf_writer_to_memory(w, data, size) == PXL_OK);
    pxl_gguf_writer_free(w);
}

static void expect_load(pxl_ctx *ctx, int defect, pxl_status want, const char *msg_part) {
    uint8_t *data;
    size_t size;
    build(ctx, defect, &data, &size);
    pxl_gguf *g = NULL;
    pxl_llm *m = NULL;
    CHECK(pxl_gguf_parse(ctx, data, size, &g) == PXL_OK);
    pxl_status s = pxl_llm_load(ctx, g, NULL, &m);
    CHECK_MSG(s == want, "defect %d: status %s, want %s (%s)", defect, pxl_status_str(s), pxl_status_str(want),
              pxl_ctx_error(ctx));
    if (msg_part) CHECK_MSG(strstr(pxl_ctx_error(ctx), msg_part) != NULL, "defect %d: '%s' lacks '%s'", defect,
                            pxl_ctx_error(ctx), msg_part);
    pxl_llm_free(m);
    pxl_gguf_free(g);
    pxl_free(ctx, data);
}

static void test_loader(pxl_ctx *ctx) {
    expect_load(ctx, BREAK_NONE, PXL_OK, NULL);
    expect_load(ctx, BREAK_ARCH, PXL_ERR_UNSUPPORTED, "architecture 'gpt2' is not supported");
    expect_load(ctx, BREAK_MISSING, PXL_ERR_FORMAT, "tensor 'blk.0.attn_k.weight' is missing");
    expect_load(ctx, BREAK_SHAPE, PXL_ERR_FORMAT, "tensor 'blk.0.attn_q.weight' has shape [32, 33, 1, 1]");
    expect_load(ctx, BREAK_TYPE, PXL_ERR_UNSUPPORTED, "tensor 'blk.0.ffn_norm.weight' has type F16");
    expect_load(ctx, BREAK_NO_HEADS, PXL_ERR_FORMAT, "no 'llama.attention.head_count'");
    expect_load(ctx, BREAK_HEADS, PXL_ERR_FORMAT, "KV heads");
    expect_load(ctx, BREAK_VOCAB, PXL_ERR_FORMAT, "'llama.vocab_size' = 41");
    expect_load(ctx, BREAK_SCALING, PXL_ERR_UNSUPPORTED, "RoPE scaling 'yarn'");
    expect_load(ctx, BREAK_QWEN_NO_BIAS, PXL_ERR_FORMAT, "tensor 'blk.0.attn_q.bias' is missing");
    expect_load(ctx, BREAK_IQ, PXL_ERR_UNSUPPORTED,
                "tensor 'blk.0.ffn_up.weight' has type IQ4_NL, which pxl cannot run");
}

static void test_eval(pxl_ctx *ctx) {
    uint8_t *data;
    size_t size;
    build(ctx, BREAK_NONE, &data, &size);
    pxl_gguf *g = NULL;
    pxl_llm *m = NULL;
    CHECK(pxl_gguf_parse(ctx, data, size, &g) == PXL_OK);
    pxl_llm_options o = {16, 4, PXL_F32, 0}; /* a context of 16, passes of 4 tokens */
    CHECK(pxl_llm_load(ctx, g, &o, &m) == PXL_OK);
    const pxl_llm_info *I = pxl_llm_get_info(m);
    CHECK(I->n_vocab == V && I->n_ctx == 16 && I->n_batch == 4 && I->head_dim == HD && I->tied_output == 1);
    int32_t ids[16];
    for (int i = 0; i < 16; i++) ids[i] = (i * 7 + 3) % V;
    float a[V], all[10 * V], b[V];
    /* the last row of an all-logits pass equals the last-token pass; chunking changes nothing */
    CHECK(pxl_llm_eval(m, ids, 10, all, 1) == PXL_OK);
    CHECK(pxl_llm_n_past(m) == 10);
    CHECK(pxl_llm_rewind(m, 0) == PXL_OK);
    CHECK(pxl_llm_eval(m, ids, 10, a, 0) == PXL_OK);
    for (int i = 0; i < V; i++) CHECK_MSG(fabsf(a[i] - all[9 * V + i]) <= 1e-5f, "logit %d", i);
    /* token by token after a rewind gives the same last row */
    CHECK(pxl_llm_rewind(m, 0) == PXL_OK);
    for (int t = 0; t < 10; t++) CHECK(pxl_llm_eval(m, &ids[t], 1, b, 0) == PXL_OK);
    for (int i = 0; i < V; i++) CHECK_MSG(fabsf(b[i] - a[i]) <= 1e-4f, "logit %d: %g vs %g", i, (double)b[i], (double)a[i]);
    /* rewinding to 5 and replaying 5..9 too */
    CHECK(pxl_llm_rewind(m, 5) == PXL_OK);
    CHECK(pxl_llm_eval(m, ids + 5, 5, b, 0) == PXL_OK);
    for (int i = 0; i < V; i++) CHECK(fabsf(b[i] - a[i]) <= 1e-4f);
    /* refusals change nothing */
    CHECK(pxl_llm_eval(m, ids, 7, a, 0) == PXL_ERR_INVALID_ARG); /* 10 + 7 > 16 */
    CHECK(strstr(pxl_ctx_error(ctx), "do not fit the context of 16") != NULL);
    CHECK(pxl_llm_n_past(m) == 10);
    int32_t bad = V;
    CHECK(pxl_llm_eval(m, &bad, 1, a, 0) == PXL_ERR_INVALID_ARG);
    CHECK(strstr(pxl_ctx_error(ctx), "outside the vocabulary") != NULL);
    CHECK(pxl_llm_eval(m, ids, 0, a, 0) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_llm_rewind(m, 11) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_llm_n_past(m) == 10);
    pxl_llm_free(m);
    /* a context beyond the trained one */
    pxl_llm_options big = {65, 0, PXL_F32, 0};
    CHECK(pxl_llm_load(ctx, g, &big, &m) == PXL_ERR_INVALID_ARG);
    CHECK(strstr(pxl_ctx_error(ctx), "beyond the 64 the model was trained for") != NULL);
    /* an f16 KV cache: half the bytes, the same eval contract, logits close to the f32 cache's */
    uint64_t bytes32 = UINT64_MAX;
    {
        pxl_llm_options o32 = {16, 4, PXL_F32, 0}, o16 = {16, 4, PXL_F16, 0};
        pxl_llm *m32 = NULL, *m16 = NULL;
        CHECK(pxl_llm_load(ctx, g, &o32, &m32) == PXL_OK);
        CHECK(pxl_llm_load(ctx, g, &o16, &m16) == PXL_OK);
        if (m32 && m16) {
            bytes32 = pxl_llm_get_info(m32)->kv_cache_bytes;
            CHECK(pxl_llm_get_info(m32)->kv_type == PXL_F32 && pxl_llm_get_info(m16)->kv_type == PXL_F16);
            CHECK_MSG(pxl_llm_get_info(m16)->kv_cache_bytes * 2 == bytes32, "f16 cache %llu bytes, f32 %llu",
                      (unsigned long long)pxl_llm_get_info(m16)->kv_cache_bytes, (unsigned long long)bytes32);
            CHECK(pxl_llm_eval(m32, ids, 10, a, 0) == PXL_OK);
            CHECK(pxl_llm_eval(m16, ids, 10, b, 0) == PXL_OK);
            float worst = 0;
            for (int i = 0; i < V; i++) worst = fabsf(a[i] - b[i]) > worst ? fabsf(a[i] - b[i]) : worst;
            /* f16 rounds K and V by 2^-11 relative; these logits are below 1 */
            CHECK_MSG(worst <= 1e-3f, "f16 against f32 cache: largest logit difference %g", (double)worst);
            /* token by token after a rewind: the same logits as one pass (f16 rows are the same either way) */
            CHECK(pxl_llm_rewind(m16, 0) == PXL_OK);
            for (int t = 0; t < 10; t++) CHECK(pxl_llm_eval(m16, &ids[t], 1, all, 0) == PXL_OK);
            for (int i = 0; i < V; i++) CHECK_MSG(fabsf(all[i] - b[i]) <= 1e-4f, "f16 cache logit %d", i);
        }
        pxl_llm_free(m32);
        pxl_llm_free(m16);
    }
    CHECK(bytes32 != UINT64_MAX);
    /* the default (zero options, NULL options) is f32 */
    {
        pxl_llm_options z;
        memset(&z, 0, sizeof z);
        z.n_ctx = 16;
        CHECK(pxl_llm_load(ctx, g, &z, &m) == PXL_OK);
        if (m) CHECK(pxl_llm_get_info(m)->kv_type == PXL_F32 && pxl_llm_get_info(m)->kv_cache_bytes == bytes32);
        pxl_llm_free(m);
        m = NULL;
    }
    /* any other cache dtype is refused with a message */
    pxl_dtype bad_types[3] = {PXL_BF16, PXL_Q8_0, (pxl_dtype)999};
    for (int i = 0; i < 3; i++) {
        pxl_llm_options ob = {16, 4, bad_types[i], 0};
        m = NULL;
        CHECK(pxl_llm_load(ctx, g, &ob, &m) == PXL_ERR_INVALID_ARG && m == NULL);
        CHECK_MSG(strstr(pxl_ctx_error(ctx), "KV cache of") != NULL, "message: %s", pxl_ctx_error(ctx));
    }
    pxl_llm_free(NULL);
    pxl_gguf_free(g);
    pxl_free(ctx, data);
}

static void test_sampler(pxl_ctx *ctx) {
    pxl_sampler *s;
    float l[5];
    int32_t t;
    /* greedy: the first largest, NaN never */
    CHECK(pxl_sampler_create(ctx, 5, NULL, &s) == PXL_OK);
    float g[5] = {1, 3, NAN, 3, 2};
    CHECK(pxl_sampler_sample(s, g, &t) == PXL_OK && t == 1);
    pxl_sampler_free(s);
    /* top-k 1 is greedy whatever the temperature and seed */
    pxl_sampler_options o;
    memset(&o, 0, sizeof o);
    o.temperature = 5.0f;
    o.top_k = 1;
    o.seed = 99;
    CHECK(pxl_sampler_create(ctx, 5, &o, &s) == PXL_OK);
    for (int i = 0; i < 50; i++) {
        float x[5] = {0.1f, 0.2f, 0.3f, 0.25f, 0.0f};
        CHECK(pxl_sampler_sample(s, x, &t) == PXL_OK && t == 2);
    }
    pxl_sampler_free(s);
    /* min-p 0.5 keeps only tokens at least half as likely as the best */
    memset(&o, 0, sizeof o);
    o.temperature = 1.0f;
    o.min_p = 0.5f;
    CHECK(pxl_sampler_create(ctx, 5, &o, &s) == PXL_OK);
    for (int i = 0; i < 200; i++) {
        float x[5] = {0.0f, logf(0.6f), -10.0f, logf(0.55f), -3.0f}; /* relative to 1: keep 0, 1, 3 */
        CHECK(pxl_sampler_sample(s, x, &t) == PXL_OK);
        CHECK_MSG(t == 0 || t == 1 || t == 3, "min-p let %d through", t);
    }
    pxl_sampler_free(s);
    /* top-p 0.5: the best alone holds 0.6 of the mass */
    memset(&o, 0, sizeof o);
    o.temperature = 1.0f;
    o.top_p = 0.5f;
    CHECK(pxl_sampler_create(ctx, 3, &o, &s) == PXL_OK);
    for (int i = 0; i < 100; i++) {
        float x[3] = {logf(0.3f), logf(0.6f), logf(0.1f)};
        CHECK(pxl_sampler_sample(s, x, &t) == PXL_OK && t == 1);
    }
    pxl_sampler_free(s);
    /* temperature 1 draws in proportion: 0.75 / 0.25 within 3% over 20,000 draws (seeded: deterministic) */
    memset(&o, 0, sizeof o);
    o.temperature = 1.0f;
    o.seed = 5;
    CHECK(pxl_sampler_create(ctx, 2, &o, &s) == PXL_OK);
    int c0 = 0;
    for (int i = 0; i < 20000; i++) {
        float x[2] = {logf(0.75f), logf(0.25f)};
        CHECK(pxl_sampler_sample(s, x, &t) == PXL_OK);
        c0 += t == 0;
    }
    CHECK_MSG(fabs(c0 / 20000.0 - 0.75) < 0.03, "frequency %g", c0 / 20000.0);
    /* the same seed gives the same draws after a reset */
    int32_t first[20], again[20];
    for (int pass = 0; pass < 2; pass++) {
        pxl_sampler_reset(s);
        for (int i = 0; i < 20; i++) {
            float x[2] = {0.0f, 0.0f};
            CHECK(pxl_sampler_sample(s, x, pass ? &again[i] : &first[i]) == PXL_OK);
        }
    }
    CHECK(memcmp(first, again, sizeof first) == 0);
    pxl_sampler_free(s);
    /* penalties: repeat divides a positive logit, multiplies a negative one; frequency and presence subtract */
    memset(&o, 0, sizeof o);
    o.repeat_penalty = 2.0f;
    o.frequency_penalty = 0.5f;
    o.presence_penalty = 0.25f;
    o.repeat_last_n = 3;
    CHECK(pxl_sampler_create(ctx, 5, &o, &s) == PXL_OK);
    int32_t hist[4] = {4, 1, 3, 3}; /* window of 3: 1, 3, 3 (4 left) */
    for (int i = 0; i < 4; i++) pxl_sampler_accept(s, hist[i]);
    float x[5] = {1.0f, 4.0f, 0.0f, -2.0f, 8.0f};
    memcpy(l, x, sizeof x);
    CHECK(pxl_sampler_sample(s, l, &t) == PXL_OK);
    CHECK(l[0] == 1.0f && l[2] == 0.0f && l[4] == 8.0f);        /* not in the window */
    CHECK(fabsf(l[1] - (2.0f - 0.5f - 0.25f)) < 1e-6f);          /* 4 / 2 - 1 x 0.5 - 0.25 */
    CHECK(fabsf(l[3] - (-4.0f - 1.0f - 0.25f)) < 1e-6f);         /* -2 x 2 - 2 x 0.5 - 0.25 */
    CHECK(t == 4);
    pxl_sampler_free(s);
    /* refusals */
    memset(&o, 0, sizeof o);
    o.temperature = NAN;
    CHECK(pxl_sampler_create(ctx, 5, &o, &s) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_sampler_create(ctx, 0, NULL, &s) == PXL_ERR_INVALID_ARG);
    pxl_sampler_free(NULL);
}

/* The GPU memory estimate and the refusal of a model that does not fit:
 * llvmpipe reports no memory heaps, so gpu_memory_limit forces the check. */
static void test_gpu_memory(pxl_ctx *ctx) {
    int gpu = pxl_ctx_backend(ctx) == PXL_BACKEND_GPU;
    uint8_t *data;
    size_t size;
    build(ctx, BREAK_NONE, &data, &size);
    pxl_gguf *g = NULL;
    CHECK(pxl_gguf_parse(ctx, data, size, &g) == PXL_OK);
    pxl_llm_options o;
    memset(&o, 0, sizeof o);
    o.gpu_memory_limit = gpu ? 0 : 1; /* a CPU context ignores it */
    pxl_llm *m = NULL;
    CHECK_MSG(pxl_llm_load(ctx, g, &o, &m) == PXL_OK, "%s", pxl_ctx_error(ctx));
    uint64_t est = 0;
    if (m) {
        const pxl_llm_info *I = pxl_llm_get_info(m);
        est = I->gpu_bytes_estimate;
        if (!gpu) {
            CHECK(est == 0);
        } else {
            /* weights + KV cache + (ids, x, h, q, att, gate, up, k) for n_batch = n_ctx = 64 tokens + logits for
             * one row and for n_batch rows */
            uint64_t B = 64, act = B * 4 + B * (2 * E + 2 * NH * HD + 2 * FF + NKV * HD) * 4, logits = (1 + B) * V * 4;
            CHECK_MSG(est == I->weight_bytes + I->kv_cache_bytes + act + logits, "estimate %llu",
                      (unsigned long long)est);
            const pxl_gpu_info *gi = pxl_gpu_get_info(ctx);
            fprintf(stderr, "llm_model: estimate %llu bytes; device memory %llu bytes%s\n", (unsigned long long)est,
                    (unsigned long long)gi->device_memory_bytes, gi->device_memory_bytes ? "" : " (unknown)");
        }
    }
    pxl_llm_free(m);
    if (gpu && est) {
        o.gpu_memory_limit = est; /* exactly enough */
        m = NULL;
        CHECK_MSG(pxl_llm_load(ctx, g, &o, &m) == PXL_OK, "%s", pxl_ctx_error(ctx));
        pxl_llm_free(m);
        o.gpu_memory_limit = est - 1; /* one byte short: refused before any upload */
        m = NULL;
        CHECK(pxl_llm_load(ctx, g, &o, &m) == PXL_ERR_UNSUPPORTED);
        CHECK(m == NULL);
        const char *e = pxl_ctx_error(ctx);
        CHECK_MSG(strstr(e, "MiB") && strstr(e, "--ctx") && strstr(e, "--backend cpu"), "'%s'", e);
    }
    pxl_gguf_free(g);
    pxl_free(ctx, data);
}

int main(void) {
    pxl_ctx_options co = pxl_ctx_options_default();
    co.backend = PXL_BACKEND_CPU;
    co.quiet = 1;
    pxl_ctx *ctx;
    CHECK(pxl_ctx_create(&co, &ctx) == PXL_OK);
    test_loader(ctx);
    test_eval(ctx);
    test_sampler(ctx);
    test_gpu_memory(ctx);
    pxl_ctx_free(ctx);
    /* the eval contract on the GPU too, where there is one */
    co.backend = PXL_BACKEND_GPU;
    pxl_ctx *gctx = NULL;
    if (pxl_ctx_create(&co, &gctx) == PXL_OK) {
        test_eval(gctx);
        test_gpu_memory(gctx);
    } else fprintf(stderr, "llm_model: no GPU (%s): the eval contract ran on the CPU only\n", gctx ? pxl_ctx_error(gctx) : "");
    pxl_ctx_free(gctx);
    if (g_failures) fprintf(stderr, "llm_model: %d checks failed\n", g_failures);
    return g_failures ? 1 : 0;
}
