#include "tdrl/apps/checkpoint_store.h"

#include "tdrl/apps/run_dir.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>
#include <system_error>
#include <vector>

#include <tensordict/errors.h>
#include <zlib.h>

#include "run/file_util.h"

namespace tdrl::apps {

namespace fs = std::filesystem;
using detail::errno_text;
using detail::in_quotes;

namespace {

using detail::fsync_dir;
using detail::fsync_path;

constexpr const char* kCkptPrefix = "ckpt-";
constexpr const char* kTmpPrefix = "tmp-";
constexpr const char* kOldPrefix = "old-";
constexpr const char* kLatestFile = "latest";

std::string ckpt_name(int64_t frames) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "ckpt-%012lld", static_cast<long long>(frames));
  return buf;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

std::optional<int64_t> parse_ckpt_name(const std::string& name) {
  if (!starts_with(name, kCkptPrefix)) return std::nullopt;
  const std::string digits = name.substr(std::string(kCkptPrefix).size());
  if (digits.empty() || digits.size() > 18) return std::nullopt;
  int64_t frames = 0;
  auto result = std::from_chars(digits.data(), digits.data() + digits.size(), frames);
  if (result.ec != std::errc() || result.ptr != digits.data() + digits.size()) return std::nullopt;
  return frames;
}

/// fsyncs every file and folder under `root`, then `root`.
void sync_tree(const fs::path& root) {
  const std::string op = "CheckpointStore::write";
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    std::error_code ec;
    if (entry.is_symlink(ec)) continue;
    if (entry.is_regular_file(ec)) {
      fsync_path(entry.path(), false, op);
    } else if (entry.is_directory(ec)) {
      fsync_path(entry.path(), true, op);
    }
  }
  fsync_path(root, true, op);
}

constexpr const char* kManifestFile = "MANIFEST";

// A manifest's first line: its format, and the checksum its lines carry (zlib's CRC-32).
// Manifests of tdrl 0.1 have no such line (and a 64-bit checksum of their own).
constexpr const char* kManifestHeader = "tdrl-manifest 2 crc32";

/// The CRC-32 (zlib's) of `path`'s bytes, or nullopt when it cannot be read.
std::optional<uint32_t> file_checksum(const fs::path& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return std::nullopt;
  std::vector<unsigned char> buffer(1 << 20);
  uLong crc = crc32_z(0L, Z_NULL, 0);
  for (size_t n; (n = std::fread(buffer.data(), 1, buffer.size(), f)) > 0;)
    crc = crc32_z(crc, buffer.data(), n);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) return std::nullopt;
  return static_cast<uint32_t>(crc);
}

/// `sum` as a manifest writes it: 8 hex digits.
std::string checksum_text(uint32_t sum) {
  char hex[9];
  std::snprintf(hex, sizeof(hex), "%08x", static_cast<unsigned>(sum));
  return hex;
}

/// The manifest of the folder `root`: its format line, then its regular files (sorted), each
/// with checksum and size.
std::string manifest_of(const fs::path& root) {
  std::vector<std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    std::error_code ec;
    if (entry.is_regular_file(ec) && !entry.is_symlink(ec))
      files.push_back(fs::relative(entry.path(), root).string());
  }
  std::sort(files.begin(), files.end());
  std::ostringstream out;
  out << kManifestHeader << "\n";
  for (const auto& file : files) {
    const auto sum = file_checksum(root / file);
    if (!sum) {
      throw std::runtime_error("CheckpointStore::write: cannot read " +
                               in_quotes((root / file).string()) + ": " + errno_text(errno));
    }
    out << checksum_text(*sum) << " " << fs::file_size(root / file) << " " << file << "\n";
  }
  return out.str();
}

/// Removes the leftovers of an interrupted write: `tmp-*` and `old-*` folders, temporary
/// `latest` files.
void remove_stale(const fs::path& dir) {
  std::error_code ec;
  std::vector<fs::path> stale;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (starts_with(name, kTmpPrefix) || starts_with(name, kOldPrefix) ||
        starts_with(name, std::string(".") + kLatestFile + ".tmp-")) {
      stale.push_back(it->path());
    }
  }
  for (const auto& path : stale) fs::remove_all(path, ec);
}

}  // namespace

// ---------------------------------------------------------------- CheckpointStore

CheckpointStore::CheckpointStore(std::string dir, int keep) : dir_(std::move(dir)), keep_(keep) {
  TDRL_CHECK(!(keep_ < 1), tensordict::ValueError,
             "CheckpointStore: keep must be >= 1 (the newest checkpoint is "
             "always kept), got ",
             std::to_string(keep_));
}

void CheckpointStore::commit(const std::string& name,
                             const std::function<void(const std::string&)>& fill) const {
  const fs::path dir(dir_);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw std::runtime_error("CheckpointStore::write: cannot create " + in_quotes(dir_) + ": " +
                             ec.message());
  }
  remove_stale(dir);

  const std::string pid = std::to_string(::getpid());
  const fs::path final_path = dir / name;
  const fs::path tmp = dir / (kTmpPrefix + name + "-" + pid);
  if (!fs::create_directory(tmp, ec) || ec) {
    throw std::runtime_error("CheckpointStore::write: cannot create the temporary folder " +
                             in_quotes(tmp.string()) + ": " + ec.message());
  }
  try {
    fill(tmp.string());
    const std::string manifest = manifest_of(tmp);
    std::ofstream out(tmp / kManifestFile, std::ios::binary | std::ios::trunc);
    out << manifest;
    out.close();
    if (!out) {
      throw std::runtime_error("CheckpointStore::write: cannot write " +
                               in_quotes((tmp / kManifestFile).string()));
    }
    sync_tree(tmp);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }

  // Commit. A folder of the same name (the one `latest` may name, or best/) is replaced
  // atomically.
  fs::path leftover;
  if (::rename(tmp.c_str(), final_path.c_str()) != 0) {
    int error = errno;
    bool committed = false;
    if (error == ENOTEMPTY || error == EEXIST || error == EISDIR || error == ENOTDIR) {
#ifdef __linux__
      if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, final_path.c_str(), RENAME_EXCHANGE) == 0) {
        leftover = tmp;
        committed = true;
      }
#endif
      if (!committed) {
        const fs::path old = dir / (kOldPrefix + name + "-" + pid);
        if (::rename(final_path.c_str(), old.c_str()) == 0) {
          if (::rename(tmp.c_str(), final_path.c_str()) == 0) {
            leftover = old;
            committed = true;
          } else {
            error = errno;
            ::rename(old.c_str(), final_path.c_str());
          }
        } else {
          error = errno;
        }
      }
    }
    if (!committed) {
      fs::remove_all(tmp, ec);
      throw std::runtime_error("CheckpointStore::write: cannot rename " + in_quotes(tmp.string()) +
                               " to " + in_quotes(final_path.string()) + ": " + errno_text(error));
    }
  }
  fsync_dir(dir);
  if (!leftover.empty()) fs::remove_all(leftover, ec);
}

std::string CheckpointStore::write_named(const std::string& name,
                                         const std::function<void(const std::string&)>& fill) {
  TDRL_CHECK(!name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
                 !parse_ckpt_name(name) && !starts_with(name, kTmpPrefix) &&
                 !starts_with(name, kOldPrefix) && name != kLatestFile,
             tensordict::ValueError, "CheckpointStore::write_named: '", name,
             "' is not a plain folder name of its own (not ckpt-*, tmp-*, old-* or latest)");
  commit(name, fill);
  return (fs::path(dir_) / name).string();
}

std::string CheckpointStore::write(int64_t frames,
                                   const std::function<void(const std::string&)>& fill) {
  TDRL_CHECK(!(frames < 0), tensordict::ValueError,
             "CheckpointStore::write: frames must be >= 0, got ", std::to_string(frames));
  const std::string name = ckpt_name(frames);
  commit(name, fill);
  const fs::path dir(dir_);
  const fs::path final_path = dir / name;
  std::error_code ec;
  write_file_atomically((dir / kLatestFile).string(), name + "\n");

  // Keep the newest `keep` checkpoints, counting the one just written.
  std::vector<std::pair<int64_t, fs::path>> others;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string entry = it->path().filename().string();
    if (entry == name) continue;
    std::optional<int64_t> f = parse_ckpt_name(entry);
    if (f) others.emplace_back(*f, it->path());
  }
  std::sort(others.begin(), others.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = static_cast<size_t>(keep_ - 1); i < others.size(); ++i) {
    fs::remove_all(others[i].second, ec);
  }
  return final_path.string();
}

std::optional<std::string> CheckpointStore::damage(const std::string& folder) {
  std::ifstream in(fs::path(folder) / kManifestFile);
  if (!in) return std::nullopt;  // written before manifests (release 0.2): trusted until 0.3
  std::string line;
  if (!std::getline(in, line) || line != kManifestHeader)
    return "its MANIFEST was written by tdrl 0.1, whose checksums this tdrl does not compute; "
           "evaluate or resume it with tdrl 0.1, or start a new run";
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string hex, file;
    uintmax_t size = 0;
    if (!(fields >> hex >> size) || !std::getline(fields >> std::ws, file) || file.empty())
      return "its MANIFEST has a malformed line " + in_quotes(line);
    const fs::path path = fs::path(folder) / file;
    std::error_code ec;
    if (!fs::is_regular_file(fs::symlink_status(path, ec)))
      return in_quotes(path.string()) + " is missing";
    const auto actual = fs::file_size(path, ec);
    if (actual != size) {
      return in_quotes(path.string()) + " holds " + std::to_string(actual) + " bytes, " +
             std::to_string(size) + " when written (truncated or changed)";
    }
    const auto sum = file_checksum(path);
    if (!sum || hex != checksum_text(*sum))
      return in_quotes(path.string()) + " does not hold what was written (checksum mismatch)";
  }
  return std::nullopt;
}

std::optional<CheckpointStore::Intact> CheckpointStore::latest_intact(
    std::vector<std::string>* why) const {
  // Candidates: what `latest` names, then every checkpoint folder, newest first.
  std::vector<std::string> candidates;
  std::vector<std::string> passed_over;
  if (const auto named = latest()) {
    candidates.push_back(*named);
  } else {
    std::ifstream in(fs::path(dir_) / kLatestFile);
    std::string name;
    if (in && std::getline(in, name) && !name.empty())
      passed_over.push_back(in_quotes((fs::path(dir_) / kLatestFile).string()) + " names " +
                            in_quotes(name) + ", which is not a checkpoint folder here");
  }
  std::vector<std::pair<int64_t, std::string>> folders;
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    if (auto f = parse_ckpt_name(it->path().filename().string()))
      folders.emplace_back(*f, it->path().string());
  }
  std::sort(folders.begin(), folders.end(), std::greater<>());
  for (const auto& [frames, folder] : folders)
    if (candidates.empty() || folder != candidates.front()) candidates.push_back(folder);
  const std::string named = candidates.empty() ? std::string() : candidates.front();
  for (const auto& folder : candidates) {
    // Only the folder `latest` names may be of the format before manifests: an older one
    // without a MANIFEST may be half removed by a clean-up a kill interrupted.
    std::error_code exists_ec;
    if (folder != named && !fs::exists(fs::path(folder) / kManifestFile, exists_ec)) {
      passed_over.push_back(folder +
                            ": it has no MANIFEST (half removed, or written before "
                            "release 0.2)");
      continue;
    }
    if (const auto damaged = damage(folder)) {
      passed_over.push_back(folder + ": " + *damaged);
      continue;
    }
    return Intact{folder, passed_over};
  }
  if (why) *why = passed_over;
  return std::nullopt;
}

std::optional<std::string> CheckpointStore::latest() const {
  std::ifstream in(fs::path(dir_) / kLatestFile);
  if (!in) return std::nullopt;
  std::string name;
  std::getline(in, name);
  while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back()))) name.pop_back();
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
    return std::nullopt;
  }
  const fs::path path = fs::path(dir_) / name;
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return std::nullopt;
  return path.string();
}

}  // namespace tdrl::apps
