// tdrl-train: trains the algorithm a YAML config names (see docs/config.md and docs/apps.md).
//
//   tdrl-train --config configs/ppo_cartpole.yaml [--set optim.lr=1e-3 ...] [--plugin lib.so]
//   tdrl-train --resume runs/ppo_cartpole-20261123-101500
//
// Started with the TDRL_COLLECTOR_* variables (by a distributed run's trainer, or by hand on
// another host), it is a collector worker instead.

#include <tdrl/apps/main.h>

int main(int argc, char** argv) { return tdrl::apps::train_main(argc, argv); }
