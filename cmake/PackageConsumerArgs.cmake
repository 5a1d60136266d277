# Included by the package tests' ctest scripts (TestPackage.cmake, TestTdrlPackage.cmake): the
# configure arguments a consumer project gets, from the scripts' inputs SANITIZE, LAUNCHER and
# COMPILER (tdrl's compiler). Sets `consumer_args`.
#
# Under sanitizers the consumer is instrumented like tdrl (-fno-sanitize=bool for LibTorch's
# TensorIndex copies, as in TdrlOptions.cmake) and built with tdrl's compiler: GCC's and clang's
# AddressSanitizer runtimes cannot share a process (the installed tdrl-train loading a plugin
# built by the other refuses to start). Otherwise it builds with the system's compiler, whichever
# built tdrl (both use libstdc++), so that mix stays tested.
set(_flags "")
set(consumer_args "-DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER}")
if(SANITIZE)
  set(_flags "-fsanitize=${SANITIZE}")
  if(SANITIZE MATCHES "undefined")
    string(APPEND _flags " -fno-sanitize=bool")
  endif()
  if(COMPILER)
    list(APPEND consumer_args "-DCMAKE_CXX_COMPILER=${COMPILER}")
  endif()
endif()
list(APPEND consumer_args "-DCMAKE_CXX_FLAGS=${_flags}" "-DCMAKE_EXE_LINKER_FLAGS=${_flags}"
  "-DCMAKE_MODULE_LINKER_FLAGS=${_flags}")
