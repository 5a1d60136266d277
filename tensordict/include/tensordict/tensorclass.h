#pragma once

/// Typed tensorclasses: records whose declared fields live in a TensorDict, so that they get
/// every TensorDict operation (indexing, shape ops, stack/cat, to, clone, apply, memmap) and
/// keep typed field access. Python tensordict's `@tensorclass`.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <ostream>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <variant>
#include <vector>

#include <c10/util/Type.h>
#include <torch/types.h>

#include <tensordict/errors.h>
#include <tensordict/lazy_stacked_tensordict.h>
#include <tensordict/memmap_tensor.h>
#include <tensordict/non_tensor_data.h>
#include <tensordict/tensor_dict.h>

namespace tensordict {

template <class Derived>
class TensorClass;

/// How a tensorclass field is stored in the TensorDict behind it.
enum class FieldKind {
  kTensor,       ///< `torch::Tensor`: a tensor leaf.
  kTensorClass,  ///< another tensorclass: a nested TensorDict holding that class's fields.
  kTensorDict,   ///< `TensorDict`: a nested TensorDict with any keys.
  kNonTensor,    ///< any other copyable type: non-tensor data (see NonTensorData).
};

namespace detail {

/// Non-template base of every TensorClass<Derived>, so that "is a tensorclass" is a trait.
struct TensorClassTag {};

struct TensorClassSpec;

/// One declared field, type-erased: what the checks and the printing need to know.
struct FieldSpec {
  std::string name;
  FieldKind kind;
  /// The declared type as messages show it (`torch::Tensor`, `std::string`, a class name).
  std::string type_name;
  /// kTensorClass only: the nested class's description.
  const TensorClassSpec& (*nested)() = nullptr;
  /// kNonTensor only: true when a stored value can be read as the declared type.
  bool (*accepts)(const AnyValue&) = nullptr;
};

/// A tensorclass's name and its fields in declaration order.
struct TensorClassSpec {
  std::string name;
  std::vector<FieldSpec> fields;
};

/// kAll: `td` must hold exactly the declared fields (construction). kSubset: every key of
/// `td` must be a declared field, some may be missing (update).
enum class FieldCheck { kAll, kSubset };

/// Checks the top-level keys of `td` against `spec`, recursing into nested tensorclass
/// fields. Throws KeyError for unknown or missing fields (listing the declared ones),
/// TypeError for an entry of the wrong kind or a non-tensor value of the wrong type; the
/// message starts with `op`.
void check_fields(const TensorDict& td, const TensorClassSpec& spec, const std::string& op,
                  FieldCheck mode);
/// The same checks for `{field, value}` pairs (TensorClass::make), plus ValueError for a
/// field given twice.
void check_field_values(const std::vector<std::pair<std::string, Value>>& entries,
                        const TensorClassSpec& spec, const std::string& op, FieldCheck mode);

/// Python's tensorclass repr of `td` read as an instance of `spec`.
std::string tensorclass_repr(const TensorDict& td, const TensorClassSpec& spec);

/// Runs `fn`; a tensordict error it throws (KeyError, ShapeError, ...) is rethrown as the same
/// type with `op + ": "` in front of its message; other exceptions pass unchanged.
void run_as(const std::string& op, const std::function<void()>& fn);

/// The unqualified, demangled name of a type from its `typeid(...).name()`.
std::string unqualified_type_name(const char* mangled);

/// Wraps a TensorDict known to hold a class's fields, without checking (stack, cat).
struct TensorClassAccess {
  template <class D>
  static D wrap(TensorDict td) {
    return TensorClass<D>::wrap_(std::move(td));
  }
};

template <class T>
constexpr bool kIsTensorClass = std::is_base_of<TensorClassTag, std::decay_t<T>>::value;

/// How a field of declared type `T` is stored.
template <class T>
constexpr FieldKind field_kind() {
  if constexpr (std::is_same<T, torch::Tensor>::value) {
    return FieldKind::kTensor;
  } else if constexpr (kIsTensorClass<T>) {
    return FieldKind::kTensorClass;
  } else if constexpr (std::is_same<T, TensorDict>::value) {
    return FieldKind::kTensorDict;
  } else {
    return FieldKind::kNonTensor;
  }
}

/// Whether a stored non-tensor value reads as `T` (AnyValue::get's rule: the same type, or
/// any stored number for an arithmetic `T`).
template <class T>
bool accepts_value(const AnyValue& value) {
  if (value.get_if<T>() != nullptr) return true;
  if constexpr (std::is_arithmetic<T>::value)
    return value.get_if<int64_t>() || value.get_if<double>() || value.get_if<bool>();
  return false;
}

template <class T>
FieldSpec make_field_spec(const char* name) {
  static_assert(!std::is_pointer<T>::value && !std::is_reference<T>::value,
                "a tensorclass field holds a value: declare strings as std::string");
  static_assert(std::is_same<T, TensorDict>::value || !std::is_base_of<TensorDict, T>::value,
                "declare nested TensorDict fields as tensordict::TensorDict");
  FieldSpec spec{name, field_kind<T>(), {}, nullptr, nullptr};
  if constexpr (field_kind<T>() == FieldKind::kTensor) {
    spec.type_name = "torch::Tensor";
  } else if constexpr (field_kind<T>() == FieldKind::kTensorDict) {
    spec.type_name = "TensorDict";
  } else if constexpr (field_kind<T>() == FieldKind::kTensorClass) {
    spec.type_name = T::class_name();
    spec.nested = &T::spec;
  } else {
    spec.type_name = std::is_same<T, std::string>::value ? std::string("std::string")
                                                         : c10::demangle(typeid(T).name());
    spec.accepts = &accepts_value<T>;
  }
  return spec;
}

/// A field value as the TensorDict stores it: tensors and TensorDicts as they are, a
/// tensorclass as its TensorDict, anything else as uniform non-tensor data.
template <class T>
Value to_field_value(T&& value) {
  using D = std::decay_t<T>;
  if constexpr (std::is_base_of<torch::Tensor, D>::value) {
    return Value(std::in_place_type<torch::Tensor>, value);
  } else if constexpr (std::is_base_of<TensorDict, D>::value) {
    return Value(std::in_place_type<TensorDict>, value);
  } else if constexpr (kIsTensorClass<D>) {
    return Value(std::in_place_type<TensorDict>, value.tensordict());
  } else if constexpr (std::is_same<D, NonTensorData>::value) {
    return Value(std::in_place_type<NonTensorData>, value);
  } else {
    return Value(std::in_place_type<NonTensorData>, AnyValue(std::forward<T>(value)));
  }
}

// The field list of a class is a type, FieldList<F1, F2, ...>, grown one field at a time by
// TENSORDICT_FIELD: each field declares an overload of `tensordict_fields_` taking
// FieldRank<n> (n = fields so far + 1) and returning the list with the field appended. Overload
// resolution on FieldRank<kMaxTensorClassFields> picks the highest n declared so far, so
// `decltype` of that call is the list up to that point, and in Derived's complete scope the
// whole list. The base class declares the empty list at rank 0.
constexpr int kMaxTensorClassFields = 64;

template <int N>
struct FieldRank : FieldRank<N - 1> {};
template <>
struct FieldRank<0> {};

template <class... Fields>
struct FieldList {
  static constexpr int size = static_cast<int>(sizeof...(Fields));
};

template <class List, class Field>
struct FieldListAppend;
template <class... Fields, class Field>
struct FieldListAppend<FieldList<Fields...>, Field> {
  using type = FieldList<Fields..., Field>;
};

}  // namespace detail

/// True for classes declared as `class X : public tensordict::TensorClass<X>`.
template <class T>
struct is_tensorclass : std::integral_constant<bool, detail::kIsTensorClass<T>> {};

/// One `{field, value}` pair of TensorClass::make. The value is a tensor, a TensorDict, a
/// tensorclass (stored as its TensorDict, aliased) or any other copyable value (stored as
/// uniform non-tensor data; `const char*` becomes `std::string`, integers `int64_t`).
struct FieldItem {
  template <class T>
  FieldItem(std::string field_name, T&& field_value)  // NOLINT(google-explicit-constructor)
      : field(std::move(field_name)), value(detail::to_field_value(std::forward<T>(field_value))) {}

  std::string field;
  Value value;
};

/// The base of a typed tensorclass: a record whose fields, declared with TENSORDICT_FIELD,
/// live in a TensorDict that shares leading batch dims, so that the record gets every
/// TensorDict operation while its fields stay typed (Python's `@tensorclass`).
///
/// Declare a class that derives from `TensorClass<itself>`, list its fields, and add methods:
/// ```
/// class MyData : public tensordict::TensorClass<MyData> {
///  public:
///   TENSORDICT_FIELD(torch::Tensor, image);   // [*batch, 3, H, W]
///   TENSORDICT_FIELD(torch::Tensor, mask);    // [*batch, 1, H, W]
///   TENSORDICT_FIELD(torch::Tensor, label);   // [*batch]
///   TENSORDICT_FIELD(std::string, source);    // non-tensor data
///   MyData select_label(int64_t l) const { return index({label() == l}); }
/// };
/// auto data = MyData::make({{"image", images}, {"mask", mask}, {"label", labels},
///                           {"source", "camera"}}, {100});
/// data.image();                 // the stored tensor (aliased)
/// data.set_label(new_labels);   // checked against batch_size() as TensorDict::set
/// data.reshape({10, 10});       // a MyData
/// ```
/// Field types: `torch::Tensor`; another tensorclass (the getter returns that class); a
/// `TensorDict` (any keys); anything else copyable is non-tensor data (`std::string`, numbers,
/// bools, user structs). Field names must not be method names of this class (`index`,
/// `batch_size`, ...). A tensorclass holds no state but its fields (a static_assert rejects
/// data members) and is not a template.
///
/// Handle semantics, as TensorDict: copying an instance aliases the same fields, `clone()`
/// copies them, assignment rebinds; setters and methods ending in `_` write into the shared
/// fields. A default-constructed instance holds no fields (a placeholder to assign to; its
/// getters throw KeyError).
///
/// Every operation that returns a TensorDict returns `Derived` here; they behave exactly as
/// the TensorDict operations of the same name (same errors, same aliasing). Operations that
/// could lose a field (`apply` dropping a key, `load_memmap` of another folder, `update` from
/// a TensorDict) check the fields and throw KeyError naming the class, the field and the
/// declared fields. The underlying TensorDict is `tensordict()` (aliased).
///
/// Thread safety: that of the underlying TensorDict (concurrent reads only).
template <class Derived>
class TensorClass : public detail::TensorClassTag {
 public:
  // ---- Construction and the underlying TensorDict -------------------------------------------

  /// An instance from `{field, value}` pairs naming every declared field once (see FieldItem),
  /// validated as TensorDict's constructor validates (tensors are moved to `device` when one
  /// is given). Throws KeyError for a missing or unknown field (listing the declared fields),
  /// ValueError for a field given twice, TypeError for a value of the wrong kind (e.g. a
  /// string for a tensor field), ShapeError when a value does not start with `batch_size`.
  static Derived make(std::initializer_list<FieldItem> items, BatchSize batch_size = {},
                      std::optional<torch::Device> device = std::nullopt) {
    const std::string op = class_name() + "::make";
    std::vector<std::pair<std::string, Value>> entries;
    entries.reserve(items.size());
    for (const auto& item : items) entries.emplace_back(item.field, item.value);
    // Names and kinds first, so that an unknown field is reported as such and not as a
    // shape error; then the values are written in declaration order.
    detail::check_field_values(entries, spec(), op, detail::FieldCheck::kAll);
    TensorDict td = TensorDict::empty(std::move(batch_size), device);
    detail::run_as(op, [&] {
      for (const auto& field : spec().fields)
        for (const auto& entry : entries)
          if (entry.first == field.name) td.set(field.name, entry.second);
    });
    return wrap_(std::move(td));
  }

  /// `td` viewed as this class: the result aliases `td` (no copy). Throws KeyError when `td`
  /// misses a declared field or holds another key, TypeError when an entry has the wrong kind
  /// (checked recursively through nested tensorclass fields).
  static Derived from_tensordict(const TensorDict& td) {
    return checked_(td, class_name() + "::from_tensordict");
  }

  /// The TensorDict holding the fields (aliased: writes through it show here). Keep its keys
  /// as declared; use from_tensordict to come back after changing them.
  const TensorDict& tensordict() const { return td_; }
  /// A dense copy of the fields as a plain TensorDict (Python's `to_tensordict`).
  TensorDict to_tensordict() const { return td_.to_tensordict(); }

  /// The declared field names, in declaration order.
  static std::vector<std::string> field_names() {
    std::vector<std::string> names;
    for (const auto& f : spec().fields) names.push_back(f.name);
    return names;
  }
  /// The class's name in messages and printing: the unqualified C++ name. A class may hide
  /// it with its own `static std::string class_name()`.
  static std::string class_name() { return detail::unqualified_type_name(typeid(Derived).name()); }
  /// Internal: the class's fields, type-erased (built once).
  static const detail::TensorClassSpec& spec() {
    // Looked up in Derived's complete scope, the highest rank gives the whole field list.
    using Fields =
        decltype(Derived::tensordict_fields_(detail::FieldRank<detail::kMaxTensorClassFields>{}));
    static const detail::TensorClassSpec s = build_spec_(Fields{});
    return s;
  }

  // ---- Shape and device ---------------------------------------------------------------------

  /// The leading dims shared by every field.
  const BatchSize& batch_size() const { return td_.batch_size(); }
  /// Same as batch_size() (Python's `shape`).
  const BatchSize& shape() const { return td_.batch_size(); }
  /// Number of batch dims.
  int64_t batch_dims() const { return td_.batch_dims(); }
  int64_t ndim() const { return td_.ndim(); }
  /// Product of the batch dims (1 for batch size `[]`).
  int64_t numel() const { return td_.numel(); }
  /// The device every tensor lives on, when one is required.
  std::optional<torch::Device> device() const { return td_.device(); }
  /// Replaces the batch size (TensorDict::set_batch_size; ShapeError when a field does not
  /// start with it).
  const Derived& set_batch_size(BatchSize batch_size) const {
    td_.set_batch_size(std::move(batch_size));
    return self_();
  }

  // ---- Indexing along batch dims ------------------------------------------------------------

  /// Every field indexed along the batch dims (TensorDict::index: ints, slices, Ellipsis,
  /// None, bool masks, index tensors; basic indexing gives views, masks and index tensors
  /// gather copies). IndexError when the index does not fit the batch dims.
  Derived index(at::ArrayRef<TensorIndex> index) const { return wrap_(td_.index(index)); }
  Derived index(std::initializer_list<TensorIndex> index) const { return wrap_(td_.index(index)); }
  /// A view of the region `index` whose reads gather and writes land here
  /// (TensorDict::get_sub_tensordict).
  Derived get_sub_tensordict(at::ArrayRef<TensorIndex> index) const {
    return wrap_(td_.get_sub_tensordict(index));
  }
  Derived get_sub_tensordict(std::initializer_list<TensorIndex> index) const {
    return wrap_(td_.get_sub_tensordict(index));
  }
  /// Writes `value`'s fields into the region `index` (TensorDict::index_put_: values must
  /// broadcast to the region, ShapeError; same dtypes, TypeError; nothing is written unless
  /// every field fits).
  const Derived& index_put_(at::ArrayRef<TensorIndex> index, const Derived& value) const {
    td_.index_put_(index, value.td_);
    return self_();
  }
  const Derived& index_put_(std::initializer_list<TensorIndex> index, const Derived& value) const {
    td_.index_put_(index, value.td_);
    return self_();
  }
  /// Fills the region `index` of every tensor field with `value`.
  const Derived& index_put_(at::ArrayRef<TensorIndex> index, const c10::Scalar& value) const {
    td_.index_put_(index, value);
    return self_();
  }
  const Derived& index_put_(std::initializer_list<TensorIndex> index,
                            const c10::Scalar& value) const {
    td_.index_put_(index, value);
    return self_();
  }

  // ---- Shape operations on batch dims (see TensorDict) --------------------------------------

  /// Fields reshaped to `batch_size` + their feature dims (views when possible).
  Derived reshape(BatchSize batch_size) const { return wrap_(td_.reshape(std::move(batch_size))); }
  /// Fields viewed as `batch_size` + their feature dims; throws when one cannot be viewed.
  Derived view(BatchSize batch_size) const { return wrap_(td_.view(std::move(batch_size))); }
  /// Merges batch dims `start_dim..end_dim` into one.
  Derived flatten(int64_t start_dim = 0, int64_t end_dim = -1) const {
    return wrap_(td_.flatten(start_dim, end_dim));
  }
  /// Splits batch dim `dim` into `sizes`.
  Derived unflatten(int64_t dim, BatchSize sizes) const {
    return wrap_(td_.unflatten(dim, std::move(sizes)));
  }
  /// Permutes the batch dims.
  Derived permute(std::vector<int64_t> dims) const { return wrap_(td_.permute(std::move(dims))); }
  Derived transpose(int64_t dim0, int64_t dim1) const { return wrap_(td_.transpose(dim0, dim1)); }
  /// Removes batch dim `dim` when it has size 1 (all size-1 batch dims without `dim`).
  Derived squeeze(std::optional<int64_t> dim = std::nullopt) const {
    return wrap_(td_.squeeze(dim));
  }
  /// Inserts a batch dim of size 1 at `dim`.
  Derived unsqueeze(int64_t dim) const { return wrap_(td_.unsqueeze(dim)); }
  /// Broadcasts to `batch_size` (which may add leading dims), without copying.
  Derived expand(BatchSize batch_size) const { return wrap_(td_.expand(std::move(batch_size))); }
  /// One instance per slice along `dim` (views).
  std::vector<Derived> unbind(int64_t dim = 0) const { return wrap_all_(td_.unbind(dim)); }
  /// Pieces of `split_size` along `dim` (the last may be smaller).
  std::vector<Derived> split(int64_t split_size, int64_t dim = 0) const {
    return wrap_all_(td_.split(split_size, dim));
  }
  /// Pieces of the given sizes along `dim`; they must add up to the dim's size.
  std::vector<Derived> split(std::vector<int64_t> split_sizes, int64_t dim = 0) const {
    return wrap_all_(td_.split(std::move(split_sizes), dim));
  }
  /// `chunks` pieces of (nearly) equal size along `dim`.
  std::vector<Derived> chunk(int64_t chunks, int64_t dim = 0) const {
    return wrap_all_(td_.chunk(chunks, dim));
  }
  /// Dense, contiguous fields; densifies lazy stacks and views.
  Derived contiguous() const { return wrap_(td_.contiguous()); }

  // ---- Whole-record operations --------------------------------------------------------------

  /// A copy; with `recurse = false` only the structure is new and tensors are aliased.
  Derived clone(bool recurse = true) const { return wrap_(td_.clone(recurse)); }
  /// Tensors detached from the autograd graph (aliasing storage).
  Derived detach() const { return wrap_(td_.detach()); }
  /// Tensors moved to `device`; the result requires that device.
  Derived to(torch::Device device) const { return wrap_(td_.to(device)); }
  /// Every tensor cast to `dtype`.
  Derived to(torch::Dtype dtype) const { return wrap_(td_.to(dtype)); }
  /// `fn` applied to every tensor (nested fields too) into a new instance; non-tensor fields
  /// are kept. KeyError when `fn` drops a field (returns an undefined tensor), ShapeError as
  /// TensorDict::apply.
  Derived apply(const std::function<torch::Tensor(const torch::Tensor&)>& fn) const {
    return checked_(td_.apply(fn), class_name() + "::apply");
  }
  /// `fn(x, y)` over the tensors of this and `other` matched by field.
  Derived apply(
      const Derived& other,
      const std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&)>& fn) const {
    return checked_(td_.apply(other.td_, fn), class_name() + "::apply");
  }
  /// As `apply`, with each tensor's full key path given to `fn`.
  Derived named_apply(
      const std::function<torch::Tensor(const NestedKey&, const torch::Tensor&)>& fn) const {
    return checked_(td_.named_apply(fn), class_name() + "::named_apply");
  }
  /// `fn` applied to every tensor, written back in place (TensorDict::apply_).
  const Derived& apply_(const std::function<torch::Tensor(const torch::Tensor&)>& fn) const {
    td_.apply_(fn);
    return self_();
  }
  /// Writes `other`'s fields here (TensorDict::update; see UpdateOptions).
  const Derived& update(const Derived& other, const UpdateOptions& options = {}) const {
    td_.update(other.td_, options);
    return self_();
  }
  /// Writes the entries of a TensorDict here. Every key it brings (restricted to
  /// `options.keys_to_update` when given) must be a declared field of the right kind
  /// (KeyError / TypeError, nothing written); then as TensorDict::update.
  const Derived& update(const TensorDict& other, const UpdateOptions& options = {}) const {
    const TensorDict source =
        options.keys_to_update.empty() ? other : other.select(options.keys_to_update, false);
    detail::check_fields(source, spec(), class_name() + "::update", detail::FieldCheck::kSubset);
    td_.update(other, options);
    return self_();
  }
  /// Copies `other`'s fields into the existing tensors (TensorDict::update_).
  const Derived& update_(const Derived& other) const {
    td_.update_(other.td_);
    return self_();
  }
  /// Copies `other` (broadcastable shapes, same dtypes) into this instance.
  const Derived& copy_(const Derived& other) const {
    td_.copy_(other.td_);
    return self_();
  }
  /// Fills every tensor with `value`.
  const Derived& fill_(const c10::Scalar& value) const {
    td_.fill_(value);
    return self_();
  }
  const Derived& zero_() const {
    td_.zero_();
    return self_();
  }
  /// Fields with `value` where `mask` (bool, a prefix of the batch size) is true.
  Derived masked_fill(const torch::Tensor& mask, const c10::Scalar& value) const {
    return wrap_(td_.masked_fill(mask, value));
  }
  const Derived& masked_fill_(const torch::Tensor& mask, const c10::Scalar& value) const {
    td_.masked_fill_(mask, value);
    return self_();
  }
  /// Fields of this where `condition` (bool, a prefix of the batch size) is true, else of
  /// `other`.
  Derived where(const torch::Tensor& condition, const Derived& other) const {
    return wrap_(td_.where(condition, other.td_));
  }
  Derived where(const torch::Tensor& condition, const c10::Scalar& other) const {
    return wrap_(td_.where(condition, other));
  }
  /// Sets `requires_grad` on every floating tensor.
  const Derived& requires_grad_(bool requires_grad = true) const {
    td_.requires_grad_(requires_grad);
    return self_();
  }
  /// Same fields, and every pair of tensors `allclose`.
  bool allclose(const Derived& other, double rtol = 1e-5, double atol = 1e-8) const {
    return td_.allclose(other.td_, rtol, atol);
  }

  // ---- Persistence (the TensorDict folder format of docs/memmap.md) -------------------------

  /// Writes the fields to files under `prefix` and maps them back in place
  /// (TensorDict::memmap_).
  const Derived& memmap_(const std::string& prefix, int num_threads = 1) const {
    td_.memmap_(prefix, num_threads);
    return self_();
  }
  /// As memmap_, into a new memory-mapped instance; this one is unchanged.
  Derived memmap(const std::string& prefix, int num_threads = 1) const {
    return wrap_(td_.memmap(prefix, num_threads));
  }
  /// Zero-filled files shaped like every tensor, mapped into a new instance.
  Derived memmap_like(const std::string& prefix, int num_threads = 1) const {
    return wrap_(td_.memmap_like(prefix, num_threads));
  }
  /// Maps a folder written by memmap_/memmap/memmap_like/save as this class. Throws as
  /// TensorDict::load_memmap, and KeyError / TypeError when the folder's entries are not
  /// exactly the declared fields.
  static Derived load_memmap(const std::string& prefix, MemmapMode mode = MemmapMode::kReadWrite) {
    return checked_(TensorDict::load_memmap(prefix, mode),
                    class_name() + "::load_memmap('" + prefix + "')");
  }
  /// Python's `save`: the same as `memmap(prefix)`, discarding the result.
  void save(const std::string& prefix, int num_threads = 1) const { td_.save(prefix, num_threads); }
  /// Python's `load`: the same as `load_memmap(prefix)`.
  static Derived load(const std::string& prefix, MemmapMode mode = MemmapMode::kReadWrite) {
    return load_memmap(prefix, mode);
  }
  /// True when every tensor is memory-mapped.
  bool is_memmap() const { return td_.is_memmap(); }

  // ---- Identity and printing ----------------------------------------------------------------

  /// True when both instances share the same fields.
  bool is_same(const Derived& other) const { return td_.is_same(other.td_); }
  /// True for the result of tensordict::stack (fields read on demand).
  bool is_lazy_stack() const { return td_.is_lazy_stack(); }
  /// True for a view made by get_sub_tensordict.
  bool is_sub_tensordict() const { return td_.is_sub_tensordict(); }
  /// Python's tensorclass repr: the class name, the tensor and nested fields sorted by name,
  /// the non-tensor fields in declaration order, then batch_size, device and is_shared.
  std::string to_string() const { return detail::tensorclass_repr(td_, spec()); }
  friend std::ostream& operator<<(std::ostream& os, const Derived& value) {
    return os << value.to_string();
  }

 protected:
  /// An instance with no fields; only reachable through Derived's default constructor.
  TensorClass() = default;

  /// The deriving class, for TENSORDICT_FIELD.
  using TensorClassSelf = Derived;
  /// The empty field list (see detail::FieldRank).
  static detail::FieldList<> tensordict_fields_(detail::FieldRank<0>);

  /// The value of field `name` as its declared type `T` (TENSORDICT_FIELD's getters).
  template <class T>
  T field_get_(const char* name) const {
    constexpr FieldKind kind = detail::field_kind<T>();
    if constexpr (kind == FieldKind::kTensor) {
      return td_.get(name);
    } else if constexpr (kind == FieldKind::kTensorClass) {
      return TensorClass<T>::wrap_(td_.get_tensordict(name));
    } else if constexpr (kind == FieldKind::kTensorDict) {
      return td_.get_tensordict(name);
    } else {
      return td_.template get_non_tensor<T>(name);
    }
  }
  /// Sets field `name` (TENSORDICT_FIELD's setters); errors name the setter.
  template <class T>
  void field_set_(const char* name, const T& value) const {
    detail::run_as(class_name() + "::set_" + name, [&] {
      constexpr FieldKind kind = detail::field_kind<T>();
      if constexpr (kind == FieldKind::kTensor || kind == FieldKind::kTensorDict) {
        td_.set(name, value);
      } else if constexpr (kind == FieldKind::kTensorClass) {
        td_.set(name, value.tensordict());
      } else {
        td_.set_non_tensor(name, value);
      }
    });
  }

 private:
  template <class>
  friend class TensorClass;
  friend struct detail::TensorClassAccess;

  template <class... F>
  static detail::TensorClassSpec build_spec_(detail::FieldList<F...>) {
    detail::TensorClassSpec s;
    s.name = Derived::class_name();
    (s.fields.push_back(detail::make_field_spec<typename F::type>(F::name())), ...);
    return s;
  }

  const Derived& self_() const { return static_cast<const Derived&>(*this); }

  static Derived wrap_(TensorDict td) {
    static_assert(sizeof(Derived) == sizeof(TensorClass<Derived>),
                  "a tensorclass keeps its state in its fields: declare data with "
                  "TENSORDICT_FIELD, not as data members");
    static_assert(std::is_default_constructible<Derived>::value,
                  "a tensorclass must be default-constructible (declare no constructor)");
    Derived out;
    static_cast<TensorClass&>(out).td_ = std::move(td);
    return out;
  }
  static Derived checked_(TensorDict td, const std::string& op) {
    detail::check_fields(td, spec(), op, detail::FieldCheck::kAll);
    return wrap_(std::move(td));
  }
  static std::vector<Derived> wrap_all_(std::vector<TensorDict> tds) {
    std::vector<Derived> out;
    out.reserve(tds.size());
    for (auto& td : tds) out.push_back(wrap_(std::move(td)));
    return out;
  }

  TensorDict td_;
};

// ---- Stacking and concatenation of tensorclasses ----------------------------------------------

/// Stacks instances of one tensorclass along a new batch dim `dim`, lazily (as
/// tensordict::stack of their TensorDicts: writes go through to the members). Throws as
/// tensordict::stack.
template <class D, std::enable_if_t<detail::kIsTensorClass<D>, int> = 0>
D stack(const std::vector<D>& items, int64_t dim = 0) {
  std::vector<TensorDict> tds;
  tds.reserve(items.size());
  for (const auto& item : items) tds.push_back(item.tensordict());
  return detail::TensorClassAccess::wrap<D>(stack(tds, dim));
}
template <class D, std::enable_if_t<detail::kIsTensorClass<D>, int> = 0>
D stack(std::initializer_list<D> items, int64_t dim = 0) {
  return stack(std::vector<D>(items), dim);
}

/// Concatenates instances of one tensorclass along batch dim `dim` into a dense instance.
/// Throws as tensordict::cat.
template <class D, std::enable_if_t<detail::kIsTensorClass<D>, int> = 0>
D cat(const std::vector<D>& items, int64_t dim = 0) {
  std::vector<TensorDict> tds;
  tds.reserve(items.size());
  for (const auto& item : items) tds.push_back(item.tensordict());
  return detail::TensorClassAccess::wrap<D>(cat(tds, dim));
}
template <class D, std::enable_if_t<detail::kIsTensorClass<D>, int> = 0>
D cat(std::initializer_list<D> items, int64_t dim = 0) {
  return cat(std::vector<D>(items), dim);
}

}  // namespace tensordict

/// Declares a field of a tensorclass (inside `class X : public tensordict::TensorClass<X>`):
/// a getter `TYPE NAME() const` and a setter `const X& set_NAME(const TYPE&) const`, and adds
/// the field to the class's field list. TYPE is `torch::Tensor`, another tensorclass,
/// `tensordict::TensorDict`, or any copyable non-tensor type (use an alias for types whose
/// names contain commas). At most 64 fields.
///
/// The getter returns the stored tensor (aliased), the nested tensorclass or TensorDict
/// (aliased), or a copy of the non-tensor value (TypeError when elements hold different
/// values, e.g. after stacking unequal ones). The setter validates as TensorDict::set
/// (ShapeError when the value does not start with batch_size()) and writes through every
/// alias of the instance.
#define TENSORDICT_FIELD(TYPE, NAME)                                                           \
  static_assert(TENSORDICT_FIELDS_SO_FAR_::size < ::tensordict::detail::kMaxTensorClassFields, \
                "a tensorclass holds at most 64 fields");                                      \
  friend class ::tensordict::TensorClass<TensorClassSelf>;                                     \
  struct TensorDictField_##NAME {                                                              \
    using type = TYPE;                                                                         \
    static constexpr const char* name() { return #NAME; }                                      \
  };                                                                                           \
  TYPE NAME() const { return field_get_<TYPE>(#NAME); }                                        \
  const TensorClassSelf& set_##NAME(const TYPE& value) const {                                 \
    field_set_<TYPE>(#NAME, value);                                                            \
    return *this;                                                                              \
  }                                                                                            \
  static typename ::tensordict::detail::FieldListAppend<TENSORDICT_FIELDS_SO_FAR_,             \
                                                        TensorDictField_##NAME>::type          \
      tensordict_fields_(::tensordict::detail::FieldRank<TENSORDICT_FIELDS_SO_FAR_::size + 1>)

/// Internal to TENSORDICT_FIELD: the field list declared so far in the enclosing class.
#define TENSORDICT_FIELDS_SO_FAR_ \
  decltype(tensordict_fields_(    \
      ::tensordict::detail::FieldRank<::tensordict::detail::kMaxTensorClassFields>{}))
