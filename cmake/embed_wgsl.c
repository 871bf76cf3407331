/*
 * embed_wgsl: the build-time WGSL embedder (a host tool, built before the
 * library; no Python or other interpreter at build time).
 *
 *   embed_wgsl --name ops --root <project dir> --out <dir> [-I <dir>]... <kernel.wgsl>...
 *
 * For every kernel file it expands `#include "file.wgsl"` lines and writes
 *   <out>/<file>.wgsl    the expanded source (what the GPU compiles),
 *   <out>/wgsl_<name>.c  one `const char pxl_wgsl_<name>_<file>[]` per kernel,
 *   <out>/wgsl_<name>.h  their declarations,
 * the .wgsl files and the header only when their bytes change (so a WGSL edit
 * recompiles wgsl_<name>.c alone).
 *
 * Includes: a line `#include "x.wgsl"` (spaces around it and a trailing //
 * comment allowed) is looked up next to the including file, then in each -I
 * directory in order. Every file is included at most once per kernel (later
 * includes of it are dropped), and a file that includes itself through any
 * chain is an error (exit status 1, the chain in the message), as is a missing
 * file. Files only reached through #include are not embedded by themselves.
 *
 * Line map: the expanded text carries a marker comment
 *   //#line N "src/ops/wgsl/common/f.wgsl"
 * meaning "the next line is line N of that file" at the top of every file and
 * after every include, with paths relative to --root (no build-machine path
 * ends up in the library). src/gpu/pipeline.c reads the markers back to turn
 * compiler positions into file:line (pxl_wgsl_source_line).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64
#define MAX_INC_DIRS 16

typedef struct buf {
    char *p;
    size_t n, cap;
} buf;

#if defined(__GNUC__) || defined(__clang__)
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#else
#define PRINTF_LIKE(f, a)
#endif

static void die(const char *fmt, ...) PRINTF_LIKE(1, 2);
static void putf(struct buf *b, const char *fmt, ...) PRINTF_LIKE(2, 3);

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("embed_wgsl: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static void put(buf *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) die("out of memory");
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void putf(buf *b, const char *fmt, ...) {
    char tmp[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof tmp) die("line too long");
    put(b, tmp, (size_t)n);
}

/* The whole file, NUL-terminated; NULL if it cannot be opened. */
static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    buf b = {0};
    char tmp[65536];
    size_t n;
    while ((n = fread(tmp, 1, sizeof tmp, f)) > 0) put(&b, tmp, n);
    if (ferror(f)) die("%s: read error", path);
    fclose(f);
    if (!b.p) put(&b, "", 0);
    *len = b.n;
    return b.p;
}

static int file_exists(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    fclose(f);
    return 1;
}

/* Writes data to path unless the file already holds exactly those bytes. */
static void write_if_changed(const char *path, const char *data, size_t n) {
    size_t old_n;
    char *old = read_file(path, &old_n);
    int same = old && old_n == n && memcmp(old, data, n) == 0;
    free(old);
    if (same) return;
    FILE *f = fopen(path, "wb");
    if (!f) die("%s: %s", path, strerror(errno));
    if (fwrite(data, 1, n, f) != n || fclose(f) != 0) die("%s: write error", path);
}

static char *dup_str(const char *s, size_t n) {
    char *p = malloc(n + 1);
    if (!p) die("out of memory");
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

static char *join(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (!p) die("out of memory");
    memcpy(p, dir, a);
    p[a] = '/';
    memcpy(p + a + 1, name, b + 1);
    return p;
}

/* Removes "dir/../" and "./" steps, so one file has one spelling (the
 * include-once and cycle checks compare paths). */
static void normalize(char *path) {
    char *parts[256];
    int n = 0, absolute = path[0] == '/';
    char *copy = dup_str(path, strlen(path)), *save = NULL;
    for (char *t = strtok_r(copy, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
        if (strcmp(t, ".") == 0) continue;
        if (strcmp(t, "..") == 0 && n > 0 && strcmp(parts[n - 1], "..") != 0) {
            n--;
            continue;
        }
        if (n == 256) die("%s: path too deep", path);
        parts[n++] = t;
    }
    char *o = path;
    if (absolute) *o++ = '/';
    for (int i = 0; i < n; i++) {
        size_t l = strlen(parts[i]);
        memmove(o, parts[i], l);
        o += l;
        if (i + 1 < n) *o++ = '/';
    }
    *o = '\0';
    free(copy);
}

typedef struct {
    const char *root; /* normalized, no trailing slash */
    const char *inc[MAX_INC_DIRS];
    int n_inc;
    const char *stack[MAX_DEPTH]; /* files being expanded, outermost first */
    int depth;
    char **once; /* files already expanded into this kernel */
    int n_once, cap_once;
} expander;

/* path relative to the root where it is under it, else the path itself */
static const char *rel(const expander *e, const char *path) {
    size_t n = strlen(e->root);
    if (n && strncmp(path, e->root, n) == 0 && path[n] == '/') return path + n + 1;
    return path;
}

/* If the line is an #include, the quoted name (allocated), else NULL. */
static char *include_name(const char *line, size_t len, const char *file, int lineno) {
    const char *p = line, *end = line + len;
    while (p < end && (*p == ' ' || *p == '\t')) p++;
    if (end - p < 8 || memcmp(p, "#include", 8) != 0) return NULL;
    p += 8;
    while (p < end && (*p == ' ' || *p == '\t')) p++;
    if (p == end || *p != '"') die("%s:%d: expected #include \"file.wgsl\"", file, lineno);
    const char *q = memchr(p + 1, '"', (size_t)(end - p - 1));
    if (!q || q == p + 1) die("%s:%d: expected #include \"file.wgsl\"", file, lineno);
    const char *r = q + 1;
    while (r < end && (*r == ' ' || *r == '\t' || *r == '\r')) r++;
    if (r < end && !(end - r >= 2 && r[0] == '/' && r[1] == '/'))
        die("%s:%d: unexpected text after #include", file, lineno);
    return dup_str(p + 1, (size_t)(q - p - 1));
}

static char *resolve(const expander *e, const char *from, const char *name, int lineno) {
    const char *slash = strrchr(from, '/');
    char *dir = slash ? dup_str(from, (size_t)(slash - from)) : dup_str(".", 1);
    char *c = join(dir, name);
    free(dir);
    normalize(c);
    if (file_exists(c)) return c;
    free(c);
    for (int i = 0; i < e->n_inc; i++) {
        c = join(e->inc[i], name);
        normalize(c);
        if (file_exists(c)) return c;
        free(c);
    }
    die("%s:%d: cannot find #include \"%s\" (next to it or in an -I directory)", rel(e, from), lineno, name);
    return NULL;
}

/* Appends the expansion of path; returns 0 (appending nothing) when the file
 * is already in this kernel. */
static int expand(expander *e, const char *path, buf *out) {
    for (int i = 0; i < e->depth; i++)
        if (strcmp(e->stack[i], path) == 0) {
            buf chain = {0};
            for (int j = i; j < e->depth; j++) putf(&chain, "%s -> ", rel(e, e->stack[j]));
            putf(&chain, "%s", rel(e, path));
            die("#include cycle: %s", chain.p);
        }
    if (e->depth == MAX_DEPTH) die("%s: #include nested deeper than %d", rel(e, path), MAX_DEPTH);
    for (int i = 0; i < e->n_once; i++)
        if (strcmp(e->once[i], path) == 0) return 0;
    if (e->n_once == e->cap_once) {
        e->cap_once = e->cap_once ? 2 * e->cap_once : 16;
        e->once = realloc(e->once, (size_t)e->cap_once * sizeof *e->once);
        if (!e->once) die("out of memory");
    }
    e->once[e->n_once++] = dup_str(path, strlen(path));
    e->stack[e->depth++] = path;

    size_t len;
    char *text = read_file(path, &len);
    if (!text) die("%s: %s", rel(e, path), strerror(errno));
    if (memchr(text, '\0', len)) die("%s: contains a NUL byte", rel(e, path));
    putf(out, "//#line 1 \"%s\"\n", rel(e, path));
    int lineno = 1;
    for (const char *p = text; p < text + len; lineno++) {
        const char *nl = memchr(p, '\n', (size_t)(text + len - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(text + len - p);
        char *name = include_name(p, n, rel(e, path), lineno);
        if (name) {
            char *inc = resolve(e, path, name, lineno);
            if (expand(e, inc, out)) putf(out, "//#line %d \"%s\"\n", lineno + 1, rel(e, path));
            else putf(out, "// #include \"%s\": already included\n", name); /* keeps the numbering */
            free(inc);
            free(name);
        } else {
            put(out, p, n);
            put(out, "\n", 1);
        }
        p += n + (nl ? 1 : 0);
    }
    free(text);
    e->depth--;
    return 1;
}

static void usage(void) {
    die("usage: embed_wgsl --name <subsystem> --root <dir> --out <dir> [-I <dir>]... <file.wgsl>...");
}

int main(int argc, char **argv) {
    const char *name = NULL, *out_dir = NULL;
    expander e;
    memset(&e, 0, sizeof e);
    char *root = NULL;
    char **inputs = calloc((size_t)argc, sizeof *inputs);
    int n_inputs = 0;
    if (!inputs) die("out of memory");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 < argc && strcmp(a, "--name") == 0) name = argv[++i];
        else if (i + 1 < argc && strcmp(a, "--root") == 0) root = dup_str(argv[i + 1], strlen(argv[i + 1])), i++;
        else if (i + 1 < argc && strcmp(a, "--out") == 0) out_dir = argv[++i];
        else if (i + 1 < argc && strcmp(a, "-I") == 0) {
            if (e.n_inc == MAX_INC_DIRS) die("too many -I directories");
            char *d = dup_str(argv[i + 1], strlen(argv[i + 1]));
            normalize(d);
            e.inc[e.n_inc++] = d;
            i++;
        } else if (a[0] == '-') usage();
        else {
            inputs[n_inputs] = dup_str(a, strlen(a));
            normalize(inputs[n_inputs++]);
        }
    }
    if (!name || !root || !out_dir) usage();
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')) die("bad --name '%s'", name);
    normalize(root);
    e.root = root;

    buf c = {0}, h = {0};
    putf(&c, "/* Generated by cmake/embed_wgsl.c from the WGSL of src/%s. Do not edit. */\n", name);
    putf(&c, "#include \"wgsl_%s.h\"\n", name);
    putf(&h, "/* Generated by cmake/embed_wgsl.c from the WGSL of src/%s. Do not edit.\n"
             " * Each array is a NUL-terminated, #include-expanded WGSL source. */\n", name);
    putf(&h, "#ifndef PXL_WGSL_%s_H\n#define PXL_WGSL_%s_H\n", name, name);
    for (int i = 0; i < n_inputs; i++) {
        const char *path = inputs[i];
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        size_t bl = strlen(base);
        if (bl > 5 && strcmp(base + bl - 5, ".wgsl") == 0) bl -= 5;
        char *sym = dup_str(base, bl);
        for (char *p = sym; *p; p++)
            if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9'))) *p = '_';
        for (int j = 0; j < i; j++) {
            const char *other = strrchr(inputs[j], '/');
            other = other ? other + 1 : inputs[j];
            if (strcmp(other, base) == 0) die("two kernels named %s in src/%s", base, name);
        }

        buf text = {0};
        e.n_once = 0;
        e.depth = 0;
        expand(&e, path, &text);
        for (int j = 0; j < e.n_once; j++) free(e.once[j]);

        char *out_path = join(out_dir, base);
        write_if_changed(out_path, text.p, text.n);
        free(out_path);

        putf(&c, "\nconst char pxl_wgsl_%s_%s[%zu] = {", name, sym, text.n + 1);
        for (size_t j = 0; j < text.n; j++)
            putf(&c, "%s0x%02x,", j % 16 ? "" : "\n", (unsigned)(unsigned char)text.p[j]);
        putf(&c, "%s0x00};\n", text.n % 16 ? "" : "\n");
        putf(&h, "extern const char pxl_wgsl_%s_%s[];\n", name, sym);
        free(text.p);
        free(sym);
    }
    putf(&h, "#endif\n");
    char *cp, *hp;
    size_t nl = strlen(name);
    char *fn = malloc(nl + 8);
    if (!fn) die("out of memory");
    snprintf(fn, nl + 8, "wgsl_%s.c", name);
    cp = join(out_dir, fn);
    snprintf(fn, nl + 8, "wgsl_%s.h", name);
    hp = join(out_dir, fn);
    /* the .c always (it is the build rule's primary output, so its time
     * stamp says the rule ran), the header only when it changes (it is
     * included by every source of the subsystem) */
    FILE *f = fopen(cp, "wb");
    if (!f || fwrite(c.p, 1, c.n, f) != c.n || fclose(f) != 0) die("%s: write error", cp);
    write_if_changed(hp, h.p, h.n);
    return 0;
}
