/*
 * Fuzzes the tokenizers (src/llm/tokenizer*.c) with small in-memory
 * vocabularies: byte 0 picks the model (SPM or byte-level BPE with one of the
 * pre-tokenizers) and the options; the rest is the text. The ids are then
 * detokenized, streaming; every id must be in range.
 */
#include "fuzz_ctx.h"
#include "pxl/llm.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const spm_tokens[] = {"<unk>", "<s>", "</s>", "\xe2\x96\x81", ("\xe2\x96\x81" "a"), "ab", "a", "b",
                                         "<0x41>", "<0xC3>", "<0xA9>", "\xc3\xa9", "<|u|>", "\xe2\x96\x81\xe2\x96\x81"};
static const int32_t spm_types[] = {2, 3, 3, 1, 1, 1, 1, 1, 6, 6, 6, 1, 4, 1};
static const float spm_scores[] = {0, 0, 0, -1, -2, -3, -4, -5, 0, 0, 0, -6, 0, -0.5f};

static const char *const bpe_tokens[] = {"a", "b", "\xc4\xa0", "ab", ("\xc4\xa0" "a"), "<|e|>", "1", "12", "\xc3\x83",
                                         "\xc2\xa9", "\xc3\x83\xc2\xa9", "!", "\xc4\x8a"};
static const int32_t bpe_types[] = {1, 1, 1, 1, 1, 3, 1, 1, 1, 1, 1, 1, 1};
static const char *const bpe_merges[] = {"a b", "\xc4\xa0 a", "1 2", "\xc3\x83 \xc2\xa9"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    pxl_ctx *ctx = fuzz_cpu_ctx();
    if (!ctx) return 0;
    uint8_t sel = data[0];
    pxl_tokenizer_vocab v = pxl_tokenizer_vocab_default();
    static const char *const pres[] = {"llama-bpe", "qwen2", "gpt-2", "default"};
    if (sel & 1) {
        v.model = PXL_TOKENIZER_BPE;
        v.pre = pres[(sel >> 1) & 3];
        v.n_tokens = sizeof bpe_tokens / sizeof *bpe_tokens;
        v.tokens = bpe_tokens;
        v.types = bpe_types;
        v.n_merges = sizeof bpe_merges / sizeof *bpe_merges;
        v.merges = bpe_merges;
        v.bos_id = 5;
        v.eos_id = 5;
    } else {
        v.model = PXL_TOKENIZER_SPM;
        v.n_tokens = sizeof spm_tokens / sizeof *spm_tokens;
        v.tokens = spm_tokens;
        v.types = spm_types;
        v.scores = spm_scores;
        v.add_space_prefix = (sel >> 1) & 1;
    }
    pxl_tokenizer *t = NULL;
    if (pxl_tokenizer_create(ctx, &v, &t) != PXL_OK) abort();
    pxl_tokenize_options o = {(pxl_add_special)((sel >> 3) % 3), (sel >> 5) & 1};
    int32_t *ids = NULL;
    size_t n = 0;
    if (pxl_tokenize(t, (const char *)data + 1, size - 1, &o, &ids, &n) == PXL_OK) {
        pxl_detokenize_options d = {(sel >> 6) & 1, (sel >> 7) & 1};
        pxl_detokenizer *dt = NULL;
        if (pxl_detokenizer_create(t, &d, &dt) == PXL_OK) {
            for (size_t i = 0; i < n; i++) {
                if (ids[i] < 0 || (size_t)ids[i] >= v.n_tokens) abort();
                const char *s;
                size_t len;
                if (pxl_detokenizer_push(dt, ids[i], &s, &len) != PXL_OK) break;
            }
            const char *s;
            size_t len;
            (void)pxl_detokenizer_flush(dt, &s, &len);
            pxl_detokenizer_free(dt);
        }
        pxl_free(ctx, ids);
    }
    pxl_tokenizer_free(t);
    pxl_ctx_free(ctx);
    return 0;
}
