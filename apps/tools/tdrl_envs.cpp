// tdrl-envs: lists the registered envs with their observation and action specs.

#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include <tdrl/apps/registry.h>

#include <tdrl/envs/registry.h>

int main(int argc, char** argv) {
  CLI::App app{"tdrl-envs: list the registered environments and their specs"};
  bool specs = true;
  app.add_flag("!--names-only", specs, "print only the names");
  CLI11_PARSE(app, argc, argv);
  try {
    tdrl::apps::register_builtin_components();
    for (const auto& name : tdrl::envs::list_envs()) {
      std::cout << name << "\n";
      if (!specs) continue;
      auto env = tdrl::envs::make_env(name);
      std::cout << "  observation: " << env->observation_spec()->to_string() << "\n"
                << "  action:      " << env->action_spec()->to_string() << "\n";
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "tdrl-envs: " << e.what() << "\n";
    return 1;
  }
}
