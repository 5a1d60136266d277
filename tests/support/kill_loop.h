// Kill loops for crash-consistency tests: a child process repeats a save, is killed with
// SIGKILL at a random moment, and the parent checks what the save left behind, many times in
// bounded time.

#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <thread>

#include <gtest/gtest.h>

namespace tensordict::testing {

/// Forks a child running `save(i)` for i = 0, 1, 2, ... until it is killed, kills it after a
/// random delay of up to `max_delay` (drawn from `seed`), then calls `check(kill_number)` in
/// this process; up to `max_kills` times or until `budget` has passed. Returns the number of
/// kills made. `save` runs in a forked copy of this process: it must not need other threads
/// (tensors small enough for LibTorch to stay on the calling thread). A `save` that throws ends
/// the child with status 1.
template <class Save, class Check>
int kill_loop(int max_kills, std::chrono::seconds budget, std::chrono::microseconds max_delay,
              unsigned seed, const Save& save, const Check& check) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> delay_us(0, max_delay.count());
  const auto deadline = std::chrono::steady_clock::now() + budget;
  int kills = 0;
  for (; kills < max_kills && std::chrono::steady_clock::now() < deadline; ++kills) {
    const pid_t child = fork();
    if (child < 0) {
      ADD_FAILURE() << "fork failed";
      return kills;
    }
    if (child == 0) {
      try {
        for (int i = 0;; ++i) save(i);
      } catch (...) {
        _exit(1);
      }
    }
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us(rng)));
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    check(kills);
  }
  return kills;
}

}  // namespace tensordict::testing
