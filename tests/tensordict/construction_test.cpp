// Construction of TensorDicts, batch sizes and devices (tutorial "Batch size", README
// "General" and the overview's nested example).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tensordict/tensordict.h>

#include <torch/cuda.h>

#include "support/tensordict_fixtures.h"

namespace {

using namespace tensordict::testing;

TEST(TensorDictConstructionTest, DefaultConstructedIsEmptyWithEmptyBatchSizeAndNoDevice) {
  TensorDict td;
  EXPECT_TRUE(td.keys().empty());
  EXPECT_EQ(td.batch_size(), BatchSize{});
  EXPECT_FALSE(td.device().has_value());
  EXPECT_TRUE(td.is_empty());
}

TEST(TensorDictConstructionTest, BuildsFromKeyValuePairsWithTwoDimBatchSize) {
  // Tutorial: TensorDict({"a": zeros(3, 4, 5), "b": zeros(3, 4)}, batch_size=[3, 4]).
  TensorDict td({{"a", torch::zeros({3, 4, 5})}, {"b", torch::zeros({3, 4})}}, {3, 4});
  EXPECT_EQ(td.batch_size(), (BatchSize{3, 4}));
  EXPECT_EQ(td.shape(), (BatchSize{3, 4}));
  EXPECT_EQ(td.get("a").sizes(), (std::vector<int64_t>{3, 4, 5}));
  // The tensor is stored as given (the old tutorial's trailing unsqueeze is gone).
  EXPECT_EQ(td.get("b").sizes(), (std::vector<int64_t>{3, 4}));
}

TEST(TensorDictConstructionTest, StoresConstructorTensorsWithoutCopying) {
  auto a = torch::zeros({3, 4, 5});
  TensorDict td({{"a", a}}, {3, 4});
  EXPECT_TRUE(td.get("a").is_same(a));
}

TEST(TensorDictConstructionTest, EmptyBatchSizeAcceptsLeavesOfAnyShape) {
  // Tutorial's DictDataset item: two modalities of shape [2] and batch_size [].
  torch::manual_seed(0);
  TensorDict td({{"modality_A", torch::randn({2})},
                 {"modality_B", torch::randn({2, 7})},
                 {"scalar", torch::tensor(3.0)}});
  EXPECT_EQ(td.batch_size(), BatchSize{});
  EXPECT_EQ(td.get("modality_B").sizes(), (std::vector<int64_t>{2, 7}));
  EXPECT_EQ(td.get("scalar").dim(), 0);
}

TEST(TensorDictConstructionTest, BuildsFeaturesExampleWithTwoByThreeBatch) {
  // Overview: {"zeros": zeros(2, 3, 4), "ones": ones(2, 3, 4, 5)}, batch_size=[2, 3].
  TensorDict td({{"zeros", torch::zeros({2, 3, 4})}, {"ones", torch::ones({2, 3, 4, 5})}}, {2, 3});
  EXPECT_TRUE(td.get("zeros").eq(0).all().item<bool>());
  EXPECT_TRUE(td.get("ones").eq(1).all().item<bool>());
  EXPECT_EQ(td.get("ones").sizes(), (std::vector<int64_t>{2, 3, 4, 5}));
}

TEST(TensorDictConstructionTest, BracedListBecomesNestedTensorDictWithParentBatchSize) {
  // Overview: {"inputs": {"image", "mask"}, "outputs": {"logits"}} with batch_size [100].
  torch::manual_seed(0);
  TensorDict td({{"inputs",
                  {{"image", torch::rand({100, 28, 28})},
                   {"mask", torch::randint(2, {100, 28, 28}, torch::kUInt8)}}},
                 {"outputs", {{"logits", torch::randn({100, 10})}}}},
                {100});
  TensorDict inputs = td.get_tensordict("inputs");
  EXPECT_EQ(inputs.batch_size(), BatchSize{100});
  EXPECT_EQ(td.get_tensordict("outputs").batch_size(), BatchSize{100});
  EXPECT_EQ(td.get({"inputs", "image"}).sizes(), (std::vector<int64_t>{100, 28, 28}));
  EXPECT_EQ(td.get({"inputs", "mask"}).scalar_type(), torch::kUInt8);
  EXPECT_EQ(td.get({"outputs", "logits"}).sizes(), (std::vector<int64_t>{100, 10}));
}

TEST(TensorDictConstructionTest, DeeplyNestedBracedListsNestEveryLevel) {
  TensorDict td({{"a", {{"b", {{"c", torch::ones({3, 1})}}}}}}, {3});
  EXPECT_EQ(td.get_tensordict({"a", "b"}).batch_size(), BatchSize{3});
  EXPECT_TRUE(td.get({"a", "b", "c"}).eq(1).all().item<bool>());
}

TEST(TensorDictConstructionTest, NestedKeyInConstructorCreatesIntermediateTensorDict) {
  // README: TensorDict({"a": zeros(()), ("b", "c"): ones(())}, []).
  TensorDict td({{"a", torch::zeros({})}, {{"b", "c"}, torch::ones({})}});
  ASSERT_TRUE(td.contains("b"));
  EXPECT_EQ(td.get_tensordict("b").batch_size(), BatchSize{});
  EXPECT_EQ(td.get({"b", "c"}).item<float>(), 1.0f);
  EXPECT_EQ(td.get("a").item<float>(), 0.0f);
}

TEST(TensorDictConstructionTest, TensorDictValueKeepsItsOwnLongerBatchSize) {
  // README: "key 2" is a TensorDict of batch [3, 4, 5] inside a [3, 4] TensorDict.
  torch::manual_seed(0);
  TensorDict inner({{"sub-key", torch::randn({3, 4, 5, 6})}}, {3, 4, 5});
  TensorDict td({{"key 1", torch::ones({3, 4, 5})}, {"key 2", inner}}, {3, 4});
  EXPECT_EQ(td.get_tensordict("key 2").batch_size(), (BatchSize{3, 4, 5}));
  EXPECT_TRUE(td.get_tensordict("key 2").is_same(inner));
  EXPECT_TRUE(td.get({"key 2", "sub-key"}).is_same(inner.get("sub-key")));
}

TEST(TensorDictConstructionTest, StringValueBecomesUniformNonTensorData) {
  TensorDict td({{"obs", torch::zeros({2, 3})}, {"name", "cartpole"}}, {2});
  auto nt = td.get_non_tensor("name");
  EXPECT_TRUE(nt.is_uniform());
  EXPECT_EQ(nt.batch_size(), BatchSize{2});
  EXPECT_EQ(td.get_non_tensor<std::string>("name"), "cartpole");
}

TEST(TensorDictConstructionTest, BuildsFromItemsOfAnotherTensorDict) {
  TensorDict src({{"a", torch::ones({4, 2})}, {"n", {{"b", torch::zeros({4})}}}}, {4});
  TensorDict copy(src.items(), src.batch_size());
  EXPECT_EQ(copy.keys(true), src.keys(true));
  EXPECT_TRUE(copy.get("a").is_same(src.get("a")));
  EXPECT_FALSE(copy.is_same(src));
}

TEST(TensorDictConstructionTest, ItemListWithNestedPathsCreatesIntermediates) {
  std::vector<std::pair<tensordict::NestedKey, tensordict::Value>> items = {
      {{"next", "reward"}, torch::ones({5, 1})}, {"action", torch::zeros({5, 2})}};
  TensorDict td(items, {5});
  EXPECT_EQ(td.get_tensordict("next").batch_size(), BatchSize{5});
  EXPECT_EQ(td.get({"next", "reward"}).sizes(), (std::vector<int64_t>{5, 1}));
}

TEST(TensorDictConstructionTest, RejectsLeafWhoseLeadingDimsDifferFromBatchSize) {
  EXPECT_THROW(TensorDict({{"a", torch::zeros({3, 4, 5})}, {"b", torch::zeros({4, 3})}}, {3, 4}),
               ShapeError);
}

TEST(TensorDictConstructionTest, RejectsNestedTensorDictWhoseBatchSizeDoesNotStartWithParent) {
  TensorDict inner({{"x", torch::zeros({4})}}, {4});
  EXPECT_THROW(TensorDict({{"inner", inner}}, {3}), ShapeError);
}

TEST(TensorDictConstructionTest, DeviceOptionIsRecordedAndInheritedByNestedLists) {
  TensorDict td({{"a", torch::zeros({2})}, {"n", {{"b", torch::zeros({2})}}}}, {2},
                torch::Device(torch::kCPU));
  ASSERT_TRUE(td.device().has_value());
  EXPECT_EQ(*td.device(), torch::Device(torch::kCPU));
  ASSERT_TRUE(td.get_tensordict("n").device().has_value());
  EXPECT_EQ(*td.get_tensordict("n").device(), torch::Device(torch::kCPU));
}

TEST(TensorDictConstructionTest, DeviceOptionMovesConstructorTensorsAndLaterWrites) {
  // README's device example, with the meta device standing in for a GPU.
  const torch::Device meta(torch::kMeta);
  TensorDict td({{"key 1", torch::ones({3, 4, 5})}}, {3, 4}, meta);
  EXPECT_EQ(td.get("key 1").device(), meta);
  td.set("key 3", torch::randn({3, 4}));
  EXPECT_EQ(td.get("key 3").device(), meta);
  td.set({"nested", "key"}, torch::zeros({3, 4}));
  EXPECT_EQ(td.get({"nested", "key"}).device(), meta);
}

TEST(TensorDictConstructionTest, DeviceOptionMovesNestedTensorDictValues) {
  const torch::Device meta(torch::kMeta);
  TensorDict td = TensorDict::empty({2}, meta);
  td.set("n", TensorDict({{"x", torch::zeros({2, 3})}}, {2}));
  EXPECT_EQ(td.get({"n", "x"}).device(), meta);
  EXPECT_EQ(td.get_tensordict("n").device(), meta);
}

TEST(TensorDictConstructionTest, ClearDeviceDropsTheRequirementOnEveryLevel) {
  TensorDict td({{"a", torch::zeros({2})}, {"n", {{"b", torch::zeros({2})}}}}, {2},
                torch::Device(torch::kCPU));
  td.clear_device_();
  EXPECT_FALSE(td.device().has_value());
  EXPECT_FALSE(td.get_tensordict("n").device().has_value());
  EXPECT_EQ(td.get("a").device(), torch::Device(torch::kCPU));
}

TEST(TensorDictConstructionTest, DeviceOptionMovesWritesToTheGpu_CUDA) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const torch::Device gpu(torch::kCUDA, 0);
  TensorDict td(
      {{"key 1", torch::ones({3, 4, 5})}, {"key 2", torch::zeros({3, 4, 5}, torch::kBool)}}, {3, 4},
      gpu);
  td.set("key 3", torch::randn({3, 4}, torch::Device(torch::kCPU)));
  EXPECT_EQ(td.get("key 3").device(), gpu);
}

TEST(TensorDictConstructionTest, WithoutDeviceTensorsStayWhereTheyAre) {
  TensorDict td({{"a", torch::zeros({2})}}, {2});
  EXPECT_FALSE(td.device().has_value());
  EXPECT_EQ(td.get("a").device(), torch::Device(torch::kCPU));
}

TEST(TensorDictConstructionTest, EmptyHasTheRequestedBatchSizeAndNoKeys) {
  TensorDict td = TensorDict::empty({10});
  EXPECT_EQ(td.batch_size(), BatchSize{10});
  EXPECT_TRUE(td.keys().empty());
  EXPECT_TRUE(td.is_empty());
  EXPECT_FALSE(td.device().has_value());
}

TEST(TensorDictConstructionTest, EmptyWithDeviceRecordsIt) {
  TensorDict td = TensorDict::empty({2, 3}, torch::Device(torch::kCPU));
  ASSERT_TRUE(td.device().has_value());
  EXPECT_EQ(td.device()->type(), torch::kCPU);
}

TEST(TensorDictConstructionTest, EmptyRejectsNegativeBatchDims) {
  EXPECT_THROW(TensorDict::empty({3, -1}), ShapeError);
}

TEST(TensorDictConstructionTest, EmptyTensorDictAcceptsWritesOfItsBatchSize) {
  TensorDict td = TensorDict::empty({10});
  td.set("a", torch::zeros({10, 3}));
  EXPECT_EQ(td.keys().size(), 1u);
  EXPECT_THROW(td.set("b", torch::zeros({9, 3})), ShapeError);
}

// ---- numel / ndim / batch_dims ----------------------------------------------------------------

TEST(TensorDictConstructionTest, NumelIsTheProductOfBatchDims) {
  TensorDict td({{"a", torch::zeros({3, 4, 5})}}, {3, 4});
  EXPECT_EQ(td.numel(), 12);
  EXPECT_EQ(td.ndim(), 2);
  EXPECT_EQ(td.batch_dims(), 2);
}

TEST(TensorDictConstructionTest, EmptyBatchSizeHasOneElementAndNoDims) {
  TensorDict td({{"a", torch::zeros({3})}});
  EXPECT_EQ(td.numel(), 1);
  EXPECT_EQ(td.ndim(), 0);
  EXPECT_EQ(td.batch_dims(), 0);
}

TEST(TensorDictConstructionTest, ZeroSizedBatchDimHasNoElements) {
  TensorDict td({{"a", torch::zeros({0, 4})}}, {0, 4});
  EXPECT_EQ(td.numel(), 0);
  EXPECT_EQ(td.batch_dims(), 2);
}

// ---- set_batch_size ---------------------------------------------------------------------------

TEST(TensorDictConstructionTest, SetBatchSizeShrinksToAPrefix) {
  TensorDict td({{"a", torch::zeros({3, 4, 5})}, {"b", torch::zeros({3, 4})}}, {3, 4});
  td.set_batch_size({3});
  EXPECT_EQ(td.batch_size(), BatchSize{3});
  td.set_batch_size({});
  EXPECT_EQ(td.batch_size(), BatchSize{});
}

TEST(TensorDictConstructionTest, SetBatchSizeExtendsWhenEveryLeafAllows) {
  TensorDict td({{"a", torch::zeros({3, 4, 5})}, {"b", torch::zeros({3, 4})}}, {3});
  td.set_batch_size({3, 4});
  EXPECT_EQ(td.batch_size(), (BatchSize{3, 4}));
  EXPECT_EQ(td.numel(), 12);
}

TEST(TensorDictConstructionTest, SetBatchSizeIsSeenThroughEveryHandle) {
  TensorDict td({{"a", torch::zeros({3, 4})}}, {3, 4});
  TensorDict alias = td;
  alias.set_batch_size({3});
  EXPECT_EQ(td.batch_size(), BatchSize{3});
}

TEST(TensorDictConstructionTest, SetBatchSizeRejectsIncompatibleSizeNamingTheLeaf) {
  // Tutorial: "tensordict.batch_size = [4, 4]" fails because a has shape [3, 4, 5].
  TensorDict td({{"a", torch::zeros({3, 4, 5})}, {"b", torch::zeros({3, 4})}}, {3, 4});
  EXPECT_THAT(
      [&] {
        td.set_batch_size({4, 4});
      },
      ThrowsMessage<ShapeError>(
          AllOf(HasSubstr("'a'"), HasSubstr("[3, 4, 5]"), HasSubstr("[4, 4]"))));
  EXPECT_EQ(td.batch_size(), (BatchSize{3, 4}));
}

TEST(TensorDictConstructionTest, SetBatchSizeKeepsLongerNestedBatchSizeThatStillFits) {
  TensorDict td({{"n", TensorDict({{"x", torch::zeros({3, 4, 2})}}, {3, 4})}}, {3, 4});
  td.set_batch_size({3});
  EXPECT_EQ(td.batch_size(), BatchSize{3});
  EXPECT_EQ(td.get_tensordict("n").batch_size(), (BatchSize{3, 4}));
}

TEST(TensorDictConstructionTest, SetBatchSizeRejectsNestedTensorDictThatDoesNotFit) {
  TensorDict td({{"n", TensorDict({{"x", torch::zeros({3, 4})}}, {3, 4})}}, {3});
  EXPECT_THROW(td.set_batch_size({4}), ShapeError);
  EXPECT_EQ(td.batch_size(), BatchSize{3});
}

TEST(TensorDictConstructionTest, SetBatchSizeRestampsUniformNonTensorEntries) {
  TensorDict td({{"a", torch::zeros({3, 4})}, {"s", "text"}}, {3, 4});
  td.set_batch_size({3});
  EXPECT_EQ(td.get_non_tensor("s").batch_size(), BatchSize{3});
  EXPECT_EQ(td.get_non_tensor<std::string>("s"), "text");
}

TEST(TensorDictConstructionTest, SetBatchSizeExtendsOverUniformNonTensorEntries) {
  // A uniform non-tensor value spans the whole batch, whatever its size.
  TensorDict td({{"a", torch::zeros({3, 4})}, {"s", "text"}}, {3});
  td.set_batch_size({3, 4});
  EXPECT_EQ(td.batch_size(), (BatchSize{3, 4}));
  EXPECT_EQ(td.get_non_tensor("s").batch_size(), (BatchSize{3, 4}));
}

// ---- auto_batch_size_ -------------------------------------------------------------------------

TEST(TensorDictConstructionTest, AutoBatchSizeFindsTheLongestSharedLeadingShape) {
  TensorDict td({{"a", torch::zeros({3, 4, 5})}, {"b", torch::zeros({3, 4, 2})}});
  td.auto_batch_size_();
  EXPECT_EQ(td.batch_size(), (BatchSize{3, 4}));
}

TEST(TensorDictConstructionTest, AutoBatchSizeWithOneLeafTakesItsWholeShape) {
  TensorDict td({{"a", torch::zeros({3, 4, 5})}});
  td.auto_batch_size_();
  EXPECT_EQ(td.batch_size(), (BatchSize{3, 4, 5}));
}

TEST(TensorDictConstructionTest, AutoBatchSizeStopsAtTheFirstDifferingDim) {
  TensorDict td(
      {{"a", torch::zeros({3, 4})}, {"b", torch::zeros({3, 5})}, {"c", torch::zeros({3})}});
  td.auto_batch_size_();
  EXPECT_EQ(td.batch_size(), BatchSize{3});
}

TEST(TensorDictConstructionTest, AutoBatchSizeCountsNestedTensorDictsByTheirBatchSize) {
  TensorDict td({{"a", torch::zeros({3, 4, 5})},
                 {"n", TensorDict({{"x", torch::zeros({3, 4, 7})}}, {3, 4})}});
  td.auto_batch_size_();
  EXPECT_EQ(td.batch_size(), (BatchSize{3, 4}));
}

TEST(TensorDictConstructionTest, AutoBatchSizeOfEmptyTensorDictKeepsItsBatchSize) {
  TensorDict td = TensorDict::empty({2});
  td.auto_batch_size_();
  EXPECT_EQ(td.batch_size(), BatchSize{2});
}

TEST(TensorDictConstructionTest, AutoBatchSizeIgnoresUniformNonTensorEntries) {
  TensorDict td({{"a", torch::zeros({3, 4})}, {"s", "text"}});
  td.auto_batch_size_();
  EXPECT_EQ(td.batch_size(), (BatchSize{3, 4}));
}

}  // namespace
