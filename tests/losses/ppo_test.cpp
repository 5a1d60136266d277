#include <tdrl/losses/ppo.h>

#include <cmath>
#include <memory>
#include <sstream>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <tdrl/losses/value_estimators.h>
#include <tdrl/modules/recurrent.h>
#include <tensordict/errors.h>
#include <tensordict/nn/tensordict_sequential.h>

#include "losses/policy_gradient_fixtures.h"
#include "support/test_names.h"

namespace tdrl::losses {
namespace {

using namespace tdrl::testing::names;
using ::testing::Contains;
using namespace tdrl::losses::testing;

// The hand-worked batch: observation [[1], [2]], actions [[0], [2]], advantage [[1], [-2]],
// value_target [[0.5], [1.0]], and sample_log_prob chosen so that the first ratio is e^0.5
// (clipped at 1.2) and the second e^-0.1 (inside the clip range), for an actor
// loc = 0.5 * observation, scale 1.
struct PPOHandCase {
  double lp1 = normal_log_density(0.0, 0.5);
  double lp2 = normal_log_density(2.0, 1.0);
  double prev1 = lp1 - 0.5;
  double prev2 = lp2 + 0.1;

  TensorDict batch() const {
    return TensorDict({{"observation", torch::tensor({{1.0f}, {2.0f}})},
                       {"action", torch::tensor({{0.0f}, {2.0f}})},
                       {"sample_log_prob", torch::tensor({float(prev1), float(prev2)})},
                       {"advantage", torch::tensor({{1.0f}, {-2.0f}})},
                       {"value_target", torch::tensor({{0.5f}, {1.0f}})}},
                      {2});
  }
};

TEST(ClipPPOLossTest, HandWorkedCaseGivesTheKnownTerms) {
  PPOHandCase c;
  auto loss = hand_loss<ClipPPOLoss>();
  const auto out = loss->forward(c.batch());

  const double w1 = std::exp(0.5), w2 = std::exp(-0.1);
  const double gain1 = std::min(w1 * 1.0, 1.2 * 1.0);
  const double gain2 = std::min(w2 * -2.0, std::min(std::max(w2, 0.8), 1.2) * -2.0);
  EXPECT_NEAR(scalar(out, "loss_objective"), -(gain1 + gain2) / 2, 1e-5);
  EXPECT_NEAR(scalar(out, "clip_fraction"), 0.5, 1e-6);
  const double entropy = 0.5 * std::log(2 * M_PI * M_E);  // N(., 1)
  EXPECT_NEAR(scalar(out, "entropy"), entropy, 1e-5);
  EXPECT_NEAR(scalar(out, "loss_entropy"), -0.01 * entropy, 1e-6);
  // Values 0.4 and 0.7 against targets 0.5 and 1.0: smooth L1 of 0.1 and 0.3.
  EXPECT_NEAR(scalar(out, "loss_critic"), (0.5 * 0.01 + 0.5 * 0.09) / 2, 1e-6);
  EXPECT_NEAR(scalar(out, "kl_approx"), (-0.5 + 0.1) / 2, 1e-5);
  EXPECT_NEAR(scalar(out, "ESS"), (w1 + w2) * (w1 + w2) / (w1 * w1 + w2 * w2) / 2, 1e-5);
  // Residuals 0.1 and 0.3 (variance 0.01) against targets 0.5 and 1.0 (variance 0.0625).
  EXPECT_NEAR(scalar(out, "explained_variance"), 1 - 0.01 / 0.0625, 1e-5);
  EXPECT_EQ(out.batch_size(), (std::vector<int64_t>{}));
}

TEST(ClipPPOLossTest, CriticTypeAndCoefficientScaleTheCriticTerm) {
  PPOHandCase c;
  auto loss = hand_loss<ClipPPOLoss>(
      ClipPPOLossOptions().loss_critic_type("l2").critic_coef(0.5).entropy_bonus(false));
  const auto out = loss->forward(c.batch());
  EXPECT_NEAR(scalar(out, "loss_critic"), 0.5 * (0.01 + 0.09) / 2, 1e-6);
  EXPECT_FALSE(out.contains("loss_entropy"));
}

TEST(ClipPPOLossTest, WithoutAnEntropyBonusTheEntropyIsStillReported) {
  PPOHandCase c;
  auto loss = std::make_shared<ClipPPOLoss>(linear_gaussian_actor(0.5, nullptr, /*scale=*/0.5),
                                            linear_critic(0.3, 0.1),
                                            ClipPPOLossOptions().entropy_bonus(false));
  EXPECT_THAT(loss->out_keys(), Contains("entropy"));
  EXPECT_THAT(loss->out_keys(), Not(Contains("loss_entropy")));
  const auto out = loss->forward(c.batch());
  // A Gaussian of scale 0.5 has the closed-form entropy 0.5 * log(2 pi e) + log(0.5).
  const double expected = 0.5 * std::log(2 * M_PI * M_E) + std::log(0.5);
  EXPECT_NEAR(scalar(out, "entropy"), expected, 1e-5);
  EXPECT_FALSE(out.get("entropy").requires_grad());
  EXPECT_FALSE(out.contains("loss_entropy"));
}

TEST(ClipPPOLossTest, ClipValueTakesThePessimisticCriticLoss) {
  PPOHandCase c;
  auto loss = hand_loss<ClipPPOLoss>(ClipPPOLossOptions().loss_critic_type("l2").clip_value(0.1));
  auto batch = c.batch();
  // Old values 0.2 and 0.65: the new values 0.4 and 0.7 move by 0.2 (clipped to 0.3) and 0.05.
  batch.set("state_value", torch::tensor({{0.2f}, {0.65f}}));
  const auto out = loss->forward(batch);
  const double unclipped1 = 0.01, clipped1 = (0.5 - 0.3) * (0.5 - 0.3);
  const double unclipped2 = 0.09;
  EXPECT_NEAR(scalar(out, "loss_critic"), (std::max(unclipped1, clipped1) + unclipped2) / 2, 1e-6);
  EXPECT_NEAR(scalar(out, "value_clip_fraction"), 0.5, 1e-6);
  // The caller's batch keeps its old values.
  EXPECT_TRUE(torch::allclose(batch.get("state_value"), torch::tensor({{0.2f}, {0.65f}})));
}

TEST(ClipPPOLossTest, ClipValueWithoutTheBatchValueThrowsKeyError) {
  PPOHandCase c;
  auto loss = hand_loss<ClipPPOLoss>(ClipPPOLossOptions().clip_value(0.1));
  EXPECT_THAT([&] { loss->forward(c.batch()); },
              ThrowsMessage<tensordict::KeyError>(AllOf(
                  HasSubstr("clip_value is set but the batch has no"), HasSubstr("state_value"))));
}

TEST(ClipPPOLossTest, NormalizeAdvantageStandardisesIt) {
  PPOHandCase c;
  auto loss = hand_loss<ClipPPOLoss>(ClipPPOLossOptions().normalize_advantage(true));
  const auto out = loss->forward(c.batch());
  // Advantages 1 and -2: mean -0.5, std (unbiased) 3 / sqrt(2).
  const double s = 3.0 / std::sqrt(2.0);
  const double a1 = 1.5 / s, a2 = -1.5 / s;
  const double w1 = std::exp(0.5), w2 = std::exp(-0.1);
  const double gain1 = std::min(w1 * a1, 1.2 * a1);
  const double gain2 = std::min(w2 * a2, w2 * a2);
  EXPECT_NEAR(scalar(out, "loss_objective"), -(gain1 + gain2) / 2, 1e-5);
}

TEST(ClipPPOLossTest, TanhNormalEntropyIsTheMonteCarloEstimate) {
  torch::manual_seed(1);
  // TanhNormal(loc 0, scale 1) on [-1, 1]: H = H(N(0, 1)) + E[log(1 - tanh(u)^2)], the
  // expectation by quadrature.
  double expectation = 0.0;
  const double du = 1e-3;
  for (double u = -10.0; u <= 10.0; u += du) {
    const double t = std::tanh(u);
    expectation += std::exp(normal_log_density(u, 0.0)) * std::log(1 - t * t) * du;
  }
  const double expected = 0.5 * std::log(2 * M_PI * M_E) + expectation;
  auto actor = linear_gaussian_actor(0.0, nullptr, 1.0, tdnn::DistributionClass::tanh_normal());
  auto loss = std::make_shared<ClipPPOLoss>(actor, linear_critic(0.0, 0.0),
                                            ClipPPOLossOptions().samples_mc_entropy(20000));
  TensorDict batch({{"observation", torch::zeros({4, 1})},
                    {"action", torch::zeros({4, 1})},
                    {"sample_log_prob", torch::zeros({4})},
                    {"advantage", torch::zeros({4, 1})},
                    {"value_target", torch::zeros({4, 1})}},
                   {4});
  EXPECT_NEAR(scalar(loss->forward(batch), "entropy"), expected, 0.02);
}

TEST(ClipPPOLossTest, AdamStepsOnAFixedBatchDecreaseTheLoss) {
  torch::manual_seed(2);
  MlpActorCritic<ClipPPOLoss> nets(16);
  auto batch = synthetic_rollout(8, 16, 3, *nets.actor);
  const auto drop =
      adam_on_fixed_batch(*nets.loss, batch, {"loss_objective", "loss_critic", "loss_entropy"});
  EXPECT_LT(drop.final, drop.initial - 0.05);
  // The policy moved past the clip range.
  EXPECT_GT(scalar(nets.loss->forward(batch), "clip_fraction"), 0.0);
}

TEST(ClipPPOLossTest, MissingAdvantageIsEstimatedWithGAEWithoutWritingTheBatch) {
  torch::manual_seed(3);
  MlpActorCritic<ClipPPOLoss> nets(8);
  auto batch = synthetic_rollout(2, 6, 3, *nets.actor);
  const auto out = nets.loss->forward(batch);
  EXPECT_FALSE(batch.contains("advantage"));
  EXPECT_FALSE(batch.contains("value_target"));
  EXPECT_FALSE(batch.contains({"next", "state_value"}));

  // The same terms with the advantage computed beforehand by a GAE module.
  GAE gae(nets.critic, ValueEstimatorOptions().gamma(0.99).lmbda(0.95));
  auto precomputed = batch.clone(false);
  gae(precomputed);
  const auto expected = nets.loss->forward(precomputed);
  for (const char* key : {"loss_objective", "loss_critic", "kl_approx"}) {
    EXPECT_NEAR(scalar(out, key), scalar(expected, key), 1e-6) << key;
  }
}

TEST(ClipPPOLossTest, MakeValueEstimatorSwitchesToTD0) {
  torch::Tensor reward = torch::tensor({{{1.0f}}, {{2.0f}}});
  TensorDict next({{"observation", torch::tensor({{{1.0f}}, {{-1.0f}}})},
                   {"reward", reward},
                   {"done", torch::tensor({{{false}}, {{true}}})},
                   {"terminated", torch::tensor({{{false}}, {{true}}})}},
                  {2, 1});
  TensorDict batch({{"observation", torch::tensor({{{0.0f}}, {{0.0f}}})},
                    {"action", torch::zeros({2, 1, 1})},
                    {"sample_log_prob", torch::full({2, 1}, float(normal_log_density(0, 0)))},
                    {"next", next}},
                   {2, 1});
  auto loss = std::make_shared<ClipPPOLoss>(linear_gaussian_actor(0.5), linear_critic(2.0, 0.5),
                                            ClipPPOLossOptions().loss_critic_type("l2"));
  loss->make_value_estimator(ValueEstimatorType::kTD0, ValueEstimatorOptions().gamma(0.5));
  const auto out = loss->forward(batch);
  // V(s) = 0.5 for both; V(s') = 2.5 (not terminated) and bootstrapping cut (terminated).
  const double target1 = 1.0 + 0.5 * 2.5, target2 = 2.0;
  const double expected =
      ((target1 - 0.5) * (target1 - 0.5) + (target2 - 0.5) * (target2 - 0.5)) / 2;
  EXPECT_NEAR(scalar(out, "loss_critic"), expected, 1e-5);
  EXPECT_EQ(loss->value_estimator()->name(), "TD0Estimator");
}

TEST(ClipPPOLossTest, SetKeysRenamesWhatItReadsAndForwardsToTheEstimator) {
  PPOHandCase c;
  auto loss = hand_loss<ClipPPOLoss>();
  loss->set_keys({{"advantage", NestedKey("adv")},
                  {"sample_log_prob", NestedKey{"collector", "log_prob"}},
                  {"reward", NestedKey{"next", "r"}}});
  auto batch = c.batch();
  batch.rename_key_("advantage", "adv");
  batch.set({"collector", "log_prob"}, batch.pop("sample_log_prob"));
  const auto renamed = loss->forward(batch);
  auto reference = hand_loss<ClipPPOLoss>();
  EXPECT_NEAR(scalar(renamed, "loss_objective"),
              scalar(reference->forward(c.batch()), "loss_objective"), 1e-6);
  EXPECT_EQ(loss->value_estimator()->key("reward"), (NestedKey{"next", "r"}));
  EXPECT_EQ(loss->value_estimator()->key("advantage"), NestedKey("adv"));
}

TEST(ClipPPOLossTest, MissingSampleLogProbNamesTheKeyAndItsSetKeysName) {
  PPOHandCase c;
  auto loss = hand_loss<ClipPPOLoss>();
  auto batch = c.batch();
  batch.del_("sample_log_prob");
  EXPECT_THAT([&] { loss->forward(batch); },
              ThrowsMessage<tensordict::KeyError>(
                  AllOf(HasSubstr("ClipPPOLoss: the batch has no 'sample_log_prob'"),
                        HasSubstr("set_keys({{\"sample_log_prob\""))));
}

TEST(ClipPPOLossTest, AdvantageOfShapeBAgainstLogWeightB1IsAShapeError) {
  PPOHandCase c;
  auto loss = hand_loss<ClipPPOLoss>();
  auto batch = c.batch();
  batch.set("advantage", torch::tensor({1.0f, -2.0f}));
  EXPECT_THAT([&] { loss->forward(batch); },
              ThrowsMessage<tensordict::ShapeError>(
                  AllOf(HasSubstr("'advantage' has shape [2] but the log-weight"),
                        HasSubstr("has shape [2, 1]"))));
}

TEST(ClipPPOLossTest, ValueTargetOfShapeBAgainstValueB1IsAShapeError) {
  PPOHandCase c;
  auto loss = hand_loss<ClipPPOLoss>();
  auto batch = c.batch();
  batch.set("value_target", torch::tensor({0.5f, 1.0f}));
  EXPECT_THAT([&] { loss->forward(batch); }, ThrowsMessage<tensordict::ShapeError>(HasSubstr(
                                                 "critic loss: 'value_target' has shape [2] but "
                                                 "'state_value' has shape [2, 1]")));
}

TEST(ClipPPOLossTest, RewardOfShapeBTAgainstValueBT1IsAShapeErrorWhenEstimating) {
  torch::manual_seed(4);
  auto actor = mlp_tanh_actor(3, 2, {8});
  auto loss = std::make_shared<ClipPPOLoss>(actor, mlp_critic(3, {8}));
  auto batch = synthetic_rollout(2, 4, 3, *actor);
  batch.set({"next", "reward"}, torch::randn({2, 4}));
  EXPECT_THROW(loss->forward(batch), tensordict::ShapeError);
}

TEST(ClipPPOLossTest, SampleLogProbRequiringGradIsRejected) {
  PPOHandCase c;
  auto loss = hand_loss<ClipPPOLoss>();
  auto batch = c.batch();
  batch.set("sample_log_prob", batch.get("sample_log_prob").clone().requires_grad_());
  EXPECT_THAT([&] { loss->forward(batch); },
              ThrowsMessage<tensordict::ValueError>(
                  HasSubstr("requires grad; it must be the log-probability recorded at "
                            "collection time")));
}

TEST(ClipPPOLossTest, InvalidOptionsAreRejectedListingValidValues) {
  auto build = [](ClipPPOLossOptions o) { return hand_loss<ClipPPOLoss>(o); };
  EXPECT_THAT([&] { build(ClipPPOLossOptions().loss_critic_type("huber")); },
              ThrowsMessage<tensordict::ValueError>(
                  HasSubstr("ClipPPOLoss: loss_critic_type is 'huber'; valid: 'l1', "
                            "'l2', 'smooth_l1'")));
  EXPECT_THAT([&] { build(ClipPPOLossOptions().clip_epsilon(1.5)); },
              ThrowsMessage<tensordict::ValueError>(
                  HasSubstr("clip_epsilon is 1.5; it must be in (0, 1)")));
  EXPECT_THROW(build(ClipPPOLossOptions().samples_mc_entropy(0)), tensordict::ValueError);
  EXPECT_THROW(build(ClipPPOLossOptions().clip_value(0.0)), tensordict::ValueError);
  EXPECT_THROW(std::make_shared<ClipPPOLoss>(linear_gaussian_actor(0.5), nullptr),
               tensordict::ValueError);
}

TEST(ClipPPOLossTest, PrintsItsOptions) {
  auto loss = hand_loss<ClipPPOLoss>(ClipPPOLossOptions().clip_value(0.5));
  std::ostringstream os;
  loss->pretty_print(os);
  EXPECT_EQ(os.str(),
            "ClipPPOLoss(clip_epsilon=0.2, entropy_bonus=true, samples_mc_entropy=1, "
            "entropy_coef=0.01, critic_coef=1, loss_critic_type=smooth_l1, "
            "normalize_advantage=false, separate_losses=false, clip_value=0.5)");
}

TEST(PPOLossTest, ObjectiveIsTheUnclippedWeightedAdvantage) {
  PPOHandCase c;
  auto loss = hand_loss<PPOLoss>();
  const auto out = loss->forward(c.batch());
  const double w1 = std::exp(0.5), w2 = std::exp(-0.1);
  EXPECT_NEAR(scalar(out, "loss_objective"), -(w1 * 1.0 + w2 * -2.0) / 2, 1e-5);
  EXPECT_FALSE(out.contains("clip_fraction"));
  std::ostringstream os;
  loss->pretty_print(os);
  EXPECT_THAT(os.str(), HasSubstr("PPOLoss(entropy_bonus=true"));
}

// KL(N(m1, 1) || N(m2, 1)) = (m1 - m2)^2 / 2 for the hand case: stored loc 0.5 * o + 0.2 (the
// collecting policy), current loc 0.5 * o.
TEST(KLPENPPOLossTest, HandWorkedCaseAddsTheClosedFormKLPenaltyAndAdaptsBeta) {
  PPOHandCase c;
  auto loss = hand_loss<KLPENPPOLoss>(KLPENPPOLossOptions().beta(0.5).dtarg(0.01));
  auto batch = c.batch();
  batch.set("loc", torch::tensor({{0.7f}, {1.2f}}));
  batch.set("scale", torch::ones({2, 1}));
  const auto out = loss->forward(batch);
  const double kl = 0.2 * 0.2 / 2;
  const double w1 = std::exp(0.5), w2 = std::exp(-0.1);
  EXPECT_NEAR(scalar(out, "kl"), kl, 1e-6);
  EXPECT_NEAR(scalar(out, "loss_objective"), -((w1 * 1.0 - 0.5 * kl) + (w2 * -2.0 - 0.5 * kl)) / 2,
              1e-5);
  // KL 0.02 > 1.5 * dtarg: beta doubles after the forward.
  EXPECT_DOUBLE_EQ(loss->beta(), 1.0);
  // Matching parameters: KL 0 < dtarg / 1.5, beta halves.
  batch.set("loc", torch::tensor({{0.5f}, {1.0f}}));
  EXPECT_NEAR(scalar(loss->forward(batch), "kl"), 0.0, 1e-7);
  EXPECT_DOUBLE_EQ(loss->beta(), 0.5);
}

TEST(KLPENPPOLossTest, TanhNormalKLIsTheMonteCarloEstimateOfTheGaussianKL) {
  torch::manual_seed(5);
  auto actor = linear_gaussian_actor(0.0, nullptr, 1.0, tdnn::DistributionClass::tanh_normal());
  auto loss = std::make_shared<KLPENPPOLoss>(actor, linear_critic(0.0, 0.0),
                                             KLPENPPOLossOptions().samples_mc_kl(20000));
  TensorDict batch({{"observation", torch::zeros({2, 1})},
                    {"action", torch::zeros({2, 1})},
                    {"sample_log_prob", torch::zeros({2})},
                    {"advantage", torch::zeros({2, 1})},
                    {"value_target", torch::zeros({2, 1})},
                    {"loc", torch::full({2, 1}, 0.3f)},
                    {"scale", torch::full({2, 1}, 1.0f)}},
                   {2});
  // tanh is a bijection, so the KL is that of the Gaussians N(0.3, 1) and N(0, 1).
  EXPECT_NEAR(scalar(loss->forward(batch), "kl"), 0.3 * 0.3 / 2, 0.01);
}

TEST(KLPENPPOLossTest, MissingDistributionParameterNamesIt) {
  PPOHandCase c;
  auto loss = hand_loss<KLPENPPOLoss>();
  auto batch = c.batch();
  batch.set("loc", torch::zeros({2, 1}));
  EXPECT_THAT([&] { loss->forward(batch); },
              ThrowsMessage<tensordict::KeyError>(
                  HasSubstr("KLPENPPOLoss: the batch has no 'scale', the 'scale' "
                            "parameter of the collecting policy's distribution")));
  EXPECT_DOUBLE_EQ(loss->beta(), 1.0);  // unchanged by the failed forward
}

TEST(KLPENPPOLossTest, KLPenaltyGradientReachesTheActorOnly) {
  torch::manual_seed(6);
  MlpActorCritic<KLPENPPOLoss> nets(8);
  EXPECT_TRUE(terms_reach_only(*nets.loss, synthetic_rollout(4, 5, 3, *nets.actor),
                               {"loss_objective"}, *nets.actor, *nets.critic));
}

TEST(KLPENPPOLossTest, InvalidOptionsAreRejected) {
  auto build = [](KLPENPPOLossOptions o) { return hand_loss<KLPENPPOLoss>(o); };
  EXPECT_THAT([&] { build(KLPENPPOLossOptions().decrement(2.0)); },
              ThrowsMessage<tensordict::ValueError>(
                  HasSubstr("KLPENPPOLoss: decrement is 2; it must be in (0, 1]")));
  EXPECT_THROW(build(KLPENPPOLossOptions().dtarg(0.0)), tensordict::ValueError);
  EXPECT_THROW(build(KLPENPPOLossOptions().increment(0.5)), tensordict::ValueError);
  EXPECT_THROW(build(KLPENPPOLossOptions().samples_mc_kl(0)), tensordict::ValueError);
}

TEST(KLPENPPOLossTest, BetaIsABufferSavedWithTheLoss) {
  auto loss = hand_loss<KLPENPPOLoss>(KLPENPPOLossOptions().beta(0.25));
  const auto buffers = loss->named_buffers(/*recurse=*/false);
  ASSERT_TRUE(buffers.contains("beta"));
  EXPECT_DOUBLE_EQ(buffers["beta"].item<double>(), 0.25);
  std::ostringstream os;
  loss->pretty_print(os);
  EXPECT_THAT(os.str(), HasSubstr("KLPENPPOLoss(dtarg=0.01, beta=0.25, increment=2, "
                                  "decrement=0.5, samples_mc_kl=1, entropy_bonus=true"));
}

}  // namespace
}  // namespace tdrl::losses

namespace tdrl::losses {
namespace {

// Recurrent actor and critic (an LSTM core each): forward runs the cores in sequence mode over
// the batch's sequences, the same terms as with the cores put in sequence mode by hand, and
// leaves them in step mode, as a collector needs them.
TEST(PPOLossTest, RecurrentNetworksRunOverTheBatchsSequences) {
  torch::manual_seed(0);
  const int64_t B = 2, T = 5;
  auto core = [](const std::string& role) {
    auto options =
        modules::RecurrentModuleOptions(3, 4).in_key("observation").out_key(role + "embed");
    if (!role.empty()) options.hidden_keys({role + "h", role + "c"});
    return std::make_shared<modules::LSTMModuleImpl>(options);
  };
  auto actor_core = core(""), critic_core = core("critic_");
  tdnn::TensorDictSequential actor_net(tdnn::TensorDictSequentialImpl::Modules{
      actor_core,
      tdnn::TensorDictModule(
          modules::MLP(modules::MLPOptions(4, 4).num_cells({})),
          tdnn::TensorDictModuleOptions().in_keys({"embed"}).out_keys({"params"}))
          .ptr(),
      tdnn::TensorDictModule(
          tdnn::NormalParamExtractor(),
          tdnn::TensorDictModuleOptions().in_keys({"params"}).out_keys({"loc", "scale"}))
          .ptr()});
  modules::ProbabilisticActor actor(
      actor_net,
      std::make_shared<specs::Bounded>(
          specs::BoundedOptions().low(-1.0).high(1.0).shape({2}).dtype(torch::kFloat32)),
      modules::ProbabilisticActorOptions().return_log_prob(true));
  tdnn::TensorDictSequential critic(tdnn::TensorDictSequentialImpl::Modules{
      critic_core, modules::ValueOperator(modules::MLP(modules::MLPOptions(4, 1).num_cells({})),
                                          modules::ValueOperatorOptions().in_keys({"critic_embed"}))
                       .ptr()});
  auto loss = std::make_shared<ClipPPOLoss>(actor, critic);
  EXPECT_EQ(loss->recurrent_cores().size(), 2u);

  auto is_init = torch::zeros({B, T, 1}, torch::kBool);
  is_init.select(1, 0).fill_(true);
  is_init[1][3] = true;
  auto done = torch::zeros({B, T, 1}, torch::kBool);
  done[1][2] = true;
  TensorDict next({{"observation", torch::randn({B, T, 3})},
                   {"is_init", torch::zeros({B, T, 1}, torch::kBool)},
                   {"reward", torch::randn({B, T, 1})},
                   {"terminated", done},
                   {"truncated", torch::zeros({B, T, 1}, torch::kBool)},
                   {"done", done}},
                  {B, T});
  TensorDict batch({{"observation", torch::randn({B, T, 3})}, {"is_init", is_init}, {"next", next}},
                   {B, T});
  {
    torch::NoGradGuard no_grad;
    tdnn::SetInteractionType random(tdnn::InteractionType::kRandom);
    modules::RecurrentModeGuard sequences({actor_core}, /*recurrent_mode=*/true);
    actor->forward(batch);
  }
  loss->value_estimator()->forward(batch);
  TensorDict by_hand;
  {
    modules::RecurrentModeGuard sequences({actor_core, critic_core}, /*recurrent_mode=*/true);
    by_hand = loss->forward(batch);
  }
  const auto out = loss->forward(batch);
  EXPECT_FALSE(actor_core->recurrent_mode());
  EXPECT_FALSE(critic_core->recurrent_mode());
  for (const char* term : {"loss_objective", "loss_critic"})
    EXPECT_NEAR(scalar(out, term), scalar(by_hand, term), 1e-6) << term;
}

}  // namespace
}  // namespace tdrl::losses
