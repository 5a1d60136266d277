#pragma once

/// `Composite`: TorchRL's keyed, nested collection of specs, the spec of a TensorDict.

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <tdrl/specs/tensor_spec.h>
#include <tensordict/nested_key.h>
#include <tensordict/tensor_dict.h>

namespace tdrl::specs {

class Composite;
/// How Composites are held; a nested Composite is shared with its parent (aliased).
using CompositePtr = std::shared_ptr<Composite>;
/// What a Composite entry holds: a leaf spec or a nested Composite. Never null once stored.
using SpecValue = std::variant<TensorSpecPtr, CompositePtr>;

/// A keyed, nested collection of specs with a batch shape: the spec of a TensorDict
/// (TorchRL's Composite). `rand()` and `zero()` build TensorDicts of batch size `shape()`;
/// `is_in` / `assert_is_in` / `project` check and fix TensorDicts key by key.
///
/// Keys work as TensorDict keys: `NestedKey` paths (`{"next", "reward"}`), insertion order
/// kept, `set` creating missing intermediate Composites (with this shape and device), `get`
/// throwing and `find` not. Leaves are reached with `get`/`find`, nested Composites with
/// `get_composite`/`find_composite`, either with `get_value`/`find_value`.
///
/// Invariants, checked by `set`: every child's shape starts with `shape()` (the batch dims),
/// and when `device()` is set every child lives there. A failed `set` changes nothing.
///
/// Ownership: children are held by shared pointer; a nested Composite is aliased (changing it
/// through `get_composite` changes this spec), leaf specs are immutable. Copying is deleted
/// (it would alias nested Composites silently): use `clone()` for a deep copy.
///
/// Thread safety: concurrent reads are safe; `set`/`del_` must not run concurrently with
/// anything else on the same Composite.
///
/// Example:
/// ```
/// using Shape = std::vector<int64_t>;
/// auto spec = Composite::make({{"observation", std::make_shared<Unbounded>(Shape{4, 3})}},
///                             {4});
/// spec->set({"next", "reward"}, std::make_shared<Unbounded>(Shape{4, 1}));
/// TensorDict td = spec->rand();  // batch_size [4]: observation [4, 3], next.reward [4, 1]
/// ```
class Composite {
 public:
  /// One `{key, spec}` pair of a constructor list.
  using Item = std::pair<tensordict::NestedKey, SpecValue>;

  /// A Composite of batch shape `shape` on `device` (none: children may live anywhere)
  /// holding `items`, added in order with `set` (which throws as documented there).
  explicit Composite(const std::vector<Item>& items = {}, std::vector<int64_t> shape = {},
                     std::optional<torch::Device> device = std::nullopt);
  /// The same, held by a shared pointer: `Composite::make({{"obs", spec}}, {4})`.
  static CompositePtr make(const std::vector<Item>& items = {}, std::vector<int64_t> shape = {},
                           std::optional<torch::Device> device = std::nullopt);
  Composite(const Composite&) = delete;
  Composite& operator=(const Composite&) = delete;
  Composite(Composite&&) = default;
  Composite& operator=(Composite&&) = default;

  // ---- Shape and device ------------------------------------------------------------------------

  /// The batch shape: the leading dims every child's shape starts with.
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t ndim() const { return static_cast<int64_t>(shape_.size()); }
  /// The device every child lives on, or none when children may differ.
  const std::optional<torch::Device>& device() const { return device_; }

  // ---- Keys and reading ------------------------------------------------------------------------

  /// True when `key` names an entry (leaf or Composite).
  bool contains(const tensordict::NestedKey& key) const;
  /// Top-level keys in insertion order; with `include_nested`, nested paths too (depth first,
  /// a Composite's key before its children's); `leaves_only` drops keys of Composites.
  std::vector<tensordict::NestedKey> keys(bool include_nested = false,
                                          bool leaves_only = false) const;
  /// Key/spec pairs in the order of `keys(include_nested, leaves_only)`.
  std::vector<Item> items(bool include_nested = false, bool leaves_only = false) const;
  /// The number of top-level entries.
  std::size_t size() const { return entries_.size(); }
  bool is_empty() const { return entries_.empty(); }
  /// Top-level entries in insertion order (one-part keys).
  std::vector<Item>::const_iterator begin() const { return entries_.begin(); }
  std::vector<Item>::const_iterator end() const { return entries_.end(); }

  /// The leaf spec at `key`. Throws KeyError listing the available keys (closest first) when
  /// missing, TypeError when the entry is a Composite (use `get_composite`).
  TensorSpecPtr get(const tensordict::NestedKey& key) const;
  /// The leaf spec at `key`, or nullptr when missing; TypeError when it is a Composite.
  TensorSpecPtr find(const tensordict::NestedKey& key) const;
  /// The nested Composite at `key` (aliased). Throws KeyError / TypeError as `get`.
  CompositePtr get_composite(const tensordict::NestedKey& key) const;
  /// The nested Composite at `key`, or nullptr when missing; TypeError when it is a leaf.
  CompositePtr find_composite(const tensordict::NestedKey& key) const;
  /// The entry at `key`, whatever it holds. Throws KeyError when missing.
  SpecValue get_value(const tensordict::NestedKey& key) const;
  /// The entry at `key`, or nothing when missing.
  std::optional<SpecValue> find_value(const tensordict::NestedKey& key) const;

  // ---- Writing ---------------------------------------------------------------------------------

  /// Adds or replaces the entry at `key`, creating missing intermediate Composites with the
  /// shape and device of the Composite above them. Throws ValueError for a null spec,
  /// KeyError when the path walks through a leaf spec, ShapeError when the spec's shape does
  /// not start with the shape of the Composite it lands in, DeviceError when that Composite
  /// has a device and the spec lives (or, for a Composite, is declared) elsewhere. On a throw
  /// nothing changes.
  Composite& set(const tensordict::NestedKey& key, SpecValue spec);
  /// Removes the entry at `key`. Throws KeyError listing the available keys when missing.
  Composite& del_(const tensordict::NestedKey& key);

  // ---- Values ----------------------------------------------------------------------------------

  /// A TensorDict of batch size `shape()` (and this device, if any) with one `rand` draw per
  /// leaf, nested Composites as nested TensorDicts of their shape. Deterministic given
  /// `generator`; leaves draw in key order.
  tensordict::TensorDict rand(std::optional<torch::Generator> generator = std::nullopt) const;
  /// As `rand`, with every leaf's `zero()`.
  tensordict::TensorDict zero() const;
  /// True when every key of this spec is in `td` and each value is in its spec (leaves:
  /// `TensorSpec::is_in`; Composites: a nested TensorDict, recursively). Keys of `td` that the
  /// spec does not name are ignored. Never throws.
  bool is_in(const tensordict::TensorDict& td) const;
  /// Throws when `is_in(td)` is false, naming the full key path: KeyError for a missing key,
  /// TypeError for a tensor where a TensorDict is expected (or the reverse), and what
  /// `TensorSpec::assert_is_in` throws for a leaf.
  void assert_is_in(const tensordict::TensorDict& td) const;
  /// A new TensorDict with `td`'s batch size and device, every leaf of this spec replaced by
  /// its `TensorSpec::project`, nested TensorDicts rebuilt; entries the spec does not name are
  /// carried over (aliased). `td` is not modified. Throws KeyError for a key of the spec
  /// missing from `td`, TypeError for a kind mismatch, ShapeError as `TensorSpec::project`.
  tensordict::TensorDict project(const tensordict::TensorDict& td) const;

  // ---- New specs -------------------------------------------------------------------------------

  /// A Composite of batch shape `shape`, which must end with `shape()`; every child is
  /// expanded to `shape` followed by its own non-batch dims. Throws ShapeError otherwise,
  /// ValueError for a negative size.
  CompositePtr expand(std::vector<int64_t> shape) const;
  /// A Composite on `device`, every child moved there.
  CompositePtr to(torch::Device device) const;
  /// A deep copy (nested Composites and bound tensors copied).
  CompositePtr clone() const;

  /// TorchRL's repr: one `key: <spec repr>` block per entry in insertion order, then device
  /// and shape:
  /// ```
  /// Composite(
  ///     reward: UnboundedContinuous(
  ///         shape=torch.Size([1]),
  ///         space=None,
  ///         device=cpu,
  ///         dtype=torch.float32,
  ///         domain=continuous),
  ///     device=None,
  ///     shape=torch.Size([]))
  /// ```
  std::string to_string() const;

  /// Same shape, device and keys (in any order), with equal specs at each key.
  bool operator==(const Composite& other) const;
  bool operator!=(const Composite& other) const { return !(*this == other); }

 private:
  /// The index of top-level `key` in entries_, or -1.
  int64_t index_of(const std::string& key) const;
  /// The top-level names, for error messages.
  std::vector<std::string> names() const;
  /// The entry at `key`, or nullptr when missing or when the path walks through a leaf.
  const SpecValue* lookup(const tensordict::NestedKey& key) const;
  /// The KeyError, naming `op`, for a `key` that is missing or walks through a leaf.
  [[noreturn]] void throw_missing(const std::string& op, const tensordict::NestedKey& key) const;
  void collect_items(const tensordict::NestedKey* prefix, bool include_nested, bool leaves_only,
                     std::vector<Item>& out) const;
  void assert_is_in_at(const tensordict::TensorDict& td, const tensordict::NestedKey* prefix) const;
  tensordict::TensorDict project_at(const tensordict::TensorDict& td,
                                    const tensordict::NestedKey* prefix) const;

  std::vector<int64_t> shape_;
  std::optional<torch::Device> device_;
  std::vector<Item> entries_;  // one-part keys, insertion order
};

std::ostream& operator<<(std::ostream& os, const Composite& spec);

/// The printed form of either kind of entry ("None" for a null pointer).
std::string spec_repr(const SpecValue& spec);
/// Equal kinds and equal specs (null pointers compare equal to each other only).
bool spec_equal(const SpecValue& a, const SpecValue& b);
/// The shape of either kind of (non-null) entry; a Composite's is its batch shape.
const std::vector<int64_t>& spec_shape(const SpecValue& spec);

}  // namespace tdrl::specs
