/*
 * Shared pieces of the pxl command-line tool: a table-driven option parser
 * (fuzzed by fuzz/fuzz_cli_args.c), common options, output helpers, and the
 * subcommand table. One file per subcommand: cmd_<name>.c.
 */
#ifndef PXL_TOOLS_CLI_H
#define PXL_TOOLS_CLI_H

#include "pxl/core.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum cli_kind {
    CLI_FLAG,    /* int, set to 1 */
    CLI_STRING,  /* const char * (points into argv) */
    CLI_U32,     /* uint32_t, decimal, within [min, max] */
    CLI_DOUBLE,  /* double, finite, within [min, max] */
    CLI_BACKEND  /* pxl_backend */
} cli_kind;

typedef struct cli_opt {
    const char *name; /* without the leading "--" */
    cli_kind kind;
    void *dst;
    double min, max;  /* CLI_U32 and CLI_DOUBLE */
    const char *metavar;
    const char *help;
} cli_opt;

/* Options every subcommand accepts. */
typedef struct cli_common {
    pxl_backend backend;
    int json, help, quiet;
    uint32_t threads;
    const char *webgpu_lib;
    const char *tune; /* --tune; NULL: $PXL_TUNE */
    int gpu_checks;   /* --gpu-checks: keep Dawn's bounds checks where a command drops them */
} cli_common;

#define CLI_COMMON_OPTS(c)                                                                         \
    {"backend", CLI_BACKEND, &(c)->backend, 0, 0, "auto|gpu|cpu",                                 \
     "compute backend (default: $PXL_BACKEND or auto)"},                                           \
        {"json", CLI_FLAG, &(c)->json, 0, 0, NULL, "machine-readable output on stdout"},          \
        {"threads", CLI_U32, &(c)->threads, 1, 256, "N", "CPU threads (default: all cores)"},     \
        {"webgpu-lib", CLI_STRING, &(c)->webgpu_lib, 0, 0, "PATH",                               \
         "use only this WebGPU library (default: search; see README)"},                           \
        {"tune", CLI_STRING, &(c)->tune, 0, 0, "KEY=V,...",                                       \
         "launch-shape overrides for tuning (default: $PXL_TUNE; see README)"},                   \
        {"quiet", CLI_FLAG, &(c)->quiet, 0, 0, NULL, "no progress output"},                       \
        {"gpu-checks", CLI_FLAG, &(c)->gpu_checks, 0, 0, NULL,                                    \
         "keep Dawn's bounds checks in GPU kernels (GGUF commands and bench drop them)"},        \
    {                                                                                              \
        "help", CLI_FLAG, &(c)->help, 0, 0, NULL, "show this help"                                \
    }

/*
 * Parses argv[0..argc) against opts. Accepts "--name value" and "--name=value";
 * "-h" is "--help", and where opts has the long option: "-o" is "--output",
 * "-m" "--model", "-p" "--prompt" and "-f" "--file".
 * Positional arguments are stored in order into pos[0..max_pos). On error
 * returns -1 with a message naming the argument in err; else returns the
 * number of positional arguments. Never reads past argv[argc-1].
 */
int cli_parse(int argc, char **argv, const cli_opt *opts, size_t n_opts, const char **pos,
              int max_pos, char *err, size_t err_cap);

/*
 * cli_parse for a command named `cmd` ("pxl bench"): a parse error is printed
 * as "cmd: message" on stderr, and --help (*help set) prints the usage on
 * stdout. Returns the number of positional arguments, or CLI_HELP_SHOWN or
 * CLI_USAGE_ERROR.
 */
#define CLI_HELP_SHOWN (-1)
#define CLI_USAGE_ERROR (-2)
int cli_parse_command(const char *cmd, const char *usage, const char *about, int argc, char **argv,
                      const cli_opt *opts, size_t n_opts, const char **pos, int max_pos, const int *help);

/* Prints usage for a subcommand. */
void cli_usage(FILE *f, const char *usage, const char *about, const cli_opt *opts, size_t n_opts);

/* Creates a context from the common options; on failure prints why (cli_fail,
 * so a JSON error object under --json) and returns 1. */
int cli_open_ctx(const cli_common *c, pxl_ctx **out);
/* cli_open_ctx with cli_ctx_options_unchecked's options. */
int cli_open_ctx_unchecked(const cli_common *c, pxl_ctx **out);

/* The context options the common options ask for: backend, threads, WebGPU
 * library, quiet, tuning (--tune, else $PXL_TUNE) and the Dawn toggles
 * ($PXL_DAWN_TOGGLES). The strings point into c and the environment. */
pxl_ctx_options cli_ctx_options(const cli_common *c);

/* cli_ctx_options for the commands that run only pxl's own kernels on model
 * weights (the GGUF commands, pxl bench): gpu_unchecked unless --gpu-checks. */
pxl_ctx_options cli_ctx_options_unchecked(const cli_common *c);

/* ---- input and output (cli_io.c) ---- */

/* Largest text input (assembler text, a file or stdin): 64 MiB. */
#define CLI_TEXT_MAX ((size_t)64 << 20)

/*
 * Writes s (NUL-terminated; NULL is "") or s[0..n) as a JSON string literal
 * with its quotes. The output is valid JSON whatever the bytes: quotes,
 * backslashes and control characters are escaped, and each byte that is not
 * part of a valid UTF-8 sequence becomes U+FFFD (escaped). Write errors are
 * left in f's error flag (cli_finish_stdout reports them).
 */
void cli_json_string(FILE *f, const char *s);
void cli_json_string_n(FILE *f, const char *s, size_t n);

/*
 * Reports a failure of command cmd ("pxl vm asm"): "cmd: message" on stderr,
 * and, when json, {"ok":false,"command":cmd,"error":message} on stdout (the
 * caller must not have started another JSON value there). Returns code.
 */
int cli_fail(int json, int code, const char *cmd, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* 1 if argv[0..argc) holds "--json" before any "--" (for errors found while parsing). */
int cli_wants_json(int argc, char **argv);

/* fwrite to stdout, remembering the reason of a failure for cli_finish_stdout.
 * Returns 0, or 1 on a write error. */
int cli_write_stdout(const void *data, size_t len);

/*
 * Flushes and closes stdout. If any write to stdout failed (now or earlier:
 * its error flag is sticky), prints "pxl: writing to stdout: <reason>" on
 * stderr and returns 1; else 0. main() calls it once, after the command.
 */
int cli_finish_stdout(void);

/*
 * Reads a text input: path "-" is stdin, anything else must be a regular file
 * (pxl_file_read: never blocks on a FIFO or device). At most max bytes; more
 * is an error ("too large"). *text is pxl_alloc'ed (free with pxl_free) and
 * NUL-terminated. Returns 0, or 1 with a message naming the input in err.
 */
int cli_read_text(pxl_ctx *ctx, const char *path, size_t max, char **text, size_t *len, char *err,
                  size_t err_cap);

/* Why ctx has no GPU, never empty ("the CPU backend was asked for ..."). */
const char *cli_no_gpu_reason(pxl_ctx *ctx);

/* Subcommands. argv[0] is the subcommand name. Return the process exit code. */
typedef struct cli_command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
    /* Parses only (for the fuzzer): 0 ok, 1 help, 2 error. */
    int (*parse_only)(int argc, char **argv);
} cli_command;

extern const cli_command cli_commands[];
extern const size_t cli_n_commands;

int cmd_info(int argc, char **argv);
int cmd_info_parse(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_bench_parse(int argc, char **argv);
int cmd_vm(int argc, char **argv);
int cmd_vm_parse(int argc, char **argv);
int cmd_gguf(int argc, char **argv);
int cmd_gguf_parse(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_tokenize_parse(int argc, char **argv);
int cmd_perplexity(int argc, char **argv);
int cmd_perplexity_parse(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_chat_parse(int argc, char **argv);
int cmd_fit(int argc, char **argv);
int cmd_fit_parse(int argc, char **argv);
int cmd_mesh(int argc, char **argv);
int cmd_mesh_parse(int argc, char **argv);

#endif
