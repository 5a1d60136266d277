# What differs between the LibTorch generations tdrl builds against (Debian 12's 1.13.1, PyPI's
# newest), at build level; the source-level differences are in
# tensordict/include/tensordict/torch_compat.h, which lists these too. Each entry says which
# versions need it and when it can go. Included after find_package(Torch) and (spdlog).

# A LibTorch found at TORCH_INSTALL_PREFIX with its libraries from elsewhere: TorchConfig.cmake
# searches the system's library folders before its own, so with Debian's libtorch-dev installed,
# a PyPI LibTorch configured through torch.utils.cmake_prefix_path (its share/cmake folder) gets
# Debian's libraries under its own headers. Any version; stays.
if(TORCH_INSTALL_PREFIX AND TORCH_LIBRARY)
  get_filename_component(_tdrl_torch_lib "${TORCH_LIBRARY}" REALPATH)
  get_filename_component(_tdrl_torch_prefix "${TORCH_INSTALL_PREFIX}" REALPATH)
  string(FIND "${_tdrl_torch_lib}" "${_tdrl_torch_prefix}/" _tdrl_at)
  if(NOT _tdrl_at EQUAL 0)
    message(FATAL_ERROR "tdrl: LibTorch ${Torch_VERSION} is at ${TORCH_INSTALL_PREFIX}, but its "
      "library was found at ${TORCH_LIBRARY}, another LibTorch's. Configure a new build folder "
      "with -DCMAKE_PREFIX_PATH=${_tdrl_torch_prefix} (the folder holding lib/ and share/cmake/).")
  endif()
endif()

# The C++ standard: C++20, which LibTorch 2.13 and later require, except for clang with LibTorch
# 1.x, which compiles as C++17: LibTorch 1.x's ATen/core/List.h destroys a std::vector of the
# still incomplete c10::IValue in an inline constructor, and clang (14 and 16 alike) instantiates
# C++20's constexpr vector destructor there. tdrl's code is C++17 and C++20 alike until the
# Debian lane's LibTorch is 2.x (Debian 13 ships 2.6); then this goes. The packages export the
# standard to their users (target_compile_features in tensordict/ and TdrlPackage.cmake).
if(NOT DEFINED TDRL_CXX_STANDARD)
  set(TDRL_CXX_STANDARD 20)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang" AND Torch_VERSION VERSION_LESS 2.0)
    set(TDRL_CXX_STANDARD 17)
  endif()
endif()
set(CMAKE_CXX_STANDARD ${TDRL_CXX_STANDARD})
message(STATUS "tdrl: C++${TDRL_CXX_STANDARD}, LibTorch ${Torch_VERSION} at ${TORCH_INSTALL_PREFIX}")

# A LibTorch from PyPI's wheel (a CUDA build) finds its CUDA libraries in the nvidia-* wheels
# beside it through $ORIGIN in its RPATH, which the linker does not expand when it checks a
# program's indirect dependencies: it would take the system's CUDA libraries (an older NCCL:
# "undefined reference to ncclCommGrow"). Any wheel version; stays.
# The option reaches the package's users too (tensordict's INTERFACE_LINK_OPTIONS).
set(TDRL_TORCH_LINK_OPTIONS "")
file(GLOB _tdrl_wheel_cuda_libs LIST_DIRECTORIES true "${TORCH_INSTALL_PREFIX}/../nvidia/*/lib")
if(_tdrl_wheel_cuda_libs)
  list(JOIN _tdrl_wheel_cuda_libs ":" _tdrl_rpath_link)
  set(TDRL_TORCH_LINK_OPTIONS "LINKER:-rpath-link,${_tdrl_rpath_link}")
  add_link_options(${TDRL_TORCH_LINK_OPTIONS})
endif()

# PyPI's torch 2.11 wheel exports libstdc++'s std::filesystem functions from libtorch.so (64 of
# them; 2.15's exports none), and a program that lists libtorch.so before libstdc++.so.6 binds its
# calls to those copies: std::filesystem::remove_all(path, error_code&) jumped to address 0 in
# every test that removes a folder (found on the GPU check's machine, 2026-11-28). Programs link
# libstdc++ first, so that the C++ runtime's symbols win. Any libstdc++ build; goes when no
# supported wheel exports them. Reaches the package's users through the same option list.
include(CheckCXXSymbolExists)
check_cxx_symbol_exists(__GLIBCXX__ "cstddef" TDRL_LIBSTDCXX)
if(TDRL_LIBSTDCXX)
  list(APPEND TDRL_TORCH_LINK_OPTIONS "LINKER:--push-state,--no-as-needed,-lstdc++,--pop-state")
  add_link_options("LINKER:--push-state,--no-as-needed,-lstdc++,--pop-state")
endif()

# The LibTorch a user's project of the installed packages finds: the one tdrl was built with.
# tensordictConfig.cmake puts TDRL_TORCH_ROOT first on CMAKE_PREFIX_PATH while it finds Torch
# (for the reason of the first entry); empty for a LibTorch in the system's folders. Stays.
set(TDRL_TORCH_ROOT "")
if(EXISTS "${TORCH_INSTALL_PREFIX}/share/cmake/Torch")
  get_filename_component(TDRL_TORCH_ROOT "${TORCH_INSTALL_PREFIX}" REALPATH)
endif()

# PyPI's LibTorch 2.x ships fmt 12 in its include folder, which comes before the system's on the
# compiler's search path, while Debian's spdlog is built against the system's fmt 9. LibTorch's
# own headers include no fmt, so the sources that log see the system's fmt first through a folder
# holding only a link to it. Goes when spdlog and LibTorch agree on fmt (spdlog >= 1.15).
if(EXISTS "${TORCH_INSTALL_PREFIX}/include/fmt" AND TARGET fmt::fmt)
  get_target_property(_tdrl_fmt_include fmt::fmt INTERFACE_INCLUDE_DIRECTORIES)
  list(GET _tdrl_fmt_include 0 _tdrl_fmt_include)
  set(_tdrl_fmt_shim "${CMAKE_BINARY_DIR}/tdrl_system_fmt")
  file(MAKE_DIRECTORY "${_tdrl_fmt_shim}")
  file(CREATE_LINK "${_tdrl_fmt_include}/fmt" "${_tdrl_fmt_shim}/fmt" SYMBOLIC)
  include_directories(BEFORE SYSTEM "${_tdrl_fmt_shim}")
endif()

# GCC 12 in C++20 reports std::string's operator+ ("w" + std::to_string(i)) at -O3 as a
# __builtin_memcpy past the maximum object size, offset or overlap (-Wstringop-overflow,
# -Warray-bounds, -Wrestrict; GCC bugs 105329 and 105651, false positives from C++20's constexpr
# std::string; ten places in this tree, none real). Off for that compiler and standard only (clang, the scripts' compiler,
# keeps its own -Warray-bounds, and the sanitizer builds check at run time); goes with GCC 12.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 12.3
    AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 12 AND TDRL_CXX_STANDARD GREATER_EQUAL 20)
  add_compile_options(-Wno-stringop-overflow -Wno-array-bounds -Wno-restrict)
endif()

# PyPI's LibTorch ships c10d's ProcessGroupGloo.hpp without the Gloo headers it includes
# (<gloo/algorithm.h>); the sources that use it (the distributed collector, its tests) take them
# from the system's libgloo-dev (Debian's LibTorch has them beside its own). Stays while the
# wheels leave them out.
if(NOT EXISTS "${TORCH_INSTALL_PREFIX}/include/gloo" AND
   EXISTS "${TORCH_INSTALL_PREFIX}/include/torch/csrc/distributed/c10d/ProcessGroupGloo.hpp")
  find_path(TDRL_GLOO_INCLUDE_DIR gloo/algorithm.h REQUIRED)
  set_property(TARGET torch APPEND PROPERTY INTERFACE_INCLUDE_DIRECTORIES "${TDRL_GLOO_INCLUDE_DIR}")
endif()
