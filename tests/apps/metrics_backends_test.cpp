// Metrics backends (logger.backends): JSON lines and TensorBoard event files. The TensorBoard
// files are read back by a decoder written here from the documented format (record framing with
// masked CRC-32C, the Event / Summary / Value protobuf fields), not by the writer's helpers.

#include <tdrl/apps/metrics_backends.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tdrl/apps/config.h>
#include <tdrl/apps/metrics.h>
#include <tdrl/apps/registry.h>
#include <tdrl/apps/trainer.h>
#include <tdrl/apps/video.h>
#include <torch/torch.h>

#include "support/temp_dir.h"

namespace tdrl::apps {
namespace {

using tensordict::testing::TempDir;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

// ---- an independent reader of TensorBoard event files ----

struct Scalar {
  int64_t step;
  std::string tag;
  float value;
};

struct Image {
  int64_t step;
  std::string tag;
  int64_t height = 0;
  int64_t width = 0;
  int64_t colorspace = 0;
  std::string encoded;
};

struct EventFile {
  std::string file_version;
  std::vector<Scalar> scalars;
  std::vector<Image> images;
  int records = 0;
};

// Bit-by-bit CRC-32C (reflected polynomial 0x82F63B78), then TensorBoard's mask.
uint32_t slow_masked_crc(const std::string& bytes) {
  uint32_t crc = 0xffffffffu;
  for (const unsigned char byte : bytes) {
    crc ^= byte;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1u)));
  }
  crc ^= 0xffffffffu;
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

struct Cursor {
  const std::string& s;
  size_t at = 0;
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      const auto b = static_cast<unsigned char>(s.at(at++));
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
  }
  template <class T>
  T fixed() {
    T v;
    std::memcpy(&v, s.data() + at, sizeof(T));
    at += sizeof(T);
    return v;
  }
  std::string bytes() {
    const auto n = static_cast<size_t>(varint());
    std::string out = s.substr(at, n);
    at += n;
    return out;
  }
  bool done() const { return at >= s.size(); }
};

void decode_event(const std::string& data, EventFile& file) {
  Cursor c{data};
  int64_t step = 0;
  std::vector<std::pair<std::string, float>> values;
  while (!c.done()) {
    const uint64_t key = c.varint();
    const int field = static_cast<int>(key >> 3);
    const int wire = static_cast<int>(key & 7);
    if (field == 1 && wire == 1) {
      c.fixed<double>();  // wall_time
    } else if (field == 2 && wire == 0) {
      step = static_cast<int64_t>(c.varint());
    } else if (field == 3 && wire == 2) {
      file.file_version = c.bytes();
    } else if (field == 5 && wire == 2) {
      const std::string summary = c.bytes();
      Cursor sc{summary};
      while (!sc.done()) {
        EXPECT_EQ(sc.varint(), (1u << 3) | 2u);  // Summary.value
        const std::string value = sc.bytes();
        Cursor vc{value};
        std::string tag;
        float simple = NAN;
        std::optional<Image> image;
        while (!vc.done()) {
          const uint64_t vkey = vc.varint();
          if (vkey == ((1u << 3) | 2u)) {
            tag = vc.bytes();
          } else if (vkey == ((2u << 3) | 5u)) {
            simple = vc.fixed<float>();
          } else if (vkey == ((4u << 3) | 2u)) {
            // Summary.Image: height 1, width 2, colorspace 3 (varints), encoded_image_string 4.
            const std::string bytes = vc.bytes();
            Cursor ic{bytes};
            image.emplace();
            while (!ic.done()) {
              const uint64_t ikey = ic.varint();
              if (ikey == ((1u << 3) | 0u)) {
                image->height = static_cast<int64_t>(ic.varint());
              } else if (ikey == ((2u << 3) | 0u)) {
                image->width = static_cast<int64_t>(ic.varint());
              } else if (ikey == ((3u << 3) | 0u)) {
                image->colorspace = static_cast<int64_t>(ic.varint());
              } else if (ikey == ((4u << 3) | 2u)) {
                image->encoded = ic.bytes();
              } else {
                ADD_FAILURE() << "unexpected Image field " << ikey;
                return;
              }
            }
          } else {
            ADD_FAILURE() << "unexpected Value field " << vkey;
            return;
          }
        }
        if (image) {
          image->step = step;
          image->tag = tag;
          file.images.push_back(*image);
          continue;
        }
        values.emplace_back(tag, simple);
      }
    } else {
      ADD_FAILURE() << "unexpected Event field " << field << " of wire type " << wire;
      return;
    }
  }
  for (const auto& [tag, v] : values) file.scalars.push_back({step, tag, v});
}

EventFile read_event_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(in)), {});
  EventFile file;
  size_t at = 0;
  while (at < all.size()) {
    uint64_t length;
    uint32_t length_crc;
    std::memcpy(&length, all.data() + at, 8);
    std::memcpy(&length_crc, all.data() + at + 8, 4);
    EXPECT_EQ(length_crc, slow_masked_crc(all.substr(at, 8))) << "record " << file.records;
    const std::string data = all.substr(at + 12, length);
    uint32_t data_crc;
    std::memcpy(&data_crc, all.data() + at + 12 + length, 4);
    EXPECT_EQ(data_crc, slow_masked_crc(data)) << "record " << file.records;
    decode_event(data, file);
    ++file.records;
    at += 12 + length + 4;
  }
  EXPECT_EQ(at, all.size()) << "a record runs past the end of the file";
  return file;
}

std::string only_event_file(const std::string& dir) {
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind("events.out.tfevents.", 0) == 0)
      found.push_back(e.path().string());
  EXPECT_EQ(found.size(), 1u);
  return found.empty() ? std::string() : found.front();
}

// ---- tests ----

TEST(MetricsBackendsTest, Crc32cMatchesTheStandardCheckValue) {
  const std::string check = "123456789";
  EXPECT_EQ(crc32c(check.data(), check.size()), 0xe3069283u);
  EXPECT_EQ(masked_crc32c(check.data(), check.size()), slow_masked_crc(check));
}

TEST(MetricsBackendsTest, TensorBoardFileReadsBackEveryScalarAtItsStep) {
  TempDir dir;
  std::string path;
  {
    TensorBoardBackend tb(dir.path().string());
    path = tb.path();
    tb.write(64, {{"frames", 64}, {"train_return", 12.5}, {"loss_critic", 0.125}});
    tb.write(128, {{"frames", 128}, {"eval_return", -3.25}});
  }
  const EventFile file = read_event_file(path);
  EXPECT_EQ(file.file_version, "brain.Event:2");
  EXPECT_EQ(file.records, 3);
  ASSERT_EQ(file.scalars.size(), 5u);
  std::map<std::pair<int64_t, std::string>, float> got;
  for (const auto& s : file.scalars) got[{s.step, s.tag}] = s.value;
  EXPECT_EQ(got.at({64, "train_return"}), 12.5f);
  EXPECT_EQ(got.at({64, "loss_critic"}), 0.125f);
  EXPECT_EQ(got.at({128, "eval_return"}), -3.25f);
  EXPECT_EQ(got.at({128, "frames"}), 128.0f);
}

// A video is an image summary holding the GIF, as PyTorch's add_video writes it; the GIF is
// what VideoWriter's preview encoded (decoded here by FFmpeg: every frame kept).
TEST(MetricsBackendsTest, TensorBoardVideosAreAnimatedGifImages) {
  if (!videos_available()) GTEST_SKIP() << "built without FFmpeg";
  TempDir dir;
  const std::string mp4 = (dir.path() / "v.mp4").string();
  VideoWriter video(mp4, 20);
  video.keep_preview(32, 5);
  for (int i = 0; i < 7; ++i) video.write(torch::full({48, 64, 3}, 30 * i, torch::kUInt8));
  video.close();
  EXPECT_EQ(probe_video(mp4).frames, 7);
  ASSERT_FALSE(video.preview_gif().empty());
  EXPECT_EQ(video.preview_gif().substr(0, 6), "GIF89a");
  EXPECT_EQ(video.preview_width(), 32);
  EXPECT_EQ(video.preview_height(), 24);
  const std::string gif_path = (dir.path() / "p.gif").string();
  std::ofstream(gif_path, std::ios::binary) << video.preview_gif();
  const auto gif = probe_video(gif_path);
  EXPECT_EQ(gif.frames, 5);
  EXPECT_EQ(gif.width, 32);
  EXPECT_EQ(gif.height, 24);

  std::string path;
  {
    TensorBoardBackend tb(dir.path().string());
    path = tb.path();
    EXPECT_TRUE(tb.takes_videos());
    tb.write_video(256, "eval/video", video.preview_gif(), 32, 24);
  }
  const EventFile file = read_event_file(path);
  ASSERT_EQ(file.images.size(), 1u);
  EXPECT_EQ(file.images[0].step, 256);
  EXPECT_EQ(file.images[0].tag, "eval/video");
  EXPECT_EQ(file.images[0].width, 32);
  EXPECT_EQ(file.images[0].height, 24);
  EXPECT_EQ(file.images[0].colorspace, 3);
  EXPECT_EQ(file.images[0].encoded, video.preview_gif());
  EXPECT_FALSE(JsonLinesBackend((dir.path() / "m.jsonl").string()).takes_videos());
  EXPECT_THAT([&] { video.keep_preview(32, 5); },
              ::testing::ThrowsMessage<tensordict::ValueError>(
                  HasSubstr("keep_preview() comes before the first frame")));
}

// eval.video with the tensorboard backend: each evaluation's first episode as a GIF.
TEST(MetricsBackendsTest, ATrainingRunSendsEvalVideosToTensorBoard) {
  if (!videos_available()) GTEST_SKIP() << "built without FFmpeg";
  register_builtin_components();
  TempDir tmp;
  const std::string yaml =
      "env:\n  name: CartPole-v1\nmodel:\n  actor_cells: [8]\n  critic_cells: [8]\n"
      "algo:\n  name: ppo\n  num_epochs: 1\n  minibatch_size: 32\n"
      "collector:\n  frames_per_batch: 64\n  total_frames: 128\n"
      "logger:\n  progress: none\n  backends: [csv, tensorboard]\n"
      "eval:\n  interval_frames: 64\n  episodes: 1\n  max_steps: 4\n  video: true\n";
  Trainer trainer(load_config_string(yaml), RunDir::create(tmp.path().string(), "t"));
  ASSERT_TRUE(trainer.train());
  const EventFile file = read_event_file(only_event_file(trainer.run_dir().path()));
  ASSERT_GE(file.images.size(), 2u);
  for (const auto& image : file.images) {
    EXPECT_EQ(image.tag, "eval/video");
    EXPECT_EQ(image.width, 320);  // Gymnasium's 600 x 400 screen, scaled to 320 wide
    EXPECT_EQ(image.height, 213);
    EXPECT_EQ(image.encoded.substr(0, 6), "GIF89a");
  }
  EXPECT_EQ(file.images.front().step, 64);
}

TEST(MetricsBackendsTest, JsonLinesHoldOneObjectPerRow) {
  TempDir dir;
  const std::string path = (dir.path() / "metrics.jsonl").string();
  {
    JsonLinesBackend jl(path);
    jl.write(64, {{"frames", 64}, {"train_return", 0.1}});
    jl.write(128, {{"frames", 128}, {"x", NAN}});
  }
  std::ifstream in(path);
  std::string first, second;
  std::getline(in, first);
  std::getline(in, second);
  // Shortest text that reads back as the same double; "step" first.
  EXPECT_EQ(first, "{\"step\":64,\"frames\":64.0,\"train_return\":0.1}");
  EXPECT_EQ(second, "{\"step\":128,\"frames\":128.0}");  // NaN is left out: JSON has none
}

TEST(MetricsBackendsTest, AnUnknownBackendIsRefusedNamingTheChoices) {
  EXPECT_THAT([] { make_metrics_backend("tensorbord", "/tmp"); },
              ::testing::ThrowsMessage<tensordict::ValueError>(HasSubstr("['tensorboard', ")));
  EXPECT_EQ(make_metrics_backend("csv", "/tmp"), nullptr);
}

TEST(MetricsBackendsTest, ATrainingRunWritesEveryMetricsCellToTensorBoardAndJsonLines) {
  register_builtin_components();
  TempDir tmp;
  const std::string yaml =
      "seed: 0\nenv:\n  name: CartPole-v1\nmodel:\n  actor_cells: [16]\n  critic_cells: [16]\n"
      "algo:\n  name: ppo\n  num_epochs: 1\n  minibatch_size: 64\n"
      "collector:\n  frames_per_batch: 64\n  total_frames: 256\n"
      "logger:\n  progress: none\n  backends: [csv, jsonl, tensorboard]\n"
      "eval:\n  episodes: 1\n  max_steps: 20\n";
  Trainer trainer(load_config_string(yaml, {}), RunDir::create(tmp.path().string(), "t"));
  trainer.train();
  const std::string run = trainer.run_dir().path();
  const auto rows = read_metrics(run + "/metrics.csv");
  const EventFile file = read_event_file(only_event_file(run));
  std::map<std::pair<int64_t, std::string>, float> got;
  for (const auto& s : file.scalars) got[{s.step, s.tag}] = s.value;
  size_t cells = 0;
  for (const auto& row : rows) {
    const auto step = static_cast<int64_t>(row.at("frames"));
    for (const auto& [name, value] : row) {
      ++cells;
      ASSERT_TRUE(got.count({step, name})) << name << " at " << step;
      EXPECT_EQ(got.at({step, name}), static_cast<float>(value)) << name << " at " << step;
    }
  }
  EXPECT_EQ(file.scalars.size(), cells);
  std::ifstream jsonl(run + "/metrics.jsonl");
  size_t lines = 0;
  for (std::string line; std::getline(jsonl, line);) ++lines;
  EXPECT_EQ(lines, rows.size());
}

}  // namespace
}  // namespace tdrl::apps
