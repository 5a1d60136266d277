#pragma once

// Checks shared by the env test suites.

#include <cstdint>

#include <gtest/gtest.h>

#include <torch/torch.h>

#include <tdrl/envs/env_base.h>
#include <tensordict/tensor_dict.h>

namespace tdrl::testing {

/// `a` and `b` hold the same leaves (nested keys), each equal by torch::equal.
inline void expect_identical(const tensordict::TensorDict& a, const tensordict::TensorDict& b) {
  const auto keys = a.keys(/*include_nested=*/true, /*leaves_only=*/true);
  ASSERT_EQ(keys.size(), b.keys(true, true).size());
  for (const auto& key : keys) {
    ASSERT_TRUE(b.contains(key)) << key.to_string();
    EXPECT_TRUE(torch::equal(a.get(key), b.get(key))) << key.to_string();
  }
}

/// The checkpoint contract of EnvBase::state_dict: runs `env` `before` steps with random
/// actions and partial resets, saves its state, runs `after` more, and expects `fresh` (an env
/// built the same way, seeded otherwise or not at all) loaded with that state to give the same
/// `after` steps bit for bit. The state must say it resumes episodes.
inline void expect_state_dict_continues_the_stream(envs::EnvBase& env, envs::EnvBase& fresh,
                                                   int64_t before, int64_t after) {
  const auto keep_going = envs::RolloutOptions().break_when_any_done(false);
  const auto first = env.rollout(before, nullptr, keep_going);
  const auto root = envs::step_mdp(first.index({torch::indexing::Ellipsis, -1}));
  const auto saved = env.state_dict();
  EXPECT_TRUE(saved.get("resumes_episodes").item<bool>());
  const auto from = [&] {
    return envs::RolloutOptions(keep_going).auto_reset(false).tensordict(root.clone());
  };
  const auto expected = env.rollout(after, nullptr, from());
  fresh.load_state_dict(saved);
  const auto resumed = fresh.rollout(after, nullptr, from());
  const auto keys = expected.keys(/*include_nested=*/true, /*leaves_only=*/true);
  ASSERT_EQ(keys, resumed.keys(true, true));
  for (const auto& key : keys) {
    EXPECT_TRUE(torch::equal(resumed.get(key), expected.get(key))) << key.to_string();
  }
}

}  // namespace tdrl::testing
