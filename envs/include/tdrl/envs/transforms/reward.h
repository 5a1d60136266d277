#pragma once

/// Reward transforms: RewardScaling, RewardClipping, RewardSum (episode return).

#include <optional>
#include <string>
#include <vector>

#include <torch/arg.h>
#include <torch/types.h>

#include <tdrl/envs/transforms.h>
#include <tdrl/specs/keys.h>

namespace tdrl::envs {

// ---- RewardScaling -----------------------------------------------------------------------------

/// Options of RewardScaling.
/// Example: `RewardScalingOptions().loc(0.0).scale(0.1)`
struct RewardScalingOptions {
  /// Added after scaling (subtracted first with standard_normal). Finite. Default 0.
  TORCH_ARG(double, loc) = 0.0;
  /// The factor (the divisor with standard_normal); finite, non-zero. Default 1.
  TORCH_ARG(double, scale) = 1.0;
  /// The entries scaled. Default `{"reward"}`.
  TORCH_ARG(std::vector<NestedKey>, in_keys){specs::kReward};
  /// true: `(r - loc) / scale`; false: `r * scale + loc`. Default false.
  TORCH_ARG(bool, standard_normal) = false;
};

/// An affine map of the reward (TorchRL's RewardScaling): `r * scale + loc`, or
/// `(r - loc) / scale` with standard_normal.
///
/// Keys: reads and rewrites each in_key (reward or observation spec leaf, floating) under
/// "next" (same shape and dtype). Specs: those entries become Unbounded.
/// Throws ValueError for a zero or non-finite scale or a non-finite loc; KeyError / TypeError
/// when attached to an env lacking an in_key or holding a non-floating one.
/// Example:
/// `env.append_transform(std::make_shared<RewardScaling>(RewardScalingOptions().scale(0.1)));`
class RewardScaling : public Transform {
 public:
  explicit RewardScaling(RewardScalingOptions options = {});
  const RewardScalingOptions& options() const { return options_; }

  std::string name() const override { return "RewardScaling"; }
  std::string to_string() const override;
  specs::CompositePtr transform_observation_spec(specs::CompositePtr spec,
                                                 const EnvSpecs& input) override;
  specs::CompositePtr transform_reward_spec(specs::CompositePtr spec,
                                            const EnvSpecs& input) override;

 protected:
  TensorDict call(TensorDict td) override;

 private:
  RewardScalingOptions options_;
};

// ---- RewardClipping ----------------------------------------------------------------------------

/// Options of RewardClipping (at least one bound).
/// Example: `RewardClippingOptions().clamp_min(-1.0).clamp_max(1.0)`
struct RewardClippingOptions {
  /// The lower bound (finite). Default none.
  TORCH_ARG(std::optional<double>, clamp_min);
  /// The upper bound (finite, >= clamp_min). Default none.
  TORCH_ARG(std::optional<double>, clamp_max);
  /// The entries clipped. Default `{"reward"}`.
  TORCH_ARG(std::vector<NestedKey>, in_keys){specs::kReward};
};

/// Clips the reward into [clamp_min, clamp_max] (TorchRL's RewardClipping).
///
/// Keys: reads and rewrites each in_key (reward or observation spec leaf, floating) under
/// "next". Specs: Bounded [clamp_min, clamp_max] when both bounds are given, else Unbounded.
/// Throws ValueError when no bound is given, a bound is not finite or clamp_min > clamp_max;
/// KeyError / TypeError when attached to an env lacking an in_key or holding a non-floating
/// one.
/// Example: `std::make_shared<RewardClipping>(RewardClippingOptions().clamp_min(-1).clamp_max(1))`
class RewardClipping : public Transform {
 public:
  explicit RewardClipping(RewardClippingOptions options);
  const RewardClippingOptions& options() const { return options_; }

  std::string name() const override { return "RewardClipping"; }
  std::string to_string() const override;
  specs::CompositePtr transform_observation_spec(specs::CompositePtr spec,
                                                 const EnvSpecs& input) override;
  specs::CompositePtr transform_reward_spec(specs::CompositePtr spec,
                                            const EnvSpecs& input) override;

 protected:
  TensorDict call(TensorDict td) override;

 private:
  specs::TensorSpecPtr clipped(const specs::TensorSpec& spec, const NestedKey& key) const;

  RewardClippingOptions options_;
};

// ---- RewardSum ---------------------------------------------------------------------------------

/// Options of RewardSum.
/// Example: `RewardSumOptions().in_keys({"reward"}).out_keys({"episode_reward"})`
struct RewardSumOptions {
  /// The rewards summed. Default `{"reward"}`.
  TORCH_ARG(std::vector<NestedKey>, in_keys){specs::kReward};
  /// The running sums, one per in_key. Default `{"episode_reward"}`.
  TORCH_ARG(std::vector<NestedKey>, out_keys){"episode_reward"};
};

/// The running return of the current episode (TorchRL's RewardSum): reset writes 0 (for the
/// sub-envs reset; the others keep their sum), each step writes the previous sum plus the
/// step's reward.
///
/// Keys: reset writes each out_key (shape and dtype of its reward, `[*batch, 1]` by default);
/// step reads the root's out_key (0 when absent) and ("next", in_key) and writes
/// ("next", out_key). Specs: the out_keys join the observation spec as Unbounded of the
/// reward's shape and dtype.
/// Throws ValueError when in_keys and out_keys differ in count or are empty; KeyError when
/// attached to an env whose reward (or observation) spec lacks an in_key.
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
