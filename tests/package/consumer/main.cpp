#include <iostream>

#include <tensordict/tensordict.h>

int main() {
  tensordict::TensorDict td({{"a", torch::ones({3, 2})}, {"b", {{"c", torch::zeros({3})}}}}, {3});
  auto row = td.index({1});
  std::cout << "consumer: batch " << tensordict::shape_str(row.batch_size()) << " sum "
            << row.get("a").sum().item<float>() << "\n";
  return row.batch_size().empty() && row.get("a").sum().item<float>() == 2.0f ? 0 : 1;
}
