/*
 * The tuning option of a context (pxl_ctx_options.tuning): "key=value"
 * items separated by commas or spaces, parsed and range-checked once when
 * the context is created into a pxl_tuning that the ops, the VM and
 * Pixel-LLM read. The ranges here are the ones the kernels accept; the
 * list of keys is documented with the option in include/pxl/core.h.
 */
#include "internal.h"

#include <stddef.h>
#include <string.h>

#define TUNE_VALUE_MAX 128

static int is_sep(char c) { return c == ',' || c == ' ' || c == '\t' || c == '\n'; }
static int pow2(uint32_t v) { return v && !(v & (v - 1)); }

/* Parses "n[,n...]" (decimal, each <= 2^32 - 1) into out[max]. Returns the
 * count, or -1 on a syntax error or more than max numbers. */
static int parse_list(const char *v, uint32_t *out, int max) {
    int n = 0;
    for (;;) {
        if (*v < '0' || *v > '9' || n == max) return -1;
        uint64_t x = 0;
        while (*v >= '0' && *v <= '9') {
            x = x * 10 + (uint64_t)(*v++ - '0');
            if (x > UINT32_MAX) return -1;
        }
        out[n++] = (uint32_t)x;
        if (!*v) return n;
        if (*v++ != ',') return -1;
    }
}

/* The keys that take 0 or 1: the int field at `field` of pxl_tuning is set
 * to 1 when the value is `set`, else 0 (so "cpu_simd=0" sets cpu_simd_off). */
static const struct {
    const char *key;
    size_t field;
    char set;
} flag_keys[] = {
    {"pllm_no_avx", offsetof(pxl_tuning, pllm_no_avx), '1'},
    {"cpu_simd", offsetof(pxl_tuning, cpu_simd_off), '0'},
    {"cpu_avx512", offsetof(pxl_tuning, cpu_avx512_off), '0'},
    {"cpu_q8", offsetof(pxl_tuning, cpu_q8_off), '0'},
    {"gpu_scopes", offsetof(pxl_tuning, gpu_scopes), '1'},
    {"llm_ahead", offsetof(pxl_tuning, llm_ahead_off), '0'},
    {"rka", offsetof(pxl_tuning, rka_off), '0'},
    {"gpu_spin", offsetof(pxl_tuning, gpu_spin_off), '0'},
    {"mv_sg", offsetof(pxl_tuning, mv_sg_off), '0'},
};

/* One key=value item; 0 if the key is known and the value good, else 1
 * with *what set to a description of what the key takes (NULL: unknown). */
static int apply(pxl_tuning *t, const char *key, const char *v, const char **what) {
    uint32_t a[4];
    int n;
    for (size_t i = 0; i < sizeof flag_keys / sizeof flag_keys[0]; i++) {
        if (strcmp(key, flag_keys[i].key)) continue;
        *what = "0 or 1";
        if (strcmp(v, "0") && strcmp(v, "1")) return 1;
        int on = v[0] == flag_keys[i].set;
        memcpy((char *)t + flag_keys[i].field, &on, sizeof on);
        return 0;
    }
    if (!strcmp(key, "dot")) {
        *what = "wg,groups: wg a power of two in [32, 1024], groups in [1, 65535]";
        n = parse_list(v, a, 2);
        if (n != 2 || a[0] < 32 || a[0] > 1024 || !pow2(a[0]) || a[1] < 1 || a[1] > 65535) return 1;
        memcpy(t->dot, a, sizeof t->dot);
        t->dot_n = 2;
    } else if (!strcmp(key, "attn")) {
        *what = "wg,cpv,target[,cwg]: wg and cwg powers of two in [32, 1024], cpv in [1, 8], target in [1, 65536]";
        n = parse_list(v, a, 4);
        if (n < 3 || a[0] < 32 || a[0] > 1024 || !pow2(a[0]) || a[1] < 1 || a[1] > 8 || a[2] < 1 ||
            a[2] > 65536 || (n == 4 && (a[3] < 32 || a[3] > 1024 || !pow2(a[3]))))
            return 1;
        if (n == 3) a[3] = 0;
        memcpy(t->attn, a, sizeof t->attn);
        t->attn_n = n;
    } else if (!strcmp(key, "attn_fa")) {
        *what = "0 (never) or bq,bk: bq in {32, 64}, bk in {32, 64}";
        n = parse_list(v, a, 2);
        if (n == 1 && a[0] == 0) {
            t->attn_fa_n = 1;
            return 0;
        }
        if (n != 2 || (a[0] != 32 && a[0] != 64) || (a[1] != 32 && a[1] != 64)) return 1;
        memcpy(t->attn_fa, a, sizeof t->attn_fa);
        t->attn_fa_n = 2;
    } else if (!strcmp(key, "qmv")) {
        *what = "wg,tpr,rows,unroll: powers of two 4 <= tpr <= wg <= 1024, rows in [1, 8], unroll >= 1, "
                "rows * unroll <= 16";
        n = parse_list(v, a, 4);
        if (n != 4 || !pow2(a[0]) || !pow2(a[1]) || a[1] < 4 || a[1] > a[0] || a[0] > 1024 || a[2] < 1 ||
            a[2] > 8 || a[3] < 1 || a[3] > 16 || a[2] * a[3] > 16)
            return 1;
        memcpy(t->qmv, a, sizeof t->qmv);
        t->qmv_n = 4;
    } else if (!strcmp(key, "qmv_xs")) {
        *what = "wg,xrb,steps: wg a power of two in [64, 1024], xrb a power of two <= 16, steps in [1, 1024]";
        n = parse_list(v, a, 3);
        if (n != 3 || !pow2(a[0]) || a[0] < 64 || a[0] > 1024 || !pow2(a[1]) || a[1] > 16 || a[2] < 1 ||
            a[2] > 1024)
            return 1;
        memcpy(t->qmv_xs, a, sizeof t->qmv_xs);
        t->qmv_xs_n = 3;
    } else if (!strcmp(key, "kmv_tpr")) {
        *what = "a power of two in [1, 256]";
        if (parse_list(v, a, 1) != 1 || !pow2(a[0]) || a[0] > 256) return 1;
        t->kmv_tpr = a[0];
    } else if (!strcmp(key, "kmv_wg")) {
        *what = "a power of two in [32, 256]";
        if (parse_list(v, a, 1) != 1 || !pow2(a[0]) || a[0] < 32 || a[0] > 256) return 1;
        t->kmv_wg = a[0];
    } else if (!strcmp(key, "rka_wg")) {
        *what = "a power of two in [32, 256]";
        if (parse_list(v, a, 1) != 1 || !pow2(a[0]) || a[0] < 32 || a[0] > 256) return 1;
        t->rka_wg = a[0];
    } else if (!strcmp(key, "kmv_rows")) {
        *what = "a number in [1, 8]";
        if (parse_list(v, a, 1) != 1 || a[0] < 1 || a[0] > 8) return 1;
        t->kmv_rows = a[0];
    } else if (!strcmp(key, "kmm8")) {
        *what = "0 (kmm8.wgsl), 4 or 8 (kmm8w.wgsl's columns per invocation)";
        if (strcmp(v, "0") && strcmp(v, "4") && strcmp(v, "8")) return 1;
        t->kmm8 = (uint32_t)(v[0] - '0') + 1; /* 0 stays "default" */
    } else if (!strcmp(key, "kmm8_merge")) {
        *what = "0 or 1";
        if (parse_list(v, a, 1) != 1 || a[0] > 1) return 1;
        t->kmm8_merge = a[0] + 1; /* 0 stays "default" */
    } else if (!strcmp(key, "kmm8_split")) {
        *what = "1, 2, 4 or 8 (the most splits of K in kmm8w.wgsl)";
        if (parse_list(v, a, 1) != 1 || !pow2(a[0]) || a[0] > 8) return 1;
        t->kmm8_split = a[0];
    } else if (!strcmp(key, "gemm_split")) {
        *what = "1, 2, 4 or 8 (the most splits of K in matmul.wgsl's gemm)";
        if (parse_list(v, a, 1) != 1 || !pow2(a[0]) || a[0] > 8) return 1;
        t->gemm_split = a[0];
    } else if (!strcmp(key, "llm_submit")) {
        *what = "a number of layers in [0, 65536] (0: one submit per pass)";
        if (parse_list(v, a, 1) != 1 || a[0] > 65536) return 1;
        t->llm_submit = a[0] + 1; /* 0 stays "default" */
    } else if (!strcmp(key, "llm_cut")) {
        *what = "a growth factor in [1, 64] (1: one part)";
        if (parse_list(v, a, 1) != 1 || a[0] < 1 || a[0] > 64) return 1;
        t->llm_cut = a[0];
    } else if (!strcmp(key, "qmv_kernel")) {
        *what = "q or auto";
        if (strcmp(v, "q") && strcmp(v, "auto")) return 1;
        t->qmv_plain = !strcmp(v, "q");
    } else if (!strcmp(key, "qmv_q8")) {
        *what = "0 or 1";
        if (strcmp(v, "0") && strcmp(v, "1")) return 1;
        t->qmv_q8_off = v[0] == '0';
    } else if (!strcmp(key, "vm_dp4")) {
        *what = "soft or auto";
        if (strcmp(v, "soft") && strcmp(v, "auto")) return 1;
        t->vm_dp4_soft = !strcmp(v, "soft");
    } else if (!strcmp(key, "vm_mm")) {
        *what = "tile, small or auto";
        if (!strcmp(v, "tile")) t->vm_mm = 1;
        else if (!strcmp(v, "small")) t->vm_mm = 2;
        else if (!strcmp(v, "auto")) t->vm_mm = 0;
        else return 1;
    } else if (!strcmp(key, "gpu_q8")) {
        *what = "0, 1 or 2";
        if (strcmp(v, "0") && strcmp(v, "1") && strcmp(v, "2")) return 1;
        t->gpu_q8_off = v[0] == '0';
        t->gpu_q8_token_off = v[0] != '2';
    } else {
        *what = NULL;
        return 1;
    }
    return 0;
}

pxl_status pxl_tuning_parse(pxl_ctx *ctx, const char *text, pxl_tuning *t) {
    memset(t, 0, sizeof *t);
    if (!text) return PXL_OK;
    const char *p = text;
    while (is_sep(*p)) p++;
    while (*p) {
        /* key: up to '=' */
        const char *k0 = p;
        while (*p && *p != '=' && !is_sep(*p)) p++;
        char key[32];
        size_t kl = (size_t)(p - k0);
        if (kl >= sizeof key) kl = sizeof key - 1;
        memcpy(key, k0, kl);
        key[kl] = '\0';
        if (*p != '=' || kl == 0)
            return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "tuning: '%s' is not key=value", key);
        p++;
        /* value: this token, then every following token without '=' (joined by ',') */
        char val[TUNE_VALUE_MAX];
        size_t vl = 0;
        int first = 1;
        for (;;) {
            const char *t0 = p;
            while (*p && !is_sep(*p)) p++;
            size_t tl = (size_t)(p - t0);
            if (memchr(t0, '=', tl)) { /* the next item */
                p = t0;
                break;
            }
            if (tl) {
                if (vl + tl + 2 > sizeof val)
                    return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "tuning: the value of '%s' is too long", key);
                if (!first) val[vl++] = ',';
                memcpy(val + vl, t0, tl);
                vl += tl;
                first = 0;
            }
            while (is_sep(*p)) p++;
            if (!*p) break;
        }
        val[vl] = '\0';
        const char *what = NULL;
        if (apply(t, key, val, &what)) {
            if (!what)
                return pxl_fail(ctx, PXL_ERR_INVALID_ARG,
                                "tuning: unknown key '%s' (known: dot, attn, attn_fa, qmv, qmv_xs, kmv_tpr, kmv_rows, kmv_wg, rka_wg, kmm8, kmm8_split, gemm_split, "
                                "llm_submit, llm_cut, qmv_kernel, qmv_q8, vm_dp4, vm_mm, pllm_no_avx, cpu_simd, cpu_avx512, cpu_q8, gpu_q8, gpu_scopes, llm_ahead, rka, gpu_spin, "
                                "mv_sg, kmm8_merge)",
                                key);
            return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "tuning: bad value '%s' for '%s' (takes %s)", val, key,
                            what);
        }
    }
    return PXL_OK;
}

const pxl_tuning *pxl_ctx_tuning(const pxl_ctx *ctx) { return &ctx->tuning; }
int pxl_ctx_cpu_f16c(const pxl_ctx *ctx) { return ctx->cpu_f16c; }
