#include <tensordict/nn/normal.h>

#include <cmath>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tensordict/errors.h>

#include "support/gradient_check.h"
#include "support/tensordict_fixtures.h"

namespace tensordict::nn {
namespace {

using namespace tensordict::testing;

const double kHalfLog2Pi = 0.5 * std::log(2 * M_PI);

TEST(NormalTest, ShapesFollowBroadcastOfLocAndScale) {
  Normal dist(torch::zeros({4, 2}), torch::ones({2}));
  EXPECT_EQ(dist.batch_shape(), c10::IntArrayRef({4, 2}));
  EXPECT_TRUE(dist.event_shape().empty());
  EXPECT_EQ(dist.sample({3}).sizes(), c10::IntArrayRef({3, 4, 2}));
  EXPECT_EQ(dist.log_prob(torch::zeros({5, 4, 2})).sizes(), c10::IntArrayRef({5, 4, 2}));
}

TEST(NormalTest, LogProbMatchesTheClosedForm) {
  const auto loc = torch::tensor({0.5, -1.0}, torch::kDouble);
  const auto scale = torch::tensor({2.0, 0.3}, torch::kDouble);
  Normal dist(loc, scale);
  const auto x = torch::tensor({1.5, -0.7}, torch::kDouble);
  const auto lp = dist.log_prob(x);
  for (int i = 0; i < 2; ++i) {
    const double z = (x[i].item<double>() - loc[i].item<double>()) / scale[i].item<double>();
    EXPECT_NEAR(lp[i].item<double>(),
                -0.5 * z * z - std::log(scale[i].item<double>()) - kHalfLog2Pi, 1e-12);
  }
}

TEST(NormalTest, EntropyMeanAndModeMatchTheClosedForm) {
  Normal dist(torch::tensor({0.5}, torch::kDouble), torch::tensor({2.0}, torch::kDouble));
  EXPECT_NEAR(dist.entropy().item<double>(), 0.5 + kHalfLog2Pi + std::log(2.0), 1e-12);
  EXPECT_DOUBLE_EQ(dist.mean().item<double>(), 0.5);
  EXPECT_DOUBLE_EQ(dist.mode().item<double>(), 0.5);
  EXPECT_DOUBLE_EQ(dist.deterministic_sample().item<double>(), 0.5);
}

TEST(NormalTest, SampleMeanAndStdMatchWithinFourStandardErrors) {
  torch::manual_seed(0);
  Normal dist(torch::tensor({1.0, -2.0}, torch::kDouble),
              torch::tensor({0.5, 3.0}, torch::kDouble));
  const int64_t n = 20000;
  const auto s = dist.sample({n});
  for (int i = 0; i < 2; ++i) {
    const double sigma = dist.scale()[i].item<double>();
    EXPECT_NEAR(s.select(1, i).mean().item<double>(), dist.loc()[i].item<double>(),
                4 * sigma / std::sqrt(n));
    // Standard error of the sample std is about sigma / sqrt(2n).
    EXPECT_NEAR(s.select(1, i).std().item<double>(), sigma, 4 * sigma / std::sqrt(2.0 * n));
  }
}

TEST(NormalTest, SampleCarriesNoGradientButRsampleDoes) {
  const auto loc = torch::zeros({3}, torch::requires_grad());
  Normal dist(loc, torch::ones({3}));
  EXPECT_FALSE(dist.sample().requires_grad());
  EXPECT_TRUE(dist.rsample().requires_grad());
  EXPECT_TRUE(dist.has_rsample());
  EXPECT_TRUE(dist.has_entropy());
}

TEST(NormalTest, RsampleGradientsMatchFiniteDifferences) {
  tdrl_test::expect_gradients_match_finite_differences(
      [](const std::vector<torch::Tensor>& p) {
        torch::manual_seed(7);
        return Normal(p[0], p[1]).rsample({4}).pow(2).sum();
      },
      {torch::tensor({0.3, -0.2}), torch::tensor({0.8, 1.5})});
}

TEST(NormalTest, LogProbGradientsMatchFiniteDifferences) {
  const auto x = torch::tensor({0.1, 2.0}, torch::kDouble);
  tdrl_test::expect_gradients_match_finite_differences(
      [x](const std::vector<torch::Tensor>& p) { return Normal(p[0], p[1]).log_prob(x).sum(); },
      {torch::tensor({0.3, -0.2}), torch::tensor({0.8, 1.5})});
}

TEST(NormalTest, NonPositiveScaleThrowsValueErrorShowingTheMinimum) {
  EXPECT_THAT(
      [&] {
        Normal(torch::zeros({2}), torch::tensor({1.0, -0.5}));
      },
      ThrowsMessage<ValueError>(
          AllOf(HasSubstr("Normal::Normal: scale must be > 0"), HasSubstr("-0.5"))));
}

TEST(NormalTest, NonBroadcastableParametersThrowShapeError) {
  EXPECT_THAT([&] { Normal(torch::zeros({3}), torch::ones({2})); },
              ThrowsMessage<ShapeError>(HasSubstr("loc has shape [3] and scale has shape [2]")));
}

TEST(NormalTest, IntegerParametersThrowTypeError) {
  EXPECT_THROW(Normal(torch::zeros({2}, torch::kLong), torch::ones({2})), TypeError);
}

TEST(NormalTest, LogProbOfValueWithWrongTrailingShapeThrowsShapeError) {
  Normal dist(torch::zeros({4, 2}), torch::ones({4, 2}));
  EXPECT_THAT(
      [&] {
        dist.log_prob(torch::zeros({4, 3}));
      },
      ThrowsMessage<ShapeError>(
          AllOf(HasSubstr("Normal::log_prob: value has shape [4, 3]"), HasSubstr("[4, 2]"))));
}

TEST(NormalTest, PrintsNameAndParameterShapes) {
  EXPECT_EQ(printed(Normal(torch::zeros({4, 2}), torch::ones({4, 2}))),
            "Normal(loc: [4, 2], scale: [4, 2])");
}

TEST(IndependentNormalTest, LastDimIsTheEventAndLogProbSumsOverIt) {
  const auto loc = torch::randn({4, 3}, torch::kDouble);
  const auto scale = torch::rand({4, 3}, torch::kDouble) + 0.5;
  IndependentNormal dist(loc, scale);
  EXPECT_EQ(dist.batch_shape(), c10::IntArrayRef({4}));
  EXPECT_EQ(dist.event_shape(), c10::IntArrayRef({3}));
  const auto x = torch::randn({2, 4, 3}, torch::kDouble);
  const auto lp = dist.log_prob(x);
  EXPECT_EQ(lp.sizes(), c10::IntArrayRef({2, 4}));
  EXPECT_TRUE(torch::allclose(lp, Normal(loc, scale).log_prob(x).sum(-1)));
  EXPECT_TRUE(torch::allclose(dist.entropy(), Normal(loc, scale).entropy().sum(-1)));
}

TEST(IndependentNormalTest, EventDimsTwoSumsOverTheLastTwoDims) {
  IndependentNormal dist(torch::zeros({5, 2, 3}), torch::ones({5, 2, 3}),
                         IndependentNormalOptions().event_dims(2));
  EXPECT_EQ(dist.event_shape(), c10::IntArrayRef({2, 3}));
  EXPECT_EQ(dist.log_prob(torch::zeros({5, 2, 3})).sizes(), c10::IntArrayRef({5}));
}

TEST(IndependentNormalTest, EventDimsBeyondTheParameterDimsThrowValueError) {
  EXPECT_THAT(
      [&] {
        IndependentNormal(torch::zeros({3}), torch::ones({3}),
                          IndependentNormalOptions().event_dims(2));
      },
      ThrowsMessage<ValueError>(
          HasSubstr("IndependentNormal::IndependentNormal: event_dims must be in "
                    "[0, 1]")));
}

TEST(IndependentNormalTest, PrintsItsName) {
  EXPECT_EQ(printed(IndependentNormal(torch::zeros({4, 2}), torch::ones({4, 2}))),
            "IndependentNormal(loc: [4, 2], scale: [4, 2])");
}

}  // namespace
}  // namespace tensordict::nn
