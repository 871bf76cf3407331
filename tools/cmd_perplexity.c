/*
 * pxl perplexity: a GGUF model's perplexity over a text, computed the way
 * llama.cpp's perplexity tool does by default, so that the numbers compare:
 *
 *  - the whole text is tokenized once (BOS as the tokenizer's metadata says,
 *    special-token texts as plain text);
 *  - the tokens are cut into n_chunk = n_tokens / n_ctx windows of n_ctx
 *    tokens (the rest is dropped; at least 2 * n_ctx tokens are needed);
 *  - each window starts from an empty KV cache, its first token replaced by
 *    BOS when the model adds one;
 *  - only the second half is scored: for i in [n_ctx/2, n_ctx - 1) the
 *    negative log-likelihood -log softmax(logits[i])[token[i + 1]], in double;
 *  - PPL = exp(mean nll), and its uncertainty exp(mean) * sqrt(var / (N - 1))
 *    with var = mean(nll^2) - mean(nll)^2 over all N scored tokens.
 *
 * The first half of a window is evaluated without logits and the second half
 * with every position's logits (the same attention, half the logits memory).
 * The running [k]ppl values go to stderr (as llama.cpp prints them; after
 * the progress bar when stderr is a terminal), "Final estimate" to stdout.
 */
#include "cli_gguf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    cli_common c;
    const char *model, *file;
    uint32_t ctx, chunks;
    const char *kv_type;
} ppl_opts;

static const char *k_usage = "pxl perplexity -m FILE -f TEXT [options]";
static const char *k_about =
    "Perplexity of a GGUF model over a text file, as llama.cpp's perplexity tool computes it by\n"
    "default: the text is tokenized once and cut into windows of --ctx tokens, each evaluated from\n"
    "an empty cache with BOS first (when the model adds BOS), scoring the second half of each\n"
    "window. Prints the running [chunk]ppl values on stderr and\n"
    "\"Final estimate: PPL = X +/- Y\" on stdout. The text needs at least 2 x --ctx tokens.";

static int parse(int argc, char **argv, ppl_opts *o) {
    memset(o, 0, sizeof *o);
    o->ctx = 512;
    cli_opt opts[] = {
        {"model", CLI_STRING, &o->model, 0, 0, "FILE", "GGUF model file, also -m"},
        {"file", CLI_STRING, &o->file, 0, 0, "TEXT", "the text to score, also -f (- for stdin)"},
        {"ctx", CLI_U32, &o->ctx, 4, 1u << 20, "N", "window (context) size in tokens (default 512)"},
        {"chunks", CLI_U32, &o->chunks, 0, 1u << 30, "N", "score at most N windows (default 0: all)"},
        CLI_KV_TYPE_OPT(&o->kv_type),
        CLI_COMMON_OPTS(&o->c),
    };
    size_t n_opts = sizeof opts / sizeof opts[0];
    const char *pos[1] = {NULL};
    int n = cli_parse_command("pxl perplexity", k_usage, k_about, argc - 1, argv + 1, opts, n_opts, pos, 0,
                              &o->c.help);
    if (n < 0) return n == CLI_HELP_SHOWN ? 1 : 2;
    if (!o->model) return cli_fail(o->c.json, 2, "pxl perplexity", "name the model with -m FILE");
    if (!o->file) return cli_fail(o->c.json, 2, "pxl perplexity", "name the text with -f TEXT");
    return 0;
}

int cmd_perplexity_parse(int argc, char **argv) {
    ppl_opts o;
    return parse(argc, argv, &o);
}

/* -log softmax(row)[tok], in double and shifted by the row's maximum. */
static double token_nll(const float *row, int64_t n_vocab, int32_t tok) {
    float mx = row[0];
    for (int64_t i = 1; i < n_vocab; i++)
        if (row[i] > mx) mx = row[i];
    double sum = 0;
    for (int64_t i = 0; i < n_vocab; i++) sum += exp((double)row[i] - (double)mx);
    return -((double)row[tok] - (double)mx - log(sum));
}

/* Appends to a growing string (the deferred [k]ppl line); returns 0 or -1. */
static int append(char **s, size_t *len, size_t *cap, const char *add) {
    size_t n = strlen(add);
    if (*len + n + 1 > *cap) {
        size_t c = (*cap ? *cap * 2 : 256) + n;
        char *p = realloc(*s, c);
        if (!p) return -1;
        *s = p;
        *cap = c;
    }
    memcpy(*s + *len, add, n + 1);
    *len += n;
    return 0;
}

int cmd_perplexity(int argc, char **argv) {
    const char *cmd = "pxl perplexity";
    ppl_opts o;
    int p = parse(argc, argv, &o);
    if (p) return p == 1 ? 0 : 2;
    int json = o.c.json;
    /* the text first (on a CPU context of its own), so that its errors come before a long load */
    char *text = NULL;
    size_t text_len = 0;
    char err[512];
    pxl_ctx_options tco = {0};
    tco.backend = PXL_BACKEND_CPU;
    tco.n_threads = 1;
    tco.quiet = 1;
    pxl_ctx *tctx = NULL;
    if (pxl_ctx_create(&tco, &tctx) != PXL_OK) {
        pxl_ctx_free(tctx);
        return cli_fail(json, 1, cmd, "out of memory");
    }
    if (cli_read_text(tctx, o.file, CLI_TEXT_MAX, &text, &text_len, err, sizeof err) != 0) {
        pxl_ctx_free(tctx);
        return cli_fail(json, 1, cmd, "%s", err);
    }
    if (text_len == 0) {
        pxl_free(tctx, text);
        pxl_ctx_free(tctx);
        return cli_fail(json, 1, cmd, "%s: the text is empty", o.file);
    }
    cli_gguf m;
    int rc = cli_gguf_open(cmd, &o.c, o.model, o.ctx, o.kv_type, &m);
    if (rc) {
        pxl_free(tctx, text);
        pxl_ctx_free(tctx);
        return rc;
    }
    const pxl_llm_info *I = pxl_llm_get_info(m.model);
    int32_t *ids = NULL;
    size_t n_ids = 0;
    float *logits = NULL;
    int32_t *win = NULL;
    double *running = NULL;
    char *line = NULL;
    size_t line_len = 0, line_cap = 0;
    if (pxl_tokenizer_add_eos(m.tok)) {
        rc = cli_fail(json, 1, cmd, "%s: the tokenizer adds EOS after the text; perplexity (as llama.cpp) needs a "
                      "model that does not", o.model);
        goto done;
    }
    int add_bos = pxl_tokenizer_add_bos(m.tok);
    int32_t bos = pxl_tokenizer_bos(m.tok);
    double t0 = pxl_time_now();
    pxl_tokenize_options to = {PXL_ADD_SPECIAL_DEFAULT, 0};
    if (pxl_tokenize(m.tok, text, text_len, &to, &ids, &n_ids) != PXL_OK) {
        rc = cli_fail(json, 1, cmd, "tokenizing %s: %s", o.file, pxl_ctx_error(m.ctx));
        goto done;
    }
    double t_tok = pxl_time_now() - t0;
    size_t n_ctx = o.ctx;
    if (n_ids < 2 * n_ctx) {
        rc = cli_fail(json, 1, cmd, "you need at least %zu tokens to evaluate perplexity with a context of %zu; "
                      "%s tokenizes to only %zu tokens (lower --ctx or use a longer text)",
                      2 * n_ctx, n_ctx, o.file, n_ids);
        goto done;
    }
    size_t n_chunk = n_ids / n_ctx;
    if (o.chunks && o.chunks < n_chunk) n_chunk = o.chunks;
    size_t first = n_ctx / 2, n_score = n_ctx - 1 - first, V = (size_t)I->n_vocab;
    logits = malloc((n_ctx - first) * V * sizeof *logits);
    win = malloc(n_ctx * sizeof *win);
    running = malloc(n_chunk * sizeof *running);
    if (!logits || !win || !running) {
        rc = cli_fail(json, 1, cmd, "out of memory (%zu x %zu logits)", n_ctx - first, V);
        goto done;
    }
    const char *backend = pxl_backend_name(pxl_ctx_backend(m.ctx));
    if (!o.c.quiet)
        fprintf(stderr, "%s: %s (%s) on %s: %zu tokens (tokenized in %.3f s), %zu chunks of %zu, scoring %zu "
                "per chunk\n", cmd, o.model, I->arch, backend, n_ids, t_tok, n_chunk, n_ctx, n_score);
    pxl_progress *prog = pxl_progress_begin(m.ctx, "perplexity", n_chunk);
    double nll = 0, nll2 = 0;
    size_t count = 0;
    double t1 = pxl_time_now();
    pxl_status s = PXL_OK;
    for (size_t k = 0; k < n_chunk && s == PXL_OK; k++) {
        const int32_t *src = ids + k * n_ctx;
        memcpy(win, src, n_ctx * sizeof *win);
        if (add_bos && bos >= 0) win[0] = bos;
        s = pxl_llm_rewind(m.model, 0);
        if (s == PXL_OK) s = pxl_llm_eval(m.model, win, first, NULL, 0);
        if (s == PXL_OK) s = pxl_llm_eval(m.model, win + first, n_ctx - first, logits, 1);
        if (s != PXL_OK) break;
        for (size_t i = 0; i < n_score; i++) {
            double v = token_nll(logits + i * V, I->n_vocab, src[first + i + 1]);
            nll += v;
            nll2 += v * v;
        }
        count += n_score;
        running[k] = exp(nll / (double)count);
        char item[64];
        snprintf(item, sizeof item, "[%zu]%.4f,", k + 1, running[k]);
        if (prog) {
            if (append(&line, &line_len, &line_cap, item) != 0) {
                s = PXL_ERR_OUT_OF_MEMORY;
                break;
            }
            pxl_progress_update(prog, k + 1);
        } else if (!o.c.quiet) {
            fputs(item, stderr);
            fflush(stderr);
        }
    }
    pxl_progress_end(prog);
    double secs = pxl_time_now() - t1;
    if (s != PXL_OK) {
        if (!prog && !o.c.quiet) fputc('\n', stderr);
        rc = cli_fail(json, 1, cmd, "%s", s == PXL_ERR_OUT_OF_MEMORY && !line ? "out of memory" : pxl_ctx_error(m.ctx));
        goto done;
    }
    if (!o.c.quiet) fprintf(stderr, "%s\n", line ? line : "");
    double mean = nll / (double)count, var = nll2 / (double)count - mean * mean;
    double ppl = exp(mean);
    double err_ppl = var > 0 && count > 1 ? sqrt(var / (double)(count - 1)) * ppl : 0;
    if (!(var > 0) && !o.c.quiet) fprintf(stderr, "%s: the variance of the log-likelihood is not positive\n", cmd);
    if (json) {
        printf("{\"model\":");
        cli_json_string(stdout, o.model);
        printf(",\"file\":");
        cli_json_string(stdout, o.file);
        printf(",\"arch\":");
        cli_json_string(stdout, I->arch);
        printf(",\"backend\":\"%s\",\"ppl\":%.6f,\"stderr\":%.6f,\"ctx\":%zu,\"chunks\":%zu,\"tokens\":%zu,"
               "\"scored\":%zu,\"seconds\":%.3f,\"chunk_ppl\":[",
               backend, ppl, err_ppl, n_ctx, n_chunk, n_ids, count, secs);
        for (size_t k = 0; k < n_chunk; k++) printf("%s%.6f", k ? "," : "", running[k]);
        printf("]}\n");
    } else {
        char out[128];
        int n = snprintf(out, sizeof out, "Final estimate: PPL = %.4f +/- %.5f\n", ppl, err_ppl);
        if (cli_write_stdout(out, (size_t)n) != 0) rc = 1;
        if (!o.c.quiet)
            fprintf(stderr, "%s: %zu chunks in %.2f s (%.1f tokens/s)\n", cmd, n_chunk, secs,
                    secs > 0 ? (double)(n_chunk * n_ctx) / secs : 0);
    }
done:
    free(line);
    free(running);
    free(win);
    free(logits);
    pxl_free(m.ctx, ids);
    pxl_free(tctx, text);
    pxl_ctx_free(tctx);
    cli_gguf_close(&m);
    return rc;
}
