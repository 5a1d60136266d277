#pragma once

// meta.json: the description of one folder of a saved TensorDict (docs/memmap.md). Parsing
// is kept apart from file access so that it can be fuzzed on its own.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <tensordict/tensor_dict.h>

namespace tensordict::detail {

/// The deepest nesting of arrays and objects parse_meta accepts (a meta.json written by
/// tensordict nests a few levels; non-tensor values may add some).
constexpr int64_t kMaxMetaDepth = 64;

enum class FolderType { kTensorDict, kLazyStack };

struct LeafMeta {
  std::vector<int64_t> shape;
  torch::Dtype dtype;
};

/// A non-tensor entry: its batch shape and one value (uniform) or one per element.
struct NonTensorMeta {
  std::vector<int64_t> batch_size;
  bool uniform = true;
  std::vector<AnyValue> values;
};

struct FolderMeta {
  FolderType type = FolderType::kTensorDict;
  BatchSize batch_size;
  std::optional<torch::Device> device;
  int64_t stack_dim = 0;           // lazy stacks only
  int64_t num_members = 0;         // lazy stacks only: members are subfolders "0", "1", ...
  std::vector<std::string> order;  // every key in insertion order (leaves, values, folders)
  std::map<std::string, LeafMeta> leaves;
  std::map<std::string, NonTensorMeta> non_tensors;
};

/// Parses meta.json text; throws Error naming `filename` and what is wrong.
FolderMeta parse_meta(const std::string& text, const std::string& filename);
std::string dump_meta(const FolderMeta& meta);
/// True for names meta.json uses itself (a key with such a name cannot be saved).
bool is_reserved_meta_key(const std::string& key);

/// The saved form of a non-tensor entry; ValueError for values that are not string,
/// integer, floating or bool.
NonTensorMeta non_tensor_meta(const NonTensorData& data, const std::string& key);
NonTensorData non_tensor_from_meta(const NonTensorMeta& meta);

/// "torch.float32" and back; nothing for an unknown name.
std::string dtype_name(torch::ScalarType dtype);
std::optional<torch::ScalarType> dtype_from_name(const std::string& name);

}  // namespace tensordict::detail
