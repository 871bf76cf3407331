/*
 * pxl/core.h: status codes, the context, allocation hooks, the thread pool and
 * the progress bar.
 *
 * Conventions for every pxl function:
 *  - Functions that can fail at run time return a pxl_status. On failure the
 *    context keeps a one-line message (pxl_ctx_error()) that says what failed
 *    and where; output parameters are left untouched unless stated otherwise.
 *  - The NULL rule: a NULL where an object is required is refused, in every
 *    build (no assert that compiles away): a function that returns a
 *    pxl_status returns PXL_ERR_INVALID_ARG with a message naming the
 *    argument (no message when the context itself is NULL); a getter returns
 *    0 or NULL. Arguments that may be NULL say so. Bad *data* (sizes, shapes,
 *    file contents) is a runtime error too.
 *  - Every create has a free; free(NULL) is a no-op.
 *  - There is no global mutable state: everything lives in a pxl_ctx. One
 *    context must not be used by two threads at once.
 */
#ifndef PXL_CORE_H
#define PXL_CORE_H

#include "pxl/export.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PXL_VERSION_MAJOR 0
#define PXL_VERSION_MINOR 1
#define PXL_VERSION_PATCH 0
#define PXL_VERSION_STRING "0.1.0"

typedef enum pxl_status {
    PXL_OK = 0,
    PXL_ERR_INVALID_ARG,   /* a size, shape or option value is not acceptable */
    PXL_ERR_OUT_OF_MEMORY, /* host allocation failed */
    PXL_ERR_IO,            /* a file could not be read or written */
    PXL_ERR_FORMAT,        /* outside input is malformed */
    PXL_ERR_UNSUPPORTED,   /* valid request this build or device cannot do */
    PXL_ERR_NO_LIBRARY,    /* the WebGPU library could not be loaded */
    PXL_ERR_NO_ADAPTER,    /* the library loaded but offered no usable adapter */
    PXL_ERR_GPU,           /* a WebGPU call failed (validation, device OOM, internal) */
    PXL_ERR_SHADER,        /* WGSL failed to compile; message carries line:col */
    PXL_ERR_DEVICE_LOST,   /* the device is gone; the context's GPU is unusable */
    PXL_ERR_TIMEOUT        /* waiting for the GPU took longer than the context allows */
} pxl_status;

/* Static name of a status ("PXL_ERR_SHADER"); never NULL. */
PXL_API const char *pxl_status_str(pxl_status s);

/* Which compute path a context uses. */
typedef enum pxl_backend {
    PXL_BACKEND_AUTO = 0, /* GPU if an adapter exists, else CPU */
    PXL_BACKEND_GPU,      /* GPU or fail */
    PXL_BACKEND_CPU       /* never load the WebGPU library */
} pxl_backend;

/* Parses "auto", "gpu" or "cpu" (exactly, lower case). */
PXL_API pxl_status pxl_backend_parse(const char *text, pxl_backend *out);
PXL_API const char *pxl_backend_name(pxl_backend b);

/*
 * Allocation hooks. All host memory pxl allocates for a context goes through
 * these (so tests can inject out-of-memory). alloc may return NULL; pxl then
 * fails with PXL_ERR_OUT_OF_MEMORY and frees what it had taken.
 */
typedef struct pxl_allocator {
    void *(*alloc)(void *user, size_t size);
    void *(*realloc)(void *user, void *ptr, size_t size);
    void (*free)(void *user, void *ptr);
    void *user;
} pxl_allocator;

typedef struct pxl_ctx pxl_ctx;

typedef struct pxl_ctx_options {
    pxl_backend backend;             /* default AUTO; PXL_BACKEND env overrides AUTO only */
    const pxl_allocator *allocator;  /* NULL: malloc/realloc/free. Copied. */
    int n_threads;                   /* CPU worker threads; <= 0: online cores */
    const char *webgpu_library;      /* if set, the only library path tried (no search) */
    uint32_t gpu_timeout_ms;         /* longest wait for the GPU; 0: 120000 */
    int quiet;                       /* 1: pxl itself prints nothing to stderr */
    /*
     * Where compiled GPU pipelines persist between processes (Dawn's blob
     * cache, one file per entry under <dir>/dawn/; see src/gpu/diskcache.c).
     * NULL: $PXL_CACHE_DIR, else $XDG_CACHE_HOME/pxl, else $HOME/.cache/pxl;
     * "" (or PXL_CACHE_DIR=off): no cache on disk. Created when first
     * written. A cache that cannot be read or written only costs compiles.
     */
    const char *cache_dir;
    /*
     * Most compute pipelines a GPU context keeps (pxl_kernel_get); 0: 1024.
     * Beyond it the least recently used one not in use by the open recording
     * is freed (see pxl_kernel_get for what that means for handles).
     */
    uint32_t kernel_cache_max;
    /*
     * Launch-shape overrides for tuning benchmarks: "key=value" items
     * separated by commas or spaces (a value may itself be a comma list, as
     * in "dot=512,256 qmv=256,32,2,4"). Parsed once, here; an unknown key or
     * a bad value makes pxl_ctx_create fail with PXL_ERR_INVALID_ARG and a
     * message naming the key. NULL or "": the built-in shapes. Keys:
     *   dot=wg,groups            wg a power of two in [32, 1024], groups in [1, 65535]
     *   attn=wg,cpv,target[,cwg] wg, cwg powers of two in [32, 1024], cpv in [1, 8],
     *                            target in [1, 65536] (a call the shape cannot
     *                            take on the device keeps the default shape)
     *   attn_fa=bq,bk|0          bq, bk in {32, 64}: the tiles of attention's
     *                            prompt kernel (rows x keys), which then takes
     *                            every call they fit, whatever its size (a call
     *                            they cannot take keeps the default); 0: never
     *                            that kernel
     *   qmv=wg,tpr,rows,unroll   wg, tpr powers of two, 4 <= tpr <= wg <= 1024,
     *                            rows in [1, 8], unroll >= 1, rows * unroll <= 16
     *   qmv_xs=wg,xrb,steps      wg a power of two in [64, 1024], xrb a power of
     *                            two <= 16, steps in [1, 1024]
     *   kmv_tpr=N                a power of two in [1, 256]
     *   kmv_rows=N               in [1, 8] (used where N * M <= 8; with M = 1
     *                            the rows of kmv4/kmv6/hmv, and kmv_tpr their row group)
     *   kmv_wg=N                 a power of two in [32, 256]: kmv4/kmv6/hmv's workgroup
     *   rka_wg=N                 a power of two in [32, 256]: pxl_rope_kv_attention's
     *                            one-dispatch kernel's workgroup (raised to D / 2)
     *   kmm8=0|4|8               the tiled products on 8-bit A: 0 kmm8.wgsl
     *                            (every format but Q5_K), 4 or 8 kmm8w.wgsl with
     *                            tiles of 64 x 16N
     *   kmm8_split=N             1, 2, 4 or 8: the most splits of K in kmm8w.wgsl
     *                            (products with few tiles; 1: none)
     *   gemm_split=N             1, 2, 4 or 8: the most splits of K in the f32,
     *                            f16 and bf16 GEMM (few tiles; 1: none)
     *   llm_submit=N             the GGUF runtime's GPU pass submits its work every
     *                            N layers (0: once per pass)
     *   llm_cut=B                B in [1, 64]: a GPU token's pass recorded ahead
     *                            (llm_ahead) is submitted in parts of 1, B, B^2, ...
     *                            layers (default 6; 1: one part)
     *   qmv_kernel=q|auto        q: the plain qmv kernel, never qmv_xs
     *   qmv_q8=0|1               0: qmv_xs and qmv_pair (one row of A, Q8_0, Q4_0
     *                            and Q5_0 weights) take A as given where a_q8
     *                            asks for rounding (1, the default: they round it)
     *   vm_dp4=soft|auto         soft: the VM's software dot4I8Packed
     *   vm_mm=tile|small|auto    the VM's MATMUL kernel
     *   pllm_no_avx=0|1          1: Pixel-LLM training without its AVX code
     *   cpu_simd=0|1             0: the CPU ops' plain C code (matmul), never
     *                            their x86-64 AVX2 code (testing)
     *   cpu_avx512=0|1           0: the CPU ops' x86-64 code stops at AVX2; 1
     *                            (the default): the one-row products of Q8_0,
     *                            Q4_0, Q5_0, Q4_K, Q5_K, f16 and bf16 weights,
     *                            those on 8-bit A and the tiled f32 products use
     *                            AVX-512 (F, BW, DQ, VL and VNNI) where the CPU
     *                            has it (the same results)
     *   cpu_q8=0|1               0: the GGUF runtime's CPU products take A as
     *                            given; 1 (the default): a one-token pass's
     *                            products round A to 8 bits where the CPU
     *                            multiplies in integers (Q8_0, Q4_0, Q5_0, and
     *                            Q4_K, Q5_K, Q6_K with AVX2:
     *                            pxl_matmul_options.a_q8 = 2), as llama.cpp's
     *                            CPU backend rounds its activations
     *   gpu_scopes=0|1           1: the ops stream's submits wait for WebGPU error
     *                            scopes (about 50 us each on an H100); 0 (the
     *                            default): its errors are reported at the submit or
     *                            the next wait through the uncaptured-error handler
     *   gpu_q8=0|1|2             0: the GGUF runtime's GPU products take A as
     *                            given; 1: a prompt's products round A to 8 bits
     *                            where a GPU kernel does (pxl_matmul_options.a_q8);
     *                            2 (the default): a decoded token's too (Q4_K, Q5_K: kmv4q;
     *                            Q6_K products of more than 1024 rows: kmv6q;
     *                            Q8_0, Q4_0 and Q5_0 in qmv_xs and qmv_pair)
     *   llm_ahead=0|1            0: the GGUF runtime's GPU decoding records each
     *                            token's pass when it is asked for; 1 (the default):
     *                            the next one-token pass is recorded while the GPU
     *                            runs this one, and submitted at once when it comes
     *   rka=0|1                  0: pxl_rope_kv_attention always runs pxl_rope_kv,
     *                            then pxl_attention (1, the default: one GPU dispatch
     *                            where it can)
     *   gpu_spin=0|1             0: waits on the GPU block in the driver at once;
     *                            1 (the default): they poll it first, yielding the
     *                            core between polls, for up to 5 ms
     *   mv_sg=0|1                0: the one-row products kmv4, kmv6 and hmv sum their
     *                            row groups in workgroup memory alone; 1 (the
     *                            default): subgroup shuffles first, on a device with
     *                            subgroups of one fixed size
     *   kmm8_merge=0|1           pxl_matmul_multi's prompt products on 8-bit A whose
     *                            weights are one matrix's rows in turn: 0: one by one;
     *                            1: one dispatch for them at every K (by default only
     *                            for K <= 1024)
     * Not copied: only read during pxl_ctx_create.
     */
    const char *tuning;
    /*
     * Extra Dawn toggles, "name,-name,...": each name is enabled, or with
     * '-' disabled, on the adapter (e.g. disable_robustness,
     * allow_unsafe_apis); at most 8 names of up to 63 characters, longer
     * ones are skipped. NULL: none. Copied.
     */
    const char *dawn_toggles;
    /*
     * 1: GPU kernels run without Dawn's bounds checks ("robustness": every
     * storage and uniform access clamped to its binding, which WebGPU does for
     * shaders it cannot trust). pxl's kernels are its own: the host checks every
     * op's sizes and views before it records a dispatch (the op contract), and
     * the op-case table runs each kernel both ways. Without the checks a GGUF
     * model decodes 5 to 7% faster on an H200 (docs/BENCHMARKS.md); the cost is
     * that a bug in a kernel could touch memory outside its buffers instead of
     * being clamped. 0 (the default): the checks stay. No effect on the CPU.
     */
    int gpu_unchecked;
} pxl_ctx_options;

/* Zero-initialised options with the defaults filled in. */
PXL_API pxl_ctx_options pxl_ctx_options_default(void);

/*
 * Creates a context and opens the backend it asks for.
 * The library reads the environment only here, once, and only where the
 * matching option is unset: PXL_BACKEND (backend is AUTO); PXL_CACHE_DIR,
 * else XDG_CACHE_HOME, else HOME (cache_dir is NULL and backend is not CPU);
 * PXL_WEBGPU_LIB, a library path tried first (webgpu_library is NULL and
 * backend is not CPU). No other variable changes what pxl does.
 *
 * - CPU: never touches the WebGPU library.
 * - AUTO: tries the GPU; if that fails the context runs on the CPU and
 *   pxl_ctx_gpu_unavailable_reason() says why. Returns PXL_OK.
 * - GPU: returns the loader/adapter error if no GPU can be opened.
 * Like sqlite3_open, *out is set to a context even when the status is an error
 * other than PXL_ERR_OUT_OF_MEMORY, so that pxl_ctx_error() can be read; the
 * caller frees it either way. opts may be NULL (defaults). Without a context
 * to put a message in, it returns PXL_ERR_INVALID_ARG and leaves *out alone
 * when out is NULL or an allocator lacks one of its three hooks.
 */
PXL_API pxl_status pxl_ctx_create(const pxl_ctx_options *opts, pxl_ctx **out);
PXL_API void pxl_ctx_free(pxl_ctx *ctx);

/* The last error message of this context ("" if none). Valid until the next call. */
PXL_API const char *pxl_ctx_error(const pxl_ctx *ctx);
/* The backend actually in use: PXL_BACKEND_GPU or PXL_BACKEND_CPU. */
PXL_API pxl_backend pxl_ctx_backend(const pxl_ctx *ctx);
/* Why the GPU is not in use ("" when it is, or when CPU was asked for). */
PXL_API const char *pxl_ctx_gpu_unavailable_reason(const pxl_ctx *ctx);
/* Number of CPU threads the context's pool uses (>= 1). */
PXL_API int pxl_ctx_threads(const pxl_ctx *ctx);

/* Allocation through the context's hooks. pxl_free(ctx, NULL) is a no-op. */
PXL_API void *pxl_alloc(pxl_ctx *ctx, size_t size);
PXL_API void *pxl_calloc(pxl_ctx *ctx, size_t count, size_t size); /* checks count*size */
PXL_API void *pxl_realloc(pxl_ctx *ctx, void *ptr, size_t size);
PXL_API void pxl_free(pxl_ctx *ctx, void *ptr);

/*
 * Runs fn(arg, i) for i in [0, n_tasks) on the context's thread pool and
 * returns when all are done. Tasks must be independent. Calls from inside a
 * task run serially on the calling thread.
 */
typedef void (*pxl_task_fn)(void *arg, size_t index);
PXL_API void pxl_parallel_for(pxl_ctx *ctx, size_t n_tasks, pxl_task_fn fn, void *arg);

/*
 * A progress bar on stderr. It draws only when stderr is a terminal and the
 * context is not quiet; otherwise every call is a cheap no-op.
 */
typedef struct pxl_progress pxl_progress;
PXL_API pxl_progress *pxl_progress_begin(pxl_ctx *ctx, const char *label, uint64_t total);
PXL_API void pxl_progress_update(pxl_progress *p, uint64_t done);
PXL_API void pxl_progress_end(pxl_progress *p); /* NULL is a no-op */

/*
 * Files: every file pxl reads or writes whole (.pxi images, assembler text and
 * its file: data, disassembly, model files), and every file the pxl CLI
 * writes, goes through these two.
 *
 * pxl_file_read reads a whole regular file of at most max bytes into *data
 * (pxl_alloc'ed, free with pxl_free; a NUL byte follows the data and is not
 * counted in *len). It opens the path without blocking and requires a regular
 * file: a FIFO, directory, device or socket fails at once with PXL_ERR_IO
 * ("X is a FIFO, not a regular file"); a file over max bytes fails with
 * PXL_ERR_FORMAT ("X is too large ..."), without reading past the cap.
 *
 * pxl_file_write replaces path with len bytes atomically: they go to a new
 * temporary file in the target's directory, are fsync'ed, and the temporary is
 * renamed over the target. Any failure leaves the old file as it was and no
 * temporary behind (PXL_ERR_IO, naming the path and the reason). The rules:
 *  - a new file gets mode 0666 & ~umask; an existing file keeps its permission
 *    bits (not set-id bits) and, where the process may, its owner and group;
 *  - a symbolic link is followed: the file it resolves to is replaced (the
 *    temporary lives beside that file) and the link stays; a link that does
 *    not resolve is refused;
 *  - an existing target that is not a regular file (a FIFO, a directory, a
 *    device such as /dev/null, even for root) is refused;
 *  - a read-only target (no write bit, or not writable by this process) is
 *    refused with "is read-only", even for root;
 *  - a target with more than one hard link is refused: a rename would split
 *    the links (the other names would keep the old bytes).
 * The checks and the rename are not one atomic step: a target changed by
 * someone else in between is replaced as the rename finds it.
 */
PXL_API pxl_status pxl_file_read(pxl_ctx *ctx, const char *path, size_t max, uint8_t **data, size_t *len);
PXL_API pxl_status pxl_file_write(pxl_ctx *ctx, const char *path, const void *data, size_t len);

/* Monotonic clock in seconds. */
PXL_API double pxl_time_now(void);

#ifdef __cplusplus
}
#endif
#endif /* PXL_CORE_H */
