/*
 * Writes the small test models of tests/data/llm/ with pxl's GGUF writer:
 * llama-family shapes with random weights (a fixed generator, so the files
 * are the same on every machine) and a small real tokenizer in the metadata.
 *
 *   llm_mkmodel llama|qwen2|llama3|linear OUT.gguf [SEED]
 *
 * llama: a SentencePiece-style vocabulary (control tokens, 256 byte tokens
 * <0xNN>, '▁' + letters, a few words) with adjacent-pair RoPE.
 * qwen2: a byte-level BPE vocabulary (the 256 byte symbols of GPT-2's
 * mapping, merges building ' ' + letter and a few words, ChatML specials)
 * with biases on Q, K and V and half-split RoPE.
 * llama3: llama's file (the same weights) plus RoPE frequency factors,
 * rope_freqs.weight [HD/2], from Llama 3.1's scaling rule (factor 8, low and
 * high frequency factors 1 and 4) with an original context of CTX = 256
 * rather than 8192, so that the factors reach the pairs that turn within
 * the test's few dozen positions: 1 for pairs of wavelength below 64
 * positions, 8 above 256, a smooth blend between.
 * linear: llama's file with rope.scaling.type "linear" and factor 4.
 * yarn, badfreqs: files pxl must refuse (rope.scaling.type "yarn"; a
 * rope_freqs.weight of HD elements instead of HD/2).
 *
 * Shapes: embedding 256 (K-quant rows need multiples of 256), 4 query heads of
 * 64, 2 KV heads (grouped-query), feed-forward 256, 2 blocks. The output
 * weights are scaled so that logits spread over several units: greedy
 * decoding then has clear margins, which quantized references keep.
 */
#include "pxl/llm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define E 256
#define NH 4
#define NKV 2
#define HD 64
#define FF 256
#define NL 2
#define CTX 256

static uint64_t g_rng;
static float urand(void) { /* uniform in [-1, 1) */
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (float)(g_rng >> 40) / (float)(1u << 23) - 1.0f;
}

static int add_tensor(pxl_gguf_writer *w, const char *name, int64_t ne0, int64_t ne1, float scale, float offset) {
    int64_t n = ne0 * (ne1 ? ne1 : 1);
    float *d = malloc((size_t)n * sizeof *d);
    if (!d) return 1;
    for (int64_t i = 0; i < n; i++) d[i] = offset + scale * urand();
    int64_t ne[2] = {ne0, ne1};
    pxl_status s = pxl_gguf_writer_add_tensor(w, name, PXL_GGML_F32, ne1 ? 2 : 1, ne, d, (size_t)n * sizeof *d);
    free(d);
    return s != PXL_OK;
}

/* ---- vocabularies ---- */

typedef struct {
    char *tok[1024];
    float score[1024];
    int32_t type[1024];
    int n;
    char *merges[1024];
    int n_merges;
} vocab;

static void push(vocab *v, const char *s, float score, int32_t type) {
    for (int i = 0; i < v->n; i++)
        if (!strcmp(v->tok[i], s)) return; /* a vocabulary has each piece once */
    v->tok[v->n] = strdup(s);
    v->score[v->n] = score;
    v->type[v->n] = type;
    v->n++;
}

static void spm_vocab(vocab *v) {
    push(v, "<unk>", 0, 2);
    push(v, "<s>", 0, 3);
    push(v, "</s>", 0, 3);
    for (int b = 0; b < 256; b++) {
        char t[8];
        snprintf(t, sizeof t, "<0x%02X>", b);
        push(v, t, 0, 6);
    }
    float sc = -1.0f;
    push(v, "\xe2\x96\x81", sc, 1); /* '▁' */
    for (char c = 'a'; c <= 'z'; c++) {
        char t[2] = {c, 0};
        push(v, t, sc -= 0.01f, 1);
    }
    for (char c = 'a'; c <= 'z'; c++) {
        char t[8] = "\xe2\x96\x81";
        t[3] = c;
        t[4] = 0;
        push(v, t, sc -= 0.01f, 1);
    }
    const char *words[] = {"th", "he", "in", "er", "an", "\xe2\x96\x81" "the", "\xe2\x96\x81" "and", "\xe2\x96\x81" "of",
                           "\xe2\x96\x81" "to", "ing", "\xe2\x96\x81" "in", "ed", "\xe2\x96\x81" "a", "on", "es", "or"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) push(v, words[i], -0.5f - 0.01f * (float)i, 1);
    for (char c = 'A'; c <= 'Z'; c++) {
        char t[2] = {c, 0};
        push(v, t, sc -= 0.01f, 1);
    }
    const char *punct = ".,!?;:'\"-()0123456789";
    for (const char *p = punct; *p; p++) {
        char t[2] = {*p, 0};
        push(v, t, sc -= 0.01f, 1);
    }
}

/* GPT-2's byte-to-symbol mapping, as UTF-8 */
static void byte_symbol(int b, char *out) {
    int cp;
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255)) cp = b;
    else {
        int n = 0;
        for (int x = 0; x < b; x++)
            if (!((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || (x >= 174 && x <= 255))) n++;
        cp = 256 + n;
    }
    if (cp < 0x80) {
        out[0] = (char)cp;
        out[1] = 0;
    } else {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        out[2] = 0;
    }
}

static void bpe_vocab(vocab *v) {
    char sp[4];
    byte_symbol(' ', sp); /* "Ġ" */
    for (int b = 0; b < 256; b++) {
        char t[4];
        byte_symbol(b, t);
        push(v, t, 0, 1);
    }
    for (char c = 'a'; c <= 'z'; c++) {
        char t[8], m[16];
        snprintf(t, sizeof t, "%s%c", sp, c);
        snprintf(m, sizeof m, "%s %c", sp, c);
        push(v, t, 0, 1);
        v->merges[v->n_merges++] = strdup(m);
    }
    const char *pairs[][2] = {{"t", "h"}, {"h", "e"}, {"i", "n"}, {"e", "r"}, {"a", "n"}, {"Gt", "he"},
                              {"Ga", "nd"}, {"n", "d"}, {"Go", "f"}, {"in", "g"}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        char a[8], b[8], t[16], m[20];
        snprintf(a, sizeof a, "%s", pairs[i][0][0] == 'G' ? sp : "");
        strcat(a, pairs[i][0][0] == 'G' ? pairs[i][0] + 1 : pairs[i][0]);
        snprintf(b, sizeof b, "%s", pairs[i][1]);
        snprintf(t, sizeof t, "%s%s", a, b);
        snprintf(m, sizeof m, "%s %s", a, b);
        int dup = 0;
        for (int k = 0; k < v->n; k++) dup |= !strcmp(v->tok[k], t);
        if (dup) continue;
        push(v, t, 0, 1);
        v->merges[v->n_merges++] = strdup(m);
    }
    push(v, "<|endoftext|>", 0, 3);
    push(v, "<|im_start|>", 0, 3);
    push(v, "<|im_end|>", 0, 3);
}

int main(int argc, char **argv) {
    if (argc < 3 || (strcmp(argv[1], "llama") && strcmp(argv[1], "qwen2") && strcmp(argv[1], "llama3") &&
                     strcmp(argv[1], "linear") && strcmp(argv[1], "yarn") && strcmp(argv[1], "badfreqs"))) {
        fprintf(stderr, "usage: llm_mkmodel llama|qwen2|llama3|linear|yarn|badfreqs OUT.gguf [SEED]\n");
        return 2;
    }
    int qwen = !strcmp(argv[1], "qwen2"), llama3 = !strcmp(argv[1], "llama3"), linear = !strcmp(argv[1], "linear");
    int yarn = !strcmp(argv[1], "yarn"), badfreqs = !strcmp(argv[1], "badfreqs");
    const char *arch = qwen ? "qwen2" : "llama";
    g_rng = argc > 3 ? strtoull(argv[3], NULL, 10) : 0x2545F4914F6CDD1Dull;
    if (!g_rng) g_rng = 1;
    pxl_ctx_options o = pxl_ctx_options_default();
    o.backend = PXL_BACKEND_CPU;
    pxl_ctx *ctx;
    if (pxl_ctx_create(&o, &ctx) != PXL_OK) return 1;
    pxl_gguf_writer *w;
    if (pxl_gguf_writer_create(ctx, &w) != PXL_OK) return 1;
    vocab v;
    memset(&v, 0, sizeof v);
    if (qwen) bpe_vocab(&v);
    else spm_vocab(&v);
    char key[96];
    int bad = 0;
#define KEY(k) (snprintf(key, sizeof key, "%s.%s", arch, k), key)
    bad |= pxl_gguf_writer_add_string(w, "general.architecture", arch, strlen(arch)) != PXL_OK;
    const char *name = qwen ? "pxl test qwen2" : llama3 ? "pxl test llama3" : linear ? "pxl test linear" : "pxl test llama";
    bad |= pxl_gguf_writer_add_string(w, "general.name", name, strlen(name)) != PXL_OK;
    bad |= pxl_gguf_writer_add_uint(w, KEY("context_length"), PXL_GGUF_UINT32, CTX) != PXL_OK;
    bad |= pxl_gguf_writer_add_uint(w, KEY("embedding_length"), PXL_GGUF_UINT32, E) != PXL_OK;
    bad |= pxl_gguf_writer_add_uint(w, KEY("block_count"), PXL_GGUF_UINT32, NL) != PXL_OK;
    bad |= pxl_gguf_writer_add_uint(w, KEY("feed_forward_length"), PXL_GGUF_UINT32, FF) != PXL_OK;
    bad |= pxl_gguf_writer_add_uint(w, KEY("attention.head_count"), PXL_GGUF_UINT32, NH) != PXL_OK;
    bad |= pxl_gguf_writer_add_uint(w, KEY("attention.head_count_kv"), PXL_GGUF_UINT32, NKV) != PXL_OK;
    bad |= pxl_gguf_writer_add_uint(w, KEY("rope.dimension_count"), PXL_GGUF_UINT32, HD) != PXL_OK;
    bad |= pxl_gguf_writer_add_float(w, KEY("rope.freq_base"), PXL_GGUF_FLOAT32, qwen ? 1000000.0 : 10000.0) != PXL_OK;
    bad |= pxl_gguf_writer_add_float(w, KEY("attention.layer_norm_rms_epsilon"), PXL_GGUF_FLOAT32,
                                     qwen ? 1e-6 : 1e-5) != PXL_OK;
    if (linear) {
        bad |= pxl_gguf_writer_add_string(w, KEY("rope.scaling.type"), "linear", 6) != PXL_OK;
        bad |= pxl_gguf_writer_add_float(w, KEY("rope.scaling.factor"), PXL_GGUF_FLOAT32, 4.0) != PXL_OK;
    }
    if (yarn) {
        bad |= pxl_gguf_writer_add_string(w, KEY("rope.scaling.type"), "yarn", 4) != PXL_OK;
        bad |= pxl_gguf_writer_add_float(w, KEY("rope.scaling.factor"), PXL_GGUF_FLOAT32, 4.0) != PXL_OK;
    }
    bad |= pxl_gguf_writer_add_uint(w, "general.file_type", PXL_GGUF_UINT32, 0) != PXL_OK;
    /* tokenizer */
    const char *model = qwen ? "gpt2" : "llama";
    bad |= pxl_gguf_writer_add_string(w, "tokenizer.ggml.model", model, strlen(model)) != PXL_OK;
    if (qwen) bad |= pxl_gguf_writer_add_string(w, "tokenizer.ggml.pre", "qwen2", 5) != PXL_OK;
    bad |= pxl_gguf_writer_add_string_array(w, "tokenizer.ggml.tokens", (const char *const *)v.tok, NULL,
                                            (uint64_t)v.n) != PXL_OK;
    if (!qwen) bad |= pxl_gguf_writer_add_array(w, "tokenizer.ggml.scores", PXL_GGUF_FLOAT32, v.score, (uint64_t)v.n) != PXL_OK;
    bad |= pxl_gguf_writer_add_array(w, "tokenizer.ggml.token_type", PXL_GGUF_INT32, v.type, (uint64_t)v.n) != PXL_OK;
    if (qwen)
        bad |= pxl_gguf_writer_add_string_array(w, "tokenizer.ggml.merges", (const char *const *)v.merges, NULL,
                                                (uint64_t)v.n_merges) != PXL_OK;
    int32_t bos = qwen ? v.n - 3 : 1, eos = qwen ? v.n - 3 : 2;
    bad |= pxl_gguf_writer_add_uint(w, "tokenizer.ggml.bos_token_id", PXL_GGUF_UINT32, (uint64_t)bos) != PXL_OK;
    bad |= pxl_gguf_writer_add_uint(w, "tokenizer.ggml.eos_token_id", PXL_GGUF_UINT32, (uint64_t)eos) != PXL_OK;
    if (!qwen) bad |= pxl_gguf_writer_add_uint(w, "tokenizer.ggml.unknown_token_id", PXL_GGUF_UINT32, 0) != PXL_OK;
    bad |= pxl_gguf_writer_add_bool(w, "tokenizer.ggml.add_bos_token", !qwen) != PXL_OK;
    /* weights: y = x W^T with W [N, K] (ne = [K, N]) */
    float wk = 1.0f / sqrtf((float)E), wf = 1.0f / sqrtf((float)FF);
    bad |= add_tensor(w, "token_embd.weight", E, v.n, qwen ? 0.3f : 1.0f, 0.0f);
    bad |= add_tensor(w, "output_norm.weight", E, 0, 0.1f, 1.0f);
    if (!qwen) bad |= add_tensor(w, "output.weight", E, v.n, 8.0f * wk, 0.0f); /* qwen2: tied */
    for (int l = 0; l < NL && !bad; l++) {
        char n[64];
#define T(suffix, ne0, ne1, sc, off) (snprintf(n, sizeof n, "blk.%d.%s", l, suffix), add_tensor(w, n, ne0, ne1, sc, off))
        bad |= T("attn_norm.weight", E, 0, 0.1f, 1.0f);
        bad |= T("attn_q.weight", E, NH * HD, 2.0f * wk, 0.0f);
        bad |= T("attn_k.weight", E, NKV * HD, 2.0f * wk, 0.0f);
        bad |= T("attn_v.weight", E, NKV * HD, wk, 0.0f);
        if (qwen) {
            bad |= T("attn_q.bias", NH * HD, 0, 0.2f, 0.0f);
            bad |= T("attn_k.bias", NKV * HD, 0, 0.2f, 0.0f);
            bad |= T("attn_v.bias", NKV * HD, 0, 0.2f, 0.0f);
        }
        bad |= T("attn_output.weight", NH * HD, E, 3.0f * wk, 0.0f);
        bad |= T("ffn_norm.weight", E, 0, 0.1f, 1.0f);
        bad |= T("ffn_gate.weight", E, FF, 2.0f * wk, 0.0f);
        bad |= T("ffn_up.weight", E, FF, 2.0f * wk, 0.0f);
        bad |= T("ffn_down.weight", FF, E, 3.0f * wf, 0.0f);
#undef T
    }
    if ((llama3 || badfreqs) && !bad) {
        /* Llama 3.1's rule: wavelength 2 pi / freq_i against the original
         * context over the high (4) and low (1) frequency factors */
        const double factor = 8.0, lo_ff = 1.0, hi_ff = 4.0, orig = CTX;
        float ff[HD] = {0};
        for (int i = 0; i < HD / 2; i++) {
            double freq = pow(10000.0, -2.0 * i / HD), wavelen = 2.0 * 3.14159265358979323846 / freq;
            if (wavelen < orig / hi_ff) ff[i] = 1.0f;
            else if (wavelen > orig / lo_ff) ff[i] = (float)factor;
            else {
                double smooth = (orig / wavelen - lo_ff) / (hi_ff - lo_ff);
                ff[i] = (float)(1.0 / ((1.0 - smooth) / factor + smooth));
            }
        }
        for (int i = HD / 2; i < HD; i++) ff[i] = 1.0f;
        int64_t ne[1] = {badfreqs ? HD : HD / 2};
        bad |= pxl_gguf_writer_add_tensor(w, "rope_freqs.weight", PXL_GGML_F32, 1, ne, ff,
                                          (size_t)ne[0] * sizeof ff[0]) != PXL_OK;
    }
    if (!bad && pxl_gguf_writer_write(w, argv[2]) != PXL_OK) bad = 1;
    if (bad) fprintf(stderr, "llm_mkmodel: %s\n", pxl_ctx_error(ctx));
    pxl_gguf_writer_free(w);
    for (int i = 0; i < v.n; i++) free(v.tok[i]);
    for (int i = 0; i < v.n_merges; i++) free(v.merges[i]);
    pxl_ctx_free(ctx);
    return bad;
}
