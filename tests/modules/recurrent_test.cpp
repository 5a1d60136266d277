// LSTMModule and GRUModule: LibTorch's LSTM/GRU arithmetic, step and sequence modes giving the
// same outputs and states, the state zeroed exactly at is_init, padded steps, and bad input.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

#include <tensordict/errors.h>
#include <tensordict/nn/tensordict_sequential.h>

#include "support/error_message.h"
#include "tdrl/modules/recurrent.h"

namespace {

using tdrl::modules::GRUModule;
using tdrl::modules::LSTMModule;
using tdrl::modules::RecurrentModuleImpl;
using tdrl::modules::RecurrentModuleOptions;
using tdrl::test_util::error_message;
using tensordict::NestedKey;
using tensordict::TensorDict;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr int64_t kB = 3, kT = 7, kIn = 5, kH = 6, kLayers = 2;

// Both kinds, as the base class the tests drive.
std::vector<std::shared_ptr<RecurrentModuleImpl>> both_kinds(int64_t layers = kLayers,
                                                             bool sequence_states = true) {
  torch::manual_seed(0);  // the same weights for every call
  const auto options =
      RecurrentModuleOptions(kIn, kH).num_layers(layers).in_key("x").out_key("y").sequence_states(
          sequence_states);
  return {LSTMModule(options).ptr(), GRUModule(options).ptr()};
}

// A [B, T] batch: inputs, is_init at each sequence's start and at a few steps inside.
TensorDict sequence_batch() {
  torch::manual_seed(1);
  auto is_init = torch::zeros({kB, kT, 1}, torch::kBool);
  is_init.index_put_({torch::indexing::Slice(), 0}, true);
  is_init.index_put_({0, 3}, true);
  is_init.index_put_({2, 5}, true);
  return TensorDict({{"x", torch::randn({kB, kT, kIn})}, {"is_init", is_init}}, {kB, kT});
}

TEST(RecurrentModuleTest, SequenceModeWithoutResetsIsLibTorchsModule) {
  for (const auto& module : both_kinds()) {
    SCOPED_TRACE(module->name());
    TensorDict batch = sequence_batch();
    batch.set("is_init", torch::zeros({kB, kT, 1}, torch::kBool));
    const auto h0 = torch::randn({kB, kT, kLayers, kH});
    const auto c0 = torch::randn({kB, kT, kLayers, kH});
    batch.set(module->hidden_keys()[0], h0);
    if (module->kind() == RecurrentModuleImpl::Kind::kLSTM) batch.set(module->hidden_keys()[1], c0);
    module->set_recurrent_mode(true);
    const TensorDict out = module->forward(batch.clone());
    // LibTorch's own module on the same weights: [L, B, H] states, batch first.
    const auto first = [](const torch::Tensor& s) {
      return s.select(1, 0).transpose(0, 1).contiguous();
    };
    torch::Tensor expected;
    if (auto* lstm = dynamic_cast<tdrl::modules::LSTMModuleImpl*>(module.get())) {
      expected =
          std::get<0>(lstm->lstm()->forward(batch.get("x"), std::make_tuple(first(h0), first(c0))));
    } else {
      auto* gru = dynamic_cast<tdrl::modules::GRUModuleImpl*>(module.get());
      expected = std::get<0>(gru->gru()->forward(batch.get("x"), first(h0)));
    }
    EXPECT_TRUE(torch::allclose(out.get("y"), expected, 1e-5, 1e-6));
  }
}

// Step by step, carrying ("next", state) into the next step, gives the sequence mode's outputs
// and states, resets inside the sequences included.
TEST(RecurrentModuleTest, StepAndSequenceModesGiveTheSameOutputsAndStates) {
  for (const auto& module : both_kinds()) {
    SCOPED_TRACE(module->name());
    const TensorDict batch = sequence_batch();
    module->set_recurrent_mode(true);
    const TensorDict sequence = module->forward(batch.clone());
    module->set_recurrent_mode(false);
    TensorDict carried = TensorDict::empty({kB});
    for (int64_t t = 0; t < kT; ++t) {
      TensorDict step = batch.index({torch::indexing::Slice(), t}).clone();
      for (const auto& key : module->hidden_keys())
        if (carried.contains(key)) step.set(key, carried.get(key));
      module->forward(step);
      EXPECT_TRUE(torch::allclose(step.get("y"), sequence.get("y").select(1, t), 1e-5, 1e-6))
          << "t=" << t;
      for (const auto& key : module->hidden_keys()) {
        const auto next = step.get(NestedKey("next").join(key));
        EXPECT_TRUE(torch::allclose(next, sequence.get(NestedKey("next").join(key)).select(1, t),
                                    1e-5, 1e-6))
            << key.to_string() << " t=" << t;
        carried.set(key, next);
      }
    }
  }
}

// Where is_init is set inside a sequence, the outputs from there are those of a sequence that
// starts there from a zero state, whatever came before.
TEST(RecurrentModuleTest, TheStateIsZeroExactlyAtIsInit) {
  for (const auto& module : both_kinds()) {
    SCOPED_TRACE(module->name());
    module->set_recurrent_mode(true);
    const TensorDict batch = sequence_batch();  // row 0 restarts at t = 3
    const TensorDict whole = module->forward(batch.clone());
    TensorDict tail =
        batch.index({torch::indexing::Slice(0, 1), torch::indexing::Slice(3)}).clone();
    const TensorDict fresh = module->forward(tail);
    EXPECT_TRUE(torch::allclose(
        fresh.get("y"),
        whole.get("y").index({torch::indexing::Slice(0, 1), torch::indexing::Slice(3)}), 1e-5,
        1e-6));
    // Before the reset, the state carried from t = 0 matters: the outputs differ.
    TensorDict shifted =
        batch.index({torch::indexing::Slice(0, 1), torch::indexing::Slice(1)}).clone();
    shifted.set("is_init", torch::zeros({1, kT - 1, 1}, torch::kBool));
    const TensorDict no_reset = module->forward(shifted);
    EXPECT_FALSE(torch::allclose(no_reset.get("y").select(1, 2), whole.get("y")[0][3], 1e-3, 1e-4));
    // A missing state is a zero state.
    TensorDict zeros = batch.clone();
    for (const auto& key : module->hidden_keys())
      zeros.set(key, torch::zeros({kB, kT, kLayers, kH}));
    EXPECT_TRUE(torch::allclose(module->forward(zeros).get("y"), whole.get("y")));
  }
}

// Without per-step states, sequence mode runs LibTorch's fused call over each reset-free
// stretch: the same outputs as the step loop, and the final state at the last step.
TEST(RecurrentModuleTest, FusedSequencesGiveTheStepLoopsOutputsAndFinalState) {
  const auto loops = both_kinds();
  const auto fuseds = both_kinds(kLayers, /*sequence_states=*/false);
  for (size_t i = 0; i < loops.size(); ++i) {
    const auto& module = loops[i];
    SCOPED_TRACE(module->name());
    module->set_recurrent_mode(true);
    fuseds[i]->set_recurrent_mode(true);
    const TensorDict batch = sequence_batch();  // resets inside rows 0 and 2
    const TensorDict loop = module->forward(batch.clone());
    const TensorDict fused = fuseds[i]->forward(batch.clone());
    EXPECT_TRUE(torch::allclose(fused.get("y"), loop.get("y"), 1e-5, 1e-6));
    for (const auto& key : module->hidden_keys()) {
      const auto next = NestedKey("next").join(key);
      EXPECT_TRUE(torch::allclose(fused.get(next).select(1, kT - 1),
                                  loop.get(next).select(1, kT - 1), 1e-5, 1e-6));
      EXPECT_TRUE(torch::all(fused.get(next).slice(1, 0, kT - 1) == 0).item<bool>());
    }
  }
}

// A padded step (mask false) keeps the state and outputs zeros: a sequence padded at its end
// gives the unpadded outputs and ends in the unpadded state.
TEST(RecurrentModuleTest, PaddedStepsKeepTheStateAndOutputZeros) {
  torch::manual_seed(0);
  auto options = RecurrentModuleOptions(kIn, kH).in_key("x").out_key("y").mask_key(
      NestedKey({"collector", "mask"}));
  LSTMModule lstm(options.recurrent_mode(true));
  TensorDict batch = sequence_batch();
  auto mask = torch::ones({kB, kT}, torch::kBool);
  mask.index_put_({1, torch::indexing::Slice(4)}, false);
  batch.set({"collector", "mask"}, mask);
  const TensorDict out = lstm->forward(batch.clone());
  EXPECT_TRUE(torch::all(out.get("y")[1].slice(0, 4) == 0).item<bool>());
  const auto c = out.get({"next", "recurrent_state_c"})[1];
  EXPECT_TRUE(torch::equal(c[6], c[3]));  // kept from the last valid step
  TensorDict unpadded =
      batch.index({torch::indexing::Slice(1, 2), torch::indexing::Slice(0, 4)}).clone();
  unpadded.set({"collector", "mask"}, torch::ones({1, 4}, torch::kBool));
  EXPECT_TRUE(torch::allclose(lstm->forward(unpadded).get("y")[0], out.get("y")[1].slice(0, 0, 4)));
}

// From kAtenStepRows rows each step runs through ATen's call: the same outputs, states and
// gradients as the cells written out, which run on the same rows split into smaller batches
// (resets inside the sequences and padded steps included; sequence and step modes).
TEST(RecurrentModuleTest, WideBatchesGiveTheNarrowOnesOutputsStatesAndGradients) {
  const int64_t rows = RecurrentModuleImpl::kAtenStepRows + 6, half = rows / 2;
  ASSERT_LT(half, RecurrentModuleImpl::kAtenStepRows);
  torch::manual_seed(2);
  auto is_init = torch::rand({rows, kT, 1}) < 0.2;
  is_init.select(1, 0).fill_(true);
  auto mask = torch::rand({rows, kT}) < 0.9;
  TensorDict wide({{"x", torch::randn({rows, kT, kIn})},
                   {"is_init", is_init},
                   {"recurrent_state_h", torch::randn({rows, kT, kLayers, kH})},
                   {"recurrent_state_c", torch::randn({rows, kT, kLayers, kH})},
                   {"recurrent_state", torch::randn({rows, kT, kLayers, kH})},
                   {"mask", mask}},
                  {rows, kT});
  for (const bool sequence : {true, false}) {
    for (const auto& module : both_kinds()) {
      SCOPED_TRACE(module->name() + (sequence ? " sequence" : " step"));
      const auto options =
          RecurrentModuleOptions(module->options())
              .mask_key(sequence ? std::optional<NestedKey>("mask") : std::nullopt);
      std::shared_ptr<RecurrentModuleImpl> core;
      if (module->kind() == RecurrentModuleImpl::Kind::kLSTM)
        core = LSTMModule(options).ptr();
      else
        core = GRUModule(options).ptr();
      core->set_recurrent_mode(sequence);
      const TensorDict data = sequence ? wide : wide.index({torch::indexing::Slice(), 2}).clone();
      const auto run = [&](const TensorDict& td) {
        for (const auto& p : core->parameters()) p.mutable_grad() = torch::Tensor();
        const TensorDict out = core->forward(td.clone());
        out.get("y").pow(2).sum().backward();
        std::vector<torch::Tensor> grads;
        for (const auto& p : core->parameters()) grads.push_back(p.grad().clone());
        return std::make_pair(out, grads);
      };
      const auto [whole, whole_grads] = run(data);
      namespace ix = torch::indexing;
      const auto [first, first_grads] = run(data.index({ix::Slice(0, half)}));
      const auto [second, second_grads] = run(data.index({ix::Slice(half, ix::None)}));
      std::vector<NestedKey> keys{"y"};
      for (const auto& key : core->hidden_keys()) keys.push_back(NestedKey("next").join(key));
      for (const auto& key : keys) {
        const auto split = torch::cat({first.get(key), second.get(key)});
        EXPECT_TRUE(torch::allclose(whole.get(key), split, 1e-5, 1e-6)) << key.to_string();
      }
      for (size_t i = 0; i < whole_grads.size(); ++i)
        EXPECT_TRUE(torch::allclose(whole_grads[i], first_grads[i] + second_grads[i], 1e-4, 1e-5))
            << "parameter " << i;
    }
  }
}

TEST(RecurrentModuleTest, GradientsReachTheWeightsThroughTheSequence) {
  for (const auto& module : both_kinds()) {
    SCOPED_TRACE(module->name());
    module->set_recurrent_mode(true);
    module->forward(sequence_batch()).get("y").pow(2).sum().backward();
    for (const auto& p : module->named_parameters())
      EXPECT_TRUE(p.value().grad().defined() && p.value().grad().abs().sum().item<double>() > 0)
          << p.key();
  }
}

TEST(RecurrentModuleTest, AnUnbatchedStepAndTheHiddenSpecs) {
  torch::manual_seed(0);
  LSTMModule lstm(RecurrentModuleOptions(kIn, kH).in_key("x").out_key("y"));
  TensorDict step({{"x", torch::randn({kIn})}, {"is_init", torch::ones({1}, torch::kBool)}}, {});
  lstm->forward(step);
  EXPECT_EQ(step.get("y").sizes(), torch::IntArrayRef({kH}));
  EXPECT_EQ(step.get({"next", "recurrent_state_h"}).sizes(), torch::IntArrayRef({1, kH}));
  const auto specs = lstm->hidden_specs({4});
  EXPECT_EQ(specs->get("recurrent_state_c")->shape(), (std::vector<int64_t>{4, 1, kH}));
  GRUModule gru(RecurrentModuleOptions(kIn, kH).num_layers(2));
  EXPECT_EQ(gru->hidden_specs()->get("recurrent_state")->shape(), (std::vector<int64_t>{2, kH}));
  EXPECT_THAT(error_message<tensordict::ValueError>(
                  [] { LSTMModule(RecurrentModuleOptions(kIn, kH).hidden_keys({"h"})); }),
              HasSubstr("an LSTM's state is two (h, c)"));
}

TEST(RecurrentModuleTest, BadInputIsRefusedNamingTheKeyAndBothShapesAndWritesNothing) {
  torch::manual_seed(0);
  LSTMModule lstm(RecurrentModuleOptions(kIn, kH).num_layers(kLayers).in_key("x").out_key("y"));
  TensorDict step({{"x", torch::randn({kB, kIn})},
                   {"is_init", torch::zeros({kB, 1}, torch::kBool)},
                   {"recurrent_state_h", torch::zeros({kB, kH})}},
                  {kB});
  EXPECT_THAT(error_message<tensordict::ShapeError>([&] { lstm->forward(step); }),
              AllOf(HasSubstr("LSTMModule: the hidden state 'recurrent_state_h' has shape [3, 6]"),
                    HasSubstr("expected [3, 2, 6]")));
  EXPECT_FALSE(step.contains("y"));
  step.del_("recurrent_state_h");
  step.del_("is_init");
  EXPECT_THAT(error_message<tensordict::KeyError>([&] { lstm->forward(step); }),
              AllOf(HasSubstr("no 'is_init' entry"), HasSubstr("add InitTracker")));
  step.set("is_init", torch::zeros({kB, 1}, torch::kUInt8));
  EXPECT_THAT(error_message<tensordict::TypeError>([&] { lstm->forward(step); }),
              HasSubstr("is_init 'is_init' is Byte; it must be bool"));
  step.set("is_init", torch::zeros({kB, 1}, torch::kBool));
  step.set("x", torch::randn({kB, kIn + 1}));
  EXPECT_THAT(error_message<tensordict::ShapeError>([&] { lstm->forward(step); }),
              HasSubstr("the input 'x' has shape [3, 6]; expected [3, 5]"));
  lstm->set_recurrent_mode(true);
  TensorDict unbatched({{"x", torch::randn({kIn})}, {"is_init", torch::ones({1}, torch::kBool)}},
                       {});
  EXPECT_THAT(error_message<tensordict::ShapeError>([&] { lstm->forward(unbatched); }),
              HasSubstr("sequence mode reads a [*B, T] TensorDict"));
  EXPECT_FALSE(step.contains("y"));
}

// recurrent_cores lists a core shared by two parts of a network once; RecurrentModeGuard sets
// the cores' modes for a scope and leaves each as it came, a core given twice included;
// make_recurrent_module builds the named core and refuses another name.
TEST(RecurrentModuleTest, CoresAreFoundOnceAndTheModeGuardRestoresThem) {
  namespace tdnn = tensordict::nn;
  auto cores = both_kinds(1);
  auto lstm = cores[0];
  auto gru = cores[1];
  tdnn::TensorDictSequential net(tdnn::TensorDictSequentialImpl::Modules{lstm, gru, lstm});
  EXPECT_EQ(tdrl::modules::recurrent_cores(*net), cores);
  {
    tdrl::modules::RecurrentModeGuard guard({lstm, gru, lstm}, /*recurrent_mode=*/true,
                                            /*sequence_states=*/false);
    EXPECT_TRUE(lstm->recurrent_mode());
    EXPECT_FALSE(gru->options().sequence_states());
  }
  EXPECT_FALSE(lstm->recurrent_mode());
  EXPECT_FALSE(gru->recurrent_mode());
  EXPECT_TRUE(lstm->options().sequence_states());
  EXPECT_EQ(tdrl::modules::make_recurrent_module("gru", RecurrentModuleOptions(2, 3))->kind(),
            RecurrentModuleImpl::Kind::kGRU);
  EXPECT_THAT(error_message<tensordict::ValueError>([] {
                tdrl::modules::make_recurrent_module("rnn", RecurrentModuleOptions(2, 3));
              }),
              HasSubstr("no recurrent core 'rnn'; the cores are lstm, gru"));
}

}  // namespace
