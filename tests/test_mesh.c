/*
 * `pxl mesh` helpers (tools/mesh_*.c, compiled in): icosphere counts and
 * shape for levels 0-7, edges and vertex stars, OBJ/PLY output read back,
 * the rasteriser on a known triangle and its depth test, the ARAP residual
 * graph (zero at rest and under a rigid motion, its Jacobian analytic and
 * against central differences), the developability graph against a Jacobi
 * eigenvalue solver (flat fan 0, cones and perturbed sphere stars > 0), and
 * solves of both problems through the problem API.
 */
#include "check.h"
#include "test_ctx.h"

#include "mesh.h"
#include "pxl/ad.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pxl_ctx *g_ctx;

static double dot3(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
static void cross3(const double *a, const double *b, double *o) {
    o[0] = a[1] * b[2] - a[2] * b[1];
    o[1] = a[2] * b[0] - a[0] * b[2];
    o[2] = a[0] * b[1] - a[1] * b[0];
}
static double urand(uint64_t *s) { return (double)(test_rng(s) >> 11) / (double)(1ull << 53); }

/* ---- icosphere ---------------------------------------------------------------------- */

static void test_icosphere(void) {
    for (int level = 0; level <= MESH_MAX_LEVEL; level++) {
        mesh m;
        CHECK(mesh_icosphere(level, &m) == 0);
        size_t p4 = (size_t)1 << (2 * level);
        CHECK_MSG(m.nv == 10 * p4 + 2, "level %d: %zu vertices", level, m.nv);
        CHECK_MSG(m.nf == 20 * p4, "level %d: %zu faces", level, m.nf);
        uint32_t *edges = NULL;
        size_t ne = 0;
        CHECK(mesh_edges(&m, &edges, &ne) == 0);
        CHECK_MSG(ne == 30 * p4, "level %d: %zu edges", level, ne);
        CHECK((long)m.nv - (long)ne + (long)m.nf == 2);
        double worst = 0;
        for (size_t i = 0; i < m.nv; i++) worst = fmax(worst, fabs(sqrt(dot3(m.v + 3 * i, m.v + 3 * i)) - 1));
        CHECK_MSG(worst < 1e-14, "level %d: |v| - 1 up to %g", level, worst);
        /* every face counter-clockwise seen from outside, none degenerate */
        size_t inward = 0;
        for (size_t t = 0; t < m.nf; t++) {
            const double *a = m.v + 3 * m.f[3 * t], *b = m.v + 3 * m.f[3 * t + 1], *c = m.v + 3 * m.f[3 * t + 2];
            double e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]}, e2[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
            double n[3], g[3] = {a[0] + b[0] + c[0], a[1] + b[1] + c[1], a[2] + b[2] + c[2]};
            cross3(e1, e2, n);
            if (!(dot3(n, g) > 0)) inward++;
        }
        CHECK_MSG(inward == 0, "level %d: %zu faces not facing out", level, inward);
        uint32_t *rs = NULL, *ring = NULL;
        CHECK(mesh_stars(&m, &rs, &ring) == 0);
        size_t v5 = 0, v6 = 0;
        for (size_t i = 0; rs && i < m.nv; i++) {
            uint32_t k = rs[i + 1] - rs[i];
            v5 += k == 5;
            v6 += k == 6;
        }
        CHECK_MSG(v5 == 12 && v5 + v6 == m.nv, "level %d: %zu of valence 5, %zu of 6", level, v5, v6);
        /* the ring of vertex 0 goes around it: consecutive neighbours are edges of a face with it */
        if (rs && level <= 3) {
            for (size_t i = 0; i < m.nv; i++) {
                uint32_t k = rs[i + 1] - rs[i];
                for (uint32_t j = 0; j < k; j++) {
                    uint32_t a = ring[rs[i] + j], b = ring[rs[i] + (j + 1) % k];
                    int found = 0;
                    for (size_t t = 0; t < m.nf && !found; t++)
                        for (int c = 0; c < 3; c++)
                            if (m.f[3 * t + (size_t)c] == i && m.f[3 * t + (size_t)(c + 1) % 3] == a &&
                                m.f[3 * t + (size_t)(c + 2) % 3] == b)
                                found = 1;
                    if (!found) {
                        CHECK_MSG(found, "level %d: vertex %zu ring %u %u is not a face", level, i, a, b);
                        break;
                    }
                }
            }
        }
        free(rs);
        free(ring);
        free(edges);
        mesh_free(&m);
    }
    mesh m;
    CHECK(mesh_icosphere(-1, &m) == -1 && m.v == NULL);
    CHECK(mesh_icosphere(MESH_MAX_LEVEL + 1, &m) == -1 && m.v == NULL);
    /* a mesh that is not closed has no stars */
    double v[9] = {0, 0, 0, 1, 0, 0, 0, 1, 0};
    uint32_t f[3] = {0, 1, 2};
    mesh tri = {3, 1, v, f};
    uint32_t *rs = NULL, *ring = NULL;
    CHECK(mesh_stars(&tri, &rs, &ring) == -1 && rs == NULL && ring == NULL);
    uint32_t bad[3] = {0, 1, 7};
    mesh badm = {3, 1, v, bad};
    uint32_t *e = NULL;
    size_t ne = 0;
    CHECK(mesh_edges(&badm, &e, &ne) == -1 && e == NULL);
}

/* ---- OBJ and PLY -------------------------------------------------------------------- */

static void test_files(const char *dir) {
    mesh m;
    CHECK(mesh_icosphere(1, &m) == 0);
    char *text = NULL;
    size_t len = 0;
    CHECK(mesh_obj_text(&m, &text, &len) == 0 && len == strlen(text));
    /* read it back: v lines then f lines */
    size_t nv = 0, nf = 0, bad = 0;
    double worst = 0;
    for (char *line = text; line && *line;) {
        char *next = strchr(line, '\n');
        if (line[0] == 'v') {
            double x, y, z;
            if (sscanf(line, "v %lf %lf %lf", &x, &y, &z) != 3 || nv >= m.nv) bad++;
            else {
                worst = fmax(worst, fabs(x - m.v[3 * nv]) + fabs(y - m.v[3 * nv + 1]) + fabs(z - m.v[3 * nv + 2]));
                nv++;
            }
        } else if (line[0] == 'f') {
            unsigned a, b, c;
            if (sscanf(line, "f %u %u %u", &a, &b, &c) != 3 || nf >= m.nf || a != m.f[3 * nf] + 1 ||
                b != m.f[3 * nf + 1] + 1 || c != m.f[3 * nf + 2] + 1)
                bad++;
            else nf++;
        } else if (line[0] != '#') bad++;
        line = next ? next + 1 : NULL;
    }
    CHECK_MSG(nv == m.nv && nf == m.nf && bad == 0, "OBJ: %zu v, %zu f, %zu bad lines", nv, nf, bad);
    CHECK_MSG(worst < 1e-8, "OBJ: coordinates off by %g", worst);

    uint8_t *ply = NULL;
    size_t plen = 0;
    CHECK(mesh_ply_binary(&m, &ply, &plen) == 0);
    const char *end = ply ? strstr((const char *)ply, "end_header\n") : NULL;
    CHECK(end != NULL);
    if (ply && end) {
        size_t hl = (size_t)(end - (const char *)ply) + strlen("end_header\n");
        char head[512];
        memcpy(head, ply, hl < sizeof head ? hl : sizeof head - 1);
        head[hl < sizeof head ? hl : sizeof head - 1] = 0;
        CHECK(strncmp(head, "ply\nformat binary_little_endian 1.0\n", 36) == 0);
        size_t hv = 0, hf = 0;
        const char *ev = strstr(head, "element vertex "), *ef = strstr(head, "element face ");
        CHECK(ev && sscanf(ev, "element vertex %zu", &hv) == 1 && hv == m.nv);
        CHECK(ef && sscanf(ef, "element face %zu", &hf) == 1 && hf == m.nf);
        CHECK(strstr(head, "property list uchar int vertex_indices\n") != NULL);
        CHECK(plen == hl + 12 * m.nv + 13 * m.nf);
        const uint8_t *p = ply + hl;
        double pw = 0;
        for (size_t i = 0; i < 3 * m.nv && plen == hl + 12 * m.nv + 13 * m.nf; i++, p += 4) {
            uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
            float fv;
            memcpy(&fv, &u, 4);
            pw = fmax(pw, fabs((double)fv - m.v[i]));
        }
        CHECK_MSG(pw < 1e-7, "PLY: coordinates off by %g", pw);
        size_t fbad = 0;
        for (size_t t = 0; t < m.nf && plen == hl + 12 * m.nv + 13 * m.nf; t++) {
            if (*p++ != 3) fbad++;
            for (int c = 0; c < 3; c++, p += 4) {
                uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
                if (u != m.f[3 * t + (size_t)c]) fbad++;
            }
        }
        CHECK(fbad == 0);
    }
    /* mesh_write: the extension picks the format; the file holds the same bytes */
    char path[1024];
    snprintf(path, sizeof path, "%s/ico1.obj", dir);
    CHECK_MSG(mesh_write(g_ctx, &m, path) == PXL_OK, "%s", pxl_ctx_error(g_ctx));
    uint8_t *back = NULL;
    size_t blen = 0;
    CHECK(pxl_file_read(g_ctx, path, 1 << 24, &back, &blen) == PXL_OK && blen == len && memcmp(back, text, len) == 0);
    pxl_free(g_ctx, back);
    snprintf(path, sizeof path, "%s/ico1.PLY", dir);
    CHECK_MSG(mesh_write(g_ctx, &m, path) == PXL_OK, "%s", pxl_ctx_error(g_ctx));
    back = NULL;
    CHECK(pxl_file_read(g_ctx, path, 1 << 24, &back, &blen) == PXL_OK && blen == plen && memcmp(back, ply, plen) == 0);
    pxl_free(g_ctx, back);
    snprintf(path, sizeof path, "%s/no-such-dir/x.obj", dir);
    CHECK(mesh_write(g_ctx, &m, path) == PXL_ERR_IO);
    free(ply);
    free(text);
    mesh_free(&m);
}

/* ---- rasteriser --------------------------------------------------------------------- */

static void test_render(const char *dir) {
    static const uint8_t bg[3] = {0, 0, 0};
    mesh_picture pic;
    CHECK(mesh_picture_create(8, 8, bg, &pic) == 0);
    /* looking down -z, orthographic, radius 1: x in [-1, 1] -> columns 0..8, y up */
    double v[9] = {-1, -1, 0, 1, -1, 0, -1, 1, 0};
    uint32_t f[3] = {0, 1, 2};
    mesh tri = {3, 1, v, f};
    mesh_camera cam = {{0, 0, 1}, {0, 0, 0}, 1, 0};
    static const double white[3] = {1, 1, 1};
    CHECK(mesh_render(&tri, &cam, white, &pic, 0, 0, 8, 8) == 0);
    size_t wrong = 0;
    for (int py = 0; py < 8; py++)
        for (int px = 0; px < 8; px++) {
            if (px == py) continue; /* centres on the hypotenuse x + y = 0 */
            double x = (px + 0.5) / 4 - 1, y = 1 - (py + 0.5) / 4;
            int inside = x + y < 0;
            int lit = pic.rgb[3 * (py * 8 + px)] != 0;
            if (inside != lit) wrong++;
        }
    CHECK_MSG(wrong == 0, "%zu pixels wrong", wrong);
    /* light from the front: the face is lit well above the ambient 0.25 */
    CHECK(pic.rgb[3 * (7 * 8 + 0)] > 150);

    mesh_picture_free(&pic);
    /* depth: a nearer square (z = 0.5) in front of a farther one (z = 0), its
     * faces drawn before or after (one mesh, one z-buffer) */
    for (int order = 0; order < 2; order++) {
        double sq[24] = {-1, -1, 0, 1, -1, 0, 1, 1, 0, -1, 1, 0, -0.5, -0.5, 0.5, 0.5, -0.5, 0.5, 0.5, 0.5, 0.5, -0.5, 0.5, 0.5};
        uint32_t faces[2][12] = {{0, 1, 2, 0, 2, 3, 4, 5, 6, 4, 6, 7}, {4, 5, 6, 4, 6, 7, 0, 1, 2, 0, 2, 3}};
        mesh two = {8, 4, sq, faces[order]};
        mesh_picture p2;
        CHECK(mesh_picture_create(8, 8, bg, &p2) == 0);
        /* the near square is tilted a little so its shade differs from the far one's */
        sq[14] = 0.45;
        CHECK(mesh_render(&two, &cam, white, &p2, 0, 0, 8, 8) == 0);
        uint8_t far_shade = p2.rgb[0], near_shade = p2.rgb[3 * (3 * 8 + 3)];
        CHECK_MSG(far_shade != near_shade && near_shade > 0 && far_shade > 0, "order %d: %u %u", order, far_shade,
                  near_shade);
        /* render the near square alone: the centre pixel must have its shade */
        mesh one = {8, 2, sq, faces[1]};
        mesh_picture p3;
        CHECK(mesh_picture_create(8, 8, bg, &p3) == 0);
        CHECK(mesh_render(&one, &cam, white, &p3, 0, 0, 8, 8) == 0);
        CHECK_MSG(p3.rgb[3 * (3 * 8 + 3)] == near_shade, "order %d: the far square shows through", order);
        mesh_picture_free(&p3);
        mesh_picture_free(&p2);
    }
    /* a picture saved as a PNG decodes to the same pixels */
    mesh ico;
    CHECK(mesh_icosphere(2, &ico) == 0);
    char path[1024];
    snprintf(path, sizeof path, "%s/ico2.png", dir);
    CHECK_MSG(mesh_save_before_after(g_ctx, &ico, &ico, 64, 1, path) == PXL_OK, "%s", pxl_ctx_error(g_ctx));
    uint8_t *png = NULL;
    size_t plen = 0;
    CHECK(pxl_file_read(g_ctx, path, 1 << 24, &png, &plen) == PXL_OK);
    CHECK(plen > 8 && png && memcmp(png, "\x89PNG\r\n\x1a\n", 8) == 0);
    pxl_free(g_ctx, png);
    mesh_free(&ico);
}

/* ---- ARAP residual ------------------------------------------------------------------ */

static void rodrigues_ref(const double *w, const double *v, double *out) {
    double t2 = dot3(w, w);
    if (t2 > 1e-12) {
        double t = sqrt(t2), c = cos(t), s = sin(t), k[3] = {w[0] / t, w[1] / t, w[2] / t}, kv[3];
        cross3(k, v, kv);
        double kd = dot3(k, v) * (1 - c);
        for (int i = 0; i < 3; i++) out[i] = v[i] * c + kv[i] * s + k[i] * kd;
    } else {
        double wv[3];
        cross3(w, v, wv);
        for (int i = 0; i < 3; i++) out[i] = v[i] + wv[i];
    }
}

static void eval_arap(const pxl_ad_program *p, const double *x9, const double *e, double *r, double *jac) {
    uint32_t idx[9];
    for (uint32_t j = 0; j < 9; j++) idx[j] = j;
    pxl_status s = pxl_ad_eval(g_ctx, p, x9, 9, idx, e, 1, r, jac, NULL);
    CHECK_MSG(s == PXL_OK, "%s", pxl_ctx_error(g_ctx));
}

static void test_arap_graph(void) {
    pxl_ad_program *p = NULL;
    CHECK_MSG(mesh_arap_program(g_ctx, &p) == PXL_OK, "%s", pxl_ctx_error(g_ctx));
    if (!p) return;
    pxl_ad_program_info info = pxl_ad_program_get_info(p);
    CHECK(info.n_params == 9 && info.n_inputs == 3 && info.n_outputs == 3);
    uint64_t seed = 7;
    /* at rest with w = 0: r = 0, dr/dp_i = I, dr/dp_j = -I, dr/dw = [e]x */
    for (int t = 0; t < 20; t++) {
        double qi[3], qj[3], x[9], e[3], r[3], J[27];
        for (int c = 0; c < 3; c++) {
            qi[c] = 2 * urand(&seed) - 1;
            qj[c] = 2 * urand(&seed) - 1;
            e[c] = qi[c] - qj[c];
            x[c] = qi[c];
            x[3 + c] = qj[c];
            x[6 + c] = 0;
        }
        eval_arap(p, x, e, r, J);
        CHECK(fabs(r[0]) + fabs(r[1]) + fabs(r[2]) < 1e-15);
        double ex[3][3] = {{0, -e[2], e[1]}, {e[2], 0, -e[0]}, {-e[1], e[0], 0}};
        double worst = 0;
        for (int row = 0; row < 3; row++)
            for (int c = 0; c < 3; c++) {
                worst = fmax(worst, fabs(J[row * 9 + c] - (row == c)));
                worst = fmax(worst, fabs(J[row * 9 + 3 + c] + (row == c)));
                worst = fmax(worst, fabs(J[row * 9 + 6 + c] - ex[row][c]));
            }
        CHECK_MSG(worst < 1e-15, "rest Jacobian off by %g", worst);
    }
    /* a rigid motion p = R0 q + t with w = w0 everywhere: r = 0 */
    for (int t = 0; t < 20; t++) {
        double w0[3], tr[3], qi[3], qj[3], x[9], e[3], r[3];
        double ang = 0.1 + 2.5 * urand(&seed);
        double ax[3] = {2 * urand(&seed) - 1, 2 * urand(&seed) - 1, 2 * urand(&seed) - 1}, n = sqrt(dot3(ax, ax));
        for (int c = 0; c < 3; c++) {
            w0[c] = ax[c] / n * ang;
            tr[c] = urand(&seed);
            qi[c] = 2 * urand(&seed) - 1;
            qj[c] = 2 * urand(&seed) - 1;
            e[c] = qi[c] - qj[c];
        }
        rodrigues_ref(w0, qi, x);
        rodrigues_ref(w0, qj, x + 3);
        for (int c = 0; c < 3; c++) {
            x[c] += tr[c];
            x[3 + c] += tr[c];
            x[6 + c] = w0[c];
        }
        eval_arap(p, x, e, r, NULL);
        CHECK_MSG(fabs(r[0]) + fabs(r[1]) + fabs(r[2]) < 1e-14, "rigid motion: r = %g %g %g", r[0], r[1], r[2]);
    }
    /* random points, large and tiny rotations: values against plain C, Jacobian against central differences */
    for (int t = 0; t < 40; t++) {
        double x[9], e[3], r[3], J[27], ref[3], Re[3];
        double scale = t % 4 == 3 ? 1e-7 : 1.5;
        for (int c = 0; c < 3; c++) {
            x[c] = urand(&seed);
            x[3 + c] = urand(&seed);
            x[6 + c] = scale * (2 * urand(&seed) - 1);
            e[c] = 2 * urand(&seed) - 1;
        }
        eval_arap(p, x, e, r, J);
        rodrigues_ref(x + 6, e, Re);
        for (int c = 0; c < 3; c++) ref[c] = x[c] - x[3 + c] - Re[c];
        CHECK(fabs(r[0] - ref[0]) + fabs(r[1] - ref[1]) + fabs(r[2] - ref[2]) < 1e-14);
        if (scale < 1) continue; /* central differences would cross the 1e-12 switch */
        double worst = 0;
        for (int j = 0; j < 9; j++) {
            double xp[9], xm[9], rp[3], rm[3], h = 1e-6;
            memcpy(xp, x, sizeof x);
            memcpy(xm, x, sizeof x);
            xp[j] += h;
            xm[j] -= h;
            eval_arap(p, xp, e, rp, NULL);
            eval_arap(p, xm, e, rm, NULL);
            for (int row = 0; row < 3; row++) worst = fmax(worst, fabs(J[row * 9 + j] - (rp[row] - rm[row]) / (2 * h)));
        }
        CHECK_MSG(worst < 1e-8, "ARAP Jacobian vs central differences: %g", worst);
    }
    pxl_ad_program_free(p);

    /* the set-up: handles and start as the problem definition says */
    mesh m;
    uint32_t *edges = NULL;
    size_t ne = 0;
    mesh_arap a;
    CHECK(mesh_icosphere(2, &m) == 0 && mesh_edges(&m, &edges, &ne) == 0 && mesh_arap_setup(&m, edges, ne, &a) == 0);
    CHECK(a.n_dir == 2 * ne && a.nv == m.nv);
    size_t top = 0, bottom = 0;
    for (size_t i = 0; i < m.nv; i++) {
        top += m.v[3 * i + 2] >= 0.8;
        bottom += m.v[3 * i + 2] <= -0.8;
    }
    CHECK(a.n_handles == top + bottom && top > 0 && bottom > 0);
    for (size_t h = 0; h < a.n_handles; h++) {
        const double *q = m.v + 3 * (size_t)a.handle[h];
        double dz = q[2] >= 0.8 ? 0.4 : 0, dx = q[2] >= 0.8 ? 0.3 : 0;
        CHECK(a.target[3 * h] == q[0] + dx && a.target[3 * h + 1] == q[1] && a.target[3 * h + 2] == q[2] + dz);
        CHECK(memcmp(a.x + 6 * (size_t)a.handle[h], a.target + 3 * h, 3 * sizeof(double)) == 0);
    }
    /* directed edge 2k is (i, j), 2k+1 (j, i); the input is q_i - q_j, the slots p_i p_j w_i */
    size_t bad = 0;
    for (size_t d = 0; d < a.n_dir; d++) {
        uint32_t i = a.dir[2 * d], j = a.dir[2 * d + 1];
        if (i != edges[2 * (d / 2) + (d & 1)] || j != edges[2 * (d / 2) + 1 - (d & 1)]) bad++;
        for (uint32_t c = 0; c < 3; c++)
            if (a.index[9 * d + c] != 6 * i + c || a.index[9 * d + 3 + c] != 6 * j + c ||
                a.index[9 * d + 6 + c] != 6 * i + 3 + c || a.input[3 * d + c] != m.v[3 * i + c] - m.v[3 * j + c])
                bad++;
    }
    CHECK(bad == 0);
    char *text = NULL;
    size_t len = 0;
    CHECK(mesh_arap_export_text(&m, &a, &text, &len) == 0 && text && len == strlen(text));
    size_t V = 0, E = 0, H = 0;
    CHECK(text && sscanf(text, "pxl-arap 1\n%zu %zu %zu", &V, &E, &H) == 3 && V == m.nv && E == a.n_dir &&
          H == a.n_handles);
    size_t lines = 0;
    for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
    CHECK(lines == 2 + V + E + H);
    free(text);
    mesh_arap_free(&a);
    free(edges);
    mesh_free(&m);
}

/* ---- developability ----------------------------------------------------------------- */

/* Smallest eigenvalue of a symmetric 3x3 matrix by cyclic Jacobi rotations. */
static double jacobi_min(const double a_in[3][3]) {
    double a[3][3];
    memcpy(a, a_in, sizeof a);
    for (int sweep = 0; sweep < 60; sweep++) {
        double off = fabs(a[0][1]) + fabs(a[0][2]) + fabs(a[1][2]);
        if (off < 1e-300) break;
        for (int p = 0; p < 2; p++)
            for (int q = p + 1; q < 3; q++) {
                if (a[p][q] == 0) continue;
                double th = (a[q][q] - a[p][p]) / (2 * a[p][q]);
                double t = (th >= 0 ? 1 : -1) / (fabs(th) + sqrt(th * th + 1));
                double c = 1 / sqrt(t * t + 1), s = t * c;
                for (int k = 0; k < 3; k++) { /* columns p, q */
                    double akp = a[k][p], akq = a[k][q];
                    a[k][p] = c * akp - s * akq;
                    a[k][q] = s * akp + c * akq;
                }
                for (int k = 0; k < 3; k++) { /* rows p, q */
                    double apk = a[p][k], aqk = a[q][k];
                    a[p][k] = c * apk - s * aqk;
                    a[q][k] = s * apk + c * aqk;
                }
            }
    }
    return fmin(a[0][0], fmin(a[1][1], a[2][2]));
}

/* The covariance matrix of a star: centre c, ring nb[k][3]. */
static void star_matrix(const double *c, const double *nb, int k, double A[3][3]) {
    memset(A, 0, 9 * sizeof(double));
    for (int j = 0; j < k; j++) {
        const double *a = nb + 3 * j, *b = nb + 3 * ((j + 1) % k);
        double u[3] = {a[0] - c[0], a[1] - c[1], a[2] - c[2]}, v[3] = {b[0] - c[0], b[1] - c[1], b[2] - c[2]}, n[3];
        cross3(u, v, n);
        double len = sqrt(dot3(n, n)), th = atan2(len, dot3(u, v));
        for (int r = 0; r < 3; r++)
            for (int s = 0; s < 3; s++) A[r][s] += th * n[r] * n[s] / (len * len);
    }
}

/* Evaluates the valence-k program on x[3(k+1)]: value and gradient. */
static double eval_star(const pxl_ad_program *p, int k, const double *x, double *grad) {
    uint32_t idx[3 * 65];
    for (uint32_t j = 0; j < 3 * (uint32_t)(k + 1); j++) idx[j] = j;
    double r = (double)NAN;
    pxl_status s = pxl_ad_eval(g_ctx, p, x, 3 * (size_t)(k + 1), idx, NULL, 1, &r, grad, NULL);
    CHECK_MSG(s == PXL_OK, "%s", pxl_ctx_error(g_ctx));
    return r;
}

/* Value against Jacobi within tol * max(1, trace); with check_grad, the
 * gradient against central differences (generic stars only: lambda_min has a
 * kink where its eigenvalue is repeated). */
static void check_star(const pxl_ad_program *p, int k, const double *x, const char *what, double tol,
                       int check_grad) {
    double A[3][3], grad[3 * 65];
    star_matrix(x, x + 3, k, A);
    double want = jacobi_min(A), got = eval_star(p, k, x, grad);
    CHECK_MSG(fabs(got - want) < tol * fmax(1, fabs(A[0][0] + A[1][1] + A[2][2])), "%s: lambda_min %.17g, Jacobi %.17g",
              what, got, want);
    int finite = 1;
    for (int j = 0; j < 3 * (k + 1); j++) finite &= isfinite(grad[j]) != 0;
    CHECK_MSG(finite, "%s: gradient not finite", what);
    if (!check_grad) return;
    double worst = 0, gmax = 0;
    for (int j = 0; j < 3 * (k + 1); j++) {
        double xp[3 * 65], xm[3 * 65], h = 1e-6;
        memcpy(xp, x, 3 * (size_t)(k + 1) * sizeof *x);
        memcpy(xm, x, 3 * (size_t)(k + 1) * sizeof *x);
        xp[j] += h;
        xm[j] -= h;
        double fd = (eval_star(p, k, xp, NULL) - eval_star(p, k, xm, NULL)) / (2 * h);
        worst = fmax(worst, fabs(grad[j] - fd));
        gmax = fmax(gmax, fabs(fd));
    }
    CHECK_MSG(worst < 1e-6 * fmax(1, gmax), "%s: gradient vs central differences off by %g (largest %g)", what, worst,
              gmax);
}

static void test_dev_graph(void) {
    uint64_t seed = 11;
    for (int k = 3; k <= 8; k++) {
        pxl_ad_program *p = NULL;
        CHECK_MSG(mesh_dev_program(g_ctx, k, &p) == PXL_OK, "%s", pxl_ctx_error(g_ctx));
        if (!p) continue;
        pxl_ad_program_info info = pxl_ad_program_get_info(p);
        CHECK(info.n_params == 3 * (size_t)(k + 1) && info.n_outputs == 1 && info.n_inputs == 0);
        double x[3 * 65];
        char what[64];
        /* a flat fan (in a tilted plane): A = 2 pi n n^T, lambda_min = 0 exactly */
        double u[3] = {0.6, 0.8, 0}, c0[3] = {0.3, -0.2, 0.5};
        double t1[3] = {0.8 * 0.7, -0.6 * 0.7, 0.714142842854285}; /* unit, orthogonal to u */
        for (int c = 0; c < 3; c++) x[c] = c0[c];
        for (int j = 0; j < k; j++) {
            double a = 2 * 3.141592653589793 * j / k + 0.1 * urand(&seed), rad = 0.5 + urand(&seed);
            for (int c = 0; c < 3; c++) x[3 + 3 * j + c] = c0[c] + rad * (cos(a) * u[c] + sin(a) * t1[c]);
        }
        double f = eval_star(p, k, x, NULL);
        CHECK_MSG(fabs(f) < 1e-12, "flat fan of valence %d: %g", k, f);
        snprintf(what, sizeof what, "flat fan, valence %d", k);
        check_star(p, k, x, what, 1e-12, 0);
        /* a regular cone of height h: A has a repeated eigenvalue (the two
         * tangential ones): smallest for a flat cone, largest for a steep one */
        for (int hi = 0; hi < 3; hi++) {
            double h = 0.2 + 0.4 * hi;
            x[0] = x[1] = 0;
            x[2] = h;
            for (int j = 0; j < k; j++) {
                double a = 2 * 3.141592653589793 * j / k;
                x[3 + 3 * j] = cos(a);
                x[4 + 3 * j] = sin(a);
                x[5 + 3 * j] = 0;
            }
            snprintf(what, sizeof what, "cone h=%g, valence %d", h, k);
            double e = eval_star(p, k, x, NULL);
            CHECK_MSG(e > 1e-3, "%s: energy %g not > 0", what, e);
            check_star(p, k, x, what, 1e-7, 0);
        }
        /* random perturbed cones (generic: three distinct eigenvalues, the acos branch) */
        for (int t = 0; t < 10; t++) {
            x[0] = 0.1 * urand(&seed);
            x[1] = 0.1 * urand(&seed);
            x[2] = 0.3 + 0.5 * urand(&seed);
            for (int j = 0; j < k; j++) {
                double a = 2 * 3.141592653589793 * (j + 0.3 * urand(&seed)) / k;
                x[3 + 3 * j] = cos(a) * (0.7 + 0.6 * urand(&seed));
                x[4 + 3 * j] = sin(a) * (0.7 + 0.6 * urand(&seed));
                x[5 + 3 * j] = 0.4 * urand(&seed) - 0.2;
            }
            snprintf(what, sizeof what, "random star %d, valence %d", t, k);
            check_star(p, k, x, what, 1e-10, 1);
            CHECK(eval_star(p, k, x, NULL) > 0);
        }
        pxl_ad_program_free(p);
    }
    /* the stars of an icosphere, as the command builds them */
    mesh m;
    uint32_t *rs = NULL, *ring = NULL;
    CHECK(mesh_icosphere(1, &m) == 0 && mesh_stars(&m, &rs, &ring) == 0);
    pxl_ad_program *p5 = NULL, *p6 = NULL;
    CHECK(mesh_dev_program(g_ctx, 5, &p5) == PXL_OK && mesh_dev_program(g_ctx, 6, &p6) == PXL_OK);
    for (size_t i = 0; rs && p5 && p6 && i < m.nv; i++) {
        int k = (int)(rs[i + 1] - rs[i]);
        double x[3 * 7];
        for (int c = 0; c < 3; c++) x[c] = m.v[3 * i + (size_t)c] + 0.01 * (urand(&seed) - 0.5);
        for (int j = 0; j < k; j++)
            for (int c = 0; c < 3; c++)
                x[3 + 3 * j + c] = m.v[3 * (size_t)ring[rs[i] + (uint32_t)j] + (size_t)c] + 0.01 * (urand(&seed) - 0.5);
        char what[64];
        snprintf(what, sizeof what, "icosphere star %zu (valence %d)", i, k);
        check_star(k == 5 ? p5 : p6, k, x, what, 1e-10, i < 6);
    }
    pxl_ad_program *p2 = NULL;
    CHECK(mesh_dev_program(g_ctx, 2, &p2) == PXL_ERR_INVALID_ARG && p2 == NULL);
    pxl_ad_program_free(p5);
    pxl_ad_program_free(p6);
    free(rs);
    free(ring);
    mesh_free(&m);
}

/* ---- solves through the problem API ----------------------------------------------- */

static void test_arap_solve(void) {
    mesh m;
    uint32_t *edges = NULL;
    size_t ne = 0;
    mesh_arap a;
    pxl_ad_program *prog = NULL;
    pxl_ad_problem *pb = NULL;
    CHECK(mesh_icosphere(2, &m) == 0 && mesh_edges(&m, &edges, &ne) == 0 && mesh_arap_setup(&m, edges, ne, &a) == 0);
    CHECK(mesh_arap_program(g_ctx, &prog) == PXL_OK);
    CHECK(pxl_ad_problem_create(g_ctx, 6 * m.nv, &pb) == PXL_OK);
    CHECK_MSG(pxl_ad_problem_add(pb, prog, a.index, a.input, a.n_dir, NULL) == PXL_OK, "%s", pxl_ctx_error(g_ctx));
    for (size_t h = 0; h < a.n_handles; h++)
        for (size_t c = 0; c < 3; c++) CHECK(pxl_ad_problem_set_constant(pb, 6 * (size_t)a.handle[h] + c, 1) == PXL_OK);
    pxl_ad_problem_info info = pxl_ad_problem_get_info(pb);
    CHECK(info.n_groups == 1 && info.n_instances == 2 * ne && info.n_residuals == 6 * ne);
    pxl_ad_group_info gi;
    CHECK(pxl_ad_problem_group_info(pb, 0, &gi) == PXL_OK && gi.n_instances == 2 * ne && gi.n_slots == 9);
    /* the start's cost: the handles' edges are stretched, the rest is at rest */
    double c0 = -1;
    CHECK(pxl_ad_problem_evaluate(pb, a.x, &c0, NULL, NULL, NULL) == PXL_OK && c0 > 0);
    pxl_ad_solve_summary sum;
    memset(&sum, 0, sizeof sum);
    pxl_status s = pxl_ad_problem_solve(pb, a.x, NULL, &sum);
    CHECK_MSG(s == PXL_OK, "%s", pxl_ctx_error(g_ctx));
    CHECK_MSG(sum.termination == PXL_AD_CONVERGED_FUNCTION || sum.termination == PXL_AD_CONVERGED_GRADIENT ||
                  sum.termination == PXL_AD_CONVERGED_PARAMETER,
              "ARAP level 2: %s (%s)", pxl_ad_termination_name(sum.termination), sum.message);
    CHECK_MSG(sum.initial_cost == c0 && sum.final_cost < 0.2 * c0, "ARAP level 2: cost %g -> %g", sum.initial_cost,
              sum.final_cost);
    CHECK(sum.linear_solver == PXL_AD_SPARSE_CHOLESKY && sum.n_residuals == 6 * ne &&
          sum.n_free_params == 6 * m.nv - 3 * a.n_handles);
    double c1 = -1;
    CHECK(pxl_ad_problem_evaluate(pb, a.x, &c1, NULL, NULL, NULL) == PXL_OK && fabs(c1 - sum.final_cost) <= 1e-12 * c1);
    /* handles exactly at their targets; the free vertices moved, the top ones by about the handles' offset */
    size_t off = 0;
    for (size_t h = 0; h < a.n_handles; h++)
        off += memcmp(a.x + 6 * (size_t)a.handle[h], a.target + 3 * h, 3 * sizeof(double)) != 0;
    CHECK(off == 0);
    double moved_top = 0, moved_bottom = 0;
    for (size_t i = 0; i < m.nv; i++) {
        const double *q = m.v + 3 * i, *x = a.x + 6 * i;
        if (q[2] > 0.5 && q[2] < 0.8) moved_top = fmax(moved_top, x[2] - q[2]);
        if (q[2] < -0.5 && q[2] > -0.8) moved_bottom = fmax(moved_bottom, fabs(x[2] - q[2]));
    }
    CHECK_MSG(moved_top > 0.2 && moved_top < 0.45 && moved_bottom < moved_top, "moved: top %g, bottom %g", moved_top,
              moved_bottom);
    pxl_ad_problem_free(pb);
    pxl_ad_program_free(prog);
    mesh_arap_free(&a);
    free(edges);
    mesh_free(&m);
}

static void test_dev_solve(void) {
    mesh m;
    uint32_t *rs = NULL, *ring = NULL;
    CHECK(mesh_icosphere(2, &m) == 0 && mesh_stars(&m, &rs, &ring) == 0);
    if (!rs) return;
    double *x = malloc(3 * m.nv * sizeof *x);
    uint32_t *index = malloc(21 * m.nv * sizeof *index);
    pxl_ad_problem *pb = NULL;
    CHECK(x && index && pxl_ad_problem_create(g_ctx, 3 * m.nv, &pb) == PXL_OK);
    uint64_t seed = 5;
    for (size_t i = 0; x && i < 3 * m.nv; i++) x[i] = m.v[i] + 0.005 * (2 * urand(&seed) - 1);
    double direct = 0;
    for (uint32_t k = 5; k <= 6 && pb && index; k++) {
        pxl_ad_program *p = NULL;
        CHECK(mesh_dev_program(g_ctx, (int)k, &p) == PXL_OK);
        size_t n = 0;
        for (size_t i = 0; i < m.nv; i++) {
            if (rs[i + 1] - rs[i] != k) continue;
            uint32_t *ix = index + n * 3 * (k + 1);
            for (uint32_t c = 0; c < 3; c++) ix[c] = 3 * (uint32_t)i + c;
            for (uint32_t j = 0; j < k; j++)
                for (uint32_t c = 0; c < 3; c++) ix[3 + 3 * j + c] = 3 * ring[rs[i] + j] + c;
            double xs[21], A[3][3];
            for (uint32_t j = 0; j < 3 * (k + 1); j++) xs[j] = x[ix[j]];
            star_matrix(xs, xs + 3, (int)k, A);
            direct += jacobi_min(A);
            n++;
        }
        CHECK(n == (k == 5 ? 12 : m.nv - 12));
        CHECK_MSG(pxl_ad_problem_add(pb, p, index, NULL, n, NULL) == PXL_OK, "%s", pxl_ctx_error(g_ctx));
        pxl_ad_program_free(p);
    }
    pxl_ad_problem_info info = pxl_ad_problem_get_info(pb);
    CHECK(info.n_groups == 2 && info.n_instances == m.nv);
    pxl_ad_solve_options so;
    memset(&so, 0, sizeof so);
    so.max_iterations = 60;
    pxl_ad_solve_summary sum;
    memset(&sum, 0, sizeof sum);
    CHECK_MSG(pxl_ad_problem_minimize(pb, x, &so, &sum) == PXL_OK, "%s", pxl_ctx_error(g_ctx));
    CHECK_MSG(fabs(sum.initial_cost - direct) < 1e-9 * direct, "energy %.17g, Jacobi %.17g", sum.initial_cost, direct);
    CHECK_MSG(sum.final_cost < 0.5 * sum.initial_cost && sum.iterations > 0 && sum.termination != PXL_AD_FAILURE,
              "developability: %g -> %g in %d iterations (%s)", sum.initial_cost, sum.final_cost, sum.iterations,
              sum.message);
    int finite = 1;
    for (size_t i = 0; x && i < 3 * m.nv; i++) finite &= isfinite(x[i]) != 0;
    CHECK(finite);
    pxl_ad_problem_free(pb);
    free(index);
    free(x);
    free(rs);
    free(ring);
    mesh_free(&m);
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : ".";
    g_ctx = test_ctx(PXL_BACKEND_CPU, 0);
    if (!g_ctx) return 1;
    test_icosphere();
    test_files(dir);
    test_render(dir);
    test_arap_graph();
    test_dev_graph();
    test_arap_solve();
    test_dev_solve();
    pxl_ctx_free(g_ctx);
    return test_result("test_mesh");
}
