#pragma once

/// LossModule: the base of every loss (TorchRL's LossModule), and the target-network
/// updaters SoftUpdate and HardUpdate.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

#include <tdrl/losses/networks.h>
#include <tdrl/losses/value_estimators.h>
#include <tensordict/nested_key.h>
#include <tensordict/nn/tensordict_module.h>
#include <tensordict/tensor_dict.h>

namespace tdrl::modules {
class RecurrentModuleImpl;
}  // namespace tdrl::modules

namespace tdrl::losses {

using tensordict::NestedKey;
using tensordict::TensorDict;

/// Holds a module's parameters out of the gradient for the length of a scope (TorchRL's
/// hold_out_params): every parameter of `module` that requires grad stops requiring it, so a
/// forward through the module sends gradients to its inputs only, and requires_grad comes back
/// when the scope ends (also by an exception). For a loss term that must train one network
/// through another without training the other: an actor term through the critic.
///
/// The graph built meanwhile keeps no edge to the held parameters; no data changes. The flags
/// are the module's own: another thread using the module meanwhile sees them off.
///
/// Example (in a forward_impl: the actor learns from Q(s, pi(s)), the critic does not):
/// ```
/// torch::Tensor actor_term(torch::nn::Module& critic, const std::function<torch::Tensor()>& q) {
///   tdrl::losses::HoldOutParams hold(critic);
///   return -q().mean();
/// }
/// ```
class HoldOutParams {
 public:
  explicit HoldOutParams(const torch::nn::Module& module) {
    for (auto& p : module.parameters(/*recurse=*/true)) {
      if (p.requires_grad()) {
        p.requires_grad_(false);
        held_.push_back(p);
      }
    }
  }
  ~HoldOutParams() {
    for (auto& p : held_) p.requires_grad_(true);
  }
  HoldOutParams(const HoldOutParams&) = delete;
  HoldOutParams& operator=(const HoldOutParams&) = delete;

 private:
  std::vector<torch::Tensor> held_;
};

/// A loss over keyed TensorDicts: `forward(batch)` returns a TensorDict (batch size `[]`) of
/// scalar `loss_*` entries, whose sum is what the optimiser minimises, plus detached
/// diagnostics (entropy, KL, clip fraction, alpha, ...).
///
/// Keys: every key a loss reads or writes has a name ("action", "reward", "value", ...) and a
/// default (docs/keys.md); `set_keys({{"reward", {"next", "my_reward"}}})` renames them.
/// `in_keys()` lists the keys forward reads. A batch missing one of them throws KeyError
/// naming the key and the `set_keys` name that changes it. `out_keys()` lists the entries
/// forward writes (TorchRL's out_keys): every loss declares them in its constructor with
/// `set_out_keys`, and forward throws KeyError when the result holds an undeclared entry, so
/// the declaration is always true. Trainers read it to make one metrics column per entry.
///
/// Networks: a loss registers its networks with `convert_to_functional`, which makes each a
/// submodule (its parameters are the loss's parameters) and records its parameters as a
/// TensorDict (`params(name)`, aliasing the module's tensors). With a target, a detached copy
/// `target_params(name)` is kept (registered as buffers, so torch::save/load keep it) and the
/// network is evaluated with it under `with_target` (a to_module swap, no gradient);
/// SoftUpdate/HardUpdate move it towards `params`.
///
/// Writing a loss: derive, declare the keys in the constructor, implement `forward_impl`,
/// read entries with `get(batch, "name")` and compare shapes with `check_same_shape` (no
/// silent broadcasting). See docs/custom_loss.md.
///
/// Thread safety: like any torch::nn::Module; `set_keys` must not race with forward.
class LossModule : public torch::nn::Module {
 public:
  /// Checks that every in key is present, then computes the loss terms. The recurrent cores of
  /// the loss's networks (recurrent_cores) run in sequence mode for the call, the batch being
  /// sequences `[*B, T]` (time last), and are back in their own mode after.
  TensorDict forward(const TensorDict& batch);
  /// The recurrent cores (LSTMModule, GRUModule) of the networks registered with
  /// convert_to_functional, each once.
  const std::vector<std::shared_ptr<modules::RecurrentModuleImpl>>& recurrent_cores() const {
    return recurrent_cores_;
  }

  /// Renames keys: name → new key. Throws KeyError for an unknown name (listing the valid
  /// ones); nothing changes then. Returns this loss.
  LossModule& set_keys(const std::map<std::string, NestedKey>& keys);
  /// The key currently used for `name`. Throws KeyError for an unknown name.
  const NestedKey& key(const std::string& name) const;
  /// Every key name with its current key, in declaration order.
  const std::vector<std::pair<std::string, NestedKey>>& keys() const { return keys_; }
  /// The keys forward reads (for the current set_keys).
  std::vector<NestedKey> in_keys() const;
  /// The entries forward may write (loss_* terms and diagnostics), in declaration order; a
  /// forward call writes a subset of them.
  const std::vector<std::string>& out_keys() const { return out_keys_; }
  /// The loss_* entries of out_keys(): what an optimiser can minimise.
  std::vector<std::string> loss_terms() const;

  /// (Re)builds the value estimator the loss computes its targets or advantages with
  /// (TorchRL's make_value_estimator): `type` defaults to the loss's own default (TD(0) for
  /// the off-policy losses, GAE for the policy-gradient ones), `options` carry gamma, lambda,
  /// ... The estimator takes the loss's current keys. Throws ValueError when the loss cannot
  /// use `type` (GAE for an off-policy loss, any estimator for a policy-gradient loss
  /// without critic); the previous estimator stays then.
  /// Example: `loss->make_value_estimator(ValueEstimatorType::kTD0,
  ///                                       ValueEstimatorOptions().gamma(0.98));`
  void make_value_estimator(std::optional<ValueEstimatorType> type = std::nullopt,
                            ValueEstimatorOptions options = {});
  /// The current value estimator; null for a loss that has none.
  const std::shared_ptr<ValueEstimatorBase>& value_estimator() const { return value_estimator_; }

  /// The names of the registered networks, in registration order.
  std::vector<std::string> networks() const;
  /// The network registered as `name`. Throws KeyError for an unknown name.
  std::shared_ptr<torch::nn::Module> network(const std::string& name) const;
  /// `name`'s parameters (and buffers) as a TensorDict aliasing the module's tensors.
  const TensorDict& params(const std::string& name) const;
  /// True when `name` has target parameters.
  bool has_target(const std::string& name) const;
  /// `name`'s target parameters (detached, never trained by the optimiser). Throws KeyError
  /// when `name` has none.
  const TensorDict& target_params(const std::string& name) const;

  /// The Q-value networks of a loss that has several (SAC, TD3, CQL, IQL): one module per
  /// Q-function, given as `{q1, q2}` or a std::vector of holders or shared_ptrs.
  using QNetworks = NetworkList;

 protected:
  /// `name` starts error messages; `default_keys` declares every key name with its default;
  /// `in_key_names` are the names forward reads (each must be declared).
  LossModule(std::string name, std::vector<std::pair<std::string, NestedKey>> default_keys,
             std::vector<std::string> in_key_names);

  /// Computes the loss terms from a batch whose in keys are present.
  virtual TensorDict forward_impl(const TensorDict& batch) = 0;
  /// Called after set_keys changed keys and after make_value_estimator (e.g. to forward the
  /// keys to the value estimator).
  virtual void on_keys_changed() {}
  /// The estimator make_value_estimator builds when no type is named.
  virtual ValueEstimatorType default_value_estimator() const { return ValueEstimatorType::kTD0; }
  /// Builds the estimator of `type` for make_value_estimator; throws to refuse a type. The
  /// default suits losses that compute the next value themselves: an estimator without a value
  /// network, refusing GAE (an on-policy advantage estimator).
  virtual std::shared_ptr<ValueEstimatorBase> build_value_estimator(
      ValueEstimatorType type, const ValueEstimatorOptions& options);

  /// The estimator of make_value_estimator (null until a loss builds one).
  std::shared_ptr<ValueEstimatorBase> value_estimator_;
  /// Declares out_keys() (call it in the constructor, after the options are known). Throws
  /// ValueError for an empty or repeated name.
  void set_out_keys(std::vector<std::string> keys);

  /// Registers `module` (a holder or a shared_ptr) as submodule `name` and records its
  /// parameters; with `create_target`, also a detached copy as its target parameters. Throws
  /// ValueError for a duplicate name or a null module (an empty holder included).
  void convert_to_functional(const std::string& name,
                             tensordict::nn::ModulePtr<torch::nn::Module> module,
                             bool create_target);
  /// The name a loss's i-th Q-value network is registered under: "qvalue_network_<i>" (the
  /// name with_target and the updaters take).
  static std::string qvalue_name(size_t i) { return "qvalue_network_" + std::to_string(i); }
  /// convert_to_functional for each of `networks`, registered as qvalue_name(i).
  void convert_qvalue_networks(const QNetworks& networks, bool create_target) {
    for (size_t i = 0; i < networks.size(); ++i) {
      convert_to_functional(qvalue_name(i), networks[i], create_target);
    }
  }
  /// A step `(i, td)` that runs Q-value network i on `td`, through its target parameters when
  /// `use_target`; the next state's values of the off-policy losses.
  auto qvalue_runner(const QNetworks& networks, bool use_target);
  /// Runs `fn()` with network `name` holding its target parameters, under NoGradGuard, and
  /// restores its own parameters afterwards (also when fn throws).
  template <typename F>
  auto with_target(const std::string& name, F&& fn);

  /// `batch`'s entry under key `key_name`; KeyError naming the key and the set_keys name when
  /// missing.
  torch::Tensor get(const TensorDict& batch, const std::string& key_name) const;
  /// Throws ShapeError unless `a` and `b` have the same shape, naming both (e.g. a reward
  /// [B] against a value [B, 1], the classic silent broadcast).
  void check_same_shape(const std::string& what, const torch::Tensor& a, const std::string& a_name,
                        const torch::Tensor& b, const std::string& b_name) const;

  /// A transition's reward, done and terminated (the keys "reward", "done", "terminated").
  struct Transition {
    torch::Tensor reward;
    torch::Tensor done;
    torch::Tensor terminated;
  };
  /// Reads the transition's entries from `batch` (KeyError as get()).
  Transition transition(const TensorDict& batch) const;
  /// Throws ShapeError (as check_same_shape, for the "TD target") unless each of `t`'s entries
  /// has the shape of `value`, the Q(s, a) they are regressed with.
  void check_td_shapes(const Transition& t, const torch::Tensor& value) const;
  /// transition() followed by check_td_shapes() against `value`: for the losses that know
  /// Q(s, a) before they read the transition.
  Transition checked_transition(const TensorDict& batch, const torch::Tensor& value) const;
  /// The regression target for `value` (Q(s, a), `[*B, 1]`): the value estimator's target from
  /// `next_value` and the transition `t` (whose shapes check_td_shapes checks), the time dim
  /// being the batch's last dim; nothing flows back through it. Throws ShapeError (as
  /// check_same_shape, naming `next_name`) when next_value's shape differs from value's.
  torch::Tensor td_target(const TensorDict& batch, const Transition& t, const torch::Tensor& value,
                          const torch::Tensor& next_value, const std::string& next_name) const;
  /// Runs `fn()` through network `name`'s target parameters when `use_target` (with_target),
  /// else through its own; the delayed-actor switch of DDPG and TD3.
  template <typename F>
  auto with_target_if(bool use_target, const std::string& name, F&& fn) {
    return use_target ? with_target(name, std::forward<F>(fn)) : fn();
  }

  /// The guard of a target swap (implemented in the .cpp, used by with_target).
  class TargetSwap {
   public:
    TargetSwap(const LossModule& loss, const std::string& name);
    ~TargetSwap();
    TargetSwap(const TargetSwap&) = delete;
    TargetSwap& operator=(const TargetSwap&) = delete;

   private:
    struct State;
    std::unique_ptr<State> state_;
  };

 private:
  friend class SoftUpdate;
  friend class HardUpdate;
  struct Network {
    std::string name;
    std::shared_ptr<torch::nn::Module> module;
    TensorDict params;
    std::optional<TensorDict> target;
  };
  const Network& find_network(const std::string& name) const;

  std::vector<std::pair<std::string, NestedKey>> keys_;
  std::vector<std::string> in_key_names_;
  std::vector<std::string> out_keys_;
  std::vector<Network> networks_;
  std::vector<std::shared_ptr<modules::RecurrentModuleImpl>> recurrent_cores_;
};

template <typename F>
auto LossModule::with_target(const std::string& name, F&& fn) {
  torch::NoGradGuard no_grad;
  TargetSwap swap(*this, name);
  return fn();
}

// Defined after with_target, which its lambda instantiates.
inline auto LossModule::qvalue_runner(const QNetworks& networks, bool use_target) {
  return [this, &networks, use_target](size_t i, TensorDict& td) {
    with_target_if(use_target, qvalue_name(i), [&] { networks[i]->forward(td); });
  };
}

/// Moves every target towards its parameters after each optimiser step:
/// `target = (1 - tau) * target + tau * params` (TorchRL's SoftUpdate with tau = 1 - eps).
/// Throws ValueError for tau outside (0, 1] or a loss without targets.
/// Example: `SoftUpdate updater(loss, 0.005); ... optimizer.step(); updater.step();`
class SoftUpdate {
 public:
  SoftUpdate(std::shared_ptr<LossModule> loss, double tau);
  /// One update of every target.
  void step();
  double tau() const { return tau_; }

 private:
  std::shared_ptr<LossModule> loss_;
  double tau_;
};

/// Copies the parameters into the targets every `period` calls of step() (the first copy at
/// the period-th call). Throws ValueError for period < 1 or a loss without targets.
/// Example: `HardUpdate updater(loss, 1000);`
class HardUpdate {
 public:
  HardUpdate(std::shared_ptr<LossModule> loss, int64_t period);
  /// Counts one optimiser step; copies when the count reaches a multiple of the period.
  void step();
  int64_t period() const { return period_; }
  int64_t counter() const { return counter_; }

 private:
  std::shared_ptr<LossModule> loss_;
  int64_t period_;
  int64_t counter_ = 0;
};

}  // namespace tdrl::losses
