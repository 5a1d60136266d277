// Key transforms: CatTensors, RenameTransform, ExcludeTransform, SelectTransform.

#include <tdrl/envs/transforms/keys.h>

#include <algorithm>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <torch/types.h>

#include <tensordict/dtype.h>

#include <tdrl/specs/detail/spec_format.h>
#include <tensordict/errors.h>

#include "../detail/transform_util.h"

namespace tdrl::envs {

using tensordict::KeyError;
using tensordict::ShapeError;
using tensordict::TypeError;
using tensordict::Value;
using tensordict::ValueError;

using detail::bool_repr;
using detail::require_keys;

namespace {

// The leaf spec at `key` of the observation spec of `input`; KeyError naming `where` otherwise.
specs::TensorSpecPtr observation_leaf(const std::string& where, const EnvSpecs& input,
                                      const NestedKey& key) {
  const auto value = input.observation->find_value(key);
  if (!value || !std::holds_alternative<specs::TensorSpecPtr>(*value)) {
    detail::throw_missing(where, "in_key", key, detail::leaf_keys(*input.observation),
                          "observation");
  }
  return std::get<specs::TensorSpecPtr>(*value);
}

}  // namespace

// ---- CatTensors ------------------------------------------------------------------------------

CatTensors::CatTensors(std::vector<NestedKey> in_keys, CatTensorsOptions options)
    : in_keys_(std::move(in_keys)), options_(std::move(options)) {
  require_keys("CatTensors", "in_keys", in_keys_);
  TDRL_CHECK(!(options_.dim() >= 0), ValueError, "CatTensors: dim is ",
             std::to_string(options_.dim()),
             "; it must be negative (counted from the last dim, away from batch dims)");
  if (options_.sort()) std::sort(in_keys_.begin(), in_keys_.end());
  for (size_t i = 0; i < in_keys_.size(); ++i) {
    for (size_t j = i + 1; j < in_keys_.size(); ++j) {
      TDRL_CHECK(in_keys_[i] != in_keys_[j], ValueError, "CatTensors: in_key ",
                 in_keys_[i].to_string(), " is given twice");
    }
  }
}

std::string CatTensors::to_string() const {
  return "CatTensors(in_keys=" + detail::keys_repr(in_keys_) +
         ", out_key=" + options_.out_key().to_string() + ", dim=" + std::to_string(options_.dim()) +
         ", del_keys=" + bool_repr(options_.del_keys()) + ")";
}

TensorDict CatTensors::call(TensorDict td) {
  std::vector<torch::Tensor> values;
  std::vector<NestedKey> missing;
  for (const auto& key : in_keys_) {
    if (auto value = td.find(key)) {
      values.push_back(*value);
    } else {
      missing.push_back(key);
    }
  }
  if (values.empty()) return td;
  TDRL_CHECK(missing.empty(), KeyError, "CatTensors: the TensorDict lacks ",
             detail::keys_repr(missing), " of the in_keys ", detail::keys_repr(in_keys_),
             "; it must hold all of them or none; keys: ", detail::keys_repr(td.keys(true, true)));
  const auto out = torch::cat(values, options_.dim());
  if (options_.del_keys()) {
    for (const auto& key : in_keys_) td.del_(key);
  }
  td.set(options_.out_key(), out);
  return td;
}

specs::CompositePtr CatTensors::transform_observation_spec(specs::CompositePtr spec,
                                                           const EnvSpecs& input) {
  const std::string where = "CatTensors";
  std::vector<specs::TensorSpecPtr> leaves;
  for (const auto& key : in_keys_) leaves.push_back(observation_leaf(where, input, key));
  const auto& first = *leaves.front();
  const int64_t ndim = first.ndim();
  const int64_t batch_dims = static_cast<int64_t>(input.batch_size.size());
  const int64_t dim = ndim + options_.dim();
  TDRL_CHECK(!(dim < batch_dims), ValueError, where, ": dim ", std::to_string(options_.dim()),
             " of ", in_keys_.front().to_string(), " (shape ", tensordict::shape_str(first.shape()),
             ") falls in the batch dims ", tensordict::shape_str(input.batch_size));
  auto shape = first.shape();
  bool all_bounded = true;
  for (size_t i = 0; i < leaves.size(); ++i) {
    const auto& leaf = *leaves[i];
    TDRL_CHECK(leaf.dtype() == first.dtype(), TypeError, where, ": ", in_keys_[i].to_string(),
               " has dtype ", tensordict::dtype_name(leaf.dtype()), " but ",
               in_keys_.front().to_string(), " has ", tensordict::dtype_name(first.dtype()),
               "; concatenated entries need one dtype (cast them first)");
    bool same = leaf.ndim() == ndim;
    for (int64_t d = 0; same && d < ndim; ++d) {
      if (d != dim && leaf.shape()[d] != first.shape()[d]) same = false;
    }
    TDRL_CHECK(same, ShapeError, where, ": ", in_keys_[i].to_string(), " has shape ",
               tensordict::shape_str(leaf.shape()), " and ", in_keys_.front().to_string(), " has ",
               tensordict::shape_str(first.shape()), "; they must be equal but along dim ",
               std::to_string(options_.dim()));
    if (i > 0) shape[dim] += leaf.shape()[dim];
    all_bounded = all_bounded && dynamic_cast<const specs::Bounded*>(&leaf);
  }
  specs::TensorSpecPtr out;
  if (all_bounded) {
    std::vector<torch::Tensor> lows, highs;
    for (const auto& leaf : leaves) {
      lows.push_back(static_cast<const specs::Bounded&>(*leaf).low());
      highs.push_back(static_cast<const specs::Bounded&>(*leaf).high());
    }
    out = detail::bounded(torch::cat(lows, options_.dim()), torch::cat(highs, options_.dim()),
                          shape, first.dtype(), first.device());
  } else {
    out = std::make_shared<specs::Unbounded>(
        shape, specs::UnboundedOptions().dtype(first.dtype()).device(first.device()));
  }
  if (options_.del_keys()) {
    for (const auto& key : in_keys_) spec->del_(key);
  }
  spec->set(options_.out_key(), out);
  return spec;
}

// ---- RenameTransform -------------------------------------------------------------------------

RenameTransform::RenameTransform(RenameTransformOptions options) : options_(std::move(options)) {
  const std::string where = "RenameTransform";
  TDRL_CHECK(options_.in_keys().size() == options_.out_keys().size(), ValueError, where, ": ",
             std::to_string(options_.in_keys().size()), " in_keys ",
             detail::keys_repr(options_.in_keys()), " but ",
             std::to_string(options_.out_keys().size()), " out_keys ",
             detail::keys_repr(options_.out_keys()), "; give one out_key per in_key");
  TDRL_CHECK(options_.in_keys_inv().size() == options_.out_keys_inv().size(), ValueError, where,
             ": ", std::to_string(options_.in_keys_inv().size()), " in_keys_inv ",
             detail::keys_repr(options_.in_keys_inv()), " but ",
             std::to_string(options_.out_keys_inv().size()), " out_keys_inv ",
             detail::keys_repr(options_.out_keys_inv()), "; give one out_key_inv per in_key_inv");
  TDRL_CHECK(!(options_.in_keys().empty() && options_.in_keys_inv().empty()), ValueError, where,
             ": no keys to rename; give in_keys/out_keys or "
             "in_keys_inv/out_keys_inv");
  for (const auto* keys : {&options_.in_keys(), &options_.out_keys(), &options_.in_keys_inv(),
                           &options_.out_keys_inv()}) {
    for (const auto& key : *keys) detail::reject_flag_key(where, key);
  }
}

std::string RenameTransform::to_string() const {
  std::string out = "RenameTransform(in_keys=" + detail::keys_repr(options_.in_keys()) +
                    ", out_keys=" + detail::keys_repr(options_.out_keys());
  if (!options_.in_keys_inv().empty()) {
    out += ", in_keys_inv=" + detail::keys_repr(options_.in_keys_inv()) +
           ", out_keys_inv=" + detail::keys_repr(options_.out_keys_inv());
  }
  return out + ", create_copy=" + bool_repr(options_.create_copy()) + ")";
}

namespace {

// Moves (or copies) the entries of `td` at `from` to `to`; all reads before any write, so
// swaps work. Missing entries are skipped.
void rename_entries(const TensorDict& td, const std::vector<NestedKey>& from,
                    const std::vector<NestedKey>& to, bool copy) {
  std::vector<std::pair<NestedKey, Value>> moved;
  for (size_t i = 0; i < from.size(); ++i) {
    if (auto value = td.find_value(from[i])) moved.emplace_back(to[i], *value);
  }
  if (!copy) {
    for (const auto& key : from) {
      if (td.contains(key)) td.del_(key);
    }
  }
  for (const auto& [key, value] : moved) td.set(key, value);
}

}  // namespace

TensorDict RenameTransform::call(TensorDict td) {
  rename_entries(td, options_.in_keys(), options_.out_keys(), options_.create_copy());
  return td;
}

TensorDict RenameTransform::inv(TensorDict td) {
  rename_entries(td, options_.out_keys_inv(), options_.in_keys_inv(), options_.create_copy());
  return td;
}

specs::CompositePtr RenameTransform::rename_spec(specs::CompositePtr spec,
                                                 const specs::CompositePtr& input_spec,
                                                 const std::vector<NestedKey>& from,
                                                 const std::vector<NestedKey>& to) const {
  std::vector<std::pair<NestedKey, specs::SpecValue>> moved;
  for (size_t i = 0; i < from.size(); ++i) {
    const auto value = input_spec->find_value(from[i]);
    if (value && std::holds_alternative<specs::TensorSpecPtr>(*value)) {
      moved.emplace_back(to[i], *value);
      if (!options_.create_copy()) spec->del_(from[i]);
    }
  }
  for (const auto& [key, value] : moved) spec->set(key, value);
  return spec;
}

EnvSpecs RenameTransform::transform_specs(const EnvSpecs& input) {
  detail::require_outputs("RenameTransform", options_.in_keys(), input);
  detail::require_inputs("RenameTransform", options_.in_keys_inv(), input);
  EnvSpecs out = input.clone();
  const auto& in = options_.in_keys();
  const auto& in_inv = options_.in_keys_inv();
  out.observation = rename_spec(out.observation, input.observation, in, options_.out_keys());
  out.reward = rename_spec(out.reward, input.reward, in, options_.out_keys());
  out.action = rename_spec(out.action, input.action, in_inv, options_.out_keys_inv());
  out.state = rename_spec(out.state, input.state, in_inv, options_.out_keys_inv());
  return out;
}

// ---- ExcludeTransform ------------------------------------------------------------------------

ExcludeTransform::ExcludeTransform(std::vector<NestedKey> excluded_keys)
    : excluded_keys_(std::move(excluded_keys)) {
  require_keys("ExcludeTransform", "excluded_keys", excluded_keys_);
}

std::string ExcludeTransform::to_string() const {
  return "ExcludeTransform(excluded_keys=" + detail::keys_repr(excluded_keys_) + ")";
}

TensorDict ExcludeTransform::call(TensorDict td) {
  for (const auto& key : excluded_keys_) {
    if (td.contains(key)) td.del_(key);
  }
  return td;
}

specs::CompositePtr ExcludeTransform::transform_observation_spec(specs::CompositePtr spec,
                                                                 const EnvSpecs& input) {
  const std::string where = "ExcludeTransform";
  const auto reward_key = input.reward_key();
  for (const auto& key : excluded_keys_) {
    detail::reject_flag_key(where, key);
    TDRL_CHECK(key != reward_key, ValueError, where, ": cannot exclude the reward ",
               key.to_string(), "; every step returns it");
    if (!input.observation->contains(key)) {
      detail::throw_missing(where, "excluded key", key, detail::leaf_keys(*input.observation),
                            "observation");
    }
    spec->del_(key);
  }
  return spec;
}

// ---- SelectTransform -------------------------------------------------------------------------

SelectTransform::SelectTransform(std::vector<NestedKey> selected_keys)
    : selected_keys_(std::move(selected_keys)) {
  require_keys("SelectTransform", "selected_keys", selected_keys_);
  kept_ = selected_keys_;
  for (const char* key : {specs::kReward, specs::kDone, specs::kTerminated, specs::kTruncated})
    kept_.emplace_back(key);
}

std::string SelectTransform::to_string() const {
  return "SelectTransform(selected_keys=" + detail::keys_repr(selected_keys_) + ")";
}

TensorDict SelectTransform::call(TensorDict td) { return td.select(kept_, /*strict=*/false); }

specs::CompositePtr SelectTransform::transform_observation_spec(specs::CompositePtr spec,
                                                                const EnvSpecs& input) {
  auto selected = specs::Composite::make({}, spec->shape(), spec->device());
  for (const auto& key : selected_keys_) {
    if (!spec->contains(key)) {
      detail::throw_missing("SelectTransform", "selected key", key,
                            detail::leaf_keys(*input.observation), "observation");
    }
    selected->set(key, spec->get_value(key));
  }
  return selected;
}

specs::CompositePtr SelectTransform::transform_reward_spec(specs::CompositePtr spec,
                                                           const EnvSpecs& input) {
  kept_ = selected_keys_;
  kept_.push_back(input.reward_key());
  for (const char* key : {specs::kDone, specs::kTerminated, specs::kTruncated})
    kept_.emplace_back(key);
  return spec;
}

}  // namespace tdrl::envs
