/*
 * Byte-level BPE: the pre-tokenizer (the regexes llama.cpp uses for each
 * tokenizer.ggml.pre, run with PCRE2 in UTF mode with Unicode properties, JIT
 * compiled where available), GPT-2's byte-to-unicode mapping and merges by
 * rank. PCRE2 allocates through the context's hooks.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer_internal.h"

#include "../core/internal.h"

#include <pcre2.h>
#include <string.h>

#define MAX_REGEXES 4

struct pxl_tok_regexes {
    pcre2_general_context *gctx;
    pcre2_code *code[MAX_REGEXES];
    int n;
};

/* The pre-tokenizer regexes (llama.cpp's, for the same names). */
#define RE_CONTRACTIONS "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
static const char re_llama3[] = RE_CONTRACTIONS
    "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char re_qwen2[] = RE_CONTRACTIONS
    "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char re_gpt2[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
static const char *const res_default[] = {"[\\p{P}\\$\\+<=>\\^~\\|]+", re_gpt2, "\\p{N}+", "[0-9][0-9][0-9]"};

static void *gc_alloc(PCRE2_SIZE size, void *user) { return pxl_alloc(user, size); }
static void gc_free(void *ptr, void *user) { pxl_free(user, ptr); }

void pxl_tok_regexes_free(pxl_tokenizer *t) {
    pxl_tok_regexes *r = t->regexes;
    if (!r) return;
    for (int i = 0; i < r->n; i++) pcre2_code_free(r->code[i]);
    pcre2_general_context_free(r->gctx);
    pxl_free(t->ctx, r);
    t->regexes = NULL;
}

pxl_status pxl_tok_regexes_create(pxl_tokenizer *t, const char *pre) {
    pxl_ctx *ctx = t->ctx;
    const char *const *list;
    int n;
    static const char *const one_llama3[] = {re_llama3}, *const one_qwen2[] = {re_qwen2}, *const one_gpt2[] = {re_gpt2};
    if (!strcmp(pre, "llama3") || !strcmp(pre, "llama-v3") || !strcmp(pre, "llama-bpe") || !strcmp(pre, "falcon3") ||
        !strcmp(pre, "pixtral") || !strcmp(pre, "dbrx") || !strcmp(pre, "smaug-bpe") || !strcmp(pre, "chatglm-bpe")) {
        list = one_llama3;
        n = 1;
    } else if (!strcmp(pre, "qwen2") || !strcmp(pre, "deepseek-r1-qwen") || !strcmp(pre, "stablelm2")) {
        list = one_qwen2;
        n = 1;
    } else if (!strcmp(pre, "gpt-2") || !strcmp(pre, "phi-2") || !strcmp(pre, "mpt") || !strcmp(pre, "olmo") ||
               !strcmp(pre, "jina-es") || !strcmp(pre, "jina-de") || !strcmp(pre, "roberta-bpe")) {
        list = one_gpt2;
        n = 1;
    } else if (!strcmp(pre, "default") || !pre[0]) {
        list = res_default;
        n = 4;
    } else {
        return pxl_fail(ctx, PXL_ERR_UNSUPPORTED, "tokenizer: pre-tokenizer \"%s\" is not supported (llama-bpe, qwen2, gpt-2, default)",
                        pre);
    }
    pxl_tok_regexes *r = pxl_calloc(ctx, 1, sizeof *r);
    if (!r) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
    t->regexes = r;
    r->gctx = pcre2_general_context_create(gc_alloc, gc_free, ctx);
    if (!r->gctx) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "tokenizer: out of memory for PCRE2");
    pcre2_compile_context *cc = pcre2_compile_context_create(r->gctx);
    if (!cc) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "tokenizer: out of memory for PCRE2");
    pxl_status st = PXL_OK;
    for (int i = 0; i < n; i++) {
        int err;
        PCRE2_SIZE at;
        r->code[i] = pcre2_compile((PCRE2_SPTR)list[i], PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &err, &at, cc);
        if (!r->code[i]) {
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(err, msg, sizeof msg);
            st = pxl_fail(ctx, err == PCRE2_ERROR_HEAPLIMIT || err == PCRE2_ERROR_NOMEMORY ? PXL_ERR_OUT_OF_MEMORY : PXL_ERR_UNSUPPORTED,
                          "tokenizer: PCRE2 cannot compile the %s pre-tokenizer regex at %zu: %s", pre, (size_t)at,
                          (const char *)msg);
            break;
        }
        r->n = i + 1;
        (void)pcre2_jit_compile(r->code[i], PCRE2_JIT_COMPLETE); /* the interpreter when JIT is unavailable */
    }
    pcre2_compile_context_free(cc);
    return st;
}

/* ---- byte-level mapping ------------------------------------------------------ */

static int printable_byte(unsigned b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); }

/* The bytes that are not printable map, in order, to 256 + k: 0x00-0x20 (k 0-32),
 * 0x7F-0xA0 (k 33-66) and 0xAD (k 67). */
uint32_t pxl_tok_byte_to_unicode(uint8_t b) {
    if (printable_byte(b)) return b;
    if (b <= 0x20) return 256u + b;
    if (b <= 0xA0) return 256u + 33u + (uint32_t)(b - 0x7F);
    return 256u + 67u;
}

int pxl_tok_unicode_to_byte(uint32_t cp) {
    if (cp < 256) return printable_byte(cp) ? (int)cp : -1;
    if (cp < 256 + 33) return (int)(cp - 256);
    if (cp < 256 + 67) return (int)(0x7F + cp - 256 - 33);
    if (cp == 256 + 67) return 0xAD;
    return -1;
}

/* ---- one fragment --------------------------------------------------------------- */

typedef struct span {
    size_t start, len;
} span;

typedef struct spans {
    span *v;
    size_t n, cap;
} spans;

static pxl_status span_push(pxl_ctx *ctx, spans *s, size_t start, size_t len) {
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 32, bytes;
        if (!pxl_mul_size(cap, sizeof(span), &bytes)) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_tokenize: out of memory");
        span *v = pxl_realloc(ctx, s->v, bytes);
        if (!v) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_tokenize: out of memory");
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = (span){start, len};
    return PXL_OK;
}

/* Splits every span with one regex: matches and the gaps between them become spans. */
static pxl_status split(pxl_ctx *ctx, const pcre2_code *re, pcre2_match_data *md, const char *text, const spans *in,
                        spans *out) {
    pxl_status st = PXL_OK;
    out->n = 0;
    for (size_t i = 0; i < in->n && st == PXL_OK; i++) {
        const char *s = text + in->v[i].start;
        size_t n = in->v[i].len, pos = 0, prev = 0;
        while (pos < n && st == PXL_OK) {
            int rc = pcre2_match(re, (PCRE2_SPTR)s, n, pos, PCRE2_NO_UTF_CHECK, md, NULL);
            if (rc == PCRE2_ERROR_NOMATCH) break;
            if (rc < 0) {
                PCRE2_UCHAR msg[160];
                pcre2_get_error_message(rc, msg, sizeof msg);
                return pxl_fail(ctx, rc == PCRE2_ERROR_NOMEMORY ? PXL_ERR_OUT_OF_MEMORY : PXL_ERR_INVALID_ARG,
                                "pxl_tokenize: pre-tokenizer regex failed: %s", (const char *)msg);
            }
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
            size_t ms = ov[0], me = ov[1];
            if (me == ms) { /* an empty match: step one character */
                pos = ms + 1;
                while (pos < n && ((unsigned char)s[pos] & 0xC0) == 0x80) pos++;
                continue;
            }
            if (ms > prev) st = span_push(ctx, out, in->v[i].start + prev, ms - prev);
            if (st == PXL_OK) st = span_push(ctx, out, in->v[i].start + ms, me - ms);
            prev = pos = me;
        }
        if (st == PXL_OK && prev < n) st = span_push(ctx, out, in->v[i].start + prev, n - prev);
    }
    return st;
}

static pxl_status bpe_add_bigram(pxl_tokenizer *t, pxl_tok_work *w, const char *word, int32_t left, int32_t right) {
    if (left < 0 || right < 0) return PXL_OK;
    const pxl_tok_sym *l = &w->syms[left], *r = &w->syms[right];
    int32_t rank = pxl_tok_merge_rank(t, word + l->start, l->n, word + r->start, r->n);
    if (rank == -2) return pxl_fail(t->ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_tokenize: out of memory");
    if (rank < 0) return PXL_OK;
    pxl_tok_bigram b = {left, right, 0.0f, rank, l->n + r->n};
    return pxl_tok_heap_push(t->ctx, w, b);
}

/* BPE merges over one byte-level-encoded pre-token. */
static pxl_status bpe_word(pxl_tokenizer *t, pxl_tok_work *w, const char *word, size_t len, pxl_tok_ids *out) {
    pxl_status st;
    if (len > INT32_MAX) /* symbols are indexed by int32 */
        return pxl_fail(t->ctx, PXL_ERR_INVALID_ARG, "pxl_tokenize: a pre-token of %zu bytes is too long", len);
    if (t->ignore_merges) {
        int32_t id = pxl_tok_lookup(t, word, len);
        if (id >= 0) return pxl_tok_ids_push(t->ctx, out, id);
    }
    if ((st = pxl_tok_merge(t, w, word, len, 1, bpe_add_bigram)) != PXL_OK) return st;
    int32_t k = (int32_t)w->n_syms;
    for (int32_t i = 0; i < k; i++) {
        const pxl_tok_sym *s = &w->syms[i];
        if (s->n == 0) continue;
        int32_t id = pxl_tok_lookup(t, word + s->start, s->n);
        if (id >= 0) {
            if ((st = pxl_tok_ids_push(t->ctx, out, id)) != PXL_OK) return st;
            continue;
        }
        for (uint32_t j = 0; j < s->n; j++) { /* as llama.cpp: single bytes that are tokens, the rest dropped */
            int32_t b = pxl_tok_lookup(t, word + s->start + j, 1);
            if (b >= 0 && (st = pxl_tok_ids_push(t->ctx, out, b)) != PXL_OK) return st;
        }
    }
    return PXL_OK;
}

pxl_status pxl_tok_bpe_fragment(pxl_tokenizer *t, const char *text, size_t len, pxl_tok_ids *out) {
    pxl_ctx *ctx = t->ctx;
    if (len == 0) return PXL_OK;
    /* valid UTF-8 for PCRE2: every malformed byte becomes U+FFFD, as llama.cpp's code point split does */
    size_t cap;
    if (!pxl_mul_size(len, 3, &cap)) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_tokenize: text too long");
    char *clean = pxl_alloc(ctx, cap), *word = NULL;
    spans a = {0}, b = {0};
    pxl_tok_work w;
    memset(&w, 0, sizeof w);
    pcre2_match_data *md = NULL;
    pxl_status st = PXL_OK;
    if (!clean) {
        st = pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_tokenize: out of memory");
        goto done;
    }
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp = pxl_utf8_decode((const unsigned char *)text, len, &i);
        n += pxl_utf8_encode(cp, clean + n);
    }
    md = pcre2_match_data_create(2, t->regexes->gctx);
    if (!md) {
        st = pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_tokenize: out of memory for PCRE2");
        goto done;
    }
    if ((st = span_push(ctx, &a, 0, n)) != PXL_OK) goto done;
    for (int r = 0; r < t->regexes->n; r++) {
        if ((st = split(ctx, t->regexes->code[r], md, clean, &a, &b)) != PXL_OK) goto done;
        spans tmp = a;
        a = b;
        b = tmp;
    }
    /* each pre-token, byte-level encoded (at most 2 bytes per byte), then merged */
    size_t wcap = 0;
    for (size_t i = 0; i < a.n; i++) wcap = a.v[i].len > wcap ? a.v[i].len : wcap;
    word = pxl_alloc(ctx, wcap * 2 + 1);
    if (!word) {
        st = pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_tokenize: out of memory");
        goto done;
    }
    for (size_t i = 0; i < a.n && st == PXL_OK; i++) {
        size_t k = 0;
        for (size_t j = 0; j < a.v[i].len; j++)
            k += pxl_utf8_encode(pxl_tok_byte_to_unicode((uint8_t)clean[a.v[i].start + j]), word + k);
        st = bpe_word(t, &w, word, k, out);
    }
done:
    pcre2_match_data_free(md);
    pxl_tok_work_free(ctx, &w);
    pxl_free(ctx, a.v);
    pxl_free(ctx, b.v);
    pxl_free(ctx, word);
    pxl_free(ctx, clean);
    return st;
}
