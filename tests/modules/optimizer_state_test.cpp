// modules::optimizer_state: every LibTorch optimiser kind it knows continues after a round trip
// (in memory and through TensorDict::save) exactly as if uninterrupted; the layout is PyTorch's
// state_dict; a state that does not fit is refused naming the entry, the optimiser unchanged.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <functional>
#include <memory>

#include <tensordict/errors.h>

#include "support/error_message.h"
#include "support/temp_dir.h"
#include "tdrl/modules/capturable_adam.h"
#include "tdrl/modules/optimizer_state.h"
#include "tdrl/modules/optimizers.h"

namespace {

using tdrl::modules::CapturableAdam;
using tdrl::modules::load_optimizer_state;
using tdrl::modules::optimizer_state;
using tdrl::test_util::error_message;
using tensordict::TensorDict;
using ::testing::AllOf;
using ::testing::HasSubstr;

using MakeOptimizer =
    std::function<std::unique_ptr<torch::optim::Optimizer>(std::vector<torch::Tensor>)>;

torch::nn::Sequential small_net() {
  return torch::nn::Sequential(torch::nn::Linear(4, 8), torch::nn::Tanh(), torch::nn::Linear(8, 2));
}

void train(torch::nn::Sequential& net, torch::optim::Optimizer& opt, int steps) {
  torch::manual_seed(11);
  for (int i = 0; i < steps; ++i) {
    opt.zero_grad();
    torch::mse_loss(net->forward(torch::randn({16, 4})), torch::randn({16, 2})).backward();
    opt.step();
  }
}

void copy_parameters(torch::nn::Sequential& from, torch::nn::Sequential& to) {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < from->parameters().size(); ++i)
    to->parameters()[i].copy_(from->parameters()[i]);
}

// Trains `first` 25 steps, hands its state to `second` over a copy of the network (through a
// state folder when `via_disk`), then trains both 25 more steps on the same data: the
// parameters stay equal only if every part of the state (moments, step counts, options) came
// across.
void expect_continues(const MakeOptimizer& make_first, const MakeOptimizer& make_second,
                      bool via_disk) {
  torch::manual_seed(5);
  auto a = small_net();
  auto b = small_net();
  auto first = make_first(a->parameters());
  train(a, *first, 25);
  copy_parameters(a, b);
  auto second = make_second(b->parameters());
  TensorDict state = optimizer_state(*first);
  if (via_disk) {
    tensordict::testing::TempDir tmp;
    state.save((tmp / "optim"));
    state = TensorDict::load(tmp / "optim").clone();
  }
  load_optimizer_state(*second, state);
  train(a, *first, 25);
  train(b, *second, 25);
  for (size_t i = 0; i < a->parameters().size(); ++i)
    EXPECT_TRUE(torch::allclose(a->parameters()[i], b->parameters()[i], 0, 1e-7)) << "param " << i;
}

template <class Optimizer, class Options>
MakeOptimizer maker(Options options) {
  return [options](std::vector<torch::Tensor> params) {
    return std::make_unique<Optimizer>(std::move(params), options);
  };
}

TEST(OptimizerStateTest, EveryKindContinuesAsIfUninterrupted) {
  using namespace torch::optim;
  const std::vector<std::pair<std::string, MakeOptimizer>> kinds = {
      {"Adam", maker<Adam>(AdamOptions(1e-2).weight_decay(1e-3))},
      {"Adam amsgrad", maker<Adam>(AdamOptions(1e-2).amsgrad(true))},
      {"AdamW", maker<AdamW>(AdamWOptions(1e-2))},
      {"SGD nesterov", maker<SGD>(SGDOptions(1e-2).momentum(0.9).nesterov(true))},
      {"RMSprop centered", maker<RMSprop>(RMSpropOptions(1e-3).momentum(0.5).centered(true))},
      {"Adagrad", maker<Adagrad>(AdagradOptions(1e-2).lr_decay(1e-3))},
  };
  for (const auto& [name, make] : kinds) {
    SCOPED_TRACE(name);
    expect_continues(make, make, /*via_disk=*/false);
    expect_continues(make, make, /*via_disk=*/true);
  }
}

TEST(OptimizerStateTest, CapturableAdamAndAdamReadEachOthersState) {
  // CapturableAdam's step counts live on the device; they are what the state records.
  const auto options = torch::optim::AdamOptions(1e-2);
  expect_continues(maker<CapturableAdam>(options), maker<torch::optim::Adam>(options), true);
  expect_continues(maker<torch::optim::Adam>(options), maker<CapturableAdam>(options), true);
}

TEST(OptimizerStateTest, TheLayoutIsPyTorchsStateDictNumberedAcrossGroups) {
  torch::manual_seed(0);
  auto net = small_net();
  const auto params = net->parameters();  // w0, b0, w2, b2
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<torch::Tensor>{params[0], params[1]});
  groups.emplace_back(std::vector<torch::Tensor>{params[2], params[3]},
                      std::make_unique<torch::optim::AdamOptions>(3e-4));
  torch::optim::Adam adam(groups, torch::optim::AdamOptions(1e-3));
  EXPECT_EQ(optimizer_state(adam).get_tensordict("state").keys().size(), 0u);  // not stepped
  train(net, adam, 3);
  const TensorDict state = optimizer_state(adam);
  EXPECT_TRUE(torch::equal(state.get({"param_groups", "1", "params"}),
                           torch::tensor({2, 3}, torch::kInt64)));
  EXPECT_DOUBLE_EQ(state.get({"param_groups", "1", "lr"}).item<double>(), 3e-4);
  EXPECT_EQ(state.get({"param_groups", "0", "betas"}).sizes(), torch::IntArrayRef({2}));
  EXPECT_EQ(state.get({"param_groups", "0", "amsgrad"}).scalar_type(), torch::kBool);
  EXPECT_EQ(state.get({"state", "3", "step"}).item<int64_t>(), 3);
  EXPECT_EQ(state.get({"state", "2", "exp_avg"}).sizes(), params[2].sizes());
  EXPECT_FALSE(state.contains({"state", "0", "max_exp_avg_sq"}));  // no amsgrad
  // A copy: stepping on does not change what was returned.
  train(net, adam, 1);
  EXPECT_EQ(state.get({"state", "3", "step"}).item<int64_t>(), 3);
}

// The optimiser's state as an equality-comparable TensorDict, to show nothing changed.
void expect_same_state(const TensorDict& a, const TensorDict& b) {
  const auto keys = a.keys(true, true);
  ASSERT_EQ(keys.size(), b.keys(true, true).size());
  for (const auto& k : keys) EXPECT_TRUE(torch::equal(a.get(k), b.get(k))) << k.join_parts("/");
}

TEST(OptimizerStateTest, AStateThatDoesNotFitIsRefusedNamingTheEntryAndChangesNothing) {
  torch::manual_seed(0);
  auto net = small_net();
  torch::optim::Adam adam(net->parameters(), torch::optim::AdamOptions(1e-3));
  train(net, adam, 2);
  const TensorDict before = optimizer_state(adam);
  const std::string what = "the checkpoint's optimiser 'critic'";

  TensorDict wrong_shape = before.clone();
  wrong_shape.set({"state", "2", "exp_avg"}, torch::zeros({2, 3}));
  EXPECT_THAT(
      error_message<tensordict::ShapeError>([&] { load_optimizer_state(adam, wrong_shape, what); }),
      AllOf(HasSubstr(what), HasSubstr("'state/2/exp_avg' has shape [2, 3]"),
            HasSubstr("its parameter has shape [2, 8]")));
  // The entries checked before it fitted; none of them was written either.
  wrong_shape.set({"state", "0", "exp_avg"}, torch::ones({8, 4}));
  EXPECT_THROW(load_optimizer_state(adam, wrong_shape, what), tensordict::ShapeError);
  expect_same_state(optimizer_state(adam), before);

  TensorDict missing = before.clone();
  missing.del_({"state", "1", "exp_avg_sq"});
  EXPECT_THAT(
      error_message<tensordict::KeyError>([&] { load_optimizer_state(adam, missing, what); }),
      HasSubstr("'state/1' has no 'exp_avg_sq', which Adam's step reads"));

  TensorDict extra_param = before.clone();
  extra_param.set({"state", "9", "step"}, torch::scalar_tensor(1, torch::kInt64));
  EXPECT_THAT(
      error_message<tensordict::KeyError>([&] { load_optimizer_state(adam, extra_param, what); }),
      HasSubstr("'state/9' names no parameter; the optimiser has 4"));

  const TensorDict archive({{"archive", torch::zeros({16}, torch::kUInt8)}}, {});
  EXPECT_THAT(
      error_message<tensordict::KeyError>([&] { load_optimizer_state(adam, archive, what); }),
      AllOf(HasSubstr(what), HasSubstr("LibTorch archive"), HasSubstr("before 0.2")));
  expect_same_state(optimizer_state(adam), before);
}

TEST(OptimizerStateTest, AnotherKindOrAnotherModelIsRefused) {
  torch::manual_seed(0);
  auto net = small_net();
  torch::optim::SGD sgd(net->parameters(), torch::optim::SGDOptions(1e-2).momentum(0.9));
  train(net, sgd, 2);
  torch::optim::Adam adam(net->parameters());
  EXPECT_THAT(error_message<tensordict::KeyError>(
                  [&] { load_optimizer_state(adam, optimizer_state(sgd), "all"); }),
              AllOf(HasSubstr("'param_groups/0' holds"), HasSubstr("'momentum'"),
                    HasSubstr("another optimiser")));

  auto bigger = torch::nn::Sequential(torch::nn::Linear(4, 8), torch::nn::Linear(8, 8),
                                      torch::nn::Linear(8, 2));
  torch::optim::SGD other(bigger->parameters(), torch::optim::SGDOptions(1e-2).momentum(0.9));
  EXPECT_THAT(error_message<tensordict::KeyError>(
                  [&] { load_optimizer_state(other, optimizer_state(sgd), "all"); }),
              HasSubstr("numbers 4 parameters; this optimiser's group 0 has 6"));

  torch::optim::LBFGS lbfgs(net->parameters());
  EXPECT_THAT(error_message<tensordict::TypeError>([&] { optimizer_state(lbfgs); }),
              AllOf(HasSubstr("LBFGS"), HasSubstr("Adam, AdamW, SGD, RMSprop and Adagrad")));
}

// make_optimizer builds the kind its choice names with the choice's options, at the rate given
// (a separate actor rate) or the choice's own; an unknown name is refused naming the closest.
TEST(MakeOptimizerTest, BuildsTheNamedKindWithTheChoicesOptions) {
  auto net = small_net();
  using tdrl::modules::make_optimizer;
  using tdrl::modules::OptimizerChoice;
  const auto choice = OptimizerChoice().name("adamw").lr(1e-3).weight_decay(0.1).eps(1e-6);
  const auto adamw = make_optimizer(choice, net->parameters());
  const auto& options =
      static_cast<const torch::optim::AdamWOptions&>(adamw->param_groups()[0].options());
  EXPECT_NE(dynamic_cast<torch::optim::AdamW*>(adamw.get()), nullptr);
  EXPECT_DOUBLE_EQ(options.lr(), 1e-3);
  EXPECT_DOUBLE_EQ(options.weight_decay(), 0.1);
  EXPECT_DOUBLE_EQ(options.eps(), 1e-6);
  const auto actor = make_optimizer(choice, net->parameters(), 3e-4);
  EXPECT_DOUBLE_EQ(actor->param_groups()[0].options().get_lr(), 3e-4);
  for (const auto& name : tdrl::modules::optimizer_names()) {
    SCOPED_TRACE(name);
    // Every kind it builds has its state written as tensors (checkpoints rely on it).
    EXPECT_NO_THROW(
        optimizer_state(*make_optimizer(OptimizerChoice().name(name), net->parameters())));
  }
  EXPECT_THAT(error_message<tensordict::ValueError>(
                  [&] { make_optimizer(OptimizerChoice().name("adma"), net->parameters()); }),
              AllOf(HasSubstr("make_optimizer"), HasSubstr("'adma'"), HasSubstr("adam")));
}

}  // namespace
