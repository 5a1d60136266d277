#pragma once

// Offscreen rendering of MuJoCo simulations (MujocoEnv::render): MuJoCo's own renderer over an
// OpenGL context made without a display, through EGL (a GPU driver's, or Mesa's) or OSMesa
// (Mesa's software rasteriser). The libraries are loaded at run time (dlopen), so a machine
// without them builds and runs everything but MuJoCo frames.

#include <cstdint>
#include <memory>
#include <string>

struct mjModel_;
struct mjData_;

namespace tdrl::envs::detail {

// One camera's renderer of one model at one frame size: its GL context, MuJoCo's scene and
// rendering context. Used by one thread at a time (the context is made current on the calling
// thread for each frame).
class MujocoRenderer {
 public:
  // `backend`: "auto" (EGL on a GPU device when a driver offers one, else OSMesa), "egl" or
  // "osmesa"; MuJoCo resolves its GL functions once per process, so the first renderer fixes
  // the backend for the process. `camera`: as MujocoEnvOptions::camera.
  // Keeps its own copy of the model, whose offscreen buffer size it raises to the frame size
  // (the simulations' model stays as it was). The choices and the size are the ones MujocoEnv
  // checked at construction. Throws tensordict::ValueError when the process already renders
  // with the other backend, Error when no GL context can be made (naming the libraries tried
  // and what to install).
  MujocoRenderer(const mjModel_* model, int64_t width, int64_t height, const std::string& backend,
                 const std::string& camera);
  ~MujocoRenderer();
  MujocoRenderer(const MujocoRenderer&) = delete;
  MujocoRenderer& operator=(const MujocoRenderer&) = delete;

  // Draws `data`'s current state into `rgb` (height x width x 3 bytes, top row first).
  void render(mjData_* data, uint8_t* rgb);
  // The backend in use: "egl" or "osmesa".
  const std::string& backend() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tdrl::envs::detail
