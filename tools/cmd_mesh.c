/*
 * `pxl mesh arap|developable`: mesh optimisation on an icosphere with the
 * problem API of pxl/ad.h, writing the result as OBJ/PLY and a before/after
 * picture (PNG).
 *
 *   arap         as-rigid-as-possible deformation: per vertex a position and
 *                an axis-angle rotation, 3 residuals per directed edge (one
 *                template graph, one kernel), handles held constant, solved
 *                by Levenberg-Marquardt (docs/MESH.md has the exact problem).
 *   developable  the covariance energy of Stein, Grinspun and Crane (2018):
 *                the sum over vertex stars of the smallest eigenvalue of
 *                sum_f theta_f n_f n_f^T, one template graph per valence,
 *                minimised by L-BFGS from a perturbed icosphere.
 */
#include "cli.h"
#include "mesh.h"
#include "pxl/ad.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    cli_common c;
    uint32_t level, iterations, size;
    int have_level, have_iterations;
    double perturb;
    uint32_t cg_iterations; /* 0: the solver's default */
    double cg_tolerance;    /* 0: the solver's default */
    int ortho;
    const char *out_mesh, *out_png, *export_path;
    char cmd[32];
} mesh_opts;

typedef struct mesh_sub {
    const char *name, *usage, *about;
    uint32_t default_level, default_iterations;
    int (*run)(const struct mesh_sub *sub, mesh_opts *o);
} mesh_sub;

static int run_arap(const mesh_sub *sub, mesh_opts *o);
static int run_developable(const mesh_sub *sub, mesh_opts *o);

static const mesh_sub k_subs[] = {
    {"arap",
     "pxl mesh arap [--level 0..7] [--iterations N] [--backend cpu|gpu|auto] [--out-mesh FILE.obj|.ply]\n"
     "                  [--out-png FILE.png] [--export FILE] [--json]",
     "As-rigid-as-possible deformation of an icosphere (level L: 10*4^L + 2 vertices). The\n"
     "parameters are each vertex's position p_i and rotation w_i (axis-angle); every directed\n"
     "edge (i, j) gives 3 residuals (p_i - p_j) - R(w_i)(q_i - q_j), q the rest positions, all\n"
     "instances of one template graph (one kernel on the GPU). Vertices with rest z >= 0.8 are\n"
     "handles moved by (0.3, 0, 0.4), those with z <= -0.8 stay; handle positions are held\n"
     "constant. Levenberg-Marquardt with the default tolerances (the linear solver resolves to\n"
     "sparse Cholesky on the CPU, CGNR when the evaluation runs on the GPU). Prints the\n"
     "problem's size, groups (kernels) and instances, iterations, costs, termination and the\n"
     "time per phase. --export writes the problem as text (docs/MESH.md) for other solvers.",
     3, 100, run_arap},
    {"developable",
     "pxl mesh developable [--level 0..7] [--iterations N] [--perturb X] [--backend cpu|gpu|auto]\n"
     "                  [--out-mesh FILE.obj|.ply] [--out-png FILE.png] [--json]",
     "Minimises the developability energy of Stein, Grinspun and Crane (SIGGRAPH 2018) over\n"
     "the vertex positions of an icosphere: for each vertex the smallest eigenvalue of\n"
     "A_i = sum over its faces f of theta_f n_f n_f^T (theta_f the tip angle at the vertex,\n"
     "n_f the unit normal), in closed form. One template graph per valence (an icosphere has\n"
     "valence 5 at its 12 original vertices and 6 elsewhere: 2 groups). L-BFGS for a fixed\n"
     "number of iterations (or until it converges) from the icosphere perturbed by a\n"
     "deterministic offset of X times the mean edge length per vertex (default 0.02); the\n"
     "energy drops as the sphere turns into nearly flat patches joined along creases.",
     3, 100, run_developable},
};
#define N_SUBS (sizeof k_subs / sizeof k_subs[0])

static void mesh_usage(FILE *f) {
    fprintf(f, "usage: pxl mesh <subcommand> [options]\n\n"
               "Mesh optimisation on an icosphere, with pictures.\n\n"
               "subcommands:\n"
               "  arap          as-rigid-as-possible deformation (Levenberg-Marquardt)\n"
               "  developable   developability energy of Stein et al. 2018 (L-BFGS)\n"
               "\nrun `pxl mesh <subcommand> --help` for details.\n");
}

/* 0 ok, 1 help shown, 2 usage error. */
static int parse(int argc, char **argv, mesh_opts *o, const mesh_sub **out) {
    memset(o, 0, sizeof *o);
    int json = cli_wants_json(argc, argv);
    if (argc < 2 || !argv[1])
        return cli_fail(json, 2, "pxl mesh", "name a subcommand (arap, developable); see pxl mesh --help");
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
        mesh_usage(stdout);
        return 1;
    }
    const mesh_sub *sub = NULL;
    for (size_t i = 0; i < N_SUBS; i++)
        if (strcmp(name, k_subs[i].name) == 0) sub = &k_subs[i];
    if (!sub) return cli_fail(json, 2, "pxl mesh", "unknown subcommand '%.64s' (known: arap, developable)", name);
    snprintf(o->cmd, sizeof o->cmd, "pxl mesh %s", sub->name);
    o->level = UINT32_MAX;
    o->iterations = UINT32_MAX;
    o->perturb = -1;
    int is_arap = sub->run == run_arap;
    cli_opt opts[20];
    size_t n = 0;
    opts[n++] = (cli_opt){"level", CLI_U32, &o->level, 0, MESH_MAX_LEVEL, "L", "icosphere level 0..7 (default: see above)"};
    opts[n++] = (cli_opt){"iterations", CLI_U32, &o->iterations, 1, 100000, "N", "maximum iterations"};
    if (!is_arap)
        opts[n++] = (cli_opt){"perturb", CLI_DOUBLE, &o->perturb, 0, 1, "X",
                              "start offset per vertex, in mean edge lengths (default 0.02)"};
    opts[n++] = (cli_opt){"out-mesh", CLI_STRING, &o->out_mesh, 0, 0, "FILE", "write the result (.ply: binary PLY, else OBJ)"};
    opts[n++] = (cli_opt){"out-png", CLI_STRING, &o->out_png, 0, 0, "FILE", "write a picture: before (left), after (right)"};
    opts[n++] = (cli_opt){"size", CLI_U32, &o->size, 32, 4096, "N", "picture height, each half N x N (default 400)"};
    opts[n++] = (cli_opt){"ortho", CLI_FLAG, &o->ortho, 0, 0, NULL, "orthographic camera (default: perspective)"};
    if (is_arap) {
        opts[n++] = (cli_opt){"cg-iterations", CLI_U32, &o->cg_iterations, 1, 100000, "N",
                              "CGNR (the GPU's solver): at most N CG iterations per step (default 500)"};
        opts[n++] = (cli_opt){"cg-tolerance", CLI_DOUBLE, &o->cg_tolerance, 1e-12, 0.5, "X",
                              "CGNR: relative residual to reach (default 1e-3 on the GPU, 1e-6 on the CPU)"};
    }
    if (is_arap)
        opts[n++] = (cli_opt){"export", CLI_STRING, &o->export_path, 0, 0, "FILE", "write the problem file (pxl-arap 1)"};
    cli_opt common[] = {CLI_COMMON_OPTS(&o->c)};
    for (size_t i = 0; i < sizeof common / sizeof common[0]; i++) opts[n++] = common[i];
    int np = cli_parse_command(o->cmd, sub->usage, sub->about, argc - 2, argv + 2, opts, n, NULL, 0, &o->c.help);
    if (np < 0) return np == CLI_HELP_SHOWN ? 1 : 2;
    if (o->level == UINT32_MAX) o->level = sub->default_level;
    if (o->iterations == UINT32_MAX) o->iterations = sub->default_iterations;
    if (o->perturb < 0) o->perturb = 0.02;
    if (!o->size) o->size = 400;
    const char *paths[3] = {o->out_mesh, o->out_png, o->export_path};
    for (int i = 0; i < 3; i++)
        if (paths[i] && !paths[i][0]) return cli_fail(o->c.json, 2, o->cmd, "an output option needs a file name");
    *out = sub;
    return 0;
}

int cmd_mesh_parse(int argc, char **argv) {
    mesh_opts o;
    const mesh_sub *sub;
    return parse(argc, argv, &o, &sub);
}

int cmd_mesh(int argc, char **argv) {
    mesh_opts o;
    const mesh_sub *sub = NULL;
    int p = parse(argc, argv, &o, &sub);
    if (p) return p == 1 ? 0 : 2;
    return sub->run(sub, &o);
}

/* ---- shared pieces ---------------------------------------------------------------- */

static pxl_ad_backend ad_backend(pxl_ctx *ctx, const mesh_opts *o) {
    if (pxl_ctx_backend(ctx) != PXL_BACKEND_GPU) return PXL_AD_CPU;
    return o->c.backend == PXL_BACKEND_GPU ? PXL_AD_GPU : PXL_AD_AUTO;
}

static const char *ad_backend_name(pxl_ad_backend b) {
    return b == PXL_AD_GPU ? "gpu" : b == PXL_AD_AUTO ? "auto" : "cpu";
}

typedef struct {
    pxl_progress *bar;
} progress_state;

static void on_progress(void *user, int iteration, double cost) {
    (void)cost;
    progress_state *ps = user;
    pxl_progress_update(ps->bar, (uint64_t)iteration);
}

/* The groups of pb, as text lines or a JSON array. */
static void print_groups(const pxl_ad_problem *pb, int json) {
    pxl_ad_problem_info info = pxl_ad_problem_get_info(pb);
    if (json) printf(",\"groups\":[");
    for (size_t i = 0; i < info.n_groups; i++) {
        pxl_ad_group_info gi;
        if (pxl_ad_problem_group_info(pb, i, &gi) != PXL_OK) continue;
        if (json)
            printf("%s{\"instances\":%zu,\"slots\":%zu,\"inputs\":%zu,\"outputs\":%zu,\"nodes\":%zu,\"hash\":\"%016llx\"}",
                   i ? "," : "", gi.n_instances, gi.n_slots, gi.n_inputs, gi.n_outputs, gi.n_nodes,
                   (unsigned long long)gi.hash);
        else
            printf("    kernel %zu: %zu instances, %zu slots, %zu inputs, %zu outputs, %zu tape nodes\n", i,
                   gi.n_instances, gi.n_slots, gi.n_inputs, gi.n_outputs, gi.n_nodes);
    }
    if (json) printf("]");
}

static void print_summary(const pxl_ad_solve_summary *s, const char *cost_name, int json) {
    if (json) {
        printf(",\"iterations\":%d,\"successful_steps\":%d,\"initial_%s\":%.17g,\"final_%s\":%.17g,"
               "\"termination\":\"%s\",\"message\":",
               s->iterations, s->successful_steps, cost_name, s->initial_cost, cost_name, s->final_cost,
               pxl_ad_termination_name(s->termination));
        cli_json_string(stdout, s->message);
        printf(",\"gradient_max_norm\":%.6g,\"seconds\":{\"evaluation\":%.6f,\"linear_solver\":%.6f,\"other\":%.6f,"
               "\"total\":%.6f}",
               s->gradient_max_norm, s->eval_seconds, s->linear_solver_seconds, s->other_seconds, s->total_seconds);
    } else {
        printf("  iterations %d (%d successful), %s %.6e -> %.6e\n", s->iterations, s->successful_steps, cost_name,
               s->initial_cost, s->final_cost);
        printf("  termination %s: %s\n", pxl_ad_termination_name(s->termination), s->message);
        printf("  time: evaluation %.3f s, linear solver %.3f s, other %.3f s, total %.3f s\n", s->eval_seconds,
               s->linear_solver_seconds, s->other_seconds, s->total_seconds);
    }
}

/* Writes --out-mesh and --out-png; returns 0 or the exit code after a message. */
static int write_outputs(pxl_ctx *ctx, const mesh_opts *o, const mesh *before, const mesh *after) {
    if (o->out_mesh) {
        pxl_status s = mesh_write(ctx, after, o->out_mesh);
        if (s != PXL_OK)
            return cli_fail(o->c.json, 1, o->cmd, "%s",
                            s == PXL_ERR_OUT_OF_MEMORY ? "out of memory writing the mesh" : pxl_ctx_error(ctx));
    }
    if (o->out_png) {
        pxl_status s = mesh_save_before_after(ctx, before, after, o->size, !o->ortho, o->out_png);
        if (s != PXL_OK)
            return cli_fail(o->c.json, 1, o->cmd, "%s",
                            s == PXL_ERR_OUT_OF_MEMORY ? "out of memory rendering the picture" : pxl_ctx_error(ctx));
    }
    return 0;
}

static void print_files(const mesh_opts *o) {
    if (o->c.json) {
        printf(",\"files\":{");
        int k = 0;
        const char *names[3] = {"mesh", "png", "export"};
        const char *paths[3] = {o->out_mesh, o->out_png, o->export_path};
        for (int i = 0; i < 3; i++)
            if (paths[i]) {
                printf("%s\"%s\":", k++ ? "," : "", names[i]);
                cli_json_string(stdout, paths[i]);
            }
        printf("}");
    } else {
        if (o->out_mesh) printf("  wrote %s\n", o->out_mesh);
        if (o->out_png) printf("  wrote %s\n", o->out_png);
        if (o->export_path) printf("  wrote %s\n", o->export_path);
    }
}

static int open_ctx(mesh_opts *o, pxl_ctx **ctx) { return cli_open_ctx(&o->c, ctx); }

/* ---- arap ------------------------------------------------------------------------- */

static void arap_header(const mesh_opts *o, const mesh *m, size_t n_edges, const mesh_arap *a,
                        const pxl_ad_problem *pb, pxl_ad_backend be) {
    size_t n_params = 6 * m->nv;
    pxl_ad_problem_info info = pxl_ad_problem_get_info(pb);
    if (o->c.json) {
        printf("{\"ok\":true,\"command\":\"mesh arap\",\"level\":%u,\"vertices\":%zu,\"edges\":%zu,\"faces\":%zu,"
               "\"parameters\":%zu,\"handles\":%zu,\"constant_parameters\":%zu,\"residuals\":%zu,\"instances\":%zu,"
               "\"backend\":\"%s\"",
               o->level, m->nv, n_edges, m->nf, n_params, a->n_handles, 3 * a->n_handles, info.n_residuals,
               info.n_instances, ad_backend_name(be));
        print_groups(pb, 1);
    } else {
        printf("%s: icosphere level %u: %zu vertices, %zu edges, %zu faces\n", o->cmd, o->level, m->nv, n_edges, m->nf);
        printf("  parameters %zu (position + rotation per vertex), %zu handles (%zu positions held constant)\n",
               n_params, a->n_handles, 3 * a->n_handles);
        printf("  residuals %zu (%zu directed edges x 3), %zu kernel(s):\n", info.n_residuals, a->n_dir, info.n_groups);
        print_groups(pb, 0);
        printf("  backend %s\n", ad_backend_name(be));
    }
}

static void arap_result(const pxl_ad_solve_summary *sum, double handle_err, int json) {
    if (json) {
        printf(",\"linear_solver\":\"%s\"", pxl_ad_linear_solver_name(sum->linear_solver));
        print_summary(sum, "cost", 1);
        printf(",\"handle_max_error\":%.3g", handle_err);
    } else {
        printf("  linear solver %s\n", pxl_ad_linear_solver_name(sum->linear_solver));
        print_summary(sum, "cost", 0);
        printf("  handles: largest |position - target| %.3g\n", handle_err);
    }
}

static int run_arap(const mesh_sub *sub, mesh_opts *o) {
    (void)sub;
    pxl_ctx *ctx = NULL;
    if (open_ctx(o, &ctx)) return 1;
    mesh m = {0}, out = {0};
    uint32_t *edges = NULL;
    size_t n_edges = 0;
    mesh_arap a = {0};
    pxl_ad_program *prog = NULL;
    pxl_ad_problem *pb = NULL;
    char *text = NULL;
    int rc = 0;
    if (mesh_icosphere((int)o->level, &m) || mesh_edges(&m, &edges, &n_edges) || mesh_arap_setup(&m, edges, n_edges, &a)) {
        rc = cli_fail(o->c.json, 1, o->cmd, "out of memory building the icosphere");
        goto done;
    }
    if (o->export_path) {
        size_t len = 0;
        if (mesh_arap_export_text(&m, &a, &text, &len)) {
            rc = cli_fail(o->c.json, 1, o->cmd, "out of memory writing the problem file");
            goto done;
        }
        if (pxl_file_write(ctx, o->export_path, text, len) != PXL_OK) {
            rc = cli_fail(o->c.json, 1, o->cmd, "%s", pxl_ctx_error(ctx));
            goto done;
        }
    }
    size_t n_params = 6 * m.nv;
    if (mesh_arap_program(ctx, &prog) != PXL_OK || pxl_ad_problem_create(ctx, n_params, &pb) != PXL_OK ||
        pxl_ad_problem_add(pb, prog, a.index, a.input, a.n_dir, NULL) != PXL_OK) {
        rc = cli_fail(o->c.json, 1, o->cmd, "%s", pxl_ctx_error(ctx));
        goto done;
    }
    for (size_t h = 0; h < a.n_handles; h++)
        for (size_t c = 0; c < 3; c++)
            if (pxl_ad_problem_set_constant(pb, 6 * (size_t)a.handle[h] + c, 1) != PXL_OK) {
                rc = cli_fail(o->c.json, 1, o->cmd, "%s", pxl_ctx_error(ctx));
                goto done;
            }
    pxl_ad_backend be = ad_backend(ctx, o);
    if (!o->c.json) arap_header(o, &m, n_edges, &a, pb, be);
    fflush(stdout);
    pxl_ad_solve_options so;
    memset(&so, 0, sizeof so);
    so.max_iterations = (int)o->iterations;
    so.eval.backend = be;
    so.max_linear_iterations = (int)o->cg_iterations;
    so.linear_tolerance = o->cg_tolerance;
    progress_state ps = {pxl_progress_begin(ctx, "arap (LM iterations)", o->iterations)};
    so.progress = on_progress;
    so.progress_user = &ps;
    pxl_ad_solve_summary sum;
    memset(&sum, 0, sizeof sum);
    pxl_status s = pxl_ad_problem_solve(pb, a.x, &so, &sum);
    pxl_progress_end(ps.bar);
    if (s != PXL_OK) {
        rc = cli_fail(o->c.json, 1, o->cmd, "%s", pxl_ctx_error(ctx));
        goto done;
    }
    /* the result: positions from the parameters */
    out.nv = m.nv;
    out.nf = m.nf;
    out.v = malloc(3 * m.nv * sizeof *out.v);
    out.f = malloc(3 * m.nf * sizeof *out.f);
    if (!out.v || !out.f) {
        rc = cli_fail(o->c.json, 1, o->cmd, "out of memory");
        goto done;
    }
    memcpy(out.f, m.f, 3 * m.nf * sizeof *m.f);
    for (size_t i = 0; i < m.nv; i++) memcpy(out.v + 3 * i, a.x + 6 * i, 3 * sizeof(double));
    double handle_err = 0;
    for (size_t h = 0; h < a.n_handles; h++)
        for (size_t c = 0; c < 3; c++)
            handle_err = fmax(handle_err, fabs(out.v[3 * (size_t)a.handle[h] + c] - a.target[3 * h + c]));
    if (!o->c.json) arap_result(&sum, handle_err, 0);
    rc = write_outputs(ctx, o, &m, &out);
    if (rc) goto done;
    if (o->c.json) {
        arap_header(o, &m, n_edges, &a, pb, be);
        arap_result(&sum, handle_err, 1);
    }
    print_files(o);
    if (o->c.json) printf("}\n");
done:
    free(text);
    pxl_ad_problem_free(pb);
    pxl_ad_program_free(prog);
    mesh_arap_free(&a);
    free(edges);
    mesh_free(&out);
    mesh_free(&m);
    pxl_ctx_free(ctx);
    return rc;
}

/* ---- developable ------------------------------------------------------------------ */

/* A deterministic offset in [-1, 1] from (vertex, component). */
static double jitter(uint32_t i, uint32_t c) {
    uint64_t z = ((uint64_t)i << 2 | c) + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) / (double)(1ull << 52) - 1.0;
}

static void dev_header(const mesh_opts *o, const mesh *m, size_t n_edges, double mean_edge, const size_t *count,
                       const pxl_ad_problem *pb, pxl_ad_backend be) {
    size_t n_params = 3 * m->nv;
    pxl_ad_problem_info info = pxl_ad_problem_get_info(pb);
    if (o->c.json) {
        printf("{\"ok\":true,\"command\":\"mesh developable\",\"level\":%u,\"vertices\":%zu,\"edges\":%zu,"
               "\"faces\":%zu,\"parameters\":%zu,\"perturb\":%.6g,\"valence\":{",
               o->level, m->nv, n_edges, m->nf, n_params, o->perturb);
        int first = 1;
        for (int k = 3; k <= 64; k++)
            if (count[k]) {
                printf("%s\"%d\":%zu", first ? "" : ",", k, count[k]);
                first = 0;
            }
        printf("},\"residuals\":%zu,\"instances\":%zu,\"backend\":\"%s\"", info.n_residuals, info.n_instances,
               ad_backend_name(be));
        print_groups(pb, 1);
    } else {
        printf("%s: icosphere level %u: %zu vertices, %zu edges, %zu faces\n", o->cmd, o->level, m->nv, n_edges, m->nf);
        printf("  start: each vertex offset by up to %g x the mean edge length (%.4g)\n", o->perturb, mean_edge);
        printf("  parameters %zu (vertex positions); vertex stars:", n_params);
        int shown = 0;
        for (int k = 3; k <= 64; k++)
            if (count[k]) printf("%s %zu of valence %d", shown++ ? "," : "", count[k], k);
        printf("\n  energy terms %zu (one per star), %zu kernel(s), one per valence:\n", info.n_residuals,
               info.n_groups);
        print_groups(pb, 0);
        printf("  backend %s, L-BFGS\n", ad_backend_name(be));
    }
}

static int run_developable(const mesh_sub *sub, mesh_opts *o) {
    (void)sub;
    pxl_ctx *ctx = NULL;
    if (open_ctx(o, &ctx)) return 1;
    mesh m = {0}, start = {0}, out = {0};
    uint32_t *edges = NULL, *ring_start = NULL, *ring = NULL, *index = NULL;
    size_t n_edges = 0;
    double *x = NULL;
    pxl_ad_problem *pb = NULL;
    size_t count[65] = {0};
    int rc = 0;
    if (mesh_icosphere((int)o->level, &m) || mesh_edges(&m, &edges, &n_edges) || mesh_stars(&m, &ring_start, &ring)) {
        rc = cli_fail(o->c.json, 1, o->cmd, "out of memory building the icosphere");
        goto done;
    }
    double mean_edge = 0;
    for (size_t e = 0; e < n_edges; e++) {
        const double *a = m.v + 3 * (size_t)edges[2 * e], *b = m.v + 3 * (size_t)edges[2 * e + 1];
        mean_edge += sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) + (a[2] - b[2]) * (a[2] - b[2]));
    }
    mean_edge /= (double)n_edges;
    size_t n_params = 3 * m.nv;
    x = malloc(n_params * sizeof *x);
    start.v = malloc(n_params * sizeof *start.v);
    index = malloc(3 * (64 + 1) * m.nv * sizeof *index);
    out.v = malloc(n_params * sizeof *out.v);
    out.f = malloc(3 * m.nf * sizeof *out.f);
    if (!x || !start.v || !index || !out.v || !out.f) {
        rc = cli_fail(o->c.json, 1, o->cmd, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < m.nv; i++)
        for (uint32_t c = 0; c < 3; c++) x[3 * i + c] = m.v[3 * i + c] + o->perturb * mean_edge * jitter((uint32_t)i, c);
    memcpy(start.v, x, n_params * sizeof *x);
    start.nv = out.nv = m.nv;
    start.nf = out.nf = m.nf;
    start.f = m.f; /* borrowed: start.f is not freed */
    memcpy(out.f, m.f, 3 * m.nf * sizeof *m.f);
    if (pxl_ad_problem_create(ctx, n_params, &pb) != PXL_OK) {
        rc = cli_fail(o->c.json, 1, o->cmd, "%s", pxl_ctx_error(ctx));
        goto done;
    }
    for (size_t i = 0; i < m.nv; i++) {
        uint32_t k = ring_start[i + 1] - ring_start[i];
        if (k > 64) {
            rc = cli_fail(o->c.json, 1, o->cmd, "vertex %zu has valence %u (at most 64)", i, k);
            goto done;
        }
        count[k]++;
    }
    /* one template per valence, its instances the stars of that valence */
    for (uint32_t k = 3; k <= 64; k++) {
        if (!count[k]) continue;
        size_t n = 0, slots = 3 * ((size_t)k + 1);
        for (size_t i = 0; i < m.nv; i++) {
            if (ring_start[i + 1] - ring_start[i] != k) continue;
            uint32_t *ix = index + n * slots;
            for (uint32_t c = 0; c < 3; c++) ix[c] = 3 * (uint32_t)i + c;
            for (uint32_t j = 0; j < k; j++)
                for (uint32_t c = 0; c < 3; c++) ix[3 + 3 * j + c] = 3 * ring[ring_start[i] + j] + c;
            n++;
        }
        pxl_ad_program *prog = NULL;
        pxl_status s = mesh_dev_program(ctx, (int)k, &prog);
        if (s == PXL_OK) s = pxl_ad_problem_add(pb, prog, index, NULL, n, NULL);
        pxl_ad_program_free(prog);
        if (s != PXL_OK) {
            rc = cli_fail(o->c.json, 1, o->cmd, "%s", pxl_ctx_error(ctx));
            goto done;
        }
    }
    pxl_ad_backend be = ad_backend(ctx, o);
    if (!o->c.json) dev_header(o, &m, n_edges, mean_edge, count, pb, be);
    fflush(stdout);
    pxl_ad_solve_options so;
    memset(&so, 0, sizeof so);
    so.max_iterations = (int)o->iterations;
    so.eval.backend = be;
    progress_state ps = {pxl_progress_begin(ctx, "developable (L-BFGS iterations)", o->iterations)};
    so.progress = on_progress;
    so.progress_user = &ps;
    pxl_ad_solve_summary sum;
    memset(&sum, 0, sizeof sum);
    pxl_status s = pxl_ad_problem_minimize(pb, x, &so, &sum);
    pxl_progress_end(ps.bar);
    if (s != PXL_OK) {
        rc = cli_fail(o->c.json, 1, o->cmd, "%s", pxl_ctx_error(ctx));
        goto done;
    }
    memcpy(out.v, x, n_params * sizeof *x);
    if (!o->c.json) print_summary(&sum, "energy", 0);
    rc = write_outputs(ctx, o, &start, &out);
    if (rc) goto done;
    if (o->c.json) {
        dev_header(o, &m, n_edges, mean_edge, count, pb, be);
        print_summary(&sum, "energy", 1);
    }
    print_files(o);
    if (o->c.json) printf("}\n");
done:
    pxl_ad_problem_free(pb);
    free(x);
    free(index);
    free(start.v);
    free(ring);
    free(ring_start);
    free(edges);
    mesh_free(&out);
    mesh_free(&m);
    pxl_ctx_free(ctx);
    return rc;
}
