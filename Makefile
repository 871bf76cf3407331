# Thin wrapper around CMake. Every target first makes sure the dependencies
# are present (scripts/deps.sh is quiet and quick when they are).
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
PREFIX ?= /usr/local

.PHONY: all deps configure build run test bench install clean

all: build

deps:
	@scripts/deps.sh

configure: deps
	@test -f $(BUILD)/CMakeCache.txt || cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# The main demo: what pxl found, then Pixel-LLM (a language model stored in
# one PNG, run by the pixel VM) writing text on the GPU if there is one, then
# the small llama of models/kjv-llama-q8_0.gguf through the GGUF runtime.
run: build
	$(BUILD)/pxl info
	$(BUILD)/pxl generate
	$(BUILD)/pxl generate -m models/kjv-llama-q8_0.gguf -p "And God said" --tokens 120

test: build
	cd $(BUILD) && PXL_REQUIRE_VOCAB=1 PXL_REQUIRE_NIST=1 ctest --output-on-failure -j $(JOBS)

bench: build
	$(BUILD)/pxl bench dot

# Reconfigures with the prefix so the library's compiled-in search path for
# the Dawn library (<prefix>/lib/pxl/) is right.
install: configure
	@cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD) build-asan build-clang build-fuzz
