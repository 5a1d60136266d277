#include <tensordict/nn/categorical.h>

#include <cmath>
#include <limits>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tensordict/errors.h>

#include "support/tensordict_fixtures.h"

namespace tensordict::nn {
namespace {

using namespace tensordict::testing;

TEST(CategoricalTest, ShapesAreBatchOnlyAndSamplesAreIndices) {
  Categorical dist(Logits(torch::zeros({4, 3})));
  EXPECT_EQ(dist.batch_shape(), c10::IntArrayRef({4}));
  EXPECT_TRUE(dist.event_shape().empty());
  const auto s = dist.sample({5, 2});
  EXPECT_EQ(s.sizes(), c10::IntArrayRef({5, 2, 4}));
  EXPECT_EQ(s.scalar_type(), torch::kLong);
  EXPECT_EQ(dist.num_categories(), 3);
}

TEST(CategoricalTest, LogProbIsTheLogOfTheNormalisedProbability) {
  const auto probs = torch::tensor({0.2, 0.5, 0.3}, torch::kDouble);
  Categorical dist{Probs(probs)};
  const auto lp = dist.log_prob(torch::tensor({0, 1, 2}));
  EXPECT_TRUE(torch::allclose(lp, probs.log()));
  Categorical from_logits(Logits(torch::tensor({1.0, 2.0, 3.0}, torch::kDouble)));
  const double norm = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  EXPECT_NEAR(from_logits.log_prob(torch::tensor(2)).item<double>(), 3.0 - norm, 1e-12);
}

TEST(CategoricalTest, EntropyMatchesTheClosedForm) {
  Categorical dist(Probs(torch::tensor({0.2, 0.5, 0.3}, torch::kDouble)));
  const double expected = -(0.2 * std::log(0.2) + 0.5 * std::log(0.5) + 0.3 * std::log(0.3));
  EXPECT_NEAR(dist.entropy().item<double>(), expected, 1e-12);
}

TEST(CategoricalTest, SampleFrequenciesMatchProbabilitiesWithinFourStandardErrors) {
  torch::manual_seed(0);
  const std::vector<double> p{0.1, 0.6, 0.3};
  Categorical dist(Probs(torch::tensor(p, torch::kDouble)));
  const int64_t n = 20000;
  const auto counts = torch::bincount(dist.sample({n}), {}, 3).to(torch::kDouble) / n;
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(counts[i].item<double>(), p[i], 4 * std::sqrt(p[i] * (1 - p[i]) / n));
  }
}

TEST(CategoricalTest, MaskedClassesAreNeverSampledAndHaveLogProbMinusInfinity) {
  torch::manual_seed(1);
  const auto mask = torch::tensor({{true, false, true}, {false, true, false}});
  Categorical dist(Logits(torch::zeros({2, 3})), CategoricalOptions().mask(mask));
  const auto s = dist.sample({1000});
  EXPECT_FALSE((s.select(1, 0) == 1).any().item<bool>());
  EXPECT_TRUE((s.select(1, 1) == 1).all().item<bool>());
  const auto lp = dist.log_prob(torch::tensor({1, 0}));
  EXPECT_TRUE(lp.isneginf().all().item<bool>());
  EXPECT_NEAR(dist.log_prob(torch::tensor({0, 1}))[0].item<float>(), std::log(0.5), 1e-6);
  EXPECT_FLOAT_EQ(dist.probs()[0][1].item<float>(), 0.0f);
}

TEST(CategoricalTest, EntropyIgnoresMaskedClasses) {
  const auto mask = torch::tensor({true, true, false, false});
  Categorical dist(Logits(torch::zeros({4}, torch::kDouble)), CategoricalOptions().mask(mask));
  EXPECT_NEAR(dist.entropy().item<double>(), std::log(2.0), 1e-12);
}

TEST(CategoricalTest, ModeIsTheMostProbableAllowedClass) {
  const auto mask = torch::tensor({true, false, true});
  Categorical dist(Logits(torch::tensor({0.0, 5.0, 1.0})), CategoricalOptions().mask(mask));
  EXPECT_EQ(dist.mode().item<int64_t>(), 2);
  EXPECT_EQ(dist.deterministic_sample().item<int64_t>(), 2);
}

TEST(CategoricalTest, MeanAndRsampleThrowTypeError) {
  Categorical dist(Logits(torch::zeros({3})));
  EXPECT_FALSE(dist.has_rsample());
  EXPECT_THAT([&] { dist.rsample(); },
              ThrowsMessage<TypeError>(
                  AllOf(HasSubstr("Categorical::rsample: Categorical is not reparametrisable"),
                        HasSubstr("use sample()"))));
  EXPECT_THROW(dist.mean(), TypeError);
}

TEST(CategoricalTest, ProbsOutsideTheUnitIntervalThrowValueError) {
  EXPECT_THAT(
      [&] {
        Categorical(Probs(torch::tensor({1.5, -0.5})));
      },
      ThrowsMessage<ValueError>(
          HasSubstr("probs must lie in [0, 1], got minimum -0.5 and maximum 1.5")));
}

TEST(CategoricalTest, ProbsNotSummingToOneThrowValueError) {
  EXPECT_THAT(
      [&] {
        Categorical(Probs(torch::tensor({0.5, 0.4})));
      },
      ThrowsMessage<ValueError>(AllOf(HasSubstr("probs must sum to 1"), HasSubstr("0.1"))));
}

TEST(CategoricalTest, FullyMaskedRowThrowsValueError) {
  EXPECT_THAT(
      [&] {
        Categorical(Logits(torch::zeros({2, 2})),
                    CategoricalOptions().mask(torch::tensor({{true, false}, {false, false}})));
      },
      ThrowsMessage<ValueError>(HasSubstr("mask leaves a row with no allowed class")));
}

TEST(CategoricalTest, NonBoolMaskThrowsTypeError) {
  EXPECT_THAT(
      [&] { Categorical(Logits(torch::zeros({2})), CategoricalOptions().mask(torch::ones({2}))); },
      ThrowsMessage<TypeError>(HasSubstr("mask must be a bool tensor, got Float")));
}

TEST(CategoricalTest, MaskOfWrongShapeThrowsShapeError) {
  EXPECT_THROW(Categorical(Logits(torch::zeros({2, 3})),
                           CategoricalOptions().mask(torch::ones({2, 2}, torch::kBool))),
               ShapeError);
}

TEST(CategoricalTest, ScalarLogitsThrowShapeError) {
  EXPECT_THAT([&] { Categorical(Logits(torch::tensor(1.0))); },
              ThrowsMessage<ShapeError>(HasSubstr("logits must have shape [*batch, n]")));
}

TEST(CategoricalTest, LogProbOfAnOutOfRangeIndexThrowsValueError) {
  Categorical dist(Logits(torch::zeros({3})));
  EXPECT_THAT(
      [&] {
        dist.log_prob(torch::tensor({0, 3}));
      },
      ThrowsMessage<ValueError>(
          HasSubstr("class indices must lie in [0, 3), got values from 0 to 3")));
}

TEST(CategoricalTest, PrintsLogitsAndMask) {
  EXPECT_EQ(printed(Categorical(Logits(torch::zeros({4, 3})),
                                CategoricalOptions().mask(torch::ones({3}, torch::kBool)))),
            "Categorical(logits: [4, 3], mask: [4, 3])");
}

TEST(OneHotCategoricalTest, SamplesAreOneHotWithTheClassesAsEvent) {
  torch::manual_seed(2);
  OneHotCategorical dist(Logits(torch::zeros({4, 3})));
  EXPECT_EQ(dist.batch_shape(), c10::IntArrayRef({4}));
  EXPECT_EQ(dist.event_shape(), c10::IntArrayRef({3}));
  const auto s = dist.sample({5});
  EXPECT_EQ(s.sizes(), c10::IntArrayRef({5, 4, 3}));
  EXPECT_TRUE((s.sum(-1) == 1).all().item<bool>());
  EXPECT_EQ(dist.log_prob(s).sizes(), c10::IntArrayRef({5, 4}));
}

TEST(OneHotCategoricalTest, LogProbMeanAndModeAgreeWithTheProbabilities) {
  const auto probs = torch::tensor({0.2, 0.5, 0.3}, torch::kDouble);
  OneHotCategorical dist{Probs(probs)};
  EXPECT_NEAR(dist.log_prob(torch::tensor({0.0, 0.0, 1.0}, torch::kDouble)).item<double>(),
              std::log(0.3), 1e-12);
  EXPECT_TRUE(torch::allclose(dist.mean(), probs));
  EXPECT_TRUE(torch::equal(dist.mode(), torch::tensor({0.0, 1.0, 0.0}, torch::kDouble)));
}

TEST(OneHotCategoricalTest, MaskedClassesAreNeverSampled) {
  torch::manual_seed(3);
  OneHotCategorical dist(Logits(torch::zeros({3})),
                         CategoricalOptions().mask(torch::tensor({false, true, true})));
  EXPECT_EQ(dist.sample({1000}).select(-1, 0).sum().item<float>(), 0.0f);
  EXPECT_TRUE(dist.log_prob(torch::tensor({1.0, 0.0, 0.0})).isneginf().item<bool>());
}

TEST(OneHotCategoricalTest, LogProbOfValueWithWrongClassCountThrowsShapeError) {
  OneHotCategorical dist(Logits(torch::zeros({3})));
  EXPECT_THROW(dist.log_prob(torch::zeros({4})), ShapeError);
}

}  // namespace
}  // namespace tensordict::nn
