/*
 * What the GGUF commands share (generate, and later chat, perplexity, bench
 * llm): opening a GGUF model with its tokenizer on a context, checking a
 * prompt, and the sampling options with llama.cpp's defaults.
 */
#include "cli_gguf.h"

#include <stdlib.h>
#include <string.h>

void cli_gguf_close(cli_gguf *m) {
    pxl_llm_free(m->model);
    pxl_tokenizer_free(m->tok);
    pxl_gguf_free(m->file);
    pxl_ctx_free(m->ctx);
    memset(m, 0, sizeof *m);
}

int cli_gguf_open(const char *cmd, const cli_common *c, const char *path, uint32_t n_ctx, const char *kv_type,
                  cli_gguf *m) {
    memset(m, 0, sizeof *m);
    pxl_llm_options lo = {n_ctx, 0, PXL_F32, 0};
    if (kv_type && !strcmp(kv_type, "f16")) lo.kv_type = PXL_F16;
    else if (kv_type && strcmp(kv_type, "f32") != 0)
        return cli_fail(c->json, 2, cmd, "--kv-type is f32 or f16, not '%s'", kv_type);
    pxl_ctx_options co = cli_ctx_options_unchecked(c);
    pxl_status s = pxl_ctx_create(&co, &m->ctx);
    if (s != PXL_OK) {
        int rc = cli_fail(c->json, 1, cmd, "%s", m->ctx ? pxl_ctx_error(m->ctx) : pxl_status_str(s));
        cli_gguf_close(m);
        return rc;
    }
    double t0 = pxl_time_now();
    s = pxl_gguf_open(m->ctx, path, &m->file);
    if (s == PXL_OK) s = pxl_llm_load(m->ctx, m->file, &lo, &m->model);
    if (s == PXL_OK) s = pxl_tokenizer_from_gguf(m->file, &m->tok);
    if (s != PXL_OK) {
        /* the reader's messages name the file already; the model's and tokenizer's do not */
        const char *e = pxl_ctx_error(m->ctx);
        int named = !strncmp(e, path, strlen(path));
        int rc = named ? cli_fail(c->json, 1, cmd, "%s", e) : cli_fail(c->json, 1, cmd, "%s: %s", path, e);
        cli_gguf_close(m);
        return rc;
    }
    m->load_seconds = pxl_time_now() - t0;
    return 0;
}

size_t cli_utf8_bad_at(const char *s, size_t len) {
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        unsigned c = p[i];
        size_t n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        if (!n || i + n > len || (n == 2 && c < 0xC2)) return i;
        unsigned cp = n == 1 ? c : c & (0x7Fu >> n);
        for (size_t k = 1; k < n; k++) {
            if ((p[i + k] & 0xC0) != 0x80) return i;
            cp = cp << 6 | (p[i + k] & 0x3Fu);
        }
        if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
            return i;
        i += n;
    }
    return len;
}

int cli_gguf_tokenize_prompt(const char *cmd, int json, cli_gguf *m, const char *text, size_t len, int special,
                             int32_t **ids, size_t *n) {
    *ids = NULL;
    *n = 0;
    size_t bad = cli_utf8_bad_at(text, len);
    if (bad < len)
        return cli_fail(json, 1, cmd, "the prompt is not valid UTF-8 (byte %zu, 0x%02x)", bad,
                        (unsigned)(unsigned char)text[bad]);
    pxl_tokenize_options to = {PXL_ADD_SPECIAL_DEFAULT, special};
    if (pxl_tokenize(m->tok, text, len, &to, ids, n) != PXL_OK)
        return cli_fail(json, 1, cmd, "tokenizing the prompt: %s", pxl_ctx_error(m->ctx));
    if (*n == 0) { /* an empty prompt: generate from BOS */
        int32_t bos = pxl_tokenizer_bos(m->tok);
        if (bos < 0) return cli_fail(json, 1, cmd, "the prompt is empty and the model has no BOS token to start from");
        *ids = pxl_alloc(m->ctx, sizeof **ids);
        if (!*ids) return cli_fail(json, 1, cmd, "out of memory");
        (*ids)[0] = bos;
        *n = 1;
    }
    const pxl_llm_info *I = pxl_llm_get_info(m->model);
    if ((int64_t)*n >= I->n_ctx) {
        int rc = cli_fail(json, 1, cmd,
                          "the prompt is %zu tokens; the context holds %lld and needs room for the reply "
                          "(raise --ctx, up to %lld)",
                          *n, (long long)I->n_ctx, (long long)I->n_ctx_train);
        pxl_free(m->ctx, *ids);
        *ids = NULL;
        return rc;
    }
    return 0;
}
