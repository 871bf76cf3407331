/*
 * pxl's forward pass against llama.cpp's, on the same GGUF file.
 *
 *   test_llm_ref MODEL.gguf REF.txt cpu|gpu TOL [MISMATCHES [N_BATCH [KV_TYPE]]]
 *
 * REF.txt is what llama.cpp printed for a greedy run (tests/data/llm/make.sh,
 * through the llbench peer): "prompt_ids: ...", then "step k top5: id:logit
 * ..." lines, then "gen_ids: ...". The test feeds the same prompt ids, then at
 * every step checks that the logits pxl gives the reference's five ids are
 * within TOL of llama.cpp's (llama.cpp keeps K/V in f16 and, for quantized
 * weights, quantizes the activations too; pxl computes in f32, so TOL is
 * stated per file), and counts the steps where pxl's greedy token is not
 * llama.cpp's; then it feeds llama.cpp's token, so that one near tie cannot
 * derail the later steps.
 *
 *   test_llm_ref MODEL.gguf REF.txt cpu|gpu TOL [MISMATCHES [N_BATCH [KV_TYPE]]]
 *
 * Passes when every logit is within TOL and at most MISMATCHES (default 0)
 * greedy tokens differ. N_BATCH (default: the model's) splits the prompt
 * into passes of that many tokens, to check a chunked prefill (0: the
 * model's). KV_TYPE f32 (default) or f16: the KV cache's dtype (llama.cpp's
 * references were made with an f16 cache). Exit 77 when
 * the GPU is asked for and there is none. PXL_DUMP_LOGITS=FILE writes the
 * first step's logits as raw f32 (for bench/peers comparisons);
 * PXL_TEST_VERBOSE=1 prints each step's largest |logit diff|.
 */
#include "pxl/llm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXS 64

typedef struct {
    int32_t prompt[512];
    int n_prompt;
    int32_t top_id[MAXS][5];
    float top_logit[MAXS][5];
    int n_steps;
    int32_t gen[MAXS];
    int n_gen;
} ref_run;

static int read_ids(const char *s, int32_t *out, int cap) {
    int n = 0;
    char *end;
    for (;;) {
        long v = strtol(s, &end, 10);
        if (end == s || n == cap) break;
        out[n++] = (int32_t)v;
        s = end;
    }
    return n;
}

static int read_ref(const char *path, ref_run *r) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    memset(r, 0, sizeof *r);
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "prompt_ids:", 11)) r->n_prompt = read_ids(line + 11, r->prompt, 512);
        else if (!strncmp(line, "gen_ids:", 8)) r->n_gen = read_ids(line + 8, r->gen, MAXS);
        else if (!strncmp(line, "step ", 5) && r->n_steps < MAXS) {
            char *p = strstr(line, "top5:");
            if (!p) continue;
            p += 5;
            for (int k = 0; k < 5; k++) {
                char *end;
                long id = strtol(p, &end, 10);
                if (end == p || *end != ':') break;
                p = end + 1;
                r->top_id[r->n_steps][k] = (int32_t)id;
                r->top_logit[r->n_steps][k] = strtof(p, &end);
                p = end;
            }
            r->n_steps++;
        }
    }
    fclose(f);
    return r->n_prompt > 0 && r->n_steps > 0 && r->n_gen == r->n_steps ? 0 : -1;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: test_llm_ref MODEL.gguf REF.txt cpu|gpu TOL [MISMATCHES [N_BATCH [KV_TYPE]]]\n");
        return 2;
    }
    ref_run r;
    if (read_ref(argv[2], &r) != 0) {
        fprintf(stderr, "cannot read the reference %s\n", argv[2]);
        return 1;
    }
    int gpu = !strcmp(argv[3], "gpu");
    float tol = strtof(argv[4], NULL);
    pxl_ctx_options o = pxl_ctx_options_default();
    o.backend = gpu ? PXL_BACKEND_GPU : PXL_BACKEND_CPU;
    o.quiet = 1;
    o.tuning = getenv("PXL_TUNE"); /* as the CLI: PXL_TUNE=cpu_q8=0 runs the CPU references on f32 activations */
    const char *unchecked = getenv("PXL_TEST_UNCHECKED"); /* 1: as the GGUF commands run the GPU kernels */
    o.gpu_unchecked = unchecked && unchecked[0] == '1';
    pxl_ctx *ctx = NULL;
    if (pxl_ctx_create(&o, &ctx) != PXL_OK) {
        fprintf(stderr, "no %s context: %s\n", argv[3], ctx ? pxl_ctx_error(ctx) : "");
        pxl_ctx_free(ctx);
        return gpu ? 77 : 1;
    }
    pxl_gguf *g = NULL;
    pxl_llm *m = NULL;
    int fails = 0;
    float worst = 0.0f;
    const char *vb = getenv("PXL_TEST_VERBOSE"); /* 1: each step's largest difference */
    int verbose = vb && vb[0] == '1';
    int allowed = argc > 5 ? atoi(argv[5]) : 0, mismatches = 0;
    pxl_llm_options lo = {0, argc > 6 ? (uint32_t)strtoul(argv[6], NULL, 10) : 0, PXL_F32, 0};
    const char *kv = argc > 7 ? argv[7] : "f32";
    if (!strcmp(kv, "f16")) lo.kv_type = PXL_F16;
    else if (strcmp(kv, "f32") != 0) {
        fprintf(stderr, "KV_TYPE is f32 or f16, not %s\n", kv);
        pxl_ctx_free(ctx);
        return 2;
    }
    if (pxl_gguf_open(ctx, argv[1], &g) != PXL_OK || pxl_llm_load(ctx, g, &lo, &m) != PXL_OK) {
        fprintf(stderr, "%s: %s\n", argv[1], pxl_ctx_error(ctx));
        fails = 1;
        goto done;
    }
    int64_t V = pxl_llm_get_info(m)->n_vocab;
    float *logits = malloc((size_t)V * sizeof *logits);
    if (!logits) return 1;
    if (pxl_llm_eval(m, r.prompt, (size_t)r.n_prompt, logits, 0) != PXL_OK) {
        fprintf(stderr, "eval: %s\n", pxl_ctx_error(ctx));
        fails = 1;
    }
    for (int s = 0; s < r.n_steps && !fails; s++) {
        int64_t best = 0;
        for (int64_t i = 1; i < V; i++)
            if (logits[i] > logits[best]) best = i;
        float step_worst = 0.0f;
        for (int k = 0; k < 5; k++) {
            float d = fabsf(logits[r.top_id[s][k]] - r.top_logit[s][k]);
            if (d > worst) worst = d;
            if (d > step_worst) step_worst = d;
            if (!(d <= tol)) {
                fprintf(stderr, "step %d: logit of %d is %.5f, llama.cpp %.5f (|diff| %.5f > %.5f)\n", s,
                        r.top_id[s][k], (double)logits[r.top_id[s][k]], (double)r.top_logit[s][k], (double)d,
                        (double)tol);
                fails++;
            }
        }
        if (best != r.gen[s]) {
            fprintf(stderr, "step %d: greedy token %lld, llama.cpp %d (llama.cpp's margin %.4f)\n", s,
                    (long long)best, r.gen[s], (double)(r.top_logit[s][0] - r.top_logit[s][1]));
            mismatches++;
        }
        if (verbose) printf("step %d: largest |logit diff| %.5f\n", s, (double)step_worst);
        if (s == 0 && getenv("PXL_DUMP_LOGITS")) {
            FILE *f = fopen(getenv("PXL_DUMP_LOGITS"), "wb");
            if (!f || fwrite(logits, sizeof *logits, (size_t)V, f) != (size_t)V || fclose(f) != 0) fails++;
        }
        if (s + 1 < r.n_steps && pxl_llm_eval(m, &r.gen[s], 1, logits, 0) != PXL_OK) {
            fprintf(stderr, "eval: %s\n", pxl_ctx_error(ctx));
            fails++;
        }
    }
    free(logits);
    if (mismatches > allowed) fails++;
    printf("%s on %s, %s KV cache: %d prompt tokens, %d steps, largest |logit diff| %.5f (tolerance %.5f), %d "
           "greedy tokens differ (%d allowed), %d failures\n",
           argv[1], argv[3], kv, r.n_prompt, r.n_steps, (double)worst, (double)tol, mismatches, allowed, fails);
done:
    pxl_llm_free(m);
    pxl_gguf_free(g);
    pxl_ctx_free(ctx);
    return fails ? 1 : 0;
}
