#pragma once

/// Declared options: an options struct lists its fields once, each with its name, its default
/// (the member's value), what it accepts and a one-line doc, in `fields(FieldVisitor&)`. What
/// reads that one declaration is a visitor: tdrl's config layer parses and validates YAML into
/// the struct, writes the resolved config.yaml and generates docs/config.md from it; a test can
/// walk it; nothing here knows YAML or any text format.
///
/// The options structs of tdrl's losses, value estimators and env transforms declare their
/// fields this way, and a user's own options do the same to get the config layer's parsing,
/// validation, suggestions and docs (docs/custom_loss.md).
///
/// Example (the options of a user's loss):
/// ```
/// struct AWROptions {
///   TORCH_ARG(double, beta) = 1.0;
///   TORCH_ARG(std::optional<double>, max_weight);
///
///  public:
///   void fields(tensordict::fields::FieldVisitor& v) {
///     namespace tf = tensordict::fields;
///     v("beta", beta_, tf::greater_than(0), "advantage temperature");
///     v("max_weight", max_weight_, tf::greater_than(0), "clip of the weights (null: none)");
///   }
/// };
/// ```
///
/// Constraint is data only: what a field accepts. Checking a value against it and describing
/// it in words is the reader's business (the config layer's messages, docs/config.md).

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tensordict::fields {

/// What a field accepts beyond its type: a numeric range (with exact exceptions such as -1 for
/// "off"), a list of string choices, or both "a number or one of these words". Lists apply it
/// to each element. For an optional number, the choices are the words that mean "unset" (none
/// given: `null`). Build one with the functions below and chain `or_exactly` / `because`.
class Constraint {
 public:
  /// Anything of the field's type.
  Constraint() = default;

  /// Also accepts exactly `value` ("-1: the task's own limit").
  Constraint& or_exactly(double value) {
    exact_.push_back(value);
    return *this;
  }
  /// Also bounds the value above by `hi` (for half-open ranges: `greater_than(0).up_to(1)`).
  Constraint& up_to(double hi) {
    max_ = hi;
    max_open_ = false;
    return *this;
  }
  /// Also bounds the value above by `hi`, excluded (`greater_than(0).below(1)`: in (0, 1)).
  Constraint& below(double hi) {
    max_ = hi;
    max_open_ = true;
    return *this;
  }
  /// A sentence added to the error message (why the range is what it is; for a string choice,
  /// what to do when no choice is close to the value given).
  Constraint& because(std::string reason) {
    reason_ = std::move(reason);
    return *this;
  }
  /// Also accepts any finite number written as a string field (`"auto"` or a number).
  Constraint& or_number() {
    number_ = true;
    return *this;
  }

  /// The lower bound, if any, and whether it is excluded.
  const std::optional<double>& min() const { return min_; }
  bool min_open() const { return min_open_; }
  /// The upper bound, if any, and whether it is excluded.
  const std::optional<double>& max() const { return max_; }
  bool max_open() const { return max_open_; }
  /// Values accepted outside the range.
  const std::vector<double>& exact() const { return exact_; }
  /// The string choices (empty: any string).
  const std::vector<std::string>& choices() const { return choices_; }
  /// A number is accepted besides the choices.
  bool accepts_number() const { return number_; }
  /// An empty string is refused.
  bool refuses_empty() const { return non_empty_; }
  /// The value names a LibTorch device (checked against the machine by the reader).
  bool is_device() const { return device_; }
  const std::string& reason() const { return reason_; }

 private:
  friend Constraint at_least(double);
  friend Constraint greater_than(double);
  friend Constraint at_most(double);
  friend Constraint in_range(double, double);
  friend Constraint one_of(std::vector<std::string>);
  friend Constraint non_empty();
  friend Constraint torch_device(std::vector<std::string>);

  std::optional<double> min_;
  bool min_open_ = false;
  std::optional<double> max_;
  bool max_open_ = false;
  std::vector<double> exact_;
  std::vector<std::string> choices_;
  bool number_ = false;
  bool non_empty_ = false;
  bool device_ = false;
  std::string reason_;
};

/// `x >= lo`.
inline Constraint at_least(double lo) {
  Constraint c;
  c.min_ = lo;
  return c;
}
/// `x > lo`.
inline Constraint greater_than(double lo) {
  Constraint c;
  c.min_ = lo;
  c.min_open_ = true;
  return c;
}
/// `x <= hi`.
inline Constraint at_most(double hi) {
  Constraint c;
  c.max_ = hi;
  return c;
}
/// `lo <= x <= hi`.
inline Constraint in_range(double lo, double hi) {
  Constraint c;
  c.min_ = lo;
  c.max_ = hi;
  return c;
}
/// A string among `choices` (for an optional number: the words that mean "unset").
inline Constraint one_of(std::vector<std::string> choices) {
  Constraint c;
  c.choices_ = std::move(choices);
  return c;
}
/// A string that is not empty.
inline Constraint non_empty() {
  Constraint c;
  c.non_empty_ = true;
  return c;
}
/// A LibTorch device: "cpu", "cuda" (the current GPU) or "cuda:N", or one of the words `also`
/// ("auto"). The reader checks that the device exists on the machine.
inline Constraint torch_device(std::vector<std::string> also = {}) {
  Constraint c;
  c.device_ = true;
  c.choices_ = std::move(also);
  return c;
}

/// A free-form map of scalars (e.g. env.options); values keep their text: the reader decides
/// whether each is a bool, an integer, a float or a string.
using ScalarMap = std::map<std::string, std::string>;

class FieldVisitor;

/// Something with declared fields that a visitor reads as a nested section (a config's `env:`):
/// a struct with default member values and a `fields` declaration.
class Section {
 public:
  virtual ~Section() = default;
  /// Declares every field, in the order a resolved config and the docs list them.
  virtual void fields(FieldVisitor& v) = 0;
};

/// A list of sections of one kind, each chosen by a key of its own (env.transforms: each
/// element's `type`). A reader appends an element, fills it, and so on.
class SectionList {
 public:
  virtual ~SectionList() = default;
  virtual size_t size() const = 0;
  virtual Section& at(size_t i) = 0;
  virtual Section& append() = 0;
  virtual void clear() = 0;
};

/// SectionList over a std::vector<T> (T derives from Section).
template <class T>
class SectionListOf : public SectionList {
 public:
  size_t size() const override { return items.size(); }
  Section& at(size_t i) override { return items.at(i); }
  Section& append() override { return items.emplace_back(); }
  void clear() override { items.clear(); }
  std::vector<T> items;
};

/// What visits the fields of an options struct or a section. Each kind of field has one
/// overload; `required` fields have no default and must be given. An optional number is a
/// number or unset (its constraint's choices are the words that mean unset).
class FieldVisitor {
 public:
  virtual ~FieldVisitor() = default;

  virtual void field(const char* name, bool& value, const Constraint& c, const char* doc) = 0;
  virtual void field(const char* name, int64_t& value, const Constraint& c, const char* doc) = 0;
  virtual void field(const char* name, double& value, const Constraint& c, const char* doc) = 0;
  virtual void field(const char* name, std::optional<double>& value, const Constraint& c,
                     const char* doc) = 0;
  virtual void field(const char* name, std::optional<int64_t>& value, const Constraint& c,
                     const char* doc) = 0;
  virtual void field(const char* name, std::string& value, const Constraint& c,
                     const char* doc) = 0;
  virtual void field(const char* name, std::vector<int64_t>& value, const Constraint& c,
                     const char* doc) = 0;
  virtual void field(const char* name, std::vector<double>& value, const Constraint& c,
                     const char* doc) = 0;
  virtual void field(const char* name, std::vector<std::string>& value, const Constraint& c,
                     const char* doc) = 0;
  virtual void field(const char* name, ScalarMap& value, const Constraint& c, const char* doc) = 0;
  /// A nested section (`env:`, `algo:`).
  virtual void section(const char* name, Section& value, const char* doc) = 0;
  /// A list of sections (`transforms:`).
  virtual void section_list(const char* name, SectionList& value, const char* doc) = 0;
  /// Marks the next field as required (no default).
  FieldVisitor& required() {
    required_ = true;
    return *this;
  }

  /// Marks the fields named `names` required while `declare` runs: for a section that composes
  /// an options struct whose default suits the library but not the section (a collector's
  /// total_frames defaults to "never end"; a config must say how long to train).
  template <class F>
  void requiring(std::vector<std::string> names, F&& declare) {
    std::swap(required_names_, names);
    try {
      declare();
    } catch (...) {
      std::swap(required_names_, names);
      throw;
    }
    std::swap(required_names_, names);
  }

  template <class T>
  void operator()(const char* name, T& value, const Constraint& c, const char* doc) {
    mark_if_named(name);
    field(name, value, c, doc);
    required_ = false;
  }
  template <class T>
  void operator()(const char* name, T& value, const char* doc) {
    mark_if_named(name);
    field(name, value, Constraint(), doc);
    required_ = false;
  }

 protected:
  /// True while visiting a field marked with required() or named by requiring().
  bool is_required() const { return required_; }

 private:
  void mark_if_named(const char* name) {
    for (const auto& n : required_names_)
      if (n == name) required_ = true;
  }

  bool required_ = false;
  std::vector<std::string> required_names_;
};

}  // namespace tensordict::fields
