#include <tdrl/losses/dqn.h>

#include <algorithm>
#include <memory>
#include <sstream>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <tdrl/modules/q_value.h>
#include <tdrl/modules/recurrent.h>
#include <tensordict/errors.h>
#include <tensordict/nn/tensordict_sequential.h>

#include "losses/off_policy_fixtures.h"
#include "support/test_names.h"

namespace tdrl::losses {
namespace {

using namespace tdrl::testing::names;
using namespace tdrl::losses::testing;

// Q(s) = W s (no bias), 2 observations, 2 actions.
modules::QValueActor linear_q(const torch::Tensor& weight) {
  torch::nn::Linear linear(torch::nn::LinearOptions(2, 2).bias(false));
  {
    torch::NoGradGuard no_grad;
    linear->weight.copy_(weight);
  }
  return modules::QValueActor(linear, modules::QValueActorOptions());
}

// The DQN loss written out sample by sample: Q = W s, y = r + gamma (1 - term) Q_target(s', a')
// with a' the argmax of the online (double) or target network at s'.
struct Reference {
  double loss = 0;
  std::vector<double> td_error;
};

Reference reference_dqn(const torch::Tensor& w_online, const torch::Tensor& w_target,
                        const torch::Tensor& obs, const std::vector<int64_t>& action,
                        const torch::Tensor& next_obs, const std::vector<double>& reward,
                        const std::vector<bool>& terminated, double gamma, bool double_dqn) {
  auto q = [](const torch::Tensor& w, const torch::Tensor& s, int64_t a) {
    return w[a][0].item<double>() * s[0].item<double>() +
           w[a][1].item<double>() * s[1].item<double>();
  };
  Reference ref;
  const int64_t b = obs.size(0);
  for (int64_t i = 0; i < b; ++i) {
    const double pred = q(w_online, obs[i], action[i]);
    const auto& chooser = double_dqn ? w_online : w_target;
    const int64_t best = q(chooser, next_obs[i], 0) >= q(chooser, next_obs[i], 1) ? 0 : 1;
    const double next = q(w_target, next_obs[i], best);
    const double y = reward[i] + gamma * (terminated[i] ? 0.0 : 1.0) * next;
    ref.loss += (pred - y) * (pred - y) / static_cast<double>(b);
    ref.td_error.push_back(std::abs(pred - y));
  }
  return ref;
}

struct DQNHandCase {
  torch::Tensor w = torch::tensor({{1.0f, 0.0f}, {0.0f, 2.0f}});
  torch::Tensor obs = torch::tensor({{1.0f, 1.0f}, {2.0f, -1.0f}});
  std::vector<int64_t> action_index{0, 1};
  torch::Tensor next_obs = torch::tensor({{3.0f, 1.0f}, {0.0f, 4.0f}});
  std::vector<double> reward{0.5, 1.0};
  std::vector<bool> terminated{false, true};

  TensorDict batch(bool one_hot = true) const {
    auto index = torch::tensor(action_index);
    auto action = one_hot ? torch::one_hot(index, 2).to(torch::kFloat32) : index;
    return transitions(
        obs, action, next_obs,
        torch::tensor({static_cast<float>(reward[0]), static_cast<float>(reward[1])}).unsqueeze(-1),
        torch::tensor({terminated[0], terminated[1]}).unsqueeze(-1));
  }
};

std::shared_ptr<DQNLoss> hand_loss(const DQNHandCase& c, DQNLossOptions options = {}) {
  auto loss = std::make_shared<DQNLoss>(linear_q(c.w), options);
  loss->make_value_estimator(ValueEstimatorType::kTD0, ValueEstimatorOptions().gamma(0.9));
  return loss;
}

TEST(DQNLossTest, HandWorkedCaseMatchesThePlainFormula) {
  DQNHandCase c;
  auto loss = hand_loss(c);
  auto batch = c.batch();
  auto out = loss->forward(batch);
  const auto ref = reference_dqn(c.w, c.w, c.obs, c.action_index, c.next_obs, c.reward,
                                 c.terminated, 0.9, false);
  // (1 - (0.5 + 0.9 * 3))^2 and (-2 - 1)^2, averaged.
  EXPECT_NEAR(ref.loss, (2.2 * 2.2 + 9.0) / 2, 1e-9);
  EXPECT_NEAR(out.get("loss_value").item<double>(), ref.loss, 1e-5);
  EXPECT_NEAR(out.get("pred_value").item<double>(), (1.0 - 2.0) / 2, 1e-6);
  EXPECT_NEAR(out.get("target_value").item<double>(), (3.2 + 1.0) / 2, 1e-5);
  const auto td_error = batch.get("td_error");
  ASSERT_EQ(td_error.sizes(), (std::vector<int64_t>{2}));
  EXPECT_NEAR(td_error[0].item<double>(), ref.td_error[0], 1e-5);
  EXPECT_NEAR(td_error[1].item<double>(), ref.td_error[1], 1e-5);
}

TEST(DQNLossTest, CategoricalActionsGiveTheOneHotLoss) {
  DQNHandCase c;
  auto one_hot = hand_loss(c)->forward(c.batch(true)).get("loss_value");
  auto index = hand_loss(c)->forward(c.batch(false)).get("loss_value");
  EXPECT_TRUE(torch::allclose(one_hot, index));
  auto explicit_space = hand_loss(c, DQNLossOptions().action_space("categorical"));
  EXPECT_TRUE(torch::allclose(explicit_space->forward(c.batch(false)).get("loss_value"), one_hot));
}

TEST(DQNLossTest, TargetNetworkValuesTheNextStateUntilUpdated) {
  DQNHandCase c;
  c.terminated = {false, false};
  auto actor = linear_q(c.w);
  auto loss = std::make_shared<DQNLoss>(actor);
  loss->make_value_estimator(ValueEstimatorType::kTD0, ValueEstimatorOptions().gamma(0.9));
  const torch::Tensor w_new = torch::tensor({{0.0f, 5.0f}, {1.0f, 0.0f}});
  {
    torch::NoGradGuard no_grad;
    loss->params("value_network").get({"0", "module", "weight"}).copy_(w_new);
  }
  auto out = loss->forward(c.batch());
  auto ref = reference_dqn(w_new, c.w, c.obs, c.action_index, c.next_obs, c.reward, c.terminated,
                           0.9, false);
  EXPECT_NEAR(out.get("loss_value").item<double>(), ref.loss, 1e-4);

  HardUpdate updater(loss, 1);
  updater.step();
  out = loss->forward(c.batch());
  ref = reference_dqn(w_new, w_new, c.obs, c.action_index, c.next_obs, c.reward, c.terminated, 0.9,
                      false);
  EXPECT_NEAR(out.get("loss_value").item<double>(), ref.loss, 1e-4);
}

TEST(DQNLossTest, DoubleDQNChoosesWithTheOnlineNetworkAndValuesWithTheTarget) {
  DQNHandCase c;
  c.terminated = {false, false};
  auto loss = hand_loss(c, DQNLossOptions().double_dqn(true));
  const torch::Tensor w_new = torch::tensor({{0.0f, 5.0f}, {1.0f, 0.0f}});
  {
    torch::NoGradGuard no_grad;
    loss->params("value_network").get({"0", "module", "weight"}).copy_(w_new);
  }
  const auto out = loss->forward(c.batch());
  const auto ref = reference_dqn(w_new, c.w, c.obs, c.action_index, c.next_obs, c.reward,
                                 c.terminated, 0.9, true);
  const auto plain = reference_dqn(w_new, c.w, c.obs, c.action_index, c.next_obs, c.reward,
                                   c.terminated, 0.9, false);
  EXPECT_GT(std::abs(ref.loss - plain.loss), 1.0);  // the case tells the two apart
  EXPECT_NEAR(out.get("loss_value").item<double>(), ref.loss, 1e-4);
}

TEST(DQNLossTest, WithoutDelayValueTheOnlineNetworkGivesTheTarget) {
  DQNHandCase c;
  auto loss = hand_loss(c, DQNLossOptions().delay_value(false));
  EXPECT_FALSE(loss->has_target("value_network"));
  const torch::Tensor w_new = torch::tensor({{0.0f, 5.0f}, {1.0f, 0.0f}});
  {
    torch::NoGradGuard no_grad;
    loss->params("value_network").get({"0", "module", "weight"}).copy_(w_new);
  }
  const auto out = loss->forward(c.batch());
  const auto ref = reference_dqn(w_new, w_new, c.obs, c.action_index, c.next_obs, c.reward,
                                 c.terminated, 0.9, false);
  EXPECT_NEAR(out.get("loss_value").item<double>(), ref.loss, 1e-4);
}

TEST(DQNLossTest, GammaComesFromTheValueEstimator) {
  DQNHandCase c;
  auto loss = hand_loss(c);
  loss->make_value_estimator(ValueEstimatorType::kTD0, ValueEstimatorOptions().gamma(0.5));
  const auto ref = reference_dqn(c.w, c.w, c.obs, c.action_index, c.next_obs, c.reward,
                                 c.terminated, 0.5, false);
  EXPECT_NEAR(loss->forward(c.batch()).get("loss_value").item<double>(), ref.loss, 1e-5);
}

TEST(DQNLossTest, GradientReachesTheOnlineNetworkOnly) {
  torch::manual_seed(0);
  modules::QValueActor actor(modules::MLP(modules::MLPOptions(3, 4).num_cells({8})));
  auto loss = std::make_shared<DQNLoss>(actor, DQNLossOptions().double_dqn(true));
  auto batch = transitions(torch::randn({6, 3}), torch::randint(0, 4, {6}), torch::randn({6, 3}),
                           torch::randn({6, 1}), torch::rand({6, 1}) < 0.3);
  loss->forward(batch).get("loss_value").backward();
  EXPECT_TRUE(all_have_grad(*actor));
  EXPECT_TRUE(untouched_by_autograd(loss->target_params("value_network")));
  EXPECT_FALSE(batch.get("td_error").requires_grad());
}

TEST(DQNLossTest, OptimisationDecreasesTheLoss) {
  torch::manual_seed(1);
  modules::QValueActor actor(modules::MLP(modules::MLPOptions(3, 4).num_cells({16})));
  auto loss = std::make_shared<DQNLoss>(actor, DQNLossOptions().loss_function("smooth_l1"));
  auto batch = random_discrete_batch(32, 3, 4);
  const auto value = adam_steps(*loss, batch, {"loss_value"}, loss->parameters(), 100, 1e-2);
  EXPECT_LT(value.final, 0.2 * value.initial);
}

TEST(DQNLossTest, ImportanceWeightsWeightEachSample) {
  DQNHandCase c;
  auto batch = c.batch();
  batch.set("_weight", torch::tensor({1.0f, 0.0f}));
  const auto out = hand_loss(c)->forward(batch);
  // Only the first sample counts: (1 - 3.2)^2 / 2.
  EXPECT_NEAR(out.get("loss_value").item<double>(), 2.2 * 2.2 / 2, 1e-4);
}

TEST(DQNLossTest, MissingKeyNamesTheKeyAndItsSetKeysName) {
  DQNHandCase c;
  auto batch = c.batch();
  batch.del_({"next", "terminated"});
  EXPECT_THAT([&] { hand_loss(c)->forward(batch); },
              ThrowsMessage<tensordict::KeyError>(
                  HasSubstr("DQNLoss: the batch has no ('next', 'terminated') (the "
                            "'terminated' key)")));
  EXPECT_FALSE(batch.contains("td_error"));
}

TEST(DQNLossTest, MissingNextObservationNamesItAndTheNetwork) {
  DQNHandCase c;
  auto batch = c.batch();
  batch.del_({"next", "observation"});
  EXPECT_THAT([&] { hand_loss(c)->forward(batch); },
              ThrowsMessage<tensordict::KeyError>(
                  HasSubstr("the batch has no ('next', 'observation'), an input of the "
                            "value_network on the next state")));
}

TEST(DQNLossTest, RewardWithoutTrailingDimIsAShapeError) {
  DQNHandCase c;
  auto batch = c.batch();
  batch.set({"next", "reward"}, torch::tensor({0.5f, 1.0f}));
  EXPECT_THAT([&] { hand_loss(c)->forward(batch); },
              ThrowsMessage<tensordict::ShapeError>(
                  HasSubstr("reward has shape [2] but Q(s, a) has shape [2, 1]")));
  EXPECT_FALSE(batch.contains("td_error"));
}

TEST(DQNLossTest, ActionFittingNoActionSpaceIsAShapeError) {
  DQNHandCase c;
  auto batch = c.batch();
  batch.set("action", torch::zeros({2, 3}));
  EXPECT_THAT([&] { hand_loss(c)->forward(batch); },
              ThrowsMessage<tensordict::ShapeError>(
                  AllOf(HasSubstr("the action has shape [2, 3]"),
                        HasSubstr("expected a one-hot action [2, 2] or an integer index [2]"))));
}

TEST(DQNLossTest, SetKeysRenamesReadAndWrittenKeys) {
  DQNHandCase c;
  auto loss = hand_loss(c);
  loss->set_keys({{"reward", NestedKey{"next", "r"}}, {"priority", NestedKey("prio")}});
  auto batch = c.batch();
  batch.rename_key_({"next", "reward"}, {"next", "r"});
  loss->forward(batch);
  EXPECT_TRUE(batch.contains("prio"));
  EXPECT_FALSE(batch.contains("td_error"));
  EXPECT_EQ(
      loss->in_keys(),
      (std::vector<NestedKey>{"action", {"next", "r"}, {"next", "done"}, {"next", "terminated"}}));
}

TEST(DQNLossTest, ConstructorRejectsBadOptions) {
  DQNHandCase c;
  EXPECT_THAT([&] { DQNLoss(linear_q(c.w), DQNLossOptions().loss_function("l3")); },
              ::testing::ThrowsMessage<tensordict::ValueError>(HasSubstr("l3")));
  EXPECT_THAT([&] { DQNLoss(linear_q(c.w), DQNLossOptions().action_space("binary")); },
              ::testing::ThrowsMessage<tensordict::ValueError>(
                  HasSubstr("unknown action_space 'binary'; valid: 'one_hot', 'categorical'")));
  EXPECT_THAT(
      [&] {
        DQNLoss(tdnn::TensorDictModule(
            [](const torch::Tensor& x) { return x; },
            tdnn::TensorDictModuleOptions().in_keys({"observation"}).out_keys({"action_value"})));
      },
      ::testing::ThrowsMessage<tensordict::ValueError>(HasSubstr("has no parameters")));
  EXPECT_THAT([&] { hand_loss(c)->make_value_estimator(ValueEstimatorType::kGAE); },
              ::testing::ThrowsMessage<tensordict::ValueError>(
                  HasSubstr("GAE is an on-policy advantage estimator")));
}

TEST(DQNLossTest, ActionSpaceComesFromTheQValueActorWhenItWasGivenOne) {
  torch::nn::Linear linear(2, 2);
  DQNLoss given(modules::QValueActor(
      linear, modules::QValueActorOptions().qvalue(
                  modules::QValueModuleOptions().action_space("categorical"))));
  EXPECT_EQ(given.action_space(), "categorical");
  DQNHandCase c;
  EXPECT_EQ(hand_loss(c)->action_space(), "");  // the QValueActor's fallback is not used
  DQNLoss plain(make_action_value_network(2, 2));
  EXPECT_EQ(plain.action_space(), "");
}

TEST(DQNLossTest, PrintsItsOptions) {
  DQNHandCase c;
  std::ostringstream os;
  hand_loss(c, DQNLossOptions().double_dqn(true))->pretty_print(os);
  EXPECT_THAT(os.str(),
              HasSubstr("DQNLoss(loss_function=l2, delay_value=true, double_dqn=true, "
                        "action_space=from batch, value_estimator=TD0Estimator(gamma=0.9"));
}

// ---- DistributionalDQNLoss -----------------------------------------------------------------

namespace distributional {

// log p(z | s, a) `[B, K, n]` = log_softmax over atoms of a linear map of the observation.
class AtomNetImpl : public torch::nn::Module {
 public:
  AtomNetImpl(int64_t obs_dim, int64_t atoms, int64_t actions)
      : linear(register_module("linear", torch::nn::Linear(obs_dim, atoms * actions))),
        atoms_(atoms),
        actions_(actions) {}
  torch::Tensor forward(const torch::Tensor& x) {
    return linear(x).view({-1, atoms_, actions_}).log_softmax(-2);
  }
  torch::nn::Linear linear;

 private:
  int64_t atoms_, actions_;
};
TORCH_MODULE(AtomNet);

tdnn::TensorDictModule atom_network(const AtomNet& net) {
  return tdnn::TensorDictModule(
      net, tdnn::TensorDictModuleOptions().in_keys({"observation"}).out_keys({"action_value"}));
}

// The C51 loss written out: probabilities from the logits, the greedy next action under the
// expected value, each atom's mass shared by distance between the neighbouring atoms.
std::vector<double> reference_c51(const torch::Tensor& w, const torch::Tensor& bias,
                                  const torch::Tensor& obs, const std::vector<int64_t>& action,
                                  const torch::Tensor& next_obs, const std::vector<double>& reward,
                                  const std::vector<bool>& terminated, const std::vector<double>& z,
                                  double gamma, int64_t n) {
  const int64_t k = static_cast<int64_t>(z.size());
  auto probs = [&](const torch::Tensor& x) {  // [k][n]
    std::vector<std::vector<double>> logits(k, std::vector<double>(n));
    for (int64_t j = 0; j < k; ++j) {
      for (int64_t a = 0; a < n; ++a) {
        double v = bias[j * n + a].item<double>();
        for (int64_t d = 0; d < x.size(0); ++d) {
          v += w[j * n + a][d].item<double>() * x[d].item<double>();
        }
        logits[j][a] = v;
      }
    }
    for (int64_t a = 0; a < n; ++a) {
      double norm = 0;
      for (int64_t j = 0; j < k; ++j) norm += std::exp(logits[j][a]);
      for (int64_t j = 0; j < k; ++j) logits[j][a] = std::exp(logits[j][a]) / norm;
    }
    return logits;
  };
  const double dz = (z.back() - z.front()) / static_cast<double>(k - 1);
  std::vector<double> losses;
  for (int64_t i = 0; i < obs.size(0); ++i) {
    const auto p = probs(obs[i]);
    const auto next_p = probs(next_obs[i]);
    int64_t best = 0;
    double best_q = -1e300;
    for (int64_t a = 0; a < n; ++a) {
      double q = 0;
      for (int64_t j = 0; j < k; ++j) q += z[j] * next_p[j][a];
      if (q > best_q) {
        best_q = q;
        best = a;
      }
    }
    double loss = 0;
    for (int64_t j = 0; j < k; ++j) {
      double m = 0;
      for (int64_t l = 0; l < k; ++l) {
        double tz = reward[i] + gamma * (terminated[i] ? 0.0 : 1.0) * z[l];
        tz = std::min(std::max(tz, z.front()), z.back());
        m += next_p[l][best] * std::max(0.0, 1.0 - std::abs(tz - z[j]) / dz);
      }
      loss -= m * std::log(p[j][action[i]]);
    }
    losses.push_back(loss);
  }
  return losses;
}

struct C51Case {
  std::vector<double> z{-1.0, 0.0, 1.0};
  torch::Tensor obs = torch::tensor({{1.0f, 0.5f}, {-0.5f, 2.0f}});
  torch::Tensor next_obs = torch::tensor({{0.2f, -1.0f}, {1.5f, 0.5f}});
  std::vector<int64_t> action{1, 0};
  std::vector<double> reward{0.3, -0.25};
  std::vector<bool> terminated{false, true};
  AtomNet net{2, 3, 2};

  C51Case() {
    torch::manual_seed(21);
    torch::NoGradGuard no_grad;
    net->linear->weight.copy_(torch::randn({6, 2}));
    net->linear->bias.copy_(torch::randn({6}));
  }
  TensorDict batch(bool one_hot = false) const {
    auto index = torch::tensor(action);
    return transitions(
        obs, one_hot ? torch::one_hot(index, 2).to(torch::kFloat32) : index, next_obs,
        torch::tensor({static_cast<float>(reward[0]), static_cast<float>(reward[1])}).unsqueeze(-1),
        torch::tensor({static_cast<bool>(terminated[0]), static_cast<bool>(terminated[1])})
            .unsqueeze(-1));
  }
  std::shared_ptr<DistributionalDQNLoss> loss() const {
    auto out = std::make_shared<DistributionalDQNLoss>(
        atom_network(net), DistributionalDQNLossOptions(torch::tensor({-1.0f, 0.0f, 1.0f})));
    out->make_value_estimator(ValueEstimatorType::kTD0, ValueEstimatorOptions().gamma(0.9));
    return out;
  }
};

TEST(DistributionalDQNLossTest, HandWorkedCaseMatchesThePlainProjection) {
  C51Case c;
  auto batch = c.batch();
  const auto out = c.loss()->forward(batch);
  const auto ref = reference_c51(c.net->linear->weight.detach(), c.net->linear->bias.detach(),
                                 c.obs, c.action, c.next_obs, c.reward, c.terminated, c.z, 0.9, 2);
  EXPECT_NEAR(out.get("loss_value").item<double>(), (ref[0] + ref[1]) / 2, 1e-5);
  EXPECT_NEAR(batch.get("td_error")[0].item<double>(), ref[0], 1e-5);
  EXPECT_NEAR(batch.get("td_error")[1].item<double>(), ref[1], 1e-5);
  // One-hot actions give the same loss.
  EXPECT_NEAR(c.loss()->forward(c.batch(true)).get("loss_value").item<double>(),
              (ref[0] + ref[1]) / 2, 1e-5);
}

TEST(DistributionalDQNLossTest, AtomsLandingOnTheSupportKeepTheirMass) {
  // Reward 1 and gamma 1 move atom z_j exactly onto z_{j+1}; the top atom is clamped.
  C51Case c;
  c.reward = {1.0, 1.0};
  c.terminated = {false, false};
  auto loss = c.loss();
  loss->make_value_estimator(ValueEstimatorType::kTD0, ValueEstimatorOptions().gamma(1.0));
  auto batch = c.batch();
  const auto out = loss->forward(batch);
  const auto ref = reference_c51(c.net->linear->weight.detach(), c.net->linear->bias.detach(),
                                 c.obs, c.action, c.next_obs, c.reward, c.terminated, c.z, 1.0, 2);
  EXPECT_NEAR(out.get("loss_value").item<double>(), (ref[0] + ref[1]) / 2, 1e-5);
}

TEST(DistributionalDQNLossTest, GradientReachesTheOnlineNetworkAndTheLossDecreases) {
  C51Case c;
  auto loss = c.loss();
  const auto batch = c.batch();
  const auto value = adam_steps(*loss, batch, {"loss_value"}, loss->parameters(), 100, 5e-2);
  EXPECT_TRUE(all_have_grad(*c.net));
  EXPECT_TRUE(untouched_by_autograd(loss->target_params("value_network")));
  EXPECT_LT(value.final, value.initial - 0.1);
}

TEST(DistributionalDQNLossTest, RejectsBadSupportsShapesAndEstimators) {
  C51Case c;
  EXPECT_THAT(
      [&] {
        DistributionalDQNLoss(atom_network(c.net),
                              DistributionalDQNLossOptions(torch::tensor({1.0f, 0.0f})));
      },
      ::testing::ThrowsMessage<tensordict::ValueError>(HasSubstr("must be increasing")));
  EXPECT_THAT(
      [&] {
        DistributionalDQNLoss(atom_network(c.net),
                              DistributionalDQNLossOptions(torch::tensor({1.0f})));
      },
      ::testing::ThrowsMessage<tensordict::ValueError>(HasSubstr("at least 2 atoms")));
  auto four_atoms = std::make_shared<DistributionalDQNLoss>(
      atom_network(c.net), DistributionalDQNLossOptions(torch::linspace(-1, 1, 4)));
  EXPECT_THAT([&] { four_atoms->forward(c.batch()); },
              ::testing::ThrowsMessage<tensordict::ShapeError>(
                  HasSubstr("the action values have shape [2, 3, 2]; expected log-probabilities "
                            "[*B, num_atoms=4, num_actions]")));
  EXPECT_THAT([&] { c.loss()->make_value_estimator(ValueEstimatorType::kTDLambda); },
              ::testing::ThrowsMessage<tensordict::ValueError>(HasSubstr("only td0")));
  auto batch = c.batch();
  batch.set({"next", "reward"}, torch::zeros({2}));
  EXPECT_THAT([&] { c.loss()->forward(batch); },
              ::testing::ThrowsMessage<tensordict::ShapeError>(
                  HasSubstr("reward has shape [2] but Q(s, a) has shape [2, 1]")));
}

TEST(DistributionalDQNLossTest, PrintsItsOptions) {
  C51Case c;
  std::ostringstream os;
  c.loss()->pretty_print(os);
  EXPECT_EQ(os.str(),
            "DistributionalDQNLoss(num_atoms=3, v_min=-1, v_max=1, delay_value=true, gamma=0.9)");
}

}  // namespace distributional

}  // namespace
}  // namespace tdrl::losses

namespace tdrl::losses {
namespace {

// R2D2-style: a recurrent Q-network over sequences [N, L] with stored first states, an episode
// start inside a sequence and a burn-in step. Each Q(s, a) is the network's step along the
// sequence (zero state at is_init), each next value its step on the next observation from the
// state after its own step, and the burn-in step is out of the loss and its diagnostics.
TEST(DQNLossTest, RecurrentQNetworkValuesEachStepFromItsOwnState) {
  namespace tdnn = tensordict::nn;
  torch::manual_seed(0);
  const int64_t N = 2, L = 5, kObs = 3, H = 6, kActions = 2;
  auto core = std::make_shared<modules::GRUModuleImpl>(
      modules::RecurrentModuleOptions(kObs, H).in_key("observation").out_key("embed"));
  modules::QValueActor head(torch::nn::Linear(H, kActions),
                            modules::QValueActorOptions().in_keys({"embed"}));
  tdnn::TensorDictSequential qnet(tdnn::TensorDictSequentialImpl::Modules{core, head.ptr()});
  DQNLoss loss(qnet, DQNLossOptions().loss_function("l2").double_dqn(false).action_space(
                         std::string("categorical")));
  loss.make_value_estimator(ValueEstimatorType::kTD0, ValueEstimatorOptions().gamma(0.9));

  auto is_init = torch::zeros({N, L, 1}, torch::kBool);
  is_init[1][2] = true;  // an episode of sequence 1 ends at step 1
  auto done = torch::zeros({N, L, 1}, torch::kBool);
  done[1][1] = true;
  const auto obs = torch::randn({N, L, kObs}), next_obs = torch::randn({N, L, kObs});
  const auto action = torch::randint(kActions, {N, L});
  const auto reward = torch::randn({N, L, 1});
  const auto h0 = torch::randn({N, L, 1, H});
  auto burn_in = torch::zeros({N, L}, torch::kBool);
  burn_in.select(1, 0).fill_(true);
  TensorDict batch({{"observation", obs},
                    {"is_init", is_init},
                    {"recurrent_state", h0},
                    {"action", action},
                    {"burn_in", burn_in}},
                   {N, L});
  batch.set(NestedKey{"next", "observation"}, next_obs);
  batch.set(NestedKey{"next", "is_init"}, torch::zeros({N, L, 1}, torch::kBool));
  batch.set(NestedKey{"next", "recurrent_state"}, torch::zeros({N, L, 1, H}));  // stale
  batch.set(NestedKey{"next", "reward"}, reward);
  batch.set(NestedKey{"next", "done"}, done);
  batch.set(NestedKey{"next", "terminated"}, done);
  const auto out = loss.forward(batch);
  EXPECT_FALSE(core->recurrent_mode());

  // The reference: every step alone, in step mode, carrying the state by hand.
  torch::NoGradGuard no_grad;
  double sq = 0, pred_sum = 0, target_sum = 0;
  int trained = 0;
  std::vector<std::vector<double>> qs(N, std::vector<double>(L)), next_maxes = qs;
  for (int64_t n = 0; n < N; ++n) {
    auto h = h0[n][0].unsqueeze(0);
    for (int64_t t = 0; t < L; ++t) {
      auto step = [&](const torch::Tensor& o, bool init) {
        auto s = TensorDict({{"observation", o.unsqueeze(0)},
                             {"is_init", torch::full({1, 1}, init)},
                             {"recurrent_state", h}},
                            {1});
        qnet(s);
        return s;
      };
      const auto root = step(obs[n][t], is_init[n][t][0].item<bool>());
      const double q = root.get("action_value")[0][action[n][t].item<int64_t>()].item<double>();
      h = root.get(NestedKey{"next", "recurrent_state"});
      const double next_max = step(next_obs[n][t], false).get("action_value").max().item<double>();
      qs[n][t] = q;
      next_maxes[n][t] = next_max;
      const double y =
          reward[n][t][0].item<double>() + 0.9 * (done[n][t][0].item<bool>() ? 0.0 : next_max);
      if (t == 0) continue;  // burn-in
      sq += (q - y) * (q - y);
      pred_sum += q;
      target_sum += y;
      ++trained;
    }
  }
  EXPECT_NEAR(out.get("loss_value").item<double>(), sq / trained, 1e-5);
  EXPECT_NEAR(out.get("pred_value").item<double>(), pred_sum / trained, 1e-5);
  EXPECT_NEAR(out.get("target_value").item<double>(), target_sum / trained, 1e-5);

  // A recurrent network needs sequences.
  EXPECT_THROW(loss.forward(batch.reshape({-1})), tensordict::ShapeError);

  // The burn-in step only warms the state up: the loss and its gradient are those of the
  // sequences after it, started from the warmed-up state (no gradient through the burn-in).
  torch::AutoGradMode with_grad(true);
  for (const auto& p : loss.parameters()) p.mutable_grad() = torch::Tensor();
  loss.forward(batch).get("loss_value").backward();
  std::vector<torch::Tensor> grads;
  for (const auto& p : loss.parameters())
    grads.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
  namespace ix = torch::indexing;
  auto rest = batch.index({ix::Slice(), ix::Slice(1, ix::None)});
  rest.del_("burn_in");
  {
    torch::NoGradGuard no_grad;
    auto first = batch.index({ix::Slice(), 0});
    auto warm = TensorDict({{"observation", first.get("observation")},
                            {"is_init", first.get("is_init")},
                            {"recurrent_state", first.get("recurrent_state")}},
                           {N});
    qnet(warm);
    rest.set("recurrent_state", warm.get(NestedKey{"next", "recurrent_state"})
                                    .unsqueeze(1)
                                    .expand({N, L - 1, 1, H})
                                    .clone());
  }
  for (const auto& p : loss.parameters()) p.mutable_grad() = torch::Tensor();
  const auto expected = loss.forward(rest).get("loss_value");
  expected.backward();
  EXPECT_NEAR(out.get("loss_value").item<double>(), expected.item<double>(), 1e-5);
  const auto params = loss.parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    const auto g = params[i].grad().defined() ? params[i].grad() : torch::zeros_like(params[i]);
    EXPECT_TRUE(torch::allclose(grads[i], g, 1e-5, 1e-6)) << "parameter " << i;
  }
  // Burn-in flags that are not the same first steps of every sequence are refused.
  auto ragged = batch.clone();
  ragged.get("burn_in")[1][1] = true;
  EXPECT_THROW(loss.forward(ragged), tensordict::ValueError);

  // TD(lambda) targets run along each sequence after the burn-in, from the same next values:
  // G_t = r_t + gamma * ((1 - lambda) * next_t + lambda * G_{t+1}), cut at the episode end and
  // bootstrapped from the next value at the sequence's last step.
  loss.make_value_estimator(ValueEstimatorType::kTDLambda,
                            ValueEstimatorOptions().gamma(0.9).lmbda(0.5));
  const auto lambda_out = loss.forward(batch);
  double lambda_sq = 0, lambda_sum = 0;
  for (int64_t n = 0; n < N; ++n) {
    double g = 0;
    for (int64_t t = L - 1; t >= 1; --t) {
      const double ahead = t == L - 1 ? next_maxes[n][t] : 0.5 * next_maxes[n][t] + 0.5 * g;
      g = reward[n][t][0].item<double>() + (done[n][t][0].item<bool>() ? 0.0 : 0.9 * ahead);
      lambda_sq += (qs[n][t] - g) * (qs[n][t] - g);
      lambda_sum += g;
    }
  }
  EXPECT_NEAR(lambda_out.get("target_value").item<double>(), lambda_sum / trained, 1e-5);
  EXPECT_NEAR(lambda_out.get("loss_value").item<double>(), lambda_sq / trained, 1e-5);
  EXPECT_GT(std::abs(lambda_sum - target_sum), 1e-3) << "lambda changes the targets";
}

}  // namespace
}  // namespace tdrl::losses
