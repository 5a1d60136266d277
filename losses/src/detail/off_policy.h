#pragma once

// Private helpers shared by the off-policy losses (DQN, DDPG, TD3, SAC, discrete SAC, IQL,
// CQL): network inputs gathered from a batch, parameters held out of a
// backward pass, TD targets through a value estimator, discrete action spaces.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

#include <tdrl/losses/functional/distance.h>
#include <tdrl/losses/loss_module.h>
#include <tdrl/losses/value_estimators.h>
#include <tdrl/modules/actors.h>
#include <tdrl/specs/tensor_spec.h>
#include <tensordict/errors.h>
#include <tensordict/nn/tensordict_module.h>
#include <tensordict/tensor_dict.h>

namespace tdrl::losses::detail {

using tensordict::NestedKey;
using tensordict::shape_str;
using tensordict::TensorDict;

/// The default keys of an off-policy loss, in the order `set_keys` lists them: "action", then
/// `network_keys` (what the loss's networks write, e.g. "state_action_value"), then the
/// transition's reward, done and terminated under "next", and the prioritized-replay keys. These
/// names are documented in docs/keys.md: change them there first.
inline std::vector<std::pair<std::string, NestedKey>> off_policy_default_keys(
    std::vector<std::pair<std::string, NestedKey>> network_keys) {
  std::vector<std::pair<std::string, NestedKey>> keys{{"action", NestedKey("action")}};
  keys.insert(keys.end(), network_keys.begin(), network_keys.end());
  keys.insert(keys.end(), {{"reward", NestedKey{"next", "reward"}},
                           {"done", NestedKey{"next", "done"}},
                           {"terminated", NestedKey{"next", "terminated"}},
                           {"priority", NestedKey("td_error")},
                           {"priority_weight", NestedKey("_weight")}});
  return keys;
}

/// The default keys of a loss whose networks value (state, action) pairs under
/// "state_action_value" (DDPG, TD3, SAC, CQL).
inline std::vector<std::pair<std::string, NestedKey>> state_action_default_keys() {
  return off_policy_default_keys({{"state_action_value", NestedKey("state_action_value")}});
}

/// The keys every off-policy loss reads from a batch besides its networks' inputs.
inline std::vector<std::string> off_policy_in_key_names() {
  return {"action", "reward", "done", "terminated"};
}

inline std::string keys_str(const std::vector<NestedKey>& keys) {
  std::string out = "[";
  for (std::size_t i = 0; i < keys.size(); ++i) out += (i ? ", " : "") + keys[i].to_string();
  return out + "]";
}

inline bool has_key(const std::vector<NestedKey>& keys, const NestedKey& key) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

/// A TensorDict of `source`'s batch size holding only `keys` (aliased values), so that a
/// network run on it writes nothing into `source`. KeyError naming `where`, the key (under
/// `prefix` when `source` is the "next" sub-TensorDict) and `who` reads it.
inline TensorDict network_inputs(const std::string& where, const std::string& who,
                                 const TensorDict& source, const std::vector<NestedKey>& keys,
                                 const std::vector<NestedKey>& skip = {},
                                 const std::string& prefix = "") {
  TensorDict out = TensorDict::empty(source.batch_size());
  for (const auto& key : keys) {
    if (has_key(skip, key)) continue;
    auto value = source.find_value(key);
    if (!value) {
      const NestedKey shown = prefix.empty() ? key : NestedKey{prefix, key};
      throw tensordict::KeyError(where + ": the batch has no " + shown.to_string() +
                                 ", an input of " + who +
                                 "; write it into the batch or change the network's "
                                 "in_keys");
    }
    out.set(key, *value);
  }
  return out;
}

/// Throws ValueError unless `network` writes `key` (the loss's `key_name` key).
inline void require_writes(const std::string& where, const std::string& who,
                           const tensordict::nn::TensorDictModuleBase& network,
                           const NestedKey& key, const std::string& key_name) {
  TDRL_CHECK(has_key(network.out_keys(), key), tensordict::ValueError, where, ": ", who, " writes ",
             keys_str(network.out_keys()), ", not ", key.to_string(), " (the '", key_name,
             "' key); make it write there or rename the key with set_keys");
}

/// Throws ValueError unless `network` reads `key` (the loss's `key_name` key).
inline void require_reads(const std::string& where, const std::string& who,
                          const tensordict::nn::TensorDictModuleBase& network, const NestedKey& key,
                          const std::string& key_name) {
  TDRL_CHECK(has_key(network.in_keys(), key), tensordict::ValueError, where, ": ", who, " reads ",
             keys_str(network.in_keys()), ", not ", key.to_string(), " (the '", key_name,
             "' key); make it read the action there or rename the key with "
             "set_keys");
}

/// Throws ValueError for a null network or one without parameters (`who` names it).
inline void check_network(const std::string& where, const std::string& who,
                          const std::shared_ptr<torch::nn::Module>& network) {
  TDRL_CHECK(network, tensordict::ValueError, where, ": ", who, " is null");
  TDRL_CHECK(!network->parameters().empty(), tensordict::ValueError, where, ": ", who,
             " has no parameters (a lambda capturing a module does not "
             "register it); wrap the module itself in a TensorDictModule");
}

/// `batch["next"]`, or KeyError naming `where`.
inline TensorDict next_tensordict(const std::string& where, const TensorDict& batch) {
  auto value = batch.find_value("next");
  TDRL_CHECK(value && std::holds_alternative<TensorDict>(*value), tensordict::KeyError, where,
             ": the batch has no \"next\" TensorDict (the next state the "
             "targets are computed from); use transitions as envs and "
             "collectors write them");
  return std::get<TensorDict>(*value);
}

// The batch's "next" TensorDict and, read from it, the inputs of network `who` (e.g. "the
// actor_network") valued at the next state: the start of every bootstrapped target.
struct NextInputs {
  TensorDict td;
  TensorDict inputs;
};
inline NextInputs next_inputs(const std::string& where, const TensorDict& batch,
                              const std::string& who, const std::vector<NestedKey>& in_keys) {
  auto next = next_tensordict(where, batch);
  auto inputs = network_inputs(where, who + " on the next state", next, in_keys, {}, "next");
  return {std::move(next), std::move(inputs)};
}

/// The deterministic policy gradient's actor term (DDPG, TD3): -mean Q(s, mu(s)), with the
/// critic's parameters held out so that only the actor learns.
inline torch::Tensor deterministic_actor_loss(const std::string& where,
                                              tensordict::nn::TensorDictModuleBase& actor,
                                              tensordict::nn::TensorDictModuleBase& critic,
                                              const std::string& critic_who,
                                              const TensorDict& batch, const NestedKey& action_key,
                                              const NestedKey& value_key) {
  auto actor_td = network_inputs(where, "the actor_network", batch, actor.in_keys());
  actor.forward(actor_td);
  auto critic_td = network_inputs(where, critic_who, batch, critic.in_keys(), {action_key});
  critic_td.set(action_key, actor_td.get(action_key));
  HoldOutParams hold(critic);
  critic.forward(critic_td);
  return -critic_td.get(value_key).mean();
}

/// Throws ShapeError (naming `where`) when the batch has no batch dim.
inline void check_batched(const std::string& where, const TensorDict& batch) {
  TDRL_CHECK(!(batch.batch_dims() < 1), tensordict::ShapeError, where,
             ": the batch has batch_size []; a loss needs at least one "
             "batch dim (e.g. [B] transitions from a replay buffer)");
}

/// The steps a loss trains on, float `[*B]` (1 trained, 0 burn-in), from the batch's bool
/// burn-in flags `[*B]` or `[*B, 1]` under `key` (a SliceSampler's); nullopt when the batch has
/// none. `value` `[*B, 1]` gives the shape. ShapeError naming the key for another shape;
/// ValueError when every step is burn-in.
inline std::optional<torch::Tensor> trained_steps(const std::string& where, const TensorDict& batch,
                                                  const NestedKey& key,
                                                  const torch::Tensor& value) {
  const auto flags = batch.find(key);
  if (!flags) return std::nullopt;
  const auto per_sample = value.sizes().slice(0, value.dim() - 1);
  TDRL_CHECK(flags->numel() == c10::multiply_integers(per_sample), tensordict::ShapeError, where,
             ": the burn-in flags ", key.to_string(), " have shape ", shape_str(flags->sizes()),
             "; expected ", shape_str(per_sample), " (one per sample)");
  const auto trained = flags->logical_not().reshape(per_sample).to(value.dtype());
  TDRL_CHECK(trained.sum().item<double>() > 0, tensordict::ValueError, where,
             ": every step of the batch is flagged burn-in (", key.to_string(),
             "), so nothing is left to train on; sample longer slices or lower burn_in");
  return trained;
}

/// The number of burn-in steps that start every sequence of `batch` `[N, L]` (bool flags `[N, L]`
/// or `[N, L, 1]` under `key`, a SliceSampler's); 0 without flags. ValueError naming the key when
/// the flags are not the same first steps of every sequence, or flag every step.
inline int64_t burn_in_prefix(const std::string& where, const TensorDict& batch,
                              const NestedKey& key) {
  const auto found = batch.find(key);
  if (!found) return 0;
  const auto& size = batch.batch_size();
  const int64_t steps = size.back();
  TDRL_CHECK(found->numel() == batch.numel(), tensordict::ShapeError, where, ": the burn-in flags ",
             key.to_string(), " have shape ", shape_str(found->sizes()), "; expected ",
             shape_str(size), " (one per step)");
  const auto flags = found->to(torch::kBool).reshape({-1, steps});
  const int64_t warm =
      flags.select(0, 0).logical_not().to(torch::kInt64).cumsum(0).eq(0).sum().item<int64_t>();
  auto expected = torch::zeros({steps}, flags.options());
  expected.narrow(0, 0, warm).fill_(true);
  TDRL_CHECK(flags.eq(expected).all().item<bool>(), tensordict::ValueError, where,
             ": the burn-in flags ", key.to_string(),
             " must mark the same first steps of every sequence (a SliceSampler's burn_in)");
  TDRL_CHECK(warm < steps, tensordict::ValueError, where,
             ": every step of the batch is flagged burn-in (", key.to_string(),
             "), so nothing is left to train on; sample longer slices or lower burn_in");
  return warm;
}

/// Mean of `value` `[*B, 1]` over the steps `trained` `[*B]` marks (all when nullopt).
inline torch::Tensor masked_mean(const torch::Tensor& value,
                                 const std::optional<torch::Tensor>& trained) {
  if (!trained) return value.mean();
  return (value.squeeze(-1) * *trained).sum() / trained->sum();
}

/// Mean of a per-sample loss `[*B, 1]`; weighted by importance weights `[*B]` when given
/// (prioritized replay's `_weight`); over the `trained` steps `[*B]` alone when given.
inline torch::Tensor reduce_td_loss(const std::string& where, const torch::Tensor& loss,
                                    const std::optional<torch::Tensor>& weight,
                                    const std::optional<torch::Tensor>& trained = std::nullopt) {
  auto per_sample = loss.squeeze(-1);
  if (weight) {
    TDRL_CHECK(weight->sizes().equals(per_sample.sizes()), tensordict::ShapeError, where,
               ": the importance weights have shape ", shape_str(weight->sizes()),
               " but the batch's per-sample "
               "losses have shape ",
               shape_str(per_sample.sizes()), "; they must match (one weight per sample)");
    per_sample = per_sample * weight->to(per_sample.dtype());
  }
  return masked_mean(per_sample.unsqueeze(-1), trained);
}

using QNetworks = LossModule::QNetworks;

/// "true" / "false", for the losses' printed options.
inline const char* bool_str(bool v) { return v ? "true" : "false"; }

/// Throws unless every Q-network reads the action and writes the state-action value.
inline void check_q_keys(const std::string& where, const QNetworks& networks,
                         const NestedKey& action_key, const NestedKey& value_key) {
  for (size_t i = 0; i < networks.size(); ++i) {
    const std::string who = "Q-value network " + std::to_string(i);
    require_reads(where, who, *networks[i], action_key, "action");
    require_writes(where, who, *networks[i], value_key, "state_action_value");
  }
}

/// The action and state-action value keys of a Q(s, a) loss.
struct QKeys {
  NestedKey action;
  NestedKey value;
};

/// The first steps of a Q(s, a) loss's forward: checks that `batch` has a batch dim and that
/// every Q-network reads the action and writes the state-action value; returns those two keys.
inline QKeys checked_q_keys(const LossModule& loss, const TensorDict& batch,
                            const QNetworks& networks) {
  check_batched(loss.name(), batch);
  QKeys keys{loss.key("action"), loss.key("state_action_value")};
  check_q_keys(loss.name(), networks, keys.action, keys.value);
  return keys;
}

/// Sum over networks of each network's reduced TD loss against `target`.
inline torch::Tensor sum_td_losses(const std::string& where,
                                   const std::vector<torch::Tensor>& preds,
                                   const torch::Tensor& target, const std::string& loss_function,
                                   const std::optional<torch::Tensor>& weight) {
  torch::Tensor total;
  for (const auto& pred : preds) {
    const auto term =
        reduce_td_loss(where, functional::distance_loss(pred, target, loss_function), weight);
    total = total.defined() ? total + term : term;
  }
  return total;
}

/// max_i |Q_i(s, a) - y| `[*B]`, detached: the priority of each transition.
inline torch::Tensor max_td_error(const std::vector<torch::Tensor>& preds,
                                  const torch::Tensor& target) {
  const auto all = torch::stack(preds).detach();
  return std::get<0>((all - target).abs().max(0)).squeeze(-1);
}

// The action spec a loss was given, else the actor's when it is a ProbabilisticActor (which
// carries one), else null.
inline specs::TensorSpecPtr action_spec_of(specs::TensorSpecPtr given,
                                           const std::shared_ptr<torch::nn::Module>& actor) {
  if (given) return given;
  if (auto probabilistic = std::dynamic_pointer_cast<modules::ProbabilisticActorImpl>(actor)) {
    return probabilistic->spec();
  }
  return nullptr;
}

// Runs each Q-network i on its inputs taken from `source` (under "next" when `prefix` is
// set), with the action under `action_key` replaced by `action` when defined; returns the
// outputs under `value_key`, in order. `run(i, td)` evaluates network i on td.
inline std::vector<torch::Tensor> run_q_networks(
    const std::string& where, const QNetworks& networks, const TensorDict& source,
    const std::string& prefix, const NestedKey& action_key, const torch::Tensor& action,
    const NestedKey& value_key, const std::function<void(size_t, TensorDict&)>& run) {
  std::vector<torch::Tensor> out;
  out.reserve(networks.size());
  std::vector<NestedKey> skip;
  if (action.defined()) skip.push_back(action_key);
  for (size_t i = 0; i < networks.size(); ++i) {
    auto td = network_inputs(
        where,
        "Q-value network " + std::to_string(i) + (prefix.empty() ? "" : " on the next state"),
        source, networks[i]->in_keys(), skip, prefix);
    if (action.defined()) td.set(action_key, action);
    run(i, td);
    out.push_back(td.get(value_key));
  }
  return out;
}

/// Q_i(s, a) of every Q-network at the batch's own action, through its own parameters.
inline std::vector<torch::Tensor> q_values(const std::string& where, const QNetworks& networks,
                                           const TensorDict& batch, const NestedKey& action_key,
                                           const NestedKey& value_key) {
  return run_q_networks(where, networks, batch, "", action_key, {}, value_key,
                        [&](size_t i, TensorDict& td) { networks[i]->forward(td); });
}

/// "one_hot" or "categorical" discrete actions.
enum class ActionSpace { kOneHot, kCategorical };

inline ActionSpace parse_action_space(const std::string& where, const std::string& name) {
  if (name == "one_hot") return ActionSpace::kOneHot;
  if (name == "categorical") return ActionSpace::kCategorical;
  throw tensordict::ValueError(where + ": unknown action_space '" + name +
                               "'; valid: 'one_hot', 'categorical'");
}

/// The action space of `action` against `n` actions: `space` when given (checked), else read
/// from the shape (an integer `[*B]` index or a `[*B, n]` one-hot). ShapeError when the action
/// fits neither (naming both shapes).
inline ActionSpace resolve_action_space(const std::string& where, const torch::Tensor& action,
                                        c10::IntArrayRef batch_size, int64_t n,
                                        c10::IntArrayRef values_shape,
                                        std::optional<ActionSpace> space) {
  std::vector<int64_t> one_hot_shape(batch_size.begin(), batch_size.end());
  one_hot_shape.push_back(n);
  const bool is_index = action.sizes().equals(batch_size) && !action.is_floating_point();
  const bool is_one_hot = action.sizes().equals(one_hot_shape);
  if (!space) {
    if (is_index) space = ActionSpace::kCategorical;
    if (is_one_hot) space = ActionSpace::kOneHot;
  }
  if (space == ActionSpace::kOneHot && is_one_hot) return *space;
  if (space == ActionSpace::kCategorical && action.sizes().equals(batch_size)) return *space;
  throw tensordict::ShapeError(where + ": the action has shape " + shape_str(action.sizes()) +
                               " (" + std::string(c10::toString(action.scalar_type())) +
                               ") but the action values have shape " + shape_str(values_shape) +
                               "; expected a one-hot action " + shape_str(one_hot_shape) +
                               " or an integer index " + shape_str(batch_size));
}

/// Integer indices `[*B]` of a categorical action, ValueError when one is outside [0, n).
inline torch::Tensor action_index(const std::string& where, const torch::Tensor& action,
                                  int64_t n) {
  const auto index = action.to(torch::kLong);
  TDRL_CHECK(
      !(index.numel() > 0 && (index.min().item<int64_t>() < 0 || index.max().item<int64_t>() >= n)),
      tensordict::ValueError, where, ": an action index is outside [0, ", std::to_string(n), ")");
  return index;
}

/// The value of the taken action `[*B, 1]` from action values `[*B, n]`: a one-hot action
/// `[*B, n]` or an index `[*B]` (see resolve_action_space).
inline torch::Tensor chosen_value(const std::string& where, const torch::Tensor& values,
                                  const torch::Tensor& action, c10::IntArrayRef batch_size,
                                  std::optional<ActionSpace> space) {
  const int64_t n = values.size(-1);
  if (resolve_action_space(where, action, batch_size, n, values.sizes(), space) ==
      ActionSpace::kOneHot) {
    return (values * action.to(values.dtype())).sum(-1, /*keepdim=*/true);
  }
  return values.gather(-1, action_index(where, action, n).unsqueeze(-1));
}

}  // namespace tdrl::losses::detail
