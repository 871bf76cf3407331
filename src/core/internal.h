/*
 * Internal definitions shared by the subsystems: the context layout and the
 * error helpers. Not installed.
 */
#ifndef PXL_CORE_INTERNAL_H
#define PXL_CORE_INTERNAL_H

#include "pxl/core.h"

#include <stdarg.h>

#define PXL_ERR_MAX 2048

typedef struct pxl_threadpool pxl_threadpool;
typedef struct pxl_gpu pxl_gpu;

/*
 * The tuning option (pxl_ctx_options.tuning), parsed and range-checked once
 * by pxl_ctx_init. A count or flag of 0 means "not given: the built-in
 * choice". Ops, vm and pixel_llm read it through pxl_ctx_tuning.
 */
typedef struct pxl_tuning {
    uint32_t dot[2];     /* wg, groups; valid when dot_n == 2 */
    int dot_n;
    uint32_t attn[4];    /* wg, cpv, target, cwg; attn_n 3 (cwg not given) or 4 */
    int attn_n;
    uint32_t attn_fa[2]; /* bq, bk of attn_fa.wgsl's tiles; attn_fa_n 2, or 1 for attn_fa=0 (never) */
    int attn_fa_n;
    uint32_t qmv[4];     /* wg, tpr, rows, unroll; valid when qmv_n == 4 */
    int qmv_n;
    uint32_t qmv_xs[3];  /* wg, xrb, steps; valid when qmv_xs_n == 3 */
    int qmv_xs_n;
    uint32_t kmv_tpr;    /* 0: default */
    uint32_t kmv_rows;   /* 0: default */
    uint32_t kmv_wg;     /* 0: default */
    uint32_t rka_wg;     /* 0: default; else rka_wg=N, rope_kv_attn.wgsl's workgroup */
    uint32_t kmm8_split; /* 0: default; else kmm8_split=N, the most splits of K in kmm8w (1: none) */
    uint32_t gemm_split; /* 0: default; else gemm_split=N, the most splits of K in matmul.wgsl's gemm (1: none) */
    uint32_t kmm8;       /* 0: default; else 1 + kmm8=N (0: kmm8.wgsl, 4 or 8: kmm8w.wgsl's columns per invocation) */
    uint32_t llm_cut;    /* 0: default; else the growth of the parts of a GGUF token's pass
                          * recorded ahead (1: one part) */
    uint32_t llm_submit; /* 0: default; else 1 + layers per submit of the GPU forward pass (1: one per pass) */
    int qmv_plain;       /* qmv_kernel=q: never qmv_xs */
    int qmv_q8_off;      /* qmv_q8=0: qmv_xs and qmv_pair take A as given even where a_q8 asks */
    int vm_dp4_soft;     /* vm_dp4=soft */
    int vm_mm;           /* vm_mm: 0 auto, 1 tile, 2 small */
    int pllm_no_avx;     /* pllm_no_avx=1 */
    int cpu_simd_off;    /* cpu_simd=0: the CPU ops' plain C code, never AVX2 */
    int cpu_avx512_off;  /* cpu_avx512=0: the CPU ops' vector code stops at AVX2 */
    int cpu_q8_off;      /* cpu_q8=0: the LLM's weight products on the CPU take activations as given
                          * (by default a decoded token's round them to 8 bits where the CPU
                          * multiplies in integers: pxl_matmul_options.a_q8, as llama.cpp does) */
    int gpu_scopes;      /* gpu_scopes=1: the ops stream's recordings check their errors at submit
                          * through WebGPU error scopes (by default they rely on the
                          * uncaptured-error handler: reported at the submit or the next wait) */
    int gpu_q8_off;      /* gpu_q8=0: the LLM's weight products on a GPU take activations as given
                          * (by default they round them to 8 bits where a kernel does: a_q8) */
    int gpu_q8_token_off; /* gpu_q8=0 or 1: a decoded token's take them as given (by default the
                           * one-row Q4_K kernel kmv4q rounds them too) */
    int llm_ahead_off;   /* llm_ahead=0: the GGUF runtime records no token ahead on a GPU */
    int gpu_spin_off;    /* gpu_spin=0: waits on the GPU block at once (by default they poll up to 5 ms first) */
    int rka_off;         /* rka=0: pxl_rope_kv_attention is always pxl_rope_kv, then pxl_attention */
    int mv_sg_off;       /* mv_sg=0: kmv4/kmv6/hmv reduce in workgroup memory alone, never by subgroup
                          * shuffles (pxl_mv_sgw) */
    uint32_t kmm8_merge; /* 0: default; else 1 + kmm8_merge=N (0: never, 1: for every K; kmm8_spans in
                          * src/ops/matmul_quant.c) */
} pxl_tuning;

struct pxl_ctx {
    pxl_allocator alloc;
    pxl_backend requested;
    pxl_backend active;
    int quiet;
    uint32_t gpu_timeout_ms;
    char *webgpu_library; /* owned copy of the option, or NULL */
    char *webgpu_library_env; /* $PXL_WEBGPU_LIB read at creation (owned; tried first), or NULL */
    char *dawn_toggles;   /* owned copy of the option, or NULL */
    int gpu_unchecked;    /* the option: Dawn's disable_robustness on the GPU device */
    pxl_tuning tuning;    /* the parsed tuning option */
    char *cache_dir;      /* resolved pipeline cache directory (owned), or NULL: none */
    uint32_t kernel_cache_max; /* the option; 0: the default */
    int n_threads;
    int cpu_f16c;         /* cpuid's F16C bit, read once at creation (cpuid traps to the
                           * hypervisor in a VM: too slow to ask per op) */
    pxl_threadpool *pool; /* created on first parallel_for with n_threads > 1 */
    void *rope_table;     /* the CPU RoPE's angle table (src/ops/rope.c): one pxl_calloc block
                           * that pxl_ctx_free frees, or NULL */
    pxl_gpu *gpu;         /* opaque to core; NULL unless active == PXL_BACKEND_GPU */
    void (*close_backend)(pxl_ctx *ctx); /* set by whoever opened a backend; pxl_ctx_free calls it */
    char error[PXL_ERR_MAX];
    char gpu_reason[PXL_ERR_MAX];
};

#if defined(__GNUC__)
#define PXL_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define PXL_PRINTF(a, b)
#endif

/*
 * UTF-8 (utf8.c). encode writes 1 to 4 bytes for cp (U+FFFD for surrogates
 * and values above U+10FFFF) and returns how many. decode reads one code
 * point from s[*i .. n) (*i < n) and advances *i; a malformed or truncated
 * sequence gives U+FFFD and advances one byte.
 */
size_t pxl_utf8_encode(uint32_t cp, char *out);
uint32_t pxl_utf8_decode(const unsigned char *s, size_t n, size_t *i);

/* SplitMix64: advances *state and returns the next 64 random bits (seeds and
 * small deterministic generators; the same sequence on every platform). */
static inline uint64_t pxl_splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/*
 * The NULL rule of pxl/core.h, for functions that return a pxl_status, in
 * every build: a NULL context returns PXL_ERR_INVALID_ARG (there is nowhere to
 * put a message); a NULL argument fails with "fn: name is NULL".
 */
#define PXL_REQUIRE_CTX(ctx) do { if (!(ctx)) return PXL_ERR_INVALID_ARG; } while (0)
#define PXL_REQUIRE(ctx, fn, arg) \
    do { if (!(arg)) return pxl_fail((ctx), PXL_ERR_INVALID_ARG, "%s: %s is NULL", (fn), #arg); } while (0)

/* Records a formatted message on the context and returns `s`. */
pxl_status pxl_fail(pxl_ctx *ctx, pxl_status s, const char *fmt, ...) PXL_PRINTF(3, 4);
pxl_status pxl_failv(pxl_ctx *ctx, pxl_status s, const char *fmt, va_list ap) PXL_PRINTF(3, 0);
void pxl_clear_error(pxl_ctx *ctx);
/* Appends to the current message (for multi-line compiler output). */
void pxl_append_error(pxl_ctx *ctx, const char *fmt, ...) PXL_PRINTF(2, 3);

/* Overflow-checked size arithmetic: return 0 on overflow. */
static inline int pxl_mul_size(size_t a, size_t b, size_t *out) {
    if (a != 0 && b > (size_t)-1 / a) return 0;
    *out = a * b;
    return 1;
}
static inline int pxl_add_size(size_t a, size_t b, size_t *out) {
    if (b > (size_t)-1 - a) return 0;
    *out = a + b;
    return 1;
}

/* Thread pool (threadpool.c). */
pxl_threadpool *pxl_threadpool_create(pxl_ctx *ctx, int n_threads);
void pxl_threadpool_free(pxl_ctx *ctx, pxl_threadpool *pool);
void pxl_threadpool_run(pxl_threadpool *pool, size_t n_tasks, pxl_task_fn fn, void *arg);

/*
 * The core part of pxl_ctx_create: allocates and fills the context from the
 * options and the environment (PXL_BACKEND, PXL_CACHE_DIR, PXL_WEBGPU_LIB;
 * see pxl_ctx_create) and parses the tuning option. On PXL_OK,
 * *want is the backend to open (AUTO, GPU or CPU; the context is CPU until
 * someone opens another). On failure *out is set as pxl_ctx_create says
 * (NULL only for out-of-memory).
 */
pxl_status pxl_ctx_init(const pxl_ctx_options *opts, pxl_ctx **out, pxl_backend *want);

/* The context's parsed tuning option; never NULL, valid while ctx lives. */
const pxl_tuning *pxl_ctx_tuning(const pxl_ctx *ctx);
/* 1 when the CPU has F16C (cpuid at creation; 0 off x86-64) */
int pxl_ctx_cpu_f16c(const pxl_ctx *ctx);

/*
 * Parses a tuning string (pxl_ctx_options.tuning) into *t (zeroed first;
 * NULL or "" leaves it so). On a syntax error, an unknown key or a value out
 * of range returns PXL_ERR_INVALID_ARG with a message naming the key on ctx.
 */
pxl_status pxl_tuning_parse(pxl_ctx *ctx, const char *text, pxl_tuning *t);

/* Copies src into dst[cap], truncating; always NUL-terminates (cap > 0). */
void pxl_copy_str(char *dst, size_t cap, const char *src);

/* Duplicates a string with the context's allocator; NULL on OOM. */
char *pxl_strdup(pxl_ctx *ctx, const char *s);

/* ---- files (file.c) ---------------------------------------------------------- */

#include <sys/stat.h>

/* "a FIFO", "a directory", "a character device", ... for a stat mode. */
const char *pxl_file_kind(mode_t mode);
/*
 * Opens path for reading without blocking on a FIFO or device: O_NONBLOCK,
 * fstat, a regular file required, then blocking mode restored. Returns the
 * descriptor (the caller closes it) and fills *st; or -1 with a sentence that
 * names the path in why ("cannot open X: ...", "X is a FIFO, not a regular file").
 */
int pxl_open_regular(const char *path, struct stat *st, char *why, size_t cap);
/* The directory of the running executable (from /proc/self/exe) into
 * buf[cap]; 0 when it cannot be found or does not fit. Where pxl looks for
 * what ships beside the tool (the Dawn library, the Pixel-LLM model). */
int pxl_exe_dir(char *buf, size_t cap);

#endif
