#include <tdrl/envs/env_base.h>

#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <tensordict/errors.h>

#include "support/test_names.h"

namespace tdrl::envs {
namespace {

using namespace tdrl::testing::names;

// A batched random walk: observation [*batch, 2] = position; the action (Bounded [-1, 1],
// [*batch, 2]) is added; reward = -|position|; terminated when |position_0| > limit;
// truncated after max_steps steps. Reset draws the position uniformly in [-0.5, 0.5].
class WalkEnv : public EnvBase {
 public:
  explicit WalkEnv(Shape batch = {}, double limit = 2.0, int64_t max_steps = 1000)
      : EnvBase("Walk", EnvBaseOptions().batch_size(batch)), limit_(limit), max_steps_(max_steps) {
    auto full = batch;
    full.push_back(2);
    set_observation_spec(
        specs::Composite::make({{"observation", std::make_shared<specs::Unbounded>(full)}}, batch));
    set_action_spec(std::make_shared<specs::Bounded>(
        specs::BoundedOptions().low(-1.0).high(1.0).shape(full).dtype(torch::kFloat32)));
    auto one = batch;
    one.push_back(1);
    position_ = torch::zeros(full);
    steps_ = torch::zeros(one, torch::kLong);
  }

  int64_t reset_calls = 0;

 protected:
  TensorDict reset_impl(const TensorDict& td) override {
    ++reset_calls;
    auto fresh = torch::rand(position_.sizes(), generator()) - 0.5;
    auto mask = td.find(specs::kReset);
    if (mask) {
      position_ = torch::where(*mask, fresh, position_);
      steps_ = torch::where(*mask, torch::zeros_like(steps_), steps_);
    } else {
      position_ = fresh;
      steps_.zero_();
    }
    return TensorDict({{"observation", position_.clone()}}, batch_size());
  }

  TensorDict step_impl(const TensorDict& td) override {
    position_ = position_ + td.get("action");
    steps_ = steps_ + 1;
    auto terminated = position_.narrow(-1, 0, 1).abs() > limit_;
    auto truncated = steps_ >= max_steps_;
    return TensorDict({{"observation", position_.clone()},
                       {"reward", -position_.abs().sum(-1, true)},
                       {"terminated", terminated},
                       {"truncated", truncated}},
                      batch_size());
  }

 private:
  double limit_;
  int64_t max_steps_;
  torch::Tensor position_;
  torch::Tensor steps_;
};

TEST(EnvBaseTest, ResetWritesObservationAndFalseFlags) {
  WalkEnv env({3});
  auto td = env.reset();
  EXPECT_EQ(td.batch_size(), (Shape{3}));
  EXPECT_EQ(td.get("observation").sizes(), (Shape{3, 2}));
  for (const char* flag : {"done", "terminated", "truncated"}) {
    EXPECT_EQ(td.get(flag).sizes(), (Shape{3, 1}));
    EXPECT_FALSE(td.get(flag).any().item<bool>());
  }
}

TEST(EnvBaseTest, StepNestsNextEntriesAndFillsDone) {
  WalkEnv env({2});
  auto td = env.reset();
  td.set("action", torch::full({2, 2}, 0.5));
  auto out = env.step(td);
  EXPECT_TRUE(out.is_same(td));
  EXPECT_TRUE(torch::allclose(td.get({"next", "observation"}), td.get("observation") + 0.5));
  EXPECT_EQ(td.get({"next", "reward"}).sizes(), (Shape{2, 1}));
  EXPECT_TRUE(torch::equal(td.get({"next", "done"}),
                           td.get({"next", "terminated"}) | td.get({"next", "truncated"})));
}

TEST(EnvBaseTest, StepMdpMovesNextToTheRoot) {
  WalkEnv env;
  auto td = env.rand_action(env.reset());
  env.step(td);
  auto root = step_mdp(td);
  EXPECT_TRUE(torch::equal(root.get("observation"), td.get({"next", "observation"})));
  EXPECT_FALSE(root.contains("action"));
  EXPECT_FALSE(root.contains("reward"));
  EXPECT_FALSE(root.contains("next"));
  EXPECT_TRUE(root.contains("done"));
  auto keep = step_mdp(td, StepMdpOptions().exclude_action(false).exclude_reward(false));
  EXPECT_TRUE(keep.contains("action"));
  EXPECT_TRUE(keep.contains("reward"));
}

TEST(EnvBaseTest, StepMdpWithoutNextThrowsKeyError) {
  TensorDict td({{"observation", torch::zeros({2})}}, {});
  EXPECT_THROW(step_mdp(td), tensordict::KeyError);
}

TEST(EnvBaseTest, PartialResetOnlyResetsSelectedSubEnvs) {
  WalkEnv env({3});
  env.set_seed(1);
  auto td = env.rand_action(env.reset());
  env.step(td);
  auto root = step_mdp(td);
  const auto before = root.get("observation").clone();
  root.set("_reset", torch::tensor({{true}, {false}, {false}}));
  env.reset(root);
  EXPECT_FALSE(root.contains("_reset"));
  EXPECT_FALSE(torch::equal(root.get("observation")[0], before[0]));
  EXPECT_TRUE(torch::equal(root.get("observation").narrow(0, 1, 2), before.narrow(0, 1, 2)));
}

TEST(EnvBaseTest, ResetMaskOfTheWrongShapeThrows) {
  WalkEnv env({3});
  TensorDict td({{"_reset", torch::tensor({true, false})}}, {});
  td = TensorDict({{"_reset", torch::ones({3, 2}, torch::kBool)}}, {3});
  EXPECT_THROW(env.reset(td), tensordict::ShapeError);
}

TEST(EnvBaseTest, RolloutStacksStepsAlongANewLastBatchDim) {
  WalkEnv env({4});
  auto rollout = env.rollout(5, nullptr, RolloutOptions().break_when_any_done(false));
  EXPECT_EQ(rollout.batch_size(), (Shape{4, 5}));
  EXPECT_EQ(rollout.get({"next", "observation"}).sizes(), (Shape{4, 5, 2}));
  EXPECT_EQ(rollout.get("action").sizes(), (Shape{4, 5, 2}));
  // Step t+1's observation is step t's next observation (no episode ended here).
  EXPECT_TRUE(torch::equal(rollout.get("observation").narrow(1, 1, 4),
                           rollout.get({"next", "observation"}).narrow(1, 0, 4)));
}

TEST(EnvBaseTest, RolloutBreaksWhenAnySubEnvIsDone) {
  WalkEnv env({2}, /*limit=*/100.0, /*max_steps=*/3);
  auto rollout = env.rollout(10);
  EXPECT_EQ(rollout.batch_size(), (Shape{2, 3}));
  EXPECT_TRUE(
      rollout.get({"next", "truncated"}).index({torch::indexing::Slice(), 2}).all().item<bool>());
}

TEST(EnvBaseTest, RolloutWithoutBreakResetsDoneSubEnvs) {
  WalkEnv env({2}, /*limit=*/100.0, /*max_steps=*/3);
  auto rollout = env.rollout(7, nullptr, RolloutOptions().break_when_any_done(false));
  EXPECT_EQ(rollout.batch_size(), (Shape{2, 7}));
  // After the truncation at step 2, step 3 starts a fresh episode: its root flags are false.
  EXPECT_FALSE(rollout.get("done").index({torch::indexing::Slice(), 3}).any().item<bool>());
  EXPECT_TRUE(
      rollout.get({"next", "truncated"}).index({torch::indexing::Slice(), 5}).all().item<bool>());
}

TEST(EnvBaseTest, RolloutUsesThePolicy) {
  WalkEnv env({2});
  auto rollout = env.rollout(3, [](TensorDict td) {
    td.set("action", torch::full({2, 2}, 0.25));
    return td;
  });
  EXPECT_TRUE(torch::allclose(rollout.get("action"), torch::full({2, 3, 2}, 0.25)));
}

TEST(EnvBaseTest, SameSeedSameRollout) {
  WalkEnv a({3}), b({3});
  a.set_seed(7);
  b.set_seed(7);
  auto ra = a.rollout(6, nullptr, RolloutOptions().break_when_any_done(false));
  auto rb = b.rollout(6, nullptr, RolloutOptions().break_when_any_done(false));
  EXPECT_TRUE((ra == rb).all());
  b.set_seed(8);
  auto rc = b.rollout(6, nullptr, RolloutOptions().break_when_any_done(false));
  EXPECT_FALSE(torch::equal(ra.get("observation"), rc.get("observation")));
}

TEST(EnvBaseTest, SetSeedReturnsTheNextSeed) {
  WalkEnv env;
  EXPECT_EQ(env.set_seed(41), 42u);
}

TEST(EnvBaseTest, MissingActionThrowsKeyErrorNamingIt) {
  WalkEnv env({2});
  auto td = env.reset();
  EXPECT_THAT([&] { env.step(td); }, ThrowsMessage<tensordict::KeyError>(
                                         HasSubstr("Walk::step: the action 'action' is missing")));
  EXPECT_FALSE(td.contains("next"));
}

TEST(EnvBaseTest, WrongActionShapeDtypeOrValuesThrow) {
  WalkEnv env({2});
  auto td = env.reset();
  td.set("action", torch::zeros({2, 3}));
  EXPECT_THAT([&] { env.step(td); }, ThrowsMessage<tensordict::ShapeError>(HasSubstr(
                                         "has shape [2, 3]; the action spec expects [2, 2]")));
  td.set("action", torch::zeros({2, 2}, torch::kDouble));
  EXPECT_THROW(env.step(td), tensordict::TypeError);
  td.set("action", torch::full({2, 2}, std::nan("")));
  EXPECT_THAT([&] { env.step(td); },
              ThrowsMessage<tensordict::ValueError>(HasSubstr("non-finite")));
  td.set("action", torch::full({2, 2}, 3.0));
  EXPECT_THROW(env.step(td), tensordict::Error);
  EXPECT_FALSE(td.contains("next"));
}

TEST(EnvBaseTest, CheckEnvSpecsPassesForAConformingEnv) {
  WalkEnv env({3});
  EXPECT_NO_THROW(check_env_specs(env));
}

// Declares a float64 observation but writes float32.
class LyingEnv : public WalkEnv {
 public:
  LyingEnv() : WalkEnv({2}) {
    set_observation_spec(specs::Composite::make(
        {{"observation", std::make_shared<specs::Unbounded>(
                             Shape{2, 2}, specs::UnboundedOptions().dtype(torch::kFloat64))}},
        {2}));
  }
};

TEST(EnvBaseTest, CheckEnvSpecsReportsEveryMismatch) {
  LyingEnv env;
  EXPECT_THAT([&] { check_env_specs(env); },
              ThrowsMessage<tensordict::ValueError>(AllOf(HasSubstr("check_env_specs(Walk)"),
                                                          HasSubstr("'observation'"),
                                                          HasSubstr("('next', 'observation')"))));
}

TEST(EnvBaseTest, FakeTensordictHasEverySpecdEntry) {
  WalkEnv env({2});
  auto fake = env.fake_tensordict();
  for (const auto& key : Keys{"observation",
                              "done",
                              "action",
                              {"next", "observation"},
                              {"next", "reward"},
                              {"next", "truncated"}}) {
    EXPECT_TRUE(fake.contains(key)) << key.to_string();
  }
}

TEST(EnvBaseTest, SpecsMustStartWithTheBatchSize) {
  struct BadEnv : EnvBase {
    BadEnv() : EnvBase("Bad", EnvBaseOptions().batch_size({4})) {
      set_action_spec(std::make_shared<specs::Unbounded>(Shape{3, 2}));
    }
    TensorDict reset_impl(const TensorDict&) override { return {}; }
    TensorDict step_impl(const TensorDict&) override { return {}; }
  };
  EXPECT_THAT([&] { BadEnv env; }, ThrowsMessage<tensordict::ShapeError>(
                                       HasSubstr("Bad: the action spec has shape [3, 2]")));
}

TEST(EnvBaseTest, Prints) {
  WalkEnv env({2});
  EXPECT_EQ(env.to_string(), "Walk(batch_size=[2], device=cpu)");
}

}  // namespace
}  // namespace tdrl::envs

namespace tdrl::envs {
namespace {

TEST(EnvBaseTest, StepMdpGivesNestedEntriesTheirOwnNode) {
  TensorDict next({{"stats", TensorDict({{"count", torch::ones({2, 1})}}, {2})},
                   {"reward", torch::zeros({2, 1})}},
                  {2});
  TensorDict td({{"info", TensorDict({{"x", torch::ones({2, 1})}}, {2})}, {"next", next}}, {2});
  auto root = step_mdp(td);
  root.set({"stats", "count"}, torch::zeros({2, 1}));
  root.set({"info", "x"}, torch::zeros({2, 1}));
  EXPECT_TRUE(torch::equal(td.get({"next", "stats", "count"}), torch::ones({2, 1})));
  EXPECT_TRUE(torch::equal(td.get({"info", "x"}), torch::ones({2, 1})));
}

}  // namespace
}  // namespace tdrl::envs
