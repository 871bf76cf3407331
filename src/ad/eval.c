/*
 * CPU evaluation of AD programs: values and reverse-mode Jacobians for many
 * instances, across the context's threads (pxl/ad.h).
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

typedef struct eval_job {
    const pxl_ad_program *p;
    const double *params;
    const uint32_t *pidx;
    const double *inputs;
    double *res, *jac;
    size_t n_instances, per_task;
    int f32;
    double *scratch; /* 2 n doubles per task */
} eval_job;

static void eval_task(void *arg, size_t t) {
    const eval_job *J = arg;
    const pxl_ad_program *p = J->p;
    size_t begin = t * J->per_task, end = begin + J->per_task;
    if (end > J->n_instances) end = J->n_instances;
    double *s = J->scratch + t * 2 * p->n;
    const size_t k = p->n_params, m = p->n_out, ni = p->n_inputs;
    for (size_t i = begin; i < end; i++) {
        const uint32_t *pi = J->pidx ? J->pidx + i * k : NULL;
        const double *in = J->inputs ? J->inputs + i * ni : NULL;
        double *jac = J->jac ? J->jac + i * m * k : NULL;
        if (J->f32) run_f32(p, J->params, pi, in, J->res + i * m, jac, (float *)s, (float *)(s + p->n));
        else run_f64(p, J->params, pi, in, J->res + i * m, jac, s, s + p->n);
    }
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
    for (size_t i = 0; i < n_instances * k; i++)
        if (param_index[i] >= n_params)
            return pxl_fail(ctx, PXL_ERR_INVALID_ARG,
                            "%s: instance %zu, slot %zu: parameter index %u is out of range (%zu parameters)", fn,
                            i / k, i % k, param_index[i], n_params);
    if (o.backend == PXL_AD_GPU || (o.backend == PXL_AD_AUTO && ad_auto_gpu(ctx, prog, n_instances)))
        return ad_eval_gpu(ctx, prog, params, n_params, param_index, inputs, n_instances, residuals, jacobian);
    size_t threads = o.serial ? 1 : (size_t)pxl_ctx_threads(ctx);
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
    J.f32 = o.precision == PXL_AD_F32;
    size_t cells;
    if (!pxl_mul_size(n_tasks, 2 * prog->n, &cells))
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: scratch size overflows", fn);
    J.scratch = pxl_calloc(ctx, cells, sizeof(double));
    if (!J.scratch) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "%s: out of memory (%zu scratch values)", fn, cells);
    if (n_tasks == 1) eval_task(&J, 0);
    else pxl_parallel_for(ctx, n_tasks, eval_task, &J);
    pxl_free(ctx, J.scratch);
    return PXL_OK;
}

/* The GPU pays from about this many instruction evaluations per call on; below
 * it the fixed cost of a dispatch and a download is larger than the CPU's time
 * (measured: docs/BENCHMARKS.md, "Autodiff"). */
#define AD_AUTO_GPU_WORK ((size_t)1 << 20)

int ad_auto_gpu(pxl_ctx *ctx, const pxl_ad_program *prog, size_t n_instances) {
    if (pxl_ctx_backend(ctx) != PXL_BACKEND_GPU) return 0;
    size_t work;
    if (!pxl_mul_size(n_instances, prog->n + 1, &work)) return 1;
    return work >= AD_AUTO_GPU_WORK;
}
