// Google Benchmark of tdrl::replay against the same copies written with raw LibTorch calls.
//
// Transitions hold observation [17], action [6] and ("next", {observation [17], reward [1],
// done [1] bool}), float32 but done, as a MuJoCo-sized off-policy agent stores them. Every case
// is registered as BM_<Case>/Ours and BM_<Case>/Raw:
// - Extend256/<capacity>: TensorDictReplayBuffer::extend of a 256-row batch (LazyTensorStorage,
//   RoundRobinWriter, RandomSampler) against a cursor and `index_copy_` of each leaf into
//   preallocated tensors at rows cursor..cursor+255 (mod capacity).
// - Sample256/<capacity>: TensorDictReplayBuffer::sample(256) from a full buffer (RandomSampler;
//   the result carries `index`) against `randint` and `index_select` of each leaf.
// - PrioritizedSampleUpdate256/<capacity>: TensorDictPrioritizedReplayBuffer::sample(256)
//   (alpha 0.6, beta 0.4: segment-tree draw, importance weights, `index` and `_weight`)
//   followed by update_priority of the 256 drawn indices, against the same copies without the
//   prioritization: `randint`, `index_select` of each leaf and `index_copy_` of 256 priorities
//   into a [capacity] tensor. BM_PrioritizedSampleUpdate256/<capacity>/RawMultinomial does
//   the prioritization by hand the naive way (`multinomial` over all priorities, the same
//   weights, `index_copy_`): what the segment trees replace.
// - MemmapExtend256 / MemmapSample256 at capacity 1,000,000: the same with a LazyMemmapStorage
//   in a scratch folder, against the raw calls on MemoryMappedTensor files.
//
// Capacities 100,000 (the size TorchRL's figures in the issue were taken at) and 1,000,000.
// Buffers are filled completely before sampling. One intra-op thread.

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <tdrl/replay.h>
#include <tensordict/tensordict.h>

#include "common.h"
#include "problem.h"
#include "scratch_dir.h"

namespace tdrl::bench {
namespace {

namespace fs = std::filesystem;
using replay::LazyMemmapStorage;
using replay::LazyTensorStorage;
using replay::PrioritizedSamplerOptions;
using replay::TensorDictPrioritizedReplayBuffer;
using replay::TensorDictReplayBuffer;
using tensordict::MemoryMappedTensor;
using tensordict::TensorDict;

constexpr int64_t kSmall = 100000;
constexpr int64_t kLarge = 1000000;
constexpr int kPool = 16;  // batches (and priority vectors) cycled through
constexpr double kAlpha = 0.6;
constexpr double kBeta = 0.4;

TensorDict transitions(int64_t n) {
  return TensorDict({{"observation", torch::randn({n, kObs})},
                     {"action", torch::rand({n, kAction}) * 2 - 1},
                     {"next",
                      {{"observation", torch::randn({n, kObs})},
                       {"reward", torch::randn({n, 1})},
                       {"done", torch::rand({n, 1}) < 0.01}}}},
                    {n});
}

const std::vector<TensorDict>& batches() {
  static const std::vector<TensorDict> pool = [] {
    std::vector<TensorDict> out;
    for (int i = 0; i < kPool; ++i) out.push_back(transitions(kBatch));
    return out;
  }();
  return pool;
}

const std::vector<torch::Tensor>& new_priorities() {
  static const std::vector<torch::Tensor> pool = [] {
    std::vector<torch::Tensor> out;
    for (int i = 0; i < kPool; ++i) out.push_back(torch::rand({kBatch}, torch::kDouble) * 10);
    return out;
  }();
  return pool;
}

/// The leaves of a batch in storage order, for the raw side.
std::vector<torch::Tensor> leaves(const TensorDict& td) {
  std::vector<torch::Tensor> out;
  for (const auto& v : td.values(/*include_nested=*/true, /*leaves_only=*/true))
    out.push_back(std::get<torch::Tensor>(v));
  return out;
}

void fill(replay::ReplayBuffer& rb, int64_t capacity) {
  for (int64_t done = 0; done < capacity; done += 65536)
    rb.extend(transitions(std::min<int64_t>(65536, capacity - done)));
}

/// Raw storage: one preallocated tensor per leaf, plus a cursor.
struct RawStorage {
  std::vector<torch::Tensor> leaves;
  int64_t capacity = 0;
  int64_t cursor = 0;

  void extend(const std::vector<torch::Tensor>& batch) {
    const auto rows = torch::arange(cursor, cursor + kBatch, torch::kLong).remainder_(capacity);
    for (size_t i = 0; i < leaves.size(); ++i) leaves[i].index_copy_(0, rows, batch[i]);
    cursor = (cursor + kBatch) % capacity;
  }

  std::vector<torch::Tensor> gather(const torch::Tensor& index) const {
    std::vector<torch::Tensor> out;
    out.reserve(leaves.size() + 1);
    for (const auto& t : leaves) out.push_back(t.index_select(0, index));
    out.push_back(index);
    return out;
  }
};

RawStorage raw_in_memory(int64_t capacity) {
  RawStorage raw;
  raw.capacity = capacity;
  for (const auto& t : leaves(batches()[0])) {
    auto shape = t.sizes().vec();
    shape[0] = capacity;
    raw.leaves.push_back(torch::zeros(shape, t.options()));
  }
  for (int64_t done = 0; done < capacity; done += kBatch)
    raw.extend(leaves(batches()[static_cast<size_t>(done / kBatch) % kPool]));
  raw.cursor = 0;
  return raw;
}

const ScratchDir& scratch() {
  static const ScratchDir dir(std::getenv("TDRL_BENCH_DIR")
                                  ? fs::path(std::getenv("TDRL_BENCH_DIR"))
                                  : fs::read_symlink("/proc/self/exe").parent_path(),
                              "bench_replay");
  return dir;
}

RawStorage raw_memmap(int64_t capacity) {
  RawStorage raw;
  raw.capacity = capacity;
  int i = 0;
  for (const auto& t : leaves(batches()[0])) {
    auto shape = t.sizes().vec();
    shape[0] = capacity;
    raw.leaves.push_back(MemoryMappedTensor::empty(
        scratch().path() + "/raw" + std::to_string(i++) + ".memmap", shape, t.scalar_type()));
  }
  for (int64_t done = 0; done < capacity; done += kBatch)
    raw.extend(leaves(batches()[static_cast<size_t>(done / kBatch) % kPool]));
  raw.cursor = 0;
  return raw;
}

// ---- Fixtures, built on first use
// -----------------------------------------------------------------

TensorDictReplayBuffer& uniform_buffer(int64_t capacity, bool memmap = false) {
  static std::map<std::pair<int64_t, bool>, std::unique_ptr<TensorDictReplayBuffer>> buffers;
  auto& rb = buffers[{capacity, memmap}];
  if (!rb) {
    std::shared_ptr<replay::Storage> storage;
    if (memmap)
      storage = std::make_shared<LazyMemmapStorage>(capacity, scratch().path() + "/storage");
    else
      storage = std::make_shared<LazyTensorStorage>(capacity);
    rb = std::make_unique<TensorDictReplayBuffer>(storage);
    fill(*rb, capacity);
  }
  return *rb;
}

TensorDictPrioritizedReplayBuffer& prioritized_buffer(int64_t capacity) {
  static std::map<int64_t, std::unique_ptr<TensorDictPrioritizedReplayBuffer>> buffers;
  auto& rb = buffers[capacity];
  if (!rb) {
    rb = std::make_unique<TensorDictPrioritizedReplayBuffer>(
        std::make_shared<LazyTensorStorage>(capacity), PrioritizedSamplerOptions(kAlpha, kBeta));
    fill(*rb, capacity);
    rb->update_priority(torch::arange(capacity), torch::rand({capacity}, torch::kDouble) * 10);
  }
  return *rb;
}

RawStorage& raw_storage(int64_t capacity, bool memmap = false) {
  static std::map<std::pair<int64_t, bool>, std::unique_ptr<RawStorage>> storages;
  auto& raw = storages[{capacity, memmap}];
  if (!raw)
    raw = std::make_unique<RawStorage>(memmap ? raw_memmap(capacity) : raw_in_memory(capacity));
  return *raw;
}

torch::Tensor& raw_priorities(int64_t capacity) {
  static std::map<int64_t, torch::Tensor> priorities;
  auto& p = priorities[capacity];
  if (!p.defined()) p = torch::rand({capacity}, torch::kDouble) * 10;
  return p;
}

// ---- Benchmarks
// -----------------------------------------------------------------------------------

void extend_ours(benchmark::State& state, int64_t capacity, bool memmap) {
  auto& rb = uniform_buffer(capacity, memmap);
  size_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(rb.extend(batches()[i++ % kPool]).data_ptr());
  state.SetItemsProcessed(state.iterations() * kBatch);
}

void extend_raw(benchmark::State& state, int64_t capacity, bool memmap) {
  auto& raw = raw_storage(capacity, memmap);
  std::vector<std::vector<torch::Tensor>> pool;
  for (const auto& b : batches()) pool.push_back(leaves(b));
  size_t i = 0;
  for (auto _ : state) {
    raw.extend(pool[i++ % kPool]);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}

void sample_ours(benchmark::State& state, int64_t capacity, bool memmap) {
  auto& rb = uniform_buffer(capacity, memmap);
  for (auto _ : state) benchmark::DoNotOptimize(rb.sample(kBatch).get("index").data_ptr());
  state.SetItemsProcessed(state.iterations() * kBatch);
}

void sample_raw(benchmark::State& state, int64_t capacity, bool memmap) {
  auto& raw = raw_storage(capacity, memmap);
  for (auto _ : state) {
    auto out = raw.gather(torch::randint(capacity, {kBatch}, torch::kLong));
    benchmark::DoNotOptimize(out.back().data_ptr());
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}

void prioritized_ours(benchmark::State& state, int64_t capacity) {
  auto& rb = prioritized_buffer(capacity);
  size_t i = 0;
  for (auto _ : state) {
    auto batch = rb.sample(kBatch);
    rb.update_priority(batch.get("index"), new_priorities()[i++ % kPool]);
    benchmark::DoNotOptimize(batch.get("_weight").data_ptr());
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}

void prioritized_raw(benchmark::State& state, int64_t capacity) {
  auto& raw = raw_storage(capacity);
  auto& priorities = raw_priorities(capacity);
  size_t i = 0;
  for (auto _ : state) {
    const auto index = torch::randint(capacity, {kBatch}, torch::kLong);
    auto out = raw.gather(index);
    priorities.index_copy_(0, index, new_priorities()[i++ % kPool]);
    benchmark::DoNotOptimize(out.back().data_ptr());
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}

void prioritized_multinomial(benchmark::State& state, int64_t capacity) {
  auto& raw = raw_storage(capacity);
  auto& priorities = raw_priorities(capacity);
  size_t i = 0;
  for (auto _ : state) {
    const auto p = (priorities + 1e-8).pow(kAlpha);
    const auto index = torch::multinomial(p, kBatch, /*replacement=*/true);
    const auto weight = (p.index_select(0, index) / p.min()).pow(-kBeta).to(torch::kFloat);
    auto out = raw.gather(index);
    priorities.index_copy_(0, index, new_priorities()[i++ % kPool]);
    benchmark::DoNotOptimize(weight.data_ptr());
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}

struct Case {
  std::string name;
  std::string third;  // a third variant beside Ours and Raw, or empty
};

const std::vector<Case>& cases() {
  static const std::vector<Case> names = {
      {"Extend256/100k", ""},
      {"Extend256/1M", ""},
      {"Sample256/100k", ""},
      {"Sample256/1M", ""},
      {"PrioritizedSampleUpdate256/100k", "RawMultinomial"},
      {"PrioritizedSampleUpdate256/1M", "RawMultinomial"},
      {"MemmapExtend256/1M", ""},
      {"MemmapSample256/1M", ""},
  };
  return names;
}

void register_benchmarks() {
  auto add = [](const std::string& name, auto fn) {
    benchmark::RegisterBenchmark(("BM_" + name).c_str(), fn)->Unit(benchmark::kMicrosecond);
  };
  for (auto [label, capacity] : {std::pair<const char*, int64_t>{"100k", kSmall}, {"1M", kLarge}}) {
    const std::string l = label;
    const int64_t c = capacity;
    add("Extend256/" + l + "/Ours", [c](benchmark::State& s) { extend_ours(s, c, false); });
    add("Extend256/" + l + "/Raw", [c](benchmark::State& s) { extend_raw(s, c, false); });
    add("Sample256/" + l + "/Ours", [c](benchmark::State& s) { sample_ours(s, c, false); });
    add("Sample256/" + l + "/Raw", [c](benchmark::State& s) { sample_raw(s, c, false); });
    add("PrioritizedSampleUpdate256/" + l + "/Ours",
        [c](benchmark::State& s) { prioritized_ours(s, c); });
    add("PrioritizedSampleUpdate256/" + l + "/Raw",
        [c](benchmark::State& s) { prioritized_raw(s, c); });
    add("PrioritizedSampleUpdate256/" + l + "/RawMultinomial",
        [c](benchmark::State& s) { prioritized_multinomial(s, c); });
  }
  add("MemmapExtend256/1M/Ours", [](benchmark::State& s) { extend_ours(s, kLarge, true); });
  add("MemmapExtend256/1M/Raw", [](benchmark::State& s) { extend_raw(s, kLarge, true); });
  add("MemmapSample256/1M/Ours", [](benchmark::State& s) { sample_ours(s, kLarge, true); });
  add("MemmapSample256/1M/Raw", [](benchmark::State& s) { sample_raw(s, kLarge, true); });
}

void print_tables(const RatioReporter& reporter, std::ostream& os) {
  os << "\ntdrl::replay vs the same copies in raw LibTorch, 256 rows per call: median of "
        "repetitions, torch::set_num_threads(1). On a loaded machine compare the CPU columns.\n\n"
     << "| case | ours us | raw us | ratio | ours cpu us | raw cpu us | cpu ratio | ours rows/s "
        "(cpu) | target |\n"
     << "|---|---:|---:|---:|---:|---:|---:|---:|---|\n";
  auto row = [&](const std::string& name, const Timing& ours, const Timing& raw, bool target) {
    const double ratio = ours.real / raw.real;
    os << "| " << name << " | " << fixed(ours.real / 1e3, 1) << " | " << fixed(raw.real / 1e3, 1)
       << " | " << fixed(ratio, 2) << " | " << fixed(ours.cpu / 1e3, 1) << " | "
       << fixed(raw.cpu / 1e3, 1) << " | " << fixed(ours.cpu / raw.cpu, 2) << " | "
       << fixed(kBatch / (ours.cpu * 1e-9), 0) << " | "
       << (target ? (ratio <= 1.5 ? "<= 1.5 ok" : "<= 1.5 MISS") : "-") << " |\n";
  };
  for (const auto& c : cases()) {
    const Timing ours = reporter.timing("BM_" + c.name + "/Ours");
    const Timing raw = reporter.timing("BM_" + c.name + "/Raw");
    if (ours.real < 0 || raw.real <= 0) continue;
    // The prioritized raw side does only the copies: no target applies to it.
    row(c.name, ours, raw, c.name.rfind("Prioritized", 0) != 0);
    if (!c.third.empty()) {
      const Timing third = reporter.timing("BM_" + c.name + "/" + c.third);
      if (third.real > 0) row(c.name + " vs " + c.third, ours, third, false);
    }
  }
}

void describe(std::ostream& os) {
  os << "bench_replay: torch::set_num_threads(1); transitions of observation " << kObs
     << ", action " << kAction << ", next observation/reward/done; 256 rows per call\n";
}

}  // namespace
}  // namespace tdrl::bench

TDRL_BENCHMARK_MAIN()
