// SerialEnv, ParallelEnv and their WorkerPool: specs expansion, reset/step/rollout shapes,
// partial reset, seeding, Serial == Parallel bit for bit, errors from sub-envs, shutdown.

#include <tdrl/envs/batched_envs.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <tdrl/envs/registry.h>
#include <tdrl/envs/transforms.h>
#include <tdrl/envs/worker_pool.h>
#include <tensordict/errors.h>

#include "support/env_checks.h"
#include "support/mock_envs.h"
#include "support/test_names.h"

namespace tdrl::envs {
namespace {

using namespace tdrl::testing::names;
using tdrl::testing::expect_identical;
using tdrl::testing::NoisyCounterEnv;
using tdrl::testing::NoisyCounterOptions;

EnvFactory counter_factory(NoisyCounterOptions options = {}) {
  return [options] { return std::make_shared<NoisyCounterEnv>(options); };
}

NoisyCounterEnv& counter(const BatchedEnvBase& env, int64_t i) {
  return dynamic_cast<NoisyCounterEnv&>(*env.env(i));
}

// The kinds the shared tests run on: SerialEnv and ParallelEnv with 2 workers.
enum class Kind { kSerial, kParallel };

std::unique_ptr<BatchedEnvBase> make_batched(Kind kind, int64_t n, const EnvFactory& factory) {
  if (kind == Kind::kSerial) return std::make_unique<SerialEnv>(n, factory);
  return std::make_unique<ParallelEnv>(n, factory, ParallelEnvOptions().num_threads(2));
}

// Every leaf of `a` equals the same leaf of `b`, bit for bit (same keys, shapes, dtypes).
class BatchedEnvTest : public ::testing::TestWithParam<Kind> {};

INSTANTIATE_TEST_SUITE_P(Kinds, BatchedEnvTest, ::testing::Values(Kind::kSerial, Kind::kParallel),
                         [](const ::testing::TestParamInfo<Kind>& info) {
                           return info.param == Kind::kSerial ? "Serial" : "Parallel";
                         });

// ---- Specs --------------------------------------------------------------------------------------

TEST_P(BatchedEnvTest, SpecsAreTheSubEnvSpecsExpandedToNumEnvs) {
  auto env = make_batched(GetParam(), 3, counter_factory(NoisyCounterOptions().obs_dim(4)));
  NoisyCounterEnv sub(NoisyCounterOptions().obs_dim(4));
  EXPECT_EQ(env->batch_size(), (Shape{3}));
  EXPECT_EQ(env->num_envs(), 3);
  EXPECT_EQ(*env->observation_spec(), *sub.observation_spec()->expand({3}));
  EXPECT_EQ(env->observation_spec()->get("observation")->shape(), (Shape{3, 4}));
  EXPECT_EQ(env->observation_spec()->get({"stats", "count"})->shape(), (Shape{3, 1}));
  EXPECT_EQ(*env->action_spec(), *sub.action_spec()->expand({3, 1}));
  EXPECT_EQ(env->reward_spec()->shape(), (Shape{3, 1}));
  EXPECT_EQ(env->full_done_spec()->get("truncated")->shape(), (Shape{3, 1}));
  EXPECT_EQ(env->full_done_spec()->get("done")->dtype(), torch::kBool);
}

TEST_P(BatchedEnvTest, BatchedSubEnvsGainALeadingDim) {
  auto env = make_batched(GetParam(), 3, counter_factory(NoisyCounterOptions().batch_size({2})));
  EXPECT_EQ(env->batch_size(), (Shape{3, 2}));
  EXPECT_EQ(env->observation_spec()->get("observation")->shape(), (Shape{3, 2, 2}));
  EXPECT_EQ(env->action_spec()->shape(), (Shape{3, 2, 1}));
  EXPECT_EQ(env->done_spec()->shape(), (Shape{3, 2, 1}));
}

TEST_P(BatchedEnvTest, PassesCheckEnvSpecs) {
  auto env = make_batched(GetParam(), 3, counter_factory(NoisyCounterOptions().episode_length(2)));
  EXPECT_NO_THROW(check_env_specs(*env, 5));
  auto nested = make_batched(GetParam(), 2, counter_factory(NoisyCounterOptions().batch_size({3})));
  EXPECT_NO_THROW(check_env_specs(*nested));
}

// ---- Reset, step, rollout -----------------------------------------------------------------------

TEST_P(BatchedEnvTest, ResetWritesEveryObservationAndFalseFlags) {
  auto env = make_batched(GetParam(), 3, counter_factory());
  env->set_seed(0);
  auto td = env->reset();
  EXPECT_EQ(td.batch_size(), (Shape{3}));
  EXPECT_EQ(td.get("observation").sizes(), (Shape{3, 2}));
  EXPECT_TRUE(torch::equal(td.get({"stats", "count"}), torch::zeros({3, 1}, torch::kInt64)));
  EXPECT_FALSE(td.get("done").any().item<bool>());
  for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(counter(*env, i).reset_calls, 1);
}

TEST_P(BatchedEnvTest, StepResultsEqualEachSubEnvSteppedAlone) {
  const uint64_t seed = 11;
  auto env = make_batched(GetParam(), 3, counter_factory(NoisyCounterOptions().episode_length(2)));
  env->set_seed(seed);
  auto td = env->reset();
  torch::manual_seed(0);
  td.set("action", torch::rand({3, 1}) * 2 - 1);
  env->step(td);

  for (int64_t i = 0; i < 3; ++i) {
    NoisyCounterEnv alone(NoisyCounterOptions().episode_length(2));
    alone.set_seed(seed + static_cast<uint64_t>(i));
    auto single = alone.reset();
    EXPECT_TRUE(torch::equal(single.get("observation"), td.get("observation")[i]));
    single.set("action", td.get("action")[i]);
    alone.step(single);
    for (const NestedKey& key :
         {NestedKey("observation"), NestedKey({"stats", "count"}), NestedKey("reward"),
          NestedKey("terminated"), NestedKey("truncated"), NestedKey("done")}) {
      EXPECT_TRUE(
          torch::equal(single.get(NestedKey({"next", key})), td.get(NestedKey({"next", key}))[i]))
          << "sub-env " << i << " key " << key.to_string();
    }
  }
}

TEST_P(BatchedEnvTest, StepReturnsFreshTensorsEachCall) {
  auto env = make_batched(GetParam(), 2, counter_factory());
  env->set_seed(0);
  auto first = env->rand_action(env->reset());
  env->step(first);
  const auto kept = first.get({"next", "observation"}).clone();
  auto second = env->rand_action(step_mdp(first));
  env->step(second);
  EXPECT_TRUE(torch::equal(first.get({"next", "observation"}), kept));
  EXPECT_FALSE(torch::equal(second.get({"next", "observation"}), kept));
}

TEST_P(BatchedEnvTest, RolloutHasBatchNumEnvsByTime) {
  auto env = make_batched(GetParam(), 3,
                          counter_factory(NoisyCounterOptions().batch_size({2}).episode_length(3)));
  env->set_seed(0);
  auto rollout = env->rollout(7, nullptr, RolloutOptions().break_when_any_done(false));
  EXPECT_EQ(rollout.batch_size(), (Shape{3, 2, 7}));
  EXPECT_EQ(rollout.get({"next", "observation"}).sizes(), (Shape{3, 2, 7, 2}));
  // Episodes of 3 steps, auto-reset: the counter before each step runs 0, 1, 2, 0, 1, 2, 0 and
  // every third step is done.
  using torch::indexing::Slice;
  const auto count = rollout.get({"stats", "count"}).index({Slice(), Slice(), Slice(), 0});
  const auto done = rollout.get({"next", "done"}).index({Slice(), Slice(), Slice(), 0});
  EXPECT_TRUE(torch::equal(count, torch::tensor({0, 1, 2, 0, 1, 2, 0}).expand({3, 2, 7})));
  EXPECT_TRUE(torch::equal(
      done, torch::tensor({false, false, true, false, false, true, false}).expand({3, 2, 7})));
}

TEST_P(BatchedEnvTest, RolloutStopsAtTheFirstDoneByDefault) {
  auto env = make_batched(GetParam(), 2, counter_factory(NoisyCounterOptions().episode_length(4)));
  env->set_seed(0);
  auto rollout = env->rollout(10);
  EXPECT_EQ(rollout.batch_size(), (Shape{2, 4}));
}

// ---- Partial reset ------------------------------------------------------------------------------

TEST_P(BatchedEnvTest, PartialResetOnlyResetsTheSelectedSubEnvs) {
  auto env = make_batched(GetParam(), 3, counter_factory());
  env->set_seed(3);
  auto td = env->rand_action(env->reset());
  env->step(td);
  auto root = step_mdp(td);
  const auto before = root.get("observation").clone();
  root.set("_reset", torch::tensor({true, false, true}).unsqueeze(-1));
  auto out = env->reset(root);

  EXPECT_FALSE(out.contains("_reset"));
  EXPECT_EQ(counter(*env, 0).reset_calls, 2);
  EXPECT_EQ(counter(*env, 1).reset_calls, 1);
  EXPECT_EQ(counter(*env, 2).reset_calls, 2);
  EXPECT_TRUE(torch::equal(out.get("observation")[1], before[1]));
  EXPECT_FALSE(torch::equal(out.get("observation")[0], before[0]));
  EXPECT_TRUE(torch::equal(out.get({"stats", "count"}),
                           torch::tensor({0, 1, 0}, torch::kInt64).unsqueeze(-1)));
}

TEST_P(BatchedEnvTest, PartialResetKeepsTheLastObservationWithoutTheInput) {
  auto env = make_batched(GetParam(), 2, counter_factory());
  env->set_seed(5);
  auto td = env->rand_action(env->reset());
  env->step(td);
  // A fresh TensorDict holding only the mask: sub-env 1 reports its observation after the step.
  TensorDict request({{"_reset", torch::tensor({true, false}).unsqueeze(-1)}}, {2});
  auto out = env->reset(request);
  EXPECT_TRUE(torch::equal(out.get("observation")[1], td.get({"next", "observation"})[1]));
  EXPECT_EQ(out.get({"stats", "count"})[1].item<int64_t>(), 1);
  EXPECT_EQ(out.get({"stats", "count"})[0].item<int64_t>(), 0);
}

TEST_P(BatchedEnvTest, PartialResetPassesTheSubMaskToBatchedSubEnvs) {
  auto env = make_batched(GetParam(), 2, counter_factory(NoisyCounterOptions().batch_size({2})));
  env->set_seed(1);
  auto td = env->rand_action(env->reset());
  env->step(td);
  auto root = step_mdp(td);
  const auto before = root.get("observation").clone();
  // Sub-env 0: entry 1 only; sub-env 1: nothing.
  root.set("_reset", torch::tensor({{false, true}, {false, false}}).unsqueeze(-1));
  auto out = env->reset(root);
  EXPECT_EQ(counter(*env, 0).reset_calls, 2);
  EXPECT_EQ(counter(*env, 1).reset_calls, 1);
  EXPECT_TRUE(torch::equal(out.get("observation")[0][0], before[0][0]));
  EXPECT_FALSE(torch::equal(out.get("observation")[0][1], before[0][1]));
  EXPECT_TRUE(torch::equal(out.get("observation")[1], before[1]));
  EXPECT_TRUE(torch::equal(out.get({"stats", "count"}),
                           torch::tensor({{1, 0}, {1, 1}}, torch::kInt64).unsqueeze(-1)));
}

// ---- Seeding and determinism --------------------------------------------------------------------

TEST_P(BatchedEnvTest, SetSeedChainsSeedsThroughTheSubEnvs) {
  auto env = make_batched(GetParam(), 3, counter_factory());
  EXPECT_EQ(env->set_seed(10), 13u);
  auto a = env->reset().get("observation");
  env->set_seed(10);
  EXPECT_TRUE(torch::equal(env->reset().get("observation"), a));
  // Sub-env 1 was seeded with 11.
  NoisyCounterEnv alone;
  alone.set_seed(11);
  EXPECT_TRUE(torch::equal(alone.reset().get("observation"), a[1]));
}

EnvFactory pendulum_factory() {
  register_builtin_envs();
  return [] { return make_env("Pendulum-v1", EnvOptions().set("max_episode_steps", 9)); };
}

// A checkpoint mid-episode, with sub-envs at different points of their episodes (partial
// resets every 9 steps): a fresh batched env loaded with the state continues the stream.
TEST_P(BatchedEnvTest, StateDictContinuesTheStreamInAFreshEnvBitForBit) {
  auto env = make_batched(GetParam(), 3, pendulum_factory());
  env->set_seed(2);
  EXPECT_TRUE(env->state_dict().contains({"envs", "2", "state"}));
  auto fresh = make_batched(GetParam(), 3, pendulum_factory());
  tdrl::testing::expect_state_dict_continues_the_stream(*env, *fresh, 13, 20);
}

// A sub-env rejecting its part is named, and the sub-envs loaded before it are rolled back.
TEST_P(BatchedEnvTest, LoadStateDictFailingInASubEnvNamesItAndChangesNothing) {
  auto env = make_batched(GetParam(), 3, pendulum_factory());
  env->set_seed(4);
  env->rollout(5, nullptr, RolloutOptions().break_when_any_done(false));
  const TensorDict before = env->state_dict();
  auto other = make_batched(GetParam(), 3, pendulum_factory());
  other->set_seed(9);
  TensorDict bad = other->state_dict();
  bad.set({"envs", "1", "state"}, torch::zeros({5}, torch::kFloat64));
  EXPECT_THAT(error_message<tensordict::ShapeError>([&] { env->load_state_dict(bad); }),
              AllOf(HasSubstr("sub-env 1: "), HasSubstr("'state' has shape [5]")));
  expect_identical(env->state_dict(), before);
}

// The episode limit is the sub-envs', through a TransformedEnv as well; 0 for an env that
// does not say.
TEST_P(BatchedEnvTest, MaxEpisodeStepsIsTheSubEnvs) {
  auto env = make_batched(GetParam(), 2, pendulum_factory());
  EXPECT_EQ(env->max_episode_steps(), 9);
  EXPECT_EQ(TransformedEnv(std::move(env)).max_episode_steps(), 9);
  EXPECT_EQ(make_batched(GetParam(), 2, counter_factory())->max_episode_steps(), 0);
}

// Sub-envs that do not save their state (NoisyCounter) make the batched env's state
// incomplete: whoever loads it must reset.
TEST_P(BatchedEnvTest, SubEnvsWithoutSaveStateDoNotResumeEpisodes) {
  auto env = make_batched(GetParam(), 2, counter_factory());
  EXPECT_FALSE(env->state_dict().get("resumes_episodes").item<bool>());
}

TEST(ParallelEnvTest, SameSeedsGiveSerialEnvResultsBitForBit) {
  const auto factory =
      counter_factory(NoisyCounterOptions().batch_size({2}).obs_dim(3).episode_length(5));
  for (int64_t threads : {1, 2, 3}) {
    SerialEnv serial(5, factory);
    ParallelEnv parallel(5, factory, ParallelEnvOptions().num_threads(threads));
    serial.set_seed(42);
    parallel.set_seed(42);
    const auto options = RolloutOptions().break_when_any_done(false);
    auto a = serial.rollout(40, nullptr, options);
    auto b = parallel.rollout(40, nullptr, options);
    expect_identical(a, b);
  }
}

TEST(ParallelEnvTest, StepsSubEnvsOnWorkerThreads) {
  ParallelEnv env(4, counter_factory(), ParallelEnvOptions().num_threads(2));
  env.set_seed(0);
  env.step(env.rand_action(env.reset()));
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(counter(env, i).step_calls, 1);
    EXPECT_NE(counter(env, i).last_step_thread, std::this_thread::get_id());
  }
}

TEST(ParallelEnvTest, WorkersRunInTheCallersGradMode) {
  ParallelEnv env(2, counter_factory(), ParallelEnvOptions().num_threads(2));
  auto td = env.rand_action(env.reset());
  td.set("action", td.get("action").clone().requires_grad_());
  {
    torch::NoGradGuard no_grad;
    env.step(td);
  }
  // In a worker's default grad mode, copying the sub-env's result would record a graph.
  EXPECT_FALSE(td.get({"next", "observation"}).requires_grad());
}

TEST(ParallelEnvTest, NumThreadsIsCappedAtTheNumberOfSubEnvs) {
  ParallelEnv env(2, counter_factory(), ParallelEnvOptions().num_threads(8));
  EXPECT_EQ(env.num_threads(), 2);
}

// ---- Errors -------------------------------------------------------------------------------------

TEST_P(BatchedEnvTest, SubEnvExceptionIsRethrownWithItsIndex) {
  int64_t built = 0;
  EnvFactory factory = [&built] {
    NoisyCounterOptions options;
    if (built++ == 2) options.fail_at_step(2);
    return std::make_shared<NoisyCounterEnv>(options);
  };
  auto env = make_batched(GetParam(), 4, factory);
  env->set_seed(0);
  auto td = env->rand_action(env->reset());
  env->step(td);
  auto next = env->rand_action(step_mdp(td));
  const auto kind = GetParam() == Kind::kSerial ? "SerialEnv" : "ParallelEnv";
  EXPECT_THAT([&] { env->step(next); },
              ::testing::ThrowsMessage<tensordict::ValueError>(AllOf(
                  HasSubstr(std::string(kind) + "::step: sub-env 2 of 4 (NoisyCounter) threw"),
                  HasSubstr("step 2 fails on purpose"))));
  EXPECT_FALSE(next.contains("next"));
}

TEST_P(BatchedEnvTest, LowestFailingSubEnvIsReported) {
  auto env = make_batched(GetParam(), 4, counter_factory(NoisyCounterOptions().fail_at_step(1)));
  env->set_seed(0);
  auto td = env->rand_action(env->reset());
  EXPECT_THAT([&] { env->step(td); },
              ::testing::ThrowsMessage<tensordict::ValueError>(
                  AllOf(HasSubstr("sub-env 0 of 4"), Not(HasSubstr("sub-env 1")))));
}

TEST_P(BatchedEnvTest, ForeignExceptionBecomesRuntimeErrorWithTheIndex) {
  int64_t built = 0;
  EnvFactory factory = [&built] {
    NoisyCounterOptions options;
    if (built++ == 1) options.fail_at_step(1).fail_with_runtime_error(true);
    return std::make_shared<NoisyCounterEnv>(options);
  };
  auto env = make_batched(GetParam(), 2, factory);
  auto td = env->rand_action(env->reset());
  EXPECT_THAT([&] { env->step(td); },
              ::testing::ThrowsMessage<std::runtime_error>(
                  AllOf(HasSubstr("sub-env 1 of 2"), HasSubstr("fails on purpose"))));
}

TEST_P(BatchedEnvTest, SubEnvWritingTheWrongShapeThrowsShapeError) {
  auto env = make_batched(GetParam(), 2,
                          counter_factory(NoisyCounterOptions().wrong_observation_shape(true)));
  auto td = env->rand_action(env->reset());
  EXPECT_THAT([&] { env->step(td); },
              ::testing::ThrowsMessage<tensordict::ShapeError>(
                  AllOf(HasSubstr("sub-env 0 of 2"), HasSubstr("'observation' with shape [3]"),
                        HasSubstr("its spec says [2]"))));
}

TEST_P(BatchedEnvTest, RecoversAfterASubEnvThrew) {
  auto env = make_batched(GetParam(), 3, counter_factory(NoisyCounterOptions().fail_at_step(1)));
  auto td = env->rand_action(env->reset());
  EXPECT_THROW(env->step(td), tensordict::ValueError);
  auto again = env->rand_action(env->reset());
  EXPECT_NO_THROW(env->step(again));
  EXPECT_EQ(again.get({"next", "stats", "count"}).sum().item<int64_t>(), 3);
}

TEST_P(BatchedEnvTest, SubEnvsWithDifferentSpecsAreRejected) {
  int64_t built = 0;
  EnvFactory factory = [&built] {
    NoisyCounterOptions options;
    options.obs_dim(built++ == 1 ? 3 : 2);
    return std::make_shared<NoisyCounterEnv>(options);
  };
  EXPECT_THAT([&] { make_batched(GetParam(), 3, factory); },
              ::testing::ThrowsMessage<tensordict::ValueError>(
                  AllOf(HasSubstr("sub-env 1's observation_spec differs from sub-env 0's"),
                        HasSubstr("torch.Size([3])"), HasSubstr("torch.Size([2])"))));
}

TEST_P(BatchedEnvTest, SubEnvsWithDifferentBatchSizesAreRejected) {
  int64_t built = 0;
  EnvFactory factory = [&built] {
    NoisyCounterOptions options;
    if (built++ == 1) options.batch_size({2});
    return std::make_shared<NoisyCounterEnv>(options);
  };
  EXPECT_THAT([&] { make_batched(GetParam(), 2, factory); },
              ::testing::ThrowsMessage<tensordict::ValueError>(
                  HasSubstr("sub-env 1's batch_size differs from sub-env 0's")));
}

TEST_P(BatchedEnvTest, TheSameInstanceTwiceIsRejected) {
  auto shared = std::make_shared<NoisyCounterEnv>();
  EXPECT_THAT([&] { make_batched(GetParam(), 2, [shared] { return shared; }); },
              ::testing::ThrowsMessage<tensordict::ValueError>(
                  HasSubstr("sub-envs 0 and 1 are the same instance")));
}

TEST_P(BatchedEnvTest, BadConstructorArgumentsThrowValueError) {
  EXPECT_THAT([&] { make_batched(GetParam(), 0, counter_factory()); },
              ::testing::ThrowsMessage<tensordict::ValueError>(
                  HasSubstr("the number of sub-envs is 0; it must be >= 1")));
  EXPECT_THAT([&] { make_batched(GetParam(), 2, EnvFactory()); },
              ::testing::ThrowsMessage<tensordict::ValueError>(HasSubstr("factory is empty")));
  EXPECT_THAT([&] { make_batched(GetParam(), 2, [] { return std::shared_ptr<EnvBase>(); }); },
              ::testing::ThrowsMessage<tensordict::ValueError>(
                  HasSubstr("returned a null env for sub-env 0")));
}

TEST(ParallelEnvTest, ZeroThreadsIsRejected) {
  EXPECT_THAT([] { ParallelEnv(2, counter_factory(), ParallelEnvOptions().num_threads(0)); },
              ::testing::ThrowsMessage<tensordict::ValueError>(
                  HasSubstr("ParallelEnv: num_threads is 0; it must be >= 1")));
}

TEST_P(BatchedEnvTest, EnvIndexOutOfRangeThrowsIndexError) {
  auto env = make_batched(GetParam(), 2, counter_factory());
  EXPECT_THAT([&] { env->env(2); }, ::testing::ThrowsMessage<tensordict::IndexError>(
                                        HasSubstr("index 2 is out of range for 2 sub-envs")));
}

// ---- Printing -----------------------------------------------------------------------------------

TEST(SerialEnvTest, PrintsNumEnvsSubEnvAndBatchSize) {
  SerialEnv env(4, counter_factory());
  EXPECT_EQ(env.to_string(),
            "SerialEnv(num_envs=4, env=NoisyCounter(batch_size=[], device=cpu), batch_size=[4], "
            "device=cpu)");
}

TEST(ParallelEnvTest, PrintsNumThreads) {
  ParallelEnv env(3, counter_factory(NoisyCounterOptions().batch_size({2})),
                  ParallelEnvOptions().num_threads(2));
  std::ostringstream os;
  os << env;
  EXPECT_EQ(os.str(),
            "ParallelEnv(num_envs=3, env=NoisyCounter(batch_size=[2], device=cpu), "
            "batch_size=[3, 2], device=cpu, num_threads=2)");
}

// ---- Shutdown -----------------------------------------------------------------------------------

TEST(ParallelEnvTest, DestructorJoinsIdleWorkersRightAfterConstruction) {
  for (int i = 0; i < 50; ++i) {
    ParallelEnv env(3, counter_factory(), ParallelEnvOptions().num_threads(3));
    EXPECT_EQ(env.num_threads(), 3);
  }
}

TEST(ParallelEnvTest, DestructorAfterAFailedStepReleasesTheSubEnvs) {
  auto env = std::make_unique<ParallelEnv>(
      4,
      counter_factory(
          NoisyCounterOptions().fail_at_step(1).step_delay(std::chrono::milliseconds(2))),
      ParallelEnvOptions().num_threads(2));
  std::vector<std::shared_ptr<EnvBase>> subs;
  for (int64_t i = 0; i < 4; ++i) subs.push_back(env->env(i));
  auto td = env->rand_action(env->reset());
  EXPECT_THROW(env->step(td), tensordict::ValueError);
  env.reset();
  for (const auto& sub : subs) {
    EXPECT_EQ(sub.use_count(), 1);  // the workers and the env let go of it
    EXPECT_EQ(dynamic_cast<NoisyCounterEnv&>(*sub).step_calls, 1);
  }
}

// ---- WorkerPool ---------------------------------------------------------------------------------

TEST(WorkerPoolTest, ParallelForRunsEveryIndexOnce) {
  WorkerPool pool(2);
  std::vector<std::atomic<int>> hits(100);
  pool.parallel_for(100, [&](int64_t i) { hits[static_cast<size_t>(i)].fetch_add(1); });
  for (const auto& h : hits) EXPECT_EQ(h.load(), 1);
}

TEST(WorkerPoolTest, ManyJobsInARowEachSeeTheirOwnTask) {
  WorkerPool pool(3);
  for (int64_t job = 0; job < 500; ++job) {
    std::atomic<int64_t> sum{0};
    pool.parallel_for(job % 7, [&sum, job](int64_t i) { sum.fetch_add(job * 100 + i); });
    const int64_t n = job % 7;
    EXPECT_EQ(sum.load(), job * 100 * n + n * (n - 1) / 2) << "job " << job;
  }
}

TEST(WorkerPoolTest, WaitRethrowsATaskExceptionAfterEveryTaskRan) {
  WorkerPool pool(2);
  std::atomic<int> ran{0};
  EXPECT_THAT(
      [&] {
        pool.parallel_for(10, [&](int64_t i) {
          ran.fetch_add(1);
          if (i == 4) throw tensordict::KeyError("task 4 failed");
        });
      },
      ::testing::ThrowsMessage<tensordict::KeyError>(HasSubstr("task 4 failed")));
  EXPECT_EQ(ran.load(), 10);
  // The pool is usable afterwards.
  pool.parallel_for(3, [&](int64_t) { ran.fetch_add(1); });
  EXPECT_EQ(ran.load(), 13);
}

TEST(WorkerPoolTest, DestructorWaitsForPendingWork) {
  std::atomic<int> done{0};
  {
    WorkerPool pool(2);
    pool.dispatch(6, [&](int64_t) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      done.fetch_add(1);
    });
  }
  EXPECT_EQ(done.load(), 6);
}

TEST(WorkerPoolTest, DestructorDropsAPendingJobsException) {
  std::atomic<int> done{0};
  {
    WorkerPool pool(1);
    pool.dispatch(3, [&](int64_t i) {
      done.fetch_add(1);
      if (i == 0) throw std::runtime_error("never seen");
    });
  }
  EXPECT_EQ(done.load(), 3);
}

TEST(WorkerPoolTest, RunsTasksOffTheCallingThread) {
  WorkerPool pool(2);
  std::vector<std::thread::id> ids(8);
  pool.parallel_for(8,
                    [&](int64_t i) { ids[static_cast<size_t>(i)] = std::this_thread::get_id(); });
  for (const auto& id : ids) EXPECT_NE(id, std::this_thread::get_id());
}

TEST(WorkerPoolTest, BadArgumentsThrowValueError) {
  EXPECT_THAT([] { WorkerPool pool(0); },
              ::testing::ThrowsMessage<tensordict::ValueError>(
                  HasSubstr("WorkerPool: num_threads is 0; it must be >= 1")));
  WorkerPool pool(1);
  EXPECT_THAT([&] { pool.dispatch(-1, [](int64_t) {}); },
              ::testing::ThrowsMessage<tensordict::ValueError>(HasSubstr("count is -1")));
}

}  // namespace
}  // namespace tdrl::envs
