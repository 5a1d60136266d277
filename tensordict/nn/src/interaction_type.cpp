#include <tensordict/nn/interaction_type.h>

#include <algorithm>
#include <cctype>

#include <c10/util/Exception.h>

#include <tensordict/errors.h>

namespace tensordict::nn {

namespace {

std::optional<InteractionType>& current() {
  thread_local std::optional<InteractionType> type;
  return type;
}

}  // namespace

std::string to_string(InteractionType type) {
  switch (type) {
    case InteractionType::kRandom:
      return "RANDOM";
    case InteractionType::kMode:
      return "MODE";
    case InteractionType::kMean:
      return "MEAN";
    case InteractionType::kDeterministic:
      return "DETERMINISTIC";
  }
  TORCH_INTERNAL_ASSERT(false, "unknown InteractionType");
}

InteractionType interaction_type_from_string(const std::string& name) {
  std::string upper = name;
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  for (auto type : {InteractionType::kRandom, InteractionType::kMode, InteractionType::kMean,
                    InteractionType::kDeterministic}) {
    if (to_string(type) == upper) return type;
  }
  throw ValueError("interaction_type_from_string: unknown interaction type '" + name +
                   "'; valid: RANDOM, MODE, MEAN, DETERMINISTIC (any case)");
}

std::ostream& operator<<(std::ostream& stream, InteractionType type) {
  return stream << to_string(type);
}

std::optional<InteractionType> interaction_type() { return current(); }

SetInteractionType::SetInteractionType(std::optional<InteractionType> type) : previous_(current()) {
  current() = type;
}

SetInteractionType::~SetInteractionType() { current() = previous_; }

}  // namespace tensordict::nn
