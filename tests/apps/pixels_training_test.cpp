// Tests of training from pixels in the apps: the image transforms of env.transforms, the
// ConvNet encoder of model.encoder, the replay buffer storing single frames and stacking them
// again when sampling, train.random_shift, and the configs refused around them.

#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <tdrl/apps/trainer.h>
#include <tdrl/modules/convnet.h>
#include <tdrl/replay/frame_stack.h>
#include <tdrl/replay/storages.h>

#include "apps/trainer_test_util.h"
#include "support/temp_dir.h"

namespace tdrl::apps {
namespace {

using namespace tdrl::apps::trainer_testing;
using ::testing::HasSubstr;

// A tiny pixel run of `algo` on CartPole: 16x16 grey frames, stacked 3 deep, uint8 kept; a
// small ConvNet (16 -> 7 -> 3 pixels, 8 channels: 72 features). `extra` is appended (YAML).
std::string pixels_yaml(const std::string& algo, const std::string& extra = "",
                        const std::string& transforms = "") {
  std::ostringstream y;
  y << "seed: 0\n"
    << "env:\n  name: CartPole-v1\n  num_envs: 2\n"
    << "  options: {from_pixels: true, pixels_only: true, render_width: 16, render_height: 16}\n"
    << "  transforms:\n"
    << (transforms.empty() ? "    - {type: to_tensor_image, dtype: uint8}\n"
                             "    - {type: grayscale}\n"
                             "    - {type: cat_frames, n: 3}\n"
                           : transforms)
    << "model:\n  encoder: convnet\n  actor_cells: [16]\n  critic_cells: [16]\n"
    << "  convnet: {num_cells: [8, 8], kernel_sizes: [3], strides: [2]}\n"
    << "algo:\n  name: " << algo << "\n";
  if (is_on_policy(algo)) {
    y << "  num_epochs: 1\n  minibatch_size: 32\n";
  } else {
    y << "  updates_per_batch: 2\n";
  }
  y << "collector:\n  frames_per_batch: 64\n  total_frames: 256\n";
  if (!is_on_policy(algo))
    y << "  init_random_frames: 128\nreplay:\n  capacity: 1000\n  batch_size: 16\n";
  y << "logger:\n  progress: none\n"
    << "eval:\n  episodes: 1\n  max_steps: 20\n"
    << extra;
  return y.str();
}

RunConfig pixels_config(const std::string& algo, const std::string& extra = "",
                        const std::string& transforms = "") {
  register_builtin_components();
  return load_config_string(pixels_yaml(algo, extra, transforms));
}

// The ConvNets inside `net`.
std::vector<std::shared_ptr<modules::ConvNetImpl>> convnets_of(torch::nn::Module& net) {
  std::vector<std::shared_ptr<modules::ConvNetImpl>> out;
  for (const auto& m : net.modules())
    if (auto c = std::dynamic_pointer_cast<modules::ConvNetImpl>(m)) out.push_back(c);
  return out;
}

// DQN learns from stacked uint8 frames: the Q-network reads them through a ConvNet of the
// frames' 3 channels, its weights change, the buffer holds single grey frames (one channel,
// uint8) and its samples hold the stacks again, root and next, as the env wrote them.
TEST(PixelsTrainingTest, DqnStoresSingleFramesAndSamplesStacks) {
  TempDir tmp;
  Trainer trainer(pixels_config("dqn"), RunDir::create(tmp.path().string(), "t"));
  auto nets = convnets_of(*trainer.recipe().actor);
  ASSERT_EQ(nets.size(), 1u);
  EXPECT_EQ(nets[0]->options().in_channels(), 3);
  std::vector<torch::Tensor> before;
  for (const auto& p : nets[0]->parameters()) before.push_back(p.detach().clone());
  ASSERT_TRUE(trainer.train());
  EXPECT_GT(trainer.updates(), 0);
  size_t changed = 0;
  for (size_t i = 0; i < before.size(); ++i)
    changed += !torch::equal(before[i], nets[0]->parameters()[i]);
  EXPECT_EQ(changed, before.size());

  auto& replay = *trainer.recipe().replay;
  const auto stored = replay.storage()->column("pixels");
  EXPECT_EQ(stored.sizes().vec(), (std::vector<int64_t>{replay.size(), 1, 16, 16}));
  EXPECT_EQ(stored.scalar_type(), torch::kUInt8);
  const auto sample = replay.sample(16);
  EXPECT_EQ(sample.get("pixels").sizes().vec(), (std::vector<int64_t>{16, 3, 16, 16}));
  EXPECT_EQ(sample.get({"next", "pixels"}).sizes().vec(), (std::vector<int64_t>{16, 3, 16, 16}));
  // The next stack is the stack moved on by one frame, ending with the stored next frame.
  EXPECT_TRUE(torch::equal(sample.get({"next", "pixels"}).narrow(1, 0, 2),
                           sample.get("pixels").narrow(1, 1, 2)));
  // The replay's memory estimate counts the frames stored, not the stacks: as with no stacking.
  const auto single = pixels_config("dqn", "",
                                    "    - {type: to_tensor_image, dtype: uint8}\n"
                                    "    - {type: grayscale}\n");
  EXPECT_EQ(build_env_parts(pixels_config("dqn").env).info.frame_bytes,
            build_env_parts(single.env).info.frame_bytes);
  const auto index = sample.get("index");
  EXPECT_TRUE(torch::equal(sample.get({"next", "pixels"}).narrow(1, 2, 1),
                           replay.storage()->column({"next", "pixels"}).index_select(0, index)));
}

// The stacks rebuilt at sample time are those the env wrote: a batch collected with 4 envs,
// written as the Trainer writes it, samples back to its own stacks, step by step.
TEST(PixelsTrainingTest, SampledStacksEqualTheCollectedOnes) {
  TempDir tmp;
  Trainer trainer(pixels_config("dqn"), RunDir::create(tmp.path().string(), "t"));
  std::vector<TensorDict> batches;
  trainer.add_hook(HookPoint::kBatch, [&](Trainer& t) { batches.push_back(t.batch().clone()); });
  ASSERT_TRUE(trainer.train());
  ASSERT_EQ(batches.size(), 4u);
  auto& replay = *trainer.recipe().replay;
  // All 256 frames are stored (capacity 1000): row r of batch b, env e, step s is
  // b * 64 + s * 2 + e (time-major, 2 envs).
  ASSERT_EQ(replay.size(), 256);
  EXPECT_EQ(replay.storage()->column("pixels").size(1), 1);
  int checked = 0;
  for (int64_t b = 0; b < 4; ++b) {
    const auto& batch = batches[b];
    ASSERT_EQ(batch.batch_size(), (std::vector<int64_t>{2, 32}));
    for (int64_t e = 0; e < 2; ++e) {
      for (int64_t s = 0; s < 32; s += 7) {
        const int64_t row = b * 64 + s * 2 + e;
        // This row as a sample of it would be: the FrameStack the Trainer installed, applied
        // to the row as the buffer applies it.
        replay::FrameStack stack(replay::FrameStackOptions(3).streams(2));
        auto one = replay.storage()->get(torch::tensor({row}, torch::kInt64));
        one = stack(one, torch::tensor({row}, torch::kInt64), *replay.storage());
        EXPECT_TRUE(torch::equal(one.get("pixels")[0], batch.get("pixels")[e][s]))
            << "batch " << b << " env " << e << " step " << s;
        EXPECT_TRUE(
            torch::equal(one.get({"next", "pixels"})[0], batch.get({"next", "pixels"})[e][s]))
            << "batch " << b << " env " << e << " step " << s;
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 4 * 2 * 5);
}

// PPO and A2C give the actor and the critic a ConvNet each (both in the loss), reading float
// frames.
TEST(PixelsTrainingTest, PpoAndA2cTrainAnEncoderPerNetwork) {
  for (const std::string algo : {"ppo", "a2c"}) {
    SCOPED_TRACE(algo);
    TempDir tmp;
    Trainer trainer(pixels_config(algo, "",
                                  "    - {type: to_tensor_image}\n"
                                  "    - {type: resize, width: 12, height: 12}\n"
                                  "    - {type: cat_frames, n: 2}\n"),
                    RunDir::create(tmp.path().string(), "t"));
    auto nets = convnets_of(*trainer.recipe().loss);
    ASSERT_EQ(nets.size(), 2u);
    EXPECT_NE(nets[0], nets[1]);
    EXPECT_EQ(nets[0]->options().in_channels(), 6);
    ASSERT_TRUE(trainer.train());
    EXPECT_GT(trainer.updates(), 0);
  }
}

// model.share_encoder: the actor and the critic read one ConvNet, which both losses train and
// the optimiser holds once (the loss lists it under each network). With recurrent cores, the
// critic's core reads the shared features, and the collectors run the encoder once.
TEST(PixelsTrainingTest, PpoAndA2cShareOneEncoderWhenAsked) {
  for (const std::string algo : {"ppo", "a2c"}) {
    for (const std::string core : {"mlp", "gru"}) {
      SCOPED_TRACE(algo + " " + core);
      TempDir tmp;
      const auto transforms =
          core == "mlp" ? std::string() : "    - {type: to_tensor_image, dtype: uint8}\n";
      std::vector<std::string> sets{"model.share_encoder=true", "model.core=" + core};
      if (core != "mlp") sets.push_back("model.hidden_size=8");
      register_builtin_components();
      Trainer trainer(load_config_string(pixels_yaml(algo, "", transforms), sets),
                      RunDir::create(tmp.path().string(), "t"));
      const auto& recipe = trainer.recipe();
      const auto nets = convnets_of(*recipe.loss);
      ASSERT_EQ(nets.size(), 2u);  // the same module, under the actor and under the critic
      EXPECT_EQ(nets[0], nets[1]);
      const auto policy = convnets_of(*recipe.exploration_policy.weights_module());
      ASSERT_EQ(policy.size(), 1u);
      EXPECT_EQ(policy[0], nets[0]);
      // Each parameter once in the optimiser: the loss's list less the encoder's second listing.
      int64_t held = 0;
      for (const auto& group : recipe.optimizers.front().optimizer->param_groups())
        held += static_cast<int64_t>(group.params().size());
      EXPECT_EQ(held, static_cast<int64_t>(recipe.loss->parameters().size() -
                                           nets[0]->parameters().size()));
      const auto before = nets[0]->parameters()[0].clone();
      ASSERT_TRUE(trainer.train());
      EXPECT_GT(trainer.updates(), 0);
      EXPECT_FALSE(torch::equal(before, nets[0]->parameters()[0]));
    }
  }
}

// A recurrent core runs after the encoder: it reads the ConvNet's features (single frames,
// the past carried in the core's state), for ppo's sequences and dqn's replayed ones alike.
TEST(PixelsTrainingTest, ARecurrentCoreReadsTheEncodersFeatures) {
  for (const std::string algo : {"ppo", "dqn"}) {
    SCOPED_TRACE(algo);
    TempDir tmp;
    const std::string core = "  core: gru\n  hidden_size: 8\n";
    auto yaml = pixels_yaml(algo, "", "    - {type: to_tensor_image, dtype: uint8}\n");
    yaml.replace(yaml.find("  encoder: convnet\n"), 18, "  encoder: convnet\n" + core);
    if (algo == "dqn")
      yaml.replace(yaml.find("  updates_per_batch: 2\n"), 23,
                   "  updates_per_batch: 2\n  sequence_length: 8\n  burn_in: 2\n");
    register_builtin_components();
    Trainer trainer(load_config_string(yaml), RunDir::create(tmp.path().string(), "t"));
    auto nets = convnets_of(*trainer.recipe().actor);
    ASSERT_EQ(nets.size(), 1u);
    EXPECT_EQ(nets[0]->options().in_channels(), 3);
    if (algo == "ppo") {
      // The collectors run the critic's encoder and core too (to carry the core's state): the
      // very modules the loss trains.
      const auto policy = convnets_of(*trainer.recipe().exploration_policy.weights_module());
      const auto loss = convnets_of(*trainer.recipe().loss);
      ASSERT_EQ(policy.size(), 2u);
      ASSERT_EQ(loss.size(), 2u);
      for (const auto& net : policy) EXPECT_TRUE(net == loss[0] || net == loss[1]);
      EXPECT_NE(policy[0], policy[1]);
    }
    ASSERT_TRUE(trainer.train());
    EXPECT_GT(trainer.updates(), 0);
  }
}

// train.random_shift: the losses read each minibatch's frames shifted (root and next, each
// image by its own draw), while the batch and the replay buffer keep them as collected.
TEST(PixelsTrainingTest, RandomShiftAugmentsWhatTheLossesReadOnly) {
  for (const std::string algo : {"ppo", "dqn"}) {
    SCOPED_TRACE(algo);
    register_builtin_components();
    TempDir tmp;
    Trainer trainer(load_config_string(pixels_yaml(algo), {"train.random_shift.pad=2"}),
                    RunDir::create(tmp.path().string(), "t"));
    std::vector<TensorDict> batches;
    trainer.add_hook(HookPoint::kBatch, [&](Trainer& t) { batches.push_back(t.batch().clone()); });
    ASSERT_TRUE(trainer.train());
    EXPECT_GT(trainer.updates(), 0);
    for (const auto& p : trainer.recipe().loss->parameters())
      EXPECT_TRUE(torch::isfinite(p).all().item<bool>());
    // What the losses read of a minibatch: every frame stack a window of its padded self, not
    // all at the centre; the minibatch unchanged.
    const auto minibatch = batches.back().reshape({-1});
    const auto before = minibatch.clone();
    const auto input = trainer.loss_input(minibatch);
    for (const tensordict::NestedKey key :
         {tensordict::NestedKey("pixels"), tensordict::NestedKey({"next", "pixels"})}) {
      const auto original = minibatch.get(key).to(torch::kFloat32);
      const auto shifted = input.get(key).to(torch::kFloat32);
      ASSERT_EQ(shifted.sizes(), original.sizes());
      const auto padded = torch::nn::functional::pad(
          original, torch::nn::functional::PadFuncOptions({2, 2, 2, 2}).mode(torch::kReplicate));
      int64_t centred = 0;
      for (int64_t i = 0; i < original.size(0); ++i) {
        bool window = false;
        for (int64_t top = 0; top <= 4 && !window; ++top)
          for (int64_t left = 0; left <= 4 && !window; ++left)
            window = torch::equal(padded[i].narrow(-2, top, 16).narrow(-1, left, 16), shifted[i]);
        EXPECT_TRUE(window) << key.to_string() << " row " << i;
        centred += torch::equal(original[i], shifted[i]);
      }
      EXPECT_LT(centred, original.size(0));
      EXPECT_TRUE(torch::equal(minibatch.get(key), before.get(key)));
    }
    if (algo == "dqn") {
      // The first batch as stored: each row's single frame is the newest of the collected
      // stack (2 envs, time-major rows).
      const auto stored = trainer.recipe().replay->storage()->column("pixels");
      const auto& first = batches.front();
      for (int64_t s = 0; s < 32; s += 5)
        for (int64_t e = 0; e < 2; ++e)
          EXPECT_TRUE(torch::equal(stored[s * 2 + e], first.get("pixels")[e][s].narrow(0, 2, 1)))
              << "step " << s << " env " << e;
    }
  }
  // Without it, the losses read the minibatch itself.
  TempDir tmp;
  Trainer plain(pixels_config("ppo"), RunDir::create(tmp.path().string(), "t"));
  const TensorDict td({{"pixels", torch::zeros({4, 3, 16, 16}, torch::kUInt8)}}, {4});
  EXPECT_TRUE(torch::equal(plain.loss_input(td).get("pixels"), td.get("pixels")));
}

// What the model reads must be what the env gives, and stacked frames must fit the buffer.
TEST(PixelsTrainingTest, RefusesModelsAndBuffersThatDoNotFitThePixels) {
  const auto refused = [](const RunConfig& config) {
    return error_message<ConfigError>([&] { Trainer::check(config); });
  };
  EXPECT_NO_THROW(Trainer::check(pixels_config("dqn")));
  // Pixels only, but the networks would read the observation.
  {
    auto config = pixels_config("dqn");
    config.model.encoder = "none";
    config.model.convnet = ConvNetSection();
    EXPECT_THAT(refused(config), HasSubstr("'model.encoder' is none, but the env has no flat"));
  }
  // The encoder's settings without the encoder would be ignored.
  EXPECT_THAT(refused(tiny_config("dqn", {"model.convnet.activation=tanh"})),
              HasSubstr("'model.convnet' is set, but model.encoder is none"));
  // An encoder on a task without pixels.
  EXPECT_THAT(refused(tiny_config("dqn", {"model.encoder=convnet"})),
              HasSubstr("has no 3-D 'pixels' entry; set env.options.from_pixels"));
  // The env's own [H, W, 3] frames, not turned into [C, H, W].
  EXPECT_THAT(refused(pixels_config("dqn", "", "    - {type: cat_frames, n: 1, dim: -1}\n")),
              HasSubstr("an [H, W, C] image; add the to_tensor_image transform"));
  // Kernels larger than the frames.
  {
    auto config = pixels_config("dqn");
    config.model.convnet.options.kernel_sizes({32});
    EXPECT_THAT(refused(config), HasSubstr("'model.convnet' does not fit the env's [3, 16, 16]"));
  }
  // A shared encoder needs an encoder, and a second network to share it with.
  {
    auto config = tiny_config("ppo", {"model.share_encoder=true"});
    EXPECT_THAT(refused(config), HasSubstr("'model.share_encoder' is true, but model.encoder is "
                                           "none, which builds no encoder to share"));
    EXPECT_THAT(refused(load_config_string(pixels_yaml("dqn"), {"model.share_encoder=true"})),
                HasSubstr("'model.share_encoder' is true, but dqn trains one network"));
  }
  // A random shift needs pixels the networks read.
  EXPECT_THAT(refused(tiny_config("ppo", {"train.random_shift.pad=2"})),
              HasSubstr("'train.random_shift.pad' is 2, but model.encoder is none"));
  // SAC's critics have no place for an encoder.
  {
    register_builtin_components();
    auto config = load_config_string(tiny_yaml("sac"),
                                     {"model.encoder=convnet", "env.options.from_pixels=true"});
    EXPECT_THAT(refused(config), HasSubstr("'model.encoder' is convnet, but sac's critics"));
  }
  // Frames stacked again at sample time need each env's steps a fixed number of rows apart.
  {
    auto config = pixels_config("dqn");
    config.algo.options->replay()->capacity = 1001;
    EXPECT_THAT(refused(config),
                HasSubstr("'replay.capacity' is 1001, not a multiple of the 2 envs"));
  }
  {
    auto config = pixels_config("dqn");
    config.collector.mode = "async";
    config.collector.workers.num_workers(2);
    EXPECT_THAT(refused(config), HasSubstr("'collector.mode' is async, but env.transforms stacks"));
  }
  {
    auto config = pixels_config("dqn");
    config.model.core = "lstm";
    EXPECT_THAT(refused(config), HasSubstr("stacks frames (cat_frames), but model.core lstm"));
  }
}

}  // namespace
}  // namespace tdrl::apps
