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
  register_transform<OptionsSection<envs::StepCounterOptions>>(
      "step_counter", "counts steps (step_count) and truncates at max_steps",
      [](const OptionsSection<envs::StepCounterOptions>& c, const TransformContext&)
          -> envs::TransformPtr { return std::make_shared<envs::StepCounter>(c.options); });
}

}  // namespace tdrl::apps::detail
