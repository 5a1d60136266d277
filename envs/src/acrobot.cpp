// Acrobot-v1: Gymnasium's equations, in double precision in the same order of operations.

#include <tdrl/envs/acrobot.h>

#include <cmath>
#include <ostream>
#include <string>

#include <torch/types.h>

#include <tensordict/errors.h>

#include "detail/classic_control_util.h"

namespace tdrl::envs {

using tensordict::ValueError;

using detail::bound;
using detail::bounded_observation;
using detail::categorical_action;
using detail::kInf;
using detail::kPi;
using detail::number;
using detail::print_options_head;

namespace {

// Gymnasium's Acrobot wrap: shifts x by multiples of (high - low) into [low, high].
double wrap(double x, double low, double high) {
  const double diff = high - low;
  while (x > high) x = x - diff;
  while (x < low) x = x + diff;
  return x;
}

}  // namespace

std::ostream& operator<<(std::ostream& os, const AcrobotEnvOptions& o) {
  return print_options_head(os, "AcrobotEnvOptions", o)
         << ", torque_noise_max=" << number(o.torque_noise_max())
         << ", book_or_nips=" << o.book_or_nips() << ")";
}

namespace {

ClassicControlEnv::Layout acrobot_layout() {
  ClassicControlEnv::Layout layout;
  layout.state_dim = 4;
  layout.obs_dim = 6;
  layout.velocity_obs = {4, 5};  // theta1_dot, theta2_dot
  layout.state_names = {"theta1", "theta2", "theta1_dot", "theta2_dot"};
  layout.state_low = {-kInf, -kInf, -AcrobotEnv::kMaxVel1, -AcrobotEnv::kMaxVel2};
  layout.state_high = {kInf, kInf, AcrobotEnv::kMaxVel1, AcrobotEnv::kMaxVel2};
  layout.init_low = {-0.1, -0.1, -0.1, -0.1};
  layout.init_high = {0.1, 0.1, 0.1, 0.1};
  return layout;
}

// The time derivative of the Acrobot state s (theta1, theta2, dtheta1, dtheta2) under torque a
// (Sutton and Barto's equations; `book` false drops the dtheta1^2 term, as the NIPS paper).
void acrobot_dsdt(const double* s, double a, bool book, double* out) {
  constexpr double m1 = AcrobotEnv::kLinkMass1, m2 = AcrobotEnv::kLinkMass2;
  constexpr double l1 = AcrobotEnv::kLinkLength1;
  constexpr double lc1 = AcrobotEnv::kLinkComPos1, lc2 = AcrobotEnv::kLinkComPos2;
  constexpr double I1 = AcrobotEnv::kLinkMoi, I2 = AcrobotEnv::kLinkMoi;
  constexpr double g = AcrobotEnv::kGravity;
  const double theta1 = s[0], theta2 = s[1], dtheta1 = s[2], dtheta2 = s[3];
  const double d1 =
      m1 * (lc1 * lc1) + m2 * (l1 * l1 + lc2 * lc2 + 2 * l1 * lc2 * std::cos(theta2)) + I1 + I2;
  const double d2 = m2 * (lc2 * lc2 + l1 * lc2 * std::cos(theta2)) + I2;
  const double phi2 = m2 * lc2 * g * std::cos(theta1 + theta2 - kPi / 2.0);
  const double phi1 = -m2 * l1 * lc2 * (dtheta2 * dtheta2) * std::sin(theta2) -
                      2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * std::sin(theta2) +
                      (m1 * lc1 + m2 * l1) * g * std::cos(theta1 - kPi / 2) + phi2;
  double ddtheta2;
  if (book) {
    ddtheta2 =
        (a + d2 / d1 * phi1 - m2 * l1 * lc2 * (dtheta1 * dtheta1) * std::sin(theta2) - phi2) /
        (m2 * (lc2 * lc2) + I2 - (d2 * d2) / d1);
  } else {
    ddtheta2 = (a + d2 / d1 * phi1 - phi2) / (m2 * (lc2 * lc2) + I2 - (d2 * d2) / d1);
  }
  const double ddtheta1 = -(d2 * ddtheta2 + phi1) / d1;
  out[0] = dtheta1;
  out[1] = dtheta2;
  out[2] = ddtheta1;
  out[3] = ddtheta2;
}

}  // namespace

AcrobotEnv::AcrobotEnv(const AcrobotEnvOptions& options)
    : ClassicControlEnv("Acrobot-v1", options, acrobot_layout()),
      options_(options),
      book_(options.book_or_nips() == "book") {
  TDRL_CHECK(book_ || options.book_or_nips() == "nips", ValueError, name(),
             ": option book_or_nips is '", options.book_or_nips(), "'; expected 'book' or 'nips'");
  TDRL_CHECK(options.torque_noise_max() >= 0.0 && std::isfinite(options.torque_noise_max()),
             ValueError, name(), ": option torque_noise_max is ",
             number(options.torque_noise_max()), "; it must be finite and >= 0");
  set_task_observation_spec(bounded_observation(batch_size(), device(),
                                                {-1.0, -1.0, -1.0, -1.0, -kMaxVel1, -kMaxVel2},
                                                {1.0, 1.0, 1.0, 1.0, kMaxVel1, kMaxVel2}));
  set_action_spec(categorical_action(3, batch_size(), device()));
  reset_all();
}

std::string AcrobotEnv::to_string() const {
  return repr_prefix() + ", torque_noise_max=" + number(options_.torque_noise_max()) +
         ", book_or_nips=" + options_.book_or_nips() + ")";
}

void AcrobotEnv::observe(const double* states, int64_t count, float* obs) const {
  for (int64_t i = 0; i < count; ++i, states += 4, obs += 6) {
    obs[0] = static_cast<float>(std::cos(states[0]));
    obs[1] = static_cast<float>(std::sin(states[0]));
    obs[2] = static_cast<float>(std::cos(states[1]));
    obs[3] = static_cast<float>(std::sin(states[1]));
    obs[4] = static_cast<float>(states[2]);
    obs[5] = static_cast<float>(states[3]);
  }
}

void AcrobotEnv::advance(const torch::Tensor& action, float* reward, bool* terminated) {
  static constexpr double kTorques[3] = {-1.0, 0.0, 1.0};
  const int64_t* a = action.data_ptr<int64_t>();
  const double noise_max = options_.torque_noise_max();
  torch::Tensor noise;
  if (noise_max > 0.0) {
    noise = torch::rand({num_envs()}, generator(), torch::TensorOptions().dtype(torch::kFloat64));
  }
  const double* u = noise.defined() ? noise.data_ptr<double>() : nullptr;
  constexpr double dt = kDt;
  constexpr double dt2 = dt / 2;
  double* s = states().data();
  for (int64_t i = 0; i < num_envs(); ++i, s += 4) {
    double torque = kTorques[a[i]];
    if (u != nullptr) torque += -noise_max + (noise_max - -noise_max) * u[i];
    // One classical Runge-Kutta 4 step over [0, dt] (the torque is constant over it).
    double k1[4], k2[4], k3[4], k4[4], y[4];
    acrobot_dsdt(s, torque, book_, k1);
    for (int j = 0; j < 4; ++j) y[j] = s[j] + dt2 * k1[j];
    acrobot_dsdt(y, torque, book_, k2);
    for (int j = 0; j < 4; ++j) y[j] = s[j] + dt2 * k2[j];
    acrobot_dsdt(y, torque, book_, k3);
    for (int j = 0; j < 4; ++j) y[j] = s[j] + dt * k3[j];
    acrobot_dsdt(y, torque, book_, k4);
    for (int j = 0; j < 4; ++j) s[j] = s[j] + dt / 6.0 * (k1[j] + 2 * k2[j] + 2 * k3[j] + k4[j]);
    s[0] = wrap(s[0], -kPi, kPi);
    s[1] = wrap(s[1], -kPi, kPi);
    s[2] = bound(s[2], -kMaxVel1, kMaxVel1);
    s[3] = bound(s[3], -kMaxVel2, kMaxVel2);
    const bool term = -std::cos(s[0]) - std::cos(s[1] + s[0]) > 1.0;
    terminated[i] = term;
    reward[i] = term ? 0.0f : -1.0f;
  }
}

// Gymnasium's Acrobot picture: the target line, the two cyan links and their yellow joints.
drawing::Drawing AcrobotEnv::draw(const double* state) const {
  constexpr double kSize = 500;
  const detail::Screen screen{kSize};
  drawing::Drawing d{kSize, kSize, "Acrobot", {}};
  const double bound = kLinkLength1 + kLinkLength2 + 0.2;
  const double scale = kSize / (bound * 2);
  const double offset = kSize / 2;
  const auto line_y = screen.at(0, 1 * scale + offset).second;
  d.shapes.push_back(
      drawing::Line{-2.2 * scale + offset, line_y, 2.2 * scale + offset, line_y, "#000000", 1.0});
  const double s0 = state[0], s1 = state[1];
  // Gymnasium's joint positions (x, y) with the coordinates swapped, as its xys[:, ::-1].
  const double p1x = -kLinkLength1 * std::cos(s0) * scale;
  const double p1y = kLinkLength1 * std::sin(s0) * scale;
  const double joints[2][2] = {{0, 0}, {p1y, p1x}};
  const double thetas[2] = {s0 - kPi / 2, s0 + s1 - kPi / 2};
  const double lengths[2] = {kLinkLength1 * scale, kLinkLength2 * scale};
  for (int i = 0; i < 2; ++i) {
    const double x = joints[i][0] + offset, y = joints[i][1] + offset;
    d.shapes.push_back(
        screen.box(0, lengths[i], 0.1 * scale, -0.1 * scale, thetas[i], x, y, "#00cccc"));
    d.shapes.push_back(screen.disc(x, y, 0.1 * scale, "#cccc00"));
  }
  return d;
}

}  // namespace tdrl::envs
