// FrameStack: frame stacks rebuilt at sample time from the single frames a buffer stores,
// checked against stacks computed here from each sampled step's env, time and episode.

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "replay/replay_test_util.h"

namespace tdrl::replay {
namespace {
namespace frame_stack_test {

using namespace tdrl::replay::testing;

// The frame of env `e` at step `t`: every pixel holds 1000 e + t.
double frame_id(int64_t e, int64_t t) { return 1000.0 * static_cast<double>(e) + t; }

// The steps of `num_envs` envs, written time-major into a buffer, and what the buffer keeps.
struct Streams {
  int64_t num_envs;
  // done[e][t]: step t of env e ends an episode.
  std::vector<std::vector<bool>> done;
  // Steps per env the storage holds (its max_size / num_envs).
  int64_t capacity_steps;
  // Steps per env written so far.
  int64_t written = 0;

  // Steps [t0, t1) of every env, batch [num_envs, t1 - t0]: "pixels" [1, 2, 2] and
  // ("next", "pixels") (frame_id and frame_id + 0.5), ("next", "done") [1], "env" and "t".
  TensorDict steps(int64_t t0, int64_t t1) const {
    const int64_t len = t1 - t0;
    auto env = torch::arange(num_envs, torch::kInt64).unsqueeze(1).expand({num_envs, len});
    auto t = torch::arange(t0, t1, torch::kInt64).unsqueeze(0).expand({num_envs, len});
    auto ids = (env.to(torch::kFloat32) * 1000 + t.to(torch::kFloat32));
    auto frames = ids.reshape({num_envs, len, 1, 1, 1}).expand({num_envs, len, 1, 2, 2});
    auto flags = torch::zeros({num_envs, len, 1}, torch::kBool);
    for (int64_t e = 0; e < num_envs; ++e)
      for (int64_t s = t0; s < t1; ++s) flags[e][s - t0][0] = static_cast<bool>(done[e][s]);
    return TensorDict({{"pixels", frames.clone()},
                       {"env", env.clone()},
                       {"t", t.clone()},
                       {"next", {{"pixels", (frames + 0.5).clone()}, {"done", flags}}}},
                      {num_envs, len});
  }

  // Writes steps [written, t1) time-major, one time step (num_envs rows) per extend.
  void write(ReplayBuffer& rb, int64_t t1) {
    for (; written < t1; ++written)
      rb.extend(steps(written, written + 1).transpose(0, 1).reshape({-1}));
  }

  // The expected stack ids of env e at step t, oldest first: the n steps up to t, each
  // replaced by the oldest step of t's episode still stored when earlier.
  std::vector<double> stack_ids(int64_t e, int64_t t, int64_t n) const {
    int64_t start = 0;
    for (int64_t s = t - 1; s >= 0; --s) {
      if (done[e][s]) {
        start = s + 1;
        break;
      }
    }
    const int64_t first = std::max(start, std::max<int64_t>(0, written - capacity_steps));
    std::vector<double> ids;
    for (int64_t k = n - 1; k >= 0; --k) ids.push_back(frame_id(e, std::max(t - k, first)));
    return ids;
  }

  // Checks every row of `sample` (holding "env" and "t") against stack_ids: "pixels" is
  // [B, n, 2, 2], ("next", "pixels") the stack without its oldest frame plus the next frame.
  void expect_stacks(const TensorDict& sample, int64_t n, bool with_next = true) const {
    const auto env = sample.get("env");
    const auto t = sample.get("t");
    const int64_t b = env.size(0);
    std::vector<float> want, want_next;
    for (int64_t i = 0; i < b; ++i) {
      const auto ids = stack_ids(env[i].item<int64_t>(), t[i].item<int64_t>(), n);
      for (const double id : ids) want.push_back(static_cast<float>(id));
      for (int64_t k = 1; k < n; ++k) want_next.push_back(static_cast<float>(ids[k]));
      want_next.push_back(static_cast<float>(ids.back() + 0.5));
    }
    const auto expected = torch::tensor(want).reshape({b, n, 1, 1}).expand({b, n, 2, 2});
    const auto pixels = sample.get("pixels");
    ASSERT_EQ(pixels.sizes(), expected.sizes());
    EXPECT_TRUE(torch::equal(pixels, expected))
        << "env " << env << "\nt " << t << "\ngot " << pixels.select(-1, 0).select(-1, 0)
        << "\nwant " << expected.select(-1, 0).select(-1, 0);
    if (!with_next) return;
    const auto next = sample.get({"next", "pixels"});
    const auto expected_next = torch::tensor(want_next).reshape({b, n, 1, 1}).expand({b, n, 2, 2});
    EXPECT_TRUE(torch::equal(next, expected_next))
        << "got " << next.select(-1, 0).select(-1, 0) << "\nwant "
        << expected_next.select(-1, 0).select(-1, 0);
  }
};

std::vector<std::vector<bool>> no_dones(int64_t num_envs, int64_t steps) {
  return std::vector<std::vector<bool>>(num_envs, std::vector<bool>(steps, false));
}

std::shared_ptr<LazyTensorStorage> frame_storage(int64_t max_size) {
  return std::make_shared<LazyTensorStorage>(max_size);
}

// Every stored row, gathered as a sample and stacked by `stack`.
TensorDict all_rows_stacked(const Storage& storage, const FrameStack& stack) {
  const auto index = torch::arange(storage.size(), torch::kInt64);
  return stack(storage.get(index), index, storage);
}

TEST(FrameStackTest, StacksFollowEpisodesOfInterleavedEnvs) {
  // 3 envs, 10 steps each, in a storage of 36 (12 steps per env, not full: the first steps
  // pad with themselves). Env 0 ends an episode at step 3, env 1 at steps 0 and 6, env 2 at
  // step 8 (steps 9 start anew) and also at step 9.
  Streams s{3, no_dones(3, 10), 12};
  s.done[0][3] = true;
  s.done[1][0] = true;
  s.done[1][6] = true;
  s.done[2][8] = true;
  s.done[2][9] = true;
  auto storage = frame_storage(36);
  TensorDictReplayBuffer rb(storage);
  s.write(rb, 10);
  ASSERT_EQ(rb.size(), 30);
  // Time-major: row 3 t + e holds env e's step t.
  const auto stored = storage->get(torch::arange(30));
  ASSERT_TRUE(torch::equal(stored.get("t") * 3 + stored.get("env"), torch::arange(30)));

  const FrameStack stack(FrameStackOptions(4).streams(3));
  const auto all = all_rows_stacked(*storage, stack);
  s.expect_stacks(all, 4);
  // Spot checks of the model itself: env 0 step 5 = [4, 4, 4, 5]; env 1 step 7 = [7, 7, 7, 7]
  // (+1000); env 2 step 2 = [0, 0, 1, 2] (+2000).
  EXPECT_EQ(s.stack_ids(0, 5, 4), (std::vector<double>{4, 4, 4, 5}));
  EXPECT_EQ(s.stack_ids(1, 7, 4), (std::vector<double>{1007, 1007, 1007, 1007}));
  EXPECT_EQ(s.stack_ids(2, 2, 4), (std::vector<double>{2000, 2000, 2001, 2002}));
  EXPECT_TRUE(torch::equal(all.get("pixels")[3 * 5 + 0].select(-1, 0).select(-1, 0),
                           torch::tensor({4.0f, 4.0f, 4.0f, 5.0f})));

  // Through the buffer: samples carry their rows' stacks.
  rb.append_storage_transform(stack);
  torch::manual_seed(3);
  const auto sample = rb.sample(64);
  ASSERT_EQ(sample.batch_size(), (BatchSize{64}));
  s.expect_stacks(sample, 4);
  // The stored frames stay single.
  EXPECT_EQ(storage->get(torch::arange(3)).get("pixels").sizes(), (c10::IntArrayRef{3, 1, 2, 2}));
}

TEST(FrameStackTest, WrappedBufferPadsTheOldestStoredStepWithItsOwnFrame) {
  // 2 envs, capacity 8 (4 steps each), 7 steps written: steps 3..6 stored, rows wrapped.
  // Env 1 ends an episode at step 4.
  Streams s{2, no_dones(2, 7), 4};
  s.done[1][4] = true;
  auto storage = frame_storage(8);
  TensorDictReplayBuffer rb(storage);
  s.write(rb, 7);
  ASSERT_EQ(rb.size(), 8);
  const FrameStack stack(FrameStackOptions(3).streams(2));
  const auto all = all_rows_stacked(*storage, stack);
  s.expect_stacks(all, 3);
  // The oldest stored step (3) of env 0 pads with itself; step 6 sees 4, 5, 6.
  EXPECT_EQ(s.stack_ids(0, 3, 3), (std::vector<double>{3, 3, 3}));
  EXPECT_EQ(s.stack_ids(0, 4, 3), (std::vector<double>{3, 3, 4}));
  EXPECT_EQ(s.stack_ids(1, 6, 3), (std::vector<double>{1005, 1005, 1006}));
  const auto oldest = (storage->get(torch::arange(8)).get("t") == 3).nonzero().flatten();
  ASSERT_EQ(oldest.numel(), 2);
  for (int64_t i = 0; i < 2; ++i) {
    const auto row = oldest[i].item<int64_t>();
    const auto own = storage->get(torch::tensor({row})).get("pixels")[0];
    EXPECT_TRUE(torch::equal(all.get("pixels")[row], own.expand({3, 2, 2})));
  }

  // Write more: the model follows the storage as it keeps wrapping.
  s.done = no_dones(2, 12);
  s.done[1][4] = true;
  s.done[0][9] = true;
  s.write(rb, 12);
  rb.append_storage_transform(stack);
  torch::manual_seed(4);
  s.expect_stacks(rb.sample(40), 3);
}

TEST(FrameStackTest, OneEnvAndOtherDims) {
  // streams 1 (the default): consecutive rows; "obs" [3] stacked along dim -1.
  auto storage = frame_storage(10);
  ReplayBuffer rb(storage);
  const auto t = torch::arange(6, torch::kFloat32);
  auto done = torch::zeros({6, 1}, torch::kBool);
  done[1][0] = true;
  rb.extend(TensorDict(
      {{"obs", t.unsqueeze(1).expand({6, 3}).clone()},
       {"next", {{"obs", (t + 0.5).unsqueeze(1).expand({6, 3}).clone()}, {"done", done}}}},
      {6}));
  rb.append_storage_transform(FrameStack(FrameStackOptions(2).dim(-1).keys({"obs"})));
  auto [sample, info] = rb.sample_with_info(32);
  const auto obs = sample.get("obs");
  ASSERT_EQ(obs.sizes(), (c10::IntArrayRef{32, 6}));
  const auto next = sample.get({"next", "obs"});
  for (int64_t i = 0; i < 32; ++i) {
    const auto r = info.index[i].item<int64_t>();
    // Episodes: steps 0..1, then 2..5.
    const float prev = static_cast<float>((r == 0 || r == 2) ? r : r - 1);
    const auto want = torch::cat({torch::full({3}, prev), torch::full({3}, float(r))});
    EXPECT_TRUE(torch::equal(obs[i], want)) << "row " << r << ": " << obs[i];
    const auto want_next =
        torch::cat({torch::full({3}, float(r)), torch::full({3}, float(r) + 0.5f)});
    EXPECT_TRUE(torch::equal(next[i], want_next)) << "row " << r << ": " << next[i];
  }
}

TEST(FrameStackTest, SamplesWithoutTheNextFramesStackOnlyTheFrames) {
  Streams s{2, no_dones(2, 5), 5};
  s.done[0][1] = true;
  auto storage = frame_storage(10);
  TensorDictReplayBuffer rb(storage);
  s.write(rb, 5);
  rb.append_storage_transform([](TensorDict td, const torch::Tensor&, const Storage&) {
    td.del_({"next", "pixels"});
    return td;
  });
  rb.append_storage_transform(FrameStack(FrameStackOptions(2).streams(2)));
  torch::manual_seed(5);
  const auto sample = rb.sample(20);
  EXPECT_FALSE(sample.contains({"next", "pixels"}));
  s.expect_stacks(sample, 2, /*with_next=*/false);
}

TEST(FrameStackTest, OneFrameReturnsTheSampleUnchanged) {
  Streams s{2, no_dones(2, 4), 4};
  s.done[1][1] = true;
  auto storage = frame_storage(8);
  TensorDictReplayBuffer rb(storage);
  s.write(rb, 4);
  const FrameStack one(FrameStackOptions(1).streams(2));
  const auto index = torch::tensor({5, 0, 3, 3}, torch::kInt64);
  const auto plain = storage->get(index);
  const auto stacked = one(plain.clone(), index, *storage);
  EXPECT_TRUE((stacked == plain).all());
  EXPECT_EQ(stacked.get("pixels").sizes(), (c10::IntArrayRef{4, 1, 2, 2}));
  s.expect_stacks(stacked, 1);
}

// The documented form: each key quoted once.
TEST(FrameStackTest, ToStringListsTheOptions) {
  EXPECT_EQ(FrameStack(FrameStackOptions(4).streams(8)).to_string(),
            "FrameStack(n=4, dim=-3, keys=['pixels'], streams=8)");
  EXPECT_EQ(FrameStack(FrameStackOptions(2).keys({"pixels", {"agent", "obs"}})).to_string(),
            "FrameStack(n=2, dim=-3, keys=['pixels', ('agent', 'obs')], streams=1)");
}

TEST(FrameStackTest, ErrorsNameTheProblem) {
  EXPECT_THAT([] { FrameStack f(FrameStackOptions(0)); },
              ThrowsMessage<ValueError>(HasSubstr("n is 0")));
  EXPECT_THAT([] { FrameStack f(FrameStackOptions(2).dim(0)); },
              ThrowsMessage<ValueError>(HasSubstr("dim is 0")));
  EXPECT_THROW(FrameStack(FrameStackOptions(2).dim(1)), ValueError);
  EXPECT_THAT([] { FrameStack f(FrameStackOptions(2).streams(0)); },
              ThrowsMessage<ValueError>(HasSubstr("streams is 0")));
  EXPECT_THROW(FrameStack(FrameStackOptions(2).keys({})), ValueError);

  {
    // 10 rows, 3 envs: refused when sampling.
    Streams s{3, no_dones(3, 2), 3};
    TensorDictReplayBuffer rb(frame_storage(10));
    s.write(rb, 2);
    rb.append_storage_transform(FrameStack(FrameStackOptions(2).streams(3)));
    EXPECT_THAT([&] { rb.sample(4); },
                ThrowsMessage<ValueError>(AllOf(HasSubstr("10 rows"), HasSubstr("multiple of 3"))));
  }
  {
    // A key the buffer does not store.
    Streams s{1, no_dones(1, 3), 3};
    TensorDictReplayBuffer rb(frame_storage(3));
    s.write(rb, 3);
    rb.append_storage_transform(FrameStack(FrameStackOptions(2).keys({"observation"})));
    EXPECT_THAT([&] { rb.sample(2); }, ThrowsMessage<KeyError>(HasSubstr("observation")));
  }
  {
    // No done flags stored.
    TensorDictReplayBuffer rb(frame_storage(4));
    rb.extend(TensorDict({{"pixels", torch::zeros({4, 1, 2, 2})}}, {4}));
    rb.append_storage_transform(FrameStack(FrameStackOptions(2)));
    EXPECT_THAT([&] { rb.sample(2); }, ThrowsMessage<KeyError>(HasSubstr("done")));
  }
  {
    // An ndim-2 storage.
    auto storage = std::make_shared<LazyTensorStorage>(8, StorageOptions().ndim(2));
    Streams s{2, no_dones(2, 4), 4};
    ReplayBuffer rb(storage);
    rb.extend(s.steps(0, 4));
    rb.append_storage_transform(FrameStack(FrameStackOptions(2)));
    EXPECT_THAT([&] { rb.sample(2); }, ThrowsMessage<ValueError>(HasSubstr("ndim 2")));
  }
}

}  // namespace frame_stack_test
}  // namespace
}  // namespace tdrl::replay
