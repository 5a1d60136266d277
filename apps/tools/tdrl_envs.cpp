// tdrl-envs: lists the registered envs, one row each, or one env's full specs with --env.

#include <tdrl/apps/main.h>

int main(int argc, char** argv) { return tdrl::apps::envs_main(argc, argv); }
