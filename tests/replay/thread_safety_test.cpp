// Threads extending, sampling, updating priorities and checkpointing one buffer at once. Every
// row written encodes one value in all its leaves, so a sample that saw half of a write shows
// a row whose leaves disagree. Run under ThreadSanitizer with -DTDRL_SANITIZE=thread.

#include <atomic>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "replay/replay_test_util.h"
#include "support/temp_dir.h"

namespace tdrl::replay {
namespace {

using namespace tdrl::replay::testing;

constexpr int kWriters = 2;
constexpr int kReaders = 2;
constexpr int kBatchesPerWriter = 400;
constexpr int64_t kRowsPerBatch = 16;

TEST(ThreadSafetyTest, SamplesDuringConcurrentExtendsNeverSeeAHalfWrittenRow) {
  torch::manual_seed(1);
  TensorDictPrioritizedReplayBuffer rb(std::make_shared<LazyTensorStorage>(256),
                                       PrioritizedSamplerOptions(0.6, 0.4));
  rb.extend(transitions(kRowsPerBatch, 0));
  std::atomic<int> writers_done{0};
  std::atomic<int64_t> samples{0};
  std::atomic<int64_t> torn{0};
  std::atomic<int64_t> out_of_range{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      for (int b = 0; b < kBatchesPerWriter; ++b)
        rb.extend(transitions(kRowsPerBatch, 1000.0 * (w + 1) + b * kRowsPerBatch));
      ++writers_done;
    });
  }
  for (int r = 0; r < kReaders; ++r) {
    threads.emplace_back([&] {
      while (writers_done.load() < kWriters) {
        auto batch = rb.sample(32);
        if (!rows_consistent(batch)) ++torn;
        if (batch.get("index").max().item<int64_t>() >= rb.storage()->max_size()) ++out_of_range;
        batch.set("td_error", batch.get("_weight") + 0.5);
        rb.update_tensordict_priority(batch);
        ++samples;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(torn.load(), 0);
  EXPECT_EQ(out_of_range.load(), 0);
  EXPECT_GT(samples.load(), 0);
  EXPECT_EQ(rb.size(), 256);
}

TEST(ThreadSafetyTest, PrefetchingKeepsUpWithConcurrentExtends) {
  torch::manual_seed(2);
  TensorDictReplayBuffer rb(std::make_shared<LazyTensorStorage>(128), nullptr, nullptr,
                            ReplayBufferOptions().batch_size(16).prefetch(2));
  rb.extend(transitions(kRowsPerBatch, 0));
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int b = 0; b < kBatchesPerWriter && !stop.load(); ++b)
      rb.extend(transitions(kRowsPerBatch, 1000.0 + b * kRowsPerBatch));
  });
  int64_t torn = 0;
  for (int i = 0; i < 200; ++i)
    if (!rows_consistent(rb.sample())) ++torn;
  stop = true;
  writer.join();
  EXPECT_EQ(torn, 0);
}

TEST(ThreadSafetyTest, CheckpointsAndEmptyingDuringTrafficKeepTheBufferUsable) {
  tensordict::testing::TempDir dir;
  TensorDictReplayBuffer rb(std::make_shared<LazyTensorStorage>(64));
  rb.extend(transitions(kRowsPerBatch, 0));
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int b = 0; !stop.load(); ++b) rb.extend(transitions(kRowsPerBatch, 100.0 + b));
  });
  std::thread reader([&] {
    while (!stop.load()) {
      try {
        EXPECT_TRUE(rows_consistent(rb.sample(8)));
      } catch (const Error&) {
        // empty() may have just run: sampling an empty buffer throws.
      }
    }
  });
  for (int i = 0; i < 5; ++i) {
    rb.dumps(dir / ("ckpt" + std::to_string(i)));
    if (i == 2) rb.empty();
  }
  stop = true;
  writer.join();
  reader.join();
  TensorDictReplayBuffer resumed(std::make_shared<LazyTensorStorage>(64));
  resumed.loads(dir / "ckpt4");
  if (!resumed.is_empty()) {
    EXPECT_TRUE(rows_consistent(resumed.sample(16)));
  }
}

}  // namespace
}  // namespace tdrl::replay
