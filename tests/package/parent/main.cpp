#include <tdrl/apps/main.h>

int main(int argc, char** argv) { return tdrl::apps::train_main(argc, argv); }
