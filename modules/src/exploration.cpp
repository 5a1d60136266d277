// ExplorationModuleBase: the checks, annealing and forward every exploration module shares.

#include <tdrl/modules/exploration.h>

#include <cmath>
#include <sstream>
#include <string>
#include <utility>

#include "detail/exploration_util.h"

namespace tdrl::modules {

namespace {

// "[0, 1]", "[0, inf)": the range of an annealed scale, for messages.
std::string scale_range(double max) {
  if (std::isinf(max)) return "[0, inf)";
  std::ostringstream os;
  os << "[0, " << max << "]";
  return os.str();
}

}  // namespace

ExplorationModuleBase::ExplorationModuleBase(std::string name, tdrl::specs::TensorSpecPtr spec,
                                             tensordict::NestedKey action_key, ActionKind kind,
                                             AnnealedScale scale)
    : TensorDictModuleBase(std::move(name)),
      spec_(std::move(spec)),
      action_key_(std::move(action_key)),
      kind_(kind),
      schedule_(std::move(scale)) {
  detail::require_spec(spec_, this->name(), kind_ == ActionKind::kContinuous);
  detail::check_schedule(this->name(), schedule_.name, schedule_.init, schedule_.end,
                         schedule_.annealing_num_steps, schedule_.max, scale_range(schedule_.max));
  scale_ = register_buffer(schedule_.name, detail::scalar_buffer(schedule_.init));
}

void ExplorationModuleBase::step(int64_t frames) {
  detail::anneal(scale_, schedule_.init, schedule_.end, schedule_.annealing_num_steps, frames,
                 name());
}

double ExplorationModuleBase::scale() const { return scale_.item<double>(); }

void ExplorationModuleBase::forward_impl(const TensorDict& tensordict,
                                         const TensorDict& tensordict_out) {
  if (!detail::exploring()) {
    detail::pass_through(tensordict, tensordict_out, action_key_);
    return;
  }
  const std::string where = forward_where();
  check_in_keys(tensordict, where);
  const torch::Tensor action = tensordict.get(action_key_);
  detail::check_action_shape(where, action_key_, action, *spec_);
  if (kind_ == ActionKind::kContinuous) detail::check_floating(where, action_key_, action);
  explore(tensordict, tensordict_out, action);
}

}  // namespace tdrl::modules
