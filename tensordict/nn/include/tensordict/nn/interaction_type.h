#pragma once

/// Interaction types: how a probabilistic module turns its distribution into a value
/// (Python tensordict.nn's InteractionType, `interaction_type()` and `set_interaction_type`).

#include <optional>
#include <ostream>
#include <string>

namespace tensordict::nn {

/// How a probabilistic module picks the value it writes:
/// - kRandom: a sample (`rsample` when the distribution has one, so gradients flow; else
///   `sample`);
/// - kMode: the distribution's mode (TypeError when it has no closed-form mode);
/// - kMean: the mean, or, when the distribution has no closed-form mean, the average of
///   `n_empirical_estimate` samples;
/// - kDeterministic: the distribution's `deterministic_sample()` (its mode or mean, as each
///   distribution documents; never throws).
enum class InteractionType { kRandom, kMode, kMean, kDeterministic };

/// "RANDOM", "MODE", "MEAN" or "DETERMINISTIC" (Python's names).
std::string to_string(InteractionType type);
/// Parses Python's names, case-insensitively ("random", "MODE", ...). Throws ValueError
/// listing the valid names for anything else.
InteractionType interaction_type_from_string(const std::string& name);
/// Writes `to_string(type)`.
std::ostream& operator<<(std::ostream& stream, InteractionType type);

/// The interaction type set on this thread by the innermost live SetInteractionType guard,
/// or nullopt when none is (each probabilistic module then uses its own default).
/// The setting is thread-local: a guard on one thread never affects another.
std::optional<InteractionType> interaction_type();

/// RAII guard setting the current thread's interaction type for its lifetime and restoring
/// the previous setting (possibly "none") when destroyed. Guards nest.
/// Not copyable or movable: a guard restores exactly what it replaced, on the thread that
/// made it.
/// Example:
/// ```
/// {
///   SetInteractionType guard(InteractionType::kMode);
///   actor(td);  // writes the distribution's mode
/// }
/// ```
class SetInteractionType {
 public:
  /// Sets `type`; `nullopt` clears the setting so modules fall back to their defaults.
  explicit SetInteractionType(std::optional<InteractionType> type);
  ~SetInteractionType();
  SetInteractionType(const SetInteractionType&) = delete;
  SetInteractionType& operator=(const SetInteractionType&) = delete;

 private:
  std::optional<InteractionType> previous_;
};

}  // namespace tensordict::nn
