#pragma once

/// NameTable: an ordered table of names and what each name stands for (a factory, an enum
/// value, a function). It is the one source of a choice's names and of what each name does:
/// the names a config accepts and its docs list come from the same table the code dispatches
/// on, so a name that validates always dispatches. tdrl's choice tables (activations,
/// optimisers, collector modes, metrics backends, progress modes, ...) are NameTables.
///
/// Errors: the constructor throws ValueError for an empty or repeated name; at() throws
/// ValueError for an unknown name, naming the table's subject and the known names, closest
/// first.
///
/// Thread safety: const after construction; reading from several threads is safe.
///
/// Example:
/// ```
/// static const tensordict::NameTable<double (*)(double)> kSquash(
///     "function", {{"tanh", [](double x) { return std::tanh(x); }},
///                  {"identity", [](double x) { return x; }}});
/// double y = kSquash.at("tanh", "MyLayer")(0.5);  // "MyLayer: unknown function 'tan'; ..."
/// ```

#include <string>
#include <utility>
#include <vector>

#include <tensordict/errors.h>

namespace tensordict {

template <class T>
class NameTable {
 public:
  /// `subject` names what the table holds in messages ("activation"); `entries` in the order
  /// names() lists them.
  NameTable(std::string subject, std::vector<std::pair<std::string, T>> entries)
      : subject_(std::move(subject)), entries_(std::move(entries)) {
    for (size_t i = 0; i < entries_.size(); ++i) {
      const auto& name = entries_[i].first;
      TDRL_CHECK(!name.empty(), ValueError, "NameTable of ", subject_, ": an empty name");
      for (size_t j = 0; j < i; ++j)
        TDRL_CHECK(entries_[j].first != name, ValueError, "NameTable of ", subject_, ": '", name,
                   "' appears twice");
      names_.push_back(name);
    }
  }

  /// The names, in the table's order.
  const std::vector<std::string>& names() const { return names_; }

  /// What `name` stands for, or null.
  const T* find(const std::string& name) const {
    for (const auto& [known, value] : entries_)
      if (known == name) return &value;
    return nullptr;
  }

  /// What `name` stands for. Throws ValueError "<where>: unknown <subject> '<name>'; the
  /// <subject>s are [closest first]".
  const T& at(const std::string& name, const std::string& where) const {
    if (const T* value = find(name)) return *value;
    throw ValueError(where + ": unknown " + subject_ + " '" + name + "'; the " + subject_ +
                     "s are " + closest_names(name, names_));
  }

 private:
  std::string subject_;
  std::vector<std::pair<std::string, T>> entries_;
  std::vector<std::string> names_;
};

}  // namespace tensordict
