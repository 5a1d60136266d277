#pragma once

/// The building blocks of typed config sections. A section is a struct that declares its
/// fields once, in `fields(FieldVisitor&)`, with the vocabulary of tensordict/fields.h (the
/// YAML-free declarations that tdrl's library options use too); the config layer's visitors
/// read that one declaration to parse and validate YAML into the struct, write the resolved
/// config.yaml and generate docs/config.md. The declaration vocabulary is named here without
/// its namespace (the using-declarations below), so a section reads the same in apps/ and in a
/// user's plugin.
///
/// Example (a user's algorithm section, composing the options of the user's loss):
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

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <tensordict/fields.h>

namespace tdrl::apps {

/// Thrown for every config problem; the message names the key path, where the value came
/// from (file and line, or the `--set` override), what was expected and what was got, and a
/// fix. Loading reports every problem of a config at once, one per line.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

using tensordict::fields::at_least;
using tensordict::fields::at_most;
using tensordict::fields::Constraint;
using tensordict::fields::FieldVisitor;
using tensordict::fields::greater_than;
using tensordict::fields::in_range;
using tensordict::fields::non_empty;
using tensordict::fields::one_of;
using tensordict::fields::ScalarMap;
using tensordict::fields::Section;
using tensordict::fields::SectionList;
using tensordict::fields::SectionListOf;
/// The config layer checks a device against this machine when the config loads: a GPU where
/// there is none, or an index past the last GPU, is refused with the GPUs there are.
using tensordict::fields::torch_device;

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

}  // namespace tdrl::apps
