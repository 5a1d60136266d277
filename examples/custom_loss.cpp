// A new loss written against keyed TensorDicts: advantage-weighted regression (AWR, Peng et
// al. 2019) with a target critic, in the shape docs/custom_loss.md walks through. The test
// suite builds and runs it (ctest Examples.CustomLossRuns): it exits with 1 unless training
// on a fixed batch lowers both loss terms.

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <memory>

#include <torch/torch.h>

#include <tdrl/losses.h>
#include <tdrl/modules.h>
#include <tdrl/specs/tensor_spec.h>
#include <tensordict/nn.h>
#include <tensordict/tensordict.h>

namespace {

using tdrl::losses::LossModule;
using tensordict::NestedKey;
using tensordict::TensorDict;
namespace tdnn = tensordict::nn;

/// Options of AWRLoss.
/// Example: `AWRLossOptions().beta(1.0).gamma(0.99)`
struct AWRLossOptions {
  /// Temperature of the advantage weights exp(A / beta). Default 1.
  TORCH_ARG(double, beta) = 1.0;
  /// Upper clamp of the weights. Default 20.
  TORCH_ARG(double, max_weight) = 20.0;
  /// Discount of the one-step value target. Default 0.99.
  TORCH_ARG(double, gamma) = 0.99;
};

/// AWR on transitions of batch [B]:
///   value_target = r + gamma * (1 - terminated) * V_target(s')
///   loss_value = mean((V(s) - value_target)^2)
///   loss_actor = -mean(min(exp((value_target - V(s)) / beta), max_weight) * log pi(a | s))
/// Keys (set_keys names → defaults): "action" → action, "reward" → ("next", "reward"),
/// "terminated" → ("next", "terminated"), "value" → state_value (what the critic writes),
/// plus the actor's and critic's in keys. Writes loss_actor, loss_value and the detached
/// diagnostic mean_weight.
class AWRLoss : public LossModule {
 public:
  AWRLoss(tdrl::modules::ProbabilisticActor actor, tdrl::modules::ValueOperator critic,
          AWRLossOptions options = {})
      : LossModule("AWRLoss",
                   {{"action", NestedKey("action")},
                    {"reward", NestedKey{"next", "reward"}},
                    {"terminated", NestedKey{"next", "terminated"}},
                    {"value", NestedKey("state_value")}},
                   /*in_key_names=*/{"action", "reward", "terminated"}),
        actor_(actor),
        critic_(critic),
        options_(options) {
    // Every entry forward_impl writes; trainers make a metrics column of each.
    set_out_keys({"loss_actor", "loss_value", "mean_weight"});
    convert_to_functional("actor_network", actor, /*create_target=*/false);
    convert_to_functional("critic_network", critic, /*create_target=*/true);
  }

 protected:
  TensorDict forward_impl(const TensorDict& batch) override {
    const TensorDict td = batch.clone(/*recurse=*/false);  // never write the caller's batch
    const auto reward = get(td, "reward");
    const auto not_terminated = 1.0 - get(td, "terminated").to(reward.scalar_type());

    // V(s) with gradient; V_target(s') with the target parameters, without gradient.
    const auto value = critic_(td).get(key("value"));
    const TensorDict next = td.get_tensordict("next");
    const auto next_value =
        with_target("critic_network", [&] { return critic_(next).get(key("value")); });
    check_same_shape("value target", reward, "reward", value, "value");
    const auto value_target = reward + options_.gamma() * not_terminated * next_value;

    // Advantage-weighted log-likelihood of the batch's actions under the current policy.
    const auto advantage = (value_target - value).detach();
    const auto weight = (advantage / options_.beta()).exp().clamp_max(options_.max_weight());
    const auto log_prob = actor_->get_dist(td)->log_prob(get(td, "action")).unsqueeze(-1);
    check_same_shape("actor loss", weight, "weight", log_prob, "log_prob");

    TensorDict out = TensorDict::empty({});
    out.set("loss_actor", -(weight * log_prob).mean());
    out.set("loss_value", (value - value_target).pow(2).mean());
    out.set("mean_weight", weight.mean());
    return out;
  }

 private:
  tdrl::modules::ProbabilisticActor actor_;
  tdrl::modules::ValueOperator critic_;
  AWRLossOptions options_;
};

void print_terms(const char* when, const TensorDict& out) {
  std::cout << when << ": loss_actor " << out.get("loss_actor").item<double>() << ", loss_value "
            << out.get("loss_value").item<double>() << ", mean_weight "
            << out.get("mean_weight").item<double>() << "\n";
}

TensorDict make_batch(int64_t n, int64_t obs_dim, int64_t act_dim) {
  TensorDict next({{"observation", torch::randn({n, obs_dim})},
                   {"reward", torch::randn({n, 1})},
                   {"terminated", torch::rand({n, 1}) < 0.05}},
                  {n});
  return TensorDict({{"observation", torch::randn({n, obs_dim})},
                     {"action", torch::rand({n, act_dim}) * 1.8 - 0.9},
                     {"next", next}},
                    {n});
}

}  // namespace

int main() {
  torch::manual_seed(0);
  constexpr int64_t kObs = 4, kAct = 2, kBatch = 256;
  using namespace tdrl::modules;
  tdnn::TensorDictSequential param_net(
      tdnn::TensorDictModule(
          MLP(MLPOptions(kObs, 2 * kAct).num_cells({32, 32})),
          tdnn::TensorDictModuleOptions().in_keys({"observation"}).out_keys({"params"})),
      tdnn::TensorDictModule(
          tdnn::NormalParamExtractor(),
          tdnn::TensorDictModuleOptions().in_keys({"params"}).out_keys({"loc", "scale"})));
  auto spec = std::make_shared<tdrl::specs::Bounded>(
      tdrl::specs::BoundedOptions().low(-1.0).high(1.0).shape({kAct}).dtype(torch::kFloat32));
  ProbabilisticActor actor(param_net, spec);
  ValueOperator critic(MLP(MLPOptions(kObs, 1).num_cells({32, 32})));

  auto loss = std::make_shared<AWRLoss>(actor, critic, AWRLossOptions().beta(0.5));
  tdrl::losses::SoftUpdate target_updater(loss, /*tau=*/0.05);
  torch::optim::Adam optimizer(loss->parameters(), torch::optim::AdamOptions(1e-3));

  const TensorDict batch = make_batch(kBatch, kObs, kAct);
  const TensorDict first = loss->forward(batch);
  print_terms("before", first);
  for (int step = 0; step < 200; ++step) {
    const TensorDict out = loss->forward(batch);
    optimizer.zero_grad();
    (out.get("loss_actor") + out.get("loss_value")).backward();
    optimizer.step();
    target_updater.step();
  }
  const TensorDict last = loss->forward(batch);
  print_terms("after 200 Adam steps", last);

  // Keys are renamed through set_keys; a batch missing one gives an error naming it.
  auto renamed = batch.clone(false);
  renamed.get_tensordict("next").rename_key_("reward", "r");
  try {
    loss->forward(renamed);
  } catch (const tensordict::KeyError& e) {
    std::cout << "missing key: " << e.what() << "\n";
  }
  loss->set_keys({{"reward", NestedKey{"next", "r"}}});
  std::cout << "after set_keys, loss_value "
            << loss->forward(renamed).get("loss_value").item<double>() << "\n";

  const bool improved =
      last.get("loss_value").item<double>() < first.get("loss_value").item<double>() &&
      last.get("loss_actor").item<double>() < first.get("loss_actor").item<double>();
  std::cout << (improved ? "both terms decreased" : "training did not lower the loss") << "\n";
  return improved ? EXIT_SUCCESS : EXIT_FAILURE;
}
