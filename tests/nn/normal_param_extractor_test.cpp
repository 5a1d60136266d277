#include <tensordict/nn/normal_param_extractor.h>

#include <cmath>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tensordict/errors.h>

namespace tensordict::nn {
namespace {

using ::testing::HasSubstr;

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
  try {
    NormalParamExtractor(NormalParamExtractorOptions().scale_mapping("sofplus"));
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("unknown scale_mapping 'sofplus'; valid: ['softplus'"));
  }
}

TEST(NormalParamExtractorTest, MalformedBiasThrowsValueError) {
  try {
    NormalParamExtractor(NormalParamExtractorOptions().scale_mapping("biased_softplus_x"));
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("has no valid number in 'x'"));
  }
}

TEST(NormalParamExtractorTest, OddLastDimThrowsShapeError) {
  NormalParamExtractor extractor;
  try {
    extractor(torch::zeros({2, 3}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_THAT(e.what(), HasSubstr("even last dim"));
    EXPECT_THAT(e.what(), HasSubstr("[2, 3]"));
  }
}

TEST(NormalParamExtractorTest, PrintsItsOptions) {
  std::ostringstream os;
  os << *NormalParamExtractor();
  EXPECT_EQ(os.str(), "NormalParamExtractor(scale_mapping=biased_softplus_1.0, scale_lb=0.0001)");
}

}  // namespace
}  // namespace tensordict::nn
