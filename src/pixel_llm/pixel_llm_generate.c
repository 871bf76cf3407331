/*
 * Pixel-LLM's sampler: feeds the prompt (or the prime text) into the
 * context, then for each character runs the model (the VM on the context's
 * backend, or the C reference) and picks the next id from the int32 logits
 * on the host, with a xoshiro256** generator seeded by SplitMix64. The same
 * options give the same text on every backend.
 */
#include "pllm_internal.h"

#include <math.h>
#include <string.h>

#define PLLM_DEFAULT_TOKENS 300u
#define PLLM_DEFAULT_TEMPERATURE 0.8

typedef struct {
    uint64_t s[4];
} rng;

static void rng_seed(rng *r, uint64_t seed) {
    for (int i = 0; i < 4; i++) r->s[i] = pxl_splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(rng *r) {
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}


/* Picks the next id from int32 logits: greedy (temp 0), or softmax(logit * scale / T) over the top k. */
static uint32_t sample(const int32_t *logits, uint32_t V, double scale, double temp, uint32_t top_k,
                       rng *r, double *p) {
    uint32_t best = 0;
    for (uint32_t v = 1; v < V; v++)
        if (logits[v] > logits[best]) best = v;
    if (temp <= 0) return best;
    /* keep[v]: v is among the top k (ties broken toward the lower id) */
    for (uint32_t v = 0; v < V; v++) {
        uint32_t above = 0;
        if (top_k && top_k < V)
            for (uint32_t u = 0; u < V; u++)
                if (logits[u] > logits[v] || (logits[u] == logits[v] && u < v)) above++;
        p[v] = (!top_k || top_k >= V || above < top_k)
                   ? exp((double)(logits[v] - logits[best]) * scale / temp)
                   : 0.0;
    }
    double total = 0;
    for (uint32_t v = 0; v < V; v++) total += p[v];
    double u = (double)(rng_next(r) >> 11) * 0x1.0p-53 * total;
    double acc = 0;
    uint32_t last = best;
    for (uint32_t v = 0; v < V; v++) {
        if (p[v] <= 0) continue;
        acc += p[v];
        last = v;
        if (u < acc) return v;
    }
    return last;
}

/* Shifts id into the context (oldest first). */
static void push_id(uint32_t *ids, uint32_t C, uint32_t id) {
    memmove(ids, ids + 1, (C - 1) * sizeof *ids);
    ids[C - 1] = id;
}

/* Feeds the UTF-8 text s into the context, one code point per id. */
static void feed(const pxl_pllm *m, uint32_t *ids, const char *s) {
    const unsigned char *u = (const unsigned char *)s;
    size_t n = strlen(s), i = 0;
    while (i < n) push_id(ids, m->q.C, pxl_pllm_encode(m, pxl_utf8_decode(u, n, &i)));
}

pxl_status pxl_pllm_generate(pxl_pllm *m, const pxl_pllm_gen_options *opts, pxl_pllm_gen_result *res) {
    pxl_ctx *ctx = m->ctx;
    memset(res, 0, sizeof *res);
    pxl_pllm_gen_options o;
    if (opts) o = *opts;
    else memset(&o, 0, sizeof o);
    if (o.tokens == 0) o.tokens = PLLM_DEFAULT_TOKENS;
    if (o.temperature == 0) o.temperature = PLLM_DEFAULT_TEMPERATURE;
    const uint32_t V = m->q.V, C = m->q.C;
    if (!(o.temperature > 0) || o.temperature > 100)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pixel-llm: temperature %g outside (0, 100]",
                        o.temperature);
    size_t cap;
    if (!pxl_mul_size(o.tokens, 4, &cap) || !pxl_add_size(cap, 1, &cap))
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pixel-llm: too many tokens");
    char *text = pxl_alloc(ctx, cap);
    uint32_t *ids = pxl_calloc(ctx, C, sizeof *ids);
    int32_t *logits = pxl_calloc(ctx, V, sizeof *logits);
    double *p = pxl_calloc(ctx, V, sizeof *p);
    if (!text || !ids || !logits || !p) {
        pxl_free(ctx, text), pxl_free(ctx, ids), pxl_free(ctx, logits), pxl_free(ctx, p);
        return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pixel-llm: out of memory");
    }
    for (uint32_t i = 0; i < C; i++) ids[i] = (uint32_t)m->meta[PLLM_M_PAD_ID];
    if (o.prompt && o.prompt[0]) feed(m, ids, o.prompt);
    else if (o.prime) feed(m, ids, o.prime);
    rng r;
    rng_seed(&r, o.seed);
    double scale = ldexp((double)m->q.scale_mant, -m->q.scale_shift);
    size_t len = 0;
    pxl_status s = PXL_OK;
    double t0 = pxl_time_now();
    uint32_t t;
    for (t = 0; t < o.tokens; t++) {
        s = o.reference ? pxl_pllm_logits_ref(m, ids, logits) : pxl_pllm_logits_vm(m, ids, 0, logits);
        if (s != PXL_OK) break;
        uint32_t id = sample(logits, V, scale, o.greedy ? 0 : o.temperature, o.top_k, &r, p);
        size_t k = pxl_utf8_encode(pxl_pllm_decode(m, id), text + len);
        if (o.on_token) o.on_token(o.user, text + len, k);
        len += k;
        push_id(ids, C, id);
    }
    double secs = pxl_time_now() - t0;
    text[len] = '\0';
    pxl_free(ctx, ids), pxl_free(ctx, logits), pxl_free(ctx, p);
    if (s != PXL_OK) {
        pxl_free(ctx, text);
        return s;
    }
    res->text = text;
    res->len = len;
    res->tokens = t;
    res->seconds = secs;
    res->tokens_per_s = secs > 0 ? t / secs : 0;
    res->backend = o.reference ? PXL_BACKEND_CPU : pxl_ctx_backend(ctx);
    return PXL_OK;
}
