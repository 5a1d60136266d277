#pragma once
// UpdateStep: the Trainer's gradient update, free of host synchronisation, optionally captured as
// a CUDA graph (train.cuda_graph).

#include <tdrl/apps/recipe.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tdrl::apps::detail {

/// Whether this build can capture CUDA graphs (its LibTorch was built with CUDA).
bool cuda_graphs_available();

/// One gradient update of a recipe's loss: the loss forward, backward, gradient-norm clipping,
/// the optimiser steps of the active groups and the recipe's after_update. No host
/// synchronisation happens inside: the loss terms, the gradient norms and whether a minimised
/// term was non-finite accumulate in tensors on the training device, read once per logging
/// interval (means()) or per batch (first_nonfinite()).
///
/// With `cuda_graph`, each set of active groups and minibatch size is run once eagerly (it warms
/// up the optimiser state and LibTorch's CUDA handles), then captured once as a CUDA graph and
/// replayed for every later update: the minibatch is copied into the graph's static input, the
/// learning rates of CapturableAdam groups are copied to the device, the graph replays. This
/// needs every group's optimiser to be a modules::CapturableAdam (LibTorch's optimisers keep
/// their step on the host) and a loss without host synchronisation; the recipe's after_update is
/// captured when after_update_capturable(), else it runs after each replay.
///
/// Errors: std::runtime_error naming train.cuda_graph when the update cannot be captured (an
/// operation in the loss that synchronises with the host), or when this build has no CUDA.
class UpdateStep {
 public:
  UpdateStep(Recipe& recipe, double max_grad_norm, bool cuda_graph);
  ~UpdateStep();

  /// One update on `minibatch` (on the training device) stepping the groups `active` (indices
  /// into recipe.optimizers). Returns the TensorDict the loss read (the graph's static input
  /// under cuda_graph), which holds what the loss wrote into it (TD errors for priorities).
  TensorDict run(const TensorDict& minibatch, const std::vector<size_t>& active);

  /// The metrics columns take_means fills for `recipe`: each entry the loss declares it writes
  /// (its out_keys), then "grad_norm_<group>" per optimiser group.
  static std::vector<std::string> columns(const Recipe& recipe);
  /// The means since the last call: per loss term, and per optimiser group its gradient norm
  /// before clipping ("grad_norm_<group>"). Reads the device once; resets the sums.
  std::map<std::string, double> take_means();
  /// The first non-finite value of a minimised loss term since construction, with the term's
  /// name: one read of the device.
  std::optional<std::pair<std::string, double>> first_nonfinite() const;

 private:
  struct Graph;
  // The update itself, as run eagerly and as captured.
  void step(const TensorDict& minibatch, const std::vector<size_t>& active, bool capturing);
  TensorDict run_graph(const TensorDict& minibatch, const std::vector<size_t>& active);

  Recipe& recipe_;
  double max_grad_norm_;
  bool cuda_graph_;
  torch::Device device_ = torch::kCPU;  // the networks'
  // track_terms makes the term sums for `names` on `device`, after moving the sums so far to the
  // host (carried_); minimised_mask is the device mask of the minimised terms, made once per
  // pattern.
  void track_terms(const std::vector<std::string>& names, torch::Device device, bool capturing);
  const torch::Tensor& minimised_mask(const std::vector<bool>& used, bool capturing);

  // Sums on the training device, one element per loss term (term_names_), updated in place: a
  // captured graph writes the same memory.
  std::vector<std::string> term_names_;
  torch::Tensor term_sums_;       // float64: each term's values added up
  torch::Tensor term_nonfinite_;  // bool: a non-finite value of the term was minimised
  torch::Tensor term_first_bad_;  // float64: that value
  std::map<std::string, torch::Tensor> masks_;      // by the pattern of minimised terms
  std::map<std::string, torch::Tensor> norm_sums_;  // by group name, float64 on device_
  std::map<std::string, int64_t> norm_counts_;
  int64_t term_count_ = 0;  // updates summed in term_sums_
  // The sums of the terms a loss wrote before its set of terms changed (rare: a loss that writes
  // a term on some updates only), kept on the host so that each term's mean is over the updates
  // that wrote it; and the first non-finite minimised value among them.
  struct Carried {
    double sum = 0;
    int64_t count = 0;
  };
  std::map<std::string, Carried> carried_;
  std::optional<std::pair<std::string, double>> carried_bad_;
  std::map<std::string, std::unique_ptr<Graph>> graphs_;  // by active groups and minibatch size
};

}  // namespace tdrl::apps::detail
