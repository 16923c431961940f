#!/usr/bin/env bash
# Installs what torchperf needs on Debian 12; idempotent: installs only what is missing.
# Also points libblas.so.3 at OpenBLAS: Debian's LibTorch takes its BLAS through that alternative,
# and the reference (netlib) BLAS it falls back to makes every fp32 matmul 30-50x slower.
set -euo pipefail

packages=(
  build-essential cmake ccache pkg-config
  libtorch-dev            # LibTorch 1.13 (CPU, oneDNN): the engine being measured
  libopenblas0-openmp     # a real BLAS for LibTorch's fp32 GEMM (see above)
  libopenblas0-pthread libblis4-openmp libblis4-pthread  # knob blas: other libblas.so.3 providers
  libjemalloc2 libtcmalloc-minimal4 libmimalloc2.0      # knob allocator: preloaded into workers
  libboost-dev            # Boost.Math: Student-t quantiles for confidence intervals
  libcli11-dev            # command-line parsing
  libcpp-httplib-dev      # serve and load: the HTTP server and client (open inference protocol)
  nlohmann-json3-dev      # JSON results and schema
  libsimdjson-dev         # trace: each profiler-trace event parsed in place (On Demand)
  zlib1g-dev              # trace: gzip traces inflated as a stream
  libfmt-dev              # formatting of tables and messages
  libjpeg62-turbo-dev     # train: JPEG decoding of image folders (libjpeg-turbo)
  libpng-dev              # train: PNG decoding of image folders
  python3-pil python3-numpy  # test fixtures: the image folders train reads
  libgtest-dev libgmock-dev googletest  # unit and CLI tests
  libbenchmark-dev        # harness-overhead benchmark in bench/
  python3 python3-torch python3-torchvision  # test fixtures and the Python comparison benchmark only
  chromium                # the HTML report's browser test (headless)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# node and npm fetch the report's plotting libraries at build time (package-lock.json). A machine
# may already have them from another source (NodeSource's nodejs bundles npm): keep those.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then missing+=(nodejs npm); fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

if [ "${#missing[@]}" -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all packages present"
fi

# Prefer OpenBLAS over the reference BLAS for LibTorch's libblas.so.3.
alt="libblas.so.3-$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)"
openblas="/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)/openblas-openmp/libblas.so.3"
if [ -e "$openblas" ]; then
  current=$(update-alternatives --query "$alt" 2>/dev/null | sed -n 's/^Value: //p')
  if [ "$current" != "$openblas" ]; then
    echo "install-deps: pointing $alt at $openblas"
    $SUDO update-alternatives --set "$alt" "$openblas"
  fi
fi
