#pragma once

// Compares autograd gradients with central finite differences, for small double tensors.

#include <cmath>
#include <functional>
#include <vector>

#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/types.h>

namespace tdrl_test {

// f maps the inputs (double tensors) to a scalar. For every input and element, checks that
// autograd's d f / d input matches (f(x + h) - f(x - h)) / 2h within atol + rtol * |grad|.
inline void expect_gradients_match_finite_differences(
    const std::function<torch::Tensor(const std::vector<torch::Tensor>&)>& f,
    std::vector<torch::Tensor> inputs, double h = 1e-6, double atol = 1e-6, double rtol = 1e-5) {
  for (auto& x : inputs) x = x.detach().clone().to(torch::kDouble).requires_grad_(true);
  const auto out = f(inputs);
  const auto grads = torch::autograd::grad({out}, inputs);
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto flat = grads[i].reshape(-1);
    for (int64_t j = 0; j < inputs[i].numel(); ++j) {
      auto shifted = inputs;
      shifted[i] = inputs[i].detach().clone();
      shifted[i].view(-1)[j] += h;
      const double up = f(shifted).item<double>();
      shifted[i].view(-1)[j] -= 2 * h;
      const double down = f(shifted).item<double>();
      const double numeric = (up - down) / (2 * h);
      const double analytic = flat[j].item<double>();
      EXPECT_NEAR(analytic, numeric, atol + rtol * std::abs(analytic))
          << "input " << i << ", element " << j;
    }
  }
}

}  // namespace tdrl_test
