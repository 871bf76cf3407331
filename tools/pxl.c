/*
 * pxl: the command-line tool. `pxl <command> --help` documents each command.
 * Whatever the command did, a failed write to stdout fails the process.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f) {
    fprintf(f, "usage: pxl <command> [options]\n\n"
               "GPU compute in C through WebGPU, with a CPU path that gives the same answers.\n\n"
               "commands:\n");
    for (size_t i = 0; i < cli_n_commands; i++)
        fprintf(f, "  %-10s %s\n", cli_commands[i].name, cli_commands[i].summary);
    fprintf(f, "\nglobal: pxl --help | pxl --version\n"
               "environment: PXL_BACKEND=auto|gpu|cpu, PXL_WEBGPU_LIB=path to a webgpu.h library\n"
               "run `pxl <command> --help` for a command's options.\n");
}

static int run(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("pxl %s\n", PXL_VERSION_STRING);
        return 0;
    }
    for (size_t i = 0; i < cli_n_commands; i++)
        if (strcmp(cmd, cli_commands[i].name) == 0) return cli_commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "pxl: unknown command '%.64s' (see pxl --help)\n", cmd);
    return 2;
}

int main(int argc, char **argv) {
    /* Mesa's EGL needs a platform without a display (servers, CI); the
     * library never touches the environment, so the tool sets it, before
     * any context exists, unless the user chose one. */
    setenv("EGL_PLATFORM", "surfaceless", 0);
    int rc = run(argc, argv);
    if (cli_finish_stdout() != 0 && rc == 0) rc = 1;
    return rc;
}
