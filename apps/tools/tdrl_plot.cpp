// tdrl-plot: the evaluation returns of several runs (seeds) in one picture.

#include <tdrl/apps/main.h>

int main(int argc, char** argv) { return tdrl::apps::plot_main(argc, argv); }
