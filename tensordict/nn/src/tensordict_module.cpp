#include <tensordict/nn/tensordict_module.h>

#include <algorithm>
#include <optional>
#include <sstream>

#include <torch/nn/module.h>
#include <torch/types.h>

#include "detail/printing.h"

namespace tensordict::nn {

namespace {

// True for the "_" out key (compared without building a NestedKey: this runs per call).
bool is_discard(const NestedKey& key) { return key.size() == 1 && key.front() == kDiscardKey; }

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t pos = text.find(from); pos != std::string::npos; pos = text.find(from, pos)) {
    text.replace(pos, from.size(), to);
    pos += to.size();
  }
  return text;
}

}  // namespace

// ---- TensorDictModuleBase ------------------------------------------------------------------

std::string keys_repr(const std::vector<NestedKey>& keys) {
  std::string out = "[";
  for (size_t i = 0; i < keys.size(); ++i) out += (i ? ", " : "") + keys[i].to_string();
  return out + "]";
}

std::ostream& operator<<(std::ostream& stream, const TensorDictModuleBase& module) {
  return stream << module.to_string();
}

TensorDict TensorDictModuleBase::forward(TensorDict tensordict,
                                         std::optional<TensorDict> tensordict_out) {
  const TensorDict out = tensordict_out ? *tensordict_out : tensordict;
  forward_impl(tensordict, out);
  return out;
}

std::vector<torch::Tensor> TensorDictModuleBase::forward_tensors(
    const std::vector<torch::Tensor>& inputs) {
  if (inputs.size() != in_keys_.size()) {
    std::ostringstream os;
    os << name() << "::forward_tensors: got " << inputs.size() << " tensors but in_keys "
       << keys_repr(in_keys_) << " has " << in_keys_.size() << "; pass one tensor per in key";
    throw ValueError(os.str());
  }
  TensorDict td;
  for (size_t i = 0; i < inputs.size(); ++i) td.set(in_keys_[i], inputs[i]);
  forward(td);
  std::vector<torch::Tensor> outputs;
  outputs.reserve(out_keys().size());
  for (const auto& key : out_keys()) outputs.push_back(td.get(key));
  return outputs;
}

const std::vector<NestedKey>& TensorDictModuleBase::out_keys() const {
  return selected_out_keys_.empty() ? out_keys_source_ : selected_out_keys_;
}

TensorDictModuleBase& TensorDictModuleBase::select_out_keys(const std::vector<NestedKey>& keys) {
  TDRL_CHECK(!keys.empty(), ValueError, name(),
             "::select_out_keys: no key given; select at least one of ",
             keys_repr(out_keys_source_), " (reset_out_keys() selects all)");
  for (const auto& key : keys) {
    if (std::find(out_keys_source_.begin(), out_keys_source_.end(), key) ==
        out_keys_source_.end()) {
      throw KeyError(name() + "::select_out_keys: " + key.to_string() +
                     " is not an out key; valid: " + keys_repr(out_keys_source_));
    }
  }
  std::vector<NestedKey> selected;
  for (const auto& key : out_keys_source_) {
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) selected.push_back(key);
  }
  selected_out_keys_ = std::move(selected);
  return *this;
}

TensorDictModuleBase& TensorDictModuleBase::reset_out_keys() {
  selected_out_keys_.clear();
  return *this;
}

std::string TensorDictModuleBase::to_string() const {
  std::ostringstream os;
  print_to(os);
  return os.str();
}

void TensorDictModuleBase::set_keys(std::vector<NestedKey> in_keys,
                                    std::vector<NestedKey> out_keys) {
  in_keys_ = std::move(in_keys);
  out_keys_source_ = std::move(out_keys);
  selected_out_keys_.clear();
}

bool TensorDictModuleBase::is_selected(const NestedKey& key) const {
  return selected_out_keys_.empty() ||
         std::find(selected_out_keys_.begin(), selected_out_keys_.end(), key) !=
             selected_out_keys_.end();
}

void TensorDictModuleBase::check_in_keys(const TensorDict& tensordict,
                                         const std::string& where) const {
  for (const auto& key : in_keys_) {
    TDRL_CHECK(tensordict.contains(key), KeyError, where, ": in_key ", key.to_string(),
               " is missing from the input TensorDict; available keys: ",
               keys_repr(tensordict.keys(/*include_nested=*/true, /*leaves_only=*/true)));
  }
}

// ---- TensorDictModule ----------------------------------------------------------------------

std::string TensorDictModuleImpl::print_name(const torch::nn::Module& module) {
  std::ostringstream os;
  os << module;
  return replace_all(os.str(), "torch::nn::", "");
}

void TensorDictModuleImpl::init(Function fn, std::size_t arity, bool variadic,
                                TensorDictModuleOptions options, std::string module_repr) {
  fn_ = std::move(fn);
  module_repr_ = std::move(module_repr);
  out_keys_raw_ = options.out_keys();

  std::vector<NestedKey> in_keys = options.in_keys();
  if (!options.in_keys_map().empty()) {
    const auto& map = options.in_keys_map();
    std::vector<std::optional<NestedKey>> by_position(map.size());
    for (const auto& [key, position] : map) {
      if (position < 0 || position >= static_cast<int>(map.size()) || by_position[position]) {
        std::ostringstream os;
        os << "TensorDictModule: in_keys_map gives " << key.to_string() << " position " << position
           << "; positions must be 0.." << map.size() - 1 << ", each used once";
        throw ValueError(os.str());
      }
      by_position[position] = key;
    }
    in_keys.clear();
    for (auto& key : by_position) in_keys.push_back(*key);
  }
  if (!variadic && in_keys.size() > arity) {
    std::ostringstream os;
    os << "TensorDictModule(module=" << module_repr_ << "): " << in_keys.size() << " in_keys "
       << keys_repr(in_keys) << " but the module takes " << arity
       << " tensors; give at most one in key per argument";
    throw ValueError(os.str());
  }

  std::vector<NestedKey> out_keys;
  for (const auto& key : out_keys_raw_) {
    if (key != NestedKey(kDiscardKey)) out_keys.push_back(key);
  }
  set_keys(std::move(in_keys), std::move(out_keys));
}

std::string TensorDictModuleImpl::where() const {
  const std::string short_name = module_repr_.substr(0, module_repr_.find('('));
  return "TensorDictModule(module=" + short_name + ", in_keys=" + keys_repr(in_keys()) +
         ", out_keys=" + keys_repr(out_keys_raw_) + ")";
}

std::vector<torch::Tensor> TensorDictModuleImpl::match_outputs(
    detail::ModuleOutputs outputs) const {
  if (outputs.is_keyed) {
    std::vector<torch::Tensor> matched;
    for (const auto& key : out_keys_raw_) {
      if (is_discard(key)) {
        matched.emplace_back();
        continue;
      }
      auto it = outputs.keyed.find(key);
      if (it == outputs.keyed.end()) {
        std::vector<NestedKey> returned;
        for (const auto& entry : outputs.keyed) returned.push_back(entry.first);
        throw KeyError(where() + ": the module returned a map without out key " + key.to_string() +
                       "; it returned " + keys_repr(returned));
      }
      matched.push_back(it->second);
    }
    return matched;
  }
  if (outputs.positional.size() != out_keys_raw_.size()) {
    std::ostringstream os;
    os << where() << ": the module returned " << outputs.positional.size()
       << " outputs but out_keys has " << out_keys_raw_.size()
       << " keys; give one out key per output (\"_\" discards one)";
    throw ValueError(os.str());
  }
  return std::move(outputs.positional);
}

std::vector<torch::Tensor> TensorDictModuleImpl::call_module(
    const std::vector<torch::Tensor>& inputs) {
  return match_outputs(fn_(inputs));
}

void TensorDictModuleImpl::forward_impl(const TensorDict& tensordict,
                                        const TensorDict& tensordict_out) {
  // where() builds the error prefix from the key lists: only worth it when a key is missing.
  const auto& keys = in_keys();
  if (!std::all_of(keys.begin(), keys.end(),
                   [&tensordict](const NestedKey& key) { return tensordict.contains(key); })) {
    check_in_keys(tensordict, where());
  }
  std::vector<torch::Tensor> inputs;
  inputs.reserve(keys.size());
  for (const auto& key : keys) inputs.push_back(tensordict.get(key));
  const auto outputs = call_module(inputs);
  for (size_t i = 0; i < outputs.size(); ++i) {
    const auto& key = out_keys_raw_[i];
    if (!is_discard(key) && is_selected(key)) tensordict_out.set(key, outputs[i]);
  }
}

void TensorDictModuleImpl::print_to(std::ostream& stream) const {
  stream << "TensorDictModule(\n    module=" << detail::indent_rest(module_repr_, "    ")
         << ",\n    in_keys=" << keys_repr(in_keys())
         << ",\n    out_keys=" << keys_repr(has_selected_out_keys() ? out_keys() : out_keys_raw_)
         << ")";
}

}  // namespace tensordict::nn
