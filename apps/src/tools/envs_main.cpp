// tdrl-envs as a library function (envs_main, tdrl/apps/main.h): lists the registered envs, one
// row each (observations, action, bounds), or one env's full specs with --env.

#include <algorithm>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include <tdrl/apps/main.h>
#include <tdrl/apps/registry.h>
#include <tdrl/envs/env_base.h>
#include <tdrl/envs/registry.h>
#include <tdrl/specs.h>
#include <tensordict/dtype.h>
#include <tensordict/errors.h>

#include "tools/command_line.h"

namespace tdrl::apps {

// Named, not anonymous: this file shares a unity batch with the library's other sources.
namespace envs_listing {

using tdrl::specs::TensorSpecPtr;

// Python's dtype name without its module, to keep the table narrow: "float32", "int64".
std::string dtype_text(torch::Dtype dtype) {
  const std::string name = tensordict::dtype_name(dtype);
  const std::string prefix = "torch.";
  return name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : name;
}

// Every element of a bound, e.g. "[-1, -1, -0.5]".
std::string values_text(const torch::Tensor& bound) {
  const auto flat = bound.reshape({-1}).to(torch::kDouble).contiguous();
  std::ostringstream os;
  os << std::setprecision(6) << "[";
  for (int64_t i = 0; i < flat.numel(); ++i) os << (i ? ", " : "") << flat[i].item<double>();
  os << "]";
  return os.str();
}

// A Bounded spec's bounds with their values.
void print_bounds(const std::string& what, const TensorSpecPtr& spec) {
  if (auto b = std::dynamic_pointer_cast<tdrl::specs::Bounded>(spec))
    std::cout << "  " << what << " bounds: low " << values_text(b->low()) << ", high "
              << values_text(b->high()) << "\n";
}

// A bound as a value when all its elements are equal, else its first elements.
std::string bound_text(const torch::Tensor& bound) {
  const auto flat = bound.reshape({-1}).to(torch::kDouble);
  std::ostringstream os;
  os << std::setprecision(4);
  if (flat.numel() > 0 && flat.eq(flat[0]).all().item<bool>()) {
    os << flat[0].item<double>();
    return os.str();
  }
  os << "(";
  const int64_t shown = std::min<int64_t>(flat.numel(), 3);
  for (int64_t i = 0; i < shown; ++i) os << (i ? ", " : "") << flat[i].item<double>();
  if (flat.numel() > shown) os << ", ...";
  os << ")";
  return os.str();
}

// "float32 [6]" for each observation entry, "; " between entries.
std::string observation_text(const tdrl::specs::CompositePtr& spec) {
  std::string out;
  for (const auto& key : spec->keys(/*include_nested=*/true, /*leaves_only=*/true)) {
    const auto leaf = spec->get(key);
    if (!out.empty()) out += "; ";
    out += (spec->keys().size() > 1 ? key.to_string() + " " : std::string()) +
           dtype_text(leaf->dtype()) + " " + tensordict::shape_str(leaf->shape());
  }
  return out;
}

// "discrete, 3 actions", "continuous [8] in [-1, 1]".
std::string action_text(const TensorSpecPtr& spec) {
  if (auto c = std::dynamic_pointer_cast<tdrl::specs::Categorical>(spec))
    return "discrete, " + std::to_string(c->n()) + " actions";
  if (auto o = std::dynamic_pointer_cast<tdrl::specs::OneHot>(spec))
    return "one-hot, " + std::to_string(o->n()) + " actions";
  std::string out = "continuous " + tensordict::shape_str(spec->shape());
  if (auto b = std::dynamic_pointer_cast<tdrl::specs::Bounded>(spec))
    out += " in [" + bound_text(b->low()) + ", " + bound_text(b->high()) + "]";
  else
    out += ", unbounded";
  return out;
}

// The task's own episode limit, or "-" for none (or an env that does not say).
std::string max_steps_text(const tdrl::envs::EnvBase& env) {
  const int64_t steps = env.max_episode_steps();
  return steps > 0 ? std::to_string(steps) : "-";
}

// The task options the env was registered with, "a, b, c" ("-" when none were declared).
std::string options_text(const std::string& name) {
  std::string out;
  for (const auto& option : tdrl::envs::env_option_names(name))
    out += (out.empty() ? "" : ", ") + option;
  return out.empty() ? "-" : out;
}

}  // namespace envs_listing

int envs_main(int argc, char** argv) {
  using namespace envs_listing;
  CLI::App app{"tdrl-envs: list the registered environments (one row each), or one env's specs"};
  bool names_only = false;
  std::string one;
  app.add_flag("--names-only", names_only, "print only the names");
  app.add_option("--env", one, "print one env's observation, action and reward specs in full");
  std::vector<std::string> plugins;
  app.add_option("--plugin", plugins,
                 "a shared library registering envs (TDRL_PLUGIN), loaded first; repeatable");
  if (const auto code = detail::parse_command_line(app, argc, argv)) return *code;
  try {
    register_builtin_components();
    for (const auto& plugin : plugins) load_plugin(plugin);
  } catch (const ConfigError& e) {
    std::cerr << "tdrl-envs: " << e.what() << "\n";
    return 2;
  }
  try {
    const auto names = tdrl::envs::list_envs();
    if (!one.empty()) {
      auto env = tdrl::envs::make_env(one);  // KeyError naming the closest names when unknown
      std::cout << one << "\n"
                << "  observation: " << env->observation_spec()->to_string() << "\n"
                << "  action:      " << env->action_spec()->to_string() << "\n"
                << "  reward:      " << env->reward_spec()->to_string() << "\n"
                << "  max episode steps: " << max_steps_text(*env) << "\n"
                << "  options (env.options in a config): " << options_text(one) << "\n";
      const auto observations = env->observation_spec();
      for (const auto& key : observations->keys(/*include_nested=*/true, /*leaves_only=*/true))
        print_bounds(key.join_parts("."), observations->get(key));
      print_bounds("action", env->action_spec());
      return 0;
    }
    std::vector<std::vector<std::string>> rows{
        {"env", "observation", "action", "max steps", "options"}};
    for (const auto& name : names) {
      if (names_only) {
        std::cout << name << "\n";
        continue;
      }
      auto env = tdrl::envs::make_env(name);
      rows.push_back({name, observation_text(env->observation_spec()),
                      action_text(env->action_spec()), max_steps_text(*env), options_text(name)});
    }
    if (names_only) return 0;
    std::vector<size_t> width(rows.front().size(), 0);
    for (const auto& row : rows)
      for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
    for (const auto& row : rows) {
      std::string line;
      for (size_t i = 0; i < row.size(); ++i)
        line += row[i] + (i + 1 < row.size() ? std::string(width[i] - row[i].size() + 2, ' ') : "");
      std::cout << line << "\n";
    }
    std::cout << "(" << names.size() << " envs; tdrl-envs --env NAME prints one env's specs)\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "tdrl-envs: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace tdrl::apps
