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
  if(TDRL_TEST_PER_CASE)
    gtest_discover_tests(${target} DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60)
    return()
  endif()
  math(EXPR last "${ARG_SHARDS} - 1")
  foreach(index RANGE ${last})
    set(name ${target}.shard${index}of${ARG_SHARDS})
    # --gtest_brief keeps a passing shard's log short; failures still print in full.
    add_test(NAME ${name} COMMAND ${target} --gtest_brief=1
      WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
    set_tests_properties(${name} PROPERTIES
      ENVIRONMENT "GTEST_TOTAL_SHARDS=${ARG_SHARDS};GTEST_SHARD_INDEX=${index}"
      TIMEOUT ${ARG_TIMEOUT})
  endforeach()
endfunction()

# tdrl_add_test_binary(<target> SOURCES <src>... LIBS <lib>... [SHARDS <n>] [TIMEOUT <s>])
#   One GoogleTest binary: SOURCES linked with LIBS and GoogleTest (gtest_main), tests/ on its
#   include path (shared fixtures as "losses/off_policy_fixtures.h"), registered by
#   tdrl_add_gtests.
function(tdrl_add_test_binary target)
  cmake_parse_arguments(ARG "" "SHARDS;TIMEOUT" "SOURCES;LIBS" ${ARGN})
  add_executable(${target} ${ARG_SOURCES})
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

# tdrl_test_build_paths(<target> [LAUNCHES <program target>])
#   Compiles tests/support/build_paths.cpp into <target> with the checkout's path and, with
#   LAUNCHES, the path of the program it starts (tests/support/build_paths.h). Only that source
#   carries the paths, so the test sources compile the same in every checkout (ccache reuse).
function(tdrl_test_build_paths target)
  cmake_parse_arguments(ARG "" "LAUNCHES" "" ${ARGN})
  set(source ${PROJECT_SOURCE_DIR}/tests/support/build_paths.cpp)
  set(definitions TDRL_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  if(ARG_LAUNCHES)
    list(APPEND definitions TDRL_LAUNCHED_PROGRAM="$<TARGET_FILE:${ARG_LAUNCHES}>")
    add_dependencies(${target} ${ARG_LAUNCHES})
  endif()
  # An object library of its own per test binary: the definitions apply to this source alone.
  add_library(${target}_build_paths OBJECT ${source})
  target_include_directories(${target}_build_paths PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  target_compile_definitions(${target}_build_paths PRIVATE ${definitions})
  target_compile_options(${target}_build_paths PRIVATE -Wall -Wextra)
  target_sources(${target} PRIVATE $<TARGET_OBJECTS:${target}_build_paths>)
endfunction()
