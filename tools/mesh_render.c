/*
 * A small software rasteriser for `pxl mesh` pictures: each triangle is
 * projected (orthographic or pinhole camera), filled over the pixel centres
 * inside its three edge functions, depth-tested against a z-buffer, and
 * flat shaded: ambient + Lambert (two-sided) from a light above and to the
 * left of the camera. The picture is written through pxl's PNG writer
 * (pxl/vm.h, pxl_pxi_save: RGBA8, atomic).
 */
#include "mesh.h"
#include "pxl/vm.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static double dot3(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
static void cross3(const double *a, const double *b, double *o) {
    o[0] = a[1] * b[2] - a[2] * b[1];
    o[1] = a[2] * b[0] - a[0] * b[2];
    o[2] = a[0] * b[1] - a[1] * b[0];
}
static int unit3(double *a) {
    double n = sqrt(dot3(a, a));
    if (!(n > 0)) return -1;
    a[0] /= n;
    a[1] /= n;
    a[2] /= n;
    return 0;
}

mesh_camera mesh_camera_fit(const mesh *a, const mesh *b, int perspective) {
    mesh_camera cam = {{0.45, -1.0, 0.4}, {0, 0, 0}, 1, perspective};
    double lo[3] = {DBL_MAX, DBL_MAX, DBL_MAX}, hi[3] = {-DBL_MAX, -DBL_MAX, -DBL_MAX};
    const mesh *ms[2] = {a, b};
    size_t n = 0;
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; ms[k] && i < ms[k]->nv; i++, n++)
            for (size_t c = 0; c < 3; c++) {
                lo[c] = fmin(lo[c], ms[k]->v[3 * i + c]);
                hi[c] = fmax(hi[c], ms[k]->v[3 * i + c]);
            }
    if (!n) return cam;
    for (int c = 0; c < 3; c++) cam.center[c] = 0.5 * (lo[c] + hi[c]);
    double r2 = 0;
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; ms[k] && i < ms[k]->nv; i++) {
            double d[3] = {ms[k]->v[3 * i] - cam.center[0], ms[k]->v[3 * i + 1] - cam.center[1],
                           ms[k]->v[3 * i + 2] - cam.center[2]};
            r2 = fmax(r2, dot3(d, d));
        }
    cam.radius = r2 > 0 ? 1.08 * sqrt(r2) : 1;
    return cam;
}

int mesh_picture_create(uint32_t w, uint32_t h, const uint8_t bg[3], mesh_picture *out) {
    memset(out, 0, sizeof *out);
    size_t n = (size_t)w * h;
    out->rgb = malloc(3 * n + 1);
    if (!out->rgb) return -1;
    out->w = w;
    out->h = h;
    for (size_t i = 0; i < n; i++) memcpy(out->rgb + 3 * i, bg, 3);
    return 0;
}

void mesh_picture_free(mesh_picture *p) {
    if (!p) return;
    free(p->rgb);
    memset(p, 0, sizeof *p);
}

/* Camera frame: position, right, up, forward; tan of the half field of view. */
typedef struct {
    double pos[3], right[3], up[3], fwd[3];
    double scale; /* perspective: 1 / tan(fov/2); orthographic: 1 / radius */
    int persp;
} frame;

static void make_frame(const mesh_camera *cam, frame *f) {
    double e[3] = {cam->eye[0], cam->eye[1], cam->eye[2]};
    if (unit3(e)) e[2] = 1;
    double up[3] = {0, 0, 1};
    for (int c = 0; c < 3; c++) f->fwd[c] = -e[c];
    cross3(f->fwd, up, f->right);
    if (dot3(f->right, f->right) < 1e-12) { /* looking along z: y is up */
        double y[3] = {0, 1, 0};
        cross3(f->fwd, y, f->right);
    }
    unit3(f->right);
    cross3(f->right, f->fwd, f->up);
    f->persp = cam->perspective;
    double r = cam->radius > 0 ? cam->radius : 1;
    double tan_half = tan(15.0 * 3.14159265358979323846 / 180.0);
    double dist = cam->perspective ? r / sin(15.0 * 3.14159265358979323846 / 180.0) : 3 * r;
    for (int c = 0; c < 3; c++) f->pos[c] = cam->center[c] + dist * e[c];
    f->scale = cam->perspective ? 1 / tan_half : 1 / r;
}

/* Screen position (pixels, y down) and depth key (larger is nearer). */
static void project(const frame *f, const double *p, double x0, double y0, double half, double *sx, double *sy,
                    double *key) {
    double d[3] = {p[0] - f->pos[0], p[1] - f->pos[1], p[2] - f->pos[2]};
    double x = dot3(d, f->right), y = dot3(d, f->up), z = dot3(d, f->fwd);
    if (f->persp) {
        double iz = z > 1e-9 ? 1 / z : 1e9;
        x *= iz;
        y *= iz;
        *key = iz;
    } else {
        *key = -z;
    }
    *sx = x0 + half + x * f->scale * half;
    *sy = y0 + half - y * f->scale * half;
}

int mesh_render(const mesh *m, const mesh_camera *cam, const double rgb[3], mesh_picture *pic, uint32_t x0,
                uint32_t y0, uint32_t w, uint32_t h) {
    if (x0 >= pic->w || y0 >= pic->h) return 0;
    if (w > pic->w - x0) w = pic->w - x0;
    if (h > pic->h - y0) h = pic->h - y0;
    if (!w || !h) return 0;
    double *zbuf = malloc((size_t)w * h * sizeof *zbuf);
    if (!zbuf) return -1;
    for (size_t i = 0; i < (size_t)w * h; i++) zbuf[i] = -DBL_MAX;
    frame f;
    make_frame(cam, &f);
    double side = w < h ? w : h;
    double half = 0.5 * side, ox = 0.5 * (w - side), oy = 0.5 * (h - side);
    double light[3];
    for (int c = 0; c < 3; c++) light[c] = -0.35 * f.right[c] + 0.6 * f.up[c] - f.fwd[c];
    unit3(light);
    for (size_t t = 0; t < m->nf; t++) {
        const double *p[3] = {NULL, NULL, NULL};
        double sx[3], sy[3], key[3];
        int bad = 0;
        for (size_t c = 0; c < 3; c++) {
            uint32_t vi = m->f[3 * t + c];
            if (vi >= m->nv) bad = 1;
            else p[c] = m->v + 3 * (size_t)vi;
        }
        if (bad) continue;
        for (int c = 0; c < 3; c++) project(&f, p[c], ox, oy, half, &sx[c], &sy[c], &key[c]);
        double e1[3], e2[3], n[3];
        for (int c = 0; c < 3; c++) {
            e1[c] = p[1][c] - p[0][c];
            e2[c] = p[2][c] - p[0][c];
        }
        cross3(e1, e2, n);
        if (unit3(n)) continue;
        double shade = 0.25 + 0.75 * fabs(dot3(n, light));
        uint8_t col[3];
        for (int c = 0; c < 3; c++) col[c] = (uint8_t)lrint(255 * fmin(1, fmax(0, shade * rgb[c])));
        double area = (sx[1] - sx[0]) * (sy[2] - sy[0]) - (sx[2] - sx[0]) * (sy[1] - sy[0]);
        if (!(fabs(area) > 1e-12) || !isfinite(area)) continue;
        double lo_x = fmin(sx[0], fmin(sx[1], sx[2])), hi_x = fmax(sx[0], fmax(sx[1], sx[2]));
        double lo_y = fmin(sy[0], fmin(sy[1], sy[2])), hi_y = fmax(sy[0], fmax(sy[1], sy[2]));
        if (hi_x < 0 || hi_y < 0 || lo_x >= w || lo_y >= h) continue;
        long ax = lo_x < 0 ? 0 : (long)floor(lo_x), bx = hi_x >= w ? (long)w - 1 : (long)floor(hi_x);
        long ay = lo_y < 0 ? 0 : (long)floor(lo_y), by = hi_y >= h ? (long)h - 1 : (long)floor(hi_y);
        for (long y = ay; y <= by; y++)
            for (long x = ax; x <= bx; x++) {
                double px = (double)x + 0.5, py = (double)y + 0.5;
                /* barycentric weights from the edge functions, each >= 0 inside */
                double b0 = ((sx[1] - px) * (sy[2] - py) - (sx[2] - px) * (sy[1] - py)) / area;
                double b1 = ((sx[2] - px) * (sy[0] - py) - (sx[0] - px) * (sy[2] - py)) / area;
                double b2 = 1 - b0 - b1;
                if (b0 < 0 || b1 < 0 || b2 < 0) continue;
                double z = b0 * key[0] + b1 * key[1] + b2 * key[2];
                double *zb = zbuf + (size_t)y * w + (size_t)x;
                if (z <= *zb) continue;
                *zb = z;
                memcpy(pic->rgb + 3 * ((size_t)(y0 + (uint32_t)y) * pic->w + x0 + (uint32_t)x), col, 3);
            }
    }
    free(zbuf);
    return 0;
}

pxl_status mesh_picture_save(pxl_ctx *ctx, const mesh_picture *pic, const char *path) {
    pxl_image *img = NULL;
    pxl_status s = pxl_image_create(ctx, pic->w, pic->h, &img);
    if (s != PXL_OK) return s;
    for (size_t i = 0; i < (size_t)pic->w * pic->h; i++) {
        memcpy(img->px + 4 * i, pic->rgb + 3 * i, 3);
        img->px[4 * i + 3] = 255;
    }
    s = pxl_pxi_save(ctx, img, path);
    pxl_image_free(img);
    return s;
}

pxl_status mesh_save_before_after(pxl_ctx *ctx, const mesh *before, const mesh *after, uint32_t side,
                                  int perspective, const char *path) {
    static const uint8_t bg[3] = {246, 246, 242};
    static const double c_before[3] = {0.55, 0.66, 0.85}, c_after[3] = {0.95, 0.68, 0.42};
    mesh_picture pic;
    if (mesh_picture_create(2 * side, side, bg, &pic)) return PXL_ERR_OUT_OF_MEMORY;
    mesh_camera cam = mesh_camera_fit(before, after, perspective);
    if (mesh_render(before, &cam, c_before, &pic, 0, 0, side, side) ||
        mesh_render(after, &cam, c_after, &pic, side, 0, side, side)) {
        mesh_picture_free(&pic);
        return PXL_ERR_OUT_OF_MEMORY;
    }
    for (uint32_t y = 0; y < side; y++) /* a thin divider */
        memset(pic.rgb + 3 * ((size_t)y * pic.w + side), 200, 3);
    pxl_status s = mesh_picture_save(ctx, &pic, path);
    mesh_picture_free(&pic);
    return s;
}
