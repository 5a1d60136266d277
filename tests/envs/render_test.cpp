// Rendering: the drawing routine's frames, the classic-control tasks' pictures (size, content,
// determinism, batching) and pixel observations (from_pixels).

#include <tdrl/envs/classic_control.h>
#include <tdrl/envs/drawing.h>
#include <tdrl/envs/mujoco_tasks.h>

#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <tensordict/errors.h>

#include "support/mock_envs.h"

namespace tdrl::envs {
namespace {

using ::testing::HasSubstr;
using Shape = std::vector<int64_t>;

// ---- The drawing routine ---------------------------------------------------------------------

TEST(DrawingTest, RgbFrameHoldsTheShapesColoursWhereTheyAre) {
  if (!drawing::available()) GTEST_SKIP() << "built without cairo";
  // A red square on the left half of a blue background, drawn at twice the drawing's size.
  drawing::Drawing d{10, 10, "t", {}, "#0000ff"};
  d.shapes.push_back(drawing::Polygon{{{0, 0}, {5, 0}, {5, 10}, {0, 10}}, "#ff0000", 1.0});
  const auto frame = drawing::to_rgb(d, 20, 30);
  ASSERT_EQ(frame.sizes(), (c10::IntArrayRef{30, 20, 3}));
  ASSERT_EQ(frame.scalar_type(), torch::kUInt8);
  EXPECT_TRUE(torch::equal(frame[15][2], torch::tensor({255, 0, 0}, torch::kUInt8)));
  EXPECT_TRUE(torch::equal(frame[15][17], torch::tensor({0, 0, 255}, torch::kUInt8)));
}

TEST(DrawingTest, RgbFrameRefusesBadSizesAndColours) {
  if (!drawing::available()) GTEST_SKIP() << "built without cairo";
  drawing::Drawing d{10, 10, "t", {}};
  EXPECT_THAT([&] { drawing::to_rgb(d, 0, 10); },
              ::testing::ThrowsMessage<tensordict::ValueError>(HasSubstr("0 x 10")));
  d.shapes.push_back(drawing::Circle{5, 5, 2, "red"});
  EXPECT_THAT([&] { drawing::to_rgb(d, 10, 10); },
              ::testing::ThrowsMessage<tensordict::ValueError>(HasSubstr("'red'")));
}

// ---- The classic-control pictures -------------------------------------------------------------

struct RenderCase {
  std::string name;
  std::function<std::unique_ptr<ClassicControlEnv>(Shape batch, RenderOptions render)> make;
  // Gymnasium's screen size, the default render size.
  int64_t width;
  int64_t height;
};

std::ostream& operator<<(std::ostream& os, const RenderCase& c) { return os << c.name; }

template <class Env, class Options>
RenderCase render_case(std::string name, int64_t width, int64_t height) {
  return {name,
          [](Shape b, RenderOptions r) {
            auto options = Options().batch_size(b);
            // Keep the task's default size unless the test sets one.
            if (r.width() > 0) options.render(r);
            return std::make_unique<Env>(options);
          },
          width, height};
}

std::vector<RenderCase> render_cases() {
  return {render_case<CartPoleEnv, CartPoleEnvOptions>("CartPole", 600, 400),
          render_case<PendulumEnv, PendulumEnvOptions>("Pendulum", 500, 500),
          render_case<MountainCarEnv, MountainCarEnvOptions>("MountainCar", 600, 400),
          render_case<MountainCarContinuousEnv, MountainCarContinuousEnvOptions>(
              "MountainCarContinuous", 600, 400),
          render_case<AcrobotEnv, AcrobotEnvOptions>("Acrobot", 500, 500)};
}

RenderOptions size(int64_t width, int64_t height) {
  return RenderOptions().width(width).height(height);
}
// The task's default render options (render_case keeps the task's own for width 0).
RenderOptions task_default() { return RenderOptions().width(0); }

// The fraction of a frame's pixels that are not the white background.
double ink_fraction(const torch::Tensor& frame) {
  return (frame != 255).any(-1).to(torch::kFloat64).mean().item<double>();
}

class RenderTaskTest : public ::testing::TestWithParam<RenderCase> {
 protected:
  void SetUp() override {
    if (!drawing::available()) GTEST_SKIP() << "built without cairo";
  }
};

TEST_P(RenderTaskTest, FrameHasTheTaskScreenSizeAndIsNotBlank) {
  auto env = GetParam().make({}, task_default());
  env->set_seed(0);
  env->reset();
  const auto frame = env->render();
  ASSERT_EQ(frame.sizes(), (c10::IntArrayRef{GetParam().height, GetParam().width, 3}));
  ASSERT_EQ(frame.scalar_type(), torch::kUInt8);
  // Mostly white background, some drawing: between 0.3% and 40% of the pixels are ink.
  const double ink = ink_fraction(frame);
  EXPECT_GT(ink, 0.003) << GetParam().name;
  EXPECT_LT(ink, 0.4) << GetParam().name;
  EXPECT_GT(frame.to(torch::kFloat32).std().item<float>(), 10.0f);
}

TEST_P(RenderTaskTest, RenderSizeIsAnOptionAndSmallFramesStillShowTheTask) {
  auto env = GetParam().make({}, size(64, 48));
  env->set_seed(0);
  env->reset();
  const auto frame = env->render();
  ASSERT_EQ(frame.sizes(), (c10::IntArrayRef{48, 64, 3}));
  EXPECT_GT(ink_fraction(frame), 0.003) << GetParam().name;
}

TEST_P(RenderTaskTest, SameSeedGivesTheSameFramesAndStatesChangeThem) {
  auto a = GetParam().make({}, size(96, 64));
  auto b = GetParam().make({}, size(96, 64));
  a->set_seed(3);
  b->set_seed(3);
  a->reset();
  b->reset();
  std::vector<torch::Tensor> frames;
  for (int t = 0; t < 5; ++t) {
    auto action = a->rand_action();
    a->step(action.clone());
    b->step(action.clone());
    frames.push_back(a->render());
    EXPECT_TRUE(torch::equal(frames.back(), b->render())) << "step " << t;
  }
  // A different state draws a different picture (a state inside every task's bounds).
  a->set_state(a->state() * 0.5 + 0.01);
  EXPECT_FALSE(torch::equal(a->render(), frames.back()));
}

TEST_P(RenderTaskTest, BatchedRenderDrawsEachSubEnvAsAnUnbatchedEnvWould) {
  auto batched = GetParam().make({2, 3}, size(40, 30));
  batched->set_seed(1);
  batched->reset();
  const auto frames = batched->render();
  ASSERT_EQ(frames.sizes(), (c10::IntArrayRef{2, 3, 30, 40, 3}));
  auto single = GetParam().make({}, size(40, 30));
  const auto states = batched->state();
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 3; ++j) {
      single->set_state(states[i][j]);
      EXPECT_TRUE(torch::equal(single->render(), frames[i][j])) << i << ", " << j;
    }
  }
}

TEST_P(RenderTaskTest, FromPixelsObservesTheFramesOnResetAndStep) {
  auto env = GetParam().make({4}, size(32, 24).from_pixels(true));
  ASSERT_TRUE(env->from_pixels());
  const auto spec = env->observation_spec();
  EXPECT_FALSE(spec->contains("observation"));
  ASSERT_TRUE(spec->contains("pixels"));
  EXPECT_EQ(spec->get("pixels")->shape(), (Shape{4, 24, 32, 3}));
  EXPECT_EQ(spec->get("pixels")->dtype(), torch::kUInt8);
  env->set_seed(0);
  auto root = env->reset();
  EXPECT_FALSE(root.contains("observation"));
  EXPECT_TRUE(torch::equal(root.get("pixels"), env->render()));
  auto stepped = env->step(env->rand_action(root));
  const auto next = stepped.get_tensordict("next");
  EXPECT_FALSE(next.contains("observation"));
  EXPECT_TRUE(torch::equal(next.get("pixels"), env->render()));
  EXPECT_FALSE(torch::equal(next.get("pixels"), root.get("pixels")));
  check_env_specs(*env);
}

TEST_P(RenderTaskTest, FromPixelsKeepsTheStateUnlessPixelsOnly) {
  auto env = GetParam().make({}, size(16, 16).from_pixels(true).pixels_only(false));
  EXPECT_TRUE(env->observation_spec()->contains("observation"));
  EXPECT_TRUE(env->observation_spec()->contains("pixels"));
  env->set_seed(0);
  const auto root = env->reset();
  EXPECT_TRUE(root.contains("observation"));
  EXPECT_EQ(root.get("pixels").sizes(), (c10::IntArrayRef{16, 16, 3}));
  check_env_specs(*env);
}

INSTANTIATE_TEST_SUITE_P(Tasks, RenderTaskTest, ::testing::ValuesIn(render_cases()),
                         [](const auto& info) { return info.param.name; });

TEST(RenderTest, CartPoleFrameFollowsTheCart) {
  if (!drawing::available()) GTEST_SKIP() << "built without cairo";
  CartPoleEnv env(CartPoleEnvOptions().render(size(600, 400)));
  // The cart's black body fills rows 270..330 (y = 100 +- 15 from the bottom); its centre
  // column is 300 + x * 125 (600 pixels over 4.8 m).
  const auto cart_centre = [&](double x) {
    env.set_state(torch::tensor({x, 0.0, 0.0, 0.0}, torch::kFloat64));
    const auto row = env.render()[300];
    const auto black = (row.sum(-1) == 0).nonzero().flatten().to(torch::kFloat64);
    return black.mean().item<double>();
  };
  EXPECT_NEAR(cart_centre(0.0), 299.5, 1.0);
  EXPECT_NEAR(cart_centre(1.0), 424.5, 1.0);
  EXPECT_NEAR(cart_centre(-2.0), 49.5, 1.0);
}

TEST(RenderTest, BadRenderOptionsAreRefusedNamingThem) {
  EXPECT_THAT([] { CartPoleEnv env(CartPoleEnvOptions().render(size(0, 64))); },
              ::testing::ThrowsMessage<tensordict::ValueError>(
                  HasSubstr("render_width and render_height are 0 and 64")));
}

// A user's own env that draws: CountingEnv whose frame is a grey level of 10 x its count.
// `dtype` and `channels` make a faulty render_impl for the error tests.
class DrawnCountingEnv : public tdrl::testing::CountingEnv {
 public:
  DrawnCountingEnv(Shape batch, RenderOptions render, torch::Dtype dtype = torch::kUInt8,
                   int64_t channels = 3, int64_t drawn_height = -1)
      : CountingEnv(batch), dtype_(dtype), channels_(channels), drawn_height_(drawn_height) {
    set_render_options(render);
  }
  void set_render_options_again() { set_render_options(RenderOptions()); }

 protected:
  torch::Tensor render_impl() override {
    auto shape = batch_size();
    const auto& r = *render_options();
    shape.insert(shape.end(),
                 {drawn_height_ > 0 ? drawn_height_ : r.height(), r.width(), channels_});
    auto grey = (count() * 10).to(dtype_);
    for (int i = 0; i < 2; ++i) grey = grey.unsqueeze(-1);
    return grey.expand(shape).contiguous();
  }

 private:
  torch::Dtype dtype_;
  int64_t channels_;
  int64_t drawn_height_;
};

TEST(RenderTest, AUsersEnvObservesItsOwnFramesWithFromPixels) {
  DrawnCountingEnv env({2}, size(6, 4).from_pixels(true));
  EXPECT_FALSE(env.observation_spec()->contains("observation"));
  EXPECT_EQ(env.observation_spec()->get("pixels")->shape(), (Shape{2, 4, 6, 3}));
  auto root = env.reset();
  EXPECT_FALSE(root.contains("observation"));
  EXPECT_EQ(root.get("pixels").max().item<int>(), 0);
  auto next = env.step(env.rand_action(root)).get_tensordict("next");
  EXPECT_FALSE(next.contains("observation"));
  EXPECT_TRUE(torch::equal(next.get("pixels"), torch::full({2, 4, 6, 3}, 10, torch::kUInt8)));
  // A partial reset: sub-env 0 restarts (black), sub-env 1 keeps its frame.
  auto partial = step_mdp(env.step(env.rand_action(step_mdp(env.step(env.rand_action(root))))));
  partial.set("_reset", torch::tensor({true, false}).unsqueeze(-1));
  const auto frames = env.reset(partial).get("pixels");
  EXPECT_EQ(frames[0].max().item<int>(), 0);
  EXPECT_EQ(frames[1].min().item<int>(), 30);
  check_env_specs(env);
}

TEST(RenderTest, AFaultyRenderImplIsCaughtNamingWhatItReturned) {
  DrawnCountingEnv floats({}, size(6, 4), torch::kFloat32);
  EXPECT_THAT([&] { floats.render(); },
              ::testing::ThrowsMessage<tensordict::TypeError>(
                  HasSubstr("CountingEnv::render: render_impl returned dtype Float")));
  DrawnCountingEnv rgba({}, size(6, 4), torch::kUInt8, 4);
  EXPECT_THAT([&] { rgba.render(); },
              ::testing::ThrowsMessage<tensordict::ShapeError>(
                  HasSubstr("returned shape [4, 6, 4]; expected [*batch_size, H, W, 3]")));
  DrawnCountingEnv taller({}, size(6, 4), torch::kUInt8, 3, 5);
  EXPECT_THAT([&] { taller.render(); },
              ::testing::ThrowsMessage<tensordict::ShapeError>(HasSubstr("and H x W = 4 x 6")));
}

TEST(RenderTest, RenderOptionsAreSetOnceAndSizedSanely) {
  DrawnCountingEnv env({}, size(6, 4));
  EXPECT_THAT([&] { env.set_render_options_again(); },
              ::testing::ThrowsMessage<tensordict::ValueError>(HasSubstr("called twice")));
  EXPECT_THAT([] { DrawnCountingEnv big({}, size(9000, 4)); },
              ::testing::ThrowsMessage<tensordict::ValueError>(HasSubstr(
                  "render_width and render_height are 9000 and 4; each must be in [1, 8192]")));
}

TEST(RenderTest, AnEnvThatDoesNotDrawSaysSo) {
  tdrl::testing::CountingEnv env;
  EXPECT_THAT([&] { env.render(); },
              ::testing::ThrowsMessage<tensordict::Error>(HasSubstr("does not draw")));
}

// ---- MuJoCo frames ------------------------------------------------------------------------------

struct MujocoRenderCase {
  std::string name;
  std::function<std::unique_ptr<MujocoEnv>(MujocoEnvOptions)> make;
};

std::ostream& operator<<(std::ostream& os, const MujocoRenderCase& c) { return os << c.name; }

template <class Env>
MujocoRenderCase mujoco_case(std::string name) {
  return {name, [](MujocoEnvOptions o) { return std::make_unique<Env>(o); }};
}

std::vector<MujocoRenderCase> mujoco_cases() {
  return {mujoco_case<InvertedPendulumEnv>("InvertedPendulum"),
          mujoco_case<InvertedDoublePendulumEnv>("InvertedDoublePendulum"),
          mujoco_case<ReacherEnv>("Reacher"),
          mujoco_case<HalfCheetahEnv>("HalfCheetah"),
          mujoco_case<HopperEnv>("Hopper"),
          mujoco_case<Walker2dEnv>("Walker2d"),
          mujoco_case<AntEnv>("Ant"),
          mujoco_case<HumanoidEnv>("Humanoid")};
}

class MujocoRenderTest : public ::testing::TestWithParam<MujocoRenderCase> {};

TEST_P(MujocoRenderTest, FrameHasTheAskedSizeAndShowsTheModel) {
  auto env = GetParam().make(MujocoEnvOptions().render(size(64, 48)));
  env->set_seed(0);
  env->reset();
  const auto frame = env->render();
  ASSERT_EQ(frame.sizes(), (c10::IntArrayRef{48, 64, 3}));
  ASSERT_EQ(frame.scalar_type(), torch::kUInt8);
  EXPECT_THAT(env->render_backend(), ::testing::AnyOf("egl", "osmesa"));
  // Not one colour: the model and MuJoCo's skybox/floor give spread pixel values.
  const auto values = frame.to(torch::kFloat32);
  EXPECT_GT(values.std().item<float>(), 5.0f) << GetParam().name;
  const auto reds = std::get<0>(torch::_unique(frame.select(-1, 0).flatten()));
  EXPECT_GT(reds.numel(), 8) << GetParam().name;
}

TEST_P(MujocoRenderTest, SameSeedGivesTheSameFramesAndMotionChangesThem) {
  auto a = GetParam().make(MujocoEnvOptions().batch_size({2}).render(size(48, 48)));
  auto b = GetParam().make(MujocoEnvOptions().batch_size({2}).render(size(48, 48)));
  a->set_seed(5);
  b->set_seed(5);
  a->reset();
  b->reset();
  const auto first = a->render();
  ASSERT_EQ(first.sizes(), (c10::IntArrayRef{2, 48, 48, 3}));
  for (int t = 0; t < 3; ++t) {
    auto action = a->rand_action();
    a->step(action.clone());
    b->step(action.clone());
  }
  const auto frames = a->render();
  EXPECT_TRUE(torch::equal(frames, b->render()));
  // Moving the joints far from the start changes the picture.
  a->set_state(a->qpos() + 0.5, a->qvel());
  EXPECT_FALSE(torch::equal(a->render(), frames)) << GetParam().name;
}

INSTANTIATE_TEST_SUITE_P(Tasks, MujocoRenderTest, ::testing::ValuesIn(mujoco_cases()),
                         [](const auto& info) { return info.param.name; });

TEST(MujocoRenderOptionsTest, FromPixelsObservesTheFrames) {
  HalfCheetahEnv env(
      MujocoEnvOptions().batch_size({3}).render(size(32, 32).from_pixels(true).pixels_only(false)));
  EXPECT_TRUE(env.observation_spec()->contains("observation"));
  EXPECT_EQ(env.observation_spec()->get("pixels")->shape(), (Shape{3, 32, 32, 3}));
  env.set_seed(0);
  const auto root = env.reset();
  EXPECT_TRUE(torch::equal(root.get("pixels"), env.render()));
  const auto next = env.step(env.rand_action(root)).get_tensordict("next");
  EXPECT_TRUE(torch::equal(next.get("pixels"), env.render()));
  check_env_specs(env);
}

TEST(MujocoRenderOptionsTest, CamerasAreChosenByNameAndUnknownOnesRefused) {
  // The free camera sees the whole model, the tracking one follows the torso: other pictures.
  HalfCheetahEnv free(MujocoEnvOptions().render(size(40, 40)).camera("free"));
  HalfCheetahEnv track(MujocoEnvOptions().render(size(40, 40)).camera("track"));
  free.set_seed(0);
  track.set_seed(0);
  free.reset();
  track.reset();
  EXPECT_FALSE(torch::equal(free.render(), track.render()));
  EXPECT_THAT([] { HalfCheetahEnv env(MujocoEnvOptions().camera("overhead")); },
              ::testing::ThrowsMessage<tensordict::ValueError>(
                  HasSubstr("option camera is 'overhead'; expected 'track', 'free'")));
  EXPECT_THAT(
      [] { HalfCheetahEnv env(MujocoEnvOptions().render_backend("vulkan")); },
      ::testing::ThrowsMessage<tensordict::ValueError>(HasSubstr("render_backend is 'vulkan'")));
  EXPECT_THAT([] { HalfCheetahEnv env(MujocoEnvOptions().render(size(64, 0))); },
              ::testing::ThrowsMessage<tensordict::ValueError>(
                  HasSubstr("render_width and render_height are 64 and 0")));
}

TEST(MujocoRenderOptionsTest, OneBackendPerProcess) {
  HalfCheetahEnv first(MujocoEnvOptions().render(size(16, 16)));
  first.render();
  const std::string other = first.render_backend() == "egl" ? "osmesa" : "egl";
  HalfCheetahEnv second(MujocoEnvOptions().render(size(16, 16)).render_backend(other));
  EXPECT_THAT([&] { second.render(); },
              ::testing::ThrowsMessage<tensordict::ValueError>(HasSubstr("already renders with")));
}

// EGL, forced: a process renders with one backend, and the other tests' first frame takes the
// default, so this runs in a process of its own (ctest's Envs.MujocoRendersWithEgl sets
// TDRL_EGL_PROCESS) and is skipped elsewhere. Here it gets Mesa's software device; on a GPU
// machine, the driver's.
TEST(MujocoEglTest, RendersWithEglInAProcessOfItsOwn) {
  if (!std::getenv("TDRL_EGL_PROCESS")) GTEST_SKIP() << "run by ctest in a process of its own";
  HopperEnv env(MujocoEnvOptions().batch_size({2}).render(size(64, 64)).render_backend("egl"));
  env.set_seed(0);
  env.reset();
  const auto frames = env.render();
  EXPECT_EQ(env.render_backend(), "egl");
  ASSERT_EQ(frames.sizes(), (c10::IntArrayRef{2, 64, 64, 3}));
  EXPECT_GT(frames.to(torch::kFloat32).std().item<float>(), 5.0f);
  EXPECT_TRUE(torch::equal(frames, env.render()));
  HopperEnv osmesa(MujocoEnvOptions().render(size(16, 16)).render_backend("osmesa"));
  EXPECT_THAT([&] { osmesa.render(); }, ::testing::ThrowsMessage<tensordict::ValueError>(
                                            HasSubstr("already renders with 'egl'")));
}

}  // namespace
}  // namespace tdrl::envs
