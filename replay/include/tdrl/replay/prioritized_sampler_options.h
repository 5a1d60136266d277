#pragma once

/// PrioritizedSamplerOptions, the options of tdrl::replay::PrioritizedSampler
/// (prioritized_sampler.h): apart from the sampler, so that a config section can hold them
/// without the sampler's headers.

#include <torch/arg.h>

#include <tensordict/fields.h>

namespace tdrl::replay {

/// Options of PrioritizedSampler. `alpha` and `beta` are required.
/// Example: `PrioritizedSamplerOptions(0.6, 0.4).eps(1e-6)`
struct PrioritizedSamplerOptions {
  PrioritizedSamplerOptions(double alpha, double beta) : alpha_(alpha), beta_(beta) {}
  /// How strongly priorities shape sampling: element i is drawn with probability
  /// `p_i / sum_j p_j` where `p_i = (priority_i + eps)^alpha`; 0 is uniform. Must be >= 0.
  TORCH_ARG(double, alpha);
  /// Importance-sampling correction: `weight_i = (p_i / p_min)^(-beta)`, i.e.
  /// `(N P(i))^(-beta)` normalised by the largest weight. Must be >= 0.
  TORCH_ARG(double, beta);
  /// Added to every priority so that no element gets probability 0. Must be >= 0.
  /// Default 1e-8.
  TORCH_ARG(double, eps) = 1e-8;
  /// The priority given to elements written before any larger priority was set; new
  /// elements get the largest priority seen so far. Must be finite and >= 0. Default 1.
  TORCH_ARG(double, max_priority) = 1.0;

 public:
  void fields(tensordict::fields::FieldVisitor& v) {
    namespace tf = tensordict::fields;
    v("alpha", alpha_, tf::at_least(0), "priority exponent (0: uniform sampling)");
    v("beta", beta_, tf::at_least(0), "importance-sampling exponent");
    v("eps", eps_, tf::at_least(0), "added to every priority so that none has probability 0");
    v("max_priority", max_priority_, tf::at_least(0),
      "the priority of elements written before any larger one was set");
  }
};

}  // namespace tdrl::replay
