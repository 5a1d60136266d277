// Tests of recurrent training in the apps: model.core lstm / gru with ppo and a2c (sequence
// minibatches, the collected log-probabilities recomputed in sequence mode, the envs' primer, a
// mid-episode resume), and the configs refused around it.

#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <tdrl/apps/models.h>
#include <tdrl/apps/trainer.h>
#include <tdrl/collectors/collector.h>
#include <tdrl/losses/value_estimators.h>
#include <tdrl/modules/recurrent.h>
#include <tensordict/nn/probabilistic.h>

#include "apps/trainer_test_util.h"
#include "support/temp_dir.h"

namespace tdrl::apps {
namespace {

using namespace tdrl::apps::trainer_testing;
using ::testing::HasSubstr;

// The recurrent cores inside `net`, in order.
std::vector<std::shared_ptr<modules::RecurrentModuleImpl>> cores_of(torch::nn::Module& net) {
  std::vector<std::shared_ptr<modules::RecurrentModuleImpl>> out;
  for (const auto& m : net.modules())
    if (auto core = std::dynamic_pointer_cast<modules::RecurrentModuleImpl>(m)) out.push_back(core);
  return out;
}

// The recurrent core inside `net` (the first).
std::shared_ptr<modules::RecurrentModuleImpl> core_of(torch::nn::Module& net) {
  const auto cores = cores_of(net);
  return cores.empty() ? nullptr : cores.front();
}

std::vector<torch::Tensor> copies(const std::vector<torch::Tensor>& tensors) {
  std::vector<torch::Tensor> out;
  for (const auto& t : tensors) out.push_back(t.detach().clone());
  return out;
}

// How many of `now` differ from `before`.
size_t changed(const std::vector<torch::Tensor>& before, const std::vector<torch::Tensor>& now) {
  size_t n = 0;
  for (size_t i = 0; i < now.size(); ++i) n += !torch::equal(before[i], now[i]);
  return n;
}

// The tiny on-policy run (tiny_yaml) on masked-velocity CartPole with a recurrent core:
// 64-frame batches of one env, so T = 64 steps per batch.
RunConfig recurrent_config(const std::string& algo, const std::string& core,
                           std::vector<std::string> overrides = {}) {
  overrides.insert(overrides.begin(),
                   {"model.core=" + core, "model.hidden_size=8", "env.options.mask_velocity=true"});
  return tiny_config(algo, overrides);
}

// Sequence minibatches of 16 steps, 2 per minibatch of 32 frames: 2 epochs x 2 updates a
// batch as with frames; both cores (the actor's, and the critic's that the collectors' policy
// carries) train, end each batch in step mode, and the checkpointed actor holds its weights.
TEST(RecurrentTrainingTest, PpoAndA2cTrainARecurrentCoreOnSequences) {
  for (const std::string algo : {"ppo", "a2c"}) {
    for (const std::string core : {"lstm", "gru"}) {
      SCOPED_TRACE(algo + " " + core);
      TempDir tmp;
      Trainer trainer(recurrent_config(algo, core, {"algo.sequence_length=16"}),
                      RunDir::create(tmp.path().string(), "t"));
      auto actor_core = core_of(*trainer.recipe().actor);
      ASSERT_TRUE(actor_core);
      EXPECT_EQ(actor_core->kind(), core == "lstm" ? modules::RecurrentModuleImpl::Kind::kLSTM
                                                   : modules::RecurrentModuleImpl::Kind::kGRU);
      // The critic has a core of its own, carried by the collectors' policy after the actor.
      const auto policy_cores = cores_of(*trainer.recipe().exploration_policy.weights_module());
      ASSERT_EQ(policy_cores.size(), 2u);
      EXPECT_EQ(policy_cores[0], actor_core);
      auto critic_core = policy_cores[1];
      EXPECT_EQ(critic_core->hidden_keys().front().back().rfind("critic_", 0), 0u);
      const auto actor_before = copies(actor_core->parameters());
      const auto critic_before = copies(critic_core->parameters());
      ASSERT_TRUE(trainer.train());
      EXPECT_EQ(trainer.updates(), 16);
      EXPECT_FALSE(actor_core->recurrent_mode());
      EXPECT_FALSE(critic_core->recurrent_mode());
      EXPECT_EQ(changed(actor_before, actor_core->parameters()), actor_before.size());
      EXPECT_EQ(changed(critic_before, critic_core->parameters()), critic_before.size());
      const auto state = load_checkpoint_state(latest_checkpoint(trainer.run_dir().path()));
      bool found = false;
      for (const auto& key : state.get_tensordict("actor").keys(true, true)) {
        const auto name = key.to_string();
        found = found || (name.find(core) != std::string::npos &&
                          name.find("weight_hh_l0") != std::string::npos);
      }
      EXPECT_TRUE(found);
    }
  }
}

// What the collector's policy acted with (step by step, the state carried through the envs'
// primer) is what the loss sees in sequence mode before any update: the log-probability of
// each collected action, recomputed over the batch's sequences from their stored first states,
// equals the one recorded at collection.
TEST(RecurrentTrainingTest, SequenceModeRecomputesTheCollectedLogProbabilities) {
  for (const std::string core : {"lstm", "gru"}) {
    SCOPED_TRACE(core);
    TempDir tmp;
    Trainer trainer(recurrent_config("ppo", core, {"env.num_envs=4"}),
                    RunDir::create(tmp.path().string(), "t"));
    int checked = 0;
    trainer.add_hook(HookPoint::kBatch, [&](Trainer& t) {
      torch::NoGradGuard no_grad;
      const TensorDict batch = t.batch().clone();
      ASSERT_EQ(batch.batch_size(), (std::vector<int64_t>{4, 16}));
      // Several episodes, and states carried in from the batch before.
      EXPECT_TRUE(batch.get("is_init").any().item<bool>());
      auto actor_core = core_of(*t.recipe().actor);
      actor_core->set_recurrent_mode(true);
      auto& actor =
          dynamic_cast<tensordict::nn::ProbabilisticTensorDictSequentialImpl&>(*t.recipe().actor);
      const auto log_prob = actor.get_dist(batch)->log_prob(batch.get("action"));
      actor_core->set_recurrent_mode(false);
      EXPECT_TRUE(torch::allclose(log_prob, batch.get("sample_log_prob"), 1e-4, 1e-5))
          << (log_prob - batch.get("sample_log_prob")).abs().max();
      ++checked;
    });
    ASSERT_TRUE(trainer.train());
    EXPECT_EQ(checked, 4);
  }
}

// A checkpoint keeps the hidden state of the episodes in flight with them (both cores'), so
// that a resumed run goes on with it: Trainer's ResumeStreamTest checks that recurrent ppo and
// dqn runs resumed from a checkpoint repeat the uninterrupted runs bit for bit.
TEST(RecurrentTrainingTest, ACheckpointKeepsTheRecurrentStateOfTheEpisodesInFlight) {
  TempDir tmp;
  Trainer trainer(tiny_config("ppo", {"model.core=lstm", "model.hidden_size=8", "env.num_envs=2",
                                      "checkpoint.interval_frames=128"}),
                  RunDir::create(tmp.path().string(), "t"));
  ASSERT_TRUE(trainer.train());
  const auto state =
      load_checkpoint_state(trainer.run_dir().file("checkpoints") + "/" + ckpt_name(128));
  const auto current = state.get_tensordict("collector").get_tensordict("current");
  for (const std::string key : {"recurrent_state_h", "critic_recurrent_state_c"}) {
    ASSERT_TRUE(current.contains(key)) << key;
    EXPECT_GT(current.get(key).abs().sum().item<double>(), 0) << key;
  }
}

// The envs of a recurrent model carry its state: is_init and the hidden entries in the specs.
TEST(RecurrentTrainingTest, TheEnvsOfARecurrentModelCarryItsState) {
  const auto config = recurrent_config("ppo", "gru");
  const auto acting = acting_of(config);
  auto env = acting.env.eval_env_factory();
  const auto spec = env->observation_spec();
  EXPECT_TRUE(spec->find("is_init"));
  ASSERT_TRUE(spec->find("recurrent_state"));
  EXPECT_EQ(spec->find("recurrent_state")->shape(), (std::vector<int64_t>{1, 8}));
  EXPECT_TRUE(spec->find("critic_recurrent_state"));
  EXPECT_EQ(acting.env.info.obs_dim, 2);  // the velocities masked
  const auto mlp = acting_of(tiny_config("ppo"));
  EXPECT_FALSE(mlp.env.eval_env_factory()->observation_spec()->find("is_init"));
}

// A recurrent dqn (R2D2-style): its envs carry the Q-network's state, the replay buffer keeps it
// and samples sequences that start from it, and the updates train the core; the burn-in is in
// each sampled sequence.
TEST(RecurrentTrainingTest, DqnTrainsARecurrentQNetworkOnStoredSequences) {
  const std::vector<std::string> overrides{
      "model.core=gru",         "model.hidden_size=8", "env.options.mask_velocity=true",
      "algo.sequence_length=8", "algo.burn_in=2",      "replay.batch_size=32"};
  TempDir tmp;
  Trainer trainer(tiny_config("dqn", overrides), RunDir::create(tmp.path().string(), "t"));
  auto core = core_of(*trainer.recipe().actor);
  ASSERT_TRUE(core);
  EXPECT_EQ(trainer.recipe().sequence_length(), 8);
  const auto before = copies(core->parameters());
  int sampled = 0;
  trainer.add_hook(HookPoint::kBatch, [&](Trainer& t) {
    if (t.recipe().replay->size() < 64) return;
    const auto sample = t.recipe().replay->sample().reshape({-1, 8});
    ASSERT_EQ(sample.batch_size(), (std::vector<int64_t>{4, 8}));
    EXPECT_TRUE(sample.contains("recurrent_state"));
    EXPECT_TRUE(sample.get("burn_in").slice(1, 0, 2).all().item<bool>());
    EXPECT_FALSE(sample.get("burn_in").slice(1, 2).any().item<bool>());
    // Each sequence is one env's consecutive steps, across its episode ends (where the stored
    // is_init resets the core) but never past the end of a batch's stretch.
    const auto ids = sample.get(collectors::traj_ids_key());
    const auto step = ids.slice(1, 1) - ids.slice(1, 0, -1);
    EXPECT_TRUE(step.ge(0).all().item<bool>());
    EXPECT_TRUE(
        step.gt(0).eq(sample.get("is_init").reshape({4, 8}).slice(1, 1)).all().item<bool>());
    EXPECT_FALSE(sample.get(stream_end_key()).slice(1, 0, -1).any().item<bool>());
    ++sampled;
  });
  ASSERT_TRUE(trainer.train());
  EXPECT_EQ(trainer.updates(), 6);
  EXPECT_GT(sampled, 0);
  EXPECT_FALSE(core->recurrent_mode());
  EXPECT_EQ(changed(before, core->parameters()), before.size());
}

// With stored_state false (R2D2's zero start) every sampled sequence starts from zeros: the
// sampler flags its first step is_init, which resets the core there. With lmbda, the targets are
// TD(lambda) returns along the sequences.
TEST(RecurrentTrainingTest, DqnWithoutStoredStatesStartsEverySequenceFromZeros) {
  const std::vector<std::string> overrides{
      "model.core=gru",         "model.hidden_size=8", "env.options.mask_velocity=true",
      "algo.sequence_length=8", "algo.burn_in=2",      "algo.stored_state=false",
      "algo.lmbda=0.8",         "replay.batch_size=32"};
  TempDir tmp;
  Trainer trainer(tiny_config("dqn", overrides), RunDir::create(tmp.path().string(), "t"));
  auto core = core_of(*trainer.recipe().actor);
  ASSERT_TRUE(core);
  // algo.lmbda: TD(lambda) targets along the sequences.
  const auto* estimator = dynamic_cast<const losses::TDLambdaEstimatorImpl*>(
      trainer.recipe().loss->value_estimator().get());
  ASSERT_NE(estimator, nullptr);
  EXPECT_DOUBLE_EQ(estimator->options().lmbda(), 0.8);
  const auto before = copies(core->parameters());
  int sampled = 0;
  trainer.add_hook(HookPoint::kBatch, [&](Trainer& t) {
    if (t.recipe().replay->size() < 64) return;
    const auto sample = t.recipe().replay->sample().reshape({-1, 8});
    const auto is_init = sample.get("is_init").reshape({4, 8});
    EXPECT_TRUE(is_init.select(1, 0).all().item<bool>());
    // Inside a sequence is_init stays where the episodes began.
    const auto ids = sample.get(collectors::traj_ids_key());
    const auto step = ids.slice(1, 1) - ids.slice(1, 0, -1);
    EXPECT_TRUE(step.gt(0).eq(is_init.slice(1, 1)).all().item<bool>());
    ++sampled;
  });
  ASSERT_TRUE(trainer.train());
  EXPECT_GT(sampled, 0);
  EXPECT_EQ(changed(before, core->parameters()), before.size());
}

TEST(RecurrentTrainingTest, ConfigsThatCannotTrainARecurrentCoreAreRefused) {
  EXPECT_THAT(error_message<ConfigError>(
                  [] { Trainer::check(tiny_config("ppo", {"algo.sequence_length=16"})); }),
              HasSubstr("'algo.sequence_length' is 16, but model.core is mlp"));
  EXPECT_THAT(error_message<ConfigError>([] {
                Trainer::check(recurrent_config("ppo", "lstm", {"algo.sequence_length=24"}));
              }),
              HasSubstr("'algo.sequence_length' is 24, which does not divide the 64 steps per "
                        "env of a batch"));
  for (const std::string algo : {"sac", "td3", "ddpg"}) {
    SCOPED_TRACE(algo);
    EXPECT_THAT(
        error_message<ConfigError>([&] { Trainer::check(tiny_config(algo, {"model.core=lstm"})); }),
        HasSubstr("'model.core' is lstm, but " + algo + " builds feed-forward networks only"));
  }
  EXPECT_THAT(
      error_message<ConfigError>([] { Trainer::check(tiny_config("ppo", {"model.core=rnn"})); }),
      HasSubstr("model.core"));
  EXPECT_THAT(
      error_message<ConfigError>([] { Trainer::check(tiny_config("dqn", {"algo.burn_in=2"})); }),
      HasSubstr("'algo.burn_in' is 2, but model.core is mlp"));
  EXPECT_THAT(error_message<ConfigError>(
                  [] { Trainer::check(tiny_config("dqn", {"algo.stored_state=false"})); }),
              HasSubstr("'algo.stored_state' is false, but model.core is mlp"));
  EXPECT_THAT(
      error_message<ConfigError>([] { Trainer::check(tiny_config("dqn", {"algo.lmbda=0.9"})); }),
      HasSubstr("'algo.lmbda' is 0.9, but model.core is mlp"));
  const auto message = error_message<ConfigError>([] {
    Trainer::check(tiny_config("dqn", {"model.core=lstm", "algo.sequence_length=10",
                                       "algo.burn_in=10", "replay.prioritized=true"}));
  });
  EXPECT_THAT(message, HasSubstr("'algo.burn_in' is 10, which leaves nothing"));
  EXPECT_THAT(message, HasSubstr("'replay.batch_size' is 32, not a multiple of "
                                 "algo.sequence_length 10"));
  EXPECT_THAT(message, HasSubstr("'replay.prioritized' is true, but a recurrent dqn"));
  EXPECT_THAT(error_message<ConfigError>([] {
                Trainer::check(tiny_config("dqn", {"model.core=lstm", "algo.sequence_length=128",
                                                   "replay.batch_size=128"}));
              }),
              HasSubstr("'algo.sequence_length' is 128, longer than the 64 steps per env"));
  // A captured update cannot hold a recurrent core's host reads (the task's own check; on the
  // CPU, train.cuda_graph is refused earlier for the device).
  for (const std::string algo : {"ppo", "dqn"}) {
    SCOPED_TRACE(algo);
    auto config =
        tiny_config(algo, {"model.core=lstm", "algo.sequence_length=8", "train.cuda_graph=true"});
    EXPECT_THAT(error_message<ConfigError>(
                    [&] { check_task_fit(config, acting_of(tiny_config(algo)).env.info); }),
                HasSubstr("'train.cuda_graph' is true, but model.core is lstm"));
  }
}

}  // namespace
}  // namespace tdrl::apps
