#pragma once

/// Env transforms (TorchRL's `torchrl.envs.transforms`): the `Transform` base, `Compose` and
/// `TransformedEnv`. The transforms themselves live in `transforms/*.h`:
/// - `transforms/normalization.h`: ObservationNorm, VecNorm
/// - `transforms/reward.h`: RewardScaling, RewardClipping, RewardSum
/// - `transforms/keys.h`: CatTensors, RenameTransform, ExcludeTransform, SelectTransform
/// - `transforms/episode.h`: StepCounter, InitTracker, FrameSkipTransform
/// - `transforms/values.h`: DoubleToFloat, ClipTransform, UnsqueezeTransform, ActionScaling
/// - `transforms/image.h`: ToTensorImage, Resize, GrayScale, CenterCrop, CatFrames
/// `<tdrl/envs/transforms/all.h>` includes them all.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <torch/types.h>

#include <tdrl/envs/env_base.h>
#include <tdrl/specs/composite.h>
#include <tdrl/specs/tensor_spec.h>
#include <tensordict/arg.h>
#include <tensordict/nested_key.h>
#include <tensordict/tensor_dict.h>

namespace tdrl::envs {

class Transform;
class Compose;
class TransformedEnv;
/// How transforms are held: a Compose and a TransformedEnv share their transforms with the
/// caller (the caller may keep a pointer to read a transform's state, e.g. VecNorm's).
using TransformPtr = std::shared_ptr<Transform>;

/// The specs of an env as one transform sees them (the output of the transforms before it).
/// Every Composite has batch shape `batch_size`. A transform's spec hooks receive clones and
/// may modify them in place.
struct EnvSpecs {
  /// The observation entries (written by reset() and under "next" by step()).
  specs::CompositePtr observation;
  /// `{reward_key: spec}`: exactly one leaf.
  specs::CompositePtr reward;
  /// `{done, terminated, truncated}`.
  specs::CompositePtr done;
  /// `{action_key: spec}`: at most one leaf (none for an env without action).
  specs::CompositePtr action;
  /// Extra step inputs besides the action.
  specs::CompositePtr state;
  /// The env's batch size.
  std::vector<int64_t> batch_size;
  /// The env's device.
  torch::Device device = torch::kCPU;

  /// The specs of `env` (clones: changing them does not change the env).
  static EnvSpecs of(const EnvBase& env);
  /// A deep copy.
  EnvSpecs clone() const;
  /// The reward key: the reward Composite's only leaf. Throws ValueError when it does not
  /// hold exactly one leaf.
  NestedKey reward_key() const;
  /// The action key, or nothing for an env without action. Throws ValueError when the action
  /// Composite holds more than one leaf.
  std::optional<NestedKey> action_key() const;
  /// The leaf spec at `key` in the observation or the reward spec (observation first), or
  /// nullptr.
  specs::TensorSpecPtr find_output(const NestedKey& key) const;
  /// The leaf spec at `key` in the action or the state spec (action first), or nullptr.
  specs::TensorSpecPtr find_input(const NestedKey& key) const;
};

/// Steps the env below a transform: takes the root TensorDict (holding the action, as the
/// env below expects it) and returns the "next" TensorDict of that step.
using StepFn = std::function<TensorDict(const TensorDict&)>;

/// The base of every transform (TorchRL's Transform): it changes what an env returns (the
/// reset output, the "next" entries of a step), what goes into it (the action and state
/// entries, "inverse" transform) and its specs accordingly. Every hook defaults to the
/// identity, so a transform overrides only what it changes.
///
/// Inside a TransformedEnv with transforms `[t0, t1, ...]` (t0 nearest the base env):
/// - reset: the base env resets, then `t0.reset`, `t1.reset`, ... transform its output;
/// - step: `... t1.inv`, `t0.inv` transform a shallow copy of the root (the caller's
///   TensorDict is never modified), the base env steps, then `t0.step`, `t1.step`, ...
///   transform the "next" TensorDict (`step_through` is the hook that sees the whole chain);
/// - specs: `t0.transform_specs`, then `t1.transform_specs`, ... from the base env's specs.
///
/// Hooks never modify a tensor in place: they write new tensors into the TensorDict they are
/// given (whose tensors may alias the env's state).
///
/// Ownership: a transform belongs to at most one Compose or TransformedEnv at a time;
/// `parent()` is the TransformedEnv it works in (nullptr when detached).
///
/// Thread safety: a transform is used by one env, and one env by one thread at a time;
/// VecNorm's shared state is the exception (see VecNormState).
class Transform {
 public:
  virtual ~Transform() = default;
  Transform(const Transform&) = delete;
  Transform& operator=(const Transform&) = delete;

  /// The class name as printed: "StepCounter".
  virtual std::string name() const = 0;
  /// The name and options, e.g. `StepCounter(step_count_key='step_count', max_steps=10)`.
  virtual std::string to_string() const;

  /// Applies the forward transform to `td` outside an env, e.g. to a replay buffer sample;
  /// the same transform step() applies to "next". Returns the result: `td` itself, written
  /// into (SelectTransform returns a new TensorDict). Keys a transform reads that `td` lacks
  /// are skipped.
  TensorDict forward(TensorDict td);

  // ---- Env hooks ------------------------------------------------------------------------------

  /// Transforms the reset output `output` (batch of the env; written into and returned).
  /// `input` is the TensorDict given to reset(), holding the "_reset" mask `[*batch, 1]` when
  /// a partial reset was asked and the entries of the previous step (e.g. "step_count").
  /// Default: the forward transform of `output`.
  virtual TensorDict reset(const TensorDict& input, TensorDict output);
  /// Transforms the "next" TensorDict of a step (written into and returned); `root` is the
  /// root TensorDict of the step (as this transform's inverse left it). Default: the forward
  /// transform of `next`.
  virtual TensorDict step(const TensorDict& root, TensorDict next);
  /// Transforms the step's inputs on their way into the env (the action; writes into `td`, a
  /// shallow copy of the caller's root made for this step, and returns it). Default: identity.
  virtual TensorDict inv(TensorDict td);
  /// One step through this transform: `inner` steps the env below it. `root` is a shallow
  /// copy made for this step, which the inverses write into (so a transform calling `inner`
  /// more than once gives each call its own `root.clone(false)`). Default:
  /// `root' = inv(root)`, `next = inner(root')`, `step(root', next)`. FrameSkipTransform
  /// overrides it to call `inner` several times.
  virtual TensorDict step_through(const TensorDict& root, const StepFn& inner);

  // ---- Specs ----------------------------------------------------------------------------------

  /// The specs after this transform, given the specs before it (`input`, unchanged): calls
  /// the five hooks below on clones of `input`. Throws what the hooks throw (KeyError for an
  /// in_key missing from the specs, TypeError for a spec kind the transform cannot handle).
  virtual EnvSpecs transform_specs(const EnvSpecs& input);
  /// The observation spec after this transform. Default: `spec` unchanged.
  virtual specs::CompositePtr transform_observation_spec(specs::CompositePtr spec,
                                                         const EnvSpecs& /*input*/) {
    return spec;
  }
  /// The reward spec (`{reward_key: spec}`) after this transform. Default: unchanged.
  virtual specs::CompositePtr transform_reward_spec(specs::CompositePtr spec,
                                                    const EnvSpecs& /*input*/) {
    return spec;
  }
  /// The done spec after this transform. Default: unchanged.
  virtual specs::CompositePtr transform_done_spec(specs::CompositePtr spec,
                                                  const EnvSpecs& /*input*/) {
    return spec;
  }
  /// The action spec (`{action_key: spec}`) the policy sees. Default: unchanged.
  virtual specs::CompositePtr transform_action_spec(specs::CompositePtr spec,
                                                    const EnvSpecs& /*input*/) {
    return spec;
  }
  /// The state spec the caller provides. Default: unchanged.
  virtual specs::CompositePtr transform_state_spec(specs::CompositePtr spec,
                                                   const EnvSpecs& /*input*/) {
    return spec;
  }

  // ---- State ----------------------------------------------------------------------------------

  /// The transform's learned state (e.g. VecNorm's statistics) as a TensorDict of copies;
  /// empty for stateless transforms.
  virtual TensorDict state_dict() const;
  /// Loads what state_dict() returned. Throws KeyError/ShapeError for a TensorDict that does
  /// not fit (nothing is loaded then); a stateless transform accepts only an empty one
  /// (ValueError otherwise).
  virtual void load_state_dict(const TensorDict& state);

  /// The TransformedEnv this transform works in, or nullptr.
  TransformedEnv* parent() const { return parent_; }

 protected:
  Transform() = default;

  /// The forward transform of one output TensorDict (a reset output or a "next"): writes
  /// into `td` and returns it. Default: identity.
  virtual TensorDict call(TensorDict td);
  /// Sets parent(); Compose also sets its children's.
  virtual void set_parent(TransformedEnv* env);

 private:
  friend class Compose;
  friend class TransformedEnv;

  // Takes ownership for `owner` (a Compose or TransformedEnv); ValueError when already owned.
  void claim(const void* owner, const std::string& where);
  void release();

  TransformedEnv* parent_ = nullptr;
  const void* owner_ = nullptr;
};

/// Prints transform.to_string().
std::ostream& operator<<(std::ostream& stream, const Transform& transform);

/// The keys of a transform (TorchRL's Transform `in_keys`, `out_keys`, `in_keys_inv`,
/// `out_keys_inv`), the CRTP base of every transform options struct that names entries:
/// `RewardScalingOptions().in_keys({"reward"}).out_keys({"scaled_reward"}).scale(0.1)` keeps
/// its type along the chain. Forward (outputs): the transform reads each in_key and writes its
/// result at the out_key of the same position. Inverse (inputs): it reads each out_key_inv as
/// the caller writes it and writes the in_key_inv of the same position as the env below reads
/// it. A transform documents which of the four it takes and its default in_keys; the others
/// must stay empty (ValueError naming the transform otherwise).
template <class Derived>
struct TransformKeysOptions {
  /// The output entries read (observation or reward leaves).
  TDRL_CRTP_ARG(Derived, std::vector<NestedKey>, in_keys);
  /// Where the results go, one per in_key. Default (empty): the in_keys (in place).
  TDRL_CRTP_ARG(Derived, std::vector<NestedKey>, out_keys);
  /// The input entries (action or state) written for the env below.
  TDRL_CRTP_ARG(Derived, std::vector<NestedKey>, in_keys_inv);
  /// The input entries read as the caller writes them, one per in_key_inv. Default (empty):
  /// the in_keys_inv.
  TDRL_CRTP_ARG(Derived, std::vector<NestedKey>, out_keys_inv);
};

/// The base of the transforms that map entries one to one, leaf by leaf (TorchRL's Transform
/// with `_apply_transform` / `_inv_apply_transform`); a subclass gives the per-leaf maps and
/// inherits the loops over the keys, on tensors and on specs alike.
///
/// Keys: on reset and under "next", writes `out_key = apply_transform(in_key)` for each key
/// pair (an in_key the TensorDict lacks is skipped); before the env steps, writes
/// `in_key_inv = apply_inverse(out_key_inv)` (skipped likewise).
/// Specs: each out_key gets `transform_output_leaf(in_key's spec)`, in the Composite holding
/// the in_key; each out_key_inv gets `transform_input_leaf(in_key_inv's spec)` in place of the
/// in_key_inv. A result read from the reward but written at another key is an observation (the
/// reward spec holds one leaf): reset, which has no reward, writes it as zeros (on a partial
/// reset, for the sub-envs reset; the others keep the value of the given TensorDict).
/// Throws (constructor) ValueError for no in_keys (nor in_keys_inv), out_keys of another count
/// than in_keys (out_keys_inv: than in_keys_inv), or inverse keys given to a transform without
/// an inverse; (specs) KeyError naming the transform and listing the available keys for a key
/// the env lacks, and what the per-leaf spec maps throw.
class KeyedTransform : public Transform {
 public:
  /// The output entries read, and where their results go (the in_keys when not given).
  const std::vector<NestedKey>& in_keys() const { return in_keys_; }
  const std::vector<NestedKey>& out_keys() const { return out_keys_; }
  /// The input entries written for the env below, and where they are read.
  const std::vector<NestedKey>& in_keys_inv() const { return in_keys_inv_; }
  const std::vector<NestedKey>& out_keys_inv() const { return out_keys_inv_; }

  /// The name the subclass gave the constructor, e.g. "RewardScaling".
  std::string name() const override { return where_; }
  TensorDict reset(const TensorDict& input, TensorDict output) override;
  TensorDict inv(TensorDict td) override;
  specs::CompositePtr transform_observation_spec(specs::CompositePtr spec,
                                                 const EnvSpecs& input) override;
  specs::CompositePtr transform_reward_spec(specs::CompositePtr spec,
                                            const EnvSpecs& input) override;
  specs::CompositePtr transform_action_spec(specs::CompositePtr spec,
                                            const EnvSpecs& input) override;
  specs::CompositePtr transform_state_spec(specs::CompositePtr spec,
                                           const EnvSpecs& input) override;

 protected:
  /// Whether the transform has an inverse (apply_inverse and transform_input_leaf).
  enum class Inverse { kNone, kSupported };

  /// Takes the keys of `options` (see TransformKeysOptions); `where` is the transform's name
  /// in messages. Throws ValueError as the class documents.
  template <class Options>
  KeyedTransform(const std::string& where, const TransformKeysOptions<Options>& options,
                 Inverse inverse)
      : KeyedTransform(where, options.in_keys(), options.out_keys(), options.in_keys_inv(),
                       options.out_keys_inv(), inverse) {}
  KeyedTransform(const std::string& where, std::vector<NestedKey> in_keys,
                 std::vector<NestedKey> out_keys, std::vector<NestedKey> in_keys_inv,
                 std::vector<NestedKey> out_keys_inv, Inverse inverse);

  /// The forward map of the entry read at `in_key`. Default: the value unchanged (a transform
  /// that needs more than the value, as VecNorm the batch dims, overrides call() and uses
  /// map_outputs).
  virtual torch::Tensor apply_transform(const torch::Tensor& value, const NestedKey& in_key);
  /// The inverse map of the entry read at `out_key_inv`, written at `in_key_inv`. Default:
  /// the value unchanged.
  virtual torch::Tensor apply_inverse(const torch::Tensor& value, const NestedKey& in_key_inv);
  /// The spec of an out_key, given its in_key's `spec`. Default: `spec` unchanged.
  virtual specs::TensorSpecPtr transform_output_leaf(const specs::TensorSpecPtr& spec,
                                                     const NestedKey& in_key,
                                                     const EnvSpecs& input);
  /// The spec the caller sees at an out_key_inv, given the env's `spec` at its in_key_inv.
  /// Default: `spec` unchanged.
  virtual specs::TensorSpecPtr transform_input_leaf(const specs::TensorSpecPtr& spec,
                                                    const NestedKey& in_key_inv,
                                                    const EnvSpecs& input);

  /// The forward map over the key pairs of `td`, `fn(value, in_key)` giving each result.
  template <class Fn>
  TensorDict map_outputs(TensorDict td, const Fn& fn) {
    for (size_t i = 0; i < in_keys_.size(); ++i) {
      const auto value = td.find(in_keys_[i]);
      if (value) td.set(out_keys_[i], fn(*value, in_keys_[i]));
    }
    return td;
  }

  /// Writes, into the reset output `output`, the observations read from the reward (zeros;
  /// the previous values for the sub-envs not reset) and returns it. A subclass overriding
  /// reset() calls it last.
  TensorDict write_reward_copies(const TensorDict& input, TensorDict output) const;

  /// `in_keys=[...]`, then `out_keys=[...]` when they differ from the in_keys, then the
  /// inverse keys when there are any (for to_string()).
  std::string keys_to_string() const;

  TensorDict call(TensorDict td) override;

 private:
  // The output spec hooks: the pairs whose in_key `holder` (observation or reward) holds and
  // whose result belongs in `spec` (see the class comment).
  specs::CompositePtr map_output_specs(specs::CompositePtr spec, const specs::CompositePtr& holder,
                                       bool is_reward, const EnvSpecs& input);
  specs::CompositePtr map_input_specs(specs::CompositePtr spec, const specs::CompositePtr& holder,
                                      const EnvSpecs& input);

  std::string where_;
  std::vector<NestedKey> in_keys_;
  std::vector<NestedKey> out_keys_;
  std::vector<NestedKey> in_keys_inv_;
  std::vector<NestedKey> out_keys_inv_;
  // Per key pair: the spec of an observation read from the reward (written as zeros at reset),
  // else null. Set by the observation spec hook.
  std::vector<specs::TensorSpecPtr> reward_copies_;
};

/// A sequence of transforms applied as one (TorchRL's Compose): forward hooks (reset, step,
/// specs) in order, inverse hooks in reverse order. Appending or inserting into a Compose
/// that works in an env recomputes the env's specs (and undoes the change when that throws).
///
/// Example:
/// ```
/// auto t = Compose::make({std::make_shared<StepCounter>(StepCounterOptions().max_steps(200)),
///                         std::make_shared<RewardSum>()});
/// t->append(std::make_shared<DoubleToFloat>());
/// ```
class Compose : public Transform {
 public:
  /// A Compose of `transforms` (each must not belong elsewhere: ValueError; none null).
  explicit Compose(std::vector<TransformPtr> transforms = {});
  /// The same, held by a shared pointer.
  static std::shared_ptr<Compose> make(std::vector<TransformPtr> transforms = {});
  ~Compose() override;

  /// Adds `transform` at the end. Throws ValueError for a null transform, a transform that
  /// belongs to another Compose or env, or this Compose itself; when in an env, whatever the
  /// spec recomputation throws (the Compose is unchanged then).
  Compose& append(TransformPtr transform);
  /// Inserts `transform` before position `index` (negative counts from the end, `size()`
  /// appends). Throws IndexError for an index outside `[-size(), size()]`, else as append.
  Compose& insert(int64_t index, TransformPtr transform);
  /// The transform at `index` (negative counts from the end). Throws IndexError.
  const TransformPtr& operator[](int64_t index) const;
  /// The number of transforms (nested Composes count as one).
  int64_t size() const { return static_cast<int64_t>(transforms_.size()); }
  bool empty() const { return transforms_.empty(); }
  const std::vector<TransformPtr>& transforms() const { return transforms_; }
  std::vector<TransformPtr>::const_iterator begin() const { return transforms_.begin(); }
  std::vector<TransformPtr>::const_iterator end() const { return transforms_.end(); }

  std::string name() const override { return "Compose"; }
  /// `Compose(\n    StepCounter(...),\n    RewardSum(...))`; `Compose()` when empty.
  std::string to_string() const override;

  TensorDict reset(const TensorDict& input, TensorDict output) override;
  TensorDict step(const TensorDict& root, TensorDict next) override;
  TensorDict inv(TensorDict td) override;
  TensorDict step_through(const TensorDict& root, const StepFn& inner) override;
  EnvSpecs transform_specs(const EnvSpecs& input) override;
  /// `{"0": state of transform 0, ...}` for the transforms with a non-empty state.
  TensorDict state_dict() const override;
  /// Loads each child's entry; KeyError for an entry with no such child.
  void load_state_dict(const TensorDict& state) override;

 protected:
  TensorDict call(TensorDict td) override;
  void set_parent(TransformedEnv* env) override;

 private:
  friend class TransformedEnv;
  struct ViewTag {};
  // A Compose sharing `transforms` without owning them (TransformedEnv::env_before).
  Compose(ViewTag, std::vector<TransformPtr> transforms);
  // Adds at `index` and recomputes the env's specs; undoes the change when that throws.
  void add(int64_t index, TransformPtr transform, const std::string& where);
  // Appends the non-Compose transforms, depth first.
  void flatten(std::vector<TransformPtr>& out) const;

  std::vector<TransformPtr> transforms_;
  bool view_ = false;
};

/// An env whose outputs, inputs and specs go through a transform (TorchRL's TransformedEnv).
/// The transform is always a Compose (a single transform is wrapped), reachable through
/// `transform()`; `append_transform` / `insert_transform` add to it.
///
/// Its specs are the base env's after `transform().transform_specs`, recomputed when
/// transforms are added; its batch size and device are the base env's. reset() and step()
/// run the base env's public reset()/step() (so the base env's checks apply), around the
/// transforms (see Transform). set_seed seeds the base env, then this env's own generator
/// (used by rand_action) with the next seed.
///
/// Ownership: the base env is shared (it may be used elsewhere, though not concurrently).
/// Thread safety: as EnvBase.
///
/// Example:
/// ```
/// auto env = std::make_shared<TransformedEnv>(
///     base, Compose::make({std::make_shared<StepCounter>(StepCounterOptions().max_steps(200)),
///                          std::make_shared<RewardSum>()}));
/// env->append_transform(std::make_shared<DoubleToFloat>());
/// check_env_specs(*env);
/// ```
class TransformedEnv : public EnvBase {
 public:
  /// Wraps `env` (ValueError when null) with `transform` (none: an empty Compose). Throws
  /// ValueError when the transform belongs elsewhere, and what its spec hooks throw.
  explicit TransformedEnv(std::shared_ptr<EnvBase> env, TransformPtr transform = nullptr);
  ~TransformedEnv() override;

  /// The wrapped env.
  const std::shared_ptr<EnvBase>& base_env() const { return base_; }
  /// The wrapped env's.
  int64_t max_episode_steps() const override { return base_->max_episode_steps(); }
  /// The transforms (aliased: appending to it changes this env).
  Compose& transform() const { return *transform_; }
  /// Appends `transform` (see Compose::append); returns this env.
  TransformedEnv& append_transform(TransformPtr transform);
  /// Inserts `transform` at `index` (see Compose::insert); returns this env.
  TransformedEnv& insert_transform(int64_t index, TransformPtr transform);
  /// Recomputes the specs from the base env's and the transforms'; a transform whose options
  /// changed the specs calls it (e.g. ObservationNorm::init_stats). On a throw nothing
  /// changes.
  void refresh_specs();
  /// The env as `transform` sees it: the base env with the transforms before `transform`
  /// (the base env itself when none). The transforms are shared, not copied, so running it
  /// updates their state. Throws ValueError when `transform` is not in this env.
  std::shared_ptr<EnvBase> env_before(const Transform& transform) const;

  /// `TransformedEnv(\n    env=<base env>,\n    transform=<Compose>)`.
  std::string to_string() const override;

 protected:
  TensorDict reset_impl(const TensorDict& tensordict) override;
  TensorDict step_impl(const TensorDict& tensordict) override;
  uint64_t set_seed_impl(uint64_t seed) override;
  /// "base": the wrapped env's state_dict(); "transforms": the transforms' learned state
  /// (Compose::state_dict(), e.g. VecNorm's statistics) when there is any.
  bool save_state(TensorDict& state) const override;
  void load_state(const TensorDict& state) override;
  /// The base env's frames (transforms change observations, not pictures).
  torch::Tensor render_impl() override { return base_->render(); }

 private:
  struct ViewTag {};
  TransformedEnv(ViewTag, std::shared_ptr<EnvBase> env, std::vector<TransformPtr> transforms);
  // Computes the transformed specs (throws when they are invalid) and sets them.
  void apply_specs(const EnvSpecs& specs);

  std::shared_ptr<EnvBase> base_;
  std::shared_ptr<Compose> transform_;
};

}  // namespace tdrl::envs
