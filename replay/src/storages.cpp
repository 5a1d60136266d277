// ListStorage, TensorStorage and the lazy storages (the Storage base is in storage.cpp).

#include <tdrl/replay/storages.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <utility>

#include <tensordict/lazy_stacked_tensordict.h>
#include <tensordict/memmap_tensor.h>

#include "detail/checks.h"

namespace tdrl::replay {

using tensordict::Error;
using tensordict::IndexError;
using tensordict::KeyError;
using tensordict::shape_str;
using tensordict::ShapeError;
using tensordict::TypeError;
using tensordict::ValueError;
using torch::indexing::Slice;

namespace {

BatchSize tail(c10::IntArrayRef sizes, int64_t from) {
  return BatchSize(sizes.begin() + std::min<int64_t>(from, static_cast<int64_t>(sizes.size())),
                   sizes.end());
}

BatchSize concat(BatchSize head, const BatchSize& rest) {
  head.insert(head.end(), rest.begin(), rest.end());
  return head;
}

}  // namespace

// ---- ListStorage -------------------------------------------------------------------------------

ListStorage::ListStorage(int64_t max_size) : Storage(max_size, 1, "ListStorage") {}

TensorDict ListStorage::at(int64_t row) const {
  TDRL_CHECK(!(row < 0 || row >= num_rows()), IndexError, op("at"), "row ", std::to_string(row),
             " is out of range [0, ", std::to_string(num_rows()), ")");
  return entries_[static_cast<size_t>(row)];
}

void ListStorage::check_set_impl(const TensorDict& data) const {}

void ListStorage::set_impl(const torch::Tensor& rows, int64_t contiguous_from,
                           const TensorDict& data) {
  auto pieces = data.unbind(0);
  std::vector<TensorDict> copies;
  copies.reserve(pieces.size());
  for (const auto& piece : pieces) copies.push_back(piece.clone());
  const int64_t* p = rows.data_ptr<int64_t>();
  const int64_t n = rows.numel();
  const int64_t top = *std::max_element(p, p + n);
  if (static_cast<int64_t>(entries_.size()) <= top) entries_.resize(static_cast<size_t>(top + 1));
  for (int64_t i = 0; i < n; ++i)
    entries_[static_cast<size_t>(p[i])] = copies[static_cast<size_t>(i)];
}

TensorDict ListStorage::get_impl(const torch::Tensor& index) const {
  const int64_t* p = index.data_ptr<int64_t>();
  std::vector<TensorDict> picked;
  picked.reserve(static_cast<size_t>(index.numel()));
  // Shallow copies: keys a caller adds to the sample never reach the stored entries.
  for (int64_t i = 0; i < index.numel(); ++i)
    picked.push_back(entries_[static_cast<size_t>(p[i])].clone(/*recurse=*/false));
  if (picked.empty()) return TensorDict::empty({0});
  try {
    return tensordict::stack(picked, 0);
  } catch (const ShapeError& e) {
    throw ShapeError(op("get") + "the sampled entries have different batch sizes, so they " +
                     "cannot be stacked (" + e.what() + ")");
  }
}

torch::Tensor ListStorage::column_impl(const NestedKey& key) const {
  std::vector<torch::Tensor> values;
  values.reserve(static_cast<size_t>(num_rows()));
  for (int64_t i = 0; i < num_rows(); ++i) {
    const auto& entry = entries_[static_cast<size_t>(i)];
    auto t = entry.find(key);
    TDRL_CHECK(t, KeyError, op("column"), "entry ", std::to_string(i), " has no key ",
               key.to_string(), " (its keys: ", detail::keys_str(entry), ")");
    values.push_back(*t);
  }
  try {
    return torch::stack(values);
  } catch (const c10::Error& e) {
    throw ShapeError(op("column") + "the entries' values of " + key.to_string() +
                     " have different shapes: " + e.what_without_backtrace());
  }
}

void ListStorage::clear_impl() { entries_.clear(); }

void ListStorage::state_dict_impl(TensorDict& state) const {
  TensorDict entries;
  for (int64_t i = 0; i < num_rows(); ++i)
    entries.set(std::to_string(i), entries_[static_cast<size_t>(i)]);
  state.set("entries", entries);
}

std::function<void()> ListStorage::prepare_load_impl(const TensorDict& state, int64_t num_rows,
                                                     int64_t row_numel) {
  const std::string where = op("load_state_dict");
  std::vector<TensorDict> entries;
  entries.reserve(static_cast<size_t>(num_rows));
  auto saved = state.find_value("entries");
  TDRL_CHECK(!(num_rows > 0 && (!saved || !std::holds_alternative<TensorDict>(*saved))), ValueError,
             where, "the checkpoint has no 'entries'");
  for (int64_t i = 0; i < num_rows; ++i) {
    const auto key = std::to_string(i);
    const auto& all = std::get<TensorDict>(*saved);
    auto entry = all.find_value(key);
    TDRL_CHECK(entry && std::holds_alternative<TensorDict>(*entry), ValueError, where,
               "the checkpoint lacks entry ", key, " of ", std::to_string(num_rows));
    entries.push_back(std::get<TensorDict>(*entry).clone());  // off the checkpoint's files
  }
  return [this, entries = std::move(entries)]() mutable { entries_ = std::move(entries); };
}

// ---- TensorStorage -----------------------------------------------------------------------------

namespace {

int64_t grid_size(const TensorDict& storage, int64_t ndim) {
  TDRL_CHECK(!(ndim != 1 && ndim != 2), ValueError, "TensorStorage: ndim must be 1 or 2, got ",
             std::to_string(ndim));
  TDRL_CHECK(!(storage.batch_dims() < ndim), ValueError,
             "TensorStorage: the storage TensorDict has batch_size ",
             shape_str(storage.batch_size()), " but ndim ", std::to_string(ndim),
             " needs at least ", std::to_string(ndim), " batch dims");
  int64_t n = 1;
  for (int64_t d = 0; d < ndim; ++d) n *= storage.batch_size()[static_cast<size_t>(d)];
  TDRL_CHECK(!(n < 1), ValueError, "TensorStorage: the storage TensorDict has batch_size ",
             shape_str(storage.batch_size()), ", which holds no element");
  return n;
}

}  // namespace

TensorStorage::TensorStorage(TensorDict storage, int64_t ndim)
    : Storage(grid_size(storage, ndim), ndim, "TensorStorage"), device_(torch::kCPU) {
  if (ndim == 2) set_row_numel(storage.batch_size()[1]);
  adopt(std::move(storage));
}

TensorStorage::TensorStorage(int64_t max_size, const StorageOptions& options, const char* kind)
    : Storage(max_size, options.ndim(), kind), device_(options.device()) {}

void TensorStorage::adopt(TensorDict storage) {
  std::vector<Leaf> leaves;
  std::vector<Container> containers;
  std::optional<torch::Device> device;
  const int64_t nd = ndim();
  for (auto& [key, value] : storage.items(/*include_nested=*/true, /*leaves_only=*/false)) {
    if (auto* nested = std::get_if<TensorDict>(&value)) {
      containers.push_back({key, tail(nested->batch_size(), nd)});
    } else if (auto* t = std::get_if<torch::Tensor>(&value)) {
      torch::Tensor flat = *t;
      if (nd == 2) {
        BatchSize shape = {t->size(0) * t->size(1)};
        auto rest = tail(t->sizes(), 2);
        shape.insert(shape.end(), rest.begin(), rest.end());
        try {
          flat = t->view(shape);
        } catch (const c10::Error&) {
          throw ValueError(name() + ": leaf " + key.to_string() + " of shape " +
                           detail::sizes_str(*t) +
                           " cannot be viewed with its first two dims merged; pass contiguous "
                           "tensors");
        }
      }
      if (!device) device = t->device();
      leaves.push_back({key, *t, flat});
    } else {
      throw TypeError(name() + ": key " + key.to_string() +
                      " holds non-tensor data; tensor storages hold tensors only (use "
                      "ListStorage for other values)");
    }
  }
  TDRL_CHECK(!leaves.empty(), ValueError, name(),
             ": the storage TensorDict has no tensor leaf to store data in");
  storage_ = std::move(storage);
  leaves_ = std::move(leaves);
  containers_ = std::move(containers);
  element_batch_ = tail(storage_.batch_size(), nd);
  device_ = *device;
  initialized_ = true;
}

TensorDict TensorStorage::allocate(const TensorDict& data, const BatchSize& rows_shape) const {
  const int64_t nd = ndim();
  TensorDict out = TensorDict::empty(concat(rows_shape, tail(data.batch_size(), nd)));
  for (auto& [key, value] : data.items(/*include_nested=*/true, /*leaves_only=*/false)) {
    if (auto* nested = std::get_if<TensorDict>(&value)) {
      out.set(key, TensorDict::empty(concat(rows_shape, tail(nested->batch_size(), nd))));
    } else if (auto* t = std::get_if<torch::Tensor>(&value)) {
      out.set(key, torch::zeros(concat(rows_shape, tail(t->sizes(), nd)),
                                torch::TensorOptions().dtype(t->scalar_type()).device(device_)));
    }
  }
  return out;
}

void TensorStorage::check_matches(const TensorDict& data, const char* method) const {
  const std::string where = op(method);
  const int64_t nd = ndim();
  const BatchSize data_tail = tail(data.batch_size(), nd);
  if ((nd == 2 && data.batch_size()[1] != row_numel()) || data_tail != element_batch_) {
    std::string expected = "[n";
    if (nd == 2) expected += ", " + std::to_string(row_numel());
    for (auto d : element_batch_) expected += ", " + std::to_string(d);
    expected += "]";
    throw ShapeError(where + "data has batch_size " + shape_str(data.batch_size()) +
                     " but the storage (batch_size " + shape_str(storage_.batch_size()) +
                     ") takes data of batch_size " + expected);
  }
  size_t matched = 0;
  for (const auto& leaf : leaves_) {
    auto found = data.find_value(leaf.key);
    TDRL_CHECK(found, KeyError, where, "data lacks key ", leaf.key.to_string(),
               ", which the storage holds (stored keys: ", detail::keys_str(storage_),
               "); every write needs the structure of the first");
    auto* t = std::get_if<torch::Tensor>(&*found);
    TDRL_CHECK(t, TypeError, where, "key ", leaf.key.to_string(),
               " holds a tensor in the storage but not in the data");
    const auto want = tail(leaf.tensor.sizes(), nd);
    const auto got = tail(t->sizes(), nd);
    TDRL_CHECK(want == got, ShapeError, where, "key ", leaf.key.to_string(), " has shape ",
               detail::sizes_str(*t), ", i.e. ", shape_str(got),
               " per element, but the storage holds ", shape_str(want),
               " per element (stored shape ", detail::sizes_str(leaf.tensor), ")");
    TDRL_CHECK(t->scalar_type() == leaf.tensor.scalar_type(), TypeError, where, "key ",
               leaf.key.to_string(), " has dtype ", std::string(c10::toString(t->scalar_type())),
               " but the storage holds ", std::string(c10::toString(leaf.tensor.scalar_type())),
               "; cast it before writing");
    ++matched;
  }
  const auto data_leaves = data.keys(/*include_nested=*/true, /*leaves_only=*/true);
  if (data_leaves.size() != matched) {
    for (const auto& key : data_leaves) {
      const bool stored =
          std::any_of(leaves_.begin(), leaves_.end(), [&](const Leaf& l) { return l.key == key; });
      TDRL_CHECK(stored, KeyError, where, "data has key ", key.to_string(),
                 ", which the storage does not hold (stored keys: ", detail::keys_str(storage_),
                 "); every write needs the structure of the first");
    }
  }
}

void TensorStorage::check_set_impl(const TensorDict& data) const {
  if (initialized_) {
    check_matches(data, "set");
    return;
  }
  bool any_tensor = false;
  for (auto& [key, value] : data.items(/*include_nested=*/true, /*leaves_only=*/true)) {
    TDRL_CHECK(!(std::holds_alternative<tensordict::NonTensorData>(value)), TypeError, op("set"),
               "key ", key.to_string(),
               " holds non-tensor data; tensor storages hold tensors only (use "
               "ListStorage for other values)");
    any_tensor = any_tensor || std::holds_alternative<torch::Tensor>(value);
  }
  TDRL_CHECK(any_tensor, ValueError, op("set"), "data has no tensor leaf (batch_size ",
             shape_str(data.batch_size()), "); there is nothing to store");
}

void TensorStorage::set_impl(const torch::Tensor& rows, int64_t contiguous_from,
                             const TensorDict& data) {
  torch::NoGradGuard no_grad;
  if (!initialized_) {
    BatchSize rows_shape = {max_rows_for(data)};
    if (ndim() == 2) rows_shape.push_back(data.batch_size()[1]);
    adopt(allocate(data, rows_shape));
  }
  const int64_t n = rows.numel();
  torch::Tensor device_rows;
  for (const auto& leaf : leaves_) {
    auto src = data.get(leaf.key).detach();
    if (src.device() != device_) src = src.to(device_);
    if (contiguous_from >= 0) {
      leaf.tensor.narrow(0, contiguous_from, n).copy_(src);
    } else {
      if (!device_rows.defined()) device_rows = rows.to(device_);
      leaf.tensor.index_copy_(0, device_rows, src);
    }
  }
}

TensorDict TensorStorage::get_impl(const torch::Tensor& index) const {
  const auto idx = detail::to_device_async(index, device_);
  const int64_t b = idx.numel();
  TensorDict out = TensorDict::empty(concat({b}, element_batch_), device_);
  for (const auto& c : containers_) out.set(c.key, TensorDict::empty(concat({b}, c.extra_batch)));
  for (const auto& leaf : leaves_) out.set(leaf.key, leaf.flat.index_select(0, idx));
  return out;
}

torch::Tensor TensorStorage::column_impl(const NestedKey& key) const {
  for (const auto& leaf : leaves_)
    if (leaf.key == key) return leaf.flat.narrow(0, 0, size());
  throw KeyError(op("column") + "the storage has no tensor at " + key.to_string() +
                 " (stored keys: " + detail::keys_str(storage_) + ")");
}

void TensorStorage::state_dict_impl(TensorDict& state) const {
  if (initialized_ && num_rows() > 0) state.set("data", storage_.index({Slice(0, num_rows())}));
}

std::function<void()> TensorStorage::prepare_load_impl(const TensorDict& state, int64_t num_rows,
                                                       int64_t row_numel) {
  const std::string where = op("load_state_dict");
  auto saved = state.find_value("data");
  if (!saved || !std::holds_alternative<TensorDict>(*saved)) {
    TDRL_CHECK(!(num_rows > 0), ValueError, where, "the checkpoint has no 'data'");
    return [] {};
  }
  const auto data = std::get<TensorDict>(*saved);
  const int64_t nd = ndim();
  if (data.batch_dims() < nd || data.batch_size()[0] != num_rows ||
      (nd == 2 && data.batch_size()[1] != row_numel))
    throw ValueError(where + "the checkpoint's data has batch_size " +
                     shape_str(data.batch_size()) + " but it records " + std::to_string(num_rows) +
                     " rows");
  auto copy_rows = [num_rows, data](const std::vector<Leaf>& leaves) {
    torch::NoGradGuard no_grad;
    for (const auto& leaf : leaves) leaf.tensor.narrow(0, 0, num_rows).copy_(data.get(leaf.key));
  };
  bool fits = initialized_ && (nd == 1 || row_numel == this->row_numel());
  if (fits) {
    try {
      check_matches(data, "load_state_dict");
    } catch (const tensordict::Error&) {
      if (!is_lazy()) throw;
      fits = false;
    }
  }
  if (fits) return [this, copy_rows] { copy_rows(leaves_); };
  TDRL_CHECK(is_lazy(), ValueError, where, "the checkpoint holds rows of ",
             std::to_string(row_numel), " steps but this storage's rows have ",
             std::to_string(this->row_numel()));
  // A lazy storage takes the checkpoint's structure: allocate and fill now, swap in later.
  for (auto& [key, value] : data.items(/*include_nested=*/true, /*leaves_only=*/true))
    TDRL_CHECK(std::holds_alternative<torch::Tensor>(value), TypeError, where, "key ",
               key.to_string(), " of the checkpoint is not a tensor");
  BatchSize rows_shape = {max_size() / (nd == 2 ? row_numel : 1)};
  if (nd == 2) rows_shape.push_back(row_numel);
  TensorStorage* self = this;
  auto fresh = allocate(data, rows_shape);
  {
    torch::NoGradGuard no_grad;
    for (auto& [key, value] : data.items(/*include_nested=*/true, /*leaves_only=*/true))
      if (auto* t = std::get_if<torch::Tensor>(&value))
        fresh.get(key).narrow(0, 0, num_rows).copy_(*t);
  }
  return [self, fresh] { self->adopt(fresh); };
}

std::string TensorStorage::to_string() const {
  std::ostringstream os;
  os << name() << "(max_size=" << max_size() << ", size=" << size() << ", ndim=" << ndim()
     << ", device=" << device_ << ")";
  return os.str();
}

// ---- LazyTensorStorage / LazyMemmapStorage ------------------------------------------------------

LazyTensorStorage::LazyTensorStorage(int64_t max_size, StorageOptions options)
    : TensorStorage(max_size, options, "LazyTensorStorage") {}

LazyMemmapStorage::LazyMemmapStorage(int64_t max_size, std::string scratch_dir,
                                     StorageOptions options)
    : TensorStorage(max_size, options, "LazyMemmapStorage"), scratch_dir_(std::move(scratch_dir)) {
  TDRL_CHECK(!scratch_dir_.empty(), ValueError,
             "LazyMemmapStorage: scratch_dir is empty; give the folder for the files");
  TDRL_CHECK(options.device().is_cpu(), ValueError,
             "LazyMemmapStorage: memory-mapped files live on the CPU, got device ",
             options.device().str(), "; move samples to the device after sampling");
}

TensorDict LazyMemmapStorage::allocate(const TensorDict& data, const BatchSize& rows_shape) const {
  // One row of the data, broadcast to the full size without copying, then files of that
  // size created empty (sparse): nothing is written until rows are.
  BatchSize full = concat(rows_shape, tail(data.batch_size(), ndim()));
  auto one = data.index({Slice(0, 1)});
  if (ndim() == 2) one = one.index({Slice(), Slice(0, 1)});
  return one.to(torch::kCPU).expand(full).memmap_like(scratch_dir_);
}

namespace {

// The file in a LazyMemmapStorage's folder naming the buffer whose data the folder holds, so
// that a checkpoint refers to its own buffer's data and to no other's.
constexpr const char* kStorageIdFile = "storage_id";

std::string read_storage_id(const std::string& dir) {
  std::ifstream in(dir + "/" + kStorageIdFile);
  std::string id;
  std::getline(in, id);
  return id;
}

}  // namespace

void LazyMemmapStorage::state_dict_impl(TensorDict& state) const {
  if (!is_initialized()) return;
  for (auto& value : data().values(/*include_nested=*/true, /*leaves_only=*/true))
    if (auto* t = std::get_if<torch::Tensor>(&value)) tensordict::MemoryMappedTensor::flush(*t);
  // The folder's id, made at its first checkpoint (a new folder, written again by allocate,
  // has none): a later checkpoint of another buffer in this folder cannot pass for this one.
  std::string id = read_storage_id(scratch_dir_);
  if (id.empty()) {
    std::random_device random;
    std::ostringstream os;
    os << std::hex << ((uint64_t{random()} << 32) | random())
       << ((uint64_t{random()} << 32) | random());
    id = os.str();
    const std::string path = scratch_dir_ + "/" + kStorageIdFile;
    const std::string tmp = path + ".tmp";
    {
      std::ofstream out(tmp, std::ios::trunc);
      out << id << "\n";
      TDRL_CHECK(out.good(), Error, op("state_dict"), "cannot write '", tmp, "'");
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    TDRL_CHECK(!ec, Error, op("state_dict"), "cannot write '", path, "': ", ec.message());
  }
  state.set("scratch_dir", scratch_dir_);
  state.set_non_tensor("storage_id", id);
}

std::function<void()> LazyMemmapStorage::prepare_load_impl(const TensorDict& state,
                                                           int64_t num_rows, int64_t row_numel) {
  const std::string where = op("load_state_dict");
  if (!state.contains("scratch_dir")) {
    TDRL_CHECK(!(num_rows > 0), ValueError, where, "the checkpoint names no scratch_dir");
    return [] {};
  }
  const auto dir = detail::read_string(state, "scratch_dir", where);
  // Checkpoints written before storage ids (until release 0.2) name none; they are trusted
  // until release 0.3.
  if (state.contains("storage_id")) {
    const auto id = detail::read_string(state, "storage_id", where);
    TDRL_CHECK(read_storage_id(dir) == id, ValueError, where, "the folder '", dir,
               "' no longer holds the data of this checkpoint (its storage_id is not the "
               "checkpoint's '",
               id, "': the folder was written again, by this or another buffer, since)");
  }
  TensorDict mapped;
  try {
    mapped = TensorDict::load_memmap(dir);
  } catch (const tensordict::Error& e) {
    throw Error(where + "cannot map the storage folder '" + dir +
                "' the checkpoint refers to: " + e.what());
  }
  const int64_t nd = ndim();
  const int64_t rows = max_size() / (nd == 2 ? std::max<int64_t>(row_numel, 1) : 1);
  if (mapped.batch_dims() < nd || mapped.batch_size()[0] != rows ||
      (nd == 2 && mapped.batch_size()[1] != row_numel))
    throw ValueError(where + "the folder '" + dir + "' holds batch_size " +
                     shape_str(mapped.batch_size()) + " but the checkpoint needs " +
                     std::to_string(rows) + " rows" +
                     (nd == 2 ? " of " + std::to_string(row_numel) + " steps" : std::string()));
  return [this, mapped, dir] {
    adopt(mapped);
    scratch_dir_ = dir;
  };
}

std::string LazyMemmapStorage::to_string() const {
  std::ostringstream os;
  os << name() << "(max_size=" << max_size() << ", size=" << size() << ", ndim=" << ndim()
     << ", scratch_dir=" << scratch_dir_ << ")";
  return os.str();
}

}  // namespace tdrl::replay
