#pragma once

/// TensorDictSequential: runs TensorDict modules one after the other on the same TensorDict
/// (Python tensordict.nn.TensorDictSequential).

#include <cstddef>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <torch/arg.h>
#include <torch/nn/pimpl.h>

#include <tensordict/nested_key.h>
#include <tensordict/nn/module_ptr.h>
#include <tensordict/nn/tensordict_module.h>
#include <tensordict/tensor_dict.h>

namespace tensordict::nn {

/// Options of TensorDictSequential.
/// Example: `TensorDictSequentialOptions().partial_tolerant(true).selected_out_keys({"z"})`
struct TensorDictSequentialOptions {
  /// When true, a module (or nested sequence) whose in keys are not all present in the
  /// TensorDict is skipped instead of throwing KeyError. Default false.
  TORCH_ARG(bool, partial_tolerant) = false;
  /// Out keys to keep (as select_out_keys after construction); empty = all. Default empty.
  TORCH_ARG(std::vector<NestedKey>, selected_out_keys);
};

class TensorDictSequentialImpl;
class TensorDictSequential;

namespace detail {

template <typename T, typename = void>
struct IsTensorDictModuleArg : std::false_type {};
template <typename T>
struct IsTensorDictModuleArg<T, std::void_t<typename T::ContainedType>>
    : std::is_base_of<TensorDictModuleBase, typename T::ContainedType> {};
template <typename M>
struct IsTensorDictModuleArg<std::shared_ptr<M>> : std::is_base_of<TensorDictModuleBase, M> {};

/// A constructor argument of TensorDictSequential: a module holder or shared_ptr of a
/// TensorDictModuleBase subclass, or the options.
template <typename T>
inline constexpr bool kIsSequentialArg =
    IsTensorDictModuleArg<std::decay_t<T>>::value ||
    std::is_same_v<std::decay_t<T>, TensorDictSequentialOptions>;

}  // namespace detail

/// Runs TensorDict modules in order on one TensorDict: each reads its in keys from it and
/// writes its out keys into it, so later modules read what earlier ones wrote.
///
/// Keys (computed at construction from the modules' in_keys()/out_keys()): `in_keys()` are
/// the keys some module reads before any earlier module writes them, in first-read order;
/// `out_keys()` the union of the modules' writes in first-write order.
///
/// Modules are held by shared_ptr and registered as submodules "0", "1", ... (parameters,
/// train/eval, `to` and serialisation recurse into them); select_subsequence shares them.
///
/// Out-key selection: unselected out keys are written while the sequence runs (later modules
/// may need them) and deleted from the TensorDict when it ends — also when the key was there
/// before the call.
///
/// Errors: without partial_tolerant, a missing in key throws the KeyError of the module that
/// reads it (naming that module, the key and the available keys).
///
/// Construction: `TensorDictSequential seq(net, masker);` with TensorDictModule,
/// TensorDictSequential (nested) or any TensorDictModuleBase holder or shared_ptr, in any
/// number, and optionally one TensorDictSequentialOptions anywhere among them. To nest a
/// single sequence pass options too (`TensorDictSequential(inner, TensorDictSequentialOptions())`):
/// a lone holder argument is the holder's copy constructor and aliases it.
///
/// Example:
/// ```
/// TensorDictSequential seq(net, masker);
/// seq(td);  // writes ("intermediate", "x") then ("output", "probabilities")
/// ```
class TensorDictSequentialImpl : public TensorDictModuleBase {
 public:
  /// Shared pointers of the modules to run, in order.
  using Modules = std::vector<std::shared_ptr<TensorDictModuleBase>>;

  /// A sequence of `modules` (which may be empty).
  explicit TensorDictSequentialImpl(Modules modules, TensorDictSequentialOptions options = {});

  /// A sequence of the module arguments, in order, with the options argument if any.
  template <typename... Args, typename = std::enable_if_t<(detail::kIsSequentialArg<Args> && ...)>>
  explicit TensorDictSequentialImpl(Args&&... args) : TensorDictModuleBase("TensorDictSequential") {
    Modules modules;
    TensorDictSequentialOptions options;
    (add_arg(modules, options, std::forward<Args>(args)), ...);
    build(std::move(modules), std::move(options));
  }

  /// The number of modules (nested sequences count as one).
  std::size_t size() const { return modules_.size(); }
  /// The module at `index`; throws IndexError past size().
  std::shared_ptr<TensorDictModuleBase> operator[](std::size_t index) const;
  /// The modules, in order (Python's `module` ModuleList; `modules()` is torch's recursive list).
  const Modules& module_list() const { return modules_; }
  /// Whether modules with missing inputs are skipped.
  bool partial_tolerant() const { return partial_tolerant_; }

  /// A new sequence with only the modules needed, sharing them with this one:
  /// - `in_keys` given: keeps the modules whose output depends on any of them (a module is
  ///   kept when it reads one of `in_keys` or an output of a module kept before it);
  ///   modules that read none of them (including modules with no in keys) are dropped;
  /// - `out_keys` given: of those, keeps the modules that condition any of `out_keys`
  ///   (a module is kept when it writes one of them or an in key of a module kept after it);
  /// - nested sequences are filtered the same way, recursively, and dropped when empty.
  /// Not given (nullopt) means no filtering on that side. The new sequence has this one's
  /// partial_tolerant and no out-key selection; its keys are recomputed.
  /// Example: `seq->select_subsequence(std::nullopt, {{"c"}})`
  TensorDictSequential select_subsequence(
      std::optional<std::vector<NestedKey>> in_keys,
      std::optional<std::vector<NestedKey>> out_keys = std::nullopt) const;

 protected:
  /// A sequence printed and named in errors as `name` (for subclasses such as
  /// ProbabilisticTensorDictSequential).
  TensorDictSequentialImpl(std::string name, Modules modules, TensorDictSequentialOptions options);

  void forward_impl(const TensorDict& tensordict, const TensorDict& tensordict_out) override;
  /// `TensorDictSequential(\n    module=ModuleList(\n      (0): ...\n    ),\n    in_keys=...`
  void print_to(std::ostream& stream) const override;

  /// Collects one variadic constructor argument: a module (holder or shared_ptr; an empty
  /// holder is null, which the constructor refuses naming its position) is appended, options
  /// replace `options`.
  static void add_arg(Modules& modules, TensorDictSequentialOptions&,
                      ModulePtr<TensorDictModuleBase> module) {
    modules.push_back(std::move(module));
  }
  static void add_arg(Modules&, TensorDictSequentialOptions& options,
                      const TensorDictSequentialOptions& given) {
    options = given;
  }

 private:
  void build(Modules modules, TensorDictSequentialOptions options);

  Modules modules_;
  bool partial_tolerant_ = false;
};

/// Holder of TensorDictSequentialImpl: `seq(td)` runs the modules, `seq[i]` is module i.
TORCH_MODULE(TensorDictSequential);

}  // namespace tensordict::nn
