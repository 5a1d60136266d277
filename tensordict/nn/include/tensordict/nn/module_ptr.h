#pragma once

/// ModulePtr and ModulePtrList: the parameter types of functions that take a module (or a list
/// of modules) either as a `std::shared_ptr` or as a `torch::nn::ModuleHolder` (any
/// `TORCH_MODULE` class: TensorDictModule, ProbabilisticActor, ValueOperator, ...), so that
/// such a function needs one signature instead of one overload per form.

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include <torch/nn/pimpl.h>

namespace tensordict::nn {

/// A `std::shared_ptr<T>` that also converts, implicitly, from a ModuleHolder of a module
/// derived from T (sharing its module) and from a `std::shared_ptr` to one. An empty holder
/// (`ValueOperator q{nullptr}`) gives a null pointer, so the function taking it reports the
/// missing module itself rather than LibTorch's "Accessing empty ModuleHolder".
///
/// It is a shared_ptr in every other respect (it derives from one): `->`, `get()`, `bool`,
/// comparison, and conversion to `std::shared_ptr<Base>` for any base of T. Raw pointers do
/// not convert, so ownership is never taken by accident.
///
/// Example:
/// ```
/// void train(ModulePtr<TensorDictModuleBase> critic);
/// TensorDictModule critic(torch::nn::Linear(4, 1),
///                         TensorDictModuleOptions().in_keys({"obs"}).out_keys({"value"}));
/// train(critic);        // a holder
/// train(critic.ptr());  // a shared_ptr
/// ```
template <class T>
class ModulePtr : public std::shared_ptr<T> {
 public:
  ModulePtr() = default;
  ModulePtr(std::nullptr_t) {}  // NOLINT(google-explicit-constructor): a null module
  /// Shares `module`.
  template <class M, class = std::enable_if_t<std::is_convertible_v<M*, T*>>>
  ModulePtr(std::shared_ptr<M> module)  // NOLINT(google-explicit-constructor)
      : std::shared_ptr<T>(std::move(module)) {}
  /// Shares the module `holder` holds; null for an empty holder.
  template <class M, class = std::enable_if_t<std::is_convertible_v<M*, T*>>>
  ModulePtr(const torch::nn::ModuleHolder<M>& holder)  // NOLINT(google-explicit-constructor)
      : std::shared_ptr<T>(holder.is_empty() ? nullptr : holder.ptr()) {}
};

/// A list of ModulePtr<T> (e.g. a loss's twin Q-networks) that converts from a braced list of
/// modules (`{q1, q2}`, each a holder or a shared_ptr) and from a `std::vector` of either form
/// (`std::vector<ValueOperator>`), keeping their order.
template <class T>
class ModulePtrList : public std::vector<ModulePtr<T>> {
 public:
  ModulePtrList() = default;
  ModulePtrList(std::initializer_list<ModulePtr<T>> modules)  // NOLINT(google-explicit-constructor)
      : std::vector<ModulePtr<T>>(modules) {}
  /// One ModulePtr per element of `modules`.
  template <class M, class = std::enable_if_t<std::is_convertible_v<const M&, ModulePtr<T>>>>
  ModulePtrList(const std::vector<M>& modules)  // NOLINT(google-explicit-constructor)
      : std::vector<ModulePtr<T>>(modules.begin(), modules.end()) {}
};

}  // namespace tensordict::nn
