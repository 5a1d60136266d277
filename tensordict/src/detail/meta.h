#pragma once

// meta.json: the description of one folder of a saved TensorDict (docs/memmap.md). Parsing
// is kept apart from file access so that it can be fuzzed on its own.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <tensordict/dtype.h>
#include <tensordict/tensor_dict.h>

namespace tensordict::detail {

/// The deepest nesting of arrays and objects parse_meta accepts (a meta.json written by
/// tensordict nests a few levels; non-tensor values may add some).
constexpr int64_t kMaxMetaDepth = 64;
/// The most members a saved lazy stack may have.
constexpr int64_t kMaxStackMembers = int64_t{1} << 24;

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

/// One folder's meta.json. Three layouts are read: Python tensordict's (0.4 and later: "shape",
/// "device", "_type", one entry per leaf and per nested TensorDict), tdrl's, which is Python's
/// plus a "_tdrl" entry Python ignores (key order, non-tensor values, member count), and tdrl
/// 0.1's ("batch_size", a null device, non-tensor values inline, lazy stacks under "_tdrl").
/// dump_meta writes tdrl's.
struct FolderMeta {
  FolderType type = FolderType::kTensorDict;
  BatchSize batch_size;  // TensorDict folders
  std::optional<torch::Device> device;
  int64_t stack_dim = 0;               // lazy stacks only
  std::optional<int64_t> num_members;  // lazy stacks: absent in Python's (count the folders)
  std::optional<BatchSize> stacked_batch_size;  // lazy stacks of tdrl 0.1, which recorded it
  /// Every key in insertion order (leaves, values, subfolders): tdrl's record when
  /// order_recorded, else the order of the entries in the file.
  std::vector<std::string> order;
  bool order_recorded = false;
  std::map<std::string, LeafMeta> leaves;
  std::map<std::string, NonTensorMeta> non_tensors;
  /// Nested TensorDicts named in the file (`{"type": ...}`), with the type Python recorded.
  std::map<std::string, std::string> subfolders;
};

/// Parses meta.json text; throws Error naming `filename` and what is wrong.
FolderMeta parse_meta(const std::string& text, const std::string& filename);
std::string dump_meta(const FolderMeta& meta);
/// True for names meta.json uses itself (a key with such a name cannot be saved): "_type",
/// "_tdrl", "shape" and "device".
bool is_reserved_meta_key(const std::string& key);

/// The saved form of a non-tensor entry; ValueError for values that are not string,
/// integer, floating or bool.
NonTensorMeta non_tensor_meta(const NonTensorData& data, const std::string& key);
NonTensorData non_tensor_from_meta(const NonTensorMeta& meta);

}  // namespace tensordict::detail
