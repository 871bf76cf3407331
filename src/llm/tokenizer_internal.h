/*
 * Internal layout of the tokenizers (tokenizer.c, tokenizer_bpe.c,
 * tokenizer_gguf.c). Not installed.
 */
#ifndef PXL_LLM_TOKENIZER_INTERNAL_H
#define PXL_LLM_TOKENIZER_INTERNAL_H

#include "pxl/llm.h"

#include <stddef.h>
#include <stdint.h>

typedef struct pxl_tok_entry {
    const char *text; /* in the tokenizer's arena */
    uint32_t len;
    float score;
    uint8_t type;     /* pxl_token_type */
} pxl_tok_entry;

/* An open-addressing map from byte strings to int32 values (token ids, merge ranks). */
typedef struct pxl_tok_map {
    uint32_t *slots;  /* value index + 1; 0: empty */
    size_t cap;       /* a power of two */
} pxl_tok_map;

typedef struct pxl_tok_regexes pxl_tok_regexes; /* tokenizer_bpe.c */

struct pxl_tokenizer {
    pxl_ctx *ctx;
    pxl_tokenizer_model model;
    char *arena;               /* token texts, then merge texts */
    size_t n_tokens;
    pxl_tok_entry *tokens;
    pxl_tok_map token_map;     /* text -> id (the last of equal texts wins, as in llama.cpp) */
    size_t n_merges;
    const char **merge_text;   /* "left right" */
    uint32_t *merge_len;
    pxl_tok_map merge_map;     /* "left right" -> rank */
    int32_t bos, eos, unk, pad, eot, eom;
    int add_bos, add_eos, add_space_prefix;
    int ignore_merges;         /* llama-bpe: a pre-token that is a whole token skips the merges */
    int32_t byte_ids[256];     /* SPM <0xNN> tokens (or the byte as text), -1 when absent */
    int32_t *special;          /* control/user-defined/unknown ids, longest text first */
    size_t n_special;
    pxl_tok_regexes *regexes;  /* BPE pre-tokenizer */
};

/* 64-bit FNV-1a. */
uint64_t pxl_tok_hash(const char *s, size_t n);
int32_t pxl_tok_lookup(const pxl_tokenizer *t, const char *s, size_t n);
/* The rank of merge "l r", -1 when there is none, -2 when out of memory. */
int32_t pxl_tok_merge_rank(const pxl_tokenizer *t, const char *l, size_t ln, const char *r, size_t rn);

/* tokenizer_bpe.c: the pre-tokenizer (PCRE2) and the byte-level mapping. */
pxl_status pxl_tok_regexes_create(pxl_tokenizer *t, const char *pre);
void pxl_tok_regexes_free(pxl_tokenizer *t);
/* Tokenizes one raw fragment, appending to the id vector. */
typedef struct pxl_tok_ids {
    int32_t *v;
    size_t n, cap;
} pxl_tok_ids;
pxl_status pxl_tok_ids_push(pxl_ctx *ctx, pxl_tok_ids *ids, int32_t id);
pxl_status pxl_tok_bpe_fragment(pxl_tokenizer *t, const char *text, size_t len, pxl_tok_ids *out);
/* The byte a byte-level code point stands for, or -1. */
int pxl_tok_unicode_to_byte(uint32_t cp);
/* The code point a byte is mapped to. */
uint32_t pxl_tok_byte_to_unicode(uint8_t b);

/* Heap of merge candidates shared by SPM and BPE. */
typedef struct pxl_tok_sym {
    int32_t prev, next;
    uint32_t start, n;
} pxl_tok_sym;
typedef struct pxl_tok_bigram {
    int32_t left, right;
    float score;   /* SPM: higher first */
    int32_t rank;  /* BPE: lower first */
    uint32_t size;
} pxl_tok_bigram;
typedef struct pxl_tok_work {
    pxl_tok_sym *syms;
    size_t n_syms, cap_syms;
    pxl_tok_bigram *heap;
    size_t n_heap, cap_heap;
    int by_rank;   /* 1: BPE ordering */
} pxl_tok_work;
pxl_status pxl_tok_work_syms(pxl_ctx *ctx, pxl_tok_work *w, size_t n);
pxl_status pxl_tok_heap_push(pxl_ctx *ctx, pxl_tok_work *w, pxl_tok_bigram b);
pxl_tok_bigram pxl_tok_heap_pop(pxl_tok_work *w);
void pxl_tok_work_free(pxl_ctx *ctx, pxl_tok_work *w);
/* Pushes the bigram of symbols left and right onto the heap when it is a
 * candidate merge (no-op when either is -1). */
typedef pxl_status (*pxl_tok_bigram_fn)(pxl_tokenizer *t, pxl_tok_work *w, const char *text, int32_t left,
                                        int32_t right);
/* What SentencePiece and BPE share: splits text[0, len) (len <= INT32_MAX)
 * into UTF-8 symbols in w->syms, then merges the best bigram first (the
 * heap's order: by_rank 1 for BPE ranks, 0 for SPM scores) until none is
 * left. Merged-away symbols have n = 0; the survivors are linked by next
 * from symbol 0. */
pxl_status pxl_tok_merge(pxl_tokenizer *t, pxl_tok_work *w, const char *text, size_t len, int by_rank,
                         pxl_tok_bigram_fn try_bigram);
/* Length of the UTF-8 sequence a lead byte starts, as llama.cpp counts it (1 for continuation bytes). */
size_t pxl_tok_utf8_len(unsigned char lead);

#endif
