/*
 * Tokenizers: the vocabulary, SentencePiece-style tokenization, special-token
 * partitioning, pieces and the streaming detokenizer. Byte-level BPE and its
 * PCRE2 pre-tokenizer are in tokenizer_bpe.c, reading GGUF metadata in
 * tokenizer_gguf.c. The algorithms follow llama.cpp (src/llama-vocab.cpp) so
 * that ids match its vocab test files exactly.
 */
#include "tokenizer_internal.h"

#include "../core/internal.h"

#include <stdio.h>
#include <string.h>

/* ---- small helpers ------------------------------------------------------- */

uint64_t pxl_tok_hash(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

size_t pxl_tok_utf8_len(unsigned char lead) {
    static const uint8_t lookup[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return lookup[lead >> 4];
}

pxl_status pxl_tok_ids_push(pxl_ctx *ctx, pxl_tok_ids *ids, int32_t id) {
    if (ids->n == ids->cap) {
        size_t cap = ids->cap ? ids->cap * 2 : 64, bytes;
        if (!pxl_mul_size(cap, sizeof(int32_t), &bytes)) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_tokenize: too many tokens");
        int32_t *v = pxl_realloc(ctx, ids->v, bytes);
        if (!v) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_tokenize: out of memory");
        ids->v = v;
        ids->cap = cap;
    }
    ids->v[ids->n++] = id;
    return PXL_OK;
}

/* ---- the string maps ----------------------------------------------------- */

static pxl_status map_init(pxl_ctx *ctx, pxl_tok_map *m, size_t n) {
    size_t cap = 16;
    while (cap < n * 2 + 1) {
        if (cap > ((size_t)-1) / 4) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "tokenizer: vocabulary too large");
        cap *= 2;
    }
    m->slots = pxl_calloc(ctx, cap, sizeof(uint32_t));
    if (!m->slots) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "tokenizer: out of memory for %zu entries", n);
    m->cap = cap;
    return PXL_OK;
}

/* Finds the slot of a key: texts(i) gives entry i's bytes. */
typedef const char *(*map_text_fn)(const pxl_tokenizer *t, uint32_t i, size_t *len);

static const char *token_text_of(const pxl_tokenizer *t, uint32_t i, size_t *len) {
    *len = t->tokens[i].len;
    return t->tokens[i].text;
}
static const char *merge_text_of(const pxl_tokenizer *t, uint32_t i, size_t *len) {
    *len = t->merge_len[i];
    return t->merge_text[i];
}

static size_t map_slot(const pxl_tokenizer *t, const pxl_tok_map *m, map_text_fn fn, const char *s, size_t n) {
    size_t mask = m->cap - 1, i = (size_t)pxl_tok_hash(s, n) & mask;
    for (;;) {
        uint32_t v = m->slots[i];
        if (v == 0) return i;
        size_t len;
        const char *text = fn(t, v - 1, &len);
        if (len == n && memcmp(text, s, n) == 0) return i;
        i = (i + 1) & mask;
    }
}

int32_t pxl_tok_lookup(const pxl_tokenizer *t, const char *s, size_t n) {
    uint32_t v = t->token_map.slots[map_slot(t, &t->token_map, token_text_of, s, n)];
    return v ? (int32_t)(v - 1) : -1;
}

int32_t pxl_tok_merge_rank(const pxl_tokenizer *t, const char *l, size_t ln, const char *r, size_t rn) {
    if (!t->n_merges) return -1;
    char stack[256];
    size_t n = ln + 1 + rn;
    char *key = n <= sizeof stack ? stack : pxl_alloc(t->ctx, n);
    if (!key) return -2; /* out of memory: the caller fails, never "no merge" */
    memcpy(key, l, ln);
    key[ln] = ' ';
    memcpy(key + ln + 1, r, rn);
    uint32_t v = t->merge_map.slots[map_slot(t, &t->merge_map, merge_text_of, key, n)];
    if (key != stack) pxl_free(t->ctx, key);
    return v ? (int32_t)(v - 1) : -1;
}

/* ---- the merge work area ------------------------------------------------- */

pxl_status pxl_tok_work_syms(pxl_ctx *ctx, pxl_tok_work *w, size_t n) {
    w->n_syms = 0;
    w->n_heap = 0;
    if (n <= w->cap_syms) return PXL_OK;
    size_t bytes;
    if (!pxl_mul_size(n, sizeof(pxl_tok_sym), &bytes)) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_tokenize: text too long");
    pxl_tok_sym *s = pxl_realloc(ctx, w->syms, bytes);
    if (!s) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_tokenize: out of memory");
    w->syms = s;
    w->cap_syms = n;
    return PXL_OK;
}

/* a before b in the queue? */
static int bigram_first(const pxl_tok_work *w, const pxl_tok_bigram *a, const pxl_tok_bigram *b) {
    if (w->by_rank) {
        if (a->rank != b->rank) return a->rank < b->rank;
    } else {
        if (a->score != b->score) return a->score > b->score;
    }
    return a->left < b->left;
}

pxl_status pxl_tok_heap_push(pxl_ctx *ctx, pxl_tok_work *w, pxl_tok_bigram b) {
    if (w->n_heap == w->cap_heap) {
        size_t cap = w->cap_heap ? w->cap_heap * 2 : 64, bytes;
        if (!pxl_mul_size(cap, sizeof(pxl_tok_bigram), &bytes)) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_tokenize: text too long");
        pxl_tok_bigram *h = pxl_realloc(ctx, w->heap, bytes);
        if (!h) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_tokenize: out of memory");
        w->heap = h;
        w->cap_heap = cap;
    }
    size_t i = w->n_heap++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!bigram_first(w, &b, &w->heap[p])) break;
        w->heap[i] = w->heap[p];
        i = p;
    }
    w->heap[i] = b;
    return PXL_OK;
}

pxl_tok_bigram pxl_tok_heap_pop(pxl_tok_work *w) {
    pxl_tok_bigram top = w->heap[0], last = w->heap[--w->n_heap];
    size_t i = 0, n = w->n_heap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && bigram_first(w, &w->heap[c + 1], &w->heap[c])) c++;
        if (!bigram_first(w, &w->heap[c], &last)) break;
        w->heap[i] = w->heap[c];
        i = c;
    }
    if (n) w->heap[i] = last;
    return top;
}

pxl_status pxl_tok_merge(pxl_tokenizer *t, pxl_tok_work *w, const char *text, size_t len, int by_rank,
                         pxl_tok_bigram_fn try_bigram) {
    pxl_status st;
    if ((st = pxl_tok_work_syms(t->ctx, w, len)) != PXL_OK) return st;
    w->by_rank = by_rank;
    int32_t k = 0;
    for (size_t off = 0; off < len;) {
        size_t n = pxl_tok_utf8_len((unsigned char)text[off]);
        if (n > len - off) n = len - off;
        pxl_tok_sym *s = &w->syms[k];
        s->start = (uint32_t)off;
        s->n = (uint32_t)n;
        s->prev = k - 1;
        off += n;
        s->next = off == len ? -1 : k + 1;
        k++;
    }
    w->n_syms = (size_t)k;
    for (int32_t i = 1; i < k; i++)
        if ((st = try_bigram(t, w, text, i - 1, i)) != PXL_OK) return st;
    while (w->n_heap) {
        pxl_tok_bigram b = pxl_tok_heap_pop(w);
        pxl_tok_sym *l = &w->syms[b.left], *r = &w->syms[b.right];
        if (l->n == 0 || r->n == 0 || l->n + r->n != b.size) continue;
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) w->syms[r->next].prev = b.left;
        if ((st = try_bigram(t, w, text, l->prev, b.left)) != PXL_OK) return st;
        if ((st = try_bigram(t, w, text, b.left, w->syms[b.left].next)) != PXL_OK) return st;
    }
    return PXL_OK;
}

void pxl_tok_work_free(pxl_ctx *ctx, pxl_tok_work *w) {
    pxl_free(ctx, w->syms);
    pxl_free(ctx, w->heap);
}

/* ---- creation ------------------------------------------------------------ */

pxl_tokenizer_vocab pxl_tokenizer_vocab_default(void) {
    pxl_tokenizer_vocab v;
    memset(&v, 0, sizeof v);
    v.model = PXL_TOKENIZER_SPM;
    v.bos_id = v.eos_id = v.unk_id = v.pad_id = v.eot_id = PXL_TOKEN_ID_DEFAULT;
    v.add_bos = v.add_eos = v.add_space_prefix = -1;
    return v;
}

void pxl_tokenizer_free(pxl_tokenizer *t) {
    if (!t) return;
    pxl_ctx *ctx = t->ctx;
    pxl_tok_regexes_free(t);
    pxl_free(ctx, t->arena);
    pxl_free(ctx, t->tokens);
    pxl_free(ctx, t->token_map.slots);
    pxl_free(ctx, t->merge_text);
    pxl_free(ctx, t->merge_len);
    pxl_free(ctx, t->merge_map.slots);
    pxl_free(ctx, t->special);
    pxl_free(ctx, t);
}

static size_t text_len(const char *const *texts, const size_t *lens, size_t i) {
    return lens ? lens[i] : strlen(texts[i]);
}

static int is_special_type(uint8_t type) {
    return type == PXL_TOKEN_CONTROL || type == PXL_TOKEN_USER_DEFINED || type == PXL_TOKEN_UNKNOWN;
}

/* Special ids sorted longest text first (ties: lower id first), an insertion-free merge sort. */
static void sort_special(const pxl_tokenizer *t, int32_t *a, int32_t *tmp, size_t n) {
    if (n < 2) return;
    size_t h = n / 2;
    sort_special(t, a, tmp, h);
    sort_special(t, a + h, tmp, n - h);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n) {
        if (t->tokens[a[j]].len > t->tokens[a[i]].len) tmp[k++] = a[j++];
        else tmp[k++] = a[i++];
    }
    while (i < h) tmp[k++] = a[i++];
    while (j < n) tmp[k++] = a[j++];
    memcpy(a, tmp, n * sizeof *a);
}

static pxl_status resolve_id(pxl_ctx *ctx, const char *name, int32_t given, int32_t dflt, size_t n, int32_t *out) {
    if (given == PXL_TOKEN_ID_DEFAULT) {
        *out = (dflt >= 0 && (size_t)dflt < n) ? dflt : -1; /* llama.cpp disables an out-of-range default */
        return PXL_OK;
    }
    if (given < -1 || (given >= 0 && (size_t)given >= n))
        return pxl_fail(ctx, PXL_ERR_FORMAT, "tokenizer: %s %d is out of range (%zu tokens)", name, (int)given, n);
    *out = given;
    return PXL_OK;
}

static const char *const eot_texts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                                        "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]",
                                        ("<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>"),
                                        "<end_of_utterance>"};

pxl_status pxl_tokenizer_create(pxl_ctx *ctx, const pxl_tokenizer_vocab *v, pxl_tokenizer **out) {
    PXL_REQUIRE_CTX(ctx);
    PXL_REQUIRE(ctx, "pxl_tokenizer_create", v);
    PXL_REQUIRE(ctx, "pxl_tokenizer_create", out);
    if (v->model != PXL_TOKENIZER_SPM && v->model != PXL_TOKENIZER_BPE)
        return pxl_fail(ctx, PXL_ERR_UNSUPPORTED, "tokenizer: unknown model %d", (int)v->model);
    if (v->n_tokens == 0 || !v->tokens) return pxl_fail(ctx, PXL_ERR_FORMAT, "tokenizer: the vocabulary is empty");
    if (v->n_tokens > (size_t)INT32_MAX - 1) return pxl_fail(ctx, PXL_ERR_FORMAT, "tokenizer: %zu tokens is too many", v->n_tokens);
    if (v->n_merges && !v->merges) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "tokenizer: n_merges without merges");
    if (v->n_merges > (size_t)INT32_MAX - 1) return pxl_fail(ctx, PXL_ERR_FORMAT, "tokenizer: %zu merges is too many", v->n_merges);

    /* sizes first: every text, checked */
    size_t arena = 0;
    for (size_t i = 0; i < v->n_tokens; i++) {
        if (!v->tokens[i]) return pxl_fail(ctx, PXL_ERR_FORMAT, "tokenizer: token %zu has no text", i);
        size_t n = text_len(v->tokens, v->token_lens, i);
        if (n == 0) n = 32; /* an empty token becomes "[EMPTY_<i>]" as in llama.cpp */
        if (n > UINT32_MAX - 1 || !pxl_add_size(arena, n + 1, &arena))
            return pxl_fail(ctx, PXL_ERR_FORMAT, "tokenizer: token %zu is too long", i);
    }
    for (size_t i = 0; i < v->n_merges; i++) {
        if (!v->merges[i]) return pxl_fail(ctx, PXL_ERR_FORMAT, "tokenizer: merge %zu has no text", i);
        size_t n = text_len(v->merges, v->merge_lens, i);
        const char *sp = n > 1 ? memchr(v->merges[i] + 1, ' ', n - 1) : NULL;
        if (!sp)
            return pxl_fail(ctx, PXL_ERR_FORMAT, "tokenizer: merge %zu (\"%.*s\") is not two tokens separated by a space", i,
                            (int)(n > 64 ? 64 : n), v->merges[i]);
        if (n > UINT32_MAX - 1 || !pxl_add_size(arena, n + 1, &arena))
            return pxl_fail(ctx, PXL_ERR_FORMAT, "tokenizer: merge %zu is too long", i);
    }

    pxl_tokenizer *t = pxl_calloc(ctx, 1, sizeof *t);
    if (!t) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
    t->ctx = ctx;
    t->model = v->model;
    t->n_tokens = v->n_tokens;
    t->n_merges = v->n_merges;
    pxl_status st = PXL_ERR_OUT_OF_MEMORY;
    t->arena = pxl_alloc(ctx, arena ? arena : 1);
    t->tokens = pxl_calloc(ctx, v->n_tokens, sizeof *t->tokens);
    if (v->n_merges) {
        t->merge_text = pxl_calloc(ctx, v->n_merges, sizeof *t->merge_text);
        t->merge_len = pxl_calloc(ctx, v->n_merges, sizeof *t->merge_len);
    }
    if (!t->arena || !t->tokens || (v->n_merges && (!t->merge_text || !t->merge_len))) {
        pxl_fail(ctx, st, "tokenizer: out of memory for %zu tokens", v->n_tokens);
        goto fail;
    }
    if ((st = map_init(ctx, &t->token_map, v->n_tokens)) != PXL_OK) goto fail;
    if (v->n_merges && (st = map_init(ctx, &t->merge_map, v->n_merges)) != PXL_OK) goto fail;

    char *p = t->arena;
    for (size_t i = 0; i < v->n_tokens; i++) {
        size_t n = text_len(v->tokens, v->token_lens, i);
        pxl_tok_entry *e = &t->tokens[i];
        if (n == 0) {
            int w = snprintf(p, 32, "[EMPTY_%zu]", i);
            n = (size_t)(w > 0 ? w : 0);
        } else {
            memcpy(p, v->tokens[i], n);
        }
        p[n] = 0;
        e->text = p;
        e->len = (uint32_t)n;
        p += n + 1;
        e->score = v->scores ? v->scores[i] : 0.0f;
        int32_t type = v->types ? v->types[i] : PXL_TOKEN_NORMAL;
        e->type = (uint8_t)((type >= 0 && type <= PXL_TOKEN_BYTE) ? type : PXL_TOKEN_UNDEFINED);
        t->token_map.slots[map_slot(t, &t->token_map, token_text_of, e->text, n)] = (uint32_t)i + 1;
    }
    for (size_t i = 0; i < v->n_merges; i++) {
        size_t n = text_len(v->merges, v->merge_lens, i);
        memcpy(p, v->merges[i], n);
        p[n] = 0;
        t->merge_text[i] = p;
        t->merge_len[i] = (uint32_t)n;
        p += n + 1;
        size_t slot = map_slot(t, &t->merge_map, merge_text_of, t->merge_text[i], n);
        if (!t->merge_map.slots[slot]) t->merge_map.slots[slot] = (uint32_t)i + 1; /* the first rank wins */
    }

    /* special ids and flags, with llama.cpp's defaults */
    int spm = v->model == PXL_TOKENIZER_SPM;
    if ((st = resolve_id(ctx, "bos_token_id", v->bos_id, spm ? 1 : -1, v->n_tokens, &t->bos)) != PXL_OK ||
        (st = resolve_id(ctx, "eos_token_id", v->eos_id, spm ? 2 : -1, v->n_tokens, &t->eos)) != PXL_OK ||
        (st = resolve_id(ctx, "unknown_token_id", v->unk_id, spm ? 0 : -1, v->n_tokens, &t->unk)) != PXL_OK ||
        (st = resolve_id(ctx, "padding_token_id", v->pad_id, -1, v->n_tokens, &t->pad)) != PXL_OK ||
        (st = resolve_id(ctx, "eot_token_id", v->eot_id, -1, v->n_tokens, &t->eot)) != PXL_OK)
        goto fail;
    int llama3 = 0;
    if (!spm) {
        const char *pre = v->pre ? v->pre : "default";
        llama3 = !strcmp(pre, "llama3") || !strcmp(pre, "llama-v3") || !strcmp(pre, "llama-bpe") ||
                 !strcmp(pre, "falcon3") || !strcmp(pre, "pixtral");
        t->ignore_merges = llama3;
        if ((st = pxl_tok_regexes_create(t, pre)) != PXL_OK) goto fail;
    }
    t->add_bos = v->add_bos >= 0 ? (v->add_bos != 0) : (spm || llama3);
    t->add_eos = v->add_eos >= 0 ? (v->add_eos != 0) : 0;
    t->add_space_prefix = spm ? (v->add_space_prefix >= 0 ? (v->add_space_prefix != 0) : 1) : 0;
    if (t->eot < 0) {
        for (size_t k = 0; k < sizeof eot_texts / sizeof *eot_texts && t->eot < 0; k++)
            t->eot = pxl_tok_lookup(t, eot_texts[k], strlen(eot_texts[k]));
    }
    t->eom = pxl_tok_lookup(t, "<|eom_id|>", 10);
    /* control-looking tokens become control, as in llama.cpp */
    if (t->eot >= 0) t->tokens[t->eot].type = PXL_TOKEN_CONTROL;
    if (t->eom >= 0) t->tokens[t->eom].type = PXL_TOKEN_CONTROL;

    /* SPM byte fallback */
    for (int b = 0; b < 256; b++) {
        char buf[8];
        snprintf(buf, sizeof buf, "<0x%02X>", b);
        int32_t id = pxl_tok_lookup(t, buf, 6);
        if (id < 0) {
            char c = (char)b;
            id = pxl_tok_lookup(t, &c, 1);
        }
        t->byte_ids[b] = id;
    }

    /* special tokens, longest first */
    for (size_t i = 0; i < t->n_tokens; i++)
        if (is_special_type(t->tokens[i].type)) t->n_special++;
    if (t->n_special) {
        t->special = pxl_calloc(ctx, t->n_special, sizeof(int32_t));
        int32_t *tmp = pxl_calloc(ctx, t->n_special, sizeof(int32_t));
        if (!t->special || !tmp) {
            pxl_free(ctx, tmp);
            st = pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
            goto fail;
        }
        size_t k = 0;
        for (size_t i = 0; i < t->n_tokens; i++)
            if (is_special_type(t->tokens[i].type)) t->special[k++] = (int32_t)i;
        sort_special(t, t->special, tmp, t->n_special);
        pxl_free(ctx, tmp);
    }
    *out = t;
    return PXL_OK;
fail:
    pxl_tokenizer_free(t);
    return st;
}

/* ---- getters ------------------------------------------------------------- */

pxl_tokenizer_model pxl_tokenizer_model_type(const pxl_tokenizer *t) { return t ? t->model : (pxl_tokenizer_model)0; }
size_t pxl_tokenizer_n_vocab(const pxl_tokenizer *t) { return t ? t->n_tokens : 0; }
int32_t pxl_tokenizer_bos(const pxl_tokenizer *t) { return t ? t->bos : -1; }
int32_t pxl_tokenizer_eos(const pxl_tokenizer *t) { return t ? t->eos : -1; }
int32_t pxl_tokenizer_eot(const pxl_tokenizer *t) { return t ? t->eot : -1; }
int32_t pxl_tokenizer_unk(const pxl_tokenizer *t) { return t ? t->unk : -1; }
int32_t pxl_tokenizer_pad(const pxl_tokenizer *t) { return t ? t->pad : -1; }
int pxl_tokenizer_add_bos(const pxl_tokenizer *t) { return t ? t->add_bos : 0; }
int pxl_tokenizer_add_eos(const pxl_tokenizer *t) { return t ? t->add_eos : 0; }

static int in_range(const pxl_tokenizer *t, int32_t id) { return t && id >= 0 && (size_t)id < t->n_tokens; }

const char *pxl_tokenizer_token_text(const pxl_tokenizer *t, int32_t id, size_t *len) {
    if (!in_range(t, id)) {
        if (len) *len = 0;
        return NULL;
    }
    if (len) *len = t->tokens[id].len;
    return t->tokens[id].text;
}

pxl_token_type pxl_tokenizer_token_type(const pxl_tokenizer *t, int32_t id) {
    return in_range(t, id) ? (pxl_token_type)t->tokens[id].type : PXL_TOKEN_UNDEFINED;
}

int pxl_tokenizer_is_control(const pxl_tokenizer *t, int32_t id) {
    return in_range(t, id) && t->tokens[id].type == PXL_TOKEN_CONTROL;
}

int pxl_tokenizer_is_eog(const pxl_tokenizer *t, int32_t id) {
    return in_range(t, id) && (id == t->eos || id == t->eot || id == t->eom);
}

int32_t pxl_tokenizer_find(const pxl_tokenizer *t, const char *text, size_t len) {
    if (!t || (!text && len)) return -1;
    return pxl_tok_lookup(t, text ? text : "", len);
}

/* ---- SentencePiece style ------------------------------------------------- */

static pxl_status spm_try_bigram(pxl_tokenizer *t, pxl_tok_work *w, const char *text, int32_t left, int32_t right) {
    if (left < 0 || right < 0) return PXL_OK;
    const pxl_tok_sym *l = &w->syms[left], *r = &w->syms[right];
    uint32_t size = l->n + r->n;
    int32_t id = pxl_tok_lookup(t, text + l->start, size);
    if (id < 0) return PXL_OK;
    pxl_tok_bigram b = {left, right, t->tokens[id].score, 0, size};
    return pxl_tok_heap_push(t->ctx, w, b);
}

/* One raw fragment, spaces already escaped. */
static pxl_status spm_fragment(pxl_tokenizer *t, pxl_tok_work *w, const char *text, size_t len, pxl_tok_ids *out) {
    pxl_status st;
    if (len == 0) return PXL_OK;
    if (len > INT32_MAX) return pxl_fail(t->ctx, PXL_ERR_INVALID_ARG, "pxl_tokenize: fragment of %zu bytes is too long", len);
    if ((st = pxl_tok_merge(t, w, text, len, 0, spm_try_bigram)) != PXL_OK) return st;
    for (int32_t i = 0; i != -1; i = w->syms[i].next) {
        const pxl_tok_sym *s = &w->syms[i];
        int32_t id = pxl_tok_lookup(t, text + s->start, s->n);
        if (id >= 0) {
            if ((st = pxl_tok_ids_push(t->ctx, out, id)) != PXL_OK) return st;
            continue;
        }
        /* byte fallback: every byte as <0xNN>, else one unknown token */
        int all = 1;
        for (uint32_t j = 0; j < s->n; j++) all &= t->byte_ids[(unsigned char)text[s->start + j]] >= 0;
        if (all) {
            for (uint32_t j = 0; j < s->n; j++)
                if ((st = pxl_tok_ids_push(t->ctx, out, t->byte_ids[(unsigned char)text[s->start + j]])) != PXL_OK) return st;
        } else if (t->unk >= 0) {
            if ((st = pxl_tok_ids_push(t->ctx, out, t->unk)) != PXL_OK) return st;
        }
    }
    return PXL_OK;
}

/* ---- special-token partitioning ------------------------------------------- */

typedef struct frag {
    size_t start, len; /* raw text (id < 0) */
    int32_t id;        /* a special token, or -1 */
} frag;

typedef struct frag_list {
    frag *v;
    size_t n, cap;
} frag_list;

static pxl_status frag_push(pxl_ctx *ctx, frag_list *l, frag f) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16, bytes;
        if (!pxl_mul_size(cap, sizeof(frag), &bytes)) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_tokenize: out of memory");
        frag *v = pxl_realloc(ctx, l->v, bytes);
        if (!v) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_tokenize: out of memory");
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = f;
    return PXL_OK;
}

static const char *find_bytes(const char *h, size_t hn, const char *n, size_t nn) {
    if (nn == 0 || nn > hn) return NULL;
    const char *end = h + hn - nn;
    for (const char *p = h; p <= end; p++) {
        p = memchr(p, n[0], (size_t)(end - p) + 1);
        if (!p) return NULL;
        if (memcmp(p, n, nn) == 0) return p;
    }
    return NULL;
}

/* Splits the text around special tokens, longest token first over all fragments (as llama.cpp). */
static pxl_status partition(pxl_tokenizer *t, const char *text, size_t len, int parse_special, frag_list *out) {
    pxl_ctx *ctx = t->ctx;
    frag_list cur = {0}, next = {0};
    pxl_status st = PXL_OK;
    if (len) st = frag_push(ctx, &cur, (frag){0, len, -1});
    for (size_t s = 0; s < t->n_special && st == PXL_OK && cur.n; s++) {
        int32_t id = t->special[s];
        const pxl_tok_entry *e = &t->tokens[id];
        if (!parse_special && (e->type == PXL_TOKEN_CONTROL || e->type == PXL_TOKEN_UNKNOWN)) continue;
        next.n = 0;
        for (size_t i = 0; i < cur.n && st == PXL_OK; i++) {
            frag f = cur.v[i];
            if (f.id >= 0) {
                st = frag_push(ctx, &next, f);
                continue;
            }
            while (st == PXL_OK) {
                const char *m = find_bytes(text + f.start, f.len, e->text, e->len);
                if (!m) {
                    if (f.len) st = frag_push(ctx, &next, f);
                    break;
                }
                size_t at = (size_t)(m - text);
                if (at > f.start) st = frag_push(ctx, &next, (frag){f.start, at - f.start, -1});
                if (st == PXL_OK) st = frag_push(ctx, &next, (frag){0, 0, id});
                size_t end = at + e->len;
                f.len = f.start + f.len - end;
                f.start = end;
            }
        }
        frag_list tmp = cur;
        cur = next;
        next = tmp;
    }
    pxl_free(ctx, next.v);
    if (st != PXL_OK) {
        pxl_free(ctx, cur.v);
        return st;
    }
    *out = cur;
    return PXL_OK;
}

/* ---- tokenize ------------------------------------------------------------- */

pxl_status pxl_tokenize(pxl_tokenizer *t, const char *text, size_t len, const pxl_tokenize_options *opt, int32_t **ids,
                        size_t *n) {
    if (!t) return PXL_ERR_INVALID_ARG;
    pxl_ctx *ctx = t->ctx;
    if (!text && len) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_tokenize: text is NULL");
    PXL_REQUIRE(ctx, "pxl_tokenize", ids);
    PXL_REQUIRE(ctx, "pxl_tokenize", n);
    pxl_tokenize_options o = {PXL_ADD_SPECIAL_DEFAULT, 0};
    if (opt) o = *opt;
    int add_bos, add_eos;
    switch (o.add_special) {
    case PXL_ADD_SPECIAL_DEFAULT: add_bos = t->add_bos; add_eos = t->add_eos; break;
    case PXL_ADD_SPECIAL_OFF: add_bos = add_eos = 0; break;
    case PXL_ADD_SPECIAL_ON: add_bos = add_eos = 1; break;
    default: return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_tokenize: add_special %d is not a pxl_add_special", (int)o.add_special);
    }
    add_bos &= t->bos >= 0;
    add_eos &= t->eos >= 0;

    frag_list frags = {0};
    pxl_tok_ids out = {0};
    pxl_tok_work w;
    memset(&w, 0, sizeof w);
    char *buf = NULL;
    size_t buf_cap = 0;
    pxl_status st = partition(t, text, len, o.parse_special != 0, &frags);
    if (st == PXL_OK && add_bos) st = pxl_tok_ids_push(ctx, &out, t->bos);
    int prev_special = 1;
    for (size_t i = 0; i < frags.n && st == PXL_OK; i++) {
        const frag *f = &frags.v[i];
        if (f->id >= 0) {
            st = pxl_tok_ids_push(ctx, &out, f->id);
            prev_special = 1;
            continue;
        }
        if (t->model == PXL_TOKENIZER_BPE) {
            st = pxl_tok_bpe_fragment(t, text + f->start, f->len, &out);
            continue;
        }
        /* SPM: the optional space prefix, then every space as U+2581 (3 bytes) */
        size_t need;
        if (!pxl_mul_size(f->len + 1, 3, &need)) {
            st = pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_tokenize: text too long");
            break;
        }
        if (need > buf_cap) {
            char *b = pxl_realloc(ctx, buf, need);
            if (!b) {
                st = pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_tokenize: out of memory for %zu bytes", need);
                break;
            }
            buf = b;
            buf_cap = need;
        }
        size_t k = 0;
        if (t->add_space_prefix && prev_special) {
            memcpy(buf, "\xe2\x96\x81", 3);
            k = 3;
        }
        for (size_t j = 0; j < f->len; j++) {
            char c = text[f->start + j];
            if (c == ' ') {
                memcpy(buf + k, "\xe2\x96\x81", 3);
                k += 3;
            } else {
                buf[k++] = c;
            }
        }
        st = spm_fragment(t, &w, buf, k, &out);
        prev_special = 0;
    }
    if (st == PXL_OK && add_eos) st = pxl_tok_ids_push(ctx, &out, t->eos);
    pxl_free(ctx, buf);
    pxl_free(ctx, frags.v);
    pxl_tok_work_free(ctx, &w);
    if (st != PXL_OK) {
        pxl_free(ctx, out.v);
        return st;
    }
    *ids = out.v;
    *n = out.n;
    return PXL_OK;
}

/* ---- pieces ---------------------------------------------------------------- */

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* Writes the piece through put(); returns its length. */
static size_t piece(const pxl_tokenizer *t, int32_t id, int special, char *buf, size_t cap) {
    if (!in_range(t, id)) return 0;
    const pxl_tok_entry *e = &t->tokens[id];
    size_t n = 0;
#define PUT(ch) do { if (n < cap) buf[n] = (char)(ch); n++; } while (0)
    switch (e->type) {
    case PXL_TOKEN_CONTROL:
    case PXL_TOKEN_UNKNOWN:
        if (!special) return 0;
        /* fall through */
    case PXL_TOKEN_USER_DEFINED:
        for (uint32_t i = 0; i < e->len; i++) PUT(e->text[i]);
        return n;
    case PXL_TOKEN_BYTE:
        if (e->len == 6 && !memcmp(e->text, "<0x", 3) && e->text[5] == '>' && hexval(e->text[3]) >= 0 &&
            hexval(e->text[4]) >= 0) {
            PUT(hexval(e->text[3]) * 16 + hexval(e->text[4]));
            return n;
        }
        for (uint32_t i = 0; i < e->len; i++) PUT(e->text[i]);
        return n;
    case PXL_TOKEN_NORMAL:
        if (t->model == PXL_TOKENIZER_SPM) {
            for (uint32_t i = 0; i < e->len; i++) {
                if (i + 2 < e->len && !memcmp(e->text + i, "\xe2\x96\x81", 3)) {
                    PUT(' ');
                    i += 2;
                } else {
                    PUT(e->text[i]);
                }
            }
        } else {
            size_t i = 0;
            while (i < e->len) {
                size_t s = i;
                uint32_t cp = pxl_utf8_decode((const unsigned char *)e->text, e->len, &i);
                int b = pxl_tok_unicode_to_byte(cp);
                if (b >= 0) {
                    PUT(b);
                } else {
                    for (; s < i; s++) PUT(e->text[s]); /* not a byte-level code point: as it is */
                }
            }
        }
        return n;
    default:
        return 0;
    }
#undef PUT
}

size_t pxl_tokenizer_piece(const pxl_tokenizer *t, int32_t id, int special, char *buf, size_t cap) {
    if (!buf) cap = 0;
    return piece(t, id, special, buf, cap);
}

/* ---- detokenizer ------------------------------------------------------------ */

struct pxl_detokenizer {
    pxl_tokenizer *tok;
    pxl_detokenize_options opt;
    int strip_space;
    unsigned char pending[4];
    size_t n_pending;
    char *out;
    size_t out_cap;
};

pxl_status pxl_detokenizer_create(pxl_tokenizer *tok, const pxl_detokenize_options *opt, pxl_detokenizer **out) {
    if (!tok) return PXL_ERR_INVALID_ARG;
    PXL_REQUIRE(tok->ctx, "pxl_detokenizer_create", out);
    pxl_detokenizer *d = pxl_calloc(tok->ctx, 1, sizeof *d);
    if (!d) return pxl_fail(tok->ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_detokenizer_create: out of memory");
    d->tok = tok;
    if (opt) d->opt = *opt;
    d->strip_space = tok->add_space_prefix && !d->opt.keep_space_prefix;
    *out = d;
    return PXL_OK;
}

void pxl_detokenizer_free(pxl_detokenizer *d) {
    if (!d) return;
    pxl_free(d->tok->ctx, d->out);
    pxl_free(d->tok->ctx, d);
}

static pxl_status out_reserve(pxl_detokenizer *d, size_t n) {
    if (n <= d->out_cap) return PXL_OK;
    size_t cap = d->out_cap ? d->out_cap : 64;
    while (cap < n) {
        if (cap > ((size_t)-1) / 2) return pxl_fail(d->tok->ctx, PXL_ERR_OUT_OF_MEMORY, "detokenizer: piece too long");
        cap *= 2;
    }
    char *o = pxl_realloc(d->tok->ctx, d->out, cap);
    if (!o) return pxl_fail(d->tok->ctx, PXL_ERR_OUT_OF_MEMORY, "detokenizer: out of memory");
    d->out = o;
    d->out_cap = cap;
    return PXL_OK;
}

/* How many bytes at s[0..n) form a valid UTF-8 sequence (> 0); 0: valid so far
 * but incomplete; -k: invalid, the first k bytes are one maximal bad subpart. */
static long utf8_check(const unsigned char *s, size_t n) {
    unsigned char b = s[0];
    size_t need;
    unsigned char lo = 0x80, hi = 0xBF;
    if (b < 0x80) return 1;
    if (b >= 0xC2 && b <= 0xDF) need = 1;
    else if (b >= 0xE0 && b <= 0xEF) {
        need = 2;
        if (b == 0xE0) lo = 0xA0;
        if (b == 0xED) hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
        need = 3;
        if (b == 0xF0) lo = 0x90;
        if (b == 0xF4) hi = 0x8F;
    } else {
        return -1;
    }
    for (size_t i = 1; i <= need; i++) {
        if (i >= n) return 0;
        unsigned char c = s[i];
        if (c < lo || c > hi) return -(long)i;
        lo = 0x80;
        hi = 0xBF;
    }
    return (long)need + 1;
}

/* Appends bytes s[0..n) after the pending ones: complete sequences to out, an incomplete tail to pending. */
static pxl_status emit(pxl_detokenizer *d, const char *s, size_t n, size_t *len, int final) {
    size_t total = d->n_pending + n, k = 0;
    pxl_status st = out_reserve(d, total * 3 + 4);
    if (st != PXL_OK) return st;
    unsigned char *tmp = pxl_alloc(d->tok->ctx, total ? total : 1);
    if (!tmp) return pxl_fail(d->tok->ctx, PXL_ERR_OUT_OF_MEMORY, "detokenizer: out of memory");
    memcpy(tmp, d->pending, d->n_pending);
    if (n) memcpy(tmp + d->n_pending, s, n);
    d->n_pending = 0;
    size_t i = 0;
    while (i < total) {
        long r = utf8_check(tmp + i, total - i);
        if (r > 0) {
            memcpy(d->out + k, tmp + i, (size_t)r);
            k += (size_t)r;
            i += (size_t)r;
        } else if (r == 0 && !final) {
            memcpy(d->pending, tmp + i, total - i);
            d->n_pending = total - i;
            break;
        } else {
            memcpy(d->out + k, "\xef\xbf\xbd", 3);
            k += 3;
            i += r < 0 ? (size_t)-r : total - i;
        }
    }
    pxl_free(d->tok->ctx, tmp);
    *len = k;
    return PXL_OK;
}

pxl_status pxl_detokenizer_push(pxl_detokenizer *d, int32_t id, const char **text, size_t *len) {
    if (!d) return PXL_ERR_INVALID_ARG;
    pxl_ctx *ctx = d->tok->ctx;
    PXL_REQUIRE(ctx, "pxl_detokenizer_push", text);
    PXL_REQUIRE(ctx, "pxl_detokenizer_push", len);
    if (!in_range(d->tok, id))
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_detokenizer_push: token id %d is out of range (%zu tokens)", (int)id,
                        d->tok->n_tokens);
    size_t n = piece(d->tok, id, d->opt.special, NULL, 0);
    char stack[128];
    char *p = n <= sizeof stack ? stack : pxl_alloc(ctx, n);
    if (!p) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "detokenizer: out of memory");
    piece(d->tok, id, d->opt.special, p, n);
    const char *s = p;
    if (d->strip_space && n) {
        if (s[0] == ' ') {
            s++;
            n--;
        }
        d->strip_space = 0;
    }
    pxl_status st = emit(d, s, n, len, 0);
    if (p != stack) pxl_free(ctx, p);
    if (st != PXL_OK) return st;
    *text = d->out;
    return PXL_OK;
}

pxl_status pxl_detokenizer_flush(pxl_detokenizer *d, const char **text, size_t *len) {
    if (!d) return PXL_ERR_INVALID_ARG;
    PXL_REQUIRE(d->tok->ctx, "pxl_detokenizer_flush", text);
    PXL_REQUIRE(d->tok->ctx, "pxl_detokenizer_flush", len);
    pxl_status st = emit(d, NULL, 0, len, 1);
    if (st != PXL_OK) return st;
    *text = d->out;
    return PXL_OK;
}

pxl_status pxl_detokenize(pxl_tokenizer *tok, const int32_t *ids, size_t n, const pxl_detokenize_options *opt, char **text,
                          size_t *len) {
    if (!tok) return PXL_ERR_INVALID_ARG;
    pxl_ctx *ctx = tok->ctx;
    if (!ids && n) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_detokenize: ids is NULL");
    PXL_REQUIRE(ctx, "pxl_detokenize", text);
    PXL_REQUIRE(ctx, "pxl_detokenize", len);
    pxl_detokenizer *d;
    pxl_status st = pxl_detokenizer_create(tok, opt, &d);
    if (st != PXL_OK) return st;
    char *res = NULL;
    size_t rn = 0, rcap = 0;
    for (size_t i = 0; i <= n && st == PXL_OK; i++) {
        const char *s;
        size_t sn;
        st = i < n ? pxl_detokenizer_push(d, ids[i], &s, &sn) : pxl_detokenizer_flush(d, &s, &sn);
        if (st != PXL_OK) break;
        if (rn + sn + 1 > rcap) {
            size_t cap = rcap ? rcap : 64;
            while (cap < rn + sn + 1) cap *= 2;
            char *r = pxl_realloc(ctx, res, cap);
            if (!r) {
                st = pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_detokenize: out of memory");
                break;
            }
            res = r;
            rcap = cap;
        }
        if (sn) memcpy(res + rn, s, sn);
        rn += sn;
    }
    pxl_detokenizer_free(d);
    if (st != PXL_OK) {
        pxl_free(ctx, res);
        return st;
    }
    res[rn] = 0;
    *text = res;
    *len = rn;
    return PXL_OK;
}
