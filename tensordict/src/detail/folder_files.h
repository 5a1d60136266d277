#pragma once

// Opening the files of a saved folder without trusting the folder (memmap.cpp, implemented in
// memmap_tensor.cpp): a folder may come from anyone, so nothing in it is followed outside it,
// and nothing in it can block a reader.

#include <string>

#include <torch/types.h>

#include <tensordict/memmap_tensor.h>

namespace tensordict::detail {

/// Opens `path` (with `flags`, O_RDONLY or O_RDWR) as a file of a saved folder and returns the
/// descriptor. Throws Error naming `op` and the file, and saying what to change, unless it is
/// a regular file of the folder's own: a symbolic link is never followed, a FIFO, socket or
/// device is never opened in a way that blocks, and a file with other hard links (which may be
/// outside the folder) is refused.
int open_folder_file(const std::string& path, int flags, const std::string& op);

/// Maps the leaf file `filename` of a folder being loaded (opened as open_folder_file does);
/// otherwise as MemoryMappedTensor::from_filename.
torch::Tensor map_folder_file(const std::string& filename, torch::Dtype dtype,
                              c10::IntArrayRef shape, MemmapMode mode);

}  // namespace tensordict::detail
