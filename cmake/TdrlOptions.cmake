# Build-wide settings: compiler cache, sanitizers, warnings, and the helper that gives a
# target the project's compile options, its unity batches and a precompiled LibTorch header.

find_program(TDRL_CCACHE ccache)
if(TDRL_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_CXX_COMPILER_LAUNCHER "${TDRL_CCACHE}")
endif()

# A fuzz build instruments every target for libFuzzer coverage and AddressSanitizer; the fuzz
# targets themselves (tests/CMakeLists.txt) link -fsanitize=fuzzer.
if(TDRL_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "TDRL_FUZZ needs clang: configure with -DCMAKE_CXX_COMPILER=clang++")
  endif()
  if(NOT TDRL_SANITIZE)
    set(TDRL_SANITIZE address)
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

if(TDRL_SANITIZE)
  message(STATUS "tdrl: building with -fsanitize=${TDRL_SANITIZE}")
  add_compile_options(-fsanitize=${TDRL_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${TDRL_SANITIZE})
  if(TDRL_SANITIZE MATCHES "undefined")
    # LibTorch's at::indexing::TensorIndex leaves its bool member uninitialised unless it is
    # a bool index, and its implicit copy reads it: every copy of an index would be reported.
    add_compile_options(-fno-sanitize=bool)
  endif()
endif()

# Two ways to compile LibTorch's headers less often, used together:
#
# - Unity batches. Most of a source's compile time is LibTorch's headers: parsing them, then
#   instantiating and optimising the inline functions the source uses. A batch of sources
#   compiled as one translation unit pays for both once per batch instead of once per source.
#   The batch files are generated in the build folder and include their sources by a path
#   relative to themselves, so two clones of one commit compile byte-identical inputs (ccache's
#   base_dir then reuses the first clone's objects in the second: scripts/common.sh).
#   -DTDRL_UNITY_BUILD=OFF compiles every source on its own (an IDE's per-file view; with
#   -DTDRL_PCH=OFF too, it checks that each library source includes what it uses).
# - Precompiled headers, shared. A PCH saves the parsing (about 9 s a translation unit on the
#   2-core reference machine) but not the instantiation, and building one costs about 25 s, so
#   three are built and every target reuses (REUSE_FROM) one of them: the position-independent
#   libraries' (the LibTorch parts their sources include: tensors, autograd, nn::Module and the
#   common layers), the GoogleTest programs' (<torch/torch.h>, GoogleTest, GoogleMock) and the
#   other programs' (<torch/torch.h>: benchmarks, tools, examples). A GCC PCH is only used for
#   sources compiled with the same -fpic/-fpie setting and the same definitions of the macros its
#   headers test (GoogleTest's GTEST_* for instance); -Winvalid-pch reports a target whose flags
#   no longer match its PCH (clang refuses such a PCH outright). Other compilers get a PCH for
#   each target.
#   Under clang a target loads its PCH with -include-pch alone. CMake's default adds
#   `-Xclang -include -Xclang <absolute path of the PCH's header>`, which changes nothing clang
#   compiles (the PCH holds that header) but which ccache neither recognises as a path (so every
#   clone hashes its own) nor accepts beside -include-pch ("multiple precompiled headers").
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  set(CMAKE_CXX_COMPILE_OPTIONS_USE_PCH -Xclang -include-pch -Xclang <PCH_FILE>)
endif()
option(TDRL_PCH "Precompile the LibTorch headers (three shared PCHs)" ON)
option(TDRL_UNITY_BUILD "Compile each target's sources in batches (a faster clean build)" ON)
set(TDRL_UNITY_BATCH_SIZE 12 CACHE STRING "Sources per unity batch (TDRL_UNITY_BUILD)")

# Replaces the .cpp sources of `target` by batches of up to TDRL_UNITY_BATCH_SIZE, in the order
# listed; the sources stay listed, as headers, for IDEs. A target of one source is left as it is.
# Generated sources, and those marked SKIP_UNITY_BUILD_INCLUSION (a source with definitions of its
# own), are compiled on their own.
function(_tdrl_unity_batches target)
  get_target_property(sources ${target} SOURCES)
  set(batch ${TDRL_UNITY_BATCH_SIZE})
  set(cpp)
  foreach(source IN LISTS sources)
    if(NOT source MATCHES "\\.cpp$")
      continue()
    endif()
    get_source_file_property(generated ${source} GENERATED)
    get_source_file_property(skip ${source} SKIP_UNITY_BUILD_INCLUSION)
    if(NOT generated AND NOT skip)
      get_filename_component(path ${source} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
      list(APPEND cpp ${path})
    endif()
  endforeach()
  list(LENGTH cpp count)
  if(count LESS 2 OR batch LESS 2)
    return()
  endif()
  set_source_files_properties(${cpp} PROPERTIES HEADER_FILE_ONLY ON)
  # As few batches as the size allows, of even sizes (11 sources in batches of 6: 6 and 5).
  math(EXPR batches "(${count} + ${batch} - 1) / ${batch}")
  math(EXPR batch "(${count} + ${batches} - 1) / ${batches}")
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/${target}.unity)
  set(index 0)
  set(unity_sources)
  while(cpp)
    set(content "// Generated by tdrl_target_defaults (cmake/TdrlOptions.cmake): one unity batch of ${target}.\n")
    foreach(i RANGE 1 ${batch})
      if(NOT cpp)
        break()
      endif()
      list(POP_FRONT cpp path)
      file(RELATIVE_PATH relative ${dir} ${path})
      string(APPEND content "#include \"${relative}\"\n")
    endforeach()
    set(file ${dir}/unity_${index}.cpp)
    # Written only when its content changes, so that a reconfigure rebuilds nothing.
    file(CONFIGURE OUTPUT ${file} CONTENT "${content}" @ONLY)
    list(APPEND unity_sources ${file})
    math(EXPR index "${index} + 1")
  endwhile()
  target_sources(${target} PRIVATE ${unity_sources})
endfunction()

# GCC collects its own garbage every time its heap grows by 30% past 128 MB, and a translation
# unit that includes LibTorch grows it to 1-3 GB. Collecting less often (at 4x growth past 4 GB)
# cut a 36.6 s test batch to 33.1 s for 10% more memory (2.3 GB). The parameters change when the
# compiler frees its memory, never what it generates or checks.
set(TDRL_COMPILER_GC_OPTIONS)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  set(TDRL_COMPILER_GC_OPTIONS --param=ggc-min-expand=400 --param=ggc-min-heapsize=4194304)
endif()

function(_tdrl_pch_donor name kind)
  if(TARGET ${name})
    return()
  endif()
  add_library(${name} STATIC ${PROJECT_SOURCE_DIR}/cmake/pch_donor.cpp)
  target_link_libraries(${name} PRIVATE torch)
  target_compile_options(${name} PRIVATE ${TDRL_COMPILER_GC_OPTIONS})
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    # clang stamps a precompiled header with its build time, and ccache would refuse every
    # object built with one.
    target_compile_options(${name} PRIVATE "SHELL:-Xclang -fno-pch-timestamp")
    # The PCH records the checkout's absolute paths; its .sum (cmake/pch_sum.sh) does not, so
    # that ccache reuses the objects built with it in another clone.
    if(CMAKE_CXX_COMPILER_LAUNCHER)
      set_target_properties(${name} PROPERTIES CXX_COMPILER_LAUNCHER
        "${PROJECT_SOURCE_DIR}/cmake/pch_sum.sh;${CMAKE_CXX_COMPILER_LAUNCHER}")
    endif()
  endif()
  if(kind STREQUAL "pic")
    set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
    set(headers <torch/types.h> <torch/utils.h> <torch/nn/module.h>
      <torch/nn/modules/activation.h> <torch/nn/modules/container/any.h>
      <torch/nn/modules/container/sequential.h> <torch/nn/modules/linear.h>)
  elseif(kind STREQUAL "test")
    target_link_libraries(${name} PRIVATE GTest::gtest GTest::gmock)
    set(headers <torch/torch.h> <gtest/gtest.h> <gmock/gmock.h>)
  else()
    set(headers <torch/torch.h>)
  endif()
  target_precompile_headers(${name} PRIVATE ${headers})
endfunction()

# tdrl_target_defaults(<target> [NO_PCH])
#   Gives `target` the project's warnings, link options, unity batches and a precompiled LibTorch
#   header (above). Call it after the target's last target_sources, its target_link_libraries and
#   its POSITION_INDEPENDENT_CODE property: they pick the batches and the PCH. NO_PCH is for a
#   program whose sources include little of LibTorch (tdrl-train's main), which loading the
#   600 MB header would make slower, not faster.
function(tdrl_target_defaults target)
  cmake_parse_arguments(ARG "NO_PCH" "" "" ${ARGN})
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter
    ${TDRL_COMPILER_GC_OPTIONS})
  # A shared library's calls to its own functions bind inside it instead of through the PLT
  # (nothing interposes them; plugins only call in). Without it CartPole's step, a chain of
  # small calls across EnvBase and TensorDict, measured 15-25% slower than the static build.
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "SHARED_LIBRARY")
    target_link_options(${target} PRIVATE -Wl,-Bsymbolic-functions)
  endif()
  if(TDRL_UNITY_BUILD)
    _tdrl_unity_batches(${target})
  endif()
  if(NOT TDRL_PCH OR ARG_NO_PCH)
    return()
  endif()
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "^(GNU|Clang)$")
    target_precompile_headers(${target} PRIVATE <torch/torch.h>)
    return()
  endif()
  target_compile_options(${target} PRIVATE -Winvalid-pch)
  get_target_property(pic ${target} POSITION_INDEPENDENT_CODE)
  get_target_property(libs ${target} LINK_LIBRARIES)
  if(pic)
    set(kind pic)
  elseif(libs MATCHES "GTest::")
    set(kind test)
  else()
    set(kind exe)
  endif()
  _tdrl_pch_donor(tdrl_pch_${kind} ${kind})
  target_precompile_headers(${target} REUSE_FROM tdrl_pch_${kind})
endfunction()
