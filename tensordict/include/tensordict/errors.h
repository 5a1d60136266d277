#pragma once

/// The exceptions thrown by the tensordict package.
///
/// Every misuse of a TensorDict throws a subclass of `tensordict::Error`. Messages name the
/// operation, the key path, what was expected and what was got, and how to fix the call.
/// A failed operation leaves the TensorDict it was called on exactly as it was.

#include <exception>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <c10/core/Device.h>
#include <c10/util/ArrayRef.h>

namespace tensordict {

/// Base of all tensordict errors; catch this to catch any of them.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

/// A key is missing, or a key path walks through a value that is not a TensorDict.
class KeyError : public Error {
 public:
  using Error::Error;
};

/// A shape does not agree with a batch size, or two TensorDicts' shapes do not agree.
class ShapeError : public Error {
 public:
  using Error::Error;
};

/// A value has the wrong kind (tensor vs TensorDict vs non-tensor) or the wrong dtype.
class TypeError : public Error {
 public:
  using Error::Error;
};

/// An index does not fit the batch dimensions it is applied to.
class IndexError : public Error {
 public:
  using Error::Error;
};

/// Tensors of one TensorDict live on different devices where one device is required.
class DeviceError : public Error {
 public:
  using Error::Error;
};

/// An argument is out of its valid range (a dim, a split size, a separator, ...).
class ValueError : public Error {
 public:
  using Error::Error;
};

/// Formats a shape as `[3, 4]`, the form every message uses.
std::string shape_str(c10::IntArrayRef shape);

/// The Levenshtein distance between `a` and `b` (insertions, deletions, substitutions), which
/// ranks the suggestions of "unknown name" messages.
size_t edit_distance(const std::string& a, const std::string& b);

/// Orders `candidates` by edit distance to `wanted`, closest first, and formats them as
/// `['a', 'b']` for "unknown name" messages.
std::string closest_names(const std::string& wanted, const std::vector<std::string>& candidates);

/// Rethrows `error` with `prefix` in front of its message, keeping its type when it is one of
/// the tensordict errors; a c10::Error becomes a tensordict::Error, any other std::exception
/// a std::runtime_error. For errors that cross threads or processes ("sub-env 3: ...").
[[noreturn]] void rethrow_with_prefix(const std::exception_ptr& error, const std::string& prefix);

namespace detail {

/// The parts of a TDRL_CHECK message, streamed one after the other.
template <class... Parts>
std::string check_message(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

}  // namespace detail

}  // namespace tensordict

/// Throws `ErrorType` (one of the errors above) unless `cond` holds; the message is the
/// remaining arguments streamed one after the other, built only when the check fails:
/// ```
/// TDRL_CHECK(n >= 1, ValueError, "Collector: frames_per_batch is ", std::to_string(n),
///            "; set it to n >= 1");
/// ```
/// The messages follow the rule of this file: operation, key path, expected, got, the fix.
#define TDRL_CHECK(cond, ErrorType, ...)                                            \
  do {                                                                              \
    if (!(cond)) throw ErrorType(::tensordict::detail::check_message(__VA_ARGS__)); \
  } while (false)
