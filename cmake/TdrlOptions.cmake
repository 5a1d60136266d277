# Build-wide settings: compiler cache, sanitizers, warnings, and the helper that gives a
# target the project's compile options and a precompiled LibTorch header.

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

# Gives `target` the project's warnings and a private precompiled header for the LibTorch
# headers it uses (each PCH is built once per target, then every source reuses it).
function(tdrl_target_defaults target)
  cmake_parse_arguments(ARG "" "" "PCH" ${ARGN})
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  if(ARG_PCH)
    target_precompile_headers(${target} PRIVATE ${ARG_PCH})
  else()
    target_precompile_headers(${target} PRIVATE <torch/types.h>)
  endif()
endfunction()
