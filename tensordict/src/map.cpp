// TensorDict::map: a function over chunks of dim 0 on a pool of threads.

#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

#include <tensordict/tensor_dict.h>

#include "detail/impl.h"

namespace tensordict {

TensorDict TensorDict::map(const std::function<TensorDict(const TensorDict&)>& fn,
                           const MapOptions& options) const {
  static constexpr const char* kOp = "TensorDict::map";
  TDRL_CHECK(batch_dims() != 0, ValueError, std::string(kOp),
             ": batch_size [] has no dim 0 to split");
  TDRL_CHECK(!(options.num_workers < 1), ValueError, std::string(kOp),
             ": num_workers must be at least 1, got ", std::to_string(options.num_workers));
  TDRL_CHECK(!(options.chunk_size < 0), ValueError, std::string(kOp),
             ": chunk_size must not be negative, got ", std::to_string(options.chunk_size));
  const int64_t rows = batch_size()[0];
  const int64_t chunk =
      options.chunk_size > 0
          ? options.chunk_size
          : std::max<int64_t>(1, (rows + options.num_workers - 1) / options.num_workers);
  const int64_t num_chunks = (rows + chunk - 1) / chunk;
  const bool into_self = is_memmap();

  std::vector<TensorDict> results(static_cast<size_t>(num_chunks));
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex mutex;  // guards `error`, `done` and the progress callback
  std::mutex write_mutex;
  int64_t done = 0;
  using namespace torch::indexing;
  auto worker = [&] {
    for (int64_t i; !failed && (i = next.fetch_add(1)) < num_chunks;) {
      try {
        const int64_t start = i * chunk;
        const int64_t stop = std::min(rows, start + chunk);
        TensorDict out = fn(index({Slice(start, stop)}));
        if (into_self && !out.impl()->keys().empty()) {
          // Serialised: a result key missing here makes index_put_ add it (a structural write).
          std::lock_guard<std::mutex> lock(write_mutex);
          index_put_({Slice(start, stop)}, out);
        } else {
          results[static_cast<size_t>(i)] = std::move(out);
        }
        std::lock_guard<std::mutex> lock(mutex);
        ++done;
        if (options.progress) options.progress(done, num_chunks);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!error) error = std::current_exception();
        failed = true;
      }
    }
  };
  const int n = static_cast<int>(std::min<int64_t>(options.num_workers, num_chunks));
  std::vector<std::thread> threads;
  for (int k = 1; k < n; ++k) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);

  if (into_self) return *this;
  bool all_empty = true;
  for (const auto& r : results) all_empty = all_empty && r.impl()->keys().empty();
  if (all_empty) return *this;
  return cat(results, 0);
}

}  // namespace tensordict
