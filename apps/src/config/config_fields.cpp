// The config layer's reading of a field's Constraint: a value checked against it, and the
// constraint described in words for messages and docs/config.md.

#include "config/config_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <regex>
#include <sstream>

#include <ATen/Context.h>
#include <torch/cuda.h>

#include <tdrl/apps/config_fields.h>

namespace tdrl::apps::detail {

namespace {

// Empty when `value` names a device of this machine, else what is wrong.
std::string check_device(const std::string& value) {
  static const std::regex form("cpu|cuda(:[0-9]{1,3})?");
  if (!std::regex_match(value, form)) {
    std::string out = "it must be cpu, cuda or cuda:N (N: a GPU's index)";
    const auto near = closest(value, {"cpu", "cuda"}, false);
    if (!near.empty()) out += "; did you mean '" + near.front() + "'?";
    return out;
  }
  if (value == "cpu") return "";
  const int64_t gpus = static_cast<int64_t>(torch::cuda::device_count());
  if (gpus == 0)
    return std::string("this machine has no CUDA device (") +
           (at::hasCUDA() ? "LibTorch has CUDA, and no GPU is visible: check the driver and "
                            "CUDA_VISIBLE_DEVICES"
                          : "this LibTorch was built without CUDA") +
           "); use cpu";
  const auto colon = value.find(':');
  if (colon != std::string::npos && std::stoll(value.substr(colon + 1)) >= gpus)
    return "this machine has " + std::to_string(gpus) + " CUDA device" + (gpus > 1 ? "s" : "") +
           ": cuda:0" + (gpus > 1 ? " to cuda:" + std::to_string(gpus - 1) : "");
  return "";
}

// The numeric part of a constraint in words: "in [0, 1]", ">= 1 or -1", "" when unbounded.
std::string describe_range(const Constraint& c) {
  std::string out;
  if (c.min() && c.max()) {
    out = (c.min_open() ? "in (" : "in [") + format_number(*c.min()) + ", " +
          format_number(*c.max()) + (c.max_open() ? ")" : "]");
  } else if (c.min()) {
    out = (c.min_open() ? "> " : ">= ") + format_number(*c.min());
  } else if (c.max()) {
    out = (c.max_open() ? "< " : "<= ") + format_number(*c.max());
  }
  for (double e : c.exact()) out += (out.empty() ? "" : " or ") + format_number(e);
  return out;
}

}  // namespace

std::string constraint_issue(const Constraint& c, double value) {
  for (double e : c.exact())
    if (value == e) return "";
  const bool low = c.min() && (c.min_open() ? !(value > *c.min()) : !(value >= *c.min()));
  const bool high = c.max() && (c.max_open() ? !(value < *c.max()) : !(value <= *c.max()));
  if (!low && !high) return "";
  return describe_range(c) + (c.reason().empty() ? "" : " (" + c.reason() + ")");
}

std::string constraint_issue(const Constraint& c, const std::string& value) {
  if (c.refuses_empty() && value.empty()) return "must not be empty";
  if (c.is_device()) {
    if (std::find(c.choices().begin(), c.choices().end(), value) != c.choices().end()) return "";
    std::string issue = check_device(value);
    if (!issue.empty() && !c.choices().empty())
      issue += " (or " + word_list(c.choices(), "or", false) + ")";
    return issue;
  }
  if (c.choices().empty() ||
      std::find(c.choices().begin(), c.choices().end(), value) != c.choices().end())
    return "";
  if (c.accepts_number() && parse_float(value, nullptr)) return "";
  std::string out = "the choices are " + word_list(c.choices(), "and", false);
  if (c.accepts_number()) out += ", or a number";
  const auto near = closest(value, c.choices(), false);
  // A close name is the likelier fix; the reason (e.g. a plugin not loaded) when there is none.
  if (!near.empty()) {
    out += "; did you mean '" + near.front() + "'?";
  } else if (!c.reason().empty()) {
    out += " (" + c.reason() + ")";
  }
  return out;
}

std::string unset_word(const Constraint& c) {
  return c.choices().empty() ? "null" : c.choices().front();
}

std::string describe_optional(const Constraint& c) {
  const std::string range = describe_range(c);
  const std::string unset =
      c.choices().empty() ? std::string("null") : word_list(c.choices(), "or", false);
  return (range.empty() ? "any number" : range) + ", or " + unset + " (none)";
}

std::string describe_constraint(const Constraint& c) {
  std::string out;
  if (c.is_device())
    return (c.choices().empty() ? "" : word_list(c.choices(), "or", false) + ", ") +
           "cpu, cuda or cuda:N";
  if (!c.choices().empty()) {
    out = "one of: " + word_list(c.choices(), "or", false);
    if (c.accepts_number()) out += ", or a number";
    return out;
  }
  if (c.refuses_empty()) return "not empty";
  out = describe_range(c);
  return out.empty() ? "any" : out;
}

}  // namespace tdrl::apps::detail
