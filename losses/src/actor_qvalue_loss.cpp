// ActorQValueLoss's network check (the class itself is a template in the header).

#include <tdrl/losses/actor_qvalue_loss.h>

#include <string>

#include <tensordict/errors.h>

#include "detail/off_policy.h"

namespace tdrl::losses::detail {

void check_actor_and_qvalue_networks(const std::string& loss,
                                     const std::shared_ptr<torch::nn::Module>& actor,
                                     const LossModule::QNetworks& qvalue_networks) {
  check_network(loss, "the actor_network", actor);
  TDRL_CHECK(!qvalue_networks.empty(), tensordict::ValueError, loss,
             ": no Q-value network given; pass num_qvalue_nets (usually 2) "
             "independently built critics");
  for (size_t i = 0; i < qvalue_networks.size(); ++i) {
    check_network(loss, "Q-value network " + std::to_string(i), qvalue_networks[i]);
    TDRL_CHECK(qvalue_networks[i] != actor, tensordict::ValueError, loss, ": Q-value network ",
               std::to_string(i), " is the actor_network");
    for (size_t j = 0; j < i; ++j) {
      TDRL_CHECK(qvalue_networks[i] != qvalue_networks[j], tensordict::ValueError, loss,
                 ": Q-value networks ", std::to_string(j), " and ", std::to_string(i),
                 " are the same module; build each critic separately so that they have "
                 "their own parameters");
    }
  }
}

}  // namespace tdrl::losses::detail
