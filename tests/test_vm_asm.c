/*
 * The pxVM assembler and disassembler (docs/pxvm-asm.md):
 *  - the spec's v0 conformance program assembled from text, pixel by pixel;
 *  - asm(disasm(img)) == img for random images (random bytes everywhere,
 *    row 0 included), for random programs with tensors, matrices and noise,
 *    and for assembled programs; disasm(asm(disasm(img))) == disasm(img);
 *  - every kind of error: PXL_ERR_FORMAT naming the right line;
 *  - file: data (present, missing, too large, wrong element size, a directory).
 * argv[1] is the source directory (for tests/data/vm).
 */
#include "check.h"
#include "pxl/vm.h"
#include "vm/spec.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static pxl_ctx *g_ctx;

static uint32_t rnd_below(uint32_t n) { return n ? test_rnd() % n : 0; }

static pxl_status asm_str(const char *text, const char *base, pxl_image **out) {
    return pxl_vm_asm(g_ctx, text, strlen(text), base, out);
}

static int same_image(const pxl_image *a, const pxl_image *b) {
    return a->w == b->w && a->h == b->h && memcmp(a->px, b->px, (size_t)a->w * a->h * 4) == 0;
}

static void report_diff(const pxl_image *a, const pxl_image *b) {
    if (a->w != b->w || a->h != b->h) {
        fprintf(stderr, "  size %ux%u vs %ux%u\n", a->w, a->h, b->w, b->h);
        return;
    }
    for (size_t i = 0; i < (size_t)a->w * a->h * 4; i++)
        if (a->px[i] != b->px[i]) {
            size_t p = i / 4;
            fprintf(stderr, "  first difference at pixel (%zu, %zu) channel %zu: %u vs %u\n", p % a->w, p / a->w,
                    i % 4, a->px[i], b->px[i]);
            return;
        }
}

/* asm(disasm(img)) == img, and disasm of that equals the first text. Returns 1 if ok. */
static int round_trip(const pxl_image *img, const char *what) {
    char *t1 = NULL, *t2 = NULL;
    size_t n1 = 0, n2 = 0;
    pxl_image *back = NULL;
    int ok = 0;
    pxl_status s = pxl_vm_disasm(g_ctx, img, &t1, &n1);
    CHECK_MSG(s == PXL_OK, "%s: disasm: %s", what, pxl_ctx_error(g_ctx));
    if (s != PXL_OK) goto out;
    CHECK(strlen(t1) == n1);
    s = pxl_vm_asm(g_ctx, t1, n1, NULL, &back);
    CHECK_MSG(s == PXL_OK, "%s: asm of the disassembly: %s", what, pxl_ctx_error(g_ctx));
    if (s != PXL_OK) {
        fprintf(stderr, "----\n%s----\n", t1);
        goto out;
    }
    if (!same_image(img, back)) {
        CHECK_MSG(0, "%s: asm(disasm(img)) differs from img", what);
        report_diff(img, back);
        fprintf(stderr, "----\n%s----\n", t1);
        goto out;
    }
    s = pxl_vm_disasm(g_ctx, back, &t2, &n2);
    CHECK(s == PXL_OK);
    if (s != PXL_OK) goto out;
    CHECK_MSG(n1 == n2 && memcmp(t1, t2, n1) == 0, "%s: disasm is not stable", what);
    ok = n1 == n2 && memcmp(t1, t2, n1) == 0;
out:
    pxl_free(g_ctx, t1);
    pxl_free(g_ctx, t2);
    pxl_image_free(back);
    return ok;
}

static const char *k_conformance =
    "; the spec's v0 conformance program\n"
    ".image 16 16\n"
    ".version 0\n"
    ".row a 1\n"
    ".row b 2\n"
    ".row out 3\n"
    "dot_rgb out a b\n"
    "halt\n"
    ".r a 0 1 2 3 4\n"
    ".r b 0 10 20 30 40\n";

static void test_conformance(void) {
    pxl_image *img = NULL;
    pxl_status s = asm_str(k_conformance, NULL, &img);
    CHECK_MSG(s == PXL_OK, "%s", pxl_ctx_error(g_ctx));
    if (s != PXL_OK) return;
    CHECK(img->w == 16 && img->h == 16);
    /* expected: all zero except the listed bytes */
    uint8_t want[16 * 16 * 4];
    memset(want, 0, sizeof want);
    uint8_t i0[4] = {1, 1, 2, 3};
    memcpy(want, i0, 4);
    uint8_t r1[4] = {1, 2, 3, 4}, r2[4] = {10, 20, 30, 40};
    for (int x = 0; x < 4; x++) {
        want[(1 * 16 + x) * 4] = r1[x];
        want[(2 * 16 + x) * 4] = r2[x];
    }
    CHECK(memcmp(img->px, want, sizeof want) == 0);
    CHECK(pxl_image_px(img, 0, 0)[0] == 1 && pxl_image_px(img, 0, 0)[3] == 3);
    round_trip(img, "conformance");
    /* the same program as the CLI tests use */
    pxl_image_free(img);
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    if (b) {
        b[n] = 0;
        *len = (size_t)n;
    }
    return b;
}

/* The text files under tests/data/vm and fuzz/corpus/asm assemble and round-trip. */
static void test_files(const char *src) {
    static const char *files[] = {"tests/data/vm/conformance.txt", "tests/data/vm/v1_small.txt",
                                  "fuzz/corpus/asm/conformance.txt", "fuzz/corpus/asm/v1_program.txt",
                                  "fuzz/corpus/asm/v0_matmul.txt", "fuzz/corpus/asm/raw_pixels.txt",
                                  "tests/data/vm/invalid_row.txt", "tests/data/vm/bad_mnemonic.txt"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[4096], dir[4096];
        snprintf(path, sizeof path, "%s/%s", src, files[i]);
        snprintf(dir, sizeof dir, "%s", path);
        char *slash = strrchr(dir, '/');
        if (slash) *slash = 0;
        size_t len;
        char *text = read_file(path, &len);
        CHECK_MSG(text != NULL, "cannot read %s", path);
        if (!text) continue;
        pxl_image *img = NULL;
        pxl_status s = pxl_vm_asm(g_ctx, text, len, dir, &img);
        if (strstr(files[i], "bad_mnemonic")) {
            CHECK_MSG(s == PXL_ERR_FORMAT && strcmp(pxl_ctx_error(g_ctx), "line 6: unknown mnemonic 'matmull' (v1 has: "
                                                                          "halt matmul add mul lut gather argmax copy)") == 0,
                      "%s", pxl_ctx_error(g_ctx));
            free(text);
            continue;
        }
        CHECK_MSG(s == PXL_OK, "%s: %s", files[i], pxl_ctx_error(g_ctx));
        if (s == PXL_OK) round_trip(img, files[i]);
        if (s == PXL_OK && i == 0) {
            pxl_image *ref = NULL;
            CHECK(asm_str(k_conformance, NULL, &ref) == PXL_OK);
            if (ref) CHECK_MSG(same_image(img, ref), "tests/data/vm/conformance.txt is not the conformance program");
            pxl_image_free(ref);
        }
        pxl_image_free(img);
        free(text);
    }
}

/* A v1 program: header bytes, instruction encoding, data packing, forward references. */
static void test_v1_layout(void) {
    const char *text = ".image 8 8\n"
                       ".version 1\n"
                       "matmul y x w 1   ; names used before they are declared\n"
                       "add y y b\n"
                       "halt\n"
                       ".tensor x 2 int8 1 3\n"
                       ".tensor w 3 int8 2 3 mult=-2 shift=7\n"
                       ".tensor y 4 int32 1 2 mult=0x10000\n"
                       ".tensor b 5 int32 1 2\n"
                       ".data x 1 -1 127\n"
                       ".data w hex:010203 -128, 0, 5\n"
                       ".data y -1 0x7fffffff\n";
    pxl_image *img = NULL;
    pxl_status s = asm_str(text, NULL, &img);
    CHECK_MSG(s == PXL_OK, "%s", pxl_ctx_error(g_ctx));
    if (s != PXL_OK) return;
    const uint8_t *p = img->px;
    uint8_t marker[4] = {0x50, 0x58, 0x56, 0x01};
    CHECK(memcmp(p, marker, 4) == 0);
    uint8_t i1[8] = {PXL_OP_MATMUL, 4, 0, 1, 2, 0, 3, 0};
    uint8_t i2[8] = {PXL_OP_ADD, 4, 0, 0, 4, 0, 5, 0};
    CHECK(memcmp(p + 4, i1, 8) == 0);
    CHECK(memcmp(p + 12, i2, 8) == 0);
    uint8_t zero8[8] = {0};
    CHECK(memcmp(p + 20, zero8, 8) == 0); /* halt */
    /* w: header at (0, 3) */
    const uint8_t *h = pxl_image_px(img, 0, 3);
    uint8_t wh[12] = {0x54, 1, 7, 0, 3, 0, 2, 0, 0xfe, 0xff, 0xff, 0xff};
    CHECK(memcmp(h, wh, 12) == 0);
    uint8_t wd[6] = {1, 2, 3, 0x80, 0, 5};
    CHECK(memcmp(h + 12, wd, 6) == 0);
    CHECK(h[18] == 0 && h[19] == 0); /* the rest of the last data pixel is unset */
    const uint8_t *x = pxl_image_px(img, 0, 2);
    CHECK(x[12] == 1 && x[13] == 0xff && x[14] == 127 && x[15] == 0);
    const uint8_t *y = pxl_image_px(img, 0, 4);
    uint8_t yh[12] = {0x54, 2, 0, 0, 2, 0, 1, 0, 0, 0, 1, 0};
    CHECK(memcmp(y, yh, 12) == 0);
    uint8_t yd[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f};
    CHECK(memcmp(y + 12, yd, 8) == 0);
    round_trip(img, "v1 layout");
    pxl_image_free(img);

    /* a tensor that wraps across image rows, and v0 matrices */
    const char *t2 = ".image 4 4\n.version 1\n.tensor big 1 int8 4 5\nargmax 0 big\n"
                     ".data big 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20\n";
    CHECK(asm_str(t2, NULL, &img) == PXL_OK);
    if (img) {
        CHECK(pxl_image_px(img, 3, 1)[0] == 1);
        CHECK(pxl_image_px(img, 0, 2)[0] == 5);
        CHECK(pxl_image_px(img, 3, 2)[3] == 20);
        round_trip(img, "wrapping tensor");
        pxl_image_free(img);
        img = NULL;
    }
    const char *t3 = ".image 5 4\n.matrix a 1 2 2\n.matrix b 2 2 1\nmatmul_r 3 a b\n"
                     ".data a 1 2 3 4\n.data b 5 6\n.pixels 1 1 ..ff0000\n";
    CHECK_MSG(asm_str(t3, NULL, &img) == PXL_OK, "%s", pxl_ctx_error(g_ctx));
    if (img) {
        uint8_t i0[4] = {PXL_OP_V0_MATMUL, 1, 2, 3};
        CHECK(memcmp(img->px, i0, 4) == 0);
        const uint8_t *m = pxl_image_px(img, 0, 1);
        uint8_t mh[4] = {2, 0, 2, 0};
        CHECK(memcmp(m, mh, 4) == 0);
        CHECK(m[4] == 1 && m[5] == 0xff && m[8] == 2 && m[16] == 4);
        const uint8_t *mb = pxl_image_px(img, 0, 2);
        CHECK(mb[0] == 1 && mb[2] == 2 && mb[4] == 5 && mb[8] == 6);
        round_trip(img, "v0 matrices");
        pxl_image_free(img);
    }
}

/* Random bytes everywhere, row 0 included, with and without the v1 marker. */
static void test_random_images(void) {
    static const uint32_t sizes[][2] = {{1, 1}, {1, 7}, {7, 1}, {2, 2}, {3, 5}, {16, 16}, {17, 9}, {64, 4}, {5, 40}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (int variant = 0; variant < 6; variant++) {
            pxl_image *img = NULL;
            if (pxl_image_create(g_ctx, sizes[i][0], sizes[i][1], &img) != PXL_OK) {
                CHECK(0);
                continue;
            }
            size_t n = (size_t)img->w * img->h * 4;
            for (size_t k = 0; k < n; k++) {
                /* variants: dense random, sparse random, small values (look like opcodes and rows) */
                uint32_t r = test_rnd();
                if (variant == 0) img->px[k] = (uint8_t)r;
                else if (variant == 1) img->px[k] = (r & 7) == 0 ? (uint8_t)(r >> 8) : 0;
                else if (variant == 2) img->px[k] = (uint8_t)(r % 6);
                else if (variant == 3) img->px[k] = (uint8_t)(r % 0x58);
                else img->px[k] = (r & 3) ? 0 : (uint8_t)(r % 24);
            }
            if (variant >= 4) {
                uint8_t mk[4] = {0x50, 0x58, 0x56, 0x01};
                memcpy(img->px, mk, 4);
            }
            char what[64];
            snprintf(what, sizeof what, "random %ux%u variant %d", img->w, img->h, variant);
            round_trip(img, what);
            pxl_image_free(img);
        }
}

/* Random programs that the disassembler partly understands, with noise on top. */
static void test_random_programs(void) {
    for (int iter = 0; iter < 400; iter++) {
        uint32_t w = 1 + rnd_below(40), h = 1 + rnd_below(24);
        pxl_image *img = NULL;
        if (pxl_image_create(g_ctx, w, h, &img) != PXL_OK) {
            CHECK(0);
            continue;
        }
        int v1 = (int)(test_rnd() & 1);
        uint8_t *p = img->px;
        uint32_t x = 0;
        if (v1) {
            uint8_t mk[4] = {0x50, 0x58, 0x56, 0x01};
            memcpy(p, mk, 4);
            x = 1;
        }
        /* instructions */
        uint32_t n_ins = rnd_below(8);
        for (uint32_t k = 0; k < n_ins && x + (v1 ? 2u : 1u) <= w; k++) {
            const pxl_vm_opinfo *oi;
            do oi = &pxl_vm_ops[rnd_below((uint32_t)PXL_VM_N_OPS)];
            while (oi->version != v1 || (oi->op == PXL_OP_HALT && (test_rnd() & 3)));
            uint8_t *q = p + (size_t)x * 4;
            uint32_t ro = rnd_below(h + 2), ra = rnd_below(h + 2), rb = rnd_below(h + 2);
            if (v1) {
                q[0] = oi->op;
                q[1] = oi->uses_out ? (uint8_t)ro : 0;
                q[3] = oi->uses_imm ? (uint8_t)rnd_below(3) : 0;
                q[4] = oi->uses_a ? (uint8_t)ra : 0;
                q[6] = oi->uses_b ? (uint8_t)rb : 0;
                x += 2;
            } else {
                q[0] = oi->op;
                if (oi->op != PXL_OP_HALT) {
                    q[1] = (uint8_t)ra;
                    q[2] = (uint8_t)(oi->op == PXL_OP_V0_RELU ? ro : rb);
                    q[3] = oi->op == PXL_OP_V0_RELU ? 0 : (uint8_t)ro;
                }
                x += 1;
            }
        }
        /* headers at some rows */
        for (uint32_t r = 1; r < h; r++) {
            if (test_rnd() & 1) continue;
            uint8_t *t = p + (size_t)r * w * 4;
            size_t room = (size_t)(h - r) * w * 4;
            if (v1 && room >= 12) {
                t[0] = 0x54;
                t[1] = (uint8_t)(1 + rnd_below(2));
                t[2] = (uint8_t)rnd_below(70);
                t[4] = (uint8_t)(1 + rnd_below(5));
                t[6] = (uint8_t)(rnd_below(4));
                t[8] = (uint8_t)test_rnd();
                t[11] = (uint8_t)(test_rnd() & 0x81);
                for (size_t k = 12; k < room && k < 12 + rnd_below(60); k++) t[k] = (uint8_t)test_rnd();
            } else if (!v1) {
                t[0] = (uint8_t)rnd_below(6);
                t[2] = (uint8_t)rnd_below(6);
                for (size_t k = 4; k < room && k < 4 + rnd_below(60); k++) t[k] = (uint8_t)rnd_below(3);
            }
        }
        /* noise */
        uint32_t noise = rnd_below(12);
        for (uint32_t k = 0; k < noise; k++) p[rnd_below(w * h * 4)] = (uint8_t)test_rnd();
        char what[64];
        snprintf(what, sizeof what, "random program %d (%ux%u v%d)", iter, w, h, v1);
        if (!round_trip(img, what)) {
            pxl_image_free(img);
            break;
        }
        pxl_image_free(img);
    }
}

typedef struct bad {
    const char *text;
    size_t line;
    const char *needle; /* a piece of the message */
} bad;

static void test_errors(void) {
    static const bad cases[] = {
        {"", 1, "no .image"},
        {"; only a comment\n\n", 2, "no .image"},
        {"halt\n", 1, "before .image"},
        {".row a 1\n", 1, "before .image"},
        {".image 0 5\n", 1, ".image 0 5: width must be 1..16384"},
        {".image 5 0\n", 1, "height must be 1..16384"},
        {".image 16385 1\n", 1, "width must be"},
        {".image 16384 16384\n", 1, "over the cap"},
        {".image x 5\n", 1, "not a number"},
        {".image 4\n", 1, ".image takes"},
        {".image 4 4\n.image 4 4\n", 2, "twice"},
        {".image 4 4\n.version 2\n", 2, "not 0 or 1"},
        {".image 4 4\nhalt\n.version 1\n", 3, "must come right after"},
        {".image 4 4\n.version 1\n.version 1\n", 3, "twice"},
        {".image 4 4\n\n\nmatmull 1 2 3\n", 4, "unknown mnemonic 'matmull'"},
        {".image 4 4\nmatmul 1 2 3 0\n", 2, "v1 instruction"},
        {".image 4 4\n.version 1\nadd_r 1 2 3\n", 3, "v0 instruction"},
        {".image 4 4\nadd_r 1 2\n", 2, "takes 3 operands"},
        {".image 4 4\nhalt 0\n", 2, "takes 0 operands"},
        {".image 2 4\nhalt\nhalt\nhalt\n", 4, "row 0 is full"},
        {".image 3 4\n.version 1\nhalt\nhalt\n", 4, "row 0 is full"},
        {".image 4 4\nadd_r 1 2 256\n", 2, "out of range"},
        {".image 4 4\n.version 1\nadd 1 2 65536\n", 3, "out of range"},
        {".image 4 4\nadd_r 1 2 nope\n", 2, "unknown name 'nope'"},
        {".image 4 4\nadd_r 1 2 -1\n", 2, "out of range"},
        {".image 4 4\n.version 1\nmatmul 1 2 3 256\n", 3, "imm"},
        {".image 4 4\n.frob 1\n", 2, "unknown directive '.frob'"},
        {".image 4 4\n.row 9a 1\n", 2, "not a valid name"},
        {".image 4 4\n.row a 4\n", 2, "out of range"},
        {".image 4 4\n.row a 1\n.row a 2\n", 3, "already defined on line 2"},
        {".image 4 4\n.tensor t 1 int8 1 1\n", 2, "needs a v1 image"},
        {".image 4 4\n.version 1\n.matrix m 1 1 1\n", 3, "v0 images"},
        {".image 4 4\n.version 1\n.tensor t 1 int16 1 1\n", 3, "not int8 or int32"},
        {".image 4 4\n.version 1\n.tensor t 1 int8 0 1\n", 3, "out of range"},
        {".image 4 4\n.version 1\n.tensor t 1 int8 1 1 shift=63\n", 3, "shift"},
        {".image 4 4\n.version 1\n.tensor t 1 int8 1 1 mult=2147483648\n", 3, "mult"},
        {".image 4 4\n.version 1\n.tensor t 1 int8 1 1 mult=1 mult=2\n", 3, "unexpected"},
        {".image 4 4\n.version 1\n.tensor t 1 int8 1 1 zap=1\n", 3, "unexpected"},
        {".image 4 4\n.version 1\n.tensor t 3 int8 1 5\n", 3, "past the end"},
        {".image 4 4\n.version 1\n.tensor t 0 int8 1 1\n", 3, "already set by line 2"},
        {".image 4 4\n.version 1\n.tensor a 1 int8 1 8\n.tensor b 2 int8 1 1\n", 4, "already set by line 3"},
        {".image 4 4\n.matrix m 3 2 2\n", 2, "past the end"},
        {".image 4 4\n.version 1\n.tensor t 1 int8 1 2\n.data t 1 2 3\n", 4, "too much data"},
        {".image 4 4\n.version 1\n.tensor t 1 int8 1 2\n.data t 128\n", 4, "out of range for int8"},
        {".image 4 4\n.version 1\n.tensor t 1 int8 1 2\n.data t 1\n", 4, "got 1 of its 2"},
        {".image 4 4\n.version 1\n.tensor t 1 int32 1 2\n.data t hex:010203\n", 4, "whole number"},
        {".image 4 4\n.version 1\n.tensor t 1 int8 1 2\n.data t hex:01g2\n", 4, "not a hex byte"},
        {".image 4 4\n.version 1\n.tensor t 1 int8 1 2\n.data t hex:012\n", 4, "even"},
        {".image 4 4\n.version 1\n.tensor t 1 int8 1 2\n.data t abc\n", 4, "not a value"},
        {".image 4 4\n.version 1\n.data t 1\n", 3, "unknown name 't'"},
        {".image 4 4\n.row a 1\n.data a 1\n", 3, "row label"},
        {".image 4 4\n.matrix m 1 1 1\n.data m 256\n", 3, "out of range"},
        {".image 4 4\n.r 1 2 1 2 3\n", 2, "past the row's end"},
        {".image 4 4\n.r 1 0 256\n", 2, "out of range"},
        {".image 4 4\n.r 1 0\n", 2, ".r takes"},
        {".image 4 4\n.r 1 0 1\n.r 1 0 1\n", 3, "already set by line 2"},
        {".image 4 4\n.pixels 0 1 0102030\n", 2, "8 hex digits"},
        {".image 4 4\n.pixels 0 1 01020x04\n", 2, "not a hex byte"},
        {".image 4 4\n.pixels 3 1 01020304 05060708\n", 2, "past the row's end"},
        {".image 4 4\n.r 1 0 7\n.pixels 0 1 ff000000\n", 3, "channel R is already set by line 2"},
        {".image 4 4\n.pixels 0 0 01020304\nhalt\n", 3, "already set by line 2"},
        {".image 4 4\n.pixels 0 9 01020304\n", 2, "out of range"},
        {".image 4 4\nhalt \x01\n", 2, "control character"},
        {".image 4 4\n.row a 99999999999999999999999\n", 2, "out of range"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pxl_image *img = NULL;
        pxl_status s = asm_str(cases[i].text, NULL, &img);
        const char *msg = pxl_ctx_error(g_ctx);
        char want[32];
        snprintf(want, sizeof want, "line %zu", cases[i].line);
        CHECK_MSG(s == PXL_ERR_FORMAT, "case %zu: status %s (%s)", i, pxl_status_str(s), msg);
        CHECK_MSG(strncmp(msg, want, strlen(want)) == 0 &&
                      (msg[strlen(want)] == ':' || msg[strlen(want)] == ','),
                  "case %zu: wanted '%s', got '%s'", i, want, msg);
        CHECK_MSG(strstr(msg, cases[i].needle) != NULL, "case %zu: wanted '%s' in '%s'", i, cases[i].needle, msg);
        CHECK(img == NULL);
        pxl_image_free(img);
    }
    /* columns for token errors */
    pxl_image *img = NULL;
    CHECK(asm_str(".image 4 4\nadd_r 1  2 zz\n", NULL, &img) == PXL_ERR_FORMAT);
    CHECK_MSG(strncmp(pxl_ctx_error(g_ctx), "line 2, col 12:", 15) == 0, "%s", pxl_ctx_error(g_ctx));
    /* a NUL byte in the middle of a line */
    static const char nul[] = ".image 4 4\nhalt\0\n";
    CHECK(pxl_vm_asm(g_ctx, nul, sizeof nul - 1, NULL, &img) == PXL_ERR_FORMAT);
    CHECK_MSG(strncmp(pxl_ctx_error(g_ctx), "line 2", 6) == 0, "%s", pxl_ctx_error(g_ctx));
    /* CRLF line ends and commas are fine */
    CHECK(asm_str(".image 4 4\r\n.row a 1\r\nadd_r a, a, a ; c\r\n", NULL, &img) == PXL_OK);
    pxl_image_free(img);
}

static int write_bytes(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    int ok = fwrite(data, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

static void test_file_data(void) {
    char dir[] = "/tmp/pxl_test_vm_asm_XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK_MSG(0, "mkdtemp failed");
        return;
    }
    char p8[4200], p4[4200], pbig[4200], podd[4200], sub[4200];
    snprintf(p8, sizeof p8, "%s/w8.bin", dir);
    snprintf(p4, sizeof p4, "%s/w4.bin", dir);
    snprintf(pbig, sizeof pbig, "%s/big.bin", dir);
    snprintf(podd, sizeof podd, "%s/odd.bin", dir);
    snprintf(sub, sizeof sub, "%s/sub", dir);
    uint8_t b[16];
    for (int i = 0; i < 16; i++) b[i] = (uint8_t)(i * 17 + 1);
    CHECK(write_bytes(p8, b, 8) && write_bytes(p4, b, 4) && write_bytes(pbig, b, 16) && write_bytes(podd, b, 6));
    CHECK(mkdir(sub, 0700) == 0);

    pxl_image *img = NULL;
    /* 8 bytes: exactly a 2x4 int8 tensor; 4 bytes + 1 int32 value: a 1x2 int32 tensor */
    const char *ok = ".image 8 4\n.version 1\n.tensor a 1 int8 2 4\n.tensor b 2 int32 1 2\n"
                     ".data a file:w8.bin\n.data b file:w4.bin 7\n";
    pxl_status s = asm_str(ok, dir, &img);
    CHECK_MSG(s == PXL_OK, "%s", pxl_ctx_error(g_ctx));
    if (img) {
        CHECK(memcmp(pxl_image_px(img, 3, 1), b, 8) == 0);
        CHECK(memcmp(pxl_image_px(img, 3, 2), b, 4) == 0 && pxl_image_px(img, 4, 2)[0] == 7);
        round_trip(img, "file data");
        pxl_image_free(img);
        img = NULL;
    }
    /* an absolute path ignores base_dir */
    char text[8192];
    snprintf(text, sizeof text, ".image 8 4\n.version 1\n.tensor a 1 int8 2 4\n.data a file:%s\n", p8);
    CHECK_MSG(asm_str(text, "/nonexistent", &img) == PXL_OK, "%s", pxl_ctx_error(g_ctx));
    pxl_image_free(img);
    img = NULL;

    static const bad cases[] = {
        {".image 8 4\n.version 1\n.tensor a 1 int8 2 4\n\n.data a file:missing.bin\n", 5, "cannot open"},
        {".image 8 4\n.version 1\n.tensor a 1 int8 2 4\n.data a file:big.bin\n", 4, "has 16 bytes, but 'a' has room for 8"},
        {".image 8 4\n.version 1\n.tensor a 1 int8 2 4\n.data a 1 file:w8.bin\n", 4, "room for 7"},
        {".image 8 4\n.version 1\n.tensor b 2 int32 1 2\n.data b file:odd.bin\n", 4, "whole number"},
        {".image 8 4\n.version 1\n.tensor a 1 int8 2 4\n.data a file:w4.bin\n", 4, "got 4 of its 8"},
        {".image 8 4\n.version 1\n.tensor a 1 int8 2 4\n.data a file:sub\n", 4, "not a regular file"},
        {".image 8 4\n.version 1\n.tensor a 1 int8 2 4\n.data a file:\n", 4, "needs a path"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        s = asm_str(cases[i].text, dir, &img);
        const char *msg = pxl_ctx_error(g_ctx);
        char want[32];
        snprintf(want, sizeof want, "line %zu", cases[i].line);
        CHECK_MSG(s == PXL_ERR_FORMAT, "file case %zu: %s", i, msg);
        CHECK_MSG(strncmp(msg, want, strlen(want)) == 0, "file case %zu: wanted '%s', got '%s'", i, want, msg);
        CHECK_MSG(strstr(msg, cases[i].needle) != NULL, "file case %zu: wanted '%s' in '%s'", i, cases[i].needle, msg);
        pxl_image_free(img);
        img = NULL;
    }
    /* without base_dir the path is relative to the current directory */
    CHECK(asm_str(".image 8 4\n.version 1\n.tensor a 1 int8 2 4\n.data a file:w8.bin\n", NULL, &img) ==
          PXL_ERR_FORMAT);
    unlink(p8), unlink(p4), unlink(pbig), unlink(podd), rmdir(sub), rmdir(dir);
}

/* A big image with one tensor: the disassembly stays small (zeros are not printed). */
static void test_large(void) {
    const char *text = ".image 4096 4096\n.version 1\n.tensor big 2 int8 4096 2048\n.tensor o 3000 int32 1 1\n"
                       "argmax o big\nhalt\n.pixels 4095 4095 000000ff\n";
    pxl_image *img = NULL;
    pxl_status s = asm_str(text, NULL, &img);
    CHECK_MSG(s == PXL_OK, "%s", pxl_ctx_error(g_ctx));
    if (!img) return;
    char *t = NULL;
    size_t n = 0;
    CHECK(pxl_vm_disasm(g_ctx, img, &t, &n) == PXL_OK);
    CHECK_MSG(n < 1000, "disassembly of a sparse 4096x4096 image is %zu bytes", n);
    round_trip(img, "large sparse");
    pxl_free(g_ctx, t);
    pxl_image_free(img);
}

/* Many names (the name table grows), and names too far down for a v0 operand. */
static void test_names(void) {
    size_t cap = 64 * 1024, n = 0;
    char *t = malloc(cap);
    if (!t) return;
    n += (size_t)snprintf(t + n, cap - n, ".image 16 1000\n");
    for (int i = 0; i < 999; i++) n += (size_t)snprintf(t + n, cap - n, ".row row_%d %d\n", i, i + 1);
    n += (size_t)snprintf(t + n, cap - n, "add_r row_254 row_3 row_0\n");
    pxl_image *img = NULL;
    pxl_status s = pxl_vm_asm(g_ctx, t, n, NULL, &img);
    CHECK_MSG(s == PXL_OK, "%s", pxl_ctx_error(g_ctx));
    if (img) {
        uint8_t want[4] = {PXL_OP_V0_ADD, 4, 1, 255};
        CHECK(memcmp(img->px, want, 4) == 0);
        pxl_image_free(img);
        img = NULL;
    }
    n += (size_t)snprintf(t + n, cap - n, "add_r row_255 1 1\n");
    CHECK(pxl_vm_asm(g_ctx, t, n, NULL, &img) == PXL_ERR_FORMAT);
    CHECK_MSG(strstr(pxl_ctx_error(g_ctx), "line 1002, col 7: out: 'row_255' is row 256, over the operand's limit 255"),
              "%s", pxl_ctx_error(g_ctx));
    free(t);
}

/* A .data line with 200000 values, and a non-.data line with too many tokens. */
static void test_long_lines(void) {
    size_t cap = 2 * 1024 * 1024, n = 0;
    char *t = malloc(cap);
    if (!t) return;
    n += (size_t)snprintf(t + n, cap - n, ".image 1024 256\n.version 1\n.tensor big 1 int8 1000 200\n.data big");
    for (int i = 0; i < 200000; i++) n += (size_t)snprintf(t + n, cap - n, " %d", i % 256 - 128);
    n += (size_t)snprintf(t + n, cap - n, "\n");
    pxl_image *img = NULL;
    pxl_status s = pxl_vm_asm(g_ctx, t, n, NULL, &img);
    CHECK_MSG(s == PXL_OK, "%s", pxl_ctx_error(g_ctx));
    if (img) {
        CHECK(pxl_image_px(img, 3, 1)[0] == 0x80 && pxl_image_px(img, 3, 1)[1] == 0x81);
        round_trip(img, "long .data line");
        pxl_image_free(img);
        img = NULL;
    }
    /* a bad value far along the line: the column is right */
    size_t at = n - 1;
    memcpy(t + at, " 999\n", 5);
    n = at + 5;
    CHECK(pxl_vm_asm(g_ctx, t, n, NULL, &img) == PXL_ERR_FORMAT);
    char want[64];
    size_t line_start = at;
    while (t[line_start - 1] != '\n') line_start--;
    snprintf(want, sizeof want, "line 4, col %zu: '999' is out of range", at + 1 - line_start + 1);
    CHECK_MSG(strstr(pxl_ctx_error(g_ctx), want) != NULL, "wanted '%s' in '%s'", want, pxl_ctx_error(g_ctx));
    n = 0;
    n += (size_t)snprintf(t + n, cap - n, ".image 4 4\n.r 1 0");
    for (int i = 0; i < 20000; i++) n += (size_t)snprintf(t + n, cap - n, " 1");
    CHECK(pxl_vm_asm(g_ctx, t, n, NULL, &img) == PXL_ERR_FORMAT);
    CHECK_MSG(strstr(pxl_ctx_error(g_ctx), "line 2, col") && strstr(pxl_ctx_error(g_ctx), "tokens on one line"), "%s",
              pxl_ctx_error(g_ctx));
    free(t);
}

/* An allocator that fails from the n-th allocation on. */
typedef struct fail_alloc {
    int left;
} fail_alloc;
static void *fa_alloc(void *user, size_t size) {
    fail_alloc *f = user;
    if (f->left-- <= 0) return NULL;
    return malloc(size);
}
static void *fa_realloc(void *user, void *p, size_t size) {
    fail_alloc *f = user;
    if (f->left-- <= 0) return NULL;
    return realloc(p, size);
}
static void fa_free(void *user, void *p) {
    (void)user;
    free(p);
}

/* Every allocation failure gives PXL_ERR_OUT_OF_MEMORY, no image, and no leak (ASan). */
static void test_oom(const char *src) {
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/data/vm/v1_small.txt", src);
    size_t len;
    char *text = read_file(path, &len);
    if (!text) {
        CHECK(0);
        return;
    }
    fail_alloc fa = {0};
    pxl_allocator al = {fa_alloc, fa_realloc, fa_free, &fa};
    pxl_ctx_options o = pxl_ctx_options_default();
    o.backend = PXL_BACKEND_CPU;
    o.quiet = 1;
    o.n_threads = 1;
    o.allocator = &al;
    fa.left = 1 << 30;
    pxl_ctx *ctx = NULL;
    if (pxl_ctx_create(&o, &ctx) != PXL_OK) {
        CHECK(0);
        free(text);
        return;
    }
    int asm_ok = 0, dis_ok = 0;
    for (int n = 0; n < 200 && !(asm_ok && dis_ok); n++) {
        pxl_image *img = NULL;
        fa.left = n;
        pxl_status s = pxl_vm_asm(ctx, text, len, NULL, &img);
        CHECK_MSG(s == PXL_OK || s == PXL_ERR_OUT_OF_MEMORY, "asm with %d allocations: %s", n, pxl_ctx_error(ctx));
        CHECK(s == PXL_OK || img == NULL);
        if (s == PXL_OK) asm_ok = 1;
        fa.left = 1 << 30;
        if (!img) s = pxl_vm_asm(ctx, text, len, NULL, &img);
        if (s != PXL_OK) break;
        char *out = NULL;
        size_t olen = 0;
        fa.left = n;
        s = pxl_vm_disasm(ctx, img, &out, &olen);
        CHECK_MSG(s == PXL_OK || s == PXL_ERR_OUT_OF_MEMORY, "disasm with %d allocations: %s", n, pxl_ctx_error(ctx));
        if (s == PXL_OK) dis_ok = 1;
        fa.left = 1 << 30;
        pxl_free(ctx, out);
        pxl_image_free(img);
    }
    CHECK(asm_ok && dis_ok);
    pxl_ctx_free(ctx);
    free(text);
}

int main(int argc, char **argv) {
    const char *src = argc > 1 ? argv[1] : ".";
    pxl_ctx_options o = pxl_ctx_options_default();
    o.backend = PXL_BACKEND_CPU;
    o.quiet = 1;
    if (pxl_ctx_create(&o, &g_ctx) != PXL_OK) {
        fprintf(stderr, "cannot create a CPU context\n");
        return 1;
    }
    test_conformance();
    test_files(src);
    test_v1_layout();
    test_random_images();
    test_random_programs();
    test_errors();
    test_file_data();
    test_large();
    test_names();
    test_long_lines();
    test_oom(src);
    pxl_ctx_free(g_ctx);
    return test_result("test_vm_asm");
}
