// A plugin stamped as built against another tdrl and LibTorch (what TDRL_PLUGIN writes, by hand):
// the tools must refuse it before running any of it, so its registration aborts if it ever runs.

#include <cstdlib>

extern "C" __attribute__((visibility("default"))) const char* tdrl_plugin_abi() {
  return "tdrl 0.0.1, LibTorch 9.9, libstdc++ (_GLIBCXX_USE_CXX11_ABI=0)";
}

extern "C" __attribute__((visibility("default"))) void tdrl_register_plugin() { std::abort(); }
