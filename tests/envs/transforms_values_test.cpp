// The key and value transforms: CatTensors, RenameTransform, ExcludeTransform,
// SelectTransform, DoubleToFloat, ClipTransform, UnsqueezeTransform, ActionScaling.

#include <tdrl/envs/transforms/all.h>

#include <cfloat>
#include <memory>
#include <sstream>
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
using namespace tdrl::testing;  // the mock envs

// ---- CatTensors ----------------------------------------------------------------------------

TEST(CatTensorsTest, ConcatenatesSortedKeysAndDeletesThem) {
  TransformedEnv env(continuous({2}),
                     std::make_shared<CatTensors>(Keys{"position", "observation"}));
  auto td = env.reset();
  EXPECT_FALSE(td.contains("position"));
  EXPECT_FALSE(td.contains("observation"));
  ASSERT_EQ(td.get("observation_vector").sizes(), (Shape{2, 4}));
  td.set("action", torch::tensor({{1.0f, 2.0f}, {-1.0f, 0.0f}}));
  env.step(td);
  // Sorted: observation (the action echo) first, then position.
  EXPECT_TRUE(
      torch::equal(td.get({"next", "observation_vector"}).narrow(-1, 0, 2), td.get("action")));
  EXPECT_EQ(env.observation_spec()->keys(), (Keys{"observation_vector"}));
  EXPECT_EQ(env.observation_spec()->get("observation_vector")->shape(), (Shape{2, 4}));
  check_env_specs(env);
}

TEST(CatTensorsTest, KeepsTheGivenOrderAndKeysWhenAsked) {
  CatTensors cat(Keys{"b", "a"}, CatTensorsOptions().sort(false).del_keys(false).out_key("ab"));
  auto td = cat.forward(
      TensorDict({{"a", torch::tensor({{1.0f}})}, {"b", torch::tensor({{2.0f, 3.0f}})}}, {1}));
  EXPECT_TRUE(torch::equal(td.get("ab"), torch::tensor({{2.0f, 3.0f, 1.0f}})));
  EXPECT_TRUE(td.contains("a"));
  EXPECT_EQ(cat.in_keys(), (Keys{"b", "a"}));
}

TEST(CatTensorsTest, ConcatenatesBoundsOfBoundedSpecs) {
  TransformedEnv env(
      continuous(),
      Compose::make(
          {std::make_shared<ClipTransform>(
               ClipTransformOptions().in_keys({"observation", "position"}).low(-1).high(2)),
           std::make_shared<CatTensors>(Keys{"observation", "position"},
                                        CatTensorsOptions().out_key("obs"))}));
  const auto spec = std::dynamic_pointer_cast<specs::Bounded>(env.observation_spec()->get("obs"));
  ASSERT_NE(spec, nullptr);
  EXPECT_TRUE(torch::equal(spec->high(), torch::full({4}, 2.0f)));
  check_env_specs(env);
}

TEST(CatTensorsTest, PartlyMissingKeysThrowKeyError) {
  CatTensors cat(Keys{"a", "b"});
  auto none = cat.forward(TensorDict({{"c", torch::zeros({1})}}));
  EXPECT_TRUE(none.contains("c"));
  EXPECT_THAT(
      [&] {
        cat.forward(TensorDict({{"a", torch::zeros({1})}}));
      },
      ThrowsMessage<KeyError>(AllOf(HasSubstr("lacks ['b']"), HasSubstr("all of them"))));
}

TEST(CatTensorsTest, SpecErrorsNameKeysAndShapes) {
  EXPECT_THAT([] { CatTensors c(Keys{}); },
              ThrowsMessage<ValueError>(HasSubstr("in_keys is empty")));
  EXPECT_THAT([] { CatTensors c(Keys{"a"}, CatTensorsOptions().dim(0)); },
              ThrowsMessage<ValueError>(HasSubstr("dim is 0; it must be negative")));
  EXPECT_THAT(
      [] {
        TransformedEnv env(continuous(), std::make_shared<CatTensors>(Keys{"position", "postion"}));
      },
      ThrowsMessage<KeyError>(
          AllOf(HasSubstr("CatTensors: in_key 'postion'"), HasSubstr("['position'"))));
  EXPECT_THAT(
      [] {
        TransformedEnv env(
            std::make_shared<CountingEnv>(),
            Compose::make({std::make_shared<StepCounter>(),
                           std::make_shared<CatTensors>(Keys{"observation", "step_count"})}));
      },
      ThrowsMessage<TypeError>(HasSubstr("need one dtype")));
  EXPECT_THAT(
      [] {
        TransformedEnv env(
            continuous(),
            Compose::make({std::make_shared<UnsqueezeTransform>(
                               -1, UnsqueezeTransformOptions().in_keys({"position"})),
                           std::make_shared<CatTensors>(Keys{"observation", "position"})}));
      },
      ThrowsMessage<ShapeError>(HasSubstr("must be equal but along dim -1")));
}

// ---- RenameTransform -----------------------------------------------------------------------

TEST(RenameTransformTest, RenamesObservationsOnResetAndStep) {
  TransformedEnv env(
      continuous({2}),
      std::make_shared<RenameTransform>(
          RenameTransformOptions().in_keys({"position"}).out_keys({{"state", "pos"}})));
  auto td = env.reset();
  EXPECT_FALSE(td.contains("position"));
  EXPECT_EQ(td.get({"state", "pos"}).sizes(), (Shape{2, 2}));
  EXPECT_TRUE(env.observation_spec()->contains({"state", "pos"}));
  check_env_specs(env);
}

TEST(RenameTransformTest, SwapsTwoKeys) {
  RenameTransform swap(RenameTransformOptions().in_keys({"a", "b"}).out_keys({"b", "a"}));
  auto td = swap.forward(TensorDict({{"a", torch::zeros({1})}, {"b", torch::ones({1})}}));
  EXPECT_EQ(td.get("a").item<float>(), 1.0f);
  EXPECT_EQ(td.get("b").item<float>(), 0.0f);
}

TEST(RenameTransformTest, RenamingTheRewardAndTheActionRenamesTheEnvKeys) {
  auto base = continuous();
  TransformedEnv env(base, std::make_shared<RenameTransform>(RenameTransformOptions()
                                                                 .in_keys({"reward"})
                                                                 .out_keys({"rew"})
                                                                 .in_keys_inv({"action"})
                                                                 .out_keys_inv({"act"})));
  EXPECT_EQ(env.reward_key(), NestedKey("rew"));
  EXPECT_EQ(env.action_key(), NestedKey("act"));
  auto td = env.reset();
  td.set("act", torch::tensor({0.25f, -0.5f}));
  env.step(td);
  EXPECT_TRUE(torch::equal(base->last_action, torch::tensor({0.25f, -0.5f})));
  EXPECT_TRUE(td.contains({"next", "rew"}));
  EXPECT_FALSE(td.contains({"next", "reward"}));
  check_env_specs(env);
  const auto data = env.rollout(3);
  EXPECT_TRUE(data.contains("act"));
}

TEST(RenameTransformTest, CreateCopyKeepsTheOldEntry) {
  TransformedEnv env(
      continuous(),
      std::make_shared<RenameTransform>(
          RenameTransformOptions().in_keys({"position"}).out_keys({"pos"}).create_copy(true)));
  auto td = env.reset();
  EXPECT_TRUE(torch::equal(td.get("pos"), td.get("position")));
  EXPECT_TRUE(env.observation_spec()->contains("position"));
  check_env_specs(env);
}

TEST(RenameTransformTest, BadKeysThrow) {
  EXPECT_THAT([] { RenameTransform r(RenameTransformOptions().in_keys({"a"})); },
              ThrowsMessage<ValueError>(HasSubstr("give one out_key per in_key")));
  EXPECT_THAT([] { RenameTransform r{RenameTransformOptions()}; },
              ThrowsMessage<ValueError>(HasSubstr("no keys to rename")));
  EXPECT_THAT([] { RenameTransform r(RenameTransformOptions().in_keys({"done"}).out_keys({"d"})); },
              ThrowsMessage<ValueError>(HasSubstr("'done' is a done flag")));
  EXPECT_THAT(
      [] {
        TransformedEnv env(continuous(),
                           std::make_shared<RenameTransform>(
                               RenameTransformOptions().in_keys({"pos"}).out_keys({"p"})));
      },
      ThrowsMessage<KeyError>(HasSubstr("RenameTransform: in_key 'pos' is not in")));
  EXPECT_THAT(
      [] {
        TransformedEnv env(continuous(),
                           std::make_shared<RenameTransform>(
                               RenameTransformOptions().in_keys_inv({"act"}).out_keys_inv({"a"})));
      },
      ThrowsMessage<KeyError>(AllOf(HasSubstr("in_key_inv 'act' is not in the action or state"),
                                    HasSubstr("'action'"))));
}

// ---- ExcludeTransform ----------------------------------------------------------------------

TEST(ExcludeTransformTest, RemovesKeysFromOutputsAndSpec) {
  TransformedEnv env(continuous({3}), std::make_shared<ExcludeTransform>(Keys{"position"}));
  auto td = env.reset();
  EXPECT_FALSE(td.contains("position"));
  td.set("action", torch::zeros({3, 2}));
  env.step(td);
  EXPECT_FALSE(td.contains({"next", "position"}));
  EXPECT_TRUE(td.contains({"next", "observation"}));
  EXPECT_EQ(env.observation_spec()->keys(), (Keys{"observation"}));
  check_env_specs(env);
}

TEST(ExcludeTransformTest, RewardFlagsAndUnknownKeysAreRejected) {
  EXPECT_THAT([] { ExcludeTransform e(Keys{}); },
              ThrowsMessage<ValueError>(HasSubstr("excluded_keys is empty")));
  EXPECT_THAT(
      [] { TransformedEnv env(continuous(), std::make_shared<ExcludeTransform>(Keys{"reward"})); },
      ThrowsMessage<ValueError>(HasSubstr("cannot exclude the reward")));
  EXPECT_THAT(
      [] { TransformedEnv env(continuous(), std::make_shared<ExcludeTransform>(Keys{"done"})); },
      ThrowsMessage<ValueError>(HasSubstr("is a done flag")));
  EXPECT_THAT(
      [] { TransformedEnv env(continuous(), std::make_shared<ExcludeTransform>(Keys{"pixels"})); },
      ThrowsMessage<KeyError>(HasSubstr("excluded key 'pixels' is not in the observation spec")));
}

// ---- SelectTransform -----------------------------------------------------------------------

TEST(SelectTransformTest, KeepsSelectedKeysRewardAndFlags) {
  TransformedEnv env(continuous({2}),
                     Compose::make({std::make_shared<StepCounter>(),
                                    std::make_shared<SelectTransform>(Keys{"position"})}));
  auto td = env.reset();
  EXPECT_FALSE(td.contains("observation"));
  EXPECT_FALSE(td.contains("step_count"));
  EXPECT_TRUE(td.contains("position"));
  EXPECT_TRUE(td.contains("done"));
  td.set("action", torch::zeros({2, 2}));
  env.step(td);
  EXPECT_EQ(td.get_tensordict("next").keys(),
            (Keys{"position", "reward", "done", "terminated", "truncated"}));
  EXPECT_EQ(env.observation_spec()->keys(), (Keys{"position"}));
  check_env_specs(env);
}

TEST(SelectTransformTest, UnknownKeyThrowsKeyError) {
  EXPECT_THAT(
      [] { TransformedEnv env(continuous(), std::make_shared<SelectTransform>(Keys{"velocity"})); },
      ThrowsMessage<KeyError>(HasSubstr("selected key 'velocity' is not in the observation")));
}

// ---- DoubleToFloat -------------------------------------------------------------------------

TEST(DoubleToFloatTest, CastsOutputsAndSpecsToFloat32AndActionsBack) {
  auto base = std::make_shared<Float64Env>(Shape{2});
  TransformedEnv env(base, std::make_shared<DoubleToFloat>());
  EXPECT_EQ(env.observation_spec()->get("observation")->dtype(), torch::kFloat32);
  EXPECT_EQ(env.reward_spec()->dtype(), torch::kFloat32);
  EXPECT_EQ(env.action_spec()->dtype(), torch::kFloat32);
  EXPECT_EQ(env.action_spec()->type_name(), "BoundedContinuous");
  auto td = env.reset();
  EXPECT_EQ(td.get("observation").scalar_type(), torch::kFloat32);
  td.set("action", torch::full({2, 2}, 0.5f));
  env.step(td);
  EXPECT_EQ(base->last_action.scalar_type(), torch::kFloat64);
  EXPECT_EQ(td.get({"next", "reward"}).scalar_type(), torch::kFloat32);
  EXPECT_EQ(td.get("action").scalar_type(), torch::kFloat32);
  check_env_specs(env);
}

TEST(DoubleToFloatTest, ExplicitKeysMustBeFloat64AndPresent) {
  EXPECT_THAT(
      [] {
        TransformedEnv env(continuous(), std::make_shared<DoubleToFloat>(
                                             DoubleToFloatOptions().in_keys({"position"})));
      },
      ThrowsMessage<TypeError>(HasSubstr("'position' has dtype torch.float32, not torch.float64")));
  EXPECT_THAT(
      [] {
        TransformedEnv env(
            std::make_shared<Float64Env>(),
            std::make_shared<DoubleToFloat>(DoubleToFloatOptions().in_keys({"obs"})));
      },
      ThrowsMessage<KeyError>(HasSubstr("DoubleToFloat: in_key 'obs'")));
}

TEST(DoubleToFloatTest, SpecsItCannotCastLeaveTheInputsItCastsBackAsTheyWere) {
  Float64Env base;
  DoubleToFloat cast(DoubleToFloatOptions().in_keys_inv({"action"}));
  const EnvSpecs good = EnvSpecs::of(base);
  cast.transform_specs(good);
  // The same specs with a float32 action: the explicit in_key_inv cannot be cast.
  EnvSpecs bad = good.clone();
  bad.action->set("action", std::make_shared<specs::Unbounded>(
                                Shape{2}, specs::UnboundedOptions().dtype(torch::kFloat32)));
  EXPECT_THAT([&] { cast.transform_specs(bad); },
              ThrowsMessage<TypeError>(HasSubstr("'action' has dtype torch.float32")));
  // inv still casts the action back to float64, as the last successful specs said.
  const auto td = cast.inv(TensorDict({{"action", torch::zeros({2})}}));
  EXPECT_EQ(td.get("action").scalar_type(), torch::kFloat64);
}

TEST(DoubleToFloatTest, ForwardCastsEveryFloat64Leaf) {
  DoubleToFloat cast;
  auto td = cast.forward(TensorDict(
      {{"a", torch::zeros({2}, torch::kFloat64)}, {"b", torch::zeros({2}, torch::kLong)}}));
  EXPECT_EQ(td.get("a").scalar_type(), torch::kFloat32);
  EXPECT_EQ(td.get("b").scalar_type(), torch::kLong);
}

// ---- ClipTransform -------------------------------------------------------------------------

TEST(ClipTransformTest, ClipsObservationsAndBoundsTheirSpec) {
  TransformedEnv env(continuous({2}),
                     std::make_shared<ClipTransform>(
                         ClipTransformOptions().in_keys({"position"}).low(-0.5).high(0.5)));
  env.set_seed(0);
  auto td = env.reset();
  EXPECT_LE(td.get("position").abs().max().item<float>(), 0.5f);
  const auto spec =
      std::dynamic_pointer_cast<specs::Bounded>(env.observation_spec()->get("position"));
  ASSERT_NE(spec, nullptr);
  EXPECT_TRUE(torch::equal(spec->low(), torch::full({2, 2}, -0.5f)));
  check_env_specs(env);
}

TEST(ClipTransformTest, AMissingBoundIsTheDtypesExtreme) {
  TransformedEnv env(continuous(), std::make_shared<ClipTransform>(
                                       ClipTransformOptions().in_keys({"reward"}).high(-0.5)));
  const auto spec = std::dynamic_pointer_cast<specs::Bounded>(env.reward_spec());
  ASSERT_NE(spec, nullptr);
  EXPECT_EQ(spec->low().item<float>(), -FLT_MAX);
  EXPECT_EQ(spec->high().item<float>(), -0.5f);
  check_env_specs(env);
}

TEST(ClipTransformTest, BadOptionsAndKeysThrow) {
  EXPECT_THAT([] { ClipTransform c{ClipTransformOptions()}; },
              ThrowsMessage<ValueError>(HasSubstr("neither low nor high")));
  EXPECT_THAT([] { ClipTransform c(ClipTransformOptions().low(1).high(0)); },
              ThrowsMessage<ValueError>(HasSubstr("low 1 > high 0")));
  EXPECT_THAT([] { ClipTransform c(ClipTransformOptions().low(INFINITY)); },
              ThrowsMessage<ValueError>(HasSubstr("low is inf; it must be finite")));
  EXPECT_THAT(
      [] {
        TransformedEnv env(
            std::make_shared<CountingEnv>(),
            Compose::make({std::make_shared<StepCounter>(),
                           std::make_shared<ClipTransform>(
                               ClipTransformOptions().in_keys({"step_count"}).low(0))}));
      },
      ThrowsMessage<TypeError>(HasSubstr("ClipTransform: 'step_count' has dtype torch.int64")));
}

// ---- UnsqueezeTransform --------------------------------------------------------------------

TEST(UnsqueezeTransformTest, InsertsADimCountedFromTheEnd) {
  TransformedEnv last(continuous({3}), std::make_shared<UnsqueezeTransform>(-1));
  EXPECT_EQ(last.reset().get("observation").sizes(), (Shape{3, 2, 1}));
  EXPECT_EQ(last.observation_spec()->get("observation")->shape(), (Shape{3, 2, 1}));
  check_env_specs(last);

  TransformedEnv first(continuous({3}), std::make_shared<UnsqueezeTransform>(
                                            -2, UnsqueezeTransformOptions().out_keys({"obs"})));
  auto td = first.reset();
  EXPECT_EQ(td.get("obs").sizes(), (Shape{3, 1, 2}));
  EXPECT_EQ(td.get("observation").sizes(), (Shape{3, 2}));
  check_env_specs(first);
}

TEST(UnsqueezeTransformTest, InverseSqueezesTheAction) {
  auto base = continuous({2});
  TransformedEnv env(base,
                     std::make_shared<UnsqueezeTransform>(
                         -2, UnsqueezeTransformOptions().in_keys({}).in_keys_inv({"action"})));
  const auto spec = std::dynamic_pointer_cast<specs::Bounded>(env.action_spec());
  ASSERT_NE(spec, nullptr);
  EXPECT_EQ(spec->shape(), (Shape{2, 1, 2}));
  auto td = env.reset();
  td.set("action", torch::full({2, 1, 2}, 0.5f));
  env.step(td);
  EXPECT_EQ(base->last_action.sizes(), (Shape{2, 2}));
  check_env_specs(env);
}

TEST(UnsqueezeTransformTest, UnsqueezesBinaryFlags) {
  TransformedEnv env(std::make_shared<CountingEnv>(Shape{2}),
                     Compose::make({std::make_shared<InitTracker>(),
                                    std::make_shared<UnsqueezeTransform>(
                                        -1, UnsqueezeTransformOptions().in_keys({"is_init"}))}));
  EXPECT_EQ(env.observation_spec()->get("is_init")->shape(), (Shape{2, 1, 1}));
  EXPECT_EQ(env.observation_spec()->get("is_init")->type_name(), "Binary");
  check_env_specs(env);
}

TEST(UnsqueezeTransformTest, BadDimsThrowValueError) {
  EXPECT_THAT([] { UnsqueezeTransform u(0); },
              ThrowsMessage<ValueError>(HasSubstr("dim is 0; it must be negative")));
  EXPECT_THAT([] { TransformedEnv env(continuous({3}), std::make_shared<UnsqueezeTransform>(-4)); },
              ThrowsMessage<ValueError>(AllOf(HasSubstr("among the batch dims [3]"),
                                              HasSubstr("use a dim in [-2, -1]"))));
}

// ---- ActionScaling -------------------------------------------------------------------------

TEST(ActionScalingTest, MapsUnitActionsToTheEnvBounds) {
  auto base = continuous({3});
  TransformedEnv env(base, std::make_shared<ActionScaling>());
  const auto spec = std::dynamic_pointer_cast<specs::Bounded>(env.action_spec());
  ASSERT_NE(spec, nullptr);
  EXPECT_TRUE(torch::equal(spec->low(), torch::full({3, 2}, -1.0f)));
  EXPECT_TRUE(torch::equal(spec->high(), torch::full({3, 2}, 1.0f)));
  auto td = env.reset();
  const auto action = torch::tensor({{-1.0f, -1.0f}, {0.0f, 0.0f}, {1.0f, 1.0f}});
  td.set("action", action);
  env.step(td);
  // Bounds [-1, 1] and [-2, 3].
  EXPECT_TRUE(torch::allclose(base->last_action,
                              torch::tensor({{-1.0f, -2.0f}, {0.0f, 0.5f}, {1.0f, 3.0f}})));
  EXPECT_TRUE(torch::equal(td.get("action"), action));
  check_env_specs(env);
}

TEST(ActionScalingTest, RejectsNonBoundedActionsAndUseOutsideAnEnv) {
  EXPECT_THAT(
      [] {
        TransformedEnv env(std::make_shared<CountingEnv>(), std::make_shared<ActionScaling>());
      },
      ThrowsMessage<TypeError>(
          AllOf(HasSubstr("'action' has a Categorical spec"), HasSubstr("floating Bounded"))));
  ActionScaling detached;
  EXPECT_THAT(
      [&] {
        detached.inv(TensorDict({{"action", torch::zeros({2})}}));
      },
      ThrowsMessage<tensordict::Error>(HasSubstr("use it inside a TransformedEnv")));
}

TEST(TransformPrintingTest, TransformsPrintTheirOptions) {
  EXPECT_EQ(ActionScaling(ActionScalingOptions().action_key("act")).to_string(),
            "ActionScaling(action_key='act')");
  EXPECT_EQ(ObservationNorm(ObservationNormOptions().loc(0.0).scale(2.0)).to_string(),
            "ObservationNorm(in_keys=['observation'], out_keys=['observation'], "
            "standard_normal=false, initialized=true)");
  EXPECT_EQ(VecNorm().to_string(),
            "VecNorm(in_keys=['observation', 'reward'], decay=0.9999, eps=0.0001, frozen=false)");
  EXPECT_EQ(CatTensors(Keys{"b", "a"}).to_string(),
            "CatTensors(in_keys=['a', 'b'], out_key='observation_vector', dim=-1, "
            "del_keys=true)");
  EXPECT_EQ(
      RenameTransform(RenameTransformOptions().in_keys({{"x", "y"}}).out_keys({"z"})).to_string(),
      "RenameTransform(in_keys=[('x', 'y')], out_keys=['z'], create_copy=false)");
  EXPECT_EQ(ClipTransform(ClipTransformOptions().low(-1.5)).to_string(),
            "ClipTransform(in_keys=['observation'], low=-1.5, high=None)");
  EXPECT_EQ(DoubleToFloat().to_string(),
            "DoubleToFloat(in_keys=all float64, in_keys_inv=all float64)");
  EXPECT_EQ(RewardClipping(RewardClippingOptions().clamp_max(2)).to_string(),
            "RewardClipping(in_keys=['reward'], clamp_min=None, clamp_max=2)");
  EXPECT_EQ(UnsqueezeTransform(-2).to_string(),
            "UnsqueezeTransform(dim=-2, in_keys=['observation'], out_keys=['observation'])");
  EXPECT_EQ(printed(ExcludeTransform(Keys{"a"})), "ExcludeTransform(excluded_keys=['a'])");
  EXPECT_EQ(printed(SelectTransform(Keys{"b"})), "SelectTransform(selected_keys=['b'])");
}

}  // namespace
}  // namespace tdrl::envs
