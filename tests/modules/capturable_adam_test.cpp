// CapturableAdam: the same updates as LibTorch's Adam over many steps (learning-rate changes,
// weight decay and amsgrad included), state that either optimiser loads from the other.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <torch/cuda.h>
#include <torch/torch.h>

#include <sstream>

#include "tdrl/modules/capturable_adam.h"

namespace {

using tdrl::modules::CapturableAdam;

// Two copies of one small network, the same data for both.
struct Twins {
  torch::nn::Sequential a{torch::nn::Linear(5, 16), torch::nn::Tanh(), torch::nn::Linear(16, 2)};
  torch::nn::Sequential b{torch::nn::Linear(5, 16), torch::nn::Tanh(), torch::nn::Linear(16, 2)};
  torch::Tensor x, y;
  explicit Twins(torch::Device device) {
    torch::manual_seed(3);
    a->to(device);
    b->to(device);
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < a->parameters().size(); ++i)
      b->parameters()[i].copy_(a->parameters()[i]);
    x = torch::randn({64, 5}).to(device);
    y = torch::randn({64, 2}).to(device);
  }
  static void train_step(torch::nn::Sequential& net, torch::optim::Optimizer& opt,
                         const torch::Tensor& x, const torch::Tensor& y) {
    opt.zero_grad();
    torch::mse_loss(net->forward(x), y).backward();
    opt.step();
  }
  double max_difference() const {
    double worst = 0;
    for (size_t i = 0; i < a->parameters().size(); ++i)
      worst = std::max(worst, (a->parameters()[i] - b->parameters()[i]).abs().max().item<double>());
    return worst;
  }
};

void expect_same_updates_as_adam(torch::Device device, bool amsgrad) {
  Twins t(device);
  const auto options =
      torch::optim::AdamOptions(3e-3).weight_decay(1e-2).eps(1e-6).amsgrad(amsgrad);
  torch::optim::Adam reference(t.a->parameters(), options);
  CapturableAdam capturable(t.b->parameters(), options);
  for (int i = 0; i < 400; ++i) {
    if (i == 200) {
      // A schedule changes the learning rate between steps; both read the new value.
      for (auto* opt : std::initializer_list<torch::optim::Optimizer*>{&reference, &capturable})
        for (auto& group : opt->param_groups()) group.options().set_lr(1e-3);
    }
    Twins::train_step(t.a, reference, t.x, t.y);
    Twins::train_step(t.b, capturable, t.x, t.y);
  }
  EXPECT_LT(t.max_difference(), 1e-5);
  // The parameters moved: the comparison is not of two untrained copies.
  Twins untrained(device);
  double moved = 0;
  for (size_t i = 0; i < t.b->parameters().size(); ++i)
    moved = std::max(
        moved, (t.b->parameters()[i] - untrained.b->parameters()[i]).abs().max().item<double>());
  EXPECT_GT(moved, 1e-2);
}

TEST(CapturableAdamTest, UpdatesAsLibTorchsAdamOverManySteps) {
  expect_same_updates_as_adam(torch::kCPU, /*amsgrad=*/false);
}

TEST(CapturableAdamTest, UpdatesAsLibTorchsAmsgradOverManySteps) {
  expect_same_updates_as_adam(torch::kCPU, /*amsgrad=*/true);
}

TEST(CapturableAdamCUDATest, UpdatesAsLibTorchsAdamOverManyStepsOnTheGpu) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device on this machine";
  expect_same_updates_as_adam(torch::Device(torch::kCUDA, 0), /*amsgrad=*/false);
  expect_same_updates_as_adam(torch::Device(torch::kCUDA, 0), /*amsgrad=*/true);
}

// Saved by one optimiser and loaded by the other, training continues as if uninterrupted.
template <class From, class To>
void expect_state_carries_over() {
  Twins t(torch::kCPU);
  const auto options = torch::optim::AdamOptions(1e-2);
  From first(t.a->parameters(), options);
  for (int i = 0; i < 30; ++i) Twins::train_step(t.a, first, t.x, t.y);
  std::stringstream bytes;
  {
    torch::serialize::OutputArchive archive;
    first.save(archive);
    archive.save_to(bytes);
  }
  {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < t.a->parameters().size(); ++i)
      t.b->parameters()[i].copy_(t.a->parameters()[i]);
  }
  To second(t.b->parameters(), options);
  torch::serialize::InputArchive archive;
  archive.load_from(bytes);
  second.load(archive);
  for (int i = 0; i < 30; ++i) {
    Twins::train_step(t.a, first, t.x, t.y);
    Twins::train_step(t.b, second, t.x, t.y);
  }
  // Lost step counts would restart the bias corrections and show here.
  EXPECT_LT(t.max_difference(), 1e-6);
}

TEST(CapturableAdamTest, StateSavedByAdamContinuesInCapturableAdam) {
  expect_state_carries_over<torch::optim::Adam, CapturableAdam>();
}

TEST(CapturableAdamTest, StateSavedByCapturableAdamContinuesInAdam) {
  expect_state_carries_over<CapturableAdam, torch::optim::Adam>();
}

}  // namespace
