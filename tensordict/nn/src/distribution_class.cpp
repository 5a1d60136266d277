#include <tensordict/nn/distribution_class.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>

#include <tensordict/errors.h>
#include <tensordict/nn/bernoulli.h>

namespace tensordict::nn {

namespace {

std::string names_repr(const std::vector<std::string>& names) {
  std::string out = "[";
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", '" : "'") + names[i] + "'";
  return out + "]";
}

// A copy of `options` with the "mask" parameter, when given, as its mask.
CategoricalOptions with_mask(CategoricalOptions options, const DistributionParams& params) {
  auto it = params.find("mask");
  if (it != params.end() && it->second.defined()) options.mask(it->second);
  return options;
}

// Bounded options whose low and high follow the parameters: converted once per device and dtype
// and kept, so that a distribution built on a GPU copies nothing from the host (a copy per call
// waits for the GPU, and cannot run inside a CUDA graph capture). Shared by the copies of one
// DistributionClass, which may run on several threads (collector workers).
template <class Options>
class BoundsLike {
 public:
  explicit BoundsLike(Options options) : options_(std::move(options)) {}
  Options like(const torch::Tensor& param) {
    const auto target = param.options();
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& o : converted_)
      if (o.low().device() == target.device() && o.low().dtype() == target.dtype()) return o;
    Options o = options_;
    o.low(o.low().to(target));
    o.high(o.high().to(target));
    converted_.push_back(o);
    return o;
  }

 private:
  Options options_;
  std::mutex mutex_;
  std::vector<Options> converted_;
};

template <class Options>
std::shared_ptr<BoundsLike<Options>> bounds_like(Options options) {
  return std::make_shared<BoundsLike<Options>>(std::move(options));
}

}  // namespace

DistributionClass::DistributionClass(std::string name, std::vector<std::string> param_names,
                                     Make make, std::vector<std::string> optional_param_names)
    : name_(std::move(name)),
      param_names_(std::move(param_names)),
      optional_param_names_(std::move(optional_param_names)),
      make_(std::move(make)) {
  TDRL_CHECK(!name_.empty(), ValueError, "DistributionClass: the name is empty; give one");
  TDRL_CHECK(!param_names_.empty(), ValueError, "DistributionClass(", name_,
             "): no required parameter; a distribution reads at least one");
  TDRL_CHECK(make_, ValueError, "DistributionClass(", name_, "): the make function is empty");
  std::set<std::string> seen;
  for (const auto* names : {&param_names_, &optional_param_names_}) {
    for (const auto& param : *names) {
      TDRL_CHECK(seen.insert(param).second, ValueError, "DistributionClass(", name_,
                 "): parameter '", param, "' is named twice; parameter names must be unique");
    }
  }
}

bool DistributionClass::accepts(const std::string& name) const {
  return std::find(param_names_.begin(), param_names_.end(), name) != param_names_.end() ||
         std::find(optional_param_names_.begin(), optional_param_names_.end(), name) !=
             optional_param_names_.end();
}

std::shared_ptr<Distribution> DistributionClass::make(const DistributionParams& params) const {
  std::vector<std::string> missing;
  for (const auto& param : param_names_) {
    if (params.find(param) == params.end()) missing.push_back(param);
  }
  if (!missing.empty()) {
    std::vector<std::string> given;
    for (const auto& entry : params) given.push_back(entry.first);
    throw ValueError(name_ + ": missing parameter(s) " + names_repr(missing) + "; got " +
                     names_repr(given) + ", needs " + names_repr(param_names_));
  }
  for (const auto& entry : params) {
    if (!accepts(entry.first)) {
      auto accepted = param_names_;
      accepted.insert(accepted.end(), optional_param_names_.begin(), optional_param_names_.end());
      throw ValueError(name_ + ": unknown parameter '" + entry.first +
                       "'; accepted: " + names_repr(accepted));
    }
  }
  return make_(params);
}

DistributionClass DistributionClass::normal() {
  return {"Normal", {"loc", "scale"}, [](const DistributionParams& p) {
            return std::make_shared<Normal>(p.at("loc"), p.at("scale"));
          }};
}

DistributionClass DistributionClass::independent_normal(IndependentNormalOptions options) {
  return {"IndependentNormal", {"loc", "scale"}, [options](const DistributionParams& p) {
            return std::make_shared<IndependentNormal>(p.at("loc"), p.at("scale"), options);
          }};
}

DistributionClass DistributionClass::tanh_normal(TanhNormalOptions options) {
  return {
      "TanhNormal", {"loc", "scale"}, [bounds = bounds_like(options)](const DistributionParams& p) {
        return std::make_shared<TanhNormal>(p.at("loc"), p.at("scale"), bounds->like(p.at("loc")));
      }};
}

DistributionClass DistributionClass::truncated_normal(TruncatedNormalOptions options) {
  return {"TruncatedNormal",
          {"loc", "scale"},
          [bounds = bounds_like(options)](const DistributionParams& p) {
            return std::make_shared<TruncatedNormal>(p.at("loc"), p.at("scale"),
                                                     bounds->like(p.at("loc")));
          }};
}

DistributionClass DistributionClass::categorical(CategoricalOptions options) {
  return {"Categorical",
          {"logits"},
          [options](const DistributionParams& p) {
            return std::make_shared<Categorical>(Logits(p.at("logits")), with_mask(options, p));
          },
          {"mask"}};
}

DistributionClass DistributionClass::one_hot_categorical(CategoricalOptions options) {
  return {"OneHotCategorical",
          {"logits"},
          [options](const DistributionParams& p) {
            return std::make_shared<OneHotCategorical>(Logits(p.at("logits")),
                                                       with_mask(options, p));
          },
          {"mask"}};
}

DistributionClass DistributionClass::bernoulli() {
  return {"Bernoulli", {"logits"}, [](const DistributionParams& p) {
            return std::make_shared<Bernoulli>(Logits(p.at("logits")));
          }};
}

DistributionClass DistributionClass::delta(DeltaOptions options) {
  return {"Delta", {"param"}, [options](const DistributionParams& p) {
            return std::make_shared<Delta>(p.at("param"), options);
          }};
}

DistributionClass DistributionClass::tanh_delta(TanhDeltaOptions options) {
  return {"TanhDelta", {"param"}, [bounds = bounds_like(options)](const DistributionParams& p) {
            return std::make_shared<TanhDelta>(p.at("param"), bounds->like(p.at("param")));
          }};
}

std::ostream& operator<<(std::ostream& stream, const DistributionClass& distribution_class) {
  stream << distribution_class.name() << "(";
  const auto& required = distribution_class.param_names();
  for (size_t i = 0; i < required.size(); ++i) stream << (i ? ", " : "") << required[i];
  for (const auto& optional : distribution_class.optional_param_names()) {
    stream << "[, " << optional << "]";
  }
  return stream << ")";
}

}  // namespace tensordict::nn
