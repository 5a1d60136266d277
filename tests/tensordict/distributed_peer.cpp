// Rank 1 of the distributed tests: `distributed_peer PORT SCENARIO`. Exits 0 when its side of
// the scenario succeeded, 2 when a check failed, 1 on an exception.

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <tensordict/distributed.h>

#include "distributed_scenarios.h"

using tensordict::testing::distributed_deep;
using tensordict::testing::distributed_mismatch;
using tensordict::testing::distributed_sample;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: distributed_peer PORT SCENARIO\n";
    return 1;
  }
  try {
    c10d::TCPStoreOptions store_options;
    store_options.port = static_cast<std::uint16_t>(std::stoi(argv[1]));
    store_options.isServer = false;
    store_options.timeout = std::chrono::seconds(30);
    auto store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", store_options);
    auto options = c10d::ProcessGroupGloo::Options::create(std::chrono::seconds(30));
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    auto group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, 1, 2, options);

    const std::string scenario = argv[2];
    if (scenario == "send") {
      tensordict::send(distributed_sample(1.0), *group, 0);
    } else if (scenario == "recv") {
      auto td = distributed_sample(0.0, /*reversed=*/true);
      tensordict::recv(td, *group, 0);
      if (!td.allclose(distributed_sample(1.0))) return 2;
    } else if (scenario == "send_deep") {
      tensordict::send(distributed_deep(1.5), *group, 0, /*tag=*/3);
    } else if (scenario == "send_malformed_structure") {
      // A valid leaf section (no leaves) followed by a structure section that is not one.
      const std::string leaves = "0\n", header = leaves + "not a structure";
      std::vector<torch::Tensor> lengths{
          torch::tensor({static_cast<int64_t>(header.size()), static_cast<int64_t>(leaves.size())},
                        torch::kLong)};
      group->send(lengths, 0, 0)->wait();
      auto bytes = torch::empty({static_cast<int64_t>(header.size())}, torch::kByte);
      std::copy(header.begin(), header.end(), bytes.data_ptr<uint8_t>());
      std::vector<torch::Tensor> payload{bytes};
      group->send(payload, 0, 0)->wait();
    } else if (scenario == "send_mismatch") {
      tensordict::send(distributed_mismatch(), *group, 0);
    } else if (scenario == "isend") {
      tensordict::isend(distributed_sample(3.0), group, 0, /*tag=*/5).wait();
    } else if (scenario == "broadcast") {
      tensordict::broadcast(distributed_sample(2.0), *group, /*root=*/1);
    } else if (scenario == "all_reduce") {
      auto td = distributed_sample(2.0);
      tensordict::all_reduce(td, *group);
      if (!td.allclose(distributed_sample(3.0))) return 2;
    } else {
      std::cerr << "unknown scenario " << scenario << "\n";
      return 1;
    }
    group->barrier()->wait();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "distributed_peer: " << e.what() << "\n";
    return 1;
  }
}
