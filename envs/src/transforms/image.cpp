// Image transforms: ToTensorImage, Resize, GrayScale, Crop, CenterCrop, CatFrames.

#include <tdrl/envs/transforms/image.h>

#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/nn/functional/upsampling.h>
#include <torch/types.h>

#include <tdrl/specs/tensor_spec.h>
#include <tensordict/dtype.h>
#include <tensordict/errors.h>

#include "../detail/transform_util.h"

namespace tdrl::envs {

using tensordict::KeyError;
using tensordict::shape_str;
using tensordict::ShapeError;
using tensordict::TypeError;
using tensordict::ValueError;

namespace {

bool is_image_dtype(torch::Dtype dtype) {
  return dtype == torch::kUInt8 || c10::isFloatingType(dtype);
}

// Checks that the spec of `key` is an image of `min_dims` dims past the batch dims, uint8 or
// floating, and returns its shape.
std::vector<int64_t> image_shape(const specs::TensorSpec& spec, const NestedKey& key,
                                 const EnvSpecs& input, const std::string& where,
                                 const char* layout, int64_t min_dims = 3) {
  const auto& shape = spec.shape();
  const int64_t batch = static_cast<int64_t>(input.batch_size.size());
  TDRL_CHECK(static_cast<int64_t>(shape.size()) - batch >= min_dims, ShapeError, where,
             ": the entry ", key.to_string(), " has shape ", shape_str(shape), " (batch ",
             shape_str(input.batch_size), "); it must be an image ", layout,
             " past the batch dims");
  TDRL_CHECK(is_image_dtype(spec.dtype()), TypeError, where, ": the entry ", key.to_string(),
             " is ", tensordict::dtype_name(spec.dtype()), "; images must be uint8 or floating");
  return shape;
}

// A spec of `spec`'s kind, dtype and device with `shape`: Bounded keeps its overall bounds,
// Unbounded stays Unbounded; TypeError for other kinds.
specs::TensorSpecPtr image_spec_like(const specs::TensorSpec& spec, std::vector<int64_t> shape,
                                     const std::string& where, const NestedKey& key) {
  if (const auto* b = dynamic_cast<const specs::Bounded*>(&spec)) {
    return detail::bounded(b->low().min(), b->high().max(), std::move(shape), spec.dtype(),
                           spec.device());
  }
  if (dynamic_cast<const specs::Unbounded*>(&spec)) {
    return std::make_shared<specs::Unbounded>(
        std::move(shape), specs::UnboundedOptions().dtype(spec.dtype()).device(spec.device()));
  }
  throw TypeError(tensordict::detail::check_message(
      where, ": the entry ", key.to_string(), " has a ", spec.type_name(),
      " spec; image transforms take Bounded or Unbounded images"));
}

// Checks the runtime value of an image entry: at least 3 dims, uint8 or floating.
void check_image(const torch::Tensor& value, const NestedKey& key, const std::string& where,
                 int64_t min_dims = 3) {
  TDRL_CHECK(value.dim() >= min_dims, ShapeError, where, ": the entry ", key.to_string(),
             " has shape ", shape_str(value.sizes()), "; it must have at least ",
             std::to_string(min_dims), " dims ([*batch, C, H, W])");
  TDRL_CHECK(is_image_dtype(value.scalar_type()), TypeError, where, ": the entry ", key.to_string(),
             " is ", tensordict::dtype_name(value.scalar_type()),
             "; images must be uint8 or floating");
}

// An output size: each side in [1, 8192], as render sizes.
void check_size(const char* where, int64_t width, int64_t height) {
  TDRL_CHECK(width >= 1 && width <= 8192 && height >= 1 && height <= 8192, ValueError, where,
             ": the size is ", std::to_string(width), "x", std::to_string(height),
             "; width and height must be in [1, 8192]");
}

// uint8 results rounded back into [0, 255]; floating ones as computed.
torch::Tensor back_to(const torch::Tensor& result, torch::Dtype dtype) {
  if (dtype != torch::kUInt8) return result.to(dtype);
  return result.round().clamp(0, 255).to(torch::kUInt8);
}

}  // namespace

// ---- ToTensorImage ---------------------------------------------------------------------------

ToTensorImage::ToTensorImage(ToTensorImageOptions options)
    : KeyedTransform("ToTensorImage", options, Inverse::kNone), options_(std::move(options)) {
  const auto d = options_.dtype();
  TDRL_CHECK(d == torch::kFloat32 || d == torch::kFloat64 || d == torch::kUInt8, ValueError,
             "ToTensorImage: dtype is ", tensordict::dtype_name(d),
             "; it must be float32, float64 or uint8");
}

std::string ToTensorImage::to_string() const {
  return "ToTensorImage(" + keys_to_string() +
         ", dtype=" + tensordict::dtype_name(options_.dtype()) + ")";
}

torch::Tensor ToTensorImage::apply_transform(const torch::Tensor& value, const NestedKey& key) {
  check_image(value, key, name());
  TDRL_CHECK(!(options_.dtype() == torch::kUInt8 && value.scalar_type() != torch::kUInt8),
             TypeError, "ToTensorImage: the entry ", key.to_string(), " is ",
             tensordict::dtype_name(value.scalar_type()),
             "; only uint8 images can be kept as uint8 (choose a floating dtype)");
  auto chw = value.movedim(-1, -3);
  if (options_.dtype() == torch::kUInt8) return chw.contiguous();
  if (value.scalar_type() == torch::kUInt8)
    return chw.to(options_.dtype()).div_(255.0).contiguous();
  return chw.to(options_.dtype()).contiguous();
}

specs::TensorSpecPtr ToTensorImage::transform_output_leaf(const specs::TensorSpecPtr& spec,
                                                          const NestedKey& in_key,
                                                          const EnvSpecs& input) {
  auto shape = image_shape(*spec, in_key, input, name(), "[H, W, C]");
  TDRL_CHECK(!(options_.dtype() == torch::kUInt8 && spec->dtype() != torch::kUInt8), TypeError,
             "ToTensorImage: the entry ", in_key.to_string(), " is ",
             tensordict::dtype_name(spec->dtype()),
             "; only uint8 images can be kept as uint8 (choose a floating dtype)");
  const int64_t n = static_cast<int64_t>(shape.size());
  const int64_t channels = shape[n - 1];
  shape.erase(shape.end() - 1);
  shape.insert(shape.end() - 2, channels);
  const double high = options_.dtype() == torch::kUInt8 ? 255.0 : 1.0;
  return detail::bounded(torch::tensor(0.0, torch::kFloat64), torch::tensor(high, torch::kFloat64),
                         std::move(shape), options_.dtype(), spec->device());
}

// ---- Resize ----------------------------------------------------------------------------------

Resize::Resize(ResizeOptions options)
    : KeyedTransform("Resize", options, Inverse::kNone), options_(std::move(options)) {
  check_size("Resize", options_.width(), options_.height());
  const auto& mode = options_.interpolation();
  TDRL_CHECK(mode == "bilinear" || mode == "bicubic" || mode == "nearest" || mode == "area",
             ValueError, "Resize: interpolation is '", mode,
             "'; choose bilinear, bicubic, nearest or area");
}

std::string Resize::to_string() const {
  return "Resize(w=" + std::to_string(options_.width()) +
         ", h=" + std::to_string(options_.height()) +
         ", interpolation=" + options_.interpolation() +
         ", antialias=" + detail::bool_repr(options_.antialias()) + ", " + keys_to_string() + ")";
}

torch::Tensor Resize::apply_transform(const torch::Tensor& value, const NestedKey& key) {
  check_image(value, key, name());
  namespace F = torch::nn::functional;
  // interpolate takes [N, C, H, W]: the leading dims go into N and come back after.
  const auto sizes = value.sizes().vec();
  const int64_t n = static_cast<int64_t>(sizes.size());
  auto flat = value.reshape({-1, sizes[n - 3], sizes[n - 2], sizes[n - 1]});
  const auto dtype = value.scalar_type();
  if (!c10::isFloatingType(dtype)) flat = flat.to(torch::kFloat32);
  auto options =
      F::InterpolateFuncOptions().size(std::vector<int64_t>{options_.height(), options_.width()});
  const auto& mode = options_.interpolation();
  if (mode == "bilinear") {
    options.mode(torch::kBilinear).align_corners(false).antialias(options_.antialias());
  } else if (mode == "bicubic") {
    options.mode(torch::kBicubic).align_corners(false).antialias(options_.antialias());
  } else if (mode == "nearest") {
    options.mode(torch::kNearest);
  } else {
    options.mode(torch::kArea);
  }
  auto out = F::interpolate(flat, options);
  if (c10::isFloatingType(dtype)) {
    if (const auto b = bounds_.find(key.to_string()); b != bounds_.end())
      out = out.clamp(b->second.first, b->second.second);
  }
  auto out_sizes = sizes;
  out_sizes[n - 2] = options_.height();
  out_sizes[n - 1] = options_.width();
  return back_to(out, dtype).reshape(out_sizes);
}

specs::TensorSpecPtr Resize::transform_output_leaf(const specs::TensorSpecPtr& spec,
                                                   const NestedKey& in_key, const EnvSpecs& input) {
  auto shape = image_shape(*spec, in_key, input, name(), "[C, H, W]");
  shape[shape.size() - 2] = options_.height();
  shape[shape.size() - 1] = options_.width();
  if (const auto* b = dynamic_cast<const specs::Bounded*>(spec.get())) {
    bounds_[in_key.to_string()] = {b->low().min().item<double>(), b->high().max().item<double>()};
  }
  return image_spec_like(*spec, std::move(shape), name(), in_key);
}

// ---- GrayScale -------------------------------------------------------------------------------

GrayScale::GrayScale(GrayScaleOptions options)
    : KeyedTransform("GrayScale", options, Inverse::kNone) {}

std::string GrayScale::to_string() const { return "GrayScale(" + keys_to_string() + ")"; }

torch::Tensor GrayScale::apply_transform(const torch::Tensor& value, const NestedKey& key) {
  check_image(value, key, name());
  TDRL_CHECK(value.size(-3) == 3, ShapeError, "GrayScale: the entry ", key.to_string(),
             " has shape ", shape_str(value.sizes()),
             "; it must be RGB [*batch, 3, H, W] (apply ToTensorImage first)");
  const auto dtype = value.scalar_type();
  const auto f = c10::isFloatingType(dtype) ? value : value.to(torch::kFloat32);
  auto grey =
      (0.2989 * f.select(-3, 0) + 0.587 * f.select(-3, 1) + 0.114 * f.select(-3, 2)).unsqueeze(-3);
  // torchvision truncates uint8 results (`.to(img.dtype)`), which we keep for equal frames.
  return grey.to(dtype);
}

specs::TensorSpecPtr GrayScale::transform_output_leaf(const specs::TensorSpecPtr& spec,
                                                      const NestedKey& in_key,
                                                      const EnvSpecs& input) {
  auto shape = image_shape(*spec, in_key, input, name(), "[3, H, W]");
  TDRL_CHECK(shape[shape.size() - 3] == 3, ShapeError, "GrayScale: the entry ", in_key.to_string(),
             " has shape ", shape_str(shape),
             "; it must be RGB [*batch, 3, H, W] (apply ToTensorImage first)");
  shape[shape.size() - 3] = 1;
  return image_spec_like(*spec, std::move(shape), name(), in_key);
}

// ---- Crop, CenterCrop ------------------------------------------------------------------------

Crop::Crop(CropOptions options)
    : KeyedTransform("Crop", options, Inverse::kNone), options_(std::move(options)) {
  check();
}

void Crop::check() const {
  check_size(name().c_str(), options_.width(), options_.height());
  TDRL_CHECK(options_.top() >= 0 && options_.left() >= 0, ValueError, name(),
             ": the corner is top ", std::to_string(options_.top()), ", left ",
             std::to_string(options_.left()), "; both must be >= 0");
}

std::string Crop::to_string() const {
  return "Crop(w=" + std::to_string(options_.width()) + ", h=" + std::to_string(options_.height()) +
         ", top=" + std::to_string(options_.top()) + ", left=" + std::to_string(options_.left()) +
         ", " + keys_to_string() + ")";
}

std::pair<int64_t, int64_t> Crop::corner(int64_t, int64_t) const {
  return {options_.top(), options_.left()};
}

void Crop::check_fits(const NestedKey& key, int64_t height, int64_t width) const {
  const int64_t h = options_.height(), w = options_.width();
  if (h > height || w > width) {
    throw ValueError(tensordict::detail::check_message(
        name(), ": the entry ", key.to_string(), " is ", std::to_string(width), "x",
        std::to_string(height), " pixels, smaller than the crop ", std::to_string(w), "x",
        std::to_string(h), "; crop at most the image's size"));
  }
  const auto [top, left] = corner(height, width);
  TDRL_CHECK(top + h <= height && left + w <= width, ValueError, name(), ": the ",
             std::to_string(w), "x", std::to_string(h), " window at top ", std::to_string(top),
             ", left ", std::to_string(left), " reaches past the entry ", key.to_string(), " (",
             std::to_string(width), "x", std::to_string(height),
             " pixels); lower top or left, or crop less");
}

torch::Tensor Crop::apply_transform(const torch::Tensor& value, const NestedKey& key) {
  check_image(value, key, name());
  const int64_t h = value.size(-2), w = value.size(-1);
  check_fits(key, h, w);
  const auto [top, left] = corner(h, w);
  return value.narrow(-2, top, options_.height()).narrow(-1, left, options_.width()).contiguous();
}

specs::TensorSpecPtr Crop::transform_output_leaf(const specs::TensorSpecPtr& spec,
                                                 const NestedKey& in_key, const EnvSpecs& input) {
  auto shape = image_shape(*spec, in_key, input, name(), "[C, H, W]");
  const int64_t n = static_cast<int64_t>(shape.size());
  check_fits(in_key, shape[n - 2], shape[n - 1]);
  shape[n - 2] = options_.height();
  shape[n - 1] = options_.width();
  return image_spec_like(*spec, std::move(shape), name(), in_key);
}

CenterCrop::CenterCrop(CenterCropOptions options)
    : Crop("CenterCrop", options, options.width(), options.height()),
      centre_options_(std::move(options)) {}

std::string CenterCrop::to_string() const {
  return "CenterCrop(w=" + std::to_string(centre_options_.width()) +
         ", h=" + std::to_string(centre_options_.height()) + ", " + keys_to_string() + ")";
}

std::pair<int64_t, int64_t> CenterCrop::corner(int64_t height, int64_t width) const {
  // torchvision's offsets: Python's round(), halves to even (nearbyint's default mode).
  return {static_cast<int64_t>(std::nearbyint((height - centre_options_.height()) / 2.0)),
          static_cast<int64_t>(std::nearbyint((width - centre_options_.width()) / 2.0))};
}

// ---- RandomShift -----------------------------------------------------------------------------

RandomShift::RandomShift(RandomShiftOptions options)
    : KeyedTransform("RandomShift", options, Inverse::kNone), options_(std::move(options)) {
  TDRL_CHECK(options_.pad() >= 0, ValueError, name(), ": pad is ", std::to_string(options_.pad()),
             "; it must be >= 0 (0: no shift)");
}

std::string RandomShift::to_string() const {
  return "RandomShift(pad=" + std::to_string(options_.pad()) + ", " + keys_to_string() + ")";
}

torch::Tensor RandomShift::apply_transform(const torch::Tensor& value, const NestedKey& key) {
  check_image(value, key, name());
  const int64_t pad = options_.pad();
  if (pad == 0 || value.numel() == 0) return value;
  const int64_t c = value.size(-3), h = value.size(-2), w = value.size(-1);
  const auto flat = value.reshape({-1, c, h, w});
  const int64_t n = flat.size(0);
  const auto on = torch::TensorOptions().dtype(torch::kInt64).device(value.device());
  // The window's rows and columns in the padded image, clamped into the original: reading the
  // nearest border pixel is replicate padding, without padding kernels (which lack uint8).
  const auto window = [&](int64_t size) {
    const auto corner = torch::randint(0, 2 * pad + 1, {n, 1}, on);
    return (corner + torch::arange(size, on).unsqueeze(0) - pad).clamp(0, size - 1);
  };
  const auto rows = window(h).view({n, 1, h, 1}).expand({n, c, h, w});
  const auto cols = window(w).view({n, 1, 1, w}).expand({n, c, h, w});
  return flat.gather(2, rows).gather(3, cols).reshape(value.sizes());
}

specs::TensorSpecPtr RandomShift::transform_output_leaf(const specs::TensorSpecPtr&,
                                                        const NestedKey& in_key, const EnvSpecs&) {
  throw ValueError(tensordict::detail::check_message(
      name(), ": attached to an env (at ", in_key.to_string(),
      "), it would shift the frames the policy acts on; it augments samples: apply its "
      "forward() to replay samples or minibatches (tdrl-train: train.random_shift)"));
}

// ---- CatFrames -------------------------------------------------------------------------------

CatFrames::CatFrames(CatFramesOptions options)
    : KeyedTransform("CatFrames", options, Inverse::kNone), options_(std::move(options)) {
  TDRL_CHECK(options_.n() >= 1, ValueError, "CatFrames: n is ", std::to_string(options_.n()),
             "; stack at least 1 frame");
  TDRL_CHECK(options_.dim() < 0, ValueError, "CatFrames: dim is ", std::to_string(options_.dim()),
             "; it must be negative (counted from the last dim, away from the batch dims)");
}

std::string CatFrames::to_string() const {
  return "CatFrames(N=" + std::to_string(options_.n()) + ", dim=" + std::to_string(options_.dim()) +
         ", " + keys_to_string() + ")";
}

torch::Tensor CatFrames::newest_frame(const torch::Tensor& stack) const {
  const int64_t size = stack.size(options_.dim());
  TDRL_CHECK(size % options_.n() == 0, ShapeError, "CatFrames: a stack of shape ",
             shape_str(stack.sizes()), " has ", std::to_string(size), " entries along dim ",
             std::to_string(options_.dim()),
             ", not a multiple of n=", std::to_string(options_.n()));
  const int64_t frame = size / options_.n();
  return stack.narrow(options_.dim(), size - frame, frame);
}

TensorDict CatFrames::reset(const TensorDict& input, TensorDict output) {
  const auto mask = input.get_or(specs::kReset, torch::Tensor());
  for (size_t i = 0; i < in_keys().size(); ++i) {
    const auto frame = output.find(in_keys()[i]);
    if (!frame) continue;
    auto stack = torch::cat(std::vector<torch::Tensor>(options_.n(), *frame), options_.dim());
    const auto previous = input.find(out_keys()[i]);
    if (mask.defined() && previous) {
      // Sub-envs not reset keep the stack they had.
      TDRL_CHECK(previous->sizes() == stack.sizes(), ShapeError, "CatFrames: the reset input's ",
                 out_keys()[i].to_string(), " has shape ", shape_str(previous->sizes()),
                 "; the stack of ", std::to_string(options_.n()), " frames has ",
                 shape_str(stack.sizes()));
      auto keep = mask.to(torch::kBool);
      while (keep.dim() < stack.dim()) keep = keep.unsqueeze(-1);
      stack = torch::where(keep, stack, previous->to(stack.scalar_type()));
    }
    output.set(out_keys()[i], stack);
  }
  return write_reward_copies(input, std::move(output));
}

TensorDict CatFrames::step(const TensorDict& root, TensorDict next) {
  for (size_t i = 0; i < in_keys().size(); ++i) {
    const auto frame = next.find(in_keys()[i]);
    if (!frame) continue;
    const auto& out_key = out_keys()[i];
    const auto previous = root.find(out_key);
    TDRL_CHECK(previous.has_value(), KeyError, "CatFrames: the step's root has no ",
               out_key.to_string(),
               " (the previous stack); step with the TensorDict that reset() or the previous "
               "step returned (after step_mdp), which holds it");
    auto expected = frame->sizes().vec();
    const int64_t d = static_cast<int64_t>(expected.size()) + options_.dim();
    TDRL_CHECK(d >= 0, ShapeError, "CatFrames: the frame ", in_keys()[i].to_string(), " has shape ",
               shape_str(frame->sizes()), ", which has no dim ", std::to_string(options_.dim()));
    const int64_t size = expected[d];
    expected[d] *= options_.n();
    TDRL_CHECK(previous->sizes().vec() == expected, ShapeError, "CatFrames: the root's ",
               out_key.to_string(), " has shape ", shape_str(previous->sizes()), "; ",
               std::to_string(options_.n()), " frames of ", shape_str(frame->sizes()), " make ",
               shape_str(expected));
    next.set(
        out_key,
        torch::cat(
            {previous->narrow(d, size, (options_.n() - 1) * size).to(frame->dtype()), *frame}, d));
  }
  return next;
}

torch::Tensor CatFrames::stack_along_time(const torch::Tensor& frames, const torch::Tensor& starts,
                                          int64_t time_dim) const {
  const int64_t steps = frames.size(time_dim);
  auto t = torch::arange(steps, starts.options());
  std::vector<torch::Tensor> parts;
  parts.reserve(options_.n());
  for (int64_t k = options_.n() - 1; k >= 0; --k) {
    // Step t's k-th previous frame, or its episode's first frame before the episode began.
    const auto source = torch::maximum(t - k, starts);
    // `source` is [*lead, T]: expand it over the feature dims to gather along time.
    auto index = source;
    for (int64_t extra = time_dim + 1; extra < frames.dim(); ++extra) index = index.unsqueeze(-1);
    index = index.expand(frames.sizes());
    parts.push_back(frames.gather(time_dim, index));
  }
  return torch::cat(parts, options_.dim());
}

TensorDict CatFrames::call(TensorDict td) {
  const int64_t batch_dims = static_cast<int64_t>(td.batch_size().size());
  TDRL_CHECK(batch_dims >= 1, ShapeError,
             "CatFrames: forward() stacks along the last batch dim (time), but the TensorDict "
             "has batch_size ",
             shape_str(td.batch_size()), "; give it a time dim, e.g. [T] or [B, T]");
  const int64_t time_dim = batch_dims - 1;
  const int64_t steps = td.batch_size().back();
  // The first step of each step's episode: 0, or one past the latest done before it.
  auto batch = td.batch_size();
  torch::Tensor starts = torch::zeros(batch, torch::kInt64);
  const auto done = td.find(NestedKey("next").join(options_.done_key()));
  if (done && steps > 1) {
    const auto ended = done->to(torch::kBool).reshape(batch).to(torch::kCPU);
    auto t = torch::arange(steps, torch::kInt64);
    // A step after a done starts an episode: mark t where done[t-1], then carry it forward.
    auto begins = torch::zeros(batch, torch::kInt64);
    begins.narrow(time_dim, 1, steps - 1)
        .copy_(torch::where(ended.narrow(time_dim, 0, steps - 1), t.narrow(0, 1, steps - 1),
                            torch::zeros({}, torch::kInt64)));
    starts = std::get<0>(begins.cummax(time_dim));
  }
  for (size_t i = 0; i < in_keys().size(); ++i) {
    const auto frames = td.find(in_keys()[i]);
    if (!frames) continue;
    const auto s = starts.to(frames->device());
    const auto stack = stack_along_time(*frames, s, time_dim);
    td.set(out_keys()[i], stack);
    const auto next_frames = td.find(NestedKey("next").join(in_keys()[i]));
    if (!next_frames) continue;
    // The next stack drops the oldest frame of the stack and appends the next frame.
    const int64_t size = frames->size(options_.dim());
    td.set(NestedKey("next").join(out_keys()[i]),
           torch::cat({stack.narrow(options_.dim(), size, (options_.n() - 1) * size), *next_frames},
                      options_.dim()));
  }
  return td;
}

specs::TensorSpecPtr CatFrames::transform_output_leaf(const specs::TensorSpecPtr& spec,
                                                      const NestedKey& in_key,
                                                      const EnvSpecs& input) {
  auto shape = spec->shape();
  const int64_t n = static_cast<int64_t>(shape.size());
  const int64_t batch = static_cast<int64_t>(input.batch_size.size());
  const int64_t d = n + options_.dim();
  TDRL_CHECK(d >= batch, ShapeError, "CatFrames: dim ", std::to_string(options_.dim()),
             " of the entry ", in_key.to_string(), " (shape ", shape_str(shape),
             ") falls in the batch dims ", shape_str(input.batch_size),
             "; choose a dim among its last ", std::to_string(n - batch));
  shape[d] *= options_.n();
  return image_spec_like(*spec, std::move(shape), name(), in_key);
}

}  // namespace tdrl::envs
