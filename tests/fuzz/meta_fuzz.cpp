// libFuzzer target: meta.json parsing (tensordict::detail::parse_meta) on arbitrary text.
// A tensordict::Error is the expected answer to bad input; any other exception, a crash or a
// sanitizer report is a finding.
//
// Build (a separate configure, the library is instrumented too) and run; libFuzzer writes new
// inputs into the first folder, so keep the checked-in seeds second:
//   cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DTDRL_FUZZ=ON
//   ninja -C build-fuzz meta_fuzz
//   mkdir -p /tmp/meta_corpus
//   build-fuzz/tests/meta_fuzz /tmp/meta_corpus tests/fuzz/corpus -dict=tests/fuzz/meta.dict
//       -max_len=1048576 -max_total_time=300   (one command)

#include <cstddef>
#include <cstdint>
#include <string>

#include <tensordict/errors.h>

#include "detail/meta.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    tensordict::detail::FolderMeta meta = tensordict::detail::parse_meta(text, "fuzz/meta.json");
    // What was accepted must describe itself again.
    tensordict::detail::parse_meta(tensordict::detail::dump_meta(meta), "fuzz/meta.json");
  } catch (const tensordict::Error&) {
  }
  return 0;
}
