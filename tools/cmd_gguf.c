/*
 * pxl gguf info FILE: what a GGUF file holds: version, alignment, sizes, all
 * metadata (long arrays summarised: element type, count, the first few
 * elements), every tensor (name, type, shape, bytes, offset) and the totals
 * per tensor type. Text, or JSON with --json. The file is opened with
 * pxl_gguf_open (memory-mapped, every read checked; a FIFO is refused).
 */
#include "cli.h"
#include "pxl/llm.h"

#include <math.h>
#include <string.h>

#define GGUF_SHOW_ELEMS 8   /* array elements shown */
#define GGUF_TEXT_STR_MAX 120 /* bytes of a string shown in text */

typedef struct {
    cli_common c;
} gguf_opts;

static const char *k_usage = "pxl gguf info FILE [--json]";
static const char *k_about =
    "Shows a GGUF file (versions 2 and 3): version, alignment, file size, every metadata key\n"
    "(arrays: element type, count and the first elements), every tensor (name, type, shape,\n"
    "bytes, offset) and the totals per tensor type, types pxl cannot run (IQ*, TQ*, MXFP4)\n"
    "included. A malformed file is refused with a message naming the key, tensor or byte offset.";

static void gguf_usage(FILE *f) {
    fprintf(f, "usage: pxl gguf info FILE [--json]\n\n%s\n", k_about);
}

/* 0 ok (path in *file), 1 help shown, 2 usage error (reported). */
static int parse(int argc, char **argv, gguf_opts *o, const char **file) {
    memset(o, 0, sizeof *o);
    int json = cli_wants_json(argc, argv);
    if (argc < 2 || !argv[1]) return cli_fail(json, 2, "pxl gguf", "name a subcommand (info); see pxl gguf --help");
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        gguf_usage(stdout);
        return 1;
    }
    if (strcmp(argv[1], "info") != 0)
        return cli_fail(json, 2, "pxl gguf", "unknown subcommand '%.64s' (info); see pxl gguf --help", argv[1]);
    cli_opt opts[] = {CLI_COMMON_OPTS(&o->c)};
    const char *pos[1];
    int n = cli_parse_command("pxl gguf info", k_usage, k_about, argc - 2, argv + 2, opts,
                              sizeof opts / sizeof opts[0], pos, 1, &o->c.help);
    if (n < 0) return n == CLI_HELP_SHOWN ? 1 : 2;
    if (n != 1) return cli_fail(o->c.json, 2, "pxl gguf info", "name one GGUF file; see pxl gguf info --help");
    *file = pos[0];
    return 0;
}

int cmd_gguf_parse(int argc, char **argv) {
    gguf_opts o;
    const char *file;
    return parse(argc, argv, &o, &file);
}

/* A string for a terminal: control bytes and backslashes escaped, cut at max bytes. */
static void text_str(const char *s, size_t n, size_t max) {
    putchar('"');
    for (size_t i = 0; i < n && i < max; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\') printf("\\%c", ch);
        else if (ch < 0x20 || ch == 0x7f) printf("\\x%02x", ch);
        else putchar(ch);
    }
    putchar('"');
    if (n > max) printf("... (%zu bytes)", n);
}

static void print_double(double v, int json, int f32) {
    if (json && !isfinite(v)) printf("null");
    else printf(f32 ? "%.9g" : "%.17g", v);
}

/* One value: a scalar, a string, or element j of an array (j >= 0). */
static void print_value(const pxl_gguf *g, size_t i, pxl_gguf_type t, int64_t j, int json) {
    if (t == PXL_GGUF_STRING) {
        const char *s = NULL;
        size_t len = 0;
        if ((j < 0 ? pxl_gguf_kv_string(g, i, &s, &len) : pxl_gguf_arr_string(g, i, (uint64_t)j, &s, &len)) != PXL_OK)
            printf("null");
        else if (json) cli_json_string_n(stdout, s, len);
        else text_str(s, len, GGUF_TEXT_STR_MAX);
    } else if (t == PXL_GGUF_FLOAT32 || t == PXL_GGUF_FLOAT64) {
        double v = 0;
        if (j < 0) pxl_gguf_kv_float(g, i, &v);
        else pxl_gguf_arr_float(g, i, (uint64_t)j, &v);
        print_double(v, json, t == PXL_GGUF_FLOAT32);
    } else if (t == PXL_GGUF_BOOL) {
        int64_t v = 0;
        if (j < 0) pxl_gguf_kv_int(g, i, &v);
        else pxl_gguf_arr_int(g, i, (uint64_t)j, &v);
        printf("%s", v ? "true" : "false");
    } else if (t == PXL_GGUF_UINT64 && j < 0) {
        uint64_t v = 0;
        pxl_gguf_kv_uint(g, i, &v);
        printf("%llu", (unsigned long long)v);
    } else {
        int64_t v = 0;
        if ((j < 0 ? pxl_gguf_kv_int(g, i, &v) : pxl_gguf_arr_int(g, i, (uint64_t)j, &v)) == PXL_OK)
            printf("%lld", (long long)v);
        else { /* a uint64 element above INT64_MAX */
            const void *raw = NULL;
            size_t esz = 0;
            pxl_gguf_arr_data(g, i, &raw, &esz);
            const unsigned char *p = (const unsigned char *)raw + (size_t)j * esz;
            uint64_t u = 0;
            for (int b = 7; b >= 0; b--) u = u << 8 | p[b];
            printf("%llu", (unsigned long long)u);
        }
    }
}

typedef struct { uint64_t count, bytes; } type_total;
#define N_TYPE_SLOTS 64 /* ggml type numbers the reader accepts are below this */

static void totals(const pxl_gguf *g, type_total *tot, uint64_t *all) {
    memset(tot, 0, sizeof(type_total) * N_TYPE_SLOTS);
    *all = 0;
    for (size_t i = 0; i < pxl_gguf_n_tensors(g); i++) {
        const pxl_gguf_tensor *t = pxl_gguf_tensor_at(g, i);
        if (t->type < N_TYPE_SLOTS) {
            tot[t->type].count++;
            tot[t->type].bytes += t->bytes;
        }
        *all += t->bytes; /* each inside the file, so no overflow */
    }
}

static void print_text(const pxl_gguf *g, const char *file) {
    printf("file:         %s\n", file);
    printf("version:      %u\n", pxl_gguf_version(g));
    printf("alignment:    %u\n", pxl_gguf_alignment(g));
    printf("file size:    %llu bytes\n", (unsigned long long)pxl_gguf_file_size(g));
    printf("data offset:  %llu\n", (unsigned long long)pxl_gguf_data_offset(g));
    size_t nkv = pxl_gguf_n_kv(g);
    printf("metadata:     %zu keys\n", nkv);
    for (size_t i = 0; i < nkv; i++) {
        pxl_gguf_type t = pxl_gguf_kv_type(g, i);
        const char *k = pxl_gguf_key(g, i);
        printf("  ");
        text_str(k, strlen(k), 200);
        if (t != PXL_GGUF_ARRAY) {
            printf(" %s = ", pxl_gguf_type_name(t));
            print_value(g, i, t, -1, 0);
            printf("\n");
            continue;
        }
        pxl_gguf_type et = PXL_GGUF_UINT8;
        uint64_t n = 0;
        pxl_gguf_kv_array(g, i, &et, &n);
        printf(" array of %llu %s = [", (unsigned long long)n, pxl_gguf_type_name(et));
        for (uint64_t j = 0; j < n && j < GGUF_SHOW_ELEMS; j++) {
            printf("%s", j ? ", " : "");
            print_value(g, i, et, (int64_t)j, 0);
        }
        printf("%s]\n", n > GGUF_SHOW_ELEMS ? ", ..." : "");
    }
    size_t nt = pxl_gguf_n_tensors(g);
    printf("tensors:      %zu\n", nt);
    for (size_t i = 0; i < nt; i++) {
        const pxl_gguf_tensor *t = pxl_gguf_tensor_at(g, i);
        printf("  ");
        text_str(t->name, strlen(t->name), 200);
        printf(" %s [", pxl_ggml_type_name(t->type));
        for (int d = 0; d < t->ndim; d++) printf("%s%lld", d ? ", " : "", (long long)t->ne[d]);
        printf("] %llu bytes at %llu\n", (unsigned long long)t->bytes, (unsigned long long)t->offset);
    }
    type_total tot[N_TYPE_SLOTS];
    uint64_t all;
    totals(g, tot, &all);
    printf("totals:\n");
    for (uint32_t ty = 0; ty < N_TYPE_SLOTS; ty++)
        if (tot[ty].count)
            printf("  %-7s %llu tensors, %llu bytes\n", pxl_ggml_type_name(ty), (unsigned long long)tot[ty].count,
                   (unsigned long long)tot[ty].bytes);
    printf("  all     %zu tensors, %llu bytes\n", nt, (unsigned long long)all);
}

static void print_json(const pxl_gguf *g, const char *file) {
    printf("{\"ok\":true,\"file\":");
    cli_json_string(stdout, file);
    printf(",\"version\":%u,\"alignment\":%u,\"file_size\":%llu,\"data_offset\":%llu,\"metadata\":[",
           pxl_gguf_version(g), pxl_gguf_alignment(g), (unsigned long long)pxl_gguf_file_size(g),
           (unsigned long long)pxl_gguf_data_offset(g));
    for (size_t i = 0; i < pxl_gguf_n_kv(g); i++) {
        pxl_gguf_type t = pxl_gguf_kv_type(g, i);
        printf("%s{\"key\":", i ? "," : "");
        cli_json_string(stdout, pxl_gguf_key(g, i));
        printf(",\"type\":\"%s\"", pxl_gguf_type_name(t));
        if (t != PXL_GGUF_ARRAY) {
            printf(",\"value\":");
            print_value(g, i, t, -1, 1);
            printf("}");
            continue;
        }
        pxl_gguf_type et = PXL_GGUF_UINT8;
        uint64_t n = 0;
        pxl_gguf_kv_array(g, i, &et, &n);
        printf(",\"elem_type\":\"%s\",\"count\":%llu,\"first\":[", pxl_gguf_type_name(et), (unsigned long long)n);
        for (uint64_t j = 0; j < n && j < GGUF_SHOW_ELEMS; j++) {
            printf("%s", j ? "," : "");
            print_value(g, i, et, (int64_t)j, 1);
        }
        printf("]}");
    }
    printf("],\"tensors\":[");
    for (size_t i = 0; i < pxl_gguf_n_tensors(g); i++) {
        const pxl_gguf_tensor *t = pxl_gguf_tensor_at(g, i);
        printf("%s{\"name\":", i ? "," : "");
        cli_json_string(stdout, t->name);
        printf(",\"type\":\"%s\",\"type_id\":%u,\"shape\":[", pxl_ggml_type_name(t->type), t->type);
        for (int d = 0; d < t->ndim; d++) printf("%s%lld", d ? "," : "", (long long)t->ne[d]);
        printf("],\"bytes\":%llu,\"offset\":%llu}", (unsigned long long)t->bytes, (unsigned long long)t->offset);
    }
    type_total tot[N_TYPE_SLOTS];
    uint64_t all;
    totals(g, tot, &all);
    printf("],\"totals\":[");
    int first = 1;
    for (uint32_t ty = 0; ty < N_TYPE_SLOTS; ty++)
        if (tot[ty].count) {
            printf("%s{\"type\":\"%s\",\"count\":%llu,\"bytes\":%llu}", first ? "" : ",", pxl_ggml_type_name(ty),
                   (unsigned long long)tot[ty].count, (unsigned long long)tot[ty].bytes);
            first = 0;
        }
    printf("],\"n_tensors\":%zu,\"tensor_bytes\":%llu}\n", pxl_gguf_n_tensors(g), (unsigned long long)all);
}

int cmd_gguf(int argc, char **argv) {
    gguf_opts o;
    const char *file = NULL;
    int p = parse(argc, argv, &o, &file);
    if (p) return p == 1 ? 0 : 2;
    cli_common c = o.c;
    c.backend = PXL_BACKEND_CPU; /* reading a file needs no GPU */
    c.threads = c.threads ? c.threads : 1;
    pxl_ctx *ctx = NULL;
    if (cli_open_ctx(&c, &ctx)) return 1;
    pxl_gguf *g = NULL;
    int rc = 0;
    if (pxl_gguf_open(ctx, file, &g) != PXL_OK) {
        rc = cli_fail(o.c.json, 1, "pxl gguf info", "%s", pxl_ctx_error(ctx));
    } else if (o.c.json) {
        print_json(g, file);
    } else {
        print_text(g, file);
    }
    pxl_gguf_free(g);
    pxl_ctx_free(ctx);
    return rc;
}
