// Composite: keyed, nested specs; key walking, TensorDict sampling, checking and projection.

#include <tdrl/specs/composite.h>

#include <utility>

#include <tensordict/errors.h>

#include <tdrl/specs/detail/spec_format.h>

namespace tdrl::specs {

using tensordict::closest_names;
using tensordict::DeviceError;
using tensordict::KeyError;
using tensordict::NestedKey;
using tensordict::shape_str;
using tensordict::ShapeError;
using tensordict::TensorDict;
using tensordict::TypeError;
using tensordict::ValueError;

namespace {

bool is_null(const SpecValue& spec) {
  if (const auto* leaf = std::get_if<TensorSpecPtr>(&spec)) return *leaf == nullptr;
  return std::get<CompositePtr>(spec) == nullptr;
}

// A leaf's device, or a Composite's declared device.
std::optional<torch::Device> spec_device(const SpecValue& spec) {
  if (const auto* leaf = std::get_if<TensorSpecPtr>(&spec)) return (*leaf)->device();
  return std::get<CompositePtr>(spec)->device();
}

// "BoundedContinuous of shape [3]" / "Composite of shape [4]", for messages.
std::string spec_summary(const SpecValue& spec) {
  const std::string kind = std::holds_alternative<TensorSpecPtr>(spec)
                               ? std::get<TensorSpecPtr>(spec)->type_name()
                               : std::string("Composite");
  return kind + " of shape " + shape_str(spec_shape(spec));
}

std::string device_repr(const std::optional<torch::Device>& device) {
  return device ? device->str() : std::string("None");
}

// True when `root` is `target` or holds it at any depth.
bool reaches(const Composite& root, const Composite* target) {
  if (&root == target) return true;
  for (const auto& entry : root) {
    const auto* nested = std::get_if<CompositePtr>(&entry.second);
    if (nested && reaches(**nested, target)) return true;
  }
  return false;
}

// `key` (one part) below `prefix` (may be null).
NestedKey full_key(const NestedKey* prefix, const NestedKey& key) {
  return prefix ? prefix->join(key) : key;
}

std::vector<std::string> td_names(const TensorDict& td) {
  std::vector<std::string> names;
  for (const auto& key : td.keys()) names.push_back(key.front());
  return names;
}

}  // namespace

const std::vector<int64_t>& spec_shape(const SpecValue& spec) {
  if (const auto* leaf = std::get_if<TensorSpecPtr>(&spec)) return (*leaf)->shape();
  return std::get<CompositePtr>(spec)->shape();
}

std::string spec_repr(const SpecValue& spec) {
  if (is_null(spec)) return "None";
  if (const auto* leaf = std::get_if<TensorSpecPtr>(&spec)) return (*leaf)->to_string();
  return std::get<CompositePtr>(spec)->to_string();
}

bool spec_equal(const SpecValue& a, const SpecValue& b) {
  if (a.index() != b.index()) return false;
  if (is_null(a) || is_null(b)) return is_null(a) && is_null(b);
  if (const auto* leaf = std::get_if<TensorSpecPtr>(&a)) {
    return **leaf == *std::get<TensorSpecPtr>(b);
  }
  return *std::get<CompositePtr>(a) == *std::get<CompositePtr>(b);
}

// ---- Construction and keys ----------------------------------------------------------------------

Composite::Composite(const std::vector<Item>& items, std::vector<int64_t> shape,
                     std::optional<torch::Device> device)
    : shape_(std::move(shape)), device_(device) {
  detail::check_sizes("Composite", shape_);
  for (const auto& item : items) set(item.first, item.second);
}

CompositePtr Composite::make(const std::vector<Item>& items, std::vector<int64_t> shape,
                             std::optional<torch::Device> device) {
  return std::make_shared<Composite>(items, std::move(shape), device);
}

int64_t Composite::index_of(const std::string& key) const {
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].first.front() == key) return static_cast<int64_t>(i);
  }
  return -1;
}

std::vector<std::string> Composite::names() const {
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const auto& entry : entries_) out.push_back(entry.first.front());
  return out;
}

const SpecValue* Composite::lookup(const NestedKey& key) const {
  const Composite* at = this;
  for (size_t depth = 0;; ++depth) {
    const int64_t i = at->index_of(key[depth]);
    if (i < 0) return nullptr;
    const SpecValue& value = at->entries_[static_cast<size_t>(i)].second;
    if (depth + 1 == key.size()) return &value;
    const auto* nested = std::get_if<CompositePtr>(&value);
    if (!nested) return nullptr;
    at = nested->get();
  }
}

void Composite::throw_missing(const std::string& op, const NestedKey& key) const {
  const Composite* at = this;
  for (size_t depth = 0; depth < key.size(); ++depth) {
    const int64_t i = at->index_of(key[depth]);
    if (i < 0) {
      std::string where;
      if (depth > 0) {
        NestedKey parent(key[0]);
        for (size_t j = 1; j < depth; ++j) parent = parent.join(key[j]);
        where = " under " + parent.to_string();
      }
      throw KeyError(op + ": key " + key.to_string() + " not found: no entry '" + key[depth] + "'" +
                     where + "; available keys there: " + closest_names(key[depth], at->names()));
    }
    const auto* nested = std::get_if<CompositePtr>(&at->entries_[static_cast<size_t>(i)].second);
    TDRL_CHECK(nested, KeyError, op, ": key ", key.to_string(), " walks through '", key[depth],
               "', which is a leaf spec, not a Composite");
    at = nested->get();
  }
  throw KeyError(op + ": key " + key.to_string() + " not found");
}

bool Composite::contains(const NestedKey& key) const { return lookup(key) != nullptr; }

void Composite::collect_items(const NestedKey* prefix, bool include_nested, bool leaves_only,
                              std::vector<Item>& out) const {
  for (const auto& entry : entries_) {
    const NestedKey key = full_key(prefix, entry.first);
    const auto* nested = std::get_if<CompositePtr>(&entry.second);
    if (!nested || !leaves_only) out.emplace_back(key, entry.second);
    if (nested && include_nested) (*nested)->collect_items(&key, include_nested, leaves_only, out);
  }
}

std::vector<NestedKey> Composite::keys(bool include_nested, bool leaves_only) const {
  std::vector<NestedKey> out;
  for (const auto& item : items(include_nested, leaves_only)) out.push_back(item.first);
  return out;
}

std::vector<Composite::Item> Composite::items(bool include_nested, bool leaves_only) const {
  std::vector<Item> out;
  collect_items(nullptr, include_nested, leaves_only, out);
  return out;
}

SpecValue Composite::get_value(const NestedKey& key) const {
  const SpecValue* value = lookup(key);
  if (!value) throw_missing("Composite::get_value", key);
  return *value;
}

std::optional<SpecValue> Composite::find_value(const NestedKey& key) const {
  const SpecValue* value = lookup(key);
  if (!value) return std::nullopt;
  return *value;
}

TensorSpecPtr Composite::get(const NestedKey& key) const {
  const SpecValue* value = lookup(key);
  if (!value) throw_missing("Composite::get", key);
  TDRL_CHECK(std::holds_alternative<TensorSpecPtr>(*value), TypeError,
             "Composite::get: the entry at key ", key.to_string(),
             " is a Composite, not a leaf spec; use get_composite");
  return std::get<TensorSpecPtr>(*value);
}

TensorSpecPtr Composite::find(const NestedKey& key) const {
  const SpecValue* value = lookup(key);
  if (!value) return nullptr;
  TDRL_CHECK(std::holds_alternative<TensorSpecPtr>(*value), TypeError,
             "Composite::find: the entry at key ", key.to_string(),
             " is a Composite, not a leaf spec; use find_composite");
  return std::get<TensorSpecPtr>(*value);
}

CompositePtr Composite::get_composite(const NestedKey& key) const {
  const SpecValue* value = lookup(key);
  if (!value) throw_missing("Composite::get_composite", key);
  TDRL_CHECK(std::holds_alternative<CompositePtr>(*value), TypeError,
             "Composite::get_composite: the entry at key ", key.to_string(), " is a ",
             std::get<TensorSpecPtr>(*value)->type_name(), " leaf spec, not a Composite; use get");
  return std::get<CompositePtr>(*value);
}

CompositePtr Composite::find_composite(const NestedKey& key) const {
  const SpecValue* value = lookup(key);
  if (!value) return nullptr;
  TDRL_CHECK(std::holds_alternative<CompositePtr>(*value), TypeError,
             "Composite::find_composite: the entry at key ", key.to_string(), " is a ",
             std::get<TensorSpecPtr>(*value)->type_name(), " leaf spec, not a Composite; use find");
  return std::get<CompositePtr>(*value);
}

// ---- Writing ------------------------------------------------------------------------------------

Composite& Composite::set(const NestedKey& key, SpecValue spec) {
  const std::string op = "Composite::set";
  TDRL_CHECK(!is_null(spec), ValueError, op, ": the spec for key ", key.to_string(),
             " is null; pass a spec, e.g. std::make_shared<Unbounded>(...)");
  // Walk the existing Composites of the path without creating anything, so that a throw below
  // leaves this spec as it was; missing intermediates take the shape and device of `at`.
  std::vector<Composite*> path{this};
  size_t depth = 0;
  for (; depth + 1 < key.size(); ++depth) {
    const int64_t i = path.back()->index_of(key[depth]);
    if (i < 0) break;
    auto* nested = std::get_if<CompositePtr>(&path.back()->entries_[static_cast<size_t>(i)].second);
    TDRL_CHECK(nested, KeyError, op, ": key ", key.to_string(), " walks through '", key[depth],
               "', which is a leaf spec, not a Composite; del_ it first or use another key");
    path.push_back(nested->get());
  }
  Composite* at = path.back();
  const std::vector<int64_t>& shape = spec_shape(spec);
  TDRL_CHECK(detail::starts_with(shape, at->shape_), ShapeError, op, ": the spec for key ",
             key.to_string(), " has shape ", shape_str(shape),
             "; its leading dims must equal the Composite's shape ", shape_str(at->shape_),
             " (the batch dims); build it with that shape or ", "expand it to ",
             shape_str(at->shape_), " + its own dims");
  TDRL_CHECK(!(at->device_ && spec_device(spec) != at->device_), DeviceError, op,
             ": the spec for key ", key.to_string(), " is on ", device_repr(spec_device(spec)),
             " but the Composite is on ", at->device_->str(), "; move it first with ->to(",
             at->device_->str(), ")");
  if (const auto* nested = std::get_if<CompositePtr>(&spec)) {
    for (const Composite* ancestor : path) {
      TDRL_CHECK(!reaches(**nested, ancestor), ValueError, op, ": the Composite set at key ",
                 key.to_string(), " contains the Composite it would be stored in; store a clone()");
    }
  }
  for (; depth + 1 < key.size(); ++depth) {
    auto child = std::make_shared<Composite>(std::vector<Item>{}, at->shape_, at->device_);
    at->entries_.emplace_back(key[depth], child);
    at = child.get();
  }
  const int64_t i = at->index_of(key.back());
  if (i >= 0) {
    at->entries_[static_cast<size_t>(i)].second = std::move(spec);
  } else {
    at->entries_.emplace_back(key.back(), std::move(spec));
  }
  return *this;
}

Composite& Composite::del_(const NestedKey& key) {
  if (!lookup(key)) throw_missing("Composite::del_", key);
  Composite* at = this;
  for (size_t depth = 0; depth + 1 < key.size(); ++depth) {
    at = std::get<CompositePtr>(at->entries_[static_cast<size_t>(at->index_of(key[depth]))].second)
             .get();
  }
  at->entries_.erase(at->entries_.begin() + at->index_of(key.back()));
  return *this;
}

// ---- Values -------------------------------------------------------------------------------------

TensorDict Composite::rand(std::optional<torch::Generator> generator) const {
  TensorDict td = TensorDict::empty(shape_, device_);
  for (const auto& entry : entries_) {
    if (const auto* leaf = std::get_if<TensorSpecPtr>(&entry.second)) {
      td.set(entry.first, (*leaf)->rand(generator));
    } else {
      td.set(entry.first, std::get<CompositePtr>(entry.second)->rand(generator));
    }
  }
  return td;
}

TensorDict Composite::zero() const {
  TensorDict td = TensorDict::empty(shape_, device_);
  for (const auto& entry : entries_) {
    if (const auto* leaf = std::get_if<TensorSpecPtr>(&entry.second)) {
      td.set(entry.first, (*leaf)->zero());
    } else {
      td.set(entry.first, std::get<CompositePtr>(entry.second)->zero());
    }
  }
  return td;
}

bool Composite::is_in(const TensorDict& td) const {
  for (const auto& entry : entries_) {
    const std::optional<tensordict::Value> value = td.find_value(entry.first);
    if (!value) return false;
    if (const auto* leaf = std::get_if<TensorSpecPtr>(&entry.second)) {
      const auto* tensor = std::get_if<torch::Tensor>(&*value);
      if (!tensor || !(*leaf)->is_in(*tensor)) return false;
    } else {
      const auto* nested = std::get_if<TensorDict>(&*value);
      if (!nested || !std::get<CompositePtr>(entry.second)->is_in(*nested)) return false;
    }
  }
  return true;
}

void Composite::assert_is_in(const TensorDict& td) const { assert_is_in_at(td, nullptr); }

void Composite::assert_is_in_at(const TensorDict& td, const NestedKey* prefix) const {
  const std::string op = "Composite::assert_is_in";
  for (const auto& entry : entries_) {
    const NestedKey key = full_key(prefix, entry.first);
    const std::optional<tensordict::Value> value = td.find_value(entry.first);
    TDRL_CHECK(value, KeyError, op, ": key ", key.to_string(),
               " is missing from the TensorDict; the spec ", "expects a ",
               spec_summary(entry.second),
               "; keys there: ", (closest_names(entry.first.front(), td_names(td))));
    if (const auto* leaf = std::get_if<TensorSpecPtr>(&entry.second)) {
      const auto* tensor = std::get_if<torch::Tensor>(&*value);
      TDRL_CHECK(tensor, TypeError, op, ": key ", key.to_string(), " holds ",
                 (std::holds_alternative<TensorDict>(*value) ? "a TensorDict" : "non-tensor data"),
                 "; the spec expects a tensor (", spec_summary(entry.second), ")");
      (*leaf)->assert_is_in(*tensor, key.to_string());
    } else {
      const auto* nested = std::get_if<TensorDict>(&*value);
      TDRL_CHECK(nested, TypeError, op, ": key ", key.to_string(), " holds ",
                 (std::holds_alternative<torch::Tensor>(*value) ? "a tensor" : "non-tensor data"),
                 "; the spec expects a TensorDict (", spec_summary(entry.second), ")");
      std::get<CompositePtr>(entry.second)->assert_is_in_at(*nested, &key);
    }
  }
}

TensorDict Composite::project(const TensorDict& td) const { return project_at(td, nullptr); }

TensorDict Composite::project_at(const TensorDict& td, const NestedKey* prefix) const {
  const std::string op = "Composite::project";
  for (const auto& entry : entries_) {
    TDRL_CHECK(td.contains(entry.first), KeyError, op, ": key ",
               full_key(prefix, entry.first).to_string(),
               " is missing from the TensorDict; keys there: ",
               (closest_names(entry.first.front(), td_names(td))));
  }
  TensorDict out = TensorDict::empty(td.batch_size(), td.device());
  for (const auto& item : td.items()) {
    const int64_t i = index_of(item.first.front());
    if (i < 0) {
      out.set(item.first, item.second);
      continue;
    }
    const SpecValue& spec = entries_[static_cast<size_t>(i)].second;
    const NestedKey key = full_key(prefix, item.first);
    if (const auto* leaf = std::get_if<TensorSpecPtr>(&spec)) {
      const auto* tensor = std::get_if<torch::Tensor>(&item.second);
      TDRL_CHECK(tensor, TypeError, op, ": key ", key.to_string(),
                 " does not hold a tensor; the spec ", "expects one (", spec_summary(spec), ")");
      try {
        out.set(item.first, (*leaf)->project(*tensor));
      } catch (const ShapeError& e) {
        throw ShapeError(op + ": key " + key.to_string() + ": " + e.what());
      }
    } else {
      const auto* nested = std::get_if<TensorDict>(&item.second);
      TDRL_CHECK(nested, TypeError, op, ": key ", key.to_string(),
                 " does not hold a TensorDict; the spec ", "expects one (", spec_summary(spec),
                 ")");
      out.set(item.first, std::get<CompositePtr>(spec)->project_at(*nested, &key));
    }
  }
  return out;
}

// ---- New specs ----------------------------------------------------------------------------------

CompositePtr Composite::expand(std::vector<int64_t> shape) const {
  detail::check_sizes("Composite::expand", shape);
  TDRL_CHECK(detail::ends_with(shape, shape_), ShapeError, "Composite::expand: new shape ",
             shape_str(shape), " must end with the Composite's shape ", shape_str(shape_),
             " (the new leading dims are batch dims), e.g. [4, *shape]");
  auto out = std::make_shared<Composite>(std::vector<Item>{}, shape, device_);
  for (const auto& entry : entries_) {
    const std::vector<int64_t>& own = spec_shape(entry.second);
    std::vector<int64_t> child_shape = shape;
    child_shape.insert(child_shape.end(), own.begin() + ndim(), own.end());
    if (const auto* leaf = std::get_if<TensorSpecPtr>(&entry.second)) {
      out->entries_.emplace_back(entry.first, (*leaf)->expand(child_shape));
    } else {
      out->entries_.emplace_back(entry.first,
                                 std::get<CompositePtr>(entry.second)->expand(child_shape));
    }
  }
  return out;
}

CompositePtr Composite::to(torch::Device device) const {
  auto out = std::make_shared<Composite>(std::vector<Item>{}, shape_, device);
  for (const auto& entry : entries_) {
    if (const auto* leaf = std::get_if<TensorSpecPtr>(&entry.second)) {
      out->entries_.emplace_back(entry.first, (*leaf)->to(device));
    } else {
      out->entries_.emplace_back(entry.first, std::get<CompositePtr>(entry.second)->to(device));
    }
  }
  return out;
}

CompositePtr Composite::clone() const {
  auto out = std::make_shared<Composite>(std::vector<Item>{}, shape_, device_);
  for (const auto& entry : entries_) {
    if (const auto* leaf = std::get_if<TensorSpecPtr>(&entry.second)) {
      out->entries_.emplace_back(entry.first, (*leaf)->clone());
    } else {
      out->entries_.emplace_back(entry.first, std::get<CompositePtr>(entry.second)->clone());
    }
  }
  return out;
}

std::string Composite::to_string() const {
  std::string out = "Composite(\n";
  for (const auto& entry : entries_) {
    out += detail::indent(entry.first.front() + ": " + spec_repr(entry.second), 4) + ",\n";
  }
  return out + "    device=" + device_repr(device_) + ",\n    shape=" + detail::size_repr(shape_) +
         ")";
}

bool Composite::operator==(const Composite& other) const {
  if (shape_ != other.shape_ || device_ != other.device_ || size() != other.size()) return false;
  for (const auto& entry : entries_) {
    const int64_t i = other.index_of(entry.first.front());
    if (i < 0 || !spec_equal(entry.second, other.entries_[static_cast<size_t>(i)].second)) {
      return false;
    }
  }
  return true;
}

std::ostream& operator<<(std::ostream& os, const Composite& spec) { return os << spec.to_string(); }

}  // namespace tdrl::specs
