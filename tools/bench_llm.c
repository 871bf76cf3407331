/*
 * pxl bench llm: a GGUF model's prompt-processing and generation speed, in
 * the manner of llama-bench (part of the bench subcommand, see cmd_bench.c).
 *
 *  - ppN: from an empty cache, one evaluation of N token ids (BOS first when
 *    the model adds BOS, the rest drawn from a fixed generator over the
 *    vocabulary), asking for the last token's logits as a prompt does;
 *  - tgN: from an empty cache, N evaluations of one token each (BOS or a
 *    drawn id first, then drawn ids), each leaving its logits in host memory
 *    (pxl_llm_eval_view: on a GPU the read-back buffer the pass copied them
 *    into, mapped, as llama.cpp leaves them in its output buffer);
 *  - tgN greedy (--greedy): from an empty cache, N tokens of greedy
 *    generation from the same first id (pxl_llm_generate_greedy: each token
 *    the last one's pick; on a GPU picked on the device, with no host round
 *    trip between tokens). Not a llama-bench test: llama-bench's tg feeds
 *    drawn ids and waits for each token's logits, as tgN does.
 * Each test runs once untimed (pp: the whole prompt; tg: one token, as
 * llama-bench warms up), then --reps timed runs; t/s is computed per run and
 * reported as mean and sample standard deviation. Every eval waits for its
 * logits on the host, so the times are complete on the GPU as on the CPU.
 */
#include "cli_gguf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int bench_llm(const cli_common *c, const char *path, uint32_t pp, uint32_t tg, uint32_t reps, const char *kv_type,
              int profile, int greedy);

#define PROFILE_MAX 64 /* kernels listed per test */

typedef struct {
    char name[32];
    uint32_t n_prompt, n_gen;
    int greedy; /* tgN greedy */
    double mean, sd, mean_s;
    double *ts; /* reps values */
    /* --profile: the kernels of one more run, slowest first */
    pxl_gpu_profile_entry *prof;
    size_t n_prof;
    uint64_t untimed;
    uint64_t busy_ns, submits_dispatches; /* whole submits timed */
    uint64_t submit_ns, wait_ns, submits;  /* host time in submits and in waits over the timed runs (GPU) */
} llm_test;

static uint32_t next_id(uint32_t *state, int64_t n_vocab) {
    *state = *state * 1664525u + 1013904223u;
    return (*state >> 8) % (uint32_t)n_vocab;
}

/* One timed run: pp (n_prompt > 0) or tg (n_gen > 0). Returns seconds, or -1 with the status in *s. */
static double run_once(cli_gguf *m, uint32_t n_prompt, uint32_t n_gen, int greedy, int32_t *ids, float *logits,
                       uint32_t *rng, pxl_status *s) {
    const pxl_llm_info *I = pxl_llm_get_info(m->model);
    int32_t bos = pxl_tokenizer_add_bos(m->tok) ? pxl_tokenizer_bos(m->tok) : -1;
    uint32_t n = n_prompt ? n_prompt : n_gen;
    for (uint32_t i = 0; i < n; i++) ids[i] = (int32_t)next_id(rng, I->n_vocab);
    if (bos >= 0) ids[0] = bos;
    *s = pxl_llm_rewind(m->model, 0);
    if (*s != PXL_OK) return -1;
    double t0 = pxl_time_now();
    if (n_prompt) {
        *s = pxl_llm_eval(m->model, ids, n_prompt, logits, 0);
    } else if (greedy) {
        size_t got = 0; /* the picks overwrite ids (the first is passed by value) */
        *s = pxl_llm_generate_greedy(m->model, ids[0], n_gen, NULL, ids, &got);
    } else {
        const float *lg = NULL;
        for (uint32_t i = 0; i < n_gen && *s == PXL_OK; i++) *s = pxl_llm_eval_view(m->model, ids + i, 1, &lg);
    }
    double t = pxl_time_now() - t0;
    return *s == PXL_OK ? t : -1;
}

/* The name of a GGUF general.file_type (llama.cpp's llama_ftype numbering),
 * or NULL for a number this table does not name. */
static const char *file_type_name(uint64_t ft) {
    static const char *const names[] = {"F32",    "F16",    "Q4_0",   "Q4_1",   NULL,     NULL,   NULL,
                                        "Q8_0",   "Q5_0",   "Q5_1",   "Q2_K",   "Q3_K_S", "Q3_K_M", "Q3_K_L",
                                        "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K"};
    if (ft < sizeof names / sizeof names[0]) return names[ft];
    return ft == 32 ? "BF16" : NULL;
}

static void fmt_count(char *buf, size_t cap, double v, const char *const *units, double step) {
    int u = 0;
    while (v >= step && units[u + 1]) {
        v /= step;
        u++;
    }
    snprintf(buf, cap, "%.2f %s", v, units[u]);
}

/* The profiles of test T, two more runs: whole submits (the GPU time of the
 * work as it runs unprofiled), then every dispatch timed per kernel. */
static pxl_status profile_test(cli_gguf *m, llm_test *T, int32_t *ids, float *logits, uint32_t *rng) {
    T->prof = calloc(PROFILE_MAX, sizeof *T->prof);
    if (!T->prof) return PXL_ERR_OUT_OF_MEMORY;
    pxl_gpu_profile_entry whole;
    size_t n = 0;
    pxl_gpu_profile_options wo = {1};
    pxl_status s = pxl_gpu_profile_begin(m->ctx, &wo);
    if (s != PXL_OK) return s;
    run_once(m, T->n_prompt, T->n_gen, T->greedy, ids, logits, rng, &s);
    pxl_status e = pxl_gpu_profile_end(m->ctx, &whole, 1, &n, NULL);
    if (s != PXL_OK || e != PXL_OK) return s != PXL_OK ? s : e;
    T->busy_ns = n ? whole.gpu_ns : 0;
    T->submits_dispatches = n ? whole.dispatches : 0;
    if ((s = pxl_gpu_profile_begin(m->ctx, NULL)) != PXL_OK) return s;
    run_once(m, T->n_prompt, T->n_gen, T->greedy, ids, logits, rng, &s);
    e = pxl_gpu_profile_end(m->ctx, T->prof, PROFILE_MAX, &n, &T->untimed);
    T->n_prof = n < PROFILE_MAX ? n : PROFILE_MAX;
    return s != PXL_OK ? s : e;
}

/* The per-kernel table of test T: time per token (tg) or per pass (pp). */
static void print_profile(const llm_test *T) {
    double per = T->n_gen ? (double)T->n_gen : 1.0, total = 0;
    for (size_t i = 0; i < T->n_prof; i++) total += (double)T->prof[i].gpu_ns;
    const char *unit = T->n_gen ? "token" : "pass";
    double wall_us = T->mean_s / per * 1e6, busy_us = (double)T->busy_ns / per * 1e-3;
    printf("\n%s, per %s: wall %.1f us; GPU busy %.1f us in %.1f dispatches (whole submits timed)", T->name, unit,
           wall_us, busy_us, (double)T->submits_dispatches / per);
    if (wall_us > busy_us) printf(", so %.1f us (%.0f%%) of the wall time the GPU has no work", wall_us - busy_us,
                                  100 * (wall_us - busy_us) / wall_us);
    printf("\nHost, per %s: %.1f us inside %.1f submits, %.1f us waiting on the GPU (overlapping where a "
           "submit waits: with --tune gpu_scopes=1, for its error scopes)",
           unit, (double)T->submit_ns / per * 1e-3, (double)T->submits / per, (double)T->wait_ns / per * 1e-3);
    printf("\nEach dispatch timed alone (a pass of its own): %.1f us in all\n", total / per * 1e-3);
    printf("| %-64s | %10s | %10s | %6s |\n", "kernel", "dispatches", "us", "share");
    printf("| %.64s | %.10s: | %.10s: | %.6s: |\n",
           "----------------------------------------------------------------", "----------", "----------", "------");
    for (size_t i = 0; i < T->n_prof; i++)
        printf("| %-64.64s | %10.1f | %10.1f | %5.1f%% |\n", T->prof[i].kernel, (double)T->prof[i].dispatches / per,
               (double)T->prof[i].gpu_ns / per * 1e-3, total > 0 ? 100.0 * (double)T->prof[i].gpu_ns / total : 0.0);
    if (T->untimed) printf("(%llu dispatches untimed)\n", (unsigned long long)T->untimed);
}

int bench_llm(const cli_common *c, const char *path, uint32_t pp, uint32_t tg, uint32_t reps, const char *kv_type,
              int profile, int greedy) {
    const char *cmd = "pxl bench llm";
    cli_gguf m;
    int rc = cli_gguf_open(cmd, c, path, 0, kv_type, &m);
    if (rc) return rc;
    if (profile && !pxl_gpu_get_info(m.ctx)) {
        cli_gguf_close(&m);
        return cli_fail(c->json, 2, cmd, "--profile times GPU kernels: it needs --backend gpu");
    }
    if (profile && !pxl_gpu_get_info(m.ctx)->has_timestamps) {
        cli_gguf_close(&m);
        return cli_fail(c->json, 2, cmd, "--profile needs timestamp queries, which this GPU adapter does not offer");
    }
    const pxl_llm_info *I = pxl_llm_get_info(m.model);
    if ((int64_t)pp > I->n_ctx || (int64_t)tg > I->n_ctx) {
        if (!c->quiet)
            fprintf(stderr, "%s: the context holds %lld tokens; clamping%s%s\n", cmd, (long long)I->n_ctx,
                    (int64_t)pp > I->n_ctx ? " --pp" : "", (int64_t)tg > I->n_ctx ? " --tg" : "");
        if ((int64_t)pp > I->n_ctx) pp = (uint32_t)I->n_ctx;
        if ((int64_t)tg > I->n_ctx) tg = (uint32_t)I->n_ctx;
    }
    /* the model's size, parameters and main weight type, from its tensors */
    uint64_t bytes = 0, by_type[64] = {0};
    double params = 0;
    for (size_t i = 0; i < pxl_gguf_n_tensors(m.file); i++) {
        const pxl_gguf_tensor *t = pxl_gguf_tensor_at(m.file, i);
        bytes += t->bytes;
        params += (double)t->ne[0] * (double)t->ne[1] * (double)t->ne[2] * (double)t->ne[3];
        if (t->type < 64 && t->ndim >= 2) by_type[t->type] += t->bytes;
    }
    uint32_t main_type = 0;
    for (uint32_t k = 1; k < 64; k++)
        if (by_type[k] > by_type[main_type]) main_type = k;
    /* the file's own type (general.file_type) where it names one, as llama-bench shows it; a mixed file
     * (Q4_K_M keeps some Q6_K and, at small widths, Q5_0 / Q8_0) is then not named by its largest tensors */
    const char *type_name = pxl_ggml_type_name(main_type);
    int64_t ki = pxl_gguf_find_key(m.file, "general.file_type");
    uint64_t ft = 0;
    if (ki >= 0 && pxl_gguf_kv_uint(m.file, (size_t)ki, &ft) == PXL_OK && file_type_name(ft))
        type_name = file_type_name(ft);
    char model_name[96], size_s[32], params_s[32];
    snprintf(model_name, sizeof model_name, "%s %s", I->arch, type_name);
    static const char *const byte_units[] = {"B", "KiB", "MiB", "GiB", "TiB", NULL};
    static const char *const count_units[] = {"", "K", "M", "B", "T", NULL};
    fmt_count(size_s, sizeof size_s, (double)bytes, byte_units, 1024);
    fmt_count(params_s, sizeof params_s, params, count_units, 1000);
    const char *backend = pxl_backend_name(pxl_ctx_backend(m.ctx));
    const pxl_gpu_info *gi = pxl_gpu_get_info(m.ctx);

    llm_test tests[3];
    size_t n_tests = 0;
    if (pp) {
        memset(&tests[n_tests], 0, sizeof tests[0]);
        snprintf(tests[n_tests].name, sizeof tests[0].name, "pp%u", pp);
        tests[n_tests++].n_prompt = pp;
    }
    if (tg) {
        memset(&tests[n_tests], 0, sizeof tests[0]);
        snprintf(tests[n_tests].name, sizeof tests[0].name, "tg%u", tg);
        tests[n_tests++].n_gen = tg;
    }
    if (tg && greedy) {
        memset(&tests[n_tests], 0, sizeof tests[0]);
        snprintf(tests[n_tests].name, sizeof tests[0].name, "tg%u greedy", tg);
        tests[n_tests].greedy = 1;
        tests[n_tests++].n_gen = tg;
    }
    uint32_t n_max = pp > tg ? pp : tg;
    int32_t *ids = malloc((n_max ? n_max : 1) * sizeof *ids);
    float *logits = malloc((size_t)I->n_vocab * sizeof *logits);
    for (size_t t = 0; t < n_tests; t++) tests[t].ts = calloc(reps, sizeof(double));
    pxl_status s = PXL_OK;
    int oom = !ids || !logits;
    for (size_t t = 0; t < n_tests; t++) oom |= !tests[t].ts;
    if (oom) {
        rc = cli_fail(c->json, 1, cmd, "out of memory");
        goto done;
    }
    /* the text table streams a row per test as it ends (flushed, as llama-bench
     * prints them, so a run cut short keeps what it measured); --json prints
     * one document at the end, and --profile's sections follow the table */
    if (!c->json) {
        printf("pxl bench llm: %s on %s (%s%s), %d CPU threads, n_ctx %lld, n_batch %lld, %u reps\n\n", path, backend,
               gi ? gi->adapter_name : "cpu", gi && !gi->unchecked ? ", bounds checks on" : "", pxl_ctx_threads(m.ctx),
               (long long)I->n_ctx, (long long)I->n_batch, reps);
        printf("| %-24s | %12s | %10s | %-8s | %8s | %20s |\n", "model", "size", "params", "backend", "test", "t/s");
        printf("| %.24s | %.12s: | %.10s: | %.8s | %.8s: | %.20s: |\n", "------------------------", "-----------",
               "---------", "--------", "-------", "-------------------");
        fflush(stdout);
    }
    pxl_progress *prog = pxl_progress_begin(m.ctx, "bench llm", (uint64_t)n_tests * (reps + 1));
    uint32_t rng = 1234;
    uint64_t step = 0;
    for (size_t t = 0; t < n_tests && s == PXL_OK; t++) {
        llm_test *T = &tests[t];
        /* warm-up: llama-bench runs the prompt once, or one generated token */
        run_once(&m, T->n_prompt, T->n_prompt ? 0 : 1, T->greedy, ids, logits, &rng, &s);
        pxl_progress_update(prog, ++step);
        double sum = 0, sum_s = 0;
        pxl_gpu_stats st0 = pxl_gpu_get_stats(m.ctx);
        for (uint32_t r = 0; r < reps && s == PXL_OK; r++) {
            double secs = run_once(&m, T->n_prompt, T->n_gen, T->greedy, ids, logits, &rng, &s);
            if (s != PXL_OK) break;
            T->ts[r] = secs > 0 ? (double)(T->n_prompt + T->n_gen) / secs : 0;
            sum += T->ts[r];
            sum_s += secs;
            pxl_progress_update(prog, ++step);
        }
        pxl_gpu_stats st1 = pxl_gpu_get_stats(m.ctx);
        T->submit_ns = (st1.submit_ns - st0.submit_ns) / reps;
        T->wait_ns = (st1.wait_ns - st0.wait_ns) / reps;
        T->submits = (st1.submits - st0.submits) / reps;
        T->mean = sum / reps;
        T->mean_s = sum_s / reps;
        double ss = 0;
        for (uint32_t r = 0; r < reps; r++) ss += (T->ts[r] - T->mean) * (T->ts[r] - T->mean);
        T->sd = reps > 1 ? sqrt(ss / (reps - 1)) : 0;
        if (profile && s == PXL_OK) s = profile_test(&m, T, ids, logits, &rng);
        if (!c->json && s == PXL_OK) {
            char ts[48];
            snprintf(ts, sizeof ts, "%.2f ± %.2f", T->mean, T->sd);
            printf("| %-24s | %12s | %10s | %-8s | %8s | %21s |\n", model_name, size_s, params_s, backend, T->name, ts);
            fflush(stdout);
        }
    }
    pxl_progress_end(prog);
    if (s != PXL_OK) {
        rc = cli_fail(c->json, 1, cmd, "%s", pxl_ctx_error(m.ctx));
        goto done;
    }
    if (c->json) {
        printf("{\"bench\":\"llm\",\"model\":");
        cli_json_string(stdout, path);
        printf(",\"model_type\":");
        cli_json_string(stdout, model_name);
        printf(",\"arch\":");
        cli_json_string(stdout, I->arch);
        printf(",\"size_bytes\":%llu,\"params\":%.0f,\"backend\":\"%s\",\"device\":", (unsigned long long)bytes,
               params, backend);
        cli_json_string(stdout, gi ? gi->adapter_name : "cpu");
        printf(",\"threads\":%d,\"n_ctx\":%lld,\"n_batch\":%lld,\"reps\":%u,\"results\":[", pxl_ctx_threads(m.ctx),
               (long long)I->n_ctx, (long long)I->n_batch, reps);
        for (size_t t = 0; t < n_tests; t++) {
            const llm_test *T = &tests[t];
            printf("%s{\"test\":\"%s\",\"n_prompt\":%u,\"n_gen\":%u,\"avg_ts\":%.6f,\"stddev_ts\":%.6f,"
                   "\"avg_s\":%.9f,\"samples_ts\":[",
                   t ? "," : "", T->name, T->n_prompt, T->n_gen, T->mean, T->sd, T->mean_s);
            for (uint32_t r = 0; r < reps; r++) printf("%s%.6f", r ? "," : "", T->ts[r]);
            printf("]");
            if (profile) {
                printf(",\"gpu_busy_ns\":%llu,\"untimed_dispatches\":%llu,\"profile\":[",
                       (unsigned long long)T->busy_ns, (unsigned long long)T->untimed);
                for (size_t i = 0; i < T->n_prof; i++) {
                    printf("%s{\"kernel\":", i ? "," : "");
                    cli_json_string(stdout, T->prof[i].kernel);
                    printf(",\"dispatches\":%llu,\"gpu_ns\":%llu}", (unsigned long long)T->prof[i].dispatches,
                           (unsigned long long)T->prof[i].gpu_ns);
                }
                printf("]");
            }
            printf("}");
        }
        printf("]}\n");
    } else {
        for (size_t t = 0; t < n_tests && profile; t++) print_profile(&tests[t]);
    }
done:
    for (size_t t = 0; t < n_tests; t++) {
        free(tests[t].ts);
        free(tests[t].prof);
    }
    free(ids);
    free(logits);
    cli_gguf_close(&m);
    return rc;
}
