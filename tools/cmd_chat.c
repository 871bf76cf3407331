/*
 * pxl chat: a conversation with a GGUF model. Each line of stdin is a user
 * turn (EOF ends, "/reset" clears the history); the whole conversation is
 * formatted with the model's chat template (src/llm/chat.c), tokenized with
 * special-token texts as tokens, and only what the KV cache does not already
 * hold is evaluated: the cache keeps the tokens of the last turn, the new
 * prompt's common prefix with them is kept (pxl_llm_rewind) and the rest is
 * evaluated, as llama.cpp's server does. The reply is sampled until an
 * end-of-generation token, --tokens, or a full context, streamed to stdout
 * (one line per turn), and appended to the history.
 */
#include "cli.h"
#include "cli_gguf.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *k_cmd = "pxl chat";

typedef struct {
    cli_common c;
    const char *model, *template_name, *system;
    uint32_t tokens, top_k, seed, ctx;
    const char *kv_type;
    double temperature, top_p, min_p, repeat_penalty;
} chat_opts;

static const char *k_usage = "pxl chat -m FILE [options] < conversation";
static const char *k_about =
    "Chats with a GGUF model (llama and qwen2 architectures). Each line of stdin is a user\n"
    "turn; EOF ends the chat and \"/reset\" clears the history. The conversation is formatted\n"
    "with the chat template the file's tokenizer.chat_template names (recognised as llama.cpp\n"
    "recognises it: chatml, llama2, llama3, mistral, phi3, zephyr, gemma, ...) or --chat-template;\n"
    "a file without a known template needs --chat-template. The KV cache is kept between turns:\n"
    "only the part of the formatted conversation it does not hold is evaluated. Each reply is\n"
    "streamed to stdout as one line; stderr gets the speed of each turn (not with --quiet).\n"
    "A reply stops at an end-of-generation token, --tokens, or a full context (with a message:\n"
    "/reset to go on). Sampling defaults are llama.cpp's (temperature 0.8, top-k 40, top-p 0.95,\n"
    "min-p 0.05, repeat penalty 1); --temperature 0 is greedy. Under --json each turn is one\n"
    "JSON object on its own line of stdout. A turn whose conversation does not fit the context\n"
    "is dropped from the history with a message and an empty reply line.";

#define UNSET_U32 UINT32_MAX
#define UNSET_D (-1.0)

static int parse(int argc, char **argv, chat_opts *o) {
    memset(o, 0, sizeof *o);
    o->tokens = 512;
    o->temperature = 0.8;
    o->seed = 1;
    o->top_k = UNSET_U32;
    o->top_p = o->min_p = o->repeat_penalty = UNSET_D;
    cli_opt opts[] = {
        {"model", CLI_STRING, &o->model, 0, 0, "FILE", "GGUF model file, also -m (required)"},
        {"chat-template", CLI_STRING, &o->template_name, 0, 0, "NAME",
         "chat template (default: the file's tokenizer.chat_template); --chat-template list shows the names"},
        {"system", CLI_STRING, &o->system, 0, 0, "TEXT", "system message opening the conversation"},
        {"tokens", CLI_U32, &o->tokens, 1, 1000000, "N", "most tokens per reply (default 512)"},
        {"temperature", CLI_DOUBLE, &o->temperature, 0, 100, "T", "sampling temperature, 0 = greedy (default 0.8)"},
        {"top-k", CLI_U32, &o->top_k, 0, 1000000, "K", "sample among the K likeliest (default 40; 0: all)"},
        {"top-p", CLI_DOUBLE, &o->top_p, 0, 1, "P", "nucleus sampling (default 0.95; 1: off)"},
        {"min-p", CLI_DOUBLE, &o->min_p, 0, 1, "P", "drop tokens below P x the likeliest (default 0.05)"},
        {"repeat-penalty", CLI_DOUBLE, &o->repeat_penalty, 0, 100, "R",
         "penalty on the last 64 tokens (default 1: off)"},
        {"ctx", CLI_U32, &o->ctx, 1, 1u << 24, "N", "context size (default: trained, at most 4096)"},
        CLI_KV_TYPE_OPT(&o->kv_type),
        {"seed", CLI_U32, &o->seed, 0, 4294967295.0, "S", "sampling seed (default 1)"},
        CLI_COMMON_OPTS(&o->c),
    };
    size_t n_opts = sizeof opts / sizeof opts[0];
    const char *pos[1];
    int n = cli_parse_command(k_cmd, k_usage, k_about, argc - 1, argv + 1, opts, n_opts, pos, 0, &o->c.help);
    if (n < 0) return n == CLI_HELP_SHOWN ? 1 : 2;
    return 0;
}

int cmd_chat_parse(int argc, char **argv) {
    chat_opts o;
    return parse(argc, argv, &o);
}

/* ---- the conversation ---- */

typedef struct {
    pxl_chat_message *m; /* roles static; contents are text[i] */
    char **text;         /* malloc'ed */
    size_t n, cap;
} history;

static int history_add(history *h, const char *role, const char *text, size_t len) {
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 8;
        pxl_chat_message *m = realloc(h->m, cap * sizeof *m);
        if (!m) return -1;
        h->m = m;
        char **t = realloc(h->text, cap * sizeof *t);
        if (!t) return -1;
        h->text = t;
        h->cap = cap;
    }
    char *c = malloc(len + 1);
    if (!c) return -1;
    memcpy(c, text, len);
    c[len] = 0;
    h->text[h->n] = c;
    h->m[h->n].role = role;
    h->m[h->n].content = c;
    h->n++;
    return 0;
}

/* Drops messages from index keep on. */
static void history_truncate(history *h, size_t keep) {
    while (h->n > keep) free(h->text[--h->n]);
}

/* A growable byte buffer (lines read, the reply). */
typedef struct {
    char *p;
    size_t n, cap;
} buf;

static int buf_add(buf *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = (b->cap ? b->cap * 2 : 256) + n;
        char *p = realloc(b->p, cap);
        if (!p) return -1;
        b->p = p;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
    return 0;
}

/* Reads one line of stdin without its "\n" (and a "\r" before it).
 * Returns 1 for a line, 0 at EOF with nothing read, -1 on a read error, -2
 * for a line over CLI_TEXT_MAX, -3 out of memory. */
static int read_line(buf *b) {
    b->n = 0;
    if (buf_add(b, "", 0) != 0) return -3;
    int c, any = 0;
    while ((c = getchar()) != EOF) {
        any = 1;
        if (c == '\n') break;
        if (b->n >= CLI_TEXT_MAX) return -2;
        char ch = (char)c;
        if (buf_add(b, &ch, 1) != 0) return -3;
    }
    if (c == EOF && ferror(stdin)) return -1;
    if (!any) return 0;
    if (b->n && b->p[b->n - 1] == '\r') b->p[--b->n] = 0;
    return 1;
}

/* ---- a session ---- */

typedef struct {
    const chat_opts *o;
    cli_gguf m;
    const pxl_llm_info *info;
    pxl_chat_template tmpl;
    pxl_sampler *smp;
    float *logits;
    int32_t *cached; /* the tokens in the KV cache, n_ctx of room */
    history h;
    size_t n_fixed; /* messages /reset keeps (the system message) */
    buf reply;
    unsigned turn;
} session;

/* Why the chat template cannot be used, as the message of an exit-1 failure. */
static int pick_template(session *S) {
    const chat_opts *o = S->o;
    if (o->template_name) {
        S->tmpl = pxl_chat_template_from_name(o->template_name);
        if (S->tmpl == PXL_CHAT_TEMPLATE_UNKNOWN)
            return cli_fail(o->c.json, 1, k_cmd, "unknown chat template '%s'; known: %s", o->template_name,
                            pxl_chat_template_list());
        return 0;
    }
    int64_t k = pxl_gguf_find_key(S->m.file, "tokenizer.chat_template");
    const char *t = NULL;
    size_t len = 0;
    if (k < 0 || pxl_gguf_kv_string(S->m.file, (size_t)k, &t, &len) != PXL_OK)
        return cli_fail(o->c.json, 1, k_cmd,
                        "%s has no chat template (tokenizer.chat_template); pass --chat-template NAME, one of: %s",
                        o->model, pxl_chat_template_list());
    S->tmpl = pxl_chat_template_detect(t, len);
    if (S->tmpl == PXL_CHAT_TEMPLATE_UNKNOWN)
        return cli_fail(o->c.json, 1, k_cmd,
                        "the chat template of %s is not one pxl knows; pass --chat-template NAME, one of: %s", o->model,
                        pxl_chat_template_list());
    return 0;
}

/* Writes the reply's bytes to stdout (not under --json) and keeps them. 0, or -1 on a write error. */
static int emit(session *S, const char *s, size_t n) {
    if (!n) return 0;
    if (buf_add(&S->reply, s, n) != 0) return -1;
    if (S->o->c.json) return 0;
    if (cli_write_stdout(s, n) != 0) return -1;
    fflush(stdout);
    return 0;
}

/* One line on stdout that ends a turn: the reply's newline, or under --json the turn's object. */
static int end_turn_output(session *S, size_t n_prompt, size_t n_reused, uint32_t made, const char *stop, double pp,
                           double tg) {
    if (!S->o->c.json) {
        if (cli_write_stdout("\n", 1) != 0) return -1;
        fflush(stdout);
        return 0;
    }
    printf("{\"turn\":%u,\"text\":", S->turn);
    cli_json_string_n(stdout, S->reply.p ? S->reply.p : "", S->reply.n);
    printf(",\"prompt_tokens\":%zu,\"reused_tokens\":%zu,\"tokens\":%u,\"stop\":\"%s\",\"prompt_tokens_per_s\":%.2f,"
           "\"tokens_per_s\":%.2f,\"template\":\"%s\"}\n",
           n_prompt, n_reused, made, stop, pp, tg, pxl_chat_template_name(S->tmpl));
    fflush(stdout);
    return ferror(stdout) ? -1 : 0;
}

/* Runs one user turn (already appended to the history). Returns 0 (the turn
 * ran, or was refused with a message: the chat goes on), or an exit code. */
static int run_turn(session *S) {
    const chat_opts *o = S->o;
    pxl_ctx *ctx = S->m.ctx;
    int json = o->c.json;
    S->reply.n = 0;
    if (buf_add(&S->reply, "", 0) != 0) return cli_fail(json, 1, k_cmd, "out of memory");
    char *text = NULL;
    size_t tlen = 0;
    if (pxl_chat_apply(ctx, S->tmpl, S->h.m, S->h.n, 1, &text, &tlen) != PXL_OK)
        return cli_fail(json, 1, k_cmd, "%s", pxl_ctx_error(ctx));
    int32_t *ids = NULL;
    size_t n = 0;
    pxl_tokenize_options to = {PXL_ADD_SPECIAL_DEFAULT, 1};
    pxl_status s = pxl_tokenize(S->m.tok, text, tlen, &to, &ids, &n);
    pxl_free(ctx, text);
    if (s != PXL_OK) return cli_fail(json, 1, k_cmd, "tokenizing the conversation: %s", pxl_ctx_error(ctx));
    int64_t n_ctx = S->info->n_ctx;
    if (n == 0 || (int64_t)n >= n_ctx) {
        /* the turn cannot run: it leaves the history, the chat goes on (/reset makes room) */
        pxl_free(ctx, ids);
        history_truncate(&S->h, S->h.n - 1);
        fprintf(stderr,
                "%s: the conversation is %zu tokens; the context holds %lld and needs room for the reply: /reset "
                "to start over (or raise --ctx, "
                "up to %lld)\n",
                k_cmd, n, (long long)n_ctx, (long long)S->info->n_ctx_train);
        return end_turn_output(S, n, 0, 0, "context full", 0, 0) ? cli_fail(json, 1, k_cmd, "cannot write the output")
                                                                  : 0;
    }
    /* keep the cached prefix the new prompt shares; at least one token is evaluated (for the logits) */
    size_t past = (size_t)pxl_llm_n_past(S->m.model), keep = 0;
    while (keep < past && keep < n && S->cached[keep] == ids[keep]) keep++;
    if (keep == n) keep--;
    s = pxl_llm_rewind(S->m.model, (int64_t)keep);
    double t0 = pxl_time_now();
    if (s == PXL_OK) s = pxl_llm_eval(S->m.model, ids + keep, n - keep, S->logits, 0);
    double t_prompt = pxl_time_now() - t0;
    if (s == PXL_OK) memcpy(S->cached + keep, ids + keep, (n - keep) * sizeof *ids);
    pxl_sampler_reset(S->smp);
    for (size_t i = 0; i < n; i++) pxl_sampler_accept(S->smp, ids[i]);
    pxl_free(ctx, ids);
    pxl_detokenizer *dt = NULL;
    pxl_detokenize_options dto = {0, 0}; /* the reply loses the space an SPM model puts before its first word */
    if (s == PXL_OK) s = pxl_detokenizer_create(S->m.tok, &dto, &dt);
    if (s != PXL_OK) {
        pxl_detokenizer_free(dt);
        (void)pxl_llm_rewind(S->m.model, 0); /* the cache's contents are not known any more */
        return cli_fail(json, 1, k_cmd, "%s", pxl_ctx_error(ctx));
    }
    uint32_t made = 0;
    const char *stop = "tokens";
    const char *piece;
    size_t piece_len;
    int rc = 0;
    double t1 = pxl_time_now();
    while (made < o->tokens) {
        int32_t tok;
        if ((s = pxl_sampler_sample(S->smp, S->logits, &tok)) != PXL_OK) break;
        if (pxl_tokenizer_is_eog(S->m.tok, tok)) {
            stop = "end of generation";
            break;
        }
        pxl_sampler_accept(S->smp, tok);
        made++;
        if ((s = pxl_detokenizer_push(dt, tok, &piece, &piece_len)) != PXL_OK) break;
        if (emit(S, piece, piece_len) != 0) {
            rc = cli_fail(json, 1, k_cmd, "cannot write the output");
            break;
        }
        if (made == o->tokens) break;
        int64_t pos = pxl_llm_n_past(S->m.model);
        if (pos >= n_ctx) {
            stop = "context full";
            break;
        }
        if ((s = pxl_llm_eval(S->m.model, &tok, 1, S->logits, 0)) != PXL_OK) break;
        S->cached[pos] = tok;
    }
    double t_gen = pxl_time_now() - t1;
    if (s == PXL_OK && !rc) {
        s = pxl_detokenizer_flush(dt, &piece, &piece_len);
        if (s == PXL_OK && emit(S, piece, piece_len) != 0) rc = cli_fail(json, 1, k_cmd, "cannot write the output");
    }
    pxl_detokenizer_free(dt);
    if (s != PXL_OK && !rc) {
        if (!json) cli_write_stdout("\n", 1);
        (void)pxl_llm_rewind(S->m.model, 0);
        return cli_fail(json, 1, k_cmd, "%s", pxl_ctx_error(ctx));
    }
    if (rc) return rc;
    double pp = t_prompt > 0 ? (double)(n - keep) / t_prompt : 0, tg = t_gen > 0 && made ? (double)made / t_gen : 0;
    if (end_turn_output(S, n, keep, made, stop, pp, tg) != 0) return cli_fail(json, 1, k_cmd, "cannot write the output");
    if (!strcmp(stop, "context full"))
        fprintf(stderr, "%s: the context of %lld tokens is full; the reply stops here: /reset to go on (or raise --ctx, "
                        "up to %lld)\n",
                k_cmd, (long long)n_ctx, (long long)S->info->n_ctx_train);
    if (!o->c.quiet)
        fprintf(stderr,
                "%s: turn %u: prompt %zu tokens (%zu from the cache, %zu evaluated at %.1f tokens/s); reply %u tokens "
                "at %.1f tokens/s (stop: %s)\n",
                k_cmd, S->turn, n, keep, n - keep, pp, made, tg, stop);
    if (history_add(&S->h, "assistant", S->reply.p, S->reply.n) != 0) return cli_fail(json, 1, k_cmd, "out of memory");
    return 0;
}

static void session_free(session *S) {
    history_truncate(&S->h, 0);
    free(S->h.m);
    free(S->h.text);
    free(S->reply.p);
    free(S->cached);
    free(S->logits);
    pxl_sampler_free(S->smp);
    cli_gguf_close(&S->m);
}

int cmd_chat(int argc, char **argv) {
    chat_opts o;
    int p = parse(argc, argv, &o);
    if (p) return p == 1 ? 0 : 2;
    int json = o.c.json;
    if (o.template_name && !strcmp(o.template_name, "list")) {
        for (size_t i = 0; i < pxl_chat_template_count(); i++) {
            const char *name = pxl_chat_template_name_at(i);
            if (cli_write_stdout(name, strlen(name)) != 0 || cli_write_stdout("\n", 1) != 0) return 1;
        }
        return 0;
    }
    if (!o.model) return cli_fail(json, 2, k_cmd, "--model (-m) FILE is required");
    if (o.template_name && pxl_chat_template_from_name(o.template_name) == PXL_CHAT_TEMPLATE_UNKNOWN)
        return cli_fail(json, 1, k_cmd, "unknown chat template '%s'; known: %s", o.template_name,
                        pxl_chat_template_list());
    session S;
    memset(&S, 0, sizeof S);
    S.o = &o;
    int rc = cli_gguf_open(k_cmd, &o.c, o.model, o.ctx, o.kv_type, &S.m);
    if (rc) return rc;
    if ((rc = pick_template(&S)) != 0) {
        session_free(&S);
        return rc;
    }
    S.info = pxl_llm_get_info(S.m.model);
    pxl_sampler_options so;
    memset(&so, 0, sizeof so);
    so.temperature = (float)o.temperature;
    so.top_k = o.top_k == UNSET_U32 ? 40 : (int32_t)o.top_k;
    so.top_p = o.top_p == UNSET_D ? 0.95f : (float)o.top_p;
    so.min_p = o.min_p == UNSET_D ? 0.05f : (float)o.min_p;
    so.repeat_penalty = o.repeat_penalty == UNSET_D ? 1.0f : (float)o.repeat_penalty;
    so.repeat_last_n = 64;
    so.seed = o.seed;
    S.logits = malloc((size_t)S.info->n_vocab * sizeof *S.logits);
    S.cached = malloc((size_t)S.info->n_ctx * sizeof *S.cached);
    if (!S.logits || !S.cached) {
        session_free(&S);
        return cli_fail(json, 1, k_cmd, "out of memory");
    }
    if (pxl_sampler_create(S.m.ctx, S.info->n_vocab, &so, &S.smp) != PXL_OK) {
        rc = cli_fail(json, 1, k_cmd, "%s", pxl_ctx_error(S.m.ctx));
        session_free(&S);
        return rc;
    }
    if (o.system && history_add(&S.h, "system", o.system, strlen(o.system)) != 0) {
        session_free(&S);
        return cli_fail(json, 1, k_cmd, "out of memory");
    }
    S.n_fixed = S.h.n;
    if (o.system && cli_utf8_bad_at(o.system, strlen(o.system)) < strlen(o.system)) {
        session_free(&S);
        return cli_fail(json, 1, k_cmd, "--system is not valid UTF-8");
    }
    int tty = isatty(STDIN_FILENO);
    if (!o.c.quiet)
        fprintf(stderr, "%s: %s (%s) on %s, template %s, context %lld: loaded in %.2f s%s\n", k_cmd, o.model,
                S.info->arch, pxl_backend_name(pxl_ctx_backend(S.m.ctx)), pxl_chat_template_name(S.tmpl),
                (long long)S.info->n_ctx, S.m.load_seconds, tty ? "; a line per turn, /reset, Ctrl-D ends" : "");
    buf line = {NULL, 0, 0};
    for (;;) {
        if (tty) {
            fputs("> ", stderr);
            fflush(stderr);
        }
        int r = read_line(&line);
        if (r == 0) break;
        if (r < 0) {
            rc = cli_fail(json, 1, k_cmd, "%s",
                          r == -1 ? "reading stdin failed" : r == -2 ? "a line of stdin is too long" : "out of memory");
            break;
        }
        if (line.n == 0) continue;
        if (!strcmp(line.p, "/reset")) {
            /* the KV cache stays: the next turn reuses what it shares with it (the system message) */
            history_truncate(&S.h, S.n_fixed);
            if (!o.c.quiet) fprintf(stderr, "%s: the history is cleared\n", k_cmd);
            continue;
        }
        size_t bad = cli_utf8_bad_at(line.p, line.n);
        if (bad < line.n) {
            fprintf(stderr, "%s: the line is not valid UTF-8 (byte %zu, 0x%02x); skipped\n", k_cmd, bad,
                    (unsigned)(unsigned char)line.p[bad]);
            continue;
        }
        S.turn++;
        if (history_add(&S.h, "user", line.p, line.n) != 0) {
            rc = cli_fail(json, 1, k_cmd, "out of memory");
            break;
        }
        if ((rc = run_turn(&S)) != 0) break;
    }
    if (tty && !rc) fputc('\n', stderr);
    free(line.p);
    session_free(&S);
    return rc;
}
