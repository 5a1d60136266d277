#include "tdrl/modules/capturable_adam.h"

#include <tensordict/torch_compat.h>

namespace tdrl::modules {

namespace {

torch::optim::AdamParamState& adam_state(torch::optim::Optimizer& optimizer, const torch::Tensor& p,
                                         bool amsgrad) {
  auto& state = optimizer.state();
  const auto key = tensordict::compat::optimizer_state_key(p);
  auto it = state.find(key);
  if (it == state.end()) {
    // As torch::optim::Adam's first step: zero moments, step 0.
    auto fresh = std::make_unique<torch::optim::AdamParamState>();
    fresh->step(0);
    fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    if (amsgrad) fresh->max_exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    it = state.emplace(key, std::move(fresh)).first;
  }
  return static_cast<torch::optim::AdamParamState&>(*it->second);
}

// Whether a parameter steps through at::_fused_adam_ (float32 CUDA tensors, where LibTorch has
// it with a tensor learning rate).
bool fused(const torch::Tensor& p) {
#if TDRL_HAS_FUSED_ADAM_TENSOR_LR
  return p.is_cuda() && p.scalar_type() == torch::kFloat32;
#else
  (void)p;
  return false;
#endif
}

// The dtype of the step counts and learning rates: float32 for the fused kernel (as PyTorch's
// fused Adam), float64 elsewhere (LibTorch's Adam computes its bias corrections in double).
torch::Dtype scalar_dtype(const torch::Tensor& p) {
  return fused(p) ? torch::kFloat32 : torch::kFloat64;
}

}  // namespace

CapturableAdam::CapturableAdam(std::vector<torch::Tensor> params,
                               torch::optim::AdamOptions defaults)
    : Adam(std::move(params), std::move(defaults)) {}

CapturableAdam::CapturableAdam(std::vector<torch::optim::OptimizerParamGroup> param_groups,
                               torch::optim::AdamOptions defaults)
    : Adam(std::move(param_groups), std::move(defaults)) {}

torch::Tensor& CapturableAdam::step_count(const torch::Tensor& p,
                                          torch::optim::AdamParamState& state) {
  auto it = steps_.find(p.unsafeGetTensorImpl());
  if (it == steps_.end() || it->second.device() != p.device()) {
    // From Adam's host count: a fresh state (0) or one loaded from a checkpoint.
    auto count = torch::full({}, static_cast<double>(state.step()),
                             torch::TensorOptions().dtype(scalar_dtype(p)).device(p.device()));
    it = steps_.insert_or_assign(p.unsafeGetTensorImpl(), std::move(count)).first;
  }
  return it->second;
}

void CapturableAdam::sync_hyperparameters() {
  groups_.resize(param_groups().size());
  for (size_t i = 0; i < param_groups().size(); ++i) {
    const auto& group = param_groups()[i];
    if (group.params().empty()) continue;
    const double lr = static_cast<const torch::optim::AdamOptions&>(group.options()).lr();
    auto& g = groups_[i];
    const auto device = group.params().front().device();
    if (!g.lr_tensor.defined() || g.lr_tensor.device() != device) {
      g.lr_tensor = torch::full(
          {}, lr,
          torch::TensorOptions().dtype(scalar_dtype(group.params().front())).device(device));
    } else if (g.lr != lr) {
      g.lr_tensor.fill_(lr);
    }
    g.lr = lr;
  }
}

torch::Tensor CapturableAdam::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  sync_hyperparameters();
  for (size_t i = 0; i < param_groups().size(); ++i) {
    auto& group = param_groups()[i];
    const auto& options = static_cast<const torch::optim::AdamOptions&>(group.options());
    const double beta1 = std::get<0>(options.betas());
    const double beta2 = std::get<1>(options.betas());
    std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, counts;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& state = adam_state(*this, p, options.amsgrad());
      counts.push_back(step_count(p, state));  // before the host count moves on
      state.step(state.step() + 1);            // host mirror; save() overwrites it from the device
      params.push_back(p);
      grads.push_back(p.grad());
      exp_avgs.push_back(state.exp_avg());
      exp_avg_sqs.push_back(state.exp_avg_sq());
      if (options.amsgrad()) max_exp_avg_sqs.push_back(state.max_exp_avg_sq());
    }
    if (params.empty()) continue;
#if TDRL_HAS_FUSED_ADAM_TENSOR_LR
    if (fused(params.front())) {
      // One kernel for the group, as PyTorch's Adam(fused=True, capturable=True).
      at::_foreach_add_(counts, 1);
      at::_fused_adam_(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, counts,
                       groups_[i].lr_tensor, beta1, beta2, options.weight_decay(), options.eps(),
                       options.amsgrad(), /*maximize=*/false);
      continue;
    }
#endif
    for (size_t k = 0; k < params.size(); ++k) {
      // torch::optim::Adam::step's update with the step count and the learning rate read from
      // device tensors: bias_correction = 1 - beta^step, step_size = lr / bias_correction1.
      auto& count = counts[k];
      count.add_(1);
      const auto bias_correction1 = 1 - torch::pow(beta1, count);
      const auto bias_correction2 = 1 - torch::pow(beta2, count);
      auto grad = grads[k];
      if (options.weight_decay() != 0) grad = grad.add(params[k], options.weight_decay());
      exp_avgs[k].mul_(beta1).add_(grad, 1 - beta1);
      exp_avg_sqs[k].mul_(beta2).addcmul_(grad, grad, 1 - beta2);
      // amsgrad: the running maximum of the second moment in the denominator.
      auto second = exp_avg_sqs[k];
      if (options.amsgrad())
        second = torch::max_out(max_exp_avg_sqs[k], max_exp_avg_sqs[k], second);
      const auto denom = (second.sqrt() / bias_correction2.sqrt()).add_(options.eps());
      params[k].addcdiv_(exp_avgs[k] * (groups_[i].lr_tensor / bias_correction1), denom, -1);
    }
  }
  return loss;
}

void CapturableAdam::sync_host_steps() const {
  // The host mirror counts a captured step once, however often it was replayed.
  for (const auto& group : param_groups()) {
    for (const auto& p : group.params()) {
      const auto step = steps_.find(p.unsafeGetTensorImpl());
      const auto it = state().find(tensordict::compat::optimizer_state_key(p));
      if (step == steps_.end() || it == state().end()) continue;
      static_cast<torch::optim::AdamParamState&>(*it->second)
          .step(static_cast<int64_t>(step->second.item<double>() + 0.5));
    }
  }
}

void CapturableAdam::save(torch::serialize::OutputArchive& archive) const {
  sync_host_steps();
  Adam::save(archive);
}

void CapturableAdam::load(torch::serialize::InputArchive& archive) {
  Adam::load(archive);
  forget_device_steps();
}

}  // namespace tdrl::modules
