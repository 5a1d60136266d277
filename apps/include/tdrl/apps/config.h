#pragma once

/// The training configuration: a YAML document validated against a schema of known keys,
/// with typed access by dotted path ("algo.gamma"), command-line overrides and printing.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace tdrl::apps {

/// The kind of a config value.
/// kMap: a free-form map of scalars (e.g. env.options); kMapList: a list of maps, each with
/// a "type" entry (e.g. env.transforms), validated by whoever reads it.
enum class ValueKind {
  kBool,
  kInt,
  kFloat,
  kString,
  kIntList,
  kFloatList,
  kStringList,
  kMap,
  kMapList
};

/// "bool", "int", "float", "string", "list of int", ...
std::string to_string(ValueKind kind);

/// One known key of the schema.
struct KeySpec {
  /// Dotted path: "algo.gamma".
  std::string path;
  ValueKind kind = ValueKind::kString;
  /// The default, as YAML text ("0.99", "[64, 64]", "adam"); ignored when required.
  std::string default_yaml;
  /// Must be given by the config file or an override.
  bool required = false;
  /// When not empty, the string values accepted (checked on load).
  std::vector<std::string> choices;
  /// When not empty, the key is only valid when "algo.name" is one of these.
  std::vector<std::string> algos;
  /// One line for docs/config.md and error messages.
  std::string doc;
};

/// The schema: every known key. Sections are the first part of the paths.
class Schema {
 public:
  Schema() = default;
  /// Indexes `keys` (their order is the order of to_yaml and docs/config.md).
  /// Throws std::logic_error (a bug in the table, not a user error) when a path is empty or
  /// has an empty part, when two keys have the same path, when a path is also a section of
  /// other keys ("a.b" and "a.b.c"), or when a default does not parse as YAML of its kind or is
  /// not among its choices.
  explicit Schema(std::vector<KeySpec> keys);
  /// The training apps' schema (documented in docs/config.md).
  static const Schema& training();

  const std::vector<KeySpec>& keys() const { return keys_; }
  /// The spec of `path`, or null.
  const KeySpec* find(const std::string& path) const;
  /// True when `path` is a section of some keys: "env" for "env.name" (not "env.name" itself).
  bool is_section(const std::string& path) const;

 private:
  std::vector<KeySpec> keys_;
  std::map<std::string, size_t> index_;
};

/// Thrown for every config problem; the message names the key path, the YAML line (when the
/// value came from a file), what was expected and what was got, and a fix.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A validated configuration: every schema key has a value (given or default), every value
/// has its schema kind, and no unknown key exists.
///
/// Validation on load, all problems reported together in one ConfigError:
/// - an unknown key: "unknown key 'algo.gama' (line 12); did you mean 'algo.gamma'?" (closest
///   known keys by edit distance, and for algo keys valid only with other algos, which ones);
/// - a wrong type: "'optim.lr' (line 20) must be a float, got 'fast'";
/// - a value not among `choices`: names the choices;
/// - a missing required key: "missing required key 'env.name' (...doc...)".
///
/// Overrides (`--set a.b=c`): the value is parsed as YAML ("a.b=[1, 2]", "a.b=true"), applied
/// after the file, and validated the same way (the "line" is then "--set a.b=c"). A section
/// takes a map ("algo={gamma: 0.9, lmbda: 0.9}"). The last override of a key wins.
///
/// Values by kind: kBool takes true/false (also True, TRUE, False, FALSE); kInt a whole
/// number ("1e6" and "2.0" are refused, with the integer to write); kFloat any finite number
/// (ints and "1e-4" too; .inf and .nan are refused); kString any scalar; numbers and bools
/// in quotes ("0.5") are strings, so they are refused where a number or bool is expected. The
/// list kinds take a sequence of such scalars, kMap a map of scalars, kMapList a sequence of
/// maps each with a scalar "type". An empty value ("options:" with nothing after it) of a
/// list or map kind means the empty list or map. Keys valid only for some algorithms
/// (KeySpec::algos) are refused when algo.name is another algorithm, and are then absent
/// from the Config; every other key not given gets its default.
///
/// A Config is immutable after load. It holds yaml-cpp nodes, which are not safe to read
/// from several threads at once: read it on one thread (the apps read it once into Options).
class Config {
 public:
  /// Loads and validates a YAML file, then applies `overrides` ("path=value" strings).
  /// `schema` must outlive the Config. Throws ConfigError when the file cannot be read, is
  /// not valid YAML, or has any problem (all of them in one message, one per line).
  static Config load_file(const std::string& path, const std::vector<std::string>& overrides = {},
                          const Schema& schema = Schema::training());
  /// Loads and validates YAML text (`source` names it in messages); as load_file.
  static Config load_string(const std::string& yaml, const std::vector<std::string>& overrides = {},
                            const Schema& schema = Schema::training(),
                            const std::string& source = "<string>");

  /// Typed reads. Each throws ConfigError (a programming error: the message names the path
  /// and the kind asked) when `path` is not a schema key, is absent from this config (a key of
  /// another algorithm) or has another kind (get_float does not read an int key).
  bool get_bool(const std::string& path) const;
  int64_t get_int(const std::string& path) const;
  double get_float(const std::string& path) const;
  std::string get_string(const std::string& path) const;
  std::vector<int64_t> get_int_list(const std::string& path) const;
  std::vector<double> get_float_list(const std::string& path) const;
  std::vector<std::string> get_string_list(const std::string& path) const;
  /// A kMap value (free-form map of scalars; a copy, possibly empty).
  YAML::Node get_map(const std::string& path) const;
  /// A kMapList value (copies of the maps, in order; each has a scalar "type").
  std::vector<YAML::Node> get_map_list(const std::string& path) const;
  /// True when the file or an override gave the key (false when it has its default or is
  /// absent). Throws ConfigError when `path` is not a schema key.
  bool is_set(const std::string& path) const;
  /// True when the config has a value for `path` (false for keys of other algorithms and
  /// paths outside the schema).
  bool contains(const std::string& path) const { return values_.count(path) > 0; }

  /// The resolved config (every key, defaults included) as YAML, sections in schema order;
  /// loading it back gives an equal Config (with every key then set). Each scalar or list
  /// value carries its KeySpec::doc as a trailing comment.
  std::string to_yaml() const;
  const Schema& schema() const { return *schema_; }

 private:
  Config() = default;
  /// The value of `path`, checked to be of `kind`; `getter` names the caller in messages.
  const YAML::Node& lookup(const std::string& path, ValueKind kind, const char* getter) const;

  const Schema* schema_ = nullptr;
  /// Every present key (given or default) to its validated value (a node of its own).
  std::map<std::string, YAML::Node> values_;
  /// The keys given by the file or an override.
  std::set<std::string> given_;
};

}  // namespace tdrl::apps
