// drift_train: tdrl-train's command line with the drift components registered, and tdrl-eval's
// as `drift_train eval --run DIR`.

#include <string>

#include <tdrl/apps/main.h>

#include "drift_components.h"

int main(int argc, char** argv) {
  drift::register_drift_components();
  if (argc > 1 && std::string(argv[1]) == "eval") return tdrl::apps::eval_main(argc - 1, argv + 1);
  return tdrl::apps::train_main(argc, argv);
}
