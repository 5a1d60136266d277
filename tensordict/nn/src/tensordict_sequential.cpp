#include <tensordict/nn/tensordict_sequential.h>

#include <algorithm>
#include <sstream>
#include <string>

#include <torch/types.h>

#include "detail/printing.h"

namespace tensordict::nn {

namespace {

using Modules = TensorDictSequentialImpl::Modules;

bool contains_key(const std::vector<NestedKey>& keys, const NestedKey& key) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

void add_unique(std::vector<NestedKey>& keys, const std::vector<NestedKey>& more) {
  for (const auto& key : more) {
    if (!contains_key(keys, key)) keys.push_back(key);
  }
}

bool reads_any(const TensorDictModuleBase& module, const std::vector<NestedKey>& keys) {
  return std::any_of(module.in_keys().begin(), module.in_keys().end(),
                     [&](const NestedKey& k) { return contains_key(keys, k); });
}

bool writes_any(const TensorDictModuleBase& module, const std::vector<NestedKey>& keys) {
  return std::any_of(module.out_keys().begin(), module.out_keys().end(),
                     [&](const NestedKey& k) { return contains_key(keys, k); });
}

// The filtered copy of a nested sequence, or the sequence itself when nothing was dropped.
std::shared_ptr<TensorDictModuleBase> rebuild(const std::shared_ptr<TensorDictSequentialImpl>& seq,
                                              Modules kept) {
  if (kept == seq->module_list()) return seq;
  return std::make_shared<TensorDictSequentialImpl>(
      std::move(kept), TensorDictSequentialOptions().partial_tolerant(seq->partial_tolerant()));
}

// Forward pass: keeps the modules whose outputs depend on `relevant`, growing it with the
// kept modules' outputs.
Modules keep_affected(const Modules& modules, std::vector<NestedKey>& relevant) {
  Modules kept;
  for (const auto& module : modules) {
    if (auto seq = std::dynamic_pointer_cast<TensorDictSequentialImpl>(module)) {
      Modules sub = keep_affected(seq->module_list(), relevant);
      if (!sub.empty()) kept.push_back(rebuild(seq, std::move(sub)));
    } else if (reads_any(*module, relevant)) {
      kept.push_back(module);
      add_unique(relevant, module->out_keys());
    }
  }
  return kept;
}

// Backward pass: keeps the modules that condition `needed`, growing it with the kept
// modules' inputs.
Modules keep_needed(const Modules& modules, std::vector<NestedKey>& needed) {
  Modules kept;
  for (auto it = modules.rbegin(); it != modules.rend(); ++it) {
    const auto& module = *it;
    if (auto seq = std::dynamic_pointer_cast<TensorDictSequentialImpl>(module)) {
      Modules sub = keep_needed(seq->module_list(), needed);
      if (!sub.empty()) kept.insert(kept.begin(), rebuild(seq, std::move(sub)));
    } else if (writes_any(*module, needed)) {
      kept.insert(kept.begin(), module);
      add_unique(needed, module->in_keys());
    }
  }
  return kept;
}

}  // namespace

TensorDictSequentialImpl::TensorDictSequentialImpl(Modules modules,
                                                   TensorDictSequentialOptions options)
    : TensorDictSequentialImpl("TensorDictSequential", std::move(modules), std::move(options)) {}

TensorDictSequentialImpl::TensorDictSequentialImpl(std::string name, Modules modules,
                                                   TensorDictSequentialOptions options)
    : TensorDictModuleBase(std::move(name)) {
  build(std::move(modules), std::move(options));
}

void TensorDictSequentialImpl::build(Modules modules, TensorDictSequentialOptions options) {
  for (size_t i = 0; i < modules.size(); ++i) {
    TDRL_CHECK(modules[i], ValueError, name(), ": module ", std::to_string(i),
               " is null; pass constructed modules");
  }
  modules_ = std::move(modules);
  partial_tolerant_ = options.partial_tolerant();

  std::vector<NestedKey> in_keys;
  std::vector<NestedKey> out_keys;
  for (size_t i = 0; i < modules_.size(); ++i) {
    for (const auto& key : modules_[i]->in_keys()) {
      if (!contains_key(out_keys, key) && !contains_key(in_keys, key)) in_keys.push_back(key);
    }
    add_unique(out_keys, modules_[i]->out_keys());
    register_module(std::to_string(i), modules_[i]);
  }
  set_keys(std::move(in_keys), std::move(out_keys));
  if (!options.selected_out_keys().empty()) select_out_keys(options.selected_out_keys());
}

std::shared_ptr<TensorDictModuleBase> TensorDictSequentialImpl::operator[](
    std::size_t index) const {
  TDRL_CHECK(!(index >= modules_.size()), IndexError, "TensorDictSequential[",
             std::to_string(index), "]: index out of range ", "for a sequence of ",
             std::to_string(modules_.size()), " modules");
  return modules_[index];
}

TensorDictSequential TensorDictSequentialImpl::select_subsequence(
    std::optional<std::vector<NestedKey>> in_keys,
    std::optional<std::vector<NestedKey>> out_keys) const {
  Modules kept = modules_;
  if (in_keys) kept = keep_affected(kept, *in_keys);
  if (out_keys) kept = keep_needed(kept, *out_keys);
  return TensorDictSequential(std::make_shared<TensorDictSequentialImpl>(
      std::move(kept), TensorDictSequentialOptions().partial_tolerant(partial_tolerant_)));
}

void TensorDictSequentialImpl::forward_impl(const TensorDict& tensordict,
                                            const TensorDict& tensordict_out) {
  // With a separate output, run on a shallow copy so that the input is left unchanged.
  const bool separate_out = !tensordict.is_same(tensordict_out);
  const TensorDict work = separate_out ? tensordict.clone(/*recurse=*/false) : tensordict;
  for (const auto& module : modules_) {
    if (partial_tolerant_ && !std::all_of(module->in_keys().begin(), module->in_keys().end(),
                                          [&](const NestedKey& k) { return work.contains(k); })) {
      continue;
    }
    module->forward(work);
  }
  if (has_selected_out_keys()) {
    for (const auto& key : out_keys_source()) {
      if (!is_selected(key) && work.contains(key)) work.del_(key);
    }
  }
  if (separate_out) {
    for (const auto& key : out_keys()) {
      if (work.contains(key)) tensordict_out.set(key, work.get(key));
    }
  }
}

void TensorDictSequentialImpl::print_to(std::ostream& stream) const {
  stream << name() << "(\n    module=ModuleList(\n";
  for (size_t i = 0; i < modules_.size(); ++i) {
    stream << "      (" << i << "): " << detail::indent_rest(modules_[i]->to_string(), "      ")
           << "\n";
  }
  stream << "    ),\n    in_keys=" << keys_repr(in_keys())
         << ",\n    out_keys=" << keys_repr(out_keys()) << ")";
}

}  // namespace tensordict::nn
