// A plugin whose registration fails: it registers a name that is taken (CartPole-v1 is
// built in). tdrl-train must refuse it as a config error naming the plugin and the name.

#include <tdrl/apps/main.h>
#include <tdrl/envs/registry.h>

TDRL_PLUGIN {
  tdrl::envs::register_env("CartPole-v1", [](const tdrl::envs::EnvOptions&) {
    return std::shared_ptr<tdrl::envs::EnvBase>();
  });
}
