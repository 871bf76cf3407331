/*
 * Pixel-LLM training, in stages (pxl_pllm_train at the end): the corpus
 * text (given by the caller; the CLI fetches it) parsed and split, the
 * trigram baseline, the float model and its trainer, the quantizer and its
 * calibration, the image, the VM check. Everything is deterministic given the seed and
 * independent of the thread count: work is cut into a fixed number of chunks
 * whose partial results are summed in a fixed order.
 */
#include "pllm_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LN2 0.69314718055994530942
#define CHUNK 32u          /* examples per task */
#define HELDOUT_EVERY 20u  /* every 20th chapter is held out */

static const char *k_split_chapters =
    "every 20th chapter (chapters 20, 40, ... in canonical order) held out; of the rest, the last 5% "
    "tunes the trigram discounts";
static const char *k_split_tail = "last 10% of the text held out (fewer than 20 chapters); of the rest, "
                                  "the last 5% tunes the trigram discounts";

/* The options with every zero field replaced by its documented default. */
static pxl_pllm_train_options resolve_options(const pxl_pllm_train_options *in) {
    pxl_pllm_train_options o = *in;
    if (!o.context) o.context = 16;
    if (!o.embed) o.embed = 24;
    if (!o.hidden) o.hidden = 384;
    if (!o.batch) o.batch = 256;
    if (!o.steps) o.steps = 12000;
    if (o.lr == 0) o.lr = 3e-3;
    if (!o.seed) o.seed = 1;
    if (!o.vm_check) o.vm_check = 64;
    if (o.no_vm_check) o.vm_check = 0;
    return o;
}

/* ---- deterministic PRNG ------------------------------------------------------------ */

typedef struct {
    uint64_t s;
} prng;

static uint64_t prng_next(prng *r) { return pxl_splitmix64(&r->s); }

static double prng_unit(prng *r) { return (double)(prng_next(r) >> 11) * 0x1.0p-53; }

static uint64_t prng_below(prng *r, uint64_t n) { return n ? prng_next(r) % n : 0; }

/* ---- corpus ------------------------------------------------------------------------ */

typedef struct {
    uint32_t *cp;       /* code points of the normalised text */
    size_t n, cap;
    size_t *chap;       /* chapter start offsets */
    size_t n_chap, cap_chap;
} corpus;

static int cp_push(pxl_ctx *ctx, corpus *c, uint32_t v) {
    if (c->n == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 1 << 16, bytes;
        if (!pxl_mul_size(nc, sizeof *c->cp, &bytes)) return 0;
        uint32_t *p = pxl_realloc(ctx, c->cp, bytes);
        if (!p) return 0;
        c->cp = p, c->cap = nc;
    }
    c->cp[c->n++] = v;
    return 1;
}

static int chap_push(pxl_ctx *ctx, corpus *c, size_t at) {
    if (c->n_chap == c->cap_chap) {
        size_t nc = c->cap_chap ? c->cap_chap * 2 : 256, bytes;
        if (!pxl_mul_size(nc, sizeof *c->chap, &bytes)) return 0;
        size_t *p = pxl_realloc(ctx, c->chap, bytes);
        if (!p) return 0;
        c->chap = p, c->cap_chap = nc;
    }
    c->chap[c->n_chap++] = at;
    return 1;
}


/* A bible(1) chapter heading: "[1-3 ]Book Name 12" (letters and spaces, then a number). */
static int is_heading(const char *l, size_t n) {
    if (n == 0 || n > 40) return 0;
    if (!((l[0] >= 'A' && l[0] <= 'Z') || (l[0] >= '0' && l[0] <= '9'))) return 0;
    size_t sp = n;
    while (sp > 0 && l[sp - 1] >= '0' && l[sp - 1] <= '9') sp--;
    if (sp == n || sp < 2 || l[sp - 1] != ' ') return 0;
    for (size_t i = 1; i + 1 < sp; i++)
        if (!((l[i] >= 'A' && l[i] <= 'Z') || (l[i] >= 'a' && l[i] <= 'z') || l[i] == ' ')) return 0;
    return 1;
}

static int is_space_cp(uint32_t c) { return c <= 32 || c == 0x85 || c == 0xA0 || c == 0x7F; }

/*
 * bible(1) output -> verses, one per line, whitespace collapsed; chapter
 * headings and verse numbers dropped. A blank line ends a verse (paragraph),
 * so plain text works too: paragraphs become lines.
 */
static pxl_status parse_corpus(pxl_ctx *ctx, const char *text, size_t len, corpus *c) {
    int blank_before = 1, in_verse = 0, pending_space = 0;
    size_t i = 0;
    if (!chap_push(ctx, c, 0)) goto oom;
    while (i < len) {
        size_t e = i;
        while (e < len && text[e] != '\n') e++;
        size_t ln = e - i;
        const char *l = text + i;
        while (ln > 0 && (l[ln - 1] == '\r' || l[ln - 1] == ' ' || l[ln - 1] == '\t')) ln--;
        size_t start = 0;
        while (start < ln && (l[start] == ' ' || l[start] == '\t')) start++;
        if (start == ln) { /* blank */
            if (in_verse && !cp_push(ctx, c, '\n')) goto oom;
            in_verse = 0;
            blank_before = 1;
        } else if (blank_before && start == 0 && is_heading(l, ln)) {
            if (in_verse && !cp_push(ctx, c, '\n')) goto oom;
            in_verse = 0;
            if (c->n > c->chap[c->n_chap - 1] && !chap_push(ctx, c, c->n)) goto oom;
            blank_before = 0;
        } else {
            size_t k = start;
            if (start > 0) { /* "  12 text": a new verse */
                size_t d = start;
                while (d < ln && l[d] >= '0' && l[d] <= '9') d++;
                if (d > start && d < ln && l[d] == ' ') {
                    if (in_verse && !cp_push(ctx, c, '\n')) goto oom;
                    in_verse = 0;
                    k = d + 1;
                }
            }
            pending_space = in_verse;
            while (k < ln) {
                uint32_t cp = pxl_utf8_decode((const unsigned char *)l, ln, &k);
                if (is_space_cp(cp)) {
                    pending_space = in_verse;
                    continue;
                }
                if (pending_space && !cp_push(ctx, c, ' ')) goto oom;
                pending_space = 0;
                if (!cp_push(ctx, c, cp)) goto oom;
                in_verse = 1;
            }
            blank_before = 0;
        }
        i = e + 1;
    }
    if (in_verse && !cp_push(ctx, c, '\n')) goto oom;
    if (c->n_chap > 1 && c->chap[c->n_chap - 1] == c->n) c->n_chap--;
    return PXL_OK;
oom:
    return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pixel-llm: out of memory reading the corpus");
}

/* ---- vocabulary and id streams ---------------------------------------------------- */

typedef struct {
    uint32_t cp;
    uint64_t count;
} cp_count;

static int cmp_count(const void *a, const void *b) {
    const cp_count *x = a, *y = b;
    if (x->count != y->count) return x->count < y->count ? 1 : -1;
    return (x->cp > y->cp) - (x->cp < y->cp);
}

static int cmp_cp(const void *a, const void *b) {
    const cp_count *x = a, *y = b;
    return (x->cp > y->cp) - (x->cp < y->cp);
}

typedef struct {
    uint32_t V;
    uint32_t cp[PLLM_MAX_VOCAB]; /* id -> code point; id 0 = unknown (U+FFFD) */
    uint8_t ascii[128];         /* code point -> id for ASCII */
    uint32_t pad;
} vocab_t;

static uint8_t vocab_id(const vocab_t *v, uint32_t cp) {
    if (cp < 128) return v->ascii[cp];
    for (uint32_t i = 1; i < v->V; i++)
        if (v->cp[i] == cp) return (uint8_t)i;
    return 0;
}

static pxl_status build_vocab(pxl_ctx *ctx, const uint32_t *cp, size_t n, vocab_t *v) {
    size_t cap = 256, m = 0;
    cp_count *t = pxl_calloc(ctx, cap, sizeof *t);
    if (!t) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pixel-llm: out of memory");
    for (uint32_t i = 0; i < 128; i++) t[i].cp = i;
    m = 128;
    for (size_t i = 0; i < n; i++) {
        if (cp[i] < 128) {
            t[cp[i]].count++;
            continue;
        }
        size_t k = 128;
        while (k < m && t[k].cp != cp[i]) k++;
        if (k == m) {
            if (m == 4096) continue; /* far too many symbols: the rest are unknown anyway */
            if (m == cap) {
                cp_count *p = pxl_realloc(ctx, t, 2 * cap * sizeof *t);
                if (!p) {
                    pxl_free(ctx, t);
                    return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pixel-llm: out of memory");
                }
                t = p, cap *= 2;
            }
            t[m].cp = cp[i], t[m].count = 0, m++;
        }
        t[k].count++;
    }
    qsort(t, m, sizeof *t, cmp_count);
    size_t keep = 0;
    while (keep < m && keep < PLLM_MAX_VOCAB - 1 && t[keep].count > 0) keep++;
    qsort(t, keep, sizeof *t, cmp_cp);
    memset(v, 0, sizeof *v);
    v->cp[0] = 0xFFFD;
    for (size_t i = 0; i < keep; i++) {
        v->cp[i + 1] = t[i].cp;
        if (t[i].cp < 128) v->ascii[t[i].cp] = (uint8_t)(i + 1);
    }
    v->V = (uint32_t)keep + 1;
    pxl_free(ctx, t);
    v->pad = v->ascii['\n'] ? v->ascii['\n'] : v->ascii[' '];
    return PXL_OK;
}

/* ---- Kneser-Ney trigram --------------------------------------------------------- */

typedef struct {
    uint32_t V;
    uint32_t *c3;     /* V^3 counts */
    uint32_t *c2;     /* N(ab.) */
    uint32_t *n3;     /* N1+(ab.) distinct continuations */
    uint32_t *k2;     /* N1+(.bc) */
    uint32_t *k2b;    /* sum_c N1+(.bc) */
    uint32_t *k2n;    /* N1+(.b.) with N1+(.bc)>0: distinct c */
    double *p1;       /* unigram continuation probabilities, add-1/2 smoothed */
} kn_t;

static void kn_free(pxl_ctx *ctx, kn_t *k) {
    pxl_free(ctx, k->c3), pxl_free(ctx, k->c2), pxl_free(ctx, k->n3), pxl_free(ctx, k->k2);
    pxl_free(ctx, k->k2b), pxl_free(ctx, k->k2n), pxl_free(ctx, k->p1);
    memset(k, 0, sizeof *k);
}

static pxl_status kn_fit(pxl_ctx *ctx, kn_t *k, uint32_t V, const uint8_t *s, size_t n, uint8_t pad) {
    size_t V2 = (size_t)V * V, V3 = V2 * V;
    k->V = V;
    k->c3 = pxl_calloc(ctx, V3, 4);
    k->c2 = pxl_calloc(ctx, V2, 4);
    k->n3 = pxl_calloc(ctx, V2, 4);
    k->k2 = pxl_calloc(ctx, V2, 4);
    k->k2b = pxl_calloc(ctx, V, 4);
    k->k2n = pxl_calloc(ctx, V, 4);
    k->p1 = pxl_calloc(ctx, V, sizeof(double));
    if (!k->c3 || !k->c2 || !k->n3 || !k->k2 || !k->k2b || !k->k2n || !k->p1) {
        kn_free(ctx, k);
        return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pixel-llm: out of memory (trigram)");
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t a = i >= 2 ? s[i - 2] : pad, b = i >= 1 ? s[i - 1] : pad, c = s[i];
        k->c3[((size_t)a * V + b) * V + c]++;
    }
    uint64_t cont_total = 0;
    uint32_t *k1 = pxl_calloc(ctx, V, 4);
    if (!k1) {
        kn_free(ctx, k);
        return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pixel-llm: out of memory (trigram)");
    }
    for (uint32_t a = 0; a < V; a++)
        for (uint32_t b = 0; b < V; b++)
            for (uint32_t c = 0; c < V; c++) {
                uint32_t x = k->c3[((size_t)a * V + b) * V + c];
                if (!x) continue;
                k->c2[a * V + b] += x;
                k->n3[a * V + b]++;
                if (k->k2[b * V + c]++ == 0) k->k2n[b]++, k1[c]++, cont_total++;
                k->k2b[b]++;
            }
    for (uint32_t c = 0; c < V; c++) k->p1[c] = (k1[c] + 0.5) / ((double)cont_total + 0.5 * V);
    pxl_free(ctx, k1);
    return PXL_OK;
}

static double kn_prob(const kn_t *k, uint32_t a, uint32_t b, uint32_t c, double d2, double d3) {
    const uint32_t V = k->V;
    double p = k->p1[c];
    uint32_t nb = k->k2b[b];
    if (nb) {
        double x = k->k2[b * V + c];
        p = (x > d2 ? x - d2 : 0) / nb + d2 * k->k2n[b] / nb * p;
    }
    uint32_t nab = k->c2[a * V + b];
    if (nab) {
        double x = k->c3[((size_t)a * V + b) * V + c];
        p = (x > d3 ? x - d3 : 0) / nab + d3 * k->n3[a * V + b] / nab * p;
    }
    return p;
}

static double kn_bpc(const kn_t *k, const uint8_t *s, size_t n, uint8_t pad, double d2, double d3) {
    double bits = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t a = i >= 2 ? s[i - 2] : pad, b = i >= 1 ? s[i - 1] : pad;
        bits -= log2(kn_prob(k, a, b, s[i], d2, d3));
    }
    return n ? bits / (double)n : 0;
}

/* ---- float model --------------------------------------------------------------- */

typedef struct {
    uint32_t V, C, D, H, K;
    size_t oE, oW1, ob1, oW2, ob2, n; /* offsets into the parameter vector */
} layout;

static void make_layout(layout *L, uint32_t V, uint32_t C, uint32_t D, uint32_t H) {
    L->V = V, L->C = C, L->D = D, L->H = H, L->K = C * D;
    L->oE = 0;
    L->oW1 = L->oE + (size_t)V * D;       /* W1T: K x H */
    L->ob1 = L->oW1 + (size_t)L->K * H;
    L->oW2 = L->ob1 + H;                  /* W2T: H x V */
    L->ob2 = L->oW2 + (size_t)H * V;
    L->n = L->ob2 + V;
}

#if defined(__GNUC__)
#define PLLM_INLINE static inline __attribute__((always_inline))
#else
#define PLLM_INLINE static inline
#endif

PLLM_INLINE float dot(const float *a, const float *b, uint32_t n) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    uint32_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (uint32_t u = 0; u < 8; u++) acc[u] += a[i + u] * b[i + u];
    float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

PLLM_INLINE void axpy(float *y, float a, const float *x, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) y[i] += a * x[i];
}

/* per-task work space */
typedef struct {
    float *x, *pre, *h, *lg, *dh, *dx; /* CHUNK x K, H, H, V, H, K */
    float *grad;                        /* L.n (training only) */
    double loss;
} work;

typedef struct {
    const layout *L;
    const float *P;
    const uint8_t *s; /* id stream */
    size_t s_n;
    uint8_t pad;
    const size_t *pos; /* positions to predict */
    size_t n_pos;
    work *w;
    int train;
    float inv_b;
    int no_avx; /* the context's tuning option pllm_no_avx=1 */
} job;

PLLM_INLINE void gather_ctx(const layout *L, const float *P, const uint8_t *s, size_t p, uint8_t pad, float *x) {
    for (uint32_t c = 0; c < L->C; c++) {
        size_t back = L->C - c;
        uint8_t id = p >= back ? s[p - back] : pad;
        memcpy(x + (size_t)c * L->D, P + L->oE + (size_t)id * L->D, L->D * sizeof(float));
    }
}

/* Forward (and backward when training) for examples pos[i0 .. i0+nb). */
PLLM_INLINE double run_chunk_body(const job *J, work *w, size_t i0, uint32_t nb) {
    const layout *L = J->L;
    const float *P = J->P;
    const uint32_t K = L->K, H = L->H, V = L->V;
    const float *W1 = P + L->oW1, *b1 = P + L->ob1, *W2 = P + L->oW2, *b2 = P + L->ob2;
    for (uint32_t b = 0; b < nb; b++) {
        gather_ctx(L, P, J->s, J->pos[i0 + b], J->pad, w->x + (size_t)b * K);
        memcpy(w->pre + (size_t)b * H, b1, H * sizeof(float));
        memcpy(w->lg + (size_t)b * V, b2, V * sizeof(float));
    }
    for (uint32_t k = 0; k < K; k++)
        for (uint32_t b = 0; b < nb; b++) axpy(w->pre + (size_t)b * H, w->x[(size_t)b * K + k], W1 + (size_t)k * H, H);
    for (size_t i = 0; i < (size_t)nb * H; i++) w->h[i] = tanhf(w->pre[i]);
    for (uint32_t j = 0; j < H; j++)
        for (uint32_t b = 0; b < nb; b++) axpy(w->lg + (size_t)b * V, w->h[(size_t)b * H + j], W2 + (size_t)j * V, V);
    double loss = 0;
    for (uint32_t b = 0; b < nb; b++) {
        float *lg = w->lg + (size_t)b * V;
        uint8_t tgt = J->s[J->pos[i0 + b]];
        float mx = lg[0];
        for (uint32_t v = 1; v < V; v++) mx = lg[v] > mx ? lg[v] : mx;
        double z = 0;
        for (uint32_t v = 0; v < V; v++) z += exp((double)(lg[v] - mx));
        loss += log(z) - (double)(lg[tgt] - mx);
        if (J->train) {
            for (uint32_t v = 0; v < V; v++)
                lg[v] = (float)(exp((double)(lg[v] - mx)) / z) * J->inv_b;
            lg[tgt] -= J->inv_b;
        }
    }
    if (!J->train) return loss;
    float *g = w->grad;
    float *gW1 = g + L->oW1, *gb1 = g + L->ob1, *gW2 = g + L->oW2, *gb2 = g + L->ob2, *gE = g + L->oE;
    for (uint32_t j = 0; j < H; j++)
        for (uint32_t b = 0; b < nb; b++) axpy(gW2 + (size_t)j * V, w->h[(size_t)b * H + j], w->lg + (size_t)b * V, V);
    for (uint32_t b = 0; b < nb; b++) {
        axpy(gb2, 1.0f, w->lg + (size_t)b * V, V);
        float *dh = w->dh + (size_t)b * H;
        const float *h = w->h + (size_t)b * H;
        for (uint32_t j = 0; j < H; j++) dh[j] = dot(w->lg + (size_t)b * V, W2 + (size_t)j * V, V) * (1.0f - h[j] * h[j]);
        axpy(gb1, 1.0f, dh, H);
    }
    for (uint32_t k = 0; k < K; k++) {
        for (uint32_t b = 0; b < nb; b++) {
            axpy(gW1 + (size_t)k * H, w->x[(size_t)b * K + k], w->dh + (size_t)b * H, H);
            w->dx[(size_t)b * K + k] = dot(w->dh + (size_t)b * H, W1 + (size_t)k * H, H);
        }
    }
    for (uint32_t b = 0; b < nb; b++) {
        size_t p = J->pos[i0 + b];
        for (uint32_t c = 0; c < L->C; c++) {
            size_t back = L->C - c;
            uint8_t id = p >= back ? J->s[p - back] : J->pad;
            axpy(gE + (size_t)id * L->D, 1.0f, w->dx + (size_t)b * K + (size_t)c * L->D, L->D);
        }
    }
    return loss;
}

/*
 * The same code compiled for AVX where the CPU has it: 8-wide instead of 4-wide
 * lanes. Floating-point contraction is off in ISO C mode and every lane does the
 * same operations in the same order, so both versions give the same bits.
 */
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
__attribute__((target("avx"))) static double run_chunk_avx(const job *J, work *w, size_t i0, uint32_t nb) {
    return run_chunk_body(J, w, i0, nb);
}
static double run_chunk_base(const job *J, work *w, size_t i0, uint32_t nb) {
    return run_chunk_body(J, w, i0, nb);
}
static double run_chunk(const job *J, work *w, size_t i0, uint32_t nb) {
    /* decided per call (cheap): no cached global state, no race between threads */
    int have_avx = !J->no_avx && __builtin_cpu_supports("avx");
    return have_avx ? run_chunk_avx(J, w, i0, nb) : run_chunk_base(J, w, i0, nb);
}
#else
static double run_chunk(const job *J, work *w, size_t i0, uint32_t nb) {
    return run_chunk_body(J, w, i0, nb);
}
#endif

static void train_task(void *arg, size_t t) {
    const job *J = arg;
    work *w = &J->w[t];
    memset(w->grad, 0, J->L->n * sizeof(float));
    size_t i0 = t * CHUNK;
    uint32_t nb = (uint32_t)(J->n_pos - i0 < CHUNK ? J->n_pos - i0 : CHUNK);
    w->loss = run_chunk(J, w, i0, nb);
}

typedef struct {
    pxl_ctx *ctx;
    layout L;
    float *P, *m, *v;
    work *w;
    size_t n_work;
} model;

static void work_free(pxl_ctx *ctx, work *w) {
    pxl_free(ctx, w->x), pxl_free(ctx, w->pre), pxl_free(ctx, w->h), pxl_free(ctx, w->lg);
    pxl_free(ctx, w->dh), pxl_free(ctx, w->dx), pxl_free(ctx, w->grad);
}

static int work_alloc(pxl_ctx *ctx, const layout *L, work *w, int train) {
    memset(w, 0, sizeof *w);
    w->x = pxl_calloc(ctx, (size_t)CHUNK * L->K, sizeof(float));
    w->pre = pxl_calloc(ctx, (size_t)CHUNK * L->H, sizeof(float));
    w->h = pxl_calloc(ctx, (size_t)CHUNK * L->H, sizeof(float));
    w->lg = pxl_calloc(ctx, (size_t)CHUNK * L->V, sizeof(float));
    w->dh = pxl_calloc(ctx, (size_t)CHUNK * L->H, sizeof(float));
    w->dx = pxl_calloc(ctx, (size_t)CHUNK * L->K, sizeof(float));
    w->grad = train ? pxl_calloc(ctx, L->n, sizeof(float)) : NULL;
    return w->x && w->pre && w->h && w->lg && w->dh && w->dx && (!train || w->grad);
}

/* Float held-out evaluation: positions split into fixed chunks, summed in order. */
typedef struct {
    job j;
    double *loss; /* per chunk */
    size_t n_chunks;
    size_t n_work;
} feval;

static void feval_task(void *arg, size_t t) {
    feval *F = arg;
    /* each task t handles chunks t, t + n_work, ... with its own work space */
    for (size_t c = t; c < F->n_chunks; c += F->n_work) {
        size_t i0 = c * CHUNK;
        uint32_t nb = (uint32_t)(F->j.n_pos - i0 < CHUNK ? F->j.n_pos - i0 : CHUNK);
        F->loss[c] = run_chunk(&F->j, &F->j.w[t], i0, nb);
    }
}

static pxl_status eval_float(pxl_ctx *ctx, model *M, const uint8_t *s, size_t n, const size_t *pos,
                             size_t n_pos, uint8_t pad, double *bpc) {
    feval F;
    memset(&F, 0, sizeof F);
    F.n_chunks = (n_pos + CHUNK - 1) / CHUNK;
    F.loss = pxl_calloc(ctx, F.n_chunks ? F.n_chunks : 1, sizeof(double));
    if (!F.loss) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pixel-llm: out of memory");
    F.n_work = M->n_work;
    F.j = (job){&M->L, M->P, s, n, pad, pos, n_pos, M->w, 0, 0, pxl_ctx_tuning(ctx)->pllm_no_avx};
    pxl_parallel_for(ctx, F.n_work, feval_task, &F);
    double tot = 0;
    for (size_t c = 0; c < F.n_chunks; c++) tot += F.loss[c];
    pxl_free(ctx, F.loss);
    *bpc = n_pos ? tot / (double)n_pos / LN2 : 0;
    return PXL_OK;
}

/* Reduction of the per-chunk gradients and the Adam step, over parameter slices. */
typedef struct {
    model *M;
    size_t n_grads;
    float lr, b1t, b2t; /* bias corrections 1 - beta^t */
    size_t n_slices;
} adam_job;

static void adam_task(void *arg, size_t t) {
    adam_job *A = arg;
    model *M = A->M;
    size_t n = M->L.n, per = (n + A->n_slices - 1) / A->n_slices;
    size_t a = t * per, b = a + per < n ? a + per : n;
    const float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
    for (size_t i = a; i < b; i++) {
        float g = 0;
        for (size_t k = 0; k < A->n_grads; k++) g += M->w[k].grad[i];
        M->m[i] = beta1 * M->m[i] + (1 - beta1) * g;
        M->v[i] = beta2 * M->v[i] + (1 - beta2) * g * g;
        float mh = M->m[i] / A->b1t, vh = M->v[i] / A->b2t;
        M->P[i] -= A->lr * mh / (sqrtf(vh) + eps);
    }
}

/* ---- quantization ---------------------------------------------------------------- */

typedef struct {
    double ce, cw1, cw2, range; /* clip fractions (of absmax) and pre-activation range */
} qparams;

static float absmax(const float *p, size_t n) {
    float m = 0;
    for (size_t i = 0; i < n; i++) m = fabsf(p[i]) > m ? fabsf(p[i]) : m;
    return m;
}

static int8_t q8(double x) {
    double r = floor(x + 0.5);
    return (int8_t)(r > 127 ? 127 : r < -127 ? -127 : r);
}

static int32_t q32(double x) {
    double r = floor(x + 0.5);
    return (int32_t)(r > 2147483647.0 ? 2147483647.0 : r < -2147483647.0 ? -2147483647.0 : r);
}

/* q's arrays must be allocated (V*D, H*K, H, V*H, V). */
static void quantize(const layout *L, const float *P, const qparams *qp, pllm_qmodel *q) {
    const uint32_t V = L->V, D = L->D, H = L->H, K = L->K;
    q->V = V, q->C = L->C, q->D = D, q->H = H;
    double se = qp->ce * (double)absmax(P + L->oE, (size_t)V * D) / 127.0;
    double sw1 = qp->cw1 * (double)absmax(P + L->oW1, (size_t)K * H) / 127.0;
    double sw2 = qp->cw2 * (double)absmax(P + L->oW2, (size_t)H * V) / 127.0;
    if (se <= 0) se = 1;
    if (sw1 <= 0) sw1 = 1;
    if (sw2 <= 0) sw2 = 1;
    double spre = qp->range / 127.0, sh = 1.0 / 127.0;
    for (size_t i = 0; i < (size_t)V * D; i++) q->E[i] = q8((double)P[L->oE + i] / se);
    for (uint32_t j = 0; j < H; j++)
        for (uint32_t k = 0; k < K; k++) q->W1[(size_t)j * K + k] = q8((double)P[L->oW1 + (size_t)k * H + j] / sw1);
    for (uint32_t j = 0; j < H; j++) q->b1[j] = q32((double)P[L->ob1 + j] / (se * sw1));
    pllm_fixed_point(se * sw1 / spre, 62, &q->M1, &q->s1);
    for (int i = 0; i < 256; i++) q->lut[i] = q8(127.0 * tanh((i - 128) * spre));
    for (uint32_t v = 0; v < V; v++)
        for (uint32_t j = 0; j < H; j++) q->W2[(size_t)v * H + j] = q8((double)P[L->oW2 + (size_t)j * V + v] / sw2);
    for (uint32_t v = 0; v < V; v++) q->b2[v] = q32((double)P[L->ob2 + v] / (sh * sw2));
    uint8_t sh8;
    pllm_fixed_point(sh * sw2, 62, &q->scale_mant, &sh8);
    q->scale_shift = sh8;
}

/* int8 evaluation over positions, parallel in fixed chunks */
typedef struct {
    const pllm_qmodel *q;
    const uint8_t *s;
    uint8_t pad;
    const size_t *pos;
    size_t n_pos, n_chunks, n_work;
    double *loss;
    uint8_t **scratch;
    int32_t **logits;
    double scale;
} qeval;

static void qeval_task(void *arg, size_t t) {
    qeval *Q = arg;
    const uint32_t C = Q->q->C, V = Q->q->V;
    uint32_t ids[1024];
    for (size_t c = t; c < Q->n_chunks; c += Q->n_work) {
        double loss = 0;
        size_t a = c * CHUNK, b = a + CHUNK < Q->n_pos ? a + CHUNK : Q->n_pos;
        for (size_t i = a; i < b; i++) {
            size_t p = Q->pos[i];
            for (uint32_t k = 0; k < C; k++) ids[k] = p >= C - k ? Q->s[p - (C - k)] : Q->pad;
            int32_t *lg = Q->logits[t];
            pllm_ref_forward(Q->q, ids, lg, Q->scratch[t]);
            int32_t mx = lg[0];
            for (uint32_t v = 1; v < V; v++) mx = lg[v] > mx ? lg[v] : mx;
            double z = 0;
            for (uint32_t v = 0; v < V; v++) z += exp((double)(lg[v] - mx) * Q->scale);
            loss += log(z) - (double)(lg[Q->s[p]] - mx) * Q->scale;
        }
        Q->loss[c] = loss;
    }
}

static pxl_status eval_int8(pxl_ctx *ctx, const pllm_qmodel *q, const uint8_t *s, const size_t *pos,
                            size_t n_pos, uint8_t pad, double *bpc) {
    qeval Q;
    memset(&Q, 0, sizeof Q);
    Q.q = q, Q.s = s, Q.pad = pad, Q.pos = pos, Q.n_pos = n_pos;
    Q.n_chunks = (n_pos + CHUNK - 1) / CHUNK;
    Q.n_work = (size_t)pxl_ctx_threads(ctx);
    Q.scale = ldexp((double)q->scale_mant, -q->scale_shift);
    Q.loss = pxl_calloc(ctx, Q.n_chunks + 1, sizeof(double));
    Q.scratch = pxl_calloc(ctx, Q.n_work, sizeof *Q.scratch);
    Q.logits = pxl_calloc(ctx, Q.n_work, sizeof *Q.logits);
    int ok = Q.loss && Q.scratch && Q.logits && q->C <= 1024;
    for (size_t t = 0; ok && t < Q.n_work; t++) {
        Q.scratch[t] = pxl_alloc(ctx, pllm_ref_scratch_bytes(q));
        Q.logits[t] = pxl_calloc(ctx, q->V, sizeof(int32_t));
        ok = Q.scratch[t] && Q.logits[t];
    }
    if (ok) pxl_parallel_for(ctx, Q.n_work, qeval_task, &Q);
    double tot = 0;
    for (size_t c = 0; ok && c < Q.n_chunks; c++) tot += Q.loss[c];
    for (size_t t = 0; Q.scratch && Q.logits && t < Q.n_work; t++) {
        pxl_free(ctx, Q.scratch[t]);
        pxl_free(ctx, Q.logits[t]);
    }
    pxl_free(ctx, Q.scratch), pxl_free(ctx, Q.logits), pxl_free(ctx, Q.loss);
    if (!ok) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pixel-llm: out of memory");
    *bpc = n_pos ? tot / (double)n_pos / LN2 : 0;
    return PXL_OK;
}

/* ---- the whole pipeline, stage by stage ------------------------------------------- */

typedef struct {
    pxl_ctx *ctx;
    const pxl_pllm_train_options *o; /* defaults resolved */
    pxl_pllm_train_report *rep;
    double t_start;
    corpus cor;
    vocab_t voc;
    uint8_t pad;                     /* id that fills the context before the first character */
    uint8_t *train, *held;           /* id streams */
    size_t n_train, n_held;
    size_t *pos_held, *pos_cal, *batch;
    kn_t kn;
    model M;
    prng r;                          /* initialisation, then the batches */
    pllm_qmodel q;
    pxl_image *img;
} state;

static void state_free(state *S) {
    pxl_ctx *ctx = S->ctx;
    pxl_free(ctx, S->cor.cp), pxl_free(ctx, S->cor.chap);
    pxl_free(ctx, S->train), pxl_free(ctx, S->held);
    pxl_free(ctx, S->pos_held), pxl_free(ctx, S->pos_cal), pxl_free(ctx, S->batch);
    kn_free(ctx, &S->kn);
    pxl_free(ctx, S->M.P), pxl_free(ctx, S->M.m), pxl_free(ctx, S->M.v);
    if (S->M.w)
        for (size_t i = 0; i < S->M.n_work; i++) work_free(ctx, &S->M.w[i]);
    pxl_free(ctx, S->M.w);
    pxl_free(ctx, S->q.E), pxl_free(ctx, S->q.W1), pxl_free(ctx, S->q.b1), pxl_free(ctx, S->q.W2),
        pxl_free(ctx, S->q.b2);
    pxl_image_free(S->img);
}

static pxl_status oom(state *S) { return pxl_fail(S->ctx, PXL_ERR_OUT_OF_MEMORY, "pixel-llm: out of memory"); }

static double normal(prng *r) {
    double u = prng_unit(r), v = prng_unit(r);
    return sqrt(-2.0 * log(u + 1e-300)) * cos(6.283185307179586 * v);
}

#define NOTE(S, ...)                                                                               \
    do {                                                                                           \
        if ((S)->o->verbose) {                                                                     \
            fprintf(stderr, "pixel-llm: " __VA_ARGS__);                                            \
            fflush(stderr);                                                                        \
        }                                                                                          \
    } while (0)

static pxl_status check_options(pxl_ctx *ctx, const pxl_pllm_train_options *o) {
    if (!o->corpus)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pixel-llm: no corpus (pxl_pllm_train_options.corpus is NULL)");
    if (o->context > 256 || o->embed > 256 || o->hidden > 4096 || o->context * o->embed > 65535 ||
        o->batch > 65536 || !(o->lr > 0 && o->lr < 1))
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG,
                        "pixel-llm: options out of range (context %u, embed %u, hidden %u, batch %u, "
                        "steps %llu, lr %g)",
                        o->context, o->embed, o->hidden, o->batch, (unsigned long long)o->steps, o->lr);
    return PXL_OK;
}

/*
 * Stage 1: the corpus text -> code points -> train / held-out split (whole
 * chapters where there are enough) -> vocabulary (from the training part)
 * -> id streams.
 */
static pxl_status stage_corpus(state *S) {
    pxl_ctx *ctx = S->ctx;
    pxl_pllm_train_report *rep = S->rep;
    pxl_status s = parse_corpus(ctx, S->o->corpus, S->o->corpus_len, &S->cor);
    if (s != PXL_OK) return s;
    corpus *cor = &S->cor;
    if (cor->n < 200)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pixel-llm: corpus too small (%zu characters)", cor->n);
    S->train = pxl_alloc(ctx, cor->n);
    S->held = pxl_alloc(ctx, cor->n);
    size_t bytes;
    if (!S->train || !S->held || !pxl_mul_size(cor->n, sizeof(uint32_t), &bytes)) return oom(S);
    /* reorder the code points in place: train first, then held-out */
    uint32_t *tmp = pxl_alloc(ctx, bytes);
    if (!tmp) return oom(S);
    size_t nt = 0, nh = 0;
    if (cor->n_chap >= HELDOUT_EVERY) {
        rep->split = k_split_chapters;
        for (int pass = 0; pass < 2; pass++)
            for (size_t c = 0; c < cor->n_chap; c++) {
                int is_held = c % HELDOUT_EVERY == HELDOUT_EVERY - 1;
                if (is_held != pass) continue;
                size_t a = cor->chap[c], b = c + 1 < cor->n_chap ? cor->chap[c + 1] : cor->n;
                memcpy(tmp + nt + nh, cor->cp + a, (b - a) * sizeof *tmp);
                if (pass) nh += b - a;
                else nt += b - a;
            }
    } else {
        rep->split = k_split_tail;
        size_t cut = cor->n - cor->n / 10;
        while (cut < cor->n && cor->cp[cut - 1] != '\n') cut++;
        memcpy(tmp, cor->cp, cor->n * sizeof *tmp);
        nt = cut, nh = cor->n - cut;
    }
    memcpy(cor->cp, tmp, cor->n * sizeof *tmp);
    pxl_free(ctx, tmp);
    S->n_train = nt, S->n_held = nh;
    if (S->n_train < 100 || S->n_held < 10)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pixel-llm: corpus too small to split (%zu + %zu)", S->n_train,
                        S->n_held);
    if ((s = build_vocab(ctx, cor->cp, S->n_train, &S->voc)) != PXL_OK) return s;
    for (size_t i = 0; i < S->n_train; i++) S->train[i] = vocab_id(&S->voc, cor->cp[i]);
    for (size_t i = 0; i < S->n_held; i++) S->held[i] = vocab_id(&S->voc, cor->cp[S->n_train + i]);
    S->pad = (uint8_t)S->voc.pad;
    rep->vocab = S->voc.V;
    rep->train_chars = S->n_train;
    rep->heldout_chars = S->n_held;
    rep->seconds_parse = pxl_time_now() - S->t_start;
    NOTE(S, "corpus: %zu chars, %zu chapters; train %zu, held-out %zu, vocab %u (+unknown) [%.1fs]\n", cor->n,
         cor->n_chap, S->n_train, S->n_held, S->voc.V - 1, rep->seconds_parse);
    return PXL_OK;
}

/* Stage 2: the trigram baseline; discounts tuned on the tail of train, then refitted on all of it. */
static pxl_status stage_trigram(state *S) {
    pxl_ctx *ctx = S->ctx;
    pxl_pllm_train_report *rep = S->rep;
    double t0 = pxl_time_now();
    const uint32_t V = S->voc.V;
    size_t n_tune = S->n_train / 20, n_fit = S->n_train - n_tune;
    pxl_status s = kn_fit(ctx, &S->kn, V, S->train, n_fit, S->pad);
    if (s != PXL_OK) return s;
    double best = HUGE_VAL, bd2 = 0.5, bd3 = 0.5;
    for (int i2 = 1; i2 <= 19; i2++)
        for (int i3 = 1; i3 <= 19; i3++) {
            double d2 = i2 * 0.05, d3 = i3 * 0.05;
            double b = kn_bpc(&S->kn, S->train + n_fit, n_tune, S->pad, d2, d3);
            if (b < best) best = b, bd2 = d2, bd3 = d3;
        }
    kn_free(ctx, &S->kn);
    if ((s = kn_fit(ctx, &S->kn, V, S->train, S->n_train, S->pad)) != PXL_OK) return s;
    rep->kn_d2 = bd2, rep->kn_d3 = bd3;
    rep->tune_chars = n_tune;
    rep->bpc_trigram = kn_bpc(&S->kn, S->held, S->n_held, S->pad, bd2, bd3);
    kn_free(ctx, &S->kn);
    rep->seconds_trigram = pxl_time_now() - t0;
    NOTE(S, "trigram (interpolated Kneser-Ney, D2=%.2f D3=%.2f tuned on %zu chars): held-out %.4f bpc [%.1fs]\n",
         bd2, bd3, n_tune, rep->bpc_trigram, rep->seconds_trigram);
    return PXL_OK;
}

/* Stage 3: the float model's memory and initial parameters (output bias: log unigram frequencies). */
static pxl_status stage_init_model(state *S) {
    pxl_ctx *ctx = S->ctx;
    const pxl_pllm_train_options *o = S->o;
    model *M = &S->M;
    const uint32_t V = S->voc.V;
    M->ctx = ctx;
    make_layout(&M->L, V, o->context, o->embed, o->hidden);
    const layout *L = &M->L;
    S->rep->context = L->C, S->rep->embed = L->D, S->rep->hidden = L->H, S->rep->params = L->n;
    size_t n_chunks_batch = (o->batch + CHUNK - 1) / CHUNK;
    M->n_work = n_chunks_batch > (size_t)pxl_ctx_threads(ctx) ? n_chunks_batch : (size_t)pxl_ctx_threads(ctx);
    M->P = pxl_calloc(ctx, L->n, sizeof(float));
    M->m = pxl_calloc(ctx, L->n, sizeof(float));
    M->v = pxl_calloc(ctx, L->n, sizeof(float));
    M->w = pxl_calloc(ctx, M->n_work, sizeof *M->w);
    S->batch = pxl_calloc(ctx, o->batch, sizeof(size_t));
    if (!M->P || !M->m || !M->v || !M->w || !S->batch) return oom(S);
    for (size_t i = 0; i < M->n_work; i++)
        if (!work_alloc(ctx, L, &M->w[i], i < n_chunks_batch)) return oom(S);
    S->r.s = o->seed * 0x2545F4914F6CDD1Dull + 12345;
    prng *r = &S->r;
    const double sx = 0.3;
    for (size_t i = 0; i < (size_t)V * L->D; i++) M->P[L->oE + i] = (float)(sx * normal(r));
    double bw1 = sqrt(3.0) / (sqrt((double)L->K) * sx), bw2 = 0.5 * sqrt(3.0 / L->H);
    for (size_t i = 0; i < (size_t)L->K * L->H; i++) M->P[L->oW1 + i] = (float)(bw1 * (2 * prng_unit(r) - 1));
    for (size_t i = 0; i < (size_t)L->H * V; i++) M->P[L->oW2 + i] = (float)(bw2 * (2 * prng_unit(r) - 1));
    double *cnt = pxl_calloc(ctx, V, sizeof(double));
    if (!cnt) return oom(S);
    for (size_t i = 0; i < S->n_train; i++) cnt[S->train[i]] += 1;
    for (uint32_t v = 0; v < V; v++) M->P[L->ob2 + v] = (float)log((cnt[v] + 1) / ((double)S->n_train + V));
    pxl_free(ctx, cnt);
    return PXL_OK;
}

/* Stage 4: Adam with linear warm-up and linear decay over random batches, on the CPU threads. */
static pxl_status stage_train(state *S) {
    pxl_ctx *ctx = S->ctx;
    const pxl_pllm_train_options *o = S->o;
    pxl_pllm_train_report *rep = S->rep;
    model *M = &S->M;
    const layout *L = &M->L;
    size_t n_chunks_batch = (o->batch + CHUNK - 1) / CHUNK;
    double t0 = pxl_time_now();
    pxl_progress *prog = pxl_progress_begin(ctx, "pixel-llm train", o->steps);
    job J = {L, M->P, S->train, S->n_train, S->pad, S->batch, o->batch, M->w, 1, 1.0f / (float)o->batch,
             pxl_ctx_tuning(ctx)->pllm_no_avx};
    adam_job A = {M, n_chunks_batch, 0, 0, 0, 64};
    double tail_loss = 0;
    uint64_t tail_n = 0, tail_from = o->steps - o->steps / 20, warm = o->steps / 50 + 1;
    double win_loss = 0;
    uint64_t win_n = 0, next_note = o->steps / 10;
    for (uint64_t step = 0; step < o->steps; step++) {
        for (uint32_t b = 0; b < o->batch; b++) S->batch[b] = (size_t)prng_below(&S->r, S->n_train);
        pxl_parallel_for(ctx, n_chunks_batch, train_task, &J);
        double loss = 0;
        for (size_t k = 0; k < n_chunks_batch; k++) loss += M->w[k].loss;
        loss /= o->batch;
        double lr = step < warm ? o->lr * (double)(step + 1) / (double)warm
                                : o->lr * (double)(o->steps - step) / (double)(o->steps - warm + 1);
        A.lr = (float)lr;
        A.b1t = (float)(1.0 - pow(0.9, (double)(step + 1)));
        A.b2t = (float)(1.0 - pow(0.999, (double)(step + 1)));
        pxl_parallel_for(ctx, A.n_slices, adam_task, &A);
        if (step >= tail_from) tail_loss += loss, tail_n++;
        win_loss += loss, win_n++;
        pxl_progress_update(prog, step + 1);
        if (o->verbose && !prog && step + 1 >= next_note) {
            fprintf(stderr, "pixel-llm: step %llu/%llu  train %.3f bpc  %.0fs\n", (unsigned long long)(step + 1),
                    (unsigned long long)o->steps, win_loss / (double)win_n / LN2, pxl_time_now() - t0);
            win_loss = 0, win_n = 0;
            next_note += o->steps / 10 ? o->steps / 10 : 1;
        }
    }
    pxl_progress_end(prog);
    rep->steps = o->steps;
    rep->train_loss_bpc = tail_n ? tail_loss / (double)tail_n / LN2 : 0;
    rep->seconds_train = pxl_time_now() - t0;
    NOTE(S, "trained %llu steps x %u in %.1fs (%.0f examples/s), last 5%% of steps %.4f bpc on train batches\n",
         (unsigned long long)o->steps, o->batch, rep->seconds_train,
         (double)o->steps * o->batch / rep->seconds_train, rep->train_loss_bpc);
    return PXL_OK;
}

/*
 * Stage 5: held-out bpc of the float model, then int8: the clip ranges are
 * picked on training positions by a coordinate search, and the held-out bpc
 * of the result measured.
 */
static pxl_status stage_quantize(state *S) {
    pxl_ctx *ctx = S->ctx;
    pxl_pllm_train_report *rep = S->rep;
    const layout *L = &S->M.L;
    const uint32_t V = L->V;
    pxl_status s;
    S->pos_held = pxl_calloc(ctx, S->n_held, sizeof(size_t));
    if (!S->pos_held) return oom(S);
    for (size_t i = 0; i < S->n_held; i++) S->pos_held[i] = i;
    s = eval_float(ctx, &S->M, S->held, S->n_held, S->pos_held, S->n_held, S->pad, &rep->bpc_float);
    if (s != PXL_OK) return s;
    NOTE(S, "float model: held-out %.4f bpc\n", rep->bpc_float);

    pllm_qmodel *q = &S->q;
    q->E = pxl_alloc(ctx, (size_t)V * L->D);
    q->W1 = pxl_alloc(ctx, (size_t)L->H * L->K);
    q->b1 = pxl_calloc(ctx, L->H, sizeof(int32_t));
    q->W2 = pxl_alloc(ctx, (size_t)V * L->H);
    q->b2 = pxl_calloc(ctx, V, sizeof(int32_t));
    size_t n_cal = S->n_train < 16384 ? S->n_train : 16384;
    S->pos_cal = pxl_calloc(ctx, n_cal, sizeof(size_t));
    if (!q->E || !q->W1 || !q->b1 || !q->W2 || !q->b2 || !S->pos_cal) return oom(S);
    prng rc = {S->o->seed ^ 0xC0FFEEull};
    for (size_t i = 0; i < n_cal; i++) S->pos_cal[i] = (size_t)prng_below(&rc, S->n_train);
    qparams best = {1, 1, 1, 4}, cur;
    double best_bpc;
    quantize(L, S->M.P, &best, q);
    if ((s = eval_int8(ctx, q, S->train, S->pos_cal, n_cal, S->pad, &best_bpc)) != PXL_OK) return s;
    static const double ranges[] = {1.5, 2, 2.5, 3, 3.5, 5, 6};
    static const double clips[] = {0.9, 0.8, 0.7, 0.6, 0.5};
    for (int pass = 0; pass < 4; pass++) {
        size_t nc = pass == 0 ? sizeof ranges / sizeof ranges[0] : sizeof clips / sizeof clips[0];
        qparams base = best;
        for (size_t i = 0; i < nc; i++) {
            cur = base;
            if (pass == 0) cur.range = ranges[i];
            else if (pass == 1) cur.cw1 = clips[i];
            else if (pass == 2) cur.cw2 = clips[i];
            else cur.ce = clips[i];
            double b;
            quantize(L, S->M.P, &cur, q);
            if ((s = eval_int8(ctx, q, S->train, S->pos_cal, n_cal, S->pad, &b)) != PXL_OK) return s;
            if (b < best_bpc) best_bpc = b, best = cur;
        }
    }
    quantize(L, S->M.P, &best, q);
    NOTE(S, "quantization: pre-activation range %.1f, clip E %.2f W1 %.2f W2 %.2f (calibration %.4f bpc)\n",
         best.range, best.ce, best.cw1, best.cw2, best_bpc);
    if ((s = eval_int8(ctx, q, S->held, S->pos_held, S->n_held, S->pad, &rep->bpc_int8)) != PXL_OK) return s;
    NOTE(S, "int8 model: held-out %.4f bpc\n", rep->bpc_int8);
    return PXL_OK;
}

/* Stage 6: the pxVM image, with the measurements in its metadata. */
static pxl_status stage_image(state *S) {
    const pxl_pllm_train_options *o = S->o;
    pxl_pllm_train_report *rep = S->rep;
    int32_t meta[PLLM_META_N];
    memset(meta, 0, sizeof meta);
    meta[PLLM_M_UNK_ID] = 0;
    meta[PLLM_M_PAD_ID] = S->pad;
    meta[PLLM_M_BPC_INT8_U] = (int32_t)floor(rep->bpc_int8 * 1e6 + 0.5);
    meta[PLLM_M_BPC_FLOAT_U] = (int32_t)floor(rep->bpc_float * 1e6 + 0.5);
    meta[PLLM_M_BPC_TRIGRAM_U] = (int32_t)floor(rep->bpc_trigram * 1e6 + 0.5);
    meta[PLLM_M_TRAIN_CHARS] = (int32_t)(S->n_train > INT32_MAX ? INT32_MAX : S->n_train);
    meta[PLLM_M_HELDOUT_CHARS] = (int32_t)(S->n_held > INT32_MAX ? INT32_MAX : S->n_held);
    meta[PLLM_M_SEED_LO] = (int32_t)(o->seed & 0x7FFFFFFF);
    meta[PLLM_M_STEPS] = (int32_t)(o->steps > INT32_MAX ? INT32_MAX : o->steps);
    pxl_status s = pllm_build_image(S->ctx, &S->q, S->voc.cp, meta, &S->img);
    if (s != PXL_OK) return s;
    rep->image_w = S->img->w, rep->image_h = S->img->h;
    return PXL_OK;
}

/*
 * Stage 7: the VM must give the reference's logits on held-out contexts:
 * the CPU interpreter always, and the GPU interpreter too on a GPU context.
 */
static pxl_status stage_vm_check(state *S) {
    pxl_ctx *ctx = S->ctx;
    const uint32_t V = S->voc.V, C = S->M.L.C;
    pxl_image *copy;
    pxl_status s = pxl_image_clone(ctx, S->img, &copy);
    if (s != PXL_OK) return s;
    pxl_pllm *m;
    if ((s = pxl_pllm_open(ctx, copy, &m)) != PXL_OK) return s;
    int gpu = pxl_ctx_backend(ctx) == PXL_BACKEND_GPU;
    uint32_t *ids = pxl_calloc(ctx, C, sizeof(uint32_t));
    int32_t *a = pxl_calloc(ctx, V, sizeof(int32_t)), *b = pxl_calloc(ctx, V, sizeof(int32_t));
    if (!ids || !a || !b) s = oom(S);
    prng rv = {S->o->seed ^ 0xABCDEFull};
    for (uint32_t i = 0; i < S->o->vm_check && s == PXL_OK; i++) {
        size_t p = (size_t)prng_below(&rv, S->n_held);
        for (uint32_t k = 0; k < C; k++) ids[k] = p >= C - k ? S->held[p - (C - k)] : S->pad;
        s = pxl_pllm_logits_ref(m, ids, a);
        for (int backend = 0; backend < 1 + gpu && s == PXL_OK; backend++) {
            s = pxl_pllm_logits_vm(m, ids, backend == 0, b);
            if (s == PXL_OK && memcmp(a, b, V * sizeof *a) != 0)
                s = pxl_fail(ctx, PXL_ERR_FORMAT,
                             "pixel-llm: the %s interpreter's logits differ from the int8 reference at "
                             "held-out position %zu",
                             backend == 0 ? "CPU" : "GPU", p);
            if (s == PXL_OK) {
                if (backend == 0) S->rep->vm_checked++;
                else S->rep->vm_checked_gpu++;
            }
        }
    }
    pxl_free(ctx, ids), pxl_free(ctx, a), pxl_free(ctx, b);
    pxl_pllm_free(m);
    if (s != PXL_OK) return s;
    NOTE(S, "VM check: %u held-out contexts give the C reference's logits in the CPU interpreter%s\n",
         S->rep->vm_checked, gpu ? " and in the GPU interpreter" : "");
    return PXL_OK;
}

pxl_status pxl_pllm_train(pxl_ctx *ctx, const pxl_pllm_train_options *opts, pxl_image **out,
                          pxl_pllm_train_report *report) {
    pxl_pllm_train_report rep_local;
    pxl_pllm_train_report *rep = report ? report : &rep_local;
    memset(rep, 0, sizeof *rep);
    if (!opts) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pixel-llm: no training options (the corpus is required)");
    pxl_pllm_train_options o = resolve_options(opts);
    pxl_status s = check_options(ctx, &o);
    if (s != PXL_OK) return s;
    state S;
    memset(&S, 0, sizeof S);
    S.ctx = ctx;
    S.o = &o;
    S.rep = rep;
    S.t_start = pxl_time_now();
    if ((s = stage_corpus(&S)) == PXL_OK && (s = stage_trigram(&S)) == PXL_OK &&
        (s = stage_init_model(&S)) == PXL_OK && (s = stage_train(&S)) == PXL_OK) {
        double t0 = pxl_time_now();
        if ((s = stage_quantize(&S)) == PXL_OK && (s = stage_image(&S)) == PXL_OK &&
            (!o.vm_check || (s = stage_vm_check(&S)) == PXL_OK)) {
            rep->seconds_quant = pxl_time_now() - t0;
            rep->seconds_total = pxl_time_now() - S.t_start;
            *out = S.img;
            S.img = NULL;
        }
    }
    state_free(&S);
    return s;
}
