# ctest script: installs the build tree's tensordict package into a scratch prefix, then
# configures, builds and runs tests/package/consumer against it with find_package.
# Inputs: BUILD_DIR, SOURCE_DIR, WORK_DIR, SANITIZE, LAUNCHER, COMPILER (tdrl's).
file(REMOVE_RECURSE "${WORK_DIR}")
function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "command failed (${result}): ${ARGV}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
endfunction()

run(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${WORK_DIR}/prefix")
set(flags "")
set(compiler_arg "")
if(SANITIZE)
  set(flags "-fsanitize=${SANITIZE}")
  # Under sanitizers the consumer uses tdrl's compiler: GCC's and clang's runtimes differ.
  if(COMPILER)
    set(compiler_arg "-DCMAKE_CXX_COMPILER=${COMPILER}")
  endif()
endif()
run(${CMAKE_COMMAND} -S "${SOURCE_DIR}" -B "${WORK_DIR}/build" -DCMAKE_BUILD_TYPE=Release
    "-DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix" "-DCMAKE_CXX_FLAGS=${flags}"
    "-DCMAKE_EXE_LINKER_FLAGS=${flags}" "-DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER}" ${compiler_arg})
run(${CMAKE_COMMAND} --build "${WORK_DIR}/build")
run("${WORK_DIR}/build/consumer")
