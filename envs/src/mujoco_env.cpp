#include <tdrl/envs/mujoco_env.h>

#include <dlfcn.h>

#include <mujoco/mujoco.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <mutex>
#include <sstream>
#include <utility>

#include <tensordict/errors.h>

#include "detail/build_asset_dirs.h"
#include "detail/mujoco_render.h"
#include "detail/spin_worker_pool.h"

namespace tdrl::envs {

using tensordict::KeyError;
using tensordict::ShapeError;
using tensordict::TypeError;
using tensordict::ValueError;

// RAII for MuJoCo's C handles: the model is immutable once compiled and shared by every
// simulation of an env; each simulation owns its data. Outside the anonymous namespace because
// MujocoEnv::Impl holds them (a member of an unnamed-namespace type in a class of external
// linkage is what -Wsubobject-linkage reports once sources are compiled in unity batches).
namespace detail {
struct MjModelDeleter {
  void operator()(const mjModel* model) const { mj_deleteModel(const_cast<mjModel*>(model)); }
};
struct MjDataDeleter {
  void operator()(mjData* data) const { mj_deleteData(data); }
};
}  // namespace detail
using MjModelPtr = std::shared_ptr<const mjModel>;
using MjDataPtr = std::unique_ptr<mjData, detail::MjDataDeleter>;

namespace {

// MuJoCo reports warnings through one process-wide callback (by default it prints and writes
// MUJOCO_LOG.TXT). Ours counts them and keeps the last message of the thread that raised it,
// so the step that detects an instability can log MuJoCo's own words.
std::atomic<int64_t> g_warning_count{0};
thread_local std::string t_last_warning;

void on_mujoco_warning(const char* message) {
  g_warning_count.fetch_add(1, std::memory_order_relaxed);
  t_last_warning = message;
}

void install_warning_handler() {
  static std::once_flag once;
  std::call_once(once, [] { mju_user_warning = on_mujoco_warning; });
}

spdlog::logger& logger() {
  static std::shared_ptr<spdlog::logger> instance = [] {
    const std::string name = "tdrl.envs.mujoco";
    auto existing = spdlog::get(name);
    return existing ? existing : spdlog::stderr_color_mt(name);
  }();
  return *instance;
}

std::string shape_string(const std::vector<int64_t>& shape) { return tensordict::shape_str(shape); }

std::vector<int64_t> with_tail(std::vector<int64_t> batch, int64_t tail) {
  batch.push_back(tail);
  return batch;
}

MjModelPtr load_model(const std::string& path, const std::string& op) {
  TDRL_CHECK(std::filesystem::is_regular_file(path), ValueError, op, ": model file '", path,
             "' does not exist; pass MujocoEnvOptions().model_path(<MJCF file>) or "
             ".asset_dir(<directory>), or set the TDRL_ENVS_ASSET_DIR environment "
             "variable");
  // The XML parser keeps global state: load one model at a time.
  static std::mutex load_mutex;
  std::lock_guard<std::mutex> lock(load_mutex);
  char error[1024] = "";
  mjModel* model = mj_loadXML(path.c_str(), nullptr, error, sizeof(error));
  TDRL_CHECK(model != nullptr, ValueError, op, ": MuJoCo could not load '", path, "': ", error);
  return MjModelPtr(model, detail::MjModelDeleter{});
}

// The warnings that mean the simulation can no longer be trusted (MuJoCo resets the data
// itself on bad qpos/qvel/qacc).
bool has_instability_warning(const mjData* data) {
  for (int kind : {mjWARN_CONTACTFULL, mjWARN_CNSTRFULL, mjWARN_BADQPOS, mjWARN_BADQVEL,
                   mjWARN_BADQACC, mjWARN_BADCTRL}) {
    if (data->warning[kind].number > 0) return true;
  }
  return false;
}

void clear_warnings(mjData* data) {
  for (int kind = 0; kind < mjNWARNING; ++kind) data->warning[kind].number = 0;
}

bool all_finite(const double* values, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(values[i])) return false;
  }
  return true;
}

bool all_finite(const float* values, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(values[i])) return false;
  }
  return true;
}

std::string names_of(const mjModel* model, int type, int count, const std::string& wanted) {
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) {
    const char* name = mj_id2name(model, type, i);
    if (name != nullptr) names.emplace_back(name);
  }
  return tensordict::closest_names(wanted, names);
}

}  // namespace

// ---- MujocoEnvOptions ---------------------------------------------------------------------------

std::ostream& operator<<(std::ostream& stream, const MujocoEnvOptions& options) {
  auto or_default = [](const auto& value) {
    std::ostringstream os;
    if (value) {
      os << *value;
    } else {
      os << "default";
    }
    return os.str();
  };
  stream << "MujocoEnvOptions(model_path="
         << (options.model_path().empty() ? "default" : options.model_path())
         << ", asset_dir=" << (options.asset_dir().empty() ? "default" : options.asset_dir())
         << ", batch_size=" << shape_string(options.batch_size())
         << ", num_threads=" << options.num_threads()
         << ", frame_skip=" << or_default(options.frame_skip())
         << ", reset_noise_scale=" << or_default(options.reset_noise_scale())
         << ", max_episode_steps=" << or_default(options.max_episode_steps())
         << ", terminate_when_unhealthy=" << (options.terminate_when_unhealthy() ? "true" : "false")
         << ", mask_velocity=" << (options.mask_velocity() ? "true" : "false") << ", "
         << options.render() << ", camera=" << options.camera()
         << ", render_backend=" << options.render_backend() << ", device=" << options.device()
         << ")";
  return stream;
}

// ---- MujocoView ---------------------------------------------------------------------------------

int MujocoView::nq() const { return model_->nq; }
int MujocoView::nv() const { return model_->nv; }
int MujocoView::nu() const { return model_->nu; }
int MujocoView::nbody() const { return model_->nbody; }
int MujocoView::nsite() const { return model_->nsite; }
double MujocoView::timestep() const { return model_->opt.timestep; }
double MujocoView::time() const { return data_->time; }
const double* MujocoView::qpos() const { return data_->qpos; }
const double* MujocoView::qvel() const { return data_->qvel; }
const double* MujocoView::ctrl() const { return data_->ctrl; }
const double* MujocoView::xpos() const { return data_->xpos; }
const double* MujocoView::xipos() const { return data_->xipos; }
const double* MujocoView::site_xpos() const { return data_->site_xpos; }
const double* MujocoView::body_mass() const { return model_->body_mass; }
const double* MujocoView::cinert() const { return data_->cinert; }
const double* MujocoView::cvel() const { return data_->cvel; }
const double* MujocoView::qfrc_actuator() const { return data_->qfrc_actuator; }
const double* MujocoView::qfrc_constraint() const { return data_->qfrc_constraint; }
const double* MujocoView::cfrc_ext() const { return data_->cfrc_ext; }

// ---- MujocoEnv ----------------------------------------------------------------------------------

struct MujocoEnv::Impl {
  MujocoEnvOptions options;
  std::string model_path;
  MjModelPtr model;
  std::vector<MjDataPtr> data;
  // Per simulation: the before_step memo and the steps since its last reset.
  std::vector<MujocoMemo> memo;
  std::vector<int64_t> steps;
  int64_t n = 1;
  // The whole observation's size (what write_observation writes), and under mask_velocity the
  // components kept (undefined otherwise) and their number.
  int64_t obs_dim = 0;
  torch::Tensor kept_obs;
  int64_t visible_dim = 0;
  int64_t frame_skip = 1;
  int64_t max_episode_steps = 0;
  double reset_noise_scale = 0.0;
  bool post_constraint = false;
  // `obs` `[n, obs_dim]` without the masked components.
  torch::Tensor visible(const torch::Tensor& obs) const {
    return kept_obs.defined() ? obs.index_select(1, kept_obs) : obs;
  }
  // The caller's thread plus num_threads - 1 workers, started once.
  std::unique_ptr<detail::SpinWorkerPool> pool;
  std::atomic<int64_t> instabilities{0};
  std::atomic<bool> logged_instability{false};
  // The frames' renderer, made on the first render() (last member: freed before the model).
  std::unique_ptr<detail::MujocoRenderer> renderer;

  // Runs fn(i) for every i in [0, count) on the pool. Each simulation is stepped by one
  // thread and depends on nothing else, so results do not depend on which thread ran it.
  void parallel(int64_t count, const std::function<void(int64_t)>& fn) { pool->run(count, fn); }

  // The id of the model's object `name` of `type` (`count` of them); KeyError naming `env` and
  // listing the objects (`kind` / `kinds`: "body" / "bodies") closest first otherwise.
  int64_t object_id(const std::string& env, mjtObj type, int count, const char* kind,
                    const char* kinds, const std::string& name) const {
    const int id = mj_name2id(model.get(), type, name.c_str());
    TDRL_CHECK(!(id < 0), KeyError, env, ": the model '", model_path, "' has no ", kind, " named '",
               name, "'; its ", kinds, ": ", names_of(model.get(), type, count, name));
    return id;
  }

  // The `width` values of `field` (qpos or qvel) of every simulation, float64 `[n, width]`.
  torch::Tensor gather(mjtNum* mjData::*field, int width) const {
    auto out = torch::empty({n, width}, torch::kFloat64);
    double* p = out.data_ptr<double>();
    for (int64_t i = 0; i < n; ++i) std::copy_n(data[i].get()->*field, width, p + i * width);
    return out;
  }
};

MujocoEnv::MujocoEnv(const MujocoEnvOptions& options)
    : MujocoEnv("MujocoEnv", options, MujocoTaskConfig{}) {}

MujocoEnv::MujocoEnv(std::string name, const MujocoEnvOptions& options,
                     const MujocoTaskConfig& config)
    : EnvBase(std::move(name),
              EnvBaseOptions().batch_size(options.batch_size()).device(options.device())),
      impl_(std::make_unique<Impl>()) {
  // The task's settings (options override the task's defaults), checked.
  const std::string op = this->name();
  auto& s = *impl_;
  s.options = options;
  s.frame_skip = options.frame_skip().value_or(config.frame_skip);
  s.reset_noise_scale = options.reset_noise_scale().value_or(config.reset_noise_scale);
  s.max_episode_steps = options.max_episode_steps().value_or(config.max_episode_steps);
  s.post_constraint = config.post_constraint;
  TDRL_CHECK(!(options.num_threads() < 1), ValueError, op, ": num_threads must be >= 1, got ",
             std::to_string(options.num_threads()));
  TDRL_CHECK(!(s.frame_skip < 1), ValueError, op, ": frame_skip must be >= 1, got ",
             std::to_string(s.frame_skip));
  TDRL_CHECK(s.reset_noise_scale >= 0.0 && std::isfinite(s.reset_noise_scale), ValueError, op,
             ": reset_noise_scale must be finite and >= 0, got ",
             std::to_string(s.reset_noise_scale));
  TDRL_CHECK(!(s.max_episode_steps < 0), ValueError, op,
             ": max_episode_steps must be >= 0 (0: no limit), got ",
             std::to_string(s.max_episode_steps));
  for (int64_t dim : batch_size()) {
    TDRL_CHECK(!(dim < 1), ValueError, op, ": every batch_size dim must be >= 1, got ",
               shape_string(batch_size()));
    s.n *= dim;
  }

  // The model: an explicit MJCF file, or the task's file in the asset folder.
  if (!options.model_path().empty()) {
    s.model_path = options.model_path();
  } else if (config.model_file.empty()) {
    throw ValueError(op + ": no model to load; set MujocoEnvOptions().model_path(<MJCF file>)");
  } else {
    const std::string dir =
        options.asset_dir().empty() ? default_mujoco_asset_dir() : options.asset_dir();
    s.model_path = (std::filesystem::path(dir) / config.model_file).string();
  }
  install_warning_handler();
  const int64_t warnings_before = mujoco_warning_count();
  s.model = load_model(s.model_path, op);
  if (mujoco_warning_count() != warnings_before) {
    logger().warn("{}: MuJoCo warned while loading '{}': {}", op, s.model_path, t_last_warning);
  }
  const mjModel* m = s.model.get();
  s.obs_dim = config.observation_dim >= 0 ? config.observation_dim : m->nq + m->nv;
  s.visible_dim = s.obs_dim;
  if (options.mask_velocity()) {
    std::vector<int64_t> velocities = config.velocity_obs;
    if (velocities.empty() && config.observation_dim < 0)
      for (int64_t i = 0; i < m->nv; ++i) velocities.push_back(m->nq + i);
    TDRL_CHECK(!velocities.empty(), ValueError, op,
               ": mask_velocity is set, but this task's observation declares no velocity "
               "components (MujocoTaskConfig::velocity_obs); unset mask_velocity");
    std::vector<int64_t> kept;
    for (int64_t i = 0; i < s.obs_dim; ++i)
      if (std::find(velocities.begin(), velocities.end(), i) == velocities.end()) kept.push_back(i);
    s.kept_obs = torch::tensor(kept, torch::kInt64);
    s.visible_dim = static_cast<int64_t>(kept.size());
  }

  // One simulation state per sub-env, and the worker pool stepping them.
  s.data.reserve(static_cast<size_t>(s.n));
  for (int64_t i = 0; i < s.n; ++i) {
    mjData* d = mj_makeData(m);
    TDRL_CHECK(d != nullptr, ValueError, op, ": MuJoCo could not allocate the data of '",
               s.model_path, "'");
    s.data.emplace_back(d);
    mj_forward(m, d);
  }
  s.memo.assign(static_cast<size_t>(s.n), MujocoMemo{});
  s.steps.assign(static_cast<size_t>(s.n), 0);
  s.pool = std::make_unique<detail::SpinWorkerPool>(std::min(options.num_threads(), s.n));

  // Specs: float32 observations; a Bounded action when every actuator is limited.
  const auto& batch = batch_size();
  const torch::Device device = options.device();
  set_observation_spec(specs::Composite::make(
      {{specs::kObservation, std::make_shared<specs::Unbounded>(
                                 with_tail(batch, s.visible_dim),
                                 specs::UnboundedOptions().dtype(torch::kFloat32).device(device))}},
      batch, device));
  bool all_limited = m->nu > 0;
  for (int j = 0; j < m->nu; ++j) all_limited = all_limited && m->actuator_ctrllimited[j];
  if (all_limited) {
    auto range =
        torch::from_blob(const_cast<double*>(m->actuator_ctrlrange), {m->nu, 2}, torch::kFloat64)
            .clone();
    set_action_spec(std::make_shared<specs::Bounded>(specs::BoundedOptions()
                                                         .low(range.select(1, 0))
                                                         .high(range.select(1, 1))
                                                         .shape(with_tail(batch, m->nu))
                                                         .dtype(torch::kFloat32)
                                                         .device(device)));
  } else {
    set_action_spec(std::make_shared<specs::Unbounded>(
        with_tail(batch, m->nu), specs::UnboundedOptions().dtype(torch::kFloat32).device(device)));
  }
  set_reward_spec(std::make_shared<specs::Unbounded>(
      with_tail(batch, 1), specs::UnboundedOptions().dtype(torch::kFloat32).device(device)));

  // Frames: the options are checked now; the GL context waits for the first frame.
  const auto& backend = options.render_backend();
  TDRL_CHECK(backend == "auto" || backend == "egl" || backend == "osmesa", ValueError, op,
             ": option render_backend is '", backend, "'; expected 'auto', 'egl' or 'osmesa'");
  const auto& camera = options.camera();
  if (camera != "track" && camera != "free" && mj_name2id(m, mjOBJ_CAMERA, camera.c_str()) < 0) {
    std::string cameras;
    for (int i = 0; i < m->ncam; ++i)
      cameras += std::string(i ? ", '" : "'") + mj_id2name(m, mjOBJ_CAMERA, i) + "'";
    throw ValueError(op + ": option camera is '" + camera +
                     "'; expected 'track', 'free' or a camera of '" + s.model_path + "' (" +
                     (cameras.empty() ? "it has none" : cameras) + ")");
  }
  set_render_options(options.render());
}

MujocoEnv::~MujocoEnv() = default;

torch::Tensor MujocoEnv::render_impl() {
  auto& s = *impl_;
  const auto& render = *render_options();
  if (!s.renderer) {
    s.renderer =
        std::make_unique<detail::MujocoRenderer>(s.model.get(), render.width(), render.height(),
                                                 s.options.render_backend(), s.options.camera());
  }
  auto frames = torch::empty({s.n, render.height(), render.width(), 3}, torch::kUInt8);
  auto* out = frames.data_ptr<uint8_t>();
  const int64_t frame_bytes = render.height() * render.width() * 3;
  for (int64_t i = 0; i < s.n; ++i) s.renderer->render(s.data[i].get(), out + i * frame_bytes);
  auto shape = batch_size();
  shape.insert(shape.end(), {render.height(), render.width(), 3});
  return frames.reshape(shape);
}

std::string MujocoEnv::render_backend() const {
  return impl_->renderer ? impl_->renderer->backend() : std::string();
}

int64_t MujocoEnv::num_envs() const { return impl_->n; }
int64_t MujocoEnv::nq() const { return impl_->model->nq; }
int64_t MujocoEnv::nv() const { return impl_->model->nv; }
int64_t MujocoEnv::nu() const { return impl_->model->nu; }
int64_t MujocoEnv::nbody() const { return impl_->model->nbody; }
int64_t MujocoEnv::observation_dim() const { return impl_->visible_dim; }
int64_t MujocoEnv::frame_skip() const { return impl_->frame_skip; }
double MujocoEnv::dt() const {
  return impl_->model->opt.timestep * static_cast<double>(impl_->frame_skip);
}
int64_t MujocoEnv::max_episode_steps() const { return impl_->max_episode_steps; }
double MujocoEnv::reset_noise_scale() const { return impl_->reset_noise_scale; }
int64_t MujocoEnv::num_threads() const { return impl_->pool->size(); }
const std::string& MujocoEnv::model_path() const { return impl_->model_path; }
const MujocoEnvOptions& MujocoEnv::options() const { return impl_->options; }
int64_t MujocoEnv::instability_count() const { return impl_->instabilities.load(); }

namespace {
// An mjData's snapshot is its info header (sizes, diagnostics, time: the fields before the
// pointers) and its main buffer, which holds every array: the state, the warm start and the
// quantities the last mj_step derived from the state before its final integration. A task's
// before_step reads those (Reacher's fingertip position), so restoring qpos/qvel and calling
// mj_forward would not repeat the stream; the snapshot does.
constexpr size_t kMjDataHeader = offsetof(mjData, buffer);
}  // namespace

bool MujocoEnv::save_state(TensorDict& state) const {
  const auto& s = *impl_;
  const auto bytes = static_cast<int64_t>(kMjDataHeader) + s.data[0]->nbuffer;
  auto snapshot = torch::empty({s.n, bytes}, torch::kUInt8);
  auto* out = snapshot.data_ptr<uint8_t>();
  for (int64_t i = 0; i < s.n; ++i) {
    const mjData* d = s.data[i].get();
    std::memcpy(out + i * bytes, d, kMjDataHeader);
    std::memcpy(out + i * bytes + kMjDataHeader, d->buffer, static_cast<size_t>(d->nbuffer));
  }
  state.set("mjdata", snapshot.view(with_tail(batch_size(), bytes)));
  state.set("steps", torch::tensor(s.steps, torch::kInt64).view(batch_size()));
  return true;
}

void MujocoEnv::load_state(const TensorDict& state) {
  auto& s = *impl_;
  const auto bytes = static_cast<int64_t>(kMjDataHeader) + s.data[0]->nbuffer;
  const auto snapshot =
      state_entry(state, "mjdata", with_tail(batch_size(), bytes), torch::kUInt8).contiguous();
  const auto steps = state_entry(state, "steps", batch_size(), torch::kInt64).contiguous();
  // The header's own sizes must be this model's: a snapshot of another model (or MuJoCo
  // version) that happens to have the same length is refused before anything is copied.
  const auto* in = snapshot.data_ptr<uint8_t>();
  const auto header_int = [&](int64_t i, size_t offset) {
    int value = 0;
    std::memcpy(&value, in + i * bytes + offset, sizeof(value));
    return value;
  };
  for (int64_t i = 0; i < s.n; ++i) {
    const int nbuffer = header_int(i, offsetof(mjData, nbuffer));
    const int nstack = header_int(i, offsetof(mjData, nstack));
    TDRL_CHECK(nbuffer == s.data[i]->nbuffer && nstack == s.data[i]->nstack, ValueError, name(),
               "::load_state_dict: simulation ", std::to_string(i), "'s snapshot has a buffer of ",
               std::to_string(nbuffer), " bytes and a stack of ", std::to_string(nstack),
               ", this model's has ", std::to_string(s.data[i]->nbuffer), " and ",
               std::to_string(s.data[i]->nstack),
               "; the state was saved from another model or MuJoCo version");
  }
  for (int64_t i = 0; i < s.n; ++i) {
    mjData* d = s.data[i].get();
    std::memcpy(static_cast<void*>(d), in + i * bytes, kMjDataHeader);
    std::memcpy(d->buffer, in + i * bytes + kMjDataHeader, static_cast<size_t>(d->nbuffer));
  }
  const int64_t* st = steps.data_ptr<int64_t>();
  s.steps.assign(st, st + s.n);
}

int64_t MujocoEnv::body_id(const std::string& name) const {
  return impl_->object_id(this->name(), mjOBJ_BODY, impl_->model->nbody, "body", "bodies", name);
}

int64_t MujocoEnv::site_id(const std::string& name) const {
  return impl_->object_id(this->name(), mjOBJ_SITE, impl_->model->nsite, "site", "sites", name);
}

void MujocoEnv::check_model_dims(int64_t nq, int64_t nv, int64_t nu, int64_t nbody) const {
  const mjModel* m = impl_->model.get();
  const bool fits = (nq < 0 || nq == m->nq) && (nv < 0 || nv == m->nv) && (nu < 0 || nu == m->nu) &&
                    (nbody < 0 || nbody == m->nbody);
  if (fits) return;
  std::ostringstream os;
  os << name() << ": the model '" << impl_->model_path << "' has nq=" << m->nq << ", nv=" << m->nv
     << ", nu=" << m->nu << ", nbody=" << m->nbody << "; the task needs nq=" << nq << ", nv=" << nv
     << ", nu=" << nu;
  if (nbody >= 0) os << ", nbody=" << nbody;
  os << "; use a model with the task's joints, actuators and bodies (or the default asset)";
  throw ValueError(os.str());
}

torch::Tensor MujocoEnv::qpos() const {
  return impl_->gather(&mjData::qpos, impl_->model->nq)
      .view(with_tail(batch_size(), impl_->model->nq));
}

torch::Tensor MujocoEnv::qvel() const {
  return impl_->gather(&mjData::qvel, impl_->model->nv)
      .view(with_tail(batch_size(), impl_->model->nv));
}

void MujocoEnv::set_state(const torch::Tensor& qpos, const torch::Tensor& qvel) {
  auto& s = *impl_;
  const mjModel* m = s.model.get();
  const std::string op = name() + "::set_state";
  auto check = [&](const char* what, const torch::Tensor& value, int64_t dim) {
    const auto expected = with_tail(batch_size(), dim);
    TDRL_CHECK(value.defined() && value.sizes() == c10::IntArrayRef(expected), ShapeError, op, ": ",
               what, " must have shape ", shape_string(expected), " ([*batch_size, ",
               (dim == m->nq ? "nq" : "nv"), "]), got ",
               (value.defined() ? shape_string(value.sizes().vec()) : "undefined"));
    TDRL_CHECK(value.is_floating_point(), TypeError, op, ": ", what,
               " must have a floating dtype, got ",
               std::string(c10::toString(value.scalar_type())));
    TDRL_CHECK(torch::isfinite(value).all().item<bool>(), ValueError, op, ": ", what,
               " holds a non-finite value; states must be finite");
    return value.to(torch::kCPU, torch::kFloat64).contiguous().view({s.n, dim});
  };
  const auto qpos64 = check("qpos", qpos, m->nq);
  const auto qvel64 = check("qvel", qvel, m->nv);
  const double* qp = qpos64.data_ptr<double>();
  const double* qv = qvel64.data_ptr<double>();
  // Each sub-env on a worker: apply the action, frame_skip physics steps, then the task's
  // reward and observation; an unstable simulation is reset and its episode truncated.
  s.parallel(s.n, [&](int64_t i) {
    mjData* d = s.data[i].get();
    std::copy_n(qp + i * m->nq, m->nq, d->qpos);
    std::copy_n(qv + i * m->nv, m->nv, d->qvel);
    clear_warnings(d);
    mj_forward(m, d);
  });
}

torch::Tensor MujocoEnv::current_observation() {
  auto& s = *impl_;
  auto obs = torch::empty({s.n, s.obs_dim}, torch::kFloat32);
  float* out = obs.data_ptr<float>();
  s.parallel(s.n, [&](int64_t i) {
    write_observation(MujocoView(s.model.get(), s.data[i].get()), out + i * s.obs_dim);
  });
  return s.visible(obs).view(with_tail(batch_size(), s.visible_dim));
}

void MujocoEnv::write_observation(const MujocoView& sim, float* out) const {
  const int nq = sim.nq();
  const int nv = sim.nv();
  const double* qpos = sim.qpos();
  const double* qvel = sim.qvel();
  for (int i = 0; i < nq; ++i) out[i] = static_cast<float>(qpos[i]);
  for (int i = 0; i < nv; ++i) out[nq + i] = static_cast<float>(qvel[i]);
}

MujocoStepOutcome MujocoEnv::after_step(const MujocoView& sim, const float* action,
                                        const MujocoMemo& memo) const {
  return {};
}

void MujocoEnv::sample_reset_state(torch::Generator& generator, torch::Tensor& qpos,
                                   torch::Tensor& qvel) const {
  const double scale = reset_noise_scale();
  if (scale <= 0.0) return;
  qpos.add_(torch::empty_like(qpos).uniform_(-scale, scale, generator));
  qvel.add_(torch::empty_like(qvel).uniform_(-scale, scale, generator));
}

TensorDict MujocoEnv::reset_impl(const TensorDict& tensordict) {
  auto& s = *impl_;
  const mjModel* m = s.model.get();
  std::vector<int64_t> which;
  if (auto mask = tensordict.find(specs::kReset)) {
    const auto flat = mask->to(torch::kCPU).to(torch::kBool).contiguous().reshape({s.n});
    const bool* selected = flat.data_ptr<bool>();
    for (int64_t i = 0; i < s.n; ++i) {
      if (selected[i]) which.push_back(i);
    }
  } else {
    for (int64_t i = 0; i < s.n; ++i) which.push_back(i);
  }
  const auto k = static_cast<int64_t>(which.size());
  if (k > 0) {
    auto qpos =
        torch::from_blob(const_cast<double*>(m->qpos0), {1, m->nq}, torch::kFloat64).repeat({k, 1});
    auto qvel = torch::zeros({k, m->nv}, torch::kFloat64);
    sample_reset_state(generator(), qpos, qvel);
    TORCH_INTERNAL_ASSERT(qpos.sizes() == c10::IntArrayRef({k, m->nq}) &&
                              qvel.sizes() == c10::IntArrayRef({k, m->nv}) &&
                              qpos.scalar_type() == torch::kFloat64 &&
                              qvel.scalar_type() == torch::kFloat64,
                          name(), ": sample_reset_state changed the shape or dtype of its states");
    qpos = qpos.contiguous();
    qvel = qvel.contiguous();
    const double* qp = qpos.data_ptr<double>();
    const double* qv = qvel.data_ptr<double>();
    s.parallel(k, [&](int64_t j) {
      const int64_t i = which[j];
      mjData* d = s.data[i].get();
      mj_resetData(m, d);
      std::copy_n(qp + j * m->nq, m->nq, d->qpos);
      std::copy_n(qv + j * m->nv, m->nv, d->qvel);
      mj_forward(m, d);
      s.steps[i] = 0;
    });
  }
  return TensorDict({{specs::kObservation, current_observation()}}, batch_size());
}

TensorDict MujocoEnv::step_impl(const TensorDict& tensordict) {
  // Flat float32 CPU views of the action and of every output, written by the workers.
  auto& s = *impl_;
  const mjModel* m = s.model.get();
  const int64_t nu = m->nu;
  const auto action =
      tensordict.get(action_key()).to(torch::kCPU, torch::kFloat32).contiguous().reshape({s.n, nu});
  auto obs = torch::empty({s.n, s.obs_dim}, torch::kFloat32);
  auto reward = torch::empty({s.n, 1}, torch::kFloat32);
  auto terminated = torch::empty({s.n, 1}, torch::kBool);
  auto truncated = torch::empty({s.n, 1}, torch::kBool);
  auto done = torch::empty({s.n, 1}, torch::kBool);
  const float* act = action.data_ptr<float>();
  float* obs_out = obs.data_ptr<float>();
  float* reward_out = reward.data_ptr<float>();
  bool* terminated_out = terminated.data_ptr<bool>();
  bool* truncated_out = truncated.data_ptr<bool>();
  bool* done_out = done.data_ptr<bool>();

  s.parallel(s.n, [&](int64_t i) {
    mjData* d = s.data[i].get();
    const MujocoView view(m, d);
    const float* a = act + i * nu;
    float* o = obs_out + i * s.obs_dim;
    auto& memo = s.memo[i];
    // frame_skip physics steps under the action, stopping at the first instability warning.
    before_step(view, a, memo);
    for (int64_t j = 0; j < nu; ++j) d->ctrl[j] = a[j];
    clear_warnings(d);
    t_last_warning.clear();
    bool unstable = false;
    for (int64_t k = 0; k < s.frame_skip && !unstable; ++k) {
      mj_step(m, d);
      unstable = has_instability_warning(d);
    }
    // The task's reward, termination and observation, from a state that must be finite.
    MujocoStepOutcome outcome;
    if (!unstable) {
      if (s.post_constraint) mj_rnePostConstraint(m, d);
      unstable = !all_finite(d->qpos, m->nq) || !all_finite(d->qvel, m->nv);
    }
    if (!unstable) {
      outcome = after_step(view, a, memo);
      write_observation(view, o);
      unstable = !std::isfinite(outcome.reward) || !all_finite(o, s.obs_dim);
    }
    // An unstable simulation ends its episode as truncated and restarts from the default state.
    s.steps[i] += 1;
    if (unstable) {
      s.instabilities.fetch_add(1);
      if (!s.logged_instability.exchange(true)) {
        logger().warn(
            "{}: simulation {} became unstable at step {} of its episode ({}); its episode "
            "ends as truncated and its state is reset to the model's default (later "
            "instabilities of this env are counted by instability_count(), not logged)",
            name(), i, s.steps[i],
            t_last_warning.empty() ? std::string("non-finite state") : t_last_warning);
      }
      mj_resetData(m, d);
      mj_forward(m, d);
      write_observation(view, o);
      outcome = MujocoStepOutcome{};
    }
    reward_out[i] = static_cast<float>(outcome.reward);
    terminated_out[i] = outcome.terminated && !unstable;
    truncated_out[i] = unstable || (s.max_episode_steps > 0 && s.steps[i] >= s.max_episode_steps);
    done_out[i] = terminated_out[i] || truncated_out[i];
  });

  // The outputs in the env's batch shape.
  const auto& batch = batch_size();
  return TensorDict({{specs::kObservation, s.visible(obs).view(with_tail(batch, s.visible_dim))},
                     {specs::kReward, reward.view(with_tail(batch, 1))},
                     {specs::kTerminated, terminated.view(with_tail(batch, 1))},
                     {specs::kTruncated, truncated.view(with_tail(batch, 1))},
                     {specs::kDone, done.view(with_tail(batch, 1))}},
                    batch);
}

std::string MujocoEnv::to_string() const {
  // EnvBase's one line, with the simulation's settings before its closing parenthesis.
  std::string base = EnvBase::to_string();
  if (!base.empty() && base.back() == ')') base.pop_back();
  std::ostringstream os;
  os << base << ", model=" << std::filesystem::path(impl_->model_path).filename().string()
     << ", frame_skip=" << impl_->frame_skip << ", dt=" << dt()
     << ", max_episode_steps=" << impl_->max_episode_steps
     << ", reset_noise_scale=" << impl_->reset_noise_scale << ", num_threads=" << num_threads()
     << (impl_->kept_obs.defined() ? ", mask_velocity=true" : "") << ")";
  return os.str();
}

std::string default_mujoco_asset_dir() {
  if (const char* env = std::getenv("TDRL_ENVS_ASSET_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
  // An installed library finds the models it was installed with, wherever the prefix moved.
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&default_mujoco_asset_dir), &info) != 0 &&
      info.dli_fname != nullptr) {
    const auto beside = std::filesystem::path(info.dli_fname).parent_path().parent_path() /
                        "share" / "tdrl" / "envs" / "assets";
    if (std::filesystem::is_directory(beside)) return beside.string();
  }
  if (std::filesystem::is_directory(detail::source_asset_dir())) return detail::source_asset_dir();
  return detail::install_asset_dir();
}

int64_t mujoco_warning_count() { return g_warning_count.load(std::memory_order_relaxed); }

}  // namespace tdrl::envs
