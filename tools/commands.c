/* The subcommand table (kept apart from main so the fuzzer can link it). */
#include "cli.h"
#include "cli_llm.h"

const cli_command cli_commands[] = {
    {"info", "show the WebGPU library, adapter, features and limits", cmd_info, cmd_info_parse},
    {"bench", "benchmarks: dot, ops (the kernel library), llm (GGUF prompt and generation speed)", cmd_bench, cmd_bench_parse},
    {"vm", "pxVM pixel programs: run, compare, asm, disasm, validate, show, train", cmd_vm, cmd_vm_parse},
    {"generate", "generate text with a GGUF model (-m FILE) or Pixel-LLM, on the CPU or GPU", cmd_generate,
     cmd_generate_parse},
    {"chat", "chat with a GGUF model: a conversation on stdin, one line per turn", cmd_chat, cmd_chat_parse},
    {"gguf", "GGUF model files: info (metadata, tensors, sizes)", cmd_gguf, cmd_gguf_parse},
    {"tokenize", "token ids and pieces of a text under a GGUF file's tokenizer", cmd_tokenize, cmd_tokenize_parse},
    {"perplexity", "perplexity of a GGUF model over a text, as llama.cpp computes it", cmd_perplexity,
     cmd_perplexity_parse},
    {"fit", "fit a model's parameters to data (nonlinear least squares, standard errors)", cmd_fit, cmd_fit_parse},
    {"mesh", "mesh optimisation on an icosphere, with pictures: arap, developable", cmd_mesh, cmd_mesh_parse},
};
const size_t cli_n_commands = sizeof cli_commands / sizeof cli_commands[0];
