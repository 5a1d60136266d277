#include "checks.h"

#include <sstream>

namespace tdrl::replay::detail {

using tensordict::IndexError;
using tensordict::ShapeError;
using tensordict::TypeError;
using tensordict::ValueError;

torch::Tensor as_index(const torch::Tensor& index, const std::string& op, const char* what) {
  TDRL_CHECK(index.defined(), ValueError, op, what, " is an undefined tensor");
  TDRL_CHECK(at::isIntegralType(index.scalar_type(), /*includeBool=*/false), TypeError, op, what,
             " must hold integers, got dtype ", std::string(c10::toString(index.scalar_type())));
  TDRL_CHECK(index.dim() == 1, ShapeError, op, what, " must be 1-D, got shape ", sizes_str(index),
             " (flatten it first)");
  return index.to(torch::kCPU, torch::kLong).contiguous();
}

torch::Tensor to_device_async(const torch::Tensor& t, torch::Device device) {
  if (t.device() == device) return t;
  if (device.is_cuda() && t.is_cpu()) return t.pin_memory().to(device, /*non_blocking=*/true);
  return t.to(device);
}

void check_index_range(const torch::Tensor& index, int64_t limit, const std::string& op,
                       const char* what, const char* limit_name) {
  const int64_t* p = index.data_ptr<int64_t>();
  const int64_t n = index.numel();
  for (int64_t i = 0; i < n; ++i) {
    if (p[i] < 0 || p[i] >= limit) {
      std::ostringstream os;
      os << op << what << " " << p[i] << " (position " << i << ") is out of range [0, " << limit
         << ") (" << limit_name << " " << limit << ")";
      throw IndexError(os.str());
    }
  }
}

namespace {
tensordict::AnyValue read_value(const TensorDict& state, const char* key, const std::string& op) {
  auto value = state.find_value(key);
  TDRL_CHECK(value && std::holds_alternative<tensordict::NonTensorData>(*value), ValueError, op,
             "the checkpoint has no value '", key, "'; was it written by dumps?");
  return std::get<tensordict::NonTensorData>(*value).value();
}
}  // namespace

int64_t read_int(const TensorDict& state, const char* key, const std::string& op) {
  auto v = read_value(state, key, op);
  if (auto* i = v.get_if<int64_t>()) return *i;
  throw ValueError(op + "checkpoint value '" + key + "' is " + v.to_string() + ", not an integer");
}

double read_double(const TensorDict& state, const char* key, const std::string& op) {
  auto v = read_value(state, key, op);
  if (auto* d = v.get_if<double>()) return *d;
  if (auto* i = v.get_if<int64_t>()) return static_cast<double>(*i);
  throw ValueError(op + "checkpoint value '" + key + "' is " + v.to_string() + ", not a number");
}

std::string read_string(const TensorDict& state, const char* key, const std::string& op) {
  auto v = read_value(state, key, op);
  if (auto* s = v.get_if<std::string>()) return *s;
  throw ValueError(op + "checkpoint value '" + key + "' is " + v.to_string() + ", not a string");
}

torch::Tensor read_tensor(const TensorDict& state, const char* key, const std::string& op) {
  auto value = state.find_value(key);
  TDRL_CHECK(value && std::holds_alternative<torch::Tensor>(*value), ValueError, op,
             "the checkpoint has no tensor '", key, "'; was it written by dumps?");
  return std::get<torch::Tensor>(*value);
}

void check_type(const TensorDict& state, const std::string& expected, const std::string& op) {
  const auto type = read_string(state, "kind", op);
  TDRL_CHECK(type == expected, ValueError, op, "the checkpoint holds a ", type, " but this is a ",
             expected, "; load it into a buffer built with the same kinds of components");
}

std::string sizes_str(const torch::Tensor& t) { return tensordict::shape_str(t.sizes()); }

std::string keys_str(const TensorDict& td) {
  std::ostringstream os;
  os << "[";
  bool first = true;
  for (const auto& key : td.keys(/*include_nested=*/true, /*leaves_only=*/true)) {
    os << (first ? "" : ", ") << key.to_string();
    first = false;
  }
  os << "]";
  return os.str();
}

}  // namespace tdrl::replay::detail
