/*
 * Token sampling from logits, in llama.cpp's order: repetition, frequency
 * and presence penalties over the recent history; top-k; top-p; min-p;
 * temperature; a draw from a seeded generator. Greedy (temperature <= 0)
 * takes the first largest logit after the penalties.
 *
 * Determinism: the candidates are sorted by (logit desc, id asc), the
 * probabilities summed in that order in double, and the generator is
 * splitmix64 with the given seed, so the same logits and seed give the same
 * token on every machine.
 */
#include "llm_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    float logit;
    int32_t id;
} cand;

struct pxl_sampler {
    pxl_ctx *ctx;
    pxl_sampler_options o;
    int64_t n_vocab;
    uint64_t rng;
    int32_t *hist; /* ring of the last cap tokens */
    size_t cap, n_hist, head;
    cand *c;
    int32_t *count; /* per-token counts in the window (penalties) */
};

static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

pxl_status pxl_sampler_create(pxl_ctx *ctx, int64_t n_vocab, const pxl_sampler_options *opts, pxl_sampler **out) {
    PXL_REQUIRE_CTX(ctx);
    PXL_REQUIRE(ctx, "pxl_sampler_create", out);
    if (n_vocab < 1 || n_vocab > INT32_MAX)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_sampler_create: vocabulary of %lld", (long long)n_vocab);
    pxl_sampler_options o;
    memset(&o, 0, sizeof o);
    if (opts) o = *opts;
    if (!isfinite(o.temperature) || !isfinite(o.top_p) || !isfinite(o.min_p) || !isfinite(o.repeat_penalty) ||
        !isfinite(o.frequency_penalty) || !isfinite(o.presence_penalty) || o.repeat_penalty < 0.0f ||
        o.repeat_last_n < -1)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_sampler_create: a sampling option is not finite or negative");
    pxl_sampler *s = pxl_calloc(ctx, 1, sizeof *s);
    if (!s) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "out of memory");
    s->ctx = ctx;
    s->o = o;
    s->n_vocab = n_vocab;
    s->rng = o.seed;
    s->cap = o.repeat_last_n == 0 ? 64 : o.repeat_last_n < 0 ? 1u << 20 : (size_t)o.repeat_last_n;
    s->hist = pxl_calloc(ctx, s->cap, sizeof *s->hist);
    s->c = pxl_calloc(ctx, (size_t)n_vocab, sizeof *s->c);
    s->count = pxl_calloc(ctx, (size_t)n_vocab, sizeof *s->count);
    if (!s->hist || !s->c || !s->count) {
        pxl_sampler_free(s);
        return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "out of memory");
    }
    *out = s;
    return PXL_OK;
}

void pxl_sampler_free(pxl_sampler *s) {
    if (!s) return;
    pxl_free(s->ctx, s->hist);
    pxl_free(s->ctx, s->c);
    pxl_free(s->ctx, s->count);
    pxl_free(s->ctx, s);
}

void pxl_sampler_reset(pxl_sampler *s) {
    if (!s) return;
    s->n_hist = s->head = 0;
    memset(s->count, 0, (size_t)s->n_vocab * sizeof *s->count);
    s->rng = s->o.seed;
}

void pxl_sampler_accept(pxl_sampler *s, int32_t token) {
    if (!s || token < 0 || token >= s->n_vocab) return;
    if (s->n_hist == s->cap) { /* the oldest leaves the window */
        int32_t old = s->hist[s->head];
        s->count[old]--;
        s->hist[s->head] = token;
        s->head = (s->head + 1) % s->cap;
    } else {
        s->hist[(s->head + s->n_hist) % s->cap] = token;
        s->n_hist++;
    }
    s->count[token]++;
}

static int cand_cmp(const void *a, const void *b) {
    const cand *x = a, *y = b;
    if (x->logit != y->logit) return x->logit > y->logit ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

pxl_status pxl_sampler_sample(pxl_sampler *s, float *logits, int32_t *token) {
    if (!s) return PXL_ERR_INVALID_ARG;
    PXL_REQUIRE(s->ctx, "pxl_sampler_sample", logits);
    PXL_REQUIRE(s->ctx, "pxl_sampler_sample", token);
    const pxl_sampler_options *o = &s->o;
    int64_t n = s->n_vocab;
    /* penalties, as llama.cpp applies them to each token seen in the window */
    int rep = o->repeat_penalty != 0.0f && o->repeat_penalty != 1.0f;
    if (rep || o->frequency_penalty != 0.0f || o->presence_penalty != 0.0f) {
        /* each distinct token of the window once: its count is negated while
         * it is being visited, then restored */
        for (size_t i = 0; i < s->n_hist; i++) {
            int32_t t = s->hist[(s->head + i) % s->cap];
            int32_t c = s->count[t];
            if (c <= 0) continue; /* seen earlier in this loop */
            float *l = &logits[t];
            if (rep) *l = *l <= 0.0f ? *l * o->repeat_penalty : *l / o->repeat_penalty;
            *l -= (float)c * o->frequency_penalty + o->presence_penalty;
            s->count[t] = -c;
        }
        for (size_t i = 0; i < s->n_hist; i++) {
            int32_t t = s->hist[(s->head + i) % s->cap];
            if (s->count[t] < 0) s->count[t] = -s->count[t];
        }
    }
    if (o->temperature <= 0.0f) {
        int64_t best = 0; /* the first largest; a NaN logit never wins (as -inf) */
        for (int64_t i = 1; i < n; i++)
            if (logits[i] > logits[best] || (isnan(logits[best]) && !isnan(logits[i]))) best = i;
        *token = (int32_t)best;
        return PXL_OK;
    }
    for (int64_t i = 0; i < n; i++) {
        float l = logits[i];
        s->c[i].logit = isnan(l) ? -INFINITY : l;
        s->c[i].id = (int32_t)i;
    }
    size_t m = (size_t)n;
    qsort(s->c, m, sizeof *s->c, cand_cmp);
    if (!isfinite(s->c[0].logit)) { /* no finite logit to weigh: the first largest */
        *token = s->c[0].id;
        return PXL_OK;
    }
    if (o->top_k > 0 && (size_t)o->top_k < m) m = (size_t)o->top_k;
    /* softmax of the survivors (at temperature 1 for top-p and min-p, as llama.cpp) */
    double maxl = (double)s->c[0].logit, sum = 0.0;
    for (size_t i = 0; i < m; i++) sum += exp((double)s->c[i].logit - maxl);
    if (o->top_p > 0.0f && o->top_p < 1.0f) {
        double acc = 0.0;
        size_t keep = m;
        for (size_t i = 0; i < m; i++) {
            acc += exp((double)s->c[i].logit - maxl) / sum;
            if (acc >= (double)o->top_p) {
                keep = i + 1;
                break;
            }
        }
        m = keep;
    }
    if (o->min_p > 0.0f) {
        double floor_l = maxl + log((double)o->min_p); /* p_i >= min_p * p_max */
        size_t keep = 1;
        while (keep < m && (double)s->c[keep].logit >= floor_l) keep++;
        m = keep;
    }
    /* temperature, then the draw */
    double t = (double)o->temperature, tot = 0.0;
    for (size_t i = 0; i < m; i++) tot += exp(((double)s->c[i].logit - maxl) / t);
    double r = (double)(splitmix64(&s->rng) >> 11) * (1.0 / 9007199254740992.0) * tot, acc = 0.0;
    size_t pick = m - 1;
    for (size_t i = 0; i < m; i++) {
        acc += exp(((double)s->c[i].logit - maxl) / t);
        if (r < acc) {
            pick = i;
            break;
        }
    }
    *token = s->c[pick].id;
    return PXL_OK;
}
