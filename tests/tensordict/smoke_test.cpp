#include <gtest/gtest.h>

#include <tensordict/tensordict.h>

TEST(SmokeTest, Builds) {
  tensordict::TensorDict td({{"a", torch::zeros({3, 4, 5})}, {"b", torch::zeros({3, 4})}}, {3, 4});
  EXPECT_EQ(td.batch_size(), (tensordict::BatchSize{3, 4}));
}
