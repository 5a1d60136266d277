#include <tensordict/nn/functional.h>

#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <tensordict/errors.h>
#include <tensordict/tensor_dict.h>

namespace tensordict::nn {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kMembers = 4;

// Linear, LayerNorm (affine, randomised so members differ), Tanh, Linear, ReLU, Linear.
torch::nn::Sequential make_mlp(int64_t in = 3, int64_t hidden = 8, int64_t out = 2) {
  torch::nn::Sequential mlp(torch::nn::Linear(in, hidden),
                            torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden})),
                            torch::nn::Tanh(), torch::nn::Linear(hidden, hidden), torch::nn::ReLU(),
                            torch::nn::Linear(hidden, out));
  torch::NoGradGuard no_grad;
  auto* norm = mlp[1]->as<torch::nn::LayerNorm>();
  norm->weight.normal_(1.0, 0.3);
  norm->bias.normal_(0.0, 0.3);
  return mlp;
}

std::vector<torch::nn::Sequential> make_members(int64_t n) {
  std::vector<torch::nn::Sequential> members;
  for (int64_t i = 0; i < n; ++i) members.push_back(make_mlp());
  return members;
}

// The reference: each member module called on its own input.
torch::Tensor call_each(std::vector<torch::nn::Sequential>& members,
                        const std::function<torch::Tensor(int64_t)>& input_of) {
  std::vector<torch::Tensor> outs;
  for (int64_t i = 0; i < static_cast<int64_t>(members.size()); ++i)
    outs.push_back(members[i]->forward(input_of(i)));
  return torch::stack(outs);
}

bool close(const torch::Tensor& a, const torch::Tensor& b) {
  return a.sizes() == b.sizes() && torch::allclose(a, b, 1e-5, 1e-6);
}

// ---- stack_params / make_ensemble_params -----------------------------------------------------

TEST(StackParamsTest, StacksTheParamsOfNModulesIntoANTensorDictOfLeaves) {
  torch::manual_seed(0);
  auto members = make_members(kMembers);
  TensorDict stacked = make_ensemble_params(members);
  EXPECT_EQ(stacked.batch_size(), (BatchSize{kMembers}));
  EXPECT_EQ(stacked.keys(true, true), from_module(members[0]).keys(true, true));
  const torch::Tensor w = stacked.get({"0", "weight"});
  EXPECT_EQ(w.sizes(), (std::vector<int64_t>{kMembers, 8, 3}));
  EXPECT_TRUE(w.is_contiguous());
  EXPECT_TRUE(w.is_leaf());
  EXPECT_TRUE(w.requires_grad());
  for (int64_t i = 0; i < kMembers; ++i) {
    EXPECT_TRUE(
        torch::equal(w[i].detach(), members[i][0]->as<torch::nn::Linear>()->weight.detach()));
    EXPECT_TRUE(torch::equal(stacked.get({"1", "bias"})[i].detach(),
                             members[i][1]->as<torch::nn::LayerNorm>()->bias.detach()));
  }
  // A copy: writing the stack leaves the members alone.
  {
    torch::NoGradGuard no_grad;
    w.zero_();
  }
  EXPECT_FALSE(
      torch::equal(members[0][0]->as<torch::nn::Linear>()->weight.detach(), torch::zeros({8, 3})));
}

TEST(StackParamsTest, BuffersStackWithoutRequiringGrad) {
  std::vector<std::shared_ptr<torch::nn::BatchNorm1dImpl>> members{
      std::make_shared<torch::nn::BatchNorm1dImpl>(3),
      std::make_shared<torch::nn::BatchNorm1dImpl>(3)};
  TensorDict stacked = make_ensemble_params(members);
  EXPECT_EQ(stacked.get("running_mean").sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_FALSE(stacked.get("running_mean").requires_grad());
  EXPECT_EQ(stacked.get("num_batches_tracked").scalar_type(), torch::kLong);
  EXPECT_TRUE(stacked.get("weight").requires_grad());
}

TEST(StackParamsTest, KeepsTheMembersBatchSizeAfterTheMemberDim) {
  TensorDict a({{"w", torch::zeros({5, 2})}}, {5});
  TensorDict b({{"w", torch::ones({5, 2})}}, {5});
  TensorDict stacked = stack_params({a, b});
  EXPECT_EQ(stacked.batch_size(), (BatchSize{2, 5}));
  EXPECT_TRUE(torch::equal(stacked.get("w")[1], torch::ones({5, 2})));
}

TEST(StackParamsTest, MembersOfDifferentArchitecturesThrow) {
  torch::manual_seed(0);
  TensorDict small = from_module(make_mlp(3, 8, 2));
  TensorDict wide = from_module(make_mlp(3, 16, 2));
  EXPECT_THAT(
      [&] {
        stack_params({small, wide});
      },
      ::testing::ThrowsMessage<ShapeError>(
          ::testing::AllOf(HasSubstr("stack_params"), HasSubstr("('0', 'weight')"),
                           HasSubstr("member 1"), HasSubstr("[16, 3]"), HasSubstr("[8, 3]"))));
  TensorDict fewer = from_module(make_mlp()).exclude({{"5", "bias"}});
  EXPECT_THAT(
      [&] {
        stack_params({small, fewer});
      },
      ::testing::ThrowsMessage<KeyError>(
          ::testing::AllOf(HasSubstr("member 1 lacks key ('5', 'bias')"))));
  EXPECT_THAT(
      [&] {
        stack_params({fewer, small});
      },
      ::testing::ThrowsMessage<KeyError>(
          HasSubstr("member 1 has key ('5', 'bias') that member 0 lacks")));
  TensorDict doubled = small.to(torch::kDouble);
  EXPECT_THAT(
      [&] {
        stack_params({small, doubled});
      },
      ::testing::ThrowsMessage<TypeError>(HasSubstr("dtype Double but member 0's has Float")));
}

TEST(StackParamsTest, EmptyListThrowsValueError) {
  EXPECT_THAT([] { stack_params({}); },
              ::testing::ThrowsMessage<ValueError>(HasSubstr("no TensorDict to stack")));
}

// ---- ensemble_forward_loop ------------------------------------------------------------------

TEST(EnsembleLoopTest, OutputsEqualEachMemberCalledSeparately) {
  torch::manual_seed(0);
  auto members = make_members(kMembers);
  TensorDict stacked = make_ensemble_params(members);
  auto net = make_mlp();
  const torch::Tensor own_weight = net[0]->as<torch::nn::Linear>()->weight.detach().clone();
  const torch::Tensor x = torch::randn({kMembers, 5, 3});
  const torch::Tensor out =
      ensemble_forward_loop(net, stacked, [&](int64_t i) { return net->forward(x[i]); });
  EXPECT_EQ(out.sizes(), (std::vector<int64_t>{kMembers, 5, 2}));
  EXPECT_TRUE(close(out, call_each(members, [&](int64_t i) { return x[i]; }).detach()));
  EXPECT_FALSE(out.requires_grad());
  EXPECT_TRUE(torch::equal(net[0]->as<torch::nn::Linear>()->weight.detach(), own_weight));
}

TEST(EnsembleLoopTest, RestoresTheModuleWhenTheCallThrows) {
  torch::manual_seed(0);
  TensorDict stacked = make_ensemble_params(make_members(3));
  auto net = make_mlp();
  const torch::Tensor own_weight = net[0]->as<torch::nn::Linear>()->weight.detach().clone();
  EXPECT_THROW(ensemble_forward_loop(net, stacked,
                                     [&](int64_t i) -> torch::Tensor {
                                       if (i == 1) throw std::runtime_error("member failed");
                                       return net->forward(torch::zeros({3}));
                                     }),
               std::runtime_error);
  EXPECT_TRUE(torch::equal(net[0]->as<torch::nn::Linear>()->weight.detach(), own_weight));
}

TEST(EnsembleLoopTest, UnbatchedParamsOrMismatchedOutputsThrow) {
  torch::manual_seed(0);
  auto net = make_mlp();
  EXPECT_THAT(
      [&] {
        ensemble_forward_loop(net, from_module(net), [&](int64_t) { return torch::zeros({1}); });
      },
      ::testing::ThrowsMessage<ShapeError>(HasSubstr("stacked_params has batch_size []")));
  TensorDict stacked = make_ensemble_params(make_members(2));
  EXPECT_THAT(
      [&] {
        ensemble_forward_loop(net, stacked, [&](int64_t i) { return torch::zeros({i + 1}); });
      },
      ::testing::ThrowsMessage<ShapeError>(
          HasSubstr("member 1's output has shape [2] but member 0's has [1]")));
}

// ---- batched_mlp_forward --------------------------------------------------------------------

TEST(BatchedMlpTest, PerMemberInputWithExtraBatchDimsMatchesTheLoop) {
  torch::manual_seed(0);
  auto members = make_members(kMembers);
  TensorDict stacked = make_ensemble_params(members);
  auto net = make_mlp();
  const torch::Tensor own_weight = net[0]->as<torch::nn::Linear>()->weight.detach().clone();
  const torch::Tensor x = torch::randn({kMembers, 2, 5, 3});
  const torch::Tensor batched = batched_mlp_forward(net, stacked, x);
  EXPECT_EQ(batched.sizes(), (std::vector<int64_t>{kMembers, 2, 5, 2}));
  const torch::Tensor loop =
      ensemble_forward_loop(net, stacked, [&](int64_t i) { return net->forward(x[i]); });
  EXPECT_TRUE(close(batched.detach(), loop));
  EXPECT_TRUE(torch::equal(net[0]->as<torch::nn::Linear>()->weight.detach(), own_weight));
}

TEST(BatchedMlpTest, SharedInputMatchesTheLoop) {
  torch::manual_seed(0);
  auto members = make_members(kMembers);
  TensorDict stacked = make_ensemble_params(members);
  auto net = make_mlp();
  const torch::Tensor x = torch::randn({2, 5, 3});
  const torch::Tensor batched =
      batched_mlp_forward(net, stacked, x, BatchedMlpOptions().shared_input(true));
  EXPECT_EQ(batched.sizes(), (std::vector<int64_t>{kMembers, 2, 5, 2}));
  EXPECT_TRUE(close(batched.detach(), call_each(members, [&](int64_t) { return x; }).detach()));
  // A shared [in] input without batch dims gives [N, out].
  const torch::Tensor single =
      batched_mlp_forward(net, stacked, x[0][0], BatchedMlpOptions().shared_input(true));
  EXPECT_TRUE(close(single.detach(), batched.select(1, 0).select(1, 0).detach()));
}

TEST(BatchedMlpTest, SharedInputThroughParameterFreeLayersAndBiaslessLinear) {
  torch::manual_seed(0);
  auto make = [] {
    return torch::nn::Sequential(
        torch::nn::ReLU(),
        torch::nn::LayerNorm(torch::nn::LayerNormOptions({3}).elementwise_affine(false)),
        torch::nn::Linear(torch::nn::LinearOptions(3, 4).bias(false)), torch::nn::ELU(),
        torch::nn::Identity());
  };
  std::vector<torch::nn::Sequential> members{make(), make(), make()};
  TensorDict stacked = make_ensemble_params(members);
  EXPECT_EQ(stacked.keys(true, true), (std::vector<NestedKey>{{"2", "weight"}}));
  const torch::Tensor x = torch::randn({6, 3});
  const torch::Tensor batched =
      batched_mlp_forward(members[0], stacked, x, BatchedMlpOptions().shared_input(true));
  EXPECT_TRUE(close(batched.detach(), call_each(members, [&](int64_t) { return x; }).detach()));
}

TEST(BatchedMlpTest, GradientsMatchThoseOfIndependentModules) {
  torch::manual_seed(0);
  for (const bool shared : {false, true}) {
    SCOPED_TRACE(shared ? "shared input" : "per-member input");
    auto members = make_members(kMembers);
    TensorDict stacked = make_ensemble_params(members);
    const torch::Tensor x = shared ? torch::randn({7, 3}) : torch::randn({kMembers, 7, 3});
    const torch::Tensor weights = torch::randn({kMembers, 7, 2});
    const torch::Tensor batched =
        batched_mlp_forward(members[0], stacked, x, BatchedMlpOptions().shared_input(shared));
    (batched * weights).sum().backward();
    const torch::Tensor reference =
        call_each(members, [&](int64_t i) { return shared ? x : x[i]; });
    (reference * weights).sum().backward();
    for (const auto& item : from_module(members[0]).items(true, true)) {
      const NestedKey& key = item.first;
      const torch::Tensor grad = stacked.get(key).grad();
      ASSERT_TRUE(grad.defined()) << key;
      for (int64_t i = 0; i < kMembers; ++i)
        EXPECT_TRUE(close(grad[i], from_module(members[i]).get(key).grad())) << key << " " << i;
    }
  }
}

TEST(BatchedMlpTest, DropoutInTrainingDrawsAMaskPerMember) {
  torch::manual_seed(0);
  torch::nn::Sequential net(torch::nn::Dropout(0.5));
  net->train();
  const torch::Tensor out = batched_mlp_forward(net, TensorDict::empty({3}), torch::ones({64}),
                                                BatchedMlpOptions().shared_input(true));
  EXPECT_EQ(out.sizes(), (std::vector<int64_t>{3, 64}));
  EXPECT_FALSE(torch::equal(out[0], out[1]));
  net->eval();
  const torch::Tensor eval_out = batched_mlp_forward(net, TensorDict::empty({3}), torch::ones({64}),
                                                     BatchedMlpOptions().shared_input(true));
  EXPECT_TRUE(torch::equal(eval_out, torch::ones({3, 64})));
}

TEST(BatchedMlpTest, UnsupportedModulesThrowValueErrorNamingIndexAndType) {
  torch::nn::Sequential with_prelu(torch::nn::Linear(3, 4), torch::nn::PReLU());
  EXPECT_THAT(
      [&] {
        batched_mlp_forward(
            with_prelu,
            make_ensemble_params(std::vector<torch::nn::Sequential>{with_prelu, with_prelu}),
            torch::zeros({2, 3}));
      },
      ::testing::ThrowsMessage<ValueError>(
          ::testing::AllOf(HasSubstr("module 1 ('1', torch::nn::PReLUImpl) is not supported"),
                           HasSubstr("Linear, LayerNorm"), HasSubstr("ensemble_forward_loop"))));
  torch::nn::Sequential with_flatten(torch::nn::Flatten(), torch::nn::Linear(3, 4));
  EXPECT_THAT(
      [&] {
        batched_mlp_forward(with_flatten, TensorDict::empty({2}), torch::zeros({2, 3}));
      },
      ::testing::ThrowsMessage<ValueError>(
          HasSubstr("module 0 ('0', torch::nn::FlattenImpl) is not supported")));
}

TEST(BatchedMlpTest, ParameterOfTheWrongShapeThrowsShapeErrorNamingTheKeyPath) {
  torch::manual_seed(0);
  auto net = make_mlp();
  TensorDict stacked = make_ensemble_params(make_members(3));
  stacked.set({"3", "weight"}, torch::zeros({3, 8, 7}));
  EXPECT_THAT(
      [&] {
        batched_mlp_forward(net, stacked, torch::zeros({3, 3}));
      },
      ::testing::ThrowsMessage<ShapeError>(
          ::testing::AllOf(HasSubstr("batched_mlp_forward"), HasSubstr("('3', 'weight')"),
                           HasSubstr("expected shape [3, 8, 8]"), HasSubstr("got [3, 8, 7]"))));
  EXPECT_THAT(
      [&] {
        batched_mlp_forward(net, from_module(net), torch::zeros({3, 3}));
      },
      ::testing::ThrowsMessage<ShapeError>(HasSubstr("expected [N], one entry per member")));
}

TEST(BatchedMlpTest, MissingOrUnknownKeysThrowKeyError) {
  torch::manual_seed(0);
  auto net = make_mlp();
  TensorDict missing = make_ensemble_params(make_members(2)).exclude({{"5", "bias"}});
  EXPECT_THAT(
      [&] {
        batched_mlp_forward(net, missing, torch::zeros({2, 3}));
      },
      ::testing::ThrowsMessage<KeyError>(HasSubstr("key ('5', 'bias') is missing")));
  TensorDict extra = make_ensemble_params(make_members(2));
  extra.set({"5", "gain"}, torch::zeros({2}));
  EXPECT_THAT(
      [&] {
        batched_mlp_forward(net, extra, torch::zeros({2, 3}));
      },
      ::testing::ThrowsMessage<KeyError>(::testing::AllOf(
          HasSubstr("key ('5', 'gain') names no parameter"), HasSubstr("valid names there: ["),
          HasSubstr("'weight'"), HasSubstr("'bias'"))));
  TensorDict stray = make_ensemble_params(make_members(2));
  stray.set({"2", "weight"}, torch::zeros({2, 8}));
  EXPECT_THAT(
      [&] {
        batched_mlp_forward(net, stray, torch::zeros({2, 3}));
      },
      ::testing::ThrowsMessage<KeyError>(HasSubstr("key '2' names no layer with parameters")));
}

TEST(BatchedMlpTest, InputOfTheWrongShapeThrowsShapeError) {
  torch::manual_seed(0);
  auto net = make_mlp();
  TensorDict stacked = make_ensemble_params(make_members(3));
  EXPECT_THAT(
      [&] {
        batched_mlp_forward(net, stacked, torch::zeros({5, 3}));
      },
      ::testing::ThrowsMessage<ShapeError>(::testing::AllOf(
          HasSubstr("expected [N, *batch, in] with N = 3"), HasSubstr("shared_input(true)"))));
  EXPECT_THAT(
      [&] {
        batched_mlp_forward(net, stacked, torch::zeros({3, 4}));
      },
      ::testing::ThrowsMessage<ShapeError>(
          HasSubstr("module 0 ('0', torch::nn::LinearImpl) expects 3 input features, got 4")));
}

TEST(BatchedMlpTest, DtypeOtherThanTheModulesThrowsTypeError) {
  torch::manual_seed(0);
  auto net = make_mlp();
  TensorDict stacked = make_ensemble_params(make_members(2)).to(torch::kDouble);
  EXPECT_THAT(
      [&] {
        batched_mlp_forward(net, stacked, torch::zeros({2, 3}));
      },
      ::testing::ThrowsMessage<TypeError>(::testing::AllOf(HasSubstr("('0', 'weight')"),
                                                           HasSubstr("expected dtype Float"),
                                                           HasSubstr("got Double"))));
}

}  // namespace
}  // namespace tensordict::nn
