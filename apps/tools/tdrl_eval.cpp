// tdrl-eval: evaluates a run's last checkpoint with the deterministic policy.
//
//   tdrl-eval --run runs/ppo_cartpole-20261123-101500 [--episodes 10] [--plugin lib.so]

#include <tdrl/apps/main.h>

int main(int argc, char** argv) { return tdrl::apps::eval_main(argc, argv); }
