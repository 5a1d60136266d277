// TensorDict transport over c10d with Gloo: this process is rank 0 and launches rank 1
// (distributed_peer) as a second process; the two talk over 127.0.0.1 only.

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <string>
#include <thread>

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <tensordict/distributed.h>

#include "distributed_scenarios.h"
#include "support/build_paths.h"
#include "support/tensordict_fixtures.h"

extern char** environ;

namespace {

using namespace tensordict::testing;

// Rank 0's group with a freshly launched peer running `scenario`.
class DistributedTest : public ::testing::Test {
 protected:
  void start(const std::string& scenario) {
    c10d::TCPStoreOptions store_options;
    store_options.port = 0;  // any free port; the peer is told which
    store_options.isServer = true;
    store_options.numWorkers = 2;
    store_options.waitWorkers = false;
    store_options.timeout = std::chrono::seconds(30);
    auto store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", store_options);
    const std::string port = std::to_string(store->getPort());
    std::string exe = tdrl::testing::launched_program();
    std::vector<char*> args{exe.data(), const_cast<char*>(port.c_str()),
                            const_cast<char*>(scenario.c_str()), nullptr};
    ASSERT_EQ(posix_spawn(&peer_, exe.c_str(), nullptr, nullptr, args.data(), environ), 0)
        << "cannot launch " << exe;
    auto options = c10d::ProcessGroupGloo::Options::create(std::chrono::seconds(30));
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    group_ = c10::make_intrusive<c10d::ProcessGroupGloo>(store, 0, 2, options);
  }

  // The peer's exit code; it is killed (and -1 returned) if it has not ended within 60 s.
  int finish() {
    group_->barrier()->wait();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    int status = 0;
    while (waitpid(peer_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(peer_, SIGKILL);
        waitpid(peer_, &status, 0);
        peer_ = 0;
        return -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    peer_ = 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  void TearDown() override {
    if (peer_ > 0) {
      kill(peer_, SIGKILL);
      waitpid(peer_, nullptr, 0);
    }
  }

  pid_t peer_ = 0;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;
};

TEST_F(DistributedTest, RecvFillsANestedTensorDictSentByAnotherProcess) {
  start("send");
  auto td = distributed_sample(0.0, /*reversed=*/true);
  auto a = td.get("a");
  tensordict::recv(td, *group_, /*src=*/1);
  EXPECT_TRUE(td.allclose(distributed_sample(1.0)));
  EXPECT_TRUE(torch::equal(a, torch::arange(6, torch::kFloat).reshape({2, 3})))
      << "recv writes into the existing tensors";
  EXPECT_EQ(finish(), 0);
}

TEST_F(DistributedTest, SendReachesTheOtherProcess) {
  start("recv");
  tensordict::send(distributed_sample(1.0), *group_, /*dst=*/1);
  EXPECT_EQ(finish(), 0) << "the peer checks what it received";
}

TEST_F(DistributedTest, RecvOfAMismatchedStructureThrowsNamingTheLeafAndLeavesDataUnchanged) {
  start("send_mismatch");
  auto td = distributed_sample(0.0);
  EXPECT_THAT([&] { tensordict::recv(td, *group_, 1); },
              ThrowsMessage<tensordict::Error>(
                  AllOf(HasSubstr("'a'"), HasSubstr("[2, 4]"), HasSubstr("[2, 3]"))));
  EXPECT_TRUE(td.allclose(distributed_sample(0.0)));
  EXPECT_EQ(finish(), 0) << "the sender completes: the receiver drained the transfer";
}

TEST_F(DistributedTest, RecvNewBuildsTheSendersStructureBatchSizesAndKeyOrder) {
  start("send_deep");
  const TensorDict td = tensordict::recv_new(*group_, /*src=*/1, /*tag=*/3);
  const TensorDict expected = distributed_deep(1.5);
  EXPECT_EQ(td.batch_size(), expected.batch_size());
  EXPECT_EQ(td.get_tensordict("inner").batch_size(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(td.keys(/*include_nested=*/true), expected.keys(/*include_nested=*/true))
      << "the sender's insertion order, not transport order";
  EXPECT_EQ(td.get({"inner", "a b.c"}).dtype(), torch::kInt);
  EXPECT_TRUE(td.allclose(expected));
  EXPECT_EQ(finish(), 0);
}

TEST_F(DistributedTest, RecvNewOfAMalformedStructureThrowsAndTheSenderCompletes) {
  start("send_malformed_structure");
  EXPECT_THAT([&] { tensordict::recv_new(*group_, 1); },
              ThrowsMessage<tensordict::Error>(
                  HasSubstr("tensordict::recv_new: received a malformed structure section")));
  EXPECT_EQ(finish(), 0);
}

TEST_F(DistributedTest, IrecvCompletesWithIsendOnTheSameTag) {
  start("isend");
  auto td = distributed_sample(0.0);
  auto future = tensordict::irecv(td, group_, 1, /*tag=*/5);
  future.wait();
  EXPECT_TRUE(future.is_completed());
  EXPECT_TRUE(td.allclose(distributed_sample(3.0)));
  EXPECT_EQ(finish(), 0);
}

TEST_F(DistributedTest, BroadcastGivesEveryRankTheRootsValues) {
  start("broadcast");
  auto td = distributed_sample(0.0);
  tensordict::broadcast(td, *group_, /*root=*/1);
  EXPECT_TRUE(td.allclose(distributed_sample(2.0)));
  EXPECT_EQ(finish(), 0);
}

TEST_F(DistributedTest, AllReduceSumsEveryLeafAcrossRanks) {
  start("all_reduce");
  auto td = distributed_sample(1.0);
  tensordict::all_reduce(td, *group_);
  EXPECT_TRUE(td.allclose(distributed_sample(3.0)));
  EXPECT_EQ(finish(), 0);
}

TEST(TransportOrderTest, SortsLeafPathsWhateverTheInsertionOrder) {
  auto order = tensordict::transport_order(distributed_sample(1.0, /*reversed=*/true));
  ASSERT_EQ(order.size(), 3u);
  EXPECT_EQ(order[0], NestedKey("a"));
  EXPECT_EQ(order[1], (NestedKey{"n", "b"}));
  EXPECT_EQ(order[2], (NestedKey{"n", "c", "d"}));
}

}  // namespace
