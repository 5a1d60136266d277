// ClassicControlEnv: the shared machinery of the classic-control tasks.

#include <tdrl/envs/classic_control_env.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

#include <tensordict/errors.h>

#include "detail/classic_control_util.h"

namespace tdrl::envs {

using tensordict::shape_str;
using tensordict::ShapeError;
using tensordict::TypeError;
using tensordict::ValueError;

using detail::append;
using detail::device_str;
using detail::number;

ClassicControlEnv::ClassicControlEnv(std::string name, const EnvBaseOptions& options,
                                     int64_t max_episode_steps, Layout layout, bool mask_velocity,
                                     RenderOptions render)
    : EnvBase(std::move(name), options),
      layout_(std::move(layout)),
      mask_velocity_(mask_velocity),
      max_episode_steps_(max_episode_steps),
      num_envs_(1) {
  TDRL_CHECK(!(max_episode_steps < 0), ValueError, this->name(), ": option max_episode_steps is ",
             std::to_string(max_episode_steps), "; it must be >= 0 (0 = no time limit)");
  TDRL_CHECK(!render.from_pixels() || drawing::available(), std::runtime_error, this->name(),
             ": from_pixels needs frames, and this build of tdrl draws none (configured "
             "without cairo); install libcairo2-dev and configure again");
  set_render_options(render);
  const auto dim = static_cast<size_t>(layout_.state_dim);
  TORCH_INTERNAL_ASSERT(layout_.state_names.size() == dim && layout_.state_low.size() == dim &&
                        layout_.state_high.size() == dim && layout_.init_low.size() == dim &&
                        layout_.init_high.size() == dim);
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < layout_.obs_dim; ++i) {
    const auto& v = layout_.velocity_obs;
    if (!mask_velocity_ || std::find(v.begin(), v.end(), i) == v.end()) kept.push_back(i);
  }
  kept_obs_ = torch::tensor(kept, torch::kInt64);
  for (auto d : batch_size()) num_envs_ *= d;
  state_.assign(static_cast<size_t>(num_envs_ * layout_.state_dim), 0.0);
  elapsed_.assign(static_cast<size_t>(num_envs_), 0);
  terminated_before_.assign(static_cast<size_t>(num_envs_), 0);
}

std::vector<int64_t> ClassicControlEnv::with_trailing(int64_t dim) const {
  return append(batch_size(), dim);
}

bool ClassicControlEnv::save_state(TensorDict& state) const {
  state.set("state", this->state());
  state.set("elapsed_steps", elapsed_steps());
  const auto terminated =
      torch::from_blob(const_cast<uint8_t*>(terminated_before_.data()), {num_envs_}, torch::kUInt8);
  state.set("terminated", terminated.to(torch::kBool).reshape(batch_size()));
  return true;
}

void ClassicControlEnv::load_state(const TensorDict& state) {
  // Every entry is checked before the first is applied.
  const auto physical =
      state_entry(state, "state", with_trailing(layout_.state_dim), torch::kFloat64);
  const auto elapsed = state_entry(state, "elapsed_steps", batch_size(), torch::kInt64);
  const auto terminated = state_entry(state, "terminated", batch_size(), torch::kBool);
  set_state(physical);
  const auto steps = elapsed.contiguous();
  elapsed_.assign(steps.data_ptr<int64_t>(), steps.data_ptr<int64_t>() + num_envs_);
  const auto flags = terminated.to(torch::kUInt8).contiguous();
  terminated_before_.assign(flags.data_ptr<uint8_t>(), flags.data_ptr<uint8_t>() + num_envs_);
}

torch::Tensor ClassicControlEnv::state() const {
  return torch::tensor(state_, torch::kFloat64).reshape(with_trailing(layout_.state_dim));
}

void ClassicControlEnv::set_state(const torch::Tensor& state) {
  const std::string where = name() + "::set_state";
  TDRL_CHECK(state.defined(), ValueError, where, ": the state tensor is undefined");
  const auto expected = with_trailing(layout_.state_dim);
  TDRL_CHECK(state.sizes().vec() == expected, ShapeError, where, ": the state has shape ",
             shape_str(state.sizes()), "; expected ", shape_str(expected),
             " (batch_size followed by the ", std::to_string(layout_.state_dim),
             " state components)");
  TDRL_CHECK(state.is_floating_point(), TypeError, where, ": the state has dtype ",
             std::string(c10::toString(state.scalar_type())),
             "; expected a floating dtype (float64 keeps it exact)");
  const auto values = state.to(torch::kCPU, torch::kFloat64).contiguous();
  const double* src = values.data_ptr<double>();
  const int64_t dim = layout_.state_dim;
  for (int64_t i = 0; i < num_envs_; ++i) {
    for (int64_t j = 0; j < dim; ++j) {
      const double v = src[i * dim + j];
      const double low = layout_.state_low[static_cast<size_t>(j)];
      const double high = layout_.state_high[static_cast<size_t>(j)];
      if (std::isfinite(v) && v >= low && v <= high) continue;
      std::string message = where + ": sub-env " + std::to_string(i) + " component " +
                            std::to_string(j) + " (" + layout_.state_names[static_cast<size_t>(j)] +
                            ") is " + number(v);
      if (!std::isfinite(v)) {
        message += "; every component must be finite";
      } else {
        message += ", outside [" + number(low) + ", " + number(high) + "]";
      }
      throw ValueError(message);
    }
  }
  std::copy(src, src + num_envs_ * dim, state_.begin());
}

torch::Tensor ClassicControlEnv::observe_all() const {
  auto obs = torch::empty(with_trailing(layout_.obs_dim), torch::kFloat32);
  observe(state_.data(), num_envs_, obs.data_ptr<float>());
  return mask_velocity_ ? obs.index_select(-1, kept_obs_) : obs;
}

int64_t ClassicControlEnv::observation_dim() const { return kept_obs_.numel(); }

torch::Tensor ClassicControlEnv::render_impl() {
  const auto w = render_options()->width();
  const auto h = render_options()->height();
  auto shape = batch_size();
  shape.insert(shape.end(), {h, w, 3});
  auto frames = torch::empty(shape, torch::kUInt8);
  // Each sub-env's picture straight into its slice of the batch.
  auto* out = frames.data_ptr<uint8_t>();
  for (int64_t i = 0; i < num_envs_; ++i)
    drawing::to_rgb(draw(state_.data() + i * layout_.state_dim), w, h, out + i * h * w * 3);
  return frames;
}

void ClassicControlEnv::set_task_observation_spec(const specs::CompositePtr& full) {
  if (!mask_velocity_) {
    set_observation_spec(full);
    return;
  }
  const auto spec = full->get(specs::kObservation);
  const auto shape = with_trailing(observation_dim());
  specs::TensorSpecPtr kept;
  if (const auto bounded = std::dynamic_pointer_cast<specs::Bounded>(spec)) {
    kept = std::make_shared<specs::Bounded>(specs::BoundedOptions()
                                                .low(bounded->low().index_select(-1, kept_obs_))
                                                .high(bounded->high().index_select(-1, kept_obs_))
                                                .shape(shape)
                                                .dtype(spec->dtype())
                                                .device(device()));
  } else {
    kept = std::make_shared<specs::Unbounded>(
        shape, specs::UnboundedOptions().dtype(spec->dtype()).device(device()));
  }
  set_observation_spec(specs::Composite::make({{specs::kObservation, kept}}, batch_size()));
}

torch::Tensor ClassicControlEnv::observation() const { return observe_all().to(device()); }

torch::Tensor ClassicControlEnv::elapsed_steps() const {
  return torch::tensor(elapsed_, torch::kInt64).reshape(batch_size());
}

std::string ClassicControlEnv::repr_prefix() const {
  return name() + "(batch_size=" + shape_str(batch_size()) + ", device=" + device_str(device()) +
         ", max_episode_steps=" + std::to_string(max_episode_steps_) +
         (mask_velocity_ ? ", mask_velocity=true" : "");
}

void ClassicControlEnv::reset_all() { reset_selected(nullptr); }

void ClassicControlEnv::reset_selected(const bool* mask) {
  int64_t count = 0;
  for (int64_t i = 0; i < num_envs_; ++i) count += (mask == nullptr || mask[i]) ? 1 : 0;
  if (count == 0) return;
  const int64_t dim = layout_.state_dim;
  const auto uniforms =
      torch::rand({count, dim}, generator(), torch::TensorOptions().dtype(torch::kFloat64));
  const double* u = uniforms.data_ptr<double>();
  for (int64_t i = 0; i < num_envs_; ++i) {
    if (mask != nullptr && !mask[i]) continue;
    double* s = state_.data() + i * dim;
    for (int64_t j = 0; j < dim; ++j) {
      const double low = layout_.init_low[static_cast<size_t>(j)];
      const double high = layout_.init_high[static_cast<size_t>(j)];
      s[j] = low + (high - low) * u[j];
    }
    u += dim;
    elapsed_[static_cast<size_t>(i)] = 0;
    terminated_before_[static_cast<size_t>(i)] = 0;
  }
}

TensorDict ClassicControlEnv::reset_impl(const TensorDict& tensordict) {
  if (auto mask = tensordict.find(specs::kReset)) {
    const auto flat = mask->to(torch::kCPU, torch::kBool).contiguous();
    reset_selected(flat.data_ptr<bool>());
  } else {
    reset_selected(nullptr);
  }
  return TensorDict({{specs::kObservation, observe_all()}}, batch_size());
}

TensorDict ClassicControlEnv::step_impl(const TensorDict& tensordict) {
  const auto action = tensordict.get(action_key()).to(torch::kCPU).contiguous();
  const auto flag_shape = with_trailing(1);
  const auto flag_options = torch::TensorOptions().dtype(torch::kBool);
  auto reward = torch::empty(flag_shape, torch::kFloat32);
  auto terminated = torch::empty(flag_shape, flag_options);
  auto truncated = torch::empty(flag_shape, flag_options);
  auto done = torch::empty(flag_shape, flag_options);
  bool* term = terminated.data_ptr<bool>();
  advance(action, reward.data_ptr<float>(), term);
  bool* trunc = truncated.data_ptr<bool>();
  bool* any = done.data_ptr<bool>();
  for (int64_t i = 0; i < num_envs_; ++i) {
    const auto k = static_cast<size_t>(i);
    ++elapsed_[k];
    trunc[i] = max_episode_steps_ > 0 && elapsed_[k] >= max_episode_steps_;
    any[i] = term[i] || trunc[i];
    terminated_before_[k] = terminated_before_[k] || term[i];
  }
  return TensorDict({{specs::kObservation, observe_all()},
                     {reward_key(), reward},
                     {specs::kTerminated, terminated},
                     {specs::kTruncated, truncated},
                     {specs::kDone, done}},
                    batch_size());
}

}  // namespace tdrl::envs
