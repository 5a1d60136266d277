#include <tdrl/modules/actors.h>

#include <memory>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <tdrl/modules/mlp.h>
#include <tdrl/specs/tensor_spec.h>
#include <tensordict/errors.h>
#include <tensordict/nn.h>
#include <tensordict/tensor_dict.h>

#include "support/test_names.h"

namespace tdrl::modules {
namespace {

using namespace tdrl::testing::names;
using namespace tensordict::nn;

specs::TensorSpecPtr action_spec(int64_t dim, double low, double high) {
  return std::make_shared<specs::Bounded>(
      specs::BoundedOptions().low(low).high(high).shape({dim}).dtype(torch::kFloat32));
}

// observation [*, 3] → loc, scale [*, dim].
TensorDictSequential param_net(int64_t dim) {
  return TensorDictSequential(
      TensorDictModule(MLP(MLPOptions(3, 2 * dim).num_cells({16})),
                       TensorDictModuleOptions().in_keys({"observation"}).out_keys({"params"})),
      TensorDictModule(NormalParamExtractor(),
                       TensorDictModuleOptions().in_keys({"params"}).out_keys({"loc", "scale"})));
}

TEST(ProbabilisticActorTest, SamplesWithinTheSpecBoundsUnderRandom) {
  torch::manual_seed(0);
  auto spec = action_spec(2, -2.0, 3.0);
  ProbabilisticActor actor(param_net(2), spec,
                           ProbabilisticActorOptions()
                               .distribution_class(DistributionClass::tanh_normal(
                                   tensordict::nn::TanhNormalOptions().low(-2.0).high(3.0)))
                               .return_log_prob(true));
  TensorDict td({{"observation", torch::randn({64, 3}) * 5}}, {64});
  SetInteractionType guard(InteractionType::kRandom);
  actor(td);
  const auto action = td.get("action");
  EXPECT_EQ(action.sizes(), (Shape{64, 2}));
  EXPECT_TRUE(spec->is_in(action));
  EXPECT_EQ(td.get("sample_log_prob").sizes(), (Shape{64}));
  EXPECT_TRUE(torch::isfinite(td.get("sample_log_prob")).all().item<bool>());
  EXPECT_EQ(actor->in_keys(), (Keys{"observation"}));
  EXPECT_EQ(actor->out_keys(), (Keys{"params", "loc", "scale", "action", "sample_log_prob"}));
}

TEST(ProbabilisticActorTest, DefaultIsDeterministic) {
  auto actor = ProbabilisticActor(
      param_net(2), action_spec(2, -1, 1),
      ProbabilisticActorOptions().distribution_class(DistributionClass::normal()));
  TensorDict td({{"observation", torch::randn({4, 3})}}, {4});
  actor(td);
  EXPECT_TRUE(torch::equal(td.get("action"), td.get("loc")));
}

TEST(ProbabilisticActorTest, SafeProjectsOutOfSpecActionsIntoIt) {
  torch::manual_seed(1);
  auto spec = action_spec(2, -0.1, 0.1);
  ProbabilisticActor actor(
      param_net(2), spec,
      ProbabilisticActorOptions().distribution_class(DistributionClass::normal()).safe(true));
  TensorDict td({{"observation", torch::randn({32, 3})}}, {32});
  SetInteractionType guard(InteractionType::kRandom);
  actor(td);
  EXPECT_TRUE(spec->is_in(td.get("action")));
  EXPECT_TRUE(torch::equal(td.get("action"), td.get("action").clamp(-0.1, 0.1)));
}

TEST(ProbabilisticActorTest, UnsafeActorLeavesOutOfSpecActions) {
  torch::manual_seed(2);
  auto spec = action_spec(2, -0.1, 0.1);
  ProbabilisticActor actor(
      param_net(2), spec,
      ProbabilisticActorOptions().distribution_class(DistributionClass::normal()));
  TensorDict td({{"observation", torch::randn({32, 3})}}, {32});
  SetInteractionType guard(InteractionType::kRandom);
  actor(td);
  EXPECT_FALSE(spec->is_in(td.get("action")));
}

TEST(ProbabilisticActorTest, ActionShapeDifferentFromTheSpecThrowsShapeError) {
  ProbabilisticActor actor(param_net(2), action_spec(3, -1, 1));
  TensorDict td({{"observation", torch::randn({4, 3})}}, {4});
  EXPECT_THAT([&] { actor(td); }, ThrowsMessage<tensordict::ShapeError>(
                                      AllOf(HasSubstr("action 'action' has shape [4, 2]"),
                                            HasSubstr("expects trailing dims [3]"))));
}

TEST(ProbabilisticActorTest, SafeWithoutSpecIsRejected) {
  EXPECT_THROW(ProbabilisticActor(param_net(2), nullptr, ProbabilisticActorOptions().safe(true)),
               tensordict::ValueError);
}

TEST(ProbabilisticActorTest, AnEmptyModuleHolderIsRejectedAsANullModule) {
  EXPECT_THAT([] { ProbabilisticActor(TensorDictSequential(nullptr), action_spec(2, -1, 1)); },
              ThrowsMessage<tensordict::ValueError>(HasSubstr("module 0 is null")));
}

TEST(ProbabilisticActorTest, GetDistAndLogProbReachTheNetworkParameters) {
  torch::manual_seed(3);
  ProbabilisticActor actor(param_net(2), action_spec(2, -1, 1));
  TensorDict td({{"observation", torch::randn({8, 3})}, {"action", torch::rand({8, 2}) - 0.5}},
                {8});
  auto dist = actor->get_dist(td);
  EXPECT_EQ(dist->name(), "TanhNormal");
  actor->log_prob(td).sum().backward();
  for (const auto& p : actor->parameters()) EXPECT_TRUE(p.grad().defined());
}

TEST(ValueOperatorTest, WritesStateValueFromObservationByDefault) {
  ValueOperator critic(MLP(MLPOptions(3, 1).num_cells({8})));
  TensorDict td({{"observation", torch::randn({5, 3})}}, {5});
  critic(td);
  EXPECT_EQ(td.get("state_value").sizes(), (Shape{5, 1}));
  EXPECT_EQ(critic->in_keys(), (Keys{"observation"}));
}

TEST(ValueOperatorTest, ReadingTheActionWritesStateActionValue) {
  auto net = MLP(MLPOptions(5, 1).num_cells({8}));
  ValueOperator critic(
      [net](const torch::Tensor& obs, const torch::Tensor& action) mutable {
        return net(torch::cat({obs, action}, -1));
      },
      ValueOperatorOptions().in_keys({"observation", "action"}));
  TensorDict td({{"observation", torch::randn({5, 3})}, {"action", torch::randn({5, 2})}}, {5});
  critic(td);
  EXPECT_EQ(critic->out_keys(), (Keys{"state_action_value"}));
  EXPECT_EQ(td.get("state_action_value").sizes(), (Shape{5, 1}));
}

TEST(ValueOperatorTest, CustomOutKeys) {
  ValueOperator critic(MLP(MLPOptions(3, 1)), ValueOperatorOptions().out_keys({"v"}));
  EXPECT_EQ(critic->out_keys(), (Keys{"v"}));
}

ActorValueOperator make_agent() {
  auto trunk =
      TensorDictModule(MLP(MLPOptions(3, 8).num_cells({}).activate_last_layer(true)),
                       TensorDictModuleOptions().in_keys({"observation"}).out_keys({"hidden"}));
  auto head = TensorDictSequential(
      TensorDictModule(torch::nn::Linear(8, 4),
                       TensorDictModuleOptions().in_keys({"hidden"}).out_keys({"params"})),
      TensorDictModule(NormalParamExtractor(),
                       TensorDictModuleOptions().in_keys({"params"}).out_keys({"loc", "scale"})));
  ProbabilisticActor actor(head, action_spec(2, -1, 1));
  ValueOperator value(torch::nn::Linear(8, 1), ValueOperatorOptions().in_keys({"hidden"}));
  return ActorValueOperator(trunk, actor, value);
}

TEST(ActorValueOperatorTest, RunsTrunkPolicyAndValue) {
  auto agent = make_agent();
  TensorDict td({{"observation", torch::randn({6, 3})}}, {6});
  agent(td);
  EXPECT_EQ(td.get("hidden").sizes(), (Shape{6, 8}));
  EXPECT_EQ(td.get("action").sizes(), (Shape{6, 2}));
  EXPECT_EQ(td.get("state_value").sizes(), (Shape{6, 1}));
  EXPECT_THAT(agent->to_string(), HasSubstr("ActorValueOperator(\n"));
}

TEST(ActorValueOperatorTest, AnEmptyHeadIsRejectedNamingItsPosition) {
  auto trunk =
      TensorDictModule(torch::nn::Linear(3, 8),
                       TensorDictModuleOptions().in_keys({"observation"}).out_keys({"hidden"}));
  ValueOperator value(torch::nn::Linear(8, 1), ValueOperatorOptions().in_keys({"hidden"}));
  EXPECT_THAT(
      [&] { ActorValueOperator(trunk, ProbabilisticActor(nullptr), value); },
      ThrowsMessage<tensordict::ValueError>(HasSubstr("ActorValueOperator: module 1 is null")));
}

TEST(ActorValueOperatorTest, PolicyOperatorIsProbabilisticAndSharesTheTrunk) {
  auto agent = make_agent();
  auto policy = agent->get_policy_operator();
  auto probabilistic =
      std::dynamic_pointer_cast<tensordict::nn::ProbabilisticTensorDictSequentialImpl>(
          policy.ptr());
  ASSERT_TRUE(probabilistic);
  TensorDict td({{"observation", torch::randn({6, 3})}}, {6});
  EXPECT_EQ(probabilistic->get_dist(td)->name(), "TanhNormal");
  policy(td);
  EXPECT_TRUE(td.contains("action"));
  EXPECT_FALSE(td.contains("state_value"));
  // The trunk's weight is the same tensor in the agent and in the policy operator.
  EXPECT_TRUE(agent->get_common_operator()->parameters()[0].is_same(policy->parameters()[0]));
}

TEST(ActorValueOperatorTest, ValueOperatorWritesOnlyTheValue) {
  auto agent = make_agent();
  auto value = agent->get_value_operator();
  TensorDict td({{"observation", torch::randn({6, 3})}}, {6});
  value(td);
  EXPECT_TRUE(td.contains("state_value"));
  EXPECT_FALSE(td.contains("action"));
}

}  // namespace
}  // namespace tdrl::modules
