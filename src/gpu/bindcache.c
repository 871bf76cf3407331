/*
 * What makes a repeated dispatch cheap to record: uniform slots keyed by
 * their content, and bind groups keyed by what they bind.
 *
 * Uniform slots. Dispatch parameters live in persistent 64 KiB uniform
 * blocks, one fixed-size slot per distinct parameter block (looked up by its
 * bytes), so a dispatch with the same parameters as an earlier one binds the
 * same place. A slot given new bytes is marked dirty in its block's host
 * mirror and written with one queue write per block just before the next
 * recorder submit (pxl_gpu_uniforms_flush). Queue writes are ordered with
 * submits, so a slot reused for new bytes never changes what an earlier
 * submit read. The least recently used slot is reused when all
 * PXL_USLOT_MAX are taken, never one used by the open recording or by a
 * recording ended and not yet submitted (their dispatches would read the
 * new bytes); when every slot is so taken, the dispatch carves its
 * parameters out of the recorder's own blocks instead (recorder.c) and its
 * bind group is not cached.
 *
 * Bind groups. Keyed by the kernel's id, each binding's (binding, buffer id,
 * offset, size) and the uniform slot's (binding, slot, size); ids are
 * serial numbers never reused in a context, so a freed kernel or buffer
 * cannot be mistaken for a new one at the same address. At most
 * PXL_BG_MAX are kept, the least recently used released first (a recording
 * that used one keeps its own reference: WebGPU objects live while
 * recorded work uses them). A buffer returned to the pool keeps its GPU
 * buffer, so its bind groups stay valid; when the GPU buffer is destroyed
 * its bind groups are released (pxl_gpu_bind_groups_forget).
 *
 * Both tables are hash chains over index arrays with an LRU list; indices
 * are stored + 1 so that 0 means none.
 */
#include "gpu_internal.h"

#include <string.h>

static uint64_t mix64(uint64_t h) {
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 29);
}

static uint64_t rotl(uint64_t x, int r) { return x << r | x >> (64 - r); }

/* A hash of n words in two independent lanes (one multiply per word), mixed
 * once at the end: this runs twice for every dispatch recorded. */
static uint64_t words_hash(const uint64_t *w, size_t n, uint64_t seed) {
    uint64_t a = seed ^ n, b = 0x243f6a8885a308d3ull;
    size_t i = 0;
    for (; i + 2 <= n; i += 2) {
        a = rotl((a ^ w[i]) * 0x9e3779b97f4a7c15ull, 29);
        b = rotl((b ^ w[i + 1]) * 0x94d049bb133111ebull, 31);
    }
    if (i < n) a = rotl((a ^ w[i]) * 0x9e3779b97f4a7c15ull, 29);
    return mix64(a ^ rotl(b, 17));
}

static uint64_t bytes_hash(const void *data, size_t n) {
    uint64_t w[PXL_UNIFORM_MAX / 8]; /* n <= PXL_UNIFORM_MAX (recorder.c checks) */
    if (n == 0) return mix64(n);
    size_t nw = (n + 7) / 8;
    w[nw - 1] = 0;
    memcpy(w, data, n);
    return words_hash(w, nw, 0x13198a2e03707344ull ^ n);
}

/* ---- LRU lists over index arrays (links are index + 1) ---------------------------- */

#define LRU_UNLINK(arr, head, tail, i)                                                     \
    do {                                                                                   \
        uint32_t p_ = (arr)[i].prev, n_ = (arr)[i].next;                                   \
        if (p_) (arr)[p_ - 1].next = n_;                                                   \
        else (head) = n_;                                                                  \
        if (n_) (arr)[n_ - 1].prev = p_;                                                   \
        else (tail) = p_;                                                                  \
        (arr)[i].prev = (arr)[i].next = 0;                                                 \
    } while (0)

#define LRU_PUSH_FRONT(arr, head, tail, i)                                                 \
    do {                                                                                   \
        (arr)[i].prev = 0;                                                                 \
        (arr)[i].next = (head);                                                            \
        if (head) (arr)[(head) - 1].prev = (uint32_t)(i) + 1;                              \
        (head) = (uint32_t)(i) + 1;                                                        \
        if (!(tail)) (tail) = (uint32_t)(i) + 1;                                           \
    } while (0)

/* ---- uniform slots ------------------------------------------------------------------ */

/* Slots are PXL_UNIFORM_MAX (256) bytes apart: a multiple of the uniform
 * offset alignment, which WebGPU caps at 256 (src/gpu/device.c refuses an
 * adapter that reports more), so slot addresses are shifts and masks. */
static uint32_t slot_stride(const pxl_gpu *g) {
    (void)g;
    return PXL_UNIFORM_MAX;
}

static uint8_t *slot_data(pxl_gpu *g, uint32_t i, pxl_uniform_block **block, uint32_t *offset) {
    uint32_t stride = slot_stride(g), per = PXL_UNIFORM_BLOCK_SIZE / stride;
    pxl_uniform_block *b = g->uslot_blocks[i / per];
    *offset = (i % per) * stride;
    if (block) *block = b;
    return b->data + *offset;
}

static void bucket_remove_slot(pxl_gpu *g, uint32_t i) {
    uint32_t *link = &g->uslot_buckets[g->uslots[i].hash & (PXL_USLOT_BUCKETS - 1)];
    while (*link && *link != i + 1) link = &g->uslots[*link - 1].hnext;
    if (*link) *link = g->uslots[i].hnext;
    g->uslots[i].hnext = 0;
}

/* A new slot index (a fresh one, or the LRU one not used by the open
 * recording, unlinked); -1 when there is none or out of memory. */
static int64_t slot_take(pxl_gpu *g) {
    uint32_t stride = slot_stride(g), per = PXL_UNIFORM_BLOCK_SIZE / stride;
    if (g->n_uslots < PXL_USLOT_MAX &&
        g->n_uslots / per < sizeof g->uslot_blocks / sizeof g->uslot_blocks[0]) {
        uint32_t i = g->n_uslots;
        if (i % per == 0) {
            pxl_uniform_block *b = pxl_gpu_uniform_block_new(g);
            if (!b) return -1;
            b->dirty_lo = UINT32_MAX;
            b->dirty_hi = 0;
            g->uslot_blocks[i / per] = b;
        }
        g->n_uslots++;
        memset(&g->uslots[i], 0, sizeof g->uslots[i]);
        return i;
    }
    /* slots used by the open recording, or since the oldest recording that
     * pxl_recorder_end closed, keep their bytes until those are submitted */
    uint64_t guard = g->ended_serial ? g->ended_serial : g->open_serial;
    uint32_t t = g->uslot_tail;
    if (!t || (guard && g->uslots[t - 1].last_use >= guard)) return -1;
    uint32_t i = t - 1;
    bucket_remove_slot(g, i);
    LRU_UNLINK(g->uslots, g->uslot_head, g->uslot_tail, i);
    return i;
}

int64_t pxl_gpu_uniform_slot(pxl_gpu *g, const void *data, size_t size, pxl_uniform_block **block,
                             uint32_t *offset) {
    if (!g->uslots) {
        g->uslots = pxl_calloc(g->ctx, PXL_USLOT_MAX, sizeof *g->uslots);
        g->uslot_buckets = pxl_calloc(g->ctx, PXL_USLOT_BUCKETS, sizeof *g->uslot_buckets);
        if (!g->uslots || !g->uslot_buckets) {
            pxl_free(g->ctx, g->uslots);
            pxl_free(g->ctx, g->uslot_buckets);
            g->uslots = NULL;
            g->uslot_buckets = NULL;
            return -1;
        }
    }
    uint64_t h = bytes_hash(data, size);
    for (uint32_t l = g->uslot_buckets[h & (PXL_USLOT_BUCKETS - 1)]; l; l = g->uslots[l - 1].hnext) {
        pxl_uslot *s = &g->uslots[l - 1];
        if (s->hash != h || s->size != size) continue;
        uint8_t *p = slot_data(g, l - 1, block, offset);
        if (memcmp(p, data, size) != 0) continue;
        s->last_use = g->open_serial;
        LRU_UNLINK(g->uslots, g->uslot_head, g->uslot_tail, l - 1);
        LRU_PUSH_FRONT(g->uslots, g->uslot_head, g->uslot_tail, l - 1);
        g->stats.uniform_slot_hits++;
        return l - 1;
    }
    int64_t i = slot_take(g);
    if (i < 0) return -1;
    g->stats.uniform_slot_misses++;
    pxl_uslot *s = &g->uslots[i];
    s->hash = h;
    s->size = (uint32_t)size;
    s->last_use = g->open_serial;
    s->hnext = g->uslot_buckets[h & (PXL_USLOT_BUCKETS - 1)];
    g->uslot_buckets[h & (PXL_USLOT_BUCKETS - 1)] = (uint32_t)i + 1;
    LRU_PUSH_FRONT(g->uslots, g->uslot_head, g->uslot_tail, (uint32_t)i);
    pxl_uniform_block *b;
    uint8_t *p = slot_data(g, (uint32_t)i, &b, offset);
    uint32_t bound = (uint32_t)((size + 15) / 16 * 16);
    memset(p, 0, bound);
    memcpy(p, data, size);
    if (*offset < b->dirty_lo) b->dirty_lo = *offset;
    if (*offset + bound > b->dirty_hi) b->dirty_hi = *offset + bound;
    *block = b;
    return i;
}

void pxl_gpu_uniforms_flush(pxl_gpu *g) {
    uint32_t per = PXL_UNIFORM_BLOCK_SIZE / slot_stride(g);
    for (uint32_t k = 0; k * per < g->n_uslots; k++) {
        pxl_uniform_block *b = g->uslot_blocks[k];
        if (b->dirty_hi <= b->dirty_lo) continue;
        g->fn.QueueWriteBuffer(g->queue, b->handle, b->dirty_lo, b->data + b->dirty_lo, b->dirty_hi - b->dirty_lo);
        b->dirty_lo = UINT32_MAX;
        b->dirty_hi = 0;
    }
}

/* ---- bind groups ---------------------------------------------------------------------- */

static void bg_bucket_remove(pxl_gpu *g, uint32_t i) {
    uint32_t *link = &g->bg_buckets[g->bgs[i].hash & (PXL_BG_BUCKETS - 1)];
    while (*link && *link != i + 1) link = &g->bgs[*link - 1].hnext;
    if (*link) *link = g->bgs[i].hnext;
    g->bgs[i].hnext = 0;
}

/* Drops entry i (its bind group released) and puts it on the free list. */
static void bg_drop(pxl_gpu *g, uint32_t i) {
    pxl_bg_entry *e = &g->bgs[i];
    bg_bucket_remove(g, i);
    LRU_UNLINK(g->bgs, g->bg_head, g->bg_tail, i);
    if (e->group) g->fn.BindGroupRelease(e->group);
    e->group = NULL;
    e->key_len = 0;
    e->next = g->bg_free;
    g->bg_free = i + 1;
    g->n_bgs_live--;
}

/* key: [kernel id, n], then per entry [binding | kind << 32, id, offset, size] */
#define BG_KEY_HEAD 2u

WGPUBindGroup pxl_gpu_bind_group(pxl_gpu *g, const pxl_kernel *k, const WGPUBindGroupEntry *e, size_t n,
                                 const uint64_t *ids) {
    if (!g->bgs) {
        g->bgs = pxl_calloc(g->ctx, PXL_BG_MAX, sizeof *g->bgs);
        g->bg_buckets = pxl_calloc(g->ctx, PXL_BG_BUCKETS, sizeof *g->bg_buckets);
        if (!g->bgs || !g->bg_buckets) {
            pxl_free(g->ctx, g->bgs);
            pxl_free(g->ctx, g->bg_buckets);
            g->bgs = NULL;
            g->bg_buckets = NULL;
            return NULL;
        }
    }
    uint64_t key[BG_KEY_HEAD + 4 * PXL_BG_MAX_ENTRIES];
    uint32_t len = BG_KEY_HEAD;
    key[0] = k->id;
    key[1] = n;
    for (size_t i = 0; i < n; i++) {
        key[len++] = e[i].binding;
        key[len++] = ids[i];
        key[len++] = e[i].offset;
        key[len++] = e[i].size;
    }
    uint64_t h = words_hash(key, len, 0x452821e638d01377ull);
    for (uint32_t l = g->bg_buckets[h & (PXL_BG_BUCKETS - 1)]; l; l = g->bgs[l - 1].hnext) {
        pxl_bg_entry *c = &g->bgs[l - 1];
        if (c->hash != h || c->key_len != len || memcmp(c->key, key, len * sizeof key[0]) != 0) continue;
        LRU_UNLINK(g->bgs, g->bg_head, g->bg_tail, l - 1);
        LRU_PUSH_FRONT(g->bgs, g->bg_head, g->bg_tail, l - 1);
        g->stats.bind_group_hits++;
        return c->group;
    }
    g->stats.bind_group_misses++;
    WGPUBindGroupDescriptor bd;
    memset(&bd, 0, sizeof bd);
    bd.layout = k->layout;
    bd.entryCount = n;
    bd.entries = e;
    WGPUBindGroup bg = g->fn.DeviceCreateBindGroup(g->device, &bd);
    if (!bg) return NULL;
    uint32_t i;
    if (g->bg_free) {
        i = g->bg_free - 1;
        g->bg_free = g->bgs[i].next;
    } else if (g->n_bgs < PXL_BG_MAX) {
        i = g->n_bgs++;
    } else {
        bg_drop(g, g->bg_tail - 1);
        i = g->bg_free - 1;
        g->bg_free = g->bgs[i].next;
    }
    pxl_bg_entry *c = &g->bgs[i];
    c->hash = h;
    c->key_len = len;
    memcpy(c->key, key, len * sizeof key[0]);
    c->group = bg;
    c->hnext = g->bg_buckets[h & (PXL_BG_BUCKETS - 1)];
    g->bg_buckets[h & (PXL_BG_BUCKETS - 1)] = i + 1;
    LRU_PUSH_FRONT(g->bgs, g->bg_head, g->bg_tail, i);
    g->n_bgs_live++;
    return bg;
}

void pxl_gpu_bind_groups_forget(pxl_gpu *g, uint64_t buffer_id) {
    if (!g->bgs || !g->n_bgs_live) return;
    for (uint32_t i = 0; i < g->n_bgs; i++) {
        pxl_bg_entry *c = &g->bgs[i];
        if (!c->group) continue;
        for (uint32_t w = BG_KEY_HEAD + 1; w < c->key_len; w += 4) {
            if (c->key[w] == buffer_id) {
                bg_drop(g, i);
                break;
            }
        }
    }
}

void pxl_gpu_bind_cache_release(pxl_gpu *g) {
    if (g->bgs)
        for (uint32_t i = 0; i < g->n_bgs; i++)
            if (g->bgs[i].group) g->fn.BindGroupRelease(g->bgs[i].group);
    pxl_free(g->ctx, g->bgs);
    pxl_free(g->ctx, g->bg_buckets);
    g->bgs = NULL;
    g->bg_buckets = NULL;
    g->n_bgs = g->n_bgs_live = 0;
    g->bg_head = g->bg_tail = g->bg_free = 0;
    uint32_t per = PXL_UNIFORM_BLOCK_SIZE / slot_stride(g);
    for (uint32_t k = 0; k * per < g->n_uslots; k++) pxl_gpu_uniform_block_destroy(g, g->uslot_blocks[k]);
    pxl_free(g->ctx, g->uslots);
    pxl_free(g->ctx, g->uslot_buckets);
    g->uslots = NULL;
    g->uslot_buckets = NULL;
    g->n_uslots = 0;
    g->uslot_head = g->uslot_tail = 0;
}
