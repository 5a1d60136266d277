#pragma once

/// TorchRL's tensor specs: what shape, dtype, device and values one tensor may take.
///
/// `TensorSpec` is the abstract base of the leaf specs `Unbounded`, `Bounded`, `Categorical`,
/// `OneHot`, `Binary` and `MultiCategorical`; `Composite` (composite.h) groups specs under keys.
/// Specs are held by `std::shared_ptr` (`TensorSpecPtr`) and never change after construction:
/// `expand`, `to` and `clone` return new specs.
///
/// Shapes: a spec's `shape()` is the full shape of one value, batch dims first. `is_in`,
/// `assert_is_in` and `project` also take values with extra leading batch dims: a value of
/// shape `[*extra, *shape()]` is checked element-wise against the spec.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <torch/arg.h>
#include <torch/types.h>

#include <tensordict/arg.h>

namespace tdrl::specs {

class TensorSpec;
/// How specs are held and shared. Leaf specs are immutable, so sharing one is safe.
using TensorSpecPtr = std::shared_ptr<TensorSpec>;

/// The base of every leaf spec: shape, dtype, device, and the operations TorchRL gives every
/// spec (`rand`, `zero`, `is_in`, `assert_is_in`, `project`, `expand`, `to`, `clone`, printing,
/// equality).
///
/// The public methods are non-virtual: they check shapes and dtypes once for every kind of
/// spec, then call the protected hooks each kind implements.
///
/// Thread safety: a spec is immutable, so concurrent calls are safe (each `rand` call with its
/// own generator, or with the global one).
class TensorSpec {
 public:
  virtual ~TensorSpec() = default;

  /// The full shape of one value, batch dims first (e.g. `[4, 3]` for 4 envs with 3 dims).
  const std::vector<int64_t>& shape() const { return shape_; }
  /// `shape().size()`.
  int64_t ndim() const { return static_cast<int64_t>(shape_.size()); }
  /// The number of elements of one value (1 for a scalar spec).
  int64_t numel() const;
  /// The dtype of every value this spec produces and accepts.
  torch::Dtype dtype() const { return dtype_; }
  /// Where `rand` and `zero` put their tensors.
  torch::Device device() const { return device_; }
  /// "continuous" (floating-point Unbounded and Bounded) or "discrete" (everything else).
  std::string domain() const { return is_continuous() ? "continuous" : "discrete"; }
  bool is_continuous() const { return continuous_; }
  bool is_discrete() const { return !continuous_; }
  /// The name TorchRL prints: "UnboundedContinuous", "BoundedDiscrete", "OneHot", ...
  virtual std::string type_name() const = 0;

  /// A value `[*shape()]` drawn uniformly from the spec (Unbounded: standard normal for
  /// floating dtypes, uniform over the dtype's whole range for integers), on `device()`.
  /// Deterministic given `generator` (e.g.
  /// `at::make_generator<at::CPUGeneratorImpl>(seed)`); draws on the generator's device,
  /// then moves to `device()`. Without a generator, uses LibTorch's default generator.
  torch::Tensor rand(std::optional<torch::Generator> generator = std::nullopt) const;
  /// Zeros `[*shape()]` of `dtype()` on `device()` (also for OneHot, as TorchRL, though a zero
  /// vector is not one-hot).
  torch::Tensor zero() const;
  /// True when `value` could have come from this spec: its trailing dims equal `shape()` (any
  /// leading dims are extra batch dims), its dtype equals `dtype()`, and every element is
  /// valid (see each spec). An undefined tensor is not in any spec. Never throws.
  bool is_in(const torch::Tensor& value) const;
  /// Throws when `is_in(value)` is false, with a message naming `key_path` (e.g.
  /// `('next', 'reward')`; may be empty), what was expected and what was got: ShapeError for
  /// the shape, TypeError for the dtype, ValueError for an invalid element (naming its index).
  void assert_is_in(const torch::Tensor& value, const std::string& key_path = "") const;
  /// The nearest valid value, a new tensor of `dtype()` on `value`'s device with `value`'s
  /// shape: Unbounded casts, Bounded and Categorical clamp (integer specs round first),
  /// OneHot takes the argmax, Binary thresholds at 0.5 (above is 1), MultiCategorical clamps
  /// each dim. NaN stays NaN in Unbounded and Bounded. Never modifies `value`. Throws
  /// ShapeError when `value`'s trailing dims differ from `shape()`.
  torch::Tensor project(const torch::Tensor& value) const;

  /// A spec of full shape `shape`, which must end with `shape()` (TorchRL's `expand(*shape)`):
  /// `Unbounded({3})` expanded to `{4, 3}` describes 4 such values. Throws ShapeError
  /// otherwise, ValueError for a negative size.
  TensorSpecPtr expand(std::vector<int64_t> shape) const;
  /// The same spec on `device` (bounds are moved).
  TensorSpecPtr to(torch::Device device) const;
  /// A deep copy (bound tensors are copied).
  TensorSpecPtr clone() const;

  /// TorchRL's repr, e.g.
  /// ```
  /// Categorical(
  ///     shape=torch.Size([]),
  ///     space=CategoricalBox(n=4),
  ///     device=cpu,
  ///     dtype=torch.int64,
  ///     domain=discrete)
  /// ```
  std::string to_string() const;

  /// Same kind, shape, dtype, device and parameters (bounds, n, nvec) as `other`.
  bool operator==(const TensorSpec& other) const;
  bool operator!=(const TensorSpec& other) const { return !(*this == other); }

 protected:
  /// Checks `shape` (no negative size) and `dtype` (no complex), naming `op` when throwing.
  TensorSpec(const std::string& op, std::vector<int64_t> shape, torch::Dtype dtype,
             torch::Device device, bool continuous);
  TensorSpec(const TensorSpec&) = default;
  TensorSpec& operator=(const TensorSpec&) = default;

  /// A value `[*shape()]` drawn with `generator` on `device` (any dtype; `rand` casts and moves).
  virtual torch::Tensor rand_impl(const std::optional<torch::Generator>& generator,
                                  torch::Device device) const = 0;
  /// For a value whose trailing dims equal `shape()`: a bool tensor marking invalid elements
  /// (shape of `value`, or `value` without its last dim for specs judging whole vectors), or
  /// nothing when every value of the dtype is valid.
  virtual std::optional<torch::Tensor> invalid_mask(const torch::Tensor& value) const = 0;
  /// Why the element (or vector) of `value` at `index` (an index into `invalid_mask`) is
  /// invalid, e.g. "element [1] is 2.5, outside [low, high] = [-1, 1]".
  virtual std::string describe_invalid(const torch::Tensor& value,
                                       const std::vector<int64_t>& index) const = 0;
  /// The nearest valid value for a value whose trailing dims equal `shape()` (any dtype).
  virtual torch::Tensor project_impl(const torch::Tensor& value) const = 0;
  /// The `space=` part of the repr, e.g. "CategoricalBox(n=4)"; continuation lines unindented.
  virtual std::string space_repr() const = 0;
  /// A copy of the most-derived object, sharing tensors.
  virtual TensorSpecPtr copy() const = 0;
  /// Replaces every tensor the spec holds by `fn(tensor)` (expand, to, clone use it).
  virtual void map_tensors_(const std::function<torch::Tensor(const torch::Tensor&)>& fn) {}
  /// Parameters equal; `other` has the same dynamic type, shape, dtype and device.
  virtual bool params_equal(const TensorSpec& other) const = 0;

  /// Throws ShapeError naming `op` unless `value`'s trailing dims equal `shape()`.
  void check_trailing_shape(const std::string& op, const torch::Tensor& value,
                            const std::string& key_path) const;

 private:
  std::vector<int64_t> shape_;
  torch::Dtype dtype_;
  torch::Device device_;
  bool continuous_;
};

std::ostream& operator<<(std::ostream& os, const TensorSpec& spec);

// ---- Leaf spec options --------------------------------------------------------------------------

/// The options the sized leaf specs share (CRTP base of BoundedOptions, CategoricalOptions,
/// OneHotOptions, BinaryOptions and MultiCategoricalOptions): the shape, the dtype and the
/// device. Each spec documents its default shape and dtype.
template <class Derived>
struct LeafSpecOptions {
  /// The spec's shape. Default: the spec's own (see its options).
  Derived& shape(std::vector<int64_t> v) {
    shape_ = std::move(v);
    return static_cast<Derived&>(*this);
  }
  /// The shape given, or nothing for the spec's default.
  const std::optional<std::vector<int64_t>>& shape() const { return shape_; }
  /// The dtype. Default: the spec's own (see its options).
  TDRL_CRTP_ARG(Derived, torch::Dtype, dtype);
  /// Default CPU.
  TDRL_CRTP_ARG(Derived, torch::Device, device) = torch::kCPU;

 protected:
  explicit LeafSpecOptions(torch::Dtype default_dtype) : dtype_(default_dtype) {}

 private:
  std::optional<std::vector<int64_t>> shape_;
};

// ---- Unbounded ----------------------------------------------------------------------------------

/// Options of Unbounded.
/// Example: `Unbounded spec({3}, UnboundedOptions().dtype(torch::kFloat64));`
struct UnboundedOptions {
  /// Any real or bool dtype; floating dtypes make a continuous spec. Default float32.
  TORCH_ARG(torch::Dtype, dtype) = torch::kFloat32;
  /// Default CPU.
  TORCH_ARG(torch::Device, device) = torch::kCPU;
};

/// Any value of the dtype (TorchRL's Unbounded; prints as UnboundedContinuous or
/// UnboundedDiscrete). `is_in` rejects NaN and accepts ±inf. `rand` draws a standard normal
/// for floating dtypes, uniform integers over the dtype's whole range for integer dtypes,
/// 0/1 for bool. `project` only casts to `dtype()`.
/// Throws TypeError for a complex dtype, ValueError for a negative size.
/// Example: `auto obs = std::make_shared<Unbounded>(std::vector<int64_t>{3});`
class Unbounded : public TensorSpec {
 public:
  /// A spec of `shape` (default: a scalar).
  explicit Unbounded(std::vector<int64_t> shape = {}, UnboundedOptions options = {});

  std::string type_name() const override;

 protected:
  torch::Tensor rand_impl(const std::optional<torch::Generator>& generator,
                          torch::Device device) const override;
  std::optional<torch::Tensor> invalid_mask(const torch::Tensor& value) const override;
  std::string describe_invalid(const torch::Tensor& value,
                               const std::vector<int64_t>& index) const override;
  torch::Tensor project_impl(const torch::Tensor& value) const override;
  std::string space_repr() const override { return "None"; }
  TensorSpecPtr copy() const override { return std::make_shared<Unbounded>(*this); }
  bool params_equal(const TensorSpec& other) const override { return true; }
};

// ---- Bounded ------------------------------------------------------------------------------------

/// Options of Bounded: the bounds (required), and optionally shape, dtype and device.
/// Example: `BoundedOptions().low(-2.0).high(2.0).shape({1})`
struct BoundedOptions : LeafSpecOptions<BoundedOptions> {
  /// Shape default: the broadcast shape of low and high. A real dtype (default float32);
  /// integer dtypes make a discrete spec with inclusive integer bounds.
  BoundedOptions() : LeafSpecOptions(torch::kFloat32) {}
  /// Lower bound: a scalar or a tensor broadcastable to the shape. Required.
  BoundedOptions& low(double v) { return low(torch::tensor(v, torch::kFloat64)); }
  TORCH_ARG(torch::Tensor, low);

 public:
  /// Upper bound: a scalar or a tensor broadcastable to the shape; >= low. Required.
  BoundedOptions& high(double v) { return high(torch::tensor(v, torch::kFloat64)); }
  TORCH_ARG(torch::Tensor, high);
};

/// Values in the box [low, high], element-wise (TorchRL's Bounded; prints as
/// BoundedContinuous, or BoundedDiscrete for integer dtypes). `rand` draws uniformly in the box
/// (integer specs: uniform integers, both bounds included); `project` clamps.
///
/// Throws ValueError when low or high is missing, not finite, not an integer for an integer
/// dtype, or when some low > high (naming the first such index); ShapeError when low or high
/// does not broadcast to the shape; TypeError for a bool or complex dtype (use Binary for
/// booleans).
/// Example:
/// ```
/// auto action = std::make_shared<Bounded>(BoundedOptions().low(-1.0).high(1.0).shape({6}));
/// ```
class Bounded : public TensorSpec {
 public:
  explicit Bounded(const BoundedOptions& options);

  /// Lower bounds `[*shape()]` in `dtype()` on `device()`.
  const torch::Tensor& low() const { return low_; }
  /// Upper bounds `[*shape()]` in `dtype()` on `device()`.
  const torch::Tensor& high() const { return high_; }

  std::string type_name() const override;

 protected:
  torch::Tensor rand_impl(const std::optional<torch::Generator>& generator,
                          torch::Device device) const override;
  std::optional<torch::Tensor> invalid_mask(const torch::Tensor& value) const override;
  std::string describe_invalid(const torch::Tensor& value,
                               const std::vector<int64_t>& index) const override;
  torch::Tensor project_impl(const torch::Tensor& value) const override;
  std::string space_repr() const override;
  TensorSpecPtr copy() const override { return std::make_shared<Bounded>(*this); }
  void map_tensors_(const std::function<torch::Tensor(const torch::Tensor&)>& fn) override;
  bool params_equal(const TensorSpec& other) const override;

 private:
  torch::Tensor low_;
  torch::Tensor high_;
};

// ---- Categorical --------------------------------------------------------------------------------

/// Options of Categorical.
/// Example: `CategoricalOptions().shape({4})` (4 envs, one index each)
struct CategoricalOptions : LeafSpecOptions<CategoricalOptions> {
  /// Shape default `[]` (one index); an integer dtype, default int64.
  CategoricalOptions() : LeafSpecOptions(torch::kInt64) {}
};

class OneHot;

/// Class indices in [0, n) (TorchRL's Categorical). `rand` draws each index uniformly;
/// `project` rounds and clamps to [0, n - 1].
/// Throws ValueError for n < 1, TypeError for a non-integer dtype.
/// Example: `auto action = std::make_shared<Categorical>(4);`
class Categorical : public TensorSpec {
 public:
  explicit Categorical(int64_t n, CategoricalOptions options = {});

  /// The number of classes.
  int64_t n() const { return n_; }
  /// The one-hot encoding `[*index.shape(), n]` of the indices `index` (shape
  /// `[*extra, *shape()]`), in `dtype()`. Throws ShapeError for a wrong shape, ValueError for
  /// an index outside [0, n).
  torch::Tensor to_one_hot(const torch::Tensor& index) const;
  /// The OneHot spec of the encodings: shape `[*shape(), n]`, same dtype and device.
  std::shared_ptr<OneHot> to_one_hot_spec() const;

  std::string type_name() const override { return "Categorical"; }

 protected:
  torch::Tensor rand_impl(const std::optional<torch::Generator>& generator,
                          torch::Device device) const override;
  std::optional<torch::Tensor> invalid_mask(const torch::Tensor& value) const override;
  std::string describe_invalid(const torch::Tensor& value,
                               const std::vector<int64_t>& index) const override;
  torch::Tensor project_impl(const torch::Tensor& value) const override;
  std::string space_repr() const override;
  TensorSpecPtr copy() const override { return std::make_shared<Categorical>(*this); }
  bool params_equal(const TensorSpec& other) const override;

 private:
  int64_t n_;
};

// ---- OneHot -------------------------------------------------------------------------------------

/// Options of OneHot.
/// Example: `OneHotOptions().shape({8, 4}).dtype(torch::kBool)`
struct OneHotOptions : LeafSpecOptions<OneHotOptions> {
  /// Shape: its last dim must be n, default `[n]`; an integer or bool dtype, default int64.
  OneHotOptions() : LeafSpecOptions(torch::kInt64) {}
};

/// One-hot vectors of length n along the last dim (TorchRL's OneHot): each vector has exactly
/// one 1 and zeros elsewhere. `rand` picks the hot index uniformly; `project` takes the argmax
/// (the first one on ties).
/// Throws ValueError for n < 1, ShapeError when the shape's last dim is not n, TypeError for a
/// floating or complex dtype.
/// Example: `auto action = std::make_shared<OneHot>(4);`
class OneHot : public TensorSpec {
 public:
  explicit OneHot(int64_t n, OneHotOptions options = {});

  /// The length of each one-hot vector.
  int64_t n() const { return n_; }
  /// The int64 indices `[*extra, *shape()[:-1]]` of the one-hot vectors `one_hot` (shape
  /// `[*extra, *shape()]`, any dtype). Throws ShapeError for a wrong shape, ValueError naming
  /// the first vector that is not one-hot.
  torch::Tensor to_categorical(const torch::Tensor& one_hot) const;
  /// The Categorical spec of the indices: shape `shape()[:-1]`, int64, same device.
  std::shared_ptr<Categorical> to_categorical_spec() const;

  std::string type_name() const override { return "OneHot"; }

 protected:
  torch::Tensor rand_impl(const std::optional<torch::Generator>& generator,
                          torch::Device device) const override;
  std::optional<torch::Tensor> invalid_mask(const torch::Tensor& value) const override;
  std::string describe_invalid(const torch::Tensor& value,
                               const std::vector<int64_t>& index) const override;
  torch::Tensor project_impl(const torch::Tensor& value) const override;
  std::string space_repr() const override;
  TensorSpecPtr copy() const override { return std::make_shared<OneHot>(*this); }
  bool params_equal(const TensorSpec& other) const override;

 private:
  int64_t n_;
};

// ---- Binary -------------------------------------------------------------------------------------

/// Options of Binary.
/// Example: `BinaryOptions().shape({4, 3}).dtype(torch::kBool)`
struct BinaryOptions : LeafSpecOptions<BinaryOptions> {
  /// Shape: not a scalar; with `Binary(n, ...)` its last dim must be n, default `[n]`. A real
  /// or bool dtype, default int8 (as TorchRL).
  BinaryOptions() : LeafSpecOptions(torch::kInt8) {}
};

/// Vectors of n independent 0/1 values (TorchRL's Binary). `rand` draws each element 0 or 1
/// with probability 1/2; `project` maps values above 0.5 to 1 and the rest to 0.
/// Throws ValueError for n < 1, ShapeError for a scalar shape or one whose last dim is not n,
/// TypeError for a complex dtype.
/// Example: `auto flags = std::make_shared<Binary>(3);`
class Binary : public TensorSpec {
 public:
  /// `n` values, shape `options.shape()` (default `[n]`).
  explicit Binary(int64_t n, BinaryOptions options = {});
  /// Shape from `options.shape()` (required); n is its last dim.
  explicit Binary(BinaryOptions options);

  /// The number of values per vector (the last dim).
  int64_t n() const { return shape().back(); }

  std::string type_name() const override { return "Binary"; }

 protected:
  torch::Tensor rand_impl(const std::optional<torch::Generator>& generator,
                          torch::Device device) const override;
  std::optional<torch::Tensor> invalid_mask(const torch::Tensor& value) const override;
  std::string describe_invalid(const torch::Tensor& value,
                               const std::vector<int64_t>& index) const override;
  torch::Tensor project_impl(const torch::Tensor& value) const override;
  std::string space_repr() const override { return "CategoricalBox(n=2)"; }
  TensorSpecPtr copy() const override { return std::make_shared<Binary>(*this); }
  bool params_equal(const TensorSpec& other) const override { return true; }
};

// ---- MultiCategorical ---------------------------------------------------------------------------

/// Options of MultiCategorical.
/// Example: `MultiCategoricalOptions().shape({4, 2})`
struct MultiCategoricalOptions : LeafSpecOptions<MultiCategoricalOptions> {
  /// Shape: its last dim must be `nvec.size()`, default `[nvec.size()]`; an integer dtype,
  /// default int64.
  MultiCategoricalOptions() : LeafSpecOptions(torch::kInt64) {}
};

/// Several class indices side by side along the last dim (TorchRL's MultiCategorical): the
/// element at last-dim position i lies in [0, nvec[i]). `rand` draws each uniformly;
/// `project` rounds and clamps each to [0, nvec[i] - 1].
/// Throws ValueError for an empty nvec or an entry < 1, ShapeError when the shape's last dim is
/// not `nvec.size()`, TypeError for a non-integer dtype.
/// Example: `auto action = std::make_shared<MultiCategorical>(std::vector<int64_t>{3, 2});`
class MultiCategorical : public TensorSpec {
 public:
  explicit MultiCategorical(std::vector<int64_t> nvec, MultiCategoricalOptions options = {});

  /// The number of classes of each last-dim position.
  const std::vector<int64_t>& nvec() const { return nvec_; }

  std::string type_name() const override { return "MultiCategorical"; }

 protected:
  torch::Tensor rand_impl(const std::optional<torch::Generator>& generator,
                          torch::Device device) const override;
  std::optional<torch::Tensor> invalid_mask(const torch::Tensor& value) const override;
  std::string describe_invalid(const torch::Tensor& value,
                               const std::vector<int64_t>& index) const override;
  torch::Tensor project_impl(const torch::Tensor& value) const override;
  std::string space_repr() const override;
  TensorSpecPtr copy() const override { return std::make_shared<MultiCategorical>(*this); }
  bool params_equal(const TensorSpec& other) const override;

 private:
  /// nvec as an int64 tensor on `device`.
  torch::Tensor nvec_tensor(torch::Device device) const;

  std::vector<int64_t> nvec_;
};

}  // namespace tdrl::specs
