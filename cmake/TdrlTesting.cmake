# How the GoogleTest binaries become ctest tests.
#
# Every test process loads LibTorch, which costs about 0.4 s before the first test runs. With one
# ctest per test case (gtest_discover_tests) the ~2,000 cases spent most of the suite's 9 minutes
# starting processes; run whole, the binaries take about 30 s. So by default each binary is run
# as a few GoogleTest shards (GTEST_TOTAL_SHARDS / GTEST_SHARD_INDEX), enough to keep `ctest -j`
# busy; a failure prints the failing case's name in the shard's output
# (`ctest --output-on-failure`).
#
# -DTDRL_TEST_PER_CASE=ON registers every test case as its own ctest instead, which is what an
# IDE's test explorer or `ctest -R Suite.Case` wants.
option(TDRL_TEST_PER_CASE "One ctest per GoogleTest case (slower: one process per case)" OFF)

# tdrl_add_gtests(<target> [SHARDS <n>] [TIMEOUT <s>])
#   Registers the GoogleTest binary <target> with ctest as <target>.shard<i>of<n> (default n=2,
#   timeout 600 s per shard), or per case with TDRL_TEST_PER_CASE.
function(tdrl_add_gtests target)
  cmake_parse_arguments(ARG "" "SHARDS;TIMEOUT" "" ${ARGN})
  if(NOT ARG_SHARDS)
    set(ARG_SHARDS 2)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  # Under AddressSanitizer, LeakSanitizer skips what third-party libraries keep (the file says
  # which and why).
  set(lsan)
  if(TDRL_SANITIZE MATCHES "address")
    set(lsan "LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/tests/lsan_suppressions.txt")
  endif()
  if(TDRL_TEST_PER_CASE)
    if(lsan)
      gtest_discover_tests(${target} DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60
        PROPERTIES ENVIRONMENT "${lsan}")
    else()
      gtest_discover_tests(${target} DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60)
    endif()
    return()
  endif()
  math(EXPR last "${ARG_SHARDS} - 1")
  foreach(index RANGE ${last})
    set(name ${target}.shard${index}of${ARG_SHARDS})
    # --gtest_brief keeps a passing shard's log short; failures still print in full.
    add_test(NAME ${name} COMMAND ${target} --gtest_brief=1
      WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
    set(environment "GTEST_TOTAL_SHARDS=${ARG_SHARDS};GTEST_SHARD_INDEX=${index}")
    if(lsan)
      list(APPEND environment "${lsan}")
    endif()
    set_tests_properties(${name} PROPERTIES
      ENVIRONMENT "${environment}"
      TIMEOUT ${ARG_TIMEOUT})
  endforeach()
endfunction()

# tdrl_add_test_binary(<target> SOURCES <src>... LIBS <lib>... [SHARDS <n>] [TIMEOUT <s>])
#   One GoogleTest binary: SOURCES linked with LIBS and GoogleTest (gtest_main), tests/ on its
#   include path (shared fixtures as "losses/off_policy_fixtures.h"), registered by
#   tdrl_add_gtests.
function(tdrl_add_test_binary target)
  cmake_parse_arguments(ARG "" "SHARDS;TIMEOUT" "SOURCES;LIBS" ${ARGN})
  # crash_backtrace.cpp: a crashing test binary prints where (no debugger needed).
  add_executable(${target} ${ARG_SOURCES} ${PROJECT_SOURCE_DIR}/tests/support/crash_backtrace.cpp)
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  target_link_libraries(${target} PRIVATE
    ${ARG_LIBS} GTest::gtest GTest::gmock GTest::gtest_main)
  tdrl_target_defaults(${target})
  set(options)
  if(ARG_SHARDS)
    list(APPEND options SHARDS ${ARG_SHARDS})
  endif()
  if(ARG_TIMEOUT)
    list(APPEND options TIMEOUT ${ARG_TIMEOUT})
  endif()
  tdrl_add_gtests(${target} ${options})
endfunction()

# The Python with tensordict that the memmap interop tests run (tests/python/tensordict_interop.py,
# tests/tensordict/memmap_python_interop_test.cpp): -DTDRL_PYTHON=<interpreter> (the PyPI lane's
# scripts/common.sh passes its .venv-torch), else the checkout's .venv-torch when this build links
# the LibTorch inside it. Debian's lane has neither: there those tests skip, saying how to run
# them. A TDRL_PYTHON that cannot import tensordict stops the configure, so a lane meant to run
# them cannot skip them unnoticed.
set(TDRL_PYTHON "" CACHE FILEPATH
  "Python with tensordict for the memmap interop tests (empty: .venv-torch when this build links its LibTorch)")
set(TDRL_INTEROP_PYTHON "")
set(_tdrl_python "${TDRL_PYTHON}")
set(_tdrl_venv "${PROJECT_SOURCE_DIR}/.venv-torch")
if(NOT _tdrl_python AND TDRL_TORCH_ROOT AND EXISTS "${_tdrl_venv}/bin/python")
  get_filename_component(_tdrl_venv_real "${_tdrl_venv}" REALPATH)
  string(FIND "${TDRL_TORCH_ROOT}/" "${_tdrl_venv_real}/" _tdrl_at)
  if(_tdrl_at EQUAL 0)
    set(_tdrl_python "${_tdrl_venv}/bin/python")
  endif()
endif()
if(_tdrl_python)
  execute_process(
    COMMAND "${_tdrl_python}" -c "import tensordict; print(tensordict.__version__)"
    RESULT_VARIABLE _tdrl_rc OUTPUT_VARIABLE _tdrl_version ERROR_VARIABLE _tdrl_error
    OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(_tdrl_rc EQUAL 0)
    set(TDRL_INTEROP_PYTHON "${_tdrl_python}")
    message(STATUS "tdrl: memmap interop tests run Python tensordict ${_tdrl_version} (${_tdrl_python})")
  elseif(TDRL_PYTHON)
    message(FATAL_ERROR "tdrl: TDRL_PYTHON=${TDRL_PYTHON} cannot import tensordict (${_tdrl_error}); "
      "install it there (scripts/setup.sh --torch pypi for .venv-torch), or configure with "
      "-DTDRL_PYTHON= to skip the memmap interop tests")
  else()
    message(WARNING "tdrl: ${_tdrl_python} cannot import tensordict, so the memmap interop tests "
      "skip; scripts/setup.sh --torch pypi installs it")
  endif()
endif()

# tdrl_test_build_paths(<target> [LAUNCHES <program target>] [PYTHON])
#   Compiles tests/support/build_paths.cpp into <target> with the checkout's path and, with
#   LAUNCHES, the path of the program it starts, with PYTHON, the interop tests' Python (above)
#   where there is one (tests/support/build_paths.h). Only that source carries the paths, so the
#   test sources compile the same in every checkout (ccache reuse).
function(tdrl_test_build_paths target)
  cmake_parse_arguments(ARG "PYTHON" "LAUNCHES" "" ${ARGN})
  set(source ${PROJECT_SOURCE_DIR}/tests/support/build_paths.cpp)
  set(definitions TDRL_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  if(ARG_LAUNCHES)
    list(APPEND definitions TDRL_LAUNCHED_PROGRAM="$<TARGET_FILE:${ARG_LAUNCHES}>")
    add_dependencies(${target} ${ARG_LAUNCHES})
  endif()
  if(ARG_PYTHON AND TDRL_INTEROP_PYTHON)
    list(APPEND definitions TDRL_PYTHON="${TDRL_INTEROP_PYTHON}")
  endif()
  # An object library of its own per test binary: the definitions apply to this source alone.
  add_library(${target}_build_paths OBJECT ${source})
  target_include_directories(${target}_build_paths PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  target_compile_definitions(${target}_build_paths PRIVATE ${definitions})
  target_compile_options(${target}_build_paths PRIVATE -Wall -Wextra)
  target_sources(${target} PRIVATE $<TARGET_OBJECTS:${target}_build_paths>)
endfunction()
