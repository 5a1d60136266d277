// Tests of the exploration modules: EGreedyModule, AdditiveGaussianModule,
// OrnsteinUhlenbeckProcessModule, and ExplorationModuleBase as a user's own module derives it.
// Every random test is seeded (a generator in the options or torch::manual_seed); statistical tests
// state their tolerance next to the assertion.

#include <cmath>
#include <memory>
#include <sstream>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <tdrl/modules/additive_gaussian.h>
#include <tdrl/modules/egreedy.h>
#include <tdrl/modules/exploration.h>
#include <tdrl/modules/ornstein_uhlenbeck.h>
#include <tdrl/specs/tensor_spec.h>
#include <tensordict/errors.h>
#include <tensordict/nn/interaction_type.h>
#include <tensordict/tensor_dict.h>

#include "support/seeded.h"
#include "support/test_names.h"

namespace tdrl::modules {
namespace {

using namespace tdrl::testing::names;
using tensordict::nn::InteractionType;
using tensordict::nn::SetInteractionType;

using tdrl::testing::seeded;

std::shared_ptr<specs::Categorical> categorical(int64_t n) {
  return std::make_shared<specs::Categorical>(n);
}

std::shared_ptr<specs::OneHot> one_hot(int64_t n) { return std::make_shared<specs::OneHot>(n); }

std::shared_ptr<specs::Bounded> box(double low, double high, Shape shape) {
  return std::make_shared<specs::Bounded>(specs::BoundedOptions().low(low).high(high).shape(shape));
}

std::shared_ptr<specs::Unbounded> unbounded(Shape shape) {
  return std::make_shared<specs::Unbounded>(shape);
}

// A TensorDict of batch [n] holding `action`.
TensorDict action_td(const torch::Tensor& action) {
  return TensorDict({{"action", action}}, {action.size(0)});
}

// ==== EGreedyModule ==============================================================================

TEST(EGreedyModuleTest, LeavesActionUnchangedOutsideRandomInteraction) {
  EGreedyModule explore(categorical(4), EGreedyModuleOptions().eps_init(1.0).eps_end(1.0));
  const auto action = torch::zeros({64}, torch::kLong);
  auto td = action_td(action);
  explore(td);  // no guard
  EXPECT_TRUE(torch::equal(td.get("action"), action));
  for (auto type :
       {InteractionType::kDeterministic, InteractionType::kMode, InteractionType::kMean}) {
    SetInteractionType guard(type);
    explore(td);
    EXPECT_TRUE(torch::equal(td.get("action"), action)) << type;
  }
}

TEST(EGreedyModuleTest, EpsOneGivesSpecValidRandomActions) {
  auto spec = categorical(4);
  EGreedyModule explore(spec, EGreedyModuleOptions().eps_init(1.0).generator(seeded(0)));
  auto td = action_td(torch::zeros({1000}, torch::kLong));
  SetInteractionType guard(InteractionType::kRandom);
  explore(td);
  const auto out = td.get("action");
  EXPECT_TRUE(spec->is_in(out));
  // Uniform over 4 actions: a quarter stay 0 (binomial sd 0.014; tolerance 0.06).
  EXPECT_NEAR((out == 0).to(torch::kDouble).mean().item<double>(), 0.25, 0.06);
  for (int64_t a = 1; a < 4; ++a) EXPECT_TRUE((out == a).any().item<bool>()) << a;
}

TEST(EGreedyModuleTest, EpsZeroKeepsActions) {
  EGreedyModule explore(categorical(4), EGreedyModuleOptions().eps_init(0.0).eps_end(0.0));
  const auto action = torch::randint(4, {200}, torch::kLong);
  auto td = action_td(action);
  SetInteractionType guard(InteractionType::kRandom);
  explore(td);
  EXPECT_TRUE(torch::equal(td.get("action"), action));
}

TEST(EGreedyModuleTest, ReplacementFractionMatchesEps) {
  // Actions of -1 never come from the spec, so every changed element was replaced.
  EGreedyModule explore(categorical(6),
                        EGreedyModuleOptions().eps_init(0.3).eps_end(0.3).generator(seeded(1)));
  auto td = action_td(torch::full({20000}, -1, torch::kLong));
  SetInteractionType guard(InteractionType::kRandom);
  explore(td);
  const double fraction = (td.get("action") != -1).to(torch::kDouble).mean().item<double>();
  // Binomial sd sqrt(0.3 * 0.7 / 20000) = 0.0032; tolerance 0.02 (> 6 sd).
  EXPECT_NEAR(fraction, 0.3, 0.02);
}

TEST(EGreedyModuleTest, AnnealsLinearlyAndStopsAtEpsEnd) {
  EGreedyModule explore(categorical(2),
                        EGreedyModuleOptions().eps_init(1.0).eps_end(0.1).annealing_num_steps(10));
  EXPECT_DOUBLE_EQ(explore->eps(), 1.0);
  for (int i = 0; i < 3; ++i) explore->step();
  EXPECT_NEAR(explore->eps(), 1.0 - 3 * 0.09, 1e-12);
  explore->step(4);
  EXPECT_NEAR(explore->eps(), 1.0 - 7 * 0.09, 1e-12);
  explore->step(0);
  EXPECT_NEAR(explore->eps(), 1.0 - 7 * 0.09, 1e-12);
  explore->step(100);
  EXPECT_DOUBLE_EQ(explore->eps(), 0.1);
  explore->step();
  EXPECT_DOUBLE_EQ(explore->eps(), 0.1);
}

TEST(EGreedyModuleTest, StepRejectsNegativeFramesAndKeepsEps) {
  EGreedyModule explore(categorical(2));
  EXPECT_THAT([&] { explore->step(-1); },
              ThrowsMessage<ValueError>(
                  AllOf(HasSubstr("EGreedyModule::step"), HasSubstr("frames is -1"))));
  EXPECT_DOUBLE_EQ(explore->eps(), 1.0);
}

TEST(EGreedyModuleTest, ActionMaskRestrictsRandomActionsToAllowedOnes) {
  torch::manual_seed(2);
  auto spec = categorical(5);
  EGreedyModule explore(
      spec,
      EGreedyModuleOptions().eps_end(1.0).action_mask_key("action_mask").generator(seeded(3)));
  const int64_t n = 4000;
  auto mask = torch::rand({n, 5}) < 0.4;
  mask.index_put_({torch::indexing::Slice(), 2}, true);  // at least one allowed action per row
  mask.index_put_({0}, torch::tensor({false, true, false, true, false}));
  mask.index_put_({1}, torch::tensor({false, true, false, true, false}));
  auto td = TensorDict({{"action", torch::zeros({n}, torch::kLong)}, {"action_mask", mask}}, {n});
  SetInteractionType guard(InteractionType::kRandom);
  explore(td);
  const auto out = td.get("action");
  EXPECT_TRUE(spec->is_in(out));
  EXPECT_TRUE(mask.gather(1, out.unsqueeze(1)).all().item<bool>());

  // Among the allowed actions {1, 3}, both are drawn, each about half of the time:
  // 2000 draws of a fair coin (sd 0.011; tolerance 0.05).
  auto fixed = mask.index({torch::indexing::Slice(0, 2)}).repeat({1000, 1});
  auto td2 =
      TensorDict({{"action", torch::zeros({2000}, torch::kLong)}, {"action_mask", fixed}}, {2000});
  explore(td2);
  const auto out2 = td2.get("action");
  EXPECT_TRUE(((out2 == 1) | (out2 == 3)).all().item<bool>());
  EXPECT_NEAR((out2 == 1).to(torch::kDouble).mean().item<double>(), 0.5, 0.05);
}

TEST(EGreedyModuleTest, OneHotSpecGivesOneHotActions) {
  auto spec = one_hot(3);
  EGreedyModule explore(spec, EGreedyModuleOptions().eps_end(1.0).generator(seeded(4)));
  auto td = action_td(torch::zeros({300, 3}, torch::kLong).index_fill_(1, torch::tensor({0}), 1));
  SetInteractionType guard(InteractionType::kRandom);
  explore(td);
  const auto out = td.get("action");
  EXPECT_TRUE(spec->is_in(out));
  // Each hot index is drawn: a third of the time (sd 0.027; tolerance 0.1).
  const auto hot = out.argmax(-1);
  for (int64_t a = 0; a < 3; ++a) {
    EXPECT_NEAR((hot == a).to(torch::kDouble).mean().item<double>(), 1.0 / 3, 0.1) << a;
  }
}

TEST(EGreedyModuleTest, OneHotSpecWithMaskDrawsAllowedOneHotVectors) {
  auto spec = one_hot(4);
  EGreedyModule explore(
      spec, EGreedyModuleOptions().eps_end(1.0).action_mask_key("mask").generator(seeded(5)));
  auto mask = torch::tensor({false, false, true, true}).expand({500, 4});
  auto td = TensorDict(
      {{"action", torch::zeros({500, 4}, torch::kLong).index_fill_(1, torch::tensor({0}), 1)},
       {"mask", mask}},
      {500});
  SetInteractionType guard(InteractionType::kRandom);
  explore(td);
  const auto out = td.get("action");
  EXPECT_TRUE(spec->is_in(out));
  EXPECT_TRUE(
      out.index({torch::indexing::Slice(), torch::indexing::Slice(0, 2)}).eq(0).all().item<bool>());
}

TEST(EGreedyModuleTest, OneHotVectorsStayOneHotWhenOnlySomeElementsAreReplaced) {
  auto spec = one_hot(5);
  EGreedyModule explore(spec,
                        EGreedyModuleOptions().eps_init(0.5).eps_end(0.5).generator(seeded(6)));
  auto td = action_td(spec->expand({400, 5})->rand(seeded(7)));
  SetInteractionType guard(InteractionType::kRandom);
  explore(td);
  EXPECT_TRUE(spec->is_in(td.get("action")));
}

TEST(EGreedyModuleTest, DrawsPerElementOverExtraBatchDims) {
  auto spec = categorical(10);
  EGreedyModule explore(spec, EGreedyModuleOptions().eps_end(1.0).generator(seeded(8)));
  auto td = TensorDict({{"action", torch::zeros({4, 50}, torch::kLong)}}, {4, 50});
  SetInteractionType guard(InteractionType::kRandom);
  explore(td);
  const auto out = td.get("action");
  EXPECT_TRUE(spec->is_in(out));
  EXPECT_GT(std::get<0>(torch::_unique(out)).numel(), 5);  // not one value repeated
}

TEST(EGreedyModuleTest, KeepsTheActionDtype) {
  EGreedyModule explore(one_hot(3), EGreedyModuleOptions().eps_end(1.0).generator(seeded(9)));
  auto td = action_td(torch::zeros({8, 3}, torch::kFloat));
  SetInteractionType guard(InteractionType::kRandom);
  explore(td);
  EXPECT_EQ(td.get("action").scalar_type(), torch::kFloat);
  EXPECT_TRUE(torch::equal(td.get("action").sum(-1), torch::ones({8})));
}

TEST(EGreedyModuleTest, SameGeneratorSeedGivesSameActions) {
  auto run = [] {
    EGreedyModule explore(categorical(7),
                          EGreedyModuleOptions().eps_init(0.5).eps_end(0.5).generator(seeded(11)));
    auto td = action_td(torch::zeros({100}, torch::kLong));
    SetInteractionType guard(InteractionType::kRandom);
    explore(td);
    return td.get("action");
  };
  EXPECT_TRUE(torch::equal(run(), run()));
}

TEST(EGreedyModuleTest, WritesIntoTensordictOutAndLeavesInputUnchanged) {
  EGreedyModule explore(categorical(3), EGreedyModuleOptions().eps_end(1.0).generator(seeded(12)));
  auto td = action_td(torch::full({50}, -1, torch::kLong));
  auto out = TensorDict({}, {50});
  SetInteractionType guard(InteractionType::kRandom);
  explore->forward(td, out);
  EXPECT_TRUE(torch::equal(td.get("action"), torch::full({50}, -1, torch::kLong)));
  EXPECT_TRUE((out.get("action") >= 0).all().item<bool>());
}

TEST(EGreedyModuleTest, DeclaresItsKeys) {
  EGreedyModule plain(categorical(3));
  EXPECT_EQ(plain->in_keys(), (std::vector<NestedKey>{"action"}));
  EXPECT_EQ(plain->out_keys(), (std::vector<NestedKey>{"action"}));
  EGreedyModule masked(
      categorical(3),
      EGreedyModuleOptions().action_key({"agents", "action"}).action_mask_key({"agents", "mask"}));
  EXPECT_EQ(masked->in_keys(), (std::vector<NestedKey>{{"agents", "action"}, {"agents", "mask"}}));
  EXPECT_EQ(masked->out_keys(), (std::vector<NestedKey>{{"agents", "action"}}));
}

TEST(EGreedyModuleTest, NestedActionKeyDrawsPerElementOfItsTensorDict) {
  auto spec = categorical(4);
  EGreedyModule explore(spec, EGreedyModuleOptions()
                                  .action_key({"agents", "action"})
                                  .eps_init(0.5)
                                  .eps_end(0.5)
                                  .generator(seeded(13)));
  auto agents = TensorDict({{"action", torch::full({200, 3}, -1, torch::kLong)}}, {200, 3});
  auto td = TensorDict({{"agents", agents}}, {200});
  SetInteractionType guard(InteractionType::kRandom);
  explore(td);
  const auto replaced = td.get({"agents", "action"}) != -1;
  // Per agent, not per env: some envs have both replaced and kept agents.
  const auto mixed = replaced.any(1) & replaced.logical_not().any(1);
  EXPECT_TRUE(mixed.any().item<bool>());
}

TEST(EGreedyModuleTest, RejectsInvalidOptions) {
  EXPECT_THAT([] { EGreedyModule module(specs::TensorSpecPtr{}); },
              ThrowsMessage<ValueError>(
                  AllOf(HasSubstr("EGreedyModule"), HasSubstr("action spec is null"))));
  EXPECT_THAT([] { EGreedyModule(categorical(2), EGreedyModuleOptions().eps_init(1.5)); },
              ThrowsMessage<ValueError>(AllOf(HasSubstr("eps_init is 1.5"), HasSubstr("[0, 1]"))));
  EXPECT_THAT([] { EGreedyModule(categorical(2), EGreedyModuleOptions().eps_end(-0.1)); },
              ThrowsMessage<ValueError>(HasSubstr("eps_end is -0.1")));
  EXPECT_THAT([] { EGreedyModule(categorical(2), EGreedyModuleOptions().eps_init(NAN)); },
              ThrowsMessage<ValueError>(HasSubstr("eps_init is nan")));
  EXPECT_THAT(
      [] { EGreedyModule(categorical(2), EGreedyModuleOptions().eps_init(0.2).eps_end(0.5)); },
      ThrowsMessage<ValueError>(AllOf(HasSubstr("eps_end (0.5) is greater than eps_init (0.2)"),
                                      HasSubstr("must decrease"))));
  EXPECT_THAT(
      [] { EGreedyModule(categorical(2), EGreedyModuleOptions().annealing_num_steps(0)); },
      ThrowsMessage<ValueError>(AllOf(HasSubstr("annealing_num_steps is 0"), HasSubstr(">= 1"))));
  EXPECT_THAT(
      [] { EGreedyModule(box(-1, 1, {2}), EGreedyModuleOptions().action_mask_key("mask")); },
      ThrowsMessage<ValueError>(AllOf(HasSubstr("action_mask_key 'mask'"),
                                      HasSubstr("Categorical or OneHot"),
                                      HasSubstr("BoundedContinuous(shape=[2])"))));
}

TEST(EGreedyModuleTest, MissingActionThrowsKeyErrorListingAvailableKeys) {
  EGreedyModule explore(categorical(2));
  auto td = TensorDict({{"observation", torch::zeros({3, 4})}}, {3});
  SetInteractionType guard(InteractionType::kRandom);
  EXPECT_THAT([&] { explore(td); }, ThrowsMessage<KeyError>(AllOf(
                                        HasSubstr("EGreedyModule::forward"), HasSubstr("'action'"),
                                        HasSubstr("available keys"), HasSubstr("'observation'"))));
}

TEST(EGreedyModuleTest, ActionNotMatchingSpecThrowsShapeErrorAndLeavesTensorDictUnchanged) {
  EGreedyModule explore(one_hot(4), EGreedyModuleOptions().eps_end(1.0));
  const auto action = torch::zeros({5, 3}, torch::kLong);
  auto td = action_td(action);
  SetInteractionType guard(InteractionType::kRandom);
  EXPECT_THAT([&] { explore(td); },
              ThrowsMessage<ShapeError>(AllOf(HasSubstr("EGreedyModule::forward"),
                                              HasSubstr("action 'action' has shape [5, 3]"),
                                              HasSubstr("spec's shape [4]"))));
  EXPECT_TRUE(td.get("action").is_same(action));
}

TEST(EGreedyModuleTest, InvalidMasksThrowAndLeaveTensorDictUnchanged) {
  EGreedyModule explore(
      categorical(3),
      EGreedyModuleOptions().eps_end(1.0).action_mask_key("mask").generator(seeded(14)));
  const auto action = torch::zeros({2}, torch::kLong);
  SetInteractionType guard(InteractionType::kRandom);

  auto missing = action_td(action);
  EXPECT_THAT([&] { explore(missing); },
              ThrowsMessage<KeyError>(AllOf(HasSubstr("'mask'"), HasSubstr("available keys"))));

  auto not_bool = TensorDict({{"action", action}, {"mask", torch::ones({2, 3})}}, {2});
  EXPECT_THAT([&] { explore(not_bool); },
              ThrowsMessage<TypeError>(AllOf(HasSubstr("action mask 'mask' has dtype float"),
                                             HasSubstr("must be bool"))));

  auto wrong_shape =
      TensorDict({{"action", action}, {"mask", torch::ones({2, 4}, torch::kBool)}}, {2});
  EXPECT_THAT([&] { explore(wrong_shape); },
              ThrowsMessage<ShapeError>(AllOf(HasSubstr("action mask 'mask' has shape [2, 4]"),
                                              HasSubstr("expected [2, 3]"))));

  auto none_allowed = TensorDict(
      {{"action", action}, {"mask", torch::tensor({{true, false, false}, {false, false, false}})}},
      {2});
  EXPECT_THAT([&] { explore(none_allowed); },
              ThrowsMessage<ValueError>(
                  AllOf(HasSubstr("allows no action at index [1]"), HasSubstr("at least one"))));
  EXPECT_TRUE(none_allowed.get("action").is_same(action));
}

TEST(EGreedyModuleTest, PrintsItsSettings) {
  EGreedyModule explore(one_hot(4));
  EXPECT_EQ(explore->to_string(),
            "EGreedyModule(eps=1.0, eps_init=1.0, eps_end=0.1, annealing_num_steps=1000, "
            "action_key='action', action_mask_key=None, spec=OneHot(shape=[4]))");
  EGreedyModule masked(categorical(3), EGreedyModuleOptions()
                                           .eps_init(0.5)
                                           .eps_end(0.05)
                                           .annealing_num_steps(10)
                                           .action_key({"agents", "action"})
                                           .action_mask_key("mask"));
  masked->step(2);
  std::ostringstream os;
  os << *masked;
  EXPECT_EQ(os.str(),
            "EGreedyModule(eps=0.41, eps_init=0.5, eps_end=0.05, annealing_num_steps=10, "
            "action_key=('agents', 'action'), action_mask_key='mask', "
            "spec=Categorical(shape=[]))");
}

TEST(EGreedyModuleTest, SaveAndLoadKeepEps) {
  EGreedyModule saved(categorical(2), EGreedyModuleOptions().annealing_num_steps(100));
  saved->step(30);
  std::stringstream buffer;
  torch::save(saved, buffer);
  EGreedyModule loaded(categorical(2), EGreedyModuleOptions().annealing_num_steps(100));
  torch::load(loaded, buffer);
  EXPECT_NEAR(loaded->eps(), 1.0 - 30 * 0.009, 1e-12);
  EXPECT_EQ(loaded->named_buffers().size(), 1u);
}

// ==== AdditiveGaussianModule =====================================================================

TEST(AdditiveGaussianModuleTest, LeavesActionUnchangedOutsideRandomInteraction) {
  AdditiveGaussianModule explore(unbounded({2}));
  const auto action = torch::randn({10, 2});
  auto td = action_td(action);
  explore(td);
  EXPECT_TRUE(torch::equal(td.get("action"), action));
  SetInteractionType guard(InteractionType::kDeterministic);
  explore(td);
  EXPECT_TRUE(torch::equal(td.get("action"), action));
}

TEST(AdditiveGaussianModuleTest, NoiseHasMeanSigmaTimesMeanAndSdSigmaTimesStd) {
  AdditiveGaussianModule explore(
      unbounded({3}),
      AdditiveGaussianModuleOptions().sigma_init(0.5).sigma_end(0.5).mean(0.2).std(2.0).generator(
          seeded(20)));
  const auto action = torch::linspace(-1, 1, 60000).reshape({20000, 3});
  auto td = action_td(action);
  SetInteractionType guard(InteractionType::kRandom);
  explore(td);
  const auto diff = (td.get("action") - action).to(torch::kDouble);
  // 60000 draws of N(0.1, 1.0): standard error of the mean 0.004, of the sd 0.003;
  // tolerance 0.02 on both.
  EXPECT_NEAR(diff.mean().item<double>(), 0.5 * 0.2, 0.02);
  EXPECT_NEAR(diff.std().item<double>(), 0.5 * 2.0, 0.02);
}

TEST(AdditiveGaussianModuleTest, SafeProjectsIntoTheBoundsAndUnsafeDoesNot) {
  auto spec = box(-1.0, 1.0, {2});
  const auto action = torch::full({500, 2}, 0.9);
  SetInteractionType guard(InteractionType::kRandom);

  AdditiveGaussianModule safe(spec, AdditiveGaussianModuleOptions().generator(seeded(21)));
  auto td = action_td(action);
  safe(td);
  EXPECT_TRUE(spec->is_in(td.get("action")));
  EXPECT_TRUE((td.get("action") == 1.0).any().item<bool>());  // clamped, not resampled

  AdditiveGaussianModule unsafe(spec,
                                AdditiveGaussianModuleOptions().safe(false).generator(seeded(21)));
  auto td2 = action_td(action);
  unsafe(td2);
  EXPECT_TRUE((td2.get("action") > 1.0).any().item<bool>());
  EXPECT_TRUE(torch::equal(td.get("action"), td2.get("action").clamp(-1.0, 1.0)));
}

TEST(AdditiveGaussianModuleTest, KeepsTheActionDtype) {
  AdditiveGaussianModule explore(box(-1, 1, {2}),
                                 AdditiveGaussianModuleOptions().generator(seeded(22)));
  auto td = action_td(torch::zeros({4, 2}, torch::kDouble));
  SetInteractionType guard(InteractionType::kRandom);
  explore(td);
  EXPECT_EQ(td.get("action").scalar_type(), torch::kDouble);
}

TEST(AdditiveGaussianModuleTest, AnnealsSigmaAndStopsAtSigmaEnd) {
  AdditiveGaussianModule explore(
      unbounded({1}),
      AdditiveGaussianModuleOptions().sigma_init(0.5).sigma_end(0.1).annealing_num_steps(4));
  EXPECT_DOUBLE_EQ(explore->sigma(), 0.5);
  explore->step();
  EXPECT_NEAR(explore->sigma(), 0.4, 1e-12);
  explore->step(2);
  EXPECT_NEAR(explore->sigma(), 0.2, 1e-12);
  explore->step(10);
  EXPECT_DOUBLE_EQ(explore->sigma(), 0.1);
}

TEST(AdditiveGaussianModuleTest, ZeroSigmaLeavesActionUnchanged) {
  AdditiveGaussianModule explore(unbounded({2}),
                                 AdditiveGaussianModuleOptions().sigma_init(0.0).sigma_end(0.0));
  const auto action = torch::randn({6, 2});
  auto td = action_td(action);
  SetInteractionType guard(InteractionType::kRandom);
  explore(td);
  EXPECT_TRUE(torch::equal(td.get("action"), action));
}

TEST(AdditiveGaussianModuleTest, RejectsInvalidOptions) {
  EXPECT_THAT([] { AdditiveGaussianModule module(specs::TensorSpecPtr{}); },
              ThrowsMessage<ValueError>(HasSubstr("action spec is null")));
  EXPECT_THAT([] { AdditiveGaussianModule(categorical(3)); },
              ThrowsMessage<ValueError>(AllOf(HasSubstr("AdditiveGaussianModule"),
                                              HasSubstr("Categorical(shape=[]) is discrete"),
                                              HasSubstr("continuous"))));
  EXPECT_THAT(
      [] {
        AdditiveGaussianModule(unbounded({1}), AdditiveGaussianModuleOptions().sigma_init(-1));
      },
      ThrowsMessage<ValueError>(AllOf(HasSubstr("sigma_init is -1.0"), HasSubstr("[0, inf)"))));
  EXPECT_THAT(
      [] {
        AdditiveGaussianModule(unbounded({1}),
                               AdditiveGaussianModuleOptions().sigma_init(0.1).sigma_end(0.2));
      },
      ThrowsMessage<ValueError>(HasSubstr("sigma_end (0.2) is greater than sigma_init")));
  EXPECT_THAT(
      [] { AdditiveGaussianModule(unbounded({1}), AdditiveGaussianModuleOptions().std(-0.5)); },
      ThrowsMessage<ValueError>(HasSubstr("std is -0.5")));
  EXPECT_THAT(
      [] {
        AdditiveGaussianModule(unbounded({1}), AdditiveGaussianModuleOptions().mean(INFINITY));
      },
      ThrowsMessage<ValueError>(HasSubstr("mean is inf; it must be finite")));
  EXPECT_THAT(
      [] {
        AdditiveGaussianModule(unbounded({1}),
                               AdditiveGaussianModuleOptions().annealing_num_steps(-3));
      },
      ThrowsMessage<ValueError>(HasSubstr("annealing_num_steps is -3")));
}

TEST(AdditiveGaussianModuleTest, ForwardErrorsNameKeyAndShapesAndLeaveTensorDictUnchanged) {
  AdditiveGaussianModule explore(box(-1, 1, {2}));
  SetInteractionType guard(InteractionType::kRandom);
  auto missing = TensorDict({{"obs", torch::zeros({3})}}, {3});
  EXPECT_THAT([&] { explore(missing); },
              ThrowsMessage<KeyError>(AllOf(HasSubstr("AdditiveGaussianModule::forward"),
                                            HasSubstr("'action'"), HasSubstr("'obs'"))));
  const auto wrong = torch::zeros({3, 5});
  auto td = action_td(wrong);
  EXPECT_THAT([&] { explore(td); },
              ThrowsMessage<ShapeError>(AllOf(HasSubstr("action 'action' has shape [3, 5]"),
                                              HasSubstr("spec's shape [2]"))));
  EXPECT_TRUE(td.get("action").is_same(wrong));
  auto integer = action_td(torch::zeros({3, 2}, torch::kLong));
  EXPECT_THAT([&] { explore(integer); },
              ThrowsMessage<TypeError>(
                  AllOf(HasSubstr("action 'action' has dtype long"), HasSubstr("floating"))));
}

TEST(AdditiveGaussianModuleTest, PrintsItsSettings) {
  AdditiveGaussianModule explore(box(-1, 1, {6}));
  EXPECT_EQ(explore->to_string(),
            "AdditiveGaussianModule(sigma=1.0, sigma_init=1.0, sigma_end=0.1, "
            "annealing_num_steps=1000, mean=0.0, std=1.0, action_key='action', safe=True, "
            "spec=BoundedContinuous(shape=[6]))");
}

TEST(AdditiveGaussianModuleTest, SaveAndLoadKeepSigma) {
  AdditiveGaussianModule saved(unbounded({1}),
                               AdditiveGaussianModuleOptions().annealing_num_steps(10));
  saved->step(5);
  std::stringstream buffer;
  torch::save(saved, buffer);
  AdditiveGaussianModule loaded(unbounded({1}),
                                AdditiveGaussianModuleOptions().annealing_num_steps(10));
  torch::load(loaded, buffer);
  EXPECT_NEAR(loaded->sigma(), 0.55, 1e-12);
}

// ==== OrnsteinUhlenbeckProcessModule =============================================================

using OUOptions = OrnsteinUhlenbeckProcessModuleOptions;

// Options whose numbers are easy to recompute by hand.
OUOptions hand_options(uint64_t seed) {
  return OUOptions()
      .eps_init(0.7)
      .eps_end(0.7)
      .theta(0.15)
      .mu(0.1)
      .sigma(0.2)
      .dt(0.01)
      .x0(0.5)
      .generator(seeded(seed));
}

// One OU step: x + theta * (mu - x) * dt + sigma * sqrt(dt) * z.
torch::Tensor ou_step(const torch::Tensor& x, const torch::Tensor& z, double sigma) {
  return x + 0.15 * (0.1 - x) * 0.01 + sigma * std::sqrt(0.01) * z;
}

TEST(OrnsteinUhlenbeckProcessModuleTest, LeavesTensorDictUnchangedOutsideRandomInteraction) {
  OrnsteinUhlenbeckProcessModule explore(unbounded({2}));
  const auto action = torch::randn({3, 2});
  auto td = action_td(action);
  explore(td);
  {
    SetInteractionType guard(InteractionType::kMode);
    explore(td);
  }
  EXPECT_TRUE(torch::equal(td.get("action"), action));
  EXPECT_FALSE(td.contains(kOuPrevNoiseKey));
  EXPECT_FALSE(td.contains(kOuStepsKey));
}

TEST(OrnsteinUhlenbeckProcessModuleTest, FirstStepStartsFromX0AndWritesState) {
  OrnsteinUhlenbeckProcessModule explore(unbounded({2}), hand_options(30));
  const auto action = torch::tensor({{1.0f, -1.0f}, {0.0f, 2.0f}, {0.5f, 0.5f}});
  auto td = action_td(action);
  SetInteractionType guard(InteractionType::kRandom);
  explore(td);

  auto generator = seeded(30);
  const auto z = torch::randn({3, 2}, generator);
  const auto noise = ou_step(torch::full({3, 2}, 0.5), z, 0.2);
  EXPECT_TRUE(torch::allclose(td.get(kOuPrevNoiseKey), noise, 1e-6, 1e-6));
  EXPECT_TRUE(torch::allclose(td.get("action"), action + 0.7 * noise, 1e-6, 1e-6));
  EXPECT_TRUE(torch::equal(td.get(kOuStepsKey), torch::ones({3}, torch::kLong)));
  EXPECT_EQ(explore->out_keys(), (std::vector<NestedKey>{"action", kOuPrevNoiseKey, kOuStepsKey}));
}

TEST(OrnsteinUhlenbeckProcessModuleTest, NextStepContinuesFromThePreviousNoise) {
  OrnsteinUhlenbeckProcessModule explore(unbounded({2}), hand_options(31));
  auto td = action_td(torch::zeros({3, 2}));
  SetInteractionType guard(InteractionType::kRandom);
  explore(td);
  td.set("action", torch::zeros({3, 2}));
  explore(td);

  auto generator = seeded(31);
  const auto z1 = torch::randn({3, 2}, generator);
  const auto z2 = torch::randn({3, 2}, generator);
  const auto noise1 = ou_step(torch::full({3, 2}, 0.5), z1, 0.2);
  const auto noise2 = ou_step(noise1, z2, 0.2);
  EXPECT_TRUE(torch::allclose(td.get(kOuPrevNoiseKey), noise2, 1e-6, 1e-6));
  EXPECT_TRUE(torch::allclose(td.get("action"), 0.7 * noise2, 1e-6, 1e-6));
  EXPECT_TRUE(torch::equal(td.get(kOuStepsKey), torch::full({3}, 2, torch::kLong)));
}

TEST(OrnsteinUhlenbeckProcessModuleTest, IsInitRestartsOnlyFlaggedElements) {
  OrnsteinUhlenbeckProcessModule explore(unbounded({2}), hand_options(32));
  auto td = action_td(torch::zeros({3, 2}));
  SetInteractionType guard(InteractionType::kRandom);
  explore(td);
  explore(td);
  const auto noise_before = td.get(kOuPrevNoiseKey).clone();
  td.set("action", torch::zeros({3, 2}));
  td.set("is_init", torch::tensor({{true}, {false}, {false}}));
  explore(td);

  auto generator = seeded(32);
  torch::randn({3, 2}, generator);
  torch::randn({3, 2}, generator);
  const auto z = torch::randn({3, 2}, generator);
  auto start = noise_before.clone();
  start.index_put_({0}, 0.5);
  const auto expected = ou_step(start, z, 0.2);
  EXPECT_TRUE(torch::allclose(td.get(kOuPrevNoiseKey), expected, 1e-6, 1e-6));
  EXPECT_TRUE(torch::equal(td.get(kOuStepsKey), torch::tensor({1, 3, 3}, torch::kLong)));
}

TEST(OrnsteinUhlenbeckProcessModuleTest, SigmaDecreasesWithTheProcessStepCount) {
  OrnsteinUhlenbeckProcessModule annealed(
      unbounded({2}), OUOptions().sigma(0.2).sigma_min(0.05).n_steps_annealing(100));
  EXPECT_DOUBLE_EQ(annealed->current_sigma(0), 0.2);
  EXPECT_NEAR(annealed->current_sigma(50), 0.125, 1e-12);
  EXPECT_NEAR(annealed->current_sigma(100), 0.05, 1e-12);
  EXPECT_NEAR(annealed->current_sigma(1000), 0.05, 1e-12);
  OrnsteinUhlenbeckProcessModule constant(unbounded({2}), OUOptions().sigma(0.2));
  EXPECT_DOUBLE_EQ(constant->current_sigma(1000), 0.2);
}

TEST(OrnsteinUhlenbeckProcessModuleTest, ForwardUsesEachElementsAnnealedSigma) {
  OrnsteinUhlenbeckProcessModule explore(unbounded({2}),
                                         hand_options(33).sigma_min(0.05).n_steps_annealing(100));
  const auto prev = torch::tensor({{0.3f, -0.3f}, {0.1f, 0.0f}});
  auto td = TensorDict({{"action", torch::zeros({2, 2})},
                        {kOuPrevNoiseKey, prev},
                        {kOuStepsKey, torch::tensor({50, 400}, torch::kLong)}},
                       {2});
  SetInteractionType guard(InteractionType::kRandom);
  explore(td);

  auto generator = seeded(33);
  const auto z = torch::randn({2, 2}, generator);
  const auto sigma = torch::tensor({{0.125f}, {0.05f}});
  const auto expected = prev + 0.15 * (0.1 - prev) * 0.01 + sigma * 0.1 * z;
  EXPECT_TRUE(torch::allclose(td.get(kOuPrevNoiseKey), expected, 1e-6, 1e-6));
  EXPECT_TRUE(torch::equal(td.get(kOuStepsKey), torch::tensor({51, 401}, torch::kLong)));
}

TEST(OrnsteinUhlenbeckProcessModuleTest, NestedActionKeyKeepsStateNextToTheAction) {
  OrnsteinUhlenbeckProcessModule explore(unbounded({2}),
                                         hand_options(34).action_key({"agents", "action"}));
  EXPECT_EQ(explore->noise_key(), (NestedKey{"agents", kOuPrevNoiseKey}));
  EXPECT_EQ(explore->steps_key(), (NestedKey{"agents", kOuStepsKey}));
  auto agents = TensorDict({{"action", torch::zeros({4, 3, 2})}}, {4, 3});
  auto td = TensorDict({{"agents", agents}}, {4});
  SetInteractionType guard(InteractionType::kRandom);
  explore(td);
  explore(td);
  td.set("is_init", torch::tensor({{false}, {true}, {false}, {false}}));
  explore(td);
  EXPECT_EQ(td.get({"agents", kOuPrevNoiseKey}).sizes(), (c10::IntArrayRef{4, 3, 2}));
  const auto expected_steps = torch::tensor({3, 1, 3, 3}, torch::kLong).unsqueeze(1).expand({4, 3});
  EXPECT_TRUE(torch::equal(td.get({"agents", kOuStepsKey}), expected_steps));
}

TEST(OrnsteinUhlenbeckProcessModuleTest, SafeProjectsIntoTheBounds) {
  auto spec = box(-0.1, 0.1, {3});
  OrnsteinUhlenbeckProcessModule explore(spec,
                                         OUOptions().sigma(50.0).x0(1.0).generator(seeded(35)));
  auto td = action_td(torch::zeros({100, 3}));
  SetInteractionType guard(InteractionType::kRandom);
  explore(td);
  EXPECT_TRUE(spec->is_in(td.get("action")));
  EXPECT_TRUE((td.get(kOuPrevNoiseKey).abs() > 0.1).any().item<bool>());  // state unclamped
}

TEST(OrnsteinUhlenbeckProcessModuleTest, TensorX0BroadcastsOverTheSpec) {
  OrnsteinUhlenbeckProcessModule explore(unbounded({2}),
                                         hand_options(36).x0(torch::tensor({1.0, -1.0})));
  auto td = action_td(torch::zeros({3, 2}));
  SetInteractionType guard(InteractionType::kRandom);
  explore(td);
  auto generator = seeded(36);
  const auto z = torch::randn({3, 2}, generator);
  const auto start = torch::tensor({1.0f, -1.0f}).expand({3, 2});
  EXPECT_TRUE(torch::allclose(td.get(kOuPrevNoiseKey), ou_step(start, z, 0.2), 1e-6, 1e-6));
}

TEST(OrnsteinUhlenbeckProcessModuleTest, AnnealsEps) {
  OrnsteinUhlenbeckProcessModule explore(
      unbounded({1}), OUOptions().eps_init(2.0).eps_end(1.0).annealing_num_steps(4));
  explore->step(3);
  EXPECT_NEAR(explore->eps(), 1.25, 1e-12);
  explore->step(3);
  EXPECT_DOUBLE_EQ(explore->eps(), 1.0);
}

TEST(OrnsteinUhlenbeckProcessModuleTest, RejectsInvalidOptions) {
  EXPECT_THAT([] { OrnsteinUhlenbeckProcessModule module(specs::TensorSpecPtr{}); },
              ThrowsMessage<ValueError>(HasSubstr("action spec is null")));
  EXPECT_THAT([] { OrnsteinUhlenbeckProcessModule(one_hot(3)); },
              ThrowsMessage<ValueError>(AllOf(HasSubstr("OrnsteinUhlenbeckProcessModule"),
                                              HasSubstr("OneHot(shape=[3]) is discrete"))));
  EXPECT_THAT([] { OrnsteinUhlenbeckProcessModule(unbounded({1}), OUOptions().dt(0.0)); },
              ThrowsMessage<ValueError>(HasSubstr("dt is 0.0; it must be > 0")));
  EXPECT_THAT([] { OrnsteinUhlenbeckProcessModule(unbounded({1}), OUOptions().sigma(-0.2)); },
              ThrowsMessage<ValueError>(HasSubstr("sigma is -0.2")));
  EXPECT_THAT([] { OrnsteinUhlenbeckProcessModule(unbounded({1}), OUOptions().theta(-1.0)); },
              ThrowsMessage<ValueError>(HasSubstr("theta is -1.0")));
  EXPECT_THAT(
      [] { OrnsteinUhlenbeckProcessModule(unbounded({1}), OUOptions().sigma(0.2).sigma_min(0.3)); },
      ThrowsMessage<ValueError>(
          AllOf(HasSubstr("sigma_min is 0.3"), HasSubstr("[0, sigma] = [0, 0.2]"))));
  EXPECT_THAT(
      [] { OrnsteinUhlenbeckProcessModule(unbounded({1}), OUOptions().n_steps_annealing(0)); },
      ThrowsMessage<ValueError>(HasSubstr("n_steps_annealing is 0")));
  EXPECT_THAT(
      [] { OrnsteinUhlenbeckProcessModule(unbounded({1}), OUOptions().eps_init(0.05)); },
      ThrowsMessage<ValueError>(HasSubstr("eps_end (0.1) is greater than eps_init (0.05)")));
}

TEST(OrnsteinUhlenbeckProcessModuleTest, RejectsX0ThatDoesNotBroadcastToTheSpec) {
  EXPECT_THAT(
      [] { OrnsteinUhlenbeckProcessModule(unbounded({2}), OUOptions().x0(torch::zeros({3}))); },
      ThrowsMessage<ShapeError>(
          AllOf(HasSubstr("x0 has shape [3]"), HasSubstr("spec's shape [2]"))));
}

TEST(OrnsteinUhlenbeckProcessModuleTest, ForwardErrorsLeaveTensorDictUnchanged) {
  OrnsteinUhlenbeckProcessModule explore(unbounded({2}));
  SetInteractionType guard(InteractionType::kRandom);

  auto missing = TensorDict({{"obs", torch::zeros({3})}}, {3});
  EXPECT_THAT([&] { explore(missing); },
              ThrowsMessage<KeyError>(AllOf(HasSubstr("OrnsteinUhlenbeckProcessModule::forward"),
                                            HasSubstr("'action'"), HasSubstr("available keys"))));

  const auto action = torch::zeros({3, 2});
  auto bad_init =
      TensorDict({{"action", action}, {"is_init", torch::zeros({3, 2}, torch::kBool)}}, {3});
  EXPECT_THAT([&] { explore(bad_init); },
              ThrowsMessage<ShapeError>(AllOf(HasSubstr("is_init 'is_init' has shape [3, 2]"),
                                              HasSubstr("expected [3, 1] or [3]"))));
  EXPECT_FALSE(bad_init.contains(kOuStepsKey));

  auto stale = TensorDict({{"action", action},
                           {kOuPrevNoiseKey, torch::zeros({3, 5})},
                           {kOuStepsKey, torch::zeros({3}, torch::kLong)}},
                          {3});
  EXPECT_THAT([&] { explore(stale); },
              ThrowsMessage<ShapeError>(AllOf(HasSubstr("'_ou_prev_noise' has shape [3, 5]"),
                                              HasSubstr("action has shape [3, 2]"))));
  EXPECT_TRUE(stale.get("action").is_same(action));
  EXPECT_TRUE(torch::equal(stale.get(kOuStepsKey), torch::zeros({3}, torch::kLong)));

  auto wrong = action_td(torch::zeros({3, 4}));
  EXPECT_THAT([&] { explore(wrong); },
              ThrowsMessage<ShapeError>(HasSubstr("action 'action' has shape [3, 4]")));
}

TEST(OrnsteinUhlenbeckProcessModuleTest, PrintsItsSettings) {
  OrnsteinUhlenbeckProcessModule explore(box(-1, 1, {6}), OUOptions().sigma_min(0.05));
  EXPECT_EQ(explore->to_string(),
            "OrnsteinUhlenbeckProcessModule(eps=1.0, eps_init=1.0, eps_end=0.1, "
            "annealing_num_steps=1000, theta=0.15, mu=0.0, sigma=0.2, dt=0.01, sigma_min=0.05, "
            "n_steps_annealing=1000, action_key='action', is_init_key='is_init', safe=True, "
            "spec=BoundedContinuous(shape=[6]))");
}

TEST(OrnsteinUhlenbeckProcessModuleTest, SaveAndLoadKeepEps) {
  OrnsteinUhlenbeckProcessModule saved(unbounded({1}), OUOptions().annealing_num_steps(10));
  saved->step(4);
  std::stringstream buffer;
  torch::save(saved, buffer);
  OrnsteinUhlenbeckProcessModule loaded(unbounded({1}), OUOptions().annealing_num_steps(10));
  torch::load(loaded, buffer);
  EXPECT_NEAR(loaded->eps(), 1.0 - 4 * 0.09, 1e-12);
}

// ==== ExplorationModuleBase, derived as a user would ============================================

// Adds the current scale to every action element: the smallest module of one's own.
class ShiftModuleImpl : public ExplorationModuleBase {
 public:
  ShiftModuleImpl(specs::TensorSpecPtr spec, double init, double end, int64_t steps)
      : ExplorationModuleBase("ShiftModule", std::move(spec), NestedKey("action"),
                              ActionKind::kContinuous, {"shift", init, end, steps, 10.0}) {
    set_keys({NestedKey("action")}, {NestedKey("action")});
  }
  double shift() const { return scale(); }
  int calls = 0;

 protected:
  void explore(const TensorDict& /*tensordict*/, const TensorDict& tensordict_out,
               const torch::Tensor& action) override {
    ++calls;
    tensordict_out.set(action_key(), action + shift());
  }
  void print_to(std::ostream& stream) const override { stream << name(); }
};
TORCH_MODULE(ShiftModule);

TEST(ExplorationModuleBaseTest, ASubclassExploresOnlyUnderRandomInteraction) {
  ShiftModule explore(unbounded({2}), 1.0, 0.0, 4);
  auto td = action_td(torch::zeros({3, 2}));
  explore(td);
  EXPECT_EQ(explore->calls, 0);
  EXPECT_TRUE(torch::equal(td.get("action"), torch::zeros({3, 2})));
  SetInteractionType guard(InteractionType::kRandom);
  explore(td);
  EXPECT_EQ(explore->calls, 1);
  EXPECT_TRUE(torch::equal(td.get("action"), torch::ones({3, 2})));
}

TEST(ExplorationModuleBaseTest, ASubclassGetsTheChecksBeforeExplore) {
  ShiftModule explore(unbounded({2}), 1.0, 0.0, 4);
  SetInteractionType guard(InteractionType::kRandom);
  auto missing = TensorDict({{"observation", torch::zeros({3, 2})}}, {3});
  EXPECT_THAT([&] { explore(missing); },
              ThrowsMessage<KeyError>(AllOf(HasSubstr("ShiftModule"), HasSubstr("action"))));
  auto wrong = action_td(torch::zeros({3, 5}));
  EXPECT_THAT([&] { explore(wrong); },
              ThrowsMessage<ShapeError>(HasSubstr("ShiftModule::forward: action 'action' has "
                                                  "shape [3, 5]")));
  auto integer = action_td(torch::zeros({3, 2}, torch::kLong));
  EXPECT_THAT([&] { explore(integer); }, ThrowsMessage<TypeError>(HasSubstr("floating")));
  EXPECT_EQ(explore->calls, 0);
}

TEST(ExplorationModuleBaseTest, TheScaleIsABufferAnnealedByStep) {
  ShiftModule explore(unbounded({1}), 1.0, 0.2, 4);
  EXPECT_EQ(explore->named_buffers().size(), 1u);
  EXPECT_TRUE(explore->named_buffers().contains("shift"));
  explore->step(2);
  EXPECT_NEAR(explore->shift(), 0.6, 1e-12);
  explore->step(10);
  EXPECT_NEAR(explore->shift(), 0.2, 1e-12);
  EXPECT_THAT([&] { explore->step(-1); },
              ThrowsMessage<ValueError>(HasSubstr("ShiftModule::step: frames is -1")));
}

TEST(ExplorationModuleBaseTest, TheBaseChecksTheSpecAndTheSchedule) {
  EXPECT_THAT([] { ShiftModule(nullptr, 1.0, 0.0, 4); },
              ThrowsMessage<ValueError>(HasSubstr("ShiftModule: the action spec is null")));
  EXPECT_THAT([] { ShiftModule(categorical(3), 1.0, 0.0, 4); },
              ThrowsMessage<ValueError>(HasSubstr("is discrete")));
  EXPECT_THAT([] { ShiftModule(unbounded({1}), 11.0, 0.0, 4); },
              ThrowsMessage<ValueError>(HasSubstr("shift_init is 11.0; it must be in [0, 10]")));
  EXPECT_THAT([] { ShiftModule(unbounded({1}), 0.5, 0.8, 4); },
              ThrowsMessage<ValueError>(HasSubstr("shift_end (0.8) is greater than shift_init")));
  EXPECT_THAT([] { ShiftModule(unbounded({1}), 1.0, 0.0, 0); },
              ThrowsMessage<ValueError>(HasSubstr("annealing_num_steps is 0")));
}

}  // namespace
}  // namespace tdrl::modules
