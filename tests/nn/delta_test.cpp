#include <tensordict/nn/delta.h>

#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tensordict/errors.h>

#include "support/tensordict_fixtures.h"

namespace tensordict::nn {
namespace {

using namespace tensordict::testing;

TEST(DeltaTest, SamplesAreTheParamExpanded) {
  const auto param = torch::tensor({{1.0, 2.0}, {3.0, 4.0}});
  Delta dist(param);
  EXPECT_EQ(dist.batch_shape(), c10::IntArrayRef({2}));
  EXPECT_EQ(dist.event_shape(), c10::IntArrayRef({2}));
  const auto s = dist.sample({3});
  EXPECT_EQ(s.sizes(), c10::IntArrayRef({3, 2, 2}));
  EXPECT_TRUE(torch::equal(s[1], param));
  EXPECT_TRUE(torch::equal(dist.mean(), param));
  EXPECT_TRUE(torch::equal(dist.mode(), param));
  EXPECT_TRUE(torch::equal(dist.deterministic_sample(), param));
}

TEST(DeltaTest, LogProbIsZeroAtTheParamAndMinusInfinityElsewhere) {
  Delta dist(torch::tensor({{1.0, 2.0}, {3.0, 4.0}}));
  const auto lp = dist.log_prob(torch::tensor({{1.0, 2.0 + 1e-7}, {3.0, 4.1}}));
  EXPECT_EQ(lp.sizes(), c10::IntArrayRef({2}));
  EXPECT_EQ(lp[0].item<float>(), 0.0f);
  EXPECT_TRUE(lp[1].isneginf().item<bool>());
}

TEST(DeltaTest, AtolWidensTheEqualityTest) {
  Delta dist(torch::tensor({1.0}), DeltaOptions().atol(0.2));
  EXPECT_EQ(dist.log_prob(torch::tensor({1.1})).item<float>(), 0.0f);
}

TEST(DeltaTest, RsampleKeepsTheParamGradient) {
  const auto param = torch::tensor({1.0, 2.0}, torch::requires_grad());
  Delta dist(param);
  dist.rsample({3}).sum().backward();
  EXPECT_TRUE(torch::equal(param.grad(), torch::full({2}, 3.0)));
}

TEST(DeltaTest, EntropyThrowsTypeError) {
  Delta dist(torch::zeros({2}));
  EXPECT_FALSE(dist.has_entropy());
  EXPECT_THAT(
      [&] { dist.entropy(); },
      ThrowsMessage<TypeError>(HasSubstr("Delta::entropy: Delta has no closed-form entropy")));
}

TEST(DeltaTest, NegativeToleranceThrowsValueError) {
  EXPECT_THAT([&] { Delta(torch::zeros({2}), DeltaOptions().atol(-1)); },
              ThrowsMessage<ValueError>(
                  HasSubstr("Delta::Delta: atol and rtol must be >= 0, got atol -1")));
}

TEST(DeltaTest, PrintsParam) {
  EXPECT_EQ(printed(Delta(torch::zeros({4, 2}))), "Delta(param: [4, 2])");
}

TEST(TanhDeltaTest, PointIsTheSquashedParamMappedToTheBounds) {
  const auto param = torch::tensor({0.0, 0.5, -20.0});
  TanhDelta dist(param, TanhDeltaOptions().low(0).high(4));
  const auto expected = 2 + 2 * torch::tanh(param);
  EXPECT_TRUE(torch::allclose(dist.sample(), expected));
  EXPECT_TRUE(torch::allclose(dist.mode(), expected));
  EXPECT_EQ(dist.log_prob(expected).item<float>(), 0.0f);
  EXPECT_TRUE(dist.log_prob(expected + 0.01).isneginf().item<bool>());
}

TEST(TanhDeltaTest, RsampleDifferentiatesThroughTanh) {
  const auto param = torch::tensor({0.3}, torch::requires_grad());
  TanhDelta dist(param);
  dist.rsample().sum().backward();
  EXPECT_NEAR(param.grad().item<float>(), 1 - std::pow(std::tanh(0.3), 2), 1e-6);
}

TEST(TanhDeltaTest, LowNotBelowHighThrowsValueError) {
  EXPECT_THAT([&] { TanhDelta(torch::zeros({2}), TanhDeltaOptions().low(2).high(1)); },
              ThrowsMessage<ValueError>(HasSubstr("TanhDelta::TanhDelta: low must be < high")));
}

TEST(TanhDeltaTest, PrintsParamAndBounds) {
  EXPECT_EQ(printed(TanhDelta(torch::zeros({4, 2}))),
            "TanhDelta(param: [4, 2], low: [], high: [])");
}

}  // namespace
}  // namespace tensordict::nn
