#pragma once

/// NormalParamExtractor: splits a network's output into a Gaussian's loc and a positive scale
/// (TorchRL's NormalParamExtractor).

#include <functional>
#include <string>
#include <tuple>

#include <torch/arg.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

namespace tensordict::nn {

/// Options of NormalParamExtractor.
/// Example: `NormalParamExtractorOptions().scale_mapping("exp").scale_lb(1e-3)`
struct NormalParamExtractorOptions {
  /// How the second half of the input becomes a positive scale:
  /// - "biased_softplus_<b>" (default "biased_softplus_1.0"): softplus(x + c) + m with
  ///   m = 0.01 and c chosen so that x = 0 maps to b; "biased_softplus_<b>_<m>" sets m too;
  /// - "softplus": softplus(x); "exp": exp(x);
  /// - "expln": exp(x) for x <= 0, log1p(x) + 1 above (smooth, grows slowly);
  /// - "relu": relu(x), "abs": |x| (positive only through scale_lb).
  TORCH_ARG(std::string, scale_mapping) = "biased_softplus_1.0";
  /// Lower bound applied to the mapped scale (clamp min). Default 1e-4.
  TORCH_ARG(double, scale_lb) = 1e-4;
};

/// Module mapping `[*batch, 2 * d]` to (loc `[*batch, d]`, scale `[*batch, d]`): loc is the
/// first half unchanged, scale the second half through scale_mapping, clamped to >= scale_lb.
/// Has no parameters. The constructor throws ValueError for an unknown or malformed
/// scale_mapping (listing the valid ones) or a scale_lb < 0; forward throws ShapeError when the
/// last dim is odd or absent.
/// Example: `NormalParamExtractor extractor; auto [loc, scale] = extractor(net(obs));`
class NormalParamExtractorImpl : public torch::nn::Module {
 public:
  explicit NormalParamExtractorImpl(NormalParamExtractorOptions options = {});

  /// Splits `x` `[*batch, 2 * d]` into (loc, scale), each `[*batch, d]`.
  std::tuple<torch::Tensor, torch::Tensor> forward(const torch::Tensor& x);

  /// Prints `NormalParamExtractor(scale_mapping=biased_softplus_1.0, scale_lb=0.0001)`.
  void pretty_print(std::ostream& stream) const override;

  const NormalParamExtractorOptions& options() const { return options_; }

 private:
  NormalParamExtractorOptions options_;
  std::function<torch::Tensor(const torch::Tensor&)> mapping_;
};

TORCH_MODULE(NormalParamExtractor);

}  // namespace tensordict::nn
