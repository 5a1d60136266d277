#include <tdrl/losses/loss_module.h>

#include <algorithm>
#include <sstream>

#include <torch/nn/module.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <tdrl/modules/recurrent.h>
#include <tensordict/errors.h>
#include <tensordict/nn/functional.h>

namespace tdrl::losses {

using tensordict::KeyError;
using tensordict::shape_str;
using tensordict::ShapeError;
using tensordict::ValueError;

namespace {

std::string names_repr(const std::vector<std::string>& names) {
  std::string out = "[";
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", '" : "'") + names[i] + "'";
  return out + "]";
}

// A buffer name for a target leaf: registered names may not contain '.'.
std::string buffer_name(const std::string& network, const NestedKey& key) {
  std::string out = "target_" + network;
  for (std::size_t i = 0; i < key.size(); ++i) out += "__" + key[i];
  std::replace(out.begin(), out.end(), '.', '_');
  return out;
}

}  // namespace

LossModule::LossModule(std::string name,
                       std::vector<std::pair<std::string, NestedKey>> default_keys,
                       std::vector<std::string> in_key_names)
    : torch::nn::Module(std::move(name)),
      keys_(std::move(default_keys)),
      in_key_names_(std::move(in_key_names)) {
  for (const auto& key_name : in_key_names_) key(key_name);  // each must be declared
}

TensorDict LossModule::forward(const TensorDict& batch) {
  for (const auto& key_name : in_key_names_) get(batch, key_name);
  modules::RecurrentModeGuard sequences(recurrent_cores_, /*recurrent_mode=*/true);
  TensorDict out = forward_impl(batch);
  for (const auto& key : out.keys()) {
    TDRL_CHECK(std::find(out_keys_.begin(), out_keys_.end(), key.front()) != out_keys_.end(),
               KeyError, name(), ": forward wrote '", key.front(),
               "', which is not among its out_keys ", names_repr(out_keys_),
               "; declare every entry the loss writes with set_out_keys in its "
               "constructor");
  }
  return out;
}

void LossModule::set_out_keys(std::vector<std::string> keys) {
  for (size_t i = 0; i < keys.size(); ++i) {
    TDRL_CHECK(!keys[i].empty(), ValueError, name(), ": set_out_keys: an out key is empty");
    if (std::find(keys.begin(), keys.begin() + static_cast<long>(i), keys[i]) !=
        keys.begin() + static_cast<long>(i))
      throw ValueError(name() + ": set_out_keys: '" + keys[i] + "' is declared twice in " +
                       names_repr(keys));
  }
  out_keys_ = std::move(keys);
}

std::vector<std::string> LossModule::loss_terms() const {
  std::vector<std::string> out;
  for (const auto& k : out_keys_)
    if (k.rfind("loss_", 0) == 0) out.push_back(k);
  return out;
}

LossModule& LossModule::set_keys(const std::map<std::string, NestedKey>& keys) {
  for (const auto& entry : keys) key(entry.first);  // validate all before changing any
  for (auto& [key_name, value] : keys_) {
    auto it = keys.find(key_name);
    if (it != keys.end()) value = it->second;
  }
  on_keys_changed();
  return *this;
}

void LossModule::make_value_estimator(std::optional<ValueEstimatorType> type,
                                      ValueEstimatorOptions options) {
  value_estimator_ = build_value_estimator(type.value_or(default_value_estimator()), options);
  on_keys_changed();
}

std::shared_ptr<ValueEstimatorBase> LossModule::build_value_estimator(
    ValueEstimatorType type, const ValueEstimatorOptions& options) {
  TDRL_CHECK(type != ValueEstimatorType::kGAE, ValueError, name(),
             ": GAE is an on-policy advantage estimator; use td0, td1 or "
             "td_lambda");
  return tdrl::losses::make_value_estimator(type, nullptr, options);
}

const NestedKey& LossModule::key(const std::string& key_name) const {
  for (const auto& entry : keys_) {
    if (entry.first == key_name) return entry.second;
  }
  std::vector<std::string> valid;
  for (const auto& entry : keys_) valid.push_back(entry.first);
  throw KeyError(name() + ": no key named '" + key_name +
                 "'; valid key names: " + names_repr(valid));
}

std::vector<NestedKey> LossModule::in_keys() const {
  std::vector<NestedKey> out;
  for (const auto& key_name : in_key_names_) out.push_back(key(key_name));
  return out;
}

torch::Tensor LossModule::get(const TensorDict& batch, const std::string& key_name) const {
  const auto& k = key(key_name);
  auto value = batch.find(k);
  TDRL_CHECK(value, KeyError, name(), ": the batch has no ", k.to_string(), " (the '", key_name,
             "' key); write it into the batch or rename it with set_keys({{\"", key_name,
             "\", <your key>}})");
  return *value;
}

void LossModule::check_same_shape(const std::string& what, const torch::Tensor& a,
                                  const std::string& a_name, const torch::Tensor& b,
                                  const std::string& b_name) const {
  TDRL_CHECK(a.sizes().equals(b.sizes()), ShapeError, name(), ": ", what, ": ", a_name,
             " has shape ", shape_str(a.sizes()), " but ", b_name, " has shape ",
             shape_str(b.sizes()),
             "; they must match exactly (a [B] reward against a [B, 1] value would "
             "broadcast to [B, B]); reshape one of them");
}

LossModule::Transition LossModule::transition(const TensorDict& batch) const {
  return {get(batch, "reward"), get(batch, "done"), get(batch, "terminated")};
}

void LossModule::check_td_shapes(const Transition& t, const torch::Tensor& value) const {
  check_same_shape("TD target", t.reward, "reward", value, "Q(s, a)");
  check_same_shape("TD target", t.done, "done", value, "Q(s, a)");
  check_same_shape("TD target", t.terminated, "terminated", value, "Q(s, a)");
}

LossModule::Transition LossModule::checked_transition(const TensorDict& batch,
                                                      const torch::Tensor& value) const {
  auto t = transition(batch);
  check_td_shapes(t, value);
  return t;
}

torch::Tensor LossModule::td_target(const TensorDict& batch, const Transition& t,
                                    const torch::Tensor& value, const torch::Tensor& next_value,
                                    const std::string& next_name) const {
  check_same_shape("TD target", next_value, next_name, value, "Q(s, a)");
  TDRL_CHECK(value_estimator_, ValueError, name(),
             ": no value estimator; call make_value_estimator before forward");
  return value_estimator_
      ->estimate(value.detach(), next_value.detach(), t.reward, t.done, t.terminated,
                 batch.batch_dims() - 1)
      .second;
}

void LossModule::convert_to_functional(const std::string& net_name,
                                       tensordict::nn::ModulePtr<torch::nn::Module> module,
                                       bool create_target) {
  TDRL_CHECK(module, ValueError, name(), ": network '", net_name, "' is null");
  for (const auto& n : networks_) {
    TDRL_CHECK(n.name != net_name, ValueError, name(), ": a network named '", net_name,
               "' is registered already");
  }
  register_module(net_name, module);
  Network network{net_name, module, tensordict::nn::from_module(*module), std::nullopt};
  if (create_target) {
    TensorDict target = network.params.detach().clone();
    for (const auto& key : target.keys(/*include_nested=*/true, /*leaves_only=*/true)) {
      register_buffer(buffer_name(net_name, key), target.get(key));
    }
    network.target = target;
  }
  for (const auto& core : modules::recurrent_cores(*module))
    if (std::find(recurrent_cores_.begin(), recurrent_cores_.end(), core) == recurrent_cores_.end())
      recurrent_cores_.push_back(core);
  networks_.push_back(std::move(network));
}

const LossModule::Network& LossModule::find_network(const std::string& net_name) const {
  for (const auto& n : networks_) {
    if (n.name == net_name) return n;
  }
  throw KeyError(name() + ": no network named '" + net_name +
                 "'; registered: " + names_repr(networks()));
}

std::vector<std::string> LossModule::networks() const {
  std::vector<std::string> out;
  for (const auto& n : networks_) out.push_back(n.name);
  return out;
}

std::shared_ptr<torch::nn::Module> LossModule::network(const std::string& net_name) const {
  return find_network(net_name).module;
}

const TensorDict& LossModule::params(const std::string& net_name) const {
  return find_network(net_name).params;
}

bool LossModule::has_target(const std::string& net_name) const {
  return find_network(net_name).target.has_value();
}

const TensorDict& LossModule::target_params(const std::string& net_name) const {
  const auto& n = find_network(net_name);
  TDRL_CHECK(n.target, KeyError, name(), ": network '", net_name,
             "' has no target parameters (register it with create_target)");
  return *n.target;
}

struct LossModule::TargetSwap::State {
  tensordict::nn::ParamsGuard guard;
};

LossModule::TargetSwap::TargetSwap(const LossModule& loss, const std::string& net_name)
    : state_(std::make_unique<State>()) {
  const auto& n = loss.find_network(net_name);
  state_->guard = tensordict::nn::to_module(loss.target_params(net_name), *n.module);
}

LossModule::TargetSwap::~TargetSwap() = default;

// ---- Target updaters -----------------------------------------------------------------------

namespace {

void require_targets(const std::string& who, const LossModule& loss) {
  for (const auto& net : loss.networks()) {
    if (loss.has_target(net)) return;
  }
  throw ValueError(who + ": the loss " + loss.name() +
                   " has no target network; create it with target networks");
}

}  // namespace

SoftUpdate::SoftUpdate(std::shared_ptr<LossModule> loss, double tau)
    : loss_(std::move(loss)), tau_(tau) {
  TDRL_CHECK(loss_, ValueError, "SoftUpdate: the loss is null");
  TDRL_CHECK(tau_ > 0.0 && tau_ <= 1.0, ValueError, "SoftUpdate: tau is ", std::to_string(tau_),
             "; it must be in (0, 1]");
  require_targets("SoftUpdate", *loss_);
}

void SoftUpdate::step() {
  torch::NoGradGuard no_grad;
  for (const auto& n : loss_->networks_) {
    if (!n.target) continue;
    for (const auto& key : n.target->keys(true, true)) {
      auto target = n.target->get(key);
      const auto source = n.params.get(key);
      if (target.is_floating_point()) {
        target.lerp_(source, tau_);
      } else {
        target.copy_(source);
      }
    }
  }
}

HardUpdate::HardUpdate(std::shared_ptr<LossModule> loss, int64_t period)
    : loss_(std::move(loss)), period_(period) {
  TDRL_CHECK(loss_, ValueError, "HardUpdate: the loss is null");
  TDRL_CHECK(!(period_ < 1), ValueError, "HardUpdate: period is ", std::to_string(period_),
             "; it must be >= 1");
  require_targets("HardUpdate", *loss_);
}

void HardUpdate::step() {
  if (++counter_ % period_ != 0) return;
  torch::NoGradGuard no_grad;
  for (const auto& n : loss_->networks_) {
    if (!n.target) continue;
    for (const auto& key : n.target->keys(true, true)) n.target->get(key).copy_(n.params.get(key));
  }
}

}  // namespace tdrl::losses
