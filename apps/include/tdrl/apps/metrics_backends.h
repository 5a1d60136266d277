#pragma once

/// Where a run's metrics go besides metrics.csv: JSON lines and TensorBoard event files, chosen
/// by `logger.backends`. metrics.csv itself is always written (resuming and the learning suite
/// read it); "csv" in the list names it.
///
/// Errors: a file that cannot be created or written throws std::runtime_error naming the path
/// and the system's reason; an unknown backend name throws tensordict::ValueError listing the
/// names.

#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tdrl::apps {

/// One destination of the metrics rows. Not thread-safe (the Trainer writes from one thread).
class MetricsBackend {
 public:
  virtual ~MetricsBackend() = default;
  /// Writes the metrics of one row, logged at `step` (the frame count). Every value is finite
  /// or NaN-free: the Trainer leaves out what it has not measured.
  virtual void write(int64_t step, const std::map<std::string, double>& row) = 0;
  /// Whether write_video shows anything (TensorBoard); the Trainer encodes a preview only then.
  virtual bool takes_videos() const { return false; }
  /// A video logged at `step` under `tag`: an animated GIF's bytes (VideoWriter::preview_gif)
  /// of `width` x `height` pixels. Backends that cannot show videos (takes_videos() false)
  /// ignore it; the run folder keeps the MP4 either way.
  virtual void write_video(int64_t /*step*/, const std::string& /*tag*/, const std::string& /*gif*/,
                           int64_t /*width*/, int64_t /*height*/) {}
};

/// `metrics.jsonl`: one JSON object per row, `{"step": 256, "frames": 256, "train_return": ...}`,
/// appended (a resumed run continues the file).
class JsonLinesBackend : public MetricsBackend {
 public:
  explicit JsonLinesBackend(std::string path);
  void write(int64_t step, const std::map<std::string, double>& row) override;

 private:
  std::string path_;
  std::ofstream out_;
};

/// A TensorBoard event file, `events.out.tfevents.<unix time>.<host>` in the run folder, written
/// from TensorBoard's documented record format: each record is the data's length (uint64,
/// little-endian), the length's masked CRC-32C, the data, and the data's masked CRC-32C; the
/// data is a serialized `Event` (wall_time, step, and a `Summary` with one `simple_value` per
/// metric, tagged with the metric's name). The first record carries `file_version`
/// "brain.Event:2". `tensorboard --logdir runs` shows every run; a resumed run adds a file.
/// Videos are `Summary.Value.image` entries holding the GIF (as PyTorch's SummaryWriter
/// add_video writes them), shown animated in TensorBoard's Images tab.
class TensorBoardBackend : public MetricsBackend {
 public:
  explicit TensorBoardBackend(const std::string& run_dir);
  void write(int64_t step, const std::map<std::string, double>& row) override;
  bool takes_videos() const override { return true; }
  void write_video(int64_t step, const std::string& tag, const std::string& gif, int64_t width,
                   int64_t height) override;
  const std::string& path() const { return path_; }

 private:
  void write_record(const std::string& data);
  std::string path_;
  std::ofstream out_;
};

/// CRC-32C (Castagnoli) of `size` bytes, and TensorBoard's masking of it.
uint32_t crc32c(const void* data, size_t size);
uint32_t masked_crc32c(const void* data, size_t size);

/// The backend called `name` ("jsonl", "tensorboard") writing into `run_dir`; nullptr for
/// "csv" (metrics.csv is written by the Trainer itself). ValueError for another name.
std::unique_ptr<MetricsBackend> make_metrics_backend(const std::string& name,
                                                     const std::string& run_dir);

/// The names make_metrics_backend accepts.
const std::vector<std::string>& metrics_backend_names();

}  // namespace tdrl::apps
