/* core/: status strings, backend parsing, contexts, allocation hooks, thread pool, progress. */
#include "check.h"
#include "core/internal.h"
#include "pxl/core.h"
#include "pxl/ops.h"

#include <string.h>
#include <time.h>

/* An allocator that fails after `budget` successful allocations. */
typedef struct {
    int budget;
    int live;
} failing;

static void *f_alloc(void *u, size_t n) {
    failing *f = u;
    if (f->budget-- <= 0) return NULL;
    f->live++;
    return malloc(n);
}
static void *f_realloc(void *u, void *p, size_t n) {
    failing *f = u;
    if (f->budget-- <= 0) return NULL;
    if (!p) f->live++;
    return realloc(p, n);
}
static void f_free(void *u, void *p) {
    failing *f = u;
    f->live--;
    free(p);
}

static void test_status_and_backend(void) {
    CHECK(strcmp(pxl_status_str(PXL_OK), "PXL_OK") == 0);
    CHECK(strcmp(pxl_status_str(PXL_ERR_SHADER), "PXL_ERR_SHADER") == 0);
    CHECK(strcmp(pxl_status_str((pxl_status)999), "PXL_ERR_(unknown)") == 0);
    pxl_backend b;
    CHECK(pxl_backend_parse("cpu", &b) == PXL_OK && b == PXL_BACKEND_CPU);
    CHECK(pxl_backend_parse("gpu", &b) == PXL_OK && b == PXL_BACKEND_GPU);
    CHECK(pxl_backend_parse("auto", &b) == PXL_OK && b == PXL_BACKEND_AUTO);
    CHECK(pxl_backend_parse("GPU", &b) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_backend_parse("", &b) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_backend_parse(NULL, &b) == PXL_ERR_INVALID_ARG);
}

static void test_size_math(void) {
    size_t r;
    CHECK(pxl_mul_size(0, SIZE_MAX, &r) && r == 0);
    CHECK(!pxl_mul_size(SIZE_MAX / 2 + 1, 2, &r));
    CHECK(pxl_add_size(1, 2, &r) && r == 3);
    CHECK(!pxl_add_size(SIZE_MAX, 1, &r));
    pxl_ctx *ctx;
    pxl_ctx_options o = pxl_ctx_options_default();
    o.backend = PXL_BACKEND_CPU;
    CHECK(pxl_ctx_create(&o, &ctx) == PXL_OK);
    CHECK(pxl_calloc(ctx, SIZE_MAX / 4, 8) == NULL); /* overflow, not a huge malloc */
    pxl_free(ctx, NULL);
    pxl_ctx_free(ctx);
    pxl_ctx_free(NULL);
}

static void test_cpu_ctx(void) {
    pxl_ctx *ctx = NULL;
    pxl_ctx_options o = pxl_ctx_options_default();
    o.backend = PXL_BACKEND_CPU;
    o.n_threads = 3;
    CHECK(pxl_ctx_create(&o, &ctx) == PXL_OK);
    CHECK(pxl_ctx_backend(ctx) == PXL_BACKEND_CPU);
    CHECK(pxl_ctx_threads(ctx) == 3);
    CHECK(strcmp(pxl_ctx_error(ctx), "") == 0);
    CHECK(strcmp(pxl_ctx_gpu_unavailable_reason(ctx), "") == 0);
    pxl_ctx_free(ctx);
}

static void test_oom_injection(void) {
    /* Context creation under every failure point: either OK or a clean OOM, no leak. */
    for (int budget = 0; budget < 8; budget++) {
        failing f = {budget, 0};
        pxl_allocator a = {f_alloc, f_realloc, f_free, &f};
        pxl_ctx_options o = pxl_ctx_options_default();
        o.backend = PXL_BACKEND_CPU;
        o.allocator = &a;
        o.webgpu_library = "/nonexistent/lib.so";
        o.n_threads = 2;
        pxl_ctx *ctx = NULL;
        pxl_status s = pxl_ctx_create(&o, &ctx);
        CHECK(s == PXL_OK || s == PXL_ERR_OUT_OF_MEMORY);
        if (s == PXL_OK) {
            /* dot on > 64 blocks needs a heap array: must fail cleanly when it cannot get one */
            size_t n = ((size_t)1 << 16) * 70;
            float *x = calloc(n, sizeof *x);
            float r = -1;
            f.budget = 0;
            pxl_status ds = pxl_dot_cpu(ctx, x, x, n, &r);
            CHECK(ds == PXL_ERR_OUT_OF_MEMORY);
            CHECK(strstr(pxl_ctx_error(ctx), "out of memory") != NULL);
            f.budget = 100;
            CHECK(pxl_dot_cpu(ctx, x, x, n, &r) == PXL_OK && r == 0.0f);
            free(x);
            pxl_ctx_free(ctx);
        } else {
            CHECK(ctx == NULL);
        }
        CHECK_MSG(f.live == 0, "budget %d: %d allocations leaked", budget, f.live);
    }
}

typedef struct {
    pxl_ctx *ctx;
    long long *out;
    int nested;
} pool_job;

static void inner(void *arg, size_t i) {
    long long *acc = arg;
    __atomic_add_fetch(acc, (long long)i, __ATOMIC_RELAXED);
}

static void outer(void *arg, size_t i) {
    pool_job *j = arg;
    j->out[i] = (long long)i * (long long)i;
    if (j->nested) { /* a nested call runs serially instead of deadlocking */
        long long acc = 0;
        pxl_parallel_for(j->ctx, 10, inner, &acc);
        if (acc != 45) j->out[i] = -1;
    }
}

static void test_threadpool(void) {
    for (int threads = 1; threads <= 4; threads++) {
        pxl_ctx *ctx;
        pxl_ctx_options o = pxl_ctx_options_default();
        o.backend = PXL_BACKEND_CPU;
        o.n_threads = threads;
        CHECK(pxl_ctx_create(&o, &ctx) == PXL_OK);
        for (int round = 0; round < 50; round++) {
            size_t n = (size_t)(round * 7 + 1);
            long long out[400];
            pool_job j = {ctx, out, round % 5 == 0};
            pxl_parallel_for(ctx, n, outer, &j);
            for (size_t i = 0; i < n; i++) CHECK(out[i] == (long long)(i * i));
        }
        pxl_parallel_for(ctx, 0, outer, NULL); /* no tasks: no call */
        /* jobs back to back (the workers still polling for the next one) and
         * after a pause longer than the pool's poll (asleep on the condition
         * variable): every task runs once in each */
        for (int round = 0; round < 3000; round++) {
            size_t n = (size_t)(round % 13 + 2);
            long long out[16];
            for (int i = 0; i < 16; i++) out[i] = -2;
            pool_job j = {ctx, out, 0};
            if (round % 500 == 499) {
                struct timespec ts = {0, 2000000}; /* 2 ms */
                nanosleep(&ts, NULL);
            }
            pxl_parallel_for(ctx, n, outer, &j);
            int ok = 1;
            for (size_t i = 0; i < n; i++) ok &= out[i] == (long long)(i * i);
            CHECK_MSG(ok, "pool round %d on %d threads", round, threads);
        }
        pxl_ctx_free(ctx);
    }
}

static void test_progress_silent(void) {
    pxl_ctx *ctx;
    pxl_ctx_options o = pxl_ctx_options_default();
    o.backend = PXL_BACKEND_CPU;
    o.quiet = 1;
    CHECK(pxl_ctx_create(&o, &ctx) == PXL_OK);
    pxl_progress *p = pxl_progress_begin(ctx, "x", 10);
    CHECK(p == NULL); /* quiet: nothing drawn */
    pxl_progress_update(p, 5);
    pxl_progress_end(p);
    pxl_ctx_free(ctx);
}

static void test_env_backend(void) {
    setenv("PXL_BACKEND", "bogus", 1);
    pxl_ctx *ctx = NULL;
    CHECK(pxl_ctx_create(NULL, &ctx) == PXL_ERR_INVALID_ARG);
    CHECK(ctx && strstr(pxl_ctx_error(ctx), "PXL_BACKEND") != NULL);
    pxl_ctx_free(ctx);
    setenv("PXL_BACKEND", "cpu", 1);
    CHECK(pxl_ctx_create(NULL, &ctx) == PXL_OK);
    CHECK(pxl_ctx_backend(ctx) == PXL_BACKEND_CPU);
    pxl_ctx_free(ctx);
    unsetenv("PXL_BACKEND");
}

static void test_utf8(void) {
    /* every scalar value round-trips; surrogates and values past U+10FFFF become U+FFFD */
    int ok = 1;
    for (uint32_t cp = 0; cp <= 0x110000; cp += cp < 0x3000 ? 1 : 97) {
        char b[4];
        size_t n = pxl_utf8_encode(cp, b), i = 0;
        uint32_t want = cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) ? 0xFFFD : cp;
        ok &= n >= 1 && n <= 4 && pxl_utf8_decode((const unsigned char *)b, n, &i) == want && i == n;
    }
    CHECK(ok);
    /* malformed input: one U+FFFD per bad byte, never a read past n */
    const unsigned char bad[] = {0xC3, 'a', 0xFF, 0xE2, 0x82}; /* lead without continuation, invalid, truncated */
    size_t i = 0;
    uint32_t got[8];
    size_t k = 0;
    while (i < sizeof bad && k < 8) got[k++] = pxl_utf8_decode(bad, sizeof bad, &i);
    CHECK(k == 5 && got[0] == 0xFFFD && got[1] == 'a' && got[2] == 0xFFFD && got[3] == 0xFFFD && got[4] == 0xFFFD);
}

/* A CPU context with the given tuning option: its status, its parsed tuning
 * in *t (when OK) and its message in msg. */
static pxl_status tuned_ctx(const char *tuning, pxl_tuning *t, char *msg, size_t cap) {
    pxl_ctx *ctx = NULL;
    pxl_ctx_options o = pxl_ctx_options_default();
    o.backend = PXL_BACKEND_CPU;
    o.tuning = tuning;
    pxl_status s = pxl_ctx_create(&o, &ctx);
    CHECK(ctx != NULL);
    if (!ctx) return s;
    if (s == PXL_OK) *t = *pxl_ctx_tuning(ctx);
    snprintf(msg, cap, "%s", pxl_ctx_error(ctx));
    pxl_ctx_free(ctx);
    return s;
}

static void test_tuning_option(void) {
    pxl_tuning t, zero;
    memset(&zero, 0, sizeof zero);
    char msg[PXL_ERR_MAX];
    /* NULL, empty and blank: the built-in shapes */
    memset(&t, 0xab, sizeof t);
    CHECK(tuned_ctx(NULL, &t, msg, sizeof msg) == PXL_OK && memcmp(&t, &zero, sizeof t) == 0);
    memset(&t, 0xab, sizeof t);
    CHECK(tuned_ctx("", &t, msg, sizeof msg) == PXL_OK && memcmp(&t, &zero, sizeof t) == 0);
    CHECK(tuned_ctx(" , ", &t, msg, sizeof msg) == PXL_OK && memcmp(&t, &zero, sizeof t) == 0);
    /* every key, separated by commas and spaces, list values with commas */
    CHECK(tuned_ctx("dot=512,256,attn=128,4,64 qmv=256,32,2,4 qmv_xs=512,8,2,kmv_tpr=16 kmv_rows=3,"
                    "qmv_kernel=q vm_dp4=soft vm_mm=small pllm_no_avx=1 cpu_simd=0",
                    &t, msg, sizeof msg) == PXL_OK);
    CHECK(t.dot_n == 2 && t.dot[0] == 512 && t.dot[1] == 256);
    CHECK(t.attn_n == 3 && t.attn[0] == 128 && t.attn[1] == 4 && t.attn[2] == 64 && t.attn[3] == 0);
    CHECK(t.qmv_n == 4 && t.qmv[0] == 256 && t.qmv[1] == 32 && t.qmv[2] == 2 && t.qmv[3] == 4);
    CHECK(t.qmv_xs_n == 3 && t.qmv_xs[0] == 512 && t.qmv_xs[1] == 8 && t.qmv_xs[2] == 2);
    CHECK(t.kmv_tpr == 16 && t.kmv_rows == 3 && t.qmv_plain == 1);
    CHECK(t.vm_dp4_soft == 1 && t.vm_mm == 2 && t.pllm_no_avx == 1 && t.cpu_simd_off == 1);
    /* the old variables' formats: a four-number attn, values split by spaces, the other choices */
    CHECK(tuned_ctx("attn=256 8 256 512 vm_mm=tile", &t, msg, sizeof msg) == PXL_OK);
    CHECK(t.attn_n == 4 && t.attn[3] == 512 && t.vm_mm == 1);
    CHECK(tuned_ctx("vm_mm=auto,vm_dp4=auto,qmv_kernel=auto,pllm_no_avx=0,cpu_simd=1", &t, msg, sizeof msg) == PXL_OK);
    CHECK(memcmp(&t, &zero, sizeof t) == 0);
    /* the GGUF runtime's switches: each 0/1 key sets its own field only */
    CHECK(tuned_ctx("cpu_q8=1 gpu_scopes=1 llm_ahead=0 gpu_q8=2 rka=0", &t, msg, sizeof msg) == PXL_OK);
    CHECK(t.cpu_q8_off == 0 && t.gpu_scopes == 1 && t.llm_ahead_off == 1 && t.gpu_q8_token_off == 0 && t.gpu_q8_off == 0);
    CHECK(t.rka_off == 1 && t.gpu_spin_off == 0);
    CHECK(tuned_ctx("gpu_spin=0", &t, msg, sizeof msg) == PXL_OK && t.gpu_spin_off == 1);
    CHECK(tuned_ctx("mv_sg=0", &t, msg, sizeof msg) == PXL_OK && t.mv_sg_off == 1 && t.gpu_spin_off == 0);
    CHECK(tuned_ctx("cpu_avx512=0", &t, msg, sizeof msg) == PXL_OK && t.cpu_avx512_off == 1 && t.cpu_simd_off == 0);
    CHECK(tuned_ctx("cpu_avx512=1", &t, msg, sizeof msg) == PXL_OK && t.cpu_avx512_off == 0);
    CHECK(tuned_ctx("cpu_avx512=2", &t, msg, sizeof msg) != PXL_OK && strstr(msg, "'cpu_avx512'"));
    CHECK(tuned_ctx("kmm8_merge=0", &t, msg, sizeof msg) == PXL_OK && t.kmm8_merge == 1);
    CHECK(tuned_ctx("kmm8_merge=1", &t, msg, sizeof msg) == PXL_OK && t.kmm8_merge == 2);
    CHECK(tuned_ctx("kmm8_merge=2", &t, msg, sizeof msg) != PXL_OK && strstr(msg, "'kmm8_merge'"));
    CHECK(t.pllm_no_avx == 0 && t.cpu_simd_off == 0);
    CHECK(tuned_ctx("gpu_q8=0", &t, msg, sizeof msg) == PXL_OK && t.gpu_q8_off == 1 && t.gpu_q8_token_off == 1);
    CHECK(tuned_ctx("llm_cut=1", &t, msg, sizeof msg) == PXL_OK && t.llm_cut == 1);
    CHECK(tuned_ctx("qmv_q8=0", &t, msg, sizeof msg) == PXL_OK && t.qmv_q8_off == 1 && t.qmv_plain == 0);
    CHECK(tuned_ctx("qmv_q8=1", &t, msg, sizeof msg) == PXL_OK && memcmp(&t, &zero, sizeof t) == 0);
    CHECK(tuned_ctx("llm_cut=64", &t, msg, sizeof msg) == PXL_OK && t.llm_cut == 64);
    CHECK(tuned_ctx("gpu_q8=1", &t, msg, sizeof msg) == PXL_OK && t.gpu_q8_off == 0 && t.gpu_q8_token_off == 1);
    CHECK(tuned_ctx("cpu_q8=1 gpu_scopes=0 llm_ahead=1 gpu_q8=2 rka=1 gpu_spin=1 mv_sg=1", &t, msg, sizeof msg) == PXL_OK);
    CHECK(memcmp(&t, &zero, sizeof t) == 0);
    CHECK(tuned_ctx("cpu_q8=0", &t, msg, sizeof msg) == PXL_OK && t.cpu_q8_off == 1);
    t.cpu_q8_off = 0; /* and no other field */
    CHECK(memcmp(&t, &zero, sizeof t) == 0);
    /* kmm8: 0, 4 or 8, kept as 1 + the value */
    CHECK(tuned_ctx("kmm8=0", &t, msg, sizeof msg) == PXL_OK && t.kmm8 == 1);
    CHECK(tuned_ctx("kmm8=8", &t, msg, sizeof msg) == PXL_OK && t.kmm8 == 9);
    CHECK(tuned_ctx("kmm8_split=1", &t, msg, sizeof msg) == PXL_OK && t.kmm8_split == 1);
    CHECK(tuned_ctx("gemm_split=4", &t, msg, sizeof msg) == PXL_OK && t.gemm_split == 4);
    CHECK(tuned_ctx("rka_wg=64", &t, msg, sizeof msg) == PXL_OK && t.rka_wg == 64);
    CHECK(tuned_ctx("attn_fa=0", &t, msg, sizeof msg) == PXL_OK && t.attn_fa_n == 1);
    CHECK(tuned_ctx("attn_fa=64,32", &t, msg, sizeof msg) == PXL_OK && t.attn_fa_n == 2 && t.attn_fa[0] == 64 &&
          t.attn_fa[1] == 32);
    /* unknown keys and bad values fail, naming the key */
    static const struct {
        const char *text, *key;
    } bad[] = {
        {"dots=512,256", "'dots'"},        {"dot=512", "'dot'"},           {"dot=500,256", "'dot'"},
        {"dot=512,0", "'dot'"},            {"dot=512,256,1", "'dot'"},     {"dot=", "'dot'"},
        {"dot=a,b", "'dot'"},              {"dot=99999999999,1", "'dot'"}, {"attn=256,9,256", "'attn'"},
        {"attn=256,8", "'attn'"},          {"attn=256,8,256,100", "'attn'"}, {"qmv=256,32,4,8", "'qmv'"},
        {"qmv=256,512,1,1", "'qmv'"},      {"qmv_xs=32,8,1", "'qmv_xs'"}, {"kmv_tpr=3", "'kmv_tpr'"},
        {"kmv_rows=9", "'kmv_rows'"},      {"qmv_kernel=xs", "'qmv_kernel'"}, {"qmv_q8=2", "'qmv_q8'"}, {"vm_dp4=hard", "'vm_dp4'"},
        {"vm_mm=big", "'vm_mm'"},          {"pllm_no_avx=yes", "'pllm_no_avx'"}, {"dot", "'dot'"},
        {"cpu_simd=2", "'cpu_simd'"},      {"cpu_q8=on", "'cpu_q8'"},      {"gpu_scopes=", "'gpu_scopes'"},
        {"llm_ahead=2", "'llm_ahead'"},    {"gpu_q8=3", "'gpu_q8'"},       {"rka=on", "'rka'"},
        {"kmm8=2", "'kmm8'"},              {"kmm8=", "'kmm8'"},            {"kmm8_split=3", "'kmm8_split'"},
        {"kmm8_split=16", "'kmm8_split'"}, {"gemm_split=3", "'gemm_split'"}, {"gemm_split=0", "'gemm_split'"},
        {"rka_wg=16", "'rka_wg'"},         {"attn_fa=64", "'attn_fa'"},    {"attn_fa=16,64", "'attn_fa'"},
        {"attn_fa=64,128", "'attn_fa'"},   {"attn_fa=64,64,1", "'attn_fa'"}, {"attn_fa=1", "'attn_fa'"},
        {"rka_wg=96", "'rka_wg'"},
        {"rka_wg=512", "'rka_wg'"},        {"llm_cut=0", "'llm_cut'"},     {"llm_cut=65", "'llm_cut'"},
        {"vm_mm=tile nonsense", "'vm_mm'"}, {"vm_mm=tile nonsense=1", "'nonsense'"}, {"=3", "''"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pxl_status s = tuned_ctx(bad[i].text, &t, msg, sizeof msg);
        CHECK_MSG(s == PXL_ERR_INVALID_ARG, "\"%s\" gave %s", bad[i].text, pxl_status_str(s));
        CHECK_MSG(strstr(msg, bad[i].key) != NULL, "\"%s\": message \"%s\" does not name %s", bad[i].text, msg,
                  bad[i].key);
    }
}

/* The NULL rule (core.h) holds in release builds too: no assert to compile away. */
static void test_null_rule(void) {
    CHECK(pxl_ctx_create(NULL, NULL) == PXL_ERR_INVALID_ARG);
    pxl_allocator half = {NULL, NULL, NULL, NULL};
    pxl_ctx_options o = pxl_ctx_options_default();
    o.backend = PXL_BACKEND_CPU;
    o.allocator = &half;
    pxl_ctx *ctx = (pxl_ctx *)&half; /* must be left alone */
    CHECK(pxl_ctx_create(&o, &ctx) == PXL_ERR_INVALID_ARG && ctx == (pxl_ctx *)&half);
    CHECK(pxl_alloc(NULL, 8) == NULL && pxl_realloc(NULL, NULL, 8) == NULL);
    pxl_free(NULL, NULL);
    o.allocator = NULL;
    ctx = NULL;
    CHECK(pxl_ctx_create(&o, &ctx) == PXL_OK);
    uint8_t *data = NULL;
    size_t len = 0;
    CHECK(pxl_file_read(NULL, "x", 1, &data, &len) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_file_read(ctx, NULL, 1, &data, &len) == PXL_ERR_INVALID_ARG);
    CHECK(strstr(pxl_ctx_error(ctx), "pxl_file_read: path is NULL") != NULL);
    CHECK(pxl_file_write(ctx, "x", NULL, 3) == PXL_ERR_INVALID_ARG);
    CHECK(strstr(pxl_ctx_error(ctx), "data is NULL") != NULL);
    pxl_ctx_free(ctx);
}

int main(void) {
    test_null_rule();
    test_utf8();
    test_status_and_backend();
    test_size_math();
    test_cpu_ctx();
    test_oom_injection();
    test_threadpool();
    test_progress_silent();
    test_env_backend();
    test_tuning_option();
    return test_result("test_core");
}
