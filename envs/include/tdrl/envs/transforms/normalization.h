#pragma once

/// Normalizing transforms: ObservationNorm (fixed or estimated affine map) and VecNorm
/// (running statistics, shareable between envs).

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <torch/arg.h>
#include <torch/types.h>

#include <tdrl/envs/transforms.h>
#include <tdrl/specs/keys.h>
#include <tensordict/fields.h>

namespace tdrl::envs {

// ---- ObservationNorm ---------------------------------------------------------------------------

/// Options of ObservationNorm: the keys (in_keys, observation spec leaves, default
/// `{"observation"}`; out_keys default the in_keys; no inverse keys), loc and scale,
/// standard_normal and eps.
/// Example: `ObservationNormOptions().loc(0.5).scale(2.0).standard_normal(true)`
struct ObservationNormOptions : TransformKeysOptions<ObservationNormOptions> {
  ObservationNormOptions() { in_keys({specs::kObservation}); }
  /// The location: a scalar or a tensor broadcastable to each in_key's `[*batch, *feature]`
  /// value. Give loc and scale together, or neither and call init_stats.
  ObservationNormOptions& loc(double v) { return loc(torch::tensor(v)); }
  TORCH_ARG(torch::Tensor, loc);

 public:
  /// The scale (no zero element), broadcastable as loc.
  ObservationNormOptions& scale(double v) { return scale(torch::tensor(v)); }
  TORCH_ARG(torch::Tensor, scale);
  /// true: `(x - loc) / scale`; false: `x * scale + loc`. Default false (as TorchRL).
  TORCH_ARG(bool, standard_normal) = false;
  /// The smallest standard deviation init_stats uses. Default 1e-6.
  TORCH_ARG(double, eps) = 1e-6;
};

/// An affine map of observations (TorchRL's ObservationNorm): `x * scale + loc`, or
/// `(x - loc) / scale` with standard_normal. loc and scale are given, or estimated by
/// `init_stats` from random rollouts of the env below this transform, so that the outputs
/// have zero mean and unit variance.
///
/// Keys: reads each in_key (observation spec leaf, floating) `[*batch, *feature]`, writes the
/// same shape and dtype at its out_key, on reset and step. Specs: an Unbounded in_key stays
/// Unbounded; a Bounded one gets the mapped bounds (Unbounded until loc and scale are known).
///
/// Throws ValueError for loc without scale (or the reverse), a zero scale, no in_keys, out_keys
/// of another count than in_keys, inverse keys or a negative eps; KeyError / TypeError when
/// attached to an env whose observation spec lacks an in_key or holds a non-floating one; Error
/// when a value is transformed before loc and scale are known. Example:
/// ```
/// auto norm = std::make_shared<ObservationNorm>(ObservationNormOptions().standard_normal(true));
/// TransformedEnv env(base, norm);
/// norm->init_stats(1000);
/// ```
class ObservationNorm : public KeyedTransform {
 public:
  explicit ObservationNorm(ObservationNormOptions options = {});

  /// Estimates loc and scale from `num_iter` random steps per sub-env of `parent()->
  /// env_before(*this)` (a rollout that resets done sub-envs): the mean and the standard
  /// deviation (at least eps) of `key` (default: the only in_key) over the batch and time
  /// dims, so loc and scale have the feature shape. Then refreshes the env's specs. The
  /// rollout steps the base env: reset it afterwards. Throws ValueError for num_iter < 2 or a
  /// missing key with several in_keys, Error when loc and scale are already set or the
  /// transform is in no env, KeyError when the env below does not produce `key`.
  void init_stats(int64_t num_iter, std::optional<NestedKey> key = std::nullopt);
  /// True once loc and scale are known.
  bool initialized() const { return loc_.defined(); }
  /// The location (undefined before init_stats when not given).
  const torch::Tensor& loc() const { return loc_; }
  /// The scale (undefined before init_stats when not given).
  const torch::Tensor& scale() const { return scale_; }
  const ObservationNormOptions& options() const { return options_; }

  std::string to_string() const override;
  specs::CompositePtr transform_observation_spec(specs::CompositePtr spec,
                                                 const EnvSpecs& input) override;
  /// `{"loc", "scale"}` once known, empty before.
  TensorDict state_dict() const override;
  /// Sets loc and scale from `{"loc", "scale"}` (KeyError when either is missing, ValueError
  /// for a zero scale).
  void load_state_dict(const TensorDict& state) override;

 protected:
  torch::Tensor apply_transform(const torch::Tensor& value, const NestedKey& in_key) override;
  specs::TensorSpecPtr transform_output_leaf(const specs::TensorSpecPtr& spec,
                                             const NestedKey& in_key,
                                             const EnvSpecs& input) override;

 private:
  torch::Tensor apply(const torch::Tensor& x) const;

  ObservationNormOptions options_;
  torch::Tensor loc_;
  torch::Tensor scale_;
};

// ---- VecNorm -----------------------------------------------------------------------------------

/// VecNorm's running statistics: per key, decayed sums of the values, of their squares and of
/// the sample count (`sum`, `ssq`, `count`, float64), from which mean and standard deviation
/// follow. One state can be shared by the VecNorms of several envs (e.g. the sub-envs of a
/// ParallelEnv) so that they all normalize with the same statistics.
///
/// Thread safety: every method locks an internal mutex, so envs stepping on different threads
/// may share one state.
class VecNormState {
 public:
  VecNormState() = default;
  VecNormState(const VecNormState&) = delete;
  VecNormState& operator=(const VecNormState&) = delete;

  /// Under one lock: folds `samples` `[n, *feature]` (undefined or n == 0: no update) into
  /// the statistics of `key` (`stat = decay * stat + new`), then returns `value` `[...,
  /// *feature]` normalized with them, `(value - mean) / sqrt(max(var, eps))`, in value's
  /// dtype. Throws ShapeError when the feature shape differs from the key's statistics,
  /// KeyError when `key` has no statistics yet and there is nothing to fold in.
  torch::Tensor update_and_normalize(const NestedKey& key, const torch::Tensor& value,
                                     const torch::Tensor& samples, double decay, double eps);
  /// True when `key` has statistics.
  bool contains(const NestedKey& key) const;
  /// The mean and standard deviation of `key` (float64 `[*feature]`). KeyError when none.
  std::pair<torch::Tensor, torch::Tensor> mean_std(const NestedKey& key, double eps) const;
  /// A copy of the statistics: `{key: {"sum", "ssq", "count"}}` (batch size `[]`).
  TensorDict state_dict() const;
  /// Replaces the statistics by a copy of `state` (as state_dict() returns it). Throws KeyError
  /// when a statistics group lacks sum, ssq or count, ShapeError when sum and ssq differ in
  /// shape or count is not a scalar; nothing changes then.
  void load_state_dict(const TensorDict& state);

 private:
  struct Stats {
    torch::Tensor sum;  // float64 [*feature]
    torch::Tensor ssq;  // float64 [*feature]
    double count = 0;
  };
  Stats* find(const NestedKey& key);
  const Stats* find(const NestedKey& key) const;
  static std::pair<torch::Tensor, torch::Tensor> moments(const Stats& stats, double eps);

  mutable std::mutex mutex_;
  std::vector<std::pair<NestedKey, Stats>> stats_;  // insertion order
};

/// Options of VecNorm: the keys (in_keys, observation or reward spec leaves, default
/// `{"observation", "reward"}` as TorchRL; out_keys default the in_keys; no inverse keys), the
/// decay, eps and a shared state.
/// Example: `VecNormOptions().in_keys({"observation"}).decay(0.99)`
struct VecNormOptions : TransformKeysOptions<VecNormOptions> {
  VecNormOptions() { in_keys({specs::kObservation, specs::kReward}); }
  /// The decay of the running sums, in (0, 1]. Default 0.9999.
  TORCH_ARG(double, decay) = 0.9999;
  /// The smallest variance (> 0). Default 1e-4.
  TORCH_ARG(double, eps) = 1e-4;
  /// Statistics shared with other VecNorms. Default: a new state of its own.
  TORCH_ARG(std::shared_ptr<VecNormState>, shared_state);

 public:
  /// decay and eps (the keys and the shared state are the caller's wiring).
  void fields(tensordict::fields::FieldVisitor& v) {
    namespace tf = tensordict::fields;
    v("decay", decay_, tf::greater_than(0).up_to(1),
      "decay of the running statistics (1: a plain running mean and variance)");
    v("eps", eps_, tf::greater_than(0), "the smallest variance");
  }
};

/// Normalizes entries with running statistics (TorchRL's VecNorm): every output (reset and
/// step; on a partial reset only the sub-envs reset) updates the statistics of its key, then
/// is normalized with them, `(x - mean) / std`. freeze() stops the updates (evaluation).
///
/// Keys: reads each in_key `[*batch, *feature]` (floating), writes the normalized value (same
/// shape and dtype) at its out_key; statistics have the feature shape. Specs: the out_keys
/// become Unbounded (same shape and dtype).
///
/// Throws ValueError for decay outside (0, 1], eps <= 0, no in_keys, out_keys of another count
/// than in_keys or inverse keys; KeyError / TypeError when attached to an env lacking an in_key or
/// holding a non-floating one; KeyError when frozen before any statistics exist. Example:
/// ```
/// auto stats = std::make_shared<VecNormState>();
/// TransformedEnv a(base_a, std::make_shared<VecNorm>(VecNormOptions().shared_state(stats)));
/// TransformedEnv b(base_b, std::make_shared<VecNorm>(VecNormOptions().shared_state(stats)));
/// ```
class VecNorm : public KeyedTransform {
 public:
  explicit VecNorm(VecNormOptions options = {});

  /// The statistics (shared with the VecNorms given the same state).
  const std::shared_ptr<VecNormState>& state() const { return state_; }
  /// Stops updating the statistics.
  void freeze() { frozen_ = true; }
  /// Resumes updating the statistics.
  void unfreeze() { frozen_ = false; }
  bool frozen() const { return frozen_; }
  const VecNormOptions& options() const { return options_; }

  std::string to_string() const override;
  TensorDict reset(const TensorDict& input, TensorDict output) override;
  /// The statistics (see VecNormState::state_dict).
  TensorDict state_dict() const override;
  /// Loads statistics into the (possibly shared) state (see VecNormState::load_state_dict).
  void load_state_dict(const TensorDict& state) override;

 protected:
  TensorDict call(TensorDict td) override;
  specs::TensorSpecPtr transform_output_leaf(const specs::TensorSpecPtr& spec,
                                             const NestedKey& in_key,
                                             const EnvSpecs& input) override;

 private:
  // Normalizes the in_keys of `td`, updating with the rows selected by `rows` (bool
  // `[*batch]`; undefined: all rows).
  TensorDict normalize(TensorDict td, const torch::Tensor& rows);

  VecNormOptions options_;
  std::shared_ptr<VecNormState> state_;
  bool frozen_ = false;
};

}  // namespace tdrl::envs
