// DistributedCollector's messages (encode / decode) and the c10d plumbing of both sides.

#include "distributed/wire.h"

#include <signal.h>

#include <cstring>
#include <vector>

#include <tensordict/errors.h>

namespace tdrl::collectors::detail {

using tensordict::Error;

namespace {

// The first int64 of a command names it.
enum CommandTag : int64_t {
  kConfigure = 1,
  kCollect,
  kWeights,
  kSeed,
  kStop,
  kSaveState,
  kLoadState
};

constexpr const char* kVersionHint = "; the trainer and the workers must run the same tdrl version";

const int64_t* checked_data(const torch::Tensor& message, int64_t size, const char* what) {
  TDRL_CHECK(message.defined() && message.dim() == 1 && message.size(0) == size &&
                 message.scalar_type() == torch::kLong && message.is_contiguous(),
             Error, "DistributedCollector: a ", what, " message must be a contiguous int64 [",
             std::to_string(size), "] tensor", kVersionHint);
  return message.data_ptr<int64_t>();
}

bool flag(int64_t value, const char* field) {
  TDRL_CHECK(value == 0 || value == 1, Error, "DistributedCollector: ", field, " is ",
             std::to_string(value), " in a command; expected 0 or 1", kVersionHint);
  return value == 1;
}

torch::Tensor int64s(std::initializer_list<int64_t> values, int64_t size) {
  auto t = torch::zeros({size}, torch::kLong);
  int64_t i = 0;
  for (int64_t v : values) t[i++] = v;
  return t;
}

}  // namespace

// ---- Commands -----------------------------------------------------------------------------

torch::Tensor encode(const Command& command) {
  struct Encoder {
    torch::Tensor operator()(const ConfigureCommand& c) const {
      return int64s(
          {kConfigure, c.frames_per_batch, c.max_frames_per_traj, c.reset_at_each_iter ? 1 : 0,
           c.reset_when_done ? 1 : 0, static_cast<int64_t>(c.exploration_type)},
          kCommandSize);
    }
    torch::Tensor operator()(const CollectCommand& c) const {
      return int64s({kCollect, c.random ? 1 : 0}, kCommandSize);
    }
    torch::Tensor operator()(const WeightsCommand&) const {
      return int64s({kWeights}, kCommandSize);
    }
    torch::Tensor operator()(const SeedCommand& c) const {
      return int64s({kSeed, static_cast<int64_t>(c.seed)}, kCommandSize);
    }
    torch::Tensor operator()(const SaveStateCommand&) const {
      return int64s({kSaveState}, kCommandSize);
    }
    torch::Tensor operator()(const LoadStateCommand&) const {
      return int64s({kLoadState}, kCommandSize);
    }
    torch::Tensor operator()(const StopCommand&) const { return int64s({kStop}, kCommandSize); }
  };
  return std::visit(Encoder{}, command);
}

Command decode_command(const torch::Tensor& message) {
  const int64_t* c = checked_data(message, kCommandSize, "command");
  switch (c[0]) {
    case kConfigure: {
      constexpr auto kLast = static_cast<int64_t>(tensordict::nn::InteractionType::kDeterministic);
      TDRL_CHECK(c[5] >= 0 && c[5] <= kLast, Error,
                 "DistributedCollector: unknown exploration type ", std::to_string(c[5]),
                 " in a configure command", kVersionHint);
      ConfigureCommand configure;
      configure.frames_per_batch = c[1];
      configure.max_frames_per_traj = c[2];
      configure.reset_at_each_iter = flag(c[3], "reset_at_each_iter");
      configure.reset_when_done = flag(c[4], "reset_when_done");
      configure.exploration_type = static_cast<tensordict::nn::InteractionType>(c[5]);
      return configure;
    }
    case kCollect:
      return CollectCommand{flag(c[1], "random")};
    case kWeights:
      return WeightsCommand{};
    case kSeed:
      return SeedCommand{static_cast<uint64_t>(c[1])};
    case kSaveState:
      return SaveStateCommand{};
    case kLoadState:
      return LoadStateCommand{};
    case kStop:
      return StopCommand{};
    default:
      throw Error("DistributedCollector: unknown command " + std::to_string(c[0]) + kVersionHint);
  }
}

bool operator==(const ConfigureCommand& a, const ConfigureCommand& b) {
  return a.frames_per_batch == b.frames_per_batch &&
         a.max_frames_per_traj == b.max_frames_per_traj &&
         a.reset_at_each_iter == b.reset_at_each_iter && a.reset_when_done == b.reset_when_done &&
         a.exploration_type == b.exploration_type;
}
bool operator==(const CollectCommand& a, const CollectCommand& b) { return a.random == b.random; }
bool operator==(const WeightsCommand&, const WeightsCommand&) { return true; }
bool operator==(const SeedCommand& a, const SeedCommand& b) { return a.seed == b.seed; }
bool operator==(const SaveStateCommand&, const SaveStateCommand&) { return true; }
bool operator==(const LoadStateCommand&, const LoadStateCommand&) { return true; }
bool operator==(const StopCommand&, const StopCommand&) { return true; }

// ---- Status -------------------------------------------------------------------------------

torch::Tensor encode(const Status& status) {
  return int64s({status.ok ? 1 : 0, status.value, status.message_length}, kStatusSize);
}

Status decode_status(const torch::Tensor& message) {
  const int64_t* s = checked_data(message, kStatusSize, "status");
  TDRL_CHECK(s[0] == 0 || s[0] == 1, Error, "DistributedCollector: a worker's status is ",
             std::to_string(s[0]), "; expected 0 (failed) or 1 (ok)", kVersionHint);
  TDRL_CHECK(s[2] >= 0, Error, "DistributedCollector: a worker announced a message of ",
             std::to_string(s[2]), " bytes", kVersionHint);
  return Status{s[0] == 1, s[1], s[2]};
}

bool operator==(const Status& a, const Status& b) {
  return a.ok == b.ok && a.value == b.value && a.message_length == b.message_length;
}

// ---- c10d plumbing ------------------------------------------------------------------------

std::string message_of(const std::exception& e) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e))
    return c10_error->what_without_backtrace();
  return e.what();
}

void ignore_sigpipe() {
  struct sigaction current {};
  if (sigaction(SIGPIPE, nullptr, &current) == 0 && !(current.sa_flags & SA_SIGINFO) &&
      current.sa_handler == SIG_DFL)
    signal(SIGPIPE, SIG_IGN);
}

namespace {

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

}  // namespace

Group make_group(const Store& store, int64_t rank, int64_t world,
                 const DistributedOptions& options) {
  auto gloo = c10d::ProcessGroupGloo::Options::create(options.timeout());
  if (!options.gloo_hostname().empty())
    gloo->devices.push_back(
        c10d::ProcessGroupGloo::createDeviceForHostname(options.gloo_hostname()));
  else if (rank == 0 || is_loopback(options.address()))
    gloo->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(options.address()));
  else
    gloo->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  gloo->threads = 1;  // only point-to-point transfers, which run on the calling thread
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, static_cast<int>(rank),
                                                     static_cast<int>(world), gloo);
}

void send_tensor(tensordict::compat::ProcessGroup& group, torch::Tensor t, int64_t dst, int tag,
                 Milliseconds wait) {
  std::vector<torch::Tensor> v{std::move(t)};
  group.send(v, static_cast<int>(dst), tag)->wait(wait);
}

void recv_tensor(tensordict::compat::ProcessGroup& group, torch::Tensor t, int64_t src, int tag,
                 Milliseconds wait) {
  std::vector<torch::Tensor> v{std::move(t)};
  group.recv(v, static_cast<int>(src), tag)->wait(wait);
}

torch::Tensor string_bytes(const std::string& s) {
  auto t = torch::empty({static_cast<int64_t>(s.size())}, torch::kByte);
  std::memcpy(t.data_ptr<uint8_t>(), s.data(), s.size());
  return t;
}

std::string bytes_string(const torch::Tensor& t) {
  const auto* p = t.data_ptr<uint8_t>();
  return std::string(p, p + t.numel());
}

}  // namespace tdrl::collectors::detail
