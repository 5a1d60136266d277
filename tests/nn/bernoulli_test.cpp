#include <tensordict/nn/bernoulli.h>

#include <cmath>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tensordict/errors.h>

#include "support/tensordict_fixtures.h"

namespace tensordict::nn {
namespace {

using namespace tensordict::testing;

TEST(BernoulliTest, LogProbEntropyAndMeanMatchTheClosedForm) {
  const double p = 0.3;
  Bernoulli dist(Probs(torch::tensor({p}, torch::kDouble)));
  EXPECT_NEAR(dist.log_prob(torch::tensor({1.0}, torch::kDouble)).item<double>(), std::log(p),
              1e-12);
  EXPECT_NEAR(dist.log_prob(torch::tensor({0.0}, torch::kDouble)).item<double>(), std::log(1 - p),
              1e-12);
  EXPECT_NEAR(dist.entropy().item<double>(), -(p * std::log(p) + (1 - p) * std::log(1 - p)), 1e-12);
  EXPECT_NEAR(dist.mean().item<double>(), p, 1e-12);
  EXPECT_EQ(dist.mode().item<double>(), 0.0);
}

TEST(BernoulliTest, LogitsAndProbsConstructorsAgree) {
  const auto logits = torch::tensor({-1.0, 0.5, 2.0}, torch::kDouble);
  Bernoulli a{Logits(logits)};
  Bernoulli b(Probs(torch::sigmoid(logits)));
  const auto v = torch::tensor({1.0, 0.0, 1.0}, torch::kDouble);
  EXPECT_TRUE(torch::allclose(a.log_prob(v), b.log_prob(v)));
  EXPECT_TRUE(torch::allclose(a.entropy(), b.entropy()));
}

TEST(BernoulliTest, SaturatedProbabilitiesGiveFiniteLogProbAndEntropy) {
  Bernoulli dist(Probs(torch::tensor({0.0, 1.0})));
  const auto lp = dist.log_prob(torch::tensor({0.0, 1.0}));
  EXPECT_TRUE(torch::allclose(lp, torch::zeros({2})));
  EXPECT_TRUE(torch::allclose(dist.entropy(), torch::zeros({2})));
}

TEST(BernoulliTest, SampleMeanMatchesWithinFourStandardErrors) {
  torch::manual_seed(0);
  const double p = 0.3;
  const int64_t n = 20000;
  Bernoulli dist(Probs(torch::tensor(p)));
  EXPECT_NEAR(dist.sample({n}).mean().item<double>(), p, 4 * std::sqrt(p * (1 - p) / n));
}

TEST(BernoulliTest, ProbsOutsideTheUnitIntervalThrowValueError) {
  EXPECT_THAT(
      [&] {
        Bernoulli(Probs(torch::tensor({0.5, 1.2})));
      },
      ThrowsMessage<ValueError>(AllOf(HasSubstr("Bernoulli::Bernoulli: probs must lie in [0, 1]"),
                                      HasSubstr("maximum 1.2"))));
}

TEST(BernoulliTest, RsampleThrowsTypeError) {
  Bernoulli dist(Logits(torch::zeros({2})));
  EXPECT_THROW(dist.rsample(), TypeError);
}

TEST(BernoulliTest, PrintsLogits) {
  EXPECT_EQ(printed(Bernoulli(Logits(torch::zeros({4, 2})))), "Bernoulli(logits: [4, 2])");
}

}  // namespace
}  // namespace tensordict::nn
