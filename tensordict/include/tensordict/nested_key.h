#pragma once

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <ostream>
#include <string>

#include <c10/util/ArrayRef.h>
#include <c10/util/SmallVector.h>

namespace tensordict {

/// A path of string keys into nested TensorDicts: `"a"` or `{"next", "observation"}`.
///
/// Nested braces flatten, as Python's nested tuples do: `{"a", {"b", {"c"}}}` is the path
/// a → b → c. A key is never empty and no part is the empty string (throws ValueError).
/// Paths of up to three parts are stored inline, so the common keys allocate nothing.
///
/// Example: `td.get({"next", "reward"})`, `NestedKey k = "action";`
class NestedKey {
 public:
  /// A one-part key.
  NestedKey(const char* key);  // NOLINT(google-explicit-constructor): keys read like strings
  NestedKey(std::string key);  // NOLINT(google-explicit-constructor)
  /// A path; nested paths are spliced in place.
  NestedKey(std::initializer_list<NestedKey> parts);
  NestedKey(const NestedKey&) = default;
  NestedKey& operator=(const NestedKey&) = default;
  // noexcept so that containers of keys move them when they grow (moving strings cannot fail).
  NestedKey(NestedKey&& other) noexcept : parts_(std::move(other.parts_)) {}
  NestedKey& operator=(NestedKey&& other) noexcept {
    parts_ = std::move(other.parts_);
    return *this;
  }

  /// The path's parts, outermost first.
  c10::ArrayRef<std::string> parts() const { return parts_; }
  std::size_t size() const { return parts_.size(); }
  bool is_nested() const { return parts_.size() > 1; }
  const std::string& front() const { return parts_.front(); }
  const std::string& back() const { return parts_.back(); }
  const std::string& operator[](std::size_t i) const { return parts_[i]; }

  /// This path followed by `child`'s parts.
  NestedKey join(const NestedKey& child) const;
  /// The path without its first part; throws ValueError on a one-part key.
  NestedKey tail() const;
  /// The path without its last part; throws ValueError on a one-part key.
  NestedKey parent() const;
  /// The parts joined by `separator`, e.g. `"next.reward"`.
  std::string join_parts(const std::string& separator) const;

  /// Python's repr: `'a'` for one part, `('next', 'reward')` for a path. (Every printable
  /// type in tensordict and tdrl names this method `to_string`.)
  std::string to_string() const;
  /// The former name of to_string(); removed after release 0.2.
  [[deprecated("use NestedKey::to_string(); repr() is removed after release 0.2")]] std::string
  repr() const {
    return to_string();
  }

  bool operator==(const NestedKey& other) const;
  bool operator!=(const NestedKey& other) const { return !(*this == other); }
  bool operator<(const NestedKey& other) const;

 private:
  NestedKey() = default;
  void append(const std::string& part);

  c10::SmallVector<std::string, 3> parts_;
};

std::ostream& operator<<(std::ostream& os, const NestedKey& key);

}  // namespace tensordict

template <>
struct std::hash<tensordict::NestedKey> {
  std::size_t operator()(const tensordict::NestedKey& key) const noexcept;
};
