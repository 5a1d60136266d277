#pragma once

/// ClassicControlEnv: the shared machinery of the classic-control tasks (CartPole-v1,
/// Pendulum-v1, MountainCar-v0, MountainCarContinuous-v0, Acrobot-v1): a physical state per
/// sub-env held on the host in double precision, stepped by plain C++ arithmetic, with the
/// Gymnasium time limit (TimeLimit's max_episode_steps) tracked per sub-env.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

#include <tdrl/envs/drawing.h>
#include <tdrl/envs/env_base.h>
#include <tensordict/arg.h>
#include <tensordict/fields.h>

namespace tdrl::envs {

/// The options every classic-control task takes: the CRTP base of CartPoleEnvOptions,
/// PendulumEnvOptions, MountainCarEnvOptions, MountainCarContinuousEnvOptions and
/// AcrobotEnvOptions (a setter returns the task's options, so a chain keeps its type).
/// A task's options give the default of max_episode_steps (Gymnasium's time limit).
template <class Derived>
struct ClassicControlEnvOptions {
  /// The env's batch size (`[]` = one sub-env). Default `[]`.
  TDRL_CRTP_ARG(Derived, std::vector<int64_t>, batch_size);
  /// Where observations, rewards and flags live. Default CPU.
  TDRL_CRTP_ARG(Derived, torch::Device, device) = torch::kCPU;
  /// Steps after which a sub-env is truncated (0 = no limit, >= 0). Default: the task's.
  TDRL_CRTP_ARG(Derived, int64_t, max_episode_steps);
  /// Drop the velocity components from the observation: a partially observed task, which a
  /// policy solves only with memory (a recurrent core, or frame stacking). Default false.
  TDRL_CRTP_ARG(Derived, bool, mask_velocity) = false;
  /// The frames render() draws, and from_pixels. Default: the task's Gymnasium screen size
  /// (600 x 400 for CartPole and MountainCar, 500 x 500 for Pendulum and Acrobot).
  TDRL_CRTP_ARG(Derived, RenderOptions, render);

 public:
  /// max_episode_steps, mask_velocity and the render options (batch_size and device are the
  /// caller's, not task options); each task's options add their own fields after them.
  void fields(tensordict::fields::FieldVisitor& v) {
    v("max_episode_steps", max_episode_steps_, tensordict::fields::at_least(0),
      "steps after which a sub-env is truncated (0: no limit)");
    v("mask_velocity", mask_velocity_,
      "drop the velocities from the observation (partially observed: needs memory)");
    render_.fields(v);
  }

 protected:
  ClassicControlEnvOptions(int64_t default_max_episode_steps, int64_t render_width,
                           int64_t render_height)
      : max_episode_steps_(default_max_episode_steps),
        render_(RenderOptions().width(render_width).height(render_height)) {}
};

/// The base of the classic-control tasks: a natively batched EnvBase whose physical state is
/// `[*batch, state_dim]` doubles on the host (as Gymnasium keeps it in float64), stepped one
/// sub-env after the other in plain C++ (faster than tensor math at every batch size measured,
/// see docs/performance.md). Observations are float32 `[*batch, obs_dim]` under "observation".
///
/// Time limit: each sub-env counts its steps since its last reset; the step that reaches
/// `max_episode_steps()` returns truncated = true (done = true; terminated is whatever the
/// dynamics say, so both may be true on the same step, as with Gymnasium's TimeLimit). A
/// limit of 0 means no time limit. Stepping a done sub-env without resetting it continues
/// its dynamics (its step count keeps growing, truncated stays true).
///
/// Reset: every selected sub-env (all, or those marked in "_reset") draws its initial state
/// from the task's distribution with generator() (one draw of `[k, state_dim]` uniforms in
/// float64 for the k sub-envs reset, in sub-env order), and its step count restarts at 0.
///
/// Rendering: render() draws each sub-env's state with cairo (the task's draw(), Gymnasium's
/// pictures: CartPole's cart and pole, Pendulum's rod, MountainCar's hill, car and flag,
/// Acrobot's links) at the render options' size; with from_pixels those frames are observed
/// under "pixels" (see EnvBase::set_render_options). A build without cairo throws
/// std::runtime_error from render() (and from the constructor with from_pixels).
///
/// State access: `state()` / `set_state()` read and write the physical state directly (for
/// tests, for starting from a chosen state, for model-based planning); see each task for the
/// state's layout.
///
/// Thread safety: as EnvBase (one thread at a time per instance).
class ClassicControlEnv : public EnvBase {
 public:
  /// The shape of a task (given by subclasses to the constructor): sizes, the names and bounds of
  /// its state components (set_state checks them; ±infinity = unbounded) and its initial-state
  /// distribution (uniform in [init_low, init_high] per component; equal bounds give that
  /// constant).
  struct Layout {
    /// Components of one sub-env's state.
    int64_t state_dim = 0;
    /// Components of one sub-env's observation.
    int64_t obs_dim = 0;
    /// One name per state component (used in messages and by state_names()).
    std::vector<std::string> state_names;
    /// Bounds set_state accepts, per component.
    std::vector<double> state_low;
    std::vector<double> state_high;
    /// The initial-state box, per component.
    std::vector<double> init_low;
    std::vector<double> init_high;
    /// The observation components that are velocities (mask_velocity drops them).
    std::vector<int64_t> velocity_obs;
  };

  /// A copy of the physical state: `[*batch, state_dim]` float64 on the CPU.
  torch::Tensor state() const;
  /// Replaces the physical state of every sub-env with `state` (`[*batch, state_dim]`, any
  /// floating dtype, any device; it is copied). Step counts are left as they are; the next
  /// step() starts from this state (the observation a previous reset() returned is stale:
  /// `observation()` gives the one for the new state).
  /// Throws ShapeError for a wrong shape, TypeError for a non-floating dtype, ValueError for a
  /// non-finite value or one outside the task's state bounds (naming the sub-env, the
  /// component and the bounds); nothing changes then.
  void set_state(const torch::Tensor& state);
  /// The observation of the current state: `[*batch, obs_dim]` float32 on device() (without
  /// the velocities under mask_velocity).
  torch::Tensor observation() const;
  /// The steps each sub-env has taken since its last reset: `[*batch]` int64 on the CPU.
  torch::Tensor elapsed_steps() const;
  /// The time limit (0 = none).
  int64_t max_episode_steps() const override { return max_episode_steps_; }
  /// The number of state components.
  int64_t state_dim() const { return layout_.state_dim; }
  /// The number of observation components (without the velocities under mask_velocity).
  int64_t observation_dim() const;
  /// Whether the velocities are dropped from the observation.
  bool mask_velocity() const { return mask_velocity_; }
  /// The names of the state components, e.g. {"x", "x_dot", "theta", "theta_dot"}.
  const std::vector<std::string>& state_names() const { return layout_.state_names; }

 protected:
  /// Checks `max_episode_steps` (>= 0, ValueError otherwise) and the layout, and sizes the
  /// state to the batch. Subclasses set their specs and fill the state with a first reset
  /// draw (`reset_all()`), so that `state()` is defined before the first reset().
  ClassicControlEnv(std::string name, const EnvBaseOptions& options, int64_t max_episode_steps,
                    Layout layout, bool mask_velocity = false, RenderOptions render = {});
  /// The same, from a task's options (batch_size, device, max_episode_steps, mask_velocity,
  /// render).
  template <class Options>
  ClassicControlEnv(std::string name, const ClassicControlEnvOptions<Options>& options,
                    Layout layout)
      : ClassicControlEnv(
            std::move(name),
            EnvBaseOptions().batch_size(options.batch_size()).device(options.device()),
            options.max_episode_steps(), std::move(layout), options.mask_velocity(),
            options.render()) {}

  /// Sets the observation spec from the task's full one (`{"observation": Unbounded or
  /// Bounded [*batch, obs_dim]}`), without the velocity components under mask_velocity (and
  /// with the frames under from_pixels: EnvBase::set_render_options).
  void set_task_observation_spec(const specs::CompositePtr& full);

  /// The picture of one sub-env's state (`state_dim()` doubles), laid out on the task's
  /// Gymnasium screen (its width x height units, y pointing down); render() stretches it over
  /// the render size.
  virtual drawing::Drawing draw(const double* state) const = 0;
  /// Draws every sub-env with draw(): `[*batch, H, W, 3]` uint8.
  torch::Tensor render_impl() override;

  /// Steps every sub-env once: `action` is the checked action on the CPU, contiguous, of the
  /// action spec's dtype and shape. Updates `states()` in place and writes one reward and one
  /// terminated flag per sub-env. `terminated_before()` still holds the flags from before
  /// this step.
  virtual void advance(const torch::Tensor& action, float* reward, bool* terminated) = 0;
  /// Writes the observations of `count` consecutive states (`state_dim` doubles each) into
  /// `obs` (`obs_dim` floats each).
  virtual void observe(const double* states, int64_t count, float* obs) const = 0;

  /// The state of sub-env i starts at `states().data() + i * state_dim()`.
  std::vector<double>& states() { return state_; }
  const std::vector<double>& states() const { return state_; }
  /// Whether each sub-env has terminated since its last reset (1) or not (0).
  const std::vector<uint8_t>& terminated_before() const { return terminated_before_; }
  /// The number of sub-envs (the product of batch_size(), 1 for `[]`).
  int64_t num_envs() const { return num_envs_; }
  /// Redraws every sub-env's initial state and clears the step counts.
  void reset_all();
  /// `name() + "(batch_size=..., device=..., max_episode_steps=..."` for subclasses'
  /// to_string, which append their constants and ")".
  std::string repr_prefix() const;

  TensorDict reset_impl(const TensorDict& tensordict) final;
  TensorDict step_impl(const TensorDict& tensordict) final;
  /// "state" (`[*batch, state_dim]` float64), "elapsed_steps" (`[*batch]` int64) and
  /// "terminated" (`[*batch]` bool: terminated since the last reset).
  bool save_state(TensorDict& state) const override;
  void load_state(const TensorDict& state) override;

 private:
  // Redraws the initial state of the sub-envs whose mask entry is set (all when null).
  void reset_selected(const bool* mask);
  // A new CPU observation tensor [*batch, obs_dim] of the current state.
  torch::Tensor observe_all() const;
  std::vector<int64_t> with_trailing(int64_t dim) const;

  Layout layout_;
  bool mask_velocity_ = false;
  // The observation components kept (all but the velocities under mask_velocity).
  torch::Tensor kept_obs_;
  int64_t max_episode_steps_;
  int64_t num_envs_;
  std::vector<double> state_;
  std::vector<int64_t> elapsed_;
  std::vector<uint8_t> terminated_before_;
};

}  // namespace tdrl::envs
