// tdrl-eval: evaluates a run's last checkpoint with the deterministic policy.
//
//   tdrl-eval --run runs/ppo_cartpole-20261123-101500 [--episodes 10]

#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include <tdrl/apps/config.h>
#include <tdrl/apps/recipe.h>
#include <tdrl/apps/run_dir.h>
#include <tdrl/apps/trainer.h>

int main(int argc, char** argv) {
  using namespace tdrl::apps;
  CLI::App app{"tdrl-eval: evaluate a run's last checkpoint"};
  std::string run_path;
  int64_t episodes = 10;
  int64_t seed = 0;
  app.add_option("--run", run_path, "the run folder")->required();
  app.add_option("--episodes", episodes, "episodes to run (default 10)");
  app.add_option("--seed", seed, "seed of the evaluation env (default 0)");
  CLI11_PARSE(app, argc, argv);
  try {
    const RunDir run = RunDir::open(run_path);
    const Config config = Config::load_file(run.file("config.yaml"));
    torch::set_num_threads(1);
    auto recipe = make_recipe(config);
    const CheckpointStore store(run.file("checkpoints"));
    const auto latest = store.latest();
    if (!latest) {
      std::cerr << "tdrl-eval: " << run.path() << " has no checkpoint yet\n";
      return 1;
    }
    torch::serialize::InputArchive archive;
    archive.load_from(*latest + "/loss.pt");
    recipe->loss->load(archive);
    for (auto& [name, state] : recipe->env_state) {
      torch::serialize::InputArchive env_archive;
      const auto path = *latest + "/env_" + name + ".pt";
      if (!std::ifstream(path)) continue;
      env_archive.load_from(path);
      tensordict::TensorDict sd = tensordict::TensorDict::empty({});
      for (const auto& key : env_archive.keys()) {
        torch::Tensor t;
        env_archive.read(key, t);
        sd.set(key, t);
      }
      state->load_state_dict(sd.unflatten_keys("."));
    }
    auto env = recipe->eval_env_factory();
    const auto result = evaluate(*env, *recipe->actor, episodes, config.get_int("eval.max_steps"),
                                 static_cast<uint64_t>(seed));
    std::printf("%s: return %.2f +- %.2f over %lld episodes (checkpoint %s)\n",
                config.get_string("env.name").c_str(), result.mean, result.std,
                static_cast<long long>(result.episodes), latest->c_str());
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "tdrl-eval: " << e.what() << "\n";
    return 1;
  }
}
