/*
 * `pxl fit --model EXPR --data FILE --start "b1=500,b2=1e-4"`: nonlinear
 * least-squares curve fitting, as gnuplot's fit and SciPy's curve_fit do it.
 *
 * The model is parsed by pxl_ad_parse into one template graph: the names in
 * --start are its parameter slots, the data's columns its inputs, and each
 * data row is one instance with one residual, model - y (or rhs - lhs for
 * "lhs = rhs"). The data is read by pxl_ad_table_parse. The problem API
 * solves it (Levenberg-Marquardt, dense, f64 on the CPU unless --backend
 * says otherwise) and gives the standard errors from the covariance.
 */
#include "cli.h"
#include "pxl/ad.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FIT_MAX_PARAMS 512 /* parameters named in --start: the dense Cholesky solver takes them all */
#define FIT_CMD "pxl fit"

typedef struct {
    cli_common c;
    const char *model, *data, *start, *columns, *loss;
    uint32_t max_iterations;
    double tolerance;
    int backend_given; /* --backend was on the command line (else the fit runs on the CPU) */
} fit_opts;

static const char *k_usage =
    "pxl fit --model EXPR --data FILE --start \"b1=V,b2=V,...\" [--columns x,y] [--loss huber:1.0]\n"
    "               [--max-iterations N] [--tolerance T] [--backend cpu|gpu|auto] [--json]";
static const char *k_about =
    "Fits the parameters of a model to data by nonlinear least squares (Levenberg-Marquardt\n"
    "with derivatives by automatic differentiation, in double precision on the CPU unless\n"
    "--backend says otherwise) and prints each parameter with its standard error, the\n"
    "residual sum of squares, the residual standard deviation, the degrees of freedom,\n"
    "the iterations and why the solver stopped.\n"
    "\n"
    "Model: an expression in the parameters (the names in --start) and the data's columns,\n"
    "fitted to the column y (or the last column when none is named y), or an equation\n"
    "\"lhs = rhs\" whose residual is rhs - lhs (\"log(y) = b1 - b2*x\"). Operators + - * /\n"
    "and ^ or ** (right-associative; -x^2 is -(x^2)), comparisons < <= > >= == != (0 or 1),\n"
    "constants pi and e, and the functions exp log log10 sqrt sin cos tan asin acos atan\n"
    "sinh cosh tanh sigmoid relu softplus abs sign floor ceil pow hypot atan2 min max\n"
    "clamp(x, lo, hi) select(cond, a, b). An error names the column of the model.\n"
    "\n"
    "Data (FILE, or - for stdin): columns separated by whitespace or commas; # comments;\n"
    "a first line of names is a header, else the columns are x, x2, x3, ... and the last\n"
    "is y; --columns names them (and replaces a header). Errors name the line and column.\n"
    "\n"
    "Standard errors are sqrt(diag((J^T J)^-1) * RSS / (rows - parameters)) at the solution\n"
    "(without the robust loss). Exit status: 0 converged, 1 an error (model, data, solver\n"
    "failure), 2 a usage error, 3 the results of a fit that did not converge within\n"
    "--max-iterations. --json prints one object with the same fields.";

static int parse(int argc, char **argv, fit_opts *o) {
    memset(o, 0, sizeof *o);
    o->max_iterations = 1000;
    o->c.backend = (pxl_backend)-1; /* "not given": the fit then runs on the CPU */
    cli_opt opts[] = {
        {"model", CLI_STRING, &o->model, 0, 0, "EXPR", "the model, e.g. \"b1*(1-exp(-b2*x))\" (also -m)"},
        {"data", CLI_STRING, &o->data, 0, 0, "FILE", "data file, - for stdin"},
        {"start", CLI_STRING, &o->start, 0, 0, "NAME=V,...", "the parameters and their starting values"},
        {"columns", CLI_STRING, &o->columns, 0, 0, "A,B,...", "names of the data's columns (replace a header)"},
        {"loss", CLI_STRING, &o->loss, 0, 0, "KIND[:A]",
         "robust loss: none, huber, soft_l1, cauchy, arctan, tukey; A its scale (default 1)"},
        {"max-iterations", CLI_U32, &o->max_iterations, 1, 1000000, "N", "solver iterations at most (default 1000)"},
        {"tolerance", CLI_DOUBLE, &o->tolerance, 0, 1e-1, "T",
         "stop when the relative step is below T (default 1e-15) or the relative cost change below T (default 1e-18)"},
        CLI_COMMON_OPTS(&o->c),
    };
    const char *pos[1] = {NULL};
    int n = cli_parse_command(FIT_CMD, k_usage, k_about, argc - 1, argv + 1, opts, sizeof opts / sizeof opts[0], pos,
                              1, &o->c.help);
    if (n < 0) {
        if (o->c.backend == (pxl_backend)-1) o->c.backend = PXL_BACKEND_AUTO;
        return n == CLI_HELP_SHOWN ? 1 : 2;
    }
    if (n > 0) return cli_fail(o->c.json, 2, FIT_CMD, "unexpected argument '%.64s'; see pxl fit --help", pos[0]);
    if (!o->model) return cli_fail(o->c.json, 2, FIT_CMD, "--model EXPR is required; see pxl fit --help");
    if (!o->data) return cli_fail(o->c.json, 2, FIT_CMD, "--data FILE is required (- for stdin)");
    if (!o->start) return cli_fail(o->c.json, 2, FIT_CMD, "--start \"NAME=VALUE,...\" is required");
    o->backend_given = o->c.backend != (pxl_backend)-1;
    if (!o->backend_given) o->c.backend = PXL_BACKEND_AUTO;
    return 0;
}

int cmd_fit_parse(int argc, char **argv) {
    fit_opts o;
    return parse(argc, argv, &o);
}

/* ---- names -------------------------------------------------------------------- */

static int is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9'); }

typedef struct {
    char **names;
    double *values;
    size_t n;
} start_list;

static void start_free(start_list *s) {
    for (size_t i = 0; i < s->n; i++) free(s->names[i]);
    free(s->names);
    free(s->values);
    memset(s, 0, sizeof *s);
}

/* --start "b1=500, b2=1e-4": 0, or 1 with a message in err. */
static int parse_start(const char *text, start_list *out, char *err, size_t cap) {
    memset(out, 0, sizeof *out);
    size_t len = strlen(text), i = 0;
    for (;;) {
        while (i < len && (text[i] == ' ' || text[i] == '\t')) i++;
        if (i >= len) {
            if (out->n == 0) snprintf(err, cap, "--start is empty: give NAME=VALUE for each parameter");
            else snprintf(err, cap, "--start column %zu: a NAME=VALUE after the last ','", i + 1);
            return 1;
        }
        size_t b = i;
        if (!is_name_start(text[i])) {
            snprintf(err, cap, "--start column %zu: expected a parameter name, found '%c'", i + 1, text[i]);
            return 1;
        }
        while (i < len && is_name_char(text[i])) i++;
        size_t name_end = i;
        while (i < len && (text[i] == ' ' || text[i] == '\t')) i++;
        if (i >= len || text[i] != '=') {
            snprintf(err, cap, "--start column %zu: expected '=' after '%.*s'", i + 1, (int)(name_end - b > 64 ? 64 : name_end - b),
                     text + b);
            return 1;
        }
        i++;
        while (i < len && (text[i] == ' ' || text[i] == '\t')) i++;
        size_t vb = i;
        while (i < len && text[i] != ',') i++;
        size_t ve = i;
        while (ve > vb && (text[ve - 1] == ' ' || text[ve - 1] == '\t')) ve--;
        char num[128];
        size_t vn = ve - vb;
        char *end = NULL;
        double v = 0;
        if (vn > 0 && vn < sizeof num) {
            memcpy(num, text + vb, vn);
            num[vn] = '\0';
            v = strtod(num, &end);
        }
        if (vn == 0 || vn >= sizeof num || !end || *end != '\0') {
            snprintf(err, cap, "--start column %zu: '%.*s' is not a number (the value of '%.*s')", vb + 1,
                     (int)(vn > 64 ? 64 : vn), text + vb, (int)(name_end - b > 64 ? 64 : name_end - b), text + b);
            return 1;
        }
        if (!isfinite(v)) {
            snprintf(err, cap, "--start column %zu: the start of '%.*s' is not finite (%.*s)", vb + 1,
                     (int)(name_end - b > 64 ? 64 : name_end - b), text + b, (int)(vn > 64 ? 64 : vn), text + vb);
            return 1;
        }
        for (size_t j = 0; j < out->n; j++)
            if (strlen(out->names[j]) == name_end - b && memcmp(out->names[j], text + b, name_end - b) == 0) {
                snprintf(err, cap, "--start column %zu: '%s' is given twice", b + 1, out->names[j]);
                return 1;
            }
        if (out->n == FIT_MAX_PARAMS) {
            snprintf(err, cap, "--start: more than %d parameters", FIT_MAX_PARAMS);
            return 1;
        }
        char **nn = realloc(out->names, (out->n + 1) * sizeof *nn);
        if (nn) out->names = nn;
        double *nv = realloc(out->values, (out->n + 1) * sizeof *nv);
        if (nv) out->values = nv;
        char *name = malloc(name_end - b + 1);
        if (!nn || !nv || !name) {
            free(name);
            snprintf(err, cap, "out of memory");
            return 1;
        }
        memcpy(name, text + b, name_end - b);
        name[name_end - b] = '\0';
        out->names[out->n] = name;
        out->values[out->n] = v;
        out->n++;
        if (i >= len) return 0;
        i++; /* ',' */
    }
}

/* --columns "x,y": split in place into names (at most max). Returns the count, or 0 with a message. */
static size_t split_columns(char *text, const char **names, size_t max, char *err, size_t cap) {
    size_t n = 0;
    char *p = text;
    for (;;) {
        char *comma = strchr(p, ',');
        if (comma) *comma = '\0';
        while (*p == ' ' || *p == '\t') p++;
        size_t l = strlen(p);
        while (l > 0 && (p[l - 1] == ' ' || p[l - 1] == '\t')) p[--l] = '\0';
        if (l == 0) {
            snprintf(err, cap, "--columns: an empty name (write names separated by commas: x,y)");
            return 0;
        }
        if (n == max) {
            snprintf(err, cap, "--columns: more than %zu names", max);
            return 0;
        }
        names[n++] = p;
        if (!comma) return n;
        p = comma + 1;
    }
}

/* The position of the top-level '=' of "lhs = rhs" (not part of == <= >= !=), or len. */
static size_t find_equals(const char *s, size_t len, size_t *second) {
    size_t at = len;
    *second = len;
    for (size_t i = 0; i < len; i++) {
        if (s[i] != '=') continue;
        int cmp_before = i > 0 && (s[i - 1] == '<' || s[i - 1] == '>' || s[i - 1] == '=' || s[i - 1] == '!');
        int cmp_after = i + 1 < len && s[i + 1] == '=';
        if (cmp_after) {
            i++;
            continue;
        }
        if (cmp_before) continue;
        if (at == len) at = i;
        else if (*second == len) *second = i;
    }
    return at;
}

/* Shows the model with a caret line under [col, col + n) on stderr (1-based). */
static void show_caret(const char *model, size_t col, size_t n) {
    size_t len = strlen(model);
    if (len > 200 || col == 0 || col > len + 1) return;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)model[i] < 0x20 || (unsigned char)model[i] >= 0x7f) return;
    fprintf(stderr, "  %s\n  ", model);
    for (size_t i = 1; i < col; i++) fputc(' ', stderr);
    for (size_t i = 0; i < (n ? n : 1) && col + i <= len + 1; i++) fputc('^', stderr);
    fputc('\n', stderr);
}

/* A comma-separated list of names into buf (for messages). */
static const char *list_names(const char *const *names, size_t n, char *buf, size_t cap) {
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && o + 8 < cap; i++) {
        int w = snprintf(buf + o, cap - o, "%s%s", i ? ", " : "", names[i]);
        if (w < 0 || (size_t)w >= cap - o) {
            snprintf(buf + (cap > 5 ? cap - 5 : 0), cap > 5 ? 5 : cap, "...");
            break;
        }
        o += (size_t)w;
    }
    return n ? buf : "none";
}

/* ---- output -------------------------------------------------------------------- */

static void json_num(double v) {
    if (isfinite(v)) printf("%.17g", v);
    else printf("null");
}

typedef struct {
    size_t rows, n_params;
    double rss, sd;
    size_t dof;
    const double *values, *se; /* se NULL: not available */
    const pxl_ad_solve_summary *sm;
    const char *se_why;        /* why there are no standard errors */
    double seconds;
} fit_result;

static void print_text(const fit_opts *o, const start_list *st, const fit_result *r) {
    printf("model   %s\n", o->model);
    printf("data    %s: %zu rows\n", strcmp(o->data, "-") == 0 ? "stdin" : o->data, r->rows);
    size_t w = 9;
    for (size_t j = 0; j < st->n; j++)
        if (strlen(st->names[j]) > w) w = strlen(st->names[j]);
    printf("\n%-*s  %-23s  %-23s  %s\n", (int)w, "parameter", "value", "standard error", "relative");
    for (size_t j = 0; j < st->n; j++) {
        printf("%-*s  %-23.15g  ", (int)w, st->names[j], r->values[j]);
        if (r->se) {
            double rel = r->values[j] != 0 ? fabs(r->se[j] / r->values[j]) * 100 : (double)NAN;
            printf("%-23.10g  ", r->se[j]);
            if (isfinite(rel)) printf("%.3g%%\n", rel);
            else printf("-\n");
        } else {
            printf("%-23s  -\n", "-");
        }
    }
    printf("\nresidual sum of squares   %.15g\n", r->rss);
    if (r->dof) printf("residual std. deviation   %.15g\n", r->sd);
    else printf("residual std. deviation   -\n");
    printf("degrees of freedom        %zu (%zu rows - %zu parameters)\n", r->dof, r->rows, r->n_params);
    printf("iterations                %d (%d successful steps)\n", r->sm->iterations, r->sm->successful_steps);
    printf("termination               %s: %s\n", pxl_ad_termination_name(r->sm->termination), r->sm->message);
    printf("time                      %.3f ms\n", r->seconds * 1e3);
    if (!r->se) printf("standard errors           not available: %s\n", r->se_why);
}

static void print_json(const fit_opts *o, const start_list *st, const fit_result *r) {
    printf("{\"ok\":true,\"command\":\"pxl fit\",\"model\":");
    cli_json_string(stdout, o->model);
    printf(",\"data\":");
    cli_json_string(stdout, o->data);
    printf(",\"rows\":%zu,\"parameters\":[", r->rows);
    for (size_t j = 0; j < st->n; j++) {
        printf("%s{\"name\":", j ? "," : "");
        cli_json_string(stdout, st->names[j]);
        printf(",\"value\":");
        json_num(r->values[j]);
        printf(",\"std_error\":");
        if (r->se) json_num(r->se[j]);
        else printf("null");
        printf(",\"rel_std_error\":");
        if (r->se && r->values[j] != 0) json_num(fabs(r->se[j] / r->values[j]));
        else printf("null");
        printf("}");
    }
    printf("],\"rss\":");
    json_num(r->rss);
    printf(",\"residual_sd\":");
    json_num(r->sd);
    printf(",\"dof\":%zu,\"iterations\":%d,\"successful_steps\":%d,\"termination\":\"%s\",\"message\":", r->dof,
           r->sm->iterations, r->sm->successful_steps, pxl_ad_termination_name(r->sm->termination));
    cli_json_string(stdout, r->sm->message);
    printf(",\"converged\":%s,\"initial_cost\":", r->sm->termination == PXL_AD_CONVERGED_FUNCTION ||
                                                      r->sm->termination == PXL_AD_CONVERGED_GRADIENT ||
                                                      r->sm->termination == PXL_AD_CONVERGED_PARAMETER
                                                  ? "true"
                                                  : "false");
    json_num(r->sm->initial_cost);
    printf(",\"final_cost\":");
    json_num(r->sm->final_cost);
    printf(",\"std_errors_note\":");
    if (r->se) printf("null");
    else cli_json_string(stdout, r->se_why);
    printf(",\"seconds\":");
    json_num(r->seconds);
    printf("}\n");
}

/* ---- the command --------------------------------------------------------------------- */

static void on_progress(void *user, int iteration, double cost) {
    (void)cost;
    pxl_progress_update(user, iteration > 0 ? (uint64_t)iteration : 0);
}

/* Reports a model parse error with its column in the whole --model text. */
static int model_error(const fit_opts *o, const pxl_ad_parse_error *e, const start_list *st, const pxl_ad_table *t) {
    size_t col = e->column;
    const char *detail = strstr(e->message, ": ");
    detail = detail ? detail + 2 : e->message;
    if (!o->c.json) show_caret(o->model, col, e->length);
    if (e->code == PXL_AD_PARSE_UNKNOWN_NAME) {
        char pb[256], cb[256];
        size_t nc = pxl_ad_table_columns(t);
        const char **cols = malloc((nc ? nc : 1) * sizeof *cols);
        if (cols)
            for (size_t c = 0; c < nc; c++) cols[c] = pxl_ad_table_name(t, c);
        int rc = cli_fail(o->c.json, 1, FIT_CMD,
                          "--model column %zu: '%.*s' is neither a parameter (--start: %s) nor a data column (%s)", col,
                          (int)(e->length > 64 ? 64 : e->length), o->model + col - 1,
                          list_names((const char *const *)st->names, st->n, pb, sizeof pb), cols ? list_names(cols, nc, cb, sizeof cb) : "?");
        free(cols);
        return rc;
    }
    return cli_fail(o->c.json, 1, FIT_CMD, "--model column %zu: %s", col, detail);
}

int cmd_fit(int argc, char **argv) {
    fit_opts o;
    int p = parse(argc, argv, &o);
    if (p) return p == 1 ? 0 : 2;
    const int json = o.c.json;
    char err[512];
    start_list st;
    if (parse_start(o.start, &st, err, sizeof err)) {
        start_free(&st);
        return cli_fail(json, 2, FIT_CMD, "%s", err);
    }
    const char *col_names[PXL_AD_TABLE_MAX_COLUMNS];
    size_t n_col_names = 0;
    char *columns = NULL;
    if (o.columns) {
        columns = strdup(o.columns);
        if (!columns || !(n_col_names = split_columns(columns, col_names, PXL_AD_TABLE_MAX_COLUMNS, err, sizeof err))) {
            int rc = cli_fail(json, 2, FIT_CMD, "%s", columns ? err : "out of memory");
            free(columns);
            start_free(&st);
            return rc;
        }
    }
    pxl_ad_backend eval_backend = PXL_AD_CPU;
    if (!o.backend_given) o.c.backend = PXL_BACKEND_CPU;
    else eval_backend = o.c.backend == PXL_BACKEND_GPU ? PXL_AD_GPU : o.c.backend == PXL_BACKEND_CPU ? PXL_AD_CPU : PXL_AD_AUTO;

    pxl_ctx *ctx = NULL;
    pxl_ad_table *table = NULL;
    pxl_ad_graph *g = NULL;
    pxl_ad_program *prog = NULL;
    pxl_ad_problem *pb = NULL;
    pxl_ad_name *names = NULL;
    uint8_t *used = NULL;
    uint32_t *pidx = NULL;
    double *inputs = NULL, *params = NULL, *se = NULL;
    char *text = NULL, *side = NULL;
    pxl_progress *bar = NULL;
    int rc = 0;
    if (cli_open_ctx(&o.c, &ctx)) {
        rc = 1;
        goto done;
    }
    pxl_ad_loss loss = {PXL_AD_LOSS_NONE, 0};
    if (o.loss && pxl_ad_loss_parse(ctx, o.loss, &loss) != PXL_OK) {
        rc = cli_fail(json, 2, FIT_CMD, "--loss: %s", pxl_ctx_error(ctx));
        goto done;
    }

    /* the data */
    size_t len = 0;
    if (cli_read_text(ctx, o.data, CLI_TEXT_MAX, &text, &len, err, sizeof err)) {
        rc = cli_fail(json, 1, FIT_CMD, "--data: %s", err);
        goto done;
    }
    pxl_ad_table_options to = {col_names, n_col_names};
    if (pxl_ad_table_parse(ctx, text, len, &to, &table) != PXL_OK) {
        rc = cli_fail(json, 1, FIT_CMD, "%s: %s", strcmp(o.data, "-") == 0 ? "stdin" : o.data, pxl_ctx_error(ctx));
        goto done;
    }
    const size_t rows = pxl_ad_table_rows(table), cols = pxl_ad_table_columns(table);

    /* the names: parameters are slots 0..n-1, columns are inputs */
    names = calloc(st.n + cols, sizeof *names);
    used = calloc(st.n + cols, 1);
    if (!names || !used) {
        rc = cli_fail(json, 1, FIT_CMD, "out of memory");
        goto done;
    }
    for (size_t j = 0; j < st.n; j++) {
        for (size_t c = 0; c < cols; c++)
            if (strcmp(st.names[j], pxl_ad_table_name(table, c)) == 0) {
                rc = cli_fail(json, 1, FIT_CMD,
                              "'%s' is both a parameter (--start) and a column of the data: rename one (--columns)",
                              st.names[j]);
                goto done;
            }
        names[j] = (pxl_ad_name){st.names[j], PXL_AD_NAME_PARAM, (int32_t)j};
    }
    for (size_t c = 0; c < cols; c++) names[st.n + c] = (pxl_ad_name){pxl_ad_table_name(table, c), PXL_AD_NAME_INPUT, (int32_t)c};
    pxl_ad_parse_names pn = {names, st.n + cols, used};

    /* the model: rhs - lhs, or model - y */
    if (pxl_ad_graph_create(ctx, &g) != PXL_OK) {
        rc = cli_fail(json, 1, FIT_CMD, "%s", pxl_ctx_error(ctx));
        goto done;
    }
    const size_t mlen = strlen(o.model);
    size_t second;
    const size_t eq = find_equals(o.model, mlen, &second);
    if (second != mlen) {
        if (!json) show_caret(o.model, second + 1, 1);
        rc = cli_fail(json, 1, FIT_CMD, "--model column %zu: a second '=' (a model is EXPR or LHS = RHS)", second + 1);
        goto done;
    }
    /* each side is parsed from a copy of the whole text with the other side
     * blanked out, so that every column in a message is a column of --model */
    pxl_ad_parse_error pe;
    pxl_ad_value lhs, rhs;
    side = malloc(mlen + 1);
    if (!side) {
        rc = cli_fail(json, 1, FIT_CMD, "out of memory");
        goto done;
    }
    memcpy(side, o.model, mlen + 1);
    if (eq != mlen) memset(side, ' ', eq + 1);
    if (pxl_ad_parse(g, side, mlen, &pn, &rhs, &pe) != PXL_OK) {
        rc = pe.code == PXL_AD_PARSE_GRAPH ? cli_fail(json, 1, FIT_CMD, "%s", pe.message)
                                           : model_error(&o, &pe, &st, table);
        goto done;
    }
    if (eq != mlen) {
        memcpy(side, o.model, mlen + 1);
        memset(side + eq, ' ', mlen - eq);
        if (pxl_ad_parse(g, side, mlen, &pn, &lhs, &pe) != PXL_OK) {
            rc = pe.code == PXL_AD_PARSE_GRAPH ? cli_fail(json, 1, FIT_CMD, "%s", pe.message)
                                               : model_error(&o, &pe, &st, table);
            goto done;
        }
    } else {
        size_t yc = cols - 1;
        for (size_t c = 0; c < cols; c++)
            if (strcmp(pxl_ad_table_name(table, c), "y") == 0) yc = c;
        lhs = pxl_ad_input(g, (int32_t)yc);
    }
    for (size_t j = 0; j < st.n; j++)
        if (!used[j]) {
            rc = cli_fail(json, 1, FIT_CMD, "parameter '%s' in --start does not appear in the model", st.names[j]);
            goto done;
        }
    if (pxl_ad_output(g, pxl_ad_sub(g, rhs, lhs)) != PXL_OK || pxl_ad_compile(g, &prog) != PXL_OK) {
        rc = cli_fail(json, 1, FIT_CMD, "%s", pxl_ctx_error(ctx));
        goto done;
    }
    const pxl_ad_program_info info = pxl_ad_program_get_info(prog);
    if (info.n_params != st.n || info.n_inputs > cols) {
        rc = cli_fail(json, 1, FIT_CMD, "internal error: the program has %zu slots and %zu inputs", info.n_params,
                      info.n_inputs);
        goto done;
    }
    /* instances: row i reads columns 0..n_inputs-1, slots 0..n-1 are parameters 0..n-1 */
    const size_t ni = info.n_inputs;
    if (rows > (SIZE_MAX / sizeof(double)) / (FIT_MAX_PARAMS + ni + 1)) {
        rc = cli_fail(json, 1, FIT_CMD, "%zu rows: too many", rows);
        goto done;
    }
    pidx = malloc((rows * st.n + 1) * sizeof *pidx);
    inputs = malloc((rows * ni + 1) * sizeof *inputs);
    params = malloc(st.n * sizeof *params);
    se = malloc(st.n * sizeof *se);
    if (!pidx || !inputs || !params || !se) {
        rc = cli_fail(json, 1, FIT_CMD, "out of memory (%zu rows)", rows);
        goto done;
    }
    const double *data = pxl_ad_table_data(table);
    for (size_t i = 0; i < rows; i++) {
        for (size_t j = 0; j < st.n; j++) pidx[i * st.n + j] = (uint32_t)j;
        for (size_t c = 0; c < ni; c++) inputs[i * ni + c] = data[i * cols + c];
    }
    memcpy(params, st.values, st.n * sizeof *params);
    pxl_ad_block_options bo;
    memset(&bo, 0, sizeof bo);
    bo.loss = loss;
    if (pxl_ad_problem_create(ctx, st.n, &pb) != PXL_OK ||
        pxl_ad_problem_add(pb, prog, pidx, ni ? inputs : NULL, rows, &bo) != PXL_OK) {
        rc = cli_fail(json, 1, FIT_CMD, "%s", pxl_ctx_error(ctx));
        goto done;
    }

    /* solve */
    pxl_ad_solve_options so;
    memset(&so, 0, sizeof so);
    so.max_iterations = (int)o.max_iterations;
    so.function_tolerance = o.tolerance > 0 ? o.tolerance : 1e-18;
    so.parameter_tolerance = o.tolerance > 0 ? o.tolerance : 1e-15;
    so.gradient_tolerance = 1e-300; /* scale-dependent: left to the other two */
    so.eval.backend = eval_backend;
    bar = pxl_progress_begin(ctx, "fit", o.max_iterations);
    so.progress = on_progress;
    so.progress_user = bar;
    pxl_ad_solve_summary sm;
    memset(&sm, 0, sizeof sm);
    double t0 = pxl_time_now();
    pxl_status s = pxl_ad_problem_solve(pb, params, &so, &sm);
    double seconds = pxl_time_now() - t0;
    pxl_progress_end(bar);
    bar = NULL;
    if (s != PXL_OK || sm.termination == PXL_AD_FAILURE) {
        rc = cli_fail(json, 1, FIT_CMD, "the solver failed: %s", s != PXL_OK ? pxl_ctx_error(ctx) : sm.message);
        goto done;
    }

    /* statistics */
    fit_result r;
    memset(&r, 0, sizeof r);
    r.rows = rows;
    r.n_params = st.n;
    r.rss = 2 * sm.final_cost;
    if (loss.kind != PXL_AD_LOSS_NONE) {
        /* final_cost is the robust cost: the RSS is of the plain residuals */
        double *res = malloc(rows * sizeof *res), cost;
        if (res && pxl_ad_problem_evaluate(pb, params, &cost, res, NULL, NULL) == PXL_OK) {
            double ss = 0;
            for (size_t i = 0; i < rows; i++) ss += res[i] * res[i];
            r.rss = ss;
        }
        free(res);
    }
    r.dof = rows > st.n ? rows - st.n : 0;
    r.sd = r.dof ? sqrt(r.rss / (double)r.dof) : (double)NAN;
    r.values = params;
    r.sm = &sm;
    r.seconds = seconds;
    char se_why[300] = "";
    if (r.dof == 0) {
        snprintf(se_why, sizeof se_why, "%zu rows for %zu parameters leave no degrees of freedom", rows, st.n);
    } else if (pxl_ad_problem_covariance(pb, params, se, NULL) != PXL_OK) {
        snprintf(se_why, sizeof se_why, "%s", pxl_ctx_error(ctx));
    } else {
        r.se = se;
    }
    r.se_why = se_why;
    if (json) print_json(&o, &st, &r);
    else print_text(&o, &st, &r);
    if (sm.termination == PXL_AD_NO_CONVERGENCE) {
        fprintf(stderr, "pxl fit: warning: %s\n", sm.message);
        rc = 3;
    }
done:
    pxl_progress_end(bar);
    pxl_ad_problem_free(pb);
    pxl_ad_program_free(prog);
    pxl_ad_graph_free(g);
    pxl_ad_table_free(table);
    free(names);
    free(used);
    free(pidx);
    free(inputs);
    free(params);
    free(se);
    free(columns);
    free(side);
    pxl_free(ctx, text);
    pxl_ctx_free(ctx);
    start_free(&st);
    return rc;
}
