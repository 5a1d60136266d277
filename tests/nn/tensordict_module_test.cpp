#include <tensordict/nn/tensordict_module.h>

#include <unistd.h>

#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <tensordict/errors.h>
#include <tensordict/tensor_dict.h>

#include "support/tensordict_fixtures.h"

namespace tensordict::nn {
namespace {

using namespace tensordict::testing;

// The tutorial's two-input module: averages two linear maps.
struct MergeLinearImpl : torch::nn::Module {
  MergeLinearImpl(int64_t in_1, int64_t in_2, int64_t out)
      : linear_1(register_module("linear_1", torch::nn::Linear(in_1, out))),
        linear_2(register_module("linear_2", torch::nn::Linear(in_2, out))) {}
  torch::Tensor forward(const torch::Tensor& x_1, const torch::Tensor& x_2) {
    return (linear_1(x_1) + linear_2(x_2)) / 2;
  }
  torch::nn::Linear linear_1;
  torch::nn::Linear linear_2;
};
TORCH_MODULE(MergeLinear);

// The tutorial's one-input, two-output module.
struct MultiHeadLinearImpl : torch::nn::Module {
  MultiHeadLinearImpl(int64_t in_1, int64_t out_1, int64_t out_2)
      : linear_1(register_module("linear_1", torch::nn::Linear(in_1, out_1))),
        linear_2(register_module("linear_2", torch::nn::Linear(in_1, out_2))) {}
  std::tuple<torch::Tensor, torch::Tensor> forward(const torch::Tensor& x) {
    return {linear_1(x), linear_2(x)};
  }
  torch::nn::Linear linear_1;
  torch::nn::Linear linear_2;
};
TORCH_MODULE(MultiHeadLinear);

TensorDict tutorial_td() {
  return TensorDict({{"a", torch::randn({5, 3})}, {"b", torch::randn({5, 4, 3})}}, {5});
}

TEST(TensorDictModuleTest, LinearWritesItsOutputUnderTheOutKey) {
  torch::manual_seed(0);
  auto td = tutorial_td();
  TensorDictModule linear(torch::nn::Linear(3, 10),
                          TensorDictModuleOptions().in_keys({"a"}).out_keys({"a_out"}));
  TensorDict out = linear(td);
  EXPECT_TRUE(out.is_same(td));
  EXPECT_EQ(td.get("a_out").sizes(), c10::IntArrayRef({5, 10}));
  EXPECT_EQ(td.get("a").sizes(), c10::IntArrayRef({5, 3}));
  EXPECT_EQ(td.keys().size(), 3u);
  auto linear_module = std::dynamic_pointer_cast<torch::nn::LinearImpl>(linear->module());
  ASSERT_TRUE(linear_module);
  EXPECT_TRUE(torch::allclose(td.get("a_out"), linear_module->forward(td.get("a"))));
}

TEST(TensorDictModuleTest, LinearCanOverwriteItsInputKeyInPlace) {
  torch::manual_seed(0);
  auto td = tutorial_td();
  TensorDictModule linear(torch::nn::Linear(3, 10),
                          TensorDictModuleOptions().in_keys({"a"}).out_keys({"a"}));
  linear(td);
  EXPECT_EQ(td.get("a").sizes(), c10::IntArrayRef({5, 10}));
  EXPECT_EQ(td.keys().size(), 2u);
}

TEST(TensorDictModuleTest, MergeLinearReadsTwoInputsInOrder) {
  torch::manual_seed(0);
  auto td = tutorial_td();
  td.set("c", torch::randn({5, 4}));
  MergeLinear merge(3, 4, 10);
  TensorDictModule module(merge,
                          TensorDictModuleOptions().in_keys({"a", "c"}).out_keys({"output"}));
  module(td);
  EXPECT_EQ(td.get("output").sizes(), c10::IntArrayRef({5, 10}));
  EXPECT_TRUE(torch::allclose(td.get("output"), merge(td.get("a"), td.get("c"))));
}

TEST(TensorDictModuleTest, MultiHeadLinearWritesTwoOutputs) {
  torch::manual_seed(0);
  auto td = tutorial_td();
  TensorDictModule module(
      MultiHeadLinear(3, 4, 10),
      TensorDictModuleOptions().in_keys({"a"}).out_keys({"output_1", "output_2"}));
  module(td);
  EXPECT_EQ(td.get("output_1").sizes(), c10::IntArrayRef({5, 4}));
  EXPECT_EQ(td.get("output_2").sizes(), c10::IntArrayRef({5, 10}));
}

TEST(TensorDictModuleTest, NestedOutKeysCreateNestedTensorDicts) {
  torch::manual_seed(0);
  TensorDictModule module([](const torch::Tensor& x) { return std::make_tuple(x - 1, x + 1); },
                          TensorDictModuleOptions()
                              .in_keys({{"input", "x"}})
                              .out_keys({{"output", "x-1"}, {"output", "x+1"}}));
  TensorDict td;
  td.set({"input", "x"}, torch::zeros({}));
  module(td);
  EXPECT_EQ(td.get({"output", "x-1"}).item<float>(), -1.0f);
  EXPECT_EQ(td.get({"output", "x+1"}).item<float>(), 1.0f);
}

TEST(TensorDictModuleTest, EmptyInKeysCallsWithNoArguments) {
  torch::manual_seed(0);
  TensorDictModule module([]() { return torch::randn({3}); },
                          TensorDictModuleOptions().in_keys({}).out_keys({"x"}));
  auto td = module(TensorDict());
  EXPECT_EQ(td.get("x").sizes(), c10::IntArrayRef({3}));
}

TEST(TensorDictModuleTest, InKeysMapDispatchesByArgumentPosition) {
  TensorDictModule module(
      [](const torch::Tensor& x, const torch::Tensor& y) { return x + 2 * y; },
      TensorDictModuleOptions().in_keys_map({{"2", 1}, {"1", 0}}).out_keys({"z"}));
  EXPECT_EQ(module->in_keys(), (std::vector<NestedKey>{"1", "2"}));
  auto td = module(TensorDict({{"1", torch::ones({})}, {"2", torch::ones({}) * 2}}));
  EXPECT_EQ(td.get("z").item<float>(), 5.0f);
}

TEST(TensorDictModuleTest, InKeysMapRejectsPositionsThatAreNotARange) {
  auto make = [] {
    TensorDictModule module(
        [](const torch::Tensor& x, const torch::Tensor& y) { return x + y; },
        TensorDictModuleOptions().in_keys_map({{"1", 0}, {"2", 2}}).out_keys({"z"}));
  };
  EXPECT_THAT([&] { make(); },
              ThrowsMessage<ValueError>(AllOf(HasSubstr("'2' position 2"), HasSubstr("0..1"))));
}

TEST(TensorDictModuleTest, UnderscoreOutKeyDiscardsThatOutput) {
  TensorDictModule module(
      [](const torch::Tensor& x) { return std::make_tuple(x + 1, x + 2, x + 3); },
      TensorDictModuleOptions().in_keys({"x"}).out_keys({"_", "y", "_"}));
  auto td = module(TensorDict({{"x", torch::zeros({})}}));
  EXPECT_EQ(td.keys().size(), 2u);
  EXPECT_EQ(td.get("y").item<float>(), 2.0f);
  EXPECT_FALSE(td.contains("_"));
  EXPECT_EQ(module->out_keys(), (std::vector<NestedKey>{"y"}));
  EXPECT_EQ(module->out_keys_raw().size(), 3u);
}

TEST(TensorDictModuleTest, VectorCallableTakesAnyNumberOfInputs) {
  std::function<std::vector<torch::Tensor>(const std::vector<torch::Tensor>&)> sum_and_diff =
      [](const std::vector<torch::Tensor>& in) {
        return std::vector<torch::Tensor>{in[0] + in[1], in[0] - in[1]};
      };
  TensorDictModule module(sum_and_diff,
                          TensorDictModuleOptions().in_keys({"a", "b"}).out_keys({"s", "d"}));
  auto td = module(TensorDict({{"a", torch::full({2}, 3.0)}, {"b", torch::ones({2})}}, {2}));
  EXPECT_TRUE(torch::equal(td.get("s"), torch::full({2}, 4.0)));
  EXPECT_TRUE(torch::equal(td.get("d"), torch::full({2}, 2.0)));
}

TEST(TensorDictModuleTest, MapOutputsAreMatchedByOutKey) {
  TensorDictModule module(
      [](const torch::Tensor& x) {
        return std::map<std::string, torch::Tensor>{{"double", 2 * x}, {"half", x / 2}};
      },
      TensorDictModuleOptions().in_keys({"x"}).out_keys({"half", "double"}));
  auto td = module(TensorDict({{"x", torch::full({}, 4.0)}}));
  EXPECT_EQ(td.get("half").item<float>(), 2.0f);
  EXPECT_EQ(td.get("double").item<float>(), 8.0f);
}

TEST(TensorDictModuleTest, MapOutputWithoutAnOutKeyThrowsKeyError) {
  TensorDictModule module(
      [](const torch::Tensor& x) {
        return std::map<NestedKey, torch::Tensor>{{NestedKey("double"), 2 * x}};
      },
      TensorDictModuleOptions().in_keys({"x"}).out_keys({"triple"}));
  EXPECT_THAT(
      [&] {
        module(TensorDict({{"x", torch::zeros({})}}));
      },
      ThrowsMessage<KeyError>(
          AllOf(HasSubstr("without out key 'triple'"), HasSubstr("['double']"))));
}

TEST(TensorDictModuleTest, WritesIntoASeparateOutputTensorDict) {
  TensorDictModule module([](const torch::Tensor& x) { return x + 1; },
                          TensorDictModuleOptions().in_keys({"x"}).out_keys({"y"}));
  TensorDict in({{"x", torch::zeros({2})}}, {2});
  TensorDict out = TensorDict::empty({2});
  TensorDict result = module(in, out);
  EXPECT_TRUE(result.is_same(out));
  EXPECT_FALSE(in.contains("y"));
  EXPECT_TRUE(torch::equal(out.get("y"), torch::ones({2})));
}

TEST(TensorDictModuleTest, ForwardTensorsReturnsTheOutputs) {
  torch::manual_seed(0);
  TensorDictModule module(MultiHeadLinear(3, 4, 10),
                          TensorDictModuleOptions().in_keys({"a"}).out_keys({"o1", "o2"}));
  auto outs = module->forward_tensors({torch::randn({5, 3})});
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(outs[0].sizes(), c10::IntArrayRef({5, 4}));
  EXPECT_EQ(outs[1].sizes(), c10::IntArrayRef({5, 10}));
}

TEST(TensorDictModuleTest, ForwardTensorsRejectsAWrongNumberOfInputs) {
  TensorDictModule module([](const torch::Tensor& x) { return x; },
                          TensorDictModuleOptions().in_keys({"x"}).out_keys({"y"}));
  EXPECT_THAT(
      [&] {
        module->forward_tensors({torch::zeros({}), torch::zeros({})});
      },
      ThrowsMessage<ValueError>(HasSubstr("got 2 tensors but in_keys ['x'] has 1")));
}

TEST(TensorDictModuleTest, GRUCellReadsInputAndHidden) {
  torch::manual_seed(0);
  TensorDict td({{"input", torch::randn({3, 4})}, {"hidden", torch::randn({3, 8})}}, {3});
  torch::nn::GRUCell cell(4, 8);
  TensorDictModule module(
      cell, TensorDictModuleOptions().in_keys({"input", "hidden"}).out_keys({"output"}));
  module(td);
  EXPECT_EQ(td.get("output").sizes(), c10::IntArrayRef({3, 8}));
  EXPECT_TRUE(torch::allclose(td.get("output"), cell(td.get("input"), td.get("hidden"))));
}

TEST(TensorDictModuleTest, GRUCellWithOnlyTheInputUsesItsDefaultHidden) {
  torch::manual_seed(0);
  TensorDict td({{"input", torch::randn({3, 4})}}, {3});
  torch::nn::GRUCell cell(4, 8);
  TensorDictModule module(cell, TensorDictModuleOptions().in_keys({"input"}).out_keys({"output"}));
  module(td);
  EXPECT_TRUE(torch::allclose(td.get("output"), cell(td.get("input"))));
}

TEST(TensorDictModuleTest, TorchSequentialIsWrapped) {
  torch::manual_seed(0);
  torch::nn::Sequential net(torch::nn::Linear(3, 4), torch::nn::ReLU(), torch::nn::Linear(4, 2));
  TensorDictModule module(net, TensorDictModuleOptions().in_keys({"a"}).out_keys({"b"}));
  auto td = module(tutorial_td());
  EXPECT_EQ(td.get("b").sizes(), c10::IntArrayRef({5, 2}));
  EXPECT_EQ(module->parameters().size(), 4u);
}

TEST(TensorDictModuleTest, RegistersTheWrappedModulesParameters) {
  MergeLinear merge(3, 4, 10);
  TensorDictModule module(merge, TensorDictModuleOptions().in_keys({"a", "c"}).out_keys({"o"}));
  EXPECT_EQ(module->parameters().size(), merge->parameters().size());
  EXPECT_EQ(module->parameters().size(), 4u);
  EXPECT_EQ(module->named_parameters().contains("module.linear_1.weight"), true);
}

TEST(TensorDictModuleTest, CallableHasNoParameters) {
  TensorDictModule module([](const torch::Tensor& x) { return x; },
                          TensorDictModuleOptions().in_keys({"x"}).out_keys({"y"}));
  EXPECT_TRUE(module->parameters().empty());
}

TEST(TensorDictModuleTest, TrainAndEvalPropagateToTheWrappedModule) {
  torch::nn::Dropout dropout(0.5);
  TensorDictModule module(dropout, TensorDictModuleOptions().in_keys({"x"}).out_keys({"y"}));
  module->eval();
  EXPECT_FALSE(dropout->is_training());
  module->train();
  EXPECT_TRUE(dropout->is_training());
}

TEST(TensorDictModuleTest, SaveAndLoadRoundTripParameters) {
  torch::manual_seed(0);
  TensorDictModule saved(torch::nn::Linear(3, 10),
                         TensorDictModuleOptions().in_keys({"a"}).out_keys({"a_out"}));
  TensorDictModule loaded(torch::nn::Linear(3, 10),
                          TensorDictModuleOptions().in_keys({"a"}).out_keys({"a_out"}));
  const std::string path =
      ::testing::TempDir() + "tensordict_module_test_" + std::to_string(::getpid()) + ".pt";
  torch::save(saved, path);
  torch::load(loaded, path);
  std::remove(path.c_str());
  const auto a = saved->named_parameters();
  const auto b = loaded->named_parameters();
  ASSERT_EQ(a.size(), b.size());
  for (const auto& item : a) EXPECT_TRUE(torch::equal(item.value(), b[item.key()]));
}

TEST(TensorDictModuleTest, MissingInKeyThrowsKeyErrorNamingModuleKeyAndAvailableKeys) {
  TensorDictModule linear(torch::nn::Linear(3, 10),
                          TensorDictModuleOptions().in_keys({"x"}).out_keys({"y"}));
  EXPECT_THAT([&] { linear(tutorial_td()); },
              ThrowsMessage<KeyError>(AllOf(HasSubstr("TensorDictModule(module=Linear"),
                                            HasSubstr("in_key 'x' is missing"),
                                            HasSubstr("available keys: ['a', 'b']"))));
}

TEST(TensorDictModuleTest, WrongNumberOfOutputsThrowsValueErrorNamingBothCounts) {
  TensorDictModule module(MultiHeadLinear(3, 4, 10),
                          TensorDictModuleOptions().in_keys({"a"}).out_keys({"o1", "o2", "o3"}));
  EXPECT_THAT([&] { module(tutorial_td()); },
              ThrowsMessage<ValueError>(HasSubstr("returned 2 outputs but out_keys has 3 keys")));
}

TEST(TensorDictModuleTest, MoreInKeysThanForwardArgumentsThrowsValueError) {
  EXPECT_THAT(
      [&] {
        TensorDictModule linear(torch::nn::Linear(3, 10),
                                TensorDictModuleOptions().in_keys({"a", "b"}).out_keys({"y"}));
      },
      ThrowsMessage<ValueError>(HasSubstr("2 in_keys ['a', 'b'] but the module takes 1 tensors")));
}

TEST(TensorDictModuleTest, PrintsLikeTheTutorial) {
  TensorDictModule linear(torch::nn::Linear(3, 10),
                          TensorDictModuleOptions().in_keys({"a"}).out_keys({"a_out"}));
  std::ostringstream os;
  os << linear;
  EXPECT_EQ(os.str(),
            "TensorDictModule(\n"
            "    module=Linear(in_features=3, out_features=10, bias=true),\n"
            "    in_keys=['a'],\n"
            "    out_keys=['a_out'])");
}

TEST(TensorDictModuleTest, PrintsCallablesAndNestedKeys) {
  TensorDictModule module([](const torch::Tensor& x) { return x; },
                          TensorDictModuleOptions().in_keys({{"input", "x"}}).out_keys({"_"}));
  EXPECT_EQ(module->to_string(),
            "TensorDictModule(\n"
            "    module=<callable>,\n"
            "    in_keys=[('input', 'x')],\n"
            "    out_keys=['_'])");
}

TEST(TensorDictModuleTest, SelectOutKeysWritesOnlyTheSelectedOutputs) {
  TensorDictModule mod(
      [](const torch::Tensor& x, const torch::Tensor& y) { return std::make_tuple(x + 2, y + 2); },
      TensorDictModuleOptions().in_keys({"a", "b"}).out_keys({"c", "d"}));
  mod->select_out_keys({"d"});
  EXPECT_EQ(mod->out_keys(), (std::vector<NestedKey>{"d"}));
  EXPECT_EQ(mod->out_keys_source(), (std::vector<NestedKey>{"c", "d"}));
  auto td = mod(TensorDict({{"a", torch::zeros({})}, {"b", torch::ones({})}}));
  EXPECT_FALSE(td.contains("c"));
  EXPECT_EQ(td.get("d").item<float>(), 3.0f);
  // Dispatched tensors also return only the selected outputs (Python: tensor(3.)).
  auto outs = mod->forward_tensors({torch::zeros({}), torch::ones({})});
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].item<float>(), 3.0f);

  mod->reset_out_keys();
  td = mod(TensorDict({{"a", torch::zeros({})}, {"b", torch::ones({})}}));
  EXPECT_TRUE(td.contains("c"));
  EXPECT_TRUE(td.contains("d"));
}

TEST(TensorDictModuleTest, SelectOutKeysRejectsAnUnknownKey) {
  TensorDictModule mod([](const torch::Tensor& x) { return x; },
                       TensorDictModuleOptions().in_keys({"a"}).out_keys({"c"}));
  EXPECT_THAT([&] { mod->select_out_keys({"z"}); },
              ThrowsMessage<KeyError>(HasSubstr("'z' is not an out key; valid: ['c']")));
}

}  // namespace
}  // namespace tensordict::nn
