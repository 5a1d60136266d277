#include <tdrl/modules/convnet.h>
#include <tdrl/modules/mlp.h>

#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <tensordict/errors.h>
#include <tensordict/nn/functional.h>
#include <tensordict/nn/tensordict_module.h>
#include <tensordict/tensor_dict.h>

#include "support/test_names.h"

namespace tdrl::modules {
namespace {

using namespace tdrl::testing::names;

std::vector<std::string> layer_names(const torch::nn::SequentialImpl& seq) {
  std::vector<std::string> names;
  for (const auto& child : seq.children()) names.push_back(child->name());
  return names;
}

TEST(MLPTest, BuildsLinearAndActivationLayers) {
  MLP mlp(MLPOptions(4, 2).num_cells({8, 16}));
  EXPECT_EQ(layer_names(*mlp),
            (std::vector<std::string>{"torch::nn::LinearImpl", "torch::nn::TanhImpl",
                                      "torch::nn::LinearImpl", "torch::nn::TanhImpl",
                                      "torch::nn::LinearImpl"}));
  EXPECT_EQ(mlp->forward(torch::randn({3, 5, 4})).sizes(), (Shape{3, 5, 2}));
}

TEST(MLPTest, ParametersAreNamedLikeTorchRLs) {
  MLP mlp(MLPOptions(4, 2).num_cells({8}));
  std::vector<std::string> keys;
  for (const auto& item : mlp->named_parameters()) keys.push_back(item.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
}

TEST(MLPTest, DefaultIsThreeHiddenLayersOf32) {
  MLP mlp(MLPOptions(4, 2));
  EXPECT_EQ(mlp->size(), 7u);
  EXPECT_EQ(mlp[0]->as<torch::nn::Linear>()->options.out_features(), 32);
}

TEST(MLPTest, DropoutNormAndActivationFollowEachHiddenLinearInTorchRLsOrder) {
  MLP mlp(MLPOptions(4, 2)
              .num_cells({8})
              .dropout(0.1)
              .layer_norm(true)
              .activation("relu")
              .activate_last_layer(true));
  EXPECT_EQ(layer_names(*mlp),
            (std::vector<std::string>{"torch::nn::LinearImpl", "torch::nn::DropoutImpl",
                                      "torch::nn::LayerNormImpl", "torch::nn::ReLUImpl",
                                      "torch::nn::LinearImpl", "torch::nn::DropoutImpl",
                                      "torch::nn::LayerNormImpl", "torch::nn::ReLUImpl"}));
}

TEST(MLPTest, ComputesTheLayersInOrder) {
  torch::manual_seed(0);
  MLP mlp(MLPOptions(3, 2).num_cells({5}).activation("elu"));
  const auto x = torch::randn({4, 3});
  auto l0 = mlp[0]->as<torch::nn::Linear>();
  auto l2 = mlp[2]->as<torch::nn::Linear>();
  const auto expected = torch::nn::functional::linear(
      torch::elu(torch::nn::functional::linear(x, l0->weight, l0->bias)), l2->weight, l2->bias);
  EXPECT_TRUE(torch::allclose(mlp->forward(x), expected));
}

TEST(MLPTest, LastLayerWithoutBias) {
  MLP mlp(MLPOptions(3, 2).num_cells({}).bias_last_layer(false));
  EXPECT_EQ(mlp->size(), 1u);
  EXPECT_FALSE(mlp[0]->as<torch::nn::Linear>()->bias.defined());
}

TEST(MLPTest, WrapsInATensorDictModule) {
  tensordict::nn::TensorDictModule module(
      MLP(MLPOptions(4, 2).num_cells({8})),
      tensordict::nn::TensorDictModuleOptions().in_keys({"observation"}).out_keys({"out"}));
  tensordict::TensorDict td({{"observation", torch::randn({6, 4})}}, {6});
  module(td);
  EXPECT_EQ(td.get("out").sizes(), (Shape{6, 2}));
  EXPECT_EQ(module->parameters().size(), 4u);
}

TEST(MLPTest, RejectsInvalidOptions) {
  EXPECT_THAT([&] { MLP(MLPOptions(4, 2).activation("swish")); },
              ThrowsMessage<tensordict::ValueError>(
                  HasSubstr("unknown activation 'swish'; the activations are ['")));
  EXPECT_THROW(MLP(MLPOptions(0, 2)), tensordict::ValueError);
  EXPECT_THROW(MLP(MLPOptions(4, 2).num_cells({8, 0})), tensordict::ValueError);
  EXPECT_THROW(MLP(MLPOptions(4, 2).dropout(1.0)), tensordict::ValueError);
}

TEST(MLPTest, Prints) {
  std::ostringstream os;
  MLP(MLPOptions(4, 2).num_cells({8}))->pretty_print(os);
  EXPECT_EQ(os.str(), "MLP(in_features=4, out_features=2, num_cells=[8], activation=tanh)");
}

TEST(MLPTest, StackedEnsembleRunsInOneBatchedPassWithTheMembersOutputs) {
  torch::manual_seed(1);
  std::vector<MLP> members;
  for (int i = 0; i < 4; ++i) {
    members.emplace_back(MLPOptions(3, 2).num_cells({8, 8}).layer_norm(true).activation("relu"));
  }
  const auto stacked = tensordict::nn::make_ensemble_params(members);
  EXPECT_EQ(stacked.batch_size(), (Shape{4}));
  const auto x = torch::randn({5, 3});
  const auto out = tensordict::nn::batched_mlp_forward(
      members[0]->sequential(), stacked, x, tensordict::nn::BatchedMlpOptions().shared_input(true));
  ASSERT_EQ(out.sizes(), (Shape{4, 5, 2}));
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(torch::allclose(out[i], members[i]->forward(x), 1e-5, 1e-6)) << "member " << i;
  }
}

TEST(ActivationTest, EveryNamedActivationBuildsAModule) {
  for (const auto& name : activation_names()) {
    auto module = make_activation(name);
    EXPECT_EQ(module.forward(torch::zeros({2})).sizes(), (Shape{2})) << name;
  }
}

TEST(ConvNetTest, FlattensTheLastThreeDimsForAnyBatch) {
  ConvNet net(ConvNetOptions(3).num_cells({8, 16}).kernel_sizes({3}).strides({2, 1}));
  const auto out = net->forward(torch::randn({2, 5, 3, 17, 17}));
  // 17 → (17 - 3) / 2 + 1 = 8 → 8 - 3 + 1 = 6.
  EXPECT_EQ(out.sizes(), (Shape{2, 5, 16 * 6 * 6}));
  EXPECT_EQ(net->output_shape(17, 17), (Shape{16 * 6 * 6}));
  EXPECT_EQ(net->forward(torch::randn({3, 17, 17})).sizes(), (Shape{16 * 6 * 6}));
}

// The size a ConvNet would output, from its options alone: the same as the built one's, with
// no draw from the init RNG (a network's input size is asked for before it is built).
TEST(ConvNetTest, OutputShapeFromOptionsAloneDrawsNoRandomNumbers) {
  const auto options = ConvNetOptions(3).num_cells({8, 16}).kernel_sizes({3}).strides({2, 1});
  torch::manual_seed(7);
  EXPECT_EQ(ConvNetImpl::output_shape(options, 17, 17), (Shape{16 * 6 * 6}));
  EXPECT_EQ(ConvNetImpl::output_shape(ConvNetOptions(options).squash_last_layer(false), 17, 17),
            (Shape{16, 6, 6}));
  const auto after = torch::rand({1});
  torch::manual_seed(7);
  EXPECT_TRUE(torch::equal(after, torch::rand({1})));
  EXPECT_THAT([&] { ConvNetImpl::output_shape(options, 4, 17); },
              ThrowsMessage<tensordict::ValueError>(HasSubstr("4x17 image is too small")));
  EXPECT_THAT(
      [&] {
        ConvNetImpl::output_shape(ConvNetOptions(3).strides({1, 2}), 17, 17);
      },
      ThrowsMessage<tensordict::ValueError>(HasSubstr("strides has 2 values for 3 layers")));
}

// uint8 frames (as a replay buffer stores them) are scaled into [0, 1] first: the same output
// as the float frames divided by 255, in the convolutions' dtype.
TEST(ConvNetTest, ScalesUint8ImagesByOneOver255) {
  torch::manual_seed(0);
  ConvNet net(ConvNetOptions(2).num_cells({4}).kernel_sizes({3}));
  const auto frames = torch::randint(0, 256, {5, 2, 8, 8}, torch::kUInt8);
  const auto from_uint8 = net->forward(frames);
  EXPECT_EQ(from_uint8.scalar_type(), torch::kFloat32);
  EXPECT_TRUE(torch::allclose(from_uint8, net->forward(frames.to(torch::kFloat32) / 255.0)));
  net->to(torch::kFloat64);
  EXPECT_EQ(net->forward(frames).scalar_type(), torch::kFloat64);
}

TEST(ConvNetTest, KeepsChannelsAndPixelsWithoutSquash) {
  ConvNet net(
      ConvNetOptions(1).num_cells({4}).kernel_sizes({3}).paddings({1}).squash_last_layer(false));
  EXPECT_EQ(net->forward(torch::randn({2, 1, 8, 8})).sizes(), (Shape{2, 4, 8, 8}));
  EXPECT_EQ(net->output_shape(8, 8), (Shape{4, 8, 8}));
}

TEST(ConvNetTest, RejectsWrongChannelsAndTooSmallImages) {
  ConvNet net(ConvNetOptions(3).num_cells({4}).kernel_sizes({5}));
  EXPECT_THAT(
      [&] {
        net->forward(torch::randn({2, 1, 8, 8}));
      },
      ThrowsMessage<tensordict::ShapeError>(HasSubstr("expected [*batch, 3, H, W]")));
  EXPECT_THAT(
      [&] {
        net->forward(torch::randn({2, 3, 4, 4}));
      },
      ThrowsMessage<tensordict::ValueError>(HasSubstr("a 4x4 image is too small")));
}

TEST(ConvNetTest, RejectsPerLayerListsOfTheWrongLength) {
  EXPECT_THAT(
      [&] {
        ConvNet(ConvNetOptions(3).num_cells({4, 4, 4}).strides({1, 2}));
      },
      ThrowsMessage<tensordict::ValueError>(HasSubstr("strides has 2 values for 3 layers")));
  EXPECT_THROW(ConvNet(ConvNetOptions(3).num_cells({})), tensordict::ValueError);
}

TEST(ConcatMLPTest, RunsTheMLPOnTheConcatenatedInputsAndNamesItMlp) {
  torch::manual_seed(0);
  ConcatMLP q(MLP(MLPOptions(3 + 2, 1).num_cells({4})));
  const auto a = torch::randn({5, 3}), b = torch::randn({5, 2});
  EXPECT_TRUE(torch::allclose(q(a, b), q->mlp()(torch::cat({a, b}, -1))));
  EXPECT_EQ(q(a, b).sizes(), (Shape{5, 1}));
  EXPECT_TRUE(q->named_parameters().contains("mlp.0.weight"));
}

TEST(ConcatMLPTest, InputsThatDoNotConcatenateToInFeaturesAreAShapeError) {
  ConcatMLP q(MLP(MLPOptions(5, 1)));
  EXPECT_THAT(
      [&] {
        q(torch::zeros({4, 3}), torch::zeros({4, 3}));
      },
      ThrowsMessage<tensordict::ShapeError>(
          AllOf(HasSubstr("[4, 3] and [4, 3]"), HasSubstr("in_features"))));
  EXPECT_THAT(
      [&] {
        q(torch::zeros({4, 3}), torch::zeros({2, 2}));
      },
      ThrowsMessage<tensordict::ShapeError>(HasSubstr("[4, 3] and [2, 2]")));
}

TEST(TanhBoundedMLPTest, OutputsStayInsideTheBox) {
  torch::manual_seed(0);
  TanhBoundedMLP actor(MLP(MLPOptions(3, 2)), torch::tensor({-2.0, 0.0}),
                       torch::tensor({2.0, 1.0}));
  const auto out = actor(torch::randn({100, 3}) * 100);
  EXPECT_EQ(out.sizes(), (Shape{100, 2}));
  EXPECT_TRUE((out.select(1, 0) >= -2).all().item<bool>());
  EXPECT_TRUE((out.select(1, 0) <= 2).all().item<bool>());
  EXPECT_TRUE((out.select(1, 1) >= 0).all().item<bool>());
  EXPECT_TRUE((out.select(1, 1) <= 1).all().item<bool>());
  // tanh(0) = 0 maps to the middle of the box.
  TanhBoundedMLP zero(MLP(MLPOptions(3, 1)), torch::tensor(-4.0), torch::tensor(2.0));
  {
    torch::NoGradGuard no_grad;
    for (auto& p : zero->parameters()) p.zero_();
  }
  EXPECT_NEAR(zero(torch::ones({1, 3})).item<double>(), -1.0, 1e-6);
}

TEST(TanhBoundedMLPTest, BadBoundsAreRefusedNamingThem) {
  EXPECT_THAT([] { TanhBoundedMLP(MLP(MLPOptions(3, 2)), torch::zeros({3}), torch::ones({3})); },
              ThrowsMessage<tensordict::ShapeError>(HasSubstr("does not broadcast")));
  EXPECT_THAT(
      [] { TanhBoundedMLP(MLP(MLPOptions(3, 1)), torch::tensor(1.0), torch::tensor(-1.0)); },
      ThrowsMessage<tensordict::ValueError>(HasSubstr("low > high")));
  EXPECT_THAT(
      [] { TanhBoundedMLP(MLP(MLPOptions(3, 1)), torch::tensor(-INFINITY), torch::tensor(1.0)); },
      ThrowsMessage<tensordict::ValueError>(HasSubstr("finite")));
}

}  // namespace
}  // namespace tdrl::modules
