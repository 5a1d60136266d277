#pragma once

/// NameTable and Registry: names and what each name stands for (a factory, an enum value, a
/// function), with one way of refusing a name that is not there.
///
/// NameTable is fixed when made: an ordered table of names and what each name stands for. It is the
/// one source of a choice's names and of what each name does: the names a config accepts and its
/// docs list come from the same table the code dispatches on, so a name that validates always
/// dispatches. tdrl's choice tables (activations, optimisers, collector modes, metrics backends,
/// progress modes, ...) are NameTables.
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

#include <map>
#include <mutex>
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

/// Registry: a NameTable that grows at run time (envs, algorithms, transforms: what users and
/// plugins register). Names are never replaced or removed; entries stay where they are, so what
/// find() returns stays valid. names() is sorted.
///
/// Errors: add() throws ValueError "<op>: the name is empty" or "<op>: '<name>' is already
/// registered; pick another name (names are never replaced)"; at() throws KeyError "<where>: no
/// <subject> is registered as '<name>'; registered (closest first): [...]" (or, when nothing is,
/// the registry's hint).
///
/// Thread safety: every member may be called from any thread.
template <class T>
class Registry {
 public:
  /// `subject` names an entry in messages ("env"); `empty_hint` says what to do when nothing
  /// is registered ("call register_builtin_envs() first").
  Registry(std::string subject, std::string empty_hint)
      : subject_(std::move(subject)), empty_hint_(std::move(empty_hint)) {}

  /// Adds `value` as `name`; `op` names the registering call in messages ("register_env").
  void add(const std::string& name, T value, const std::string& op) {
    TDRL_CHECK(!name.empty(), ValueError, op, ": the name is empty");
    std::lock_guard<std::mutex> lock(mutex_);
    TDRL_CHECK(!entries_.count(name), ValueError, op, ": '", name,
               "' is already registered; pick another name (names are never replaced)");
    entries_.emplace(name, std::move(value));
  }

  /// What `name` stands for, or null.
  const T* find(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = entries_.find(name);
    return it == entries_.end() ? nullptr : &it->second;
  }

  /// What `name` stands for; throws KeyError naming `where`, the name and the registered names,
  /// closest first.
  const T& at(const std::string& name, const std::string& where) const {
    if (const T* value = find(name)) return *value;
    const auto known = names();
    throw KeyError(where + ": no " + subject_ + " is registered as '" + name + "'; " +
                   (known.empty() ? "none is registered (" + empty_hint_ + ")"
                                  : "registered (closest first): " + closest_names(name, known)));
  }

  /// The registered names, sorted.
  std::vector<std::string> names() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> out;
    out.reserve(entries_.size());
    for (const auto& entry : entries_) out.push_back(entry.first);
    return out;
  }

 private:
  std::string subject_;
  std::string empty_hint_;
  mutable std::mutex mutex_;
  std::map<std::string, T> entries_;  // node-based: entries never move
};

}  // namespace tensordict
