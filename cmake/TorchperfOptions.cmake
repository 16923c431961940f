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
if(NOT TORCHPERF_SANITIZE)
  # libstdc++ first among a program's libraries, so the C++ runtime's own symbols are the ones its
  # calls bind to. PyPI's torch 2.11.0+cu130 exports from libtorch.so copies of 92 std::filesystem
  # functions whose recursive_directory_iterator calls are weak and unresolved: bound there,
  # std::filesystem::remove_all jumped to address 0 (bench --vs and the Python runtime on the GPU
  # machine, issue 40). The sanitizers' runtime must come first instead, and their builds link the
  # CPU wheel, which exports none.
  target_link_options(torchperf_base_options INTERFACE
                      "LINKER:--push-state,--no-as-needed,-lstdc++,--pop-state")
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

# Two costs dominate a build from scratch, and both are paid per translation unit, not per line:
# loading the ~750 MB header (~7 s, twice what a torch-free file takes to compile without it) and
# emitting again each inline torch function a file uses. So a target's sources are compiled in
# batches (CMake's unity build): the ones that reach torch's headers together, with the PCH, and
# the torch-free ones together, without it (12 files of models: 48 s as one unit, 230 s apart).
set(TORCHPERF_UNITY_BATCH 8 CACHE STRING
    "Sources compiled as one translation unit (unity build, per target); 0 compiles each alone")

if(TORCHPERF_UNITY_BATCH GREATER 0)
  # In a batch a source file is an included file, and GCC then reports a type with internal
  # linkage (a .cpp's anonymous-namespace helper) held by a class of the file: sound in a .cpp.
  target_compile_options(torchperf_base_options INTERFACE -Wno-subobject-linkage)
endif()

# Whether a file reaches a torch/ or ATen/ header, through the project's own includes (c10's
# are light). A file that starts to include torch is only misplaced until the next configure (it
# compiles, slower); one that leans on the PCH for torch without including it fails, visibly.
function(torchperf_includes_torch file result)
  get_property(known GLOBAL PROPERTY "torchperf_torch_${file}" SET)
  if(known)
    get_property(value GLOBAL PROPERTY "torchperf_torch_${file}")
    set(${result} ${value} PARENT_SCOPE)
    return()
  endif()
  set_property(GLOBAL PROPERTY "torchperf_torch_${file}" OFF)  # cycles end here
  set(value OFF)
  file(STRINGS "${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
  get_filename_component(dir "${file}" DIRECTORY)
  foreach(line IN LISTS lines)
    if(line MATCHES "[<\"](torch|ATen|caffe2)/")
      set(value ON)
      break()
    endif()
    if(NOT line MATCHES "[<\"]([^>\"]+)[>\"]")
      continue()
    endif()
    set(name "${CMAKE_MATCH_1}")
    foreach(base IN ITEMS "${dir}" "${PROJECT_SOURCE_DIR}/include" "${PROJECT_SOURCE_DIR}/tests"
                          "${PROJECT_SOURCE_DIR}/src" "${PROJECT_SOURCE_DIR}/apps/torchperf")
      if(EXISTS "${base}/${name}" AND NOT IS_DIRECTORY "${base}/${name}")
        get_filename_component(header "${base}/${name}" ABSOLUTE)
        torchperf_includes_torch("${header}" header_torch)
        if(header_torch)
          set(value ON)
        endif()
        break()
      endif()
    endforeach()
    if(value)
      break()
    endif()
  endforeach()
  set_property(GLOBAL PROPERTY "torchperf_torch_${file}" ${value})
  set(${result} ${value} PARENT_SCOPE)
endfunction()

# Batches target's sources by whether they reach torch; with_pch: the torch batches use the PCH.
function(torchperf_batch_sources target with_pch)
  if(with_pch)
    target_precompile_headers(${target} REUSE_FROM torchperf_pch)
  endif()
  get_target_property(sources ${target} SOURCES)
  get_target_property(source_dir ${target} SOURCE_DIR)
  get_target_property(binary_dir ${target} BINARY_DIR)
  set(torch_sources "")
  set(plain_sources "")
  foreach(source IN LISTS sources)
    get_filename_component(path "${source}" ABSOLUTE BASE_DIR "${source_dir}")
    get_source_file_property(alone "${source}" TARGET_DIRECTORY ${target} SKIP_UNITY_BUILD_INCLUSION)
    set(uses_torch OFF)
    if(EXISTS "${path}")  # generated sources (git commit, web assets) hold no torch
      torchperf_includes_torch("${path}" uses_torch)
    endif()
    if(NOT uses_torch)
      set_source_files_properties("${source}" TARGET_DIRECTORY ${target} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
    endif()
    if(NOT path MATCHES "\\.cpp$" OR NOT EXISTS "${path}" OR alone)
      continue()  # generated and set-apart sources compile alone
    endif()
    if(uses_torch)
      list(APPEND torch_sources "${source}")
    else()
      list(APPEND plain_sources "${source}")
    endif()
  endforeach()
  if(TORCHPERF_UNITY_BATCH LESS 1)
    return()
  endif()
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_MODE GROUP)
  foreach(kind IN ITEMS torch plain)
    list(LENGTH ${kind}_sources count)
    if(count EQUAL 0)
      continue()
    endif()
    math(EXPR groups "(${count} + ${TORCHPERF_UNITY_BATCH} - 1) / ${TORCHPERF_UNITY_BATCH}")
    set(index 0)
    foreach(source IN LISTS ${kind}_sources)
      math(EXPR group "${index} % ${groups}")
      set_source_files_properties("${source}" TARGET_DIRECTORY ${target} PROPERTIES UNITY_GROUP ${kind}_${group})
      math(EXPR index "${index} + 1")
    endforeach()
    if(kind STREQUAL "plain" AND with_pch)
      math(EXPR last "${groups} - 1")
      foreach(group RANGE ${last})
        set_source_files_properties(
          "${binary_dir}/CMakeFiles/${target}.dir/Unity/unity_plain_${group}_cxx.cxx"
          TARGET_DIRECTORY ${target} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
      endforeach()
    endif()
  endforeach()
endfunction()

function(torchperf_use_pch target)
  torchperf_batch_sources(${target} ON)
endfunction()
