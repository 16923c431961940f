#!/usr/bin/env bash
# Installs the Debian packages torchperf needs on Debian 12; idempotent: installs only what is
# missing. LibTorch itself is not one of them: it is the .venv's torch (scripts/setup-venv.sh,
# pinned in requirements.txt), which brings its own BLAS (MKL) and OpenMP.
set -euo pipefail

packages=(
  build-essential cmake ccache pkg-config
  ninja-build             # the build: compiles every target's batches at once, not library by library
  libjemalloc2 libtcmalloc-minimal4 libmimalloc2.0      # knob allocator: preloaded into workers
  libboost-dev            # Boost.Math: Student-t quantiles for confidence intervals
  libcli11-dev            # command-line parsing
  libcpp-httplib-dev      # serve and load: the HTTP server and client (open inference protocol)
  nlohmann-json3-dev      # JSON results and schema
  libsimdjson-dev         # trace: each profiler-trace event parsed in place (On Demand)
  zlib1g-dev              # trace: gzip traces inflated as a stream
  libjpeg62-turbo-dev     # train: JPEG decoding of image folders (libjpeg-turbo)
  libpng-dev              # train: PNG decoding of image folders
  libgtest-dev libgmock-dev googletest  # unit and CLI tests
  libbenchmark-dev        # harness-overhead benchmark in bench/
  python3 python3-venv    # the project's .venv (torch, numpy, pillow: requirements.txt)
  chromium                # the HTML report's browser test (headless)
  curl                    # tests: a served program's metrics read over loopback
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
