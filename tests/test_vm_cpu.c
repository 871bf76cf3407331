/*
 * The pxVM validator (src/vm/decode.c) and CPU interpreter (src/vm/interp_cpu.c)
 * against docs/pxvm-spec.md: the v0 conformance program, each v0 and v1 op with
 * hand-computed bytes, requantization edge cases, validation failures (each
 * must be PXL_ERR_FORMAT naming the pixel, and leave the image unchanged), the
 * step budget, tracing, and determinism across thread counts.
 *
 * usage: test_vm_cpu [SOURCE_DIR]   (the source dir is not needed)
 */
#include "check.h"
#include "pxl/vm.h"
#include "vm/vm_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pxl_ctx *g_ctx;

/* ---- images ------------------------------------------------------------------------ */

static pxl_image *img_new(uint32_t w, uint32_t h) {
    pxl_image *im = NULL;
    if (pxl_image_create(g_ctx, w, h, &im) != PXL_OK) {
        fprintf(stderr, "pxl_image_create %ux%u: %s\n", w, h, pxl_ctx_error(g_ctx));
        exit(1);
    }
    return im;
}

static pxl_image *img_dup(const pxl_image *im) {
    pxl_image *c = NULL;
    if (pxl_image_clone(g_ctx, im, &c) != PXL_OK) exit(1);
    return c;
}

static int img_same(const pxl_image *a, const pxl_image *b) {
    return a->w == b->w && a->h == b->h && memcmp(a->px, b->px, (size_t)a->w * a->h * 4) == 0;
}

static uint8_t *P(pxl_image *im, uint32_t x, uint32_t y) { return pxl_image_px(im, x, y); }

static void setpx(pxl_image *im, uint32_t x, uint32_t y, uint8_t r, uint8_t g, uint8_t b, uint8_t a) {
    uint8_t *p = P(im, x, y);
    p[0] = r, p[1] = g, p[2] = b, p[3] = a;
}

static int px_is(pxl_image *im, uint32_t x, uint32_t y, int r, int g, int b, int a) {
    uint8_t *p = P(im, x, y);
    return p[0] == r && p[1] == g && p[2] == b && p[3] == a;
}

/* v1: marker, instructions at x = 1 + 2 * i, tensors */
static pxl_image *v1_new(uint32_t w, uint32_t h) {
    pxl_image *im = img_new(w, h);
    setpx(im, 0, 0, 0x50, 0x58, 0x56, 0x01);
    return im;
}

static void ins(pxl_image *im, uint32_t i, uint8_t op, uint32_t out, uint8_t imm, uint32_t a, uint32_t b) {
    setpx(im, 1 + 2 * i, 0, op, (uint8_t)out, (uint8_t)(out >> 8), imm);
    setpx(im, 2 + 2 * i, 0, (uint8_t)a, (uint8_t)(a >> 8), (uint8_t)b, (uint8_t)(b >> 8));
}

static void tensor(pxl_image *im, uint32_t row, uint8_t dtype, uint32_t rows, uint32_t cols, int32_t mult,
                   uint8_t shift) {
    uint32_t m = (uint32_t)mult;
    setpx(im, 0, row, 0x54, dtype, shift, 0);
    setpx(im, 1, row, (uint8_t)cols, (uint8_t)(cols >> 8), (uint8_t)rows, (uint8_t)(rows >> 8));
    setpx(im, 2, row, (uint8_t)m, (uint8_t)(m >> 8), (uint8_t)(m >> 16), (uint8_t)(m >> 24));
}

static uint8_t *tdat(pxl_image *im, uint32_t row) { return im->px + ((size_t)row * im->w + 3) * 4; }

static void put_i8(pxl_image *im, uint32_t row, const int8_t *v, size_t n) { memcpy(tdat(im, row), v, n); }

static void put_i32(pxl_image *im, uint32_t row, const int32_t *v, size_t n) {
    uint8_t *d = tdat(im, row);
    for (size_t i = 0; i < n; i++) {
        uint32_t u = (uint32_t)v[i];
        d[4 * i] = (uint8_t)u, d[4 * i + 1] = (uint8_t)(u >> 8), d[4 * i + 2] = (uint8_t)(u >> 16),
        d[4 * i + 3] = (uint8_t)(u >> 24);
    }
}

static int32_t get_i32(pxl_image *im, uint32_t row, size_t i) {
    const uint8_t *d = tdat(im, row) + 4 * i;
    return (int32_t)((uint32_t)d[0] | (uint32_t)d[1] << 8 | (uint32_t)d[2] << 16 | (uint32_t)d[3] << 24);
}

static int8_t get_i8(pxl_image *im, uint32_t row, size_t i) { return (int8_t)tdat(im, row)[i]; }

#define CHECK_I8(im, row, ...)                                                                     \
    do {                                                                                           \
        const int8_t want_[] = {__VA_ARGS__};                                                      \
        for (size_t i_ = 0; i_ < sizeof want_; i_++)                                               \
            CHECK_MSG(get_i8(im, row, i_) == want_[i_], "row %u element %zu: got %d, want %d",     \
                      (unsigned)(row), i_, get_i8(im, row, i_), want_[i_]);                        \
    } while (0)

#define CHECK_I32(im, row, ...)                                                                    \
    do {                                                                                           \
        const int32_t want_[] = {__VA_ARGS__};                                                     \
        for (size_t i_ = 0; i_ < sizeof want_ / sizeof want_[0]; i_++)                            \
            CHECK_MSG(get_i32(im, row, i_) == want_[i_], "row %u element %zu: got %d, want %d",    \
                      (unsigned)(row), i_, get_i32(im, row, i_), want_[i_]);                       \
    } while (0)

static pxl_status run(pxl_image *im, uint64_t max_steps) {
    pxl_vm_options o = {max_steps, NULL, NULL, NULL};
    return pxl_vm_run_cpu(g_ctx, im, &o);
}

#define RUN_OK(im)                                                                                 \
    do {                                                                                           \
        pxl_status st_ = run(im, 0);                                                               \
        CHECK_MSG(st_ == PXL_OK, "%s: %s", pxl_status_str(st_), pxl_ctx_error(g_ctx));             \
    } while (0)

/* The program must fail validation with a message containing each needle, and
 * a run must fail the same way without touching the image. */
static void expect_format_(int line, pxl_image *im, const char *n1, const char *n2) {
    pxl_status st = pxl_vm_validate(g_ctx, im);
    const char *msg = pxl_ctx_error(g_ctx);
    if (st != PXL_ERR_FORMAT || !strstr(msg, n1) || (n2 && !strstr(msg, n2))) {
        fprintf(stderr, "line %d: expected FORMAT with '%s'%s%s, got %s: %s\n", line, n1, n2 ? " and " : "",
                n2 ? n2 : "", pxl_status_str(st), msg);
        g_failures++;
    }
    pxl_image *before = img_dup(im);
    st = run(im, 0);
    if (st != PXL_ERR_FORMAT || !img_same(before, im)) {
        fprintf(stderr, "line %d: run: expected FORMAT and an unchanged image, got %s\n", line,
                pxl_status_str(st));
        g_failures++;
    }
    pxl_image_free(before);
}
#define EXPECT_FORMAT(im, n1, n2) expect_format_(__LINE__, im, n1, n2)

/* ---- v0 ------------------------------------------------------------------------------ */

static void test_v0_conformance(void) {
    pxl_image *im = img_new(16, 16);
    setpx(im, 0, 0, 1, 1, 2, 3);
    setpx(im, 1, 0, 0, 0, 0, 0);
    for (uint8_t x = 0; x < 4; x++) {
        P(im, x, 1)[0] = (uint8_t)(x + 1);
        P(im, x, 2)[0] = (uint8_t)(10 * (x + 1));
    }
    CHECK(pxl_vm_version(im) == 0);
    CHECK(pxl_vm_validate(g_ctx, im) == PXL_OK);
    pxl_image *im2 = img_dup(im);
    RUN_OK(im);
    CHECK(px_is(im, 0, 3, 44, 1, 0, 0));
    /* pxl_vm_run on a CPU context gives the same image */
    CHECK(pxl_vm_run(g_ctx, im2, NULL) == PXL_OK);
    CHECK(img_same(im, im2));
    /* the decoded program: one instruction, DOT costs 1 + W */
    pxl_vm_program p = {0, 0, NULL};
    CHECK(pxl_vm_decode(g_ctx, im2, &p) == PXL_OK);
    CHECK(p.version == 0 && p.n == 1 && p.insns[0].cost == 17 && p.insns[0].a == 1 && p.insns[0].b == 2 &&
          p.insns[0].out == 3);
    pxl_vm_program_free(g_ctx, &p);
    pxl_image_free(im);
    pxl_image_free(im2);
}

static void test_v0_dot(void) {
    /* length: the first x where both pixels are (0,0,0,0) */
    pxl_image *im = img_new(8, 4);
    setpx(im, 0, 0, 1, 1, 2, 3);
    setpx(im, 0, 1, 3, 0, 0, 0), setpx(im, 0, 2, 2, 0, 0, 0);
    setpx(im, 1, 1, 0, 7, 0, 0), setpx(im, 1, 2, 9, 0, 0, 0); /* a is not all zero: goes on */
    setpx(im, 2, 1, 5, 0, 0, 0), setpx(im, 2, 2, 4, 0, 0, 0);
    /* x = 3: both zero, stop */
    setpx(im, 4, 1, 100, 0, 0, 0), setpx(im, 4, 2, 100, 0, 0, 0);
    setpx(im, 0, 3, 0, 0, 77, 88);
    RUN_OK(im);
    CHECK(px_is(im, 0, 3, 26, 0, 77, 88)); /* 3*2 + 0*9 + 5*4 */
    pxl_image_free(im);

    /* no zero pair: length W; the sum is stored modulo 2^16 */
    im = img_new(16, 3);
    setpx(im, 0, 0, 1, 1, 1, 2); /* a . a into row 2 */
    for (uint32_t x = 0; x < 16; x++) P(im, x, 1)[0] = 255;
    RUN_OK(im);
    CHECK(px_is(im, 0, 2, 16, 224, 0, 0)); /* 16 * 65025 = 1040400 = 15 * 65536 + 224 * 256 + 16 */
    pxl_image_free(im);
}

static void test_v0_add_relu(void) {
    pxl_image *im = img_new(4, 5);
    setpx(im, 0, 0, 2, 1, 2, 3); /* ADD 1 2 -> 3 */
    setpx(im, 1, 0, 3, 4, 4, 0); /* RELU 4 -> 4 (in place) */
    setpx(im, 2, 0, 2, 1, 1, 1); /* ADD 1 1 -> 1 (in place, a == b) */
    const uint8_t a[4] = {200, 10, 0, 255}, b[4] = {100, 20, 0, 1}, r[4] = {0, 127, 128, 255};
    for (uint32_t x = 0; x < 4; x++) {
        setpx(im, x, 1, a[x], 1, 2, 3);
        setpx(im, x, 2, b[x], 4, 5, 6);
        setpx(im, x, 3, 0, 9, 9, 9);
        setpx(im, x, 4, r[x], 7, 8, 9);
    }
    RUN_OK(im);
    CHECK(px_is(im, 0, 3, 255, 9, 9, 9) && px_is(im, 1, 3, 30, 9, 9, 9) && px_is(im, 2, 3, 0, 9, 9, 9) &&
          px_is(im, 3, 3, 255, 9, 9, 9));
    CHECK(px_is(im, 0, 4, 0, 7, 8, 9) && px_is(im, 1, 4, 127, 7, 8, 9) && px_is(im, 2, 4, 0, 7, 8, 9) &&
          px_is(im, 3, 4, 0, 7, 8, 9));
    CHECK(px_is(im, 0, 1, 255, 1, 2, 3) && px_is(im, 1, 1, 20, 1, 2, 3) && px_is(im, 2, 1, 0, 1, 2, 3) &&
          px_is(im, 3, 1, 255, 1, 2, 3));
    pxl_image_free(im);
}

static void test_v0_matmul(void) {
    /* W = 4: elements wrap across rows. A 2x3 at row 1 (pixels 5..10), B 3x2 at row 3 (13..18),
     * C 2x2 at row 5 (header 20, elements 21..24, the last at (0, 6)). */
    pxl_image *im = img_new(4, 10);
    setpx(im, 0, 0, 4, 1, 3, 5);
    setpx(im, 0, 1, 3, 0, 2, 0);
    setpx(im, 0, 3, 2, 0, 3, 0);
    const uint8_t A[6] = {1, 2, 3, 40, 50, 60}, B[6] = {7, 8, 9, 10, 11, 12};
    for (uint32_t e = 0; e < 6; e++) {
        im->px[(5 + e) * 4] = A[e];
        im->px[(13 + e) * 4] = B[e];
    }
    for (uint32_t p = 20; p < 25; p++) setpx(im, p % 4, p / 4, 0, 33, 33, 33);
    RUN_OK(im);
    CHECK(px_is(im, 0, 5, 2, 0, 2, 0)); /* header: cols 2, rows 2, all four channels */
    CHECK(px_is(im, 1, 5, 58, 33, 33, 33)); /* 1*7 + 2*9 + 3*11 */
    CHECK(px_is(im, 2, 5, 64, 33, 33, 33)); /* 1*8 + 2*10 + 3*12 */
    CHECK(px_is(im, 3, 5, 255, 33, 33, 33)); /* 1390 saturates */
    CHECK(px_is(im, 0, 6, 255, 33, 33, 33)); /* 1540, wrapped to the next row */
    pxl_image_free(im);

    /* a later MATMUL reads the header an earlier MATMUL wrote (static), and the
     * output overlaps the inputs (read before written): W = 8, A 2x2 at row 1,
     * B 2x2 at row 2; C = A.B over A at row 1; then D = C.B at row 3. */
    im = img_new(8, 4);
    setpx(im, 0, 0, 4, 1, 2, 1);
    setpx(im, 1, 0, 4, 1, 2, 3);
    setpx(im, 0, 1, 2, 0, 2, 0), setpx(im, 0, 2, 2, 0, 2, 0);
    const uint8_t a2[4] = {1, 2, 3, 4}, b2[4] = {5, 6, 7, 8};
    for (uint32_t e = 0; e < 4; e++) P(im, 1 + e, 1)[0] = a2[e], P(im, 1 + e, 2)[0] = b2[e];
    pxl_vm_program p = {0, 0, NULL};
    CHECK(pxl_vm_decode(g_ctx, im, &p) == PXL_OK);
    CHECK(p.n == 2 && p.insns[0].cost == 1 + 4 * 2 && p.insns[1].t_a.rows == 2 && p.insns[1].t_a.cols == 2);
    pxl_vm_program_free(g_ctx, &p);
    RUN_OK(im);
    /* C = [[19, 22], [43, 50]]; D = C.B = [[19*5+22*7, 19*6+22*8], [43*5+50*7, ...]] saturated */
    CHECK(px_is(im, 0, 1, 2, 0, 2, 0));
    CHECK(P(im, 1, 1)[0] == 19 && P(im, 2, 1)[0] == 22 && P(im, 3, 1)[0] == 43 && P(im, 4, 1)[0] == 50);
    CHECK(px_is(im, 0, 3, 2, 0, 2, 0));
    CHECK(P(im, 1, 3)[0] == 249 && P(im, 2, 3)[0] == 255 && P(im, 3, 3)[0] == 255 && P(im, 4, 3)[0] == 255);
    pxl_image_free(im);

    /* empty sums: A 1x0 times B 0x1 is one element 0 */
    im = img_new(4, 4);
    setpx(im, 0, 0, 4, 1, 2, 3);
    setpx(im, 0, 1, 0, 0, 1, 0), setpx(im, 0, 2, 1, 0, 0, 0);
    setpx(im, 1, 3, 9, 9, 9, 9);
    RUN_OK(im);
    CHECK(px_is(im, 0, 3, 1, 0, 1, 0) && px_is(im, 1, 3, 0, 9, 9, 9));
    pxl_image_free(im);
}

static void test_v0_invalid(void) {
    pxl_image *im = img_new(8, 8);
    setpx(im, 0, 0, 1, 1, 2, 3);
    setpx(im, 1, 0, 2, 1, 2, 3);
    setpx(im, 2, 0, 9, 0, 0, 0);
    EXPECT_FORMAT(im, "instruction at x=2", "unknown opcode 9");
    setpx(im, 2, 0, 3, 1, 9, 0); /* RELU to row 9 of 8 */
    EXPECT_FORMAT(im, "instruction at x=2", "row 9");
    setpx(im, 2, 0, 3, 1, 2, 1); /* RELU with A != 0 */
    EXPECT_FORMAT(im, "instruction at x=2", "unused");
    setpx(im, 2, 0, 0, 0, 5, 0); /* HALT with an operand */
    EXPECT_FORMAT(im, "instruction at x=2", "unused");
    setpx(im, 2, 0, 0, 0, 0, 0);
    CHECK(pxl_vm_validate(g_ctx, im) == PXL_OK);
    /* after HALT, row 0 is not read */
    setpx(im, 3, 0, 99, 99, 99, 99);
    CHECK(pxl_vm_validate(g_ctx, im) == PXL_OK);

    /* static shapes: DOT and ADD write P(0, 3), a later MATMUL reads it as a header */
    setpx(im, 2, 0, 4, 3, 4, 5);
    EXPECT_FORMAT(im, "instruction at x=2", "x=1 (add_r)");
    /* ... unless a MATMUL rewrote it in between */
    setpx(im, 2, 0, 4, 6, 6, 3); /* 0x0 . 0x0 -> header (0, 0, 0, 0) at row 3 */
    setpx(im, 3, 0, 4, 3, 3, 7);
    CHECK(pxl_vm_validate(g_ctx, im) == PXL_OK);

    /* shape mismatch */
    pxl_image *m = img_new(8, 8);
    setpx(m, 0, 0, 4, 1, 2, 3);
    setpx(m, 0, 1, 3, 0, 1, 0), setpx(m, 0, 2, 1, 0, 2, 0);
    EXPECT_FORMAT(m, "instruction at x=0 (matmul_r)", "a has 3 columns but b has 2 rows");
    /* output does not fit: 4x4 result at row 7 of an 8x8 image needs 17 pixels */
    setpx(m, 0, 1, 2, 0, 4, 0), setpx(m, 0, 2, 4, 0, 2, 0), setpx(m, 0, 0, 4, 1, 2, 7);
    EXPECT_FORMAT(m, "instruction at x=0", "does not fit");
    setpx(m, 0, 0, 4, 1, 2, 6); /* pixels 48..64: one too many */
    EXPECT_FORMAT(m, "instruction at x=0", "does not fit");
    setpx(m, 0, 0, 4, 1, 2, 5);
    CHECK(pxl_vm_validate(g_ctx, m) == PXL_OK);
    /* an input that runs out of the image */
    setpx(m, 0, 2, 255, 0, 2, 0);
    EXPECT_FORMAT(m, "instruction at x=0", "past the end");
    pxl_image_free(m);

    /* a MATMUL's elements land on P(0, 6); a later MATMUL reads row 6 as a header */
    m = img_new(4, 8);
    setpx(m, 0, 0, 4, 1, 2, 5);
    setpx(m, 1, 0, 4, 6, 2, 7);
    setpx(m, 0, 1, 1, 0, 2, 0), setpx(m, 0, 2, 2, 0, 1, 0); /* 2x1 . 1x2 = 2x2 at row 5: pixels 21..24 */
    EXPECT_FORMAT(m, "instruction at x=1", "matmul_r elements");
    pxl_image_free(m);

    /* writing row 0, the program */
    setpx(im, 2, 0, 3, 1, 0, 0);
    EXPECT_FORMAT(im, "instruction at x=2 (relu_r)", "row 0");

    /* a marker-like pixel of another version is an unknown v0 opcode */
    setpx(im, 0, 0, 0x50, 0x58, 0x56, 0x02);
    EXPECT_FORMAT(im, "instruction at x=0", "unknown opcode 80");
    pxl_image_free(im);
}

/* ---- v1 ------------------------------------------------------------------------------ */

static void test_rq(void) {
    /* s > 0: round half toward +infinity */
    CHECK(pxl_vm_rq(3, 1, 1, PXL_VM_INT8) == 2);   /* 1.5 */
    CHECK(pxl_vm_rq(-3, 1, 1, PXL_VM_INT8) == -1); /* -1.5 */
    CHECK(pxl_vm_rq(-5, 1, 1, PXL_VM_INT8) == -2); /* -2.5 */
    CHECK(pxl_vm_rq(-1, 1, 2, PXL_VM_INT8) == 0);  /* -0.25 */
    CHECK(pxl_vm_rq(-3, 1, 2, PXL_VM_INT8) == -1); /* -0.75 */
    CHECK(pxl_vm_rq(7, -1, 0, PXL_VM_INT8) == -7); /* s = 0: no rounding */
    CHECK(pxl_vm_rq(200, 1, 0, PXL_VM_INT8) == 127);
    CHECK(pxl_vm_rq(-200, 1, 0, PXL_VM_INT8) == -128);
    CHECK(pxl_vm_rq(INT32_MIN, INT32_MIN, 62, PXL_VM_INT32) == 1); /* 2^62 / 2^62 */
    CHECK(pxl_vm_rq(INT32_MIN, INT32_MIN, 0, PXL_VM_INT32) == INT32_MAX);
    CHECK(pxl_vm_rq(INT32_MAX, INT32_MIN, 0, PXL_VM_INT32) == INT32_MIN);
    CHECK(pxl_vm_rq(INT32_MAX, INT32_MIN, 62, PXL_VM_INT32) == -1);
}

static void test_v1_matmul(void) {
    pxl_image *im = v1_new(16, 16);
    ins(im, 0, PXL_OP_MATMUL, 4, 0, 2, 3);
    ins(im, 1, PXL_OP_MATMUL, 5, 0, 2, 3);
    ins(im, 2, PXL_OP_MATMUL, 7, PXL_VM_FLAG_FLATTEN_A, 2, 6);
    tensor(im, 2, PXL_VM_INT8, 2, 3, 0, 0);
    tensor(im, 3, PXL_VM_INT8, 2, 3, 0, 0);
    tensor(im, 4, PXL_VM_INT8, 2, 2, 1, 1);
    tensor(im, 5, PXL_VM_INT32, 2, 2, 1000, 0);
    tensor(im, 6, PXL_VM_INT8, 2, 6, 0, 0);
    tensor(im, 7, PXL_VM_INT32, 1, 2, 1, 0);
    put_i8(im, 2, (const int8_t[]){1, -2, 3, -4, 5, -6}, 6);
    put_i8(im, 3, (const int8_t[]){7, 8, 9, -1, 0, 2}, 6);
    put_i8(im, 6, (const int8_t[]){1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, -1}, 12);
    tdat(im, 4)[4] = 0xAB; /* the rest of the last data pixel is not the tensor's */
    CHECK(pxl_vm_version(im) == 1);
    pxl_vm_program p = {0, 0, NULL};
    CHECK(pxl_vm_decode(g_ctx, im, &p) == PXL_OK);
    CHECK(p.version == 1 && p.n == 3);
    if (p.n == 3) {
        CHECK(p.insns[0].x == 1 && p.insns[1].x == 3 && p.insns[2].x == 5);
        CHECK(p.insns[0].cost == 1 + 4 * 3);
        CHECK(p.insns[2].cost == 1 + 2 * 6 && p.insns[2].t_a.rows == 1 && p.insns[2].t_a.cols == 6);
        CHECK(p.insns[0].t_out.mult == 1 && p.insns[0].t_out.shift == 1 && p.insns[1].t_out.mult == 1000);
        CHECK(p.insns[0].t_a.data_px == 2 * 16 + 3 && p.insns[0].t_a.end_px == 2 * 16 + 3 + 2);
    }
    pxl_vm_program_free(g_ctx, &p);
    RUN_OK(im);
    /* acc = [[18, 5], [-42, -8]]; rq with M=1, s=1 */
    CHECK_I8(im, 4, 9, 3, -21, -4);
    CHECK(tdat(im, 4)[4] == 0xAB);
    CHECK_I32(im, 5, 18000, 5000, -42000, -8000);
    CHECK_I32(im, 7, -3, 7);
    pxl_image_free(im);
}

static void test_v1_elementwise(void) {
    pxl_image *im = v1_new(16, 32);
    /* MUL: rounding edge cases through the interpreter (M = 1, s = 2) */
    ins(im, 0, PXL_OP_MUL, 3, 0, 1, 2);
    tensor(im, 1, PXL_VM_INT8, 1, 9, 0, 0);
    tensor(im, 2, PXL_VM_INT8, 1, 9, 0, 0);
    tensor(im, 3, PXL_VM_INT8, 1, 9, 1, 2);
    put_i8(im, 1, (const int8_t[]){1, -1, 2, -2, -2, 1, -3, 127, -128}, 9);
    put_i8(im, 2, (const int8_t[]){2, 2, 3, 3, 5, 1, 1, 127, 127}, 9);
    /* ADD int8 with broadcast, s = 0, saturation at both ends */
    ins(im, 1, PXL_OP_ADD, 6, 0, 4, 5);
    tensor(im, 4, PXL_VM_INT8, 2, 3, 0, 0);
    tensor(im, 5, PXL_VM_INT8, 1, 3, 0, 0);
    tensor(im, 6, PXL_VM_INT8, 2, 3, 1, 0);
    put_i8(im, 4, (const int8_t[]){1, 2, 100, 4, -100, 6}, 6);
    put_i8(im, 5, (const int8_t[]){10, -20, 100}, 3);
    /* ADD in place on a (the header's M = 3, s = 1 apply to the output) */
    ins(im, 2, PXL_OP_ADD, 7, 0, 7, 8);
    tensor(im, 7, PXL_VM_INT8, 1, 4, 3, 1);
    tensor(im, 8, PXL_VM_INT8, 1, 4, 0, 0);
    put_i8(im, 7, (const int8_t[]){1, 2, 3, 4}, 4);
    put_i8(im, 8, (const int8_t[]){1, 1, 1, 1}, 4);
    /* ADD int32 + int32: the sum clamps to int32 before rq; out int32 with M = 2 */
    ins(im, 3, PXL_OP_ADD, 11, 0, 9, 10);
    ins(im, 4, PXL_OP_ADD, 12, 0, 9, 10);
    tensor(im, 9, PXL_VM_INT32, 1, 4, 0, 0);
    tensor(im, 10, PXL_VM_INT32, 1, 4, 0, 0);
    tensor(im, 11, PXL_VM_INT32, 1, 4, 1, 0);
    tensor(im, 12, PXL_VM_INT32, 1, 4, -2, 1);
    put_i32(im, 9, (const int32_t[]){INT32_MAX, INT32_MIN, 5, -7}, 4);
    put_i32(im, 10, (const int32_t[]){1, -1, 7, 2}, 4);
    /* MUL in place on b, int32 out */
    ins(im, 5, PXL_OP_MUL, 14, 0, 13, 14);
    tensor(im, 13, PXL_VM_INT8, 1, 3, 0, 0);
    tensor(im, 14, PXL_VM_INT8, 1, 3, 1, 0);
    put_i8(im, 13, (const int8_t[]){-128, 3, -5}, 3);
    put_i8(im, 14, (const int8_t[]){-128, 40, 7}, 3);
    RUN_OK(im);
    /* products [2,-2,6,-6,-10,1,-3,16129,-16256] / 4, half up */
    CHECK_I8(im, 3, 1, 0, 2, -1, -2, 0, -1, 127, -128);
    CHECK_I8(im, 6, 11, -18, 127, 14, -120, 106);
    CHECK_I8(im, 7, 3, 5, 6, 8); /* (2*3, 3*3, 4*3, 5*3) / 2, half up */
    CHECK_I32(im, 11, INT32_MAX, INT32_MIN, 12, -5);
    /* -2 * [INT32_MAX, INT32_MIN, 12, -5] / 2 */
    CHECK_I32(im, 12, -INT32_MAX, INT32_MAX, -12, 5);
    CHECK_I8(im, 14, 127, 120, -35);
    pxl_image_free(im);
}

static void test_v1_lut_gather_argmax_copy(void) {
    pxl_image *im = v1_new(32, 32);
    /* LUT, then LUT in place on a */
    ins(im, 0, PXL_OP_LUT, 3, 0, 1, 20);
    ins(im, 1, PXL_OP_LUT, 4, 0, 4, 20);
    tensor(im, 1, PXL_VM_INT8, 1, 4, 0, 0);
    tensor(im, 20, PXL_VM_INT8, 1, 256, 0, 0); /* 64 data pixels: rows 20..22 */
    tensor(im, 3, PXL_VM_INT8, 1, 4, 0, 0);
    tensor(im, 4, PXL_VM_INT8, 1, 4, 0, 0);
    put_i8(im, 1, (const int8_t[]){-128, -1, 0, 127}, 4);
    put_i8(im, 4, (const int8_t[]){-128, -1, 0, 127}, 4);
    for (int i = 0; i < 256; i++) tdat(im, 20)[i] = (uint8_t)(i * 7);
    /* GATHER with an out-of-range index, then int32 GATHER */
    ins(im, 2, PXL_OP_GATHER, 7, 0, 5, 6);
    tensor(im, 5, PXL_VM_INT8, 3, 2, 0, 0);
    tensor(im, 6, PXL_VM_INT32, 1, 5, 0, 0);
    tensor(im, 7, PXL_VM_INT8, 5, 2, 0, 0);
    put_i8(im, 5, (const int8_t[]){1, 2, 3, 4, 5, 6}, 6);
    put_i32(im, 6, (const int32_t[]){2, 0, 3, -1, 1}, 5);
    memset(tdat(im, 7), 0x55, 10);
    ins(im, 3, PXL_OP_GATHER, 10, 0, 9, 8);
    tensor(im, 8, PXL_VM_INT32, 1, 2, 0, 0);
    tensor(im, 9, PXL_VM_INT32, 2, 1, 0, 0);
    tensor(im, 10, PXL_VM_INT32, 2, 1, 0, 0);
    put_i32(im, 8, (const int32_t[]){1, 1}, 2);
    put_i32(im, 9, (const int32_t[]){-5, 123456789}, 2);
    /* ARGMAX: ties go to the first */
    ins(im, 4, PXL_OP_ARGMAX, 12, 0, 11, 0);
    tensor(im, 11, PXL_VM_INT8, 2, 4, 0, 0);
    tensor(im, 12, PXL_VM_INT32, 1, 2, 0, 0);
    put_i8(im, 11, (const int8_t[]){3, 7, 7, 1, -5, -5, -9, -5}, 8);
    ins(im, 5, PXL_OP_ARGMAX, 14, 0, 13, 0);
    tensor(im, 13, PXL_VM_INT32, 1, 3, 0, 0);
    tensor(im, 14, PXL_VM_INT32, 1, 1, 0, 0);
    put_i32(im, 13, (const int32_t[]){-1, 70000, 70000}, 3);
    /* COPY int8 (5 bytes: the last pixel is shared with nothing but keeps its other bytes) and int32 */
    ins(im, 6, PXL_OP_COPY, 16, 0, 15, 0);
    tensor(im, 15, PXL_VM_INT8, 1, 5, 0, 0);
    tensor(im, 16, PXL_VM_INT8, 1, 5, 0, 0);
    put_i8(im, 15, (const int8_t[]){9, -8, 7, -6, 5}, 5);
    memset(tdat(im, 15) + 5, 0x11, 3);
    memset(tdat(im, 16) + 5, 0x22, 3);
    ins(im, 7, PXL_OP_COPY, 18, 0, 17, 0);
    tensor(im, 17, PXL_VM_INT32, 1, 2, 0, 0);
    tensor(im, 18, PXL_VM_INT32, 1, 2, 0, 0);
    put_i32(im, 17, (const int32_t[]){INT32_MIN, 42}, 2);

    pxl_status st = run(im, 0);
    const char *msg = pxl_ctx_error(g_ctx);
    CHECK(st == PXL_ERR_INVALID_ARG);
    CHECK_MSG(strstr(msg, "x=5") && strstr(msg, "position 2") && strstr(msg, "index 3"), "%s", msg);
    CHECK_I8(im, 3, 0, 121, -128, -7);
    CHECK_I8(im, 4, 0, 121, -128, -7);
    CHECK_I8(im, 7, 5, 6, 1, 2, 0, 0, 0, 0, 3, 4);
    CHECK_I32(im, 10, 123456789, 123456789);
    CHECK_I32(im, 12, 1, 0);
    CHECK_I32(im, 14, 1);
    CHECK_I8(im, 16, 9, -8, 7, -6, 5);
    CHECK(tdat(im, 16)[5] == 0x22 && tdat(im, 16)[7] == 0x22);
    CHECK_I32(im, 18, INT32_MIN, 42);
    pxl_image_free(im);
}

/* A valid v1 base program for the validation cases: ADD 3 <- 1 + 2 (int8 2x4). */
static pxl_image *v1_base(void) {
    pxl_image *im = v1_new(16, 16);
    ins(im, 0, PXL_OP_ADD, 3, 0, 1, 2);
    tensor(im, 1, PXL_VM_INT8, 2, 4, 0, 0);
    tensor(im, 2, PXL_VM_INT8, 2, 4, 0, 0);
    tensor(im, 3, PXL_VM_INT8, 2, 4, 1, 0);
    CHECK(pxl_vm_validate(g_ctx, im) == PXL_OK);
    return im;
}

static void test_v1_invalid(void) {
    pxl_image *im;

    im = v1_base();
    ins(im, 1, 23, 0, 0, 0, 0);
    EXPECT_FORMAT(im, "instruction at x=3", "unknown opcode 23");
    ins(im, 1, PXL_OP_MATMUL - 1, 0, 0, 0, 0); /* 15: neither v0 nor v1 */
    EXPECT_FORMAT(im, "instruction at x=3", "unknown opcode 15");
    ins(im, 1, PXL_OP_V0_ADD, 3, 0, 1, 2); /* a v0 opcode in a v1 image */
    EXPECT_FORMAT(im, "instruction at x=3", "unknown opcode 2");
    pxl_image_free(im);

    im = v1_base();
    ins(im, 0, PXL_OP_ADD, 70, 0, 1, 2);
    EXPECT_FORMAT(im, "instruction at x=1", "row 70");
    ins(im, 0, PXL_OP_ADD, 3, 0, 1, 300);
    EXPECT_FORMAT(im, "instruction at x=1", "row 300");
    pxl_image_free(im);

    /* unused operands */
    im = v1_base();
    ins(im, 0, PXL_OP_ADD, 3, 1, 1, 2);
    EXPECT_FORMAT(im, "instruction at x=1 (add)", "imm8");
    ins(im, 0, PXL_OP_ADD, 3, 0, 1, 2);
    ins(im, 1, PXL_OP_COPY, 3, 0, 1, 2);
    EXPECT_FORMAT(im, "instruction at x=3 (copy)", "unused operand b");
    ins(im, 1, PXL_OP_HALT, 0, 0, 0, 1);
    EXPECT_FORMAT(im, "instruction at x=3 (halt)", "unused");
    ins(im, 1, PXL_OP_HALT, 0, 0, 0, 0);
    CHECK(pxl_vm_validate(g_ctx, im) == PXL_OK);
    pxl_image_free(im);

    /* tensor headers */
    im = v1_base();
    P(im, 0, 2)[0] = 0x55;
    EXPECT_FORMAT(im, "tensor header at (0, 2)", "magic");
    P(im, 0, 2)[0] = 0x54;
    P(im, 0, 2)[1] = 9;
    EXPECT_FORMAT(im, "tensor header at (0, 2)", "unknown dtype 9");
    P(im, 0, 2)[1] = 1;
    P(im, 0, 3)[2] = 63;
    EXPECT_FORMAT(im, "tensor header at (0, 3)", "shift 63");
    P(im, 0, 3)[2] = 62;
    CHECK(pxl_vm_validate(g_ctx, im) == PXL_OK);
    P(im, 0, 3)[3] = 1;
    EXPECT_FORMAT(im, "tensor header at (0, 3)", "reserved");
    P(im, 0, 3)[3] = 0;
    tensor(im, 1, PXL_VM_INT8, 0, 4, 0, 0);
    EXPECT_FORMAT(im, "tensor header at (0, 1)", "at least 1");
    pxl_image_free(im);

    /* extents: an output (or input) too large for the image */
    im = v1_base();
    tensor(im, 3, PXL_VM_INT32, 13, 16, 1, 0); /* 208 data pixels from (3, 3): 205 are left */
    EXPECT_FORMAT(im, "tensor header at (0, 3)", "int32 13x16");
    pxl_image_free(im);
    im = v1_base();
    tensor(im, 3, PXL_VM_INT8, 2, 4 * 210, 1, 0);
    EXPECT_FORMAT(im, "tensor header at (0, 3)", "needs 420 data pixels");
    pxl_image_free(im);

    /* shapes and dtypes */
    im = v1_base();
    tensor(im, 2, PXL_VM_INT8, 2, 5, 0, 0);
    EXPECT_FORMAT(im, "instruction at x=1 (add)", "b is 2x5 but a is 2x4");
    tensor(im, 2, PXL_VM_INT32, 1, 4, 0, 0);
    EXPECT_FORMAT(im, "instruction at x=1 (add)", "a is int8 but b is int32");
    tensor(im, 2, PXL_VM_INT8, 1, 4, 0, 0);
    CHECK(pxl_vm_validate(g_ctx, im) == PXL_OK); /* broadcast */
    tensor(im, 3, PXL_VM_INT8, 4, 2, 1, 0);
    EXPECT_FORMAT(im, "instruction at x=1 (add)", "out is 4x2");
    pxl_image_free(im);

    im = v1_new(16, 16);
    ins(im, 0, PXL_OP_MATMUL, 3, 0, 1, 2);
    tensor(im, 1, PXL_VM_INT8, 2, 7, 0, 0);
    tensor(im, 2, PXL_VM_INT8, 3, 8, 0, 0);
    tensor(im, 3, PXL_VM_INT8, 2, 3, 1, 0);
    EXPECT_FORMAT(im, "instruction at x=1 (matmul)", "a has 7 columns but b has 8");
    tensor(im, 2, PXL_VM_INT8, 3, 7, 0, 0);
    CHECK(pxl_vm_validate(g_ctx, im) == PXL_OK);
    tensor(im, 3, PXL_VM_INT8, 3, 2, 1, 0);
    EXPECT_FORMAT(im, "instruction at x=1 (matmul)", "out is 3x2");
    tensor(im, 3, PXL_VM_INT8, 2, 3, 1, 0);
    tensor(im, 1, PXL_VM_INT32, 2, 7, 0, 0);
    EXPECT_FORMAT(im, "instruction at x=1 (matmul)", "a is int32, must be int8");
    tensor(im, 1, PXL_VM_INT8, 2, 7, 0, 0);
    ins(im, 0, PXL_OP_MATMUL, 3, 2, 1, 2);
    EXPECT_FORMAT(im, "instruction at x=1 (matmul)", "flags 0x02");
    ins(im, 0, PXL_OP_MATMUL, 3, 1, 1, 2); /* flattened a is 1x14: b must have 14 columns */
    EXPECT_FORMAT(im, "instruction at x=1 (matmul)", "a has 14 columns but b has 7");
    pxl_image_free(im);

    /* flattened k above 65535 */
    im = v1_new(256, 128);
    ins(im, 0, PXL_OP_MATMUL, 3, 1, 1, 2);
    tensor(im, 1, PXL_VM_INT8, 2, 40000, 0, 0); /* 20000 pixels: rows 1..79 */
    tensor(im, 2, PXL_VM_INT8, 1, 40000, 0, 0);
    tensor(im, 3, PXL_VM_INT8, 1, 1, 1, 0);
    ins(im, 0, PXL_OP_MATMUL, 100, 1, 1, 90);
    tensor(im, 90, PXL_VM_INT8, 1, 1, 0, 0);
    tensor(im, 100, PXL_VM_INT8, 1, 1, 1, 0);
    EXPECT_FORMAT(im, "instruction at x=1 (matmul)", "k=80000");
    pxl_image_free(im);

    im = v1_new(16, 16);
    ins(im, 0, PXL_OP_LUT, 3, 0, 1, 2);
    tensor(im, 1, PXL_VM_INT8, 1, 4, 0, 0);
    tensor(im, 2, PXL_VM_INT8, 1, 255, 0, 0);
    tensor(im, 3, PXL_VM_INT8, 1, 4, 0, 0);
    EXPECT_FORMAT(im, "instruction at x=1 (lut)", "1x256");
    pxl_image_free(im);

    im = v1_new(16, 16);
    ins(im, 0, PXL_OP_GATHER, 3, 0, 1, 2);
    tensor(im, 1, PXL_VM_INT8, 4, 4, 0, 0);
    tensor(im, 2, PXL_VM_INT8, 1, 2, 0, 0);
    tensor(im, 3, PXL_VM_INT8, 2, 4, 0, 0);
    EXPECT_FORMAT(im, "instruction at x=1 (gather)", "int32");
    tensor(im, 2, PXL_VM_INT32, 1, 2, 0, 0);
    CHECK(pxl_vm_validate(g_ctx, im) == PXL_OK);
    tensor(im, 3, PXL_VM_INT32, 2, 4, 0, 0);
    EXPECT_FORMAT(im, "instruction at x=1 (gather)", "out is int32 but a is int8");
    pxl_image_free(im);

    im = v1_new(16, 16);
    ins(im, 0, PXL_OP_ARGMAX, 3, 0, 1, 0);
    tensor(im, 1, PXL_VM_INT8, 4, 4, 0, 0);
    tensor(im, 3, PXL_VM_INT8, 1, 4, 0, 0);
    EXPECT_FORMAT(im, "instruction at x=1 (argmax)", "out is int8, must be int32");
    tensor(im, 3, PXL_VM_INT32, 1, 3, 0, 0);
    EXPECT_FORMAT(im, "instruction at x=1 (argmax)", "out is 1x3");
    pxl_image_free(im);

    /* overlap */
    im = v1_new(16, 16);
    ins(im, 0, PXL_OP_COPY, 3, 0, 2, 0);
    tensor(im, 2, PXL_VM_INT8, 1, 16, 0, 0);
    tensor(im, 3, PXL_VM_INT8, 1, 16, 0, 0);
    CHECK(pxl_vm_validate(g_ctx, im) == PXL_OK);
    tensor(im, 2, PXL_VM_INT8, 1, 60, 0, 0); /* a's extent runs into row 3 */
    tensor(im, 3, PXL_VM_INT8, 1, 60, 0, 0);
    EXPECT_FORMAT(im, "instruction at x=1 (copy)", "overlaps the extent of a");
    ins(im, 0, PXL_OP_COPY, 2, 0, 2, 0); /* COPY may not work in place */
    EXPECT_FORMAT(im, "instruction at x=1 (copy)", "in place");
    pxl_image_free(im);

    im = v1_new(16, 16);
    ins(im, 0, PXL_OP_LUT, 2, 0, 10, 2); /* in place on the table */
    tensor(im, 10, PXL_VM_INT8, 1, 256, 0, 0);
    tensor(im, 2, PXL_VM_INT8, 1, 256, 0, 0);
    EXPECT_FORMAT(im, "instruction at x=1 (lut)", "in place");
    ins(im, 0, PXL_OP_LUT, 10, 0, 10, 2); /* in place on a: allowed */
    CHECK(pxl_vm_validate(g_ctx, im) == PXL_OK);
    pxl_image_free(im);

    /* in-place ADD whose b partly overlaps the output */
    im = v1_new(16, 16);
    ins(im, 0, PXL_OP_ADD, 2, 0, 2, 3);
    tensor(im, 2, PXL_VM_INT8, 1, 64, 0, 0); /* 16 data pixels: up to (2, 3) */
    tensor(im, 3, PXL_VM_INT8, 1, 64, 0, 0);
    EXPECT_FORMAT(im, "instruction at x=1 (add)", "overlaps the extent of b");
    tensor(im, 2, PXL_VM_INT8, 1, 52, 0, 0); /* 13 data pixels: ends at (15, 2) */
    tensor(im, 3, PXL_VM_INT8, 1, 52, 0, 0);
    CHECK(pxl_vm_validate(g_ctx, im) == PXL_OK);
    pxl_image_free(im);

    /* output data over the header of a tensor used elsewhere in the program */
    im = v1_new(16, 16);
    ins(im, 0, PXL_OP_COPY, 2, 0, 8, 0);
    ins(im, 1, PXL_OP_COPY, 4, 0, 3, 0); /* row 3's header lies inside the first output's data */
    tensor(im, 8, PXL_VM_INT8, 1, 64, 0, 0);
    tensor(im, 2, PXL_VM_INT8, 1, 64, 0, 0);
    tensor(im, 3, PXL_VM_INT8, 1, 4, 0, 0);
    tensor(im, 4, PXL_VM_INT8, 1, 4, 0, 0);
    EXPECT_FORMAT(im, "instruction at x=1 (copy)", "header of the tensor at (0, 3)");
    ins(im, 1, PXL_OP_HALT, 0, 0, 0, 0); /* row 3 unused: its bytes are just data */
    CHECK(pxl_vm_validate(g_ctx, im) == PXL_OK);
    pxl_image_free(im);

    /* tensor rows 0 is the marker */
    im = v1_new(16, 16);
    ins(im, 0, PXL_OP_COPY, 2, 0, 0, 0);
    tensor(im, 2, PXL_VM_INT8, 1, 4, 0, 0);
    EXPECT_FORMAT(im, "tensor header at (0, 0)", "magic 0x50");
    pxl_image_free(im);
}

/* ---- budget and trace -------------------------------------------------------------------- */

typedef struct trace_log {
    int n;
    char lines[8][128];
    uint32_t xs[8];
} trace_log;

static void trace_fn(void *user, uint32_t x, const char *text) {
    trace_log *t = user;
    if (t->n < 8) {
        t->xs[t->n] = x;
        snprintf(t->lines[t->n], sizeof t->lines[0], "%s", text);
    }
    t->n++;
}

static void test_budget_trace(void) {
    pxl_image *im = v1_new(16, 16);
    ins(im, 0, PXL_OP_COPY, 2, 0, 1, 0);      /* cost 1 + 4 */
    ins(im, 1, PXL_OP_ADD, 3, 0, 1, 1);       /* cost 1 + 4 */
    ins(im, 2, PXL_OP_MATMUL, 4, 0, 1, 1);    /* cost 1 + 1 * 1 * 4 */
    tensor(im, 1, PXL_VM_INT8, 1, 4, 0, 0);
    tensor(im, 2, PXL_VM_INT8, 1, 4, 0, 0);
    tensor(im, 3, PXL_VM_INT8, 1, 4, 1, 0);
    tensor(im, 4, PXL_VM_INT32, 1, 1, 1, 0);
    put_i8(im, 1, (const int8_t[]){1, 2, 3, 4}, 4);
    pxl_image *fresh = img_dup(im);

    /* exactly enough */
    trace_log log = {0};
    pxl_vm_options o = {15, trace_fn, &log, NULL};
    CHECK(pxl_vm_run_cpu(g_ctx, im, &o) == PXL_OK);
    CHECK_I32(im, 4, 30);
    CHECK(log.n == 3);
    CHECK_MSG(!strcmp(log.lines[0], "copy out=2 a=1") && log.xs[0] == 1, "%s", log.lines[0]);
    CHECK_MSG(!strcmp(log.lines[1], "add out=3 a=1 b=1") && log.xs[1] == 3, "%s", log.lines[1]);
    CHECK_MSG(!strcmp(log.lines[2], "matmul out=4 a=1 b=1 flags=0") && log.xs[2] == 5, "%s", log.lines[2]);

    /* one short: stops before the MATMUL */
    pxl_image_free(im);
    im = img_dup(fresh);
    memset(&log, 0, sizeof log);
    o.max_steps = 14;
    pxl_status st = pxl_vm_run_cpu(g_ctx, im, &o);
    CHECK(st == PXL_ERR_INVALID_ARG);
    CHECK_MSG(strstr(pxl_ctx_error(g_ctx), "budget exceeded at x=5"), "%s", pxl_ctx_error(g_ctx));
    CHECK(log.n == 2);
    CHECK_I8(im, 2, 1, 2, 3, 4);
    CHECK_I8(im, 3, 2, 4, 6, 8);
    CHECK_I32(im, 4, 0);

    /* stops before the first */
    pxl_image_free(im);
    im = img_dup(fresh);
    o.max_steps = 4;
    o.trace = NULL;
    CHECK(pxl_vm_run_cpu(g_ctx, im, &o) == PXL_ERR_INVALID_ARG);
    CHECK(strstr(pxl_ctx_error(g_ctx), "budget exceeded at x=1"));
    CHECK(img_same(im, fresh));
    pxl_image_free(im);
    pxl_image_free(fresh);

    /* v0: DOT costs 1 + W */
    im = img_new(16, 4);
    setpx(im, 0, 0, 1, 1, 2, 3);
    setpx(im, 1, 0, 3, 1, 2, 0);
    memset(&log, 0, sizeof log);
    o.max_steps = 33;
    o.trace = trace_fn;
    o.trace_user = &log;
    CHECK(pxl_vm_run_cpu(g_ctx, im, &o) == PXL_ERR_INVALID_ARG);
    CHECK(strstr(pxl_ctx_error(g_ctx), "budget exceeded at x=1"));
    CHECK(log.n == 1 && !strcmp(log.lines[0], "dot_rgb out=3 a=1 b=2"));
    o.max_steps = 34;
    CHECK(pxl_vm_run_cpu(g_ctx, im, &o) == PXL_OK);
    CHECK(!strcmp(log.lines[2], "relu_r out=2 a=1"));
    pxl_image_free(im);
}

/* ---- determinism across thread counts ------------------------------------------------------ */

static uint32_t g_rng = 12345;
static uint8_t rnd8(void) {
    g_rng = g_rng * 1103515245u + 12345u;
    return (uint8_t)(g_rng >> 16);
}

static void test_threads(void) {
    pxl_ctx_options co = pxl_ctx_options_default();
    co.backend = PXL_BACKEND_CPU;
    co.quiet = 1;
    co.n_threads = 1;
    pxl_ctx *c1 = NULL, *c3 = NULL;
    CHECK(pxl_ctx_create(&co, &c1) == PXL_OK);
    co.n_threads = 3;
    CHECK(pxl_ctx_create(&co, &c3) == PXL_OK);
    if (!c1 || !c3) return;

    /* v1: MATMUL 67x300 . (130x300)^T to int8 and int32, a flattened GEMV, a large ADD and LUT */
    const uint32_t W = 1024, H = 1024, m = 67, k = 300, n = 130;
    pxl_image *im = v1_new(W, H);
    ins(im, 0, PXL_OP_MATMUL, 100, 0, 10, 50);
    ins(im, 1, PXL_OP_MATMUL, 110, 0, 10, 50);
    ins(im, 2, PXL_OP_MATMUL, 150, PXL_VM_FLAG_FLATTEN_A, 140, 50);
    ins(im, 3, PXL_OP_ADD, 300, 0, 200, 260);
    ins(im, 4, PXL_OP_LUT, 300, 0, 300, 290);
    ins(im, 5, PXL_OP_ARGMAX, 400, 0, 300, 0);
    tensor(im, 10, PXL_VM_INT8, m, k, 0, 0);
    tensor(im, 50, PXL_VM_INT8, n, k, 0, 0);
    tensor(im, 100, PXL_VM_INT8, m, n, 77, 12);
    tensor(im, 110, PXL_VM_INT32, m, n, -3, 1);
    tensor(im, 140, PXL_VM_INT8, 2, 150, 0, 0);
    tensor(im, 150, PXL_VM_INT32, 1, n, 1, 0);
    tensor(im, 200, PXL_VM_INT8, 300, 700, 0, 0);
    tensor(im, 260, PXL_VM_INT8, 1, 700, 0, 0);
    tensor(im, 300, PXL_VM_INT8, 300, 700, 5, 3);
    tensor(im, 290, PXL_VM_INT8, 1, 256, 0, 0);
    tensor(im, 400, PXL_VM_INT32, 1, 300, 0, 0);
    uint32_t data_rows[] = {10, 50, 140, 200, 260, 290};
    uint64_t data_bytes[] = {m * k, n * k, 300, 300 * 700, 700, 256};
    for (int t = 0; t < 6; t++)
        for (uint64_t i = 0; i < data_bytes[t]; i++) tdat(im, data_rows[t])[i] = rnd8();
    pxl_image *a = img_dup(im), *b = img_dup(im);
    pxl_status s1 = pxl_vm_run_cpu(c1, a, NULL), s3 = pxl_vm_run_cpu(c3, b, NULL);
    CHECK_MSG(s1 == PXL_OK && s3 == PXL_OK, "%s / %s", pxl_ctx_error(c1), pxl_ctx_error(c3));
    CHECK(img_same(a, b));
    /* against a direct reference */
    int bad = 0;
    for (uint32_t i = 0; i < m; i++)
        for (uint32_t j = 0; j < n; j++) {
            int64_t acc = 0;
            for (uint32_t t = 0; t < k; t++)
                acc += (int64_t)(int8_t)tdat(im, 10)[i * k + t] * (int8_t)tdat(im, 50)[j * k + t];
            bad += get_i8(a, 100, i * n + j) != pxl_vm_rq(acc, 77, 12, PXL_VM_INT8);
            bad += get_i32(a, 110, i * n + j) != pxl_vm_rq(acc, -3, 1, PXL_VM_INT32);
        }
    for (uint32_t j = 0; j < n; j++) {
        int64_t acc = 0;
        for (uint32_t t = 0; t < k; t++)
            acc += (int64_t)(int8_t)tdat(im, 140)[t] * (int8_t)tdat(im, 50)[j * k + t];
        bad += get_i32(a, 150, j) != acc;
    }
    for (uint32_t e = 0; e < 300 * 700; e++) {
        int64_t s = (int64_t)(int8_t)tdat(im, 200)[e] + (int8_t)tdat(im, 260)[e % 700];
        int64_t q = pxl_vm_rq(s, 5, 3, PXL_VM_INT8);
        bad += get_i8(a, 300, e) != (int8_t)tdat(im, 290)[q + 128];
    }
    CHECK_MSG(bad == 0, "%d elements differ from the reference", bad);
    pxl_image_free(a);
    pxl_image_free(b);
    pxl_image_free(im);

    /* v0: a 40x90 . 90x70 MATMUL */
    im = img_new(512, 64);
    setpx(im, 0, 0, 4, 1, 20, 40);
    setpx(im, 0, 1, 90, 0, 40, 0);
    setpx(im, 0, 20, 70, 0, 90, 0);
    for (uint32_t e = 0; e < 40 * 90; e++) im->px[(512 + 1 + e) * 4] = (uint8_t)(rnd8() & 15);
    for (uint32_t e = 0; e < 90 * 70; e++) im->px[(20 * 512 + 1 + e) * 4] = (uint8_t)(rnd8() & 15);
    a = img_dup(im), b = img_dup(im);
    CHECK(pxl_vm_run_cpu(c1, a, NULL) == PXL_OK && pxl_vm_run_cpu(c3, b, NULL) == PXL_OK);
    CHECK(img_same(a, b));
    bad = 0;
    for (uint32_t i = 0; i < 40; i++)
        for (uint32_t j = 0; j < 70; j++) {
            uint32_t acc = 0;
            for (uint32_t t = 0; t < 90; t++)
                acc += (uint32_t)im->px[(512 + 1 + i * 90 + t) * 4] * im->px[(20 * 512 + 1 + t * 70 + j) * 4];
            bad += a->px[(40 * 512 + 1 + i * 70 + j) * 4] != (acc > 255 ? 255 : acc);
        }
    CHECK_MSG(bad == 0, "%d v0 elements differ from the reference", bad);
    pxl_image_free(a);
    pxl_image_free(b);
    pxl_image_free(im);
    pxl_ctx_free(c1);
    pxl_ctx_free(c3);
}

/* k above the int32 partial-sum chunk (32768): v1 k = 65535 at the largest
 * magnitudes, v0 k = 40000 with sums above 2^31. */
static void test_long_k(void) {
    const uint32_t k = 65535;
    pxl_image *im = v1_new(512, 256);
    ins(im, 0, PXL_OP_MATMUL, 240, 0, 1, 70);
    tensor(im, 1, PXL_VM_INT8, 2, k, 0, 0);     /* 32768 pixels: rows 1..65 */
    tensor(im, 70, PXL_VM_INT8, 5, k, 0, 0);    /* 81919 pixels: rows 70..230 */
    tensor(im, 240, PXL_VM_INT32, 2, 5, 1, 0);
    uint8_t *a = tdat(im, 1), *b = tdat(im, 70);
    for (uint32_t t = 0; t < k; t++) a[t] = 0x80; /* row 0 of a: all -128 */
    for (uint32_t t = 0; t < k; t++) a[k + t] = rnd8();
    for (uint32_t t = 0; t < k; t++) b[t] = 0x80; /* row 0 of b: all -128 */
    for (uint32_t t = k; t < 5 * k; t++) b[t] = rnd8();
    RUN_OK(im);
    int bad = 0;
    for (uint32_t i = 0; i < 2; i++)
        for (uint32_t j = 0; j < 5; j++) {
            int64_t acc = 0;
            for (uint32_t t = 0; t < k; t++) acc += (int64_t)(int8_t)a[i * k + t] * (int8_t)b[j * k + t];
            bad += get_i32(im, 240, i * 5 + j) != acc;
        }
    CHECK_MSG(bad == 0, "%d long-k elements wrong", bad);
    CHECK(get_i32(im, 240, 0) == 65535 * 16384);
    pxl_image_free(im);

    /* v0: A 1x40000 . B 40000x2: column 0 sums to 2.6e9 (saturates), column 1 to 200 */
    im = img_new(512, 256);
    setpx(im, 0, 0, 4, 160, 1, 250);
    setpx(im, 0, 160, 0x40, 0x9c, 1, 0); /* A: 1 x 40000, pixels 81921.. */
    setpx(im, 0, 1, 2, 0, 0x40, 0x9c);   /* B: 40000 x 2, pixels 513.. */
    for (uint32_t e = 0; e < 40000; e++) {
        im->px[(160 * 512 + 1 + e) * 4] = e == 39999 ? 100 : 255;
        im->px[(512 + 1 + 2 * e) * 4] = 255;
        im->px[(512 + 1 + 2 * e + 1) * 4] = e == 39999 ? 2 : 0;
    }
    RUN_OK(im);
    CHECK(px_is(im, 0, 250, 2, 0, 1, 0));
    CHECK(P(im, 1, 250)[0] == 255 && P(im, 2, 250)[0] == 200);
    pxl_image_free(im);
}

int main(int argc, char **argv) {
    (void)argc, (void)argv;
    pxl_ctx_options co = pxl_ctx_options_default();
    co.backend = PXL_BACKEND_CPU;
    co.quiet = 1;
    if (pxl_ctx_create(&co, &g_ctx) != PXL_OK) {
        fprintf(stderr, "context: %s\n", g_ctx ? pxl_ctx_error(g_ctx) : "out of memory");
        return 1;
    }
    test_v0_conformance();
    test_v0_dot();
    test_v0_add_relu();
    test_v0_matmul();
    test_v0_invalid();
    test_rq();
    test_v1_matmul();
    test_v1_elementwise();
    test_v1_lut_gather_argmax_copy();
    test_v1_invalid();
    test_budget_trace();
    test_threads();
    test_long_k();
    pxl_ctx_free(g_ctx);
    return test_result("test_vm_cpu");
}
