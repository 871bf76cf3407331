/*
 * libFuzzer target for the CLI argument parser: the input is split at NUL
 * and newline bytes into at most 64 arguments, which are handed to the
 * parser of every subcommand (parse only: nothing runs).
 */
#include "cli.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *buf = malloc(size + 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    char *argv[66];
    int argc = 1;
    argv[0] = (char *)"cmd";
    char *p = buf, *end = buf + size;
    while (p <= end && argc < 65) {
        argv[argc++] = p;
        while (p < end && *p != '\0' && *p != '\n') p++;
        *p = '\0';
        p++;
    }
    argv[argc] = NULL;
    char name[64]; /* argv[0], a writable copy of the command's name */
    for (size_t i = 0; i < cli_n_commands; i++) {
        snprintf(name, sizeof name, "%s", cli_commands[i].name);
        argv[0] = name;
        (void)cli_commands[i].parse_only(argc, argv);
    }
    free(buf);
    return 0;
}
