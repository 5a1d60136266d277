// The message of the exception a call throws, for tests that check error messages.

#pragma once

#include <string>

#include <gtest/gtest.h>

namespace tdrl::test_util {

/// Calls `fn`, expects it to throw `E`, and returns the message (a test failure and "" when it
/// throws nothing).
template <typename E, typename F>
std::string error_message(F fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no exception thrown";
  return "";
}

}  // namespace tdrl::test_util
