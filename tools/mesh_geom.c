/*
 * Triangle meshes for `pxl mesh`: icospheres, edges, vertex stars, and the
 * OBJ and PLY writers (through pxl_file_write, so a file is replaced whole or
 * not at all).
 */
#include "mesh.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void mesh_free(mesh *m) {
    if (!m) return;
    free(m->v);
    free(m->f);
    memset(m, 0, sizeof *m);
}

/* The 12 vertices (0, +-1, +-phi) and cyclic permutations, and 20 faces. */
static const double k_ico_v[12][3] = {
    {-1, 1.618033988749895, 0}, {1, 1.618033988749895, 0}, {-1, -1.618033988749895, 0},
    {1, -1.618033988749895, 0}, {0, -1, 1.618033988749895}, {0, 1, 1.618033988749895},
    {0, -1, -1.618033988749895}, {0, 1, -1.618033988749895}, {1.618033988749895, 0, -1},
    {1.618033988749895, 0, 1}, {-1.618033988749895, 0, -1}, {-1.618033988749895, 0, 1},
};
static const uint8_t k_ico_f[20][3] = {
    {0, 11, 5}, {0, 5, 1}, {0, 1, 7}, {0, 7, 10}, {0, 10, 11}, {1, 5, 9}, {5, 11, 4},
    {11, 10, 2}, {10, 7, 6}, {7, 1, 8}, {3, 9, 4}, {3, 4, 2}, {3, 2, 6}, {3, 6, 8},
    {3, 8, 9}, {4, 9, 5}, {2, 4, 11}, {6, 2, 10}, {8, 6, 7}, {9, 8, 1},
};

static void normalize3(double *p) {
    double n = sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]);
    p[0] /= n;
    p[1] /= n;
    p[2] /= n;
}

/* Open-addressing map from an edge key (i << 32 | j, i < j) to its midpoint. */
typedef struct {
    uint64_t *keys; /* 0 = empty (no edge has i = j = 0) */
    uint32_t *vals;
    size_t cap;     /* power of two */
} edge_map;

static uint32_t midpoint(edge_map *em, mesh *m, uint32_t a, uint32_t b) {
    uint32_t i = a < b ? a : b, j = a < b ? b : a;
    uint64_t key = ((uint64_t)i << 32) | j;
    size_t h = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & (em->cap - 1);
    while (em->keys[h] && em->keys[h] != key) h = (h + 1) & (em->cap - 1);
    if (em->keys[h] == key) return em->vals[h];
    uint32_t n = (uint32_t)m->nv++;
    double *p = m->v + 3 * (size_t)n;
    for (size_t c = 0; c < 3; c++) p[c] = 0.5 * (m->v[3 * (size_t)i + c] + m->v[3 * (size_t)j + c]);
    normalize3(p);
    em->keys[h] = key;
    em->vals[h] = n;
    return n;
}

int mesh_icosphere(int level, mesh *out) {
    memset(out, 0, sizeof *out);
    if (level < 0 || level > MESH_MAX_LEVEL) return -1;
    size_t p4 = (size_t)1 << (2 * level);
    size_t nv = 10 * p4 + 2, nf = 20 * p4;
    mesh m = {0, 0, malloc(3 * nv * sizeof(double)), malloc(3 * nf * sizeof(uint32_t))};
    uint32_t *tmp = malloc(3 * nf * sizeof(uint32_t));
    edge_map em = {NULL, NULL, 0};
    em.cap = 64;
    while (em.cap < 2 * 30 * p4) em.cap *= 2;
    em.keys = malloc(em.cap * sizeof *em.keys);
    em.vals = malloc(em.cap * sizeof *em.vals);
    if (!m.v || !m.f || !tmp || !em.keys || !em.vals) {
        free(tmp);
        free(em.keys);
        free(em.vals);
        mesh_free(&m);
        return -1;
    }
    for (int i = 0; i < 12; i++) {
        memcpy(m.v + 3 * i, k_ico_v[i], sizeof k_ico_v[i]);
        normalize3(m.v + 3 * i);
    }
    for (int t = 0; t < 20; t++)
        for (int c = 0; c < 3; c++) m.f[3 * t + c] = k_ico_f[t][c];
    m.nv = 12;
    m.nf = 20;
    for (int l = 0; l < level; l++) {
        memset(em.keys, 0, em.cap * sizeof *em.keys);
        size_t nf_new = 0;
        for (size_t t = 0; t < m.nf; t++) {
            uint32_t a = m.f[3 * t], b = m.f[3 * t + 1], c = m.f[3 * t + 2];
            uint32_t ab = midpoint(&em, &m, a, b), bc = midpoint(&em, &m, b, c), ca = midpoint(&em, &m, c, a);
            uint32_t q[4][3] = {{a, ab, ca}, {b, bc, ab}, {c, ca, bc}, {ab, bc, ca}};
            memcpy(tmp + 3 * nf_new, q, sizeof q);
            nf_new += 4;
        }
        memcpy(m.f, tmp, 3 * nf_new * sizeof *tmp);
        m.nf = nf_new;
    }
    free(tmp);
    free(em.keys);
    free(em.vals);
    *out = m;
    return 0;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int mesh_edges(const mesh *m, uint32_t **edges, size_t *n_edges) {
    *edges = NULL;
    *n_edges = 0;
    if (m->nf > SIZE_MAX / 3 / sizeof(uint64_t)) return -1;
    uint64_t *k = malloc(3 * m->nf * sizeof *k + 1);
    if (!k) return -1;
    for (size_t t = 0; t < m->nf; t++)
        for (size_t c = 0; c < 3; c++) {
            uint32_t a = m->f[3 * t + c], b = m->f[3 * t + (c + 1) % 3];
            if (a >= m->nv || b >= m->nv || a == b) {
                free(k);
                return -1;
            }
            k[3 * t + c] = a < b ? ((uint64_t)a << 32 | b) : ((uint64_t)b << 32 | a);
        }
    size_t n = 3 * m->nf, u = 0;
    qsort(k, n, sizeof *k, cmp_u64);
    for (size_t i = 0; i < n; i++)
        if (i == 0 || k[i] != k[i - 1]) k[u++] = k[i];
    uint32_t *e = malloc(2 * u * sizeof *e + 1);
    if (!e) {
        free(k);
        return -1;
    }
    for (size_t i = 0; i < u; i++) {
        e[2 * i] = (uint32_t)(k[i] >> 32);
        e[2 * i + 1] = (uint32_t)k[i];
    }
    free(k);
    *edges = e;
    *n_edges = u;
    return 0;
}

int mesh_stars(const mesh *m, uint32_t **ring_start, uint32_t **ring) {
    *ring_start = NULL;
    *ring = NULL;
    if (m->nv >= UINT32_MAX || m->nf > UINT32_MAX / 3) return -1;
    uint32_t *start = calloc(m->nv + 1, sizeof *start);
    uint32_t *fill = calloc(m->nv + 1, sizeof *fill);
    /* per corner: (next, prev) around the corner's vertex */
    uint32_t *pair = malloc(6 * m->nf * sizeof *pair + 1);
    uint32_t *out = malloc(3 * m->nf * sizeof *out + 1);
    int rc = -1;
    if (!start || !fill || !pair || !out) goto done;
    for (size_t t = 0; t < 3 * m->nf; t++) {
        if (m->f[t] >= m->nv) goto done;
        start[m->f[t] + 1]++;
    }
    for (size_t i = 0; i < m->nv; i++) start[i + 1] += start[i];
    for (size_t t = 0; t < m->nf; t++)
        for (size_t c = 0; c < 3; c++) {
            uint32_t v = m->f[3 * t + c];
            uint32_t at = start[v] + fill[v]++;
            pair[2 * at] = m->f[3 * t + (c + 1) % 3];
            pair[2 * at + 1] = m->f[3 * t + (c + 2) % 3];
        }
    for (size_t i = 0; i < m->nv; i++) {
        uint32_t s = start[i], k = start[i + 1] - s;
        if (k < 3) goto done;
        uint32_t cur = pair[2 * s];
        for (uint32_t n = 0; n < k; n++) {
            out[s + n] = cur;
            uint32_t f = 0;
            while (f < k && pair[2 * (s + f)] != cur) f++;
            if (f == k) goto done; /* the fan does not continue: not a closed manifold */
            cur = pair[2 * (s + f) + 1];
        }
        if (cur != out[s]) goto done; /* the fan does not close after k faces */
    }
    rc = 0;
done:
    free(fill);
    free(pair);
    if (rc) {
        free(start);
        free(out);
    } else {
        *ring_start = start;
        *ring = out;
    }
    return rc;
}

int mesh_obj_text(const mesh *m, char **out, size_t *len) {
    *out = NULL;
    *len = 0;
    /* "v " + 3 * (%.9g, at most 16 chars + space) + newline; "f " + 3 * 11 + newline */
    size_t cap = 64 + m->nv * 60 + m->nf * 40;
    char *s = malloc(cap);
    if (!s) return -1;
    size_t n = (size_t)snprintf(s, cap, "# pxl mesh: %zu vertices, %zu faces\n", m->nv, m->nf);
    for (size_t i = 0; i < m->nv; i++)
        n += (size_t)snprintf(s + n, cap - n, "v %.9g %.9g %.9g\n", m->v[3 * i], m->v[3 * i + 1], m->v[3 * i + 2]);
    for (size_t t = 0; t < m->nf; t++)
        n += (size_t)snprintf(s + n, cap - n, "f %u %u %u\n", m->f[3 * t] + 1, m->f[3 * t + 1] + 1, m->f[3 * t + 2] + 1);
    *out = s;
    *len = n;
    return 0;
}

static uint8_t *put_u32le(uint8_t *p, uint32_t x) {
    p[0] = (uint8_t)x;
    p[1] = (uint8_t)(x >> 8);
    p[2] = (uint8_t)(x >> 16);
    p[3] = (uint8_t)(x >> 24);
    return p + 4;
}

int mesh_ply_binary(const mesh *m, uint8_t **out, size_t *len) {
    *out = NULL;
    *len = 0;
    char head[256];
    int hn = snprintf(head, sizeof head,
                      "ply\nformat binary_little_endian 1.0\ncomment pxl mesh\nelement vertex %zu\n"
                      "property float x\nproperty float y\nproperty float z\nelement face %zu\n"
                      "property list uchar int vertex_indices\nend_header\n",
                      m->nv, m->nf);
    size_t total = (size_t)hn + 12 * m->nv + 13 * m->nf;
    uint8_t *b = malloc(total);
    if (!b) return -1;
    memcpy(b, head, (size_t)hn);
    uint8_t *p = b + hn;
    for (size_t i = 0; i < 3 * m->nv; i++) {
        float f = (float)m->v[i];
        uint32_t u;
        memcpy(&u, &f, 4);
        p = put_u32le(p, u);
    }
    for (size_t t = 0; t < m->nf; t++) {
        *p++ = 3;
        for (size_t c = 0; c < 3; c++) p = put_u32le(p, m->f[3 * t + c]);
    }
    *out = b;
    *len = total;
    return 0;
}

pxl_status mesh_write(pxl_ctx *ctx, const mesh *m, const char *path) {
    size_t n = strlen(path);
    int ply = n >= 4 && strcasecmp(path + n - 4, ".ply") == 0;
    uint8_t *bin = NULL;
    char *text = NULL;
    size_t len = 0;
    int rc = ply ? mesh_ply_binary(m, &bin, &len) : mesh_obj_text(m, &text, &len);
    if (rc) return PXL_ERR_OUT_OF_MEMORY; /* the caller says so */
    pxl_status s = pxl_file_write(ctx, path, ply ? (const void *)bin : (const void *)text, len);
    free(bin);
    free(text);
    return s;
}
