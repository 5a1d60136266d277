#include <tdrl/envs/mujoco_env.h>
#include <tdrl/envs/mujoco_tasks.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <tensordict/errors.h>

#include "support/env_checks.h"
#include "support/temp_dir.h"
#include "support/test_names.h"

namespace tdrl::envs {
namespace {

using namespace tdrl::testing::names;
using tdrl::testing::expect_identical;
using tensordict::testing::TempDir;

// Every test fails when MuJoCo warns, unless it declares the warnings it provokes.
class MujocoTestBase : public ::testing::Test {
 protected:
  void SetUp() override { warnings_before_ = mujoco_warning_count(); }
  void TearDown() override {
    if (!expect_warnings_) {
      EXPECT_EQ(mujoco_warning_count(), warnings_before_) << "MuJoCo raised unexpected warnings";
    }
  }
  void expect_mujoco_warnings() { expect_warnings_ = true; }

 private:
  int64_t warnings_before_ = 0;
  bool expect_warnings_ = false;
};

// Every leaf of `a` equals the same leaf of `b` bit for bit, and they have the same leaves.
torch::Tensor rows(const torch::Tensor& t, int64_t i) { return t.index({i}); }

// ---- Shared conformance tests, run on every task
// -------------------------------------------------

struct MujocoTaskCase {
  std::string name;
  std::function<std::unique_ptr<MujocoEnv>(const MujocoEnvOptions&)> make;
  int64_t obs_dim;
  int64_t action_dim;
  double action_bound;
  int64_t frame_skip;
  double timestep;
  int64_t max_episode_steps;
  // The observation components that are velocities (what mask_velocity drops).
  int64_t velocity_dim;
};

std::ostream& operator<<(std::ostream& os, const MujocoTaskCase& task) { return os << task.name; }

template <typename Env>
std::function<std::unique_ptr<MujocoEnv>(const MujocoEnvOptions&)> maker() {
  return [](const MujocoEnvOptions& options) { return std::make_unique<Env>(options); };
}

std::vector<MujocoTaskCase> mujoco_task_cases() {
  return {
      {"InvertedPendulum", maker<InvertedPendulumEnv>(), 4, 1, 3.0, 2, 0.02, 1000, 2},
      {"InvertedDoublePendulum", maker<InvertedDoublePendulumEnv>(), 11, 1, 1.0, 5, 0.01, 1000, 3},
      {"Reacher", maker<ReacherEnv>(), 11, 2, 1.0, 2, 0.01, 50, 2},
      {"HalfCheetah", maker<HalfCheetahEnv>(), 17, 6, 1.0, 5, 0.01, 1000, 9},
      {"Hopper", maker<HopperEnv>(), 11, 3, 1.0, 4, 0.002, 1000, 6},
      {"Walker2d", maker<Walker2dEnv>(), 17, 6, 1.0, 4, 0.002, 1000, 9},
      {"Ant", maker<AntEnv>(), 27, 8, 1.0, 5, 0.01, 1000, 14},
      {"Humanoid", maker<HumanoidEnv>(), 376, 17, 0.4, 5, 0.003, 1000, 23 + 14 * 6},
  };
}

class MujocoTaskTest : public MujocoTestBase, public ::testing::WithParamInterface<MujocoTaskCase> {
 protected:
  std::unique_ptr<MujocoEnv> make(const MujocoEnvOptions& options = {}) const {
    return GetParam().make(options);
  }
};

TEST_P(MujocoTaskTest, PassesCheckEnvSpecsUnbatchedAndBatched) {
  auto single = make();
  EXPECT_NO_THROW(check_env_specs(*single, 5));
  auto batched = make(MujocoEnvOptions().batch_size({3}).num_threads(2));
  EXPECT_NO_THROW(check_env_specs(*batched, 5));
}

TEST_P(MujocoTaskTest, HasTheTaskDimensionsAndSettings) {
  const auto& task = GetParam();
  auto env = make(MujocoEnvOptions().batch_size({3}));
  EXPECT_EQ(env->observation_spec()->get(specs::kObservation)->shape(), (Shape{3, task.obs_dim}));
  EXPECT_EQ(env->observation_spec()->get(specs::kObservation)->dtype(), torch::kFloat32);
  const auto bounded = std::dynamic_pointer_cast<specs::Bounded>(env->action_spec());
  ASSERT_NE(bounded, nullptr);
  EXPECT_EQ(bounded->shape(), (Shape{3, task.action_dim}));
  EXPECT_EQ(bounded->dtype(), torch::kFloat32);
  EXPECT_TRUE(torch::equal(bounded->low(),
                           torch::full({3, task.action_dim}, -task.action_bound, torch::kFloat32)));
  EXPECT_TRUE(torch::equal(bounded->high(),
                           torch::full({3, task.action_dim}, task.action_bound, torch::kFloat32)));
  EXPECT_EQ(env->reward_spec()->shape(), (Shape{3, 1}));
  EXPECT_EQ(env->frame_skip(), task.frame_skip);
  EXPECT_DOUBLE_EQ(env->dt(), task.timestep * static_cast<double>(task.frame_skip));
  EXPECT_EQ(env->max_episode_steps(), task.max_episode_steps);
}

// mask_velocity: the same rollout's observation without the velocity components, which are
// found as the columns of the whole observation that the masked one skips, in order.
TEST_P(MujocoTaskTest, MaskVelocityDropsExactlyTheVelocityComponents) {
  const auto& task = GetParam();
  auto full = make(MujocoEnvOptions().batch_size({2}));
  auto masked = make(MujocoEnvOptions().batch_size({2}).mask_velocity(true));
  EXPECT_EQ(masked->observation_dim(), task.obs_dim - task.velocity_dim);
  EXPECT_EQ(masked->observation_spec()->get(specs::kObservation)->shape(),
            (Shape{2, task.obs_dim - task.velocity_dim}));
  EXPECT_NO_THROW(check_env_specs(*masked, 3));
  EXPECT_THAT(masked->to_string(), HasSubstr("mask_velocity=true"));
  full->set_seed(3);
  masked->set_seed(3);
  std::vector<torch::Tensor> seen_full{full->reset().get(specs::kObservation)};
  std::vector<torch::Tensor> seen_masked{masked->reset().get(specs::kObservation)};
  torch::manual_seed(0);
  for (int step = 0; step < 3; ++step) {
    const auto action = (torch::rand({2, task.action_dim}) * 2 - 1) * task.action_bound;
    auto a = TensorDict({{specs::kAction, action}}, {2});
    auto b = TensorDict({{specs::kAction, action.clone()}}, {2});
    full->step(a);
    masked->step(b);
    seen_full.push_back(a.get({specs::kNext, specs::kObservation}));
    seen_masked.push_back(b.get({specs::kNext, specs::kObservation}));
  }
  const auto whole = torch::cat(seen_full), part = torch::cat(seen_masked);
  int64_t j = 0;
  for (int64_t i = 0; i < whole.size(1) && j < part.size(1); ++i)
    j += torch::equal(whole.select(1, i), part.select(1, j)) ? 1 : 0;
  EXPECT_EQ(j, part.size(1)) << "the masked observation is not the whole one less some columns";
}

TEST_P(MujocoTaskTest, SameSeedSameRolloutBitForBit) {
  auto a = make(MujocoEnvOptions().batch_size({2}));
  auto b = make(MujocoEnvOptions().batch_size({2}));
  a->set_seed(7);
  b->set_seed(7);
  const auto options = RolloutOptions().break_when_any_done(false);
  const TensorDict ra = a->rollout(30, nullptr, options);
  const TensorDict rb = b->rollout(30, nullptr, options);
  EXPECT_EQ(ra.batch_size(), (Shape{2, 30}));
  expect_identical(ra, rb);
  EXPECT_TRUE(torch::isfinite(ra.get({specs::kNext, specs::kObservation})).all().item<bool>());

  auto c = make(MujocoEnvOptions().batch_size({2}));
  c->set_seed(8);
  const TensorDict rc = c->rollout(30, nullptr, options);
  EXPECT_FALSE(torch::equal(ra.get(specs::kObservation), rc.get(specs::kObservation)));
}

// A run checkpointed mid-episode goes on as if it had not stopped: a fresh env loaded with the
// state continues the same stream (random actions, partial resets) bit for bit. Reacher's
// reward reads body positions the previous step derived, which the snapshot carries.
TEST_P(MujocoTaskTest, StateDictContinuesTheStreamInAFreshEnvBitForBit) {
  auto env = make(MujocoEnvOptions().batch_size({2}));
  env->set_seed(5);
  auto fresh = make(MujocoEnvOptions().batch_size({2}));
  fresh->set_seed(99);
  tdrl::testing::expect_state_dict_continues_the_stream(*env, *fresh, 7, 25);
}

TEST_P(MujocoTaskTest, TwoThreadsGiveTheSameRolloutAsOne) {
  auto serial = make(MujocoEnvOptions().batch_size({3}).num_threads(1));
  auto threaded = make(MujocoEnvOptions().batch_size({3}).num_threads(2));
  EXPECT_EQ(threaded->num_threads(), 2);
  serial->set_seed(3);
  threaded->set_seed(3);
  const auto options = RolloutOptions().break_when_any_done(false);
  expect_identical(serial->rollout(25, nullptr, options), threaded->rollout(25, nullptr, options));
}

TEST_P(MujocoTaskTest, BatchedEnvMatchesSingleEnvsFromTheSameStates) {
  auto batched = make(MujocoEnvOptions().batch_size({3}).num_threads(2));
  batched->set_seed(11);
  TensorDict td = batched->reset();
  const auto qpos = batched->qpos();
  const auto qvel = batched->qvel();
  std::vector<std::unique_ptr<MujocoEnv>> singles;
  for (int64_t i = 0; i < 3; ++i) {
    singles.push_back(make());
    singles.back()->set_state(rows(qpos, i), rows(qvel, i));
  }
  auto generator = at::detail::createCPUGenerator(5);
  for (int step = 0; step < 5; ++step) {
    const auto action = batched->action_spec()->rand(generator);
    td.set(specs::kAction, action);
    batched->step(td);
    for (int64_t i = 0; i < 3; ++i) {
      TensorDict single_td({{specs::kAction, rows(action, i)}}, {});
      singles[i]->step(single_td);
      for (const char* key :
           {specs::kObservation, specs::kReward, specs::kTerminated, specs::kTruncated}) {
        EXPECT_TRUE(
            torch::equal(single_td.get({specs::kNext, key}), rows(td.get({specs::kNext, key}), i)))
            << "step " << step << ", simulation " << i << ", key " << key;
      }
    }
    td = step_mdp(td);
  }
}

TEST_P(MujocoTaskTest, TruncatesAtMaxEpisodeSteps) {
  auto env =
      make(MujocoEnvOptions().batch_size({2}).max_episode_steps(4).terminate_when_unhealthy(false));
  env->set_seed(0);
  TensorDict td = env->reset();
  for (int step = 1; step <= 4; ++step) {
    td.set(specs::kAction, env->action_spec()->zero());
    env->step(td);
    const bool last = step == 4;
    EXPECT_EQ(td.get({specs::kNext, specs::kTruncated}).all().item<bool>(), last)
        << "step " << step;
    EXPECT_EQ(td.get({specs::kNext, specs::kDone}).all().item<bool>(), last) << "step " << step;
    EXPECT_FALSE(td.get({specs::kNext, specs::kTerminated}).any().item<bool>()) << "step " << step;
    td = step_mdp(td);
  }
  // A reset starts a new episode: its first step is not truncated.
  td = env->reset();
  td.set(specs::kAction, env->action_spec()->zero());
  env->step(td);
  EXPECT_FALSE(td.get({specs::kNext, specs::kTruncated}).any().item<bool>());
}

TEST_P(MujocoTaskTest, ResetMaskResetsOnlySelectedSimulations) {
  auto env = make(MujocoEnvOptions().batch_size({2}));
  env->set_seed(1);
  TensorDict td = env->reset();
  for (int step = 0; step < 3; ++step) {
    td.set(specs::kAction, env->action_spec()->rand(env->generator()));
    env->step(td);
    td = step_mdp(td);
  }
  const auto qpos_before = env->qpos();
  const auto obs_before = env->current_observation();
  td.set(specs::kReset, torch::tensor({true, false}).view({2, 1}));
  td = env->reset(td);
  const auto qpos_after = env->qpos();
  EXPECT_TRUE(torch::equal(rows(qpos_after, 1), rows(qpos_before, 1)));
  EXPECT_FALSE(torch::equal(rows(qpos_after, 0), rows(qpos_before, 0)));
  EXPECT_TRUE(torch::equal(rows(td.get(specs::kObservation), 1), rows(obs_before, 1)));
  EXPECT_TRUE(torch::equal(td.get(specs::kObservation), env->current_observation()));
}

INSTANTIATE_TEST_SUITE_P(AllTasks, MujocoTaskTest, ::testing::ValuesIn(mujoco_task_cases()),
                         [](const ::testing::TestParamInfo<MujocoTaskCase>& info) {
                           return info.param.name;
                         });

// ---- Task-specific rules
// -------------------------------------------------------------------------

class MujocoTaskRuleTest : public MujocoTestBase {
 protected:
  // Sets the single env's state to its reset state with `edits` applied to qpos, takes one
  // step with a zero action and returns the stepped TensorDict.
  static TensorDict step_from(MujocoEnv& env, const std::vector<std::pair<int64_t, double>>& edits,
                              std::optional<torch::Tensor> action = std::nullopt) {
    env.set_seed(0);
    TensorDict td = env.reset();
    auto qpos = env.qpos().clone();
    for (const auto& edit : edits) qpos.index_put_({edit.first}, edit.second);
    env.set_state(qpos, env.qvel());
    td.set(specs::kAction, action ? *action : env.action_spec()->zero());
    return env.step(td);
  }
  static bool terminated(const TensorDict& td) {
    return td.get({specs::kNext, specs::kTerminated}).item<bool>();
  }
  static double reward(const TensorDict& td) {
    return td.get({specs::kNext, specs::kReward}).item<double>();
  }
};

TEST_F(MujocoTaskRuleTest, InvertedPendulumTerminatesWhenThePoleLeansPast02) {
  InvertedPendulumEnv env;
  const TensorDict upright = step_from(env, {{1, 0.05}});
  EXPECT_FALSE(terminated(upright));
  EXPECT_EQ(reward(upright), 1.0);
  const TensorDict fallen = step_from(env, {{1, 0.25}});
  EXPECT_TRUE(terminated(fallen));
  EXPECT_TRUE(fallen.get({specs::kNext, specs::kDone}).item<bool>());
  EXPECT_EQ(reward(fallen), 1.0);
  EXPECT_TRUE(terminated(step_from(env, {{1, -0.25}})));
}

TEST_F(MujocoTaskRuleTest, InvertedDoublePendulumTerminatesWhenTheTipDropsToOne) {
  InvertedDoublePendulumEnv env;
  const TensorDict upright = step_from(env, {{1, 0.0}, {2, 0.0}});
  EXPECT_FALSE(terminated(upright));
  // Upright, the tip is at y = 1.2 (2 - 0.8 distance penalty): the reward is near 10 - 0.64.
  EXPECT_NEAR(reward(upright), 10.0 - 0.64, 0.05);
  EXPECT_TRUE(terminated(step_from(env, {{1, 1.5}})));
}

TEST_F(MujocoTaskRuleTest, HopperTerminatesWhenTooLowOrTilted) {
  HopperEnv env;
  EXPECT_FALSE(terminated(step_from(env, {})));
  EXPECT_TRUE(terminated(step_from(env, {{1, 0.6}})));  // torso height <= 0.7
  EXPECT_TRUE(terminated(step_from(env, {{2, 0.3}})));  // |angle| >= 0.2
  EXPECT_TRUE(terminated(step_from(env, {{2, -0.3}})));
}

TEST_F(MujocoTaskRuleTest, HopperTerminatesWhenAVelocityLeavesTheHealthyRange) {
  HopperEnv env;
  env.set_seed(0);
  TensorDict td = env.reset();
  auto qvel = env.qvel().clone();
  qvel.index_put_({0}, 150.0);  // sliding forward in the air: |qvel| >= 100
  env.set_state(env.qpos(), qvel);
  td.set(specs::kAction, env.action_spec()->zero());
  env.step(td);
  EXPECT_TRUE(td.get({specs::kNext, specs::kTerminated}).item<bool>());
}

TEST_F(MujocoTaskRuleTest, HopperRewardIsHealthyPlusForwardVelocityMinusControlCost) {
  HopperEnv env;
  env.set_seed(2);
  TensorDict td = env.reset();
  const double x_before = env.qpos()[0].item<double>();
  const auto action = torch::tensor({0.5F, -0.25F, 1.0F});
  td.set(specs::kAction, action);
  env.step(td);
  const double x_after = env.qpos()[0].item<double>();
  const double expected = 1.0 + (x_after - x_before) / env.dt() - 1e-3 * (0.25 + 0.0625 + 1.0);
  EXPECT_NEAR(td.get({specs::kNext, specs::kReward}).item<double>(), expected, 1e-5);
}

TEST_F(MujocoTaskRuleTest, UnhealthyWithoutTerminationPaysNoHealthyReward) {
  HopperEnv env(MujocoEnvOptions().terminate_when_unhealthy(false));
  env.set_seed(0);
  TensorDict td = env.reset();
  auto qpos = env.qpos().clone();
  qpos.index_put_({1}, 0.6);
  env.set_state(qpos, env.qvel());
  const double x_before = env.qpos()[0].item<double>();
  td.set(specs::kAction, env.action_spec()->zero());
  env.step(td);
  EXPECT_FALSE(td.get({specs::kNext, specs::kTerminated}).item<bool>());
  const double x_after = env.qpos()[0].item<double>();
  EXPECT_NEAR(td.get({specs::kNext, specs::kReward}).item<double>(),
              (x_after - x_before) / env.dt(), 1e-5);
}

TEST_F(MujocoTaskRuleTest, Walker2dTerminatesOutsideItsHeightAndAngleRanges) {
  Walker2dEnv env;
  EXPECT_FALSE(terminated(step_from(env, {})));
  EXPECT_TRUE(terminated(step_from(env, {{1, 0.75}})));  // height <= 0.8
  EXPECT_TRUE(terminated(step_from(env, {{1, 2.1}})));   // height >= 2
  EXPECT_TRUE(terminated(step_from(env, {{2, 1.2}})));   // |angle| >= 1
  EXPECT_TRUE(terminated(step_from(env, {{2, -1.2}})));
}

TEST_F(MujocoTaskRuleTest, AntTerminatesWhenTheTorsoLeavesItsHeightRange) {
  AntEnv env;
  EXPECT_FALSE(terminated(step_from(env, {})));
  EXPECT_TRUE(terminated(step_from(env, {{2, 1.5}})));  // z > 1
}

TEST_F(MujocoTaskRuleTest, HumanoidTerminatesWhenTheTorsoDropsBelowOne) {
  HumanoidEnv env;
  EXPECT_FALSE(terminated(step_from(env, {})));
  EXPECT_TRUE(terminated(step_from(env, {{2, 0.9}})));
}

TEST_F(MujocoTaskRuleTest, HalfCheetahRewardIsForwardVelocityMinusControlCostAndNeverEnds) {
  HalfCheetahEnv env;
  env.set_seed(4);
  TensorDict td = env.reset();
  const double x_before = env.qpos()[0].item<double>();
  const auto action = torch::full({6}, 0.5F);
  td.set(specs::kAction, action);
  env.step(td);
  const double x_after = env.qpos()[0].item<double>();
  EXPECT_NEAR(td.get({specs::kNext, specs::kReward}).item<double>(),
              (x_after - x_before) / 0.05 - 0.1 * 6 * 0.25, 1e-5);
  EXPECT_FALSE(terminated(step_from(env, {{1, -5.0}, {2, 3.0}})));
}

TEST_F(MujocoTaskRuleTest, HalfCheetahObservationIsQposWithoutXThenQvel) {
  HalfCheetahEnv env(MujocoEnvOptions().batch_size({2}));
  env.set_seed(0);
  const TensorDict td = env.reset();
  const auto expected = torch::cat({env.qpos().slice(1, 1), env.qvel()}, 1).to(torch::kFloat32);
  EXPECT_TRUE(torch::equal(td.get(specs::kObservation), expected));
}

TEST_F(MujocoTaskRuleTest, MaskedInvertedPendulumObservesTheCartPositionAndPoleAngle) {
  InvertedPendulumEnv env(MujocoEnvOptions().batch_size({2}).mask_velocity(true));
  env.set_seed(0);
  const TensorDict td = env.reset();
  EXPECT_TRUE(torch::equal(td.get(specs::kObservation), env.qpos().to(torch::kFloat32)));
}

TEST_F(MujocoTaskRuleTest, HumanoidObservationStartsWithQposWithoutXYThenQvel) {
  HumanoidEnv env;
  env.set_seed(0);
  const TensorDict td = env.reset();
  const auto obs = td.get(specs::kObservation);
  EXPECT_TRUE(torch::equal(obs.slice(0, 0, 22), env.qpos().slice(0, 2).to(torch::kFloat32)));
  EXPECT_TRUE(torch::equal(obs.slice(0, 22, 45), env.qvel().to(torch::kFloat32)));
  // After a step on the ground the contact forces (the last 84 entries) are not all zero.
  TensorDict stepped = td;
  for (int i = 0; i < 30; ++i) {
    stepped.set(specs::kAction, env.action_spec()->zero());
    env.step(stepped);
    stepped = step_mdp(stepped);
  }
  EXPECT_TRUE(stepped.get(specs::kObservation).slice(0, 376 - 84).abs().sum().item<double>() > 0.0);
}

TEST_F(MujocoTaskRuleTest, ReacherRewardsTheDistanceBeforeTheStepAndTheControlCost) {
  ReacherEnv env;
  env.set_seed(5);
  TensorDict td = env.reset();
  const auto to_target = td.get(specs::kObservation).slice(0, 8, 11).to(torch::kFloat64);
  td.set(specs::kAction, torch::tensor({0.5F, -0.5F}));
  env.step(td);
  const double expected = -to_target.norm().item<double>() - 0.5;
  EXPECT_NEAR(td.get({specs::kNext, specs::kReward}).item<double>(), expected, 1e-6);
  EXPECT_FALSE(td.get({specs::kNext, specs::kTerminated}).item<bool>());
}

TEST_F(MujocoTaskRuleTest, ReacherTargetStartsInsideTheDiscAtRest) {
  ReacherEnv env(MujocoEnvOptions().batch_size({64}));
  env.set_seed(9);
  env.reset();
  const auto target = env.qpos().slice(1, 2, 4);
  EXPECT_TRUE((target.norm(2, 1) < 0.2).all().item<bool>());
  EXPECT_TRUE((env.qvel().slice(1, 2, 4) == 0).all().item<bool>());
  EXPECT_TRUE((env.qvel().slice(1, 0, 2).abs() <= 0.005).all().item<bool>());
  EXPECT_TRUE((env.qpos().slice(1, 0, 2).abs() <= 0.1).all().item<bool>());
}

TEST_F(MujocoTaskRuleTest, ResetNoiseStaysWithinTheScale) {
  Walker2dEnv env(MujocoEnvOptions().batch_size({32}));
  env.set_seed(0);
  env.reset();
  const auto qpos0 = torch::tensor({0.0, 1.25, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, torch::kFloat64);
  EXPECT_TRUE(((env.qpos() - qpos0).abs() <= 5e-3).all().item<bool>());
  EXPECT_TRUE((env.qvel().abs() <= 5e-3).all().item<bool>());
  EXPECT_TRUE(((env.qpos() - qpos0).abs() > 0).any().item<bool>());
}

// ---- The generic MujocoEnv
// -----------------------------------------------------------------------

// A block on a rail pushed by a motor; `gear` 1e12 makes any nonzero action blow up.
std::string write_slider_model(
    const TempDir& dir, const std::string& gear = "1",
    const std::string& ctrl = "ctrllimited=\"true\" ctrlrange=\"-1 1\"") {
  const std::string path = dir / "slider.xml";
  std::ofstream out(path);
  out << "<mujoco model=\"slider\">\n"
         "  <option timestep=\"0.01\"/>\n"
         "  <worldbody>\n"
         "    <body name=\"block\">\n"
         "      <joint name=\"rail\" type=\"slide\" axis=\"1 0 0\"/>\n"
         "      <geom type=\"box\" size=\"0.1 0.1 0.1\" mass=\"1\"/>\n"
         "    </body>\n"
         "  </worldbody>\n"
         "  <actuator>\n"
         "    <motor joint=\"rail\" gear=\""
      << gear << "\" " << ctrl
      << "/>\n"
         "  </actuator>\n"
         "</mujoco>\n";
  return path;
}

class MujocoEnvTest : public MujocoTestBase {};

TEST_F(MujocoEnvTest, LoadStateDictRefusesAnotherModelOrBatchAndKeepsItsState) {
  HopperEnv hopper(MujocoEnvOptions().batch_size({2}));
  hopper.set_seed(1);
  hopper.reset();
  const auto qpos = hopper.qpos();
  HalfCheetahEnv cheetah(MujocoEnvOptions().batch_size({2}));
  EXPECT_THAT(
      error_message<tensordict::ShapeError>([&] { hopper.load_state_dict(cheetah.state_dict()); }),
      HasSubstr("'mjdata' has shape"));
  HopperEnv three(MujocoEnvOptions().batch_size({3}));
  EXPECT_THAT(
      error_message<tensordict::ShapeError>([&] { hopper.load_state_dict(three.state_dict()); }),
      HasSubstr("expected [2, "));
  // A snapshot of the right length whose header names another buffer size.
  TensorDict forged = hopper.state_dict();
  auto bytes = forged.get("mjdata").clone();
  bytes.index_put_({0, torch::indexing::Slice(4, 8)}, 0);  // mjData::nbuffer
  forged.set("mjdata", bytes);
  EXPECT_THAT(error_message<tensordict::ValueError>([&] { hopper.load_state_dict(forged); }),
              HasSubstr("another model or MuJoCo version"));
  TensorDict no_steps = hopper.state_dict();
  no_steps.del_("steps");
  EXPECT_THAT(error_message<tensordict::KeyError>([&] { hopper.load_state_dict(no_steps); }),
              HasSubstr("'steps'"));
  EXPECT_TRUE(torch::equal(hopper.qpos(), qpos));
}

TEST_F(MujocoEnvTest, GenericEnvObservesQposThenQvelWithZeroReward) {
  TempDir dir;
  MujocoEnv env(MujocoEnvOptions().model_path(write_slider_model(dir)).batch_size({2}));
  EXPECT_EQ(env.name(), "MujocoEnv");
  EXPECT_EQ(env.observation_dim(), 2);
  EXPECT_EQ(env.max_episode_steps(), 0);
  EXPECT_NO_THROW(check_env_specs(env));
  TensorDict td = env.reset();
  td.set(specs::kAction, torch::full({2, 1}, 1.0F));
  env.step(td);
  const auto expected = torch::cat({env.qpos(), env.qvel()}, 1).to(torch::kFloat32);
  EXPECT_TRUE(torch::equal(td.get({specs::kNext, specs::kObservation}), expected));
  EXPECT_GT(env.qvel()[0][0].item<double>(), 0.0);
  EXPECT_TRUE(torch::equal(td.get({specs::kNext, specs::kReward}), torch::zeros({2, 1})));
  EXPECT_FALSE(td.get({specs::kNext, specs::kDone}).any().item<bool>());
}

TEST_F(MujocoEnvTest, FrameSkipRunsThatManyMujocoSteps) {
  TempDir dir;
  MujocoEnv env(MujocoEnvOptions().model_path(write_slider_model(dir)).frame_skip(3));
  EXPECT_DOUBLE_EQ(env.dt(), 0.03);
  TensorDict td = env.reset();
  td.set(specs::kAction, torch::full({1}, 1.0F));
  env.step(td);
  // Semi-implicit Euler, force 1 on mass 1 for 3 steps of 0.01: velocity 0.03.
  EXPECT_NEAR(env.qvel()[0].item<double>(), 0.03, 1e-12);
}

TEST_F(MujocoEnvTest, UnlimitedActuatorsGiveAnUnboundedActionSpec) {
  TempDir dir;
  MujocoEnv env(
      MujocoEnvOptions().model_path(write_slider_model(dir, "1", "ctrllimited=\"false\"")));
  EXPECT_EQ(std::dynamic_pointer_cast<specs::Bounded>(env.action_spec()), nullptr);
  EXPECT_NE(std::dynamic_pointer_cast<specs::Unbounded>(env.action_spec()), nullptr);
  EXPECT_EQ(env.action_spec()->shape(), (Shape{1}));
}

TEST_F(MujocoEnvTest, InstabilityTruncatesWithFiniteObservationsAndLogsOnce) {
  expect_mujoco_warnings();
  TempDir dir;
  MujocoEnv env(MujocoEnvOptions().model_path(write_slider_model(dir, "1e12")).batch_size({2}));
  const int64_t warnings_before = mujoco_warning_count();
  TensorDict td = env.reset();
  ::testing::internal::CaptureStderr();
  for (int step = 0; step < 2; ++step) {
    td.set(specs::kAction, torch::tensor({{1.0F}, {0.0F}}));
    env.step(td);
    EXPECT_TRUE(td.get({specs::kNext, specs::kTruncated})[0].item<bool>());
    EXPECT_TRUE(td.get({specs::kNext, specs::kDone})[0].item<bool>());
    EXPECT_FALSE(td.get({specs::kNext, specs::kTerminated})[0].item<bool>());
    EXPECT_FALSE(td.get({specs::kNext, specs::kDone})[1].item<bool>());
    EXPECT_EQ(td.get({specs::kNext, specs::kReward})[0].item<float>(), 0.0F);
    // The unstable simulation is back at the model's default state.
    EXPECT_TRUE(torch::equal(td.get({specs::kNext, specs::kObservation})[0], torch::zeros({2})));
    EXPECT_TRUE(torch::isfinite(td.get({specs::kNext, specs::kObservation})).all().item<bool>());
    td = step_mdp(td);
  }
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(log, HasSubstr("MujocoEnv: simulation 0 became unstable"));
  EXPECT_THAT(log, HasSubstr("QACC"));
  EXPECT_EQ(log.find("became unstable"), log.rfind("became unstable")) << log;
  EXPECT_EQ(env.instability_count(), 2);
  EXPECT_GT(mujoco_warning_count(), warnings_before);

  // The next reset starts a fresh, stable episode.
  td = env.reset();
  td.set(specs::kAction, torch::zeros({2, 1}));
  env.step(td);
  EXPECT_FALSE(td.get({specs::kNext, specs::kDone}).any().item<bool>());
}

TEST_F(MujocoEnvTest, InstabilityInARolloutNeverCrashesOrYieldsNaN) {
  expect_mujoco_warnings();
  TempDir dir;
  MujocoEnv env(MujocoEnvOptions()
                    .model_path(write_slider_model(dir, "1e12"))
                    .batch_size({4})
                    .num_threads(2));
  env.set_seed(0);
  const TensorDict rollout = env.rollout(10, nullptr, RolloutOptions().break_when_any_done(false));
  EXPECT_TRUE(torch::isfinite(rollout.get({specs::kNext, specs::kObservation})).all().item<bool>());
  EXPECT_TRUE(torch::isfinite(rollout.get({specs::kNext, specs::kReward})).all().item<bool>());
  EXPECT_TRUE(rollout.get({specs::kNext, specs::kTruncated}).all().item<bool>());
  EXPECT_EQ(env.instability_count(), 40);
}

TEST_F(MujocoEnvTest, MissingModelFileThrowsNamingThePathAndTheFix) {
  EXPECT_THAT([&] { MujocoEnv env(MujocoEnvOptions().model_path("/nonexistent/robot.xml")); },
              ThrowsMessage<tensordict::ValueError>(AllOf(
                  HasSubstr("'/nonexistent/robot.xml' does not exist"), HasSubstr("model_path"))));
  EXPECT_THAT([&] { HopperEnv env(MujocoEnvOptions().asset_dir("/nonexistent")); },
              ThrowsMessage<tensordict::ValueError>(
                  AllOf(HasSubstr("Hopper-v4"), HasSubstr("/nonexistent/Hopper.xml"))));
}

TEST_F(MujocoEnvTest, MalformedModelThrowsWithMujocosMessage) {
  TempDir dir;
  const std::string path = dir / "broken.xml";
  std::ofstream(path) << "<mujoco><worldbody><body><joint type=\"bogus\"/></body></worldbody>"
                         "</mujoco>";
  EXPECT_THAT([&] { MujocoEnv env(MujocoEnvOptions().model_path(path)); },
              ThrowsMessage<tensordict::ValueError>(
                  AllOf(HasSubstr("MuJoCo could not load"), HasSubstr("bogus"))));
}

TEST_F(MujocoEnvTest, GenericEnvWithoutModelPathThrows) {
  EXPECT_THROW(
      {
        try {
          MujocoEnv env(MujocoEnvOptions{});
        } catch (const tensordict::ValueError& e) {
          EXPECT_THAT(e.what(), HasSubstr("no model to load"));
          throw;
        }
      },
      tensordict::ValueError);
}

TEST_F(MujocoEnvTest, InvalidOptionsThrowNamingTheOption) {
  auto message = [](const MujocoEnvOptions& options) {
    try {
      HalfCheetahEnv env(options);
    } catch (const tensordict::ValueError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(message(MujocoEnvOptions().num_threads(0)), HasSubstr("num_threads must be >= 1"));
  EXPECT_THAT(message(MujocoEnvOptions().frame_skip(0)), HasSubstr("frame_skip must be >= 1"));
  EXPECT_THAT(message(MujocoEnvOptions().reset_noise_scale(-1.0)),
              HasSubstr("reset_noise_scale must be finite and >= 0"));
  EXPECT_THAT(message(MujocoEnvOptions().max_episode_steps(-1)),
              HasSubstr("max_episode_steps must be >= 0"));
}

TEST_F(MujocoEnvTest, ReplacementModelWithOtherDimensionsIsRejected) {
  EXPECT_THAT(
      [&] {
        HalfCheetahEnv env(
            MujocoEnvOptions().model_path(default_mujoco_asset_dir() + "/Hopper.xml"));
      },
      ThrowsMessage<tensordict::ValueError>(
          AllOf(HasSubstr("has nq=6, nv=6, nu=3"), HasSubstr("the task needs nq=9, nv=9, nu=6"))));
}

TEST_F(MujocoEnvTest, UnknownBodyNameListsTheModelsBodies) {
  HopperEnv env;
  EXPECT_EQ(env.body_id("torso"), 1);
  EXPECT_THAT([&] { env.body_id("thihg"); },
              ThrowsMessage<tensordict::KeyError>(
                  AllOf(HasSubstr("no body named 'thihg'"), HasSubstr("'thigh'"))));
}

TEST_F(MujocoEnvTest, SetStateRejectsWrongShapesDtypesAndNonFiniteValues) {
  HopperEnv env(MujocoEnvOptions().batch_size({2}));
  const auto qpos = env.qpos();
  const auto qvel = env.qvel();
  EXPECT_THAT(
      [&] {
        env.set_state(torch::zeros({2, 5}, torch::kFloat64), qvel);
      },
      ThrowsMessage<tensordict::ShapeError>(
          AllOf(HasSubstr("qpos must have shape [2, 6]"), HasSubstr("got [2, 5]"))));
  EXPECT_THROW(env.set_state(qpos.to(torch::kInt64), qvel), tensordict::TypeError);
  auto bad = qvel.clone();
  bad.index_put_({0, 0}, std::numeric_limits<double>::quiet_NaN());
  EXPECT_THROW(env.set_state(qpos, bad), tensordict::ValueError);
  EXPECT_TRUE(torch::equal(env.qpos(), qpos));  // nothing changed
  EXPECT_TRUE(torch::equal(env.qvel(), qvel));
}

TEST_F(MujocoEnvTest, BadActionsGetEnvBaseErrors) {
  HalfCheetahEnv env(MujocoEnvOptions().batch_size({2}));
  TensorDict td = env.reset();
  EXPECT_THROW(env.step(td), tensordict::KeyError);
  td.set(specs::kAction, torch::zeros({2, 5}));
  EXPECT_THROW(env.step(td), tensordict::ShapeError);
  auto nan = torch::zeros({2, 6});
  nan.index_put_({1, 2}, std::numeric_limits<float>::quiet_NaN());
  td.set(specs::kAction, nan);
  EXPECT_THROW(env.step(td), tensordict::ValueError);
}

// A generic env whose after_step hook throws for simulation 3 (a pool thread may run it).
class ThrowingEnv : public MujocoEnv {
 public:
  explicit ThrowingEnv(const MujocoEnvOptions& options)
      : MujocoEnv("ThrowingEnv", options, MujocoTaskConfig{}) {}

 protected:
  MujocoStepOutcome after_step(const MujocoView& sim, const float* action,
                               const MujocoMemo& memo) const override {
    if (action[0] > 0.5F) throw std::runtime_error("hook failed");
    return {};
  }
};

TEST_F(MujocoEnvTest, AnExceptionInAHookOnAPoolThreadReachesTheCaller) {
  TempDir dir;
  ThrowingEnv env(
      MujocoEnvOptions().model_path(write_slider_model(dir)).batch_size({4}).num_threads(2));
  TensorDict td = env.reset();
  td.set(specs::kAction, torch::tensor({{0.0F}, {0.0F}, {0.0F}, {1.0F}}));
  EXPECT_THROW(
      {
        try {
          env.step(td);
        } catch (const std::runtime_error& e) {
          EXPECT_THAT(e.what(), HasSubstr("hook failed"));
          throw;
        }
      },
      std::runtime_error);
  EXPECT_FALSE(td.contains(specs::kNext));
  // The pool is still usable.
  td.set(specs::kAction, torch::zeros({4, 1}));
  env.step(td);
  EXPECT_FALSE(td.get({specs::kNext, specs::kDone}).any().item<bool>());
}

// A user's locomotion task on the slider: run along the rail, healthy while x < 0.5.
class SliderRunEnv : public LocomotionEnv {
 public:
  explicit SliderRunEnv(const MujocoEnvOptions& options)
      : LocomotionEnv("SliderRun", options, MujocoTaskConfig{},
                      {/*forward_reward_weight=*/2.0, /*healthy_reward=*/0.5,
                       /*ctrl_cost_weight=*/0.1}) {}

 protected:
  bool is_healthy(const MujocoView& sim) const override { return sim.qpos()[0] < 0.5; }
};

TEST_F(MujocoEnvTest, LocomotionEnvRewardsForwardVelocityHealthAndControlAsItsWeightsSay) {
  TempDir dir;
  SliderRunEnv env(MujocoEnvOptions().model_path(write_slider_model(dir)));
  EXPECT_EQ(env.reward_weights().forward_reward_weight, 2.0);
  env.set_seed(0);
  TensorDict td = env.reset();
  const double x_before = env.qpos()[0].item<double>();
  td.set(specs::kAction, torch::tensor({0.5F}));
  env.step(td);
  const double x_after = env.qpos()[0].item<double>();
  EXPECT_GT(x_after, x_before);
  EXPECT_NEAR(td.get({specs::kNext, specs::kReward}).item<double>(),
              2.0 * (x_after - x_before) / env.dt() + 0.5 - 0.1 * 0.25, 1e-5);
  EXPECT_FALSE(td.get({specs::kNext, specs::kTerminated}).item<bool>());

  // Past x = 0.5 the slider is unhealthy: terminated, and still paid the healthy reward as
  // Gymnasium's v4 tasks do when terminate_when_unhealthy is set.
  env.set_state(torch::tensor({1.0}), env.qvel());
  td.set(specs::kAction, torch::tensor({0.0F}));
  env.step(td);
  EXPECT_TRUE(td.get({specs::kNext, specs::kTerminated}).item<bool>());
}

// A user's locomotion task with one reward weight given.
class WeightedSliderEnv : public LocomotionEnv {
 public:
  WeightedSliderEnv(const MujocoEnvOptions& options, LocomotionReward reward)
      : LocomotionEnv("WeightedSlider", options, MujocoTaskConfig{}, reward) {}
};

TEST_F(MujocoEnvTest, LocomotionEnvRefusesANonFiniteWeightNamingIt) {
  TempDir dir;
  const auto options = MujocoEnvOptions().model_path(write_slider_model(dir));
  EXPECT_THAT(
      [&] {
        WeightedSliderEnv(options, {1.0, std::numeric_limits<double>::quiet_NaN(), 0.1});
      },
      ThrowsMessage<ValueError>(AllOf(HasSubstr("WeightedSlider"),
                                      HasSubstr("LocomotionReward::healthy_reward is nan"),
                                      HasSubstr("it must be finite"))));
  EXPECT_THAT(
      [&] {
        WeightedSliderEnv(options, {1.0, 0.0, std::numeric_limits<double>::infinity()});
      },
      ThrowsMessage<ValueError>(HasSubstr("LocomotionReward::ctrl_cost_weight is inf")));
}

TEST_F(MujocoEnvTest, LocomotionEnvWithoutTerminationPaysNoHealthyRewardWhileUnhealthy) {
  TempDir dir;
  SliderRunEnv env(
      MujocoEnvOptions().model_path(write_slider_model(dir)).terminate_when_unhealthy(false));
  env.set_seed(0);
  TensorDict td = env.reset();
  env.set_state(torch::tensor({1.0}), torch::zeros({1}));
  td.set(specs::kAction, torch::tensor({0.0F}));
  env.step(td);
  EXPECT_FALSE(td.get({specs::kNext, specs::kTerminated}).item<bool>());
  EXPECT_NEAR(td.get({specs::kNext, specs::kReward}).item<double>(), 0.0, 1e-9);
}

TEST_F(MujocoEnvTest, MoreThreadsThanSimulationsAreNotStarted) {
  HalfCheetahEnv env(MujocoEnvOptions().batch_size({2}).num_threads(8));
  EXPECT_EQ(env.num_threads(), 2);
  EXPECT_EQ(env.num_envs(), 2);
}

TEST_F(MujocoEnvTest, MultiDimensionalBatchSteps) {
  AntEnv env(MujocoEnvOptions().batch_size({2, 3}).num_threads(2));
  EXPECT_EQ(env.num_envs(), 6);
  EXPECT_NO_THROW(check_env_specs(env));
  EXPECT_EQ(env.qpos().sizes().vec(), (Shape{2, 3, 15}));
}

TEST_F(MujocoEnvTest, PrintsItsSettings) {
  HalfCheetahEnv env(MujocoEnvOptions().batch_size({2}));
  EXPECT_EQ(env.to_string(),
            "HalfCheetah-v4(batch_size=[2], device=cpu, model=HalfCheetah.xml, frame_skip=5, "
            "dt=0.05, max_episode_steps=1000, reset_noise_scale=0.1, num_threads=1)");
  std::ostringstream os;
  os << MujocoEnvOptions().batch_size({4}).num_threads(2).frame_skip(3);
  EXPECT_EQ(
      os.str(),
      "MujocoEnvOptions(model_path=default, asset_dir=default, batch_size=[4], "
      "num_threads=2, frame_skip=3, reset_noise_scale=default, max_episode_steps=default, "
      "terminate_when_unhealthy=true, mask_velocity=false, render_width=480, render_height=480, "
      "from_pixels=false, pixels_only=true, camera=track, render_backend=auto, device=cpu)");
}

TEST_F(MujocoEnvTest, DefaultAssetDirHoldsEveryTaskModel) {
  for (const char* file :
       {"InvertedPendulum.xml", "InvertedDoublePendulum.xml", "Reacher.xml", "HalfCheetah.xml",
        "Hopper.xml", "Walker2d.xml", "Ant.xml", "Humanoid.xml"}) {
    EXPECT_TRUE(std::filesystem::is_regular_file(default_mujoco_asset_dir() + "/" + file)) << file;
  }
}

}  // namespace
}  // namespace tdrl::envs
