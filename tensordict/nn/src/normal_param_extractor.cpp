#include <tensordict/nn/normal_param_extractor.h>

#include <cmath>
#include <sstream>

#include <torch/types.h>

#include <tensordict/errors.h>

namespace tensordict::nn {

namespace {

const char* const kWhere = "NormalParamExtractor::NormalParamExtractor";

// Parses a decimal number filling the whole of `s`, or throws ValueError naming `mapping`.
double parse_number(const std::string& s, const std::string& mapping) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  TDRL_CHECK(!(s.empty() || used != s.size()), ValueError, std::string(kWhere), ": scale_mapping '",
             mapping, "' has no valid number in '", s,
             "'; write biased_softplus_<bias> or biased_softplus_<bias>_<min>");
  return v;
}

std::function<torch::Tensor(const torch::Tensor&)> make_mapping(const std::string& name) {
  const std::string prefix = "biased_softplus_";
  if (name.rfind(prefix, 0) == 0) {
    const std::string rest = name.substr(prefix.size());
    const auto cut = rest.find('_');
    const double bias = parse_number(rest.substr(0, cut), name);
    const double min_val =
        cut == std::string::npos ? 0.01 : parse_number(rest.substr(cut + 1), name);
    if (!(bias > min_val)) {
      std::ostringstream os;
      os << kWhere << ": scale_mapping '" << name << "' needs bias > min, got bias " << bias
         << " and min " << min_val;
      throw ValueError(os.str());
    }
    // Inverse softplus of (bias - min): softplus(0 + shift) + min == bias.
    const double shift = std::log(std::expm1(bias - min_val));
    return
        [shift, min_val](const torch::Tensor& x) { return torch::softplus(x + shift) + min_val; };
  }
  if (name == "softplus") return [](const torch::Tensor& x) { return torch::softplus(x); };
  if (name == "exp") return [](const torch::Tensor& x) { return torch::exp(x); };
  if (name == "expln") {
    return [](const torch::Tensor& x) {
      return torch::where(x > 0, torch::log1p(x.clamp_min(0)) + 1, torch::exp(x.clamp_max(0)));
    };
  }
  if (name == "relu") return [](const torch::Tensor& x) { return torch::relu(x); };
  if (name == "abs") return [](const torch::Tensor& x) { return x.abs(); };
  throw ValueError(
      std::string(kWhere) + ": unknown scale_mapping '" + name + "'; valid: " +
      closest_names(name, {"biased_softplus_1.0", "softplus", "exp", "expln", "relu", "abs"}));
}

}  // namespace

NormalParamExtractorImpl::NormalParamExtractorImpl(NormalParamExtractorOptions options)
    : options_(std::move(options)), mapping_(make_mapping(options_.scale_mapping())) {
  if (!(options_.scale_lb() >= 0)) {
    std::ostringstream os;
    os << kWhere << ": scale_lb must be >= 0, got " << options_.scale_lb();
    throw ValueError(os.str());
  }
}

std::tuple<torch::Tensor, torch::Tensor> NormalParamExtractorImpl::forward(const torch::Tensor& x) {
  TDRL_CHECK(!(x.dim() < 1 || x.size(-1) % 2 != 0), ShapeError,
             "NormalParamExtractor::forward: input must have an even last dim [*batch, "
             "2 * d] to split into loc and scale, got shape ",
             shape_str(x.sizes()));
  auto halves = x.chunk(2, -1);
  return {halves[0], mapping_(halves[1]).clamp_min(options_.scale_lb())};
}

void NormalParamExtractorImpl::pretty_print(std::ostream& stream) const {
  stream << "NormalParamExtractor(scale_mapping=" << options_.scale_mapping()
         << ", scale_lb=" << options_.scale_lb() << ")";
}

}  // namespace tensordict::nn
