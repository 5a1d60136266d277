// The shared keys of the transforms (TransformKeysOptions) and the one-to-one transforms built on
// KeyedTransform: out_keys beside in_keys, inverse keys, the keys a transform refuses, and a
// user's own KeyedTransform.

#include <tdrl/envs/transforms/all.h>

#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <tensordict/errors.h>

#include "support/mock_envs.h"
#include "support/test_names.h"

namespace tdrl::envs {
namespace {

using namespace tdrl::testing::names;
using tdrl::testing::continuous;
using tdrl::testing::ContinuousEnv;

// A user's transform: squares the entries it reads; its inverse halves the action.
struct SquareOptions : TransformKeysOptions<SquareOptions> {
  SquareOptions() { in_keys({"position"}); }
};

class Square : public KeyedTransform {
 public:
  explicit Square(const SquareOptions& options = {})
      : KeyedTransform("Square", options, Inverse::kSupported) {}
  std::string to_string() const override { return "Square(" + keys_to_string() + ")"; }

 protected:
  torch::Tensor apply_transform(const torch::Tensor& value, const NestedKey&) override {
    return value * value;
  }
  torch::Tensor apply_inverse(const torch::Tensor& value, const NestedKey&) override {
    return value / 2;
  }
  specs::TensorSpecPtr transform_output_leaf(const specs::TensorSpecPtr& spec, const NestedKey&,
                                             const EnvSpecs&) override {
    return std::make_shared<specs::Unbounded>(
        spec->shape(), specs::UnboundedOptions().dtype(spec->dtype()).device(spec->device()));
  }
};

TEST(KeyedTransformTest, OutKeysKeepTheInputAndAddTheResult) {
  TransformedEnv env(continuous({2}), std::make_shared<Square>(SquareOptions().out_keys({"sq"})));
  env.set_seed(0);
  auto td = env.reset();
  EXPECT_TRUE(torch::allclose(td.get("sq"), td.get("position") * td.get("position")));
  EXPECT_EQ(env.observation_spec()->get("sq")->shape(), (Shape{2, 2}));
  EXPECT_TRUE(env.observation_spec()->contains("position"));
  check_env_specs(env);
}

TEST(KeyedTransformTest, InPlaceByDefaultAndOutsideAnEnv) {
  Square square;
  auto td = square.forward(TensorDict({{"position", torch::tensor({-2.0f, 3.0f})}}, {}));
  EXPECT_TRUE(torch::equal(td.get("position"), torch::tensor({4.0f, 9.0f})));
  // A TensorDict without the in_key is left alone.
  auto other = square.forward(TensorDict({{"x", torch::ones({2})}}, {}));
  EXPECT_TRUE(torch::equal(other.get("x"), torch::ones({2})));
}

TEST(KeyedTransformTest, InverseKeysRenameTheActionForTheCaller) {
  auto base = continuous({2});
  TransformedEnv env(base, std::make_shared<Square>(
                               SquareOptions().in_keys_inv({"action"}).out_keys_inv({"act"})));
  EXPECT_EQ(env.action_spec()->shape(), (Shape{2, 2}));
  EXPECT_EQ(env.full_action_spec()->keys(), (Keys{"act"}));
  auto td = env.reset();
  td.set("act", torch::full({2, 2}, 0.5f));
  env.step(td);
  EXPECT_TRUE(torch::allclose(base->last_action, torch::full({2, 2}, 0.25f)));
  check_env_specs(env);
}

TEST(KeyedTransformTest, KeyCountsMustMatch) {
  EXPECT_THAT(
      [] {
        Square s(SquareOptions().out_keys({"a", "b"}));
      },
      ThrowsMessage<ValueError>(
          AllOf(HasSubstr("Square: 2 out_keys ['a', 'b'] for 1 in_keys ['position']"),
                HasSubstr("give one out_key per in_key"))));
  EXPECT_THAT(
      [] {
        Square s(SquareOptions().in_keys_inv({"action"}).out_keys_inv({"a", "b"}));
      },
      ThrowsMessage<ValueError>(HasSubstr("Square: 2 out_keys_inv ['a', 'b'] for 1 in_keys_inv")));
  EXPECT_THAT(
      [] { Square s(SquareOptions().in_keys({})); },
      ThrowsMessage<ValueError>(HasSubstr("Square: in_keys and in_keys_inv are both empty")));
}

TEST(KeyedTransformTest, NameIsTheOneGivenToItsConstructor) {
  EXPECT_EQ(Square().name(), "Square");
  EXPECT_EQ(RewardScaling().name(), "RewardScaling");
  EXPECT_EQ(RewardClipping(RewardClippingOptions().clamp_max(1.0)).name(), "RewardClipping");
  EXPECT_EQ(ClipTransform(ClipTransformOptions().low(0.0)).name(), "ClipTransform");
  EXPECT_EQ(ObservationNorm().name(), "ObservationNorm");
  EXPECT_EQ(VecNorm().name(), "VecNorm");
  EXPECT_EQ(UnsqueezeTransform(-1).name(), "UnsqueezeTransform");
}

TEST(KeyedTransformTest, PrintsOutAndInverseKeysOnlyWhenGiven) {
  EXPECT_EQ(Square().to_string(), "Square(in_keys=['position'])");
  EXPECT_EQ(Square(SquareOptions().out_keys({"sq"}).in_keys_inv({"action"})).to_string(),
            "Square(in_keys=['position'], out_keys=['sq'], in_keys_inv=['action'])");
}

// ---- The built-in transforms' keys ---------------------------------------------------------

TEST(TransformKeysTest, RewardScalingToANewKeyLeavesTheRewardAndItsSpec) {
  TransformedEnv env(continuous({3}), std::make_shared<RewardScaling>(
                                          RewardScalingOptions().out_keys({"scaled"}).scale(0.5)));
  auto td = env.reset();
  td.set("action", torch::full({3, 2}, 0.5f));
  env.step(td);
  EXPECT_TRUE(torch::allclose(td.get({"next", "scaled"}), td.get({"next", "reward"}) * 0.5));
  // The reward spec keeps its one leaf; the scaled copy is an observation.
  EXPECT_EQ(env.full_reward_spec()->keys(), (Keys{"reward"}));
  EXPECT_EQ(env.observation_spec()->get("scaled")->type_name(), "UnboundedContinuous");
  EXPECT_EQ(env.observation_spec()->get("scaled")->shape(), (Shape{3, 1}));
  check_env_specs(env);
  EXPECT_EQ(RewardScaling(RewardScalingOptions().out_keys({"scaled"}).scale(0.5)).to_string(),
            "RewardScaling(in_keys=['reward'], out_keys=['scaled'], loc=0, scale=0.5, "
            "standard_normal=false)");
}

TEST(TransformKeysTest, ClipTransformAndRewardClippingWriteOutKeys) {
  TransformedEnv env(
      continuous({2}),
      Compose::make(
          {std::make_shared<ClipTransform>(ClipTransformOptions()
                                               .in_keys({"position"})
                                               .out_keys({"clipped"})
                                               .low(-0.1)
                                               .high(0.1)),
           std::make_shared<RewardClipping>(
               RewardClippingOptions().out_keys({"r_clip"}).clamp_min(-0.01).clamp_max(0.01))}));
  env.set_seed(0);
  auto td = env.reset();
  EXPECT_TRUE(torch::equal(td.get("clipped"), td.get("position").clamp(-0.1, 0.1)));
  td.set("action", torch::full({2, 2}, 0.5f));
  env.step(td);
  EXPECT_TRUE(
      torch::equal(td.get({"next", "r_clip"}), td.get({"next", "reward"}).clamp(-0.01, 0.01)));
  EXPECT_EQ(env.observation_spec()->get("clipped")->type_name(), "BoundedContinuous");
  EXPECT_EQ(env.observation_spec()->get("r_clip")->type_name(), "BoundedContinuous");
  check_env_specs(env);
}

TEST(TransformKeysTest, VecNormOfTheRewardToANewKeyIsZeroAtReset) {
  // VecNorm has a reset of its own: the reward copy is written there too.
  TransformedEnv env(
      continuous({2}),
      std::make_shared<VecNorm>(VecNormOptions().in_keys({"reward"}).out_keys({"reward_norm"})));
  auto td = env.reset();
  EXPECT_TRUE(torch::equal(td.get("reward_norm"), torch::zeros({2, 1})));
  td.set("action", torch::full({2, 2}, 0.5f));
  env.step(td);
  EXPECT_TRUE(td.contains({"next", "reward_norm"}));
  check_env_specs(env);
}

TEST(TransformKeysTest, KeysATransformDoesNotTakeAreRefused) {
  EXPECT_THAT([] { RewardScaling r(RewardScalingOptions().in_keys_inv({"action"})); },
              ThrowsMessage<ValueError>(
                  AllOf(HasSubstr("RewardScaling: in_keys_inv is ['action']"),
                        HasSubstr("has no inverse; leave in_keys_inv and out_keys_inv empty"))));
  EXPECT_THAT([] { VecNorm v(VecNormOptions().in_keys_inv({"action"})); },
              ThrowsMessage<ValueError>(HasSubstr("VecNorm: in_keys_inv is ['action']")));
  EXPECT_THAT([] { RewardSum r(RewardSumOptions().out_keys_inv({"a"})); },
              ThrowsMessage<ValueError>(
                  AllOf(HasSubstr("RewardSum: in_keys_inv is []"), HasSubstr("has no inverse"))));
  EXPECT_THAT(
      [] { DoubleToFloat d(DoubleToFloatOptions().out_keys({"obs32"})); },
      ThrowsMessage<ValueError>(HasSubstr("DoubleToFloat casts in place; leave them empty")));
  EXPECT_THAT([] { RewardClipping r(RewardClippingOptions().in_keys({}).clamp_min(0)); },
              ThrowsMessage<ValueError>(HasSubstr("RewardClipping: in_keys is empty")));
}

TEST(TransformKeysTest, OptionsKeepTheirTypeAlongAChain) {
  // The keys come from the shared base; the chain still ends in the transform's own options.
  const auto options = VecNormOptions().in_keys({"observation"}).decay(0.5).out_keys({"o"});
  EXPECT_EQ(options.in_keys(), (Keys{"observation"}));
  EXPECT_EQ(options.out_keys(), (Keys{"o"}));
  EXPECT_EQ(options.decay(), 0.5);
  EXPECT_EQ(RewardSumOptions().out_keys(), (Keys{"episode_reward"}));
  EXPECT_EQ(ObservationNormOptions().in_keys(), (Keys{"observation"}));
}

}  // namespace
}  // namespace tdrl::envs
