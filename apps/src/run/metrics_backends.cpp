#include <tdrl/apps/metrics_backends.h>

#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include <tensordict/errors.h>
#include <tensordict/name_table.h>

namespace tdrl::apps {

namespace {

std::ofstream open_for_append(const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::app);
  if (!out)
    throw std::runtime_error("cannot open '" + path + "' for writing: " + std::strerror(errno));
  return out;
}

void check_written(const std::ofstream& out, const std::string& path) {
  if (!out) throw std::runtime_error("cannot write '" + path + "': " + std::strerror(errno));
}

// ---- protobuf wire format: the few field kinds an Event needs ----

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}

void put_tag(std::string& out, int field, int wire_type) {
  put_varint(out, (static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(wire_type));
}

template <class T>
void put_fixed(std::string& out, T v) {  // little-endian (the machines tdrl builds on)
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));
  out.append(bytes, sizeof(T));
}

void put_bytes(std::string& out, int field, const std::string& bytes) {
  put_tag(out, field, 2);
  put_varint(out, bytes.size());
  out += bytes;
}

// Event fields: wall_time = 1 (double), step = 2 (int64), file_version = 3 (string),
// summary = 5 (Summary). Summary: value = 1 (repeated Value). Value: tag = 1 (string),
// simple_value = 2 (float).
std::string event(double wall_time, int64_t step) {
  std::string e;
  put_tag(e, 1, 1);
  put_fixed(e, wall_time);
  put_tag(e, 2, 0);
  put_varint(e, static_cast<uint64_t>(step));
  return e;
}

double unix_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

// ---------------------------------------------------------------- CRC-32C

uint32_t crc32c(const void* data, size_t size) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0x82f63b78u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t crc = 0xffffffffu;
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return crc ^ 0xffffffffu;
}

uint32_t masked_crc32c(const void* data, size_t size) {
  const uint32_t crc = crc32c(data, size);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

// ---------------------------------------------------------------- JsonLinesBackend

JsonLinesBackend::JsonLinesBackend(std::string path)
    : path_(std::move(path)), out_(open_for_append(path_)) {}

void JsonLinesBackend::write(int64_t step, const std::map<std::string, double>& row) {
  nlohmann::ordered_json line;  // "step" first, then the metrics by name
  line["step"] = step;
  for (const auto& [name, value] : row) {
    if (!std::isfinite(value)) continue;  // JSON has no NaN or infinity
    line[name] = value;
  }
  out_ << line.dump() << "\n";
  out_.flush();
  check_written(out_, path_);
}

// ---------------------------------------------------------------- TensorBoardBackend

TensorBoardBackend::TensorBoardBackend(const std::string& run_dir) {
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  const double now = unix_time();
  path_ = run_dir + "/events.out.tfevents." + std::to_string(static_cast<int64_t>(now)) + "." +
          host + "." + std::to_string(getpid());
  out_ = open_for_append(path_);
  std::string first = event(now, 0);
  put_bytes(first, 3, "brain.Event:2");
  write_record(first);
}

void TensorBoardBackend::write(int64_t step, const std::map<std::string, double>& row) {
  std::string summary;
  for (const auto& [name, value] : row) {
    if (!std::isfinite(value)) continue;
    std::string v;
    put_bytes(v, 1, name);
    put_tag(v, 2, 5);
    put_fixed(v, static_cast<float>(value));
    put_bytes(summary, 1, v);
  }
  std::string e = event(unix_time(), step);
  put_bytes(e, 5, summary);
  write_record(e);
}

void TensorBoardBackend::write_video(int64_t step, const std::string& tag, const std::string& gif,
                                     int64_t width, int64_t height) {
  // Summary.Image: height = 1, width = 2, colorspace = 3 (3: RGB), encoded_image_string = 4;
  // Value: tag = 1, image = 4.
  std::string image;
  put_tag(image, 1, 0);
  put_varint(image, static_cast<uint64_t>(height));
  put_tag(image, 2, 0);
  put_varint(image, static_cast<uint64_t>(width));
  put_tag(image, 3, 0);
  put_varint(image, 3);
  put_bytes(image, 4, gif);
  std::string value;
  put_bytes(value, 1, tag);
  put_bytes(value, 4, image);
  std::string summary;
  put_bytes(summary, 1, value);
  std::string e = event(unix_time(), step);
  put_bytes(e, 5, summary);
  write_record(e);
}

void TensorBoardBackend::write_record(const std::string& data) {
  const uint64_t length = data.size();
  std::string header;
  put_fixed(header, length);
  put_fixed(header, masked_crc32c(&length, sizeof(length)));
  std::string footer;
  put_fixed(footer, masked_crc32c(data.data(), data.size()));
  out_ << header << data << footer;
  out_.flush();
  check_written(out_, path_);
}

// ---------------------------------------------------------------- make_metrics_backend

namespace {

// The backends: the one table that both names and builds them ("csv" builds nothing: the
// Trainer writes metrics.csv itself).
using BackendTable =
    tensordict::NameTable<std::unique_ptr<MetricsBackend> (*)(const std::string& run_dir)>;
const BackendTable& backend_table() {
  static const BackendTable table(
      "backend",
      {
          {"csv", [](const std::string&) -> std::unique_ptr<MetricsBackend> { return nullptr; }},
          {"jsonl",
           [](const std::string& run_dir) -> std::unique_ptr<MetricsBackend> {
             return std::make_unique<JsonLinesBackend>(run_dir + "/metrics.jsonl");
           }},
          {"tensorboard",
           [](const std::string& run_dir) -> std::unique_ptr<MetricsBackend> {
             return std::make_unique<TensorBoardBackend>(run_dir);
           }},
      });
  return table;
}

}  // namespace

const std::vector<std::string>& metrics_backend_names() { return backend_table().names(); }

std::unique_ptr<MetricsBackend> make_metrics_backend(const std::string& name,
                                                     const std::string& run_dir) {
  return backend_table().at(name, "make_metrics_backend")(run_dir);
}

}  // namespace tdrl::apps
