// Indexing along batch dims: index, index_put_ (with lazy preallocation), set_at_, and the
// write-through view made by get_sub_tensordict.

#include <tensordict/lazy_stacked_tensordict.h>
#include <tensordict/tensor_dict.h>
#include <tensordict/torch_compat.h>

#include <sstream>

#include "detail/impl.h"

namespace tensordict {

namespace detail {

std::string index_str(at::ArrayRef<TensorIndex> index) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < index.size(); ++i) {
    if (i) os << ", ";
    if (index[i].is_tensor()) {
      const auto& t = index[i].tensor();
      os << "Tensor(shape=" << shape_str(t.sizes()) << ", dtype=" << t.scalar_type() << ")";
    } else {
      os << index[i];
    }
  }
  os << (index.size() == 1 ? ",)" : ")");
  return os.str();
}

namespace {
bool is_mask(const torch::Tensor& t) {
  return t.scalar_type() == torch::kBool || t.scalar_type() == torch::kByte;
}
}  // namespace

std::vector<TensorIndex> normalize_index(at::ArrayRef<TensorIndex> index,
                                         const BatchSize& batch_size, const char* op) {
  const int64_t ndim = static_cast<int64_t>(batch_size.size());
  int64_t consumed = 0;
  int ellipses = 0;
  for (const auto& i : index) {
    if (i.is_ellipsis()) {
      ++ellipses;
    } else if (i.is_integer() || i.is_slice()) {
      ++consumed;
    } else if (i.is_tensor()) {
      consumed += is_mask(i.tensor()) ? std::max<int64_t>(i.tensor().dim(), 1) : 1;
    }
  }
  TDRL_CHECK(!(ellipses > 1), IndexError, std::string(op), ": index ", index_str(index),
             " has more than one Ellipsis");
  TDRL_CHECK(!(consumed > ndim), IndexError, std::string(op), ": index ", index_str(index),
             " addresses ", std::to_string(consumed), " dims but batch_size ",
             shape_str(batch_size), " has ", std::to_string(ndim),
             "; indexing reaches batch dims only (index the tensors for feature dims)");
  std::vector<TensorIndex> out;
  out.reserve(index.size() + static_cast<size_t>(ndim));
  int64_t dim = 0;
  for (const auto& i : index) {
    if (i.is_ellipsis()) {
      for (int64_t k = 0; k < ndim - consumed; ++k) {
        out.emplace_back(at::indexing::Slice());
        ++dim;
      }
      continue;
    }
    if (i.is_tensor() && is_mask(i.tensor())) {
      const auto& m = i.tensor();
      const int64_t k = std::max<int64_t>(m.dim(), 1);
      c10::IntArrayRef expected(batch_size.data() + dim, static_cast<size_t>(k));
      TDRL_CHECK(!(m.dim() > 0 && m.sizes() != expected), IndexError, std::string(op),
                 ": bool mask of shape ", shape_str(m.sizes()), " does not match batch dims ",
                 shape_str(expected), " at dim ", std::to_string(dim), " of batch_size ",
                 shape_str(batch_size));
      dim += k;
    } else if (i.is_integer() || i.is_slice() || i.is_tensor()) {
      ++dim;
    }
    out.push_back(i);
  }
  return out;
}

BatchSize indexed_batch_size(const BatchSize& batch_size, const std::vector<TensorIndex>& index) {
  // Ints, slices and None follow LibTorch's basic-indexing rules computed here; anything
  // else indexes a zero-byte broadcast tensor of the batch shape, which gives the shape
  // LibTorch's own rules produce (advanced-index placement included) without touching data.
  BatchSize out;
  size_t dim = 0;
  for (const auto& i : index) {
    if (i.is_none()) {
      out.push_back(1);
    } else if (i.is_integer()) {
      const int64_t size = batch_size[dim];
      const int64_t k = compat::index_int(i.integer());
      // A c10::IndexError, so that callers rethrow it naming the operation, index and batch size.
      TORCH_CHECK_INDEX(k >= -size && k < size, "index ", k, " is out of range for batch dim ", dim,
                        " of size ", size);
      ++dim;
    } else if (i.is_slice()) {
      const int64_t size = batch_size[dim];
      const auto& s = i.slice();
      const int64_t step = compat::index_int(s.step());
      if (step <= 0)
        return torch::empty({}, torch::kBool).expand(batch_size).index(index).sizes().vec();
      auto clamp = [&](int64_t v) {
        if (v < 0) v += size;
        return std::min(std::max<int64_t>(v, 0), size);
      };
      const int64_t start = clamp(compat::index_int(s.start()));
      const int64_t stop = clamp(compat::index_int(s.stop()));
      out.push_back(stop > start ? (stop - start + step - 1) / step : 0);
      ++dim;
    } else {
      return torch::empty({}, torch::kBool).expand(batch_size).index(index).sizes().vec();
    }
  }
  out.insert(out.end(), batch_size.begin() + static_cast<int64_t>(dim), batch_size.end());
  return out;
}

namespace {
[[noreturn]] void rethrow_index_error(const char* op, at::ArrayRef<TensorIndex> index,
                                      const BatchSize& batch, const c10::Error& e) {
  throw IndexError(std::string(op) + ": index " + index_str(index) + " does not fit batch_size " +
                   shape_str(batch) + ": " + e.what_without_backtrace());
}
}  // namespace

std::pair<std::vector<TensorIndex>, BatchSize> resolve_region(at::ArrayRef<TensorIndex> index,
                                                              const BatchSize& batch,
                                                              const char* op) {
  auto norm = normalize_index(index, batch, op);
  try {
    auto region = indexed_batch_size(batch, norm);
    return {std::move(norm), std::move(region)};
  } catch (const c10::Error& e) {
    rethrow_index_error(op, index, batch, e);
  }
}

// ---- Lazy stacks: indexing that keeps the members -----------------------------------------

namespace {
// Indexes a lazy stack without densifying when the index is basic (ints and slices) or a
// 1-D index tensor along the stack dim; returns nothing when another path is needed.
std::optional<TensorDict> index_lazy(const LazyStackImpl& lazy,
                                     const std::vector<TensorIndex>& norm) {
  const int64_t sd = lazy.stack_dim();
  std::vector<TensorIndex> member_index;
  std::optional<TensorIndex> at_stack;
  int64_t dim = 0;
  int64_t ints_before = 0;
  for (const auto& i : norm) {
    if (i.is_none() || i.is_boolean()) return std::nullopt;
    if (i.is_tensor() && !(dim == sd && i.tensor().dim() == 1 && !is_mask(i.tensor())))
      return std::nullopt;
    if (dim == sd) {
      at_stack = i;
    } else {
      if (i.is_integer() && dim < sd) ++ints_before;
      member_index.push_back(i);
    }
    ++dim;
  }
  const auto& members = lazy.tensordicts();
  const int64_t n = static_cast<int64_t>(members.size());
  auto index_member = [&](const TensorDict& m) {
    return member_index.empty() ? m : m.index(member_index);
  };
  std::vector<int64_t> chosen;
  if (!at_stack) {
    for (int64_t k = 0; k < n; ++k) chosen.push_back(k);
  } else if (at_stack->is_integer()) {
    // Portable across LibTorch versions: ask LibTorch which member an int picks.
    auto picked = torch::arange(n).index({*at_stack});
    return index_member(members[static_cast<size_t>(picked.item<int64_t>())]);
  } else {
    auto picked = torch::arange(n).index({*at_stack}).contiguous();
    const int64_t* p = picked.data_ptr<int64_t>();
    chosen.assign(p, p + picked.numel());
  }
  if (chosen.empty()) return std::nullopt;
  std::vector<TensorDict> picked_members;
  picked_members.reserve(chosen.size());
  for (int64_t k : chosen) picked_members.push_back(index_member(members[static_cast<size_t>(k)]));
  return stack(picked_members, sd - ints_before);
}
}  // namespace

}  // namespace detail

// ---- index ----------------------------------------------------------------------------------

TensorDict TensorDict::index(at::ArrayRef<TensorIndex> index) const {
  static constexpr const char* kOp = "TensorDict::index";
  auto norm = detail::normalize_index(index, batch_size(), kOp);
  try {
    if (is_lazy_stack()) {
      auto& lazy = static_cast<const detail::LazyStackImpl&>(*impl_);
      if (auto out = detail::index_lazy(lazy, norm)) return *out;
      return contiguous().index(norm);
    }
    return detail::map_batch(*this, detail::indexed_batch_size(batch_size(), norm),
                             [&](const torch::Tensor& t) { return t.index(norm); });
  } catch (const c10::Error& e) {
    detail::rethrow_index_error(kOp, index, batch_size(), e);
  }
}

TensorDict TensorDict::index(std::initializer_list<TensorIndex> index) const {
  return this->index(at::ArrayRef<TensorIndex>(index.begin(), index.size()));
}

// ---- index_put_ -----------------------------------------------------------------------------

namespace {

struct RegionWrite {
  NestedKey key;
  Value value;
  bool allocate;
};

}  // namespace

const TensorDict& TensorDict::index_put_(at::ArrayRef<TensorIndex> index,
                                         const TensorDict& value) const {
  static constexpr const char* kOp = "TensorDict::index_put_";
  auto resolved = detail::resolve_region(index, batch_size(), kOp);
  auto& norm = resolved.first;
  auto& region = resolved.second;
  TDRL_CHECK(at::is_expandable_to(value.batch_size(), region), ShapeError, std::string(kOp),
             ": value batch_size ", shape_str(value.batch_size()),
             " does not broadcast to the indexed region ", shape_str(region), " (index ",
             detail::index_str(index), " of batch_size ", shape_str(batch_size()), ")");
  const size_t vdims = value.batch_size().size();
  const size_t dims = batch_size().size();

  // Validate every leaf before writing anything.
  std::vector<RegionWrite> writes;
  std::vector<std::pair<NestedKey, TensorDict>> containers;  // nested TensorDicts of `value`
  for (auto& [key, v] : value.items(/*include_nested=*/true, /*leaves_only=*/false)) {
    auto dst = find_value(key);
    if (auto* nested = std::get_if<TensorDict>(&v)) {
      TDRL_CHECK(!(dst && !std::holds_alternative<TensorDict>(*dst)), TypeError, std::string(kOp),
                 ": key ", key.to_string(), " holds ", detail::kind_name(*dst),
                 " here but a TensorDict in the value");
      if (!dst) containers.emplace_back(key, *nested);
      continue;
    }
    if (auto* t = std::get_if<torch::Tensor>(&v)) {
      if (dst) {
        auto* d = std::get_if<torch::Tensor>(&*dst);
        TDRL_CHECK(d, TypeError, std::string(kOp), ": key ", key.to_string(), " holds ",
                   detail::kind_name(*dst), " here but a tensor in the value");
        BatchSize target = region;
        target.insert(target.end(), d->sizes().begin() + static_cast<int64_t>(dims),
                      d->sizes().end());
        detail::check_inplace_value(kOp, key, *d, target, *t);
      }
      writes.push_back({key, v, !dst.has_value()});
      continue;
    }
    TDRL_CHECK(!(dst && !std::holds_alternative<NonTensorData>(*dst)), TypeError, std::string(kOp),
               ": key ", key.to_string(), " holds ", detail::kind_name(*dst),
               " here but non-tensor data in the value");
    writes.push_back({key, v, !dst.has_value()});
  }

  // Commit: create missing nested TensorDicts (mirroring the value's extra batch dims),
  // allocate missing leaves at full batch size, then write the region.
  for (const auto& [key, nested] : containers) {
    if (contains(key)) continue;
    BatchSize b = batch_size();
    b.insert(b.end(), nested.batch_size().begin() + static_cast<int64_t>(vdims),
             nested.batch_size().end());
    set(key, TensorDict::empty(b, device()));
  }
  for (const auto& w : writes) {
    if (auto* t = std::get_if<torch::Tensor>(&w.value)) {
      if (w.allocate) {
        BatchSize shape = batch_size();
        shape.insert(shape.end(), t->sizes().begin() + static_cast<int64_t>(vdims),
                     t->sizes().end());
        set(w.key, torch::zeros(shape, t->options().device(device().value_or(t->device()))));
      }
      detail::modify_leaf(*this, w.key, [&](torch::Tensor& dst) { dst.index_put_(norm, *t); });
      continue;
    }
    const auto& nt = std::get<NonTensorData>(w.value);
    if (w.allocate && nt.is_uniform()) {
      set(w.key, nt);
      continue;
    }
    // A new entry starts out holding the value's first element everywhere.
    auto first_element = [&] {
      auto values = nt.tolist();
      return values.empty() ? AnyValue(std::string()) : values.front();
    };
    auto current =
        w.allocate ? NonTensorData(first_element(), batch_size()) : get_non_tensor(w.key);
    if (current.is_uniform() && nt.is_uniform() && current.pool().front() == nt.pool().front())
      continue;
    auto dst = current.as_per_element();
    auto pool = dst.pool();
    auto src = nt.as_per_element();
    auto positions = dst.positions().clone();
    positions.index_put_(norm, src.positions() + static_cast<int64_t>(pool.size()));
    pool.insert(pool.end(), src.pool().begin(), src.pool().end());
    set(w.key, NonTensorData::per_element(std::move(pool), positions));
  }
  return *this;
}

const TensorDict& TensorDict::index_put_(std::initializer_list<TensorIndex> index,
                                         const TensorDict& value) const {
  return index_put_(at::ArrayRef<TensorIndex>(index.begin(), index.size()), value);
}

const TensorDict& TensorDict::index_put_(at::ArrayRef<TensorIndex> index,
                                         const c10::Scalar& value) const {
  static constexpr const char* kOp = "TensorDict::index_put_";
  const auto norm = detail::resolve_region(index, batch_size(), kOp).first;
  for (const auto& key : keys(true, true)) {
    if (!std::holds_alternative<torch::Tensor>(get_value(key))) continue;
    detail::modify_leaf(*this, key, [&](torch::Tensor& dst) { dst.index_put_(norm, value); });
  }
  return *this;
}

const TensorDict& TensorDict::index_put_(std::initializer_list<TensorIndex> index,
                                         const c10::Scalar& value) const {
  return index_put_(at::ArrayRef<TensorIndex>(index.begin(), index.size()), value);
}

const TensorDict& TensorDict::set_at_(const NestedKey& key, const torch::Tensor& value,
                                      at::ArrayRef<TensorIndex> index) const {
  static constexpr const char* kOp = "TensorDict::set_at_";
  auto [container, dst] = detail::existing_tensor(*this, key, kOp);
  const auto& batch = container.batch_size();
  auto resolved = detail::resolve_region(index, batch, kOp);
  auto& norm = resolved.first;
  auto& region = resolved.second;
  region.insert(region.end(), dst.sizes().begin() + static_cast<int64_t>(batch.size()),
                dst.sizes().end());
  detail::check_inplace_value(kOp, key, dst, region, value);
  detail::modify_leaf(*this, key, [&](torch::Tensor& t) { t.index_put_(norm, value); });
  return *this;
}

// ---- Sub-TensorDict views -------------------------------------------------------------------

TensorDict TensorDict::get_sub_tensordict(at::ArrayRef<TensorIndex> index) const {
  static constexpr const char* kOp = "TensorDict::get_sub_tensordict";
  auto resolved = detail::resolve_region(index, batch_size(), kOp);
  auto& norm = resolved.first;
  auto& region = resolved.second;
  return TensorDict(std::make_shared<detail::SubImpl>(*this, std::move(norm), std::move(region)));
}

TensorDict TensorDict::get_sub_tensordict(std::initializer_list<TensorIndex> index) const {
  return get_sub_tensordict(at::ArrayRef<TensorIndex>(index.begin(), index.size()));
}

namespace detail {

SubImpl::SubImpl(TensorDict parent, std::vector<TensorIndex> index, BatchSize batch_size)
    : parent_(std::move(parent)), index_(std::move(index)), batch_size_(std::move(batch_size)) {}

const std::optional<torch::Device>& SubImpl::device() const { return parent_.impl()->device(); }

std::optional<Value> SubImpl::find(const std::string& key) const {
  auto v = parent_.impl()->find(key);
  if (!v) return std::nullopt;
  if (auto* t = std::get_if<torch::Tensor>(&*v)) return Value(t->index(index_));
  if (auto* td = std::get_if<TensorDict>(&*v)) {
    return Value(TensorDict(
        std::make_shared<SubImpl>(*td, index_, indexed_batch_size(td->batch_size(), index_))));
  }
  const auto& nt = std::get<NonTensorData>(*v);
  if (nt.is_uniform()) {
    BatchSize b = batch_size_;
    b.insert(b.end(), nt.batch_size().begin() + static_cast<int64_t>(parent_.batch_dims()),
             nt.batch_size().end());
    return Value(nt.with_batch(b));
  }
  return Value(nt.map_positions([&](const torch::Tensor& p) { return p.index(index_); }));
}

void SubImpl::store(const std::string& key, Value value) {
  auto one = TensorDict::empty(batch_size_, parent_.device());
  one.impl()->store(key, value);
  parent_.index_put_(index_, one);
}

void SubImpl::store_inplace(const std::string& key, const Value& value) { store(key, value); }

void SubImpl::erase(const std::string& key) {
  throw Error("TensorDict::del_: cannot delete '" + key +
              "' through a sub-tensordict view; delete it from the parent TensorDict");
}

void SubImpl::rename(const std::string& old_key, const std::string&) {
  throw Error("TensorDict::rename_key_: cannot rename '" + old_key +
              "' through a sub-tensordict view; rename it in the parent TensorDict");
}

void SubImpl::set_batch_size(BatchSize) {
  throw ShapeError(
      "TensorDict::set_batch_size: a sub-tensordict's batch size is fixed by its "
      "index; call to_tensordict() for an independent copy");
}

void SubImpl::set_device(std::optional<torch::Device>) {
  throw DeviceError("TensorDict: a sub-tensordict takes its parent's device; change the parent");
}

}  // namespace detail

}  // namespace tensordict
