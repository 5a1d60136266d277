#include "training/update_step.h"

#include "training/cuda_headers.h"

#include <tdrl/losses/loss_module.h>
#include <tdrl/modules/capturable_adam.h>
#include <tensordict/errors.h>
#include <tensordict/nn/distribution.h>
#include <tensordict/torch_compat.h>

#include <torch/cuda.h>

#include <algorithm>
#include <cmath>
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
  bool warmed_up = false;  // the eager update before the capture ran
  TensorDict input;        // the static input the graph reads
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
  // One gradient-norm sum per group, made here: one made inside a capture would be zeroed at
  // every replay.
  for (const auto& g : recipe_.optimizers)
    norm_sums_.emplace(g.name,
                       torch::zeros({}, torch::TensorOptions(torch::kFloat64).device(device_)));
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
        std::move(groups), static_cast<const torch::optim::AdamOptions&>(g.optimizer->defaults()));
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
  // No value checks of distribution arguments on a GPU: each would wait for the device (and
  // cannot be captured); a bad scale shows as a non-finite loss, which is checked per batch.
  const tensordict::nn::ValidateArgs value_checks(device_.is_cpu());
  // The loss terms: sums of all (one stacked add), the minimised ones checked for non-finite
  // values and summed into the loss to minimise.
  const TensorDict terms = recipe_.loss->forward(minibatch);
  std::vector<std::string> names;
  std::vector<torch::Tensor> values;
  std::vector<bool> used;
  torch::Tensor total;
  for (const auto& [key, value] : terms.items()) {
    const auto name = key.front();
    const auto& term = std::get<torch::Tensor>(value);
    names.push_back(name);
    values.push_back(term.detach().reshape({}));
    bool minimised = false;
    if (name.rfind("loss_", 0) == 0) {
      for (size_t i : active) {
        const auto& wanted = groups[i].terms;
        minimised = minimised || wanted.empty() ||
                    std::find(wanted.begin(), wanted.end(), name) != wanted.end();
      }
    }
    used.push_back(minimised);
    if (minimised) total = total.defined() ? total + term : term;
  }
  if (!names.empty()) {
    const auto all = torch::stack(values).to(torch::kFloat64);
    if (names != term_names_) track_terms(names, all.device(), capturing);
    if (all.is_cpu()) {
      // The same sums by a loop on the host: on the CPU a dozen tiny tensor ops cost more than
      // they save (PPO CartPole's updates were 4% slower with them).
      const auto* v = all.contiguous().data_ptr<double>();
      auto* sum = term_sums_.data_ptr<double>();
      auto* nonfinite = term_nonfinite_.data_ptr<bool>();
      auto* first_bad = term_first_bad_.data_ptr<double>();
      for (size_t i = 0; i < names.size(); ++i) {
        sum[i] += v[i];
        if (used[i] && !std::isfinite(v[i]) && !nonfinite[i]) {
          nonfinite[i] = true;
          first_bad[i] = v[i];
        }
      }
    } else {
      term_sums_.add_(all);
      const auto bad =
          torch::isfinite(all).logical_not_().logical_and_(minimised_mask(used, capturing));
      term_first_bad_.copy_(
          torch::where(bad.logical_and(term_nonfinite_.logical_not()), all, term_first_bad_));
      term_nonfinite_.logical_or_(bad);
    }
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
      norm_sums_.at(g.name).add_(norm);
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
  TDRL_CHECK(device_.is_cuda(), std::runtime_error, "train.cuda_graph: the networks are on '",
             device_.str(), "'; CUDA graphs need device: cuda");
  const c10::cuda::CUDAGuard guard(device_);
  // The first update of each kind runs eagerly on a side stream, as PyTorch's capture recipe
  // does: it creates the optimiser state and LibTorch's per-stream CUDA handles outside the
  // capture.
  if (!graph->warmed_up) {
    torch::cuda::synchronize(device_.index());
    {
      const c10::cuda::CUDAStreamGuard stream(c10::cuda::getStreamFromPool(false, device_.index()));
      step(minibatch, active, /*capturing=*/false);
    }
    torch::cuda::synchronize(device_.index());
    graph->warmed_up = true;
    return minibatch;
  }
  for (auto& g : recipe_.optimizers)
    static_cast<modules::CapturableAdam&>(*g.optimizer).sync_hyperparameters();
  if (!graph->graph) {
    // The second: captured (which runs nothing), then replayed below as every later one.
    graph->input = minibatch.clone();
    torch::cuda::synchronize(device_.index());
    graph->graph = std::make_unique<at::cuda::CUDAGraph>();
    const c10::cuda::CUDAStreamGuard stream(c10::cuda::getStreamFromPool(false, device_.index()));
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
    torch::cuda::synchronize(device_.index());
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

void UpdateStep::track_terms(const std::vector<std::string>& names, torch::Device device,
                             bool capturing) {
  if (capturing)
    throw std::logic_error(
        "UpdateStep: the loss wrote other terms during the CUDA graph capture "
        "than in the eager update before it");
  // A loss whose terms change (rare): the sums so far go to the host, one read of the device
  // (outside any capture), and the device sums start again from zero for the new set.
  if (term_sums_.defined() && term_count_ > 0) {
    const auto sums = term_sums_.cpu();
    const auto nonfinite = term_nonfinite_.cpu();
    const auto first_bad = term_first_bad_.cpu();
    for (size_t i = 0; i < term_names_.size(); ++i) {
      const auto k = static_cast<int64_t>(i);
      auto& carried = carried_[term_names_[i]];
      carried.sum += sums[k].item<double>();
      carried.count += term_count_;
      if (!carried_bad_ && nonfinite[k].item<bool>())
        carried_bad_ = std::make_pair(term_names_[i], first_bad[k].item<double>());
    }
  }
  const auto options = torch::TensorOptions().dtype(torch::kFloat64).device(device);
  const auto n = static_cast<int64_t>(names.size());
  term_names_ = names;
  term_sums_ = torch::zeros({n}, options);
  term_nonfinite_ = torch::zeros({n}, options.dtype(torch::kBool));
  term_first_bad_ = torch::zeros({n}, options);
  term_count_ = 0;
  masks_.clear();
}

const torch::Tensor& UpdateStep::minimised_mask(const std::vector<bool>& used, bool capturing) {
  std::string pattern(used.size(), '0');
  for (size_t i = 0; i < used.size(); ++i)
    if (used[i]) pattern[i] = '1';
  auto it = masks_.find(pattern);
  if (it == masks_.end()) {
    if (capturing)
      throw std::logic_error(
          "UpdateStep: a new set of minimised terms during the CUDA graph "
          "capture");
    std::vector<int64_t> flags(used.begin(), used.end());
    it = masks_.emplace(pattern, torch::tensor(flags).to(torch::kBool).to(term_sums_.device()))
             .first;
  }
  return it->second;
}

std::vector<std::string> UpdateStep::columns(const Recipe& recipe) {
  std::vector<std::string> out = recipe.loss->out_keys();
  for (const auto& g : recipe.optimizers) out.push_back("grad_norm_" + g.name);
  return out;
}

std::map<std::string, double> UpdateStep::take_means() {
  std::map<std::string, double> out;
  // One read of the device for all the sums.
  std::vector<std::string> names;
  std::vector<torch::Tensor> sums;
  std::vector<double> counts;
  std::vector<double> carried_sums;
  if (term_count_ > 0 && term_sums_.defined()) {
    names = term_names_;
    sums.push_back(term_sums_);
    counts.assign(names.size(), static_cast<double>(term_count_));
  }
  carried_sums.assign(names.size(), 0.0);
  for (const auto& [name, carried] : carried_) {
    const auto it = std::find(names.begin(), names.end(), name);
    if (it != names.end()) {
      const auto i = static_cast<size_t>(it - names.begin());
      carried_sums[i] = carried.sum;
      counts[i] += static_cast<double>(carried.count);
    } else {
      out[name] = carried.sum / static_cast<double>(carried.count);
    }
  }
  for (auto& [name, sum] : norm_sums_) {
    const auto count = norm_counts_[name];
    if (count == 0) continue;
    names.push_back("grad_norm_" + name);
    sums.push_back(sum.reshape({1}));
    counts.push_back(static_cast<double>(count));
  }
  if (!sums.empty()) {
    const auto host = torch::cat(sums).cpu();
    const auto* values = host.data_ptr<double>();
    for (size_t i = 0; i < names.size(); ++i) {
      const double carried = i < carried_sums.size() ? carried_sums[i] : 0.0;
      out[names[i]] = (values[i] + carried) / counts[i];
    }
  }
  carried_.clear();
  // In place: a captured graph adds to these very tensors.
  if (term_sums_.defined()) term_sums_.zero_();
  for (auto& [name, sum] : norm_sums_) sum.zero_();
  term_count_ = 0;
  norm_counts_.clear();
  return out;
}

std::optional<std::pair<std::string, double>> UpdateStep::first_nonfinite() const {
  if (carried_bad_) return carried_bad_;
  if (!term_nonfinite_.defined()) return std::nullopt;
  const auto flags = term_nonfinite_.cpu();
  for (int64_t i = 0; i < flags.numel(); ++i)
    if (flags[i].item<bool>())
      return std::make_pair(term_names_[static_cast<size_t>(i)], term_first_bad_[i].item<double>());
  return std::nullopt;
}

}  // namespace tdrl::apps::detail
