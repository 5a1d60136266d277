// The built-in env transforms of env.transforms, each with its options section.

#include <tdrl/apps/registry.h>
#include <tdrl/envs/transforms/all.h>

#include "training/builtin.h"

namespace tdrl::apps::detail {

namespace {

std::vector<tensordict::NestedKey> keys_of(const std::vector<std::string>& names) {
  return std::vector<tensordict::NestedKey>(names.begin(), names.end());
}

// A transform section that is the transform's own options (their fields() declare the keys).
template <class Options>
struct OptionsSection : Section {
  Options options;
  void fields(FieldVisitor& v) override { options.fields(v); }
};

// VecNorm's options and the entries it normalises (the config's, not TorchRL's default, which
// adds the reward).
struct VecNormConfig : Section {
  std::vector<std::string> keys{"observation"};
  envs::VecNormOptions options;
  void fields(FieldVisitor& v) override {
    v("keys", keys, non_empty(), "entries normalised by running statistics");
    options.fields(v);
  }
};

struct ObservationNormConfig : Section {
  std::vector<std::string> keys{"observation"};
  double loc = 0;
  double scale = 1;
  void fields(FieldVisitor& v) override {
    v("keys", keys, non_empty(), "entries normalised");
    v("loc", loc, "subtracted (one number for every element; the library takes a tensor)");
    v("scale", scale, greater_than(0), "divided by");
  }
};

struct EmptyConfig : Section {
  void fields(FieldVisitor&) override {}
};

// An image transform's options and the entries it changes ("pixels" unless told).
template <class Options>
struct ImageConfig : Section {
  // The default argument is instantiated only where used: sizes are given (and required).
  explicit ImageConfig(Options initial = Options()) : options(std::move(initial)) {}
  std::vector<std::string> keys{"pixels"};
  Options options;
  void fields(FieldVisitor& v) override {
    v("keys", keys, non_empty(), "image entries changed in place");
    options.fields(v);
  }
  Options keyed() const {
    auto o = options;
    o.in_keys(keys_of(keys));
    return o;
  }
};

// Resize, Crop and CenterCrop have no default size: the config must give one (declared
// required).
struct ResizeConfig : ImageConfig<envs::ResizeOptions> {
  ResizeConfig() : ImageConfig(envs::ResizeOptions(1, 1)) {}
};
struct CropConfig : ImageConfig<envs::CropOptions> {
  CropConfig() : ImageConfig(envs::CropOptions(1, 1)) {}
};
struct CenterCropConfig : ImageConfig<envs::CenterCropOptions> {
  CenterCropConfig() : ImageConfig(envs::CenterCropOptions(1, 1)) {}
};

// ToTensorImage's dtype is a torch::Dtype in the library; the config names it.
struct ToTensorImageConfig : Section {
  std::vector<std::string> keys{"pixels"};
  std::string dtype = "float32";
  void fields(FieldVisitor& v) override {
    v("keys", keys, non_empty(), "[H, W, C] image entries turned into [C, H, W]");
    v("dtype", dtype, one_of({"float32", "uint8"}),
      "float32: values scaled into [0, 1]; uint8: values kept (4x smaller in replay, the "
      "encoder scales them)");
  }
};

}  // namespace

void register_builtin_transforms() {
  register_transform<VecNormConfig>(
      "vec_norm", "running mean/std normalisation, statistics shared with the evaluation env",
      [](const VecNormConfig& c, const TransformContext& context) -> envs::TransformPtr {
        auto options = c.options;
        auto t = std::make_shared<envs::VecNorm>(
            options.in_keys(keys_of(c.keys))
                .shared_state(context.state("vec_norm_" + std::to_string(context.index))));
        if (context.eval) t->freeze();
        return t;
      });
  register_transform<ObservationNormConfig>(
      "observation_norm", "(x - loc) / scale with fixed loc and scale",
      [](const ObservationNormConfig& c, const TransformContext&) -> envs::TransformPtr {
        return std::make_shared<envs::ObservationNorm>(
            envs::ObservationNormOptions().loc(c.loc).scale(c.scale).in_keys(keys_of(c.keys)));
      });
  register_transform<OptionsSection<envs::RewardScalingOptions>>(
      "reward_scaling", "reward * scale + loc (or (reward - loc) / scale)",
      [](const OptionsSection<envs::RewardScalingOptions>& c, const TransformContext&)
          -> envs::TransformPtr { return std::make_shared<envs::RewardScaling>(c.options); });
  register_transform<OptionsSection<envs::RewardClippingOptions>>(
      "reward_clipping", "clamps the reward to [clamp_min, clamp_max] (at least one of them)",
      [](const OptionsSection<envs::RewardClippingOptions>& c, const TransformContext&)
          -> envs::TransformPtr { return std::make_shared<envs::RewardClipping>(c.options); });
  register_transform<EmptyConfig>(
      "double_to_float", "float64 entries to float32",
      [](const EmptyConfig&, const TransformContext&) -> envs::TransformPtr {
        return std::make_shared<envs::DoubleToFloat>();
      });
  register_transform<ToTensorImageConfig>(
      "to_tensor_image", "[H, W, C] uint8 frames to [C, H, W] (float32 in [0, 1], or uint8)",
      [](const ToTensorImageConfig& c, const TransformContext&) -> envs::TransformPtr {
        return std::make_shared<envs::ToTensorImage>(
            envs::ToTensorImageOptions()
                .dtype(c.dtype == "uint8" ? torch::kUInt8 : torch::kFloat32)
                .in_keys(keys_of(c.keys)));
      });
  register_transform<ResizeConfig>(
      "resize", "resizes [C, H, W] images to height x width",
      [](const ResizeConfig& c, const TransformContext&) -> envs::TransformPtr {
        return std::make_shared<envs::Resize>(c.keyed());
      });
  register_transform<ImageConfig<envs::GrayScaleOptions>>(
      "grayscale", "RGB [3, H, W] images to one channel [1, H, W]",
      [](const ImageConfig<envs::GrayScaleOptions>& c, const TransformContext&)
          -> envs::TransformPtr { return std::make_shared<envs::GrayScale>(c.keyed()); });
  register_transform<CropConfig>(
      "crop", "the height x width window of [C, H, W] images from row top, column left",
      [](const CropConfig& c, const TransformContext&) -> envs::TransformPtr {
        return std::make_shared<envs::Crop>(c.keyed());
      });
  register_transform<CenterCropConfig>(
      "center_crop", "the centre height x width of [C, H, W] images",
      [](const CenterCropConfig& c, const TransformContext&) -> envs::TransformPtr {
        return std::make_shared<envs::CenterCrop>(c.keyed());
      });
  register_transform<ImageConfig<envs::CatFramesOptions>>(
      "cat_frames",
      "stacks the last n frames along dim (a replay buffer stores single frames and rebuilds "
      "the stacks when sampling)",
      [](const ImageConfig<envs::CatFramesOptions>& c, const TransformContext&)
          -> envs::TransformPtr { return std::make_shared<envs::CatFrames>(c.keyed()); });
  register_transform<OptionsSection<envs::FrameSkipOptions>>(
      "frame_skip",
      "repeats each action frame_skip times, summing the rewards (action repeat; first in the "
      "list, the other transforms see each action's last step)",
      [](const OptionsSection<envs::FrameSkipOptions>& c, const TransformContext&)
          -> envs::TransformPtr { return std::make_shared<envs::FrameSkipTransform>(c.options); });
  register_transform<OptionsSection<envs::StepCounterOptions>>(
      "step_counter", "counts steps (step_count) and truncates at max_steps",
      [](const OptionsSection<envs::StepCounterOptions>& c, const TransformContext&)
          -> envs::TransformPtr { return std::make_shared<envs::StepCounter>(c.options); });
}

}  // namespace tdrl::apps::detail
