#include "detail/update_step.h"

#include "detail/cuda_headers.h"

#include <tdrl/losses/loss_module.h>
#include <tdrl/modules/capturable_adam.h>
#include <tensordict/errors.h>
#include <tensordict/nn/distribution.h>
#include <tensordict/torch_compat.h>

#include <torch/cuda.h>

#include <algorithm>
#include <stdexcept>
#include <typeinfo>

namespace tdrl::apps::detail {

bool cuda_graphs_available() {
#ifdef TDRL_HAS_CUDA_HEADERS
  return true;
#else
  return false;
#endif
}

struct UpdateStep::Graph {
  int64_t eager_runs = 0;
  TensorDict input;  // the static input the graph reads
#ifdef TDRL_HAS_CUDA_HEADERS
  std::unique_ptr<at::cuda::CUDAGraph> graph;
#endif
};

UpdateStep::UpdateStep(Recipe& recipe, double max_grad_norm, bool cuda_graph)
    : recipe_(recipe), max_grad_norm_(max_grad_norm), cuda_graph_(cuda_graph) {
  // Where the networks are (the Trainer moved them before): the first optimised parameter's.
  for (const auto& g : recipe_.optimizers)
    for (const auto& pg : g.optimizer->param_groups())
      if (!pg.params().empty() && device_.is_cpu()) device_ = pg.params().front().device();
  TDRL_CHECK(!cuda_graph || cuda_graphs_available(), std::runtime_error,
             "train.cuda_graph: this build of tdrl has no CUDA (its LibTorch was built without "
             "it); set train.cuda_graph: false or build against a CUDA LibTorch");
  if (!cuda_graph) return;
  // LibTorch's Adam becomes a CapturableAdam over the same parameter groups and options (before
  // any step or checkpoint load: the state is Adam's either way).
  for (auto& g : recipe_.optimizers) {
    if (dynamic_cast<modules::CapturableAdam*>(g.optimizer.get())) continue;
    const auto& optimizer = *g.optimizer;
    TDRL_CHECK(typeid(optimizer) == typeid(torch::optim::Adam), std::runtime_error,
               "train.cuda_graph: the optimiser of group '", g.name,
               "' is neither torch::optim::Adam nor tdrl::modules::CapturableAdam (a captured "
               "step of another optimiser would replay the step count and learning rate of the "
               "capture); use optim.name: adam, or train.cuda_graph: false");
    std::vector<torch::optim::OptimizerParamGroup> groups(g.optimizer->param_groups().begin(),
                                                          g.optimizer->param_groups().end());
    g.optimizer = std::make_shared<modules::CapturableAdam>(
        std::move(groups),
        static_cast<const torch::optim::AdamOptions&>(g.optimizer->defaults()));
  }
}

UpdateStep::~UpdateStep() = default;

TensorDict UpdateStep::run(const TensorDict& minibatch, const std::vector<size_t>& active) {
  TensorDict seen = minibatch;
  if (cuda_graph_) {
    seen = run_graph(minibatch, active);
  } else {
    step(minibatch, active, /*capturing=*/false);
  }
  ++term_count_;
  for (size_t i : active) ++norm_counts_[recipe_.optimizers[i].name];
  return seen;
}

void UpdateStep::step(const TensorDict& minibatch, const std::vector<size_t>& active,
                      bool capturing) {
  auto& groups = recipe_.optimizers;
  // Sums created inside a capture would be zeroed at every replay: they come from the eager run
  // that precedes each capture.
  const auto created = [capturing](const std::string& what) {
    if (capturing)
      throw std::logic_error("UpdateStep: '" + what +
                             "' appeared during the CUDA graph capture but not in the eager "
                             "update before it");
  };
  // No value checks of distribution arguments on a GPU: each would wait for the device (and
  // cannot be captured); a bad scale shows as a non-finite loss, which is checked per batch.
  const tensordict::nn::ValidateArgs value_checks(device_.is_cpu());
  // The loss terms: sums of all, the minimised ones checked for non-finite values and summed.
  const TensorDict terms = recipe_.loss->forward(minibatch);
  torch::Tensor total;
  for (const auto& [key, value] : terms.items()) {
    const auto name = key.front();
    const auto& term = std::get<torch::Tensor>(value);
    const auto t = term.detach().reshape({}).to(torch::kFloat64);
    auto it = terms_.find(name);
    if (it == terms_.end()) {
      created(name);
      const auto options = t.options();
      it = terms_.emplace(name, TermSums{torch::zeros({}, options),
                                         torch::zeros({}, options.dtype(torch::kBool)),
                                         torch::zeros({}, options)})
               .first;
    }
    auto& sums = it->second;
    sums.sum.add_(t);
    if (name.rfind("loss_", 0) != 0) continue;
    bool used = false;
    for (size_t i : active) {
      const auto& names = groups[i].terms;
      used = used || names.empty() || std::find(names.begin(), names.end(), name) != names.end();
    }
    if (!used) continue;
    const auto bad = torch::isfinite(t).logical_not();
    sums.first_bad.copy_(torch::where(bad & sums.nonfinite.logical_not(), t, sums.first_bad));
    sums.nonfinite.logical_or_(bad);
    total = total.defined() ? total + term : term;
  }
  if (!total.defined()) return;
  // Gradients from none (a captured backward allocates them in the graph's memory pool).
  for (auto& g : groups)
    for (auto& pg : g.optimizer->param_groups())
      for (auto& p : pg.params()) p.mutable_grad().reset();
  total.backward();
  // Each active group: its gradient norm before clipping, clipping by a factor computed on the
  // device (torch::nn::utils::clip_grad_norm_ returns the norm to the host), its step.
  for (size_t i : active) {
    auto& g = groups[i];
    std::vector<torch::Tensor> grads;
    for (auto& pg : g.optimizer->param_groups())
      for (auto& p : pg.params())
        if (p.grad().defined()) grads.push_back(p.grad());
    if (!grads.empty()) {
      const auto norm = torch::stack(at::_foreach_norm(grads)).norm();
      auto sum = norm_sums_.find(g.name);
      if (sum == norm_sums_.end()) {
        created("grad_norm_" + g.name);
        sum = norm_sums_.emplace(g.name, torch::zeros({}, total.options().dtype(torch::kFloat64)))
                  .first;
      }
      sum->second.add_(norm);
      if (max_grad_norm_ > 0)
        tensordict::compat::foreach_mul_(grads, (max_grad_norm_ / (norm + 1e-6)).clamp_max(1.0));
    }
    g.optimizer->step();
  }
  if (!capturing || recipe_.after_update_capturable()) recipe_.after_update();
}

TensorDict UpdateStep::run_graph(const TensorDict& minibatch, const std::vector<size_t>& active) {
#ifdef TDRL_HAS_CUDA_HEADERS
  std::string key = std::to_string(minibatch.batch_size().empty() ? 0 : minibatch.batch_size()[0]);
  for (size_t i : active) key += "/" + recipe_.optimizers[i].name;
  auto& graph = graphs_[key];
  if (!graph) graph = std::make_unique<Graph>();
  const auto device = device_;
  TDRL_CHECK(device.is_cuda(), std::runtime_error,
             "train.cuda_graph: the networks are on '", device.str(),
             "'; CUDA graphs need device: cuda");
  const c10::cuda::CUDAGuard device_guard(device);
  // The first update of each kind runs eagerly on a side stream, as PyTorch's capture recipe
  // does: it creates the optimiser state and LibTorch's per-stream CUDA handles outside the
  // capture.
  if (graph->eager_runs == 0) {
    torch::cuda::synchronize(device.index());
    {
      const c10::cuda::CUDAStreamGuard stream(c10::cuda::getStreamFromPool(false, device.index()));
      step(minibatch, active, /*capturing=*/false);
    }
    torch::cuda::synchronize(device.index());
    ++graph->eager_runs;
    return minibatch;
  }
  for (auto& g : recipe_.optimizers)
    static_cast<modules::CapturableAdam&>(*g.optimizer).sync_hyperparameters();
  if (!graph->graph) {
    // The second: captured (which runs nothing), then replayed below as every later one.
    graph->input = minibatch.clone();
    torch::cuda::synchronize(device.index());
    graph->graph = std::make_unique<at::cuda::CUDAGraph>();
    const c10::cuda::CUDAStreamGuard stream(c10::cuda::getStreamFromPool(false, device.index()));
    try {
      graph->graph->capture_begin();
      step(graph->input, active, /*capturing=*/true);
      graph->graph->capture_end();
    } catch (const std::exception& e) {
      // The stream stays in capture mode until the capture ends, failed or not.
      try {
        graph->graph->capture_end();
      } catch (const std::exception&) {
      }
      graph->graph.reset();
      graphs_.erase(key);
      throw std::runtime_error(
          std::string("train.cuda_graph: the update cannot be captured as a CUDA graph (an "
                      "operation in the loss or the recipe needs the host): ") +
          e.what() + "; set train.cuda_graph: false");
    }
    torch::cuda::synchronize(device.index());
  } else {
    graph->input.update_(minibatch);
  }
  graph->graph->replay();
  if (!recipe_.after_update_capturable()) recipe_.after_update();
  return graph->input;
#else
  (void)minibatch;
  (void)active;
  throw std::logic_error("UpdateStep: CUDA graphs in a build without CUDA");
#endif
}

std::map<std::string, double> UpdateStep::take_means() {
  std::map<std::string, double> out;
  // One read of the device for all the sums.
  std::vector<std::string> names;
  std::vector<torch::Tensor> sums;
  std::vector<double> counts;
  for (auto& [name, s] : terms_) {
    if (term_count_ == 0) break;
    names.push_back(name);
    sums.push_back(s.sum);
    counts.push_back(static_cast<double>(term_count_));
  }
  for (auto& [name, sum] : norm_sums_) {
    const auto count = norm_counts_[name];
    if (count == 0) continue;
    names.push_back("grad_norm_" + name);
    sums.push_back(sum);
    counts.push_back(static_cast<double>(count));
  }
  if (!sums.empty()) {
    const auto host = torch::stack(sums).cpu();
    const auto* values = host.data_ptr<double>();
    for (size_t i = 0; i < names.size(); ++i) out[names[i]] = values[i] / counts[i];
  }
  // In place: a captured graph adds to these very tensors.
  for (auto& [name, s] : terms_) s.sum.zero_();
  for (auto& [name, sum] : norm_sums_) sum.zero_();
  term_count_ = 0;
  norm_counts_.clear();
  return out;
}

std::optional<std::pair<std::string, double>> UpdateStep::first_nonfinite() const {
  if (terms_.empty()) return std::nullopt;
  std::vector<torch::Tensor> flags;
  for (const auto& [name, s] : terms_) flags.push_back(s.nonfinite);
  const auto host = torch::stack(flags).cpu();
  size_t i = 0;
  for (const auto& [name, s] : terms_) {
    if (host[static_cast<int64_t>(i++)].item<bool>()) return std::make_pair(name, s.first_bad.item<double>());
  }
  return std::nullopt;
}

}  // namespace tdrl::apps::detail
