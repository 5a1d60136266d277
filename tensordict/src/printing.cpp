// Python tensordict's repr: fields sorted, nested blocks indented by four spaces a level.

#include <tensordict/lazy_stacked_tensordict.h>
#include <tensordict/tensor_dict.h>

#include <algorithm>
#include <sstream>

#include "detail/impl.h"
#include "detail/meta.h"
#include "detail/printing.h"

namespace tensordict {

namespace detail {

std::string size_repr(c10::IntArrayRef shape) { return "torch.Size(" + shape_str(shape) + ")"; }

std::string device_repr(const std::optional<torch::Device>& d) { return d ? d->str() : "None"; }

std::string indent(const std::string& text, int n) {
  std::string pad(static_cast<size_t>(n), ' ');
  std::string out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    std::string line =
        text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (line.find_first_not_of(" \t") != std::string::npos) out += pad;
    out += line;
    if (end == std::string::npos) break;
    out += '\n';
    start = end + 1;
  }
  return out;
}

}  // namespace detail

namespace {

using detail::indent;

std::string size_str(c10::IntArrayRef shape) { return detail::size_repr(shape); }

std::string device_str(const std::optional<torch::Device>& d) { return detail::device_repr(d); }

// CUDA memory, shared memory and read-write memory maps count as shared, as in Python.
std::string tensor_repr(c10::IntArrayRef shape, const torch::Tensor& t) {
  return "Tensor(shape=" + size_str(shape) + ", device=" + t.device().str() +
         ", dtype=" + dtype_name(t.scalar_type()) +
         ", is_shared=" + (is_shared(t) ? "True" : "False") + ")";
}

std::string nested_list(const std::vector<AnyValue>& values, c10::IntArrayRef shape, size_t dim,
                        size_t& pos) {
  if (dim == shape.size()) return values[pos++].to_string();
  std::string out = "[";
  for (int64_t i = 0; i < shape[dim]; ++i)
    out += (i ? ", " : "") + nested_list(values, shape, dim + 1, pos);
  return out + "]";
}

std::string non_tensor_repr(const NonTensorData& nt) {
  if (nt.is_uniform())
    return "NonTensorData(data=" + nt.pool().front().to_string() +
           ", batch_size=" + size_str(nt.batch_size()) + ", device=None)";
  size_t pos = 0;
  return "NonTensorStack(\n    " + nested_list(nt.tolist(), nt.batch_size(), 0, pos) +
         ",\n    batch_size=" + size_str(nt.batch_size()) + ",\n    device=None)";
}

std::string repr(const TensorDict& td);

std::string value_repr(const Value& v) {
  if (auto* t = std::get_if<torch::Tensor>(&v)) return tensor_repr(t->sizes(), *t);
  if (auto* nested = std::get_if<TensorDict>(&v)) return repr(*nested);
  return non_tensor_repr(std::get<NonTensorData>(v));
}

std::string fields_block(std::vector<std::string> fields) {
  std::sort(fields.begin(), fields.end());
  std::string joined;
  for (size_t i = 0; i < fields.size(); ++i) joined += (i ? ",\n" : "") + fields[i];
  return indent("\n" + joined, 4);
}

// A member key of a lazy stack: its stacked form, with -1 where members' shapes differ.
std::string lazy_entry(const LazyStackedTensorDict& lazy, const std::string& key) {
  std::vector<Value> values;
  for (const auto& m : lazy.tensordicts()) values.push_back(*m.impl()->find(key));
  if (auto* t0 = std::get_if<torch::Tensor>(&values.front())) {
    std::vector<int64_t> shape = t0->sizes().vec();
    for (const auto& v : values) {
      auto* t = std::get_if<torch::Tensor>(&v);
      if (!t || t->dim() != t0->dim()) return "<mixed entries>";
      for (size_t d = 0; d < shape.size(); ++d)
        if (t->size(static_cast<int64_t>(d)) != shape[d]) shape[d] = -1;
    }
    shape.insert(shape.begin() + lazy.stack_dim(), static_cast<int64_t>(values.size()));
    return tensor_repr(shape, *t0);
  }
  return value_repr(*lazy.impl()->find(key));
}

std::string lazy_field(const LazyStackedTensorDict& lazy, const std::string& key) {
  return key + ": " + lazy_entry(lazy, key);
}

std::string repr(const TensorDict& td) {
  std::vector<std::string> fields;
  std::string name = "TensorDict";
  std::string extra;
  if (td.is_lazy_stack()) {
    LazyStackedTensorDict lazy(td);
    name = "LazyStackedTensorDict";
    for (const auto& k : td.impl()->keys()) fields.push_back(lazy_field(lazy, k));
    std::vector<std::string> exclusive;
    const auto common = td.impl()->keys();
    for (size_t i = 0; i < lazy.tensordicts().size(); ++i) {
      std::vector<std::string> own;
      detail::for_each_entry(lazy.tensordicts()[i], [&](const std::string& k, const Value& v) {
        if (std::find(common.begin(), common.end(), k) == common.end())
          own.push_back(k + ": " + value_repr(v));
      });
      if (!own.empty()) exclusive.push_back(std::to_string(i) + " ->" + fields_block(own));
    }
    std::string ex;
    for (size_t i = 0; i < exclusive.size(); ++i) ex += (i ? ",\n" : "") + exclusive[i];
    extra = ",\n" + indent("exclusive_fields={" + indent("\n" + ex, 4) + "}", 4);
  } else {
    if (td.is_sub_tensordict()) name = "SubTensorDict";
    detail::for_each_entry(td, [&](const std::string& k, const Value& v) {
      fields.push_back(k + ": " + value_repr(v));
    });
  }
  std::string out = name + "(\n" + indent("fields={" + fields_block(fields) + "}", 4) + extra +
                    ",\n" + indent("batch_size=" + size_str(td.batch_size()), 4) + ",\n" +
                    indent("device=" + device_str(td.device()), 4) + ",\n" +
                    indent(std::string("is_shared=") + (td.is_shared() ? "True" : "False"), 4);
  if (td.is_lazy_stack())
    out += ",\n" + indent("stack_dim=" + std::to_string(LazyStackedTensorDict(td).stack_dim()), 4);
  return out + ")";
}

}  // namespace

std::string detail::entry_repr(const TensorDict& td, const std::string& key) {
  if (td.is_lazy_stack()) return lazy_entry(LazyStackedTensorDict(td), key);
  std::optional<Value> v = td.impl()->find(key);
  TORCH_INTERNAL_ASSERT(v.has_value(), "entry_repr: missing key ", key);
  return value_repr(*v);
}

std::string TensorDict::to_string() const { return repr(*this); }

std::ostream& operator<<(std::ostream& os, const TensorDict& td) { return os << td.to_string(); }

}  // namespace tensordict
