// EGreedyModule: epsilon-greedy exploration over discrete action specs.

#include <tdrl/modules/egreedy.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include <torch/types.h>

#include <tensordict/errors.h>

#include "detail/exploration_util.h"

namespace tdrl::modules {

using detail::expand_right;
using detail::fmt;
using detail::holder_of;
using detail::spec_repr;
using detail::to_c10;

EGreedyModuleImpl::EGreedyModuleImpl(tdrl::specs::TensorSpecPtr action_spec,
                                     EGreedyModuleOptions options)
    : ExplorationModuleBase(
          "EGreedyModule", std::move(action_spec), options.action_key(), ActionKind::kDiscrete,
          {"eps", options.eps_init(), options.eps_end(), options.annealing_num_steps(), 1.0}),
      options_(std::move(options)) {
  std::vector<NestedKey> in_keys{options_.action_key()};
  if (options_.action_mask_key()) {
    const bool maskable = dynamic_cast<const tdrl::specs::Categorical*>(spec().get()) ||
                          dynamic_cast<const tdrl::specs::OneHot*>(spec().get());
    TDRL_CHECK(maskable, ValueError, name(), ": action_mask_key ",
               options_.action_mask_key()->to_string(),
               " needs a Categorical or OneHot action spec, got ", spec_repr(*spec()),
               "; drop the mask key or use a discrete spec");
    in_keys.push_back(*options_.action_mask_key());
  }
  set_keys(std::move(in_keys), {options_.action_key()});
}

void EGreedyModuleImpl::explore(const TensorDict& tensordict, const TensorDict& tensordict_out,
                                const torch::Tensor& action) {
  const NestedKey& key = action_key();
  // One draw per batch element of the TensorDict holding the action; a one-hot vector's last
  // dim is never a batch dim.
  const bool one_hot = dynamic_cast<const tdrl::specs::OneHot*>(spec().get()) != nullptr;
  const int64_t batch_dims =
      std::min<int64_t>(holder_of(tensordict, key).batch_dims(), action.dim() - (one_hot ? 1 : 0));
  const std::vector<int64_t> cond_shape(action.sizes().begin(),
                                        action.sizes().begin() + batch_dims);
  const auto generator = to_c10(options_.generator());
  const torch::Tensor replace =
      torch::rand(cond_shape, generator, torch::TensorOptions().device(action.device())) < eps();
  const torch::Tensor random = random_actions(tensordict, action, replace);
  tensordict_out.set(key, torch::where(expand_right(replace, action.dim()), random, action));
}

torch::Tensor EGreedyModuleImpl::random_actions(const TensorDict& tensordict,
                                                const torch::Tensor& action,
                                                const torch::Tensor& replace) const {
  const auto out_options = torch::TensorOptions().dtype(action.dtype()).device(action.device());
  if (!options_.action_mask_key()) {
    return spec()->expand(action.sizes().vec())->rand(options_.generator()).to(out_options);
  }
  const std::string where = forward_where();
  const NestedKey& mask_key = *options_.action_mask_key();
  const torch::Tensor mask = tensordict.get(mask_key);
  const auto* categorical = dynamic_cast<const tdrl::specs::Categorical*>(spec().get());
  const int64_t n =
      categorical ? categorical->n() : dynamic_cast<const tdrl::specs::OneHot&>(*spec()).n();
  if (mask.scalar_type() != torch::kBool) {
    std::ostringstream os;
    os << where << ": action mask " << mask_key.to_string() << " has dtype " << mask.dtype()
       << "; it must be bool (true = allowed)";
    throw TypeError(os.str());
  }
  // Each row of the mask holds the n choices of one action element.
  std::vector<int64_t> rows_shape = action.sizes().vec();
  if (!categorical) rows_shape.pop_back();
  std::vector<int64_t> expected = rows_shape;
  expected.push_back(n);
  TDRL_CHECK(mask.sizes().vec() == expected, ShapeError, where, ": action mask ",
             mask_key.to_string(), " has shape ", shape_str(mask.sizes()), "; expected ",
             shape_str(expected), " (the action's elements by the ", std::to_string(n),
             " actions)");
  const torch::Tensor rows = mask.reshape({-1, n});
  const torch::Tensor allowed_any = rows.any(-1);
  const torch::Tensor replaced_rows =
      expand_right(replace, static_cast<int64_t>(rows_shape.size())).expand(rows_shape).reshape(-1);
  const torch::Tensor stuck = replaced_rows.logical_and(allowed_any.logical_not());
  if (stuck.any().item<bool>()) {
    const int64_t flat = stuck.nonzero().index({0, 0}).item<int64_t>();
    std::vector<int64_t> index(rows_shape.size());
    int64_t rest = flat;
    for (int64_t d = static_cast<int64_t>(rows_shape.size()) - 1; d >= 0; --d) {
      index[d] = rest % rows_shape[d];
      rest /= rows_shape[d];
    }
    throw ValueError(where + ": action mask " + mask_key.to_string() +
                     " allows no action at index " + shape_str(index) +
                     ", which was drawn for exploration; every masked " +
                     "element needs at least one allowed action");
  }
  // Rows with no allowed action are never used; give them uniform weights so that multinomial
  // accepts them.
  const torch::Tensor weights =
      rows.to(torch::kFloat).masked_fill(allowed_any.logical_not().unsqueeze(-1), 1.0);
  const torch::Tensor index =
      torch::multinomial(weights, 1, /*replacement=*/true, to_c10(options_.generator()))
          .reshape(rows_shape);
  if (categorical) return index.to(out_options);
  return torch::one_hot(index, n).to(out_options);
}

void EGreedyModuleImpl::print_to(std::ostream& stream) const {
  stream << name() << "(eps=" << fmt(eps()) << ", eps_init=" << fmt(options_.eps_init())
         << ", eps_end=" << fmt(options_.eps_end())
         << ", annealing_num_steps=" << options_.annealing_num_steps()
         << ", action_key=" << options_.action_key().to_string() << ", action_mask_key="
         << (options_.action_mask_key() ? options_.action_mask_key()->to_string() : "None")
         << ", spec=" << spec_repr(*spec()) << ")";
}

}  // namespace tdrl::modules
