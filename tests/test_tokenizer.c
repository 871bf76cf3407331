/*
 * Tokenizers (src/llm/tokenizer*.c).
 *   test_tokenizer            unit tests on small in-memory vocabularies
 *   test_tokenizer vocab DIR  every case of llama.cpp's vocab test files in DIR
 *                             (deps/vocab, from scripts/fetch_vocab.sh): ids must
 *                             match exactly. Missing files skip (77) unless
 *                             PXL_REQUIRE_VOCAB is set (make test and CI set it).
 */
#include "pxl/llm.h"

#include "check.h"

#include <stdlib.h>
#include <string.h>

static pxl_ctx *g_ctx;

/* ---- a small SPM vocabulary ------------------------------------------------ */

enum { SPM_N = 8 + 256 };
static const char *spm_tok[SPM_N];
static float spm_score[SPM_N];
static int32_t spm_type[SPM_N];
static char spm_bytes[256][8];

static pxl_tokenizer *make_spm(int add_bos, int add_eos) {
    static const char *words[] = {"<unk>", "<s>", "</s>", "\xe2\x96\x81", "\xe2\x96\x81h", "\xe2\x96\x81hi", "i", "<|user|>"};
    static const int32_t types[] = {PXL_TOKEN_UNKNOWN, PXL_TOKEN_CONTROL, PXL_TOKEN_CONTROL, PXL_TOKEN_NORMAL,
                                    PXL_TOKEN_NORMAL, PXL_TOKEN_NORMAL, PXL_TOKEN_NORMAL, PXL_TOKEN_USER_DEFINED};
    for (int i = 0; i < 8; i++) {
        spm_tok[i] = words[i];
        spm_type[i] = types[i];
        spm_score[i] = (float)-i;
    }
    for (int b = 0; b < 256; b++) {
        snprintf(spm_bytes[b], sizeof spm_bytes[b], "<0x%02X>", b);
        spm_tok[8 + b] = spm_bytes[b];
        spm_type[8 + b] = PXL_TOKEN_BYTE;
        spm_score[8 + b] = 0;
    }
    pxl_tokenizer_vocab v = pxl_tokenizer_vocab_default();
    v.model = PXL_TOKENIZER_SPM;
    v.n_tokens = SPM_N;
    v.tokens = spm_tok;
    v.scores = spm_score;
    v.types = spm_type;
    v.add_bos = add_bos;
    v.add_eos = add_eos;
    pxl_tokenizer *t = NULL;
    pxl_status s = pxl_tokenizer_create(g_ctx, &v, &t);
    CHECK_MSG(s == PXL_OK, "%s", pxl_ctx_error(g_ctx));
    return t;
}

static int ids_eq(const int32_t *a, size_t n, const int32_t *b, size_t m) {
    return n == m && (n == 0 || memcmp(a, b, n * sizeof *a) == 0);
}

static void print_ids(const char *what, const int32_t *ids, size_t n) {
    fprintf(stderr, "  %s:", what);
    for (size_t i = 0; i < n; i++) fprintf(stderr, " %d", (int)ids[i]);
    fputc('\n', stderr);
}

static void expect_ids(pxl_tokenizer *t, const char *text, const pxl_tokenize_options *o, const int32_t *want, size_t nw) {
    int32_t *ids = NULL;
    size_t n = 0;
    pxl_status s = pxl_tokenize(t, text, strlen(text), o, &ids, &n);
    CHECK_MSG(s == PXL_OK, "%s", pxl_ctx_error(g_ctx));
    if (!ids_eq(ids, n, want, nw)) {
        fprintf(stderr, "tokenize \"%s\" mismatch\n", text);
        print_ids("expected", want, nw);
        print_ids("got", ids, n);
        g_failures++;
    }
    pxl_free(g_ctx, ids);
}

static void test_spm(void) {
    pxl_tokenizer *t = make_spm(-1, -1);
    if (!t) return;
    CHECK(pxl_tokenizer_bos(t) == 1 && pxl_tokenizer_eos(t) == 2 && pxl_tokenizer_unk(t) == 0);
    CHECK(pxl_tokenizer_add_bos(t) == 1 && pxl_tokenizer_add_eos(t) == 0);
    CHECK(pxl_tokenizer_is_control(t, 1) && !pxl_tokenizer_is_control(t, 5));
    CHECK(pxl_tokenizer_is_eog(t, 2) && !pxl_tokenizer_is_eog(t, 1));
    CHECK(pxl_tokenizer_n_vocab(t) == SPM_N);
    /* add_special default from the metadata: BOS, space prefix, merges by score, byte fallback for "é" */
    int32_t w1[] = {1, 5, 3, 8 + 0xC3, 8 + 0xA9};
    expect_ids(t, "hi \xc3\xa9", NULL, w1, 5);
    pxl_tokenize_options off = {PXL_ADD_SPECIAL_OFF, 0}, on = {PXL_ADD_SPECIAL_ON, 0};
    expect_ids(t, "hi \xc3\xa9", &off, w1 + 1, 4);
    int32_t w2[] = {1, 5, 2};
    expect_ids(t, "hi", &on, w2, 3);
    /* parse_special: "</s>" as text (bytes) or as the token; user-defined tokens always */
    pxl_tokenize_options ps = {PXL_ADD_SPECIAL_OFF, 1};
    int32_t w3[] = {5, 2, 3, 6}; /* after a special token the space prefix comes back */
    expect_ids(t, "hi</s>i", &ps, w3, 4);
    int32_t w4[] = {5, 8 + '<', 8 + '/', 8 + 's', 8 + '>', 6};
    expect_ids(t, "hi</s>i", &off, w4, 6);
    {
        int32_t *ids;
        size_t n;
        CHECK(pxl_tokenize(t, "<|user|>i", 9, &off, &ids, &n) == PXL_OK);
        CHECK(n == 3 && ids[0] == 7 && ids[1] == 3 && ids[2] == 6);
        pxl_free(g_ctx, ids);
        CHECK(pxl_tokenize(t, "", 0, &off, &ids, &n) == PXL_OK && n == 0);
        pxl_free(g_ctx, ids);
    }
    /* pieces */
    char buf[16];
    CHECK(pxl_tokenizer_piece(t, 5, 0, buf, sizeof buf) == 3 && !memcmp(buf, " hi", 3));
    CHECK(pxl_tokenizer_piece(t, 8 + 0x41, 0, buf, sizeof buf) == 1 && buf[0] == 'A');
    CHECK(pxl_tokenizer_piece(t, 1, 0, buf, sizeof buf) == 0);
    CHECK(pxl_tokenizer_piece(t, 1, 1, buf, sizeof buf) == 3 && !memcmp(buf, "<s>", 3));
    CHECK(pxl_tokenizer_piece(t, 5, 0, NULL, 0) == 3);
    /* round trip with the leading space removed */
    const char *texts[] = {"hi \xc3\xa9", " hi  i", "i\xe2\x82\xac\xf0\x9f\x98\x80 x", ""};
    for (size_t k = 0; k < sizeof texts / sizeof *texts; k++) {
        int32_t *ids;
        size_t n;
        char *back;
        size_t bn;
        CHECK(pxl_tokenize(t, texts[k], strlen(texts[k]), NULL, &ids, &n) == PXL_OK);
        CHECK(pxl_detokenize(t, ids, n, NULL, &back, &bn) == PXL_OK);
        CHECK_MSG(bn == strlen(texts[k]) && !memcmp(back, texts[k], bn), "round trip of \"%s\" gave \"%s\"", texts[k], back);
        pxl_free(g_ctx, back);
        pxl_detokenize_options keep = {0, 1};
        CHECK(pxl_detokenize(t, ids, n, &keep, &back, &bn) == PXL_OK);
        CHECK(n <= 1 || back[0] == ' ');
        pxl_free(g_ctx, back);
        pxl_free(g_ctx, ids);
    }
    pxl_tokenizer_free(t);
    /* add_bos 0 / add_eos 1 from the metadata */
    t = make_spm(0, 1);
    if (t) {
        int32_t w7[] = {5, 2};
        expect_ids(t, "hi", NULL, w7, 2);
        pxl_tokenizer_free(t);
    }
}

static void test_detokenizer_stream(void) {
    pxl_tokenizer *t = make_spm(-1, -1);
    if (!t) return;
    pxl_detokenizer *d;
    CHECK(pxl_detokenizer_create(t, NULL, &d) == PXL_OK);
    const char *s;
    size_t n;
    /* "€" = E2 82 AC split over three byte tokens */
    CHECK(pxl_detokenizer_push(d, 5, &s, &n) == PXL_OK && n == 2 && !memcmp(s, "hi", 2));
    CHECK(pxl_detokenizer_push(d, 8 + 0xE2, &s, &n) == PXL_OK && n == 0);
    CHECK(pxl_detokenizer_push(d, 8 + 0x82, &s, &n) == PXL_OK && n == 0);
    CHECK(pxl_detokenizer_push(d, 8 + 0xAC, &s, &n) == PXL_OK && n == 3 && !memcmp(s, "\xe2\x82\xac", 3));
    /* clearly invalid: E2 then 'A' gives U+FFFD then A at once */
    CHECK(pxl_detokenizer_push(d, 8 + 0xE2, &s, &n) == PXL_OK && n == 0);
    CHECK(pxl_detokenizer_push(d, 8 + 'A', &s, &n) == PXL_OK && n == 4 && !memcmp(s, "\xef\xbf\xbd" "A", 4));
    /* a lone continuation byte */
    CHECK(pxl_detokenizer_push(d, 8 + 0x80, &s, &n) == PXL_OK && n == 3 && !memcmp(s, "\xef\xbf\xbd", 3));
    /* incomplete at flush */
    CHECK(pxl_detokenizer_push(d, 8 + 0xF0, &s, &n) == PXL_OK && n == 0);
    CHECK(pxl_detokenizer_push(d, 8 + 0x9F, &s, &n) == PXL_OK && n == 0);
    CHECK(pxl_detokenizer_flush(d, &s, &n) == PXL_OK && n == 3 && !memcmp(s, "\xef\xbf\xbd", 3));
    CHECK(pxl_detokenizer_flush(d, &s, &n) == PXL_OK && n == 0);
    CHECK(pxl_detokenizer_push(d, SPM_N, &s, &n) == PXL_ERR_INVALID_ARG);
    CHECK(strstr(pxl_ctx_error(g_ctx), "out of range") != NULL);
    pxl_detokenizer_free(d);
    pxl_detokenizer_free(NULL);
    pxl_tokenizer_free(t);
}

/* ---- a small byte-level BPE vocabulary -------------------------------------- */

static void test_bpe(void) {
    /* "Ġ" is U+0120, the space byte */
    const char *tokens[] = {"h", "e", "l", "o", "\xc4\xa0", "w", "r", "d", "he", "ll", "hell", "hello", "\xc4\xa0w",
                            "<|endoftext|>", "!", "wo", "\xc4\xa0wo"};
    const char *merges[] = {"h e", "l l", "he ll", "hell o", "\xc4\xa0 w", "w o", "\xc4\xa0w o"};
    int32_t types[17];
    for (int i = 0; i < 17; i++) types[i] = PXL_TOKEN_NORMAL;
    types[13] = PXL_TOKEN_CONTROL;
    pxl_tokenizer_vocab v = pxl_tokenizer_vocab_default();
    v.model = PXL_TOKENIZER_BPE;
    v.pre = "gpt-2";
    v.n_tokens = 17;
    v.tokens = tokens;
    v.types = types;
    v.n_merges = 7;
    v.merges = merges;
    v.eos_id = 13;
    v.bos_id = 13;
    pxl_tokenizer *t = NULL;
    CHECK_MSG(pxl_tokenizer_create(g_ctx, &v, &t) == PXL_OK, "%s", pxl_ctx_error(g_ctx));
    if (!t) return;
    CHECK(pxl_tokenizer_add_bos(t) == 0);
    CHECK(pxl_tokenizer_eot(t) == 13); /* found by its text */
    int32_t w1[] = {11, 16, 6, 2, 7, 14};
    expect_ids(t, "hello world!", NULL, w1, 6);
    pxl_tokenize_options ps = {PXL_ADD_SPECIAL_OFF, 1}, on = {PXL_ADD_SPECIAL_ON, 1};
    int32_t w2[] = {11, 13, 11};
    expect_ids(t, "hello<|endoftext|>hello", &ps, w2, 3);
    int32_t w3[] = {13, 11, 13};
    expect_ids(t, "hello", &on, w3, 3);
    char *back;
    size_t bn;
    CHECK(pxl_detokenize(t, w1, 6, NULL, &back, &bn) == PXL_OK && bn == 12 && !strcmp(back, "hello world!"));
    pxl_free(g_ctx, back);
    pxl_detokenize_options sp = {1, 0};
    CHECK(pxl_detokenize(t, w2, 3, &sp, &back, &bn) == PXL_OK && !strcmp(back, "hello<|endoftext|>hello"));
    pxl_free(g_ctx, back);
    CHECK(pxl_detokenize(t, w2, 3, NULL, &back, &bn) == PXL_OK && !strcmp(back, "hellohello"));
    pxl_free(g_ctx, back);
    /* invalid UTF-8 input does not fail */
    int32_t *ids;
    size_t n;
    CHECK(pxl_tokenize(t, "\xff\xc3", 2, NULL, &ids, &n) == PXL_OK);
    pxl_free(g_ctx, ids);
    pxl_tokenizer_free(t);

    /* llama-bpe: BOS by default, and the other regexes compile */
    const char *pres[] = {"llama-bpe", "qwen2", "default"};
    for (int i = 0; i < 3; i++) {
        v.pre = pres[i];
        t = NULL;
        CHECK_MSG(pxl_tokenizer_create(g_ctx, &v, &t) == PXL_OK, "%s: %s", pres[i], pxl_ctx_error(g_ctx));
        if (!t) continue;
        CHECK(pxl_tokenizer_add_bos(t) == (i == 0));
        expect_ids(t, "hello world!", &(pxl_tokenize_options){PXL_ADD_SPECIAL_OFF, 0}, w1, 6);
        pxl_tokenizer_free(t);
    }
    v.pre = "no-such-pre";
    CHECK(pxl_tokenizer_create(g_ctx, &v, &t) == PXL_ERR_UNSUPPORTED);
    CHECK(strstr(pxl_ctx_error(g_ctx), "no-such-pre") != NULL);
    /* bad merges */
    v.pre = "gpt-2";
    const char *bad_merges[] = {"h e", "ll"};
    v.merges = bad_merges;
    v.n_merges = 2;
    CHECK(pxl_tokenizer_create(g_ctx, &v, &t) == PXL_ERR_FORMAT);
    CHECK(strstr(pxl_ctx_error(g_ctx), "merge 1") != NULL);
}

/* ---- bad metadata through GGUF ----------------------------------------------- */

static pxl_status from_writer(pxl_gguf_writer *w, pxl_tokenizer **t) {
    uint8_t *data = NULL;
    size_t size = 0;
    pxl_gguf *g = NULL;
    pxl_status s = pxl_gguf_writer_to_memory(w, &data, &size);
    pxl_gguf_writer_free(w);
    if (s == PXL_OK) s = pxl_gguf_parse(g_ctx, data, size, &g);
    if (s == PXL_OK) s = pxl_tokenizer_from_gguf(g, t);
    pxl_gguf_free(g);
    pxl_free(g_ctx, data);
    return s;
}

static pxl_gguf_writer *base_writer(const char *model, int with_tokens, uint64_t n_scores) {
    pxl_gguf_writer *w = NULL;
    if (pxl_gguf_writer_create(g_ctx, &w) != PXL_OK) return NULL;
    pxl_gguf_writer_add_string(w, "tokenizer.ggml.model", model, strlen(model));
    const char *toks[] = {"<unk>", "<s>", "</s>", "a", "b", "ab"};
    if (with_tokens) pxl_gguf_writer_add_string_array(w, "tokenizer.ggml.tokens", toks, NULL, 6);
    float scores[6] = {0, 0, 0, -1, -2, -0.5f};
    if (n_scores) pxl_gguf_writer_add_array(w, "tokenizer.ggml.scores", PXL_GGUF_FLOAT32, scores, n_scores);
    return w;
}

static void test_gguf_metadata(void) {
    pxl_tokenizer *t = NULL;
    pxl_gguf_writer *w = base_writer("llama", 1, 6);
    pxl_gguf_writer_add_bool(w, "tokenizer.ggml.add_bos_token", 0);
    pxl_gguf_writer_add_uint(w, "tokenizer.ggml.eos_token_id", PXL_GGUF_UINT32, 5);
    CHECK_MSG(from_writer(w, &t) == PXL_OK, "%s", pxl_ctx_error(g_ctx));
    if (t) {
        CHECK(pxl_tokenizer_add_bos(t) == 0 && pxl_tokenizer_eos(t) == 5 && pxl_tokenizer_bos(t) == 1);
        int32_t want[] = {0, 5}; /* no U+2581 and no byte tokens: unknown, then the merged "ab" */
        expect_ids(t, "ab", &(pxl_tokenize_options){PXL_ADD_SPECIAL_DEFAULT, 0}, want, 2);
        pxl_tokenizer_free(t);
    }
    t = NULL;
    CHECK(from_writer(base_writer("llama", 0, 0), &t) == PXL_ERR_FORMAT);
    CHECK(strstr(pxl_ctx_error(g_ctx), "tokenizer.ggml.tokens") != NULL);
    CHECK(from_writer(base_writer("llama", 1, 5), &t) == PXL_ERR_FORMAT);
    CHECK(strstr(pxl_ctx_error(g_ctx), "scores") != NULL);
    CHECK(from_writer(base_writer("t5", 1, 6), &t) == PXL_ERR_UNSUPPORTED);
    CHECK(strstr(pxl_ctx_error(g_ctx), "\"t5\"") != NULL);
    w = base_writer("llama", 1, 6);
    pxl_gguf_writer_add_uint(w, "tokenizer.ggml.bos_token_id", PXL_GGUF_UINT32, 6);
    CHECK(from_writer(w, &t) == PXL_ERR_FORMAT);
    CHECK(strstr(pxl_ctx_error(g_ctx), "bos_token_id = 6 is out of range") != NULL);
    w = base_writer("gpt2", 1, 0);
    const char *merges[] = {"a b", "ab"};
    pxl_gguf_writer_add_string_array(w, "tokenizer.ggml.merges", merges, NULL, 2);
    CHECK(from_writer(w, &t) == PXL_ERR_FORMAT);
    CHECK(strstr(pxl_ctx_error(g_ctx), "merge 1") != NULL);
    w = base_writer("gpt2", 1, 0);
    CHECK(from_writer(w, &t) == PXL_ERR_FORMAT); /* gpt2 without merges */
    CHECK(pxl_tokenizer_from_gguf(NULL, &t) == PXL_ERR_INVALID_ARG);
    pxl_tokenizer_free(NULL);
}

/* ---- llama.cpp's vocab files -------------------------------------------------- */

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap + 1);
    size_t r;
    while (b && (r = fread(b + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            cap *= 2;
            char *nb = realloc(b, cap + 1);
            if (!nb) {
                free(b);
                b = NULL;
            }
            b = nb;
        }
    }
    fclose(f);
    if (b) b[n] = 0;
    *len = n;
    return b;
}

static int run_vocab(const char *dir, const char *name) {
    char path[1024];
    size_t in_len, out_len;
    snprintf(path, sizeof path, "%s/ggml-vocab-%s.gguf.inp", dir, name);
    char *inp = read_all(path, &in_len);
    snprintf(path, sizeof path, "%s/ggml-vocab-%s.gguf.out", dir, name);
    char *outp = read_all(path, &out_len);
    snprintf(path, sizeof path, "%s/ggml-vocab-%s.gguf", dir, name);
    pxl_gguf *g = NULL;
    pxl_tokenizer *t = NULL;
    int cases = -1;
    if (!inp || !outp) {
        fprintf(stderr, "%s: cannot read the .inp/.out files\n", name);
        goto done;
    }
    if (pxl_gguf_open(g_ctx, path, &g) != PXL_OK || pxl_tokenizer_from_gguf(g, &t) != PXL_OK) {
        fprintf(stderr, "%s: %s\n", name, pxl_ctx_error(g_ctx));
        goto done;
    }
    static const char sep[] = "\n__ggml_vocab_test__\n";
    const char *p = inp, *o = outp;
    cases = 0;
    int bad = 0;
    while (p < inp + in_len) {
        const char *e = strstr(p, sep);
        if (!e) break;
        const char *oe = strchr(o, '\n');
        if (!oe) {
            fprintf(stderr, "%s: the .out file has fewer lines than cases\n", name);
            bad++;
            break;
        }
        int32_t want[4096];
        size_t nw = 0;
        for (const char *q = o; q < oe;) {
            char *end;
            long v = strtol(q, &end, 10);
            if (end == q) break;
            if (nw < 4096) want[nw++] = (int32_t)v;
            q = end;
        }
        int32_t *ids = NULL;
        size_t n = 0;
        pxl_tokenize_options opt = {PXL_ADD_SPECIAL_OFF, 0};
        if (pxl_tokenize(t, p, (size_t)(e - p), &opt, &ids, &n) != PXL_OK) {
            fprintf(stderr, "%s case %d: %s\n", name, cases, pxl_ctx_error(g_ctx));
            bad++;
        } else if (!ids_eq(ids, n, want, nw)) {
            if (!bad) {
                fprintf(stderr, "%s case %d mismatch, text \"%.*s\"\n", name, cases, (int)(e - p), p);
                print_ids("expected", want, nw);
                print_ids("got", ids, n);
            }
            bad++;
        }
        pxl_free(g_ctx, ids);
        cases++;
        p = e + sizeof sep - 1;
        o = oe + 1;
    }
    fprintf(stderr, "%s: %d cases, %d mismatches\n", name, cases, bad);
    if (bad || cases == 0) g_failures++;
done:
    if (cases < 0) g_failures++;
    pxl_tokenizer_free(t);
    pxl_gguf_free(g);
    free(inp);
    free(outp);
    return cases;
}

int main(int argc, char **argv) {
    pxl_ctx_options o = pxl_ctx_options_default();
    o.backend = PXL_BACKEND_CPU;
    o.quiet = 1;
    if (pxl_ctx_create(&o, &g_ctx) != PXL_OK) {
        fprintf(stderr, "no context\n");
        return 1;
    }
    if (argc > 2 && !strcmp(argv[1], "vocab")) {
        char probe[1024];
        snprintf(probe, sizeof probe, "%s/ggml-vocab-llama-spm.gguf", argv[2]);
        FILE *f = fopen(probe, "rb");
        if (!f) {
            const char *req = getenv("PXL_REQUIRE_VOCAB");
            pxl_ctx_free(g_ctx);
            if (req && *req && strcmp(req, "0")) {
                fprintf(stderr, "%s is missing and PXL_REQUIRE_VOCAB is set (run scripts/fetch_vocab.sh)\n", probe);
                return 1;
            }
            fprintf(stderr, "%s is missing: skipped (scripts/fetch_vocab.sh fetches it)\n", probe);
            return PXL_SKIP;
        }
        fclose(f);
        const char *names[] = {"llama-spm", "llama-bpe", "qwen2", "gpt-2", "phi-3"};
        for (int i = 0; i < 5; i++) run_vocab(argv[2], names[i]);
        pxl_ctx_free(g_ctx);
        return test_result("test_tokenizer vocab");
    }
    test_spm();
    test_detokenizer_stream();
    test_bpe();
    test_gguf_metadata();
    pxl_ctx_free(g_ctx);
    return test_result("test_tokenizer");
}
