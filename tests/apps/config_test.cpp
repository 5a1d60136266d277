// The typed training config: defaults, every kind of problem and its message, the range of every
// numeric field, `--set` overrides, to_yaml, docs/config.md, and a user-registered algorithm.

#include <tdrl/apps/config.h>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tdrl/apps/registry.h>
#include <tdrl/apps/trainer.h>
#include <tdrl/envs/registry.h>
#include <torch/cuda.h>

#include "config_testing.h"
#include "support/build_paths.h"
#include "support/count_of.h"
#include "support/error_message.h"
#include "support/temp_dir.h"

namespace tdrl::apps {
namespace {

using tdrl::test_util::error_message;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

using tdrl::testing::count_of;
using namespace config_testing;

// ---- defaults ----------------------------------------------------------------------------------

TEST_F(ConfigTest, MinimalConfigHasTheSectionDefaults) {
  RunConfig config = load_yaml(kMinimal);
  EXPECT_EQ(config.name, "");
  EXPECT_EQ(config.seed, 0);
  EXPECT_EQ(config.threads, 1);
  EXPECT_EQ(config.device, "cpu");
  EXPECT_THAT(config.plugins, IsEmpty());
  EXPECT_EQ(config.env.name, "CartPole-v1");
  EXPECT_EQ(config.env.num_envs, 1);
  EXPECT_FALSE(config.env.parallel);
  ASSERT_NE(config.env.options, nullptr);  // CartPole-v1 declares its task options
  EXPECT_THAT(config.env.free_options, IsEmpty());
  EXPECT_DOUBLE_EQ(scalars_of(config).numbers.at("env.options.gravity"), 9.8);
  EXPECT_EQ(config.env.transforms.size(), 0u);
  EXPECT_THAT(config.model.actor_cells, ElementsAre(64, 64));
  EXPECT_THAT(config.model.critic_cells, ElementsAre(64, 64));
  EXPECT_EQ(config.model.layers.activation(), "tanh");
  EXPECT_EQ(config.algo.name, "ppo");
  EXPECT_NE(config.algo.options, nullptr);
  EXPECT_EQ(config.collector.limits.total_frames(), 1000);
  EXPECT_EQ(config.collector.limits.frames_per_batch(), 1000);
  EXPECT_EQ(config.collector.mode, "single");
  EXPECT_EQ(config.collector.workers.port(), 0);
  EXPECT_EQ(config.collector.workers.timeout(), std::chrono::seconds(120));
  EXPECT_EQ(config.optim.optimizer.name(), "adam");
  EXPECT_DOUBLE_EQ(config.optim.optimizer.lr(), 3e-4);
  EXPECT_DOUBLE_EQ(config.optim.actor_lr, -1);
  EXPECT_DOUBLE_EQ(config.optim.optimizer.eps(), 1e-8);
  EXPECT_EQ(config.optim.lr_schedule, "constant");
  EXPECT_EQ(config.logger.dir, "runs");
  EXPECT_EQ(config.logger.progress, "auto");
  EXPECT_EQ(config.eval.interval_frames, 0);
  EXPECT_EQ(config.eval.episodes, 10);
  EXPECT_EQ(config.checkpoint.interval_frames, 0);
  EXPECT_TRUE(config.checkpoint.save_replay);
}

TEST_F(ConfigTest, AlgorithmOptionsHaveTheirDefaults) {
  RunConfig ppo = load_yaml(kMinimal);
  const Scalars p = scalars_of(ppo);
  EXPECT_DOUBLE_EQ(p.numbers.at("algo.gamma"), 0.99);
  EXPECT_DOUBLE_EQ(p.numbers.at("algo.clip_epsilon"), 0.2);
  EXPECT_DOUBLE_EQ(p.numbers.at("algo.num_epochs"), 10);
  EXPECT_EQ(p.strings.at("algo.loss_critic_type"), "l2");
  EXPECT_TRUE(p.bools.at("algo.normalize_advantage"));
  EXPECT_EQ(p.numbers.count("algo.eps_init"), 0u);

  RunConfig dqn = load_yaml(kMinimal, {"algo.name=dqn"});
  const Scalars d = scalars_of(dqn);
  EXPECT_DOUBLE_EQ(d.numbers.at("algo.eps_init"), 1.0);
  EXPECT_TRUE(d.bools.at("algo.double_dqn"));
  EXPECT_DOUBLE_EQ(d.numbers.at("replay.capacity"), 1'000'000);
  EXPECT_EQ(d.numbers.count("algo.clip_epsilon"), 0u);
}

TEST_F(ConfigTest, ReplaySectionExistsOnlyForAlgorithmsWithAReplayBuffer) {
  for (const std::string algo : {"ppo", "a2c"}) {
    SCOPED_TRACE(algo);
    EXPECT_EQ(load_yaml(kMinimal, {"algo.name=" + algo}).replay(), nullptr);
  }
  for (const std::string algo : {"dqn", "ddpg", "td3", "sac"}) {
    SCOPED_TRACE(algo);
    const RunConfig config = load_yaml(kMinimal, {"algo.name=" + algo});
    ASSERT_NE(config.replay(), nullptr);
    EXPECT_EQ(config.replay()->capacity, 1'000'000);
    EXPECT_EQ(config.replay()->batch_size, 256);
  }
  EXPECT_EQ(load_yaml(kMinimal, {"algo.name=dqn", "replay.capacity=5000"}).replay()->capacity,
            5000);
  EXPECT_THAT(override_problems({"replay.capacity=5000"}), HasSubstr("unknown key 'replay'"));
}

TEST_F(ConfigTest, RunNameDefaultsToAlgoAndEnv) {
  EXPECT_EQ(load_yaml(kMinimal).run_name(), "ppo_CartPole-v1");
  EXPECT_EQ(load_yaml(kMinimal, {"name=cartpole_run"}).run_name(), "cartpole_run");
}

TEST_F(ConfigTest, EmptyListOrMapValueMeansEmpty) {
  const RunConfig config = load_yaml(
      "env:\n  name: CartPole-v1\n  options:\n  transforms:\nalgo: {name: ppo}\n"
      "collector: {total_frames: 1000}\nmodel:\n  actor_cells:\nplugins:\n");
  ASSERT_NE(config.env.options, nullptr);
  EXPECT_THAT(config.env.free_options, IsEmpty());
  EXPECT_EQ(config.env.transforms.size(), 0u);
  EXPECT_THAT(config.model.actor_cells, IsEmpty());
  EXPECT_THAT(config.model.critic_cells, ElementsAre(64, 64));
  EXPECT_THAT(config.plugins, IsEmpty());
}

TEST_F(ConfigTest, TransformsAreReadIntoTheirOwnSections) {
  RunConfig config = load_yaml(
      "env:\n"
      "  name: CartPole-v1\n"
      "  options: {gravity: 9.0, sutton_barto_reward: true}\n"
      "  transforms:\n"
      "    - type: step_counter\n"
      "      max_steps: 50\n"
      "    - {type: observation_norm, keys: [observation], scale: 2.5}\n"
      "algo: {name: ppo}\n"
      "collector: {total_frames: 1000}\n");
  const Scalars task = scalars_of(config);
  EXPECT_DOUBLE_EQ(task.numbers.at("env.options.gravity"), 9.0);
  EXPECT_TRUE(task.bools.at("env.options.sutton_barto_reward"));
  const auto& transforms = config.env.transforms.items;
  ASSERT_EQ(transforms.size(), 2u);
  EXPECT_EQ(transforms[0].type, "step_counter");
  EXPECT_EQ(transforms[1].type, "observation_norm");
  EXPECT_NE(transforms[0].options, nullptr);
  const Scalars s = scalars_of(config);
  EXPECT_DOUBLE_EQ(s.numbers.at("env.transforms[0].max_steps"), 50);
  EXPECT_DOUBLE_EQ(s.numbers.at("env.transforms[1].scale"), 2.5);
  EXPECT_DOUBLE_EQ(s.numbers.at("env.transforms[1].loc"), 0);
}

// ---- problems ----------------------------------------------------------------------------------

TEST_F(ConfigTest, UnknownKeyNamesLineAndSuggestsTheClosestKey) {
  const std::string message = problems_of(
      "env:\n  name: CartPole-v1\nalgo:\n  name: ppo\n  gama: 0.9\n"
      "collector:\n  total_frames: 1000\n");
  EXPECT_THAT(message, HasSubstr("invalid config run.yaml (1 problem):"));
  EXPECT_THAT(message,
              HasSubstr("unknown key 'algo.gama' (run.yaml line 5); did you mean 'algo.gamma'?"));
  EXPECT_THAT(problems_of(std::string(kMinimal) + "sed: 3\n"),
              HasSubstr("unknown key 'sed' (run.yaml line 7); did you mean 'seed'?"));
}

TEST_F(ConfigTest, UnknownKeyFarFromEveryKeyListsTheKeysOfItsSection) {
  const std::string message = problems_of(std::string(kMinimal) + "zzzzzzzz: 1\n");
  EXPECT_THAT(message, HasSubstr("unknown key 'zzzzzzzz' (run.yaml line 7)"));
  EXPECT_THAT(message, HasSubstr("the keys of the document are name, seed, threads"));
  EXPECT_THAT(message, HasSubstr("docs/config.md lists every key"));
}

TEST_F(ConfigTest, KeyOfAnotherAlgorithmSaysWhichAlgorithmsOwnIt) {
  EXPECT_THAT(problems_of("env:\n  name: Pendulum-v1\nalgo:\n  name: ddpg\n  policy_delay: 2\n"
                          "collector:\n  total_frames: 1000\n"),
              HasSubstr("unknown key 'algo.policy_delay' (run.yaml line 5): it is an option of "
                        "td3 only, and algo.name is ddpg; remove it"));
  EXPECT_THAT(problems_of("env:\n  name: Pendulum-v1\nalgo:\n  name: sac\n  lmbda: 0.9\n"
                          "collector:\n  total_frames: 1000\n"),
              HasSubstr("unknown key 'algo.lmbda' (run.yaml line 5): it is an option of a2c, "
                        "dqn and ppo only"));
}

TEST_F(ConfigTest, KeyOfAnotherTransformSaysWhichTransformOwnsIt) {
  EXPECT_THAT(problems_of("env:\n  name: CartPole-v1\n  transforms:\n    - type: step_counter\n"
                          "      decay: 0.9\nalgo: {name: ppo}\ncollector: {total_frames: 1000}\n"),
              HasSubstr("unknown key 'env.transforms[0].decay' (run.yaml line 5): it is an option "
                        "of vec_norm only, and env.transforms[0].type is step_counter"));
}

TEST_F(ConfigTest, UnknownAlgorithmNameSkipsTheCheckOfItsKeys) {
  const std::string message = problems_of(
      "env:\n  name: CartPole-v1\nalgo:\n  name: ppoo\n  eps_init: 0.5\n"
      "collector:\n  total_frames: 1000\n");
  EXPECT_THAT(message, HasSubstr("(1 problem)"));
  EXPECT_THAT(message, HasSubstr("'algo.name' (run.yaml line 4) is 'ppoo'; the choices are a2c, "
                                 "ddpg, dqn, ppo, sac"));
  EXPECT_THAT(message, HasSubstr("did you mean 'ppo'?"));
  EXPECT_THAT(message, Not(HasSubstr("eps_init")));
  EXPECT_THAT(message, Not(HasSubstr("--plugin")));  // the close name is the likelier fix
}

// A name close to none registered may come from a plugin that was not loaded: the message says
// how to load it.
TEST_F(ConfigTest, ANameFarFromEveryRegisteredOneAsksWhetherAPluginWasForgotten) {
  const std::string message = problems_of(
      "env:\n  name: Drift-v0\nalgo:\n  name: drift_pg\ncollector:\n  total_frames: 1000\n");
  EXPECT_THAT(message, HasSubstr("(2 problems)"));
  EXPECT_THAT(message, HasSubstr("'env.name' (run.yaml line 2) is 'Drift-v0'"));
  EXPECT_THAT(message, HasSubstr("'algo.name' (run.yaml line 4) is 'drift_pg'"));
  EXPECT_EQ(count_of(message, "did you forget --plugin?"), 2u) << message;
}

TEST_F(ConfigTest, WrongTypeNamesExpectedAndGot) {
  EXPECT_THAT(problems_of(std::string(kMinimal) + "optim:\n  lr: fast\n"),
              HasSubstr("'optim.lr' (run.yaml line 8) must be a float, got 'fast'; write a "
                        "finite number such as 0.5 or 1e-4"));
  EXPECT_THAT(override_problems({"optim.lr=[1]"}), HasSubstr("must be a float, got a list"));
  EXPECT_THAT(override_problems({"collector.port={a: 1}"}),
              HasSubstr("'collector.port' (--set collector.port={a: 1}) must be an int, got a "
                        "map; write a whole number"));
}

TEST_F(ConfigTest, IntRefusesNumbersThatAreNotWholeSuggestingTheInteger) {
  EXPECT_THAT(problems_of("env: {name: CartPole-v1}\nalgo: {name: ppo}\n"
                          "collector: {total_frames: 1e6}\n"),
              HasSubstr("'collector.total_frames' (run.yaml line 3) must be an int, got '1e6'; "
                        "write 1000000"));
  EXPECT_THAT(override_problems({"collector.frames_per_batch=1e6"}),
              HasSubstr("'collector.frames_per_batch' (--set collector.frames_per_batch=1e6) must "
                        "be an int, got '1e6'; write 1000000"));
  EXPECT_THAT(override_problems({"collector.frames_per_batch=2.0"}),
              HasSubstr("must be an int, got '2.0'; write 2"));
  EXPECT_THAT(override_problems({"collector.frames_per_batch=2.5"}),
              HasSubstr("must be an int, got '2.5'; write a whole number"));
}

TEST_F(ConfigTest, IntIsNeverNarrowed) {
  EXPECT_EQ(load_yaml(kMinimal, {"collector.total_frames=9007199254740993"})
                .collector.limits.total_frames(),
            int64_t{9007199254740993});
  EXPECT_EQ(load_yaml(kMinimal, {"seed=9223372036854775807"}).seed,
            std::numeric_limits<int64_t>::max());
  EXPECT_THAT(override_problems({"seed=9223372036854775808"}),
              HasSubstr("'seed' (--set seed=9223372036854775808) must be an int, got "
                        "'9223372036854775808', out of the 64-bit range"));
  // 4294997796 is 30500 modulo 2^32: a narrowing read would take it for a valid port.
  EXPECT_THAT(override_problems({"collector.port=4294997796"}),
              HasSubstr("'collector.port' (--set collector.port=4294997796) is 4294997796; it "
                        "must be in [0, 65535]"));
}

TEST_F(ConfigTest, FloatAcceptsIntegersAndExponentsButOnlyFiniteNumbers) {
  EXPECT_DOUBLE_EQ(load_yaml(kMinimal, {"optim.lr=1e-4"}).optim.optimizer.lr(), 1e-4);
  EXPECT_DOUBLE_EQ(load_yaml(kMinimal, {"optim.lr=3"}).optim.optimizer.lr(), 3.0);
  for (const std::string bad : {".inf", "-.inf", "nan", ".nan", "1e999"}) {
    SCOPED_TRACE(bad);
    EXPECT_THAT(
        override_problems({"optim.lr=" + bad}),
        HasSubstr("'optim.lr' (--set optim.lr=" + bad + ") must be a float, got '" + bad + "'"));
  }
}

TEST_F(ConfigTest, BoolAcceptsTrueOrFalseOnly) {
  for (const std::string yes : {"true", "True", "TRUE"}) {
    SCOPED_TRACE(yes);
    EXPECT_TRUE(load_yaml(kMinimal, {"env.parallel=" + yes}).env.parallel);
  }
  for (const std::string no : {"false", "False", "FALSE"}) {
    SCOPED_TRACE(no);
    EXPECT_FALSE(load_yaml(kMinimal, {"env.parallel=" + no}).env.parallel);
  }
  EXPECT_THAT(override_problems({"env.parallel=yes"}),
              HasSubstr("'env.parallel' (--set env.parallel=yes) must be a bool, got 'yes'; write "
                        "true or false"));
  EXPECT_THAT(override_problems({"env.parallel=1"}), HasSubstr("must be a bool, got '1'"));
}

TEST_F(ConfigTest, QuotedNumbersAndBoolsAreStrings) {
  EXPECT_EQ(load_yaml(std::string("name: \"123\"\n") + kMinimal).name, "123");
  EXPECT_EQ(load_yaml(std::string("name: 123\n") + kMinimal).name, "123");
  EXPECT_THAT(override_problems({"optim.lr=\"0.001\""}),
              HasSubstr("'optim.lr' (--set optim.lr=\"0.001\") must be a float, got '\"0.001\"' "
                        "(quoted); write a finite number such as 0.5 or 1e-4 without quotes"));
  EXPECT_THAT(override_problems({"collector.total_frames=\"1000\""}),
              HasSubstr("must be an int, got '\"1000\"' (quoted); write a whole number without "
                        "quotes"));
  EXPECT_THAT(override_problems({"env.parallel=\"true\""}),
              HasSubstr("must be a bool, got '\"true\"' (quoted); write true or false without "
                        "quotes"));
}

TEST_F(ConfigTest, StringRefusesListsAndEmptyValues) {
  EXPECT_THAT(override_problems({"env.name=[a, b]"}),
              HasSubstr("'env.name' (--set env.name=[a, b]) must be a string, got a list"));
  EXPECT_THAT(problems_of("env: {name: }\nalgo: {name: ppo}\ncollector: {total_frames: 1000}\n"),
              HasSubstr("'env.name' (run.yaml line 1) has no value; write one or remove the key"));
  EXPECT_THAT(override_problems({"collector.address="}),
              HasSubstr("'collector.address' (--set collector.address=) has no value"));
}

TEST_F(ConfigTest, ListProblemsNameTheElement) {
  EXPECT_THAT(problems_of(std::string(kMinimal) + "model:\n  actor_cells: [64, big]\n"),
              HasSubstr("'model.actor_cells[1]' (run.yaml line 8) must be an int, got 'big'; "
                        "write a whole number"));
  EXPECT_THAT(problems_of(std::string(kMinimal) + "model:\n  actor_cells: [64, 0]\n"),
              HasSubstr("'model.actor_cells[1]' (run.yaml line 8) is 0; it must be >= 1"));
  EXPECT_THAT(override_problems({"model.actor_cells=64"}),
              HasSubstr("'model.actor_cells' (--set model.actor_cells=64) must be a list such as "
                        "[64, 64], got '64'"));
}

TEST_F(ConfigTest, TransformListProblemsNameTheElement) {
  EXPECT_THAT(override_problems({"env.transforms=3"}),
              HasSubstr("'env.transforms' (--set env.transforms=3) must be a list of maps, each "
                        "with a 'type', such as [{type: name}], got '3'"));
  EXPECT_THAT(problems_of("env:\n  name: CartPole-v1\n  transforms: [step_counter]\n"
                          "algo: {name: ppo}\ncollector: {total_frames: 1000}\n"),
              HasSubstr("'env.transforms[0]' (run.yaml line 3) must be a map such as {type: "
                        "name}, got 'step_counter'"));
  const std::string untyped = problems_of(
      "env:\n  name: CartPole-v1\n  transforms: [{max_steps: 5}]\n"
      "algo: {name: ppo}\ncollector: {total_frames: 1000}\n");
  EXPECT_THAT(untyped, HasSubstr("missing required key 'env.transforms[0].type' (the transform)"));
  EXPECT_THAT(untyped, HasSubstr("(1 problem)"));
}

TEST_F(ConfigTest, ScalarGivenForASectionIsReported) {
  EXPECT_THAT(problems_of("env: CartPole-v1\nalgo: {name: ppo}\ncollector: {total_frames: 1000}\n"),
              HasSubstr("'env' (run.yaml line 1) must be a section (a map of keys such as name, "
                        "num_envs and parallel), got 'CartPole-v1'"));
}

TEST_F(ConfigTest, DocumentThatIsNotAMapOrNotYamlIsReported) {
  EXPECT_THAT(problems_of("- a\n- b\n"),
              HasSubstr("invalid config run.yaml: the document must be a map of sections"));
  const std::string message = problems_of("algo:\n  name: ppo\n gamma: 0.9\n");
  EXPECT_THAT(message, HasSubstr("invalid config run.yaml: invalid YAML at line 3"));
  EXPECT_THAT(message, HasSubstr("check the indentation"));
}

TEST_F(ConfigTest, MissingRequiredKeysAreNamedWithTheirDoc) {
  const std::string empty = problems_of("");
  EXPECT_THAT(empty, HasSubstr("invalid config run.yaml (3 problems)"));
  EXPECT_THAT(empty, HasSubstr("missing required key 'env.name' (registered env name (tdrl-envs "
                               "lists them)) in run.yaml"));
  EXPECT_THAT(empty, HasSubstr("missing required key 'algo.name' (the algorithm) in run.yaml"));
  EXPECT_THAT(empty, HasSubstr("missing required key 'collector.total_frames' (frames to collect "
                               "in all (-1: never end)) in run.yaml"));
  const std::string no_env = problems_of("algo: {name: ppo}\ncollector: {total_frames: 10}\n");
  EXPECT_THAT(no_env, HasSubstr("(1 problem)"));
  EXPECT_THAT(no_env, HasSubstr("missing required key 'env.name'"));
}

TEST_F(ConfigTest, KeyGivenTwiceIsReportedWithBothLines) {
  EXPECT_THAT(problems_of("env:\n  name: CartPole-v1\nalgo:\n  name: ppo\n  gamma: 0.9\n"
                          "  gamma: 0.8\ncollector:\n  total_frames: 1000\n"),
              HasSubstr("'algo.gamma' is given twice (run.yaml lines 5 and 6); keep one"));
  EXPECT_THAT(problems_of(std::string(kMinimal) + "algo:\n  name: dqn\n"),
              HasSubstr("'algo' is given twice (run.yaml lines 3 and 7); keep one"));
}

TEST_F(ConfigTest, EveryProblemIsReportedAtOnce) {
  const std::string message = problems_of(
      "env:\n  name: CartPole-v1\nalgo:\n  name: ppo\n  gama: 0.9\n  num_epochs: many\n"
      "collector:\n  total_frames: -5\n",
      {"env.parallel=maybe"});
  EXPECT_THAT(message, HasSubstr("invalid config run.yaml (4 problems):\n  - "));
  EXPECT_EQ(count_of(message, "\n  - "), 4u) << message;
  EXPECT_THAT(message, HasSubstr("\n  - 'env.parallel' (--set env.parallel=maybe) must be a bool"));
  EXPECT_THAT(message, HasSubstr("\n  - unknown key 'algo.gama' (run.yaml line 5)"));
  EXPECT_THAT(message, HasSubstr("\n  - 'algo.num_epochs' (run.yaml line 6) must be an int"));
  EXPECT_THAT(message, HasSubstr("\n  - 'collector.total_frames' (run.yaml line 8) is -5; it "
                                 "must be >= 1 or -1"));
}

// One row per field: a value out of its range (or not among its choices) is refused, naming the
// key path and what it accepts, as the only problem of the config.
TEST_F(ConfigTest, ValuesOutsideTheirRangeOrChoicesAreRefused) {
  struct Row {
    std::vector<std::string> overrides;  // on kMinimal (ppo on CartPole-v1)
    std::string path;
    std::string expected;
  };
  const std::vector<Row> rows = {
      {{"collector.total_frames=-1000"},
       "collector.total_frames",
       "is -1000; it must be >= 1 or -1"},
      {{"collector.frames_per_batch=-64"}, "collector.frames_per_batch", "it must be >= 1"},
      {{"collector.init_random_frames=-1"}, "collector.init_random_frames", "it must be >= 0"},
      {{"collector.max_frames_per_traj=0"},
       "collector.max_frames_per_traj",
       "it must be >= 1 or -1"},
      {{"collector.num_workers=0"}, "collector.num_workers", "it must be in [1, 1024]"},
      {{"collector.port=4294997796"}, "collector.port", "is 4294997796; it must be in [0, 65535]"},
      {{"collector.port=-1"}, "collector.port", "it must be in [0, 65535]"},
      {{"collector.timeout_s=1e300"}, "collector.timeout_s", "it must be in [0.001, 10000000]"},
      {{"collector.timeout_s=0"}, "collector.timeout_s", "it must be in [0.001, 10000000]"},
      {{"collector.mode=parallel"},
       "collector.mode",
       "the choices are single, sync, async and distributed"},
      {{"optim.lr=-0.001"}, "optim.lr", "is -0.001; it must be > 0"},
      {{"optim.lr=0"}, "optim.lr", "it must be > 0"},
      {{"optim.actor_lr=0"}, "optim.actor_lr", "it must be > 0 or -1"},
      {{"optim.weight_decay=-1"}, "optim.weight_decay", "it must be >= 0"},
      {{"optim.eps=0"}, "optim.eps", "it must be > 0"},
      {{"optim.max_grad_norm=-1"}, "optim.max_grad_norm", "it must be >= 0"},
      {{"optim.lr_schedule=cosine"}, "optim.lr_schedule", "the choices are constant and linear"},
      {{"algo.gamma=1.5"}, "algo.gamma", "is 1.5; it must be in [0, 1]"},
      {{"algo.lmbda=-0.1"}, "algo.lmbda", "it must be in [0, 1]"},
      {{"algo.num_epochs=-1"}, "algo.num_epochs", "it must be >= 1"},
      {{"algo.minibatch_size=-5"}, "algo.minibatch_size", "it must be >= 1"},
      {{"algo.clip_epsilon=0"}, "algo.clip_epsilon", "it must be in (0, 1)"},
      {{"algo.clip_epsilon=1"}, "algo.clip_epsilon", "is 1; it must be in (0, 1)"},
      {{"algo.clip_value=0"}, "algo.clip_value", "it must be > 0"},
      {{"algo.clip_value=small"}, "algo.clip_value", "must be a float, got 'small'"},
      {{"algo.loss_critic_type=l3"},
       "algo.loss_critic_type",
       "the choices are l1, l2 and smooth_l1"},
      {{"algo.name=dqn", "algo.eps_init=1.5"}, "algo.eps_init", "it must be in [0, 1]"},
      {{"algo.name=dqn", "algo.annealing_num_steps=0"},
       "algo.annealing_num_steps",
       "it must be >= 1"},
      {{"algo.name=dqn", "algo.loss_function=huber"},
       "algo.loss_function",
       "the choices are l1, l2 and smooth_l1"},
      {{"algo.name=dqn", "replay.batch_size=0"}, "replay.batch_size", "it must be >= 1"},
      {{"algo.name=dqn", "replay.beta=-1"}, "replay.beta", "is -1; it must be >= 0"},
      {{"algo.name=dqn", "replay.eps=-1"}, "replay.eps", "is -1; it must be >= 0"},
      {{"algo.name=sac", "env.name=Pendulum-v1", "algo.tau=0"}, "algo.tau", "it must be in (0, 1]"},
      {{"algo.name=sac", "env.name=Pendulum-v1", "algo.tau=1.5"},
       "algo.tau",
       "it must be in (0, 1]"},
      {{"algo.name=sac", "env.name=Pendulum-v1", "algo.target_entropy=high"},
       "algo.target_entropy",
       "must be a float, got 'high'; write a finite number such as 0.5 or 1e-4; or 'auto' for "
       "none"},
      {{"algo.name=sac", "env.name=Pendulum-v1", "algo.min_alpha=0"},
       "algo.min_alpha",
       "is 0; it must be > 0"},
      {{"algo.name=td3", "env.name=Pendulum-v1", "algo.policy_delay=0"},
       "algo.policy_delay",
       "it must be >= 1"},
      {{"threads=-3"}, "threads", "is -3; it must be in [1, 1024]"},
      {{"seed=-1"}, "seed", "it must be >= 0"},
      {{"checkpoint.interval_frames=-5"}, "checkpoint.interval_frames", "it must be >= 0"},
      {{"eval.interval_frames=-5"}, "eval.interval_frames", "it must be >= 0"},
      {{"eval.episodes=0"}, "eval.episodes", "it must be in [1, 100000]"},
      {{"eval.max_steps=0"}, "eval.max_steps", "it must be >= 1 or -1"},
      {{"env.options={max_episode_steps: -7}"},
       "env.options.max_episode_steps",
       "is -7; it must be >= 0"},
      {{"env.num_envs=0"}, "env.num_envs", "it must be in [1, 65536]"},
      {{"logger.interval_s=-1"}, "logger.interval_s", "it must be in [0.01, 10000000]"},
      {{"logger.dir=\"\""}, "logger.dir", "must not be empty"},
      {{"logger.progress=bars"}, "logger.progress", "did you mean 'bar'?"},
      {{"model.activation=rleu"}, "model.activation", "did you mean 'relu'?"},
      {{"device=banana"}, "device", "is 'banana'; it must be cpu, cuda or cuda:N"},
      {{"device=cuda:x"}, "device", "it must be cpu, cuda or cuda:N"},
      {{"algo.name=dqn", "replay.device=gpu"}, "replay.device", "(or auto)"},
      {{"env.name=CartPol-v1"}, "env.name", "did you mean 'CartPole-v1'?"},
      {{"algo.name=ppoo"}, "algo.name", "did you mean 'ppo'?"},
      {{"env.transforms=[{type: vec_nrom}]"}, "env.transforms[0].type", "did you mean 'vec_norm'?"},
      {{"env.transforms=[{type: step_counter, max_steps: 0}]"},
       "env.transforms[0].max_steps",
       "is 0; it must be >= 1"},
      {{"env.transforms=[{type: step_counter, max_steps: -1}]"},
       "env.transforms[0].max_steps",
       "is -1; it must be >= 1"},
      {{"env.transforms=[{type: vec_norm, decay: 2}]"},
       "env.transforms[0].decay",
       "it must be in (0, 1]"},
      {{"env.transforms=[{type: step_counter, max_step: 5}]"},
       "env.transforms[0].max_step",
       "unknown key"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(as_flags(row.overrides));
    const std::string message = override_problems(row.overrides);
    EXPECT_THAT(message, HasSubstr("'" + row.path + "'"));
    EXPECT_THAT(message, HasSubstr(row.expected));
    EXPECT_THAT(message, HasSubstr("(1 problem)"));
  }
}

// The edges of each range, and the exact exceptions (-1: off), are accepted as given.
TEST_F(ConfigTest, BoundaryValuesAreAccepted) {
  struct Row {
    std::vector<std::string> overrides;  // on kMinimal (ppo on CartPole-v1)
    std::string path;
    double value;
  };
  const std::vector<std::string> sac = {"algo.name=sac", "env.name=Pendulum-v1"};
  auto with_sac = [&](const std::string& o) {
    auto out = sac;
    out.push_back(o);
    return out;
  };
  const std::vector<Row> rows = {
      {{"env.options={max_episode_steps: 0}"}, "env.options.max_episode_steps", 0},
      {{"env.options={max_episode_steps: 1}"}, "env.options.max_episode_steps", 1},
      {{"env.num_envs=65536"}, "env.num_envs", 65536},
      {with_sac("optim.actor_lr=-1"), "optim.actor_lr", -1},
      {with_sac("optim.critic_lr=1e-5"), "optim.critic_lr", 1e-5},
      {with_sac("algo.tau=1"), "algo.tau", 1},
      {{"collector.port=65535"}, "collector.port", 65535},
      {{"collector.port=0"}, "collector.port", 0},
      {{"collector.frames_per_batch=1"}, "collector.frames_per_batch", 1},
      {{"collector.max_frames_per_traj=-1"}, "collector.max_frames_per_traj", -1},
      {{"collector.num_workers=1024"}, "collector.num_workers", 1024},
      {{"collector.timeout_s=0.001"}, "collector.timeout_s", 0.001},
      {{"collector.timeout_s=10000000"}, "collector.timeout_s", 1e7},
      {{"algo.gamma=0"}, "algo.gamma", 0},
      {{"algo.gamma=1"}, "algo.gamma", 1},
      {{"algo.name=dqn", "replay.beta=1"}, "replay.beta", 1},
      {{"threads=1"}, "threads", 1},
      {{"threads=1024"}, "threads", 1024},
      {{"optim.max_grad_norm=0"}, "optim.max_grad_norm", 0},
      {{"logger.interval_s=0.01"}, "logger.interval_s", 0.01},
      {{"checkpoint.interval_frames=0"}, "checkpoint.interval_frames", 0},
      {{"eval.max_steps=-1"}, "eval.max_steps", -1},
      {{"eval.episodes=100000"}, "eval.episodes", 100000},
      {{"env.transforms=[{type: step_counter, max_steps: 1}]"}, "env.transforms[0].max_steps", 1},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(as_flags(row.overrides));
    try {
      RunConfig config = load_yaml(kMinimal, row.overrides);
      const Scalars s = scalars_of(config);
      if (s.numbers.count(row.path) == 0) {
        ADD_FAILURE() << "no numeric key " << row.path;
        continue;
      }
      EXPECT_DOUBLE_EQ(s.numbers.at(row.path), row.value);
    } catch (const ConfigError& e) {
      ADD_FAILURE() << e.what();
    }
  }
}

// ---- overrides ---------------------------------------------------------------------------------

TEST_F(ConfigTest, OverridesSetPathsToYamlValues) {
  RunConfig config =
      load_yaml(kMinimal, {"collector.frames_per_batch=64", "model.actor_cells=[256, 256]",
                           "env.parallel=true", "model.activation=relu", "env.options={gravity: 3}",
                           "name=my run=1", "env.transforms=[{type: step_counter, max_steps: 5}]"});
  EXPECT_EQ(config.collector.limits.frames_per_batch(), 64);
  EXPECT_THAT(config.model.actor_cells, ElementsAre(256, 256));
  EXPECT_TRUE(config.env.parallel);
  EXPECT_EQ(config.model.layers.activation(), "relu");
  EXPECT_DOUBLE_EQ(scalars_of(config).numbers.at("env.options.gravity"), 3);
  EXPECT_EQ(config.name, "my run=1");
  ASSERT_EQ(config.env.transforms.size(), 1u);
  EXPECT_EQ(config.env.transforms.items[0].type, "step_counter");
  EXPECT_DOUBLE_EQ(scalars_of(config).numbers.at("env.transforms[0].max_steps"), 5);
}

TEST_F(ConfigTest, OverrideOfASectionMapSetsItsKeys) {
  RunConfig ppo = load_yaml(kMinimal, {"algo={name: ppo, gamma: 0.9}"});
  EXPECT_EQ(ppo.algo.name, "ppo");
  EXPECT_DOUBLE_EQ(scalars_of(ppo).numbers.at("algo.gamma"), 0.9);

  RunConfig sac = load_yaml(kMinimal, {"algo={name: sac, gamma: 0.5}", "env={name: Pendulum-v1}"});
  EXPECT_EQ(sac.algo.name, "sac");
  EXPECT_EQ(sac.env.name, "Pendulum-v1");
  EXPECT_NE(sac.replay(), nullptr);
  EXPECT_DOUBLE_EQ(scalars_of(sac).numbers.at("algo.gamma"), 0.5);
}

TEST_F(ConfigTest, OverrideCanChangeTheAlgorithm) {
  const RunConfig dqn = load_yaml(kMinimal, {"algo.name=dqn"});
  EXPECT_EQ(dqn.algo.name, "dqn");
  EXPECT_NE(dqn.replay(), nullptr);
  // The file's keys are then judged against the new algorithm.
  EXPECT_THAT(problems_of("env:\n  name: CartPole-v1\nalgo:\n  name: ppo\n  clip_epsilon: 0.1\n"
                          "collector:\n  total_frames: 1000\n",
                          {"algo.name=dqn"}),
              HasSubstr("unknown key 'algo.clip_epsilon' (run.yaml line 5): it is an option of "
                        "ppo only"));
}

TEST_F(ConfigTest, LastOverrideOfAKeyWins) {
  RunConfig config = load_yaml(
      "env:\n  name: CartPole-v1\nalgo:\n  name: ppo\n  gamma: 0.8\n"
      "collector:\n  total_frames: 1000\n",
      {"algo.gamma=0.5", "collector.total_frames=2000", "algo.gamma=0.25"});
  EXPECT_DOUBLE_EQ(scalars_of(config).numbers.at("algo.gamma"), 0.25);
  EXPECT_EQ(config.collector.limits.total_frames(), 2000);
}

TEST_F(ConfigTest, OverrideSuppliesARequiredKey) {
  EXPECT_EQ(
      load_yaml("algo: {name: ppo}\ncollector: {total_frames: 10}\n", {"env.name=CartPole-v1"})
          .env.name,
      "CartPole-v1");
  EXPECT_EQ(load_yaml("", {"env.name=CartPole-v1", "algo.name=a2c", "collector.total_frames=10"})
                .algo.name,
            "a2c");
}

TEST_F(ConfigTest, OverrideProblemsNameTheSetText) {
  EXPECT_THAT(override_problems({"algo.gamma=high"}),
              HasSubstr("'algo.gamma' (--set algo.gamma=high) must be a float, got 'high'"));
  EXPECT_THAT(override_problems({"algo.gama=0.9"}),
              HasSubstr("unknown key 'algo.gama' (--set algo.gama=0.9); did you mean "
                        "'algo.gamma'?"));
  EXPECT_THAT(override_problems({"algo={name: ppo, gamma: 2}"}),
              HasSubstr("'algo.gamma' (--set algo={name: ppo, gamma: 2}) is 2; it must be in "
                        "[0, 1]"));
  // An override of a key the file sets is named instead of the file's line.
  EXPECT_THAT(problems_of(std::string(kMinimal) + "optim:\n  lr: 0.1\n", {"optim.lr=-1"}),
              HasSubstr("'optim.lr' (--set optim.lr=-1) is -1; it must be > 0"));
}

// Problems inside list elements given by --set (a list field's element, a transform's key), and
// a section that only an override creates, name the --set text like any other, not a line.
TEST_F(ConfigTest, OverrideProblemsInListElementsAndNewSectionsNameTheSetText) {
  EXPECT_THAT(override_problems({"model.actor_cells=[64, 0]"}),
              HasSubstr("'model.actor_cells[1]' (--set model.actor_cells=[64, 0]) is 0"));
  EXPECT_THAT(override_problems({"env.transforms=[{type: vec_nrom}]"}),
              HasSubstr("'env.transforms[0].type' (--set env.transforms=[{type: vec_nrom}])"));
  EXPECT_THAT(override_problems({"env.transforms=[{type: step_counter, max_step: 5}]"}),
              HasSubstr("unknown key 'env.transforms[0].max_step' (--set env.transforms=[{type: "
                        "step_counter, max_step: 5}])"));
  EXPECT_THAT(override_problems({"replay.capacity=5000"}),
              HasSubstr("unknown key 'replay' (--set replay.capacity=5000)"));
}

TEST_F(ConfigTest, MalformedOverridesAreReported) {
  EXPECT_THAT(override_problems({"algo.gamma"}),
              HasSubstr("override 'algo.gamma' must be path=value, e.g. --set algo.gamma=0.98"));
  EXPECT_THAT(override_problems({"=3"}), HasSubstr("override '=3' must be path=value"));
  EXPECT_THAT(override_problems({"algo..gamma=3"}),
              HasSubstr("override 'algo..gamma=3' must be path=value"));
  EXPECT_THAT(override_problems({"model.actor_cells=[1, 2"}),
              HasSubstr("the value of --set model.actor_cells=[1, 2 is not valid YAML"));
  EXPECT_THAT(override_problems({"env.name.x=3"}),
              HasSubstr("--set env.name.x=3: 'env.name' is not a section (it holds "
                        "'CartPole-v1')"));
}

// ---- files -------------------------------------------------------------------------------------

TEST_F(ConfigTest, LoadConfigNamesTheFileAndLine) {
  tensordict::testing::TempDir dir;
  const std::string path = dir / "run.yaml";
  tensordict::testing::write_file_bytes(
      path,
      "env:\n  name: CartPole-v1\nalgo:\n  name: ppo\n  gama: 0.9\n"
      "collector:\n  total_frames: 1000\n");
  const std::string message = error_message<ConfigError>([&] { load_config(path); });
  EXPECT_THAT(message, HasSubstr("invalid config " + path + " (1 problem)"));
  EXPECT_THAT(message, HasSubstr("unknown key 'algo.gama' (" + path + " line 5)"));

  tensordict::testing::write_file_bytes(path, kMinimal);
  EXPECT_EQ(load_config(path, {"seed=3"}).seed, 3);
  const std::string missing = dir / "missing.yaml";
  EXPECT_THAT(error_message<ConfigError>([&] { load_config(missing); }),
              HasSubstr("load_config: cannot read '" + missing + "'"));
}

TEST_F(ConfigTest, PluginsOfReadsOnlyThePluginList) {
  tensordict::testing::TempDir dir;
  const std::string path = dir / "run.yaml";
  // The algorithm is not registered yet: plugins_of does not validate the rest.
  tensordict::testing::write_file_bytes(path,
                                        "plugins: [libawr.so, ./libdrift.so]\nalgo: {name: awr}\n");
  const auto listed = plugins_of(path);
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].path, "libawr.so");
  EXPECT_EQ(listed[1].path, "./libdrift.so");
  EXPECT_EQ(listed[1].line, 1);
  tensordict::testing::write_file_bytes(path, kMinimal);
  EXPECT_THAT(plugins_of(path), IsEmpty());
  tensordict::testing::write_file_bytes(path, "plugins: libawr.so\n");
  EXPECT_THAT(
      error_message<ConfigError>([&] { plugins_of(path); }),
      HasSubstr("'plugins' (" + path + " line 1) must be a list such as [a, b], got 'libawr.so'"));
  // Read by the config reader itself: its messages, each element's line.
  tensordict::testing::write_file_bytes(path, "seed: 1\nplugins:\n  - liba.so\n  - \"\"\n");
  EXPECT_THAT(error_message<ConfigError>([&] { plugins_of(path); }),
              HasSubstr("'plugins[1]' (" + path + " line 4) is ''; must not be empty"));
  tensordict::testing::write_file_bytes(path, "plugins:\n  - liba.so\n  - libb.so\n");
  EXPECT_EQ(plugins_of(path).at(1).line, 3);
  EXPECT_THAT(error_message<ConfigError>([&] { plugins_of(dir / "missing.yaml"); }),
              HasSubstr("cannot read"));
  EXPECT_THAT(load_yaml(std::string("plugins: [libawr.so]\n") + kMinimal).plugins,
              ElementsAre("libawr.so"));
}

TEST_F(ConfigTest, EveryShippedConfigLoads) {
  size_t loaded = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(tdrl::testing::source_dir() + "/configs")) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    ++loaded;
    try {
      load_config(entry.path().string());
    } catch (const ConfigError& e) {
      ADD_FAILURE() << e.what();
    }
  }
  EXPECT_GT(loaded, 0u);
}

// ---- to_yaml -----------------------------------------------------------------------------------

TEST_F(ConfigTest, ToYamlWritesEveryKeyInDeclarationOrderWithItsDoc) {
  const std::string yaml = to_yaml(load_yaml(kMinimal));
  EXPECT_THAT(yaml, HasSubstr("algo:\n  name: ppo"));
  EXPECT_THAT(yaml, HasSubstr("frames_per_batch: 1000"));
  EXPECT_THAT(yaml, HasSubstr("# frames per collected batch"));
  EXPECT_THAT(yaml, HasSubstr("actor_cells: [64, 64]"));
  EXPECT_THAT(yaml, HasSubstr("clip_epsilon: 0.2"));
  EXPECT_THAT(yaml, Not(HasSubstr("\nreplay:")));
  EXPECT_LT(yaml.find("env:"), yaml.find("model:"));
  EXPECT_LT(yaml.find("model:"), yaml.find("algo:"));
  EXPECT_LT(yaml.find("algo:"), yaml.find("collector:"));
  EXPECT_LT(yaml.find("collector:"), yaml.find("optim:"));

  const std::string dqn = to_yaml(load_yaml(kMinimal, {"algo.name=dqn"}));
  EXPECT_THAT(dqn, HasSubstr("\nreplay:\n  capacity: 1000000"));
  EXPECT_LT(dqn.find("collector:"), dqn.find("\nreplay:"));
}

TEST_F(ConfigTest, ToYamlRoundTripsForEveryAlgorithm) {
  for (const std::string& algo : algorithm_names()) {
    SCOPED_TRACE(algo);
    RunConfig config = load_yaml(
        "name: \"123\"\n"
        "env:\n"
        "  name: CartPole-v1\n"
        "  options: {gravity: 9.5, sutton_barto_reward: true}\n"
        "  transforms:\n"
        "    - {type: step_counter, max_steps: 50}\n"
        "    - {type: observation_norm, keys: [observation], scale: 2.5}\n"
        "    - {type: reward_clipping}\n"
        "model: {actor_cells: [32, 16]}\n"
        "algo:\n"
        "  name: " +
        algo +
        "\n"
        "collector: {total_frames: 1000000}\n"
        "optim: {lr: 1e-4, eps: 1e-8}\n");
    const std::string yaml = to_yaml(config);
    RunConfig again = load_config_string(yaml, {}, "config.yaml");
    EXPECT_EQ(to_yaml(again), yaml);
    const Scalars before = scalars_of(config);
    const Scalars after = scalars_of(again);
    EXPECT_EQ(after.numbers, before.numbers);
    EXPECT_EQ(after.strings, before.strings);
    EXPECT_EQ(after.bools, before.bools);
    EXPECT_EQ(again.name, "123");
    EXPECT_EQ(after.numbers.at("env.options.gravity"), 9.5);
    EXPECT_THAT(again.model.actor_cells, ElementsAre(32, 16));
    EXPECT_EQ(again.env.transforms.size(), 3u);
    EXPECT_DOUBLE_EQ(again.optim.optimizer.lr(), 1e-4);
  }
}

TEST_F(ConfigTest, ToYamlKeepsNonDefaultAlgorithmAndReplayValues) {
  RunConfig config = load_yaml(
      "env: {name: Pendulum-v1}\n"
      "algo: {name: sac, gamma: 0.98, tau: 0.01, fixed_alpha: true, target_entropy: -2}\n"
      "replay: {capacity: 5000, prioritized: true}\n"
      "collector: {total_frames: 1000}\n");
  RunConfig again = load_config_string(to_yaml(config), {}, "config.yaml");
  const Scalars s = scalars_of(again);
  EXPECT_DOUBLE_EQ(s.numbers.at("algo.gamma"), 0.98);
  EXPECT_DOUBLE_EQ(s.numbers.at("algo.tau"), 0.01);
  EXPECT_TRUE(s.bools.at("algo.fixed_alpha"));
  EXPECT_DOUBLE_EQ(s.numbers.at("algo.target_entropy"), -2);
  EXPECT_EQ(s.strings.at("algo.max_alpha"), "(none)");
  ASSERT_NE(again.replay(), nullptr);
  EXPECT_EQ(again.replay()->capacity, 5000);
  EXPECT_TRUE(again.replay()->prioritized);
}

TEST_F(ConfigTest, EveryShippedConfigRoundTripsThroughToYaml) {
  for (const auto& entry :
       std::filesystem::directory_iterator(tdrl::testing::source_dir() + "/configs")) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    try {
      const std::string yaml = to_yaml(load_config(entry.path().string()));
      EXPECT_EQ(to_yaml(load_config_string(yaml, {}, "config.yaml")), yaml);
    } catch (const ConfigError& e) {
      ADD_FAILURE() << e.what();
    }
  }
}

// ---- docs/config.md ----------------------------------------------------------------------------

TEST_F(ConfigTest, ReferenceMentionsEveryRegisteredAlgorithmTransformAndKey) {
  const std::string reference = config_reference_markdown();
  for (const std::string& name : algorithm_names()) {
    SCOPED_TRACE(name);
    EXPECT_THAT(reference, HasSubstr("## `algo.name: " + name + "`"));
  }
  for (const std::string& type : transform_types()) {
    SCOPED_TRACE(type);
    EXPECT_THAT(reference, HasSubstr("## `env.transforms: - type: " + type + "`"));
  }
  EXPECT_THAT(reference, HasSubstr("`collector.frames_per_batch`"));
  EXPECT_THAT(reference, HasSubstr("| `collector.frames_per_batch` | int | `1000` | >= 1 |"));
  EXPECT_THAT(reference, HasSubstr("| `collector.total_frames` | int | required | >= 1 or -1 |"));
  EXPECT_THAT(reference, HasSubstr("`algo.clip_epsilon`"));
  EXPECT_THAT(reference, HasSubstr("`replay.capacity`"));
  EXPECT_THAT(reference, HasSubstr("## `env.name: CartPole-v1`"));
  EXPECT_THAT(reference, HasSubstr("| `env.options.max_episode_steps` | int | `500` | >= 0 |"));
  EXPECT_THAT(reference, HasSubstr("| `env.options.frame_skip` | int or none | `null` | >= 1, or "
                                   "null (none) |"));
}

constexpr char kUserAlgorithm[] = "test_custom_algo";

TEST_F(ConfigTest, DocsConfigMdIsGeneratedFromTheDeclarations) {
  // The user algorithm of the tests below would appear in the reference; they run after this
  // test unless the order is shuffled.
  if (find_algorithm(kUserAlgorithm))
    GTEST_SKIP() << "a test of this process registered '" << kUserAlgorithm
                 << "'; run this test on its own";
  const std::string file =
      tensordict::testing::read_file_bytes(tdrl::testing::source_dir() + "/docs/config.md");
  EXPECT_EQ(file, config_reference_markdown())
      << "docs/config.md differs from the config sections' declarations; regenerate it with "
         "build/apps/tdrl-train --config-reference > docs/config.md";
}

// ---- a user-registered algorithm ---------------------------------------------------------------

// An algorithm's section as a user writes one.
struct UserAlgoConfig : AlgoConfig {
  int64_t my_field = 1;
  double my_rate = 0.5;
  std::vector<std::string> my_tags = {"fast", "small"};
  void fields(FieldVisitor& v) override {
    v("my_field", my_field, at_least(1), "a count of the user's algorithm");
    v("my_rate", my_rate, in_range(0, 1), "a rate of the user's algorithm");
    v("my_tags", my_tags, "labels of the user's algorithm");
  }
};

// Its recipe; the config tests never build it.
class UserAlgoRecipe : public Recipe {
 public:
  explicit UserAlgoRecipe(const UserAlgoConfig& config) : my_field(config.my_field) {}
  void build_acting(const RecipeContext&) override {}
  void build_learning(const RecipeContext&) override {}
  int64_t my_field;
};

// A transform's options as a user writes them (never registered under a new name here).
struct UserTransformOptions : Section {
  void fields(FieldVisitor&) override {}
};

class UserAlgorithmTest : public ConfigTest {
 protected:
  void SetUp() override {
    ConfigTest::SetUp();
    static std::once_flag once;
    std::call_once(once, [] {
      register_algorithm<UserAlgoConfig, UserAlgoRecipe>(kUserAlgorithm,
                                                         "a user's algorithm (config tests)");
    });
  }
};

TEST_F(UserAlgorithmTest, LoadsIntoItsOwnTypedSection) {
  RunConfig config = load_yaml(
      "env: {name: CartPole-v1}\nalgo: {name: test_custom_algo, my_field: 3}\n"
      "collector: {total_frames: 1000}\n");
  EXPECT_EQ(config.algo.name, kUserAlgorithm);
  ASSERT_NE(config.algo.options, nullptr);
  auto& options = static_cast<UserAlgoConfig&>(*config.algo.options);
  EXPECT_EQ(options.my_field, 3);
  EXPECT_DOUBLE_EQ(options.my_rate, 0.5);
  EXPECT_EQ(config.replay(), nullptr);

  const AlgorithmInfo* info = find_algorithm(kUserAlgorithm);
  ASSERT_NE(info, nullptr);
  const std::unique_ptr<Recipe> recipe = info->make_recipe(*config.algo.options);
  const auto* user = dynamic_cast<const UserAlgoRecipe*>(recipe.get());
  ASSERT_NE(user, nullptr);
  EXPECT_EQ(user->my_field, 3);
}

TEST_F(UserAlgorithmTest, ValuesAreValidatedWithTheKeyPath) {
  const std::string message = problems_of(
      "env: {name: CartPole-v1}\nalgo: {name: test_custom_algo, my_field: 0, my_rat: 0.1}\n"
      "collector: {total_frames: 1000}\n");
  EXPECT_THAT(message, HasSubstr("(2 problems)"));
  EXPECT_THAT(message, HasSubstr("'algo.my_field' (run.yaml line 2) is 0; it must be >= 1"));
  EXPECT_THAT(
      message,
      HasSubstr("unknown key 'algo.my_rat' (run.yaml line 2); did you mean 'algo.my_rate'?"));
  EXPECT_THAT(problems_of(kMinimal, {"algo.name=test_custom_algo", "algo.my_rate=2"}),
              HasSubstr("'algo.my_rate' (--set algo.my_rate=2) is 2; it must be in [0, 1]"));
}

TEST_F(UserAlgorithmTest, ItsKeysAreNamedWhenGivenToAnotherAlgorithm) {
  EXPECT_THAT(override_problems({"algo.my_field=2"}),
              HasSubstr("unknown key 'algo.my_field' (--set algo.my_field=2): it is an option of "
                        "test_custom_algo only"));
}

TEST_F(UserAlgorithmTest, IsDocumentedAndRoundTripsLikeABuiltIn) {
  const std::string reference = config_reference_markdown();
  EXPECT_THAT(reference, HasSubstr("## `algo.name: test_custom_algo`"));
  EXPECT_THAT(reference, HasSubstr("a user's algorithm (config tests)"));
  EXPECT_THAT(reference, HasSubstr("| `algo.my_field` | int | `1` | >= 1 |"));
  EXPECT_THAT(reference,
              HasSubstr("| `algo.my_tags` | list of string | `[\"fast\", \"small\"]` |"));

  RunConfig config = load_yaml(kMinimal, {"algo={name: test_custom_algo, my_rate: 0.25}"});
  const std::string yaml = to_yaml(config);
  EXPECT_THAT(yaml, HasSubstr("my_rate: 0.25"));
  RunConfig again = load_config_string(yaml, {}, "config.yaml");
  EXPECT_DOUBLE_EQ(static_cast<UserAlgoConfig&>(*again.algo.options).my_rate, 0.25);
}

TEST_F(UserAlgorithmTest, RegisteringATakenOrEmptyNameThrows) {
  const std::string again = error_message<tensordict::ValueError>([] {
    register_algorithm<UserAlgoConfig, UserAlgoRecipe>(kUserAlgorithm, "registered again");
  });
  EXPECT_THAT(again, HasSubstr("register_algorithm: 'test_custom_algo' is already registered"));
  EXPECT_EQ(find_algorithm(kUserAlgorithm)->doc, "a user's algorithm (config tests)");

  const std::string builtin = error_message<tensordict::ValueError>(
      [] { register_algorithm<UserAlgoConfig, UserAlgoRecipe>("ppo", "another ppo"); });
  EXPECT_THAT(builtin, HasSubstr("'ppo' is already registered"));

  const std::string empty = error_message<tensordict::ValueError>(
      [] { register_algorithm<UserAlgoConfig, UserAlgoRecipe>("", "no name"); });
  EXPECT_THAT(empty, HasSubstr("register_algorithm: the name is empty"));

  const std::string transform = error_message<tensordict::ValueError>([] {
    register_transform<UserTransformOptions>(
        "vec_norm", "another vec_norm",
        [](const UserTransformOptions&, const TransformContext&) -> envs::TransformPtr {
          return nullptr;
        });
  });
  EXPECT_THAT(transform, HasSubstr("register_transform: 'vec_norm' is already registered"));
}

// ---- devices ------------------------------------------------------------------------------------

// Without ConfigTest's fixture: each registers the built-in algorithms itself (run alone, as
// scripts/gpu_check.sh runs the *CUDA* cases, nothing else has).
TEST(ConfigDeviceTest, ACudaDeviceWithoutAGpuIsRefusedNamingWhatIsMissing) {
  register_builtin_components();
  if (torch::cuda::is_available()) GTEST_SKIP() << "this machine has a GPU";
  for (const std::string device : {"cuda", "cuda:0", "cuda:7"}) {
    SCOPED_TRACE(device);
    const std::string message = override_problems({"device=" + device});
    EXPECT_THAT(message, HasSubstr("'device' (--set device=" + device + ") is '" + device + "'"));
    EXPECT_THAT(message, HasSubstr("this machine has no CUDA device"));
    EXPECT_THAT(message, HasSubstr("use cpu"));
  }
  // replay.device names a device the same way.
  EXPECT_THAT(override_problems({"algo.name=dqn", "replay.device=cuda"}),
              HasSubstr("'replay.device' (--set replay.device=cuda) is 'cuda'; this machine has "
                        "no CUDA device"));
}

TEST(ConfigCUDATest, AGpuIndexPastTheLastIsRefusedNamingTheGpusThereAre) {
  register_builtin_components();
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device on this machine";
  const auto gpus = torch::cuda::device_count();
  const std::string past = "cuda:" + std::to_string(gpus);
  EXPECT_THAT(override_problems({"device=" + past}),
              HasSubstr("this machine has " + std::to_string(gpus) + " CUDA device"));
  EXPECT_EQ(load_yaml(kMinimal, {"device=cuda:0"}).device, "cuda:0");
}

TEST(ConfigCUDATest, DevicesThatDoNotFitTogetherAreRefusedBeforeTheRun) {
  register_builtin_components();
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device on this machine";
  // The replay buffer on a GPU while training on the CPU.
  const auto replay = error_message<ConfigError>([] {
    Trainer::check(
        load_yaml("env:\n  name: CartPole-v1\nalgo:\n  name: dqn\ncollector:\n"
                  "  total_frames: 1000\nreplay:\n  device: cuda\n"));
  });
  EXPECT_THAT(replay, HasSubstr("'replay.device' is 'cuda' and 'device' is 'cpu'"));
  // The distributed collector on a GPU run.
  const auto distributed = error_message<ConfigError>([] {
    Trainer::check(load_yaml(kMinimal, {"device=cuda", "collector.mode=distributed"}));
  });
  EXPECT_THAT(distributed, HasSubstr("'collector.mode' is distributed and 'device' is 'cuda'"));
}

// An env registered with option names only (no declaration): its env.options is a free map of
// scalars, checked by its factory when the env is built. (After the docs test: the env it
// registers is listed among env.name's choices from then on.)
const std::string& undeclared_env() {
  static const std::string name = [] {
    envs::register_env(
        "test/Undeclared",
        [](const envs::EnvOptions& options) { return envs::make_env("CartPole-v1", options); },
        std::vector<std::string>{"size"});
    return std::string("test/Undeclared");
  }();
  return name;
}

TEST_F(ConfigTest, OptionsMapOfAnUndeclaredEnvMustHoldScalars) {
  const std::string env = "env.name=" + undeclared_env();
  EXPECT_EQ(load_yaml(kMinimal, {env}).env.options, nullptr);
  EXPECT_EQ(load_yaml(kMinimal, {env, "env.options={size: 3}"}).env.free_options,
            (ScalarMap{{"size", "3"}}));
  EXPECT_THAT(override_problems({env, "env.options={a: [1]}"}),
              HasSubstr("'env.options' (--set env.options={a: [1]}) must be a map of scalars such "
                        "as {size: 3}; an entry is a list"));
  EXPECT_THAT(override_problems({env, "env.options=3"}),
              HasSubstr("must be a map of scalars such as {size: 3}, got '3'"));
}

}  // namespace
}  // namespace tdrl::apps
