// TensorDict construction, keys, reading and writing single entries.

#include <tensordict/lazy_stacked_tensordict.h>
#include <tensordict/tensor_dict.h>

#include <numeric>

#include "detail/impl.h"

namespace tensordict {

using detail::DenseImpl;
using detail::Kind;

namespace detail {

std::vector<int64_t> value_shape(const Value& value) {
  if (auto* t = std::get_if<torch::Tensor>(&value)) return t->sizes().vec();
  if (auto* td = std::get_if<TensorDict>(&value)) return td->batch_size();
  return std::get<NonTensorData>(value).batch_size();
}

bool starts_with(c10::IntArrayRef shape, c10::IntArrayRef prefix) {
  if (shape.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (shape[i] != prefix[i]) return false;
  return true;
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op, bool allow_end) {
  const int64_t n = allow_end ? ndim + 1 : ndim;
  TDRL_CHECK(!(dim < -n || dim >= n), ValueError, std::string(op), ": dim ", std::to_string(dim),
             " is out of range for ", std::to_string(ndim), " batch dims (expected a dim in [",
             std::to_string(-n), ", ", std::to_string(n - 1), "])");
  return dim < 0 ? dim + n : dim;
}

std::string kind_name(const Value& value) {
  if (std::holds_alternative<torch::Tensor>(value)) return "a tensor";
  if (std::holds_alternative<TensorDict>(value)) return "a TensorDict";
  return "non-tensor data";
}

}  // namespace detail

namespace {

const DenseImpl* as_dense(const std::shared_ptr<detail::TensorDictImpl>& impl) {
  return impl->kind() == Kind::kDense ? static_cast<const DenseImpl*>(impl.get()) : nullptr;
}

}  // namespace

const Value* detail::entry_of(const TensorDict& td, const std::string& key,
                              std::optional<Value>& holder) {
  if (const auto* dense = as_dense(td.impl())) return dense->lookup(key);
  holder = td.impl()->find(key);
  return holder ? &*holder : nullptr;
}

namespace {

// Walks `key` up to its last part. Returns the container holding the last part, or nothing
// when an intermediate is missing. Throws KeyError when an intermediate is not a TensorDict.
std::optional<TensorDict> container_of(const TensorDict& root, const NestedKey& key, const char* op,
                                       size_t* missing_depth = nullptr) {
  TensorDict td = root;
  for (size_t i = 0; i + 1 < key.size(); ++i) {
    std::optional<Value> holder;
    const Value* v = detail::entry_of(td, key[i], holder);
    if (!v) {
      if (missing_depth) *missing_depth = i;
      return std::nullopt;
    }
    auto* nested = std::get_if<TensorDict>(v);
    TDRL_CHECK(nested, KeyError, std::string(op), ": key ", key.to_string(), " runs through '",
               key[i], "', which holds ", detail::kind_name(*v), ", not a TensorDict");
    td = *nested;
  }
  return td;
}

}  // namespace

// ---- Item and construction ------------------------------------------------------------------

TensorDict::Item::Item(NestedKey k, torch::Tensor v) : key(std::move(k)), value(std::move(v)) {}
TensorDict::Item::Item(NestedKey k, TensorDict v) : key(std::move(k)), value(std::move(v)) {}
TensorDict::Item::Item(NestedKey k, NonTensorData v) : key(std::move(k)), value(std::move(v)) {}
TensorDict::Item::Item(NestedKey k, const char* v)
    : key(std::move(k)), value(NonTensorData(AnyValue(v))) {}
TensorDict::Item::Item(NestedKey k, std::string v)
    : key(std::move(k)), value(NonTensorData(AnyValue(std::move(v)))) {}
TensorDict::Item::Item(NestedKey k, std::initializer_list<Item> nested)
    : key(std::move(k)), value(std::vector<Item>(nested)) {}

namespace {
void fill_from_items(const TensorDict& td, const std::vector<TensorDict::Item>& items) {
  for (const auto& item : items) {
    std::visit(
        [&](const auto& v) {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same<V, std::vector<TensorDict::Item>>::value) {
            auto nested = TensorDict::empty(td.batch_size(), td.device());
            fill_from_items(nested, v);
            td.set(item.key, nested);
          } else {
            td.set(item.key, v);
          }
        },
        item.value);
  }
}
}  // namespace

TensorDict::TensorDict() : impl_(std::make_shared<DenseImpl>(BatchSize{}, std::nullopt)) {}

TensorDict::TensorDict(std::shared_ptr<detail::TensorDictImpl> impl) : impl_(std::move(impl)) {
  TORCH_INTERNAL_ASSERT(impl_, "TensorDict handle built from a null state");
}

TensorDict::TensorDict(std::initializer_list<Item> items, BatchSize batch_size,
                       std::optional<torch::Device> device)
    : impl_(std::make_shared<DenseImpl>(std::move(batch_size), device)) {
  fill_from_items(*this, std::vector<Item>(items));
}

TensorDict::TensorDict(const std::vector<std::pair<NestedKey, Value>>& items, BatchSize batch_size,
                       std::optional<torch::Device> device)
    : impl_(std::make_shared<DenseImpl>(std::move(batch_size), device)) {
  for (const auto& [key, value] : items) set(key, value);
}

TensorDict TensorDict::empty(BatchSize batch_size, std::optional<torch::Device> device) {
  for (int64_t d : batch_size)
    TDRL_CHECK(!(d < 0), ShapeError, "TensorDict::empty: batch_size ", shape_str(batch_size),
               " has a negative dim");
  return TensorDict(std::make_shared<DenseImpl>(std::move(batch_size), device));
}

// ---- Shape and device -----------------------------------------------------------------------

const BatchSize& TensorDict::batch_size() const { return impl_->batch_size(); }

int64_t TensorDict::numel() const {
  const auto& b = batch_size();
  return std::accumulate(b.begin(), b.end(), int64_t{1}, std::multiplies<int64_t>());
}

std::optional<torch::Device> TensorDict::device() const { return impl_->device(); }

const TensorDict& TensorDict::clear_device_() const {
  impl_->set_device(std::nullopt);
  for (const auto& key : impl_->keys()) {
    auto v = impl_->find(key);
    if (auto* td = std::get_if<TensorDict>(&*v)) td->clear_device_();
  }
  return *this;
}

const TensorDict& TensorDict::set_batch_size(BatchSize new_batch) const {
  for (const auto& key : impl_->keys()) {
    auto v = impl_->find(key);
    // A uniform non-tensor entry spans any batch size (it is restamped below).
    if (auto* nt = std::get_if<NonTensorData>(&*v); nt && nt->is_uniform()) continue;
    auto shape = detail::value_shape(*v);
    TDRL_CHECK(detail::starts_with(shape, new_batch), ShapeError,
               "TensorDict::set_batch_size: entry '", key, "' (", detail::kind_name(*v),
               ") has shape ", shape_str(shape), ", which does not start with the new ",
               "batch_size ", shape_str(new_batch), "; the batch size stays ",
               shape_str(batch_size()));
  }
  impl_->set_batch_size(std::move(new_batch));
  // Uniform non-tensor entries span the whole batch: restamp them.
  for (const auto& key : impl_->keys()) {
    auto v = impl_->find(key);
    if (auto* nt = std::get_if<NonTensorData>(&*v); nt && nt->is_uniform())
      impl_->store(key, nt->with_batch(batch_size()));
  }
  return *this;
}

const TensorDict& TensorDict::auto_batch_size_() const {
  std::optional<std::vector<int64_t>> common;
  for (const auto& key : impl_->keys()) {
    auto v = impl_->find(key);
    if (auto* nt = std::get_if<NonTensorData>(&*v); nt && nt->is_uniform()) continue;
    auto shape = detail::value_shape(*v);
    if (!common) {
      common = shape;
      continue;
    }
    size_t n = 0;
    while (n < common->size() && n < shape.size() && (*common)[n] == shape[n]) ++n;
    common->resize(n);
  }
  return set_batch_size(common.value_or(batch_size()));
}

// ---- Keys -----------------------------------------------------------------------------------

// Walks the path without reading the last entry (a lazy stack would stack it) and answers
// false, never throws, when the path runs through a non-TensorDict entry.
bool TensorDict::contains(const NestedKey& key) const {
  TensorDict td = *this;
  for (size_t i = 0; i + 1 < key.size(); ++i) {
    auto v = td.impl()->find(key[i]);
    auto* nested = v ? std::get_if<TensorDict>(&*v) : nullptr;
    if (!nested) return false;
    td = *nested;
  }
  return td.impl()->contains(key.back());
}

std::vector<std::pair<NestedKey, Value>> TensorDict::items(bool include_nested,
                                                           bool leaves_only) const {
  std::vector<std::pair<NestedKey, Value>> out;
  std::function<void(const TensorDict&, const NestedKey*)> walk = [&](const TensorDict& td,
                                                                      const NestedKey* prefix) {
    for (const auto& k : td.impl()->keys()) {
      auto v = td.impl()->find(k);
      NestedKey path = prefix ? prefix->join(k) : NestedKey(k);
      auto* nested = std::get_if<TensorDict>(&*v);
      if (!(nested && leaves_only)) out.emplace_back(path, *v);
      if (nested && include_nested) walk(*nested, &path);
    }
  };
  walk(*this, nullptr);
  return out;
}

std::vector<NestedKey> TensorDict::keys(bool include_nested, bool leaves_only) const {
  if (!include_nested && !leaves_only) {
    auto ks = impl_->keys();
    return std::vector<NestedKey>(ks.begin(), ks.end());
  }
  std::vector<NestedKey> out;
  for (auto& item : items(include_nested, leaves_only)) out.push_back(std::move(item.first));
  return out;
}

std::vector<Value> TensorDict::values(bool include_nested, bool leaves_only) const {
  std::vector<Value> out;
  for (auto& item : items(include_nested, leaves_only)) out.push_back(std::move(item.second));
  return out;
}

// ---- Reading --------------------------------------------------------------------------------

std::optional<Value> TensorDict::find_value(const NestedKey& key) const {
  if (key.size() == 1) return impl_->find(key.front());
  auto container = container_of(*this, key, "TensorDict::find_value");
  if (!container) return std::nullopt;
  return container->impl()->find(key.back());
}

Value TensorDict::get_value(const NestedKey& key) const {
  if (const auto* dense = as_dense(impl_); dense && key.size() == 1) {
    if (const Value* v = dense->lookup(key.front())) return *v;
  }
  size_t missing_depth = 0;
  auto container = container_of(*this, key, "TensorDict::get", &missing_depth);
  if (!container) {
    TensorDict at = *this;
    for (size_t i = 0; i < missing_depth; ++i) at = std::get<TensorDict>(*at.impl()->find(key[i]));
    throw KeyError(
        "TensorDict::get: key " + key.to_string() + " not found: no '" + key[missing_depth] +
        "' at depth " + std::to_string(missing_depth) +
        "; available keys there: " + closest_names(key[missing_depth], at.impl()->keys()));
  }
  std::optional<Value> holder;
  const Value* v = detail::entry_of(*container, key.back(), holder);
  TDRL_CHECK(v, KeyError, "TensorDict::get: key ", key.to_string(), " not found; available keys",
             (key.size() > 1 ? std::string(" there") : std::string()), ": ",
             (closest_names(key.back(), container->impl()->keys())));
  return holder ? std::move(*holder) : *v;
}

torch::Tensor TensorDict::get(const NestedKey& key) const {
  if (const auto* dense = as_dense(impl_); dense && key.size() == 1) {
    if (const Value* v = dense->lookup(key.front())) {
      if (auto* t = std::get_if<torch::Tensor>(v)) return *t;
    }
  }
  Value v = get_value(key);
  if (auto* t = std::get_if<torch::Tensor>(&v)) return *t;
  throw TypeError("TensorDict::get: key " + key.to_string() + " holds " + detail::kind_name(v) +
                  ", not a tensor; use " +
                  (std::holds_alternative<TensorDict>(v) ? "get_tensordict" : "get_non_tensor"));
}

std::optional<torch::Tensor> TensorDict::find(const NestedKey& key) const {
  auto v = find_value(key);
  if (!v) return std::nullopt;
  if (auto* t = std::get_if<torch::Tensor>(&*v)) return *t;
  throw TypeError("TensorDict::find: key " + key.to_string() + " holds " + detail::kind_name(*v) +
                  ", not a tensor");
}

torch::Tensor TensorDict::get_or(const NestedKey& key, torch::Tensor default_value) const {
  auto t = find(key);
  return t ? *t : std::move(default_value);
}

TensorDict TensorDict::get_tensordict(const NestedKey& key) const {
  Value v = get_value(key);
  if (auto* td = std::get_if<TensorDict>(&v)) return *td;
  throw TypeError("TensorDict::get_tensordict: key " + key.to_string() + " holds " +
                  detail::kind_name(v) + ", not a TensorDict");
}

NonTensorData TensorDict::get_non_tensor(const NestedKey& key) const {
  Value v = get_value(key);
  if (auto* nt = std::get_if<NonTensorData>(&v)) return *nt;
  throw TypeError("TensorDict::get_non_tensor: key " + key.to_string() + " holds " +
                  detail::kind_name(v) + ", not non-tensor data");
}

// ---- Writing --------------------------------------------------------------------------------

namespace {

// The value as it will be stored in a TensorDict of `batch` and `device`, or a ShapeError.
Value prepare_value(const char* op, const NestedKey& key, Value value, const BatchSize& batch,
                    const std::optional<torch::Device>& device) {
  if (auto* t = std::get_if<torch::Tensor>(&value)) {
    TDRL_CHECK(t->defined(), ValueError, std::string(op), ": value for key ", key.to_string(),
               " is an undefined tensor");
    TDRL_CHECK(detail::starts_with(t->sizes(), batch), ShapeError, std::string(op), ": key ",
               key.to_string(), ": tensor shape ", shape_str(t->sizes()),
               " does not start with batch_size ", shape_str(batch),
               "; give the value leading dims ", shape_str(batch),
               " or change the TensorDict's batch_size");
    if (device && t->device() != *device) return t->to(*device);
    return value;
  }
  if (auto* td = std::get_if<TensorDict>(&value)) {
    TDRL_CHECK(detail::starts_with(td->batch_size(), batch), ShapeError, std::string(op), ": key ",
               key.to_string(), ": nested TensorDict batch_size ", shape_str(td->batch_size()),
               " does not start with batch_size ", shape_str(batch),
               "; nested TensorDicts need the parent's leading dims");
    if (device && td->device() != device) {
      bool all_there = true;
      detail::for_each_leaf(*td, [&](const NestedKey&, const torch::Tensor& t) {
        all_there = all_there && t.device() == *device;
      });
      if (!all_there || td->device().has_value()) return td->to(*device);
    }
    return value;
  }
  const auto& nt = std::get<NonTensorData>(value);
  if (nt.is_uniform()) return nt.with_batch(batch);
  TDRL_CHECK(detail::starts_with(nt.batch_size(), batch), ShapeError, std::string(op), ": key ",
             key.to_string(), ": non-tensor data of shape ", shape_str(nt.batch_size()),
             " does not start with batch_size ", shape_str(batch));
  return value;
}

}  // namespace

detail::PreparedSet detail::prepare_set(const TensorDict& root, const NestedKey& key, Value value,
                                        const char* op) {
  // The deepest existing TensorDict on the path: created intermediates take its batch size
  // and device, and the value is checked against it.
  TensorDict td = root;
  size_t i = 0;
  for (; i + 1 < key.size(); ++i) {
    std::optional<Value> holder;
    const Value* v = entry_of(td, key[i], holder);
    if (!v) break;
    auto* nested = std::get_if<TensorDict>(v);
    TDRL_CHECK(nested, KeyError, std::string(op), ": key ", key.to_string(), " runs through '",
               key[i], "', which holds ", kind_name(*v), ", not a TensorDict");
    td = *nested;
  }
  Value prepared = prepare_value(op, key, std::move(value), td.batch_size(), td.device());
  return {std::move(td), i, std::move(prepared)};
}

void detail::commit_set(PreparedSet prepared, const NestedKey& key) {
  TensorDict td = std::move(prepared.deepest);
  for (size_t i = prepared.depth; i + 1 < key.size(); ++i) {
    // An earlier write of the same batch may have created this intermediate since.
    if (!td.impl()->contains(key[i]))
      td.impl()->store(key[i], TensorDict::empty(td.batch_size(), td.device()));
    // Re-read: a lazy stack stores a split copy, so the stored handle is the one to follow.
    std::optional<Value> holder;
    td = std::get<TensorDict>(*entry_of(td, key[i], holder));
  }
  td.impl()->store(key.back(), std::move(prepared.value));
}

namespace {
// True when `root` is `value` or one of its nested TensorDicts: storing `value` under `root`
// would make a cycle (endless printing, leaked memory).
bool contains_tensordict(const TensorDict& value, const TensorDict& root) {
  if (value.is_same(root)) return true;
  bool found = false;
  if (value.is_lazy_stack()) {
    for (const auto& m : LazyStackedTensorDict(value).tensordicts())
      found = found || contains_tensordict(m, root);
    return found;
  }
  if (value.is_sub_tensordict())
    return contains_tensordict(static_cast<const detail::SubImpl&>(*value.impl()).parent(), root);
  detail::for_each_entry(value, [&](const std::string&, const Value& v) {
    if (auto* nested = std::get_if<TensorDict>(&v))
      found = found || contains_tensordict(*nested, root);
  });
  return found;
}
}  // namespace

const TensorDict& TensorDict::set(const NestedKey& key, const Value& value) const {
  static constexpr const char* kOp = "TensorDict::set";
  const auto* td = std::get_if<TensorDict>(&value);
  TDRL_CHECK(!(td && contains_tensordict(*td, *this)), ValueError, "TensorDict::set: key ",
             key.to_string(),
             ": the value contains this TensorDict, which would make a cycle; set a clone()");
  if (key.size() == 1) {
    impl_->store(key.front(), prepare_value(kOp, key, value, batch_size(), device()));
    return *this;
  }
  detail::commit_set(detail::prepare_set(*this, key, value, kOp), key);
  return *this;
}

const TensorDict& TensorDict::set(const NestedKey& key, const torch::Tensor& value) const {
  if (key.size() == 1) {
    impl_->store(key.front(),
                 prepare_value("TensorDict::set", key, Value(value), batch_size(), device()));
    return *this;
  }
  return set(key, Value(value));
}
const TensorDict& TensorDict::set(const NestedKey& key, const TensorDict& value) const {
  return set(key, Value(value));
}
const TensorDict& TensorDict::set(const NestedKey& key, const NonTensorData& value) const {
  return set(key, Value(value));
}
const TensorDict& TensorDict::set(const NestedKey& key, const char* value) const {
  return set(key, NonTensorData(AnyValue(value)));
}
const TensorDict& TensorDict::set(const NestedKey& key, const std::string& value) const {
  return set(key, NonTensorData(AnyValue(value)));
}

namespace detail {
// The existing tensor at `key` and its container, for in-place writes (KeyError/TypeError).
std::pair<TensorDict, torch::Tensor> existing_tensor(const TensorDict& root, const NestedKey& key,
                                                     const char* op) {
  auto container = container_of(root, key, op);
  std::optional<Value> v = container ? container->impl()->find(key.back()) : std::nullopt;
  TDRL_CHECK(v, KeyError, std::string(op), ": key ", key.to_string(),
             " not found; in-place writes need an existing tensor (use set to add one)");
  auto* t = std::get_if<torch::Tensor>(&*v);
  TDRL_CHECK(t, TypeError, std::string(op), ": key ", key.to_string(), " holds ", kind_name(*v),
             ", not a tensor");
  return {*container, *t};
}

void check_inplace_value(const char* op, const NestedKey& key, const torch::Tensor& dst,
                         c10::IntArrayRef region, const torch::Tensor& value) {
  TDRL_CHECK(value.defined(), ValueError, std::string(op), ": value for key ", key.to_string(),
             " is an undefined tensor");
  TDRL_CHECK(value.scalar_type() == dst.scalar_type(), TypeError, std::string(op), ": key ",
             key.to_string(), " holds ", std::string(c10::toString(dst.scalar_type())),
             " but the value is ", std::string(c10::toString(value.scalar_type())),
             "; cast it with .to(", std::string(c10::toString(dst.scalar_type())), ") first");
  TDRL_CHECK(at::is_expandable_to(value.sizes(), region), ShapeError, std::string(op), ": key ",
             key.to_string(), ": value of shape ", shape_str(value.sizes()),
             " does not broadcast to the destination shape ", shape_str(region));
}
}  // namespace detail

const TensorDict& TensorDict::set_(const NestedKey& key, const torch::Tensor& value) const {
  static constexpr const char* kOp = "TensorDict::set_";
  auto [container, dst] = detail::existing_tensor(*this, key, kOp);
  detail::check_inplace_value(kOp, key, dst, dst.sizes(), value);
  container.impl()->store_inplace(key.back(), value.expand(dst.sizes()));
  return *this;
}

const TensorDict& TensorDict::del_(const NestedKey& key) const {
  auto container = container_of(*this, key, "TensorDict::del_");
  TDRL_CHECK(container && container->impl()->contains(key.back()), KeyError,
             "TensorDict::del_: key ", key.to_string(), " not found; available keys: ",
             (closest_names(key.back(), container ? container->impl()->keys() : impl_->keys())));
  container->impl()->erase(key.back());
  return *this;
}

Value TensorDict::pop(const NestedKey& key) const {
  Value v = get_value(key);
  del_(key);
  return v;
}

const TensorDict& TensorDict::rename_key_(const NestedKey& old_key,
                                          const NestedKey& new_key) const {
  if (old_key == new_key) {
    get_value(old_key);
    return *this;
  }
  Value v = get_value(old_key);
  TDRL_CHECK(!contains(new_key), KeyError, "TensorDict::rename_key_: key ", new_key.to_string(),
             " already exists; delete it first or pick another name");
  if (old_key.size() == 1 && new_key.size() == 1) {
    impl_->rename(old_key.front(), new_key.front());
    return *this;
  }
  set(new_key, v);
  del_(old_key);
  return *this;
}

bool TensorDict::is_lazy_stack() const { return impl_->kind() == Kind::kLazyStack; }
bool TensorDict::is_sub_tensordict() const { return impl_->kind() == Kind::kSub; }

// ---- Lazy stack handle -------------------------------------------------------------------

LazyStackedTensorDict::LazyStackedTensorDict(const TensorDict& td) : TensorDict(td) {
  TDRL_CHECK(td.is_lazy_stack(), TypeError,
             "LazyStackedTensorDict: the TensorDict is not a lazy stack (make one with "
             "tensordict::stack)");
}

const std::vector<TensorDict>& LazyStackedTensorDict::tensordicts() const {
  return static_cast<const detail::LazyStackImpl&>(*impl()).tensordicts();
}

int64_t LazyStackedTensorDict::stack_dim() const {
  return static_cast<const detail::LazyStackImpl&>(*impl()).stack_dim();
}

}  // namespace tensordict
