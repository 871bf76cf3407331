/*
 * Helpers of `pxl mesh` (tools/cmd_mesh.c): triangle meshes and icospheres
 * (mesh_geom.c), OBJ/PLY writers, a small software rasteriser (mesh_render.c),
 * and the residual graphs of the two problems (mesh_ad.c). Public headers
 * only; the test tests/test_mesh.c compiles these files directly.
 */
#ifndef PXL_TOOLS_MESH_H
#define PXL_TOOLS_MESH_H

#include "pxl/ad.h"
#include "pxl/core.h"

#include <stddef.h>
#include <stdint.h>

#define MESH_MAX_LEVEL 7 /* 163,842 vertices, 327,680 faces */

/* A triangle mesh: nv vertices v[3*i .. 3*i+2], nf faces f[3*t .. 3*t+2]
 * (vertex indices, counter-clockwise seen from outside). malloc'ed. */
typedef struct mesh {
    size_t nv, nf;
    double *v;
    uint32_t *f;
} mesh;

void mesh_free(mesh *m); /* frees the arrays, zeroes m; NULL is a no-op */

/*
 * The icosphere of level 0..MESH_MAX_LEVEL: the icosahedron (level 0), each
 * level splitting every triangle into 4 with the new vertices (edge
 * midpoints) projected to the unit sphere. Level L has 10*4^L + 2 vertices,
 * 30*4^L edges and 20*4^L faces; the vertices of level L-1 keep their
 * indices. Returns 0, or -1 (level out of range, out of memory; m zeroed).
 */
int mesh_icosphere(int level, mesh *out);

/*
 * The undirected edges of m, each once, as pairs (i < j) sorted by (i, j):
 * *edges malloc'ed (2 * *n_edges entries). Returns 0, or -1 (out of memory,
 * or a face with an index out of range or a repeated vertex).
 */
int mesh_edges(const mesh *m, uint32_t **edges, size_t *n_edges);

/*
 * Vertex stars: for each vertex i, its neighbours in order around it, so that
 * (i, ring[k], ring[k+1 mod valence]) are its incident faces with m's
 * orientation. ring_start has nv + 1 entries (vertex i's ring is
 * ring[ring_start[i] .. ring_start[i+1])). Requires a closed manifold mesh
 * (every vertex's faces form one fan that closes); returns -1 otherwise or on
 * out of memory. Both arrays malloc'ed.
 */
int mesh_stars(const mesh *m, uint32_t **ring_start, uint32_t **ring);

/*
 * The mesh as OBJ text ("v x y z" lines, then "f a b c", 1-based) or as a
 * binary little-endian PLY (float32 x y z, uchar count + int32 indices), in a
 * malloc'ed buffer. Return 0, or -1 (out of memory).
 */
int mesh_obj_text(const mesh *m, char **out, size_t *len);
int mesh_ply_binary(const mesh *m, uint8_t **out, size_t *len);

/* Writes the mesh to path through pxl_file_write (atomic), as PLY when the
 * name ends in ".ply" (any case), else as OBJ. PXL_ERR_IO etc. with the
 * context's message. */
pxl_status mesh_write(pxl_ctx *ctx, const mesh *m, const char *path);

/* ---- rendering (mesh_render.c) ---- */

/* An RGB8 picture, row-major, 3 bytes per pixel, malloc'ed. */
typedef struct mesh_picture {
    uint32_t w, h;
    uint8_t *rgb;
} mesh_picture;

/* The camera looks from direction `eye` (need not be unit) at `center`; the
 * view fits a sphere of radius `radius` around it. perspective != 0: a
 * pinhole with a 30 degree field of view at distance 3.5 radii; else
 * orthographic. */
typedef struct mesh_camera {
    double eye[3], center[3], radius;
    int perspective;
} mesh_camera;

/* A camera for m (or for two meshes seen together): the bounding sphere of
 * the vertices of a and b (b may be NULL), seen from (1, 0.6, 1.4). */
mesh_camera mesh_camera_fit(const mesh *a, const mesh *b, int perspective);

/*
 * Renders m into pic's rectangle [x0, x0+w) x [y0, y0+h) (clipped to the
 * picture): z-buffered, flat shaded per face (Lambert, two-sided, plus
 * ambient) in colour rgb[3] (0..1), over whatever the picture holds.
 * Returns 0, or -1 (out of memory for the depth buffer).
 */
int mesh_render(const mesh *m, const mesh_camera *cam, const double rgb[3], mesh_picture *pic, uint32_t x0,
                uint32_t y0, uint32_t w, uint32_t h);

/* A w x h picture filled with one colour (0..255); -1 on out of memory. */
int mesh_picture_create(uint32_t w, uint32_t h, const uint8_t bg[3], mesh_picture *out);
void mesh_picture_free(mesh_picture *p);

/* Writes pic as a PNG through pxl's image writer (pxl/vm.h: pxl_pxi_save,
 * RGBA8, atomic). */
pxl_status mesh_picture_save(pxl_ctx *ctx, const mesh_picture *pic, const char *path);

/*
 * Before (left, blue) and after (right, orange), side by side, each side
 * `side` pixels square, seen by one camera (mesh_camera_fit of both),
 * written to path as a PNG. PXL_ERR_OUT_OF_MEMORY (no message) or
 * pxl_pxi_save's status and message.
 */
pxl_status mesh_save_before_after(pxl_ctx *ctx, const mesh *before, const mesh *after, uint32_t side,
                                  int perspective, const char *path);

/* ---- residual graphs (mesh_ad.c) ---- */

/*
 * The ARAP edge residual of docs/MESH.md:
 *   r = (p_i - p_j) - R(w_i) e,  e = q_i - q_j (input columns 0..2)
 * with slots 0..2 p_i, 3..5 p_j, 6..8 w_i and R Rodrigues' rotation (the
 * first-order v + w x v when |w|^2 <= 1e-12). Three outputs. *out is
 * pxl_ad_program_free'd by the caller.
 */
pxl_status mesh_arap_program(pxl_ctx *ctx, pxl_ad_program **out);

/* The ARAP set-up of an icosphere's vertices q[3*nv] (rest positions) and its
 * undirected edges: parameters x[6*nv] (p_i, w_i vertex-major; the start:
 * p = q, or the handle's target, w = 0), per directed edge the slots
 * (9 indices) and input e (3), the handles (vertex, target). */
typedef struct mesh_arap {
    size_t nv, n_dir;       /* vertices, directed edges (instances) */
    double *x;              /* 6 * nv */
    uint32_t *index;        /* 9 * n_dir */
    double *input;          /* 3 * n_dir */
    uint32_t *dir;          /* 2 * n_dir: (i, j) */
    size_t n_handles;
    uint32_t *handle;       /* n_handles vertex indices */
    double *target;         /* 3 * n_handles */
} mesh_arap;

/* Handles: rest z >= 0.8 moves to q + (0.3, 0, 0.4); rest z <= -0.8 stays.
 * Returns 0, or -1 (out of memory). */
int mesh_arap_setup(const mesh *m, const uint32_t *edges, size_t n_edges, mesh_arap *out);
void mesh_arap_free(mesh_arap *a);

/* The problem file ("pxl-arap 1", see docs/MESH.md) in a malloc'ed buffer. */
int mesh_arap_export_text(const mesh *m, const mesh_arap *a, char **out, size_t *len);

/*
 * The developability energy of one vertex star of valence k (3..64)
 * (Stein, Grinspun and Crane 2018, the covariance energy): slots 0..2 the
 * centre, 3+3j .. 5+3j the ring's neighbour j (in order around the centre);
 * one output,
 *   lambda_min(A),  A = sum over faces f = (centre, n_j, n_j+1) of
 *                       theta_f N_f N_f^T
 * with theta_f the tip angle at the centre and N_f the unit face normal;
 * lambda_min in closed form: the trigonometric solution of the symmetric 3x3
 * eigenproblem, lambda_min = q + 2 p cos(acos(r)/3 + 2 pi/3), with r
 * clamped to [-1, 1]; where acos' is infinite (r = 1: the two smallest
 * eigenvalues equal, as in a flat star; r = -1: the two largest equal) and
 * where A = qI (p = 0) by select, with finite derivatives; see mesh_ad.c.
 */
pxl_status mesh_dev_program(pxl_ctx *ctx, int valence, pxl_ad_program **out);

#endif
