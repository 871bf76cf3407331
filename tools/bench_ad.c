/*
 * pxl bench ad: the autodiff layer's speed (part of the bench subcommand, see
 * cmd_bench.c).
 *
 *  - arap_eval: residuals and Jacobian rows of the ARAP edge residual
 *    (docs/MESH.md) for every directed edge of the icosphere of --level
 *    (level 7: 983,040 instances), parameters gathered through the mesh's
 *    indices. GPU: the resident evaluator (pxl_ad_gpu_eval), --reps
 *    evaluations recorded back to back in one timed recording, time per
 *    evaluation from GPU timestamps (wall time without them); the data stays
 *    on the GPU. CPU: pxl_ad_eval on the context's threads, in f32 and f64,
 *    median of --reps. The baseline is the CPU f32 time on the same machine.
 *  - roundtrip N: pxl_ad_eval itself on the first N instances, the GPU path
 *    (upload, evaluate, download, widen to double) against the CPU's f64
 *    (its default), median of --reps: where the GPU starts to pay for a
 *    caller with data on the host (AUTO's threshold).
 *  - lm_iteration_100: the fixed cost of one Levenberg-Marquardt iteration on
 *    a 100-residual curve fit (y = a exp(-b x) + c), solved through the
 *    problem API with the evaluation on the GPU (CGNR, the whole solve on the
 *    GPU) and on the CPU (dense Cholesky, f64): total time / iterations.
 */
#include "cli.h"
#include "mesh.h"
#include "pxl/ad.h"
#include "pxl/gpu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int bench_ad(pxl_ctx *ctx, uint32_t level, uint32_t reps, int json);

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *v, size_t n) {
    qsort(v, n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Seconds per GPU evaluation (resident), or -1 with the context's message. */
static double time_gpu_eval(pxl_ctx *ctx, const pxl_ad_program *p, const mesh_arap *a, uint32_t reps, int *timed) {
    pxl_ad_gpu_eval *e = NULL;
    pxl_buffer *P = NULL, *R = NULL, *Jb = NULL;
    double secs = -1;
    const size_t np = 6 * a->nv, n = a->n_dir;
    float *xf = malloc(np * sizeof *xf);
    if (!xf) return -1;
    for (size_t j = 0; j < np; j++) xf[j] = (float)(a->x[j] + 0.01 * sin((double)j)); /* rotations away from 0 */
    const pxl_gpu_info *gi = pxl_gpu_get_info(ctx);
    *timed = gi && gi->has_timestamps;
    if (pxl_ad_gpu_eval_create(ctx, p, a->index, a->input, n, np, &e) != PXL_OK) goto done;
    if (pxl_buffer_create(ctx, np * 4, &P) != PXL_OK || pxl_buffer_upload(ctx, P, 0, xf, np * 4) != PXL_OK) goto done;
    if (pxl_buffer_create(ctx, n * 3 * 4, &R) != PXL_OK || pxl_buffer_create(ctx, n * 27 * 4, &Jb) != PXL_OK)
        goto done;
    /* warm-up: compiles the kernel, faults the buffers in */
    for (int w = 0; w < 3; w++)
        if (pxl_ad_gpu_eval_record(e, P, R, 0, Jb, 0) != PXL_OK) goto done;
    if (pxl_gpu_finish(ctx) != PXL_OK) goto done;
    pxl_recorder *rec;
    if (pxl_recorder_begin(ctx, *timed, &rec) != PXL_OK) goto done;
    for (uint32_t r = 0; r < reps; r++)
        if (pxl_ad_gpu_eval_record(e, P, R, 0, Jb, 0) != PXL_OK) {
            pxl_recorder_discard(rec);
            goto done;
        }
    uint64_t ns = 0;
    double t0 = pxl_time_now();
    if (pxl_recorder_submit(rec, 1, *timed ? &ns : NULL) != PXL_OK) goto done;
    double wall = pxl_time_now() - t0;
    if (!ns) *timed = 0;
    secs = (*timed ? (double)ns * 1e-9 : wall) / reps;
done:
    pxl_buffer_free(P);
    pxl_buffer_free(R);
    pxl_buffer_free(Jb);
    pxl_ad_gpu_eval_free(e);
    free(xf);
    return secs;
}

/* Median seconds of pxl_ad_eval on the CPU, or -1. */
static double time_cpu_eval(pxl_ctx *ctx, const pxl_ad_program *p, const mesh_arap *a, uint32_t reps,
                            pxl_ad_precision prec, double *res, double *jac) {
    double *t = malloc(reps * sizeof *t);
    if (!t) return -1;
    pxl_ad_eval_options o;
    memset(&o, 0, sizeof o);
    o.precision = prec;
    o.backend = PXL_AD_CPU;
    double secs = -1;
    for (uint32_t r = 0; r <= reps; r++) { /* the first run is a warm-up */
        double t0 = pxl_time_now();
        if (pxl_ad_eval(ctx, p, a->x, 6 * a->nv, a->index, a->input, a->n_dir, res, jac, &o) != PXL_OK) goto done;
        if (r) t[r - 1] = pxl_time_now() - t0;
    }
    secs = median_of(t, reps);
done:
    free(t);
    return secs;
}

/* Median seconds of pxl_ad_eval on the first n instances with backend b, or -1. */
static double time_roundtrip(pxl_ctx *ctx, const pxl_ad_program *p, const mesh_arap *a, size_t n, uint32_t reps,
                             pxl_ad_backend b, double *res, double *jac) {
    double *t = malloc(reps * sizeof *t);
    if (!t) return -1;
    pxl_ad_eval_options o;
    memset(&o, 0, sizeof o);
    o.backend = b;
    double secs = -1;
    for (uint32_t r = 0; r <= reps; r++) {
        double t0 = pxl_time_now();
        if (pxl_ad_eval(ctx, p, a->x, 6 * a->nv, a->index, a->input, n, res, jac, &o) != PXL_OK) goto done;
        if (r) t[r - 1] = pxl_time_now() - t0;
    }
    secs = median_of(t, reps);
done:
    free(t);
    return secs;
}

/* Seconds per LM iteration on a 100-residual fit, or -1; *iters the iterations. */
static double time_lm100(pxl_ctx *ctx, pxl_ad_backend backend, int *iters) {
    pxl_ad_graph *g = NULL;
    pxl_ad_program *p = NULL;
    pxl_ad_problem *pb = NULL;
    double secs = -1;
    if (pxl_ad_graph_create(ctx, &g) != PXL_OK) return -1;
    pxl_ad_value a = pxl_ad_param(g, 0), b = pxl_ad_param(g, 1), c = pxl_ad_param(g, 2);
    pxl_ad_value x = pxl_ad_input(g, 0), y = pxl_ad_input(g, 1);
    pxl_ad_output(g, pxl_ad_sub(g, pxl_ad_add(g, pxl_ad_mul(g, a, pxl_ad_exp(g, pxl_ad_neg(g, pxl_ad_mul(g, b, x)))), c), y));
    if (pxl_ad_compile(g, &p) != PXL_OK) goto done;
    uint32_t idx[300];
    double in[200];
    for (int i = 0; i < 100; i++) {
        in[2 * i] = 0.04 * i;
        in[2 * i + 1] = 2.5 * exp(-1.3 * in[2 * i]) + 0.5 + 0.01 * sin(37.0 * i);
        idx[3 * i] = 0, idx[3 * i + 1] = 1, idx[3 * i + 2] = 2;
    }
    if (pxl_ad_problem_create(ctx, 3, &pb) != PXL_OK || pxl_ad_problem_add(pb, p, idx, in, 100, NULL) != PXL_OK)
        goto done;
    pxl_ad_solve_options o;
    memset(&o, 0, sizeof o);
    o.eval.backend = backend;
    o.linear_solver = backend == PXL_AD_GPU ? PXL_AD_CGNR : PXL_AD_DENSE_CHOLESKY;
    o.function_tolerance = 1e-300; /* run all iterations: the cost per iteration is what is measured */
    o.gradient_tolerance = 1e-300;
    o.parameter_tolerance = 1e-300;
    o.max_iterations = 50;
    double best = -1;
    for (int rep = 0; rep < 4; rep++) { /* the first solve warms up (kernels compile) */
        double x0[3] = {1, 0.5, 0};
        pxl_ad_solve_summary s;
        if (pxl_ad_problem_solve(pb, x0, &o, &s) != PXL_OK) goto done;
        double per = s.total_seconds / (s.iterations ? s.iterations : 1);
        *iters = s.iterations;
        if (rep && (best < 0 || per < best)) best = per;
    }
    secs = best;
done:
    pxl_ad_problem_free(pb);
    pxl_ad_program_free(p);
    pxl_ad_graph_free(g);
    return secs;
}

int bench_ad(pxl_ctx *ctx, uint32_t level, uint32_t reps, int json) {
    const int gpu = pxl_gpu_get_info(ctx) != NULL;
    mesh m;
    memset(&m, 0, sizeof m);
    mesh_arap a;
    memset(&a, 0, sizeof a);
    uint32_t *edges = NULL;
    size_t n_edges = 0;
    pxl_ad_program *p = NULL;
    double *res = NULL, *jac = NULL;
    int rc = 1;
    if (mesh_icosphere((int)level, &m) || mesh_edges(&m, &edges, &n_edges) || mesh_arap_setup(&m, edges, n_edges, &a)) {
        cli_fail(json, 1, "pxl bench ad", "out of memory building the level-%u icosphere", level);
        goto done;
    }
    if (mesh_arap_program(ctx, &p) != PXL_OK) {
        cli_fail(json, 1, "pxl bench ad", "%s", pxl_ctx_error(ctx));
        goto done;
    }
    res = malloc(a.n_dir * 3 * sizeof *res);
    jac = malloc(a.n_dir * 27 * sizeof *jac);
    if (!res || !jac) {
        cli_fail(json, 1, "pxl bench ad", "out of memory (%zu instances)", a.n_dir);
        goto done;
    }
    if (!json)
        fprintf(stderr, "pxl bench ad: ARAP edge residual, icosphere level %u: %zu instances (residuals + Jacobian)\n",
                level, a.n_dir);
    double c32 = time_cpu_eval(ctx, p, &a, reps, PXL_AD_F32, res, jac);
    double c64 = time_cpu_eval(ctx, p, &a, reps, PXL_AD_F64, res, jac);
    int timed = 0;
    double g32 = gpu ? time_gpu_eval(ctx, p, &a, reps < 10 ? 10 : reps, &timed) : -1;
    if (c32 < 0 || c64 < 0 || (gpu && g32 < 0)) {
        cli_fail(json, 1, "pxl bench ad", "%s", pxl_ctx_error(ctx));
        goto done;
    }
    /* the round trip through pxl_ad_eval at growing sizes */
    enum { N_RT = 6 };
    const size_t rt_n[N_RT] = {1024, 4096, 16384, 65536, 262144, 983040};
    double rt_cpu[N_RT], rt_gpu[N_RT];
    for (int i = 0; i < N_RT; i++) {
        rt_cpu[i] = rt_gpu[i] = -1;
        if (rt_n[i] > a.n_dir) continue; /* a smaller level has fewer instances */
        rt_cpu[i] = time_roundtrip(ctx, p, &a, rt_n[i], reps, PXL_AD_CPU, res, jac);
        if (gpu) rt_gpu[i] = time_roundtrip(ctx, p, &a, rt_n[i], reps, PXL_AD_GPU, res, jac);
    }
    int it_g = 0, it_c = 0;
    double lm_g = gpu ? time_lm100(ctx, PXL_AD_GPU, &it_g) : -1;
    double lm_c = time_lm100(ctx, PXL_AD_CPU, &it_c);
    int failed = lm_c < 0 || (gpu && lm_g < 0);
    for (int i = 0; i < N_RT; i++)
        if (rt_n[i] <= a.n_dir && (rt_cpu[i] < 0 || (gpu && rt_gpu[i] < 0))) failed = 1;
    if (failed) { /* a measurement failed: say why, print no figures */
        cli_fail(json, 1, "pxl bench ad", "%s", pxl_ctx_error(ctx));
        goto done;
    }
    const int threads = pxl_ctx_threads(ctx);
    if (json) {
        printf("{\"bench\":\"ad\",\"level\":%u,\"instances\":%zu,\"threads\":%d,"
               "\"cpu_f32_ms\":%.4f,\"cpu_f64_ms\":%.4f,\"gpu_ms\":%.4f,\"gpu_timed\":%s,"
               "\"gpu_vs_cpu_f32\":%.2f,\"lm100_gpu_ms_per_iteration\":%.4f,\"lm100_cpu_ms_per_iteration\":%.4f}\n",
               level, a.n_dir, threads, c32 * 1e3, c64 * 1e3, g32 * 1e3, timed ? "true" : "false",
               g32 > 0 ? c32 / g32 : 0.0, lm_g * 1e3, lm_c * 1e3);
        for (int i = 0; i < N_RT; i++)
            if (rt_cpu[i] >= 0)
                printf("{\"bench\":\"ad_roundtrip\",\"instances\":%zu,\"cpu_f64_ms\":%.4f,\"gpu_ms\":%.4f}\n", rt_n[i],
                       rt_cpu[i] * 1e3, rt_gpu[i] * 1e3);
    } else {
        printf("%-34s %12s %14s %10s\n", "case", "ms", "Minst/s", "vs CPU f32");
        printf("%-34s %12.3f %14.1f %10s\n", "arap_eval cpu f64", c64 * 1e3, (double)a.n_dir / c64 * 1e-6, "");
        printf("%-34s %12.3f %14.1f %10s\n", "arap_eval cpu f32 (baseline)", c32 * 1e3, (double)a.n_dir / c32 * 1e-6,
               "1.00x");
        if (gpu)
            printf("%-34s %12.3f %14.1f %9.1fx\n", timed ? "arap_eval gpu (timestamps)" : "arap_eval gpu (wall)",
                   g32 * 1e3, (double)a.n_dir / g32 * 1e-6, c32 / g32);
        printf("%-34s %12.3f   (%d iterations, dense Cholesky, f64)\n", "lm_iteration_100 cpu", lm_c * 1e3, it_c);
        if (gpu) printf("%-34s %12.3f   (%d iterations, CGNR on the GPU)\n", "lm_iteration_100 gpu", lm_g * 1e3, it_g);
        for (int i = 0; i < N_RT; i++)
            if (rt_cpu[i] >= 0) {
                char name[48];
                snprintf(name, sizeof name, "roundtrip %zu cpu f64 / gpu", rt_n[i]);
                if (gpu)
                    printf("%-34s %12.3f / %.3f ms  (GPU %.2fx)\n", name, rt_cpu[i] * 1e3, rt_gpu[i] * 1e3,
                           rt_cpu[i] / rt_gpu[i]);
                else
                    printf("%-34s %12.3f ms\n", name, rt_cpu[i] * 1e3);
            }
        printf("CPU: %d threads%s\n", threads, gpu ? "" : "; no GPU");
    }
    rc = 0;
done:
    free(res);
    free(jac);
    pxl_ad_program_free(p);
    mesh_arap_free(&a);
    free(edges);
    mesh_free(&m);
    return rc;
}
