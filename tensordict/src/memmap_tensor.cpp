#include <tensordict/memmap_tensor.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <tensordict/errors.h>

#include "detail/folder_files.h"

namespace tensordict {

namespace {

// Owned by the storage's DataPtr; unmapped when the last tensor using the storage goes.
struct Mapping {
  void* address = nullptr;
  size_t size = 0;
  std::string filename;
  bool shared = true;  // MAP_SHARED (read-write) rather than a private copy-on-write view
};

void release_mapping(void* context) {
  auto* m = static_cast<Mapping*>(context);
  if (m->address) munmap(m->address, m->size);
  delete m;
}

std::string os_error(const std::string& what, const std::string& filename) {
  return what + " '" + filename + "': " + std::strerror(errno);
}

// Closes the descriptor on every path out of a function.
struct FileDescriptor {
  int fd;
  ~FileDescriptor() {
    if (fd >= 0) close(fd);
  }
};

int64_t byte_size(c10::IntArrayRef shape, torch::Dtype dtype) {
  int64_t n = c10::elementSize(dtype);
  for (int64_t d : shape) {
    TDRL_CHECK(!(d < 0), ShapeError, "MemoryMappedTensor: shape ", shape_str(shape),
               " has a negative dim");
    TDRL_CHECK(!__builtin_mul_overflow(n, d, &n), ShapeError, "MemoryMappedTensor: shape ",
               shape_str(shape), " is too large");
  }
  return n;
}

torch::Tensor map_file(const std::string& filename, int fd, size_t size, c10::IntArrayRef shape,
                       torch::Dtype dtype, MemmapMode mode) {
  auto* m = new Mapping{nullptr, size, filename, mode == MemmapMode::kReadWrite};
  if (size > 0) {
    const int flags = mode == MemmapMode::kReadWrite ? MAP_SHARED : MAP_PRIVATE;
    void* address = mmap(nullptr, size, PROT_READ | PROT_WRITE, flags, fd, 0);
    if (address == MAP_FAILED) {
      delete m;
      throw Error(os_error("MemoryMappedTensor: cannot map", filename));
    }
    m->address = address;
  }
  c10::DataPtr data(m->address, m, &release_mapping, c10::Device(c10::DeviceType::CPU));
  c10::Storage storage(c10::Storage::use_byte_size_t(), size, std::move(data),
                       /*allocator=*/nullptr, /*resizable=*/false);
  return torch::empty({0}, torch::TensorOptions().dtype(dtype))
      .set_(storage, 0, shape, c10::contiguous_strides(shape));
}

// Storage moved to shared memory by share_memory_: an anonymous MAP_SHARED region.
struct SharedRegion {
  void* address = nullptr;
  size_t size = 0;
};

void release_shared(void* context) {
  auto* r = static_cast<SharedRegion*>(context);
  if (r->address) munmap(r->address, r->size);
  delete r;
}

const Mapping* mapping_of(const torch::Tensor& tensor) {
  if (!tensor.defined() || !tensor.has_storage()) return nullptr;
  const auto& data = tensor.storage().data_ptr();
  if (data.get_deleter() != &release_mapping) return nullptr;
  return static_cast<const Mapping*>(data.get_context());
}

}  // namespace

void share_memory_(const torch::Tensor& tensor) {
  if (!tensor.defined() || !tensor.is_cpu() || is_shared(tensor)) return;
  c10::StorageImpl* storage = tensor.storage().unsafeGetStorageImpl();
  const size_t size = storage->nbytes();
  auto* region = new SharedRegion{nullptr, size};
  if (size > 0) {
    void* address = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (address == MAP_FAILED) {
      delete region;
      throw Error("share_memory_: cannot map " + std::to_string(size) +
                  " bytes of shared memory: " + std::strerror(errno));
    }
    std::memcpy(address, storage->data(), size);
    region->address = address;
  }
  storage->set_data_ptr(
      c10::DataPtr(region->address, region, &release_shared, c10::Device(c10::DeviceType::CPU)));
}

bool is_shared(const torch::Tensor& tensor) {
  if (!tensor.defined()) return false;
  if (tensor.is_cuda()) return true;
  if (!tensor.has_storage()) return false;
  const auto& data = tensor.storage().data_ptr();
  if (data.get_deleter() == &release_shared) return true;
  const Mapping* m = mapping_of(tensor);
  return m != nullptr && m->shared;
}

torch::Tensor MemoryMappedTensor::empty(const std::string& filename, c10::IntArrayRef shape,
                                        torch::Dtype dtype) {
  const int64_t size = byte_size(shape, dtype);
  FileDescriptor file{open(filename.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
  TDRL_CHECK(!(file.fd < 0), Error, os_error("MemoryMappedTensor: cannot create", filename));
  TDRL_CHECK(ftruncate(file.fd, size) == 0, Error,
             (os_error("MemoryMappedTensor: cannot size to " + std::to_string(size) + " bytes",
                       filename)));
  return map_file(filename, file.fd, static_cast<size_t>(size), shape, dtype,
                  MemmapMode::kReadWrite);
}

torch::Tensor MemoryMappedTensor::from_tensor(const std::string& filename,
                                              const torch::Tensor& tensor) {
  TDRL_CHECK(tensor.defined(), ValueError, "MemoryMappedTensor::from_tensor: undefined tensor");
  auto out = empty(filename, tensor.sizes(), tensor.scalar_type());
  torch::NoGradGuard no_grad;
  out.copy_(tensor);
  return out;
}

namespace {

// Maps the open file `fd` after checking that its size fits `shape` and `dtype`.
torch::Tensor map_checked(const std::string& filename, int fd, torch::Dtype dtype,
                          c10::IntArrayRef shape, MemmapMode mode) {
  const int64_t expected = byte_size(shape, dtype);
  struct stat st {};
  TDRL_CHECK(fstat(fd, &st) == 0, Error, os_error("MemoryMappedTensor: cannot stat", filename));
  TDRL_CHECK(S_ISREG(st.st_mode), Error, "MemoryMappedTensor: '", filename,
             "' is not a regular file");
  TDRL_CHECK(st.st_size == expected, ShapeError, "MemoryMappedTensor: '", filename, "' holds ",
             std::to_string(st.st_size), " bytes but shape ", shape_str(shape), " of ",
             std::string(c10::toString(dtype)), " needs ", std::to_string(expected));
  return map_file(filename, fd, static_cast<size_t>(expected), shape, dtype, mode);
}

// What a non-regular file is, for messages.
const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return "not a regular file";
}

}  // namespace

torch::Tensor MemoryMappedTensor::from_filename(const std::string& filename, torch::Dtype dtype,
                                                c10::IntArrayRef shape, MemmapMode mode) {
  byte_size(shape, dtype);  // a bad shape is reported before the file is touched
  const int open_flags = (mode == MemmapMode::kReadWrite ? O_RDWR : O_RDONLY) | O_CLOEXEC;
  FileDescriptor file{open(filename.c_str(), open_flags)};
  TDRL_CHECK(!(file.fd < 0), Error, os_error("MemoryMappedTensor: cannot open", filename));
  return map_checked(filename, file.fd, dtype, shape, mode);
}

int detail::open_folder_file(const std::string& path, int flags, const std::string& op) {
  const int fd = open(path.c_str(), flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    TDRL_CHECK(errno != ELOOP, Error, op, ": '", path,
               "' is a symbolic link; a saved folder must hold its own files (links are never "
               "followed): replace the link by a copy of the file");
    throw Error(os_error(op + ": cannot open", path));
  }
  FileDescriptor file{fd};
  struct stat st {};
  TDRL_CHECK(fstat(fd, &st) == 0, Error, os_error(op + ": cannot stat", path));
  TDRL_CHECK(S_ISREG(st.st_mode), Error, op, ": '", path, "' is ", file_kind(st.st_mode),
             "; a saved folder holds only regular files and folders");
  TDRL_CHECK(st.st_nlink == 1, Error, op, ": '", path, "' has ", std::to_string(st.st_nlink),
             " hard links; a saved folder must hold its own files (a hard link may reach a "
             "file outside it): copy the folder without hard links (e.g. cp -r)");
  file.fd = -1;
  return fd;
}

torch::Tensor detail::map_folder_file(const std::string& filename, torch::Dtype dtype,
                                      c10::IntArrayRef shape, MemmapMode mode) {
  byte_size(shape, dtype);
  FileDescriptor file{open_folder_file(filename, mode == MemmapMode::kReadWrite ? O_RDWR : O_RDONLY,
                                       "TensorDict::load_memmap")};
  return map_checked(filename, file.fd, dtype, shape, mode);
}

bool MemoryMappedTensor::is_memmap(const torch::Tensor& tensor) {
  return mapping_of(tensor) != nullptr;
}

std::optional<std::string> MemoryMappedTensor::filename(const torch::Tensor& tensor) {
  if (const Mapping* m = mapping_of(tensor)) return m->filename;
  return std::nullopt;
}

void MemoryMappedTensor::flush(const torch::Tensor& tensor) {
  const Mapping* m = mapping_of(tensor);
  if (!m || !m->address) return;
  TDRL_CHECK(msync(m->address, m->size, MS_SYNC) == 0, Error,
             os_error("MemoryMappedTensor::flush: cannot write back", m->filename));
}

}  // namespace tensordict
