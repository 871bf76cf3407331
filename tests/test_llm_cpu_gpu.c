/*
 * The same model on the CPU and on the GPU gives the same logits.
 *
 *   test_llm_cpu_gpu MODEL.gguf TOL [STEPS [TUNING]]
 *
 * Both backends evaluate a fixed prompt (BOS and 15 ids spread over the
 * vocabulary) in one prefill, then STEPS (default 16) tokens one at a time
 * (the CPU's greedy choice, fed to both), comparing every step's whole
 * logit row: the largest |CPU - GPU| must stay within TOL x (1 + the row's
 * largest |logit|). The two backends sum in different orders (f32 on the
 * GPU, blocks in double on the CPU): they agree to about 1e-6 here, and ctest
 * allows 1e-5. Both take activations as given (tuning gpu_q8=0 and
 * cpu_q8=0: by default both round a decoded token's to 8 bits, each where
 * its kernels do, which test_llm_ref holds to llama.cpp's references).
 * Exit 77 without a GPU.
 *
 * The GPU records each next one-token pass ahead (tuning llm_ahead), so the
 * steps also leave that path in every way it can be left, the same on both
 * sides: a rewind (step 5: back 2 positions, then a different token), a
 * chunk of 3 tokens (step 9), and a token without logits (step 12, compared
 * at step 13). TUNING, when given, is added to the GPU's tuning (e.g.
 * attn_fa=64,32: prompt attention in attn_fa.wgsl whatever the prompt's size).
 *
 *   test_llm_cpu_gpu MODEL.gguf --no-late-pipelines N
 *
 * GPU only: decodes N tokens one at a time from an empty cache and fails if
 * any GPU pipeline is made after the first one (the runtime makes the
 * kernels of long contexts, such as attention's split of the keys, before
 * its first decoded token: warm_decode in src/llm/model.c). Exit 77 without
 * a GPU.
 *
 *   test_llm_cpu_gpu MODEL.gguf --greedy N cpu|gpu [TUNING]
 *
 * pxl_llm_generate_greedy on one backend against the same backend's
 * pxl_llm_eval and the host's greedy pick, after a 16-token prompt: the same
 * N picks, given to the callback in order, n_past grown by N; with a
 * callback that stops at the 4th pick's id, the picks up to its first
 * occurrence, and a cache that then decodes on as the reference did (on a
 * GPU the pass over the stop token has already run); the argument errors.
 * Exit 77 without a GPU.
 */
#include "pxl/llm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    pxl_ctx *ctx;
    pxl_gguf *g;
    pxl_llm *m;
} side;

static int open_side_tuned(const char *path, pxl_backend b, const char *tuning, side *s) {
    memset(s, 0, sizeof *s);
    pxl_ctx_options o = pxl_ctx_options_default();
    o.backend = b;
    o.quiet = 1;
    o.tuning = tuning;
    if (pxl_ctx_create(&o, &s->ctx) != PXL_OK) return b == PXL_BACKEND_GPU ? 77 : 1;
    if (pxl_gguf_open(s->ctx, path, &s->g) != PXL_OK || pxl_llm_load(s->ctx, s->g, NULL, &s->m) != PXL_OK) {
        fprintf(stderr, "%s: %s\n", path, pxl_ctx_error(s->ctx));
        return 1;
    }
    return 0;
}

static int open_side(const char *path, pxl_backend b, side *s) { return open_side_tuned(path, b, "gpu_q8=0", s); }

static void close_side(side *s) {
    pxl_llm_free(s->m);
    pxl_gguf_free(s->g);
    pxl_ctx_free(s->ctx);
}

/* --no-late-pipelines N */
static int no_late_pipelines(const char *path, int n) {
    side g;
    int rc = open_side(path, PXL_BACKEND_GPU, &g);
    if (rc) {
        close_side(&g);
        return rc;
    }
    int64_t V = pxl_llm_get_info(g.m)->n_vocab, C = pxl_llm_get_info(g.m)->n_ctx;
    if (n > C) n = (int)C;
    float *lg = malloc((size_t)V * sizeof *lg);
    uint64_t after_first = 0;
    for (int i = 0; i < n && lg && !rc; i++) {
        int32_t tok = (int32_t)((i * 7919 + 1) % V);
        if (pxl_llm_eval(g.m, &tok, 1, lg, 0) != PXL_OK) {
            fprintf(stderr, "eval at %d: %s\n", i, pxl_ctx_error(g.ctx));
            rc = 1;
        }
        uint64_t misses = pxl_gpu_get_stats(g.ctx).pipeline_cache_misses;
        if (i == 0) after_first = misses;
        else if (misses != after_first) {
            fprintf(stderr, "%s: a pipeline was made at decoded token %d (context %d)\n", path, i, i + 1);
            rc = 1;
        }
    }
    if (!lg) rc = 1;
    printf("%s: %d tokens decoded on the GPU, %s\n", path, n, rc ? "FAILED" : "no pipeline made after the first");
    free(lg);
    close_side(&g);
    return rc;
}

static int32_t host_pick(const float *lg, int64_t V) {
    int64_t best = 0;
    for (int64_t i = 1; i < V; i++)
        if (lg[i] > lg[best] || (isnan(lg[best]) && !isnan(lg[i]))) best = i;
    return (int32_t)best;
}

#define GREEDY_MAX 64

/* the callback's record: the ids it got, and the one it stops at (-1: none) */
typedef struct {
    int32_t got[GREEDY_MAX];
    int n;
    int32_t stop_at;
} greedy_seen;

static int on_pick(void *user, int32_t id) {
    greedy_seen *g = user;
    if (g->n < GREEDY_MAX) g->got[g->n] = id;
    g->n++;
    return id == g->stop_at;
}

/* --greedy N cpu|gpu [TUNING] */
static int greedy(const char *path, int n, const char *backend, const char *tuning) {
    side sd;
    pxl_backend b = strcmp(backend, "gpu") ? PXL_BACKEND_CPU : PXL_BACKEND_GPU;
    int rc = open_side_tuned(path, b, tuning, &sd);
    if (rc) {
        close_side(&sd);
        return rc;
    }
    int64_t V = pxl_llm_get_info(sd.m)->n_vocab;
    if (n < 5) n = 5;
    if (n > GREEDY_MAX) n = GREEDY_MAX;
    float *lg = malloc((size_t)V * sizeof *lg), *reflg = NULL;
    int32_t ids[16], ref[GREEDY_MAX + 1], out[GREEDY_MAX];
    ids[0] = 1 < V ? 1 : 0;
    for (int i = 1; i < 16; i++) ids[i] = (int32_t)((i * 7919) % V);
    int fails = 0;
    size_t got = 0;
    int64_t base = 16;
#define G_CHECK(c, ...)                                                                                    \
    do {                                                                                                    \
        if (!(c)) {                                                                                         \
            fprintf(stderr, "greedy: " __VA_ARGS__);                                                        \
            fprintf(stderr, " (%s)\n", pxl_ctx_error(sd.ctx));                                              \
            fails++;                                                                                        \
        }                                                                                                   \
    } while (0)
    G_CHECK(lg && pxl_llm_eval(sd.m, ids, 16, lg, 0) == PXL_OK, "prompt");
    if (fails) goto done;
    /* the reference: eval and the host's pick, N + 1 picks (and their logits) */
    int32_t first = host_pick(lg, V), tok = first;
    reflg = malloc((size_t)(n + 1) * (size_t)V * sizeof *reflg);
    G_CHECK(reflg != NULL, "out of memory");
    for (int k = 0; k <= n && !fails; k++) {
        G_CHECK(pxl_llm_eval(sd.m, &tok, 1, lg, 0) == PXL_OK, "reference eval %d", k);
        memcpy(reflg + (size_t)k * (size_t)V, lg, (size_t)V * sizeof *lg);
        tok = ref[k] = host_pick(lg, V);
    }
    if (fails) goto done;
    /* pxl_llm_eval_view gives the same logits in place, pxl_llm_eval between
     * two views (step 2), and its last view is still held (on a GPU: mapped)
     * when the rewind and the generation below run */
    const float *vw = lg;
    G_CHECK(pxl_llm_eval_view(sd.m, &tok, 1, NULL) == PXL_ERR_INVALID_ARG, "view: logits NULL");
    G_CHECK(pxl_llm_rewind(sd.m, base) == PXL_OK, "rewind");
    tok = first;
    for (int k = 0; k <= n && !fails; k++) {
        const float *want = reflg + (size_t)k * (size_t)V;
        if (k == 2) {
            G_CHECK(pxl_llm_eval(sd.m, &tok, 1, lg, 0) == PXL_OK && !memcmp(lg, want, (size_t)V * sizeof *lg),
                    "eval between views, step %d", k);
        } else {
            G_CHECK(pxl_llm_eval_view(sd.m, &tok, 1, &vw) == PXL_OK && vw && vw != lg &&
                        !memcmp(vw, want, (size_t)V * sizeof *vw),
                    "view, step %d: the logits differ from eval's", k);
        }
        tok = ref[k];
    }
    if (fails) goto done;
    /* the same n picks */
    greedy_seen seen = {{0}, 0, -1};
    pxl_llm_greedy_options go = {on_pick, &seen};
    G_CHECK(pxl_llm_rewind(sd.m, base) == PXL_OK, "rewind");
    G_CHECK(pxl_llm_generate_greedy(sd.m, first, (size_t)n, &go, out, &got) == PXL_OK, "generate");
    G_CHECK(got == (size_t)n && pxl_llm_n_past(sd.m) == base + n, "%zu picks, n_past %lld (want %d, %lld)", got,
            (long long)pxl_llm_n_past(sd.m), n, (long long)(base + n));
    G_CHECK(seen.n == n, "the callback got %d picks", seen.n);
    for (int k = 0; k < n && k < (int)got; k++)
        G_CHECK(out[k] == ref[k] && seen.got[k] == ref[k], "pick %d: %d (callback %d), reference %d", k, out[k],
                seen.got[k], ref[k]);
    /* and the cache decodes on from there as the reference did */
    tok = out[n - 1];
    G_CHECK(pxl_llm_eval(sd.m, &tok, 1, lg, 0) == PXL_OK && host_pick(lg, V) == ref[n], "decoding on after %d picks", n);
    /* a stop id: the picks up to its first occurrence */
    int j = 0;
    while (ref[j] != ref[3]) j++;
    greedy_seen stop_seen = {{0}, 0, ref[3]};
    pxl_llm_greedy_options so = {on_pick, &stop_seen};
    G_CHECK(pxl_llm_rewind(sd.m, base) == PXL_OK, "rewind");
    G_CHECK(pxl_llm_generate_greedy(sd.m, first, (size_t)n, &so, out, &got) == PXL_OK, "generate with a stop");
    G_CHECK(stop_seen.n == j + 1, "stop: the callback got %d picks (want %d)", stop_seen.n, j + 1);
    G_CHECK(got == (size_t)j + 1 && pxl_llm_n_past(sd.m) == base + j + 1, "stop: %zu picks, n_past %lld (want %d)",
            got, (long long)pxl_llm_n_past(sd.m), j + 1);
    for (int k = 0; k <= j && k < (int)got; k++) G_CHECK(out[k] == ref[k], "stop: pick %d: %d, reference %d", k, out[k], ref[k]);
    tok = ref[j];
    G_CHECK(pxl_llm_eval(sd.m, &tok, 1, lg, 0) == PXL_OK && host_pick(lg, V) == ref[j + 1],
            "decoding on after the stop id");
    /* argument errors change nothing */
    int64_t np = pxl_llm_n_past(sd.m);
    int64_t C = pxl_llm_get_info(sd.m)->n_ctx;
    G_CHECK(pxl_llm_generate_greedy(sd.m, first, 0, NULL, out, &got) == PXL_ERR_INVALID_ARG && got == 0, "n = 0");
    G_CHECK(pxl_llm_generate_greedy(sd.m, (int32_t)V, 1, NULL, out, &got) == PXL_ERR_INVALID_ARG, "id out of range");
    G_CHECK(pxl_llm_generate_greedy(sd.m, -1, 1, NULL, out, &got) == PXL_ERR_INVALID_ARG, "id -1");
    G_CHECK(pxl_llm_generate_greedy(sd.m, first, (size_t)(C - np + 1), NULL, out, &got) == PXL_ERR_INVALID_ARG,
            "past the context");
    G_CHECK(pxl_llm_generate_greedy(sd.m, first, 1, NULL, out, NULL) == PXL_ERR_INVALID_ARG, "n_out NULL");
    G_CHECK(pxl_llm_n_past(sd.m) == np, "n_past moved by a refused call");
    /* out may be NULL: the callback alone gets the picks */
    greedy_seen only = {{0}, 0, -1};
    pxl_llm_greedy_options oo = {on_pick, &only};
    G_CHECK(pxl_llm_generate_greedy(sd.m, first, 3, &oo, NULL, &got) == PXL_OK && got == 3 && only.n == 3,
            "out NULL: %zu picks, %d to the callback", got, only.n);
done:
    printf("%s on %s%s%s: %d greedy picks against eval and the host's pick, %s\n", path, backend,
           tuning ? " with " : "", tuning ? tuning : "", n, fails ? "FAILED" : "same");
    free(lg), free(reflg);
    close_side(&sd);
    return fails ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc > 4 && !strcmp(argv[2], "--greedy"))
        return greedy(argv[1], atoi(argv[3]), argv[4], argc > 5 ? argv[5] : NULL);
    if (argc < 3) {
        fprintf(stderr, "usage: test_llm_cpu_gpu MODEL.gguf TOL [STEPS [TUNING]] | MODEL.gguf --no-late-pipelines N\n");
        return 2;
    }
    if (argc > 3 && !strcmp(argv[2], "--no-late-pipelines")) return no_late_pipelines(argv[1], atoi(argv[3]));
    float tol = strtof(argv[2], NULL);
    int steps = argc > 3 ? atoi(argv[3]) : 16;
    char gtune[256]; /* the GPU's tuning: activations as given, plus TUNING */
    snprintf(gtune, sizeof gtune, "gpu_q8=0%s%s", argc > 4 ? " " : "", argc > 4 ? argv[4] : "");
    side c, g;
    int rc = open_side_tuned(argv[1], PXL_BACKEND_CPU, "cpu_q8=0", &c);
    if (!rc) rc = open_side_tuned(argv[1], PXL_BACKEND_GPU, gtune, &g);
    if (rc) {
        close_side(&c);
        return rc;
    }
    int64_t V = pxl_llm_get_info(c.m)->n_vocab;
    float *lc = malloc((size_t)V * sizeof *lc), *lg = malloc((size_t)V * sizeof *lg);
    int32_t ids[16];
    ids[0] = 1 < V ? 1 : 0;
    for (int i = 1; i < 16; i++) ids[i] = (int32_t)((i * 7919) % V);
    int fails = 0;
    double worst = 0;
    int32_t tok = 0;
    for (int s = 0; s <= steps && !fails; s++) {
        int32_t three[3] = {tok, (int32_t)((tok + 11) % V), (int32_t)((tok + 29) % V)};
        const int32_t *in = s == 0 ? ids : s == 9 ? three : &tok;
        size_t n = s == 0 ? 16 : s == 9 ? 3 : 1;
        if (s == 5) {
            int64_t back = pxl_llm_n_past(c.m) - 2;
            tok = (int32_t)((tok + 101) % V);
            if (pxl_llm_rewind(c.m, back) != PXL_OK || pxl_llm_rewind(g.m, back) != PXL_OK) {
                fprintf(stderr, "rewind: %s / %s\n", pxl_ctx_error(c.ctx), pxl_ctx_error(g.ctx));
                fails++;
                break;
            }
        }
        if (s == 12) { /* no logits asked for */
            if (pxl_llm_eval(c.m, in, n, NULL, 0) != PXL_OK || pxl_llm_eval(g.m, in, n, NULL, 0) != PXL_OK) {
                fprintf(stderr, "eval: %s / %s\n", pxl_ctx_error(c.ctx), pxl_ctx_error(g.ctx));
                fails++;
                break;
            }
            tok = (int32_t)((tok + 7) % V);
            continue;
        }
        if (pxl_llm_eval(c.m, in, n, lc, 0) != PXL_OK || pxl_llm_eval(g.m, in, n, lg, 0) != PXL_OK) {
            fprintf(stderr, "eval: %s / %s\n", pxl_ctx_error(c.ctx), pxl_ctx_error(g.ctx));
            fails++;
            break;
        }
        double big = 0, diff = 0;
        int64_t best = 0, at = 0;
        for (int64_t i = 0; i < V; i++) {
            double a = fabs((double)lc[i]), d = fabs((double)lc[i] - (double)lg[i]);
            if (a > big) big = a;
            if (!(d <= diff)) {
                diff = d;
                at = i;
            }
            if (lc[i] > lc[best]) best = i;
        }
        double rel = diff / (1.0 + big);
        if (rel > worst) worst = rel;
        if (!(rel <= (double)tol)) {
            fprintf(stderr, "step %d: logit %lld CPU %.7g GPU %.7g (|diff| %.3g, %.3g of 1 + max |logit| %.3g)\n", s,
                    (long long)at, (double)lc[at], (double)lg[at], diff, rel, big);
            fails++;
        }
        tok = (int32_t)best;
    }
    printf("%s: %d steps, largest |CPU - GPU| / (1 + max |logit|) %.3g (tolerance %.3g), %s\n", argv[1], steps,
           worst, (double)tol, fails ? "FAILED" : "ok");
    free(lc);
    free(lg);
    close_side(&c);
    close_side(&g);
    return fails ? 1 : 0;
}
