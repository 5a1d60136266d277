#pragma once

/// DistributedOptions: where and how a DistributedCollector's trainer and workers meet; apart
/// from the collector, so that a config section can hold it without LibTorch's headers.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <torch/arg.h>

#include <tensordict/fields.h>

namespace tdrl::collectors {

/// Where and how the trainer (rank 0) and the workers (ranks 1..num_workers) meet.
/// Example: `DistributedOptions().address("10.0.0.1").port(29500).num_workers(4)`
struct DistributedOptions {
  /// The trainer's host, where its TCPStore listens. Default "127.0.0.1".
  TORCH_ARG(std::string, address) = "127.0.0.1";
  /// The TCPStore port. 0 (default) lets the trainer pick a free port; only possible when
  /// the trainer launches its workers itself (launch_command), as they must be told it.
  TORCH_ARG(int, port) = 0;
  /// Worker processes (world size is num_workers + 1). Default 1.
  TORCH_ARG(int64_t, num_workers) = 1;
  /// Timeout of the rendezvous and of every wait of the trainer: a worker that does not
  /// answer within it (dead, unreachable, stuck) makes the trainer's call throw. The trainer
  /// waits for a batch with it, so it must exceed the time a worker takes to collect one
  /// batch. Workers wait for the trainer's next request without a limit (the trainer may
  /// train for long between batches); they end when its connection closes. Default 120 s.
  TORCH_ARG(std::chrono::milliseconds, timeout){std::chrono::seconds(120)};
  /// Yield each worker's batch as it arrives (async) instead of one stacked batch from all
  /// workers (sync, default).
  TORCH_ARG(bool, sync) = true;
  /// When not empty, the trainer starts num_workers local processes running this command
  /// (argv; argv[0] a path, not searched in PATH), with this process's environment plus the
  /// worker variables (see worker_identity_from_env); typically the trainer's own executable
  /// and arguments. When empty, workers are started by hand (on any host) with those
  /// variables. Launched workers run in process groups of their own (a terminal's Ctrl-C
  /// reaches the trainer only) and are killed when the thread that built the collector ends
  /// (PR_SET_PDEATHSIG): build it on a thread that outlives it, e.g. the main thread.
  TORCH_ARG(std::vector<std::string>, launch_command);
  /// The host name or address of the network interface Gloo binds to on this process (the
  /// peers connect to it). Default: on the trainer, address(); on a worker, address() when it
  /// is a loopback address (everything on one host), else this machine's host name; set it
  /// on a worker whose host name resolves to a loopback address (e.g. Debian's 127.0.1.1).
  /// Workers started by launch_command bind where the trainer does.
  TORCH_ARG(std::string, gloo_hostname);

 public:
  /// What a config sets: address, port, num_workers and timeout (as `timeout_s`, seconds,
  /// rounded to milliseconds). The launch command and the Gloo host name are the caller's.
  void fields(tensordict::fields::FieldVisitor& v) {
    using namespace tensordict::fields;
    v("num_workers", num_workers_, in_range(1, 1024),
      "workers: processes (distributed), threads (sync, async)");
    v("address", address_, non_empty(), "distributed: the trainer's host");
    // The visitor reads and writes numbers as int64_t and double: through copies. A value out
    // of range is refused by the reader; the clamps only keep the conversions defined for it.
    int64_t port = port_;
    v("port", port, in_range(0, 65535),
      "distributed: the TCPStore port (0: any, local workers only)");
    port_ = static_cast<int>(std::clamp<int64_t>(port, -1, 65536));
    double timeout_s = static_cast<double>(timeout_.count()) / 1000;
    v("timeout_s", timeout_s, in_range(0.001, 1e7),
      "distributed: timeout of every exchange, in seconds");
    timeout_ = std::chrono::milliseconds(std::llround(std::clamp(timeout_s, 0.0, 1e7) * 1000));
  }
};

}  // namespace tdrl::collectors
