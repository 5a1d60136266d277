#pragma once

// What the config tests share: the minimal config, loading helpers, the scalar view of a
// section's values, and the fixture that registers the built-ins.

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <tdrl/apps/config.h>
#include <tdrl/apps/registry.h>

#include "support/error_message.h"

namespace tdrl::apps::config_testing {

// ---- helpers -----------------------------------------------------------------------------------

// The required keys only; lines 1 to 6.
inline const char* kMinimal =
    "env:\n"
    "  name: CartPole-v1\n"
    "algo:\n"
    "  name: ppo\n"
    "collector:\n"
    "  total_frames: 1000\n";

inline RunConfig load_yaml(const std::string& yaml,
                           const std::vector<std::string>& overrides = {}) {
  return load_config_string(yaml, overrides, "run.yaml");
}

// The ConfigError message of loading `yaml` (a test failure when it loads).
inline std::string problems_of(const std::string& yaml,
                               const std::vector<std::string>& overrides = {}) {
  return tdrl::test_util::error_message<ConfigError>([&] { load_yaml(yaml, overrides); });
}

// The problems of kMinimal with `overrides`.
inline std::string override_problems(const std::vector<std::string>& overrides) {
  return problems_of(kMinimal, overrides);
}

// "--set a=1 --set b=2", for traces.
inline std::string as_flags(const std::vector<std::string>& overrides) {
  std::string out;
  for (const auto& o : overrides) out += (out.empty() ? "--set " : " --set ") + o;
  return out;
}

// The scalar values of a section and of everything nested in it, by key path ("algo.gamma",
// "replay.capacity", "env.transforms[0].max_steps"): how the tests read the options of sections
// they cannot name (the built-in algorithms' and transforms').
struct Scalars {
  std::map<std::string, double> numbers;  // ints and floats
  std::map<std::string, std::string> strings;
  std::map<std::string, bool> bools;
};

class ScalarCollector : public FieldVisitor {
 public:
  explicit ScalarCollector(Scalars& out) : out_(out) {}

  // A number, or "(none)" when unset.
  template <class T>
  void optional(const char* name, const std::optional<T>& v) {
    if (v) {
      out_.numbers[prefix_ + name] = static_cast<double>(*v);
    } else {
      out_.strings[prefix_ + name] = "(none)";
    }
  }

  void field(const char* name, bool& v, const Constraint&, const char*) override {
    out_.bools[prefix_ + name] = v;
  }
  void field(const char* name, int64_t& v, const Constraint&, const char*) override {
    out_.numbers[prefix_ + name] = static_cast<double>(v);
  }
  void field(const char* name, double& v, const Constraint&, const char*) override {
    out_.numbers[prefix_ + name] = v;
  }
  void field(const char* name, std::optional<double>& v, const Constraint&, const char*) override {
    optional(name, v);
  }
  void field(const char* name, std::optional<int64_t>& v, const Constraint&, const char*) override {
    optional(name, v);
  }
  void field(const char* name, std::string& v, const Constraint&, const char*) override {
    out_.strings[prefix_ + name] = v;
  }
  void field(const char*, std::vector<int64_t>&, const Constraint&, const char*) override {}
  void field(const char*, std::vector<double>&, const Constraint&, const char*) override {}
  void field(const char*, std::vector<std::string>&, const Constraint&, const char*) override {}
  void field(const char*, ScalarMap&, const Constraint&, const char*) override {}
  void section(const char* name, Section& value, const char*) override {
    nested(prefix_ + name + ".", value);
  }
  void section_list(const char* name, SectionList& list, const char*) override {
    for (size_t i = 0; i < list.size(); ++i)
      nested(prefix_ + name + "[" + std::to_string(i) + "].", list.at(i));
  }

 private:
  void nested(std::string prefix, Section& section) {
    std::swap(prefix_, prefix);
    section.fields(*this);
    std::swap(prefix_, prefix);
  }
  Scalars& out_;
  std::string prefix_;
};

inline Scalars scalars_of(Section& section) {
  Scalars out;
  ScalarCollector collector(out);
  section.fields(collector);
  return out;
}

// Names are checked against the registries: register the built-ins (idempotent) first.
class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override { register_builtin_components(); }
};

}  // namespace tdrl::apps::config_testing
