// EGreedyModule, AdditiveGaussianModule and OrnsteinUhlenbeckProcessModule: the exploration
// modules share their checks, annealing and printing, so they live in one translation unit.

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include <torch/torch.h>

#include <tdrl/modules/additive_gaussian.h>
#include <tdrl/modules/egreedy.h>
#include <tdrl/modules/ornstein_uhlenbeck.h>
#include <tensordict/errors.h>
#include <tensordict/nn/interaction_type.h>

namespace tdrl::modules {

namespace {

using tensordict::KeyError;
using tensordict::NestedKey;
using tensordict::shape_str;
using tensordict::ShapeError;
using tensordict::TensorDict;
using tensordict::TypeError;
using tensordict::ValueError;

// A double as Python prints it in a repr: "1.0", "0.1", "0.01".
std::string fmt(double value) {
  std::ostringstream os;
  os << std::setprecision(6) << value;
  std::string out = os.str();
  if (out.find_first_of(".eni") == std::string::npos) out += ".0";
  return out;
}

std::string spec_repr(const tdrl::specs::TensorSpec& spec) {
  return spec.type_name() + "(shape=" + shape_str(spec.shape()) + ")";
}

// LibTorch 1.13 takes c10::optional generators; the options hold std::optional.
c10::optional<at::Generator> to_c10(const std::optional<torch::Generator>& generator) {
  if (generator) return *generator;
  return c10::nullopt;
}

// Exploration happens only under an explicit kRandom interaction type.
bool exploring() {
  return tensordict::nn::interaction_type() == tensordict::nn::InteractionType::kRandom;
}

void require_spec(const tdrl::specs::TensorSpecPtr& spec, const std::string& name,
                  bool continuous) {
  if (!spec) {
    throw ValueError(name + ": the action spec is null; pass the env's action spec (e.g. " +
                     "std::make_shared<tdrl::envs::Bounded>(...))");
  }
  if (continuous && !spec->is_continuous()) {
    throw ValueError(name + ": the action spec " + spec_repr(*spec) +
                     " is discrete; this module adds real-valued noise and needs a continuous " +
                     "spec (Bounded or Unbounded with a floating dtype); use EGreedyModule for " +
                     "discrete actions");
  }
}

// Throws ValueError unless lo <= value <= hi (NaN fails).
void check_in_range(const std::string& name, const std::string& option, double value, double lo,
                    double hi, const std::string& range) {
  if (!(value >= lo && value <= hi)) {
    throw ValueError(name + ": " + option + " is " + fmt(value) + "; it must be in " + range);
  }
}

void check_at_least(const std::string& name, const std::string& option, int64_t value,
                    int64_t min) {
  if (value < min) {
    throw ValueError(name + ": " + option + " is " + std::to_string(value) +
                     "; it must be >= " + std::to_string(min));
  }
}

// Checks a linear schedule init -> end: end <= init, both in [0, max] (`range` prints it).
void check_schedule(const std::string& name, const std::string& what, double init, double end,
                    int64_t steps, double max, const std::string& range) {
  check_in_range(name, what + "_init", init, 0.0, max, range);
  check_in_range(name, what + "_end", end, 0.0, max, range);
  if (end > init) {
    throw ValueError(name + ": " + what + "_end (" + fmt(end) + ") is greater than " + what +
                     "_init (" + fmt(init) + "); " + what +
                     " must decrease over time or stay constant");
  }
  check_at_least(name, "annealing_num_steps", steps, 1);
}

// One scalar float64 buffer holding an annealed value.
torch::Tensor scalar_buffer(double value) { return torch::tensor(value, torch::kFloat64); }

// value <- max(end, value - frames * (init - end) / steps).
void anneal(const torch::Tensor& buffer, double init, double end, int64_t steps, int64_t frames,
            const std::string& name) {
  if (frames < 0) {
    throw ValueError(name + "::step: frames is " + std::to_string(frames) +
                     "; pass frames >= 0 (the number of frames collected since the last step)");
  }
  const double next = buffer.item<double>() -
                      static_cast<double>(frames) * (init - end) / static_cast<double>(steps);
  torch::NoGradGuard no_grad;
  buffer.fill_(std::max(end, next));
}

// The TensorDict holding `key`: its parent for a nested key.
TensorDict holder_of(const TensorDict& tensordict, const NestedKey& key) {
  return key.is_nested() ? tensordict.get_tensordict(key.parent()) : tensordict;
}

// `key` with its last part replaced by `name` (a key next to it).
NestedKey sibling(const NestedKey& key, const std::string& name) {
  return key.is_nested() ? key.parent().join(name) : NestedKey(name);
}

// Throws ShapeError unless `action`'s trailing dims equal the spec's shape.
void check_action_shape(const std::string& where, const NestedKey& key, const torch::Tensor& action,
                        const tdrl::specs::TensorSpec& spec) {
  const auto& expected = spec.shape();
  const auto n = static_cast<int64_t>(expected.size());
  const bool ok =
      action.dim() >= n && std::equal(expected.begin(), expected.end(), action.sizes().end() - n);
  if (!ok) {
    throw ShapeError(where + ": action " + key.repr() + " has shape " + shape_str(action.sizes()) +
                     "; its trailing dims must equal the action spec's shape " +
                     shape_str(expected) + " (any leading dims are batch dims); pass an action " +
                     "matching the spec, or build the module from the right spec");
  }
}

void check_floating(const std::string& where, const NestedKey& key, const torch::Tensor& action) {
  if (!action.is_floating_point()) {
    std::ostringstream os;
    os << where << ": action " << key.repr() << " has dtype " << action.dtype()
       << "; this module adds real-valued noise and needs a floating action";
    throw TypeError(os.str());
  }
}

// `mask` [*lead] viewed as [*lead, 1, ...] so that it broadcasts over a tensor of `dim` dims.
torch::Tensor expand_right(const torch::Tensor& mask, int64_t dim) {
  std::vector<int64_t> shape = mask.sizes().vec();
  shape.resize(static_cast<size_t>(dim), 1);
  return mask.reshape(shape);
}

// Copies the (unchanged) action into a distinct output TensorDict when the module is inactive.
void pass_through(const TensorDict& tensordict, const TensorDict& tensordict_out,
                  const NestedKey& key) {
  if (tensordict_out.is_same(tensordict)) return;
  if (auto action = tensordict.find(key)) tensordict_out.set(key, *action);
}

}  // namespace

// ---- EGreedyModule ------------------------------------------------------------------------------

EGreedyModuleImpl::EGreedyModuleImpl(tdrl::specs::TensorSpecPtr spec, EGreedyModuleOptions options)
    : TensorDictModuleBase("EGreedyModule"), spec_(std::move(spec)), options_(std::move(options)) {
  require_spec(spec_, name(), /*continuous=*/false);
  check_schedule(name(), "eps", options_.eps_init(), options_.eps_end(),
                 options_.annealing_num_steps(), 1.0, "[0, 1]");
  std::vector<NestedKey> in_keys{options_.action_key()};
  if (options_.action_mask_key()) {
    const bool maskable = dynamic_cast<const tdrl::specs::Categorical*>(spec_.get()) ||
                          dynamic_cast<const tdrl::specs::OneHot*>(spec_.get());
    if (!maskable) {
      throw ValueError(name() + ": action_mask_key " + options_.action_mask_key()->repr() +
                       " needs a Categorical or OneHot action spec, got " + spec_repr(*spec_) +
                       "; drop the mask key or use a discrete spec");
    }
    in_keys.push_back(*options_.action_mask_key());
  }
  set_keys(std::move(in_keys), {options_.action_key()});
  eps_ = register_buffer("eps", scalar_buffer(options_.eps_init()));
}

void EGreedyModuleImpl::step(int64_t frames) {
  anneal(eps_, options_.eps_init(), options_.eps_end(), options_.annealing_num_steps(), frames,
         name());
}

double EGreedyModuleImpl::eps() const { return eps_.item<double>(); }

void EGreedyModuleImpl::forward_impl(const TensorDict& tensordict,
                                     const TensorDict& tensordict_out) {
  const NestedKey& key = options_.action_key();
  if (!exploring()) {
    pass_through(tensordict, tensordict_out, key);
    return;
  }
  const std::string where = name() + "::forward";
  check_in_keys(tensordict, where);
  const torch::Tensor action = tensordict.get(key);
  check_action_shape(where, key, action, *spec_);

  // One draw per batch element of the TensorDict holding the action; a one-hot vector's last
  // dim is never a batch dim.
  const bool one_hot = dynamic_cast<const tdrl::specs::OneHot*>(spec_.get()) != nullptr;
  const int64_t batch_dims =
      std::min<int64_t>(holder_of(tensordict, key).batch_dims(), action.dim() - (one_hot ? 1 : 0));
  const std::vector<int64_t> cond_shape(action.sizes().begin(),
                                        action.sizes().begin() + batch_dims);
  const auto generator = to_c10(options_.generator());
  const torch::Tensor replace =
      torch::rand(cond_shape, generator, torch::TensorOptions().device(action.device())) < eps();
  const torch::Tensor random = random_actions(tensordict, action, replace);
  tensordict_out.set(key, torch::where(expand_right(replace, action.dim()), random, action));
}

torch::Tensor EGreedyModuleImpl::random_actions(const TensorDict& tensordict,
                                                const torch::Tensor& action,
                                                const torch::Tensor& replace) const {
  const auto out_options = torch::TensorOptions().dtype(action.dtype()).device(action.device());
  if (!options_.action_mask_key()) {
    return spec_->expand(action.sizes().vec())->rand(options_.generator()).to(out_options);
  }
  const std::string where = name() + "::forward";
  const NestedKey& mask_key = *options_.action_mask_key();
  const torch::Tensor mask = tensordict.get(mask_key);
  const auto* categorical = dynamic_cast<const tdrl::specs::Categorical*>(spec_.get());
  const int64_t n =
      categorical ? categorical->n() : dynamic_cast<const tdrl::specs::OneHot&>(*spec_).n();
  if (mask.scalar_type() != torch::kBool) {
    std::ostringstream os;
    os << where << ": action mask " << mask_key.repr() << " has dtype " << mask.dtype()
       << "; it must be bool (true = allowed)";
    throw TypeError(os.str());
  }
  // Each row of the mask holds the n choices of one action element.
  std::vector<int64_t> rows_shape = action.sizes().vec();
  if (!categorical) rows_shape.pop_back();
  std::vector<int64_t> expected = rows_shape;
  expected.push_back(n);
  if (mask.sizes().vec() != expected) {
    throw ShapeError(where + ": action mask " + mask_key.repr() + " has shape " +
                     shape_str(mask.sizes()) + "; expected " + shape_str(expected) +
                     " (the action's elements by the " + std::to_string(n) + " actions)");
  }
  const torch::Tensor rows = mask.reshape({-1, n});
  const torch::Tensor allowed_any = rows.any(-1);
  const torch::Tensor replaced_rows =
      expand_right(replace, static_cast<int64_t>(rows_shape.size())).expand(rows_shape).reshape(-1);
  const torch::Tensor stuck = replaced_rows.logical_and(allowed_any.logical_not());
  if (stuck.any().item<bool>()) {
    const int64_t flat = stuck.nonzero().index({0, 0}).item<int64_t>();
    std::vector<int64_t> index(rows_shape.size());
    int64_t rest = flat;
    for (int64_t d = static_cast<int64_t>(rows_shape.size()) - 1; d >= 0; --d) {
      index[d] = rest % rows_shape[d];
      rest /= rows_shape[d];
    }
    throw ValueError(where + ": action mask " + mask_key.repr() + " allows no action at index " +
                     shape_str(index) + ", which was drawn for exploration; every masked " +
                     "element needs at least one allowed action");
  }
  // Rows with no allowed action are never used; give them uniform weights so that multinomial
  // accepts them.
  const torch::Tensor weights =
      rows.to(torch::kFloat).masked_fill(allowed_any.logical_not().unsqueeze(-1), 1.0);
  const torch::Tensor index =
      torch::multinomial(weights, 1, /*replacement=*/true, to_c10(options_.generator()))
          .reshape(rows_shape);
  if (categorical) return index.to(out_options);
  return torch::one_hot(index, n).to(out_options);
}

void EGreedyModuleImpl::print_to(std::ostream& stream) const {
  stream << name() << "(eps=" << fmt(eps()) << ", eps_init=" << fmt(options_.eps_init())
         << ", eps_end=" << fmt(options_.eps_end())
         << ", annealing_num_steps=" << options_.annealing_num_steps()
         << ", action_key=" << options_.action_key().repr() << ", action_mask_key="
         << (options_.action_mask_key() ? options_.action_mask_key()->repr() : "None")
         << ", spec=" << spec_repr(*spec_) << ")";
}

// ---- AdditiveGaussianModule ---------------------------------------------------------------------

AdditiveGaussianModuleImpl::AdditiveGaussianModuleImpl(tdrl::specs::TensorSpecPtr spec,
                                                       AdditiveGaussianModuleOptions options)
    : TensorDictModuleBase("AdditiveGaussianModule"),
      spec_(std::move(spec)),
      options_(std::move(options)) {
  require_spec(spec_, name(), /*continuous=*/true);
  check_schedule(name(), "sigma", options_.sigma_init(), options_.sigma_end(),
                 options_.annealing_num_steps(), INFINITY, "[0, inf)");
  if (!std::isfinite(options_.mean())) {
    throw ValueError(name() + ": mean is " + fmt(options_.mean()) + "; it must be finite");
  }
  check_in_range(name(), "std", options_.std(), 0.0, INFINITY, "[0, inf)");
  set_keys({options_.action_key()}, {options_.action_key()});
  sigma_ = register_buffer("sigma", scalar_buffer(options_.sigma_init()));
}

void AdditiveGaussianModuleImpl::step(int64_t frames) {
  anneal(sigma_, options_.sigma_init(), options_.sigma_end(), options_.annealing_num_steps(),
         frames, name());
}

double AdditiveGaussianModuleImpl::sigma() const { return sigma_.item<double>(); }

void AdditiveGaussianModuleImpl::forward_impl(const TensorDict& tensordict,
                                              const TensorDict& tensordict_out) {
  const NestedKey& key = options_.action_key();
  if (!exploring()) {
    pass_through(tensordict, tensordict_out, key);
    return;
  }
  const std::string where = name() + "::forward";
  check_in_keys(tensordict, where);
  const torch::Tensor action = tensordict.get(key);
  check_action_shape(where, key, action, *spec_);
  check_floating(where, key, action);

  const auto options = torch::TensorOptions().dtype(action.dtype()).device(action.device());
  const torch::Tensor noise =
      torch::randn(action.sizes(), to_c10(options_.generator()), options) * options_.std() +
      options_.mean();
  torch::Tensor result = action + noise * sigma();
  if (options_.safe()) result = spec_->project(result).to(action.dtype());
  tensordict_out.set(key, result);
}

void AdditiveGaussianModuleImpl::print_to(std::ostream& stream) const {
  stream << name() << "(sigma=" << fmt(sigma()) << ", sigma_init=" << fmt(options_.sigma_init())
         << ", sigma_end=" << fmt(options_.sigma_end())
         << ", annealing_num_steps=" << options_.annealing_num_steps()
         << ", mean=" << fmt(options_.mean()) << ", std=" << fmt(options_.std())
         << ", action_key=" << options_.action_key().repr()
         << ", safe=" << (options_.safe() ? "True" : "False") << ", spec=" << spec_repr(*spec_)
         << ")";
}

// ---- OrnsteinUhlenbeckProcessModule -------------------------------------------------------------

OrnsteinUhlenbeckProcessModuleImpl::OrnsteinUhlenbeckProcessModuleImpl(
    tdrl::specs::TensorSpecPtr spec, OrnsteinUhlenbeckProcessModuleOptions options)
    : TensorDictModuleBase("OrnsteinUhlenbeckProcessModule"),
      spec_(std::move(spec)),
      options_(std::move(options)),
      noise_key_(sibling(options_.action_key(), kOuPrevNoiseKey)),
      steps_key_(sibling(options_.action_key(), kOuStepsKey)) {
  require_spec(spec_, name(), /*continuous=*/true);
  check_schedule(name(), "eps", options_.eps_init(), options_.eps_end(),
                 options_.annealing_num_steps(), INFINITY, "[0, inf)");
  check_in_range(name(), "theta", options_.theta(), 0.0, INFINITY, "[0, inf)");
  if (!std::isfinite(options_.mu())) {
    throw ValueError(name() + ": mu is " + fmt(options_.mu()) + "; it must be finite");
  }
  check_in_range(name(), "sigma", options_.sigma(), 0.0, INFINITY, "[0, inf)");
  if (!(options_.dt() > 0.0 && std::isfinite(options_.dt()))) {
    throw ValueError(name() + ": dt is " + fmt(options_.dt()) + "; it must be > 0");
  }
  if (options_.sigma_min()) {
    check_in_range(name(), "sigma_min", *options_.sigma_min(), 0.0, options_.sigma(),
                   "[0, sigma] = [0, " + fmt(options_.sigma()) + "]");
  }
  check_at_least(name(), "n_steps_annealing", options_.n_steps_annealing(), 1);

  const auto& shape = spec_->shape();
  if (options_.x0().defined()) {
    const torch::Tensor& x0 = options_.x0();
    const auto n = static_cast<int64_t>(shape.size());
    bool ok = x0.dim() <= n;
    for (int64_t i = 1; ok && i <= x0.dim(); ++i) {
      const int64_t size = x0.size(-i);
      ok = size == 1 || size == shape[static_cast<size_t>(n - i)];
    }
    if (!ok) {
      throw ShapeError(name() + ": x0 has shape " + shape_str(x0.sizes()) +
                       ", which does not broadcast to the action spec's shape " + shape_str(shape) +
                       "; pass a scalar or a tensor broadcastable to it");
    }
    x0_ = x0.to(torch::kFloat64).expand(shape).clone();
  } else {
    x0_ = torch::zeros(shape, torch::kFloat64);
  }
  set_keys({options_.action_key()}, {options_.action_key(), noise_key_, steps_key_});
  eps_ = register_buffer("eps", scalar_buffer(options_.eps_init()));
}

void OrnsteinUhlenbeckProcessModuleImpl::step(int64_t frames) {
  anneal(eps_, options_.eps_init(), options_.eps_end(), options_.annealing_num_steps(), frames,
         name());
}

double OrnsteinUhlenbeckProcessModuleImpl::eps() const { return eps_.item<double>(); }

double OrnsteinUhlenbeckProcessModuleImpl::current_sigma(int64_t n_steps) const {
  if (!options_.sigma_min()) return options_.sigma();
  const double sigma_min = *options_.sigma_min();
  const double slope =
      (options_.sigma() - sigma_min) / static_cast<double>(options_.n_steps_annealing());
  return std::max(sigma_min, options_.sigma() - slope * static_cast<double>(n_steps));
}

void OrnsteinUhlenbeckProcessModuleImpl::forward_impl(const TensorDict& tensordict,
                                                      const TensorDict& tensordict_out) {
  const NestedKey& key = options_.action_key();
  if (!exploring()) {
    pass_through(tensordict, tensordict_out, key);
    return;
  }
  const std::string where = name() + "::forward";
  check_in_keys(tensordict, where);
  const torch::Tensor action = tensordict.get(key);
  check_action_shape(where, key, action, *spec_);
  check_floating(where, key, action);
  const auto options = torch::TensorOptions().dtype(action.dtype()).device(action.device());
  const std::vector<int64_t> batch = holder_of(tensordict, key).batch_size();
  const torch::Tensor x0 = x0_.to(options).expand(action.sizes());

  // Restart flags per batch element of the action's TensorDict, read from the root.
  std::optional<torch::Tensor> restart;
  if (auto is_init = tensordict.find(options_.is_init_key())) {
    const std::vector<int64_t> root = tensordict.batch_size();
    std::vector<int64_t> with_one = root;
    with_one.push_back(1);
    const std::vector<int64_t> got = is_init->sizes().vec();
    if (got != root && got != with_one) {
      throw ShapeError(where + ": is_init " + options_.is_init_key().repr() + " has shape " +
                       shape_str(got) + "; expected " + shape_str(with_one) + " or " +
                       shape_str(root) + " (one flag per batch element)");
    }
    std::vector<int64_t> view = root;
    view.resize(batch.size(), 1);
    restart = is_init->to(torch::kBool).reshape(view).expand(batch).to(action.device());
  }

  torch::Tensor prev_noise;
  torch::Tensor steps;
  const auto stored_noise = tensordict.find(noise_key_);
  const auto stored_steps = tensordict.find(steps_key_);
  if (stored_noise && stored_steps) {
    if (stored_noise->sizes() != action.sizes()) {
      throw ShapeError(where + ": " + noise_key_.repr() + " has shape " +
                       shape_str(stored_noise->sizes()) + " but the action has shape " +
                       shape_str(action.sizes()) + "; delete the stale process state or set " +
                       options_.is_init_key().repr());
    }
    if (stored_steps->sizes().vec() != batch) {
      throw ShapeError(where + ": " + steps_key_.repr() + " has shape " +
                       shape_str(stored_steps->sizes()) + "; expected the batch size " +
                       shape_str(batch) + "; delete the stale process state");
    }
    prev_noise = stored_noise->to(options);
    steps = stored_steps->to(torch::TensorOptions().dtype(torch::kInt64).device(action.device()));
    if (restart) {
      prev_noise = torch::where(expand_right(*restart, action.dim()), x0, prev_noise);
      steps = steps.masked_fill(*restart, 0);
    }
  } else {
    prev_noise = x0.clone();
    steps =
        torch::zeros(batch, torch::TensorOptions().dtype(torch::kInt64).device(action.device()));
  }

  torch::Tensor sigma;
  if (options_.sigma_min()) {
    const double sigma_min = *options_.sigma_min();
    const double slope =
        (options_.sigma() - sigma_min) / static_cast<double>(options_.n_steps_annealing());
    sigma = expand_right(
        (options_.sigma() - slope * steps.to(torch::kFloat64)).clamp_min(sigma_min).to(options),
        action.dim());
  } else {
    sigma = torch::full({}, options_.sigma(), options);
  }
  const double dt = options_.dt();
  const torch::Tensor noise =
      prev_noise + options_.theta() * (options_.mu() - prev_noise) * dt +
      sigma * std::sqrt(dt) * torch::randn(action.sizes(), to_c10(options_.generator()), options);
  torch::Tensor result = action + eps() * noise;
  if (options_.safe()) result = spec_->project(result).to(action.dtype());

  tensordict_out.set(key, result);
  tensordict_out.set(noise_key_, noise);
  tensordict_out.set(steps_key_, steps + 1);
}

void OrnsteinUhlenbeckProcessModuleImpl::print_to(std::ostream& stream) const {
  stream << name() << "(eps=" << fmt(eps()) << ", eps_init=" << fmt(options_.eps_init())
         << ", eps_end=" << fmt(options_.eps_end())
         << ", annealing_num_steps=" << options_.annealing_num_steps()
         << ", theta=" << fmt(options_.theta()) << ", mu=" << fmt(options_.mu())
         << ", sigma=" << fmt(options_.sigma()) << ", dt=" << fmt(options_.dt())
         << ", sigma_min=" << (options_.sigma_min() ? fmt(*options_.sigma_min()) : "None")
         << ", n_steps_annealing=" << options_.n_steps_annealing()
         << ", action_key=" << options_.action_key().repr()
         << ", is_init_key=" << options_.is_init_key().repr()
         << ", safe=" << (options_.safe() ? "True" : "False") << ", spec=" << spec_repr(*spec_)
         << ")";
}

}  // namespace tdrl::modules
