#include <tdrl/envs/transforms/primer.h>

#include <tdrl/envs/transforms/episode.h>

#include <map>
#include <memory>
#include <utility>
#include <vector>

#include <torch/types.h>

#include <tensordict/errors.h>

#include "../detail/transform_util.h"

namespace tdrl::envs {

namespace {

std::vector<int64_t> concat(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

TensorDictPrimer::TensorDictPrimer(specs::CompositePtr primers, double default_value)
    : primers_(std::move(primers)), default_value_(default_value) {
  TDRL_CHECK(primers_ != nullptr, tensordict::ValueError, "TensorDictPrimer: no primers given");
  keys_ = detail::leaf_keys(*primers_);
  TDRL_CHECK(!keys_.empty(), tensordict::ValueError,
             "TensorDictPrimer: the primers spec has no entries; give the entries to add, e.g. "
             "lstm->hidden_specs()");
  for (const auto& key : keys_) detail::reject_flag_key("TensorDictPrimer", key);
}

std::string TensorDictPrimer::to_string() const {
  return "TensorDictPrimer(primers=" + detail::keys_repr(keys_) +
         ", default_value=" + detail::number_repr(default_value_) + ")";
}

torch::Tensor TensorDictPrimer::initial(const NestedKey& key, const TensorDict& td) const {
  const auto spec = primers_->get(key);
  return torch::full(concat(td.batch_size(), spec->shape()), default_value_,
                     torch::TensorOptions().dtype(spec->dtype()).device(detail::device_of(td)));
}

void TensorDictPrimer::check_shape(const std::string& where, const NestedKey& key,
                                   const torch::Tensor& value, const TensorDict& td) const {
  const auto expected = concat(td.batch_size(), primers_->get(key)->shape());
  TDRL_CHECK(value.sizes() == expected, tensordict::ShapeError, "TensorDictPrimer::", where, ": ",
             key.to_string(), " has shape ", tensordict::shape_str(value.sizes()), "; expected ",
             tensordict::shape_str(expected), " ([*batch, *feature] of the primer's spec)");
}

TensorDict TensorDictPrimer::reset(const TensorDict& input, TensorDict output) {
  const auto mask = input.get_or(specs::kReset, torch::Tensor());
  // Every kept value is checked before any entry is written.
  for (const auto& key : keys_)
    if (!output.contains(key) && mask.defined() && input.contains(key))
      check_shape("reset", key, input.get(key), output);
  for (const auto& key : keys_) {
    if (output.contains(key)) continue;
    torch::Tensor value = initial(key, output);
    if (mask.defined() && input.contains(key)) {
      // Only the rows being reset start afresh: "_reset" [*batch(, 1)] over [*batch, *feature].
      auto rows = mask.reshape(output.batch_size());
      for (int64_t d = 0; d < static_cast<int64_t>(primers_->get(key)->shape().size()); ++d)
        rows = rows.unsqueeze(-1);
      value = torch::where(rows, value, input.get(key));
    }
    output.set(key, value);
  }
  return output;
}

TensorDict TensorDictPrimer::step(const TensorDict& root, TensorDict next) {
  return fill(root, std::move(next), written_by_policy(root));
}

TensorDict TensorDictPrimer::step_through(const TensorDict& root, const StepFn& inner) {
  // The policy's next state is read before the env below replaces the root's "next".
  auto written = written_by_policy(root);
  const TensorDict in = inv(root);
  return fill(in, inner(in), std::move(written));
}

std::map<NestedKey, torch::Tensor> TensorDictPrimer::written_by_policy(
    const TensorDict& root) const {
  std::map<NestedKey, torch::Tensor> out;
  for (const auto& key : keys_) {
    const NestedKey written = NestedKey("next").join(key);
    if (root.contains(written)) out.emplace(key, root.get(written));
  }
  return out;
}

TensorDict TensorDictPrimer::fill(const TensorDict& root, TensorDict next,
                                  std::map<NestedKey, torch::Tensor> written) const {
  std::vector<std::pair<NestedKey, torch::Tensor>> values;
  for (const auto& key : keys_) {
    if (next.contains(key)) continue;
    const auto it = written.find(key);
    torch::Tensor value = it != written.end()  ? it->second
                          : root.contains(key) ? root.get(key)
                                               : initial(key, next);
    check_shape("step", key, value, next);
    values.emplace_back(key, std::move(value));
  }
  for (auto& [key, value] : values) next.set(key, value);
  return next;
}

specs::CompositePtr TensorDictPrimer::transform_observation_spec(specs::CompositePtr spec,
                                                                 const EnvSpecs& input) {
  for (const auto& key : keys_) {
    const auto primer = primers_->get(key);
    spec->set(key, primer->expand(concat(input.batch_size, primer->shape()))->to(input.device));
  }
  return spec;
}

std::shared_ptr<EnvBase> with_policy_state(std::shared_ptr<EnvBase> env,
                                           const specs::CompositePtr& state) {
  if (!state || state->is_empty()) return env;
  std::vector<TransformPtr> added;
  const auto primer = std::make_shared<TensorDictPrimer>(state);
  if (!env->observation_spec()->contains("is_init"))
    added.push_back(std::make_shared<InitTracker>());
  added.push_back(primer);
  if (auto transformed = std::dynamic_pointer_cast<TransformedEnv>(env)) {
    for (auto& t : added) transformed->append_transform(t);
    return env;
  }
  return std::make_shared<TransformedEnv>(std::move(env), std::make_shared<Compose>(added));
}

}  // namespace tdrl::envs
