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
} cli_common;

#define CLI_COMMON_OPTS(c)                                                                         \
    {"backend", CLI_BACKEND, &(c)->backend, 0, 0, "auto|gpu|cpu",                                 \
     "compute backend (default: $PXL_BACKEND or auto)"},                                           \
        {"json", CLI_FLAG, &(c)->json, 0, 0, NULL, "machine-readable output on stdout"},          \
        {"threads", CLI_U32, &(c)->threads, 1, 256, "N", "CPU threads (default: all cores)"},     \
        {"webgpu-lib", CLI_STRING, &(c)->webgpu_lib, 0, 0, "PATH",                               \
         "use only this WebGPU library (default: search; see README)"},                           \
        {"quiet", CLI_FLAG, &(c)->quiet, 0, 0, NULL, "no progress output"},                       \
    {                                                                                              \
        "help", CLI_FLAG, &(c)->help, 0, 0, NULL, "show this help"                                \
    }

/*
 * Parses argv[0..argc) against opts. Accepts "--name value" and "--name=value";
 * "-h" is "--help", "-o" is "--output" where opts has an option "output",
 * and "-m" is "--model" where opts has an option "model".
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

/* Creates a context from the common options; on failure prints why. */
int cli_open_ctx(const cli_common *c, pxl_ctx **out);

/* Writes s as a JSON string literal (with quotes). */
void cli_json_string(FILE *f, const char *s);

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

#endif
