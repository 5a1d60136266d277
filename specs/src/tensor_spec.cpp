// The leaf specs: shared checks in TensorSpec, per-kind sampling, membership and projection.

#include <tdrl/specs/tensor_spec.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <typeinfo>
#include <utility>

#include <ATen/ExpandUtils.h>

#include <tensordict/dtype.h>
#include <tensordict/errors.h>

#include <tdrl/specs/detail/spec_format.h>

namespace tdrl::specs {

using tensordict::shape_str;
using tensordict::ShapeError;
using tensordict::TypeError;
using tensordict::ValueError;

namespace detail {

std::string size_repr(c10::IntArrayRef shape) { return "torch.Size(" + shape_str(shape) + ")"; }

std::string indent(const std::string& text, int n) {
  const std::string pad(static_cast<size_t>(n), ' ');
  std::string out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = text.find('\n', start);
    const std::string line = text.substr(start, end == std::string::npos ? end : end - start);
    if (!line.empty()) out += pad;
    out += line;
    if (end == std::string::npos) break;
    out += '\n';
    start = end + 1;
  }
  return out;
}

void check_sizes(const std::string& op, const std::vector<int64_t>& shape) {
  for (int64_t s : shape) {
    TDRL_CHECK(!(s < 0), ValueError, op, ": shape ", shape_str(shape),
               " has a negative size; every size must be >= 0");
  }
}

bool ends_with(c10::IntArrayRef shape, c10::IntArrayRef suffix) {
  return shape.size() >= suffix.size() && shape.slice(shape.size() - suffix.size()) == suffix;
}

bool starts_with(c10::IntArrayRef shape, c10::IntArrayRef prefix) {
  return shape.size() >= prefix.size() && shape.slice(0, prefix.size()) == prefix;
}

}  // namespace detail

namespace {

c10::optional<at::Generator> gen_opt(const std::optional<torch::Generator>& generator) {
  return generator ? c10::optional<at::Generator>(*generator) : c10::nullopt;
}

torch::TensorOptions on(torch::Device device, torch::Dtype dtype) {
  return torch::TensorOptions().device(device).dtype(dtype);
}

// "value" or "value at key ('next', 'reward')", the subject of assert_is_in messages.
std::string subject(const std::string& key_path) {
  return key_path.empty() ? std::string("value") : "value at key " + key_path;
}

// One element of a 0-dim tensor as Python prints it: 2.5, 3, nan, True.
std::string scalar_str(const torch::Tensor& t) {
  if (t.scalar_type() == torch::kBool) return t.item<bool>() ? "True" : "False";
  if (t.is_floating_point()) {
    const double d = t.item<double>();
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
    std::ostringstream os;
    os << d;
    return os.str();
  }
  return std::to_string(t.item<int64_t>());
}

// `t[index...]`.
torch::Tensor element(const torch::Tensor& t, const std::vector<int64_t>& index) {
  if (index.empty()) return t;  // Tensor::index rejects an empty index list
  std::vector<at::indexing::TensorIndex> ix;
  ix.reserve(index.size());
  for (int64_t i : index) ix.emplace_back(i);
  return t.index(ix);
}

// A 1-D tensor as `[0, 1, 1]`, eliding after 10 elements.
std::string vector_str(const torch::Tensor& v) {
  std::string out = "[";
  const int64_t n = v.size(0);
  for (int64_t i = 0; i < n && i < 10; ++i) out += (i ? ", " : "") + scalar_str(v[i]);
  if (n > 10) out += ", ...";
  return out + "]";
}

// The first index where `mask` is true.
std::vector<int64_t> first_true(const torch::Tensor& mask) {
  // nonzero() may be column-major on CPU: make the row contiguous before reading it raw.
  const torch::Tensor row = mask.nonzero()[0].contiguous().cpu();
  return std::vector<int64_t>(row.data_ptr<int64_t>(), row.data_ptr<int64_t>() + row.numel());
}

// The smallest value of an integer dtype, as random_(from, to=None) takes it.
int64_t dtype_min(torch::Dtype dtype) {
  switch (dtype) {
    case torch::kInt8:
      return std::numeric_limits<int8_t>::min();
    case torch::kInt16:
      return std::numeric_limits<int16_t>::min();
    case torch::kInt32:
      return std::numeric_limits<int32_t>::min();
    case torch::kInt64:
      return std::numeric_limits<int64_t>::min();
    default:
      return 0;
  }
}

bool is_integer(torch::Dtype dtype) { return c10::isIntegralType(dtype, /*includeBool=*/false); }

// Discrete projections work in float64: round, send NaN to 0, clamp, cast.
torch::Tensor rounded_double(const torch::Tensor& value) {
  return torch::nan_to_num(value.to(torch::kFloat64).round(), 0.0);
}

std::vector<int64_t> without_last(const std::vector<int64_t>& shape) {
  return std::vector<int64_t>(shape.begin(), shape.end() - 1);
}

// Checks the last dim of a vector spec's shape (OneHot, Binary, MultiCategorical).
void check_last_dim(const std::string& op, const std::vector<int64_t>& shape, int64_t expected,
                    const std::string& what) {
  TDRL_CHECK(!(shape.empty() || shape.back() != expected), ShapeError, op, ": shape ",
             shape_str(shape), " must end with ", what, " = ", std::to_string(expected),
             "; e.g. shape [", std::to_string(expected), "], or [batch, ", std::to_string(expected),
             "]");
}

}  // namespace

// ---- TensorSpec ---------------------------------------------------------------------------------

TensorSpec::TensorSpec(const std::string& op, std::vector<int64_t> shape, torch::Dtype dtype,
                       torch::Device device, bool continuous)
    : shape_(std::move(shape)), dtype_(dtype), device_(device), continuous_(continuous) {
  detail::check_sizes(op, shape_);
  TDRL_CHECK(!c10::isComplexType(dtype_), TypeError, op, ": dtype ", tensordict::dtype_name(dtype_),
             " is complex; specs describe real or bool tensors");
}

int64_t TensorSpec::numel() const {
  int64_t n = 1;
  for (int64_t s : shape_) n *= s;
  return n;
}

torch::Tensor TensorSpec::rand(std::optional<torch::Generator> generator) const {
  const torch::Device draw_device = generator ? generator->device() : device_;
  return rand_impl(generator, draw_device).to(device_, dtype_);
}

torch::Tensor TensorSpec::zero() const { return torch::zeros(shape_, on(device_, dtype_)); }

bool TensorSpec::is_in(const torch::Tensor& value) const {
  if (!value.defined() || value.scalar_type() != dtype_ ||
      !detail::ends_with(value.sizes(), shape_)) {
    return false;
  }
  const std::optional<torch::Tensor> invalid = invalid_mask(value);
  return !invalid || !invalid->any().item<bool>();
}

void TensorSpec::check_trailing_shape(const std::string& op, const torch::Tensor& value,
                                      const std::string& key_path) const {
  TDRL_CHECK(value.defined(), ValueError, op, ": ", subject(key_path),
             " is an undefined tensor; expected a ", type_name(), " value of shape ",
             shape_str(shape_));
  TDRL_CHECK(detail::ends_with(value.sizes(), shape_), ShapeError, op, ": ", subject(key_path),
             " has shape ", shape_str(value.sizes()), "; the ", type_name(), " spec has shape ",
             shape_str(shape_), ", so the value's trailing dims must equal ", shape_str(shape_),
             " (any leading dims are batch dims)");
}

void TensorSpec::assert_is_in(const torch::Tensor& value, const std::string& key_path) const {
  const std::string op = "TensorSpec::assert_is_in";
  check_trailing_shape(op, value, key_path);
  TDRL_CHECK(value.scalar_type() == dtype_, TypeError, op, ": ", subject(key_path), " has dtype ",
             tensordict::dtype_name(value.scalar_type()), "; the ", type_name(), " spec expects ",
             tensordict::dtype_name(dtype_), "; cast it with .to(", tensordict::dtype_name(dtype_),
             ")");
  const std::optional<torch::Tensor> invalid = invalid_mask(value);
  TDRL_CHECK(!(invalid && invalid->any().item<bool>()), ValueError, op, ": ", subject(key_path),
             " is outside the ", type_name(),
             " spec: ", (describe_invalid(value, first_true(*invalid))),
             "; project() maps values into the spec");
}

torch::Tensor TensorSpec::project(const torch::Tensor& value) const {
  check_trailing_shape("TensorSpec::project", value, "");
  return project_impl(value);
}

TensorSpecPtr TensorSpec::expand(std::vector<int64_t> shape) const {
  detail::check_sizes("TensorSpec::expand", shape);
  TDRL_CHECK(detail::ends_with(shape, shape_), ShapeError, "TensorSpec::expand: new shape ",
             shape_str(shape), " must end with the ", type_name(), " spec's shape ",
             shape_str(shape_), " (the new leading dims are batch dims), e.g. [4, *shape]");
  TensorSpecPtr out = copy();
  out->shape_ = shape;
  out->map_tensors_([&shape](const torch::Tensor& t) { return t.expand(shape); });
  return out;
}

TensorSpecPtr TensorSpec::to(torch::Device device) const {
  TensorSpecPtr out = copy();
  out->device_ = device;
  out->map_tensors_([device](const torch::Tensor& t) { return t.to(device); });
  return out;
}

TensorSpecPtr TensorSpec::clone() const {
  TensorSpecPtr out = copy();
  out->map_tensors_([](const torch::Tensor& t) { return t.clone(); });
  return out;
}

std::string TensorSpec::to_string() const {
  // Continuation lines of the space (ContinuousBox's bounds) sit one level deeper.
  std::string space = space_repr();
  const size_t first_break = space.find('\n');
  if (first_break != std::string::npos) {
    space = space.substr(0, first_break + 1) + detail::indent(space.substr(first_break + 1), 4);
  }
  return type_name() + "(\n    shape=" + detail::size_repr(shape_) + ",\n    space=" + space +
         ",\n    device=" + device_.str() + ",\n    dtype=" + tensordict::dtype_name(dtype_) +
         ",\n    domain=" + domain() + ")";
}

bool TensorSpec::operator==(const TensorSpec& other) const {
  return typeid(*this) == typeid(other) && shape_ == other.shape_ && dtype_ == other.dtype_ &&
         device_ == other.device_ && params_equal(other);
}

std::ostream& operator<<(std::ostream& os, const TensorSpec& spec) {
  return os << spec.to_string();
}

// ---- Unbounded ----------------------------------------------------------------------------------

Unbounded::Unbounded(std::vector<int64_t> shape, UnboundedOptions options)
    : TensorSpec("Unbounded", std::move(shape), options.dtype(), options.device(),
                 c10::isFloatingType(options.dtype())) {}

std::string Unbounded::type_name() const {
  return is_continuous() ? "UnboundedContinuous" : "UnboundedDiscrete";
}

torch::Tensor Unbounded::rand_impl(const std::optional<torch::Generator>& generator,
                                   torch::Device device) const {
  if (is_continuous()) {
    const torch::Dtype draw = dtype() == torch::kFloat64 ? torch::kFloat64 : torch::kFloat32;
    return torch::randn(shape(), gen_opt(generator), on(device, draw));
  }
  if (dtype() == torch::kBool) {
    return torch::randint(2, shape(), gen_opt(generator), on(device, torch::kInt64));
  }
  // Uniform over the dtype's whole range: [min, max].
  return torch::empty(shape(), on(device, dtype()))
      .random_(dtype_min(dtype()), c10::nullopt, gen_opt(generator));
}

std::optional<torch::Tensor> Unbounded::invalid_mask(const torch::Tensor& value) const {
  if (!is_continuous()) return std::nullopt;
  return value.isnan();
}

std::string Unbounded::describe_invalid(const torch::Tensor& value,
                                        const std::vector<int64_t>& index) const {
  return "element " + shape_str(index) + " is nan; an Unbounded spec takes any value but NaN";
}

torch::Tensor Unbounded::project_impl(const torch::Tensor& value) const {
  return value.to(dtype(), /*non_blocking=*/false, /*copy=*/true);
}

// ---- Bounded ------------------------------------------------------------------------------------

namespace {

// The spec's shape: given, or the broadcast shape of low and high.
std::vector<int64_t> bounded_shape(const BoundedOptions& options) {
  TDRL_CHECK(options.low().defined() && options.high().defined(), ValueError,
             "Bounded: low and high are required; set both, e.g. "
             "BoundedOptions().low(-1.0).high(1.0).shape({3})");
  if (options.shape()) return *options.shape();
  const c10::IntArrayRef low = options.low().sizes();
  const c10::IntArrayRef high = options.high().sizes();
  // infer_size throws c10::Error; check broadcastability first to throw ShapeError instead.
  const size_t n = std::max(low.size(), high.size());
  for (size_t i = 0; i < n; ++i) {
    const int64_t a = i < low.size() ? low[low.size() - 1 - i] : 1;
    const int64_t b = i < high.size() ? high[high.size() - 1 - i] : 1;
    TDRL_CHECK(!(a != b && a != 1 && b != 1), ShapeError, "Bounded: low of shape ", shape_str(low),
               " and high of shape ", shape_str(high),
               " do not broadcast together; give bounds of one shape, or set the "
               "shape with .shape(...)");
  }
  return at::infer_size(low, high);
}

// Checks one bound against the spec's shape and dtype; returns it as float64 of that shape.
torch::Tensor checked_bound(const std::string& name, const torch::Tensor& bound,
                            const std::vector<int64_t>& shape, torch::Dtype dtype) {
  TDRL_CHECK(at::is_expandable_to(bound.sizes(), shape), ShapeError, "Bounded: ", name,
             " of shape ", shape_str(bound.sizes()), " does not broadcast to the spec's shape ",
             shape_str(shape), "; give a scalar or a tensor broadcastable to ", shape_str(shape));
  TDRL_CHECK(!c10::isComplexType(bound.scalar_type()), TypeError, "Bounded: ", name,
             " is complex; bounds must be real");
  const torch::Tensor b = bound.to(torch::kCPU, torch::kFloat64).expand(shape);
  const torch::Tensor not_finite = b.isfinite().logical_not();
  if (not_finite.any().item<bool>()) {
    const auto index = first_true(not_finite);
    throw ValueError("Bounded: " + name + " is " + scalar_str(element(b, index)) + " at index " +
                     shape_str(index) +
                     "; bounds must be finite (use Unbounded for a dim without bounds)");
  }
  if (is_integer(dtype)) {
    const torch::Tensor fractional = b != b.round();
    if (fractional.any().item<bool>()) {
      const auto index = first_true(fractional);
      throw ValueError("Bounded: " + name + " is " + scalar_str(element(b, index)) + " at index " +
                       shape_str(index) + ", not an integer, but the dtype is " +
                       tensordict::dtype_name(dtype) + "; give integer bounds or a floating dtype");
    }
  }
  return b;
}

}  // namespace

Bounded::Bounded(const BoundedOptions& options)
    : TensorSpec("Bounded", bounded_shape(options), options.dtype(), options.device(),
                 c10::isFloatingType(options.dtype())) {
  TDRL_CHECK(dtype() != torch::kBool, TypeError,
             "Bounded: dtype torch.bool has no range; use Binary for booleans");
  const torch::Tensor low = checked_bound("low", options.low(), shape(), dtype());
  const torch::Tensor high = checked_bound("high", options.high(), shape(), dtype());
  const torch::Tensor inverted = low > high;
  if (inverted.any().item<bool>()) {
    const auto index = first_true(inverted);
    throw ValueError("Bounded: low > high at index " + shape_str(index) + " (low " +
                     scalar_str(element(low, index)) + ", high " +
                     scalar_str(element(high, index)) + "); every low must be <= its high");
  }
  low_ = options.low().to(device(), dtype(), false, /*copy=*/true).expand(shape()).contiguous();
  high_ = options.high().to(device(), dtype(), false, /*copy=*/true).expand(shape()).contiguous();
}

std::string Bounded::type_name() const {
  return is_continuous() ? "BoundedContinuous" : "BoundedDiscrete";
}

torch::Tensor Bounded::rand_impl(const std::optional<torch::Generator>& generator,
                                 torch::Device device) const {
  const torch::Tensor low = low_.to(device, torch::kFloat64);
  const torch::Tensor high = high_.to(device, torch::kFloat64);
  const torch::Tensor u = torch::rand(shape(), gen_opt(generator), on(device, torch::kFloat64));
  // Integers: floor of a uniform draw over [low, high + 1). Both forms are clamped because
  // rounding (and the cast to a narrower dtype) can land a hair outside the box.
  const torch::Tensor r =
      is_continuous() ? low + (high - low) * u : low + ((high - low + 1) * u).floor();
  return torch::maximum(torch::minimum(r.to(dtype()), high_.to(device)), low_.to(device));
}

std::optional<torch::Tensor> Bounded::invalid_mask(const torch::Tensor& value) const {
  const torch::Tensor low = low_.to(value.device());
  const torch::Tensor high = high_.to(value.device());
  // Written as "not inside" so that NaN counts as invalid.
  return ((value >= low) & (value <= high)).logical_not();
}

std::string Bounded::describe_invalid(const torch::Tensor& value,
                                      const std::vector<int64_t>& index) const {
  const std::vector<int64_t> own(index.end() - ndim(), index.end());
  return "element " + shape_str(index) + " is " + scalar_str(element(value, index)) +
         ", outside [low, high] = [" + scalar_str(element(low_, own)) + ", " +
         scalar_str(element(high_, own)) + "]";
}

torch::Tensor Bounded::project_impl(const torch::Tensor& value) const {
  const torch::Tensor low = low_.to(value.device());
  const torch::Tensor high = high_.to(value.device());
  if (is_continuous()) return torch::maximum(torch::minimum(value.to(dtype()), high), low);
  const torch::Tensor v = rounded_double(value);
  return torch::maximum(torch::minimum(v, high.to(torch::kFloat64)), low.to(torch::kFloat64))
      .to(dtype());
}

std::string Bounded::space_repr() const {
  const auto tensor_repr = [](const torch::Tensor& t) {
    return "Tensor(shape=" + detail::size_repr(t.sizes()) + ", device=" + t.device().str() +
           ", dtype=" + tensordict::dtype_name(t.scalar_type()) +
           ", contiguous=" + (t.is_contiguous() ? "True" : "False") + ")";
  };
  return "ContinuousBox(\n    low=" + tensor_repr(low_) + ",\n    high=" + tensor_repr(high_) + ")";
}

void Bounded::map_tensors_(const std::function<torch::Tensor(const torch::Tensor&)>& fn) {
  low_ = fn(low_);
  high_ = fn(high_);
}

bool Bounded::params_equal(const TensorSpec& other) const {
  const auto& o = static_cast<const Bounded&>(other);
  return torch::equal(low_, o.low_) && torch::equal(high_, o.high_);
}

// ---- Categorical --------------------------------------------------------------------------------

namespace {

int64_t checked_n(const std::string& op, int64_t n) {
  TDRL_CHECK(!(n < 1), ValueError, op, ": n is ", std::to_string(n), "; it must be >= 1");
  return n;
}

void check_integer_dtype(const std::string& op, torch::Dtype dtype, bool allow_bool) {
  TDRL_CHECK(c10::isIntegralType(dtype, allow_bool), TypeError, op, ": dtype ",
             tensordict::dtype_name(dtype), " is not ",
             (allow_bool ? "an integer or bool dtype" : "an integer dtype"),
             "; use e.g. torch.int64");
}

}  // namespace

Categorical::Categorical(int64_t n, CategoricalOptions options)
    : TensorSpec("Categorical", options.shape().value_or(std::vector<int64_t>{}), options.dtype(),
                 options.device(), false),
      n_(checked_n("Categorical", n)) {
  check_integer_dtype("Categorical", dtype(), /*allow_bool=*/false);
}

torch::Tensor Categorical::rand_impl(const std::optional<torch::Generator>& generator,
                                     torch::Device device) const {
  return torch::randint(n_, shape(), gen_opt(generator), on(device, torch::kInt64));
}

std::optional<torch::Tensor> Categorical::invalid_mask(const torch::Tensor& value) const {
  return (value < 0) | (value >= n_);
}

std::string Categorical::describe_invalid(const torch::Tensor& value,
                                          const std::vector<int64_t>& index) const {
  return "element " + shape_str(index) + " is " + scalar_str(element(value, index)) +
         ", outside [0, n) = [0, " + std::to_string(n_) + ")";
}

torch::Tensor Categorical::project_impl(const torch::Tensor& value) const {
  return rounded_double(value).clamp(0, n_ - 1).to(dtype());
}

std::string Categorical::space_repr() const {
  return "CategoricalBox(n=" + std::to_string(n_) + ")";
}

bool Categorical::params_equal(const TensorSpec& other) const {
  return n_ == static_cast<const Categorical&>(other).n_;
}

torch::Tensor Categorical::to_one_hot(const torch::Tensor& index) const {
  const std::string op = "Categorical::to_one_hot";
  check_trailing_shape(op, index, "");
  TDRL_CHECK(is_integer(index.scalar_type()), TypeError, op, ": indices have dtype ",
             tensordict::dtype_name(index.scalar_type()), "; they must be integers");
  const torch::Tensor invalid = *invalid_mask(index);
  TDRL_CHECK(!(invalid.any().item<bool>()), ValueError, op, ": ",
             (describe_invalid(index, first_true(invalid))));
  return at::one_hot(index.to(torch::kInt64), n_).to(dtype());
}

std::shared_ptr<OneHot> Categorical::to_one_hot_spec() const {
  std::vector<int64_t> one_hot_shape = shape();
  one_hot_shape.push_back(n_);
  return std::make_shared<OneHot>(
      n_, OneHotOptions().shape(one_hot_shape).dtype(dtype()).device(device()));
}

// ---- OneHot -------------------------------------------------------------------------------------

namespace {

std::vector<int64_t> vector_spec_shape(const std::string& op, int64_t n,
                                       const std::optional<std::vector<int64_t>>& shape) {
  checked_n(op, n);
  std::vector<int64_t> out = shape.value_or(std::vector<int64_t>{n});
  check_last_dim(op, out, n, "n");
  return out;
}

}  // namespace

OneHot::OneHot(int64_t n, OneHotOptions options)
    : TensorSpec("OneHot", vector_spec_shape("OneHot", n, options.shape()), options.dtype(),
                 options.device(), false),
      n_(n) {
  check_integer_dtype("OneHot", dtype(), /*allow_bool=*/true);
}

torch::Tensor OneHot::rand_impl(const std::optional<torch::Generator>& generator,
                                torch::Device device) const {
  const torch::Tensor index =
      torch::randint(n_, without_last(shape()), gen_opt(generator), on(device, torch::kInt64));
  return at::one_hot(index, n_);
}

std::optional<torch::Tensor> OneHot::invalid_mask(const torch::Tensor& value) const {
  const torch::Tensor v = value.to(torch::kFloat64);
  const torch::Tensor zero_or_one = ((v == 0) | (v == 1)).all(-1);
  const torch::Tensor one_hot = (v == 1).sum(-1) == 1;
  return (zero_or_one & one_hot).logical_not();
}

std::string OneHot::describe_invalid(const torch::Tensor& value,
                                     const std::vector<int64_t>& index) const {
  return "vector " + shape_str(index) + " is " + vector_str(element(value, index)) +
         ", not one-hot (exactly one 1, zeros elsewhere)";
}

torch::Tensor OneHot::project_impl(const torch::Tensor& value) const {
  return at::one_hot(value.to(torch::kFloat64).argmax(-1), n_).to(dtype());
}

std::string OneHot::space_repr() const { return "CategoricalBox(n=" + std::to_string(n_) + ")"; }

bool OneHot::params_equal(const TensorSpec& other) const {
  return n_ == static_cast<const OneHot&>(other).n_;
}

torch::Tensor OneHot::to_categorical(const torch::Tensor& one_hot) const {
  const std::string op = "OneHot::to_categorical";
  check_trailing_shape(op, one_hot, "");
  const torch::Tensor invalid = *invalid_mask(one_hot);
  TDRL_CHECK(!(invalid.any().item<bool>()), ValueError, op, ": ",
             (describe_invalid(one_hot, first_true(invalid))));
  return one_hot.to(torch::kFloat64).argmax(-1);
}

std::shared_ptr<Categorical> OneHot::to_categorical_spec() const {
  return std::make_shared<Categorical>(
      n_, CategoricalOptions().shape(without_last(shape())).dtype(torch::kInt64).device(device()));
}

// ---- Binary -------------------------------------------------------------------------------------

namespace {

std::vector<int64_t> binary_shape(const std::optional<std::vector<int64_t>>& shape) {
  TDRL_CHECK(shape && !shape->empty(), ShapeError,
             "Binary: a shape is required when n is not given, and it cannot be a scalar; e.g. "
             "Binary(BinaryOptions().shape({4, 3})) or Binary(3)");
  checked_n("Binary", shape->back());
  return *shape;
}

}  // namespace

Binary::Binary(int64_t n, BinaryOptions options)
    : TensorSpec("Binary", vector_spec_shape("Binary", n, options.shape()), options.dtype(),
                 options.device(), false) {}

Binary::Binary(BinaryOptions options)
    : TensorSpec("Binary", binary_shape(options.shape()), options.dtype(), options.device(),
                 false) {}

torch::Tensor Binary::rand_impl(const std::optional<torch::Generator>& generator,
                                torch::Device device) const {
  return torch::randint(2, shape(), gen_opt(generator), on(device, torch::kInt64));
}

std::optional<torch::Tensor> Binary::invalid_mask(const torch::Tensor& value) const {
  if (value.scalar_type() == torch::kBool) return std::nullopt;
  return ((value == 0) | (value == 1)).logical_not();
}

std::string Binary::describe_invalid(const torch::Tensor& value,
                                     const std::vector<int64_t>& index) const {
  return "element " + shape_str(index) + " is " + scalar_str(element(value, index)) +
         "; a Binary spec holds 0 or 1";
}

torch::Tensor Binary::project_impl(const torch::Tensor& value) const {
  return (value.to(torch::kFloat64) > 0.5).to(dtype());
}

// ---- MultiCategorical ---------------------------------------------------------------------------

namespace {

std::vector<int64_t> multi_categorical_shape(const std::vector<int64_t>& nvec,
                                             const std::optional<std::vector<int64_t>>& shape) {
  const std::string op = "MultiCategorical";
  TDRL_CHECK(!nvec.empty(), ValueError, op,
             ": nvec is empty; give one class count per position, e.g. {3, 2}");
  for (size_t i = 0; i < nvec.size(); ++i) {
    TDRL_CHECK(!(nvec[i] < 1), ValueError, op, ": nvec[", std::to_string(i), "] is ",
               std::to_string(nvec[i]), "; every class count must be >= 1");
  }
  const auto k = static_cast<int64_t>(nvec.size());
  std::vector<int64_t> out = shape.value_or(std::vector<int64_t>{k});
  check_last_dim(op, out, k, "nvec.size()");
  return out;
}

}  // namespace

MultiCategorical::MultiCategorical(std::vector<int64_t> nvec, MultiCategoricalOptions options)
    : TensorSpec("MultiCategorical", multi_categorical_shape(nvec, options.shape()),
                 options.dtype(), options.device(), false),
      nvec_(std::move(nvec)) {
  check_integer_dtype("MultiCategorical", dtype(), /*allow_bool=*/false);
}

torch::Tensor MultiCategorical::nvec_tensor(torch::Device device) const {
  return torch::tensor(nvec_, torch::kInt64).to(device);
}

torch::Tensor MultiCategorical::rand_impl(const std::optional<torch::Generator>& generator,
                                          torch::Device device) const {
  const torch::Tensor nvec = nvec_tensor(device);
  const torch::Tensor u = torch::rand(shape(), gen_opt(generator), on(device, torch::kFloat64));
  return torch::minimum((u * nvec).floor().to(torch::kInt64), nvec - 1);
}

std::optional<torch::Tensor> MultiCategorical::invalid_mask(const torch::Tensor& value) const {
  return (value < 0) | (value >= nvec_tensor(value.device()));
}

std::string MultiCategorical::describe_invalid(const torch::Tensor& value,
                                               const std::vector<int64_t>& index) const {
  const int64_t position = index.back();
  return "element " + shape_str(index) + " is " + scalar_str(element(value, index)) +
         ", outside [0, nvec[" + std::to_string(position) + "]) = [0, " +
         std::to_string(nvec_[static_cast<size_t>(position)]) + ")";
}

torch::Tensor MultiCategorical::project_impl(const torch::Tensor& value) const {
  const torch::Tensor top = (nvec_tensor(value.device()) - 1).to(torch::kFloat64);
  return torch::minimum(rounded_double(value), top).clamp_min(0).to(dtype());
}

std::string MultiCategorical::space_repr() const {
  std::string boxes;
  for (size_t i = 0; i < nvec_.size(); ++i) {
    boxes += (i ? ", " : "") + std::string("CategoricalBox(n=") + std::to_string(nvec_[i]) + ")";
  }
  return "BoxList(boxes=[" + boxes + "])";
}

bool MultiCategorical::params_equal(const TensorSpec& other) const {
  return nvec_ == static_cast<const MultiCategorical&>(other).nvec_;
}

}  // namespace tdrl::specs
