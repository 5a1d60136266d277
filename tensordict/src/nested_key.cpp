#include <tensordict/nested_key.h>

#include <tensordict/errors.h>

namespace tensordict {

NestedKey::NestedKey(const char* key) : NestedKey(std::string(key ? key : "")) {}

NestedKey::NestedKey(std::string key) {
  TDRL_CHECK(!key.empty(), ValueError, "NestedKey: a key must not be the empty string");
  parts_.push_back(std::move(key));
}

NestedKey::NestedKey(std::initializer_list<NestedKey> parts) {
  for (const auto& part : parts)
    for (const auto& p : part.parts_) parts_.push_back(p);
  TDRL_CHECK(!parts_.empty(), ValueError, "NestedKey: a key path must have at least one part");
}

void NestedKey::append(const std::string& part) { parts_.push_back(part); }

NestedKey NestedKey::join(const NestedKey& child) const {
  NestedKey out = *this;
  for (const auto& p : child.parts_) out.append(p);
  return out;
}

NestedKey NestedKey::tail() const {
  TDRL_CHECK(!(parts_.size() < 2), ValueError, "NestedKey::tail: key ", to_string(),
             " has one part");
  NestedKey out;
  for (size_t i = 1; i < parts_.size(); ++i) out.append(parts_[i]);
  return out;
}

NestedKey NestedKey::parent() const {
  TDRL_CHECK(!(parts_.size() < 2), ValueError, "NestedKey::parent: key ", to_string(),
             " has one part");
  NestedKey out;
  for (size_t i = 0; i + 1 < parts_.size(); ++i) out.append(parts_[i]);
  return out;
}

std::string NestedKey::join_parts(const std::string& separator) const {
  std::string out = parts_[0];
  for (size_t i = 1; i < parts_.size(); ++i) out += separator + parts_[i];
  return out;
}

std::string NestedKey::to_string() const {
  if (parts_.size() == 1) return "'" + parts_[0] + "'";
  std::string out = "(";
  for (size_t i = 0; i < parts_.size(); ++i) out += (i ? ", '" : "'") + parts_[i] + "'";
  return out + ")";
}

bool NestedKey::operator==(const NestedKey& other) const {
  if (parts_.size() != other.parts_.size()) return false;
  for (size_t i = 0; i < parts_.size(); ++i)
    if (parts_[i] != other.parts_[i]) return false;
  return true;
}

bool NestedKey::operator<(const NestedKey& other) const {
  return std::lexicographical_compare(parts_.begin(), parts_.end(), other.parts_.begin(),
                                      other.parts_.end());
}

std::ostream& operator<<(std::ostream& os, const NestedKey& key) { return os << key.to_string(); }

}  // namespace tensordict

std::size_t std::hash<tensordict::NestedKey>::operator()(
    const tensordict::NestedKey& key) const noexcept {
  std::size_t h = 0;
  for (const auto& p : key.parts()) h = h * 1000003u ^ std::hash<std::string>{}(p);
  return h;
}
