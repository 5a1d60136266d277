#include <tensordict/dtype.h>

#include <utility>
#include <vector>

namespace tensordict {

namespace {

// Python's spellings; the first name of each dtype (float32, not float) is the one PyTorch
// prints.
const std::vector<std::pair<c10::ScalarType, const char*>>& dtype_table() {
  static const std::vector<std::pair<c10::ScalarType, const char*>> table = {
      {c10::kFloat, "torch.float32"},
      {c10::kDouble, "torch.float64"},
      {c10::kHalf, "torch.float16"},
      {c10::kBFloat16, "torch.bfloat16"},
      {c10::kLong, "torch.int64"},
      {c10::kInt, "torch.int32"},
      {c10::kShort, "torch.int16"},
      {c10::kChar, "torch.int8"},
      {c10::kByte, "torch.uint8"},
      {c10::kBool, "torch.bool"},
      {c10::kComplexFloat, "torch.complex64"},
      {c10::kComplexDouble, "torch.complex128"},
  };
  return table;
}

}  // namespace

std::string dtype_name(c10::ScalarType dtype) {
  for (const auto& [t, name] : dtype_table())
    if (t == dtype) return name;
  return std::string("torch.") + c10::toString(dtype);
}

std::optional<c10::ScalarType> dtype_from_name(const std::string& name) {
  for (const auto& [t, n] : dtype_table())
    if (name == n) return t;
  return std::nullopt;
}

}  // namespace tensordict
