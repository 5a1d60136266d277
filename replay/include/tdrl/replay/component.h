#pragma once

/// ReplayComponent: what a Sampler and a Writer share as parts of a ReplayBuffer: a name, a
/// one-line description and a checkpoint tagged with that name.

#include <functional>
#include <ostream>
#include <string>

#include <tdrl/replay/storage.h>

namespace tdrl::replay {

/// The base of Sampler and Writer: a named component whose checkpoint is a TensorDict of batch
/// `[]` holding `kind` (its name) and the state the subclass adds.
///
/// Loading is two-phase, as for the Storage: prepare_load_state_dict checks everything and
/// returns the action that installs the state, so that a ReplayBuffer can check all its parts
/// before changing any. Errors name the component and the operation ("RoundRobinWriter::
/// load_state_dict: ...").
///
/// Thread safety: not synchronised (ReplayBuffer serialises the calls).
class ReplayComponent {
 public:
  virtual ~ReplayComponent() = default;
  ReplayComponent() = default;
  ReplayComponent(const ReplayComponent&) = delete;
  ReplayComponent& operator=(const ReplayComponent&) = delete;

  /// The class name ("RandomSampler", "RoundRobinWriter", ...), used in messages and
  /// checkpoints.
  virtual std::string name() const = 0;
  /// One line, e.g. `PrioritizedSampler(max_capacity=1000, alpha=0.6, beta=0.4, eps=1e-08)`.
  virtual std::string to_string() const = 0;

  /// The checkpoint: `kind` and the state (priorities, epoch permutation, cursor, ...),
  /// aliased (saving copies).
  TensorDict state_dict() const;
  /// Checks `state` against this component and returns the action that installs it; throws
  /// ValueError (wrong `kind`, capacity, shapes, values) and changes nothing.
  std::function<void()> prepare_load_state_dict(const TensorDict& state);
  /// prepare_load_state_dict(state), then the returned action.
  void load_state_dict(const TensorDict& state) { prepare_load_state_dict(state)(); }
  /// Checks a checkpoint `state` (accepted by prepare_load_state_dict) against the storage
  /// checkpoint it was saved with, `stored`; throws ValueError naming what disagrees. Default:
  /// nothing to check.
  virtual void check_against(const TensorDict& state, const StoredExtent& stored) const {}

 protected:
  /// Adds the state to `state`.
  virtual void state_dict_impl(TensorDict& state) const = 0;
  /// Checks `state` (whose `kind` matched) and returns the installing action, which must not
  /// throw.
  virtual std::function<void()> prepare_load_impl(const TensorDict& state) = 0;
  /// The message prefix "<name>::<method>: ".
  std::string op(const char* method) const { return name() + "::" + method + ": "; }
};

std::ostream& operator<<(std::ostream& os, const ReplayComponent& component);

}  // namespace tdrl::replay
