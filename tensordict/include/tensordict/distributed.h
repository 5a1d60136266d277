#pragma once

/// Moving whole TensorDicts between processes over torch.distributed (c10d).
///
/// Any c10d process group works (Gloo with a TCPStore on CPU, NCCL on GPUs): the functions take
/// compat::ProcessGroup, the class c10d's groups derive from (c10d::Backend on LibTorch 2.x,
/// c10d::ProcessGroup on 1.x; tensordict/torch_compat.h). Both sides must
/// hold TensorDicts of the same structure: the same leaf key paths with the same dtypes and
/// shapes. Leaves travel in *transport order*: every tensor leaf's full key path, sorted
/// lexicographically part by part (("a"), ("b", "c"), ("b", "d"), ...), whatever the
/// insertion order on either side. Non-tensor entries are not transported.
///
/// Each transfer first sends a description of the structure (every leaf's path, dtype and
/// shape in transport order; for send, also the batch sizes of the root and of every nested
/// TensorDict and the entries' insertion order); a receiver whose TensorDict differs still
/// drains the transfer (so the sender never hangs) and then throws tensordict::Error naming
/// the first differing leaf and both descriptions of it; its TensorDict is left unchanged.
/// `recv_new` needs no TensorDict: it builds one of the sender's structure (Python
/// tensordict's `from_remote_init`, for every transfer). Errors of the process
/// group itself (a peer gone, a timeout) come through as the group reports them.
///
/// Thread safety: one transfer at a time per (group, peer, tag); different tags may overlap.
///
/// Example (rank 1 sends to rank 0):
/// ```
/// auto store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", store_options);
/// auto group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, 2, gloo_options);
/// if (rank == 1) tensordict::send(td, *group, /*dst=*/0);
/// else tensordict::recv(td, *group, /*src=*/1);   // td: same structure, filled in place
/// ```

#include <future>
#include <optional>
#include <string>
#include <vector>

#include <tensordict/torch_compat.h>
#include TDRL_C10D_GROUP_HEADER

#include <tensordict/tensor_dict.h>

namespace tensordict {

/// The completion of an isend/irecv. `wait` blocks until the transfer is done and rethrows
/// its error, if any. Destroying an unfinished future waits for it.
class TransferFuture {
 public:
  explicit TransferFuture(std::shared_future<void> done) : done_(std::move(done)) {}
  void wait() const { done_.get(); }
  bool is_completed() const {
    return done_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  }

 private:
  std::shared_future<void> done_;
};

/// The key paths of `td`'s tensor leaves in transport order.
std::vector<NestedKey> transport_order(const TensorDict& td);

/// Sends every tensor leaf of `td` to rank `dst`.
void send(const TensorDict& td, compat::ProcessGroup& group, int dst, int tag = 0);
/// Receives into `td`'s existing tensors from rank `src` (in place: aliases see the data).
void recv(const TensorDict& td, compat::ProcessGroup& group, int src, int tag = 0);
/// Receives what rank `src` sends into a new TensorDict of the sender's structure: its batch
/// size, nested TensorDicts (with their batch sizes), leaves (dtypes, shapes) and insertion
/// order, the leaves allocated on `device` (default CPU). Non-tensor entries are not
/// transported. Throws tensordict::Error for a malformed header (after draining the transfer).
TensorDict recv_new(compat::ProcessGroup& group, int src, int tag = 0,
                    const std::optional<torch::Device>& device = std::nullopt);
/// `send` on a background thread, which shares ownership of `group`; `td`'s tensors must not
/// change until the future is done.
TransferFuture isend(const TensorDict& td, c10::intrusive_ptr<compat::ProcessGroup> group, int dst,
                     int tag = 0);
/// `recv` on a background thread, which shares ownership of `group`; `td` must not be used
/// until the future is done.
TransferFuture irecv(const TensorDict& td, c10::intrusive_ptr<compat::ProcessGroup> group, int src,
                     int tag = 0);
/// Every rank's `td` takes rank `root`'s values.
void broadcast(const TensorDict& td, compat::ProcessGroup& group, int root);
/// Every leaf is reduced across ranks with `op` (sum by default), in place on every rank.
void all_reduce(const TensorDict& td, compat::ProcessGroup& group,
                c10d::ReduceOp op = c10d::ReduceOp::SUM);

}  // namespace tensordict
