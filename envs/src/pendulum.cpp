// Pendulum-v1: Gymnasium's equations, in double precision in the same order of operations.

#include <tdrl/envs/pendulum.h>

#include <cmath>
#include <ostream>
#include <string>

#include <torch/types.h>

#include <tensordict/errors.h>

#include "detail/classic_control_util.h"

namespace tdrl::envs {

using tensordict::ValueError;

using detail::bound;
using detail::bounded_action;
using detail::bounded_observation;
using detail::kInf;
using detail::kPi;
using detail::number;
using detail::print_options_head;
using detail::require_positive;

namespace {

// Gymnasium's Pendulum angle_normalize: (x + pi) mod 2 pi - pi, with a floored modulo.
double angle_normalize(double x) {
  double r = std::fmod(x + kPi, 2 * kPi);
  if (r != 0.0 && r < 0.0) r += 2 * kPi;
  return r - kPi;
}

}  // namespace

std::ostream& operator<<(std::ostream& os, const PendulumEnvOptions& o) {
  return print_options_head(os, "PendulumEnvOptions", o)
         << ", g=" << number(o.g()) << ", m=" << number(o.m()) << ", l=" << number(o.l())
         << ", dt=" << number(o.dt()) << ", max_speed=" << number(o.max_speed())
         << ", max_torque=" << number(o.max_torque()) << ")";
}

namespace {

ClassicControlEnv::Layout pendulum_layout(const PendulumEnvOptions& o) {
  ClassicControlEnv::Layout layout;
  layout.state_dim = 2;
  layout.obs_dim = 3;
  layout.velocity_obs = {2};  // theta_dot
  layout.state_names = {"theta", "theta_dot"};
  layout.state_low = {-kInf, -o.max_speed()};
  layout.state_high = {kInf, o.max_speed()};
  layout.init_low = {-kPi, -1.0};
  layout.init_high = {kPi, 1.0};
  return layout;
}

}  // namespace

PendulumEnv::PendulumEnv(const PendulumEnvOptions& options)
    : ClassicControlEnv("Pendulum-v1", options, pendulum_layout(options)), options_(options) {
  TDRL_CHECK(std::isfinite(options.g()), ValueError, name(), ": option g is ", number(options.g()),
             "; it must be finite");
  require_positive(name(), "m", options.m());
  require_positive(name(), "l", options.l());
  require_positive(name(), "dt", options.dt());
  require_positive(name(), "max_speed", options.max_speed());
  require_positive(name(), "max_torque", options.max_torque());
  set_task_observation_spec(bounded_observation(
      batch_size(), device(), {-1.0, -1.0, -options.max_speed()}, {1.0, 1.0, options.max_speed()}));
  set_action_spec(bounded_action(options.max_torque(), batch_size(), device()));
  reset_all();
}

std::string PendulumEnv::to_string() const {
  return repr_prefix() + ", g=" + number(options_.g()) + ")";
}

void PendulumEnv::observe(const double* states, int64_t count, float* obs) const {
  for (int64_t i = 0; i < count; ++i, states += 2, obs += 3) {
    obs[0] = static_cast<float>(std::cos(states[0]));
    obs[1] = static_cast<float>(std::sin(states[0]));
    obs[2] = static_cast<float>(states[1]);
  }
}

void PendulumEnv::advance(const torch::Tensor& action, float* reward, bool* terminated) {
  const float* a = action.data_ptr<float>();
  const auto& o = options_;
  double* s = states().data();
  for (int64_t i = 0; i < num_envs(); ++i, s += 2) {
    const double th = s[0], thdot = s[1];
    const double u = bound(static_cast<double>(a[i]), -o.max_torque(), o.max_torque());
    const double th_n = angle_normalize(th);
    const double costs = th_n * th_n + 0.1 * (thdot * thdot) + 0.001 * (u * u);
    double newthdot =
        thdot +
        (3 * o.g() / (2 * o.l()) * std::sin(th) + 3.0 / (o.m() * (o.l() * o.l())) * u) * o.dt();
    newthdot = bound(newthdot, -o.max_speed(), o.max_speed());
    s[0] = th + newthdot * o.dt();
    s[1] = newthdot;
    reward[i] = static_cast<float>(-costs);
    terminated[i] = false;
  }
}

// Gymnasium's Pendulum picture: the red rod with its rounded end about the black axle (the
// torque arrow, an image in Gymnasium, is not drawn).
drawing::Drawing PendulumEnv::draw(const double* state) const {
  constexpr double kSize = 500;
  const detail::Screen screen{kSize};
  drawing::Drawing d{kSize, kSize, "Pendulum", {}};
  const double bound = 2.2;
  const double scale = kSize / (bound * 2);
  const double offset = kSize / 2;
  const double rod_length = options_.l() * scale;
  const double rod_width = 0.2 * scale;
  const double angle = state[0] + kPi / 2;
  d.shapes.push_back(
      screen.box(0, rod_length, rod_width / 2, -rod_width / 2, angle, offset, offset, "#cc4d4d"));
  d.shapes.push_back(screen.disc(offset + rod_length * std::cos(angle),
                                 offset + rod_length * std::sin(angle), rod_width / 2, "#cc4d4d"));
  d.shapes.push_back(screen.disc(offset, offset, 0.05 * scale, "#000000"));
  return d;
}

}  // namespace tdrl::envs
