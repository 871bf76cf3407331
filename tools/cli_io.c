/*
 * Input and output of the pxl command-line tool, shared by every subcommand:
 * the JSON string writer (always valid JSON, whatever bytes a path or prompt
 * holds), the error report (stderr, and a JSON error object on stdout under
 * --json), the final check of stdout (a write error anywhere fails the
 * command), text inputs (a file or stdin, capped), and the reason given when
 * there is no GPU. Files themselves are read and written through the
 * library's pxl_file_read / pxl_file_write (pxl/core.h).
 */
#include "cli.h"
#include "pxl/vm.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- JSON ------------------------------------------------------------------------ */

/*
 * Length of the valid UTF-8 sequence at s[0..n) (1 to 4), or 0 if it is not
 * one: overlong forms, surrogates (U+D800..U+DFFF), values over U+10FFFF and
 * truncated sequences are all invalid (RFC 3629).
 */
static size_t utf8_valid_len(const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    if (c < 0x80) return 1;
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF; /* the range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c == 0xE0) len = 3, lo = 0xA0;
    else if (c >= 0xE1 && c <= 0xEC) len = 3;
    else if (c == 0xED) len = 3, hi = 0x9F;
    else if (c >= 0xEE && c <= 0xEF) len = 3;
    else if (c == 0xF0) len = 4, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) len = 4;
    else if (c == 0xF4) len = 4, hi = 0x8F;
    else return 0;
    if (n < len) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (size_t k = 2; k < len; k++)
        if ((s[k] & 0xC0) != 0x80) return 0;
    return len;
}

void cli_json_string_n(FILE *f, const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    if (!s) n = 0;
    fputc('"', f);
    size_t i = 0;
    while (i < n) {
        unsigned char c = p[i];
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc(c, f);
            i++;
        } else if (c == '\n') {
            fputs("\\n", f), i++;
        } else if (c == '\t') {
            fputs("\\t", f), i++;
        } else if (c == '\r') {
            fputs("\\r", f), i++;
        } else if (c < 0x20 || c == 0x7F) {
            fprintf(f, "\\u%04x", c);
            i++;
        } else {
            size_t len = utf8_valid_len(p + i, n - i);
            if (len == 0) {
                fputs("\\ufffd", f); /* one replacement per invalid byte */
                i++;
            } else {
                fwrite(p + i, 1, len, f);
                i += len;
            }
        }
    }
    fputc('"', f);
}

void cli_json_string(FILE *f, const char *s) { cli_json_string_n(f, s, s ? strlen(s) : 0); }

/* ---- errors ---------------------------------------------------------------------- */

int cli_fail(int json, int code, const char *cmd, const char *fmt, ...) {
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s: %s\n", cmd, msg);
    if (json) {
        fputs("{\"ok\":false,\"command\":", stdout);
        cli_json_string(stdout, cmd);
        fputs(",\"error\":", stdout);
        cli_json_string(stdout, msg);
        fputs("}\n", stdout);
    }
    return code;
}

int cli_wants_json(int argc, char **argv) {
    for (int i = 0; i < argc && argv[i]; i++) {
        if (strcmp(argv[i], "--") == 0) return 0;
        if (strcmp(argv[i], "--json") == 0) return 1;
    }
    return 0;
}

/* The reason of the first failed cli_write_stdout: a failure inside fwrite
 * leaves nothing for the final flush to retry, and so no errno there. */
static int g_stdout_errno;

int cli_write_stdout(const void *data, size_t len) {
    errno = 0;
    if (fwrite(data, 1, len, stdout) == len) return 0;
    if (!g_stdout_errno) g_stdout_errno = errno ? errno : EIO;
    return 1;
}

int cli_finish_stdout(void) {
    errno = 0;
    int bad = ferror(stdout) != 0;
    int err = 0;
    if (fflush(stdout) != 0) {
        bad = 1;
        err = errno;
    }
    errno = 0;
    if (fclose(stdout) != 0) {
        bad = 1;
        if (!err) err = errno;
    }
    if (!bad) return 0;
    if (!err) err = g_stdout_errno;
    if (err) fprintf(stderr, "pxl: writing to stdout: %s\n", strerror(err));
    else fprintf(stderr, "pxl: writing to stdout: write error\n");
    return 1;
}

/* ---- text inputs ----------------------------------------------------------------- */

/* Reads fd 0 to its end, at most max bytes (pxl_alloc'ed, NUL after the data). */
static int read_stdin(pxl_ctx *ctx, size_t max, char **text, size_t *len, char *err, size_t err_cap) {
    size_t cap = 65536, n = 0;
    size_t limit = max < SIZE_MAX - 2 ? max + 2 : SIZE_MAX; /* max + 1 bytes tell "too large", + NUL */
    if (cap > limit) cap = limit;
    char *buf = pxl_alloc(ctx, cap);
    if (!buf) {
        snprintf(err, err_cap, "out of memory reading <stdin>");
        return 1;
    }
    for (;;) {
        if (n + 1 >= cap) {
            size_t nc = cap <= SIZE_MAX / 2 ? cap * 2 : SIZE_MAX;
            if (nc > limit) nc = limit;
            char *nb = pxl_realloc(ctx, buf, nc);
            if (!nb) {
                snprintf(err, err_cap, "out of memory reading <stdin> (%zu bytes)", nc);
                pxl_free(ctx, buf);
                return 1;
            }
            buf = nb;
            cap = nc;
        }
        ssize_t r = read(0, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            snprintf(err, err_cap, "cannot read <stdin>: %s", strerror(errno));
            pxl_free(ctx, buf);
            return 1;
        }
        if (r == 0) break;
        n += (size_t)r;
        if (n > max) {
            snprintf(err, err_cap, "<stdin> is too large: over the %zu-byte limit", max);
            pxl_free(ctx, buf);
            return 1;
        }
    }
    buf[n] = 0;
    *text = buf;
    *len = n;
    return 0;
}

int cli_read_text(pxl_ctx *ctx, const char *path, size_t max, char **text, size_t *len, char *err,
                  size_t err_cap) {
    *text = NULL;
    *len = 0;
    if (strcmp(path, "-") == 0) return read_stdin(ctx, max, text, len, err, err_cap);
    uint8_t *data = NULL;
    if (pxl_file_read(ctx, path, max, &data, len) != PXL_OK) {
        snprintf(err, err_cap, "%s", pxl_ctx_error(ctx));
        return 1;
    }
    *text = (char *)data;
    return 0;
}

/* ---- GPU -------------------------------------------------------------------------- */

const char *cli_no_gpu_reason(pxl_ctx *ctx) {
    const char *why = pxl_ctx_gpu_unavailable_reason(ctx);
    if (why && why[0]) return why;
    if (pxl_ctx_backend(ctx) == PXL_BACKEND_CPU)
        return "the CPU backend was asked for (--backend cpu or PXL_BACKEND=cpu)";
    return "no reason was given";
}
