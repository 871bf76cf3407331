/*
 * pxl vm train: trains Pixel-LLM on the King James Bible (or --corpus FILE)
 * on the CPU, quantizes it to int8 and writes the pxVM image.
 */
#include "cli.h"
#include "cli_llm.h"
#include "pxl/vm.h"

#include <string.h>

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
    "Deterministic for a given --seed, whatever --threads.";

static int parse(int argc, char **argv, train_opts *o) {
    memset(o, 0, sizeof *o);
    pxl_llm_train_options d = pxl_llm_train_options_default();
    o->out = "models/pixel-llm.pxi";
    o->steps = (uint32_t)d.steps;
    o->seed = (uint32_t)d.seed;
    o->context = d.context;
    o->embed = d.embed;
    o->hidden = d.hidden;
    o->batch = d.batch;
    o->vm_check = d.vm_check;
    o->lr = d.lr;
    o->c.backend = PXL_BACKEND_CPU;
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

int cmd_vm_train(int argc, char **argv) {
    train_opts o;
    int p = parse(argc, argv, &o);
    if (p) return p == 1 ? 0 : 2;
    o.c.backend = PXL_BACKEND_CPU; /* training and the VM check run on the CPU */
    pxl_ctx *ctx;
    if (cli_open_ctx(&o.c, &ctx)) return 1;
    pxl_llm_train_options t = pxl_llm_train_options_default();
    t.corpus_path = o.corpus;
    t.steps = o.steps;
    t.batch = o.batch;
    t.lr = o.lr;
    t.seed = o.seed;
    t.context = o.context;
    t.embed = o.embed;
    t.hidden = o.hidden;
    t.vm_check = o.vm_check;
    t.verbose = !o.c.quiet;
    pxl_image *img = NULL;
    pxl_llm_train_report r;
    pxl_status s = pxl_llm_train(ctx, &t, &img, &r);
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
               "\"params\":%llu,\"steps\":%llu,\"batch\":%u,\"seed\":%u,\"threads\":%d,"
               "\"train_chars\":%llu,\"heldout_chars\":%llu,\"split\":",
               bytes, r.image_w, r.image_h, r.vocab, r.context, r.embed, r.hidden,
               (unsigned long long)r.params, (unsigned long long)r.steps, o.batch, o.seed,
               pxl_ctx_threads(ctx), (unsigned long long)r.train_chars,
               (unsigned long long)r.heldout_chars);
        cli_json_string(stdout, r.split);
        printf(",\"bpc\":{\"float\":%.4f,\"int8\":%.4f,\"trigram_kn\":%.4f},\"kn_discounts\":[%.2f,%.2f],"
               "\"train_bpc_last5pct\":%.4f,\"vm_checked\":%u,\"seconds\":{\"load\":%.2f,\"trigram\":%.2f,"
               "\"train\":%.2f,\"quantize_and_check\":%.2f,\"total\":%.2f}}\n",
               r.bpc_float, r.bpc_int8, r.bpc_trigram, r.kn_d2, r.kn_d3, r.train_loss_bpc, r.vm_checked,
               r.seconds_load, r.seconds_trigram, r.seconds_train, r.seconds_quant, r.seconds_total);
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
        printf("  VM check  %u held-out contexts: pxl_vm_run_cpu logits == C int8 reference\n", r.vm_checked);
    }
    pxl_image_free(img);
    pxl_ctx_free(ctx);
    return 0;
}
