#include <tensordict/nn/functional.h>

#include <cstdint>
#include <string>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <tensordict/errors.h>
#include <tensordict/nested_key.h>

namespace tensordict::nn {

namespace {

NestedKey path_key(const std::vector<std::string>& path) {
  TORCH_INTERNAL_ASSERT(!path.empty());
  NestedKey key(path.front());
  for (size_t i = 1; i < path.size(); ++i) key = key.join(NestedKey(path[i]));
  return key;
}

std::string keys_list(const std::vector<NestedKey>& keys) {
  std::string out = "[";
  for (size_t i = 0; i < keys.size(); ++i) out += (i ? ", " : "") + keys[i].to_string();
  return out + "]";
}

std::string dtype_str(const torch::Tensor& t) {
  return std::string(c10::toString(t.scalar_type()));
}

const char* value_kind(const Value& value) {
  if (std::holds_alternative<torch::Tensor>(value)) return "a tensor";
  if (std::holds_alternative<TensorDict>(value)) return "a TensorDict";
  return "non-tensor data";
}

// Throws unless `got` has `expected_shape` and `reference`'s dtype and layout (and its device
// when `check_device`): the shared check of to_module and batched_mlp_forward.
void check_tensor(const std::string& op, const NestedKey& key, const std::string& what,
                  const torch::Tensor& got, c10::IntArrayRef expected_shape,
                  const torch::Tensor& reference, bool check_device) {
  TDRL_CHECK(got.defined(), ValueError, op, ": key ", key.to_string(),
             " holds an undefined tensor; expected the ", what, " of shape ",
             shape_str(expected_shape));
  TDRL_CHECK(got.scalar_type() == reference.scalar_type(), TypeError, op, ": key ", key.to_string(),
             ": expected dtype ", dtype_str(reference), " (the module ", what, "'s), got ",
             dtype_str(got), "; cast it with .to(", dtype_str(reference), ")");
  TDRL_CHECK(got.layout() == reference.layout(), TypeError, op, ": key ", key.to_string(),
             ": expected a tensor of the module ", what,
             "'s layout, got another layout; convert it (e.g. .to_dense())");
  if (got.sizes() != expected_shape) {
    std::string hint;
    if (got.dim() == static_cast<int64_t>(expected_shape.size()) + 1 &&
        got.sizes().slice(1) == expected_shape)
      hint = "; it looks like a stacked ensemble: pass one member, params.index({i})";
    throw ShapeError(op + ": key " + key.to_string() + ": expected shape " +
                     shape_str(expected_shape) + " (the module " + what + "'s), got " +
                     shape_str(got.sizes()) + hint);
  }
  TDRL_CHECK(!(check_device && got.device() != reference.device()), DeviceError, op, ": key ",
             key.to_string(), ": expected device ", reference.device().str(), " (the module ", what,
             "'s), got ", got.device().str(), "; move params with .to(device)");
}

// ---- from_module --------------------------------------------------------------------------

TensorDict from_module_tree(const torch::nn::Module& module, bool include_buffers) {
  TensorDict td;
  for (const auto& item : module.named_parameters(/*recurse=*/false))
    td.set(item.key(), item.value());
  if (include_buffers)
    for (const auto& item : module.named_buffers(/*recurse=*/false))
      td.set(item.key(), item.value());
  for (const auto& child : module.named_children()) {
    TensorDict sub = from_module_tree(*child.value(), include_buffers);
    if (!sub.is_empty()) td.set(child.key(), sub);
  }
  return td;
}

// ---- to_module ----------------------------------------------------------------------------

const char* const kToModule = "to_module";

struct PlannedSwap {
  torch::Tensor target;
  torch::Tensor value;
};

std::vector<std::string> entry_names(const torch::nn::Module& module) {
  std::vector<std::string> names;
  for (const auto& item : module.named_parameters(false)) names.push_back(item.key());
  for (const auto& item : module.named_buffers(false)) names.push_back(item.key());
  for (const auto& item : module.named_children()) names.push_back(item.key());
  return names;
}

// Throws KeyError naming the first parameter of `module` (under `path`) when `strict` asks for
// every parameter and `params` (null: absent altogether) lacks one.
void check_complete(const TensorDict* params, const torch::nn::Module& module,
                    std::vector<std::string>& path) {
  for (const auto& item : module.named_parameters(false)) {
    if (params && params->contains(item.key())) continue;
    path.push_back(item.key());
    const NestedKey key = path_key(path);
    throw KeyError(std::string(kToModule) + ": parameter " + key.to_string() + " of the module (" +
                   module.name() +
                   ") is missing from params; include it (from_module gives every parameter) or "
                   "pass ToModuleOptions().strict(false) to keep the module's own value");
  }
  for (const auto& child : module.named_children()) {
    if (params && params->contains(child.key())) continue;  // checked while planning
    path.push_back(child.key());
    check_complete(nullptr, *child.value(), path);
    path.pop_back();
  }
}

// Matches `params` against `module` (under `path`) and appends the swaps; throws, naming the
// key path, at the first mismatch. Nothing is modified.
void plan_swaps(const TensorDict& params, torch::nn::Module& module, std::vector<std::string>& path,
                bool strict, std::vector<PlannedSwap>& out) {
  const auto own_params = module.named_parameters(false);
  const auto own_buffers = module.named_buffers(false);
  const auto children = module.named_children();
  for (const auto& item : params.items()) {
    const std::string& name = item.first.front();
    path.push_back(name);
    const NestedKey key = path_key(path);
    const torch::Tensor* parameter = own_params.find(name);
    const torch::Tensor* buffer = parameter ? nullptr : own_buffers.find(name);
    if (parameter || buffer) {
      const char* what = parameter ? "parameter" : "buffer";
      const torch::Tensor& target = parameter ? *parameter : *buffer;
      const auto* value = std::get_if<torch::Tensor>(&item.second);
      TDRL_CHECK(value, TypeError, std::string(kToModule), ": key ", key.to_string(), " holds ",
                 value_kind(item.second), " but the module has a ", what, " there (shape ",
                 shape_str(target.sizes()), "); pass a tensor");
      check_tensor(kToModule, key, what, *value, target.sizes(), target, /*check_device=*/true);
      out.push_back({target, *value});
    } else if (const auto* child = children.find(name)) {
      const auto* sub = std::get_if<TensorDict>(&item.second);
      TDRL_CHECK(sub, TypeError, std::string(kToModule), ": key ", key.to_string(), " holds ",
                 value_kind(item.second), " but the module has a submodule there (",
                 (*child)->name(), "); pass a nested TensorDict of its parameters");
      plan_swaps(*sub, **child, path, strict, out);
    } else {
      const std::string where =
          path.size() == 1
              ? "the module"
              : "submodule " +
                    path_key(std::vector<std::string>(path.begin(), path.end() - 1)).to_string();
      throw KeyError(std::string(kToModule) + ": key " + key.to_string() +
                     " names no parameter, buffer or submodule of " + where + " (" + module.name() +
                     "); valid names there: " + closest_names(name, entry_names(module)));
    }
    path.pop_back();
  }
  if (strict) check_complete(&params, module, path);
}

// Added to the version of a module tensor's counter when a swap installs a fresh counter, so
// that versions recorded under the swap differ from the original counter's. Odd: repeated
// (nested) swaps do not wrap around to a version in use.
constexpr uint32_t kSwapVersionOffset = 0x3FFFFFFBu;

// ---- batched_mlp_forward ------------------------------------------------------------------

const char* const kBatched = "batched_mlp_forward";

enum class LayerKind { kLinear, kLayerNorm, kElementwise, kDropout };

struct Layer {
  int64_t index;
  std::string name;
  LayerKind kind;
  torch::nn::AnyModule* any;
  std::shared_ptr<torch::nn::Module> module;
  // The stacked parameters, by parameter name ("weight", "bias").
  std::vector<std::pair<std::string, torch::Tensor>> params;

  torch::Tensor param(const std::string& param_name) const {
    for (const auto& p : params)
      if (p.first == param_name) return p.second;
    return {};
  }
};

const char* const kSupported =
    "Linear, LayerNorm, ReLU, ReLU6, LeakyReLU, ELU, SELU, CELU, GELU, SiLU, Mish, Sigmoid, Tanh, "
    "Softplus, Softsign, Hardtanh, Tanhshrink, Dropout, AlphaDropout, Identity";

template <class... Ts>
bool is_any_of(const torch::nn::Module& module) {
  return ((module.as<Ts>() != nullptr) || ...);
}

LayerKind classify(const torch::nn::Module& module, int64_t index, const std::string& name) {
  namespace tnn = torch::nn;
  if (module.as<tnn::Linear>()) return LayerKind::kLinear;
  if (module.as<tnn::LayerNorm>()) return LayerKind::kLayerNorm;
  if (is_any_of<tnn::Dropout, tnn::AlphaDropout>(module)) return LayerKind::kDropout;
  if (is_any_of<tnn::ReLU, tnn::ReLU6, tnn::LeakyReLU, tnn::ELU, tnn::SELU, tnn::CELU, tnn::GELU,
                tnn::SiLU, tnn::Mish, tnn::Sigmoid, tnn::Tanh, tnn::Softplus, tnn::Softsign,
                tnn::Hardtanh, tnn::Tanhshrink, tnn::Identity>(module))
    return LayerKind::kElementwise;
  throw ValueError(std::string(kBatched) + ": module " + std::to_string(index) + " ('" + name +
                   "', " + module.name() + ") is not supported; supported: " + kSupported +
                   ". Use ensemble_forward_loop for other architectures");
}

// Reads and checks the stacked parameters of every layer of `mlp`; throws before anything is
// computed.
std::vector<Layer> collect_layers(torch::nn::SequentialImpl& mlp, const TensorDict& stacked,
                                  int64_t n) {
  const auto children = mlp.named_children();
  TORCH_INTERNAL_ASSERT(children.size() == mlp.size());
  std::vector<Layer> layers;
  std::vector<NestedKey> valid_top;
  int64_t index = 0;
  for (auto& any : mlp) {
    const auto& child = children[index];
    TORCH_INTERNAL_ASSERT(child.value().get() == any.ptr().get());
    Layer layer{index, child.key(), classify(*any.ptr(), index, child.key()), &any, any.ptr(), {}};
    const auto expected = layer.module->named_parameters(false);
    if (!expected.is_empty()) {
      valid_top.emplace_back(layer.name);
      const auto entry = stacked.find_value(layer.name);
      TDRL_CHECK(entry, KeyError, std::string(kBatched), ": stacked_params has no key '",
                 layer.name, "' for the parameters of module ", std::to_string(index), " (",
                 layer.module->name(), "); its keys: ", keys_list(stacked.keys()),
                 " (make_ensemble_params of the members gives the right layout)");
      const auto* sub = std::get_if<TensorDict>(&*entry);
      TDRL_CHECK(sub, TypeError, std::string(kBatched), ": key '", layer.name, "' holds ",
                 value_kind(*entry), "; expected a TensorDict of module ", std::to_string(index),
                 "'s parameters");
      std::vector<std::string> names;
      for (const auto& p : expected) {
        const NestedKey key{layer.name, p.key()};
        names.push_back(p.key());
        const auto value = sub->find_value(p.key());
        TDRL_CHECK(value, KeyError, std::string(kBatched), ": key ", key.to_string(),
                   " is missing from stacked_params (module ", std::to_string(index), ", ",
                   layer.module->name(), ", has parameters ",
                   (closest_names(p.key(), expected.keys())), ")");
        const auto* tensor = std::get_if<torch::Tensor>(&*value);
        TDRL_CHECK(tensor, TypeError, std::string(kBatched), ": key ", key.to_string(), " holds ",
                   value_kind(*value), "; expected a tensor");
        std::vector<int64_t> shape{n};
        shape.insert(shape.end(), p.value().sizes().begin(), p.value().sizes().end());
        check_tensor(kBatched, key, "parameter", *tensor, shape, p.value(),
                     /*check_device=*/false);
        layer.params.emplace_back(p.key(), *tensor);
      }
      for (const auto& key : sub->keys())
        TDRL_CHECK(expected.contains(key.front()), KeyError, std::string(kBatched), ": key ",
                   (NestedKey{layer.name, key}.to_string()), " names no parameter of module ",
                   std::to_string(index), " (", layer.module->name(),
                   "); valid names there: ", (closest_names(key.front(), names)));
    }
    layers.push_back(std::move(layer));
    ++index;
  }
  for (const auto& key : stacked.keys()) {
    bool known = false;
    for (const auto& v : valid_top) known = known || v == key;
    if (!known) {
      std::vector<std::string> names;
      for (const auto& v : valid_top) names.push_back(v.front());
      throw KeyError(std::string(kBatched) + ": key " + key.to_string() +
                     " names no layer with parameters of the MLP; valid names: " +
                     closest_names(key.front(), names));
    }
  }
  return layers;
}

// Follows the feature size through the layers; throws ShapeError at the first mismatch.
void check_features(const std::vector<Layer>& layers, int64_t features,
                    const torch::Tensor& input) {
  for (const auto& layer : layers) {
    const std::string where = std::string(kBatched) + ": module " + std::to_string(layer.index) +
                              " ('" + layer.name + "', " + layer.module->name() + ")";
    if (layer.kind == LayerKind::kLinear) {
      const auto& opts = layer.module->as<torch::nn::Linear>()->options;
      TDRL_CHECK(opts.in_features() == features, ShapeError, where, " expects ",
                 std::to_string(opts.in_features()), " input features, got ",
                 std::to_string(features), " (input shape ", shape_str(input.sizes()), ")");
      features = opts.out_features();
    } else if (layer.kind == LayerKind::kLayerNorm) {
      const auto& shape = layer.module->as<torch::nn::LayerNorm>()->options.normalized_shape();
      TDRL_CHECK(!(shape.size() != 1 || shape[0] != features), ShapeError, where,
                 " normalizes over ", shape_str(shape), "; expected [", std::to_string(features),
                 "] (only a LayerNorm over the last dim fits an MLP)");
    }
  }
}

}  // namespace

// ---- from_module --------------------------------------------------------------------------

TensorDict from_module(const torch::nn::Module& module, const FromModuleOptions& options) {
  return from_module_tree(module, options.include_buffers());
}

// ---- ParamsGuard and to_module ------------------------------------------------------------

ParamsGuard::ParamsGuard(ParamsGuard&& other) noexcept : swaps_(std::move(other.swaps_)) {
  other.swaps_.clear();
}

ParamsGuard& ParamsGuard::operator=(ParamsGuard&& other) noexcept {
  if (this != &other) {
    restore();
    swaps_ = std::move(other.swaps_);
    other.swaps_.clear();
  }
  return *this;
}

ParamsGuard::~ParamsGuard() { restore(); }

void ParamsGuard::swap_in(const torch::Tensor& target, const torch::Tensor& value) {
  auto* impl = target.unsafeGetTensorImpl();
  const bool versioned = !target.is_inference();
  Swap swap{target, target.variable_data(),
            versioned ? impl->version_counter() : c10::VariableVersion(), versioned};
  // A shallow copy of the value, so that swapping a tensor into itself is harmless.
  target.set_data(value.variable_data());
  // A fresh version counter for the swap: restore() bumps it, so graphs that saved the
  // swapped tensor refuse to backpropagate through the restored values.
  if (versioned)
    impl->set_version_counter(
        c10::VariableVersion(swap.original_version.current_version() + kSwapVersionOffset));
  swaps_.push_back(std::move(swap));
}

void ParamsGuard::restore() {
  for (auto it = swaps_.rbegin(); it != swaps_.rend(); ++it) {
    auto* impl = it->target.unsafeGetTensorImpl();
    if (it->versioned) impl->bump_version();
    it->target.set_data(it->original);
    if (it->versioned) impl->set_version_counter(it->original_version);
  }
  swaps_.clear();
}

ParamsGuard to_module(const TensorDict& params, torch::nn::Module& module,
                      const ToModuleOptions& options) {
  std::vector<PlannedSwap> plan;
  std::vector<std::string> path;
  plan_swaps(params, module, path, options.strict(), plan);
  ParamsGuard guard;
  guard.swaps_.reserve(plan.size());
  // Should a swap throw, unwinding `guard` restores the ones already made.
  for (const auto& swap : plan) guard.swap_in(swap.target, swap.value);
  return guard;
}

// ---- Ensembles ----------------------------------------------------------------------------

TensorDict stack_params(const std::vector<TensorDict>& params) {
  static const std::string kOp = "stack_params";
  TDRL_CHECK(!params.empty(), ValueError, kOp,
             ": no TensorDict to stack; pass one per ensemble member");
  const TensorDict& first = params.front();
  const auto keys = first.keys(/*include_nested=*/true, /*leaves_only=*/true);
  const std::unordered_set<NestedKey> key_set(keys.begin(), keys.end());
  for (size_t m = 1; m < params.size(); ++m) {
    TDRL_CHECK(params[m].batch_size() == first.batch_size(), ShapeError, kOp, ": member ",
               std::to_string(m), " has batch_size ", shape_str(params[m].batch_size()),
               " but member 0 has ", shape_str(first.batch_size()),
               "; every member needs the same");
    const auto member_keys = params[m].keys(true, true);
    for (const auto& key : keys)
      TDRL_CHECK(params[m].contains(key), KeyError, kOp, ": member ", std::to_string(m),
                 " lacks key ", key.to_string(), " that member 0 has; member ", std::to_string(m),
                 "'s keys: ", keys_list(member_keys),
                 " (members must be modules of one architecture)");
    for (const auto& key : member_keys)
      TDRL_CHECK(key_set.count(key), KeyError, kOp, ": member ", std::to_string(m), " has key ",
                 key.to_string(), " that member 0 lacks; member 0's keys: ", keys_list(keys),
                 " (members must be modules of one architecture)");
  }
  std::vector<std::pair<NestedKey, torch::Tensor>> leaves;
  for (const auto& key : keys) {
    std::vector<torch::Tensor> tensors;
    bool requires_grad = false;
    for (size_t m = 0; m < params.size(); ++m) {
      const Value value = params[m].get_value(key);
      const auto* t = std::get_if<torch::Tensor>(&value);
      TDRL_CHECK(t, TypeError, kOp, ": member ", std::to_string(m), "'s key ", key.to_string(),
                 " holds ", value_kind(value), "; parameters must be tensors");
      if (m > 0) {
        const auto& ref = tensors.front();
        const std::string what =
            kOp + ": key " + key.to_string() + " of member " + std::to_string(m) + " has ";
        TDRL_CHECK(t->sizes() == ref.sizes(), ShapeError, what, "shape ", shape_str(t->sizes()),
                   " but member 0's has ", shape_str(ref.sizes()));
        TDRL_CHECK(t->scalar_type() == ref.scalar_type(), TypeError, what, "dtype ", dtype_str(*t),
                   " but member 0's has ", dtype_str(ref));
        TDRL_CHECK(t->device() == ref.device(), DeviceError, what, "device ", t->device().str(),
                   " but member 0's has ", ref.device().str());
      }
      requires_grad = requires_grad || t->requires_grad();
      tensors.push_back(t->detach());
    }
    torch::Tensor stacked;
    {
      torch::NoGradGuard no_grad;
      stacked = torch::stack(tensors).contiguous();
    }
    if (requires_grad) stacked.requires_grad_(true);
    leaves.emplace_back(key, stacked);
  }
  BatchSize batch{static_cast<int64_t>(params.size())};
  batch.insert(batch.end(), first.batch_size().begin(), first.batch_size().end());
  TensorDict out = TensorDict::empty(batch);
  for (const auto& leaf : leaves) out.set(leaf.first, leaf.second);
  return out;
}

TensorDict make_ensemble_params(const std::vector<std::shared_ptr<torch::nn::Module>>& members,
                                const FromModuleOptions& options) {
  std::vector<TensorDict> params;
  params.reserve(members.size());
  for (size_t m = 0; m < members.size(); ++m) {
    TDRL_CHECK(members[m], ValueError, "make_ensemble_params: member ", std::to_string(m),
               " is a null module");
    params.push_back(from_module(*members[m], options));
  }
  return stack_params(params);
}

torch::Tensor ensemble_forward_loop(torch::nn::Module& module, const TensorDict& stacked_params,
                                    const std::function<torch::Tensor(int64_t member)>& call,
                                    const ToModuleOptions& options) {
  static const std::string kOp = "ensemble_forward_loop";
  TDRL_CHECK(stacked_params.batch_dims() != 0, ShapeError, kOp,
             ": stacked_params has batch_size []; expected [N, ...] with one entry "
             "per member (see make_ensemble_params)");
  const int64_t n = stacked_params.batch_size()[0];
  TDRL_CHECK(n != 0, ValueError, kOp, ": stacked_params has no member (batch_size[0] is 0)");
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> outputs;
  outputs.reserve(n);
  for (int64_t i = 0; i < n; ++i) {
    torch::Tensor out;
    {
      ParamsGuard guard = to_module(stacked_params.index({i}), module, options);
      out = call(i);
    }
    TDRL_CHECK(out.defined(), ValueError, kOp, ": the call for member ", std::to_string(i),
               " returned an undefined tensor; return the module's output");
    TDRL_CHECK(!(i > 0 && out.sizes() != outputs.front().sizes()), ShapeError, kOp, ": member ",
               std::to_string(i), "'s output has shape ", shape_str(out.sizes()),
               " but member 0's has ", shape_str(outputs.front().sizes()), "; outputs must stack");
    outputs.push_back(std::move(out));
  }
  return torch::stack(outputs);
}

torch::Tensor batched_mlp_forward(const torch::nn::Sequential& mlp,
                                  const TensorDict& stacked_params, const torch::Tensor& input,
                                  const BatchedMlpOptions& options) {
  TDRL_CHECK(stacked_params.batch_dims() == 1, ShapeError, std::string(kBatched),
             ": stacked_params has batch_size ", shape_str(stacked_params.batch_size()),
             "; expected [N], one entry per member (see make_ensemble_params)");
  const int64_t n = stacked_params.batch_size()[0];
  const auto impl = mlp.ptr();
  const std::vector<Layer> layers = collect_layers(*impl, stacked_params, n);

  const bool shared_input = options.shared_input();
  TDRL_CHECK(!(shared_input ? input.dim() < 1 : (input.dim() < 2 || input.size(0) != n)),
             ShapeError, std::string(kBatched), ": input has shape ", shape_str(input.sizes()),
             (shared_input ? "; expected [*batch, in] (shared_input)"
                           : "; expected [N, *batch, in] with N = " + std::to_string(n) +
                                 " (one input per member); pass "
                                 "BatchedMlpOptions().shared_input(true) to give every "
                                 "member the same [*batch, in] input"));
  check_features(layers, input.size(-1), input);

  // Work on [N, M, features] (or [M, features] while every member still sees the same values),
  // M being the product of the batch dims.
  const auto sizes = input.sizes();
  const std::vector<int64_t> batch(sizes.begin() + (shared_input ? 0 : 1), sizes.end() - 1);
  int64_t m = 1;
  for (int64_t d : batch) m *= d;
  bool shared = shared_input;
  torch::Tensor h =
      shared ? input.reshape({m, input.size(-1)}) : input.reshape({n, m, input.size(-1)});
  for (const auto& layer : layers) {
    switch (layer.kind) {
      case LayerKind::kLinear: {
        const torch::Tensor w = layer.param("weight");  // [N, out, in]
        const torch::Tensor b = layer.param("bias");    // [N, out] or undefined
        const int64_t out = w.size(1);
        if (shared) {
          // One GEMM for all members: [M, in] x [in, N * out].
          const torch::Tensor w_all = w.reshape({n * out, w.size(2)}).t();
          const torch::Tensor y =
              b.defined() ? torch::addmm(b.reshape({n * out}), h, w_all) : h.matmul(w_all);
          h = y.view({m, n, out}).transpose(0, 1);
          shared = false;
        } else {
          h = b.defined() ? torch::baddbmm(b.unsqueeze(1), h, w.transpose(1, 2))
                          : torch::bmm(h, w.transpose(1, 2));
        }
        break;
      }
      case LayerKind::kLayerNorm: {
        const auto& opts = layer.module->as<torch::nn::LayerNorm>()->options;
        const torch::Tensor normed =
            torch::layer_norm(h, {h.size(-1)}, /*weight=*/{}, /*bias=*/{}, opts.eps());
        if (opts.elementwise_affine()) {
          const torch::Tensor w = layer.param("weight").unsqueeze(1);  // [N, 1, features]
          const torch::Tensor b = layer.param("bias").unsqueeze(1);
          h = torch::addcmul(b, shared ? normed.unsqueeze(0) : normed, w);
          shared = false;
        } else {
          h = normed;
        }
        break;
      }
      case LayerKind::kDropout:
        // In training, each member draws its own mask.
        if (shared && layer.module->is_training()) {
          h = h.unsqueeze(0).expand({n, m, h.size(-1)}).contiguous();
          shared = false;
        }
        h = layer.any->forward(h);
        break;
      case LayerKind::kElementwise:
        h = layer.any->forward(h);
        break;
    }
  }
  if (shared) h = h.unsqueeze(0).expand({n, m, h.size(-1)});
  std::vector<int64_t> out_shape{n};
  out_shape.insert(out_shape.end(), batch.begin(), batch.end());
  out_shape.push_back(h.size(-1));
  return h.reshape(out_shape);
}

}  // namespace tensordict::nn
