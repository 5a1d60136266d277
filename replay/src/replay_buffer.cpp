// ReplayBuffer (locking, extend, sample, prefetch, checkpoints), TensorDictReplayBuffer and
// TensorDictPrioritizedReplayBuffer.

#include <tdrl/replay/replay_buffer.h>

#include <cmath>
#include <filesystem>
#include <sstream>

#include <tensordict/memmap_tensor.h>

#include "detail/checks.h"

namespace tdrl::replay {

using tensordict::Error;
using tensordict::KeyError;
using tensordict::ShapeError;
using tensordict::ValueError;

namespace {

// Flat element indices of whole rows of `steps` elements.
torch::Tensor row_elements(const torch::Tensor& rows, int64_t steps) {
  if (steps == 1) return rows;
  return (rows.unsqueeze(1) * steps + torch::arange(steps, torch::kLong)).reshape({-1});
}

std::shared_ptr<Storage> checked_storage(std::shared_ptr<Storage> storage, const char* kind) {
  TDRL_CHECK(storage, ValueError, std::string(kind), ": storage is null");
  return storage;
}

std::shared_ptr<Sampler> prioritized_for(const std::shared_ptr<Storage>& storage,
                                         const PrioritizedSamplerOptions& options) {
  return std::make_shared<PrioritizedSampler>(
      checked_storage(storage, "TensorDictPrioritizedReplayBuffer")->max_size(), options);
}

// glibc's rwlock prefers readers, so steady sampling could starve extend. Writers first take
// the turnstile and hold it while they wait; readers pass through it before their shared
// lock, so they queue behind a waiting writer.
class ReadLock {
 public:
  ReadLock(std::mutex& turnstile, std::shared_mutex& mutex) {
    { std::lock_guard<std::mutex> pass(turnstile); }
    lock_ = std::shared_lock<std::shared_mutex>(mutex);
  }

 private:
  std::shared_lock<std::shared_mutex> lock_;
};

class WriteLock {
 public:
  WriteLock(std::mutex& turnstile, std::shared_mutex& mutex)
      : turnstile_(turnstile), lock_(mutex) {}

 private:
  std::lock_guard<std::mutex> turnstile_;
  std::unique_lock<std::shared_mutex> lock_;
};

}  // namespace

// ---- Construction -------------------------------------------------------------------------------

ReplayBuffer::ReplayBuffer(std::shared_ptr<Storage> storage, ReplayBufferOptions options)
    : ReplayBuffer(std::move(storage), nullptr, nullptr, std::move(options)) {}

ReplayBuffer::ReplayBuffer(std::shared_ptr<Storage> storage, std::shared_ptr<Sampler> sampler,
                           std::shared_ptr<Writer> writer, ReplayBufferOptions options)
    : storage_(checked_storage(std::move(storage), "ReplayBuffer")),
      sampler_(sampler ? std::move(sampler) : std::make_shared<RandomSampler>()),
      writer_(writer ? std::move(writer) : std::make_shared<RoundRobinWriter>()),
      batch_size_(options.batch_size()),
      prefetch_(options.prefetch()),
      transforms_(std::move(options.transforms())),
      storage_transforms_(std::move(options.storage_transforms())) {
  TDRL_CHECK(!(batch_size_ < 0), ValueError,
             "ReplayBuffer: batch_size must be >= 0 (0: give it to sample), got ",
             std::to_string(batch_size_));
  TDRL_CHECK(!(prefetch_ < 0 || (prefetch_ > 0 && batch_size_ == 0)), ValueError,
             "ReplayBuffer: prefetch ", std::to_string(prefetch_),
             " needs prefetch >= 0 and, when positive, a batch_size");
  TDRL_CHECK(!(sampler_->capacity() < storage_->max_size()), ValueError,
             "ReplayBuffer: the sampler ", sampler_->to_string(), " tracks ",
             std::to_string(sampler_->capacity()), " elements but the storage holds ",
             std::to_string(storage_->max_size()),
             "; give the sampler a capacity of at least the storage's max_size");
  for (const auto& t : transforms_) TDRL_CHECK(t, ValueError, "ReplayBuffer: a transform is empty");
  for (const auto& t : storage_transforms_)
    TDRL_CHECK(t, ValueError, "ReplayBuffer: a storage transform is empty");
}

ReplayBuffer::~ReplayBuffer() { stop_prefetch(); }

void ReplayBuffer::set_tensordict_keys(ReplayBufferKeys keys) {
  std::lock_guard<std::mutex> lock(config_mutex_);
  keys_ = std::move(keys);
}

std::optional<ReplayBufferKeys> ReplayBuffer::tensordict_keys() const {
  std::lock_guard<std::mutex> lock(config_mutex_);
  return keys_;
}

void ReplayBuffer::set_class_name(std::string name) {
  std::lock_guard<std::mutex> lock(config_mutex_);
  class_name_ = std::move(name);
}

std::string ReplayBuffer::class_name() const {
  std::lock_guard<std::mutex> lock(config_mutex_);
  return class_name_;
}

void ReplayBuffer::append_transform(Transform transform) {
  TDRL_CHECK(transform, ValueError, class_name(), "::append_transform: the transform is empty");
  std::lock_guard<std::mutex> lock(config_mutex_);
  transforms_.push_back(std::move(transform));
}

void ReplayBuffer::append_storage_transform(StorageTransform transform) {
  TDRL_CHECK(transform, ValueError, class_name(),
             "::append_storage_transform: the transform is empty");
  std::lock_guard<std::mutex> lock(config_mutex_);
  storage_transforms_.push_back(std::move(transform));
}

// ---- Writing ------------------------------------------------------------------------------------

torch::Tensor ReplayBuffer::add(const TensorDict& data) { return extend(data.unsqueeze(0)); }

torch::Tensor ReplayBuffer::extend(const TensorDict& data) {
  const std::string where = class_name() + "::extend: ";
  TDRL_CHECK(!(data.batch_dims() < 1), ShapeError, where,
             "data has batch_size [] but extend writes rows along dim 0; use add "
             "for a single element");
  const int64_t n = data.batch_size()[0];
  if (n == 0) return torch::empty({0}, torch::kLong);

  // Priorities carried by the data are checked before anything is written.
  const auto keys = tensordict_keys();
  torch::Tensor priority;
  if (keys && sampler_->has_priorities()) {
    if (auto p = data.find(keys->priority)) {
      priority = p->detach().to(torch::kCPU, torch::kDouble).reshape({n, -1});
      const int64_t steps =
          storage_->ndim() == 2 && data.batch_dims() >= 2 ? data.batch_size()[1] : 1;
      TDRL_CHECK(priority.size(1) == steps, ShapeError, where, "priority key ",
                 keys->priority.to_string(), " has shape ", detail::sizes_str(*p),
                 " but the data's rows hold ", std::to_string(steps),
                 " element(s) each; give one priority per element");
      TDRL_CHECK(
          !(!torch::isfinite(priority).all().item<bool>() || (priority < 0).any().item<bool>()),
          ValueError, where, "priority key ", keys->priority.to_string(),
          " holds negative or non-finite values; priorities must be finite "
          "and >= 0");
    }
  }

  torch::Tensor rows;
  {
    WriteLock lock(turnstile_, data_mutex_);
    const auto written = writer_->extend(data, *storage_);
    rows = written.rows;
    if (rows.numel() > 0) {
      const auto elements = row_elements(rows, storage_->row_numel());
      sampler_->extend(elements);
      if (priority.defined()) {
        auto chosen =
            written.source.defined() ? priority.index_select(0, written.source) : priority;
        sampler_->update_priority(elements, chosen.reshape({-1}), storage_->size());
      }
    }
  }
  notify_prefetch();
  return rows;
}

void ReplayBuffer::empty() {
  {
    WriteLock lock(turnstile_, data_mutex_);
    storage_->clear();
    writer_->clear();
    sampler_->clear();
  }
  flush_prefetched();
}

int64_t ReplayBuffer::size() const {
  ReadLock lock(turnstile_, data_mutex_);
  return storage_->size();
}

// ---- Sampling -----------------------------------------------------------------------------------

std::optional<ReplayBuffer::Draw> ReplayBuffer::draw(int64_t batch_size) const {
  TDRL_CHECK(!(batch_size < 1), ValueError, class_name(),
             "::sample: batch_size must be at least 1, got ", std::to_string(batch_size));
  Draw out;
  std::optional<ReplayBufferKeys> keys;
  std::vector<Transform> transforms;
  std::vector<StorageTransform> storage_transforms;
  {
    std::lock_guard<std::mutex> lock(config_mutex_);
    keys = keys_;
    transforms = transforms_;
    storage_transforms = storage_transforms_;
  }
  {
    ReadLock lock(turnstile_, data_mutex_);
    if (storage_->size() == 0) return std::nullopt;
    {
      std::lock_guard<std::mutex> sampler_lock(sampler_mutex_);
      out.info = sampler_->sample(*storage_, batch_size);
    }
    out.data = storage_->get(out.info.index);
    for (const auto& transform : storage_transforms)
      out.data = transform(std::move(out.data), out.info.index, *storage_);
  }
  if (keys) {
    const auto device = out.data.device();
    out.data.set(keys->index,
                 device ? detail::to_device_async(out.info.index, *device) : out.info.index);
    if (out.info.weight.defined())
      out.data.set(keys->weight,
                   device ? detail::to_device_async(out.info.weight, *device) : out.info.weight);
  }
  // The sampler's flags, or-ed into the sample's own entry of the same key.
  for (const auto& [key, flag] : out.info.flags) {
    const auto device = out.data.device();
    auto value = device ? flag.to(*device) : flag;
    if (const auto own = out.data.find(key)) {
      TDRL_CHECK(own->numel() == value.numel(), ShapeError, class_name(), "::sample: the entry ",
                 key.to_string(), " has shape ", tensordict::shape_str(own->sizes()),
                 "; the sampler's flag for it has ", std::to_string(value.numel()),
                 " elements (one per sampled step)");
      value = own->to(torch::kBool).logical_or(value.view(own->sizes()));
    }
    out.data.set(key, value);
  }
  for (const auto& transform : transforms) out.data = transform(out.data);
  return out;
}

TensorDict ReplayBuffer::sample() {
  TDRL_CHECK(batch_size_ != 0, ValueError, class_name(),
             "::sample: no batch size: pass one to sample(batch_size) or "
             "set ReplayBufferOptions::batch_size");
  return sample(batch_size_);
}

TensorDict ReplayBuffer::sample(int64_t batch_size) { return sample_with_info(batch_size).first; }

std::pair<TensorDict, SampleInfo> ReplayBuffer::sample_with_info(
    std::optional<int64_t> batch_size) {
  if (!batch_size) {
    TDRL_CHECK(batch_size_ != 0, ValueError, class_name(),
               "::sample: no batch size: pass one or set "
               "ReplayBufferOptions::batch_size");
    batch_size = batch_size_;
  }
  if (prefetch_ > 0 && *batch_size == batch_size_) {
    auto d = take_prefetched();
    return {std::move(d.data), std::move(d.info)};
  }
  auto d = draw(*batch_size);
  TDRL_CHECK(d, Error, class_name(),
             "::sample: the buffer is empty; add or extend data before "
             "sampling");
  return {std::move(d->data), std::move(d->info)};
}

void ReplayBuffer::update_priority(const torch::Tensor& index, const torch::Tensor& priority) {
  ReadLock lock(turnstile_, data_mutex_);
  std::lock_guard<std::mutex> sampler_lock(sampler_mutex_);
  sampler_->update_priority(index, priority, storage_->size());
}

// ---- Prefetching --------------------------------------------------------------------------------

ReplayBuffer::Draw ReplayBuffer::take_prefetched() {
  std::unique_lock<std::mutex> lock(queue_mutex_);
  if (!worker_.joinable()) worker_ = std::thread([this] { prefetch_loop(); });
  for (;;) {
    if (prefetch_error_) {
      auto error = prefetch_error_;
      prefetch_error_ = nullptr;
      queue_space_.notify_all();
      std::rethrow_exception(error);
    }
    if (!queue_.empty()) {
      Draw d = std::move(queue_.front());
      queue_.pop_front();
      queue_space_.notify_all();
      return d;
    }
    TDRL_CHECK(size() != 0, Error, class_name(),
               "::sample: the buffer is empty; add or extend data before "
               "sampling");
    queue_ready_.wait(lock);
  }
}

void ReplayBuffer::prefetch_loop() {
  std::unique_lock<std::mutex> lock(queue_mutex_);
  while (!stop_) {
    if (prefetch_error_ || static_cast<int64_t>(queue_.size()) >= prefetch_ || size() == 0) {
      queue_space_.wait(lock);
      continue;
    }
    const uint64_t epoch = data_epoch_;
    lock.unlock();
    std::optional<Draw> d;
    std::exception_ptr error;
    try {
      d = draw(batch_size_);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    if (epoch != data_epoch_) continue;  // drawn before empty()/loads(): stale
    if (error) {
      prefetch_error_ = error;
    } else if (d) {
      queue_.push_back(std::move(*d));
    }
    queue_ready_.notify_all();
  }
}

void ReplayBuffer::notify_prefetch() {
  if (prefetch_ == 0) return;
  // Taking the mutex orders this after a worker's check of size(): no lost wake-up.
  { std::lock_guard<std::mutex> lock(queue_mutex_); }
  queue_space_.notify_all();
  queue_ready_.notify_all();
}

void ReplayBuffer::flush_prefetched() {
  if (prefetch_ == 0) return;
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    queue_.clear();
    prefetch_error_ = nullptr;
    ++data_epoch_;
  }
  queue_space_.notify_all();
  queue_ready_.notify_all();
}

void ReplayBuffer::stop_prefetch() {
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    stop_ = true;
  }
  queue_space_.notify_all();
  queue_ready_.notify_all();
  if (worker_.joinable()) worker_.join();
}

// ---- Checkpoints --------------------------------------------------------------------------------

namespace {
constexpr const char* kParts[] = {"storage", "sampler", "writer"};

// True when `dir` holds only the part folders of an older dumps (each with its meta.json).
bool is_part_layout(const std::string& dir) {
  std::error_code ec;
  bool any = false;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const bool part = name == kParts[0] || name == kParts[1] || name == kParts[2];
    if (!part || !std::filesystem::exists(entry.path() / "meta.json", ec)) return false;
    any = true;
  }
  return any;
}
}  // namespace

void ReplayBuffer::dumps(const std::string& dir) const {
  const std::string where = class_name() + "::dumps: ";
  // The three parts are one TensorDict saved at once: TensorDict::save writes it beside `dir`
  // and swaps it in, so a crash at any moment leaves all of this dump or all of the previous
  // one. A folder in the layout of releases up to 0.2 (three part folders, no meta.json of
  // its own) is replaced, not refused as a folder of other files.
  std::error_code ec;
  if (!std::filesystem::exists(dir + "/meta.json", ec) && is_part_layout(dir))
    std::filesystem::remove_all(dir, ec);
  // The states may view the storage: extends wait until they are written.
  ReadLock lock(turnstile_, data_mutex_);
  std::lock_guard<std::mutex> sampler_lock(sampler_mutex_);
  const TensorDict checkpoint({{kParts[0], storage_->state_dict()},
                               {kParts[1], sampler_->state_dict()},
                               {kParts[2], writer_->state_dict()}},
                              {});
  try {
    checkpoint.save(dir);
  } catch (const tensordict::Error& e) {
    throw Error(where + "cannot write '" + dir + "': " + e.what());
  }
}

void ReplayBuffer::loads(const std::string& dir) {
  const std::string where = class_name() + "::loads: ";
  TensorDict states[3];
  std::error_code ec;
  if (std::filesystem::exists(dir + "/meta.json", ec)) {
    TensorDict checkpoint;
    try {
      checkpoint = TensorDict::load_memmap(dir, tensordict::MemmapMode::kReadOnly);
    } catch (const tensordict::Error& e) {
      throw Error(where + "cannot read the checkpoint '" + dir + "': " + e.what());
    }
    for (size_t i = 0; i < 3; ++i) {
      TDRL_CHECK(checkpoint.contains(kParts[i]), Error, where, "the checkpoint '", dir, "' has no ",
                 kParts[i], " part; it was not written by dumps");
      states[i] = checkpoint.get_tensordict(kParts[i]);
    }
  } else {
    // The layout of releases up to 0.2 (read until release 0.3): one folder per part.
    for (size_t i = 0; i < 3; ++i) {
      const std::string path = dir + "/" + kParts[i];
      try {
        states[i] = TensorDict::load_memmap(path, tensordict::MemmapMode::kReadOnly);
      } catch (const tensordict::Error& e) {
        throw Error(where + "cannot read the " + kParts[i] + " checkpoint '" + path +
                    "': " + e.what());
      }
    }
  }
  {
    WriteLock lock(turnstile_, data_mutex_);
    auto storage = storage_->prepare_load_state_dict(states[0]);
    auto sampler = sampler_->prepare_load_state_dict(states[1]);
    auto writer = writer_->prepare_load_state_dict(states[2]);
    // Each part is sound on its own; now they must describe the same buffer.
    const StoredExtent stored = Storage::extent_of(states[0]);
    sampler_->check_against(states[1], stored);
    writer_->check_against(states[2], stored);
    storage();
    sampler();
    writer();
  }
  flush_prefetched();
}

// ---- Printing -----------------------------------------------------------------------------------

std::string ReplayBuffer::to_string() const {
  size_t transforms = 0;
  std::string name;
  {
    std::lock_guard<std::mutex> lock(config_mutex_);
    transforms = transforms_.size() + storage_transforms_.size();
    name = class_name_;
  }
  std::ostringstream os;
  ReadLock lock(turnstile_, data_mutex_);
  std::lock_guard<std::mutex> sampler_lock(sampler_mutex_);
  os << name << "(storage=" << storage_->to_string() << ", sampler=" << sampler_->to_string()
     << ", writer=" << writer_->to_string() << ", batch_size=" << batch_size_
     << ", transforms=" << transforms << ", prefetch=" << prefetch_ << ")";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const ReplayBuffer& buffer) {
  return os << buffer.to_string();
}

// ---- TensorDictReplayBuffer ---------------------------------------------------------------------

TensorDictReplayBuffer::TensorDictReplayBuffer(std::shared_ptr<Storage> storage,
                                               ReplayBufferOptions options)
    : TensorDictReplayBuffer(std::move(storage), nullptr, nullptr, std::move(options)) {}

TensorDictReplayBuffer::TensorDictReplayBuffer(std::shared_ptr<Storage> storage,
                                               std::shared_ptr<Sampler> sampler,
                                               std::shared_ptr<Writer> writer,
                                               ReplayBufferOptions options)
    : ReplayBuffer(std::move(storage), std::move(sampler), std::move(writer), std::move(options)) {
  set_tensordict_keys(Keys{});
  set_class_name("TensorDictReplayBuffer");
}

void TensorDictReplayBuffer::update_tensordict_priority(const TensorDict& td) {
  if (!sampler()->has_priorities()) return;
  const auto k = keys();
  const std::string where = class_name() + "::update_tensordict_priority: ";
  auto index = td.find(k.index);
  TDRL_CHECK(index, KeyError, where, "td has no index key ", k.index.to_string(),
             " (its keys: ", detail::keys_str(td), "); pass a sample of this buffer");
  auto priority = td.find(k.priority);
  TDRL_CHECK(priority, KeyError, where, "td has no priority key ", k.priority.to_string(),
             " (its keys: ", detail::keys_str(td),
             "); write it (e.g. the loss's td_error) or set_keys");
  update_priority(*index, *priority);
}

// ---- TensorDictPrioritizedReplayBuffer ----------------------------------------------------------

TensorDictPrioritizedReplayBuffer::TensorDictPrioritizedReplayBuffer(
    std::shared_ptr<Storage> storage, PrioritizedSamplerOptions sampler_options,
    ReplayBufferOptions options, std::shared_ptr<Writer> writer)
    : TensorDictReplayBuffer(storage, prioritized_for(storage, sampler_options), std::move(writer),
                             std::move(options)) {
  set_class_name("TensorDictPrioritizedReplayBuffer");
}

PrioritizedSampler& TensorDictPrioritizedReplayBuffer::prioritized_sampler() const {
  return static_cast<PrioritizedSampler&>(*sampler());
}

}  // namespace tdrl::replay
