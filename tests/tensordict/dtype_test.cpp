#include <tensordict/dtype.h>

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace tensordict {
namespace {

TEST(DtypeNameTest, SpellsDtypesAsPyTorchPrintsThem) {
  EXPECT_EQ(dtype_name(torch::kFloat32), "torch.float32");
  EXPECT_EQ(dtype_name(torch::kFloat64), "torch.float64");
  EXPECT_EQ(dtype_name(torch::kInt64), "torch.int64");
  EXPECT_EQ(dtype_name(torch::kInt8), "torch.int8");
  EXPECT_EQ(dtype_name(torch::kUInt8), "torch.uint8");
  EXPECT_EQ(dtype_name(torch::kBool), "torch.bool");
  EXPECT_EQ(dtype_name(torch::kComplexFloat), "torch.complex64");
}

TEST(DtypeNameTest, EveryNamedDtypeReadsBackAsItself) {
  for (auto dtype : {torch::kFloat32, torch::kFloat64, torch::kFloat16, torch::kBFloat16,
                     torch::kInt64, torch::kInt32, torch::kInt16, torch::kInt8, torch::kUInt8,
                     torch::kBool, torch::kComplexFloat, torch::kComplexDouble}) {
    const auto back = dtype_from_name(dtype_name(dtype));
    ASSERT_TRUE(back.has_value()) << dtype_name(dtype);
    EXPECT_EQ(*back, dtype);
  }
}

TEST(DtypeNameTest, UnknownNamesGiveNothing) {
  EXPECT_FALSE(dtype_from_name("float32").has_value());  // Python always writes the module
  EXPECT_FALSE(dtype_from_name("torch.float128").has_value());
  EXPECT_FALSE(dtype_from_name("").has_value());
}

}  // namespace
}  // namespace tensordict
