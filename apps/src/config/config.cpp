// The config engine: YAML (plus --set overrides) into typed sections, and the sections back
// into YAML. Every visitor walks the sections' one `fields` declaration.

#include <tdrl/apps/config.h>
#include <tdrl/apps/video.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include <yaml-cpp/yaml.h>

#include <tdrl/apps/registry.h>

#include "config/config_text.h"

namespace tdrl::apps {

namespace {

using detail::word_list;

// yaml-cpp tags plain scalars "?" and quoted ones "!": a quoted "0.5" is a string.
bool is_plain(const YAML::Node& node) { return node.Tag() == "?"; }

// How a value looks in a message: 'text' for scalars, "a list" for sequences, ...
std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      return is_plain(node) ? "'" + node.Scalar() + "'" : "'\"" + node.Scalar() + "\"' (quoted)";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Null:
      return "nothing (null)";
    case YAML::NodeType::Undefined:
      break;
  }
  return "nothing";
}

// ---- reading one value ---------------------------------------------------------------------
// Each returns "" or the problem, phrased to follow "'path' (where) ".

std::string read(const YAML::Node& node, bool* out) {
  if (node.IsScalar() && is_plain(node) && detail::parse_bool(node.Scalar(), out)) return "";
  return "must be a bool, got " + describe(node) + "; write true or false" +
         (node.IsScalar() && !is_plain(node) ? " without quotes" : "");
}

std::string read(const YAML::Node& node, int64_t* out) {
  if (node.IsScalar() && is_plain(node)) {
    const std::string& text = node.Scalar();
    if (detail::parse_int(text, out)) return "";
    double d = 0;
    if (detail::parse_float(text, &d) && d == std::floor(d) && std::fabs(d) < 9.0e15)
      return "must be an int, got " + describe(node) + "; write " +
             std::to_string(static_cast<int64_t>(d));
    const size_t sign = !text.empty() && (text[0] == '-' || text[0] == '+') ? 1 : 0;
    if (text.size() > sign && text.find_first_not_of("0123456789", sign) == std::string::npos)
      return "must be an int, got " + describe(node) + ", out of the 64-bit range";
  }
  return "must be an int, got " + describe(node) + "; write a whole number" +
         (node.IsScalar() && !is_plain(node) ? " without quotes" : "");
}

std::string read(const YAML::Node& node, double* out) {
  if (node.IsScalar() && is_plain(node) && detail::parse_float(node.Scalar(), out)) return "";
  return "must be a float, got " + describe(node) + "; write a finite number such as 0.5 or 1e-4" +
         (node.IsScalar() && !is_plain(node) ? " without quotes" : "");
}

std::string read(const YAML::Node& node, std::string* out) {
  if (!node.IsScalar()) return "must be a string, got " + describe(node);
  *out = node.Scalar();
  return "";
}

template <class T>
std::string checked(const T& value, const Constraint& c) {
  std::string issue;
  if constexpr (std::is_same_v<T, std::string>) {
    issue = detail::constraint_issue(c, value);
    return issue.empty() ? "" : "is '" + value + "'; " + issue;
  } else if constexpr (std::is_same_v<T, bool>) {
    return "";
  } else {
    issue = detail::constraint_issue(c, static_cast<double>(value));
    return issue.empty() ? ""
                         : "is " + detail::format_number(static_cast<double>(value)) +
                               "; it must be " + issue;
  }
}

// ---- where values came from -----------------------------------------------------------------

struct Origins {
  std::string source;
  std::map<std::string, std::string> overrides;  // path -> "--set path=value"

  // The override that set `path` or a section or list holding it; else the file's line.
  std::string where(const std::string& path, const YAML::Node* node) const {
    for (std::string p = path; !p.empty();) {
      const auto it = overrides.find(p);
      if (it != overrides.end()) return it->second;
      const size_t cut = p.find_last_of(".[");
      if (cut == std::string::npos) break;
      p = p.substr(0, cut);
    }
    // A section that only overrides created ("--set replay.capacity=5" for a config without
    // replay:) is named by the first override inside it.
    const auto inside = overrides.lower_bound(path + ".");
    if (inside != overrides.end() && inside->first.compare(0, path.size() + 1, path + ".") == 0)
      return inside->second;
    if (node && node->IsDefined()) return source + " line " + std::to_string(node->Mark().line + 1);
    return source;
  }
};

// ---- the paths a section declares ------------------------------------------------------------

// Collects the full key paths of a section (for suggestions) and the names at its top level.
class PathCollector : public FieldVisitor {
 public:
  explicit PathCollector(std::string prefix) : prefix_(std::move(prefix)) {}
  std::vector<std::string> paths;
  std::vector<std::string> names;

#define TDRL_COLLECT(T)                                                       \
  void field(const char* name, T&, const Constraint&, const char*) override { \
    names.push_back(name);                                                    \
    paths.push_back(prefix_ + name);                                          \
  }
  TDRL_COLLECT(bool)
  TDRL_COLLECT(int64_t)
  TDRL_COLLECT(double)
  TDRL_COLLECT(std::optional<double>)
  TDRL_COLLECT(std::optional<int64_t>)
  TDRL_COLLECT(std::string)
  TDRL_COLLECT(std::vector<int64_t>)
  TDRL_COLLECT(std::vector<double>)
  TDRL_COLLECT(std::vector<std::string>)
  TDRL_COLLECT(ScalarMap)
#undef TDRL_COLLECT
  void section(const char* name, Section& value, const char*) override {
    names.push_back(name);
    PathCollector inner(prefix_ + name + ".");
    value.fields(inner);
    paths.insert(paths.end(), inner.paths.begin(), inner.paths.end());
  }
  void section_list(const char* name, SectionList&, const char*) override {
    names.push_back(name);
    paths.push_back(prefix_ + name);
  }

 private:
  std::string prefix_;
};

std::vector<std::string> names_of(Section& section) {
  PathCollector c("");
  section.fields(c);
  return c.names;
}

// ---- the keys a section sets apart from another -------------------------------------------

// Every scalar key path of a section with its value as text, so that two sections compare key
// by key (changed_keys).
class ValueTexts : public FieldVisitor {
 public:
  explicit ValueTexts(std::string prefix) : prefix_(std::move(prefix)) {}
  std::map<std::string, std::string> texts;

  void field(const char* name, bool& v, const Constraint&, const char*) override {
    put(name, detail::text_of(v));
  }
  void field(const char* name, int64_t& v, const Constraint&, const char*) override {
    put(name, detail::text_of(v));
  }
  void field(const char* name, double& v, const Constraint&, const char*) override {
    put(name, detail::text_of(v));
  }
  void field(const char* name, std::optional<double>& v, const Constraint&, const char*) override {
    put(name, v ? detail::text_of(*v) : "null");
  }
  void field(const char* name, std::optional<int64_t>& v, const Constraint&, const char*) override {
    put(name, v ? detail::text_of(*v) : "null");
  }
  void field(const char* name, std::string& v, const Constraint&, const char*) override {
    put(name, v);
  }
  void field(const char* name, std::vector<int64_t>& v, const Constraint&, const char*) override {
    put(name, joined(v));
  }
  void field(const char* name, std::vector<double>& v, const Constraint&, const char*) override {
    put(name, joined(v));
  }
  void field(const char* name, std::vector<std::string>& v, const Constraint&,
             const char*) override {
    put(name, joined(v));
  }
  void field(const char* name, ScalarMap& v, const Constraint&, const char*) override {
    std::string text;
    for (const auto& [key, value] : v) text += key + "=" + value + ";";
    put(name, text);
  }
  void section(const char* name, Section& value, const char*) override {
    ValueTexts inner(prefix_ + name + ".");
    value.fields(inner);
    texts.insert(inner.texts.begin(), inner.texts.end());
  }
  void section_list(const char* name, SectionList& value, const char*) override {
    put(name, std::to_string(value.size()) + " items");
    for (size_t i = 0; i < value.size(); ++i) {
      ValueTexts inner(prefix_ + name + "[" + std::to_string(i) + "].");
      value.at(i).fields(inner);
      texts.insert(inner.texts.begin(), inner.texts.end());
    }
  }

 private:
  void put(const char* name, std::string text) { texts[prefix_ + name] = std::move(text); }
  template <class T>
  static std::string joined(const std::vector<T>& items) {
    std::string out;
    for (const auto& item : items) {
      if constexpr (std::is_same_v<T, std::string>) {
        out += item;
      } else {
        out += detail::text_of(item);
      }
      out += ",";
    }
    return out;
  }
  std::string prefix_;
};

// ---- YAML into sections -----------------------------------------------------------------------

class Loader;

// Reads one YAML map into one section: each declared field from its entry, then the entries
// that no field declared are reported as unknown.
class ApplyVisitor : public FieldVisitor {
 public:
  ApplyVisitor(Loader& loader, const YAML::Node& map, std::string prefix)
      : loader_(loader), map_(map), prefix_(std::move(prefix)) {}

  // Each kind of field is read by the read_field overload for its shape (scalar, list, optional).
#define TDRL_APPLY(T)                                                                     \
  void field(const char* name, T& value, const Constraint& c, const char* doc) override { \
    read_field(name, value, c, doc);                                                      \
  }
  TDRL_APPLY(bool)
  TDRL_APPLY(int64_t)
  TDRL_APPLY(double)
  TDRL_APPLY(std::optional<double>)
  TDRL_APPLY(std::optional<int64_t>)
  TDRL_APPLY(std::string)
  TDRL_APPLY(std::vector<int64_t>)
  TDRL_APPLY(std::vector<double>)
  TDRL_APPLY(std::vector<std::string>)
#undef TDRL_APPLY
  void field(const char* name, ScalarMap& value, const Constraint&, const char* doc) override;
  void section(const char* name, Section& value, const char*) override;
  void section_list(const char* name, SectionList& value, const char*) override;

  // Reports the entries of the map that no field declared.
  void report_unknown(Section& section);

 private:
  // The entry `name` of the map (undefined when absent); marks it as read.
  YAML::Node entry(const char* name) {
    read_.insert(name);
    if (!map_.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
    for (const auto& e : map_)
      if (e.first.IsScalar() && e.first.Scalar() == name) return e.second;
    return YAML::Node(YAML::NodeType::Undefined);
  }

  template <class T>
  void read_field(const char* name, T& value, const Constraint& c, const char* doc);
  template <class T>
  void read_field(const char* name, std::vector<T>& value, const Constraint& c, const char* doc);
  template <class T>
  void read_field(const char* name, std::optional<T>& value, const Constraint& c, const char* doc);
  void missing(const char* name, const char* doc);

  Loader& loader_;
  YAML::Node map_;
  std::string prefix_;
  std::set<std::string> read_;
};

class Loader {
 public:
  Loader(Origins origins) : origins_(std::move(origins)) {}

  void problem(const std::string& text) { problems_.push_back(text); }
  // "'path' (where) <issue>".
  void problem_at(const std::string& path, const YAML::Node* node, const std::string& issue) {
    problem("'" + path + "' (" + origins_.where(path, node) + ") " + issue);
  }
  const Origins& origins() const { return origins_; }

  // Applies `map` (a map, null or undefined) to `section` at `prefix` ("env.").
  void apply(Section& section, const YAML::Node& map, const std::string& prefix) {
    bool known = true;
    if (auto* choice = dynamic_cast<ChoiceSection*>(&section)) {
      const YAML::Node key = map.IsMap() ? map[choice->choice_key()] : YAML::Node();
      known = key && key.IsScalar() && choice->choose(key.Scalar());
    }
    report_duplicates(map, prefix);
    ApplyVisitor visitor(*this, map, prefix);
    section.fields(visitor);
    // With an unknown choice the other keys cannot be judged; the choice itself is reported.
    if (known) visitor.report_unknown(section);
  }

  void set_all_paths(std::vector<std::string> paths) { all_paths_ = std::move(paths); }
  const std::vector<std::string>& all_paths() const { return all_paths_; }

  void finish() {
    if (problems_.empty()) return;
    throw ConfigError(detail::problems_message("invalid config " + origins_.source, problems_));
  }

 private:
  void report_duplicates(const YAML::Node& map, const std::string& prefix) {
    if (!map.IsMap()) return;
    std::map<std::string, int> lines;
    for (const auto& e : map) {
      if (!e.first.IsScalar()) continue;
      const int line = e.first.Mark().line + 1;
      const auto [it, fresh] = lines.emplace(e.first.Scalar(), line);
      if (!fresh)
        problem("'" + prefix + e.first.Scalar() + "' is given twice (" + origins_.source +
                " lines " + std::to_string(it->second) + " and " + std::to_string(line) +
                "); keep one");
    }
  }

  Origins origins_;
  std::vector<std::string> problems_;
  std::vector<std::string> all_paths_;
};

void ApplyVisitor::missing(const char* name, const char* doc) {
  if (is_required())
    loader_.problem("missing required key '" + prefix_ + name + "' (" + doc + ") in " +
                    loader_.origins().source + "; add it there or pass --set " + prefix_ + name +
                    "=...");
}

template <class T>
void ApplyVisitor::read_field(const char* name, T& value, const Constraint& c, const char* doc) {
  const std::string path = prefix_ + name;
  const YAML::Node node = entry(name);
  if (!node.IsDefined()) return missing(name, doc);
  if (node.IsNull()) {
    loader_.problem_at(path, &node, "has no value; write one or remove the key");
    return;
  }
  T parsed{};
  std::string issue = read(node, &parsed);
  if (issue.empty()) issue = checked(parsed, c);
  if (!issue.empty()) {
    loader_.problem_at(path, &node, issue);
    return;
  }
  value = parsed;
}

template <class T>
void ApplyVisitor::read_field(const char* name, std::vector<T>& value, const Constraint& c,
                              const char* doc) {
  const std::string path = prefix_ + name;
  const YAML::Node node = entry(name);
  if (!node.IsDefined()) return missing(name, doc);
  std::vector<T> parsed;
  if (!node.IsNull()) {
    if (!node.IsSequence()) {
      const char* example = std::is_same_v<T, std::string> ? "[a, b]" : "[64, 64]";
      loader_.problem_at(
          path, &node,
          std::string("must be a list such as ") + example + ", got " + describe(node));
      return;
    }
    for (size_t i = 0; i < node.size(); ++i) {
      T element{};
      const YAML::Node element_node = node[i];  // its own line, in a block list
      std::string issue = read(element_node, &element);
      if (issue.empty()) issue = checked(element, c);
      if (!issue.empty()) {
        loader_.problem_at(path + "[" + std::to_string(i) + "]", &element_node, issue);
        return;
      }
      parsed.push_back(element);
    }
  }
  value = std::move(parsed);
}

// A number, or unset: null, or one of the constraint's words for unset ("auto").
template <class T>
void ApplyVisitor::read_field(const char* name, std::optional<T>& value, const Constraint& c,
                              const char* doc) {
  const std::string path = prefix_ + name;
  const YAML::Node node = entry(name);
  if (!node.IsDefined()) return missing(name, doc);
  const auto& words = c.choices();
  if (node.IsNull() || (node.IsScalar() && is_plain(node) &&
                        std::find(words.begin(), words.end(), node.Scalar()) != words.end())) {
    value.reset();
    return;
  }
  T parsed = 0;
  std::string issue = read(node, &parsed);
  if (!issue.empty()) {
    issue += words.empty() ? "; or null for none"
                           : "; or " + detail::word_list(words, "or", true) + " for none";
  } else {
    issue = checked(parsed, c);
  }
  if (!issue.empty()) {
    loader_.problem_at(path, &node, issue);
    return;
  }
  value = parsed;
}

void ApplyVisitor::field(const char* name, ScalarMap& value, const Constraint&, const char* doc) {
  const std::string path = prefix_ + name;
  const YAML::Node node = entry(name);
  if (!node.IsDefined()) return missing(name, doc);
  ScalarMap parsed;
  if (!node.IsNull()) {
    if (!node.IsMap()) {
      loader_.problem_at(path, &node,
                         "must be a map of scalars such as {size: 3}, got " + describe(node));
      return;
    }
    for (const auto& e : node) {
      if (!e.first.IsScalar() || !e.second.IsScalar()) {
        loader_.problem_at(
            path, &node,
            "must be a map of scalars such as {size: 3}; an entry is " + describe(e.second));
        return;
      }
      parsed[e.first.Scalar()] = e.second.Scalar();
    }
  }
  value = std::move(parsed);
}

void ApplyVisitor::section(const char* name, Section& value, const char*) {
  const std::string path = prefix_ + name;
  const YAML::Node node = entry(name);
  if (node.IsDefined() && !node.IsNull() && !node.IsMap()) {
    const auto names = names_of(value);
    loader_.problem_at(
        path, &node,
        "must be a section (a map of keys such as " +
            word_list(std::vector<std::string>(names.begin(),
                                               names.begin() + std::min<size_t>(3, names.size())),
                      "and", false) +
            "), got " + describe(node));
    return;
  }
  loader_.apply(value, node, path + ".");
}

void ApplyVisitor::section_list(const char* name, SectionList& value, const char*) {
  const std::string path = prefix_ + name;
  const YAML::Node node = entry(name);
  if (!node.IsDefined()) return;
  value.clear();
  if (node.IsNull()) return;
  if (!node.IsSequence()) {
    loader_.problem_at(path, &node,
                       "must be a list of maps, each with a 'type', such as [{type: name}], got " +
                           describe(node));
    return;
  }
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string at = path + "[" + std::to_string(i) + "]";
    const YAML::Node element = node[i];
    if (!element.IsMap()) {
      loader_.problem_at(at, &element,
                         "must be a map such as {type: name}, got " + describe(element));
      continue;
    }
    loader_.apply(value.append(), element, at + ".");
  }
}

// Keys that tdrl 0.2 renamed to the names of the library options they set (the off-policy
// losses' loss_function, EGreedyModule's annealing_num_steps, RewardClipping's bounds, the
// task's own max_episode_steps), as paths relative to their section: a config or run folder
// written by tdrl 0.1 is refused with the new name, not a guess. Only the message uses it (no
// old key is accepted); it goes with release 0.3, as the manifest-less checkpoints do.
const std::map<std::string, std::string> kRenamedKeys = {
    {"loss_critic_type", "loss_function"},
    {"annealing_frames", "annealing_num_steps"},
    {"min", "clamp_min"},
    {"max", "clamp_max"},
    {"max_episode_steps", "options.max_episode_steps"}};

void ApplyVisitor::report_unknown(Section& section) {
  if (!map_.IsMap()) return;
  // Keys of another choice (an option of td3 given for ppo) get a hint of their own.
  auto* choice = dynamic_cast<ChoiceSection*>(&section);
  for (const auto& e : map_) {
    if (!e.first.IsScalar()) {
      loader_.problem("a key in '" + prefix_ + "' (" + loader_.origins().where(prefix_, &e.first) +
                      ") is " + describe(e.first) + "; keys are names such as 'gamma'");
      continue;
    }
    const std::string key = e.first.Scalar();
    if (read_.count(key)) continue;
    const std::string path = prefix_ + key;
    std::string text =
        "unknown key '" + path + "' (" + loader_.origins().where(path, &e.first) + ")";
    // A key renamed where it is known under the new name here (a config written before).
    const auto renamed = kRenamedKeys.find(key);
    if (renamed != kRenamedKeys.end()) {
      // A key of this section (a transform's are in no global list), or a path under it.
      const auto names = names_of(section);
      const auto& paths = loader_.all_paths();
      if (std::find(names.begin(), names.end(), renamed->second) != names.end() ||
          std::find(paths.begin(), paths.end(), prefix_ + renamed->second) != paths.end()) {
        loader_.problem(text + ": it is '" + prefix_ + renamed->second +
                        "' since the sections use the library options' own names (tdrl 0.2); "
                        "rename it");
        continue;
      }
    }
    if (choice) {
      std::vector<std::string> owners;
      for (const auto& other : choice->choices()) {
        auto probe = choice->make_empty();
        probe->choose(other);
        const auto names = names_of(*probe);
        if (std::find(names.begin(), names.end(), key) != names.end()) owners.push_back(other);
      }
      if (!owners.empty()) {
        const YAML::Node chosen = map_[choice->choice_key()];
        loader_.problem(text + ": it is an option of " + word_list(owners, "and", false) +
                        " only, and " + prefix_ + choice->choice_key() + " is " + chosen.Scalar() +
                        "; remove it");
        continue;
      }
    }
    // This section's own keys first (a transform's keys are in no global list).
    std::vector<std::string> candidates;
    for (const auto& n : names_of(section)) candidates.push_back(prefix_ + n);
    for (const auto& p : loader_.all_paths())
      if (std::find(candidates.begin(), candidates.end(), p) == candidates.end())
        candidates.push_back(p);
    const auto near = detail::closest(path, candidates, true);
    if (!near.empty()) {
      text += "; did you mean " + word_list(near, "or", true) + "?";
    } else {
      const auto names = names_of(section);
      const std::string here = prefix_.empty() ? std::string("the document")
                                               : "'" + prefix_.substr(0, prefix_.size() - 1) + "'";
      text +=
          "; the keys of " + here + " are " + word_list(names, "and", false) +
          " (docs/config.md lists every key, share/tdrl/docs/config.md where tdrl is installed; "
          "tdrl-train --config-reference prints it)";
    }
    loader_.problem(text);
  }
}

// Sets `parent[key] = value`, except that a map value merges into a map already there, key by
// key ("--set algo={gamma: 0.9}" keeps the file's algo.name); records each key's override.
void merge(YAML::Node& parent, const std::string& key, const YAML::Node& value,
           const std::string& path, const std::string& where, Origins& origins) {
  YAML::Node existing = parent[key];
  if (value.IsMap() && existing && existing.IsMap()) {
    for (const auto& e : value) {
      if (!e.first.IsScalar()) {
        existing[e.first] = e.second;
        continue;
      }
      merge(existing, e.first.Scalar(), e.second, path + "." + e.first.Scalar(), where, origins);
    }
    return;
  }
  parent[key] = value;
  origins.overrides[path] = where;
}

// Puts each override's value into the document at its path (creating sections), and records
// where it came from.
void apply_overrides(YAML::Node& root, const std::vector<std::string>& overrides, Origins& origins,
                     std::vector<std::string>& problems) {
  for (const auto& text : overrides) {
    const std::string where = "--set " + text;
    const size_t eq = text.find('=');
    std::string path = eq == std::string::npos ? "" : text.substr(0, eq);
    path.erase(0, path.find_first_not_of(" \t"));
    path.erase(path.find_last_not_of(" \t") + 1);
    if (path.empty() || path.front() == '.' || path.back() == '.' ||
        path.find("..") != std::string::npos) {
      problems.push_back("override '" + text +
                         "' must be path=value, e.g. --set algo.gamma=0.98 or --set "
                         "model.actor_cells=[256,256] (the value is YAML)");
      continue;
    }
    YAML::Node value;
    try {
      value = YAML::Load(text.substr(eq + 1));
    } catch (const YAML::Exception& e) {
      problems.push_back("the value of " + where + " is not valid YAML (" + e.msg +
                         "); quote it if it holds special characters: --set " + path +
                         "='\"...\"'");
      continue;
    }
    std::vector<std::string> parts;
    for (size_t begin = 0;;) {
      const size_t dot = path.find('.', begin);
      parts.push_back(path.substr(begin, dot - begin));
      if (dot == std::string::npos) break;
      begin = dot + 1;
    }
    if (!root.IsMap()) root = YAML::Node(YAML::NodeType::Map);
    YAML::Node cursor = root;
    std::string walked;
    bool ok = true;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      walked += (walked.empty() ? "" : ".") + parts[i];
      if (cursor[parts[i]] && !cursor[parts[i]].IsNull() && !cursor[parts[i]].IsMap()) {
        problems.push_back(where + ": '" + walked + "' is not a section (it holds " +
                           describe(cursor[parts[i]]) + ")");
        ok = false;
        break;
      }
      if (!cursor[parts[i]] || cursor[parts[i]].IsNull())
        cursor[parts[i]] = YAML::Node(YAML::NodeType::Map);
      YAML::Node next = cursor[parts[i]];
      cursor.reset(next);
    }
    if (!ok) continue;
    merge(cursor, parts.back(), value, path, where, origins);
  }
}

RunConfig load(YAML::Node root, const std::vector<std::string>& overrides,
               const std::string& source) {
  Origins origins;
  origins.source = source;
  std::vector<std::string> early;
  if (!root.IsNull() && root.IsDefined() && !root.IsMap()) {
    throw ConfigError("invalid config " + source +
                      ": the document must be a map of sections (env:, algo:, ...), got " +
                      describe(root));
  }
  apply_overrides(root, overrides, origins, early);
  Loader loader(origins);
  for (const auto& p : early) loader.problem(p);
  RunConfig config;
  // The algorithm and the env decide which keys exist: choose them first, so suggestions know
  // them.
  const YAML::Node& document = root;
  const YAML::Node algo = document.IsMap() ? document["algo"] : YAML::Node();
  if (algo && algo.IsMap() && algo["name"] && algo["name"].IsScalar())
    config.algo.choose(algo["name"].Scalar());
  const YAML::Node env = document.IsMap() ? document["env"] : YAML::Node();
  if (env && env.IsMap() && env["name"] && env["name"].IsScalar())
    config.env.choose(env["name"].Scalar());
  PathCollector all("");
  config.fields(all);
  loader.set_all_paths(all.paths);
  loader.apply(config, root, "");
  if (config.eval.video && !videos_available())
    loader.problem("'eval.video' is true, but " + videos_unavailable_reason() +
                   "; or set eval.video: false");
  loader.finish();
  return config;
}

// ---- sections into YAML ---------------------------------------------------------------------

using detail::text_of;

class EmitVisitor : public FieldVisitor {
 public:
  explicit EmitVisitor(YAML::Emitter& out) : out_(out) {}

  void field(const char* name, bool& v, const Constraint&, const char* doc) override {
    scalar(name, text_of(v), doc);
  }
  void field(const char* name, int64_t& v, const Constraint&, const char* doc) override {
    scalar(name, text_of(v), doc);
  }
  void field(const char* name, double& v, const Constraint&, const char* doc) override {
    scalar(name, text_of(v), doc);
  }
  void field(const char* name, std::optional<double>& v, const Constraint& c,
             const char* doc) override {
    optional(name, v, c, doc);
  }
  void field(const char* name, std::optional<int64_t>& v, const Constraint& c,
             const char* doc) override {
    optional(name, v, c, doc);
  }
  void field(const char* name, std::string& v, const Constraint&, const char* doc) override {
    out_ << YAML::Key << name << YAML::Value;
    string_value(v);
    out_ << YAML::Comment(doc);
  }
  void field(const char* name, std::vector<int64_t>& v, const Constraint&,
             const char* doc) override {
    list(name, v, doc);
  }
  void field(const char* name, std::vector<double>& v, const Constraint&,
             const char* doc) override {
    list(name, v, doc);
  }
  void field(const char* name, std::vector<std::string>& v, const Constraint&,
             const char* doc) override {
    out_ << YAML::Key << name << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const auto& e : v) string_value(e);
    out_ << YAML::EndSeq << YAML::Comment(doc);
  }
  void field(const char* name, ScalarMap& v, const Constraint&, const char*) override {
    out_ << YAML::Key << name << YAML::Value << YAML::BeginMap;
    for (const auto& [key, value] : v) {
      out_ << YAML::Key << key << YAML::Value;
      string_value(value);
    }
    out_ << YAML::EndMap;
  }
  void section(const char* name, Section& value, const char*) override {
    out_ << YAML::Key << name << YAML::Value << YAML::BeginMap;
    value.fields(*this);
    out_ << YAML::EndMap;
  }
  void section_list(const char* name, SectionList& value, const char*) override {
    out_ << YAML::Key << name << YAML::Value << YAML::BeginSeq;
    for (size_t i = 0; i < value.size(); ++i) {
      out_ << YAML::BeginMap;
      value.at(i).fields(*this);
      out_ << YAML::EndMap;
    }
    out_ << YAML::EndSeq;
  }

 private:
  // Plain where it reads back as the same string field; quoted when empty or read as null.
  void string_value(const std::string& v) {
    if (v.empty() || v == "~" || v == "null" || v == "Null" || v == "NULL")
      out_ << YAML::DoubleQuoted;
    out_ << v;
  }
  void scalar(const char* name, const std::string& text, const char* doc) {
    out_ << YAML::Key << name << YAML::Value << text << YAML::Comment(doc);
  }
  // The number, else the constraint's word for unset, else YAML's null.
  template <class T>
  void optional(const char* name, const std::optional<T>& v, const Constraint& c, const char* doc) {
    if (v || !c.choices().empty()) return scalar(name, v ? text_of(*v) : c.choices().front(), doc);
    out_ << YAML::Key << name << YAML::Value << YAML::Null << YAML::Comment(doc);
  }
  template <class T>
  void list(const char* name, const std::vector<T>& v, const char* doc) {
    out_ << YAML::Key << name << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const auto& e : v) out_ << text_of(e);
    out_ << YAML::EndSeq << YAML::Comment(doc);
  }
  YAML::Emitter& out_;
};

}  // namespace

namespace {

// The text of the config file `path`; ConfigError when it cannot be read.
std::string config_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw ConfigError("load_config: cannot read '" + path +
                      "'; check the path (it is relative to the working directory)");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The YAML document of a config; ConfigError naming the line for invalid YAML.
YAML::Node parse_config(const std::string& yaml, const std::string& source) {
  try {
    return YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    throw ConfigError("invalid config " + source + ": invalid YAML at line " +
                      std::to_string(e.mark.line + 1) + ", column " +
                      std::to_string(e.mark.column + 1) + ": " + e.msg +
                      "; check the indentation and quoting there");
  }
}

// The top-level `plugins:` alone, declared as RunConfig declares it: what must load before the
// rest of a config can be read (its algorithms and envs may come from the plugins).
struct PluginsSection : Section {
  std::vector<std::string> plugins;
  void fields(FieldVisitor& v) override { RunConfig::declare_plugins(v, plugins); }
};

}  // namespace

RunConfig load_config(const std::string& path, const std::vector<std::string>& overrides) {
  return load_config_string(config_text(path), overrides, path);
}

RunConfig load_config_string(const std::string& yaml, const std::vector<std::string>& overrides,
                             const std::string& source) {
  return load(parse_config(yaml, source), overrides, source);
}

std::vector<ListedPlugin> plugins_of(const std::string& path) {
  const YAML::Node root = parse_config(config_text(path), path);
  // Read with the config reader's own visitor and messages; the other keys are not judged here.
  Loader loader(Origins{path, {}});
  PluginsSection section;
  ApplyVisitor visitor(loader, root, "");
  section.fields(visitor);
  loader.finish();
  // Each path with its line, for the messages about a plugin that cannot load.
  std::vector<ListedPlugin> out;
  const YAML::Node list = root.IsMap() ? root["plugins"] : YAML::Node();
  for (size_t i = 0; i < section.plugins.size(); ++i)
    out.push_back({section.plugins[i], static_cast<int64_t>(list[i].Mark().line) + 1});
  return out;
}

std::string to_yaml(const RunConfig& config) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  EmitVisitor emit(out);
  // The visitor interface is the same for reading and writing; emitting only reads.
  const_cast<RunConfig&>(config).fields(emit);
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

std::vector<std::string> detail::changed_keys(Section& a, Section& b, const std::string& prefix) {
  ValueTexts texts_a(prefix), texts_b(prefix);
  a.fields(texts_a);
  b.fields(texts_b);
  std::vector<std::string> out;
  for (const auto& [path, text] : texts_a.texts) {
    const auto other = texts_b.texts.find(path);
    if (other == texts_b.texts.end() || other->second != text) out.push_back(path);
  }
  return out;
}

}  // namespace tdrl::apps
