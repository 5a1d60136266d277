// share_memory_ / is_shared: storage moved to shared memory in place, visible across fork.

#include <sys/wait.h>
#include <unistd.h>

#include "support/tensordict_fixtures.h"

namespace {

using namespace tensordict::testing;

TEST(SharedMemoryTest, ShareMemoryKeepsValuesAndMovesEveryAliasAlong) {
  auto t = torch::arange(12, torch::kFloat).reshape({3, 4});
  auto view = t.index({1});
  tensordict::share_memory_(t);
  EXPECT_TRUE(tensordict::is_shared(t));
  EXPECT_TRUE(tensordict::is_shared(view)) << "views share the storage, which moved in place";
  EXPECT_TRUE(torch::equal(t, torch::arange(12, torch::kFloat).reshape({3, 4})));
  view.fill_(-1);
  EXPECT_EQ(t.index({1, 0}).item<float>(), -1.0f);
}

TEST(SharedMemoryTest, OrdinaryTensorsAreNotShared) {
  EXPECT_FALSE(tensordict::is_shared(torch::zeros({3})));
  EXPECT_FALSE(tensordict::is_shared(torch::Tensor()));
}

TEST(SharedMemoryTest, AForkedChildsWritesReachTheParent) {
  TensorDict td({{"x", torch::zeros({4})}, {"n", {{"y", torch::zeros({4, 2}, torch::kLong)}}}},
                {4});
  td.share_memory_();
  ASSERT_TRUE(td.is_shared());
  float* x = td.get("x").data_ptr<float>();
  int64_t* y = td.get({"n", "y"}).data_ptr<int64_t>();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Raw writes only: the child must not start LibTorch's thread pools after fork.
    x[2] = 5.0f;
    y[7] = 9;
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(td.get("x")[2].item<float>(), 5.0f);
  EXPECT_EQ(td.get({"n", "y"})[3][1].item<int64_t>(), 9);
}

TEST(SharedMemoryTest, SharedTensorDictPrintsIsSharedTrue) {
  TensorDict td({{"x", torch::zeros({2})}}, {2});
  EXPECT_THAT(td.to_string(), HasSubstr("is_shared=False)"));
  td.share_memory_();
  EXPECT_THAT(
      td.to_string(),
      HasSubstr(
          "x: Tensor(shape=torch.Size([2]), device=cpu, dtype=torch.float32, is_shared=True)"));
  EXPECT_THAT(td.to_string(), HasSubstr("    is_shared=True)"));
}

TEST(SharedMemoryTest, EmptyTensorDictIsNotShared) {
  EXPECT_FALSE(TensorDict::empty({3}).share_memory_().is_shared());
}

}  // namespace
