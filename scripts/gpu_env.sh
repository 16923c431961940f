# Sourced by the GPU checks (gpu_check.sh, gpu_train_check.sh) with BUNDLE set: the machine's own
# PyTorch libraries first, then the bundle's; the Python side from this copy of the repository;
# TP, the bundle's torchperf.
TORCH_LIB=$(python3 -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
export LD_LIBRARY_PATH="$TORCH_LIB:$BUNDLE/lib"
export TORCHPERF_PYTHON=$(command -v python3) TORCHPERF_PYTHON_PATH=$PWD/python PYTHONPATH=$PWD/python
export TORCHPERF_CACHE_DIR=${TORCHPERF_CACHE_DIR:-/tmp/torchperf-gpu-cache}
export PYTHONUNBUFFERED=1
TP="$BUNDLE/torchperf"
