// BoundedNormal as a user extends it: a distribution of the same family written against the
// base, which gets the checked parameters, their errors and the printing.

#include <tensordict/nn/bounded_normal.h>

#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tensordict/errors.h>

#include "support/tensordict_fixtures.h"

namespace tensordict::nn {
namespace {

using namespace tensordict::testing;

struct ClippedNormalOptions : BoundedOptions<ClippedNormalOptions> {};

// N(loc, scale) with its draws clipped into [low, high]: only the law is written here.
class ClippedNormal : public BoundedNormal {
 public:
  ClippedNormal(torch::Tensor loc, torch::Tensor scale, ClippedNormalOptions options = {})
      : BoundedNormal("ClippedNormal", loc, scale, options) {}

  bool has_rsample() const override { return true; }
  bool has_entropy() const override { return false; }

 protected:
  torch::Tensor sample_impl(c10::IntArrayRef sample_shape) const override {
    const auto eps = torch::randn(extended_shape(sample_shape), loc_.options());
    return torch::max(torch::min(loc_ + scale_ * eps, high_), low_);
  }
  torch::Tensor log_prob_impl(const torch::Tensor& value) const override {
    const auto z = (value - loc_) / scale_;
    return (-0.5 * z * z - scale_.log() - 0.5 * std::log(2 * M_PI)).sum(-1);
  }
  std::optional<torch::Tensor> entropy_impl() const override { return std::nullopt; }
  std::optional<torch::Tensor> mean_impl() const override { return std::nullopt; }
  std::optional<torch::Tensor> mode_impl() const override { return std::nullopt; }
  torch::Tensor deterministic_sample_impl() const override {
    return torch::max(torch::min(loc_, high_), low_);
  }
};

TEST(BoundedNormalTest, ASubclassGetsBroadcastParametersAndShapes) {
  ClippedNormal dist(torch::zeros({3, 2}), torch::tensor(0.5),
                     ClippedNormalOptions().low(-0.1).high(0.1));
  EXPECT_EQ(dist.scale().sizes(), (c10::IntArrayRef{3, 2}));
  EXPECT_EQ(dist.low().scalar_type(), torch::kFloat);
  EXPECT_EQ(dist.batch_shape(), (c10::IntArrayRef{3}));
  EXPECT_EQ(dist.event_shape(), (c10::IntArrayRef{2}));
  const auto x = dist.sample({100});
  EXPECT_EQ(x.sizes(), (c10::IntArrayRef{100, 3, 2}));
  EXPECT_LE(x.abs().max().item<double>(), 0.1 + 1e-7);
}

TEST(BoundedNormalTest, BadParametersAreRefusedNamingTheSubclass) {
  EXPECT_THAT(
      [] {
        ClippedNormal(torch::zeros({2}), torch::tensor({1.0f, -1.0f}));
      },
      ThrowsMessage<ValueError>(HasSubstr("ClippedNormal::ClippedNormal")));
  EXPECT_THAT(
      [] { ClippedNormal(torch::zeros({2}), torch::ones({2}), ClippedNormalOptions().low(1)); },
      ThrowsMessage<ValueError>(HasSubstr("ClippedNormal::ClippedNormal: low must be < high")));
  EXPECT_THAT([] { ClippedNormal(torch::zeros({2}, torch::kLong), torch::ones({2})); },
              ThrowsMessage<TypeError>(HasSubstr("ClippedNormal::ClippedNormal")));
}

TEST(BoundedNormalTest, PrintsTheSubclassNameAndTheFourParameters) {
  EXPECT_EQ(printed(ClippedNormal(torch::zeros({4, 2}), torch::ones({4, 2}))),
            "ClippedNormal(loc: [4, 2], scale: [4, 2], low: [], high: [])");
}

}  // namespace
}  // namespace tensordict::nn
