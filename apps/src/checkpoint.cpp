#include <tdrl/apps/checkpoint.h>

#include <cstring>
#include <filesystem>

#include <torch/serialize.h>

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

tensordict::TensorDict optimizer_state(torch::optim::Optimizer& optimizer) {
  torch::serialize::OutputArchive archive;
  optimizer.save(archive);
  std::string bytes;
  archive.save_to([&bytes](const void* data, size_t size) -> size_t {
    bytes.append(static_cast<const char*>(data), size);
    return size;
  });
  auto tensor = torch::empty({static_cast<int64_t>(bytes.size())}, torch::kUInt8);
  std::memcpy(tensor.data_ptr<uint8_t>(), bytes.data(), bytes.size());
  return tensordict::TensorDict({{"archive", tensor}}, {});
}

void load_optimizer_state(torch::optim::Optimizer& optimizer, const tensordict::TensorDict& state,
                          const std::string& what) {
  const torch::Tensor bytes = state.get("archive").contiguous();
  torch::serialize::InputArchive archive;
  // The state goes where the optimiser's parameters are, whichever device wrote it (a GPU run
  // resumed with --set device=cpu).
  c10::optional<torch::Device> device;  // load_from's type: LibTorch 1.x's own optional
  for (const auto& group : optimizer.param_groups()) {
    if (!group.params().empty()) {
      device = group.params().front().device();
      break;
    }
  }
  try {
    archive.load_from(reinterpret_cast<const char*>(bytes.data_ptr<uint8_t>()),
                      static_cast<size_t>(bytes.numel()), device);
    optimizer.load(archive);
  } catch (const c10::Error& e) {
    throw std::runtime_error("load_optimizer_state: the checkpoint's optimiser '" + what +
                             "' does not fit this run's optimiser: " + e.what_without_backtrace());
  }
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

}  // namespace tdrl::apps
