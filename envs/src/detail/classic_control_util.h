#pragma once

// Helpers shared by the classic-control sources (classic_control_env.cpp and the tasks').

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include <torch/types.h>

#include <tdrl/envs/classic_control_env.h>
#include <tdrl/envs/env_base.h>
#include <tdrl/specs/composite.h>
#include <tdrl/specs/keys.h>
#include <tdrl/specs/tensor_spec.h>
#include <tensordict/errors.h>

namespace tdrl::envs::detail {

using tensordict::ValueError;

inline constexpr double kPi = 3.14159265358979323846;
inline constexpr double kInf = std::numeric_limits<double>::infinity();

// The shortest decimal form that reads back as the same double (9.8, not 9.8000000000000007).
inline std::string number(double value) {
  std::ostringstream os;
  for (int precision = 6; precision <= 17; ++precision) {
    os.str("");
    os.precision(precision);
    os << value;
    if (std::strtod(os.str().c_str(), nullptr) == value) break;
  }
  return os.str();
}

inline std::string device_str(torch::Device device) {
  std::ostringstream os;
  os << device;
  return os.str();
}

inline void require_positive(const std::string& env, const char* field, double value) {
  TDRL_CHECK(value > 0.0 && std::isfinite(value), ValueError, env, ": option ", field, " is ",
             number(value), "; it must be finite and > 0");
}

// Starts printing a task's options: `<type>(batch_size=[...], device=..., max_episode_steps=N,
// mask_velocity=false`;
// the caller adds the task's own fields and the closing parenthesis.
template <class Options>
std::ostream& print_options_head(std::ostream& os, const char* type,
                                 const ClassicControlEnvOptions<Options>& options) {
  return os << type << "(batch_size=" << tensordict::shape_str(options.batch_size())
            << ", device=" << device_str(options.device())
            << ", max_episode_steps=" << options.max_episode_steps()
            << ", mask_velocity=" << (options.mask_velocity() ? "true" : "false") << ", "
            << options.render();
}

// The pictures of the classic-control tasks, on a Gymnasium screen of `height` units (y up in
// Gymnasium's pygame code, flipped here: the drawing's y points down).
struct Screen {
  double height;
  drawing::Point at(double x, double y) const { return {x, height - y}; }
  // The box [l, r] x [b, t] rotated by `angle` (counter-clockwise, y up) about the origin and
  // moved to (x, y), as Gymnasium's pygame.math.Vector2.rotate_rad, then flipped.
  drawing::Polygon box(double l, double r, double t, double b, double angle, double x, double y,
                       const std::string& color) const {
    drawing::Polygon polygon{{}, color, 1.0};
    const double c = std::cos(angle);
    const double s = std::sin(angle);
    for (const auto& [px, py] : {std::pair{l, b}, {l, t}, {r, t}, {r, b}})
      polygon.points.push_back(at(px * c - py * s + x, px * s + py * c + y));
    return polygon;
  }
  drawing::Circle disc(double x, double y, double r, const std::string& color) const {
    const auto p = at(x, y);
    return drawing::Circle{p.first, p.second, r, color};
  }
};

inline std::vector<int64_t> append(std::vector<int64_t> shape, int64_t dim) {
  shape.push_back(dim);
  return shape;
}

// An observation spec {"observation": Bounded(low, high)} of shape [*batch, low.size()].
inline specs::CompositePtr bounded_observation(const std::vector<int64_t>& batch,
                                               torch::Device device, const std::vector<double>& low,
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

inline specs::TensorSpecPtr categorical_action(int64_t n, const std::vector<int64_t>& batch,
                                               torch::Device device) {
  return std::make_shared<specs::Categorical>(
      n, specs::CategoricalOptions().shape(batch).device(device));
}

inline specs::TensorSpecPtr bounded_action(double bound, const std::vector<int64_t>& batch,
                                           torch::Device device) {
  return std::make_shared<specs::Bounded>(specs::BoundedOptions()
                                              .low(-bound)
                                              .high(bound)
                                              .shape(append(batch, 1))
                                              .dtype(torch::kFloat32)
                                              .device(device));
}

inline double bound(double x, double low, double high) { return std::min(std::max(x, low), high); }

}  // namespace tdrl::envs::detail
