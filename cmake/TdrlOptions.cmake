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

# Precompiled LibTorch headers, shared. A GCC PCH is only used for sources compiled with the same
# -fpic/-fpie setting and the same definitions of the macros its headers test (GoogleTest's
# GTEST_* for instance), and building one costs about as much as compiling a large source. So
# each target reuses (REUSE_FROM) one of three PCHs instead of building its own: the
# position-independent libraries', the GoogleTest programs' (which also holds GoogleTest and
# GoogleMock), and the other executables' (benchmarks, tools, examples). -Winvalid-pch reports a
# target whose flags no longer match its PCH. Other compilers (clang, for the fuzz build) check
# flags strictly, so there each target gets its own PCH.
function(_tdrl_pch_donor name kind)
  if(TARGET ${name})
    return()
  endif()
  add_library(${name} STATIC ${PROJECT_SOURCE_DIR}/cmake/pch_donor.cpp)
  target_link_libraries(${name} PRIVATE torch)
  set(headers <torch/torch.h>)
  if(kind STREQUAL "pic")
    set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  elseif(kind STREQUAL "test")
    target_link_libraries(${name} PRIVATE GTest::gtest GTest::gmock)
    list(APPEND headers <gtest/gtest.h> <gmock/gmock.h>)
  endif()
  target_precompile_headers(${name} PRIVATE ${headers})
endfunction()

# Gives `target` the project's warnings and a precompiled LibTorch header (see above). Call it
# after target_link_libraries and the POSITION_INDEPENDENT_CODE property: they pick the PCH.
function(tdrl_target_defaults target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  # A shared library's calls to its own functions bind inside it instead of through the PLT
  # (nothing interposes them; plugins only call in). Without it CartPole's step, a chain of
  # small calls across EnvBase and TensorDict, measured 15-25% slower than the static build.
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "SHARED_LIBRARY")
    target_link_options(${target} PRIVATE -Wl,-Bsymbolic-functions)
  endif()
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
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
