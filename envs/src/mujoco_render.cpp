// Offscreen MuJoCo frames (see detail/mujoco_render.h): a GL context from EGL or OSMesa, loaded
// with dlopen, and MuJoCo's renderer drawing into its offscreen framebuffer.

#include "detail/mujoco_render.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include <mujoco/mujoco.h>

#include <c10/util/Exception.h>

#include <tensordict/errors.h>

// The GL libraries' headers give their types and constants; their functions are looked up at
// run time. A machine without the headers builds without that backend.
#if __has_include(<EGL/egl.h>) && __has_include(<EGL/eglext.h>)
// No X11: its macros (None, Status, ...) are not wanted, and there is no display.
#define EGL_NO_X11
#define MESA_EGL_NO_X11_HEADERS
#include <EGL/egl.h>
#include <EGL/eglext.h>
#define TDRL_HAVE_EGL 1
#endif
#if __has_include(<GL/osmesa.h>)
#include <GL/osmesa.h>
#define TDRL_HAVE_OSMESA 1
#endif

namespace tdrl::envs::detail {

namespace {

using tensordict::Error;
using tensordict::ValueError;

// A GL context made current on the calling thread before each use.
struct GlContext {
  virtual ~GlContext() = default;
  virtual void make_current() = 0;
};

template <class Fn>
Fn symbol(void* lib, const char* name) {
  return reinterpret_cast<Fn>(dlsym(lib, name));
}

#ifdef TDRL_HAVE_OSMESA
struct OsmesaApi {
  decltype(&OSMesaCreateContextExt) create = nullptr;
  decltype(&OSMesaMakeCurrent) make_current = nullptr;
  decltype(&OSMesaDestroyContext) destroy = nullptr;
};

// Mesa's software rasteriser (libosmesa6), loaded into the global namespace, where MuJoCo's
// GL loader finds OSMesaGetProcAddress. Null (with `why`) when it cannot be loaded.
const OsmesaApi* osmesa_api(std::string* why) {
  static OsmesaApi api;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    void* lib = nullptr;
    for (const char* name : {"libOSMesa.so.8", "libOSMesa.so"})
      if ((lib = dlopen(name, RTLD_NOW | RTLD_GLOBAL))) break;
    if (!lib) {
      error =
          "libOSMesa.so.8 could not be loaded (" + std::string(dlerror()) + "); install libosmesa6";
      return;
    }
    api.create = symbol<decltype(api.create)>(lib, "OSMesaCreateContextExt");
    api.make_current = symbol<decltype(api.make_current)>(lib, "OSMesaMakeCurrent");
    api.destroy = symbol<decltype(api.destroy)>(lib, "OSMesaDestroyContext");
    if (!api.create || !api.make_current || !api.destroy) error = "libOSMesa lacks OSMesa's API";
  });
  if (!error.empty()) {
    if (why) *why = error;
    return nullptr;
  }
  return &api;
}

class OsmesaContext : public GlContext {
 public:
  OsmesaContext(int width, int height)
      : api_(*osmesa_api(nullptr)),
        width_(width),
        height_(height),
        buffer_(static_cast<size_t>(width) * height * 4) {
    ctx_ = api_.create(OSMESA_RGBA, 24, 8, 0, nullptr);
    TDRL_CHECK(ctx_, Error, "MuJoCo rendering: OSMesaCreateContextExt failed");
    make_current();
  }
  ~OsmesaContext() override { api_.destroy(ctx_); }
  void make_current() override {
    TDRL_CHECK(api_.make_current(ctx_, buffer_.data(), GL_UNSIGNED_BYTE, width_, height_), Error,
               "MuJoCo rendering: OSMesaMakeCurrent failed");
  }

 private:
  const OsmesaApi& api_;
  OSMesaContext ctx_ = nullptr;
  int width_, height_;
  std::vector<unsigned char> buffer_;  // OSMesa's window; MuJoCo draws into its own FBO
};
#endif

#ifdef TDRL_HAVE_EGL
struct EglApi {
  void* lib = nullptr;
  PFNEGLQUERYDEVICESEXTPROC query_devices = nullptr;
  PFNEGLQUERYDEVICESTRINGEXTPROC query_device_string = nullptr;
  PFNEGLGETPLATFORMDISPLAYEXTPROC platform_display = nullptr;
  decltype(&eglInitialize) initialize = nullptr;
  decltype(&eglChooseConfig) choose_config = nullptr;
  decltype(&eglBindAPI) bind_api = nullptr;
  decltype(&eglCreateContext) create_context = nullptr;
  decltype(&eglMakeCurrent) make_current = nullptr;
  decltype(&eglDestroyContext) destroy_context = nullptr;
  decltype(&eglGetError) get_error = nullptr;
  // The best device: a GPU's when a driver offers one (`hardware`), else Mesa's software one.
  EGLDeviceEXT device = nullptr;
  bool hardware = false;
  // Its display, initialised once EGL is chosen (never terminated: one per process).
  EGLDisplay display = EGL_NO_DISPLAY;
  std::string device_name;
};

// EGL (GLVND's libEGL.so.1) and the best device it offers: a GPU's when a driver has one,
// else Mesa's software device. Loaded locally: it joins the global namespace (where MuJoCo's
// loader looks) only when chosen (egl_initialize). Null (with `why`) when there is no device.
EglApi* egl_api(std::string* why) {
  static EglApi api;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    api.lib = dlopen("libEGL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!api.lib) {
      error = "libEGL.so.1 could not be loaded (" + std::string(dlerror()) +
              "); install libegl1 and a driver (libegl-mesa0, or the GPU's)";
      return;
    }
    auto get_proc = symbol<decltype(&eglGetProcAddress)>(api.lib, "eglGetProcAddress");
    api.initialize = symbol<decltype(api.initialize)>(api.lib, "eglInitialize");
    api.choose_config = symbol<decltype(api.choose_config)>(api.lib, "eglChooseConfig");
    api.bind_api = symbol<decltype(api.bind_api)>(api.lib, "eglBindAPI");
    api.create_context = symbol<decltype(api.create_context)>(api.lib, "eglCreateContext");
    api.make_current = symbol<decltype(api.make_current)>(api.lib, "eglMakeCurrent");
    api.destroy_context = symbol<decltype(api.destroy_context)>(api.lib, "eglDestroyContext");
    api.get_error = symbol<decltype(api.get_error)>(api.lib, "eglGetError");
    if (get_proc) {
      api.query_devices =
          reinterpret_cast<PFNEGLQUERYDEVICESEXTPROC>(get_proc("eglQueryDevicesEXT"));
      api.query_device_string =
          reinterpret_cast<PFNEGLQUERYDEVICESTRINGEXTPROC>(get_proc("eglQueryDeviceStringEXT"));
      api.platform_display =
          reinterpret_cast<PFNEGLGETPLATFORMDISPLAYEXTPROC>(get_proc("eglGetPlatformDisplayEXT"));
    }
    if (!api.query_devices || !api.query_device_string || !api.platform_display ||
        !api.initialize || !api.choose_config || !api.bind_api || !api.create_context ||
        !api.make_current || !api.destroy_context || !api.get_error) {
      error =
          "libEGL lacks the device extensions (EGL_EXT_device_enumeration, "
          "EGL_EXT_platform_device)";
      return;
    }
    EGLDeviceEXT devices[16];
    EGLint count = 0;
    if (!api.query_devices(16, devices, &count) || count == 0) {
      error = "EGL offers no device";
      return;
    }
    // A GPU's device first; Mesa's software device otherwise.
    for (EGLint i = 0; i < count && !api.hardware; ++i) {
      const char* ext = api.query_device_string(devices[i], EGL_EXTENSIONS);
      const std::string extensions = ext ? ext : "";
      const bool software = extensions.find("EGL_MESA_device_software") != std::string::npos;
      if (!api.device || !software) {
        api.device = devices[i];
        api.hardware = !software;
        api.device_name = software ? "Mesa's software device" : "device " + std::to_string(i);
      }
    }
  });
  if (!error.empty()) {
    if (why) *why = error;
    return nullptr;
  }
  return &api;
}

// Initialises the chosen device's display (once) and puts EGL where MuJoCo's GL loader looks
// for eglGetProcAddress. False (with `why`) when the display cannot be initialised.
bool egl_initialize(std::string* why) {
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    EglApi& api = *egl_api(nullptr);
    api.display = api.platform_display(EGL_PLATFORM_DEVICE_EXT, api.device, nullptr);
    EGLint major = 0, minor = 0;
    if (api.display == EGL_NO_DISPLAY || !api.initialize(api.display, &major, &minor)) {
      error = "eglInitialize failed on " + api.device_name;
      return;
    }
    dlopen("libEGL.so.1", RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
  });
  if (why) *why = error;
  return error.empty();
}

class EglContext : public GlContext {
 public:
  EglContext() : api_(*egl_api(nullptr)) {
    // clang-format off
    const EGLint attributes[] = {
        EGL_SURFACE_TYPE, EGL_PBUFFER_BIT, EGL_RENDERABLE_TYPE, EGL_OPENGL_BIT,
        EGL_RED_SIZE, 8, EGL_GREEN_SIZE, 8, EGL_BLUE_SIZE, 8, EGL_ALPHA_SIZE, 8,
        EGL_DEPTH_SIZE, 24, EGL_STENCIL_SIZE, 8, EGL_NONE};
    // clang-format on
    EGLConfig config = nullptr;
    EGLint configs = 0;
    TDRL_CHECK(api_.choose_config(api_.display, attributes, &config, 1, &configs) && configs > 0,
               Error, "MuJoCo rendering: eglChooseConfig found no RGBA8/depth24 config on ",
               api_.device_name);
    TDRL_CHECK(api_.bind_api(EGL_OPENGL_API), Error,
               "MuJoCo rendering: eglBindAPI(EGL_OPENGL_API) failed");
    ctx_ = api_.create_context(api_.display, config, EGL_NO_CONTEXT, nullptr);
    TDRL_CHECK(ctx_ != EGL_NO_CONTEXT, Error, "MuJoCo rendering: eglCreateContext failed (error ",
               api_.get_error(), ") on ", api_.device_name);
    make_current();
  }
  ~EglContext() override {
    api_.make_current(api_.display, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
    api_.destroy_context(api_.display, ctx_);
  }
  void make_current() override {
    TDRL_CHECK(api_.make_current(api_.display, EGL_NO_SURFACE, EGL_NO_SURFACE, ctx_), Error,
               "MuJoCo rendering: eglMakeCurrent failed (error ", api_.get_error(), ")");
  }

 private:
  EglApi& api_;
  EGLContext ctx_ = EGL_NO_CONTEXT;
};
#endif

// The process's backend: chosen by the first renderer, kept for the process.
std::string choose_backend(const std::string& asked) {
  static std::mutex mutex;
  static std::string chosen;
  std::lock_guard<std::mutex> lock(mutex);
  if (!chosen.empty()) {
    TDRL_CHECK(asked == "auto" || asked == chosen, ValueError, "MuJoCo rendering: render_backend '",
               asked, "' was asked, but this process already renders with '", chosen,
               "' (MuJoCo loads its GL functions once per process); use one backend per "
               "process, or 'auto'");
    return chosen;
  }
  std::string egl_why = "this build has no EGL headers (libegl-dev)";
  std::string osmesa_why = "this build has no OSMesa header (libosmesa6-dev)";
  bool egl = false, egl_hardware = false, osmesa = false;
#ifdef TDRL_HAVE_EGL
  if (asked != "osmesa") {
    if (const EglApi* api = egl_api(&egl_why)) {
      egl = true;
      egl_hardware = api->hardware;
    }
  }
#endif
#ifdef TDRL_HAVE_OSMESA
  if (asked != "egl" && !(asked == "auto" && egl_hardware)) osmesa = osmesa_api(&osmesa_why);
#endif
  if (asked == "egl" || (asked == "auto" && (egl_hardware || (!osmesa && egl)))) {
#ifdef TDRL_HAVE_EGL
    egl = egl && egl_initialize(&egl_why);
#endif
    TDRL_CHECK(egl, Error, "MuJoCo rendering: no EGL context can be made: ", egl_why);
    chosen = "egl";
  } else {
    TDRL_CHECK(osmesa, Error, "MuJoCo rendering: no GL context can be made without a display: ",
               "OSMesa: ", osmesa_why, "; EGL: ", egl_why,
               " (scripts/setup.sh installs libosmesa6-dev and libegl-dev)");
    chosen = "osmesa";
  }
  return chosen;
}

std::unique_ptr<GlContext> make_context(const std::string& backend, int width, int height) {
#ifdef TDRL_HAVE_EGL
  if (backend == "egl") return std::make_unique<EglContext>();
#endif
#ifdef TDRL_HAVE_OSMESA
  if (backend == "osmesa") return std::make_unique<OsmesaContext>(width, height);
#endif
  throw Error("MuJoCo rendering: no " + backend + " backend in this build");
}

}  // namespace

struct MujocoRenderer::Impl {
  mjModel* model = nullptr;
  int width = 0;
  int height = 0;
  std::string backend;
  std::unique_ptr<GlContext> gl;
  mjvScene scene;
  mjvCamera camera;
  mjvOption option;
  mjrContext context;
  std::vector<unsigned char> rows;  // the frame as GL reads it, bottom row first
  int track_body = -1;              // the body the camera looks at ("track"), or -1
};

MujocoRenderer::MujocoRenderer(const mjModel_* simulated, int64_t width, int64_t height,
                               const std::string& backend, const std::string& camera)
    : impl_(std::make_unique<Impl>()) {
  // MujocoEnv's constructor checked the backend, the camera and the size.
  auto& d = *impl_;
  d.width = static_cast<int>(width);
  d.height = static_cast<int>(height);
  mjv_defaultCamera(&d.camera);
  mjv_defaultFreeCamera(simulated, &d.camera);
  if (camera == "track") {
    // MuJoCo's own tracking camera smooths its motion over frames, so the same state would not
    // always give the same picture: a free camera moved onto body 1 at each frame instead, at
    // Gymnasium's distances (4 m for HalfCheetah, Ant, Walker2d; 3 m for Hopper).
    d.track_body = simulated->nbody > 1 ? 1 : 0;
    const double extent = simulated->stat.extent;
    d.camera.distance = extent >= 6 ? 0.5 * extent : 0.75 * extent;
    d.camera.elevation = -20;
  } else if (camera != "free") {
    const int id = mj_name2id(simulated, mjOBJ_CAMERA, camera.c_str());
    TORCH_INTERNAL_ASSERT(id >= 0, "MujocoRenderer: camera '", camera, "' was not checked");
    d.camera.type = mjCAMERA_FIXED;
    d.camera.fixedcamid = id;
  }
  d.backend = choose_backend(backend);
  d.gl = make_context(d.backend, d.width, d.height);
  // MuJoCo's offscreen buffer is sized from the model's visual settings, in the copy.
  d.model = mj_copyModel(nullptr, simulated);
  TDRL_CHECK(d.model, Error, "MuJoCo rendering: could not copy the model");
  mjModel* model = d.model;
  model->vis.global.offwidth = std::max(model->vis.global.offwidth, d.width);
  model->vis.global.offheight = std::max(model->vis.global.offheight, d.height);
  mjv_defaultOption(&d.option);
  mjv_defaultScene(&d.scene);
  mjv_makeScene(model, &d.scene, 2000);
  mjr_defaultContext(&d.context);
  mjr_makeContext(model, &d.context, mjFONTSCALE_50);
  mjr_setBuffer(mjFB_OFFSCREEN, &d.context);
  if (d.context.currentBuffer != mjFB_OFFSCREEN) {
    mjr_freeContext(&d.context);
    mjv_freeScene(&d.scene);
    mj_deleteModel(d.model);
    throw Error("MuJoCo rendering: the " + d.backend +
                " context has no offscreen framebuffer (framebuffer objects)");
  }
  d.rows.resize(static_cast<size_t>(d.width) * d.height * 3);
}

MujocoRenderer::~MujocoRenderer() {
  auto& d = *impl_;
  try {
    d.gl->make_current();
  } catch (...) {
    // Freed without a current context: MuJoCo then only releases its host memory.
  }
  mjr_freeContext(&d.context);
  mjv_freeScene(&d.scene);
  mj_deleteModel(d.model);
}

void MujocoRenderer::render(mjData_* data, uint8_t* rgb) {
  auto& d = *impl_;
  d.gl->make_current();
  if (d.track_body >= 0) {
    for (int k = 0; k < 3; ++k) d.camera.lookat[k] = data->xpos[3 * d.track_body + k];
  }
  mjv_updateScene(d.model, data, &d.option, nullptr, &d.camera, mjCAT_ALL, &d.scene);
  mjr_setBuffer(mjFB_OFFSCREEN, &d.context);
  const mjrRect viewport{0, 0, d.width, d.height};
  mjr_render(viewport, &d.scene, &d.context);
  mjr_readPixels(d.rows.data(), nullptr, viewport, &d.context);
  const size_t row = static_cast<size_t>(d.width) * 3;
  for (int y = 0; y < d.height; ++y)
    std::memcpy(rgb + y * row, d.rows.data() + (d.height - 1 - y) * row, row);
}

const std::string& MujocoRenderer::backend() const { return impl_->backend; }

}  // namespace tdrl::envs::detail
