/*
 * Runs the op-case table (tests/ops_cases.c) and the checks a table row
 * cannot express. Modes (argv[1]):
 *   cpu   every case on a CPU context against the oracles, the bad-argument
 *         set, golden values; needs no GPU and never skips.
 *   gpu   the same on a GPU context too (against the oracles and the CPU),
 *         the bad-argument set on both (same statuses), and GPU-only checks;
 *         exits 77 (skipped) without an adapter.
 *   grad  the gradient mode on a CPU context ("grad gpu": on the GPU).
 * -v prints each case before it runs.
 */
#include "ops_cases.h"
#include "ops_oracle.h"

#include "check.h"
#include "test_ctx.h"

#include <math.h>
#include <string.h>

/*
 * Golden values, from the formulas in double (mpmath at 30 digits:
 * x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), x/2 (1 + erf(x/sqrt 2)),
 * x / (1 + e^-x), and silu(g) * u), rounded to 20 digits. Both the oracle
 * (to 1e-15) and the op on each backend (to 4e-7 relative plus 1e-7, a few
 * f32 ULPs) must give them.
 */
static const double k_gx[7] = {-3, -1, -0.5, 0.5, 1, 2, 3};
static const double k_gelu_tanh[7] = {-0.0036373920817730188378, -0.15880800939172329522, -0.15428599017485607796,
                                      0.34571400982514392204,   0.84119199060827670478, 1.9545976940877750188,
                                      2.9963626079182269812};
static const double k_gelu_erf[7] = {-0.00404969409489028358, -0.15865525393145705141, -0.15426876936299344818,
                                     0.34573123063700655182,  0.84134474606854294859,  1.9544997361036415856,
                                     2.9959503059051097164};
static const double k_silu[7] = {-0.14227761953270034264, -0.26894142136999512075, -0.18877033439907271768,
                                 0.31122966560092728232,  0.73105857863000487925,  1.7615941559557648881,
                                 2.8577223804672996574};
static const double k_sw_g[4] = {1, -2, 3, -0.5}, k_sw_u[4] = {2, 0.5, -1.5, 4};
static const double k_swiglu[4] = {1.4621171572600097585, -0.11920292202211755594, -4.286583570700949486,
                                   -0.75508133759629087072};

/* rel * |want| + abs + 4 |x| 2^-23: the last term is the table's allowance for
 * the cancellation in 1 + tanh (or 1 + erf) for negative x (f32 tanh near -1
 * is good to 1 ULP of 1, multiplied by x / 2); x = -3 on llvmpipe is 1.4e-7 off. */
static void check_golden(const char *what, const double *want, const float *got, const double *x, int n, double rel,
                         double abs) {
    for (int i = 0; i < n; i++)
        CHECK_MSG(fabs((double)got[i] - want[i]) <= rel * fabs(want[i]) + abs + 4.0 * fabs(x[i]) / 8388608.0,
                  "%s [%d]: %.9g, golden %.12g", what, i, (double)got[i], want[i]);
}

static void golden(pxl_ctx *ctx, const char *who) {
    /* the oracles */
    for (int i = 0; i < 7; i++) {
        CHECK(fabs(oracle_gelu_tanh(k_gx[i]) - k_gelu_tanh[i]) <= 1e-15);
        CHECK(fabs(oracle_gelu_erf(k_gx[i]) - k_gelu_erf[i]) <= 1e-15);
        CHECK(fabs(oracle_silu(k_gx[i]) - k_silu[i]) <= 1e-15);
    }
    for (int i = 0; i < 4; i++) CHECK(fabs(oracle_silu(k_sw_g[i]) * k_sw_u[i] - k_swiglu[i]) <= 1e-15);
    /* the ops */
    float x[7], g[4], u[4], y[7];
    for (int i = 0; i < 7; i++) x[i] = (float)k_gx[i];
    for (int i = 0; i < 4; i++) g[i] = (float)k_sw_g[i], u[i] = (float)k_sw_u[i];
    int64_t n7 = 7, n4 = 4;
    pxl_tensor *tx = NULL, *ty = NULL, *tg = NULL, *tu = NULL, *t4 = NULL;
    if (pxl_tensor_create(ctx, PXL_F32, 1, &n7, &tx) || pxl_tensor_create(ctx, PXL_F32, 1, &n7, &ty) ||
        pxl_tensor_create(ctx, PXL_F32, 1, &n4, &tg) || pxl_tensor_create(ctx, PXL_F32, 1, &n4, &tu) ||
        pxl_tensor_create(ctx, PXL_F32, 1, &n4, &t4)) {
        CHECK_MSG(0, "golden: %s", pxl_ctx_error(ctx));
        goto done;
    }
    CHECK(pxl_tensor_write(ctx, tx, x, sizeof x) == PXL_OK);
    CHECK(pxl_tensor_write(ctx, tg, g, sizeof g) == PXL_OK);
    CHECK(pxl_tensor_write(ctx, tu, u, sizeof u) == PXL_OK);
    char what[64];
    CHECK(pxl_gelu(ctx, tx, ty, PXL_GELU_TANH) == PXL_OK && pxl_tensor_read(ctx, ty, y, sizeof y) == PXL_OK);
    snprintf(what, sizeof what, "gelu tanh on %s", who);
    check_golden(what, k_gelu_tanh, y, k_gx, 7, 4e-7, 1e-7);
    CHECK(pxl_gelu(ctx, tx, ty, PXL_GELU_ERF) == PXL_OK && pxl_tensor_read(ctx, ty, y, sizeof y) == PXL_OK);
    snprintf(what, sizeof what, "gelu erf on %s", who);
    check_golden(what, k_gelu_erf, y, k_gx, 7, 4e-7, 1e-7);
    CHECK(pxl_silu(ctx, tx, ty) == PXL_OK && pxl_tensor_read(ctx, ty, y, sizeof y) == PXL_OK);
    snprintf(what, sizeof what, "silu on %s", who);
    check_golden(what, k_silu, y, k_gx, 7, 4e-7, 1e-7);
    CHECK(pxl_swiglu(ctx, tg, tu, t4) == PXL_OK && pxl_tensor_read(ctx, t4, y, 16) == PXL_OK);
    snprintf(what, sizeof what, "swiglu on %s", who);
    check_golden(what, k_swiglu, y, k_sw_g, 4, 4e-7, 1e-7);
    /* rope: the pair with theta = 1 at position 10^6 against cos and sin of 10^6 (mpmath) */
    {
        const double c = 0.93675212753314478699, s = -0.34999350217129293616;
        int64_t sh[3] = {1, 1, 4};
        float xr[4] = {1.0f, 0.0f, 0.5f, 0.5f}, yr[4];
        pxl_tensor *a = NULL, *b = NULL;
        if (pxl_tensor_create(ctx, PXL_F32, 3, sh, &a) == PXL_OK && pxl_tensor_create(ctx, PXL_F32, 3, sh, &b) == PXL_OK &&
            pxl_tensor_write(ctx, a, xr, sizeof xr) == PXL_OK &&
            pxl_rope(ctx, a, b, 1000000, 10000.0f, PXL_ROPE_ADJACENT) == PXL_OK &&
            pxl_tensor_read(ctx, b, yr, sizeof yr) == PXL_OK)
            CHECK_MSG(fabs((double)yr[0] - c) < 1e-6 && fabs((double)yr[1] - s) < 1e-6, "%s: cos/sin(1e6) = %.9f %.9f", who,
                      (double)yr[0], (double)yr[1]);
        else
            CHECK_MSG(0, "rope golden: %s", pxl_ctx_error(ctx));
        pxl_tensor_free(a);
        pxl_tensor_free(b);
    }
done:
    pxl_tensor_free(tx), pxl_tensor_free(ty), pxl_tensor_free(tg), pxl_tensor_free(tu), pxl_tensor_free(t4);
}

/* pxl_attention on ctx of q [sq], k and v [skv] (host floats): one call at
 * kv_len kv0 first when kv0 > 0, then reps calls at kv; y gets the result. */
static pxl_status attn_on(pxl_ctx *ctx, const int64_t sq[3], const int64_t skv[3], const float *q, const float *k,
                          const float *v, int64_t kv0, int64_t kv, int reps, float scale, float *y) {
    size_t nq = (size_t)(sq[0] * sq[1] * sq[2]) * 4, nk = (size_t)(skv[0] * skv[1] * skv[2]) * 4;
    pxl_tensor *tq = NULL, *tk = NULL, *tv = NULL, *ty = NULL;
    pxl_status s = pxl_tensor_create(ctx, PXL_F32, 3, sq, &tq);
    if (!s) s = pxl_tensor_create(ctx, PXL_F32, 3, skv, &tk);
    if (!s) s = pxl_tensor_create(ctx, PXL_F32, 3, skv, &tv);
    if (!s) s = pxl_tensor_create(ctx, PXL_F32, 3, sq, &ty);
    if (!s) s = pxl_tensor_write(ctx, tq, q, nq);
    if (!s) s = pxl_tensor_write(ctx, tk, k, nk);
    if (!s) s = pxl_tensor_write(ctx, tv, v, nk);
    if (!s && kv0 > 0) s = pxl_attention(ctx, tq, tk, tv, ty, kv0, scale);
    for (int i = 0; i < reps && !s; i++) s = pxl_attention(ctx, tq, tk, tv, ty, kv, scale);
    if (!s) s = pxl_tensor_read(ctx, ty, y, nq);
    pxl_tensor_free(tq), pxl_tensor_free(tk), pxl_tensor_free(tv), pxl_tensor_free(ty);
    return s;
}

/* Many split attention calls in one stream, offset by one single-pass call, so
 * the stream's dispatch cap (4096) falls inside a call: its two passes must
 * stay in one submit with their scratch buffer (GPU only). */
static void attention_long_stream(pxl_ctx *cpu, pxl_ctx *gpu) {
    int64_t sq[3] = {1, 2, 64}, skv[3] = {300, 1, 64};
    float q[128], *k = malloc(300 * 64 * 4), *v = malloc(300 * 64 * 4), yc[128], yg[128];
    uint64_t rng = 99;
    for (int i = 0; i < 128; i++) q[i] = (float)((double)(test_rng(&rng) >> 11) * 0x1p-52 - 1.0);
    for (int i = 0; i < 300 * 64; i++) {
        k[i] = (float)((double)(test_rng(&rng) >> 11) * 0x1p-52 - 1.0);
        v[i] = (float)((double)(test_rng(&rng) >> 11) * 0x1p-52 - 1.0);
    }
    pxl_ctx *ctx[2] = {cpu, gpu};
    float *out[2] = {yc, yg};
    for (int b = 0; b < 2; b++) {
        pxl_status s = attn_on(ctx[b], sq, skv, q, k, v, 2, 300, b ? 2100 : 1, 0.2f, out[b]);
        CHECK_MSG(s == PXL_OK, "attention long stream: %s", pxl_ctx_error(ctx[b]));
    }
    for (int i = 0; i < 128; i++) CHECK_MSG(fabsf(yc[i] - yg[i]) <= 2e-5f, "long stream [%d]: %g vs %g", i, (double)yc[i], (double)yg[i]);
    free(k), free(v);
}

/* pxl_matmul_multi's one-dispatch pairs give the bits of the two pxl_matmul
 * calls on the same GPU: each part runs in the row groups its own kernel
 * takes. For dtypes d0 and d1 (d0's product N0 rows, d1's N1) at K: with and
 * without the norm and 8-bit A, either order, and with no bias, both, only
 * the second or only the first (GPU only). */
static void multi_bits_of(pxl_ctx *gpu, pxl_dtype d0, pxl_dtype d1, int64_t K, int64_t N0, int64_t N1) {
    int64_t nw0 = N0 * K, nw1 = N1 * K, sc = N0 + N1 + 4, sb = N0 + N1 + 5;
    float *w0 = malloc((size_t)nw0 * 4), *w1 = malloc((size_t)nw1 * 4), *a = malloc((size_t)K * 4);
    float *nw = malloc((size_t)K * 4), *bias = malloc((size_t)sb * 4), *got = malloc((size_t)sc * 4);
    float *want = malloc((size_t)(N0 + N1) * 4);
    uint64_t rng = 5 + (uint64_t)K;
    for (int64_t i = 0; i < nw0; i++) w0[i] = (float)((double)(test_rng(&rng) >> 11) * 0x1p-52 * 2.0 - 1.0);
    for (int64_t i = 0; i < nw1; i++) w1[i] = (float)((double)(test_rng(&rng) >> 11) * 0x1p-52 * 2.0 - 1.0);
    for (int64_t i = 0; i < K; i++) a[i] = (float)((double)(test_rng(&rng) >> 11) * 0x1p-52 * 4.0 - 2.0);
    for (int64_t i = 0; i < K; i++) nw[i] = (float)((double)(test_rng(&rng) >> 11) * 0x1p-52 + 0.5);
    for (int64_t i = 0; i < sb; i++) bias[i] = (float)((double)(test_rng(&rng) >> 11) * 0x1p-52 * 2.0 - 1.0);
    int64_t sa[2] = {1, K}, s0[2] = {N0, K}, s1[2] = {N1, K}, c0[2] = {1, N0}, c1[2] = {1, N1};
    pxl_tensor *ta = NULL, *tn = NULL, *b0 = NULL, *b1 = NULL, *base = NULL, *v0 = NULL, *v1 = NULL;
    pxl_tensor *bb = NULL, *u0 = NULL, *u1 = NULL;
    pxl_status s = pxl_tensor_create(gpu, PXL_F32, 2, sa, &ta);
    if (s == PXL_OK) s = pxl_tensor_create(gpu, PXL_F32, 2, sa, &tn);
    if (s == PXL_OK) s = pxl_tensor_create(gpu, d0, 2, s0, &b0);
    if (s == PXL_OK) s = pxl_tensor_create(gpu, d1, 2, s1, &b1);
    if (s == PXL_OK) s = pxl_tensor_create(gpu, PXL_F32, 1, &sc, &base);
    if (s == PXL_OK) s = pxl_tensor_view(gpu, base, 2, c1, 4, &v1);
    if (s == PXL_OK) s = pxl_tensor_view(gpu, base, 2, c0, (size_t)(N1 + 3) * 4, &v0);
    if (s == PXL_OK) s = pxl_tensor_create(gpu, PXL_F32, 1, &sb, &bb); /* the bias rows: views of one tensor */
    if (s == PXL_OK) s = pxl_tensor_view(gpu, bb, 2, c0, 8, &u0);
    if (s == PXL_OK) s = pxl_tensor_view(gpu, bb, 2, c1, (size_t)(N0 + 3) * 4, &u1);
    if (s == PXL_OK) s = pxl_tensor_write(gpu, ta, a, (size_t)K * 4);
    if (s == PXL_OK) s = pxl_tensor_write(gpu, tn, nw, (size_t)K * 4);
    if (s == PXL_OK) s = pxl_tensor_write(gpu, bb, bias, (size_t)sb * 4);
    size_t n0 = pxl_dtype_row_bytes(d0, K) * (size_t)N0, n1 = pxl_dtype_row_bytes(d1, K) * (size_t)N1;
    uint8_t *q0 = malloc(n0), *q1 = malloc(n1);
    if (s == PXL_OK) s = pxl_quantize(gpu, d0, w0, nw0, q0, n0);
    if (s == PXL_OK) s = pxl_quantize(gpu, d1, w1, nw1, q1, n1);
    if (s == PXL_OK) s = pxl_tensor_write(gpu, b0, q0, n0);
    if (s == PXL_OK) s = pxl_tensor_write(gpu, b1, q1, n1);
    free(q0), free(q1);
    const char *n0s = pxl_dtype_name(d0), *n1s = pxl_dtype_name(d1);
    CHECK_MSG(s == PXL_OK, "matmul_multi bits %s+%s: setup: %s", n0s, n1s, pxl_ctx_error(gpu));
    for (int v = 0; v < 32 && s == PXL_OK; v++) {
        pxl_matmul_options o = {0};
        o.trans_b = 1;
        o.a_q8 = v & 1;
        if (v & 2) o.norm = tn, o.norm_eps = 1e-5f;
        int swap = (v & 4) != 0, bv = v >> 3; /* biases: none, both, the second's, the first's */
        const pxl_tensor *u[2] = {bv == 1 || bv == 3 ? u0 : NULL, bv == 1 || bv == 2 ? u1 : NULL};
        const pxl_tensor *b[2] = {swap ? b1 : b0, swap ? b0 : b1}, *bs[2] = {swap ? u[1] : u[0], swap ? u[0] : u[1]};
        pxl_tensor *c[2] = {swap ? v1 : v0, swap ? v0 : v1};
        s = pxl_matmul_multi(gpu, ta, 2, b, c, bv ? bs : NULL, &o);
        if (s == PXL_OK) s = pxl_tensor_read(gpu, base, got, (size_t)sc * 4);
        o.bias = u[0];
        if (s == PXL_OK) s = pxl_matmul(gpu, ta, b0, v0, &o);
        if (s == PXL_OK) s = pxl_tensor_read(gpu, v0, want, (size_t)N0 * 4);
        o.bias = u[1];
        if (s == PXL_OK) s = pxl_matmul(gpu, ta, b1, v1, &o);
        if (s == PXL_OK) s = pxl_tensor_read(gpu, v1, want + N0, (size_t)N1 * 4);
        CHECK_MSG(s == PXL_OK, "matmul_multi bits %s+%s %d: %s", n0s, n1s, v, pxl_ctx_error(gpu));
        if (s != PXL_OK) break;
        CHECK_MSG(memcmp(got + N1 + 3, want, (size_t)N0 * 4) == 0, "matmul_multi bits %s+%s %d: the %s product "
                  "differs", n0s, n1s, v, n0s);
        CHECK_MSG(memcmp(got + 1, want + N0, (size_t)N1 * 4) == 0, "matmul_multi bits %s+%s %d: the %s product "
                  "differs", n0s, n1s, v, n1s);
    }
    pxl_tensor_free(v0), pxl_tensor_free(v1), pxl_tensor_free(base), pxl_tensor_free(b0), pxl_tensor_free(b1);
    pxl_tensor_free(u0), pxl_tensor_free(u1), pxl_tensor_free(bb), pxl_tensor_free(tn), pxl_tensor_free(ta);
    free(w0), free(w1), free(a), free(nw), free(bias), free(got), free(want);
}

/* pxl_matmul_multi's refusals about biases, each before any product runs
 * (c[0] keeps its sentinel): opts->bias set, a bias of the wrong length, a
 * bias overlapping another product's output (on the CPU, and a GPU). */
static void matmul_multi_bias_refusals(pxl_ctx *ctx) {
    int64_t sa[2] = {1, 64}, sb[2] = {8, 64}, sc = 20, c8[2] = {1, 8};
    pxl_tensor *a = NULL, *b0 = NULL, *b1 = NULL, *base = NULL, *v0 = NULL, *v1 = NULL, *bias = NULL, *bad = NULL;
    pxl_status s = pxl_tensor_create(ctx, PXL_F32, 2, sa, &a);
    if (s == PXL_OK) s = pxl_tensor_create(ctx, PXL_Q8_0, 2, sb, &b0);
    if (s == PXL_OK) s = pxl_tensor_create(ctx, PXL_Q8_0, 2, sb, &b1);
    if (s == PXL_OK) s = pxl_tensor_create(ctx, PXL_F32, 1, &sc, &base);
    if (s == PXL_OK) s = pxl_tensor_view(ctx, base, 2, c8, 0, &v0);
    if (s == PXL_OK) s = pxl_tensor_view(ctx, base, 2, c8, 8 * 4, &v1);
    if (s == PXL_OK) s = pxl_tensor_view(ctx, base, 2, c8, 12 * 4, &bias); /* overlaps v1 (floats 8 .. 15) */
    if (s == PXL_OK) s = pxl_tensor_create(ctx, PXL_F32, 1, &sc, &bad);
    float fill[20], got[20];
    for (int i = 0; i < 20; i++) fill[i] = 7.0f;
    if (s == PXL_OK) s = pxl_tensor_write(ctx, base, fill, sizeof fill);
    CHECK_MSG(s == PXL_OK, "matmul_multi bias refusals: setup: %s", pxl_ctx_error(ctx));
    if (s == PXL_OK) {
        pxl_matmul_options o = {0};
        o.trans_b = 1;
        const pxl_tensor *b[2] = {b0, b1}, *over[2] = {bias, NULL}, *wrong[2] = {NULL, bad};
        pxl_tensor *c[2] = {v0, v1};
        o.bias = bad;
        CHECK(pxl_matmul_multi(ctx, a, 2, b, c, NULL, &o) == PXL_ERR_INVALID_ARG &&
              strstr(pxl_ctx_error(ctx), "opts->bias") != NULL);
        o.bias = NULL;
        CHECK(pxl_matmul_multi(ctx, a, 2, b, c, wrong, &o) == PXL_ERR_INVALID_ARG &&
              strstr(pxl_ctx_error(ctx), "product 1") != NULL && strstr(pxl_ctx_error(ctx), "20 elements") != NULL);
        CHECK_MSG(pxl_matmul_multi(ctx, a, 2, b, c, over, &o) == PXL_ERR_INVALID_ARG &&
                      strstr(pxl_ctx_error(ctx), "bias[0]") != NULL,
                  "overlap: %s", pxl_ctx_error(ctx));
        CHECK(pxl_tensor_read(ctx, base, got, sizeof got) == PXL_OK && got[0] == 7.0f && got[8] == 7.0f);
    }
    pxl_tensor_free(bad), pxl_tensor_free(bias), pxl_tensor_free(v1), pxl_tensor_free(v0), pxl_tensor_free(base);
    pxl_tensor_free(b1), pxl_tensor_free(b0), pxl_tensor_free(a);
}

/* K: several units (or half blocks) an invocation, so the row groups' order
 * shows; a Q6_K product of more than KMV6Q_MIN_N rows (src/ops/matmul_quant.c); Qwen2.5-0.5B's K (896, rows of 56 half blocks); K = 8192 takes
 * qmv_xs's long rows (workgroups of 512 where the device has them) */
static void matmul_multi_bits(pxl_ctx *gpu) {
    multi_bits_of(gpu, PXL_Q4_K, PXL_Q6_K, 2048, 40, 9);
    multi_bits_of(gpu, PXL_Q5_K, PXL_Q6_K, 512, 17, 33);
    multi_bits_of(gpu, PXL_Q4_K, PXL_Q6_K, 512, 40, 1100);   /* a Q6_K product of over 1024 rows: kmv6q's loop with 8-bit A */
    multi_bits_of(gpu, PXL_Q5_0, PXL_Q8_0, 896, 1024, 128);
    multi_bits_of(gpu, PXL_Q8_0, PXL_Q4_0, 2048, 37, 9);
    multi_bits_of(gpu, PXL_Q4_0, PXL_Q5_0, 8192, 20, 11);
}

/* The CPU's attention gives the same bits with its AVX code as with its plain
 * C code (cpu_simd=0): the f32 path rounds every product and sum alike.
 * Prefill and decode rows, D a multiple of 4 and not (the tails). */
static void attention_simd_bits(void) {
    pxl_ctx_options o = pxl_ctx_options_default();
    o.backend = PXL_BACKEND_CPU;
    o.quiet = 1;
    pxl_ctx *ctx[2] = {NULL, NULL};
    if (pxl_ctx_create(&o, &ctx[0]) != PXL_OK) return;
    o.tuning = "cpu_simd=0";
    if (pxl_ctx_create(&o, &ctx[1]) != PXL_OK) {
        pxl_ctx_free(ctx[0]);
        return;
    }
    static const int64_t shapes[3][5] = {{5, 4, 2, 64, 37}, {1, 6, 3, 70, 50}, {3, 2, 1, 9, 11}};   /* T, Hq, Hkv, D, kv */
    for (int c = 0; c < 3; c++) {
        int64_t T = shapes[c][0], Hq = shapes[c][1], Hkv = shapes[c][2], D = shapes[c][3], kv = shapes[c][4];
        int64_t sq[3] = {T, Hq, D}, skv[3] = {kv, Hkv, D}, nq = T * Hq * D, nk = kv * Hkv * D;
        float *q = malloc((size_t)nq * 4), *k = malloc((size_t)nk * 4), *v = malloc((size_t)nk * 4);
        float *y[2] = {malloc((size_t)nq * 4), malloc((size_t)nq * 4)};
        uint64_t rng = 7 + (uint64_t)c;
        for (int64_t i = 0; i < nq; i++) q[i] = (float)((double)(test_rng(&rng) >> 11) * 0x1p-52 * 4.0 - 2.0);
        for (int64_t i = 0; i < nk; i++) {
            k[i] = (float)((double)(test_rng(&rng) >> 11) * 0x1p-52 * 4.0 - 2.0);
            v[i] = (float)((double)(test_rng(&rng) >> 11) * 0x1p-52 * 4.0 - 2.0);
        }
        for (int b = 0; b < 2; b++) {
            pxl_status s = attn_on(ctx[b], sq, skv, q, k, v, 0, kv, 1, 0.125f, y[b]);
            CHECK_MSG(s == PXL_OK, "attention simd bits: %s", pxl_ctx_error(ctx[b]));
        }
        CHECK_MSG(memcmp(y[0], y[1], (size_t)nq * 4) == 0, "CPU attention %lldx%lldx%lldx%lld kv %lld: the AVX and "
                  "plain C paths differ", (long long)T, (long long)Hq, (long long)Hkv, (long long)D, (long long)kv);
        free(q), free(k), free(v), free(y[0]), free(y[1]);
    }
    pxl_ctx_free(ctx[0]);
    pxl_ctx_free(ctx[1]);
}

/* One CPU RoPE call on ctx: pxl_rope_ext (kv 0) or pxl_rope_kv (kv 1: q a
 * copy of x, k = v = x) of x [T, 2, D] at pos with base, fs and factors ff
 * (NULL: none); y gets the result (q's for kv). */
typedef struct {
    int64_t T, D, pos;
    float base, fs;
    int kv;
} rope_step;

static pxl_status rope_step_run(pxl_ctx *ctx, const rope_step *r, const float *x, const float *ff, float *y) {
    int64_t shape[3] = {r->T, 2, r->D}, half = r->D / 2;
    size_t n = (size_t)(r->T * 2 * r->D);
    pxl_tensor *tx = NULL, *ty = NULL, *tk = NULL, *tv = NULL, *tf = NULL;
    pxl_status s = pxl_tensor_create(ctx, PXL_F32, 3, shape, &tx);
    if (!s) s = pxl_tensor_create(ctx, PXL_F32, 3, shape, &ty);
    if (!s) s = pxl_tensor_create(ctx, PXL_F32, 3, shape, &tk);
    if (!s) s = pxl_tensor_create(ctx, PXL_F32, 3, shape, &tv);
    if (!s && ff) s = pxl_tensor_create(ctx, PXL_F32, 1, &half, &tf);
    if (!s) s = pxl_tensor_write(ctx, tx, x, n * sizeof *x);
    if (!s && ff) s = pxl_tensor_write(ctx, tf, ff, (size_t)half * sizeof *ff);
    pxl_rope_options o = {r->base, PXL_ROPE_ADJACENT, r->fs, tf};
    if (!s && !r->kv) s = pxl_rope_ext(ctx, tx, ty, r->pos, &o);
    if (!s && r->kv) s = pxl_tensor_write(ctx, ty, x, n * sizeof *x);
    if (!s && r->kv) s = pxl_rope_kv(ctx, ty, tx, tx, tk, tv, r->pos, &o);
    if (!s) s = pxl_tensor_read(ctx, ty, y, n * sizeof *y);
    pxl_tensor_free(tx), pxl_tensor_free(ty), pxl_tensor_free(tk), pxl_tensor_free(tv), pxl_tensor_free(tf);
    return s;
}

/* The CPU keeps the last call's RoPE angles in the context (src/ops/rope.c):
 * a run of calls on one context whose key changes in each way (position, T,
 * D, base, freq_scale, the factors' values in place, a table too large to
 * keep) must give, bit for bit, what a fresh context gives. */
static void rope_table_reuse(pxl_ctx *ctx) {
    static const rope_step steps[] = {
        {3, 8, 5, 10000.0f, 1.0f, 0},      {3, 8, 5, 10000.0f, 1.0f, 0},   {3, 8, 6, 10000.0f, 1.0f, 0},
        {1, 8, 6, 10000.0f, 1.0f, 0},      {1, 8, 6, 10000.0f, 1.0f, 1},   {1, 8, 6, 10000.0f, 0.25f, 0},
        {1, 8, 6, 500000.0f, 0.25f, 0},    {1, 16, 6, 500000.0f, 0.25f, 0}, {1, 8, 6, 10000.0f, 1.0f, 2},
        {1, 8, 6, 10000.0f, 1.0f, 3},      {1, 8, 6, 10000.0f, 1.0f, 3},   {30000, 8, 1000, 10000.0f, 1.0f, 0},
        {30000, 8, 1000, 10000.0f, 1.0f, 1}, {2, 8, 1000, 10000.0f, 1.0f, 0},
    };
    size_t nmax = 30000 * 2 * 16;
    float *x = malloc(nmax * sizeof *x), *y = malloc(nmax * sizeof *y), *w = malloc(nmax * sizeof *w);
    float ff[8];
    uint64_t rng = 7;
    for (size_t i = 0; i < nmax; i++) x[i] = (float)((double)(test_rng(&rng) >> 11) * 0x1p-52 - 1.0);
    for (size_t k = 0; k < sizeof steps / sizeof *steps; k++) {
        rope_step r = steps[k];
        /* kv 2 and 3: factors (3: other values, in the same array), as rope_ext */
        const float *f = NULL;
        if (r.kv >= 2) {
            for (int i = 0; i < 4; i++) ff[i] = r.kv == 2 ? 1.0f + (float)i : 4.0f - (float)i * 0.5f;
            f = ff;
            r.kv = 0;
        }
        pxl_ctx *fresh = test_ctx(PXL_BACKEND_CPU, 1);
        pxl_status s = rope_step_run(ctx, &r, x, f, y);
        CHECK_MSG(s == PXL_OK, "rope table step %zu: %s", k, pxl_ctx_error(ctx));
        s = fresh ? rope_step_run(fresh, &r, x, f, w) : PXL_ERR_OUT_OF_MEMORY;
        CHECK_MSG(s == PXL_OK, "rope table step %zu (fresh context)", k);
        size_t n = (size_t)(r.T * 2 * r.D);
        CHECK_MSG(memcmp(y, w, n * sizeof *y) == 0, "rope table step %zu: differs from a fresh context's", k);
        pxl_ctx_free(fresh);
    }
    free(x), free(y), free(w);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "cpu";
    case_env env;
    memset(&env, 0, sizeof env);
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-v") == 0) env.verbose = 1;
    env.cpu = test_ctx(PXL_BACKEND_CPU, 0);
    env.other = test_ctx(PXL_BACKEND_CPU, 1);
    if (!env.cpu || !env.other) return 1;
    int want_gpu = strcmp(mode, "gpu") == 0 || (argc > 2 && strcmp(argv[2], "gpu") == 0);
    if (want_gpu) {
        env.gpu = test_gpu_ctx();
        if (!env.gpu) {
            pxl_ctx_free(env.cpu), pxl_ctx_free(env.other);
            return PXL_SKIP;
        }
    }
    double t0 = pxl_time_now();
    if (strcmp(mode, "grad") == 0) {
        int n = ops_cases_run_grad(&env, env.gpu ? env.gpu : env.cpu);
        fprintf(stderr, "%d gradient cases in %.1f s\n", n, pxl_time_now() - t0);
    } else {
        int n = ops_cases_run_values(&env, env.gpu != NULL);
        int b = ops_cases_run_bad(&env, env.gpu != NULL);
        golden(env.cpu, "cpu");
        rope_table_reuse(env.cpu);
        matmul_multi_bias_refusals(env.cpu);
        attention_simd_bits();
        if (env.gpu) {
            golden(env.gpu, "gpu");
            attention_long_stream(env.cpu, env.gpu);
            matmul_multi_bits(env.gpu);
            matmul_multi_bias_refusals(env.gpu);
        }
        fprintf(stderr, "%d cases and %d bad-argument sets (of %d rows) on %s in %.1f s\n", n, b, ops_case_count(),
                env.gpu ? "cpu and gpu" : "cpu", pxl_time_now() - t0);
    }
    pxl_ctx_free(env.gpu);
    pxl_ctx_free(env.cpu);
    pxl_ctx_free(env.other);
    g_failures += ops_cases_failures();
    return test_result("test_ops_cases");
}
