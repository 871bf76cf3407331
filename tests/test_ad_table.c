/*
 * pxl_ad_table_parse (src/ad/table.c): separators, headers, comments, CRLF,
 * default and given names, and every refusal with its line and column.
 */
#include "check.h"
#include "test_ctx.h"

#include "pxl/ad.h"

#include <string.h>

static pxl_ctx *g_ctx;

static pxl_ad_table *parse(const char *text, size_t len, const pxl_ad_table_options *o) {
    pxl_ad_table *t = NULL;
    pxl_status s = pxl_ad_table_parse(g_ctx, text, len, o, &t);
    CHECK_MSG(s == PXL_OK, "'%s': %s", text, pxl_ctx_error(g_ctx));
    return t;
}

static void check_names(const pxl_ad_table *t, const char *const *want, size_t n) {
    CHECK(pxl_ad_table_columns(t) == n);
    for (size_t c = 0; c < n && c < pxl_ad_table_columns(t); c++)
        CHECK_MSG(strcmp(pxl_ad_table_name(t, c), want[c]) == 0, "column %zu is '%s', want '%s'", c,
                  pxl_ad_table_name(t, c), want[c]);
    CHECK(pxl_ad_table_name(t, n) == NULL);
}

static void test_good(void) {
    const char *a = "# a comment\nx y\n1 2\n3\t4  # trailing\n\n   \n5 6e-1\r\n-7.5 +.25";
    pxl_ad_table *t = parse(a, strlen(a), NULL);
    if (t) {
        static const char *const n[] = {"x", "y"};
        check_names(t, n, 2);
        CHECK(pxl_ad_table_has_header(t) == 1);
        CHECK(pxl_ad_table_rows(t) == 4);
        const double *d = pxl_ad_table_data(t);
        CHECK(d[0] == 1 && d[1] == 2 && d[2] == 3 && d[3] == 4 && d[4] == 5 && d[5] == 0.6 && d[6] == -7.5 && d[7] == 0.25);
        CHECK(pxl_ad_table_line(t, 0) == 3 && pxl_ad_table_line(t, 2) == 7 && pxl_ad_table_line(t, 3) == 8);
        CHECK(pxl_ad_table_line(t, 4) == 0);
    }
    pxl_ad_table_free(t);

    const char *csv = "\"time\",\"signal\"\r\n1,2\r\n3, 4\r\n 5 ,6 # six\r\n";
    t = parse(csv, strlen(csv), NULL);
    if (t) {
        static const char *const n[] = {"time", "signal"};
        check_names(t, n, 2);
        CHECK(pxl_ad_table_rows(t) == 3 && pxl_ad_table_data(t)[5] == 6);
    }
    pxl_ad_table_free(t);

    /* default names */
    const char *c3 = "1 2 3\n4 5 6\n";
    t = parse(c3, strlen(c3), NULL);
    if (t) {
        static const char *const n[] = {"x", "x2", "y"};
        check_names(t, n, 3);
        CHECK(pxl_ad_table_has_header(t) == 0 && pxl_ad_table_rows(t) == 2);
    }
    pxl_ad_table_free(t);
    const char *c4 = "1 2 3 4";
    t = parse(c4, strlen(c4), NULL);
    if (t) {
        static const char *const n[] = {"x", "x2", "x3", "y"};
        check_names(t, n, 4);
    }
    pxl_ad_table_free(t);
    t = parse("42\n43\n", 6, NULL);
    if (t) {
        static const char *const n[] = {"y"};
        check_names(t, n, 1);
    }
    pxl_ad_table_free(t);

    /* given names replace a header and the defaults */
    static const char *const given[] = {"y", "x"};
    pxl_ad_table_options o = {given, 2};
    t = parse("a b\n1 2\n", 8, &o);
    if (t) check_names(t, given, 2);
    pxl_ad_table_free(t);
    t = parse("1 2\n", 4, &o);
    if (t) check_names(t, given, 2);
    pxl_ad_table_free(t);

    /* the length counts, not a NUL */
    t = parse("1 2\n3 4\n5 6", 7, NULL);
    if (t) CHECK(pxl_ad_table_rows(t) == 2);
    pxl_ad_table_free(t);
}

static void check_error(const char *text, size_t len, const pxl_ad_table_options *o, pxl_status want,
                        const char *message) {
    pxl_ad_table *t = (pxl_ad_table *)1;
    pxl_status s = pxl_ad_table_parse(g_ctx, text, len, o, &t);
    CHECK_MSG(s == want, "'%s': status %s", text, pxl_status_str(s));
    CHECK(t == NULL);
    if (message)
        CHECK_MSG(strcmp(pxl_ctx_error(g_ctx), message) == 0, "'%s': \"%s\", want \"%s\"", text, pxl_ctx_error(g_ctx),
                  message);
}
#define ERR(text, msg) check_error(text, strlen(text), NULL, PXL_ERR_FORMAT, msg)

static void test_errors(void) {
    ERR("1 2\n3 abc\n", "line 2, column 3: 'abc' is not a number");
    ERR("x y\n1 2\n3\n", "line 3, column 2: 1 field, but line 1 has 2");
    ERR("1 2\n3 4 5\n", "line 2, column 5: 3 fields, but line 1 has 2");
    ERR("1,2\n3,4,5\n", "line 2, column 5: 3 fields, but line 1 has 2");
    ERR("", "no data rows (the input is empty)");
    ERR("# only a comment\n\n  \r\n", "no data rows (the input is blank or comments only)");
    ERR("x y\n# nothing\n", "no data rows (only a header line)");
    ERR("1 nan\n", "line 1, column 3: 'nan' is not a finite number (NaN and Inf cannot be fitted)");
    ERR("x y\n1 -Inf\n", "line 2, column 3: '-Inf' is not a finite number (NaN and Inf cannot be fitted)");
    ERR("1 1e999\n", "line 1, column 3: '1e999' is not a finite number (NaN and Inf cannot be fitted)");
    ERR("1.0 2.O\n", "line 1, column 5: '2.O' is not a number (the first line mixes numbers and names: a header "
                     "line must be all names, a data line all numbers)");
    ERR("x 2\n", NULL);
    ERR("x x\n1 2\n", "line 1, column 3: 'x' names a column twice");
    ERR("x 2y\n1 2\n", "line 1, column 3: '2y' is not a column name (letters, digits and _, not starting with a digit)");
    ERR("1,,2\n", "line 1, column 3: empty field");
    ERR("1,2,\n", "line 1, column 5: empty field");
    ERR("1 2\n1 2e\n", "line 2, column 3: '2e' is not a number");
    ERR("1 2\n1 0x10\n", "line 2, column 3: '0x10' is not a number");
    check_error("1 2\n3\0 4\n", 9, NULL, PXL_ERR_FORMAT, "line 2, column 2: a NUL byte (is this a text file?)");
    static const char *const two[] = {"a", "b"};
    pxl_ad_table_options o = {two, 2};
    check_error("1 2 3\n", 6, &o, PXL_ERR_FORMAT, "2 column names given, but the data has 3 columns (line 1)");
    static const char *const bad[] = {"a", "1b"};
    pxl_ad_table_options ob = {bad, 2};
    check_error("1 2\n", 4, &ob, PXL_ERR_INVALID_ARG, NULL);
    static const char *const dup[] = {"a", "a"};
    pxl_ad_table_options od = {dup, 2};
    check_error("1 2\n", 4, &od, PXL_ERR_INVALID_ARG, "column name 'a' is given twice");
    /* too many columns */
    size_t n = (PXL_AD_TABLE_MAX_COLUMNS + 1) * 2;
    char *wide = malloc(n);
    if (wide) {
        for (size_t i = 0; i < n; i += 2) wide[i] = '1', wide[i + 1] = ' ';
        check_error(wide, n, NULL, PXL_ERR_FORMAT, NULL);
        free(wide);
    }
    /* a long number */
    char lng[300];
    memset(lng, '1', sizeof lng);
    check_error(lng, sizeof lng, NULL, PXL_ERR_FORMAT, NULL);
    CHECK(strstr(pxl_ctx_error(g_ctx), "longer than 127") != NULL);
    pxl_ad_table *t = NULL;
    CHECK(pxl_ad_table_parse(g_ctx, NULL, 3, NULL, &t) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_ad_table_parse(g_ctx, "1", 1, NULL, NULL) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_ad_table_rows(NULL) == 0 && pxl_ad_table_columns(NULL) == 0 && pxl_ad_table_data(NULL) == NULL);
    pxl_ad_table_free(NULL);
}

/* Random texts of the bytes that matter: a refusal has a message, a table is consistent. */
static void test_random(void) {
    static const char alphabet[] = "0123456789 ,.#\n\r\te-+xy\"";
    char buf[64];
    uint64_t st = 7;
    for (int it = 0; it < 20000; it++) {
        size_t n = (size_t)(test_rng(&st) % sizeof buf);
        for (size_t i = 0; i < n; i++) buf[i] = alphabet[test_rng(&st) % (sizeof alphabet - 1)];
        pxl_ad_table *t = NULL;
        pxl_status s = pxl_ad_table_parse(g_ctx, buf, n, NULL, &t);
        if (s != PXL_OK) {
            CHECK(t == NULL && pxl_ctx_error(g_ctx)[0]);
            continue;
        }
        CHECK(pxl_ad_table_rows(t) > 0 && pxl_ad_table_columns(t) > 0);
        for (size_t r = 0; r < pxl_ad_table_rows(t); r++) CHECK(pxl_ad_table_line(t, r) > 0);
        pxl_ad_table_free(t);
    }
}

int main(void) {
    g_ctx = test_ctx(PXL_BACKEND_CPU, 1);
    if (!g_ctx) return 1;
    test_good();
    test_errors();
    test_random();
    pxl_ctx_free(g_ctx);
    return test_result("test_ad_table");
}
