/*
 * llama-family models on the ops of pxl/ops.h: loading from a GGUF file
 * (hyperparameters from the metadata, every tensor checked against them) and
 * the forward pass.
 *
 * Shapes (llama2.c style; E = n_embd, Hq/Hkv heads of D, F = n_ff, V = vocab,
 * T = tokens in this pass, C = the cache's capacity):
 *
 *   x = tok_embd[ids]                          [T, E]
 *   per layer:
 *     h = rmsnorm(x) * attn_norm               [T, E]
 *     q = h Wq^T (+ bq)                        [T, Hq*D]  -> rope -> [T, Hq, D]
 *     k = h Wk^T (+ bk)                        [T, Hkv*D] -> rope -> cache_k[n_past : n_past+T]
 *     v = h Wv^T (+ bv)                        [T, Hkv*D] ->         cache_v[n_past : n_past+T]
 *     a = attention(q, cache_k, cache_v)       [T, Hq, D] (causal, grouped-query)
 *     x = x + a Wo^T                           [T, E]
 *     h = rmsnorm(x) * ffn_norm
 *     x = x + (silu(h Wg^T) * (h Wu^T)) Wd^T   [T, F] -> [T, E]
 *   logits = rmsnorm(x) * output_norm . Wout^T [T or 1, V]
 *
 * GGUF stores a weight of N outputs over K inputs with ne = [K, N], which is
 * pxl's [N, K] with trans_b. With an f32 cache, K and V rows go straight into
 * it: RoPE writes k into its cache slice, and the V product writes into its
 * slice. With an f16 cache (kv_type) both are made in f32 scratch rows and
 * pxl_convert rounds them into the cache slices (as llama.cpp's f16 cache
 * does); attention reads the f16 cache directly.
 *
 * On a GPU, one token (decoding) takes layer_token instead: the same
 * formulas in 5 or 6 dispatches a layer, over weights loaded as one matrix
 * per input (Q, K, V; gate, up). The next token's pass is recorded while
 * the GPU runs this one, in a few parts submitted in turn (record_ahead);
 * a pass not recorded ahead is submitted after each layer.
 */
#include "llm_model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- metadata ---------------------------------------------------------------------- */

static pxl_status meta_int(pxl_llm *m, const char *suffix, int required, int64_t def, int64_t *out) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", m->info.arch, suffix);
    int64_t i = pxl_gguf_find_key(m->g, key);
    if (i < 0) {
        if (required) return pxl_fail(m->ctx, PXL_ERR_FORMAT, "model: the metadata has no '%s'", key);
        *out = def;
        return PXL_OK;
    }
    pxl_status s = pxl_gguf_kv_int(m->g, (size_t)i, out);
    if (s != PXL_OK) return s;
    if (*out < 0 || *out > ((int64_t)1 << 31))
        return pxl_fail(m->ctx, PXL_ERR_FORMAT, "model: '%s' = %lld is out of range", key, (long long)*out);
    return PXL_OK;
}

static pxl_status meta_float(pxl_llm *m, const char *suffix, double def, float *out) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", m->info.arch, suffix);
    int64_t i = pxl_gguf_find_key(m->g, key);
    if (i < 0) {
        *out = (float)def;
        return PXL_OK;
    }
    double v;
    pxl_status s = pxl_gguf_kv_float(m->g, (size_t)i, &v);
    if (s != PXL_OK) return s;
    if (!isfinite(v)) return pxl_fail(m->ctx, PXL_ERR_FORMAT, "model: '%s' is not finite", key);
    *out = (float)v;
    return PXL_OK;
}

/* A string value copied into buf ("" when absent). */
static pxl_status meta_string(pxl_llm *m, const char *key, char *buf, size_t cap) {
    buf[0] = 0;
    int64_t i = pxl_gguf_find_key(m->g, key);
    if (i < 0) return PXL_OK;
    const char *s;
    size_t len;
    pxl_status st = pxl_gguf_kv_string(m->g, (size_t)i, &s, &len);
    if (st != PXL_OK) return st;
    if (len >= cap) len = cap - 1;
    memcpy(buf, s, len);
    buf[len] = 0;
    return PXL_OK;
}

/* ---- weights ----------------------------------------------------------------------- */

int pxl_llm_dtype_of(uint32_t ggml_type, pxl_dtype *out) {
    switch (ggml_type) {
    case PXL_GGML_F32: *out = PXL_F32; return 1;
    case PXL_GGML_F16: *out = PXL_F16; return 1;
    case PXL_GGML_Q8_0: *out = PXL_Q8_0; return 1;
    case PXL_GGML_Q4_0: *out = PXL_Q4_0; return 1;
    case PXL_GGML_Q4_K: *out = PXL_Q4_K; return 1;
    case PXL_GGML_Q6_K: *out = PXL_Q6_K; return 1;
    case PXL_GGML_Q5_0: *out = PXL_Q5_0; return 1;
    case PXL_GGML_Q5_K: *out = PXL_Q5_K; return 1;
    case PXL_GGML_Q2_K: *out = PXL_Q2_K; return 1;
    case PXL_GGML_Q3_K: *out = PXL_Q3_K; return 1;
    case PXL_GGML_BF16: *out = PXL_BF16; return 1;
    case PXL_GGML_Q4_1: *out = PXL_Q4_1; return 1;
    case PXL_GGML_Q5_1: *out = PXL_Q5_1; return 1;
    default: return 0;
    }
}

/*
 * Checks the tensor `name` against the GGUF file for a pxl tensor of shape
 * [ne1, ne0] (or [ne0] when ne1 is 0): present (unless optional: then *t is
 * NULL and PXL_OK), exactly that shape, a type pxl runs (F32 only when
 * f32_only), small enough for one binding on a GPU.
 */
static pxl_status weight_check(pxl_llm *m, const char *name, int64_t ne0, int64_t ne1, int f32_only, int optional,
                               const pxl_gguf_tensor **out, pxl_dtype *dt) {
    *out = NULL;
    int64_t i = pxl_gguf_find_tensor(m->g, name);
    if (i < 0) {
        if (optional) return PXL_OK;
        return pxl_fail(m->ctx, PXL_ERR_FORMAT, "model: tensor '%s' is missing", name);
    }
    const pxl_gguf_tensor *t = pxl_gguf_tensor_at(m->g, (size_t)i);
    int nd = ne1 ? 2 : 1;
    int ok = t->ne[0] == ne0 && (nd == 1 ? t->ndim == 1 || (t->ne[1] == 1 && t->ne[2] == 1 && t->ne[3] == 1)
                                         : t->ne[1] == ne1 && t->ne[2] == 1 && t->ne[3] == 1);
    if (!ok)
        return pxl_fail(m->ctx, PXL_ERR_FORMAT,
                        "model: tensor '%s' has shape [%lld, %lld, %lld, %lld]; the metadata says [%lld, %lld]",
                        name, (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2],
                        (long long)t->ne[3], (long long)ne0, (long long)(ne1 ? ne1 : 1));
    if (!pxl_llm_dtype_of(t->type, dt) || (f32_only && *dt != PXL_F32))
        return pxl_fail(m->ctx, PXL_ERR_UNSUPPORTED, "model: tensor '%s' has type %s, which pxl cannot run%s", name,
                        pxl_ggml_type_name(t->type), f32_only ? " here (F32 expected)" : "");
    const pxl_gpu_info *gi = pxl_gpu_get_info(m->ctx);
    if (gi && t->bytes > gi->max_storage_binding_size)
        return pxl_fail(m->ctx, PXL_ERR_UNSUPPORTED,
                        "model: tensor '%s' (%llu bytes) is larger than one storage binding may be on this device "
                        "(%llu bytes); pxl does not split tensors yet (use --backend cpu)",
                        name, (unsigned long long)t->bytes, (unsigned long long)gi->max_storage_binding_size);
    *out = t;
    return PXL_OK;
}

static void weight_loaded(pxl_llm *m, const pxl_gguf_tensor *t) {
    m->info.weight_bytes += t->bytes;
    m->n_loaded++;
    if (m->progress) pxl_progress_update(m->progress, m->n_loaded);
}

/*
 * The tensor `name` (checked by weight_check) as a pxl tensor of shape
 * [ne1, ne0] (or [ne0]). On a CPU context the tensor wraps the mapping; on a
 * GPU it is created and uploaded. *out is NULL for an absent optional tensor.
 */
static pxl_status weight(pxl_llm *m, const char *name, int64_t ne0, int64_t ne1, int f32_only, int optional,
                         pxl_tensor **out) {
    *out = NULL;
    const pxl_gguf_tensor *t;
    pxl_dtype dt;
    pxl_status s = weight_check(m, name, ne0, ne1, f32_only, optional, &t, &dt);
    if (s != PXL_OK || !t) return s;
    int nd = ne1 ? 2 : 1;
    int64_t shape[2] = {ne1 ? ne1 : ne0, ne0};
    int64_t *sh = ne1 ? shape : shape + 1;
    if (pxl_ctx_backend(m->ctx) == PXL_BACKEND_GPU) {
        s = pxl_tensor_create(m->ctx, dt, nd, sh, out);
        if (s == PXL_OK) s = pxl_tensor_write(m->ctx, *out, t->data, (size_t)t->bytes);
    } else if ((uintptr_t)t->data % (dt == PXL_F32 ? 4u : dt == PXL_F16 || dt == PXL_BF16 ? 2u : 1u) == 0) {
        s = pxl_tensor_wrap(m->ctx, dt, nd, sh, t->data, (size_t)t->bytes, out);
    } else { /* a file with general.alignment below the element size: a copy, read aligned */
        s = pxl_tensor_create(m->ctx, dt, nd, sh, out);
        if (s == PXL_OK) s = pxl_tensor_write(m->ctx, *out, t->data, (size_t)t->bytes);
    }
    if (s != PXL_OK) {
        pxl_tensor_free(*out);
        *out = NULL;
        return s;
    }
    weight_loaded(m, t);
    return PXL_OK;
}

/*
 * On a GPU: the n weights `names` of rows[i] x ne0 each (n <= 3), when all
 * are present with one type, uploaded into one matrix [sum rows, ne0]
 * (*combined) with views[i] over its rows. Leaves everything NULL and
 * returns PXL_OK when a weight is absent or the types differ (the caller
 * loads them one by one), or when the matrix would exceed one binding.
 */
static pxl_status weight_rows(pxl_llm *m, const char *const *names, const int64_t *rows, int n, int64_t ne0,
                              pxl_tensor **views, pxl_tensor **combined) {
    *combined = NULL;
    for (int i = 0; i < n; i++) views[i] = NULL;
    const pxl_gguf_tensor *t[3];
    pxl_dtype dt[3];
    int64_t total = 0;
    uint64_t bytes = 0;
    for (int i = 0; i < n; i++) {
        pxl_status s = weight_check(m, names[i], ne0, rows[i], 0, 1, &t[i], &dt[i]);
        if (s != PXL_OK) return s;
        if (!t[i] || dt[i] != dt[0]) return PXL_OK;
        total += rows[i];
        bytes += t[i]->bytes;
    }
    const pxl_gpu_info *gi = pxl_gpu_get_info(m->ctx);
    if (!gi || bytes > gi->max_storage_binding_size) return PXL_OK;
    int64_t shape[2] = {total, ne0};
    pxl_status s = pxl_tensor_create(m->ctx, dt[0], 2, shape, combined);
    size_t off = 0;
    for (int i = 0; i < n && s == PXL_OK; i++) {
        int64_t vs[2] = {rows[i], ne0};
        s = pxl_tensor_view(m->ctx, *combined, 2, vs, off, &views[i]);
        if (s == PXL_OK) s = pxl_tensor_write(m->ctx, views[i], t[i]->data, (size_t)t[i]->bytes);
        if (s == PXL_OK) weight_loaded(m, t[i]);
        off += (size_t)t[i]->bytes;
    }
    if (s != PXL_OK) {
        for (int i = 0; i < n; i++) {
            pxl_tensor_free(views[i]);
            views[i] = NULL;
        }
        pxl_tensor_free(*combined);
        *combined = NULL;
    }
    return s;
}

/* The Q, K and V biases (qwen2's; another model's where it has some) as one
 * row [1, Dq + 2 Dkv] (GPU; zeros for one it lacks), and its views bqk of
 * Q's and K's and bvv of V's: the bias options of a decoded token's products
 * from wqkv, or wqk and wv (layer_token). */
static pxl_status fuse_biases(pxl_llm *m, pxl_llm_layer *L, int64_t Dq, int64_t Dkv) {
    int64_t shape[2] = {1, Dq + 2 * Dkv};
    pxl_status s = pxl_tensor_create(m->ctx, PXL_F32, 2, shape, &L->bqkv);
    if (s == PXL_OK && !(L->bq && L->bk && L->bv)) {
        size_t bytes = (size_t)(Dq + 2 * Dkv) * sizeof(float);
        float *zero = pxl_calloc(m->ctx, 1, bytes);
        s = zero ? pxl_tensor_write(m->ctx, L->bqkv, zero, bytes)
                 : pxl_fail(m->ctx, PXL_ERR_OUT_OF_MEMORY, "out of memory");
        pxl_free(m->ctx, zero);
    }
    const pxl_tensor *b[3] = {L->bq, L->bk, L->bv};
    int64_t at[3] = {0, Dq, Dq + Dkv}, len[3] = {Dq, Dkv, Dkv};
    for (int i = 0; i < 3 && s == PXL_OK; i++) {
        if (!b[i]) continue;
        pxl_tensor *dst;
        int64_t vs[2] = {1, len[i]};
        s = pxl_tensor_view(m->ctx, L->bqkv, 2, vs, (size_t)at[i] * sizeof(float), &dst);
        if (s == PXL_OK) {
            s = pxl_copy(m->ctx, b[i], dst);
            pxl_tensor_free(dst);
        }
    }
    int64_t qk[2] = {1, Dq + Dkv}, v[2] = {1, Dkv};
    if (s == PXL_OK) s = pxl_tensor_view(m->ctx, L->bqkv, 2, qk, 0, &L->bqk);
    if (s == PXL_OK) s = pxl_tensor_view(m->ctx, L->bqkv, 2, v, (size_t)(Dq + Dkv) * sizeof(float), &L->bvv);
    return s;
}

static pxl_status load_weights(pxl_llm *m) {
    const pxl_llm_info *I = &m->info;
    int64_t E = I->n_embd, Dq = I->n_head * I->head_dim, Dkv = I->n_head_kv * I->head_dim, F = I->n_ff;
    pxl_status s = weight(m, "token_embd.weight", E, I->n_vocab, 0, 0, &m->tok_embd);
    if (s == PXL_OK) s = weight(m, "output_norm.weight", E, 0, 1, 0, &m->output_norm);
    if (s == PXL_OK) s = weight(m, "output.weight", E, I->n_vocab, 0, 1, &m->output);
    /* llama3 scaling: per-pair frequency factors, shared by every layer */
    if (s == PXL_OK) s = weight(m, "rope_freqs.weight", I->head_dim / 2, 0, 1, 1, &m->rope_freqs);
    if (s == PXL_OK && m->rope_freqs) { /* RoPE leaves a pair with a bad factor unturned: refuse instead */
        int64_t i = pxl_gguf_find_tensor(m->g, "rope_freqs.weight");
        const unsigned char *p = pxl_gguf_tensor_at(m->g, (size_t)i)->data;
        for (int64_t k = 0; k < I->head_dim / 2; k++) {
            float f;
            memcpy(&f, p + 4 * k, 4);
            if (!(isfinite(f) && f > 0.0f))
                return pxl_fail(m->ctx, PXL_ERR_FORMAT, "model: rope_freqs.weight[%lld] = %g (factors must be finite "
                                "and positive)", (long long)k, (double)f);
        }
    }
    if (s != PXL_OK) return s;
    m->info.tied_output = m->output == NULL;
    int qkv_bias = !strcmp(I->arch, "qwen2");
    for (int64_t l = 0; l < I->n_layer && s == PXL_OK; l++) {
        pxl_llm_layer *L = &m->layers[l];
        char n[96];
#define W(field, suffix, ne0, ne1, f32only, opt)                                                          \
    if (s == PXL_OK) {                                                                                    \
        snprintf(n, sizeof n, "blk.%lld.%s", (long long)l, suffix);                                       \
        s = weight(m, n, ne0, ne1, f32only, opt, &L->field);                                              \
    }
        if (s == PXL_OK && pxl_ctx_backend(m->ctx) == PXL_BACKEND_GPU) {
            /* one matrix for Q, K and V (or Q and K), and one for gate and up */
            char nq[96], nk[96], nv[96], ng[96], nu[96];
            snprintf(nq, sizeof nq, "blk.%lld.attn_q.weight", (long long)l);
            snprintf(nk, sizeof nk, "blk.%lld.attn_k.weight", (long long)l);
            snprintf(nv, sizeof nv, "blk.%lld.attn_v.weight", (long long)l);
            snprintf(ng, sizeof ng, "blk.%lld.ffn_gate.weight", (long long)l);
            snprintf(nu, sizeof nu, "blk.%lld.ffn_up.weight", (long long)l);
            const char *qkv[3] = {nq, nk, nv}, *gu[2] = {ng, nu};
            int64_t rq[3] = {Dq, Dkv, Dkv}, rg[2] = {F, F};
            pxl_tensor *v3[3], *v2[2];
            s = weight_rows(m, qkv, rq, 3, E, v3, &L->wqkv);
            if (s == PXL_OK && !L->wqkv) s = weight_rows(m, qkv, rq, 2, E, v3, &L->wqk);
            if (s == PXL_OK && (L->wqkv || L->wqk)) {
                L->wq = v3[0];
                L->wk = v3[1];
                if (L->wqkv) L->wv = v3[2];
            }
            if (s == PXL_OK) s = weight_rows(m, gu, rg, 2, E, v2, &L->wgu);
            if (s == PXL_OK && L->wgu) {
                L->wg = v2[0];
                L->wu = v2[1];
            }
        }
        W(attn_norm, "attn_norm.weight", E, 0, 1, 0)
        if (!L->wq) W(wq, "attn_q.weight", E, Dq, 0, 0)
        if (!L->wk) W(wk, "attn_k.weight", E, Dkv, 0, 0)
        if (!L->wv) W(wv, "attn_v.weight", E, Dkv, 0, 0)
        W(wo, "attn_output.weight", Dq, E, 0, 0)
        W(bq, "attn_q.bias", Dq, 0, 1, !qkv_bias)
        W(bk, "attn_k.bias", Dkv, 0, 1, !qkv_bias)
        W(bv, "attn_v.bias", Dkv, 0, 1, !qkv_bias)
        W(ffn_norm, "ffn_norm.weight", E, 0, 1, 0)
        if (!L->wg) W(wg, "ffn_gate.weight", E, F, 0, 0)
        if (!L->wu) W(wu, "ffn_up.weight", E, F, 0, 0)
        W(wd, "ffn_down.weight", F, E, 0, 0)
#undef W
        /* biases as one row [1, N]: pxl_add broadcasts a row over [T, N], and for T = 1 the shapes match */
        pxl_tensor **bias[3] = {&L->bq, &L->bk, &L->bv};
        for (int b = 0; b < 3 && s == PXL_OK; b++) {
            if (!*bias[b]) continue;
            int64_t row[2] = {1, pxl_tensor_nelem(*bias[b])};
            pxl_tensor *r;
            s = pxl_tensor_reshape(m->ctx, *bias[b], 2, row, &r);
            if (s == PXL_OK) {
                pxl_tensor_free(*bias[b]);
                *bias[b] = r;
            }
        }
        /* a GPU token's q, k and v lie back to back (token_views): their biases as one row */
        if (s == PXL_OK && pxl_ctx_backend(m->ctx) == PXL_BACKEND_GPU && (L->bq || L->bk || L->bv))
            s = fuse_biases(m, L, Dq, Dkv);
    }
    return s;
}

/* ---- activations and cache ----------------------------------------------------------- */

static pxl_status make(pxl_llm *m, pxl_dtype dt, int nd, int64_t d0, int64_t d1, int64_t d2, pxl_tensor **out) {
    int64_t shape[3] = {d0, d1, d2};
    return pxl_tensor_create(m->ctx, dt, nd, shape, out);
}

static pxl_status alloc_state(pxl_llm *m) {
    const pxl_llm_info *I = &m->info;
    int64_t B = I->n_batch, E = I->n_embd, D = I->head_dim;
    int64_t Dq = I->n_head * D, Dkv = I->n_head_kv * D, F = I->n_ff;
    const pxl_gpu_info *gi = pxl_gpu_get_info(m->ctx);
    if (gi) { /* every state tensor is bound whole by some op */
        uint64_t lim = gi->max_storage_binding_size,
                 cache = (uint64_t)I->n_ctx * (uint64_t)Dkv * pxl_dtype_row_bytes(I->kv_type, 1);
        uint64_t act = (uint64_t)B * (uint64_t)(F > Dq ? (F > E ? F : E) : (Dq > E ? Dq : E)) * 4u;
        if (cache > lim)
            return pxl_fail(m->ctx, PXL_ERR_UNSUPPORTED, "model: a layer's KV cache for a context of %lld is %llu "
                            "bytes, more than one storage binding on this device (%llu): lower --ctx",
                            (long long)I->n_ctx, (unsigned long long)cache, (unsigned long long)lim);
        if (act > lim || (uint64_t)I->n_vocab * 4u > lim)
            return pxl_fail(m->ctx, PXL_ERR_UNSUPPORTED, "model: activations for %lld tokens (or one row of %lld "
                            "logits) exceed one storage binding on this device (%llu bytes)",
                            (long long)B, (long long)I->n_vocab, (unsigned long long)lim);
    }
    pxl_status s = make(m, PXL_I32, 1, B, 0, 0, &m->ids);
    if (s == PXL_OK) s = make(m, PXL_F32, 2, B, E, 0, &m->x);
    if (s == PXL_OK) s = make(m, PXL_F32, 2, B, E, 0, &m->h);
    if (s == PXL_OK) s = make(m, PXL_F32, 2, B, Dq, 0, &m->q);
    if (s == PXL_OK) s = make(m, PXL_F32, 2, B, Dkv, 0, &m->k);
    if (s == PXL_OK && I->kv_type != PXL_F32) s = make(m, PXL_F32, 2, B, Dkv, 0, &m->v);
    if (s == PXL_OK) s = make(m, PXL_F32, 2, B, Dq, 0, &m->att);
    if (s == PXL_OK) s = make(m, PXL_F32, 2, B, F, 0, &m->gate);
    if (s == PXL_OK) s = make(m, PXL_F32, 2, B, F, 0, &m->up);
    if (s == PXL_OK) s = make(m, PXL_F32, 2, 1, I->n_vocab, 0, &m->logits1);
    if (s == PXL_OK && pxl_ctx_backend(m->ctx) == PXL_BACKEND_GPU) s = make(m, PXL_F32, 2, 1, Dq + 2 * Dkv, 0, &m->qkv1);
    if (s == PXL_OK && m->qkv1) s = pxl_buffer_create_readback(m->ctx, (size_t)I->n_vocab * sizeof(float), &m->logits_rb);
    for (int64_t l = 0; l < I->n_layer && s == PXL_OK; l++) {
        s = make(m, I->kv_type, 3, I->n_ctx, I->n_head_kv, D, &m->layers[l].cache_k);
        if (s == PXL_OK) s = make(m, I->kv_type, 3, I->n_ctx, I->n_head_kv, D, &m->layers[l].cache_v);
    }
    m->info.kv_cache_bytes =
        (uint64_t)I->n_layer * 2u * (uint64_t)I->n_ctx * (uint64_t)Dkv * pxl_dtype_row_bytes(I->kv_type, 1);
    return s;
}

/* ---- the GPU memory estimate ------------------------------------------------------------ */

static uint64_t tensor_bytes(const pxl_gguf *g, const char *name) {
    int64_t i = pxl_gguf_find_tensor(g, name);
    return i < 0 ? 0 : pxl_gguf_tensor_at(g, (size_t)i)->bytes;
}

/* What the model will take on the device, before anything is uploaded: the
 * weights load_weights uploads (as stored), the KV cache, the state tensors of
 * alloc_state for n_batch tokens, and the logits (one row, and the n_batch rows
 * that all-logits passes make, capped as the forward pass caps them). Buffer
 * rounding and Dawn's own allocations are left to the margin below the device
 * figure. */
static uint64_t gpu_estimate(const pxl_llm *m, uint64_t *weights, uint64_t *kv_cache) {
    const pxl_llm_info *I = &m->info;
    static const char *const globals[] = {"token_embd.weight", "output_norm.weight", "output.weight",
                                          "rope_freqs.weight"};
    static const char *const per_layer[] = {"attn_norm.weight", "attn_q.weight",   "attn_k.weight",
                                            "attn_v.weight",    "attn_output.weight", "attn_q.bias",
                                            "attn_k.bias",      "attn_v.bias",     "ffn_norm.weight",
                                            "ffn_gate.weight",  "ffn_up.weight",   "ffn_down.weight"};
    uint64_t w = 0;
    for (size_t i = 0; i < sizeof globals / sizeof globals[0]; i++) w += tensor_bytes(m->g, globals[i]);
    for (int64_t l = 0; l < I->n_layer; l++)
        for (size_t i = 0; i < sizeof per_layer / sizeof per_layer[0]; i++) {
            char n[96];
            snprintf(n, sizeof n, "blk.%lld.%s", (long long)l, per_layer[i]);
            w += tensor_bytes(m->g, n);
        }
    uint64_t B = (uint64_t)I->n_batch, E = (uint64_t)I->n_embd, D = (uint64_t)I->head_dim;
    uint64_t Dq = (uint64_t)I->n_head * D, Dkv = (uint64_t)I->n_head_kv * D, F = (uint64_t)I->n_ff;
    uint64_t V = (uint64_t)I->n_vocab;
    uint64_t kv = (uint64_t)I->n_layer * 2u * (uint64_t)I->n_ctx * Dkv * pxl_dtype_row_bytes(I->kv_type, 1);
    /* ids; x, h, q, att, gate, up, k and (a KV cache other than f32) v */
    uint64_t act = B * 4u + B * (2u * E + 2u * Dq + 2u * F + Dkv + (I->kv_type != PXL_F32 ? Dkv : 0)) * 4u;
    uint64_t rows = B;
    const pxl_gpu_info *gi = pxl_gpu_get_info(m->ctx);
    if (gi && V && rows * V * 4u > gi->max_storage_binding_size) rows = gi->max_storage_binding_size / (V * 4u);
    uint64_t logits = (1u + rows) * V * 4u;
    *weights = w;
    *kv_cache = kv;
    return w + kv + act + logits;
}

static double mib(uint64_t b) { return (double)b / (1024.0 * 1024.0); }

/* Refuses a model that will not fit, rather than let the device be lost. */
static pxl_status check_gpu_memory(pxl_llm *m, const pxl_llm_options *o) {
    const pxl_gpu_info *gi = pxl_gpu_get_info(m->ctx);
    if (!gi) return PXL_OK;
    uint64_t w, kv;
    uint64_t need = m->info.gpu_bytes_estimate = gpu_estimate(m, &w, &kv);
    int forced = o && o->gpu_memory_limit;
    uint64_t limit = forced ? o->gpu_memory_limit : gi->device_memory_bytes / 10u * 9u;
    if (!limit || need <= limit) return PXL_OK;
    return pxl_fail(m->ctx, PXL_ERR_UNSUPPORTED,
                    "model: needs about %.1f MiB on the GPU (weights %.1f MiB, KV cache %.1f MiB for a context of "
                    "%lld), more than the %.1f MiB %s; lower --ctx (or use --kv-type f16), or use --backend cpu",
                    mib(need), mib(w), mib(kv), (long long)m->info.n_ctx, mib(limit),
                    forced ? "allowed (gpu_memory_limit)" : "usable on this device (90% of its memory)");
}

/* ---- load / free ----------------------------------------------------------------------- */

/* Drops the pass recorded ahead, if any: nothing of it has run. */
static void ahead_drop(pxl_llm *m) {
    for (int i = 0; i < m->n_ahead; i++) pxl_recorder_discard(m->ahead[i]);
    m->n_ahead = 0;
}

void pxl_llm_free(pxl_llm *m) {
    if (!m) return;
    ahead_drop(m);
    pxl_tensor *ts[] = {m->tok_embd, m->output_norm, m->output, m->rope_freqs, m->ids, m->x, m->h, m->q, m->k,
                        m->v, m->att, m->gate, m->up, m->logits1, m->logits_all, m->qkv1};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) pxl_tensor_free(ts[i]);
    pxl_buffer_free(m->logits_rb);
    pxl_free(m->ctx, m->logits_host);
    if (m->layers) {
        for (int64_t l = 0; l < m->info.n_layer; l++) {
            pxl_llm_layer *L = &m->layers[l];
            pxl_tensor *lt[] = {L->attn_norm, L->wq, L->wk,  L->wv,    L->wo,      L->bq,      L->bk,   L->bv,
                                L->ffn_norm,  L->wg, L->wu,  L->wd,    L->cache_k, L->cache_v, L->wqkv, L->wqk,
                                L->bqkv,      L->bqk,  L->bvv, L->wgu};
            for (size_t i = 0; i < sizeof lt / sizeof lt[0]; i++) pxl_tensor_free(lt[i]);
        }
    }
    pxl_free(m->ctx, m->layers);
    pxl_free(m->ctx, m);
}

static pxl_status read_hparams(pxl_llm *m, const pxl_llm_options *o) {
    pxl_llm_info *I = &m->info;
    pxl_status s = meta_string(m, "general.architecture", m->arch, sizeof m->arch);
    if (s != PXL_OK) return s;
    if (!m->arch[0]) return pxl_fail(m->ctx, PXL_ERR_FORMAT, "model: the metadata has no 'general.architecture'");
    if (strcmp(m->arch, "llama") != 0 && strcmp(m->arch, "qwen2") != 0)
        return pxl_fail(m->ctx, PXL_ERR_UNSUPPORTED,
                        "model: architecture '%s' is not supported (pxl runs llama and qwen2)", m->arch);
    I->arch = m->arch;
    I->kv_type = o ? o->kv_type : PXL_F32;
    if (I->kv_type != PXL_F32 && I->kv_type != PXL_F16)
        return pxl_fail(m->ctx, PXL_ERR_INVALID_ARG, "model: a KV cache of %s is not supported (f32 or f16)",
                        pxl_dtype_name(I->kv_type));
    if ((s = meta_string(m, "general.name", m->name, sizeof m->name)) != PXL_OK) return s;
    I->name = m->name;
    if ((s = meta_int(m, "embedding_length", 1, 0, &I->n_embd)) != PXL_OK) return s;
    if ((s = meta_int(m, "block_count", 1, 0, &I->n_layer)) != PXL_OK) return s;
    if ((s = meta_int(m, "feed_forward_length", 1, 0, &I->n_ff)) != PXL_OK) return s;
    if ((s = meta_int(m, "attention.head_count", 1, 0, &I->n_head)) != PXL_OK) return s;
    if ((s = meta_int(m, "attention.head_count_kv", 0, I->n_head, &I->n_head_kv)) != PXL_OK) return s;
    if ((s = meta_int(m, "context_length", 1, 0, &I->n_ctx_train)) != PXL_OK) return s;
    if (I->n_embd < 1 || I->n_layer < 1 || I->n_ff < 1 || I->n_head < 1 || I->n_head_kv < 1 ||
        I->n_ctx_train < 1)
        return pxl_fail(m->ctx, PXL_ERR_FORMAT, "model: a zero size in the metadata (embedding %lld, blocks %lld, "
                        "feed-forward %lld, heads %lld/%lld, context %lld)", (long long)I->n_embd,
                        (long long)I->n_layer, (long long)I->n_ff, (long long)I->n_head, (long long)I->n_head_kv,
                        (long long)I->n_ctx_train);
    if (I->n_embd % I->n_head || I->n_head % I->n_head_kv)
        return pxl_fail(m->ctx, PXL_ERR_FORMAT,
                        "model: %lld heads do not divide the embedding of %lld, or %lld KV heads the heads",
                        (long long)I->n_head, (long long)I->n_embd, (long long)I->n_head_kv);
    int64_t key_len, rope_dims;
    if ((s = meta_int(m, "attention.key_length", 0, I->n_embd / I->n_head, &key_len)) != PXL_OK) return s;
    int64_t val_len;
    if ((s = meta_int(m, "attention.value_length", 0, key_len, &val_len)) != PXL_OK) return s;
    if (key_len != val_len || key_len < 2 || key_len % 2)
        return pxl_fail(m->ctx, PXL_ERR_UNSUPPORTED, "model: key length %lld and value length %lld (pxl needs "
                        "equal, even lengths)", (long long)key_len, (long long)val_len);
    I->head_dim = key_len;
    if ((s = meta_int(m, "rope.dimension_count", 0, key_len, &rope_dims)) != PXL_OK) return s;
    if (rope_dims != key_len)
        return pxl_fail(m->ctx, PXL_ERR_UNSUPPORTED, "model: RoPE over %lld of %lld head dimensions is not supported",
                        (long long)rope_dims, (long long)key_len);
    if ((s = meta_float(m, "rope.freq_base", 10000.0, &I->rope_base)) != PXL_OK) return s;
    if (!(I->rope_base >= 1.0f)) return pxl_fail(m->ctx, PXL_ERR_FORMAT, "model: RoPE base %g < 1", (double)I->rope_base);
    if ((s = meta_float(m, "attention.layer_norm_rms_epsilon", 1e-5, &I->norm_eps)) != PXL_OK) return s;
    if (!(I->norm_eps > 0.0f)) return pxl_fail(m->ctx, PXL_ERR_FORMAT, "model: RMS norm epsilon %g", (double)I->norm_eps);
    char scaling[32], key[96];
    snprintf(key, sizeof key, "%s.rope.scaling.type", m->arch);
    if ((s = meta_string(m, key, scaling, sizeof scaling)) != PXL_OK) return s;
    /* as llama.cpp: no type means linear; linear scales positions by
     * 1/factor (rope.scaling.factor, else rope.scale_linear; 0 or absent: 1);
     * none never scales. llama3 scaling comes as the tensor rope_freqs.weight
     * (load_weights), whatever the type. */
    I->rope_freq_scale = 1.0f;
    if (!scaling[0] || !strcmp(scaling, "linear")) {
        float factor;
        if ((s = meta_float(m, "rope.scaling.factor", 0.0, &factor)) != PXL_OK) return s;
        if (factor == 0.0f && (s = meta_float(m, "rope.scale_linear", 0.0, &factor)) != PXL_OK) return s;
        if (factor < 0.0f) return pxl_fail(m->ctx, PXL_ERR_FORMAT, "model: RoPE scaling factor %g < 0", (double)factor);
        if (factor != 0.0f) I->rope_freq_scale = 1.0f / factor;
    } else if (strcmp(scaling, "none") != 0) {
        /* yarn and longrope also change the magnitudes (attention factor,
         * ramps): refuse rather than run with the wrong positions */
        return pxl_fail(m->ctx, PXL_ERR_UNSUPPORTED, "model: RoPE scaling '%s' is not supported (pxl runs none, "
                        "linear and llama3's rope_freqs.weight)", scaling);
    }
    float attn_factor;
    if ((s = meta_float(m, "rope.scaling.attn_factor", 1.0, &attn_factor)) != PXL_OK) return s;
    if (attn_factor != 1.0f)
        return pxl_fail(m->ctx, PXL_ERR_UNSUPPORTED, "model: RoPE attention factor %g is not supported",
                        (double)attn_factor);
    I->rope_halves = !strcmp(m->arch, "qwen2");
    /* vocabulary: the embedding's rows */
    int64_t te = pxl_gguf_find_tensor(m->g, "token_embd.weight");
    if (te < 0) return pxl_fail(m->ctx, PXL_ERR_FORMAT, "model: tensor 'token_embd.weight' is missing");
    I->n_vocab = pxl_gguf_tensor_at(m->g, (size_t)te)->ne[1];
    int64_t vs;
    if ((s = meta_int(m, "vocab_size", 0, I->n_vocab, &vs)) != PXL_OK) return s;
    if (vs != I->n_vocab)
        return pxl_fail(m->ctx, PXL_ERR_FORMAT, "model: '%s.vocab_size' = %lld but token_embd.weight has %lld rows",
                        m->arch, (long long)vs, (long long)I->n_vocab);
    /* context and batch */
    int64_t n_ctx = o && o->n_ctx ? (int64_t)o->n_ctx : (I->n_ctx_train < 4096 ? I->n_ctx_train : 4096);
    if (n_ctx > I->n_ctx_train)
        return pxl_fail(m->ctx, PXL_ERR_INVALID_ARG, "model: a context of %lld is beyond the %lld the model was "
                        "trained for", (long long)n_ctx, (long long)I->n_ctx_train);
    I->n_ctx = n_ctx;
    int64_t nb = o && o->n_batch ? (int64_t)o->n_batch : 512;
    I->n_batch = nb < n_ctx ? nb : n_ctx;
    return PXL_OK;
}

pxl_status pxl_llm_load(pxl_ctx *ctx, const pxl_gguf *g, const pxl_llm_options *opts, pxl_llm **out) {
    PXL_REQUIRE_CTX(ctx);
    PXL_REQUIRE(ctx, "pxl_llm_load", g);
    PXL_REQUIRE(ctx, "pxl_llm_load", out);
    pxl_llm *m = pxl_calloc(ctx, 1, sizeof *m);
    if (!m) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "out of memory");
    m->ctx = ctx;
    m->g = g;
    const pxl_tuning *tune = pxl_ctx_tuning(ctx);
    /* A GPU rounds activations to 8 bits by default where a kernel does, as
     * llama.cpp's GPU backends do: a prompt's tiled products, and a decoded
     * token's Q4_K products (kmv4q); gpu_q8=1 keeps a token's in f32, gpu_q8=0
     * both. The CPU rounds a one-token pass's activations by default where it
     * multiplies them in integers (a_q8 = 2), as llama.cpp's CPU backend
     * rounds its activations (per 32 values; for K-quants llama.cpp per 256),
     * and a longer pass's never (the tiled f32 products are the faster
     * there); cpu_q8=0 keeps them in f32. The error this adds is measured in
     * docs/BENCHMARKS.md ("Accuracy of 8-bit activations in decode",
     * "Accuracy of the CPU's 8-bit decode"). */
    int gpu = pxl_ctx_backend(ctx) == PXL_BACKEND_GPU;
    m->a_q8 = gpu ? !tune->gpu_q8_off : 0;
    m->a_q8_token = gpu ? !tune->gpu_q8_token_off : tune->cpu_q8_off ? 0 : 2;
    pxl_status s = read_hparams(m, opts);
    if (s == PXL_OK) {
        m->layers = pxl_calloc(ctx, (size_t)m->info.n_layer, sizeof *m->layers);
        if (!m->layers) s = pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (s == PXL_OK) s = check_gpu_memory(m, opts);
    if (s == PXL_OK) {
        uint64_t total = 3 + 12 * (uint64_t)m->info.n_layer + (pxl_gguf_find_tensor(g, "rope_freqs.weight") >= 0);
        m->progress = pxl_ctx_backend(ctx) == PXL_BACKEND_GPU ? pxl_progress_begin(ctx, "loading", total) : NULL;
        s = load_weights(m);
        pxl_progress_end(m->progress);
        m->progress = NULL;
    }
    if (s == PXL_OK) s = alloc_state(m);
    if (s == PXL_OK) s = pxl_finish(ctx);
    if (s != PXL_OK) {
        pxl_llm_free(m);
        return s;
    }
    *out = m;
    return PXL_OK;
}

const pxl_llm_info *pxl_llm_get_info(const pxl_llm *m) { return m ? &m->info : NULL; }
int64_t pxl_llm_n_past(const pxl_llm *m) { return m ? m->n_past : 0; }

pxl_status pxl_llm_rewind(pxl_llm *m, int64_t n_past) {
    if (!m) return PXL_ERR_INVALID_ARG;
    pxl_buffer_unmap(m->ctx, m->logits_rb); /* a view's logits end here (pxl_llm_eval_view) */
    if (n_past < 0 || n_past > m->n_past)
        return pxl_fail(m->ctx, PXL_ERR_INVALID_ARG, "pxl_llm_rewind: %lld is outside [0, %lld]", (long long)n_past,
                        (long long)m->n_past);
    if (n_past != m->n_past) ahead_drop(m); /* the pass recorded ahead was for the old position */
    m->n_past = n_past;
    return PXL_OK;
}

/* ---- the forward pass ---------------------------------------------------------------------- */

/* Layers per submit of a GPU pass (the tuning option llm_submit overrides it). */
#define LLM_SUBMIT_LAYERS 1

/* Views made for one pass, freed together. */
typedef struct {
    pxl_tensor *t[48];
    int n;
} views;

static pxl_status view(pxl_llm *m, views *v, pxl_tensor *base, int nd, int64_t d0, int64_t d1, int64_t d2,
                       size_t offset, pxl_tensor **out) {
    if (v->n == (int)(sizeof v->t / sizeof v->t[0]))
        return pxl_fail(m->ctx, PXL_ERR_INVALID_ARG, "model: too many views in one pass (internal)");
    int64_t shape[3] = {d0, d1, d2};
    pxl_status s = pxl_tensor_view(m->ctx, base, nd, shape, offset, out);
    if (s == PXL_OK) v->t[v->n++] = *out;
    return s;
}

static void views_free(views *v) {
    for (int i = 0; i < v->n; i++) pxl_tensor_free(v->t[i]);
    v->n = 0;
}

static pxl_status matmul_t(pxl_llm *m, const pxl_tensor *a, const pxl_tensor *w, pxl_tensor *c) {
    pxl_matmul_options o = {0};
    o.trans_b = 1;
    o.a_q8 = m->a_q8_pass;
    return pxl_matmul(m->ctx, a, w, c, &o);
}

/* c = c + a . w^T: a residual add inside the product (beta 1); the same
 * floats as the product into a temporary and pxl_add. */
static pxl_status matmul_t_add(pxl_llm *m, const pxl_tensor *a, const pxl_tensor *w, pxl_tensor *c) {
    pxl_matmul_options o = {0};
    o.trans_b = 1;
    o.beta = 1.0f;
    o.a_q8 = m->a_q8_pass;
    return pxl_matmul(m->ctx, a, w, c, &o);
}

/* The options of a weight product whose A is rmsnorm(x) * norm, the norm
 * inside the product: pxl_matmul, pxl_matmul_multi, pxl_matmul_swiglu. */
static pxl_matmul_options norm_opts(const pxl_llm *m, const pxl_tensor *norm) {
    pxl_matmul_options o = {0};
    o.trans_b = 1;
    o.norm = norm;
    o.norm_eps = m->info.norm_eps;
    o.a_q8 = m->a_q8_pass;
    return o;
}

/* c[i] = (rmsnorm(x) * norm) . w[i]^T for i < n in one call
 * (pxl_matmul_multi): the norm made once, except where the products
 * normalize A as they load it (a GPU's one-row kernels), and a GPU rounds a
 * prompt's normalized rows to 8 bits once for all of them (a_q8). */
static pxl_status matmul_t_multi(pxl_llm *m, const pxl_tensor *x, const pxl_tensor *norm, size_t n,
                                 const pxl_tensor *const *w, pxl_tensor *const *c) {
    pxl_matmul_options o = norm_opts(m, norm);
    return pxl_matmul_multi(m->ctx, x, n, w, c, NULL, &o);
}

/* c = rmsnorm(x) * norm . w^T (+ bias, a row; NULL: none), the norm inside
 * the product (and the bias too where the kernel takes it: pxl_matmul_options). */
static pxl_status matmul_t_norm(pxl_llm *m, const pxl_tensor *x, const pxl_tensor *norm, const pxl_tensor *w,
                                const pxl_tensor *bias, pxl_tensor *c) {
    pxl_matmul_options o = norm_opts(m, norm);
    o.bias = bias;
    return pxl_matmul(m->ctx, x, w, c, &o);
}

/* The views of one token's fused pass (GPU, T = 1): q, k and v back to back
 * in m->qkv1, the SwiGLU output in m->gate. */
typedef struct {
    pxl_tensor *qkv, *qk;   /* [1, Dq + 2Dkv], [1, Dq + Dkv] */
    pxl_tensor *q, *q3;     /* [1, Dq], [1, Hq, D] at 0 */
    pxl_tensor *k, *k3;     /* [1, Dkv], [1, Hkv, D] at Dq */
    pxl_tensor *v;          /* [1, Dkv] at Dq + Dkv */
    pxl_tensor *act;        /* [1, F]: silu(g) * u */
} token_views;

static pxl_status token_views_make(pxl_llm *m, views *v, token_views *t) {
    const pxl_llm_info *I = &m->info;
    int64_t D = I->head_dim, Hq = I->n_head, Hkv = I->n_head_kv, Dq = Hq * D, Dkv = Hkv * D, F = I->n_ff;
    size_t f = sizeof(float);
    pxl_status s = view(m, v, m->qkv1, 2, 1, Dq + 2 * Dkv, 0, 0, &t->qkv);
    if (s == PXL_OK) s = view(m, v, m->qkv1, 2, 1, Dq + Dkv, 0, 0, &t->qk);
    if (s == PXL_OK) s = view(m, v, m->qkv1, 2, 1, Dq, 0, 0, &t->q);
    if (s == PXL_OK) s = view(m, v, m->qkv1, 3, 1, Hq, D, 0, &t->q3);
    if (s == PXL_OK) s = view(m, v, m->qkv1, 2, 1, Dkv, 0, (size_t)Dq * f, &t->k);
    if (s == PXL_OK) s = view(m, v, m->qkv1, 3, 1, Hkv, D, (size_t)Dq * f, &t->k3);
    if (s == PXL_OK) s = view(m, v, m->qkv1, 2, 1, Dkv, 0, (size_t)(Dq + Dkv) * f, &t->v);
    if (s == PXL_OK) s = view(m, v, m->gate, 2, 1, F, 0, 0, &t->act);
    return s;
}

/*
 * One layer for one token (at position P) on a GPU, in fewer dispatches than the general
 * path: the RMSNorms inside the products that read them, Q, K and V from one
 * product where their weights are one matrix, gate, up and SwiGLU in one
 * dispatch where their weights are one matrix, and both residual adds done
 * by the products that make them (beta = 1). The same formulas as the
 * general path, in another order of rounding (the norms are applied as A is
 * loaded).
 *   [q k v] = (rmsnorm(x) * attn_norm) [Wq Wk Wv]^T (+ [bq bk bv])
 *   q, k = rope(q), rope(k) -> cache_k[P]; v -> cache_v[P]; x += attention(q, cache) Wo^T
 *     (pxl_rope_kv_attention)
 *   x += (silu(h Wg^T) * (h Wu^T)) Wd^T with h = rmsnorm(x) * ffn_norm
 */
static pxl_status layer_token(pxl_llm *m, pxl_llm_layer *L, const token_views *t, int64_t P, pxl_tensor *x,
                              pxl_tensor *att, pxl_tensor *att3, const pxl_rope_options *ro, float scale) {
    pxl_ctx *ctx = m->ctx;
    pxl_status s = PXL_OK;
    /* the biases (qwen2) as the products' bias options: added as C is stored
     * (Q8_0, Q4_0, Q5_0 weights), else by pxl_matmul right after */
    if (L->wqkv) {
        s = matmul_t_norm(m, x, L->attn_norm, L->wqkv, L->bqkv, t->qkv);
    } else if (L->wqk) {
        /* Q and K of one type, V of another (Q4_K_M files: Q4_K and Q6_K;
         * Qwen2.5's: Q5_0 and Q8_0): one call, one dispatch where a kernel
         * takes the pair (pxl_matmul_multi), the biases (fuse_biases: bqk
         * always, V's where it has one) added as it stores */
        pxl_matmul_options o = norm_opts(m, L->attn_norm);
        const pxl_tensor *w[2] = {L->wqk, L->wv}, *bias[2] = {L->bqk, L->bv ? L->bvv : NULL};
        pxl_tensor *c[2] = {t->qk, t->v};
        s = pxl_matmul_multi(ctx, x, 2, w, c, L->bqk ? bias : NULL, &o);
    } else {
        s = matmul_t_norm(m, x, L->attn_norm, L->wq, L->bq, t->q);
        if (s == PXL_OK) s = matmul_t_norm(m, x, L->attn_norm, L->wk, L->bk, t->k);
        if (s == PXL_OK) s = matmul_t_norm(m, x, L->attn_norm, L->wv, L->bv, t->v);
    }
    /* RoPE, the cache rows and attention: one dispatch at contexts up to 1024 */
    if (s == PXL_OK) s = pxl_rope_kv_attention(ctx, t->q3, t->k3, t->v, L->cache_k, L->cache_v, P, ro, att3, scale);
    if (s == PXL_OK) s = matmul_t_add(m, att, L->wo, x);
    pxl_matmul_options ffn = norm_opts(m, L->ffn_norm);
    /* one dispatch when wg and wu are views of L->wgu; else two products and pxl_swiglu */
    if (s == PXL_OK) s = pxl_matmul_swiglu(ctx, x, L->wg, L->wu, t->act, &ffn);
    if (s == PXL_OK) s = matmul_t_add(m, t->act, L->wd, x);
    return s;
}

static pxl_status forward(pxl_llm *m, const int32_t *tok, int64_t P, int64_t T, float *logits, int all_logits,
                          int ahead);

/* The last pass's one row of logits into logits (V floats). On a GPU the
 * pass itself copied them into m->logits_rb, so reading them is one map of
 * that buffer once the pass has run (a download would submit a copy of its
 * own after the pass, and wait for that); the stream's work is submitted
 * first where it was not. */
static pxl_status read_logits1(pxl_llm *m, float *logits) {
    size_t bytes = (size_t)m->info.n_vocab * sizeof(float);
    if (!m->logits_rb) return pxl_tensor_read(m->ctx, m->logits1, logits, bytes);
    pxl_status s = pxl_gpu_flush(m->ctx, 0, NULL);
    if (s == PXL_OK && m->view) { /* pxl_llm_eval_view: the mapped bytes themselves */
        const void *p = NULL;
        s = pxl_buffer_map_read(m->ctx, m->logits_rb, 0, bytes, &p);
        if (s == PXL_OK) *m->view = p;
        return s;
    }
    return s == PXL_OK ? pxl_buffer_read_back(m->ctx, m->logits_rb, 0, logits, bytes) : s;
}

/* The token ids of a pass into m->ids (a queue write on a GPU: it lands
 * before work submitted after it, such as a pass recorded ahead). */
static pxl_status write_ids(pxl_llm *m, const int32_t *tok, int64_t T) {
    views v = {{0}, 0};
    pxl_tensor *ids;
    pxl_status s = view(m, &v, m->ids, 1, T, 0, 0, 0, &ids);
    if (s == PXL_OK) s = pxl_tensor_write(m->ctx, ids, tok, (size_t)T * sizeof *tok);
    views_free(&v);
    return s;
}

/*
 * Decoding ahead (GPU; tuning llm_ahead=0 turns it off). A decoded token's
 * pass is one submit's worth of recording (about 150 dispatches for a
 * 22-layer model) that the GPU runs in less time than the host takes to
 * record it and wait for it, so the GPU would sit idle between tokens. So
 * once a token's pass is submitted, the next one-token pass (position P,
 * its last row's logits into m->logits1, its id read from m->ids when it
 * runs) is recorded into recorders of its own (PXL_RECORDER_UNCHECKED, like
 * the stream) ended unsubmitted (pxl_recorder_end) while the GPU works; the
 * logits of the current token are read after that. A following
 * pxl_llm_eval of one token at P writes the id and submits the held pass at
 * once; any other call discards it (nothing of it has run, so the cache is
 * untouched). No-op where the context has no room for a token at P.
 *
 * WebGPU turns a command buffer into the device's commands when it is
 * submitted (Dawn: about 3 us a dispatch on an H100's host), so one
 * submit of the whole pass would keep the GPU waiting that long. The pass
 * is recorded in parts instead (ahead_cut), submitted in turn: the GPU
 * runs each part while the next one is turned into commands, and a token
 * takes a few submits instead of one a layer. Each part boundary costs the
 * GPU time of its own (about 20 us on an H100), so the parts grow fast: the
 * embedding and layer 0 (the GPU starts after the shortest translation),
 * then the next 6 layers, then 36 (layers 1-6, 7-42, ...: ahead_starts_part;
 * tuning llm_cut=B sets the growth 6 to B, 1 meaning one part): three parts
 * for models of 9 to 44 layers (docs/BENCHMARKS.md, "Where a tg128 token's
 * time goes between tokens").
 */
#define LLM_AHEAD_GROWTH 6

/* Whether layer l > 0 starts a part of a pass recorded ahead: parts of 1,
 * B, B^2, ... layers (B: the growth, tuning llm_cut; B = 1: none does). */
static int ahead_starts_part(const pxl_llm *m, int64_t l) {
    uint32_t t = pxl_ctx_tuning(m->ctx)->llm_cut;
    int64_t b = t ? (int64_t)t : LLM_AHEAD_GROWTH, first = 1, size = 1;
    if (b == 1) return 0;
    while (first < l) {
        size *= b;
        first += size;
    }
    return first == l;
}

static pxl_status ahead_cut(pxl_llm *m) {
    if (m->n_ahead == LLM_AHEAD_PARTS)
        return pxl_fail(m->ctx, PXL_ERR_INVALID_ARG, "model: too many parts in a pass recorded ahead (internal)");
    pxl_status s = m->n_ahead ? pxl_recorder_end(m->ahead[m->n_ahead - 1]) : PXL_OK;
    if (s == PXL_OK) s = pxl_recorder_begin(m->ctx, PXL_RECORDER_UNCHECKED, &m->ahead[m->n_ahead]);
    if (s == PXL_OK) m->n_ahead++;
    return s;
}

/*
 * Makes the kernels that decoding needs only at long contexts (pxl_rope_kv,
 * attention's split of the keys and the pass merging the splits, which
 * pxl_rope_kv_attention takes beyond 1024 keys) before the first
 * decoded token, by recording a one-token pass at the last position of the
 * context and dropping it. Otherwise their pipelines would be created in
 * the middle of a generation, when the context first outgrows one chunk of
 * keys (129 tokens for D = 64): a stall of a pipeline compile, and on the
 * H100 the one slow repetition of a process's first tg128.
 */
static pxl_status warm_decode(pxl_llm *m) {
    m->decode_warm = 1;
    if (m->n_ahead) return PXL_OK; /* a pass recorded ahead made them */
    pxl_status s = ahead_cut(m);   /* in the parts of a pass recorded ahead, then dropped */
    if (s == PXL_OK) s = forward(m, NULL, m->info.n_ctx - 1, 1, NULL, 0, 1);
    ahead_drop(m);
    return s;
}

/* Submits the parts of the pass recorded ahead in turn when s is PXL_OK
 * (discarding the rest after a failure, or all of them when s is not);
 * returns the first failure. */
static pxl_status ahead_submit(pxl_llm *m, pxl_status s) {
    int i = 0;
    for (; i < m->n_ahead && s == PXL_OK; i++) s = pxl_recorder_submit(m->ahead[i], 0, NULL);
    for (; i < m->n_ahead; i++) pxl_recorder_discard(m->ahead[i]);
    m->n_ahead = 0;
    return s;
}

static pxl_status record_ahead(pxl_llm *m, int64_t P) {
    ahead_drop(m);
    if (pxl_ctx_tuning(m->ctx)->llm_ahead_off || !m->qkv1 || P + 1 > m->info.n_ctx) return PXL_OK;
    pxl_status s = ahead_cut(m); /* its begin submits the current pass first */
    if (s == PXL_OK) s = forward(m, NULL, P, 1, NULL, 0, 1);
    if (s == PXL_OK) s = pxl_recorder_end(m->ahead[m->n_ahead - 1]);
    if (s != PXL_OK) {
        ahead_drop(m);
        return s;
    }
    m->ahead_pos = P;
    return PXL_OK;
}

/* One chunk of T <= n_batch tokens at positions P .. P + T - 1.
 * logits: NULL, the last token's row (all_logits 0), or T rows. ahead: only
 * record the pass (T = 1, into the caller's recorder; no ids written, the
 * logits row made but not read, n_past unchanged); see record_ahead. */
static pxl_status forward(pxl_llm *m, const int32_t *tok, int64_t P, int64_t T, float *logits, int all_logits,
                          int ahead) {
    const pxl_llm_info *I = &m->info;
    int64_t E = I->n_embd, D = I->head_dim, Hq = I->n_head, Hkv = I->n_head_kv, F = I->n_ff, V = I->n_vocab;
    pxl_ctx *ctx = m->ctx;
    m->a_q8_pass = T == 1 ? m->a_q8_token : m->a_q8;
    views v = {{0}, 0};
    pxl_tensor *ids = NULL, *x, *h, *q, *q3, *k, *k3, *att, *att3, *g, *u;
    pxl_status s = PXL_OK;
    if (m->gen_id) ids = m->gen_id; /* greedy generation: the id the last pass picked */
    else s = view(m, &v, m->ids, 1, T, 0, 0, 0, &ids);
    if (s == PXL_OK) s = view(m, &v, m->x, 2, T, E, 0, 0, &x);
    if (s == PXL_OK) s = view(m, &v, m->h, 2, T, E, 0, 0, &h);
    if (s == PXL_OK) s = view(m, &v, m->q, 2, T, Hq * D, 0, 0, &q);
    if (s == PXL_OK) s = view(m, &v, m->q, 3, T, Hq, D, 0, &q3);
    if (s == PXL_OK) s = view(m, &v, m->k, 2, T, Hkv * D, 0, 0, &k);
    if (s == PXL_OK) s = view(m, &v, m->k, 3, T, Hkv, D, 0, &k3);
    if (s == PXL_OK) s = view(m, &v, m->att, 2, T, Hq * D, 0, 0, &att);
    if (s == PXL_OK) s = view(m, &v, m->att, 3, T, Hq, D, 0, &att3);
    if (s == PXL_OK) s = view(m, &v, m->gate, 2, T, F, 0, 0, &g);
    if (s == PXL_OK) s = view(m, &v, m->up, 2, T, F, 0, 0, &u);
    token_views tv;
    memset(&tv, 0, sizeof tv);
    int one = T == 1 && m->qkv1; /* one token on a GPU: layer_token */
    if (s == PXL_OK && one && !ahead && !m->decode_warm) s = warm_decode(m);
    if (s == PXL_OK && one) s = token_views_make(m, &v, &tv);
    if (s == PXL_OK && !ahead) s = pxl_tensor_write(ctx, ids, tok, (size_t)T * sizeof *tok);
    if (s == PXL_OK) s = pxl_embedding(ctx, m->tok_embd, ids, x);
    int f16 = I->kv_type != PXL_F32;
    size_t row_kv = pxl_dtype_row_bytes(I->kv_type, Hkv * D);
    pxl_rope_options ro = {I->rope_base, I->rope_halves ? PXL_ROPE_HALVES : PXL_ROPE_ADJACENT, I->rope_freq_scale,
                           m->rope_freqs};
    float scale = 1.0f / sqrtf((float)D);
    /* On a GPU, the recorded work is submitted every few layers, so that the
     * GPU runs the first layers while the host records the next ones. */
    int gpu = pxl_ctx_backend(ctx) == PXL_BACKEND_GPU;
    uint32_t tune = pxl_ctx_tuning(ctx)->llm_submit;
    int64_t every = tune ? (int64_t)tune - 1 : LLM_SUBMIT_LAYERS;
    for (int64_t l = 0; l < I->n_layer && s == PXL_OK; l++) {
        if (gpu && every > 0 && l > 0 && l % every == 0 && !ahead) s = pxl_gpu_flush(ctx, 0, NULL);
        /* recorded ahead: layers 1 and 7 start a part (ahead_starts_part;
         * greedy generation records a whole pass ahead of the GPU: one part) */
        if (ahead && !m->gen_id && l > 0 && ahead_starts_part(m, l) && l + 1 < I->n_layer) s = ahead_cut(m);
        if (s != PXL_OK) break;
        pxl_llm_layer *L = &m->layers[l];
        if (one) { /* pxl_rope_kv_attention writes the cache rows itself */
            s = layer_token(m, L, &tv, P, x, att, att3, &ro, scale);
            continue;
        }
        int mark = v.n;
        pxl_tensor *ck = NULL, *cv = NULL, *vv = NULL;
        /* this pass's rows of the cache: f32, k after RoPE and v straight from
         * the product; f16, both through f32 rows (k and m->v) and pxl_convert */
        s = view(m, &v, L->cache_k, 3, T, Hkv, D, (size_t)P * row_kv, &ck);
        if (s == PXL_OK) s = view(m, &v, L->cache_v, 2, T, Hkv * D, 0, (size_t)P * row_kv, &cv);
        vv = cv;
        if (s == PXL_OK && f16) s = view(m, &v, m->v, 2, T, Hkv * D, 0, 0, &vv);
        if (s == PXL_OK) { /* one call, one norm: a GPU normalizes and rounds x once for the three (a_q8) */
            const pxl_tensor *w3[3] = {L->wq, L->wk, L->wv};
            pxl_tensor *c3[3] = {q, k, vv};
            s = matmul_t_multi(m, x, L->attn_norm, 3, w3, c3);
        }
        if (s == PXL_OK && L->bq) s = pxl_add(ctx, q, L->bq, q);
        if (s == PXL_OK && L->bk) s = pxl_add(ctx, k, L->bk, k);
        if (s == PXL_OK && L->bv) s = pxl_add(ctx, vv, L->bv, vv);
        if (s == PXL_OK) s = pxl_rope_ext(ctx, q3, q3, P, &ro);
        if (s == PXL_OK) s = pxl_rope_ext(ctx, k3, f16 ? k3 : ck, P, &ro);
        if (s == PXL_OK && f16) s = pxl_convert(ctx, k3, ck);
        if (s == PXL_OK && f16) s = pxl_convert(ctx, vv, cv);
        if (s == PXL_OK) s = pxl_attention(ctx, q3, L->cache_k, L->cache_v, att3, P + T, scale);
        if (s == PXL_OK) s = matmul_t_add(m, att, L->wo, x);
        if (s == PXL_OK) {
            const pxl_tensor *w2[2] = {L->wg, L->wu};
            pxl_tensor *c2[2] = {g, u};
            s = matmul_t_multi(m, x, L->ffn_norm, 2, w2, c2);
        }
        if (s == PXL_OK) s = pxl_swiglu(ctx, g, u, g);
        if (s == PXL_OK) s = matmul_t_add(m, g, L->wd, x);
        /* the layer's cache views go now (the others live to the end of the pass) */
        for (int i = mark; i < v.n; i++) pxl_tensor_free(v.t[i]);
        v.n = mark;
    }
    if (s == PXL_OK && (logits || ahead)) {
        const pxl_tensor *wout = m->output ? m->output : m->tok_embd;
        if (all_logits) {
            /* rows of logits in groups that fit one binding (a 150k vocabulary
             * takes 600 KB a row) */
            const pxl_gpu_info *gi = pxl_gpu_get_info(ctx);
            int64_t rows = I->n_batch;
            if (gi && (uint64_t)rows * (uint64_t)V * 4u > gi->max_storage_binding_size)
                rows = (int64_t)(gi->max_storage_binding_size / ((uint64_t)V * 4u));
            if (!m->logits_all) s = make(m, PXL_F32, 2, rows, V, 0, &m->logits_all);
            if (s == PXL_OK) s = pxl_rmsnorm(ctx, x, m->output_norm, h, I->norm_eps);
            int64_t cap = pxl_tensor_dim(m->logits_all, 0);
            for (int64_t r0 = 0; r0 < T && s == PXL_OK; r0 += cap) {
                int64_t n = T - r0 < cap ? T - r0 : cap;
                pxl_tensor *hr, *la;
                int mark = v.n;
                s = view(m, &v, m->h, 2, n, E, 0, (size_t)(r0 * E) * sizeof(float), &hr);
                if (s == PXL_OK) s = view(m, &v, m->logits_all, 2, n, V, 0, 0, &la);
                if (s == PXL_OK) s = matmul_t(m, hr, wout, la);
                if (s == PXL_OK)
                    s = pxl_tensor_read(ctx, la, logits + (size_t)(r0 * V), (size_t)(n * V) * sizeof(float));
                for (int i = mark; i < v.n; i++) pxl_tensor_free(v.t[i]);
                v.n = mark;
            }
        } else {
            pxl_tensor *xl, *hl;
            size_t last = (size_t)((T - 1) * E) * sizeof(float);
            s = view(m, &v, m->x, 2, 1, E, 0, last, &xl);
            if (s == PXL_OK) s = view(m, &v, m->h, 2, 1, E, 0, 0, &hl);
            if (s == PXL_OK && m->qkv1) { /* GPU: the norm inside the product (one dispatch) */
                s = matmul_t_norm(m, xl, m->output_norm, wout, NULL, m->logits1);
            } else if (s == PXL_OK) {
                s = pxl_rmsnorm(ctx, xl, m->output_norm, hl, I->norm_eps);
                if (s == PXL_OK) s = matmul_t(m, hl, wout, m->logits1);
            }
            if (s == PXL_OK && m->gen_next) { /* greedy generation: the pick, and its copy for the host */
                pxl_argmax_options ao = {1};
                pxl_recorder *rec;
                s = pxl_argmax_ext(ctx, m->logits1, m->gen_next, &ao);
                if (s == PXL_OK) s = pxl_gpu_stream(ctx, &rec);
                if (s == PXL_OK)
                    s = pxl_recorder_copy(rec, pxl_tensor_buffer(m->gen_next), pxl_tensor_offset(m->gen_next),
                                          m->gen_rb, 0, sizeof(int32_t));
            } else if (s == PXL_OK && m->logits_rb) { /* the logits' copy for the host, in the same pass */
                pxl_recorder *rec;
                s = pxl_gpu_stream(ctx, &rec);
                if (s == PXL_OK)
                    s = pxl_recorder_copy(rec, pxl_tensor_buffer(m->logits1), pxl_tensor_offset(m->logits1),
                                          m->logits_rb, 0, (size_t)V * sizeof(float));
            }
            /* the next token's pass is recorded while the GPU runs this one */
            if (s == PXL_OK && one && !ahead) s = record_ahead(m, P + 1);
            if (s == PXL_OK && !ahead) s = read_logits1(m, logits);
        }
    }
    views_free(&v);
    if (s == PXL_OK && !ahead) m->n_past = P + T;
    return s;
}

pxl_status pxl_llm_eval(pxl_llm *m, const int32_t *ids, size_t n, float *logits, int all_logits) {
    if (!m) return PXL_ERR_INVALID_ARG;
    PXL_REQUIRE(m->ctx, "pxl_llm_eval", ids);
    pxl_buffer_unmap(m->ctx, m->logits_rb); /* a view's logits end here (pxl_llm_eval_view) */
    const pxl_llm_info *I = &m->info;
    if (n == 0) return pxl_fail(m->ctx, PXL_ERR_INVALID_ARG, "pxl_llm_eval: no tokens");
    if ((uint64_t)n > (uint64_t)(I->n_ctx - m->n_past))
        return pxl_fail(m->ctx, PXL_ERR_INVALID_ARG,
                        "pxl_llm_eval: %zu tokens after %lld do not fit the context of %lld", n,
                        (long long)m->n_past, (long long)I->n_ctx);
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= I->n_vocab)
            return pxl_fail(m->ctx, PXL_ERR_INVALID_ARG, "pxl_llm_eval: token %d at %zu is outside the vocabulary "
                            "of %lld", ids[i], i, (long long)I->n_vocab);
    int64_t start = m->n_past;
    pxl_status s = PXL_OK;
    /* the pass recorded ahead is this call's if it is one token at n_past */
    if (m->n_ahead && (n != 1 || all_logits || m->ahead_pos != start)) ahead_drop(m);
    if (m->n_ahead) {
        s = write_ids(m, ids, 1);
        s = ahead_submit(m, s);
        if (s == PXL_OK) s = record_ahead(m, start + 1);
        if (s == PXL_OK && logits) s = read_logits1(m, logits);
        if (s == PXL_OK) {
            m->n_past = start + 1;
            return PXL_OK;
        }
        ahead_drop(m);
        return s;
    }
    for (size_t done = 0; done < n && s == PXL_OK;) {
        size_t T = n - done < (size_t)I->n_batch ? n - done : (size_t)I->n_batch;
        int last = done + T == n;
        float *lg = NULL;
        if (logits && all_logits) lg = logits + done * (size_t)I->n_vocab;
        else if (logits && last) lg = logits;
        s = forward(m, ids + done, m->n_past, (int64_t)T, lg, all_logits, 0);
        done += T;
    }
    if (s != PXL_OK) { /* a failed pass leaves the cache as it was before the call */
        m->n_past = start;
        ahead_drop(m);
    }
    return s;
}

pxl_status pxl_llm_eval_view(pxl_llm *m, const int32_t *ids, size_t n, const float **logits) {
    if (!m) return PXL_ERR_INVALID_ARG;
    PXL_REQUIRE(m->ctx, "pxl_llm_eval_view", logits);
    *logits = NULL;
    if (!m->logits_host) {
        m->logits_host = pxl_alloc(m->ctx, (size_t)m->info.n_vocab * sizeof *m->logits_host);
        if (!m->logits_host) return pxl_fail(m->ctx, PXL_ERR_OUT_OF_MEMORY, "out of memory");
    }
    const float *mapped = NULL;
    m->view = &mapped; /* read_logits1 maps logits_rb instead of copying it */
    pxl_status s = pxl_llm_eval(m, ids, n, m->logits_host, 0);
    m->view = NULL;
    if (s == PXL_OK) *logits = mapped ? mapped : m->logits_host;
    return s;
}

/* ---- greedy generation --------------------------------------------------------------------- */

/* Pick k: into out, to the callback; 1 when the generation stops after it. */
static int greedy_took(const pxl_llm_greedy_options *o, int32_t id, size_t k, int32_t *out, size_t *n_out) {
    if (out) out[k] = id;
    *n_out = k + 1;
    return o->on_token && o->on_token(o->user, id) != 0;
}

/* Token by token through pxl_llm_eval, the pick made on the host by a
 * greedy pxl_sampler (default options: the first largest logit, a NaN never
 * chosen; pxl_argmax_ext with nan_lowest picks the same on a GPU). */
static pxl_status greedy_host(pxl_llm *m, int32_t first, size_t n, const pxl_llm_greedy_options *o, int32_t *out,
                              size_t *n_out) {
    float *logits = pxl_alloc(m->ctx, (size_t)m->info.n_vocab * sizeof *logits);
    if (!logits) return pxl_fail(m->ctx, PXL_ERR_OUT_OF_MEMORY, "out of memory");
    pxl_sampler *smp = NULL;
    pxl_status s = pxl_sampler_create(m->ctx, m->info.n_vocab, NULL, &smp);
    int32_t tok = first;
    for (size_t k = 0; k < n && s == PXL_OK; k++) {
        s = pxl_llm_eval(m, &tok, 1, logits, 0);
        if (s == PXL_OK) s = pxl_sampler_sample(smp, logits, &tok);
        if (s == PXL_OK && greedy_took(o, tok, k, out, n_out)) break;
    }
    pxl_sampler_free(smp);
    pxl_free(m->ctx, logits);
    return s;
}

/*
 * On a GPU: pass i (position start + i) reads its id from hist[i], picks the
 * next into hist[i + 1] and copies it into the read-back buffer rb[i % 2].
 * Pass i + 1 is recorded and submitted before pass i's pick is read, so the
 * GPU always has the next pass queued: the host's reading of each id, its
 * recording and the submits' translation overlap the GPU's work. So a
 * pass is one submit, not decoding ahead's parts (each submit boundary
 * costs the GPU time; the parts only shorten the wait for the first). A stop
 * is seen one pass late: that pass (over the stop token) has run, and
 * n_past leaves its cache row out.
 */
static pxl_status greedy_gpu(pxl_llm *m, int32_t first, size_t n, const pxl_llm_greedy_options *o, int32_t *out,
                             size_t *n_out) {
    pxl_ctx *ctx = m->ctx;
    int64_t start = m->n_past, hn = (int64_t)n + 1;
    pxl_tensor *hist = NULL, *h0 = NULL;
    pxl_buffer *rb[2] = {NULL, NULL};
    ahead_drop(m);
    pxl_status s = m->decode_warm ? PXL_OK : warm_decode(m);
    if (s == PXL_OK) s = pxl_tensor_create(ctx, PXL_I32, 1, &hn, &hist);
    if (s == PXL_OK) s = pxl_buffer_create_readback(ctx, sizeof(int32_t), &rb[0]);
    if (s == PXL_OK) s = pxl_buffer_create_readback(ctx, sizeof(int32_t), &rb[1]);
    if (s == PXL_OK) s = pxl_tensor_slice(ctx, hist, 0, 1, &h0);
    if (s == PXL_OK) s = pxl_tensor_write(ctx, h0, &first, sizeof first);
    int stopped = 0;
    for (size_t i = 0; i < n && s == PXL_OK && !stopped; i++) {
        pxl_tensor *id = NULL, *next = NULL;
        s = pxl_tensor_slice(ctx, hist, (int64_t)i, 1, &id);
        if (s == PXL_OK) s = pxl_tensor_slice(ctx, hist, (int64_t)i + 1, 1, &next);
        m->gen_id = id;
        m->gen_next = next;
        m->gen_rb = rb[i & 1];
        if (s == PXL_OK) s = ahead_cut(m);
        if (s == PXL_OK) s = forward(m, NULL, start + (int64_t)i, 1, NULL, 0, 1);
        if (s == PXL_OK) s = pxl_recorder_end(m->ahead[m->n_ahead - 1]);
        m->gen_id = m->gen_next = NULL;
        m->gen_rb = NULL;
        pxl_tensor_free(id);
        pxl_tensor_free(next);
        s = ahead_submit(m, s);
        /* the previous pass's pick, while this one runs */
        if (s == PXL_OK && i > 0) {
            int32_t id_prev;
            s = pxl_buffer_read_back(ctx, rb[(i - 1) & 1], 0, &id_prev, sizeof id_prev);
            if (s == PXL_OK) stopped = greedy_took(o, id_prev, i - 1, out, n_out);
        }
    }
    if (s == PXL_OK && !stopped) {
        int32_t id_last;
        s = pxl_buffer_read_back(ctx, rb[(n - 1) & 1], 0, &id_last, sizeof id_last);
        if (s == PXL_OK) greedy_took(o, id_last, n - 1, out, n_out);
    }
    ahead_drop(m);
    pxl_tensor_free(h0);
    pxl_tensor_free(hist);
    pxl_buffer_free(rb[0]);
    pxl_buffer_free(rb[1]);
    /* the passes whose picks came back evaluated first and each pick but the last */
    m->n_past = start + (int64_t)*n_out;
    return s;
}

pxl_status pxl_llm_generate_greedy(pxl_llm *m, int32_t first, size_t n, const pxl_llm_greedy_options *opts,
                                   int32_t *out, size_t *n_out) {
    if (!m) return PXL_ERR_INVALID_ARG;
    PXL_REQUIRE(m->ctx, "pxl_llm_generate_greedy", n_out);
    pxl_buffer_unmap(m->ctx, m->logits_rb); /* a view's logits end here (pxl_llm_eval_view) */
    const pxl_llm_info *I = &m->info;
    pxl_llm_greedy_options o = {0};
    if (opts) o = *opts;
    *n_out = 0;
    if (n == 0) return pxl_fail(m->ctx, PXL_ERR_INVALID_ARG, "pxl_llm_generate_greedy: no tokens asked for");
    if ((uint64_t)n > (uint64_t)(I->n_ctx - m->n_past))
        return pxl_fail(m->ctx, PXL_ERR_INVALID_ARG,
                        "pxl_llm_generate_greedy: %zu tokens after %lld do not fit the context of %lld", n,
                        (long long)m->n_past, (long long)I->n_ctx);
    if (first < 0 || first >= I->n_vocab)
        return pxl_fail(m->ctx, PXL_ERR_INVALID_ARG,
                        "pxl_llm_generate_greedy: token %d is outside the vocabulary of %lld", first,
                        (long long)I->n_vocab);
    if (m->qkv1 && !pxl_ctx_tuning(m->ctx)->llm_ahead_off) return greedy_gpu(m, first, n, &o, out, n_out);
    return greedy_host(m, first, n, &o, out, n_out);
}
