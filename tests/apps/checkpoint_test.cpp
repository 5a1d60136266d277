// Tests of the checkpoint module (module state as TensorDicts, the typed records, the state folder)
// and of plugin loading's errors.

#include "tdrl/apps/checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <tdrl/apps/config_fields.h>
#include <tdrl/apps/main.h>
#include <tensordict/errors.h>

#include "support/error_message.h"
#include "support/temp_dir.h"

namespace tdrl::apps {
namespace {

using tdrl::test_util::error_message;
using tensordict::TensorDict;
using tensordict::testing::TempDir;
using tensordict::testing::write_file_bytes;
using ::testing::AllOf;
using ::testing::HasSubstr;

torch::nn::Sequential two_layers() {
  return torch::nn::Sequential(torch::nn::Linear(3, 4), torch::nn::BatchNorm1d(4),
                               torch::nn::Linear(4, 2));
}

TEST(CheckpointTest, ModuleStateNestsByModulePathAndHoldsBuffers) {
  torch::manual_seed(0);
  auto net = two_layers();
  const TensorDict state = module_state(*net);
  EXPECT_TRUE(state.contains({"0", "weight"}));
  EXPECT_TRUE(state.contains({"2", "bias"}));
  EXPECT_TRUE(state.contains({"1", "running_mean"}));
  EXPECT_TRUE(torch::equal(state.get({"0", "weight"}), net[0]->as<torch::nn::Linear>()->weight));
  // A copy: training the module later does not change the saved state.
  torch::NoGradGuard no_grad;
  net[0]->as<torch::nn::Linear>()->weight.add_(1);
  EXPECT_FALSE(torch::equal(state.get({"0", "weight"}), net[0]->as<torch::nn::Linear>()->weight));
}

TEST(CheckpointTest, LoadModuleStateRestoresEveryParameterAndBuffer) {
  torch::manual_seed(0);
  auto source = two_layers();
  auto target = two_layers();
  load_module_state(*target, module_state(*source), "test net");
  for (const auto& item : source->named_parameters())
    EXPECT_TRUE(torch::equal(item.value(), target->named_parameters()[item.key()])) << item.key();
  for (const auto& item : source->named_buffers())
    EXPECT_TRUE(torch::equal(item.value(), target->named_buffers()[item.key()])) << item.key();
}

TEST(CheckpointTest, LoadModuleStateWithAMissingEntryThrowsAndLeavesTheModuleUnchanged) {
  torch::manual_seed(0);
  auto target = two_layers();
  const TensorDict before = module_state(*target);
  TensorDict state = module_state(*two_layers());
  state.del_({"2", "bias"});
  const auto message =
      error_message<tensordict::KeyError>([&] { load_module_state(*target, state, "actor"); });
  EXPECT_THAT(message, HasSubstr("the checkpoint's actor has no entry '2.bias'"));
  EXPECT_TRUE(
      torch::equal(module_state(*target).get({"0", "weight"}), before.get({"0", "weight"})));
}

TEST(CheckpointTest, LoadModuleStateWithAnotherShapeThrowsNamingBothShapes) {
  torch::manual_seed(0);
  auto target = two_layers();
  const TensorDict before = module_state(*target);
  TensorDict state = module_state(*two_layers());
  state.set({"2", "weight"}, torch::zeros({5, 4}));
  const auto message =
      error_message<tensordict::ShapeError>([&] { load_module_state(*target, state, "loss"); });
  EXPECT_THAT(message, HasSubstr("'2.weight' has shape [5, 4]; the model's is [2, 4]"));
  // Entries before the bad one were not copied either.
  EXPECT_TRUE(
      torch::equal(module_state(*target).get({"0", "weight"}), before.get({"0", "weight"})));
}

TEST(CheckpointTest, CheckpointStateRoundTripsThroughTheStateFolder) {
  TempDir tmp;
  TensorDict state = TensorDict::empty({});
  state.set({"trainer", "frames"}, torch::tensor(int64_t{42}));
  state.set({"actor", "w"}, torch::arange(6, torch::kFloat32).reshape({2, 3}));
  save_checkpoint_state(state, tmp.path().string());
  const TensorDict loaded = load_checkpoint_state(tmp.path().string());
  EXPECT_EQ(loaded.get({"trainer", "frames"}).item<int64_t>(), 42);
  EXPECT_TRUE(torch::equal(loaded.get({"actor", "w"}), state.get({"actor", "w"})));
}

TEST(CheckpointTest, LoadCheckpointStateWithoutAStateFolderNamesThePath) {
  TempDir tmp;
  EXPECT_THAT(
      error_message<std::runtime_error>([&] { load_checkpoint_state(tmp.path().string()); }),
      HasSubstr(tmp / "state"));
}

// A RunState as the Trainer writes it, with small made-up entries.
RunState small_run_state() {
  const auto counters =
      RunCounters::make({{"frames", torch::tensor(int64_t{64})},
                         {"updates", torch::tensor(int64_t{2})},
                         {"episodes", torch::tensor(int64_t{3})},
                         {"wall_time", torch::tensor(1.5, torch::kFloat64)},
                         {"rng", torch::zeros({8}, torch::kUInt8)},
                         {"episodes_in_flight", torch::zeros({0, 4}, torch::kFloat64)},
                         {"recent_returns", torch::tensor({1.0, 2.0}, torch::kFloat64)}});
  auto net = two_layers();
  return RunState::make({{"actor", module_state(*net)},
                         {"loss", module_state(*net)},
                         {"optim", TensorDict::empty({})},
                         {"exploration", TensorDict::empty({})},
                         {"collector", TensorDict::empty({})},
                         {"env", TensorDict::empty({})},
                         {"trainer", counters}});
}

TEST(CheckpointTest, RunStateRoundTripsWithItsEmptyEntries) {
  TempDir tmp;
  const RunState state = small_run_state();
  save_checkpoint_state(state.tensordict(), tmp.path().string());
  const RunState loaded = load_run_state(tmp.path().string());
  EXPECT_EQ(loaded.trainer().frames().item<int64_t>(), 64);
  EXPECT_EQ(loaded.trainer().episodes_in_flight().sizes(), torch::IntArrayRef({0, 4}));
  EXPECT_TRUE(loaded.exploration().keys().empty());
  EXPECT_TRUE(
      torch::equal(loaded.actor().get({"0", "weight"}), state.actor().get({"0", "weight"})));
}

TEST(CheckpointTest, ARunStateWithoutADeclaredEntryIsRefusedNamingIt) {
  TempDir tmp;
  TensorDict raw = small_run_state().tensordict().clone();
  raw.del_("collector");
  save_checkpoint_state(raw, tmp.path().string());
  EXPECT_THAT(error_message<tensordict::KeyError>([&] { load_run_state(tmp.path().string()); }),
              AllOf(HasSubstr("RunState"), HasSubstr("collector")));
}

TEST(CheckpointTest, AStateWithLibTorchArchivesIsRefusedNamingTheVersionThatWroteIt) {
  // tdrl before 0.2 stored each optimiser's state as an opaque archive ("optim/<group>/archive").
  TempDir tmp;
  TensorDict raw = small_run_state().tensordict().clone();
  raw.set({"optim", "all", "archive"}, torch::zeros({16}, torch::kUInt8));
  save_checkpoint_state(raw, tmp.path().string());
  EXPECT_THAT(error_message<tensordict::KeyError>([&] { load_run_state(tmp.path().string()); }),
              AllOf(HasSubstr("written by tdrl before 0.2"), HasSubstr("'all'"),
                    HasSubstr("tdrl-eval still evaluates its actor")));
}

TEST(PluginTest, LoadPluginRefusesAMissingFileANonLibraryAndALibraryWithoutTheHook) {
  TempDir tmp;
  EXPECT_THAT(error_message<ConfigError>([&] { load_plugin(tmp / "nothing.so"); }),
              HasSubstr("no such file"));
  write_file_bytes(tmp / "text.so", "not a shared library");
  EXPECT_THAT(error_message<ConfigError>([&] { load_plugin(tmp / "text.so"); }),
              HasSubstr("cannot load it"));
  // The C math library loads but registers nothing.
  EXPECT_THAT(error_message<ConfigError>([] { load_plugin("/lib/x86_64-linux-gnu/libm.so.6"); }),
              HasSubstr("defines no tdrl_register_plugin"));
}

}  // namespace
}  // namespace tdrl::apps
