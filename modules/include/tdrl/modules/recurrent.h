#pragma once
// LSTMModule and GRUModule: LibTorch's LSTM and GRU as TensorDict modules that carry their
// hidden state in the TensorDict (TorchRL's LSTMModule / GRUModule).

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <torch/arg.h>
#include <torch/nn/modules/rnn.h>
#include <torch/nn/pimpl.h>

#include <tdrl/modules/recurrent_options.h>
#include <tdrl/specs/composite.h>
#include <tensordict/nested_key.h>
#include <tensordict/nn/tensordict_module.h>

namespace tdrl::modules {

using tensordict::NestedKey;

/// A recurrent core over LibTorch's LSTM or GRU (its parameters, `lstm.weight_ih_l0`, ...,
/// are the module's) that reads and writes its state in the TensorDict.
///
/// Step mode (the default; what a collector's policy runs): the TensorDict is one step of a
/// batch `[*B]`. Reads the input `[*B, input_size]`, `is_init` and the hidden state
/// `[*B, num_layers, hidden_size]` (zeros when absent, and zeroed where `is_init` is set);
/// writes the output `[*B, hidden_size]` and the next state under ("next", <hidden key>).
///
/// Sequence mode (`set_recurrent_mode(true)`; what a loss runs on a collected `[*B, T]`
/// batch): the last batch dim is time. Reads the input `[*B, T, input_size]`, `is_init`
/// `[*B, T(, 1)]`, the hidden state at each sequence's first step (`[*B, T, L, H]`, only
/// `[..., 0, :, :]` is read; zeros when absent) and the optional mask; the state is zeroed
/// inside a sequence wherever `is_init` is set; writes the output `[*B, T, hidden_size]` and
/// ("next", <hidden key>) `[*B, T, L, H]`, the state after every step. Both modes give the same
/// outputs and states on the same data (tested), since sequence mode runs the same cell step by
/// step over the time dim (the input projection of all steps in one matrix product; from
/// kAtenStepRows rows, ATen's own LSTM/GRU call per step instead, the faster there).
///
/// Keys: in `[in_key, is_init_key, hidden keys... (, mask_key)]`; out `[out_key, ("next",
/// hidden key)...]`.
/// Errors: the constructor throws ValueError for a size < 1 or a wrong number of hidden keys;
/// forward throws KeyError when the input or `is_init` is missing, ShapeError naming the key
/// with the expected and actual shapes (the input, `is_init`, a hidden state, the mask; a
/// sequence-mode TensorDict without a time dim), TypeError for an `is_init` or mask that is not
/// bool; nothing is written on failure.
class RecurrentModuleImpl : public tensordict::nn::TensorDictModuleBase {
 public:
  enum class Kind { kLSTM, kGRU };

  RecurrentModuleImpl(Kind kind, RecurrentModuleOptions options);

  /// Rows (the batch without its time dim) from which each step runs through ATen's LSTM/GRU
  /// call (its fused cell kernels) instead of the cells written out, whose few ops cost less
  /// than ATen's per-call setup for small batches. The same arithmetic either way (tested).
  static constexpr int64_t kAtenStepRows = 64;

  /// Switches between step mode (false) and sequence mode (true); returns this module.
  RecurrentModuleImpl& set_recurrent_mode(bool on);
  bool recurrent_mode() const { return options_.recurrent_mode(); }
  /// Sets RecurrentModuleOptions::sequence_states; returns this module.
  RecurrentModuleImpl& set_sequence_states(bool on) {
    options_.sequence_states(on);
    return *this;
  }

  /// The hidden-state entries of a step of batch `batch`: float32 Unbounded
  /// `[*batch, num_layers, hidden_size]` under each hidden key, batch shape `batch`: what
  /// a TensorDictPrimer adds to an env's reset and step outputs.
  specs::CompositePtr hidden_specs(const std::vector<int64_t>& batch = {}) const;

  Kind kind() const { return kind_; }
  const RecurrentModuleOptions& options() const { return options_; }
  /// The hidden keys in use (the kind's defaults when the options named none).
  const std::vector<NestedKey>& hidden_keys() const { return hidden_keys_; }

 protected:
  void forward_impl(const tensordict::TensorDict& tensordict,
                    const tensordict::TensorDict& tensordict_out) override;
  void print_to(std::ostream& stream) const override;

  // The wrapped module: lstm_ for kLSTM, gru_ for kGRU.
  torch::nn::LSTM lstm_{nullptr};
  torch::nn::GRU gru_{nullptr};

 private:
  // One layer's weights, the wrapped module's own tensors.
  struct Layer {
    torch::Tensor w_ih, w_hh, b_ih, b_hh;
  };

  Kind kind_;
  RecurrentModuleOptions options_;
  std::vector<NestedKey> hidden_keys_;
  std::vector<Layer> layers_;
};

/// LSTMModule: RecurrentModuleImpl over torch::nn::LSTM (hidden state h and c).
/// Example:
/// `LSTMModule lstm(RecurrentModuleOptions(4, 32).in_key("observation").out_key("embed"));`
class LSTMModuleImpl : public RecurrentModuleImpl {
 public:
  explicit LSTMModuleImpl(RecurrentModuleOptions options)
      : RecurrentModuleImpl(Kind::kLSTM, std::move(options)) {}
  /// The wrapped LibTorch module.
  torch::nn::LSTM& lstm() { return lstm_; }
};
TORCH_MODULE(LSTMModule);

/// GRUModule: RecurrentModuleImpl over torch::nn::GRU (hidden state h).
class GRUModuleImpl : public RecurrentModuleImpl {
 public:
  explicit GRUModuleImpl(RecurrentModuleOptions options)
      : RecurrentModuleImpl(Kind::kGRU, std::move(options)) {}
  /// The wrapped LibTorch module.
  torch::nn::GRU& gru() { return gru_; }
};
TORCH_MODULE(GRUModule);

/// The recurrent cores inside `network` (itself included), in the order of its modules(), each
/// once (a core shared by two parts of the network is listed once).
std::vector<std::shared_ptr<RecurrentModuleImpl>> recurrent_cores(const torch::nn::Module& network);

/// Sets `cores` to a mode for a scope and restores each one's own (recurrent_mode and
/// sequence_states) when the scope ends, on an exception too.
/// Example: `{ RecurrentModeGuard seq(cores, /*recurrent_mode=*/true); loss(batch); }`
class RecurrentModeGuard {
 public:
  RecurrentModeGuard(std::vector<std::shared_ptr<RecurrentModuleImpl>> cores, bool recurrent_mode,
                     std::optional<bool> sequence_states = std::nullopt);
  ~RecurrentModeGuard();
  RecurrentModeGuard(const RecurrentModeGuard&) = delete;
  RecurrentModeGuard& operator=(const RecurrentModeGuard&) = delete;

 private:
  struct Saved {
    std::shared_ptr<RecurrentModuleImpl> core;
    bool recurrent_mode, sequence_states;
  };
  std::vector<Saved> saved_;
};

/// The recurrent core named `core` (recurrent_core_names()): an LSTMModule or a GRUModule with
/// `options`. Throws ValueError listing the names for another name.
std::shared_ptr<RecurrentModuleImpl> make_recurrent_module(const std::string& core,
                                                           RecurrentModuleOptions options);

}  // namespace tdrl::modules
