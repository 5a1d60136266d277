// TensorDict transport over c10d: a structure header, then the leaves in transport order.

#include <tensordict/distributed.h>

#include <algorithm>
#include <optional>
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
    os << dtype_name(l.tensor.scalar_type()) << ' ' << l.tensor.dim();
    for (int64_t d : l.tensor.sizes()) os << ' ' << d;
    const std::string repr = l.key.to_string();
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
    auto parsed = dtype_from_name(dtype);
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

// The structure section that follows the leaf section in send's header, so that a receiver
// can build the TensorDict: the root batch size, then every entry in items(include_nested)
// order: "n <ndim> <dims> <key>" for a nested TensorDict (its batch size), "l <index> <key>"
// for a tensor leaf (its index in transport order). Keys are "<parts> (<length> <part>)...".
std::string encode_structure(const TensorDict& td, const std::vector<Leaf>& leaves) {
  std::ostringstream os;
  auto dims = [&os](c10::IntArrayRef sizes) {
    os << sizes.size();
    for (int64_t d : sizes) os << ' ' << d;
  };
  auto key = [&os](const NestedKey& k) {
    os << ' ' << k.size();
    for (const auto& part : k.parts()) os << ' ' << part.size() << ' ' << part;
  };
  dims(td.batch_size());
  const auto items = td.items(/*include_nested=*/true);
  os << '\n' << items.size() << '\n';
  for (const auto& item : items) {
    if (const auto* nested = std::get_if<TensorDict>(&item.second)) {
      os << "n ";
      dims(nested->batch_size());
    } else if (std::holds_alternative<torch::Tensor>(item.second)) {
      // `leaves` is sorted by key (transport order).
      const auto at = std::lower_bound(leaves.begin(), leaves.end(), item.first,
                                       [](const Leaf& l, const NestedKey& k) { return l.key < k; });
      os << "l " << (at - leaves.begin());
    } else {
      continue;  // non-tensor entries are not transported
    }
    key(item.first);
    os << '\n';
  }
  return os.str();
}

// A TensorDict of the structure `text` describes, its leaves allocated (uninitialised) on
// `device` from `leaves` (the leaf section, in transport order); the leaves in transport order
// are returned in `order`.
TensorDict decode_structure(const std::string& text, const std::vector<LeafDescription>& leaves,
                            const std::optional<torch::Device>& device, const char* op,
                            std::vector<torch::Tensor>& order) {
  std::istringstream is(text);
  auto fail = [&]() -> TensorDict {
    throw Error(std::string(op) + ": received a malformed structure section");
  };
  auto read_dims = [&is](std::vector<int64_t>& out) {
    int64_t n = 0;
    if (!(is >> n) || n < 0 || n > 64) return false;
    for (int64_t i = 0; i < n; ++i) {
      int64_t d = 0;
      if (!(is >> d) || d < 0) return false;
      out.push_back(d);
    }
    return true;
  };
  auto read_key = [&is, &text](std::optional<NestedKey>& key) {
    size_t count = 0;
    if (!(is >> count) || count == 0 || count > 64) return false;
    for (size_t i = 0; i < count; ++i) {
      size_t n = 0;
      if (!(is >> n) || is.get() != ' ' || n == 0 || n > text.size()) return false;
      std::string part(n, '\0');
      if (!is.read(&part[0], static_cast<std::streamsize>(n))) return false;
      key = key ? key->join(NestedKey(std::move(part))) : NestedKey(std::move(part));
    }
    return true;
  };
  std::vector<int64_t> root;
  size_t count = 0;
  if (!read_dims(root) || !(is >> count) || count > (size_t{1} << 24)) return fail();
  TensorDict out = TensorDict::empty(root);
  order.assign(leaves.size(), torch::Tensor());
  for (size_t i = 0; i < count; ++i) {
    std::string kind;
    std::vector<int64_t> dims;
    std::optional<NestedKey> key;
    size_t index = 0;
    if (!(is >> kind)) return fail();
    if (kind == "n") {
      if (!read_dims(dims) || !read_key(key)) return fail();
      out.set(*key, TensorDict::empty(dims));
    } else if (kind == "l") {
      if (!(is >> index) || index >= leaves.size() || order[index].defined() || !read_key(key))
        return fail();
      auto options = torch::TensorOptions().dtype(leaves[index].dtype);
      order[index] = torch::empty(leaves[index].shape, device ? options.device(*device) : options);
      out.set(*key, order[index]);
    } else {
      return fail();
    }
  }
  for (const auto& t : order)
    if (!t.defined()) return fail();
  return out;
}

std::string describe(const LeafDescription& d) {
  return dtype_name(d.dtype) + " " + shape_str(d.shape);
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

void send_one(compat::ProcessGroup& group, torch::Tensor t, int dst, int tag) {
  std::vector<torch::Tensor> v{std::move(t)};
  wait(group.send(v, dst, tag));
}

void recv_one(compat::ProcessGroup& group, torch::Tensor t, int src, int tag) {
  std::vector<torch::Tensor> v{std::move(t)};
  wait(group.recv(v, src, tag));
}

void broadcast_one(compat::ProcessGroup& group, torch::Tensor t, int root) {
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

void send(const TensorDict& td, compat::ProcessGroup& group, int dst, int tag) {
  auto leaves = ordered_leaves(td);
  const std::string leaf_section = encode(leaves);
  const std::string header = leaf_section + encode_structure(td, leaves);
  send_one(group,
           torch::tensor(
               {static_cast<int64_t>(header.size()), static_cast<int64_t>(leaf_section.size())},
               torch::kLong),
           dst, tag);
  send_one(group, header_bytes(header), dst, tag);
  for (const auto& l : leaves)
    send_one(group, l.tensor.detach().to(torch::kCPU).contiguous(), dst, tag);
}

namespace {

// The two parts of a send header: the leaf section (compared by recv) and the structure.
struct Header {
  std::string leaves;
  std::string structure;
};

Header recv_header(compat::ProcessGroup& group, int src, int tag, const char* op) {
  auto lengths = torch::empty({2}, torch::kLong);
  recv_one(group, lengths, src, tag);
  const int64_t n = lengths[0].item<int64_t>();
  const int64_t leaf_part = lengths[1].item<int64_t>();
  TDRL_CHECK(!(n < 0 || n > (int64_t{1} << 30) || leaf_part < 0 || leaf_part > n), Error, op,
             ": received a bad header length");
  auto bytes = torch::empty({n}, torch::kByte);
  recv_one(group, bytes, src, tag);
  const std::string all = bytes_to_string(bytes);
  return {all.substr(0, static_cast<size_t>(leaf_part)),
          all.substr(static_cast<size_t>(leaf_part))};
}

}  // namespace

void recv(const TensorDict& td, compat::ProcessGroup& group, int src, int tag) {
  static constexpr const char* kOp = "tensordict::recv";
  auto leaves = ordered_leaves(td);
  const std::string mine = encode(leaves);
  const Header theirs = recv_header(group, src, tag, kOp);
  if (theirs.leaves != mine) {
    for (auto& t : scratch_for(theirs.leaves, kOp)) recv_one(group, t, src, tag);
    throw Error(std::string(kOp) + ": the TensorDict from rank " + std::to_string(src) +
                " does not match this one: " + first_difference(theirs.leaves, mine, kOp) +
                "; nothing was written");
  }
  for (const auto& l : leaves)
    into_leaf(l.tensor, [&](const torch::Tensor& t) { recv_one(group, t, src, tag); });
}

TensorDict recv_new(compat::ProcessGroup& group, int src, int tag,
                    const std::optional<torch::Device>& device) {
  static constexpr const char* kOp = "tensordict::recv_new";
  const Header header = recv_header(group, src, tag, kOp);
  const auto leaves = decode(header.leaves, kOp);
  std::vector<torch::Tensor> order;
  TensorDict out;
  try {
    out = decode_structure(header.structure, leaves, device, kOp, order);
  } catch (const Error&) {
    for (auto& t : scratch_for(header.leaves, kOp)) recv_one(group, t, src, tag);
    throw;
  }
  for (const auto& t : order)
    into_leaf(t, [&](const torch::Tensor& buffer) { recv_one(group, buffer, src, tag); });
  return out;
}

TransferFuture isend(const TensorDict& td, c10::intrusive_ptr<compat::ProcessGroup> group, int dst,
                     int tag) {
  return TransferFuture(std::async(std::launch::async, [td, group, dst, tag] {
                          send(td, *group, dst, tag);
                        }).share());
}

TransferFuture irecv(const TensorDict& td, c10::intrusive_ptr<compat::ProcessGroup> group, int src,
                     int tag) {
  return TransferFuture(std::async(std::launch::async, [td, group, src, tag] {
                          recv(td, *group, src, tag);
                        }).share());
}

namespace {

// Broadcasts rank `root`'s header; true on ranks whose own header matches it. Ranks that
// differ get the root's header in `theirs`.
bool broadcast_header(compat::ProcessGroup& group, int root, const std::string& mine,
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

void broadcast(const TensorDict& td, compat::ProcessGroup& group, int root) {
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

void all_reduce(const TensorDict& td, compat::ProcessGroup& group, c10d::ReduceOp op) {
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
  TDRL_CHECK(all_match.item<int>() != 0, Error, std::string(kOp), ": the ranks' TensorDicts differ",
             (match ? std::string(" (this rank matches rank 0; another does not)")
                    : ": " + first_difference(theirs, mine, kOp)),
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
