#include <tensordict/nn/normal_param_extractor.h>

#include <cmath>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tensordict/errors.h>

#include "support/tensordict_fixtures.h"

namespace tensordict::nn {
namespace {

using namespace tensordict::testing;

TEST(NormalParamExtractorTest, SplitsTheLastDimIntoLocAndScale) {
  NormalParamExtractor extractor;
  const auto x = torch::randn({5, 6});
  auto [loc, scale] = extractor(x);
  EXPECT_EQ(loc.sizes(), c10::IntArrayRef({5, 3}));
  EXPECT_EQ(scale.sizes(), c10::IntArrayRef({5, 3}));
  EXPECT_TRUE(torch::equal(loc, x.slice(-1, 0, 3)));
  EXPECT_TRUE((scale > 0).all().item<bool>());
}

TEST(NormalParamExtractorTest, DefaultBiasedSoftplusMapsZeroToOne) {
  NormalParamExtractor extractor;
  auto [loc, scale] = extractor(torch::zeros({2, 4}, torch::kDouble));
  EXPECT_TRUE(torch::allclose(scale, torch::ones({2, 2}, torch::kDouble)));
}

TEST(NormalParamExtractorTest, BiasedSoftplusWithMinimumMapsZeroToTheBiasAndStaysAboveMin) {
  NormalParamExtractor extractor(
      NormalParamExtractorOptions().scale_mapping("biased_softplus_2.0_0.5"));
  auto [loc, scale] = extractor(torch::tensor({0.0, 0.0, 0.0, -50.0}, torch::kDouble));
  EXPECT_NEAR(scale[0].item<double>(), 2.0, 1e-12);
  EXPECT_NEAR(scale[1].item<double>(), 0.5, 1e-12);
}

TEST(NormalParamExtractorTest, ExpMappingIsClampedAtScaleLb) {
  NormalParamExtractor extractor(NormalParamExtractorOptions().scale_mapping("exp").scale_lb(0.1));
  auto [loc, scale] = extractor(torch::tensor({0.0, 0.0, 1.0, -10.0}, torch::kDouble));
  EXPECT_NEAR(scale[0].item<double>(), std::exp(1.0), 1e-12);
  EXPECT_NEAR(scale[1].item<double>(), 0.1, 1e-12);
}

TEST(NormalParamExtractorTest, SoftplusAndExplnMappingsFollowTheirFormulas) {
  const auto x = torch::tensor({0.0, 0.0, -1.0, 2.0}, torch::kDouble);
  auto [l1, softplus] =
      NormalParamExtractor(NormalParamExtractorOptions().scale_mapping("softplus"))(x);
  EXPECT_NEAR(softplus[0].item<double>(), std::log1p(std::exp(-1.0)), 1e-12);
  auto [l2, expln] = NormalParamExtractor(NormalParamExtractorOptions().scale_mapping("expln"))(x);
  EXPECT_NEAR(expln[0].item<double>(), std::exp(-1.0), 1e-12);
  EXPECT_NEAR(expln[1].item<double>(), std::log1p(2.0) + 1, 1e-12);
}

TEST(NormalParamExtractorTest, UnknownMappingThrowsValueErrorListingValidOnes) {
  EXPECT_THAT(
      [&] { NormalParamExtractor(NormalParamExtractorOptions().scale_mapping("sofplus")); },
      ThrowsMessage<ValueError>(HasSubstr("unknown scale_mapping 'sofplus'; valid: ['softplus'")));
}

TEST(NormalParamExtractorTest, MalformedBiasThrowsValueError) {
  EXPECT_THAT(
      [&] {
        NormalParamExtractor(NormalParamExtractorOptions().scale_mapping("biased_softplus_x"));
      },
      ThrowsMessage<ValueError>(HasSubstr("has no valid number in 'x'")));
}

TEST(NormalParamExtractorTest, OddLastDimThrowsShapeError) {
  NormalParamExtractor extractor;
  EXPECT_THAT(
      [&] {
        extractor(torch::zeros({2, 3}));
      },
      ThrowsMessage<ShapeError>(AllOf(HasSubstr("even last dim"), HasSubstr("[2, 3]"))));
}

TEST(NormalParamExtractorTest, PrintsItsOptions) {
  EXPECT_EQ(printed(*NormalParamExtractor()),
            "NormalParamExtractor(scale_mapping=biased_softplus_1.0, scale_lb=0.0001)");
}

}  // namespace
}  // namespace tensordict::nn
