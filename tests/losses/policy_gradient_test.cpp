// A2CLoss, ReinforceLoss and the PolicyGradientLoss behaviours they share with PPO.

#include <tdrl/losses/a2c.h>
#include <tdrl/losses/ppo.h>
#include <tdrl/losses/reinforce.h>

#include <cmath>
#include <memory>
#include <sstream>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <tdrl/losses/loss_module.h>
#include <tensordict/errors.h>

#include "losses/policy_gradient_fixtures.h"
#include "support/test_names.h"

namespace tdrl::losses {
namespace {

using namespace tdrl::testing::names;
using namespace tdrl::losses::testing;

// observation [[1], [2]], action [[0], [2]], advantage [[1], [-2]], value_target [[0.5], [1]].
TensorDict hand_batch() {
  return TensorDict({{"observation", torch::tensor({{1.0f}, {2.0f}})},
                     {"action", torch::tensor({{0.0f}, {2.0f}})},
                     {"advantage", torch::tensor({{1.0f}, {-2.0f}})},
                     {"value_target", torch::tensor({{0.5f}, {1.0f}})}},
                    {2});
}

// ---- A2CLoss ----------------------------------------------------------------------------

TEST(A2CLossTest, HandWorkedCaseGivesTheKnownTerms) {
  // Actor loc = 0.5 * observation, scale 2; critic 0.3 * observation + 0.1.
  auto loss = std::make_shared<A2CLoss>(
      linear_gaussian_actor(0.5, nullptr, 2.0), linear_critic(0.3, 0.1),
      A2CLossOptions().loss_critic_type("l1").critic_coef(0.5).entropy_coef(0.1));
  const auto out = loss->forward(hand_batch());
  const double lp1 = normal_log_density(0.0, 0.5, 2.0), lp2 = normal_log_density(2.0, 1.0, 2.0);
  EXPECT_NEAR(scalar(out, "loss_objective"), -(lp1 * 1.0 + lp2 * -2.0) / 2, 1e-5);
  const double entropy = 0.5 * std::log(2 * M_PI * M_E * 4.0);
  EXPECT_NEAR(scalar(out, "entropy"), entropy, 1e-5);
  EXPECT_NEAR(scalar(out, "loss_entropy"), -0.1 * entropy, 1e-6);
  EXPECT_NEAR(scalar(out, "loss_critic"), 0.5 * (0.1 + 0.3) / 2, 1e-6);
}

TEST(A2CLossTest, NormalizeAdvantageStandardisesTheBatchsAdvantage) {
  auto loss =
      std::make_shared<A2CLoss>(linear_gaussian_actor(0.5, nullptr, 2.0), linear_critic(0.3, 0.1),
                                A2CLossOptions().normalize_advantage(true));
  const auto out = loss->forward(hand_batch());
  // Advantages 1 and -2: mean -0.5, sample std 1.5 * sqrt(2), so +-1 / sqrt(2).
  const double lp1 = normal_log_density(0.0, 0.5, 2.0), lp2 = normal_log_density(2.0, 1.0, 2.0);
  const double a = 1.0 / std::sqrt(2.0);
  EXPECT_NEAR(scalar(out, "loss_objective"), -(lp1 * a - lp2 * a) / 2, 1e-5);
}

TEST(A2CLossTest, AdamStepsOnAFixedBatchDecreaseTheLoss) {
  torch::manual_seed(11);
  MlpActorCritic<A2CLoss> nets(16);
  const auto drop = adam_on_fixed_batch(*nets.loss, synthetic_rollout(8, 16, 3, *nets.actor),
                                        {"loss_objective", "loss_critic", "loss_entropy"});
  EXPECT_LT(drop.final, drop.initial - 0.1);
}

TEST(A2CLossTest, AdvantageOfShapeBIsAShapeError) {
  auto loss = hand_loss<A2CLoss>();
  auto batch = hand_batch();
  batch.set("advantage", torch::tensor({1.0f, -2.0f}));
  EXPECT_THAT([&] { loss->forward(batch); },
              ThrowsMessage<tensordict::ShapeError>(
                  HasSubstr("A2CLoss: objective: 'advantage' has shape [2] but the "
                            "log-prob of the action")));
}

TEST(A2CLossTest, MissingActionNamesTheKeyAndItsSetKeysName) {
  auto loss = hand_loss<A2CLoss>();
  auto batch = hand_batch();
  batch.del_("action");
  EXPECT_THAT([&] { loss->forward(batch); },
              ThrowsMessage<tensordict::KeyError>(
                  HasSubstr("A2CLoss: the batch has no 'action' (the 'action' key)")));
}

TEST(A2CLossTest, NullCriticIsRejected) {
  EXPECT_THAT([&] { A2CLoss loss(linear_gaussian_actor(0.5), nullptr); },
              ThrowsMessage<tensordict::ValueError>(HasSubstr("A2CLoss: the critic is null")));
}

TEST(A2CLossTest, AnEmptyHolderIsRejectedAsANullNetwork) {
  const tdnn::ProbabilisticTensorDictSequential no_actor{nullptr};
  EXPECT_THAT([&] { A2CLoss loss(no_actor, linear_critic(0.3, 0.1)); },
              ThrowsMessage<tensordict::ValueError>(HasSubstr("A2CLoss: the actor is null")));
  const tdnn::TensorDictModule no_critic{nullptr};
  EXPECT_THAT([&] { A2CLoss loss(linear_gaussian_actor(0.5), no_critic); },
              ThrowsMessage<tensordict::ValueError>(HasSubstr("A2CLoss: the critic is null")));
}

TEST(A2CLossTest, PrintsItsOptions) {
  A2CLoss loss(linear_gaussian_actor(0.5), linear_critic(0.3, 0.1));
  std::ostringstream os;
  loss.pretty_print(os);
  EXPECT_EQ(os.str(),
            "A2CLoss(entropy_bonus=true, samples_mc_entropy=1, entropy_coef=0.01, "
            "critic_coef=1, loss_critic_type=smooth_l1, normalize_advantage=false, "
            "separate_losses=false, clip_value=None)");
}

// ---- ReinforceLoss ----------------------------------------------------------------------

TEST(ReinforceLossTest, HandWorkedCaseGivesTheKnownTerms) {
  auto loss = hand_loss<ReinforceLoss>(ReinforceLossOptions().loss_critic_type("l2"));
  const auto out = loss->forward(hand_batch());
  const double lp1 = normal_log_density(0.0, 0.5), lp2 = normal_log_density(2.0, 1.0);
  EXPECT_NEAR(scalar(out, "loss_actor"), -(lp1 * 1.0 + lp2 * -2.0) / 2, 1e-5);
  EXPECT_NEAR(scalar(out, "loss_value"), (0.01 + 0.09) / 2, 1e-6);
}

TEST(ReinforceLossTest, WithoutCriticNeedsTheAdvantageAndWritesNoValueLoss) {
  auto loss = std::make_shared<ReinforceLoss>(linear_gaussian_actor(0.5), nullptr);
  const auto out = loss->forward(hand_batch());
  EXPECT_FALSE(out.contains("loss_value"));
  EXPECT_FALSE(loss->value_estimator());
  auto batch = hand_batch();
  batch.del_("advantage");
  EXPECT_THAT([&] { loss->forward(batch); },
              ThrowsMessage<tensordict::KeyError>(
                  HasSubstr("the batch has no 'advantage' (the 'advantage' key) and the "
                            "loss has no critic to estimate it")));
  EXPECT_THROW(loss->make_value_estimator(), tensordict::ValueError);
}

TEST(ReinforceLossTest, DelayValueEstimatesNextValuesWithTheTargetCritic) {
  torch::nn::Linear critic_linear{nullptr};
  auto critic = linear_critic(1.0, 0.0, &critic_linear);
  auto loss = std::make_shared<ReinforceLoss>(linear_gaussian_actor(0.5), critic,
                                              ReinforceLossOptions().delay_value(true));
  loss->make_value_estimator(ValueEstimatorType::kTD0, ValueEstimatorOptions().gamma(0.5));
  {
    torch::NoGradGuard no_grad;
    critic_linear->weight.fill_(3.0);  // the target keeps weight 1
  }
  // One step: s = 1, s' = 2, r = 1, not terminated; action 0 under loc 0.5.
  TensorDict next({{"observation", torch::tensor({{{2.0f}}})},
                   {"reward", torch::tensor({{{1.0f}}})},
                   {"done", torch::tensor({{{false}}})},
                   {"terminated", torch::tensor({{{false}}})}},
                  {1, 1});
  TensorDict batch({{"observation", torch::tensor({{{1.0f}}})},
                    {"action", torch::tensor({{{0.0f}}})},
                    {"next", next}},
                   {1, 1});
  const auto out = loss->forward(batch);
  // advantage = r + gamma * V_target(s') - V(s) = 1 + 0.5 * 2 - 3.
  const double advantage = 1.0 + 0.5 * 2.0 - 3.0;
  EXPECT_NEAR(scalar(out, "loss_actor"), -normal_log_density(0.0, 0.5) * advantage, 1e-5);

  out.get("loss_value").backward();
  const auto& target = loss->target_params("critic_network");
  for (const auto& key : target.keys(true, true)) {
    EXPECT_FALSE(target.get(key).requires_grad());
    EXPECT_FALSE(target.get(key).grad().defined());
  }
  EXPECT_TRUE(critic_linear->weight.grad().defined());
  SoftUpdate updater(loss, 0.5);
  updater.step();
  EXPECT_NEAR(target.get({"module", "weight"}).item<double>(), 2.0, 1e-6);
}

TEST(ReinforceLossTest, DelayValueWithoutCriticIsRejected) {
  EXPECT_THAT(
      [&] {
        ReinforceLoss loss(linear_gaussian_actor(0.5), nullptr,
                           ReinforceLossOptions().delay_value(true));
      },
      ThrowsMessage<tensordict::ValueError>(
          HasSubstr("ReinforceLoss: delay_value needs a critic")));
}

TEST(ReinforceLossTest, ActorLossReachesOnlyTheActor) {
  torch::manual_seed(12);
  MlpActorCritic<ReinforceLoss> nets(8);
  auto batch = synthetic_rollout(3, 5, 3, *nets.actor);
  EXPECT_TRUE(terms_reach_only(*nets.loss, batch, {"loss_actor"}, *nets.actor, *nets.critic));
  EXPECT_TRUE(terms_reach_only(*nets.loss, batch, {"loss_value"}, *nets.critic, *nets.actor));
}

TEST(ReinforceLossTest, AdamStepsOnAFixedBatchDecreaseTheLoss) {
  torch::manual_seed(13);
  MlpActorCritic<ReinforceLoss> nets(16);
  const auto drop = adam_on_fixed_batch(*nets.loss, synthetic_rollout(8, 16, 3, *nets.actor),
                                        {"loss_actor", "loss_value"});
  EXPECT_LT(drop.final, drop.initial - 0.1);
}

TEST(ReinforceLossTest, PrintsItsOptions) {
  ReinforceLoss loss(linear_gaussian_actor(0.5), nullptr);
  std::ostringstream os;
  loss.pretty_print(os);
  EXPECT_EQ(os.str(),
            "ReinforceLoss(delay_value=false, loss_critic_type=smooth_l1, separate_losses=false, "
            "clip_value=None, critic=false)");
}

// ---- Shared behaviours ------------------------------------------------------------------

// An actor and a critic on one trunk: observation → hidden (Linear(1, 4)), then a loc head
// (scale 1) and a value head.
struct SharedTrunk {
  torch::nn::Linear trunk{1, 4};
  tdnn::ProbabilisticTensorDictSequential actor{nullptr};
  tdnn::TensorDictSequential critic{nullptr};

  SharedTrunk() {
    tdnn::TensorDictModule trunk_module(
        trunk, tdnn::TensorDictModuleOptions().in_keys({"observation"}).out_keys({"hidden"}));
    actor = tdnn::ProbabilisticTensorDictSequential(
        trunk_module,
        tdnn::TensorDictModule(
            torch::nn::Linear(4, 1),
            tdnn::TensorDictModuleOptions().in_keys({"hidden"}).out_keys({"loc"})),
        tdnn::TensorDictModule(
            [](torch::Tensor loc) { return torch::ones_like(loc); },
            tdnn::TensorDictModuleOptions().in_keys({"loc"}).out_keys({"scale"})),
        tdnn::ProbabilisticTensorDictModule(tdnn::DistributionClass::independent_normal(),
                                            tdnn::ProbabilisticTensorDictModuleOptions()
                                                .in_keys({"loc", "scale"})
                                                .out_keys({"action"})));
    critic = tdnn::TensorDictSequential(
        trunk_module,
        tdnn::TensorDictModule(
            torch::nn::Linear(4, 1),
            tdnn::TensorDictModuleOptions().in_keys({"hidden"}).out_keys({"state_value"})));
  }
};

// ---- Every actor-critic loss -------------------------------------------------------------

// The checks each loss with an objective, an entropy bonus and a critic term passes.
template <class Loss>
class ActorCriticLossTest : public ::testing::Test {};
using ActorCriticLosses = ::testing::Types<A2CLoss, ClipPPOLoss, KLPENPPOLoss>;
TYPED_TEST_SUITE(ActorCriticLossTest, ActorCriticLosses);

TYPED_TEST(ActorCriticLossTest, CriticLossReachesOnlyTheCriticAndObjectiveOnlyTheActor) {
  torch::manual_seed(10);
  MlpActorCritic<TypeParam> nets(8);
  auto batch = synthetic_rollout(3, 5, 3, *nets.actor);
  EXPECT_TRUE(terms_reach_only(*nets.loss, batch, {"loss_critic"}, *nets.critic, *nets.actor));
  EXPECT_TRUE(terms_reach_only(*nets.loss, batch, {"loss_objective", "loss_entropy"}, *nets.actor,
                               *nets.critic));
}

TEST(PolicyGradientLossTest, SeparateLossesKeepsTheCriticLossOutOfSharedParameters) {
  torch::manual_seed(14);
  for (bool separate : {false, true}) {
    SharedTrunk net;
    auto loss = std::make_shared<A2CLoss>(net.actor, net.critic,
                                          A2CLossOptions().separate_losses(separate));
    loss->forward(hand_batch()).get("loss_critic").backward();
    EXPECT_EQ(has_no_gradient(*net.trunk), separate) << "separate_losses " << separate;
    for (const auto& p : net.trunk->parameters()) EXPECT_TRUE(p.requires_grad());
    // The objective still trains the trunk.
    loss->zero_grad();
    loss->forward(hand_batch()).get("loss_objective").backward();
    EXPECT_TRUE(has_gradient(*net.trunk));
  }
}

TEST(PolicyGradientLossTest, NetworksAreRegisteredForFunctionalUse) {
  auto loss = hand_loss<ClipPPOLoss>();
  EXPECT_EQ(loss->networks(), (std::vector<std::string>{"actor_network", "critic_network"}));
  EXPECT_FALSE(loss->has_target("critic_network"));
  EXPECT_EQ(loss->parameters().size(), 3u);  // actor weight, critic weight and bias
  EXPECT_EQ(loss->in_keys(), (std::vector<NestedKey>{"action", "sample_log_prob"}));
  std::vector<std::string> names;
  for (const auto& entry : loss->keys()) names.push_back(entry.first);
  EXPECT_EQ(names,
            (std::vector<std::string>{"advantage", "value_target", "value", "sample_log_prob",
                                      "action", "reward", "done", "terminated"}));
}

TEST(PolicyGradientLossTest, EstimationNeedsATimeDim) {
  auto loss = hand_loss<A2CLoss>();
  TensorDict batch({{"observation", torch::ones({1})}, {"action", torch::zeros({1})}}, {});
  EXPECT_THAT([&] { loss->forward(batch); },
              ThrowsMessage<tensordict::ShapeError>(
                  HasSubstr("A2CLoss: the batch has no advantage and batch_size []")));
}

TEST(PolicyGradientLossTest, EstimationReadsRewardThroughItsSetKeysName) {
  torch::manual_seed(15);
  auto actor = mlp_tanh_actor(3, 2, {8});
  auto loss = std::make_shared<A2CLoss>(actor, mlp_critic(3, {8}));
  auto batch = synthetic_rollout(2, 4, 3, *actor);
  batch.get_tensordict("next").rename_key_("reward", "r");
  EXPECT_THAT([&] { loss->forward(batch); },
              ThrowsMessage<tensordict::KeyError>(
                  HasSubstr("the batch has no ('next', 'reward') (the 'reward' key)")));
  loss->set_keys({{"reward", NestedKey{"next", "r"}}});
  EXPECT_TRUE(loss->forward(batch).contains("loss_objective"));
}

TEST(PolicyGradientLossTest, CriticWritingAnotherKeyThanTheValueKeyIsNamed) {
  auto loss = hand_loss<A2CLoss>();
  loss->set_keys({{"value", NestedKey("v")}});
  EXPECT_THAT([&] { loss->forward(hand_batch()); },
              ThrowsMessage<tensordict::KeyError>(
                  HasSubstr("the critic writes ['state_value'] but the loss reads the "
                            "value from 'v'")));
}

// N(loc, scale) without a closed-form entropy, with or without rsample: the generic paths
// of PolicyGradientLoss::entropy.
class NormalWithoutEntropy : public tdnn::Distribution {
 public:
  NormalWithoutEntropy(torch::Tensor loc, torch::Tensor scale, bool rsample)
      : Distribution("NormalWithoutEntropy"), inner_(loc, scale), rsample_(rsample) {
    set_shapes(inner_.batch_shape().vec(), {});
  }
  bool has_rsample() const override { return rsample_; }
  bool has_entropy() const override { return false; }

 protected:
  torch::Tensor sample_impl(c10::IntArrayRef shape) const override { return inner_.rsample(shape); }
  torch::Tensor log_prob_impl(const torch::Tensor& value) const override {
    return inner_.log_prob(value);
  }
  std::optional<torch::Tensor> entropy_impl() const override { return std::nullopt; }
  std::optional<torch::Tensor> mean_impl() const override { return inner_.loc(); }
  std::optional<torch::Tensor> mode_impl() const override { return inner_.loc(); }
  torch::Tensor deterministic_sample_impl() const override { return inner_.loc(); }
  std::vector<std::pair<std::string, torch::Tensor>> printed_params() const override { return {}; }

 private:
  tdnn::Normal inner_;
  bool rsample_;
};

struct EntropyOfA2C : A2CLoss {
  using A2CLoss::A2CLoss;
  using PolicyGradientLoss::entropy;
  using PolicyGradientLoss::write_entropy;
};

TEST(PolicyGradientLossTest, EntropyDiagnosticWithoutClosedFormUsesTheBatchActionsNotSamples) {
  EntropyOfA2C loss(linear_gaussian_actor(0.5), linear_critic(0.3, 0.1));
  NormalWithoutEntropy dist(torch::zeros({3}), torch::full({3}, 2.0), /*rsample=*/true);
  const auto actions = torch::tensor({-1.0f, 0.5f, 2.0f});
  TensorDict out = TensorDict::empty({});
  torch::manual_seed(3);
  const auto expected_next = torch::randn({1}).item<double>();
  torch::manual_seed(3);
  loss.write_entropy(out, dist, dist.log_prob(actions), /*bonus=*/false, /*coef=*/0.01,
                     /*samples=*/1);
  // -mean log N(a; 0, 2) over the batch's three actions, and no draw from the generator.
  const double log_norm = 0.5 * std::log(2 * M_PI * 4.0);
  const double expected = log_norm + (1.0 + 0.25 + 4.0) / (2 * 4.0) / 3.0;
  EXPECT_NEAR(out.get("entropy").item<double>(), expected, 1e-5);
  EXPECT_FALSE(out.contains("loss_entropy"));
  EXPECT_DOUBLE_EQ(torch::randn({1}).item<double>(), expected_next);
}

TEST(PolicyGradientLossTest, EntropyWithoutClosedFormIsTheMonteCarloEstimateOverRsamples) {
  torch::manual_seed(16);
  EntropyOfA2C loss(linear_gaussian_actor(0.5), linear_critic(0.3, 0.1));
  const auto loc = torch::zeros({3}, torch::requires_grad());
  NormalWithoutEntropy dist(loc, torch::full({3}, 2.0), /*rsample=*/true);
  const auto entropy = loss.entropy(dist, 20000);
  EXPECT_EQ(entropy.sizes(), (std::vector<int64_t>{3, 1}));
  const double expected = 0.5 * std::log(2 * M_PI * M_E * 4.0);
  EXPECT_NEAR(entropy.mean().item<double>(), expected, 0.02);
  entropy.sum().backward();  // differentiable through the rsamples
  EXPECT_TRUE(loc.grad().defined());
}

TEST(PolicyGradientLossTest, EntropyWithoutClosedFormOrRsampleIsATypeError) {
  EntropyOfA2C loss(linear_gaussian_actor(0.5), linear_critic(0.3, 0.1));
  NormalWithoutEntropy dist(torch::zeros({3}), torch::ones({3}), /*rsample=*/false);
  EXPECT_THAT([&] { loss.entropy(dist, 1); },
              ThrowsMessage<tensordict::TypeError>(
                  HasSubstr("A2CLoss: the actor's NormalWithoutEntropy distribution has "
                            "no closed-form entropy and no rsample to estimate it with; "
                            "set entropy_bonus(false)")));
}

}  // namespace
}  // namespace tdrl::losses
