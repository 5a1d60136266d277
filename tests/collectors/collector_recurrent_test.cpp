// A recurrent policy in a Collector: TensorDictPrimer and InitTracker give it its state at
// every step; the state runs on from step to step and from batch to batch, restarts from zero
// exactly where a sub-env resets, and leaves the other sub-envs' states alone.

#include <tdrl/envs/transforms/all.h>
#include <tdrl/modules/q_value.h>
#include <tdrl/modules/recurrent.h>

#include "collector_test_fixtures.h"

namespace tdrl::collectors {
namespace {

// CartPole with the two transforms a recurrent policy needs, and a greedy recurrent Q-policy:
// LSTM over the observation, a linear head, argmax.
struct RecurrentSetup {
  modules::LSTMModule lstm{
      modules::RecurrentModuleOptions(4, 8).in_key("observation").out_key("embed")};
  std::shared_ptr<envs::TransformedEnv> env;
  tdnn::TensorDictSequential policy{nullptr};

  explicit RecurrentSetup(Shape batch) {
    torch::manual_seed(0);
    env = std::make_shared<envs::TransformedEnv>(make("CartPole-v1", batch));
    env->append_transform(std::make_shared<envs::InitTracker>());
    env->append_transform(std::make_shared<envs::TensorDictPrimer>(lstm->hidden_specs()));
    torch::nn::Linear head(8, 2);
    policy = tdnn::TensorDictSequential(
        lstm,
        tdnn::TensorDictModule(
            head, tdnn::TensorDictModuleOptions().in_keys({"embed"}).out_keys({"action_value"})),
        modules::QValueModule(modules::QValueModuleOptions().spec(env->action_spec())));
  }
};

TEST(CollectorRecurrentTest, ThePrimedEnvPassesTheSpecChecksWithTheStateInItsSpecs) {
  RecurrentSetup setup({3});
  envs::check_env_specs(*setup.env);
  EXPECT_EQ(setup.env->observation_spec()->get("recurrent_state_h")->shape(), (Shape{3, 1, 8}));
}

TEST(CollectorRecurrentTest, TheStateRunsOnAcrossStepsAndBatchesAndRestartsAtResets) {
  RecurrentSetup setup({3});
  Collector collector(setup.env, setup.policy, options(3 * 40));
  collector.set_seed(1);
  std::optional<TensorDict> previous;
  int64_t resets_inside = 0;
  for (int b = 0; b < 3; ++b) {
    const auto batch = collector.next();
    ASSERT_TRUE(batch.has_value());
    const auto h = batch->get("recurrent_state_h");                 // [3, T, 1, 8]
    const auto h_next = batch->get({"next", "recurrent_state_h"});  // [3, T, 1, 8]
    const auto init = batch->get("is_init").squeeze(-1);            // [3, T]
    const int64_t T = h.size(1);
    for (int64_t e = 0; e < 3; ++e) {
      for (int64_t t = 0; t < T; ++t) {
        const bool first = init[e][t].item<bool>();
        if (first) {
          // Where a sub-env (re)starts, its state is zero.
          EXPECT_TRUE(torch::all(h[e][t] == 0).item<bool>()) << "e=" << e << " t=" << t;
          if (t > 0) ++resets_inside;
          continue;
        }
        // Otherwise it is the state the policy wrote at the step before, in this batch or at
        // the end of the one before.
        const auto before =
            t > 0 ? h_next[e][t - 1] : previous->get({"next", "recurrent_state_h"})[e][-1];
        if (t == 0 && !previous) continue;
        EXPECT_TRUE(torch::equal(h[e][t], before)) << "b=" << b << " e=" << e << " t=" << t;
      }
    }
    previous = batch;
  }
  // CartPole's greedy episodes end within the batches: resets happened inside them. The state
  // moved (a state stuck at zero would pass the checks above vacuously).
  EXPECT_GT(resets_inside, 0);
  EXPECT_GT(previous->get("recurrent_state_h").abs().sum().item<double>(), 0);
  EXPECT_GT(previous->get("recurrent_state_c").abs().sum().item<double>(), 0);
}

}  // namespace
}  // namespace tdrl::collectors
