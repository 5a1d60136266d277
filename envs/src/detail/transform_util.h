#pragma once

// Helpers shared by the env and transform sources (defined in transforms.cpp).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

#include <tdrl/envs/transforms.h>
#include <tdrl/specs/composite.h>
#include <tdrl/specs/tensor_spec.h>
#include <tensordict/errors.h>
#include <tensordict/nested_key.h>
#include <tensordict/tensor_dict.h>

namespace tdrl::envs::detail {

using tensordict::NestedKey;

/// `['a', ('next', 'b')]`.
std::string keys_repr(const std::vector<NestedKey>& keys);
/// `0.5`, `-1`, `1e-06` (shortest round-trip form).
std::string number_repr(double value);
/// `true` or `false`.
std::string bool_repr(bool v);
/// number_repr of a bound, or `None` when it is not given.
std::string bound_repr(const std::optional<double>& bound);
/// `value` clamped into [low, high]; a bound not given does not clamp.
torch::Tensor clamp(const torch::Tensor& value, const std::optional<double>& low,
                    const std::optional<double>& high);
/// The bounds of a clipping transform (named `low_name` and `high_name` in its options): at
/// least one given, each finite, low <= high. Throws ValueError naming `where` and the bound.
void check_clip_bounds(const std::string& where, const char* low_name,
                       const std::optional<double>& low, const char* high_name,
                       const std::optional<double>& high);
/// `shape` followed by 1.
std::vector<int64_t> with_trailing_one(std::vector<int64_t> shape);
/// A bool flag spec `[*batch, 1]` (as the done flags).
specs::TensorSpecPtr flag_spec(const std::vector<int64_t>& batch, torch::Device device);

/// Where the tensors of an env output live: `td.device()`, else its "done" flag's device, else
/// the CPU.
torch::Device device_of(const tensordict::TensorDict& td);
/// The leaf keys of `spec`, for "available keys" lists.
std::vector<NestedKey> leaf_keys(const specs::Composite& spec);
/// Throws KeyError naming `where` and `key` (`what`: "in_key", "out_key", ...), listing
/// `candidates` closest first.
[[noreturn]] void throw_missing(const std::string& where, const std::string& what,
                                const NestedKey& key, const std::vector<NestedKey>& candidates,
                                const std::string& spec_names);
/// The Composite (observation or reward) of `specs` holding leaf `key`, or nullptr.
specs::CompositePtr output_holding(const EnvSpecs& specs, const NestedKey& key);
/// The Composite (action or state) of `specs` holding leaf `key`, or nullptr.
specs::CompositePtr input_holding(const EnvSpecs& specs, const NestedKey& key);
/// Throws KeyError unless every key is a leaf of the observation or reward spec.
void require_outputs(const std::string& where, const std::vector<NestedKey>& keys,
                     const EnvSpecs& specs);
/// Throws KeyError unless every key is a leaf of the action or state spec.
void require_inputs(const std::string& where, const std::vector<NestedKey>& keys,
                    const EnvSpecs& specs);
/// Throws ValueError when `key` is done, terminated or truncated (naming `where`).
void reject_flag_key(const std::string& where, const NestedKey& key);
/// Throws ValueError naming `where` when `keys` (the option `what`, e.g. "in_keys") is empty.
void require_keys(const std::string& where, const char* what, const std::vector<NestedKey>& keys);

/// An Unbounded spec of `spec`'s shape and device, with `dtype` (default: `spec`'s).
specs::TensorSpecPtr unbounded_like(const specs::TensorSpec& spec,
                                    std::optional<torch::Dtype> dtype = {});
/// A Bounded spec `[low, high]` of `shape`, `dtype` and `device` (bounds broadcast).
specs::TensorSpecPtr bounded(const torch::Tensor& low, const torch::Tensor& high,
                             std::vector<int64_t> shape, torch::Dtype dtype, torch::Device device);
/// `spec` with `dtype`: Unbounded and Bounded only (TypeError naming `where` and `key`
/// otherwise).
specs::TensorSpecPtr with_dtype(const specs::TensorSpec& spec, torch::Dtype dtype,
                                const std::string& where, const NestedKey& key);
/// Throws TypeError naming `where` and `key` unless `spec` has a floating dtype.
void require_floating(const specs::TensorSpec& spec, const std::string& where,
                      const NestedKey& key);

/// Throws ValueError naming `where` when `options` (a TransformKeysOptions) has inverse keys:
/// for the transforms that only change outputs and are not KeyedTransforms.
template <class Options>
void reject_inverse_keys(const std::string& where, const TransformKeysOptions<Options>& options) {
  TDRL_CHECK(options.in_keys_inv().empty() && options.out_keys_inv().empty(),
             tensordict::ValueError, where, ": in_keys_inv is ", keys_repr(options.in_keys_inv()),
             " and out_keys_inv is ", keys_repr(options.out_keys_inv()), ", but ", where,
             " has no inverse; leave them empty");
}

/// The keys `out` (or `in` when `out` is empty); ValueError naming `where` when the sizes
/// differ.
std::vector<NestedKey> out_keys_or(const std::vector<NestedKey>& in,
                                   const std::vector<NestedKey>& out, const std::string& where);

}  // namespace tdrl::envs::detail
