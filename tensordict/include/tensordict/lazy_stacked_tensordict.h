#pragma once

#include <cstdint>
#include <vector>

#include <tensordict/tensor_dict.h>

namespace tensordict {

/// A stack of TensorDicts that is not materialised: the result of tensordict::stack.
///
/// It is a TensorDict (every TensorDict operation works on it) whose batch size is the
/// members' batch size with the stack length inserted at `stack_dim()`. Reading a key stacks
/// that key's tensors on demand (nested TensorDicts come back as lazy stacks, non-tensor
/// values as stacked non-tensor data); members may hold different shapes past the batch
/// dims, and reading such a key throws ShapeError naming the shapes. Writes (`set`, `set_`,
/// `update`, `apply_`, `index_put_`, `fill_`, ...) are split along the stack dim and go
/// through to the member TensorDicts, which stay aliased. Indexing with an int or slice on
/// the stack dim returns the member (or a lazy stack of the members) itself; shape
/// operations and gathers densify first. `keys()` are the keys every member has.
/// `contiguous()` densifies into one TensorDict.
///
/// Example:
/// ```
/// auto s = tensordict::stack({td0, td1}, 0);  // batch [2, *td0.batch_size()]
/// s.index({0}).is_same(td0);                    // true
/// s.set("a", torch::zeros({2, 3}));             // writes td0["a"] and td1["a"]
/// ```
class LazyStackedTensorDict : public TensorDict {
 public:
  /// Views a TensorDict that is a lazy stack as one; throws TypeError otherwise.
  explicit LazyStackedTensorDict(const TensorDict& td);

  /// The stacked TensorDicts (aliases, not copies).
  const std::vector<TensorDict>& tensordicts() const;
  /// The batch dim along which the members are stacked.
  int64_t stack_dim() const;
};

}  // namespace tensordict
