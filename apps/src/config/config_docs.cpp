// docs/config.md from the sections' declarations: one table per section, per registered
// algorithm and per registered transform.

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <tdrl/apps/config.h>
#include <tdrl/apps/registry.h>
#include <tdrl/envs/registry.h>

#include "config/config_text.h"

namespace tdrl::apps {

namespace {

using detail::text_of;

std::string escape_cell(std::string text) {
  for (size_t i = 0; (i = text.find('|', i)) != std::string::npos; i += 2)
    text.replace(i, 1, "\\|");
  return text;
}

class DocsVisitor : public FieldVisitor {
 public:
  DocsVisitor(std::string prefix, std::ostringstream& rows,
              std::vector<std::pair<std::string, Section*>>* nested)
      : prefix_(std::move(prefix)), rows_(rows), nested_(nested) {}

  void field(const char* name, bool& v, const Constraint& c, const char* doc) override {
    row(name, "bool", text_of(v), c, doc);
  }
  void field(const char* name, int64_t& v, const Constraint& c, const char* doc) override {
    row(name, "int", is_required() ? "" : text_of(v), c, doc);
  }
  void field(const char* name, double& v, const Constraint& c, const char* doc) override {
    row(name, "float", text_of(v), c, doc);
  }
  void field(const char* name, std::optional<double>& v, const Constraint& c,
             const char* doc) override {
    row_described(name, "float or none", v ? text_of(*v) : detail::unset_word(c),
                  detail::describe_optional(c), doc);
  }
  void field(const char* name, std::optional<int64_t>& v, const Constraint& c,
             const char* doc) override {
    row_described(name, "int or none", v ? text_of(*v) : detail::unset_word(c),
                  detail::describe_optional(c), doc);
  }
  void field(const char* name, std::string& v, const Constraint& c, const char* doc) override {
    row(name, "string", is_required() ? "" : "\"" + v + "\"", c, doc);
  }
  void field(const char* name, std::vector<int64_t>& v, const Constraint& c,
             const char* doc) override {
    row(name, "list of int", list_text(v), c, doc);
  }
  void field(const char* name, std::vector<double>& v, const Constraint& c,
             const char* doc) override {
    row(name, "list of float", list_text(v), c, doc);
  }
  void field(const char* name, std::vector<std::string>& v, const Constraint& c,
             const char* doc) override {
    std::vector<std::string> quoted;
    for (const auto& e : v) quoted.push_back("\"" + e + "\"");
    row(name, "list of string", bracketed(quoted), c, doc);
  }
  void field(const char* name, ScalarMap&, const Constraint&, const char* doc) override {
    row(name, "map", "{}", Constraint(), doc);
  }
  void section(const char* name, Section& value, const char*) override {
    if (nested_) nested_->emplace_back(prefix_ + name, &value);
  }
  void section_list(const char* name, SectionList&, const char* doc) override {
    row(name, "list of maps", "[]", Constraint(), doc);
  }

 private:
  template <class T>
  static std::string list_text(const std::vector<T>& v) {
    std::vector<std::string> items;
    for (const auto& e : v) items.push_back(text_of(e));
    return bracketed(items);
  }
  // "[a, b, c]", as YAML's flow style writes a list.
  static std::string bracketed(const std::vector<std::string>& items) {
    std::string out = "[";
    for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
    return out + "]";
  }
  void row(const char* name, const char* type, const std::string& value, const Constraint& c,
           const char* doc) {
    row_described(name, type, value, detail::describe_constraint(c), doc);
  }
  void row_described(const char* name, const char* type, const std::string& value,
                     const std::string& accepts, const char* doc) {
    rows_ << "| `" << prefix_ << name << "` | " << type << " | "
          << (is_required() ? "required" : "`" + escape_cell(value) + "`") << " | "
          << escape_cell(accepts) << " | " << escape_cell(doc) << " |\n";
  }
  std::string prefix_;
  std::ostringstream& rows_;
  std::vector<std::pair<std::string, Section*>>* nested_;
};

void document_section(std::ostringstream& out, const std::string& title, const std::string& prefix,
                      Section& section) {
  std::ostringstream rows;
  std::vector<std::pair<std::string, Section*>> nested;
  DocsVisitor docs(prefix, rows, &nested);
  section.fields(docs);
  if (!rows.str().empty()) {
    out << "\n## " << title << "\n\n"
        << "| key | type | default | accepts | description |\n"
        << "| --- | --- | --- | --- | --- |\n"
        << rows.str();
  }
  for (const auto& [path, inner] : nested) {
    if (path == "algo") continue;         // one table per algorithm, below
    if (path == "env.options") continue;  // one table per env, below
    document_section(out, "`" + path + ":`", path + ".", *inner);
  }
}

// The table of one choice's own keys (an algorithm's, a transform's), when it has any.
void document_choice(std::ostringstream& out, const std::string& prefix, Section& options) {
  std::ostringstream rows;
  DocsVisitor docs(prefix, rows, nullptr);
  options.fields(docs);
  if (rows.str().empty()) return;
  out << "\n| key | type | default | accepts | description |\n"
      << "| --- | --- | --- | --- | --- |\n"
      << rows.str();
}

}  // namespace

std::string config_reference_markdown() {
  register_builtin_components();
  std::ostringstream out;
  out << "# Training config reference\n\n"
      << "Generated from the config sections' declarations (`tdrl-train --config-reference`);\n"
      << "a test fails when this file differs from what the code declares. How configs are\n"
      << "loaded, overridden and validated: [apps.md](apps.md).\n";
  RunConfig config;
  document_section(out, "Top level and sections", "", config);
  for (const auto& name : algorithm_names()) {
    const AlgorithmInfo* info = find_algorithm(name);
    auto options = info->make_config();
    out << "\n## `algo.name: " << name << "`\n\n" << info->doc << "\n";
    document_choice(out, "algo.", *options);
    if (ReplaySection* replay = options->replay()) {
      out << "\nWith a replay buffer:\n";
      document_section(out, "`replay:` (" + name + ")", "replay.", *replay);
    }
  }
  for (const auto& name : envs::list_envs()) {
    const auto options = envs::env_options_declaration(name);
    if (!options) continue;
    out << "\n## `env.name: " << name << "`\n\nIts task options, `env.options:`:\n";
    document_choice(out, "env.options.", *options);
  }
  for (const auto& type : transform_types()) {
    const TransformInfo* info = find_transform(type);
    auto options = info->make_config();
    out << "\n## `env.transforms: - type: " << type << "`\n\n" << info->doc << "\n";
    document_choice(out, "", *options);
  }
  return out.str();
}

}  // namespace tdrl::apps
