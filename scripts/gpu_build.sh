#!/bin/bash
# The CUDA build of torchperf, made on a machine without a GPU, and the bundle a GPU machine runs
# (scripts/gpu_check.sh): the CLI and the CUDA-labelled test programs built against PyPI's
# torch==2.11.0 wheel (its LibTorch is 2.11.0+cu130, what the GPU machine's python3 runs) and this
# machine's CUDA 13.0 toolkit. cuBLAS, cuDNN and NCCL come from the GPU machine's own packages at
# run time: the link allows undefined symbols in the shared libraries it names.
#
#   scripts/gpu_build.sh [BUILD_DIR]      (make gpu-build; BUILD_DIR defaults to build-cuda)
#
# Environment: TORCHPERF_CUDA_TORCH (a folder holding the wheel's unpacked torch/, default
# ~/.cache/torchperf/torch-2.11.0-cu130; the 530 MB wheel is downloaded once into it),
# CUDA_HOME (default /usr/local/cuda-13.0), JOBS.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-cuda}
WHEEL_DIR=${TORCHPERF_CUDA_TORCH:-$HOME/.cache/torchperf/torch-2.11.0-cu130}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda-13.0}
JOBS=${JOBS:-$(nproc)}
PYTHON=${PYTHON:-python3}

if [ ! -d "$CUDA_HOME/bin" ]; then
  echo "gpu-build: no CUDA toolkit at $CUDA_HOME (set CUDA_HOME to the CUDA 13.0 toolkit's folder)" >&2
  exit 2
fi
if [ ! -f "$WHEEL_DIR/torch/share/cmake/Torch/TorchConfig.cmake" ]; then
  mkdir -p "$WHEEL_DIR"
  if ! ls "$WHEEL_DIR"/torch-2.11.0-*.whl > /dev/null 2>&1; then
    echo "gpu-build: downloading PyPI's torch==2.11.0 wheel (the +cu130 build, 530 MB) into $WHEEL_DIR"
    "$PYTHON" -m pip download --no-deps --only-binary=:all: -d "$WHEEL_DIR" torch==2.11.0
  fi
  echo "gpu-build: unpacking its torch/ folder"
  (cd "$WHEEL_DIR" && "$PYTHON" -m zipfile -e torch-2.11.0-*.whl unpacked && rm -rf torch &&
   mv unpacked/torch torch && rm -rf unpacked)
fi

TORCHPERF_LIBTORCH="$WHEEL_DIR/torch" cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCUDA_TOOLKIT_ROOT_DIR="$CUDA_HOME" -DCMAKE_CUDA_COMPILER="$CUDA_HOME/bin/nvcc" \
  -DCMAKE_EXE_LINKER_FLAGS=-Wl,--allow-shlib-undefined \
  -DCMAKE_SHARED_LINKER_FLAGS=-Wl,--allow-shlib-undefined > "$BUILD.configure.log" 2>&1 ||
  { cat "$BUILD.configure.log"; exit 1; }
cmake --build "$BUILD" -j"$JOBS" --target torchperf_cli torchperf_runtime_tests

# The bundle: the programs, stripped, and the libraries they need that are neither LibTorch's,
# CUDA's nor the C and C++ runtimes (Debian's libjpeg, libpng, cpp-httplib, simdjson, brotli).
BUNDLE="$BUILD/gpu-bundle"
rm -rf "$BUNDLE"
mkdir -p "$BUNDLE/lib" "$BUNDLE/tests"
strip -o "$BUNDLE/torchperf" "$BUILD/torchperf"
strip -o "$BUNDLE/tests/torchperf_runtime_tests" "$BUILD/tests/torchperf_runtime_tests"
for lib in $(LD_LIBRARY_PATH="$WHEEL_DIR/torch/lib:$CUDA_HOME/lib64" ldd "$BUNDLE/torchperf" \
               "$BUNDLE/tests/torchperf_runtime_tests" | awk '/=> \// {print $3}' | sort -u); do
  case "$(basename "$lib")" in
    libtorch*|libc10*|libcaffe2*|libgomp*|libc.so*|libm.so*|libstdc++*|libgcc_s*|libpthread*|\
    libdl.so*|librt.so*|libutil.so*|libresolv*|ld-linux*|libz.so*|libssl*|libcrypto*|libcu*|libnv*|libnccl*|libcudnn*) ;;
    *) cp -L "$lib" "$BUNDLE/lib/" ;;
  esac
done
du -sh "$BUNDLE"
echo "gpu-build: $BUNDLE is ready; on a GPU machine, from this folder: scripts/gpu_check.sh $BUNDLE OUT"
