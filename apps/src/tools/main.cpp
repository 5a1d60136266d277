// train_main and eval_main: the command lines of tdrl-train and tdrl-eval, and plugin loading.

#include <tdrl/apps/main.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <optional>
#include <set>
#include <vector>

#include <torch/utils.h>
#include <CLI/CLI.hpp>

#include <tdrl/apps/checkpoint.h>
#include <tdrl/apps/checkpoint_store.h>
#include <tdrl/apps/config.h>
#include <tdrl/apps/env_parts.h>
#include <tdrl/apps/registry.h>
#include <tdrl/apps/run_dir.h>
#include <tdrl/apps/trainer.h>
#include <tdrl/apps/video.h>
#include <tdrl/collectors/distributed_collector.h>
#include <tdrl/envs/registry.h>

#include "tools/command_line.h"

namespace tdrl::apps {

namespace fs = std::filesystem;

void load_plugin(const std::string& path) {
  static std::mutex mutex;
  static std::set<std::string> loaded;
  std::error_code ec;
  const std::string absolute = fs::absolute(path, ec).lexically_normal().string();
  std::lock_guard<std::mutex> lock(mutex);
  if (loaded.count(absolute)) return;
  if (!fs::is_regular_file(absolute, ec))
    throw ConfigError("--plugin " + path + ": no such file (" + absolute + ")");
  void* handle = ::dlopen(absolute.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!handle)
    throw ConfigError("--plugin " + path + ": cannot load it: " + ::dlerror() +
                      " (build it as a shared library linking tdrl::apps)");
  // Is it a plugin at all; then its ABI stamp: a plugin built against another tdrl, LibTorch or
  // string ABI would crash on the first std::string it passes, so nothing of it runs before.
  using Register = void (*)();
  auto fn = reinterpret_cast<Register>(::dlsym(handle, "tdrl_register_plugin"));
  if (!fn) {
    ::dlclose(handle);
    throw ConfigError("--plugin " + path +
                      ": it defines no tdrl_register_plugin; define it with TDRL_PLUGIN { ... } "
                      "(tdrl/apps/main.h)");
  }
  using Stamp = const char* (*)();
  const auto stamp = reinterpret_cast<Stamp>(::dlsym(handle, "tdrl_plugin_abi"));
  const std::string ours = TDRL_PLUGIN_ABI_STAMP;
  if (!stamp) {
    ::dlclose(handle);
    throw ConfigError("--plugin " + path +
                      ": it has no ABI stamp (tdrl_plugin_abi), so it was built against an "
                      "older tdrl; rebuild it against this one (" +
                      ours + ") with TDRL_PLUGIN { ... }");
  }
  const std::string theirs = stamp();
  if (theirs != ours) {
    ::dlclose(handle);
    throw ConfigError("--plugin " + path + ": built against " + theirs +
                      ", but this program is built against " + ours +
                      "; rebuild the plugin against this tdrl and LibTorch");
  }
  // A registration that fails (a name already taken, a factory missing) is a config error of
  // this plugin: the message names it, and every tool exits with the config-error code.
  try {
    fn();
  } catch (const std::exception& e) {
    throw ConfigError("--plugin " + path + ": its registration failed: " + e.what());
  }
  loaded.insert(absolute);
}

namespace {

// Loads the plugins named on the command line and in the config file; returns them all,
// absolute, in order, without repeats (what config.yaml then records). A --plugin replaces a
// listed plugin of the same file name (one rebuilt or moved since the run recorded it), which
// then need not exist; a listed plugin that cannot load is named with the file and line
// listing it.
std::vector<std::string> load_plugins(const std::vector<std::string>& given,
                                      const std::string& config_path) {
  std::vector<std::string> all;
  auto add = [&all](const std::string& p) {
    const std::string absolute = fs::absolute(p).lexically_normal().string();
    if (std::find(all.begin(), all.end(), absolute) == all.end()) all.push_back(absolute);
  };
  const auto given_as = [&given](const std::string& listed) {
    const auto name = fs::path(listed).filename();
    return std::any_of(given.begin(), given.end(),
                       [&name](const std::string& g) { return fs::path(g).filename() == name; });
  };
  if (!config_path.empty()) {
    for (const auto& listed : plugins_of(config_path)) {
      if (given_as(listed.path)) continue;
      try {
        load_plugin(listed.path);
      } catch (const ConfigError& e) {
        // load_plugin's message starts "--plugin PATH: "; here the path came from the file.
        std::string why = e.what();
        const std::string flag = "--plugin " + listed.path + ": ";
        if (why.rfind(flag, 0) == 0) why = why.substr(flag.size());
        throw ConfigError("'plugins' (" + config_path + " line " + std::to_string(listed.line) +
                          ") lists " + listed.path + ": " + why +
                          "; a plugin rebuilt elsewhere is given again with --plugin NEW_PATH "
                          "(the same file name)");
      }
      add(listed.path);
    }
  }
  for (const auto& p : given) {
    load_plugin(p);
    add(p);
  }
  return all;
}

std::string list_components() {
  std::string out = "algorithms:";
  for (const auto& n : algorithm_names()) out += " " + n;
  out += "\ntransforms:";
  for (const auto& n : transform_types()) out += " " + n;
  out += "\nenvs:";
  for (const auto& n : envs::list_envs()) out += " " + n;
  return out + "\n";
}

// Runs a command's body, turning what it throws into the exit status: 2 for a config problem,
// 1 for any other failure, with the message on stderr after the program's name.
template <class Body>
int report_errors(const char* program, Body&& body) {
  try {
    return body();
  } catch (const ConfigError& e) {
    std::cerr << program << ": " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << program << ": " << e.what() << "\n";
    return 1;
  }
}

}  // namespace

int train_main(int argc, char** argv) {
  // The command line.
  register_builtin_components();
  CLI::App app{"tdrl-train: train an RL agent from a YAML config (docs/apps.md, docs/config.md)"};
  std::string config_path;
  std::string resume_dir;
  std::vector<std::string> overrides;
  std::vector<std::string> plugins;
  bool print_config = false;
  bool reference = false;
  bool list = false;
  app.add_option("--config", config_path, "the YAML config file");
  app.add_option("--set", overrides, "override a key: --set optim.lr=0.001 (repeatable)");
  app.add_option("--resume", resume_dir,
                 "continue the run in this folder from its last checkpoint");
  app.add_option("--plugin", plugins,
                 "a shared library registering envs, algorithms or transforms (repeatable)");
  app.add_flag("--print-config", print_config, "print the resolved config and exit");
  app.add_flag("--config-reference", reference, "print docs/config.md (every key) and exit");
  app.add_flag("--list", list, "list the registered algorithms, transforms and envs and exit");
  app.footer("Registered:\n" + list_components());
  if (const auto code = detail::parse_command_line(app, argc, argv)) return *code;
  return report_errors("tdrl-train", [&] {
    // Which run: a new one from --config, or the folder of --resume with its own config.
    if (!resume_dir.empty() && !config_path.empty()) {
      std::cerr << "tdrl-train: pass --config or --resume, not both\n";
      return 2;
    }
    // A resumed run keeps its config.yaml; only where it runs may change (a GPU run resumed on
    // a machine without one): the same computation, up to floating-point rounding.
    if (!resume_dir.empty()) {
      for (const auto& o : overrides) {
        const std::string key = o.substr(0, o.find('='));
        if (key != "device" && key != "replay.device") {
          std::cerr << "tdrl-train: --set " << o << ": a resumed run keeps its config.yaml; "
                    << "only device and replay.device can change on --resume\n";
          return 2;
        }
      }
    }
    std::optional<RunDir> run;
    if (!resume_dir.empty()) {
      run = RunDir::open(resume_dir);
      config_path = run->file("config.yaml");
    }
    const auto all_plugins = load_plugins(plugins, config_path);
    if (reference || list) {
      std::cout << (reference ? config_reference_markdown() : list_components());
      return 0;
    }
    if (config_path.empty()) {
      std::cerr << "tdrl-train: pass --config FILE (or --resume RUN_DIR); see --help\n";
      return 2;
    }
    // The resolved config; a distributed collector worker acts and never trains. The plugins
    // loaded (absolute, the replaced ones gone) are what config.yaml records: set as they are,
    // not pasted into a --set text that a path's quotes or commas would break.
    RunConfig config;
    try {
      config = load_config(config_path, overrides);
      config.plugins = all_plugins;
      if (print_config) {
        std::cout << to_yaml(config);
        return 0;
      }
      if (auto identity = collectors::worker_identity_from_env()) {
        // A collector worker: the acting part only.
        apply_threads(config);
        EnvParts env = build_env_parts(config.env);
        auto recipe = make_acting_recipe(config, env);
        collectors::run_distributed_worker(*identity, env.train_env_factory,
                                           recipe->exploration_policy);
        return 0;
      }
      // Everything that can be refused is refused before the run folder exists.
      Trainer::check(config);
    } catch (const ConfigError& e) {
      std::cerr << "tdrl-train: " << e.what() << "\n";
      return 2;
    }
    // Train, then report where the run stopped (130: interrupted, resumable).
    if (!run) run = RunDir::create(config.logger.dir, config.run_name());
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
  });
}

int eval_main(int argc, char** argv) {
  register_builtin_components();
  CLI::App app{
      "tdrl-eval: evaluate a run's checkpoint (default: its last intact one) with the "
      "deterministic actor"};
  std::string run_path;
  std::string checkpoint;
  int64_t episodes = 10;
  std::optional<uint64_t> seed;
  std::vector<std::string> plugins;
  app.add_option("--run", run_path, "the run folder")->required();
  app.add_option("--checkpoint", checkpoint,
                 "a checkpoint of the run: a name in its checkpoints/ folder ('best', "
                 "'ckpt-000000050000') or a folder path (default: the last intact one)");
  app.add_option("--episodes", episodes, "episodes to run (default 10)")
      ->check(CLI::Range(int64_t{1}, int64_t{1000000}));
  app.add_option("--seed", seed, "seed of the evaluation env (default: the run's eval seed)");
  app.add_option("--plugin", plugins, "a shared library registering components (repeatable)");
  std::string video_path;
  int64_t video_fps = 0;
  app.add_option("--video", video_path,
                 "record the first episode as an MP4 video at this path (the env must draw)");
  app.add_option("--video-fps", video_fps,
                 "frames per second of the video (default: eval.video_fps)")
      ->check(CLI::Range(int64_t{1}, int64_t{1000}));
  if (const auto code = detail::parse_command_line(app, argc, argv)) return *code;
  if (!video_path.empty() && !videos_available()) {
    std::cerr << "tdrl-eval: --video: " << videos_unavailable_reason() << "\n";
    return 2;
  }
  return report_errors("tdrl-eval", [&] {
    const RunDir run = RunDir::open(run_path);
    load_plugins(plugins, run.file("config.yaml"));
    const RunConfig config = load_config(run.file("config.yaml"));
    apply_threads(config);
    // The checkpoint: the one --checkpoint names (refused when damaged), else the last intact.
    const CheckpointStore store(run.file("checkpoints"));
    std::optional<std::string> latest;
    if (!checkpoint.empty()) {
      // A name in the run's checkpoints/ folder, or a folder path.
      const std::string named = run.file("checkpoints") + "/" + checkpoint;
      const std::string folder =
          checkpoint.find('/') == std::string::npos && fs::is_directory(named) ? named : checkpoint;
      if (!fs::is_regular_file(fs::path(folder) / "state" / "meta.json")) {
        std::cerr << "tdrl-eval: --checkpoint " << checkpoint << ": " << folder
                  << " is not a checkpoint folder (it has no state/); the run's checkpoints are in "
                  << run.file("checkpoints") << "\n";
        return 2;
      }
      if (const auto damage = CheckpointStore::damage(folder)) {
        std::cerr << "tdrl-eval: --checkpoint " << checkpoint << " is damaged: " << *damage << "\n";
        return 1;
      }
      latest = folder;
    } else {
      std::vector<std::string> why;
      const auto intact = store.latest_intact(&why);
      if (!intact) {
        std::cerr << "tdrl-eval: " << run.path() << " has no "
                  << (why.empty() ? "checkpoint yet" : "intact checkpoint") << "\n";
        for (const auto& w : why) std::cerr << "tdrl-eval: passed over " << w << "\n";
        return 1;
      }
      for (const auto& w : intact->passed_over)
        std::cerr << "tdrl-eval: passed over a damaged checkpoint: " << w << "\n";
      latest = intact->folder;
    }
    // The run's actor and env state (e.g. VecNorm statistics) from it, then the episodes.
    EnvParts env = build_env_parts(config.env);
    auto recipe = make_acting_recipe(config, env);
    const auto state = load_checkpoint_state(*latest);
    load_module_state(*recipe->actor, state.get_tensordict("actor"), "actor");
    recipe->actor->to(torch::Device(config.device));
    // Both records (RunState, BestState) hold "env"; tdrl 0.1 wrote it only when non-empty.
    if (state.contains("env")) load_env_state(*env.env_state, state.get_tensordict("env"));
    auto eval_env = env.probe ? std::move(env.probe) : env.eval_env_factory();
    std::optional<VideoWriter> video;
    if (!video_path.empty())
      video.emplace(video_path, video_fps ? video_fps : config.eval.video_fps);
    const auto result =
        evaluate(*eval_env, *recipe->actor, episodes, config.eval.max_steps,
                 seed ? *seed : derive_seeds(config.seed).eval, video ? &*video : nullptr);
    std::printf("%s: return %.2f +- %.2f (min %.2f, max %.2f) over %lld episodes of %.1f steps",
                config.env.name.c_str(), result.mean, result.std, result.min, result.max,
                static_cast<long long>(result.episodes), result.mean_length);
    if (result.mean_transformed)
      std::printf(" (after the reward transforms: %.2f)", *result.mean_transformed);
    std::printf(" (checkpoint %s)\n", latest->c_str());
    if (video)
      std::printf("video of the first episode: %s (%lld frames)\n", video_path.c_str(),
                  static_cast<long long>(video->frames()));
    return 0;
  });
}

}  // namespace tdrl::apps
