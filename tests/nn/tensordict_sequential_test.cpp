#include <tensordict/nn/tensordict_sequential.h>

#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <tensordict/errors.h>
#include <tensordict/nn.h>
#include <tensordict/tensor_dict.h>

#include "support/tensordict_fixtures.h"

namespace tensordict::nn {
namespace {

using namespace tensordict::testing;
using Keys = std::vector<NestedKey>;

// A module copying `in` to `out` (document 003's `Mod(idn, in_keys=[in], out_keys=[out])`).
TensorDictModule idn(const char* in, const char* out) {
  return TensorDictModule([](const torch::Tensor& x) { return x; },
                          TensorDictModuleOptions().in_keys({in}).out_keys({out}));
}

TensorDictModule add_one(const char* in, const char* out) {
  return TensorDictModule([](const torch::Tensor& x) { return x + 1; },
                          TensorDictModuleOptions().in_keys({in}).out_keys({out}));
}

// ---- Document 000's transformer block ------------------------------------------------------

struct TokensToQKVImpl : torch::nn::Module {
  TokensToQKVImpl(int64_t to_dim, int64_t from_dim, int64_t latent_dim)
      : q(register_module("q", torch::nn::Linear(to_dim, latent_dim))),
        k(register_module("k", torch::nn::Linear(from_dim, latent_dim))),
        v(register_module("v", torch::nn::Linear(from_dim, latent_dim))) {}
  std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> forward(const torch::Tensor& x_to,
                                                                  const torch::Tensor& x_from) {
    return {q(x_to), k(x_from), v(x_from)};
  }
  torch::nn::Linear q, k, v;
};
TORCH_MODULE(TokensToQKV);

struct SplitHeadsImpl : torch::nn::Module {
  explicit SplitHeadsImpl(int64_t num_heads) : num_heads(num_heads) {}
  std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> forward(const torch::Tensor& q,
                                                                  const torch::Tensor& k,
                                                                  const torch::Tensor& v) {
    const int64_t batch = q.size(0), to_num = q.size(1), latent = q.size(2);
    const int64_t from_num = k.size(1), d = latent / num_heads;
    return {q.reshape({batch, to_num, num_heads, d}).transpose(1, 2),
            k.reshape({batch, from_num, num_heads, d}).transpose(1, 2),
            v.reshape({batch, from_num, num_heads, d}).transpose(1, 2)};
  }
  int64_t num_heads;
};
TORCH_MODULE(SplitHeads);

struct AttentionImpl : torch::nn::Module {
  AttentionImpl(int64_t latent_dim, int64_t to_dim)
      : out(register_module("out", torch::nn::Linear(latent_dim, to_dim))) {}
  std::tuple<torch::Tensor, torch::Tensor> forward(const torch::Tensor& q, const torch::Tensor& k,
                                                   const torch::Tensor& v) {
    const int64_t batch = q.size(0), heads = q.size(1), to_num = q.size(2), d = q.size(3);
    auto attn = torch::softmax(q.matmul(k.transpose(2, 3)) / d, -1);
    auto o = attn.matmul(v);
    return {out(o.transpose(1, 2).reshape({batch, to_num, heads * d})), attn};
  }
  torch::nn::Linear out;
};
TORCH_MODULE(Attention);

struct SkipLayerNormImpl : torch::nn::Module {
  SkipLayerNormImpl(int64_t to_len, int64_t to_dim)
      : norm(register_module(
            "layer_norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({to_len, to_dim})))) {}
  torch::Tensor forward(const torch::Tensor& x0, const torch::Tensor& x1) { return norm(x0 + x1); }
  torch::nn::LayerNorm norm;
};
TORCH_MODULE(SkipLayerNorm);

TensorDictSequential transformer_block(int64_t to_dim, int64_t to_len, int64_t from_dim,
                                       int64_t latent_dim, int64_t num_heads) {
  using O = TensorDictModuleOptions;
  torch::nn::Sequential ffn(torch::nn::Linear(to_dim, 4 * to_dim), torch::nn::ReLU(),
                            torch::nn::Linear(4 * to_dim, to_dim), torch::nn::Dropout(0.2));
  return TensorDictSequential(
      TensorDictModule(TokensToQKV(to_dim, from_dim, latent_dim),
                       O().in_keys({"X_to", "X_from"}).out_keys({"Q", "K", "V"})),
      TensorDictModule(SplitHeads(num_heads),
                       O().in_keys({"Q", "K", "V"}).out_keys({"Q", "K", "V"})),
      TensorDictModule(Attention(latent_dim, to_dim),
                       O().in_keys({"Q", "K", "V"}).out_keys({"X_out", "Attn"})),
      TensorDictModule(SkipLayerNorm(to_len, to_dim),
                       O().in_keys({"X_to", "X_out"}).out_keys({"X_to"})),
      TensorDictModule(ffn, O().in_keys({"X_to"}).out_keys({"X_out"})),
      TensorDictModule(SkipLayerNorm(to_len, to_dim),
                       O().in_keys({"X_to", "X_out"}).out_keys({"X_to"})));
}

TEST(TensorDictSequentialTest, TransformerBlockWritesTheTutorialsShapes) {
  torch::manual_seed(0);
  const int64_t to_dim = 5, from_dim = 6, latent_dim = 10, to_len = 3, from_len = 10, batch = 8,
                heads = 2;
  TensorDict tokens({{"X_to", torch::randn({batch, to_len, to_dim})},
                     {"X_from", torch::randn({batch, from_len, from_dim})}},
                    {batch});
  auto block = transformer_block(to_dim, to_len, from_dim, latent_dim, heads);
  block(tokens);
  EXPECT_EQ(tokens.get("Attn").sizes(), c10::IntArrayRef({8, 2, 3, 10}));
  EXPECT_EQ(tokens.get("K").sizes(), c10::IntArrayRef({8, 2, 10, 5}));
  EXPECT_EQ(tokens.get("Q").sizes(), c10::IntArrayRef({8, 2, 3, 5}));
  EXPECT_EQ(tokens.get("V").sizes(), c10::IntArrayRef({8, 2, 10, 5}));
  EXPECT_EQ(tokens.get("X_from").sizes(), c10::IntArrayRef({8, 10, 6}));
  EXPECT_EQ(tokens.get("X_out").sizes(), c10::IntArrayRef({8, 3, 5}));
  EXPECT_EQ(tokens.get("X_to").sizes(), c10::IntArrayRef({8, 3, 5}));
  EXPECT_EQ(tokens.keys().size(), 7u);
}

TEST(TensorDictSequentialTest, TransformerBlockKeysAndParameters) {
  auto block = transformer_block(5, 3, 6, 10, 2);
  EXPECT_EQ(block->in_keys(), (Keys{"X_to", "X_from"}));
  EXPECT_EQ(block->out_keys(), (Keys{"Q", "K", "V", "X_out", "Attn", "X_to"}));
  EXPECT_EQ(block->size(), 6u);
  // q, k, v, out: 4 linears; 2 layer norms; 2 ffn linears: 8 weight/bias pairs.
  EXPECT_EQ(block->parameters().size(), 16u);
}

TEST(TensorDictSequentialTest, AnEmptyModuleHolderIsRefusedNamingItsPosition) {
  TensorDictModule linear(torch::nn::Linear(3, 2),
                          TensorDictModuleOptions().in_keys({"a"}).out_keys({"b"}));
  EXPECT_THAT([&] { TensorDictSequential(linear, TensorDictModule(nullptr)); },
              ::testing::ThrowsMessage<ValueError>(
                  ::testing::HasSubstr("TensorDictSequential: module 1 is null")));
}

TEST(TensorDictSequentialTest, TrainAndEvalPropagateToNestedModules) {
  auto block = transformer_block(5, 3, 6, 10, 2);
  block->eval();
  for (const auto& m : block->modules(/*include_self=*/true)) EXPECT_FALSE(m->is_training());
  block->train();
  for (const auto& m : block->modules(/*include_self=*/true)) EXPECT_TRUE(m->is_training());
}

// ---- Document 001's Net + Masker -----------------------------------------------------------

struct NetImpl : torch::nn::Module {
  NetImpl()
      : fc1(register_module("fc1", torch::nn::Linear(100, 50))),
        fc2(register_module("fc2", torch::nn::Linear(50, 10))) {}
  torch::Tensor forward(const torch::Tensor& x) { return fc2(torch::relu(fc1(x))); }
  torch::nn::Linear fc1, fc2;
};
TORCH_MODULE(Net);

struct MaskerImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask) {
    return torch::softmax(x * mask, 1);
  }
};
TORCH_MODULE(Masker);

TEST(TensorDictSequentialTest, NetAndMaskerReadAndWriteNestedKeys) {
  torch::manual_seed(0);
  TensorDictModule net(
      Net(), TensorDictModuleOptions().in_keys({{"input", "x"}}).out_keys({{"intermediate", "x"}}));
  TensorDictModule masker(Masker(), TensorDictModuleOptions()
                                        .in_keys({{"intermediate", "x"}, {"input", "mask"}})
                                        .out_keys({{"output", "probabilities"}}));
  TensorDictSequential module(net, masker);
  TensorDict td(
      {{"input",
        TensorDict({{"x", torch::rand({32, 100})}, {"mask", torch::randint(2, {32, 10})}}, {32})}},
      {32});
  td = module(td);
  EXPECT_EQ(td.get({"intermediate", "x"}).sizes(), c10::IntArrayRef({32, 10}));
  const auto probabilities = td.get({"output", "probabilities"});
  EXPECT_EQ(probabilities.sizes(), c10::IntArrayRef({32, 10}));
  EXPECT_TRUE(torch::allclose(probabilities.sum(1), torch::ones({32})));
  EXPECT_EQ(module->in_keys(), (Keys{{"input", "x"}, {"input", "mask"}}));
  EXPECT_EQ(module->out_keys(), (Keys{{"intermediate", "x"}, {"output", "probabilities"}}));
}

// ---- Document 003's examples ---------------------------------------------------------------

TEST(TensorDictSequentialTest, RunsModulesInOrderAndReturnsTensorsOfAllOutKeys) {
  torch::manual_seed(0);
  torch::nn::Linear linear(3, 4);
  TensorDictSequential module(
      add_one("x", "x+1"),
      TensorDictModule(linear, TensorDictModuleOptions().in_keys({"x+1"}).out_keys({"w*(x+1)+b"})));
  auto td = module(TensorDict({{"x", torch::zeros({3})}}));
  EXPECT_EQ(td.keys().size(), 3u);
  EXPECT_EQ(td.get("w*(x+1)+b").sizes(), c10::IntArrayRef({4}));
  auto outs = module->forward_tensors({torch::zeros({3})});
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_TRUE(torch::equal(outs[0], torch::ones({3})));
  EXPECT_TRUE(torch::allclose(outs[1], linear(torch::ones({3}))));
  EXPECT_EQ(module->parameters().size(), 2u);
}

TEST(TensorDictSequentialTest, SelectOutKeysRemovesIntermediateKeysAfterTheRun) {
  TensorDictSequential seq(add_one("x", "y"), add_one("y", "z"));
  seq->select_out_keys({"z"});
  auto td = seq(TensorDict({{"x", torch::zeros({})}}));
  EXPECT_EQ(td.keys(), (Keys{"x", "z"}));
  EXPECT_EQ(td.get("z").item<float>(), 2.0f);
  EXPECT_EQ(seq->out_keys(), (Keys{"z"}));
  EXPECT_EQ(seq->out_keys_source(), (Keys{"y", "z"}));

  seq->reset_out_keys();
  td = seq(TensorDict({{"x", torch::zeros({})}}));
  EXPECT_EQ(td.keys(), (Keys{"x", "y", "z"}));
}

TEST(TensorDictSequentialTest, SelectedOutKeysOptionActsLikeSelectOutKeys) {
  TensorDictSequential seq(add_one("x", "y"), add_one("y", "z"),
                           TensorDictSequentialOptions().selected_out_keys({"z"}));
  auto td = seq(TensorDict({{"x", torch::zeros({})}}));
  EXPECT_EQ(td.keys(), (Keys{"x", "z"}));
}

TEST(TensorDictSequentialTest, PartialTolerantSkipsModulesWithMissingInputs) {
  TensorDictSequential seq(add_one("a", "b"), add_one("c", "d"),
                           TensorDictSequentialOptions().partial_tolerant(true));
  auto td = seq(TensorDict({{"a", torch::zeros({})}}));
  EXPECT_TRUE(td.contains("b"));
  EXPECT_FALSE(td.contains("d"));
  EXPECT_TRUE(seq->partial_tolerant());
}

TEST(TensorDictSequentialTest, MissingInputWithoutPartialTolerantThrowsKeyError) {
  TensorDictSequential seq(add_one("a", "b"), add_one("c", "d"));
  EXPECT_THAT(
      [&] {
        seq(TensorDict({{"a", torch::zeros({})}}));
      },
      ThrowsMessage<KeyError>(
          AllOf(HasSubstr("in_key 'c' is missing"), HasSubstr("available keys: ['a', 'b']"))));
}

TEST(TensorDictSequentialTest, WritesIntoASeparateOutputAndLeavesTheInputUnchanged) {
  TensorDictSequential seq(add_one("x", "y"), add_one("y", "z"));
  TensorDict in({{"x", torch::zeros({2})}}, {2});
  TensorDict out = TensorDict::empty({2});
  auto result = seq(in, out);
  EXPECT_TRUE(result.is_same(out));
  EXPECT_EQ(in.keys(), (Keys{"x"}));
  EXPECT_EQ(out.keys(), (Keys{"y", "z"}));
  EXPECT_TRUE(torch::equal(out.get("z"), torch::full({2}, 2.0)));
}

TEST(TensorDictSequentialTest, IndexingReturnsTheSharedModules) {
  auto first = add_one("x", "y");
  TensorDictSequential seq(first, add_one("y", "z"));
  EXPECT_EQ(seq->size(), 2u);
  EXPECT_EQ(seq[0].get(), first.get());
  EXPECT_EQ(seq[1]->in_keys(), (Keys{"y"}));
  EXPECT_THAT([&] { seq[2]; }, ThrowsMessage<IndexError>(HasSubstr("sequence of 2 modules")));
}

TensorDictSequential four_module_chain() {
  return TensorDictSequential(idn("a", "b"), idn("b", "c"), idn("c", "d"), idn("a", "e"));
}

TEST(TensorDictSequentialTest, SelectSubsequenceByInKeyA) {
  auto module = four_module_chain();
  auto sub = module->select_subsequence(Keys{"a"});
  EXPECT_EQ(sub->size(), 4u);
  EXPECT_EQ(sub->in_keys(), (Keys{"a"}));
  EXPECT_EQ(sub->out_keys(), (Keys{"b", "c", "d", "e"}));
  EXPECT_EQ(sub[0].get(), module[0].get());  // modules are shared
}

TEST(TensorDictSequentialTest, SelectSubsequenceByInKeyC) {
  auto sub = four_module_chain()->select_subsequence(Keys{"c"});
  ASSERT_EQ(sub->size(), 1u);
  EXPECT_EQ(sub->in_keys(), (Keys{"c"}));
  EXPECT_EQ(sub->out_keys(), (Keys{"d"}));
}

TEST(TensorDictSequentialTest, SelectSubsequenceByOutKeyC) {
  auto sub = four_module_chain()->select_subsequence(std::nullopt, Keys{"c"});
  ASSERT_EQ(sub->size(), 2u);
  EXPECT_EQ(sub->in_keys(), (Keys{"a"}));
  EXPECT_EQ(sub->out_keys(), (Keys{"b", "c"}));
}

TEST(TensorDictSequentialTest, SelectSubsequenceByOutKeyE) {
  auto sub = four_module_chain()->select_subsequence(std::nullopt, Keys{"e"});
  ASSERT_EQ(sub->size(), 1u);
  EXPECT_EQ(sub->in_keys(), (Keys{"a"}));
  EXPECT_EQ(sub->out_keys(), (Keys{"e"}));
}

TEST(TensorDictSequentialTest, SelectSubsequencePropagatesToNestedSequences) {
  TensorDictSequential module(TensorDictSequential(idn("a", "b"), idn("b", "c")),
                              TensorDictSequential(idn("b", "d"), idn("d", "e")));
  EXPECT_EQ(module->in_keys(), (Keys{"a"}));
  EXPECT_EQ(module->out_keys(), (Keys{"b", "c", "d", "e"}));
  auto sub = module->select_subsequence(Keys{"b", "d"}, Keys{"e"});
  ASSERT_EQ(sub->size(), 1u);
  EXPECT_EQ(sub->in_keys(), (Keys{"b"}));
  EXPECT_EQ(sub->out_keys(), (Keys{"d", "e"}));
  auto inner = std::dynamic_pointer_cast<TensorDictSequentialImpl>(sub[0]);
  ASSERT_TRUE(inner);
  EXPECT_EQ(inner->size(), 2u);
  EXPECT_EQ(inner->in_keys(), (Keys{"b"}));
  EXPECT_EQ(inner->out_keys(), (Keys{"d", "e"}));
  auto td = sub(TensorDict({{"b", torch::ones({})}}));
  EXPECT_EQ(td.keys(), (Keys{"b", "d", "e"}));
}

TEST(TensorDictSequentialTest, SelectSubsequenceOfTheTransformerKeepsWhatReachesAttn) {
  auto block = transformer_block(5, 3, 6, 10, 2);
  auto sub = block->select_subsequence(std::nullopt, Keys{"Attn"});
  EXPECT_EQ(sub->size(), 3u);
  EXPECT_EQ(sub->in_keys(), (Keys{"X_to", "X_from"}));
  EXPECT_EQ(sub->out_keys(), (Keys{"Q", "K", "V", "X_out", "Attn"}));
  EXPECT_EQ(sub->parameters().size(), 8u);
}

TEST(TensorDictSequentialTest, PrintsItsModulesAndKeys) {
  TensorDictSequential seq(idn("a", "b"), idn("b", "c"));
  std::ostringstream os;
  os << seq;
  EXPECT_EQ(os.str(),
            "TensorDictSequential(\n"
            "    module=ModuleList(\n"
            "      (0): TensorDictModule(\n"
            "          module=<callable>,\n"
            "          in_keys=['a'],\n"
            "          out_keys=['b'])\n"
            "      (1): TensorDictModule(\n"
            "          module=<callable>,\n"
            "          in_keys=['b'],\n"
            "          out_keys=['c'])\n"
            "    ),\n"
            "    in_keys=['a'],\n"
            "    out_keys=['b', 'c'])");
}

TEST(TensorDictSequentialTest, SaveAndLoadRoundTripNestedParameters) {
  torch::manual_seed(0);
  auto make = [] {
    return TensorDictSequential(
        TensorDictModule(torch::nn::Linear(3, 4),
                         TensorDictModuleOptions().in_keys({"a"}).out_keys({"b"})),
        TensorDictModule(torch::nn::Linear(4, 2),
                         TensorDictModuleOptions().in_keys({"b"}).out_keys({"c"})));
  };
  auto saved = make();
  auto loaded = make();
  std::stringstream buffer;
  torch::save(saved, buffer);
  torch::load(loaded, buffer);
  const auto a = saved->named_parameters();
  const auto b = loaded->named_parameters();
  ASSERT_EQ(a.size(), 4u);
  for (const auto& item : a) EXPECT_TRUE(torch::equal(item.value(), b[item.key()]));
}

}  // namespace
}  // namespace tensordict::nn
