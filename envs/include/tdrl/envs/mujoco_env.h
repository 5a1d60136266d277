#pragma once

/// MujocoEnv: a natively batched environment over any MuJoCo (MJCF) model, the base of the
/// MuJoCo tasks (mujoco_tasks.h). MuJoCo's own headers stay in the sources: this header only
/// names MuJoCo's C struct tags.

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <torch/arg.h>
#include <torch/types.h>

#include <tdrl/envs/env_base.h>
#include <tensordict/fields.h>

struct mjModel_;
struct mjData_;

namespace tdrl::envs {

/// Options of MujocoEnv and of every MuJoCo task. Unset optional fields take the task's
/// default (for the generic MujocoEnv: frame_skip 1, no reset noise, no time limit).
/// Example: `MujocoEnvOptions().batch_size({16}).num_threads(2).max_episode_steps(200)`
struct MujocoEnvOptions {
  /// The MJCF file to load. Required by the generic MujocoEnv; a task loads
  /// `<asset_dir>/<Task>.xml` unless this is given (a replacement model must have the task's
  /// dimensions, checked at construction).
  TORCH_ARG(std::string, model_path);
  /// Where the tasks' models live. Default: default_mujoco_asset_dir().
  TORCH_ARG(std::string, asset_dir);
  /// The env's batch size: the number of simulations stepped at once is its product
  /// (`[]`: one simulation, observations `[obs_dim]`). Default `[]`.
  TORCH_ARG(std::vector<int64_t>, batch_size);
  /// Threads stepping the simulations (the caller's thread included), >= 1; never more than
  /// the number of simulations are used. Default 1.
  TORCH_ARG(int64_t, num_threads) = 1;
  /// MuJoCo steps (of the model's timestep) per env step, >= 1. Default: the task's.
  TORCH_ARG(std::optional<int64_t>, frame_skip);
  /// Half-width (or standard deviation, as the task says) of the noise added to the initial
  /// qpos and qvel on reset, >= 0. Default: the task's.
  TORCH_ARG(std::optional<double>, reset_noise_scale);
  /// Steps after which an episode is truncated (truncated = done = true); 0 = no limit.
  /// Default: the task's (1000 for most tasks, 50 for Reacher, 0 for the generic env).
  TORCH_ARG(std::optional<int64_t>, max_episode_steps);
  /// Whether an unhealthy state terminates the episode (Hopper, Walker2d, Ant, Humanoid).
  /// When false, the healthy reward is paid every step and episodes only end by truncation.
  /// Default true.
  TORCH_ARG(bool, terminate_when_unhealthy) = true;
  /// Drop the velocity components from the observation (the task's
  /// MujocoTaskConfig::velocity_obs), so that only a policy with memory sees the velocities:
  /// a partially observed task (InvertedPendulum keeps the cart position and the pole angle).
  /// A task whose observation declares no velocities throws ValueError. Default false.
  TORCH_ARG(bool, mask_velocity) = false;
  /// Where the outputs live. Default CPU (simulation always runs on the CPU).
  TORCH_ARG(torch::Device, device) = torch::kCPU;
  /// The frames render() draws (MuJoCo's renderer, offscreen) and from_pixels. Default
  /// 480 x 480, as Gymnasium's MuJoCo envs.
  TORCH_ARG(RenderOptions, render);
  /// The camera of the frames: "track" (looks at body 1, the root, from 20 degrees above at
  /// Gymnasium's distances: 4 m for HalfCheetah, Ant and Walker2d, 3 m for Hopper), "free" (the
  /// whole model from MuJoCo's default free camera) or the name of a camera of the model. Default
  /// "track".
  TORCH_ARG(std::string, camera) = "track";
  /// The OpenGL context of the frames: "egl" (a GPU's driver, or Mesa's software device),
  /// "osmesa" (Mesa's software rasteriser) or "auto" (EGL on a GPU when a driver offers one,
  /// else OSMesa). One backend per process. Default "auto".
  TORCH_ARG(std::string, render_backend) = "auto";

 public:
  /// The task options (batch_size and device are the caller's).
  void fields(tensordict::fields::FieldVisitor& v) {
    namespace tf = tensordict::fields;
    v("model_path", model_path_, "the MJCF file to load (empty: the task's own model)");
    v("asset_dir", asset_dir_, "where the tasks' models live (empty: the installed ones)");
    v("num_threads", num_threads_, tf::at_least(1), "threads stepping the simulations");
    v("frame_skip", frame_skip_, tf::at_least(1), "MuJoCo steps per env step (null: the task's)");
    v("reset_noise_scale", reset_noise_scale_, tf::at_least(0),
      "scale of the noise added to the initial qpos and qvel (null: the task's)");
    v("max_episode_steps", max_episode_steps_, tf::at_least(0),
      "steps after which an episode is truncated, 0: no limit (null: the task's)");
    v("terminate_when_unhealthy", terminate_when_unhealthy_,
      "an unhealthy state ends the episode (Hopper, Walker2d, Ant, Humanoid)");
    v("mask_velocity", mask_velocity_,
      "drop the velocities from the observation (a partially observed task)");
    render_.fields(v);
    v("camera", camera_, "camera of the frames: track, free or a camera of the model");
    v("render_backend", render_backend_, tf::one_of({"auto", "egl", "osmesa"}),
      "OpenGL context of the frames: auto (EGL on a GPU, else OSMesa), egl or osmesa");
  }
};

/// Prints `MujocoEnvOptions(model_path=..., batch_size=[16], num_threads=2, ...)`, unset
/// optional fields as `default`.
std::ostream& operator<<(std::ostream& stream, const MujocoEnvOptions& options);

/// A read-only view of one simulation (one model, one data) handed to MujocoEnv's hooks.
/// Arrays are MuJoCo's, row-major, valid for the duration of the hook call. Cheap to copy.
class MujocoView {
 public:
  /// A view of `data` (a simulation of `model`); both must outlive the view.
  MujocoView(const mjModel_* model, const mjData_* data) : model_(model), data_(data) {}

  /// Position coordinates (qpos size).
  int nq() const;
  /// Degrees of freedom (qvel size).
  int nv() const;
  /// Actuators (ctrl size, the action size).
  int nu() const;
  /// Bodies, the world (body 0) included.
  int nbody() const;
  /// Sites.
  int nsite() const;
  /// The model's timestep (one MuJoCo step, seconds).
  double timestep() const;
  /// Simulation time (seconds).
  double time() const;
  /// Joint positions `[nq]`.
  const double* qpos() const;
  /// Joint velocities `[nv]`.
  const double* qvel() const;
  /// The controls applied `[nu]` (the action, unclamped).
  const double* ctrl() const;
  /// Body frame positions `[nbody, 3]` (body 0 is the world).
  const double* xpos() const;
  /// Body centre-of-mass positions `[nbody, 3]`.
  const double* xipos() const;
  /// Site positions `[nsite, 3]`.
  const double* site_xpos() const;
  /// Body masses `[nbody]`.
  const double* body_mass() const;
  /// Com-based body inertias and masses `[nbody, 10]`.
  const double* cinert() const;
  /// Com-based body velocities `[nbody, 6]`.
  const double* cvel() const;
  /// Actuator forces in joint space `[nv]`.
  const double* qfrc_actuator() const;
  /// Constraint forces in joint space `[nv]`.
  const double* qfrc_constraint() const;
  /// Com-based external (contact) forces on bodies `[nbody, 6]`; computed only when the env
  /// runs MuJoCo's post-constraint pass (MujocoTaskConfig::post_constraint).
  const double* cfrc_ext() const;
  /// MuJoCo's model and data, for hooks that include <mujoco/mujoco.h> themselves.
  const mjModel_* model() const { return model_; }
  /// See model().
  const mjData_* data() const { return data_; }

 private:
  const mjModel_* model_;
  const mjData_* data_;
};

/// What a task's after_step hook computes for one simulation.
struct MujocoStepOutcome {
  /// The step's reward (a non-finite reward counts as an instability).
  double reward = 0.0;
  /// The episode reached a terminal state.
  bool terminated = false;
};

/// Values a task's before_step hook saves for its after_step hook (e.g. the x position
/// before the step), per simulation.
using MujocoMemo = std::array<double, 8>;

/// What a MuJoCo task fixes when it constructs its MujocoEnv base.
struct MujocoTaskConfig {
  /// The model file name under the asset dir (e.g. "HalfCheetah.xml").
  std::string model_file;
  /// The observation's size; -1 means nq + nv (the default observation).
  int64_t observation_dim = -1;
  /// Defaults of the options of the same names (MujocoEnvOptions overrides them).
  int64_t frame_skip = 1;
  double reset_noise_scale = 0.0;
  int64_t max_episode_steps = 0;
  /// Run mj_rnePostConstraint after stepping, so cfrc_ext holds the contact forces.
  bool post_constraint = false;
  /// The observation components that are velocities, which MujocoEnvOptions::mask_velocity
  /// drops. Empty: qvel's with the default observation (observation_dim -1), none otherwise.
  std::vector<int64_t> velocity_obs;
};

/// A MuJoCo environment over any MJCF model (TorchRL's MujocoEnv / Gymnasium's MujocoEnv),
/// natively batched: one shared mjModel and one mjData per simulation, stepped on a pool of
/// `num_threads` threads (the caller included; created once, never per step).
///
/// Keys and shapes (B = batch_size()):
/// - reset() writes "observation" `[*B, obs_dim]` float32 (default obs: qpos then qvel).
/// - step() reads "action" `[*B, nu]` float32 (Bounded by the actuators' ctrlrange when every
///   actuator is ctrllimited, Unbounded otherwise), written to ctrl, then runs frame_skip
///   MuJoCo steps and writes ("next", "observation"), ("next", "reward") `[*B, 1]` float32 and
///   ("next", "terminated" | "truncated" | "done") `[*B, 1]` bool.
///
/// Episodes: truncated after max_episode_steps steps (counted per simulation since its last
/// reset). Instability: when MuJoCo raises a warning during a step (bad qpos/qvel/qacc/ctrl,
/// full contact or constraint buffers) or the state, observation or reward is not finite, that
/// simulation's episode ends with truncated = done = true, reward 0 and the observation of its
/// reset (model default) state, so no output is ever NaN; the first instability of an env is
/// logged to stderr, all are counted by instability_count().
///
/// Rendering: render() draws each simulation offscreen with MuJoCo's renderer (no display
/// needed) over EGL or OSMesa (render_backend), `[*B, H, W, 3]` uint8; with from_pixels those
/// frames are observed under "pixels" (EnvBase::set_render_options).
///
/// Reset: every reset simulation restarts from the model's default state plus noise drawn
/// from generator() (by sample_reset_state); a "_reset" mask resets only the selected ones.
/// Determinism: the same seed gives the same rollout bit for bit, for any num_threads.
///
/// Extending: a task subclasses MujocoEnv, passes a MujocoTaskConfig to the protected
/// constructor and overrides the hooks write_observation, before_step, after_step and
/// sample_reset_state. The first three run on the pool's threads, concurrently for different
/// simulations: they must only read the view and write their own outputs.
///
/// Throws (constructor): ValueError when the model file is missing or MuJoCo cannot load it
/// (with MuJoCo's message), or for invalid options (naming the option and the value).
/// Thread safety: as EnvBase (one thread at a time uses an env).
/// Example:
/// ```
/// MujocoEnv env(MujocoEnvOptions().model_path("arm.xml").batch_size({8}).frame_skip(4));
/// env.set_seed(0);
/// TensorDict rollout = env.rollout(100);  // batch [8, T]
/// ```
class MujocoEnv : public EnvBase {
 public:
  /// A generic env over `options.model_path()` named "MujocoEnv": default observation,
  /// reward 0, never terminated.
  explicit MujocoEnv(const MujocoEnvOptions& options);
  ~MujocoEnv() override;

  /// The number of simulations (the product of batch_size(); 1 for `[]`).
  int64_t num_envs() const;
  /// The model's position coordinates, degrees of freedom, actuators (the action size) and
  /// bodies (the world included).
  int64_t nq() const;
  int64_t nv() const;
  int64_t nu() const;
  int64_t nbody() const;
  /// The size of one simulation's observation (without the velocities under mask_velocity).
  int64_t observation_dim() const;
  /// MuJoCo steps per env step.
  int64_t frame_skip() const;
  /// Seconds of simulated time per env step: timestep * frame_skip.
  double dt() const;
  /// 0 when there is no time limit.
  int64_t max_episode_steps() const override;
  /// The scale of the reset noise (the option, or the task's default).
  double reset_noise_scale() const;
  /// The threads stepping the simulations: min(options' num_threads, num_envs()).
  int64_t num_threads() const;
  /// The loaded model file.
  const std::string& model_path() const;
  /// The options the env was built with.
  const MujocoEnvOptions& options() const;

  /// The index of the body / site named `name`. Throws KeyError listing the model's names
  /// (closest first) when there is none.
  int64_t body_id(const std::string& name) const;
  /// See body_id().
  int64_t site_id(const std::string& name) const;

  /// Copies of the simulations' joint positions `[*B, nq]` and velocities `[*B, nv]`,
  /// float64 on the CPU.
  torch::Tensor qpos() const;
  /// See qpos().
  torch::Tensor qvel() const;
  /// Sets every simulation's state (Gymnasium's set_state): `qpos` `[*B, nq]`, `qvel`
  /// `[*B, nv]`, any floating dtype and device, then recomputes the derived quantities
  /// (mj_forward). Episode step counters are kept. Throws ShapeError for a wrong shape,
  /// TypeError for a non-floating dtype, ValueError for a non-finite value; nothing is
  /// changed then.
  void set_state(const torch::Tensor& qpos, const torch::Tensor& qvel);
  /// The observations of the current states `[*B, obs_dim]` float32 (what reset() would
  /// report for simulations it does not reset).
  torch::Tensor current_observation();
  /// How many times a simulation of this env became unstable (see the class comment).
  int64_t instability_count() const;
  /// The OpenGL backend the frames are drawn with ("egl" or "osmesa"); empty before the first
  /// frame.
  std::string render_backend() const;

  /// EnvBase's line plus the model file, frame_skip, dt, max_episode_steps,
  /// reset_noise_scale and num_threads, e.g. `HalfCheetah-v4(batch_size=[2], device=cpu,
  /// model=HalfCheetah.xml, frame_skip=5, dt=0.05, max_episode_steps=1000,
  /// reset_noise_scale=0.1, num_threads=1)`.
  std::string to_string() const override;

 protected:
  /// The base of a task named `name`: loads `options.model_path()` or
  /// `<asset_dir>/<config.model_file>`, options overriding the config's defaults.
  MujocoEnv(std::string name, const MujocoEnvOptions& options, const MujocoTaskConfig& config);

  /// Writes one simulation's whole observation (the velocities included, which mask_velocity
  /// drops after) into `out`, of the config's observation_dim. Default: qpos then qvel. Runs on
  /// pool threads.
  virtual void write_observation(const MujocoView& sim, float* out) const;
  /// Called before the frame_skip steps with the simulation's action `[nu]`; may save values
  /// into `memo` for after_step. Default: nothing. Runs on pool threads.
  virtual void before_step(const MujocoView& sim, const float* action, MujocoMemo& memo) const {}
  /// Called after the frame_skip steps: the reward and whether the state is terminal.
  /// Default: reward 0, not terminated. Runs on pool threads.
  virtual MujocoStepOutcome after_step(const MujocoView& sim, const float* action,
                                       const MujocoMemo& memo) const;
  /// Draws the initial states of `qpos.size(0)` simulations being reset, in place: `qpos`
  /// `[k, nq]` holds the model's default qpos0 and `qvel` `[k, nv]` zeros (float64). Every
  /// draw must use `generator`. Default: adds U(-s, s) to both, s = reset_noise_scale().
  /// Runs on the caller's thread.
  virtual void sample_reset_state(torch::Generator& generator, torch::Tensor& qpos,
                                  torch::Tensor& qvel) const;

  /// Throws ValueError unless the loaded model has these dimensions (a task's check that a
  /// replacement model fits it; -1 skips a dimension).
  void check_model_dims(int64_t nq, int64_t nv, int64_t nu, int64_t nbody = -1) const;

  TensorDict reset_impl(const TensorDict& tensordict) override;
  TensorDict step_impl(const TensorDict& tensordict) override;
  /// "mjdata" (`[*B, bytes]` uint8: each simulation's complete mjData, which only this model
  /// and MuJoCo version can load) and "steps" (`[*B]` int64: the steps since each reset).
  bool save_state(TensorDict& state) const override;
  void load_state(const TensorDict& state) override;
  /// Draws every simulation with MuJoCo's renderer from the options' camera; the GL context is
  /// made on the first frame. Throws Error when none can be made (see render_backend).
  torch::Tensor render_impl() override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The directory of the MuJoCo tasks' models: the TDRL_ENVS_ASSET_DIR environment variable
/// when set, else the source tree's envs/assets when it exists, else the installed copy.
std::string default_mujoco_asset_dir();

/// The number of warnings MuJoCo has raised in this process since it started (any model,
/// any thread), e.g. for tests that must see none.
int64_t mujoco_warning_count();

}  // namespace tdrl::envs
