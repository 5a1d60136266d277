// UpdateStep, the Trainer's gradient update: the means it reports per loss term and per group,
// and the non-finite check, when a loss writes some of its terms on some updates only.

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <tdrl/apps/recipe.h>
#include <tdrl/losses/loss_module.h>

#include "training/update_step.h"

namespace tdrl::apps::detail {
namespace {

using tensordict::NestedKey;
using tensordict::TensorDict;

// A loss that writes the values listed for each call in turn: "loss_a" on every call,
// "loss_b" and "extra" only where the call's list has them. The minimised terms get a gradient
// through one parameter so that the optimiser has something to step.
class ScriptedLoss : public losses::LossModule {
 public:
  explicit ScriptedLoss(std::vector<std::map<std::string, double>> calls)
      : LossModule("ScriptedLoss", {{"observation", NestedKey("observation")}}, {"observation"}),
        calls_(std::move(calls)) {
    set_out_keys({"loss_a", "loss_b", "extra"});
    weight_ = register_parameter("weight", torch::ones({1}));
  }

 protected:
  TensorDict forward_impl(const TensorDict&) override {
    const auto& values = calls_.at(next_++ % calls_.size());
    TensorDict out({}, {});
    for (const auto& [name, value] : values) {
      // weight is 1 (its gradient is clipped to nothing below), so each term equals its value.
      auto term = (weight_ * value).sum();
      out.set(name, name.rfind("loss_", 0) == 0 ? term : term.detach());
    }
    return out;
  }

 private:
  std::vector<std::map<std::string, double>> calls_;
  size_t next_ = 0;
  torch::Tensor weight_;
};

class ScriptedRecipe : public Recipe {
 public:
  explicit ScriptedRecipe(std::vector<std::map<std::string, double>> calls) {
    loss = std::make_shared<ScriptedLoss>(std::move(calls));
    // A zero learning rate: the weight stays 1, so the reported means are the scripted values.
    optimizers.push_back(
        {"all",
         std::make_shared<torch::optim::SGD>(loss->parameters(), torch::optim::SGDOptions(0.0)),
         {},
         1,
         0.0});
  }
  void build_acting(const RecipeContext&) override {}
  void build_learning(const RecipeContext&) override {}
};

TensorDict minibatch() { return TensorDict({{"observation", torch::zeros({4, 1})}}, {4}); }

TEST(UpdateStepTest, EachTermsMeanIsOverTheUpdatesThatWroteIt) {
  // Three updates: loss_b is written by the first and the third, extra by the second only.
  ScriptedRecipe recipe({{{"loss_a", 1.0}, {"loss_b", 10.0}},
                         {{"loss_a", 2.0}, {"extra", 5.0}},
                         {{"loss_a", 3.0}, {"loss_b", 30.0}}});
  UpdateStep step(recipe, /*max_grad_norm=*/0.0, /*cuda_graph=*/false);
  for (int i = 0; i < 3; ++i) step.run(minibatch(), {0});
  const auto means = step.take_means();
  EXPECT_DOUBLE_EQ(means.at("loss_a"), 2.0);
  EXPECT_DOUBLE_EQ(means.at("loss_b"), 20.0);
  EXPECT_DOUBLE_EQ(means.at("extra"), 5.0);
  EXPECT_EQ(means.count("grad_norm_all"), 1u);
  EXPECT_FALSE(step.first_nonfinite());

  // The next interval starts from nothing: only what it wrote, averaged over its own updates.
  step.run(minibatch(), {0});  // the first call's terms again
  const auto next = step.take_means();
  EXPECT_DOUBLE_EQ(next.at("loss_a"), 1.0);
  EXPECT_DOUBLE_EQ(next.at("loss_b"), 10.0);
  EXPECT_EQ(next.count("extra"), 0u);
}

TEST(UpdateStepTest, ANonFiniteTermOfAnEarlierSetOfTermsIsStillReported) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // The second update minimises a NaN loss_b; the third writes other terms.
  ScriptedRecipe recipe({{{"loss_a", 1.0}, {"loss_b", 1.0}},
                         {{"loss_a", 1.0}, {"loss_b", nan}},
                         {{"loss_a", 1.0}, {"extra", 2.0}}});
  UpdateStep step(recipe, /*max_grad_norm=*/0.0, /*cuda_graph=*/false);
  step.run(minibatch(), {0});
  EXPECT_FALSE(step.first_nonfinite());
  step.run(minibatch(), {0});
  step.run(minibatch(), {0});
  const auto bad = step.first_nonfinite();
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->first, "loss_b");
  EXPECT_TRUE(std::isnan(bad->second));
}

TEST(UpdateStepTest, ANonFiniteDiagnosticThatIsNotMinimisedIsNoError) {
  const double inf = std::numeric_limits<double>::infinity();
  ScriptedRecipe recipe({{{"loss_a", 1.0}, {"extra", inf}}});
  UpdateStep step(recipe, /*max_grad_norm=*/0.0, /*cuda_graph=*/false);
  step.run(minibatch(), {0});
  EXPECT_FALSE(step.first_nonfinite());
  EXPECT_TRUE(std::isinf(step.take_means().at("extra")));
}

}  // namespace
}  // namespace tdrl::apps::detail
