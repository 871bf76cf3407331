/* Shared by the GGUF commands (cli_gguf.c). */
#ifndef PXL_TOOLS_CLI_GGUF_H
#define PXL_TOOLS_CLI_GGUF_H

#include "cli.h"
#include "pxl/llm.h"

/* A GGUF model opened for a command: its context, file, tokenizer and model. */
typedef struct cli_gguf {
    pxl_ctx *ctx;
    pxl_gguf *file;
    pxl_tokenizer *tok;
    pxl_llm *model;
    double load_seconds;
} cli_gguf;

/* Creates the context from c, opens path and loads its tokenizer and model
 * (n_ctx 0: the default; kv_type "f32", "f16" or NULL for f32: the KV
 * cache's dtype, --kv-type). Returns 0, or the exit code after reporting the
 * failure (a JSON error object under --json). */
int cli_gguf_open(const char *cmd, const cli_common *c, const char *path, uint32_t n_ctx, const char *kv_type,
                  cli_gguf *m);

/* The --kv-type option of the GGUF commands (a CLI_STRING into *field). */
#define CLI_KV_TYPE_OPT(field)                                                                         \
    {"kv-type", CLI_STRING, (field), 0, 0, "f32|f16", "KV cache type (default f32; f16: half the memory)"}
void cli_gguf_close(cli_gguf *m);

/* The offset of the first byte of s[0..len) that is not part of valid UTF-8, or len. */
size_t cli_utf8_bad_at(const char *s, size_t len);

/* Checks the prompt (valid UTF-8; it must leave at least one position of
 * the context for the reply) and tokenizes it as
 * llama.cpp does (BOS as the metadata says; special token texts as tokens
 * only with special). An empty prompt gives BOS alone. *ids is allocated on
 * m->ctx. Returns 0, or the exit code after reporting. */
int cli_gguf_tokenize_prompt(const char *cmd, int json, cli_gguf *m, const char *text, size_t len, int special,
                             int32_t **ids, size_t *n);

/* `pxl generate` on a GGUF file (cmd_generate.c hands over after recognising it). */
typedef struct cli_gguf_gen {
    const cli_common *c;
    const char *path, *prompt, *prompt_file;
    uint32_t tokens, ctx, seed;
    const char *kv_type; /* --kv-type: "f32", "f16" or NULL */
    int special;
    pxl_sampler_options sampling;
} cli_gguf_gen;
int cli_gguf_generate(const cli_gguf_gen *o);

#endif
