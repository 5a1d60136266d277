#include <tdrl/losses/value_estimators.h>

#include <algorithm>
#include <cctype>
#include <sstream>

#include <torch/types.h>
#include <torch/utils.h>

#include <tdrl/losses/functional/value.h>
#include <tdrl/modules/recurrent.h>
#include <tensordict/errors.h>

namespace tdrl::losses {

using tensordict::KeyError;
using tensordict::ShapeError;
using tensordict::ValueError;
namespace tdnn = tensordict::nn;

namespace {

// The value must have the returns' shape (reward, flags and next value were checked by the
// functional estimator).
void check_value_shape(const std::string& where, const torch::Tensor& value,
                       const torch::Tensor& target) {
  if (!value.sizes().equals(target.sizes())) {
    std::ostringstream os;
    os << where << ": the value has shape " << value.sizes() << " but reward and next value have "
       << target.sizes() << "; they must match exactly";
    throw ShapeError(os.str());
  }
}

}  // namespace

std::string to_string(ValueEstimatorType type) {
  switch (type) {
    case ValueEstimatorType::kTD0:
      return "td0";
    case ValueEstimatorType::kTD1:
      return "td1";
    case ValueEstimatorType::kTDLambda:
      return "td_lambda";
    case ValueEstimatorType::kGAE:
      return "gae";
  }
  TORCH_INTERNAL_ASSERT(false, "unknown ValueEstimatorType");
}

ValueEstimatorType value_estimator_type_from_string(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (auto type : {ValueEstimatorType::kTD0, ValueEstimatorType::kTD1,
                    ValueEstimatorType::kTDLambda, ValueEstimatorType::kGAE}) {
    if (to_string(type) == lower) return type;
  }
  throw ValueError("value_estimator_type_from_string: unknown value estimator '" + name +
                   "'; valid: td0, td1, td_lambda, gae");
}

ValueEstimatorBase::ValueEstimatorBase(std::string name, NetworkPtr value_network,
                                       ValueEstimatorOptions options)
    : TensorDictModuleBase(std::move(name)),
      value_network_(std::move(value_network)),
      options_(options),
      keys_{
          {"advantage", NestedKey("advantage")}, {"value_target", NestedKey("value_target")},
          {"value", NestedKey("state_value")},   {"reward", NestedKey{"next", "reward"}},
          {"done", NestedKey{"next", "done"}},   {"terminated", NestedKey{"next", "terminated"}}} {
  for (const auto& [what, value] :
       {std::pair<const char*, double>{"gamma", options_.gamma()}, {"lmbda", options_.lmbda()}}) {
    TDRL_CHECK(value >= 0.0 && value <= 1.0, ValueError, this->name(), ": ", what, " is ",
               std::to_string(value), "; it must be in [0, 1]");
  }
  if (value_network_) {
    register_module("value_network", value_network_);
    recurrent_cores_ = modules::recurrent_cores(*value_network_);
  }
  update_declared_keys();
}

const NestedKey& ValueEstimatorBase::key(const std::string& key_name) const {
  for (const auto& entry : keys_) {
    if (entry.first == key_name) return entry.second;
  }
  throw KeyError(name() + ": no key named '" + key_name +
                 "'; valid: 'advantage', 'value_target', 'value', 'reward', 'done', "
                 "'terminated'");
}

ValueEstimatorBase& ValueEstimatorBase::set_keys(const std::map<std::string, NestedKey>& keys) {
  for (const auto& entry : keys) key(entry.first);
  for (auto& [key_name, value] : keys_) {
    auto it = keys.find(key_name);
    if (it != keys.end()) value = it->second;
  }
  update_declared_keys();
  return *this;
}

void ValueEstimatorBase::update_declared_keys() {
  std::vector<NestedKey> in_keys;
  if (value_network_) {
    in_keys = value_network_->in_keys();
  } else {
    in_keys = {key("value"), NestedKey{"next", key("value")}};
  }
  for (const char* k : {"reward", "done", "terminated"}) in_keys.push_back(key(k));
  TensorDictModuleBase::set_keys(std::move(in_keys), {key("advantage"), key("value_target")});
}

void ValueEstimatorBase::run_value_network(const TensorDict& td) const {
  torch::NoGradGuard no_grad;
  if (recurrent_cores_.empty()) {
    value_network_->forward(td);
    value_network_->forward(td.get_tensordict("next"));
    return;
  }
  // Sequence mode over the rollout: the state after every step lands under ("next", hidden).
  {
    modules::RecurrentModeGuard sequence(recurrent_cores_, /*recurrent_mode=*/true,
                                         /*sequence_states=*/true);
    value_network_->forward(td);
  }
  // Step mode over the next observations, each from the state after its own step.
  modules::RecurrentModeGuard step(recurrent_cores_, /*recurrent_mode=*/false);
  value_network_->forward(td.get_tensordict("next"));
}

torch::Tensor ValueEstimatorBase::read(const TensorDict& td, const std::string& key_name,
                                       const NestedKey& k) const {
  auto value = td.find(k);
  TDRL_CHECK(value, KeyError, name(), ": the TensorDict has no ", k.to_string(), " (the '",
             key_name, "' key); write it or rename it with set_keys");
  return *value;
}

void ValueEstimatorBase::forward_impl(const TensorDict& tensordict,
                                      const TensorDict& tensordict_out) {
  TDRL_CHECK(!(tensordict.batch_dims() < 1), ShapeError, name(),
             ": the TensorDict has batch_size []; value estimation needs a "
             "time dim (batch [*B, T], e.g. a rollout)");
  const NestedKey& value_key = key("value");
  const NestedKey next_value_key{"next", value_key};
  if (value_network_) run_value_network(tensordict);
  const auto value = read(tensordict, "value", value_key);
  const auto next_value = read(tensordict, "value", next_value_key);
  const auto reward = read(tensordict, "reward", key("reward"));
  const auto done = read(tensordict, "done", key("done"));
  const auto terminated = read(tensordict, "terminated", key("terminated"));
  // The time dim of the tensors is the TensorDict's last batch dim.
  const int64_t time_dim = tensordict.batch_dims() - 1;
  auto [advantage, value_target] = estimate(value, next_value, reward, done, terminated, time_dim);
  tensordict_out.set(key("advantage"), advantage);
  tensordict_out.set(key("value_target"), value_target);
}

void ValueEstimatorBase::print_to(std::ostream& stream) const {
  stream << name() << "(gamma=" << options_.gamma() << ", lmbda=" << options_.lmbda()
         << ", value_network=" << (value_network_ ? value_network_->name() : "None") << ")";
}

TD0EstimatorImpl::TD0EstimatorImpl(NetworkPtr value_network, ValueEstimatorOptions options)
    : ValueEstimatorBase("TD0Estimator", std::move(value_network), options) {}

std::pair<torch::Tensor, torch::Tensor> TD0EstimatorImpl::estimate(
    const torch::Tensor& value, const torch::Tensor& next_value, const torch::Tensor& reward,
    const torch::Tensor&, const torch::Tensor& terminated, int64_t) const {
  auto target = functional::td0_return_estimate(options().gamma(), next_value, reward, terminated);
  check_value_shape(name(), value, target);
  return {target - value.detach(), target};
}

TD1EstimatorImpl::TD1EstimatorImpl(NetworkPtr value_network, ValueEstimatorOptions options)
    : ValueEstimatorBase("TD1Estimator", std::move(value_network), options) {}

std::pair<torch::Tensor, torch::Tensor> TD1EstimatorImpl::estimate(
    const torch::Tensor& value, const torch::Tensor& next_value, const torch::Tensor& reward,
    const torch::Tensor& done, const torch::Tensor& terminated, int64_t time_dim) const {
  auto target = functional::td1_return_estimate(options().gamma(), next_value, reward, done,
                                                terminated, time_dim);
  check_value_shape(name(), value, target);
  return {target - value.detach(), target};
}

TDLambdaEstimatorImpl::TDLambdaEstimatorImpl(NetworkPtr value_network,
                                             ValueEstimatorOptions options)
    : ValueEstimatorBase("TDLambdaEstimator", std::move(value_network), options) {}

std::pair<torch::Tensor, torch::Tensor> TDLambdaEstimatorImpl::estimate(
    const torch::Tensor& value, const torch::Tensor& next_value, const torch::Tensor& reward,
    const torch::Tensor& done, const torch::Tensor& terminated, int64_t time_dim) const {
  auto target = functional::td_lambda_return_estimate(
      options().gamma(), options().lmbda(), next_value, reward, done, terminated, time_dim);
  check_value_shape(name(), value, target);
  return {target - value.detach(), target};
}

GAEImpl::GAEImpl(NetworkPtr value_network, ValueEstimatorOptions options)
    : ValueEstimatorBase("GAE", std::move(value_network), options) {}

std::pair<torch::Tensor, torch::Tensor> GAEImpl::estimate(
    const torch::Tensor& value, const torch::Tensor& next_value, const torch::Tensor& reward,
    const torch::Tensor& done, const torch::Tensor& terminated, int64_t time_dim) const {
  auto [advantage, target] = functional::generalized_advantage_estimate(
      options().gamma(), options().lmbda(), value, next_value, reward, done, terminated, time_dim);
  if (options().average_gae() && advantage.numel() > 1) {
    advantage = (advantage - advantage.mean()) / advantage.std().clamp_min(1e-6);
  }
  return {advantage, target};
}

std::shared_ptr<ValueEstimatorBase> make_value_estimator(ValueEstimatorType type,
                                                         NetworkPtr value_network,
                                                         ValueEstimatorOptions options) {
  switch (type) {
    case ValueEstimatorType::kTD0:
      return std::make_shared<TD0EstimatorImpl>(std::move(value_network), options);
    case ValueEstimatorType::kTD1:
      return std::make_shared<TD1EstimatorImpl>(std::move(value_network), options);
    case ValueEstimatorType::kTDLambda:
      return std::make_shared<TDLambdaEstimatorImpl>(std::move(value_network), options);
    case ValueEstimatorType::kGAE:
      return std::make_shared<GAEImpl>(std::move(value_network), options);
  }
  TORCH_INTERNAL_ASSERT(false, "unknown ValueEstimatorType");
}

}  // namespace tdrl::losses
