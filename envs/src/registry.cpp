// The env registry: one process-wide tensordict::Registry of name -> factory, filled only by
// explicit register_env / register_builtin_envs calls.

#include <tdrl/envs/registry.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <utility>

#include <tensordict/errors.h>
#include <tensordict/name_table.h>

namespace tdrl::envs {

using tensordict::KeyError;
using tensordict::TypeError;
using tensordict::ValueError;

namespace {

const char* type_name(const EnvOptionValue& value) {
  switch (value.index()) {
    case 0:
      return "bool";
    case 1:
      return "int";
    case 2:
      return "double";
    default:
      return "string";
  }
}

std::string value_repr(const EnvOptionValue& value) {
  std::ostringstream os;
  if (const auto* b = std::get_if<bool>(&value)) {
    os << (*b ? "true" : "false");
  } else if (const auto* i = std::get_if<int64_t>(&value)) {
    os << *i;
  } else if (const auto* d = std::get_if<double>(&value)) {
    os << *d;
  } else {
    os << '"' << std::get<std::string>(value) << '"';
  }
  return os.str();
}

[[noreturn]] void wrong_type(const std::string& key, const char* wanted,
                             const EnvOptionValue& value) {
  throw TypeError("EnvOptions: option '" + key + "' is " + type_name(value) + " " +
                  value_repr(value) + "; expected " + wanted + " (fix its value in the config)");
}

// A registered env: its factory, the names of the task options it reads and, for a declared
// env, their declaration.
struct RegisteredEnv {
  RegisteredEnvFactory factory;
  std::vector<std::string> option_names;
  OptionsDeclaration declaration;
};

namespace tf = tensordict::fields;

// Task options are scalars: a declaration with a list, a map or a nested section is refused.
[[noreturn]] void not_a_task_option(const char* name, const char* kind) {
  throw ValueError(std::string("task option '") + name + "' is " + kind +
                   "; task options are bool, int, float, an optional number or a string");
}

// The names a declaration's fields have, in order.
class OptionNames : public tf::FieldVisitor {
 public:
  std::vector<std::string> names;
  void field(const char* n, bool&, const tf::Constraint&, const char*) override { add(n); }
  void field(const char* n, int64_t&, const tf::Constraint&, const char*) override { add(n); }
  void field(const char* n, double&, const tf::Constraint&, const char*) override { add(n); }
  void field(const char* n, std::optional<double>&, const tf::Constraint&, const char*) override {
    add(n);
  }
  void field(const char* n, std::optional<int64_t>&, const tf::Constraint&, const char*) override {
    add(n);
  }
  void field(const char* n, std::string&, const tf::Constraint&, const char*) override { add(n); }
  void field(const char* n, std::vector<int64_t>&, const tf::Constraint&, const char*) override {
    not_a_task_option(n, "a list");
  }
  void field(const char* n, std::vector<double>&, const tf::Constraint&, const char*) override {
    not_a_task_option(n, "a list");
  }
  void field(const char* n, std::vector<std::string>&, const tf::Constraint&,
             const char*) override {
    not_a_task_option(n, "a list");
  }
  void field(const char* n, tf::ScalarMap&, const tf::Constraint&, const char*) override {
    not_a_task_option(n, "a map");
  }
  void section(const char* n, tf::Section&, const char*) override {
    not_a_task_option(n, "a section");
  }
  void section_list(const char* n, tf::SectionList&, const char*) override {
    not_a_task_option(n, "a list of sections");
  }

 private:
  void add(const char* n) { names.emplace_back(n); }
};

// Reads each task option that `given` sets into its field (OptionNames has refused the kinds
// that are not scalars when the env was registered).
class OptionReader : public OptionNames {
 public:
  explicit OptionReader(const EnvOptions& given) : given_(given) {}
  void field(const char* n, bool& v, const tf::Constraint&, const char*) override {
    if (given_.contains(n)) v = given_.get_bool(n, v);
  }
  void field(const char* n, int64_t& v, const tf::Constraint&, const char*) override {
    if (given_.contains(n)) v = given_.get_int(n, v);
  }
  void field(const char* n, double& v, const tf::Constraint&, const char*) override {
    if (given_.contains(n)) v = given_.get_double(n, v);
  }
  void field(const char* n, std::optional<double>& v, const tf::Constraint&, const char*) override {
    if (given_.contains(n)) v = given_.get_double(n, 0);
  }
  void field(const char* n, std::optional<int64_t>& v, const tf::Constraint&,
             const char*) override {
    if (given_.contains(n)) v = given_.get_int(n, 0);
  }
  void field(const char* n, std::string& v, const tf::Constraint&, const char*) override {
    if (given_.contains(n)) v = given_.get_string(n, v);
  }

 private:
  const EnvOptions& given_;
};

// Sets each field as a task option.
class OptionWriter : public OptionNames {
 public:
  explicit OptionWriter(EnvOptions& out) : out_(out) {}
  void field(const char* n, bool& v, const tf::Constraint&, const char*) override {
    out_.set(n, v);
  }
  void field(const char* n, int64_t& v, const tf::Constraint&, const char*) override {
    out_.set(n, v);
  }
  void field(const char* n, double& v, const tf::Constraint&, const char*) override {
    out_.set(n, v);
  }
  void field(const char* n, std::optional<double>& v, const tf::Constraint&, const char*) override {
    if (v) out_.set(n, *v);
  }
  void field(const char* n, std::optional<int64_t>& v, const tf::Constraint&,
             const char*) override {
    if (v) out_.set(n, *v);
  }
  void field(const char* n, std::string& v, const tf::Constraint&, const char*) override {
    out_.set(n, v);
  }

 private:
  EnvOptions& out_;
};

tensordict::Registry<RegisteredEnv>& registry() {
  static tensordict::Registry<RegisteredEnv> instance("env", "call register_builtin_envs() first");
  return instance;
}

}  // namespace

// ---- EnvOptions --------------------------------------------------------------------------------

EnvOptions& EnvOptions::set(const std::string& key, EnvOptionValue value) {
  TDRL_CHECK(!key.empty(), ValueError, "EnvOptions::set: the option name is empty");
  options_[key] = std::move(value);
  return *this;
}

bool EnvOptions::get_bool(const std::string& key, bool default_value) const {
  auto it = options_.find(key);
  if (it == options_.end()) return default_value;
  if (const auto* b = std::get_if<bool>(&it->second)) return *b;
  wrong_type(key, "a bool", it->second);
}

int64_t EnvOptions::get_int(const std::string& key, int64_t default_value) const {
  auto it = options_.find(key);
  if (it == options_.end()) return default_value;
  if (const auto* i = std::get_if<int64_t>(&it->second)) return *i;
  if (const auto* d = std::get_if<double>(&it->second)) {
    // 2^63 is exactly representable; anything at or beyond it does not fit.
    if (std::isfinite(*d) && std::floor(*d) == *d && std::abs(*d) < 9223372036854775808.0) {
      return static_cast<int64_t>(*d);
    }
  }
  wrong_type(key, "an integer", it->second);
}

double EnvOptions::get_double(const std::string& key, double default_value) const {
  auto it = options_.find(key);
  if (it == options_.end()) return default_value;
  if (const auto* d = std::get_if<double>(&it->second)) return *d;
  if (const auto* i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
  wrong_type(key, "a number", it->second);
}

std::string EnvOptions::get_string(const std::string& key, const std::string& default_value) const {
  auto it = options_.find(key);
  if (it == options_.end()) return default_value;
  if (const auto* s = std::get_if<std::string>(&it->second)) return *s;
  wrong_type(key, "a string", it->second);
}

void EnvOptions::check_keys(const std::string& env_name,
                            const std::vector<std::string>& known) const {
  for (const auto& entry : options_) {
    if (std::find(known.begin(), known.end(), entry.first) != known.end()) continue;
    throw KeyError(env_name + ": unknown option '" + entry.first + "'; " +
                   (known.empty() ? std::string("this env takes no options")
                                  : "known options (closest first): " +
                                        tensordict::closest_names(entry.first, known)));
  }
}

std::ostream& operator<<(std::ostream& os, const EnvOptions& options) {
  os << "EnvOptions(batch_size=" << tensordict::shape_str(options.batch_size())
     << ", device=" << options.device() << ", seed=";
  if (options.seed()) {
    os << *options.seed();
  } else {
    os << "None";
  }
  os << ", options={";
  bool first = true;
  for (const auto& entry : options.options()) {
    os << (first ? "" : ", ") << entry.first << "=" << value_repr(entry.second);
    first = false;
  }
  return os << "})";
}

// ---- Registry ----------------------------------------------------------------------------------

namespace {

// What both register_env overloads do once they have the option names.
void add_env(const std::string& name, RegisteredEnvFactory factory,
             std::vector<std::string> option_names, OptionsDeclaration declaration) {
  TDRL_CHECK(factory, ValueError, "register_env('", name, "'): the factory is empty");
  for (size_t i = 0; i < option_names.size(); ++i) {
    TDRL_CHECK(!option_names[i].empty(), ValueError, "register_env('", name, "'): option name ", i,
               " is empty");
    for (size_t j = 0; j < i; ++j) {
      TDRL_CHECK(option_names[j] != option_names[i], ValueError, "register_env('", name,
                 "'): option '", option_names[i], "' is listed twice");
    }
  }
  registry().add(name,
                 RegisteredEnv{std::move(factory), std::move(option_names), std::move(declaration)},
                 "register_env");
}

}  // namespace

void register_env(const std::string& name, RegisteredEnvFactory factory,
                  std::vector<std::string> option_names) {
  add_env(name, std::move(factory), std::move(option_names), nullptr);
}

void register_env(const std::string& name, RegisteredEnvFactory factory,
                  OptionsDeclaration declaration) {
  TDRL_CHECK(declaration, ValueError, "register_env('", name, "'): the declaration is empty");
  const auto declared = declaration();
  TDRL_CHECK(declared, ValueError, "register_env('", name, "'): the declaration made no options");
  OptionNames names;
  try {
    declared->fields(names);
  } catch (const ValueError& e) {
    throw ValueError("register_env('" + name + "'): " + e.what());
  }
  add_env(name, std::move(factory), std::move(names.names), std::move(declaration));
}

void read_task_options(const std::string& env_name, const EnvOptions& given,
                       tensordict::fields::Section& section) {
  OptionNames names;
  section.fields(names);
  given.check_keys(env_name, names.names);
  OptionReader reader(given);
  section.fields(reader);
}

void write_task_options(tensordict::fields::Section& section, EnvOptions& out) {
  OptionWriter writer(out);
  section.fields(writer);
}

std::shared_ptr<tensordict::fields::Section> env_options_declaration(const std::string& name) {
  const OptionsDeclaration declaration = registry().at(name, "env_options_declaration").declaration;
  return declaration ? declaration() : nullptr;
}

std::shared_ptr<EnvBase> make_env(const std::string& name, const EnvOptions& options) {
  // A copy: the factory runs outside the registry's lock.
  const RegisteredEnvFactory factory = registry().at(name, "make_env").factory;
  std::shared_ptr<EnvBase> env = factory(options);
  TDRL_CHECK(env, ValueError, "make_env('", name, "'): the factory returned a null env");
  TDRL_CHECK(env->batch_size() == options.batch_size(), ValueError, "make_env('", name,
             "'): the factory built an env of batch_size ",
             tensordict::shape_str(env->batch_size()), " for options.batch_size ",
             tensordict::shape_str(options.batch_size()),
             "; the factory must honour EnvOptions::batch_size");
  if (options.seed()) env->set_seed(*options.seed());
  return env;
}

std::vector<std::string> env_option_names(const std::string& name) {
  return registry().at(name, "env_option_names").option_names;
}

std::vector<std::string> list_envs() { return registry().names(); }

bool is_env_registered(const std::string& name) { return registry().find(name) != nullptr; }

}  // namespace tdrl::envs
