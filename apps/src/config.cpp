// The config engine: loading, validation against a Schema, overrides, typed reads, printing.

#include <tdrl/apps/config.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>

namespace tdrl::apps {

std::string to_string(ValueKind kind) {
  switch (kind) {
    case ValueKind::kBool:
      return "bool";
    case ValueKind::kInt:
      return "int";
    case ValueKind::kFloat:
      return "float";
    case ValueKind::kString:
      return "string";
    case ValueKind::kIntList:
      return "list of int";
    case ValueKind::kFloatList:
      return "list of float";
    case ValueKind::kStringList:
      return "list of string";
    case ValueKind::kMap:
      return "map";
    case ValueKind::kMapList:
      return "list of maps";
  }
  return "unknown kind";
}

namespace {

// ---- scalars ----------------------------------------------------------------------------------

// yaml-cpp tags plain scalars "?" and quoted ones "!": a quoted "0.5" is a string.
bool is_plain(const YAML::Node& node) { return node.Tag() == "?"; }

bool parse_bool(const std::string& text, bool* out) {
  if (text == "true" || text == "True" || text == "TRUE") {
    *out = true;
    return true;
  }
  if (text == "false" || text == "False" || text == "FALSE") {
    *out = false;
    return true;
  }
  return false;
}

bool all_digits(const std::string& text, size_t begin, size_t end) {
  if (begin >= end) return false;
  for (size_t i = begin; i < end; ++i)
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return false;
  return true;
}

// A decimal integer with an optional sign, in range.
bool parse_int(const std::string& text, int64_t* out) {
  const size_t begin = (!text.empty() && (text[0] == '+' || text[0] == '-')) ? 1 : 0;
  if (!all_digits(text, begin, text.size())) return false;
  errno = 0;
  const long long value = std::strtoll(text.c_str(), nullptr, 10);
  if (errno == ERANGE) return false;
  *out = static_cast<int64_t>(value);
  return true;
}

// A finite decimal number: [+-](digits[.digits] | .digits)[(e|E)[+-]digits].
bool parse_float(const std::string& text, double* out) {
  size_t i = (!text.empty() && (text[0] == '+' || text[0] == '-')) ? 1 : 0;
  size_t digits = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i, ++digits;
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i, ++digits;
  }
  if (digits == 0) return false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    const size_t exponent = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    if (i == exponent) return false;
  }
  if (i != text.size()) return false;
  const double value = std::strtod(text.c_str(), nullptr);
  if (!std::isfinite(value)) return false;
  *out = value;
  return true;
}

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

// ---- suggestions ------------------------------------------------------------------------------

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::string leaf(const std::string& path) {
  const size_t dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

// Distance of a wrong key path to a known one: the edit distance of the paths, or of the last
// parts plus 2 (a right name in the wrong section: "optim.gamma" for "algo.gamma").
size_t path_distance(const std::string& wrong, const std::string& known) {
  return std::min(edit_distance(wrong, known), edit_distance(leaf(wrong), leaf(known)) + 2);
}

constexpr size_t kCloseDistance = 3;
constexpr size_t kMaxSuggestions = 3;

// The candidates by distance (closest first, ties in the given order), at most kMaxSuggestions:
// those at the smallest distance when it is within kCloseDistance, else (when `fallback`) the
// closest ones whatever their distance.
std::vector<std::string> closest(const std::string& wanted, const std::vector<std::string>& all,
                                 bool is_path, bool fallback) {
  std::vector<std::pair<size_t, size_t>> ranked;  // (distance, index)
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i] == wanted) continue;
    ranked.emplace_back(is_path ? path_distance(wanted, all[i]) : edit_distance(wanted, all[i]), i);
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (const auto& r : ranked) {
    if (out.size() == kMaxSuggestions) break;
    if (!fallback && (r.first > kCloseDistance || r.first > ranked.front().first)) break;
    out.push_back(all[r.second]);
  }
  return out;
}

// "a", "a or b", "a, b or c" (with `last` for "or"/"and"); each item quoted when `quote`.
std::string join(const std::vector<std::string>& items, const std::string& last, bool quote) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += (i + 1 == items.size()) ? " " + last + " " : ", ";
    out += quote ? "'" + items[i] + "'" : items[i];
  }
  return out;
}

bool contains(const std::vector<std::string>& items, const std::string& item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

// ---- validation of one value -------------------------------------------------------------------

bool is_list(ValueKind kind) {
  return kind == ValueKind::kIntList || kind == ValueKind::kFloatList ||
         kind == ValueKind::kStringList;
}

ValueKind element_kind(ValueKind kind) {
  switch (kind) {
    case ValueKind::kIntList:
      return ValueKind::kInt;
    case ValueKind::kFloatList:
      return ValueKind::kFloat;
    default:
      return ValueKind::kString;
  }
}

// "a float", "an int", ...
std::string with_article(ValueKind kind) {
  return (kind == ValueKind::kInt ? "an " : "a ") + to_string(kind);
}

// An example of a value of `spec`: its default when it shows something, else a generic one.
std::string example(const KeySpec& spec) {
  if (!spec.required && !spec.default_yaml.empty() && spec.default_yaml != "[]" &&
      spec.default_yaml != "{}" && spec.default_yaml != "\"\"")
    return spec.default_yaml;
  switch (spec.kind) {
    case ValueKind::kBool:
      return "true";
    case ValueKind::kInt:
      return "1000";
    case ValueKind::kFloat:
      return "0.5";
    case ValueKind::kString:
      return spec.choices.empty() ? "text" : spec.choices.front();
    case ValueKind::kIntList:
      return "[64, 64]";
    case ValueKind::kFloatList:
      return "[0.5, 1.0]";
    case ValueKind::kStringList:
      return "[a, b]";
    case ValueKind::kMap:
      return "{key: value}";
    case ValueKind::kMapList:
      return "[{type: name}]";
  }
  return "";
}

// What is wrong with `scalar` as a value of `kind` (kBool, kInt, kFloat, kString), or "".
std::string check_scalar(ValueKind kind, const std::vector<std::string>& choices,
                         const YAML::Node& scalar) {
  if (!scalar.IsScalar()) return "got " + describe(scalar);
  const std::string& text = scalar.Scalar();
  const bool plain = is_plain(scalar);
  switch (kind) {
    case ValueKind::kBool: {
      bool b = false;
      if (plain && parse_bool(text, &b)) return "";
      return "got " + describe(scalar) + "; write true or false" + (plain ? "" : " without quotes");
    }
    case ValueKind::kInt: {
      int64_t i = 0;
      if (plain && parse_int(text, &i)) return "";
      double d = 0;
      if (plain && parse_float(text, &d) && d == std::floor(d) && std::fabs(d) < 9.0e15) {
        std::ostringstream whole;
        whole << static_cast<int64_t>(d);
        return "got " + describe(scalar) + "; write " + whole.str();
      }
      if (plain && !text.empty() &&
          all_digits(text, (text[0] == '-' || text[0] == '+') ? 1 : 0, text.size()))
        return "got " + describe(scalar) + ", out of the 64-bit range";
      return "got " + describe(scalar) + "; write a whole number" +
             (plain ? "" : " without quotes");
    }
    case ValueKind::kFloat: {
      double d = 0;
      if (plain && parse_float(text, &d)) return "";
      return "got " + describe(scalar) + "; write a finite number such as 0.5 or 1e-4" +
             (plain ? "" : " without quotes");
    }
    default:
      break;
  }
  if (choices.empty() || contains(choices, text)) return "";
  std::string out = "got '" + text + "'; the choices are " + join(choices, "and", false);
  const auto near = closest(text, choices, false, false);
  if (!near.empty()) out += "; did you mean '" + near.front() + "'?";
  return out;
}

// What is wrong with `value` as a value of `spec` (a full "must be ..., got ..." phrase), or "".
std::string check_value(const KeySpec& spec, const YAML::Node& value) {
  const ValueKind kind = spec.kind;
  if (kind == ValueKind::kBool || kind == ValueKind::kInt || kind == ValueKind::kFloat ||
      kind == ValueKind::kString) {
    const std::string issue = check_scalar(kind, spec.choices, value);
    if (issue.empty()) return "";
    if (kind == ValueKind::kString && !spec.choices.empty() && value.IsScalar())
      return "must be one of the choices, " + issue;
    if (!value.IsScalar())
      return "must be " + with_article(kind) + ", " + issue + "; write for example " +
             example(spec);
    return "must be " + with_article(kind) + ", " + issue;
  }
  if (value.IsNull()) return "";  // an empty list or map
  if (is_list(kind)) {
    const std::string must = "must be a " + to_string(kind) + " such as " + example(spec);
    if (!value.IsSequence()) return must + ", got " + describe(value);
    size_t index = 0;
    for (const auto& element : value) {
      const std::string issue = check_scalar(element_kind(kind), spec.choices, element);
      if (!issue.empty()) return must + "; element " + std::to_string(index) + ": " + issue;
      ++index;
    }
    return "";
  }
  if (kind == ValueKind::kMap) {
    const std::string must = "must be a map of scalars such as {size: 3, mode: fast}";
    if (!value.IsMap()) return must + ", got " + describe(value);
    for (const auto& entry : value) {
      if (!entry.first.IsScalar()) return must + ", got a key that is " + describe(entry.first);
      if (!entry.second.IsScalar())
        return must + "; the value of '" + entry.first.Scalar() + "' is " + describe(entry.second);
    }
    return "";
  }
  // kMapList
  const std::string must = "must be a list of maps, each with a 'type', such as [{type: name}]";
  if (!value.IsSequence()) return must + ", got " + describe(value);
  size_t index = 0;
  for (const auto& element : value) {
    const std::string at = "; element " + std::to_string(index);
    if (!element.IsMap()) return must + at + " is " + describe(element);
    const YAML::Node type = element["type"];
    if (!type) {
      std::vector<std::string> keys;
      for (const auto& entry : element)
        if (entry.first.IsScalar()) keys.push_back(entry.first.Scalar());
      return must + at + " has no 'type' (its keys: " + join(keys, "and", true) +
             "); add type: <name> to it";
    }
    if (!type.IsScalar()) return must + at + " has a 'type' that is " + describe(type);
    ++index;
  }
  return "";
}

// A fresh node for a validated value: an empty list or map for null.
YAML::Node normalized(const KeySpec& spec, const YAML::Node& value) {
  if (value.IsNull()) {
    if (spec.kind == ValueKind::kMap) return YAML::Node(YAML::NodeType::Map);
    return YAML::Node(YAML::NodeType::Sequence);
  }
  return YAML::Clone(value);
}

// ---- loading ----------------------------------------------------------------------------------

// Where a value came from: the file (rank 0, with a line) or the rank-th override.
struct Origin {
  int rank = 0;
  std::string override_text;  // "--set a.b=c" for overrides
};

struct Given {
  YAML::Node value;
  std::string where;  // "cfg.yaml line 12" or "--set a.b=c"
  int rank = 0;
  int line = 0;
};

struct Problem {
  int rank = 0;
  int line = 0;
  std::string text;
};

struct Unknown {
  std::string path;
  std::string where;
  int rank = 0;
  int line = 0;
};

// Gathers the given values of a file and overrides, then validates them together.
class Loader {
 public:
  Loader(const Schema& schema, std::string source) : schema_(schema), source_(std::move(source)) {}

  void add_document(const YAML::Node& root) {
    const Origin file;
    if (root.IsNull()) return;
    if (!root.IsMap()) {
      add_problem(
          file, 1,
          "the document must be a map of sections (env:, algo:, ...), got " + describe(root));
      return;
    }
    walk(root, "", file);
  }

  void add_override(const std::string& text, int rank) {
    Origin origin;
    origin.rank = rank;
    origin.override_text = "--set " + text;
    const size_t eq = text.find('=');
    std::string path = eq == std::string::npos ? "" : trim(text.substr(0, eq));
    if (path.empty()) {
      add_problem(origin, 0,
                  "override '" + text +
                      "' must be path=value, e.g. --set algo.gamma=0.98 or --set "
                      "model.actor_cells=[256,256] (the value is YAML)");
      return;
    }
    YAML::Node value;
    try {
      value = YAML::Load(text.substr(eq + 1));
    } catch (const YAML::Exception& e) {
      add_problem(origin, 0,
                  "the value of " + origin.override_text + " is not valid YAML (" + e.msg +
                      "); quote it if it holds special characters: --set " + path + "='\"...\"'");
      return;
    }
    enter(path, 0, value, origin);
  }

  // Validates everything gathered; fills `values` and `given` or throws one ConfigError.
  void finish(std::map<std::string, YAML::Node>* values, std::set<std::string>* given) {
    resolve_algo();
    for (const auto& entry : given_) {
      const KeySpec& spec = *schema_.find(entry.first);
      const Given& g = entry.second;
      if (!valid_for_algo(spec)) {
        std::string text = "'" + spec.path + "' (" + g.where + ") is only an option of " +
                           join(spec.algos, "and", false) + "; algo.name is " + algo_ +
                           "; remove it";
        if (spec.algos.size() == 1) text += " or set algo.name: " + spec.algos.front();
        const auto near = closest(spec.path, valid_paths(), true, false);
        if (!near.empty()) text += "; did you mean " + join(near, "or", true) + "?";
        problems_.push_back({g.rank, g.line, text});
        continue;
      }
      const std::string issue = check_value(spec, g.value);
      if (!issue.empty())
        problems_.push_back({g.rank, g.line, "'" + spec.path + "' (" + g.where + ") " + issue});
    }
    for (const Unknown& u : unknowns_) problems_.push_back({u.rank, u.line, unknown_text(u)});
    std::stable_sort(problems_.begin(), problems_.end(), [](const Problem& a, const Problem& b) {
      return a.rank != b.rank ? a.rank < b.rank : a.line < b.line;
    });
    for (const KeySpec& spec : schema_.keys()) {
      if (!spec.required || given_.count(spec.path) || !valid_for_algo(spec)) continue;
      problems_.push_back({INT_MAX, 0,
                           "missing required key '" + spec.path + "' (" + spec.doc +
                               "); add it to " + source_ + " or pass --set " + spec.path +
                               "=<value>"});
    }
    if (!problems_.empty()) {
      std::string message = "invalid config " + source_ + " (" + std::to_string(problems_.size()) +
                            (problems_.size() == 1 ? " problem):" : " problems):");
      for (const Problem& p : problems_) message += "\n  - " + p.text;
      throw ConfigError(message);
    }
    for (const KeySpec& spec : schema_.keys()) {
      if (!valid_for_algo(spec)) continue;
      const auto it = given_.find(spec.path);
      if (it != given_.end()) {
        (*values)[spec.path] = normalized(spec, it->second.value);
        given->insert(spec.path);
      } else {
        (*values)[spec.path] = normalized(spec, YAML::Load(spec.default_yaml));
      }
    }
  }

 private:
  static std::string trim(const std::string& text) {
    const size_t begin = text.find_first_not_of(" \t");
    if (begin == std::string::npos) return "";
    return text.substr(begin, text.find_last_not_of(" \t") - begin + 1);
  }

  std::string where(const Origin& origin, int line) const {
    if (origin.rank > 0) return origin.override_text;
    return source_ + " line " + std::to_string(line);
  }

  void add_problem(const Origin& origin, int line, const std::string& text) {
    problems_.push_back({origin.rank, line, text});
  }

  void walk(const YAML::Node& map, const std::string& prefix, const Origin& origin) {
    for (const auto& entry : map) {
      const int line = entry.first.Mark().line + 1;
      if (!entry.first.IsScalar()) {
        add_problem(origin, line,
                    "a key in " +
                        (prefix.empty() ? std::string("the document") : "'" + prefix + "'") + " (" +
                        where(origin, line) + ") is " + describe(entry.first) +
                        "; keys are names such as 'gamma'");
        continue;
      }
      const std::string name = entry.first.Scalar();
      enter(prefix.empty() ? name : prefix + "." + name, line, entry.second, origin);
    }
  }

  void enter(const std::string& path, int line, const YAML::Node& value, const Origin& origin) {
    const std::string at = where(origin, line);
    if (schema_.find(path)) {
      const auto previous = given_.find(path);
      if (previous != given_.end() && previous->second.rank == origin.rank && origin.rank == 0)
        add_problem(origin, line,
                    "'" + path + "' is given twice (" + previous->second.where + " and line " +
                        std::to_string(line) + "); keep one");
      given_[path] = Given{value, at, origin.rank, line};
      return;
    }
    if (schema_.is_section(path)) {
      if (value.IsMap()) {
        walk(value, path, origin);
      } else if (!value.IsNull()) {
        std::vector<std::string> keys;
        for (const KeySpec& spec : schema_.keys())
          if (spec.path.compare(0, path.size() + 1, path + ".") == 0 && keys.size() < 3)
            keys.push_back(spec.path.substr(path.size() + 1));
        add_problem(origin, line,
                    "'" + path + "' (" + at + ") must be a section (a map of keys such as " +
                        join(keys, "and", false) + "), got " + describe(value));
      }
      return;
    }
    unknowns_.push_back({path, at, origin.rank, line});
  }

  // algo.name as given (or its default) when it is one of its choices; else no algo checks.
  void resolve_algo() {
    const KeySpec* spec = schema_.find("algo.name");
    if (!spec) return;
    YAML::Node value;
    const auto it = given_.find("algo.name");
    if (it != given_.end()) {
      value = it->second.value;
    } else if (!spec->required) {
      value = YAML::Load(spec->default_yaml);
    }
    if (!value.IsScalar()) return;
    if (!spec->choices.empty() && !contains(spec->choices, value.Scalar())) return;
    algo_ = value.Scalar();
    algo_known_ = true;
  }

  bool valid_for_algo(const KeySpec& spec) const {
    return spec.algos.empty() || !algo_known_ || contains(spec.algos, algo_);
  }

  std::vector<std::string> valid_paths() const {
    std::vector<std::string> out;
    for (const KeySpec& spec : schema_.keys())
      if (valid_for_algo(spec)) out.push_back(spec.path);
    return out;
  }

  std::string unknown_text(const Unknown& u) const {
    std::vector<std::string> all;
    for (const KeySpec& spec : schema_.keys()) all.push_back(spec.path);
    std::string text = "unknown key '" + u.path + "' (" + u.where + ")";
    const auto near = closest(u.path, all, true, false);
    if (near.empty()) {
      const auto fallback = closest(u.path, all, true, true);
      return text + "; the closest known keys are " + join(fallback, "and", true) +
             " (docs/config.md lists every key)";
    }
    std::vector<std::string> shown;
    for (const std::string& path : near) {
      const KeySpec& spec = *schema_.find(path);
      shown.push_back("'" + path + "'" +
                      (valid_for_algo(spec)
                           ? ""
                           : " (an option of " + join(spec.algos, "and", false) + " only)"));
    }
    return text + "; did you mean " + join(shown, "or", false) + "?";
  }

  const Schema& schema_;
  std::string source_;
  std::map<std::string, Given> given_;
  std::vector<Unknown> unknowns_;
  std::vector<Problem> problems_;
  std::string algo_;
  bool algo_known_ = false;
};

// ---- printing ---------------------------------------------------------------------------------

// Emits `node` keeping quoted scalars quoted (yaml-cpp would print "true" as true).
void emit_node(YAML::Emitter& out, const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      if (is_plain(node)) {
        out << node.Scalar();
      } else {
        out << YAML::DoubleQuoted << node.Scalar();
      }
      return;
    case YAML::NodeType::Sequence:
      if (node.Style() == YAML::EmitterStyle::Flow) out << YAML::Flow;
      out << YAML::BeginSeq;
      for (const auto& element : node) emit_node(out, element);
      out << YAML::EndSeq;
      return;
    case YAML::NodeType::Map:
      if (node.Style() == YAML::EmitterStyle::Flow) out << YAML::Flow;
      out << YAML::BeginMap;
      for (const auto& entry : node) {
        out << YAML::Key;
        emit_node(out, entry.first);
        out << YAML::Value;
        emit_node(out, entry.second);
      }
      out << YAML::EndMap;
      return;
    default:
      out << YAML::Null;
  }
}

// The key paths as a tree, children in the order they first appear.
struct Tree {
  std::vector<std::pair<std::string, Tree>> children;
  const KeySpec* spec = nullptr;

  Tree& child(const std::string& name) {
    for (auto& c : children)
      if (c.first == name) return c.second;
    children.emplace_back(name, Tree());
    return children.back().second;
  }
};

void emit_tree(YAML::Emitter& out, const Tree& tree,
               const std::map<std::string, YAML::Node>& values) {
  out << YAML::BeginMap;
  for (const auto& c : tree.children) {
    out << YAML::Key << c.first << YAML::Value;
    if (!c.second.spec) {
      emit_tree(out, c.second, values);
      continue;
    }
    const KeySpec& spec = *c.second.spec;
    const YAML::Node& value = values.at(spec.path);
    if (is_list(spec.kind)) {
      out << YAML::Flow << YAML::BeginSeq;
      for (const auto& element : value) emit_node(out, element);
      out << YAML::EndSeq;
    } else {
      emit_node(out, value);
    }
    if (spec.kind != ValueKind::kMap && spec.kind != ValueKind::kMapList && !spec.doc.empty())
      out << YAML::Comment(spec.doc);
  }
  out << YAML::EndMap;
}

}  // namespace

// ---- Schema -----------------------------------------------------------------------------------

Schema::Schema(std::vector<KeySpec> keys) : keys_(std::move(keys)) {
  for (size_t i = 0; i < keys_.size(); ++i) {
    const KeySpec& spec = keys_[i];
    const std::string& path = spec.path;
    if (path.empty() || path.front() == '.' || path.back() == '.' ||
        path.find("..") != std::string::npos)
      throw std::logic_error("Schema: key path '" + path + "' is empty or has an empty part");
    if (!index_.emplace(path, i).second)
      throw std::logic_error("Schema: key '" + path + "' is listed twice; keep one");
  }
  for (const KeySpec& spec : keys_) {
    for (size_t dot = spec.path.find('.'); dot != std::string::npos;
         dot = spec.path.find('.', dot + 1))
      if (index_.count(spec.path.substr(0, dot)))
        throw std::logic_error("Schema: '" + spec.path.substr(0, dot) +
                               "' is both a key and the section of '" + spec.path + "'");
    if (spec.required) continue;
    YAML::Node value;
    try {
      value = YAML::Load(spec.default_yaml);
    } catch (const YAML::Exception& e) {
      throw std::logic_error("Schema: the default of '" + spec.path + "' (" + spec.default_yaml +
                             ") is not valid YAML: " + e.msg);
    }
    const std::string issue = check_value(spec, value);
    if (!issue.empty())
      throw std::logic_error("Schema: the default of '" + spec.path + "' (" + spec.default_yaml +
                             ") " + issue);
  }
}

const KeySpec* Schema::find(const std::string& path) const {
  const auto it = index_.find(path);
  return it == index_.end() ? nullptr : &keys_[it->second];
}

bool Schema::is_section(const std::string& path) const {
  const std::string prefix = path + ".";
  const auto it = index_.lower_bound(prefix);
  return it != index_.end() && it->first.compare(0, prefix.size(), prefix) == 0;
}

// ---- Config -----------------------------------------------------------------------------------

Config Config::load_file(const std::string& path, const std::vector<std::string>& overrides,
                         const Schema& schema) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw ConfigError("Config::load_file: cannot read '" + path +
                      "'; check the path (it is relative to the working directory)");
  std::ostringstream text;
  text << in.rdbuf();
  return load_string(text.str(), overrides, schema, path);
}

Config Config::load_string(const std::string& yaml, const std::vector<std::string>& overrides,
                           const Schema& schema, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    throw ConfigError("invalid config " + source + ": invalid YAML at line " +
                      std::to_string(e.mark.line + 1) + ", column " +
                      std::to_string(e.mark.column + 1) + ": " + e.msg +
                      "; check the indentation and quoting there");
  }
  Loader loader(schema, source);
  loader.add_document(root);
  for (size_t i = 0; i < overrides.size(); ++i)
    loader.add_override(overrides[i], static_cast<int>(i) + 1);
  Config config;
  config.schema_ = &schema;
  loader.finish(&config.values_, &config.given_);
  return config;
}

const YAML::Node& Config::lookup(const std::string& path, ValueKind kind,
                                 const char* getter) const {
  const std::string call = std::string("Config::") + getter + "('" + path + "')";
  const KeySpec* spec = schema_ ? schema_->find(path) : nullptr;
  if (!spec) {
    std::vector<std::string> all;
    if (schema_)
      for (const KeySpec& s : schema_->keys()) all.push_back(s.path);
    const auto near = closest(path, all, true, false);
    throw ConfigError(call + ": '" + path + "' is not a key of the schema" +
                      (near.empty() ? "" : "; did you mean " + join(near, "or", true) + "?"));
  }
  const auto it = values_.find(path);
  if (it == values_.end()) {
    const auto algo = values_.find("algo.name");
    throw ConfigError(call + ": the key is absent from this config: it is only an option of " +
                      join(spec->algos, "and", false) + " and algo.name is " +
                      (algo == values_.end() ? std::string("not set") : algo->second.Scalar()) +
                      "; check contains('" + path + "') or algo.name first");
  }
  if (spec->kind != kind)
    throw ConfigError(call + ": the key is " + with_article(spec->kind) + ", not " +
                      with_article(kind) + "; read it with the getter of its kind");
  return it->second;
}

bool Config::get_bool(const std::string& path) const {
  bool out = false;
  parse_bool(lookup(path, ValueKind::kBool, "get_bool").Scalar(), &out);
  return out;
}

int64_t Config::get_int(const std::string& path) const {
  int64_t out = 0;
  parse_int(lookup(path, ValueKind::kInt, "get_int").Scalar(), &out);
  return out;
}

double Config::get_float(const std::string& path) const {
  double out = 0;
  parse_float(lookup(path, ValueKind::kFloat, "get_float").Scalar(), &out);
  return out;
}

std::string Config::get_string(const std::string& path) const {
  return lookup(path, ValueKind::kString, "get_string").Scalar();
}

std::vector<int64_t> Config::get_int_list(const std::string& path) const {
  std::vector<int64_t> out;
  for (const auto& element : lookup(path, ValueKind::kIntList, "get_int_list")) {
    int64_t value = 0;
    parse_int(element.Scalar(), &value);
    out.push_back(value);
  }
  return out;
}

std::vector<double> Config::get_float_list(const std::string& path) const {
  std::vector<double> out;
  for (const auto& element : lookup(path, ValueKind::kFloatList, "get_float_list")) {
    double value = 0;
    parse_float(element.Scalar(), &value);
    out.push_back(value);
  }
  return out;
}

std::vector<std::string> Config::get_string_list(const std::string& path) const {
  std::vector<std::string> out;
  for (const auto& element : lookup(path, ValueKind::kStringList, "get_string_list"))
    out.push_back(element.Scalar());
  return out;
}

YAML::Node Config::get_map(const std::string& path) const {
  return YAML::Clone(lookup(path, ValueKind::kMap, "get_map"));
}

std::vector<YAML::Node> Config::get_map_list(const std::string& path) const {
  std::vector<YAML::Node> out;
  for (const auto& element : lookup(path, ValueKind::kMapList, "get_map_list"))
    out.push_back(YAML::Clone(element));
  return out;
}

bool Config::is_set(const std::string& path) const {
  if (!schema_ || !schema_->find(path))
    throw ConfigError("Config::is_set('" + path + "'): '" + path +
                      "' is not a key of the schema; check the spelling (docs/config.md)");
  return given_.count(path) > 0;
}

std::string Config::to_yaml() const {
  Tree tree;
  if (schema_) {
    for (const KeySpec& spec : schema_->keys()) {
      if (!values_.count(spec.path)) continue;
      Tree* node = &tree;
      size_t begin = 0;
      for (size_t dot = spec.path.find('.'); dot != std::string::npos;
           dot = spec.path.find('.', begin)) {
        node = &node->child(spec.path.substr(begin, dot - begin));
        begin = dot + 1;
      }
      node->child(spec.path.substr(begin)).spec = &spec;
    }
  }
  YAML::Emitter out;
  emit_tree(out, tree, values_);
  return std::string(out.c_str()) + "\n";
}

}  // namespace tdrl::apps
