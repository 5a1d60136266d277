#include <tensordict/nn/functional.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <tensordict/errors.h>
#include <tensordict/tensor_dict.h>

namespace tensordict::nn {
namespace {

using ::testing::HasSubstr;

// The functional tutorial's module: Linear(3, 4), ReLU, Linear(4, 1).
torch::nn::Sequential tutorial_net() {
  return torch::nn::Sequential(torch::nn::Linear(3, 4), torch::nn::ReLU(), torch::nn::Linear(4, 1));
}

// A one-parameter module whose forward saves the parameter itself (not a view) for backward.
struct ScaleImpl : torch::nn::Module {
  ScaleImpl() : scale(register_parameter("scale", torch::full({3}, 2.0))) {}
  torch::Tensor forward(const torch::Tensor& x) { return x * scale; }
  torch::Tensor scale;
};
TORCH_MODULE(Scale);

// Independent copies of every parameter and buffer of `module`, with their storage addresses.
struct Snapshot {
  explicit Snapshot(const torch::nn::Module& module) {
    for (const auto& item : module.named_parameters()) add(item.key(), item.value());
    for (const auto& item : module.named_buffers()) add(item.key(), item.value());
  }
  void add(const std::string& name, const torch::Tensor& t) {
    entries.push_back({name, t, t.detach().clone(), t.data_ptr()});
  }
  // Expects every tensor to hold its snapshot value, in its original storage.
  void expect_unchanged() const {
    for (const auto& e : entries) {
      EXPECT_EQ(e.tensor.data_ptr(), e.data_ptr) << e.name;
      EXPECT_TRUE(torch::equal(e.tensor.detach(), e.value)) << e.name;
    }
  }
  struct Entry {
    std::string name;
    torch::Tensor tensor;
    torch::Tensor value;
    void* data_ptr;
  };
  std::vector<Entry> entries;
};

// ---- from_module --------------------------------------------------------------------------

TEST(FromModuleTest, MirrorsTheModuleTreeAndLeavesOutParameterFreeSubmodules) {
  torch::manual_seed(0);
  auto net = tutorial_net();
  TensorDict params = from_module(net);
  EXPECT_TRUE(params.batch_size().empty());
  const std::vector<NestedKey> expected{
      {"0", "weight"}, {"0", "bias"}, {"2", "weight"}, {"2", "bias"}};
  EXPECT_EQ(params.keys(/*include_nested=*/true, /*leaves_only=*/true), expected);
  EXPECT_FALSE(params.contains("1"));
  EXPECT_EQ(params.get({"0", "weight"}).sizes(), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(params.get({"2", "bias"}).sizes(), (std::vector<int64_t>{1}));
}

TEST(FromModuleTest, LeavesAreTheModuleTensorsSoInPlaceWritesChangeTheModule) {
  torch::manual_seed(0);
  auto net = tutorial_net();
  TensorDict params = from_module(net.ptr());
  auto* linear = net[0]->as<torch::nn::Linear>();
  EXPECT_EQ(params.get({"0", "weight"}).unsafeGetTensorImpl(),
            linear->weight.unsafeGetTensorImpl());
  EXPECT_TRUE(params.get({"0", "weight"}).requires_grad());
  {
    torch::NoGradGuard no_grad;
    params.set_({"0", "weight"}, torch::full({4, 3}, 0.5));
    params.get({"0", "bias"}).fill_(-1.0);
  }
  EXPECT_TRUE(torch::equal(linear->weight.detach(), torch::full({4, 3}, 0.5)));
  EXPECT_TRUE(torch::equal(linear->bias.detach(), torch::full({4}, -1.0)));
}

TEST(FromModuleTest, IncludesBuffersByDefaultAndAliasesThem) {
  torch::manual_seed(0);
  torch::nn::BatchNorm1d bn(3);
  TensorDict params = from_module(bn);
  const std::vector<NestedKey> expected{"weight", "bias", "running_mean", "running_var",
                                        "num_batches_tracked"};
  EXPECT_EQ(params.keys(), expected);
  bn->train();
  bn(torch::randn({8, 3}) + 5.0);
  // The module updated its running mean in place; the TensorDict sees it.
  EXPECT_TRUE(torch::equal(params.get("running_mean"), bn->running_mean));
  EXPECT_GT(params.get("running_mean").min().item<double>(), 0.1);
  EXPECT_EQ(params.get("num_batches_tracked").item<int64_t>(), 1);
}

TEST(FromModuleTest, IncludeBuffersFalseTakesParametersOnly) {
  torch::nn::BatchNorm1d bn(3);
  TensorDict params = from_module(bn, FromModuleOptions().include_buffers(false));
  const std::vector<NestedKey> expected{"weight", "bias"};
  EXPECT_EQ(params.keys(), expected);
}

TEST(FromModuleTest, LinearWithoutBiasHasNoBiasKey) {
  torch::nn::Linear linear(torch::nn::LinearOptions(3, 2).bias(false));
  const std::vector<NestedKey> expected{"weight"};
  EXPECT_EQ(from_module(linear).keys(), expected);
}

TEST(FromModuleTest, CloneCopiesStorageButStaysConnectedToTheParameters) {
  torch::manual_seed(0);
  torch::nn::Linear linear(3, 2);
  TensorDict clone = from_module(linear).clone();
  const torch::Tensor w = clone.get("weight");
  EXPECT_NE(w.data_ptr(), linear->weight.data_ptr());
  EXPECT_TRUE(torch::equal(w.detach(), linear->weight.detach()));
  EXPECT_TRUE(w.requires_grad());
  EXPECT_FALSE(w.is_leaf());
  w.sum().backward();
  EXPECT_TRUE(torch::equal(linear->weight.grad(), torch::ones({2, 3})));

  TensorDict independent = from_module(linear).detach().clone();
  EXPECT_FALSE(independent.get("weight").requires_grad());
  EXPECT_NE(independent.get("weight").data_ptr(), linear->weight.data_ptr());
}

// ---- to_module: swapping and restoring ----------------------------------------------------

// Python tensordict's tutorial: zeroed parameters swapped in give a zero output, and the
// module gets its parameters back when the swap ends.
TEST(ToModuleTest, ZeroedParamsGiveZeroOutputUntilTheGuardEnds) {
  torch::manual_seed(0);
  auto net = tutorial_net();
  const torch::Tensor x = torch::randn({5, 3});
  const torch::Tensor before = net->forward(x).detach();
  TensorDict params = from_module(net);
  TensorDict params_zero = params.detach().clone().zero_();
  EXPECT_TRUE((params_zero == 0).all());
  {
    ParamsGuard guard = to_module(params_zero, net);
    EXPECT_TRUE(guard.active());
    EXPECT_EQ(guard.size(), 4);
    EXPECT_TRUE(torch::equal(net->forward(x), torch::zeros({5, 1})));
  }
  EXPECT_TRUE(torch::equal(net->forward(x).detach(), before));
  EXPECT_FALSE(torch::equal(before, torch::zeros({5, 1})));
}

TEST(ToModuleTest, SwappedModuleComputesWhatAModuleHoldingThoseParamsComputes) {
  torch::manual_seed(0);
  auto a = tutorial_net();
  auto b = tutorial_net();
  const torch::Tensor x = torch::randn({5, 3});
  Snapshot snapshot(*a);
  {
    ParamsGuard guard = to_module(from_module(b), a);
    EXPECT_TRUE(torch::allclose(a->forward(x), b->forward(x)));
    // While swapped, the module's tensors share the params' storage; from_module shows them.
    EXPECT_EQ(from_module(a).get({"0", "weight"}).data_ptr(),
              b[0]->as<torch::nn::Linear>()->weight.data_ptr());
  }
  snapshot.expect_unchanged();
}

TEST(ToModuleTest, RestoreEndsTheSwapEarlyAndOnlyOnce) {
  torch::manual_seed(0);
  auto net = tutorial_net();
  Snapshot snapshot(*net);
  ParamsGuard guard = to_module(from_module(net).detach().clone().zero_(), net);
  guard.restore();
  EXPECT_FALSE(guard.active());
  snapshot.expect_unchanged();
  {
    torch::NoGradGuard no_grad;
    net[0]->as<torch::nn::Linear>()->weight.fill_(3.0);
  }
  guard.restore();  // does nothing: the write above stays
  EXPECT_TRUE(
      torch::equal(net[0]->as<torch::nn::Linear>()->weight.detach(), torch::full({4, 3}, 3.0)));
}

TEST(ToModuleTest, MovedGuardRestoresOnceFromItsNewOwner) {
  torch::manual_seed(0);
  torch::nn::Linear linear(3, 2);
  Snapshot snapshot(*linear);
  ParamsGuard outer;
  EXPECT_FALSE(outer.active());
  {
    ParamsGuard inner = to_module(from_module(linear).detach().clone().zero_(), linear);
    outer = std::move(inner);
    EXPECT_FALSE(inner.active());  // NOLINT(bugprone-use-after-move): moved-from is specified
  }
  EXPECT_TRUE(torch::equal(linear->weight.detach(), torch::zeros({2, 3})));
  outer.restore();
  snapshot.expect_unchanged();
}

TEST(ToModuleTest, NestedGuardsRestoreInReverseOrder) {
  torch::manual_seed(0);
  torch::nn::Linear linear(3, 2);
  Snapshot snapshot(*linear);
  TensorDict ones = from_module(linear).detach().clone().fill_(1.0);
  TensorDict twos = from_module(linear).detach().clone().fill_(2.0);
  {
    ParamsGuard a = to_module(ones, linear);
    {
      ParamsGuard b = to_module(twos, linear);
      EXPECT_TRUE(torch::equal(linear->weight.detach(), torch::full({2, 3}, 2.0)));
    }
    EXPECT_TRUE(torch::equal(linear->weight.detach(), torch::full({2, 3}, 1.0)));
    EXPECT_TRUE(torch::equal(linear->bias.detach(), torch::full({2}, 1.0)));
  }
  snapshot.expect_unchanged();
}

TEST(ToModuleTest, InPlaceWritesToTheModuleDuringTheSwapLandInParams) {
  torch::manual_seed(0);
  torch::nn::Linear linear(3, 2);
  TensorDict params = from_module(linear).detach().clone().zero_();
  {
    ParamsGuard guard = to_module(params, linear);
    torch::NoGradGuard no_grad;
    linear->weight.add_(1.0);
  }
  EXPECT_TRUE(torch::equal(params.get("weight"), torch::ones({2, 3})));
  EXPECT_FALSE(torch::equal(linear->weight.detach(), torch::ones({2, 3})));
}

TEST(ToModuleTest, SwapsBuffersAndRunningStatsUpdatesLandInParams) {
  torch::manual_seed(0);
  torch::nn::BatchNorm1d bn(3);
  TensorDict params = from_module(bn).detach().clone();
  params.set_("running_mean", torch::full({3}, 10.0));
  const torch::Tensor x = torch::randn({4, 3});
  bn->eval();
  {
    ParamsGuard guard = to_module(params, bn);
    EXPECT_TRUE(torch::allclose(bn(x), (x - 10.0) / std::sqrt(1.0 + 1e-5), 1e-5, 1e-5));
    bn->train();
    bn(x);
  }
  EXPECT_EQ(params.get("num_batches_tracked").item<int64_t>(), 1);
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 0);
  EXPECT_TRUE(torch::equal(bn->running_mean, torch::zeros({3})));
}

TEST(ToModuleTest, NonStrictKeepsTheModuleValueOfMissingParameters) {
  torch::manual_seed(0);
  torch::nn::Linear linear(3, 2);
  const torch::Tensor bias = linear->bias.detach().clone();
  TensorDict params({{"weight", torch::zeros({2, 3})}});
  ParamsGuard guard = to_module(params, linear, ToModuleOptions().strict(false));
  EXPECT_EQ(guard.size(), 1);
  EXPECT_TRUE(torch::equal(linear->weight.detach(), torch::zeros({2, 3})));
  EXPECT_TRUE(torch::equal(linear->bias.detach(), bias));
}

TEST(ToModuleTest, SwappingAModuleItsOwnParamsChangesNothing) {
  torch::manual_seed(0);
  auto net = tutorial_net();
  const torch::Tensor x = torch::randn({2, 3});
  const torch::Tensor before = net->forward(x).detach();
  Snapshot snapshot(*net);
  {
    ParamsGuard guard = to_module(from_module(net), net);
    EXPECT_TRUE(torch::equal(net->forward(x).detach(), before));
  }
  snapshot.expect_unchanged();
}

// ---- to_module: errors leave the module untouched -----------------------------------------

// Runs `swap` expecting an exception of type E whose message contains every part, then
// checks that `module` is unchanged.
template <class E>
void expect_swap_fails(const torch::nn::Module& module, const std::function<void()>& swap,
                       const std::vector<std::string>& parts) {
  Snapshot snapshot(module);
  try {
    swap();
    ADD_FAILURE() << "expected an exception";
  } catch (const E& e) {
    for (const auto& part : parts) EXPECT_THAT(e.what(), HasSubstr(part));
  }
  snapshot.expect_unchanged();
}

TEST(ToModuleTest, UnknownKeyThrowsKeyErrorListingValidNames) {
  torch::manual_seed(0);
  auto net = tutorial_net();
  TensorDict params = from_module(net).detach().clone().zero_();
  params.set({"2", "wieght"}, torch::zeros({1, 4}));
  expect_swap_fails<KeyError>(*net, [&] { (void)to_module(params, net); },
                              {"to_module", "('2', 'wieght')",
                               "names no parameter, buffer or submodule", "['weight', 'bias']"});
}

TEST(ToModuleTest, UnknownSubmoduleThrowsKeyError) {
  auto net = tutorial_net();
  TensorDict params = from_module(net).detach().clone();
  params.set({"7", "weight"}, torch::zeros({1}));
  expect_swap_fails<KeyError>(*net, [&] { (void)to_module(params, net); },
                              {"key '7'", "['0', '1', '2']"});
}

TEST(ToModuleTest, MissingParameterThrowsKeyErrorWhenStrict) {
  auto net = tutorial_net();
  TensorDict params = from_module(net).detach().clone().zero_();
  params.del_({"2", "bias"});
  expect_swap_fails<KeyError>(*net, [&] { (void)to_module(params, net); },
                              {"parameter ('2', 'bias')", "missing from params", "strict(false)"});
  TensorDict without_layer = from_module(net).detach().clone().zero_();
  without_layer.del_("0");
  expect_swap_fails<KeyError>(*net, [&] { (void)to_module(without_layer, net); },
                              {"parameter ('0', 'weight')"});
}

TEST(ToModuleTest, ShapeMismatchThrowsShapeErrorWithExpectedAndGot) {
  auto net = tutorial_net();
  TensorDict params = from_module(net).detach().clone().zero_();
  params.set({"0", "weight"}, torch::zeros({5, 3}));
  expect_swap_fails<ShapeError>(*net, [&] { (void)to_module(params, net); },
                                {"('0', 'weight')", "expected shape [4, 3]", "got [5, 3]"});
}

TEST(ToModuleTest, StackedParamsThrowShapeErrorSuggestingOneMember) {
  auto net = tutorial_net();
  TensorDict stacked = stack_params({from_module(net), from_module(net)});
  expect_swap_fails<ShapeError>(*net, [&] { (void)to_module(stacked, net); },
                                {"expected shape [4, 3]", "got [2, 4, 3]", "params.index({i})"});
}

TEST(ToModuleTest, DtypeMismatchThrowsTypeError) {
  auto net = tutorial_net();
  TensorDict params = from_module(net).detach().clone().zero_();
  params.set({"2", "bias"}, torch::zeros({1}, torch::kDouble));
  expect_swap_fails<TypeError>(*net, [&] { (void)to_module(params, net); },
                               {"('2', 'bias')", "expected dtype Float", "got Double"});
}

TEST(ToModuleTest, TensorWhereASubmoduleIsThrowsTypeError) {
  auto net = tutorial_net();
  TensorDict params = from_module(net).detach().clone();
  params.set("0", torch::zeros({4, 3}));
  expect_swap_fails<TypeError>(*net, [&] { (void)to_module(params, net); },
                               {"key '0' holds a tensor", "submodule", "torch::nn::LinearImpl"});
}

TEST(ToModuleTest, TensorDictWhereAParameterIsThrowsTypeError) {
  torch::nn::Linear linear(3, 2);
  TensorDict params({{"weight", {{"x", torch::zeros({1})}}}, {"bias", torch::zeros({2})}});
  expect_swap_fails<TypeError>(*linear, [&] { (void)to_module(params, linear); },
                               {"key 'weight' holds a TensorDict", "parameter", "[2, 3]"});
}

// ---- to_module: autograd ------------------------------------------------------------------

TEST(ToModuleTest, GradientsReachTheModuleParametersNotTheParamsTensors) {
  torch::manual_seed(0);
  auto a = tutorial_net();
  auto b = tutorial_net();
  const torch::Tensor x = torch::randn({5, 3});
  TensorDict params = from_module(b).detach().clone().requires_grad_();
  {
    ParamsGuard guard = to_module(params, a);
    a->forward(x).pow(2).sum().backward();
  }
  b->forward(x).pow(2).sum().backward();
  // The module's leaves got the gradient, evaluated at params' values (= b's).
  for (const char* layer : {"0", "2"}) {
    auto* la = a[std::stoi(layer)]->as<torch::nn::Linear>();
    auto* lb = b[std::stoi(layer)]->as<torch::nn::Linear>();
    ASSERT_TRUE(la->weight.grad().defined());
    EXPECT_TRUE(torch::allclose(la->weight.grad(), lb->weight.grad(), 1e-5, 1e-6));
    EXPECT_TRUE(torch::allclose(la->bias.grad(), lb->bias.grad(), 1e-5, 1e-6));
    EXPECT_FALSE(params.get({layer, "weight"}).grad().defined());
    EXPECT_FALSE(params.get({layer, "bias"}).grad().defined());
  }
}

TEST(ToModuleTest, BackwardAfterTheRestoreRaisesInsteadOfUsingRestoredValues) {
  torch::manual_seed(0);
  // Linear saves a view of its weight; Scale saves the parameter itself.
  torch::nn::Linear linear(3, 2);
  const torch::Tensor x = torch::randn({4, 3}, torch::requires_grad());
  torch::Tensor y_linear;
  {
    ParamsGuard guard = to_module(from_module(linear).detach().clone().zero_(), linear);
    y_linear = linear(x);
  }
  EXPECT_THAT([&] { y_linear.sum().backward(); },
              ::testing::ThrowsMessage<c10::Error>(HasSubstr("modified by an inplace operation")));

  Scale scale;
  torch::Tensor y_scale;
  {
    ParamsGuard guard = to_module(TensorDict({{"scale", torch::full({3}, 5.0)}}), scale);
    y_scale = scale(x);
  }
  EXPECT_THAT([&] { y_scale.sum().backward(); },
              ::testing::ThrowsMessage<c10::Error>(HasSubstr("modified by an inplace operation")));
}

TEST(ToModuleTest, GraphsBuiltBeforeTheSwapBackpropagateOnceItIsRestored) {
  torch::manual_seed(0);
  Scale scale;
  const torch::Tensor x = torch::randn({3}, torch::requires_grad());
  torch::Tensor y = scale(x);  // graph saves the original scale (2.0)
  {
    ParamsGuard guard = to_module(TensorDict({{"scale", torch::full({3}, 5.0)}}), scale);
    torch::NoGradGuard no_grad;
    EXPECT_TRUE(torch::allclose(scale(x), x.detach() * 5.0));
  }
  y.sum().backward();
  EXPECT_TRUE(torch::equal(x.grad(), torch::full({3}, 2.0)));
  EXPECT_TRUE(torch::equal(scale->scale.grad(), x.detach()));
}

TEST(ToModuleTest, BackwardOfAGraphBuiltBeforeTheSwapRaisesDuringIt) {
  torch::manual_seed(0);
  Scale scale;
  const torch::Tensor x = torch::randn({3}, torch::requires_grad());
  torch::Tensor y = scale(x);
  ParamsGuard guard = to_module(TensorDict({{"scale", torch::full({3}, 5.0)}}), scale);
  EXPECT_THAT([&] { y.sum().backward(); },
              ::testing::ThrowsMessage<c10::Error>(HasSubstr("modified by an inplace operation")));
}

}  // namespace
}  // namespace tensordict::nn
