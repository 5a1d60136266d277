#include "detail/meta.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

namespace tensordict::detail {

// Ordered: entries keep the file's order, which is the insertion order of a folder Python wrote.
using json = nlohmann::ordered_json;

namespace {

constexpr const char* kTensorDictType = "<class 'tensordict._td.TensorDict'>";
constexpr const char* kLazyStackType = "<class 'tensordict._lazy.LazyStackedTensorDict'>";
constexpr const char* kNonTensorType = "<class 'tensordict.tensorclass.NonTensorData'>";
constexpr const char* kNonTensorStackType = "<class 'tensordict.tensorclass.NonTensorStack'>";

[[noreturn]] void bad(const std::string& filename, const std::string& what) {
  throw Error("TensorDict::load_memmap: malformed '" + filename + "': " + what);
}

// Keys name files and subfolders of the folder; none may lead out of it.
bool is_file_name(const std::string& key) {
  return !key.empty() && key != "." && key != ".." && key.find('/') == std::string::npos &&
         key.find('\0') == std::string::npos;
}

std::vector<int64_t> int_list(const json& j, const std::string& field, const std::string& filename,
                              bool non_negative) {
  if (!j.is_array()) bad(filename, "'" + field + "' must be a list of integers");
  std::vector<int64_t> out;
  for (const auto& x : j) {
    if (!x.is_number_integer()) bad(filename, "'" + field + "' must be a list of integers");
    const int64_t v = x.get<int64_t>();
    if (non_negative && v < 0) bad(filename, "'" + field + "' has a negative size");
    out.push_back(v);
  }
  return out;
}

json value_json(const AnyValue& v, const std::string& key) {
  if (auto* s = v.get_if<std::string>()) return *s;
  if (auto* i = v.get_if<int64_t>()) return *i;
  if (auto* d = v.get_if<double>()) {
    // JSON has no NaN or infinity (nlohmann would write null, which does not load back).
    TDRL_CHECK(std::isfinite(*d), ValueError, "TensorDict::memmap: non-tensor value of key '", key,
               "' is ", std::to_string(*d), "; only finite floating values can be saved");
    return *d;
  }
  if (auto* b = v.get_if<bool>()) return *b;
  throw ValueError("TensorDict::memmap: non-tensor value of key '" + key + "' holds " +
                   v.type_name() + "; only string, integer, floating and bool values can be saved");
}

AnyValue value_from_json(const json& j, const std::string& filename) {
  if (j.is_string()) return AnyValue(j.get<std::string>());
  if (j.is_boolean()) return AnyValue(j.get<bool>());
  if (j.is_number_integer()) return AnyValue(j.get<int64_t>());
  if (j.is_number_float()) return AnyValue(j.get<double>());
  bad(filename, "a non-tensor value must be a string, number or bool");
}

}  // namespace

bool is_reserved_meta_key(const std::string& key) {
  return key == "_type" || key == "_tdrl" || key == "shape" || key == "device";
}

NonTensorMeta non_tensor_meta(const NonTensorData& data, const std::string& key) {
  NonTensorMeta meta;
  meta.batch_size = data.batch_size();
  meta.uniform = data.is_uniform();
  if (meta.uniform) {
    value_json(data.pool().front(), key);  // checks the type
    meta.values = {data.pool().front()};
  } else {
    meta.values = data.tolist();
    for (const auto& v : meta.values) value_json(v, key);
  }
  return meta;
}

NonTensorData non_tensor_from_meta(const NonTensorMeta& meta) {
  if (meta.uniform) return NonTensorData(meta.values.front(), meta.batch_size);
  auto positions = torch::arange(static_cast<int64_t>(meta.values.size()), torch::kLong)
                       .reshape(meta.batch_size);
  return NonTensorData::per_element(meta.values, positions);
}

std::string dump_meta(const FolderMeta& meta) {
  // Python's layout, in the order Python writes it: one entry per leaf and per nested
  // TensorDict, then the folder's own fields. tdrl's extras go under "_tdrl", which Python
  // skips (it reads only entries with a leaf file or a "type").
  json j = json::object();
  json tdrl = json::object();
  if (meta.type == FolderType::kLazyStack) {
    j["_type"] = kLazyStackType;
    j["stack_dim"] = meta.stack_dim;
    if (meta.num_members) tdrl["num_members"] = *meta.num_members;
    j["_tdrl"] = tdrl;
    return j.dump(2);
  }
  json non_tensors = json::object();
  for (const auto& key : meta.order) {
    if (auto leaf = meta.leaves.find(key); leaf != meta.leaves.end()) {
      j[key] = {{"device", "cpu"},
                {"shape", leaf->second.shape},
                {"dtype", dtype_name(leaf->second.dtype)}};
    } else if (auto nt = meta.non_tensors.find(key); nt != meta.non_tensors.end()) {
      json values = json::array();
      for (const auto& v : nt->second.values) values.push_back(value_json(v, key));
      non_tensors[key] = {{"_type", nt->second.uniform ? kNonTensorType : kNonTensorStackType},
                          {"batch_size", nt->second.batch_size},
                          {"data", nt->second.uniform ? values[0] : values}};
    } else {
      auto sub = meta.subfolders.find(key);
      j[key] = {{"type", sub != meta.subfolders.end() ? sub->second : "TensorDict"}};
    }
  }
  j["shape"] = meta.batch_size;
  j["device"] = meta.device ? meta.device->str() : "None";
  j["_type"] = kTensorDictType;
  tdrl["order"] = meta.order;
  if (!non_tensors.empty()) tdrl["non_tensors"] = non_tensors;
  j["_tdrl"] = tdrl;
  try {
    return j.dump(2);
  } catch (const json::type_error& e) {
    throw ValueError(std::string("TensorDict::memmap: keys and string values must be valid UTF-8 "
                                 "to be written to meta.json (") +
                     e.what() + ")");
  }
}

namespace {

// The deepest nesting of arrays and objects in the JSON `text` (brackets inside strings do not
// count). Parsing, copying and destroying a json value recurse once per level, so a crafted
// file nested a few hundred thousand levels deep would overflow the stack: it is refused before
// it is parsed.
int64_t json_depth(const std::string& text) {
  int64_t depth = 0;
  int64_t deepest = 0;
  bool in_string = false;
  bool escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

}  // namespace

namespace {

// A non-tensor entry ({"_type", "batch_size", "data"}): under "_tdrl.non_tensors", or inline
// in a tdrl 0.1 folder.
NonTensorMeta parse_non_tensor(const std::string& key, const json& entry,
                               const std::string& filename) {
  if (!entry.is_object()) bad(filename, "non-tensor entry '" + key + "' must be an object");
  const json& t = entry.contains("_type") ? entry["_type"] : json();
  const bool uniform = t == kNonTensorType;
  if (!uniform && t != kNonTensorStackType)
    bad(filename, "entry '" + key + "' has an unknown _type");
  NonTensorMeta nt;
  nt.uniform = uniform;
  if (!entry.contains("batch_size") || !entry.contains("data"))
    bad(filename, "non-tensor entry '" + key + "' needs 'batch_size' and 'data'");
  nt.batch_size = int_list(entry["batch_size"], key + ".batch_size", filename, true);
  if (uniform) {
    nt.values.push_back(value_from_json(entry["data"], filename));
    return nt;
  }
  if (!entry["data"].is_array()) bad(filename, "'" + key + ".data' must be a list");
  int64_t n = 1;
  for (auto d : nt.batch_size)
    if (__builtin_mul_overflow(n, d, &n)) bad(filename, "'" + key + ".batch_size' is too large");
  if (static_cast<int64_t>(entry["data"].size()) != n)
    bad(filename, "'" + key + ".data' holds " + std::to_string(entry["data"].size()) +
                      " values for batch_size " + shape_str(nt.batch_size));
  for (const auto& v : entry["data"]) nt.values.push_back(value_from_json(v, filename));
  return nt;
}

// A tensor leaf ({"shape", "dtype", "device"}; the data is in <key>.memmap, always mapped on the
// CPU: the folder's device says where the TensorDict goes).
LeafMeta parse_leaf(const std::string& key, const json& entry, const std::string& filename) {
  if (!entry.contains("shape") || !entry.contains("dtype") || !entry["dtype"].is_string())
    bad(filename, "tensor entry '" + key + "' needs 'shape' and a 'dtype' string");
  if (entry.contains("is_nested") && entry["is_nested"] == true)
    bad(filename, "entry '" + key +
                      "' is a nested (jagged) tensor, which tdrl does not read; pad it to a "
                      "regular tensor in Python before saving");
  LeafMeta leaf;
  leaf.shape = int_list(entry["shape"], key + ".shape", filename, true);
  auto dtype = dtype_from_name(entry["dtype"].get<std::string>());
  if (!dtype)
    bad(filename,
        "entry '" + key + "' has unknown dtype '" + entry["dtype"].get<std::string>() + "'");
  leaf.dtype = *dtype;
  return leaf;
}

std::optional<torch::Device> parse_device(const json& j, const std::string& filename) {
  // Python writes "None" for a TensorDict without a device; tdrl 0.1 wrote null.
  if (j.is_null() || j == "None") return std::nullopt;
  if (!j.is_string()) bad(filename, "'device' must be a device string, \"None\" or null");
  try {
    return torch::Device(j.get<std::string>());
  } catch (const c10::Error&) {
    bad(filename, "unknown device '" + j.get<std::string>() + "'");
  }
}

// A lazy stack: its stack dim, and the member count where tdrl recorded it (the members are the
// subfolders "0", "1", ...).
void parse_lazy_stack(const json& j, const json& tdrl, bool legacy, FolderMeta& meta,
                      const std::string& filename) {
  meta.type = FolderType::kLazyStack;
  const json& dim = legacy ? (tdrl.contains("stack_dim") ? tdrl["stack_dim"] : json())
                           : (j.contains("stack_dim") ? j["stack_dim"] : json());
  if (!dim.is_number_integer())
    bad(filename, std::string("a lazy stack needs an integer '") +
                      (legacy ? "_tdrl.stack_dim" : "stack_dim") + "'");
  meta.stack_dim = dim.get<int64_t>();
  if (meta.stack_dim < 0) bad(filename, "'stack_dim' must be a batch dim (>= 0)");
  if (legacy) {
    if (!tdrl.contains("num_members"))
      bad(filename, "a lazy stack needs integer '_tdrl.stack_dim' and '_tdrl.num_members'");
    meta.stacked_batch_size = meta.batch_size;
    if (meta.stack_dim >= static_cast<int64_t>(meta.batch_size.size()))
      bad(filename, "'_tdrl.stack_dim' must be a batch dim");
  }
  if (tdrl.contains("num_members")) {
    if (!tdrl["num_members"].is_number_integer())
      bad(filename, "'_tdrl.num_members' must be an integer");
    meta.num_members = tdrl["num_members"].get<int64_t>();
    if (*meta.num_members <= 0 || *meta.num_members > kMaxStackMembers)
      bad(filename, "'_tdrl.num_members' must be in [1, 2^24]");
  }
}

}  // namespace

FolderMeta parse_meta(const std::string& text, const std::string& filename) {
  const int64_t depth = json_depth(text);
  if (depth > kMaxMetaDepth) {
    bad(filename, "it nests " + std::to_string(depth) +
                      " levels of arrays and objects, more than " + std::to_string(kMaxMetaDepth) +
                      " (a meta.json nests a few; this file was not written by a TensorDict)");
  }
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    bad(filename, std::string("not valid JSON (") + e.what() + ")");
  }
  if (!j.is_object()) bad(filename, "the top level must be an object");
  // The folder's type. Python's non-tensor data and tensorclasses are folders of other types.
  const std::string type = j.contains("_type") && j["_type"].is_string()
                               ? j["_type"].get<std::string>()
                               : kTensorDictType;
  if (type != kTensorDictType && type != kLazyStackType)
    bad(filename, "it describes a " + type +
                      "; tdrl reads TensorDict and LazyStackedTensorDict folders only (Python's "
                      "non-tensor data and tensorclasses are not read: convert them to tensors, "
                      "or delete the entry, before saving in Python)");
  const json tdrl = j.contains("_tdrl") && j["_tdrl"].is_object() ? j["_tdrl"] : json::object();
  // The batch size: "shape" (Python, tdrl), "batch_size" (tdrl 0.1, in which a leaf could be
  // named "shape"). A lazy stack written by Python has neither: its members say.
  FolderMeta meta;
  const bool legacy = j.contains("batch_size") && j["batch_size"].is_array();
  const char* size_field = legacy ? "batch_size" : "shape";
  if (j.contains(size_field)) {
    meta.batch_size = int_list(j[size_field], size_field, filename, /*non_negative=*/true);
  } else if (type != kLazyStackType) {
    bad(filename, "no 'shape' (the batch size; tdrl 0.1 wrote it as 'batch_size')");
  }
  if (j.contains("device")) meta.device = parse_device(j["device"], filename);
  if (type == kLazyStackType) {
    parse_lazy_stack(j, tdrl, legacy, meta, filename);
    return meta;
  }
  // tdrl's key order and non-tensor values.
  if (tdrl.contains("order")) {
    if (!tdrl["order"].is_array()) bad(filename, "'_tdrl.order' must be a list of keys");
    for (const auto& k : tdrl["order"]) {
      if (!k.is_string() || !is_file_name(k.get<std::string>()))
        bad(filename, "'_tdrl.order' must list keys that are file names");
      meta.order.push_back(k.get<std::string>());
    }
    meta.order_recorded = true;
  }
  if (tdrl.contains("non_tensors")) {
    if (!tdrl["non_tensors"].is_object())
      bad(filename, "'_tdrl.non_tensors' must be an object of non-tensor entries");
    for (const auto& [key, entry] : tdrl["non_tensors"].items()) {
      if (!is_file_name(key)) bad(filename, "non-tensor key '" + key + "' is not a file name");
      meta.non_tensors.emplace(key, parse_non_tensor(key, entry, filename));
    }
  }
  // One entry per leaf ({"shape", "dtype"}) and per nested TensorDict ({"type"}); tdrl 0.1 kept
  // non-tensor values inline ({"_type"}).
  const auto reserved = [&](const std::string& key) {
    return key == "_type" || key == "_tdrl" || key == "device" || key == size_field;
  };
  std::vector<std::string> entries;
  for (const auto& [key, entry] : j.items()) {
    if (reserved(key)) continue;
    if (!is_file_name(key)) bad(filename, "entry name '" + key + "' is not a file name");
    if (!entry.is_object()) bad(filename, "entry '" + key + "' must be an object");
    if (meta.non_tensors.count(key))
      bad(filename, "key '" + key + "' is both an entry and one of '_tdrl.non_tensors'");
    if (entry.contains("type")) {
      if (!entry["type"].is_string()) bad(filename, "entry '" + key + "' has a non-string type");
      meta.subfolders.emplace(key, entry["type"].get<std::string>());
    } else if (entry.contains("_type")) {
      meta.non_tensors.emplace(key, parse_non_tensor(key, entry, filename));
    } else {
      meta.leaves.emplace(key, parse_leaf(key, entry, filename));
    }
    entries.push_back(key);
  }
  if (!meta.order_recorded) {
    meta.order = entries;
    for (const auto& [key, nt] : meta.non_tensors)
      if (std::find(entries.begin(), entries.end(), key) == entries.end())
        meta.order.push_back(key);
  }
  return meta;
}

}  // namespace tensordict::detail
