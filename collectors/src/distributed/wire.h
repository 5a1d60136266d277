#pragma once

// What the trainer (rank 0) and a worker of DistributedCollector say to each other, and the
// c10d plumbing both sides share. Private to tdrl_collectors (tests include it to check the
// round trips).
//
// One conversation per worker, all tensors on CPU, each tag in order:
// - trainer -> worker, kCommandTag: one Command, encoded as int64 [kCommandSize]. A
//   WeightsCommand is followed by the policy weights (tensordict::send on kWeightsTag).
//   A LoadStateCommand is followed by the worker's collector state (tensordict::send on
//   kStateTag, received with tensordict::recv_new).
// - worker -> trainer, kStatusTag: one Status (int64 [kStatusSize]) answering configure,
//   collect, seed, save state and load state. A failed Status is followed by its message bytes
//   on kPayloadTag; an ok answer to collect by the batch, to save state by the collector's
//   state_dict() (tensordict::send on kPayloadTag, received with tensordict::recv_new: the
//   structure travels with it).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <variant>

#include <torch/types.h>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <tdrl/collectors/distributed_collector.h>
#include <tensordict/nn/interaction_type.h>
#include <tensordict/torch_compat.h>

namespace tdrl::collectors::detail {

using Milliseconds = std::chrono::milliseconds;
using Group = c10::intrusive_ptr<c10d::ProcessGroupGloo>;
using Store = c10::intrusive_ptr<c10d::TCPStore>;

constexpr int kCommandTag = 1;
constexpr int kStatusTag = 2;
constexpr int kPayloadTag = 3;
constexpr int kWeightsTag = 4;
constexpr int kStateTag = 5;
constexpr size_t kMaxMessage = 1 << 16;  // longer worker error messages are cut

// ---- Commands (trainer -> worker) ---------------------------------------------------------

// Build the worker's Collector with these options (the rest are the worker's defaults).
struct ConfigureCommand {
  int64_t frames_per_batch = 1;
  int64_t max_frames_per_traj = -1;
  bool reset_at_each_iter = false;
  bool reset_when_done = true;
  tensordict::nn::InteractionType exploration_type = tensordict::nn::InteractionType::kRandom;
};
// Collect one batch (with random actions when `random`).
struct CollectCommand {
  bool random = false;
};
// Take the policy weights that follow on kWeightsTag.
struct WeightsCommand {};
// Seed the worker's Collector; the Status carries what Collector::set_seed returned.
struct SeedCommand {
  uint64_t seed = 0;
};
// Answer with the worker's Collector::state_dict().
struct SaveStateCommand {};
// Load the Collector state that follows on kStateTag.
struct LoadStateCommand {};
// Return from run_distributed_worker.
struct StopCommand {};

using Command = std::variant<ConfigureCommand, CollectCommand, WeightsCommand, SeedCommand,
                             SaveStateCommand, LoadStateCommand, StopCommand>;

constexpr int64_t kCommandSize = 6;

torch::Tensor encode(const Command& command);
// Throws tensordict::Error for a tensor of the wrong shape or dtype, an unknown command or a
// field out of range (the trainer and the worker run different tdrl versions).
Command decode_command(const torch::Tensor& message);

bool operator==(const ConfigureCommand& a, const ConfigureCommand& b);
bool operator==(const CollectCommand& a, const CollectCommand& b);
bool operator==(const WeightsCommand& a, const WeightsCommand& b);
bool operator==(const SeedCommand& a, const SeedCommand& b);
bool operator==(const SaveStateCommand& a, const SaveStateCommand& b);
bool operator==(const LoadStateCommand& a, const LoadStateCommand& b);
bool operator==(const StopCommand& a, const StopCommand& b);

// ---- Status (worker -> trainer) -----------------------------------------------------------

// A worker's answer: ok, with the configured frames per batch, the batch's frames or the next
// seed; or failed, with the length of the error message that follows.
struct Status {
  bool ok = false;
  int64_t value = 0;
  int64_t message_length = 0;
};

constexpr int64_t kStatusSize = 3;

torch::Tensor encode(const Status& status);
// Throws tensordict::Error for a tensor of the wrong shape or dtype or a bad field.
Status decode_status(const torch::Tensor& message);

bool operator==(const Status& a, const Status& b);

// ---- c10d plumbing ------------------------------------------------------------------------

// What an exception says, without a c10::Error's backtrace.
std::string message_of(const std::exception& e);

/// The TCPStore key a worker of `rank` sets as soon as it reaches the store, before it joins
/// the group: the learner waits for every key, watching the processes it launched, so that a
/// worker that dies at start-up is reported when it exits rather than after the timeout.
inline std::string check_in_key(int64_t rank) {
  return "tdrl_worker_checked_in_" + std::to_string(rank);
}
// A peer that went away must make a send fail, not kill this process.
void ignore_sigpipe();
// This process's Gloo group of `world` ranks over `store`, bound as `options` says.
Group make_group(const Store& store, int64_t rank, int64_t world,
                 const DistributedOptions& options);
void send_tensor(tensordict::compat::ProcessGroup& group, torch::Tensor t, int64_t dst, int tag,
                 Milliseconds wait = ::kNoTimeout);
void recv_tensor(tensordict::compat::ProcessGroup& group, torch::Tensor t, int64_t src, int tag,
                 Milliseconds wait = ::kNoTimeout);
torch::Tensor string_bytes(const std::string& s);
std::string bytes_string(const torch::Tensor& t);

}  // namespace tdrl::collectors::detail
