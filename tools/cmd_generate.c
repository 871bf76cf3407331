/*
 * pxl generate: English-like text from Pixel-LLM. Each character is one run of
 * the model's pxVM image on the chosen backend; sampling happens on the host.
 */
#include "cli.h"
#include "cli_llm.h"
#include "pxl/vm.h"

#include <limits.h>
#include <string.h>

typedef struct {
    cli_common c;
    const char *model, *prompt;
    uint32_t tokens, top_k, seed;
    double temperature;
    int reference;
} gen_opts;

static const char *k_usage = "pxl generate [options]";
static const char *k_about =
    "Generates text with Pixel-LLM (models/pixel-llm.pxi, found beside the executable or in\n"
    "the source tree, or --model PATH). For every character the context's ids are written\n"
    "into the image, the pxVM program runs on the backend, and the int32 logits it leaves\n"
    "are sampled on the host: softmax(logit * scale / T) over the top K, with a PRNG seeded\n"
    "by --seed. The CPU and GPU interpreters give the same logits, so a seed gives the same\n"
    "text on both. Speed goes to stderr (or into --json).";

static int parse(int argc, char **argv, gen_opts *o) {
    memset(o, 0, sizeof *o);
    pxl_llm_gen_options d = pxl_llm_gen_options_default();
    o->tokens = d.tokens;
    o->temperature = d.temperature;
    o->top_k = d.top_k;
    o->seed = (uint32_t)d.seed;
    cli_opt opts[] = {
        {"model", CLI_STRING, &o->model, 0, 0, "PATH", "model image (default: models/pixel-llm.pxi)"},
        {"prompt", CLI_STRING, &o->prompt, 0, 0, "TEXT", "text the generated characters continue"},
        {"tokens", CLI_U32, &o->tokens, 0, 1000000, "N", "characters to generate (default 300)"},
        {"temperature", CLI_DOUBLE, &o->temperature, 0, 100, "T", "sampling temperature, 0 = greedy (default 0.8)"},
        {"top-k", CLI_U32, &o->top_k, 0, 1000, "K", "sample among the K likeliest characters (default 0: all)"},
        {"seed", CLI_U32, &o->seed, 0, 4294967295.0, "S", "sampling seed (default 1)"},
        {"reference", CLI_FLAG, &o->reference, 0, 0, NULL, "use the C int8 reference instead of the VM"},
        CLI_COMMON_OPTS(&o->c),
    };
    size_t n_opts = sizeof opts / sizeof opts[0];
    const char *pos[1];
    int n = cli_parse_command("pxl generate", k_usage, k_about, argc - 1, argv + 1, opts, n_opts, pos, 0,
                              &o->c.help);
    if (n < 0) return n == CLI_HELP_SHOWN ? 1 : 2;
    return 0;
}

int cmd_generate_parse(int argc, char **argv) {
    gen_opts o;
    return parse(argc, argv, &o);
}

static void print_token(void *user, const char *s, size_t n) {
    (void)user;
    fwrite(s, 1, n, stdout);
    fflush(stdout);
}

int cmd_generate(int argc, char **argv) {
    gen_opts o;
    int p = parse(argc, argv, &o);
    if (p) return p == 1 ? 0 : 2;
    pxl_ctx *ctx;
    if (cli_open_ctx(&o.c, &ctx)) return 1;
    char path[PATH_MAX];
    pxl_status s = PXL_OK;
    if (o.model) snprintf(path, sizeof path, "%s", o.model);
    else s = pxl_llm_default_path(ctx, path, sizeof path);
    pxl_llm *m = NULL;
    if (s == PXL_OK) s = pxl_llm_load(ctx, path, &m);
    if (s != PXL_OK) {
        fprintf(stderr, "pxl generate: %s\n", pxl_ctx_error(ctx));
        pxl_ctx_free(ctx);
        return 1;
    }
    pxl_llm_gen_options g = pxl_llm_gen_options_default();
    g.prompt = o.prompt;
    g.tokens = o.tokens;
    g.temperature = o.temperature;
    g.top_k = o.top_k;
    g.seed = o.seed;
    g.reference = o.reference;
    if (!o.c.json) {
        g.on_token = print_token;
        if (o.prompt) fputs(o.prompt, stdout);
    }
    pxl_llm_gen_result r;
    s = pxl_llm_generate(m, &g, &r);
    if (s != PXL_OK) {
        if (!o.c.json) fputc('\n', stdout);
        fprintf(stderr, "pxl generate: %s\n", pxl_ctx_error(ctx));
        pxl_llm_free(m);
        pxl_ctx_free(ctx);
        return 1;
    }
    const char *backend = o.reference ? "reference" : pxl_backend_name(r.backend);
    if (o.c.json) {
        printf("{\"model\":");
        cli_json_string(stdout, path);
        printf(",\"prompt\":");
        cli_json_string(stdout, o.prompt ? o.prompt : "");
        printf(",\"text\":");
        cli_json_string(stdout, r.text);
        printf(",\"tokens\":%u,\"seconds\":%.4f,\"tokens_per_s\":%.2f,\"backend\":\"%s\",\"seed\":%u,"
               "\"temperature\":%g,\"top_k\":%u}\n",
               r.tokens, r.seconds, r.tokens_per_s, backend, o.seed, o.temperature, o.top_k);
    } else {
        fputc('\n', stdout);
        fflush(stdout); /* the text before the stderr summary */
        if (!o.c.quiet)
            fprintf(stderr, "pxl generate: %u characters in %.2f s (%.1f tokens/s, backend %s)\n", r.tokens,
                    r.seconds, r.tokens_per_s, backend);
    }
    pxl_free(ctx, r.text);
    pxl_llm_free(m);
    pxl_ctx_free(ctx);
    return 0;
}
