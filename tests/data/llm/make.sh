#!/usr/bin/env bash
# Remakes the test models and llama.cpp's reference runs in tests/data/llm/.
# A maintainer's step (CI only reads the results): it needs a built tree
# (build/tests/llm_mkmodel) and the llbench peer with llama.cpp's CPU library
# (../shared/peers/llamacpp/build.sh /tmp/peers/llbench).
#
#   tests/data/llm/make.sh [LLBENCH_DIR]
#
# 1. llm_mkmodel writes llama-f32.gguf and qwen2-f32.gguf (random weights from
#    a fixed generator; ctest regenerates them the same way, so they are not
#    committed), and llama's two RoPE-scaled variants llama3-f32.gguf (llama3
#    frequency factors, rope_freqs.weight) and linear-f32.gguf (linear
#    scaling, factor 4): F32 only, with their .ref;
# 2. llama.cpp's quantizer (llama_model_quantize through `llbench -Q`) makes
#    each weight type from them;
# 3. llama.cpp greedy-decodes PROMPT for STEPS steps on each file (`llbench
#    -g`), printing the prompt's ids, the top-5 logits of every step and the
#    tokens: the .ref files that tests/test_llm_ref.c compares with.
set -euo pipefail
cd "$(dirname "$0")"
LB=${1:-/tmp/peers/llbench}
ROOT=../../..
PROMPT="the cat and the dog"
STEPS=24
"$ROOT/build/tests/llm_mkmodel" llama llama-f32.gguf
"$ROOT/build/tests/llm_mkmodel" qwen2 qwen2-f32.gguf
"$ROOT/build/tests/llm_mkmodel" llama3 llama3-f32.gguf
"$ROOT/build/tests/llm_mkmodel" linear linear-f32.gguf
# llama_ftype numbers: 1 F16, 2 Q4_0, 3 Q4_1, 7 Q8_0, 8 Q5_0, 9 Q5_1, 10 Q2_K, 12 Q3_K_M, 15 Q4_K_M, 17 Q5_K_M, 18 Q6_K, 32 BF16
for q in 1:f16 7:q8_0 2:q4_0 3:q4_1 8:q5_0 9:q5_1 10:q2_k 12:q3_k_m 15:q4_k_m 17:q5_k_m 18:q6_k 32:bf16; do
  "$LB/llbench" -L "$LB/lib-cpu" -Q llama-f32.gguf "llama-${q#*:}.gguf" "${q%%:*}" -t 2 >/dev/null 2>&1
done
for q in 7:q8_0 15:q4_k_m; do
  "$LB/llbench" -L "$LB/lib-cpu" -Q qwen2-f32.gguf "qwen2-${q#*:}.gguf" "${q%%:*}" -t 2 >/dev/null 2>&1
done
for f in *.gguf; do
  "$LB/llbench" -L "$LB/lib-cpu" -m "$f" -g "$PROMPT" -n $STEPS -t 2 2>/dev/null | grep -E '^(prompt_ids|step|gen_ids)' > "${f%.gguf}.ref"
done
rm -f llama-f32.gguf qwen2-f32.gguf llama3-f32.gguf linear-f32.gguf
sha256sum *.gguf > SHA256SUMS
