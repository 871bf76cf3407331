/*
 * GGUF files (pxl/llm.h): the reader (over a read-only mapping or caller
 * memory) and the writer (version 3, built in memory, written atomically by
 * pxl_file_write).
 *
 * The reader trusts nothing: every read is checked against the length, every
 * size computation is overflow-checked, and a count is checked against the
 * bytes left before anything is allocated for it (each key takes at least 13
 * bytes, each tensor info 32, each string 8). Keys and tensor names are
 * copied, NUL-terminated, into one arena; both get an open-addressing hash
 * index (duplicates are a format error). String arrays get a table of their
 * elements' offsets at parse time, so element j is O(1).
 *
 * Every ggml type number with a block layout (the IQ, TQ and MXFP4 types
 * included, though pxl runs none of them: the model loader refuses those)
 * gets its tensors sized and bounds-checked, so such files open for their
 * metadata and tokenizer. A type number without a known layout (removed or
 * unknown numbers) is refused at open with PXL_ERR_UNSUPPORTED naming the
 * tensor and the type number: the reader promises every tensor's byte size.
 */
#include "llm_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- types ------------------------------------------------------------------------ */

const char *pxl_gguf_type_name(pxl_gguf_type t) {
    switch (t) {
    case PXL_GGUF_UINT8: return "uint8";
    case PXL_GGUF_INT8: return "int8";
    case PXL_GGUF_UINT16: return "uint16";
    case PXL_GGUF_INT16: return "int16";
    case PXL_GGUF_UINT32: return "uint32";
    case PXL_GGUF_INT32: return "int32";
    case PXL_GGUF_FLOAT32: return "float32";
    case PXL_GGUF_BOOL: return "bool";
    case PXL_GGUF_STRING: return "string";
    case PXL_GGUF_ARRAY: return "array";
    case PXL_GGUF_UINT64: return "uint64";
    case PXL_GGUF_INT64: return "int64";
    case PXL_GGUF_FLOAT64: return "float64";
    }
    return "?";
}

/* Bytes of a fixed-size metadata type; 0 for string, array and unknown numbers. */
static size_t gguf_scalar_size(uint32_t t) {
    switch (t) {
    case PXL_GGUF_UINT8: case PXL_GGUF_INT8: case PXL_GGUF_BOOL: return 1;
    case PXL_GGUF_UINT16: case PXL_GGUF_INT16: return 2;
    case PXL_GGUF_UINT32: case PXL_GGUF_INT32: case PXL_GGUF_FLOAT32: return 4;
    case PXL_GGUF_UINT64: case PXL_GGUF_INT64: case PXL_GGUF_FLOAT64: return 8;
    default: return 0;
    }
}

static int gguf_is_int(uint32_t t) {
    return t == PXL_GGUF_UINT8 || t == PXL_GGUF_INT8 || t == PXL_GGUF_UINT16 || t == PXL_GGUF_INT16 ||
           t == PXL_GGUF_UINT32 || t == PXL_GGUF_INT32 || t == PXL_GGUF_UINT64 || t == PXL_GGUF_INT64 ||
           t == PXL_GGUF_BOOL;
}

static int gguf_is_float(uint32_t t) { return t == PXL_GGUF_FLOAT32 || t == PXL_GGUF_FLOAT64; }

typedef struct { const char *name; uint32_t blk, bytes; } ggml_layout;

static ggml_layout ggml_layout_of(uint32_t type) {
    switch (type) {
    case PXL_GGML_F32: return (ggml_layout){"F32", 1, 4};
    case PXL_GGML_F16: return (ggml_layout){"F16", 1, 2};
    case PXL_GGML_BF16: return (ggml_layout){"BF16", 1, 2};
    case PXL_GGML_Q4_0: return (ggml_layout){"Q4_0", 32, 18};
    case PXL_GGML_Q4_1: return (ggml_layout){"Q4_1", 32, 20};
    case PXL_GGML_Q5_0: return (ggml_layout){"Q5_0", 32, 22};
    case PXL_GGML_Q5_1: return (ggml_layout){"Q5_1", 32, 24};
    case PXL_GGML_Q8_0: return (ggml_layout){"Q8_0", 32, 34};
    case PXL_GGML_Q8_1: return (ggml_layout){"Q8_1", 32, 36};
    case PXL_GGML_Q2_K: return (ggml_layout){"Q2_K", 256, 84};
    case PXL_GGML_Q3_K: return (ggml_layout){"Q3_K", 256, 110};
    case PXL_GGML_Q4_K: return (ggml_layout){"Q4_K", 256, 144};
    case PXL_GGML_Q5_K: return (ggml_layout){"Q5_K", 256, 176};
    case PXL_GGML_Q6_K: return (ggml_layout){"Q6_K", 256, 210};
    case PXL_GGML_Q8_K: return (ggml_layout){"Q8_K", 256, 292};
    case PXL_GGML_I8: return (ggml_layout){"I8", 1, 1};
    case PXL_GGML_I16: return (ggml_layout){"I16", 1, 2};
    case PXL_GGML_I32: return (ggml_layout){"I32", 1, 4};
    case PXL_GGML_I64: return (ggml_layout){"I64", 1, 8};
    case PXL_GGML_F64: return (ggml_layout){"F64", 1, 8};
    /* layouts pxl has no kernel for: their tensors are sized and bounds-checked
     * like all others, and the model loader refuses them */
    case PXL_GGML_IQ2_XXS: return (ggml_layout){"IQ2_XXS", 256, 66};
    case PXL_GGML_IQ2_XS: return (ggml_layout){"IQ2_XS", 256, 74};
    case PXL_GGML_IQ3_XXS: return (ggml_layout){"IQ3_XXS", 256, 98};
    case PXL_GGML_IQ1_S: return (ggml_layout){"IQ1_S", 256, 50};
    case PXL_GGML_IQ4_NL: return (ggml_layout){"IQ4_NL", 32, 18};
    case PXL_GGML_IQ3_S: return (ggml_layout){"IQ3_S", 256, 110};
    case PXL_GGML_IQ2_S: return (ggml_layout){"IQ2_S", 256, 82};
    case PXL_GGML_IQ4_XS: return (ggml_layout){"IQ4_XS", 256, 136};
    case PXL_GGML_IQ1_M: return (ggml_layout){"IQ1_M", 256, 56};
    case PXL_GGML_TQ1_0: return (ggml_layout){"TQ1_0", 256, 54};
    case PXL_GGML_TQ2_0: return (ggml_layout){"TQ2_0", 256, 66};
    case PXL_GGML_MXFP4: return (ggml_layout){"MXFP4", 32, 17};
    /* 4, 5, 31-33 and 36-38 are numbers ggml removed: no layout, refused at open */
    default: return (ggml_layout){"unknown", 0, 0};
    }
}

const char *pxl_ggml_type_name(uint32_t type) { return ggml_layout_of(type).name; }
uint32_t pxl_ggml_block_elems(uint32_t type) { return ggml_layout_of(type).blk; }
uint32_t pxl_ggml_block_bytes(uint32_t type) { return ggml_layout_of(type).bytes; }

/* Bytes of a tensor of a known type and shape (ne[0..ndim) >= 0). 0 with
 * *why set when the shape does not fit the type or the size overflows. */
static int ggml_tensor_bytes(uint32_t type, int ndim, const int64_t *ne, uint64_t *bytes, const char **why) {
    ggml_layout l = ggml_layout_of(type);
    if (l.blk == 0) {
        *why = "unsupported type";
        return 0;
    }
    if (ne[0] % (int64_t)l.blk != 0) {
        *why = "row length not a multiple of the type's block size";
        return 0;
    }
    uint64_t b = (uint64_t)ne[0] / l.blk, n = (uint64_t)ne[0];
    if (__builtin_mul_overflow(b, (uint64_t)l.bytes, &b)) goto overflow;
    for (int d = 1; d < ndim; d++) {
        if (__builtin_mul_overflow(b, (uint64_t)ne[d], &b)) goto overflow;
        if (__builtin_mul_overflow(n, (uint64_t)ne[d], &n)) goto overflow;
    }
    if (n > (uint64_t)INT64_MAX) goto overflow;
    *bytes = b;
    return 1;
overflow:
    *why = "size overflows";
    return 0;
}

/* ---- little-endian loads ---------------------------------------------------------- */

static uint16_t ld16(const uint8_t *p) { return (uint16_t)(p[0] | (unsigned)p[1] << 8); }
static uint32_t ld32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t ld64(const uint8_t *p) { return (uint64_t)ld32(p) | (uint64_t)ld32(p + 4) << 32; }

/* ---- the reader ------------------------------------------------------------------- */

typedef struct gguf_kv {
    const char *key;     /* in the arena (set when parsing ends) */
    size_t key_off;      /* the key's offset in the arena */
    size_t key_len;
    uint64_t at;         /* byte offset of the key in the file (messages) */
    pxl_gguf_type type;
    pxl_gguf_type elem;  /* arrays: element type */
    uint64_t n;          /* strings: length; arrays: element count */
    const uint8_t *val;  /* scalars: the value; strings: the bytes; arrays: the first element */
    uint64_t *str_at;    /* arrays of strings: each element's offset from val (its length field) */
} gguf_kv;

typedef struct gguf_index {
    size_t *slot; /* entry index + 1; 0 is empty */
    size_t mask;
} gguf_index;

struct pxl_gguf {
    pxl_ctx *ctx;
    const uint8_t *data;
    uint64_t size;
    void *map; /* pxl_gguf_open's mapping, or NULL */
    size_t map_len;
    uint32_t version, alignment;
    uint64_t data_offset;
    size_t n_kv, n_tensors;
    gguf_kv *kv;
    pxl_gguf_tensor *tensors;
    size_t *tensor_name_off; /* arena offsets while parsing */
    char *arena;
    size_t arena_len, arena_cap;
    gguf_index kidx, tidx;
};

static uint64_t fnv1a(const char *s, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
    return h;
}

static pxl_status index_init(pxl_gguf *g, gguf_index *ix, size_t n) {
    size_t cap = 16;
    while (cap < n * 2 + 1) cap *= 2; /* n is bounded by the file's size / 13, so no overflow */
    ix->slot = pxl_calloc(g->ctx, cap, sizeof *ix->slot);
    if (!ix->slot) return pxl_fail(g->ctx, PXL_ERR_OUT_OF_MEMORY, "gguf: out of memory for an index of %zu names", n);
    ix->mask = cap - 1;
    return PXL_OK;
}

/* Finds name in ix (names[] are arena offsets with lengths); returns the slot. */
static size_t index_slot(const pxl_gguf *g, const gguf_index *ix, const char *name, size_t len, int tensors,
                         size_t *found) {
    size_t i = (size_t)fnv1a(name, len) & ix->mask;
    *found = 0;
    for (;;) {
        size_t e = ix->slot[i];
        if (!e) return i;
        const char *en;
        size_t elen;
        if (tensors) {
            en = g->arena + g->tensor_name_off[e - 1];
            elen = strlen(en);
        } else {
            en = g->arena + g->kv[e - 1].key_off;
            elen = g->kv[e - 1].key_len;
        }
        if (elen == len && memcmp(en, name, len) == 0) {
            *found = e;
            return i;
        }
        i = (i + 1) & ix->mask;
    }
}

typedef struct gguf_cur {
    pxl_gguf *g;
    uint64_t pos;
    char what[160]; /* what is being read, for messages: "header", "key 'x'", ... */
} gguf_cur;

static pxl_status cur_fail(gguf_cur *c, uint64_t at, const char *fmt, ...) PXL_PRINTF(3, 4);
static pxl_status cur_fail(gguf_cur *c, uint64_t at, const char *fmt, ...) {
    char msg[PXL_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return pxl_fail(c->g->ctx, PXL_ERR_FORMAT, "gguf: %s at byte %llu: %s", c->what, (unsigned long long)at, msg);
}

/* Checks that n bytes remain at the cursor and returns a pointer to them. */
static pxl_status cur_take(gguf_cur *c, uint64_t n, const char *field, const uint8_t **p) {
    uint64_t left = c->g->size - c->pos;
    if (n > left)
        return cur_fail(c, c->pos, "truncated: %s needs %llu bytes, %llu left in the file's %llu", field,
                        (unsigned long long)n, (unsigned long long)left, (unsigned long long)c->g->size);
    *p = c->g->data + c->pos;
    c->pos += n;
    return PXL_OK;
}

static pxl_status cur_u32(gguf_cur *c, const char *field, uint32_t *v) {
    const uint8_t *p = NULL;
    pxl_status s = cur_take(c, 4, field, &p);
    if (s == PXL_OK) *v = ld32(p);
    return s;
}

static pxl_status cur_u64(gguf_cur *c, const char *field, uint64_t *v) {
    const uint8_t *p = NULL;
    pxl_status s = cur_take(c, 8, field, &p);
    if (s == PXL_OK) *v = ld64(p);
    return s;
}

/* A string: length, then bytes (not NUL-terminated). */
static pxl_status cur_str(gguf_cur *c, const char *field, const uint8_t **p, uint64_t *len) {
    pxl_status s = cur_u64(c, field, len);
    if (s != PXL_OK) return s;
    return cur_take(c, *len, field, p);
}

/* Copies a name (key or tensor name) into the arena; refuses empty names and NUL bytes. */
static pxl_status arena_name(gguf_cur *c, uint64_t at, const uint8_t *p, uint64_t len, size_t *off) {
    pxl_gguf *g = c->g;
    if (len == 0) return cur_fail(c, at, "empty name");
    if (memchr(p, 0, (size_t)len)) return cur_fail(c, at, "the name holds a NUL byte");
    size_t need = g->arena_len + (size_t)len + 1; /* len <= file size, the arena holds parts of the file */
    if (need > g->arena_cap) {
        size_t cap = g->arena_cap ? g->arena_cap : 256;
        while (cap < need) cap *= 2;
        char *a = pxl_realloc(g->ctx, g->arena, cap);
        if (!a) return pxl_fail(g->ctx, PXL_ERR_OUT_OF_MEMORY, "gguf: out of memory for names (%zu bytes)", cap);
        g->arena = a;
        g->arena_cap = cap;
    }
    memcpy(g->arena + g->arena_len, p, (size_t)len);
    g->arena[g->arena_len + len] = 0;
    *off = g->arena_len;
    g->arena_len = need;
    return PXL_OK;
}

/* "key 'name'" into c->what, the name cut at 96 bytes. */
static void cur_what(gguf_cur *c, const char *kind, const uint8_t *name, uint64_t len) {
    int n = len > 96 ? 96 : (int)len;
    snprintf(c->what, sizeof c->what, "%s '%.*s%s'", kind, n, (const char *)name, len > 96 ? "..." : "");
}

static pxl_status parse_value(gguf_cur *c, gguf_kv *kv, uint64_t at) {
    pxl_gguf *g = c->g;
    pxl_status s;
    uint32_t t;
    if ((s = cur_u32(c, "the value type", &t)) != PXL_OK) return s;
    if (t > PXL_GGUF_FLOAT64) return cur_fail(c, at, "unknown value type %u", t);
    kv->type = (pxl_gguf_type)t;
    if (t == PXL_GGUF_STRING) return cur_str(c, "the string value", &kv->val, &kv->n);
    if (t != PXL_GGUF_ARRAY) {
        kv->n = 1;
        if ((s = cur_take(c, gguf_scalar_size(t), "the value", &kv->val)) != PXL_OK) return s;
        if (t == PXL_GGUF_BOOL && kv->val[0] > 1) return cur_fail(c, at, "bool value %u (not 0 or 1)", kv->val[0]);
        return PXL_OK;
    }
    uint32_t et;
    if ((s = cur_u32(c, "the array element type", &et)) != PXL_OK) return s;
    if (et == PXL_GGUF_ARRAY) return cur_fail(c, at, "arrays of arrays are not supported");
    if (et > PXL_GGUF_FLOAT64) return cur_fail(c, at, "unknown array element type %u", et);
    kv->elem = (pxl_gguf_type)et;
    if ((s = cur_u64(c, "the array length", &kv->n)) != PXL_OK) return s;
    uint64_t left = g->size - c->pos;
    if (et == PXL_GGUF_STRING) {
        if (kv->n > left / 8)
            return cur_fail(c, at, "array of %llu strings, but only %llu bytes left", (unsigned long long)kv->n,
                            (unsigned long long)left);
        kv->val = g->data + c->pos;
        if (kv->n) {
            kv->str_at = pxl_calloc(g->ctx, (size_t)kv->n, sizeof *kv->str_at);
            if (!kv->str_at)
                return pxl_fail(g->ctx, PXL_ERR_OUT_OF_MEMORY, "gguf: %s: out of memory for %llu strings", c->what,
                                (unsigned long long)kv->n);
        }
        for (uint64_t j = 0; j < kv->n; j++) {
            kv->str_at[j] = c->pos - (uint64_t)(kv->val - g->data);
            const uint8_t *p = NULL;
            uint64_t len;
            if ((s = cur_str(c, "an array string", &p, &len)) != PXL_OK) return s;
        }
        return PXL_OK;
    }
    uint64_t esz = gguf_scalar_size(et), bytes;
    if (__builtin_mul_overflow(kv->n, esz, &bytes) || bytes > left)
        return cur_fail(c, at, "array of %llu %s, but only %llu bytes left", (unsigned long long)kv->n,
                        pxl_gguf_type_name(kv->elem), (unsigned long long)left);
    if ((s = cur_take(c, bytes, "the array", &kv->val)) != PXL_OK) return s;
    if (et == PXL_GGUF_BOOL)
        for (uint64_t j = 0; j < kv->n; j++)
            if (kv->val[j] > 1)
                return cur_fail(c, at, "bool element %llu is %u (not 0 or 1)", (unsigned long long)j, kv->val[j]);
    return PXL_OK;
}

static pxl_status parse_tensor(gguf_cur *c, size_t i) {
    pxl_gguf *g = c->g;
    pxl_gguf_tensor *t = &g->tensors[i];
    pxl_status s;
    uint64_t at = c->pos, len;
    const uint8_t *name = NULL;
    snprintf(c->what, sizeof c->what, "tensor #%zu", i);
    if ((s = cur_str(c, "the tensor name", &name, &len)) != PXL_OK) return s;
    cur_what(c, "tensor", name, len);
    if ((s = arena_name(c, at, name, len, &g->tensor_name_off[i])) != PXL_OK) return s;
    size_t found, slot = index_slot(g, &g->tidx, g->arena + g->tensor_name_off[i], (size_t)len, 1, &found);
    if (found) return cur_fail(c, at, "duplicate tensor name (also tensor #%zu)", found - 1);
    g->tidx.slot[slot] = i + 1;
    uint32_t nd;
    if ((s = cur_u32(c, "the number of dimensions", &nd)) != PXL_OK) return s;
    if (nd < 1 || nd > PXL_GGUF_MAX_DIMS) return cur_fail(c, at, "%u dimensions (1 to 4 allowed)", nd);
    t->ndim = (int)nd;
    for (int d = 0; d < PXL_GGUF_MAX_DIMS; d++) t->ne[d] = 1;
    for (uint32_t d = 0; d < nd; d++) {
        uint64_t v;
        if ((s = cur_u64(c, "a dimension", &v)) != PXL_OK) return s;
        if (v > (uint64_t)INT64_MAX) return cur_fail(c, at, "dimension %u is %llu", d, (unsigned long long)v);
        t->ne[d] = (int64_t)v;
    }
    if ((s = cur_u32(c, "the tensor type", &t->type)) != PXL_OK) return s;
    if ((s = cur_u64(c, "the tensor offset", &t->offset)) != PXL_OK) return s;
    if (pxl_ggml_block_elems(t->type) == 0)
        return pxl_fail(g->ctx, PXL_ERR_UNSUPPORTED, "gguf: %s: ggml type %u (%s) is not supported", c->what,
                        t->type, pxl_ggml_type_name(t->type));
    const char *why;
    if (!ggml_tensor_bytes(t->type, t->ndim, t->ne, &t->bytes, &why))
        return cur_fail(c, at, "%s [%lld x %lld x %lld x %lld]: %s", pxl_ggml_type_name(t->type), (long long)t->ne[0],
                        (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3], why);
    return PXL_OK;
}

static pxl_status parse_all(pxl_gguf *g) {
    gguf_cur cur = {.g = g, .pos = 0};
    gguf_cur *c = &cur;
    pxl_status s;
    const uint8_t *magic = NULL;
    snprintf(c->what, sizeof c->what, "header");
    if ((s = cur_take(c, 4, "the magic", &magic)) != PXL_OK) return s;
    if (memcmp(magic, "GGUF", 4) != 0) return cur_fail(c, 0, "not a GGUF file (bad magic)");
    if ((s = cur_u32(c, "the version", &g->version)) != PXL_OK) return s;
    if (g->version < PXL_GGUF_VERSION_MIN || g->version > PXL_GGUF_VERSION_MAX)
        return cur_fail(c, 4, "GGUF version %u is not supported (versions 2 and 3 are)", g->version);
    uint64_t nt, nkv;
    if ((s = cur_u64(c, "the tensor count", &nt)) != PXL_OK) return s;
    if ((s = cur_u64(c, "the key count", &nkv)) != PXL_OK) return s;
    uint64_t left = g->size - c->pos;
    /* each key takes at least 13 bytes (length, type, one byte), each tensor info 32 */
    if (nkv > left / 13)
        return cur_fail(c, 16, "%llu keys cannot fit in the %llu bytes left", (unsigned long long)nkv,
                        (unsigned long long)left);
    if (nt > (left - nkv * 13) / 32)
        return cur_fail(c, 8, "%llu tensors cannot fit in the %llu bytes left", (unsigned long long)nt,
                        (unsigned long long)left);
    g->n_kv = (size_t)nkv;
    g->n_tensors = (size_t)nt;
    g->kv = pxl_calloc(g->ctx, g->n_kv ? g->n_kv : 1, sizeof *g->kv);
    g->tensors = pxl_calloc(g->ctx, g->n_tensors ? g->n_tensors : 1, sizeof *g->tensors);
    g->tensor_name_off = pxl_calloc(g->ctx, g->n_tensors ? g->n_tensors : 1, sizeof *g->tensor_name_off);
    if (!g->kv || !g->tensors || !g->tensor_name_off)
        return pxl_fail(g->ctx, PXL_ERR_OUT_OF_MEMORY, "gguf: out of memory for %zu keys and %zu tensors", g->n_kv,
                        g->n_tensors);
    if ((s = index_init(g, &g->kidx, g->n_kv)) != PXL_OK) return s;
    if ((s = index_init(g, &g->tidx, g->n_tensors)) != PXL_OK) return s;

    g->alignment = PXL_GGUF_DEFAULT_ALIGNMENT;
    for (size_t i = 0; i < g->n_kv; i++) {
        gguf_kv *kv = &g->kv[i];
        const uint8_t *name = NULL;
        uint64_t len;
        kv->at = c->pos;
        snprintf(c->what, sizeof c->what, "key #%zu", i);
        if ((s = cur_str(c, "the key", &name, &len)) != PXL_OK) return s;
        cur_what(c, "key", name, len);
        if ((s = arena_name(c, kv->at, name, len, &kv->key_off)) != PXL_OK) return s;
        kv->key_len = (size_t)len;
        size_t found, slot = index_slot(g, &g->kidx, g->arena + kv->key_off, kv->key_len, 0, &found);
        if (found) return cur_fail(c, kv->at, "duplicate key (also key #%zu)", found - 1);
        g->kidx.slot[slot] = i + 1;
        if ((s = parse_value(c, kv, kv->at)) != PXL_OK) return s;
        if (len == 17 && memcmp(name, "general.alignment", 17) == 0) {
            if (kv->type != PXL_GGUF_UINT32)
                return cur_fail(c, kv->at, "is %s, not uint32", pxl_gguf_type_name(kv->type));
            uint32_t a = ld32(kv->val);
            if (a == 0 || (a & (a - 1)) != 0) return cur_fail(c, kv->at, "%u is not a power of two", a);
            g->alignment = a;
        }
    }
    for (size_t i = 0; i < g->n_tensors; i++)
        if ((s = parse_tensor(c, i)) != PXL_OK) return s;

    /* the data section: the first multiple of the alignment at or after the header */
    uint64_t a = g->alignment;
    g->data_offset = (c->pos + a - 1) / a * a; /* pos <= size < 2^63 */
    for (size_t i = 0; i < g->n_tensors; i++) {
        pxl_gguf_tensor *t = &g->tensors[i];
        const char *name = g->arena + g->tensor_name_off[i];
        uint64_t begin, end;
        if (t->offset % a != 0)
            return pxl_fail(g->ctx, PXL_ERR_FORMAT, "gguf: tensor '%.96s': offset %llu is not a multiple of the alignment %u",
                            name, (unsigned long long)t->offset, g->alignment);
        if (__builtin_add_overflow(g->data_offset, t->offset, &begin) || __builtin_add_overflow(begin, t->bytes, &end))
            return pxl_fail(g->ctx, PXL_ERR_FORMAT,
                            "gguf: tensor '%.96s': data at %llu + %llu (%llu bytes) overflows", name,
                            (unsigned long long)g->data_offset, (unsigned long long)t->offset,
                            (unsigned long long)t->bytes);
        if (end > g->size)
            return pxl_fail(g->ctx, PXL_ERR_FORMAT, "gguf: tensor '%.96s': data [%llu, %llu) beyond the file's %llu bytes",
                            name, (unsigned long long)begin, (unsigned long long)end, (unsigned long long)g->size);
        t->offset = begin;
        t->data = g->data + begin;
    }
    /* names are final: set the pointers into the arena */
    for (size_t i = 0; i < g->n_kv; i++) g->kv[i].key = g->arena + g->kv[i].key_off;
    for (size_t i = 0; i < g->n_tensors; i++) g->tensors[i].name = g->arena + g->tensor_name_off[i];
    return PXL_OK;
}

void pxl_gguf_free(pxl_gguf *g) {
    if (!g) return;
    pxl_ctx *ctx = g->ctx;
    if (g->kv)
        for (size_t i = 0; i < g->n_kv; i++) pxl_free(ctx, g->kv[i].str_at);
    pxl_free(ctx, g->kv);
    pxl_free(ctx, g->tensors);
    pxl_free(ctx, g->tensor_name_off);
    pxl_free(ctx, g->arena);
    pxl_free(ctx, g->kidx.slot);
    pxl_free(ctx, g->tidx.slot);
    if (g->map) munmap(g->map, g->map_len);
    pxl_free(ctx, g);
}

/* Parses g (data and size set); frees it on failure. */
static pxl_status gguf_finish(pxl_gguf *g, pxl_gguf **out) {
    pxl_status s = parse_all(g);
    if (s != PXL_OK) {
        pxl_gguf_free(g);
        return s;
    }
    *out = g;
    return PXL_OK;
}

pxl_status pxl_gguf_parse(pxl_ctx *ctx, const void *data, size_t size, pxl_gguf **out) {
    PXL_REQUIRE_CTX(ctx);
    PXL_REQUIRE(ctx, "pxl_gguf_parse", out);
    if (!data && size) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_gguf_parse: data is NULL");
    if ((uint64_t)size > (uint64_t)INT64_MAX)
        return pxl_fail(ctx, PXL_ERR_FORMAT, "gguf: %zu bytes is too large", size);
    pxl_gguf *g = pxl_calloc(ctx, 1, sizeof *g);
    if (!g) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "gguf: out of memory");
    g->ctx = ctx;
    g->data = data ? data : (const uint8_t *)"";
    g->size = size;
    return gguf_finish(g, out);
}

pxl_status pxl_gguf_open(pxl_ctx *ctx, const char *path, pxl_gguf **out) {
    PXL_REQUIRE_CTX(ctx);
    PXL_REQUIRE(ctx, "pxl_gguf_open", path);
    PXL_REQUIRE(ctx, "pxl_gguf_open", out);
    char why[PXL_ERR_MAX];
    struct stat st;
    int fd = pxl_open_regular(path, &st, why, sizeof why);
    if (fd < 0) return pxl_fail(ctx, PXL_ERR_IO, "%s", why);
    if (st.st_size <= 0) {
        close(fd);
        return pxl_fail(ctx, PXL_ERR_FORMAT, "%s: gguf: header at byte 0: truncated: the file is empty", path);
    }
    if ((uint64_t)st.st_size > (uint64_t)SIZE_MAX || (uint64_t)st.st_size > (uint64_t)INT64_MAX) {
        close(fd);
        return pxl_fail(ctx, PXL_ERR_FORMAT, "%s is too large to map (%lld bytes)", path, (long long)st.st_size);
    }
    size_t len = (size_t)st.st_size;
    void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    int err = errno;
    close(fd);
    if (map == MAP_FAILED) return pxl_fail(ctx, PXL_ERR_IO, "cannot map %s: %s", path, strerror(err));
    pxl_gguf *g = pxl_calloc(ctx, 1, sizeof *g);
    if (!g) {
        munmap(map, len);
        return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "gguf: out of memory opening %s", path);
    }
    g->ctx = ctx;
    g->map = map;
    g->map_len = len;
    g->data = map;
    g->size = len;
    pxl_status s = gguf_finish(g, out);
    if (s != PXL_OK) {
        char msg[PXL_ERR_MAX];
        pxl_copy_str(msg, sizeof msg, pxl_ctx_error(ctx));
        pxl_fail(ctx, s, "%s: %s", path, msg);
    }
    return s;
}

pxl_ctx *pxl_gguf_ctx(const pxl_gguf *g) { return g ? g->ctx : NULL; }
uint32_t pxl_gguf_version(const pxl_gguf *g) { return g ? g->version : 0; }
uint32_t pxl_gguf_alignment(const pxl_gguf *g) { return g ? g->alignment : 0; }
uint64_t pxl_gguf_data_offset(const pxl_gguf *g) { return g ? g->data_offset : 0; }
uint64_t pxl_gguf_file_size(const pxl_gguf *g) { return g ? g->size : 0; }
size_t pxl_gguf_n_kv(const pxl_gguf *g) { return g ? g->n_kv : 0; }
size_t pxl_gguf_n_tensors(const pxl_gguf *g) { return g ? g->n_tensors : 0; }

int64_t pxl_gguf_find_key(const pxl_gguf *g, const char *key) {
    if (!g || !key) return -1;
    size_t found;
    index_slot(g, &g->kidx, key, strlen(key), 0, &found);
    return found ? (int64_t)(found - 1) : -1;
}

int64_t pxl_gguf_find_tensor(const pxl_gguf *g, const char *name) {
    if (!g || !name) return -1;
    size_t found;
    index_slot(g, &g->tidx, name, strlen(name), 1, &found);
    return found ? (int64_t)(found - 1) : -1;
}

const char *pxl_gguf_key(const pxl_gguf *g, size_t i) { return g && i < g->n_kv ? g->kv[i].key : NULL; }
pxl_gguf_type pxl_gguf_kv_type(const pxl_gguf *g, size_t i) {
    return g && i < g->n_kv ? g->kv[i].type : (pxl_gguf_type)0;
}

const pxl_gguf_tensor *pxl_gguf_tensor_at(const pxl_gguf *g, size_t i) {
    return g && i < g->n_tensors ? &g->tensors[i] : NULL;
}

/* The kv at i, or a failure (g NULL: no message). */
static pxl_status kv_at(const pxl_gguf *g, size_t i, const char *fn, const gguf_kv **kv) {
    if (!g) return PXL_ERR_INVALID_ARG;
    if (i >= g->n_kv)
        return pxl_fail(g->ctx, PXL_ERR_INVALID_ARG, "%s: key index %zu out of range (%zu keys)", fn, i, g->n_kv);
    *kv = &g->kv[i];
    return PXL_OK;
}

static pxl_status mismatch(const pxl_gguf *g, const gguf_kv *kv, const char *want) {
    if (kv->type == PXL_GGUF_ARRAY)
        return pxl_fail(g->ctx, PXL_ERR_FORMAT, "gguf: key '%.96s' is an array of %s, not %s", kv->key,
                        pxl_gguf_type_name(kv->elem), want);
    return pxl_fail(g->ctx, PXL_ERR_FORMAT, "gguf: key '%.96s' is %s, not %s", kv->key, pxl_gguf_type_name(kv->type),
                    want);
}

/* A scalar of integer type t at p, as a sign and a magnitude-preserving pair. */
static void load_int(uint32_t t, const uint8_t *p, int *neg, uint64_t *u, int64_t *s) {
    *neg = 0;
    switch (t) {
    case PXL_GGUF_UINT8: case PXL_GGUF_BOOL: *u = p[0]; break;
    case PXL_GGUF_UINT16: *u = ld16(p); break;
    case PXL_GGUF_UINT32: *u = ld32(p); break;
    case PXL_GGUF_UINT64: *u = ld64(p); break;
    case PXL_GGUF_INT8: *s = (int8_t)p[0]; *neg = 1; break;
    case PXL_GGUF_INT16: *s = (int16_t)ld16(p); *neg = 1; break;
    case PXL_GGUF_INT32: *s = (int32_t)ld32(p); *neg = 1; break;
    default: *s = (int64_t)ld64(p); *neg = 1; break; /* INT64 */
    }
    if (*neg) {
        *neg = *s < 0;
        if (!*neg) *u = (uint64_t)*s;
    } else {
        *s = *u <= (uint64_t)INT64_MAX ? (int64_t)*u : 0;
    }
}

static pxl_status elem_int(const pxl_gguf *g, const gguf_kv *kv, uint32_t t, const uint8_t *p, int64_t *out) {
    int neg;
    uint64_t u = 0;
    int64_t s = 0;
    load_int(t, p, &neg, &u, &s);
    if (!neg && u > (uint64_t)INT64_MAX)
        return pxl_fail(g->ctx, PXL_ERR_FORMAT, "gguf: key '%.96s': %llu does not fit in int64", kv->key,
                        (unsigned long long)u);
    *out = s;
    return PXL_OK;
}

static double elem_float(uint32_t t, const uint8_t *p) {
    if (t == PXL_GGUF_FLOAT32) {
        uint32_t b = ld32(p);
        float f;
        memcpy(&f, &b, 4);
        return (double)f;
    }
    uint64_t b = ld64(p);
    double d;
    memcpy(&d, &b, 8);
    return d;
}

pxl_status pxl_gguf_kv_int(const pxl_gguf *g, size_t i, int64_t *out) {
    const gguf_kv *kv = NULL;
    pxl_status s = kv_at(g, i, "pxl_gguf_kv_int", &kv);
    if (s != PXL_OK) return s;
    PXL_REQUIRE(g->ctx, "pxl_gguf_kv_int", out);
    if (!gguf_is_int(kv->type)) return mismatch(g, kv, "an integer");
    return elem_int(g, kv, kv->type, kv->val, out);
}

pxl_status pxl_gguf_kv_uint(const pxl_gguf *g, size_t i, uint64_t *out) {
    const gguf_kv *kv = NULL;
    pxl_status s = kv_at(g, i, "pxl_gguf_kv_uint", &kv);
    if (s != PXL_OK) return s;
    PXL_REQUIRE(g->ctx, "pxl_gguf_kv_uint", out);
    if (!gguf_is_int(kv->type)) return mismatch(g, kv, "an integer");
    int neg;
    uint64_t u = 0;
    int64_t v = 0;
    load_int(kv->type, kv->val, &neg, &u, &v);
    if (neg)
        return pxl_fail(g->ctx, PXL_ERR_FORMAT, "gguf: key '%.96s': %lld is negative, an unsigned value was expected",
                        kv->key, (long long)v);
    *out = u;
    return PXL_OK;
}

pxl_status pxl_gguf_kv_float(const pxl_gguf *g, size_t i, double *out) {
    const gguf_kv *kv = NULL;
    pxl_status s = kv_at(g, i, "pxl_gguf_kv_float", &kv);
    if (s != PXL_OK) return s;
    PXL_REQUIRE(g->ctx, "pxl_gguf_kv_float", out);
    if (!gguf_is_float(kv->type)) return mismatch(g, kv, "a float");
    *out = elem_float(kv->type, kv->val);
    return PXL_OK;
}

pxl_status pxl_gguf_kv_string(const pxl_gguf *g, size_t i, const char **str, size_t *len) {
    const gguf_kv *kv = NULL;
    pxl_status s = kv_at(g, i, "pxl_gguf_kv_string", &kv);
    if (s != PXL_OK) return s;
    PXL_REQUIRE(g->ctx, "pxl_gguf_kv_string", str);
    PXL_REQUIRE(g->ctx, "pxl_gguf_kv_string", len);
    if (kv->type != PXL_GGUF_STRING) return mismatch(g, kv, "a string");
    *str = (const char *)kv->val;
    *len = (size_t)kv->n;
    return PXL_OK;
}

pxl_status pxl_gguf_kv_array(const pxl_gguf *g, size_t i, pxl_gguf_type *elem_type, uint64_t *n) {
    const gguf_kv *kv = NULL;
    pxl_status s = kv_at(g, i, "pxl_gguf_kv_array", &kv);
    if (s != PXL_OK) return s;
    PXL_REQUIRE(g->ctx, "pxl_gguf_kv_array", elem_type);
    PXL_REQUIRE(g->ctx, "pxl_gguf_kv_array", n);
    if (kv->type != PXL_GGUF_ARRAY)
        return pxl_fail(g->ctx, PXL_ERR_FORMAT, "gguf: key '%.96s' is %s, not an array", kv->key,
                        pxl_gguf_type_name(kv->type));
    *elem_type = kv->elem;
    *n = kv->n;
    return PXL_OK;
}

/* The array at i and element j's index checked; want names the getter's kind. */
static pxl_status arr_elem(const pxl_gguf *g, size_t i, uint64_t j, const char *fn, const gguf_kv **kv) {
    pxl_status s = kv_at(g, i, fn, kv);
    if (s != PXL_OK) return s;
    if ((*kv)->type != PXL_GGUF_ARRAY)
        return pxl_fail(g->ctx, PXL_ERR_FORMAT, "gguf: key '%.96s' is %s, not an array", (*kv)->key,
                        pxl_gguf_type_name((*kv)->type));
    if (j >= (*kv)->n)
        return pxl_fail(g->ctx, PXL_ERR_INVALID_ARG, "%s: element %llu of key '%.96s' out of range (%llu elements)", fn,
                        (unsigned long long)j, (*kv)->key, (unsigned long long)(*kv)->n);
    return PXL_OK;
}

pxl_status pxl_gguf_arr_int(const pxl_gguf *g, size_t i, uint64_t j, int64_t *out) {
    const gguf_kv *kv = NULL;
    pxl_status s = arr_elem(g, i, j, "pxl_gguf_arr_int", &kv);
    if (s != PXL_OK) return s;
    PXL_REQUIRE(g->ctx, "pxl_gguf_arr_int", out);
    if (!gguf_is_int(kv->elem)) return mismatch(g, kv, "an array of integers");
    return elem_int(g, kv, kv->elem, kv->val + j * gguf_scalar_size(kv->elem), out);
}

pxl_status pxl_gguf_arr_float(const pxl_gguf *g, size_t i, uint64_t j, double *out) {
    const gguf_kv *kv = NULL;
    pxl_status s = arr_elem(g, i, j, "pxl_gguf_arr_float", &kv);
    if (s != PXL_OK) return s;
    PXL_REQUIRE(g->ctx, "pxl_gguf_arr_float", out);
    if (!gguf_is_float(kv->elem)) return mismatch(g, kv, "an array of floats");
    *out = elem_float(kv->elem, kv->val + j * gguf_scalar_size(kv->elem));
    return PXL_OK;
}

pxl_status pxl_gguf_arr_string(const pxl_gguf *g, size_t i, uint64_t j, const char **str, size_t *len) {
    const gguf_kv *kv = NULL;
    pxl_status s = arr_elem(g, i, j, "pxl_gguf_arr_string", &kv);
    if (s != PXL_OK) return s;
    PXL_REQUIRE(g->ctx, "pxl_gguf_arr_string", str);
    PXL_REQUIRE(g->ctx, "pxl_gguf_arr_string", len);
    if (kv->elem != PXL_GGUF_STRING) return mismatch(g, kv, "an array of strings");
    const uint8_t *p = kv->val + kv->str_at[j]; /* checked at parse time */
    *len = (size_t)ld64(p);
    *str = (const char *)p + 8;
    return PXL_OK;
}

pxl_status pxl_gguf_arr_data(const pxl_gguf *g, size_t i, const void **data, size_t *elem_size) {
    const gguf_kv *kv = NULL;
    pxl_status s = kv_at(g, i, "pxl_gguf_arr_data", &kv);
    if (s != PXL_OK) return s;
    PXL_REQUIRE(g->ctx, "pxl_gguf_arr_data", data);
    PXL_REQUIRE(g->ctx, "pxl_gguf_arr_data", elem_size);
    if (kv->type != PXL_GGUF_ARRAY || kv->elem == PXL_GGUF_STRING)
        return mismatch(g, kv, "an array of fixed-size elements");
    *data = kv->val;
    *elem_size = gguf_scalar_size(kv->elem);
    return PXL_OK;
}

/* ---- the writer ------------------------------------------------------------------- */

typedef struct gguf_wtensor {
    char *name;
    uint32_t type;
    int ndim;
    int64_t ne[4];
    uint8_t *data;
    size_t bytes;
} gguf_wtensor;

struct pxl_gguf_writer {
    pxl_ctx *ctx;
    uint32_t alignment;
    uint8_t *meta; /* the serialised key/value pairs, in order */
    size_t meta_len, meta_cap;
    char **keys;
    size_t n_kv, keys_cap;
    gguf_wtensor *tensors;
    size_t n_tensors, tensors_cap;
};

pxl_status pxl_gguf_writer_create(pxl_ctx *ctx, pxl_gguf_writer **out) {
    PXL_REQUIRE_CTX(ctx);
    PXL_REQUIRE(ctx, "pxl_gguf_writer_create", out);
    pxl_gguf_writer *w = pxl_calloc(ctx, 1, sizeof *w);
    if (!w) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "gguf writer: out of memory");
    w->ctx = ctx;
    w->alignment = PXL_GGUF_DEFAULT_ALIGNMENT;
    *out = w;
    return PXL_OK;
}

void pxl_gguf_writer_free(pxl_gguf_writer *w) {
    if (!w) return;
    pxl_ctx *ctx = w->ctx;
    for (size_t i = 0; i < w->n_kv; i++) pxl_free(ctx, w->keys[i]);
    for (size_t i = 0; i < w->n_tensors; i++) {
        pxl_free(ctx, w->tensors[i].name);
        pxl_free(ctx, w->tensors[i].data);
    }
    pxl_free(ctx, w->keys);
    pxl_free(ctx, w->tensors);
    pxl_free(ctx, w->meta);
    pxl_free(ctx, w);
}

pxl_status pxl_gguf_writer_set_alignment(pxl_gguf_writer *w, uint32_t alignment) {
    if (!w) return PXL_ERR_INVALID_ARG;
    if (alignment == 0 || (alignment & (alignment - 1)) != 0)
        return pxl_fail(w->ctx, PXL_ERR_INVALID_ARG, "gguf writer: alignment %u is not a power of two", alignment);
    w->alignment = alignment;
    return PXL_OK;
}

/* Grows *buf (cap *cap) to hold need bytes; elem-sized elements. */
static int grow(pxl_ctx *ctx, void **buf, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 1;
    size_t nc = *cap ? *cap : 16;
    while (nc < need) {
        if (nc > SIZE_MAX / 2) return 0;
        nc *= 2;
    }
    size_t bytes;
    if (__builtin_mul_overflow(nc, elem, &bytes)) return 0;
    void *nb = pxl_realloc(ctx, *buf, bytes);
    if (!nb) return 0;
    *buf = nb;
    *cap = nc;
    return 1;
}

static pxl_status meta_put(pxl_gguf_writer *w, const void *p, size_t n) {
    size_t need;
    if (__builtin_add_overflow(w->meta_len, n, &need) || !grow(w->ctx, (void **)&w->meta, &w->meta_cap, need, 1))
        return pxl_fail(w->ctx, PXL_ERR_OUT_OF_MEMORY, "gguf writer: out of memory for metadata (%zu bytes)",
                        w->meta_len);
    if (n) memcpy(w->meta + w->meta_len, p, n);
    w->meta_len = need;
    return PXL_OK;
}

static void st32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void st64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static pxl_status meta_u32(pxl_gguf_writer *w, uint32_t v) {
    uint8_t b[4];
    st32(b, v);
    return meta_put(w, b, 4);
}

static pxl_status meta_str(pxl_gguf_writer *w, const char *s, size_t len) {
    uint8_t b[8];
    st64(b, len);
    pxl_status st = meta_put(w, b, 8);
    return st != PXL_OK ? st : meta_put(w, s, len);
}

/* Checks a new key (unique, not empty) and writes it with the value type;
 * on a later failure the caller rolls meta_len back to *mark. */
static pxl_status key_begin(pxl_gguf_writer *w, const char *fn, const char *key, uint32_t type, size_t *mark) {
    PXL_REQUIRE(w->ctx, fn, key);
    if (!key[0]) return pxl_fail(w->ctx, PXL_ERR_INVALID_ARG, "%s: empty key", fn);
    if (strcmp(key, "general.alignment") == 0)
        return pxl_fail(w->ctx, PXL_ERR_INVALID_ARG, "%s: general.alignment is set with pxl_gguf_writer_set_alignment", fn);
    for (size_t i = 0; i < w->n_kv; i++)
        if (strcmp(w->keys[i], key) == 0)
            return pxl_fail(w->ctx, PXL_ERR_INVALID_ARG, "%s: duplicate key '%.96s'", fn, key);
    if (!grow(w->ctx, (void **)&w->keys, &w->keys_cap, w->n_kv + 1, sizeof *w->keys))
        return pxl_fail(w->ctx, PXL_ERR_OUT_OF_MEMORY, "gguf writer: out of memory");
    *mark = w->meta_len;
    pxl_status s = meta_str(w, key, strlen(key));
    if (s == PXL_OK) s = meta_u32(w, type);
    if (s != PXL_OK) w->meta_len = *mark;
    return s;
}

/* Records the key once its value is written; rolls back on failure. */
static pxl_status key_end(pxl_gguf_writer *w, const char *key, size_t mark, pxl_status s) {
    if (s == PXL_OK) {
        char *k = pxl_strdup(w->ctx, key);
        if (!k) s = pxl_fail(w->ctx, PXL_ERR_OUT_OF_MEMORY, "gguf writer: out of memory");
        else w->keys[w->n_kv++] = k;
    }
    if (s != PXL_OK) w->meta_len = mark;
    return s;
}

static pxl_status put_scalar(pxl_gguf_writer *w, const char *fn, const char *key, pxl_gguf_type type, uint64_t bits) {
    size_t mark;
    pxl_status s = key_begin(w, fn, key, (uint32_t)type, &mark);
    if (s != PXL_OK) return s;
    uint8_t b[8];
    st64(b, bits);
    return key_end(w, key, mark, meta_put(w, b, gguf_scalar_size(type)));
}

pxl_status pxl_gguf_writer_add_uint(pxl_gguf_writer *w, const char *key, pxl_gguf_type type, uint64_t v) {
    if (!w) return PXL_ERR_INVALID_ARG;
    uint64_t max;
    switch (type) {
    case PXL_GGUF_UINT8: max = UINT8_MAX; break;
    case PXL_GGUF_UINT16: max = UINT16_MAX; break;
    case PXL_GGUF_UINT32: max = UINT32_MAX; break;
    case PXL_GGUF_UINT64: max = UINT64_MAX; break;
    case PXL_GGUF_INT8: max = INT8_MAX; break;
    case PXL_GGUF_INT16: max = INT16_MAX; break;
    case PXL_GGUF_INT32: max = INT32_MAX; break;
    case PXL_GGUF_INT64: max = INT64_MAX; break;
    default:
        return pxl_fail(w->ctx, PXL_ERR_INVALID_ARG, "pxl_gguf_writer_add_uint: %s is not an integer type",
                        pxl_gguf_type_name(type));
    }
    if (v > max)
        return pxl_fail(w->ctx, PXL_ERR_INVALID_ARG, "pxl_gguf_writer_add_uint: %llu does not fit in %s",
                        (unsigned long long)v, pxl_gguf_type_name(type));
    return put_scalar(w, "pxl_gguf_writer_add_uint", key, type, v);
}

pxl_status pxl_gguf_writer_add_int(pxl_gguf_writer *w, const char *key, pxl_gguf_type type, int64_t v) {
    if (!w) return PXL_ERR_INVALID_ARG;
    int64_t lo, hi;
    switch (type) {
    case PXL_GGUF_INT8: lo = INT8_MIN; hi = INT8_MAX; break;
    case PXL_GGUF_INT16: lo = INT16_MIN; hi = INT16_MAX; break;
    case PXL_GGUF_INT32: lo = INT32_MIN; hi = INT32_MAX; break;
    case PXL_GGUF_INT64: lo = INT64_MIN; hi = INT64_MAX; break;
    case PXL_GGUF_UINT8: lo = 0; hi = UINT8_MAX; break;
    case PXL_GGUF_UINT16: lo = 0; hi = UINT16_MAX; break;
    case PXL_GGUF_UINT32: lo = 0; hi = UINT32_MAX; break;
    case PXL_GGUF_UINT64: lo = 0; hi = INT64_MAX; break;
    default:
        return pxl_fail(w->ctx, PXL_ERR_INVALID_ARG, "pxl_gguf_writer_add_int: %s is not an integer type",
                        pxl_gguf_type_name(type));
    }
    if (v < lo || v > hi)
        return pxl_fail(w->ctx, PXL_ERR_INVALID_ARG, "pxl_gguf_writer_add_int: %lld does not fit in %s", (long long)v,
                        pxl_gguf_type_name(type));
    return put_scalar(w, "pxl_gguf_writer_add_int", key, type, (uint64_t)v);
}

pxl_status pxl_gguf_writer_add_float(pxl_gguf_writer *w, const char *key, pxl_gguf_type type, double v) {
    if (!w) return PXL_ERR_INVALID_ARG;
    uint64_t bits;
    if (type == PXL_GGUF_FLOAT32) {
        float f = (float)v;
        uint32_t b;
        memcpy(&b, &f, 4);
        bits = b;
    } else if (type == PXL_GGUF_FLOAT64) {
        memcpy(&bits, &v, 8);
    } else {
        return pxl_fail(w->ctx, PXL_ERR_INVALID_ARG, "pxl_gguf_writer_add_float: %s is not a float type",
                        pxl_gguf_type_name(type));
    }
    return put_scalar(w, "pxl_gguf_writer_add_float", key, type, bits);
}

pxl_status pxl_gguf_writer_add_bool(pxl_gguf_writer *w, const char *key, int v) {
    if (!w) return PXL_ERR_INVALID_ARG;
    return put_scalar(w, "pxl_gguf_writer_add_bool", key, PXL_GGUF_BOOL, v ? 1 : 0);
}

pxl_status pxl_gguf_writer_add_string(pxl_gguf_writer *w, const char *key, const char *str, size_t len) {
    if (!w) return PXL_ERR_INVALID_ARG;
    if (!str && len) return pxl_fail(w->ctx, PXL_ERR_INVALID_ARG, "pxl_gguf_writer_add_string: s is NULL");
    size_t mark;
    pxl_status s = key_begin(w, "pxl_gguf_writer_add_string", key, PXL_GGUF_STRING, &mark);
    if (s != PXL_OK) return s;
    return key_end(w, key, mark, meta_str(w, str ? str : "", len));
}

pxl_status pxl_gguf_writer_add_array(pxl_gguf_writer *w, const char *key, pxl_gguf_type elem_type, const void *data,
                                     uint64_t n) {
    if (!w) return PXL_ERR_INVALID_ARG;
    const char *fn = "pxl_gguf_writer_add_array";
    size_t esz = gguf_scalar_size(elem_type), bytes;
    if (!esz)
        return pxl_fail(w->ctx, PXL_ERR_INVALID_ARG, "%s: element type %s is not a fixed-size type", fn,
                        pxl_gguf_type_name(elem_type));
    if (n > SIZE_MAX || __builtin_mul_overflow((size_t)n, esz, &bytes))
        return pxl_fail(w->ctx, PXL_ERR_INVALID_ARG, "%s: %llu elements overflow", fn, (unsigned long long)n);
    if (!data && n) return pxl_fail(w->ctx, PXL_ERR_INVALID_ARG, "%s: data is NULL", fn);
    if (elem_type == PXL_GGUF_BOOL)
        for (size_t j = 0; j < bytes; j++)
            if (((const uint8_t *)data)[j] > 1)
                return pxl_fail(w->ctx, PXL_ERR_INVALID_ARG, "%s: bool element %zu is not 0 or 1", fn, j);
    size_t mark;
    pxl_status s = key_begin(w, fn, key, PXL_GGUF_ARRAY, &mark);
    if (s != PXL_OK) return s;
    uint8_t b[12];
    st32(b, (uint32_t)elem_type);
    st64(b + 4, n);
    s = meta_put(w, b, 12);
    if (s == PXL_OK) s = meta_put(w, data, bytes);
    return key_end(w, key, mark, s);
}

pxl_status pxl_gguf_writer_add_string_array(pxl_gguf_writer *w, const char *key, const char *const *strs,
                                            const size_t *lens, uint64_t n) {
    if (!w) return PXL_ERR_INVALID_ARG;
    const char *fn = "pxl_gguf_writer_add_string_array";
    if (!strs && n) return pxl_fail(w->ctx, PXL_ERR_INVALID_ARG, "%s: strs is NULL", fn);
    for (uint64_t j = 0; j < n; j++)
        if (!strs[j] && (!lens || lens[j]))
            return pxl_fail(w->ctx, PXL_ERR_INVALID_ARG, "%s: string %llu is NULL", fn, (unsigned long long)j);
    size_t mark;
    pxl_status s = key_begin(w, fn, key, PXL_GGUF_ARRAY, &mark);
    if (s != PXL_OK) return s;
    uint8_t b[12];
    st32(b, PXL_GGUF_STRING);
    st64(b + 4, n);
    s = meta_put(w, b, 12);
    for (uint64_t j = 0; j < n && s == PXL_OK; j++) {
        const char *str = strs[j] ? strs[j] : "";
        s = meta_str(w, str, lens ? lens[j] : strlen(str));
    }
    return key_end(w, key, mark, s);
}

pxl_status pxl_gguf_writer_add_tensor(pxl_gguf_writer *w, const char *name, uint32_t type, int ndim,
                                      const int64_t *ne, const void *data, size_t bytes) {
    if (!w) return PXL_ERR_INVALID_ARG;
    const char *fn = "pxl_gguf_writer_add_tensor";
    PXL_REQUIRE(w->ctx, fn, name);
    PXL_REQUIRE(w->ctx, fn, ne);
    if (!data && bytes) return pxl_fail(w->ctx, PXL_ERR_INVALID_ARG, "%s: data is NULL", fn);
    if (!name[0]) return pxl_fail(w->ctx, PXL_ERR_INVALID_ARG, "%s: empty tensor name", fn);
    if (ndim < 1 || ndim > PXL_GGUF_MAX_DIMS)
        return pxl_fail(w->ctx, PXL_ERR_INVALID_ARG, "%s: tensor '%.96s': %d dimensions (1 to 4 allowed)", fn, name, ndim);
    int64_t shape[4] = {1, 1, 1, 1};
    for (int d = 0; d < ndim; d++) {
        if (ne[d] < 0)
            return pxl_fail(w->ctx, PXL_ERR_INVALID_ARG, "%s: tensor '%.96s': dimension %d is negative", fn, name, d);
        shape[d] = ne[d];
    }
    if (pxl_ggml_block_elems(type) == 0)
        return pxl_fail(w->ctx, PXL_ERR_UNSUPPORTED, "%s: tensor '%.96s': ggml type %u (%s) is not supported", fn, name,
                        type, pxl_ggml_type_name(type));
    uint64_t want;
    const char *why;
    if (!ggml_tensor_bytes(type, ndim, shape, &want, &why))
        return pxl_fail(w->ctx, PXL_ERR_INVALID_ARG, "%s: tensor '%.96s' (%s): %s", fn, name, pxl_ggml_type_name(type), why);
    if (want != bytes)
        return pxl_fail(w->ctx, PXL_ERR_INVALID_ARG, "%s: tensor '%.96s': %zu bytes given, %s of this shape is %llu", fn,
                        name, bytes, pxl_ggml_type_name(type), (unsigned long long)want);
    for (size_t i = 0; i < w->n_tensors; i++)
        if (strcmp(w->tensors[i].name, name) == 0)
            return pxl_fail(w->ctx, PXL_ERR_INVALID_ARG, "%s: duplicate tensor name '%.96s'", fn, name);
    if (!grow(w->ctx, (void **)&w->tensors, &w->tensors_cap, w->n_tensors + 1, sizeof *w->tensors))
        return pxl_fail(w->ctx, PXL_ERR_OUT_OF_MEMORY, "gguf writer: out of memory");
    gguf_wtensor t = {.type = type, .ndim = ndim, .bytes = bytes};
    memcpy(t.ne, shape, sizeof shape);
    t.name = pxl_strdup(w->ctx, name);
    t.data = pxl_alloc(w->ctx, bytes ? bytes : 1);
    if (!t.name || !t.data) {
        pxl_free(w->ctx, t.name);
        pxl_free(w->ctx, t.data);
        return pxl_fail(w->ctx, PXL_ERR_OUT_OF_MEMORY, "gguf writer: out of memory for tensor '%.96s' (%zu bytes)",
                        name, bytes);
    }
    if (bytes) memcpy(t.data, data, bytes);
    w->tensors[w->n_tensors++] = t;
    return PXL_OK;
}

/* n rounded up to a multiple of a (a power of two); 0 on overflow. */
static int align_up(size_t n, size_t a, size_t *out) {
    size_t r;
    if (__builtin_add_overflow(n, a - 1, &r)) return 0;
    *out = r & ~(a - 1);
    return 1;
}

pxl_status pxl_gguf_writer_to_memory(pxl_gguf_writer *w, uint8_t **data, size_t *size) {
    if (!w) return PXL_ERR_INVALID_ARG;
    const char *fn = "pxl_gguf_writer_to_memory";
    PXL_REQUIRE(w->ctx, fn, data);
    PXL_REQUIRE(w->ctx, fn, size);
    int align_kv = w->alignment != PXL_GGUF_DEFAULT_ALIGNMENT;
    /* header, the alignment key, the metadata, the tensor infos */
    size_t head = 24 + (align_kv ? 8 + 17 + 4 + 4 : 0);
    int ok = 1;
    ok &= !__builtin_add_overflow(head, w->meta_len, &head);
    for (size_t i = 0; i < w->n_tensors; i++) {
        size_t ti = 8 + strlen(w->tensors[i].name) + 4 + 8 * (size_t)w->tensors[i].ndim + 4 + 8;
        ok &= !__builtin_add_overflow(head, ti, &head);
    }
    size_t total = 0, off = 0;
    ok &= align_up(head, w->alignment, &total);
    for (size_t i = 0; i < w->n_tensors; i++) {
        size_t padded = 0;
        ok &= align_up(w->tensors[i].bytes, w->alignment, &padded);
        ok &= !__builtin_add_overflow(off, padded, &off);
    }
    ok &= !__builtin_add_overflow(total, off, &total);
    if (!ok) return pxl_fail(w->ctx, PXL_ERR_INVALID_ARG, "%s: the file's size overflows", fn);
    uint8_t *buf = pxl_calloc(w->ctx, total ? total : 1, 1);
    if (!buf) return pxl_fail(w->ctx, PXL_ERR_OUT_OF_MEMORY, "%s: out of memory for %zu bytes", fn, total);
    uint8_t *p = buf;
    memcpy(p, "GGUF", 4);
    st32(p + 4, PXL_GGUF_VERSION_WRITE);
    st64(p + 8, w->n_tensors);
    st64(p + 16, (uint64_t)w->n_kv + (uint64_t)align_kv);
    p += 24;
    if (align_kv) {
        st64(p, 17);
        memcpy(p + 8, "general.alignment", 17);
        st32(p + 25, PXL_GGUF_UINT32);
        st32(p + 29, w->alignment);
        p += 33;
    }
    if (w->meta_len) memcpy(p, w->meta, w->meta_len);
    p += w->meta_len;
    size_t data_start = 0;
    align_up(head, w->alignment, &data_start);
    off = 0;
    for (size_t i = 0; i < w->n_tensors; i++) {
        const gguf_wtensor *t = &w->tensors[i];
        size_t len = strlen(t->name);
        st64(p, len);
        memcpy(p + 8, t->name, len);
        p += 8 + len;
        st32(p, (uint32_t)t->ndim);
        p += 4;
        for (int d = 0; d < t->ndim; d++, p += 8u) st64(p, (uint64_t)t->ne[d]);
        st32(p, t->type);
        st64(p + 4, off);
        p += 12;
        if (t->bytes) memcpy(buf + data_start + off, t->data, t->bytes);
        size_t padded = 0;
        align_up(t->bytes, w->alignment, &padded);
        off += padded;
    }
    *data = buf;
    *size = total;
    return PXL_OK;
}

pxl_status pxl_gguf_writer_write(pxl_gguf_writer *w, const char *path) {
    if (!w) return PXL_ERR_INVALID_ARG;
    PXL_REQUIRE(w->ctx, "pxl_gguf_writer_write", path);
    uint8_t *buf;
    size_t n;
    pxl_status s = pxl_gguf_writer_to_memory(w, &buf, &n);
    if (s != PXL_OK) return s;
    s = pxl_file_write(w->ctx, path, buf, n);
    pxl_free(w->ctx, buf);
    return s;
}
