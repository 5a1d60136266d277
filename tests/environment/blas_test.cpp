// Guards the build machine, not the code: LibTorch on Debian runs its matrix products on
// whatever libblas.so.3 resolves to, and the reference BLAS is 7-15x slower than OpenBLAS.
// PyPI's LibTorch carries MKL inside libtorch_cpu.so and loads no BLAS library.

#include <fstream>
#include <string>

#include <ATen/Context.h>
#include <gtest/gtest.h>
#include <torch/types.h>

namespace {

// The CPU BLAS library mapped into this process, read from /proc/self/maps.
std::string loaded_blas() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash);
    // cuBLAS (a CUDA build's) runs GPU products only.
    if (path.find("blas") != std::string::npos && path.find("cublas") == std::string::npos)
      return path;
  }
  return "";
}

}  // namespace

TEST(EnvironmentTest, MatmulRunsOnOpenBlasOrMklNotTheReferenceBlas) {
  auto a = torch::randn({64, 64});
  auto b = torch::mm(a, a);  // makes sure the BLAS library is loaded
  ASSERT_EQ(b.sizes(), (std::vector<int64_t>{64, 64}));
  const std::string blas = loaded_blas();
  if (blas.empty()) {
    EXPECT_TRUE(at::hasMKL()) << "No BLAS library is loaded and this LibTorch has no MKL: "
                              << "what runs its matrix products?";
    return;
  }
  EXPECT_NE(blas.find("openblas"), std::string::npos)
      << "LibTorch's BLAS is '" << blas << "', not OpenBLAS: matrix products run 7-15x slower. "
      << "Install libopenblas0-pthread (scripts/setup.sh does) and select it with "
      << "update-alternatives --config libblas.so.3-x86_64-linux-gnu";
}
