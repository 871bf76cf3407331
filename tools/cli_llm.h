/* Pixel-LLM subcommands: `pxl vm train` and `pxl generate` (src/vm/pixel_llm*.c). */
#ifndef PXL_TOOLS_CLI_LLM_H
#define PXL_TOOLS_CLI_LLM_H

/* argv[0] is "train"; the lead wires `pxl vm train` here. Return the exit code. */
int cmd_vm_train(int argc, char **argv);
/* Parses only (for the fuzzer): 0 ok, 1 help, 2 error. */
int cmd_vm_train_parse(int argc, char **argv);

/* argv[0] is "generate". */
int cmd_generate(int argc, char **argv);
int cmd_generate_parse(int argc, char **argv);

#endif
