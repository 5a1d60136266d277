#pragma once

// Helpers shared by ExplorationModuleBase (exploration.cpp: the spec and schedule checks, the
// annealing, forward's action checks) and the three modules built on it (their own option
// checks and printing).

#include <algorithm>
#include <cstdint>
#include <iomanip>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <torch/types.h>
#include <torch/utils.h>

#include <tdrl/specs/tensor_spec.h>
#include <tensordict/errors.h>
#include <tensordict/nested_key.h>
#include <tensordict/nn/interaction_type.h>
#include <tensordict/tensor_dict.h>

#include "names.h"

namespace tdrl::modules::detail {

// A double as Python prints it in a repr: "1.0", "0.1", "0.01".
inline std::string fmt(double value) {
  std::ostringstream os;
  os << std::setprecision(6) << value;
  std::string out = os.str();
  if (out.find_first_of(".eni") == std::string::npos) out += ".0";
  return out;
}

inline std::string spec_repr(const tdrl::specs::TensorSpec& spec) {
  return spec.type_name() + "(shape=" + shape_str(spec.shape()) + ")";
}

// LibTorch 1.13 takes c10::optional generators; the options hold std::optional.
inline c10::optional<at::Generator> to_c10(const std::optional<torch::Generator>& generator) {
  if (generator) return *generator;
  return c10::nullopt;
}

// Exploration happens only under an explicit kRandom interaction type.
inline bool exploring() {
  return tensordict::nn::interaction_type() == tensordict::nn::InteractionType::kRandom;
}

inline void require_spec(const tdrl::specs::TensorSpecPtr& spec, const std::string& name,
                         bool continuous) {
  TDRL_CHECK(spec, ValueError, name, ": the action spec is null; pass the env's action spec (e.g. ",
             "std::make_shared<tdrl::envs::Bounded>(...))");
  TDRL_CHECK(!(continuous && !spec->is_continuous()), ValueError, name, ": the action spec ",
             spec_repr(*spec),
             " is discrete; this module adds real-valued noise and needs a continuous ",
             "spec (Bounded or Unbounded with a floating dtype); use EGreedyModule for ",
             "discrete actions");
}

// Throws ValueError unless lo <= value <= hi (NaN fails).
inline void check_in_range(const std::string& name, const std::string& option, double value,
                           double lo, double hi, const std::string& range) {
  TDRL_CHECK(value >= lo && value <= hi, ValueError, name, ": ", option, " is ", fmt(value),
             "; it must be in ", range);
}

inline void check_at_least(const std::string& name, const std::string& option, int64_t value,
                           int64_t min) {
  TDRL_CHECK(!(value < min), ValueError, name, ": ", option, " is ", std::to_string(value),
             "; it must be >= ", std::to_string(min));
}

// Checks a linear schedule init -> end: end <= init, both in [0, max] (`range` prints it).
inline void check_schedule(const std::string& name, const std::string& what, double init,
                           double end, int64_t steps, double max, const std::string& range) {
  check_in_range(name, what + "_init", init, 0.0, max, range);
  check_in_range(name, what + "_end", end, 0.0, max, range);
  TDRL_CHECK(!(end > init), ValueError, name, ": ", what, "_end (", fmt(end), ") is greater than ",
             what, "_init (", fmt(init), "); ", what, " must decrease over time or stay constant");
  check_at_least(name, "annealing_num_steps", steps, 1);
}

// One scalar float64 buffer holding an annealed value.
inline torch::Tensor scalar_buffer(double value) { return torch::tensor(value, torch::kFloat64); }

// value <- max(end, value - frames * (init - end) / steps).
inline void anneal(const torch::Tensor& buffer, double init, double end, int64_t steps,
                   int64_t frames, const std::string& name) {
  TDRL_CHECK(!(frames < 0), ValueError, name, "::step: frames is ", std::to_string(frames),
             "; pass frames >= 0 (the number of frames collected since the last step)");
  const double next = buffer.item<double>() -
                      static_cast<double>(frames) * (init - end) / static_cast<double>(steps);
  torch::NoGradGuard no_grad;
  buffer.fill_(std::max(end, next));
}

// The TensorDict holding `key`: its parent for a nested key.
inline TensorDict holder_of(const TensorDict& tensordict, const NestedKey& key) {
  return key.is_nested() ? tensordict.get_tensordict(key.parent()) : tensordict;
}

// Throws ShapeError unless `action`'s trailing dims equal the spec's shape.
inline void check_action_shape(const std::string& where, const NestedKey& key,
                               const torch::Tensor& action, const tdrl::specs::TensorSpec& spec) {
  const auto& expected = spec.shape();
  const auto n = static_cast<int64_t>(expected.size());
  const bool ok =
      action.dim() >= n && std::equal(expected.begin(), expected.end(), action.sizes().end() - n);
  TDRL_CHECK(ok, ShapeError, where, ": action ", key.to_string(), " has shape ",
             shape_str(action.sizes()), "; its trailing dims must equal the action spec's shape ",
             shape_str(expected), " (any leading dims are batch dims); pass an action ",
             "matching the spec, or build the module from the right spec");
}

inline void check_floating(const std::string& where, const NestedKey& key,
                           const torch::Tensor& action) {
  if (!action.is_floating_point()) {
    std::ostringstream os;
    os << where << ": action " << key.to_string() << " has dtype " << action.dtype()
       << "; this module adds real-valued noise and needs a floating action";
    throw TypeError(os.str());
  }
}

// `mask` [*lead] viewed as [*lead, 1, ...] so that it broadcasts over a tensor of `dim` dims.
inline torch::Tensor expand_right(const torch::Tensor& mask, int64_t dim) {
  std::vector<int64_t> shape = mask.sizes().vec();
  shape.resize(static_cast<size_t>(dim), 1);
  return mask.reshape(shape);
}

// Copies the (unchanged) action into a distinct output TensorDict when the module is inactive.
inline void pass_through(const TensorDict& tensordict, const TensorDict& tensordict_out,
                         const NestedKey& key) {
  if (tensordict_out.is_same(tensordict)) return;
  if (auto action = tensordict.find(key)) tensordict_out.set(key, *action);
}

}  // namespace tdrl::modules::detail
