// tdrl-train: trains the algorithm a YAML config names (see docs/config.md and docs/apps.md).
//
//   tdrl-train --config configs/ppo_cartpole.yaml [--set optim.lr=1e-3 ...] [--print-config]
//   tdrl-train --resume runs/ppo_cartpole-20261123-101500
//
// Started with the TDRL_COLLECTOR_* variables (by a distributed run's trainer, or by hand on
// another host), it is a collector worker instead: it builds the env and policy the config
// describes and serves the trainer until it stops.

#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <tdrl/apps/config.h>
#include <tdrl/apps/recipe.h>
#include <tdrl/apps/run_dir.h>
#include <tdrl/apps/trainer.h>
#include <tdrl/collectors/distributed_collector.h>

int main(int argc, char** argv) {
  using namespace tdrl::apps;
  CLI::App app{"tdrl-train: train an RL agent from a YAML config"};
  std::string config_path;
  std::string resume_dir;
  std::vector<std::string> overrides;
  bool print_config = false;
  app.add_option("--config", config_path, "the YAML config file");
  app.add_option("--set", overrides, "override a key: --set optim.lr=0.001 (repeatable)");
  app.add_option("--resume", resume_dir,
                 "continue the run in this folder from its last checkpoint");
  app.add_flag("--print-config", print_config, "print the resolved config and exit");
  CLI11_PARSE(app, argc, argv);
  try {
    if (config_path.empty() && resume_dir.empty()) {
      std::cerr << "tdrl-train: pass --config FILE (or --resume RUN_DIR); see --help\n";
      return 2;
    }
    if (!resume_dir.empty() && !overrides.empty()) {
      std::cerr << "tdrl-train: --set cannot change a resumed run (its config.yaml is fixed)\n";
      return 2;
    }
    std::optional<RunDir> run;
    if (!resume_dir.empty()) {
      run = RunDir::open(resume_dir);
      config_path = run->file("config.yaml");
    }
    const Config config = Config::load_file(config_path, overrides);
    if (print_config) {
      std::cout << config.to_yaml();
      return 0;
    }
    if (auto identity = tdrl::collectors::worker_identity_from_env()) {
      auto recipe = make_recipe(config);
      tdrl::collectors::run_distributed_worker(*identity, recipe->train_env_factory,
                                               recipe->exploration_policy);
      return 0;
    }
    if (!run) {
      std::string name = config.get_string("name");
      if (name.empty()) name = config.get_string("algo.name") + "_" + config.get_string("env.name");
      run = RunDir::create(config.get_string("logger.dir"), name);
    }
    std::cout << "tdrl-train: run folder " << run->path() << "\n";
    Trainer trainer(config, *run, /*resume=*/!resume_dir.empty());
    const bool completed = trainer.train();
    const auto& m = trainer.metrics();
    auto eval = m.find("eval_return");
    std::cout << "tdrl-train: " << (completed ? "finished" : "stopped (resume with --resume ")
              << (completed ? "" : run->path() + ")") << " at " << trainer.frames() << " frames";
    if (eval != m.end()) std::cout << ", eval return " << eval->second;
    std::cout << "\n";
    return completed ? 0 : 130;
  } catch (const std::exception& e) {
    std::cerr << "tdrl-train: " << e.what() << "\n";
    return 1;
  }
}
