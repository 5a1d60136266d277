#pragma once

/// TensorDictModuleBase and TensorDictModule: modules that read their inputs from a
/// TensorDict and write their outputs back into it (Python tensordict.nn.TensorDictModule).

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <torch/arg.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <tensordict/errors.h>
#include <tensordict/nested_key.h>
#include <tensordict/tensor_dict.h>

namespace tensordict::nn {

/// The out key that discards an output: a module's output at that position is not written.
inline const char* const kDiscardKey = "_";

/// Base of every module that reads and writes a TensorDict: a `torch::nn::Module` (so
/// `parameters()`, `train()`, `eval()`, `to()`, `torch::save`/`torch::load` recurse through
/// registered submodules) with declared `in_keys()` and `out_keys()`.
///
/// `forward` is a public non-virtual entry point over the protected hook `forward_impl`.
///
/// Out-key selection (`select_out_keys`): a subclass decides how unselected outputs are kept
/// out of the result; TensorDictModule computes them but never writes them, and
/// TensorDictSequential writes them while it runs (later modules may read them) and removes
/// them when the run ends.
///
/// Thread safety: like any torch::nn::Module, concurrent forwards are safe when the wrapped
/// module's are; select_out_keys/reset_out_keys must not race with forward.
class TensorDictModuleBase : public torch::nn::Module {
 public:
  /// Reads `in_keys()` from `tensordict` and writes `out_keys()` into it, returning it (the
  /// same handle); or, when `tensordict_out` is given, writes them into `tensordict_out`
  /// (which must accept the outputs' shapes), returns it and leaves `tensordict` unchanged.
  /// Throws KeyError when an in key is missing, and whatever the wrapped module throws.
  /// (One method with an optional argument, so that the holder's `operator()` finds it.)
  TensorDict forward(TensorDict tensordict,
                     std::optional<TensorDict> tensordict_out = std::nullopt);
  /// Calls the module on plain tensors: `inputs[i]` is `in_keys()[i]`; returns the values of
  /// `out_keys()` in order. Runs through a TensorDict of batch size `[]`, so any shapes are
  /// accepted. Throws ValueError when `inputs.size() != in_keys().size()`.
  std::vector<torch::Tensor> forward_tensors(const std::vector<torch::Tensor>& inputs);

  /// Keys read from the input TensorDict, in argument order.
  const std::vector<NestedKey>& in_keys() const { return in_keys_; }
  /// Keys written: the selected ones after select_out_keys, else out_keys_source().
  const std::vector<NestedKey>& out_keys() const;
  /// Every key the module can write (never "_"), whatever the selection.
  const std::vector<NestedKey>& out_keys_source() const { return out_keys_source_; }
  /// True while a select_out_keys selection is active.
  bool has_selected_out_keys() const { return !selected_out_keys_.empty(); }

  /// Restricts the written keys to `keys` (kept in out_keys_source() order); returns this
  /// module. Throws KeyError naming a key that is not in out_keys_source() (with the valid
  /// ones) and ValueError on an empty list.
  TensorDictModuleBase& select_out_keys(const std::vector<NestedKey>& keys);
  /// Clears the selection: every key of out_keys_source() is written again. Returns this.
  TensorDictModuleBase& reset_out_keys();

  /// The multi-line description that `operator<<` prints.
  std::string to_string() const;
  /// Writes to_string() (torch::nn::Module's printing hook).
  void pretty_print(std::ostream& stream) const override { print_to(stream); }

 protected:
  /// `name` is what `name()` returns and errors start with, e.g. "TensorDictModule".
  explicit TensorDictModuleBase(std::string name) : torch::nn::Module(std::move(name)) {}

  /// Sets the declared keys; subclasses call it once in their constructor. `out_keys` must
  /// not contain "_" (subclasses drop discarded positions).
  void set_keys(std::vector<NestedKey> in_keys, std::vector<NestedKey> out_keys);
  /// True when `key` is written under the current selection.
  bool is_selected(const NestedKey& key) const;
  /// Throws KeyError when an in key of this module is missing from `tensordict`, naming
  /// `where`, the key and the available keys.
  void check_in_keys(const TensorDict& tensordict, const std::string& where) const;

  /// The hook: reads from `tensordict`, writes the selected out keys into `tensordict_out`
  /// (both may be the same handle).
  virtual void forward_impl(const TensorDict& tensordict, const TensorDict& tensordict_out) = 0;
  /// Writes the description (without trailing newline); lines after the first are indented
  /// relative to the first.
  virtual void print_to(std::ostream& stream) const = 0;

 private:
  std::vector<NestedKey> in_keys_;
  std::vector<NestedKey> out_keys_source_;
  std::vector<NestedKey> selected_out_keys_;
};

/// Prints `module.to_string()`.
std::ostream& operator<<(std::ostream& stream, const TensorDictModuleBase& module);

/// Formats keys as Python does: `['a', ('next', 'obs')]`.
std::string keys_repr(const std::vector<NestedKey>& keys);

/// Options of TensorDictModule: the keys read and written.
/// Example: `TensorDictModuleOptions().in_keys({"a", "c"}).out_keys({"output"})`
struct TensorDictModuleOptions {
  /// Keys read, passed positionally in this order. An empty list calls with no arguments.
  TensorDictModuleOptions& in_keys(std::vector<NestedKey> keys) {
    in_keys_ = std::move(keys);
    in_key_positions_.clear();
    return *this;
  }
  /// Keys read, each passed at the given argument position (Python's dict in_keys, with a
  /// position in place of a keyword). Positions must be 0..n-1, each once (checked by the
  /// module's constructor, ValueError).
  TensorDictModuleOptions& in_keys_map(std::map<NestedKey, int> key_to_position) {
    in_key_positions_ = std::move(key_to_position);
    in_keys_.clear();
    return *this;
  }
  /// Keys written, one per output of the module in order; "_" discards that output. When
  /// the module returns a map, each key (not "_") is looked up in it.
  TORCH_ARG(std::vector<NestedKey>, out_keys);

 public:
  const std::vector<NestedKey>& in_keys() const { return in_keys_; }
  const std::map<NestedKey, int>& in_keys_map() const { return in_key_positions_; }

 private:
  std::vector<NestedKey> in_keys_;
  std::map<NestedKey, int> in_key_positions_;
};

namespace detail {

/// What a wrapped module returned, before it is matched with out keys: positional tensors,
/// or tensors keyed by out key.
struct ModuleOutputs {
  std::vector<torch::Tensor> positional;
  std::map<NestedKey, torch::Tensor> keyed;
  bool is_keyed = false;
};

inline ModuleOutputs to_outputs(torch::Tensor t) { return {{std::move(t)}, {}, false}; }
inline ModuleOutputs to_outputs(std::vector<torch::Tensor> v) { return {std::move(v), {}, false}; }
inline ModuleOutputs to_outputs(std::map<NestedKey, torch::Tensor> m) {
  return {{}, std::move(m), true};
}
inline ModuleOutputs to_outputs(const std::map<std::string, torch::Tensor>& m) {
  ModuleOutputs out;
  out.is_keyed = true;
  for (const auto& [k, v] : m) out.keyed.emplace(NestedKey(k), v);
  return out;
}
template <typename... Ts>
ModuleOutputs to_outputs(std::tuple<Ts...> t) {
  static_assert((std::is_convertible_v<Ts, torch::Tensor> && ...),
                "TensorDictModule: a returned tuple must hold only tensors");
  ModuleOutputs out;
  std::apply([&out](auto&&... xs) { (out.positional.emplace_back(std::move(xs)), ...); }, t);
  return out;
}

/// The argument at `i`, or an undefined tensor past the inputs (LibTorch's "use default").
inline torch::Tensor arg_at(const std::vector<torch::Tensor>& in, std::size_t i) {
  return i < in.size() ? in[i] : torch::Tensor();
}

/// The signature of a member function (forward or a lambda's call operator).
template <typename T>
struct MemberSignature;
template <typename C, typename R, typename... Args>
struct MemberSignature<R (C::*)(Args...)> {
  static constexpr std::size_t arity = sizeof...(Args);
};
template <typename C, typename R, typename... Args>
struct MemberSignature<R (C::*)(Args...) const> {
  static constexpr std::size_t arity = sizeof...(Args);
};

template <typename T, typename = void>
struct HasCallOperator : std::false_type {};
template <typename T>
struct HasCallOperator<T, std::void_t<decltype(&T::operator())>> : std::true_type {};

template <typename F, std::size_t... I>
auto call_with(F& f, const std::vector<torch::Tensor>& in, std::index_sequence<I...>) {
  return f(arg_at(in, I)...);
}

/// True for ModuleHolder and the TORCH_MODULE classes derived from it.
template <typename T, typename = void>
struct IsModuleHolder : std::false_type {};
template <typename T>
struct IsModuleHolder<T, std::void_t<typename T::ContainedType>> : std::true_type {};

template <typename T>
struct IsSharedPtr : std::false_type {};
template <typename M>
struct IsSharedPtr<std::shared_ptr<M>> : std::true_type {};

}  // namespace detail

/// Wraps a torch::nn module or a callable of N tensors to M tensors, reading its arguments
/// from `in_keys` and writing its results to `out_keys` of a TensorDict.
///
/// What can be wrapped:
/// - a module held by a `ModuleHolder` (`torch::nn::Linear`, any `TORCH_MODULE`) or a
///   `shared_ptr` to a `torch::nn::Module` whose non-template `forward` takes tensors and
///   returns a Tensor, a `std::tuple` of tensors, a `std::vector<Tensor>` or a map keyed by
///   out key (`std::map<NestedKey, Tensor>` or `std::map<std::string, Tensor>`); also
///   `torch::nn::Sequential` (one tensor in, one out). The module is registered as the
///   submodule "module", so `parameters()`, train/eval, `to` and serialisation see it.
///   Fewer in keys than forward's parameters pass undefined tensors for the rest (LibTorch's
///   defaults, e.g. GRUCell's `hx`);
/// - a callable: a lambda or functor taking tensors (arity deduced), or one taking
///   `const std::vector<torch::Tensor>&` (any arity), returning the same kinds of results.
///
/// Keys: in keys `[*batch, ...]` are read as they are (no shape constraint beyond the
/// wrapped function's); each output is written under its out key, where TensorDict::set
/// checks that it starts with the batch size. "_" out keys discard that position.
///
/// Errors: the constructor throws ValueError when there are more in keys than forward has
/// parameters, or a dict in_keys does not cover positions 0..n-1. forward throws KeyError
/// when an in key is missing (naming this module, the key and the available keys), ValueError
/// when the number of outputs differs from the number of out keys (naming both counts),
/// KeyError when a returned map lacks an out key.
///
/// Example:
/// ```
/// TensorDictModule linear(torch::nn::Linear(3, 10),
///                         TensorDictModuleOptions().in_keys({"a"}).out_keys({"a_out"}));
/// linear(td);  // td["a_out"]: [5, 10]
/// ```
class TensorDictModuleImpl : public TensorDictModuleBase {
 public:
  /// The type-erased form every wrapped module or callable is turned into.
  using Function = std::function<detail::ModuleOutputs(const std::vector<torch::Tensor>&)>;

  /// Wraps a module held by a ModuleHolder (e.g. `torch::nn::Linear(3, 10)`).
  template <typename M>
  TensorDictModuleImpl(const torch::nn::ModuleHolder<M>& module, TensorDictModuleOptions options)
      : TensorDictModuleImpl(module.ptr(), std::move(options)) {}

  /// Wraps a module held by a shared_ptr; see the class comment for supported forwards.
  template <typename M, typename = std::enable_if_t<std::is_base_of_v<torch::nn::Module, M>>>
  TensorDictModuleImpl(std::shared_ptr<M> module, TensorDictModuleOptions options)
      : TensorDictModuleBase("TensorDictModule") {
    std::size_t arity = 1;
    Function fn;
    if constexpr (std::is_same_v<M, torch::nn::SequentialImpl>) {
      fn = [module](const std::vector<torch::Tensor>& in) {
        return detail::to_outputs(module->forward(detail::arg_at(in, 0)));
      };
    } else {
      using Forward = decltype(&M::forward);
      arity = detail::MemberSignature<Forward>::arity;
      fn = [module](const std::vector<torch::Tensor>& in) {
        auto call = [&module](auto&&... args) { return module->forward(args...); };
        constexpr std::size_t n = detail::MemberSignature<Forward>::arity;
        return detail::to_outputs(detail::call_with(call, in, std::make_index_sequence<n>{}));
      };
    }
    init(std::move(fn), arity, /*variadic=*/false, std::move(options), print_name(*module));
    module_ = register_module("module", std::shared_ptr<torch::nn::Module>(module));
  }

  /// Wraps a callable of tensors (not a module): a lambda or functor with a non-template
  /// call operator taking tensors, or any callable taking `const std::vector<Tensor>&`.
  template <typename F,
            typename = std::enable_if_t<!detail::IsModuleHolder<std::decay_t<F>>::value &&
                                        !detail::IsSharedPtr<std::decay_t<F>>::value &&
                                        !std::is_base_of_v<torch::nn::Module, std::decay_t<F>>>,
            typename = void>
  TensorDictModuleImpl(F fn, TensorDictModuleOptions options)
      : TensorDictModuleBase("TensorDictModule") {
    using Fn = std::decay_t<F>;
    if constexpr (std::is_invocable_v<Fn&, const std::vector<torch::Tensor>&>) {
      init(
          [fn](const std::vector<torch::Tensor>& in) mutable { return detail::to_outputs(fn(in)); },
          0, /*variadic=*/true, std::move(options), "<callable>");
    } else {
      static_assert(detail::HasCallOperator<Fn>::value,
                    "TensorDictModule: the callable must take tensors or a std::vector of "
                    "tensors, through a non-template call operator");
      constexpr std::size_t arity = detail::MemberSignature<decltype(&Fn::operator())>::arity;
      init(
          [fn](const std::vector<torch::Tensor>& in) mutable {
            return detail::to_outputs(detail::call_with(fn, in, std::make_index_sequence<arity>{}));
          },
          arity, /*variadic=*/false, std::move(options), "<callable>");
    }
  }

  /// Calls the wrapped function on `inputs` (positionally) and returns its outputs in
  /// out-key order, "_" positions included; no TensorDict is involved and no selection is
  /// applied. Throws ValueError on a wrong output count.
  std::vector<torch::Tensor> call_module(const std::vector<torch::Tensor>& inputs);

  /// The out keys as given, "_" included (what the module's outputs are matched against).
  const std::vector<NestedKey>& out_keys_raw() const { return out_keys_raw_; }
  /// The wrapped module, or nullptr for a callable.
  std::shared_ptr<torch::nn::Module> module() const { return module_; }

 protected:
  void forward_impl(const TensorDict& tensordict, const TensorDict& tensordict_out) override;
  /// `TensorDictModule(\n    module=Linear(...),\n    in_keys=['a'],\n    out_keys=['b'])`.
  void print_to(std::ostream& stream) const override;

 private:
  void init(Function fn, std::size_t arity, bool variadic, TensorDictModuleOptions options,
            std::string module_repr);
  static std::string print_name(const torch::nn::Module& module);
  // `TensorDictModule(module=Linear, in_keys=[...], out_keys=[...])`, the prefix of errors.
  std::string where() const;
  // Matches outputs with out_keys_raw_; throws ValueError/KeyError naming the module.
  std::vector<torch::Tensor> match_outputs(detail::ModuleOutputs outputs) const;

  Function fn_;
  std::shared_ptr<torch::nn::Module> module_;
  std::string module_repr_;
  std::vector<NestedKey> out_keys_raw_;
};

/// Holder of TensorDictModuleImpl: `linear(td)` calls `forward`.
TORCH_MODULE(TensorDictModule);

}  // namespace tensordict::nn
