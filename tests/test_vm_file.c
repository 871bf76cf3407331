/*
 * pxl_file_read and pxl_file_write (pxl/core.h), and the paths that use them
 * (pxl_pxi_load/save, the assembler's file: data): nothing blocks on a FIFO,
 * reads stop at their cap, writes are atomic and follow the replacement rules
 * (mode kept, symlinks followed, read-only / non-regular / hard-linked targets
 * refused, a failed write leaves the old file). An alarm turns a hang into a
 * failure.
 */
#include "check.h"
#include "pxl/vm.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static pxl_ctx *g_ctx;
static char g_dir[256];

static const char *at(const char *name) {
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", g_dir, name);
    return buf[k];
}

static void put(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(text, 1, strlen(text), f) != strlen(text) || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
}

/* The file's bytes as a string (static buffer); "" when unreadable. */
static const char *get(const char *path) {
    static char buf[4096];
    buf[0] = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return buf;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static int n_entries(void) {
    DIR *d = opendir(g_dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    if (d) closedir(d);
    return n;
}

static int has(const char *needle) { return strstr(pxl_ctx_error(g_ctx), needle) != NULL; }

static pxl_status wr(const char *path, const char *text) { return pxl_file_write(g_ctx, path, text, strlen(text)); }

static void test_read(void) {
    uint8_t *d = NULL;
    size_t n = 0;
    put(at("r.txt"), "hello");
    CHECK(pxl_file_read(g_ctx, at("r.txt"), 100, &d, &n) == PXL_OK && n == 5 && memcmp(d, "hello", 6) == 0);
    pxl_free(g_ctx, d);
    /* exactly at the cap, and one byte over it */
    CHECK(pxl_file_read(g_ctx, at("r.txt"), 5, &d, &n) == PXL_OK && n == 5);
    pxl_free(g_ctx, d);
    CHECK(pxl_file_read(g_ctx, at("r.txt"), 4, &d, &n) == PXL_ERR_FORMAT && d == NULL && has("too large"));
    put(at("empty"), "");
    CHECK(pxl_file_read(g_ctx, at("empty"), 4, &d, &n) == PXL_OK && n == 0 && d && d[0] == 0);
    pxl_free(g_ctx, d);
    /* a file whose size says 0 but that has bytes (procfs) is read to its end, within the cap */
    if (access("/proc/self/status", R_OK) == 0) {
        CHECK_MSG(pxl_file_read(g_ctx, "/proc/self/status", 1 << 20, &d, &n) == PXL_OK && n > 0,
                  "%s", pxl_ctx_error(g_ctx));
        pxl_free(g_ctx, d);
        CHECK(pxl_file_read(g_ctx, "/proc/self/status", 10, &d, &n) == PXL_ERR_FORMAT && has("too large"));
    }
    /* not regular files: refused at once, saying what they are */
    CHECK(mkfifo(at("fifo"), 0600) == 0);
    CHECK(pxl_file_read(g_ctx, at("fifo"), 100, &d, &n) == PXL_ERR_IO && has("is a FIFO, not a regular file"));
    CHECK(pxl_file_read(g_ctx, g_dir, 100, &d, &n) == PXL_ERR_IO && has("is a directory"));
    CHECK(pxl_file_read(g_ctx, "/dev/zero", 100, &d, &n) == PXL_ERR_IO && has("is a character device"));
    CHECK(pxl_file_read(g_ctx, at("missing"), 100, &d, &n) == PXL_ERR_IO && has("No such file"));
    /* the same through the .pxi loader and the assembler's file: data */
    pxl_image *img = NULL;
    CHECK(pxl_pxi_load(g_ctx, at("fifo"), &img) == PXL_ERR_IO && has("FIFO") && img == NULL);
    const char *text = ".image 8 4\n.version 1\n.tensor a 1 int8 2 4\n.data a file:fifo\n";
    CHECK(pxl_vm_asm(g_ctx, text, strlen(text), g_dir, &img) != PXL_OK && has("line 4") && has("FIFO"));
    CHECK(img == NULL);
    fprintf(stderr, "  %s\n", pxl_ctx_error(g_ctx));
    unlink(at("fifo"));
    unlink(at("r.txt"));
    unlink(at("empty"));
}

static mode_t mode_of(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? st.st_mode & 07777 : (mode_t)-1;
}

static void test_write(void) {
    /* a new file: 0666 & ~umask */
    mode_t old_mask = umask(022);
    CHECK(wr(at("new"), "one") == PXL_OK && strcmp(get(at("new")), "one") == 0);
    CHECK(mode_of(at("new")) == 0644);
    umask(077);
    CHECK(wr(at("new2"), "x") == PXL_OK && mode_of(at("new2")) == 0600);
    umask(022);
    /* an existing 0600 file stays 0600, 0640 stays 0640 */
    CHECK(chmod(at("new"), 0600) == 0);
    CHECK(wr(at("new"), "two") == PXL_OK && strcmp(get(at("new")), "two") == 0);
    CHECK_MSG(mode_of(at("new")) == 0600, "mode %o", (unsigned)mode_of(at("new")));
    CHECK(chmod(at("new"), 0640) == 0);
    CHECK(wr(at("new"), "three") == PXL_OK && mode_of(at("new")) == 0640);
    CHECK(n_entries() == 2); /* no temporaries left */

    /* read-only: refused, even for root, and unchanged */
    CHECK(chmod(at("new"), 0444) == 0);
    CHECK(wr(at("new"), "four") == PXL_ERR_IO && has("is read-only"));
    CHECK(strcmp(get(at("new")), "three") == 0 && mode_of(at("new")) == 0444);
    CHECK(chmod(at("new"), 0644) == 0);

    /* a symlink is followed: the target gets the bytes, the link stays a link */
    CHECK(symlink("new", at("link")) == 0);
    CHECK_MSG(wr(at("link"), "five") == PXL_OK, "%s", pxl_ctx_error(g_ctx));
    struct stat st;
    CHECK(lstat(at("link"), &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(strcmp(get(at("new")), "five") == 0);
    CHECK(n_entries() == 3);
    /* a link that resolves nowhere is refused */
    CHECK(symlink("nowhere/x", at("dangling")) == 0);
    CHECK(wr(at("dangling"), "six") == PXL_ERR_IO && has("symbolic link"));
    unlink(at("dangling"));

    /* a hard-linked file is refused: a rename would split the links */
    CHECK(link(at("new"), at("hard")) == 0);
    CHECK(wr(at("new"), "seven") == PXL_ERR_IO && has("2 hard links"));
    CHECK(strcmp(get(at("hard")), "five") == 0);
    unlink(at("hard"));

    /* not regular files: refused without blocking, and left as they are */
    CHECK(mkfifo(at("fifo"), 0600) == 0);
    CHECK(wr(at("fifo"), "eight") == PXL_ERR_IO && has("is a FIFO, not a regular file"));
    CHECK(lstat(at("fifo"), &st) == 0 && S_ISFIFO(st.st_mode));
    unlink(at("fifo"));
    CHECK(mkdir(at("sub"), 0700) == 0);
    CHECK(wr(at("sub"), "nine") == PXL_ERR_IO && has("is a directory"));
    rmdir(at("sub"));
    /* (a device such as /dev/null takes the same check as the FIFO; it is not tried
     * here, since a regression would replace the machine's /dev/null) */
    CHECK(wr("", "x") == PXL_ERR_INVALID_ARG);
    CHECK(wr(at("no/such/dir"), "x") == PXL_ERR_IO && has("no/such/dir"));

    /* a write that fails half way (the file size limit) leaves the old file and no temporary */
    struct rlimit old;
    if (getrlimit(RLIMIT_FSIZE, &old) == 0) {
        struct rlimit lim = old;
        lim.rlim_cur = 1000;
        void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
        char big[5000];
        memset(big, 'b', sizeof big);
        if (setrlimit(RLIMIT_FSIZE, &lim) == 0) {
            pxl_status s = pxl_file_write(g_ctx, at("new"), big, sizeof big);
            setrlimit(RLIMIT_FSIZE, &old);
            CHECK_MSG(s == PXL_ERR_IO && has("the old file is unchanged"), "%s", pxl_ctx_error(g_ctx));
        }
        signal(SIGXFSZ, prev);
        CHECK(strcmp(get(at("new")), "five") == 0 && mode_of(at("new")) == 0644);
        CHECK(n_entries() == 3);
    }
    /* .pxi saving goes the same way: through the link, keeping the mode; a FIFO is refused */
    pxl_image *img = NULL;
    CHECK(pxl_image_create(g_ctx, 3, 2, &img) == PXL_OK);
    CHECK(chmod(at("new"), 0600) == 0);
    CHECK_MSG(img && pxl_pxi_save(g_ctx, img, at("link")) == PXL_OK, "%s", pxl_ctx_error(g_ctx));
    CHECK(lstat(at("link"), &st) == 0 && S_ISLNK(st.st_mode) && mode_of(at("new")) == 0600);
    pxl_image *back = NULL;
    CHECK(pxl_pxi_load(g_ctx, at("new"), &back) == PXL_OK && back && back->w == 3 && back->h == 2);
    pxl_image_free(back);
    CHECK(mkfifo(at("fifo"), 0600) == 0);
    CHECK(img && pxl_pxi_save(g_ctx, img, at("fifo")) == PXL_ERR_IO && has("FIFO"));
    unlink(at("fifo"));
    pxl_image_free(img);

    unlink(at("link"));
    unlink(at("new"));
    unlink(at("new2"));
    umask(old_mask);
}

int main(void) {
    alarm(60); /* a blocking open on a FIFO would hang: fail instead */
    snprintf(g_dir, sizeof g_dir, "/tmp/pxl_test_file_XXXXXX");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    pxl_ctx_options o = pxl_ctx_options_default();
    o.backend = PXL_BACKEND_CPU;
    o.quiet = 1;
    if (pxl_ctx_create(&o, &g_ctx) != PXL_OK) return 1;
    test_read();
    test_write();
    CHECK(n_entries() == 0);
    rmdir(g_dir);
    pxl_ctx_free(g_ctx);
    return test_result("vm_file");
}
