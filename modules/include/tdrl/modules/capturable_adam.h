#pragma once
// CapturableAdam: Adam whose step can be captured in a CUDA graph.

#include <torch/optim/adam.h>

#include <unordered_map>
#include <vector>

namespace tdrl::modules {

/// Adam (Kingma & Ba; LibTorch's torch::optim::Adam, amsgrad included) whose step count, bias
/// corrections and learning rate live in tensors on each parameter's device. LibTorch's Adam
/// computes them on the host, so a step captured in a CUDA graph would replay the step count and
/// learning rate of the capture forever; this one reads them from device memory, and a step does
/// no host synchronisation.
///
/// The update equals torch::optim::Adam's to float rounding (tested over many steps, weight decay
/// and amsgrad included). float32 parameters on a GPU step through LibTorch's fused Adam kernel
/// (one launch per group) where LibTorch has it with a tensor learning rate (2.x), per parameter
/// otherwise. The state is Adam's (AdamParamState: exp_avg, exp_avg_sq, max_exp_avg_sq, step),
/// so a checkpoint written by either loads into the other; save() reads the device step counts
/// (one host synchronisation, at save time only).
///
/// Learning rate: set it through param_groups()[i].options() as for Adam. step() copies a changed
/// value to the device before it updates; whoever replays a captured step calls
/// sync_hyperparameters() before each replay instead (a copy, not a synchronisation).
///
/// Errors: those of torch::optim::Adam (its constructor checks the options).
class CapturableAdam : public torch::optim::Adam {
 public:
  explicit CapturableAdam(std::vector<torch::Tensor> params,
                          torch::optim::AdamOptions defaults = {});
  explicit CapturableAdam(std::vector<torch::optim::OptimizerParamGroup> param_groups,
                          torch::optim::AdamOptions defaults = {});

  /// One Adam step of every parameter that has a gradient. No host synchronisation; capturable
  /// once each such parameter has state (after one step outside the capture).
  torch::Tensor step(LossClosure closure = nullptr) override;
  /// Copies each group's learning rate to its device tensor where it changed since the last copy.
  void sync_hyperparameters();

  /// Writes the device step counts into Adam's host state (AdamParamState::step), one host
  /// synchronisation: what save() and modules::optimizer_state read.
  void sync_host_steps() const;
  /// Drops the device step counts, so that the next step reads Adam's host counts: for whoever
  /// replaces the state (load(), modules::load_optimizer_state).
  void forget_device_steps() { steps_.clear(); }

  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;

 private:
  struct GroupTensors {
    double lr = -1;  // the value last copied to `lr_tensor`
    torch::Tensor lr_tensor;
  };
  // Per parameter: its step count on its device (0-dim; float32 for the fused kernel, float64
  // elsewhere), beside Adam's host count.
  torch::Tensor& step_count(const torch::Tensor& p, torch::optim::AdamParamState& state);

  std::unordered_map<const void*, torch::Tensor> steps_;
  std::vector<GroupTensors> groups_;
};

}  // namespace tdrl::modules
