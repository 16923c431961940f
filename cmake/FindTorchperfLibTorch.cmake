# Finds the LibTorch torchperf builds against: the project's .venv's torch (scripts/setup-venv.sh,
# torch.utils.cmake_prefix_path) unless TORCHPERF_LIBTORCH names another one (an unpacked LibTorch
# or a site-packages/torch folder, CPU or CUDA, >= 2.11). Binaries find it again through RPATH.
# The supported range's one definition is python/torchperf/_supported.py (the package's build and
# import check read it too).
file(STRINGS "${PROJECT_SOURCE_DIR}/python/torchperf/_supported.py" torchperf_min_line
     REGEX "^MIN_TORCH = \\(([0-9]+), ([0-9]+)\\)")
string(REGEX REPLACE "^MIN_TORCH = \\(([0-9]+), ([0-9]+)\\).*" "\\1.\\2" TORCHPERF_MIN_TORCH
       "${torchperf_min_line}")
set(TORCHPERF_LIBTORCH "$ENV{TORCHPERF_LIBTORCH}" CACHE PATH
    "LibTorch to build against (default: the .venv's torch)")
set(TORCHPERF_VENV "${PROJECT_SOURCE_DIR}/.venv" CACHE PATH "The project's Python venv")
set(TORCHPERF_PYTHON "${TORCHPERF_VENV}/bin/python" CACHE FILEPATH
    "The Python that makes test fixtures and runs the Python peers (the venv's)")

if(TORCHPERF_LIBTORCH)
  set(torchperf_torch_prefix "${TORCHPERF_LIBTORCH}")
  if(EXISTS "${TORCHPERF_LIBTORCH}/share/cmake/Torch")
    set(torchperf_torch_prefix "${TORCHPERF_LIBTORCH}/share/cmake")
  endif()
else()
  if(NOT EXISTS "${TORCHPERF_PYTHON}")
    message(FATAL_ERROR "torchperf: no Python venv at ${TORCHPERF_VENV}: run `make venv` "
                        "(or set TORCHPERF_LIBTORCH to a LibTorch >= ${TORCHPERF_MIN_TORCH})")
  endif()
  execute_process(
    COMMAND "${TORCHPERF_PYTHON}" -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
    OUTPUT_VARIABLE torchperf_torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE
    ERROR_VARIABLE torchperf_torch_error RESULT_VARIABLE torchperf_torch_rc)
  if(NOT torchperf_torch_rc EQUAL 0)
    message(FATAL_ERROR "torchperf: ${TORCHPERF_PYTHON} cannot import torch: run `make venv` "
                        "(it installs requirements.txt)")
  endif()
endif()
list(PREPEND CMAKE_PREFIX_PATH "${torchperf_torch_prefix}")
find_package(Torch CONFIG QUIET)
if(NOT Torch_FOUND)
  message(FATAL_ERROR "torchperf: no LibTorch CMake package under ${torchperf_torch_prefix} "
                      "(expected share/cmake/Torch/TorchConfig.cmake): run `make venv`, or point "
                      "TORCHPERF_LIBTORCH at a LibTorch >= ${TORCHPERF_MIN_TORCH}")
endif()
if(Torch_VERSION VERSION_LESS TORCHPERF_MIN_TORCH)
  message(FATAL_ERROR "torchperf: LibTorch ${Torch_VERSION} at ${Torch_DIR} is older than "
                      "${TORCHPERF_MIN_TORCH}: run `make venv` (torch==2.13.0 from requirements.txt), "
                      "or point TORCHPERF_LIBTORCH at a LibTorch >= ${TORCHPERF_MIN_TORCH}")
endif()
message(STATUS "torchperf: LibTorch ${Torch_VERSION} from ${Torch_DIR}")
# Installed binaries keep finding the LibTorch they were linked with, as build-tree ones do.
set(CMAKE_INSTALL_RPATH_USE_LINK_PATH ON)
