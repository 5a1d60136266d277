#include <tdrl/losses/functional/value.h>
#include <tdrl/losses/value_estimators.h>
#include <tdrl/modules/recurrent.h>

#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <tensordict/errors.h>
#include <tensordict/nn/tensordict_module.h>
#include <tensordict/nn/tensordict_sequential.h>

#include "support/test_names.h"

namespace tdrl::losses {
namespace {

using namespace tdrl::testing::names;

// Random data [B, T, 1] with mixed terminated / truncated steps.
struct Data {
  torch::Tensor value, next_value, reward, done, terminated;
};

Data random_data(int64_t batch, int64_t steps, torch::Dtype dtype = torch::kDouble) {
  torch::manual_seed(0);
  Data d;
  d.value = torch::randn({batch, steps, 1}, dtype);
  d.next_value = torch::randn({batch, steps, 1}, dtype);
  d.reward = torch::randn({batch, steps, 1}, dtype);
  d.terminated = torch::rand({batch, steps, 1}) < 0.1;
  const auto truncated = (torch::rand({batch, steps, 1}) < 0.1) & ~d.terminated;
  d.done = d.terminated | truncated;
  return d;
}

// The reference recursions, written as plain loops over doubles.
torch::Tensor reference_lambda_return(double gamma, double lmbda, const Data& d) {
  auto out = torch::zeros_like(d.reward);
  const auto B = d.reward.size(0), T = d.reward.size(1);
  for (int64_t b = 0; b < B; ++b) {
    double g = d.next_value[b][T - 1][0].item<double>();
    for (int64_t t = T - 1; t >= 0; --t) {
      const double r = d.reward[b][t][0].item<double>();
      const double nv = d.next_value[b][t][0].item<double>();
      const bool done = d.done[b][t][0].item<bool>();
      const bool term = d.terminated[b][t][0].item<bool>();
      const double bootstrap = done ? nv : g;
      g = r + (term ? 0.0 : gamma * ((1 - lmbda) * nv + lmbda * bootstrap));
      out[b][t][0] = g;
    }
  }
  return out;
}

torch::Tensor reference_gae(double gamma, double lmbda, const Data& d) {
  auto out = torch::zeros_like(d.reward);
  const auto B = d.reward.size(0), T = d.reward.size(1);
  for (int64_t b = 0; b < B; ++b) {
    double a = 0;
    for (int64_t t = T - 1; t >= 0; --t) {
      const double r = d.reward[b][t][0].item<double>();
      const double v = d.value[b][t][0].item<double>();
      const double nv = d.next_value[b][t][0].item<double>();
      const bool done = d.done[b][t][0].item<bool>();
      const bool term = d.terminated[b][t][0].item<bool>();
      const double delta = r + (term ? 0.0 : gamma * nv) - v;
      a = delta + (done ? 0.0 : gamma * lmbda * a);
      out[b][t][0] = a;
    }
  }
  return out;
}

TEST(ValueFunctionalTest, Td0MatchesTheOneStepFormula) {
  auto d = random_data(3, 7);
  auto expected = d.reward + 0.9 * (~d.terminated).to(torch::kDouble) * d.next_value;
  EXPECT_TRUE(torch::allclose(
      functional::td0_return_estimate(0.9, d.next_value, d.reward, d.terminated), expected));
}

TEST(ValueFunctionalTest, TdLambdaMatchesTheReferenceLoop) {
  auto d = random_data(4, 50);
  auto got = functional::td_lambda_return_estimate(0.97, 0.8, d.next_value, d.reward, d.done,
                                                   d.terminated);
  EXPECT_TRUE(torch::allclose(got, reference_lambda_return(0.97, 0.8, d), 1e-10, 1e-10));
}

TEST(ValueFunctionalTest, Td1IsTdLambdaWithLambdaOne) {
  auto d = random_data(4, 30);
  auto got = functional::td1_return_estimate(0.9, d.next_value, d.reward, d.done, d.terminated);
  EXPECT_TRUE(torch::allclose(got, reference_lambda_return(0.9, 1.0, d), 1e-10, 1e-10));
}

TEST(ValueFunctionalTest, GaeMatchesTheReferenceLoop) {
  auto d = random_data(5, 64);
  auto [advantage, target] = functional::generalized_advantage_estimate(
      0.99, 0.95, d.value, d.next_value, d.reward, d.done, d.terminated);
  const auto expected = reference_gae(0.99, 0.95, d);
  EXPECT_TRUE(torch::allclose(advantage, expected, 1e-10, 1e-10));
  EXPECT_TRUE(torch::allclose(target, expected + d.value, 1e-10, 1e-10));
}

TEST(ValueFunctionalTest, FloatLoopsMatchTheDoubleReference) {
  auto d = random_data(2, 40);
  auto [advantage, target] = functional::generalized_advantage_estimate(
      0.99, 0.95, d.value.to(torch::kFloat), d.next_value.to(torch::kFloat),
      d.reward.to(torch::kFloat), d.done, d.terminated);
  EXPECT_EQ(advantage.scalar_type(), torch::kFloat);
  EXPECT_TRUE(
      torch::allclose(advantage.to(torch::kDouble), reference_gae(0.99, 0.95, d), 1e-4, 1e-4));
}

TEST(ValueFunctionalTest, TimeDimCanBeAnyDim) {
  auto d = random_data(3, 20);
  // Time first: [T, B, 1].
  auto t = [](const torch::Tensor& x) { return x.transpose(0, 1).contiguous(); };
  auto [advantage, target] = functional::generalized_advantage_estimate(
      0.9, 0.9, t(d.value), t(d.next_value), t(d.reward), t(d.done), t(d.terminated),
      /*time_dim=*/0);
  EXPECT_TRUE(torch::allclose(advantage, t(reference_gae(0.9, 0.9, d)), 1e-10, 1e-10));
}

TEST(ValueFunctionalTest, TensorPathMatchesTheLoopPath) {
  // Integer inputs take the tensor formulation (the loops are for float/double): same numbers.
  auto d = random_data(2, 10);
  const auto reward = (d.reward * 3).round();
  const auto next_value = (d.next_value * 3).round();
  auto loop =
      functional::td_lambda_return_estimate(0.9, 0.7, next_value, reward, d.done, d.terminated);
  auto tensor = functional::td_lambda_return_estimate(
      0.9, 0.7, next_value.to(torch::kLong), reward.to(torch::kLong), d.done, d.terminated);
  EXPECT_TRUE(torch::allclose(tensor.to(torch::kDouble), loop, 1e-4, 1e-4));
}

TEST(ValueFunctionalTest, TruncationBootstrapsTerminationDoesNot) {
  // One row, two steps: step 0 truncated, step 1 terminated.
  auto nv = torch::tensor({{{2.0}, {5.0}}}, torch::kDouble);
  auto r = torch::tensor({{{1.0}, {1.0}}}, torch::kDouble);
  auto done = torch::tensor({{{true}, {true}}});
  auto term = torch::tensor({{{false}, {true}}});
  auto g = functional::td_lambda_return_estimate(0.5, 0.9, nv, r, done, term);
  EXPECT_DOUBLE_EQ(g[0][0][0].item<double>(), 1.0 + 0.5 * 2.0);
  EXPECT_DOUBLE_EQ(g[0][1][0].item<double>(), 1.0);
}

TEST(ValueFunctionalTest, MismatchedShapesThrowInsteadOfBroadcasting) {
  auto d = random_data(2, 5);
  EXPECT_THAT(
      [&] {
        functional::generalized_advantage_estimate(0.9, 0.9, d.value, d.next_value,
                                                   d.reward.squeeze(-1), d.done, d.terminated);
      },
      ThrowsMessage<tensordict::ShapeError>(
          HasSubstr("reward has shape [2, 5] but state_value has shape [2, 5, 1]")));
  EXPECT_THROW(
      functional::td_lambda_return_estimate(0.9, 1.5, d.next_value, d.reward, d.done, d.terminated),
      tensordict::ValueError);
}

TensorDict rollout_td(const Data& d) {
  const auto B = d.value.size(0), T = d.value.size(1);
  TensorDict next({{"reward", d.reward},
                   {"done", d.done},
                   {"terminated", d.terminated},
                   {"state_value", d.next_value}},
                  {B, T});
  return TensorDict({{"state_value", d.value}, {"next", next}}, {B, T});
}

TEST(ValueEstimatorModuleTest, GaeWritesAdvantageAndValueTarget) {
  auto d = random_data(3, 16);
  auto td = rollout_td(d);
  GAE gae(nullptr, ValueEstimatorOptions().gamma(0.99).lmbda(0.95));
  gae(td);
  EXPECT_TRUE(torch::allclose(td.get("advantage"), reference_gae(0.99, 0.95, d), 1e-10, 1e-10));
  EXPECT_EQ(td.get("value_target").sizes(), (Shape{3, 16, 1}));
}

TEST(ValueEstimatorModuleTest, AverageGaeStandardisesTheAdvantage) {
  auto td = rollout_td(random_data(3, 16));
  GAE gae(nullptr, ValueEstimatorOptions().average_gae(true));
  gae(td);
  EXPECT_NEAR(td.get("advantage").mean().item<double>(), 0.0, 1e-9);
  EXPECT_NEAR(td.get("advantage").std().item<double>(), 1.0, 1e-9);
}

TEST(ValueEstimatorModuleTest, RunsTheValueNetworkOnRootAndNext) {
  auto d = random_data(2, 6);
  auto obs = torch::randn({2, 6, 3}, torch::kDouble);
  auto next_obs = torch::randn({2, 6, 3}, torch::kDouble);
  TensorDict next({{"observation", next_obs},
                   {"reward", d.reward},
                   {"done", d.done},
                   {"terminated", d.terminated}},
                  {2, 6});
  TensorDict td({{"observation", obs}, {"next", next}}, {2, 6});
  auto critic = std::make_shared<tensordict::nn::TensorDictModuleImpl>(
      [](const torch::Tensor& x) { return x.sum(-1, true); },
      tensordict::nn::TensorDictModuleOptions().in_keys({"observation"}).out_keys({"state_value"}));
  TDLambdaEstimator estimator(critic, ValueEstimatorOptions().gamma(0.9).lmbda(0.5));
  estimator(td);
  Data ref = d;
  ref.next_value = next_obs.sum(-1, true);
  EXPECT_TRUE(torch::allclose(td.get("value_target"), reference_lambda_return(0.9, 0.5, ref), 1e-10,
                              1e-10));
  EXPECT_TRUE(torch::allclose(td.get("advantage"), td.get("value_target") - obs.sum(-1, true)));
}

TEST(ValueEstimatorModuleTest, Td0AndTd1Modules) {
  auto d = random_data(2, 8);
  auto td = rollout_td(d);
  TD0Estimator td0(nullptr, ValueEstimatorOptions().gamma(0.8));
  td0(td);
  EXPECT_TRUE(torch::allclose(td.get("value_target"),
                              d.reward + 0.8 * (~d.terminated).to(torch::kDouble) * d.next_value));
  TD1Estimator td1(nullptr, ValueEstimatorOptions().gamma(0.8));
  td1(td);
  EXPECT_TRUE(
      torch::allclose(td.get("value_target"), reference_lambda_return(0.8, 1.0, d), 1e-10, 1e-10));
}

TEST(ValueEstimatorModuleTest, SetKeysRenamesWhatIsReadAndWritten) {
  auto d = random_data(2, 8);
  auto td = rollout_td(d);
  td.rename_key_({"next", "reward"}, {"next", "r"});
  GAE gae;
  gae->set_keys({{"reward", NestedKey{"next", "r"}}, {"advantage", NestedKey("adv")}});
  gae(td);
  EXPECT_TRUE(td.contains("adv"));
  EXPECT_THROW(gae->set_keys({{"rewards", NestedKey("x")}}), tensordict::KeyError);
}

TEST(ValueEstimatorModuleTest, MissingKeyNamesItsSetKeysName) {
  auto td = rollout_td(random_data(2, 4));
  td.del_({"next", "terminated"});
  GAE gae;
  EXPECT_THROW(gae(td), tensordict::KeyError);
}

TEST(ValueEstimatorModuleTest, RewardWithoutTrailingDimIsAShapeError) {
  auto d = random_data(2, 4);
  d.reward = d.reward.squeeze(-1);
  TensorDict next({{"reward", d.reward},
                   {"done", d.done},
                   {"terminated", d.terminated},
                   {"state_value", d.next_value}},
                  {2, 4});
  TensorDict td({{"state_value", d.value}, {"next", next}}, {2, 4});
  GAE gae;
  EXPECT_THROW(gae(td), tensordict::ShapeError);
}

// A recurrent critic (an LSTM core and a linear head) over a rollout [B, T] with an episode
// that terminates, one that is truncated and one that runs on from a stored state: each value
// is the critic's step along its env's trajectory from the stored first state (zeroed at each
// is_init), and each next value its step on the next observation from the state after its own
// step, the truncated step's too, whose next observation is not the following root's.
TEST(ValueEstimatorModuleTest, RecurrentCriticValuesFollowEachTrajectoryStepByStep) {
  namespace tdnn = tensordict::nn;
  torch::manual_seed(0);
  const int64_t B = 3, T = 7, kObs = 4, H = 8;
  auto core = std::make_shared<modules::LSTMModuleImpl>(
      modules::RecurrentModuleOptions(kObs, H).in_key("observation").out_key("embed"));
  tdnn::TensorDictModule head(
      torch::nn::Linear(H, 1),
      tdnn::TensorDictModuleOptions().in_keys({"embed"}).out_keys({"state_value"}));
  tdnn::TensorDictSequential critic(tdnn::TensorDictSequentialImpl::Modules{core, head.ptr()});
  GAE gae(critic, ValueEstimatorOptions().gamma(0.9).lmbda(0.8));
  ASSERT_EQ(gae->recurrent_cores().size(), 1u);
  EXPECT_EQ(gae->recurrent_cores()[0], core);

  // Env 0 starts an episode at t=0 and terminates at t=2; env 1 is truncated at t=4; env 2 runs
  // on from the state stored at t=0.
  auto terminated = torch::zeros({B, T, 1}, torch::kBool);
  auto done = torch::zeros({B, T, 1}, torch::kBool);
  terminated[0][2] = true;
  done[0][2] = true;
  done[1][4] = true;
  auto is_init = torch::zeros({B, T, 1}, torch::kBool);
  is_init[0][0] = true;
  is_init.slice(1, 1) = done.slice(1, 0, T - 1);
  const auto obs = torch::randn({B, T, kObs});
  // The next observation is the following root's, except after a done step.
  auto next_obs = torch::randn({B, T, kObs});
  next_obs.slice(1, 0, T - 1) =
      torch::where(done.slice(1, 0, T - 1), next_obs.slice(1, 0, T - 1), obs.slice(1, 1));
  const auto h0 = torch::randn({B, T, 1, H}), c0 = torch::randn({B, T, 1, H});
  auto td = TensorDict({{"observation", obs},
                        {"is_init", is_init},
                        {"recurrent_state_h", h0},
                        {"recurrent_state_c", c0}},
                       {B, T});
  td.set(NestedKey{"next", "observation"}, next_obs);
  td.set(NestedKey{"next", "is_init"}, torch::zeros({B, T, 1}, torch::kBool));
  td.set(NestedKey{"next", "reward"}, torch::randn({B, T, 1}));
  td.set(NestedKey{"next", "done"}, done);
  td.set(NestedKey{"next", "terminated"}, terminated);
  gae(td);
  EXPECT_FALSE(core->recurrent_mode());
  EXPECT_TRUE(core->options().sequence_states());

  torch::NoGradGuard no_grad;
  for (int64_t b = 0; b < B; ++b) {
    auto h = h0[b][0].unsqueeze(0), c = c0[b][0].unsqueeze(0);
    for (int64_t t = 0; t < T; ++t) {
      SCOPED_TRACE("env " + std::to_string(b) + " step " + std::to_string(t));
      auto step = [&](const torch::Tensor& o, bool init) {
        auto s = TensorDict({{"observation", o.unsqueeze(0)},
                             {"is_init", torch::full({1, 1}, init)},
                             {"recurrent_state_h", h},
                             {"recurrent_state_c", c}},
                            {1});
        critic(s);
        return s;
      };
      const auto root = step(obs[b][t], is_init[b][t][0].item<bool>());
      EXPECT_TRUE(
          torch::allclose(td.get("state_value")[b][t], root.get("state_value")[0], 1e-5, 1e-6));
      h = root.get(NestedKey{"next", "recurrent_state_h"});
      c = root.get(NestedKey{"next", "recurrent_state_c"});
      const auto next = step(next_obs[b][t], false);
      EXPECT_TRUE(torch::allclose(td.get(NestedKey{"next", "state_value"})[b][t],
                                  next.get("state_value")[0], 1e-5, 1e-6));
    }
  }
}

TEST(ValueEstimatorModuleTest, TypesParseFromConfigNames) {
  EXPECT_EQ(value_estimator_type_from_string("GAE"), ValueEstimatorType::kGAE);
  EXPECT_EQ(value_estimator_type_from_string("td_lambda"), ValueEstimatorType::kTDLambda);
  EXPECT_THROW(value_estimator_type_from_string("vtrace"), tensordict::ValueError);
  EXPECT_EQ(make_value_estimator(ValueEstimatorType::kTD1, nullptr)->name(), "TD1Estimator");
}

}  // namespace
}  // namespace tdrl::losses
