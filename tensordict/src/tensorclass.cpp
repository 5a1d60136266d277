// The non-template half of tensorclasses: checking a TensorDict's entries against a class's
// declared fields, and printing an instance in Python's tensorclass repr.

#include <tensordict/tensorclass.h>

#include <algorithm>
#include <cmath>

#include "detail/impl.h"
#include "detail/printing.h"

namespace tensordict::detail {

namespace {

std::vector<std::string> names_of(const TensorClassSpec& spec) {
  std::vector<std::string> names;
  for (const auto& f : spec.fields) names.push_back(f.name);
  return names;
}

std::string quoted_list(const std::vector<std::string>& names) {
  std::string out = "[";
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", '" : "'") + names[i] + "'";
  return out + "]";
}

std::string declared(const TensorClassSpec& spec) {
  return spec.name + " declares " + quoted_list(names_of(spec));
}

const char* kind_of(const Value& v) {
  if (std::holds_alternative<torch::Tensor>(v)) return "a tensor";
  if (std::holds_alternative<TensorDict>(v)) return "a TensorDict";
  return "non-tensor data";
}

bool kind_matches(FieldKind kind, const Value& v) {
  switch (kind) {
    case FieldKind::kTensor:
      return std::holds_alternative<torch::Tensor>(v);
    case FieldKind::kTensorClass:
    case FieldKind::kTensorDict:
      return std::holds_alternative<TensorDict>(v);
    case FieldKind::kNonTensor:
      return std::holds_alternative<NonTensorData>(v);
  }
  return false;
}

// Entry `key` of `td` as far as the checks need it: for tensors only the kind matters, so a
// lazy stack or a view answers with a stored tensor instead of stacking or gathering one.
std::optional<Value> peek(const TensorDict& td, const std::string& key) {
  if (td.is_lazy_stack() || td.is_sub_tensordict()) {
    const TensorDict& source = td.is_lazy_stack()
                                   ? LazyStackedTensorDict(td).tensordicts().front()
                                   : static_cast<const SubImpl&>(*td.impl()).parent();
    std::optional<Value> first = peek(source, key);
    if (first && std::holds_alternative<torch::Tensor>(*first)) return first;
    if (!td.impl()->contains(key)) return std::nullopt;
  }
  // Nested TensorDicts of lazy stacks come back as lazy stacks, non-tensor data stacked:
  // neither copies a tensor.
  return td.impl()->find(key);
}

std::string path_repr(const std::vector<std::string>& path) {
  if (path.size() == 1) return "'" + path.front() + "'";
  std::string out = "(";
  for (size_t i = 0; i < path.size(); ++i) out += (i ? ", '" : "'") + path[i] + "'";
  return out + ")";
}

void check_entries(const std::vector<std::pair<std::string, Value>>& entries,
                   const TensorClassSpec& spec, const std::string& op, FieldCheck mode,
                   std::vector<std::string>& path);

void check_value(const FieldSpec& field, const Value& value, const std::string& op, FieldCheck mode,
                 std::vector<std::string>& path) {
  TDRL_CHECK(kind_matches(field.kind, value), TypeError, op, ": field ", path_repr(path),
             " is declared ", field.type_name, " but holds ", kind_of(value));
  if (field.kind == FieldKind::kNonTensor) {
    for (const auto& v : std::get<NonTensorData>(value).pool())
      TDRL_CHECK(field.accepts(v), TypeError, op, ": field ", path_repr(path), " is declared ",
                 field.type_name, " but holds a ", v.type_name());
  } else if (field.kind == FieldKind::kTensorClass) {
    const TensorDict& nested = std::get<TensorDict>(value);
    std::vector<std::pair<std::string, Value>> entries;
    for (const auto& k : nested.impl()->keys()) entries.emplace_back(k, *peek(nested, k));
    check_entries(entries, field.nested(), op, mode, path);
  }
}

void check_entries(const std::vector<std::pair<std::string, Value>>& entries,
                   const TensorClassSpec& spec, const std::string& op, FieldCheck mode,
                   std::vector<std::string>& path) {
  const std::string where = path.empty() ? "" : " in field " + path_repr(path);
  const auto names = names_of(spec);
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string& key = entries[i].first;
    for (size_t j = 0; j < i; ++j)
      TDRL_CHECK(entries[j].first != key, ValueError, op, ": field '", key, "'", where,
                 " is given twice");
    TDRL_CHECK(std::find(names.begin(), names.end(), key) != names.end(), KeyError, op,
               ": unknown field '", key, "'", where, "; ", spec.name, " declares ",
               closest_names(key, names));
  }
  if (mode == FieldCheck::kAll) {
    std::vector<std::string> missing;
    for (const auto& name : names) {
      bool found = false;
      for (const auto& e : entries) found = found || e.first == name;
      if (!found) missing.push_back(name);
    }
    TDRL_CHECK(missing.empty(), KeyError, op, ": missing field", (missing.size() > 1 ? "s " : " "),
               quoted_list(missing), where, "; ", declared(spec));
  }
  for (const auto& field : spec.fields)
    for (const auto& e : entries)
      if (e.first == field.name) {
        path.push_back(field.name);
        check_value(field, e.second, op, mode, path);
        path.pop_back();
      }
}

// Python's repr of a non-tensor value: strings quoted, floats with a decimal point.
std::string python_repr(const AnyValue& v) {
  if (auto* s = v.get_if<std::string>()) return "'" + *s + "'";
  if (auto* d = v.get_if<double>()) {
    std::string out = v.to_string();
    if (std::isfinite(*d) && out.find_first_of(".e") == std::string::npos) out += ".0";
    return out;
  }
  return v.to_string();
}

std::string nested_python_list(const std::vector<AnyValue>& values, c10::IntArrayRef shape,
                               size_t dim, size_t& pos) {
  if (dim == shape.size()) return python_repr(values[pos++]);
  std::string out = "[";
  for (int64_t i = 0; i < shape[dim]; ++i)
    out += (i ? ", " : "") + nested_python_list(values, shape, dim + 1, pos);
  return out + "]";
}

std::string non_tensor_field_repr(const NonTensorData& data) {
  if (data.is_uniform()) return python_repr(data.pool().front());
  size_t pos = 0;
  return nested_python_list(data.tolist(), data.batch_size(), 0, pos);
}

}  // namespace

void check_fields(const TensorDict& td, const TensorClassSpec& spec, const std::string& op,
                  FieldCheck mode) {
  std::vector<std::pair<std::string, Value>> entries;
  for (const auto& k : td.impl()->keys()) entries.emplace_back(k, *peek(td, k));
  std::vector<std::string> path;
  check_entries(entries, spec, op, mode, path);
}

void check_field_values(const std::vector<std::pair<std::string, Value>>& entries,
                        const TensorClassSpec& spec, const std::string& op, FieldCheck mode) {
  std::vector<std::string> path;
  check_entries(entries, spec, op, mode, path);
}

std::string tensorclass_repr(const TensorDict& td, const TensorClassSpec& spec) {
  // As Python: tensor and nested fields sorted by name, then non-tensor fields in
  // declaration order, then the batch size, device and sharing.
  std::vector<std::string> fields;
  std::vector<std::string> non_tensor;
  for (const auto& field : spec.fields) {
    if (!td.impl()->contains(field.name)) continue;
    if (field.kind == FieldKind::kNonTensor) {
      non_tensor.push_back(field.name + "=" + non_tensor_field_repr(td.get_non_tensor(field.name)));
    } else if (field.kind == FieldKind::kTensorClass) {
      fields.push_back(field.name + "=" +
                       tensorclass_repr(td.get_tensordict(field.name), field.nested()));
    } else {
      fields.push_back(field.name + "=" + entry_repr(td, field.name));
    }
  }
  std::sort(fields.begin(), fields.end());
  fields.insert(fields.end(), non_tensor.begin(), non_tensor.end());
  fields.push_back("batch_size=" + size_repr(td.batch_size()));
  fields.push_back("device=" + device_repr(td.device()));
  fields.push_back("is_shared=False");
  std::string body;
  for (size_t i = 0; i < fields.size(); ++i) body += (i ? ",\n" : "") + fields[i];
  return spec.name + "(\n" + indent(body, 4) + ")";
}

void run_as(const std::string& op, const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error&) {
    // tensordict's own errors name the operation the user called; others pass unchanged.
    rethrow_with_prefix(std::current_exception(), op + ": ");
  }
}

std::string unqualified_type_name(const char* mangled) {
  const std::string name = c10::demangle(mangled);
  // The last `::` outside template arguments and parentheses ("(anonymous namespace)::X").
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '<' || c == '(')
      ++depth;
    else if (c == '>' || c == ')')
      --depth;
    else if (depth == 0 && c == ':' && i + 1 < name.size() && name[i + 1] == ':')
      start = i + 2;
  }
  return name.substr(start);
}

}  // namespace tensordict::detail
