# Compile options every torchperf target shares (warnings, sanitizers, the shared precompiled header).
# torchperf_base_options holds all but LibTorch: the torch-free parts (page, advice, trace) use it
# alone, so that their link lines hold no LibTorch; torchperf_options adds torch.
add_library(torchperf_base_options INTERFACE)
target_link_libraries(torchperf_base_options INTERFACE fmt::fmt nlohmann_json::nlohmann_json)
target_compile_options(torchperf_base_options INTERFACE -Wall -Wextra -Wno-unused-parameter)
if(TORCHPERF_WERROR)
  target_compile_options(torchperf_base_options INTERFACE -Werror)
endif()
add_library(torchperf_options INTERFACE)
# Every torch target sees the same defines (torch's ABI flag …) so the shared PCH is valid.
target_link_libraries(torchperf_options INTERFACE torchperf_base_options torch)
if(TORCHPERF_SANITIZE)
  # -O1 -g1 after the build type's flags: under both sanitizers -O2 -g costs 2.5x the compile time
  # (76 s vs 30 s for bench_runner.cpp here), and line tables are all a sanitizer report needs.
  # At -O1 GCC 12 reports maybe-uninitialized inside LibTorch's data loader (c10::optional),
  # a known false positive that -Werror would turn into a failed build.
  target_compile_options(torchperf_base_options INTERFACE -fsanitize=address,undefined
                         -fno-omit-frame-pointer -O1 -g1 -Wno-maybe-uninitialized)
  target_link_options(torchperf_base_options INTERFACE -fsanitize=address,undefined)
endif()
if(TORCHPERF_FAULT_INJECTION)
  target_compile_definitions(torchperf_base_options INTERFACE TORCHPERF_FAULT_INJECTION=1)
endif()
target_compile_definitions(torchperf_base_options INTERFACE
  TORCHPERF_VERSION="${PROJECT_VERSION}" TORCHPERF_BUILD_TYPE="${CMAKE_BUILD_TYPE}")

# One precompiled header with the heavy torch includes; every target reuses it.
add_library(torchperf_pch OBJECT ${PROJECT_SOURCE_DIR}/cmake/pch.cpp)
target_link_libraries(torchperf_pch PRIVATE torchperf_options)
target_precompile_headers(torchperf_pch PRIVATE
  <torch/script.h> <torch/torch.h> <nlohmann/json.hpp> <fmt/format.h>
  <string> <vector> <map> <memory> <functional> <chrono>)

function(torchperf_use_pch target)
  target_precompile_headers(${target} REUSE_FROM torchperf_pch)
endfunction()
