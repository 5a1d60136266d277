#pragma once

/// The parameter types in which losses and value estimators take their networks: each accepts
/// a `std::shared_ptr` or a module holder (ValueOperator, QValueActor, TensorDictModule, any
/// TORCH_MODULE), so every loss has one constructor for both forms.

#include <tensordict/nn/module_ptr.h>
#include <tensordict/nn/tensordict_module.h>

namespace tdrl::losses {

/// A TensorDict network: a critic, a Q-network, a deterministic actor or a value network. An
/// empty holder gives null, which the loss refuses with its own ValueError naming the network.
using NetworkPtr = tensordict::nn::ModulePtr<tensordict::nn::TensorDictModuleBase>;
/// Several networks in order, e.g. one per Q-function: a braced list (`{q1, q2}`) or a
/// `std::vector` of holders or shared_ptrs.
using NetworkList = tensordict::nn::ModulePtrList<tensordict::nn::TensorDictModuleBase>;

}  // namespace tdrl::losses
