// TransformedEnv, Compose, and the normalization, reward and episode transforms:
// forward on reset and step, specs, rollouts checked with check_env_specs, errors.

#include <tdrl/envs/pendulum.h>
#include <tdrl/envs/transforms/all.h>

#include <cmath>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <tensordict/errors.h>

#include "support/env_checks.h"
#include "support/mock_envs.h"
#include "support/test_names.h"

namespace tdrl::envs {
namespace {

using namespace tdrl::testing::names;
using namespace tdrl::testing;  // the mock envs

// Steps `env` from `td` with `action` `n` times (step_mdp in between); returns the last
// stepped TensorDict.
TensorDict step_n(EnvBase& env, TensorDict td, const torch::Tensor& action, int n) {
  TensorDict stepped;
  for (int i = 0; i < n; ++i) {
    td.set(env.action_key(), action);
    stepped = env.step(td);
    td = step_mdp(stepped, StepMdpOptions().action_key(env.action_key()));
  }
  return stepped;
}

torch::Tensor counting_action(const Shape& batch) {
  auto shape = batch;
  shape.push_back(1);
  return torch::zeros(shape, torch::kLong);
}

// A transform that records its calls into a shared log.
class Recorder : public Transform {
 public:
  Recorder(std::string tag, std::shared_ptr<std::vector<std::string>> log)
      : tag_(std::move(tag)), log_(std::move(log)) {}
  std::string name() const override { return "Recorder"; }
  TensorDict inv(TensorDict td) override {
    log_->push_back("inv " + tag_);
    return td;
  }

 protected:
  TensorDict call(TensorDict td) override {
    log_->push_back("call " + tag_);
    return td;
  }

 private:
  std::string tag_;
  std::shared_ptr<std::vector<std::string>> log_;
};

// ---- TransformedEnv ------------------------------------------------------------------------

TEST(TransformedEnvTest, NullEnvThrowsValueError) {
  EXPECT_THAT([] { TransformedEnv env(nullptr); },
              ThrowsMessage<ValueError>(HasSubstr("the env is null")));
}

TEST(TransformedEnvTest, EmptyTransformGivesTheBaseEnvsOutputs) {
  auto base = std::make_shared<ContinuousEnv>(Shape{2});
  TransformedEnv env(base);
  EXPECT_EQ(env.name(), "TransformedEnv(ContinuousEnv)");
  EXPECT_EQ(*env.observation_spec(), *base->observation_spec());
  EXPECT_EQ(*env.action_spec(), *base->action_spec());
  EXPECT_EQ(env.batch_size(), (Shape{2}));
  check_env_specs(env);

  ContinuousEnv reference(Shape{2});
  env.set_seed(3);
  reference.set_seed(3);
  const auto a = env.reset();
  const auto b = reference.reset();
  EXPECT_TRUE(torch::equal(a.get("position"), b.get("position")));
}

TEST(TransformedEnvTest, WrapsASingleTransformInACompose) {
  auto counter = std::make_shared<StepCounter>();
  TransformedEnv env(std::make_shared<CountingEnv>(), counter);
  ASSERT_EQ(env.transform().size(), 1);
  EXPECT_EQ(env.transform()[0], counter);
  EXPECT_EQ(counter->parent(), &env);
  EXPECT_EQ(env.transform().parent(), &env);
}

TEST(TransformedEnvTest, TransformOfAnotherEnvIsRejected) {
  auto counter = std::make_shared<StepCounter>();
  TransformedEnv first(std::make_shared<CountingEnv>(), counter);
  EXPECT_THAT([&] { TransformedEnv second(std::make_shared<CountingEnv>(), counter); },
              ThrowsMessage<ValueError>(HasSubstr("already belongs to another")));
  EXPECT_EQ(counter->parent(), &first);
}

TEST(TransformedEnvTest, DestroyingTheEnvReleasesItsTransforms) {
  auto counter = std::make_shared<StepCounter>();
  { TransformedEnv env(std::make_shared<CountingEnv>(), counter); }
  EXPECT_EQ(counter->parent(), nullptr);
  TransformedEnv again(std::make_shared<CountingEnv>(), counter);
  EXPECT_EQ(counter->parent(), &again);
}

TEST(TransformedEnvTest, SameSeedSameRollout) {
  auto make = [] {
    return std::make_shared<TransformedEnv>(
        std::make_shared<ContinuousEnv>(Shape{3}),
        Compose::make({std::make_shared<ActionScaling>(), std::make_shared<RewardSum>(),
                       std::make_shared<StepCounter>(StepCounterOptions().max_steps(4)),
                       std::make_shared<VecNorm>(VecNormOptions().in_keys({"position"}))}));
  };
  auto a = make();
  auto b = make();
  a->set_seed(7);
  b->set_seed(7);
  const auto ra = a->rollout(10, nullptr, RolloutOptions().break_when_any_done(false));
  const auto rb = b->rollout(10, nullptr, RolloutOptions().break_when_any_done(false));
  EXPECT_TRUE((ra == rb).all());
  EXPECT_EQ(ra.batch_size(), (Shape{3, 10}));
}

TEST(TransformedEnvTest, SetSeedReturnsTheNextSeedAfterBaseAndOwnGenerator) {
  TransformedEnv env(std::make_shared<CountingEnv>());
  EXPECT_EQ(env.set_seed(10), 12u);
}

TEST(TransformedEnvTest, NestedTransformedEnvsApplyBothLayers) {
  auto inner = std::make_shared<TransformedEnv>(
      std::make_shared<CountingEnv>(),
      std::make_shared<RewardScaling>(RewardScalingOptions().scale(2)));
  TransformedEnv outer(inner, std::make_shared<RewardScaling>(RewardScalingOptions().loc(1)));
  auto td = step_n(outer, outer.reset(), counting_action({}), 1);
  EXPECT_FLOAT_EQ(td.get({"next", "reward"}).item<float>(), 3.0f);
  check_env_specs(outer);
}

TEST(TransformedEnvTest, PrintsTheEnvAndTheTransforms) {
  TransformedEnv env(
      std::make_shared<CountingEnv>(),
      Compose::make({std::make_shared<StepCounter>(StepCounterOptions().max_steps(3)),
                     std::make_shared<RewardSum>()}));
  EXPECT_EQ(env.to_string(),
            "TransformedEnv(\n"
            "    env=CountingEnv(batch_size=[], device=cpu),\n"
            "    transform=Compose(\n"
            "        StepCounter(step_count_key='step_count', max_steps=3, "
            "truncated_key='truncated', update_done=true),\n"
            "        RewardSum(in_keys=['reward'], out_keys=['episode_reward'])))");
}

TEST(TransformedEnvTest, EnvBeforeIsTheBaseEnvForTheFirstTransform) {
  auto base = std::make_shared<CountingEnv>();
  auto first = std::make_shared<StepCounter>();
  auto second = std::make_shared<RewardSum>();
  TransformedEnv env(base, Compose::make({first, second}));
  EXPECT_EQ(env.env_before(*first), base);
  auto before_second = env.env_before(*second);
  EXPECT_NE(before_second, base);
  EXPECT_TRUE(before_second->observation_spec()->contains("step_count"));
  EXPECT_FALSE(before_second->observation_spec()->contains("episode_reward"));
  // The view shares the transforms without taking them.
  before_second.reset();
  EXPECT_EQ(first->parent(), &env);
  StepCounter stranger;
  EXPECT_THAT([&] { env.env_before(stranger); },
              ThrowsMessage<ValueError>(HasSubstr("is not one of this env's transforms")));
}

TEST(TransformedEnvTest, StepAndMaybeResetResetsDoneSubEnvsThroughTheTransforms) {
  TransformedEnv env(std::make_shared<CountingEnv>(Shape{2}, 2), std::make_shared<StepCounter>());
  auto td = env.reset();
  for (int i = 0; i < 2; ++i) {
    td.set("action", counting_action({2}));
    auto [stepped, next] = env.step_and_maybe_reset(td);
    td = next;
  }
  EXPECT_TRUE(torch::equal(td.get("step_count"), torch::zeros({2, 1}, torch::kLong)));
  EXPECT_TRUE(torch::equal(td.get("observation"), torch::zeros({2, 1})));
}

TEST(TransformedEnvTest, ComposesOnAClassicControlTask) {
  TransformedEnv env(
      std::make_shared<PendulumEnv>(PendulumEnvOptions().batch_size({4})),
      Compose::make({std::make_shared<ActionScaling>(),
                     std::make_shared<StepCounter>(StepCounterOptions().max_steps(5)),
                     std::make_shared<RewardSum>(), std::make_shared<InitTracker>(),
                     std::make_shared<VecNorm>(VecNormOptions().in_keys({"observation"}))}));
  check_env_specs(env);
  env.set_seed(0);
  const auto data = env.rollout(12, nullptr, RolloutOptions().break_when_any_done(false));
  EXPECT_EQ(data.batch_size(), (Shape{4, 12}));
  const auto truncated = data.get({"next", "truncated"}).squeeze(-1);
  // Truncated at steps 5 and 10 (indices 4 and 9) in every sub-env, and only there.
  EXPECT_EQ(truncated.sum().item<int64_t>(), 8);
  EXPECT_TRUE(truncated.select(1, 4).all().item<bool>());
  EXPECT_TRUE(truncated.select(1, 9).all().item<bool>());
  EXPECT_TRUE(data.get("is_init").squeeze(-1).select(1, 5).all().item<bool>());
}

// ---- Compose -------------------------------------------------------------------------------

TEST(ComposeTest, AppendAndInsertPlaceTransforms) {
  auto a = std::make_shared<StepCounter>();
  auto b = std::make_shared<RewardSum>();
  auto c = std::make_shared<InitTracker>();
  auto d = std::make_shared<FrameSkipTransform>(2);
  Compose compose({a});
  compose.append(b);
  compose.insert(0, c);
  compose.insert(-1, d);
  ASSERT_EQ(compose.size(), 4);
  EXPECT_EQ(compose[0], c);
  EXPECT_EQ(compose[1], a);
  EXPECT_EQ(compose[2], d);
  EXPECT_EQ(compose[3], b);
  EXPECT_EQ(compose[-1], b);
  EXPECT_EQ(compose[-4], c);
}

TEST(ComposeTest, IndexOutOfRangeThrowsIndexError) {
  Compose compose({std::make_shared<StepCounter>()});
  EXPECT_THAT([&] { compose[1]; },
              ThrowsMessage<IndexError>(AllOf(HasSubstr("Compose[1]"), HasSubstr("[-1, 0]"))));
  EXPECT_THROW(compose[-2], IndexError);
  EXPECT_THAT([&] { compose.insert(3, std::make_shared<RewardSum>()); },
              ThrowsMessage<IndexError>(HasSubstr("valid: [-1, 1]")));
  EXPECT_EQ(compose.size(), 1);
}

TEST(ComposeTest, AppendRejectsNullSelfAndOwnedTransforms) {
  auto compose = Compose::make();
  EXPECT_THAT([&] { compose->append(nullptr); },
              ThrowsMessage<ValueError>(HasSubstr("the transform is null")));
  EXPECT_THAT([&] { compose->append(compose); },
              ThrowsMessage<ValueError>(HasSubstr("cannot add a Compose to itself")));
  auto counter = std::make_shared<StepCounter>();
  Compose other({counter});
  EXPECT_THAT([&] { compose->append(counter); },
              ThrowsMessage<ValueError>(HasSubstr("StepCounter already belongs")));
  EXPECT_TRUE(compose->empty());
}

TEST(ComposeTest, ForwardHooksRunInOrderAndInversesInReverse) {
  auto log = std::make_shared<std::vector<std::string>>();
  TransformedEnv env(std::make_shared<CountingEnv>(),
                     Compose::make({std::make_shared<Recorder>("a", log),
                                    Compose::make({std::make_shared<Recorder>("b", log),
                                                   std::make_shared<Recorder>("c", log)})}));
  auto td = env.reset();
  EXPECT_EQ(*log, (std::vector<std::string>{"call a", "call b", "call c"}));
  log->clear();
  step_n(env, td, counting_action({}), 1);
  EXPECT_EQ(*log,
            (std::vector<std::string>{"inv c", "inv b", "inv a", "call a", "call b", "call c"}));
}

TEST(ComposeTest, AppendingToAnEnvsComposeRefreshesItsSpecs) {
  TransformedEnv env(std::make_shared<CountingEnv>());
  EXPECT_FALSE(env.observation_spec()->contains("step_count"));
  env.transform().append(std::make_shared<StepCounter>());
  EXPECT_TRUE(env.observation_spec()->contains("step_count"));
  env.append_transform(std::make_shared<InitTracker>());
  EXPECT_TRUE(env.observation_spec()->contains("is_init"));
  env.insert_transform(0, std::make_shared<RewardSum>());
  EXPECT_EQ(env.transform()[0]->name(), "RewardSum");
  check_env_specs(env);
}

TEST(ComposeTest, FailedAppendLeavesComposeAndSpecsUnchanged) {
  TransformedEnv env(std::make_shared<CountingEnv>(), std::make_shared<StepCounter>());
  auto bad = std::make_shared<ObservationNorm>(
      ObservationNormOptions().loc(0.0).scale(1.0).in_keys({"obsrvation"}));
  EXPECT_THAT([&] { env.append_transform(bad); },
              ThrowsMessage<KeyError>(AllOf(HasSubstr("ObservationNorm: in_key 'obsrvation'"),
                                            HasSubstr("'observation'"))));
  EXPECT_EQ(env.transform().size(), 1);
  EXPECT_EQ(bad->parent(), nullptr);
  EXPECT_EQ(env.observation_spec()->keys().size(), 2u);
  Compose elsewhere({bad});  // released: usable again
  EXPECT_EQ(elsewhere.size(), 1);
}

TEST(ComposeTest, FailedInsertRestoresWhatLaterTransformsSawOfTheSpecs) {
  auto base = std::make_shared<ContinuousEnv>();
  TransformedEnv env(base, Compose::make({std::make_shared<ActionScaling>(),
                                          std::make_shared<ObservationNorm>(
                                              ObservationNormOptions().loc(0.0).scale(1.0))}));
  // ActionScaling sees the renamed action "act" before ObservationNorm fails.
  auto rename = std::make_shared<RenameTransform>(RenameTransformOptions()
                                                      .in_keys({"observation"})
                                                      .out_keys({"obs"})
                                                      .in_keys_inv({"action"})
                                                      .out_keys_inv({"act"}));
  EXPECT_THROW(env.insert_transform(0, rename), KeyError);
  EXPECT_EQ(env.action_key(), NestedKey("action"));
  auto td = env.reset();
  td.set("action", torch::tensor({1.0f, 1.0f}));
  env.step(td);
  EXPECT_TRUE(torch::equal(base->last_action, torch::tensor({1.0f, 3.0f})));
}

TEST(ComposeTest, StateDictHoldsTheStatesOfStatefulChildren) {
  auto norm = std::make_shared<VecNorm>(VecNormOptions().in_keys({"observation"}));
  TransformedEnv env(std::make_shared<CountingEnv>(Shape{2}),
                     Compose::make({std::make_shared<StepCounter>(), norm}));
  env.reset();
  const auto state = env.transform().state_dict();
  EXPECT_EQ(state.keys(), (Keys{"1"}));
  EXPECT_TRUE(state.contains({"1", "observation", "count"}));

  auto fresh = std::make_shared<VecNorm>(VecNormOptions().in_keys({"observation"}));
  Compose copy({std::make_shared<StepCounter>(), fresh});
  copy.load_state_dict(state);
  EXPECT_TRUE((fresh->state_dict() == norm->state_dict()).all());
  TensorDict unknown({{"5", TensorDict({{"x", torch::zeros({1})}})}});
  EXPECT_THAT([&] { copy.load_state_dict(unknown); },
              ThrowsMessage<KeyError>(HasSubstr("entry '5' names no transform")));
}

TEST(ComposeTest, PrintsItsChildren) {
  Compose compose({std::make_shared<FrameSkipTransform>(2), std::make_shared<InitTracker>()});
  EXPECT_EQ(
      compose.to_string(),
      "Compose(\n    FrameSkipTransform(frame_skip=2),\n    InitTracker(init_key='is_init'))");
  EXPECT_EQ(Compose().to_string(), "Compose()");
}

TEST(TransformTest, StatelessTransformRejectsANonEmptyState) {
  StepCounter counter;
  EXPECT_TRUE(counter.state_dict().is_empty());
  counter.load_state_dict(TensorDict());
  EXPECT_THAT(
      [&] {
        counter.load_state_dict(TensorDict({{"x", torch::zeros({1})}}));
      },
      ThrowsMessage<ValueError>(HasSubstr("StepCounter has no state")));
}

// ---- ObservationNorm -----------------------------------------------------------------------

TEST(ObservationNormTest, FixedLocAndScaleMapResetAndStepOutputs) {
  TransformedEnv env(
      std::make_shared<CountingEnv>(),
      std::make_shared<ObservationNorm>(ObservationNormOptions().loc(1.0).scale(2.0)));
  auto td = env.reset();
  EXPECT_FLOAT_EQ(td.get("observation").item<float>(), 1.0f);  // 0 * 2 + 1
  auto stepped = step_n(env, td, counting_action({}), 2);
  EXPECT_FLOAT_EQ(stepped.get({"next", "observation"}).item<float>(), 5.0f);  // 2 * 2 + 1
  check_env_specs(env);
}

TEST(ObservationNormTest, StandardNormalSubtractsLocAndDividesByScale) {
  ObservationNorm norm(
      ObservationNormOptions().loc(1.0).scale(4.0).standard_normal(true).out_keys({"normalized"}));
  auto td = norm.forward(TensorDict({{"observation", torch::tensor({{9.0f}})}}, {1}));
  EXPECT_FLOAT_EQ(td.get("normalized").item<float>(), 2.0f);
  EXPECT_FLOAT_EQ(td.get("observation").item<float>(), 9.0f);
}

TEST(ObservationNormTest, BoundedSpecGetsTheMappedBounds) {
  TransformedEnv env(
      std::make_shared<ContinuousEnv>(Shape{2}),
      Compose::make({std::make_shared<ClipTransform>(
                         ClipTransformOptions().in_keys({"position"}).low(-1.0).high(3.0)),
                     std::make_shared<ObservationNorm>(ObservationNormOptions()
                                                           .in_keys({"position"})
                                                           .loc(1.0)
                                                           .scale(-2.0)
                                                           .standard_normal(true))}));
  const auto spec =
      std::dynamic_pointer_cast<specs::Bounded>(env.observation_spec()->get("position"));
  ASSERT_NE(spec, nullptr);
  EXPECT_TRUE(torch::equal(spec->low(), torch::full({2, 2}, -1.0f)));  // (3 - 1) / -2
  EXPECT_TRUE(torch::equal(spec->high(), torch::full({2, 2}, 1.0f)));  // (-1 - 1) / -2
  check_env_specs(env);
}

TEST(ObservationNormTest, InitStatsEstimatesMeanAndStandardDeviation) {
  auto norm = std::make_shared<ObservationNorm>(ObservationNormOptions().standard_normal(true));
  TransformedEnv env(std::make_shared<Float64Env>(Shape{4}), norm);
  env.set_seed(0);
  EXPECT_FALSE(norm->initialized());
  norm->init_stats(500);
  ASSERT_TRUE(norm->initialized());
  EXPECT_EQ(norm->loc().sizes(), (Shape{3}));
  EXPECT_EQ(norm->loc().scalar_type(), torch::kFloat64);
  EXPECT_TRUE(torch::allclose(norm->loc(), torch::full({3}, 3.0, torch::kFloat64), 0, 0.15));
  EXPECT_TRUE(torch::allclose(norm->scale(), torch::full({3}, 2.0, torch::kFloat64), 0, 0.15));
  const auto data = env.rollout(200, nullptr, RolloutOptions().break_when_any_done(false));
  const auto obs = data.get({"next", "observation"});
  EXPECT_NEAR(obs.mean().item<double>(), 0.0, 0.1);
  EXPECT_NEAR(obs.std().item<double>(), 1.0, 0.1);
  check_env_specs(env);
}

TEST(ObservationNormTest, InitStatsWithoutStandardNormalStoresTheInverseMap) {
  auto norm = std::make_shared<ObservationNorm>();
  TransformedEnv env(std::make_shared<Float64Env>(Shape{4}), norm);
  norm->init_stats(300);
  // x * scale + loc == (x - mean) / std
  EXPECT_TRUE(torch::allclose(norm->scale(), torch::full({3}, 0.5, torch::kFloat64), 0, 0.05));
  EXPECT_TRUE(torch::allclose(norm->loc(), torch::full({3}, -1.5, torch::kFloat64), 0, 0.15));
}

TEST(ObservationNormTest, InitStatsRunsTheEnvBeforeTheTransform) {
  // The transform after the norm removes "observation": the statistics still come from it.
  auto norm = std::make_shared<ObservationNorm>(
      ObservationNormOptions().out_keys({"obs_norm"}).standard_normal(true));
  TransformedEnv env(std::make_shared<Float64Env>(Shape{2}),
                     Compose::make({std::make_shared<DoubleToFloat>(), norm,
                                    std::make_shared<ExcludeTransform>(Keys{"observation"})}));
  norm->init_stats(100);
  EXPECT_EQ(norm->loc().scalar_type(), torch::kFloat32);
  EXPECT_FALSE(env.observation_spec()->contains("observation"));
  EXPECT_TRUE(env.observation_spec()->contains("obs_norm"));
  check_env_specs(env);
}

TEST(ObservationNormTest, InitStatsErrors) {
  ObservationNorm detached;
  EXPECT_THAT([&] { detached.init_stats(10); },
              ThrowsMessage<tensordict::Error>(HasSubstr("the transform is in no env")));
  EXPECT_THAT([&] { detached.init_stats(1); },
              ThrowsMessage<ValueError>(HasSubstr("num_iter is 1; it must be >= 2")));
  ObservationNorm two(ObservationNormOptions().in_keys({"a", "b"}));
  EXPECT_THAT([&] { two.init_stats(10); }, ThrowsMessage<ValueError>(HasSubstr("pass the key")));
  auto fixed = std::make_shared<ObservationNorm>(ObservationNormOptions().loc(0.0).scale(1.0));
  TransformedEnv env(std::make_shared<CountingEnv>(), fixed);
  EXPECT_THAT([&] { fixed->init_stats(10); },
              ThrowsMessage<tensordict::Error>(HasSubstr("already set")));
}

TEST(ObservationNormTest, TransformingBeforeInitStatsThrows) {
  auto norm = std::make_shared<ObservationNorm>();
  TransformedEnv env(std::make_shared<CountingEnv>(), norm);
  EXPECT_THAT([&] { env.reset(); },
              ThrowsMessage<tensordict::Error>(HasSubstr("call init_stats(num_iter) first")));
}

TEST(ObservationNormTest, BadOptionsThrowValueError) {
  EXPECT_THAT([] { ObservationNorm n(ObservationNormOptions().loc(1.0)); },
              ThrowsMessage<ValueError>(HasSubstr("loc is given but scale is not")));
  EXPECT_THAT([] { ObservationNorm n(ObservationNormOptions().loc(1.0).scale(0.0)); },
              ThrowsMessage<ValueError>(HasSubstr("scale has a zero element")));
  EXPECT_THAT(
      [] {
        ObservationNorm n(ObservationNormOptions().out_keys({"a", "b"}));
      },
      ThrowsMessage<ValueError>(HasSubstr("give one out_key per in_key")));
}

TEST(ObservationNormTest, NonFloatingInKeyThrowsTypeError) {
  TransformedEnv env(std::make_shared<CountingEnv>(), std::make_shared<StepCounter>());
  EXPECT_THAT(
      [&] {
        env.append_transform(std::make_shared<ObservationNorm>(
            ObservationNormOptions().loc(0.0).scale(1.0).in_keys({"step_count"})));
      },
      ThrowsMessage<TypeError>(
          AllOf(HasSubstr("'step_count' has dtype torch.int64"), HasSubstr("floating"))));
}

TEST(ObservationNormTest, StateDictRoundTrips) {
  ObservationNorm a(ObservationNormOptions().loc(torch::tensor({1.0f, 2.0f})).scale(3.0));
  ObservationNorm b;
  EXPECT_TRUE(b.state_dict().is_empty());
  b.load_state_dict(a.state_dict());
  EXPECT_TRUE(torch::equal(b.loc(), a.loc()));
  EXPECT_TRUE(torch::equal(b.scale(), a.scale()));
  EXPECT_THAT(
      [&] {
        b.load_state_dict(TensorDict({{"loc", torch::zeros({1})}}));
      },
      ThrowsMessage<KeyError>(HasSubstr("no 'scale' entry")));
}

// ---- VecNorm -------------------------------------------------------------------------------

TEST(VecNormTest, NormalizesWithTheUpdatedRunningStatistics) {
  VecNorm norm(VecNormOptions().in_keys({"x"}).decay(1.0));
  const auto x = torch::tensor({{1.0f, 10.0f}, {3.0f, 30.0f}});
  auto td = norm.forward(TensorDict({{"x", x}}, {2}));
  // mean [2, 20], var [1, 100]
  EXPECT_TRUE(torch::allclose(td.get("x"), torch::tensor({{-1.0f, -1.0f}, {1.0f, 1.0f}})));
  const auto [mean, std] = norm.state()->mean_std("x", 1e-4);
  EXPECT_TRUE(torch::allclose(mean, torch::tensor({2.0, 20.0}, torch::kFloat64)));
  EXPECT_TRUE(torch::allclose(std, torch::tensor({1.0, 10.0}, torch::kFloat64)));
}

TEST(VecNormTest, DecayWeighsOlderSamplesLess) {
  VecNorm norm(VecNormOptions().in_keys({"x"}).decay(0.5));
  norm.forward(TensorDict({{"x", torch::tensor({{2.0f}})}}, {1}));
  norm.forward(TensorDict({{"x", torch::tensor({{4.0f}})}}, {1}));
  const auto state = norm.state_dict();
  EXPECT_DOUBLE_EQ(state.get({"x", "sum"}).item<double>(), 5.0);    // 0.5 * 2 + 4
  EXPECT_DOUBLE_EQ(state.get({"x", "ssq"}).item<double>(), 18.0);   // 0.5 * 4 + 16
  EXPECT_DOUBLE_EQ(state.get({"x", "count"}).item<double>(), 1.5);  // 0.5 * 1 + 1
}

TEST(VecNormTest, NormalizesObservationAndRewardInARollout) {
  TransformedEnv env(std::make_shared<ContinuousEnv>(Shape{4}), std::make_shared<VecNorm>());
  env.set_seed(1);
  const auto data = env.rollout(50, nullptr, RolloutOptions().break_when_any_done(false));
  const auto obs = data.get({"next", "observation"});
  EXPECT_NEAR(obs.mean().item<float>(), 0.0f, 0.3f);
  EXPECT_NEAR(obs.std().item<float>(), 1.0f, 0.3f);
  EXPECT_TRUE(env.transform()[0]->state_dict().contains({"reward", "sum"}));
  EXPECT_EQ(env.reward_spec()->type_name(), "UnboundedContinuous");
  check_env_specs(env);
}

TEST(VecNormTest, PartialResetUpdatesOnlyTheResetSubEnvs) {
  auto norm = std::make_shared<VecNorm>(VecNormOptions().in_keys({"observation"}).decay(1.0));
  TransformedEnv env(std::make_shared<CountingEnv>(Shape{3}), norm);
  auto td = env.reset();
  auto count = [&] { return norm->state_dict().get({"observation", "count"}).item<double>(); };
  EXPECT_DOUBLE_EQ(count(), 3.0);
  td = step_mdp(step_n(env, td, counting_action({3}), 1));
  EXPECT_DOUBLE_EQ(count(), 6.0);
  td.set("_reset", torch::tensor({{true}, {false}, {false}}));
  env.reset(td);
  EXPECT_DOUBLE_EQ(count(), 7.0);
}

TEST(VecNormTest, SharedStateIsUpdatedByEveryEnv) {
  auto stats = std::make_shared<VecNormState>();
  auto options = VecNormOptions().in_keys({"observation"}).decay(1.0).shared_state(stats);
  TransformedEnv a(std::make_shared<CountingEnv>(Shape{2}), std::make_shared<VecNorm>(options));
  TransformedEnv b(std::make_shared<CountingEnv>(Shape{5}), std::make_shared<VecNorm>(options));
  a.reset();
  b.reset();
  EXPECT_DOUBLE_EQ(stats->state_dict().get({"observation", "count"}).item<double>(), 7.0);
}

TEST(VecNormTest, ConcurrentUpdatesCountEverySample) {
  auto stats = std::make_shared<VecNormState>();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([stats, t] {
      VecNorm norm(VecNormOptions().in_keys({"x"}).decay(1.0).shared_state(stats));
      for (int i = 0; i < 100; ++i) {
        norm.forward(TensorDict({{"x", torch::full({8, 2}, static_cast<float>(t))}}, {8}));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  const auto state = stats->state_dict();
  EXPECT_DOUBLE_EQ(state.get({"x", "count"}).item<double>(), 3200.0);
  // sum over threads of 800 samples of t, per feature: 800 * (0 + 1 + 2 + 3)
  EXPECT_TRUE(torch::allclose(state.get({"x", "sum"}), torch::full({2}, 4800.0, torch::kFloat64)));
}

TEST(VecNormTest, FrozenNormalizesWithoutUpdating) {
  VecNorm norm(VecNormOptions().in_keys({"x"}).decay(1.0));
  EXPECT_THAT(
      [&] {
        norm.freeze();
        norm.forward(TensorDict({{"x", torch::ones({1, 1})}}, {1}));
      },
      ThrowsMessage<KeyError>(HasSubstr("no statistics for 'x' yet")));
  norm.unfreeze();
  norm.forward(TensorDict({{"x", torch::tensor({{0.0f}, {2.0f}})}}, {2}));
  norm.freeze();
  auto td = norm.forward(TensorDict({{"x", torch::tensor({{3.0f}})}}, {1}));
  EXPECT_FLOAT_EQ(td.get("x").item<float>(), 2.0f);  // (3 - 1) / 1
  EXPECT_DOUBLE_EQ(norm.state_dict().get({"x", "count"}).item<double>(), 2.0);
}

TEST(VecNormTest, StateDictSavesAndLoads) {
  VecNorm a(VecNormOptions().in_keys({"x"}));
  a.forward(TensorDict({{"x", torch::randn({16, 3}, at::make_generator<at::CPUGeneratorImpl>(2))}},
                       {16}));
  VecNorm b(VecNormOptions().in_keys({"x"}));
  b.load_state_dict(a.state_dict());
  a.freeze();
  b.freeze();
  const auto x = torch::tensor({{0.5f, -1.0f, 2.0f}});
  EXPECT_TRUE(torch::equal(a.forward(TensorDict({{"x", x}}, {1})).get("x"),
                           b.forward(TensorDict({{"x", x}}, {1})).get("x")));
}

// A TransformedEnv's state is its base env's and its transforms' (VecNorm's statistics): a
// fresh one loaded with it continues the stream, normalised the same way. Over an env that
// does not save its state (ContinuousEnv), it does not resume episodes.
TEST(TransformedEnvTest, StateDictHoldsTheBaseEnvAndTheTransformsAndContinuesTheStream) {
  const auto make = [] {
    return TransformedEnv(
        std::make_shared<PendulumEnv>(PendulumEnvOptions().batch_size({2})),
        Compose::make({std::make_shared<StepCounter>(), std::make_shared<RewardSum>(),
                       std::make_shared<VecNorm>()}));
  };
  TransformedEnv env = make();
  env.set_seed(6);
  TransformedEnv fresh = make();
  tdrl::testing::expect_state_dict_continues_the_stream(env, fresh, 11, 30);
  const TensorDict state = env.state_dict();
  EXPECT_TRUE(state.contains({"base", "state"}));
  EXPECT_TRUE(state.contains({"transforms", "2", "observation", "sum"}));

  TransformedEnv other(std::make_shared<ContinuousEnv>(Shape{2}));
  EXPECT_FALSE(other.state_dict().get("resumes_episodes").item<bool>());
  TensorDict no_base = env.state_dict();
  no_base.del_("base");
  EXPECT_THAT([&] { env.load_state_dict(no_base); },
              ThrowsMessage<KeyError>(HasSubstr("no \"base\"")));
}

TEST(VecNormTest, LoadStateDictRejectsIncompleteStatistics) {
  VecNorm norm(VecNormOptions().in_keys({"x"}));
  TensorDict bad({{"x", TensorDict({{"sum", torch::zeros({2})}, {"count", torch::ones({})}})}});
  EXPECT_THAT([&] { norm.load_state_dict(bad); },
              ThrowsMessage<KeyError>(HasSubstr("the statistics of 'x' lack 'ssq'")));
  TensorDict shapes({{"x", TensorDict({{"sum", torch::zeros({2})},
                                       {"ssq", torch::zeros({3})},
                                       {"count", torch::ones({})}})}});
  EXPECT_THROW(norm.load_state_dict(shapes), ShapeError);
  EXPECT_TRUE(norm.state_dict().is_empty());
}

TEST(VecNormTest, BadOptionsThrowValueError) {
  EXPECT_THAT([] { VecNorm n(VecNormOptions().decay(0.0)); },
              ThrowsMessage<ValueError>(HasSubstr("decay is 0; it must be in (0, 1]")));
  EXPECT_THAT([] { VecNorm n(VecNormOptions().eps(0.0)); },
              ThrowsMessage<ValueError>(HasSubstr("eps is 0")));
  EXPECT_THAT(
      [] {
        TransformedEnv env(std::make_shared<CountingEnv>(),
                           std::make_shared<VecNorm>(VecNormOptions().in_keys({"pos"})));
      },
      ThrowsMessage<KeyError>(HasSubstr("VecNorm: in_key 'pos' is not in the observation or "
                                        "reward spec")));
}

// ---- RewardScaling -------------------------------------------------------------------------

TEST(RewardScalingTest, ScalesTheRewardOfEachStep) {
  TransformedEnv env(std::make_shared<CountingEnv>(Shape{2}),
                     std::make_shared<RewardScaling>(RewardScalingOptions().loc(0.5).scale(3.0)));
  auto td = step_n(env, env.reset(), counting_action({2}), 1);
  EXPECT_TRUE(torch::equal(td.get({"next", "reward"}), torch::full({2, 1}, 3.5f)));
  EXPECT_FALSE(env.reset().contains("reward"));
  check_env_specs(env);
}

TEST(RewardScalingTest, StandardNormalSubtractsThenDivides) {
  RewardScaling scaling(RewardScalingOptions().loc(1.0).scale(4.0).standard_normal(true));
  auto td = scaling.forward(TensorDict({{"reward", torch::tensor({9.0f})}}));
  EXPECT_FLOAT_EQ(td.get("reward").item<float>(), 2.0f);
}

TEST(RewardScalingTest, BadOptionsThrowValueError) {
  EXPECT_THAT([] { RewardScaling r(RewardScalingOptions().scale(0.0)); },
              ThrowsMessage<ValueError>(HasSubstr("scale is 0")));
  EXPECT_THAT([] { RewardScaling r(RewardScalingOptions().loc(std::nan(""))); },
              ThrowsMessage<ValueError>(HasSubstr("loc is nan; it must be finite")));
}

// ---- RewardClipping ------------------------------------------------------------------------

TEST(RewardClippingTest, ClampsTheRewardAndBoundsItsSpec) {
  TransformedEnv env(
      std::make_shared<ContinuousEnv>(Shape{2}),
      std::make_shared<RewardClipping>(RewardClippingOptions().clamp_min(-1.0).clamp_max(1.0)));
  auto td = env.reset();
  td.set("action", torch::tensor({{1.0f, 3.0f}, {0.5f, 0.0f}}));
  env.step(td);
  EXPECT_TRUE(torch::equal(td.get({"next", "reward"}), torch::tensor({{-1.0f}, {-0.25f}})));
  const auto spec = std::dynamic_pointer_cast<specs::Bounded>(env.reward_spec());
  ASSERT_NE(spec, nullptr);
  EXPECT_TRUE(torch::equal(spec->low(), torch::full({2, 1}, -1.0f)));
  check_env_specs(env);
}

TEST(RewardClippingTest, OneBoundLeavesTheSpecUnbounded) {
  TransformedEnv env(std::make_shared<ContinuousEnv>(),
                     std::make_shared<RewardClipping>(RewardClippingOptions().clamp_min(-2.0)));
  EXPECT_EQ(env.reward_spec()->type_name(), "UnboundedContinuous");
  auto td = env.reset();
  td.set("action", torch::tensor({1.0f, 3.0f}));
  env.step(td);
  EXPECT_FLOAT_EQ(td.get({"next", "reward"}).item<float>(), -2.0f);
}

TEST(RewardClippingTest, BadBoundsThrowValueError) {
  EXPECT_THAT([] { RewardClipping r{RewardClippingOptions()}; },
              ThrowsMessage<ValueError>(HasSubstr("neither clamp_min nor clamp_max")));
  EXPECT_THAT([] { RewardClipping r(RewardClippingOptions().clamp_min(1).clamp_max(0)); },
              ThrowsMessage<ValueError>(HasSubstr("clamp_min 1 > clamp_max 0")));
}

// ---- RewardSum -----------------------------------------------------------------------------

TEST(RewardSumTest, AccumulatesTheEpisodeReturnAndResetsItToZero) {
  TransformedEnv env(std::make_shared<CountingEnv>(Shape{}, 3), std::make_shared<RewardSum>());
  auto td = env.reset();
  EXPECT_FLOAT_EQ(td.get("episode_reward").item<float>(), 0.0f);
  const auto data = env.rollout(7, nullptr, RolloutOptions().break_when_any_done(false));
  EXPECT_TRUE(torch::equal(data.get({"next", "episode_reward"}).flatten(),
                           torch::tensor({1.0f, 2.0f, 3.0f, 1.0f, 2.0f, 3.0f, 1.0f})));
  EXPECT_TRUE(torch::equal(data.get("episode_reward").flatten(),
                           torch::tensor({0.0f, 1.0f, 2.0f, 0.0f, 1.0f, 2.0f, 0.0f})));
  EXPECT_EQ(env.observation_spec()->get("episode_reward")->shape(), (Shape{1}));
  check_env_specs(env);
}

TEST(RewardSumTest, PartialResetKeepsTheOtherSubEnvsSums) {
  TransformedEnv env(std::make_shared<CountingEnv>(Shape{2}), std::make_shared<RewardSum>());
  auto td = step_mdp(step_n(env, env.reset(), counting_action({2}), 2));
  td.set("_reset", torch::tensor({{false}, {true}}));
  env.reset(td);
  EXPECT_TRUE(torch::equal(td.get("episode_reward"), torch::tensor({{2.0f}, {0.0f}})));
}

// A TransformedEnv around a TransformedEnv: the inner transforms see the caller's entries on a
// partial reset (the sub-envs not reset keep their sums), and the outer ones only what the
// reset wrote.
TEST(RewardSumTest, PartialResetThroughANestedTransformedEnvKeepsTheOtherSubEnvsSums) {
  auto inner = std::make_shared<TransformedEnv>(std::make_shared<CountingEnv>(Shape{2}),
                                                std::make_shared<RewardSum>());
  TransformedEnv env(inner, std::make_shared<InitTracker>());
  auto td = step_mdp(step_n(env, env.reset(), counting_action({2}), 2));
  td.set("_reset", torch::tensor({{false}, {true}}));
  env.reset(td);
  EXPECT_TRUE(torch::equal(td.get("episode_reward"), torch::tensor({{2.0f}, {0.0f}})));
  EXPECT_TRUE(torch::equal(td.get("is_init"), torch::tensor({{false}, {true}})));
}

TEST(RewardSumTest, ErrorsNameTheKeys) {
  EXPECT_THAT(
      [] {
        RewardSum r(RewardSumOptions().out_keys({"a", "b"}));
      },
      ThrowsMessage<ValueError>(HasSubstr("give one out_key per in_key")));
  EXPECT_THAT(
      [] {
        TransformedEnv env(std::make_shared<CountingEnv>(),
                           std::make_shared<RewardSum>(RewardSumOptions().in_keys({"rewrd"})));
      },
      ThrowsMessage<KeyError>(AllOf(HasSubstr("in_key 'rewrd'"), HasSubstr("'reward'"))));
}

// ---- StepCounter ---------------------------------------------------------------------------

TEST(StepCounterTest, CountsStepsAndTruncatesAtMaxSteps) {
  TransformedEnv env(std::make_shared<CountingEnv>(Shape{2}, 100),
                     std::make_shared<StepCounter>(StepCounterOptions().max_steps(3)));
  auto td = env.reset();
  EXPECT_TRUE(torch::equal(td.get("step_count"), torch::zeros({2, 1}, torch::kLong)));
  auto two = step_n(env, td, counting_action({2}), 2);
  EXPECT_TRUE(torch::equal(two.get({"next", "step_count"}), torch::full({2, 1}, 2, torch::kLong)));
  EXPECT_FALSE(two.get({"next", "truncated"}).any().item<bool>());
  auto three = step_n(env, step_mdp(two), counting_action({2}), 1);
  EXPECT_TRUE(three.get({"next", "truncated"}).all().item<bool>());
  EXPECT_TRUE(three.get({"next", "done"}).all().item<bool>());
  EXPECT_FALSE(three.get({"next", "terminated"}).any().item<bool>());
  check_env_specs(env);
}

TEST(StepCounterTest, RolloutEndsAtMaxSteps) {
  TransformedEnv env(std::make_shared<CountingEnv>(Shape{}, 100),
                     std::make_shared<StepCounter>(StepCounterOptions().max_steps(4)));
  const auto data = env.rollout(50);
  EXPECT_EQ(data.batch_size(), (Shape{4}));
}

TEST(StepCounterTest, TerminationTakesPrecedenceOverTruncation) {
  TransformedEnv env(std::make_shared<CountingEnv>(Shape{}, 3),
                     std::make_shared<StepCounter>(StepCounterOptions().max_steps(3)));
  auto td = step_n(env, env.reset(), counting_action({}), 3);
  EXPECT_TRUE(td.get({"next", "terminated"}).item<bool>());
  EXPECT_FALSE(td.get({"next", "truncated"}).item<bool>());
  EXPECT_TRUE(td.get({"next", "done"}).item<bool>());
}

TEST(StepCounterTest, PartialResetKeepsTheOtherCounts) {
  TransformedEnv env(std::make_shared<CountingEnv>(Shape{3}, 100), std::make_shared<StepCounter>());
  auto td = step_mdp(step_n(env, env.reset(), counting_action({3}), 2));
  td.set("_reset", torch::tensor({{true}, {false}, {true}}));
  env.reset(td);
  EXPECT_TRUE(torch::equal(td.get("step_count"), torch::tensor({{0L}, {2L}, {0L}})));
}

TEST(StepCounterTest, SpecIsBoundedInt64) {
  TransformedEnv env(std::make_shared<CountingEnv>(Shape{2}),
                     std::make_shared<StepCounter>(StepCounterOptions().max_steps(9)));
  const auto spec =
      std::dynamic_pointer_cast<specs::Bounded>(env.observation_spec()->get("step_count"));
  ASSERT_NE(spec, nullptr);
  EXPECT_EQ(spec->dtype(), torch::kInt64);
  EXPECT_EQ(spec->shape(), (Shape{2, 1}));
  EXPECT_EQ(spec->high()[0][0].item<int64_t>(), 9);
  TransformedEnv unlimited(std::make_shared<CountingEnv>(), std::make_shared<StepCounter>());
  check_env_specs(unlimited);
}

TEST(StepCounterTest, BadOptionsThrowValueError) {
  EXPECT_THAT([] { StepCounter s(StepCounterOptions().max_steps(0)); },
              ThrowsMessage<ValueError>(HasSubstr("max_steps is 0; it must be >= 1")));
  EXPECT_THAT([] { StepCounter s(StepCounterOptions().step_count_key("done")); },
              ThrowsMessage<ValueError>(HasSubstr("is a done flag")));
}

// ---- InitTracker ---------------------------------------------------------------------------

TEST(InitTrackerTest, MarksTheFirstStepOfEachEpisode) {
  TransformedEnv env(std::make_shared<CountingEnv>(Shape{2}), std::make_shared<InitTracker>());
  auto td = env.reset();
  EXPECT_TRUE(torch::equal(td.get("is_init"), torch::ones({2, 1}, torch::kBool)));
  auto stepped = step_n(env, td, counting_action({2}), 1);
  EXPECT_FALSE(stepped.get({"next", "is_init"}).any().item<bool>());
  auto root = step_mdp(stepped);
  root.set("_reset", torch::tensor({{false}, {true}}));
  env.reset(root);
  EXPECT_TRUE(torch::equal(root.get("is_init"), torch::tensor({{false}, {true}})));
  EXPECT_EQ(env.observation_spec()->get("is_init")->dtype(), torch::kBool);
  check_env_specs(env);
}

// ---- TensorDictPrimer ----------------------------------------------------------------------

// A recurrent policy's state as LSTMModule::hidden_specs() gives it: [1, 3] per step.
specs::CompositePtr hidden_primers() {
  return specs::Composite::make({{"h", std::make_shared<specs::Unbounded>(Shape{1, 3})}});
}

TEST(TensorDictPrimerTest, ResetZeroesOnlyTheRowsBeingResetAndStepCarriesThePolicysState) {
  TransformedEnv env(std::make_shared<CountingEnv>(Shape{2}),
                     std::make_shared<TensorDictPrimer>(hidden_primers()));
  auto td = env.reset();
  EXPECT_TRUE(torch::equal(td.get("h"), torch::zeros({2, 1, 3})));
  // The policy writes its next state; the step output carries it, step_mdp moves it to the root.
  td.set(specs::kAction, counting_action({2}));
  td.set({"next", "h"}, torch::ones({2, 1, 3}));
  auto stepped = env.step(td);
  EXPECT_TRUE(torch::equal(stepped.get({"next", "h"}), torch::ones({2, 1, 3})));
  auto root = step_mdp(stepped);
  EXPECT_TRUE(torch::equal(root.get("h"), torch::ones({2, 1, 3})));
  // A partial reset zeroes sub-env 1 only.
  root.set("_reset", torch::tensor({{false}, {true}}));
  env.reset(root);
  EXPECT_TRUE(torch::equal(root.get("h")[0], torch::ones({1, 3})));
  EXPECT_TRUE(torch::equal(root.get("h")[1], torch::zeros({1, 3})));
  // A policy that writes no next state keeps the state as it is.
  root.set(specs::kAction, counting_action({2}));
  EXPECT_TRUE(torch::equal(env.step(root).get({"next", "h"}), root.get("h")));
  EXPECT_EQ(env.observation_spec()->get("h")->shape(), (Shape{2, 1, 3}));
  check_env_specs(env);
}

TEST(TensorDictPrimerTest, ABadStateOrNoPrimersAreRefused) {
  TransformedEnv env(std::make_shared<CountingEnv>(Shape{2}),
                     std::make_shared<TensorDictPrimer>(hidden_primers()));
  auto td = env.reset();
  td.set(specs::kAction, counting_action({2}));
  td.set({"next", "h"}, torch::ones({2, 3}));
  EXPECT_THAT([&] { env.step(td); },
              ThrowsMessage<tensordict::ShapeError>(
                  HasSubstr("TensorDictPrimer::step: 'h' has shape [2, 3]; expected [2, 1, 3]")));
  EXPECT_THAT([] { TensorDictPrimer p(specs::Composite::make({})); },
              ThrowsMessage<ValueError>(HasSubstr("the primers spec has no entries")));
}

// with_policy_state: an InitTracker and the primer, appended to a TransformedEnv (no nesting;
// an env that already writes is_init gets no second tracker), around any other env.
TEST(TensorDictPrimerTest, WithPolicyStateAddsWhatARecurrentPolicyNeeds) {
  auto plain = with_policy_state(std::make_shared<CountingEnv>(Shape{2}), hidden_primers());
  ASSERT_TRUE(std::dynamic_pointer_cast<TransformedEnv>(plain));
  auto td = plain->reset();
  EXPECT_TRUE(torch::equal(td.get("is_init"), torch::ones({2, 1}, torch::kBool)));
  EXPECT_TRUE(torch::equal(td.get("h"), torch::zeros({2, 1, 3})));
  check_env_specs(*plain);
  auto tracked = std::make_shared<TransformedEnv>(std::make_shared<CountingEnv>(Shape{2}),
                                                  std::make_shared<InitTracker>());
  EXPECT_EQ(with_policy_state(tracked, hidden_primers()), tracked);
  int trackers = 0;
  for (const auto& t : tracked->transform().transforms())
    trackers += std::dynamic_pointer_cast<InitTracker>(t) != nullptr;
  EXPECT_EQ(trackers, 1);
  EXPECT_TRUE(tracked->observation_spec()->contains("h"));
  check_env_specs(*tracked);
  auto env = std::make_shared<CountingEnv>(Shape{2});
  EXPECT_EQ(with_policy_state(env, nullptr), env);
}

// ---- FrameSkipTransform --------------------------------------------------------------------

TEST(FrameSkipTransformTest, RepeatsTheActionAndSumsRewards) {
  auto base = std::make_shared<CountingEnv>(Shape{}, 100);
  TransformedEnv env(base, std::make_shared<FrameSkipTransform>(3));
  auto td = step_n(env, env.reset(), counting_action({}), 2);
  EXPECT_EQ(base->steps_taken, 6);
  EXPECT_FLOAT_EQ(td.get({"next", "observation"}).item<float>(), 6.0f);
  EXPECT_FLOAT_EQ(td.get({"next", "reward"}).item<float>(), 3.0f);
  check_env_specs(env);
}

// Transforms below the skip see every frame: a RewardSum sums each repeat's reward, a
// StepCounter counts each repeat (TorchRL's skip hands them the first root each time).
TEST(FrameSkipTransformTest, TransformsBelowCarryTheirStateThroughEveryRepeat) {
  auto base = std::make_shared<CountingEnv>(Shape{2}, 100);
  TransformedEnv env(base,
                     Compose::make({std::make_shared<RewardSum>(), std::make_shared<StepCounter>(),
                                    std::make_shared<FrameSkipTransform>(3)}));
  auto td = step_n(env, env.reset(), counting_action({2}), 2);
  EXPECT_EQ(base->steps_taken, 6);
  EXPECT_TRUE(torch::equal(td.get({"next", "step_count"}).reshape({-1}),
                           torch::tensor({6, 6}, torch::kInt64)));
  EXPECT_TRUE(torch::allclose(td.get({"next", "episode_reward"}).reshape({-1}),
                              torch::tensor({6.0f, 6.0f})));
  EXPECT_TRUE(
      torch::allclose(td.get({"next", "reward"}).reshape({-1}), torch::tensor({3.0f, 3.0f})));
  check_env_specs(env);
}

TEST(FrameSkipTransformTest, StopsRepeatingAtDone) {
  auto base = std::make_shared<CountingEnv>(Shape{}, 5);
  TransformedEnv env(base, std::make_shared<FrameSkipTransform>(3));
  auto td = step_n(env, env.reset(), counting_action({}), 2);
  EXPECT_EQ(base->steps_taken, 5);
  EXPECT_FLOAT_EQ(td.get({"next", "reward"}).item<float>(), 2.0f);
  EXPECT_TRUE(td.get({"next", "done"}).item<bool>());
}

TEST(FrameSkipTransformTest, RepeatsTheSameActionThroughInverseTransformsBelow) {
  auto base = std::make_shared<ContinuousEnv>();
  TransformedEnv env(base, Compose::make({std::make_shared<ActionScaling>(),
                                          std::make_shared<FrameSkipTransform>(3)}));
  auto td = env.reset();
  const auto start = td.get("position").clone();
  td.set("action", torch::tensor({0.5f, 0.5f}));
  env.step(td);
  // Bounds [-1, 1] and [-2, 3]: 0.5 maps to 0.5 and 1.75 on every frame.
  EXPECT_TRUE(torch::allclose(base->last_action, torch::tensor({0.5f, 1.75f})));
  EXPECT_TRUE(
      torch::allclose(td.get({"next", "position"}), start + 3 * torch::tensor({0.5f, 1.75f})));
  EXPECT_TRUE(torch::equal(td.get("action"), torch::tensor({0.5f, 0.5f})));
}

TEST(FrameSkipTransformTest, FrameSkipBelowOneThrowsValueError) {
  EXPECT_THAT([] { FrameSkipTransform f(0); },
              ThrowsMessage<ValueError>(HasSubstr("frame_skip is 0; it must be >= 1")));
  EXPECT_THAT([] { FrameSkipTransform f(FrameSkipOptions().frame_skip(-2)); },
              ThrowsMessage<ValueError>(HasSubstr("frame_skip is -2; it must be >= 1")));
}

// The options and the bare count build the same transform.
TEST(FrameSkipTransformTest, OptionsAndCountAgree) {
  FrameSkipTransform from_options(FrameSkipOptions().frame_skip(3));
  FrameSkipTransform from_count(3);
  EXPECT_EQ(from_options.options().frame_skip(), 3);
  EXPECT_EQ(from_options.to_string(), from_count.to_string());
  EXPECT_EQ(FrameSkipOptions().frame_skip(), 1);
}

}  // namespace
}  // namespace tdrl::envs
