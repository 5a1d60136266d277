# ctest script: configures tests/package/parent (tdrl through add_subdirectory) and checks the
# generated build: the user's program links LibTorch's libraries themselves (the imported
# targets reach the parent), and tdrl's tests, benchmarks and examples are not part of it.
# Configure only: building tdrl a second time would double the suite's time.
# Inputs: SOURCE_DIR (tdrl), WORK_DIR.
file(REMOVE_RECURSE "${WORK_DIR}")
execute_process(
  COMMAND ${CMAKE_COMMAND} -S "${SOURCE_DIR}/tests/package/parent" -B "${WORK_DIR}" -G Ninja
    -DCMAKE_BUILD_TYPE=Release "-DTDRL_SOURCE_DIR=${SOURCE_DIR}"
  RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "configuring the parent project failed (${result}):\n${out}\n${err}")
endif()
file(READ "${WORK_DIR}/build.ninja" ninja)
# The first LINK_LIBRARIES after the user's link rule is its own.
string(FIND "${ninja}" "build user:" at)
if(at EQUAL -1)
  message(FATAL_ERROR "no link rule for the parent's program in ${WORK_DIR}/build.ninja")
endif()
string(SUBSTRING "${ninja}" ${at} -1 rule)
string(REGEX MATCH "LINK_LIBRARIES = [^\n]*" link "${rule}")
if(NOT link MATCHES "libtorch")
  message(FATAL_ERROR "the parent's program does not link LibTorch by path:\n${link}")
endif()
foreach(target tdrl_apps_tests bench_envs custom_env)
  if(ninja MATCHES "build [^\n]*/${target}:")
    message(FATAL_ERROR "the parent project builds tdrl's ${target}; it must not")
  endif()
endforeach()
message(STATUS "add_subdirectory: the parent links LibTorch and builds no tdrl tests")
