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
/// The layout version tdrl writes, and the newest it reads: Python tensordict's
/// "_format_version" (a meta.json without one is version 0).
constexpr int64_t kFormatVersion = 1;

/// What a folder holds: a TensorDict, a lazy stack of TensorDicts (subfolders 0, 1, ...), or one
/// non-tensor entry (Python's NonTensorData or NonTensorStack, a folder with a meta.json only).
enum class FolderType { kTensorDict, kLazyStack, kNonTensor };

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

/// One folder's meta.json. The layouts read: Python tensordict's (0.4: "shape", "device",
/// "_type", one entry per leaf and per nested TensorDict; format version 1, as 0.15.3 writes it:
/// also "_format_version", "_class", "is_nested", non-tensor entries as folders of their own and
/// percent-encoded file names), tdrl's (Python's plus a "_tdrl" entry that Python ignores), and
/// tdrl 0.1's ("batch_size", a null device, non-tensor values inline, lazy stacks under "_tdrl").
/// dump_meta writes Python's format version 1.
struct FolderMeta {
  FolderType type = FolderType::kTensorDict;
  int64_t format_version = 0;
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
  /// Non-tensor values kept in the folder's own meta.json (tdrl before format version 1).
  std::map<std::string, NonTensorMeta> non_tensors;
  /// Entries in folders of their own (`{"type": ...}`), with the class name Python recorded:
  /// TensorDict, LazyStackedTensorDict, NonTensorData or NonTensorStack.
  std::map<std::string, std::string> subfolders;
  /// kNonTensor: the value. A uniform one (NonTensorData) spans the batch of the TensorDict
  /// holding it, which Python does not record.
  NonTensorMeta non_tensor;
};

/// Parses meta.json text; throws Error naming `filename` and what is wrong.
FolderMeta parse_meta(const std::string& text, const std::string& filename);
std::string dump_meta(const FolderMeta& meta);
/// True for names meta.json uses itself (a key with such a name cannot be saved): "_type",
/// "_tdrl", "shape" and "device".
bool is_reserved_meta_key(const std::string& key);
/// The name of the file (without ".memmap") or folder of entry `key`, as Python tensordict
/// names it: '%XX' for '%', '/', '\\', ' ', the characters Windows forbids in file names and
/// control characters; "%2E" and "%2E%2E" for "." and ".."; every other byte (UTF-8 included)
/// as it is. A name never leaves its folder.
std::string encode_key(const std::string& key);
/// True for a key that names a file of its folder as it is: the names of folders written
/// before tensordict encoded them, which are read when the encoded name is missing.
bool is_plain_file_name(const std::string& key);

/// The saved form of a non-tensor entry; ValueError for values that are not string,
/// integer, floating or bool.
NonTensorMeta non_tensor_meta(const NonTensorData& data, const std::string& key);
NonTensorData non_tensor_from_meta(const NonTensorMeta& meta);

}  // namespace tensordict::detail
