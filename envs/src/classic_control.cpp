// The classic-control tasks: the shared ClassicControlEnv machinery and the five tasks'
// equations (Gymnasium's, evaluated in double precision in the same order of operations).

#include <tdrl/envs/classic_control.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <utility>

#include <torch/torch.h>

#include <tensordict/errors.h>

namespace tdrl::envs {

using tensordict::shape_str;
using tensordict::ShapeError;
using tensordict::TypeError;
using tensordict::ValueError;

namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kInf = std::numeric_limits<double>::infinity();

// The shortest decimal form that reads back as the same double (9.8, not 9.8000000000000007).
std::string number(double value) {
  std::ostringstream os;
  for (int precision = 6; precision <= 17; ++precision) {
    os.str("");
    os.precision(precision);
    os << value;
    if (std::strtod(os.str().c_str(), nullptr) == value) break;
  }
  return os.str();
}

std::string device_str(torch::Device device) {
  std::ostringstream os;
  os << device;
  return os.str();
}

void require_positive(const std::string& env, const char* field, double value) {
  if (!(value > 0.0) || !std::isfinite(value)) {
    throw ValueError(env + ": option " + field + " is " + number(value) +
                     "; it must be finite and > 0");
  }
}

EnvBaseOptions base_options(const std::vector<int64_t>& batch_size, torch::Device device) {
  return EnvBaseOptions().batch_size(batch_size).device(device);
}

std::vector<int64_t> append(std::vector<int64_t> shape, int64_t dim) {
  shape.push_back(dim);
  return shape;
}

// An observation spec {"observation": Bounded(low, high)} of shape [*batch, low.size()].
specs::CompositePtr bounded_observation(const std::vector<int64_t>& batch, torch::Device device,
                                        const std::vector<double>& low,
                                        const std::vector<double>& high) {
  const auto n = static_cast<int64_t>(low.size());
  auto spec = std::make_shared<specs::Bounded>(specs::BoundedOptions()
                                                   .low(torch::tensor(low, torch::kFloat64))
                                                   .high(torch::tensor(high, torch::kFloat64))
                                                   .shape(append(batch, n))
                                                   .dtype(torch::kFloat32)
                                                   .device(device));
  return specs::Composite::make({{specs::kObservation, spec}}, batch);
}

specs::TensorSpecPtr categorical_action(int64_t n, const std::vector<int64_t>& batch,
                                        torch::Device device) {
  return std::make_shared<specs::Categorical>(
      n, specs::CategoricalOptions().shape(batch).device(device));
}

specs::TensorSpecPtr bounded_action(double bound, const std::vector<int64_t>& batch,
                                    torch::Device device) {
  return std::make_shared<specs::Bounded>(specs::BoundedOptions()
                                              .low(-bound)
                                              .high(bound)
                                              .shape(append(batch, 1))
                                              .dtype(torch::kFloat32)
                                              .device(device));
}

// Gymnasium's Pendulum angle_normalize: (x + pi) mod 2 pi - pi, with a floored modulo.
double angle_normalize(double x) {
  double r = std::fmod(x + kPi, 2 * kPi);
  if (r != 0.0 && r < 0.0) r += 2 * kPi;
  return r - kPi;
}

// Gymnasium's Acrobot wrap: shifts x by multiples of (high - low) into [low, high].
double wrap(double x, double low, double high) {
  const double diff = high - low;
  while (x > high) x = x - diff;
  while (x < low) x = x + diff;
  return x;
}

double bound(double x, double low, double high) { return std::min(std::max(x, low), high); }

}  // namespace

// ---- ClassicControlEnv -------------------------------------------------------------------------

ClassicControlEnv::ClassicControlEnv(std::string name, const EnvBaseOptions& options,
                                     int64_t max_episode_steps, Layout layout)
    : EnvBase(std::move(name), options),
      layout_(std::move(layout)),
      max_episode_steps_(max_episode_steps),
      num_envs_(1) {
  if (max_episode_steps < 0) {
    throw ValueError(this->name() + ": option max_episode_steps is " +
                     std::to_string(max_episode_steps) + "; it must be >= 0 (0 = no time limit)");
  }
  const auto dim = static_cast<size_t>(layout_.state_dim);
  TORCH_INTERNAL_ASSERT(layout_.state_names.size() == dim && layout_.state_low.size() == dim &&
                        layout_.state_high.size() == dim && layout_.init_low.size() == dim &&
                        layout_.init_high.size() == dim);
  for (auto d : batch_size()) num_envs_ *= d;
  state_.assign(static_cast<size_t>(num_envs_ * layout_.state_dim), 0.0);
  elapsed_.assign(static_cast<size_t>(num_envs_), 0);
  terminated_before_.assign(static_cast<size_t>(num_envs_), 0);
}

std::vector<int64_t> ClassicControlEnv::with_trailing(int64_t dim) const {
  return append(batch_size(), dim);
}

torch::Tensor ClassicControlEnv::state() const {
  return torch::tensor(state_, torch::kFloat64).reshape(with_trailing(layout_.state_dim));
}

void ClassicControlEnv::set_state(const torch::Tensor& state) {
  const std::string where = name() + "::set_state";
  if (!state.defined()) throw ValueError(where + ": the state tensor is undefined");
  const auto expected = with_trailing(layout_.state_dim);
  if (state.sizes().vec() != expected) {
    throw ShapeError(where + ": the state has shape " + shape_str(state.sizes()) + "; expected " +
                     shape_str(expected) + " (batch_size followed by the " +
                     std::to_string(layout_.state_dim) + " state components)");
  }
  if (!state.is_floating_point()) {
    throw TypeError(where + ": the state has dtype " +
                    std::string(c10::toString(state.scalar_type())) +
                    "; expected a floating dtype (float64 keeps it exact)");
  }
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
  return obs;
}

torch::Tensor ClassicControlEnv::observation() const { return observe_all().to(device()); }

torch::Tensor ClassicControlEnv::elapsed_steps() const {
  return torch::tensor(elapsed_, torch::kInt64).reshape(batch_size());
}

std::string ClassicControlEnv::repr_prefix() const {
  return name() + "(batch_size=" + shape_str(batch_size()) + ", device=" + device_str(device()) +
         ", max_episode_steps=" + std::to_string(max_episode_steps_);
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

// ---- CartPole-v1 -------------------------------------------------------------------------------

std::ostream& operator<<(std::ostream& os, const CartPoleEnvOptions& o) {
  return os << "CartPoleEnvOptions(batch_size=" << shape_str(o.batch_size())
            << ", device=" << device_str(o.device())
            << ", max_episode_steps=" << o.max_episode_steps()
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
  layout.state_names = {"x", "x_dot", "theta", "theta_dot"};
  layout.state_low = {-kInf, -kInf, -kInf, -kInf};
  layout.state_high = {kInf, kInf, kInf, kInf};
  layout.init_low = {-0.05, -0.05, -0.05, -0.05};
  layout.init_high = {0.05, 0.05, 0.05, 0.05};
  return layout;
}

}  // namespace

CartPoleEnv::CartPoleEnv(const CartPoleEnvOptions& options)
    : ClassicControlEnv("CartPole-v1", base_options(options.batch_size(), options.device()),
                        options.max_episode_steps(), cartpole_layout()),
      options_(options) {
  require_positive(name(), "masscart", options.masscart());
  require_positive(name(), "masspole", options.masspole());
  require_positive(name(), "length", options.length());
  require_positive(name(), "tau", options.tau());
  require_positive(name(), "theta_threshold_radians", options.theta_threshold_radians());
  require_positive(name(), "x_threshold", options.x_threshold());
  set_observation_spec(specs::Composite::make(
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

// ---- Pendulum-v1 -------------------------------------------------------------------------------

std::ostream& operator<<(std::ostream& os, const PendulumEnvOptions& o) {
  return os << "PendulumEnvOptions(batch_size=" << shape_str(o.batch_size())
            << ", device=" << device_str(o.device())
            << ", max_episode_steps=" << o.max_episode_steps() << ", g=" << number(o.g())
            << ", m=" << number(o.m()) << ", l=" << number(o.l()) << ", dt=" << number(o.dt())
            << ", max_speed=" << number(o.max_speed()) << ", max_torque=" << number(o.max_torque())
            << ")";
}

namespace {

ClassicControlEnv::Layout pendulum_layout(const PendulumEnvOptions& o) {
  ClassicControlEnv::Layout layout;
  layout.state_dim = 2;
  layout.obs_dim = 3;
  layout.state_names = {"theta", "theta_dot"};
  layout.state_low = {-kInf, -o.max_speed()};
  layout.state_high = {kInf, o.max_speed()};
  layout.init_low = {-kPi, -1.0};
  layout.init_high = {kPi, 1.0};
  return layout;
}

}  // namespace

PendulumEnv::PendulumEnv(const PendulumEnvOptions& options)
    : ClassicControlEnv("Pendulum-v1", base_options(options.batch_size(), options.device()),
                        options.max_episode_steps(), pendulum_layout(options)),
      options_(options) {
  if (!std::isfinite(options.g())) {
    throw ValueError(name() + ": option g is " + number(options.g()) + "; it must be finite");
  }
  require_positive(name(), "m", options.m());
  require_positive(name(), "l", options.l());
  require_positive(name(), "dt", options.dt());
  require_positive(name(), "max_speed", options.max_speed());
  require_positive(name(), "max_torque", options.max_torque());
  set_observation_spec(bounded_observation(
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

// ---- MountainCar-v0 and MountainCarContinuous-v0 -----------------------------------------------

std::ostream& operator<<(std::ostream& os, const MountainCarEnvOptions& o) {
  return os << "MountainCarEnvOptions(batch_size=" << shape_str(o.batch_size())
            << ", device=" << device_str(o.device())
            << ", max_episode_steps=" << o.max_episode_steps()
            << ", goal_velocity=" << number(o.goal_velocity())
            << ", goal_position=" << number(o.goal_position()) << ", force=" << number(o.force())
            << ", gravity=" << number(o.gravity()) << ")";
}

std::ostream& operator<<(std::ostream& os, const MountainCarContinuousEnvOptions& o) {
  return os << "MountainCarContinuousEnvOptions(batch_size=" << shape_str(o.batch_size())
            << ", device=" << device_str(o.device())
            << ", max_episode_steps=" << o.max_episode_steps()
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
  if (!std::isfinite(value)) {
    throw ValueError(env + ": option " + field + " is " + number(value) + "; it must be finite");
  }
}

void observe_as_float(const double* states, int64_t count, float* obs) {
  for (int64_t k = 0; k < count * 2; ++k) obs[k] = static_cast<float>(states[k]);
}

}  // namespace

MountainCarEnv::MountainCarEnv(const MountainCarEnvOptions& options)
    : ClassicControlEnv("MountainCar-v0", base_options(options.batch_size(), options.device()),
                        options.max_episode_steps(), mountain_car_layout()),
      options_(options) {
  require_finite(name(), "goal_velocity", options.goal_velocity());
  require_finite(name(), "goal_position", options.goal_position());
  require_finite(name(), "force", options.force());
  require_finite(name(), "gravity", options.gravity());
  set_observation_spec(mountain_car_observation(batch_size(), device()));
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
    double position = s[0], velocity = s[1];
    velocity += static_cast<double>(a[i] - 1) * o.force() + std::cos(3 * position) * (-o.gravity());
    velocity = bound(velocity, -Track::kMaxSpeed, Track::kMaxSpeed);
    position += velocity;
    position = bound(position, Track::kMinPosition, Track::kMaxPosition);
    if (position == Track::kMinPosition && velocity < 0) velocity = 0;
    s[0] = position;
    s[1] = velocity;
    terminated[i] = position >= o.goal_position() && velocity >= o.goal_velocity();
    reward[i] = -1.0f;
  }
}

MountainCarContinuousEnv::MountainCarContinuousEnv(const MountainCarContinuousEnvOptions& options)
    : ClassicControlEnv("MountainCarContinuous-v0",
                        base_options(options.batch_size(), options.device()),
                        options.max_episode_steps(), mountain_car_layout()),
      options_(options) {
  require_finite(name(), "goal_velocity", options.goal_velocity());
  require_finite(name(), "goal_position", options.goal_position());
  require_finite(name(), "power", options.power());
  set_observation_spec(mountain_car_observation(batch_size(), device()));
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
    double position = s[0], velocity = s[1];
    const double act = static_cast<double>(a[i]);
    const double force = std::min(std::max(act, -1.0), 1.0);
    velocity += force * o.power() - 0.0025 * std::cos(3 * position);
    velocity = bound(velocity, -Track::kMaxSpeed, Track::kMaxSpeed);
    position += velocity;
    position = bound(position, Track::kMinPosition, Track::kMaxPosition);
    if (position == Track::kMinPosition && velocity < 0) velocity = 0;
    s[0] = position;
    s[1] = velocity;
    const bool term = position >= o.goal_position() && velocity >= o.goal_velocity();
    terminated[i] = term;
    double r = term ? 100.0 : 0.0;
    r -= (act * act) * 0.1;
    reward[i] = static_cast<float>(r);
  }
}

// ---- Acrobot-v1 --------------------------------------------------------------------------------

std::ostream& operator<<(std::ostream& os, const AcrobotEnvOptions& o) {
  return os << "AcrobotEnvOptions(batch_size=" << shape_str(o.batch_size())
            << ", device=" << device_str(o.device())
            << ", max_episode_steps=" << o.max_episode_steps()
            << ", torque_noise_max=" << number(o.torque_noise_max())
            << ", book_or_nips=" << o.book_or_nips() << ")";
}

namespace {

ClassicControlEnv::Layout acrobot_layout() {
  ClassicControlEnv::Layout layout;
  layout.state_dim = 4;
  layout.obs_dim = 6;
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
    : ClassicControlEnv("Acrobot-v1", base_options(options.batch_size(), options.device()),
                        options.max_episode_steps(), acrobot_layout()),
      options_(options),
      book_(options.book_or_nips() == "book") {
  if (!book_ && options.book_or_nips() != "nips") {
    throw ValueError(name() + ": option book_or_nips is '" + options.book_or_nips() +
                     "'; expected 'book' or 'nips'");
  }
  if (!(options.torque_noise_max() >= 0.0) || !std::isfinite(options.torque_noise_max())) {
    throw ValueError(name() + ": option torque_noise_max is " + number(options.torque_noise_max()) +
                     "; it must be finite and >= 0");
  }
  set_observation_spec(bounded_observation(batch_size(), device(),
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

}  // namespace tdrl::envs
