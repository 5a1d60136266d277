#include <tensordict/nn/tanh_normal.h>

#include <cmath>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include <tensordict/errors.h>
#include <tensordict/nn/normal.h>

#include "support/gradient_check.h"
#include "support/tensordict_fixtures.h"

namespace tensordict::nn {
namespace {

using namespace tensordict::testing;

TEST(TanhNormalTest, LastDimIsTheEventByDefault) {
  TanhNormal dist(torch::zeros({4, 2}), torch::ones({4, 2}));
  EXPECT_EQ(dist.batch_shape(), c10::IntArrayRef({4}));
  EXPECT_EQ(dist.event_shape(), c10::IntArrayRef({2}));
  EXPECT_EQ(dist.sample({3}).sizes(), c10::IntArrayRef({3, 4, 2}));
  EXPECT_EQ(dist.log_prob(torch::zeros({3, 4, 2})).sizes(), c10::IntArrayRef({3, 4}));
}

TEST(TanhNormalTest, SamplesLieWithinLowAndHigh) {
  torch::manual_seed(1);
  TanhNormal dist(torch::zeros({1000, 2}), 3 * torch::ones({1000, 2}),
                  TanhNormalOptions().low(-2).high(0.5));
  const auto s = dist.sample();
  EXPECT_GE(s.min().item<double>(), -2);
  EXPECT_LE(s.max().item<double>(), 0.5);
}

TEST(TanhNormalTest, LogProbMatchesTheChangeOfVariables) {
  // z = c + w * tanh(x): log p(z) = log N(x) - log w - log(1 - tanh(x)^2).
  const auto loc = torch::tensor({0.3, -0.5}, torch::kDouble);
  const auto scale = torch::tensor({0.7, 1.2}, torch::kDouble);
  const double low = -3, high = 1;
  TanhNormal dist(loc, scale, TanhNormalOptions().low(low).high(high));
  const auto x = torch::tensor({0.4, -1.1}, torch::kDouble);
  const double c = (high + low) / 2, w = (high - low) / 2;
  const auto z = c + w * torch::tanh(x);
  const auto expected =
      (Normal(loc, scale).log_prob(x) - std::log(w) - torch::log(1 - torch::tanh(x).pow(2))).sum();
  EXPECT_NEAR(dist.log_prob(z).item<double>(), expected.item<double>(), 1e-10);
}

TEST(TanhNormalTest, LogProbIntegratesToOneOverTheInterval) {
  const double low = -2, high = 2;
  TanhNormal dist(torch::tensor({0.4}, torch::kDouble), torch::tensor({0.8}, torch::kDouble),
                  TanhNormalOptions().low(low).high(high));
  const int64_t n = 200001;
  const auto z = torch::linspace(low, high, n, torch::kDouble).unsqueeze(-1);
  const double integral = torch::trapz(dist.log_prob(z).exp(), z.squeeze(-1)).item<double>();
  EXPECT_NEAR(integral, 1.0, 1e-4);
}

TEST(TanhNormalTest, LogProbIsFiniteExactlyAtTheBounds) {
  for (auto dtype : {torch::kFloat, torch::kDouble}) {
    const auto loc = torch::tensor({0.0, 1.0}, torch::TensorOptions(dtype).requires_grad(true));
    TanhNormal dist(loc, torch::ones({2}, dtype), TanhNormalOptions().low(-2).high(2));
    const auto lp = dist.log_prob(torch::tensor({{-2.0, 2.0}, {2.0, -2.0}}, dtype));
    EXPECT_TRUE(torch::isfinite(lp).all().item<bool>()) << lp;
    lp.sum().backward();
    EXPECT_TRUE(torch::isfinite(loc.grad()).all().item<bool>()) << loc.grad();
  }
}

TEST(TanhNormalTest, LogProbIsFiniteForSaturatedSamples) {
  torch::manual_seed(2);
  TanhNormal dist(torch::full({500, 1}, 4.0), torch::full({500, 1}, 5.0));
  const auto lp = dist.log_prob(dist.sample());
  EXPECT_TRUE(torch::isfinite(lp).all().item<bool>());
}

TEST(TanhNormalTest, LogProbOfTheLatestSampleUsesItsPreTanhValue) {
  // loc 20, scale 0.1 in float32: every sample rounds to the upper bound, whose atanh pre-image
  // (about 8.7) is 100 standard deviations from loc; the sample's own pre-tanh value is not.
  torch::manual_seed(3);
  const auto loc = torch::full({64, 1}, 20.0);
  const auto scale = torch::full({64, 1}, 0.1);
  TanhNormal dist(loc, scale);
  const auto sample = dist.rsample();
  ASSERT_TRUE((sample == 1.0f).all().item<bool>());
  const auto lp = dist.log_prob(sample);
  // log N(x; 20, 0.1) - log(1 - tanh(x)^2) with x within a few scales of 20: between
  // roughly -10 + 2 * 18 and 2 * 21 (the Jacobian term dominates), never around -3.8e4.
  EXPECT_TRUE((lp > 20).all().item<bool>()) << lp.min();
  EXPECT_TRUE((lp < 50).all().item<bool>()) << lp.max();
  // An equal tensor that is not the sample goes through atanh (the documented fallback).
  const auto through_atanh = dist.log_prob(sample.clone());
  EXPECT_TRUE((through_atanh < -1000).all().item<bool>()) << through_atanh.max();
}

TEST(TanhNormalTest, RsampleGradientsMatchFiniteDifferences) {
  tdrl_test::expect_gradients_match_finite_differences(
      [](const std::vector<torch::Tensor>& p) {
        torch::manual_seed(3);
        return TanhNormal(p[0], p[1], TanhNormalOptions().low(-2).high(1)).rsample({3}).sum();
      },
      {torch::tensor({0.3, -0.2}), torch::tensor({0.8, 0.5})});
}

TEST(TanhNormalTest, LogProbGradientsMatchFiniteDifferences) {
  const auto z = torch::tensor({0.5, -0.9}, torch::kDouble);
  tdrl_test::expect_gradients_match_finite_differences(
      [z](const std::vector<torch::Tensor>& p) { return TanhNormal(p[0], p[1]).log_prob(z).sum(); },
      {torch::tensor({0.3, -0.2}), torch::tensor({0.8, 0.5})});
}

TEST(TanhNormalTest, DeterministicSampleIsTheImageOfLoc) {
  TanhNormal dist(torch::tensor({0.0, 0.5}), torch::ones({2}), TanhNormalOptions().low(0).high(4));
  EXPECT_TRUE(
      torch::allclose(dist.deterministic_sample(), 2 + 2 * torch::tanh(torch::tensor({0.0, 0.5}))));
}

TEST(TanhNormalTest, MeanModeAndEntropyThrowTypeError) {
  TanhNormal dist(torch::zeros({2}), torch::ones({2}));
  EXPECT_FALSE(dist.has_entropy());
  EXPECT_THAT([&] { dist.mean(); },
              ThrowsMessage<TypeError>(HasSubstr("TanhNormal has no closed-form mean")));
  EXPECT_THROW(dist.mode(), TypeError);
  EXPECT_THAT([&] { dist.entropy(); },
              ThrowsMessage<TypeError>(HasSubstr("TanhNormal has no closed-form entropy")));
}

TEST(TanhNormalTest, LowNotBelowHighThrowsValueError) {
  EXPECT_THAT(
      [&] { TanhNormal(torch::zeros({2}), torch::ones({2}), TanhNormalOptions().low(1).high(1)); },
      ThrowsMessage<ValueError>(HasSubstr("TanhNormal::TanhNormal: low must be < high")));
}

TEST(TanhNormalTest, BoundsThatDoNotBroadcastThrowShapeError) {
  EXPECT_THROW(TanhNormal(torch::zeros({2}), torch::ones({2}),
                          TanhNormalOptions().low(-torch::ones({3})).high(torch::ones({3}))),
               ShapeError);
}

TEST(TanhNormalTest, ZeroScaleThrowsValueError) {
  EXPECT_THAT([&] { TanhNormal(torch::zeros({2}), torch::zeros({2})); },
              ThrowsMessage<ValueError>(HasSubstr("scale must be > 0 everywhere, got minimum 0")));
}

// Value checks read the tensors on the host; a ValidateArgs(false) guard skips them (for GPU
// code that must not synchronise) on its thread only, while shape checks still run.
TEST(TanhNormalTest, ValidateArgsOffSkipsValueChecksOnThisThreadOnly) {
  EXPECT_TRUE(tensordict::nn::validate_args());
  {
    tensordict::nn::ValidateArgs off(false);
    EXPECT_FALSE(tensordict::nn::validate_args());
    EXPECT_NO_THROW(TanhNormal(torch::zeros({2}), torch::zeros({2})));
    EXPECT_NO_THROW(TanhNormal(torch::zeros({2}), torch::ones({2}),
                               TanhNormalOptions().low(torch::ones({2})).high(-torch::ones({2}))));
    EXPECT_THROW(TanhNormal(torch::zeros({2}), torch::ones({2}),
                            TanhNormalOptions().low(-torch::ones({3})).high(torch::ones({3}))),
                 ShapeError);
    bool other_thread = false;
    std::thread([&other_thread] { other_thread = tensordict::nn::validate_args(); }).join();
    EXPECT_TRUE(other_thread);
  }
  EXPECT_TRUE(tensordict::nn::validate_args());
  EXPECT_THROW(TanhNormal(torch::zeros({2}), torch::zeros({2})), ValueError);
}

TEST(TanhNormalTest, PrintsParametersAndBounds) {
  EXPECT_EQ(printed(TanhNormal(torch::zeros({4, 2}), torch::ones({4, 2}))),
            "TanhNormal(loc: [4, 2], scale: [4, 2], low: [], high: [])");
}

}  // namespace
}  // namespace tensordict::nn
