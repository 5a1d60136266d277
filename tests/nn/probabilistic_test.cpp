#include <tensordict/nn/probabilistic.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <support/gradient_check.h>
#include <tensordict/errors.h>
#include <tensordict/nn.h>
#include <tensordict/tensor_dict.h>

#include "support/tensordict_fixtures.h"

namespace tensordict::nn {
namespace {

using namespace tensordict::testing;
using Keys = std::vector<NestedKey>;

ProbabilisticTensorDictModule normal_module(
    bool return_log_prob = false, InteractionType default_type = InteractionType::kDeterministic) {
  return ProbabilisticTensorDictModule(DistributionClass::normal(),
                                       ProbabilisticTensorDictModuleOptions()
                                           .in_keys({"loc", "scale"})
                                           .out_keys({"action"})
                                           .return_log_prob(return_log_prob)
                                           .default_interaction_type(default_type));
}

TensorDict loc_scale(int64_t batch, int64_t dim) {
  return TensorDict({{"loc", torch::linspace(-1, 1, batch * dim).reshape({batch, dim})},
                     {"scale", torch::full({batch, dim}, 0.5)}},
                    {batch});
}

// ---- Document 003's probabilistic sequence -------------------------------------------------

TEST(ProbabilisticSequentialTest, DocumentExampleWritesHiddenLogProbAndOutput) {
  torch::manual_seed(0);
  auto module1 = TensorDictModule(
      torch::nn::Linear(4, 8), TensorDictModuleOptions().in_keys({"input"}).out_keys({"params"}));
  auto normal_params =
      TensorDictModule(NormalParamExtractor(),
                       TensorDictModuleOptions().in_keys({"params"}).out_keys({"loc", "scale"}));
  ProbabilisticTensorDictSequential td_module1(
      module1, normal_params,
      ProbabilisticTensorDictModule(DistributionClass::normal(),
                                    ProbabilisticTensorDictModuleOptions()
                                        .in_keys({"loc", "scale"})
                                        .out_keys({"hidden"})
                                        .return_log_prob(true)));
  auto td_module2 = TensorDictModule(
      torch::nn::Linear(4, 8), TensorDictModuleOptions().in_keys({"hidden"}).out_keys({"output"}));
  TensorDictSequential td_module(td_module1, td_module2);

  TensorDict td({{"input", torch::randn({3, 4})}}, {3});
  td_module(td);

  EXPECT_EQ(td.keys(),
            (Keys{"input", "params", "loc", "scale", "hidden", "sample_log_prob", "output"}));
  EXPECT_EQ(td.get("hidden").sizes(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(td.get("sample_log_prob").sizes(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(td.get("output").sizes(), (std::vector<int64_t>{3, 8}));
  // The default interaction type is DETERMINISTIC: the Normal's mean.
  EXPECT_TRUE(torch::equal(td.get("hidden"), td.get("loc")));
  const auto expected_log_prob = Normal(td.get("loc"), td.get("scale")).log_prob(td.get("loc"));
  EXPECT_TRUE(torch::allclose(td.get("sample_log_prob"), expected_log_prob));
  EXPECT_EQ(td_module->in_keys(), (Keys{"input"}));
  EXPECT_EQ(td_module->out_keys(),
            (Keys{"params", "loc", "scale", "hidden", "sample_log_prob", "output"}));
}

// ---- ProbabilisticTensorDictModule: interaction types --------------------------------------

TEST(ProbabilisticModuleTest, DefaultDeterministicWritesTheMean) {
  auto td = loc_scale(4, 2);
  normal_module()(td);
  EXPECT_TRUE(torch::equal(td.get("action"), td.get("loc")));
}

TEST(ProbabilisticModuleTest, RandomDrawsSamplesWithTheDistributionsStatistics) {
  torch::manual_seed(1);
  const int64_t n = 20000;
  TensorDict td({{"loc", torch::full({n, 1}, 3.0)}, {"scale", torch::full({n, 1}, 2.0)}}, {n});
  SetInteractionType guard(InteractionType::kRandom);
  normal_module()(td);
  const auto action = td.get("action");
  // Standard error of the mean: 2 / sqrt(20000) ~ 0.014; of the std: ~0.01.
  EXPECT_NEAR(action.mean().item<double>(), 3.0, 0.06);
  EXPECT_NEAR(action.std().item<double>(), 2.0, 0.05);
}

TEST(ProbabilisticModuleTest, DefaultInteractionTypeAppliesWithoutAGuard) {
  torch::manual_seed(2);
  auto td = loc_scale(8, 3);
  normal_module(false, InteractionType::kRandom)(td);
  EXPECT_FALSE(torch::equal(td.get("action"), td.get("loc")));
  {
    SetInteractionType guard(InteractionType::kMode);
    normal_module(false, InteractionType::kRandom)(td);
    EXPECT_TRUE(torch::equal(td.get("action"), td.get("loc")));
  }
}

TEST(ProbabilisticModuleTest, ModeOfACategoricalIsTheMostProbableClass) {
  ProbabilisticTensorDictModule module(
      DistributionClass::categorical(),
      ProbabilisticTensorDictModuleOptions().in_keys({"logits"}).out_keys({"action"}));
  TensorDict td({{"logits", torch::tensor({{0.1, 2.0, -1.0}, {3.0, 0.0, 0.0}})}}, {2});
  SetInteractionType guard(InteractionType::kMode);
  module(td);
  EXPECT_TRUE(torch::equal(td.get("action"), torch::tensor({1, 0}, torch::kLong)));
}

TEST(ProbabilisticModuleTest, MeanWithoutClosedFormIsEstimatedFromSamples) {
  torch::manual_seed(3);
  ProbabilisticTensorDictModule module(DistributionClass::tanh_normal(),
                                       ProbabilisticTensorDictModuleOptions()
                                           .in_keys({"loc", "scale"})
                                           .out_keys({"action"})
                                           .n_empirical_estimate(20000));
  TensorDict td({{"loc", torch::tensor({{0.5}})}, {"scale", torch::tensor({{1.0}})}}, {1});
  SetInteractionType guard(InteractionType::kMean);
  module(td);
  // E[tanh(X)], X ~ N(0.5, 1), by quadrature on a fine grid.
  const auto x = torch::linspace(-9.5, 10.5, 200001, torch::kDouble);
  const auto density = torch::exp(-0.5 * (x - 0.5).pow(2)) / std::sqrt(2 * M_PI);
  const double expected = (torch::tanh(x) * density).sum().item<double>() * (20.0 / 200000);
  EXPECT_NEAR(td.get("action").item<double>(), expected, 0.01);
}

TEST(ProbabilisticModuleTest, MeanOfClassLabelsThrowsTypeErrorAndWritesNothing) {
  ProbabilisticTensorDictModule module(
      DistributionClass::categorical(),
      ProbabilisticTensorDictModuleOptions().in_keys({"logits"}).out_keys({"action"}));
  TensorDict td({{"logits", torch::zeros({2, 3})}}, {2});
  SetInteractionType guard(InteractionType::kMean);
  EXPECT_THAT([&] { module(td); },
              ThrowsMessage<TypeError>(HasSubstr("MEAN interaction: Categorical has no mean")));
  EXPECT_FALSE(td.contains("action"));
}

TEST(ProbabilisticModuleTest, ModeWithoutClosedFormThrowsTypeErrorAndWritesNothing) {
  ProbabilisticTensorDictModule module(DistributionClass::tanh_normal(),
                                       ProbabilisticTensorDictModuleOptions()
                                           .in_keys({"loc", "scale"})
                                           .out_keys({"action"})
                                           .return_log_prob(true));
  auto td = loc_scale(2, 2);
  SetInteractionType guard(InteractionType::kMode);
  EXPECT_THROW(module(td), TypeError);
  EXPECT_FALSE(td.contains("action"));
  EXPECT_FALSE(td.contains("sample_log_prob"));
}

TEST(ProbabilisticModuleTest, ReturnLogProbWritesTheLogProbabilityOfTheWrittenValue) {
  torch::manual_seed(4);
  auto td = loc_scale(5, 3);
  ProbabilisticTensorDictModule module(DistributionClass::independent_normal(),
                                       ProbabilisticTensorDictModuleOptions()
                                           .in_keys({"loc", "scale"})
                                           .out_keys({"action"})
                                           .return_log_prob(true)
                                           .default_interaction_type(InteractionType::kRandom));
  module(td);
  EXPECT_EQ(module->out_keys(), (Keys{"action", "sample_log_prob"}));
  const auto log_prob = td.get("sample_log_prob");
  EXPECT_EQ(log_prob.sizes(), (std::vector<int64_t>{5}));
  const auto expected =
      IndependentNormal(td.get("loc"), td.get("scale")).log_prob(td.get("action"));
  EXPECT_TRUE(torch::allclose(log_prob, expected));
  EXPECT_TRUE(torch::allclose(module->log_prob(td), expected));
}

TEST(ProbabilisticModuleTest, CustomLogProbKeyIsUsed) {
  ProbabilisticTensorDictModule module(DistributionClass::normal(),
                                       ProbabilisticTensorDictModuleOptions()
                                           .in_keys({"loc", "scale"})
                                           .out_keys({"action"})
                                           .return_log_prob(true)
                                           .log_prob_key({"stats", "action_log_prob"}));
  auto td = loc_scale(2, 2);
  module(td);
  EXPECT_TRUE(td.contains(NestedKey{"stats", "action_log_prob"}));
  EXPECT_FALSE(td.contains("sample_log_prob"));
}

TEST(ProbabilisticModuleTest, RandomValueIsAReparametrisedSampleCarryingGradients) {
  torch::manual_seed(5);
  auto loc = torch::zeros({3, 2}, torch::requires_grad());
  auto scale = torch::ones({3, 2}, torch::requires_grad());
  TensorDict td({{"loc", loc}, {"scale", scale}}, {3});
  SetInteractionType guard(InteractionType::kRandom);
  normal_module()(td);
  td.get("action").sum().backward();
  // d(loc + scale * eps)/d loc = 1; d/d scale = eps = action - loc.
  EXPECT_TRUE(torch::allclose(loc.grad(), torch::ones({3, 2})));
  EXPECT_TRUE(torch::allclose(scale.grad(), td.get("action").detach()));
}

TEST(ProbabilisticModuleTest, LogProbGradientsMatchFiniteDifferences) {
  auto module = ProbabilisticTensorDictModule(
      DistributionClass::tanh_normal(),
      ProbabilisticTensorDictModuleOptions().in_keys({"loc", "scale"}).out_keys({"action"}));
  const auto action = torch::tensor({{0.3, -0.8}}, torch::kDouble);
  tdrl_test::expect_gradients_match_finite_differences(
      [&](const std::vector<torch::Tensor>& params) {
        TensorDict td({{"loc", params[0]}, {"scale", params[1]}, {"action", action}}, {1});
        return module->log_prob(td).sum();
      },
      {torch::tensor({{0.2, -0.4}}, torch::kDouble), torch::tensor({{0.7, 1.3}}, torch::kDouble)});
}

// ---- Keys ----------------------------------------------------------------------------------

TEST(ProbabilisticModuleTest, NestedInKeysNameParametersByTheirLastElement) {
  ProbabilisticTensorDictModule module(DistributionClass::normal(),
                                       ProbabilisticTensorDictModuleOptions()
                                           .in_keys({{"params", "loc"}, {"params", "scale"}})
                                           .out_keys({{"agent", "action"}}));
  TensorDict td(
      {{"params", TensorDict({{"loc", torch::ones({2, 1})}, {"scale", torch::ones({2, 1})}}, {2})}},
      {2});
  module(td);
  EXPECT_TRUE(torch::equal(td.get({"agent", "action"}), torch::ones({2, 1})));
  EXPECT_EQ(module->in_keys(), (Keys{{"params", "loc"}, {"params", "scale"}}));
}

TEST(ProbabilisticModuleTest, InKeysMapFeedsAMaskFromAnotherKey) {
  ProbabilisticTensorDictModule module(
      DistributionClass::categorical(),
      ProbabilisticTensorDictModuleOptions()
          .in_keys_map({{"logits", NestedKey("scores")}, {"mask", NestedKey("action_mask")}})
          .out_keys({"action"})
          .default_interaction_type(InteractionType::kMode));
  TensorDict td({{"scores", torch::tensor({{5.0, 1.0, 0.0}})},
                 {"action_mask", torch::tensor({{false, true, true}})}},
                {1});
  module(td);
  EXPECT_EQ(td.get("action").item<int64_t>(), 1);
  torch::manual_seed(6);
  SetInteractionType guard(InteractionType::kRandom);
  for (int i = 0; i < 50; ++i) {
    module(td);
    EXPECT_NE(td.get("action").item<int64_t>(), 0);
  }
}

TEST(ProbabilisticModuleTest, SelectOutKeysDropsTheLogProb) {
  auto module = normal_module(/*return_log_prob=*/true);
  module->select_out_keys({"action"});
  auto td = loc_scale(2, 2);
  module(td);
  EXPECT_TRUE(td.contains("action"));
  EXPECT_FALSE(td.contains("sample_log_prob"));
}

TEST(ProbabilisticModuleTest, WritesIntoTensordictOutLeavingTheInputUnchanged) {
  auto td = loc_scale(2, 2);
  TensorDict out({}, {2});
  auto result = normal_module(true)->forward(td, out);
  EXPECT_TRUE(result.is_same(out));
  EXPECT_TRUE(out.contains("action"));
  EXPECT_TRUE(out.contains("sample_log_prob"));
  EXPECT_FALSE(td.contains("action"));
}

TEST(ProbabilisticModuleTest, ForwardTensorsReturnsValueAndLogProb) {
  auto module = normal_module(true);
  const auto outputs = module->forward_tensors({torch::zeros({2}), torch::ones({2})});
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_TRUE(torch::equal(outputs[0], torch::zeros({2})));
  EXPECT_TRUE(torch::allclose(outputs[1], torch::full({2}, -0.5 * std::log(2 * M_PI))));
}

// ---- Errors --------------------------------------------------------------------------------

TEST(ProbabilisticModuleTest, MissingInKeyThrowsKeyErrorAndWritesNothing) {
  TensorDict td({{"loc", torch::zeros({2, 2})}}, {2});
  EXPECT_THAT([&] { normal_module(true)(td); },
              ThrowsMessage<KeyError>(
                  AllOf(HasSubstr("ProbabilisticTensorDictModule(distribution_class=Normal"),
                        HasSubstr("'scale'"), HasSubstr("available keys: ['loc']"))));
  EXPECT_EQ(td.keys(), (Keys{"loc"}));
}

TEST(ProbabilisticModuleTest, InvalidParameterValueThrowsAndWritesNothing) {
  TensorDict td({{"loc", torch::zeros({2, 2})}, {"scale", torch::zeros({2, 2})}}, {2});
  EXPECT_THROW(normal_module(true)(td), ValueError);
  EXPECT_EQ(td.keys(), (Keys{"loc", "scale"}));
}

TEST(ProbabilisticModuleTest, ConstructorRejectsInKeysMissingARequiredParameter) {
  EXPECT_THAT(
      [&] {
        ProbabilisticTensorDictModule(
            DistributionClass::normal(),
            ProbabilisticTensorDictModuleOptions().in_keys({"loc"}).out_keys({"action"}));
      },
      ThrowsMessage<ValueError>(
          AllOf(HasSubstr("no in key feeds parameter 'scale' of Normal(loc, scale)"),
                HasSubstr("in_keys_map"))));
}

TEST(ProbabilisticModuleTest, ConstructorRejectsAKeyNamingNoParameter) {
  EXPECT_THAT(
      [&] {
        ProbabilisticTensorDictModule(
            DistributionClass::normal(),
            ProbabilisticTensorDictModuleOptions().in_keys({"loc", "std"}).out_keys({"action"}));
      },
      ThrowsMessage<ValueError>(HasSubstr("in key 'std' feeds parameter 'std'")));
}

TEST(ProbabilisticModuleTest, ConstructorRejectsTwoKeysForOneParameter) {
  EXPECT_THROW(ProbabilisticTensorDictModule(DistributionClass::normal(),
                                             ProbabilisticTensorDictModuleOptions()
                                                 .in_keys({"loc", {"a", "loc"}, "scale"})
                                                 .out_keys({"action"})),
               ValueError);
}

TEST(ProbabilisticModuleTest, ConstructorRequiresExactlyOneOutKey) {
  for (const auto& out_keys : {Keys{}, Keys{"a", "b"}}) {
    EXPECT_THAT(
        [&] {
          ProbabilisticTensorDictModule(
              DistributionClass::normal(),
              ProbabilisticTensorDictModuleOptions().in_keys({"loc", "scale"}).out_keys(out_keys));
        },
        ThrowsMessage<ValueError>(HasSubstr("must hold exactly one key")));
  }
}

TEST(ProbabilisticModuleTest, ConstructorRejectsLogProbKeyEqualToTheOutKey) {
  EXPECT_THROW(ProbabilisticTensorDictModule(DistributionClass::normal(),
                                             ProbabilisticTensorDictModuleOptions()
                                                 .in_keys({"loc", "scale"})
                                                 .out_keys({"x"})
                                                 .return_log_prob(true)
                                                 .log_prob_key("x")),
               ValueError);
}

TEST(ProbabilisticModuleTest, ConstructorRejectsNonPositiveEmpiricalEstimate) {
  EXPECT_THROW(ProbabilisticTensorDictModule(DistributionClass::normal(),
                                             ProbabilisticTensorDictModuleOptions()
                                                 .in_keys({"loc", "scale"})
                                                 .out_keys({"x"})
                                                 .n_empirical_estimate(0)),
               ValueError);
}

TEST(ProbabilisticModuleTest, LogProbWithoutValueThrowsKeyError) {
  auto td = loc_scale(2, 2);
  EXPECT_THAT([&] { normal_module()->log_prob(td); },
              ThrowsMessage<KeyError>(HasSubstr("the value key 'action' is missing")));
}

TEST(ProbabilisticModuleTest, PrintsKeysDistributionAndDefaults) {
  EXPECT_EQ(normal_module(true)->to_string(),
            "ProbabilisticTensorDictModule(\n"
            "    in_keys=['loc', 'scale'],\n"
            "    out_keys=['action', 'sample_log_prob'],\n"
            "    distribution_class=Normal(loc, scale),\n"
            "    default_interaction_type=DETERMINISTIC,\n"
            "    return_log_prob=True)");
}

TEST(ProbabilisticModuleTest, HasNoParameters) {
  EXPECT_TRUE(normal_module()->parameters().empty());
}

// ---- ProbabilisticTensorDictSequential -----------------------------------------------------

ProbabilisticTensorDictSequential gaussian_actor() {
  auto net = TensorDictModule(torch::nn::Linear(3, 4),
                              TensorDictModuleOptions().in_keys({"obs"}).out_keys({"params"}));
  auto extractor =
      TensorDictModule(NormalParamExtractor(),
                       TensorDictModuleOptions().in_keys({"params"}).out_keys({"loc", "scale"}));
  return ProbabilisticTensorDictSequential(
      net, extractor,
      ProbabilisticTensorDictModule(DistributionClass::tanh_normal(),
                                    ProbabilisticTensorDictModuleOptions()
                                        .in_keys({"loc", "scale"})
                                        .out_keys({"action"})
                                        .return_log_prob(true)));
}

TEST(ProbabilisticSequentialTest, GetDistRunsTheDeterministicPartFirst) {
  torch::manual_seed(7);
  auto actor = gaussian_actor();
  TensorDict td({{"obs", torch::randn({5, 3})}}, {5});
  const auto dist = actor->get_dist(td);
  EXPECT_EQ(dist->name(), "TanhNormal");
  EXPECT_EQ(dist->batch_shape().vec(), (std::vector<int64_t>{5}));
  EXPECT_TRUE(td.contains("loc"));
  EXPECT_FALSE(td.contains("action"));
}

TEST(ProbabilisticSequentialTest, LogProbScoresAStoredActionWithGradientsToTheNetwork) {
  torch::manual_seed(8);
  auto actor = gaussian_actor();
  TensorDict td({{"obs", torch::randn({5, 3})}}, {5});
  {
    SetInteractionType guard(InteractionType::kRandom);
    torch::NoGradGuard no_grad;
    actor(td);
  }
  const auto stored = td.get("sample_log_prob");
  const auto log_prob = actor->log_prob(td.exclude({"loc", "scale", "params"}));
  EXPECT_TRUE(torch::allclose(log_prob, stored, 1e-5, 1e-5));
  log_prob.sum().backward();
  for (const auto& p : actor->parameters()) {
    ASSERT_TRUE(p.grad().defined());
    EXPECT_GT(p.grad().abs().sum().item<double>(), 0.0);
  }
}

TEST(ProbabilisticSequentialTest, ProbabilisticModuleIsTheLast) {
  auto actor = gaussian_actor();
  EXPECT_EQ(actor->probabilistic_module()->sample_key(), NestedKey("action"));
  EXPECT_EQ(actor->size(), 3u);
  EXPECT_EQ(actor->in_keys(), (Keys{"obs"}));
}

TEST(ProbabilisticSequentialTest, RejectsALastModuleThatIsNotProbabilistic) {
  auto net = TensorDictModule(torch::nn::Linear(3, 4),
                              TensorDictModuleOptions().in_keys({"obs"}).out_keys({"params"}));
  EXPECT_THAT([&] { ProbabilisticTensorDictSequential seq(net, TensorDictSequentialOptions()); },
              ThrowsMessage<ValueError>(HasSubstr("the last module is a TensorDictModule")));
  EXPECT_THROW(
      std::make_shared<ProbabilisticTensorDictSequentialImpl>(TensorDictSequentialOptions()),
      ValueError);
}

TEST(ProbabilisticSequentialTest, PrintsUnderItsOwnName) {
  EXPECT_THAT(gaussian_actor()->to_string(),
              HasSubstr("ProbabilisticTensorDictSequential(\n    module=ModuleList(\n"));
}

TEST(ProbabilisticSequentialTest, ParametersAndSerialisationGoThroughTheNetwork) {
  auto actor = gaussian_actor();
  EXPECT_EQ(actor->parameters().size(), 2u);
  std::stringstream buffer;
  torch::save(actor, buffer);
  auto other = gaussian_actor();
  torch::load(other, buffer);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(torch::equal(actor->parameters()[i], other->parameters()[i]));
  }
}

// ---- DistributionClass ---------------------------------------------------------------------

TEST(DistributionClassTest, UserDefinedClassBuildsItsDistribution) {
  DistributionClass doubled("Doubled", {"loc", "scale"}, [](const DistributionParams& p) {
    return std::make_shared<Normal>(p.at("loc"), p.at("scale") * 2);
  });
  const auto dist = doubled.make({{"loc", torch::zeros({2})}, {"scale", torch::ones({2})}});
  EXPECT_TRUE(torch::allclose(dynamic_cast<Normal&>(*dist).scale(), torch::full({2}, 2.0)));
}

TEST(DistributionClassTest, MakeNamesMissingAndUnknownParameters) {
  const auto normal = DistributionClass::normal();
  EXPECT_THAT(
      [&] {
        normal.make({{"loc", torch::zeros({1})}});
      },
      ThrowsMessage<ValueError>(HasSubstr("Normal: missing parameter(s) ['scale']")));
  EXPECT_THAT(
      [&] {
        normal.make(
            {{"loc", torch::zeros({1})}, {"scale", torch::ones({1})}, {"df", torch::ones(1)}});
      },
      ThrowsMessage<ValueError>(HasSubstr("unknown parameter 'df'; accepted: ['loc', 'scale']")));
}

TEST(DistributionClassTest, ConstructorRejectsDuplicateOrMissingNames) {
  auto make = [](const DistributionParams& p) { return std::make_shared<Delta>(p.at("x")); };
  EXPECT_THROW(DistributionClass("D", {"x", "x"}, make), ValueError);
  EXPECT_THROW(DistributionClass("D", {}, make), ValueError);
  EXPECT_THROW(DistributionClass("", {"x"}, make), ValueError);
  EXPECT_THROW(DistributionClass("D", {"x"}, nullptr), ValueError);
}

TEST(DistributionClassTest, PredefinedClassesPrintTheirParameters) {
  EXPECT_EQ(printed(DistributionClass::categorical()), "Categorical(logits[, mask])");
  EXPECT_EQ(printed(DistributionClass::tanh_delta()), "TanhDelta(param)");
  EXPECT_EQ(printed(DistributionClass::bernoulli()), "Bernoulli(logits)");
}

TEST(DistributionClassTest, PredefinedClassesBuildTheirDistributions) {
  const auto logits = torch::zeros({2, 3});
  const auto loc = torch::zeros({2, 3});
  const auto scale = torch::ones({2, 3});
  EXPECT_EQ(DistributionClass::one_hot_categorical().make({{"logits", logits}})->name(),
            "OneHotCategorical");
  EXPECT_EQ(DistributionClass::truncated_normal().make({{"loc", loc}, {"scale", scale}})->name(),
            "TruncatedNormal");
  EXPECT_EQ(DistributionClass::delta().make({{"param", loc}})->name(), "Delta");
  EXPECT_EQ(DistributionClass::bernoulli().make({{"logits", logits}})->batch_shape().vec(),
            (std::vector<int64_t>{2, 3}));
}

}  // namespace
}  // namespace tensordict::nn
