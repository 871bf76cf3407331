/*
 * pxl generate on a GGUF model: the prompt is tokenized as llama.cpp does,
 * evaluated in one prefill, and tokens are sampled until --tokens, an
 * end-of-generation token, or a full context (which stops with a message:
 * the context is not shifted). stdout gets only the generated text, streamed
 * as complete UTF-8; stderr the load time and tokens/s of the prompt and the
 * generation. Under --json one object on stdout at the end. Greedy sampling
 * without penalties (--temperature 0) generates through
 * pxl_llm_generate_greedy after the first token: on a GPU the picks are made
 * on the device, the same tokens the sampler would pick.
 */
#include "cli_gguf.h"

#include <stdlib.h>
#include <string.h>

static int write_text(int json, const char *s, size_t n, char **acc, size_t *acc_len, size_t *acc_cap) {
    if (!n) return 0;
    if (!json) {
        if (cli_write_stdout(s, n) != 0) return -1;
        fflush(stdout);
        return 0;
    }
    if (*acc_len + n + 1 > *acc_cap) {
        size_t cap = (*acc_cap ? *acc_cap * 2 : 1024) + n;
        char *a = realloc(*acc, cap);
        if (!a) return -1;
        *acc = a;
        *acc_cap = cap;
    }
    memcpy(*acc + *acc_len, s, n);
    *acc_len += n;
    (*acc)[*acc_len] = 0;
    return 0;
}

/* The generated text so far, and where it goes. */
typedef struct {
    int json;
    const pxl_tokenizer *tok;
    pxl_sampler *smp;
    pxl_detokenizer *dt;
    char *acc;
    size_t acc_len, acc_cap;
    uint32_t made;
    int eog;          /* stopped at an end-of-generation token */
    int write_failed; /* stdout refused the text */
    pxl_status s;
} gen_text;

/* Takes a sampled token: 1 (and not printed) at an end-of-generation token,
 * 1 when the text cannot be written or decoded; else prints its piece. */
static int emit(gen_text *g, int32_t id) {
    if (pxl_tokenizer_is_eog(g->tok, id)) {
        g->eog = 1;
        return 1;
    }
    const char *piece;
    size_t piece_len;
    pxl_sampler_accept(g->smp, id);
    g->made++;
    g->s = pxl_detokenizer_push(g->dt, id, &piece, &piece_len);
    if (g->s != PXL_OK) return 1;
    if (write_text(g->json, piece, piece_len, &g->acc, &g->acc_len, &g->acc_cap) != 0) {
        g->write_failed = 1;
        return 1;
    }
    return 0;
}

static int emit_cb(void *user, int32_t id) { return emit(user, id); }

/* Greedy sampling with no penalties: what pxl_llm_generate_greedy picks. */
static int plain_greedy(const pxl_sampler_options *o) {
    return o->temperature <= 0.0f && (o->repeat_penalty == 0.0f || o->repeat_penalty == 1.0f) &&
           o->frequency_penalty == 0.0f && o->presence_penalty == 0.0f;
}

int cli_gguf_generate(const cli_gguf_gen *o) {
    const char *cmd = "pxl generate";
    int json = o->c->json;
    char *file_text = NULL;
    size_t plen = 0;
    const char *prompt = o->prompt ? o->prompt : "";
    cli_gguf m;
    int rc = cli_gguf_open(cmd, o->c, o->path, o->ctx, o->kv_type, &m);
    if (rc) return rc;
    if (o->prompt_file) {
        char err[512];
        if (cli_read_text(m.ctx, o->prompt_file, CLI_TEXT_MAX, &file_text, &plen, err, sizeof err) != 0) {
            rc = cli_fail(json, 1, cmd, "%s", err);
            cli_gguf_close(&m);
            return rc;
        }
        prompt = file_text;
    } else {
        plen = strlen(prompt);
    }
    int32_t *ids = NULL;
    size_t n_ids = 0;
    rc = cli_gguf_tokenize_prompt(cmd, json, &m, prompt, plen, o->special, &ids, &n_ids);
    if (rc) {
        pxl_free(m.ctx, file_text);
        cli_gguf_close(&m);
        return rc;
    }
    const pxl_llm_info *I = pxl_llm_get_info(m.model);
    pxl_sampler *smp = NULL;
    pxl_detokenizer *dt = NULL;
    float *logits = malloc((size_t)I->n_vocab * sizeof *logits);
    pxl_status s = logits ? PXL_OK : PXL_ERR_OUT_OF_MEMORY;
    if (s == PXL_OK) s = pxl_sampler_create(m.ctx, I->n_vocab, &o->sampling, &smp);
    pxl_detokenize_options dto = {0, 0};
    if (s == PXL_OK) s = pxl_detokenizer_create(m.tok, &dto, &dt);
    for (size_t i = 0; s == PXL_OK && i < n_ids; i++) pxl_sampler_accept(smp, ids[i]);
    /* the prompt's pieces go through the detokenizer unprinted, so that the
     * first generated piece is decoded in context (SPM's leading space) */
    const char *piece;
    size_t piece_len;
    for (size_t i = 0; s == PXL_OK && i < n_ids; i++) s = pxl_detokenizer_push(dt, ids[i], &piece, &piece_len);
    double t0 = pxl_time_now();
    if (s == PXL_OK) s = pxl_llm_eval(m.model, ids, n_ids, logits, 0);
    double t_prompt = pxl_time_now() - t0;
    gen_text gt = {json, m.tok, smp, dt, NULL, 0, 0, 0, 0, 0, PXL_OK};
    const char *stop = "tokens";
    double t1 = pxl_time_now();
    int greedy = plain_greedy(&o->sampling);
    while (s == PXL_OK && gt.made < o->tokens) {
        int32_t tok;
        s = pxl_sampler_sample(smp, logits, &tok);
        if (s != PXL_OK) break;
        if (emit(&gt, tok)) break;
        if (gt.made == o->tokens) break;
        int64_t room = I->n_ctx - pxl_llm_n_past(m.model);
        if (room <= 0) break;
        if (greedy) { /* the rest at once: each pick goes through emit as it comes back */
            size_t n = o->tokens - gt.made < (uint64_t)room ? (size_t)(o->tokens - gt.made) : (size_t)room, got = 0;
            pxl_llm_greedy_options go = {emit_cb, &gt};
            s = pxl_llm_generate_greedy(m.model, tok, n, &go, NULL, &got);
            break;
        }
        s = pxl_llm_eval(m.model, &tok, 1, logits, 0);
    }
    if (s == PXL_OK) s = gt.s;
    if (gt.eog) stop = "end of generation";
    if (gt.write_failed) rc = cli_fail(json, 1, cmd, "cannot write the output");
    if (s == PXL_OK && !rc && !gt.eog && gt.made < o->tokens && pxl_llm_n_past(m.model) >= I->n_ctx) {
        stop = "context full";
        if (!o->c->quiet)
            fprintf(stderr, "\n%s: the context of %lld tokens is full; stopping (raise --ctx, up to %lld)\n", cmd,
                    (long long)I->n_ctx, (long long)I->n_ctx_train);
    }
    double t_gen = pxl_time_now() - t1;
    uint32_t made = gt.made;
    if (s == PXL_OK && !rc) {
        s = pxl_detokenizer_flush(dt, &piece, &piece_len);
        if (s == PXL_OK && write_text(json, piece, piece_len, &gt.acc, &gt.acc_len, &gt.acc_cap) != 0)
            rc = cli_fail(json, 1, cmd, "cannot write the output");
    }
    if (s != PXL_OK && !rc) {
        if (!json) fputc('\n', stdout);
        rc = cli_fail(json, 1, cmd, "%s", s == PXL_ERR_OUT_OF_MEMORY && !logits ? "out of memory" : pxl_ctx_error(m.ctx));
    }
    double pp = t_prompt > 0 ? (double)n_ids / t_prompt : 0, tg = t_gen > 0 && made ? (double)made / t_gen : 0;
    const char *backend = pxl_backend_name(pxl_ctx_backend(m.ctx));
    if (!rc) {
        if (json) {
            printf("{\"model\":");
            cli_json_string(stdout, o->path);
            printf(",\"runtime\":\"gguf\",\"arch\":");
            cli_json_string(stdout, I->arch);
            printf(",\"text\":");
            cli_json_string_n(stdout, gt.acc ? gt.acc : "", gt.acc_len);
            printf(",\"prompt_tokens\":%zu,\"tokens\":%u,\"stop\":\"%s\",\"load_s\":%.4f,\"prompt_tokens_per_s\":%.2f,"
                   "\"tokens_per_s\":%.2f,\"backend\":\"%s\",\"seed\":%llu,\"temperature\":%g,\"top_k\":%d,"
                   "\"top_p\":%g,\"min_p\":%g,\"repeat_penalty\":%g,\"ctx\":%lld}\n",
                   n_ids, made, stop, m.load_seconds, pp, tg, backend, (unsigned long long)o->sampling.seed,
                   (double)o->sampling.temperature, o->sampling.top_k, (double)o->sampling.top_p,
                   (double)o->sampling.min_p, (double)o->sampling.repeat_penalty, (long long)I->n_ctx);
        } else {
            fputc('\n', stdout);
            fflush(stdout);
            char mem[64] = "";
            if (I->gpu_bytes_estimate)
                snprintf(mem, sizeof mem, " (~%.0f MiB on the device)", (double)I->gpu_bytes_estimate / 1048576.0);
            if (!o->c->quiet)
                fprintf(stderr,
                        "pxl generate: %s (%s) on %s: loaded in %.2f s%s; prompt %zu tokens at %.1f tokens/s; "
                        "%u tokens at %.1f tokens/s (stop: %s)\n",
                        o->path, I->arch, backend, m.load_seconds, mem, n_ids, pp, made, tg, stop);
        }
    }
    free(gt.acc);
    free(logits);
    pxl_detokenizer_free(dt);
    pxl_sampler_free(smp);
    pxl_free(m.ctx, ids);
    pxl_free(m.ctx, file_text);
    cli_gguf_close(&m);
    return rc;
}
