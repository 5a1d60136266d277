#pragma once

/// Transforms of values and their specs: DoubleToFloat, ClipTransform, UnsqueezeTransform,
/// ActionScaling.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <torch/arg.h>
#include <torch/types.h>

#include <tdrl/envs/transforms.h>
#include <tdrl/specs/keys.h>

namespace tdrl::envs {

// ---- DoubleToFloat -----------------------------------------------------------------------------

/// Options of DoubleToFloat: in_keys and in_keys_inv (it casts in place: out_keys and
/// out_keys_inv stay empty).
/// - in_keys: output entries cast float64 -> float32. Default (empty): every float64
///   observation and reward entry.
/// - in_keys_inv: input entries (action or state) the caller gives as float32 and the env
///   below reads as float64. Default (empty): every float64 action and state entry.
/// Example: `DoubleToFloatOptions().in_keys({"observation"})`
struct DoubleToFloatOptions : TransformKeysOptions<DoubleToFloatOptions> {};

/// Casts float64 outputs to float32 and float32 inputs back to float64 (TorchRL's
/// DoubleToFloat), e.g. for MuJoCo envs computing in double precision.
///
/// Keys: on reset and under "next", casts the in_keys (all float64 entries by default);
/// before the env steps, casts the in_keys_inv to float64. Specs: the cast entries (outputs
/// and inputs) become float32; Unbounded and Bounded specs only.
/// Throws ValueError for out_keys or out_keys_inv; when attached to an env: KeyError for an
/// explicit key missing from the specs, TypeError for an explicit key that is not float64 or
/// whose spec is not Unbounded/Bounded.
/// Example: `env.append_transform(std::make_shared<DoubleToFloat>());`
class DoubleToFloat : public Transform {
 public:
  explicit DoubleToFloat(DoubleToFloatOptions options = {});
  const DoubleToFloatOptions& options() const { return options_; }

  std::string name() const override { return "DoubleToFloat"; }
  std::string to_string() const override;
  TensorDict inv(TensorDict td) override;
  /// Casts the chosen float64 leaves of the observation, reward, action and state specs.
  EnvSpecs transform_specs(const EnvSpecs& input) override;

 protected:
  TensorDict call(TensorDict td) override;

 private:
  DoubleToFloatOptions options_;
  std::vector<NestedKey> inv_keys_;  // the input keys cast back, found from the specs
};

// ---- ClipTransform -----------------------------------------------------------------------------

/// Options of ClipTransform (at least one bound): the keys (in_keys default
/// `{"observation"}`, out_keys default the in_keys; no inverse keys) and the bounds.
/// Example: `ClipTransformOptions().low(-5.0).high(5.0)`
struct ClipTransformOptions : TransformKeysOptions<ClipTransformOptions> {
  ClipTransformOptions() { in_keys({specs::kObservation}); }
  /// The lower bound (finite). Default none (the dtype's lowest).
  TORCH_ARG(std::optional<double>, low);
  /// The upper bound (finite, >= low). Default none (the dtype's highest).
  TORCH_ARG(std::optional<double>, high);
};

/// Clips entries into [low, high] (TorchRL's ClipTransform).
///
/// Keys (see KeyedTransform): on reset and under "next", writes each in_key (floating)
/// clamped at its out_key. Specs: the out_keys are Bounded [low, high] (a missing bound is the
/// dtype's finite extreme).
/// Throws ValueError when no bound is given, a bound is not finite, low > high, for no in_keys
/// or inverse keys; KeyError / TypeError when attached to an env lacking an in_key or holding a
/// non-floating one.
/// Example: `std::make_shared<ClipTransform>(ClipTransformOptions().low(-10).high(10))`
class ClipTransform : public KeyedTransform {
 public:
  explicit ClipTransform(ClipTransformOptions options);
  const ClipTransformOptions& options() const { return options_; }

  std::string to_string() const override;

 protected:
  torch::Tensor apply_transform(const torch::Tensor& value, const NestedKey& in_key) override;
  specs::TensorSpecPtr transform_output_leaf(const specs::TensorSpecPtr& spec,
                                             const NestedKey& in_key,
                                             const EnvSpecs& input) override;

 private:
  ClipTransformOptions options_;
};

// ---- UnsqueezeTransform ------------------------------------------------------------------------

/// Options of UnsqueezeTransform: the keys (in_keys default `{"observation"}`, out_keys
/// default the in_keys; in_keys_inv: input entries, action or state, that the caller gives
/// unsqueezed at out_keys_inv (default the in_keys_inv) and the env below reads squeezed,
/// default none).
/// Example: `UnsqueezeTransformOptions().in_keys({"observation"})`
struct UnsqueezeTransformOptions : TransformKeysOptions<UnsqueezeTransformOptions> {
  UnsqueezeTransformOptions() { in_keys({specs::kObservation}); }
};

/// Inserts a dim of size 1 (TorchRL's UnsqueezeTransform). `dim` is negative, counted from
/// the last dim of the result, so it never touches the batch dims: -1 turns `[*batch, 3]` into
/// `[*batch, 3, 1]`, -2 into `[*batch, 1, 3]`.
///
/// Keys (see KeyedTransform): on reset and under "next", writes each in_key unsqueezed at its
/// out_key; before the env steps, writes each out_key_inv squeezed at its in_key_inv. Specs:
/// Unbounded, Bounded, Categorical and Binary specs get the new dim.
/// Throws ValueError for dim >= 0, no keys at all, or out_keys of another count than in_keys;
/// when attached to an env: KeyError for a missing key, ValueError when dim would land in the
/// batch dims, TypeError for another kind of spec.
/// Example: `std::make_shared<UnsqueezeTransform>(-1)`
class UnsqueezeTransform : public KeyedTransform {
 public:
  explicit UnsqueezeTransform(int64_t dim, UnsqueezeTransformOptions options = {});
  int64_t dim() const { return dim_; }
  const UnsqueezeTransformOptions& options() const { return options_; }

  std::string to_string() const override;

 protected:
  torch::Tensor apply_transform(const torch::Tensor& value, const NestedKey& in_key) override;
  torch::Tensor apply_inverse(const torch::Tensor& value, const NestedKey& in_key_inv) override;
  specs::TensorSpecPtr transform_output_leaf(const specs::TensorSpecPtr& spec,
                                             const NestedKey& in_key,
                                             const EnvSpecs& input) override;
  specs::TensorSpecPtr transform_input_leaf(const specs::TensorSpecPtr& spec,
                                            const NestedKey& in_key_inv,
                                            const EnvSpecs& input) override;

 private:
  specs::TensorSpecPtr unsqueezed(const specs::TensorSpec& spec, const NestedKey& key,
                                  const EnvSpecs& input) const;

  int64_t dim_;
  UnsqueezeTransformOptions options_;
};

// ---- ActionScaling -----------------------------------------------------------------------------

/// Options of ActionScaling.
/// Example: `ActionScalingOptions().action_key("action")`
struct ActionScalingOptions {
  /// The action entry. Default: the env's action key.
  ActionScalingOptions& action_key(NestedKey v) {
    action_key_ = std::move(v);
    return *this;
  }
  const std::optional<NestedKey>& action_key() const { return action_key_; }

 private:
  std::optional<NestedKey> action_key_;
};

/// Lets the policy act in [-1, 1] whatever the env's action bounds: the exposed action spec
/// is Bounded [-1, 1] (same shape and dtype), and before the env steps the action `a` becomes
/// `low + (a + 1) / 2 * (high - low)` (clamped into [low, high] against rounding), with low
/// and high the env below's Bounded action spec bounds.
///
/// Keys: reads and rewrites the action (in the copy handed to the env below; the caller's
/// TensorDict keeps the [-1, 1] action).
/// Throws, when attached to an env: ValueError when it has no action, TypeError when its
/// action spec is not a floating Bounded spec. Error when used outside an env.
/// Example: `env.append_transform(std::make_shared<ActionScaling>());`
class ActionScaling : public Transform {
 public:
  explicit ActionScaling(ActionScalingOptions options = {});
  const ActionScalingOptions& options() const { return options_; }

  std::string name() const override { return "ActionScaling"; }
  std::string to_string() const override;
  TensorDict inv(TensorDict td) override;
  specs::CompositePtr transform_action_spec(specs::CompositePtr spec,
                                            const EnvSpecs& input) override;

 private:
  ActionScalingOptions options_;
  std::optional<NestedKey> key_;  // found from the specs
  torch::Tensor low_;
  torch::Tensor high_;
  torch::Tensor mid_;         // (low + high) / 2
  torch::Tensor half_range_;  // (high - low) / 2
};

}  // namespace tdrl::envs
