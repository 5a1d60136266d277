// Google Benchmark of the TensorDict core against the same tensor work written by hand.
//
// Every operation is registered twice, as BM_<Op>/TensorDict and BM_<Op>/Raw. The TensorDict
// side calls the library; the raw side does the same LibTorch calls on a
// std::unordered_map<std::string, torch::Tensor> (a tree of them for nested data), so the
// difference is what the TensorDict adds: validation, key handling, its containers. After
// the run a table gives both times and the TensorDict/raw ratio against the targets.
//
// Data: 10 float leaves of shape [256, 8] under batch size [256]; the nested variants spread
// the 10 leaves over three levels: a0..a3, ("b", c0..c2), ("b", "d", e0..e2).

#include <algorithm>
#include <iostream>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <tensordict/tensordict.h>

#include "common.h"

namespace tdrl::bench {
namespace {

using tensordict::NestedKey;
using tensordict::TensorDict;
using torch::indexing::Slice;

constexpr int64_t kBatch = 256;
constexpr int64_t kFeatures = 8;
constexpr int kLeaves = 10;
constexpr int kStack = 16;
constexpr int64_t kIndexCount = 64;

// ---- The hand-written side -----------------------------------------------------------------

using RawMap = std::unordered_map<std::string, torch::Tensor>;

/// A nested dictionary written by hand: leaves plus child nodes.
struct RawNode {
  RawMap leaves;
  std::unordered_map<std::string, std::unique_ptr<RawNode>> children;
};

template <class F>
RawMap map_raw(const RawMap& in, F&& fn) {
  RawMap out;
  out.reserve(in.size());
  for (const auto& [k, v] : in) out.emplace(k, fn(v));
  return out;
}

template <class F>
RawNode map_raw(const RawNode& in, F&& fn) {
  RawNode out;
  out.leaves = map_raw(in.leaves, fn);
  out.children.reserve(in.children.size());
  for (const auto& [k, child] : in.children)
    out.children.emplace(k, std::make_unique<RawNode>(map_raw(*child, fn)));
  return out;
}

void flatten_raw(const RawNode& node, const std::string& prefix, RawMap& out) {
  for (const auto& [k, v] : node.leaves) out.emplace(prefix + k, v);
  for (const auto& [k, child] : node.children) flatten_raw(*child, prefix + k + ".", out);
}

RawNode unflatten_raw(const RawMap& flat) {
  RawNode root;
  for (const auto& [k, v] : flat) {
    RawNode* node = &root;
    size_t start = 0;
    for (size_t pos; (pos = k.find('.', start)) != std::string::npos; start = pos + 1) {
      auto& child = node->children[k.substr(start, pos - start)];
      if (!child) child = std::make_unique<RawNode>();
      node = child.get();
    }
    node->leaves.emplace(k.substr(start), v);
  }
  return root;
}

// ---- Shared inputs, built once before any benchmark runs -----------------------------------

struct Inputs {
  std::vector<std::string> names;  // k0..k9
  std::vector<torch::Tensor> leaves;

  TensorDict flat;  // batch [256]
  RawMap raw;
  TensorDict square;  // batch [16, 16]
  RawMap raw_square;
  TensorDict nested;  // batch [256], three levels
  RawNode raw_nested;

  std::vector<TensorDict> members;  // kStack TensorDicts like `flat`
  std::vector<RawMap> raw_members;
  TensorDict other;  // same keys as `flat`, other tensors (for update)
  RawMap raw_other;
  TensorDict row;  // batch [], leaves [8]
  RawMap raw_row;

  torch::Tensor mask;                // bool [256]
  torch::Tensor index;               // int64 [64]
  std::vector<NestedKey> some_keys;  // k1, k3, k5, k7, k9
  std::vector<std::string> raw_some_keys;
};

Inputs make_inputs() {
  Inputs in;
  for (int i = 0; i < kLeaves; ++i) {
    in.names.push_back("k" + std::to_string(i));
    in.leaves.push_back(torch::randn({kBatch, kFeatures}));
  }
  in.flat = TensorDict::empty({kBatch});
  in.square = TensorDict::empty({16, 16});
  in.other = TensorDict::empty({kBatch});
  in.row = TensorDict::empty({});
  for (int i = 0; i < kLeaves; ++i) {
    const auto& name = in.names[static_cast<size_t>(i)];
    const auto& leaf = in.leaves[static_cast<size_t>(i)];
    in.flat.set(name, leaf);
    in.raw.emplace(name, leaf);
    auto square = leaf.reshape({16, 16, kFeatures});
    in.square.set(name, square);
    in.raw_square.emplace(name, square);
    auto other = torch::randn({kBatch, kFeatures});
    in.other.set(name, other);
    in.raw_other.emplace(name, other);
    auto row = torch::randn({kFeatures});
    in.row.set(name, row);
    in.raw_row.emplace(name, row);
    if (i % 2 == 1) {
      in.some_keys.emplace_back(name);
      in.raw_some_keys.push_back(name);
    }
  }

  in.nested = TensorDict::empty({kBatch});
  auto& b = in.raw_nested.children["b"];
  b = std::make_unique<RawNode>();
  auto& d = b->children["d"];
  d = std::make_unique<RawNode>();
  for (int i = 0; i < kLeaves; ++i) {
    const auto& leaf = in.leaves[static_cast<size_t>(i)];
    if (i < 4) {
      const std::string name = "a" + std::to_string(i);
      in.nested.set(name, leaf);
      in.raw_nested.leaves.emplace(name, leaf);
    } else if (i < 7) {
      const std::string name = "c" + std::to_string(i - 4);
      in.nested.set({"b", name}, leaf);
      b->leaves.emplace(name, leaf);
    } else {
      const std::string name = "e" + std::to_string(i - 7);
      in.nested.set({"b", "d", name}, leaf);
      d->leaves.emplace(name, leaf);
    }
  }

  for (int m = 0; m < kStack; ++m) {
    auto td = TensorDict::empty({kBatch});
    RawMap raw;
    for (const auto& name : in.names) {
      auto t = torch::randn({kBatch, kFeatures});
      td.set(name, t);
      raw.emplace(name, t);
    }
    in.members.push_back(td);
    in.raw_members.push_back(std::move(raw));
  }

  in.mask = torch::rand({kBatch}) > 0.5;
  in.index = torch::randint(kBatch, {kIndexCount}, torch::kLong);
  return in;
}

const Inputs& inputs() {
  static const Inputs in = make_inputs();
  return in;
}

// ---- Benchmarks: each operation as a TensorDict / Raw pair ---------------------------------

void ConstructTd(benchmark::State& state) {
  const auto& l = inputs().leaves;
  time_calls(state, [&] {
    return TensorDict({{"k0", l[0]},
                       {"k1", l[1]},
                       {"k2", l[2]},
                       {"k3", l[3]},
                       {"k4", l[4]},
                       {"k5", l[5]},
                       {"k6", l[6]},
                       {"k7", l[7]},
                       {"k8", l[8]},
                       {"k9", l[9]}},
                      {kBatch});
  });
}

void ConstructRaw(benchmark::State& state) {
  const auto& l = inputs().leaves;
  time_calls(state, [&] {
    return RawMap{{"k0", l[0]}, {"k1", l[1]}, {"k2", l[2]}, {"k3", l[3]}, {"k4", l[4]},
                  {"k5", l[5]}, {"k6", l[6]}, {"k7", l[7]}, {"k8", l[8]}, {"k9", l[9]}};
  });
}

void GetTd(benchmark::State& state) {
  const auto& td = inputs().flat;
  time_calls(state, [&] { return td.get("k5"); });
}

void GetRaw(benchmark::State& state) {
  const auto& raw = inputs().raw;
  time_calls(state, [&] { return raw.at("k5"); });
}

void GetNestedTd(benchmark::State& state) {
  const auto& td = inputs().nested;
  time_calls(state, [&] { return td.get({"b", "d", "e1"}); });
}

void GetNestedRaw(benchmark::State& state) {
  const auto& raw = inputs().raw_nested;
  time_calls(state, [&] { return raw.children.at("b")->children.at("d")->leaves.at("e1"); });
}

void SetTd(benchmark::State& state) {
  TensorDict td = inputs().flat.clone(/*recurse=*/false);
  const auto& value = inputs().other.get("k5");
  for (auto _ : state) {
    td.set("k5", value);
    benchmark::ClobberMemory();
  }
}

void SetRaw(benchmark::State& state) {
  RawMap raw = inputs().raw;
  const auto& value = inputs().raw_other.at("k5");
  for (auto _ : state) {
    raw["k5"] = value;
    benchmark::ClobberMemory();
  }
}

void SetNestedTd(benchmark::State& state) {
  TensorDict td = inputs().nested.clone(/*recurse=*/false);
  const auto& value = inputs().other.get("k5");
  for (auto _ : state) {
    td.set({"b", "d", "e1"}, value);
    benchmark::ClobberMemory();
  }
}

void SetNestedRaw(benchmark::State& state) {
  RawNode raw = map_raw(inputs().raw_nested, [](const torch::Tensor& t) { return t; });
  const auto& value = inputs().raw_other.at("k5");
  for (auto _ : state) {
    raw.children.at("b")->children.at("d")->leaves["e1"] = value;
    benchmark::ClobberMemory();
  }
}

void IntIndexTd(benchmark::State& state) {
  const auto& td = inputs().flat;
  time_calls(state, [&] { return td.index({7}); });
}

void IntIndexRaw(benchmark::State& state) {
  const auto& raw = inputs().raw;
  time_calls(state,
             [&] { return map_raw(raw, [](const torch::Tensor& t) { return t.index({7}); }); });
}

void IntIndexNestedTd(benchmark::State& state) {
  const auto& td = inputs().nested;
  time_calls(state, [&] { return td.index({7}); });
}

void IntIndexNestedRaw(benchmark::State& state) {
  const auto& raw = inputs().raw_nested;
  time_calls(state,
             [&] { return map_raw(raw, [](const torch::Tensor& t) { return t.index({7}); }); });
}

void SliceTd(benchmark::State& state) {
  const auto& td = inputs().flat;
  time_calls(state, [&] { return td.index({Slice(10, 138)}); });
}

void SliceRaw(benchmark::State& state) {
  const auto& raw = inputs().raw;
  time_calls(state, [&] {
    return map_raw(raw, [](const torch::Tensor& t) { return t.index({Slice(10, 138)}); });
  });
}

void BoolMaskTd(benchmark::State& state) {
  const auto& td = inputs().flat;
  const auto& mask = inputs().mask;
  time_calls(state, [&] { return td.index({mask}); });
}

void BoolMaskRaw(benchmark::State& state) {
  const auto& raw = inputs().raw;
  const auto& mask = inputs().mask;
  time_calls(state,
             [&] { return map_raw(raw, [&](const torch::Tensor& t) { return t.index({mask}); }); });
}

void IndexTensorTd(benchmark::State& state) {
  const auto& td = inputs().flat;
  const auto& index = inputs().index;
  time_calls(state, [&] { return td.index({index}); });
}

void IndexTensorRaw(benchmark::State& state) {
  const auto& raw = inputs().raw;
  const auto& index = inputs().index;
  time_calls(state, [&] {
    return map_raw(raw, [&](const torch::Tensor& t) { return t.index({index}); });
  });
}

void CloneTd(benchmark::State& state) {
  const auto& td = inputs().flat;
  time_calls(state, [&] { return td.clone(); });
}

void CloneRaw(benchmark::State& state) {
  const auto& raw = inputs().raw;
  time_calls(state, [&] { return map_raw(raw, [](const torch::Tensor& t) { return t.clone(); }); });
}

void CloneNestedTd(benchmark::State& state) {
  const auto& td = inputs().nested;
  time_calls(state, [&] { return td.clone(); });
}

void CloneNestedRaw(benchmark::State& state) {
  const auto& raw = inputs().raw_nested;
  time_calls(state, [&] { return map_raw(raw, [](const torch::Tensor& t) { return t.clone(); }); });
}

void StackContiguousTd(benchmark::State& state) {
  const auto& members = inputs().members;
  time_calls(state, [&] { return tensordict::stack(members, 0).contiguous(); });
}

// Stacks (or concatenates) each key's tensors across the members with `op`.
template <class F>
RawMap combine_raw(const std::vector<RawMap>& members, F&& op) {
  RawMap out;
  out.reserve(members.front().size());
  std::vector<torch::Tensor> parts;
  parts.reserve(members.size());
  for (const auto& entry : members.front()) {
    parts.clear();
    for (const auto& m : members) parts.push_back(m.at(entry.first));
    out.emplace(entry.first, op(parts));
  }
  return out;
}

void StackContiguousRaw(benchmark::State& state) {
  const auto& members = inputs().raw_members;
  time_calls(state, [&] {
    return combine_raw(members,
                       [](const std::vector<torch::Tensor>& ts) { return torch::stack(ts, 0); });
  });
}

void CatTd(benchmark::State& state) {
  const auto& members = inputs().members;
  time_calls(state, [&] { return tensordict::cat(members, 0); });
}

void CatRaw(benchmark::State& state) {
  const auto& members = inputs().raw_members;
  time_calls(state, [&] {
    return combine_raw(members,
                       [](const std::vector<torch::Tensor>& ts) { return torch::cat(ts, 0); });
  });
}

void UnbindTd(benchmark::State& state) {
  const auto& td = inputs().flat;
  time_calls(state, [&] { return td.unbind(0); });
}

void UnbindRaw(benchmark::State& state) {
  const auto& raw = inputs().raw;
  time_calls(state, [&] {
    std::vector<RawMap> out(static_cast<size_t>(kBatch));
    for (auto& m : out) m.reserve(raw.size());
    for (const auto& [k, v] : raw) {
      auto pieces = v.unbind(0);
      for (size_t i = 0; i < pieces.size(); ++i) out[i].emplace(k, std::move(pieces[i]));
    }
    return out;
  });
}

// Batch [16, 16] -> [256] (a view for every leaf).
void ReshapeTd(benchmark::State& state) {
  const auto& td = inputs().square;
  time_calls(state, [&] { return td.reshape({kBatch}); });
}

void ReshapeRaw(benchmark::State& state) {
  const auto& raw = inputs().raw_square;
  time_calls(state, [&] {
    return map_raw(raw, [](const torch::Tensor& t) { return t.reshape({kBatch, kFeatures}); });
  });
}

void PermuteTd(benchmark::State& state) {
  const auto& td = inputs().square;
  time_calls(state, [&] { return td.permute({1, 0}); });
}

void PermuteRaw(benchmark::State& state) {
  const auto& raw = inputs().raw_square;
  time_calls(state, [&] {
    return map_raw(raw, [](const torch::Tensor& t) { return t.permute({1, 0, 2}); });
  });
}

void UnsqueezeTd(benchmark::State& state) {
  const auto& td = inputs().flat;
  time_calls(state, [&] { return td.unsqueeze(0); });
}

void UnsqueezeRaw(benchmark::State& state) {
  const auto& raw = inputs().raw;
  time_calls(state,
             [&] { return map_raw(raw, [](const torch::Tensor& t) { return t.unsqueeze(0); }); });
}

void ApplyTd(benchmark::State& state) {
  const auto& td = inputs().flat;
  time_calls(state, [&] { return td.apply([](const torch::Tensor& x) { return x * 2; }); });
}

void ApplyRaw(benchmark::State& state) {
  const auto& raw = inputs().raw;
  time_calls(state, [&] { return map_raw(raw, [](const torch::Tensor& x) { return x * 2; }); });
}

void ApplyNestedTd(benchmark::State& state) {
  const auto& td = inputs().nested;
  time_calls(state, [&] { return td.apply([](const torch::Tensor& x) { return x * 2; }); });
}

void ApplyNestedRaw(benchmark::State& state) {
  const auto& raw = inputs().raw_nested;
  time_calls(state, [&] { return map_raw(raw, [](const torch::Tensor& x) { return x * 2; }); });
}

void UpdateTd(benchmark::State& state) {
  TensorDict td = inputs().flat.clone(/*recurse=*/false);
  const auto& other = inputs().other;
  for (auto _ : state) {
    td.update(other);
    benchmark::ClobberMemory();
  }
}

void UpdateRaw(benchmark::State& state) {
  RawMap raw = inputs().raw;
  const auto& other = inputs().raw_other;
  for (auto _ : state) {
    for (const auto& [k, v] : other) raw.insert_or_assign(k, v);
    benchmark::ClobberMemory();
  }
}

void SelectTd(benchmark::State& state) {
  const auto& td = inputs().flat;
  const auto& keys = inputs().some_keys;
  time_calls(state, [&] { return td.select(keys); });
}

void SelectRaw(benchmark::State& state) {
  const auto& raw = inputs().raw;
  const auto& keys = inputs().raw_some_keys;
  time_calls(state, [&] {
    RawMap out;
    out.reserve(keys.size());
    for (const auto& k : keys) out.emplace(k, raw.at(k));
    return out;
  });
}

void ExcludeTd(benchmark::State& state) {
  const auto& td = inputs().flat;
  const auto& keys = inputs().some_keys;
  time_calls(state, [&] { return td.exclude(keys); });
}

void ExcludeRaw(benchmark::State& state) {
  const auto& raw = inputs().raw;
  const auto& keys = inputs().raw_some_keys;
  time_calls(state, [&] {
    RawMap out;
    out.reserve(raw.size());
    for (const auto& [k, v] : raw)
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) out.emplace(k, v);
    return out;
  });
}

void FlattenUnflattenKeysTd(benchmark::State& state) {
  const auto& td = inputs().nested;
  time_calls(state, [&] { return td.flatten_keys(".").unflatten_keys("."); });
}

void FlattenUnflattenKeysRaw(benchmark::State& state) {
  const auto& raw = inputs().raw_nested;
  time_calls(state, [&] {
    RawMap flat;
    flat.reserve(kLeaves);
    flatten_raw(raw, "", flat);
    return unflatten_raw(flat);
  });
}

void ToFloat64Td(benchmark::State& state) {
  const auto& td = inputs().flat;
  time_calls(state, [&] { return td.to(torch::kFloat64); });
}

void ToFloat64Raw(benchmark::State& state) {
  const auto& raw = inputs().raw;
  time_calls(state, [&] {
    return map_raw(raw, [](const torch::Tensor& t) { return t.to(torch::kFloat64); });
  });
}

// One iteration fills a 256-row buffer row by row; the first write allocates every key.
void LazyPreallocTd(benchmark::State& state) {
  const auto& row = inputs().row;
  time_calls(state, [&] {
    TensorDict buffer = TensorDict::empty({kBatch});
    for (int64_t i = 0; i < kBatch; ++i) buffer.index_put_({i}, row);
    return buffer;
  });
}

void LazyPreallocRaw(benchmark::State& state) {
  const auto& row = inputs().raw_row;
  time_calls(state, [&] {
    RawMap buffer;
    for (int64_t i = 0; i < kBatch; ++i) {
      if (buffer.empty()) {
        buffer.reserve(row.size());
        for (const auto& [k, v] : row) {
          std::vector<int64_t> shape{kBatch};
          shape.insert(shape.end(), v.sizes().begin(), v.sizes().end());
          buffer.emplace(k, torch::zeros(shape, v.options()));
        }
      }
      for (const auto& [k, v] : row) buffer.at(k).index_put_({i}, v);
    }
    return buffer;
  });
}

// ---- Registration and the ratio table ------------------------------------------------------

// Ratio targets from the performance issue: hash-map-like lookups may cost 3x an
// unordered_map; anything that touches tensors 1.3x the hand-written LibTorch calls.
constexpr double kLookupTarget = 3.0;
constexpr double kTensorTarget = 1.3;

struct OpPair {
  const char* op;
  double target;
  void (*tensordict)(benchmark::State&);
  void (*raw)(benchmark::State&);
};

const std::vector<OpPair>& op_pairs() {
  static const std::vector<OpPair> pairs = {
      {"Construct", kTensorTarget, ConstructTd, ConstructRaw},
      {"Get", kLookupTarget, GetTd, GetRaw},
      {"GetNested", kLookupTarget, GetNestedTd, GetNestedRaw},
      {"Set", kLookupTarget, SetTd, SetRaw},
      {"SetNested", kLookupTarget, SetNestedTd, SetNestedRaw},
      {"IntIndex", kTensorTarget, IntIndexTd, IntIndexRaw},
      {"IntIndexNested", kTensorTarget, IntIndexNestedTd, IntIndexNestedRaw},
      {"Slice", kTensorTarget, SliceTd, SliceRaw},
      {"BoolMask", kTensorTarget, BoolMaskTd, BoolMaskRaw},
      {"IndexTensor64", kTensorTarget, IndexTensorTd, IndexTensorRaw},
      {"Clone", kTensorTarget, CloneTd, CloneRaw},
      {"CloneNested", kTensorTarget, CloneNestedTd, CloneNestedRaw},
      {"Stack16Contiguous", kTensorTarget, StackContiguousTd, StackContiguousRaw},
      {"Cat16", kTensorTarget, CatTd, CatRaw},
      {"Unbind", kTensorTarget, UnbindTd, UnbindRaw},
      {"Reshape", kTensorTarget, ReshapeTd, ReshapeRaw},
      {"Permute", kTensorTarget, PermuteTd, PermuteRaw},
      {"Unsqueeze", kTensorTarget, UnsqueezeTd, UnsqueezeRaw},
      {"Apply", kTensorTarget, ApplyTd, ApplyRaw},
      {"ApplyNested", kTensorTarget, ApplyNestedTd, ApplyNestedRaw},
      {"Update", kTensorTarget, UpdateTd, UpdateRaw},
      {"Select", kTensorTarget, SelectTd, SelectRaw},
      {"Exclude", kTensorTarget, ExcludeTd, ExcludeRaw},
      {"FlattenUnflattenKeys", kTensorTarget, FlattenUnflattenKeysTd, FlattenUnflattenKeysRaw},
      {"ToFloat64", kTensorTarget, ToFloat64Td, ToFloat64Raw},
      {"LazyPrealloc256", kTensorTarget, LazyPreallocTd, LazyPreallocRaw},
  };
  return pairs;
}

void register_benchmarks() {
  inputs();  // built before the timings, not inside the first one
  for (const auto& pair : op_pairs()) {
    const std::string base = std::string("BM_") + pair.op;
    benchmark::RegisterBenchmark((base + "/TensorDict").c_str(), pair.tensordict)
        ->Unit(benchmark::kNanosecond);
    benchmark::RegisterBenchmark((base + "/Raw").c_str(), pair.raw)->Unit(benchmark::kNanosecond);
  }
}

// Times and ratio are real time, as the targets are stated; the CPU-time ratio is shown
// beside it because on a shared machine preemption inflates real time, not CPU time.
void print_tables(const RatioReporter& reporter, std::ostream& os) {
  os << "\nTensorDict vs raw LibTorch: real time per call (median of repetitions), "
     << "torch::set_num_threads(1)\n\n"
     << "| op | tensordict ns | raw ns | ratio | cpu ratio | target |\n"
     << "|---|---:|---:|---:|---:|---|\n";
  int missed = 0;
  int measured = 0;
  for (const auto& pair : op_pairs()) {
    const std::string base = std::string("BM_") + pair.op;
    const Timing td = reporter.timing(base + "/TensorDict");
    const Timing raw = reporter.timing(base + "/Raw");
    if (td.real < 0 || raw.real <= 0) continue;
    const double ratio = td.real / raw.real;
    const bool ok = ratio <= pair.target;
    ++measured;
    if (!ok) ++missed;
    os << "| " << pair.op << " | " << fixed(td.real, 0) << " | " << fixed(raw.real, 0) << " | "
       << fixed(ratio, 2) << " | " << fixed(td.cpu / raw.cpu, 2)
       << " | <= " << fixed(pair.target, 1) << (ok ? " ok" : " MISS") << " |\n";
  }
  os << "\n" << measured - missed << " of " << measured << " ops within target.\n";
}

void describe(std::ostream& os) {
  os << "bench_tensordict: torch::set_num_threads(1) (intra-op threads: "
     << torch::get_num_threads() << "); 10 float leaves [256, 8], batch [256]\n";
}

}  // namespace
}  // namespace tdrl::bench

TDRL_BENCHMARK_MAIN()
