/*
 * Files (pxl/vm.h: pxl_file_read, pxl_file_write): the one place where pxVM
 * files (.pxi images, assembler text and its file: data, disassembly) and the
 * CLI's outputs touch the file system.
 *
 * Reading never blocks on something that is not a file: the path is opened
 * with O_NONBLOCK, fstat'ed, and only a regular file is read (with blocking
 * restored), in full, up to a caller-given cap.
 *
 * Writing is atomic: the bytes go to a new temporary file in the target's
 * directory, are fsync'ed, and the temporary is renamed over the target. The
 * rules on what may be replaced are in pxl/vm.h; this file implements them.
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include "internal.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

const char *pxl_file_kind(mode_t mode) {
    if (S_ISREG(mode)) return "a regular file";
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISLNK(mode)) return "a symbolic link";
    return "not a file";
}

int pxl_open_regular(const char *path, struct stat *st, char *why, size_t cap) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, cap, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, st) != 0) {
        snprintf(why, cap, "cannot stat %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (!S_ISREG(st->st_mode)) {
        snprintf(why, cap, "%s is %s, not a regular file", path, pxl_file_kind(st->st_mode));
        close(fd);
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        snprintf(why, cap, "cannot read %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

pxl_status pxl_file_read(pxl_ctx *ctx, const char *path, size_t max, uint8_t **data, size_t *len) {
    PXL_REQUIRE_CTX(ctx);
    PXL_REQUIRE(ctx, "pxl_file_read", path);
    PXL_REQUIRE(ctx, "pxl_file_read", data);
    PXL_REQUIRE(ctx, "pxl_file_read", len);
    *data = NULL;
    *len = 0;
    char why[PXL_ERR_MAX];
    struct stat st;
    int fd = pxl_open_regular(path, &st, why, sizeof why);
    if (fd < 0) return pxl_fail(ctx, PXL_ERR_IO, "%s", why);
    if (st.st_size < 0 || (uint64_t)st.st_size > max) {
        close(fd);
        return pxl_fail(ctx, PXL_ERR_FORMAT, "%s is too large: %lld bytes, over the %zu-byte limit", path,
                        (long long)st.st_size, max);
    }
    /* st_size is a hint (files in /proc say 0, a file may grow): read to the
     * end, growing the buffer, but never more than max + 1 bytes (the one
     * past the cap tells that the file is too large) plus the NUL. */
    size_t limit = max < SIZE_MAX - 2 ? max + 2 : SIZE_MAX;
    size_t cap = (size_t)st.st_size + 2, n = 0;
    if (cap < 4096) cap = 4096;
    if (cap > limit) cap = limit;
    uint8_t *buf = pxl_alloc(ctx, cap);
    pxl_status s = PXL_OK;
    if (!buf) {
        s = pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "out of memory reading %s (%zu bytes)", path, cap);
        goto done;
    }
    for (;;) {
        if (n + 1 >= cap) { /* keep one byte for the NUL; n <= max here, so cap < limit */
            size_t nc = cap <= SIZE_MAX / 2 ? cap * 2 : SIZE_MAX;
            if (nc > limit) nc = limit;
            uint8_t *nb = pxl_realloc(ctx, buf, nc);
            if (!nb) {
                s = pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "out of memory reading %s (%zu bytes)", path, nc);
                goto done;
            }
            buf = nb;
            cap = nc;
        }
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            s = pxl_fail(ctx, PXL_ERR_IO, "cannot read %s: %s", path, strerror(errno));
            goto done;
        }
        if (r == 0) break;
        n += (size_t)r;
        if (n > max) {
            s = pxl_fail(ctx, PXL_ERR_FORMAT, "%s is too large: over the %zu-byte limit", path, max);
            goto done;
        }
    }
    buf[n] = 0;
done:
    close(fd);
    if (s != PXL_OK) {
        pxl_free(ctx, buf);
        return s;
    }
    *data = buf;
    *len = n;
    return PXL_OK;
}

static int write_all(int fd, const uint8_t *p, size_t n) {
    while (n > 0) {
        ssize_t r = write(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return 0;
        if (r == 0) {
            errno = EIO;
            return 0;
        }
        p += r;
        n -= (size_t)r;
    }
    return 1;
}

/*
 * Decides what path's bytes replace. *target is path itself, or, for a
 * symbolic link, the file it resolves to (allocated; free with pxl_free).
 * *exists says whether the target exists; if it does, *st is its stat.
 */
static pxl_status resolve_target(pxl_ctx *ctx, const char *path, char **target, int *exists, struct stat *st) {
    *exists = 0;
    const char *t = path;
    char resolved[PATH_MAX];
    if (lstat(path, st) != 0) {
        if (errno == ENOENT) goto copy;
        return pxl_fail(ctx, PXL_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    }
    if (S_ISLNK(st->st_mode)) {
        if (!realpath(path, resolved))
            return pxl_fail(ctx, PXL_ERR_IO, "cannot write %s: it is a symbolic link that does not resolve (%s)",
                            path, strerror(errno));
        if (stat(resolved, st) != 0)
            return pxl_fail(ctx, PXL_ERR_IO, "cannot write %s: %s", path, strerror(errno));
        t = resolved;
    }
    *exists = 1;
    if (!S_ISREG(st->st_mode)) {
        return pxl_fail(ctx, PXL_ERR_IO, "refusing to write %s: it is %s, not a regular file", path,
                        pxl_file_kind(st->st_mode));
    }
    if ((st->st_mode & 0222) == 0 || access(t, W_OK) != 0) {
        return pxl_fail(ctx, PXL_ERR_IO, "refusing to write %s: it is read-only", path);
    }
    if (st->st_nlink > 1) {
        return pxl_fail(ctx, PXL_ERR_IO,
                        "refusing to write %s: it has %llu hard links, and replacing it would split them", path,
                        (unsigned long long)st->st_nlink);
    }
copy:;
    size_t n = strlen(t) + 1;
    *target = pxl_alloc(ctx, n);
    if (!*target)
        return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "out of memory writing %s", path);
    memcpy(*target, t, n);
    return PXL_OK;
}

pxl_status pxl_file_write(pxl_ctx *ctx, const char *path, const void *data, size_t len) {
    PXL_REQUIRE_CTX(ctx);
    PXL_REQUIRE(ctx, "pxl_file_write", path);
    if (!data && len) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_file_write: data is NULL");
    if (!path[0]) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "cannot write a file with an empty name");
    char *target = NULL, *tmp = NULL;
    int exists = 0;
    struct stat st;
    pxl_status s = resolve_target(ctx, path, &target, &exists, &st);
    if (s != PXL_OK) return s;

    /* The temporary: ".<name>.<pid>-<tag>.tmp" in the target's directory, so
     * that the rename is atomic; the name part is cut to stay within NAME_MAX. */
    const char *slash = strrchr(target, '/');
    size_t dir_len = slash ? (size_t)(slash - target) + 1 : 0;
    const char *base = target + dir_len;
    size_t base_len = strlen(base);
    if (base_len > 200) base_len = 200;
    size_t cap = dir_len + base_len + 64;
    tmp = pxl_alloc(ctx, cap);
    if (!tmp) {
        s = pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "out of memory writing %s", path);
        goto done;
    }
    int fd = -1, err = 0;
    for (unsigned attempt = 0; attempt < 100 && fd < 0; attempt++) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        unsigned tag = (unsigned)ts.tv_nsec ^ (unsigned)ts.tv_sec ^ attempt * 2654435761u;
        snprintf(tmp, cap, "%.*s.%.*s.%ld-%08x.tmp", (int)dir_len, target, (int)base_len, base, (long)getpid(), tag);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0666); /* new files: 0666 & ~umask */
        if (fd < 0) err = errno;
        if (fd < 0 && err != EEXIST) break;
    }
    if (fd < 0) {
        s = pxl_fail(ctx, PXL_ERR_IO, "cannot create a temporary file beside %s: %s", path, strerror(err));
        goto done;
    }
    int ok = 1;
    if (exists) {
        /* keep the old file's owner where allowed, and its permission bits */
        if ((st.st_uid != geteuid() || st.st_gid != getegid()) && fchown(fd, st.st_uid, st.st_gid) != 0) {
            /* not allowed (not root): the file becomes ours, as any rewrite would make it */
        }
        if (fchmod(fd, st.st_mode & 0777) != 0) ok = 0;
    }
    ok = ok && write_all(fd, data, len) && fsync(fd) == 0;
    err = errno;
    if (close(fd) != 0 && ok) {
        ok = 0;
        err = errno;
    }
    if (!ok) {
        unlink(tmp);
        s = pxl_fail(ctx, PXL_ERR_IO, "cannot write %s (%zu bytes): %s; %s", path, len, strerror(err),
                     exists ? "the old file is unchanged" : "nothing was written");
        goto done;
    }
    if (rename(tmp, target) != 0) {
        err = errno;
        unlink(tmp);
        s = pxl_fail(ctx, PXL_ERR_IO, "cannot replace %s: %s", path, strerror(err));
        goto done;
    }
    /* make the rename itself durable (best effort: some file systems refuse) */
    char *dir = NULL;
    if (dir_len && (dir = pxl_alloc(ctx, dir_len + 1)) != NULL) {
        memcpy(dir, target, dir_len);
        dir[dir_len] = 0;
    }
    int dfd = open(dir ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        if (fsync(dfd) != 0) {
            /* not every file system can sync a directory; the data itself is synced */
        }
        close(dfd);
    }
    pxl_free(ctx, dir);
    s = PXL_OK;
done:
    pxl_free(ctx, tmp);
    pxl_free(ctx, target);
    return s;
}

int pxl_exe_dir(char *buf, size_t cap) {
    if (cap < 2) return 0;
    ssize_t n = readlink("/proc/self/exe", buf, cap - 1);
    if (n <= 0 || (size_t)n >= cap - 1) return 0; /* error, or possibly cut short */
    buf[n] = '\0';
    char *slash = strrchr(buf, '/');
    if (!slash) return 0;
    *slash = '\0';
    return 1;
}
