// Videos: frames written by VideoWriter decode back with FFmpeg to the same count and size;
// bad frames are refused and leave no file behind; evaluations record them (evaluate,
// eval.video, tdrl-eval --video), and a build without FFmpeg refuses eval.video at load.

#include <tdrl/apps/video.h>
#include <tdrl/envs/cartpole.h>

#include <filesystem>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <tensordict/errors.h>

#include "apps/trainer_test_util.h"
#include "support/temp_dir.h"

namespace tdrl::apps {
namespace {

using tensordict::testing::TempDir;
using ::testing::HasSubstr;

class VideoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!videos_available()) GTEST_SKIP() << "built without FFmpeg";
  }
  TempDir dir_;
  std::string path(const std::string& name) const { return (dir_.path() / name).string(); }
};

// A frame of a moving gradient, so that frames differ.
torch::Tensor frame(int64_t height, int64_t width, int64_t t) {
  auto x = torch::arange(width, torch::kFloat32).view({1, width, 1});
  auto y = torch::arange(height, torch::kFloat32).view({height, 1, 1});
  auto c = torch::tensor({1.0f, 2.0f, 3.0f}).view({1, 1, 3});
  return ((x * 3 + y * 2 + c * 40 + t * 9).remainder(256)).to(torch::kUInt8);
}

TEST_F(VideoTest, FramesWrittenDecodeToTheSameCountAndSize) {
  VideoWriter video(path("a.mp4"), 25);
  for (int t = 0; t < 12; ++t) video.write(frame(48, 64, t));
  EXPECT_EQ(video.frames(), 12);
  EXPECT_FALSE(std::filesystem::exists(path("a.mp4")));  // not before close()
  video.close();
  const auto info = probe_video(path("a.mp4"));
  EXPECT_EQ(info.frames, 12);
  EXPECT_EQ(info.width, 64);
  EXPECT_EQ(info.height, 48);
  EXPECT_NEAR(info.fps, 25.0, 1e-6);
  EXPECT_FALSE(std::filesystem::exists(path("a.mp4.partial.mp4")));
}

TEST_F(VideoTest, OddSizesAreEncodedOnePixelLarger) {
  {
    VideoWriter video(path("odd.mp4"));
    for (int t = 0; t < 3; ++t) video.write(frame(21, 33, t));
  }  // the destructor closes
  const auto info = probe_video(path("odd.mp4"));
  EXPECT_EQ(info.frames, 3);
  EXPECT_EQ(info.width, 34);
  EXPECT_EQ(info.height, 22);
}

TEST_F(VideoTest, CartPoleEpisodeFramesMakeAVideo) {
  envs::CartPoleEnv env(
      envs::CartPoleEnvOptions().render(envs::RenderOptions().width(120).height(80)));
  env.set_seed(0);
  env.reset();
  VideoWriter video(path("cartpole.mp4"), 50);
  video.write(env.render());
  int64_t steps = 0;
  for (; steps < 30; ++steps) {
    auto td = env.step(env.rand_action());
    video.write(env.render());
    if (td.get(tensordict::NestedKey({"next", "done"})).item<bool>()) break;
  }
  video.close();
  EXPECT_EQ(probe_video(path("cartpole.mp4")).frames, std::min<int64_t>(steps + 1, 31));
}

TEST_F(VideoTest, BadFramesAreRefusedNamingTheProblem) {
  VideoWriter video(path("bad.mp4"));
  EXPECT_THAT(
      [&] {
        video.write(torch::zeros({8, 8, 3}));
      },
      ::testing::ThrowsMessage<tensordict::ValueError>(HasSubstr("uint8 [H, W, 3]")));
  EXPECT_THAT(
      [&] {
        video.write(torch::zeros({8, 8}, torch::kUInt8));
      },
      ::testing::ThrowsMessage<tensordict::ValueError>(HasSubstr("[8, 8]")));
  video.write(frame(8, 8, 0));
  EXPECT_THAT([&] { video.write(frame(8, 10, 1)); },
              ::testing::ThrowsMessage<tensordict::ValueError>(
                  HasSubstr("frame 1 is 10 x 8 pixels; the video's frames are 8 x 8")));
  video.close();
  EXPECT_EQ(probe_video(path("bad.mp4")).frames, 1);
  EXPECT_THAT([] { VideoWriter v("x.mp4", 0); },
              ::testing::ThrowsMessage<tensordict::ValueError>(HasSubstr("fps is 0")));
}

TEST_F(VideoTest, NoFramesNoFileAndUnwritablePathsSayWhy) {
  { VideoWriter video(path("empty.mp4")); }
  EXPECT_FALSE(std::filesystem::exists(path("empty.mp4")));
  VideoWriter video(path("missing/dir/v.mp4"));
  EXPECT_THAT([&] { video.write(frame(8, 8, 0)); },
              ::testing::ThrowsMessage<std::runtime_error>(HasSubstr("missing/dir/v.mp4")));
  EXPECT_THAT([&] { probe_video(path("nothing.mp4")); },
              ::testing::ThrowsMessage<std::runtime_error>(HasSubstr("cannot open")));
}

// ---- Evaluation videos -------------------------------------------------------------------------

using namespace trainer_testing;

TEST(EvaluateTest, AVideoRecordsTheFirstEpisodeFrameByFrame) {
  if (!videos_available()) GTEST_SKIP() << "built without FFmpeg";
  TempDir tmp;
  auto acting = acting_of(tiny_config("ppo"));
  auto env = acting.env.eval_env_factory();
  const std::string path = (tmp.path() / "first.mp4").string();
  VideoWriter video(path, 50);
  // Two episodes of 7 steps: the reset frame and one per step of the first.
  evaluate(*env, *acting.recipe->actor, 2, 7, 0, &video);
  EXPECT_EQ(probe_video(path).frames, 8);
  EXPECT_EQ(probe_video(path).width, 600);
}

TEST(TrainerTest, EvalVideoWritesAVideoPerEvaluationIntoTheRunFolder) {
  if (!videos_available()) GTEST_SKIP() << "built without FFmpeg";
  TempDir tmp;
  Trainer trainer(tiny_config("ppo", {"eval.interval_frames=128", "eval.video=true",
                                      "eval.episodes=1", "eval.max_steps=5"}),
                  RunDir::create(tmp.path().string(), "t"));
  ASSERT_TRUE(trainer.train());
  std::vector<std::string> videos;
  for (const auto& entry : std::filesystem::directory_iterator(trainer.run_dir().file("videos")))
    videos.push_back(entry.path().filename().string());
  std::sort(videos.begin(), videos.end());
  ASSERT_GE(videos.size(), 2u);
  EXPECT_EQ(videos.front(), "eval-000000000128.mp4");
  for (const auto& v : videos)
    EXPECT_EQ(probe_video(trainer.run_dir().file("videos") + "/" + v).frames, 6) << v;

  // tdrl-eval --video: the first of its episodes (eval.max_steps 5: six frames).
  const std::string path = (tmp.path() / "eval.mp4").string();
  const auto [code, out] = run_eval_main(
      {"--run", trainer.run_dir().path(), "--episodes", "2", "--video", path, "--video-fps", "10"});
  EXPECT_EQ(code, 0);
  EXPECT_THAT(out, HasSubstr("video of the first episode: " + path + " (6 frames)"));
  EXPECT_EQ(probe_video(path).frames, 6);
  EXPECT_NEAR(probe_video(path).fps, 10.0, 1e-6);
}

TEST(EvalVideoConfigTest, EvalVideoLoadsOnlyWhereVideosCanBeWritten) {
  register_builtin_components();
  const auto load = [] { return tiny_config("ppo", {"eval.video=true", "eval.video_fps=20"}); };
  if (videos_available()) {
    EXPECT_TRUE(load().eval.video);
    EXPECT_EQ(load().eval.video_fps, 20);
  } else {
    EXPECT_THAT(load, ::testing::ThrowsMessage<ConfigError>(
                          HasSubstr("'eval.video' is true, but this build of tdrl writes no "
                                    "videos")));
  }
  EXPECT_THAT([] { tiny_config("ppo", {"eval.video_fps=0"}); },
              ::testing::ThrowsMessage<ConfigError>(HasSubstr("eval.video_fps")));
}

}  // namespace
}  // namespace tdrl::apps
