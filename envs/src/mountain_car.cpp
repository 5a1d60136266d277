// MountainCar-v0 and MountainCarContinuous-v0: Gymnasium's equations, in double precision.

#include <tdrl/envs/mountain_car.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include <torch/types.h>

#include <tensordict/errors.h>

#include "detail/classic_control_util.h"

namespace tdrl::envs {

using tensordict::ValueError;

using detail::bound;
using detail::bounded_action;
using detail::bounded_observation;
using detail::categorical_action;
using detail::number;
using detail::print_options_head;

std::ostream& operator<<(std::ostream& os, const MountainCarEnvOptions& o) {
  return print_options_head(os, "MountainCarEnvOptions", o)
         << ", goal_velocity=" << number(o.goal_velocity())
         << ", goal_position=" << number(o.goal_position()) << ", force=" << number(o.force())
         << ", gravity=" << number(o.gravity()) << ")";
}

std::ostream& operator<<(std::ostream& os, const MountainCarContinuousEnvOptions& o) {
  return print_options_head(os, "MountainCarContinuousEnvOptions", o)
         << ", goal_velocity=" << number(o.goal_velocity())
         << ", goal_position=" << number(o.goal_position()) << ", power=" << number(o.power())
         << ")";
}

namespace {

using Track = MountainCarTrack;

ClassicControlEnv::Layout mountain_car_layout() {
  ClassicControlEnv::Layout layout;
  layout.state_dim = 2;
  layout.obs_dim = 2;
  layout.velocity_obs = {1};  // velocity
  layout.state_names = {"position", "velocity"};
  layout.state_low = {Track::kMinPosition, -Track::kMaxSpeed};
  layout.state_high = {Track::kMaxPosition, Track::kMaxSpeed};
  layout.init_low = {-0.6, 0.0};
  layout.init_high = {-0.4, 0.0};
  return layout;
}

specs::CompositePtr mountain_car_observation(const std::vector<int64_t>& batch,
                                             torch::Device device) {
  return bounded_observation(batch, device, {Track::kMinPosition, -Track::kMaxSpeed},
                             {Track::kMaxPosition, Track::kMaxSpeed});
}

void require_finite(const std::string& env, const char* field, double value) {
  TDRL_CHECK(std::isfinite(value), ValueError, env, ": option ", field, " is ", number(value),
             "; it must be finite");
}

void observe_as_float(const double* states, int64_t count, float* obs) {
  for (int64_t k = 0; k < count * 2; ++k) obs[k] = static_cast<float>(states[k]);
}

// One step of the car (state `s` = position, velocity) under `acceleration`, in Gymnasium's
// order: bound the speed, move, bound the position, stop at the left wall. Returns whether the
// car reached the goal.
bool move_car(double* s, double acceleration, double goal_position, double goal_velocity) {
  const double velocity = bound(s[1] + acceleration, -Track::kMaxSpeed, Track::kMaxSpeed);
  const double position = bound(s[0] + velocity, Track::kMinPosition, Track::kMaxPosition);
  s[0] = position;
  s[1] = position == Track::kMinPosition && velocity < 0 ? 0.0 : velocity;
  return position >= goal_position && s[1] >= goal_velocity;
}

// Gymnasium's MountainCar picture: the hill, the car on it with its two wheels, the goal flag.
drawing::Drawing mountain_car_drawing(double position, double goal_position) {
  constexpr double kWidth = 600, kHeight = 400;
  const detail::Screen screen{kHeight};
  drawing::Drawing d{kWidth, kHeight, "MountainCar", {}};
  const double scale = kWidth / (Track::kMaxPosition - Track::kMinPosition);
  const auto height = [](double x) { return std::sin(3 * x) * 0.45 + 0.55; };
  drawing::Polyline hill{{}, "#000000", 1.0, 1.0};
  for (int i = 0; i < 100; ++i) {
    const double x = Track::kMinPosition + (Track::kMaxPosition - Track::kMinPosition) * i / 99.0;
    hill.points.push_back(screen.at((x - Track::kMinPosition) * scale, height(x) * scale));
  }
  d.shapes.push_back(hill);
  const double car_width = 40, car_height = 20, clearance = 10;
  const double angle = std::cos(3 * position);
  const double x = (position - Track::kMinPosition) * scale;
  const double y = clearance + height(position) * scale;
  d.shapes.push_back(
      screen.box(-car_width / 2, car_width / 2, car_height, 0, angle, x, y, "#000000"));
  for (const double wx : {car_width / 4, -car_width / 4}) {
    d.shapes.push_back(screen.disc(x + wx * std::cos(angle), y + wx * std::sin(angle),
                                   car_height / 2.5, "#808080"));
  }
  const double flag_x = (goal_position - Track::kMinPosition) * scale;
  const double flag_y1 = height(goal_position) * scale;
  const double flag_y2 = flag_y1 + 50;
  const auto bottom = screen.at(flag_x, flag_y1);
  const auto top = screen.at(flag_x, flag_y2);
  d.shapes.push_back(
      drawing::Line{bottom.first, bottom.second, top.first, top.second, "#000000", 1.0});
  d.shapes.push_back(drawing::Polygon{
      {top, screen.at(flag_x, flag_y2 - 10), screen.at(flag_x + 25, flag_y2 - 5)}, "#cccc00", 1.0});
  return d;
}

}  // namespace

MountainCarEnv::MountainCarEnv(const MountainCarEnvOptions& options)
    : ClassicControlEnv("MountainCar-v0", options, mountain_car_layout()), options_(options) {
  require_finite(name(), "goal_velocity", options.goal_velocity());
  require_finite(name(), "goal_position", options.goal_position());
  require_finite(name(), "force", options.force());
  require_finite(name(), "gravity", options.gravity());
  set_task_observation_spec(mountain_car_observation(batch_size(), device()));
  set_action_spec(categorical_action(3, batch_size(), device()));
  reset_all();
}

std::string MountainCarEnv::to_string() const {
  return repr_prefix() + ", goal_velocity=" + number(options_.goal_velocity()) + ")";
}

void MountainCarEnv::observe(const double* states, int64_t count, float* obs) const {
  observe_as_float(states, count, obs);
}

void MountainCarEnv::advance(const torch::Tensor& action, float* reward, bool* terminated) {
  const int64_t* a = action.data_ptr<int64_t>();
  const auto& o = options_;
  double* s = states().data();
  for (int64_t i = 0; i < num_envs(); ++i, s += 2) {
    const double push = static_cast<double>(a[i] - 1) * o.force();
    terminated[i] = move_car(s, push + std::cos(3 * s[0]) * (-o.gravity()), o.goal_position(),
                             o.goal_velocity());
    reward[i] = -1.0f;
  }
}

MountainCarContinuousEnv::MountainCarContinuousEnv(const MountainCarContinuousEnvOptions& options)
    : ClassicControlEnv("MountainCarContinuous-v0", options, mountain_car_layout()),
      options_(options) {
  require_finite(name(), "goal_velocity", options.goal_velocity());
  require_finite(name(), "goal_position", options.goal_position());
  require_finite(name(), "power", options.power());
  set_task_observation_spec(mountain_car_observation(batch_size(), device()));
  set_action_spec(bounded_action(1.0, batch_size(), device()));
  reset_all();
}

std::string MountainCarContinuousEnv::to_string() const {
  return repr_prefix() + ", goal_velocity=" + number(options_.goal_velocity()) + ")";
}

void MountainCarContinuousEnv::observe(const double* states, int64_t count, float* obs) const {
  observe_as_float(states, count, obs);
}

void MountainCarContinuousEnv::advance(const torch::Tensor& action, float* reward,
                                       bool* terminated) {
  const float* a = action.data_ptr<float>();
  const auto& o = options_;
  double* s = states().data();
  for (int64_t i = 0; i < num_envs(); ++i, s += 2) {
    const double act = static_cast<double>(a[i]);
    const double force = std::min(std::max(act, -1.0), 1.0);
    const bool term = move_car(s, force * o.power() - 0.0025 * std::cos(3 * s[0]),
                               o.goal_position(), o.goal_velocity());
    terminated[i] = term;
    double r = term ? 100.0 : 0.0;
    r -= (act * act) * 0.1;
    reward[i] = static_cast<float>(r);
  }
}

drawing::Drawing MountainCarEnv::draw(const double* state) const {
  return mountain_car_drawing(state[0], options_.goal_position());
}

drawing::Drawing MountainCarContinuousEnv::draw(const double* state) const {
  return mountain_car_drawing(state[0], options_.goal_position());
}

}  // namespace tdrl::envs
