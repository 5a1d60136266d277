// Google Benchmark of rendering: frames per second of the envs that draw, against the same
// picture made by hand in the same binary, on one core.
//
// - CartPole/<W>x<H>/Ours: CartPoleEnv::render() of one sub-env (the task's Drawing painted by
//   cairo through drawing::to_rgb, the frame's shape checked by EnvBase::render).
//   /Raw: the same shapes painted with direct cairo calls into an RGB24 image surface, copied
//   into a uint8 [H, W, 3] tensor (what a hand-written renderer on cairo does).
// - HalfCheetah/<W>x<H>/Ours: HalfCheetahEnv::render() (MuJoCo's renderer on OSMesa, the track
//   camera). /Raw: MuJoCo's renderer driven by hand on an OSMesa context of its own with the
//   same camera: mjv_updateScene, mjr_render, mjr_readPixels, the rows flipped into a tensor.
//
// - Pixels/Transforms/Ours: one step of the pixel pipeline's transforms on a batch of 8 sub-envs'
//   64x64 frames (ToTensorImage keeping uint8, GrayScale, CatFrames(4): TransformedEnv's
//   Compose::step on the step's "next"). /Raw: the same permute, weighted sum, truncation and
//   concatenation written with LibTorch calls.
// - Pixels/FrameStack/Ours: replay::FrameStack stacking 4 frames for a sample of 32 steps from
//   a storage of 8 interleaved envs' single 64x64 grey frames (episodes of 50 steps). /Raw: the
//   same walk back (stored and same-episode checks) and gathers by hand.
// - Pixels/RandomShift/Ours: envs::RandomShift(pad 4) of a minibatch of 32 4-stacked 64x64
//   grey frames, "pixels" and ("next", "pixels"). /Raw: the same draws and gathers by hand.
//
// One core: torch::set_num_threads(1) and Mesa's llvmpipe rendering on the calling thread
// (LP_NUM_THREADS=0, set before the first GL context).

#include <GL/osmesa.h>
#include <cairo.h>
#include <mujoco/mujoco.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <tdrl/envs/cartpole.h>
#include <tdrl/envs/mujoco_tasks.h>
#include <tdrl/envs/transforms/image.h>
#include <tdrl/replay/frame_stack.h>
#include <tdrl/replay/storages.h>

#include "common.h"

namespace tdrl::bench {
namespace {

// Before any GL context: llvmpipe then draws on the calling thread (one core).
const bool kOneRenderThread = setenv("LP_NUM_THREADS", "0", 1) == 0;

const std::vector<std::pair<int64_t, int64_t>>& cartpole_sizes() {
  static const std::vector<std::pair<int64_t, int64_t>> s = {{64, 64}, {600, 400}};
  return s;
}
const std::vector<int64_t>& mujoco_sizes() {
  static const std::vector<int64_t> s = {64, 256};
  return s;
}

// A CartPole state mid-episode (the cart off centre, the pole leaning).
constexpr double kState[4] = {0.4, 0.1, 0.08, -0.2};

void cartpole_ours(benchmark::State& state, int64_t width, int64_t height) {
  envs::CartPoleEnv env(
      envs::CartPoleEnvOptions().render(envs::RenderOptions().width(width).height(height)));
  env.set_state(torch::tensor(std::vector<double>(kState, kState + 4), torch::kFloat64));
  time_calls(state, [&] { return env.render(); });
  state.SetItemsProcessed(state.iterations());
}

// CartPole's picture (Gymnasium's layout on a 600 x 400 screen, y up) with cairo calls.
void cartpole_raw(benchmark::State& state, int64_t width, int64_t height) {
  const auto paint = [&](cairo_t* cr) {
    cairo_scale(cr, static_cast<double>(width) / 600.0, static_cast<double>(height) / 400.0);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    const double scale = 600.0 / 4.8, cart_x = kState[0] * scale + 300.0, cart_y = 100.0;
    const auto box = [&](double l, double r, double t, double b, double angle, double x, double y) {
      const double c = std::cos(angle), s = std::sin(angle);
      const double corners[4][2] = {{l, b}, {l, t}, {r, t}, {r, b}};
      for (int i = 0; i < 4; ++i) {
        const double px = corners[i][0] * c - corners[i][1] * s + x;
        const double py = 400.0 - (corners[i][0] * s + corners[i][1] * c + y);
        if (i == 0)
          cairo_move_to(cr, px, py);
        else
          cairo_line_to(cr, px, py);
      }
      cairo_close_path(cr);
      cairo_fill(cr);
    };
    cairo_set_source_rgb(cr, 0, 0, 0);
    box(-25, 25, 15, -15, 0, cart_x, cart_y);
    cairo_set_source_rgb(cr, 202 / 255.0, 152 / 255.0, 101 / 255.0);
    box(-5, 5, scale - 5, -5, -kState[2], cart_x, cart_y + 7.5);
    cairo_set_source_rgb(cr, 129 / 255.0, 132 / 255.0, 203 / 255.0);
    cairo_new_sub_path(cr);
    cairo_arc(cr, cart_x, 400.0 - (cart_y + 7.5), 5, 0, 2 * M_PI);
    cairo_fill(cr);
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_set_line_width(cr, 1.0);
    cairo_move_to(cr, 0, 300);
    cairo_line_to(cr, 600, 300);
    cairo_stroke(cr);
  };
  time_calls(state, [&] {
    cairo_surface_t* surface = cairo_image_surface_create(
        CAIRO_FORMAT_RGB24, static_cast<int>(width), static_cast<int>(height));
    cairo_t* cr = cairo_create(surface);
    paint(cr);
    cairo_destroy(cr);
    cairo_surface_flush(surface);
    auto frame = torch::empty({height, width, 3}, torch::kUInt8);
    const unsigned char* data = cairo_image_surface_get_data(surface);
    const int stride = cairo_image_surface_get_stride(surface);
    auto* out = frame.data_ptr<uint8_t>();
    for (int64_t y = 0; y < height; ++y) {
      const auto* row = reinterpret_cast<const uint32_t*>(data + y * stride);
      for (int64_t x = 0; x < width; ++x, out += 3) {
        out[0] = static_cast<uint8_t>(row[x] >> 16);
        out[1] = static_cast<uint8_t>(row[x] >> 8);
        out[2] = static_cast<uint8_t>(row[x]);
      }
    }
    cairo_surface_destroy(surface);
    return frame;
  });
  state.SetItemsProcessed(state.iterations());
}

envs::MujocoEnvOptions cheetah_options(int64_t size) {
  return envs::MujocoEnvOptions()
      .render(envs::RenderOptions().width(size).height(size))
      .render_backend("osmesa");
}

void cheetah_ours(benchmark::State& state, int64_t size) {
  envs::HalfCheetahEnv env(cheetah_options(size));
  env.set_seed(0);
  env.reset();
  env.render();  // the GL context, outside the timed loop
  time_calls(state, [&] { return env.render(); });
  state.SetItemsProcessed(state.iterations());
}

// MuJoCo's renderer by hand: its own OSMesa context and model copy, the track camera's pose.
void cheetah_raw(benchmark::State& state, int64_t size) {
  envs::HalfCheetahEnv env(cheetah_options(size));
  env.set_seed(0);
  env.reset();
  const int n = static_cast<int>(size);
  char error[1000] = {};
  mjModel* model = mj_loadXML(env.model_path().c_str(), nullptr, error, sizeof(error));
  if (!model) {
    state.SkipWithError(error);
    return;
  }
  mjData* data = mj_makeData(model);
  const auto qpos = env.qpos().contiguous();
  const auto qvel = env.qvel().contiguous();
  std::memcpy(data->qpos, qpos.data_ptr<double>(), sizeof(double) * model->nq);
  std::memcpy(data->qvel, qvel.data_ptr<double>(), sizeof(double) * model->nv);
  mj_forward(model, data);
  std::vector<unsigned char> window(static_cast<size_t>(n) * n * 4);
  OSMesaContext gl = OSMesaCreateContextExt(OSMESA_RGBA, 24, 8, 0, nullptr);
  OSMesaMakeCurrent(gl, window.data(), GL_UNSIGNED_BYTE, n, n);
  model->vis.global.offwidth = std::max(model->vis.global.offwidth, n);
  model->vis.global.offheight = std::max(model->vis.global.offheight, n);
  mjvScene scene;
  mjvCamera camera;
  mjvOption option;
  mjrContext context;
  mjv_defaultScene(&scene);
  mjv_defaultCamera(&camera);
  mjv_defaultFreeCamera(model, &camera);
  mjv_defaultOption(&option);
  mjr_defaultContext(&context);
  mjv_makeScene(model, &scene, 2000);
  mjr_makeContext(model, &context, mjFONTSCALE_50);
  camera.distance = 0.5 * model->stat.extent;
  camera.elevation = -20;
  std::vector<unsigned char> rows(static_cast<size_t>(n) * n * 3);
  const mjrRect viewport{0, 0, n, n};
  time_calls(state, [&] {
    OSMesaMakeCurrent(gl, window.data(), GL_UNSIGNED_BYTE, n, n);
    for (int k = 0; k < 3; ++k) camera.lookat[k] = data->xpos[3 + k];
    mjv_updateScene(model, data, &option, nullptr, &camera, mjCAT_ALL, &scene);
    mjr_setBuffer(mjFB_OFFSCREEN, &context);
    mjr_render(viewport, &scene, &context);
    mjr_readPixels(rows.data(), nullptr, viewport, &context);
    auto frame = torch::empty({n, n, 3}, torch::kUInt8);
    auto* out = frame.data_ptr<uint8_t>();
    for (int y = 0; y < n; ++y)
      std::memcpy(out + y * n * 3, rows.data() + (n - 1 - y) * n * 3, static_cast<size_t>(n) * 3);
    return frame;
  });
  state.SetItemsProcessed(state.iterations());
  mjr_freeContext(&context);
  mjv_freeScene(&scene);
  OSMesaDestroyContext(gl);
  mj_deleteData(data);
  mj_deleteModel(model);
}

// ---- The pixel pipeline ---------------------------------------------------------------------

constexpr int64_t kEnvs = 8;
constexpr int64_t kSide = 64;
constexpr int64_t kStack = 4;

// A step's root (the previous stacks) and "next" (the env's new frames), random pixels.
struct PipelineStep {
  tensordict::TensorDict root;
  tensordict::TensorDict next;
};
PipelineStep pipeline_step() {
  torch::manual_seed(0);
  PipelineStep s{tensordict::TensorDict({}, {kEnvs}), tensordict::TensorDict({}, {kEnvs})};
  s.root.set("pixels", torch::randint(0, 256, {kEnvs, kStack, kSide, kSide}, torch::kUInt8));
  s.next.set("pixels", torch::randint(0, 256, {kEnvs, kSide, kSide, 3}, torch::kUInt8));
  return s;
}

void pixels_transforms_ours(benchmark::State& state) {
  envs::TransformedEnv env(
      std::make_shared<envs::CartPoleEnv>(envs::CartPoleEnvOptions().batch_size({kEnvs}).render(
          envs::RenderOptions().width(kSide).height(kSide).from_pixels(true).pixels_only(true))),
      envs::Compose::make(
          {std::make_shared<envs::ToTensorImage>(envs::ToTensorImageOptions().dtype(torch::kUInt8)),
           std::make_shared<envs::GrayScale>(),
           std::make_shared<envs::CatFrames>(envs::CatFramesOptions(kStack))}));
  const auto s = pipeline_step();
  time_calls(state, [&] { return env.transform().step(s.root, s.next.clone(false)); });
  state.SetItemsProcessed(state.iterations() * kEnvs);
}

void pixels_transforms_raw(benchmark::State& state) {
  const auto s = pipeline_step();
  time_calls(state, [&] {
    auto next = s.next.clone(false);
    const auto chw = next.get("pixels").movedim(-1, -3).contiguous();
    const auto f = chw.to(torch::kFloat32);
    const auto grey = (0.2989 * f.select(-3, 0) + 0.587 * f.select(-3, 1) + 0.114 * f.select(-3, 2))
                          .unsqueeze(-3)
                          .to(torch::kUInt8);
    const auto previous = s.root.get("pixels");
    next.set("pixels", torch::cat({previous.narrow(1, 1, kStack - 1), grey}, 1));
    return next;
  });
  state.SetItemsProcessed(state.iterations() * kEnvs);
}

constexpr int64_t kRows = 10000;
constexpr int64_t kSample = 32;

// A full storage of 8 envs' single grey frames, written time-major; episodes of 50 steps.
std::shared_ptr<replay::LazyTensorStorage> frame_storage() {
  torch::manual_seed(0);
  auto storage = std::make_shared<replay::LazyTensorStorage>(kRows);
  tensordict::TensorDict data({}, {kRows});
  data.set("pixels", torch::randint(0, 256, {kRows, 1, kSide, kSide}, torch::kUInt8));
  const auto step = torch::arange(kRows, torch::kInt64).div(kEnvs, "floor");
  data.set({"next", "done"}, (step.remainder(50) == 49).unsqueeze(-1));
  storage->set(torch::arange(kRows, torch::kInt64), data);
  return storage;
}

void pixels_frame_stack_ours(benchmark::State& state) {
  const auto storage = frame_storage();
  replay::FrameStack stack(replay::FrameStackOptions(kStack).streams(kEnvs));
  const auto index = torch::randint(0, kRows, {kSample}, torch::kInt64);
  const auto sample = storage->get(index);
  time_calls(state, [&] { return stack(sample.clone(false), index, *storage); });
  state.SetItemsProcessed(state.iterations() * kSample);
}

void pixels_frame_stack_raw(benchmark::State& state) {
  const auto storage = frame_storage();
  const auto index = torch::randint(0, kRows, {kSample}, torch::kInt64);
  const auto sample = storage->get(index);
  const auto frames = storage->column("pixels");
  const auto done = storage->column({"next", "done"});
  time_calls(state, [&] {
    auto out = sample.clone(false);
    const auto age = (storage->last_row() - index).remainder(kRows);
    std::vector<torch::Tensor> sources{index};
    auto same = torch::ones_like(index, torch::kBool);
    for (int64_t k = 1; k < kStack; ++k) {
      const auto candidate = (index - k * kEnvs).remainder(kRows);
      const auto stored = (age + k * kEnvs) < storage->num_rows();
      same =
          same & stored &
          done.index_select(0, torch::where(stored, candidate, index)).reshape({-1}).logical_not();
      sources.push_back(torch::where(same, candidate, sources.back()));
    }
    std::vector<torch::Tensor> parts;
    for (int64_t k = kStack - 1; k >= 1; --k) parts.push_back(frames.index_select(0, sources[k]));
    parts.push_back(out.get("pixels"));
    out.set("pixels", torch::cat(parts, 1));
    return out;
  });
  state.SetItemsProcessed(state.iterations() * kSample);
}

// A sampled minibatch of 32 4-stacked 64x64 grey frames, root and next, as the losses read
// them under train.random_shift (pad 4: DrQ's).
constexpr int64_t kPad = 4;

tensordict::TensorDict shift_sample() {
  torch::manual_seed(0);
  tensordict::TensorDict td({}, {kSample});
  td.set("pixels", torch::randint(0, 256, {kSample, kStack, kSide, kSide}, torch::kUInt8));
  td.set({"next", "pixels"},
         torch::randint(0, 256, {kSample, kStack, kSide, kSide}, torch::kUInt8));
  return td;
}

void pixels_random_shift_ours(benchmark::State& state) {
  const auto sample = shift_sample();
  envs::RandomShift shift(envs::RandomShiftOptions(kPad).in_keys(
      {tensordict::NestedKey("pixels"), tensordict::NestedKey({"next", "pixels"})}));
  time_calls(state, [&] { return shift.forward(sample.clone(false)); });
  state.SetItemsProcessed(state.iterations() * kSample);
}

void pixels_random_shift_raw(benchmark::State& state) {
  const auto sample = shift_sample();
  const auto on = torch::TensorOptions().dtype(torch::kInt64);
  const auto window = [&](int64_t size) {
    const auto corner = torch::randint(0, 2 * kPad + 1, {kSample, 1}, on);
    return (corner + torch::arange(size, on).unsqueeze(0) - kPad).clamp(0, size - 1);
  };
  const auto shifted = [&](const torch::Tensor& x) {
    const auto rows = window(kSide).view({kSample, 1, kSide, 1}).expand(x.sizes());
    const auto cols = window(kSide).view({kSample, 1, 1, kSide}).expand(x.sizes());
    return x.gather(2, rows).gather(3, cols);
  };
  time_calls(state, [&] {
    auto out = sample.clone(false);
    out.set("pixels", shifted(out.get("pixels")));
    out.set({"next", "pixels"}, shifted(out.get({"next", "pixels"})));
    return out;
  });
  state.SetItemsProcessed(state.iterations() * kSample);
}

std::string cartpole_name(int64_t w, int64_t h, const char* side) {
  return "BM_Render/CartPole/" + std::to_string(w) + "x" + std::to_string(h) + "/" + side;
}
std::string cheetah_name(int64_t size, const char* side) {
  return "BM_Render/HalfCheetah/" + std::to_string(size) + "x" + std::to_string(size) + "/" + side;
}

void register_benchmarks() {
  // The raw MuJoCo side makes its own OSMesa context: the env must render with OSMesa too
  // (MuJoCo's GL functions are resolved once per process).
  for (const auto& [w, h] : cartpole_sizes()) {
    benchmark::RegisterBenchmark(cartpole_name(w, h, "Ours").c_str(), cartpole_ours, w, h)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(cartpole_name(w, h, "Raw").c_str(), cartpole_raw, w, h)
        ->Unit(benchmark::kMicrosecond);
  }
  for (int64_t s : mujoco_sizes()) {
    benchmark::RegisterBenchmark(cheetah_name(s, "Ours").c_str(), cheetah_ours, s)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(cheetah_name(s, "Raw").c_str(), cheetah_raw, s)
        ->Unit(benchmark::kMicrosecond);
  }
  benchmark::RegisterBenchmark("BM_Pixels/Transforms/Ours", pixels_transforms_ours)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("BM_Pixels/Transforms/Raw", pixels_transforms_raw)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("BM_Pixels/FrameStack/Ours", pixels_frame_stack_ours)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("BM_Pixels/FrameStack/Raw", pixels_frame_stack_raw)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("BM_Pixels/RandomShift/Ours", pixels_random_shift_ours)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("BM_Pixels/RandomShift/Raw", pixels_random_shift_raw)
      ->Unit(benchmark::kMicrosecond);
}

void print_row(std::ostream& os, const RatioReporter& reporter, const std::string& what,
               const std::string& ours, const std::string& raw) {
  const Timing o = reporter.timing(ours);
  const Timing r = reporter.timing(raw);
  if (o.cpu <= 0 || r.cpu <= 0) return;
  os << "| " << what << " | " << fixed(o.cpu / 1e3, 1) << " | " << fixed(1e9 / o.cpu, 0) << " | "
     << fixed(r.cpu / 1e3, 1) << " | " << fixed(1e9 / r.cpu, 0) << " | " << fixed(o.cpu / r.cpu, 2)
     << " |\n";
}

void print_tables(const RatioReporter& reporter, std::ostream& os) {
  os << "\nOne frame of one sub-env, ours against the same picture by hand (median of "
        "repetitions, CPU time, one core).\n\n"
     << "| frame | ours us | ours frames/s | raw us | raw frames/s | ratio |\n"
     << "|---|---:|---:|---:|---:|---:|\n";
  for (const auto& [w, h] : cartpole_sizes()) {
    print_row(os, reporter, "CartPole " + std::to_string(w) + "x" + std::to_string(h),
              cartpole_name(w, h, "Ours"), cartpole_name(w, h, "Raw"));
  }
  for (int64_t s : mujoco_sizes()) {
    print_row(os, reporter,
              "HalfCheetah " + std::to_string(s) + "x" + std::to_string(s) + " (OSMesa)",
              cheetah_name(s, "Ours"), cheetah_name(s, "Raw"));
  }
  // The pipeline's cost per frame: a call handles 8 frames (transforms) or 32 (FrameStack).
  os << "\nThe pixel pipeline per frame (a call's CPU time over its frames), ours against the "
        "same work by hand.\n\n"
     << "| stage | ours us/frame | raw us/frame | ratio |\n|---|---:|---:|---:|\n";
  const auto per_frame = [&](const std::string& what, const std::string& name, int64_t n) {
    const Timing o = reporter.timing("BM_Pixels/" + name + "/Ours");
    const Timing r = reporter.timing("BM_Pixels/" + name + "/Raw");
    if (o.cpu <= 0 || r.cpu <= 0) return;
    os << "| " << what << " | " << fixed(o.cpu / 1e3 / n, 2) << " | " << fixed(r.cpu / 1e3 / n, 2)
       << " | " << fixed(o.cpu / r.cpu, 2) << " |\n";
  };
  per_frame("ToTensorImage(uint8) + GrayScale + CatFrames(4), 8 envs, 64x64", "Transforms", kEnvs);
  per_frame("FrameStack(4) at sampling, 32 steps, 64x64 grey", "FrameStack", kSample);
  per_frame("RandomShift(4) of a minibatch, 32 4-stacked 64x64 grey, root and next", "RandomShift",
            kSample);
}

void describe(std::ostream& os) {
  os << "bench_render: torch::set_num_threads(1), LP_NUM_THREADS="
     << (kOneRenderThread ? std::getenv("LP_NUM_THREADS") : "?")
     << "; CartPole (cairo) and HalfCheetah (MuJoCo on OSMesa) frames\n";
}

}  // namespace
}  // namespace tdrl::bench

TDRL_BENCHMARK_MAIN()
