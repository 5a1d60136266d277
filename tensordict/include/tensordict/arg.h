#pragma once

/// TDRL_CRTP_ARG: TORCH_ARG for an options base shared by several options structs.

/// Declares option `name` of type `T` in a CRTP options base (`template <class Derived> struct
/// XOptionsBase`): like TORCH_ARG, a setter, two getters and the member `name_` (the macro ends
/// in a private section, so the declaration can take a default: `TDRL_CRTP_ARG(Derived, int,
/// n) = 1;`), but the setter returns the derived options, so a chain keeps its type:
/// `ClipPPOLossOptions().entropy_coef(0.0).clip_epsilon(0.1)`.
#define TDRL_CRTP_ARG(Derived, T, name)                    \
 public:                                                   \
  Derived& name(const T& new_##name) {                     \
    this->name##_ = new_##name;                            \
    return static_cast<Derived&>(*this);                   \
  }                                                        \
  const T& name() const noexcept { return this->name##_; } \
  T& name() noexcept { return this->name##_; }             \
                                                           \
 private:                                                  \
  T name##_
