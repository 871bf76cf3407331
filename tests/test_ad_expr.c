/*
 * pxl_ad_parse (src/ad/expr.c): precedence and associativity, every
 * function against libm, derivatives through parsed text, powi for integer
 * exponents (by program hash against hand-built graphs), names and the used
 * flags, and the error cases with their columns and messages.
 */
#include "check.h"
#include "test_ctx.h"

#include "pxl/ad.h"

#include <math.h>
#include <string.h>

static pxl_ctx *g_ctx;

/* Names of the tests: x, y columns 0 and 1; a, b parameter slots 0 and 1. */
static const pxl_ad_name k_names[] = {
    {"x", PXL_AD_NAME_INPUT, 0},
    {"y", PXL_AD_NAME_INPUT, 1},
    {"a", PXL_AD_NAME_PARAM, 0},
    {"b", PXL_AD_NAME_PARAM, 1},
};
static const double k_x = 1.5, k_y = -0.75, k_a = 2.0, k_b = 0.5;

/* Parses text and evaluates it at the point above: value and d/da, d/db. */
static int eval_text(const char *text, double *value, double *jac) {
    pxl_ad_graph *g = NULL;
    pxl_ad_program *p = NULL;
    pxl_ad_parse_names names = {k_names, 4, NULL};
    pxl_ad_value v;
    pxl_ad_parse_error err;
    int ok = 0;
    if (pxl_ad_graph_create(g_ctx, &g) != PXL_OK) return 0;
    pxl_status s = pxl_ad_parse(g, text, strlen(text), &names, &v, &err);
    CHECK_MSG(s == PXL_OK, "'%s': %s", text, err.message);
    if (s != PXL_OK) goto done;
    /* a + 0*b + 0*x + 0*y... is not wanted: pad the slots with a second output instead */
    pxl_ad_value pad = pxl_ad_mul(g, pxl_ad_const(g, 0.0),
                                  pxl_ad_add(g, pxl_ad_add(g, pxl_ad_param(g, 0), pxl_ad_param(g, 1)),
                                             pxl_ad_add(g, pxl_ad_input(g, 0), pxl_ad_input(g, 1))));
    if (pxl_ad_output(g, v) != PXL_OK || pxl_ad_output(g, pad) != PXL_OK || pxl_ad_compile(g, &p) != PXL_OK) goto done;
    double params[2] = {k_a, k_b}, in[2] = {k_x, k_y}, res[2], j[4];
    uint32_t idx[2] = {0, 1};
    if (pxl_ad_eval(g_ctx, p, params, 2, idx, in, 1, res, j, NULL) != PXL_OK) goto done;
    *value = res[0];
    if (jac) {
        jac[0] = j[0];
        jac[1] = j[1];
    }
    ok = 1;
done:
    pxl_ad_program_free(p);
    pxl_ad_graph_free(g);
    return ok;
}

static void check_value(const char *text, double want) {
    double got = (double)NAN;
    if (!eval_text(text, &got, NULL)) return;
    int same = isnan(want) ? isnan(got) : fabs(got - want) <= 1e-14 * fmax(1.0, fabs(want));
    CHECK_MSG(same, "'%s' = %.17g, want %.17g", text, got, want);
}

static void test_precedence(void) {
    const double x = k_x, y = k_y, a = k_a, b = k_b;
    check_value("1+2*3", 7);
    check_value("(1+2)*3", 9);
    check_value("2^3^2", 512);    /* right-associative */
    check_value("2**3**2", 512);
    check_value("-2^2", -4);      /* -(2^2) */
    check_value("-x^2", -(x * x));
    check_value("(-x)^2", x * x);
    check_value("2^-1", 0.5);
    check_value("2**-1", 0.5);
    check_value("2^-1^2", 0.5);   /* 2^(-(1^2)) */
    check_value("a-b-x", a - b - x);
    check_value("a/b/x", a / b / x);
    check_value("a/b*x", a / b * x);
    check_value("a-b*x+y", a - b * x + y);
    check_value("--x", x);
    check_value("+x", x);
    check_value("a*-x", a * -x);
    check_value("x^2*a", x * x * a);
    check_value("a*x^b", a * pow(x, b));
    check_value("2*pi/12", 2 * 3.14159265358979323846 / 12);
    check_value("e", exp(1.0));
    check_value("1e3 + .5 + 2.5E+01 + 3. + 1e-2", 1000 + 0.5 + 25 + 3 + 0.01);
    check_value(" \t x \r\n + 1 ", x + 1);
    check_value("x < y", 0);
    check_value("x > y", 1);
    check_value("x <= 1.5", 1);
    check_value("x >= 2", 0);
    check_value("x == 1.5", 1);
    check_value("x != 1.5", 0);
    check_value("1 + 2 < 4", 1); /* comparisons bind loosest */
    check_value("(x < y) + (x > y)", 1);
    check_value("select(x > 1, a, b)", a);
    check_value("select(x < 1, a, b)", b);
    check_value("min(x, y, a)", y);
    check_value("max(1, 2, 3, x)", 3);
    check_value("min(a, b)", b);
    check_value("clamp(x, 0, 1)", 1);
    check_value("clamp(y, -1, 1)", y);
    check_value("(((((x)))))", x);
}

static void test_functions(void) {
    const double x = k_x, y = k_y;
    struct { const char *text; double want; } t[] = {
        {"exp(x)", exp(x)},          {"log(x)", log(x)},         {"sqrt(x)", sqrt(x)},
        {"sin(x)", sin(x)},          {"cos(x)", cos(x)},         {"tan(x)", tan(x)},
        {"asin(y)", asin(y)},        {"acos(y)", acos(y)},       {"atan(x)", atan(x)},
        {"sinh(x)", sinh(x)},        {"cosh(x)", cosh(x)},       {"tanh(x)", tanh(x)},
        {"sigmoid(x)", 1 / (1 + exp(-x))},                       {"relu(y)", 0},
        {"relu(x)", x},              {"softplus(x)", log1p(exp(x))},
        {"abs(y)", -y},              {"sign(y)", -1},            {"floor(x)", 1},
        {"ceil(x)", 2},              {"log10(x)", log(x) / log(10.0)},
        {"pow(x, 2.5)", pow(x, 2.5)}, {"pow(x, 3)", x * x * x},  {"hypot(x, y)", hypot(x, y)},
        {"atan2(y, x)", atan2(y, x)},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) check_value(t[i].text, t[i].want);
}

static void test_derivatives(void) {
    double v, j[2];
    const double x = k_x, a = k_a, b = k_b;
    if (eval_text("a*exp(-b*x)", &v, j)) {
        CHECK(fabs(v - a * exp(-b * x)) < 1e-14);
        CHECK(fabs(j[0] - exp(-b * x)) < 1e-14);
        CHECK(fabs(j[1] - (-a * x * exp(-b * x))) < 1e-14);
    }
    if (eval_text("a^2 + b^-1", &v, j)) {
        CHECK(fabs(j[0] - 2 * a) < 1e-14);
        CHECK(fabs(j[1] - (-1 / (b * b))) < 1e-13);
    }
    if (eval_text("x^a", &v, j)) CHECK(fabs(j[0] - pow(x, a) * log(x)) < 1e-13);
}

/* The program hash of a parsed text against a graph built by build(). */
typedef pxl_ad_value (*build_fn)(pxl_ad_graph *g);
static uint64_t hash_of(const char *text, build_fn build) {
    pxl_ad_graph *g = NULL;
    pxl_ad_program *p = NULL;
    uint64_t h = 0;
    if (pxl_ad_graph_create(g_ctx, &g) != PXL_OK) return 0;
    pxl_ad_value v;
    if (text) {
        pxl_ad_parse_names names = {k_names, 4, NULL};
        if (pxl_ad_parse(g, text, strlen(text), &names, &v, NULL) != PXL_OK) v = (pxl_ad_value){0, 0};
    } else {
        v = build(g);
    }
    if (pxl_ad_output(g, v) == PXL_OK && pxl_ad_compile(g, &p) == PXL_OK) h = pxl_ad_program_hash(p);
    pxl_ad_program_free(p);
    pxl_ad_graph_free(g);
    return h;
}
static pxl_ad_value b_x2(pxl_ad_graph *g) { return pxl_ad_powi(g, pxl_ad_input(g, 0), 2); }
static pxl_ad_value b_xm2(pxl_ad_graph *g) { return pxl_ad_powi(g, pxl_ad_input(g, 0), -2); }
static pxl_ad_value b_x25(pxl_ad_graph *g) {
    pxl_ad_value x = pxl_ad_input(g, 0);
    return pxl_ad_pow(g, x, pxl_ad_const(g, 2.5));
}
static pxl_ad_value b_neg_x2(pxl_ad_graph *g) { return pxl_ad_neg(g, pxl_ad_powi(g, pxl_ad_input(g, 0), 2)); }
static pxl_ad_value b_folded(pxl_ad_graph *g) {
    pxl_ad_value x = pxl_ad_input(g, 0); /* the parser meets x before it needs the folded constant */
    return pxl_ad_mul(g, pxl_ad_const(g, 2 * 3.14159265358979323846 / 12), x);
}
static pxl_ad_value b_log10(pxl_ad_graph *g) {
    pxl_ad_value l = pxl_ad_log(g, pxl_ad_param(g, 0));
    return pxl_ad_div(g, l, pxl_ad_const(g, 2.30258509299404568402));
}

static void test_structure(void) {
    uint64_t h = hash_of(NULL, b_x2);
    CHECK(h != 0);
    CHECK(hash_of("x^2", NULL) == h);
    CHECK(hash_of("x**2", NULL) == h);
    CHECK(hash_of("x^(4/2)", NULL) == h);
    CHECK(hash_of("x^2.0", NULL) == h);
    CHECK(hash_of("pow(x, 2)", NULL) == h);
    CHECK(hash_of("x^-2", NULL) == hash_of(NULL, b_xm2));
    CHECK(hash_of("x^(-2)", NULL) == hash_of(NULL, b_xm2));
    CHECK(hash_of("x^2.5", NULL) == hash_of(NULL, b_x25));
    CHECK(hash_of("-x^2", NULL) == hash_of(NULL, b_neg_x2));
    CHECK(hash_of("2*pi/12*x", NULL) == hash_of(NULL, b_folded));
    CHECK(hash_of("log10(a)", NULL) == hash_of(NULL, b_log10));
}

/* Parses text and expects a failure: the code, column and message. */
static void check_error(const char *text, size_t len, pxl_ad_parse_code code, size_t column, const char *message) {
    pxl_ad_graph *g = NULL;
    if (pxl_ad_graph_create(g_ctx, &g) != PXL_OK) return;
    pxl_ad_parse_names names = {k_names, 4, NULL};
    pxl_ad_value v = {1, 1};
    pxl_ad_parse_error err;
    pxl_status s = pxl_ad_parse(g, text, len, &names, &v, &err);
    char shown[48];
    snprintf(shown, sizeof shown, "%.*s", (int)(len < 40 ? len : 40), text);
    CHECK_MSG(s == PXL_ERR_FORMAT, "'%s': status %s", shown, pxl_status_str(s));
    CHECK_MSG(err.code == code, "'%s': code %d, want %d (%s)", shown, (int)err.code, (int)code, err.message);
    CHECK_MSG(err.column == column, "'%s': column %zu, want %zu (%s)", shown, err.column, column, err.message);
    CHECK_MSG(err.length >= 1, "'%s': length 0", shown);
    if (message) CHECK_MSG(strcmp(err.message, message) == 0, "'%s': message \"%s\", want \"%s\"", shown, err.message, message);
    CHECK_MSG(strcmp(pxl_ctx_error(g_ctx), err.message) == 0, "'%s': context says \"%s\"", shown, pxl_ctx_error(g_ctx));
    CHECK(v.graph == 0 && v.index == 0);
    CHECK(pxl_ad_graph_status(g) == PXL_OK); /* a failed parse leaves the graph usable */
    pxl_ad_graph_free(g);
}
#define ERR(text, code, col, msg) check_error(text, strlen(text), code, col, msg)

static void test_errors(void) {
    ERR("1 + 2*expp(x)", PXL_AD_PARSE_UNKNOWN_FUNCTION, 7, "column 7: unknown function 'expp'");
    ERR("b1*(1-exp(-b2*x))", PXL_AD_PARSE_UNKNOWN_NAME, 1, "column 1: unknown name 'b1'");
    ERR("a*(1-exp(-b*z))", PXL_AD_PARSE_UNKNOWN_NAME, 13, "column 13: unknown name 'z'");
    ERR("a*(x + 1", PXL_AD_PARSE_SYNTAX, 9, "column 9: expected ')' to match '(' at column 3, found the end");
    ERR("a*(x + 1 b", PXL_AD_PARSE_SYNTAX, 10, "column 10: expected ')' to match '(' at column 3, found 'b'");
    ERR("exp(x", PXL_AD_PARSE_SYNTAX, 6, "column 6: expected ')' to match '(' at column 4, found the end");
    ERR("atan2(x; y)", PXL_AD_PARSE_SYNTAX, 8, "column 8: expected ',' or ')' to match '(' at column 6, found ';'");
    ERR("exp(x, y)", PXL_AD_PARSE_ARGUMENTS, 1, "column 1: exp() takes 1 argument, found 2");
    ERR("x + atan2(y)", PXL_AD_PARSE_ARGUMENTS, 5, "column 5: atan2() takes 2 arguments, found 1");
    ERR("min(x)", PXL_AD_PARSE_ARGUMENTS, 1, "column 1: min() takes at least 2 arguments, found 1");
    ERR("sin()", PXL_AD_PARSE_ARGUMENTS, 1, "column 1: sin() takes 1 argument, found 0");
    ERR("a(x)", PXL_AD_PARSE_UNKNOWN_FUNCTION, 1, "column 1: unknown function 'a'");
    ERR("2 + exp", PXL_AD_PARSE_SYNTAX, 5, "column 5: function 'exp' needs arguments in parentheses");
    ERR("", PXL_AD_PARSE_SYNTAX, 1, "column 1: empty expression");
    ERR("   ", PXL_AD_PARSE_SYNTAX, 1, "column 1: empty expression");
    ERR("2 x", PXL_AD_PARSE_SYNTAX, 3, "column 3: expected an operator before 'x' (write '*' for a product)");
    ERR("2x", PXL_AD_PARSE_SYNTAX, 2, NULL);
    ERR("x)", PXL_AD_PARSE_SYNTAX, 2, "column 2: ')' without a matching '('");
    ERR("x = 1", PXL_AD_PARSE_SYNTAX, 3, "column 3: '=' is not an operator here (compare with '==')");
    ERR("x +", PXL_AD_PARSE_SYNTAX, 4, "column 4: expected a number, a name or '(', found the end");
    ERR("x * / y", PXL_AD_PARSE_SYNTAX, 5, "column 5: expected a number, a name or '(', found '/'");
    ERR("x ^ ^ 2", PXL_AD_PARSE_SYNTAX, 5, NULL);
    ERR("a < b < x", PXL_AD_PARSE_SYNTAX, 7, NULL);
    ERR("1e999", PXL_AD_PARSE_SYNTAX, 1, "column 1: number '1e999' is out of range");
    ERR("2 * 1e+", PXL_AD_PARSE_SYNTAX, 5, "column 5: malformed number '1e+' (no exponent digits)");
    ERR("x $ y", PXL_AD_PARSE_SYNTAX, 3, "column 3: unexpected '$'");
    ERR("x + \xc3\xa9", PXL_AD_PARSE_SYNTAX, 5, "column 5: unexpected byte 0xc3");
    check_error("x\0+1", 4, PXL_AD_PARSE_SYNTAX, 2, "column 2: unexpected byte 0x00");
    check_error("x + 1", 3, PXL_AD_PARSE_SYNTAX, 4, NULL); /* the length counts, not a NUL */
    /* deep nesting and long inputs: errors, not stack overflows */
    size_t n = 100000;
    char *deep = malloc(2 * n + 2);
    if (deep) {
        memset(deep, '(', n);
        deep[n] = 'x';
        memset(deep + n + 1, ')', n);
        deep[2 * n + 1] = '\0';
        check_error(deep, 2 * n + 1, PXL_AD_PARSE_LIMIT, PXL_AD_PARSE_MAX_DEPTH + 1, NULL);
        memset(deep, '-', n);
        check_error(deep, n + 1, PXL_AD_PARSE_LIMIT, PXL_AD_PARSE_MAX_DEPTH + 1, NULL);
        for (size_t i = 0; i + 1 < n; i += 2) deep[i] = '2', deep[i + 1] = '^';
        deep[n - 1] = '2';
        check_error(deep, n, PXL_AD_PARSE_LIMIT, 2 * PXL_AD_PARSE_MAX_DEPTH + 1, NULL);
        free(deep);
    }
    /* just inside the depth limit parses */
    char ok_deep[2 * PXL_AD_PARSE_MAX_DEPTH + 8];
    size_t d = PXL_AD_PARSE_MAX_DEPTH - 1;
    memset(ok_deep, '(', d);
    ok_deep[d] = 'x';
    memset(ok_deep + d + 1, ')', d);
    ok_deep[2 * d + 1] = '\0';
    double v;
    CHECK(eval_text(ok_deep, &v, NULL) && v == k_x);
    size_t big = PXL_AD_PARSE_MAX_LEN + 1;
    char *lng = malloc(big);
    if (lng) {
        memset(lng, ' ', big);
        lng[0] = 'x';
        check_error(lng, big, PXL_AD_PARSE_LIMIT, PXL_AD_PARSE_MAX_LEN + 1, NULL);
        /* a long sum at the limit is iterative, not recursive: it parses */
        for (size_t i = 0; i < PXL_AD_PARSE_MAX_LEN; i++) lng[i] = i % 2 ? '+' : 'x';
        if (lng[PXL_AD_PARSE_MAX_LEN - 1] == '+') lng[PXL_AD_PARSE_MAX_LEN - 1] = ' ';
        pxl_ad_graph *g = NULL;
        if (pxl_ad_graph_create(g_ctx, &g) == PXL_OK) {
            pxl_ad_parse_names names = {k_names, 4, NULL};
            pxl_ad_value out;
            CHECK(pxl_ad_parse(g, lng, PXL_AD_PARSE_MAX_LEN, &names, &out, NULL) == PXL_OK);
            CHECK(pxl_ad_valid(g, out));
        }
        pxl_ad_graph_free(g);
        free(lng);
    }
}

static void test_names(void) {
    pxl_ad_graph *g = NULL;
    if (pxl_ad_graph_create(g_ctx, &g) != PXL_OK) return;
    /* a table entry named e wins over the constant; used flags */
    pxl_ad_name tab[] = {{"e", PXL_AD_NAME_INPUT, 3}, {"k", PXL_AD_NAME_PARAM, 2}, {"unused", PXL_AD_NAME_PARAM, 0},
                         {"k", PXL_AD_NAME_INPUT, 5}};
    uint8_t used[4] = {0, 0, 0, 0};
    pxl_ad_parse_names names = {tab, 4, used};
    pxl_ad_value v;
    CHECK(pxl_ad_parse(g, "k*e + pi", 8, &names, &v, NULL) == PXL_OK);
    CHECK(used[0] == 1 && used[1] == 1 && used[2] == 0 && used[3] == 0); /* the first "k" wins */
    CHECK(pxl_ad_output(g, v) == PXL_OK);
    pxl_ad_program *p = NULL;
    CHECK(pxl_ad_compile(g, &p) == PXL_OK);
    pxl_ad_program_info info = pxl_ad_program_get_info(p);
    CHECK(info.n_params == 3 && info.n_inputs == 4);
    pxl_ad_program_free(p);
    /* bad arguments */
    pxl_ad_parse_error err;
    CHECK(pxl_ad_parse(g, "x", 1, &names, NULL, &err) == PXL_ERR_INVALID_ARG);
    pxl_ad_name bad[] = {{"x", PXL_AD_NAME_PARAM, -1}};
    pxl_ad_parse_names bn = {bad, 1, NULL};
    CHECK(pxl_ad_parse(g, "x", 1, &bn, &v, &err) == PXL_ERR_INVALID_ARG && err.message[0]);
    CHECK(pxl_ad_parse(NULL, "x", 1, &names, &v, &err) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_ad_parse(g, NULL, 1, &names, &v, &err) == PXL_ERR_INVALID_ARG);
    /* no table: constants only */
    CHECK(pxl_ad_parse(g, "2*pi", 4, NULL, &v, NULL) == PXL_OK);
    CHECK(pxl_ad_parse(g, "2*x", 3, NULL, &v, &err) == PXL_ERR_FORMAT && err.code == PXL_AD_PARSE_UNKNOWN_NAME);
    pxl_ad_graph_free(g);
}

int main(void) {
    g_ctx = test_ctx(PXL_BACKEND_CPU, 1);
    if (!g_ctx) return 1;
    test_precedence();
    test_functions();
    test_derivatives();
    test_structure();
    test_errors();
    test_names();
    pxl_ctx_free(g_ctx);
    return test_result("test_ad_expr");
}
