// TensorDict transport over c10d: a structure header, then the leaves in transport order.

#include <tensordict/distributed.h>

#include <algorithm>
#include <sstream>

#include "detail/impl.h"
#include "detail/meta.h"

namespace tensordict {

namespace {

struct Leaf {
  NestedKey key;
  torch::Tensor tensor;
};

// What a header says of one leaf.
struct LeafDescription {
  std::string key;
  torch::ScalarType dtype;
  std::vector<int64_t> shape;
};

std::vector<Leaf> ordered_leaves(const TensorDict& td) {
  std::vector<Leaf> leaves;
  detail::for_each_leaf(td, [&](const NestedKey& key, const torch::Tensor& t) {
    leaves.push_back({key, t});
  });
  std::sort(leaves.begin(), leaves.end(),
            [](const Leaf& a, const Leaf& b) { return a.key < b.key; });
  return leaves;
}

// One line per leaf: dtype, ndim, dims, then the key's repr prefixed by its length (so any
// character may appear in a key).
std::string encode(const std::vector<Leaf>& leaves) {
  std::ostringstream os;
  os << leaves.size() << '\n';
  for (const auto& l : leaves) {
    os << detail::dtype_name(l.tensor.scalar_type()) << ' ' << l.tensor.dim();
    for (int64_t d : l.tensor.sizes()) os << ' ' << d;
    const std::string repr = l.key.repr();
    os << ' ' << repr.size() << ' ' << repr << '\n';
  }
  return os.str();
}

std::vector<LeafDescription> decode(const std::string& text, const char* op) {
  std::istringstream is(text);
  auto fail = [&]() -> std::vector<LeafDescription> {
    throw Error(std::string(op) + ": received a malformed structure header");
  };
  size_t count = 0;
  if (!(is >> count) || count > (size_t{1} << 24)) return fail();
  std::vector<LeafDescription> out;
  for (size_t i = 0; i < count; ++i) {
    std::string dtype;
    int64_t ndim = 0;
    if (!(is >> dtype >> ndim) || ndim < 0 || ndim > 64) return fail();
    LeafDescription d;
    auto parsed = detail::dtype_from_name(dtype);
    if (!parsed) return fail();
    d.dtype = *parsed;
    for (int64_t k = 0; k < ndim; ++k) {
      int64_t size = 0;
      if (!(is >> size) || size < 0) return fail();
      d.shape.push_back(size);
    }
    size_t n = 0;
    if (!(is >> n) || is.get() != ' ' || n > text.size()) return fail();
    d.key.resize(n);
    if (!is.read(&d.key[0], static_cast<std::streamsize>(n))) return fail();
    out.push_back(std::move(d));
  }
  return out;
}

std::string describe(const LeafDescription& d) {
  return detail::dtype_name(d.dtype) + " " + shape_str(d.shape);
}

// The first difference between two headers, for the error message.
std::string first_difference(const std::string& theirs, const std::string& mine, const char* op) {
  auto a = decode(theirs, op);
  auto b = decode(mine, op);
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    if (a[i].key != b[i].key)
      return "leaf " + std::to_string(i) + " in transport order is " + a[i].key +
             " on the sending side but " + b[i].key + " here";
    if (a[i].dtype != b[i].dtype || a[i].shape != b[i].shape)
      return "leaf " + a[i].key + " is " + describe(a[i]) + " on the sending side but " +
             describe(b[i]) + " here";
  }
  return "the sending side has " + std::to_string(a.size()) + " leaves, this side " +
         std::to_string(b.size());
}

void wait(const c10::intrusive_ptr<c10d::Work>& work) { work->wait(); }

void send_one(c10d::ProcessGroup& group, torch::Tensor t, int dst, int tag) {
  std::vector<torch::Tensor> v{std::move(t)};
  wait(group.send(v, dst, tag));
}

void recv_one(c10d::ProcessGroup& group, torch::Tensor t, int src, int tag) {
  std::vector<torch::Tensor> v{std::move(t)};
  wait(group.recv(v, src, tag));
}

void broadcast_one(c10d::ProcessGroup& group, torch::Tensor t, int root) {
  std::vector<torch::Tensor> v{std::move(t)};
  c10d::BroadcastOptions options;
  options.rootRank = root;
  wait(group.broadcast(v, options));
}

torch::Tensor header_bytes(const std::string& header) {
  auto bytes = torch::empty({static_cast<int64_t>(header.size())}, torch::kByte);
  std::copy(header.begin(), header.end(), bytes.data_ptr<uint8_t>());
  return bytes;
}

std::string bytes_to_string(const torch::Tensor& bytes) {
  const auto* p = bytes.data_ptr<uint8_t>();
  return std::string(p, p + bytes.numel());
}

// Receives one leaf in place: straight into the destination when its memory can take the
// bytes as they are, else through a contiguous buffer.
template <class Transfer>
void into_leaf(const torch::Tensor& dst, Transfer&& transfer) {
  if (dst.is_contiguous() && dst.is_cpu()) {
    transfer(dst);
    return;
  }
  // Starts from the current values: a broadcast root or an all_reduce sends them.
  auto buffer = torch::empty(dst.sizes(), dst.options().device(torch::kCPU));
  buffer.copy_(dst.detach());
  transfer(buffer);
  torch::NoGradGuard no_grad;
  dst.copy_(buffer);
}

// Scratch buffers of the sending side's shapes, so a mismatched receiver drains the transfer.
std::vector<torch::Tensor> scratch_for(const std::string& header, const char* op) {
  std::vector<torch::Tensor> out;
  for (const auto& d : decode(header, op)) out.push_back(torch::empty(d.shape, d.dtype));
  return out;
}

}  // namespace

std::vector<NestedKey> transport_order(const TensorDict& td) {
  std::vector<NestedKey> keys;
  for (auto& leaf : ordered_leaves(td)) keys.push_back(std::move(leaf.key));
  return keys;
}

void send(const TensorDict& td, c10d::ProcessGroup& group, int dst, int tag) {
  auto leaves = ordered_leaves(td);
  const std::string header = encode(leaves);
  send_one(group, torch::tensor({static_cast<int64_t>(header.size())}, torch::kLong), dst, tag);
  send_one(group, header_bytes(header), dst, tag);
  for (const auto& l : leaves)
    send_one(group, l.tensor.detach().to(torch::kCPU).contiguous(), dst, tag);
}

void recv(const TensorDict& td, c10d::ProcessGroup& group, int src, int tag) {
  static constexpr const char* kOp = "tensordict::recv";
  auto leaves = ordered_leaves(td);
  const std::string mine = encode(leaves);
  auto length = torch::empty({1}, torch::kLong);
  recv_one(group, length, src, tag);
  const int64_t n = length.item<int64_t>();
  if (n < 0 || n > (int64_t{1} << 30))
    throw Error(std::string(kOp) + ": received a bad header length");
  auto bytes = torch::empty({n}, torch::kByte);
  recv_one(group, bytes, src, tag);
  const std::string theirs = bytes_to_string(bytes);
  if (theirs != mine) {
    for (auto& t : scratch_for(theirs, kOp)) recv_one(group, t, src, tag);
    throw Error(std::string(kOp) + ": the TensorDict from rank " + std::to_string(src) +
                " does not match this one: " + first_difference(theirs, mine, kOp) +
                "; nothing was written");
  }
  for (const auto& l : leaves)
    into_leaf(l.tensor, [&](const torch::Tensor& t) { recv_one(group, t, src, tag); });
}

TransferFuture isend(const TensorDict& td, c10::intrusive_ptr<c10d::ProcessGroup> group, int dst,
                     int tag) {
  return TransferFuture(std::async(std::launch::async, [td, group, dst, tag] {
                          send(td, *group, dst, tag);
                        }).share());
}

TransferFuture irecv(const TensorDict& td, c10::intrusive_ptr<c10d::ProcessGroup> group, int src,
                     int tag) {
  return TransferFuture(std::async(std::launch::async, [td, group, src, tag] {
                          recv(td, *group, src, tag);
                        }).share());
}

namespace {

// Broadcasts rank `root`'s header; true on ranks whose own header matches it. Ranks that
// differ get the root's header in `theirs`.
bool broadcast_header(c10d::ProcessGroup& group, int root, const std::string& mine,
                      std::string& theirs) {
  auto length = torch::tensor({static_cast<int64_t>(mine.size())}, torch::kLong);
  broadcast_one(group, length, root);
  auto bytes = group.getRank() == root ? header_bytes(mine)
                                       : torch::empty({length.item<int64_t>()}, torch::kByte);
  broadcast_one(group, bytes, root);
  theirs = bytes_to_string(bytes);
  return theirs == mine;
}

}  // namespace

void broadcast(const TensorDict& td, c10d::ProcessGroup& group, int root) {
  static constexpr const char* kOp = "tensordict::broadcast";
  auto leaves = ordered_leaves(td);
  const std::string mine = encode(leaves);
  std::string theirs;
  if (!broadcast_header(group, root, mine, theirs)) {
    for (auto& t : scratch_for(theirs, kOp)) broadcast_one(group, t, root);
    throw Error(std::string(kOp) + ": this rank's TensorDict does not match rank " +
                std::to_string(root) + "'s: " + first_difference(theirs, mine, kOp) +
                "; nothing was written");
  }
  for (const auto& l : leaves)
    into_leaf(l.tensor, [&](const torch::Tensor& t) { broadcast_one(group, t, root); });
}

void all_reduce(const TensorDict& td, c10d::ProcessGroup& group, c10d::ReduceOp op) {
  static constexpr const char* kOp = "tensordict::all_reduce";
  auto leaves = ordered_leaves(td);
  const std::string mine = encode(leaves);
  std::string theirs;
  const bool match = broadcast_header(group, 0, mine, theirs);
  // Every rank learns whether all matched, so that no rank reduces against another's scratch.
  auto all_match = torch::tensor({match ? 1 : 0}, torch::kInt);
  {
    std::vector<torch::Tensor> v{all_match};
    c10d::AllreduceOptions options;
    options.reduceOp = c10d::ReduceOp::MIN;
    wait(group.allreduce(v, options));
  }
  if (all_match.item<int>() == 0)
    throw Error(std::string(kOp) + ": the ranks' TensorDicts differ" +
                (match ? std::string(" (this rank matches rank 0; another does not)")
                       : ": " + first_difference(theirs, mine, kOp)) +
                "; nothing was reduced");
  for (const auto& l : leaves) {
    into_leaf(l.tensor, [&](const torch::Tensor& t) {
      std::vector<torch::Tensor> v{t};
      c10d::AllreduceOptions options;
      options.reduceOp = op;
      wait(group.allreduce(v, options));
    });
  }
}

}  // namespace tensordict
