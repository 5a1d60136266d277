#include "training/collector_modes.h"

#include <algorithm>

#include <chrono>
#include <filesystem>
#include <utility>

#include <tdrl/collectors/distributed_collector.h>
#include <tdrl/collectors/multi_collector.h>
#include <tensordict/name_table.h>

#include "config/config_text.h"

namespace tdrl::apps::detail {

namespace {

// What every mode's collector is built from.
struct CollectorParts {
  const CollectorSection& section;
  const EnvParts& env;
  Recipe& recipe;
  const RunDir& run;
  torch::Device device;
  collectors::CollectorOptions options;
};

using CollectorFactory = std::unique_ptr<collectors::CollectorBase> (*)(CollectorParts&);

// What a mode's batches hold: one collector's envs, every worker's envs stacked, or one
// worker's envs at a time.
enum class Batches { one_collector, all_workers, one_worker };

// A mode: how it builds its collector, which of the collector section's mode-specific keys
// (num_workers, address, port, launch_workers, timeout_s) it reads, and what its batches hold.
struct Mode {
  CollectorFactory build;
  std::vector<std::string> reads;
  Batches batches;
};

// The worker-thread modes: `num_workers` threads, each with its own env and policy copy.
template <class MultiCollector>
std::unique_ptr<collectors::CollectorBase> worker_threads(CollectorParts& p) {
  return std::make_unique<MultiCollector>(p.env.train_env_factory, p.section.workers.num_workers(),
                                          p.recipe.exploration_policy, p.options);
}

// The modes: the one table that names them, builds their collectors and says what each reads.
const tensordict::NameTable<Mode>& mode_table() {
  static const tensordict::NameTable<Mode> table(
      "mode",
      {
          {"single",
           {[](CollectorParts& p) -> std::unique_ptr<collectors::CollectorBase> {
              if (!p.device.is_cpu()) p.options.policy_device(p.device).storing_device(p.device);
              return std::make_unique<collectors::Collector>(
                  p.env.train_env_factory, p.recipe.exploration_policy, p.options);
            },
            {},
            Batches::one_collector}},
          {"sync",
           {worker_threads<collectors::MultiSyncCollector>, {"num_workers"}, Batches::all_workers}},
          {"async",
           {worker_threads<collectors::MultiAsyncCollector>, {"num_workers"}, Batches::one_worker}},
          {"distributed",
           {[](CollectorParts& p) -> std::unique_ptr<collectors::CollectorBase> {
              const auto& c = p.section;
              auto distributed = c.workers;
              if (c.launch_workers) {
                const auto self = std::filesystem::read_symlink("/proc/self/exe").string();
                distributed.launch_command({self, "--config", p.run.file("config.yaml")});
              }
              return std::make_unique<collectors::DistributedCollector>(p.recipe.exploration_policy,
                                                                        p.options, distributed);
            },
            {"num_workers", "address", "port", "launch_workers", "timeout_s"},
            Batches::all_workers}},
      });
  return table;
}

}  // namespace

const std::vector<std::string>& collector_mode_names() { return mode_table().names(); }

std::vector<std::string> collector_mode_problems(const CollectorSection& c) {
  const Mode* mode = mode_table().find(c.mode);
  if (!mode) return {};  // collector.mode's own choices report it
  // Each key set away from its default that some mode reads (a mode-specific key), where the
  // chosen mode does not.
  CollectorSection section = c, defaults;
  std::vector<std::string> problems;
  for (const auto& key : changed_keys(section, defaults, "")) {
    std::vector<std::string> readers;
    for (const auto& name : mode_table().names()) {
      const auto& reads = mode_table().find(name)->reads;
      if (std::find(reads.begin(), reads.end(), key) != reads.end()) readers.push_back(name);
    }
    if (readers.empty() ||
        std::find(mode->reads.begin(), mode->reads.end(), key) != mode->reads.end())
      continue;
    problems.push_back("'collector." + key + "' is set, but collector.mode " + c.mode +
                       " does not read it (" + word_list(readers, "and", false) +
                       " do); remove it, or set collector.mode");
  }
  return problems;
}

std::optional<int64_t> collector_streams(const CollectorSection& c, int64_t num_envs) {
  switch (mode_table().at(c.mode, "collector.mode").batches) {
    case Batches::one_collector:
      return num_envs;
    case Batches::all_workers:
      return num_envs * c.workers.num_workers();
    case Batches::one_worker:
      break;
  }
  return std::nullopt;
}

std::unique_ptr<collectors::CollectorBase> make_collector(const CollectorSection& c,
                                                          const EnvParts& env, Recipe& recipe,
                                                          const RunDir& run, torch::Device device) {
  collectors::CollectorOptions options;
  static_cast<collectors::CollectionLimits&>(options) = c.limits;
  CollectorParts parts{c, env, recipe, run, device, options.policy_factory(recipe.policy_factory)};
  return mode_table().at(c.mode, "collector.mode").build(parts);
}

}  // namespace tdrl::apps::detail
