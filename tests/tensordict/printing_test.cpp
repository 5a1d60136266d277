// Golden strings of TensorDict's printed form, which follows Python tensordict's repr: fields
// sorted by key, each tensor as `Tensor(shape=..., device=..., dtype=..., is_shared=...)`,
// then batch_size, device and is_shared, nested blocks indented four spaces a level.

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include <tensordict/tensordict.h>

namespace tensordict {
namespace {

std::string printed(const TensorDict& td) {
  std::ostringstream os;
  os << td;
  return os.str();
}

// Golden strings keep one printed line per source line.
// clang-format off
TEST(PrintingTest, FlatTensorDictListsFieldsSorted) {
  // The tutorial's TensorDict, inserted out of order: fields print sorted.
  auto td = TensorDict({{"b", torch::zeros({3, 4})}, {"a", torch::zeros({3, 4, 5})}}, {3, 4});
  const std::string expected =
      "TensorDict(\n"
      "    fields={\n"
      "        a: Tensor(shape=torch.Size([3, 4, 5]), device=cpu, dtype=torch.float32, is_shared=False),\n"
      "        b: Tensor(shape=torch.Size([3, 4]), device=cpu, dtype=torch.float32, is_shared=False)},\n"
      "    batch_size=torch.Size([3, 4]),\n"
      "    device=None,\n"
      "    is_shared=False)";
  EXPECT_EQ(td.to_string(), expected);
}

TEST(PrintingTest, StreamOperatorPrintsToString) {
  auto td = TensorDict({{"x", torch::zeros({2}, torch::kLong)}}, {2});
  EXPECT_EQ(printed(td), td.to_string());
}

TEST(PrintingTest, DtypesUsePythonNames) {
  auto td = TensorDict({{"d", torch::zeros({2}, torch::kDouble)},
                        {"done", torch::zeros({2}, torch::kBool)},
                        {"i", torch::zeros({2}, torch::kLong)},
                        {"u", torch::zeros({2}, torch::kUInt8)}},
                       {2});
  const std::string expected =
      "TensorDict(\n"
      "    fields={\n"
      "        d: Tensor(shape=torch.Size([2]), device=cpu, dtype=torch.float64, is_shared=False),\n"
      "        done: Tensor(shape=torch.Size([2]), device=cpu, dtype=torch.bool, is_shared=False),\n"
      "        i: Tensor(shape=torch.Size([2]), device=cpu, dtype=torch.int64, is_shared=False),\n"
      "        u: Tensor(shape=torch.Size([2]), device=cpu, dtype=torch.uint8, is_shared=False)},\n"
      "    batch_size=torch.Size([2]),\n"
      "    device=None,\n"
      "    is_shared=False)";
  EXPECT_EQ(td.to_string(), expected);
}

TEST(PrintingTest, NestedTensorDictIsIndentedFourSpacesPerLevel) {
  // README, lazy preallocation: a [10, 3] and b.c [10, 2] with batch size [10].
  auto td = TensorDict({{"a", torch::zeros({10, 3})}, {"b", {{"c", torch::zeros({10, 2})}}}}, {10});
  const std::string expected =
      "TensorDict(\n"
      "    fields={\n"
      "        a: Tensor(shape=torch.Size([10, 3]), device=cpu, dtype=torch.float32, is_shared=False),\n"
      "        b: TensorDict(\n"
      "            fields={\n"
      "                c: Tensor(shape=torch.Size([10, 2]), device=cpu, dtype=torch.float32, is_shared=False)},\n"
      "            batch_size=torch.Size([10]),\n"
      "            device=None,\n"
      "            is_shared=False)},\n"
      "    batch_size=torch.Size([10]),\n"
      "    device=None,\n"
      "    is_shared=False)";
  EXPECT_EQ(td.to_string(), expected);
}

TEST(PrintingTest, TwoLevelsOfNestingWithLongerNestedBatch) {
  auto inner = TensorDict({{"z", torch::zeros({2, 3, 1})}}, {2, 3});
  auto td = TensorDict({{"outer", TensorDict({{"inner", inner}}, {2})}}, {2});
  const std::string expected =
      "TensorDict(\n"
      "    fields={\n"
      "        outer: TensorDict(\n"
      "            fields={\n"
      "                inner: TensorDict(\n"
      "                    fields={\n"
      "                        z: Tensor(shape=torch.Size([2, 3, 1]), device=cpu, dtype=torch.float32, is_shared=False)},\n"
      "                    batch_size=torch.Size([2, 3]),\n"
      "                    device=None,\n"
      "                    is_shared=False)},\n"
      "            batch_size=torch.Size([2]),\n"
      "            device=None,\n"
      "            is_shared=False)},\n"
      "    batch_size=torch.Size([2]),\n"
      "    device=None,\n"
      "    is_shared=False)";
  EXPECT_EQ(td.to_string(), expected);
}

TEST(PrintingTest, EmptyTensorDict) {
  const std::string expected =
      "TensorDict(\n"
      "    fields={\n"
      "    },\n"
      "    batch_size=torch.Size([]),\n"
      "    device=None,\n"
      "    is_shared=False)";
  EXPECT_EQ(TensorDict().to_string(), expected);
}

TEST(PrintingTest, TensorDictWithDevice) {
  auto td = TensorDict({{"obs", torch::zeros({4, 3})}}, {4}, torch::Device(torch::kCPU));
  const std::string expected =
      "TensorDict(\n"
      "    fields={\n"
      "        obs: Tensor(shape=torch.Size([4, 3]), device=cpu, dtype=torch.float32, is_shared=False)},\n"
      "    batch_size=torch.Size([4]),\n"
      "    device=cpu,\n"
      "    is_shared=False)";
  EXPECT_EQ(td.to_string(), expected);
}

TEST(PrintingTest, LazyStackShowsExclusiveFieldsAndStackDim) {
  // "b" differs in its last dim between members (-1); "c" exists in member 1 only.
  auto td0 = TensorDict({{"a", torch::zeros({3})}, {"b", torch::zeros({3, 4})}}, {3});
  auto td1 = TensorDict({{"a", torch::zeros({3})},
                         {"b", torch::zeros({3, 5})},
                         {"c", torch::zeros({3}, torch::kLong)}},
                        {3});
  auto s = stack({td0, td1}, 0);
  const std::string expected =
      "LazyStackedTensorDict(\n"
      "    fields={\n"
      "        a: Tensor(shape=torch.Size([2, 3]), device=cpu, dtype=torch.float32, is_shared=False),\n"
      "        b: Tensor(shape=torch.Size([2, 3, -1]), device=cpu, dtype=torch.float32, is_shared=False)},\n"
      "    exclusive_fields={\n"
      "        1 ->\n"
      "            c: Tensor(shape=torch.Size([3]), device=cpu, dtype=torch.int64, is_shared=False)},\n"
      "    batch_size=torch.Size([2, 3]),\n"
      "    device=None,\n"
      "    is_shared=False,\n"
      "    stack_dim=0)";
  EXPECT_EQ(s.to_string(), expected);
}

TEST(PrintingTest, LazyStackWithoutExclusiveFieldsAlongDimOne) {
  auto td = TensorDict({{"x", torch::zeros({3, 2})}}, {3});
  auto s = stack({td, td.clone()}, 1);
  const std::string expected =
      "LazyStackedTensorDict(\n"
      "    fields={\n"
      "        x: Tensor(shape=torch.Size([3, 2, 2]), device=cpu, dtype=torch.float32, is_shared=False)},\n"
      "    exclusive_fields={\n"
      "    },\n"
      "    batch_size=torch.Size([3, 2]),\n"
      "    device=None,\n"
      "    is_shared=False,\n"
      "    stack_dim=1)";
  EXPECT_EQ(s.to_string(), expected);
}

TEST(PrintingTest, LazyStackPrintsNestedTensorDictsAsLazyStacks) {
  auto td0 = TensorDict({{"n", {{"x", torch::zeros({2, 1})}}}}, {2});
  auto td1 = TensorDict({{"n", {{"x", torch::zeros({2, 1})}}}}, {2});
  auto s = stack({td0, td1}, 0);
  const std::string expected =
      "LazyStackedTensorDict(\n"
      "    fields={\n"
      "        n: LazyStackedTensorDict(\n"
      "            fields={\n"
      "                x: Tensor(shape=torch.Size([2, 2, 1]), device=cpu, dtype=torch.float32, is_shared=False)},\n"
      "            exclusive_fields={\n"
      "            },\n"
      "            batch_size=torch.Size([2, 2]),\n"
      "            device=None,\n"
      "            is_shared=False,\n"
      "            stack_dim=0)},\n"
      "    exclusive_fields={\n"
      "    },\n"
      "    batch_size=torch.Size([2, 2]),\n"
      "    device=None,\n"
      "    is_shared=False,\n"
      "    stack_dim=0)";
  EXPECT_EQ(s.to_string(), expected);
}

TEST(PrintingTest, NonTensorData) {
  // README: data["non-tensor"] = "a string!" next to a tensor of batch [1, 2].
  auto data = TensorDict({{"a-tensor", torch::zeros({1, 2})}}, {1, 2});
  data.set("non-tensor", "a string!");
  const std::string expected =
      "TensorDict(\n"
      "    fields={\n"
      "        a-tensor: Tensor(shape=torch.Size([1, 2]), device=cpu, dtype=torch.float32, is_shared=False),\n"
      "        non-tensor: NonTensorData(data=a string!, batch_size=torch.Size([1, 2]), device=None)},\n"
      "    batch_size=torch.Size([1, 2]),\n"
      "    device=None,\n"
      "    is_shared=False)";
  EXPECT_EQ(data.to_string(), expected);
}

TEST(PrintingTest, NonTensorNumbers) {
  auto td = TensorDict::empty({});
  td.set_non_tensor("n", 3);
  td.set_non_tensor("gamma", 0.5);
  const std::string expected =
      "TensorDict(\n"
      "    fields={\n"
      "        gamma: NonTensorData(data=0.5, batch_size=torch.Size([]), device=None),\n"
      "        n: NonTensorData(data=3, batch_size=torch.Size([]), device=None)},\n"
      "    batch_size=torch.Size([]),\n"
      "    device=None,\n"
      "    is_shared=False)";
  EXPECT_EQ(td.to_string(), expected);
}

TEST(PrintingTest, IndexedTensorDictPrintsIndexedShapes) {
  // tutorial: tensordict[0] has batch [4] and a [4, 5].
  auto td = TensorDict({{"a", torch::zeros({3, 4, 5})}, {"b", torch::zeros({3, 4})}}, {3, 4});
  const std::string expected =
      "TensorDict(\n"
      "    fields={\n"
      "        a: Tensor(shape=torch.Size([4, 5]), device=cpu, dtype=torch.float32, is_shared=False),\n"
      "        b: Tensor(shape=torch.Size([4]), device=cpu, dtype=torch.float32, is_shared=False)},\n"
      "    batch_size=torch.Size([4]),\n"
      "    device=None,\n"
      "    is_shared=False)";
  EXPECT_EQ(td.index({0}).to_string(), expected);
}

// clang-format on

}  // namespace
}  // namespace tensordict
