#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <sstream>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include <c10/util/Type.h>
#include <torch/types.h>

#include <tensordict/errors.h>

namespace tensordict {

namespace detail {
template <class T, class = void>
struct HasEquality : std::false_type {};
template <class T>
struct HasEquality<
    T, std::void_t<decltype(bool(std::declval<const T&>() == std::declval<const T&>()))>>
    : std::true_type {};
template <class T, class = void>
struct IsStreamable : std::false_type {};
template <class T>
struct IsStreamable<
    T, std::void_t<decltype(std::declval<std::ostream&>() << std::declval<const T&>())>>
    : std::true_type {};
}  // namespace detail

/// An immutable, type-erased copy of any copyable C++ value, shared by reference.
///
/// Integers (but bool) are stored as `int64_t`, floating values as `double`, `const char*` as
/// `std::string`, so that values set from literals compare equal to values set from
/// variables. Two values are equal when they hold the same type and that type's `==` says so;
/// a type without `==` is equal only to the very same stored object.
class AnyValue {
 public:
  template <class T, class = std::enable_if_t<!std::is_same<std::decay_t<T>, AnyValue>::value>>
  AnyValue(T&& value)  // NOLINT(google-explicit-constructor): any value converts
      : holder_(make_holder(std::forward<T>(value))) {}

  /// The stored type (after the integer/floating/string normalisation above).
  const std::type_info& type() const { return holder_->type(); }
  /// The stored type's readable name.
  std::string type_name() const { return c10::demangle(type().name()); }

  /// The value as `T`, or nullptr when another type is stored.
  template <class T>
  const T* get_if() const {
    if (type() != typeid(T)) return nullptr;
    return &static_cast<const Holder<T>&>(*holder_).value;
  }

  /// The value as `T`; arithmetic `T` converts from a stored integer, floating or bool.
  /// Throws TypeError naming both types otherwise.
  template <class T>
  T get() const {
    if (const T* p = get_if<T>()) return *p;
    if constexpr (std::is_arithmetic<T>::value) {
      if (auto i = get_if<int64_t>()) return static_cast<T>(*i);
      if (auto d = get_if<double>()) return static_cast<T>(*d);
      if (auto b = get_if<bool>()) return static_cast<T>(*b);
    }
    throw TypeError("non-tensor value holds " + type_name() + ", not the requested " +
                    c10::demangle(typeid(T).name()));
  }

  bool operator==(const AnyValue& other) const;
  bool operator!=(const AnyValue& other) const { return !(*this == other); }

  /// The value printed with its `operator<<` when it has one, else `<TypeName>`.
  std::string to_string() const { return holder_->to_string(); }

 private:
  struct HolderBase {
    virtual ~HolderBase() = default;
    virtual const std::type_info& type() const = 0;
    virtual bool equals(const HolderBase& other) const = 0;
    virtual std::string to_string() const = 0;
  };
  template <class T>
  struct Holder final : HolderBase {
    explicit Holder(T v) : value(std::move(v)) {}
    const std::type_info& type() const override { return typeid(T); }
    bool equals(const HolderBase& other) const override {
      if constexpr (HasEq::value) {
        return other.type() == typeid(T) && static_cast<const Holder&>(other).value == value;
      } else {
        return this == &other;
      }
    }
    std::string to_string() const override {
      if constexpr (detail::IsStreamable<T>::value) {
        if constexpr (std::is_same<T, bool>::value) return value ? "True" : "False";  // as Python
        std::ostringstream os;
        os << value;
        return os.str();
      } else {
        return "<" + c10::demangle(typeid(T).name()) + ">";
      }
    }
    using HasEq = detail::HasEquality<T>;
    T value;
  };

  template <class T>
  static std::shared_ptr<const HolderBase> make_holder(T&& value) {
    using D = std::decay_t<T>;
    if constexpr (std::is_same<D, const char*>::value || std::is_same<D, char*>::value) {
      return std::make_shared<Holder<std::string>>(std::string(value));
    } else if constexpr (std::is_same<D, bool>::value) {
      return std::make_shared<Holder<bool>>(value);
    } else if constexpr (std::is_integral<D>::value) {
      return std::make_shared<Holder<int64_t>>(static_cast<int64_t>(value));
    } else if constexpr (std::is_floating_point<D>::value) {
      return std::make_shared<Holder<double>>(static_cast<double>(value));
    } else {
      return std::make_shared<Holder<D>>(std::forward<T>(value));
    }
  }

  std::shared_ptr<const HolderBase> holder_;
};

/// A non-tensor entry of a TensorDict: strings, numbers, bools or any copyable value.
///
/// Either one value shared by every batch element (*uniform*, what `set` of a plain value
/// makes), or one value per batch element (what stacking unequal values makes). Per-element
/// data is a pool of values plus an int64 `positions` tensor of the batch shape that says
/// which pool entry each element holds, so indexing, reshaping and stacking a TensorDict move
/// positions exactly as they move tensor rows. Values are immutable and shared, never copied.
class NonTensorData {
 public:
  /// One value for every element of `batch_size`.
  explicit NonTensorData(AnyValue value, std::vector<int64_t> batch_size = {});
  /// One value per element: `positions` (int64, shape = batch size) index into `pool`.
  /// Throws ValueError when a position is out of the pool's range.
  static NonTensorData per_element(std::vector<AnyValue> pool, torch::Tensor positions);

  bool is_uniform() const { return !positions_.defined(); }
  /// The batch shape this entry spans.
  const std::vector<int64_t>& batch_size() const { return batch_size_; }

  /// The shared value; throws TypeError when elements hold different values.
  const AnyValue& value() const;
  /// The shared value as `T` (see AnyValue::get).
  template <class T>
  T value() const {
    return value().get<T>();
  }
  /// Every element's value, row-major over the batch dims.
  std::vector<AnyValue> tolist() const;

  /// The pool of distinct stored values (one for a uniform entry).
  const std::vector<AnyValue>& pool() const { return pool_; }
  /// Which pool entry each element holds; undefined for a uniform entry.
  const torch::Tensor& positions() const { return positions_; }

  /// The same data spread over another batch shape (uniform) or with positions replaced by
  /// `fn(positions)`; used by every batch-shape operation of TensorDict.
  NonTensorData with_batch(std::vector<int64_t> batch_size) const;
  NonTensorData map_positions(const std::function<torch::Tensor(const torch::Tensor&)>& fn) const;

  /// Per-element form over `batch_size` (a uniform entry becomes a pool of one).
  NonTensorData as_per_element() const;

  /// Equal when every element holds an equal value.
  bool operator==(const NonTensorData& other) const;

 private:
  NonTensorData() = default;
  std::vector<AnyValue> pool_;
  torch::Tensor positions_;
  std::vector<int64_t> batch_size_;
};

/// Stacks non-tensor entries along `dim`; equal uniform values stay one uniform value,
/// anything else becomes per-element data.
NonTensorData stack_non_tensor(const std::vector<NonTensorData>& items, int64_t dim);
/// Concatenates non-tensor entries along `dim` (same rule as stack_non_tensor).
NonTensorData cat_non_tensor(const std::vector<NonTensorData>& items, int64_t dim);

}  // namespace tensordict
