#pragma once

/// The command lines of tdrl-train and tdrl-eval, as library functions: the stock executables
/// are `return train_main(argc, argv);`, and a user's own main registers its components first
/// and gets the same command line (--config, --set, --resume, --plugin, ...).
///
/// Example (a user's trainer, linking tdrl::apps):
/// ```
/// int main(int argc, char** argv) {
///   tdrl::envs::register_env("Drift-v0", make_drift_env);
///   tdrl::apps::register_algorithm<AWRConfig, AWRRecipe>("awr", "advantage-weighted regression");
///   return tdrl::apps::train_main(argc, argv);
/// }
/// ```
///
/// A plugin is a shared library that defines `TDRL_PLUGIN { register_...(...); }`; `--plugin
/// lib.so` (repeatable) loads it before the config is read, and the run's config.yaml records
/// it in `plugins:` so that --resume, tdrl-eval and distributed workers load it again.

#include <string>

#include <torch/version.h>

#include <tdrl/apps/version.h>

namespace tdrl::apps {

/// tdrl-train. Returns the process exit code: 0 finished, 130 stopped by SIGINT/SIGTERM (resume
/// with --resume), 1 a run error, 2 a usage or config error (nothing written then: a config
/// that cannot start a run leaves no run folder). Registers the built-in components first.
int train_main(int argc, char** argv);

/// tdrl-eval: evaluates a run's last checkpoint with the deterministic actor. Builds only the
/// acting part of the recipe. Returns 0, 1 on a run error, 2 on a usage error.
int eval_main(int argc, char** argv);

/// tdrl-envs: lists the registered envs (built-in, the caller's own and those of the plugins
/// given with `--plugin`), one row each with their observations, action and episode limit, or
/// one env's full specs with `--env NAME`. Returns 0, 1 when an env fails to build (or NAME is
/// unknown: the closest names are printed), 2 on a usage error or a plugin that cannot load.
int envs_main(int argc, char** argv);

/// tdrl-plot: `tdrl-plot RUN... --out FILE.svg|.png [--title T] [--target R]` draws the
/// evaluation returns of several runs (one config's seeds) in one picture: each run as a thin
/// grey line, their median with the interquartile band at the evaluations every run has, and
/// the target as a dashed line; a RUN may also be a folder holding run folders (the newest is
/// taken). scripts/learning_suite.sh draws its plots with it. Returns 0, 1 when a run has no
/// evaluation (naming it) or the build has no cairo, 2 on a usage error.
int plot_main(int argc, char** argv);

/// Loads the shared library `path` and calls its `tdrl_register_plugin` (once per path; the
/// path is made absolute). Throws ConfigError naming the path and dlerror's reason.
void load_plugin(const std::string& path);

}  // namespace tdrl::apps

// A plugin and the program loading it exchange std::string, std::function and tdrl's classes:
// they must agree on tdrl's version, LibTorch's, the standard library and its string ABI. The
// stamp is made of the macros of the translation unit that expands it: TDRL_PLUGIN stamps the
// plugin with its own build's, load_plugin compares them with the program's and refuses a
// plugin whose stamp differs, naming both.
#define TDRL_PLUGIN_STRINGIZE_(x) #x
#define TDRL_PLUGIN_STRINGIZE(x) TDRL_PLUGIN_STRINGIZE_(x)
#if defined(_LIBCPP_VERSION)
#define TDRL_PLUGIN_STDLIB "libc++"
#elif defined(_GLIBCXX_USE_CXX11_ABI)
#define TDRL_PLUGIN_STDLIB \
  "libstdc++ (_GLIBCXX_USE_CXX11_ABI=" TDRL_PLUGIN_STRINGIZE(_GLIBCXX_USE_CXX11_ABI) ")"
#else
#define TDRL_PLUGIN_STDLIB "an unknown standard library"
#endif
#define TDRL_PLUGIN_ABI_STAMP                                      \
  "tdrl " TDRL_VERSION_STRING ", LibTorch " TDRL_PLUGIN_STRINGIZE( \
      TORCH_VERSION_MAJOR) "." TDRL_PLUGIN_STRINGIZE(TORCH_VERSION_MINOR) ", " TDRL_PLUGIN_STDLIB

/// Defines a plugin's registration function: `TDRL_PLUGIN { tdrl::apps::register_...; }`. It
/// also stamps the plugin with what it was built against (TDRL_PLUGIN_ABI_STAMP), which
/// load_plugin checks before registering anything.
#define TDRL_PLUGIN                                                                 \
  extern "C" __attribute__((visibility("default"))) const char* tdrl_plugin_abi() { \
    return TDRL_PLUGIN_ABI_STAMP;                                                   \
  }                                                                                 \
  extern "C" __attribute__((visibility("default"))) void tdrl_register_plugin()
