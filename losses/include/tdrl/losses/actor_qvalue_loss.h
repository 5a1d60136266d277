#pragma once

/// ActorQValueLoss: the base of the losses that train one actor against N Q-value networks.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/nn/module.h>

#include <tdrl/losses/loss_module.h>

namespace tdrl::losses {

namespace detail {

/// ActorQValueLoss's check of its networks; throws the ValueErrors listed there, each naming
/// `loss` and the network.
void check_actor_and_qvalue_networks(const std::string& loss,
                                     const std::shared_ptr<torch::nn::Module>& actor,
                                     const LossModule::QNetworks& qvalue_networks);

}  // namespace detail

/// The base of the losses of one actor and N Q-value networks (TorchRL's num_qvalue_nets):
/// SACLoss, DiscreteSACLoss, CQLLoss, IQLLoss and TD3Loss, and a user's own loss of that
/// family. It checks the networks and holds them; the derived loss registers them
/// (convert_to_functional("actor_network", ...) and convert_qvalue_networks) with its own
/// target settings, and reads them in forward_impl.
///
/// `ActorModule` is the actor's module type: ProbabilisticTensorDictSequentialImpl for the
/// losses that need the policy's distribution, TensorDictModuleBase for a deterministic actor.
///
/// Errors: the constructor throws ValueError, naming the loss and the network, for a null
/// network or one without parameters, no Q-value network, a Q-value network given twice or
/// equal to the actor (the twin Q-functions must be separately built critics).
/// Example (excerpt):
/// ```
/// class MyLoss : public ActorQValueLoss<tensordict::nn::TensorDictModuleBase> {
///  public:
///   MyLoss(Actor actor, QNetworks qnets)
///       : ActorQValueLoss("MyLoss", my_default_keys(), {"action"}, std::move(actor),
///                         std::move(qnets)) {
///     convert_to_functional("actor_network", actor_network_, /*create_target=*/true);
///     convert_qvalue_networks(qvalue_networks_, /*create_target=*/true);
///   }
///   ...
/// };
/// ```
template <class ActorModule>
class ActorQValueLoss : public LossModule {
 public:
  /// The actor, as a holder or a shared_ptr.
  using Actor = tensordict::nn::ModulePtr<ActorModule>;

  /// The number of Q-value networks.
  int64_t num_qvalue_nets() const { return static_cast<int64_t>(qvalue_networks_.size()); }

 protected:
  /// `name`, `default_keys` and `in_key_names` as LossModule's; then the networks, checked.
  ActorQValueLoss(std::string name, std::vector<std::pair<std::string, NestedKey>> default_keys,
                  std::vector<std::string> in_key_names, Actor actor_network,
                  QNetworks qvalue_networks)
      : LossModule(std::move(name), std::move(default_keys), std::move(in_key_names)),
        actor_network_(std::move(actor_network)),
        qvalue_networks_(std::move(qvalue_networks)) {
    detail::check_actor_and_qvalue_networks(this->name(), actor_network_, qvalue_networks_);
  }

  /// The actor (registered by the derived loss as "actor_network").
  Actor actor_network_;
  /// The Q-value networks, one module per Q-function (registered as qvalue_name(i)).
  QNetworks qvalue_networks_;
};

}  // namespace tdrl::losses
