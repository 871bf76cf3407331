/*
 * pxl bench dot: f32 dot product, CPU vs GPU, over sizes 2^min .. 2^max.
 *
 * Bandwidth counts the bytes the op must read: 8n (two f32 vectors); the
 * 4-byte result is ignored. GPU time comes from timestamp queries around a
 * recording of k back-to-back dots (k chosen so a recording reads >= 1 GiB,
 * at most 1000), divided by k; without timestamps it is wall time around
 * submit-and-wait. CPU time is wall time of pxl_dot_cpu on all threads.
 * Each figure is the median of --reps repetitions after a warm-up that keeps
 * the GPU busy for 0.25 s (the first run after idle is slower). Every
 * GPU result is checked against the CPU reference and its error reported.
 */
#include "cli.h"
#include "pxl/gpu.h"
#include "pxl/ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    cli_common c;
    uint32_t min_log2, max_log2, reps, pp, tg, level;
    int no_cpu, small, profile, greedy;
    const char *only, *model, *kv_type;
} bench_opts;

int bench_ops(pxl_ctx *ctx, const char *only, uint32_t reps, int json, int small);
int bench_llm(const cli_common *c, const char *path, uint32_t pp, uint32_t tg, uint32_t reps, const char *kv_type,
              int profile, int greedy);
int bench_ad(pxl_ctx *ctx, uint32_t level, uint32_t reps, int json);

static const char *k_usage = "pxl bench dot|ops|llm|ad [options]";
static const char *k_about =
    "dot: times the f32 dot product at sizes 2^E for E in [min, max] (default 10..28) on\n"
    "     the CPU and, unless --backend cpu, on the GPU. Reports GB/s counting 8n bytes\n"
    "     read, the GPU/CPU ratio, and the GPU result's error against the CPU reference.\n"
    "ops: times the kernel library on the GPU: f32/f16 matmul, softmax, RMSNorm, add,\n"
    "     SiLU, Q4_0/Q5_0/Q8_0/Q4_K/Q5_K/Q6_K/f16 matvec, the quantized products of a 512-token\n"
    "     prefill, decode and prompt attention, a chain of 1000 scale ops, and\n"
    "     1000 raw recorder dispatches (alternating two bind groups, or one): host cost per dispatch.\n"
    "     Each case is warmed up until the GPU's clocks have risen (at least 0.4 s).\n"
    "     bench/ops_compare.py runs the same cases in PyTorch and prints ratios.\n"
    "     With --backend cpu: the quantized / f16 matvec and small-M cases on the CPU threads.\n"
    "llm: a GGUF model's speed as llama-bench measures it: ppN (a prompt of N random token ids\n"
    "     from an empty cache) and tgN (N one-token evaluations), mean +/- std of t/s over --reps.\n"
    "     --profile (GPU): one more run of each test with a timestamp pair around every dispatch;\n"
    "     prints each kernel's dispatches and GPU time per token, and the wall time left to the\n"
    "     host and the gaps between kernels (from the unprofiled runs).\n"
    "     --greedy: also tgN greedy, N tokens of greedy generation (pxl_llm_generate_greedy: on a\n"
    "     GPU the picks are made on the device and no host round trip comes between tokens).\n"
    "ad:  residuals + Jacobian of the ARAP edge residual over every directed edge of the icosphere\n"
    "     of --level (7: 983,040 instances) on the GPU (resident, timestamps) and the CPU threads\n"
    "     (f32, f64; the baseline is CPU f32), and the fixed cost of one LM iteration on a\n"
    "     100-residual fit, GPU and CPU. bench/ad_peers.sh runs JAX and Ceres on the same problem.";

static int parse(int argc, char **argv, bench_opts *o, const char **what) {
    memset(o, 0, sizeof *o);
    o->min_log2 = 10;
    o->max_log2 = 28;
    o->reps = 5;
    o->pp = 512;
    o->tg = 128;
    o->level = 7;
    cli_opt opts[] = {
        {"min", CLI_U32, &o->min_log2, 0, 31, "E", "smallest size is 2^E (default 10)"},
        {"max", CLI_U32, &o->max_log2, 0, 31, "E", "largest size is 2^E (default 28)"},
        {"reps", CLI_U32, &o->reps, 1, 1000, "N", "timed repetitions per size (default 5)"},
        {"no-cpu", CLI_FLAG, &o->no_cpu, 0, 0, NULL, "dot: skip the CPU timing (still checks results)"},
        {"only", CLI_STRING, &o->only, 0, 0, "TEXT", "ops: only cases whose name contains TEXT"},
        {"small", CLI_FLAG, &o->small, 0, 0, NULL, "ops: tiny sizes (a smoke test for software adapters)"},
        {"model", CLI_STRING, &o->model, 0, 0, "FILE", "llm: the GGUF model, also -m"},
        {"pp", CLI_U32, &o->pp, 0, 1u << 20, "N", "llm: prompt tokens of the pp test (default 512; 0: none)"},
        {"tg", CLI_U32, &o->tg, 0, 1u << 20, "N", "llm: generated tokens of the tg test (default 128; 0: none)"},
        {"level", CLI_U32, &o->level, 0, 7, "L", "ad: icosphere level of the ARAP problem (default 7)"},
        {"kv-type", CLI_STRING, &o->kv_type, 0, 0, "f32|f16", "llm: KV cache type (default f32)"},
        {"greedy", CLI_FLAG, &o->greedy, 0, 0, NULL, "llm: also a tgN greedy test (pxl_llm_generate_greedy)"},
        {"profile", CLI_FLAG, &o->profile, 0, 0, NULL,
         "llm: then one more run of each test with every GPU dispatch timed: GPU time per kernel"},
        CLI_COMMON_OPTS(&o->c),
    };
    size_t n_opts = sizeof opts / sizeof opts[0];
    const char *pos[1] = {NULL};
    int n = cli_parse_command("pxl bench", k_usage, k_about, argc - 1, argv + 1, opts, n_opts, pos, 1, &o->c.help);
    if (n < 0) return n == CLI_HELP_SHOWN ? 1 : 2;
    if (n == 0)
        return cli_fail(o->c.json, 2, "pxl bench", "name a benchmark (dot, ops, llm or ad); see pxl bench --help");
    if (strcmp(pos[0], "dot") != 0 && strcmp(pos[0], "ops") != 0 && strcmp(pos[0], "llm") != 0 &&
        strcmp(pos[0], "ad") != 0)
        return cli_fail(o->c.json, 2, "pxl bench", "unknown benchmark '%.64s' (known: dot, ops, llm, ad)", pos[0]);
    if (strcmp(pos[0], "llm") == 0 && !o->model)
        return cli_fail(o->c.json, 2, "pxl bench llm", "name the model with -m FILE");
    if (strcmp(pos[0], "llm") == 0 && !o->pp && !o->tg)
        return cli_fail(o->c.json, 2, "pxl bench llm", "--pp 0 and --tg 0 leave nothing to measure");
    if (o->min_log2 > o->max_log2)
        return cli_fail(o->c.json, 2, "pxl bench", "--min %u is larger than --max %u", o->min_log2, o->max_log2);
    *what = pos[0];
    return 0;
}

int cmd_bench_parse(int argc, char **argv) {
    bench_opts o;
    const char *what;
    return parse(argc, argv, &o, &what);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, size_t n) {
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct {
    size_t n;
    double cpu_s, gpu_s, rel_err;
    int k;
    int timestamps;
} row;

/* Times k dots of resident buffers; returns seconds per dot. */
static pxl_status time_gpu(pxl_ctx *ctx, pxl_buffer *a, pxl_buffer *b, pxl_buffer *out, size_t n,
                           int k, int timestamps, double *secs) {
    pxl_recorder *rec;
    pxl_status s = pxl_recorder_begin(ctx, timestamps, &rec);
    if (s != PXL_OK) return s;
    for (int i = 0; i < k && s == PXL_OK; i++) s = pxl_dot_record(rec, a, b, n, out, 0);
    if (s != PXL_OK) {
        pxl_recorder_discard(rec);
        return s;
    }
    uint64_t ns = 0;
    double t0 = pxl_time_now();
    s = pxl_recorder_submit(rec, 1, timestamps ? &ns : NULL);
    double wall = pxl_time_now() - t0;
    *secs = (timestamps && ns ? (double)ns * 1e-9 : wall) / k;
    return s;
}

static int run_dot(pxl_ctx *ctx, const bench_opts *o) {
    const pxl_gpu_info *gi = pxl_gpu_get_info(ctx);
    size_t n_max = (size_t)1 << o->max_log2;
    size_t sizes = o->max_log2 - o->min_log2 + 1;
    float *a = malloc(n_max * sizeof(float)), *b = malloc(n_max * sizeof(float));
    row *rows = calloc(sizes, sizeof *rows);
    double *t = calloc(o->reps, sizeof *t);
    if (!a || !b || !rows || !t) {
        fprintf(stderr, "pxl bench: cannot allocate 2 x %zu floats\n", n_max);
        free(a), free(b), free(rows), free(t);
        return 1;
    }
    uint32_t x = 12345;
    for (size_t i = 0; i < n_max; i++) {
        x = x * 1664525u + 1013904223u;
        a[i] = (float)((x >> 8) & 0xffff) / 65536.0f - 0.5f;
        x = x * 1664525u + 1013904223u;
        b[i] = (float)((x >> 8) & 0xffff) / 65536.0f - 0.5f;
    }
    pxl_buffer *ga = NULL, *gb = NULL, *gout = NULL;
    int rc = 0;
    pxl_status s = PXL_OK;
    if (gi) {
        s = pxl_buffer_create(ctx, n_max * sizeof(float), &ga);
        if (s == PXL_OK) s = pxl_buffer_create(ctx, n_max * sizeof(float), &gb);
        if (s == PXL_OK) s = pxl_buffer_create(ctx, sizeof(float), &gout);
        if (s == PXL_OK) s = pxl_buffer_upload(ctx, ga, 0, a, n_max * sizeof(float));
        if (s == PXL_OK) s = pxl_buffer_upload(ctx, gb, 0, b, n_max * sizeof(float));
        if (s != PXL_OK) goto fail;
    }
    pxl_progress *prog = pxl_progress_begin(ctx, "bench dot", sizes);
    for (size_t si = 0; si < sizes; si++) {
        row *r = &rows[si];
        r->n = (size_t)1 << (o->min_log2 + si);
        float ref = 0;
        pxl_dot_cpu(ctx, a, b, r->n, &ref); /* warm-up and reference */
        if (!o->no_cpu) {
            for (uint32_t i = 0; i < o->reps; i++) {
                double t0 = pxl_time_now();
                float v;
                pxl_dot_cpu(ctx, a, b, r->n, &v);
                t[i] = pxl_time_now() - t0;
            }
            r->cpu_s = median(t, o->reps);
        }
        if (gi) {
            double bytes = 8.0 * (double)r->n;
            int k = (int)ceil((1024.0 * 1048576.0) / bytes);
            r->k = k < 1 ? 1 : (k > 1000 ? 1000 : k);
            r->timestamps = gi->has_timestamps;
            /* warm-up: keep the GPU busy for >= 0.25 s so clocks settle before timing */
            double dummy, t_warm = pxl_time_now();
            do s = time_gpu(ctx, ga, gb, gout, r->n, r->k, r->timestamps, &dummy);
            while (s == PXL_OK && pxl_time_now() - t_warm < 0.25);
            for (uint32_t i = 0; s == PXL_OK && i < o->reps; i++)
                s = time_gpu(ctx, ga, gb, gout, r->n, r->k, r->timestamps, &t[i]);
            if (s != PXL_OK) goto fail;
            r->gpu_s = median(t, o->reps);
            float got;
            s = pxl_buffer_download(ctx, gout, 0, &got, sizeof got);
            if (s != PXL_OK) goto fail;
            double scale = 0;
            for (size_t i = 0; i < r->n; i++) scale += fabs((double)a[i] * (double)b[i]);
            r->rel_err = scale > 0 ? fabs((double)got - (double)ref) / scale : 0;
        }
        pxl_progress_update(prog, si + 1);
    }
    pxl_progress_end(prog);

    if (o->c.json) {
        printf("{\"bench\":\"dot\",\"device\":");
        cli_json_string(stdout, gi ? gi->adapter_name : "cpu");
        printf(",\"api\":");
        cli_json_string(stdout, gi ? gi->backend : "none");
        printf(",\"cpu_threads\":%d,\"bytes_counted\":\"8n (a and b read once)\",\"results\":[",
               pxl_ctx_threads(ctx));
        for (size_t si = 0; si < sizes; si++) {
            row *r = &rows[si];
            double bytes = 8.0 * (double)r->n;
            printf("%s{\"n\":%zu,\"bytes\":%.0f", si ? "," : "", r->n, bytes);
            if (!o->no_cpu) printf(",\"cpu_s\":%.9g,\"cpu_gbps\":%.6g", r->cpu_s, bytes / r->cpu_s * 1e-9);
            if (gi)
                printf(",\"gpu_s\":%.9g,\"gpu_gbps\":%.6g,\"dots_per_submit\":%d,\"timing\":\"%s\","
                       "\"rel_err\":%.3g",
                       r->gpu_s, bytes / r->gpu_s * 1e-9, r->k, r->timestamps ? "timestamps" : "wall",
                       r->rel_err);
            if (gi && !o->no_cpu) printf(",\"gpu_over_cpu\":%.4g", r->cpu_s / r->gpu_s);
            printf("}");
        }
        printf("]}\n");
    } else {
        printf("dot f32 | GB/s counts 8n bytes read | CPU: %d threads | GPU: %s (%s, %s timing)\n",
               pxl_ctx_threads(ctx), gi ? gi->adapter_name : "none", gi ? gi->backend : "-",
               gi ? (gi->has_timestamps ? "timestamp" : "wall-clock") : "-");
        printf("%12s %12s %12s %10s %12s\n", "n", "CPU GB/s", "GPU GB/s", "GPU/CPU", "GPU rel.err");
        for (size_t si = 0; si < sizes; si++) {
            row *r = &rows[si];
            double bytes = 8.0 * (double)r->n;
            char cpu[32] = "-", gpu[32] = "-", ratio[32] = "-", err[32] = "-";
            if (!o->no_cpu) snprintf(cpu, sizeof cpu, "%.2f", bytes / r->cpu_s * 1e-9);
            if (gi) {
                snprintf(gpu, sizeof gpu, "%.2f", bytes / r->gpu_s * 1e-9);
                snprintf(err, sizeof err, "%.2e", r->rel_err);
                if (!o->no_cpu) snprintf(ratio, sizeof ratio, "%.2fx", r->cpu_s / r->gpu_s);
            }
            printf("%12zu %12s %12s %10s %12s\n", r->n, cpu, gpu, ratio, err);
        }
    }
    goto done;
fail:
    rc = cli_fail(o->c.json, 1, "pxl bench dot", "%s", pxl_ctx_error(ctx));
done:
    pxl_buffer_free(ga);
    pxl_buffer_free(gb);
    pxl_buffer_free(gout);
    free(a), free(b), free(rows), free(t);
    return rc;
}

int cmd_bench(int argc, char **argv) {
    bench_opts o;
    const char *what;
    int p = parse(argc, argv, &o, &what);
    if (p) return p == 1 ? 0 : 2;
    if (strcmp(what, "llm") == 0) return bench_llm(&o.c, o.model, o.pp, o.tg, o.reps, o.kv_type, o.profile, o.greedy);
    pxl_ctx *ctx;
    if (cli_open_ctx_unchecked(&o.c, &ctx)) return 1;
    if (strcmp(what, "ad") == 0) {
        int rc = bench_ad(ctx, o.level, o.reps, o.c.json);
        pxl_ctx_free(ctx);
        return rc;
    }
    if (strcmp(what, "ops") == 0) {
        if (!pxl_gpu_get_info(ctx) && o.c.backend != PXL_BACKEND_CPU) { /* 77: ctest's skip code */
            int rc = cli_fail(o.c.json, 77, "pxl bench ops", "needs a GPU (%s)", cli_no_gpu_reason(ctx));
            pxl_ctx_free(ctx);
            return rc;
        }
        int rc = bench_ops(ctx, o.only, o.reps, o.c.json, o.small);
        pxl_ctx_free(ctx);
        return rc;
    }
    if (!o.c.json && !pxl_gpu_get_info(ctx) && o.c.backend != PXL_BACKEND_CPU)
        fprintf(stderr, "pxl bench: no GPU (%s); timing the CPU only\n", cli_no_gpu_reason(ctx));
    int rc = run_dot(ctx, &o);
    pxl_ctx_free(ctx);
    return rc;
}
