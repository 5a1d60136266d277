#pragma once

#include <optional>
#include <string>

#include <torch/types.h>

namespace tensordict {

/// How a file is mapped.
enum class MemmapMode {
  /// Reads and writes go to the file (a shared mapping).
  kReadWrite,
  /// The file is never written: pages are read from it, and writes to the tensor stay in
  /// the process (a private copy-on-write mapping), so a loaded dataset cannot be corrupted.
  kReadOnly,
};

/// Tensors whose storage is a memory-mapped file.
///
/// The tensors these functions return are ordinary CPU `torch::Tensor`s: every LibTorch
/// operation works on them, and views share the mapping. The mapping lives as long as any
/// tensor uses its storage; writes through a kReadWrite mapping reach the file (the OS writes
/// dirty pages back; `flush` forces it). Files hold the raw elements, C-contiguous,
/// little-endian, with no header. Mapping a file costs no read: pages are read on first touch.
///
/// Errors: a file that cannot be created, opened or mapped, or whose size does not match the
/// shape and dtype, throws tensordict::Error naming the file, the expected and the actual size.
/// Thread safety: the functions are safe to call concurrently on different files.
///
/// Example:
/// ```
/// auto images = MemoryMappedTensor::empty("/data/images.memmap", {1000000, 3, 64, 64},
/// torch::kUInt8); images.index_put_({0}, frame);                 // written to the file auto again
/// = MemoryMappedTensor::from_filename("/data/images.memmap", torch::kUInt8,
///                                                {1000000, 3, 64, 64}, MemmapMode::kReadOnly);
/// ```
class MemoryMappedTensor {
 public:
  /// Creates (or truncates) `filename` to hold `shape` elements of `dtype` and maps it
  /// read-write. The contents are zero (a new file is sparse until written).
  static torch::Tensor empty(const std::string& filename, c10::IntArrayRef shape,
                             torch::Dtype dtype);
  /// Creates `filename` holding a copy of `tensor` (any device, any layout of strides) and
  /// maps it read-write.
  static torch::Tensor from_tensor(const std::string& filename, const torch::Tensor& tensor);
  /// Maps an existing file of `shape` elements of `dtype`.
  static torch::Tensor from_filename(const std::string& filename, torch::Dtype dtype,
                                     c10::IntArrayRef shape,
                                     MemmapMode mode = MemmapMode::kReadWrite);
  /// True when `tensor`'s storage is a mapping made by this class.
  static bool is_memmap(const torch::Tensor& tensor);
  /// The mapped file behind `tensor`, or nothing for an ordinary tensor.
  static std::optional<std::string> filename(const torch::Tensor& tensor);
  /// Writes the dirty pages of `tensor`'s mapping back to its file (msync); no-op for others.
  static void flush(const torch::Tensor& tensor);
};

/// Moves `tensor`'s storage into shared memory (an anonymous shared mapping), in place: every
/// tensor viewing that storage follows, and processes forked afterwards see each other's
/// writes. CPU tensors only (others are left as they are: CUDA memory is already shareable);
/// no-op when the storage is already shared or memory-mapped. Throws Error when the shared
/// mapping cannot be made.
void share_memory_(const torch::Tensor& tensor);
/// True when `tensor`'s storage is shared across processes: made by share_memory_, a
/// read-write MemoryMappedTensor, or CUDA memory.
bool is_shared(const torch::Tensor& tensor);

}  // namespace tensordict
