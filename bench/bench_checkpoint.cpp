// Google Benchmark of CheckpointStore::write (a temporary folder, the files, their MANIFEST of
// zlib CRC-32s, fsyncs, an atomic rename and the `latest` file) against the same state written
// by hand: TensorDict::save into a fresh folder, each file and the folder fsynced, then renamed
// into place. The ratio is what the store's crash consistency and damage check cost.
//
// Cases (registered as BM_<case>/Ours and BM_<case>/Raw): State4MB, a state of 16 float32
// leaves [256, 256] (4 MiB, about an actor-critic's networks and Adam moments); Replay64MB, the
// same plus a float32 [65536, 256] leaf (64 MiB, a replay buffer's rows). Files live in a
// scratch folder beside this executable (TDRL_BENCH_DIR names another parent), removed at exit.

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <torch/types.h>

#include <tdrl/apps/checkpoint_store.h>
#include <tensordict/tensordict.h>

#include "common.h"
#include "scratch_dir.h"

namespace tdrl::bench {
namespace {

namespace fs = std::filesystem;
using tensordict::TensorDict;

const ScratchDir& scratch() {
  static const ScratchDir dir(std::getenv("TDRL_BENCH_DIR")
                                  ? fs::path(std::getenv("TDRL_BENCH_DIR"))
                                  : fs::read_symlink("/proc/self/exe").parent_path(),
                              "bench_checkpoint");
  return dir;
}

// The state written by both sides: 16 leaves [256, 256], and with `replay` a [65536, 256] one.
TensorDict make_state(bool replay) {
  TensorDict td = TensorDict::empty({});
  for (int i = 0; i < 16; ++i) td.set("net" + std::to_string(i), torch::randn({256, 256}));
  if (replay) td.set("replay", torch::randn({65536, 256}));
  return td;
}

// fsync of a file or folder, as the store does before it commits.
void fsync_path(const fs::path& path, bool folder) {
  const int fd = ::open(path.c_str(), folder ? O_RDONLY | O_DIRECTORY : O_RDONLY);
  if (fd < 0) throw std::runtime_error("cannot open " + path.string());
  ::fsync(fd);
  ::close(fd);
}

// The raw side: save into a fresh folder, fsync every file and folder, rename into place.
void write_raw(const TensorDict& state, const fs::path& dir, int64_t step) {
  const fs::path tmp = dir / ("tmp-" + std::to_string(step));
  const fs::path final_path = dir / ("ckpt-" + std::to_string(step));
  fs::create_directories(tmp);
  state.save((tmp / "state").string());
  for (const auto& entry : fs::recursive_directory_iterator(tmp))
    fsync_path(entry.path(), entry.is_directory());
  fsync_path(tmp, true);
  fs::rename(tmp, final_path);
  fsync_path(dir, true);
  fs::remove_all(dir / ("ckpt-" + std::to_string(step - 2)));  // keep two, as the store does
}

void BM_Write(benchmark::State& state, bool replay, bool ours) {
  const TensorDict td = make_state(replay);
  const fs::path dir = fs::path(scratch().path()) /
                       (std::string(ours ? "ours" : "raw") + (replay ? "-replay" : "-state"));
  fs::remove_all(dir);
  fs::create_directories(dir);
  apps::CheckpointStore store(dir.string(), 2);
  int64_t step = 0;
  for (auto _ : state) {
    ++step;
    if (ours) {
      store.write(step, [&](const std::string& folder) { td.save(folder + "/state"); });
    } else {
      write_raw(td, dir, step);
    }
  }
  int64_t bytes = 0;
  for (const auto& [key, value] : td.items(true, true))
    if (const auto* t = std::get_if<torch::Tensor>(&value)) bytes += t->nbytes();
  state.SetBytesProcessed(state.iterations() * bytes);
}

const std::vector<std::string>& cases() {
  static const std::vector<std::string> names{"State4MB", "Replay64MB"};
  return names;
}

void register_benchmarks() {
  for (const auto& name : cases()) {
    const bool replay = name == "Replay64MB";
    for (const bool ours : {true, false}) {
      benchmark::RegisterBenchmark(
          ("BM_" + name + (ours ? "/Ours" : "/Raw")).c_str(),
          [replay, ours](benchmark::State& s) { BM_Write(s, replay, ours); })
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
  }
}

void print_tables(const RatioReporter& reporter, std::ostream& os) {
  os << "\nCheckpointStore::write against the same save, fsyncs and rename by hand (real time; "
        "ratio = ours / raw, lower is better; the difference is the MANIFEST's CRC-32s and "
        "the latest file)\n\n";
  print_ours_vs_raw(reporter, os, cases(), [](const std::string&) { return 0.0; });
}

void describe(std::ostream& os) {
  os << "bench_checkpoint: scratch folder " << scratch().path() << " ("
     << filesystem_name(scratch().path()) << ")\n";
}

}  // namespace
}  // namespace tdrl::bench

TDRL_BENCHMARK_MAIN()
