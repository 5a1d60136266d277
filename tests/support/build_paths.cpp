// The paths of build_paths.h, from definitions that only this source is compiled with.

#include "support/build_paths.h"

#include <stdexcept>

#ifndef TDRL_SOURCE_DIR
#error "build_paths.cpp is compiled with TDRL_SOURCE_DIR (tdrl_test_build_paths)"
#endif

namespace tdrl::testing {

std::string source_dir() { return TDRL_SOURCE_DIR; }

std::string test_data_dir() { return source_dir() + "/tests/data"; }

std::string launched_program() {
#ifdef TDRL_LAUNCHED_PROGRAM
  return TDRL_LAUNCHED_PROGRAM;
#else
  throw std::logic_error(
      "this test binary launches no program: give tdrl_test_build_paths a LAUNCHES target");
#endif
}

std::string python_interpreter() {
#ifdef TDRL_PYTHON
  return TDRL_PYTHON;
#else
  return "";
#endif
}

}  // namespace tdrl::testing
