/*
 * The pipeline cache on disk: Dawn's blob cache (DawnCacheDeviceDescriptor)
 * kept as one file per entry in <cache dir>/dawn/. Dawn stores there what it
 * derives from a shader (the translated SPIR-V or GLSL) and, on Vulkan, the
 * driver's pipeline cache data, so that a later process creates the same
 * pipelines without compiling them again. Dawn builds the keys; they cover
 * the shader text, the entry point, the constants, the adapter and the
 * driver, and the isolation key set in device.c (pxl's version and the
 * adapter), so a stale entry is never found, only left unused.
 *
 * An entry is the file "<16 hex digits of the key's hash>.blob":
 *   bytes 0..7    "PXLBLOB1"
 *   bytes 8..15   key size, u64 little-endian
 *   bytes 16..23  value size, u64 little-endian
 *   bytes 24..31  FNV-1a 64 of key then value, u64 little-endian
 *   then the key, then the value.
 * A file that does not parse, holds another key (a hash collision), or fails
 * its checksum is a miss; the next store replaces it. Stores write a
 * temporary file and rename it over the entry, so a reader in another
 * process sees a whole entry or none. The cache is best effort: a failure to
 * read or write it never fails a pipeline, it only costs a compile.
 *
 * The callbacks run on Dawn's threads: they allocate with malloc (never the
 * context's allocator hooks, which need not be thread-safe), count with
 * atomics, and share the one remembered entry under disk_mu.
 */
#include "gpu_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BLOB_MAGIC "PXLBLOB1"
#define BLOB_HEADER 32u
/* Entries larger than this are neither stored nor read. */
#define BLOB_MAX_KEY (1u << 20)
#define BLOB_MAX_VALUE (64u << 20)

static void put_u64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_u64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

void pxl_blob_header(uint8_t out[32], const void *key, size_t key_size, const void *value, size_t value_size) {
    memcpy(out, BLOB_MAGIC, 8);
    put_u64(out + 8, key_size);
    put_u64(out + 16, value_size);
    put_u64(out + 24, pxl_fnv1a(pxl_fnv1a(PXL_FNV_BASIS, key, key_size), value, value_size));
}

int pxl_blob_parse(const uint8_t *buf, size_t len, const void *key, size_t key_size, size_t *value_off,
                   size_t *value_size) {
    if (len < BLOB_HEADER || memcmp(buf, BLOB_MAGIC, 8) != 0) return 0;
    uint64_t ks = get_u64(buf + 8), vs = get_u64(buf + 16);
    if (ks != key_size || ks > BLOB_MAX_KEY || vs > BLOB_MAX_VALUE) return 0;
    /* both sizes are capped, so the sum cannot wrap */
    if (len != BLOB_HEADER + ks + vs) return 0;
    if (memcmp(buf + BLOB_HEADER, key, key_size) != 0) return 0;
    const uint8_t *v = buf + BLOB_HEADER + ks;
    if (pxl_fnv1a(pxl_fnv1a(PXL_FNV_BASIS, key, key_size), v, (size_t)vs) != get_u64(buf + 24)) return 0;
    *value_off = BLOB_HEADER + (size_t)ks;
    *value_size = (size_t)vs;
    return 1;
}

/* <dir>/dawn/<hash>.blob; 0 if it does not fit. */
static int entry_path(const pxl_gpu *g, const void *key, size_t key_size, char *out, size_t cap) {
    int n = snprintf(out, cap, "%s/dawn/%016llx.blob", g->cache_dir,
                     (unsigned long long)pxl_fnv1a(PXL_FNV_BASIS, key, key_size));
    return n > 0 && (size_t)n < cap;
}

/* Reads a whole entry file into a new malloc'ed buffer (NULL: none, too
 * large, or not a regular file). Opened without blocking, so that a FIFO
 * in the cache directory is refused instead of waited on. Runs on Dawn's
 * threads: malloc, never the context's allocator hooks. */
static uint8_t *read_entry(const char *path, size_t *len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return NULL;
    struct stat st;
    uint8_t *buf = NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= (off_t)BLOB_HEADER &&
        (uint64_t)st.st_size <= (uint64_t)BLOB_HEADER + BLOB_MAX_KEY + BLOB_MAX_VALUE) {
        size_t n = (size_t)st.st_size, got = 0;
        buf = malloc(n);
        while (buf && got < n) {
            ssize_t r = read(fd, buf + got, n - got);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break;
            got += (size_t)r;
        }
        if (buf && got != n) {
            free(buf);
            buf = NULL;
        }
        *len = n;
    }
    close(fd);
    return buf;
}

static void memo_drop(pxl_gpu *g) {
    free(g->disk_memo);
    g->disk_memo = NULL;
}

/*
 * Dawn's load callback: with value NULL, the size of the entry (0: none), and
 * the entry is kept; then, with a buffer of that size, its bytes from the
 * kept entry (so a file replaced in between cannot give another size).
 */
static size_t on_load(const void *key, size_t key_size, void *value, size_t value_size, void *user) {
    pxl_gpu *g = user;
    char path[PATH_MAX + 64];
    if (key_size > BLOB_MAX_KEY || !entry_path(g, key, key_size, path, sizeof path)) return 0;
    uint64_t h = pxl_fnv1a(PXL_FNV_BASIS, key, key_size);
    size_t ret = 0;
    pthread_mutex_lock(&g->disk_mu);
    if (value) {
        if (g->disk_memo && g->disk_memo_hash == h && g->disk_memo_key_size == key_size &&
            memcmp(g->disk_memo + BLOB_HEADER, key, key_size) == 0 && value_size == g->disk_memo_size) {
            memcpy(value, g->disk_memo + g->disk_memo_off, value_size);
            ret = value_size;
            atomic_fetch_add(&g->disk_hits, 1);
        }
        memo_drop(g);
    } else {
        memo_drop(g);
        size_t len = 0, off = 0, vs = 0;
        uint8_t *buf = read_entry(path, &len);
        if (buf && pxl_blob_parse(buf, len, key, key_size, &off, &vs) && vs > 0) {
            g->disk_memo = buf;
            g->disk_memo_hash = h;
            g->disk_memo_key_size = key_size;
            g->disk_memo_off = off;
            g->disk_memo_size = vs;
            ret = vs;
        } else {
            free(buf);
            atomic_fetch_add(&g->disk_misses, 1);
        }
    }
    pthread_mutex_unlock(&g->disk_mu);
    return ret;
}

/* mkdir -p of <dir>/dawn (private to the user). */
static int make_dirs(const char *dir) {
    char p[PATH_MAX + 16];
    int n = snprintf(p, sizeof p, "%s/dawn", dir);
    if (n <= 0 || (size_t)n >= sizeof p) return 0;
    for (char *s = p + 1; *s; s++) {
        if (*s != '/') continue;
        *s = '\0';
        if (mkdir(p, 0700) != 0 && errno != EEXIST) return 0;
        *s = '/';
    }
    return mkdir(p, 0700) == 0 || errno == EEXIST;
}

static int write_all(int fd, const void *data, size_t n) {
    const uint8_t *p = data;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return 0;
        p += w;
        n -= (size_t)w;
    }
    return 1;
}

static void on_store(const void *key, size_t key_size, const void *value, size_t value_size, void *user) {
    pxl_gpu *g = user;
    char path[PATH_MAX + 64], tmp[PATH_MAX + 128];
    if (key_size > BLOB_MAX_KEY || value_size > BLOB_MAX_VALUE || !entry_path(g, key, key_size, path, sizeof path))
        return;
    unsigned long seq = (unsigned long)atomic_fetch_add(&g->disk_seq, 1);
    int n = snprintf(tmp, sizeof tmp, "%s.%ld.%lu.tmp", path, (long)getpid(), seq);
    if (n <= 0 || (size_t)n >= sizeof tmp || !make_dirs(g->cache_dir)) {
        atomic_fetch_add(&g->disk_store_failures, 1);
        return;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        atomic_fetch_add(&g->disk_store_failures, 1);
        return;
    }
    uint8_t head[BLOB_HEADER];
    pxl_blob_header(head, key, key_size, value, value_size);
    int ok = write_all(fd, head, sizeof head) && write_all(fd, key, key_size) && write_all(fd, value, value_size);
    ok &= close(fd) == 0;
    if (ok && rename(tmp, path) == 0) {
        atomic_fetch_add(&g->disk_stores, 1);
    } else {
        unlink(tmp);
        atomic_fetch_add(&g->disk_store_failures, 1);
    }
}

void pxl_gpu_disk_cache_release(pxl_gpu *g) {
    if (!g->disk_mu_ready) return;
    memo_drop(g);
    pthread_mutex_destroy(&g->disk_mu);
    g->disk_mu_ready = 0;
}

int pxl_gpu_disk_cache_chain(pxl_gpu *g, DawnCacheDeviceDescriptor *d, WGPUChainedStruct *next) {
    if (!g->disk_mu_ready) {
        if (pthread_mutex_init(&g->disk_mu, NULL) != 0) return 0;
        g->disk_mu_ready = 1;
    }
    memset(d, 0, sizeof *d);
    d->chain.next = next;
    d->chain.sType = DAWN_SType_CacheDeviceDescriptor;
    d->isolationKey = pxl_sv(g->cache_isolation);
    d->loadDataFunction = on_load;
    d->storeDataFunction = on_store;
    d->functionUserdata = g;
    return 1;
}
