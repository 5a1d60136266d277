// SumSegmentTree / MinSegmentTree and PrioritizedSampler.

#include <cmath>
#include <limits>
#include <set>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "replay/replay_test_util.h"

namespace tdrl::replay {
namespace {

using namespace tdrl::replay::testing;

// ---- Segment trees ------------------------------------------------------------------------------

TEST(SegmentTreeTest, SumAndMinOverRanges) {
  SumSegmentTree sums(6);
  MinSegmentTree mins(6);
  const auto values = torch::tensor({3.0, 1.0, 4.0, 1.5, 5.0, 9.0}, torch::kDouble);
  sums.set(torch::arange(6), values);
  mins.set(torch::arange(6), values);
  EXPECT_DOUBLE_EQ(sums.sum(), 23.5);
  EXPECT_DOUBLE_EQ(sums.sum(1, 4), 6.5);
  EXPECT_DOUBLE_EQ(mins.min(), 1.0);
  EXPECT_DOUBLE_EQ(mins.min(2, 6), 1.5);
  EXPECT_DOUBLE_EQ(mins.min(4, 5), 5.0);
  EXPECT_TRUE(sums.values().equal(values));
}

TEST(SegmentTreeTest, LeavesStartAtTheIdentity) {
  SumSegmentTree sums(5);
  MinSegmentTree mins(5);
  EXPECT_EQ(sums.sum(), 0.0);
  EXPECT_EQ(mins.min(), std::numeric_limits<double>::infinity());
}

TEST(SegmentTreeTest, BatchSetMatchesOneByOneSetsAndKeepsTheLastValueOfARepeatedIndex) {
  torch::manual_seed(1);
  SumSegmentTree batched(1000);
  SumSegmentTree single(1000);
  MinSegmentTree batched_min(1000);
  MinSegmentTree single_min(1000);
  for (int round = 0; round < 20; ++round) {
    auto index = torch::randint(1000, {257}, torch::kLong);
    auto value = torch::rand({257}, torch::kDouble);
    batched.set(index, value);
    batched_min.set(index, value);
    for (int64_t i = 0; i < 257; ++i) {
      single.set(index[i].item<int64_t>(), value[i].item<double>());
      single_min.set(index[i].item<int64_t>(), value[i].item<double>());
    }
  }
  EXPECT_TRUE(batched.values().equal(single.values()));
  EXPECT_NEAR(batched.sum(), single.sum(), 1e-9);
  EXPECT_NEAR(batched.sum(), batched.values().sum().item<double>(), 1e-9);
  EXPECT_EQ(batched_min.min(), single_min.min());
  for (int64_t begin : {0, 17, 500}) {
    EXPECT_NEAR(batched.sum(begin, begin + 300),
                batched.values().narrow(0, begin, 300).sum().item<double>(), 1e-9);
    EXPECT_EQ(batched_min.min(begin, begin + 300),
              batched_min.values().narrow(0, begin, 300).min().item<double>());
  }
  SumSegmentTree repeated(4);
  repeated.set(torch::tensor({2, 2, 2}), torch::tensor({1.0, 5.0, 7.0}, torch::kDouble));
  EXPECT_EQ(repeated.at(2), 7.0);
  EXPECT_EQ(repeated.sum(), 7.0);
}

TEST(SegmentTreeTest, PrefixSumSearchFindsTheLeafHoldingTheMass) {
  SumSegmentTree tree(5);
  tree.set(torch::arange(5), torch::tensor({1.0, 2.0, 0.0, 3.0, 4.0}, torch::kDouble));
  EXPECT_EQ(tree.find_prefix_sum_index(0.0), 0);
  EXPECT_EQ(tree.find_prefix_sum_index(0.999), 0);
  EXPECT_EQ(tree.find_prefix_sum_index(1.0), 1);
  EXPECT_EQ(tree.find_prefix_sum_index(2.999), 1);
  EXPECT_EQ(tree.find_prefix_sum_index(3.0), 3);  // leaf 2 holds nothing
  EXPECT_EQ(tree.find_prefix_sum_index(9.5), 4);
  // A mass at or past the total (rounding) lands on the last positive leaf, never past it.
  EXPECT_EQ(tree.find_prefix_sum_index(10.0), 4);
  EXPECT_EQ(tree.find_prefix_sum_index(1e9), 4);
  EXPECT_EQ(values_of(tree.find_prefix_sum_index(torch::tensor({0.5, 2.5, 5.9}, torch::kDouble))),
            (std::vector<int64_t>{0, 1, 3}));
}

TEST(SegmentTreeTest, AssignRebuildsFromLeaves) {
  MinSegmentTree tree(3);
  tree.assign(torch::tensor({2.0, 0.5, 7.0}, torch::kDouble));
  EXPECT_EQ(tree.min(), 0.5);
  EXPECT_EQ(tree.min(2, 3), 7.0);
  tree.clear();
  EXPECT_EQ(tree.min(), std::numeric_limits<double>::infinity());
}

TEST(SegmentTreeTest, RejectsIndicesOutOfRangeAndBadRanges) {
  SumSegmentTree tree(4);
  EXPECT_THAT(
      [&] { tree.set(4, 1.0); },
      ThrowsMessage<IndexError>(HasSubstr("SumSegmentTree::set: index 4 is out of range [0, 4)")));
  EXPECT_THAT(
      [&] {
        tree.set(torch::tensor({0, -1}), torch::tensor({1.0, 2.0}, torch::kDouble));
      },
      ThrowsMessage<IndexError>(HasSubstr("index -1")));
  EXPECT_EQ(tree.sum(), 0.0);  // nothing written by the failed batch
  EXPECT_THAT(
      [&] {
        tree.set(torch::tensor({0, 1}), torch::tensor({1.0, 2.0, 3.0}, torch::kDouble));
      },
      ThrowsMessage<ShapeError>(HasSubstr("value has 3 entries but index has 2")));
  EXPECT_THAT([&] { tree.sum(3, 3); }, ThrowsMessage<ValueError>(HasSubstr("range [3, 3)")));
  EXPECT_THAT([] { MinSegmentTree(0); },
              ThrowsMessage<ValueError>(HasSubstr("MinSegmentTree: capacity must be at least 1")));
}

// ---- PrioritizedSampler -------------------------------------------------------------------------

std::shared_ptr<LazyTensorStorage> filled(int64_t n) {
  auto storage = std::make_shared<LazyTensorStorage>(n);
  storage->set(torch::arange(n), transitions(n));
  return storage;
}

TEST(PrioritizedSamplerTest, SamplingFrequenciesFollowPrioritiesToTheAlpha) {
  torch::manual_seed(2024);
  auto storage = filled(8);
  PrioritizedSampler sampler(8, PrioritizedSamplerOptions(0.7, 0.4).eps(0));
  sampler.extend(torch::arange(8));
  const auto priority = torch::tensor({1.0, 2.0, 4.0, 8.0, 0.5, 3.0, 6.0, 10.0}, torch::kDouble);
  sampler.update_priority(torch::arange(8), priority, storage->size());
  auto counts = torch::zeros({8}, torch::kLong);
  const int64_t draws = 200000;
  for (int64_t i = 0; i < draws / 1000; ++i)
    counts.index_add_(0, sampler.sample(*storage, 1000).index, torch::ones({1000}, torch::kLong));
  const auto p = priority.pow(0.7);
  const auto expected = p / p.sum() * draws;
  // 7 degrees of freedom: 24.3 is the 0.999 quantile.
  EXPECT_LT(chi_square(counts, expected), 24.3);
  const auto relative = (counts.to(torch::kDouble) - expected).abs() / expected;
  EXPECT_LT(relative.max().item<double>(), 0.03);
}

TEST(PrioritizedSamplerTest, ImportanceWeightsMatchAHandWorkedCase) {
  // alpha 1, beta 0.5, eps 0: p = priorities = [1, 2, 4, 8], p_min = 1, so
  // weight_i = (p_i / p_min)^-0.5 = [1, 1/sqrt(2), 1/2, 1/sqrt(8)] (= (N P(i))^-beta / max).
  torch::manual_seed(4);
  auto storage = filled(4);
  PrioritizedSampler sampler(4, PrioritizedSamplerOptions(1.0, 0.5).eps(0));
  sampler.extend(torch::arange(4));
  sampler.update_priority(torch::arange(4), torch::tensor({1.0, 2.0, 4.0, 8.0}, torch::kDouble), 4);
  const float expected[] = {1.0f, 1.0f / std::sqrt(2.0f), 0.5f, 1.0f / std::sqrt(8.0f)};
  auto info = sampler.sample(*storage, 64);
  ASSERT_TRUE(info.weight.defined());
  EXPECT_EQ(info.weight.scalar_type(), torch::kFloat);
  for (int64_t i = 0; i < 64; ++i)
    EXPECT_FLOAT_EQ(info.weight[i].item<float>(), expected[info.index[i].item<int64_t>()]);
  const auto drawn = values_of(info.index);
  EXPECT_EQ(std::set<int64_t>(drawn.begin(), drawn.end()), (std::set<int64_t>{0, 1, 2, 3}));
}

TEST(PrioritizedSamplerTest, NewElementsGetTheLargestPrioritySeen) {
  PrioritizedSampler sampler(6, PrioritizedSamplerOptions(1.0, 1.0).eps(0));
  sampler.extend(torch::arange(2));
  EXPECT_TRUE(sampler.priorities(2).equal(torch::tensor({1.0, 1.0}, torch::kDouble)));
  sampler.update_priority(torch::tensor({0}), torch::tensor({5.0}, torch::kDouble), 2);
  sampler.extend(torch::tensor({2, 3}));
  EXPECT_TRUE(sampler.priorities(4).equal(torch::tensor({5.0, 1.0, 5.0, 5.0}, torch::kDouble)));
  EXPECT_EQ(sampler.max_priority(), 5.0);
}

TEST(PrioritizedSamplerTest, AddsEpsAndRaisesToAlpha) {
  PrioritizedSampler sampler(2, PrioritizedSamplerOptions(0.5, 1.0).eps(0.25));
  sampler.extend(torch::arange(2));
  sampler.update_priority(torch::arange(2), torch::tensor({0.0, 3.75}, torch::kDouble), 2);
  EXPECT_TRUE(sampler.priorities(2).allclose(torch::tensor({0.5, 2.0}, torch::kDouble)));
  EXPECT_DOUBLE_EQ(sampler.sum_tree().sum(), 2.5);
  EXPECT_DOUBLE_EQ(sampler.min_tree().min(), 0.5);
}

TEST(PrioritizedSamplerTest, ZeroPrioritiesAreNeverDrawnAndDoNotSetTheWeightScale) {
  torch::manual_seed(12);
  auto storage = filled(3);
  PrioritizedSampler sampler(3, PrioritizedSamplerOptions(1.0, 1.0).eps(0));
  sampler.extend(torch::arange(3));
  sampler.update_priority(torch::arange(3), torch::tensor({0.0, 2.0, 4.0}, torch::kDouble), 3);
  auto info = sampler.sample(*storage, 500);
  EXPECT_FALSE(info.index.eq(0).any().item<bool>());
  EXPECT_FLOAT_EQ(info.weight.max().item<float>(), 1.0f);
}

TEST(PrioritizedSamplerTest, RejectsNegativeAndNonFinitePrioritiesAndChangesNothing) {
  PrioritizedSampler sampler(4, PrioritizedSamplerOptions(1.0, 1.0).eps(0));
  sampler.extend(torch::arange(4));
  const auto before = sampler.priorities(4);
  EXPECT_THAT(
      [&] {
        sampler.update_priority(torch::arange(3), torch::tensor({1.0, -0.5, 2.0}, torch::kDouble),
                                4);
      },
      ThrowsMessage<ValueError>(
          AllOf(HasSubstr("priority -0.5 at position 1 (index 1)"), HasSubstr("negative"))));
  EXPECT_THAT(
      [&] {
        sampler.update_priority(
            torch::arange(2),
            torch::tensor({std::numeric_limits<double>::quiet_NaN(), 1.0}, torch::kDouble), 4);
      },
      ThrowsMessage<ValueError>(HasSubstr("not finite")));
  EXPECT_THAT(
      [&] {
        sampler.update_priority(torch::tensor({0}),
                                torch::tensor({std::numeric_limits<double>::infinity()}), 4);
      },
      ThrowsMessage<ValueError>(HasSubstr("priority inf")));
  EXPECT_TRUE(sampler.priorities(4).equal(before));
}

TEST(PrioritizedSamplerTest, RejectsIndicesPastTheStorageAndMismatchedCounts) {
  PrioritizedSampler sampler(8, PrioritizedSamplerOptions(1.0, 1.0));
  sampler.extend(torch::arange(4));
  const auto before = sampler.priorities(8);
  EXPECT_THAT(
      [&] {
        sampler.update_priority(torch::tensor({1, 4}), torch::tensor({1.0, 1.0}, torch::kDouble),
                                4);
      },
      ThrowsMessage<IndexError>(AllOf(HasSubstr("index 4 (position 1)"), HasSubstr("[0, 4)"))));
  EXPECT_THAT(
      [&] {
        sampler.update_priority(torch::arange(3), torch::ones({2, 2}), 4);
      },
      ThrowsMessage<ShapeError>(AllOf(HasSubstr("priority has shape [2, 2] (4 values)"),
                                      HasSubstr("index has 3 entries"))));
  EXPECT_THAT([&] { sampler.extend(torch::tensor({8})); },
              ThrowsMessage<IndexError>(HasSubstr("capacity 8")));
  EXPECT_TRUE(sampler.priorities(8).equal(before));
}

TEST(PrioritizedSamplerTest, AcceptsPrioritiesShapedLikeATdErrorColumnOrOneValue) {
  PrioritizedSampler sampler(4, PrioritizedSamplerOptions(1.0, 1.0).eps(0));
  sampler.extend(torch::arange(4));
  sampler.update_priority(torch::arange(2), torch::tensor({{3.0}, {4.0}}), 4);
  sampler.update_priority(torch::tensor({2, 3}), torch::tensor(6.0), 4);
  EXPECT_TRUE(sampler.priorities(4).equal(torch::tensor({3.0, 4.0, 6.0, 6.0}, torch::kDouble)));
}

TEST(PrioritizedSamplerTest, AllZeroPrioritiesCannotBeSampled) {
  auto storage = filled(2);
  PrioritizedSampler sampler(2, PrioritizedSamplerOptions(1.0, 1.0).eps(0));
  sampler.extend(torch::arange(2));
  sampler.update_priority(torch::arange(2), torch::zeros({2}), 2);
  EXPECT_THAT([&] { sampler.sample(*storage, 4); },
              ThrowsMessage<ValueError>(HasSubstr("every stored priority is 0")));
}

TEST(PrioritizedSamplerTest, RejectsAStorageLargerThanItsCapacity) {
  auto storage = filled(8);
  PrioritizedSampler sampler(4, PrioritizedSamplerOptions(1.0, 1.0));
  sampler.extend(torch::arange(4));
  EXPECT_THAT([&] { sampler.sample(*storage, 2); },
              ThrowsMessage<ValueError>(
                  AllOf(HasSubstr("holds 8 elements"), HasSubstr("max_capacity is 4"))));
}

TEST(PrioritizedSamplerTest, RejectsOptionsOutOfRange) {
  EXPECT_THAT([] { PrioritizedSampler(4, PrioritizedSamplerOptions(-1.0, 0.5)); },
              ThrowsMessage<ValueError>(HasSubstr("alpha must be finite and >= 0, got -1")));
  EXPECT_THAT([] { PrioritizedSampler(0, PrioritizedSamplerOptions(1.0, 0.5)); },
              ThrowsMessage<ValueError>(HasSubstr("max_capacity must be at least 1")));
  PrioritizedSampler sampler(4, PrioritizedSamplerOptions(1.0, 0.5));
  EXPECT_THROW(sampler.set_beta(-0.1), ValueError);
  sampler.set_beta(1.0);
  EXPECT_EQ(sampler.options().beta(), 1.0);
}

TEST(PrioritizedSamplerTest, ClearForgetsPriorities) {
  PrioritizedSampler sampler(4, PrioritizedSamplerOptions(1.0, 1.0).eps(0));
  sampler.extend(torch::arange(4));
  sampler.update_priority(torch::arange(4), torch::full({4}, 9.0), 4);
  sampler.clear();
  EXPECT_EQ(sampler.sum_tree().sum(), 0.0);
  EXPECT_EQ(sampler.max_priority(), 1.0);
}

TEST(PrioritizedSamplerTest, PrintsItsOptions) {
  EXPECT_EQ(printed(PrioritizedSampler(1000, PrioritizedSamplerOptions(0.6, 0.4))),
            "PrioritizedSampler(max_capacity=1000, alpha=0.6, beta=0.4, eps=1e-08)");
}

}  // namespace
}  // namespace tdrl::replay
