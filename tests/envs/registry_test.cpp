// The env registry and EnvOptions: registering, building by name, errors, and the built-in
// tasks. The registry is process-wide: every test registers names of its own ("test/...").

#include <tdrl/envs/registry.h>

#include <algorithm>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <tdrl/envs/batched_envs.h>
#include <tensordict/errors.h>

#include "support/mock_envs.h"
#include "support/test_names.h"

namespace tdrl::envs {
namespace {

using namespace tdrl::testing::names;
using tdrl::testing::NoisyCounterEnv;
using tdrl::testing::NoisyCounterOptions;
using ::testing::Contains;

// A factory for NoisyCounterEnv reading the task option "obs_dim".
RegisteredEnvFactory registered_counter_factory() {
  return [](const EnvOptions& options) -> std::shared_ptr<EnvBase> {
    options.check_keys("NoisyCounter", {"obs_dim", "episode_length"});
    return std::make_shared<NoisyCounterEnv>(
        NoisyCounterOptions()
            .batch_size(options.batch_size())
            .obs_dim(options.get_int("obs_dim", 2))
            .episode_length(options.get_int("episode_length", 1000)));
  };
}

// Registers `name` with registered_counter_factory() unless a previous test (in the same process)
// did.
void ensure_registered(const std::string& name) {
  if (!is_env_registered(name)) register_env(name, registered_counter_factory());
}

// ---- Registering and building -------------------------------------------------------------------

TEST(RegistryTest, MakeEnvBuildsTheRegisteredEnvWithItsOptions) {
  ensure_registered("test/Counter");
  auto env = make_env("test/Counter", EnvOptions().batch_size({3}).set("obs_dim", 5));
  ASSERT_NE(env, nullptr);
  EXPECT_EQ(env->name(), "NoisyCounter");
  EXPECT_EQ(env->batch_size(), (Shape{3}));
  EXPECT_EQ(env->observation_spec()->get("observation")->shape(), (Shape{3, 5}));
}

TEST(RegistryTest, MakeEnvSeedsTheEnvWhenASeedIsGiven) {
  ensure_registered("test/Counter");
  auto a = make_env("test/Counter", EnvOptions().seed(7));
  auto b = make_env("test/Counter", EnvOptions().seed(7));
  NoisyCounterEnv manual;
  manual.set_seed(7);
  const auto expected = manual.reset().get("observation");
  EXPECT_TRUE(torch::equal(a->reset().get("observation"), expected));
  EXPECT_TRUE(torch::equal(b->reset().get("observation"), expected));
}

TEST(RegistryTest, ListEnvsIsSortedAndHoldsTheRegisteredNames) {
  ensure_registered("test/Zeta");
  ensure_registered("test/Alpha");
  const auto names = list_envs();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_THAT(names, Contains("test/Zeta"));
  EXPECT_THAT(names, Contains("test/Alpha"));
  EXPECT_TRUE(is_env_registered("test/Alpha"));
  EXPECT_FALSE(is_env_registered("test/Gamma"));
}

TEST(RegistryTest, RegisterEnvRejectsADuplicateName) {
  ensure_registered("test/Dup");
  EXPECT_THAT([] { register_env("test/Dup", registered_counter_factory()); },
              ThrowsMessage<tensordict::ValueError>(
                  HasSubstr("register_env: 'test/Dup' is already registered")));
}

TEST(RegistryTest, RegisterEnvRejectsAnEmptyNameOrFactory) {
  EXPECT_THAT([] { register_env("", registered_counter_factory()); },
              ThrowsMessage<tensordict::ValueError>(HasSubstr("register_env: the name is empty")));
  EXPECT_THAT([] { register_env("test/Empty", RegisteredEnvFactory()); },
              ThrowsMessage<tensordict::ValueError>(
                  HasSubstr("register_env('test/Empty'): the factory is empty")));
  EXPECT_FALSE(is_env_registered("test/Empty"));
}

TEST(RegistryTest, OptionNamesAreKeptInTheirDeclaredOrder) {
  if (!is_env_registered("test/WithOptions")) {
    register_env("test/WithOptions", registered_counter_factory(), {"obs_dim", "episode_length"});
  }
  EXPECT_EQ(env_option_names("test/WithOptions"),
            (std::vector<std::string>{"obs_dim", "episode_length"}));
  ensure_registered("test/NoOptions");
  EXPECT_TRUE(env_option_names("test/NoOptions").empty());
}

TEST(RegistryTest, RegisterEnvRejectsAnEmptyOrRepeatedOptionName) {
  EXPECT_THAT(
      [] {
        register_env("test/BadOptions", registered_counter_factory(), {"obs_dim", ""});
      },
      ThrowsMessage<tensordict::ValueError>(
          HasSubstr("register_env('test/BadOptions'): option name 1 is empty")));
  EXPECT_THAT(
      [] {
        register_env("test/BadOptions", registered_counter_factory(), {"obs_dim", "obs_dim"});
      },
      ThrowsMessage<tensordict::ValueError>(HasSubstr("option 'obs_dim' is listed twice")));
  EXPECT_FALSE(is_env_registered("test/BadOptions"));
}

TEST(RegistryTest, OptionNamesOfAnUnknownEnvNameTheClosest) {
  ensure_registered("test/Alpha");
  EXPECT_THAT([] { env_option_names("test/Alpah"); },
              ThrowsMessage<tensordict::KeyError>(
                  AllOf(HasSubstr("env_option_names: no env is registered as 'test/Alpah'"),
                        HasSubstr("test/Alpha"))));
}

TEST(RegistryTest, UnknownNameListsTheRegisteredNamesClosestFirst) {
  ensure_registered("test/Alpha");
  ensure_registered("test/Zeta");
  EXPECT_THAT([] { make_env("test/Alpah"); },
              ThrowsMessage<tensordict::KeyError>(
                  AllOf(HasSubstr("make_env: no env is registered as 'test/Alpah'"),
                        HasSubstr("registered (closest first): ['test/Alpha', "))));
}

TEST(RegistryTest, FactoryIgnoringTheBatchSizeIsRejected) {
  if (!is_env_registered("test/Unbatched")) {
    register_env("test/Unbatched",
                 [](const EnvOptions&) { return std::make_shared<NoisyCounterEnv>(); });
  }
  EXPECT_THAT([] { make_env("test/Unbatched", EnvOptions().batch_size({4})); },
              ThrowsMessage<tensordict::ValueError>(
                  HasSubstr("make_env('test/Unbatched'): the factory built an env of batch_size "
                            "[] for options.batch_size [4]")));
}

TEST(RegistryTest, FactoryReturningNullIsRejected) {
  if (!is_env_registered("test/Null")) {
    register_env("test/Null", [](const EnvOptions&) { return std::shared_ptr<EnvBase>(); });
  }
  EXPECT_THAT([] { make_env("test/Null"); },
              ThrowsMessage<tensordict::ValueError>(
                  HasSubstr("make_env('test/Null'): the factory returned a null env")));
}

TEST(RegistryTest, UnknownTaskOptionListsTheKnownOnesClosestFirst) {
  ensure_registered("test/Counter");
  EXPECT_THAT([] { make_env("test/Counter", EnvOptions().set("episode_len", 3)); },
              ThrowsMessage<tensordict::KeyError>(
                  HasSubstr("NoisyCounter: unknown option 'episode_len'; known options "
                            "(closest first): ['episode_length', 'obs_dim']")));
}

TEST(RegistryTest, RegisteredEnvsFeedParallelEnv) {
  ensure_registered("test/Counter");
  ParallelEnv env(
      3, [] { return make_env("test/Counter", EnvOptions().set("obs_dim", 4)); },
      ParallelEnvOptions().num_threads(2));
  EXPECT_EQ(env.observation_spec()->get("observation")->shape(), (Shape{3, 4}));
  EXPECT_NO_THROW(check_env_specs(env));
}

// ---- EnvOptions ---------------------------------------------------------------------------------

TEST(EnvOptionsTest, GettersReturnTheDefaultWhenUnset) {
  const EnvOptions options;
  EXPECT_EQ(options.get_int("n", 3), 3);
  EXPECT_EQ(options.get_double("x", 0.5), 0.5);
  EXPECT_TRUE(options.get_bool("flag", true));
  EXPECT_EQ(options.get_string("s", "abc"), "abc");
  EXPECT_FALSE(options.contains("n"));
}

TEST(EnvOptionsTest, GettersConvertNumbersWithoutLoss) {
  const auto options = EnvOptions().set("n", 4).set("x", 2.0).set("flag", false).set("s", "book");
  EXPECT_EQ(options.get_int("n", 0), 4);
  EXPECT_EQ(options.get_double("n", 0), 4.0);
  EXPECT_EQ(options.get_int("x", 0), 2);
  EXPECT_EQ(options.get_double("x", 0), 2.0);
  EXPECT_FALSE(options.get_bool("flag", true));
  EXPECT_EQ(options.get_string("s", ""), "book");
}

TEST(EnvOptionsTest, GettersRejectAnotherTypeNamingTheOption) {
  const auto options = EnvOptions().set("x", 2.5).set("s", "book").set("flag", true);
  EXPECT_THAT([&] { options.get_int("x", 0); },
              ThrowsMessage<tensordict::TypeError>(
                  HasSubstr("EnvOptions: option 'x' is double 2.5; expected an integer")));
  EXPECT_THAT([&] { options.get_double("s", 0); },
              ThrowsMessage<tensordict::TypeError>(
                  HasSubstr("option 's' is string \"book\"; expected a number")));
  EXPECT_THAT([&] { options.get_bool("x", false); },
              ThrowsMessage<tensordict::TypeError>(HasSubstr("expected a bool")));
  EXPECT_THAT([&] { options.get_string("flag", ""); },
              ThrowsMessage<tensordict::TypeError>(
                  HasSubstr("option 'flag' is bool true; expected a string")));
}

TEST(EnvOptionsTest, SetReplacesAnEarlierValue) {
  const auto options = EnvOptions().set("n", 1).set("n", 2.5);
  EXPECT_EQ(options.get_double("n", 0), 2.5);
  EXPECT_EQ(options.options().size(), 1u);
}

TEST(EnvOptionsTest, CheckKeysAcceptsKnownOptions) {
  const auto options = EnvOptions().set("gravity", 9.8);
  EXPECT_NO_THROW(options.check_keys("CartPole-v1", {"gravity", "tau"}));
  EXPECT_THAT([&] { options.check_keys("Walk", {}); },
              ThrowsMessage<tensordict::KeyError>(
                  HasSubstr("Walk: unknown option 'gravity'; this env takes no options")));
}

TEST(EnvOptionsTest, PrintsEveryField) {
  std::ostringstream os;
  os << EnvOptions().batch_size({16}).seed(0).set("max_episode_steps", 200).set("mode", "nips");
  EXPECT_EQ(os.str(),
            "EnvOptions(batch_size=[16], device=cpu, seed=0, options={max_episode_steps=200, "
            "mode=\"nips\"})");
  EXPECT_EQ(printed(EnvOptions()), "EnvOptions(batch_size=[], device=cpu, seed=None, options={})");
}

// ---- Built-in tasks -----------------------------------------------------------------------------

const std::vector<std::string>& builtin_names() {
  static const std::vector<std::string> names{"CartPole-v1",
                                              "Pendulum-v1",
                                              "MountainCar-v0",
                                              "MountainCarContinuous-v0",
                                              "Acrobot-v1",
                                              "InvertedPendulum-v4",
                                              "InvertedDoublePendulum-v4",
                                              "Reacher-v4",
                                              "HalfCheetah-v4",
                                              "Hopper-v4",
                                              "Walker2d-v4",
                                              "Ant-v4",
                                              "Humanoid-v4"};
  return names;
}

TEST(BuiltinEnvsTest, RegisterBuiltinEnvsRegistersEveryTaskAndIsIdempotent) {
  register_builtin_envs();
  EXPECT_NO_THROW(register_builtin_envs());
  const auto names = list_envs();
  for (const auto& name : builtin_names()) EXPECT_THAT(names, Contains(name));
}

TEST(BuiltinEnvsTest, EveryBuiltinTaskPassesCheckEnvSpecsWhenBatched) {
  register_builtin_envs();
  for (const auto& name : builtin_names()) {
    SCOPED_TRACE(name);
    auto env = make_env(name, EnvOptions().batch_size({2}).seed(1));
    EXPECT_EQ(env->batch_size(), (Shape{2}));
    EXPECT_NO_THROW(check_env_specs(*env));
  }
}

TEST(BuiltinEnvsTest, TaskOptionsReachTheTask) {
  register_builtin_envs();
  auto env = make_env("CartPole-v1", EnvOptions().batch_size({4}).set("max_episode_steps", 3));
  env->set_seed(0);
  // No sequence of 3 pushes topples the pole: only the time limit ends the episode.
  auto rollout = env->rollout(10);
  EXPECT_EQ(rollout.batch_size(), (Shape{4, 3}));
  EXPECT_TRUE(rollout.get({"next", "truncated"})
                  .index({torch::indexing::Ellipsis, 2, 0})
                  .all()
                  .item<bool>());
  auto cheetah = make_env("HalfCheetah-v4", EnvOptions().set("max_episode_steps", 2));
  EXPECT_EQ(cheetah->rollout(5).batch_size(), (Shape{2}));
}

TEST(BuiltinEnvsTest, UnknownTaskOptionNamesTheTaskAndTheClosestOption) {
  register_builtin_envs();
  EXPECT_THAT([] { make_env("CartPole-v1", EnvOptions().set("max_steps", 10)); },
              ThrowsMessage<tensordict::KeyError>(
                  AllOf(HasSubstr("CartPole-v1: unknown option 'max_steps'"),
                        HasSubstr("known options (closest first): ['masscart', 'masspole', "
                                  "'max_episode_steps', "))));
  EXPECT_THAT([] { make_env("Hopper-v4", EnvOptions().set("frame_skip", 2.5)); },
              ThrowsMessage<tensordict::TypeError>(HasSubstr("option 'frame_skip' is double 2.5")));
}

// ---- Declared task options ----------------------------------------------------------------------

// A user's options struct declaring its task options.
struct CounterTaskOptions {
  TORCH_ARG(int64_t, obs_dim) = 2;
  TORCH_ARG(std::optional<double>, noise);

 public:
  void fields(tensordict::fields::FieldVisitor& v) {
    v("obs_dim", obs_dim_, tensordict::fields::at_least(1), "observation size");
    v("noise", noise_, "unused here; an optional number");
  }
};

void ensure_declared(const std::string& name) {
  if (is_env_registered(name)) return;
  register_env<CounterTaskOptions>(
      name, [](const CounterTaskOptions& task, const EnvOptions& given) {
        return std::make_shared<NoisyCounterEnv>(
            NoisyCounterOptions().batch_size(given.batch_size()).obs_dim(task.obs_dim()));
      });
}

TEST(DeclaredOptionsTest, MakeEnvReadsTheDeclaredOptionsAndRefusesOthers) {
  ensure_declared("test/Declared");
  EXPECT_EQ(env_option_names("test/Declared"), (std::vector<std::string>{"obs_dim", "noise"}));
  auto env = make_env("test/Declared", EnvOptions().batch_size({2}).set("obs_dim", 4));
  EXPECT_EQ(env->observation_spec()->get("observation")->shape(), (Shape{2, 4}));
  EXPECT_EQ(make_env("test/Declared")->observation_spec()->get("observation")->shape(),
            (Shape{2}));  // the declared default
  EXPECT_THAT([] { make_env("test/Declared", EnvOptions().set("obs_dm", 4)); },
              ThrowsMessage<tensordict::KeyError>(HasSubstr("test/Declared: unknown option "
                                                            "'obs_dm'")));
  EXPECT_THAT([] { make_env("test/Declared", EnvOptions().set("obs_dim", "four")); },
              ThrowsMessage<tensordict::TypeError>(HasSubstr("option 'obs_dim' is string")));
}

TEST(DeclaredOptionsTest, DeclarationRoundTripsThroughEnvOptions) {
  ensure_declared("test/Declared");
  ensure_registered("test/Counter");
  EXPECT_EQ(env_options_declaration("test/Counter"), nullptr);  // names only
  auto declared = env_options_declaration("test/Declared");
  ASSERT_NE(declared, nullptr);
  EnvOptions written;
  write_task_options(*declared, written);
  EXPECT_EQ(written.get_int("obs_dim", 0), 2);
  EXPECT_FALSE(written.contains("noise"));  // unset optional: left out
  DeclaredOptions<CounterTaskOptions> read;
  read_task_options("test/Declared", EnvOptions().set("obs_dim", 7).set("noise", 0.5), read);
  EXPECT_EQ(read.options.obs_dim(), 7);
  EXPECT_EQ(read.options.noise(), std::optional<double>(0.5));
  EXPECT_THAT([] { env_options_declaration("test/Nope"); },
              ThrowsMessage<tensordict::KeyError>(HasSubstr("env_options_declaration")));
}

// Task options are scalars: a declaration with a list is refused when it is registered.
struct ListTaskOptions {
  std::vector<int64_t> sizes;
  void fields(tensordict::fields::FieldVisitor& v) { v("sizes", sizes, "a list"); }
};

TEST(DeclaredOptionsTest, ANonScalarTaskOptionIsRefusedAtRegistration) {
  EXPECT_THAT(
      [] {
        register_env<ListTaskOptions>("test/ListOptions",
                                      [](const ListTaskOptions&, const EnvOptions& given) {
                                        return make_env("test/Counter", given);
                                      });
      },
      ThrowsMessage<tensordict::ValueError>(
          HasSubstr("register_env('test/ListOptions'): task option 'sizes' is a list")));
  EXPECT_FALSE(is_env_registered("test/ListOptions"));
}

TEST(BuiltinEnvsTest, EveryBuiltinTaskDeclaresTheOptionsItAccepts) {
  register_builtin_envs();
  for (const std::string name : {"CartPole-v1", "Pendulum-v1", "HalfCheetah-v4"}) {
    SCOPED_TRACE(name);
    const auto options = env_option_names(name);
    EXPECT_THAT(options, Contains("max_episode_steps"));
    // Every declared option is one the factory accepts.
    for (const auto& option : options) {
      EnvOptions with_option;
      if (option == "model_path" || option == "asset_dir") continue;  // paths to real files
      if (option == "book_or_nips") continue;
      if (option == "max_episode_steps" || option == "num_threads" || option == "frame_skip" ||
          option == "render_width" || option == "render_height") {
        with_option.set(option, 5);
      } else if (option == "sutton_barto_reward" || option == "terminate_when_unhealthy" ||
                 option == "mask_velocity" || option == "from_pixels" || option == "pixels_only") {
        with_option.set(option, true);
      } else if (option == "camera") {
        with_option.set(option, std::string("free"));
      } else if (option == "render_backend") {
        with_option.set(option, std::string("osmesa"));
      } else {
        with_option.set(option, 0.5);
      }
      EXPECT_NO_THROW(make_env(name, with_option)) << option;
    }
  }
}

TEST(BuiltinEnvsTest, MisspeltTaskNameSuggestsTheBuiltinOne) {
  register_builtin_envs();
  EXPECT_THAT(
      [] { make_env("Cartpole-v1"); },
      ThrowsMessage<tensordict::KeyError>(HasSubstr("registered (closest first): ['CartPole-v1'")));
}

TEST(BuiltinEnvsTest, BuiltinTasksFeedSerialAndParallelEnvsAlike) {
  register_builtin_envs();
  auto factory = [] { return make_env("Pendulum-v1"); };
  SerialEnv serial(3, factory);
  ParallelEnv parallel(3, factory, ParallelEnvOptions().num_threads(2));
  serial.set_seed(5);
  parallel.set_seed(5);
  auto a = serial.rollout(20);
  auto b = parallel.rollout(20);
  EXPECT_EQ(a.batch_size(), (Shape{3, 20}));
  for (const auto& key : a.keys(true, true)) {
    EXPECT_TRUE(torch::equal(a.get(key), b.get(key))) << key.to_string();
  }
}

}  // namespace
}  // namespace tdrl::envs
