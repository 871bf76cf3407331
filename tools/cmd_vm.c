/*
 * pxl vm: pxVM pixel programs (docs/pxvm-spec.md, docs/pxvm-asm.md).
 *
 *   run FILE.pxi [-o OUT.pxi | --in-place] [--trace] [--max-steps N] [--repeat N] [--profile]
 *   compare FILE.pxi          CPU and GPU interpreters, byte for byte
 *   asm IN.txt -o OUT.pxi     text -> image
 *   disasm IN.pxi [-o OUT]    image -> text (stdout by default)
 *   validate IN.pxi           the spec's static checks
 *   show IN.pxi -o OUT.png    a zoomed, opaque PNG to look at
 *
 * Exit codes: 0 success; 1 the program is invalid, a run failed, the
 * interpreters differ, or a file could not be read or written; 2 usage;
 * compare exits 77 (ctest's skip code) when no GPU can be opened.
 * No subcommand writes over its input, except run --in-place. Every output
 * file is written atomically and by the rules of pxl_file_write (pxl/vm.h);
 * every input must be a regular file (a FIFO fails at once); under --json a
 * failure is a JSON object on stdout too (cli_fail).
 */
#include "cli.h"
#include "cli_llm.h"
#include "pxl/gpu.h"
#include "pxl/vm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum {
    O_OUTPUT = 1 << 0,
    O_INPLACE = 1 << 1,
    O_TRACE = 1 << 2,
    O_STEPS = 1 << 3,
    O_ZOOM = 1 << 4,
    O_BACKEND = 1 << 5, /* --backend and --threads */
    O_GPULIB = 1 << 6,  /* --webgpu-lib and --threads */
    O_NEED_OUTPUT = 1 << 7,
    O_REPEAT = 1 << 8 /* --repeat and --profile */
};

typedef struct vm_opts {
    cli_common c;
    char cmd[32]; /* "pxl vm <sub>", for messages */
    const char *output, *max_steps_s, *input;
    int in_place, trace, grid, profile;
    uint32_t zoom, repeat;
    uint64_t max_steps;
} vm_opts;

typedef struct vm_sub {
    const char *name, *usage, *about, *output_help;
    unsigned flags;
    int (*run)(const struct vm_sub *sub, vm_opts *o);
} vm_sub;

static int run_run(const vm_sub *sub, vm_opts *o);
static int run_compare(const vm_sub *sub, vm_opts *o);
static int run_asm(const vm_sub *sub, vm_opts *o);
static int run_disasm(const vm_sub *sub, vm_opts *o);
static int run_validate(const vm_sub *sub, vm_opts *o);
static int run_show(const vm_sub *sub, vm_opts *o);

static const vm_sub k_subs[] = {
    {"run",
     "pxl vm run FILE.pxi [-o OUT.pxi | --in-place] [--backend auto|gpu|cpu] [--trace] [--max-steps N]\n"
     "                  [--repeat N] [--profile] [--json]",
     "Validates and runs the program on the context's backend (the WGSL interpreter on a GPU,\n"
     "else the CPU interpreter). The input file is never written, except with --in-place;\n"
     "-o writes the final image. A run-time error the spec defines (budget exceeded, GATHER\n"
     "index out of range) still writes the image the spec defines, and exits 1.\n"
     "--repeat N runs the program N times, each from the loaded image, in one session, and\n"
     "reports each run's time: the first run of a process creates the GPU pipelines (or loads\n"
     "them from the pipeline cache, see README); later runs reuse them and upload only pixels\n"
     "the GPU does not hold already. --profile prints where each run's time went (--json\n"
     "always includes it).",
     "write the final image to FILE (also -o)",
     O_OUTPUT | O_INPLACE | O_TRACE | O_STEPS | O_BACKEND | O_GPULIB | O_REPEAT, run_run},
    {"compare", "pxl vm compare FILE.pxi [--max-steps N] [--json]",
     "Runs the program with the CPU interpreter and with the GPU interpreter and compares the\n"
     "final images byte for byte. Prints \"identical\" (exit 0) or the first differing pixel\n"
     "with both values (exit 1). Exits 77 when no GPU can be opened.",
     NULL, O_STEPS | O_GPULIB, run_compare},
    {"asm", "pxl vm asm IN.txt -o OUT.pxi [--json]",
     "Assembles pxVM text (docs/pxvm-asm.md) into an image. file: data is read relative to\n"
     "the directory of IN.txt (IN.txt may be - for stdin: then the current directory). Errors\n"
     "name the line. The program is then validated; a program that does not validate is\n"
     "still written, with a warning. The text may be at most 64 MiB.",
     "the image to write (also -o; required)", O_OUTPUT | O_NEED_OUTPUT, run_asm},
    {"disasm", "pxl vm disasm IN.pxi [-o OUT.txt] [--json]",
     "Disassembles an image into text that `pxl vm asm` turns back into the same image, byte\n"
     "for byte, whether or not the image is a valid program. Writes to stdout unless -o.",
     "write the text to FILE instead of stdout (also -o)", O_OUTPUT, run_disasm},
    {"validate", "pxl vm validate IN.pxi [--json]",
     "Checks every static rule of the spec. Prints the first broken rule, naming the pixel, and\n"
     "exits 1 if the image is not a valid program (a PNG that is not 8-bit RGBA is not).",
     NULL, 0, run_validate},
    {"show", "pxl vm show IN.pxi -o OUT.png [--zoom N] [--grid] [--json]",
     "Writes a PNG to look at: each pixel an N x N square (nearest neighbour), alpha forced\n"
     "opaque, optionally with a grid. The default zoom makes the longer side about 1024 pixels\n"
     "(at most 32x); the output is capped at 16384 pixels a side and 2^25 pixels.",
     "the PNG to write (also -o; required)", O_OUTPUT | O_NEED_OUTPUT | O_ZOOM, run_show},
};
#define N_SUBS (sizeof k_subs / sizeof k_subs[0])

static void vm_usage(FILE *f) {
    fprintf(f, "usage: pxl vm <subcommand> FILE [options]\n\n"
               "pxVM: programs stored as pictures (docs/pxvm-spec.md; text format: docs/pxvm-asm.md).\n\n"
               "subcommands:\n");
    for (size_t i = 0; i < N_SUBS; i++) fprintf(f, "  %s\n", k_subs[i].usage);
    fprintf(f, "  train [--corpus FILE] [--out FILE.pxi] [--seed S] [--json]   (train Pixel-LLM)\n");
    fprintf(f, "\nrun `pxl vm <subcommand> --help` for details.\n");
}

/* Fills opts for sub; returns how many. */
static size_t build_opts(const vm_sub *sub, vm_opts *o, cli_opt *opts) {
    size_t n = 0;
    if (sub->flags & O_OUTPUT) opts[n++] = (cli_opt){"output", CLI_STRING, &o->output, 0, 0, "FILE", sub->output_help};
    if (sub->flags & O_INPLACE)
        opts[n++] = (cli_opt){"in-place", CLI_FLAG, &o->in_place, 0, 0, NULL, "write the final image over FILE.pxi"};
    if (sub->flags & O_TRACE)
        opts[n++] = (cli_opt){"trace", CLI_FLAG, &o->trace, 0, 0, NULL, "print each instruction as it runs"};
    if (sub->flags & O_STEPS)
        opts[n++] = (cli_opt){"max-steps", CLI_STRING, &o->max_steps_s, 0, 0, "N",
                              "work-unit budget (default 2^40; spec section 3.6)"};
    if (sub->flags & O_REPEAT) {
        opts[n++] = (cli_opt){"repeat", CLI_U32, &o->repeat, 1, 1000, "N",
                              "run N times from the same input, timing each (default 1)"};
        opts[n++] = (cli_opt){"profile", CLI_FLAG, &o->profile, 0, 0, NULL,
                              "print where the time went: decode, compile, upload, execute, download"};
    }
    if (sub->flags & O_ZOOM) {
        opts[n++] = (cli_opt){"zoom", CLI_U32, &o->zoom, 1, 256, "N", "each pixel becomes N x N (default: auto)"};
        opts[n++] = (cli_opt){"grid", CLI_FLAG, &o->grid, 0, 0, NULL, "draw a grid between pixels (zoom >= 4)"};
    }
    if (sub->flags & O_BACKEND)
        opts[n++] = (cli_opt){"backend", CLI_BACKEND, &o->c.backend, 0, 0, "auto|gpu|cpu",
                              "compute backend (default: $PXL_BACKEND or auto)"};
    if (sub->flags & (O_BACKEND | O_GPULIB)) {
        opts[n++] = (cli_opt){"threads", CLI_U32, &o->c.threads, 1, 256, "N", "CPU threads (default: all cores)"};
        opts[n++] = (cli_opt){"webgpu-lib", CLI_STRING, &o->c.webgpu_lib, 0, 0, "PATH",
                              "use only this WebGPU library (default: search; see README)"};
    }
    opts[n++] = (cli_opt){"json", CLI_FLAG, &o->c.json, 0, 0, NULL, "machine-readable output on stdout"};
    opts[n++] = (cli_opt){"quiet", CLI_FLAG, &o->c.quiet, 0, 0, NULL, "no progress output"};
    opts[n++] = (cli_opt){"help", CLI_FLAG, &o->c.help, 0, 0, NULL, "show this help"};
    return n;
}

static int parse_u64(const char *s, uint64_t *out) {
    if (!s || *s < '0' || *s > '9') return 0;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v == 0) return 0;
    *out = (uint64_t)v;
    return 1;
}

/* 0 ok, 1 help shown, 2 usage error. */
static int parse(int argc, char **argv, vm_opts *o, const vm_sub **out) {
    memset(o, 0, sizeof *o);
    int json = cli_wants_json(argc, argv);
    if (argc < 2 || !argv[1])
        return cli_fail(json, 2, "pxl vm",
                        "name a subcommand (run, compare, asm, disasm, validate, show, train); see pxl vm --help");
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
        vm_usage(stdout);
        return 1;
    }
    const vm_sub *sub = NULL;
    for (size_t i = 0; i < N_SUBS; i++)
        if (strcmp(name, k_subs[i].name) == 0) sub = &k_subs[i];
    if (!sub)
        return cli_fail(json, 2, "pxl vm", "unknown subcommand '%.64s' (known: run, compare, asm, disasm, validate, show, train)",
                        name);
    cli_opt opts[20];
    size_t n_opts = build_opts(sub, o, opts);
    const char *pos[1] = {NULL};
    snprintf(o->cmd, sizeof o->cmd, "pxl vm %s", sub->name);
    const char *cmd = o->cmd;
    int n = cli_parse_command(cmd, sub->usage, sub->about, argc - 2, argv + 2, opts, n_opts, pos, 1, &o->c.help);
    if (n < 0) return n == CLI_HELP_SHOWN ? 1 : 2;
    json = o->c.json;
    if (n != 1) return cli_fail(json, 2, cmd, "name one input file; see %s --help", cmd);
    o->input = pos[0];
    if ((sub->flags & O_NEED_OUTPUT) && !o->output) return cli_fail(json, 2, cmd, "name the output with -o FILE");
    if (o->output && !o->output[0]) return cli_fail(json, 2, cmd, "-o needs a file name");
    if (o->in_place && o->output) return cli_fail(json, 2, cmd, "--in-place and -o exclude each other");
    if (o->max_steps_s && !parse_u64(o->max_steps_s, &o->max_steps))
        return cli_fail(json, 2, cmd, "--max-steps: '%.64s' must be an integer in [1, 2^64 - 1]", o->max_steps_s);
    if (strcmp(sub->name, "asm") != 0 && strcmp(o->input, "-") == 0)
        return cli_fail(json, 2, cmd, "reading an image from stdin is not supported; name a file");
    *out = sub;
    return 0;
}

int cmd_vm_parse(int argc, char **argv) {
    if (argc >= 2 && argv[1] && strcmp(argv[1], "train") == 0) return cmd_vm_train_parse(argc - 1, argv + 1);
    vm_opts o;
    const vm_sub *sub;
    return parse(argc, argv, &o, &sub);
}

int cmd_vm(int argc, char **argv) {
    if (argc >= 2 && argv[1] && strcmp(argv[1], "train") == 0) return cmd_vm_train(argc - 1, argv + 1);
    vm_opts o;
    const vm_sub *sub = NULL;
    int p = parse(argc, argv, &o, &sub);
    if (p) return p == 1 ? 0 : 2;
    return sub->run(sub, &o);
}

/* ---- helpers ------------------------------------------------------------------- */

/* 1 if both paths name the same existing file. */
static int same_file(const char *a, const char *b) {
    struct stat sa, sb;
    if (stat(a, &sa) != 0 || stat(b, &sb) != 0) return 0;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static int refuse_overwrite(const vm_sub *sub, const vm_opts *o) {
    if (o->output && strcmp(o->input, "-") != 0 && same_file(o->input, o->output))
        return cli_fail(o->c.json, 1, o->cmd, "%s is the input; refusing to write over it%s", o->output,
                        strcmp(sub->name, "run") == 0 ? " (use --in-place)" : "");
    return 0;
}

/* A context for commands that only touch images: CPU, quiet unless asked. */
static int open_cpu(const vm_opts *o, pxl_ctx **ctx) {
    cli_common c = o->c;
    c.backend = PXL_BACKEND_CPU;
    c.threads = c.threads ? c.threads : 1;
    return cli_open_ctx(&c, ctx);
}

static int load(const vm_opts *o, pxl_ctx *ctx, const char *path, pxl_image **img) {
    if (pxl_pxi_load(ctx, path, img) != PXL_OK) return cli_fail(o->c.json, 1, o->cmd, "%s", pxl_ctx_error(ctx));
    return 0;
}

static void json_kv(const char *key, const char *val, int comma) {
    printf("%s\"%s\":", comma ? "," : "", key);
    if (val) cli_json_string(stdout, val);
    else printf("null");
}

/* ---- run ----------------------------------------------------------------------- */

typedef struct trace_state {
    int json, n;
} trace_state;

static void on_trace(void *user, uint32_t x, const char *text) {
    trace_state *t = user;
    if (t->json) {
        printf("%s{\"x\":%u,\"text\":", t->n ? "," : "", x);
        cli_json_string(stdout, text);
        printf("}");
    } else {
        printf("x=%-5u %s\n", x, text);
    }
    t->n++;
}

static void profile_json(const pxl_vm_profile *p, double secs) {
    printf("{\"seconds\":%.6f,\"decode_s\":%.6f,\"compile_s\":%.6f,\"upload_s\":%.6f,\"execute_s\":%.6f,"
           "\"download_s\":%.6f,\"upload_bytes\":%llu,\"download_bytes\":%llu,\"instructions\":%llu,"
           "\"dispatches\":%llu}",
           secs, p->decode_s, p->compile_s, p->upload_s, p->execute_s, p->download_s,
           (unsigned long long)p->upload_bytes, (unsigned long long)p->download_bytes,
           (unsigned long long)p->instructions, (unsigned long long)p->dispatches);
}

static void profile_text(const pxl_vm_profile *p, uint32_t run, double secs) {
    printf("run %u: %.6f s = decode %.6f + compile %.6f + upload %.6f (%.1f MB) + execute %.6f + download %.6f "
           "(%.1f MB); %llu instructions, %llu dispatches\n",
           run, secs, p->decode_s, p->compile_s, p->upload_s, (double)p->upload_bytes / 1e6, p->execute_s,
           p->download_s, (double)p->download_bytes / 1e6, (unsigned long long)p->instructions,
           (unsigned long long)p->dispatches);
}

static int run_run(const vm_sub *sub, vm_opts *o) {
    const char *out = o->in_place ? o->input : o->output;
    if (!o->in_place && refuse_overwrite(sub, o)) return 1;
    uint32_t repeat = o->repeat ? o->repeat : 1;
    if (repeat > 1 && o->trace) return cli_fail(o->c.json, 2, o->cmd, "--trace and --repeat exclude each other");
    pxl_ctx *ctx;
    if (cli_open_ctx(&o->c, &ctx)) return 1;
    pxl_image *img = NULL, *orig = NULL;
    if (load(o, ctx, o->input, &img)) {
        pxl_ctx_free(ctx);
        return 1;
    }
    /* repeats run in one session: later runs upload only what the GPU does not hold yet */
    pxl_vm_session *session = NULL;
    if (repeat > 1 && (pxl_image_clone(ctx, img, &orig) != PXL_OK || pxl_vm_session_create(ctx, &session) != PXL_OK)) {
        cli_fail(o->c.json, 1, o->cmd, "%s", pxl_ctx_error(ctx));
        pxl_image_free(orig);
        pxl_image_free(img);
        pxl_ctx_free(ctx);
        return 1;
    }
    const pxl_gpu_info *gi = pxl_gpu_get_info(ctx);
    const char *backend = pxl_ctx_backend(ctx) == PXL_BACKEND_GPU ? "gpu" : "cpu";
    trace_state ts = {o->c.json, 0};
    pxl_vm_profile prof[2];
    pxl_vm_options vo = {o->max_steps, o->trace ? on_trace : NULL, &ts, NULL};
    if (o->c.json) {
        printf("{");
        json_kv("file", o->input, 0);
        json_kv("backend", backend, 1);
        json_kv("device", gi ? gi->adapter_name : NULL, 1);
        if (pxl_ctx_backend(ctx) == PXL_BACKEND_CPU) printf(",\"threads\":%d", pxl_ctx_threads(ctx));
        if (o->trace) printf(",\"trace\":[");
        fflush(stdout);
    }
    /* run 1, then runs 2..N from the same input; the first run's result is the one reported */
    double secs = 0, best = 0, sum = 0;
    pxl_status s = PXL_OK;
    char msg[2048] = "";
    for (uint32_t i = 0; i < repeat; i++) {
        if (i > 0) memcpy(img->px, orig->px, (size_t)img->w * img->h * 4);
        vo.profile = &prof[i > 0];
        double t0 = pxl_time_now();
        pxl_status si = session ? pxl_vm_session_run(session, img, &vo) : pxl_vm_run(ctx, img, &vo);
        double t = pxl_time_now() - t0;
        if (i == 0) {
            s = si;
            secs = t;
            snprintf(msg, sizeof msg, "%s", s == PXL_OK ? "" : pxl_ctx_error(ctx));
            if (o->trace && o->c.json) printf("]");
            if (o->c.json) printf(",\"runs\":[");
        } else {
            sum += t;
            if (i == 1 || t < best) best = t;
        }
        if (o->c.json) {
            printf("%s", i ? "," : "");
            profile_json(&prof[i > 0], t);
        } else if (o->profile) {
            profile_text(&prof[i > 0], i + 1, t);
        }
        if (si != PXL_OK && si != PXL_ERR_INVALID_ARG) { /* an error outside the spec stops the repeats */
            if (i > 0) {
                s = si;
                snprintf(msg, sizeof msg, "run %u: %s", i + 1, pxl_ctx_error(ctx));
            }
            break;
        }
    }
    /* the spec defines the image after a run-time error; it is written too */
    int do_write = out && (s == PXL_OK || s == PXL_ERR_INVALID_ARG);
    pxl_status ws = PXL_OK;
    char wmsg[2048] = "";
    if (do_write) {
        ws = pxl_pxi_save(ctx, img, out);
        if (ws != PXL_OK) snprintf(wmsg, sizeof wmsg, "%s", pxl_ctx_error(ctx));
    }
    const char *status = s == PXL_OK ? "ok" : s == PXL_ERR_FORMAT ? "invalid" : s == PXL_ERR_INVALID_ARG ? "run_error" : "error";
    if (o->c.json) {
        printf("]");
        json_kv("status", status, 1);
        json_kv("error", s == PXL_OK ? NULL : msg, 1);
        printf(",\"seconds\":%.6f", secs);
        if (gi) {
            pxl_gpu_stats st = pxl_gpu_get_stats(ctx);
            printf(",\"gpu_stats\":{\"shader_module_s\":%.6f,\"pipeline_s\":%.6f,\"pipelines_created\":%llu,"
                   "\"disk_cache\":%s,\"disk_cache_hits\":%llu,\"disk_cache_misses\":%llu,\"disk_cache_stores\":%llu}",
                   (double)st.shader_module_ns / 1e9, (double)st.pipeline_ns / 1e9,
                   (unsigned long long)st.pipeline_cache_misses, gi->cache_dir ? "true" : "false",
                   (unsigned long long)st.disk_cache_hits, (unsigned long long)st.disk_cache_misses,
                   (unsigned long long)st.disk_cache_stores);
        }
        if (repeat > 1) printf(",\"repeat_best_seconds\":%.6f,\"repeat_mean_seconds\":%.6f", best, sum / (repeat - 1));
        json_kv("output", do_write && ws == PXL_OK ? out : NULL, 1);
        if (ws != PXL_OK) json_kv("write_error", wmsg, 1);
        printf("}\n");
    } else {
        if (s == PXL_ERR_FORMAT) fprintf(stderr, "pxl vm run: %s: invalid program: %s\n", o->input, msg);
        else if (s != PXL_OK) fprintf(stderr, "pxl vm run: %s: %s\n", o->input, msg);
        else printf("%s: ok (%s%s%s, %.3f s)\n", o->input, backend, gi ? ": " : "", gi ? gi->adapter_name : "", secs);
        if (repeat > 1 && (s == PXL_OK || s == PXL_ERR_INVALID_ARG))
            printf("runs 2..%u: best %.6f s, mean %.6f s\n", repeat, best, sum / (repeat - 1));
        if (do_write && ws == PXL_OK) printf("wrote %s\n", out);
        if (ws != PXL_OK) fprintf(stderr, "pxl vm run: %s\n", wmsg);
    }
    pxl_vm_session_free(session);
    pxl_image_free(orig);
    pxl_image_free(img);
    pxl_ctx_free(ctx);
    return s == PXL_OK && ws == PXL_OK ? 0 : 1;
}

/* ---- compare ------------------------------------------------------------------- */

static int run_compare(const vm_sub *sub, vm_opts *o) {
    (void)sub;
    cli_common cc = o->c;
    cc.backend = PXL_BACKEND_CPU;
    pxl_ctx *cpu = NULL, *gpu = NULL;
    if (cli_open_ctx(&cc, &cpu)) return 1;
    pxl_ctx_options go = cli_ctx_options(&o->c);
    go.backend = PXL_BACKEND_GPU;
    if (pxl_ctx_create(&go, &gpu) != PXL_OK) {
        cli_fail(o->c.json, 77, o->cmd, "needs a GPU: %s", gpu ? pxl_ctx_error(gpu) : "out of memory");
        pxl_ctx_free(gpu);
        pxl_ctx_free(cpu);
        return 77;
    }
    pxl_image *ic = NULL, *ig = NULL;
    int rc = 1;
    if (load(o, cpu, o->input, &ic)) goto done;
    if (pxl_image_clone(gpu, ic, &ig) != PXL_OK) {
        cli_fail(o->c.json, 1, o->cmd, "%s", pxl_ctx_error(gpu));
        goto done;
    }
    pxl_vm_options vo = {o->max_steps, NULL, NULL, NULL};
    pxl_status sc = pxl_vm_run(cpu, ic, &vo);
    char mc[2048], mg[2048];
    snprintf(mc, sizeof mc, "%s", sc == PXL_OK ? "" : pxl_ctx_error(cpu));
    pxl_status sg = pxl_vm_run(gpu, ig, &vo);
    snprintf(mg, sizeof mg, "%s", sg == PXL_OK ? "" : pxl_ctx_error(gpu));
    const pxl_gpu_info *gi = pxl_gpu_get_info(gpu);

    size_t n_px = (size_t)ic->w * ic->h, n_diff = 0, first = 0;
    for (size_t i = 0; i < n_px; i++)
        if (memcmp(ic->px + i * 4, ig->px + i * 4, 4) != 0) {
            if (!n_diff) first = i;
            n_diff++;
        }
    int identical = sc == sg && n_diff == 0;
    int invalid = sc == PXL_ERR_FORMAT && sg == PXL_ERR_FORMAT;
    if (o->c.json) {
        printf("{");
        json_kv("file", o->input, 0);
        json_kv("gpu", gi ? gi->adapter_name : NULL, 1);
        printf(",\"identical\":%s", identical && !invalid ? "true" : "false");
        json_kv("cpu_status", pxl_status_str(sc), 1);
        json_kv("gpu_status", pxl_status_str(sg), 1);
        json_kv("cpu_error", sc == PXL_OK ? NULL : mc, 1);
        json_kv("gpu_error", sg == PXL_OK ? NULL : mg, 1);
        printf(",\"differing_pixels\":%zu", n_diff);
        if (n_diff) {
            const uint8_t *a = ic->px + first * 4, *b = ig->px + first * 4;
            printf(",\"first\":{\"x\":%zu,\"y\":%zu,\"cpu\":[%u,%u,%u,%u],\"gpu\":[%u,%u,%u,%u]}", first % ic->w,
                   first / ic->w, a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3]);
        }
        printf("}\n");
    } else if (invalid) {
        fprintf(stderr, "pxl vm compare: %s: invalid program: %s\n", o->input, mc);
    } else {
        if (sc != PXL_OK || sg != PXL_OK)
            printf("cpu: %s%s%s\ngpu: %s%s%s\n", pxl_status_str(sc), sc ? ": " : "", mc, pxl_status_str(sg),
                   sg ? ": " : "", mg);
        if (identical) printf("identical\n");
        else if (sc != sg) printf("different: the interpreters ended with different statuses\n");
        if (n_diff) {
            const uint8_t *a = ic->px + first * 4, *b = ig->px + first * 4;
            printf("different: first at pixel (%zu, %zu): cpu (%u, %u, %u, %u), gpu (%u, %u, %u, %u); %zu pixel%s "
                   "differ\n",
                   first % ic->w, first / ic->w, a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3], n_diff,
                   n_diff == 1 ? "" : "s");
        }
    }
    rc = identical && !invalid ? 0 : 1;
done:
    pxl_image_free(ic);
    pxl_image_free(ig);
    pxl_ctx_free(gpu);
    pxl_ctx_free(cpu);
    return rc;
}

/* ---- asm ----------------------------------------------------------------------- */

static int run_asm(const vm_sub *sub, vm_opts *o) {
    if (refuse_overwrite(sub, o)) return 1;
    int from_stdin = strcmp(o->input, "-") == 0;
    /* file: data is relative to the text's directory */
    char *dir = strdup(from_stdin ? "." : o->input);
    if (!dir) return cli_fail(o->c.json, 1, o->cmd, "out of memory");
    char *slash = strrchr(dir, '/');
    if (!from_stdin && !slash) strcpy(dir, ".");
    else if (slash == dir) dir[1] = '\0';
    else if (slash) *slash = '\0';

    pxl_ctx *ctx;
    int rc = 1;
    pxl_image *img = NULL;
    char *text = NULL;
    size_t len = 0;
    char err[2048];
    if (open_cpu(o, &ctx)) {
        free(dir);
        return 1;
    }
    if (cli_read_text(ctx, o->input, CLI_TEXT_MAX, &text, &len, err, sizeof err)) {
        cli_fail(o->c.json, 1, o->cmd, "%s", err);
        goto done;
    }
    if (pxl_vm_asm(ctx, text, len, dir, &img) != PXL_OK) {
        cli_fail(o->c.json, 1, o->cmd, "%s: %s", from_stdin ? "<stdin>" : o->input, pxl_ctx_error(ctx));
        goto done;
    }
    pxl_status vs = pxl_vm_validate(ctx, img);
    char vmsg[2048];
    snprintf(vmsg, sizeof vmsg, "%s", vs == PXL_OK ? "" : pxl_ctx_error(ctx));
    if (pxl_pxi_save(ctx, img, o->output) != PXL_OK) {
        cli_fail(o->c.json, 1, o->cmd, "%s", pxl_ctx_error(ctx));
        goto done;
    }
    if (o->c.json) {
        printf("{");
        json_kv("input", o->input, 0);
        json_kv("output", o->output, 1);
        printf(",\"width\":%u,\"height\":%u,\"version\":%d,\"valid\":%s", img->w, img->h, pxl_vm_version(img),
               vs == PXL_OK ? "true" : "false");
        json_kv("validation_error", vs == PXL_OK ? NULL : vmsg, 1);
        printf("}\n");
    } else {
        printf("wrote %s (%ux%u, v%d)\n", o->output, img->w, img->h, pxl_vm_version(img));
    }
    if (vs != PXL_OK) fprintf(stderr, "pxl vm asm: warning: %s does not validate: %s\n", o->output, vmsg);
    rc = 0;
done:
    pxl_image_free(img);
    pxl_free(ctx, text);
    pxl_ctx_free(ctx);
    free(dir);
    return rc;
}

/* ---- disasm -------------------------------------------------------------------- */

static int run_disasm(const vm_sub *sub, vm_opts *o) {
    if (refuse_overwrite(sub, o)) return 1;
    pxl_ctx *ctx;
    if (open_cpu(o, &ctx)) return 1;
    pxl_image *img = NULL;
    char *text = NULL;
    size_t len = 0;
    int rc = 1;
    if (load(o, ctx, o->input, &img)) goto done;
    if (pxl_vm_disasm(ctx, img, &text, &len) != PXL_OK) {
        cli_fail(o->c.json, 1, o->cmd, "%s", pxl_ctx_error(ctx));
        goto done;
    }
    if (o->output) {
        /* atomic: on any failure the old file is kept */
        if (pxl_file_write(ctx, o->output, text, len) != PXL_OK) {
            cli_fail(o->c.json, 1, o->cmd, "%s", pxl_ctx_error(ctx));
            goto done;
        }
        if (o->c.json) {
            printf("{");
            json_kv("input", o->input, 0);
            json_kv("output", o->output, 1);
            printf(",\"bytes\":%zu}\n", len);
        }
    } else if (o->c.json) {
        printf("{");
        json_kv("input", o->input, 0);
        printf(",\"text\":");
        cli_json_string_n(stdout, text, len);
        printf("}\n");
    } else {
        cli_write_stdout(text, len); /* a failure is reported by main, after the final flush */
    }
    rc = 0;
done:
    pxl_free(ctx, text);
    pxl_image_free(img);
    pxl_ctx_free(ctx);
    return rc;
}

/* ---- validate ------------------------------------------------------------------ */

static int run_validate(const vm_sub *sub, vm_opts *o) {
    (void)sub;
    pxl_ctx *ctx;
    if (open_cpu(o, &ctx)) return 1;
    pxl_image *img = NULL;
    pxl_status s = pxl_pxi_load(ctx, o->input, &img); /* its messages start with the path */
    int loaded = s == PXL_OK;
    if (s == PXL_OK) s = pxl_vm_validate(ctx, img);
    const char *msg = s == PXL_OK ? "" : pxl_ctx_error(ctx);
    if (o->c.json) {
        printf("{");
        json_kv("file", o->input, 0);
        printf(",\"valid\":%s", s == PXL_OK ? "true" : "false");
        if (img) printf(",\"version\":%d,\"width\":%u,\"height\":%u", pxl_vm_version(img), img->w, img->h);
        json_kv("error", s == PXL_OK ? NULL : msg, 1);
        printf("}\n");
    } else if (s == PXL_OK) {
        printf("%s: valid (v%d, %ux%u)\n", o->input, pxl_vm_version(img), img->w, img->h);
    } else if (loaded) {
        printf("%s: invalid: %s\n", o->input, msg);
    } else {
        printf("invalid: %s\n", msg);
    }
    pxl_image_free(img);
    pxl_ctx_free(ctx);
    return s == PXL_OK ? 0 : 1;
}

/* ---- show ---------------------------------------------------------------------- */

static int run_show(const vm_sub *sub, vm_opts *o) {
    if (refuse_overwrite(sub, o)) return 1;
    pxl_ctx *ctx;
    if (open_cpu(o, &ctx)) return 1;
    pxl_image *img = NULL, *big = NULL;
    int rc = 1;
    if (load(o, ctx, o->input, &img)) goto done;
    uint32_t side = img->w > img->h ? img->w : img->h;
    uint32_t z = o->zoom;
    if (!z) {
        z = side >= 1024 ? 1 : 1024 / side;
        if (z > 32) z = 32;
        while (z > 1 && (uint64_t)img->w * z * img->h * z > PXL_VM_MAX_PIXELS) z--;
    }
    uint64_t ow = (uint64_t)img->w * z, oh = (uint64_t)img->h * z;
    if (ow > PXL_VM_MAX_SIDE || oh > PXL_VM_MAX_SIDE || ow * oh > PXL_VM_MAX_PIXELS) {
        cli_fail(o->c.json, 1, o->cmd,
                 "--zoom %u makes a %llux%llu picture, over the cap (%u a side, %u pixels); use a smaller zoom",
                 z, (unsigned long long)ow, (unsigned long long)oh, PXL_VM_MAX_SIDE, PXL_VM_MAX_PIXELS);
        goto done;
    }
    if (pxl_image_create(ctx, (uint32_t)ow, (uint32_t)oh, &big) != PXL_OK) {
        cli_fail(o->c.json, 1, o->cmd, "%s", pxl_ctx_error(ctx));
        goto done;
    }
    int grid = o->grid && z >= 4;
    for (uint32_t y = 0; y < (uint32_t)oh; y++)
        for (uint32_t x = 0; x < (uint32_t)ow; x++) {
            uint8_t *d = pxl_image_px(big, x, y);
            if (grid && (x % z == z - 1 || y % z == z - 1)) {
                d[0] = d[1] = d[2] = 96;
            } else {
                const uint8_t *s = pxl_image_px(img, x / z, y / z);
                d[0] = s[0], d[1] = s[1], d[2] = s[2];
            }
            d[3] = 255;
        }
    if (pxl_pxi_save(ctx, big, o->output) != PXL_OK) {
        cli_fail(o->c.json, 1, o->cmd, "%s", pxl_ctx_error(ctx));
        goto done;
    }
    if (o->c.json) {
        printf("{");
        json_kv("input", o->input, 0);
        json_kv("output", o->output, 1);
        printf(",\"zoom\":%u,\"width\":%llu,\"height\":%llu}\n", z, (unsigned long long)ow, (unsigned long long)oh);
    } else {
        printf("wrote %s (%llux%llu, zoom %u)\n", o->output, (unsigned long long)ow, (unsigned long long)oh, z);
    }
    rc = 0;
done:
    pxl_image_free(big);
    pxl_image_free(img);
    pxl_ctx_free(ctx);
    return rc;
}
