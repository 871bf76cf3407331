/* The option parser and helpers shared by all subcommands. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const cli_opt *find(const cli_opt *opts, size_t n, const char *name, size_t len) {
    for (size_t i = 0; i < n; i++)
        if (strlen(opts[i].name) == len && memcmp(opts[i].name, name, len) == 0) return &opts[i];
    return NULL;
}

static int set_value(const cli_opt *o, const char *v, char *err, size_t cap) {
    switch (o->kind) {
    case CLI_FLAG: return 0;
    case CLI_STRING:
        *(const char **)o->dst = v;
        return 0;
    case CLI_BACKEND:
        if (pxl_backend_parse(v, (pxl_backend *)o->dst) != PXL_OK) {
            snprintf(err, cap, "--%s: '%.64s' is not one of auto, gpu, cpu", o->name, v);
            return -1;
        }
        return 0;
    case CLI_U32: {
        if (*v < '0' || *v > '9') {
            snprintf(err, cap, "--%s: '%.64s' is not a non-negative integer", o->name, v);
            return -1;
        }
        errno = 0;
        char *end;
        unsigned long long x = strtoull(v, &end, 10);
        if (errno || *end || (double)x < o->min || (double)x > o->max) {
            snprintf(err, cap, "--%s: '%.64s' must be an integer in [%.0f, %.0f]", o->name, v, o->min,
                     o->max);
            return -1;
        }
        *(uint32_t *)o->dst = (uint32_t)x;
        return 0;
    }
    case CLI_DOUBLE: {
        errno = 0;
        char *end;
        double x = strtod(v, &end);
        if (errno || end == v || *end || !isfinite(x) || x < o->min || x > o->max) {
            snprintf(err, cap, "--%s: '%.64s' must be a number in [%g, %g]", o->name, v, o->min,
                     o->max);
            return -1;
        }
        *(double *)o->dst = x;
        return 0;
    }
    }
    return -1;
}

int cli_parse(int argc, char **argv, const cli_opt *opts, size_t n_opts, const char **pos,
              int max_pos, char *err, size_t err_cap) {
    int n_pos = 0;
    int only_pos = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!a) break;
        if (only_pos || a[0] != '-' || a[1] == '\0') {
            if (n_pos >= max_pos) {
                snprintf(err, err_cap, "unexpected argument '%.64s'", a);
                return -1;
            }
            pos[n_pos++] = a;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            only_pos = 1;
            continue;
        }
        if (strcmp(a, "-h") == 0) a = "--help";
        else if (strcmp(a, "-o") == 0 && find(opts, n_opts, "output", 6)) a = "--output";
        else if (strcmp(a, "-m") == 0 && find(opts, n_opts, "model", 5)) a = "--model";
        else if (strcmp(a, "-p") == 0 && find(opts, n_opts, "prompt", 6)) a = "--prompt";
        else if (strcmp(a, "-f") == 0 && find(opts, n_opts, "file", 4)) a = "--file";
        if (a[1] != '-') {
            snprintf(err, err_cap, "unknown option '%.64s' (options start with --)", a);
            return -1;
        }
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const cli_opt *o = find(opts, n_opts, name, len);
        if (!o) {
            snprintf(err, err_cap, "unknown option '--%.*s' (see --help)", (int)(len > 64 ? 64 : len), name);
            return -1;
        }
        if (o->kind == CLI_FLAG) {
            if (eq) {
                snprintf(err, err_cap, "--%s takes no value", o->name);
                return -1;
            }
            *(int *)o->dst = 1;
            continue;
        }
        const char *v;
        if (eq) v = eq + 1;
        else if (i + 1 < argc && argv[i + 1]) v = argv[++i];
        else {
            snprintf(err, err_cap, "--%s needs a value (%s)", o->name, o->metavar ? o->metavar : "VALUE");
            return -1;
        }
        if (set_value(o, v, err, err_cap) != 0) return -1;
    }
    return n_pos;
}

void cli_usage(FILE *f, const char *usage, const char *about, const cli_opt *opts, size_t n_opts) {
    fprintf(f, "usage: %s\n\n%s\n\noptions:\n", usage, about);
    for (size_t i = 0; i < n_opts; i++) {
        char left[64];
        snprintf(left, sizeof left, "--%s%s%s", opts[i].name, opts[i].metavar ? " " : "",
                 opts[i].metavar ? opts[i].metavar : "");
        fprintf(f, "  %-26s %s\n", left, opts[i].help);
    }
}

pxl_ctx_options cli_ctx_options(const cli_common *c) {
    pxl_ctx_options o = pxl_ctx_options_default();
    o.backend = c->backend;
    o.n_threads = (int)c->threads;
    o.webgpu_library = c->webgpu_lib;
    o.quiet = c->quiet;
    o.tuning = c->tune ? c->tune : getenv("PXL_TUNE");
    o.dawn_toggles = getenv("PXL_DAWN_TOGGLES");
    return o;
}

pxl_ctx_options cli_ctx_options_unchecked(const cli_common *c) {
    pxl_ctx_options o = cli_ctx_options(c);
    o.gpu_unchecked = !c->gpu_checks;
    return o;
}

static int open_ctx(const cli_common *c, const pxl_ctx_options *o, pxl_ctx **out) {
    pxl_ctx *ctx = NULL;
    pxl_status s = pxl_ctx_create(o, &ctx);
    if (s != PXL_OK) {
        cli_fail(c->json, 1, "pxl", "%s", ctx ? pxl_ctx_error(ctx) : pxl_status_str(s));
        pxl_ctx_free(ctx);
        return 1;
    }
    *out = ctx;
    return 0;
}

int cli_open_ctx(const cli_common *c, pxl_ctx **out) {
    pxl_ctx_options o = cli_ctx_options(c);
    return open_ctx(c, &o, out);
}

int cli_open_ctx_unchecked(const cli_common *c, pxl_ctx **out) {
    pxl_ctx_options o = cli_ctx_options_unchecked(c);
    return open_ctx(c, &o, out);
}

int cli_parse_command(const char *cmd, const char *usage, const char *about, int argc, char **argv,
                      const cli_opt *opts, size_t n_opts, const char **pos, int max_pos, const int *help) {
    char err[256];
    int n = cli_parse(argc, argv, opts, n_opts, pos, max_pos, err, sizeof err);
    if (n < 0) return cli_fail(cli_wants_json(argc, argv), CLI_USAGE_ERROR, cmd, "%s", err);
    if (*help) {
        cli_usage(stdout, usage, about, opts, n_opts);
        return CLI_HELP_SHOWN;
    }
    return n;
}
