// The image transforms: ToTensorImage, Resize, GrayScale, Crop, CenterCrop, RandomShift and
// CatFrames (frame stacking in an env and along a trajectory's time dim).

#include <tdrl/envs/cartpole.h>
#include <tdrl/envs/drawing.h>
#include <tdrl/envs/transforms/all.h>

#include <iomanip>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <tensordict/errors.h>

#include "support/test_names.h"

namespace tdrl::envs {
namespace {
namespace image_test {

using namespace tdrl::testing::names;

// A from_pixels CartPole (pixels only: uint8 [*batch, height, width, 3]).
std::shared_ptr<CartPoleEnv> pixel_cartpole(Shape batch, int64_t width, int64_t height,
                                            int64_t max_episode_steps = 500) {
  return std::make_shared<CartPoleEnv>(
      CartPoleEnvOptions()
          .batch_size(batch)
          .max_episode_steps(max_episode_steps)
          .render(RenderOptions().width(width).height(height).from_pixels(true)));
}

// The grey frame `[*batch, 1, H, W]` uint8 of an RGB frame `[*batch, H, W, 3]` uint8 as
// torchvision computes it (0.2989 r + 0.587 g + 0.114 b in float32, truncated).
torch::Tensor grey_of(const torch::Tensor& rgb) {
  const auto f = rgb.to(torch::kFloat32);
  const auto r = f.select(-1, 0);
  const auto g = f.select(-1, 1);
  const auto b = f.select(-1, 2);
  return (0.2989 * r + 0.587 * g + 0.114 * b).to(torch::kUInt8).unsqueeze(-3);
}

// ToTensorImage(uint8), GrayScale and, when asked, CatFrames(n): grey uint8 frames
// `[*batch, 1, H, W]`, or their stacks `[*batch, n, H, W]`.
TransformPtr grey_chain(bool stack, int64_t n = 4) {
  std::vector<TransformPtr> ts{
      std::make_shared<ToTensorImage>(ToTensorImageOptions().dtype(torch::kUInt8)),
      std::make_shared<GrayScale>()};
  if (stack) ts.push_back(std::make_shared<CatFrames>(CatFramesOptions(n)));
  return Compose::make(ts);
}

// A CartPole state with the cart at `x` and everything else 0 (a distinct frame per x).
torch::Tensor cart_at(double x) { return torch::tensor({x, 0.0, 0.0, 0.0}, torch::kFloat64); }

TensorDict pixels_td(const torch::Tensor& pixels, Shape batch = {}) {
  return TensorDict({{"pixels", pixels}}, batch);
}

#define TDRL_NEEDS_CAIRO() \
  if (!drawing::available()) GTEST_SKIP() << "built without cairo"

// ---- ToTensorImage -------------------------------------------------------------------------

TEST(ToTensorImageTest, Uint8HwcBecomesFloatChwInZeroOne) {
  torch::manual_seed(0);
  const auto x = torch::randint(0, 256, {2, 5, 4, 3}, torch::kUInt8);
  ToTensorImage t;
  const auto out = t.forward(pixels_td(x.clone(), {2})).get("pixels");
  ASSERT_EQ(out.scalar_type(), torch::kFloat32);
  ASSERT_EQ(out.sizes(), (c10::IntArrayRef{2, 3, 5, 4}));
  EXPECT_TRUE(torch::equal(out, x.permute({0, 3, 1, 2}).to(torch::kFloat32) / 255.0));
  EXPECT_GE(out.min().item<float>(), 0.0f);
  EXPECT_LE(out.max().item<float>(), 1.0f);
  // Pixel (row 1, col 2) of image 1 is out[1, :, 1, 2].
  EXPECT_TRUE(torch::allclose(out.index({1, torch::indexing::Slice(), 1, 2}),
                              x.index({1, 1, 2}).to(torch::kFloat32) / 255.0));
}

TEST(ToTensorImageTest, Uint8DtypeKeepsTheValuesAndFloat64Scales) {
  torch::manual_seed(1);
  const auto x = torch::randint(0, 256, {6, 7, 3}, torch::kUInt8);
  ToTensorImage keep(ToTensorImageOptions().dtype(torch::kUInt8));
  const auto kept = keep.forward(pixels_td(x.clone())).get("pixels");
  ASSERT_EQ(kept.scalar_type(), torch::kUInt8);
  EXPECT_TRUE(torch::equal(kept, x.permute({2, 0, 1})));

  ToTensorImage wide(ToTensorImageOptions().dtype(torch::kFloat64));
  const auto d = wide.forward(pixels_td(x.clone())).get("pixels");
  ASSERT_EQ(d.scalar_type(), torch::kFloat64);
  EXPECT_TRUE(torch::allclose(d, x.permute({2, 0, 1}).to(torch::kFloat64) / 255.0, 0, 1e-15));

  // Floating input is permuted and cast, not scaled.
  const auto f = torch::rand({6, 7, 3}) * 10;
  const auto moved = ToTensorImage().forward(pixels_td(f.clone())).get("pixels");
  EXPECT_TRUE(torch::equal(moved, f.permute({2, 0, 1})));
}

TEST(ToTensorImageTest, SpecsOfAFromPixelsEnvBecomeChwInZeroOne) {
  TDRL_NEEDS_CAIRO();
  auto base = pixel_cartpole({2}, 32, 24);
  ASSERT_EQ(base->observation_spec()->get("pixels")->shape(), (Shape{2, 24, 32, 3}));
  TransformedEnv env(base, std::make_shared<ToTensorImage>());
  const auto spec = env.observation_spec()->get("pixels");
  EXPECT_EQ(spec->shape(), (Shape{2, 3, 24, 32}));
  EXPECT_EQ(spec->dtype(), torch::kFloat32);
  const auto bounded = std::dynamic_pointer_cast<specs::Bounded>(spec);
  ASSERT_NE(bounded, nullptr);
  EXPECT_EQ(bounded->low().min().item<double>(), 0.0);
  EXPECT_EQ(bounded->low().max().item<double>(), 0.0);
  EXPECT_EQ(bounded->high().min().item<double>(), 1.0);
  EXPECT_EQ(bounded->high().max().item<double>(), 1.0);
  env.set_seed(0);
  const auto root = env.reset();
  EXPECT_TRUE(torch::equal(root.get("pixels"),
                           base->render().permute({0, 3, 1, 2}).to(torch::kFloat32) / 255.0));
  check_env_specs(env);

  TransformedEnv kept(pixel_cartpole({}, 16, 8),
                      std::make_shared<ToTensorImage>(ToTensorImageOptions().dtype(torch::kUInt8)));
  const auto kspec =
      std::dynamic_pointer_cast<specs::Bounded>(kept.observation_spec()->get("pixels"));
  ASSERT_NE(kspec, nullptr);
  EXPECT_EQ(kspec->shape(), (Shape{3, 8, 16}));
  EXPECT_EQ(kspec->dtype(), torch::kUInt8);
  EXPECT_EQ(kspec->high().max().item<double>(), 255.0);
  check_env_specs(kept);
}

TEST(ToTensorImageTest, BadDtypesAndShapesAreRefused) {
  EXPECT_THAT([] { ToTensorImage t(ToTensorImageOptions().dtype(torch::kInt32)); },
              ThrowsMessage<ValueError>(HasSubstr("float32, float64 or uint8")));
  ToTensorImage keep(ToTensorImageOptions().dtype(torch::kUInt8));
  EXPECT_THAT(
      [&] {
        keep.forward(pixels_td(torch::rand({4, 4, 3})));
      },
      ThrowsMessage<TypeError>(HasSubstr("only uint8 images can be kept as uint8")));
  ToTensorImage t;
  EXPECT_THAT(
      [&] {
        t.forward(pixels_td(torch::zeros({4, 4}, torch::kUInt8)));
      },
      ThrowsMessage<ShapeError>(HasSubstr("pixels")));
  EXPECT_THROW(t.forward(pixels_td(torch::zeros({4, 4, 3}, torch::kInt32))), TypeError);
}

// ---- Resize --------------------------------------------------------------------------------

TEST(ResizeTest, ShapesAndDtypesFollowTheOptions) {
  Resize r(ResizeOptions(4, 5));  // width 4, height 5
  const auto f = r.forward(pixels_td(torch::rand({2, 3, 8, 6}), {2})).get("pixels");
  EXPECT_EQ(f.sizes(), (c10::IntArrayRef{2, 3, 5, 4}));
  EXPECT_EQ(f.scalar_type(), torch::kFloat32);
  const auto u =
      r.forward(pixels_td(torch::randint(0, 256, {3, 8, 6}, torch::kUInt8))).get("pixels");
  EXPECT_EQ(u.sizes(), (c10::IntArrayRef{3, 5, 4}));
  EXPECT_EQ(u.scalar_type(), torch::kUInt8);
  // Leading dims beyond one batch dim are kept.
  const auto many = r.forward(pixels_td(torch::rand({2, 3, 1, 8, 6}), {2, 3})).get("pixels");
  EXPECT_EQ(many.sizes(), (c10::IntArrayRef{2, 3, 1, 5, 4}));
}

TEST(ResizeTest, AConstantImageStaysConstant) {
  for (const std::string mode : {"bilinear", "bicubic", "nearest", "area"}) {
    SCOPED_TRACE(mode);
    Resize down(ResizeOptions(3, 5).interpolation(mode));
    const auto u =
        down.forward(pixels_td(torch::full({3, 10, 12}, 77, torch::kUInt8))).get("pixels");
    EXPECT_TRUE(torch::equal(u, torch::full({3, 5, 3}, 77, torch::kUInt8)));
    Resize up(ResizeOptions(20, 9).interpolation(mode));
    const auto f = up.forward(pixels_td(torch::full({1, 4, 4}, 0.25f))).get("pixels");
    EXPECT_TRUE(torch::allclose(f, torch::full({1, 9, 20}, 0.25f), 0, 1e-6));
  }
}

TEST(ResizeTest, NearestDownscaleByTwoTakesEveryOtherPixel) {
  const auto x = torch::arange(16, torch::kFloat32).reshape({1, 4, 4});
  Resize r(ResizeOptions(2, 2).interpolation("nearest"));
  EXPECT_TRUE(torch::equal(r.forward(pixels_td(x)).get("pixels"),
                           torch::tensor({{{0.0f, 2.0f}, {8.0f, 10.0f}}})));
  const auto u = r.forward(pixels_td(x.to(torch::kUInt8))).get("pixels");
  EXPECT_TRUE(torch::equal(u, torch::tensor({{{0, 2}, {8, 10}}}, torch::kUInt8)));
}

TEST(ResizeTest, BilinearEqualsInterpolate) {
  namespace F = torch::nn::functional;
  torch::manual_seed(2);
  const auto x = torch::rand({2, 2, 3, 10, 12});
  for (const bool antialias : {true, false}) {
    SCOPED_TRACE(antialias);
    Resize r(ResizeOptions(7, 5).antialias(antialias));  // downscale: antialias matters
    const auto got = r.forward(pixels_td(x.clone(), {2, 2})).get("pixels");
    const auto want =
        F::interpolate(x.reshape({-1, 3, 10, 12}), F::InterpolateFuncOptions()
                                                       .size(std::vector<int64_t>{5, 7})
                                                       .mode(torch::kBilinear)
                                                       .align_corners(false)
                                                       .antialias(antialias))
            .reshape({2, 2, 3, 5, 7});
    ASSERT_EQ(got.sizes(), want.sizes());
    EXPECT_TRUE(torch::allclose(got, want, 0, 1e-6));
  }
  // uint8 goes through float32 and is rounded back.
  const auto u = torch::randint(0, 256, {3, 10, 12}, torch::kUInt8);
  const auto got = Resize(ResizeOptions(7, 5)).forward(pixels_td(u)).get("pixels");
  const auto want =
      F::interpolate(u.to(torch::kFloat32).unsqueeze(0), F::InterpolateFuncOptions()
                                                             .size(std::vector<int64_t>{5, 7})
                                                             .mode(torch::kBilinear)
                                                             .align_corners(false)
                                                             .antialias(true))
          .squeeze(0)
          .round()
          .clamp(0, 255)
          .to(torch::kUInt8);
  EXPECT_TRUE(torch::equal(got, want));
}

TEST(ResizeTest, SpecsAndErrors) {
  EXPECT_THAT([] { Resize r(ResizeOptions(0, 4)); },
              ThrowsMessage<ValueError>(HasSubstr("[1, 8192]")));
  EXPECT_THROW(Resize(ResizeOptions(4, 0)), ValueError);
  EXPECT_THROW(Resize(ResizeOptions(4, 8193)), ValueError);
  EXPECT_THAT([] { Resize r(ResizeOptions(4, 4).interpolation("cubic")); },
              ThrowsMessage<ValueError>(HasSubstr("'cubic'")));
  Resize r(ResizeOptions(4, 4));
  EXPECT_THROW(r.forward(pixels_td(torch::zeros({4, 4}))), ShapeError);
  EXPECT_THROW(r.forward(pixels_td(torch::zeros({1, 4, 4}, torch::kInt64))), TypeError);

  TDRL_NEEDS_CAIRO();
  TransformedEnv env(pixel_cartpole({}, 32, 32),
                     Compose::make({std::make_shared<ToTensorImage>(),
                                    std::make_shared<Resize>(ResizeOptions(8, 6))}));
  const auto spec =
      std::dynamic_pointer_cast<specs::Bounded>(env.observation_spec()->get("pixels"));
  ASSERT_NE(spec, nullptr);
  EXPECT_EQ(spec->shape(), (Shape{3, 6, 8}));
  EXPECT_EQ(spec->dtype(), torch::kFloat32);
  EXPECT_EQ(spec->high().max().item<double>(), 1.0);
  env.set_seed(0);
  EXPECT_EQ(env.reset().get("pixels").sizes(), (c10::IntArrayRef{3, 6, 8}));
}

// The spec of Resize keeps the bounds of its input ([0, 1] after ToTensorImage): in an env,
// resized float frames stay inside them (bilinear and bicubic overshoot at sharp edges and are
// clamped), as check_env_specs asks of every output. Outside an env there is no spec, and the
// values are torchvision's, overshoot included.
TEST(ResizeTest, ResizedFloatFramesStayInsideTheirBounds) {
  auto x = torch::ones({3, 32, 32});  // white with a black square: sharp edges
  x.narrow(1, 8, 12).narrow(2, 10, 9).zero_();
  Resize detached(ResizeOptions(8, 6).interpolation("bicubic"));
  EXPECT_GT(detached.forward(pixels_td(x.clone())).get("pixels").max().item<double>(), 1.0);
  TDRL_NEEDS_CAIRO();
  for (const std::string mode : {"bilinear", "bicubic", "nearest", "area"}) {
    SCOPED_TRACE(mode);
    TransformedEnv env(
        pixel_cartpole({}, 32, 32),
        Compose::make({std::make_shared<ToTensorImage>(),
                       std::make_shared<Resize>(ResizeOptions(8, 6).interpolation(mode))}));
    EXPECT_NO_THROW(check_env_specs(env));
  }
}

// ---- GrayScale -----------------------------------------------------------------------------

TEST(GrayScaleTest, FloatPixelsAreTheWeightedSum) {
  // Two pixels: pure red and (0.2, 0.4, 0.6).
  const auto x = torch::tensor({{{1.0f, 0.2f}}, {{0.0f, 0.4f}}, {{0.0f, 0.6f}}});  // [3, 1, 2]
  const auto out = GrayScale().forward(pixels_td(x)).get("pixels");
  ASSERT_EQ(out.sizes(), (c10::IntArrayRef{1, 1, 2}));
  ASSERT_EQ(out.scalar_type(), torch::kFloat32);
  EXPECT_NEAR(out[0][0][0].item<float>(), 0.2989, 1e-6);
  EXPECT_NEAR(out[0][0][1].item<float>(), 0.2989 * 0.2 + 0.587 * 0.4 + 0.114 * 0.6, 1e-6);
  const auto d = GrayScale().forward(pixels_td(x.to(torch::kFloat64))).get("pixels");
  EXPECT_EQ(d.scalar_type(), torch::kFloat64);
  EXPECT_NEAR(d[0][0][1].item<double>(), 0.2989 * 0.2 + 0.587 * 0.4 + 0.114 * 0.6, 1e-7);
}

TEST(GrayScaleTest, Uint8PixelsAreTruncatedAsTorchvisionDoes) {
  // (255, 255, 255) -> 254.97 -> 254 (not 255); (1, 1, 1) -> 0.9999 -> 0;
  // (200, 100, 50) -> 124.18 -> 124; (10, 20, 30) -> 18.149 -> 18.
  const auto rgb = torch::tensor({{255, 255, 255}, {1, 1, 1}, {200, 100, 50}, {10, 20, 30}},
                                 torch::kUInt8);              // [4 pixels, 3]
  const auto x = rgb.t().reshape({1, 3, 2, 2}).contiguous();  // batch [1], 2x2 image
  const auto out = GrayScale().forward(pixels_td(x, {1})).get("pixels");
  ASSERT_EQ(out.scalar_type(), torch::kUInt8);
  ASSERT_EQ(out.sizes(), (c10::IntArrayRef{1, 1, 2, 2}));
  EXPECT_TRUE(torch::equal(out, torch::tensor({{{{254, 0}, {124, 18}}}}, torch::kUInt8)));
}

TEST(GrayScaleTest, NonRgbInputIsAShapeError) {
  EXPECT_THAT(
      [] {
        GrayScale().forward(pixels_td(torch::zeros({4, 2, 2})));
      },
      ThrowsMessage<ShapeError>(HasSubstr("RGB")));
  EXPECT_THROW(GrayScale().forward(pixels_td(torch::zeros({2, 2}))), ShapeError);
  TDRL_NEEDS_CAIRO();
  // A second GrayScale sees one channel: refused when the specs are built.
  EXPECT_THAT(
      [] {
        TransformedEnv env(
            pixel_cartpole({}, 16, 16),
            Compose::make({std::make_shared<ToTensorImage>(), std::make_shared<GrayScale>(),
                           std::make_shared<GrayScale>()}));
      },
      ThrowsMessage<ShapeError>(HasSubstr("RGB")));
  TransformedEnv env(pixel_cartpole({}, 16, 12), Compose::make({std::make_shared<ToTensorImage>(),
                                                                std::make_shared<GrayScale>()}));
  EXPECT_EQ(env.observation_spec()->get("pixels")->shape(), (Shape{1, 12, 16}));
  check_env_specs(env);
}

// ---- Crop ----------------------------------------------------------------------------------

// The window from (top, left), as torchvision's crop: any corner inside the image, uint8 and
// float alike, over any batch dims.
TEST(CropTest, CutsTheWindowAtItsCorner) {
  const auto image = torch::arange(28, torch::kUInt8).reshape({1, 4, 7});
  EXPECT_TRUE(
      torch::equal(Crop(CropOptions(3, 2).top(1).left(4)).forward(pixels_td(image)).get("pixels"),
                   torch::tensor({{{11, 12, 13}, {18, 19, 20}}}, torch::kUInt8)));
  // Default corner: the top-left; the whole image is a window too.
  EXPECT_TRUE(torch::equal(Crop(CropOptions(2, 1)).forward(pixels_td(image)).get("pixels"),
                           torch::tensor({{{0, 1}}}, torch::kUInt8)));
  const auto batch = torch::rand({2, 3, 4, 7});
  EXPECT_TRUE(
      torch::equal(Crop(CropOptions(7, 4)).forward(pixels_td(batch, {2})).get("pixels"), batch));
  EXPECT_TRUE(torch::equal(
      Crop(CropOptions(2, 2).top(2).left(5)).forward(pixels_td(batch, {2})).get("pixels"),
      batch.narrow(-2, 2, 2).narrow(-1, 5, 2)));
  EXPECT_EQ(Crop(CropOptions(3, 2).top(1)).to_string(),
            "Crop(w=3, h=2, top=1, left=0, in_keys=['pixels'])");
}

TEST(CropTest, AWindowOutsideTheImageIsRefused) {
  EXPECT_THAT([] { Crop(CropOptions(2, 2).top(-1)); },
              ThrowsMessage<ValueError>(HasSubstr("Crop: the corner is top -1, left 0")));
  EXPECT_THROW(Crop(CropOptions(0, 2)), ValueError);
  Crop past(CropOptions(3, 2).top(3).left(1));
  EXPECT_THAT(
      [&] {
        past.forward(pixels_td(torch::zeros({1, 4, 7})));
      },
      ThrowsMessage<ValueError>(HasSubstr(
          "the 3x2 window at top 3, left 1 reaches past the entry 'pixels' (7x4 pixels)")));
  EXPECT_THAT(
      [] {
        Crop(CropOptions(8, 2)).forward(pixels_td(torch::zeros({1, 4, 7})));
      },
      ThrowsMessage<ValueError>(HasSubstr("smaller than the crop 8x2")));
  TDRL_NEEDS_CAIRO();
  // Checked against the env's specs when attached, before any frame.
  EXPECT_THAT(
      [] {
        TransformedEnv env(pixel_cartpole({}, 16, 12),
                           Compose::make({std::make_shared<ToTensorImage>(),
                                          std::make_shared<Crop>(CropOptions(16, 4).top(9))}));
      },
      ThrowsMessage<ValueError>(HasSubstr("window at top 9, left 0 reaches past")));
  TransformedEnv env(pixel_cartpole({2}, 16, 12),
                     Compose::make({std::make_shared<ToTensorImage>(),
                                    std::make_shared<Crop>(CropOptions(16, 4).top(7))}));
  EXPECT_EQ(env.observation_spec()->get("pixels")->shape(), (Shape{2, 3, 4, 16}));
  env.set_seed(0);
  const auto td = env.reset();
  EXPECT_EQ(td.get("pixels").sizes(), (Shape{2, 3, 4, 16}));
}

// ---- CenterCrop ----------------------------------------------------------------------------

TEST(CenterCropTest, OffsetsRoundHalvesToEvenAsTorchvision) {
  // 5x5 -> 2x2: offset round(1.5) = 2.
  const auto five = torch::arange(25, torch::kFloat32).reshape({1, 5, 5});
  EXPECT_TRUE(
      torch::equal(CenterCrop(CenterCropOptions(2, 2)).forward(pixels_td(five)).get("pixels"),
                   torch::tensor({{{12.0f, 13.0f}, {17.0f, 18.0f}}})));
  // 6x6 -> 2x2: offset 2.
  const auto six = torch::arange(36, torch::kFloat32).reshape({1, 6, 6});
  EXPECT_TRUE(
      torch::equal(CenterCrop(CenterCropOptions(2, 2)).forward(pixels_td(six)).get("pixels"),
                   torch::tensor({{{14.0f, 15.0f}, {20.0f, 21.0f}}})));
  // 7 wide, 4 high -> 2 wide, 1 high: top round(1.5) = 2, left round(2.5) = 2.
  const auto wide = torch::arange(28, torch::kUInt8).reshape({1, 4, 7});
  EXPECT_TRUE(
      torch::equal(CenterCrop(CenterCropOptions(2, 1)).forward(pixels_td(wide)).get("pixels"),
                   torch::tensor({{{16, 17}}}, torch::kUInt8)));
  // 3x3 -> 3x3: the image itself.
  const auto three = torch::rand({2, 3, 3, 3});
  EXPECT_TRUE(torch::equal(
      CenterCrop(CenterCropOptions(3, 3)).forward(pixels_td(three, {2})).get("pixels"), three));
}

TEST(CenterCropTest, ACropLargerThanTheImageIsRefused) {
  EXPECT_THROW(CenterCrop(CenterCropOptions(0, 2)), ValueError);
  CenterCrop crop(CenterCropOptions(5, 5));
  EXPECT_THAT(
      [&] {
        crop.forward(pixels_td(torch::zeros({1, 4, 4})));
      },
      ThrowsMessage<ValueError>(HasSubstr("smaller than the crop")));
  CenterCrop tall(CenterCropOptions(2, 5));
  EXPECT_THROW(tall.forward(pixels_td(torch::zeros({1, 4, 8}))), ValueError);
  TDRL_NEEDS_CAIRO();
  EXPECT_THAT(
      [] {
        TransformedEnv env(pixel_cartpole({}, 16, 16),
                           Compose::make({std::make_shared<ToTensorImage>(),
                                          std::make_shared<CenterCrop>(CenterCropOptions(32, 8))}));
      },
      ThrowsMessage<ValueError>(HasSubstr("smaller than the crop")));
  auto base = pixel_cartpole({}, 16, 12);
  TransformedEnv env(base, Compose::make({std::make_shared<ToTensorImage>(),
                                          std::make_shared<CenterCrop>(CenterCropOptions(8, 6))}));
  EXPECT_EQ(env.observation_spec()->get("pixels")->shape(), (Shape{3, 6, 8}));
  env.set_seed(0);
  const auto root = env.reset();
  // 16 wide, 12 high -> 8 x 6 from top 3, left 4.
  const auto full = base->render().permute({2, 0, 1}).to(torch::kFloat32) / 255.0;
  EXPECT_TRUE(torch::equal(root.get("pixels"), full.narrow(1, 3, 6).narrow(2, 4, 8)));
  check_env_specs(env);
}

// ---- RandomShift ---------------------------------------------------------------------------

// The corner (top, left) in the image padded by `pad` (border pixels repeated) at which the
// `[C, H, W]` `shifted` is a window of `image`; nullopt when none is.
std::optional<std::pair<int64_t, int64_t>> shift_of(const torch::Tensor& image,
                                                    const torch::Tensor& shifted, int64_t pad) {
  const auto padded = torch::nn::functional::pad(
      image.to(torch::kFloat32).unsqueeze(0),
      torch::nn::functional::PadFuncOptions({pad, pad, pad, pad}).mode(torch::kReplicate))[0];
  const int64_t h = image.size(-2), w = image.size(-1);
  for (int64_t top = 0; top <= 2 * pad; ++top)
    for (int64_t left = 0; left <= 2 * pad; ++left)
      if (torch::equal(padded.narrow(-2, top, h).narrow(-1, left, w), shifted.to(torch::kFloat32)))
        return std::make_pair(top, left);
  return std::nullopt;
}

TEST(RandomShiftTest, EachImageIsAWindowOfItsReplicatePaddedSelf) {
  torch::manual_seed(0);
  // Distinct values everywhere, so that each window is told apart.
  const auto images = torch::randperm(6 * 2 * 9 * 11, torch::kInt64)
                          .remainder(256)
                          .to(torch::kUInt8)
                          .reshape({2, 3, 2, 9, 11});
  const int64_t pad = 3;
  const auto out = RandomShift(RandomShiftOptions(pad)).forward(pixels_td(images, {2, 3}));
  const auto shifted = out.get("pixels");
  EXPECT_EQ(shifted.sizes(), images.sizes());
  EXPECT_EQ(shifted.scalar_type(), torch::kUInt8);
  std::set<std::pair<int64_t, int64_t>> corners;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j) {
      const auto corner = shift_of(images[i][j], shifted[i][j], pad);
      ASSERT_TRUE(corner.has_value()) << "image " << i << ", " << j;
      corners.insert(*corner);
    }
  // One draw per image: six images over 49 corners all at one corner would mean one draw.
  EXPECT_GT(corners.size(), 1u);
}

TEST(RandomShiftTest, FrameStacksMoveTogetherAndFloatsStayFloat) {
  torch::manual_seed(1);
  // Two channels of the same picture: a stack whose frames agree must still agree.
  const auto one = torch::rand({8, 1, 12, 12});
  const auto out =
      RandomShift(RandomShiftOptions(2)).forward(pixels_td(one.repeat({1, 2, 1, 1}), {8}));
  const auto shifted = out.get("pixels");
  EXPECT_EQ(shifted.scalar_type(), torch::kFloat32);
  EXPECT_TRUE(torch::equal(shifted.select(1, 0), shifted.select(1, 1)));
  for (int64_t i = 0; i < 8; ++i)
    EXPECT_TRUE(shift_of(one[i], shifted[i].narrow(0, 0, 1), 2).has_value()) << "image " << i;
}

TEST(RandomShiftTest, TheSameSeedGivesTheSameShiftsAndEachKeyItsOwn) {
  const auto images = torch::arange(16 * 10 * 10, torch::kFloat32).reshape({16, 1, 10, 10});
  TensorDict td({{"pixels", images}, {"next", TensorDict({{"pixels", images}}, {16})}}, {16});
  RandomShift shift(RandomShiftOptions(4).in_keys({"pixels", NestedKey({"next", "pixels"})}));
  torch::manual_seed(7);
  const auto a = shift.forward(td.clone());
  torch::manual_seed(7);
  const auto b = shift.forward(td.clone());
  EXPECT_TRUE(torch::equal(a.get("pixels"), b.get("pixels")));
  EXPECT_TRUE(torch::equal(a.get({"next", "pixels"}), b.get({"next", "pixels"})));
  // DrQ shifts the observation and the next one independently.
  EXPECT_FALSE(torch::equal(a.get("pixels"), a.get({"next", "pixels"})));
  // pad 0: unchanged.
  EXPECT_TRUE(
      torch::equal(RandomShift(RandomShiftOptions(0)).forward(td.clone()).get("pixels"), images));
  EXPECT_EQ(shift.to_string(), "RandomShift(pad=4, in_keys=['pixels', ('next', 'pixels')])");
}

TEST(RandomShiftTest, BadOptionsInputsAndAnEnvAreRefused) {
  EXPECT_THAT([] { RandomShift(RandomShiftOptions(-1)); },
              ThrowsMessage<ValueError>(HasSubstr("RandomShift: pad is -1; it must be >= 0")));
  RandomShift shift;
  EXPECT_THAT(
      [&] {
        shift.forward(pixels_td(torch::zeros({4, 4})));
      },
      ThrowsMessage<ShapeError>(HasSubstr("the entry 'pixels' has shape [4, 4]")));
  EXPECT_THAT(
      [&] {
        shift.forward(pixels_td(torch::zeros({1, 4, 4}, torch::kInt64)));
      },
      ThrowsMessage<TypeError>(HasSubstr("images must be uint8 or floating")));
  // A key the sample lacks is skipped (KeyedTransform), e.g. next pixels a minibatch lacks.
  const auto other = torch::ones({1, 4, 4});
  EXPECT_TRUE(
      torch::equal(shift.forward(TensorDict({{"other", other.clone()}}, {})).get("other"), other));
  TDRL_NEEDS_CAIRO();
  // In an env it would shift what the policy acts on: refused, and the env is left as it was.
  TransformedEnv env(pixel_cartpole({}, 16, 12), std::make_shared<ToTensorImage>());
  EXPECT_THAT([&] { env.append_transform(std::make_shared<RandomShift>()); },
              ThrowsMessage<ValueError>(HasSubstr("it augments samples")));
  EXPECT_EQ(env.observation_spec()->get("pixels")->shape(), (Shape{3, 12, 16}));
  env.set_seed(0);
  EXPECT_EQ(env.reset().get("pixels").sizes(), (Shape{3, 12, 16}));
}

// ---- CatFrames in an env -------------------------------------------------------------------

TEST(CatFramesTest, ResetRepeatsTheFrameAndStepShiftsTheStack) {
  TDRL_NEEDS_CAIRO();
  auto base = pixel_cartpole({}, 32, 32);
  TransformedEnv env(base, grey_chain(true));
  env.set_seed(0);
  auto root = env.reset();
  const auto first = grey_of(base->render());  // [1, 32, 32]
  ASSERT_EQ(root.get("pixels").sizes(), (c10::IntArrayRef{4, 32, 32}));
  ASSERT_EQ(root.get("pixels").scalar_type(), torch::kUInt8);
  for (int64_t c = 0; c < 4; ++c) EXPECT_TRUE(torch::equal(root.get("pixels")[c], first[0]));

  std::vector<torch::Tensor> frames{first};
  for (const double x : {-1.5, -0.5, 0.5, 1.5}) {
    base->set_state(cart_at(x));
    auto td = env.rand_action(root);
    env.step(td);
    const auto stack = td.get({"next", "pixels"});
    const auto frame = grey_of(base->render());
    EXPECT_FALSE(torch::equal(frame, frames.back())) << "the cart moved: the frame differs";
    frames.push_back(frame);
    ASSERT_EQ(stack.sizes(), (c10::IntArrayRef{4, 32, 32}));
    EXPECT_TRUE(torch::equal(stack[3], frame[0]));
    EXPECT_TRUE(torch::equal(stack.narrow(0, 0, 3), root.get("pixels").narrow(0, 1, 3)));
    root = step_mdp(td);
  }
  // After 4 steps the stack holds the last 4 frames, oldest first.
  EXPECT_TRUE(torch::equal(root.get("pixels"),
                           torch::cat({frames[1], frames[2], frames[3], frames[4]}, 0)));
}

TEST(CatFramesTest, PartialResetKeepsTheStackOfSubEnvsNotReset) {
  TDRL_NEEDS_CAIRO();
  auto base = pixel_cartpole({2}, 32, 32);
  TransformedEnv env(base, grey_chain(true));
  env.set_seed(1);
  auto root = env.reset();
  for (const double x : {-1.0, 1.0}) {
    base->set_state(torch::stack({cart_at(x), cart_at(-x)}));
    auto td = env.rand_action(root);
    env.step(td);
    root = step_mdp(td);
  }
  const auto before = root.get("pixels").clone();
  ASSERT_EQ(before.sizes(), (c10::IntArrayRef{2, 4, 32, 32}));
  root.set(specs::kReset, torch::tensor({{true}, {false}}));
  const auto out = env.reset(root);
  const auto after = out.get("pixels");
  const auto frames = grey_of(base->render());  // [2, 1, 32, 32]
  for (int64_t c = 0; c < 4; ++c) EXPECT_TRUE(torch::equal(after[0][c], frames[0][0]));
  EXPECT_FALSE(torch::equal(after[0], before[0]));
  EXPECT_TRUE(torch::equal(after[1], before[1]));
  EXPECT_TRUE(torch::equal(after[1][3], frames[1][0]));
  // And the next step continues both stacks.
  auto td = env.rand_action(out);
  env.step(td);
  const auto next = td.get({"next", "pixels"});
  EXPECT_TRUE(torch::equal(next.narrow(1, 0, 3), after.narrow(1, 1, 3)));
  EXPECT_TRUE(torch::equal(next.narrow(1, 3, 1), grey_of(base->render())));
}

TEST(CatFramesTest, StepNeedsThePreviousStackInTheRoot) {
  TDRL_NEEDS_CAIRO();
  TransformedEnv env(pixel_cartpole({}, 16, 16), grey_chain(true));
  env.set_seed(0);
  auto root = env.reset();
  auto missing = root.clone();
  missing.del_("pixels");
  env.rand_action(missing);
  EXPECT_THAT([&] { env.step(missing); },
              ThrowsMessage<KeyError>(HasSubstr("CatFrames: the step's root has no")));
  auto wrong = root.clone();
  wrong.set("pixels", torch::zeros({1, 16, 16}, torch::kUInt8));
  env.rand_action(wrong);
  EXPECT_THROW(env.step(wrong), ShapeError);
}

TEST(CatFramesTest, SpecsStackAlongDim) {
  TDRL_NEEDS_CAIRO();
  TransformedEnv env(pixel_cartpole({}, 20, 12), grey_chain(true));
  const auto spec =
      std::dynamic_pointer_cast<specs::Bounded>(env.observation_spec()->get("pixels"));
  ASSERT_NE(spec, nullptr);
  EXPECT_EQ(spec->shape(), (Shape{4, 12, 20}));
  EXPECT_EQ(spec->dtype(), torch::kUInt8);
  EXPECT_EQ(spec->low().min().item<double>(), 0.0);
  EXPECT_EQ(spec->high().max().item<double>(), 255.0);
  check_env_specs(env, 6);

  // Float frames stacked along the width (dim -1).
  TransformedEnv wide(pixel_cartpole({2}, 8, 6),
                      Compose::make({std::make_shared<ToTensorImage>(),
                                     std::make_shared<CatFrames>(CatFramesOptions(3).dim(-1))}));
  EXPECT_EQ(wide.observation_spec()->get("pixels")->shape(), (Shape{2, 3, 6, 24}));
  check_env_specs(wide);

  // dim -4 of [2, 1, H, W] is the batch dim.
  EXPECT_THROW(
      TransformedEnv(pixel_cartpole({2}, 8, 6),
                     Compose::make({std::make_shared<ToTensorImage>(),
                                    std::make_shared<CatFrames>(CatFramesOptions(2).dim(-4))})),
      ShapeError);
  EXPECT_THAT([] { CatFrames c(CatFramesOptions(0)); },
              ThrowsMessage<ValueError>(HasSubstr("n is 0")));
  EXPECT_THAT([] { CatFrames c(CatFramesOptions(2).dim(0)); },
              ThrowsMessage<ValueError>(HasSubstr("dim is 0")));
}

TEST(CatFramesTest, AnOutKeyKeepsTheSingleFrameBesideTheStack) {
  TDRL_NEEDS_CAIRO();
  auto base = pixel_cartpole({}, 24, 16);
  TransformedEnv env(
      base,
      Compose::make({std::make_shared<ToTensorImage>(ToTensorImageOptions().dtype(torch::kUInt8)),
                     std::make_shared<GrayScale>(),
                     std::make_shared<CatFrames>(CatFramesOptions(3).out_keys({"stack"}))}));
  EXPECT_EQ(env.observation_spec()->get("pixels")->shape(), (Shape{1, 16, 24}));
  EXPECT_EQ(env.observation_spec()->get("stack")->shape(), (Shape{3, 16, 24}));
  env.set_seed(0);
  auto root = env.reset();
  EXPECT_TRUE(torch::equal(root.get("stack"), root.get("pixels").expand({3, 16, 24})));
  base->set_state(cart_at(1.0));
  auto td = env.rand_action(root);
  env.step(td);
  const auto next = td.get_tensordict("next");
  EXPECT_TRUE(torch::equal(next.get("pixels"), grey_of(base->render())));
  EXPECT_TRUE(torch::equal(
      next.get("stack"), torch::cat({root.get("pixels"), root.get("pixels"), next.get("pixels")})));
  check_env_specs(env, 5);

  // Along time, the stacks of the single frames go to the out_key as well.
  auto collect = [&] {
    env.set_seed(3);
    return env.rollout(30, nullptr, RolloutOptions().break_when_any_done(false));
  };
  const auto traj = collect();
  const auto rebuilt = CatFrames(CatFramesOptions(3).out_keys({"stack"}))
                           .forward(traj.exclude({"stack", {"next", "stack"}}));
  EXPECT_TRUE(torch::equal(rebuilt.get("pixels"), traj.get("pixels")));
  EXPECT_TRUE(torch::equal(rebuilt.get("stack"), traj.get("stack")));
  EXPECT_TRUE(torch::equal(rebuilt.get({"next", "stack"}), traj.get({"next", "stack"})));
}

TEST(ImageTransformsTest, PrintTheirOptions) {
  EXPECT_THAT(ToTensorImage(ToTensorImageOptions().dtype(torch::kUInt8)).to_string(),
              AllOf(HasSubstr("ToTensorImage("), HasSubstr("'pixels'"), HasSubstr("uint8")));
  EXPECT_THAT(Resize(ResizeOptions(84, 64).interpolation("nearest")).to_string(),
              AllOf(HasSubstr("w=84"), HasSubstr("h=64"), HasSubstr("nearest")));
  EXPECT_THAT(GrayScale().to_string(), HasSubstr("GrayScale(in_keys=['pixels']"));
  EXPECT_THAT(CenterCrop(CenterCropOptions(5, 6)).to_string(),
              AllOf(HasSubstr("w=5"), HasSubstr("h=6")));
  EXPECT_THAT(CatFrames(CatFramesOptions(3).out_keys({"stack"})).to_string(),
              AllOf(HasSubstr("N=3"), HasSubstr("dim=-3"), HasSubstr("out_keys=['stack']")));
}

// ---- CatFrames along time (forward) --------------------------------------------------------

TEST(CatFramesTest, ForwardStacksAlongTimeWithinEpisodes) {
  // Frames 0..5 ([T, 1, 1, 1]); an episode ends at step 2 (starts 0, 0, 0, 3, 3, 3); next
  // frames 10 + t.
  const auto t = torch::arange(6, torch::kFloat32);
  auto done = torch::zeros({6, 1}, torch::kBool);
  done[2][0] = true;
  TensorDict td({{"pixels", t.reshape({6, 1, 1, 1})},
                 {"next", {{"pixels", (t + 10).reshape({6, 1, 1, 1})}, {"done", done}}}},
                {6});
  const auto out = CatFrames(CatFramesOptions(3)).forward(td);
  const auto stacks = out.get("pixels").reshape({6, 3});
  EXPECT_TRUE(torch::equal(stacks, torch::tensor({{0.0f, 0.0f, 0.0f},
                                                  {0.0f, 0.0f, 1.0f},
                                                  {0.0f, 1.0f, 2.0f},
                                                  {3.0f, 3.0f, 3.0f},
                                                  {3.0f, 3.0f, 4.0f},
                                                  {3.0f, 4.0f, 5.0f}})));
  const auto next = out.get({"next", "pixels"}).reshape({6, 3});
  EXPECT_TRUE(torch::equal(next, torch::tensor({{0.0f, 0.0f, 10.0f},
                                                {0.0f, 1.0f, 11.0f},
                                                {1.0f, 2.0f, 12.0f},
                                                {3.0f, 3.0f, 13.0f},
                                                {3.0f, 4.0f, 14.0f},
                                                {4.0f, 5.0f, 15.0f}})));
}

TEST(CatFramesTest, ForwardTakesTheLastBatchDimAsTime) {
  // Batch [2, 5]: env 0 ends an episode at step 0, env 1 never; frames 100 b + t.
  const auto frames =
      (torch::arange(5, torch::kFloat32).unsqueeze(0) + torch::tensor({{0.0f}, {100.0f}}))
          .reshape({2, 5, 1, 1, 1});
  auto done = torch::zeros({2, 5, 1}, torch::kBool);
  done[0][0][0] = true;
  TensorDict td({{"pixels", frames}, {"next", {{"done", done}}}}, {2, 5});
  const auto out = CatFrames(CatFramesOptions(2)).forward(td).get("pixels").reshape({2, 5, 2});
  EXPECT_TRUE(torch::equal(
      out, torch::tensor({{{0.0f, 0.0f}, {1.0f, 1.0f}, {1.0f, 2.0f}, {2.0f, 3.0f}, {3.0f, 4.0f}},
                          {{100.0f, 100.0f},
                           {100.0f, 101.0f},
                           {101.0f, 102.0f},
                           {102.0f, 103.0f},
                           {103.0f, 104.0f}}})));
  // n = 1 copies the frames.
  TensorDict one({{"pixels", frames.clone()}}, {2, 5});
  EXPECT_TRUE(torch::equal(CatFrames(CatFramesOptions(1)).forward(one).get("pixels"), frames));
  // No time dim.
  EXPECT_THROW(CatFrames().forward(pixels_td(torch::zeros({1, 2, 2}))), ShapeError);
}

// The acceptance test: stacking the single frames of a trajectory along time with
// CatFrames::forward gives the stacks CatFrames wrote while the trajectory was collected,
// across episode ends and auto-resets.
void expect_sample_time_stacks_equal_collected(Shape batch) {
  const auto rollout = [&](bool stack) {
    TransformedEnv env(pixel_cartpole(batch, 32, 32, /*max_episode_steps=*/20), grey_chain(stack));
    env.set_seed(7);
    return env.rollout(60, nullptr, RolloutOptions().break_when_any_done(false));
  };
  const auto stacked = rollout(true);
  const auto single = rollout(false);
  Shape traj_batch = batch;
  traj_batch.push_back(60);
  ASSERT_EQ(single.batch_size(), traj_batch);
  ASSERT_TRUE(torch::equal(stacked.get("action"), single.get("action")));
  const auto done = single.get({"next", "done"});
  // Every sub-env ends at least two episodes (truncated at 20 steps at the latest).
  EXPECT_TRUE((done.reshape({-1, 60}).sum(-1) >= 2).all().item<bool>())
      << "episodes end and reset within the trajectory";

  const auto rebuilt = CatFrames(CatFramesOptions(4)).forward(single.clone());
  ASSERT_EQ(rebuilt.get("pixels").sizes(), stacked.get("pixels").sizes());
  EXPECT_TRUE(torch::equal(rebuilt.get("pixels"), stacked.get("pixels")));
  EXPECT_TRUE(torch::equal(rebuilt.get({"next", "pixels"}), stacked.get({"next", "pixels"})));
  // The newest frame of each stack is the single frame.
  CatFrames cat(CatFramesOptions(4));
  EXPECT_TRUE(torch::equal(cat.newest_frame(stacked.get("pixels")), single.get("pixels")));

  // The test sees episode boundaries: stacking across them gives other stacks.
  const auto ignoring =
      CatFrames(CatFramesOptions(4)).forward(single.clone().exclude({{"next", "done"}}));
  EXPECT_FALSE(torch::equal(ignoring.get("pixels"), stacked.get("pixels")));
}

TEST(CatFramesTest, CatFramesAtSampleTimeEqualsStackingAtCollectionTime) {
  TDRL_NEEDS_CAIRO();
  expect_sample_time_stacks_equal_collected({});
}

TEST(CatFramesTest, CatFramesAtSampleTimeEqualsStackingAtCollectionTimeBatched) {
  TDRL_NEEDS_CAIRO();
  expect_sample_time_stacks_equal_collected({2});
}

#undef TDRL_NEEDS_CAIRO

}  // namespace image_test
}  // namespace
}  // namespace tdrl::envs
