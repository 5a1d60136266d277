// Where this build's checkout and helper programs are, for tests that read files of the
// checkout or launch a program of the build.
//
// The paths reach the tests through one small source, build_paths.cpp, compiled into each test
// binary with the paths as its definitions (tdrl_test_build_paths in cmake/TdrlTesting.cmake),
// not as definitions of the test sources themselves: a path in a compile flag differs between
// two checkouts of the same commit and would keep ccache from reusing one checkout's objects in
// the other (CI builds a fresh clone).

#pragma once

#include <string>

namespace tdrl::testing {

/// The checkout this binary was built from (its configs/, docs/, tests/data/ ...).
std::string source_dir();

/// tests/data of the checkout.
std::string test_data_dir();

/// The program this test binary starts as child processes: tdrl-train for the apps tests, the
/// worker for the collectors tests, the peer for the tensordict tests. Throws std::logic_error
/// for a binary that names none (tdrl_test_build_paths without LAUNCHES).
std::string launched_program();

/// The Python interpreter with tensordict this build was configured with for the memmap interop
/// tests (TDRL_PYTHON in cmake/TdrlTesting.cmake), or "" where there is none.
std::string python_interpreter();

}  // namespace tdrl::testing
