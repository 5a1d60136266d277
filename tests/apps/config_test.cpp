// The validated YAML config: defaults, every kind of problem and its message, overrides,
// typed reads and printing, on the training schema and on a small schema of every kind.

#include <tdrl/apps/config.h>

#include <filesystem>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/error_message.h"
#include "support/temp_dir.h"

namespace tdrl::apps {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using tdrl::test_util::error_message;
using K = ValueKind;

// A schema with one key of every kind, two algorithms and a three-level path.
const Schema& small_schema() {
  static const Schema schema({
      {"name", K::kString, "\"\"", false, {}, {}, "run name"},
      {"algo.name", K::kString, "", true, {"ppo", "dqn"}, {}, "the algorithm"},
      {"algo.gamma", K::kFloat, "0.99", false, {}, {}, "discount"},
      {"algo.clip_epsilon", K::kFloat, "0.2", false, {}, {"ppo"}, "PPO clip"},
      {"algo.eps_init", K::kFloat, "1.0", false, {}, {"dqn"}, "initial epsilon"},
      {"algo.steps", K::kInt, "10", false, {}, {}, "steps"},
      {"algo.flag", K::kBool, "true", false, {}, {}, "a flag"},
      {"model.cells", K::kIntList, "[64, 64]", false, {}, {}, "widths"},
      {"model.scales", K::kFloatList, "[0.5, 1.5]", false, {}, {}, "scales"},
      {"model.tags", K::kStringList, "[a, b]", false, {}, {}, "tags"},
      {"model.act", K::kString, "tanh", false, {"tanh", "relu"}, {}, "activation"},
      {"env.name", K::kString, "", true, {}, {}, "env name"},
      {"env.options", K::kMap, "{}", false, {}, {}, "options"},
      {"env.transforms", K::kMapList, "[]", false, {}, {}, "transforms"},
      {"deep.a.b", K::kInt, "1", false, {}, {}, "three levels"},
  });
  return schema;
}

// An int key with a default, valid for every algorithm.
KeySpec int_key(const std::string& path, const std::string& default_yaml) {
  KeySpec spec;
  spec.path = path;
  spec.kind = K::kInt;
  spec.default_yaml = default_yaml;
  return spec;
}

const char* kSmall = "algo:\n  name: ppo\nenv:\n  name: Pendulum\n";

Config load_small(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  return Config::load_string(yaml, overrides, small_schema(), "small.yaml");
}

std::string small_error(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  return error_message<ConfigError>([&] { load_small(yaml, overrides); });
}

const char* kCartPolePpo =
    "env:\n"
    "  name: CartPole\n"
    "algo:\n"
    "  name: ppo\n"
    "collector:\n"
    "  total_frames: 100000\n";

std::string training_error(const std::string& yaml,
                           const std::vector<std::string>& overrides = {}) {
  return error_message<ConfigError>(
      [&] { Config::load_string(yaml, overrides, Schema::training(), "run.yaml"); });
}

// ---- Schema ------------------------------------------------------------------------------------

TEST(ConfigTest, SchemaFindsKeysAndSections) {
  const Schema& schema = small_schema();
  ASSERT_NE(schema.find("algo.gamma"), nullptr);
  EXPECT_EQ(schema.find("algo.gamma")->kind, K::kFloat);
  EXPECT_EQ(schema.find("algo"), nullptr);
  EXPECT_EQ(schema.find("algo.gama"), nullptr);
  EXPECT_TRUE(schema.is_section("algo"));
  EXPECT_TRUE(schema.is_section("deep.a"));
  EXPECT_FALSE(schema.is_section("algo.gamma"));
  EXPECT_FALSE(schema.is_section("alg"));
}

TEST(ConfigTest, SchemaRejectsDuplicatePath) {
  try {
    Schema({int_key("a.b", "1"), int_key("a.b", "2")});
    FAIL() << "no std::logic_error";
  } catch (const std::logic_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("'a.b' is listed twice"));
  }
}

TEST(ConfigTest, SchemaRejectsDefaultOfWrongKindAndKeyThatIsAlsoASection) {
  try {
    Schema({int_key("a.b", "fast")});
    FAIL() << "no std::logic_error";
  } catch (const std::logic_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("the default of 'a.b' (fast) must be an int"));
  }
  EXPECT_THROW(Schema({int_key("a", "1"), int_key("a.b", "1")}), std::logic_error);
  EXPECT_THROW(Schema({int_key("a..b", "1")}), std::logic_error);
}

TEST(ConfigTest, TrainingSchemaBuildsWithValidDefaults) {
  const Schema& schema = Schema::training();
  EXPECT_GT(schema.keys().size(), 50u);
  ASSERT_NE(schema.find("algo.clip_epsilon"), nullptr);
  EXPECT_THAT(schema.find("algo.clip_epsilon")->algos, ElementsAre("ppo"));
  EXPECT_TRUE(schema.find("env.name")->required);
}

TEST(ConfigTest, KindsHaveReadableNames) {
  EXPECT_EQ(to_string(K::kBool), "bool");
  EXPECT_EQ(to_string(K::kInt), "int");
  EXPECT_EQ(to_string(K::kFloat), "float");
  EXPECT_EQ(to_string(K::kString), "string");
  EXPECT_EQ(to_string(K::kIntList), "list of int");
  EXPECT_EQ(to_string(K::kFloatList), "list of float");
  EXPECT_EQ(to_string(K::kStringList), "list of string");
  EXPECT_EQ(to_string(K::kMap), "map");
  EXPECT_EQ(to_string(K::kMapList), "list of maps");
}

// ---- defaults and reads ------------------------------------------------------------------------

TEST(ConfigTest, DefaultsFillEveryKeyNotGiven) {
  const Config config = Config::load_string(kCartPolePpo);
  EXPECT_EQ(config.get_string("env.name"), "CartPole");
  EXPECT_EQ(config.get_int("collector.total_frames"), 100000);
  EXPECT_DOUBLE_EQ(config.get_float("algo.gamma"), 0.99);
  EXPECT_DOUBLE_EQ(config.get_float("algo.clip_epsilon"), 0.2);
  EXPECT_DOUBLE_EQ(config.get_float("optim.eps"), 1e-8);
  EXPECT_THAT(config.get_int_list("model.actor_cells"), ElementsAre(64, 64));
  EXPECT_EQ(config.get_string("model.activation"), "tanh");
  EXPECT_EQ(config.get_string("name"), "");
  EXPECT_FALSE(config.get_bool("env.parallel"));
  EXPECT_TRUE(config.get_map("env.options").IsMap());
  EXPECT_EQ(config.get_map("env.options").size(), 0u);
  EXPECT_TRUE(config.get_map_list("env.transforms").empty());
  EXPECT_EQ(config.get_int("env.max_episode_steps"), -1);
  EXPECT_TRUE(config.is_set("env.name"));
  EXPECT_FALSE(config.is_set("algo.gamma"));
}

TEST(ConfigTest, KeysOfOtherAlgorithmsAreAbsent) {
  const Config config = Config::load_string(kCartPolePpo);
  EXPECT_TRUE(config.contains("algo.lmbda"));
  EXPECT_FALSE(config.contains("algo.eps_init"));
  EXPECT_FALSE(config.contains("replay.capacity"));
  EXPECT_FALSE(config.is_set("algo.eps_init"));
  try {
    config.get_float("algo.eps_init");
    FAIL() << "no ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("get_float('algo.eps_init')"));
    EXPECT_THAT(e.what(), HasSubstr("only an option of dqn and algo.name is ppo"));
  }
}

TEST(ConfigTest, GettersReadEveryKind) {
  const Config config = load_small(
      "algo:\n  name: dqn\n  gamma: 1\n  steps: -3\n  flag: false\n  eps_init: 1e-2\n"
      "model:\n  cells: [8, 16, 32]\n  scales: [1, 2.5e1]\n  tags: [x, \"y z\"]\n  act: relu\n"
      "env:\n  name: Pendulum\n  options: {size: 3, mode: fast}\n"
      "  transforms:\n    - type: step_counter\n      max_steps: 5\n    - {type: reward_sum}\n"
      "deep:\n  a:\n    b: 7\n");
  EXPECT_DOUBLE_EQ(config.get_float("algo.gamma"), 1.0);
  EXPECT_EQ(config.get_int("algo.steps"), -3);
  EXPECT_FALSE(config.get_bool("algo.flag"));
  EXPECT_DOUBLE_EQ(config.get_float("algo.eps_init"), 0.01);
  EXPECT_THAT(config.get_int_list("model.cells"), ElementsAre(8, 16, 32));
  EXPECT_THAT(config.get_float_list("model.scales"), ElementsAre(1.0, 25.0));
  EXPECT_THAT(config.get_string_list("model.tags"), ElementsAre("x", "y z"));
  EXPECT_EQ(config.get_string("model.act"), "relu");
  const YAML::Node options = config.get_map("env.options");
  EXPECT_EQ(options["size"].as<int>(), 3);
  EXPECT_EQ(options["mode"].as<std::string>(), "fast");
  const std::vector<YAML::Node> transforms = config.get_map_list("env.transforms");
  ASSERT_EQ(transforms.size(), 2u);
  EXPECT_EQ(transforms[0]["type"].as<std::string>(), "step_counter");
  EXPECT_EQ(transforms[0]["max_steps"].as<int>(), 5);
  EXPECT_EQ(transforms[1]["type"].as<std::string>(), "reward_sum");
  EXPECT_EQ(config.get_int("deep.a.b"), 7);
}

TEST(ConfigTest, GetterOfAnotherKindThrowsNamingPathAndKinds) {
  const Config config = load_small(kSmall);
  try {
    config.get_int("algo.gamma");
    FAIL() << "no ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("get_int('algo.gamma')"));
    EXPECT_THAT(e.what(), HasSubstr("is a float, not an int"));
  }
  EXPECT_THROW(config.get_string("model.tags"), ConfigError);
  EXPECT_THROW(config.get_map("env.transforms"), ConfigError);
}

TEST(ConfigTest, GetterOfUnknownPathThrowsWithSuggestion) {
  const Config config = load_small(kSmall);
  try {
    config.get_float("algo.gama");
    FAIL() << "no ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("'algo.gama' is not a key of the schema"));
    EXPECT_THAT(e.what(), HasSubstr("did you mean 'algo.gamma'"));
  }
  EXPECT_THROW(config.is_set("algo.gama"), ConfigError);
}

TEST(ConfigTest, ReadsReturnCopies) {
  const Config config = load_small("algo: {name: ppo}\nenv: {name: P, options: {a: 1}}\n");
  YAML::Node options = config.get_map("env.options");
  options["a"] = 2;
  EXPECT_EQ(config.get_map("env.options")["a"].as<int>(), 1);
}

TEST(ConfigTest, EmptyListOrMapValueMeansEmpty) {
  const Config config = load_small(
      "algo: {name: ppo}\nenv:\n  name: P\n  options:\n  transforms:\nmodel:\n  cells:\n");
  EXPECT_EQ(config.get_map("env.options").size(), 0u);
  EXPECT_TRUE(config.get_map_list("env.transforms").empty());
  EXPECT_TRUE(config.get_int_list("model.cells").empty());
  EXPECT_TRUE(config.is_set("model.cells"));
}

// ---- problems ----------------------------------------------------------------------------------

TEST(ConfigTest, UnknownKeyNamesLineAndSuggestsClosest) {
  const std::string message = training_error(std::string(kCartPolePpo) + "  gama: 0.9\n");
  EXPECT_THAT(message, HasSubstr("invalid config run.yaml (1 problem)"));
  EXPECT_THAT(message, HasSubstr("unknown key 'collector.gama' (run.yaml line 7)"));
  EXPECT_THAT(message, HasSubstr("did you mean 'algo.gamma'?"));

  const std::string typo = training_error(
      "env:\n  name: CartPole\nalgo:\n  name: ppo\n  gama: 0.9\n"
      "collector: {total_frames: 10}\n");
  EXPECT_THAT(typo, HasSubstr("unknown key 'algo.gama' (run.yaml line 5); did you mean "
                              "'algo.gamma'?"));
}

TEST(ConfigTest, UnknownKeyFarFromEveryKeyListsTheClosest) {
  const std::string message = small_error(std::string(kSmall) + "zzzzzzzz: 1\n");
  EXPECT_THAT(message, HasSubstr("unknown key 'zzzzzzzz' (small.yaml line 5)"));
  EXPECT_THAT(message, HasSubstr("the closest known keys are"));
  EXPECT_THAT(message, HasSubstr("docs/config.md"));
}

TEST(ConfigTest, UnknownKeyCloseToAnotherAlgorithmsKeySaysWhichAlgorithm) {
  const std::string message =
      small_error("algo:\n  name: dqn\n  clip_epsilonn: 0.1\nenv: {name: P}\n");
  EXPECT_THAT(message, HasSubstr("unknown key 'algo.clip_epsilonn'"));
  EXPECT_THAT(message, HasSubstr("did you mean 'algo.clip_epsilon' (an option of ppo only)?"));
}

TEST(ConfigTest, KeyOfAnotherAlgorithmNamesTheAlgorithmsThatAcceptIt) {
  const std::string message = training_error(
      "env:\n  name: CartPole\nalgo:\n  name: dqn\n  clip_epsilon: 0.1\n"
      "collector: {total_frames: 10}\n");
  EXPECT_THAT(message, HasSubstr("'algo.clip_epsilon' (run.yaml line 5) is only an option of "
                                 "ppo; algo.name is dqn; remove it or set algo.name: ppo"));
  const std::string on_policy = training_error(
      "env:\n  name: CartPole\nalgo:\n  name: sac\n  lmbda: 0.9\n"
      "collector: {total_frames: 10}\n");
  EXPECT_THAT(on_policy, HasSubstr("'algo.lmbda' (run.yaml line 5) is only an option of ppo "
                                   "and a2c; algo.name is sac"));
}

TEST(ConfigTest, InvalidAlgoNameSkipsTheAlgorithmCheck) {
  const std::string message = small_error("algo:\n  name: ppoo\n  eps_init: 0.5\nenv: {name: P}\n");
  EXPECT_THAT(message, HasSubstr("'algo.name' (small.yaml line 2) must be one of the choices, "
                                 "got 'ppoo'; the choices are ppo and dqn; did you mean 'ppo'?"));
  EXPECT_THAT(message, Not(HasSubstr("only an option")));
  EXPECT_THAT(message, HasSubstr("(1 problem)"));
}

TEST(ConfigTest, WrongTypeNamesLineExpectedAndGot) {
  const std::string message = training_error(std::string(kCartPolePpo) + "optim:\n  lr: fast\n");
  EXPECT_THAT(message, HasSubstr("'optim.lr' (run.yaml line 8) must be a float, got 'fast'; "
                                 "write a finite number"));
}

TEST(ConfigTest, IntRejectsNumbersThatAreNotWhole) {
  EXPECT_THAT(small_error(std::string(kSmall) + "algo: {steps: 1e3}\n"),
              HasSubstr("'algo.steps' (small.yaml line 5) must be an int, got '1e3'; write 1000"));
  EXPECT_THAT(small_error("algo: {name: ppo, steps: 2.5}\nenv: {name: P}\n"),
              HasSubstr("must be an int, got '2.5'; write a whole number"));
  EXPECT_THAT(small_error("algo: {name: ppo, steps: \"5\"}\nenv: {name: P}\n"),
              HasSubstr("must be an int, got '\"5\"' (quoted); write a whole number without "
                        "quotes"));
  EXPECT_THAT(small_error("algo: {name: ppo, steps: 99999999999999999999}\nenv: {name: P}\n"),
              HasSubstr("out of the 64-bit range"));
}

TEST(ConfigTest, FloatAcceptsIntegersAndExponentsButOnlyFiniteNumbers) {
  const Config config = load_small(
      "algo: {name: ppo, gamma: 1e-4, clip_epsilon: 3}\n"
      "env: {name: P}\n");
  EXPECT_DOUBLE_EQ(config.get_float("algo.gamma"), 1e-4);
  EXPECT_DOUBLE_EQ(config.get_float("algo.clip_epsilon"), 3.0);
  EXPECT_THAT(small_error("algo: {name: ppo, gamma: .inf}\nenv: {name: P}\n"),
              HasSubstr("'algo.gamma' (small.yaml line 1) must be a float, got '.inf'"));
  EXPECT_THAT(small_error("algo: {name: ppo, gamma: nan}\nenv: {name: P}\n"),
              HasSubstr("must be a float, got 'nan'"));
  EXPECT_THAT(small_error("algo: {name: ppo, gamma: 1e999}\nenv: {name: P}\n"),
              HasSubstr("must be a float, got '1e999'"));
}

TEST(ConfigTest, BoolAcceptsOnlyTrueOrFalse) {
  EXPECT_TRUE(load_small("algo: {name: ppo, flag: True}\nenv: {name: P}\n").get_bool("algo.flag"));
  EXPECT_THAT(small_error("algo: {name: ppo, flag: yes}\nenv: {name: P}\n"),
              HasSubstr("'algo.flag' (small.yaml line 1) must be a bool, got 'yes'; write true "
                        "or false"));
}

TEST(ConfigTest, StringRejectsListsAndNull) {
  EXPECT_THAT(small_error("algo: {name: ppo}\nenv: {name: [a, b]}\n"),
              HasSubstr("'env.name' (small.yaml line 2) must be a string, got a list"));
  EXPECT_THAT(small_error("algo: {name: ppo}\nenv: {name: }\n"),
              HasSubstr("'env.name' (small.yaml line 2) must be a string, got nothing (null)"));
}

TEST(ConfigTest, BadChoiceNamesTheChoices) {
  const std::string message =
      training_error(std::string(kCartPolePpo) + "model:\n  activation: rleu\n");
  EXPECT_THAT(message, HasSubstr("'model.activation' (run.yaml line 8) must be one of the "
                                 "choices, got 'rleu'; the choices are tanh, relu, elu"));
  EXPECT_THAT(message, HasSubstr("did you mean 'relu'?"));
}

TEST(ConfigTest, ListElementOfWrongKindNamesItsIndex) {
  EXPECT_THAT(small_error(std::string(kSmall) + "model:\n  cells: [64, big]\n"),
              HasSubstr("'model.cells' (small.yaml line 6) must be a list of int such as "
                        "[64, 64]; element 1: got 'big'"));
  EXPECT_THAT(small_error(std::string(kSmall) + "model:\n  cells: 64\n"),
              HasSubstr("must be a list of int such as [64, 64], got '64'"));
}

TEST(ConfigTest, MapMustHoldScalars) {
  EXPECT_THAT(small_error("algo: {name: ppo}\nenv: {name: P, options: {a: [1]}}\n"),
              HasSubstr("'env.options' (small.yaml line 2) must be a map of scalars such as "
                        "{size: 3, mode: fast}; the value of 'a' is a list"));
  EXPECT_THAT(small_error("algo: {name: ppo}\nenv: {name: P, options: 3}\n"),
              HasSubstr("must be a map of scalars such as {size: 3, mode: fast}, got '3'"));
}

TEST(ConfigTest, MapListElementsNeedAType) {
  const std::string message =
      training_error(std::string(kCartPolePpo) +
                     "  frames_per_batch: 100\nenv:\n  transforms:\n    - type: step_counter\n"
                     "    - loc: 0\n      scale: 1\n");
  EXPECT_THAT(message, HasSubstr("'env.transforms' (run.yaml line 9) must be a list of maps, "
                                 "each with a 'type'"));
  EXPECT_THAT(message, HasSubstr("element 1 has no 'type' (its keys: 'loc' and 'scale'); add "
                                 "type: <name> to it"));
  EXPECT_THAT(small_error(std::string(kSmall) + "env: {transforms: [step_counter]}\n"),
              HasSubstr("element 0 is 'step_counter'"));
  EXPECT_THAT(small_error(std::string(kSmall) + "env: {transforms: [{type: [a]}]}\n"),
              HasSubstr("element 0 has a 'type' that is a list"));
}

TEST(ConfigTest, ScalarGivenForASectionIsReported) {
  EXPECT_THAT(small_error("algo: ppo\nenv: {name: P}\n"),
              HasSubstr("'algo' (small.yaml line 1) must be a section (a map of keys such as "
                        "name, gamma and clip_epsilon), got 'ppo'"));
  EXPECT_THAT(small_error("- a\n- b\n"), HasSubstr("the document must be a map of sections"));
}

TEST(ConfigTest, MissingRequiredKeyIsNamedWithItsDoc) {
  const std::string message = training_error("algo: {name: ppo}\n");
  EXPECT_THAT(message, HasSubstr("(2 problems)"));
  EXPECT_THAT(message, HasSubstr("missing required key 'env.name' (registered env name "
                                 "(tdrl-envs lists them)); add it to run.yaml or pass --set "
                                 "env.name=<value>"));
  EXPECT_THAT(message, HasSubstr("missing required key 'collector.total_frames'"));
  EXPECT_THAT(training_error(""), HasSubstr("missing required key 'algo.name'"));
}

TEST(ConfigTest, DuplicateKeyIsReported) {
  EXPECT_THAT(small_error(std::string(kSmall) + "algo:\n  name: dqn\n"),
              HasSubstr("'algo.name' is given twice (small.yaml line 2 and line 6); keep one"));
}

TEST(ConfigTest, MalformedYamlNamesSourceAndLine) {
  const std::string message = error_message<ConfigError>([] {
    Config::load_string("algo:\n  name: ppo\n gamma: 0.9\n", {}, small_schema(), "bad.yaml");
  });
  EXPECT_THAT(message, HasSubstr("invalid config bad.yaml: invalid YAML at line 3"));
  EXPECT_THAT(message, HasSubstr("check the indentation"));
}

TEST(ConfigTest, AllProblemsAreReportedTogetherInFileOrder) {
  const std::string message = small_error(
      "algo:\n  name: ppo\n  gama: 0.9\n  steps: many\nenv: {name: P}\n", {"algo.flag=maybe"});
  EXPECT_THAT(message, HasSubstr("invalid config small.yaml (3 problems):\n"
                                 "  - unknown key 'algo.gama' (small.yaml line 3)"));
  EXPECT_THAT(message, HasSubstr("\n  - 'algo.steps' (small.yaml line 4) must be an int"));
  EXPECT_THAT(message, HasSubstr("\n  - 'algo.flag' (--set algo.flag=maybe) must be a bool"));
  EXPECT_LT(message.find("algo.gama"), message.find("algo.steps"));
  EXPECT_LT(message.find("algo.steps"), message.find("algo.flag"));
}

// ---- overrides ---------------------------------------------------------------------------------

TEST(ConfigTest, OverridesReplaceFileValuesAndMarkKeysSet) {
  const Config config = load_small(std::string(kSmall) + "model: {cells: [1]}\n",
                                   {"algo.gamma=0.5", "model.cells=[256, 256]", "algo.flag=false",
                                    "model.act=relu", "algo.gamma=0.25"});
  EXPECT_DOUBLE_EQ(config.get_float("algo.gamma"), 0.25);
  EXPECT_THAT(config.get_int_list("model.cells"), ElementsAre(256, 256));
  EXPECT_FALSE(config.get_bool("algo.flag"));
  EXPECT_EQ(config.get_string("model.act"), "relu");
  EXPECT_TRUE(config.is_set("algo.gamma"));
  EXPECT_TRUE(config.is_set("algo.flag"));
  EXPECT_FALSE(config.is_set("algo.steps"));
}

TEST(ConfigTest, OverridesTakeNestedPathsAndSectionMaps) {
  const Config config =
      load_small(kSmall, {"deep.a.b=9", "algo={gamma: 0.9, steps: 4}", "env.options={size: 5}",
                          "env.transforms=[{type: reward_sum}]", "name=my run=1"});
  EXPECT_EQ(config.get_int("deep.a.b"), 9);
  EXPECT_DOUBLE_EQ(config.get_float("algo.gamma"), 0.9);
  EXPECT_EQ(config.get_int("algo.steps"), 4);
  EXPECT_EQ(config.get_string("algo.name"), "ppo");
  EXPECT_EQ(config.get_map("env.options")["size"].as<int>(), 5);
  EXPECT_EQ(config.get_map_list("env.transforms").at(0)["type"].as<std::string>(), "reward_sum");
  EXPECT_EQ(config.get_string("name"), "my run=1");
}

TEST(ConfigTest, OverrideSuppliesARequiredKeyAndCanChangeTheAlgorithm) {
  const Config config = load_small("algo: {name: ppo, clip_epsilon: 0.1}\n", {"env.name=Pendulum"});
  EXPECT_EQ(config.get_string("env.name"), "Pendulum");
  const Config dqn = load_small(kSmall, {"algo.name=dqn"});
  EXPECT_TRUE(dqn.contains("algo.eps_init"));
  EXPECT_FALSE(dqn.contains("algo.clip_epsilon"));
  EXPECT_THAT(
      small_error("algo: {name: ppo, clip_epsilon: 0.1}\nenv: {name: P}\n", {"algo.name=dqn"}),
      HasSubstr("'algo.clip_epsilon' (small.yaml line 1) is only an option of ppo; "
                "algo.name is dqn"));
}

TEST(ConfigTest, OverrideWithoutEqualsSignShowsUsage) {
  const std::string message = small_error(kSmall, {"algo.gamma"});
  EXPECT_THAT(message, HasSubstr("override 'algo.gamma' must be path=value, e.g. --set "
                                 "algo.gamma=0.98"));
  EXPECT_THAT(small_error(kSmall, {"=3"}), HasSubstr("override '=3' must be path=value"));
}

TEST(ConfigTest, OverrideOfUnknownKeySuggestsClosest) {
  EXPECT_THAT(small_error(kSmall, {"algo.gama=0.9"}),
              HasSubstr("unknown key 'algo.gama' (--set algo.gama=0.9); did you mean "
                        "'algo.gamma'?"));
}

TEST(ConfigTest, OverrideValueIsValidated) {
  EXPECT_THAT(small_error(kSmall, {"algo.gamma=high"}),
              HasSubstr("'algo.gamma' (--set algo.gamma=high) must be a float, got 'high'"));
  EXPECT_THAT(small_error(kSmall, {"model.cells=[1, 2"}),
              HasSubstr("the value of --set model.cells=[1, 2 is not valid YAML"));
}

// ---- printing ----------------------------------------------------------------------------------

TEST(ConfigTest, ToYamlNestsSectionsInSchemaOrderWithDocs) {
  const Config config = load_small(kSmall, {"name=\"true\""});
  const std::string yaml = config.to_yaml();
  EXPECT_THAT(yaml, HasSubstr("name: \"true\""));
  EXPECT_THAT(yaml, HasSubstr("algo:\n  name: ppo"));
  EXPECT_THAT(yaml, HasSubstr("cells: [64, 64]"));
  EXPECT_THAT(yaml, HasSubstr("deep:\n  a:\n    b: 1"));
  EXPECT_THAT(yaml, HasSubstr("# discount"));
  EXPECT_THAT(yaml, Not(HasSubstr("eps_init")));
  EXPECT_LT(yaml.find("algo:"), yaml.find("model:"));
  EXPECT_LT(yaml.find("model:"), yaml.find("env:"));
  EXPECT_LT(yaml.find("env:"), yaml.find("deep:"));
  EXPECT_EQ(Config::load_string(yaml, {}, small_schema()).get_string("name"), "true");
}

// Compares every key of two configs through the getter of its kind.
void expect_equal_configs(const Config& a, const Config& b) {
  for (const KeySpec& spec : a.schema().keys()) {
    SCOPED_TRACE(spec.path);
    ASSERT_EQ(a.contains(spec.path), b.contains(spec.path));
    if (!a.contains(spec.path)) continue;
    switch (spec.kind) {
      case K::kBool:
        EXPECT_EQ(a.get_bool(spec.path), b.get_bool(spec.path));
        break;
      case K::kInt:
        EXPECT_EQ(a.get_int(spec.path), b.get_int(spec.path));
        break;
      case K::kFloat:
        EXPECT_EQ(a.get_float(spec.path), b.get_float(spec.path));
        break;
      case K::kString:
        EXPECT_EQ(a.get_string(spec.path), b.get_string(spec.path));
        break;
      case K::kIntList:
        EXPECT_EQ(a.get_int_list(spec.path), b.get_int_list(spec.path));
        break;
      case K::kFloatList:
        EXPECT_EQ(a.get_float_list(spec.path), b.get_float_list(spec.path));
        break;
      case K::kStringList:
        EXPECT_EQ(a.get_string_list(spec.path), b.get_string_list(spec.path));
        break;
      case K::kMap:
      case K::kMapList: {
        std::string da, db;
        if (spec.kind == K::kMap) {
          da = YAML::Dump(a.get_map(spec.path));
          db = YAML::Dump(b.get_map(spec.path));
        } else {
          for (const auto& m : a.get_map_list(spec.path)) da += YAML::Dump(m) + "\n";
          for (const auto& m : b.get_map_list(spec.path)) db += YAML::Dump(m) + "\n";
        }
        EXPECT_EQ(da, db);
        break;
      }
    }
  }
}

TEST(ConfigTest, ToYamlRoundTripsForEveryAlgorithm) {
  for (const std::string& algo : Schema::training().find("algo.name")->choices) {
    SCOPED_TRACE(algo);
    const Config config = Config::load_string(
        "name: \"123\"\nenv:\n  name: CartPole\n  options: {size: 3, label: \"true\"}\n"
        "  transforms:\n    - type: step_counter\n      max_steps: 50\n"
        "    - {type: observation_norm, keys: [observation]}\n"
        "algo:\n  name: " +
        algo + "\n  gamma: 0.98\ncollector: {total_frames: 1000000}\noptim: {lr: 1e-4}\n");
    const std::string yaml = config.to_yaml();
    const Config again = Config::load_string(yaml, {}, Schema::training(), "printed");
    EXPECT_EQ(again.to_yaml(), yaml);
    expect_equal_configs(config, again);
    EXPECT_EQ(again.get_string("name"), "123");
    EXPECT_EQ(again.get_map("env.options")["label"].Tag(), "!");
    EXPECT_EQ(again.get_map_list("env.transforms").size(), 2u);
    EXPECT_DOUBLE_EQ(again.get_float("optim.lr"), 1e-4);
  }
}

TEST(ConfigTest, EveryShippedConfigLoads) {
  size_t loaded = 0;
  for (const auto& entry : std::filesystem::directory_iterator(TDRL_SOURCE_DIR "/configs")) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    EXPECT_NO_THROW(Config::load_file(entry.path().string()));
    ++loaded;
  }
  EXPECT_GT(loaded, 0u);
}

// ---- files -------------------------------------------------------------------------------------

TEST(ConfigTest, LoadFileNamesTheFileInMessages) {
  tensordict::testing::TempDir dir;
  const std::string path = dir / "run.yaml";
  tensordict::testing::write_file_bytes(path, std::string(kCartPolePpo) + "algo: {gama: 1}\n");
  const std::string message = error_message<ConfigError>([&] { Config::load_file(path); });
  EXPECT_THAT(message, HasSubstr("unknown key 'algo.gama' (" + path + " line 7)"));
  tensordict::testing::write_file_bytes(path, kCartPolePpo);
  EXPECT_EQ(Config::load_file(path, {"seed=3"}).get_int("seed"), 3);
  EXPECT_THAT(error_message<ConfigError>([&] { Config::load_file(dir / "missing.yaml"); }),
              HasSubstr("cannot read '" + (dir / "missing.yaml") + "'"));
}

}  // namespace
}  // namespace tdrl::apps
