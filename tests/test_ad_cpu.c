/*
 * The CPU interpreters of src/ad/eval.c: the batched one (baseline and AVX2
 * builds, and what pxl_ad_eval picks) gives the scalar one's bits exactly
 * (a NaN matching any NaN, see same_bits), residuals and Jacobians, f32 and f64, on random programs (tests/ad_random.c,
 * safe and raw, with the geometry helpers) and on hand-made programs whose
 * adjoints are 0 in some lanes of a batch and not in others; for instance
 * counts around the batch width and thread counts 1 and 2.
 */
#include "check.h"
#include "test_ctx.h"

#include "ad/ad_internal.h"
#include "ad_random.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static pxl_ctx *g_ctx;

static const size_t COUNTS[] = {1, 7, 8, 9, 15, 16, 17, 100, 1001};
#define N_COUNTS (sizeof COUNTS / sizeof COUNTS[0])
#define MAX_INST 1001
#define N_PARAMS 37

/* A value for a parameter or an input: mostly uniform in [-range, range],
 * sometimes exactly 0, 1 or -1 (kinks, ties and selects), and in raw mode
 * sometimes large. */
static double draw(uint64_t *st, double range, int raw) {
    uint64_t u = ad_random_next(st) % 16;
    if (u == 0) return 0;
    if (u == 1) return 1;
    if (u == 2) return -1;
    if (raw && u == 3) return ad_random_uniform(st, -800, 800);
    return ad_random_uniform(st, -range, range);
}

/* 1 when a and b hold the same bits (n doubles), a NaN matching any NaN: C
 * leaves a NaN's sign and payload unspecified, and compilers swap the
 * operands of commutative operations (which of two NaN operands x86 passes
 * on), so they follow the code generator, not the interpreter. Prints the
 * first difference. */
static int same_bits(const double *a, const double *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (memcmp(a + i, b + i, sizeof *a) != 0 && !(isnan(a[i]) && isnan(b[i]))) {
            uint64_t x, y;
            memcpy(&x, a + i, sizeof x);
            memcpy(&y, b + i, sizeof y);
            fprintf(stderr, "  first difference at %zu: %.17g (%016llx) against %.17g (%016llx)\n", i, a[i],
                    (unsigned long long)x, b[i], (unsigned long long)y);
            return 0;
        }
    return 1;
}

/*
 * Evaluates p on n instances (slots and inputs drawn from st) with every
 * interpreter, precision and thread count, with and without the Jacobian,
 * and checks each result against the scalar interpreter's bits.
 */
static void compare_all(const char *name, const pxl_ad_program *p, uint64_t *st, int raw) {
    const size_t k = p->n_params, m = p->n_out, ni = p->n_inputs;
    double params[N_PARAMS];
    for (int j = 0; j < N_PARAMS; j++) params[j] = draw(st, 2, raw);
    uint32_t *idx = malloc((k ? k : 1) * MAX_INST * sizeof *idx);
    double *in = malloc((ni ? ni : 1) * MAX_INST * sizeof *in);
    double *r0 = malloc(m * MAX_INST * sizeof *r0), *r1 = malloc(m * MAX_INST * sizeof *r1);
    double *j0 = malloc((k ? k : 1) * m * MAX_INST * sizeof *j0);
    double *j1 = malloc((k ? k : 1) * m * MAX_INST * sizeof *j1);
    CHECK(idx && in && r0 && r1 && j0 && j1);
    if (!idx || !in || !r0 || !r1 || !j0 || !j1) goto done;
    for (size_t i = 0; i < k * MAX_INST; i++) idx[i] = (uint32_t)(ad_random_next(st) % N_PARAMS);
    for (size_t i = 0; i < ni * MAX_INST; i++) in[i] = draw(st, 2, raw);
    static const ad_cpu_mode modes[] = {AD_CPU_BATCH, AD_CPU_BATCH_AVX2, AD_CPU_AUTO};
    for (size_t c = 0; c < N_COUNTS; c++) {
        const size_t n = COUNTS[c];
        for (int f32 = 0; f32 < 2; f32++) {
            pxl_status s = ad_eval_cpu(g_ctx, p, params, idx, in, n, r0, j0, f32, 1, AD_CPU_SCALAR);
            CHECK_MSG(s == PXL_OK, "%s: %s", name, pxl_ctx_error(g_ctx));
            for (size_t mo = 0; mo < sizeof modes / sizeof modes[0]; mo++)
                for (size_t threads = 1; threads <= 2; threads++) {
                    memset(r1, 0xA5, m * n * sizeof *r1);
                    memset(j1, 0xA5, m * k * n * sizeof *j1);
                    s = ad_eval_cpu(g_ctx, p, params, idx, in, n, r1, j1, f32, threads, modes[mo]);
                    CHECK_MSG(s == PXL_OK, "%s: %s", name, pxl_ctx_error(g_ctx));
                    CHECK_MSG(same_bits(r0, r1, m * n), "%s: %zu instances, %s, mode %d, %zu threads: residuals",
                              name, n, f32 ? "f32" : "f64", (int)modes[mo], threads);
                    CHECK_MSG(same_bits(j0, j1, m * k * n), "%s: %zu instances, %s, mode %d, %zu threads: Jacobian",
                              name, n, f32 ? "f32" : "f64", (int)modes[mo], threads);
                    /* values only */
                    memset(r1, 0xA5, m * n * sizeof *r1);
                    s = ad_eval_cpu(g_ctx, p, params, idx, in, n, r1, NULL, f32, threads, modes[mo]);
                    CHECK(s == PXL_OK && same_bits(r0, r1, m * n));
                }
        }
    }
    /* the public entry point is the batched path */
    {
        pxl_ad_eval_options o;
        memset(&o, 0, sizeof o);
        o.backend = PXL_AD_CPU;
        CHECK(pxl_ad_eval(g_ctx, p, params, N_PARAMS, idx, in, MAX_INST, r1, j1, &o) == PXL_OK);
        CHECK(ad_eval_cpu(g_ctx, p, params, idx, in, MAX_INST, r0, j0, 0, 1, AD_CPU_SCALAR) == PXL_OK);
        CHECK_MSG(same_bits(r0, r1, m * MAX_INST) && same_bits(j0, j1, m * k * MAX_INST), "%s: pxl_ad_eval", name);
    }
done:
    free(idx);
    free(in);
    free(r0);
    free(r1);
    free(j0);
    free(j1);
}

static void test_random(void) {
    uint64_t st = 0x5eed;
    int graphs = 0;
    for (uint64_t seed = 1; seed <= 48; seed++) {
        ad_random_options o;
        memset(&o, 0, sizeof o);
        o.n_params = 1 + (int)(seed % 6);
        o.n_inputs = seed % 5 == 0 ? -1 : (int)(seed % 3);
        o.n_ops = 8 + (int)(seed % 5) * 10;
        o.n_outputs = 1 + (int)(seed % 4);
        o.ops = seed % 3 == 0 ? AD_RND_SCALAR_OPS | AD_RND_GEOMETRY_OPS : AD_RND_SCALAR_OPS;
        o.raw = seed % 4 == 1;
        pxl_ad_graph *g = NULL;
        CHECK(pxl_ad_graph_create(g_ctx, &g) == PXL_OK);
        pxl_status s = ad_random_graph(g, seed, &o);
        CHECK_MSG(s == PXL_OK, "graph %llu: %s", (unsigned long long)seed, pxl_ctx_error(g_ctx));
        pxl_ad_program *p = NULL;
        if (s == PXL_OK) CHECK(pxl_ad_compile(g, &p) == PXL_OK);
        if (p) {
            char name[64];
            snprintf(name, sizeof name, "random graph %llu%s", (unsigned long long)seed, o.raw ? " (raw)" : "");
            compare_all(name, p, &st, o.raw);
            graphs++;
        }
        pxl_ad_program_free(p);
        pxl_ad_graph_free(g);
    }
    CHECK(graphs == 48);
}

/*
 * Adjoints that are 0 in some lanes only: out0 = exp(a) * x with exp(a) = inf
 * where a is large, x = 0 in some instances (the scalar path passes nothing
 * from the exp node there, so d out0 / d a is 0, not 0 * inf = NaN);
 * out1 = relu(a) * select(x > 0, b, a) + min(a, b) * 0 x.
 */
static void test_zero_adjoints(void) {
    pxl_ad_graph *g = NULL;
    CHECK(pxl_ad_graph_create(g_ctx, &g) == PXL_OK);
    pxl_ad_value a = pxl_ad_param(g, 0), b = pxl_ad_param(g, 1), x = pxl_ad_input(g, 0);
    CHECK(pxl_ad_output(g, pxl_ad_mul(g, pxl_ad_exp(g, a), x)) == PXL_OK);
    pxl_ad_value sel = pxl_ad_select(g, pxl_ad_gt(g, x, pxl_ad_const(g, 0)), b, a);
    pxl_ad_value z = pxl_ad_mul(g, pxl_ad_min(g, a, b), pxl_ad_mul(g, pxl_ad_const(g, 0), x));
    CHECK(pxl_ad_output(g, pxl_ad_add(g, pxl_ad_mul(g, pxl_ad_relu(g, a), sel), z)) == PXL_OK);
    pxl_ad_program *p = NULL;
    CHECK(pxl_ad_compile(g, &p) == PXL_OK);
    if (p) {
        /* the scalar path's conventions first, on one instance */
        double params[2] = {1000, 2}, in = 0, r[2], j[4];
        uint32_t idx[2] = {0, 1};
        CHECK(ad_eval_cpu(g_ctx, p, params, idx, &in, 1, r, j, 0, 1, AD_CPU_SCALAR) == PXL_OK);
        CHECK(isnan(r[0]) && j[0] == 0 && j[1] == 0);
        uint64_t st = 7;
        compare_all("zero adjoints", p, &st, 1);
    }
    pxl_ad_program_free(p);
    pxl_ad_graph_free(g);
}

int main(void) {
    g_ctx = test_ctx(PXL_BACKEND_CPU, 2);
    if (!g_ctx) {
        fprintf(stderr, "test_ad_cpu: no context\n");
        return 1;
    }
    test_zero_adjoints();
    test_random();
    pxl_ctx_free(g_ctx);
    return test_result("test_ad_cpu");
}
