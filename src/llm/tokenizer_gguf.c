/*
 * pxl_tokenizer_from_gguf: the tokenizer.ggml.* keys of a GGUF file, read
 * into a pxl_tokenizer_vocab (with llama.cpp's defaults where a key is
 * absent) and handed to pxl_tokenizer_create.
 */
#include "tokenizer_internal.h"

#include "../core/internal.h"

#include <string.h>

#define KEY(name) "tokenizer.ggml." name

static int str_eq(const char *s, size_t n, const char *lit) { return n == strlen(lit) && memcmp(s, lit, n) == 0; }

/* An array key of the expected element type: its index and length; -1 when absent. */
static pxl_status find_array(const pxl_gguf *g, pxl_ctx *ctx, const char *key, pxl_gguf_type want, pxl_gguf_type alt,
                             int64_t *idx, uint64_t *n) {
    *idx = pxl_gguf_find_key(g, key);
    *n = 0;
    if (*idx < 0) return PXL_OK;
    pxl_gguf_type et;
    if (pxl_gguf_kv_type(g, (size_t)*idx) != PXL_GGUF_ARRAY)
        return pxl_fail(ctx, PXL_ERR_FORMAT, "tokenizer: %s is a %s, not an array", key,
                        pxl_gguf_type_name(pxl_gguf_kv_type(g, (size_t)*idx)));
    pxl_status st = pxl_gguf_kv_array(g, (size_t)*idx, &et, n);
    if (st != PXL_OK) return st;
    if (et != want && et != alt)
        return pxl_fail(ctx, PXL_ERR_FORMAT, "tokenizer: %s is an array of %s, not of %s", key, pxl_gguf_type_name(et),
                        pxl_gguf_type_name(want));
    return PXL_OK;
}

static pxl_status opt_id(const pxl_gguf *g, pxl_ctx *ctx, const char *key, uint64_t n_tokens, int32_t *out) {
    int64_t i = pxl_gguf_find_key(g, key);
    if (i < 0) return PXL_OK; /* stays PXL_TOKEN_ID_DEFAULT */
    uint64_t v;
    pxl_status st = pxl_gguf_kv_uint(g, (size_t)i, &v);
    if (st != PXL_OK) return st;
    if (v >= n_tokens)
        return pxl_fail(ctx, PXL_ERR_FORMAT, "tokenizer: %s = %llu is out of range (%llu tokens)", key, (unsigned long long)v,
                        (unsigned long long)n_tokens);
    *out = (int32_t)v;
    return PXL_OK;
}

static pxl_status opt_bool(const pxl_gguf *g, const char *key, int *out) {
    int64_t i = pxl_gguf_find_key(g, key);
    if (i < 0) return PXL_OK;
    uint64_t v;
    pxl_status st = pxl_gguf_kv_uint(g, (size_t)i, &v);
    if (st == PXL_OK) *out = v != 0;
    return st;
}

static const void *raw32(const pxl_gguf *g, pxl_ctx *ctx, int64_t idx, const char *key, pxl_status *st) {
    const void *data;
    size_t es;
    *st = pxl_gguf_arr_data(g, (size_t)idx, &data, &es);
    if (*st != PXL_OK) return NULL;
    if (es != 4) {
        *st = pxl_fail(ctx, PXL_ERR_FORMAT, "tokenizer: %s has %zu-byte elements", key, es);
        return NULL;
    }
    return data;
}

pxl_status pxl_tokenizer_from_gguf(const pxl_gguf *g, pxl_tokenizer **out) {
    if (!g) return PXL_ERR_INVALID_ARG;
    pxl_ctx *ctx = pxl_gguf_ctx(g);
    PXL_REQUIRE_CTX(ctx);
    PXL_REQUIRE(ctx, "pxl_tokenizer_from_gguf", out);
    pxl_tokenizer_vocab v = pxl_tokenizer_vocab_default();
    pxl_status st;

    int64_t mi = pxl_gguf_find_key(g, KEY("model"));
    if (mi < 0) return pxl_fail(ctx, PXL_ERR_FORMAT, "tokenizer: the file has no " KEY("model"));
    const char *model;
    size_t model_len;
    if ((st = pxl_gguf_kv_string(g, (size_t)mi, &model, &model_len)) != PXL_OK) return st;
    if (str_eq(model, model_len, "llama")) v.model = PXL_TOKENIZER_SPM;
    else if (str_eq(model, model_len, "gpt2")) v.model = PXL_TOKENIZER_BPE;
    else
        return pxl_fail(ctx, PXL_ERR_UNSUPPORTED, "tokenizer: model \"%.*s\" is not supported (llama, gpt2)",
                        (int)(model_len > 64 ? 64 : model_len), model);

    char pre[64] = "default";
    int64_t pi = pxl_gguf_find_key(g, KEY("pre"));
    if (pi >= 0) {
        const char *s;
        size_t n;
        if ((st = pxl_gguf_kv_string(g, (size_t)pi, &s, &n)) != PXL_OK) return st;
        if (n >= sizeof pre) return pxl_fail(ctx, PXL_ERR_UNSUPPORTED, "tokenizer: pre-tokenizer \"%.*s...\" is not supported", 48, s);
        memcpy(pre, s, n);
        pre[n] = 0;
    }
    v.pre = pre;

    int64_t ti, si, yi, gi;
    uint64_t nt, ns, ny, ng;
    if ((st = find_array(g, ctx, KEY("tokens"), PXL_GGUF_STRING, PXL_GGUF_STRING, &ti, &nt)) != PXL_OK) return st;
    if (ti < 0) return pxl_fail(ctx, PXL_ERR_FORMAT, "tokenizer: the file has no " KEY("tokens"));
    if (nt == 0 || nt > (uint64_t)INT32_MAX - 1)
        return pxl_fail(ctx, PXL_ERR_FORMAT, "tokenizer: " KEY("tokens") " has %llu entries", (unsigned long long)nt);
    if ((st = find_array(g, ctx, KEY("scores"), PXL_GGUF_FLOAT32, PXL_GGUF_INT32, &si, &ns)) != PXL_OK) return st;
    if (si >= 0 && ns != nt)
        return pxl_fail(ctx, PXL_ERR_FORMAT, "tokenizer: " KEY("scores") " has %llu entries for %llu tokens",
                        (unsigned long long)ns, (unsigned long long)nt);
    if ((st = find_array(g, ctx, KEY("token_type"), PXL_GGUF_INT32, PXL_GGUF_INT32, &yi, &ny)) != PXL_OK) return st;
    if (yi >= 0 && ny != nt)
        return pxl_fail(ctx, PXL_ERR_FORMAT, "tokenizer: " KEY("token_type") " has %llu entries for %llu tokens",
                        (unsigned long long)ny, (unsigned long long)nt);
    if ((st = find_array(g, ctx, KEY("merges"), PXL_GGUF_STRING, PXL_GGUF_STRING, &gi, &ng)) != PXL_OK) return st;
    if (v.model == PXL_TOKENIZER_BPE && gi < 0) return pxl_fail(ctx, PXL_ERR_FORMAT, "tokenizer: a gpt2 model without " KEY("merges"));
    if (ng > (uint64_t)INT32_MAX - 1) return pxl_fail(ctx, PXL_ERR_FORMAT, "tokenizer: too many merges");

    if ((st = opt_id(g, ctx, KEY("bos_token_id"), nt, &v.bos_id)) != PXL_OK ||
        (st = opt_id(g, ctx, KEY("eos_token_id"), nt, &v.eos_id)) != PXL_OK ||
        (st = opt_id(g, ctx, KEY("eot_token_id"), nt, &v.eot_id)) != PXL_OK ||
        (st = opt_id(g, ctx, KEY("unknown_token_id"), nt, &v.unk_id)) != PXL_OK ||
        (st = opt_id(g, ctx, KEY("padding_token_id"), nt, &v.pad_id)) != PXL_OK ||
        (st = opt_bool(g, KEY("add_bos_token"), &v.add_bos)) != PXL_OK ||
        (st = opt_bool(g, KEY("add_eos_token"), &v.add_eos)) != PXL_OK ||
        (st = opt_bool(g, KEY("add_space_prefix"), &v.add_space_prefix)) != PXL_OK)
        return st;

    size_t n = (size_t)nt, m = (size_t)ng;
    const char **texts = pxl_calloc(ctx, n, sizeof *texts);
    size_t *lens = pxl_calloc(ctx, n, sizeof *lens);
    float *scores = si >= 0 ? pxl_calloc(ctx, n, sizeof *scores) : NULL;
    int32_t *types = yi >= 0 ? pxl_calloc(ctx, n, sizeof *types) : NULL;
    const char **merges = m ? pxl_calloc(ctx, m, sizeof *merges) : NULL;
    size_t *mlens = m ? pxl_calloc(ctx, m, sizeof *mlens) : NULL;
    if (!texts || !lens || (si >= 0 && !scores) || (yi >= 0 && !types) || (m && (!merges || !mlens))) {
        st = pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "tokenizer: out of memory for %zu tokens", n);
        goto done;
    }
    for (size_t i = 0; i < n && st == PXL_OK; i++) st = pxl_gguf_arr_string(g, (size_t)ti, i, &texts[i], &lens[i]);
    for (size_t i = 0; i < m && st == PXL_OK; i++) st = pxl_gguf_arr_string(g, (size_t)gi, i, &merges[i], &mlens[i]);
    if (st != PXL_OK) goto done;
    if (si >= 0) {
        pxl_gguf_type et;
        uint64_t cnt;
        const unsigned char *d = raw32(g, ctx, si, KEY("scores"), &st);
        if (st == PXL_OK) st = pxl_gguf_kv_array(g, (size_t)si, &et, &cnt);
        if (st != PXL_OK) goto done;
        for (size_t i = 0; i < n; i++) {
            uint32_t u = (uint32_t)d[4 * i] | (uint32_t)d[4 * i + 1] << 8 | (uint32_t)d[4 * i + 2] << 16 | (uint32_t)d[4 * i + 3] << 24;
            if (et == PXL_GGUF_FLOAT32) memcpy(&scores[i], &u, 4);
            else scores[i] = (float)(int32_t)u;
        }
    }
    if (yi >= 0) {
        const unsigned char *d = raw32(g, ctx, yi, KEY("token_type"), &st);
        if (st != PXL_OK) goto done;
        for (size_t i = 0; i < n; i++) {
            uint32_t u = (uint32_t)d[4 * i] | (uint32_t)d[4 * i + 1] << 8 | (uint32_t)d[4 * i + 2] << 16 | (uint32_t)d[4 * i + 3] << 24;
            types[i] = (int32_t)u;
        }
    }
    v.n_tokens = n;
    v.tokens = texts;
    v.token_lens = lens;
    v.scores = scores;
    v.types = types;
    v.n_merges = m;
    v.merges = merges;
    v.merge_lens = mlens;
    st = pxl_tokenizer_create(ctx, &v, out);
done:
    pxl_free(ctx, texts);
    pxl_free(ctx, lens);
    pxl_free(ctx, scores);
    pxl_free(ctx, types);
    pxl_free(ctx, merges);
    pxl_free(ctx, mlens);
    return st;
}
