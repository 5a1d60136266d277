#include "detail/collector_modes.h"

#include <chrono>
#include <filesystem>
#include <utility>

#include <tdrl/collectors/distributed_collector.h>
#include <tdrl/collectors/multi_collector.h>
#include <tensordict/name_table.h>

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

// The modes: the one table that both names them and builds their collectors.
const tensordict::NameTable<CollectorFactory>& mode_table() {
  static const tensordict::NameTable<CollectorFactory> table(
      "mode",
      {
          {"single",
           [](CollectorParts& p) -> std::unique_ptr<collectors::CollectorBase> {
             if (!p.device.is_cpu()) p.options.policy_device(p.device).storing_device(p.device);
             return std::make_unique<collectors::Collector>(p.env.train_env_factory,
                                                            p.recipe.exploration_policy, p.options);
           }},
          {"sync",
           [](CollectorParts& p) -> std::unique_ptr<collectors::CollectorBase> {
             return std::make_unique<collectors::MultiSyncCollector>(
                 p.env.train_env_factory, p.section.num_workers, p.recipe.exploration_policy,
                 p.options);
           }},
          {"async",
           [](CollectorParts& p) -> std::unique_ptr<collectors::CollectorBase> {
             return std::make_unique<collectors::MultiAsyncCollector>(
                 p.env.train_env_factory, p.section.num_workers, p.recipe.exploration_policy,
                 p.options);
           }},
          {"distributed",
           [](CollectorParts& p) -> std::unique_ptr<collectors::CollectorBase> {
             const auto& c = p.section;
             auto distributed =
                 collectors::DistributedOptions()
                     .address(c.address)
                     .port(static_cast<int>(c.port))
                     .num_workers(c.num_workers)
                     .timeout(std::chrono::milliseconds(static_cast<int64_t>(c.timeout_s * 1000)));
             if (c.launch_workers) {
               const auto self = std::filesystem::read_symlink("/proc/self/exe").string();
               distributed.launch_command({self, "--config", p.run.file("config.yaml")});
             }
             return std::make_unique<collectors::DistributedCollector>(p.recipe.exploration_policy,
                                                                       p.options, distributed);
           }},
      });
  return table;
}

}  // namespace

const std::vector<std::string>& collector_mode_names() { return mode_table().names(); }

std::unique_ptr<collectors::CollectorBase> make_collector(const CollectorSection& c,
                                                          const EnvParts& env, Recipe& recipe,
                                                          const RunDir& run, torch::Device device) {
  CollectorParts parts{c,
                       env,
                       recipe,
                       run,
                       device,
                       collectors::CollectorOptions()
                           .frames_per_batch(c.frames_per_batch)
                           .total_frames(c.total_frames)
                           .init_random_frames(c.init_random_frames)
                           .max_frames_per_traj(c.max_frames_per_traj)
                           .policy_factory(recipe.policy_factory)};
  return mode_table().at(c.mode, "collector.mode")(parts);
}

}  // namespace tdrl::apps::detail
