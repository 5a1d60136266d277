// Value estimation as tensor functions: TD(0), TD(1), TD(lambda) returns and GAE.

#include <tdrl/losses/functional/value.h>

#include <sstream>
#include <string>
#include <vector>

#include <torch/types.h>

#include <tensordict/errors.h>

namespace tdrl::losses::functional {

using tensordict::shape_str;
using tensordict::ShapeError;
using tensordict::ValueError;

namespace {

void check_shapes(const std::string& where, const torch::Tensor& reference,
                  const std::string& reference_name,
                  const std::vector<std::pair<const char*, const torch::Tensor*>>& others) {
  for (const auto& [name, tensor] : others) {
    TDRL_CHECK(tensor->sizes().equals(reference.sizes()), ShapeError, where, ": ", name,
               " has shape ", shape_str(tensor->sizes()), " but ", reference_name, " has shape ",
               shape_str(reference.sizes()),
               "; every input must have the same shape [*B, T, *F] (no broadcasting)");
  }
}

void check_unit(const std::string& where, const char* name, double value) {
  TDRL_CHECK(value >= 0.0 && value <= 1.0, ValueError, where, ": ", name, " is ",
             std::to_string(value), "; it must be in [0, 1]");
}

// `t` with time moved last and every other dim flattened: [N, T], contiguous, in `dtype`.
torch::Tensor rows(const torch::Tensor& t, int64_t time_dim, torch::Dtype dtype) {
  auto moved = t.movedim(time_dim, -1);
  return moved.reshape({-1, moved.size(-1)}).to(dtype).contiguous();
}

// Undoes rows(): [N, T] back to `like`'s shape with time at `time_dim`.
torch::Tensor unrows(const torch::Tensor& r, const torch::Tensor& like, int64_t time_dim) {
  auto moved_shape = like.movedim(time_dim, -1).sizes().vec();
  return r.reshape(moved_shape).movedim(-1, time_dim);
}

int64_t normalize_dim(const std::string& where, int64_t time_dim, int64_t ndim) {
  const int64_t d = time_dim < 0 ? time_dim + ndim : time_dim;
  TDRL_CHECK(!(d < 0 || d >= ndim), ValueError, where, ": time_dim ", std::to_string(time_dim),
             " is out of range for ", std::to_string(ndim), "-dim inputs");
  return d;
}

// The inputs of the CPU loops: a trajectory batch's transition as contiguous rows [N, T] (time
// last), values and rewards in the computation dtype, the flags as bool.
struct TransitionRows {
  torch::Tensor next_value, reward, done, terminated;
};

torch::Tensor as_bool(const torch::Tensor& t) { return t.to(torch::kBool); }

TransitionRows transition_rows(const torch::Tensor& next_state_value, const torch::Tensor& reward,
                               const torch::Tensor& done, const torch::Tensor& terminated,
                               int64_t dim, torch::Dtype dtype) {
  return {rows(next_state_value.detach(), dim, dtype), rows(reward.detach(), dim, dtype),
          rows(as_bool(done), dim, torch::kBool), rows(as_bool(terminated), dim, torch::kBool)};
}

bool use_loops(const torch::Tensor& t) {
  return t.device().is_cpu() &&
         (t.scalar_type() == torch::kFloat || t.scalar_type() == torch::kDouble);
}

// The shared backward recursion over rows [N, T]:
//   G[t] = r[t] + gamma * (1 - term[t]) * ((1 - lambda) * V'[t] + lambda * (done[t] ? V'[t] :
//   G[t+1])), G[T] := V'[T-1].
template <typename S>
void lambda_return_rows(double gamma, double lmbda, const TransitionRows& in, torch::Tensor& out) {
  const int64_t n = in.next_value.size(0), steps = in.next_value.size(1);
  const S* nv = in.next_value.data_ptr<S>();
  const S* r = in.reward.data_ptr<S>();
  const bool* d = in.done.data_ptr<bool>();
  const bool* term = in.terminated.data_ptr<bool>();
  S* g = out.data_ptr<S>();
  const S gm = static_cast<S>(gamma), lm = static_cast<S>(lmbda);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t base = i * steps;
    S next_return = nv[base + steps - 1];
    for (int64_t t = steps - 1; t >= 0; --t) {
      const int64_t k = base + t;
      const S bootstrap = d[k] ? nv[k] : next_return;
      const S value = term[k] ? S(0) : (S(1) - lm) * nv[k] + lm * bootstrap;
      next_return = r[k] + gm * value;
      g[k] = next_return;
    }
  }
}

template <typename S>
void gae_rows(double gamma, double lmbda, const torch::Tensor& value, const TransitionRows& in,
              torch::Tensor& adv) {
  const int64_t n = value.size(0), steps = value.size(1);
  const S* v = value.data_ptr<S>();
  const S* nv = in.next_value.data_ptr<S>();
  const S* r = in.reward.data_ptr<S>();
  const bool* d = in.done.data_ptr<bool>();
  const bool* term = in.terminated.data_ptr<bool>();
  S* a = adv.data_ptr<S>();
  const S gm = static_cast<S>(gamma), gl = static_cast<S>(gamma * lmbda);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t base = i * steps;
    S next_adv = 0;
    for (int64_t t = steps - 1; t >= 0; --t) {
      const int64_t k = base + t;
      const S delta = r[k] + (term[k] ? S(0) : gm * nv[k]) - v[k];
      next_adv = delta + (d[k] ? S(0) : gl * next_adv);
      a[k] = next_adv;
    }
  }
}

torch::Tensor lambda_return(const std::string& where, double gamma, double lmbda,
                            const torch::Tensor& next_state_value, const torch::Tensor& reward,
                            const torch::Tensor& done, const torch::Tensor& terminated,
                            int64_t time_dim) {
  check_unit(where, "gamma", gamma);
  check_unit(where, "lmbda", lmbda);
  check_shapes(where, next_state_value, "next_state_value",
               {{"reward", &reward}, {"done", &done}, {"terminated", &terminated}});
  const int64_t dim = normalize_dim(where, time_dim, next_state_value.dim());
  const auto dtype = torch::promote_types(next_state_value.scalar_type(), reward.scalar_type());
  if (use_loops(next_state_value.to(dtype)) && next_state_value.numel() > 0) {
    const auto in = transition_rows(next_state_value, reward, done, terminated, dim, dtype);
    auto out = torch::empty_like(in.next_value);
    if (dtype == torch::kDouble) {
      lambda_return_rows<double>(gamma, lmbda, in, out);
    } else {
      lambda_return_rows<float>(gamma, lmbda, in, out);
    }
    return unrows(out, next_state_value, dim);
  }
  // Tensor formulation (any device), one step at a time.
  const int64_t steps = next_state_value.size(dim);
  std::vector<torch::Tensor> returns(static_cast<size_t>(steps));
  const auto not_done = 1 - as_bool(done).to(dtype);
  const auto not_term = 1 - as_bool(terminated).to(dtype);
  torch::Tensor next_return = next_state_value.select(dim, steps - 1).to(dtype);
  for (int64_t t = steps - 1; t >= 0; --t) {
    const auto nv = next_state_value.select(dim, t).to(dtype);
    const auto bootstrap =
        not_done.select(dim, t) * next_return + (1 - not_done.select(dim, t)) * nv;
    next_return = reward.select(dim, t).to(dtype) +
                  gamma * not_term.select(dim, t) * ((1 - lmbda) * nv + lmbda * bootstrap);
    returns[static_cast<size_t>(t)] = next_return;
  }
  return torch::stack(returns, dim).detach();
}

}  // namespace

torch::Tensor td0_return_estimate(double gamma, const torch::Tensor& next_state_value,
                                  const torch::Tensor& reward, const torch::Tensor& terminated) {
  const std::string where = "td0_return_estimate";
  check_unit(where, "gamma", gamma);
  check_shapes(where, next_state_value, "next_state_value",
               {{"reward", &reward}, {"terminated", &terminated}});
  return (reward +
          gamma * (~as_bool(terminated)).to(next_state_value.scalar_type()) * next_state_value)
      .detach();
}

torch::Tensor td0_advantage_estimate(double gamma, const torch::Tensor& state_value,
                                     const torch::Tensor& next_state_value,
                                     const torch::Tensor& reward, const torch::Tensor& terminated) {
  check_shapes("td0_advantage_estimate", state_value, "state_value",
               {{"next_state_value", &next_state_value}});
  return td0_return_estimate(gamma, next_state_value, reward, terminated) - state_value.detach();
}

torch::Tensor td1_return_estimate(double gamma, const torch::Tensor& next_state_value,
                                  const torch::Tensor& reward, const torch::Tensor& done,
                                  const torch::Tensor& terminated, int64_t time_dim) {
  return lambda_return("td1_return_estimate", gamma, 1.0, next_state_value, reward, done,
                       terminated, time_dim);
}

torch::Tensor td_lambda_return_estimate(double gamma, double lmbda,
                                        const torch::Tensor& next_state_value,
                                        const torch::Tensor& reward, const torch::Tensor& done,
                                        const torch::Tensor& terminated, int64_t time_dim) {
  return lambda_return("td_lambda_return_estimate", gamma, lmbda, next_state_value, reward, done,
                       terminated, time_dim);
}

std::pair<torch::Tensor, torch::Tensor> generalized_advantage_estimate(
    double gamma, double lmbda, const torch::Tensor& state_value,
    const torch::Tensor& next_state_value, const torch::Tensor& reward, const torch::Tensor& done,
    const torch::Tensor& terminated, int64_t time_dim) {
  const std::string where = "generalized_advantage_estimate";
  check_unit(where, "gamma", gamma);
  check_unit(where, "lmbda", lmbda);
  check_shapes(where, state_value, "state_value",
               {{"next_state_value", &next_state_value},
                {"reward", &reward},
                {"done", &done},
                {"terminated", &terminated}});
  const int64_t dim = normalize_dim(where, time_dim, state_value.dim());
  const auto dtype = torch::promote_types(state_value.scalar_type(), reward.scalar_type());
  torch::Tensor advantage;
  if (use_loops(state_value.to(dtype)) && state_value.numel() > 0) {
    const auto v = rows(state_value.detach(), dim, dtype);
    const auto in = transition_rows(next_state_value, reward, done, terminated, dim, dtype);
    auto out = torch::empty_like(v);
    if (dtype == torch::kDouble) {
      gae_rows<double>(gamma, lmbda, v, in, out);
    } else {
      gae_rows<float>(gamma, lmbda, v, in, out);
    }
    advantage = unrows(out, state_value, dim);
  } else {
    const int64_t steps = state_value.size(dim);
    std::vector<torch::Tensor> advantages(static_cast<size_t>(steps));
    const auto not_done = 1 - as_bool(done).to(dtype);
    const auto not_term = 1 - as_bool(terminated).to(dtype);
    torch::Tensor next_adv = torch::zeros_like(state_value.select(dim, 0), dtype);
    for (int64_t t = steps - 1; t >= 0; --t) {
      const auto delta = reward.select(dim, t).to(dtype) +
                         gamma * not_term.select(dim, t) * next_state_value.select(dim, t) -
                         state_value.select(dim, t);
      next_adv = delta + gamma * lmbda * not_done.select(dim, t) * next_adv;
      advantages[static_cast<size_t>(t)] = next_adv;
    }
    advantage = torch::stack(advantages, dim).detach();
  }
  return {advantage, advantage + state_value.detach()};
}

}  // namespace tdrl::losses::functional
