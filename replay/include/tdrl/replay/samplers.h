#pragma once

/// Sampler: which stored elements a batch reads (TorchRL's Sampler), with RandomSampler and
/// SamplerWithoutReplacement. PrioritizedSampler and SliceSampler have their own headers.

#include <cstdint>
#include <functional>
#include <limits>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <torch/arg.h>
#include <torch/types.h>

#include <tdrl/replay/component.h>
#include <tdrl/replay/storage.h>

namespace tdrl::replay {

/// What a sampler drew.
struct SampleInfo {
  /// Flat element indices, int64 `[B]` (see Storage for elements vs rows).
  torch::Tensor index;
  /// Importance-sampling weights, float32 `[B]`, from samplers with priorities; undefined
  /// otherwise.
  torch::Tensor weight;
  /// Flags the sampler writes into the sample, bool `[B]` each (a SliceSampler's is_init at
  /// each slice's first step, its burn-in steps): ReplayBuffer::sample sets each under its key,
  /// or-ed with the sample's own entry there (in that entry's shape) when it has one.
  std::vector<std::pair<NestedKey, torch::Tensor>> flags;
};

/// Chooses the elements a sample reads, and keeps whatever state that needs (epochs,
/// priorities, trajectory bounds).
///
/// Public methods check their arguments and throw tensordict errors naming the operation and
/// the values; a failed call changes nothing. Subclasses implement the protected hooks.
/// Random draws use LibTorch's default CPU generator: `torch::manual_seed` makes them
/// repeatable.
///
/// Thread safety: not synchronised. ReplayBuffer serialises every call on its sampler mutex
/// (and holds its storage lock so that the storage does not change meanwhile).
class Sampler : public ReplayComponent {
 public:
  /// Draws a batch among the `storage.size()` stored elements. Most samplers return exactly
  /// `batch_size` indices; SamplerWithoutReplacement may return fewer at the end of an epoch
  /// and a SliceSampler without strict_length fewer when trajectories are short. Throws
  /// ValueError when batch_size < 1, Error when the storage is empty.
  SampleInfo sample(const Storage& storage, int64_t batch_size);

  /// Tells the sampler that the elements `index` (int64 `[n]`, flat) were just written (new
  /// or overwritten). PrioritizedSampler gives them the highest priority seen so far.
  /// Throws IndexError for indices below 0 or past the sampler's capacity.
  void extend(const torch::Tensor& index);

  /// How many elements the sampler can track (indices `[0, capacity())`); unbounded for
  /// samplers that keep no per-element state. ReplayBuffer checks it against the storage's
  /// max_size.
  virtual int64_t capacity() const { return std::numeric_limits<int64_t>::max(); }

  /// True when the sampler keeps priorities (PrioritizedSampler); update_priority is a
  /// no-op otherwise, as in TorchRL.
  virtual bool has_priorities() const { return false; }

  /// Sets the priority of elements `index` (int64 `[n]`, each in `[0, storage_size)`) to
  /// `priority` (`n` values in any shape, e.g. `[n, 1]`, or one value for all). Throws
  /// ShapeError when the counts differ, IndexError naming the first index out of range,
  /// ValueError naming the first negative or non-finite priority; nothing is changed then.
  /// Samplers without priorities only check the arguments.
  void update_priority(const torch::Tensor& index, const torch::Tensor& priority,
                       int64_t storage_size);

  /// Forgets every element (epochs restart, priorities reset), for ReplayBuffer::empty.
  virtual void clear() {}

  /// True when the last sample ended an epoch (SamplerWithoutReplacement); the next sample
  /// starts a new one.
  virtual bool ran_out() const { return false; }

 protected:
  /// Draws among `storage.size() > 0` elements; `batch_size >= 1`.
  virtual SampleInfo sample_impl(const Storage& storage, int64_t batch_size) = 0;
  /// Records written elements (valid non-negative int64 indices).
  virtual void extend_impl(const torch::Tensor& index) {}
  /// Sets checked priorities (double `[n]`, finite, >= 0) of checked indices.
  virtual void update_priority_impl(const torch::Tensor& index, const torch::Tensor& priority) {}
  /// No state by default (RandomSampler).
  void state_dict_impl(TensorDict& state) const override {}
  std::function<void()> prepare_load_impl(const TensorDict& state) override {
    return [] {};
  }
};

/// Uniform sampling with replacement over the stored elements (TorchRL's RandomSampler):
/// `torch::randint(size, {batch_size})`.
/// Example: `auto sampler = std::make_shared<RandomSampler>();`
class RandomSampler final : public Sampler {
 public:
  std::string name() const override { return "RandomSampler"; }
  std::string to_string() const override { return "RandomSampler()"; }

 protected:
  SampleInfo sample_impl(const Storage& storage, int64_t batch_size) override;
};

/// Options of SamplerWithoutReplacement.
/// Example: `SamplerWithoutReplacementOptions().drop_last(true)`
struct SamplerWithoutReplacementOptions {
  /// Skip the last, incomplete batch of an epoch: every batch then has exactly batch_size
  /// elements (and a buffer smaller than batch_size cannot be sampled). Default false.
  TORCH_ARG(bool, drop_last) = false;
  /// Visit elements in a random order each epoch; false visits 0, 1, 2, ... Default true.
  TORCH_ARG(bool, shuffle) = true;
};

/// Epochs over the stored elements (TorchRL's SamplerWithoutReplacement): an epoch visits
/// each element that was stored when it began exactly once (in random order with shuffle),
/// `batch_size` at a time; the last batch of an epoch is smaller (or dropped with
/// drop_last). Elements written during an epoch join the next one. `ran_out()` is true after
/// the batch that ended an epoch.
///
/// Example: `auto sampler = std::make_shared<SamplerWithoutReplacement>();`
class SamplerWithoutReplacement final : public Sampler {
 public:
  explicit SamplerWithoutReplacement(SamplerWithoutReplacementOptions options = {});
  std::string name() const override { return "SamplerWithoutReplacement"; }
  std::string to_string() const override;
  void clear() override;
  bool ran_out() const override { return ran_out_; }
  const SamplerWithoutReplacementOptions& options() const { return options_; }
  /// The epoch's permutation holds stored elements only.
  void check_against(const TensorDict& state, const StoredExtent& stored) const override;

 protected:
  SampleInfo sample_impl(const Storage& storage, int64_t batch_size) override;
  void state_dict_impl(TensorDict& state) const override;
  std::function<void()> prepare_load_impl(const TensorDict& state) override;

 private:
  SamplerWithoutReplacementOptions options_;
  torch::Tensor permutation_;  // this epoch's order, int64 [epoch size]; undefined: none yet
  int64_t cursor_ = 0;         // next position in permutation_
  bool ran_out_ = false;
};

}  // namespace tdrl::replay
