# Front door: `make demo` and `make test` do all set-up on a fresh Debian 12 machine.
BUILD      ?= build
BUILD_TYPE ?= Release
JOBS       ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps venv configure cli build test demo bench gpu-build clean

all: build

deps:
	@scripts/install-deps.sh

# The project's .venv with requirements.txt (torch==2.13.0: the LibTorch torchperf links). Set
# TORCHPERF_LIBTORCH=/path/to/libtorch to build against another LibTorch >= 2.11 (CUDA too).
venv: deps
	@scripts/setup-venv.sh

# Ninja: a library's objects compile while the libraries it links are still compiling (Make's
# generator waits target by target). A build folder made by another generator is configured anew.
configure: venv
	@if [ -f $(BUILD)/CMakeCache.txt ] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$$' $(BUILD)/CMakeCache.txt; then \
	  echo "configure: $(BUILD) was made by another generator; configuring it for Ninja"; \
	  rm -rf $(BUILD)/CMakeCache.txt $(BUILD)/CMakeFiles; fi
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS) > $(BUILD).configure.log 2>&1 \
	  || (cat $(BUILD).configure.log; exit 1)

build: configure
	cmake --build $(BUILD) -j$(JOBS)

# Only the CLI: the first result comes sooner; `make test` builds the rest.
cli: configure
	cmake --build $(BUILD) -j$(JOBS) --target torchperf_cli

test: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

# The main job on a built-in model: a short tune of resnet18 at batch 8 across the runtimes
# (TorchScript and AOTInductor from C++, eager and torch.compile in Python: the built-in is defined
# in Python and exported on first use), each point in its own worker process, then the leaders
# re-measured head to head; a few minutes here.
DEMO_OUT ?= $(BUILD)/demo-tune
demo: cli
	rm -rf $(DEMO_OUT)
	$(BUILD)/torchperf tune builtin:resnet18 --batch 8 \
	  --space 'runtime=cpp,python;graph=eager,frozen-opt,aoti,compile;format=contiguous,channels_last;grad=on,inference' \
	  --time 2 --budget 6m --out $(DEMO_OUT)
	@echo "the journal's schema: docs/results-schema.md"
	@echo "the report (open it in a browser; it works offline): $(DEMO_OUT)/report.html"

# Speed checks that print ratios measured side by side in one run (never part of `make test`).
bench: build
	bench/run.sh $(BUILD)

# The CUDA build, on a machine without a GPU: the CLI and the CUDA-labelled tests against PyPI's
# torch==2.11.0 wheel (LibTorch 2.11.0+cu130) and the CUDA 13.0 toolkit, bundled for a GPU machine
# (scripts/gpu_check.sh runs it there; docs/gpu.md).
gpu-build: venv
	scripts/gpu_build.sh build-cuda

clean:
	rm -rf $(BUILD) $(BUILD).configure.log
