PHASE=prepare bash bench/llm_peers.sh tinyllama-1.1b tiny5 llama3.2-1b qwen2.5-0.5b
P=/root/peers
for m in tinyllama-1.1b llama3.2-1b; do $P/llbench -L $P/lib-cpu -Q $P/m/$m-f16.gguf $P/m/$m-q5km.gguf 17 -t 16 2>&1 | tail -1; done
