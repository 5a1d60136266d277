#pragma once

/// The building blocks of typed config sections: a section is a struct that declares its
/// fields once, in `fields(FieldVisitor&)`, and the config layer's visitors read that one
/// declaration to parse and validate YAML into the struct, write the resolved config.yaml and
/// generate docs/config.md.
///
/// Example (a user's algorithm section):
/// ```
/// struct AWRConfig : tdrl::apps::AlgoConfig {
///   double gamma = 0.99;
///   double beta = 1.0;
///   void fields(tdrl::apps::FieldVisitor& v) override {
///     v("gamma", gamma, tdrl::apps::in_range(0, 1), "discount");
///     v("beta", beta, tdrl::apps::greater_than(0), "advantage temperature");
///   }
/// };
/// ```

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace tdrl::apps {

/// Thrown for every config problem; the message names the key path, where the value came
/// from (file and line, or the `--set` override), what was expected and what was got, and a
/// fix. Loading reports every problem of a config at once, one per line.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// What a field accepts beyond its type: a numeric range (with exact exceptions such as -1 for
/// "off"), a list of string choices, or both "a number or one of these words". Lists apply it
/// to each element. Build one with the functions below and chain `or_exactly` / `because`.
class Constraint {
 public:
  /// Anything of the field's type.
  Constraint() = default;

  /// Also accepts exactly `value` ("-1: the task's own limit").
  Constraint& or_exactly(double value);
  /// Also bounds the value above by `hi` (for half-open ranges: `greater_than(0).up_to(1)`).
  Constraint& up_to(double hi);
  /// A sentence added to the error message (why the range is what it is; for a string choice,
  /// what to do when no choice is close to the value given).
  Constraint& because(std::string reason);
  /// Also accepts any finite number written as a string field (`"auto"` or a number).
  Constraint& or_number();

  /// Empty when `value` is accepted, else the phrase after "it must be" (">= 1", "in [0, 1]").
  std::string check(double value) const;
  /// Empty when `value` is accepted, else what is wrong (the choices, closest first).
  std::string check(const std::string& value) const;
  /// "any", ">= 1 or -1", "in [0, 1]", "one of: cpu", for docs/config.md.
  std::string describe() const;
  /// The string choices (empty: any string).
  const std::vector<std::string>& choices() const { return choices_; }

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
  std::vector<double> exact_;
  std::vector<std::string> choices_;
  bool number_ = false;
  bool non_empty_ = false;
  bool device_ = false;
  std::string reason_;
};

/// `x >= lo`.
Constraint at_least(double lo);
/// `x > lo`.
Constraint greater_than(double lo);
/// `x <= hi`.
Constraint at_most(double hi);
/// `lo <= x <= hi`.
Constraint in_range(double lo, double hi);
/// A string among `choices`.
Constraint one_of(std::vector<std::string> choices);
/// A string that is not empty.
Constraint non_empty();
/// A LibTorch device that exists on this machine: "cpu", "cuda" (the current GPU) or "cuda:N",
/// or one of the words `also` ("auto"). A GPU where there is none, or an index past the last
/// GPU, is refused when the config loads, with the GPUs there are.
Constraint torch_device(std::vector<std::string> also = {});

/// A free-form map of scalars (e.g. env.options); values keep their YAML reading: a bool, an
/// integer, a float or a string, in that order of preference.
using ScalarMap = std::map<std::string, std::string>;

class FieldVisitor;

/// A config section: a struct with default member values and a `fields` declaration.
class Section {
 public:
  virtual ~Section() = default;
  /// Declares every field, in the order config.yaml and docs/config.md list them.
  virtual void fields(FieldVisitor& v) = 0;
};

/// A list of sections of one kind, each chosen by a key of its own (env.transforms: each
/// element's `type`). The config layer appends an element, asks it to `choose` from the given
/// map, then fills its fields.
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

/// A section whose fields depend on one of its keys (the algo section on `name`, a transform
/// on `type`). The config layer calls `choose` with the text the config gives for that key
/// before it reads the other fields.
class ChoiceSection : public Section {
 public:
  /// Selects `choice`; false when it names nothing registered (the key's own constraint then
  /// reports it, and the section's other keys are not checked).
  virtual bool choose(const std::string& choice) = 0;
  /// The key whose value `choose` takes ("name", "type").
  virtual const char* choice_key() const = 0;
  /// Every possible choice, for docs and suggestions.
  virtual std::vector<std::string> choices() const = 0;
  /// A section of the same kind with nothing chosen (to ask another choice for its keys).
  virtual std::unique_ptr<ChoiceSection> make_empty() const = 0;
};

/// What visits the fields of a section. Each kind of field has one overload; `required`
/// fields have no default and must be given.
class FieldVisitor {
 public:
  virtual ~FieldVisitor() = default;

  virtual void field(const char* name, bool& value, const Constraint& c, const char* doc) = 0;
  virtual void field(const char* name, int64_t& value, const Constraint& c, const char* doc) = 0;
  virtual void field(const char* name, double& value, const Constraint& c, const char* doc) = 0;
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
  /// A list of sections (`transforms:`), usually ChoiceSections.
  virtual void section_list(const char* name, SectionList& value, const char* doc) = 0;
  /// Marks the next field as required (no default).
  FieldVisitor& required() {
    required_ = true;
    return *this;
  }

  template <class T>
  void operator()(const char* name, T& value, const Constraint& c, const char* doc) {
    field(name, value, c, doc);
    required_ = false;
  }
  template <class T>
  void operator()(const char* name, T& value, const char* doc) {
    field(name, value, Constraint(), doc);
    required_ = false;
  }

 protected:
  /// True while visiting a field marked with required().
  bool is_required() const { return required_; }

 private:
  bool required_ = false;
};

}  // namespace tdrl::apps
