// DistributedCollector's wire protocol: every command and status survives encode / decode, and
// a message from another protocol version is refused with the version hint.

#include "distributed/wire.h"

#include <limits>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tensordict/errors.h>

namespace tdrl::collectors::detail {
namespace {

using tensordict::nn::InteractionType;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

template <class T>
void expect_round_trip(const T& command) {
  const torch::Tensor message = encode(Command(command));
  EXPECT_EQ(message.sizes(), (std::vector<int64_t>{kCommandSize}));
  EXPECT_EQ(message.scalar_type(), torch::kLong);
  const Command decoded = decode_command(message);
  ASSERT_TRUE(std::holds_alternative<T>(decoded));
  EXPECT_TRUE(std::get<T>(decoded) == command);
}

TEST(DistributedWireTest, EveryCommandSurvivesEncodeAndDecode) {
  expect_round_trip(ConfigureCommand{1000, 200, true, false, InteractionType::kDeterministic});
  expect_round_trip(ConfigureCommand{1, -1, false, true, InteractionType::kRandom});
  expect_round_trip(CollectCommand{true});
  expect_round_trip(CollectCommand{false});
  expect_round_trip(WeightsCommand{});
  expect_round_trip(SeedCommand{0});
  expect_round_trip(SeedCommand{std::numeric_limits<uint64_t>::max()});
  expect_round_trip(SaveStateCommand{});
  expect_round_trip(LoadStateCommand{});
  expect_round_trip(StopCommand{});
}

TEST(DistributedWireTest, StatusSurvivesEncodeAndDecode) {
  for (const Status& status : {Status{true, 1000, 0}, Status{false, 0, 42}, Status{true, -7, 0}}) {
    const torch::Tensor message = encode(status);
    EXPECT_EQ(message.sizes(), (std::vector<int64_t>{kStatusSize}));
    EXPECT_TRUE(decode_status(message) == status);
  }
}

TEST(DistributedWireTest, UnknownCommandsAndFieldsAreRefusedNamingTheVersion) {
  auto message = encode(Command(CollectCommand{true}));
  message[0] = 99;
  EXPECT_THAT([&] { decode_command(message); },
              ThrowsMessage<tensordict::Error>(
                  AllOf(HasSubstr("unknown command 99"), HasSubstr("same tdrl version"))));
  message = encode(Command(CollectCommand{true}));
  message[1] = 2;
  EXPECT_THAT([&] { decode_command(message); },
              ThrowsMessage<tensordict::Error>(HasSubstr("random is 2")));
  message = encode(Command(ConfigureCommand{}));
  message[5] = 17;
  EXPECT_THAT([&] { decode_command(message); },
              ThrowsMessage<tensordict::Error>(HasSubstr("unknown exploration type 17")));
  EXPECT_THAT([&] { decode_command(torch::zeros({3}, torch::kLong)); },
              ThrowsMessage<tensordict::Error>(HasSubstr("int64 [6]")));
  EXPECT_THAT([&] { decode_status(torch::zeros({kStatusSize}, torch::kFloat)); },
              ThrowsMessage<tensordict::Error>(HasSubstr("int64 [3]")));
  auto status = encode(Status{true, 1, 0});
  status[2] = -1;
  EXPECT_THAT([&] { decode_status(status); },
              ThrowsMessage<tensordict::Error>(HasSubstr("message of -1 bytes")));
}

}  // namespace
}  // namespace tdrl::collectors::detail
