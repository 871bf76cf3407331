/*
 * `pxl tokenize -m FILE.gguf [--special] [--no-bos] [--json] TEXT`: the token
 * ids of TEXT under the tokenizer a GGUF file describes (src/llm/tokenizer*.c),
 * each with its piece. Runs on the CPU; no backend is opened.
 */
#include "cli.h"
#include "pxl/llm.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    cli_common c;
    const char *model;
    int special, no_bos;
} tok_opts;

static const char *k_usage = "pxl tokenize -m FILE.gguf [--special] [--no-bos] [--json] TEXT";
static const char *k_about =
    "Tokenizes TEXT with the tokenizer of a GGUF file (tokenizer.ggml.model \"llama\":\n"
    "SentencePiece style, or \"gpt2\": byte-level BPE) and prints one line per token:\n"
    "its id and its piece (the bytes it stands for, as a JSON string). BOS/EOS are added\n"
    "as the file's metadata says unless --no-bos. With --special, control-token texts in\n"
    "TEXT (\"<|eot_id|>\") become their ids; without, they are plain text. --json prints\n"
    "{\"model\":...,\"n_tokens\":N,\"tokens\":[{\"id\":...,\"piece\":...},...]}.";

static int parse(int argc, char **argv, tok_opts *o, const char **text) {
    memset(o, 0, sizeof *o);
    cli_opt opts[] = {
        {"model", CLI_STRING, &o->model, 0, 0, "FILE", "GGUF file with tokenizer.ggml.* metadata (also -m)"},
        {"special", CLI_FLAG, &o->special, 0, 0, NULL, "match control-token texts in TEXT as tokens"},
        {"no-bos", CLI_FLAG, &o->no_bos, 0, 0, NULL, "add no BOS/EOS, whatever the metadata says"},
        CLI_COMMON_OPTS(&o->c),
    };
    const char *pos[1] = {NULL};
    int n = cli_parse_command("pxl tokenize", k_usage, k_about, argc - 1, argv + 1, opts, sizeof opts / sizeof opts[0],
                              pos, 1, &o->c.help);
    if (n < 0) return n == CLI_HELP_SHOWN ? 1 : 2;
    if (!o->model) {
        cli_fail(o->c.json, 2, "pxl tokenize", "--model FILE.gguf is required");
        return 2;
    }
    if (n != 1) {
        cli_fail(o->c.json, 2, "pxl tokenize", "one TEXT argument is required");
        return 2;
    }
    *text = pos[0];
    return 0;
}

int cmd_tokenize_parse(int argc, char **argv) {
    tok_opts o;
    const char *text;
    return parse(argc, argv, &o, &text);
}

int cmd_tokenize(int argc, char **argv) {
    tok_opts o;
    const char *text = NULL;
    int p = parse(argc, argv, &o, &text);
    if (p) return p == 1 ? 0 : 2;
    o.c.backend = PXL_BACKEND_CPU; /* tokenizing needs no GPU */
    pxl_ctx *ctx = NULL;
    if (cli_open_ctx(&o.c, &ctx)) return 1;
    pxl_gguf *g = NULL;
    pxl_tokenizer *tok = NULL;
    int32_t *ids = NULL;
    size_t n = 0;
    char *piece = NULL;
    int rc = 0;
    if (pxl_gguf_open(ctx, o.model, &g) != PXL_OK || pxl_tokenizer_from_gguf(g, &tok) != PXL_OK) {
        rc = cli_fail(o.c.json, 1, "pxl tokenize", "%s: %s", o.model, pxl_ctx_error(ctx));
        goto done;
    }
    pxl_tokenize_options to = {o.no_bos ? PXL_ADD_SPECIAL_OFF : PXL_ADD_SPECIAL_DEFAULT, o.special};
    if (pxl_tokenize(tok, text, strlen(text), &to, &ids, &n) != PXL_OK) {
        rc = cli_fail(o.c.json, 1, "pxl tokenize", "%s", pxl_ctx_error(ctx));
        goto done;
    }
    size_t cap = 256;
    piece = malloc(cap);
    if (!piece) {
        rc = cli_fail(o.c.json, 1, "pxl tokenize", "out of memory");
        goto done;
    }
    if (o.c.json) {
        printf("{\"model\":");
        cli_json_string(stdout, o.model);
        printf(",\"n_tokens\":%zu,\"tokens\":[", n);
    }
    for (size_t i = 0; i < n; i++) {
        size_t len = pxl_tokenizer_piece(tok, ids[i], 1, piece, cap);
        if (len > cap) {
            char *np = realloc(piece, len);
            if (!np) {
                rc = cli_fail(0, 1, "pxl tokenize", "out of memory");
                goto done;
            }
            piece = np;
            cap = len;
            pxl_tokenizer_piece(tok, ids[i], 1, piece, cap);
        }
        if (o.c.json) {
            printf("%s{\"id\":%d,\"piece\":", i ? "," : "", (int)ids[i]);
            cli_json_string_n(stdout, piece, len);
            printf("}");
        } else {
            printf("%6d ", (int)ids[i]);
            cli_json_string_n(stdout, piece, len);
            printf("\n");
        }
    }
    if (o.c.json) printf("]}\n");
done:
    free(piece);
    pxl_free(ctx, ids);
    pxl_tokenizer_free(tok);
    pxl_gguf_free(g);
    pxl_ctx_free(ctx);
    return rc;
}
