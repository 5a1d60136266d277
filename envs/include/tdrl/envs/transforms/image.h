#pragma once

/// Image transforms of pixel pipelines (TorchRL's and torchvision's): ToTensorImage, Resize,
/// GrayScale, Crop, CenterCrop and CatFrames (frame stacking); and RandomShift, DrQ's data
/// augmentation of sampled frames.
///
/// Layouts: an env's frames are uint8 `[*batch, H, W, 3]` (EnvBase's "pixels");
/// ToTensorImage turns them into `[*batch, C, H, W]`, the layout every other transform here
/// and modules::ConvNet read. Each transform keeps the dtype it is given (uint8 stays uint8,
/// rounded, so that a replay buffer can store uint8 frames; float stays float), except
/// ToTensorImage, which casts as asked.

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <torch/arg.h>
#include <torch/types.h>

#include <tdrl/envs/transforms.h>
#include <tdrl/specs/keys.h>
#include <tensordict/fields.h>

namespace tdrl::envs {

// ---- ToTensorImage -----------------------------------------------------------------------------

/// Options of ToTensorImage: the keys (in_keys default `{"pixels"}`, out_keys default the
/// in_keys; no inverse keys) and the dtype.
/// Example: `ToTensorImageOptions().dtype(torch::kUInt8)`
struct ToTensorImageOptions : TransformKeysOptions<ToTensorImageOptions> {
  ToTensorImageOptions() { in_keys({specs::kPixels}); }
  /// float32 (default; uint8 values scaled into [0, 1]), float64, or uint8 (values kept:
  /// the layout changes only, e.g. for frames stored in a replay buffer and scaled by the
  /// network).
  TORCH_ARG(torch::Dtype, dtype) = torch::kFloat32;
};

/// `[*batch, H, W, C]` images to `[*batch, C, H, W]` (TorchRL's ToTensorImage): uint8 values
/// become floats in [0, 1] (divided by 255) for a floating dtype, or stay as they are for
/// uint8; floating input is permuted and cast without scaling.
///
/// Keys (see KeyedTransform): on reset and under "next", writes each in_key converted at its
/// out_key. Specs: the out_keys are Bounded [0, 1] (floating) or [0, 255] (uint8), of shape
/// `[*batch, C, H, W]`.
/// Throws ValueError for a dtype other than float32, float64 or uint8, no in_keys, or inverse
/// keys; when attached to an env: KeyError for a missing key, ShapeError for an entry with
/// fewer than 3 dims past the batch dims, TypeError for one that is neither uint8 nor
/// floating, or floating input asked as uint8.
/// Example: `env.append_transform(std::make_shared<ToTensorImage>());`
class ToTensorImage : public KeyedTransform {
 public:
  explicit ToTensorImage(ToTensorImageOptions options = {});
  const ToTensorImageOptions& options() const { return options_; }

  std::string to_string() const override;

 protected:
  torch::Tensor apply_transform(const torch::Tensor& value, const NestedKey& in_key) override;
  specs::TensorSpecPtr transform_output_leaf(const specs::TensorSpecPtr& spec,
                                             const NestedKey& in_key,
                                             const EnvSpecs& input) override;

 private:
  ToTensorImageOptions options_;
};

// ---- Resize ------------------------------------------------------------------------------------

/// Options of Resize: the size, the interpolation and the keys (in_keys default
/// `{"pixels"}`, out_keys default the in_keys; no inverse keys).
/// Example: `ResizeOptions(64, 64).interpolation("bilinear")`
struct ResizeOptions : TransformKeysOptions<ResizeOptions> {
  ResizeOptions(int64_t width, int64_t height) : width_(width), height_(height) {
    in_keys({specs::kPixels});
  }
  /// The output width and height, each in [1, 8192].
  TORCH_ARG(int64_t, width);
  TORCH_ARG(int64_t, height);
  /// "bilinear" (default), "bicubic", "nearest" or "area".
  TORCH_ARG(std::string, interpolation) = "bilinear";
  /// Low-pass filtering before downsampling with bilinear or bicubic (torchvision's
  /// antialias, its default since 0.17). Default true.
  TORCH_ARG(bool, antialias) = true;

 public:
  /// width, height, interpolation and antialias (the keys are the caller's wiring).
  void fields(tensordict::fields::FieldVisitor& v) {
    v.required()("width", width_, tensordict::fields::in_range(1, 8192), "output width in pixels");
    v.required()("height", height_, tensordict::fields::in_range(1, 8192),
                 "output height in pixels");
    v("interpolation", interpolation_,
      tensordict::fields::one_of({"bilinear", "bicubic", "nearest", "area"}),
      "bilinear, bicubic, nearest or area");
    v("antialias", antialias_, "low-pass filter before downsampling (bilinear, bicubic)");
  }
};

/// Resizes `[*batch, C, H, W]` images to `[*batch, C, height, width]` (TorchRL's Resize,
/// torchvision's resize): uint8 images are resized in float32 and rounded back into uint8;
/// in an env, floating results are clamped into their Bounded spec's range (bilinear and
/// bicubic overshoot it slightly at edges).
///
/// Keys (see KeyedTransform): on reset and under "next", writes each in_key resized at its
/// out_key. Specs: the out_keys keep their kind and bounds with the new height and width.
/// Throws ValueError for a size outside [1, 8192], an unknown interpolation, no in_keys or
/// inverse keys; when attached to an env: KeyError for a missing key, ShapeError for fewer
/// than 3 dims past the batch dims, TypeError for a dtype other than uint8 or floating.
/// Example: `std::make_shared<Resize>(ResizeOptions(84, 84))`
class Resize : public KeyedTransform {
 public:
  explicit Resize(ResizeOptions options);
  const ResizeOptions& options() const { return options_; }

  std::string to_string() const override;

 protected:
  torch::Tensor apply_transform(const torch::Tensor& value, const NestedKey& in_key) override;
  specs::TensorSpecPtr transform_output_leaf(const specs::TensorSpecPtr& spec,
                                             const NestedKey& in_key,
                                             const EnvSpecs& input) override;

 private:
  ResizeOptions options_;
  // Per in_key (by its string), the [low, high] of a Bounded floating input, set from the specs.
  std::map<std::string, std::pair<double, double>> bounds_;
};

// ---- GrayScale ---------------------------------------------------------------------------------

/// Options of GrayScale: the keys (in_keys default `{"pixels"}`, out_keys default the
/// in_keys; no inverse keys).
struct GrayScaleOptions : TransformKeysOptions<GrayScaleOptions> {
  GrayScaleOptions() { in_keys({specs::kPixels}); }
  /// No options besides the keys (the caller's wiring).
  void fields(tensordict::fields::FieldVisitor&) {}
};

/// RGB `[*batch, 3, H, W]` to one channel `[*batch, 1, H, W]` (TorchRL's GrayScale,
/// torchvision's rgb_to_grayscale): `0.2989 r + 0.587 g + 0.114 b`, truncated for uint8 as
/// torchvision does.
///
/// Keys (see KeyedTransform): on reset and under "next", writes each in_key's grey image at
/// its out_key. Specs: the out_keys have 1 channel, the same kind and bounds.
/// Throws ValueError for no in_keys or inverse keys; when attached to an env: KeyError for a
/// missing key, ShapeError for an entry that is not `[*batch, 3, H, W]`, TypeError for a dtype
/// other than uint8 or floating.
/// Example: `env.append_transform(std::make_shared<GrayScale>());`
class GrayScale : public KeyedTransform {
 public:
  explicit GrayScale(GrayScaleOptions options = {});

  std::string to_string() const override;

 protected:
  torch::Tensor apply_transform(const torch::Tensor& value, const NestedKey& in_key) override;
  specs::TensorSpecPtr transform_output_leaf(const specs::TensorSpecPtr& spec,
                                             const NestedKey& in_key,
                                             const EnvSpecs& input) override;
};

// ---- Crop, CenterCrop --------------------------------------------------------------------------

/// Options of Crop: the size, the top-left corner and the keys (in_keys default `{"pixels"}`,
/// out_keys default the in_keys; no inverse keys).
/// Example: `CropOptions(128, 20).top(6)`
struct CropOptions : TransformKeysOptions<CropOptions> {
  CropOptions(int64_t width, int64_t height) : width_(width), height_(height) {
    in_keys({specs::kPixels});
  }
  /// The crop's width and height, each in [1, 8192].
  TORCH_ARG(int64_t, width);
  TORCH_ARG(int64_t, height);
  /// The crop's first row and first column, >= 0; the crop must lie inside the image.
  /// Default 0 (the top-left corner).
  TORCH_ARG(int64_t, top) = 0;
  TORCH_ARG(int64_t, left) = 0;

 public:
  /// width, height, top and left (the keys are the caller's wiring).
  void fields(tensordict::fields::FieldVisitor& v) {
    v.required()("width", width_, tensordict::fields::in_range(1, 8192), "crop width in pixels");
    v.required()("height", height_, tensordict::fields::in_range(1, 8192), "crop height in pixels");
    v("top", top_, tensordict::fields::at_least(0), "the crop's first row");
    v("left", left_, tensordict::fields::at_least(0), "the crop's first column");
  }
};

/// The `[*batch, C, height, width]` window of `[*batch, C, H, W]` images whose top-left pixel
/// is (top, left) (TorchRL's Crop, torchvision's crop), e.g. the band of a picture where the
/// task happens.
///
/// Keys (see KeyedTransform): on reset and under "next", writes each in_key cropped at its
/// out_key. Specs: the out_keys keep their kind and bounds with the new height and width.
/// Throws ValueError for a size outside [1, 8192], a negative top or left, no in_keys or
/// inverse keys; when attached to an env: KeyError for a missing key, ShapeError for fewer than
/// 3 dims past the batch dims, ValueError for a window reaching past the image.
/// Example: `std::make_shared<Crop>(CropOptions(128, 20).top(6))`
class Crop : public KeyedTransform {
 public:
  explicit Crop(CropOptions options);
  const CropOptions& options() const { return options_; }

  std::string to_string() const override;

 protected:
  /// A crop of `width` x `height` whose corner the subclass places (CenterCrop).
  template <class Options>
  Crop(const std::string& name, const TransformKeysOptions<Options>& keys, int64_t width,
       int64_t height)
      : KeyedTransform(name, keys, Inverse::kNone),
        options_(CropOptions(width, height).in_keys(keys.in_keys()).out_keys(keys.out_keys())) {
    check();
  }
  /// The window's top row and left column in an `height` x `width` image (checked to fit by
  /// the caller). Default: options().top(), options().left().
  virtual std::pair<int64_t, int64_t> corner(int64_t height, int64_t width) const;

  torch::Tensor apply_transform(const torch::Tensor& value, const NestedKey& in_key) override;
  specs::TensorSpecPtr transform_output_leaf(const specs::TensorSpecPtr& spec,
                                             const NestedKey& in_key,
                                             const EnvSpecs& input) override;

 private:
  void check() const;
  // Throws ValueError when the window does not fit an `height` x `width` entry at `key`.
  void check_fits(const NestedKey& key, int64_t height, int64_t width) const;

  CropOptions options_;
};

/// Options of CenterCrop: the size and the keys (in_keys default `{"pixels"}`, out_keys
/// default the in_keys; no inverse keys).
/// Example: `CenterCropOptions(64, 64)`
struct CenterCropOptions : TransformKeysOptions<CenterCropOptions> {
  CenterCropOptions(int64_t width, int64_t height) : width_(width), height_(height) {
    in_keys({specs::kPixels});
  }
  /// The crop's width and height, each in [1, 8192] and at most the image's.
  TORCH_ARG(int64_t, width);
  TORCH_ARG(int64_t, height);

 public:
  /// width and height (the keys are the caller's wiring).
  void fields(tensordict::fields::FieldVisitor& v) {
    v.required()("width", width_, tensordict::fields::in_range(1, 8192), "crop width in pixels");
    v.required()("height", height_, tensordict::fields::in_range(1, 8192), "crop height in pixels");
  }
};

/// The centre `[*batch, C, height, width]` of `[*batch, C, H, W]` images (TorchRL's
/// CenterCrop, torchvision's center_crop: the top-left corner at
/// `round((H - height) / 2), round((W - width) / 2)`, halves rounded to even): a Crop whose
/// corner follows the image's size.
///
/// Keys, specs and errors: Crop's (a crop larger than the image is refused with ValueError).
/// Example: `std::make_shared<CenterCrop>(CenterCropOptions(64, 64))`
class CenterCrop : public Crop {
 public:
  explicit CenterCrop(CenterCropOptions options);
  const CenterCropOptions& options() const { return centre_options_; }

  std::string to_string() const override;

 protected:
  std::pair<int64_t, int64_t> corner(int64_t height, int64_t width) const override;

 private:
  CenterCropOptions centre_options_;
};

// ---- RandomShift -------------------------------------------------------------------------------

/// Options of RandomShift: the padding and the keys (in_keys default `{"pixels"}`, out_keys
/// default the in_keys; no inverse keys).
/// Example: `RandomShiftOptions(4).in_keys({"pixels", {"next", "pixels"}})`
struct RandomShiftOptions : TransformKeysOptions<RandomShiftOptions> {
  explicit RandomShiftOptions(int64_t pad = 4) : pad_(pad) { in_keys({specs::kPixels}); }
  /// The largest shift in pixels, >= 0 (0: the images are returned unchanged). Default 4,
  /// DrQ's for 84x84 frames.
  TORCH_ARG(int64_t, pad);

 public:
  /// pad (the keys are the caller's wiring).
  void fields(tensordict::fields::FieldVisitor& v) {
    v("pad", pad_, tensordict::fields::at_least(0),
      "largest shift in pixels of DrQ's random shift (0: off)");
  }
};

/// DrQ's random shift (Kostrikov et al. 2020, `RandomShiftsAug`): each image of
/// `[*batch, C, H, W]` is padded by `pad` pixels on every side, repeating its border pixels,
/// and cropped back to H x W at a corner drawn uniformly from [0, 2 pad] in each direction,
/// one draw per image (the C channels of a frame stack move together) and per key, from
/// LibTorch's default generator (so torch::manual_seed makes it reproducible). The dtype is
/// kept (uint8 frames stay uint8).
///
/// It augments samples, not an env's frames: apply it with forward() to a replay sample or a
/// minibatch (tdrl-train's `train.random_shift`), with in_keys naming both "pixels" and
/// ("next", "pixels") where the loss reads both (each gets its own shift, as in DrQ).
///
/// Keys (see KeyedTransform): forward() writes each in_key shifted at its out_key (an in_key
/// the sample lacks is skipped).
/// Throws ValueError for a negative pad, no in_keys or inverse keys, and when attached to an
/// env (the env is left as it was); from forward(): ShapeError for fewer than 3 dims,
/// TypeError for a dtype other than uint8 or floating.
/// Example: `replay.append_transform([t = std::make_shared<RandomShift>(options)](TensorDict
/// td) { return t->forward(std::move(td)); });`
class RandomShift : public KeyedTransform {
 public:
  explicit RandomShift(RandomShiftOptions options = RandomShiftOptions());
  const RandomShiftOptions& options() const { return options_; }

  std::string to_string() const override;

 protected:
  torch::Tensor apply_transform(const torch::Tensor& value, const NestedKey& in_key) override;
  specs::TensorSpecPtr transform_output_leaf(const specs::TensorSpecPtr& spec,
                                             const NestedKey& in_key,
                                             const EnvSpecs& input) override;

 private:
  RandomShiftOptions options_;
};

// ---- CatFrames ---------------------------------------------------------------------------------

/// Options of CatFrames: the number of frames, the dim and the keys (in_keys default
/// `{"pixels"}`, out_keys default the in_keys; no inverse keys).
/// Example: `CatFramesOptions(4)`
struct CatFramesOptions : TransformKeysOptions<CatFramesOptions> {
  explicit CatFramesOptions(int64_t n = 4) : n_(n) { in_keys({specs::kPixels}); }
  /// Frames stacked, >= 1 (1 copies the frame).
  TORCH_ARG(int64_t, n);
  /// The dim the frames are concatenated along, negative (counted from the last, away from
  /// the batch dims). Default -3: the channels of `[*batch, C, H, W]`.
  TORCH_ARG(int64_t, dim) = -3;
  /// The done flag ending an episode, read by forward() under "next". Default "done".
  TORCH_ARG(NestedKey, done_key){specs::kDone};

 public:
  /// n and dim (the keys are the caller's wiring).
  void fields(tensordict::fields::FieldVisitor& v) {
    v("n", n_, tensordict::fields::at_least(1), "frames stacked");
    v("dim", dim_, tensordict::fields::at_most(-1),
      "dim the frames are concatenated along (negative; -3: the channels of [C, H, W])");
  }
};

/// Stacks the last `n` frames of each in_key along `dim` (TorchRL's CatFrames with
/// padding="same"): a frame of C channels becomes n * C channels, oldest first, so the
/// stack's last C channels are the newest frame.
///
/// Stateless: the previous stack is read from the step's root, where the env's previous
/// output left it (as a collector's step_mdp does). Reset writes the reset frame repeated n
/// times (on a partial reset only for the sub-envs reset: the others keep the stack of the
/// given TensorDict, or get their current frame repeated when it holds none); a step writes
/// `cat(previous stack without its oldest frame, new frame)`.
///
/// Outside an env, forward() stacks along a time dim instead: the last batch dim of the
/// TensorDict is time, an episode starts at step 0 and after each step whose
/// ("next", done_key) is true, and each step gets the stack it would have got from the env
/// (the frames of its episode so far, the first repeated as padding); ("next", in_key), when
/// present, is stacked likewise at ("next", out_key). On a whole trajectory this equals the
/// stacks collected through the env; replay::FrameStack rebuilds them from a buffer.
///
/// Keys (see KeyedTransform): reads each in_key, writes its stack at the out_key; step also
/// reads the root's out_key. Specs: the out_keys' `dim` grows n times (Bounded keeps its
/// bounds, repeated).
/// Throws ValueError for n < 1, dim >= 0, no in_keys or inverse keys; when attached to an
/// env: KeyError for a missing key, ShapeError when `dim` falls in the batch dims. step
/// throws KeyError when the root lacks the previous stack (step after a reset's output) and
/// ShapeError when it is not n frames of the new frame's shape; forward() throws ShapeError
/// for a TensorDict without batch dims.
/// Example: `env.append_transform(std::make_shared<CatFrames>(CatFramesOptions(4)));`
class CatFrames : public KeyedTransform {
 public:
  explicit CatFrames(CatFramesOptions options = CatFramesOptions());
  const CatFramesOptions& options() const { return options_; }

  std::string to_string() const override;
  TensorDict reset(const TensorDict& input, TensorDict output) override;
  TensorDict step(const TensorDict& root, TensorDict next) override;

  /// The newest frame of a stack: its last `frame_size` entries along `dim` where
  /// `frame_size = stack.size(dim) / n` (what a buffer stores in place of the stack).
  torch::Tensor newest_frame(const torch::Tensor& stack) const;

 protected:
  /// The time-dim stacking of forward() (see the class comment).
  TensorDict call(TensorDict td) override;
  specs::TensorSpecPtr transform_output_leaf(const specs::TensorSpecPtr& spec,
                                             const NestedKey& in_key,
                                             const EnvSpecs& input) override;

 private:
  // The frames of `frames` ([..., T, *feature], time at batch dim `time_dim`) stacked along
  // time, step t taking its episode's frames from `start[t]` (int64, the first step of t's
  // episode) on.
  torch::Tensor stack_along_time(const torch::Tensor& frames, const torch::Tensor& starts,
                                 int64_t time_dim) const;

  CatFramesOptions options_;
};

}  // namespace tdrl::envs
