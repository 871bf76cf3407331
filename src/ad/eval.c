/*
 * CPU evaluation of AD programs: values and reverse-mode Jacobians for many
 * instances, across the context's threads (pxl/ad.h).
 *
 * Two interpreters give the same bits (a NaN's sign and payload aside: C
 * leaves them to the compiler, which may order a commutative operation's
 * operands differently in the two): the scalar one (eval_impl.h, one
 * instance at a time) and the batched one (eval_batch.h, 8 instances (f64)
 * or 16 (f32) at a time, each instruction decoded once per batch and its
 * arithmetic vectorised across the batch). pxl_ad_eval takes the batched
 * one, built twice on x86-64: for the baseline instruction set and for AVX2
 * (picked at run time when the CPU has it and the tuning option cpu_simd=0
 * is not set; no FMA, so no contraction changes a result). Work is split
 * into tasks of contiguous instance ranges, batches inside a task, so no
 * result depends on the thread count.
 */
#include "ad_internal.h"

#include <math.h>
#include <string.h>

#define T double
#define M(f) f
#define RUN run_f64
#include "eval_impl.h"
#undef T
#undef M
#undef RUN

#define T float
#define M(name) name##f
#define RUN run_f32
#include "eval_impl.h"
#undef T
#undef M
#undef RUN

/* Instances per batch of the batched interpreter (measured best on the ARAP
 * benchmark, pxl bench ad, with AVX2); scratch per task: 2 n AD_LANES_F64
 * doubles, the same bytes as 2 n AD_LANES_F32 floats. */
#define AD_LANES_F64 8
#define AD_LANES_F32 16

#define ATTR
#define L AD_LANES_F64
#define T double
#define M(f) f
#define RUNB batch_f64
#include "eval_batch.h"
#undef T
#undef M
#undef RUNB
#undef L
#define L AD_LANES_F32
#define T float
#define M(name) name##f
#define RUNB batch_f32
#include "eval_batch.h"
#undef T
#undef M
#undef RUNB
#undef L
#undef ATTR

#if defined(__GNUC__) && defined(__x86_64__)
#define AD_X86 1
#define ATTR __attribute__((target("avx2")))
#define L AD_LANES_F64
#define T double
#define M(f) f
#define RUNB batch_f64_avx2
#include "eval_batch.h"
#undef T
#undef M
#undef RUNB
#undef L
#define L AD_LANES_F32
#define T float
#define M(name) name##f
#define RUNB batch_f32_avx2
#include "eval_batch.h"
#undef T
#undef M
#undef RUNB
#undef L
#undef ATTR
#endif

typedef struct eval_job {
    const pxl_ad_program *p;
    const double *params;
    const uint32_t *pidx;
    const double *inputs;
    double *res, *jac;
    size_t n_instances, per_task;
    int f32;
    ad_cpu_mode mode;         /* SCALAR, BATCH or BATCH_AVX2 (resolved) */
    const uint32_t *cone;     /* see eval_batch.h; NULL: none */
    const size_t *cone_at;
    double *scratch;          /* 2 n AD_LANES_F64 doubles per task */
} eval_job;

static void eval_task(void *arg, size_t t) {
    const eval_job *J = arg;
    const pxl_ad_program *p = J->p;
    size_t begin = t * J->per_task, end = begin + J->per_task;
    if (end > J->n_instances) end = J->n_instances;
    double *s = J->scratch + t * 2 * p->n * AD_LANES_F64;
    const size_t k = p->n_params, m = p->n_out, ni = p->n_inputs;
    if (J->mode == AD_CPU_SCALAR) {
        for (size_t i = begin; i < end; i++) {
            const uint32_t *pi = J->pidx ? J->pidx + i * k : NULL;
            const double *in = J->inputs ? J->inputs + i * ni : NULL;
            double *jac = J->jac ? J->jac + i * m * k : NULL;
            if (J->f32) run_f32(p, J->params, pi, in, J->res + i * m, jac, (float *)s, (float *)(s + p->n));
            else run_f64(p, J->params, pi, in, J->res + i * m, jac, s, s + p->n);
        }
        return;
    }
    const size_t lanes = J->f32 ? AD_LANES_F32 : AD_LANES_F64;
    for (size_t i = begin; i < end; i += lanes) {
        const size_t nl = end - i < lanes ? end - i : lanes;
        const uint32_t *pi = J->pidx ? J->pidx + i * k : NULL;
        const double *in = J->inputs ? J->inputs + i * ni : NULL;
        double *jac = J->jac ? J->jac + i * m * k : NULL;
        double *res = J->res + i * m;
        float *vf = (float *)s, *af = vf + p->n * AD_LANES_F32;
        double *vd = s, *ad = s + p->n * AD_LANES_F64;
#ifdef AD_X86
        if (J->mode == AD_CPU_BATCH_AVX2) {
            if (J->f32) batch_f32_avx2(p, J->params, pi, in, res, jac, nl, J->cone, J->cone_at, vf, af);
            else batch_f64_avx2(p, J->params, pi, in, res, jac, nl, J->cone, J->cone_at, vd, ad);
            continue;
        }
#endif
        if (J->f32) batch_f32(p, J->params, pi, in, res, jac, nl, J->cone, J->cone_at, vf, af);
        else batch_f64(p, J->params, pi, in, res, jac, nl, J->cone, J->cone_at, vd, ad);
    }
}

/* 1 when the AVX2 build of the batched interpreter may run. */
static int ad_cpu_avx2(pxl_ctx *ctx) {
#ifdef AD_X86
    return !pxl_ctx_tuning(ctx)->cpu_simd_off && __builtin_cpu_supports("avx2");
#else
    (void)ctx;
    return 0;
#endif
}

/*
 * The instructions that reach each output, each list in descending order:
 * output o's are cone[cone_at[o] .. cone_at[o + 1]). *cone and *cone_at are
 * new arrays of the context's allocator (NULL both on failure: out of
 * memory, or sizes that overflow; the caller then sweeps every instruction).
 */
static void ad_cones(pxl_ctx *ctx, const pxl_ad_program *p, uint32_t **cone, size_t **cone_at) {
    *cone = NULL;
    *cone_at = NULL;
    size_t total;
    if (!pxl_mul_size(p->n, p->n_out, &total)) return;
    unsigned char *mark = pxl_calloc(ctx, p->n ? p->n : 1, 1);
    uint32_t *list = pxl_calloc(ctx, total ? total : 1, sizeof *list);
    size_t *at = pxl_calloc(ctx, p->n_out + 1, sizeof *at);
    if (!mark || !list || !at) {
        pxl_free(ctx, mark);
        pxl_free(ctx, list);
        pxl_free(ctx, at);
        return;
    }
    size_t len = 0;
    for (size_t o = 0; o < p->n_out; o++) {
        const size_t top = p->outputs[o];
        memset(mark, 0, top + 1);
        mark[top] = 1;
        at[o] = len;
        for (size_t i = top + 1; i-- > 0;) {
            if (!mark[i]) continue;
            list[len++] = (uint32_t)i;
            const pxl_ad_node *c = &p->code[i];
            if (c->op > PXL_AD_OP_INPUT) {
                mark[c->a] = 1;
                if (c->op >= PXL_AD_OP_ADD) mark[c->b] = 1;
                if (c->op == PXL_AD_OP_SELECT) mark[c->c] = 1;
            }
        }
    }
    at[p->n_out] = len;
    pxl_free(ctx, mark);
    *cone = list;
    *cone_at = at;
}

pxl_status ad_eval_cpu(pxl_ctx *ctx, const pxl_ad_program *prog, const double *params, const uint32_t *param_index,
                       const double *inputs, size_t n_instances, double *residuals, double *jacobian, int f32,
                       size_t threads, ad_cpu_mode mode) {
    static const char fn[] = "pxl_ad_eval";
    if (n_instances == 0) return PXL_OK;
    const size_t k = prog->n_params, ni = prog->n_inputs;
    if (threads < 1) threads = 1;
    size_t n_tasks = threads * 4;
    if (n_tasks > n_instances) n_tasks = n_instances;
    eval_job J;
    J.p = prog;
    J.params = params;
    J.pidx = k > 0 ? param_index : NULL;
    J.inputs = ni > 0 ? inputs : NULL;
    J.res = residuals;
    J.jac = jacobian;
    J.n_instances = n_instances;
    J.per_task = (n_instances + n_tasks - 1) / n_tasks;
    n_tasks = (n_instances + J.per_task - 1) / J.per_task;
    J.f32 = f32;
    if (mode == AD_CPU_AUTO) mode = ad_cpu_avx2(ctx) ? AD_CPU_BATCH_AVX2 : AD_CPU_BATCH;
    else if (mode == AD_CPU_BATCH_AVX2 && !ad_cpu_avx2(ctx)) mode = AD_CPU_BATCH;
    J.mode = mode;
    uint32_t *cone = NULL;
    size_t *cone_at = NULL;
    if (mode != AD_CPU_SCALAR && jacobian) ad_cones(ctx, prog, &cone, &cone_at);
    J.cone = cone;
    J.cone_at = cone_at;
    size_t cells;
    if (!pxl_mul_size(n_tasks, 2 * prog->n, &cells) || !pxl_mul_size(cells, AD_LANES_F64, &cells)) {
        pxl_free(ctx, cone);
        pxl_free(ctx, cone_at);
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: scratch size overflows", fn);
    }
    J.scratch = pxl_calloc(ctx, cells, sizeof(double));
    if (!J.scratch) {
        pxl_free(ctx, cone);
        pxl_free(ctx, cone_at);
        return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "%s: out of memory (%zu scratch values)", fn, cells);
    }
    if (n_tasks == 1) eval_task(&J, 0);
    else pxl_parallel_for(ctx, n_tasks, eval_task, &J);
    pxl_free(ctx, J.scratch);
    pxl_free(ctx, cone);
    pxl_free(ctx, cone_at);
    return PXL_OK;
}

pxl_status pxl_ad_eval(pxl_ctx *ctx, const pxl_ad_program *prog, const double *params, size_t n_params,
                       const uint32_t *param_index, const double *inputs, size_t n_instances,
                       double *residuals, double *jacobian, const pxl_ad_eval_options *opts) {
    static const char fn[] = "pxl_ad_eval";
    PXL_REQUIRE_CTX(ctx);
    PXL_REQUIRE(ctx, fn, prog);
    pxl_ad_eval_options o;
    memset(&o, 0, sizeof o);
    if (opts) o = *opts;
    if (o.precision != PXL_AD_F64 && o.precision != PXL_AD_F32)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: unknown precision %d", fn, (int)o.precision);
    if (o.backend != PXL_AD_CPU && o.backend != PXL_AD_GPU && o.backend != PXL_AD_AUTO)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: unknown backend %d", fn, (int)o.backend);
    if (n_instances == 0) return PXL_OK;
    const size_t k = prog->n_params, m = prog->n_out, ni = prog->n_inputs;
    PXL_REQUIRE(ctx, fn, residuals);
    if (k > 0) {
        PXL_REQUIRE(ctx, fn, params);
        PXL_REQUIRE(ctx, fn, param_index);
    }
    if (ni > 0) PXL_REQUIRE(ctx, fn, inputs);
    size_t total;
    if (!pxl_mul_size(n_instances, m, &total) || !pxl_mul_size(total, k > 0 ? k : 1, &total) ||
        !pxl_mul_size(n_instances, ni > 0 ? ni : 1, &total))
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: %zu instances: sizes overflow", fn, n_instances);
    if (ad_check_indices(ctx, fn, param_index, n_instances, k, n_params) != PXL_OK) return PXL_ERR_INVALID_ARG;
    /* AUTO evaluates here: with the data on the host, the GPU's uploads and
     * downloads cost more than the CPU's evaluation at every size measured
     * (docs/BENCHMARKS.md, "Autodiff"); the GPU pays where the data stays on
     * it (pxl_ad_gpu_eval_*, the GPU solver) */
    if (o.backend == PXL_AD_GPU)
        return ad_eval_gpu(ctx, prog, params, n_params, param_index, inputs, n_instances, residuals, jacobian);
    size_t threads = o.serial ? 1 : (size_t)pxl_ctx_threads(ctx);
    return ad_eval_cpu(ctx, prog, params, param_index, inputs, n_instances, residuals, jacobian,
                       o.precision == PXL_AD_F32, threads, AD_CPU_AUTO);
}

/* A problem solve with AUTO evaluation runs on the GPU (the whole LM solve
 * resident there, when its linear solver is CGNR) from this many instruction
 * evaluations per pass on: below it, the GPU solver's fixed cost per
 * iteration (about 1 ms: a few round trips) is more than the CPU's whole
 * iteration (docs/BENCHMARKS.md, "Autodiff"). */
#define AD_AUTO_GPU_WORK ((size_t)1 << 20)

int ad_auto_gpu(pxl_ctx *ctx, const pxl_ad_program *prog, size_t n_instances) {
    if (pxl_ctx_backend(ctx) != PXL_BACKEND_GPU) return 0;
    size_t work;
    if (!pxl_mul_size(n_instances, prog->n + 1, &work)) return 1;
    return work >= AD_AUTO_GPU_WORK;
}

pxl_status ad_check_indices(pxl_ctx *ctx, const char *fn, const uint32_t *param_index, size_t n_instances, size_t k,
                            size_t n_params) {
    for (size_t i = 0; i < n_instances * k; i++)
        if (param_index[i] >= n_params)
            return pxl_fail(ctx, PXL_ERR_INVALID_ARG,
                            "%s: instance %zu, slot %zu: parameter index %u is out of range (%zu parameters)", fn,
                            i / k, i % k, param_index[i], n_params);
    return PXL_OK;
}
