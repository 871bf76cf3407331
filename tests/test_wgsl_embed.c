/* The WGSL embedding (cmake/embed_wgsl.c) and the line map that turns a
 * position in an expanded source back into file:line (pxl_gpu_wgsl_origin).
 *   test_wgsl_embed <source dir>        every line of the test kernels maps back
 *                                       to the same text in its real file
 *   test_wgsl_embed <source dir> gpu    compiler errors name the real file and
 *                                       line (exit 77 without an adapter)
 * The kernels are the .wgsl files of tests/wgsl/kernels (pxl_wgsl_test_NAME). */
#include "check.h"
#include "test_ctx.h"
#include "pxl/gpu.h"
#include "gpu/gpu_internal.h"
#include "wgsl_test.h"

#include <string.h>

static const char *g_root;

/* Line n (1-based) of the file root/path, NUL-terminated in buf; 0 if absent. */
static int file_line(const char *path, size_t path_len, uint64_t n, char *buf, size_t cap) {
    char full[1024];
    snprintf(full, sizeof full, "%s/%.*s", g_root, (int)path_len, path);
    FILE *f = fopen(full, "rb");
    if (!f) return 0;
    int ok = 0;
    for (uint64_t l = 1; fgets(buf, (int)cap, f); l++)
        if (l == n) {
            buf[strcspn(buf, "\n")] = '\0';
            ok = 1;
            break;
        }
    fclose(f);
    return ok;
}

/* Every line of an expanded source that is not a marker maps to a file and
 * line holding the same text (or is the note left by a repeated include). */
static void check_maps_back(const char *name, const char *text) {
    uint64_t line = 1, checked = 0;
    for (const char *p = text; *p; line++) {
        size_t n = strcspn(p, "\n");
        int marker = strncmp(p, "//#line ", 8) == 0;
        int repeat = strncmp(p, "// #include ", 12) == 0;
        const char *file;
        size_t flen;
        uint64_t fl;
        if (!marker && !repeat) {
            int found = pxl_gpu_wgsl_origin(text, line, &file, &flen, &fl);
            CHECK_MSG(found, "%s: line %llu has no origin", name, (unsigned long long)line);
            char got[512];
            if (found) {
                int ok = file_line(file, flen, fl, got, sizeof got);
                CHECK_MSG(ok && strlen(got) == n && memcmp(got, p, n) == 0,
                          "%s: line %llu '%.*s' maps to %.*s:%llu '%s'", name, (unsigned long long)line,
                          (int)n, p, (int)flen, file, (unsigned long long)fl, ok ? got : "(none)");
                checked++;
            }
        }
        p += n + (p[n] == '\n');
    }
    CHECK_MSG(checked > 3, "%s: only %llu lines", name, (unsigned long long)checked);
}

static void test_origin(void) {
    check_maps_back("incl", pxl_wgsl_test_incl);
    check_maps_back("bad", pxl_wgsl_test_bad);
    check_maps_back("bad_after", pxl_wgsl_test_bad_after);
    /* included files are not kernels: there is no pxl_wgsl_test_local (a link
     * error here otherwise) and shared.wgsl appears once */
    const char *first = strstr(pxl_wgsl_test_incl, "fn shared_value");
    CHECK(first && !strstr(first + 1, "fn shared_value"));

    /* text without markers keeps its own numbering */
    const char *file = NULL;
    size_t flen = 0;
    uint64_t fl = 0;
    CHECK(pxl_gpu_wgsl_origin("fn a() {}\nfn b() {}\n", 2, &file, &flen, &fl) == 0);
    /* markers apply from the next line; a malformed one is ignored */
    static const char t[] = "x\n//#line 10 \"a.wgsl\"\ny\nz\n//#line 7 \"b.wgsl\n//#line 3 \"c.wgsl\"\nw\n";
    CHECK(pxl_gpu_wgsl_origin(t, 1, &file, &flen, &fl) == 0);
    CHECK(pxl_gpu_wgsl_origin(t, 4, &file, &flen, &fl) == 1 && flen == 6 && memcmp(file, "a.wgsl", 6) == 0 &&
          fl == 11);
    CHECK(pxl_gpu_wgsl_origin(t, 5, &file, &flen, &fl) == 1 && memcmp(file, "a.wgsl", 6) == 0 && fl == 12);
    CHECK(pxl_gpu_wgsl_origin(t, 7, &file, &flen, &fl) == 1 && memcmp(file, "c.wgsl", 6) == 0 && fl == 3);
}

static void expect_error(pxl_ctx *ctx, const char *label, const char *wgsl, const char *where, const char *what) {
    pxl_kernel *k = NULL;
    pxl_status s = pxl_kernel_get(ctx, label, wgsl, "main", NULL, 0, &k);
    CHECK(s == PXL_ERR_SHADER);
    const char *msg = pxl_ctx_error(ctx);
    CHECK_MSG(strncmp(msg, where, strlen(where)) == 0, "expected %s..., got: %s", where, msg);
    CHECK_MSG(strstr(msg, what) != NULL, "expected %s in: %s", what, msg);
}

static void test_gpu(pxl_ctx *ctx) {
    pxl_kernel *k = NULL;
    CHECK_MSG(pxl_kernel_get(ctx, "incl.wgsl", pxl_wgsl_test_incl, "main", NULL, 0, &k) == PXL_OK, "%s",
              pxl_ctx_error(ctx));
    expect_error(ctx, "bad.wgsl", pxl_wgsl_test_bad, "tests/wgsl/kernels/bad_part.wgsl:3:",
                 "no_such_thing_in_part");
    expect_error(ctx, "bad_after.wgsl", pxl_wgsl_test_bad_after, "tests/wgsl/kernels/bad_after.wgsl:6:",
                 "no_such_thing_after");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_wgsl_embed <source dir> [gpu]\n");
        return 2;
    }
    g_root = argv[1];
    if (argc > 2 && strcmp(argv[2], "gpu") == 0) {
        pxl_ctx *ctx = test_gpu_ctx();
        if (!ctx) return PXL_SKIP;
        test_gpu(ctx);
        pxl_ctx_free(ctx);
        return test_result("wgsl_embed_gpu");
    }
    test_origin();
    return test_result("wgsl_embed");
}
