/*
 * A quantized model against its own weights in f32.
 *
 *   test_llm_dequant MODEL.gguf TOL [cpu|gpu] [q8]
 *
 * Writes an F32 copy of MODEL in memory (every metadata key copied, every
 * tensor decoded with pxl_dequantize, or converted from f16), then runs both
 * on the backend (default CPU; 77 when the GPU is asked for and absent): a
 * 16-token prefill and 16 greedy steps (the quantized model's
 * choice fed to both), comparing whole logit rows. The weights are the same
 * numbers, so the only differences are summation orders: the largest |a -
 * b| must stay within TOL x (1 + the row's largest |logit|). (On the CPU the
 * two paths share their summation order, so any difference is a decoding
 * difference: the matmul's block decoders against pxl_dequantize.) This holds the
 * quantized kernels of a whole model to f32 rounding, where the comparison
 * with llama.cpp (which quantizes activations) can only hold them to 0.1-0.8.
 * Without q8 both take activations as given (the tuning options gpu_q8=0
 * and cpu_q8=0, not the defaults). With q8 the quantized model runs with
 * 8-bit activations (pxl_matmul_options.a_q8): on the CPU (cpu_q8=1, the
 * default) the decoded tokens' products with Q8_0, Q4_0, Q5_0, Q4_K, Q5_K
 * and Q6_K weights; on a GPU with gpu_q8=2, before Q4_K and Q6_K
 * weights (the prompt's tiled products, the tokens' one-row Q4_K ones) and
 * Q8_0, Q4_0, Q5_0 and Q5_K weights in the prompt's tiled products; the f32
 * copy is not rounded. That rounding is not a summation order, so TOL there
 * is the measured distance with a margin (see tests/CMakeLists.txt), and a
 * largest difference below 1e-4 fails (the rounding did not happen).
 */
#include "pxl/llm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/llm_model.h" /* pxl_llm_dtype_of */

static size_t elem_size(pxl_gguf_type t) {
    switch (t) {
    case PXL_GGUF_UINT8: case PXL_GGUF_INT8: case PXL_GGUF_BOOL: return 1;
    case PXL_GGUF_UINT16: case PXL_GGUF_INT16: return 2;
    case PXL_GGUF_UINT32: case PXL_GGUF_INT32: case PXL_GGUF_FLOAT32: return 4;
    case PXL_GGUF_UINT64: case PXL_GGUF_INT64: case PXL_GGUF_FLOAT64: return 8;
    default: return 0;
    }
}

static pxl_status copy_kv(const pxl_gguf *g, size_t i, pxl_gguf_writer *w) {
    const char *key = pxl_gguf_key(g, i);
    pxl_gguf_type t = pxl_gguf_kv_type(g, i);
    int64_t iv;
    uint64_t uv;
    double fv;
    const char *str;
    size_t len;
    switch (t) {
    case PXL_GGUF_UINT8: case PXL_GGUF_UINT16: case PXL_GGUF_UINT32: case PXL_GGUF_UINT64:
        if (pxl_gguf_kv_uint(g, i, &uv) != PXL_OK) return PXL_ERR_FORMAT;
        return pxl_gguf_writer_add_uint(w, key, t, uv);
    case PXL_GGUF_INT8: case PXL_GGUF_INT16: case PXL_GGUF_INT32: case PXL_GGUF_INT64:
        if (pxl_gguf_kv_int(g, i, &iv) != PXL_OK) return PXL_ERR_FORMAT;
        return pxl_gguf_writer_add_int(w, key, t, iv);
    case PXL_GGUF_BOOL:
        if (pxl_gguf_kv_int(g, i, &iv) != PXL_OK) return PXL_ERR_FORMAT;
        return pxl_gguf_writer_add_bool(w, key, (int)iv);
    case PXL_GGUF_FLOAT32: case PXL_GGUF_FLOAT64:
        if (pxl_gguf_kv_float(g, i, &fv) != PXL_OK) return PXL_ERR_FORMAT;
        return pxl_gguf_writer_add_float(w, key, t, fv);
    case PXL_GGUF_STRING:
        if (pxl_gguf_kv_string(g, i, &str, &len) != PXL_OK) return PXL_ERR_FORMAT;
        return pxl_gguf_writer_add_string(w, key, str, len);
    case PXL_GGUF_ARRAY: {
        pxl_gguf_type et;
        uint64_t n;
        pxl_status s = pxl_gguf_kv_array(g, i, &et, &n);
        if (s != PXL_OK) return s;
        if (et == PXL_GGUF_STRING) {
            const char **strs = calloc(n ? n : 1, sizeof *strs);
            size_t *lens = calloc(n ? n : 1, sizeof *lens);
            for (uint64_t j = 0; s == PXL_OK && j < n; j++) s = pxl_gguf_arr_string(g, i, j, &strs[j], &lens[j]);
            if (s == PXL_OK) s = pxl_gguf_writer_add_string_array(w, key, strs, lens, n);
            free(strs);
            free(lens);
            return s;
        }
        const void *data;
        size_t es;
        if ((s = pxl_gguf_arr_data(g, i, &data, &es)) != PXL_OK) return s;
        if (es != elem_size(et)) return PXL_ERR_FORMAT;
        return pxl_gguf_writer_add_array(w, key, et, data, n);
    }
    default: return PXL_ERR_FORMAT;
    }
}

/* The F32 copy of g, in memory (pxl_free on ctx). */
static pxl_status f32_copy(pxl_ctx *ctx, const pxl_gguf *g, uint8_t **data, size_t *size) {
    pxl_gguf_writer *w;
    pxl_status s = pxl_gguf_writer_create(ctx, &w);
    if (s != PXL_OK) return s;
    for (size_t i = 0; s == PXL_OK && i < pxl_gguf_n_kv(g); i++) {
        if (!strcmp(pxl_gguf_key(g, i), "general.alignment")) continue; /* the writer's own */
        if (!strcmp(pxl_gguf_key(g, i), "general.file_type")) {
            s = pxl_gguf_writer_add_uint(w, "general.file_type", PXL_GGUF_UINT32, 0); /* all F32 */
            continue;
        }
        s = copy_kv(g, i, w);
    }
    for (size_t i = 0; s == PXL_OK && i < pxl_gguf_n_tensors(g); i++) {
        const pxl_gguf_tensor *t = pxl_gguf_tensor_at(g, i);
        int64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
        float *f = malloc((size_t)n * sizeof *f);
        if (!f) return PXL_ERR_OUT_OF_MEMORY;
        pxl_dtype dt;
        if (t->type == PXL_GGML_F32) {
            memcpy(f, t->data, (size_t)n * sizeof *f);
        } else if (t->type == PXL_GGML_F16) {
            for (int64_t k = 0; k < n; k++) {
                uint16_t h;
                memcpy(&h, (const uint8_t *)t->data + 2 * k, 2);
                f[k] = pxl_f16_to_f32(h);
            }
        } else if (pxl_llm_dtype_of(t->type, &dt)) {
            s = pxl_dequantize(ctx, dt, t->data, (size_t)t->bytes, f, n);
        } else {
            s = PXL_ERR_UNSUPPORTED;
        }
        if (s == PXL_OK) s = pxl_gguf_writer_add_tensor(w, t->name, PXL_GGML_F32, t->ndim, t->ne, f, (size_t)n * 4);
        free(f);
    }
    if (s == PXL_OK) s = pxl_gguf_writer_to_memory(w, data, size);
    pxl_gguf_writer_free(w);
    return s;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: test_llm_dequant MODEL.gguf TOL [cpu|gpu] [q8]\n");
        return 2;
    }
    float tol = strtof(argv[2], NULL);
    pxl_ctx_options o = pxl_ctx_options_default();
    int gpu = argc > 3 && !strcmp(argv[3], "gpu");
    o.backend = gpu ? PXL_BACKEND_GPU : PXL_BACKEND_CPU;
    o.quiet = 1;
    /* without q8 both paths take activations as given (gpu_q8=0, cpu_q8=0: not the defaults) */
    int q8 = argc > 4 && !strcmp(argv[4], "q8");
    o.tuning = q8 ? (gpu ? "gpu_q8=2" : "cpu_q8=1") : "gpu_q8=0 cpu_q8=0";
    pxl_ctx *ctx = NULL;
    if (pxl_ctx_create(&o, &ctx) != PXL_OK) {
        pxl_ctx_free(ctx);
        return gpu ? 77 : 1;
    }
    pxl_gguf *gq = NULL, *gf = NULL;
    pxl_llm *mq = NULL, *mf = NULL;
    uint8_t *data = NULL;
    size_t size = 0;
    int fails = 0;
    if (pxl_gguf_open(ctx, argv[1], &gq) != PXL_OK || f32_copy(ctx, gq, &data, &size) != PXL_OK ||
        pxl_gguf_parse(ctx, data, size, &gf) != PXL_OK || pxl_llm_load(ctx, gq, NULL, &mq) != PXL_OK ||
        pxl_llm_load(ctx, gf, NULL, &mf) != PXL_OK) {
        fprintf(stderr, "%s: %s\n", argv[1], pxl_ctx_error(ctx));
        fails = 1;
    }
    double worst = 0;
    if (!fails) {
        int64_t V = pxl_llm_get_info(mq)->n_vocab;
        float *a = malloc((size_t)V * sizeof *a), *b = malloc((size_t)V * sizeof *b);
        int32_t ids[16], tok = 0;
        ids[0] = 1 % (int32_t)V;
        for (int i = 1; i < 16; i++) ids[i] = (int32_t)((i * 7919) % V);
        for (int s = 0; s <= 16 && !fails; s++) {
            const int32_t *in = s == 0 ? ids : &tok;
            size_t n = s == 0 ? 16 : 1;
            if (pxl_llm_eval(mq, in, n, a, 0) != PXL_OK || pxl_llm_eval(mf, in, n, b, 0) != PXL_OK) {
                fprintf(stderr, "eval: %s\n", pxl_ctx_error(ctx));
                fails++;
                break;
            }
            double big = 0, diff = 0;
            int64_t best = 0;
            for (int64_t i = 0; i < V; i++) {
                double x = fabs((double)a[i]), d = fabs((double)a[i] - (double)b[i]);
                if (x > big) big = x;
                if (!(d <= diff)) diff = d;
                if (a[i] > a[best]) best = i;
            }
            double rel = diff / (1.0 + big);
            if (rel > worst) worst = rel;
            if (!(rel <= (double)tol)) {
                fprintf(stderr, "step %d: |quantized - f32| %.3g (%.3g of 1 + max |logit|)\n", s, diff, rel);
                fails++;
            }
            tok = (int32_t)best;
        }
        free(a);
        free(b);
    }
    if (q8 && worst < 1e-4) { /* f32 summation orders alone stay near 1e-6: no rounding happened */
        fprintf(stderr, "q8: largest difference %.3g, below 1e-4: the activations were not rounded\n", worst);
        fails++;
    }
    printf("%s: largest |quantized - its f32 copy| / (1 + max |logit|) %.3g (tolerance %.3g), %s\n", argv[1], worst,
           (double)tol, fails ? "FAILED" : "ok");
    pxl_llm_free(mq);
    pxl_llm_free(mf);
    pxl_gguf_free(gq);
    pxl_gguf_free(gf);
    pxl_free(ctx, data);
    pxl_ctx_free(ctx);
    return fails ? 1 : 0;
}
