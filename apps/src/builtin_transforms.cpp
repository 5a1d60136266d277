// The built-in env transforms of env.transforms, each with its options section.

#include <limits>

#include <tdrl/apps/registry.h>
#include <tdrl/envs/transforms/all.h>

#include "detail/builtin.h"

namespace tdrl::apps::detail {

namespace {

std::vector<tensordict::NestedKey> keys_of(const std::vector<std::string>& names) {
  return std::vector<tensordict::NestedKey>(names.begin(), names.end());
}

struct VecNormConfig : Section {
  std::vector<std::string> keys{"observation"};
  double decay = 0.9999;
  double eps = 1e-4;
  void fields(FieldVisitor& v) override {
    v("keys", keys, non_empty(), "entries normalised by running statistics");
    v("decay", decay, in_range(0, 1), "decay of the running statistics");
    v("eps", eps, greater_than(0), "added to the variance");
  }
};

struct ObservationNormConfig : Section {
  std::vector<std::string> keys{"observation"};
  double loc = 0;
  double scale = 1;
  void fields(FieldVisitor& v) override {
    v("keys", keys, non_empty(), "entries normalised");
    v("loc", loc, "subtracted");
    v("scale", scale, greater_than(0), "divided by");
  }
};

struct RewardScalingConfig : Section {
  double loc = 0;
  double scale = 1;
  void fields(FieldVisitor& v) override {
    v("loc", loc, "added to the reward after scaling");
    v("scale", scale, "reward multiplier");
  }
};

// The float32 range: a reward bound must fit the reward's spec, and a bound at its end means
// none (the transform's own default, an Unbounded reward spec). The defaults were once the
// double range, which no float spec could hold: the transform failed to build with them.
constexpr double kFloatMax = std::numeric_limits<float>::max();

struct RewardClippingConfig : Section {
  double min = -kFloatMax;
  double max = kFloatMax;
  void fields(FieldVisitor& v) override {
    v("min", min, in_range(-kFloatMax, kFloatMax),
      "lowest reward kept (the lowest float, the default: no lower bound)");
    v("max", max, in_range(-kFloatMax, kFloatMax),
      "highest reward kept (the highest float, the default: no upper bound)");
  }
};

struct EmptyConfig : Section {
  void fields(FieldVisitor&) override {}
};

struct StepCounterConfig : Section {
  int64_t max_steps = -1;
  void fields(FieldVisitor& v) override {
    v("max_steps", max_steps, at_least(1).or_exactly(-1),
      "truncate after this many steps (-1: never)");
  }
};

}  // namespace

void register_builtin_transforms() {
  register_transform<VecNormConfig>(
      "vec_norm", "running mean/std normalisation, statistics shared with the evaluation env",
      [](const VecNormConfig& c, const TransformContext& context) -> envs::TransformPtr {
        auto t = std::make_shared<envs::VecNorm>(
            envs::VecNormOptions()
                .in_keys(keys_of(c.keys))
                .decay(c.decay)
                .eps(c.eps)
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
  register_transform<RewardScalingConfig>(
      "reward_scaling", "reward * scale + loc",
      [](const RewardScalingConfig& c, const TransformContext&) -> envs::TransformPtr {
        return std::make_shared<envs::RewardScaling>(
            envs::RewardScalingOptions().loc(c.loc).scale(c.scale));
      });
  register_transform<RewardClippingConfig>(
      "reward_clipping", "clamps the reward to [min, max]",
      [](const RewardClippingConfig& c, const TransformContext&) -> envs::TransformPtr {
        if (!(c.min > -kFloatMax) && !(c.max < kFloatMax))
          throw ConfigError(
              "reward_clipping needs 'min' or 'max' (or both): with neither it would clip "
              "nothing; e.g. {type: reward_clipping, min: -1, max: 1}");
        auto options = envs::RewardClippingOptions();
        if (c.min > -kFloatMax) options.clamp_min(c.min);
        if (c.max < kFloatMax) options.clamp_max(c.max);
        return std::make_shared<envs::RewardClipping>(options);
      });
  register_transform<EmptyConfig>(
      "double_to_float", "float64 entries to float32",
      [](const EmptyConfig&, const TransformContext&) -> envs::TransformPtr {
        return std::make_shared<envs::DoubleToFloat>();
      });
  register_transform<StepCounterConfig>(
      "step_counter", "counts steps (step_count) and truncates at max_steps",
      [](const StepCounterConfig& c, const TransformContext&) -> envs::TransformPtr {
        auto options = envs::StepCounterOptions();
        if (c.max_steps > 0) options.max_steps(c.max_steps);
        return std::make_shared<envs::StepCounter>(options);
      });
}

}  // namespace tdrl::apps::detail
