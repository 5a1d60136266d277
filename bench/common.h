// Shared by the benchmark programs: a console reporter that also keeps every benchmark's time
// for the TensorDict/raw ratio table each program prints after its run, and the common main.

#pragma once

#include <unistd.h>

#include <algorithm>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>
#include <torch/torch.h>

namespace tdrl::bench {

/// Real and CPU time of one benchmark, ns per call.
struct Timing {
  double real = -1;
  double cpu = -1;
};

/// The console reporter, also keeping each benchmark's real and CPU time per call for the
/// ratio table; with repetitions, the median of the repetitions.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  using benchmark::ConsoleReporter::ConsoleReporter;

  void ReportRuns(const std::vector<Run>& runs) override {
    benchmark::ConsoleReporter::ReportRuns(runs);
    for (const auto& run : runs) {
      if (run.error_occurred) continue;
      const double to_ns = 1e9 / benchmark::GetTimeUnitMultiplier(run.time_unit);
      const Timing t{run.GetAdjustedRealTime() * to_ns, run.GetAdjustedCPUTime() * to_ns};
      auto& runs_of = runs_[run.run_name.function_name];
      if (run.run_type == Run::RT_Iteration)
        runs_of.repetitions.push_back(t);
      else if (run.aggregate_name == "median")
        runs_of.median = t;
    }
  }

  /// The benchmark's time per call; negative when it did not run.
  Timing timing(const std::string& name) const {
    auto it = runs_.find(name);
    if (it == runs_.end()) return {};
    const auto& reps = it->second.repetitions;
    if (reps.empty()) return it->second.median;  // --benchmark_report_aggregates_only
    std::vector<double> real, cpu;
    for (const auto& t : reps) {
      real.push_back(t.real);
      cpu.push_back(t.cpu);
    }
    return {median(real), median(cpu)};
  }

 private:
  struct Runs {
    std::vector<Timing> repetitions;
    Timing median;
  };

  static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  }

  std::map<std::string, Runs> runs_;
};

/// Colour on a terminal, plain text into a pipe or file.
inline benchmark::ConsoleReporter::OutputOptions stdout_output_options() {
  return isatty(STDOUT_FILENO) ? benchmark::ConsoleReporter::OO_ColorTabular
                               : benchmark::ConsoleReporter::OO_Tabular;
}

/// Runs every registered benchmark through a RatioReporter on stdout, then prints the
/// program's own table with `print_table(reporter, std::cout)`; returns main's exit code.
template <class PrintTable>
int run_and_print_ratio_table(PrintTable&& print_table) {
  RatioReporter reporter(stdout_output_options());
  benchmark::RunSpecifiedBenchmarks(&reporter);
  print_table(reporter, std::cout);
  benchmark::Shutdown();
  return 0;
}

/// The main of a benchmark program: one intra-op thread (the machine is shared and small, and
/// per-call overhead is the subject, not parallel kernels), torch seed 0, Google Benchmark's
/// flags (exit 1 on an unrecognised one); then `describe(std::cout)` says what is measured,
/// `register_benchmarks()` registers them, and `print_table` prints the ratio table after the
/// run.
template <typename Describe, typename Register, typename PrintTable>
int benchmark_main(int argc, char** argv, Describe&& describe, Register&& register_benchmarks,
                   PrintTable&& print_table) {
  torch::set_num_threads(1);
  torch::manual_seed(0);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  describe(std::cout);
  register_benchmarks();
  return run_and_print_ratio_table(std::forward<PrintTable>(print_table));
}

/// The main of a benchmark program whose namespace `tdrl::bench` defines
/// `void describe(std::ostream&)` (what is measured), `void register_benchmarks()` and
/// `void print_tables(const RatioReporter&, std::ostream&)` (see benchmark_main).
#define TDRL_BENCHMARK_MAIN()                                             \
  int main(int argc, char** argv) {                                       \
    return tdrl::bench::benchmark_main(argc, argv, tdrl::bench::describe, \
                                       tdrl::bench::register_benchmarks,  \
                                       tdrl::bench::print_tables);        \
  }

/// The one `Fixture` of a benchmark program, built on its first use: outside the timed loop,
/// and only for the benchmarks that run.
template <class Fixture>
Fixture& shared_fixture() {
  static Fixture fixture;
  return fixture;
}

/// Times `op()`, once per iteration; what it returns is kept from being optimised away (and
/// destroyed inside the timed loop, as a caller's own result would be).
template <class Op>
void time_calls(benchmark::State& state, Op&& op) {
  for (auto _ : state) {
    auto out = op();
    benchmark::DoNotOptimize(out);
  }
}

/// `value` with `precision` digits after the point.
inline std::string fixed(double value, int precision) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(precision) << value;
  return os.str();
}

/// The rows `| case | ours us | raw us | ratio | cpu ratio | target |` (after its header) of the
/// cases `names`, each timing "BM_<name>/Ours" against "BM_<name>/Raw"; `max_ratio(name)` is
/// the case's target ratio, or <= 0 for none. Cases that did not run are left out.
template <class MaxRatio>
void print_ours_vs_raw(const RatioReporter& reporter, std::ostream& os,
                       const std::vector<std::string>& names, MaxRatio&& max_ratio) {
  os << "| case | ours us | raw us | ratio | cpu ratio | target |\n"
     << "|---|---:|---:|---:|---:|---|\n";
  for (const auto& name : names) {
    const Timing ours = reporter.timing("BM_" + name + "/Ours");
    const Timing raw = reporter.timing("BM_" + name + "/Raw");
    if (ours.real < 0 || raw.real <= 0) continue;
    const double ratio = ours.real / raw.real;
    const double target = max_ratio(name);
    const std::string verdict =
        target > 0 ? "<= " + fixed(target, 1) + (ratio <= target ? " ok" : " MISS") : "-";
    os << "| " << name << " | " << fixed(ours.real / 1e3, 1) << " | " << fixed(raw.real / 1e3, 1)
       << " | " << fixed(ratio, 3) << " | " << fixed(ours.cpu / raw.cpu, 3) << " | " << verdict
       << " |\n";
  }
}

}  // namespace tdrl::bench
