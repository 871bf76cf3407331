/* A one-line progress bar on stderr, silent unless stderr is a terminal. */
#include "internal.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct pxl_progress {
    pxl_ctx *ctx;
    char label[64];
    uint64_t total;
    double start, last_draw;
};

static void draw(pxl_progress *p, uint64_t done, int final) {
    double now = pxl_time_now();
    if (!final && now - p->last_draw < 0.1) return;
    p->last_draw = now;
    double frac = p->total ? (double)done / (double)p->total : 1.0;
    if (frac > 1.0) frac = 1.0;
    char bar[31];
    int fill = (int)(frac * 30.0);
    for (int i = 0; i < 30; i++) bar[i] = i < fill ? '#' : '.';
    bar[30] = '\0';
    fprintf(stderr, "\r%-24s [%s] %5.1f%%  %6.1fs%s", p->label, bar, frac * 100.0,
            now - p->start, final ? "\n" : "");
    fflush(stderr);
}

pxl_progress *pxl_progress_begin(pxl_ctx *ctx, const char *label, uint64_t total) {
    if (ctx->quiet || !isatty(STDERR_FILENO)) return NULL;
    pxl_progress *p = pxl_calloc(ctx, 1, sizeof *p);
    if (!p) return NULL;
    p->ctx = ctx;
    snprintf(p->label, sizeof p->label, "%s", label ? label : "");
    p->total = total;
    p->start = pxl_time_now();
    draw(p, 0, 0);
    return p;
}

void pxl_progress_update(pxl_progress *p, uint64_t done) {
    if (p) draw(p, done, 0);
}

void pxl_progress_end(pxl_progress *p) {
    if (!p) return;
    draw(p, p->total, 1);
    pxl_free(p->ctx, p);
}
