#pragma once

/// The env registry: env names ("CartPole-v1", "HalfCheetah-v4", ...) to factories, for configs
/// (TorchRL / Gymnasium's `make`).

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <torch/arg.h>
#include <torch/types.h>

#include <tdrl/envs/env_base.h>
#include <tensordict/fields.h>

namespace tdrl::envs {

/// One task-specific option value, as a config gives it.
using EnvOptionValue = std::variant<bool, int64_t, double, std::string>;

/// What make_env passes to a factory: the common settings (batch size, device, seed) and a map
/// of task-specific options by name (e.g. `max_episode_steps`, `frame_skip`), as read from a
/// config.
///
/// Typed getters convert where nothing is lost (an integer option read as double; an integral
/// double read as integer) and throw tensordict::TypeError otherwise, naming the option, the
/// type asked for and the type held. Factories call `check_keys` first so a misspelt option
/// is an error, not silently ignored.
/// Example:
/// `EnvOptions().batch_size({16}).seed(0).set("max_episode_steps", 200)`
struct EnvOptions {
  /// The env's batch size. Default `[]` (one instance).
  TORCH_ARG(std::vector<int64_t>, batch_size);
  /// Where the env's outputs live. Default CPU.
  TORCH_ARG(torch::Device, device) = torch::kCPU;

 public:
  /// When set, make_env seeds the new env with it (env.set_seed). Default none.
  EnvOptions& seed(uint64_t v) {
    seed_ = v;
    return *this;
  }
  /// Sets the task-specific option `key` (replacing any earlier value).
  EnvOptions& set(const std::string& key, EnvOptionValue value);
  /// One overload per kind, so that a literal keeps its type (`2.5` stays a double, `true` a
  /// bool, `"nips"` a string).
  EnvOptions& set(const std::string& key, bool value) {
    return set(key, EnvOptionValue(std::in_place_type<bool>, value));
  }
  EnvOptions& set(const std::string& key, int value) {
    return set(key, EnvOptionValue(std::in_place_type<int64_t>, value));
  }
  EnvOptions& set(const std::string& key, int64_t value) {
    return set(key, EnvOptionValue(std::in_place_type<int64_t>, value));
  }
  EnvOptions& set(const std::string& key, double value) {
    return set(key, EnvOptionValue(std::in_place_type<double>, value));
  }
  EnvOptions& set(const std::string& key, std::string value) {
    return set(key, EnvOptionValue(std::in_place_type<std::string>, std::move(value)));
  }
  EnvOptions& set(const std::string& key, const char* value) {
    return set(key, EnvOptionValue(std::in_place_type<std::string>, value));
  }

  const std::optional<uint64_t>& seed() const { return seed_; }
  /// The task-specific options, sorted by name.
  const std::map<std::string, EnvOptionValue>& options() const { return options_; }
  /// True when the task-specific option `key` is set.
  bool contains(const std::string& key) const { return options_.count(key) > 0; }

  /// The option `key` as a bool, or `default_value` when unset. TypeError for another type.
  bool get_bool(const std::string& key, bool default_value) const;
  /// The option `key` as an integer, or `default_value` when unset. TypeError for a bool, a
  /// string or a double with a fractional part.
  int64_t get_int(const std::string& key, int64_t default_value) const;
  /// The option `key` as a double, or `default_value` when unset. TypeError for a bool or a
  /// string.
  double get_double(const std::string& key, double default_value) const;
  /// The option `key` as a string, or `default_value` when unset. TypeError for another type.
  std::string get_string(const std::string& key, const std::string& default_value) const;

  /// Throws tensordict::KeyError, naming `env_name`, when an option is not in `known`; the
  /// message lists the known options, closest first.
  void check_keys(const std::string& env_name, const std::vector<std::string>& known) const;

  /// EnvBaseOptions with this batch size and device, for a factory's env constructor.
  EnvBaseOptions base_options() const {
    return EnvBaseOptions().batch_size(batch_size_).device(device_);
  }

 private:
  std::optional<uint64_t> seed_;
  std::map<std::string, EnvOptionValue> options_;
};

/// Prints `EnvOptions(batch_size=[16], device=cpu, seed=0, options={max_episode_steps=200})`
/// (`seed=None` when unset; strings quoted, bools as true/false).
std::ostream& operator<<(std::ostream& os, const EnvOptions& options);

/// Builds an env from options. It must honour batch_size and device (make_env checks the
/// batch size) and may read task options; make_env applies the seed.
using RegisteredEnvFactory = std::function<std::shared_ptr<EnvBase>(const EnvOptions&)>;

/// Registers `factory` under `name`, with the names of the task options the factory reads
/// (`option_names`, in the order a listing should show them; leave it empty when the factory
/// reads none or does not say). Throws tensordict::ValueError when `name` is empty, the
/// factory is empty, an option name is empty or repeated, or `name` is already registered
/// (names are never replaced silently). Thread safe.
void register_env(const std::string& name, RegisteredEnvFactory factory,
                  std::vector<std::string> option_names = {});

/// A section holding one task-options struct, visited through its `fields()` (the task options
/// it declares, with their defaults, ranges and docs): what a declared env's task options are to
/// the config layer (`env.options`) and to make_env.
template <class Options>
struct DeclaredOptions : tensordict::fields::Section {
  Options options;
  void fields(tensordict::fields::FieldVisitor& v) override { options.fields(v); }
};

/// Makes a fresh declaration of an env's task options (holding their defaults).
using OptionsDeclaration = std::function<std::shared_ptr<tensordict::fields::Section>()>;

/// Registers `factory` under `name` with declared task options: the option names are the
/// declaration's fields, and the config layer parses, range-checks and documents `env.options`
/// against the declaration. Errors as the overload above, and ValueError for an empty
/// declaration or one whose fields are not scalars (bool, int, float, optional number, string).
void register_env(const std::string& name, RegisteredEnvFactory factory,
                  OptionsDeclaration declaration);

/// Reads the task options set in `given` into the fields of `section` (the others keep their
/// defaults). Throws tensordict::KeyError naming `env_name` for an option that `section` does
/// not declare (the declared ones listed, closest first), and tensordict::TypeError for a value
/// of another kind (EnvOptions' getters).
void read_task_options(const std::string& env_name, const EnvOptions& given,
                       tensordict::fields::Section& section);

/// Sets every field of `section` as a task option of `out` (an unset optional number is left
/// out), for make_env.
void write_task_options(tensordict::fields::Section& section, EnvOptions& out);

/// Registers an env whose task options are `Options`' declared fields (`Options::fields`,
/// tensordict/fields.h): make_env reads the given task options into a default `Options` (the
/// errors of read_task_options) and calls `make(options, given)`, `given` carrying the batch
/// size, device and seed. The config layer then validates and documents `env.options` of this
/// env from the declaration, as for the built-in tasks.
/// Example (excerpt):
/// `register_env<DriftEnvOptions>("Drift-v0", [](const DriftEnvOptions& o, const EnvOptions& e)
///  { return std::make_shared<DriftEnv>(DriftEnvOptions(o).batch_size(e.batch_size())); });`
template <class Options>
void register_env(const std::string& name,
                  std::function<std::shared_ptr<EnvBase>(const Options&, const EnvOptions&)> make) {
  register_env(
      name,
      [name, make](const EnvOptions& given) {
        DeclaredOptions<Options> declared;
        read_task_options(name, given, declared);
        return make(declared.options, given);
      },
      OptionsDeclaration([] { return std::make_shared<DeclaredOptions<Options>>(); }));
}

/// A fresh declaration of the task options of the env registered as `name` (holding its
/// defaults), or null for an env registered with option names only. Throws
/// tensordict::KeyError for an unregistered name. Thread safe.
std::shared_ptr<tensordict::fields::Section> env_options_declaration(const std::string& name);

/// Builds the env registered as `name` with `options`, then seeds it with `options.seed()`
/// when set. Throws tensordict::KeyError for an unknown name, listing the registered names
/// (closest first, with a hint to call register_builtin_envs() when none are registered);
/// tensordict::ValueError when the factory returns null or an env whose batch size differs
/// from `options.batch_size()`; and whatever the factory throws (e.g. KeyError from
/// check_keys for an unknown option). Thread safe (the factory runs outside the registry's
/// lock).
std::shared_ptr<EnvBase> make_env(const std::string& name, const EnvOptions& options = {});

/// The task options declared when `name` was registered (see register_env), in their
/// declared order. Throws tensordict::KeyError for an unregistered name. Thread safe.
std::vector<std::string> env_option_names(const std::string& name);

/// The registered names, sorted. Thread safe.
std::vector<std::string> list_envs();

/// True when `name` is registered. Thread safe.
bool is_env_registered(const std::string& name);

/// Registers the built-in tasks under their Gymnasium names: classic control (CartPole-v1,
/// Pendulum-v1, MountainCar-v0, MountainCarContinuous-v0, Acrobot-v1), whose task options are
/// their Options fields (e.g. `max_episode_steps`, `gravity`), and MuJoCo (InvertedPendulum-v4,
/// InvertedDoublePendulum-v4, Reacher-v4, HalfCheetah-v4, Hopper-v4, Walker2d-v4, Ant-v4,
/// Humanoid-v4), whose task options are `model_path`, `asset_dir`, `num_threads`, `frame_skip`,
/// `reset_noise_scale`, `max_episode_steps` and `terminate_when_unhealthy` (docs/envs.md).
/// Call it once at start-up (libraries never register behind the user's back); calling it again
/// does nothing. Throws ValueError, registering nothing, when one of these names was already
/// registered by someone else.
void register_builtin_envs();

}  // namespace tdrl::envs
