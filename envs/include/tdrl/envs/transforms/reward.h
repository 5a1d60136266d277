#pragma once

/// Reward transforms: RewardScaling, RewardClipping, RewardSum (episode return).

#include <optional>
#include <string>
#include <vector>

#include <torch/arg.h>
#include <torch/types.h>

#include <tdrl/envs/transforms.h>
#include <tdrl/specs/keys.h>
#include <tensordict/fields.h>

namespace tdrl::envs {

// ---- RewardScaling -----------------------------------------------------------------------------

/// Options of RewardScaling: the keys (in_keys default `{"reward"}`, out_keys default the
/// in_keys; no inverse keys), loc, scale and standard_normal.
/// Example: `RewardScalingOptions().loc(0.0).scale(0.1)`
struct RewardScalingOptions : TransformKeysOptions<RewardScalingOptions> {
  RewardScalingOptions() { in_keys({specs::kReward}); }
  /// Added after scaling (subtracted first with standard_normal). Finite. Default 0.
  TORCH_ARG(double, loc) = 0.0;
  /// The factor (the divisor with standard_normal); finite, non-zero. Default 1.
  TORCH_ARG(double, scale) = 1.0;
  /// true: `(r - loc) / scale`; false: `r * scale + loc`. Default false.
  TORCH_ARG(bool, standard_normal) = false;

 public:
  /// loc, scale and standard_normal (the keys are the caller's wiring).
  void fields(tensordict::fields::FieldVisitor& v) {
    v("loc", loc_, "added after scaling (subtracted first with standard_normal)");
    v("scale", scale_, "the factor (the divisor with standard_normal); not 0");
    v("standard_normal", standard_normal_, "true: (r - loc) / scale; false: r * scale + loc");
  }
};

/// An affine map of the reward (TorchRL's RewardScaling): `r * scale + loc`, or
/// `(r - loc) / scale` with standard_normal.
///
/// Keys (see KeyedTransform): reads each in_key (reward or observation spec leaf, floating)
/// under "next" and writes the result (same shape and dtype) at its out_key. Specs: the
/// out_keys are Unbounded.
/// Throws ValueError for a zero or non-finite scale, a non-finite loc, no in_keys or inverse
/// keys; KeyError / TypeError when attached to an env lacking an in_key or holding a
/// non-floating one.
/// Example:
/// `env.append_transform(std::make_shared<RewardScaling>(RewardScalingOptions().scale(0.1)));`
class RewardScaling : public KeyedTransform {
 public:
  explicit RewardScaling(RewardScalingOptions options = {});
  const RewardScalingOptions& options() const { return options_; }

  std::string to_string() const override;

 protected:
  torch::Tensor apply_transform(const torch::Tensor& value, const NestedKey& in_key) override;
  specs::TensorSpecPtr transform_output_leaf(const specs::TensorSpecPtr& spec,
                                             const NestedKey& in_key,
                                             const EnvSpecs& input) override;

 private:
  RewardScalingOptions options_;
};

// ---- RewardClipping ----------------------------------------------------------------------------

/// Options of RewardClipping (at least one bound): the keys (in_keys default `{"reward"}`,
/// out_keys default the in_keys; no inverse keys) and the bounds.
/// Example: `RewardClippingOptions().clamp_min(-1.0).clamp_max(1.0)`
struct RewardClippingOptions : TransformKeysOptions<RewardClippingOptions> {
  RewardClippingOptions() { in_keys({specs::kReward}); }
  /// The lower bound (finite). Default none.
  TORCH_ARG(std::optional<double>, clamp_min);
  /// The upper bound (finite, >= clamp_min). Default none.
  TORCH_ARG(std::optional<double>, clamp_max);

 public:
  /// The bounds (the keys are the caller's wiring).
  void fields(tensordict::fields::FieldVisitor& v) {
    v("clamp_min", clamp_min_, "the lowest reward kept (null: no lower bound)");
    v("clamp_max", clamp_max_, "the highest reward kept (null: no upper bound)");
  }
};

/// Clips the reward into [clamp_min, clamp_max] (TorchRL's RewardClipping).
///
/// Keys (see KeyedTransform): reads each in_key (reward or observation spec leaf, floating)
/// under "next" and writes it clipped at its out_key. Specs: the out_keys are Bounded
/// [clamp_min, clamp_max] when both bounds are given, else Unbounded.
/// Throws ValueError when no bound is given, a bound is not finite, clamp_min > clamp_max, for
/// no in_keys or inverse keys; KeyError / TypeError when attached to an env lacking an in_key
/// or holding a non-floating one.
/// Example: `std::make_shared<RewardClipping>(RewardClippingOptions().clamp_min(-1).clamp_max(1))`
class RewardClipping : public KeyedTransform {
 public:
  explicit RewardClipping(RewardClippingOptions options);
  const RewardClippingOptions& options() const { return options_; }

  std::string to_string() const override;

 protected:
  torch::Tensor apply_transform(const torch::Tensor& value, const NestedKey& in_key) override;
  specs::TensorSpecPtr transform_output_leaf(const specs::TensorSpecPtr& spec,
                                             const NestedKey& in_key,
                                             const EnvSpecs& input) override;

 private:
  RewardClippingOptions options_;
};

// ---- RewardSum ---------------------------------------------------------------------------------

/// Options of RewardSum: the rewards summed (in_keys, default `{"reward"}`) and the running
/// sums, one per in_key (out_keys, default `{"episode_reward"}`); no inverse keys.
/// Example: `RewardSumOptions().in_keys({"reward"}).out_keys({"episode_reward"})`
struct RewardSumOptions : TransformKeysOptions<RewardSumOptions> {
  RewardSumOptions() {
    in_keys({specs::kReward});
    out_keys({"episode_reward"});
  }
};

/// The running return of the current episode (TorchRL's RewardSum): reset writes 0 (for the
/// sub-envs reset; the others keep their sum), each step writes the previous sum plus the
/// step's reward.
///
/// Keys: reset writes each out_key (shape and dtype of its reward, `[*batch, 1]` by default);
/// step reads the root's out_key (0 when absent) and ("next", in_key) and writes
/// ("next", out_key). Specs: the out_keys join the observation spec as Unbounded of the
/// reward's shape and dtype.
/// Throws ValueError when in_keys and out_keys differ in count or are empty, or for inverse
/// keys; KeyError when attached to an env whose reward (or observation) spec lacks an in_key.
/// Example: `env.append_transform(std::make_shared<RewardSum>());`
class RewardSum : public Transform {
 public:
  explicit RewardSum(RewardSumOptions options = {});
  const RewardSumOptions& options() const { return options_; }

  std::string name() const override { return "RewardSum"; }
  std::string to_string() const override;
  TensorDict reset(const TensorDict& input, TensorDict output) override;
  TensorDict step(const TensorDict& root, TensorDict next) override;
  specs::CompositePtr transform_observation_spec(specs::CompositePtr spec,
                                                 const EnvSpecs& input) override;

 private:
  RewardSumOptions options_;
  // The feature shape and dtype of each in_key, from the specs (default [1], float32).
  std::vector<std::vector<int64_t>> feature_shapes_;
  std::vector<torch::Dtype> dtypes_;
};

}  // namespace tdrl::envs
