#include <tdrl/losses/loss_module.h>

#include <memory>
#include <sstream>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <tensordict/errors.h>

#include "support/test_names.h"

namespace tdrl::losses {
namespace {

using namespace tdrl::testing::names;

// A regression loss: Q(observation) against reward + gamma * Q_target(next observation).
class ToyLoss : public LossModule {
 public:
  explicit ToyLoss(torch::nn::Linear net)
      : LossModule("ToyLoss",
                   {{"observation", NestedKey("observation")},
                    {"reward", NestedKey{"next", "reward"}},
                    {"next_observation", NestedKey{"next", "observation"}}},
                   {"observation", "reward", "next_observation"}),
        net_(net) {
    set_out_keys({"loss_value"});
    convert_to_functional("value_network", net, /*create_target=*/true);
  }

  void redeclare(std::vector<std::string> keys) { set_out_keys(std::move(keys)); }

  torch::Tensor target_value(const torch::Tensor& x) {
    return with_target("value_network", [&] { return net_(x); });
  }

 protected:
  TensorDict forward_impl(const TensorDict& batch) override {
    const auto value = net_(get(batch, "observation"));
    const auto reward = get(batch, "reward");
    check_same_shape("TD target", reward, "reward", value, "value");
    const auto target = reward + 0.9 * target_value(get(batch, "next_observation"));
    return TensorDict({{"loss_value", (value - target).pow(2).mean()}}, {});
  }

 private:
  torch::nn::Linear net_;
};

TensorDict batch(int64_t n) {
  TensorDict next({{"observation", torch::randn({n, 3})}, {"reward", torch::randn({n, 1})}}, {n});
  return TensorDict({{"observation", torch::randn({n, 3})}, {"next", next}}, {n});
}

// A one-step TD loss through LossModule::td_target: Q(s, a) is the batch's "q", the next
// state's value its "next_q".
class TdToyLoss : public LossModule {
 public:
  explicit TdToyLoss(bool with_estimator)
      : LossModule("TdToyLoss",
                   {{"reward", NestedKey{"next", "reward"}},
                    {"done", NestedKey{"next", "done"}},
                    {"terminated", NestedKey{"next", "terminated"}}},
                   {"reward", "done", "terminated"}) {
    set_out_keys({"loss_value", "target_value"});
    if (with_estimator) {
      make_value_estimator(ValueEstimatorType::kTD0, ValueEstimatorOptions().gamma(0.5));
    }
  }

 protected:
  TensorDict forward_impl(const TensorDict& batch) override {
    const auto q = batch.get("q");
    const auto t = transition(batch);
    const auto target = td_target(batch, t, q, batch.get("next_q"), "Q(s', a')");
    return TensorDict({{"loss_value", (q - target).pow(2).mean()}, {"target_value", target}}, {});
  }
};

TensorDict td_batch(const torch::Tensor& next_q) {
  TensorDict next({{"reward", torch::ones({4, 1})},
                   {"done", torch::tensor({false, false, true, false}).unsqueeze(-1)},
                   {"terminated", torch::tensor({false, false, true, false}).unsqueeze(-1)}},
                  {4});
  return TensorDict({{"q", torch::zeros({4, 1})}, {"next_q", next_q}, {"next", next}}, {4});
}

TEST(LossModuleTest, TdTargetBootstrapsThroughTheValueEstimator) {
  TdToyLoss loss(/*with_estimator=*/true);
  const auto out = loss.forward(td_batch(torch::full({4, 1}, 2.0)));
  // r + gamma * (1 - terminated) * next = 1 + 0.5 * 2, and 1 where terminated.
  EXPECT_TRUE(torch::allclose(out.get("target_value"),
                              torch::tensor({2.0f, 2.0f, 1.0f, 2.0f}).unsqueeze(-1)));
}

TEST(LossModuleTest, TdTargetNamesAMisshapedNextValue) {
  TdToyLoss loss(/*with_estimator=*/true);
  EXPECT_THAT([&] { loss.forward(td_batch(torch::zeros({4}))); },
              ::testing::ThrowsMessage<tensordict::ShapeError>(HasSubstr("Q(s', a')")));
}

TEST(LossModuleTest, TdTargetWithoutAValueEstimatorIsAValueError) {
  TdToyLoss loss(/*with_estimator=*/false);
  EXPECT_THAT(
      [&] {
        loss.forward(td_batch(torch::zeros({4, 1})));
      },
      ::testing::ThrowsMessage<tensordict::ValueError>(HasSubstr("call make_value_estimator")));
}

TEST(LossModuleTest, OutKeysDeclareWhatForwardWrites) {
  auto loss = std::make_shared<ToyLoss>(torch::nn::Linear(3, 1));
  EXPECT_EQ(loss->out_keys(), std::vector<std::string>{"loss_value"});
  loss->redeclare({"loss_value", "td_error_mean"});
  EXPECT_EQ(loss->loss_terms(), std::vector<std::string>{"loss_value"});
  EXPECT_NO_THROW(loss->forward(batch(4)));  // a subset of the declared entries is fine
}

TEST(LossModuleTest, ForwardWritingAnUndeclaredEntryThrowsKeyError) {
  auto loss = std::make_shared<ToyLoss>(torch::nn::Linear(3, 1));
  loss->redeclare({"loss_other"});
  try {
    loss->forward(batch(4));
    FAIL() << "no exception";
  } catch (const tensordict::KeyError& e) {
    EXPECT_THAT(e.what(), HasSubstr("ToyLoss: forward wrote 'loss_value', which is not among its "
                                    "out_keys ['loss_other']"));
    EXPECT_THAT(e.what(), HasSubstr("set_out_keys"));
  }
}

TEST(LossModuleTest, SetOutKeysRejectsEmptyAndRepeatedNames) {
  auto loss = std::make_shared<ToyLoss>(torch::nn::Linear(3, 1));
  EXPECT_THROW(loss->redeclare({"loss_a", ""}), tensordict::ValueError);
  try {
    loss->redeclare({"loss_a", "loss_a"});
    FAIL() << "no exception";
  } catch (const tensordict::ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("'loss_a' is declared twice"));
  }
  EXPECT_EQ(loss->out_keys(), std::vector<std::string>{"loss_value"});  // unchanged
}

TEST(LossModuleTest, ForwardReturnsLossTermsAndTrainsOnlyTheNetwork) {
  torch::manual_seed(0);
  auto loss = std::make_shared<ToyLoss>(torch::nn::Linear(3, 1));
  auto out = loss->forward(batch(8));
  out.get("loss_value").backward();
  const auto& params = loss->params("value_network");
  EXPECT_TRUE(params.get("weight").grad().defined());
  EXPECT_FALSE(loss->target_params("value_network").get("weight").requires_grad());
}

TEST(LossModuleTest, TargetIsADetachedCopyUsedUnderWithTarget) {
  torch::manual_seed(1);
  torch::nn::Linear net(3, 1);
  auto loss = std::make_shared<ToyLoss>(net);
  {
    torch::NoGradGuard no_grad;
    net->weight.add_(1.0);
  }
  const auto x = torch::randn({4, 3});
  const auto& target = loss->target_params("value_network");
  const auto expected = torch::nn::functional::linear(x, target.get("weight"), target.get("bias"));
  EXPECT_TRUE(torch::allclose(loss->target_value(x), expected));
  // The network holds its own (moved) parameters again.
  EXPECT_FALSE(torch::allclose(net(x), expected));
}

TEST(LossModuleTest, InKeysFollowSetKeys) {
  auto loss = std::make_shared<ToyLoss>(torch::nn::Linear(3, 1));
  loss->set_keys({{"reward", NestedKey{"next", "r"}}});
  EXPECT_EQ(loss->in_keys(),
            (std::vector<NestedKey>{"observation", {"next", "r"}, {"next", "observation"}}));
  EXPECT_EQ(loss->key("reward"), (NestedKey{"next", "r"}));
}

TEST(LossModuleTest, UnknownKeyNameThrowsListingValidNames) {
  auto loss = std::make_shared<ToyLoss>(torch::nn::Linear(3, 1));
  EXPECT_THAT(
      [&] {
        loss->set_keys({{"rewards", NestedKey("x")}, {"reward", NestedKey("y")}});
      },
      ThrowsMessage<tensordict::KeyError>(
          HasSubstr("no key named 'rewards'; valid key names: ['observation', "
                    "'reward', 'next_observation']")));
  EXPECT_EQ(loss->key("reward"), (NestedKey{"next", "reward"}));  // unchanged
}

TEST(LossModuleTest, MissingKeyNamesTheKeyAndItsSetKeysName) {
  auto loss = std::make_shared<ToyLoss>(torch::nn::Linear(3, 1));
  auto b = batch(4);
  b.del_({"next", "reward"});
  EXPECT_THAT([&] { loss->forward(b); },
              ThrowsMessage<tensordict::KeyError>(
                  AllOf(HasSubstr("ToyLoss: the batch has no ('next', 'reward') (the 'reward' "
                                  "key)"),
                        HasSubstr("set_keys({{\"reward\""))));
}

TEST(LossModuleTest, SilentBroadcastIsAShapeError) {
  auto loss = std::make_shared<ToyLoss>(torch::nn::Linear(3, 1));
  auto b = batch(4);
  b.set({"next", "reward"}, torch::randn({4}));
  EXPECT_THAT([&] { loss->forward(b); }, ThrowsMessage<tensordict::ShapeError>(HasSubstr(
                                             "reward has shape [4] but value has shape [4, 1]")));
}

TEST(LossModuleTest, SoftUpdateMovesTargetsByTau) {
  torch::nn::Linear net(3, 1);
  auto loss = std::make_shared<ToyLoss>(net);
  const auto before = loss->target_params("value_network").get("weight").clone();
  {
    torch::NoGradGuard no_grad;
    net->weight.add_(1.0);
  }
  SoftUpdate updater(loss, 0.25);
  updater.step();
  EXPECT_TRUE(torch::allclose(loss->target_params("value_network").get("weight"),
                              0.75 * before + 0.25 * net->weight.detach()));
  EXPECT_THROW(SoftUpdate(loss, 0.0), tensordict::ValueError);
}

TEST(LossModuleTest, HardUpdateCopiesEveryPeriodSteps) {
  torch::nn::Linear net(3, 1);
  auto loss = std::make_shared<ToyLoss>(net);
  {
    torch::NoGradGuard no_grad;
    net->weight.add_(1.0);
  }
  HardUpdate updater(loss, 3);
  updater.step();
  updater.step();
  EXPECT_FALSE(torch::equal(loss->target_params("value_network").get("weight"), net->weight));
  updater.step();
  EXPECT_TRUE(torch::equal(loss->target_params("value_network").get("weight"), net->weight));
  EXPECT_THROW(HardUpdate(loss, 0), tensordict::ValueError);
}

TEST(LossModuleTest, SaveAndLoadKeepTargets) {
  auto loss = std::make_shared<ToyLoss>(torch::nn::Linear(3, 1));
  {
    torch::NoGradGuard no_grad;
    loss->target_params("value_network").get("weight").fill_(0.5);
  }
  std::stringstream buffer;
  torch::save(loss, buffer);
  auto other = std::make_shared<ToyLoss>(torch::nn::Linear(3, 1));
  torch::load(other, buffer);
  EXPECT_TRUE(torch::allclose(other->target_params("value_network").get("weight"),
                              torch::full({1, 3}, 0.5)));
}

TEST(LossModuleTest, NetworksAreRegisteredOnce) {
  auto loss = std::make_shared<ToyLoss>(torch::nn::Linear(3, 1));
  EXPECT_EQ(loss->networks(), (std::vector<std::string>{"value_network"}));
  EXPECT_EQ(loss->parameters().size(), 2u);
  EXPECT_THROW(loss->network("critic"), tensordict::KeyError);
}

// ---- HoldOutParams: one term trains the actor through the critic, not the critic ----------

TEST(HoldOutParamsTest, ATermThroughAHeldOutNetworkTrainsOnlyWhatFeedsIt) {
  torch::nn::Linear actor(3, 2);
  torch::nn::Linear critic(2, 1);
  const auto x = torch::randn({5, 3});
  torch::Tensor term;
  {
    HoldOutParams hold(*critic);
    EXPECT_FALSE(critic->weight.requires_grad());
    term = -critic(actor(x)).mean();
  }
  EXPECT_TRUE(critic->weight.requires_grad());  // back when the scope ends
  EXPECT_TRUE(critic->bias.requires_grad());
  term.backward();
  EXPECT_TRUE(actor->weight.grad().defined());
  EXPECT_GT(actor->weight.grad().abs().sum().item<double>(), 0.0);
  EXPECT_FALSE(critic->weight.grad().defined());
  EXPECT_FALSE(critic->bias.grad().defined());
}

TEST(HoldOutParamsTest, RestoresTheFlagsWhenTheScopeThrowsAndLeavesFrozenParametersFrozen) {
  torch::nn::Linear critic(2, 1);
  critic->bias.requires_grad_(false);  // frozen by the user: stays frozen
  EXPECT_THROW(
      {
        HoldOutParams hold(*critic);
        throw std::runtime_error("in the term");
      },
      std::runtime_error);
  EXPECT_TRUE(critic->weight.requires_grad());
  EXPECT_FALSE(critic->bias.requires_grad());
}

}  // namespace
}  // namespace tdrl::losses
