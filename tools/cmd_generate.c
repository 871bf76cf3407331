/*
 * pxl generate: text from a language model. --model FILE (-m FILE) picks the
 * runtime from the file's first bytes, not its name: a PNG is a Pixel-LLM
 * .pxi image (each character is one run of the model's pxVM image on the
 * chosen backend; sampling happens on the host); a GGUF file goes to the
 * GGUF runtime (cmd_generate_gguf.c). Without --model, the shipped Pixel-LLM.
 */
#include "cli.h"
#include "cli_gguf.h"
#include "cli_llm.h"
#include "pxl/pixel_llm.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What `pxl generate` primes a Bible-trained Pixel-LLM with when there is no prompt. */
#define GEN_DEFAULT_PRIME "of the LORD.\n"
#define GEN_MAX_MODEL_BYTES ((size_t)256 << 20) /* a .pxi is at most 2^25 pixels */

typedef struct {
    cli_common c;
    const char *model, *prompt, *prime, *file;
    uint32_t tokens, top_k, seed, ctx;
    const char *kv_type;
    double temperature, top_p, min_p, repeat_penalty, frequency_penalty, presence_penalty;
    uint32_t repeat_last_n;
    int reference, special;
} gen_opts;

#define UNSET_U32 UINT32_MAX
#define UNSET_D (-1.0)

static const char *k_usage = "pxl generate [-m FILE] [options]";
static const char *k_about =
    "Generates text with a language model. --model (-m) FILE picks the runtime from the\n"
    "file's contents, not its name: a GGUF file (llama and qwen2 architectures) runs on\n"
    "the GGUF runtime; a PNG is a Pixel-LLM image (.pxi); anything else is refused.\n"
    "GGUF: the prompt is tokenized as llama.cpp does (BOS per the metadata; --special\n"
    "parses special-token texts as tokens), stdout gets only the generated text, streamed;\n"
    "stderr the speed. Sampling defaults are llama.cpp's (temperature 0.8, top-k 40,\n"
    "top-p 0.95, min-p 0.05, repeat penalty 1); --temperature 0 is greedy. Generation\n"
    "stops at --tokens, an end-of-generation token, or a full context (with a message).\n"
    "Without --model: Pixel-LLM's models/pixel-llm.pxi, found beside the executable.\n"
    "Pixel-LLM: for every character the context's ids are written into the image, the pxVM program\n"
    "runs on the backend, and the int32 logits it leaves are sampled on the host:\n"
    "softmax(logit * scale / T) over the top K, with a PRNG seeded by --seed. The CPU and\n"
    "GPU interpreters give the same logits, so a seed gives the same text on both.\n"
    "Speed goes to stderr (or into --json); under --json a failure is a JSON object\n"
    "with \"error\" on stdout.";

static int parse(int argc, char **argv, gen_opts *o) {
    memset(o, 0, sizeof *o);
    o->tokens = 300;
    o->temperature = 0.8;
    o->seed = 1;
    o->prime = GEN_DEFAULT_PRIME;
    o->top_k = UNSET_U32;
    o->top_p = o->min_p = o->repeat_penalty = UNSET_D;
    cli_opt opts[] = {
        {"model", CLI_STRING, &o->model, 0, 0, "FILE",
         "model file, also -m: GGUF, or Pixel-LLM .pxi (default: models/pixel-llm.pxi)"},
        {"prompt", CLI_STRING, &o->prompt, 0, 0, "TEXT", "text the generated text continues"},
        {"file", CLI_STRING, &o->file, 0, 0, "F", "GGUF: read the prompt from F (- for stdin)"},
        {"prime", CLI_STRING, &o->prime, 0, 0, "TEXT",
         "context fed (not printed) when there is no prompt (default: \"of the LORD.\\n\")"},
        {"tokens", CLI_U32, &o->tokens, 1, 1000000, "N", "tokens (characters) to generate (default 300)"},
        {"temperature", CLI_DOUBLE, &o->temperature, 0, 100, "T", "sampling temperature, 0 = greedy (default 0.8)"},
        {"top-k", CLI_U32, &o->top_k, 0, 1000000, "K",
         "sample among the K likeliest (default: GGUF 40, Pixel-LLM 0; 0: all)"},
        {"top-p", CLI_DOUBLE, &o->top_p, 0, 1, "P", "GGUF: nucleus sampling (default 0.95; 1: off)"},
        {"min-p", CLI_DOUBLE, &o->min_p, 0, 1, "P", "GGUF: drop tokens below P x the likeliest (default 0.05)"},
        {"repeat-penalty", CLI_DOUBLE, &o->repeat_penalty, 0, 100, "R",
         "GGUF: penalty on the last 64 tokens (default 1: off)"},
        {"repeat-last-n", CLI_U32, &o->repeat_last_n, 0, 1000000, "N",
         "GGUF: tokens the penalties look back on (default 64; 0: 64)"},
        {"frequency-penalty", CLI_DOUBLE, &o->frequency_penalty, -10, 10, "F",
         "GGUF: subtract F x count of each token in the window (default 0)"},
        {"presence-penalty", CLI_DOUBLE, &o->presence_penalty, -10, 10, "P",
         "GGUF: subtract P from each token in the window (default 0)"},
        {"ctx", CLI_U32, &o->ctx, 1, 1u << 24, "N", "GGUF: context size (default: trained, at most 4096)"},
        {"kv-type", CLI_STRING, &o->kv_type, 0, 0, "f32|f16", "GGUF: KV cache type (default f32; f16: half the memory)"},
        {"special", CLI_FLAG, &o->special, 0, 0, NULL, "GGUF: special-token texts in the prompt are tokens"},
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

/* A failure: a JSON object on stdout under --json, else a line on stderr. Returns the exit code 1. */
static int fail(const gen_opts *o, const char *path, const char *msg) {
    if (o->c.json) {
        printf("{\"model\":");
        if (path) cli_json_string(stdout, path);
        else printf("null");
        printf(",\"status\":\"error\",\"error\":");
        cli_json_string(stdout, msg);
        printf("}\n");
        fflush(stdout);
    } else {
        fprintf(stderr, "pxl generate: %s\n", msg);
    }
    return 1;
}

typedef enum { MODEL_PXI, MODEL_GGUF, MODEL_UNKNOWN } model_kind;

/*
 * Reads the model file into *data (malloc'ed, freed by the caller) and says
 * what it is from its first bytes. The file is opened without blocking and
 * must be a regular file, so a FIFO or a directory is refused at once.
 * A GGUF file is recognised from its header alone (not read further).
 * Returns 0, or -1 with a message in err.
 */
static int read_model(const char *path, uint8_t **data, size_t *len, model_kind *kind, char *err,
                      size_t cap) {
    *data = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, cap, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(err, cap, "cannot read %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, cap, "%s is not a regular file (%s)", path,
                 S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO" : "a special file");
        close(fd);
        return -1;
    }
    size_t size = (size_t)st.st_size, cap_bytes = size < 8 ? 8 : size;
    if (cap_bytes > GEN_MAX_MODEL_BYTES) cap_bytes = GEN_MAX_MODEL_BYTES;
    uint8_t *buf = malloc(cap_bytes);
    if (!buf) {
        snprintf(err, cap, "out of memory reading %s", path);
        close(fd);
        return -1;
    }
    size_t n = 0;
    int read_error = 0;
    for (;;) {
        size_t want = cap_bytes - n;
        if (want == 0) break;
        ssize_t got = read(fd, buf + n, want);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            read_error = errno;
            break;
        }
        if (got == 0) break;
        n += (size_t)got;
        /* decide from the header before reading a large file any further */
        if (n >= 4 && memcmp(buf, "GGUF", 4) == 0) break;
    }
    close(fd);
    if (read_error) {
        snprintf(err, cap, "cannot read %s: %s", path, strerror(read_error));
        free(buf);
        return -1;
    }
    static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (n >= 4 && memcmp(buf, "GGUF", 4) == 0) *kind = MODEL_GGUF;
    else if (n >= 8 && memcmp(buf, png_sig, 8) == 0) *kind = MODEL_PXI;
    else *kind = MODEL_UNKNOWN;
    if (*kind == MODEL_PXI && size > GEN_MAX_MODEL_BYTES) {
        snprintf(err, cap, "%s: %zu bytes, more than a .pxi image can hold", path, size);
        free(buf);
        return -1;
    }
    *data = buf;
    *len = n;
    return 0;
}

static void print_token(void *user, const char *s, size_t n) {
    (void)user;
    fwrite(s, 1, n, stdout);
    fflush(stdout);
}

/*
 * Reads the model file at path and checks that it is a Pixel-LLM image
 * (the one runtime there is). *data (malloc'ed) holds its bytes. Returns 0,
 * or the exit code after reporting the failure.
 */
static int read_pxi_model(const gen_opts *o, const char *path, uint8_t **data, size_t *len, model_kind *kind) {
    char err[PATH_MAX + 160];
    if (read_model(path, data, len, kind, err, sizeof err) != 0) return fail(o, path, err);
    if (*kind == MODEL_PXI) return 0;
    free(*data);
    *data = NULL;
    if (*kind == MODEL_GGUF) return 0;
    snprintf(err, sizeof err, "%s: not a model pxl can run (expected a GGUF file or a Pixel-LLM .pxi image)", path);
    return fail(o, path, err);
}

static int generate_gguf(const gen_opts *o) {
    cli_gguf_gen g;
    memset(&g, 0, sizeof g);
    g.c = &o->c;
    g.path = o->model;
    g.prompt = o->prompt;
    g.prompt_file = o->file;
    g.tokens = o->tokens;
    g.ctx = o->ctx;
    g.kv_type = o->kv_type;
    g.seed = o->seed;
    g.special = o->special;
    g.sampling.temperature = (float)o->temperature;
    g.sampling.top_k = o->top_k == UNSET_U32 ? 40 : (int32_t)o->top_k;
    g.sampling.top_p = o->top_p == UNSET_D ? 0.95f : (float)o->top_p;
    g.sampling.min_p = o->min_p == UNSET_D ? 0.05f : (float)o->min_p;
    g.sampling.repeat_penalty = o->repeat_penalty == UNSET_D ? 1.0f : (float)o->repeat_penalty;
    g.sampling.repeat_last_n = o->repeat_last_n ? (int32_t)o->repeat_last_n : 64;
    g.sampling.frequency_penalty = (float)o->frequency_penalty;
    g.sampling.presence_penalty = (float)o->presence_penalty;
    g.sampling.seed = o->seed;
    return cli_gguf_generate(&g);
}

int cmd_generate(int argc, char **argv) {
    gen_opts o;
    int p = parse(argc, argv, &o);
    if (p) return p == 1 ? 0 : 2;
    /* a model file given is read and recognised before any backend is opened */
    uint8_t *data = NULL;
    size_t len = 0;
    char path[PATH_MAX];
    int rc;
    model_kind kind = MODEL_PXI;
    if (o.model) {
        snprintf(path, sizeof path, "%s", o.model);
        if ((rc = read_pxi_model(&o, path, &data, &len, &kind)) != 0) return rc;
        if (kind == MODEL_GGUF) return generate_gguf(&o);
    }
    if (o.file) return fail(&o, o.model, "--file is for GGUF models (Pixel-LLM takes --prompt)");
    if (o.top_k == UNSET_U32) o.top_k = 0;
    pxl_ctx_options co = cli_ctx_options(&o.c);
    pxl_ctx *ctx = NULL;
    pxl_status s = pxl_ctx_create(&co, &ctx);
    if (s != PXL_OK) {
        rc = fail(&o, o.model, ctx ? pxl_ctx_error(ctx) : pxl_status_str(s));
        free(data);
        pxl_ctx_free(ctx);
        return rc;
    }
    if (!o.model) {
        if (pxl_pllm_default_path(ctx, path, sizeof path) != PXL_OK) {
            rc = fail(&o, NULL, pxl_ctx_error(ctx));
            pxl_ctx_free(ctx);
            return rc;
        }
        if ((rc = read_pxi_model(&o, path, &data, &len, &kind)) != 0 ||
            (kind != MODEL_PXI && (rc = fail(&o, path, "the default model is not a Pixel-LLM image")) != 0)) {
            pxl_ctx_free(ctx);
            return rc;
        }
    }
    pxl_image *img = NULL;
    pxl_pllm *m = NULL;
    s = pxl_pxi_decode(ctx, data, len, &img);
    free(data);
    if (s == PXL_OK) s = pxl_pllm_open(ctx, img, &m);
    if (s != PXL_OK) {
        char err[PATH_MAX + 512];
        snprintf(err, sizeof err, "%s: %s", path, pxl_ctx_error(ctx));
        rc = fail(&o, path, err);
        pxl_ctx_free(ctx);
        return rc;
    }
    pxl_pllm_gen_options g;
    memset(&g, 0, sizeof g);
    g.prompt = o.prompt;
    g.prime = o.prime;
    g.tokens = o.tokens;
    g.temperature = o.temperature;
    g.greedy = o.temperature == 0;
    g.top_k = o.top_k;
    g.seed = o.seed;
    g.reference = o.reference;
    if (!o.c.json) {
        g.on_token = print_token;
        if (o.prompt) fputs(o.prompt, stdout);
    }
    pxl_pllm_gen_result r;
    s = pxl_pllm_generate(m, &g, &r);
    if (s != PXL_OK) {
        if (!o.c.json) fputc('\n', stdout);
        rc = fail(&o, path, pxl_ctx_error(ctx));
        pxl_pllm_free(m);
        pxl_ctx_free(ctx);
        return rc;
    }
    const char *backend = o.reference ? "reference" : pxl_backend_name(r.backend);
    if (o.c.json) {
        printf("{\"model\":");
        cli_json_string(stdout, path);
        printf(",\"runtime\":\"pixel-llm\",\"prompt\":");
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
    pxl_pllm_free(m);
    pxl_ctx_free(ctx);
    return 0;
}
