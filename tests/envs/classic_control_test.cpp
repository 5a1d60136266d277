#include <tdrl/envs/classic_control.h>
#include <tdrl/envs/registry.h>

#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <tensordict/errors.h>

#include "support/env_checks.h"
#include "support/test_names.h"

namespace tdrl::envs {
namespace {

using namespace tdrl::testing::names;
using tdrl::testing::expect_identical;
using tensordict::shape_str;

constexpr double kPi = 3.14159265358979323846;

// ---- Shared conformance tests, run on every task -----------------------------------------------

struct TaskCase {
  std::string name;
  // The env with this batch size and time limit.
  std::function<std::unique_ptr<ClassicControlEnv>(Shape batch, int64_t max_steps)> make;
  // Whether the action is continuous (Bounded [*batch, 1] float32) or an index [*batch].
  bool continuous;
  // Its action bound (continuous) or number of actions (discrete).
  double action_bound;
  int64_t n_actions;
  // The initial-state distribution: uniform in [low, high] per component.
  std::vector<double> init_low;
  std::vector<double> init_high;
  int64_t default_max_steps;
};

std::ostream& operator<<(std::ostream& os, const TaskCase& task) { return os << task.name; }

std::vector<TaskCase> task_cases() {
  return {
      {"CartPole",
       [](Shape b, int64_t m) {
         return std::make_unique<CartPoleEnv>(
             CartPoleEnvOptions().batch_size(b).max_episode_steps(m));
       },
       false,
       0.0,
       2,
       {-0.05, -0.05, -0.05, -0.05},
       {0.05, 0.05, 0.05, 0.05},
       500},
      {"Pendulum",
       [](Shape b, int64_t m) {
         return std::make_unique<PendulumEnv>(
             PendulumEnvOptions().batch_size(b).max_episode_steps(m));
       },
       true,
       2.0,
       0,
       {-kPi, -1.0},
       {kPi, 1.0},
       200},
      {"MountainCar",
       [](Shape b, int64_t m) {
         return std::make_unique<MountainCarEnv>(
             MountainCarEnvOptions().batch_size(b).max_episode_steps(m));
       },
       false,
       0.0,
       3,
       {-0.6, 0.0},
       {-0.4, 0.0},
       200},
      {"MountainCarContinuous",
       [](Shape b, int64_t m) {
         return std::make_unique<MountainCarContinuousEnv>(
             MountainCarContinuousEnvOptions().batch_size(b).max_episode_steps(m));
       },
       true,
       1.0,
       0,
       {-0.6, 0.0},
       {-0.4, 0.0},
       999},
      {"Acrobot",
       [](Shape b, int64_t m) {
         return std::make_unique<AcrobotEnv>(
             AcrobotEnvOptions().batch_size(b).max_episode_steps(m));
       },
       false,
       0.0,
       3,
       {-0.1, -0.1, -0.1, -0.1},
       {0.1, 0.1, 0.1, 0.1},
       500},
  };
}

// A TensorDict holding `action` with the env's batch size.
TensorDict with_action(const EnvBase& env, const torch::Tensor& action) {
  return TensorDict({{"action", action}}, env.batch_size());
}

// Steps `env` with `action` and returns the "next" TensorDict.
TensorDict step_next(EnvBase& env, const torch::Tensor& action) {
  return env.step(with_action(env, action)).get_tensordict("next");
}

// Every leaf of `a` equals the same leaf of `b`, bit for bit.
// A NaN or inf action of a continuous task throws ValueError and changes nothing.
void expect_non_finite_action_rejected(ClassicControlEnv& env) {
  env.reset();
  const auto state = env.state();
  for (float bad : {std::nanf(""), std::numeric_limits<float>::infinity()}) {
    auto td = with_action(env, torch::tensor({0.0f, bad}).unsqueeze(-1));
    EXPECT_THAT([&] { env.step(td); },
                ThrowsMessage<tensordict::ValueError>(
                    HasSubstr(env.name() + "::step: action 'action' has non-finite values")));
    EXPECT_FALSE(td.contains("next"));
  }
  EXPECT_TRUE(torch::equal(env.state(), state));
}

class ClassicControlTest : public ::testing::TestWithParam<TaskCase> {
 protected:
  // A valid action for every sub-env of `batch`: the middle action (discrete) or 0.5 bound.
  torch::Tensor some_action(const Shape& batch) const {
    const auto& task = GetParam();
    if (task.continuous) {
      Shape shape = batch;
      shape.push_back(1);
      return torch::full(shape, 0.5 * task.action_bound, torch::kFloat32);
    }
    return torch::full(batch, task.n_actions - 1, torch::kInt64);
  }
};

TEST_P(ClassicControlTest, CheckEnvSpecsPassesUnbatchedBatchedAndMultiDim) {
  for (const Shape& batch : {Shape{}, Shape{4}, Shape{2, 3}}) {
    auto env = GetParam().make(batch, GetParam().default_max_steps);
    EXPECT_NO_THROW(check_env_specs(*env, 20)) << shape_str(batch);
  }
}

TEST_P(ClassicControlTest, DefaultsMatchGymnasium) {
  auto env = GetParam().make({}, GetParam().default_max_steps);
  EXPECT_EQ(env->max_episode_steps(), GetParam().default_max_steps);
  EXPECT_EQ(env->state_dim(), static_cast<int64_t>(GetParam().init_low.size()));
  const auto& spec = *env->action_spec();
  if (GetParam().continuous) {
    EXPECT_EQ(spec.shape(), (Shape{1}));
    EXPECT_EQ(spec.dtype(), torch::kFloat32);
  } else {
    EXPECT_EQ(spec.shape(), (Shape{}));
    EXPECT_EQ(spec.dtype(), torch::kInt64);
    EXPECT_EQ(dynamic_cast<const specs::Categorical&>(spec).n(), GetParam().n_actions);
  }
  EXPECT_EQ(env->observation_spec()->get("observation")->dtype(), torch::kFloat32);
  EXPECT_EQ(env->observation_spec()->get("observation")->shape(), (Shape{env->observation_dim()}));
}

TEST_P(ClassicControlTest, SameSeedSameRolloutBitForBit) {
  auto a = GetParam().make({5}, 30);
  auto b = GetParam().make({5}, 30);
  a->set_seed(42);
  b->set_seed(42);
  const auto options = RolloutOptions().break_when_any_done(false);
  const auto ra = a->rollout(80, nullptr, options);
  const auto rb = b->rollout(80, nullptr, options);
  expect_identical(ra, rb);
  EXPECT_TRUE(torch::equal(a->state(), b->state()));
}

// A checkpoint mid-episode: a fresh env loaded with the state continues the same stream
// (random actions, partial resets, time limits) bit for bit.
TEST_P(ClassicControlTest, StateDictContinuesTheStreamInAFreshEnvBitForBit) {
  auto env = GetParam().make({3}, 30);
  env->set_seed(11);
  auto fresh = GetParam().make({3}, 30);
  fresh->set_seed(12);
  tdrl::testing::expect_state_dict_continues_the_stream(*env, *fresh, 17, 50);
}

TEST_P(ClassicControlTest, LoadStateDictThatDoesNotFitThrowsAndKeepsTheState) {
  auto env = GetParam().make({3}, 30);
  env->set_seed(1);
  env->reset();
  const auto state = env->state();
  const auto elapsed = env->elapsed_steps();
  const auto other = GetParam().make({2}, 30)->state_dict();
  EXPECT_THAT(error_message<tensordict::ShapeError>([&] { env->load_state_dict(other); }),
              AllOf(HasSubstr(env->name() + "::load_state_dict"), HasSubstr("has shape [2")));
  TensorDict partial = env->state_dict();
  partial.set("state", torch::zeros_like(partial.get("state")));
  partial.del_("terminated");
  EXPECT_THAT(error_message<tensordict::KeyError>([&] { env->load_state_dict(partial); }),
              HasSubstr("no 'terminated'"));
  TensorDict wrong_dtype = env->state_dict();
  wrong_dtype.set("elapsed_steps", torch::zeros({3}, torch::kFloat32));
  EXPECT_THAT(error_message<tensordict::TypeError>([&] { env->load_state_dict(wrong_dtype); }),
              HasSubstr("'elapsed_steps' has dtype Float, expected Long"));
  EXPECT_TRUE(torch::equal(env->state(), state));
  EXPECT_TRUE(torch::equal(env->elapsed_steps(), elapsed));
}

TEST_P(ClassicControlTest, DifferentSeedsGiveDifferentRollouts) {
  auto a = GetParam().make({5}, 30);
  auto b = GetParam().make({5}, 30);
  a->set_seed(1);
  b->set_seed(2);
  const auto ra = a->rollout(10, nullptr, RolloutOptions().break_when_any_done(false));
  const auto rb = b->rollout(10, nullptr, RolloutOptions().break_when_any_done(false));
  EXPECT_FALSE(torch::equal(ra.get("observation"), rb.get("observation")));
}

TEST_P(ClassicControlTest, ResetDrawsStatesInTheInitialRange) {
  auto env = GetParam().make({512}, 10);
  env->set_seed(3);
  const auto td = env->reset();
  const auto state = env->state();
  ASSERT_EQ(state.sizes(), (Shape{512, env->state_dim()}));
  for (int64_t j = 0; j < env->state_dim(); ++j) {
    const auto column = state.select(1, j);
    const double low = GetParam().init_low[static_cast<size_t>(j)];
    const double high = GetParam().init_high[static_cast<size_t>(j)];
    EXPECT_GE(column.min().item<double>(), low) << env->state_names()[static_cast<size_t>(j)];
    EXPECT_LE(column.max().item<double>(), high) << env->state_names()[static_cast<size_t>(j)];
    if (low < high) {
      // 512 uniform draws spread over most of the range.
      EXPECT_LT(column.min().item<double>(), low + 0.05 * (high - low));
      EXPECT_GT(column.max().item<double>(), high - 0.05 * (high - low));
    } else {
      EXPECT_TRUE(torch::all(column == low).item<bool>());
    }
  }
  EXPECT_TRUE(torch::equal(td.get("observation"), env->observation()));
  EXPECT_FALSE(td.get("done").any().item<bool>());
}

TEST_P(ClassicControlTest, TruncatesAtMaxEpisodeStepsAndResetRestartsTheCount) {
  // 5 steps from a reset state end in no terminal state for any of the tasks.
  auto env = GetParam().make({2}, 5);
  env->set_seed(0);
  auto td = env->reset();
  for (int64_t t = 1; t <= 5; ++t) {
    td.set("action", some_action({2}));
    td = env->step(td);
    const auto next = td.get_tensordict("next");
    EXPECT_FALSE(next.get("terminated").any().item<bool>()) << "step " << t;
    EXPECT_EQ(next.get("truncated").all().item<bool>(), t == 5) << "step " << t;
    EXPECT_EQ(next.get("done").all().item<bool>(), t == 5) << "step " << t;
    EXPECT_EQ(next.get("truncated").sizes(), (Shape{2, 1}));
    td = step_mdp(td);
  }
  EXPECT_TRUE(torch::equal(env->elapsed_steps(), torch::full({2}, 5, torch::kInt64)));
  env->reset();
  EXPECT_TRUE(torch::equal(env->elapsed_steps(), torch::zeros({2}, torch::kInt64)));
  const auto next = step_next(*env, some_action({2}));
  EXPECT_FALSE(next.get("truncated").any().item<bool>());
}

TEST_P(ClassicControlTest, ZeroMaxEpisodeStepsNeverTruncates) {
  auto env = GetParam().make({}, 0);
  env->reset();
  for (int t = 0; t < 20; ++t) {
    EXPECT_FALSE(step_next(*env, some_action({})).get("truncated").item<bool>());
  }
  EXPECT_EQ(env->elapsed_steps().item<int64_t>(), 20);
}

TEST_P(ClassicControlTest, PartialResetOnlyResetsSelectedSubEnvs) {
  auto env = GetParam().make({4}, 50);
  env->set_seed(5);
  auto td = env->reset();
  for (int t = 0; t < 3; ++t) td = step_mdp(env->step(with_action(*env, some_action({4}))));
  const auto before = env->state();
  const auto observation_before = env->observation();
  td.set("_reset", torch::tensor({true, false, true, false}).unsqueeze(-1));
  td = env->reset(td);
  const auto after = env->state();
  EXPECT_FALSE(td.contains("_reset"));
  for (int64_t i : {1, 3}) {
    EXPECT_TRUE(torch::equal(after[i], before[i])) << "sub-env " << i;
    EXPECT_TRUE(torch::equal(td.get("observation")[i], observation_before[i]));
    EXPECT_EQ(env->elapsed_steps()[i].item<int64_t>(), 3);
  }
  for (int64_t i : {0, 2}) {
    EXPECT_FALSE(torch::equal(after[i], before[i])) << "sub-env " << i;
    EXPECT_EQ(env->elapsed_steps()[i].item<int64_t>(), 0);
    for (int64_t j = 0; j < env->state_dim(); ++j) {
      const double v = after[i][j].item<double>();
      EXPECT_GE(v, GetParam().init_low[static_cast<size_t>(j)]);
      EXPECT_LE(v, GetParam().init_high[static_cast<size_t>(j)]);
    }
  }
  EXPECT_TRUE(torch::equal(td.get("observation"), env->observation()));
}

TEST_P(ClassicControlTest, BatchedEnvEqualsSingleEnvsFromTheSameStates) {
  constexpr int64_t kN = 3;
  auto batched = GetParam().make({kN}, 40);
  batched->set_seed(11);
  batched->reset();
  std::vector<std::unique_ptr<ClassicControlEnv>> singles;
  for (int64_t i = 0; i < kN; ++i) {
    singles.push_back(GetParam().make({}, 40));
    singles.back()->reset();
    singles.back()->set_state(batched->state()[i]);
  }
  auto gen = at::make_generator<at::CPUGeneratorImpl>(7);
  for (int t = 0; t < 60; ++t) {
    const auto action = batched->action_spec()->rand(gen);
    const auto next = step_next(*batched, action);
    for (int64_t i = 0; i < kN; ++i) {
      const auto single = step_next(*singles[static_cast<size_t>(i)], action[i]);
      expect_identical(single, next.index({i}));
    }
    // Sub-envs that finished restart from the batched env's fresh states, in both.
    const auto done = next.get("done").squeeze(-1);
    if (done.any().item<bool>()) {
      batched->reset(TensorDict({{"_reset", done.unsqueeze(-1)}}, {kN}));
      for (int64_t i = 0; i < kN; ++i) {
        if (!done[i].item<bool>()) continue;
        singles[static_cast<size_t>(i)]->reset();
        singles[static_cast<size_t>(i)]->set_state(batched->state()[i]);
      }
    }
  }
  for (int64_t i = 0; i < kN; ++i) {
    EXPECT_TRUE(torch::equal(singles[static_cast<size_t>(i)]->state(), batched->state()[i]));
  }
}

TEST_P(ClassicControlTest, MissingActionThrowsKeyError) {
  auto env = GetParam().make({2}, 10);
  auto td = env->reset();
  EXPECT_THAT([&] { env->step(td); }, ThrowsMessage<tensordict::KeyError>(
                                          HasSubstr("::step: the action 'action' is missing")));
}

TEST_P(ClassicControlTest, ActionOfTheWrongShapeOrDtypeThrowsAndChangesNothing) {
  auto env = GetParam().make({2}, 10);
  env->reset();
  const auto state = env->state();
  const auto good = some_action({2});
  EXPECT_THAT([&] { env->step(with_action(*env, good.unsqueeze(-1))); },
              ThrowsMessage<tensordict::ShapeError>(
                  HasSubstr("has shape " + shape_str(good.unsqueeze(-1).sizes()) +
                            "; the action spec expects " + shape_str(good.sizes()))));
  const auto wrong_dtype =
      GetParam().continuous ? good.to(torch::kFloat64) : good.to(torch::kInt32);
  EXPECT_THAT([&] { env->step(with_action(*env, wrong_dtype)); },
              ThrowsMessage<tensordict::TypeError>(HasSubstr("the action spec expects")));
  EXPECT_TRUE(torch::equal(env->state(), state));
  EXPECT_TRUE(torch::equal(env->elapsed_steps(), torch::zeros({2}, torch::kInt64)));
}

TEST_P(ClassicControlTest, ActionOutOfRangeThrowsValueErrorNamingTheElement) {
  auto env = GetParam().make({2}, 10);
  env->reset();
  const auto state = env->state();
  // Sub-env 0's action is valid, sub-env 1's is beyond the spec.
  torch::Tensor bad;
  std::string expected;
  if (GetParam().continuous) {
    const double b = GetParam().action_bound;
    bad = torch::tensor({0.5 * b, 1.5 * b}, torch::kFloat32).unsqueeze(-1);
    std::ostringstream os;
    os << "element [1, 0] is " << 1.5 * b << ", outside [low, high] = [" << -b << ", " << b << "]";
    expected = os.str();
  } else {
    const int64_t n = GetParam().n_actions;
    bad = torch::tensor({int64_t{0}, n}, torch::kInt64);
    expected = "element [1] is " + std::to_string(n) + ", outside [0, n)";
  }
  EXPECT_THAT([&] { env->step(with_action(*env, bad)); },
              ThrowsMessage<tensordict::ValueError>(HasSubstr(expected)));
  if (!GetParam().continuous) {
    EXPECT_THROW(env->step(with_action(*env, torch::tensor({int64_t{-1}, int64_t{0}}))),
                 tensordict::ValueError);
  }
  EXPECT_TRUE(torch::equal(env->state(), state));
  EXPECT_TRUE(torch::equal(env->elapsed_steps(), torch::zeros({2}, torch::kInt64)));
}

TEST_P(ClassicControlTest, SetStateRejectsWrongShapeDtypeAndNonFiniteValues) {
  auto env = GetParam().make({2}, 10);
  env->reset();
  const auto state = env->state();
  const int64_t d = env->state_dim();
  EXPECT_THAT(
      [&] {
        env->set_state(torch::zeros({2, d + 1}, torch::kFloat64));
      },
      ThrowsMessage<tensordict::ShapeError>(HasSubstr("::set_state: the state has shape [2, " +
                                                      std::to_string(d + 1) + "]; expected [2, " +
                                                      std::to_string(d) + "]")));
  EXPECT_THROW(env->set_state(torch::zeros({2, d}, torch::kInt64)), tensordict::TypeError);
  auto bad = state.clone();
  bad[1][1] = std::nan("");
  EXPECT_THAT([&] { env->set_state(bad); }, ThrowsMessage<tensordict::ValueError>(HasSubstr(
                                                "sub-env 1 component 1 (" + env->state_names()[1] +
                                                ") is nan; every component must be finite")));
  EXPECT_TRUE(torch::equal(env->state(), state));
  env->set_state(state.to(torch::kFloat32));
  EXPECT_TRUE(torch::equal(env->state(), state.to(torch::kFloat32).to(torch::kFloat64)));
}

INSTANTIATE_TEST_SUITE_P(Tasks, ClassicControlTest, ::testing::ValuesIn(task_cases()),
                         [](const ::testing::TestParamInfo<TaskCase>& info) {
                           return info.param.name;
                         });

// ---- CartPole-v1 -------------------------------------------------------------------------------

// Gymnasium's CartPole step, written out in doubles.
std::vector<double> cartpole_step(std::vector<double> s, int64_t action) {
  const double gravity = 9.8, masscart = 1.0, masspole = 0.1, length = 0.5, force_mag = 10.0,
               tau = 0.02;
  const double total_mass = masspole + masscart;
  const double polemass_length = masspole * length;
  const double force = action == 1 ? force_mag : -force_mag;
  const double costheta = std::cos(s[2]), sintheta = std::sin(s[2]);
  const double temp = (force + polemass_length * (s[3] * s[3]) * sintheta) / total_mass;
  const double thetaacc = (gravity * sintheta - costheta * temp) /
                          (length * (4.0 / 3.0 - masspole * (costheta * costheta) / total_mass));
  const double xacc = temp - polemass_length * thetaacc * costheta / total_mass;
  return {s[0] + tau * s[1], s[1] + tau * xacc, s[2] + tau * s[3], s[3] + tau * thetaacc};
}

void expect_state(ClassicControlEnv& env, const std::vector<double>& expected) {
  const auto state = env.state().reshape({-1});
  ASSERT_EQ(state.numel(), static_cast<int64_t>(expected.size()));
  for (size_t j = 0; j < expected.size(); ++j) {
    EXPECT_DOUBLE_EQ(state[static_cast<int64_t>(j)].item<double>(), expected[j])
        << "component " << j;
  }
}

TEST(CartPoleTest, StepFollowsTheEulerEquationsExactly) {
  CartPoleEnv env;
  env.reset();
  std::vector<double> s = {0.1, -0.3, 0.05, 0.4};
  env.set_state(torch::tensor(s, torch::kFloat64));
  for (int64_t action : {1, 0, 0, 1}) {
    const auto next = step_next(env, torch::tensor(action));
    s = cartpole_step(s, action);
    expect_state(env, s);
    const auto obs = next.get("observation");
    for (int64_t j = 0; j < 4; ++j) {
      EXPECT_EQ(obs[j].item<float>(), static_cast<float>(s[static_cast<size_t>(j)]));
    }
    EXPECT_EQ(next.get("reward").item<float>(), 1.0f);
    EXPECT_FALSE(next.get("terminated").item<bool>());
  }
}

TEST(CartPoleTest, TerminatesBeyondTheAngleThreshold) {
  CartPoleEnv env(CartPoleEnvOptions().batch_size({2}));
  env.reset();
  const double threshold = 12 * 2 * kPi / 360;
  // Sub-env 0 crosses +12 degrees in this step (theta += 0.02 * 1.0), sub-env 1 stays inside.
  env.set_state(torch::tensor({0.0, 0.0, threshold - 0.01, 1.0, 0.0, 0.0, threshold - 0.03, 1.0},
                              torch::kFloat64)
                    .reshape({2, 4}));
  const auto next = step_next(env, torch::tensor({1, 1}, torch::kInt64));
  EXPECT_TRUE(next.get("terminated")[0].item<bool>());
  EXPECT_FALSE(next.get("terminated")[1].item<bool>());
  EXPECT_TRUE(next.get("done")[0].item<bool>());
  EXPECT_FALSE(next.get("truncated")[0].item<bool>());
  EXPECT_EQ(next.get("reward")[0].item<float>(), 1.0f);
  // The mirrored crossing below -12 degrees terminates too.
  env.set_state(
      torch::tensor({0.0, 0.0, -threshold + 0.01, -1.0, 0.0, 0.0, 0.0, 0.0}, torch::kFloat64)
          .reshape({2, 4}));
  EXPECT_TRUE(
      step_next(env, torch::tensor({0, 0}, torch::kInt64)).get("terminated")[0].item<bool>());
}

TEST(CartPoleTest, TerminatesBeyondThePositionThreshold) {
  CartPoleEnv env(CartPoleEnvOptions().batch_size({3}));
  env.reset();
  // x += 0.02 * x_dot: 2.39 + 0.02 = 2.41 > 2.4; -2.39 - 0.02 < -2.4; 2.0 + 0.02 inside.
  env.set_state(torch::tensor({2.39, 1.0, 0.0, 0.0, -2.39, -1.0, 0.0, 0.0, 2.0, 1.0, 0.0, 0.0},
                              torch::kFloat64)
                    .reshape({3, 4}));
  const auto terminated = step_next(env, torch::tensor({1, 0, 1}, torch::kInt64)).get("terminated");
  EXPECT_TRUE(torch::equal(terminated, torch::tensor({true, true, false}).unsqueeze(-1)));
}

TEST(CartPoleTest, RewardAfterTerminationWithoutResetIsZero) {
  CartPoleEnv env;
  env.reset();
  env.set_state(torch::tensor({2.39, 1.0, 0.0, 0.0}, torch::kFloat64));
  auto next = step_next(env, torch::tensor(int64_t{1}));
  EXPECT_TRUE(next.get("terminated").item<bool>());
  EXPECT_EQ(next.get("reward").item<float>(), 1.0f);
  next = step_next(env, torch::tensor(int64_t{1}));
  EXPECT_TRUE(next.get("terminated").item<bool>());
  EXPECT_EQ(next.get("reward").item<float>(), 0.0f);
  env.reset();
  EXPECT_EQ(step_next(env, torch::tensor(int64_t{1})).get("reward").item<float>(), 1.0f);
}

TEST(CartPoleTest, SuttonBartoRewardIsMinusOneOnTermination) {
  CartPoleEnv env(CartPoleEnvOptions().sutton_barto_reward(true));
  env.reset();
  env.set_state(torch::tensor({2.0, 1.0, 0.0, 0.0}, torch::kFloat64));
  EXPECT_EQ(step_next(env, torch::tensor(int64_t{1})).get("reward").item<float>(), 0.0f);
  env.set_state(torch::tensor({2.39, 1.0, 0.0, 0.0}, torch::kFloat64));
  EXPECT_EQ(step_next(env, torch::tensor(int64_t{1})).get("reward").item<float>(), -1.0f);
}

TEST(CartPoleTest, InvalidOptionsThrow) {
  EXPECT_THAT([&] { CartPoleEnv env(CartPoleEnvOptions().masspole(0.0)); },
              ThrowsMessage<tensordict::ValueError>(
                  HasSubstr("CartPole-v1: option masspole is 0; it must be finite and > 0")));
  EXPECT_THAT(
      [&] { CartPoleEnv env(CartPoleEnvOptions().max_episode_steps(-1)); },
      ThrowsMessage<tensordict::ValueError>(HasSubstr("max_episode_steps is -1; it must be >= 0")));
}

TEST(CartPoleTest, SetStateOutsideTheBatchShapeNamesBoth) {
  CartPoleEnv env(CartPoleEnvOptions().batch_size({3}));
  EXPECT_THAT([&] { env.set_state(torch::zeros({4}, torch::kFloat64)); },
              ThrowsMessage<tensordict::ShapeError>(
                  HasSubstr("CartPole-v1::set_state: the state has shape [4]; expected "
                            "[3, 4] (batch_size followed by the 4 state components)")));
}

TEST(CartPoleTest, PrintsItselfAndItsOptions) {
  CartPoleEnv env(CartPoleEnvOptions().batch_size({8}));
  EXPECT_EQ(env.to_string(),
            "CartPole-v1(batch_size=[8], device=cpu, max_episode_steps=500, "
            "sutton_barto_reward=false)");
  std::ostringstream os;
  os << CartPoleEnvOptions().batch_size({8});
  EXPECT_EQ(
      os.str(),
      "CartPoleEnvOptions(batch_size=[8], device=cpu, max_episode_steps=500, mask_velocity=false, "
      "render_width=600, render_height=400, from_pixels=false, pixels_only=true, "
      "sutton_barto_reward=false, gravity=9.8, masscart=1, masspole=0.1, length=0.5, "
      "force_mag=10, tau=0.02, theta_threshold_radians=0.20943951023931953, "
      "x_threshold=2.4)");
}

// ---- Pendulum-v1 -------------------------------------------------------------------------------

double angle_normalize(double x) {
  double r = std::fmod(x + kPi, 2 * kPi);
  if (r < 0) r += 2 * kPi;
  return r - kPi;
}

TEST(PendulumTest, StepFollowsTheEquationsExactly) {
  PendulumEnv env(PendulumEnvOptions().batch_size({3}));
  env.reset();
  // Angles beyond pi and below -pi exercise the normalisation of the cost.
  const std::vector<double> th = {0.3, 3.9, -4.2}, thdot = {-0.7, 2.5, 7.9};
  const std::vector<float> u = {1.5f, -2.0f, 0.25f};
  env.set_state(torch::tensor({th[0], thdot[0], th[1], thdot[1], th[2], thdot[2]}, torch::kFloat64)
                    .reshape({3, 2}));
  const auto next = step_next(env, torch::tensor(u).unsqueeze(-1));
  const auto state = env.state();
  const double g = 10.0, m = 1.0, l = 1.0, dt = 0.05;
  for (int64_t i = 0; i < 3; ++i) {
    const auto k = static_cast<size_t>(i);
    const double uk = u[k];
    const double cost = angle_normalize(th[k]) * angle_normalize(th[k]) +
                        0.1 * (thdot[k] * thdot[k]) + 0.001 * (uk * uk);
    double newthdot = thdot[k] + (3 * g / (2 * l) * std::sin(th[k]) + 3.0 / (m * l * l) * uk) * dt;
    newthdot = std::min(std::max(newthdot, -8.0), 8.0);
    const double newth = th[k] + newthdot * dt;
    EXPECT_DOUBLE_EQ(state[i][0].item<double>(), newth);
    EXPECT_DOUBLE_EQ(state[i][1].item<double>(), newthdot);
    EXPECT_EQ(next.get("reward")[i][0].item<float>(), static_cast<float>(-cost));
    const auto obs = next.get("observation")[i];
    EXPECT_EQ(obs[0].item<float>(), static_cast<float>(std::cos(newth)));
    EXPECT_EQ(obs[1].item<float>(), static_cast<float>(std::sin(newth)));
    EXPECT_EQ(obs[2].item<float>(), static_cast<float>(newthdot));
  }
  // Sub-env 2 hit the speed limit.
  EXPECT_EQ(state[2][1].item<double>(), 8.0);
  EXPECT_FALSE(next.get("terminated").any().item<bool>());
}

TEST(PendulumTest, GravityOptionChangesTheDynamics) {
  PendulumEnv moon(PendulumEnvOptions().g(1.62));
  moon.reset();
  moon.set_state(torch::tensor({1.0, 0.0}, torch::kFloat64));
  step_next(moon, torch::zeros({1}));
  EXPECT_DOUBLE_EQ(moon.state()[1].item<double>(), 3 * 1.62 / 2 * std::sin(1.0) * 0.05);
}

TEST(PendulumTest, SetStateRejectsASpeedBeyondMaxSpeed) {
  PendulumEnv env;
  EXPECT_THAT(
      [&] {
        env.set_state(torch::tensor({0.0, 9.0}, torch::kFloat64));
      },
      ThrowsMessage<tensordict::ValueError>(
          HasSubstr("Pendulum-v1::set_state: sub-env 0 component 1 (theta_dot) "
                    "is 9, outside [-8, 8]")));
}

TEST(PendulumTest, NonFiniteActionThrowsValueError) {
  PendulumEnv env(PendulumEnvOptions().batch_size({2}));
  expect_non_finite_action_rejected(env);
}

TEST(PendulumTest, PrintsItselfAndItsOptions) {
  PendulumEnv env(PendulumEnvOptions().batch_size({4}));
  EXPECT_EQ(env.to_string(),
            "Pendulum-v1(batch_size=[4], device=cpu, max_episode_steps=200, g=10)");
  std::ostringstream os;
  os << PendulumEnvOptions().g(9.81);
  EXPECT_EQ(os.str(),
            "PendulumEnvOptions(batch_size=[], device=cpu, max_episode_steps=200, "
            "mask_velocity=false, render_width=500, render_height=500, from_pixels=false, "
            "pixels_only=true, g=9.81, m=1, "
            "l=1, dt=0.05, max_speed=8, max_torque=2)");
}

// ---- MountainCar-v0 and MountainCarContinuous-v0 -----------------------------------------------

TEST(MountainCarTest, StepFollowsTheEquationsExactly) {
  MountainCarEnv env(MountainCarEnvOptions().batch_size({3}));
  env.reset();
  const std::vector<double> pos = {-0.52, 0.1, -1.0}, vel = {0.01, -0.02, 0.069};
  env.set_state(torch::tensor({pos[0], vel[0], pos[1], vel[1], pos[2], vel[2]}, torch::kFloat64)
                    .reshape({3, 2}));
  const std::vector<int64_t> actions = {0, 1, 2};
  const auto next = step_next(env, torch::tensor(actions));
  const auto state = env.state();
  for (size_t k = 0; k < 3; ++k) {
    double v =
        vel[k] + static_cast<double>(actions[k] - 1) * 0.001 + std::cos(3 * pos[k]) * (-0.0025);
    v = std::min(std::max(v, -0.07), 0.07);
    double p = std::min(std::max(pos[k] + v, -1.2), 0.6);
    const auto i = static_cast<int64_t>(k);
    EXPECT_DOUBLE_EQ(state[i][0].item<double>(), p);
    EXPECT_DOUBLE_EQ(state[i][1].item<double>(), v);
    EXPECT_EQ(next.get("observation")[i][0].item<float>(), static_cast<float>(p));
    EXPECT_EQ(next.get("observation")[i][1].item<float>(), static_cast<float>(v));
    EXPECT_EQ(next.get("reward")[i][0].item<float>(), -1.0f);
  }
  // Sub-env 2's velocity was clipped at 0.07.
  EXPECT_EQ(state[2][1].item<double>(), 0.07);
}

TEST(MountainCarTest, TerminatesAtTheGoal) {
  MountainCarEnv env(MountainCarEnvOptions().batch_size({2}));
  env.reset();
  // Sub-env 0 reaches 0.5 moving right; sub-env 1 stays below it.
  env.set_state(torch::tensor({0.49, 0.05, 0.3, 0.01}, torch::kFloat64).reshape({2, 2}));
  const auto next = step_next(env, torch::tensor({2, 2}, torch::kInt64));
  EXPECT_TRUE(torch::equal(next.get("terminated"), torch::tensor({true, false}).unsqueeze(-1)));
  EXPECT_GE(env.state()[0][0].item<double>(), 0.5);
}

TEST(MountainCarTest, GoalVelocityIsRequiredAtTheGoal) {
  MountainCarEnv env(MountainCarEnvOptions().goal_velocity(0.06));
  env.reset();
  env.set_state(torch::tensor({0.49, 0.05}, torch::kFloat64));
  EXPECT_FALSE(step_next(env, torch::tensor(int64_t{2})).get("terminated").item<bool>());
  EXPECT_GE(env.state()[0].item<double>(), 0.5);
}

TEST(MountainCarTest, LeftWallStopsTheCar) {
  MountainCarEnv env;
  env.reset();
  env.set_state(torch::tensor({-1.19, -0.05}, torch::kFloat64));
  step_next(env, torch::tensor(int64_t{0}));
  EXPECT_EQ(env.state()[0].item<double>(), -1.2);
  EXPECT_EQ(env.state()[1].item<double>(), 0.0);
}

TEST(MountainCarTest, SetStateRejectsAPositionOffTheTrack) {
  MountainCarEnv env;
  EXPECT_THAT(
      [&] {
        env.set_state(torch::tensor({0.7, 0.0}, torch::kFloat64));
      },
      ThrowsMessage<tensordict::ValueError>(
          HasSubstr("component 0 (position) is 0.7, outside [-1.2, 0.6]")));
}

TEST(MountainCarTest, PrintsItselfAndItsOptions) {
  MountainCarEnv env(MountainCarEnvOptions().batch_size({8}));
  EXPECT_EQ(env.to_string(),
            "MountainCar-v0(batch_size=[8], device=cpu, max_episode_steps=200, goal_velocity=0)");
  std::ostringstream os;
  os << MountainCarEnvOptions();
  EXPECT_EQ(os.str(),
            "MountainCarEnvOptions(batch_size=[], device=cpu, max_episode_steps=200, "
            "mask_velocity=false, render_width=600, render_height=400, from_pixels=false, "
            "pixels_only=true, goal_velocity=0, goal_position=0.5, force=0.001, gravity=0.0025)");
}

TEST(MountainCarContinuousTest, StepFollowsTheEquationsExactly) {
  MountainCarContinuousEnv env(MountainCarContinuousEnvOptions().batch_size({2}));
  env.reset();
  const std::vector<double> pos = {-0.5, 0.2}, vel = {0.003, -0.01};
  const std::vector<float> a = {0.7f, -0.3f};
  env.set_state(torch::tensor({pos[0], vel[0], pos[1], vel[1]}, torch::kFloat64).reshape({2, 2}));
  const auto next = step_next(env, torch::tensor(a).unsqueeze(-1));
  for (size_t k = 0; k < 2; ++k) {
    const double ak = a[k];
    double v = vel[k] + ak * 0.0015 - 0.0025 * std::cos(3 * pos[k]);
    v = std::min(std::max(v, -0.07), 0.07);
    const double p = std::min(std::max(pos[k] + v, -1.2), 0.6);
    const auto i = static_cast<int64_t>(k);
    EXPECT_DOUBLE_EQ(env.state()[i][0].item<double>(), p);
    EXPECT_DOUBLE_EQ(env.state()[i][1].item<double>(), v);
    EXPECT_EQ(next.get("reward")[i][0].item<float>(), static_cast<float>(-(ak * ak) * 0.1));
  }
  EXPECT_FALSE(next.get("terminated").any().item<bool>());
}

TEST(MountainCarContinuousTest, ReachingTheGoalPaysOneHundred) {
  MountainCarContinuousEnv env;
  env.reset();
  env.set_state(torch::tensor({0.44, 0.05}, torch::kFloat64));
  const auto next = step_next(env, torch::full({1}, 0.5f));
  EXPECT_TRUE(next.get("terminated").item<bool>());
  EXPECT_EQ(next.get("reward").item<float>(), static_cast<float>(100.0 - 0.25 * 0.1));
}

TEST(MountainCarContinuousTest, NonFiniteActionThrowsValueError) {
  MountainCarContinuousEnv env(MountainCarContinuousEnvOptions().batch_size({2}));
  expect_non_finite_action_rejected(env);
}

TEST(MountainCarContinuousTest, PrintsItselfAndItsOptions) {
  MountainCarContinuousEnv env;
  EXPECT_EQ(env.to_string(),
            "MountainCarContinuous-v0(batch_size=[], device=cpu, max_episode_steps=999, "
            "goal_velocity=0)");
  std::ostringstream os;
  os << MountainCarContinuousEnvOptions().batch_size({2, 3});
  EXPECT_EQ(os.str(),
            "MountainCarContinuousEnvOptions(batch_size=[2, 3], device=cpu, "
            "max_episode_steps=999, mask_velocity=false, render_width=600, render_height=400, "
            "from_pixels=false, pixels_only=true, goal_velocity=0, goal_position=0.45, "
            "power=0.0015)");
}

// ---- Acrobot-v1 --------------------------------------------------------------------------------

// The book's Acrobot equations, written out in doubles (Gymnasium's _dsdt).
std::vector<double> acrobot_dsdt(const std::vector<double>& s, double a, bool book) {
  const double m1 = 1.0, m2 = 1.0, l1 = 1.0, lc1 = 0.5, lc2 = 0.5, I1 = 1.0, I2 = 1.0, g = 9.8;
  const double theta1 = s[0], theta2 = s[1], dtheta1 = s[2], dtheta2 = s[3];
  const double d1 =
      m1 * (lc1 * lc1) + m2 * (l1 * l1 + lc2 * lc2 + 2 * l1 * lc2 * std::cos(theta2)) + I1 + I2;
  const double d2 = m2 * (lc2 * lc2 + l1 * lc2 * std::cos(theta2)) + I2;
  const double phi2 = m2 * lc2 * g * std::cos(theta1 + theta2 - kPi / 2.0);
  const double phi1 = -m2 * l1 * lc2 * (dtheta2 * dtheta2) * std::sin(theta2) -
                      2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * std::sin(theta2) +
                      (m1 * lc1 + m2 * l1) * g * std::cos(theta1 - kPi / 2) + phi2;
  const double extra = book ? m2 * l1 * lc2 * (dtheta1 * dtheta1) * std::sin(theta2) : 0.0;
  const double ddtheta2 =
      (a + d2 / d1 * phi1 - extra - phi2) / (m2 * (lc2 * lc2) + I2 - (d2 * d2) / d1);
  const double ddtheta1 = -(d2 * ddtheta2 + phi1) / d1;
  return {dtheta1, dtheta2, ddtheta1, ddtheta2};
}

std::vector<double> acrobot_step(const std::vector<double>& s, double torque, bool book) {
  const double dt = 0.2;
  auto add = [](const std::vector<double>& y, double h, const std::vector<double>& k) {
    std::vector<double> out(4);
    for (size_t j = 0; j < 4; ++j) out[j] = y[j] + h * k[j];
    return out;
  };
  const auto k1 = acrobot_dsdt(s, torque, book);
  const auto k2 = acrobot_dsdt(add(s, dt / 2, k1), torque, book);
  const auto k3 = acrobot_dsdt(add(s, dt / 2, k2), torque, book);
  const auto k4 = acrobot_dsdt(add(s, dt, k3), torque, book);
  std::vector<double> ns(4);
  for (size_t j = 0; j < 4; ++j) ns[j] = s[j] + dt / 6.0 * (k1[j] + 2 * k2[j] + 2 * k3[j] + k4[j]);
  auto wrap = [](double x) {
    while (x > kPi) x -= 2 * kPi;
    while (x < -kPi) x += 2 * kPi;
    return x;
  };
  ns[0] = wrap(ns[0]);
  ns[1] = wrap(ns[1]);
  ns[2] = std::min(std::max(ns[2], -4 * kPi), 4 * kPi);
  ns[3] = std::min(std::max(ns[3], -9 * kPi), 9 * kPi);
  return ns;
}

TEST(AcrobotTest, StepIsOneRungeKuttaStepOfTheBookEquations) {
  AcrobotEnv env;
  env.reset();
  std::vector<double> s = {0.3, -0.8, 1.2, -2.0};
  env.set_state(torch::tensor(s, torch::kFloat64));
  for (int64_t action : {2, 0, 1, 2, 2}) {
    const auto next = step_next(env, torch::tensor(action));
    s = acrobot_step(s, static_cast<double>(action - 1), /*book=*/true);
    expect_state(env, s);
    const auto obs = next.get("observation");
    EXPECT_EQ(obs[0].item<float>(), static_cast<float>(std::cos(s[0])));
    EXPECT_EQ(obs[1].item<float>(), static_cast<float>(std::sin(s[0])));
    EXPECT_EQ(obs[2].item<float>(), static_cast<float>(std::cos(s[1])));
    EXPECT_EQ(obs[3].item<float>(), static_cast<float>(std::sin(s[1])));
    EXPECT_EQ(obs[4].item<float>(), static_cast<float>(s[2]));
    EXPECT_EQ(obs[5].item<float>(), static_cast<float>(s[3]));
    const bool terminal = -std::cos(s[0]) - std::cos(s[1] + s[0]) > 1.0;
    EXPECT_EQ(next.get("terminated").item<bool>(), terminal);
    EXPECT_EQ(next.get("reward").item<float>(), terminal ? 0.0f : -1.0f);
  }
}

TEST(AcrobotTest, NipsDynamicsDropTheThetaOneDotSquaredTerm) {
  AcrobotEnv env(AcrobotEnvOptions().book_or_nips("nips"));
  env.reset();
  const std::vector<double> s = {0.3, -0.8, 1.2, -2.0};
  env.set_state(torch::tensor(s, torch::kFloat64));
  step_next(env, torch::tensor(int64_t{0}));
  expect_state(env, acrobot_step(s, -1.0, /*book=*/false));
  EXPECT_NE(acrobot_step(s, -1.0, false)[3], acrobot_step(s, -1.0, true)[3]);
}

TEST(AcrobotTest, WrapsAnglesAndClipsVelocities) {
  AcrobotEnv env;
  env.reset();
  // Fast enough to pass pi within one step and to be clipped.
  env.set_state(torch::tensor({3.0, -3.0, 4 * kPi, -9 * kPi}, torch::kFloat64));
  step_next(env, torch::tensor(int64_t{1}));
  const auto s = env.state();
  EXPECT_GE(s[0].item<double>(), -kPi);
  EXPECT_LE(s[0].item<double>(), kPi);
  EXPECT_GE(s[1].item<double>(), -kPi);
  EXPECT_LE(s[1].item<double>(), kPi);
  expect_state(env, acrobot_step({3.0, -3.0, 4 * kPi, -9 * kPi}, 0.0, true));
}

TEST(AcrobotTest, TerminatesWhenTheTipIsAboveTheBar) {
  AcrobotEnv env(AcrobotEnvOptions().batch_size({2}));
  env.reset();
  // Sub-env 0 points straight up (tip height 2 > 1); sub-env 1 hangs down.
  env.set_state(
      torch::tensor({kPi, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, torch::kFloat64).reshape({2, 4}));
  const auto next = step_next(env, torch::tensor({1, 1}, torch::kInt64));
  EXPECT_TRUE(torch::equal(next.get("terminated"), torch::tensor({true, false}).unsqueeze(-1)));
  EXPECT_EQ(next.get("reward")[0][0].item<float>(), 0.0f);
  EXPECT_EQ(next.get("reward")[1][0].item<float>(), -1.0f);
}

TEST(AcrobotTest, TorqueNoiseComesFromTheSeededGenerator) {
  auto run = [](uint64_t seed) {
    AcrobotEnv env(AcrobotEnvOptions().batch_size({3}).torque_noise_max(0.2));
    env.set_seed(seed);
    env.reset();
    env.set_state(torch::zeros({3, 4}, torch::kFloat64));
    step_next(env, torch::tensor({1, 1, 1}, torch::kInt64));
    return env.state();
  };
  const auto a = run(4);
  EXPECT_TRUE(torch::equal(a, run(4)));
  EXPECT_FALSE(torch::equal(a, run(5)));
  // With zero torque and no noise the resting acrobot would not move; noise moves it.
  EXPECT_TRUE((a.select(1, 3).abs() > 0).all().item<bool>());
}

TEST(AcrobotTest, InvalidOptionsThrow) {
  EXPECT_THAT([&] { AcrobotEnv env(AcrobotEnvOptions().book_or_nips("paper")); },
              ThrowsMessage<tensordict::ValueError>(
                  HasSubstr("Acrobot-v1: option book_or_nips is 'paper'; expected 'book' "
                            "or 'nips'")));
  EXPECT_THROW(AcrobotEnv(AcrobotEnvOptions().torque_noise_max(-1.0)), tensordict::ValueError);
}

TEST(AcrobotTest, PrintsItselfAndItsOptions) {
  AcrobotEnv env(AcrobotEnvOptions().batch_size({8}));
  EXPECT_EQ(env.to_string(),
            "Acrobot-v1(batch_size=[8], device=cpu, max_episode_steps=500, torque_noise_max=0, "
            "book_or_nips=book)");
  std::ostringstream os;
  os << AcrobotEnvOptions().torque_noise_max(0.1);
  EXPECT_EQ(
      os.str(),
      "AcrobotEnvOptions(batch_size=[], device=cpu, max_episode_steps=500, mask_velocity=false, "
      "render_width=500, render_height=500, from_pixels=false, pixels_only=true, "
      "torque_noise_max=0.1, book_or_nips=book)");
}

// mask_velocity: every classic task drops exactly its velocity components, from the
// observations (the same states otherwise) and from the spec (bounds kept for the others).
TEST(MaskVelocityTest, EveryClassicTaskDropsItsVelocitiesFromObservationAndSpec) {
  const std::vector<std::pair<std::string, std::vector<int64_t>>> kept = {
      {"CartPole-v1", {0, 2}},
      {"Pendulum-v1", {0, 1}},
      {"MountainCar-v0", {0}},
      {"MountainCarContinuous-v0", {0}},
      {"Acrobot-v1", {0, 1, 2, 3}}};
  register_builtin_envs();
  for (const auto& [name, columns] : kept) {
    SCOPED_TRACE(name);
    const auto index = torch::tensor(columns, torch::kInt64);
    auto full = make_env(name, EnvOptions().batch_size({3}).seed(5));
    auto masked = make_env(name, EnvOptions().batch_size({3}).seed(5).set("mask_velocity", true));
    const auto spec = masked->observation_spec()->get("observation");
    EXPECT_EQ(spec->shape(), (Shape{3, static_cast<int64_t>(columns.size())}));
    if (const auto bounded = std::dynamic_pointer_cast<specs::Bounded>(spec)) {
      const auto full_bounded =
          std::dynamic_pointer_cast<specs::Bounded>(full->observation_spec()->get("observation"));
      EXPECT_TRUE(torch::equal(bounded->low(), full_bounded->low().index_select(-1, index)));
    }
    EXPECT_TRUE(torch::equal(masked->reset().get("observation"),
                             full->reset().get("observation").index_select(-1, index)));
    const auto action = full->rand_action().get("action");
    const auto a = full->step(TensorDict({{"action", action}}, {3}));
    const auto b = masked->step(TensorDict({{"action", action}}, {3}));
    EXPECT_TRUE(torch::equal(b.get({"next", "observation"}),
                             a.get({"next", "observation"}).index_select(-1, index)));
    EXPECT_TRUE(torch::equal(b.get({"next", "reward"}), a.get({"next", "reward"})));
    check_env_specs(*masked);  // after the comparisons: its rollouts draw from the generator
  }
}

}  // namespace
}  // namespace tdrl::envs
