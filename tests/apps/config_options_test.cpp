// The config sections composed of the library parts' own options: every field a loss, value
// estimator, exploration module, transform or env task declares is a key of its section,
// validated at load like every other key; keys renamed to the library's names say so.

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tdrl/apps/config.h>
#include <tdrl/envs/transforms/reward.h>
#include <tdrl/losses/ppo.h>
#include <tdrl/losses/sac.h>
#include <tdrl/modules/egreedy.h>

#include "config_testing.h"

namespace tdrl::apps {
namespace {

using namespace config_testing;
using ::testing::HasSubstr;

// The keys a library options struct declares, with their library defaults.
template <class Options, class... Args>
std::vector<std::string> keys_of_options(Args... args) {
  Options options;
  Scalars out;
  ScalarCollector collector(out);
  options.fields(collector, args...);
  std::vector<std::string> keys;
  for (const auto& [k, v] : out.numbers) keys.push_back(k);
  for (const auto& [k, v] : out.strings) keys.push_back(k);
  for (const auto& [k, v] : out.bools) keys.push_back(k);
  return keys;
}

bool has_key(const Scalars& s, const std::string& key) {
  return s.numbers.count(key) || s.strings.count(key) || s.bools.count(key);
}

// The algorithm and transform sections hold the library parts' options, not copies: every field
// a loss, value estimator, exploration module or transform declares is a key of its section.
TEST_F(ConfigTest, SectionsComposeTheLibraryOptionsFields) {
  RunConfig ppo_config = load_yaml(kMinimal);
  const Scalars ppo = scalars_of(ppo_config);
  for (const auto& key : keys_of_options<losses::ClipPPOLossOptions>()) {
    SCOPED_TRACE(key);
    EXPECT_TRUE(has_key(ppo, "algo." + key));
  }
  for (const auto& key :
       keys_of_options<losses::ValueEstimatorOptions>(losses::ValueEstimatorType::kGAE))
    EXPECT_TRUE(has_key(ppo, "algo." + key)) << key;
  RunConfig sac_config = load_yaml(kMinimal, {"algo.name=sac", "env.name=Pendulum-v1"});
  const Scalars sac = scalars_of(sac_config);
  for (const auto& key : keys_of_options<losses::SACLossOptions>())
    EXPECT_TRUE(has_key(sac, "algo." + key)) << key;
  EXPECT_FALSE(has_key(sac, "algo.lmbda"));  // TD(0) reads gamma only
  RunConfig dqn_config = load_yaml(kMinimal, {"algo.name=dqn"});
  const Scalars dqn = scalars_of(dqn_config);
  for (const auto& key : keys_of_options<modules::EGreedyModuleOptions>())
    EXPECT_TRUE(has_key(dqn, "algo." + key)) << key;
  RunConfig clip_config =
      load_yaml(kMinimal, {"env.transforms=[{type: reward_clipping, clamp_min: -1}]"});
  const Scalars clip = scalars_of(clip_config);
  for (const auto& key : keys_of_options<envs::RewardClippingOptions>())
    EXPECT_TRUE(has_key(clip, "env.transforms[0]." + key)) << key;
  EXPECT_DOUBLE_EQ(clip.numbers.at("env.transforms[0].clamp_min"), -1);
  EXPECT_EQ(clip.strings.at("env.transforms[0].clamp_max"), "(none)");
}

// The keys renamed to the library options' names: a config written by tdrl 0.1 gets the new name,
// where the section knows it (loss_critic_type stays ppo's: the PPO loss's own name).
TEST_F(ConfigTest, RenamedKeyNamesItsNewName) {
  const std::string message = problems_of(
      "env:\n  name: CartPole-v1\nalgo:\n  name: dqn\n  loss_critic_type: l2\n"
      "  annealing_frames: 100\ncollector:\n  total_frames: 1000\n");
  EXPECT_THAT(message, HasSubstr("unknown key 'algo.loss_critic_type' (run.yaml line 5): it is "
                                 "'algo.loss_function' since"));
  EXPECT_THAT(message, HasSubstr("unknown key 'algo.annealing_frames' (run.yaml line 6): it is "
                                 "'algo.annealing_num_steps' since"));
  EXPECT_THAT(override_problems({"env.transforms=[{type: reward_clipping, max: 1}]"}),
              HasSubstr("it is 'env.transforms[0].clamp_max' since"));
  EXPECT_THAT(override_problems({"env.max_episode_steps=200"}),
              HasSubstr("it is 'env.options.max_episode_steps' since"));
  EXPECT_NO_THROW(load_yaml(kMinimal, {"algo.loss_critic_type=l1"}));
}

// A task's options are its Options struct's declared fields: typos, wrong types and values out of
// range are refused at load with the file's line, as for every other key.
TEST_F(ConfigTest, DeclaredTaskOptionsAreValidatedAtLoad) {
  const std::string message = problems_of(
      "env:\n  name: Acrobot-v1\n  options:\n    torque_noise_max: -1\n    book_or_nips: nip\n"
      "    gravty: 9\n    max_episode_steps: many\nalgo: {name: ppo}\n"
      "collector: {total_frames: 1000}\n");
  EXPECT_THAT(message, HasSubstr("(4 problems)"));
  EXPECT_THAT(message, HasSubstr("'env.options.torque_noise_max' (run.yaml line 4) is -1; it "
                                 "must be >= 0"));
  EXPECT_THAT(message, HasSubstr("'env.options.book_or_nips' (run.yaml line 5) is 'nip'; the "
                                 "choices are book and nips; did you mean 'nips'?"));
  EXPECT_THAT(message, HasSubstr("unknown key 'env.options.gravty' (run.yaml line 6)"));
  EXPECT_THAT(message, HasSubstr("'env.options.max_episode_steps' (run.yaml line 7) must be an "
                                 "int"));
  EXPECT_THAT(override_problems({"env.name=HalfCheetah-v4", "env.options={frame_skip: 0}"}),
              HasSubstr("'env.options.frame_skip' (--set env.options={frame_skip: 0}) is 0; it "
                        "must be >= 1"));
  // Unset optional numbers keep the task's default; a set one reaches the env.
  RunConfig cheetah =
      load_yaml(kMinimal, {"env.name=HalfCheetah-v4", "env.options={reset_noise_scale: 0.2}"});
  const Scalars s = scalars_of(cheetah);
  EXPECT_EQ(s.strings.at("env.options.frame_skip"), "(none)");
  EXPECT_DOUBLE_EQ(s.numbers.at("env.options.reset_noise_scale"), 0.2);
}

}  // namespace
}  // namespace tdrl::apps
