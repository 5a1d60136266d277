#include <tensordict/nn/probabilistic.h>

#include <algorithm>
#include <sstream>

#include <torch/types.h>

#include <tensordict/errors.h>

namespace tensordict::nn {

// ---- ProbabilisticTensorDictModule ---------------------------------------------------------

ProbabilisticTensorDictModuleImpl::ProbabilisticTensorDictModuleImpl(
    DistributionClass distribution_class, ProbabilisticTensorDictModuleOptions options)
    : TensorDictModuleBase("ProbabilisticTensorDictModule"),
      distribution_class_(std::move(distribution_class)),
      options_(std::move(options)) {
  const std::string prefix =
      "ProbabilisticTensorDictModule(distribution_class=" + distribution_class_.name() + "): ";
  if (!options_.in_keys_map().empty()) {
    for (const auto& [name, key] : options_.in_keys_map()) dist_keys_.emplace_back(name, key);
  } else {
    for (const auto& key : options_.in_keys()) dist_keys_.emplace_back(key.back(), key);
  }
  std::vector<NestedKey> in_keys;
  for (const auto& entry : dist_keys_) {
    const auto& name = entry.first;
    if (!distribution_class_.accepts(name)) {
      std::ostringstream os;
      os << prefix << "in key " << entry.second.to_string() << " feeds parameter '" << name
         << "', which " << distribution_class_ << " does not take; name keys after its "
         << "parameters or map them with in_keys_map";
      throw ValueError(os.str());
    }
    for (const auto& other : dist_keys_) {
      TDRL_CHECK(!(&other != &entry && other.first == name), ValueError, prefix,
                 "two in keys feed parameter '", name,
                 "'; give each parameter one key (in_keys_map renames)");
    }
    in_keys.push_back(entry.second);
  }
  for (const auto& required : distribution_class_.param_names()) {
    const bool given = std::any_of(dist_keys_.begin(), dist_keys_.end(),
                                   [&required](const auto& e) { return e.first == required; });
    if (!given) {
      std::ostringstream os;
      os << prefix << "no in key feeds parameter '" << required << "' of " << distribution_class_
         << "; in_keys are " << keys_repr(in_keys)
         << " (the last element of each key names its parameter; in_keys_map maps others)";
      throw ValueError(os.str());
    }
  }
  if (options_.out_keys().size() != 1) {
    std::ostringstream os;
    os << prefix << "out_keys " << keys_repr(options_.out_keys())
       << " must hold exactly one key, where the drawn value is written";
    throw ValueError(os.str());
  }
  TDRL_CHECK(!(options_.return_log_prob() && options_.log_prob_key() == sample_key()), ValueError,
             prefix, "log_prob_key ", sample_key().to_string(),
             " is the out key; give the log-probability its own key");
  TDRL_CHECK(!(options_.n_empirical_estimate() < 1), ValueError, prefix, "n_empirical_estimate is ",
             std::to_string(options_.n_empirical_estimate()), "; it must be >= 1");
  std::vector<NestedKey> out_keys{sample_key()};
  if (options_.return_log_prob()) out_keys.push_back(options_.log_prob_key());
  set_keys(std::move(in_keys), std::move(out_keys));
}

std::string ProbabilisticTensorDictModuleImpl::where() const {
  return "ProbabilisticTensorDictModule(distribution_class=" + distribution_class_.name() +
         ", in_keys=" + keys_repr(in_keys()) + ", out_keys=" + keys_repr(out_keys()) + ")";
}

std::shared_ptr<Distribution> ProbabilisticTensorDictModuleImpl::get_dist(
    const TensorDict& tensordict) const {
  for (const auto& key : in_keys()) {
    // The error prefix is only built when a key is missing (it formats the key lists).
    if (!tensordict.contains(key)) check_in_keys(tensordict, where());
  }
  DistributionParams params;
  for (const auto& [name, key] : dist_keys_) params.emplace(name, tensordict.get(key));
  return distribution_class_.make(params);
}

torch::Tensor ProbabilisticTensorDictModuleImpl::log_prob(const TensorDict& tensordict) const {
  TDRL_CHECK(tensordict.contains(sample_key()), KeyError, where(), "::log_prob: the value key ",
             sample_key().to_string(),
             " is missing; run the module first or set the value to score");
  return get_dist(tensordict)->log_prob(tensordict.get(sample_key()));
}

InteractionType ProbabilisticTensorDictModuleImpl::effective_interaction_type() const {
  return interaction_type().value_or(options_.default_interaction_type());
}

torch::Tensor ProbabilisticTensorDictModuleImpl::draw(const Distribution& dist,
                                                      InteractionType type) const {
  switch (type) {
    case InteractionType::kRandom:
      return dist.has_rsample() ? dist.rsample() : dist.sample();
    case InteractionType::kMode:
      return dist.mode();
    case InteractionType::kMean:
      try {
        return dist.mean();
      } catch (const TypeError&) {
        // No closed form (TanhNormal, Categorical): estimate it as Python tensordict does.
        const int64_t n = options_.n_empirical_estimate();
        const auto samples = dist.has_rsample() ? dist.rsample({n}) : dist.sample({n});
        TDRL_CHECK(samples.is_floating_point(), TypeError, where(),
                   ": MEAN interaction: ", dist.name(),
                   " has no mean (its values are class labels); use MODE or "
                   "DETERMINISTIC");
        return samples.mean(0);
      }
    case InteractionType::kDeterministic:
      return dist.deterministic_sample();
  }
  TORCH_INTERNAL_ASSERT(false, "unknown InteractionType");
}

void ProbabilisticTensorDictModuleImpl::forward_impl(const TensorDict& tensordict,
                                                     const TensorDict& tensordict_out) {
  const auto dist = get_dist(tensordict);
  const auto value = draw(*dist, effective_interaction_type());
  torch::Tensor log_prob;
  if (options_.return_log_prob() && is_selected(options_.log_prob_key())) {
    log_prob = dist->log_prob(value);
  }
  // Both entries are computed before either is written, so a failure writes nothing.
  if (is_selected(sample_key())) tensordict_out.set(sample_key(), value);
  if (log_prob.defined()) tensordict_out.set(options_.log_prob_key(), log_prob);
}

void ProbabilisticTensorDictModuleImpl::print_to(std::ostream& stream) const {
  stream << "ProbabilisticTensorDictModule(\n    in_keys=" << keys_repr(in_keys())
         << ",\n    out_keys=" << keys_repr(out_keys())
         << ",\n    distribution_class=" << distribution_class_
         << ",\n    default_interaction_type=" << options_.default_interaction_type()
         << ",\n    return_log_prob=" << (options_.return_log_prob() ? "True" : "False") << ")";
}

// ---- ProbabilisticTensorDictSequential -----------------------------------------------------

ProbabilisticTensorDictSequentialImpl::ProbabilisticTensorDictSequentialImpl(
    Modules modules, TensorDictSequentialOptions options)
    : TensorDictSequentialImpl("ProbabilisticTensorDictSequential", std::move(modules),
                               std::move(options)) {
  TDRL_CHECK(size() != 0, ValueError,
             "ProbabilisticTensorDictSequential: no module given; the last module must be a "
             "ProbabilisticTensorDictModule");
  probabilistic_ =
      std::dynamic_pointer_cast<ProbabilisticTensorDictModuleImpl>(module_list().back());
  TDRL_CHECK(probabilistic_, ValueError, "ProbabilisticTensorDictSequential: the last module is a ",
             module_list().back()->name(),
             "; it must be a ProbabilisticTensorDictModule (append one that builds "
             "the distribution)");
}

void ProbabilisticTensorDictSequentialImpl::run_deterministic_part(
    const TensorDict& tensordict) const {
  const auto& modules = module_list();
  for (size_t i = 0; i + 1 < modules.size(); ++i) {
    const auto& keys = modules[i]->in_keys();
    if (partial_tolerant() && !std::all_of(keys.begin(), keys.end(), [&](const NestedKey& k) {
          return tensordict.contains(k);
        })) {
      continue;
    }
    modules[i]->forward(tensordict);
  }
}

std::shared_ptr<Distribution> ProbabilisticTensorDictSequentialImpl::get_dist(
    const TensorDict& tensordict) const {
  run_deterministic_part(tensordict);
  return probabilistic_->get_dist(tensordict);
}

torch::Tensor ProbabilisticTensorDictSequentialImpl::log_prob(const TensorDict& tensordict) const {
  run_deterministic_part(tensordict);
  return probabilistic_->log_prob(tensordict);
}

}  // namespace tensordict::nn
