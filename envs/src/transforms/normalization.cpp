// Normalization transforms: ObservationNorm, VecNorm (and its shared VecNormState).

#include <tdrl/envs/transforms/normalization.h>

#include <algorithm>
#include <numeric>

#include <torch/types.h>

#include <tensordict/errors.h>

#include "../detail/transform_util.h"

namespace tdrl::envs {

using tensordict::KeyError;
using tensordict::ShapeError;
using tensordict::ValueError;

using detail::bool_repr;

namespace {

// The rows `[n, *feature]` of `value` `[*batch, *feature]` (batch_dims leading dims), keeping
// only the rows where `rows` (bool `[*batch]` or `[*batch, 1]`) is true when it is defined.
torch::Tensor sample_rows(const torch::Tensor& value, int64_t batch_dims,
                          const torch::Tensor& rows) {
  if (rows.defined()) {
    auto mask = rows;
    if (mask.dim() == batch_dims + 1) mask = mask.squeeze(-1);
    return value.index({mask});
  }
  std::vector<int64_t> shape{-1};
  for (int64_t d = batch_dims; d < value.dim(); ++d) shape.push_back(value.size(d));
  return value.reshape(shape);
}

}  // namespace

// ---- ObservationNorm -------------------------------------------------------------------------

ObservationNorm::ObservationNorm(ObservationNormOptions options)
    : KeyedTransform("ObservationNorm", options, Inverse::kNone), options_(std::move(options)) {
  TDRL_CHECK(options_.loc().defined() == options_.scale().defined(), ValueError,
             "ObservationNorm: ", std::string(options_.loc().defined() ? "loc" : "scale"),
             " is given but ", (options_.loc().defined() ? "scale" : "loc"),
             " is not; give both, or neither and call init_stats");
  TDRL_CHECK(options_.eps() >= 0, ValueError, "ObservationNorm: eps is ",
             detail::number_repr(options_.eps()), "; it must be >= 0");
  if (options_.loc().defined()) {
    TensorDict state({{"loc", options_.loc()}, {"scale", options_.scale()}});
    load_state_dict(state);
  }
}

std::string ObservationNorm::to_string() const {
  // out_keys are always shown, as TorchRL prints them.
  return "ObservationNorm(in_keys=" + detail::keys_repr(in_keys()) +
         ", out_keys=" + detail::keys_repr(out_keys()) +
         ", standard_normal=" + bool_repr(options_.standard_normal()) +
         ", initialized=" + bool_repr(initialized()) + ")";
}

torch::Tensor ObservationNorm::apply(const torch::Tensor& x) const {
  const auto loc = loc_.to(x.device(), x.scalar_type());
  const auto scale = scale_.to(x.device(), x.scalar_type());
  return options_.standard_normal() ? (x - loc) / scale : x * scale + loc;
}

torch::Tensor ObservationNorm::apply_transform(const torch::Tensor& value, const NestedKey&) {
  TDRL_CHECK(initialized(), tensordict::Error,
             "ObservationNorm: loc and scale are not set; give them in "
             "ObservationNormOptions or call init_stats(num_iter) first");
  return apply(value);
}

specs::CompositePtr ObservationNorm::transform_observation_spec(specs::CompositePtr spec,
                                                                const EnvSpecs& input) {
  // Observations only: a missing key is reported against the observation spec.
  for (const auto& key : in_keys()) {
    const auto in = input.observation->find_value(key);
    if (!in || !std::holds_alternative<specs::TensorSpecPtr>(*in)) {
      detail::throw_missing("ObservationNorm", "in_key", key, detail::leaf_keys(*input.observation),
                            "observation");
    }
  }
  return KeyedTransform::transform_observation_spec(std::move(spec), input);
}

specs::TensorSpecPtr ObservationNorm::transform_output_leaf(const specs::TensorSpecPtr& spec,
                                                            const NestedKey& in_key,
                                                            const EnvSpecs&) {
  detail::require_floating(*spec, "ObservationNorm", in_key);
  const auto* b = dynamic_cast<const specs::Bounded*>(spec.get());
  if (!b || !initialized()) return detail::unbounded_like(*spec);
  const auto x = apply(b->low());
  const auto y = apply(b->high());
  return detail::bounded(torch::minimum(x, y), torch::maximum(x, y), spec->shape(), spec->dtype(),
                         spec->device());
}

void ObservationNorm::init_stats(int64_t num_iter, std::optional<NestedKey> key) {
  const std::string where = "ObservationNorm::init_stats";
  TDRL_CHECK(!initialized(), tensordict::Error, where,
             ": loc and scale are already set; build the transform "
             "without them to estimate them");
  TDRL_CHECK(!(num_iter < 2), ValueError, where, ": num_iter is ", std::to_string(num_iter),
             "; it must be >= 2 to estimate a standard deviation");
  if (!key) {
    TDRL_CHECK(options_.in_keys().size() == 1, ValueError, where, ": the transform has ",
               std::to_string(options_.in_keys().size()), " in_keys ",
               detail::keys_repr(options_.in_keys()),
               "; pass the key to compute the statistics on");
    key = options_.in_keys().front();
  }
  TDRL_CHECK(parent(), tensordict::Error, where,
             ": the transform is in no env; add it to a TransformedEnv "
             "first (the statistics come from the env's rollouts)");
  const auto env = parent()->env_before(*this);
  if (!env->observation_spec()->find_value(*key)) {
    detail::throw_missing(where, "key", *key, detail::leaf_keys(*env->observation_spec()),
                          "observation");
  }
  const TensorDict data =
      env->rollout(num_iter, nullptr, RolloutOptions().break_when_any_done(false));
  const torch::Tensor values = data.get(*key).to(torch::kFloat64);
  std::vector<int64_t> dims(static_cast<size_t>(data.batch_dims()));
  std::iota(dims.begin(), dims.end(), 0);
  const auto mean = values.mean(dims);
  const auto std = values.std(dims, /*unbiased=*/true).clamp_min(options_.eps());
  const auto dtype = data.get(*key).scalar_type();
  if (options_.standard_normal()) {
    loc_ = mean.to(dtype);
    scale_ = std.to(dtype);
  } else {
    scale_ = (1.0 / std).to(dtype);
    loc_ = (-mean / std).to(dtype);
  }
  parent()->refresh_specs();
}

TensorDict ObservationNorm::state_dict() const {
  if (!initialized()) return TensorDict();
  return TensorDict({{"loc", loc_.clone()}, {"scale", scale_.clone()}});
}

void ObservationNorm::load_state_dict(const TensorDict& state) {
  const std::string where = "ObservationNorm::load_state_dict";
  for (const char* name : {"loc", "scale"}) {
    TDRL_CHECK(state.contains(name), KeyError, where, ": the state has no '", std::string(name),
               "' entry; keys: ", detail::keys_repr(state.keys()));
  }
  const auto loc = state.get("loc");
  const auto scale = state.get("scale");
  TDRL_CHECK(!((scale == 0).any().item<bool>()), ValueError, where,
             ": scale has a zero element; the map would not be invertible");
  loc_ = loc.clone();
  scale_ = scale.clone();
  if (parent()) parent()->refresh_specs();
}

// ---- VecNormState ----------------------------------------------------------------------------

VecNormState::Stats* VecNormState::find(const NestedKey& key) {
  for (auto& entry : stats_) {
    if (entry.first == key) return &entry.second;
  }
  return nullptr;
}

const VecNormState::Stats* VecNormState::find(const NestedKey& key) const {
  return const_cast<VecNormState*>(this)->find(key);
}

std::pair<torch::Tensor, torch::Tensor> VecNormState::moments(const Stats& stats, double eps) {
  const auto mean = stats.sum / stats.count;
  return {mean, (stats.ssq / stats.count - mean.square()).clamp_min_(eps).sqrt_()};
}

torch::Tensor VecNormState::update_and_normalize(const NestedKey& key, const torch::Tensor& value,
                                                 const torch::Tensor& samples, double decay,
                                                 double eps) {
  std::lock_guard<std::mutex> lock(mutex_);
  Stats* stats = find(key);
  if (samples.defined() && samples.size(0) > 0) {
    const auto s = samples.to(torch::kFloat64);
    const auto feature = s.sizes().slice(1);
    TDRL_CHECK(!(stats && !stats->sum.sizes().equals(feature)), ShapeError,
               "VecNorm: ", key.to_string(), " has feature shape ", tensordict::shape_str(feature),
               " but its statistics have shape ", tensordict::shape_str(stats->sum.sizes()),
               "; a shared state needs the same shapes in every env");
    if (!stats) {
      stats_.emplace_back(
          key, Stats{torch::zeros(feature, s.options()), torch::zeros(feature, s.options()), 0.0});
      stats = &stats_.back().second;
    }
    // The statistics are owned here (state_dict hands out copies): update in place.
    stats->sum.mul_(decay).add_(s.sum(0));
    stats->ssq.mul_(decay).add_(s.square().sum(0));
    stats->count = stats->count * decay + static_cast<double>(s.size(0));
  } else if (!stats) {
    throw KeyError("VecNorm: no statistics for " + key.to_string() +
                   " yet (frozen before any update); unfreeze it or load a state_dict");
  }
  const auto [mean, std] = moments(*stats, eps);
  return (value - mean.to(value.device(), value.scalar_type())) /
         std.to(value.device(), value.scalar_type());
}

bool VecNormState::contains(const NestedKey& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return find(key) != nullptr;
}

std::pair<torch::Tensor, torch::Tensor> VecNormState::mean_std(const NestedKey& key,
                                                               double eps) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const Stats* stats = find(key);
  if (!stats) {
    std::vector<NestedKey> keys;
    for (const auto& entry : stats_) keys.push_back(entry.first);
    throw KeyError("VecNormState::mean_std: no statistics for " + key.to_string() +
                   "; keys: " + detail::keys_repr(keys));
  }
  return moments(*stats, eps);
}

TensorDict VecNormState::state_dict() const {
  std::lock_guard<std::mutex> lock(mutex_);
  TensorDict state;
  for (const auto& [key, stats] : stats_) {
    state.set(key.join("sum"), stats.sum.clone());
    state.set(key.join("ssq"), stats.ssq.clone());
    state.set(key.join("count"), torch::tensor(stats.count, torch::kFloat64));
  }
  return state;
}

void VecNormState::load_state_dict(const TensorDict& state) {
  const std::string where = "VecNormState::load_state_dict";
  // Every group holding a "sum", "ssq" or "count" leaf must hold all three, consistently.
  std::vector<NestedKey> groups;
  for (const auto& key : state.keys(/*include_nested=*/true, /*leaves_only=*/true)) {
    const auto& last = key.back();
    TDRL_CHECK(!(last != "sum" && last != "ssq" && last != "count"), KeyError, where,
               ": unexpected entry ", key.to_string(),
               "; statistics are groups {\"sum\", \"ssq\", \"count\"} under each key");
    TDRL_CHECK(key.is_nested(), KeyError, where, ": entry ", key.to_string(),
               " is not under a key; expected ", "{key: {\"sum\", \"ssq\", \"count\"}}");
    const auto group = key.parent();
    if (std::find(groups.begin(), groups.end(), group) == groups.end()) groups.push_back(group);
  }
  std::vector<std::pair<NestedKey, Stats>> loaded;
  for (const auto& group : groups) {
    for (const char* name : {"sum", "ssq", "count"}) {
      TDRL_CHECK(state.contains(group.join(name)), KeyError, where, ": the statistics of ",
                 group.to_string(), " lack '", name, "'");
    }
    const auto sum = state.get(group.join("sum"));
    const auto ssq = state.get(group.join("ssq"));
    const auto count = state.get(group.join("count"));
    TDRL_CHECK(sum.sizes().equals(ssq.sizes()) && count.numel() == 1, ShapeError, where,
               ": the statistics of ", group.to_string(), " have sum ",
               tensordict::shape_str(sum.sizes()), ", ssq ", tensordict::shape_str(ssq.sizes()),
               ", count ", tensordict::shape_str(count.sizes()),
               "; sum and ssq must share a shape and count must be a scalar");
    loaded.emplace_back(group,
                        Stats{sum.to(torch::kFloat64, false, /*copy=*/true),
                              ssq.to(torch::kFloat64, false, /*copy=*/true), count.item<double>()});
  }
  std::lock_guard<std::mutex> lock(mutex_);
  stats_ = std::move(loaded);
}

// ---- VecNorm ---------------------------------------------------------------------------------

VecNorm::VecNorm(VecNormOptions options)
    : KeyedTransform("VecNorm", options, Inverse::kNone),
      options_(std::move(options)),
      state_(options_.shared_state() ? options_.shared_state() : std::make_shared<VecNormState>()) {
  TDRL_CHECK(options_.decay() > 0 && options_.decay() <= 1, ValueError, "VecNorm: decay is ",
             detail::number_repr(options_.decay()), "; it must be in (0, 1]");
  TDRL_CHECK(options_.eps() > 0, ValueError, "VecNorm: eps is ",
             detail::number_repr(options_.eps()), "; it must be > 0");
}

std::string VecNorm::to_string() const {
  return "VecNorm(" + keys_to_string() + ", decay=" + detail::number_repr(options_.decay()) +
         ", eps=" + detail::number_repr(options_.eps()) + ", frozen=" + bool_repr(frozen_) + ")";
}

TensorDict VecNorm::normalize(TensorDict td, const torch::Tensor& rows) {
  const int64_t batch_dims = td.batch_dims();
  return map_outputs(std::move(td), [&](const torch::Tensor& value, const NestedKey& key) {
    const auto samples = frozen_ ? torch::Tensor() : sample_rows(value, batch_dims, rows);
    return state_->update_and_normalize(key, value, samples, options_.decay(), options_.eps());
  });
}

TensorDict VecNorm::call(TensorDict td) { return normalize(std::move(td), torch::Tensor()); }

TensorDict VecNorm::reset(const TensorDict& input, TensorDict output) {
  return write_reward_copies(
      input, normalize(std::move(output), input.get_or(specs::kReset, torch::Tensor())));
}

specs::TensorSpecPtr VecNorm::transform_output_leaf(const specs::TensorSpecPtr& spec,
                                                    const NestedKey& in_key, const EnvSpecs&) {
  detail::require_floating(*spec, "VecNorm", in_key);
  return detail::unbounded_like(*spec);
}

TensorDict VecNorm::state_dict() const { return state_->state_dict(); }

void VecNorm::load_state_dict(const TensorDict& state) { state_->load_state_dict(state); }

}  // namespace tdrl::envs
