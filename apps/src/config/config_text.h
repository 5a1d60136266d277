#pragma once

// Text helpers of the config layer: reading YAML scalars as numbers, writing numbers back,
// and the "did you mean" suggestions and problem lists of its messages.

#include <cstdint>
#include <string>
#include <vector>

#include <tensordict/fields.h>

namespace tdrl::apps::detail {

/// true/false (also True, TRUE, False, FALSE).
bool parse_bool(const std::string& text, bool* out);
/// A decimal integer with an optional sign, within 64 bits.
bool parse_int(const std::string& text, int64_t* out);
/// A finite decimal number: [+-](digits[.digits] | .digits)[(e|E)[+-]digits]. `out` may be null.
bool parse_float(const std::string& text, double* out);
/// The shortest text that reads back to `value` ("0.0003", "1e-08", "120").
std::string format_number(double value);

/// A value as config.yaml and docs/config.md write it: true/false, the integer, the shortest
/// round-trip number.
std::string text_of(bool value);
std::string text_of(int64_t value);
std::string text_of(double value);

/// "a", "a or b", "a, b or c" (`last` is "or" or "and"); each item quoted when `quote`.
std::string word_list(const std::vector<std::string>& items, const std::string& last, bool quote);

/// The candidates closest to `wanted` by edit distance (at most 3, closest first, ties in the
/// given order) that are within a distance of 3 and tied with the closest; with `is_path`, a
/// right last part in another section ("optim.gamma" for "algo.gamma") counts as close.
std::vector<std::string> closest(const std::string& wanted, const std::vector<std::string>& all,
                                 bool is_path);

/// Empty when `value` is accepted by `c`, else the phrase after "it must be" (">= 1", "in [0,
/// 1]"), with the constraint's reason.
std::string constraint_issue(const tensordict::fields::Constraint& c, double value);
/// Empty when `value` is accepted by `c`, else what is wrong (the choices, closest first; for a
/// device, the devices this machine has).
std::string constraint_issue(const tensordict::fields::Constraint& c, const std::string& value);
/// "any", ">= 1 or -1", "in [0, 1]", "one of: cpu", for docs/config.md and messages.
std::string describe_constraint(const tensordict::fields::Constraint& c);

/// The word an optional number is unset with: its constraint's first choice ("auto"), else
/// "null".
std::string unset_word(const tensordict::fields::Constraint& c);
/// An optional number's constraint in words: its range, then the words for unset ("> 0, or
/// null").
std::string describe_optional(const tensordict::fields::Constraint& c);

/// The text of a ConfigError reporting every problem at once: "`subject` (2 problems):" and
/// one "  - problem" line each.
std::string problems_message(const std::string& subject, const std::vector<std::string>& problems);

/// The key paths (`prefix` + name; nested sections dotted, list items as `name[i].`) whose
/// values differ between `a` and `b`, two sections of one type, in path order: e.g. what a
/// config set apart from a default-constructed section.
std::vector<std::string> changed_keys(tensordict::fields::Section& a,
                                      tensordict::fields::Section& b, const std::string& prefix);

}  // namespace tdrl::apps::detail
