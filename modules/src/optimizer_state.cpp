#include "tdrl/modules/optimizer_state.h"

#include <c10/util/Type.h>
#include <torch/optim/adagrad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <memory>
#include <set>
#include <tuple>
#include <vector>

#include <tensordict/errors.h>
#include <tensordict/torch_compat.h>

#include "tdrl/modules/capturable_adam.h"

namespace tdrl::modules {

namespace {

using tensordict::TensorDict;
using torch::optim::OptimizerOptions;
using torch::optim::OptimizerParamState;

torch::Tensor number(double v) { return torch::scalar_tensor(v, torch::kFloat64); }
torch::Tensor flag(bool v) { return torch::scalar_tensor(v, torch::kBool); }

// One option of an optimiser kind: its entry name, read from and written to the options.
template <class O>
struct OptionField {
  const char* name;
  torch::Tensor (*get)(const O&);
  void (*set)(O&, const torch::Tensor&);
};

// LibTorch's TORCH_ARG accessors are overloaded (getter and setter), so each field is spelled
// once here and the two conversions are generated.
#define TDRL_NUMBER_OPTION(O, field)                                                               \
  OptionField<O> {                                                                                 \
#field, [](const O& o) { return number(o.field()); }, [](O & o,                                \
                                                             const torch::Tensor&                  \
                                                                 t) { o.field(t.item<double>()); } \
  }
#define TDRL_FLAG_OPTION(O, field)                                                                 \
  OptionField<O> {                                                                                 \
#field, [](const O& o) { return flag(o.field()); },                                            \
                                                     [](O & o, const torch::Tensor&                \
                                                                   t) { o.field(t.item<bool>()); } \
  }
#define TDRL_BETAS_OPTION(O)                                                                       \
  OptionField<O> {                                                                                 \
    "betas",                                                                                       \
        [](const O& o) {                                                                           \
          return torch::tensor({std::get<0>(o.betas()), std::get<1>(o.betas())}, torch::kFloat64); \
        },                                                                                         \
        [](O& o, const torch::Tensor& t) {                                                         \
          o.betas(std::make_tuple(t[0].item<double>(), t[1].item<double>()));                      \
        }                                                                                          \
  }

// One per-parameter state entry: `step` (int64, 0-dim) or a tensor shaped as the parameter.
// A required tensor is one the optimiser's step reads unconditionally.
template <class S>
struct StateField {
  const char* name;
  bool is_step;
  bool required;
  torch::Tensor (*get)(const S&);
  void (*set)(S&, const torch::Tensor&);
};

#define TDRL_STEP_STATE(S)                                                                        \
  StateField<S> {                                                                                 \
    "step", true, true, [](const S& s) { return torch::scalar_tensor(s.step(), torch::kInt64); }, \
        [](S& s, const torch::Tensor& t) { s.step(t.item<int64_t>()); }                           \
  }
#define TDRL_TENSOR_STATE(S, field, is_required)                                                \
  StateField<S> {                                                                               \
#field, false, is_required,                                                                 \
        [](const S& s) { return s.field(); }, [](S & s, const torch::Tensor& t) { s.field(t); } \
  }

// An optimiser kind, type-erased: whether it owns a group's options, and the conversions of
// its options and per-parameter state to and from TensorDict entries.
struct Kind {
  std::string name;
  std::function<bool(const OptimizerOptions&)> owns;
  std::vector<std::string> option_names;
  std::function<TensorDict(const OptimizerOptions&)> options_to;
  std::function<void(const TensorDict&, OptimizerOptions&)> options_from;
  struct Entry {
    std::string name;
    bool is_step;
    bool required;
  };
  std::vector<Entry> state_entries;
  std::function<TensorDict(const OptimizerParamState&)> state_to;
  std::function<std::unique_ptr<OptimizerParamState>(const TensorDict&)> state_from;
};

template <class O, class S>
Kind make_kind(std::string name, std::vector<OptionField<O>> options,
               std::vector<StateField<S>> state) {
  Kind kind;
  kind.name = std::move(name);
  kind.owns = [](const OptimizerOptions& o) { return dynamic_cast<const O*>(&o) != nullptr; };
  for (const auto& f : options) kind.option_names.push_back(f.name);
  kind.options_to = [options](const OptimizerOptions& o) {
    TensorDict td = TensorDict::empty({});
    for (const auto& f : options) td.set(f.name, f.get(static_cast<const O&>(o)));
    return td;
  };
  kind.options_from = [options](const TensorDict& td, OptimizerOptions& o) {
    for (const auto& f : options) f.set(static_cast<O&>(o), td.get(f.name));
  };
  for (const auto& f : state) kind.state_entries.push_back({f.name, f.is_step, f.required});
  kind.state_to = [state](const OptimizerParamState& s) {
    TensorDict td = TensorDict::empty({});
    for (const auto& f : state) {
      const torch::Tensor t = f.get(static_cast<const S&>(s));
      if (t.defined()) td.set(f.name, t.detach().clone());
    }
    return td;
  };
  kind.state_from = [state](const TensorDict& td) {
    auto s = std::make_unique<S>();
    for (const auto& f : state)
      if (const auto t = td.find(f.name)) f.set(*s, *t);
    return std::unique_ptr<OptimizerParamState>(std::move(s));
  };
  return kind;
}

template <class O, class S>
Kind adam_like(std::string name) {
  return make_kind<O, S>(
      std::move(name),
      {TDRL_NUMBER_OPTION(O, lr), TDRL_BETAS_OPTION(O), TDRL_NUMBER_OPTION(O, eps),
       TDRL_NUMBER_OPTION(O, weight_decay), TDRL_FLAG_OPTION(O, amsgrad)},
      {TDRL_STEP_STATE(S), TDRL_TENSOR_STATE(S, exp_avg, true),
       TDRL_TENSOR_STATE(S, exp_avg_sq, true), TDRL_TENSOR_STATE(S, max_exp_avg_sq, false)});
}

// The kinds LibTorch ships whose state is plain tensors (LBFGS keeps lists and closures' state).
const std::vector<Kind>& kinds() {
  using namespace torch::optim;
  static const std::vector<Kind> all = {
      adam_like<AdamOptions, AdamParamState>("Adam"),
      adam_like<AdamWOptions, AdamWParamState>("AdamW"),
      make_kind<SGDOptions, SGDParamState>(
          "SGD",
          {TDRL_NUMBER_OPTION(SGDOptions, lr), TDRL_NUMBER_OPTION(SGDOptions, momentum),
           TDRL_NUMBER_OPTION(SGDOptions, dampening), TDRL_NUMBER_OPTION(SGDOptions, weight_decay),
           TDRL_FLAG_OPTION(SGDOptions, nesterov)},
          {TDRL_TENSOR_STATE(SGDParamState, momentum_buffer, false)}),
      make_kind<RMSpropOptions, RMSpropParamState>(
          "RMSprop",
          {TDRL_NUMBER_OPTION(RMSpropOptions, lr), TDRL_NUMBER_OPTION(RMSpropOptions, alpha),
           TDRL_NUMBER_OPTION(RMSpropOptions, eps),
           TDRL_NUMBER_OPTION(RMSpropOptions, weight_decay),
           TDRL_NUMBER_OPTION(RMSpropOptions, momentum),
           TDRL_FLAG_OPTION(RMSpropOptions, centered)},
          {TDRL_STEP_STATE(RMSpropParamState),
           TDRL_TENSOR_STATE(RMSpropParamState, square_avg, true),
           TDRL_TENSOR_STATE(RMSpropParamState, momentum_buffer, false),
           TDRL_TENSOR_STATE(RMSpropParamState, grad_avg, false)}),
      make_kind<AdagradOptions, AdagradParamState>(
          "Adagrad",
          {TDRL_NUMBER_OPTION(AdagradOptions, lr), TDRL_NUMBER_OPTION(AdagradOptions, lr_decay),
           TDRL_NUMBER_OPTION(AdagradOptions, weight_decay),
           TDRL_NUMBER_OPTION(AdagradOptions, initial_accumulator_value),
           TDRL_NUMBER_OPTION(AdagradOptions, eps)},
          {TDRL_STEP_STATE(AdagradParamState), TDRL_TENSOR_STATE(AdagradParamState, sum, true)}),
  };
  return all;
}

#undef TDRL_NUMBER_OPTION
#undef TDRL_FLAG_OPTION
#undef TDRL_BETAS_OPTION
#undef TDRL_STEP_STATE
#undef TDRL_TENSOR_STATE

const Kind& kind_of(const torch::optim::Optimizer& optimizer, const std::string& op) {
  for (const auto& kind : kinds())
    if (kind.owns(optimizer.defaults())) return kind;
  throw tensordict::TypeError(tensordict::detail::check_message(
      op, ": the optimiser is a ", c10::demangle(typeid(optimizer).name()),
      "; its state is written as tensors for LibTorch's Adam, AdamW, SGD, RMSprop and Adagrad "
      "(and classes deriving from them with their options) only; use one of those"));
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "'" : ", '") + n + "'";
  return out;
}

// Throws KeyError unless `td`'s keys are exactly `expected`, naming the path and both lists.
void expect_keys(const TensorDict& td, const std::vector<std::string>& expected,
                 const std::string& what, const std::string& path) {
  const auto keys = td.keys();
  std::vector<std::string> actual;
  for (const auto& k : keys) actual.push_back(k.join_parts("/"));
  std::vector<std::string> sorted_expected = expected;
  std::sort(sorted_expected.begin(), sorted_expected.end());
  std::sort(actual.begin(), actual.end());
  TDRL_CHECK(actual == sorted_expected, tensordict::KeyError, what, ": '", path, "' holds ",
             join(actual), "; expected ", join(sorted_expected),
             " (it was written by another optimiser, or for other parameter groups)");
}

}  // namespace

TensorDict optimizer_state(const torch::optim::Optimizer& optimizer) {
  const Kind& kind = kind_of(optimizer, "optimizer_state");
  if (const auto* capturable = dynamic_cast<const CapturableAdam*>(&optimizer))
    capturable->sync_host_steps();
  TensorDict groups = TensorDict::empty({});
  TensorDict states = TensorDict::empty({});
  int64_t index = 0;
  const auto& param_groups = optimizer.param_groups();
  for (size_t g = 0; g < param_groups.size(); ++g) {
    const auto& group = param_groups[g];
    TensorDict entry = kind.options_to(group.options());
    const auto n = static_cast<int64_t>(group.params().size());
    entry.set("params", torch::arange(index, index + n, torch::kInt64));
    groups.set(std::to_string(g), entry);
    for (const auto& p : group.params()) {
      const auto it = optimizer.state().find(tensordict::compat::optimizer_state_key(p));
      if (it != optimizer.state().end())
        states.set(std::to_string(index), kind.state_to(*it->second));
      ++index;
    }
  }
  TensorDict out = TensorDict::empty({});
  out.set("param_groups", groups);
  out.set("state", states);
  return out;
}

void load_optimizer_state(torch::optim::Optimizer& optimizer, const TensorDict& state,
                          const std::string& what) {
  const Kind& kind = kind_of(optimizer, what);
  TDRL_CHECK(!state.contains("archive"), tensordict::KeyError, what,
             " is a LibTorch archive (entry 'archive'), as tdrl before 0.2 wrote optimiser state; "
             "this tdrl reads it as tensors only: resume the run with the tdrl that wrote it, or "
             "start a new run (tdrl-eval still evaluates its actor)");
  expect_keys(state, {"param_groups", "state"}, what, "");

  // The groups: as many as the optimiser's, each with this kind's options and the same
  // parameter numbering.
  auto& param_groups = optimizer.param_groups();
  const TensorDict groups = state.get_tensordict("param_groups");
  std::vector<std::string> group_names;
  for (size_t g = 0; g < param_groups.size(); ++g) group_names.push_back(std::to_string(g));
  expect_keys(groups, group_names, what, "param_groups");
  std::vector<torch::Tensor> params;  // flat, as numbered in the state
  std::vector<std::string> option_entries = kind.option_names;
  option_entries.push_back("params");
  for (size_t g = 0; g < param_groups.size(); ++g) {
    const std::string path = "param_groups/" + group_names[g];
    const TensorDict entry = groups.get_tensordict(group_names[g]);
    expect_keys(entry, option_entries, what, path);
    const TensorDict current = kind.options_to(param_groups[g].options());
    for (const auto& name : kind.option_names) {
      const torch::Tensor saved = entry.get(name);
      const torch::Tensor expected = current.get(name);
      TDRL_CHECK(saved.scalar_type() == expected.scalar_type() && saved.sizes() == expected.sizes(),
                 tensordict::TypeError, what, ": '", path, "/", name, "' is ", saved.scalar_type(),
                 " ", tensordict::shape_str(saved.sizes()), "; ", kind.name, " stores it as ",
                 expected.scalar_type(), " ", tensordict::shape_str(expected.sizes()));
    }
    const torch::Tensor numbers = entry.get("params");
    const auto n = static_cast<int64_t>(param_groups[g].params().size());
    const auto first = static_cast<int64_t>(params.size());
    TDRL_CHECK(numbers.dim() == 1 && numbers.size(0) == n &&
                   torch::equal(numbers.to(torch::kInt64).cpu(),
                                torch::arange(first, first + n, torch::kInt64)),
               tensordict::KeyError, what, ": '", path, "/params' numbers ", numbers.numel(),
               " parameters; this optimiser's group ", g, " has ", n, " (numbered from ", first,
               "): it was written for another model (check model.*)");
    for (const auto& p : param_groups[g].params()) params.push_back(p);
  }

  // The per-parameter states: each numbered parameter's entries, shaped and typed as it.
  const TensorDict states = state.get_tensordict("state");
  std::vector<std::unique_ptr<OptimizerParamState>> loaded(params.size());
  for (const auto& key : states.keys()) {
    const std::string name = key.join_parts("/");
    size_t i = 0;
    const bool numeric = !name.empty() && name.size() < 10 &&
                         std::all_of(name.begin(), name.end(), ::isdigit) &&
                         (i = std::stoul(name)) < params.size();
    TDRL_CHECK(numeric, tensordict::KeyError, what, ": 'state/", name,
               "' names no parameter; the optimiser has ", params.size(),
               " (entries 'state/0' to 'state/", params.size() - 1, "')");
    const TensorDict entry = states.get_tensordict(name);
    const std::string path = "state/" + name;
    std::set<std::string> known;
    for (const auto& e : kind.state_entries) {
      known.insert(e.name);
      const auto t = entry.find(e.name);
      TDRL_CHECK(t || !e.required, tensordict::KeyError, what, ": '", path, "' has no '", e.name,
                 "', which ", kind.name, "'s step reads");
      if (!t) continue;
      if (e.is_step) {
        TDRL_CHECK(t->dim() == 0 && t->scalar_type() == torch::kInt64, tensordict::TypeError, what,
                   ": '", path, "/step' is ", t->scalar_type(), " ",
                   tensordict::shape_str(t->sizes()), "; expected a 0-dim int64");
        continue;
      }
      const torch::Tensor& p = params[i];
      TDRL_CHECK(t->sizes() == p.sizes(), tensordict::ShapeError, what, ": '", path, "/", e.name,
                 "' has shape ", tensordict::shape_str(t->sizes()), "; its parameter has shape ",
                 tensordict::shape_str(p.sizes()), " (written for another model; check model.*)");
      TDRL_CHECK(t->scalar_type() == p.scalar_type(), tensordict::TypeError, what, ": '", path, "/",
                 e.name, "' is ", t->scalar_type(), "; its parameter is ", p.scalar_type());
    }
    for (const auto& k : entry.keys()) {
      TDRL_CHECK(known.count(k.join_parts("/")), tensordict::KeyError, what, ": '", path, "/",
                 k.join_parts("/"), "' is no state of ", kind.name,
                 " (written by another optimiser kind)");
    }
    loaded[i] = kind.state_from(entry.to(params[i].device()).clone());
  }

  // Everything fits: replace the options and the states.
  for (size_t g = 0; g < param_groups.size(); ++g)
    kind.options_from(groups.get_tensordict(group_names[g]), param_groups[g].options());
  auto& live = optimizer.state();
  for (size_t i = 0; i < params.size(); ++i) {
    const auto key = tensordict::compat::optimizer_state_key(params[i]);
    live.erase(key);
    if (loaded[i]) live.emplace(key, std::move(loaded[i]));
  }
  if (auto* capturable = dynamic_cast<CapturableAdam*>(&optimizer))
    capturable->forget_device_steps();
}

}  // namespace tdrl::modules
