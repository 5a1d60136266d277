#include <tdrl/replay/component.h>

#include "detail/checks.h"

namespace tdrl::replay {

TensorDict ReplayComponent::state_dict() const {
  TensorDict state;
  state.set("kind", name());
  state_dict_impl(state);
  return state;
}

std::function<void()> ReplayComponent::prepare_load_state_dict(const TensorDict& state) {
  detail::check_type(state, name(), op("load_state_dict"));
  return prepare_load_impl(state);
}

std::ostream& operator<<(std::ostream& os, const ReplayComponent& component) {
  return os << component.to_string();
}

}  // namespace tdrl::replay
