#include "config/config_text.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <utility>

#include <tensordict/errors.h>

namespace tdrl::apps::detail {

namespace {

bool all_digits(const std::string& text, size_t begin, size_t end) {
  if (begin >= end) return false;
  for (size_t i = begin; i < end; ++i)
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return false;
  return true;
}

std::string leaf(const std::string& path) {
  const size_t dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

size_t path_distance(const std::string& wrong, const std::string& known) {
  return std::min(tensordict::edit_distance(wrong, known),
                  tensordict::edit_distance(leaf(wrong), leaf(known)) + 2);
}

}  // namespace

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

bool parse_int(const std::string& text, int64_t* out) {
  const size_t begin = (!text.empty() && (text[0] == '+' || text[0] == '-')) ? 1 : 0;
  if (!all_digits(text, begin, text.size())) return false;
  errno = 0;
  const long long value = std::strtoll(text.c_str(), nullptr, 10);
  if (errno == ERANGE) return false;
  *out = static_cast<int64_t>(value);
  return true;
}

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
  if (out) *out = value;
  return true;
}

std::string format_number(double value) {
  if (value == std::trunc(value) && std::fabs(value) < 1e15)
    return std::to_string(static_cast<int64_t>(value));
  char buf[64];
  const auto result = std::to_chars(buf, buf + sizeof(buf), value);
  return std::string(buf, result.ptr);
}

std::string text_of(bool value) { return value ? "true" : "false"; }
std::string text_of(int64_t value) { return std::to_string(value); }
std::string text_of(double value) { return format_number(value); }

std::string word_list(const std::vector<std::string>& items, const std::string& last, bool quote) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += (i + 1 == items.size()) ? " " + last + " " : ", ";
    out += quote ? "'" + items[i] + "'" : items[i];
  }
  return out;
}

std::vector<std::string> closest(const std::string& wanted, const std::vector<std::string>& all,
                                 bool is_path) {
  constexpr size_t kClose = 3;
  constexpr size_t kMax = 3;
  std::vector<std::pair<size_t, size_t>> ranked;  // (distance, index)
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i] == wanted) continue;
    ranked.emplace_back(
        is_path ? path_distance(wanted, all[i]) : tensordict::edit_distance(wanted, all[i]), i);
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (const auto& r : ranked) {
    if (out.size() == kMax || r.first > kClose || r.first > ranked.front().first) break;
    out.push_back(all[r.second]);
  }
  return out;
}

std::string problems_message(const std::string& subject, const std::vector<std::string>& problems) {
  std::string message = subject + " (" + std::to_string(problems.size()) +
                        (problems.size() == 1 ? " problem):" : " problems):");
  for (const auto& p : problems) message += "\n  - " + p;
  return message;
}

}  // namespace tdrl::apps::detail
