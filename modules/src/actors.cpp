#include <tdrl/modules/actors.h>

#include <algorithm>

#include <torch/types.h>

#include <tensordict/errors.h>

#include "detail/names.h"

namespace tdrl::modules {

namespace tdnn = tensordict::nn;

// ---- ProbabilisticActor --------------------------------------------------------------------

ProbabilisticActorImpl::ProbabilisticActorImpl(tdnn::ModulePtr<tdnn::TensorDictModuleBase> module,
                                               specs::TensorSpecPtr spec,
                                               ProbabilisticActorOptions options)
    : tdnn::ProbabilisticTensorDictSequentialImpl(
          Modules{std::move(module),
                  std::make_shared<tdnn::ProbabilisticTensorDictModuleImpl>(
                      options.distribution_class(),
                      tdnn::ProbabilisticTensorDictModuleOptions()
                          .in_keys(options.in_keys())
                          .out_keys(options.out_keys())
                          .return_log_prob(options.return_log_prob())
                          .log_prob_key(options.log_prob_key())
                          .default_interaction_type(options.default_interaction_type()))}),
      spec_(std::move(spec)),
      safe_(options.safe()) {
  TDRL_CHECK(!(safe_ && !spec_), ValueError,
             "ProbabilisticActor: safe=true needs an action spec to project into; "
             "pass the env's action spec or set safe(false)");
}

void ProbabilisticActorImpl::forward_impl(const TensorDict& tensordict,
                                          const TensorDict& tensordict_out) {
  TensorDictSequentialImpl::forward_impl(tensordict, tensordict_out);
  if (!spec_) return;
  const auto& key = probabilistic_module()->sample_key();
  if (!is_selected(key) || !tensordict_out.contains(key)) return;
  const auto action = tensordict_out.get(key);
  const auto& expected = spec_->shape();
  const auto ndim = static_cast<int64_t>(expected.size());
  TDRL_CHECK(!(action.dim() < ndim || action.sizes().slice(action.dim() - ndim).vec() != expected),
             ShapeError, "ProbabilisticActor: action ", key.to_string(), " has shape ",
             shape_str(action.sizes()), "; the action spec expects trailing dims ",
             shape_str(expected), " (make the network's output match the env's action spec)");
  if (safe_ && !spec_->is_in(action)) tensordict_out.set(key, spec_->project(action));
}

// ---- ValueOperator -------------------------------------------------------------------------

tdnn::TensorDictModuleOptions ValueOperatorImpl::module_options(const ValueOperatorOptions& o) {
  auto out_keys = o.out_keys();
  if (out_keys.empty()) {
    const auto& in = o.in_keys();
    const bool reads_action = std::find(in.begin(), in.end(), NestedKey("action")) != in.end();
    out_keys = {reads_action ? "state_action_value" : "state_value"};
  }
  return tdnn::TensorDictModuleOptions().in_keys(o.in_keys()).out_keys(std::move(out_keys));
}

// ---- ActorValueOperator --------------------------------------------------------------------

ActorValueOperatorImpl::ActorValueOperatorImpl(tdnn::ModulePtr<tdnn::TensorDictModuleBase> common,
                                               tdnn::ModulePtr<tdnn::TensorDictModuleBase> policy,
                                               tdnn::ModulePtr<tdnn::TensorDictModuleBase> value)
    : TensorDictSequentialImpl("ActorValueOperator",
                               Modules{std::move(common), std::move(policy), std::move(value)},
                               tdnn::TensorDictSequentialOptions()) {}

std::shared_ptr<tdnn::TensorDictModuleBase> ActorValueOperatorImpl::get_common_operator() const {
  return module_list()[0];
}
std::shared_ptr<tdnn::TensorDictModuleBase> ActorValueOperatorImpl::get_policy_head() const {
  return module_list()[1];
}
std::shared_ptr<tdnn::TensorDictModuleBase> ActorValueOperatorImpl::get_value_head() const {
  return module_list()[2];
}

tdnn::TensorDictSequential ActorValueOperatorImpl::get_policy_operator() const {
  const auto head = get_policy_head();
  if (auto probabilistic =
          std::dynamic_pointer_cast<tdnn::ProbabilisticTensorDictSequentialImpl>(head)) {
    // Flattened, so that the last module is the probabilistic one and get_dist works.
    Modules modules{get_common_operator()};
    const auto& inner = probabilistic->module_list();
    modules.insert(modules.end(), inner.begin(), inner.end());
    // Converted first: the holder's constructor only adopts a shared_ptr of its exact type
    // (any other argument would be wrapped into a new sequence).
    std::shared_ptr<TensorDictSequentialImpl> impl =
        std::make_shared<tdnn::ProbabilisticTensorDictSequentialImpl>(std::move(modules));
    return tdnn::TensorDictSequential(std::move(impl));
  }
  return tdnn::TensorDictSequential(
      std::make_shared<TensorDictSequentialImpl>(Modules{get_common_operator(), head}));
}

tdnn::TensorDictSequential ActorValueOperatorImpl::get_value_operator() const {
  return tdnn::TensorDictSequential(
      std::make_shared<TensorDictSequentialImpl>(Modules{get_common_operator(), get_value_head()}));
}

}  // namespace tdrl::modules
