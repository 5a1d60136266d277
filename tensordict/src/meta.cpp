#include "detail/meta.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

namespace tensordict::detail {

using nlohmann::json;

namespace {

constexpr const char* kTensorDictType = "<class 'tensordict._td.TensorDict'>";
constexpr const char* kLazyStackType = "<class 'tensordict._lazy.LazyStackedTensorDict'>";
constexpr const char* kNonTensorType = "<class 'tensordict.tensorclass.NonTensorData'>";
constexpr const char* kNonTensorStackType = "<class 'tensordict.tensorclass.NonTensorStack'>";

const std::vector<std::pair<torch::ScalarType, const char*>>& dtype_table() {
  static const std::vector<std::pair<torch::ScalarType, const char*>> table = {
      {torch::kFloat, "torch.float32"},
      {torch::kDouble, "torch.float64"},
      {torch::kHalf, "torch.float16"},
      {torch::kBFloat16, "torch.bfloat16"},
      {torch::kLong, "torch.int64"},
      {torch::kInt, "torch.int32"},
      {torch::kShort, "torch.int16"},
      {torch::kChar, "torch.int8"},
      {torch::kByte, "torch.uint8"},
      {torch::kBool, "torch.bool"},
      {torch::kComplexFloat, "torch.complex64"},
      {torch::kComplexDouble, "torch.complex128"},
  };
  return table;
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
  if (j.is_number_integer()) return AnyValue(j.get<int64_t>());
  if (j.is_number_float()) return AnyValue(j.get<double>());
  bad(filename, "a non-tensor value must be a string, number or bool");
}

}  // namespace

std::string dtype_name(torch::ScalarType dtype) {
  for (const auto& [t, name] : dtype_table())
    if (t == dtype) return name;
  return std::string("torch.") + c10::toString(dtype);
}

std::optional<torch::ScalarType> dtype_from_name(const std::string& name) {
  for (const auto& [t, n] : dtype_table())
    if (name == n) return t;
  return std::nullopt;
}

bool is_reserved_meta_key(const std::string& key) {
  return key == "_type" || key == "_tdrl" || key == "batch_size" || key == "device";
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
  json j = json::object();
  j["batch_size"] = meta.batch_size;
  j["device"] = meta.device ? json(meta.device->str()) : json(nullptr);
  json tdrl = json::object();
  if (meta.type == FolderType::kLazyStack) {
    j["_type"] = kLazyStackType;
    tdrl["stack_dim"] = meta.stack_dim;
    tdrl["num_members"] = meta.num_members;
  } else {
    j["_type"] = kTensorDictType;
    tdrl["order"] = meta.order;
  }
  for (const auto& [key, leaf] : meta.leaves)
    j[key] = {{"shape", leaf.shape}, {"dtype", dtype_name(leaf.dtype)}, {"device", "cpu"}};
  for (const auto& [key, nt] : meta.non_tensors) {
    json values = json::array();
    for (const auto& v : nt.values) values.push_back(value_json(v, key));
    j[key] = {{"_type", nt.uniform ? kNonTensorType : kNonTensorStackType},
              {"batch_size", nt.batch_size},
              {"data", nt.uniform ? values[0] : values}};
  }
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
  // The folder's batch size and device.
  FolderMeta meta;
  if (!j.contains("batch_size")) bad(filename, "no 'batch_size'");
  meta.batch_size = int_list(j["batch_size"], "batch_size", filename, /*non_negative=*/true);
  if (j.contains("device") && !j["device"].is_null()) {
    if (!j["device"].is_string()) bad(filename, "'device' must be a string or null");
    try {
      meta.device = torch::Device(j["device"].get<std::string>());
    } catch (const c10::Error&) {
      bad(filename, "unknown device '" + j["device"].get<std::string>() + "'");
    }
  }
  // A lazy stack: its stack dim and member count (the members are subfolders).
  const std::string type =
      j.contains("_type") && j["_type"].is_string() ? j["_type"].get<std::string>() : "";
  const json tdrl = j.contains("_tdrl") && j["_tdrl"].is_object() ? j["_tdrl"] : json::object();
  if (type == kLazyStackType) {
    meta.type = FolderType::kLazyStack;
    if (!tdrl.contains("stack_dim") || !tdrl["stack_dim"].is_number_integer() ||
        !tdrl.contains("num_members") || !tdrl["num_members"].is_number_integer())
      bad(filename, "a lazy stack needs integer '_tdrl.stack_dim' and '_tdrl.num_members'");
    meta.stack_dim = tdrl["stack_dim"].get<int64_t>();
    meta.num_members = tdrl["num_members"].get<int64_t>();
    if (meta.num_members <= 0 || meta.num_members > (int64_t{1} << 24))
      bad(filename, "'_tdrl.num_members' must be in [1, 2^24]");
    if (meta.stack_dim < 0 || meta.stack_dim >= static_cast<int64_t>(meta.batch_size.size()))
      bad(filename, "'_tdrl.stack_dim' must be a batch dim");
    return meta;
  }
  // tdrl's own key order, then one entry per leaf: non-tensor values inline, tensors as shape
  // and dtype (their data is in the leaf's file).
  if (tdrl.contains("order")) {
    if (!tdrl["order"].is_array()) bad(filename, "'_tdrl.order' must be a list of keys");
    for (const auto& k : tdrl["order"]) {
      if (!k.is_string() || !is_file_name(k.get<std::string>()))
        bad(filename, "'_tdrl.order' must list keys that are file names");
      meta.order.push_back(k.get<std::string>());
    }
  }
  for (const auto& [key, entry] : j.items()) {
    if (is_reserved_meta_key(key)) continue;
    if (!is_file_name(key)) bad(filename, "entry name '" + key + "' is not a file name");
    if (!entry.is_object()) bad(filename, "entry '" + key + "' must be an object");
    if (entry.contains("_type")) {
      const json& t = entry["_type"];
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
      } else {
        if (!entry["data"].is_array()) bad(filename, "'" + key + ".data' must be a list");
        int64_t n = 1;
        for (auto d : nt.batch_size)
          if (__builtin_mul_overflow(n, d, &n))
            bad(filename, "'" + key + ".batch_size' is too large");
        if (static_cast<int64_t>(entry["data"].size()) != n)
          bad(filename, "'" + key + ".data' holds " + std::to_string(entry["data"].size()) +
                            " values for batch_size " + shape_str(nt.batch_size));
        for (const auto& v : entry["data"]) nt.values.push_back(value_from_json(v, filename));
      }
      meta.non_tensors.emplace(key, std::move(nt));
      continue;
    }
    if (!entry.contains("shape") || !entry.contains("dtype") || !entry["dtype"].is_string())
      bad(filename, "tensor entry '" + key + "' needs 'shape' and a 'dtype' string");
    LeafMeta leaf;
    leaf.shape = int_list(entry["shape"], key + ".shape", filename, true);
    auto dtype = dtype_from_name(entry["dtype"].get<std::string>());
    if (!dtype)
      bad(filename,
          "entry '" + key + "' has unknown dtype '" + entry["dtype"].get<std::string>() + "'");
    leaf.dtype = *dtype;
    meta.leaves.emplace(key, std::move(leaf));
  }
  return meta;
}

}  // namespace tensordict::detail
