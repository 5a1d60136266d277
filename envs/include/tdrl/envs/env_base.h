#pragma once

/// EnvBase: the abstract environment (TorchRL's EnvBase), and step_mdp.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <torch/arg.h>
#include <torch/types.h>

#include <tdrl/specs/composite.h>
#include <tdrl/specs/keys.h>
#include <tdrl/specs/tensor_spec.h>
#include <tensordict/fields.h>
#include <tensordict/nested_key.h>
#include <tensordict/tensor_dict.h>

namespace tdrl::envs {

using tensordict::NestedKey;
using tensordict::TensorDict;

/// A policy for rollout(): reads the current TensorDict and writes the action into it (and
/// returns it). A TensorDictModule holder converts: `[&](TensorDict td) { return actor(td); }`.
using Policy = std::function<TensorDict(TensorDict)>;

/// Options of EnvBase (given by subclasses to the constructor).
/// Example: `EnvBaseOptions().batch_size({8})`
struct EnvBaseOptions {
  /// The env's batch size: a natively batched env steps `batch_size` instances at once.
  /// Default `[]` (one instance).
  TORCH_ARG(std::vector<int64_t>, batch_size);
  /// Where the env's outputs live (observations, rewards, flags). Default CPU.
  TORCH_ARG(torch::Device, device) = torch::kCPU;
};

/// How an env that draws renders, and whether it observes through its frames: one struct
/// carried by the options of every env that draws (the classic-control and MuJoCo tasks), its
/// fields declared once here for the C++ setters and the config alike.
/// Example: `CartPoleEnvOptions().render(RenderOptions().width(64).height(64).from_pixels(true))`
struct RenderOptions {
  /// Frame width in pixels, in [1, 8192]. Default: the task's (600 for CartPole, 480 for
  /// MuJoCo).
  TORCH_ARG(int64_t, width) = 480;
  /// Frame height in pixels, in [1, 8192]. Default: the task's.
  TORCH_ARG(int64_t, height) = 480;
  /// Write the frames under "pixels" on reset and step (EnvBase::set_render_options).
  /// Default false.
  TORCH_ARG(bool, from_pixels) = false;
  /// With from_pixels, drop the other observation entries (the policy sees only the frames).
  /// Default true.
  TORCH_ARG(bool, pixels_only) = true;

 public:
  void fields(tensordict::fields::FieldVisitor& v) {
    v("render_width", width_, tensordict::fields::in_range(1, 8192), "frame width in pixels");
    v("render_height", height_, tensordict::fields::in_range(1, 8192), "frame height in pixels");
    v("from_pixels", from_pixels_, "observe the rendered frames under 'pixels'");
    v("pixels_only", pixels_only_,
      "with from_pixels, drop the other observation entries (the state)");
  }
};

/// Prints `render_width=600, render_height=400, from_pixels=false, pixels_only=true` (the
/// fields, as the tasks' options print them among theirs).
std::ostream& operator<<(std::ostream& os, const RenderOptions& options);

/// Options of rollout().
/// Example: `RolloutOptions().break_when_any_done(false)`
struct RolloutOptions {
  /// Reset before the first step. When false, `tensordict` must be given. Default true.
  TORCH_ARG(bool, auto_reset) = true;
  /// Stop after the first step where any sub-env is done. When false, done sub-envs are
  /// reset (step_and_maybe_reset) and the rollout runs all max_steps. Default true.
  TORCH_ARG(bool, break_when_any_done) = true;
  /// The initial TensorDict (a root as reset() returns it). Default none.
  TORCH_ARG(std::optional<TensorDict>, tensordict);
};

/// Options of step_mdp (TorchRL's step_mdp keyword arguments).
struct StepMdpOptions {
  /// Keep the root keys that are not under "next" (other than action/reward). Default true.
  TORCH_ARG(bool, keep_other) = true;
  /// Drop the action from the new root. Default true.
  TORCH_ARG(bool, exclude_action) = true;
  /// Drop the reward from the new root. Default true.
  TORCH_ARG(bool, exclude_reward) = true;
  /// Drop done/terminated/truncated from the new root. Default false.
  TORCH_ARG(bool, exclude_done) = false;
  /// The action key (excluded with exclude_action). Default "action".
  TORCH_ARG(NestedKey, action_key){specs::kAction};
  /// The reward key (excluded with exclude_reward). Default "reward".
  TORCH_ARG(NestedKey, reward_key){specs::kReward};
};

/// The root of the next step: the entries of `td["next"]` (a shallow copy: tensors are
/// aliased) plus, with keep_other, the root entries that "next" does not hold, minus the
/// action and reward as the options say. `td` is not modified. Throws KeyError when `td` has
/// no "next" entry.
TensorDict step_mdp(const TensorDict& td, const StepMdpOptions& options = {});

/// The base of every environment (TorchRL's EnvBase). Subclasses set their specs in the
/// constructor (set_observation_spec, set_action_spec, set_reward_spec; done/terminated/
/// truncated specs are added by default) and implement the hooks reset_impl and step_impl;
/// the public side checks inputs, fills defaults and nests outputs.
///
/// Batching: a natively batched env has `batch_size() == [N, ...]`; every spec's shape starts
/// with it (checked when a spec is set), every TensorDict in and out has that batch size.
///
/// Keys (docs/keys.md): reset() writes the observation keys and done/terminated/truncated
/// (false after a reset); step() reads the action (and the state_spec keys) and writes
/// ("next", obs...), ("next", "reward"), ("next", "done"|"terminated"|"truncated"), with
/// done = terminated OR truncated.
///
/// Determinism: all randomness of an env comes from its generator() (seeded by set_seed), so
/// the same seed gives the same trajectory bit for bit.
///
/// Thread safety: one env instance is used by one thread at a time; distinct instances are
/// independent.
class EnvBase {
 public:
  virtual ~EnvBase() = default;
  EnvBase(const EnvBase&) = delete;
  EnvBase& operator=(const EnvBase&) = delete;

  /// The env's name as printed and used in errors ("CartPole-v1").
  const std::string& name() const { return name_; }
  const std::vector<int64_t>& batch_size() const { return batch_size_; }
  torch::Device device() const { return device_; }

  // ---- Specs (shapes include the batch dims) --------------------------------------------------
  /// The observation entries written by reset() and under "next" by step().
  const specs::CompositePtr& observation_spec() const { return observation_spec_; }
  /// The action leaf spec.
  const specs::TensorSpecPtr& action_spec() const { return action_spec_; }
  /// The reward leaf spec (`[*batch, 1]` by default).
  const specs::TensorSpecPtr& reward_spec() const { return reward_spec_; }
  /// The done leaf spec (`[*batch, 1]`, bool).
  specs::TensorSpecPtr done_spec() const;
  /// Extra inputs read by step() besides the action (e.g. a goal); empty by default.
  const specs::CompositePtr& state_spec() const { return state_spec_; }
  /// `{action_key: action_spec}`.
  specs::CompositePtr full_action_spec() const;
  /// `{reward_key: reward_spec}`.
  specs::CompositePtr full_reward_spec() const;
  /// `{done, terminated, truncated}` specs.
  const specs::CompositePtr& full_done_spec() const { return done_spec_; }
  /// The same as observation_spec() (TorchRL's name for the composite).
  const specs::CompositePtr& full_observation_spec() const { return observation_spec_; }
  /// The same as state_spec().
  const specs::CompositePtr& full_state_spec() const { return state_spec_; }
  const NestedKey& action_key() const { return action_key_; }
  const NestedKey& reward_key() const { return reward_key_; }

  // ---- Running --------------------------------------------------------------------------------
  /// Resets and returns the root TensorDict: observations and done/terminated/truncated
  /// (false). With `tensordict` given, writes into it (and returns it); a bool `"_reset"`
  /// entry `[*batch, 1]` (or `[*batch]`) in it resets only the selected sub-envs, the others
  /// keeping their current state and observation; "_reset" is removed afterwards.
  /// Throws ShapeError for a "_reset" mask of the wrong shape and whatever the env's checks
  /// throw (e.g. KeyError when the env's reset_impl omits a spec'd observation).
  TensorDict reset(std::optional<TensorDict> tensordict = std::nullopt);
  /// What reset(input) writes, alone (a new TensorDict; `input` is read, never written): the
  /// reset's outputs with the done flags of sub-envs not reset kept from `input`. What a
  /// TransformedEnv asks of the env it wraps, so that transforms below see the caller's
  /// entries (their partial resets keep the values of the sub-envs not reset) while the ones
  /// above see only what the reset wrote. Throws as reset().
  TensorDict reset_output(const TensorDict& input);
  /// Steps with the action in `tensordict` and writes ("next", ...) into it; returns it.
  /// Throws KeyError when the action (or a state_spec key) is missing (naming the key and the
  /// available keys), ShapeError/TypeError when it does not match the action spec (naming
  /// expected and got), ValueError for a non-finite floating action; nothing is written then.
  TensorDict step(TensorDict tensordict);
  /// step(), then the next root: `{stepped, next_root}` where next_root = step_mdp(stepped),
  /// with the done sub-envs reset (only those: partial reset through "_reset").
  std::pair<TensorDict, TensorDict> step_and_maybe_reset(TensorDict tensordict);
  /// Runs up to `max_steps` steps with `policy` (random actions when null) and returns the
  /// steps stacked along a new last batch dim: batch `[*batch_size, T]`, each step holding
  /// the root entries, the action and "next". See RolloutOptions. Throws ValueError for
  /// max_steps < 1 or auto_reset(false) without a tensordict.
  TensorDict rollout(int64_t max_steps, const Policy& policy = nullptr,
                     const RolloutOptions& options = {});
  /// Writes a random action from the action spec into `tensordict` (a new one of batch
  /// batch_size() when absent) and returns it. Uses generator().
  TensorDict rand_action(std::optional<TensorDict> tensordict = std::nullopt);
  /// A TensorDict of zeros with every spec'd entry (root observations and flags, action,
  /// "next" observations, reward and flags), for preallocation.
  TensorDict fake_tensordict() const;

  /// Seeds the env's randomness; returns the seed for the next env (seed + the number of
  /// seeds this env consumed, 1 unless a subclass says otherwise).
  uint64_t set_seed(uint64_t seed);

  /// The env's generator (CPU); every random draw of the env uses it.
  torch::Generator& generator() { return generator_; }

  // ---- Checkpointing --------------------------------------------------------------------------
  /// Everything the env carries from one call to the next, as copies: the generator's state
  /// ("rng"), the subclass's entries (save_state: the physical state and step counts of the
  /// built-in envs, a batched env's sub-envs, a TransformedEnv's base env and transforms) and
  /// "resumes_episodes" (bool scalar: whether those entries are complete). When they are,
  /// the reset()/step() calls that follow load_state_dict() on an env built the same way give,
  /// bit for bit, what this env's next calls would have given: a checkpointed run resumes
  /// mid-episode as if it had never stopped. When they are not (an env that does not
  /// implement save_state), only the generator is restored and episodes must restart from a
  /// reset, which is what the collectors then do.
  TensorDict state_dict() const;
  /// Restores what state_dict() returned. Throws KeyError naming a missing entry,
  /// ShapeError/TypeError naming the entry with the expected and actual shape/dtype, and
  /// ValueError for a state saved from a different model; the env is left as it was then.
  void load_state_dict(const TensorDict& state);

  /// The steps after which an episode is truncated; 0 when there is no limit or the env does
  /// not say (the default). The built-in tasks return theirs; a TransformedEnv or a batched env
  /// returns its base env's or sub-envs'.
  virtual int64_t max_episode_steps() const { return 0; }

  // ---- Rendering ------------------------------------------------------------------------------
  /// A picture of every sub-env's current state: uint8 `[*batch_size, H, W, 3]` RGB on the CPU
  /// (H x W: the env's render size, an option of the envs that draw). The same state gives the
  /// same picture. Throws Error naming the env for an env that does not draw (render_impl not
  /// overridden), TypeError/ShapeError when render_impl returns another dtype or shape.
  torch::Tensor render();
  /// Whether reset() and step() write render() under "pixels" (the envs' from_pixels option).
  bool from_pixels() const { return render_ && render_->from_pixels(); }
  /// How the env draws (set by the envs that do), or nothing.
  const std::optional<RenderOptions>& render_options() const { return render_; }

  /// Prints `CartPole-v1(batch_size=[8], device=cpu)` and the specs.
  virtual std::string to_string() const;

 protected:
  EnvBase(std::string name, const EnvBaseOptions& options);

  /// Sets the observation spec; its shape must equal batch_size() (ShapeError otherwise).
  void set_observation_spec(specs::CompositePtr spec);
  /// Sets the action spec (under `key`); its shape must start with batch_size().
  void set_action_spec(specs::TensorSpecPtr spec, NestedKey key = NestedKey(specs::kAction));
  /// Sets the reward spec (under `key`); its shape must start with batch_size().
  void set_reward_spec(specs::TensorSpecPtr spec, NestedKey key = NestedKey(specs::kReward));
  /// Replaces the done spec (default: done/terminated/truncated, bool `[*batch, 1]`).
  void set_done_spec(specs::CompositePtr spec);
  /// Sets the state spec (extra step inputs).
  void set_state_spec(specs::CompositePtr spec);
  /// Declares how render_impl draws (its frames' size, which render() then checks) and, with
  /// from_pixels, makes reset() and step() write render() under "pixels" (and ("next",
  /// "pixels")): the observation spec, set before or after, gets a Bounded uint8
  /// `[*batch, height, width, 3]` entry in [0, 255], and with pixels_only loses its other
  /// entries, which the outputs then lose too (the state is hidden from the policy). Called
  /// once, by the constructor of an env that draws. Throws ValueError naming render_width /
  /// render_height for a size outside [1, 8192], or when called twice.
  void set_render_options(const RenderOptions& render);

  /// Draws every sub-env's current state: uint8 `[*batch_size, H, W, 3]` on the CPU (see
  /// render()). Default: throws Error (the env does not draw).
  virtual torch::Tensor render_impl();

  /// Resets: `tensordict` has batch batch_size() and may hold a "_reset" mask `[*batch, 1]`
  /// (absent = reset all). Returns a TensorDict of batch batch_size() with every observation
  /// entry for every sub-env (the current one for sub-envs not reset) and optionally the
  /// flags (missing flags are filled with false).
  virtual TensorDict reset_impl(const TensorDict& tensordict) = 0;
  /// Steps: `tensordict` holds a checked action (and state keys). Returns a new TensorDict of
  /// batch batch_size() with the next observations, the reward, terminated and optionally
  /// truncated (default false) and done (default terminated | truncated).
  virtual TensorDict step_impl(const TensorDict& tensordict) = 0;
  /// Seeds the env's randomness; the default seeds generator(). Returns the number of seeds
  /// consumed (default 1).
  virtual uint64_t set_seed_impl(uint64_t seed);
  /// Adds the subclass's state to `state` (see state_dict()): whatever a later reset() or
  /// step() reads besides its inputs and generator(). Returns true when that is all of it, so
  /// that an episode can continue from the loaded state. Default: writes nothing and returns
  /// false (a loaded env must be reset).
  virtual bool save_state(TensorDict& state) const { return false; }
  /// Reads back what save_state() wrote, throwing as load_state_dict() says. It may throw
  /// after changing part of the env: load_state_dict() then loads the state from before.
  virtual void load_state(const TensorDict& state) {}
  /// The entry `key` of a state being loaded, checked: KeyError when it is missing, ShapeError
  /// / TypeError when its shape / dtype differs from `shape` / `dtype` (all naming `key`).
  /// For load_state() implementations.
  torch::Tensor state_entry(const TensorDict& state, const NestedKey& key,
                            const std::vector<int64_t>& shape, torch::Dtype dtype) const;

 private:
  // Fills missing flags, checks done = terminated | truncated, moves to device().
  TensorDict complete_flags(TensorDict td, const std::string& where);
  void check_spec_batch(const std::string& what, const std::vector<int64_t>& shape) const;
  void check_action(const TensorDict& td) const;

  std::string name_;
  std::optional<RenderOptions> render_;
  // Under from_pixels with pixels_only: the observation entries the outputs lose.
  std::vector<NestedKey> pixels_replace_;
  std::vector<int64_t> batch_size_;
  torch::Device device_;
  torch::Generator generator_;
  specs::CompositePtr observation_spec_;
  specs::TensorSpecPtr action_spec_;
  specs::TensorSpecPtr reward_spec_;
  specs::CompositePtr done_spec_;
  specs::CompositePtr state_spec_;
  NestedKey action_key_{specs::kAction};
  NestedKey reward_key_{specs::kReward};
};

/// Prints env.to_string().
std::ostream& operator<<(std::ostream& stream, const EnvBase& env);

/// Runs a short rollout (3 steps, random actions, seed 0) and checks every output against
/// the env's specs: each observation (root and "next"), reward and flag present, with the
/// spec's shape and dtype and inside it; done == terminated | truncated; the rollout's batch
/// size. Throws ValueError listing every mismatch (key path, expected, got) when any fails.
void check_env_specs(EnvBase& env, int64_t steps = 3);

}  // namespace tdrl::envs
