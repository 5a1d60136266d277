#include <tdrl/losses/sac.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <tensordict/errors.h>

#include "losses/hand_case.h"
#include "losses/off_policy_fixtures.h"

namespace tdrl::losses {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using namespace tdrl::losses::testing;

// ---- SAC -----------------------------------------------------------------------------------

// The hand-worked case with the temperature these tests give SAC.
struct SacCase : HandCase {
  double alpha = 0.5;
};

std::shared_ptr<SACLoss> make_hand_sac(const SacCase& c, SACLossOptions options = {}) {
  auto loss =
      std::make_shared<SACLoss>(hand_actor().actor, hand_critics(c), options.alpha_init(c.alpha));
  loss->make_value_estimator(ValueEstimatorType::kTD0, ValueEstimatorOptions().gamma(c.gamma));
  return loss;
}

TEST(SACLossTest, HandWorkedCaseWithKnownDrawsMatchesThePlainFormula) {
  SacCase c;
  auto loss = make_hand_sac(c);
  const int64_t b = static_cast<int64_t>(c.s.size());
  torch::manual_seed(7);
  const auto eps_actor = to_vector(torch::randn({b, 1}));  // the actor's rsample at s
  const auto eps_next = to_vector(torch::randn({b, 1}));   // the sample at s'
  torch::manual_seed(7);
  auto batch = c.batch();
  const auto out = loss->forward(batch);

  const double target_entropy = -1.0;  // "auto": -prod(action shape [1])
  double loss_actor = 0, loss_qvalue = 0, loss_alpha = 0, entropy = 0;
  for (int64_t i = 0; i < b; ++i) {
    const auto [action, log_prob] = c.sample(c.s[i], eps_actor[i]);
    loss_actor += (c.alpha * log_prob - c.min_q(c.s[i], action)) / b;
    loss_alpha += -std::log(c.alpha) * (log_prob + target_entropy) / b;
    entropy -= log_prob / b;
    const auto [next_action, next_log_prob] = c.sample(c.s_next[i], eps_next[i]);
    const double next_value = c.min_q(c.s_next[i], next_action) - c.alpha * next_log_prob;
    const double y = c.r[i] + c.gamma * (c.term[i] ? 0.0 : 1.0) * next_value;
    for (const auto& q : c.qs) loss_qvalue += huber(q(c.s[i], c.a[i]) - y) / b;
  }
  EXPECT_NEAR(out.get("loss_actor").item<double>(), loss_actor, 1e-4);
  EXPECT_NEAR(out.get("loss_qvalue").item<double>(), loss_qvalue, 1e-4);
  EXPECT_NEAR(out.get("loss_alpha").item<double>(), loss_alpha, 1e-4);
  EXPECT_NEAR(out.get("entropy").item<double>(), entropy, 1e-4);
  EXPECT_NEAR(out.get("alpha").item<double>(), c.alpha, 1e-6);
  EXPECT_EQ(loss->target_entropy(), std::optional<double>(-1.0));
  EXPECT_EQ(batch.get("td_error").sizes(), (std::vector<int64_t>{b}));
}

using SacNets = TanhActorTwinCritics<SACLoss, SACLossOptions>;

TEST(SACLossTest, EachTermTrainsOnlyItsOwnParameters) {
  torch::manual_seed(0);
  SacNets nets;
  auto loss = nets.loss();
  const auto batch = random_batch(6, 3, 2);
  auto clear = [&] { clear_grads(*loss); };
  loss->forward(batch).get("loss_actor").backward();
  EXPECT_TRUE(all_have_grad(*nets.actor.actor));
  EXPECT_TRUE(has_no_gradient(*nets.q1));
  EXPECT_TRUE(has_no_gradient(*nets.q2));
  EXPECT_FALSE(loss->log_alpha().grad().defined());
  clear();
  loss->forward(batch).get("loss_qvalue").backward();
  EXPECT_TRUE(all_have_grad(*nets.q1));
  EXPECT_TRUE(all_have_grad(*nets.q2));
  EXPECT_TRUE(has_no_gradient(*nets.actor.actor));
  EXPECT_FALSE(loss->log_alpha().grad().defined());
  clear();
  loss->forward(batch).get("loss_alpha").backward();
  EXPECT_TRUE(loss->log_alpha().grad().defined());
  EXPECT_TRUE(has_no_gradient(*nets.actor.actor));
  EXPECT_TRUE(has_no_gradient(*nets.q1));
  for (const auto& name : {"qvalue_network_0", "qvalue_network_1"}) {
    EXPECT_TRUE(untouched_by_autograd(loss->target_params(name))) << name;
  }
  EXPECT_FALSE(loss->has_target("actor_network"));
}

TEST(SACLossTest, OptimisationDecreasesTheQValueAndActorLosses) {
  torch::manual_seed(1);
  SacNets nets;
  auto loss = nets.loss();
  const auto batch = random_batch(64, 3, 2);
  auto window_mean = [](const std::vector<double>& v, size_t from, size_t n) {
    double sum = 0;
    for (size_t i = from; i < from + n; ++i) sum += v[i];
    return sum / static_cast<double>(n);
  };
  const auto history = train_actor_and_critics(*loss, batch, parameters_of(*nets.q1, *nets.q2),
                                               nets.actor.actor->parameters(), 150);
  EXPECT_LT(window_mean(history.qvalue, 140, 10), 0.5 * window_mean(history.qvalue, 0, 10));
  EXPECT_LT(window_mean(history.actor, 140, 10), window_mean(history.actor, 0, 10) - 0.1);
}

TEST(SACLossTest, TemperatureRisesWhileTheEntropyIsBelowTarget) {
  torch::manual_seed(2);
  SacNets nets;
  auto loss = nets.loss(SACLossOptions().target_entropy(5.0));
  torch::optim::SGD optimizer({loss->log_alpha()}, torch::optim::SGDOptions(0.1));
  const auto batch = random_batch(16, 3, 2);
  const double before = loss->alpha().item<double>();
  for (int step = 0; step < 5; ++step) {
    optimizer.zero_grad();
    loss->forward(batch).get("loss_alpha").backward();
    optimizer.step();
  }
  EXPECT_GT(loss->alpha().item<double>(), before);
}

TEST(SACLossTest, FixedAlphaIsABufferAndGivesAZeroTemperatureLoss) {
  torch::manual_seed(3);
  SacNets nets;
  auto loss = nets.loss(SACLossOptions().fixed_alpha(true).alpha_init(0.2));
  const auto out = loss->forward(random_batch(4, 3, 2));
  EXPECT_EQ(out.get("loss_alpha").item<double>(), 0.0);
  EXPECT_NEAR(out.get("alpha").item<double>(), 0.2, 1e-6);
  EXPECT_FALSE(loss->log_alpha().requires_grad());
  for (const auto& item : loss->named_parameters()) EXPECT_NE(item.key(), "log_alpha");
}

TEST(SACLossTest, AlphaIsClampedToItsBounds) {
  torch::manual_seed(4);
  SacNets nets;
  auto loss = nets.loss(SACLossOptions().alpha_init(2.0).max_alpha(1.0));
  EXPECT_NEAR(loss->alpha().item<double>(), 1.0, 1e-6);
  const auto out = loss->forward(random_batch(4, 3, 2));
  EXPECT_NEAR(out.get("alpha").item<double>(), 1.0, 1e-6);
  EXPECT_NEAR(loss->log_alpha().item<double>(), 0.0, 1e-6);  // the parameter was clamped too
  EXPECT_THAT([&] { nets.loss(SACLossOptions().min_alpha(2.0).max_alpha(1.0)); },
              ThrowsMessage<tensordict::ValueError>(HasSubstr("min_alpha 2")));
  EXPECT_THAT([&] { nets.loss(SACLossOptions().alpha_init(0.0)); },
              ThrowsMessage<tensordict::ValueError>(HasSubstr("alpha_init is 0")));
}

TEST(SACLossTest, AutoTargetEntropyComesFromTheSpecOrTheDistribution) {
  auto spec = std::make_shared<specs::Bounded>(specs::BoundedOptions().low(-1).high(1).shape({2}));
  auto actor = make_tanh_normal_actor(3, 2, spec);
  SACLoss with_spec(actor.actor, std::vector<modules::ValueOperator>{make_critic(3, 2)});
  EXPECT_EQ(with_spec.target_entropy(), std::optional<double>(-2.0));
  SacNets nets;
  auto without_spec = nets.loss();
  EXPECT_FALSE(without_spec->target_entropy().has_value());
  without_spec->forward(random_batch(2, 3, 2));
  EXPECT_EQ(without_spec->target_entropy(), std::optional<double>(-2.0));
}

TEST(SACLossTest, AnActorWithoutRsampleIsRejected) {
  auto actor = make_categorical_actor(3, 4);
  SACLoss loss(actor.actor, std::vector<modules::ValueOperator>{make_critic(3, 1)});
  auto batch = random_batch(2, 3, 1);
  EXPECT_THAT([&] { loss.forward(batch); },
              ThrowsMessage<tensordict::ValueError>(
                  HasSubstr("the actor's distribution Categorical has no rsample; SAC needs a "
                            "reparametrisable one")));
}

TEST(SACLossTest, BadBatchesThrowAndLeaveTheBatchUnchanged) {
  SacNets nets;
  auto loss = nets.loss();
  auto batch = random_batch(4, 3, 2);
  batch.set({"next", "reward"}, torch::zeros({4}));
  EXPECT_THAT([&] { loss->forward(batch); },
              ThrowsMessage<tensordict::ShapeError>(
                  HasSubstr("SACLoss: TD target: reward has shape [4] but Q(s, a) has shape "
                            "[4, 1]")));
  batch = random_batch(4, 3, 2);
  batch.del_("action");
  EXPECT_THAT([&] { loss->forward(batch); },
              ThrowsMessage<tensordict::KeyError>(HasSubstr(
                  "SACLoss: the batch has no 'action' (the 'action' key); write it into the batch "
                  "or rename it with set_keys")));
  EXPECT_FALSE(batch.contains("td_error"));
  loss->set_keys({{"action", NestedKey("act")}});
  batch = random_batch(4, 3, 2);
  batch.rename_key_("action", "act");
  EXPECT_THAT([&] { loss->forward(batch); },
              ThrowsMessage<tensordict::ValueError>(HasSubstr(
                  "Q-value network 0 reads ['observation', 'action'], not 'act' (the 'action' "
                  "key)")));
}

TEST(SACLossTest, ConstructorRejectsSharedOrMissingCritics) {
  SacNets nets;
  EXPECT_THAT(
      [&] {
        SACLoss(nets.actor.actor, std::vector<modules::ValueOperator>{nets.q1, nets.q1});
      },
      ThrowsMessage<tensordict::ValueError>(HasSubstr("are the same module")));
  EXPECT_THAT([&] { SACLoss(nets.actor.actor, std::vector<modules::ValueOperator>{}); },
              ThrowsMessage<tensordict::ValueError>(HasSubstr("no Q-value network given")));
}

TEST(SACLossTest, PrintsItsOptions) {
  SacCase c;
  std::ostringstream os;
  make_hand_sac(c)->pretty_print(os);
  EXPECT_THAT(os.str(), HasSubstr("SACLoss(num_qvalue_nets=2, loss_function=smooth_l1, "
                                  "alpha_init=0.5, fixed_alpha=false, target_entropy=auto, "
                                  "delay_qvalue=true, value_estimator=TD0Estimator("));
}

// ---- Discrete SAC --------------------------------------------------------------------------

// Two observation dims, three actions; actor logits, Q_1 and Q_2 are linear in s.
struct DiscreteCase {
  torch::Tensor actor_w = torch::tensor({{0.5f, -0.2f}, {0.1f, 0.3f}, {-0.4f, 0.2f}});
  torch::Tensor actor_b = torch::tensor({0.1f, 0.0f, -0.1f});
  std::vector<torch::Tensor> q_w{torch::tensor({{1.0f, 0.0f}, {0.0f, 1.0f}, {0.5f, 0.5f}}),
                                 torch::tensor({{0.8f, 0.1f}, {0.2f, 0.9f}, {0.4f, 0.7f}})};
  std::vector<torch::Tensor> q_b{torch::tensor({0.0f, 0.1f, 0.2f}),
                                 torch::tensor({0.1f, 0.0f, 0.0f})};
  torch::Tensor s = torch::tensor({{1.0f, 2.0f}, {-1.0f, 0.5f}});
  torch::Tensor s_next = torch::tensor({{0.5f, -1.0f}, {2.0f, 1.0f}});
  std::vector<int64_t> action{2, 0};
  std::vector<double> r{1.0, -0.5};
  std::vector<bool> term{false, true};
  double gamma = 0.9, alpha = 0.5;

  TensorDict batch(bool one_hot = false) const {
    auto index = torch::tensor(action);
    return transitions(
        s, one_hot ? torch::one_hot(index, 3).to(torch::kFloat32) : index, s_next,
        torch::tensor({static_cast<float>(r[0]), static_cast<float>(r[1])}).unsqueeze(-1),
        torch::tensor({static_cast<bool>(term[0]), static_cast<bool>(term[1])}).unsqueeze(-1));
  }
};

std::shared_ptr<DiscreteSACLoss> make_hand_discrete(const DiscreteCase& c,
                                                    DiscreteSACLossOptions options) {
  auto actor = make_categorical_actor(2, 3);
  set_linear(*actor.linear, c.actor_w, c.actor_b);
  std::vector<tdnn::TensorDictModule> qs;
  for (size_t i = 0; i < 2; ++i) {
    qs.push_back(make_action_value_network(2, 3));
    set_linear(*qs.back(), c.q_w[i], c.q_b[i]);
  }
  auto loss = std::make_shared<DiscreteSACLoss>(actor.actor, qs, options.alpha_init(c.alpha));
  loss->make_value_estimator(ValueEstimatorType::kTD0, ValueEstimatorOptions().gamma(c.gamma));
  return loss;
}

TEST(DiscreteSACLossTest, HandWorkedCaseMatchesThePlainFormula) {
  DiscreteCase c;
  auto batch = c.batch();
  auto loss = make_hand_discrete(c, DiscreteSACLossOptions(3));
  const auto out = loss->forward(batch);
  // Plain per-sample sums over the three actions, in double.
  auto affine = [](const torch::Tensor& w, const torch::Tensor& b, const torch::Tensor& x, int j) {
    return w[j][0].item<double>() * x[0].item<double>() +
           w[j][1].item<double>() * x[1].item<double>() + b[j].item<double>();
  };
  auto policy = [&](const torch::Tensor& x) {
    std::vector<double> logits(3), log_p(3);
    double norm = 0;
    for (int j = 0; j < 3; ++j) {
      logits[j] = affine(c.actor_w, c.actor_b, x, j);
      norm += std::exp(logits[j]);
    }
    for (int j = 0; j < 3; ++j) log_p[j] = logits[j] - std::log(norm);
    return log_p;
  };
  auto min_q = [&](const torch::Tensor& x, int j) {
    return std::min(affine(c.q_w[0], c.q_b[0], x, j), affine(c.q_w[1], c.q_b[1], x, j));
  };
  const double target_entropy = 0.98 * std::log(3.0);
  double loss_actor = 0, loss_qvalue = 0, loss_alpha = 0, entropy = 0;
  for (int64_t i = 0; i < 2; ++i) {
    const auto log_p = policy(c.s[i]);
    double h = 0;
    for (int j = 0; j < 3; ++j) {
      const double p = std::exp(log_p[j]);
      loss_actor += p * (c.alpha * log_p[j] - min_q(c.s[i], j)) / 2;
      h -= p * log_p[j];
    }
    entropy += h / 2;
    loss_alpha += -std::log(c.alpha) * (target_entropy - h) / 2;
    const auto next_log_p = policy(c.s_next[i]);
    double next_value = 0;
    for (int j = 0; j < 3; ++j) {
      next_value += std::exp(next_log_p[j]) * (min_q(c.s_next[i], j) - c.alpha * next_log_p[j]);
    }
    const double y = c.r[i] + c.gamma * (c.term[i] ? 0.0 : 1.0) * next_value;
    for (int q = 0; q < 2; ++q) {
      loss_qvalue += huber(affine(c.q_w[q], c.q_b[q], c.s[i], c.action[i]) - y) / 2;
    }
  }
  EXPECT_NEAR(out.get("loss_actor").item<double>(), loss_actor, 1e-5);
  EXPECT_NEAR(out.get("loss_qvalue").item<double>(), loss_qvalue, 1e-5);
  EXPECT_NEAR(out.get("loss_alpha").item<double>(), loss_alpha, 1e-5);
  EXPECT_NEAR(out.get("entropy").item<double>(), entropy, 1e-5);
  EXPECT_NEAR(loss->target_entropy(), target_entropy, 1e-12);

  auto one_hot = make_hand_discrete(c, DiscreteSACLossOptions(3))->forward(c.batch(true));
  EXPECT_NEAR(one_hot.get("loss_qvalue").item<double>(), loss_qvalue, 1e-5);
}

// A categorical actor and two Q(s, .) networks (hidden layer `num_cells` wide), for 3
// observation dims and 4 actions.
struct DiscreteSacNets {
  explicit DiscreteSacNets(int64_t num_cells)
      : actor(make_categorical_actor(3, 4)),
        q1(make_action_value_network(3, 4, {num_cells})),
        q2(make_action_value_network(3, 4, {num_cells})) {}
  std::shared_ptr<DiscreteSACLoss> loss() const {
    return std::make_shared<DiscreteSACLoss>(
        actor.actor, std::vector<tdnn::TensorDictModule>{q1, q2}, DiscreteSACLossOptions(4));
  }
  CategoricalActor actor;
  tdnn::TensorDictModule q1;
  tdnn::TensorDictModule q2;
};

TEST(DiscreteSACLossTest, EachTermTrainsOnlyItsOwnParameters) {
  torch::manual_seed(5);
  DiscreteSacNets nets(8);
  auto loss = nets.loss();
  const auto batch = random_discrete_batch(5, 3, 4);
  loss->forward(batch).get("loss_actor").backward();
  EXPECT_TRUE(all_have_grad(*nets.actor.actor));
  EXPECT_TRUE(has_no_gradient(*nets.q1));
  EXPECT_TRUE(has_no_gradient(*nets.q2));
  clear_grads(*loss);
  loss->forward(batch).get("loss_qvalue").backward();
  EXPECT_TRUE(all_have_grad(*nets.q1));
  EXPECT_TRUE(all_have_grad(*nets.q2));
  EXPECT_TRUE(has_no_gradient(*nets.actor.actor));
  EXPECT_FALSE(loss->log_alpha().grad().defined());
  EXPECT_TRUE(untouched_by_autograd(loss->target_params("qvalue_network_1")));
}

TEST(DiscreteSACLossTest, OptimisationDecreasesTheLosses) {
  torch::manual_seed(6);
  DiscreteSacNets nets(16);
  auto loss = nets.loss();
  const auto batch = random_discrete_batch(32, 3, 4);
  const auto history = train_actor_and_critics(*loss, batch, parameters_of(*nets.q1, *nets.q2),
                                               nets.actor.actor->parameters(), 150);
  EXPECT_LT(history.qvalue.back(), 0.3 * history.qvalue.front());
  EXPECT_LT(history.actor.back(), history.actor.front());
}

TEST(DiscreteSACLossTest, MaskedActionsContributeNothingAndStayFinite) {
  torch::manual_seed(7);
  auto actor = make_categorical_actor(3, 4, /*one_hot=*/false, /*with_mask=*/true);
  auto q1 = make_action_value_network(3, 4);
  auto q2 = make_action_value_network(3, 4);
  auto loss = std::make_shared<DiscreteSACLoss>(
      actor.actor, std::vector<tdnn::TensorDictModule>{q1, q2}, DiscreteSACLossOptions(4));
  auto batch = transitions(torch::randn({3, 3}), torch::tensor({0, 1, 0}), torch::randn({3, 3}),
                           torch::randn({3, 1}), torch::zeros({3, 1}, torch::kBool));
  const auto mask = torch::tensor({true, true, false, false}).expand({3, 4});
  batch.set({"masks", "mask"}, mask);
  batch.set({"next", "masks", "mask"}, mask);
  auto out = loss->forward(batch);
  const auto total = out.get("loss_actor") + out.get("loss_qvalue") + out.get("loss_alpha");
  total.backward();
  EXPECT_TRUE(torch::isfinite(total).item<bool>());
  for (const auto& p : loss->parameters()) {
    if (p.grad().defined()) {
      EXPECT_TRUE(torch::isfinite(p.grad()).all().item<bool>());
    }
  }
  EXPECT_LE(out.get("entropy").item<double>(), std::log(2.0) + 1e-6);  // two allowed actions
}

TEST(DiscreteSACLossTest, WrongActorOrActionValueSizeIsRejected) {
  DiscreteCase c;
  auto loss = make_hand_discrete(c, DiscreteSACLossOptions(4));
  EXPECT_THAT([&] { loss->forward(c.batch()); },
              ThrowsMessage<tensordict::ShapeError>(
                  HasSubstr("the actor's distribution has 3 classes but num_actions is 4")));
  auto gaussian = make_tanh_normal_actor(2, 1);
  DiscreteSACLoss bad(gaussian.actor,
                      std::vector<tdnn::TensorDictModule>{make_action_value_network(2, 3)},
                      DiscreteSACLossOptions(3));
  EXPECT_THAT([&] { bad.forward(c.batch()); },
              ThrowsMessage<tensordict::ValueError>(
                  HasSubstr("the actor's distribution is TanhNormal; discrete SAC needs a "
                            "Categorical or OneHotCategorical actor")));
  EXPECT_THAT([&] { make_hand_discrete(c, DiscreteSACLossOptions(1)); },
              ThrowsMessage<tensordict::ValueError>(HasSubstr("num_actions is 1")));
}

TEST(DiscreteSACLossTest, PrintsItsOptions) {
  DiscreteCase c;
  std::ostringstream os;
  make_hand_discrete(c, DiscreteSACLossOptions(3))->pretty_print(os);
  EXPECT_THAT(os.str(), HasSubstr("DiscreteSACLoss(num_actions=3, num_qvalue_nets=2, "
                                  "loss_function=smooth_l1, alpha_init=0.5, fixed_alpha=false, "
                                  "target_entropy=1.07"));
}

}  // namespace
}  // namespace tdrl::losses
