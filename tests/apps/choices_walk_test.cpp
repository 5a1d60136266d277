// Every choice the config accepts dispatches. The walk finds the choices in the config's own field
// declarations (every string field with a list of choices, of every section and of every
// algorithm's section), so a choice added to a table joins it by itself; each one loads as a
// config and trains a tiny run. A choice that validates but does not build (as `selu` once did:
// the config listed it, the MLP did not know it) fails here.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tdrl/apps/config.h>
#include <tdrl/apps/env_parts.h>
#include <tdrl/apps/registry.h>
#include <tdrl/apps/trainer.h>
#include <tdrl/envs/registry.h>

#include "apps/trainer_test_util.h"

namespace tdrl::apps::trainer_testing {
namespace {

// A string field (or list of strings) with choices: "section.key", the choices, and whether the
// field is a list (whose value is then written `[choice]`).
struct Choices {
  std::string key;
  std::vector<std::string> choices;
  bool list = false;
};

// The fields with choices, in declaration order.
class ChoiceFinder : public FieldVisitor {
 public:
  std::vector<Choices> found;

  void field(const char*, bool&, const Constraint&, const char*) override {}
  void field(const char*, int64_t&, const Constraint&, const char*) override {}
  void field(const char*, double&, const Constraint&, const char*) override {}
  // An optional number's words all mean "unset": there is nothing to dispatch on.
  void field(const char*, std::optional<double>&, const Constraint&, const char*) override {}
  void field(const char*, std::optional<int64_t>&, const Constraint&, const char*) override {}
  void field(const char* name, std::string&, const Constraint& c, const char*) override {
    add(name, c, /*list=*/false);
  }
  void field(const char*, std::vector<int64_t>&, const Constraint&, const char*) override {}
  void field(const char*, std::vector<double>&, const Constraint&, const char*) override {}
  void field(const char* name, std::vector<std::string>&, const Constraint& c,
             const char*) override {
    add(name, c, /*list=*/true);
  }
  void field(const char*, ScalarMap&, const Constraint&, const char*) override {}
  void section(const char* name, Section& value, const char*) override {
    const std::string outer = prefix_;
    prefix_ += std::string(name) + ".";
    value.fields(*this);
    prefix_ = outer;
  }
  // env.transforms: walked by their registry below.
  void section_list(const char*, SectionList&, const char*) override {}

 private:
  void add(const char* name, const Constraint& c, bool list) {
    if (!c.choices().empty()) found.push_back({prefix_ + name, c.choices(), list});
  }
  std::string prefix_;
};

std::vector<Choices> choices_of(RunConfig config) {
  ChoiceFinder finder;
  config.fields(finder);
  return finder.found;
}

// The built-in algorithms, envs and transforms, taken before any test of this binary registers
// one of its own (static initialisation runs before the tests; the registries are function-local
// statics).
struct Builtins {
  std::vector<std::string> algorithms, envs, transforms;
};
const Builtins kBuiltins = [] {
  register_builtin_components();
  return Builtins{algorithm_names(), envs::list_envs(), transform_types()};
}();

// A tiny pixel task for what needs frames (the encoder's choices, the image transforms):
// 16x16 CartPole frames as [C, H, W] float, read by a one-layer ConvNet. `transforms` is the
// env.transforms list after to_tensor_image.
std::vector<std::string> pixel_task(const std::string& transforms = "") {
  return {
      "env.options={from_pixels: true, pixels_only: true, render_width: 16, "
      "render_height: 16}",
      "env.transforms=[{type: to_tensor_image}" + transforms + "]",
      "model.encoder=convnet",
      "model.convnet.num_cells=[4]",
      "model.convnet.kernel_sizes=[3]",
      "model.convnet.strides=[2]"};
}

// Loads the tiny config of `algo` with `overrides` and trains it (4 batches of 64 frames).
void train_tiny(const std::string& algo, const std::vector<std::string>& overrides) {
  SCOPED_TRACE(algo + " with " + ::testing::PrintToString(overrides));
  TempDir tmp;
  auto all = overrides;
  all.push_back("logger.progress=none");
  RunConfig config;
  ASSERT_NO_THROW(config = tiny_config(algo, all));
  Trainer trainer(std::move(config), RunDir::create(tmp.path().string(), "walk"));
  EXPECT_TRUE(trainer.train());
}

TEST(ChoicesWalkTest, EveryChoiceOfEverySectionLoadsAndTrains) {
  ASSERT_THAT(kBuiltins.algorithms,
              ::testing::IsSupersetOf({"a2c", "ddpg", "dqn", "ppo", "sac", "td3"}));
  size_t walked = 0;
  for (const auto& algo : kBuiltins.algorithms) {
    for (const auto& [key, choices, list] : choices_of(tiny_config(algo))) {
      // The algorithms are the outer loop; envs are walked below (each needs a fitting algorithm).
      if (key == "algo.name" || key == "env.name") continue;
      // The sections beside algo: are the same for every algorithm; walk them with ppo.
      if (algo != "ppo" && key.rfind("algo.", 0) != 0 && key.rfind("replay.", 0) != 0) continue;
      for (const auto& choice : choices) {
        // Distributed workers are tdrl-train started again, which this test binary is not: the
        // mode runs end to end in the Apps.CollectorMode.distributed test.
        if (key == "collector.mode" && choice == "distributed") continue;
        std::vector<std::string> overrides;
        // The encoder's choices read frames.
        if (key.rfind("model.convnet.", 0) == 0 || (key == "model.encoder" && choice == "convnet"))
          overrides = pixel_task();
        overrides.push_back(key + "=" + (list ? "[" + choice + "]" : choice));
        // The worker modes with two workers (single reads no num_workers, and refuses one).
        if (key == "collector.mode" && choice != "single")
          overrides.push_back("collector.num_workers=2");
        train_tiny(algo, overrides);
        ++walked;
      }
    }
  }
  // Well past the sections' own choices: activations, inits, modes, optimisers, schedules,
  // progress modes, backends, and each algorithm's losses and target updates.
  EXPECT_GT(walked, 40u);
}

TEST(ChoicesWalkTest, EveryRegisteredEnvTrainsWithPpo) {
  for (const auto& env : kBuiltins.envs) train_tiny("ppo", {"env.name=" + env});
}

// With its defaults a transform trains, or (when it has nothing to do without an option, or
// without frames) is refused before the run, naming what to add; with that it trains.
TEST(ChoicesWalkTest, EveryRegisteredTransformTrainsWithItsDefaultsOrSaysWhatItNeeds) {
  // The image transforms read frames, and resize, crop and center_crop need a size.
  const std::map<std::string, std::string> image = {{"to_tensor_image", ""},
                                                    {"grayscale", ""},
                                                    {"cat_frames", ""},
                                                    {"resize", ", width: 12, height: 10"},
                                                    {"crop", ", width: 12, height: 10, top: 3"},
                                                    {"center_crop", ", width: 12, height: 10"}};
  std::vector<std::string> refused;
  for (const auto& type : kBuiltins.transforms) {
    const std::string item = "env.transforms=[{type: " + type + "}]";
    try {
      const RunConfig config = tiny_config("ppo", {item});
      build_env_parts(config.env);
    } catch (const ConfigError& e) {
      EXPECT_THAT(e.what(), HasSubstr("env.transforms")) << type;
      refused.push_back(type);
      continue;
    }
    train_tiny("ppo", {item});
  }
  EXPECT_THAT(refused, ::testing::UnorderedElementsAre("reward_clipping", "frame_skip",
                                                       "to_tensor_image", "grayscale", "cat_frames",
                                                       "resize", "crop", "center_crop"));
  train_tiny("ppo", {"env.transforms=[{type: reward_clipping, clamp_max: 1}]"});
  train_tiny("ppo", {"env.transforms=[{type: frame_skip, frame_skip: 2}]"});
  for (const auto& [type, options] : image) {
    // to_tensor_image itself heads every pixel task; the others follow it.
    train_tiny("ppo",
               pixel_task(type == "to_tensor_image" ? "" : ", {type: " + type + options + "}"));
  }
}

}  // namespace
}  // namespace tdrl::apps::trainer_testing
