#pragma once

/// `EntropyTemperature`: the learnt entropy temperature of the maximum-entropy losses (SACLoss,
/// DiscreteSACLoss, CQLLoss), for a loss of your own that needs one too.

#include <optional>
#include <string>

#include <torch/nn/module.h>
#include <torch/types.h>

#include <tensordict/arg.h>
#include <tensordict/fields.h>

namespace tdrl::losses {

/// The temperature options every maximum-entropy loss takes (TorchRL's constructor
/// arguments), as a base of its options struct: `SACLossOptions().alpha_init(0.2)`.
template <class Derived>
struct TemperatureOptions {
  /// Initial entropy temperature alpha (> 0). Default 1.0.
  TDRL_CRTP_ARG(Derived, double, alpha_init) = 1.0;
  /// Lower bound of alpha (log alpha is clamped before use). Default none.
  TDRL_CRTP_ARG(Derived, std::optional<double>, min_alpha);
  /// Upper bound of alpha. Default none.
  TDRL_CRTP_ARG(Derived, std::optional<double>, max_alpha);
  /// Keep alpha at alpha_init: log_alpha is a buffer and loss_alpha is 0. Default false.
  TDRL_CRTP_ARG(Derived, bool, fixed_alpha) = false;
  /// The target entropy of the temperature loss. Default unset = TorchRL's "auto", which each
  /// loss resolves from its action space (see its options).
  TDRL_CRTP_ARG(Derived, std::optional<double>, target_entropy);

 public:
  void fields(tensordict::fields::FieldVisitor& v) {
    namespace tf = tensordict::fields;
    v("alpha_init", alpha_init_, tf::greater_than(0), "initial entropy temperature");
    v("min_alpha", min_alpha_, tf::greater_than(0), "lower bound of alpha (null: none)");
    v("max_alpha", max_alpha_, tf::greater_than(0), "upper bound of alpha (null: none)");
    v("fixed_alpha", fixed_alpha_, "keep alpha at alpha_init");
    v("target_entropy", target_entropy_, tf::one_of({"auto"}),
      "target entropy of the temperature loss (auto: -number of action dims)");
  }
};

/// The temperature alpha = exp(log_alpha) of a maximum-entropy loss, with its target entropy.
///
/// `log_alpha` is registered on the owning loss as "log_alpha": a parameter (trained by the
/// loss's `loss_alpha` term), or a buffer with `fixed` (alpha stays at alpha_init). It is kept
/// inside [log min_alpha, log max_alpha] in place before each use, as TorchRL does, so the
/// temperature loss cannot push it ever further out while alpha stays clamped.
///
/// The target entropy is given, or left unset and fixed at -(number of action dims) from the
/// first action the loss sees (`resolve_target_entropy`).
///
/// Thread safety: like the owning module.
class EntropyTemperature {
 public:
  /// An empty temperature (a loss assigns the real one in its constructor).
  EntropyTemperature() = default;
  /// Checks the options and registers "log_alpha" on `owner`. Throws ValueError naming `where`
  /// when alpha_init, min_alpha or max_alpha is not > 0, or min_alpha > max_alpha; nothing is
  /// registered then.
  EntropyTemperature(torch::nn::Module& owner, const std::string& where, double alpha_init,
                     std::optional<double> min_alpha, std::optional<double> max_alpha, bool fixed,
                     std::optional<double> target_entropy);
  /// The same from a loss's temperature options, with the target entropy the loss resolved
  /// (unset: resolved at the first forward).
  template <class Derived>
  EntropyTemperature(torch::nn::Module& owner, const std::string& where,
                     const TemperatureOptions<Derived>& options,
                     std::optional<double> target_entropy)
      : EntropyTemperature(owner, where, options.alpha_init(), options.min_alpha(),
                           options.max_alpha(), options.fixed_alpha(), target_entropy) {}

  const torch::Tensor& log_alpha() const { return log_alpha_; }
  /// alpha inside [min_alpha, max_alpha], detached; log_alpha is not changed.
  torch::Tensor alpha() const;
  /// Clamps log_alpha in place into its bounds and returns alpha, detached: call it once per
  /// forward, before alpha is used.
  torch::Tensor clamp();
  /// True when alpha is fixed (log_alpha is a buffer).
  bool fixed() const { return fixed_; }

  /// The target entropy, unset until given or resolved.
  const std::optional<double>& target_entropy() const { return target_entropy_; }
  /// Sets the target entropy to -`action_numel` unless it is already set.
  void resolve_target_entropy(double action_numel);
  /// The target entropy as printed by the losses: the number, or "auto" while unset.
  std::string target_entropy_repr() const;

  /// loss_alpha = -mean(log_alpha * gap) with `gap` detached (for SAC, log pi(a|s) +
  /// target entropy); zero with a fixed alpha.
  torch::Tensor loss(const torch::Tensor& gap) const;

 private:
  torch::Tensor log_alpha_;
  std::optional<double> min_alpha_;
  std::optional<double> max_alpha_;
  bool fixed_ = false;
  std::optional<double> target_entropy_;
};

}  // namespace tdrl::losses
