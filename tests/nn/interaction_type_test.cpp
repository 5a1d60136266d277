#include <tensordict/nn/interaction_type.h>

#include <optional>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tensordict/errors.h>

#include "support/tensordict_fixtures.h"

namespace tensordict::nn {
namespace {

using namespace tensordict::testing;

TEST(InteractionTypeTest, UnsetByDefault) { EXPECT_FALSE(interaction_type().has_value()); }

TEST(InteractionTypeTest, GuardSetsAndRestoresOnScopeExit) {
  {
    SetInteractionType guard(InteractionType::kMode);
    ASSERT_TRUE(interaction_type().has_value());
    EXPECT_EQ(*interaction_type(), InteractionType::kMode);
  }
  EXPECT_FALSE(interaction_type().has_value());
}

TEST(InteractionTypeTest, GuardsNestAndRestoreTheOuterSetting) {
  SetInteractionType outer(InteractionType::kRandom);
  {
    SetInteractionType inner(InteractionType::kMean);
    EXPECT_EQ(*interaction_type(), InteractionType::kMean);
    {
      SetInteractionType cleared(std::nullopt);
      EXPECT_FALSE(interaction_type().has_value());
    }
    EXPECT_EQ(*interaction_type(), InteractionType::kMean);
  }
  EXPECT_EQ(*interaction_type(), InteractionType::kRandom);
}

TEST(InteractionTypeTest, SettingIsThreadLocal) {
  SetInteractionType guard(InteractionType::kDeterministic);
  std::optional<InteractionType> seen_on_other_thread = InteractionType::kRandom;
  std::thread other([&seen_on_other_thread] { seen_on_other_thread = interaction_type(); });
  other.join();
  EXPECT_FALSE(seen_on_other_thread.has_value());
  EXPECT_EQ(*interaction_type(), InteractionType::kDeterministic);
}

TEST(InteractionTypeTest, NamesRoundTripCaseInsensitively) {
  for (auto type : {InteractionType::kRandom, InteractionType::kMode, InteractionType::kMean,
                    InteractionType::kDeterministic}) {
    EXPECT_EQ(interaction_type_from_string(to_string(type)), type);
  }
  EXPECT_EQ(interaction_type_from_string("random"), InteractionType::kRandom);
  EXPECT_EQ(interaction_type_from_string("Deterministic"), InteractionType::kDeterministic);
  EXPECT_EQ(printed(InteractionType::kMean), "MEAN");
}

TEST(InteractionTypeTest, UnknownNameThrowsListingValidNames) {
  EXPECT_THAT([&] { interaction_type_from_string("greedy"); },
              ThrowsMessage<ValueError>(
                  AllOf(HasSubstr("'greedy'"), HasSubstr("RANDOM, MODE, MEAN, DETERMINISTIC"))));
}

}  // namespace
}  // namespace tensordict::nn
