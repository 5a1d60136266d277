#pragma once

/// Transforms that move entries between keys: CatTensors, RenameTransform, ExcludeTransform,
/// SelectTransform.

#include <cstdint>
#include <string>
#include <vector>

#include <torch/arg.h>
#include <torch/types.h>

#include <tdrl/envs/transforms.h>

namespace tdrl::envs {

// ---- CatTensors --------------------------------------------------------------------------------

/// Options of CatTensors.
/// Example: `CatTensorsOptions().out_key("observation").del_keys(true)`
struct CatTensorsOptions {
  /// The concatenation's key. Default "observation_vector" (as TorchRL).
  TORCH_ARG(NestedKey, out_key){"observation_vector"};
  /// The (negative) dim concatenated along, counted from the last. Default -1.
  TORCH_ARG(int64_t, dim) = -1;
  /// Remove the in_keys after concatenating. Default true.
  TORCH_ARG(bool, del_keys) = true;
  /// Concatenate the in_keys in sorted key order (as TorchRL) rather than as given. Default
  /// true.
  TORCH_ARG(bool, sort) = true;
};

/// Concatenates observation entries into one (TorchRL's CatTensors).
///
/// Keys: reads the in_keys (observation spec leaves of one dtype and of shapes equal but
/// along `dim`), writes out_key, removes the in_keys with del_keys. Specs: out_key is
/// Bounded with the concatenated bounds when every in_key is Bounded, else Unbounded.
/// Throws ValueError for empty in_keys or dim >= 0; KeyError (listing the keys) when a
/// TensorDict holds some in_keys but not all, or when attached to an env lacking one;
/// TypeError / ShapeError when the in_keys' specs differ in dtype or in shape (but along dim).
/// Example: `std::make_shared<CatTensors>(std::vector<NestedKey>{"position", "velocity"})`
class CatTensors : public Transform {
 public:
  explicit CatTensors(std::vector<NestedKey> in_keys, CatTensorsOptions options = {});
  /// The in_keys in concatenation order.
  const std::vector<NestedKey>& in_keys() const { return in_keys_; }
  const CatTensorsOptions& options() const { return options_; }

  std::string name() const override { return "CatTensors"; }
  std::string to_string() const override;
  specs::CompositePtr transform_observation_spec(specs::CompositePtr spec,
                                                 const EnvSpecs& input) override;

 protected:
  TensorDict call(TensorDict td) override;

 private:
  std::vector<NestedKey> in_keys_;
  CatTensorsOptions options_;
};

// ---- RenameTransform ---------------------------------------------------------------------------

/// Options of RenameTransform: the keys (output entries, observation or reward, renamed from
/// in_keys to out_keys; input entries, action or state, from out_keys_inv as the caller writes
/// them to in_keys_inv as the env below names them; the new names are required: an empty
/// out_keys does not default to the in_keys here) and create_copy.
/// Example: `RenameTransformOptions().in_keys({"observation"}).out_keys({"pixels"})`
struct RenameTransformOptions : TransformKeysOptions<RenameTransformOptions> {
  /// Keep the old entries too (copies). Default false.
  TORCH_ARG(bool, create_copy) = false;
};

/// Renames entries (TorchRL's RenameTransform): outputs from in_keys to out_keys (reset and
/// step), inputs from out_keys_inv (as the caller writes them) to in_keys_inv (as the env
/// below reads them). Renaming the reward or the action renames the env's reward or action
/// key. Tensors are aliased, not copied.
///
/// Specs: the renamed entries move (are copied with create_copy) to their new keys.
/// Throws ValueError when in/out key lists differ in count, when no key is given, or when a
/// key is a done flag (done, terminated, truncated cannot be renamed); KeyError when attached
/// to an env lacking an in_key (or in_key_inv).
/// Example:
/// `RenameTransformOptions().in_keys({"observation"}).out_keys({"obs"})`
class RenameTransform : public Transform {
 public:
  explicit RenameTransform(RenameTransformOptions options);
  const RenameTransformOptions& options() const { return options_; }

  std::string name() const override { return "RenameTransform"; }
  std::string to_string() const override;
  TensorDict inv(TensorDict td) override;
  /// Renames the in_keys in the observation and reward specs, the in_keys_inv in the action and
  /// state specs.
  EnvSpecs transform_specs(const EnvSpecs& input) override;

 protected:
  TensorDict call(TensorDict td) override;

 private:
  // Renames the entries of `spec` (one of input's Composites, `input_spec`) named in `from`.
  specs::CompositePtr rename_spec(specs::CompositePtr spec, const specs::CompositePtr& input_spec,
                                  const std::vector<NestedKey>& from,
                                  const std::vector<NestedKey>& to) const;

  RenameTransformOptions options_;
};

// ---- ExcludeTransform --------------------------------------------------------------------------

/// Removes observation entries from the env's outputs (TorchRL's ExcludeTransform).
///
/// Keys: removes the excluded keys on reset and under "next" (missing ones are skipped).
/// Specs: they leave the observation spec.
/// Throws ValueError for no keys; when attached to an env: ValueError for the reward or a
/// done flag (an env always returns them), KeyError for a key not in the observation spec.
/// Example: `std::make_shared<ExcludeTransform>(std::vector<NestedKey>{"pixels"})`
class ExcludeTransform : public Transform {
 public:
  explicit ExcludeTransform(std::vector<NestedKey> excluded_keys);
  const std::vector<NestedKey>& excluded_keys() const { return excluded_keys_; }

  std::string name() const override { return "ExcludeTransform"; }
  std::string to_string() const override;
  specs::CompositePtr transform_observation_spec(specs::CompositePtr spec,
                                                 const EnvSpecs& input) override;

 protected:
  TensorDict call(TensorDict td) override;

 private:
  std::vector<NestedKey> excluded_keys_;
};

// ---- SelectTransform ---------------------------------------------------------------------------

/// Keeps only the selected observation entries (TorchRL's SelectTransform); the reward and
/// the done flags are always kept (an env always returns them).
///
/// Keys: on reset and under "next", removes every entry but the selected keys, the reward
/// and the flags. Specs: the observation spec keeps only the selected keys.
/// Throws ValueError for no keys; KeyError when attached to an env whose observation spec
/// lacks a selected key.
/// Example: `std::make_shared<SelectTransform>(std::vector<NestedKey>{"observation"})`
class SelectTransform : public Transform {
 public:
  explicit SelectTransform(std::vector<NestedKey> selected_keys);
  const std::vector<NestedKey>& selected_keys() const { return selected_keys_; }

  std::string name() const override { return "SelectTransform"; }
  std::string to_string() const override;
  specs::CompositePtr transform_observation_spec(specs::CompositePtr spec,
                                                 const EnvSpecs& input) override;
  specs::CompositePtr transform_reward_spec(specs::CompositePtr spec,
                                            const EnvSpecs& input) override;

 protected:
  TensorDict call(TensorDict td) override;

 private:
  std::vector<NestedKey> selected_keys_;
  std::vector<NestedKey> kept_;  // selected keys, reward key and flags
};

}  // namespace tdrl::envs
