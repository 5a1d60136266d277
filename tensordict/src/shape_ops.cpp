// Operations on batch dims: reshape, view, flatten, permute, squeeze, expand, unbind, split,
// stack, cat, contiguous. Each one maps every leaf with the matching tensor operation applied
// to its leading (batch) dims; feature dims are carried along untouched.

#include <tensordict/lazy_stacked_tensordict.h>
#include <tensordict/tensor_dict.h>

#include <ATen/InferSize.h>  // infer_size(shape, numel); without it the broadcasting overload is picked

#include <numeric>

#include "detail/impl.h"

namespace tensordict {

using detail::Kind;

namespace detail {

void for_each_entry(const TensorDict& td,
                    const std::function<void(const std::string&, const Value&)>& fn) {
  if (td.impl()->kind() == Kind::kDense) {
    for (const auto& [k, v] : static_cast<const DenseImpl&>(*td.impl()).entries()) fn(k, v);
    return;
  }
  for (const auto& k : td.impl()->keys()) fn(k, *td.impl()->find(k));
}

TensorDict map_batch(const TensorDict& td, const BatchSize& new_batch,
                     const std::function<torch::Tensor(const torch::Tensor&)>& leaf,
                     bool keep_non_tensor) {
  auto out = std::make_shared<DenseImpl>(new_batch, td.device());
  const auto nd = static_cast<int64_t>(td.batch_dims());
  auto with_extra = [&](c10::IntArrayRef b) {
    BatchSize r = new_batch;
    r.insert(r.end(), b.begin() + nd, b.end());
    return r;
  };
  for_each_entry(td, [&](const std::string& k, const Value& v) {
    if (auto* t = std::get_if<torch::Tensor>(&v)) {
      out->append(k, leaf(*t));
    } else if (auto* nested = std::get_if<TensorDict>(&v)) {
      out->append(k, map_batch(*nested, with_extra(nested->batch_size()), leaf, keep_non_tensor));
    } else if (keep_non_tensor) {
      const auto& nt = std::get<NonTensorData>(v);
      out->append(
          k, nt.is_uniform() ? nt.with_batch(with_extra(nt.batch_size())) : nt.map_positions(leaf));
    }
  });
  return TensorDict(out);
}

}  // namespace detail

namespace {

// Runs a shape operation, turning LibTorch's errors into ShapeError naming the operation.
template <class F>
auto shape_guard(const char* op, const BatchSize& batch, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const c10::Error& e) {
    throw ShapeError(std::string(op) + " on batch_size " + shape_str(batch) + ": " +
                     e.what_without_backtrace());
  }
}

BatchSize with_features(const BatchSize& batch, const torch::Tensor& t, int64_t nd) {
  BatchSize shape = batch;
  shape.insert(shape.end(), t.sizes().begin() + nd, t.sizes().end());
  return shape;
}

BatchSize infer_batch(const char* op, const BatchSize& from, BatchSize to) {
  int64_t numel = std::accumulate(from.begin(), from.end(), int64_t{1}, std::multiplies<int64_t>());
  return shape_guard(op, from, [&] {
    try {
      return at::infer_size(to, numel);
    } catch (const std::runtime_error& e) {  // LibTorch 1.x throws this, 2.x a c10::Error
      throw ShapeError(std::string(op) + " on batch_size " + shape_str(from) + ": " + e.what());
    }
  });
}

}  // namespace

TensorDict TensorDict::reshape(BatchSize new_batch) const {
  auto b = infer_batch("TensorDict::reshape", batch_size(), std::move(new_batch));
  const int64_t nd = batch_dims();
  return shape_guard("TensorDict::reshape", batch_size(), [&] {
    return detail::map_batch(
        *this, b, [&](const torch::Tensor& t) { return t.reshape(with_features(b, t, nd)); });
  });
}

TensorDict TensorDict::view(BatchSize new_batch) const {
  auto b = infer_batch("TensorDict::view", batch_size(), std::move(new_batch));
  const int64_t nd = batch_dims();
  return shape_guard("TensorDict::view", batch_size(), [&] {
    return detail::map_batch(
        *this, b, [&](const torch::Tensor& t) { return t.view(with_features(b, t, nd)); });
  });
}

TensorDict TensorDict::flatten(int64_t start_dim, int64_t end_dim) const {
  static constexpr const char* kOp = "TensorDict::flatten";
  const int64_t nd = batch_dims();
  TDRL_CHECK(nd != 0, ValueError, std::string(kOp),
             ": the TensorDict has no batch dims to flatten");
  const int64_t s = detail::wrap_dim(start_dim, nd, kOp);
  const int64_t e = detail::wrap_dim(end_dim, nd, kOp);
  TDRL_CHECK(!(s > e), ValueError, std::string(kOp), ": start_dim ", std::to_string(start_dim),
             " comes after end_dim ", std::to_string(end_dim));
  const auto& old = batch_size();
  BatchSize b(old.begin(), old.begin() + s);
  b.push_back(std::accumulate(old.begin() + s, old.begin() + e + 1, int64_t{1},
                              std::multiplies<int64_t>()));
  b.insert(b.end(), old.begin() + e + 1, old.end());
  return detail::map_batch(
      *this, b, [&](const torch::Tensor& t) { return t.reshape(with_features(b, t, nd)); });
}

TensorDict TensorDict::unflatten(int64_t dim, BatchSize sizes) const {
  static constexpr const char* kOp = "TensorDict::unflatten";
  const int64_t nd = batch_dims();
  const int64_t d = detail::wrap_dim(dim, nd, kOp);
  const auto& old = batch_size();
  auto inner = infer_batch(kOp, {old[d]}, std::move(sizes));
  BatchSize b(old.begin(), old.begin() + d);
  b.insert(b.end(), inner.begin(), inner.end());
  b.insert(b.end(), old.begin() + d + 1, old.end());
  return detail::map_batch(
      *this, b, [&](const torch::Tensor& t) { return t.reshape(with_features(b, t, nd)); });
}

TensorDict TensorDict::permute(std::vector<int64_t> dims) const {
  static constexpr const char* kOp = "TensorDict::permute";
  const int64_t nd = batch_dims();
  TDRL_CHECK(static_cast<int64_t>(dims.size()) == nd, ValueError, std::string(kOp), ": got ",
             std::to_string(dims.size()), " dims for batch_size ", shape_str(batch_size()),
             " with ", std::to_string(nd), " dims");
  std::vector<bool> seen(static_cast<size_t>(nd), false);
  for (auto& d : dims) {
    d = detail::wrap_dim(d, nd, kOp);
    TDRL_CHECK(!seen[static_cast<size_t>(d)], ValueError, std::string(kOp), ": dims ",
               shape_str(dims), " repeat dim ", std::to_string(d));
    seen[static_cast<size_t>(d)] = true;
  }
  BatchSize b;
  for (auto d : dims) b.push_back(batch_size()[static_cast<size_t>(d)]);
  return detail::map_batch(*this, b, [&](const torch::Tensor& t) {
    std::vector<int64_t> full = dims;
    for (int64_t i = nd; i < t.dim(); ++i) full.push_back(i);
    return t.permute(full);
  });
}

TensorDict TensorDict::transpose(int64_t dim0, int64_t dim1) const {
  static constexpr const char* kOp = "TensorDict::transpose";
  const int64_t nd = batch_dims();
  const int64_t a = detail::wrap_dim(dim0, nd, kOp);
  const int64_t c = detail::wrap_dim(dim1, nd, kOp);
  BatchSize b = batch_size();
  std::swap(b[static_cast<size_t>(a)], b[static_cast<size_t>(c)]);
  return detail::map_batch(*this, b, [&](const torch::Tensor& t) { return t.transpose(a, c); });
}

TensorDict TensorDict::squeeze(std::optional<int64_t> dim) const {
  static constexpr const char* kOp = "TensorDict::squeeze";
  const int64_t nd = batch_dims();
  if (!dim) {
    BatchSize b;
    std::vector<int64_t> ones;
    for (int64_t d = 0; d < nd; ++d) {
      if (batch_size()[static_cast<size_t>(d)] == 1)
        ones.push_back(d);
      else
        b.push_back(batch_size()[static_cast<size_t>(d)]);
    }
    return detail::map_batch(*this, b, [&](const torch::Tensor& t) {
      torch::Tensor out = t;
      for (auto it = ones.rbegin(); it != ones.rend(); ++it) out = out.squeeze(*it);
      return out;
    });
  }
  const int64_t d = detail::wrap_dim(*dim, nd, kOp);
  if (batch_size()[static_cast<size_t>(d)] != 1)
    return detail::map_batch(*this, batch_size(), [](const torch::Tensor& t) { return t; });
  BatchSize b = batch_size();
  b.erase(b.begin() + d);
  return detail::map_batch(*this, b, [&](const torch::Tensor& t) { return t.squeeze(d); });
}

TensorDict TensorDict::unsqueeze(int64_t dim) const {
  const int64_t d =
      detail::wrap_dim(dim, batch_dims(), "TensorDict::unsqueeze", /*allow_end=*/true);
  BatchSize b = batch_size();
  b.insert(b.begin() + d, 1);
  return detail::map_batch(*this, b, [&](const torch::Tensor& t) { return t.unsqueeze(d); });
}

TensorDict TensorDict::expand(BatchSize new_batch) const {
  TDRL_CHECK(at::is_expandable_to(batch_size(), new_batch), ShapeError,
             "TensorDict::expand: batch_size ", shape_str(batch_size()), " cannot be expanded to ",
             shape_str(new_batch), " (trailing dims must match or be 1)");
  const int64_t nd = batch_dims();
  return detail::map_batch(*this, new_batch, [&](const torch::Tensor& t) {
    return t.expand(with_features(new_batch, t, nd));
  });
}

std::vector<TensorDict> TensorDict::unbind(int64_t dim) const {
  static constexpr const char* kOp = "TensorDict::unbind";
  const int64_t nd = batch_dims();
  const int64_t d = detail::wrap_dim(dim, nd, kOp);
  if (is_lazy_stack()) {
    LazyStackedTensorDict lazy(*this);
    if (lazy.stack_dim() == d) return lazy.tensordicts();
  }
  TensorDict source = is_lazy_stack() ? contiguous() : *this;
  BatchSize b = batch_size();
  b.erase(b.begin() + d);
  std::vector<TensorDict> out;
  const int64_t n = batch_size()[static_cast<size_t>(d)];
  out.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    out.push_back(
        detail::map_batch(source, b, [&](const torch::Tensor& t) { return t.select(d, i); }));
  return out;
}

std::vector<TensorDict> TensorDict::split(std::vector<int64_t> split_sizes, int64_t dim) const {
  static constexpr const char* kOp = "TensorDict::split";
  const int64_t d = detail::wrap_dim(dim, batch_dims(), kOp);
  const int64_t len = batch_size()[static_cast<size_t>(d)];
  int64_t total = 0;
  for (auto s : split_sizes) {
    TDRL_CHECK(!(s < 0), ValueError, std::string(kOp), ": split sizes ", shape_str(split_sizes),
               " contain a negative size");
    total += s;
  }
  TDRL_CHECK(total == len, ValueError, std::string(kOp), ": split sizes ", shape_str(split_sizes),
             " add up to ", std::to_string(total), " but batch dim ", std::to_string(d),
             " has size ", std::to_string(len));
  TensorDict source = is_lazy_stack() ? contiguous() : *this;
  std::vector<TensorDict> out;
  int64_t start = 0;
  for (auto s : split_sizes) {
    BatchSize b = batch_size();
    b[static_cast<size_t>(d)] = s;
    out.push_back(detail::map_batch(source, b,
                                    [&](const torch::Tensor& t) { return t.narrow(d, start, s); }));
    start += s;
  }
  return out;
}

std::vector<TensorDict> TensorDict::split(int64_t split_size, int64_t dim) const {
  static constexpr const char* kOp = "TensorDict::split";
  TDRL_CHECK(!(split_size <= 0), ValueError, std::string(kOp),
             ": split_size must be positive, got ", std::to_string(split_size));
  const int64_t d = detail::wrap_dim(dim, batch_dims(), kOp);
  const int64_t len = batch_size()[static_cast<size_t>(d)];
  std::vector<int64_t> sizes;
  for (int64_t start = 0; start < len; start += split_size)
    sizes.push_back(std::min(split_size, len - start));
  return split(sizes, d);
}

std::vector<TensorDict> TensorDict::chunk(int64_t chunks, int64_t dim) const {
  static constexpr const char* kOp = "TensorDict::chunk";
  TDRL_CHECK(!(chunks <= 0), ValueError, std::string(kOp), ": chunks must be positive, got ",
             std::to_string(chunks));
  const int64_t d = detail::wrap_dim(dim, batch_dims(), kOp);
  const int64_t len = batch_size()[static_cast<size_t>(d)];
  const int64_t size = std::max<int64_t>(1, (len + chunks - 1) / chunks);
  return split(size, d);
}

TensorDict TensorDict::contiguous() const {
  return shape_guard("TensorDict::contiguous", batch_size(), [&] {
    return detail::map_batch(*this, batch_size(),
                             [](const torch::Tensor& t) { return t.contiguous(); });
  });
}

TensorDict TensorDict::to_tensordict() const {
  return shape_guard("TensorDict::to_tensordict", batch_size(), [&] {
    return detail::map_batch(*this, batch_size(), [](const torch::Tensor& t) { return t.clone(); });
  });
}

// ---- stack and cat ----------------------------------------------------------------------

LazyStackedTensorDict stack(const std::vector<TensorDict>& tensordicts, int64_t dim) {
  TDRL_CHECK(!tensordicts.empty(), ValueError, "tensordict::stack: nothing to stack (empty list)");
  const int64_t d = detail::wrap_dim(dim, tensordicts.front().batch_dims(), "tensordict::stack",
                                     /*allow_end=*/true);
  return LazyStackedTensorDict(TensorDict(std::make_shared<detail::LazyStackImpl>(tensordicts, d)));
}

namespace {

TensorDict cat_at(const std::vector<TensorDict>& tds, int64_t d, const NestedKey* path) {
  const auto& first = tds.front();
  BatchSize b = first.batch_size();
  b[static_cast<size_t>(d)] = 0;
  std::optional<torch::Device> device = first.device();
  for (size_t i = 0; i < tds.size(); ++i) {
    const auto& bi = tds[i].batch_size();
    bool ok = bi.size() == b.size();
    for (size_t k = 0; ok && k < bi.size(); ++k)
      ok = static_cast<int64_t>(k) == d || bi[k] == first.batch_size()[k];
    TDRL_CHECK(ok, ShapeError, "tensordict::cat: TensorDict ", std::to_string(i),
               (path ? " at key " + path->to_string() : std::string()), " has batch_size ",
               shape_str(bi), ", which differs from ", shape_str(first.batch_size()),
               " outside dim ", std::to_string(d));
    b[static_cast<size_t>(d)] += bi[static_cast<size_t>(d)];
    if (tds[i].device() != device) device = std::nullopt;
  }
  auto out = std::make_shared<detail::DenseImpl>(b, device);
  auto keys = first.impl()->keys();
  for (size_t i = 1; i < tds.size(); ++i) {
    auto other = tds[i].impl()->keys();
    std::vector<std::string> a(keys), c(other);
    std::sort(a.begin(), a.end());
    std::sort(c.begin(), c.end());
    TDRL_CHECK(a == c, KeyError, "tensordict::cat: TensorDict ", std::to_string(i),
               (path ? " at key " + path->to_string() : std::string()), " has keys ",
               closest_names("", other), " but TensorDict 0 has ", closest_names("", keys),
               "; concatenated TensorDicts need the same keys");
  }
  for (const auto& k : keys) {
    NestedKey key = path ? path->join(k) : NestedKey(k);
    std::vector<Value> vals;
    for (const auto& td : tds) vals.push_back(*td.impl()->find(k));
    static constexpr const char* kOp = "tensordict::cat";
    if (std::holds_alternative<torch::Tensor>(vals[0])) {
      auto ts = detail::values_as<torch::Tensor>(vals, kOp, key);
      try {
        out->append(k, torch::cat(ts, d));
      } catch (const c10::Error& e) {
        throw ShapeError("tensordict::cat: key " + key.to_string() + ": " +
                         e.what_without_backtrace());
      }
    } else if (std::holds_alternative<TensorDict>(vals[0])) {
      out->append(k, cat_at(detail::values_as<TensorDict>(vals, kOp, key), d, &key));
    } else {
      out->append(k, cat_non_tensor(detail::values_as<NonTensorData>(vals, kOp, key), d));
    }
  }
  return TensorDict(out);
}

}  // namespace

TensorDict cat(const std::vector<TensorDict>& tensordicts, int64_t dim) {
  TDRL_CHECK(!tensordicts.empty(), ValueError,
             "tensordict::cat: nothing to concatenate (empty list)");
  const int64_t nd = tensordicts.front().batch_dims();
  TDRL_CHECK(nd != 0, ValueError,
             "tensordict::cat: TensorDicts with batch_size [] have no dim to concatenate "
             "along; use tensordict::stack");
  return cat_at(tensordicts, detail::wrap_dim(dim, nd, "tensordict::cat"), nullptr);
}

}  // namespace tensordict
