// Saving a TensorDict as a folder of raw files plus meta.json, and mapping it back.

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include <tensordict/lazy_stacked_tensordict.h>
#include <tensordict/tensor_dict.h>

#include "detail/folder_files.h"
#include "detail/impl.h"
#include "detail/meta.h"

namespace tensordict {

namespace fs = std::filesystem;

namespace {

constexpr const char* kMetaFile = "meta.json";

struct WriteJob {
  std::string path;
  torch::Tensor tensor;
};

// Keys become file names through detail::encode_key, which keeps every key inside its folder;
// only the names meta.json uses itself are refused.
void check_key_can_be_saved(const std::string& key, const std::string& dir) {
  TDRL_CHECK(!detail::is_reserved_meta_key(key), ValueError, "TensorDict::memmap: key '", key,
             "' in '", dir,
             "' cannot be saved: meta.json uses that name itself (reserved: _type, _tdrl, shape, "
             "device); rename it first");
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  TDRL_CHECK(out, Error, "TensorDict::memmap: cannot write '", path, "': ", std::strerror(errno));
}

void create_folder(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  TDRL_CHECK(!ec, Error, "TensorDict::memmap: cannot create folder '", dir, "': ", ec.message());
}

// Creates the folder tree and meta.json files; collects the leaf files to write.
void plan_folder(const TensorDict& td, const std::string& dir, std::vector<WriteJob>& jobs) {
  TDRL_CHECK(!td.is_sub_tensordict(), Error,
             "TensorDict::memmap: cannot save a sub-tensordict view; save its parent or a "
             "to_tensordict() copy");
  create_folder(dir);
  detail::FolderMeta meta;
  meta.batch_size = td.batch_size();
  meta.device = td.device();
  if (td.is_lazy_stack()) {
    LazyStackedTensorDict lazy(td);
    meta.type = detail::FolderType::kLazyStack;
    meta.stack_dim = lazy.stack_dim();
    meta.num_members = static_cast<int64_t>(lazy.tensordicts().size());
    for (size_t i = 0; i < lazy.tensordicts().size(); ++i)
      plan_folder(lazy.tensordicts()[i], dir + "/" + std::to_string(i), jobs);
    write_text(dir + "/" + kMetaFile, detail::dump_meta(meta));
    return;
  }
  detail::for_each_entry(td, [&](const std::string& key, const Value& v) {
    check_key_can_be_saved(key, dir);
    meta.order.push_back(key);
    const std::string path = dir + "/" + detail::encode_key(key);
    if (auto* t = std::get_if<torch::Tensor>(&v)) {
      meta.leaves[key] = {t->sizes().vec(), t->scalar_type()};
      jobs.push_back({path + ".memmap", *t});
    } else if (auto* nested = std::get_if<TensorDict>(&v)) {
      // Python records each nested TensorDict by the name of its class.
      meta.subfolders[key] = nested->is_lazy_stack() ? "LazyStackedTensorDict" : "TensorDict";
      plan_folder(*nested, path, jobs);
    } else {
      // A folder of its own, as Python keeps its NonTensorData and NonTensorStack.
      detail::FolderMeta value;
      value.type = detail::FolderType::kNonTensor;
      value.non_tensor = detail::non_tensor_meta(std::get<NonTensorData>(v), key);
      const bool uniform = value.non_tensor.uniform || value.non_tensor.batch_size.empty();
      meta.subfolders[key] = uniform ? "NonTensorData" : "NonTensorStack";
      create_folder(path);
      write_text(path + "/" + kMetaFile, detail::dump_meta(value));
    }
  });
  write_text(dir + "/" + kMetaFile, detail::dump_meta(meta));
}

void write_leaf(const WriteJob& job, bool like) {
  const int fd = open(job.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  TDRL_CHECK(!(fd < 0), Error, "TensorDict::memmap: cannot create '", job.path,
             "': ", std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  const int64_t nbytes = job.tensor.numel() * static_cast<int64_t>(job.tensor.element_size());
  if (like) {
    TDRL_CHECK(ftruncate(fd, nbytes) == 0, Error, "TensorDict::memmap_like: cannot size '",
               job.path, "': ", std::strerror(errno));
    return;
  }
  torch::Tensor data = job.tensor.detach().to(torch::kCPU).contiguous();
  const char* p = static_cast<const char*>(data.data_ptr());
  int64_t left = nbytes;
  while (left > 0) {
    const ssize_t n = ::write(fd, p, static_cast<size_t>(left));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error("TensorDict::memmap: cannot write '" + job.path + "': " + std::strerror(errno));
    }
    p += n;
    left -= n;
  }
}

// Runs the jobs on `num_threads` threads; the first error is rethrown after all have stopped.
void run_jobs(const std::vector<WriteJob>& jobs, bool like, int num_threads) {
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < jobs.size();) {
      try {
        write_leaf(jobs[i], like);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        next = jobs.size();
      }
    }
  };
  const int n = std::max(1, std::min<int>(num_threads, static_cast<int>(jobs.size())));
  std::vector<std::thread> threads;
  for (int i = 1; i < n; ++i) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

// The folder `prefix` names, without a trailing separator ("a/b/" is "a/b"), so that the
// temporary and replaced folders become its siblings, not its children.
fs::path folder_path(const std::string& prefix) {
  fs::path p = fs::path(prefix).lexically_normal();
  if (!p.has_filename() && p.has_relative_path()) p = p.parent_path();
  return p;
}

std::string unique_suffix() {
  static std::atomic<uint64_t> counter{0};
  return "." + std::to_string(getpid()) + "." + std::to_string(counter.fetch_add(1));
}

// Removes the siblings `<target>.tmp.<pid>.<n>` and `<target>.old.<pid>.<n>` that a save killed
// midway left behind: those of processes that no longer exist (a live process may be saving).
void remove_stale_leftovers(const fs::path& target) {
  std::error_code ec;
  const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const std::string name = target.filename().string();
  for (const auto& entry : fs::directory_iterator(parent, ec)) {
    const std::string sibling = entry.path().filename().string();
    for (const char* kind : {".tmp.", ".old."}) {
      const std::string head = name + kind;
      if (sibling.rfind(head, 0) != 0) continue;
      const std::string rest = sibling.substr(head.size());
      const auto dot = rest.find('.');
      if (dot == std::string::npos || dot == 0) continue;
      const std::string pid_text = rest.substr(0, dot);
      if (pid_text.find_first_not_of("0123456789") != std::string::npos) continue;
      const long pid = std::strtol(pid_text.c_str(), nullptr, 10);
      if (pid <= 0 || pid == getpid()) continue;
      if (kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
      std::error_code ignored;
      fs::remove_all(entry.path(), ignored);
    }
  }
}

// Puts the folder `tmp` at `target`: an atomic exchange when a folder is there (so that a
// crash at any moment leaves either the old folder or the new one at `target`), a rename
// otherwise. The replaced folder ends at `tmp` and is removed.
void install_folder(const fs::path& tmp, const fs::path& target, const std::string& prefix) {
  std::error_code ec;
  const bool replace = fs::exists(fs::symlink_status(target, ec));
  if (replace && renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) == 0) {
    // Mappings of the replaced files stay valid: unlinking keeps mapped inodes alive.
    fs::remove_all(tmp, ec);
    return;
  }
  if (replace && errno != EINVAL && errno != ENOSYS) {
    const std::string why = std::strerror(errno);
    std::error_code ignored;
    fs::remove_all(tmp, ignored);
    throw Error("TensorDict::memmap: cannot replace '" + prefix + "': " + why);
  }
  // No exchange on this file system: move the old folder aside, then the new one in.
  const std::string old = target.string() + ".old" + unique_suffix();
  if (replace) {
    fs::rename(target, old, ec);
    if (ec) {
      std::error_code ignored;
      fs::remove_all(tmp, ignored);
      throw Error("TensorDict::memmap: cannot replace '" + prefix + "': " + ec.message());
    }
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    std::error_code ignored;
    if (replace) fs::rename(old, target, ignored);
    fs::remove_all(tmp, ignored);
    throw Error("TensorDict::memmap: cannot move the written folder to '" + prefix +
                "': " + ec.message());
  }
  if (replace) fs::remove_all(old, ec);
}

// Writes `td` under a temporary name and renames it to `prefix` once every file is complete,
// so a folder at `prefix` is never half written.
void write_folder(const TensorDict& td, const std::string& prefix, bool like, int num_threads) {
  TDRL_CHECK(!prefix.empty(), ValueError, "TensorDict::memmap: the prefix is empty");
  const fs::path target = folder_path(prefix);
  std::error_code ec;
  TDRL_CHECK(!(fs::exists(target, ec) && !fs::is_directory(target, ec)), Error,
             "TensorDict::memmap: '", prefix, "' exists and is not a folder");
  // Only an earlier save is replaced: a folder of other files is never emptied.
  TDRL_CHECK(!(fs::is_directory(target, ec) && !fs::is_empty(target, ec) &&
               !fs::exists(fs::symlink_status(target / kMetaFile, ec))),
             Error, "TensorDict::memmap: '", prefix,
             "' is a folder holding other files, not an earlier save (it has no meta.json); save "
             "into a new or empty folder, or a subfolder of this one");
  remove_stale_leftovers(target);
  const std::string tmp = target.string() + ".tmp" + unique_suffix();
  try {
    std::vector<WriteJob> jobs;
    plan_folder(td, tmp, jobs);
    run_jobs(jobs, like, num_threads);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  install_folder(tmp, target, prefix);
}

// The largest meta.json read (non-tensor values live in it; tensors never do).
constexpr int64_t kMaxMetaBytes = int64_t{256} << 20;

// The text of the folder's meta.json, opened as a folder file (no link, nothing that blocks).
std::string read_text(const std::string& path) {
  std::error_code ec;
  TDRL_CHECK(fs::exists(fs::symlink_status(path, ec)), Error,
             "TensorDict::load_memmap: cannot read '", path,
             "': no such file (is this a folder written by memmap or save?)");
  const int fd = detail::open_folder_file(path, O_RDONLY, "TensorDict::load_memmap");
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  struct stat st {};
  TDRL_CHECK(fstat(fd, &st) == 0 && st.st_size <= kMaxMetaBytes, Error,
             "TensorDict::load_memmap: '", path, "' holds ", std::to_string(st.st_size),
             " bytes, more than a meta.json may (", std::to_string(kMaxMetaBytes), ")");
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::read(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    TDRL_CHECK(n > 0, Error, "TensorDict::load_memmap: cannot read '", path,
               "': ", n < 0 ? std::strerror(errno) : "it shrank while being read");
    done += static_cast<size_t>(n);
  }
  return text;
}

// Throws Error unless `dir`, a folder inside a folder being loaded, is a folder and not a
// symbolic link (which could lead anywhere).
void require_own_folder(const std::string& dir) {
  std::error_code ec;
  const auto status = fs::symlink_status(dir, ec);
  TDRL_CHECK(!fs::is_symlink(status), Error, "TensorDict::load_memmap: '", dir,
             "' is a symbolic link; a saved folder must hold its own folders (links are never "
             "followed): replace the link by a copy");
  TDRL_CHECK(fs::is_directory(status), Error, "TensorDict::load_memmap: '", dir,
             "' is not a folder", fs::exists(status) ? "" : " (it is missing)");
}

// Where entry `key` of the folder `dir` is: under Python's percent-encoded name, or, for a
// folder written before names were encoded (tensordict 0.4, tdrl before format version 1),
// under the key itself where that is a file name and the encoded name is missing.
std::string entry_path(const std::string& dir, const std::string& key, const std::string& suffix) {
  const std::string encoded = detail::encode_key(key);
  const std::string path = dir + "/" + encoded + suffix;
  if (encoded == key || !detail::is_plain_file_name(key)) return path;
  std::error_code ec;
  if (fs::exists(fs::symlink_status(path, ec))) return path;
  const std::string plain = dir + "/" + key + suffix;
  return fs::exists(fs::symlink_status(plain, ec)) ? plain : path;
}

detail::FolderMeta read_meta(const std::string& dir) {
  std::error_code ec;
  TDRL_CHECK(fs::is_directory(dir, ec), Error, "TensorDict::load_memmap: '", dir,
             "' is not a folder");
  const std::string meta_path = dir + "/" + kMetaFile;
  return detail::parse_meta(read_text(meta_path), meta_path);
}

TensorDict load_tensordict(const std::string& dir, const detail::FolderMeta& meta, MemmapMode mode);

// A folder that must hold a TensorDict or a lazy stack (the prefix, a lazy stack's member).
TensorDict load_folder(const std::string& dir, MemmapMode mode) {
  const detail::FolderMeta meta = read_meta(dir);
  TDRL_CHECK(meta.type != detail::FolderType::kNonTensor, Error, "TensorDict::load_memmap: '", dir,
             "/", kMetaFile,
             "' describes a non-tensor value (NonTensorData or NonTensorStack), not a "
             "TensorDict; load the folder that holds it");
  return load_tensordict(dir, meta, mode);
}

// The members are the subfolders "0", "1", ...: as many as tdrl recorded, or (a folder Python
// wrote) as many as there are.
TensorDict load_lazy_stack(const std::string& dir, const detail::FolderMeta& meta,
                           MemmapMode mode) {
  const std::string meta_path = dir + "/" + kMetaFile;
  std::error_code ec;
  int64_t count = 0;
  if (meta.num_members) {
    count = *meta.num_members;
  } else {
    while (count < detail::kMaxStackMembers &&
           fs::exists(fs::symlink_status(dir + "/" + std::to_string(count), ec)))
      ++count;
    TDRL_CHECK(count > 0, Error, "TensorDict::load_memmap: the lazy stack '", meta_path,
               "' has no member folders (0, 1, ...)");
  }
  std::vector<TensorDict> members;
  for (int64_t i = 0; i < count; ++i) {
    require_own_folder(dir + "/" + std::to_string(i));
    members.push_back(load_folder(dir + "/" + std::to_string(i), mode));
  }
  TensorDict stacked;
  try {
    stacked = stack(members, meta.stack_dim);
  } catch (const Error& e) {
    throw Error("TensorDict::load_memmap: the members in '" + dir + "' do not stack: " + e.what());
  }
  TDRL_CHECK(!(meta.stacked_batch_size && stacked.batch_size() != *meta.stacked_batch_size), Error,
             "TensorDict::load_memmap: '", meta_path, "' declares batch_size ",
             shape_str(meta.stacked_batch_size.value_or(BatchSize{})), " but its members stack to ",
             shape_str(stacked.batch_size()));
  return stacked;
}

// The keys of a TensorDict folder in the order to set them: tdrl's record (which must name
// every entry, or one would be dropped), else the file's order, then the subfolders holding a
// meta.json that the file does not name (tensordict before 0.4 did not list them).
std::vector<std::string> load_order(const std::string& dir, const detail::FolderMeta& meta,
                                    const std::string& meta_path) {
  std::vector<std::string> order = meta.order;
  const auto listed = [&](const std::string& key) {
    return std::find(order.begin(), order.end(), key) != order.end();
  };
  if (meta.order_recorded) {
    std::vector<std::string> entries;
    for (const auto& [key, leaf] : meta.leaves) entries.push_back(key);
    for (const auto& [key, nt] : meta.non_tensors) entries.push_back(key);
    for (const auto& [key, type] : meta.subfolders) entries.push_back(key);
    for (const auto& key : entries)
      TDRL_CHECK(listed(key), Error, "TensorDict::load_memmap: '", meta_path, "' has entry '", key,
                 "' missing from its _tdrl.order; the file was edited or is damaged");
    return order;
  }
  // Format version 1 lists every entry, and names folders by encoded keys, not by the keys.
  if (meta.format_version >= 1) return order;
  std::error_code ec;
  std::vector<std::string> unlisted;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (fs::is_directory(entry.symlink_status(ec)) && !listed(name) &&
        fs::exists(fs::symlink_status(entry.path() / kMetaFile, ec)))
      unlisted.push_back(name);
  }
  std::sort(unlisted.begin(), unlisted.end());
  order.insert(order.end(), unlisted.begin(), unlisted.end());
  return order;
}

// A tensor leaf. Python writes no file for a leaf without elements (it has no bytes to map).
torch::Tensor load_leaf(const std::string& dir, const std::string& key,
                        const detail::LeafMeta& leaf, MemmapMode mode) {
  const std::string path = entry_path(dir, key, ".memmap");
  std::error_code ec;
  const bool no_elements =
      std::any_of(leaf.shape.begin(), leaf.shape.end(), [](int64_t d) { return d == 0; });
  if (no_elements && !fs::exists(fs::symlink_status(path, ec)))
    return torch::empty(leaf.shape, torch::TensorOptions().dtype(leaf.dtype));
  return detail::map_folder_file(path, leaf.dtype, leaf.shape, mode);
}

// An entry in a folder of its own: a TensorDict, a lazy stack or a non-tensor value.
Value load_subfolder(const std::string& dir, MemmapMode mode) {
  require_own_folder(dir);
  const detail::FolderMeta meta = read_meta(dir);
  if (meta.type == detail::FolderType::kNonTensor)
    return detail::non_tensor_from_meta(meta.non_tensor);
  return load_tensordict(dir, meta, mode);
}

TensorDict load_tensordict(const std::string& dir, const detail::FolderMeta& meta,
                           MemmapMode mode) {
  const std::string meta_path = dir + "/" + kMetaFile;
  if (meta.type == detail::FolderType::kLazyStack) return load_lazy_stack(dir, meta, mode);
  TDRL_CHECK(!(meta.device && meta.device->type() == c10::DeviceType::Meta), Error,
             "TensorDict::load_memmap: '", meta_path,
             "' names device 'meta', which holds no data; a saved folder's device is where its "
             "data goes (cpu, cuda:N)");
  const std::vector<std::string> order = load_order(dir, meta, meta_path);
  auto td = TensorDict::empty(meta.batch_size);
  for (const auto& key : order) {
    // Only `set` is guarded: a leaf file of the wrong size reports itself.
    Value value;
    if (auto leaf = meta.leaves.find(key); leaf != meta.leaves.end()) {
      value = load_leaf(dir, key, leaf->second, mode);
    } else if (auto nt = meta.non_tensors.find(key); nt != meta.non_tensors.end()) {
      value = detail::non_tensor_from_meta(nt->second);
    } else {
      value = load_subfolder(entry_path(dir, key, ""), mode);
    }
    try {
      td.set(key, value);
    } catch (const ShapeError& e) {
      throw Error("TensorDict::load_memmap: entry '" + key + "' of '" + meta_path +
                  "' does not fit batch_size " + shape_str(meta.batch_size) + ": " + e.what());
    }
  }
  if (meta.device && *meta.device != torch::Device(torch::kCPU)) {
    try {
      return td.to(*meta.device);
    } catch (const c10::Error& e) {
      throw DeviceError("TensorDict::load_memmap: '" + meta_path + "' asks for device " +
                        meta.device->str() +
                        ", which is not available: " + e.what_without_backtrace());
    }
  }
  if (meta.device) td.impl()->set_device(meta.device);
  return td;
}

// Replaces the tensors of `dst` by those of `src` (same structure), member by member.
void adopt(const TensorDict& dst, const TensorDict& src) {
  if (dst.is_lazy_stack()) {
    const auto& a = LazyStackedTensorDict(dst).tensordicts();
    const auto& b = LazyStackedTensorDict(src).tensordicts();
    for (size_t i = 0; i < a.size(); ++i) adopt(a[i], b[i]);
    return;
  }
  for (const auto& key : dst.impl()->keys()) {
    auto v = dst.impl()->find(key);
    if (std::holds_alternative<torch::Tensor>(*v)) {
      dst.impl()->store(key, src.get(key));
    } else if (auto* nested = std::get_if<TensorDict>(&*v)) {
      adopt(*nested, src.get_tensordict(key));
    }
  }
}

}  // namespace

const TensorDict& TensorDict::memmap_(const std::string& prefix, int num_threads) const {
  write_folder(*this, prefix, /*like=*/false, num_threads);
  adopt(*this, load_folder(prefix, MemmapMode::kReadWrite));
  return *this;
}

TensorDict TensorDict::memmap(const std::string& prefix, int num_threads) const {
  write_folder(*this, prefix, /*like=*/false, num_threads);
  return load_folder(prefix, MemmapMode::kReadWrite);
}

TensorDict TensorDict::memmap_like(const std::string& prefix, int num_threads) const {
  write_folder(*this, prefix, /*like=*/true, num_threads);
  return load_folder(prefix, MemmapMode::kReadWrite);
}

TensorDict TensorDict::load_memmap(const std::string& prefix, MemmapMode mode) {
  return load_folder(folder_path(prefix).string(), mode);
}

void TensorDict::save(const std::string& prefix, int num_threads) const {
  write_folder(*this, prefix, /*like=*/false, num_threads);
}

TensorDict TensorDict::load(const std::string& prefix, MemmapMode mode) {
  return load_memmap(prefix, mode);
}

namespace {

// True when `td` stores at least one leaf and `pred` holds for every stored leaf: an empty
// TensorDict is neither memory-mapped nor shared.
template <class Pred>
bool every_stored_leaf(const TensorDict& td, Pred pred) {
  bool any = false;
  bool all = true;
  detail::for_each_stored_leaf(td, [&](const torch::Tensor& t) {
    any = true;
    all = all && pred(t);
  });
  return any && all;
}

}  // namespace

bool TensorDict::is_memmap() const {
  return every_stored_leaf(*this,
                           [](const torch::Tensor& t) { return MemoryMappedTensor::is_memmap(t); });
}

const TensorDict& TensorDict::share_memory_() const {
  detail::for_each_stored_leaf(*this, [](const torch::Tensor& t) { tensordict::share_memory_(t); });
  return *this;
}

bool TensorDict::is_shared() const {
  return every_stored_leaf(*this, [](const torch::Tensor& t) { return tensordict::is_shared(t); });
}

}  // namespace tensordict
