#include <tdrl/losses/actor_qvalue_loss.h>
#include <tdrl/losses/ddpg.h>
#include <tdrl/losses/td3.h>

#include <cmath>
#include <memory>
#include <sstream>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <tensordict/errors.h>

#include "losses/off_policy_fixtures.h"

namespace tdrl::losses {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using namespace tdrl::losses::testing;

// One-dimensional observations and actions: actor mu(s) = k s, critics Q(s, a) = w_s s +
// w_a a + c, so every term can be written out by hand.
struct LinearCritic {
  double w_s, w_a, c;
  double operator()(double s, double a) const { return w_s * s + w_a * a + c; }
};

struct DDPGHandCase {
  double k = 0.5;
  std::vector<double> s{1.0, -2.0}, a{0.3, -0.5}, s_next{2.0, 1.0}, r{1.0, 0.0};
  std::vector<bool> term{false, true};
  double gamma = 0.9;

  TensorDict batch() const {
    auto col = [](const std::vector<double>& v) {
      return torch::tensor(v, torch::kFloat32).unsqueeze(-1);
    };
    return transitions(
        col(s), col(a), col(s_next), col(r),
        torch::tensor({static_cast<bool>(term[0]), static_cast<bool>(term[1])}).unsqueeze(-1));
  }
};

tdnn::TensorDictModule linear_actor(double k) {
  auto actor = make_deterministic_actor(1, 1, {}, /*squash=*/false);
  set_linear(*actor, torch::tensor({{static_cast<float>(k)}}), torch::zeros({1}));
  return actor;
}

modules::ValueOperator linear_critic(const LinearCritic& q) {
  auto critic = make_critic(1, 1);
  set_linear(*critic, torch::tensor({{static_cast<float>(q.w_s), static_cast<float>(q.w_a)}}),
             torch::tensor({static_cast<float>(q.c)}));
  return critic;
}

// ---- DDPG ----------------------------------------------------------------------------------

std::shared_ptr<DDPGLoss> hand_ddpg(const DDPGHandCase& c, const LinearCritic& q,
                                    DDPGLossOptions options = {}) {
  auto loss = std::make_shared<DDPGLoss>(linear_actor(c.k), linear_critic(q), options);
  loss->make_value_estimator(ValueEstimatorType::kTD0, ValueEstimatorOptions().gamma(c.gamma));
  return loss;
}

TEST(DDPGLossTest, HandWorkedCaseMatchesThePlainFormula) {
  DDPGHandCase c;
  const LinearCritic q{1.0, 2.0, 0.1};
  auto batch = c.batch();
  const auto out = hand_ddpg(c, q)->forward(batch);
  double loss_actor = 0, loss_value = 0;
  std::vector<double> td_error;
  for (size_t i = 0; i < c.s.size(); ++i) {
    loss_actor -= q(c.s[i], c.k * c.s[i]) / 2;
    const double y = c.r[i] + c.gamma * (c.term[i] ? 0.0 : 1.0) * q(c.s_next[i], c.k * c.s_next[i]);
    const double pred = q(c.s[i], c.a[i]);
    loss_value += (pred - y) * (pred - y) / 2;
    td_error.push_back(std::abs(pred - y));
  }
  EXPECT_NEAR(out.get("loss_actor").item<double>(), loss_actor, 1e-5);
  EXPECT_NEAR(out.get("loss_value").item<double>(), loss_value, 1e-5);
  EXPECT_NEAR(batch.get("td_error")[0].item<double>(), td_error[0], 1e-5);
  EXPECT_NEAR(batch.get("td_error")[1].item<double>(), td_error[1], 1e-5);
  EXPECT_NEAR(out.get("pred_value_max").item<double>(), q(c.s[0], c.a[0]), 1e-5);
}

TEST(DDPGLossTest, ActorLossTrainsOnlyTheActorAndValueLossOnlyTheCritic) {
  torch::manual_seed(0);
  auto actor = make_deterministic_actor(3, 2, {8});
  auto critic = make_critic(3, 2, {8});
  auto loss = std::make_shared<DDPGLoss>(actor, critic);
  auto out = loss->forward(random_batch(5, 3, 2));
  out.get("loss_actor").backward();
  EXPECT_TRUE(all_have_grad(*actor));
  EXPECT_TRUE(has_no_gradient(*critic));
  clear_grads(*actor);
  out = loss->forward(random_batch(5, 3, 2));
  out.get("loss_value").backward();
  EXPECT_TRUE(all_have_grad(*critic));
  EXPECT_TRUE(has_no_gradient(*actor));
  EXPECT_TRUE(untouched_by_autograd(loss->target_params("value_network")));
  EXPECT_FALSE(loss->has_target("actor_network"));  // TorchRL's default delay_actor=false
}

TEST(DDPGLossTest, CriticParametersStayTrainableAfterTheActorTerm) {
  torch::manual_seed(0);
  auto critic = make_critic(3, 2, {8});
  auto loss = std::make_shared<DDPGLoss>(make_deterministic_actor(3, 2, {8}), critic);
  loss->forward(random_batch(4, 3, 2));
  for (const auto& p : critic->parameters()) EXPECT_TRUE(p.requires_grad());
}

TEST(DDPGLossTest, OptimisationDecreasesBothLosses) {
  torch::manual_seed(2);
  auto actor = make_deterministic_actor(3, 2, {16});
  auto critic = make_critic(3, 2, {16});
  auto loss = std::make_shared<DDPGLoss>(actor, critic);
  const auto batch = random_batch(32, 3, 2);
  const auto value = adam_steps(*loss, batch, {"loss_value"}, critic->parameters(), 150, 1e-2);
  EXPECT_LT(value.final, 0.3 * value.initial);
  const auto actor_term = adam_steps(*loss, batch, {"loss_actor"}, actor->parameters(), 50, 1e-2);
  EXPECT_LT(actor_term.final, actor_term.initial - 0.05);
}

TEST(DDPGLossTest, DelayActorTakesTheNextActionFromTheTargetActor) {
  DDPGHandCase c;
  const LinearCritic q{1.0, 2.0, 0.1};
  for (bool delay_actor : {false, true}) {
    auto loss = hand_ddpg(c, q, DDPGLossOptions().delay_actor(delay_actor));
    const double before = loss->forward(c.batch()).get("loss_value").item<double>();
    set_linear(*loss->network("actor_network"), torch::tensor({{3.0f}}), torch::zeros({1}));
    const double after = loss->forward(c.batch()).get("loss_value").item<double>();
    if (delay_actor) {
      EXPECT_NEAR(after, before, 1e-6);
    } else {
      EXPECT_GT(std::abs(after - before), 1e-2);
    }
  }
}

TEST(DDPGLossTest, CriticThatDoesNotReadTheActionIsRejected) {
  DDPGHandCase c;
  modules::ValueOperator critic(modules::MLP(modules::MLPOptions(1, 1)),
                                modules::ValueOperatorOptions().out_keys({"state_action_value"}));
  DDPGLoss loss(linear_actor(c.k), critic);
  EXPECT_THAT([&] { loss.forward(c.batch()); },
              ThrowsMessage<tensordict::ValueError>(
                  HasSubstr("the value_network reads ['observation'], not 'action' (the 'action' "
                            "key)")));
}

TEST(DDPGLossTest, MissingNextObservationNamesTheActor) {
  DDPGHandCase c;
  auto batch = c.batch();
  batch.del_({"next", "observation"});
  EXPECT_THAT(
      [&] {
        hand_ddpg(c, {1, 1, 0})->forward(batch);
      },
      ThrowsMessage<tensordict::KeyError>(
          HasSubstr("DDPGLoss: the batch has no ('next', 'observation'), an input of the "
                    "actor_network on the next state")));
  EXPECT_FALSE(batch.contains("td_error"));
}

TEST(DDPGLossTest, DoneOfAnotherShapeIsAShapeError) {
  DDPGHandCase c;
  auto batch = c.batch();
  batch.set({"next", "done"}, torch::zeros({2}, torch::kBool));
  EXPECT_THAT(
      [&] {
        hand_ddpg(c, {1, 1, 0})->forward(batch);
      },
      ThrowsMessage<tensordict::ShapeError>(
          HasSubstr("done has shape [2] but Q(s, a) has shape [2, 1]")));
}

TEST(DDPGLossTest, PrintsItsOptions) {
  DDPGHandCase c;
  std::ostringstream os;
  hand_ddpg(c, {1, 1, 0})->pretty_print(os);
  EXPECT_THAT(os.str(), HasSubstr("DDPGLoss(loss_function=l2, delay_actor=false, "
                                  "delay_value=true, value_estimator=TD0Estimator(gamma=0.9"));
}

// ---- TD3 -----------------------------------------------------------------------------------

specs::TensorSpecPtr bounded(double low, double high, int64_t dim = 1) {
  return std::make_shared<specs::Bounded>(specs::BoundedOptions().low(low).high(high).shape({dim}));
}

std::shared_ptr<TD3Loss> hand_td3(const DDPGHandCase& c, const std::vector<LinearCritic>& qs,
                                  TD3LossOptions options) {
  std::vector<modules::ValueOperator> critics;
  for (const auto& q : qs) critics.push_back(linear_critic(q));
  auto loss = std::make_shared<TD3Loss>(linear_actor(c.k), critics, options);
  loss->make_value_estimator(ValueEstimatorType::kTD0, ValueEstimatorOptions().gamma(c.gamma));
  return loss;
}

TEST(TD3LossTest, HandWorkedCaseWithClampedTargetActionMatchesThePlainFormula) {
  DDPGHandCase c;
  c.k = 2.0;
  c.s_next = {2.0, -0.25};  // mu(s') = 4 (clamped to 1) and -0.5
  c.term = {false, false};
  const std::vector<LinearCritic> qs{{1.0, 2.0, 0.1}, {0.5, -1.0, 0.0}};
  auto loss = hand_td3(
      c, qs, TD3LossOptions().action_spec(bounded(-1, 1)).policy_noise(0.0).loss_function("l2"));
  auto batch = c.batch();
  const auto out = loss->forward(batch);
  double loss_actor = 0, loss_qvalue = 0, next_mean = 0;
  for (size_t i = 0; i < c.s.size(); ++i) {
    loss_actor -= qs[0](c.s[i], c.k * c.s[i]) / 2;
    const double a_next = std::clamp(c.k * c.s_next[i], -1.0, 1.0);
    const double next = std::min(qs[0](c.s_next[i], a_next), qs[1](c.s_next[i], a_next));
    next_mean += next / 2;
    const double y = c.r[i] + c.gamma * next;
    for (const auto& q : qs) {
      loss_qvalue += (q(c.s[i], c.a[i]) - y) * (q(c.s[i], c.a[i]) - y) / 2;
    }
  }
  EXPECT_NEAR(out.get("loss_actor").item<double>(), loss_actor, 1e-5);
  EXPECT_NEAR(out.get("loss_qvalue").item<double>(), loss_qvalue, 1e-4);
  EXPECT_NEAR(out.get("next_state_value").item<double>(), next_mean, 1e-5);
  EXPECT_EQ(batch.get("td_error").sizes(), (std::vector<int64_t>{2}));
}

TEST(TD3LossTest, TargetPolicyNoiseIsClipped) {
  torch::manual_seed(3);
  DDPGHandCase c;
  c.s = {1.0};
  c.a = {0.0};
  c.s_next = {1.0};
  c.r = {0.0};
  c.term = {false};
  const LinearCritic q{0.0, 1.0, 0.0};  // Q(s', a') = a'
  auto loss = hand_td3(
      c, {q}, TD3LossOptions().action_spec(bounded(-10, 10)).policy_noise(100.0).noise_clip(0.1));
  auto col = [](double v) { return torch::full({1, 1}, static_cast<float>(v)); };
  const auto batch =
      transitions(col(1), col(0), col(1), col(0), torch::zeros({1, 1}, torch::kBool));
  int low = 0, high = 0;
  for (int draw = 0; draw < 40; ++draw) {
    const double next = loss->forward(batch).get("next_state_value").item<double>();
    EXPECT_GE(next, c.k - 0.1 - 1e-6);
    EXPECT_LE(next, c.k + 0.1 + 1e-6);
    low += std::abs(next - (c.k - 0.1)) < 1e-6;
    high += std::abs(next - (c.k + 0.1)) < 1e-6;
  }
  EXPECT_GT(low, 5);
  EXPECT_GT(high, 5);
}

TEST(TD3LossTest, ActorLossUsesTheFirstCriticOnlyAndTrainsOnlyTheActor) {
  torch::manual_seed(4);
  auto actor = make_deterministic_actor(3, 2, {8});
  auto q1 = make_critic(3, 2, {8});
  auto q2 = make_critic(3, 2, {8});
  auto loss = std::make_shared<TD3Loss>(actor, std::vector<modules::ValueOperator>{q1, q2},
                                        TD3LossOptions().action_spec(bounded(-1, 1, 2)));
  auto out = loss->forward(random_batch(6, 3, 2));
  out.get("loss_actor").backward();
  EXPECT_TRUE(all_have_grad(*actor));
  EXPECT_TRUE(has_no_gradient(*q1));
  EXPECT_TRUE(has_no_gradient(*q2));
  clear_grads(*actor);
  out = loss->forward(random_batch(6, 3, 2));
  out.get("loss_qvalue").backward();
  EXPECT_TRUE(all_have_grad(*q1));
  EXPECT_TRUE(all_have_grad(*q2));
  EXPECT_TRUE(has_no_gradient(*actor));
  for (const auto& name : {"actor_network", "qvalue_network_0", "qvalue_network_1"}) {
    EXPECT_TRUE(untouched_by_autograd(loss->target_params(name))) << name;
  }
}

TEST(TD3LossTest, OptimisationDecreasesTheQValueLoss) {
  torch::manual_seed(5);
  auto q1 = make_critic(3, 2, {16});
  auto q2 = make_critic(3, 2, {16});
  auto loss = std::make_shared<TD3Loss>(make_deterministic_actor(3, 2, {16}),
                                        std::vector<modules::ValueOperator>{q1, q2},
                                        TD3LossOptions().action_spec(bounded(-1, 1, 2)));
  const auto batch = random_batch(32, 3, 2);
  const auto params = parameters_of(*q1, *q2);
  torch::optim::Adam optimizer(params, torch::optim::AdamOptions(1e-2));
  double first = -1, last = -1;
  SoftUpdate updater(loss, 0.05);
  for (int step = 0; step < 150; ++step) {
    optimizer.zero_grad();
    auto value = loss->forward(batch).get("loss_qvalue");
    value.backward();
    optimizer.step();
    updater.step();
    if (first < 0) first = value.item<double>();
    last = value.item<double>();
  }
  EXPECT_LT(last, 0.3 * first);
}

TEST(TD3LossTest, ConstructorRejectsMissingOrUnboundedSpecsAndSharedCritics) {
  auto actor = make_deterministic_actor(3, 2);
  auto q = make_critic(3, 2);
  const std::vector<modules::ValueOperator> twins{q, make_critic(3, 2)};
  EXPECT_THAT([&] { TD3Loss(actor, twins); },
              ThrowsMessage<tensordict::ValueError>(HasSubstr(
                  "TD3Loss: no action spec; the target action is clamped to its bounds")));
  auto unbounded = std::make_shared<specs::Unbounded>(std::vector<int64_t>{2});
  EXPECT_THAT([&] { TD3Loss(actor, twins, TD3LossOptions().action_spec(unbounded)); },
              ThrowsMessage<tensordict::ValueError>(HasSubstr("TD3 needs a Bounded one")));
  EXPECT_THAT(
      [&] {
        TD3Loss(actor, std::vector<modules::ValueOperator>{q, q},
                TD3LossOptions().action_spec(bounded(-1, 1, 2)));
      },
      ThrowsMessage<tensordict::ValueError>(
          HasSubstr("Q-value networks 0 and 1 are the same module")));
  EXPECT_THAT(
      [&] {
        TD3Loss(actor, twins, TD3LossOptions().action_spec(bounded(-1, 1, 2)).noise_clip(-1));
      },
      ThrowsMessage<tensordict::ValueError>(HasSubstr("both must be >= 0")));
}

TEST(TD3LossTest, RewardWithoutTrailingDimIsAShapeError) {
  DDPGHandCase c;
  auto loss = hand_td3(c, {{1, 1, 0}, {1, 1, 0}}, TD3LossOptions().action_spec(bounded(-1, 1)));
  auto batch = c.batch();
  batch.set({"next", "reward"}, torch::zeros({2}));
  EXPECT_THAT([&] { loss->forward(batch); },
              ThrowsMessage<tensordict::ShapeError>(
                  HasSubstr("TD3Loss: TD target: reward has shape [2] but Q(s, a) has shape "
                            "[2, 1]")));
  EXPECT_FALSE(batch.contains("td_error"));
}

TEST(TD3LossTest, PrintsItsOptions) {
  DDPGHandCase c;
  std::ostringstream os;
  hand_td3(c, {{1, 1, 0}, {1, 1, 0}}, TD3LossOptions().action_spec(bounded(-1, 1)))
      ->pretty_print(os);
  EXPECT_THAT(os.str(), HasSubstr("TD3Loss(num_qvalue_nets=2, policy_noise=0.2, noise_clip=0.5, "
                                  "loss_function=smooth_l1, delay_actor=true, "
                                  "delay_qvalue=true, value_estimator=TD0Estimator("));
}

// ---- ActorQValueLoss, extended as a user would ---------------------------------------------

// A user's loss of the actor + critics family: the actor term -mean_i Q_i(s, mu(s)).
class MeanQLoss : public ActorQValueLoss<tdnn::TensorDictModuleBase> {
 public:
  MeanQLoss(Actor actor, QNetworks critics)
      : ActorQValueLoss("MeanQLoss",
                        {{"observation", NestedKey("observation")},
                         {"action", NestedKey("action")},
                         {"state_action_value", NestedKey("state_action_value")}},
                        {"observation"}, std::move(actor), std::move(critics)) {
    set_out_keys({"loss_actor"});
    convert_to_functional("actor_network", actor_network_, /*create_target=*/false);
    convert_qvalue_networks(qvalue_networks_, /*create_target=*/true);
  }

 protected:
  TensorDict forward_impl(const TensorDict& batch) override {
    TensorDict td({{"observation", get(batch, "observation")}}, batch.batch_size());
    actor_network_->forward(td);
    torch::Tensor total = torch::zeros({});
    for (const auto& critic : qvalue_networks_) {
      critic->forward(td);
      total = total + td.get(key("state_action_value")).mean();
    }
    return TensorDict({{"loss_actor", -total / num_qvalue_nets()}}, {});
  }
};

TEST(ActorQValueLossTest, AUserLossHoldsRegistersAndRunsItsActorAndCritics) {
  auto actor = make_deterministic_actor(3, 2);
  // Holders, as a user passes them: the actor and a braced list of critics.
  MeanQLoss loss(actor, {make_critic(3, 2), make_critic(3, 2), make_critic(3, 2)});
  EXPECT_EQ(loss.num_qvalue_nets(), 3);
  EXPECT_FALSE(loss.has_target("actor_network"));
  EXPECT_TRUE(loss.has_target("qvalue_network_2"));
  const TensorDict out = loss.forward(TensorDict({{"observation", torch::randn({5, 3})}}, {5}));
  const auto term = out.get("loss_actor");
  EXPECT_EQ(term.dim(), 0);
  term.backward();
  EXPECT_TRUE(actor->parameters().front().grad().defined());
}

TEST(ActorQValueLossTest, ABadNetworkListThrowsNamingTheUserLoss) {
  auto actor = make_deterministic_actor(3, 2);
  auto critic = make_critic(3, 2);
  const auto build = [&](LossModule::QNetworks critics) {
    MeanQLoss loss(actor, std::move(critics));
  };
  EXPECT_THAT([&] { build({}); }, ThrowsMessage<tensordict::ValueError>(
                                      HasSubstr("MeanQLoss: no Q-value network given")));
  EXPECT_THAT(
      [&] {
        build({critic.ptr(), critic.ptr()});
      },
      ThrowsMessage<tensordict::ValueError>(
          HasSubstr("MeanQLoss: Q-value networks 0 and 1 are the same module")));
  EXPECT_THAT(
      [&] {
        build({critic.ptr(), nullptr});
      },
      ThrowsMessage<tensordict::ValueError>(HasSubstr("MeanQLoss: Q-value network 1 is null")));
  // An empty holder is a missing network too, reported by the loss rather than by LibTorch.
  EXPECT_THAT(
      [&] {
        build({critic, modules::ValueOperator(nullptr)});
      },
      ThrowsMessage<tensordict::ValueError>(HasSubstr("MeanQLoss: Q-value network 1 is null")));
}

}  // namespace
}  // namespace tdrl::losses
