// The hand-worked case of the maximum-entropy loss tests (SAC, IQL, CQL): three one-dimensional
// transitions, a TanhNormal actor and linear critics whose weights are set, so that a test can
// compute the loss with plain formulas and compare.

#pragma once

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "losses/off_policy_fixtures.h"

namespace tdrl::losses::testing {

inline double huber(double d) { return std::abs(d) < 1 ? 0.5 * d * d : std::abs(d) - 0.5; }

inline std::vector<double> to_vector(const torch::Tensor& t) {
  auto c = t.to(torch::kFloat64).contiguous().view(-1);
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

/// Q(s, a) = w_s s + w_a a + c.
struct LinearCritic {
  double w_s, w_a, c;
  double operator()(double s, double a) const { return w_s * s + w_a * a + c; }
};

/// Observations and actions of one dimension. Actor: TanhNormal on [-1, 1] with
/// loc = 0.5 s + 0.1, scale = exp(0.2 s - 0.7) (hand_actor); critics `qs` (hand_critics);
/// V(s) = 0.8 s - 0.2 (hand_value).
struct HandCase {
  std::vector<double> s{1.0, -2.0, 0.5}, a{0.3, -0.5, 0.9}, s_next{2.0, 1.0, -1.0},
      r{1.0, 0.0, -0.5};
  std::vector<bool> term{false, true, false};
  std::vector<LinearCritic> qs{{1.0, 2.0, 0.1}, {0.5, -1.0, 0.0}};
  double gamma = 0.9;

  TensorDict batch() const {
    auto col = [](const std::vector<double>& v) {
      return torch::tensor(v, torch::kFloat32).unsqueeze(-1);
    };
    std::vector<int64_t> flags(term.begin(), term.end());
    return transitions(col(s), col(a), col(s_next), col(r),
                       torch::tensor(flags).to(torch::kBool).unsqueeze(-1));
  }
  double loc(double x) const { return 0.5 * x + 0.1; }
  double scale(double x) const { return std::exp(0.2 * x - 0.7); }
  double value(double x) const { return 0.8 * x - 0.2; }
  // log pi(action | x).
  double log_prob(double x, double action) const {
    const double u = std::atanh(action);
    const double z = (u - loc(x)) / scale(x);
    return -0.5 * z * z - std::log(scale(x)) - 0.5 * std::log(2 * M_PI) -
           std::log(1 - action * action);
  }
  // The tanh-squashed action of the standard normal draw `eps`, and its log-density.
  std::pair<double, double> sample(double x, double eps) const {
    const double u = loc(x) + scale(x) * eps;
    const double action = std::tanh(u);
    return {action, -0.5 * eps * eps - std::log(scale(x)) - 0.5 * std::log(2 * M_PI) -
                        std::log(1 - action * action)};
  }
  double min_q(double x, double action) const {
    double out = qs[0](x, action);
    for (const auto& q : qs) out = std::min(out, q(x, action));
    return out;
  }
};

inline TanhNormalActor hand_actor() {
  auto actor = make_tanh_normal_actor(1, 1);
  set_linear(*actor.linear, torch::tensor({{0.5f}, {0.2f}}), torch::tensor({0.1f, -0.7f}));
  return actor;
}

inline std::vector<modules::ValueOperator> hand_critics(const HandCase& c) {
  std::vector<modules::ValueOperator> critics;
  for (const auto& q : c.qs) {
    auto critic = make_critic(1, 1);
    set_linear(*critic, torch::tensor({{static_cast<float>(q.w_s), static_cast<float>(q.w_a)}}),
               torch::tensor({static_cast<float>(q.c)}));
    critics.push_back(critic);
  }
  return critics;
}

inline modules::ValueOperator hand_value() {
  modules::ValueOperator value(modules::MLP(modules::MLPOptions(1, 1).num_cells({})));
  set_linear(*value, torch::tensor({{0.8f}}), torch::tensor({-0.2f}));
  return value;
}

}  // namespace tdrl::losses::testing
