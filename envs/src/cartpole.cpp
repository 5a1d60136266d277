// CartPole-v1: Gymnasium's equations, in double precision in the same order of operations.

#include <tdrl/envs/cartpole.h>

#include <cmath>
#include <ostream>
#include <string>

#include <torch/types.h>

#include <tensordict/errors.h>

#include "detail/classic_control_util.h"

namespace tdrl::envs {

using detail::append;
using detail::categorical_action;
using detail::kInf;
using detail::number;
using detail::print_options_head;
using detail::require_positive;

std::ostream& operator<<(std::ostream& os, const CartPoleEnvOptions& o) {
  return print_options_head(os, "CartPoleEnvOptions", o)
         << ", sutton_barto_reward=" << (o.sutton_barto_reward() ? "true" : "false")
         << ", gravity=" << number(o.gravity()) << ", masscart=" << number(o.masscart())
         << ", masspole=" << number(o.masspole()) << ", length=" << number(o.length())
         << ", force_mag=" << number(o.force_mag()) << ", tau=" << number(o.tau())
         << ", theta_threshold_radians=" << number(o.theta_threshold_radians())
         << ", x_threshold=" << number(o.x_threshold()) << ")";
}

namespace {

ClassicControlEnv::Layout cartpole_layout() {
  ClassicControlEnv::Layout layout;
  layout.state_dim = 4;
  layout.obs_dim = 4;
  layout.velocity_obs = {1, 3};  // x_dot, theta_dot
  layout.state_names = {"x", "x_dot", "theta", "theta_dot"};
  layout.state_low = {-kInf, -kInf, -kInf, -kInf};
  layout.state_high = {kInf, kInf, kInf, kInf};
  layout.init_low = {-0.05, -0.05, -0.05, -0.05};
  layout.init_high = {0.05, 0.05, 0.05, 0.05};
  return layout;
}

}  // namespace

CartPoleEnv::CartPoleEnv(const CartPoleEnvOptions& options)
    : ClassicControlEnv("CartPole-v1", options, cartpole_layout()), options_(options) {
  require_positive(name(), "masscart", options.masscart());
  require_positive(name(), "masspole", options.masspole());
  require_positive(name(), "length", options.length());
  require_positive(name(), "tau", options.tau());
  require_positive(name(), "theta_threshold_radians", options.theta_threshold_radians());
  require_positive(name(), "x_threshold", options.x_threshold());
  set_task_observation_spec(specs::Composite::make(
      {{specs::kObservation,
        std::make_shared<specs::Unbounded>(append(batch_size(), 4),
                                           specs::UnboundedOptions().device(device()))}},
      batch_size()));
  set_action_spec(categorical_action(2, batch_size(), device()));
  reset_all();
}

std::string CartPoleEnv::to_string() const {
  return repr_prefix() +
         ", sutton_barto_reward=" + (options_.sutton_barto_reward() ? "true" : "false") + ")";
}

void CartPoleEnv::observe(const double* states, int64_t count, float* obs) const {
  for (int64_t k = 0; k < count * 4; ++k) obs[k] = static_cast<float>(states[k]);
}

void CartPoleEnv::advance(const torch::Tensor& action, float* reward, bool* terminated) {
  const int64_t* a = action.data_ptr<int64_t>();
  const auto& o = options_;
  const double total_mass = o.masspole() + o.masscart();
  const double polemass_length = o.masspole() * o.length();
  const double tau = o.tau();
  const auto& before = terminated_before();
  double* s = states().data();
  for (int64_t i = 0; i < num_envs(); ++i, s += 4) {
    const double x = s[0], x_dot = s[1], theta = s[2], theta_dot = s[3];
    const double force = a[i] == 1 ? o.force_mag() : -o.force_mag();
    const double costheta = std::cos(theta);
    const double sintheta = std::sin(theta);
    const double temp = (force + polemass_length * (theta_dot * theta_dot) * sintheta) / total_mass;
    const double thetaacc =
        (o.gravity() * sintheta - costheta * temp) /
        (o.length() * (4.0 / 3.0 - o.masspole() * (costheta * costheta) / total_mass));
    const double xacc = temp - polemass_length * thetaacc * costheta / total_mass;
    s[0] = x + tau * x_dot;
    s[1] = x_dot + tau * xacc;
    s[2] = theta + tau * theta_dot;
    s[3] = theta_dot + tau * thetaacc;
    const bool term = s[0] < -o.x_threshold() || s[0] > o.x_threshold() ||
                      s[2] < -o.theta_threshold_radians() || s[2] > o.theta_threshold_radians();
    terminated[i] = term;
    // Gymnasium: 1 (0) while upright, 1 (-1) on the terminating step, 0 (-1) on steps taken
    // in a terminal state after that without a reset; the bracket is sutton_barto_reward.
    const bool sb = o.sutton_barto_reward();
    if (!term) {
      reward[i] = sb ? 0.0f : 1.0f;
    } else if (!before[static_cast<size_t>(i)]) {
      reward[i] = sb ? -1.0f : 1.0f;
    } else {
      reward[i] = sb ? -1.0f : 0.0f;
    }
  }
}

// Gymnasium's CartPole picture: the track, the black cart, the pole and its axle.
drawing::Drawing CartPoleEnv::draw(const double* state) const {
  constexpr double kWidth = 600, kHeight = 400;
  const detail::Screen screen{kHeight};
  drawing::Drawing d{kWidth, kHeight, "CartPole", {}};
  const double scale = kWidth / (2 * options_.x_threshold());
  const double pole_width = 10.0;
  const double pole_len = scale * 2 * options_.length();
  const double cart_width = 50.0, cart_height = 30.0;
  const double axle_offset = cart_height / 4.0;
  const double cart_x = state[0] * scale + kWidth / 2.0;
  const double cart_y = 100;
  d.shapes.push_back(drawing::Polygon(screen.box(-cart_width / 2, cart_width / 2, cart_height / 2,
                                                 -cart_height / 2, 0, cart_x, cart_y, "#000000")));
  d.shapes.push_back(screen.box(-pole_width / 2, pole_width / 2, pole_len - pole_width / 2,
                                -pole_width / 2, -state[2], cart_x, cart_y + axle_offset,
                                "#ca9865"));
  d.shapes.push_back(screen.disc(cart_x, cart_y + axle_offset, pole_width / 2, "#8184cb"));
  const auto left = screen.at(0, cart_y);
  d.shapes.push_back(drawing::Line{left.first, left.second, kWidth, left.second, "#000000", 1.0});
  return d;
}

}  // namespace tdrl::envs
