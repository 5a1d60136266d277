// A tour of the TensorDict: what `scripts/run.sh` runs until the training apps exist.

#include <iostream>

#include <tensordict/tensordict.h>

int main() {
  using tensordict::TensorDict;
  using namespace torch::indexing;
  torch::manual_seed(0);

  TensorDict data(
      {{"observation", torch::randn({4, 3})},
       {"action", torch::randn({4, 1})},
       {"next", {{"observation", torch::randn({4, 3})}, {"reward", torch::ones({4, 1})}}}},
      {4});
  std::cout << "A batch of 4 transitions:\n" << data << "\n\n";
  std::cout << "The first transition:\n" << data.index({0}) << "\n\n";

  auto stacked = tensordict::stack({data, data.clone()}, 0);
  std::cout << "Two batches stacked lazily, batch_size "
            << tensordict::shape_str(stacked.batch_size()) << "; sum of rewards "
            << stacked.get({"next", "reward"}).sum().item<float>() << "\n";

  auto buffer = TensorDict::empty({8});
  for (int64_t i = 0; i < 8; ++i) buffer.index_put_({i}, data.index({i % 4}));
  std::cout << "A buffer filled row by row (lazy preallocation):\n" << buffer << "\n";
  return 0;
}
