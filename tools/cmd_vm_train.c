/*
 * pxl vm train: fetches the corpus (the King James Bible through bible(1),
 * or --corpus FILE), trains Pixel-LLM on it (pxl_pllm_train: the CPU
 * threads), quantizes it to int8 and writes the pxVM image. The VM check
 * runs the CPU interpreter, and the GPU interpreter too on a GPU backend.
 */
#include "cli.h"
#include "cli_llm.h"
#include "pxl/gpu.h"
#include "pxl/pixel_llm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TRAIN_BIBLE_CMD "bible 'Gen1:1-Rev22:21' 2>/dev/null"
#define TRAIN_MAX_CORPUS ((size_t)1 << 31) /* 2 GiB */

typedef struct {
    cli_common c;
    const char *corpus, *out;
    uint32_t steps, seed, context, embed, hidden, batch, vm_check;
    double lr;
} train_opts;

static const char *k_usage = "pxl vm train [options]";
static const char *k_about =
    "Trains Pixel-LLM, a character-level neural n-gram model (C previous characters ->\n"
    "embeddings -> tanh hidden layer -> next-character logits), on the CPU threads, then\n"
    "quantizes it to int8 and writes one pxVM v1 image whose program computes the logits.\n"
    "The corpus is `bible 'Gen1:1-Rev22:21'` (Debian's bible-kjv) unless --corpus names a\n"
    "file; headings and verse numbers are dropped, verses become lines, and every 20th\n"
    "chapter is held out. Reports held-out bits per character of the float model, of the\n"
    "int8 model as the VM computes it, and of an interpolated Kneser-Ney trigram.\n"
    "Deterministic for a given --seed, whatever --threads. Training always runs on the\n"
    "CPU; the check that the VM gives the C reference's logits runs the CPU interpreter,\n"
    "and also the GPU interpreter when the backend is a GPU (--backend gpu fails without one).";

static int parse(int argc, char **argv, train_opts *o) {
    memset(o, 0, sizeof *o);
    o->out = "models/pixel-llm.pxi";
    o->steps = 12000;
    o->seed = 1;
    o->context = 16;
    o->embed = 24;
    o->hidden = 384;
    o->batch = 256;
    o->vm_check = 64;
    o->lr = 3e-3;
    cli_opt opts[] = {
        {"corpus", CLI_STRING, &o->corpus, 0, 0, "FILE", "train on this text (default: run bible(1))"},
        {"out", CLI_STRING, &o->out, 0, 0, "PATH", "image to write (default models/pixel-llm.pxi)"},
        {"steps", CLI_U32, &o->steps, 1, 10000000, "N", "optimiser steps (default 12000)"},
        {"batch", CLI_U32, &o->batch, 1, 65536, "N", "examples per step (default 256)"},
        {"lr", CLI_DOUBLE, &o->lr, 1e-6, 0.5, "X", "Adam peak learning rate (default 0.003)"},
        {"seed", CLI_U32, &o->seed, 0, 4294967295.0, "S", "seed (default 1)"},
        {"context", CLI_U32, &o->context, 1, 256, "C", "characters of context (default 16)"},
        {"embed", CLI_U32, &o->embed, 1, 256, "D", "embedding width (default 24)"},
        {"hidden", CLI_U32, &o->hidden, 1, 4096, "H", "hidden units (default 384)"},
        {"vm-check", CLI_U32, &o->vm_check, 0, 100000, "N",
         "held-out contexts run through the VM and compared with the C reference (default 64)"},
        CLI_COMMON_OPTS(&o->c),
    };
    size_t n_opts = sizeof opts / sizeof opts[0];
    const char *pos[1];
    int n = cli_parse_command("pxl vm train", k_usage, k_about, argc - 1, argv + 1, opts, n_opts, pos, 0,
                              &o->c.help);
    if (n < 0) return n == CLI_HELP_SHOWN ? 1 : 2;
    if ((uint64_t)o->context * o->embed > 65535) {
        fprintf(stderr, "pxl vm train: --context x --embed must be at most 65535\n");
        return 2;
    }
    return 0;
}

int cmd_vm_train_parse(int argc, char **argv) {
    train_opts o;
    return parse(argc, argv, &o);
}

/* Reads a corpus file (a regular file: opened without blocking, checked with fstat). */
static int read_corpus_file(const char *path, char **out, size_t *len) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        fprintf(stderr, "pxl vm train: cannot open corpus %s: %s\n", path, strerror(errno));
        if (fd >= 0) close(fd);
        return 1;
    }
    if (!S_ISREG(st.st_mode) || (size_t)st.st_size > TRAIN_MAX_CORPUS) {
        fprintf(stderr, "pxl vm train: corpus %s is %s\n", path,
                S_ISREG(st.st_mode) ? "larger than 2 GiB" : "not a regular file");
        close(fd);
        return 1;
    }
    size_t size = (size_t)st.st_size, n = 0;
    char *buf = malloc(size ? size : 1);
    int err = buf ? 0 : ENOMEM;
    while (!err && n < size) {
        ssize_t got = read(fd, buf + n, size - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) err = errno;
        if (got <= 0) break;
        n += (size_t)got;
    }
    close(fd);
    if (err) {
        fprintf(stderr, "pxl vm train: cannot read corpus %s: %s\n", path, strerror(err));
        free(buf);
        return 1;
    }
    *out = buf;
    *len = n;
    return 0;
}

/* Runs bible(1) for the whole King James Bible and keeps its output. */
static int read_bible(char **out, size_t *len) {
    FILE *f = popen(TRAIN_BIBLE_CMD, "r");
    if (!f) {
        fprintf(stderr, "pxl vm train: cannot run bible(1) (install bible-kjv or pass --corpus FILE)\n");
        return 1;
    }
    size_t cap = (size_t)8 << 20, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap || ferror(f)) break;
        char *p = cap < TRAIN_MAX_CORPUS ? realloc(buf, cap * 2) : NULL;
        if (!p) free(buf);
        buf = p, cap *= 2;
    }
    int bad = !buf || ferror(f);
    int rc = pclose(f);
    if (bad || rc != 0 || n < 1000) {
        fprintf(stderr,
                "pxl vm train: `bible 'Gen1:1-Rev22:21'` failed (status %d, %zu bytes); install bible-kjv "
                "(scripts/deps.sh) or pass --corpus FILE\n",
                rc, buf ? n : 0);
        free(buf);
        return 1;
    }
    *out = buf;
    *len = n;
    return 0;
}

int cmd_vm_train(int argc, char **argv) {
    train_opts o;
    int p = parse(argc, argv, &o);
    if (p) return p == 1 ? 0 : 2;
    pxl_ctx *ctx;
    if (cli_open_ctx(&o.c, &ctx)) return 1; /* --backend gpu without a GPU fails here */
    char *corpus = NULL;
    size_t corpus_len = 0;
    if (o.corpus ? read_corpus_file(o.corpus, &corpus, &corpus_len) : read_bible(&corpus, &corpus_len)) {
        pxl_ctx_free(ctx);
        return 1;
    }
    int gpu = pxl_ctx_backend(ctx) == PXL_BACKEND_GPU;
    const pxl_gpu_info *gi = gpu ? pxl_gpu_get_info(ctx) : NULL;
    const char *adapter = gi ? gi->adapter_name : "";
    if (!o.c.quiet && !o.c.json)
        fprintf(stderr, "pxl vm train: training on the CPU (%d threads); VM check on the CPU interpreter%s%s%s\n",
                pxl_ctx_threads(ctx), gpu ? " and the GPU interpreter (" : "", adapter, gpu ? ")" : "");
    pxl_pllm_train_options t;
    memset(&t, 0, sizeof t);
    t.corpus = corpus;
    t.corpus_len = corpus_len;
    t.steps = o.steps;
    t.batch = o.batch;
    t.lr = o.lr;
    t.seed = o.seed;
    t.context = o.context;
    t.embed = o.embed;
    t.hidden = o.hidden;
    t.vm_check = o.vm_check;
    t.no_vm_check = o.vm_check == 0;
    t.verbose = !o.c.quiet;
    pxl_image *img = NULL;
    pxl_pllm_train_report r;
    pxl_status s = pxl_pllm_train(ctx, &t, &img, &r);
    free(corpus);
    if (s == PXL_OK) s = pxl_pxi_save(ctx, img, o.out);
    if (s != PXL_OK) {
        fprintf(stderr, "pxl vm train: %s\n", pxl_ctx_error(ctx));
        pxl_image_free(img);
        pxl_ctx_free(ctx);
        return 1;
    }
    FILE *f = fopen(o.out, "rb");
    long bytes = -1;
    if (f) {
        if (fseek(f, 0, SEEK_END) == 0) bytes = ftell(f);
        fclose(f);
    }
    if (o.c.json) {
        printf("{\"out\":");
        cli_json_string(stdout, o.out);
        printf(",\"bytes\":%ld,\"image\":[%u,%u],\"vocab\":%u,\"context\":%u,\"embed\":%u,\"hidden\":%u,"
               "\"params\":%llu,\"steps\":%llu,\"batch\":%u,\"seed\":%u,\"threads\":%d,\"backend\":\"%s\","
               "\"train_chars\":%llu,\"heldout_chars\":%llu,\"split\":",
               bytes, r.image_w, r.image_h, r.vocab, r.context, r.embed, r.hidden,
               (unsigned long long)r.params, (unsigned long long)r.steps, o.batch, o.seed,
               pxl_ctx_threads(ctx), pxl_backend_name(pxl_ctx_backend(ctx)), (unsigned long long)r.train_chars,
               (unsigned long long)r.heldout_chars);
        cli_json_string(stdout, r.split);
        printf(",\"bpc\":{\"float\":%.4f,\"int8\":%.4f,\"trigram_kn\":%.4f},\"kn_discounts\":[%.2f,%.2f],"
               "\"train_bpc_last5pct\":%.4f,\"vm_checked\":%u,\"vm_checked_gpu\":%u,\"seconds\":{\"parse\":%.2f,\"trigram\":%.2f,"
               "\"train\":%.2f,\"quantize_and_check\":%.2f,\"total\":%.2f}}\n",
               r.bpc_float, r.bpc_int8, r.bpc_trigram, r.kn_d2, r.kn_d3, r.train_loss_bpc, r.vm_checked,
               r.vm_checked_gpu, r.seconds_parse, r.seconds_trigram, r.seconds_train, r.seconds_quant, r.seconds_total);
    } else {
        printf("Pixel-LLM: %s (%ld bytes, %u x %u pixels)\n", o.out, bytes, r.image_w, r.image_h);
        printf("  model     vocab %u, context %u, embed %u, hidden %u, %llu parameters (int8 in the image)\n",
               r.vocab, r.context, r.embed, r.hidden, (unsigned long long)r.params);
        printf("  training  %llu steps x %u examples, seed %u, %d threads, %.1f s (total %.1f s)\n",
               (unsigned long long)r.steps, o.batch, o.seed, pxl_ctx_threads(ctx), r.seconds_train,
               r.seconds_total);
        printf("  split     %llu train / %llu held-out characters: %s\n", (unsigned long long)r.train_chars,
               (unsigned long long)r.heldout_chars, r.split);
        printf("  held-out bits per character:\n");
        printf("    float model                       %.4f\n", r.bpc_float);
        printf("    int8 model (pxVM)                 %.4f\n", r.bpc_int8);
        printf("    trigram, interpolated Kneser-Ney  %.4f  (D2 %.2f, D3 %.2f)\n", r.bpc_trigram, r.kn_d2,
               r.kn_d3);
        printf("  VM check  %u held-out contexts: CPU interpreter logits == C int8 reference\n", r.vm_checked);
        if (gpu)
            printf("            %u held-out contexts: GPU interpreter (%s) logits == C int8 reference\n",
                   r.vm_checked_gpu, adapter);
    }
    pxl_image_free(img);
    pxl_ctx_free(ctx);
    return 0;
}
