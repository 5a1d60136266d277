#pragma once

/// TensorDictPrimer: entries that the env does not write (a recurrent policy's hidden state) in
/// every reset and step output and in the observation spec (TorchRL's TensorDictPrimer).

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <tdrl/envs/transforms.h>
#include <tdrl/specs/composite.h>

namespace tdrl::envs {

/// Adds `primers`' entries to the env's outputs, so that a policy that carries state in the
/// TensorDict (LSTMModule, GRUModule) finds it at every step and check_env_specs passes:
///
/// - reset: each entry the env did not write is `default_value` (zeros) of its shape; on a
///   partial reset (the input's "_reset"), only the rows being reset are, the others keep the
///   input's value.
/// - step: each entry the env did not write is the policy's next value, ("next", key) of the
///   step's input (what LSTMModule writes), else the input's own value (a policy that does not
///   write it: the state stays), else `default_value`. step_mdp then moves it to the root for
///   the next step, so the state runs on through steps, batches and workers.
/// - the observation spec gains each entry, expanded to the env's batch size.
///
/// `primers` describes one step of an unbatched env (e.g. `lstm->hidden_specs()`): shape
/// `[*feature]`, expanded to `[*batch, *feature]`.
///
/// Keys: writes each leaf key of `primers` (root, and under "next" through step). Reads
/// "_reset" and ("next", key) of the step's input.
/// Errors: the constructor throws ValueError for no entries or an entry named like a done flag;
/// reset and step throw ShapeError naming the key when a value to keep has another shape than
/// `[*batch, *feature]`.
/// Example: `env.append_transform(std::make_shared<TensorDictPrimer>(lstm->hidden_specs()));`
class TensorDictPrimer : public Transform {
 public:
  explicit TensorDictPrimer(specs::CompositePtr primers, double default_value = 0);

  std::string name() const override { return "TensorDictPrimer"; }
  std::string to_string() const override;
  TensorDict reset(const TensorDict& input, TensorDict output) override;
  TensorDict step(const TensorDict& root, TensorDict next) override;
  /// As the default, reading the policy's ("next", key) before the env below replaces "next".
  TensorDict step_through(const TensorDict& root, const StepFn& inner) override;
  specs::CompositePtr transform_observation_spec(specs::CompositePtr spec,
                                                 const EnvSpecs& input) override;
  const specs::CompositePtr& primers() const { return primers_; }

 private:
  // `default_value` of `key`'s shape for `td`'s batch.
  torch::Tensor initial(const NestedKey& key, const TensorDict& td) const;
  // The policy's ("next", key) of the step's input, by key.
  std::map<NestedKey, torch::Tensor> written_by_policy(const TensorDict& root) const;
  // `next` with each entry the env did not write: the policy's, else the root's, else initial.
  TensorDict fill(const TensorDict& root, TensorDict next,
                  std::map<NestedKey, torch::Tensor> written) const;
  // Throws ShapeError unless `value` is `[*batch of td, *feature]` for `key`.
  void check_shape(const std::string& where, const NestedKey& key, const torch::Tensor& value,
                   const TensorDict& td) const;

  specs::CompositePtr primers_;
  std::vector<NestedKey> keys_;
  double default_value_;
};

/// `env` made ready for a recurrent policy whose state is `state` (e.g. `lstm->hidden_specs()`,
/// one unbatched step): an InitTracker ("is_init", unless the env already writes it) and a
/// TensorDictPrimer of `state`, appended to `env` when it is a TransformedEnv (so no nesting),
/// else around it. `env` itself when `state` is null or empty. Throws as TensorDictPrimer's
/// constructor.
/// Example: `env = with_policy_state(env, lstm->hidden_specs());`
std::shared_ptr<EnvBase> with_policy_state(std::shared_ptr<EnvBase> env,
                                           const specs::CompositePtr& state);

}  // namespace tdrl::envs
