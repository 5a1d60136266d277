#include <tensordict/nn/truncated_normal.h>

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

TruncatedNormal make(double loc, double scale, double low, double high) {
  return TruncatedNormal(torch::tensor({loc}, torch::kDouble),
                         torch::tensor({scale}, torch::kDouble),
                         TruncatedNormalOptions().low(low).high(high));
}

// The trapezoid integral of f(x) * density over a fine grid on [low, high].
double integrate(const TruncatedNormal& dist, double low, double high,
                 const std::function<torch::Tensor(const torch::Tensor&)>& f) {
  const auto x = torch::linspace(low, high, 100001, torch::kDouble);
  return torch::trapz(f(x) * dist.log_prob(x.unsqueeze(-1)).exp(), x).item<double>();
}

TEST(TruncatedNormalTest, LogProbIntegratesToOneOverTheInterval) {
  for (auto [loc, scale] :
       std::initializer_list<std::pair<double, double>>{{0.3, 0.5}, {-2.0, 1.0}, {0.0, 10.0}}) {
    const auto dist = make(loc, scale, -1, 1.5);
    EXPECT_NEAR(
        integrate(dist, -1, 1.5, [](const torch::Tensor& x) { return torch::ones_like(x); }), 1.0,
        1e-6)
        << "loc " << loc << " scale " << scale;
  }
}

TEST(TruncatedNormalTest, LogProbIsMinusInfinityOutsideTheInterval) {
  const auto dist = make(0, 1, -1, 1);
  const auto lp = dist.log_prob(torch::tensor({{-1.5}, {1.01}, {0.0}}, torch::kDouble));
  EXPECT_TRUE(lp[0].isneginf().item<bool>());
  EXPECT_TRUE(lp[1].isneginf().item<bool>());
  EXPECT_TRUE(std::isfinite(lp[2].item<double>()));
}

TEST(TruncatedNormalTest, MeanAndEntropyMatchNumericQuadrature) {
  const auto dist = make(0.4, 0.7, -1, 1);
  const double mean = integrate(dist, -1, 1, [](const torch::Tensor& x) { return x; });
  EXPECT_NEAR(dist.mean().item<double>(), mean, 1e-6);
  const double entropy = integrate(
      dist, -1, 1, [&](const torch::Tensor& x) { return -dist.log_prob(x.unsqueeze(-1)); });
  EXPECT_NEAR(dist.entropy().item<double>(), entropy, 1e-6);
  EXPECT_DOUBLE_EQ(dist.mode().item<double>(), 0.4);
  EXPECT_DOUBLE_EQ(make(3, 1, -1, 1).deterministic_sample().item<double>(), 1.0);
}

TEST(TruncatedNormalTest, SamplesLieInsideAndTheirMeanMatchesWithinFourStandardErrors) {
  torch::manual_seed(0);
  const auto dist = make(0.8, 1.0, -1, 1);
  const int64_t n = 20000;
  const auto s = dist.sample({n});
  EXPECT_GE(s.min().item<double>(), -1);
  EXPECT_LE(s.max().item<double>(), 1);
  const double sd =
      integrate(dist, -1, 1, [&](const torch::Tensor& x) { return (x - dist.mean()).pow(2); });
  EXPECT_NEAR(s.mean().item<double>(), dist.mean().item<double>(), 4 * std::sqrt(sd / n));
}

TEST(TruncatedNormalTest, RsampleGradientsMatchFiniteDifferences) {
  tdrl_test::expect_gradients_match_finite_differences(
      [](const std::vector<torch::Tensor>& p) {
        torch::manual_seed(5);
        return TruncatedNormal(p[0], p[1], TruncatedNormalOptions().low(-1).high(2))
            .rsample({3})
            .sum();
      },
      {torch::tensor({0.3, -0.2}), torch::tensor({0.8, 1.5})}, 1e-6, 1e-5, 1e-4);
}

TEST(TruncatedNormalTest, LogProbGradientsMatchFiniteDifferences) {
  const auto x = torch::tensor({0.5, -0.9}, torch::kDouble);
  tdrl_test::expect_gradients_match_finite_differences(
      [x](const std::vector<torch::Tensor>& p) {
        return TruncatedNormal(p[0], p[1]).log_prob(x).sum();
      },
      {torch::tensor({0.3, -0.2}), torch::tensor({0.8, 1.5})});
}

TEST(TruncatedNormalTest, LowNotBelowHighThrowsValueError) {
  EXPECT_THAT(
      [&] { make(0, 1, 1, -1); },
      ThrowsMessage<ValueError>(HasSubstr("TruncatedNormal::TruncatedNormal: low must be < high")));
}

TEST(TruncatedNormalTest, NegativeScaleThrowsValueError) {
  EXPECT_THROW(make(0, -1, -1, 1), ValueError);
}

TEST(TruncatedNormalTest, PrintsParametersAndBounds) {
  EXPECT_EQ(printed(TruncatedNormal(torch::zeros({4, 2}), torch::ones({4, 2}))),
            "TruncatedNormal(loc: [4, 2], scale: [4, 2], low: [], high: [])");
}

}  // namespace
}  // namespace tensordict::nn
