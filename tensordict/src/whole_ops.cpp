// Operations on every entry: clone, to, apply, select, update, fill, comparisons, arithmetic,
// reductions, key flattening. In-place operations compute and check every result before
// writing any, so a failure leaves the TensorDict as it was.

#include <tensordict/lazy_stacked_tensordict.h>
#include <tensordict/tensor_dict.h>

#include <set>

#include <ATen/Context.h>
#include <torch/cuda.h>

#include "detail/impl.h"

namespace tensordict {

using detail::Kind;

namespace detail {

void for_each_leaf(const TensorDict& td,
                   const std::function<void(const NestedKey&, const torch::Tensor&)>& fn) {
  std::function<void(const TensorDict&, const NestedKey*)> walk = [&](const TensorDict& t,
                                                                      const NestedKey* prefix) {
    for_each_entry(t, [&](const std::string& k, const Value& v) {
      NestedKey path = prefix ? prefix->join(k) : NestedKey(k);
      if (auto* x = std::get_if<torch::Tensor>(&v))
        fn(path, *x);
      else if (auto* nested = std::get_if<TensorDict>(&v))
        walk(*nested, &path);
    });
  };
  walk(td, nullptr);
}

void for_each_stored_leaf(const TensorDict& td,
                          const std::function<void(const torch::Tensor&)>& fn) {
  if (td.is_lazy_stack()) {
    for (const auto& m : LazyStackedTensorDict(td).tensordicts()) for_each_stored_leaf(m, fn);
    return;
  }
  if (td.is_sub_tensordict()) {
    for_each_stored_leaf(static_cast<const SubImpl&>(*td.impl()).parent(), fn);
    return;
  }
  for_each_entry(td, [&](const std::string&, const Value& v) {
    if (auto* t = std::get_if<torch::Tensor>(&v))
      fn(*t);
    else if (auto* nested = std::get_if<TensorDict>(&v))
      for_each_stored_leaf(*nested, fn);
  });
}

TensorDict map_leaves(
    const TensorDict& td, const NestedKey* path,
    const std::function<torch::Tensor(const NestedKey&, const torch::Tensor&)>& fn,
    const std::optional<torch::Device>& device) {
  auto out = std::make_shared<DenseImpl>(td.batch_size(), device);
  for_each_entry(td, [&](const std::string& k, const Value& v) {
    NestedKey key = path ? path->join(k) : NestedKey(k);
    if (auto* t = std::get_if<torch::Tensor>(&v)) {
      torch::Tensor r = fn(key, *t);
      if (!r.defined()) return;
      TDRL_CHECK(starts_with(r.sizes(), td.batch_size()), ShapeError,
                 "TensorDict::apply: the function turned key ", key.to_string(), " of shape ",
                 shape_str(t->sizes()), " into shape ", shape_str(r.sizes()),
                 ", which does not start with batch_size ", shape_str(td.batch_size()));
      out->append(k, std::move(r));
    } else if (auto* nested = std::get_if<TensorDict>(&v)) {
      out->append(k, map_leaves(*nested, &key, fn, device));
    } else {
      out->append(k, v);
    }
  });
  return TensorDict(out);
}

void modify_leaf(const TensorDict& root, const NestedKey& key,
                 const std::function<void(torch::Tensor&)>& op) {
  TensorDict td = root;
  bool dense = root.impl()->kind() == Kind::kDense;
  for (size_t i = 0; i + 1 < key.size(); ++i) {
    td = std::get<TensorDict>(*td.impl()->find(key[i]));
    dense = dense && td.impl()->kind() == Kind::kDense;
  }
  if (dense) {
    Value* v = static_cast<DenseImpl&>(*td.impl()).lookup(key.back());
    TORCH_INTERNAL_ASSERT(v && std::holds_alternative<torch::Tensor>(*v),
                          "modify_leaf: ", key.to_string());
    op(std::get<torch::Tensor>(*v));
    return;
  }
  torch::Tensor copy = std::get<torch::Tensor>(*td.impl()->find(key.back()));
  op(copy);
  td.impl()->store_inplace(key.back(), copy);
}

}  // namespace detail

namespace {

using TensorFn = std::function<torch::Tensor(const torch::Tensor&)>;
using BinaryFn = std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&)>;

// Every (key, result) is computed and checked first; only then is anything written.
void write_results(const TensorDict& td, const char* op,
                   const std::vector<std::pair<NestedKey, torch::Tensor>>& results) {
  for (const auto& [key, r] : results) {
    auto dst = td.get(key);
    detail::check_inplace_value(op, key, dst, dst.sizes(), r);
  }
  for (const auto& entry : results) {
    const torch::Tensor& r = entry.second;
    detail::modify_leaf(td, entry.first, [&](torch::Tensor& dst) { dst.copy_(r); });
  }
}

// Leaves of `td` paired with those of `other` (KeyError when `other` misses one).
std::vector<std::tuple<NestedKey, torch::Tensor, torch::Tensor>> paired_leaves(
    const TensorDict& td, const TensorDict& other, const char* op) {
  std::vector<std::tuple<NestedKey, torch::Tensor, torch::Tensor>> out;
  detail::for_each_leaf(td, [&](const NestedKey& key, const torch::Tensor& t) {
    auto o = other.find_value(key);
    TDRL_CHECK(o, KeyError, std::string(op), ": the other TensorDict has no key ", key.to_string());
    auto* ot = std::get_if<torch::Tensor>(&*o);
    TDRL_CHECK(ot, TypeError, std::string(op), ": key ", key.to_string(), " is a tensor here but ",
               detail::kind_name(*o), " in the other TensorDict");
    out.emplace_back(key, t, *ot);
  });
  return out;
}

// Runs a leaf-wise computation, turning LibTorch errors into errors that name the key.
template <class F>
auto leaf_guard(const char* op, const NestedKey& key, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const c10::Error& e) {
    throw TypeError(std::string(op) + ": key " + key.to_string() + ": " +
                    e.what_without_backtrace());
  }
}

torch::Tensor mask_for(const torch::Tensor& mask, const torch::Tensor& t) {
  if (mask.dim() == t.dim()) return mask;
  std::vector<int64_t> shape = mask.sizes().vec();
  shape.resize(static_cast<size_t>(t.dim()), 1);
  return mask.reshape(shape);
}

void check_mask(const char* op, const torch::Tensor& mask, const BatchSize& batch) {
  TDRL_CHECK(mask.scalar_type() == torch::kBool, TypeError, std::string(op),
             ": the mask must be bool, got ", std::string(c10::toString(mask.scalar_type())));
  TDRL_CHECK(detail::starts_with(batch, mask.sizes()), ShapeError, std::string(op), ": mask shape ",
             shape_str(mask.sizes()), " is not a prefix of batch_size ", shape_str(batch));
}

}  // namespace

TensorDict TensorDict::clone(bool recurse) const {
  if (is_lazy_stack()) {
    LazyStackedTensorDict lazy(*this);
    std::vector<TensorDict> members;
    for (const auto& m : lazy.tensordicts()) members.push_back(m.clone(recurse));
    return stack(members, lazy.stack_dim());
  }
  if (!recurse)
    return detail::map_leaves(
        *this, nullptr, [](const NestedKey&, const torch::Tensor& t) { return t; }, device());
  return detail::map_leaves(
      *this, nullptr, [](const NestedKey&, const torch::Tensor& t) { return t.clone(); }, device());
}

TensorDict TensorDict::detach() const {
  return detail::map_leaves(
      *this, nullptr, [](const NestedKey&, const torch::Tensor& t) { return t.detach(); },
      device());
}

TensorDict TensorDict::to(torch::Device device, bool non_blocking) const {
  return detail::map_leaves(
      *this, nullptr,
      [&](const NestedKey&, const torch::Tensor& t) { return t.to(device, non_blocking); }, device);
}

TensorDict TensorDict::pin_memory() const {
  static constexpr const char* kOp = "TensorDict::pin_memory";
  TDRL_CHECK(torch::cuda::is_available(), DeviceError, kOp,
             ": pinned memory needs a LibTorch built with CUDA and a GPU, and this process has ",
             at::hasCUDA() ? "no GPU" : "a LibTorch without CUDA",
             "; leave the TensorDict in pageable memory (skip pin_memory) on this machine");
  // Every leaf is checked before any is copied, so a refusal leaves nothing half done.
  for (const auto& [key, value] : items(true, true)) {
    const auto* t = std::get_if<torch::Tensor>(&value);
    TDRL_CHECK(!t || t->device().is_cpu(), DeviceError, kOp, ": ", key.to_string(), " is on ",
               t->device().str(), "; only CPU tensors can be pinned (move it with to(cpu) first)");
  }
  return detail::map_leaves(
      *this, nullptr,
      [](const NestedKey&, const torch::Tensor& t) { return t.is_pinned() ? t : t.pin_memory(); },
      device());
}

bool TensorDict::is_pinned() const {
  bool any = false;
  for (const auto& [key, value] : items(true, true)) {
    const auto* t = std::get_if<torch::Tensor>(&value);
    if (!t) continue;
    if (!t->device().is_cpu() || !t->is_pinned()) return false;
    any = true;
  }
  return any;
}

TensorDict TensorDict::to(torch::Dtype dtype) const {
  return detail::map_leaves(
      *this, nullptr, [&](const NestedKey&, const torch::Tensor& t) { return t.to(dtype); },
      device());
}

TensorDict TensorDict::apply(const TensorFn& fn) const {
  return detail::map_leaves(
      *this, nullptr, [&](const NestedKey&, const torch::Tensor& t) { return fn(t); }, device());
}

TensorDict TensorDict::apply(const TensorDict& other, const BinaryFn& fn) const {
  static constexpr const char* kOp = "TensorDict::apply";
  paired_leaves(*this, other, kOp);  // checks before any work
  return detail::map_leaves(
      *this, nullptr,
      [&](const NestedKey& key, const torch::Tensor& t) {
        return leaf_guard(kOp, key, [&] { return fn(t, other.get(key)); });
      },
      device());
}

TensorDict TensorDict::named_apply(
    const std::function<torch::Tensor(const NestedKey&, const torch::Tensor&)>& fn) const {
  return detail::map_leaves(*this, nullptr, fn, device());
}

const TensorDict& TensorDict::apply_(const TensorFn& fn) const {
  static constexpr const char* kOp = "TensorDict::apply_";
  // Lazy stacks are walked member by member: members may hold different shapes past the
  // batch dims, which a stacked read cannot give. Every result is checked before any write.
  std::vector<std::pair<TensorDict, std::vector<std::pair<NestedKey, torch::Tensor>>>> plans;
  std::function<void(const TensorDict&)> collect = [&](const TensorDict& td) {
    if (td.is_lazy_stack()) {
      for (const auto& m : LazyStackedTensorDict(td).tensordicts()) collect(m);
      return;
    }
    std::vector<std::pair<NestedKey, torch::Tensor>> results;
    detail::for_each_leaf(td, [&](const NestedKey& key, const torch::Tensor& t) {
      results.emplace_back(key, fn(t));
    });
    plans.emplace_back(td, std::move(results));
  };
  collect(*this);
  for (const auto& [td, results] : plans) {
    for (const auto& [key, r] : results) {
      auto dst = td.get(key);
      detail::check_inplace_value(kOp, key, dst, dst.sizes(), r);
    }
  }
  for (const auto& [td, results] : plans) write_results(td, kOp, results);
  return *this;
}

TensorDict TensorDict::select(const std::vector<NestedKey>& keys, bool strict) const {
  auto out = TensorDict::empty(batch_size(), device());
  for (const auto& key : keys) {
    auto v = find_value(key);
    if (!v) {
      TDRL_CHECK(!strict, KeyError, "TensorDict::select: key ", key.to_string(),
                 " not found; available keys: ", (closest_names(key.back(), impl_->keys())),
                 " (pass strict = false to skip missing keys)");
      continue;
    }
    // Parents of a nested key are recreated with their own batch sizes.
    TensorDict src = *this;
    TensorDict dst = out;
    for (size_t i = 0; i + 1 < key.size(); ++i) {
      src = src.get_tensordict(key[i]);
      auto existing = dst.impl()->find(key[i]);
      if (!existing) dst.impl()->store(key[i], TensorDict::empty(src.batch_size(), src.device()));
      dst = std::get<TensorDict>(*dst.impl()->find(key[i]));
    }
    dst.impl()->store(key.back(), *v);
  }
  return out;
}

namespace {
// `td` without the entries `keys` name, rebuilt only along the paths that lose an entry;
// everything else is aliased.
TensorDict exclude_paths(const TensorDict& td, const std::vector<NestedKey>& keys, size_t depth) {
  auto out = std::make_shared<detail::DenseImpl>(td.batch_size(), td.device());
  detail::for_each_entry(td, [&](const std::string& k, const Value& v) {
    std::vector<NestedKey> below;
    bool drop = false;
    for (const auto& key : keys) {
      if (key[depth] != k) continue;
      if (key.size() == depth + 1)
        drop = true;
      else
        below.push_back(key);
    }
    if (drop) return;
    auto* nested = std::get_if<TensorDict>(&v);
    out->append(k, nested && !below.empty() ? Value(exclude_paths(*nested, below, depth + 1)) : v);
  });
  return TensorDict(out);
}
}  // namespace

TensorDict TensorDict::exclude(const std::vector<NestedKey>& keys) const {
  if (is_lazy_stack()) {
    LazyStackedTensorDict lazy(*this);
    std::vector<TensorDict> members;
    for (const auto& m : lazy.tensordicts()) members.push_back(m.exclude(keys));
    return stack(members, lazy.stack_dim());
  }
  return exclude_paths(*this, keys, 0);
}

namespace {

bool selected(const NestedKey& key, const std::vector<NestedKey>& keys_to_update) {
  if (keys_to_update.empty()) return true;
  for (const auto& k : keys_to_update) {
    const size_t n = std::min(k.size(), key.size());
    bool prefix = true;
    for (size_t i = 0; i < n && prefix; ++i) prefix = k[i] == key[i];
    if (prefix) return true;
  }
  return false;
}

// True when `keys_to_update` selects only keys strictly below `key` (not `key` itself).
bool selects_only_below(const NestedKey& key, const std::vector<NestedKey>& keys_to_update) {
  if (keys_to_update.empty()) return false;
  for (const auto& k : keys_to_update) {
    if (k.size() > key.size()) continue;
    bool prefix = true;
    for (size_t i = 0; i < k.size() && prefix; ++i) prefix = k[i] == key[i];
    if (prefix) return false;
  }
  return true;
}

struct PlannedWrite {
  NestedKey key;
  Value value;
  bool inplace;
};

// Python's update: nested TensorDicts merge key by key, other values replace.
void plan_update(const TensorDict& dst, const TensorDict& src, const NestedKey* prefix,
                 const UpdateOptions& options, std::vector<PlannedWrite>& plan) {
  detail::for_each_entry(src, [&](const std::string& k, const Value& v) {
    NestedKey key = prefix ? prefix->join(k) : NestedKey(k);
    if (!selected(key, options.keys_to_update)) return;
    auto existing = dst.find_value(key);
    auto* nested = std::get_if<TensorDict>(&v);
    if (nested && existing && std::holds_alternative<TensorDict>(*existing)) {
      plan_update(dst, *nested, &key, options, plan);
      return;
    }
    // A missing nested TensorDict of which only some keys are selected: create it empty and
    // take the selected keys alone.
    if (nested && !existing && selects_only_below(key, options.keys_to_update)) {
      plan.push_back({key, TensorDict::empty(nested->batch_size(), nested->device()), false});
      plan_update(dst, *nested, &key, options, plan);
      return;
    }
    const bool inplace = options.inplace && existing &&
                         std::holds_alternative<torch::Tensor>(*existing) &&
                         std::holds_alternative<torch::Tensor>(v);
    plan.push_back({key, v, inplace});
  });
}

void run_plan(const TensorDict& td, const std::vector<PlannedWrite>& plan, const char* op) {
  std::vector<detail::PreparedSet> prepared;
  prepared.reserve(plan.size());
  for (const auto& w : plan) {
    if (w.inplace) {
      auto dst = td.get(w.key);
      detail::check_inplace_value(op, w.key, dst, dst.sizes(), std::get<torch::Tensor>(w.value));
    } else {
      prepared.push_back(detail::prepare_set(td, w.key, w.value, op));
    }
  }
  size_t next = 0;
  for (const auto& w : plan) {
    if (w.inplace)
      td.set_(w.key, std::get<torch::Tensor>(w.value));
    else
      detail::commit_set(std::move(prepared[next++]), w.key);
  }
}

}  // namespace

const TensorDict& TensorDict::update(const TensorDict& other, const UpdateOptions& options) const {
  if (other.is_same(*this)) return *this;
  std::vector<PlannedWrite> plan;
  plan_update(*this, other, nullptr, options, plan);
  run_plan(*this, plan, "TensorDict::update");
  return *this;
}

const TensorDict& TensorDict::update(const std::vector<std::pair<NestedKey, Value>>& entries,
                                     const UpdateOptions& options) const {
  std::vector<PlannedWrite> plan;
  for (const auto& [key, v] : entries) {
    if (!selected(key, options.keys_to_update)) continue;
    auto existing = find_value(key);
    if (auto* nested = std::get_if<TensorDict>(&v);
        nested && existing && std::holds_alternative<TensorDict>(*existing)) {
      plan_update(*this, *nested, &key, options, plan);
      continue;
    }
    const bool inplace = options.inplace && existing &&
                         std::holds_alternative<torch::Tensor>(*existing) &&
                         std::holds_alternative<torch::Tensor>(v);
    plan.push_back({key, v, inplace});
  }
  run_plan(*this, plan, "TensorDict::update");
  return *this;
}

const TensorDict& TensorDict::update_(const TensorDict& other) const {
  static constexpr const char* kOp = "TensorDict::update_";
  std::vector<std::pair<NestedKey, torch::Tensor>> results;
  detail::for_each_leaf(other, [&](const NestedKey& key, const torch::Tensor& t) {
    detail::existing_tensor(*this, key, kOp);
    results.emplace_back(key, t);
  });
  for (const auto& [key, r] : results) {
    auto dst = get(key);
    detail::check_inplace_value(kOp, key, dst, dst.sizes(), r);
  }
  for (const auto& [key, r] : results) set_(key, r);
  return *this;
}

const TensorDict& TensorDict::copy_(const TensorDict& other) const { return update_(other); }

const TensorDict& TensorDict::fill_(const NestedKey& key, const c10::Scalar& value) const {
  detail::existing_tensor(*this, key, "TensorDict::fill_");
  detail::modify_leaf(*this, key, [&](torch::Tensor& t) { t.fill_(value); });
  return *this;
}

const TensorDict& TensorDict::fill_(const c10::Scalar& value) const {
  if (is_lazy_stack()) {  // members may hold different shapes: fill each one's own leaves
    for (const auto& m : LazyStackedTensorDict(*this).tensordicts()) m.fill_(value);
    return *this;
  }
  for (const auto& key : keys(true, true))
    if (std::holds_alternative<torch::Tensor>(get_value(key)))
      detail::modify_leaf(*this, key, [&](torch::Tensor& t) { t.fill_(value); });
  return *this;
}

const TensorDict& TensorDict::zero_() const { return fill_(0); }

TensorDict TensorDict::masked_fill(const torch::Tensor& mask, const c10::Scalar& value) const {
  check_mask("TensorDict::masked_fill", mask, batch_size());
  return apply([&](const torch::Tensor& t) { return t.masked_fill(mask_for(mask, t), value); });
}

const TensorDict& TensorDict::masked_fill_(const torch::Tensor& mask,
                                           const c10::Scalar& value) const {
  check_mask("TensorDict::masked_fill_", mask, batch_size());
  for (const auto& key : keys(true, true))
    if (std::holds_alternative<torch::Tensor>(get_value(key)))
      detail::modify_leaf(*this, key,
                          [&](torch::Tensor& t) { t.masked_fill_(mask_for(mask, t), value); });
  return *this;
}

TensorDict TensorDict::where(const torch::Tensor& condition, const TensorDict& other) const {
  check_mask("TensorDict::where", condition, batch_size());
  return apply(other, [&](const torch::Tensor& a, const torch::Tensor& b) {
    return torch::where(mask_for(condition, a), a, b);
  });
}

TensorDict TensorDict::where(const torch::Tensor& condition, const c10::Scalar& other) const {
  check_mask("TensorDict::where", condition, batch_size());
  return apply([&](const torch::Tensor& a) {
    return torch::where(mask_for(condition, a), a, torch::scalar_tensor(other, a.options()));
  });
}

TensorDict TensorDict::flatten_keys(const std::string& separator) const {
  TDRL_CHECK(!separator.empty(), ValueError, "TensorDict::flatten_keys: the separator is empty");
  auto out = std::make_shared<detail::DenseImpl>(batch_size(), device());
  for (auto& [key, v] : items(/*include_nested=*/true, /*leaves_only=*/true)) {
    std::string flat = key.join_parts(separator);
    TDRL_CHECK(!out->contains(flat), ValueError, "TensorDict::flatten_keys: flattening ",
               key.to_string(), " gives '", flat,
               "', which another key already gives; pick another separator");
    out->append(flat, v);
  }
  return TensorDict(out);
}

TensorDict TensorDict::unflatten_keys(const std::string& separator) const {
  TDRL_CHECK(!separator.empty(), ValueError, "TensorDict::unflatten_keys: the separator is empty");
  auto out = TensorDict::empty(batch_size(), device());
  detail::for_each_entry(*this, [&](const std::string& k, const Value& v) {
    std::vector<std::string> parts;
    size_t start = 0;
    for (size_t pos; (pos = k.find(separator, start)) != std::string::npos;
         start = pos + separator.size())
      parts.push_back(k.substr(start, pos - start));
    parts.push_back(k.substr(start));
    for (const auto& p : parts)
      TDRL_CHECK(!p.empty(), ValueError, "TensorDict::unflatten_keys: key '", k,
                 "' has an empty part around '", separator, "'");
    NestedKey key(parts.front());
    for (size_t i = 1; i < parts.size(); ++i) key = key.join(parts[i]);
    TDRL_CHECK(!out.contains(key), ValueError, "TensorDict::unflatten_keys: key '", k,
               "' unflattens to ", key.to_string(), ", which another key already gives");
    if (auto* nested = std::get_if<TensorDict>(&v))
      out.set(key, nested->unflatten_keys(separator));
    else
      out.set(key, v);
  });
  return out;
}

TensorDict TensorDict::empty_like() const {
  auto out = std::make_shared<detail::DenseImpl>(batch_size(), device());
  detail::for_each_entry(*this, [&](const std::string& k, const Value& v) {
    if (auto* nested = std::get_if<TensorDict>(&v)) out->append(k, nested->empty_like());
  });
  return TensorDict(out);
}

bool TensorDict::is_empty() const {
  bool empty = true;
  detail::for_each_entry(*this, [&](const std::string&, const Value& v) {
    if (auto* nested = std::get_if<TensorDict>(&v))
      empty = empty && nested->is_empty();
    else
      empty = false;
  });
  return empty;
}

const TensorDict& TensorDict::requires_grad_(bool requires_grad) const {
  if (is_lazy_stack()) {
    for (const auto& m : LazyStackedTensorDict(*this).tensordicts())
      m.requires_grad_(requires_grad);
    return *this;
  }
  TDRL_CHECK(!is_sub_tensordict(), Error,
             "TensorDict::requires_grad_: a sub-tensordict view holds no tensors of its own; "
             "call it on the parent TensorDict");
  for (const auto& key : keys(true, true)) {
    auto v = get_value(key);
    auto* t = std::get_if<torch::Tensor>(&v);
    if (t && (t->is_floating_point() || t->is_complex()))
      detail::modify_leaf(*this, key, [&](torch::Tensor& x) { x.requires_grad_(requires_grad); });
  }
  return *this;
}

// ---- Comparison and arithmetic ------------------------------------------------------------

namespace {
void check_same_leaves(const TensorDict& a, const TensorDict& b, const char* op) {
  auto ka = a.keys(true, true);
  auto kb = b.keys(true, true);
  std::set<NestedKey> sa(ka.begin(), ka.end()), sb(kb.begin(), kb.end());
  if (sa != sb) {
    std::vector<std::string> only;
    for (const auto& k : sa)
      if (!sb.count(k)) only.push_back(k.to_string() + " (left only)");
    for (const auto& k : sb)
      if (!sa.count(k)) only.push_back(k.to_string() + " (right only)");
    std::string list;
    for (const auto& s : only) list += (list.empty() ? "" : ", ") + s;
    throw KeyError(std::string(op) + ": the TensorDicts have different keys: " + list);
  }
}

TensorDict binary(const TensorDict& a, const TensorDict& b, const char* op, const BinaryFn& fn) {
  check_same_leaves(a, b, op);
  return a.apply(b, fn);
}
}  // namespace

TensorDict TensorDict::operator==(const TensorDict& other) const {
  return binary(*this, other, "TensorDict::operator==",
                [](const torch::Tensor& a, const torch::Tensor& b) { return a.eq(b); });
}
TensorDict TensorDict::operator!=(const TensorDict& other) const {
  return binary(*this, other, "TensorDict::operator!=",
                [](const torch::Tensor& a, const torch::Tensor& b) { return a.ne(b); });
}
TensorDict TensorDict::operator==(const c10::Scalar& other) const {
  return apply([&](const torch::Tensor& t) { return t.eq(other); });
}
TensorDict TensorDict::operator!=(const c10::Scalar& other) const {
  return apply([&](const torch::Tensor& t) { return t.ne(other); });
}

bool TensorDict::all() const {
  bool result = true;
  detail::for_each_leaf(*this, [&](const NestedKey&, const torch::Tensor& t) {
    result = result && (t.numel() == 0 || t.all().item<bool>());
  });
  return result;
}

bool TensorDict::any() const {
  bool result = false;
  detail::for_each_leaf(*this, [&](const NestedKey&, const torch::Tensor& t) {
    result = result || (t.numel() > 0 && t.any().item<bool>());
  });
  return result;
}

bool TensorDict::allclose(const TensorDict& other, double rtol, double atol) const {
  auto ka = keys(true, true);
  auto kb = other.keys(true, true);
  if (std::set<NestedKey>(ka.begin(), ka.end()) != std::set<NestedKey>(kb.begin(), kb.end()))
    return false;
  bool close = true;
  detail::for_each_leaf(*this, [&](const NestedKey& key, const torch::Tensor& t) {
    if (!close) return;
    auto o = other.get(key);
    close = t.sizes() == o.sizes() && t.scalar_type() == o.scalar_type() &&
            torch::allclose(t, o, rtol, atol);
  });
  return close;
}

#define TENSORDICT_BINARY_OP(OP, FN)                                                       \
  TensorDict TensorDict::operator OP(const TensorDict& other) const {                      \
    return binary(*this, other, "TensorDict::operator" #OP,                                \
                  [](const torch::Tensor& a, const torch::Tensor& b) { return a.FN(b); }); \
  }                                                                                        \
  TensorDict TensorDict::operator OP(const c10::Scalar& other) const {                     \
    return apply([&](const torch::Tensor& t) { return t.FN(other); });                     \
  }
TENSORDICT_BINARY_OP(+, add)
TENSORDICT_BINARY_OP(-, sub)
TENSORDICT_BINARY_OP(*, mul)
TENSORDICT_BINARY_OP(/, div)
#undef TENSORDICT_BINARY_OP

namespace {
const TensorDict& inplace_binary(const TensorDict& td, const TensorDict& other, const char* op,
                                 const BinaryFn& fn) {
  std::vector<std::pair<NestedKey, torch::Tensor>> results;
  for (auto& leaves : paired_leaves(td, other, op)) {
    const auto& [key, a, b] = leaves;
    const torch::Tensor& x = a;
    const torch::Tensor& y = b;
    results.emplace_back(key, leaf_guard(op, key, [&] { return fn(x, y); }));
  }
  write_results(td, op, results);
  return td;
}
}  // namespace

const TensorDict& TensorDict::add_(const TensorDict& other) const {
  return inplace_binary(*this, other, "TensorDict::add_",
                        [](const torch::Tensor& a, const torch::Tensor& b) { return a.add(b); });
}
const TensorDict& TensorDict::sub_(const TensorDict& other) const {
  return inplace_binary(*this, other, "TensorDict::sub_",
                        [](const torch::Tensor& a, const torch::Tensor& b) { return a.sub(b); });
}
const TensorDict& TensorDict::mul_(const TensorDict& other) const {
  return inplace_binary(*this, other, "TensorDict::mul_",
                        [](const torch::Tensor& a, const torch::Tensor& b) { return a.mul(b); });
}
const TensorDict& TensorDict::div_(const TensorDict& other) const {
  return inplace_binary(*this, other, "TensorDict::div_",
                        [](const torch::Tensor& a, const torch::Tensor& b) { return a.div(b); });
}
const TensorDict& TensorDict::add_(const c10::Scalar& other) const {
  return apply_([&](const torch::Tensor& t) { return t.add(other); });
}
const TensorDict& TensorDict::mul_(const c10::Scalar& other) const {
  return apply_([&](const torch::Tensor& t) { return t.mul(other); });
}

// ---- Reductions ---------------------------------------------------------------------------

namespace {

using Reducer = std::function<torch::Tensor(const torch::Tensor&, c10::IntArrayRef, bool)>;

TensorDict reduce(const TensorDict& td, std::optional<int64_t> dim, bool keepdim, const char* op,
                  const Reducer& fn) {
  const int64_t nd = td.batch_dims();
  std::vector<int64_t> dims;
  BatchSize b;
  if (dim) {
    const int64_t d = detail::wrap_dim(*dim, nd, op);
    dims.push_back(d);
    b = td.batch_size();
    if (keepdim)
      b[static_cast<size_t>(d)] = 1;
    else
      b.erase(b.begin() + d);
  } else {
    for (int64_t d = 0; d < nd; ++d) dims.push_back(d);
    if (keepdim) b.assign(static_cast<size_t>(nd), 1);
  }
  try {
    return detail::map_batch(
        td, b,
        [&](const torch::Tensor& t) { return dims.empty() ? t.clone() : fn(t, dims, keepdim); },
        /*keep_non_tensor=*/false);
  } catch (const c10::Error& e) {
    throw TypeError(std::string(op) + ": " + e.what_without_backtrace());
  }
}

}  // namespace

TensorDict TensorDict::sum(std::optional<int64_t> dim, bool keepdim) const {
  return reduce(*this, dim, keepdim, "TensorDict::sum",
                [](const torch::Tensor& t, c10::IntArrayRef d, bool k) { return t.sum(d, k); });
}
TensorDict TensorDict::mean(std::optional<int64_t> dim, bool keepdim) const {
  return reduce(*this, dim, keepdim, "TensorDict::mean",
                [](const torch::Tensor& t, c10::IntArrayRef d, bool k) { return t.mean(d, k); });
}
TensorDict TensorDict::max(std::optional<int64_t> dim, bool keepdim) const {
  return reduce(*this, dim, keepdim, "TensorDict::max",
                [](const torch::Tensor& t, c10::IntArrayRef d, bool k) { return t.amax(d, k); });
}
TensorDict TensorDict::min(std::optional<int64_t> dim, bool keepdim) const {
  return reduce(*this, dim, keepdim, "TensorDict::min",
                [](const torch::Tensor& t, c10::IntArrayRef d, bool k) { return t.amin(d, k); });
}

}  // namespace tensordict
