// QValueModule and QValueActor: greedy policies over action values.

#include <tdrl/modules/q_value.h>

#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

#include <tensordict/errors.h>

#include "detail/names.h"

namespace tdrl::modules {

namespace tdnn = tensordict::nn;

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
  TDRL_CHECK(!(action_space_ != "one_hot" && action_space_ != "categorical"), ValueError,
             "QValueModule: action_space is '", action_space_,
             "'; valid: 'one_hot', 'categorical'");
  TDRL_CHECK(!(from_spec && *from_spec != action_space_), ValueError,
             "QValueModule: action_space '", action_space_, "' contradicts the ",
             options_.spec()->type_name(), " spec ('", *from_spec, "'); drop one of them");
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
  TDRL_CHECK(values.dim() == batch_dims + 1, ShapeError, "QValueModule: action values ",
             value_key.to_string(), " have shape ", shape_str(values.sizes()),
             "; expected [*batch, n] with batch ", shape_str(tensordict.batch_size()));
  const int64_t n = values.size(-1);
  if (const auto& spec = options_.spec()) {
    const int64_t spec_n = action_space_ == "one_hot"
                               ? std::static_pointer_cast<specs::OneHot>(spec)->n()
                               : std::static_pointer_cast<specs::Categorical>(spec)->n();
    TDRL_CHECK(spec_n == n, ShapeError, "QValueModule: action values ", value_key.to_string(),
               " have ", std::to_string(n),
               " entries per row; the action spec has n=", std::to_string(spec_n));
  }
  // argmax treats NaN as the largest value: a diverged Q-network would pick its action.
  const auto nan = torch::isnan(values);
  if (nan.any().item<bool>()) {
    const auto first = nan.any(-1).reshape({-1}).nonzero()[0].item<int64_t>();
    throw ValueError("QValueModule: action values " + value_key.to_string() +
                     " hold NaN (first in batch element " + std::to_string(first) + " of " +
                     shape_str(tensordict.batch_size()) +
                     "); no action is chosen from them. The Q-network diverged or its input is "
                     "not finite: check the observations, lower the learning rate or clip the "
                     "gradients");
  }
  torch::Tensor scores = values;
  if (const auto& mask_key = options_.action_mask_key()) {
    const auto mask = tensordict.get(*mask_key);
    TDRL_CHECK(!(mask.sizes() != values.sizes() || mask.scalar_type() != torch::kBool), ShapeError,
               "QValueModule: action mask ", mask_key->to_string(), " is ", shape_str(mask.sizes()),
               " ", std::string(c10::toString(mask.scalar_type())), "; expected bool ",
               shape_str(values.sizes()));
    TDRL_CHECK(!(n > 0 && !mask.any(-1).all().item<bool>()), ValueError,
               "QValueModule: action mask ", mask_key->to_string(),
               " has a row with no allowed action");
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
