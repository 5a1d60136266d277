#include <tdrl/apps/checkpoint.h>

#include <filesystem>

#include <tensordict/errors.h>
#include <tensordict/nn/functional.h>

namespace tdrl::apps {

tensordict::TensorDict module_state(const torch::nn::Module& module) {
  // The parameters and buffers as tensordict::nn::from_module lays them out, copied.
  return tensordict::nn::from_module(module).detach().clone();
}

void load_module_state(torch::nn::Module& module, const tensordict::TensorDict& state,
                       const std::string& what) {
  // Every entry checked before any is written: a mismatch leaves the module as it was.
  const tensordict::TensorDict target = tensordict::nn::from_module(module);
  std::vector<std::pair<torch::Tensor, torch::Tensor>> copies;  // (module's tensor, source)
  for (const auto& key : target.keys(/*include_nested=*/true, /*leaves_only=*/true)) {
    const std::string name = key.join_parts(".");
    TDRL_CHECK(state.contains(key), tensordict::KeyError, "load_module_state: the checkpoint's ",
               what, " has no entry '", name, "'; it was written by another model (check model.*)");
    const torch::Tensor tensor = target.get(key);
    const torch::Tensor source = state.get(key);
    TDRL_CHECK(source.sizes() == tensor.sizes(), tensordict::ShapeError,
               "load_module_state: the checkpoint's ", what, " entry '", name, "' has shape ",
               tensordict::shape_str(source.sizes()), "; the model's is ",
               tensordict::shape_str(tensor.sizes()), " (check model.*)");
    copies.emplace_back(tensor, source);
  }
  torch::NoGradGuard no_grad;
  for (auto& [tensor, source] : copies) tensor.copy_(source);
}

void save_checkpoint_state(const tensordict::TensorDict& state, const std::string& folder) {
  state.save((std::filesystem::path(folder) / "state").string());
}

tensordict::TensorDict load_checkpoint_state(const std::string& folder) {
  const auto path = (std::filesystem::path(folder) / "state").string();
  if (!std::filesystem::is_directory(path))
    throw std::runtime_error("load_checkpoint_state: " + path +
                             " is missing; the checkpoint folder is incomplete or of an older "
                             "format");
  return tensordict::TensorDict::load(path).clone();
}

RunState load_run_state(const std::string& folder) {
  const tensordict::TensorDict state = load_checkpoint_state(folder);
  if (state.contains("optim")) {
    const tensordict::TensorDict optim = state.get_tensordict("optim");
    for (const auto& group : optim.keys()) {
      TDRL_CHECK(!optim.contains({group.join_parts("/"), "archive"}), tensordict::KeyError,
                 "--resume: ", folder, " was written by tdrl before 0.2 (its optimiser state '",
                 group.join_parts("/"),
                 "' is a LibTorch archive; this tdrl stores it as "
                 "tensors): resume it with the tdrl that wrote it, or start a new run; tdrl-eval "
                 "still evaluates its actor");
    }
  }
  return RunState::from_tensordict(state);
}

}  // namespace tdrl::apps
