#include "detail/meta.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include <nlohmann/json.hpp>

namespace tensordict::detail {

// Ordered: entries keep the file's order, which is the insertion order of a folder Python wrote.
using json = nlohmann::ordered_json;

namespace {

constexpr const char* kTensorDictType = "<class 'tensordict._td.TensorDict'>";
constexpr const char* kLazyStackType = "<class 'tensordict._lazy.LazyStackedTensorDict'>";
constexpr const char* kNonTensorType = "<class 'tensordict.tensorclass.NonTensorData'>";
constexpr const char* kNonTensorStackType = "<class 'tensordict.tensorclass.NonTensorStack'>";

// What each folder type is called: "_type" (every version), "_class" (format version 1), and
// the entry's "type" in the meta.json of the folder holding it.
struct FolderClass {
  FolderType type;
  bool uniform;  // kNonTensor: NonTensorData, else NonTensorStack
  const char* type_string;
  const char* class_id;
  const char* name;
};
constexpr FolderClass kClasses[] = {
    {FolderType::kTensorDict, false, kTensorDictType, "tensordict:TensorDict", "TensorDict"},
    {FolderType::kLazyStack, false, kLazyStackType, "tensordict:LazyStackedTensorDict",
     "LazyStackedTensorDict"},
    {FolderType::kNonTensor, true, kNonTensorType, "tensordict:NonTensorData", "NonTensorData"},
    {FolderType::kNonTensor, false, kNonTensorStackType, "tensordict:NonTensorStack",
     "NonTensorStack"},
};

const FolderClass& folder_class(FolderType type, bool uniform) {
  for (const auto& c : kClasses)
    if (c.type == type && (type != FolderType::kNonTensor || c.uniform == uniform)) return c;
  return kClasses[0];
}

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
  if (j.is_number_unsigned() &&
      j.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    bad(filename, "a non-tensor integer " + j.dump() + " does not fit in int64");
  if (j.is_number_integer()) return AnyValue(j.get<int64_t>());
  if (j.is_number_float()) return AnyValue(j.get<double>());
  bad(filename, "a non-tensor value must be a string, number or bool");
}

}  // namespace

bool is_reserved_meta_key(const std::string& key) {
  return key == "_type" || key == "_tdrl" || key == "shape" || key == "device";
}

std::string encode_key(const std::string& key) {
  // Python's "%" for the empty key cannot collide: a literal '%' is written "%25".
  if (key.empty()) return "%";
  if (key == "." || key == "..") return key == "." ? "%2E" : "%2E%2E";
  static const std::string kUnsafe = "/<>:\"|?*\\ %";
  std::string out;
  out.reserve(key.size());
  for (const char c : key) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 32 || byte == 127 || kUnsafe.find(c) != std::string::npos) {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", byte);
      out += hex;
    } else {
      out += c;
    }
  }
  return out;
}

bool is_plain_file_name(const std::string& key) { return is_file_name(key); }

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

namespace {

// The values of a per-element entry as nested lists, one level per batch dim, as Python's
// NonTensorStack.tolist() gives them.
json nested_values(const NonTensorMeta& nt, size_t dim, size_t& next, const std::string& key) {
  json out = json::array();
  for (int64_t i = 0; i < nt.batch_size[dim]; ++i) {
    if (dim + 1 < nt.batch_size.size()) {
      out.push_back(nested_values(nt, dim + 1, next, key));
    } else {
      out.push_back(value_json(nt.values[next++], key));
    }
  }
  return out;
}

json non_tensor_json(const NonTensorMeta& nt) {
  // The key is not known here; values were checked by non_tensor_meta.
  const std::string key = "(non-tensor value)";
  // A per-element entry without batch dims holds one value: Python has no NonTensorStack of
  // that shape, so it is written as a NonTensorData.
  if (nt.uniform || nt.batch_size.empty()) {
    return {{"_type", kNonTensorType},
            {"data", value_json(nt.values.front(), key)},
            {"_metadata", nullptr},
            {"_is_non_tensor", true}};
  }
  const FolderClass& c = folder_class(FolderType::kNonTensor, false);
  size_t next = 0;
  // Nested lists lose the dims after a zero-sized one: tdrl's own entry keeps the batch size.
  return {{"_type", c.type_string},
          {"_format_version", kFormatVersion},
          {"_class", c.class_id},
          {"stack_dim", 0},
          {"device", nullptr},
          {"data", nested_values(nt, 0, next, key)},
          {"_tdrl", {{"batch_size", nt.batch_size}}}};
}

}  // namespace

std::string dump_meta(const FolderMeta& meta) {
  // Python's layout, in the order Python writes it: one entry per leaf and per entry in a folder
  // of its own, then the folder's own fields. tdrl's extras go under "_tdrl", which Python
  // skips (it reads only entries with a leaf file or a "type").
  json j = json::object();
  if (meta.type == FolderType::kNonTensor) {
    j = non_tensor_json(meta.non_tensor);
  } else if (meta.type == FolderType::kLazyStack) {
    const FolderClass& c = folder_class(FolderType::kLazyStack, false);
    j["_type"] = c.type_string;
    j["_format_version"] = kFormatVersion;
    j["_class"] = c.class_id;
    j["stack_dim"] = meta.stack_dim;
    j["stack_dim_name"] = nullptr;
    // Python counts the member folders; the count lets tdrl tell a lost member from the end.
    if (meta.num_members) j["_tdrl"] = {{"num_members", *meta.num_members}};
  } else {
    for (const auto& key : meta.order) {
      if (auto leaf = meta.leaves.find(key); leaf != meta.leaves.end()) {
        j[key] = {{"device", "cpu"},
                  {"shape", leaf->second.shape},
                  {"dtype", dtype_name(leaf->second.dtype)},
                  {"is_nested", false}};
      } else if (auto nt = meta.non_tensors.find(key); nt != meta.non_tensors.end()) {
        j[key] = {{"type", folder_class(FolderType::kNonTensor, nt->second.uniform).name}};
      } else {
        auto sub = meta.subfolders.find(key);
        j[key] = {{"type", sub != meta.subfolders.end() ? sub->second : "TensorDict"}};
      }
    }
    const FolderClass& c = folder_class(FolderType::kTensorDict, false);
    j["shape"] = meta.batch_size;
    j["device"] = meta.device ? meta.device->str() : "None";
    j["_type"] = c.type_string;
    // As Python does: a key of that name keeps its entry, and the file reads as version 0.
    if (!j.contains("_format_version")) j["_format_version"] = kFormatVersion;
    if (!j.contains("_class")) j["_class"] = c.class_id;
  }
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

// The shape of Python's nested lists of per-element values (one level per batch dim, scalars
// at the bottom), and the values in row-major order. A list of lists of unequal lengths, or of
// lists and scalars mixed, is no batch.
void flatten_nested(const json& j, size_t dim, const std::vector<int64_t>& shape,
                    std::vector<AnyValue>& out, const std::string& where,
                    const std::string& filename) {
  if (dim == shape.size()) {
    if (j.is_array()) bad(filename, "'" + where + "' nests lists unevenly (not a batch)");
    out.push_back(value_from_json(j, filename));
    return;
  }
  if (!j.is_array() || static_cast<int64_t>(j.size()) != shape[dim])
    bad(filename, "'" + where + "' is not a list of " + std::to_string(shape[dim]) +
                      " values at depth " + std::to_string(dim) + " (lists of a batch " +
                      shape_str(shape) + " expected)");
  for (const auto& x : j) flatten_nested(x, dim + 1, shape, out, where, filename);
}

// A folder holding one non-tensor entry: Python's NonTensorData (one value, spanning the batch of
// the TensorDict holding it) or NonTensorStack (nested lists of one value per element; tdrl also
// records the batch size, which lists do not give past a zero-sized dim).
void parse_non_tensor_folder(const json& j, bool uniform, FolderMeta& meta,
                             const std::string& filename) {
  meta.type = FolderType::kNonTensor;
  NonTensorMeta& nt = meta.non_tensor;
  nt.uniform = uniform;
  const char* what = uniform ? "NonTensorData" : "NonTensorStack";
  if (!j.contains("data"))
    bad(filename, std::string("the ") + what +
                      " has no 'data': Python pickled its value (other.pickle), which tdrl does "
                      "not read; store a string, number or bool");
  const json& data = j["data"];
  if (uniform) {
    nt.values.push_back(value_from_json(data, filename));
    return;
  }
  if (data.is_string())
    bad(filename, "the NonTensorStack's data is pickled ('" + data.get<std::string>() +
                      "'), which tdrl does not read; store strings, numbers or bools");
  if (!data.is_array()) bad(filename, "the NonTensorStack's 'data' must be a list");
  std::vector<int64_t> shape;
  for (const json* level = &data; level->is_array(); level = &(*level)[0]) {
    shape.push_back(static_cast<int64_t>(level->size()));
    if (level->empty()) break;
  }
  const json* recorded =
      j.contains("_tdrl") && j["_tdrl"].is_object() && j["_tdrl"].contains("batch_size")
          ? &j["_tdrl"]["batch_size"]
          : nullptr;
  nt.batch_size = shape;
  if (recorded) {
    nt.batch_size = int_list(*recorded, "_tdrl.batch_size", filename, /*non_negative=*/true);
    int64_t n = 1;
    for (auto d : shape) n *= d;
    const bool prefix = nt.batch_size.size() >= shape.size() &&
                        std::equal(shape.begin(), shape.end(), nt.batch_size.begin());
    if (!(nt.batch_size == shape || (n == 0 && prefix)))
      bad(filename, "'data' nests lists of shape " + shape_str(shape) +
                        " but '_tdrl.batch_size' is " + shape_str(nt.batch_size));
  }
  flatten_nested(data, 0, shape, nt.values, "data", filename);
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
  FolderMeta meta;
  // Format fields, unless a key took the name: Python then keeps the key's entry (an object)
  // and writes no field of that name.
  const auto field = [&](const char* name) {
    return j.contains(name) && !j[name].is_object() ? &j[name] : nullptr;
  };
  if (const json* version = field("_format_version")) {
    if (!version->is_number_integer() || version->get<int64_t>() < 0)
      bad(filename, "'_format_version' must be a non-negative integer, not " + version->dump());
    meta.format_version = version->get<int64_t>();
    if (meta.format_version > kFormatVersion)
      bad(filename, "it was saved in format version " + std::to_string(meta.format_version) +
                        ", and this tdrl reads format versions up to " +
                        std::to_string(kFormatVersion) + "; a newer tdrl may read it");
  }
  const json* class_id = field("_class");
  if (class_id && !class_id->is_string()) bad(filename, "'_class' must be a string");
  if (const json* names = field("_names"); names && !names->is_array() && !names->is_null())
    bad(filename, "'_names' must be a list of dim names");
  // The folder's type: by "_class" (format version 1), else, as Python falls back, by "_type";
  // a folder without either is a TensorDict.
  const std::string type_string = j.contains("_type") && j["_type"].is_string()
                                      ? j["_type"].get<std::string>()
                                      : kTensorDictType;
  const FolderClass* folder = nullptr;
  for (const auto& c : kClasses)
    if (class_id && *class_id == c.class_id) folder = &c;
  for (const auto& c : kClasses)
    if (!folder && type_string == c.type_string) folder = &c;
  if (!folder)
    bad(filename, "it describes a " + (class_id ? class_id->get<std::string>() : type_string) +
                      "; tdrl reads TensorDict, LazyStackedTensorDict, NonTensorData and "
                      "NonTensorStack folders only (tensorclasses and other classes are not "
                      "read: convert them to a TensorDict, or delete the entry, before saving in "
                      "Python)");
  if (folder->type == FolderType::kNonTensor) {
    parse_non_tensor_folder(j, folder->uniform, meta, filename);
    return meta;
  }
  const json tdrl = j.contains("_tdrl") && j["_tdrl"].is_object() ? j["_tdrl"] : json::object();
  // The batch size: "shape" (Python, tdrl), "batch_size" (tdrl 0.1, in which a leaf could be
  // named "shape"). A lazy stack written by Python has neither: its members say.
  const bool legacy = j.contains("batch_size") && j["batch_size"].is_array();
  const char* size_field = legacy ? "batch_size" : "shape";
  if (j.contains(size_field)) {
    meta.batch_size = int_list(j[size_field], size_field, filename, /*non_negative=*/true);
  } else if (folder->type != FolderType::kLazyStack) {
    bad(filename, "no 'shape' (the batch size; tdrl 0.1 wrote it as 'batch_size')");
  }
  if (j.contains("device")) meta.device = parse_device(j["device"], filename);
  if (folder->type == FolderType::kLazyStack) {
    parse_lazy_stack(j, tdrl, legacy, meta, filename);
    return meta;
  }
  // tdrl's key order and non-tensor values (tdrl before format version 1). Those keys were
  // checked to be file names when written, and name folders as they are.
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
  // One entry per leaf ({"shape", "dtype"}) and per entry in a folder of its own ({"type"});
  // tdrl 0.1 kept non-tensor values inline ({"_type"}).
  const auto reserved = [&](const std::string& key) {
    return key == "_type" || key == "_tdrl" || key == "device" || key == size_field ||
           ((key == "_format_version" || key == "_class" || key == "_names") &&
            !j[key].is_object());
  };
  std::vector<std::string> entries;
  for (const auto& [key, entry] : j.items()) {
    if (reserved(key)) continue;
    // Keys name files through encode_key, so any key stays in its folder; tdrl's keys are
    // never empty.
    if (key.empty())
      bad(filename,
          "an entry has the empty key, which a tdrl TensorDict cannot hold; rename it "
          "before saving in Python");
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
