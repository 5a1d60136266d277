// Constraints of config fields: ranges, exact exceptions and choices, checked and described.

#include <tdrl/apps/config_fields.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <regex>
#include <sstream>

#include <ATen/Context.h>
#include <torch/cuda.h>

#include "detail/config_text.h"

namespace tdrl::apps {

Constraint at_least(double lo) {
  Constraint c;
  c.min_ = lo;
  return c;
}

Constraint greater_than(double lo) {
  Constraint c;
  c.min_ = lo;
  c.min_open_ = true;
  return c;
}

Constraint at_most(double hi) {
  Constraint c;
  c.max_ = hi;
  return c;
}

Constraint in_range(double lo, double hi) {
  Constraint c;
  c.min_ = lo;
  c.max_ = hi;
  return c;
}

Constraint one_of(std::vector<std::string> choices) {
  Constraint c;
  c.choices_ = std::move(choices);
  return c;
}

Constraint non_empty() {
  Constraint c;
  c.non_empty_ = true;
  return c;
}

Constraint torch_device(std::vector<std::string> also) {
  Constraint c;
  c.device_ = true;
  c.choices_ = std::move(also);
  return c;
}

namespace {

// Empty when `value` names a device of this machine, else what is wrong.
std::string check_device(const std::string& value) {
  static const std::regex form("cpu|cuda(:[0-9]{1,3})?");
  if (!std::regex_match(value, form)) {
    std::string out = "it must be cpu, cuda or cuda:N (N: a GPU's index)";
    const auto near = detail::closest(value, {"cpu", "cuda"}, false);
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

}  // namespace

Constraint& Constraint::or_exactly(double value) {
  exact_.push_back(value);
  return *this;
}

Constraint& Constraint::up_to(double hi) {
  max_ = hi;
  return *this;
}

Constraint& Constraint::because(std::string reason) {
  reason_ = std::move(reason);
  return *this;
}

Constraint& Constraint::or_number() {
  number_ = true;
  return *this;
}

std::string Constraint::check(double value) const {
  for (double e : exact_)
    if (value == e) return "";
  const bool low = min_ && (min_open_ ? !(value > *min_) : !(value >= *min_));
  const bool high = max_ && !(value <= *max_);
  if (!low && !high) return "";
  return describe() + (reason_.empty() ? "" : " (" + reason_ + ")");
}

std::string Constraint::check(const std::string& value) const {
  if (non_empty_ && value.empty()) return "must not be empty";
  if (device_) {
    if (std::find(choices_.begin(), choices_.end(), value) != choices_.end()) return "";
    std::string issue = check_device(value);
    if (!issue.empty() && !choices_.empty())
      issue += " (or " + detail::word_list(choices_, "or", false) + ")";
    return issue;
  }
  if (choices_.empty() || std::find(choices_.begin(), choices_.end(), value) != choices_.end())
    return "";
  if (number_ && detail::parse_float(value, nullptr)) return "";
  std::string out = "the choices are " + detail::word_list(choices_, "and", false);
  if (number_) out += ", or a number";
  const auto near = detail::closest(value, choices_, false);
  // A close name is the likelier fix; the reason (e.g. a plugin not loaded) when there is none.
  if (!near.empty()) {
    out += "; did you mean '" + near.front() + "'?";
  } else if (!reason_.empty()) {
    out += " (" + reason_ + ")";
  }
  return out;
}

std::string Constraint::describe() const {
  std::string out;
  if (device_)
    return (choices_.empty() ? "" : detail::word_list(choices_, "or", false) + ", ") +
           "cpu, cuda or cuda:N";
  if (!choices_.empty()) {
    out = "one of: " + detail::word_list(choices_, "or", false);
    if (number_) out += ", or a number";
    return out;
  }
  if (non_empty_) return "not empty";
  if (min_ && max_) {
    out = (min_open_ ? "in (" : "in [") + detail::format_number(*min_) + ", " +
          detail::format_number(*max_) + "]";
  } else if (min_) {
    out = (min_open_ ? "> " : ">= ") + detail::format_number(*min_);
  } else if (max_) {
    out = "<= " + detail::format_number(*max_);
  }
  for (double e : exact_) out += (out.empty() ? "" : " or ") + detail::format_number(e);
  return out.empty() ? "any" : out;
}

}  // namespace tdrl::apps
