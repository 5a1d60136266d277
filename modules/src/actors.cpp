#include <tdrl/modules/actors.h>
#include <tdrl/modules/q_value.h>

#include <algorithm>
#include <sstream>

#include <torch/torch.h>

#include <tensordict/errors.h>

namespace tdrl::modules {

using tensordict::KeyError;
using tensordict::ShapeError;
using tensordict::TensorDict;
using tensordict::ValueError;
namespace tdnn = tensordict::nn;

namespace {

std::string shape_repr(c10::IntArrayRef shape) {
  std::ostringstream os;
  os << shape;
  return os.str();
}

}  // namespace

// ---- ProbabilisticActor --------------------------------------------------------------------

ProbabilisticActorImpl::ProbabilisticActorImpl(std::shared_ptr<tdnn::TensorDictModuleBase> module,
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
  if (safe_ && !spec_) {
    throw ValueError(
        "ProbabilisticActor: safe=true needs an action spec to project into; "
        "pass the env's action spec or set safe(false)");
  }
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
  if (action.dim() < ndim || action.sizes().slice(action.dim() - ndim).vec() != expected) {
    throw ShapeError("ProbabilisticActor: action " + key.repr() + " has shape " +
                     shape_repr(action.sizes()) + "; the action spec expects trailing dims " +
                     shape_repr(expected) +
                     " (make the network's output match the env's action spec)");
  }
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

ActorValueOperatorImpl::ActorValueOperatorImpl(std::shared_ptr<tdnn::TensorDictModuleBase> common,
                                               std::shared_ptr<tdnn::TensorDictModuleBase> policy,
                                               std::shared_ptr<tdnn::TensorDictModuleBase> value)
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

// ---- QValueModule --------------------------------------------------------------------------

QValueModuleImpl::QValueModuleImpl(QValueModuleOptions options)
    : TensorDictModuleBase("QValueModule"), options_(std::move(options)) {
  std::optional<std::string> from_spec;
  if (const auto& spec = options_.spec()) {
    if (std::dynamic_pointer_cast<specs::OneHot>(spec)) {
      from_spec = "one_hot";
    } else if (std::dynamic_pointer_cast<specs::Categorical>(spec)) {
      from_spec = "categorical";
    } else {
      throw ValueError("QValueModule: the action spec is " + spec->type_name() +
                       "; a Q-value policy needs a OneHot or Categorical spec");
    }
  }
  action_space_ = options_.action_space().value_or(from_spec.value_or("one_hot"));
  if (action_space_ != "one_hot" && action_space_ != "categorical") {
    throw ValueError("QValueModule: action_space is '" + action_space_ +
                     "'; valid: 'one_hot', 'categorical'");
  }
  if (from_spec && *from_spec != action_space_) {
    throw ValueError("QValueModule: action_space '" + action_space_ + "' contradicts the " +
                     options_.spec()->type_name() + " spec ('" + *from_spec +
                     "'); drop one of them");
  }
  std::vector<NestedKey> in_keys{options_.action_value_key()};
  if (options_.action_mask_key()) in_keys.push_back(*options_.action_mask_key());
  set_keys(std::move(in_keys), {options_.action_key(), options_.action_value_key(),
                                options_.chosen_action_value_key()});
}

void QValueModuleImpl::forward_impl(const TensorDict& tensordict,
                                    const TensorDict& tensordict_out) {
  check_in_keys(tensordict, "QValueModule");
  const auto& value_key = options_.action_value_key();
  const auto values = tensordict.get(value_key);
  const int64_t batch_dims = static_cast<int64_t>(tensordict.batch_size().size());
  if (values.dim() != batch_dims + 1) {
    throw ShapeError("QValueModule: action values " + value_key.repr() + " have shape " +
                     shape_repr(values.sizes()) + "; expected [*batch, n] with batch " +
                     shape_repr(tensordict.batch_size()));
  }
  const int64_t n = values.size(-1);
  if (const auto& spec = options_.spec()) {
    const int64_t spec_n = action_space_ == "one_hot"
                               ? std::static_pointer_cast<specs::OneHot>(spec)->n()
                               : std::static_pointer_cast<specs::Categorical>(spec)->n();
    if (spec_n != n) {
      throw ShapeError("QValueModule: action values " + value_key.repr() + " have " +
                       std::to_string(n) +
                       " entries per row; the action spec has n=" + std::to_string(spec_n));
    }
  }
  torch::Tensor scores = values;
  if (const auto& mask_key = options_.action_mask_key()) {
    const auto mask = tensordict.get(*mask_key);
    if (mask.sizes() != values.sizes() || mask.scalar_type() != torch::kBool) {
      throw ShapeError("QValueModule: action mask " + mask_key->repr() + " is " +
                       shape_repr(mask.sizes()) + " " +
                       std::string(c10::toString(mask.scalar_type())) + "; expected bool " +
                       shape_repr(values.sizes()));
    }
    if (n > 0 && !mask.any(-1).all().item<bool>()) {
      throw ValueError("QValueModule: action mask " + mask_key->repr() +
                       " has a row with no allowed action");
    }
    scores = values.masked_fill(~mask, -std::numeric_limits<double>::infinity());
  }
  const auto index = scores.argmax(-1);
  const auto chosen = values.gather(-1, index.unsqueeze(-1));
  torch::Tensor action = index;
  if (action_space_ == "one_hot") {
    const auto dtype = options_.spec() ? options_.spec()->dtype() : torch::kInt64;
    action = torch::one_hot(index, n).to(dtype);
  }
  if (is_selected(options_.action_key())) tensordict_out.set(options_.action_key(), action);
  if (is_selected(value_key)) tensordict_out.set(value_key, values);
  if (is_selected(options_.chosen_action_value_key())) {
    tensordict_out.set(options_.chosen_action_value_key(), chosen);
  }
}

void QValueModuleImpl::print_to(std::ostream& stream) const {
  stream << "QValueModule(\n    action_space=" << action_space_
         << ",\n    in_keys=" << tdnn::keys_repr(in_keys())
         << ",\n    out_keys=" << tdnn::keys_repr(out_keys()) << ")";
}

// ---- QValueActor ---------------------------------------------------------------------------

QValueActorImpl::QValueActorImpl(Wrapped network, const QValueActorOptions& options)
    : TensorDictSequentialImpl(
          "QValueActor",
          Modules{std::move(network.module), std::make_shared<QValueModuleImpl>(options.qvalue())},
          tdnn::TensorDictSequentialOptions()) {}

std::shared_ptr<QValueModuleImpl> QValueActorImpl::qvalue_module() const {
  return std::static_pointer_cast<QValueModuleImpl>(module_list().back());
}

}  // namespace tdrl::modules
